#!/bin/sh
# gpufl-idle-slurm-hook.sh - the stop action of `gpufl idle watch` for
# Slurm jobs whose GPUs sit unused (docs/idle.md §7, Slurm):
#
#   gpufl idle watch --hook-cmd /path/to/gpufl-idle-slurm-hook.sh ...
#
# watch runs it once a job's warning period is over, with the job in
# GPUFL_IDLE_SLURM_JOB and its user in GPUFL_IDLE_USER (empty for
# sessions that are not Slurm jobs: then it does nothing).
#
# GPUFL_SLURM_ACTION (set it in watch's environment):
#   requeue  (default) `scontrol requeue JOB`: the job goes back to the
#            queue and starts again later; a job that cannot be requeued
#            (--no-requeue, not a batch job) is cancelled instead
#   cancel   `scancel JOB`
#   log      only say what would be done
# The reason goes to stderr (watch's log) and, where logger exists, syslog.
# Runs as watch's user: root, or a Slurm operator, may requeue others' jobs.
set -u
job=${GPUFL_IDLE_SLURM_JOB:-}
user=${GPUFL_IDLE_USER:-}
action=${GPUFL_SLURM_ACTION:-requeue}
[ -n "$job" ] || exit 0
case $job in *[!0-9_]*) echo "gpufl-idle-slurm-hook: bad job id '$job'" >&2; exit 2 ;; esac
say() {
    echo "gpufl-idle-slurm-hook: $*" >&2
    command -v logger >/dev/null 2>&1 && logger -t gpufl-idle "$*"
    return 0
}
why="GPUs of Slurm job $job (user ${user:-?}) allocated but unused past the warning"
case $action in
requeue)
    if scontrol requeue "$job" 2>/dev/null; then
        say "$why: requeued"
    else
        scancel "$job" && say "$why: not requeueable, cancelled"
    fi
    ;;
cancel) scancel "$job" && say "$why: cancelled" ;;
log) say "$why: nothing done (GPUFL_SLURM_ACTION=log)" ;;
*) echo "gpufl-idle-slurm-hook: GPUFL_SLURM_ACTION=$action: use requeue, cancel or log" >&2; exit 2 ;;
esac
