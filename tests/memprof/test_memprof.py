#!/usr/bin/env python3
"""test_memprof.py - gpufl memprof end to end (docs/memprof.md).

Runs the real `gpufl memprof` over tests/memprof/prog_memprof.c (linked to
the fake libcuda.so.1 of fake_cudamem.c) and checks every number:

  preload  --preload -- CMD: folded alloc/inuse/fail line by line, pprof
           decoded by protoc against Debian's profile.proto, self vs total
           with and without the API leaf frame.  Runs everywhere.
  ebpf     uprobes: a process started before the profiler attaches
           (--pid, 3 threads, SIGTERM), then --all picking up a process
           whose library appears later and one started after the attach,
           both exiting mid-run; no BPF program or link left afterwards.
           Exits 77 with the reason when eBPF is not permitted.
  server   --preload --server: POST to a real gpufl-server, GET the
           memory views back and compare the numbers.

Both preload and ebpf also run prog_memprof.py under every CPython
3.10-3.13 found here (tests' python3, /usr/bin, pyenv; a missing version
prints SKIP and is not a failure) and check its Python stacks exactly, and
run prog_static_rt.c (cudart "linked statically") checking that each
allocation is counted once.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import memprof_common
from memprof_common import (MiB, Prog, check, check_folded, check_pprof,
                            merged, norm, read_folded, self_total, strip_api,
                            wait_for)
from memprof_pyrt import (pythons, run_ebpf_python, run_ebpf_static_rt,
                          run_preload_dlopen_rt, run_preload_python,
                          run_preload_static_rt)


ALLOC = {
    ("main", "load_model", "alloc_weights", "cuMemAlloc_v2"): (256 * MiB, 4),
    ("main", "init_cache", "cuMemAlloc_v2"): (512 * MiB, 1),
    ("worker", "step", "scratch", "cuMemAlloc_v2"): (3 * 5 * 8 * MiB, 15),
    ("main", "vmm_grow", "cuMemCreate"): (32 * MiB, 1),
    ("main", "vmm_temp", "cuMemCreate"): (16 * MiB, 1),
    ("main", "pitched", "cuMemAllocPitch_v2"): (1024 * 10, 1),
    ("main", "pinned", "cuMemAllocHost_v2"): (1 * MiB, 1),
    ("main", "managed", "cuMemAllocManaged"): (2 * MiB, 1),
    ("main", "async_alloc", "cuMemAllocAsync"): (4 * MiB, 1),
    ("main", "runtime_style", "cuMemAlloc_v2"): (3 * MiB, 1),
    # cuGetProcAddress_v2 from dlsym on the driver's handle, as
    # libcudart.so.13 does (--preload: the interposer's dlsym hook)
    ("main", "runtime_dlopen", "cuMemAlloc_v2"): (5 * MiB, 1),
}
EARLY = {("main", "early", "cuMemAlloc_v2"): (1 * MiB, 1)}
INUSE = {k: ALLOC[k] for k in ALLOC
         if k[1] in ("load_model", "init_cache", "vmm_grow", "pitched",
                     "managed")}
FAIL = {("main", "oom", "cuMemAlloc_v2"): (2048 * 1024 * MiB, 1)}


def bpf_ids(err_path):
    """The program and link ids a --verbose run printed."""
    progs, links = set(), set()
    for line in open(err_path):
        if "BPF program ids" in line:
            progs |= {int(x) for x in line.split("ids")[1].split()}
        if "BPF link ids" in line:
            links |= {int(x) for x in line.split("ids")[1].split()}
    return progs, links


def bpf_leftovers(err_path):
    """Those of this run's programs and links still in the kernel, after
    up to 3 s (the kernel frees them after an RCU grace period, not at
    close()), and uprobe_events lines, if tracefs is mounted."""
    progs, links = bpf_ids(err_path)
    check(len(progs) == 3, "ebpf: the run printed its 3 program ids")
    for _ in range(30):
        live_p, live_l, ev = bpf_now()
        left = (progs & live_p, links & live_l, ev)
        if not any(left):
            break
        time.sleep(0.1)
    return left


def bpf_now():
    def ids(kind):
        r = subprocess.run(["bpftool", "-j", kind, "show"],
                           capture_output=True, text=True)
        return {x["id"] for x in json.loads(r.stdout or "[]")}
    ev = ""
    for f in ("/sys/kernel/tracing/uprobe_events",
              "/sys/kernel/debug/tracing/uprobe_events"):
        try:
            ev += open(f).read()
        except OSError:
            pass
    return ids("prog"), ids("link"), [l for l in ev.splitlines()
                                      if "gpufl" in l or "cudamem" in l]


def run_preload(a, d):
    out = os.path.join(d, "pre", "views")  # memprof makes both levels
    t0 = time.time()
    go = os.path.join(d, "pre.go")
    open(go, "w").close()
    # a folder that cannot take the profile stops it before the run,
    # rather than losing the whole run at the end
    r = subprocess.run([a.gpufl, "memprof", "--preload-lib", a.preload_lib,
                        "--outdir", "/proc/self/gpufl-no/x", "--preload",
                        "--", a.prog, go], capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 2 and "--outdir /proc/self/gpufl-no/x" in r.stderr
          and "done" not in r.stdout,
          "preload: an unusable --outdir is refused before the command runs "
          "(%d, %s)" % (r.returncode, r.stderr.strip()))
    r = subprocess.run([a.gpufl, "memprof", "--preload-lib", a.preload_lib,
                        "--outdir", out, "--preload", "--", a.prog, go],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "preload: exit status 0 (%d) %s" %
          (r.returncode, r.stderr.strip()))
    check(r.stdout.strip() == "done 0", "preload: command output passed")
    print("     preload run: %.2f s" % (time.time() - t0))
    alloc = merged(ALLOC, EARLY)
    check_folded(os.path.join(out, "memprof.alloc.folded"), alloc, "preload")
    check_folded(os.path.join(out, "memprof.inuse.folded"), INUSE, "preload")
    check_folded(os.path.join(out, "memprof.fail.folded"), FAIL, "preload")
    check_pprof(os.path.join(out, "memprof.pb.gz"), alloc, INUSE, "preload")
    s, t = self_total(os.path.join(out, "memprof.alloc.folded"))
    check(s.get("alloc_weights", 0) == 0 and t["alloc_weights"] == 256 * MiB,
          "preload: API leaf frame: alloc_weights self 0, total 256 MiB")
    check(t["main"] == sum(b for k, (b, n) in alloc.items()
                           if k[0] == "main"),
          "preload: main total = every main-rooted stack")
    check(s["cuMemAlloc_v2"] == (256 + 512 + 120 + 1 + 3 + 5) * MiB,
          "preload: cuMemAlloc_v2 self = its 6 call sites, the ones through "
          "cuGetProcAddress and through dlsym on the driver's handle "
          "included")
    check(t.get("runtime_dlopen") == 5 * MiB,
          "preload: runtime_dlopen's 5 MiB seen (cuGetProcAddress_v2 looked "
          "up with dlsym on dlopen's handle, as libcudart.so does)")
    top = open(os.path.join(out, "memprof.top.txt")).read()
    check("init_cache" in top.splitlines()[2],
          "preload: top table starts with the biggest stack (init_cache)")

    # --no-api-frame: self moves to the caller; --counts; stdout output
    r = subprocess.run([a.gpufl, "memprof", "--preload-lib", a.preload_lib,
                        "--no-api-frame", "--counts", "--preload", "--",
                        a.prog, go], capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 0, "preload --no-api-frame --counts: status 0")
    f = os.path.join(d, "counts.folded")
    with open(f, "w") as fo:
        fo.write("".join(l for l in r.stdout.splitlines(True)
                         if not l.startswith("done")))
    got = read_folded(f)
    exp = {s[:-1]: n for s, (b, n) in alloc.items()}
    check(got == exp, "preload: --counts --no-api-frame per stack")
    # --pyroscope: folded /ingest requests, one per process and type
    got = pyroscope_capture(a, go)
    names = sorted(n.split("{")[0] for n, _ in got)
    check(names == ["gpufl-memprof.%s" % t for t in
                    ("alloc_objects", "alloc_space", "inuse_objects",
                     "inuse_space")],
          "pyroscope: the 4 sample types pushed (%s)" % names)
    for name, body in got:
        typ = name.split("{")[0].split(".")[1]
        lab = name.split("{")[1]
        vals = {}
        for line in body.splitlines():
            stack, _, v = line.rpartition(" ")
            k = norm(stack.split(";"))
            vals[k] = vals.get(k, 0) + int(v)
        want = alloc if typ.startswith("alloc") else INUSE
        exp = {k: (b if typ.endswith("space") else n)
               for k, (b, n) in want.items()}
        check(vals == exp and "comm=prog_memprof" in lab and "pid=" in lab,
              "pyroscope: %s values and labels" % typ)
    # a failing command: status passed through
    r = subprocess.run([a.gpufl, "memprof", "--preload-lib", a.preload_lib,
                        "--preload", "--", a.prog], capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 2, "preload: the command's exit status (2)")
    run_preload_static_rt(a, d)
    run_preload_dlopen_rt(a, d)
    # Python frames, walked in-process, for every CPython installed here
    for py in pythons():
        run_preload_python(a, d, py)


def pyroscope_capture(a, go):
    """Runs the workload with --pyroscope to a local catcher; [(name, body)]."""
    import http.server
    import threading
    import urllib.parse
    got = []

    class H(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            u = urllib.parse.urlparse(self.path)
            q = urllib.parse.parse_qs(u.query)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if u.path == "/ingest" and q.get("format") == ["folded"]:
                got.append((q["name"][0], body.decode()))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        r = subprocess.run([a.gpufl, "memprof", "--preload-lib", a.preload_lib,
                            "--pyroscope", "http://127.0.0.1:%d/" %
                            srv.server_address[1], "--interval", "600",
                            "--output", os.devnull, "--preload", "--", a.prog,
                            go], capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "pyroscope: pushes accepted (%s)" %
              r.stderr.strip())
    finally:
        srv.shutdown()
    return got


def run_ebpf(a, d):
    r = subprocess.run([a.gpufl, "memprof", "--check"], capture_output=True,
                       text=True)
    if r.returncode == 3:
        print("SKIP: eBPF not permitted here:", r.stderr.strip())
        sys.exit(77)
    check(r.returncode == 0, "ebpf: --check")

    # 1. a process running before the profiler attaches, --pid, SIGTERM
    A = Prog(a, d, "A")
    out = os.path.join(d, "ebpf1")
    os.mkdir(out)
    err = os.path.join(d, "ebpf1.err")
    t0 = time.time()
    prof = subprocess.Popen([a.gpufl, "memprof", "--pid", str(A.p.pid),
                             "--outdir", out, "--verbose"],
                            stderr=open(err, "w"))
    check(wait_for(err, "probes"), "ebpf: profiler attached to the running pid")
    print("     attach: %.2f s" % (time.time() - t0))
    A.start()
    A.wait_done()
    time.sleep(0.3)  # let the ring buffer drain
    prof.send_signal(signal.SIGTERM)
    check(prof.wait(timeout=30) == 0, "ebpf: profiler exits 0 on SIGTERM")
    left = bpf_leftovers(err)
    check(not any(left), "ebpf: no BPF program, link or uprobe of the run "
          "left after SIGTERM (%s)" % (left,))
    A.finish()
    print(open(err).read().strip())
    check_folded(os.path.join(out, "memprof.alloc.folded"), ALLOC, "ebpf --pid")
    check_folded(os.path.join(out, "memprof.inuse.folded"), INUSE, "ebpf --pid")
    check_folded(os.path.join(out, "memprof.fail.folded"), FAIL, "ebpf --pid")
    check_pprof(os.path.join(out, "memprof.pb.gz"), ALLOC, INUSE, "ebpf --pid")
    check("1 unmatched frees" in open(err).read(),
          "ebpf: the free of the block allocated before attach is unmatched")

    # 2. --all: B maps the library only after the profiler started (found
    # by the rescan), C starts after the attach.  --all sees every process
    # on any libcuda.so* - other build trees' tests too - so B and C run a
    # copy of the workload under a name of their own (their comm).
    comm = "pm%d" % (os.getpid() % 100000000)
    own = os.path.join(d, comm)
    shutil.copy(a.prog, own)
    out = os.path.join(d, "ebpf2")
    os.mkdir(out)
    err = os.path.join(d, "ebpf2.err")
    prof = subprocess.Popen([a.gpufl, "memprof", "--all", "--no-api-frame",
                             "--outdir", out, "--verbose"],
                            stderr=open(err, "w"))
    check(wait_for(err, "probes"), "ebpf --all: started")
    # B maps the library after the profiler started and exits mid-run; C
    # starts after the attach and lives on.  (The profiler reads a
    # process's maps when the scan finds it, else at its first event: C is
    # kept alive so a loaded machine cannot make it vanish before that.)
    B = Prog(a, d, "B", prog=own)
    check(wait_for(err, os.path.join(os.path.dirname(os.path.dirname(
        a.prog)), "fake", "cudamem", "libcuda.so.1")),
          "ebpf --all: library of a later process attached by the rescan")
    B.start()
    B.wait_done()
    C = Prog(a, d, "C", go_now=True, prog=own)
    C.wait_done()
    time.sleep(0.3)
    check(B.finish() == 0, "ebpf --all: B exited mid-run")
    time.sleep(0.5)
    prof.send_signal(signal.SIGINT)
    check(prof.wait(timeout=30) == 0, "ebpf --all: profiler exits 0 on SIGINT")
    check(C.finish() == 0, "ebpf --all: C ran")
    left = bpf_leftovers(err)
    check(not any(left), "ebpf --all: nothing left attached (%s)" % (left,))
    alloc = strip_api(merged(ALLOC, ALLOC, EARLY))
    check_folded(os.path.join(out, "memprof.alloc.folded"), alloc,
                 "ebpf --all", comm)
    check_folded(os.path.join(out, "memprof.inuse.folded"), strip_api(INUSE),
                 "ebpf --all (B exited: only C's memory in use)", comm)
    top = open(os.path.join(out, "memprof.top.txt")).read()
    check(sum(1 for l in top.splitlines() if comm in l and "(exited)" in l)
          == 1, "ebpf --all: the exited process marked")
    s, t = self_total(os.path.join(out, "memprof.alloc.folded"), comm)
    check(s["alloc_weights"] == 2 * 256 * MiB,
          "ebpf --all --no-api-frame: alloc_weights self 512 MiB")

    # 4. --cgroup: D in a fresh cgroup v2 directory, E outside; only D counts
    run_ebpf_cgroup(a, d)

    # 5. --dwarf: the workload built without frame pointers
    run_ebpf_dwarf(a, d)

    # 6. cudart linked statically: the runtime layer, nothing counted twice
    run_ebpf_static_rt(a, d)

    # 3. Python: every CPython 3.10-3.13 installed here (pyenv's, Debian's,
    # the one running the tests); a version not installed is skipped
    for py in pythons():
        run_ebpf_python(a, d, py)


def run_ebpf_dwarf(a, d):
    nofp = a.prog + "_nofp"
    for dwarf in (False, True):
        tag = "dwarf" if dwarf else "fp"
        P = Prog(a, d, "nofp_" + tag, prog=nofp)
        out = os.path.join(d, "ebpf5" + tag)
        os.mkdir(out)
        err = os.path.join(d, "ebpf5%s.err" % tag)
        prof = subprocess.Popen([a.gpufl, "memprof", "--pid", str(P.p.pid),
                                 "--outdir", out, "--verbose"] +
                                (["--dwarf"] if dwarf else []),
                                stderr=open(err, "w"))
        check(wait_for(err, "probes"), "ebpf %s: attached" % tag)
        P.start()
        P.wait_done()
        time.sleep(0.3)
        if dwarf:
            prof.send_signal(signal.SIGTERM)
            check(prof.wait(timeout=30) == 0, "ebpf %s: exits 0" % tag)
            check(P.finish() == 0, "ebpf %s: workload" % tag)
        else:
            # --pid ends by itself when its target exits
            check(P.finish() == 0, "ebpf %s: workload" % tag)
            check(prof.wait(timeout=30) == 0,
                  "ebpf --pid: the profiler ends with its target")
        got = read_folded(os.path.join(out, "memprof.alloc.folded"),
                          comm="prog_memprof_no")
        if dwarf:
            check(got == {s: b for s, (b, n) in ALLOC.items()},
                  "ebpf --dwarf: full stacks without frame pointers (%s)" %
                  got)
        else:
            check(("main", "load_model", "alloc_weights", "cuMemAlloc_v2")
                  not in got, "ebpf without --dwarf: frame-pointer stacks "
                  "of a no-frame-pointer build are cut (%s)" % list(got)[:2])


def cgroup2_root():
    for line in open("/proc/self/mounts"):
        f = line.split()
        if len(f) > 2 and f[2] == "cgroup2":
            return f[1]
    return None


def run_ebpf_cgroup(a, d):
    root = cgroup2_root()
    cg = root and os.path.join(root, "gpufl-memprof-test-%d" % os.getpid())
    try:
        os.mkdir(cg)
    except (OSError, TypeError) as e:
        print("     --cgroup not tested: no writable cgroup v2 here (%s)" % e)
        return
    try:
        D = Prog(a, d, "D")
        E = Prog(a, d, "E")
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(D.p.pid))
        out = os.path.join(d, "ebpf4")
        os.mkdir(out)
        err = os.path.join(d, "ebpf4.err")
        prof = subprocess.Popen([a.gpufl, "memprof", "--cgroup", cg,
                                 "--outdir", out, "--verbose"],
                                stderr=open(err, "w"))
        check(wait_for(err, "probes"), "ebpf --cgroup: attached")
        D.start()
        E.start()
        D.wait_done()
        E.wait_done()
        time.sleep(0.3)
        prof.send_signal(signal.SIGTERM)
        check(prof.wait(timeout=30) == 0, "ebpf --cgroup: exits 0")
        check(D.finish() == 0 and E.finish() == 0, "ebpf --cgroup: workloads")
        check_folded(os.path.join(out, "memprof.alloc.folded"), ALLOC,
                     "ebpf --cgroup (only the process inside)")
    finally:
        for _ in range(50):
            try:
                os.rmdir(cg)
                break
            except OSError:
                time.sleep(0.1)


def http(method, url, token, body=None):
    """(status, answer); a GET's answer checked against docs/api.md
    "Numbers" and its decimal strings read as ints (srvtest.api_json)."""
    req = urllib.request.Request(url, data=body, method=method)
    req.add_header("Authorization", "Bearer " + token)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            if method == "GET":
                sys.path.insert(0, os.path.join(os.path.dirname(__file__),
                                                "..", "server"))
                import srvtest  # noqa: E402
                return r.status, srvtest.api_json(r.read())
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def run_server(a, d):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "server"))
    import srvtest  # noqa: E402
    srvtest.SERVER = a.server
    srv = srvtest.Server(os.path.join(d, "srv"))
    try:
        base, tok = "http://127.0.0.1:%d" % srv.port, srv.token
        go, ex = os.path.join(d, "srv.go"), os.path.join(d, "srv.exit")
        # pushes every 50 ms: the early block alone, then the workload,
        # then in-use snapshots; the server must add the deltas up
        p = subprocess.Popen([a.gpufl, "memprof", "--preload-lib",
                              a.preload_lib, "--server", base, "--token", tok,
                              "--host", "memprof-test", "--interval", "0.05",
                              "--output", os.devnull, "--preload", "--",
                              a.prog, go, ex], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        time.sleep(0.3)
        open(go, "w").close()
        check(p.stdout.readline().strip() == "done 0", "server: workload ran")
        time.sleep(0.3)
        open(ex, "w").close()
        out, err = p.communicate(timeout=60)
        check(p.returncode == 0, "server: pushes accepted (%s)" % err.strip())
        st, lst = http("GET", base + "/api/v1/memory/profiles?host=memprof-test"
                       "&limit=1000", tok)
        n = len(lst.get("items", []))
        check(st == 200 and n >= 3, "server: %d profiles listed" % n)
        pid = lst["items"][0]["pid"]
        alloc = merged(ALLOC, EARLY)
        for view, want in (("alloc", alloc), ("inuse", INUSE),
                           ("fail", FAIL)):
            st, m = http("GET", base + "/api/v1/memory?host=memprof-test&pid="
                         "%d&view=%s" % (pid, view), tok)
            got = {}
            for s in m.get("stacks", []):
                k = norm(s["frames"])
                b, c = got.get(k, (0, 0))
                got[k] = (b + s["bytes"], c + s["count"])
            check(st == 200 and got == want,
                  "server: view %s bytes and counts per stack" % view)
            if got != want:
                print("     got", got)
            check(m.get("total_bytes") == sum(b for b, c in want.values()) and
                  m.get("total_count") == sum(c for b, c in want.values()) and
                  m.get("source") == "preload" and m.get("simulated") is False,
                  "server: view %s totals, source, simulated" % view)
        st, m = http("GET", base + "/api/v1/memory?host=memprof-test&limit=2",
                     tok)
        check(st == 200 and len(m["stacks"]) == 2 and m["truncated"] and
              m["stacks"][0]["bytes"] == 512 * MiB,
              "server: limit keeps the biggest stacks, truncated true")
        # a profile carrying its session id, read back per session
        sid = "0b9a3c3e-5d4e-4f7a-9a41-3c2b1a000001"
        body = {"v": 1, "host": "h2", "pid": 7, "comm": "x", "sid": sid,
                "start": 1, "end": 2, "source": "ebpf", "simulated": False,
                "stacks": [{"frames": ["main", "f", "cuMemAlloc_v2"],
                            "alloc_bytes": 100, "alloc_count": 2,
                            "inuse_bytes": 50, "inuse_count": 1}]}
        st, r = http("POST", base + "/api/v1/memprof", tok,
                     json.dumps(body).encode())
        check(st == 200 and r["stacks"] == 1 and r["sid"] == sid,
              "server: POST answer %s %s" % (st, r))
        st, m = http("GET", base + "/api/v1/sessions/%s/memory?view=inuse" %
                     sid, tok)
        check(st == 200 and m["stacks"] == [{"frames": ["main", "f",
                                                        "cuMemAlloc_v2"],
                                             "bytes": 50, "count": 1}],
              "server: /sessions/{sid}/memory")
        st, m = http("GET", base + "/api/v1/sessions/%s/memory" %
                     sid.replace("1", "2"), tok)
        check(st == 404, "server: unknown session 404 (%s)" % st)
        for bad, code in (({"v": 2}, 400), (dict(body, source="x"), 400),
                          (dict(body, stacks=[{"frames": []}]), 400),
                          (dict(body, stacks=[{"frames": ["a"] * 300}]), 413)):
            st, r = http("POST", base + "/api/v1/memprof", tok,
                         json.dumps(bad).encode())
            check(st == code, "server: bad profile -> %d (%s %s)" %
                  (code, st, r.get("error")))
        st, r = http("GET", base + "/api/v1/memory?view=nope", tok)
        check(st == 400, "server: bad view 400")
    finally:
        srv.stop()


def run_tls(a, d):
    """Client TLS (issue 17): memprof --server to gpufl-server over https
    (--tls-cert/--tls-key from a CA made here): pushes verified with
    --ca-file are stored; with the system's CAs or another CA the push is
    refused, said with the reason, nothing stored and the exit code 1; a
    token over plain http to another machine is warned about at start."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "server"))
    import srvtest  # noqa: E402
    import ssl
    srvtest.SERVER = a.server
    pki = srvtest.make_pki(os.path.join(d, "pki"))
    if not pki:
        print("SKIP: openssl is not installed")
        sys.exit(77)
    srv = srvtest.Server(os.path.join(d, "srv"),
                         args=["--tls-cert", pki["cert"], "--tls-key",
                               pki["key"]])
    ctx = ssl.create_default_context(cafile=pki["ca"])
    base, tok = "https://127.0.0.1:%d" % srv.port, srv.token

    def profiles(host):
        req = urllib.request.Request(
            base + "/api/v1/memory/profiles?host=%s&limit=1000" % host)
        req.add_header("Authorization", "Bearer " + tok)
        with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
            return json.loads(r.read())["items"]

    def push(host, ca, server=base):
        go, ex = os.path.join(d, host + ".go"), os.path.join(d, host + ".exit")
        cmd = [a.gpufl, "memprof", "--preload-lib", a.preload_lib,
               "--server", server, "--token", tok, "--host", host,
               "--interval", "600", "--output", os.devnull]
        if ca:
            cmd += ["--ca-file", ca]
        p = subprocess.Popen(cmd + ["--preload", "--", a.prog, go, ex],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        open(go, "w").close()
        check(p.stdout.readline().strip() == "done 0", "tls: workload ran")
        open(ex, "w").close()
        out, err = p.communicate(timeout=60)
        return p.returncode, err
    try:
        for host, ca in (("tls-system", None),
                         ("tls-other", pki["other_ca"])):
            rc, err = push(host, ca)
            check(rc == 1, "tls: %s: exit %d (%s)" % (host, rc, err.strip()))
            check("certificate was not accepted" in err and
                  "push of pid" in err, "tls: %s: no reason: %s" %
                  (host, err.strip()))
            check(profiles(host) == [], "tls: %s: a profile was stored" % host)
            check("plain http" not in err, "tls: %s: warned" % host)
        rc, err = push("tls-good", pki["ca"])
        check(rc == 0, "tls: --ca-file: exit %d (%s)" % (rc, err.strip()))
        check(len(profiles("tls-good")) >= 1, "tls: --ca-file: not stored")
        rc, err = push("tls-plain", None, "http://gpufl-test.invalid:9")
        check(rc == 1 and "--server http://gpufl-test.invalid:9 is plain "
              "http to another machine" in err,
              "tls: no warning for plain http (%s)" % err.strip())
    finally:
        srv.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("preload", "ebpf", "server", "tls"))
    ap.add_argument("--gpufl", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--preload-lib", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--server")
    a = ap.parse_args()
    os.makedirs(a.tmp, exist_ok=True)
    if a.mode != "ebpf" and not shutil.which("protoc"):
        print("SKIP: protoc not installed (scripts/deps.sh test)")
        sys.exit(77)
    d = tempfile.mkdtemp(prefix="memprof-", dir=a.tmp)
    try:
        {"preload": run_preload, "ebpf": run_ebpf, "server": run_server,
         "tls": run_tls}[a.mode](a, d)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print("%s: %d failures" % (a.mode, memprof_common.failures))
    sys.exit(1 if memprof_common.failures else 0)


if __name__ == "__main__":
    main()
