#!/bin/bash
# pg_cluster.sh - a throwaway PostgreSQL cluster for gpufl-server's tests
# (after test-infrastructure.md, Appendix A): initdb into DIR, start on a
# free port on 127.0.0.1, print its URI into DIR/uri.
# As root the server runs as the postgres user (runuser).
#   pg_cluster.sh start DIR [durable] | stop DIR
#   pg_cluster.sh kill DIR      SIGKILL the postmaster (a crash)
#   pg_cluster.sh restart DIR   start the existing cluster again, same port
#
# synchronous_commit is always on: gpufl-server acknowledges a batch after
# its COMMIT returns, and with it off PostgreSQL answers COMMIT before the
# WAL is written, so a crash of PostgreSQL itself (kill -9, an immediate
# shutdown) loses acknowledged batches - the durability tests would then
# test nothing.  fsync (and full_page_writes) are off for speed: they
# guard against the machine losing power, not against a process crash.
# "durable" turns them on too, as docs/deploy.md asks of a real cluster.
set -euo pipefail
cmd=${1:?start|stop|kill|restart}
dir=${2:?DIR}
durable=off
[ "${3:-}" = durable ] && durable=on
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$PGBIN" ]; then
    echo "pg_cluster: PostgreSQL server binaries not installed" >&2
    exit 1
fi
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
case "$cmd" in
start)
    "$0" stop "$dir" || true
    rm -rf "$dir"
    mkdir -p "$dir/sock"
    [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$dir"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    as_pg "$PGBIN/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 \
        --locale=C.UTF-8 --no-sync >/dev/null
    echo "-p $port -k $dir/sock -c listen_addresses=127.0.0.1 -c fsync=$durable -c synchronous_commit=on -c full_page_writes=$durable -c max_connections=300" > "$dir/opts"
    as_pg "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/pg.log" -w -t 60 \
        -o "$(cat "$dir/opts")" start >/dev/null
    as_pg "$PGBIN/pg_isready" -h 127.0.0.1 -p "$port" -t 30 >/dev/null
    echo "postgresql://postgres@127.0.0.1:$port" > "$dir/uri"
    cat "$dir/uri"
    ;;
restart)
    # after a kill, pg_ctl warns that another server might be running
    as_pg "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/pg.log" -w -t 60 \
        -o "$(cat "$dir/opts")" start >/dev/null 2>>"$dir/pg_ctl.err" ||
        { cat "$dir/pg_ctl.err" >&2; exit 1; }
    ;;
kill)
    pid=$(head -1 "$dir/data/postmaster.pid")
    kill -9 "$pid"
    # gone before a restart looks at postmaster.pid (its backends notice
    # and leave by themselves; pg_ctl start copes with those)
    for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    ;;
stop)
    # Nothing to stop (0, quietly) where no cluster is (never started,
    # removed, initdb cut short) or none runs (stopped, killed): cleanup
    # paths call stop unconditionally.  Any other failure - pg_ctl cannot
    # reach the cluster, the stop times out - is reported: the postmaster
    # it leaves running keeps its port, its memory and its files.
    # "Not there" only where we can see that it is not (a directory we
    # cannot search hides whatever is below it).
    searchable() { [ ! -e "$1" ] || [ -x "$1" ]; }
    if [ ! -e "$dir/data/PG_VERSION" ] && searchable "$dir" &&
        searchable "$dir/data"; then
        exit 0
    fi
    # pg_ctl status: 0 running, 3 not running (no postmaster.pid, or its
    # process gone), 4 the data directory out of reach
    st=0
    err=$(as_pg "$PGBIN/pg_ctl" -D "$dir/data" status 2>&1 >/dev/null) || st=$?
    [ "$st" = 3 ] && exit 0
    if [ "$st" = 0 ]; then
        st=0
        err=$(as_pg "$PGBIN/pg_ctl" -D "$dir/data" -m immediate -w stop \
            2>&1 >/dev/null) || st=$?
    fi
    if [ "$st" != 0 ]; then
        echo "pg_cluster: stop $dir failed (pg_ctl exit $st): $err" >&2
        exit 1
    fi
    ;;
esac
