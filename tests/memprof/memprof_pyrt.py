"""memprof_pyrt.py - the memprof tests of Python frames (prog_memprof.py
under every CPython 3.10-3.13 installed here, eBPF and --preload) and of
the runtime layer (prog_static_rt.c: cudart "linked statically";
prog_dlopen_rt.c: the driver opened RTLD_LOCAL as libcudart.so does)."""
import os
import signal
import subprocess
import sys
import time

from memprof_common import (MiB, Prog, check, check_folded, check_pprof,
                            wait_for)

# prog_static_rt: runtime calls (statically linked cudart) counted once, at
# the runtime layer; the direct driver call at the driver layer
RT_DRIVER = {"cudaMalloc": "cuMemAlloc_v2", "cudaMallocHost":
             "cuMemAllocHost_v2", "cudaHostAlloc": "cuMemHostAlloc",
             "cudaMallocManaged": "cuMemAllocManaged", "cudaMallocPitch":
             "cuMemAllocPitch_v2", "cudaMallocAsync": "cuMemAllocAsync",
             "cudaMallocFromPoolAsync": "cuMemAllocFromPoolAsync"}
RT_ALLOC = {
    ("main", "rt_alloc", "cudaMalloc"): (16 * MiB, 2),
    ("main", "rt_pinned", "cudaMallocHost"): (1 * MiB, 1),
    ("main", "rt_hostalloc", "cudaHostAlloc"): (1 * MiB, 1),
    ("main", "rt_managed", "cudaMallocManaged"): (2 * MiB, 1),
    ("main", "rt_pitched", "cudaMallocPitch"): (1024 * 10, 1),
    ("main", "rt_async", "cudaMallocAsync"): (4 * MiB, 1),
    ("main", "rt_pool", "cudaMallocFromPoolAsync"): (3 * MiB, 1),
    ("main", "drv_alloc", "cuMemAlloc_v2"): (6 * MiB, 1),
}
RT_INUSE = {
    ("main", "rt_alloc", "cudaMalloc"): (8 * MiB, 1),
    ("main", "rt_hostalloc", "cudaHostAlloc"): (1 * MiB, 1),
    ("main", "rt_managed", "cudaMallocManaged"): (2 * MiB, 1),
    ("main", "rt_pitched", "cudaMallocPitch"): (1024 * 10, 1),
    ("main", "rt_pool", "cudaMallocFromPoolAsync"): (3 * MiB, 1),
    ("main", "drv_alloc", "cuMemAlloc_v2"): (6 * MiB, 1),
}
RT_FAIL = {("main", "rt_oom", "cudaMalloc"): (2048 * 1024 * MiB, 1)}


def check_outdir(out, what, comm, alloc, inuse, fail=None, inuse_folded=True):
    """An --outdir's folded views (alloc; inuse unless inuse_folded is
    False; fail when given) and its pprof's alloc and inuse."""
    check_folded(os.path.join(out, "memprof.alloc.folded"), alloc, what, comm)
    if inuse_folded:
        check_folded(os.path.join(out, "memprof.inuse.folded"), inuse, what,
                     comm)
    if fail is not None:
        check_folded(os.path.join(out, "memprof.fail.folded"), fail, what,
                     comm)
    check_pprof(os.path.join(out, "memprof.pb.gz"), alloc, inuse, what, comm)

def rt_driver_view(d):
    """What the interposer sees of prog_static_rt: the driver calls, under
    the runtime functions as native frames."""
    return {s[:-1] + ((s[-1], RT_DRIVER[s[-1]]) if s[-1] in RT_DRIVER
                      else (s[-1],)): v for s, v in d.items()}


PY_VERSIONS = ("3.10", "3.11", "3.12", "3.13")


def pythons():
    """One interpreter per supported CPython version found on this machine
    (the one running the tests, /usr/bin, pyenv's); prints why a version
    is skipped."""
    import glob
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    cands = [sys.executable, "/usr/bin/python3"]
    for v in PY_VERSIONS:
        cands.append("/usr/bin/python" + v)
        cands += sorted(glob.glob(os.path.join(root, "versions", v + ".*",
                                               "bin", "python" + v)))
    found, seen = {}, set()
    for py in cands:
        real = os.path.realpath(py)
        if not os.access(py, os.X_OK) or real in seen:
            continue
        seen.add(real)
        r = subprocess.run([py, "-c", "import sys, platform; print("
                            "'%d.%d' % sys.version_info[:2], "
                            "platform.python_implementation())"],
                           capture_output=True, text=True)
        ver, _, impl = r.stdout.strip().partition(" ")
        if impl != "CPython" or ver not in PY_VERSIONS:
            print("     %s is %s %s: no Python frames expected" %
                  (py, impl, ver))
            continue
        found.setdefault(ver, []).append(py)
    out = []
    for v in PY_VERSIONS:
        if v not in found:
            print("SKIP python%s: not installed here" % v)
        out += found.get(v, [])
    return out


def python_chains():
    import re
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "prog_memprof.py")
    lines = {}
    for no, text in enumerate(open(src), 1):
        m = re.search(r"# L:(\w+)", text)
        if m:
            lines[m.group(1)] = no
    f = "prog_memprof.py"
    main_chain = ["<module> (%s:%d)" % (f, lines["module"]),
                  "main (%s:%d)" % (f, lines["main_build"]),
                  "Model.build (%s:%d)" % (f, lines["build"]),
                  "alloc_weights (%s:%d)" % (f, lines["alloc_weights"]),
                  "alloc (%s:%d)" % (f, lines["alloc"])]
    thread_chain = ["worker (%s:%d)" % (f, lines["worker"]),
                    "kv_cache (%s:%d)" % (f, lines["kv_cache"]),
                    "alloc (%s:%d)" % (f, lines["alloc"])]
    return src, main_chain, thread_chain


def check_python_folded(out, tag):
    """The Python chains of prog_memprof.py, exact bytes, nothing else."""
    import re
    _, main_chain, thread_chain = python_chains()
    got = {}
    for line in open(out):
        stack, _, v = line.rstrip("\n").rpartition(" ")
        frames = stack.split(";")[1:]
        py = [x for x in frames if re.match(r".+ \([^()]+:\d+\)$", x)]
        if frames[-1] != "cuMemAlloc_v2":
            continue
        if py[:len(main_chain)] == main_chain:
            got["main"] = got.get("main", 0) + int(v)
        elif py[-len(thread_chain):] == thread_chain:
            got["thread"] = got.get("thread", 0) + int(v)
        else:
            got[line] = v
    check(got == {"main": 96 * MiB, "thread": 64 * MiB},
          "python %s: Python stacks with Class.method and lines, exact "
          "bytes (%s)" % (tag, got))


def run_preload_python(a, d, python):
    """--preload in a CPython process: the interposer walks the calling
    thread's frames in-process; the same stacks as through eBPF."""
    src = python_chains()[0]
    lib = os.path.join(os.path.dirname(os.path.dirname(a.prog)), "fake",
                       "cudamem", "libcuda.so.1")
    tag = "preload " + python
    go = os.path.join(d, "pypre.go")
    open(go, "w").close()
    out = os.path.join(d, "pypre.folded")
    r = subprocess.run([a.gpufl, "memprof", "--preload-lib", a.preload_lib,
                        "--output", out, "--preload", "--", python, src, lib,
                        go, go], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and r.stdout.strip() == "done",
          "python %s: ran (%d) %s" % (tag, r.returncode, r.stderr.strip()))
    check_python_folded(out, tag)


def run_ebpf_python(a, d, python):
    """CPython frames: function, Class.method and line numbers, merged
    with the native frames below the interpreter (libffi here)."""
    src = python_chains()[0]
    lib = os.path.join(os.path.dirname(os.path.dirname(a.prog)), "fake",
                       "cudamem", "libcuda.so.1")
    tag = python
    base = python.replace("/", "_")
    go, ex = os.path.join(d, base + ".go"), os.path.join(d, base + ".exit")
    p = subprocess.Popen([python, src, lib, go, ex], stdout=subprocess.PIPE,
                         text=True)
    out = os.path.join(d, base + ".folded")
    err = os.path.join(d, base + ".err")
    time.sleep(0.3)  # ctypes has loaded the library
    prof = subprocess.Popen([a.gpufl, "memprof", "--pid", str(p.pid),
                             "--output", out, "--verbose"],
                            stderr=open(err, "w"))
    check(wait_for(err, "probes"), "python %s: attached" % tag)
    check("Python frames on" in open(err).read(),
          "python %s: CPython recognised (%s)" % (tag, open(err).read()))
    open(go, "w").close()
    check(p.stdout.readline().strip() == "done", "python %s: ran" % tag)
    # Python frame names are read from the live process: stop the
    # profiler first (SIGTERM drains the ring), then let the target go
    time.sleep(0.3)
    prof.send_signal(signal.SIGTERM)
    check(prof.wait(timeout=30) == 0, "python %s: profiler exits 0" % tag)
    open(ex, "w").close()
    p.wait(timeout=30)
    check_python_folded(out, tag)


def run_ebpf_static_rt(a, d):
    """cudart linked statically (cudaMalloc* in the executable, not
    exported): runtime probes attached to the executable, the nested
    driver calls not counted again, the direct driver call counted."""
    prog = os.path.join(os.path.dirname(a.prog), "prog_static_rt")
    comm = "prog_static_rt"
    w = Prog(a, d, "static_rt", prog=prog)
    out = os.path.join(d, "static_rt")
    os.mkdir(out)
    err = os.path.join(d, "static_rt.err")
    prof = subprocess.Popen([a.gpufl, "memprof", "--pid", str(w.p.pid),
                             "--outdir", out, "--verbose"],
                            stderr=open(err, "w"))
    check(wait_for(err, "probes"), "static cudart: attached")
    text = open(err).read()
    check("runtime (static cudart) entry points in %s (pid" %
          os.path.realpath(prog) in text,
          "static cudart: runtime probes on the executable")
    w.start()
    line = w.p.stdout.readline()
    check(line.strip() == "done", "static cudart: workload ran: %r" % line)
    time.sleep(0.3)
    prof.send_signal(signal.SIGTERM)
    check(prof.wait(timeout=30) == 0, "static cudart: profiler exits 0")
    check(w.finish() == 0, "static cudart: workload exit status 0")
    check_outdir(out, "ebpf static cudart", comm, RT_ALLOC, RT_INUSE, RT_FAIL)


def run_preload_static_rt(a, d):
    """The interposer cannot see calls inside an executable: it counts the
    driver calls a static cudart makes, each once, under the runtime
    function's native frame."""
    prog = os.path.join(os.path.dirname(a.prog), "prog_static_rt")
    comm = "prog_static_rt"
    out = os.path.join(d, "pre_static_rt")
    os.mkdir(out)
    go = os.path.join(d, "pre_static_rt.go")
    open(go, "w").close()
    r = subprocess.run([a.gpufl, "memprof", "--preload-lib", a.preload_lib,
                        "--outdir", out, "--preload", "--", prog, go],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and r.stdout.strip() == "done",
          "preload static cudart: ran (%d) %s" % (r.returncode, r.stderr))
    check_outdir(out, "preload static cudart", comm, rt_driver_view(RT_ALLOC),
                 rt_driver_view(RT_INUSE), rt_driver_view(RT_FAIL),
                 inuse_folded=False)


# prog_dlopen_rt: the driver dlopen'd RTLD_LOCAL, entry points from dlsym
# on its handle (cuGetProcAddress_v2, and cuMemAlloc_v2 itself)
DL_ALLOC = {
    ("main", "gpa_alloc", "cuMemAlloc_v2"): (7 * MiB, 1),
    ("main", "sym_alloc", "cuMemAlloc_v2"): (9 * MiB, 1),
}
DL_INUSE = {("main", "sym_alloc", "cuMemAlloc_v2"): (9 * MiB, 1)}


def run_preload_dlopen_rt(a, d):
    """libcudart.so's way to the driver: dlsym on a handle bypasses
    LD_PRELOAD, and the driver is outside the global scope, so the
    interposer's dlsym hook must hand out wrappers that call the driver
    found through that handle."""
    prog = os.path.join(os.path.dirname(a.prog), "prog_dlopen_rt")
    comm = "prog_dlopen_rt"
    out = os.path.join(d, "pre_dlopen_rt")
    os.mkdir(out)
    r = subprocess.run([a.gpufl, "memprof", "--preload-lib", a.preload_lib,
                        "--outdir", out, "--preload", "--", prog],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and r.stdout.strip() == "done 0",
          "preload dlopen'd driver: ran (%d) %s %s" %
          (r.returncode, r.stdout.strip(), r.stderr.strip()))
    check_outdir(out, "preload dlopen'd driver (dlsym on its handle)", comm,
                 DL_ALLOC, DL_INUSE)
