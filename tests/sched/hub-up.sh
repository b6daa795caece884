#!/bin/bash
# hub-up.sh - start the Hub of jupyterhub_config.py (next to this script)
# with its state in $HUB_STATE; returns once its API answers (at most
# 15 s).  Env: HUB_STATE, HUB_PORT, HUB_PROXY_PORT (free ports, never
# listened on), HUB_TOKEN (the service token).  hub-down.sh stops it.
set -euo pipefail
: "${HUB_STATE:?}" "${HUB_PORT:?}" "${HUB_PROXY_PORT:?}" "${HUB_TOKEN:?}"
export HUB_STATE HUB_PORT HUB_PROXY_PORT HUB_TOKEN
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$HUB_STATE"
rm -f "$HUB_STATE/jupyterhub.sqlite" # users and tokens come from the config
cd "$HUB_STATE"
setsid jupyterhub -f "$HERE/jupyterhub_config.py" >"$HUB_STATE/hub.log" 2>&1 </dev/null &
echo $! >"$HUB_STATE/hub.launch.pid"
for _ in $(seq 1 150); do
    curl -sf -o /dev/null "http://127.0.0.1:$HUB_PORT/hub/api/" && exit 0
    kill -0 "$(cat "$HUB_STATE/hub.launch.pid")" 2>/dev/null || break
    sleep 0.1
done
echo "hub-up: the Hub did not answer on 127.0.0.1:$HUB_PORT" >&2
tail -20 "$HUB_STATE/hub.log" >&2
exit 1
