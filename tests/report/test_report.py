"""test_report.py - `gpufl report`, `gpufl export` and `gpufl import` on
real logs (example_train on the simulated GPU), on a folder with rotated
.zst files, two sessions and a cut last line, and on the original GPU
Flight's v1 sample files.  Numbers are checked against an independent
computation with Python's json (tests/client/gpufl_logs.py)."""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict

sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "client"))
import gpufl_logs  # noqa: E402

BIN = os.environ["GPUFL_BIN_DIR"]
TMP = tempfile.mkdtemp(prefix="report-", dir=os.environ.get("GPUFL_TEST_TMP"))
FIXTURE = os.path.join(HERE, "fixtures", "gpuflight-v1")
failures = []
passed = [0]


def check(cond, what):
    passed[0] += 1
    if not cond:
        failures.append(what)
        print("FAIL", what)


def gpufl(*args, rc=0):
    p = subprocess.run([os.path.join(BIN, "gpufl")] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != rc:
        raise AssertionError("gpufl %s: rc %d (want %d): %s" % (
            " ".join(args), p.returncode, rc, p.stderr.decode()[-2000:]))
    return p.stdout.decode()


def train(log_dir, steps, env=None):
    e = dict(os.environ, GPUFL_ENGINES="sim", **(env or {}))
    subprocess.run([os.path.join(BIN, "example_train"), "--steps", str(steps),
                    "--speed", "50", "--log-dir", log_dir], env=e, check=True,
                   stdout=subprocess.DEVNULL)


def expected(sess):
    """Per-session numbers computed from the independent reader."""
    dev, sc = sess.streams["device"], sess.streams["scope"]
    kern = defaultdict(list)
    for e in dev.of("kernel"):
        name = sess.name(sess.launch(e["cfg"])["name"]) if "cfg" in e else \
            sess.name(e["name"])
        kern[(e.get("cfg", 0), name)].append(e["dur"])
    copies = defaultdict(lambda: [0, 0])
    for e in dev.of("memcpy"):
        copies[e["kind"]][0] += 1
        copies[e["kind"]][1] += e["bytes"]
    ivs = defaultdict(list)
    for e in dev.of("kernel"):
        ivs[e.get("dev", 0)].append((e["ts"], e["ts"] + e["dur"]))
    busy = {}
    for d, iv in ivs.items():
        iv.sort()
        tot, cs, ce = 0, None, None
        for s, t in iv:
            if ce is None or s > ce:
                if ce is not None:
                    tot += ce - cs
                cs, ce = s, t
            else:
                ce = max(ce, t)
        busy[d] = tot + ce - cs
    scopes = defaultdict(lambda: [0, 0])
    for e in sc.of("scope_end"):
        p = sess.path(e["path"])
        scopes[p][0] += 1
        scopes[p][1] += e["dur"]
    return kern, copies, busy, scopes


def nearest_rank(vals, q):
    vals = sorted(vals)
    return vals[max(1, math.ceil(q * len(vals))) - 1]


def compare(report, sess, label):
    kern, copies, busy, scopes = expected(sess)
    check(report["summary"]["kernels"] == sum(len(v) for v in kern.values()),
          "%s: kernel count" % label)
    rows = {(k["cfg"], k["name"]): k for k in report["kernels"]}
    check(set(rows) == set(kern), "%s: kernel rows %s != %s" % (
        label, sorted(rows)[:3], sorted(kern)[:3]))
    for key, durs in kern.items():
        r = rows.get(key)
        if not r:
            continue
        check(r["count"] == len(durs) and r["total_ns"] == sum(durs) and
              r["max_ns"] == max(durs) and r["min_ns"] == min(durs),
              "%s: %s count/total/min/max" % (label, key))
        for q, f in ((0.5, "p50_ns"), (0.99, "p99_ns")):
            exact = nearest_rank(durs, q)
            check(abs(r[f] - exact) <= exact / 64 + 1,
                  "%s: %s %s %d vs exact %d" % (label, key, f, r[f], exact))
    got = {c["kind"]: (c["count"], c["bytes"]) for c in report["copies"]}
    check(got == {k: tuple(v) for k, v in copies.items()},
          "%s: copies %s != %s" % (label, got, dict(copies)))
    for d in report["devices"]:
        if d["id"] in busy:
            check(d["busy_ns"] == busy[d["id"]], "%s: GPU %d busy %d != %d" % (
                label, d["id"], d["busy_ns"], busy[d["id"]]))
    got = {s["path"]: (s["count"], s["total_ns"]) for s in report["scopes"]
           if s["count"]}
    check(got == {k: tuple(v) for k, v in scopes.items()},
          "%s: scope rows differ" % label)


def test_example_train():
    d = os.path.join(TMP, "train")
    train(d, 30)
    sessions = gpufl_logs.validate(d)
    rep = json.loads(gpufl("report", d, "--json"))
    check(len(rep["sessions"]) == 1, "one session")
    s = rep["sessions"][0]
    check(s["session"]["simulated"] is True, "simulated flag")
    compare(s, sessions[s["session"]["sid"]], "train")
    check(any(h["kind"] == "occupancy" for h in s["hints"]), "occupancy hint")
    check(any(h["kind"] == "spills" for h in s["hints"]), "spills hint")
    check(s["functions"] and "divergence" in s["functions"][0], "sass functions")
    text = gpufl("report", d)
    check("SIMULATED" in text and "-- top kernels" in text and
          "-- hints" in text and "-- scopes" in text, "text sections")
    # export: structure, counts, flows, nesting
    out = os.path.join(TMP, "trace.json")
    gpufl("export", d, "--format", "chrome-trace", "-o", out)
    with open(out) as f:
        tr = json.load(f)
    ev = tr["traceEvents"]
    ok_ph = {"X", "s", "f", "C", "M", "i"}
    check(all(e["ph"] in ok_ph and isinstance(e["pid"], int) and
              isinstance(e["tid"], int) for e in ev), "event fields")
    xs = [e for e in ev if e["ph"] == "X"]
    check(all(isinstance(e["ts"], (int, float)) and e["dur"] >= 0 for e in xs),
          "X ts/dur")
    kern = [e for e in xs if e.get("cat") == "kernel"]
    check(len(kern) == s["summary"]["kernels"], "trace kernels")
    starts = {e["id"] for e in ev if e["ph"] == "s"}
    ends = {e["id"] for e in ev if e["ph"] == "f"}
    check(starts == ends and len(starts) > 0, "flow pairs")
    names = [e for e in ev if e["ph"] == "M" and e["name"] == "process_name"]
    check(any("SIMULATED" in e["args"]["name"] for e in names), "simulated label")
    check(any(e["ph"] == "C" and "GPU utilisation" in e["name"] for e in ev),
          "GPU counter track")
    # scopes nest on each thread: slices either contain or miss each other
    by = defaultdict(list)
    for e in xs:
        if e.get("cat") == "scope":
            by[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for tid, sl in by.items():
        sl.sort(key=lambda x: (x[0], -x[1]))
        stack = []
        for a, b in sl:
            while stack and stack[-1] <= a + 1e-3:
                stack.pop()
            check(not stack or b <= stack[-1] + 1e-3, "scope nesting %s" % (tid,))
            stack.append(b)
    gpufl("export", d, "--format", "perfetto", "-o", out + "2")
    gpufl("export", d, "--format", "pprof", "-o", out + "3", rc=2)


def test_rotated_two_sessions_truncated():
    d = os.path.join(TMP, "rot")
    env = {"GPUFL_ROTATE_BYTES": "65536", "GPUFL_ROTATE_ZSTD": "1",
           "GPUFL_ROTATE_KEEP": "0"}
    train(d, 12, env)
    train(d, 8, env)
    names = os.listdir(d)
    check(any(n.endswith(".zst") for n in names), "zst files made")
    sessions = gpufl_logs.validate(d)
    check(len(sessions) == 2, "two sessions")
    rep = json.loads(gpufl("report", d, "--json"))
    check(len(rep["sessions"]) == 2, "report: two sessions")
    for s in rep["sessions"]:
        compare(s, sessions[s["session"]["sid"]], "rot " + s["session"]["sid"][:8])
        check(s["reading"]["device"]["files"] > 1, "several device files")
    # a crash: the live device file of the second session ends mid-line
    sid = rep["sessions"][1]["session"]["sid"]
    live = [n for n in names if sid[:8] in n and n.endswith(".device.log")][0]
    with open(os.path.join(d, live), "a") as f:
        f.write('{"v":1,"sid":"%s","st":"device","seq":99999999,"ts":1,"type":"ker' % sid)
    one = json.loads(gpufl("report", d, "--session", sid[:8], "--json"))
    check(len(one["sessions"]) == 1, "--session picks one")
    r = one["sessions"][0]
    check(r["reading"]["device"]["partial"] == 1, "partial line counted")
    check(r["summary"]["kernels"] == rep["sessions"][1]["summary"]["kernels"],
          "partial line ignored")
    gpufl("report", d, "--session", "ffffffff", rc=1)
    gpufl("report", rc=2)


S1 = "11111111-2222-4333-8444-555555555555"
S2 = "66666666-7777-4888-9999-aaaaaaaaaaaa"
T0 = 1796000000000000000


def write_hint_fixture(d):
    """Two hand-written sessions in one folder: the first with a rotated,
    zstd-compressed device file, a cut last line, and data for every hint
    the simulated GPU does not produce (divergence, coalescing, a dominant
    stall reason, throttling); the second minimal."""
    os.makedirs(d)
    seqs = defaultdict(int)

    def ln(f, sid, st, ts, **kw):
        o = {"v": 1, "sid": sid, "st": st, "seq": seqs[(sid, st)], "ts": ts}
        seqs[(sid, st)] += 1
        o.update(kw)
        f.write(json.dumps(o, separators=(",", ":")) + "\n")

    def head(f, sid, st, file=0, app="hand"):
        ln(f, sid, st, T0, type="session", app=app, host="h", pid=7, start=T0,
           file=file, lib="0.1.0", simulated=False, cmd="hand-written",
           interval_ms=1000, engines={"nvml": "on"},
           devices=[{"id": 0, "name": "NVIDIA H100 80GB HBM3", "cc": "9.0",
                     "sms": 132, "regs_sm": 65536, "smem_sm": 233472,
                     "max_threads_sm": 2048, "max_blocks_sm": 32}])

    def dicts(f, sid, st="device"):
        ln(f, sid, st, T0, type="dict", id=1, kind="name", name="divergent_kernel")
        if st == "device":
            ln(f, sid, st, T0, type="dict", id=2, kind="launch", name=1,
               block=[128], regs=64, lmem=8, occ=0.25, lim="regs")

    pre = os.path.join(d, "hand.20261130-000000.11111111")
    with open(pre + ".device.log.1", "w") as f:
        head(f, S1, "device")
        dicts(f, S1)
        for i, dur in enumerate((1000, 2000, 3000)):
            ln(f, S1, "device", T0 + 10000 * i, type="kernel", cfg=2,
               grid=[64], dur=dur)
    subprocess.run(["zstd", "-q", "--rm", pre + ".device.log.1"], check=True)
    with open(pre + ".device.log", "w") as f:
        head(f, S1, "device", file=1)
        dicts(f, S1)
        for i, dur in enumerate((4000, 5000)):
            ln(f, S1, "device", T0 + 100000 + 10000 * i, type="kernel", cfg=2,
               grid=[64], dur=dur)
        ln(f, S1, "device", T0 + 900000, type="session_end", reason="shutdown",
           dur=900000, lines=seqs[(S1, "device")] + 1, lost=0, rotations=1)
        f.write('{"v":1,"sid":"%s","st":"device","seq":99,"ts":1,"type":"ker' % S1)
    with open(pre + ".scope.log", "w") as f:
        head(f, S1, "scope")
        dicts(f, S1, "scope")
        ln(f, S1, "scope", T0 + 1000, type="sass", func=1, pc=128, inst=1000,
           thread_inst=8000, sectors=1000, sectors_ideal=250)
        ln(f, S1, "scope", T0 + 1000, type="pcsamp", func=1, pc=128,
           stalls={"long_scoreboard": 700, "barrier": 100, "wait": 200},
           samples=1000)
        ln(f, S1, "scope", T0 + 900000, type="session_end", reason="shutdown",
           dur=900000, lines=seqs[(S1, "scope")] + 1, lost=0, rotations=0)
    with open(pre + ".system.log", "w") as f:
        head(f, S1, "system")
        for i in range(3):
            ln(f, S1, "system", T0 + 1000 * i, type="gpu", dev=0, util=90,
               mem_util=50, mem_used=1 << 30, mem_total=80 << 30, temp=88,
               power=300000, power_limit=300000, clk_sm=1200 + i, throttle=0x24)
        ln(f, S1, "system", T0 + 900000, type="session_end", reason="shutdown",
           dur=900000, lines=seqs[(S1, "system")] + 1, lost=0, rotations=0)
    pre = os.path.join(d, "hand.20261130-000100.66666666")
    for st in ("device", "scope", "system"):
        with open("%s.%s.log" % (pre, st), "w") as f:
            head(f, S2, st, app="second")
            if st == "device":
                dicts(f, S2)
                ln(f, S2, st, T0 + 60 * 10**9, type="kernel", cfg=2, grid=[1], dur=777)
            ln(f, S2, st, T0 + 61 * 10**9, type="session_end", reason="shutdown",
               dur=61 * 10**9, lines=seqs[(S2, st)] + 1, lost=0, rotations=0)


def test_hand_written():
    d = os.path.join(TMP, "hand")
    write_hint_fixture(d)
    sessions = gpufl_logs.validate(d, allow_partial=True)
    rep = json.loads(gpufl("report", d, "--json"))["sessions"]
    check([s["session"]["sid"] for s in rep] == [S1, S2], "two sessions, in order")
    a = rep[0]
    compare(a, sessions[S1], "hand")
    k = a["kernels"][0]
    check((k["count"], k["total_ns"], k["p99_ns"], k["max_ns"]) ==
          (5, 15000, 5000, 5000) and abs(k["p50_ns"] - 3000) <= 3000 / 64,
          "hand kernel numbers %s" % k)
    check(a["reading"]["device"]["files"] == 2 and
          a["reading"]["device"]["partial"] == 1, "rotated .zst + cut line")
    f = a["functions"][0]
    check(f["divergence"] == 0.75 and f["coalescing"] == 0.25 and
          f["stalls"]["long_scoreboard"] == 700, "functions %s" % f)
    dv = a["devices"][0]
    check(dv["throttled_samples"] == 3 and
          dv["throttle_reasons"] == {"sw_power_cap": 3, "sw_thermal": 3},
          "throttling %s" % dv)
    kinds = {h["kind"]: h for h in a["hints"]}
    for kind in ("occupancy", "spills", "divergence", "coalescing", "stalls",
                 "throttling"):
        check(kind in kinds and kinds[kind]["evidence"], "hint " + kind)
    check(kinds.get("stalls", {}).get("severity") == "medium", "dominant stall")
    check("registers allow" in kinds.get("occupancy", {}).get("evidence", ""),
          "occupancy evidence")
    check(rep[1]["summary"]["kernels"] == 1 and
          rep[1]["kernels"][0]["total_ns"] == 777, "second session")
    text = gpufl("report", d, "--session", S2[:8])
    check("SIMULATED" not in text and "777 ns" in text, "second session text")


def test_import():
    out = os.path.join(TMP, "imported")
    log = gpufl("import", FIXTURE, "-o", out)
    check("4 kernels" in log and "execution_signature" in log, "import summary: " + log)
    sessions = gpufl_logs.validate(out)  # strict: the format's invariants
    check(len(sessions) == 1, "one imported session")
    sess = list(sessions.values())[0]
    ks = sess.streams["device"].of("kernel")
    check(sorted(k["dur"] for k in ks) == [15102, 15230, 250000, 260000],
          "kernel durations")
    vec = [k for k in ks if sess.name(sess.launch(k["cfg"])["name"]).startswith("vecAdd")]
    check(len(vec) == 2 and all(k["grid"] == [4096] and sess.path(k["path"]) ==
                                "train_step/forward" for k in vec), "kernel details")
    check(sess.launch(vec[0]["cfg"])["block"] == [256], "block")
    paths = sorted(sess.path(e["path"]) for e in sess.streams["scope"].of("scope_end"))
    check(paths == ["train_step", "train_step/forward"], "scopes %s" % paths)
    gpu = sess.streams["system"].of("gpu")
    check([g["mem_used"] for g in gpu] == [9100 << 20, 9200 << 20], "gpu samples")
    rep = json.loads(gpufl("report", out, "--json"))["sessions"][0]
    compare(rep, sess, "import")
    gpufl("import", FIXTURE, "-o", out, rc=1)  # files exist: never overwritten


for t in (test_example_train, test_rotated_two_sessions_truncated,
          test_hand_written, test_import):
    try:
        t()
        print("ok  ", t.__name__)
    except Exception as x:  # noqa: BLE001
        failures.append("%s: %r" % (t.__name__, x))
        print("FAIL", t.__name__, x)
shutil.rmtree(TMP, ignore_errors=True)
print("%d checks, %d failures" % (passed[0], len(failures)))
sys.exit(1 if failures else 0)
