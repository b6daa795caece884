#!/bin/bash
# slurm-up.sh - start a throw-away single-node Slurm (Debian 12's slurmctld,
# slurmd, munge) on 127.0.0.1, every file under $BASE, nothing under /etc.
# Run as root (slurmd runs jobs as their users).  Afterwards every client
# command needs SLURM_CONF=$BASE/etc/slurm.conf.  slurm-down.sh undoes it.
#
# Env: BASE (required, an empty or earlier directory), CTLD_PORT,
# SLURMD_PORT (free TCP ports; the caller checks), SRUN_PORTS (a range,
# "lo-hi"), NGPUS (fake GPUs, 2), PROCTRACK (auto, cgroup, linuxproc).
# Adapted from the verified recipe in the project's reference notes
# (schedulers-for-tests.md): cgroup v1 hybrid VMs take proctrack/cgroup,
# anything else proctrack/linuxproc (pure cgroup v2 needs systemd there).
set -euo pipefail
: "${BASE:?BASE=directory}"
NODE=$(hostname -s) # slurmd finds its NodeName by the short host name
CTLD_PORT=${CTLD_PORT:-16817}
SLURMD_PORT=${SLURMD_PORT:-16818}
SRUN_PORTS=${SRUN_PORTS:-16900-16999}
NGPUS=${NGPUS:-2}
PROCTRACK=${PROCTRACK:-auto}
if [ "$PROCTRACK" = auto ]; then
    if [ -d /sys/fs/cgroup/freezer ]; then PROCTRACK=cgroup; else PROCTRACK=linuxproc; fi
fi
alive() { [ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status"; }
for d in slurmctld slurmd munged; do # refuse to start twice on one state dir
    p=$(cat "$BASE/run/$d.pid" 2>/dev/null) && alive "$p" &&
        { echo "slurm-up: $d already running (pid $p)" >&2; exit 1; }
done
mkdir -p "$BASE"/{etc,munge,state,spool,log,run,dev,jobs}
chmod 755 "$BASE" "$BASE/munge"
chmod 1777 "$BASE/jobs" # output of jobs submitted as nobody
[ -f "$BASE/munge/munge.key" ] || mungekey -c -b 1024 -k "$BASE/munge/munge.key"
# fake GPUs: character devices with NVIDIA's major number (no driver is
# needed for Slurm to hand them out); where mknod is refused, null devices
files=""
for ((i = 0; i < NGPUS; i++)); do
    f="$BASE/dev/nvidia$i"
    [ -c "$f" ] || mknod "$f" c 195 "$i" 2>/dev/null || { files=""; break; }
    files="$files${files:+,}$f"
done
[ -n "$files" ] || files=/dev/null,/dev/zero
cat >"$BASE/etc/slurm.conf" <<CONF
ClusterName=gpufltest
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SrunPortRange=$SRUN_PORTS
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$BASE/munge/munge.socket.2
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$BASE/state
SlurmdSpoolDir=$BASE/spool
SlurmctldPidFile=$BASE/run/slurmctld.pid
SlurmdPidFile=$BASE/run/slurmd.pid
SlurmctldLogFile=$BASE/log/slurmctld.log
SlurmdLogFile=$BASE/log/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/$PROCTRACK
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
GresTypes=gpu
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=8 RealMemory=1000 Gres=gpu:$NGPUS State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
cat >"$BASE/etc/cgroup.conf" <<CONF
CgroupPlugin=autodetect
CgroupMountpoint=/sys/fs/cgroup
IgnoreSystemd=yes
CONF
echo "NodeName=$NODE Name=gpu File=$files" >"$BASE/etc/gres.conf"
export SLURM_CONF=$BASE/etc/slurm.conf
munged --socket="$BASE/munge/munge.socket.2" --key-file="$BASE/munge/munge.key" \
    --pid-file="$BASE/run/munged.pid" --log-file="$BASE/log/munged.log" \
    --seed-file="$BASE/munge/munged.seed"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
st=""
for _ in $(seq 1 200); do # at most 20 s until the node is idle
    st=$(sinfo -h -n "$NODE" -o %T 2>/dev/null || true)
    [ "$st" = idle ] && break
    sleep 0.1
done
if [ "$st" != idle ]; then
    echo "slurm-up: node not ready (state '$st')" >&2
    tail -5 "$BASE/log/slurmctld.log" "$BASE/log/slurmd.log" >&2 || true
    exit 1
fi
echo "slurm up (proctrack/$PROCTRACK, node $NODE, GPUs $files)"
