#!/bin/sh
# bench/gpu/run.sh - gpufl on a real CUDA machine, in a few minutes.
#
#   bench/gpu/run.sh [BUILD_DIR]      (default: build; needs nvcc and a GPU)
#
# 1. builds the CUDA programs of this folder with nvcc;
# 2. runs each under `gpufl run` and checks the captured events against
#    what the program says it did (EXPECT line: kernel counts, grid, block,
#    shared memory, bytes copied per direction) with check.py;
#    then the profiling engines (sass; pcsamp with cupti) on matmul
#    built with -lineinfo: functions, source lines, sane counter values;
# 3. measures overhead: a launch-bound loop of tiny kernels and a
#    compute-bound loop, each without gpufl, with monitoring only
#    (nvml,host) and with tracing (cupti,nvml,host), best of 3; and the
#    profiling engines' cost on the compute-bound loop;
# 4. runs a PyTorch snippet through `gpufl run` where torch is installed.
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
fail=0

say() { printf '%s\n' "$*"; }
die() { say "run.sh: $*" >&2; exit 2; }

[ -x "$GPUFL" ] || die "$GPUFL not built (run make first)"
[ -x "$NVCC" ] || die "nvcc not found (set NVCC)"
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L
say "work dir: $WORK"

# -- 1. build ------------------------------------------------------------
for p in vecadd matmul streams loop; do
    "$NVCC" -O2 -o "$WORK/$p" "$ROOT/bench/gpu/$p.cu" || die "nvcc $p failed"
done

# -- 2. correctness ------------------------------------------------------
check() { # name program args...
    name=$1 prog=$2; shift 2
    logs=$WORK/logs-$name
    rm -rf "$logs"
    out=$("$GPUFL" run --engines cupti,nvml,host --app "$name" --log-dir "$logs" \
        -- "$WORK/$prog" "$@" 2>"$WORK/$name.stderr")
    rc=$?
    exp=$(printf '%s\n' "$out" | sed -n 's/^EXPECT //p')
    if [ $rc -ne 0 ] || [ -z "$exp" ]; then
        say "FAIL $name: exit $rc"; cat "$WORK/$name.stderr"; fail=1; return
    fi
    say "== $name"
    python3 "$ROOT/bench/gpu/check.py" "$logs" "$exp" || fail=1
}
check vecadd vecadd
check matmul matmul
check streams streams
check tiny loop tiny 2000

# -- 2b. profiling engines ------------------------------------------------
# matmul with -lineinfo under sass, then pcsamp (+cupti): the records must
# name the kernel's function, carry source lines and sane values.  What
# runs outside any scope is written at shutdown (docs/capture.md).
"$NVCC" -O2 -lineinfo -o "$WORK/matmul_li" "$ROOT/bench/gpu/matmul.cu" ||
    die "nvcc matmul -lineinfo failed"
prof() { # name engines type
    logs=$WORK/logs-$1
    rm -rf "$logs"
    "$GPUFL" run --engines "$2" --app "$1" --log-dir "$logs" -- \
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
say "== profiling engines"
prof sass sass,host sass
prof pcsamp cupti,pcsamp,host pcsamp

# -- 3. overhead -----------------------------------------------------------
best() { # mode engines args... -> min LOOP_MS of 3 runs
    mode=$1 eng=$2; shift 2
    b=
    for _ in 1 2 3; do
        if [ "$mode" = none ]; then
            t=$("$WORK/loop" "$@" | sed -n 's/^LOOP_MS //p')
        else
            t=$("$GPUFL" run --engines "$eng" --log-dir "$WORK/logs-ovh" -- \
                "$WORK/loop" "$@" 2>/dev/null | sed -n 's/^LOOP_MS //p')
        fi
        rm -rf "$WORK/logs-ovh"
        b=$(python3 -c "import sys; v=[float(x) for x in sys.argv[1:] if x]; print(min(v))" "$b" "$t")
    done
    printf '%s' "$b"
}
say "== overhead (loop time, ms, best of 3)"
printf '%-28s %10s %10s %8s %10s %8s\n' workload none monitor "+%" trace "+%"
for w in "tiny 50000" "compute 50"; do
    # shellcheck disable=SC2086
    n=$(best none - $w)
    # shellcheck disable=SC2086
    m=$(best run nvml,host $w)
    # shellcheck disable=SC2086
    t=$(best run cupti,nvml,host $w)
    python3 - "$w" "$n" "$m" "$t" <<'PY'
import sys
w, n, m, t = sys.argv[1], *map(float, sys.argv[2:])
print("%-28s %10.1f %10.1f %7.1f%% %10.1f %7.1f%%" % (
    w, n, m, 100 * (m - n) / n, t, 100 * (t - n) / n))
PY
done
say "(targets: trace <= 5% on the launch-bound loop, monitoring <= 1%)"
# the profiling engines are a profiling pass (no target): their cost on the
# compute-bound loop, where a pass would be used
n=$(best none - compute 50)
s=$(best run sass,host compute 50)
p=$(best run pcsamp,host compute 50)
python3 - "$n" "$s" "$p" <<'PY'
import sys
n, s, p = map(float, sys.argv[1:])
print("%-28s %10.1f  sass %10.1f %7.1f%%  pcsamp %10.1f %7.1f%%" % (
    "compute 50 (profiling)", n, s, 100 * (s - n) / n, p, 100 * (p - n) / n))
PY

# -- 4. PyTorch ------------------------------------------------------------
if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    say "== pytorch"
    logs=$WORK/logs-torch
    "$GPUFL" run --engines cupti,nvml,host --app torch --log-dir "$logs" -- \
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
n = len(s.streams["device"].of("kernel"))
print("%s pytorch kernels captured: %d (want >= 40)" % ("ok  " if n >= 40 else "FAIL", n))
sys.exit(0 if n >= 40 else 1)
PY
else
    say "== pytorch: skipped (torch with CUDA not installed)"
fi

if [ $fail -eq 0 ]; then say "all checks passed"; else say "SOME CHECKS FAILED"; fi
exit $fail
