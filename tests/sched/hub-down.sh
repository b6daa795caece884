#!/bin/bash
# hub-down.sh - stop the Hub hub-up.sh started with this $HUB_STATE
# (TERM, then KILL after 5 s).  Safe to run twice.
: "${HUB_STATE:?}"
alive() { [ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status"; }
p=$(cat "$HUB_STATE/hub.launch.pid" 2>/dev/null) || exit 0
if alive "$p"; then
    kill -TERM "$p"
    for _ in $(seq 1 100); do alive "$p" || break; sleep 0.05; done
    alive "$p" && kill -KILL "$p"
fi
rm -f "$HUB_STATE/hub.launch.pid"
exit 0
