#!/bin/bash
# pg_cluster.sh - a throwaway PostgreSQL cluster for gpufl-server's tests
# (after test-infrastructure.md, Appendix A): initdb into DIR, start on a
# free port on 127.0.0.1 with fsync off, print its URI into DIR/uri.
# As root the server runs as the postgres user (runuser).
#   pg_cluster.sh start DIR | stop DIR
set -euo pipefail
cmd=${1:?start|stop}
dir=${2:?DIR}
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
    as_pg "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/pg.log" -w -t 60 \
        -o "-p $port -k $dir/sock -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" \
        start >/dev/null
    as_pg "$PGBIN/pg_isready" -h 127.0.0.1 -p "$port" -t 30 >/dev/null
    echo "postgresql://postgres@127.0.0.1:$port" > "$dir/uri"
    cat "$dir/uri"
    ;;
stop)
    if [ -f "$dir/data/PG_VERSION" ]; then
        as_pg "$PGBIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    ;;
esac
