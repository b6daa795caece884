#!/bin/bash
# fleet.sh - gpufl's scale path on one machine (`gpufl demo --fleet` runs
# this; docs/fleet.md explains it):
#
#   N x (example workload -> logs -> gpufl-agent --type=kafka, S3 archive)
#     -> Kafka (librdkafka's mock cluster: gpufl-kafka-mock)
#     -> two gpufl-server instances in one consumer group
#     -> one PostgreSQL database (a throwaway cluster under DIR)
#   raw logs archived by the agents to S3 (a single-node radosgw under DIR)
#   the web UI served by either server.
#
# Every part is the real engine; only the Kafka broker is librdkafka's mock
# (no broker is installable here; any Kafka works in production).  Runs from
# the source tree after `make`: it uses build/bin and the test set-up
# scripts tests/server/pg_cluster.sh and tests/agent/ceph_up.sh.
#
# Usage: scripts/fleet.sh [--dir DIR] [--port P] [--token T] [--agents N]
#            [--steps N] [--pause S] [--runs N] [--duration S] [--no-s3]
#   --port P     servers on 127.0.0.1:P and :P+1 (default 8080)
#   --runs N     workload runs per agent, then keep serving (0: forever)
# Writes DIR/run/<part>.pid and DIR/fleet.env (URLs, token, database URI,
# bootstrap) for scripts and tests.  Ctrl-C (or --duration) stops it all.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
bin=${GPUFL_BIN_DIR:-$src/build/bin}
dir=./gpufl-fleet port=8080 token="" agents=2 steps=100 pause=5 runs=0
duration=0 s3=1
while [ $# -gt 0 ]; do
    case "$1" in
    --dir) dir=$2; shift ;;
    --port) port=$2; shift ;;
    --listen) port=${2##*:}; shift ;;   # as gpufl demo: ADDR:PORT
    --no-idle|--no-memprof|-q|--quiet) ;;
    --token) token=$2; shift ;;
    --agents) agents=$2; shift ;;
    --steps) steps=$2; shift ;;
    --pause) pause=$2; shift ;;
    --runs) runs=$2; shift ;;
    --duration) duration=$2; shift ;;
    --no-s3) s3=0 ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fleet.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
for b in gpufl-server gpufl-agent gpufl-kafka-mock example_train; do
    [ -x "$bin/$b" ] || { echo "fleet.sh: $bin/$b missing: run 'make' first" >&2; exit 1; }
done
if [ -z "$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null)" ]; then
    echo "fleet.sh: PostgreSQL is not installed: scripts/deps.sh test (as root) installs it" >&2
    exit 1
fi
[ -n "$token" ] || token=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
rm -rf "$dir/run"
mkdir -p "$dir/run"
pids=()

stop_all() {
    trap - INT TERM EXIT
    echo "fleet: stopping workloads, agents, servers, Kafka, S3, PostgreSQL"
    # newest first, so agents stop before the servers and the broker
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        kill "${pids[$i]}" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "${pids[$i]}" 2>/dev/null || break; sleep 0.1; done
        kill -9 "${pids[$i]}" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    [ "$s3" = 1 ] && "$src/tests/agent/ceph_up.sh" stop "$dir/ceph" >/dev/null 2>&1 || true
    # a stop that fails says why (a postmaster left running); the rest of
    # the cleanup goes on
    "$src/tests/server/pg_cluster.sh" stop "$dir/pg" >/dev/null || true
    echo "fleet: stopped; data kept in $dir"
}
trap stop_all EXIT
trap 'exit 0' INT TERM

spawn() { # name cmd...: start in the background, remember the pid
    local name=$1; shift
    "$@" >>"$dir/$name.log" 2>&1 &
    pids+=($!)
    echo $! >"$dir/run/$name.pid"
}

wait_http() { # url what
    for _ in $(seq 1 300); do
        curl -sf -o /dev/null "$1" && return 0
        sleep 0.1
    done
    echo "fleet: $2 did not come up; see $dir/*.log" >&2
    exit 1
}

echo "fleet [1/5] Kafka: librdkafka mock cluster (3 brokers, topics gpufl.device|scope|system)"
rm -f "$dir/bootstrap"
spawn kafka "$bin/gpufl-kafka-mock" serve "$dir/bootstrap" gpufl
for _ in $(seq 1 100); do [ -s "$dir/bootstrap" ] && break; sleep 0.1; done
boot=$(cat "$dir/bootstrap")

echo "fleet [2/5] PostgreSQL: a throwaway cluster in $dir/pg"
pg=$("$src/tests/server/pg_cluster.sh" start "$dir/pg")
psql -q "$pg/postgres" -c "CREATE DATABASE gpufl" >/dev/null
db="$pg/gpufl"

s3args=()
if [ "$s3" = 1 ]; then
    echo "fleet [3/5] S3: single-node radosgw on 127.0.0.1:7480 (about 15 s)"
    # a start right after another cluster stopped sometimes fails ("wrong
    # fsid", as the agent's S3 test saw too); a fresh try a little later works
    ok=0
    for _ in 1 2 3; do
        if "$src/tests/agent/ceph_up.sh" start "$dir/ceph" >"$dir/ceph.log" 2>&1; then
            ok=1
            break
        fi
        "$src/tests/agent/ceph_up.sh" stop "$dir/ceph" >/dev/null 2>&1 || true
        sleep 5
    done
    [ "$ok" = 1 ] ||
        { echo "fleet: radosgw did not start; see $dir/ceph.log (or use --no-s3)" >&2; exit 1; }
    curl -sf --aws-sigv4 aws:amz:us-east-1:s3 --user TESTKEY:TESTSECRET \
        -H "x-amz-content-sha256: $(printf '' | sha256sum | cut -d' ' -f1)" \
        -X PUT http://127.0.0.1:7480/gpufl-archive >/dev/null
    s3args=(--archiver-endpoint=http://127.0.0.1:7480 --archiver-bucket=gpufl-archive
        --archiver-access-key=TESTKEY --archiver-region=us-east-1)
else
    echo "fleet [3/5] S3: skipped (--no-s3)"
fi

ui=()
[ -f "$src/web/dist/index.html" ] && ui=(--ui-dir "$src/web/dist")
echo "fleet [4/5] two gpufl-server instances (consumer group gpufl-fleet) on ports $port and $((port + 1))"
for n in 1 2; do
    p=$((port + n - 1))
    mkdir -p "$dir/server$n"
    spawn "server$n" "$bin/gpufl-server" --listen "127.0.0.1:$p" \
        --data-dir "$dir/server$n" --db "$db" --admin-token "$token" \
        --kafka-brokers "$boot" --kafka-group gpufl-fleet "${ui[@]}"
    # one at a time: the first creates the schema
    wait_http "http://127.0.0.1:$p/healthz" "gpufl-server $n"
done

echo "fleet [5/5] $agents agents (Kafka$([ "$s3" = 1 ] && echo ", S3 archive")) and their workloads"
for n in $(seq 1 "$agents"); do
    mkdir -p "$dir/agent$n/logs"
    GPUFL_AGENT_ARCHIVER_SECRET_KEY=TESTSECRET spawn "agent$n" \
        "$bin/gpufl-agent" --folder="$dir/agent$n/logs" --type=kafka \
        --brokers="$boot" --cursor-file="$dir/agent$n/cursor" --stats-s=0 \
        --linger-ms=50 "${s3args[@]}"
    # small files so rotated files (the archived ones) appear quickly
    spawn "work$n" bash -c '
        i=0
        while [ "$1" = 0 ] || [ $i -lt "$1" ]; do
            i=$((i + 1))
            GPUFL_ROTATE_BYTES=262144 "$2/example_train" --steps "$3" \
                --log-dir "$4" >/dev/null || exit 1
            echo "run $i done"
            sleep "$5"
        done
        echo "all runs done"
        sleep infinity' work "$runs" "$bin" "$steps" "$dir/agent$n/logs" "$pause"
done

cat >"$dir/fleet.env.tmp" <<EOF
GPUFL_FLEET_URLS="http://127.0.0.1:$port http://127.0.0.1:$((port + 1))"
GPUFL_FLEET_TOKEN=$token
GPUFL_FLEET_DB=$db
GPUFL_FLEET_BOOTSTRAP=$boot
GPUFL_FLEET_S3=$([ "$s3" = 1 ] && echo http://127.0.0.1:7480/gpufl-archive)
EOF
mv "$dir/fleet.env.tmp" "$dir/fleet.env"   # whole, for readers polling it
cat <<EOF

  gpufl fleet is running:  http://127.0.0.1:$port/  and  http://127.0.0.1:$((port + 1))/
  sign in with token: $token
  PostgreSQL: $db    Kafka bootstrap: $boot
  Workloads run on the simulated GPU (labelled simulated).  Ctrl-C stops everything.

EOF
start=$(date +%s)
while :; do
    if [ "$duration" != 0 ] && [ $(($(date +%s) - start)) -ge "$duration" ]; then
        exit 0
    fi
    for i in "${!pids[@]}"; do
        if ! kill -0 "${pids[$i]}" 2>/dev/null; then
            name=$(grep -l "^${pids[$i]}\$" "$dir"/run/*.pid | head -1)
            name=$(basename "${name:-unknown}" .pid)
            # a server killed on purpose (tests, failover drills) is fine
            # while the other one serves; anything else ends the fleet
            case "$name" in server*) continue ;; esac
            echo "fleet: $name stopped unexpectedly; see $dir/$name.log" >&2
            exit 1
        fi
    done
    sleep 1
done
