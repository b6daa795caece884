#!/usr/bin/env python3
"""bench_memprof.py BUILD_DIR [PAIRS] - the cost table of docs/memprof.md:
ns per allocation call bare / --preload / eBPF, the profiler's CPU time and
peak RSS (wait4 rusage), and the aggregation's events/s; then the same
calls from Python (ctypes, 12 Python frames deep) bare / --preload / eBPF,
where both profilers also walk and name the Python frames."""
import os
import subprocess
import sys
import tempfile
import time

b = sys.argv[1]
pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
gpufl = os.path.join(b, "bin", "gpufl")
calls = os.path.join(b, "bin", "bench_memprof_calls")
agg = os.path.join(b, "bin", "bench_memprof_agg")


def ns(out):
    return float(out.split("ns_per_call")[1].split()[0])


def rusage_run(argv, **kw):
    p = subprocess.Popen(argv, **kw)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p, ru


bare = ns(subprocess.run([calls, str(pairs)], capture_output=True,
                         text=True).stdout)
with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "pre.out")
    p, ru = rusage_run([gpufl, "memprof", "--output", os.devnull, "--preload",
                        "--", calls, str(pairs)], stdout=open(out, "w"))
    pre = ns(open(out).read())
    pre_cpu = ru.ru_utime + ru.ru_stime
    pre_rss = ru.ru_maxrss

    def ebpf_run(extra, tag):
        go = os.path.join(d, "go" + tag)
        w = subprocess.Popen([calls, str(pairs), go], stdout=subprocess.PIPE,
                             text=True)
        err = os.path.join(d, "err" + tag)
        prof = subprocess.Popen([gpufl, "memprof", "--pid", str(w.pid),
                                 "--output", os.devnull, "--verbose"] + extra,
                                stderr=open(err, "w"))
        while "probes" not in open(err).read():
            time.sleep(0.05)
        open(go, "w").close()
        v = ns(w.communicate()[0])
        _, status, ru = os.wait4(prof.pid, 0)
        return v, ru.ru_utime + ru.ru_stime, ru.ru_maxrss

    ebpf, ebpf_cpu, ebpf_rss = ebpf_run([], "")
    dw, dw_cpu, dw_rss = ebpf_run(["--dwarf"], "dw")
PY = r"""
import ctypes, os, sys, time
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
lib = ctypes.CDLL(None)
lib.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_ulonglong),
                              ctypes.c_size_t]
lib.cuMemFree_v2.argtypes = [ctypes.c_ulonglong]
n = int(sys.argv[2])
while len(sys.argv) > 3 and not os.path.exists(sys.argv[3]):
    time.sleep(0.01)
def deep(k, f):
    return deep(k - 1, f) if k else f()
def run():
    p = ctypes.c_ulonglong()
    t = time.perf_counter_ns()
    for _ in range(n):
        lib.cuMemAlloc_v2(ctypes.byref(p), 4096)
        lib.cuMemFree_v2(p.value)
    return (time.perf_counter_ns() - t) / (2 * n)
print("ns_per_call %.1f" % deep(10, run), flush=True)
"""
fake = os.path.join(b, "fake", "cudamem", "libcuda.so.1")
py_pairs = pairs // 4
with tempfile.TemporaryDirectory() as d:
    src = os.path.join(d, "bench.py")
    open(src, "w").write(PY)
    pyv = "%d.%d" % sys.version_info[:2]
    py_bare = ns(subprocess.run([sys.executable, src, fake, str(py_pairs)],
                                capture_output=True, text=True).stdout)
    py_pre = ns(subprocess.run([gpufl, "memprof", "--output", os.devnull,
                                "--preload", "--", sys.executable, src, fake,
                                str(py_pairs)], capture_output=True,
                               text=True).stdout)
    go = os.path.join(d, "go")
    w = subprocess.Popen([sys.executable, src, fake, str(py_pairs), go],
                         stdout=subprocess.PIPE, text=True)
    err = os.path.join(d, "err")
    time.sleep(0.3)
    prof = subprocess.Popen([gpufl, "memprof", "--pid", str(w.pid),
                             "--output", os.devnull, "--verbose"],
                            stderr=open(err, "w"))
    while "probes" not in open(err).read():
        time.sleep(0.05)
    open(go, "w").close()
    py_ebpf = ns(w.communicate()[0])
    prof.wait()
    py_frames = "Python frames on" in open(err).read()
a = subprocess.run([agg, "1000000"], capture_output=True, text=True).stdout
print("ns per allocation API call (%d alloc+free pairs, fake driver):" % pairs)
print("  none     %10.1f ns" % bare)
print("  preload  %10.1f ns  (+%.1f ns, x%.1f)" % (pre, pre - bare, pre / bare))
print("  ebpf     %10.1f ns  (+%.1f ns, x%.0f)" % (ebpf, ebpf - bare,
                                                   ebpf / bare))
print("  ebpf --dwarf %6.1f ns  (+%.1f ns, x%.0f)" % (dw, dw - bare,
                                                      dw / bare))
print("profiler process (whole run): preload %.2f CPU-s, %d KiB peak RSS; "
      "ebpf %.2f CPU-s, %d KiB peak RSS; ebpf --dwarf %.2f CPU-s, %d KiB "
      "peak RSS" % (pre_cpu, pre_rss, ebpf_cpu, ebpf_rss, dw_cpu, dw_rss))
print("aggregation:", a.strip())
print("ns per call from CPython %s (ctypes, 12 Python frames, %d pairs%s):"
      % (pyv, py_pairs, "" if py_frames else "; eBPF: no Python frames"))
print("  none     %10.1f ns" % py_bare)
print("  preload  %10.1f ns  (+%.1f ns)" % (py_pre, py_pre - py_bare))
print("  ebpf     %10.1f ns  (+%.1f ns)" % (py_ebpf, py_ebpf - py_bare))
