#!/bin/sh
# demo.sh - the main job until `gpufl demo` (issue 10) lands: the parts that
# exist, on this machine, end to end.  Starts gpufl-server (embedded
# SQLite) and gpufl-agent, runs the example training program on the
# simulated GPU (labelled simulated), shows what the query API returns,
# then stops everything it started.  GPUFL_DEMO_SERVE=1 keeps the server
# up until Ctrl-C; GPUFL_DEMO_LISTEN sets its address (127.0.0.1:8080).
set -eu
build="${1:-build}"
root="${GPUFL_DEMO_DIR:-./gpufl-demo}"
listen="${GPUFL_DEMO_LISTEN:-127.0.0.1:8080}"
steps="${GPUFL_DEMO_STEPS:-200}"
url="http://$listen"
mkdir -p "$root/logs"
token=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    for p in $pids; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

echo "== gpufl-server on $url (data in $root/data)"
"$build/bin/gpufl-server" --listen "$listen" --data-dir "$root/data" \
    --admin-token "$token" >"$root/server.log" 2>&1 &
pids="$!"
i=0
until curl -sf "$url/healthz" >/dev/null 2>&1; do
    i=$((i + 1))
    if [ $i -gt 50 ]; then
        echo "gpufl-server did not start; see $root/server.log" >&2
        cat "$root/server.log" >&2
        exit 1
    fi
    sleep 0.1
done

echo "== gpufl-agent shipping $root/logs"
"$build/bin/gpufl-agent" --folder="$root/logs" --type=http \
    --url="$url/api/v1/events/" --token="$token" \
    --cursor-file="$root/agent.cursor" >"$root/agent.log" 2>&1 &
pids="$pids $!"

echo "== examples/train.c on the simulated GPU ($steps steps)"
"$build/bin/example_train" --steps "$steps" --log-dir "$root/logs"

# the agent ships within its batch interval; give it a moment
sleep 2
auth="Authorization: Bearer $token"
echo "== GET /api/v1/sessions (newest first)"
curl -sf -H "$auth" "$url/api/v1/sessions?limit=1" | cut -c1-400
echo
sid=$(curl -sf -H "$auth" "$url/api/v1/sessions?limit=1" |
    sed -n 's/.*"id":"\([0-9a-f-]*\)".*/\1/p' | head -1)
echo "== GET /api/v1/sessions/$sid/kernels/aggregate?limit=3"
curl -sf -H "$auth" "$url/api/v1/sessions/$sid/kernels/aggregate?limit=3" | cut -c1-600
echo
echo
echo "server:  $url   token: $token"
echo "logs:    $root/logs    (docs/events.md explains every line)"
if [ "${GPUFL_DEMO_SERVE:-0}" = 1 ]; then
    echo "serving until Ctrl-C (try: curl -H \"$auth\" $url/api/v1/hosts)"
    wait
fi
