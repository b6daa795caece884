#!/bin/bash
# test_pg_cluster_stop.sh - pg_cluster.sh stop reports a stop that fails
# (exit status not 0, a message on stderr: the postmaster it leaves
# running holds its port, its memory and its cluster), and stays quiet and
# 0 on a cluster that is not there or not running (the callers' cleanup
# paths stop unconditionally).
# A stop fails here because pg_ctl cannot reach the cluster: as root
# (where pg_ctl runs as postgres) a directory above it closed to others,
# otherwise the cluster's directory closed to its owner; the postmaster
# itself keeps running (it works from its data directory by relative
# paths).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/pg_cluster.sh
tmp=$(mktemp -d "${GPUFL_TEST_TMP:-/tmp}/pgstop.XXXXXX")
chmod 755 "$tmp" # the cluster runs as postgres when we are root
dir=$tmp/c
fails=0
pid=

open_up() { chmod 755 "$tmp"; [ -d "$dir" ] && chmod 755 "$dir"; }
cleanup() {
    open_up
    "$cluster" stop "$dir" >/dev/null 2>&1
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

check() { # what cond...: one assertion
    local what=$1; shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
running() { kill -0 "$pid" 2>/dev/null; }
gone() { # the postmaster gone within 10 s
    for _ in $(seq 100); do running || return 0; sleep 0.1; done
    return 1
}
stop() { # rc and stderr of pg_cluster.sh stop DIR in $rc, $err
    err=$("$cluster" stop "$dir" 2>&1 >/dev/null)
    rc=$?
}

stop
check "stop, no cluster: 0" [ "$rc" = 0 ]
check "stop, no cluster: quiet" [ -z "$err" ]
mkdir -p "$dir"
stop
check "stop, an empty directory: 0" [ "$rc" = 0 ]

"$cluster" start "$dir" >/dev/null || { echo "FAIL: start"; exit 1; }
pid=$(head -1 "$dir/data/postmaster.pid")
if [ "$(id -u)" = 0 ]; then chmod 700 "$tmp"; else chmod 000 "$dir"; fi
stop
check "stop, cluster out of reach: not 0" [ "$rc" != 0 ]
check "stop, cluster out of reach: says so" [ -n "$err" ]
echo "  its message: $err"
check "stop, cluster out of reach: postmaster still there" running
open_up
stop
check "stop, reachable again: 0 ($err)" [ "$rc" = 0 ]
check "stop, reachable again: postmaster gone" gone
stop
check "stop, stopped: 0" [ "$rc" = 0 ]
check "stop, stopped: quiet" [ -z "$err" ]

# killed (a stale postmaster.pid): nothing to stop
"$cluster" start "$dir" >/dev/null || { echo "FAIL: start"; exit 1; }
pid=$(head -1 "$dir/data/postmaster.pid")
"$cluster" kill "$dir"
stop
check "stop, killed: 0" [ "$rc" = 0 ]
check "stop, killed: quiet ($err)" [ -z "$err" ]

echo "$fails failed"
[ "$fails" = 0 ]
