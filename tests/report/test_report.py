"""test_report.py - `gpufl report`, `gpufl export` and `gpufl import` on
real logs (example_train on the simulated GPU), on a folder with rotated
.zst files, two sessions and a cut last line, and on the original GPU
Flight's v1 sample files.  Numbers are checked against an independent
computation with Python's json (tests/client/gpufl_logs.py)."""
import json
import math
import os
import re
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


CONVERTED = {"job_start", "dictionary_update", "shutdown", "kernel_event_batch",
             "kernel_detail", "memcpy_event_batch", "synchronization_event_batch",
             "memory_alloc_event_batch", "scope_event_batch", "device_metric_batch",
             "host_metric_batch", "memset_event", "nvtx_marker_event",
             "profile_sample_batch"}
TRIPLICATED = {"segment_start", "segment_end", "run_end", "capture_capabilities"}
SASS_SLOT = {"smsp__sass_inst_executed": "inst",
             "smsp__sass_thread_inst_executed": "thread_inst",
             "smsp__sass_sectors_mem_global": "sectors",
             "smsp__sass_sectors_mem_global_ideal": "sectors_ideal",
             "smsp__sass_sectors_mem_global_op_ld_ideal": "sectors_ideal",
             "smsp__sass_sectors_mem_global_op_st_ideal": "sectors_ideal"}
STALLED = "smsp__pcsamp_warps_issue_stalled_"


def input_lines(paths):
    """(channel, raw line, parsed) of complete, parseable lines, in order."""
    import gzip
    out = []
    for ch, p in paths:
        op = gzip.open if p.endswith(".gz") else open
        with op(p, "rb") as f:
            for raw in f.read().decode().split("\n")[:-1]:
                try:
                    out.append((ch, raw, json.loads(raw)))
                except ValueError:
                    pass
    return out


def v12_paths():
    root = os.path.join(FIXTURE, "3f2b8c1e-9d4a-4e6b-8f00-1a2b3c4d5e6f")
    return [(ch, os.path.join(root, n)) for ch in ("device", "scope", "system", "sass")
            for n in ("%s.1.log.gz" % ch, ".tmp/%s.log" % ch)
            if os.path.exists(os.path.join(root, n))]


def flat_paths():
    # v1.0-1.1: .2 is older than .1, the active file is the newest
    return [(ch, os.path.join(FIXTURE, "bench.%s.%s" % (ch, n)))
            for ch in ("device", "scope", "system")
            for n in ("2.log.gz", "1.log.gz", "log")]


def expect_session(lines, sid):
    """What gpufl import must make of one session, computed here from the
    original lines: sass and pcsamp lines (folded per batch), the lines
    to copy into unconverted.jsonl."""
    mine = [(ch, raw, o) for ch, raw, o in lines if o.get("session_id") == sid]
    dicts = defaultdict(dict)
    for _, _, o in mine:
        if o["type"] == "dictionary_update":
            for k in ("function_dict", "metric_dict", "scope_name_dict",
                      "source_file_dict"):
                dicts[k].update(o.get(k, {}))
    chans = [ch for ch in ("device", "scope", "system")
             if any(c == ch for c, _, _ in mine)]
    sass, pcs, unconv = [], [], []
    for ch, raw, o in mine:
        t = o["type"]
        if t in TRIPLICATED:
            if ch == chans[0]:
                unconv.append(raw)
            continue
        if t != "profile_sample_batch":
            if t not in CONVERTED:
                unconv.append(raw)
            continue
        if ch != "scope":
            continue
        col = {c: i for i, c in enumerate(o["columns"])}
        folds, kept = {}, False
        for r in o["rows"]:
            v = lambda c: r[col[c]]
            kind, name = v("sample_kind"), dicts["metric_dict"].get(str(v("metric_id")))
            if kind == 2 or (kind == 1 and name not in SASS_SLOT):
                kept = True
                continue
            key = (kind, v("device_id"), v("function_id"), v("pc_offset"),
                   v("scope_name_id"))
            f = folds.setdefault(key, {"ts": o["base_time_ns"] + v("dt_ns"),
                                       "vals": {}})
            if kind == 1:
                sl = SASS_SLOT[name]
                f["vals"][sl] = f["vals"].get(sl, 0) + v("metric_value")
            else:
                rn = name[len(STALLED):] if name and name.startswith(STALLED) else name
                rn = "".join(c if c.isalnum() or c in "_." else "_"
                             for c in (rn or ""))[:63] or "reason_%d" % v("stall_reason")
                if rn in f["vals"] or len(f["vals"]) < 8:
                    f["vals"][rn] = f["vals"].get(rn, 0) + v("metric_value")
        for (kind, dev, func, pc, scope), f in folds.items():
            ident = (f["ts"], dev, dicts["function_dict"].get(str(func)), pc,
                     dicts["scope_name_dict"].get(str(scope)))
            if kind == 1:
                vals = f["vals"]
                for a, b in (("inst", "thread_inst"), ("sectors", "sectors_ideal")):
                    if (a in vals) != (b in vals):
                        vals.pop(a, None)
                        vals.pop(b, None)
                if vals:
                    sass.append(ident + tuple(vals.get(k, 0) for k in
                                              ("inst", "thread_inst", "sectors",
                                               "sectors_ideal")))
            else:
                pcs.append(ident + (f["vals"], sum(f["vals"].values())))
        if kept:
            unconv.append(raw)
    return sass, pcs, unconv


def got_profile(sess):
    sc = sess.streams["scope"]
    sass = [(e["ts"], e.get("dev", 0), sess.name(e["func"]), e["pc"],
             sess.path(e["path"]) if e.get("path") else None,
             e["inst"], e["thread_inst"], e["sectors"], e["sectors_ideal"])
            for e in sc.of("sass")]
    pcs = [(e["ts"], e.get("dev", 0), sess.name(e["func"]), e["pc"],
            sess.path(e["path"]) if e.get("path") else None, e["stalls"],
            e["samples"]) for e in sc.of("pcsamp")]
    return sass, pcs


def test_import():
    out = os.path.join(TMP, "imported")
    log = gpufl("import", FIXTURE, "-o", out)
    check("4 kernels" in log and "execution_signature 1" in log,
          "import summary: " + log)
    check("3 files of the v0 layout" in log, "v0 files counted: " + log)
    check("flat v1.0-1.1 layout, 9 files, 2 sessions" in log, "flat base: " + log)
    sessions = gpufl_logs.validate(out)  # strict: the format's invariants
    SA, SB = ("aaaaaaaa-1111-4222-8333-444444444444",
              "bbbbbbbb-5555-4666-8777-888888888888")
    SID = "3f2b8c1e-9d4a-4e6b-8f00-1a2b3c4d5e6f"
    check(sorted(sessions) == sorted([SID, SA, SB]), "three imported sessions")
    sess = sessions[SID]
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
    # flat layout: each run its own session, its own dictionaries, the
    # rotated files read oldest (highest index) first
    names = {SA: "kA", SB: "kB"}
    durs = {SA: [100, 110, 120], SB: [200, 210, 220]}
    for sid in (SA, SB):
        s = sessions[sid]
        ks = s.streams["device"].of("kernel")
        check([k["dur"] for k in ks] == durs[sid], "%s kernels in order" % sid[:8])
        check({s.name(s.launch(k["cfg"])["name"]) for k in ks} == {names[sid]},
              "%s kernel names" % sid[:8])
        for st in ("device", "scope", "system"):
            ts = [e["ts"] for e in s.streams[st].events]
            check(ts == sorted(ts), "%s %s: ts monotonic %s" % (sid[:8], st, ts))
    check(len(sessions[SA].streams["system"].of("gpu")) == 2 and
          len(sessions[SB].streams["system"].of("gpu")) == 1, "flat gpu samples")
    # sass / pcsamp and unconverted.jsonl against this file's own reading
    # of the original lines
    lines = {SID: input_lines(v12_paths())}
    lines[SA] = lines[SB] = input_lines(flat_paths())
    for sid in (SID, SA, SB):
        sass, pcs, unconv = expect_session(lines[sid], sid)
        gs, gp = got_profile(sessions[sid])
        check(gs == sass, "%s sass %s != %s" % (sid[:8], gs, sass))
        check(gp == pcs, "%s pcsamp %s != %s" % (sid[:8], gp, pcs))
        uc = [os.path.join(out, n) for n in os.listdir(out)
              if sid[:8] in n and n.endswith(".unconverted.jsonl")]
        got = open(uc[0]).read().split("\n")[:-1] if uc else []
        check(got == unconv, "%s unconverted.jsonl: %d lines, want %d" % (
            sid[:8], len(got), len(unconv)))
    # numbers this fixture was written to give (a check of the oracle)
    sass, pcs, unconv = expect_session(lines[SID], SID)
    check([x[5:] for x in sass] == [(8192, 131072, 4096, 2048), (0, 0, 10, 10),
                                    (10, 320, 4, 4)], "expected sass %s" % sass)
    check(pcs[0][5] == {"long_scoreboard": 140, "barrier": 5, "mio_throttle": 2,
                        "reason_12": 1} and pcs[0][6] == 148 and
          pcs[1][6] == 36 and len(pcs[1][5]) == 8, "expected pcsamp %s" % pcs)
    check(sorted(json.loads(x)["type"] for x in unconv) ==
          ["cubin_disassembly", "execution_signature", "pm_sample_batch",
           "profile_sample_batch", "profile_sample_batch", "segment_start"],
          "expected unconverted types")
    # gpufl's own reader on the result
    rep = {s["session"]["sid"]: s for s in
           json.loads(gpufl("report", out, "--json"))["sessions"]}
    check(sorted(rep) == sorted(sessions), "report sees three sessions")
    for sid in rep:
        compare(rep[sid], sessions[sid], "import " + sid[:8])
    fn = {f["name"]: f for f in rep[SID]["functions"]}
    v = fn.get("vecAdd(float*,float*,int)", {})
    check((v.get("inst"), v.get("thread_inst"), v.get("sectors"),
           v.get("sectors_ideal"), v.get("samples")) ==
          (8192, 131072, 4106, 2058, 184) and v.get("divergence") == 0.5 and
          v["stalls"].get("long_scoreboard") == 140 and "r8" not in v["stalls"],
          "report functions %s" % v)
    kinds = {h["kind"] for h in rep[SID]["hints"]}
    check({"divergence", "coalescing", "stalls"} <= kinds, "hints %s" % kinds)
    check([f["stalls"] for f in rep[SB]["functions"]] ==
          [{"wait": 30, "short_scoreboard": 12}] and
          rep[SB]["functions"][0]["name"] == "fB", "flat pcsamp in report")
    gpufl("import", FIXTURE, "-o", out, rc=1)  # files exist: never overwritten


def test_import_flat_edges():
    """A rotated v1.0-1.1 window caught between rename and gzip (both
    bench.device.1.log and its .gz): read once, from the plain file; a
    folder of v0 files only: counted, nothing written."""
    import gzip
    d = os.path.join(TMP, "flat-in")
    os.makedirs(d)
    for n in os.listdir(FIXTURE):
        if n.startswith("bench."):
            shutil.copy(os.path.join(FIXTURE, n), d)
    with gzip.open(os.path.join(d, "bench.device.1.log.gz"), "rb") as f, \
            open(os.path.join(d, "bench.device.1.log"), "wb") as g:
        g.write(f.read())
    out = os.path.join(TMP, "flat-out")
    log = gpufl("import", d, "-o", out)
    check("flat v1.0-1.1 layout, 9 files, 2 sessions" in log, "plain + gz: " + log)
    sessions = gpufl_logs.validate(out)
    durs = sorted(k["dur"] for s in sessions.values()
                  for k in s.streams["device"].of("kernel"))
    check(durs == [100, 110, 120, 200, 210, 220], "window read once %s" % durs)
    v0 = os.path.join(TMP, "v0-in")
    os.makedirs(v0)
    for n in os.listdir(FIXTURE):
        if n.startswith("old."):
            shutil.copy(os.path.join(FIXTURE, n), v0)
    log = gpufl("import", v0, "-o", os.path.join(TMP, "v0-out"))
    check("3 files of the v0 layout" in log and "skipped" in log and
          not os.listdir(os.path.join(TMP, "v0-out")), "v0 only: " + log)


def test_import_sid_not_uuid():
    """A v1 session_id that is not a UUID (here with a quote and a
    backslash) is imported under a UUID hashed from it - the same on every
    import - never written raw into lines or file names."""
    import gzip
    src = os.path.join(FIXTURE, "3f2b8c1e-9d4a-4e6b-8f00-1a2b3c4d5e6f")
    d = os.path.join(TMP, "badsid-in", "weird")
    os.makedirs(d)
    bad = 'run "7" \\ night'
    for n in os.listdir(src):
        if not n.endswith(".gz"):
            continue
        with gzip.open(os.path.join(src, n), "rt") as f:
            lines = [json.loads(x) for x in f if x.strip()]
        for o in lines:
            if "session_id" in o:
                o["session_id"] = bad
        with gzip.open(os.path.join(d, n), "wt") as f:
            for o in lines:
                f.write(json.dumps(o) + "\n")
    os.makedirs(os.path.join(d, ".tmp"))
    for n in os.listdir(os.path.join(src, ".tmp")):
        with open(os.path.join(src, ".tmp", n)) as f:
            raw = f.read().split("\n")
        with open(os.path.join(d, ".tmp", n), "w") as f:
            for i, x in enumerate(raw):
                try:
                    o = json.loads(x)
                    o["session_id"] = bad
                    x = json.dumps(o)
                except ValueError:
                    pass  # the fixture's cut last line stays cut
                f.write(x + ("\n" if i < len(raw) - 1 else ""))
    sids = []
    for k in (1, 2):
        out = os.path.join(TMP, "badsid-out%d" % k)
        log = gpufl("import", os.path.dirname(d), "-o", out)
        sessions = gpufl_logs.validate(out)
        check(len(sessions) == 1, "one session imported: %s" % log)
        sid = list(sessions)[0]
        sids.append(sid)
        check(re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-"
                           r"[89ab][0-9a-f]{3}-[0-9a-f]{12}", sid) is not None,
              "a version-4-shaped UUID: %s" % sid)
        check("is not a UUID: imported as " + sid in log, "said: " + log)
        check(all('"' not in n and "\\" not in n for n in os.listdir(out)),
              "file names %s" % os.listdir(out))
        ks = sessions[sid].streams["device"].of("kernel")
        check(len(ks) == 4, "its kernels imported (%d)" % len(ks))
    check(sids[0] == sids[1], "the same UUID on every import %s" % sids)


def run_cli(args, timeout=30):
    p = subprocess.run([os.path.join(BIN, "gpufl")] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def test_not_regular_files():
    """A FIFO, a link to /dev/zero and a link loop named like logs: report,
    export and import neither block nor read them, say so, and read the
    real session (before: report and export hung in open() on the FIFO)."""
    d = os.path.join(TMP, "hostile")
    train(d, 3)
    os.mkfifo(os.path.join(d, "fifo.device.log"))
    os.symlink("/dev/zero", os.path.join(d, "zero.device.log"))
    os.symlink("loop.scope.log", os.path.join(d, "loop.scope.log"))
    good = [n for n in os.listdir(d) if n.startswith("example_train")]
    os.symlink(os.path.join(d, good[0]), os.path.join(d, "link.system.log"))
    rc, out, err = run_cli(["report", d, "--json"])
    check(rc == 0, "report rc %d: %s" % (rc, err))
    rep = json.loads(out)
    check(len(rep["sessions"]) == 1 and
          rep["sessions"][0]["summary"]["kernels"] > 0,
          "the real session reported")
    check("skipped 4 names" in err and "not regular files" in err,
          "report says what it skipped: " + err)
    rc, out, err = run_cli(["export", d, "--format", "perfetto", "-o",
                            os.path.join(TMP, "hostile.json")])
    check(rc == 0 and "skipped 4 names" in err, "export rc %d: %s" % (rc, err))
    v1 = os.path.join(TMP, "hostile-v1")
    os.makedirs(v1)
    os.mkfifo(os.path.join(v1, "bench.device.log"))
    os.symlink("/dev/zero", os.path.join(v1, "bench.scope.log"))
    rc, out, err = run_cli(["import", v1, "-o", os.path.join(TMP, "hv1-out")])
    check(rc in (0, 1), "import returns (rc %d): %s" % (rc, err))


for t in (test_example_train, test_rotated_two_sessions_truncated,
          test_hand_written, test_import, test_import_flat_edges,
          test_import_sid_not_uuid, test_not_regular_files):
    try:
        t()
        print("ok  ", t.__name__)
    except Exception as x:  # noqa: BLE001
        failures.append("%s: %r" % (t.__name__, x))
        print("FAIL", t.__name__, x)
shutil.rmtree(TMP, ignore_errors=True)
print("%d checks, %d failures" % (passed[0], len(failures)))
sys.exit(1 if failures else 0)
