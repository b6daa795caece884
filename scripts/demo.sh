#!/bin/sh
# demo.sh - the main job for now: run the example training program on the
# simulated GPU and show what it wrote.  (gpufl demo, with the server, agent
# and UI, replaces this as those components land.)
set -eu
build="${1:-build}"
dir="${GPUFL_DEMO_DIR:-./gpufl-logs}"
mkdir -p "$dir"
echo "== running examples/train.c on the simulated GPU (200 steps, ~10 s)"
"$build/bin/example_train" --steps 200 --log-dir "$dir"
echo "== files"
ls -l "$dir" | tail -n +2 | tail -6
prefix=$(ls -t "$dir"/*.device.log | head -1 | sed 's/\.device\.log$//')
for s in device scope system; do
    f="$prefix.$s.log"
    printf '%-8s %8s lines  %10s bytes\n' "$s" "$(wc -l <"$f")" "$(wc -c <"$f")"
done
echo "== first kernel event"
grep -m1 '"type":"kernel"' "$prefix.device.log"
echo "== first GPU sample (simulated)"
grep -m1 '"type":"gpu"' "$prefix.system.log"
