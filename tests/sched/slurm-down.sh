#!/bin/bash
# slurm-down.sh - stop what slurm-up.sh started under $BASE: cancel the
# jobs first (slurmstepd outlives the daemons and would hang reporting
# back), then slurmd, slurmctld and munged by their pid files.  Safe to
# run twice and after a failed start.
set -uo pipefail
: "${BASE:?BASE=directory}"
export SLURM_CONF=$BASE/etc/slurm.conf
# an exited daemon stays a zombie until PID 1 reaps it: kill -0 would lie
alive() { [ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status"; }
if [ -f "$BASE/run/slurmctld.pid" ] && alive "$(cat "$BASE/run/slurmctld.pid")"; then
    ids=$(squeue -h -o %i 2>/dev/null)
    # shellcheck disable=SC2086
    [ -n "$ids" ] && scancel $ids
    for _ in $(seq 1 100); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.1; done
fi
for d in slurmd slurmctld munged; do
    f=$BASE/run/$d.pid
    [ -f "$f" ] || continue
    p=$(cat "$f")
    if alive "$p"; then
        kill -TERM "$p"
        for _ in $(seq 1 100); do alive "$p" || break; sleep 0.05; done
        alive "$p" && { echo "slurm-down: $d ($p) did not stop: KILL" >&2; kill -KILL "$p"; }
    fi
    rm -f "$f"
done
# proctrack/cgroup (v1) leaves empty job directories behind
find /sys/fs/cgroup/*/slurm_"$(hostname -s)" /sys/fs/cgroup/slurm_"$(hostname -s)" \
    -depth -type d -exec rmdir {} \; 2>/dev/null
exit 0
