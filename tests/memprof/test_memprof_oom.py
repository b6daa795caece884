#!/usr/bin/env python3
"""test_memprof_oom.py - `gpufl memprof --oom` end to end (docs/memprof.md
"OOM forensics").

Runs the real profiler over prog_oom.py: a model's tensors from a stand-in
for PyTorch's caching allocator (fake_c10.cpp, whose frames carry the
c10::cuda::CUDACachingAllocator names), a buffer taken from the driver
directly, a native call chain deeper than the 64 frames kept, then a
4 GiB request that the fake driver's 8 GiB device cannot hold.  The
allocator releases its cached segments and retries; that fails too.  The
OOM report must name the stack that asked (Python frames and the
allocator's) and every stack holding device memory, with exact bytes.

  preload  --preload: the device's free/total from the driver
           (cuMemGetInfo_v2, cuCtxGetDevice of the fake: device 1)
  ebpf     --pid: the device's figures from NVML (the fake NVML lists the
           workload's pid on GPU 1).  Exits 77 with the reason when eBPF
           is not permitted.
  server   --preload --server: the report POSTed, stored, listed and read
           back from a real gpufl-server (SQLite; PostgreSQL with
           GPUFL_TEST_PG_URI_FILE), and bad reports refused.
  tls      --server https://: pushed with --ca-file, refused with the
           system's CAs (said, exit 1, the report kept on disk).
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import memprof_common
from memprof_common import MiB, check, wait_for

GiB = 1 << 30
TOTAL = 8 * GiB
NVML_USED, NVML_RESERVED, NVML_PROC = 5 * GiB + 300 * MiB, 256 * MiB, 5 * GiB
HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "prog_oom.py")
CA = "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::"
NATIVE = {
    "torch": ["fake_torch_empty", CA + "malloc", CA + "alloc_block",
              "cuMemAlloc_v2"],
    "nccl": ["fake_nccl_init", "cuMemAlloc_v2"],
    "deep": ["fake_deep"] * 64 + ["cuMemAlloc_v2"],
}


def lines():
    out = {}
    for no, text in enumerate(open(SRC), 1):
        m = re.search(r"# L:(\w+)", text)
        if m:
            out[m.group(1)] = no
    return out


def chains():
    """The expected stacks: Python frames root first, then the native
    frames from the workload's library on (those between - ctypes, libffi
    - differ between the unwinders and are not compared)."""
    L = lines()
    f = "prog_oom.py"

    def py(*names):
        return tuple("%s (%s:%d)" % (n.split("@")[0], f, L[n.split("@")[1]])
                     for n in names)
    mod = "<module>@module"
    return {
        "build": py(mod, "main@main_build", "Model.build@build",
                    "empty@empty") + tuple(NATIVE["torch"]),
        "acts": py(mod, "main@main_acts", "activations@activations",
                   "empty@empty") + tuple(NATIVE["torch"]),
        "nccl": py(mod, "main@main_nccl") + tuple(NATIVE["nccl"]),
        "deep": py(mod, "main@main_deep") + tuple(NATIVE["deep"]),
        "oom": py(mod, "main@main_step", "step@step", "attention@attention",
                  "empty@empty") + tuple(NATIVE["torch"]),
    }


def norm(frames):
    """Python frames, then the frames from the first of the workload's
    own native functions on."""
    py = [x for x in frames if re.match(r".+ \([^()]+:\d+\)$", x)]
    for i, x in enumerate(frames):
        if x in ("fake_torch_empty", "fake_nccl_init", "fake_deep"):
            return tuple(py) + tuple(frames[i:])
    return tuple(py) + ("?",) + tuple(frames[-1:])


def is_dec(v):
    return isinstance(v, str) and v.isdigit()


def check_numbers(rep, tag):
    """docs/api.md "Numbers": bytes and ns are decimal strings."""
    bad = []

    def walk(x, path):
        if isinstance(x, dict):
            for k, v in x.items():
                if (k.endswith("bytes") or k in ("ts", "window_ns",
                                                 "settle_ns")):
                    if v is not None and not is_dec(v):
                        bad.append(path + "." + k)
                walk(v, path + "." + k)
        elif isinstance(x, list):
            for i, v in enumerate(x):
                walk(v, "%s[%d]" % (path, i))
    walk(rep, "")
    check(not bad, "%s: bytes and ns as decimal strings (%s)" % (tag, bad[:3]))


def check_report(rep, tag, device):
    """Everything an OOM report of prog_oom.py says, exactly."""
    C = chains()
    stacks = [tuple(s) for s in rep["stacks"]]
    ns = [norm(s) for s in stacks]
    req = rep["request"]
    check(req["api"] == "cuMemAlloc_v2" and req["bytes"] == str(4 * GiB) and
          req["rc"] == 2, "%s: the request: cuMemAlloc_v2 of 4 GiB, "
          "CUDA_ERROR_OUT_OF_MEMORY (%s)" % (tag, req))
    check(ns[req["stack"]] == C["oom"],
          "%s: the stack that asked, with its Python frames and the "
          "allocator's (%s)" % (tag, " ; ".join(ns[req["stack"]])))
    want_live = {C["build"]: (3 * GiB, 3), C["acts"]: (2 * GiB, 4),
                 C["nccl"]: (256 * MiB, 1), C["deep"]: (2 * MiB, 1)}
    got_live = {}
    for s in rep["live"]["stacks"]:
        k = ns[s["stack"]]
        b, n = got_live.get(k, (0, 0))
        got_live[k] = (b + int(s["bytes"]), n + s["count"])
    check(got_live == want_live, "%s: the stacks that hold the device "
          "memory, exact bytes and blocks" % tag)
    if got_live != want_live:
        for k in set(got_live) | set(want_live):
            if got_live.get(k) != want_live.get(k):
                print("     %s got %s want %s" % (" ; ".join(k),
                                                  got_live.get(k),
                                                  want_live.get(k)))
    live_b = sum(b for b, n in want_live.values())
    check(rep["live"]["bytes"] == str(live_b) and rep["live"]["count"] == 9
          and not rep["live"]["truncated"] and
          rep["live"]["host_bytes"] == "0" and
          rep["live"]["untracked_count"] == 0,
          "%s: live totals %s B in %d blocks" % (tag, rep["live"]["bytes"],
                                                  rep["live"]["count"]))
    deep = [s for s in stacks if norm(s) == C["deep"]]
    check(len(deep) == 1 and deep[0].count("fake_deep") == 64,
          "%s: a stack of 64 native frames under Python frames kept whole" %
          tag)
    ev = [(e["op"], int(e["bytes"]), ns[e["stack"]])
          for e in rep["recent"]["events"]]
    want_ev = ([("alloc", GiB, C["build"])] * 3 +
               [("alloc", 512 * MiB, C["acts"])] * 4 +
               [("alloc", 256 * MiB, C["nccl"]), ("alloc", 2 * MiB, C["deep"]),
                ("fail", 4 * GiB, C["oom"])])
    ts = [int(e["ts"]) for e in rep["recent"]["events"]]
    check(ev == want_ev and ts == sorted(ts) and ts[-1] == int(rep["ts"]) and
          not rep["recent"]["cut"] and
          rep["recent"]["window_ns"] == "10000000000",
          "%s: the calls before the OOM, in order, the OOM last (%s)" %
          (tag, [(o, b) for o, b, _ in ev]))
    fr = rep["fragmentation"]
    check(fr["allocator"] == "pytorch" and
          fr["reserved_bytes"] == str(5 * GiB) and
          fr["other_bytes"] == str(258 * MiB) and
          fr["released_bytes"] == str(GiB) and fr["released_count"] == 2 and
          fr["released_allocator_bytes"] == str(GiB) and
          fr["held_bytes"] == str(4 * GiB) and
          [r["ok"] for r in fr["retries"]] == [False] and
          fr["more_ooms"] == 0,
          "%s: caching allocator: 5 GiB reserved, 1 GiB of cached segments "
          "released after the OOM, the retry failed (%s)" % (tag, fr))
    dev = rep["device"]
    check(dev == dict(dev, **device) and is_dec(dev["ts"]) and
          dev["why"] is None,
          "%s: the device's memory at the OOM (%s)" % (tag, dev))
    check(rep["v"] == 1 and rep["seq"] == 1 and rep["comm"].startswith("py"),
          "%s: v, seq, comm" % tag)
    check_numbers(rep, tag)


def reports(d):
    return sorted(glob.glob(os.path.join(d, "oom-*.json")))


def check_files(d, tag, pid, device):
    js = reports(d)
    check(len(js) == 1 and os.path.basename(js[0]) == "oom-%d-1.json" % pid,
          "%s: one report, oom-PID-1.json (%s)" % (tag, js))
    if not js:
        return None
    rep = json.load(open(js[0]))
    check(rep["pid"] == pid, "%s: the report's pid" % tag)
    check_report(rep, tag, device)
    # the live set as folded stacks: the report's live stacks, exact bytes
    folded = {}
    for line in open(js[0][:-5] + ".folded"):
        stack, _, v = line.rstrip("\n").rpartition(" ")
        k = norm(stack.split(";")[1:])
        folded[k] = folded.get(k, 0) + int(v)
    ns = [norm(s) for s in rep["stacks"]]
    want = {}
    for s in rep["live"]["stacks"]:
        want[ns[s["stack"]]] = want.get(ns[s["stack"]], 0) + int(s["bytes"])
    check(folded == want, "%s: the .folded live set = the report's" % tag)
    return rep


def env_fake(**kw):
    e = dict(os.environ, FAKE_CUDA_MEM_TOTAL=str(TOTAL), FAKE_CUDA_DEVICE="1")
    e.update(kw)
    return e


def run_preload(a, d):
    go = os.path.join(d, "go")
    open(go, "w").close()
    py = sys.executable
    # an --oom-dir that cannot be written stops the run before it starts
    r = subprocess.run([a.gpufl, "memprof", "--preload-lib", a.preload_lib,
                        "--oom", "--oom-dir", "/proc/self/gpufl-no/x",
                        "--preload", "--", py, SRC, a.c10, go, go],
                       capture_output=True, text=True, timeout=60,
                       env=env_fake())
    check(r.returncode == 2 and "--oom-dir /proc/self/gpufl-no/x" in
          r.stderr and "done" not in r.stdout,
          "preload: an unusable --oom-dir is refused before the command runs "
          "(%d, %s)" % (r.returncode, r.stderr.strip()))
    # without --oom: no report, the command's own error unchanged
    plain = os.path.join(d, "plain")
    os.mkdir(plain)
    r = subprocess.run([a.gpufl, "memprof", "--preload-lib", a.preload_lib,
                        "--output", os.devnull, "--preload", "--", py, SRC,
                        a.c10, go, go], capture_output=True, text=True,
                       timeout=60, env=env_fake(), cwd=plain)
    check(r.returncode == 0 and "oom CUDA out of memory" in r.stdout and
          not os.listdir(plain),
          "preload without --oom: the workload's OOM, no report written")

    out = os.path.join(d, "rep")
    t0 = time.time()
    p = subprocess.Popen([a.gpufl, "memprof", "--preload-lib", a.preload_lib,
                          "--oom", "--oom-dir", out, "--oom-settle", "0.3",
                          "--output", os.devnull, "--preload", "--", py, SRC,
                          a.c10, go, go], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env_fake())
    o, e = p.communicate(timeout=60)
    print("     preload run: %.2f s" % (time.time() - t0))
    check(p.returncode == 0 and "done" in o, "preload: ran (%d) %s" %
          (p.returncode, e.strip()))
    m = re.search(r"OOM in pid (\d+) \((\S+)\): cuMemAlloc_v2 of 4294967296 "
                  r"bytes failed; report (\S+),", e)
    check(m is not None, "preload: the OOM said on stderr (%s)" % e.strip())
    if not m:
        return
    check_files(out, "preload", int(m.group(1)),
                {"source": "driver", "index": 1,
                 "free_bytes": str(TOTAL - 5 * GiB - 258 * MiB),
                 "total_bytes": str(TOTAL), "process_bytes": None})


def nvml_script(d, pid):
    path = os.path.join(d, "nvml.script")
    with open(path, "w") as f:
        f.write("global count=2\n")
        f.write("dev 0 mem_total=%d mem_used=0 mem_reserved=0 procs=\n" %
                (80 * GiB))
        f.write("dev 1 mem_total=%d mem_used=%d mem_reserved=%d "
                "procs=%d:%d\n" % (TOTAL, NVML_USED, NVML_RESERVED, pid,
                                   NVML_PROC))
    return path


def run_ebpf(a, d):
    r = subprocess.run([a.gpufl, "memprof", "--check"], capture_output=True,
                       text=True)
    if r.returncode == 3:
        print("SKIP: eBPF not permitted here:", r.stderr.strip())
        sys.exit(77)
    check(r.returncode == 0, "ebpf: --check")
    go, ex = os.path.join(d, "e.go"), os.path.join(d, "e.exit")
    w = subprocess.Popen([sys.executable, SRC, a.c10, go, ex],
                         stdout=subprocess.PIPE, text=True, env=env_fake())
    out = os.path.join(d, "erep")
    err = os.path.join(d, "ebpf.err")
    time.sleep(0.3)  # ctypes has loaded the libraries
    env = dict(os.environ, FAKE_NVML_SCRIPT=nvml_script(d, w.pid))
    prof = subprocess.Popen([a.gpufl, "memprof", "--pid", str(w.pid),
                             "--oom", "--oom-dir", out, "--oom-settle", "0.3",
                             "--nvml-lib", a.nvml_lib, "--output",
                             os.devnull, "--verbose"],
                            stderr=open(err, "w"), env=env)
    try:
        check(wait_for(err, "probes") and wait_for(err, "Python frames on"),
              "ebpf: attached, CPython recognised")
        open(go, "w").close()
        line = w.stdout.readline()
        check(line.startswith("oom CUDA out of memory"),
              "ebpf: the workload's OOM (%r)" % line)
        check(w.stdout.readline().strip() == "done", "ebpf: workload ran")
        # the report is written by the running profiler once it settled
        check(wait_for(err, "OOM in pid %d" % w.pid, timeout=20),
              "ebpf: report written while the process lives")
    finally:
        prof.send_signal(signal.SIGTERM)
        rc = prof.wait(timeout=30)
        open(ex, "w").close()
        w.wait(timeout=30)
    check(rc == 0, "ebpf: profiler exits 0 (%s)" % open(err).read().strip())
    check_files(out, "ebpf", w.pid,
                {"source": "nvml", "index": 1,
                 "free_bytes": str(TOTAL - NVML_USED - NVML_RESERVED),
                 "total_bytes": str(TOTAL),
                 "process_bytes": str(NVML_PROC)})


def http(method, url, token, body=None, ctype="application/json",
         ctx=None):
    """(status, parsed answer, raw text); ctx: the SSL context of an https
    url."""
    import urllib.error
    import urllib.request
    req = urllib.request.Request(url, data=body, method=method)
    req.add_header("Authorization", "Bearer " + token)
    if body is not None:
        req.add_header("Content-Type", ctype)
    try:
        with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
            raw = r.read()
            return r.status, json.loads(raw), raw
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, json.loads(raw or b"null"), raw


def run_server(a, d):
    sys.path.insert(0, os.path.join(HERE, "..", "server"))
    import srvtest  # noqa: E402
    srvtest.SERVER = a.server
    srv = srvtest.Server(os.path.join(d, "srv"))
    try:
        base, tok = "http://127.0.0.1:%d" % srv.port, srv.token
        go = os.path.join(d, "go")
        open(go, "w").close()
        out = os.path.join(d, "rep")
        r = subprocess.run([a.gpufl, "memprof", "--preload-lib",
                            a.preload_lib, "--oom", "--oom-dir", out,
                            "--oom-settle", "0.3", "--server", base,
                            "--token", tok, "--host", "oom-test",
                            "--interval", "600", "--output", os.devnull,
                            "--preload", "--", sys.executable, SRC, a.c10,
                            go, go], capture_output=True, text=True,
                           timeout=60, env=env_fake())
        check(r.returncode == 0 and "push of" not in r.stderr,
              "server: report pushed (%d) %s" % (r.returncode,
                                                 r.stderr.strip()))
        files = reports(out)
        check(len(files) == 1, "server: one report on disk too")
        mine = json.load(open(files[0])) if files else {}
        st, lst, raw = http("GET", base + "/api/v1/memory/ooms?host=oom-test",
                            tok)
        srvtest.api_json(raw)  # docs/api.md "Numbers", or AssertionError
        items = lst.get("items", []) if st == 200 else []
        check(st == 200 and len(items) == 1 and lst["next"] is None,
              "server: one OOM report listed (%s %s)" % (st, lst))
        if not items:
            return
        it = items[0]
        want = {"host": "oom-test", "pid": mine.get("pid"),
                "comm": mine.get("comm"), "sid": None, "ts": mine.get("ts"),
                "api": "cuMemAlloc_v2", "bytes": str(4 * GiB), "device": 1,
                "device_source": "driver",
                "free_bytes": str(TOTAL - 5 * GiB - 258 * MiB),
                "total_bytes": str(TOTAL),
                "live_bytes": str(5 * GiB + 258 * MiB),
                "source": "preload", "simulated": False}
        check(it == dict(want, id=it["id"]), "server: the list's columns "
              "(%s)" % it)
        st, one, raw = http("GET", base + "/api/v1/memory/ooms/%d" % it["id"],
                            tok)
        srvtest.api_json(raw)
        rep = one.get("report", {})
        check(st == 200 and one["id"] == it["id"] and one["sid"] is None and
              is_dec(one["received"]) and rep == dict(mine, sid=None),
              "server: the report read back is the one written")
        check_report(rep, "server", {"source": "driver", "index": 1})
        # filters and paging
        for q, n in (("pid=%d" % it["pid"], 1), ("pid=1", 0),
                     ("host=other", 0), ("from=%s" % rep["ts"], 1),
                     ("to=%s" % rep["ts"], 0)):
            st, l2, _ = http("GET", base + "/api/v1/memory/ooms?" + q, tok)
            check(st == 200 and len(l2["items"]) == n,
                  "server: ?%s lists %d" % (q, n))
        # a second report (the same, as numbers and without the optional
        # members) links to a session by its sid and pages
        sid = "0b9a3c3e-5d4e-4f7a-9a41-3c2b1a00f00d"
        small = {"v": 1, "host": "h2", "pid": 7, "sid": sid, "ts": 5,
                 "source": "ebpf", "stacks": [["main", "cuMemAlloc_v2"]],
                 "request": {"api": "cuMemAlloc_v2", "bytes": 100, "rc": 2,
                             "stack": 0},
                 "device": {"source": "unknown", "why": "no NVML"},
                 "live": {"bytes": 50, "count": 1,
                          "stacks": [{"stack": 0, "bytes": 50, "count": 1}]},
                 "recent": {"window_ns": 10, "events": [
                     {"ts": 5, "op": "fail", "api": "cuMemAlloc_v2",
                      "bytes": 100, "stack": 0}]}}
        st, res, _ = http("POST", base + "/api/v1/memprof/oom", tok,
                          json.dumps(small).encode())
        check(st == 200 and res["sid"] == sid and res["report"] > it["id"],
              "server: POST answer %s %s" % (st, res))
        st, l2, _ = http("GET", base + "/api/v1/memory/ooms?limit=1", tok)
        st2, l3, _ = http("GET", base + "/api/v1/memory/ooms?limit=1&cursor=" +
                          str(l2.get("next")), tok)
        check(st == 200 and st2 == 200 and
              [x["id"] for x in l2["items"] + l3["items"]] ==
              [res.get("report"), it["id"]] and l3["next"] is None,
              "server: newest first, one page at a time")
        st, one, raw = http("GET", base + "/api/v1/memory/ooms/%d" %
                            res.get("report", 0), tok)
        srvtest.api_json(raw)
        r2 = one.get("report", {})
        check(st == 200 and one["sid"] == sid and r2["ts"] == "5" and
              r2["request"]["bytes"] == "100" and
              r2["device"] == {"source": "unknown", "index": None,
                               "free_bytes": None, "total_bytes": None,
                               "process_bytes": None, "ts": None,
                               "why": "no NVML"} and
              r2["fragmentation"] is None and r2["live"]["host_bytes"] == "0",
              "server: numbers rewritten as decimal strings, absent members "
              "as null or 0 (%s)" % r2)
        st, l4, _ = http("GET", base + "/api/v1/memory/ooms?sid=" + sid, tok)
        check(st == 200 and [x["id"] for x in l4["items"]] ==
              [res.get("report")], "server: ?sid= selects by session")
        # refused: each names what is wrong; nothing stored
        ev = small["recent"]["events"][0]
        for bad, code, what in (
                (dict(small, v=2), 400, '"v" must be 1'),
                (dict(small, request=dict(small["request"], stack=1)), 400,
                 "request.stack"),
                (dict(small, request=dict(small["request"], bytes=-1)), 400,
                 "request.bytes"),
                (dict(small, request=dict(small["request"], bytes="1e3")), 400,
                 "request.bytes"),
                (dict(small, ts=2 ** 63), 400, "ts must"),
                (dict(small, device={"source": "gpu"}), 400, "device.source"),
                (dict(small, recent=dict(small["recent"], events=[
                    dict(ev, op="grow")])), 400, "recent.events[0].op"),
                (dict(small, recent=dict(small["recent"], events=[ev] *
                                         50001)), 413, "recent.events"),
                (dict(small, stacks=[["f"] * 257]), 413, "stacks[0]"),
                (dict(small, stacks=[]), 400, "stacks"),
                (dict(small, sid="NOT-A-UUID"), 400, "sid"),
                ({"v": 1}, 400, "stacks")):
            st, res, _ = http("POST", base + "/api/v1/memprof/oom", tok,
                              json.dumps(bad).encode())
            check(st == code and what in (res or {}).get("error", ""),
                  "server: bad report -> %d naming %s (%s %s)" %
                  (code, what, st, (res or {}).get("error")))
        st, l5, _ = http("GET", base + "/api/v1/memory/ooms", tok)
        check(len(l5["items"]) == 2, "server: nothing stored from them")
        # retention: OOM reports go with memory profiles, by their ts
        st, res, _ = http("POST", base + "/api/v1/admin/retention?"
                          "memprof_max_age=3600", srvtest.ADMIN)
        st2, l6, _ = http("GET", base + "/api/v1/memory/ooms", tok)
        check(st == 200 and res == {"pruned": 0, "memprofs": 1} and
              [x["id"] for x in l6["items"]] == [it["id"]],
              "server: retention removed the report from 1970, kept the "
              "new one (%s %s)" % (st, res))
        st, res, _ = http("POST", base + "/api/v1/memprof/oom", tok, b"{}",
                          "text/plain")
        check(st == 415, "server: wrong Content-Type 415")
        st, res, _ = http("GET", base + "/api/v1/memory/ooms/999999", tok)
        check(st == 404, "server: unknown report 404 (%s)" % st)
        st, res, _ = http("GET", base + "/api/v1/memory/ooms/x1", tok)
        check(st == 404, "server: a malformed id is 404 (%s)" % st)
        st, res, _ = http("GET", base + "/api/v1/memprof/oom", tok)
        check(st == 405, "server: GET on the POST endpoint 405 (%s)" % st)
        # a rewritten text longer than the room the server first gives it
        # (the body's length + 4 KiB, rounded up to a power of two): numbers
        # become strings and tid is added, about 1.2 times the body, whose
        # length is put just below 2 MiB - 4 KiB: stored whole (the second
        # pass of jw_gbuf_run)
        n = 33000
        while True:
            many = dict(small, recent=dict(small["recent"], events=[
                dict(ev, ts=i, bytes=1) for i in range(n)]))
            body = json.dumps(many, separators=(",", ":")).encode()
            if len(body) <= (2 << 20) - 8192:
                break
            n -= 200
        st, res, _ = http("POST", base + "/api/v1/memprof/oom", tok, body)
        st2, one, raw = http("GET", base + "/api/v1/memory/ooms/%s" %
                             (res or {}).get("report"), tok)
        evs = one.get("report", {}).get("recent", {}).get("events", []) \
            if st2 == 200 else []
        check(st == 200 and len(evs) == n and
              len(raw) > (2 << 20) and
              evs[-1] == {"ts": str(n - 1), "tid": 0, "op": "fail",
                          "api": "cuMemAlloc_v2", "bytes": "1", "stack": 0},
              "server: a report rewritten longer than its body stored whole "
              "(%s %s, %d events)" % (st, res, len(evs)))
        # past the 12 MiB a stored report may take: 413, nothing stored
        huge = dict(small, stacks=[["f" * 1000] * 256] * 52)
        st, res, _ = http("POST", base + "/api/v1/memprof/oom", tok,
                          json.dumps(huge).encode())
        check(st == 413 and "larger than 12 MiB" in (res or {}).get("error",
                                                                     ""),
              "server: a report over 12 MiB -> 413 (%s %s)" % (st, res))
    finally:
        srv.stop()


def run_tls(a, d):
    """The report pushed to an https gpufl-server (--tls-cert/--tls-key
    from a CA made here) the way profiles are: verified with --ca-file it
    is stored; with the system's CAs the push is refused, said with the
    reason, nothing stored, the exit code 1 and the report still on
    disk."""
    sys.path.insert(0, os.path.join(HERE, "..", "server"))
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
    go = os.path.join(d, "go")
    open(go, "w").close()

    def run(host, ca):
        out = os.path.join(d, host)
        cmd = [a.gpufl, "memprof", "--preload-lib", a.preload_lib, "--oom",
               "--oom-dir", out, "--oom-settle", "0.3", "--server", base,
               "--token", tok, "--host", host, "--interval", "600",
               "--output", os.devnull]
        if ca:
            cmd += ["--ca-file", ca]
        r = subprocess.run(cmd + ["--preload", "--", sys.executable, SRC,
                                  a.c10, go, go], capture_output=True,
                           text=True, timeout=60, env=env_fake())
        st, lst, _ = http("GET", base + "/api/v1/memory/ooms?host=" + host,
                          tok, ctx=ctx)
        return r, reports(out), lst.get("items", []) if st == 200 else None

    try:
        r, files, items = run("oom-tls-system", None)
        check(r.returncode == 1 and "push of the OOM report of pid" in
              r.stderr and "certificate was not accepted" in r.stderr,
              "tls: system CAs: refused with the reason (%d, %s)" %
              (r.returncode, r.stderr.strip()))
        check(len(files) == 1 and items == [],
              "tls: system CAs: report on disk, nothing stored (%s %s)" %
              (files, items))
        r, files, items = run("oom-tls-good", pki["ca"])
        check(r.returncode == 0 and "push of" not in r.stderr,
              "tls: --ca-file: pushed (%d, %s)" % (r.returncode,
                                                    r.stderr.strip()))
        mine = json.load(open(files[0])) if len(files) == 1 else {}
        check(items is not None and len(items) == 1 and
              items[0]["ts"] == mine.get("ts") and
              items[0]["pid"] == mine.get("pid"),
              "tls: --ca-file: the report on disk is the one stored (%s)" %
              items)
    finally:
        srv.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("preload", "ebpf", "server", "tls"))
    ap.add_argument("--gpufl", required=True)
    ap.add_argument("--c10", required=True)
    ap.add_argument("--preload-lib", required=True)
    ap.add_argument("--nvml-lib", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--server")
    a = ap.parse_args()
    os.makedirs(a.tmp, exist_ok=True)
    d = tempfile.mkdtemp(prefix="memprof-oom-", dir=a.tmp)
    try:
        {"preload": run_preload, "ebpf": run_ebpf, "server": run_server,
         "tls": run_tls}[a.mode](a, d)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print("%s: %d failures" % (a.mode, memprof_common.failures))
    sys.exit(1 if memprof_common.failures else 0)


if __name__ == "__main__":
    main()
