#!/bin/sh
# bench/gpu/run.sh - gpufl on a real CUDA machine, in a few minutes.
#
#   bench/gpu/run.sh [BUILD_DIR]      (default: build; needs nvcc and a GPU)
#
# BUILD_DIR is a build folder or a kit from bench/gpu/kit.sh (a gpufl that
# runs where our Debian packages are missing; the lent GPU machines need
# it).  When $OUT names a folder (the device tool's), the whole output is
# also written to $OUT/run.log and the logs of the checks to
# $OUT/gpu-logs.tar.gz, for reading afterwards.
#
# 1. builds the CUDA programs of this folder with nvcc (-arch=native when
#    it works; NVCC_ARCH overrides);
# 2. runs each under `gpufl run` and checks the captured events against
#    what the program says it did (EXPECT line: kernel counts, grid, block,
#    shared memory, bytes copied per direction) with check.py;
#    then the profiling engines (sass; pcsamp with cupti) on matmul
#    built with -lineinfo: functions, source lines, sane counter values;
# 3. measures overhead: a launch-bound loop of tiny kernels (TINY_N
#    launches) and a compute-bound loop (COMPUTE_N kernels), each without
#    gpufl, with monitoring only (nvml,host), with tracing
#    (cupti,nvml,host) and tracing with CPU stacks, best of 3; and the
#    profiling engines' cost on a short compute-bound loop;
# 4. runs a PyTorch snippet through `gpufl run` where torch is installed;
# 5. runs `gpufl idle` against the loads of the idle seed's table (nothing,
#    memory held, a one-thread kernel loop, every SM busy: idle.cu) and
#    compares the verdict with the expected one (EMPTY, HELD,
#    BUSY_LOW_OCC, BUSY), printing the signals it read;
# 6. runs `gpufl memprof` on PyTorch allocations (mp.py), with the
#    LD_PRELOAD interposer and, where eBPF is permitted, with uprobes: the
#    flame graph's Python frames must carry the bytes.
# 7. the flight recorder (ring.cu): ring mode writes nothing until SIGUSR2,
#    then one dump (the window, then live; seqs contiguous); `gpufl ctl
#    PID trace on|off` in a process started in monitoring (kernel lines
#    between the two only); and the application thread's cost per launch
#    and per scope event in file mode, ring mode and monitoring.
# 8. `gpufl attach`: a running CUDA program started without gpufl gets a
#    5 s session by ptrace; its kernels must be in it and it must run on.
# 3b. (floor) CUPTI's own cost per launch without gpufl (cupti_floor.cu).
#
# SECTIONS="overhead floor ..." runs only those (default: all).
#
# Nothing here can run on the GPU-less CI machines; docs/capture.md says
# what is verified where.  Exit status 1 when any check failed.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
GPUFL=$BUILD/bin/gpufl
WORK=${GPUFL_BENCH_DIR:-$(mktemp -d /tmp/gpufl-gpu.XXXXXX)}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}

TINY_N=${TINY_N:-200000}
# A run that hangs (CUPTI's teardown at exit is a known place) must not eat
# the whole lease: every gpufl run is bounded, and after one hang the
# overhead loops (24 more runs) are skipped.
RUN_TIMEOUT=${RUN_TIMEOUT:-90}
grun() { # gpufl run ARGS..., bounded; notes a hang
    timeout -k 5 "$RUN_TIMEOUT" "$GPUFL" run "$@"
    r=$?
    if [ $r -eq 124 ] || [ $r -eq 137 ]; then
        say "HANG: gpufl run $* (killed after ${RUN_TIMEOUT} s)" >&2
        : >"$WORK/hung" # a file: grun often runs in a subshell
    fi
    return $r
}
COMPUTE_N=${COMPUTE_N:-1000}
# SECTIONS: which parts run (a short second lease need not redo them all):
# "all" (default) or some of correctness profiling overhead floor pytorch
# idle memprof recorder attach
SECTIONS=${SECTIONS:-all}
want() { case " $SECTIONS " in *" all "* | *" $1 "*) return 0 ;; esac; return 1; }
fail=0
T0=$(date +%s)

say() { printf '%s\n' "$*"; }
die() { say "run.sh: $*" >&2; exit 2; }
section() { say "== $* (at $(($(date +%s) - T0)) s)"; }

# Under the device tool: everything into $OUT/run.log as well (the reply
# only keeps the output's tail), the exit status kept through the pipe.
if [ -n "${OUT:-}" ] && [ -d "$OUT" ] && [ -z "${GPUFL_RUN_TEED:-}" ]; then
    GPUFL_RUN_TEED=1 GPUFL_BENCH_DIR=$WORK
    export GPUFL_RUN_TEED GPUFL_BENCH_DIR
    { sh "$0" "$BUILD"; echo $? >"$WORK/status"; } 2>&1 | tee "$OUT/run.log"
    (cd "$WORK" && tar czf "$OUT/gpu-logs.tar.gz" --exclude=logs-ovh \
        logs-* ./*.stderr ./idle-* ./mp-* ./ring.out ./ctl.* ./attach-* \
        ./floor-* 2>/dev/null)
    [ "$(du -k "$OUT/gpu-logs.tar.gz" | cut -f1)" -lt 16000 ] ||
        rm -f "$OUT/gpu-logs.tar.gz"
    exit "$(cat "$WORK/status" 2>/dev/null || echo 2)"
fi

[ -x "$GPUFL" ] || die "$GPUFL not built (run make, or bench/gpu/kit.sh)"
[ -x "$NVCC" ] || die "nvcc not found (set NVCC)"
section environment
date -u
uname -sr
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi \
    --query-gpu=name,driver_version,compute_cap,memory.total,clocks.max.sm \
    --format=csv,noheader
"$NVCC" --version | tail -n 2 | head -n 1
"$GPUFL" version | head -n 1
# torch is imported once here (seconds on a lease): its version, and
# whether sections 4 and 6 run
TORCH=$(python3 -c "import torch; print(torch.__version__, 'cuda' if torch.cuda.is_available() else 'nocuda')" 2>/dev/null)
[ -z "$TORCH" ] || say "torch $TORCH"
say "work dir: $WORK"

# -- 1. build ------------------------------------------------------------
section build
ARCH=${NVCC_ARCH-"-arch=native"}
# shellcheck disable=SC2086
if [ -n "$ARCH" ] && ! "$NVCC" $ARCH -o "$WORK/probe" \
    "$ROOT/bench/gpu/vecadd.cu" 2>/dev/null; then
    say "nvcc $ARCH failed: building for nvcc's default target (PTX JIT)"
    ARCH=
fi
for p in vecadd matmul streams loop idle; do
    # shellcheck disable=SC2086
    "$NVCC" -O2 $ARCH -o "$WORK/$p" "$ROOT/bench/gpu/$p.cu" ||
        die "nvcc $p failed"
done

# -- 2. correctness ------------------------------------------------------
check() { # name program args...
    name=$1 prog=$2; shift 2
    logs=$WORK/logs-$name
    rm -rf "$logs"
    out=$(grun --engines cupti,nvml,host --app "$name" --log-dir "$logs" \
        -- "$WORK/$prog" "$@" 2>"$WORK/$name.stderr")
    rc=$?
    exp=$(printf '%s\n' "$out" | sed -n 's/^EXPECT //p')
    if [ $rc -ne 0 ] || [ -z "$exp" ]; then
        say "FAIL $name: exit $rc"; cat "$WORK/$name.stderr"; fail=1; return
    fi
    say "== $name"
    python3 "$ROOT/bench/gpu/check.py" "$logs" "$exp" || fail=1
}
if want correctness; then
    section correctness
    check vecadd vecadd
    check matmul matmul
    check streams streams
    check tiny loop tiny 2000
fi

# -- 2b. profiling engines ------------------------------------------------
# matmul with -lineinfo under sass, then pcsamp (+cupti): the records must
# name the kernel's function, carry source lines and sane values.  What
# runs outside any scope is written at shutdown (docs/capture.md).
# shellcheck disable=SC2086
"$NVCC" -O2 $ARCH -lineinfo -o "$WORK/matmul_li" "$ROOT/bench/gpu/matmul.cu" ||
    die "nvcc matmul -lineinfo failed"
prof() { # name engines type
    logs=$WORK/logs-$1
    rm -rf "$logs"
    grun --engines "$2" --app "$1" --log-dir "$logs" -- \
        "$WORK/matmul_li" >/dev/null 2>"$WORK/$1.stderr" ||
        { say "FAIL $1: exit $?"; cat "$WORK/$1.stderr"; fail=1; return; }
    python3 - "$logs" "$ROOT" "$3" "$2" <<'PY' || fail=1
import sys
sys.path.insert(0, sys.argv[2] + "/tests/client")
import gpufl_logs as gl
logs, typ, eng = sys.argv[1], sys.argv[3], sys.argv[4]
s = next(iter(gl.validate(logs).values()))
print("   engines:", s.header["engines"])
recs = s.streams["scope"].of(typ)
funcs = {s.name(r["func"]) for r in recs if r.get("func")}
lines = sum(1 for r in recs if r.get("line"))
ok = bool(recs) and any("matmul" in f for f in funcs) and lines > 0
if typ == "sass":
    inst = sum(r["inst"] for r in recs)
    thr = sum(r["thread_inst"] for r in recs)
    sec, ideal = sum(r["sectors"] for r in recs), sum(r["sectors_ideal"] for r in recs)
    ok = ok and inst > 0 and thr >= inst and sec >= ideal > 0
    print("   %d sass lines, functions %s; inst %d, SIMT efficiency %.2f, "
          "coalescing %.2f, %d with a source line" % (
              len(recs), sorted(funcs), inst, thr / max(inst, 1) / 32,
              ideal / max(sec, 1), lines))
else:
    samples = sum(r["samples"] for r in recs)
    top = {}
    for r in recs:
        for k, v in r["stalls"].items():
            top[k] = top.get(k, 0) + v
    ok = ok and samples > 0
    print("   %d pcsamp lines, functions %s; %d samples, top stalls %s, "
          "%d with a source line" % (
              len(recs), sorted(funcs), samples,
              sorted(top.items(), key=lambda kv: -kv[1])[:4], lines))
print("%s %s records (%s)" % ("ok  " if ok else "FAIL", typ, eng))
sys.exit(0 if ok else 1)
PY
}
if want profiling; then
    section "profiling engines"
    prof sass sass,host sass
    prof pcsamp cupti,pcsamp,host pcsamp
fi

# -- 3. overhead -----------------------------------------------------------
best() { # mode engines args... -> min LOOP_MS of 3 runs
    mode=$1 eng=$2; shift 2
    b=
    for _ in 1 2 3; do
        case $mode in
        none) t=$(timeout -k 5 "$RUN_TIMEOUT" "$WORK/loop" "$@" | sed -n 's/^LOOP_MS //p') ;;
        *) t=$(GPUFL_STACKS=$([ "$mode" = stacks ] && echo 1 || echo 0) \
            grun --engines "$eng" --log-dir "$WORK/logs-ovh" -- \
            "$WORK/loop" "$@" 2>/dev/null | sed -n 's/^LOOP_MS //p') ;;
        esac
        rm -rf "$WORK/logs-ovh"
        b=$(python3 -c "import sys; v=[float(x) for x in sys.argv[1:] if x]; print(min(v) if v else 'nan')" "$b" "$t")
    done
    printf '%s' "$b"
}
overhead() {
    section "overhead (loop time, ms, best of 3)"
    printf '%-16s %9s %9s %7s %9s %7s %9s %7s\n' workload none monitor \
        "+%" trace "+%" +stacks "+%"
    for w in "tiny $TINY_N" "compute $COMPUTE_N"; do
        # shellcheck disable=SC2086
        n=$(best none - $w)
        # shellcheck disable=SC2086
        m=$(best run nvml,host $w)
        # shellcheck disable=SC2086
        t=$(best run cupti,nvml,host $w)
        # shellcheck disable=SC2086
        k=$(best stacks cupti,nvml,host $w)
        python3 - "$w" "$n" "$m" "$t" "$k" <<'PY'
import sys
w, n, m, t, k = sys.argv[1], *map(float, sys.argv[2:])
pct = lambda x: 100 * (x - n) / n
print("%-16s %9.1f %9.1f %6.1f%% %9.1f %6.1f%% %9.1f %6.1f%%" % (
    w, n, m, pct(m), t, pct(t), k, pct(k)))
PY
    done
    say "(targets: trace <= 5% on the launch-bound loop, monitoring <= 1%)"
    # the profiling engines are a profiling pass (no target): their cost on the
    # compute-bound loop, where a pass would be used
    n=$(best none - compute 20)
    s=$(best run sass,host compute 20)
    p=$(best run pcsamp,host compute 20)
    python3 - "$n" "$s" "$p" <<'PY'
import sys
n, s, p = map(float, sys.argv[1:])
print("%-28s none %.1f ms, sass %.1f (%+.1f%%), pcsamp %.1f (%+.1f%%)" % (
    "compute 20 (profiling)", n, s, 100 * (s - n) / n, p, 100 * (p - n) / n))
PY
}
if ! want overhead; then
    :
elif [ -e "$WORK/hung" ]; then
    section "overhead: skipped (a run hung above; its stderr is in the logs)"
else
    overhead
fi

# -- 3b. CUPTI's own cost -----------------------------------------------------
# cupti_floor.cu: the same empty-kernel launches with CUPTI switched on piece
# by piece and no gpufl (an empty callback, activity records, API records):
# what part of the tracing and monitoring figures above is CUPTI's own.
floor() {
    section "CUPTI's floor (no gpufl; ns per launch, best of ${FLOOR_RUNS:-3})"
    cuda=$(dirname "$(dirname "$NVCC")")
    # shellcheck disable=SC2086
    "$NVCC" -O2 $ARCH -o "$WORK/cupti_floor" "$ROOT/bench/gpu/cupti_floor.cu" \
        -I"$cuda/include" -I"$cuda/extras/CUPTI/include" -L"$cuda/lib64" \
        -L"$cuda/extras/CUPTI/lib64" -lcupti -Xlinker -rpath \
        -Xlinker "$cuda/lib64" || { say "FAIL nvcc cupti_floor.cu"; fail=1; return; }
    printf '%-8s %9s %9s %9s %6s  %s\n' mode wall issue cpu cb/l records
    # the modes take turns, FLOOR_RUNS rounds: the machine's drift (one
    # lease's baseline moved 3.4 -> 4.8 us in minutes) falls on all alike
    modes=${FLOOR_MODES:-none cb-drv cb-rt cb-both cb-sync act act-api all}
    for mode in $modes; do : >"$WORK/floor-$mode.out"; done
    for _ in $(seq "${FLOOR_RUNS:-3}"); do
        for mode in $modes; do
            timeout -k 5 "$RUN_TIMEOUT" "$WORK/cupti_floor" "$mode" \
                "$TINY_N" >>"$WORK/floor-$mode.out" 2>&1
        done
    done
    for mode in $modes; do
        python3 -c "
import sys
v = {}
for l in sys.stdin:
    if not l.strip():
        continue
    k, _, x = l.strip().partition(' ')
    v.setdefault(k, []).append(x)
f = lambda k: min((float(x) for x in v.get(k, [])), default=float('nan'))
rec = v.get('KERNEL_RECORDS', ['-'])[-1]
print('%-8s %9.1f %9.1f %9.1f %6.2f  %s' % (sys.argv[1], f('WALL_NS'),
      f('ISSUE_NS'), f('CPU_NS'), f('CALLBACKS_PER_LAUNCH'), rec))
bad = [l for l in v if l not in ('MODE', 'WALL_NS', 'ISSUE_NS', 'CPU_NS',
       'CALLBACKS_PER_LAUNCH', 'KERNEL_RECORDS')]
if bad: print('   unexpected output:', [(k + ' ' + v[k][0])[:120] for k in bad[:2]])
" "$mode" <"$WORK/floor-$mode.out"
    done
}
if want floor; then floor; fi

# -- 4. PyTorch ------------------------------------------------------------
if ! want pytorch; then
    :
elif [ "${TORCH#* }" = cuda ]; then
    section pytorch
    logs=$WORK/logs-torch
    grun --engines cupti,nvml,host --app torch --log-dir "$logs" -- \
        python3 -c "
import torch
a = torch.randn(1024, 1024, device='cuda')
for _ in range(20):
    a = torch.relu(a @ a / 1024)
torch.cuda.synchronize()
print('EXPECT {}')" >/dev/null || fail=1
    python3 - "$logs" "$ROOT" <<'PY' || fail=1
import sys
sys.path.insert(0, sys.argv[2] + "/tests/client")
import gpufl_logs as gl
s = next(iter(gl.validate(sys.argv[1]).values()))
print("   engines:", s.header["engines"])
n = len(s.streams["device"].of("kernel"))
print("%s pytorch kernels captured: %d (want >= 40)" % ("ok  " if n >= 40 else "FAIL", n))
sys.exit(0 if n >= 40 else 1)
PY
else
    say "== pytorch: skipped (torch with CUDA not installed)"
fi

# -- 5. idle detector --------------------------------------------------------
wait_for() { # file word tenths-of-a-second pid: until the word is in the
    i=0      # file, the time is up, or the process has gone
    while [ "$i" -lt "$3" ] && kill -0 "$4" 2>/dev/null &&
        ! grep -q "$2" "$1" 2>/dev/null; do
        sleep 0.1
        i=$((i + 1))
    done
}
idle_check() { # load expected-state
    load=$1 want=$2 pid=
    if [ "$load" != none ]; then
        timeout -k 5 60 "$WORK/idle" "$load" 8 >"$WORK/idle-$load.out" &
        pid=$!
        wait_for "$WORK/idle-$load.out" READY 100 "$pid"
        sleep 1
    fi
    timeout -k 5 60 "$GPUFL" idle --once --json --samples 6 --interval 500 \
        --window 3s --grace 0 >"$WORK/idle-$load.json" \
        2>"$WORK/idle-$load.stderr"
    [ -z "$pid" ] || wait "$pid"
    python3 - "$load" "$want" "$WORK/idle-$load.json" <<'PY' || fail=1
import json, sys
load, want, path = sys.argv[1:]
try:
    g = json.load(open(path))["gpus"][0]
except Exception as e:
    print("FAIL idle %-10s no verdict: %s" % (load, e))
    print("     " + open(path[:-5] + ".stderr").read().strip()[:300])
    sys.exit(1)
ok = g["state"] == want
print("%s idle %-10s state %s (want %s); %s" % (
    "ok  " if ok else "FAIL", load, g["state"], want, "; ".join(g["reasons"])))
print("     signals", json.dumps(g["signals"]))
sys.exit(0 if ok else 1)
PY
}
if want idle; then
    section "idle detector (gpufl idle on this GPU)"
    idle_check none EMPTY
    idle_check hold HELD
    idle_check one_thread BUSY_LOW_OCC
    idle_check matmul BUSY
fi

# -- 6. memprof ---------------------------------------------------------------
mp_check() { # mode folded-file
    python3 - "$1" "$2" <<'PY'
import sys
mode, path = sys.argv[1:]
kv = w = 0
try:
    for line in open(path):
        stack, _, n = line.rstrip().rpartition(" ")
        if "alloc_kv_cache" in stack:
            kv += int(n)
        if "Model.build" in stack:
            w += int(n)
except OSError as e:
    print("FAIL memprof %-7s no profile: %s" % (mode, e))
    sys.exit(1)
ok = kv >= 1 << 30 and w >= 32 << 20
print("%s memprof %-7s alloc_kv_cache %d bytes (want >= 1 GiB), "
      "Model.build %d (want >= 32 MiB)" % ("ok  " if ok else "FAIL", mode, kv, w))
if not ok:
    print("     top stacks:", sorted(open(path).read().splitlines(),
                                   key=lambda l: -int(l.rpartition(" ")[2]))[:3])
sys.exit(0 if ok else 1)
PY
}
if ! want memprof; then
    :
elif [ "${TORCH#* }" = cuda ]; then
    section "memprof (PyTorch allocations)"
    timeout -k 5 120 "$GPUFL" memprof --preload --outdir "$WORK/mp-preload" \
        -- python3 "$ROOT/bench/gpu/mp.py" >/dev/null 2>"$WORK/mp-preload.stderr"
    mp_check preload "$WORK/mp-preload/memprof.alloc.folded" || fail=1
    if "$GPUFL" memprof --check >"$WORK/mp-check.txt" 2>&1; then
        # not under timeout: --pid must name python itself; a watchdog
        # bounds it instead
        python3 "$ROOT/bench/gpu/mp.py" "$WORK/mp-go" >"$WORK/mp-ebpf.out" 2>&1 &
        pid=$!
        (sleep 120 && kill "$pid") 2>/dev/null &
        dog=$!
        wait_for "$WORK/mp-ebpf.out" INITED 600 "$pid"
        timeout -k 5 120 "$GPUFL" memprof --pid "$pid" --verbose \
            --outdir "$WORK/mp-ebpf" 2>"$WORK/mp-ebpf.stderr" &
        mpid=$!
        wait_for "$WORK/mp-ebpf.stderr" attached 100 "$mpid"
        : >"$WORK/mp-go"
        wait "$pid"
        wait "$mpid"
        kill "$dog" 2>/dev/null
        mp_check ebpf "$WORK/mp-ebpf/memprof.alloc.folded" ||
            { fail=1; head -n 5 "$WORK/mp-ebpf.stderr"; }
    else
        say "   eBPF not permitted here: $(head -c 300 "$WORK/mp-check.txt")"
    fi
else
    section "memprof: skipped (torch with CUDA not installed)"
fi

# -- 7. flight recorder: ring mode, gpufl ctl, their cost --------------------
# ring.cu under `gpufl run` (docs/recorder.md).  Each part is a function of
# its own; the target pid is found through its control socket (`gpufl run`
# spawns the program: $! is gpufl's).
ring_pid() { # the pid of the gpufl process with a control socket, waiting
    i=0      # up to 10 s for it to appear
    while [ $i -lt 100 ]; do
        p=$("$GPUFL" ctl --all status 2>/dev/null |
            sed -n 's/^{"pid":\([0-9]*\),"ok":true.*/\1/p' | head -n 1)
        [ -n "$p" ] && { echo "$p"; return 0; }
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}
ring_build() {
    # shellcheck disable=SC2086
    "$NVCC" -O2 $ARCH -o "$WORK/ring" "$ROOT/bench/gpu/ring.cu" -ldl
}
ring_dump() { # ring mode: nothing written, SIGUSR2, the window then live
    logs=$WORK/logs-ring
    rm -rf "$logs"
    GPUFL_RECORD=ring:30s GPUFL_TRIGGER_AFTER=2s GPUFL_TRIGGERS=signal,crash \
        grun --engines cupti,nvml,host --app ring --log-dir "$logs" -- \
        "$WORK/ring" run 7 >"$WORK/ring.out" 2>"$WORK/ring.stderr" &
    rp=$!
    wait_for "$WORK/ring.out" READY 300 "$rp"
    pid=$(ring_pid) || { say "FAIL ring: no control socket"; fail=1; wait "$rp"; return; }
    sleep 3
    before=$(find "$logs" -type f 2>/dev/null | wc -l)
    kill -USR2 "$pid"
    wait "$rp" || { say "FAIL ring: exit $?"; cat "$WORK/ring.stderr"; fail=1; }
    python3 - "$logs" "$ROOT" "$before" <<'PY' || fail=1
import sys
sys.path.insert(0, sys.argv[2] + "/tests/client")
import gpufl_logs as gl
logs, before = sys.argv[1], int(sys.argv[3])
S = 10 ** 9
d = sorted(gl.validate(logs).values(), key=lambda x: x.header["dump"])
ok = before == 0 and len(d) == 1 and d[0].header.get("record") == "ring"
s = d[0]
dev = s.streams["device"]
t = dev.events[1]
ok = ok and t["type"] == "trigger" and t["trigger"] == "signal"
gaps = {n: st.gaps for n, st in s.streams.items()}
contig = all([e["seq"] for e in st.events] == list(range(len(st.events)))
             for st in s.streams.values())
k = [e["ts"] for e in dev.of("kernel")]
win = [x for x in k if x < t["ts"]]
live = [x for x in k if x >= t["ts"]]
# the window: at most 30 s back (the program ran ~3 s before the signal)
inwin = bool(win) and min(win) >= t["ts"] - 30 * S
ok = ok and contig and not any(gaps.values()) and inwin and len(live) > 0
print("%s ring: files before the signal %d; one dump (%d); trigger %s %s; "
      "window %s; kernels %d in the window (%.2f s back), %d live; seqs "
      "contiguous %s" % ("ok  " if ok else "FAIL", before, len(d),
                         t.get("trigger"), t.get("detail"), t.get("window"),
                         len(win), (t["ts"] - min(win)) / S if win else 0,
                         len(live), contig))
sys.exit(0 if ok else 1)
PY
}
ring_trace() { # monitoring, then gpufl ctl PID trace on, then off
    logs=$WORK/logs-ctl
    rm -rf "$logs"
    GPUFL_TRACE=false grun --engines cupti,nvml,host --app ctl \
        --log-dir "$logs" -- "$WORK/ring" run 8 >"$WORK/ctl.out" \
        2>"$WORK/ctl.stderr" &
    rp=$!
    wait_for "$WORK/ctl.out" READY 300 "$rp"
    pid=$(ring_pid) || { say "FAIL ctl: no control socket"; fail=1; wait "$rp"; return; }
    sleep 1.5
    "$GPUFL" ctl "$pid" trace on >"$WORK/ctl.on" 2>&1
    sleep 2
    "$GPUFL" ctl "$pid" trace off >"$WORK/ctl.off" 2>&1
    wait "$rp" || { say "FAIL ctl: exit $?"; cat "$WORK/ctl.stderr"; fail=1; }
    python3 - "$logs" "$ROOT" "$WORK/ctl.on" "$WORK/ctl.off" <<'PY' || fail=1
import sys
sys.path.insert(0, sys.argv[2] + "/tests/client")
import gpufl_logs as gl
logs = sys.argv[1]
S = 10 ** 9
ans = [open(p).read().strip() for p in sys.argv[3:5]]
(s,) = gl.validate(logs).values()
m = {e["text"].split(" (")[0]: e["ts"] for e in s.streams["scope"].of("marker")
     if e["text"].startswith("gpufl: tracing")}
on, off = m.get("gpufl: tracing on"), m.get("gpufl: tracing off")
k = [e["ts"] for e in s.streams["device"].of("kernel")]
ok = all('"ok":true' in a for a in ans) and on and off and len(k) > 100
early = [x for x in k if on and x < on - S // 20]
late = [x for x in k if off and x > off + S // 2]
ok = ok and not early and not late
print("%s ctl trace: on/off answered %s; %d kernels between on and off "
      "(%.2f s), %d before on, %d more than 0.5 s after off" % (
          "ok  " if ok else "FAIL", [a[:60] for a in ans], len(k),
          (off - on) / S if on and off else 0, len(early), len(late)))
sys.exit(0 if ok else 1)
PY
}
ring_best() { # env-assignment... -> "LAUNCH_NS SCOPE_NS", best of 3 runs
    b=
    for _ in 1 2 3; do
        if [ "$1" = none ]; then
            o=$(timeout -k 5 "$RUN_TIMEOUT" "$WORK/ring" cost "$TINY_N")
        else
            o=$(env "$@" timeout -k 5 "$RUN_TIMEOUT" "$GPUFL" run \
                --engines cupti,nvml,host --log-dir "$WORK/logs-ovh" -- \
                "$WORK/ring" cost "$TINY_N" 2>/dev/null)
        fi
        rm -rf "$WORK/logs-ovh"
        b="$b $(printf '%s\n' "$o" | sed -n 's/^LAUNCH_NS //p'):$(printf '%s\n' "$o" | sed -n 's/^SCOPE_NS //p')"
    done
    # shellcheck disable=SC2086
    python3 -c "
import sys
v = [x.split(':') for x in sys.argv[1:] if x.split(':')[0]]
f = lambda i: min((float(x[i]) for x in v if x[i] not in ('', 'none')), default=float('nan'))
print('%.1f %.1f' % (f(0), f(1)))" $b
}
ring_cost() { # the app thread's cost per launch and per scope event
    n=$(ring_best none)
    f=$(ring_best GPUFL_RECORD=file)
    r=$(ring_best GPUFL_RECORD=ring:256MiB)
    m=$(ring_best GPUFL_RECORD=ring:256MiB GPUFL_TRACE=false)
    # without the cuda-error and oom triggers no launch callback is installed
    q=$(ring_best GPUFL_RECORD=ring:256MiB GPUFL_TRACE=false \
        GPUFL_TRIGGERS=signal,crash,exit-error,ctl)
    python3 - "$n" "$f" "$r" "$m" "$q" <<'PY'
import sys
(n, _), (f, fs), (r, rs), (m, ms), (q, _) = (map(float, a.split()) for a in sys.argv[1:])
def v(x, lim):
    return "ok  " if x <= lim else "OVER"
print("   launch (ns per launch, best of 3): none %.1f, file+trace %.1f, "
      "ring+trace %.1f, ring+monitoring %.1f" % (n, f, r, m))
print("%s ring: launch callbacks add %.1f ns per launch (target <= 300)" % (
    v(r - n, 300), r - n))
print("%s ring, monitoring: %.1f ns per launch (target <= 20)" % (
    v(m - n, 20), m - n))
print("   ring, monitoring without the cuda-error/oom triggers (no launch "
      "callbacks): %.1f ns per launch" % (q - n))
print("%s ring: a scope event costs %.1f ns on the app thread (file mode "
      "%.1f; target <= 50)" % (v(rs, 50), rs, fs))
PY
}
flight_recorder() {
    section "flight recorder (ring mode, gpufl ctl trace, their cost)"
    ring_build || { say "FAIL nvcc ring.cu"; fail=1; return; }
    ring_dump
    ring_trace
    if [ -e "$WORK/hung" ]; then
        say "   cost: skipped (a run hung above)"
    else
        ring_cost
    fi
}
if want recorder; then flight_recorder; fi

# -- 8. gpufl attach -----------------------------------------------------------
# A CUDA program started without gpufl (the launch-bound loop, ATTACH_N
# launches: some seconds) gets gpufl by ptrace for 5 s: kernel lines must
# appear in that session, and the program must run on and end well with
# its own output (docs/recorder.md#gpufl-attach).
attach_check() {
    logs=$WORK/logs-attach
    rm -rf "$logs"
    "$WORK/loop" tiny "${ATTACH_N:-3000000}" >"$WORK/attach-prog.out" 2>&1 &
    pid=$!
    sleep 2 # past cuInit and the context's creation: attach comes later
    out=$(timeout -k 5 60 "$GPUFL" attach "$pid" --for 5s --engines cupti \
        --log-dir "$logs" 2>"$WORK/attach.stderr")
    rc=$?
    say "   $out"
    alive=0
    kill -0 "$pid" 2>/dev/null && alive=1
    wait "$pid"
    prc=$?
    n=$(cat "$logs"/*.device.log 2>/dev/null | grep -c '"type":"kernel"')
    if [ $rc -eq 0 ] && [ "$n" -gt 0 ] && [ $prc -eq 0 ] &&
        grep -q '^LOOP_MS ' "$WORK/attach-prog.out"; then
        say "ok   attach: $n kernel lines in 5 s; the program ran on" \
            "(alive after detach: $alive) and exited 0"
    else
        say "FAIL attach: gpufl attach exit $rc, $n kernel lines, program" \
            "exit $prc"
        cat "$WORK/attach.stderr" "$WORK/attach-prog.out" | tail -n 20
        fail=1
    fi
}
if want attach; then
    section "gpufl attach (a running CUDA program)"
    attach_check
fi

say "(took $(($(date +%s) - T0)) s)"
if [ $fail -eq 0 ]; then say "all checks passed"; else say "SOME CHECKS FAILED"; fi
exit $fail
