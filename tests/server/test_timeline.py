"""test_timeline.py - what a Perfetto user needs of gpufl-server (docs/api.md):
names as the compiler wrote them, the API calls behind the kernels, a
timeline never blank where a kernel ran, the range as a Chrome trace, and the
web UI found without a flag.  Real binary on 127.0.0.1, SQLite or (with
GPUFL_TEST_PG_URI_FILE) PostgreSQL; sessions written here line by line, so
every expected answer is computed from the lines themselves.

Run one class per ctest test: python3 test_timeline.py Names
"""
import json
import os
import random
import shutil
import subprocess
import tempfile
import unittest
import uuid

import srvtest as T

# 2023-11-14T22:13:20Z in ns: far from 0, past 2^53
T0 = 1700000000 * 10 ** 9



# What migration 14 (jobs, regressions) added, removed: back to schema 13.
UNDO_14 = ["DROP INDEX sessions_job", "DROP INDEX sessions_regress",
           "DROP INDEX sessions_app",
           "DROP TABLE regressions"] + [
    "ALTER TABLE sessions DROP COLUMN " + c for c in (
        "job", "rank", "world_size", "local_rank", "job_source", "step_scope",
        "sim_perturb", "regress")]

def run_sql(srv, stmts):
    """stmts on a stopped server's database (taking it back to an older
    schema: the server migrates it forward when started again)."""
    if srv.pgdb:
        for q in stmts:
            srv.sql(q)
        return
    import sqlite3
    db = sqlite3.connect(os.path.join(srv.data_dir, "gpufl.db"),
                         isolation_level=None)
    for q in stmts:
        db.execute(q)
    db.close()


class Gen:
    """One session's device and scope lines, built by hand."""

    def __init__(self, sid=None, app="gen"):
        self.sid = sid or str(uuid.uuid4())
        self.seq = {"device": 0, "scope": 0}
        self.lines = {"device": [], "scope": []}
        self.names = {}
        self.kernels = []  # (seq, dev, stream, ts, dur, name id, corr, api, tid)
        self.ops = []
        self.line("device", T0, "session", app=app, host="gen-host", pid=7,
                  start=T0, lib="test", simulated=True, interval_ms=100,
                  devices=[], engines={}, cmd=[app])

    def line(self, st, ts, typ, **kw):
        e = {"v": 1, "sid": self.sid, "st": st, "seq": self.seq[st], "ts": ts,
             "type": typ}
        e.update(kw)
        self.seq[st] += 1
        self.lines[st].append(e)
        return e

    def name(self, s, demangled=None):
        if s in self.names:
            return self.names[s]
        nid = len(self.names) + 1
        kw = {"id": nid, "kind": "name", "name": s}
        if demangled is not None:
            kw["demangled"] = demangled
        self.line("device", T0, "dict", **kw)
        self.names[s] = nid
        return nid

    def kernel(self, ts, dur, name_id, dev=0, stream=7, corr=0, api=None,
               tid=None):
        kw = {"name": name_id, "block": [128], "regs": 32, "grid": [4],
              "dur": dur}
        if dev:
            kw["dev"] = dev
        if stream:
            kw["stream"] = stream
        if corr:
            kw["corr"] = corr
        if api:
            kw["api"] = list(api)
        if tid:
            kw["tid"] = tid
        e = self.line("device", ts, "kernel", **kw)
        self.kernels.append((e["seq"], dev, stream, ts, dur, name_id, corr,
                             api, tid))
        return e

    def op(self, typ, ts, dur, **kw):
        e = self.line("device", ts, typ, dur=dur, **kw)
        self.ops.append(e)
        return e

    def send(self, srv, batch=5000):
        for st in ("device", "scope"):
            lines = [json.dumps(e, separators=(",", ":")).encode()
                     for e in self.lines[st]]
            for body in T.chunks(lines, batch):
                r = srv.ingest_ok(st, body)
                if r["rejected"]:
                    raise AssertionError(r)


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self._testMethodName + ".",
                                    dir=T.TMP)
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            if s.p.poll() is None:
                s.stop(check=False)
        shutil.rmtree(self.dir, ignore_errors=True)

    def server(self, name="data", args=(), **kw):
        s = T.Server(os.path.join(self.dir, name), args, **kw)
        self.servers.append(s)
        return s


# Two instantiations of one template: readers that shorten template
# arguments show both as vectorized_elementwise_kernel<...>(...).
ADD = ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_"
       "addIN3c108BFloat16EEESt5arrayIPcLm3EEEEviT0_T1_",
       "void at::native::vectorized_elementwise_kernel<4, at::native::"
       "CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, "
       "at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)")
FILL = ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIN"
        "3c108BFloat16EEESt5arrayIPcLm1EEEEviT0_T1_",
        "void at::native::vectorized_elementwise_kernel<4, at::native::"
        "FillFunctor<c10::BFloat16>, std::array<char*, 1ul> >(int, "
        "at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul>)")
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64"


class Names(Base):
    def test_display_and_mangled_everywhere(self):
        srv = self.server()
        g = Gen()
        a, f, m = g.name(*ADD), g.name(*FILL), g.name(GEMM)
        for i in range(30):
            g.kernel(T0 + 1000 + i * 10000, 3000 + i, (a, f, m)[i % 3],
                     corr=i + 1)
        g.line("scope", T0 + 5, "sass", func=a, pc=16, inst=100,
               thread_inst=3200, sectors=8, sectors_ideal=8)
        g.send(srv)
        # the second session has only one of the instantiations
        h = Gen()
        a2 = h.name(*ADD)
        h.kernel(T0 + 1000, 5000, a2)
        h.send(srv)
        disp = {ADD[0]: ADD[1], FILL[0]: FILL[1], GEMM: GEMM}
        base = "/api/v1/sessions/" + g.sid
        ks = T.page_all(srv, base + "/kernels")
        self.assertEqual(len(ks), 30)
        for k in ks:
            self.assertEqual(k["name"], disp[k["mangled"]])
        d = srv.get(base + "/kernels/%d" % ks[0]["kid"])
        self.assertEqual((d["name"], d["mangled"]), (disp[d["mangled"]], d["mangled"]))
        agg = srv.get(base + "/kernels/aggregate")["items"]
        self.assertEqual({(x["name"], x["mangled"]) for x in agg},
                         {(v, k) for k, v in disp.items()})
        # the filter reads either form: "FillFunctor<c10" is only in the
        # demangled one, "11FillFunctor" only in the mangled one
        for frag in ("FillFunctor%3Cc10", "11FillFunctor"):
            got = T.page_all(srv, base + "/kernels?name=" + frag)
            self.assertEqual({k["mangled"] for k in got}, {FILL[0]})
            got = srv.get(base + "/kernels/aggregate?name=" + frag)["items"]
            self.assertEqual([x["mangled"] for x in got], [FILL[0]])
        tl = srv.get(base + "/timeline?width=50")
        for nid, n in tl["names"].items():
            self.assertEqual(n, disp[tl["mangled"][nid]])
        self.assertEqual(set(tl["mangled"].values()), set(disp))
        pr = srv.get(base + "/profile")["functions"]
        self.assertEqual([(x["function"], x["function_mangled"]) for x in pr],
                         [(ADD[1], ADD[0])])
        # compare keys by the whole recorded name: the two instantiations
        # are two rows, the one b lacks has b null
        c = srv.get("/api/v1/compare?a=%s&b=%s" % (g.sid, h.sid))["items"]
        self.assertEqual(len(c), 3)
        rows = {x["mangled"]: x for x in c}
        self.assertEqual(rows[ADD[0]]["name"], ADD[1])
        self.assertEqual(rows[ADD[0]]["b"]["count"], 1)
        self.assertIsNone(rows[FILL[0]]["b"])
        self.assertEqual(rows[FILL[0]]["a"]["count"], 10)

    def test_timeline_names_many(self):
        """The timeline's names and mangled maps for 250 names (looked up
        at once: more than two PostgreSQL statements' worth of ids) and a
        kernel whose name id no dict line names ("" in both maps): every
        id of the answer maps to its own names."""
        srv = self.server()
        g = Gen()
        want = {}
        for i in range(250):
            mang = "_Z%dkern%dv" % (len("kern%d" % i), i)
            dem = "kern%d()" % i if i % 3 else None
            nid = g.name(mang, dem)
            want[str(nid)] = (dem or mang, mang)
        ids = sorted(want, key=int)
        for i, nid in enumerate(ids):
            g.kernel(T0 + 1000 + i * 100000, 5000, int(nid),
                     stream=7 + i % 3, corr=i + 1)
        g.kernel(T0 + 1000 + 250 * 100000, 5000, 999, stream=7, corr=251)
        want["999"] = ("", "")
        g.send(srv)
        tl = srv.get("/api/v1/sessions/%s/timeline?width=4000" % g.sid)
        self.assertEqual(set(tl["names"]), set(want))
        self.assertEqual(set(tl["mangled"]), set(want))
        for nid, (dem, mang) in want.items():
            self.assertEqual((tl["names"][nid], tl["mangled"][nid]),
                             (dem, mang), nid)

    def test_schema_11_rows_get_null(self):
        """A database of schema 11 (no demangled column) migrates: its
        names answer with name == mangled, its long kernels and API call
        bounds are found from the stored kernels."""
        # a schema 11 database holds its kernels as rows (kernel blocks
        # came with migration 19), whatever store the suite's servers use
        # (GPUFL_TEST_SERVER_ARGS): the migrated one reads them in place
        srv = self.server(args=["--kernel-store=rows"])
        g = Gen()
        a = g.name(*ADD)
        g.kernel(T0 + 1000, 400 * 10 ** 6, a, api=(-3000, 1000), tid=11)
        g.kernel(T0 + 10 ** 9, 2000, a, api=(-5000, 1200), tid=11)
        g.send(srv)
        srv.stop()
        # back to schema 11: what migrations 12 to 17 added, removed
        undo = ["DELETE FROM schema_version WHERE version>=12"] + \
            UNDO_14 + [
                "DROP TABLE memooms", "DROP TABLE captures",
                "DROP INDEX lines_trigger",
                "DROP TABLE waste", "DROP TABLE wasteh", "DROP TABLE wasted",
                "DROP TABLE vruns",
                "ALTER TABLE dicts DROP COLUMN demangled",
                "ALTER TABLE kernels DROP COLUMN tid",
                "ALTER TABLE ops DROP COLUMN tid",
                "ALTER TABLE ops DROP COLUMN api_off",
                "ALTER TABLE ops DROP COLUMN api_dur",
                "ALTER TABLE sessions DROP COLUMN api_lo",
                "ALTER TABLE sessions DROP COLUMN api_hi",
                "ALTER TABLE sessions DROP COLUMN op_lo",
                "ALTER TABLE sessions DROP COLUMN op_hi",
                "DROP TABLE klong"]
        run_sql(srv, undo)
        srv2 = self.server()
        ks = srv2.get("/api/v1/sessions/%s/kernels" % g.sid)["items"]
        self.assertEqual([(k["name"], k["mangled"]) for k in ks], [(ADD[0], ADD[0])] * 2)
        self.assertEqual([k["tid"] for k in ks], [None, None])
        self.assertEqual([k["launch_ns"] for k in ks], [3000, 5000])
        self.assertEqual(srv2.sql("SELECT count(*) FROM klong"), [["1"]])
        self.assertEqual(srv2.sql("SELECT api_lo, api_hi FROM sessions"),
                         [["2000", "5000"]])


def lod_session(rnd):
    """Kernels on 2 GPUs x 3 streams over ~6 s: gaps and durations from 0
    ns to tens of ms, some concurrent within a lane, kernels longer than
    the rollup spreads (0.6 s and 2.5 s: kept apart at ingest), and a
    burst of 18000 short kernels in 80 ms (denser than a window may be to
    be read raw)."""
    g = Gen()
    names = [g.name(*ADD), g.name(*FILL), g.name(GEMM)]
    lanes = [(d, s) for d in (0, 1) for s in (7, 8, 9)]
    for li, (d, s) in enumerate(lanes):
        t = T0 + rnd.randrange(0, 10 ** 6)
        for i in range(1200):
            t += rnd.choice([0, 1, 300, 5000, 70000, 400000, 3 * 10 ** 6])
            dur = rnd.choice([0, 1, 900, 40000, 262144, 2 * 10 ** 6,
                              30 * 10 ** 6])
            g.kernel(t, dur, names[(li + i) % 3], dev=d, stream=s,
                     corr=len(g.kernels) + 1)
            if rnd.random() < 0.05:  # a concurrent one in the same lane
                g.kernel(t + 17, dur // 2 + 3, names[0], dev=d, stream=s)
            t += dur // (1 + rnd.randrange(3))
    g.kernel(T0 + 2 * 10 ** 9 + 123, 600 * 10 ** 6, names[2], dev=1, stream=8)
    g.kernel(T0 + 10 ** 9 + 7, 2500 * 10 ** 6, names[1], dev=0, stream=9)
    t = T0 + 3 * 10 ** 9
    for i in range(18000):
        g.kernel(t + i * 4444, 3000 + i % 700, names[i % 3], dev=0, stream=7)
    return g, lanes


def occupied(k, lo, hi, bw):
    """The columns of [lo, hi) (bw ns wide) kernel k occupies."""
    ts, dur = k[3], k[4]
    last = ts + max(dur, 1) - 1
    if last < lo or ts >= hi:
        return range(0)
    return range((max(ts, lo) - lo) // bw, (min(last, hi - 1) - lo) // bw + 1)


def flows_session(rnd, n=600):
    """Kernels, copies, memsets and syncs with their API calls on three
    threads; some launches wait long in their stream's queue (the call
    long before the kernel), some lines have no call."""
    g = Gen()
    names = [g.name(*ADD), g.name(*FILL), g.name(GEMM)]
    t = T0 + 10 ** 6
    corr = 0
    for i in range(n):
        tid = 101 + i % 3
        t += rnd.randrange(1000, 40000)
        corr += 1
        r = rnd.random()
        call = rnd.randrange(500, 8000)
        if r < 0.6:
            # queue latency: mostly a few us, sometimes 50 ms
            wait = rnd.choice([rnd.randrange(0, 20000)] * 9 + [50 * 10 ** 6])
            gpu = t + call + wait - rnd.randrange(0, 600)
            g.kernel(gpu, rnd.randrange(0, 30000), names[i % 3],
                     stream=7 + i % 2, corr=corr, api=(t - gpu, call),
                     tid=tid)
        elif r < 0.7:
            g.kernel(t, 5000, names[0], corr=corr)  # no call recorded
        elif r < 0.8:
            gpu = t + call + 2000
            g.op("memcpy", gpu, 3000, stream=7, corr=corr, kind="htod",
                 bytes=4096, api=[t - gpu, call], tid=tid)
        elif r < 0.85:
            g.op("memcpy", t, 3000, stream=7, corr=corr, kind="dtoh",
                 bytes=64)  # no call recorded
        elif r < 0.9:
            gpu = t + call + 1000
            g.op("memset", gpu, 6000, stream=8, corr=corr, bytes=1 << 20,
                 api=[t - gpu, call], tid=tid)
        else:
            g.op("sync", t, rnd.choice([0, 30000, 200000]), stream=7,
                 corr=corr, kind="stream", tid=tid)
    return g


def expected_calls(g):
    """(tid, type, enter, dur, seq, corr) of every call, from the lines."""
    out = []
    for e in g.lines["device"]:
        ty = e["type"]
        if ty == "sync":
            out.append((e["tid"], "sync", e["ts"], e["dur"], e["seq"], e["corr"]))
        elif ty in ("kernel", "memcpy", "memset") and "api" in e:
            out.append((e.get("tid", 0), "launch" if ty == "kernel" else ty,
                        e["ts"] + e["api"][0], e["api"][1], e["seq"], e["corr"]))
    return out


def in_range(c, lo, hi):
    enter, dur = c[2], c[3]
    return enter < hi and (enter + dur > lo or lo <= enter)


def capi_session(rnd, n=24000):
    """API calls on four threads over ~5 s - launches, copies, memsets,
    syncs of 0 ns and some longer than the rollup spreads (268 ms) - and
    kernels without a call."""
    g = Gen()
    name = g.name(GEMM)
    t = T0 + 123457
    for i in range(n):
        tid = 101 + rnd.randrange(4)
        t += rnd.randrange(20000, 400000)
        call = rnd.randrange(500, 9000)
        r = rnd.random()
        if r < 0.6:
            gpu = t + call + rnd.choice([rnd.randrange(0, 20000)] * 9 +
                                        [30 * 10 ** 6])
            g.kernel(gpu, rnd.randrange(0, 30000), name, stream=7 + i % 2,
                     corr=i + 1, api=(t - gpu, call), tid=tid)
        elif r < 0.7:
            g.kernel(t, 5000, name, corr=i + 1)  # no call recorded
        elif r < 0.8:
            gpu = t + call + 2000
            g.op("memcpy", gpu, 3000, stream=7, corr=i + 1, kind="htod",
                 bytes=4096, api=[t - gpu, call], tid=tid)
        elif r < 0.85:
            gpu = t + call + 1000
            g.op("memset", gpu, 6000, stream=8, corr=i + 1, bytes=1 << 20,
                 api=[t - gpu, call], tid=tid)
        elif r < 0.998:
            g.op("sync", t, rnd.choice([0, 30000, 2000000]), stream=7,
                 corr=i + 1, kind="stream", tid=tid)
        else:
            g.op("sync", t, rnd.randrange(3 * 10 ** 8, 15 * 10 ** 8),
                 stream=7, corr=i + 1, kind="device", tid=tid)
    return g


class CallSummary(Base):
    """The zoomed-out /calls summary comes from the rollup kept at ingest
    (store_sql_capi.c) and says what the call rows say: exact counts and
    busy ns per thread at every zoom, exact columns where the window is
    aligned to the rollup's buckets, nothing counted twice when a batch is
    sent again."""

    def test_summary_equals_rows(self):
        rnd = random.Random(2018)
        g = capi_session(rnd)
        srv = self.server()
        g.send(srv, batch=3000)
        calls = expected_calls(g)
        longs = [c for c in calls if c[3] > 268173312]
        self.assertGreater(len(longs), 10)
        base = "/api/v1/sessions/" + g.sid
        ts = sorted(c[2] for c in calls)
        lo0, hi0 = ts[0], max(c[2] + c[3] for c in calls) + 1
        wins = [(lo0, hi0, 1000, False), (lo0 - 10 ** 9, hi0 + 10 ** 9, 300,
                                          False), (lo0, hi0, 64, False)]
        for _ in range(8):
            a = rnd.randrange(lo0 - 10 ** 8, hi0)
            wins.append((a, a + rnd.choice([3 * 10 ** 8, 10 ** 9, 4 * 10 ** 9]),
                         rnd.choice([100, 500, 1000]), False))
        # aligned: from and the column width multiples of the bucket
        for sh, width in ((20, 500), (24, 200), (21, 1000)):
            w = 1 << sh
            a = (rnd.randrange(lo0, hi0) >> sh) << sh
            bw = 8 * w * rnd.choice([1, 2, 3])
            wins.append((a, a + bw * width, width, True))
        first = self.check(srv, base, calls, wins)
        self.assertGreaterEqual(self.rolled, 8)
        self.assertEqual(self.aligned, 3)
        # a replayed batch: all duplicates, the answers unchanged
        dev = [json.dumps(e, separators=(",", ":")).encode()
               for e in g.lines["device"]]
        r = srv.ingest_ok("device", b"\n".join(dev[3000:9000]))
        self.assertEqual((r["accepted"], r["duplicate"]), (0, 6000))
        self.assertEqual(self.check(srv, base, calls, wins), first)

    def test_coarse_rows_bounded(self):
        """Columns holding many buckets of the level used (8 to 128 of
        them: the levels are 16x apart) are read mostly from the level
        above, whose buckets lying in one column add there what their
        buckets below would; its rows and those of the level below where a
        column boundary cuts a bucket above: about bw / 2^24 + 16 rows per
        column and thread here, not bw / 2^20 (docs/server.md "The call
        summary's rows").  The answers as the rows say (check); SQLite
        only (PostgreSQL reads the level used: packs, a round trip per
        range)."""
        rnd = random.Random(2424)
        g = capi_session(rnd)
        srv = self.server()
        g.send(srv, batch=3000)
        calls = expected_calls(g)
        base = "/api/v1/sessions/" + g.sid
        lo = min(c[2] for c in calls)
        hi = max(c[2] + c[3] for c in calls) + 1
        # columns of ~130 ms: level 1 (2^20 ns, ~124 of them a column),
        # 2^24 just over an eighth; width/bw as the server computes them
        width = -(-(hi - lo) // (130 * 10 ** 6))
        bw = -(-(hi - lo) // width)
        self.assertEqual((bw // 8).bit_length() - 1, 23)
        # aligned to level 1 (the columns exact): 124 of its buckets a
        # column, the boundaries cutting most 2^24 buckets
        a = (lo >> 20) << 20
        wa = -(-(hi - a) // (124 << 20))
        wins = [(lo, hi, width, False), (lo + 7777777, hi - 10 ** 8, width,
                                         False),
                (a, a + wa * (124 << 20), wa, True)]
        before = T.metric(srv, "gpufl_server_calls_rollup_rows_total")
        self.check(srv, base, calls, wins)
        rows = T.metric(srv, "gpufl_server_calls_rollup_rows_total") - before
        self.assertEqual((self.rolled, self.aligned), (3, 1))
        threads = len({c[0] for c in calls})
        # per window and thread: the whole buckets above, the cut one and
        # at most 9 below for each column boundary, two partial ends
        bound = 3 * threads * (width * (bw // (1 << 24) + 1 + 9) + 32)
        if T.PG_URI_FILE:
            self.assertGreater(rows, 0)
        else:
            self.assertLessEqual(rows, bound, (width, bw))

    def test_older_session_from_rows(self):
        """A session begun before the rollup existed (migration 20) is
        answered from its rows, not from a rollup holding only the calls
        that came after."""
        rnd = random.Random(20)
        g = capi_session(rnd, 4000)
        srv = self.server()
        dev = [json.dumps(e, separators=(",", ":")).encode()
               for e in g.lines["device"]]
        srv.ingest_ok("device", b"\n".join(dev[:2000]))
        srv.stop()
        undo = ["DELETE FROM schema_version WHERE version>=21",
                "DROP TABLE capi", "DROP TABLE capi_long",
                "DROP TABLE capi_from"]
        run_sql(srv, undo)
        srv2 = self.server()
        srv2.ingest_ok("device", b"\n".join(dev[2000:]))
        calls = expected_calls(g)
        lo, hi = min(c[2] for c in calls), max(c[2] + c[3] for c in calls) + 1
        self.check(srv2, "/api/v1/sessions/" + g.sid, calls,
                   [(lo, hi, 100, False)], rollup=False)
        self.assertEqual(self.rolled, 0)
        # a session after it: from the rollup
        g2 = capi_session(rnd, 4000)
        g2.send(srv2, batch=1000)
        calls = expected_calls(g2)
        lo, hi = min(c[2] for c in calls), max(c[2] + c[3] for c in calls) + 1
        self.check(srv2, "/api/v1/sessions/" + g2.sid, calls,
                   [(lo, hi, 100, False)])
        self.assertEqual(self.rolled, 1)

    def check(self, srv, base, calls, wins, rollup=True):
        answers = []
        self.rolled = self.aligned = 0
        for lo, hi, width, aligned in wins:
            want = [c for c in calls if in_range(c, lo, hi)]
            r = srv.get(base + "/calls?from=%d&to=%d&width=%d&limit=100"
                        % (lo, hi, width))
            answers.append(r)
            bw = -(-(hi - lo) // width)
            if len(want) <= 100:
                self.assertTrue(r["complete"])
                continue
            self.assertEqual(r["bucket_ns"], bw)
            self.assertEqual((r["complete"], r["count"]), (False, len(want)),
                             (lo, hi, width))
            # from the rollup when its finest buckets (2^18 ns) are at most
            # an eighth of a column, else from the rows
            self.assertEqual("rollup_ns" in r, rollup and bw >= 8 << 18,
                             (lo, hi, width))
            rw = int(r.get("rollup_ns", 1))
            self.assertLessEqual(rw * 8, bw)
            self.rolled += "rollup_ns" in r
            self.aligned += aligned
            self.assertEqual({t["tid"] for t in r["threads"]
                              if t["buckets"]}, {c[0] for c in want})
            for th in r["threads"]:
                mine = [c for c in want if c[0] == th["tid"]]
                n, busy, allowed = {}, {}, set()
                for c in mine:
                    if c[2] >= lo:
                        p = (c[2] - lo) // bw
                        n[p] = n.get(p, 0) + 1
                    a, b = max(c[2], lo), min(c[2] + c[3], hi)
                    last = min(c[2] + max(c[3], 1) - 1, hi - 1)
                    for p in range((a - lo) // bw, (last - lo) // bw + 1):
                        ov = max(0, min(b, lo + (p + 1) * bw) -
                                 max(a, lo + p * bw))
                        busy[p] = busy.get(p, 0) + ov
                    # columns a bucket of the call may reach
                    b0 = (c[2] // rw) * rw
                    b1 = ((c[2] + max(c[3], 1) - 1) // rw + 1) * rw
                    for p in range((max(b0, lo) - lo) // bw,
                                   (min(b1, hi) - 1 - lo) // bw + 1):
                        allowed.add(p)
                got = {b[0]: b for b in th["buckets"]}
                occ = {p for p in set(n) | set(busy) if n.get(p) or busy.get(p)}
                self.assertLessEqual(occ, set(got), (lo, hi, th["tid"]))
                self.assertLessEqual(set(got), allowed, (lo, hi, th["tid"]))
                self.assertEqual(sum(b[1] for b in th["buckets"]),
                                 sum(n.values()), (lo, hi, th["tid"]))
                self.assertEqual(sum(b[2] for b in th["buckets"]),
                                 sum(busy.values()), (lo, hi, th["tid"]))
                if aligned:
                    self.assertEqual({p: (b[1], b[2]) for p, b in got.items()},
                                     {p: (n.get(p, 0), busy.get(p, 0))
                                      for p in occ}, (lo, hi, th["tid"]))
        return answers


class Lod(Base):
    """Every column where a kernel ran is drawn, at every zoom: checked on
    random windows against the kernels themselves."""

    def test_pruned_long_kernels_go(self):
        """A pruned session's long kernels go with it: SQLite gives the
        next session the pruned one's id when it was the highest, and that
        session's timeline drew the pruned session's long kernel."""
        srv = self.server()
        h = Gen()
        h.kernel(T0 + 5000, 1000, h.name(GEMM))
        h.send(srv)
        g = Gen()
        g.kernel(T0 + 1000, 400 * 10 ** 6, g.name(GEMM))
        g.send(srv)
        st, _, _ = srv.req("PUT", "/api/v1/sessions/%s/keep" % h.sid,
                           b'{"keep": true}')
        self.assertEqual(st, 200)
        st, _, data = srv.req("POST", "/api/v1/admin/retention?max_db_bytes=1")
        self.assertEqual((st, json.loads(data)["pruned"]), (200, 1))
        g2 = Gen()
        g2.kernel(T0 + 2 * 10 ** 8, 2000, g2.name(GEMM))
        g2.send(srv)
        # columns of 400 us: level 0, where a kernel of 400 ms is drawn
        # from the long kernels (klong)
        lo, hi, width = T0, T0 + 4 * 10 ** 8, 1000
        r = srv.get("/api/v1/sessions/%s/timeline?from=%d&to=%d&width=%d" %
                    (g2.sid, lo, hi, width))
        bw = r["bucket_ns"]
        cols = {(l["dev"], l["stream"], b[0]) for l in r["lanes"]
                for b in l["buckets"]}
        # g2's one kernel's columns, and its summary bucket's (a level
        # wider than a column draws the columns it overlaps)
        k = g2.kernels[0]
        grain = r["level"] if isinstance(r["level"], int) else 1
        near = range((k[3] - grain - lo) // bw, (k[3] + k[4] + grain - lo) // bw + 1)
        self.assertTrue(set(occupied(k, lo, hi, bw)) <= {c for _, _, c in cols})
        self.assertEqual({c for c in cols if c[2] not in near}, set())

    def test_every_occupied_column_is_listed(self):
        rnd = random.Random(1818)
        g, lanes = lod_session(rnd)
        srv = self.server()
        g.send(srv, batch=4000)
        base = "/api/v1/sessions/%s/timeline" % g.sid
        ks = g.kernels
        first = min(k[3] for k in ks)
        last = max(k[3] + k[4] for k in ks)
        byl = {}
        for k in ks:
            byl.setdefault((k[1], k[2]), []).append(k)
        modes = {"raw": 0, "summary": 0, "dense": 0, "exact": 0, "long": 0}
        wins = [(first, last + 1, 1000)]
        # the burst, too dense to read raw in narrow pixels
        burst = T0 + 3 * 10 ** 9
        wins += [(burst - 10 ** 5 + i * 3 * 10 ** 5, burst + 79 * 10 ** 6 + i, w)
                 for i, w in enumerate((2000, 700, 4000, 10000))]
        for _ in range(70):
            span = rnd.choice([10 ** 3, 10 ** 5, 3 * 10 ** 6, 10 ** 8, 7 * 10 ** 8,
                               4 * 10 ** 9])
            a = rnd.randrange(first - span // 2, last)
            wins.append((a, a + span, rnd.choice([37, 333, 1000, 2048])))
        for lo, hi, width in wins:
            exact = rnd.choice([0, 0, 50, 5000])
            want_lanes = rnd.sample(lanes, rnd.choice([0, 2, 6]))
            q = "%s?from=%d&to=%d&width=%d&exact=%d" % (base, lo, hi, width, exact)
            if want_lanes:
                q += "&lanes=" + ",".join("%d:%d" % l for l in want_lanes)
            r = srv.get(q)
            bw = -(-(hi - lo) // width)
            self.assertEqual((r["from"], r["to"], r["bucket_ns"]), (lo, hi, bw))
            got = {(l["dev"], l["stream"]): l for l in r["lanes"]}
            if want_lanes:
                self.assertEqual([(l["dev"], l["stream"]) for l in r["lanes"]],
                                 want_lanes)
            raw = r["level"] == "raw"
            if raw:
                modes["raw"] += 1
            elif r["level"] > bw:
                modes["dense"] += 1
            else:
                modes["summary"] += 1
            for lane in (want_lanes or lanes):
                mine = [k for k in byl[lane] if occupied(k, lo, hi, bw)]
                occ = set()
                for k in mine:
                    occ |= set(occupied(k, lo, hi, bw))
                if any(k[4] > 268173312 for k in mine):
                    modes["long"] += 1
                L = got.get(lane)
                cols = {b[0]: b for b in L["buckets"]} if L else {}
                where = (lo, hi, width, lane, r["level"])
                # the promise: no column where a kernel ran is left empty
                self.assertEqual(occ - set(cols), set(), where)
                if raw:
                    self.assertEqual(set(cols), occ, where)
                    for p, b in cols.items():
                        c0, c1 = lo + p * bw, min(lo + (p + 1) * bw, hi)
                        self.assertEqual(b[1], sum(1 for k in mine if c0 <= k[3] < c1), where)
                        self.assertEqual(b[2], sum(max(0, min(k[3] + k[4], c1) - max(k[3], c0))
                                                   for k in mine), where)
                    self.assertEqual(r["kernels_in_window"] >= len(mine), True)
                if L and L["exact"]:
                    modes["exact"] += 1
                    self.assertTrue(raw and exact and len(mine) <= exact, where)
                    self.assertEqual([x[0] for x in L["kernels"]],
                                     [k[0] for k in sorted(mine, key=lambda k: (k[3], k[0]))], where)
                    for x in L["kernels"]:
                        self.assertIn(str(x[3]), r["names"])
                elif L:
                    self.assertNotIn("kernels", L)
                    self.assertFalse(raw and exact and len(mine) <= exact, where)
            for l in r["lanes"]:
                for b in l["buckets"]:
                    self.assertIn(str(b[3]), r["mangled"])
        # the windows went through every way of answering
        for m, n in modes.items():
            self.assertGreater(n, 2, modes)
        # a whole-session window counts every kernel and all busy time
        r = srv.get(base + "?width=777")
        self.assertEqual(sum(b[1] for l in r["lanes"] for b in l["buckets"]), len(ks))
        self.assertEqual(sum(b[2] for l in r["lanes"] for b in l["buckets"]),
                         sum(k[4] for k in ks))
        for bad in ("0:7,", "a:1", "0:", "1:2:3", ",", "0:99999999999"):
            st, _, _ = srv.req("GET", base + "?lanes=" + bad)
            self.assertEqual(st, 400, bad)


    def test_kernels_overlapping_a_range(self):
        """overlap=true lists the kernels occupying [from, to): a long one
        that began before from included, in every sort and page."""
        rnd = random.Random(1819)
        g = Gen()
        n = g.name(GEMM)
        t = T0 + 10 ** 6
        for i in range(600):
            # short kernels, some 2 ms ones, and three past RL_TL_LONG_NS
            # (table klong): 0.4 s, 1 s and 3 s
            dur = rnd.choice([2000, 9000, 2 * 10 ** 6])
            if i in (50, 300, 301):
                dur = {50: 4 * 10 ** 8, 300: 10 ** 9, 301: 3 * 10 ** 9}[i]
            g.kernel(t, dur, n, stream=7 + i % 3)
            t += rnd.choice([3000, 40000, 700000])
        srv = self.server()
        g.send(srv)
        base = "/api/v1/sessions/%s/kernels" % g.sid
        ks = g.kernels
        last = max(k[3] + k[4] for k in ks)
        wins = [(T0 + 10 ** 6 + 5, T0 + 10 ** 6 + 10 ** 7)]
        for _ in range(12):
            a = rnd.randrange(T0, last)
            wins.append((a, a + rnd.choice([10 ** 4, 10 ** 6, 10 ** 8])))
        began_before = 0
        for lo, hi in wins:
            want = [k for k in ks if k[3] < hi and (k[3] + k[4] > lo or k[3] >= lo)]
            began_before += sum(1 for k in want if k[3] < lo)
            for sort, key, desc in (("start", lambda k: (k[3], k[0]), False),
                                    ("start", lambda k: (k[3], k[0]), True),
                                    ("duration", lambda k: (k[4], k[0]), True)):
                got = T.page_all(srv, "%s?from=%d&to=%d&overlap=true&sort=%s"
                                 "&desc=%s" % (base, lo, hi, sort,
                                               "true" if desc else "false"), 17)
                self.assertEqual([x["kid"] for x in got],
                                 [k[0] for k in sorted(want, key=key,
                                                       reverse=desc)],
                                 (lo, hi, sort, desc))
            # without overlap: started in the range only
            got = T.page_all(srv, "%s?from=%d&to=%d" % (base, lo, hi), 50)
            self.assertEqual(len(got), sum(1 for k in ks if lo <= k[3] < hi))
        self.assertGreater(began_before, 5)
        st, _, _ = srv.req("GET", base + "?from=1&overlap=maybe")
        self.assertEqual(st, 400)


class Flows(Base):
    def setUp(self):
        super().setUp()
        self.rnd = random.Random(18)
        self.g = flows_session(self.rnd)
        self.srv = self.server()
        # small batches: the session's call bounds grow batch by batch
        self.g.send(self.srv, batch=37)
        self.calls = expected_calls(self.g)
        self.base = "/api/v1/sessions/" + self.g.sid

    def test_calls_complete(self):
        ts = sorted(c[2] for c in self.calls)
        span = (ts[0] - 10 ** 6, ts[-1] + 10 ** 8)
        wins = [span]
        for _ in range(40):
            a = self.rnd.randrange(*span)
            wins.append((a, a + self.rnd.choice([10 ** 4, 10 ** 6, 10 ** 8])))
        # a window holding a call whose kernel runs 50 ms later
        late = [e for e in self.g.lines["device"] if e["type"] == "kernel"
                and "api" in e and -e["api"][0] > 40 * 10 ** 6][0]
        enter = late["ts"] + late["api"][0]
        wins.append((enter, enter + 1))
        for lo, hi in wins:
            r = self.srv.get(self.base + "/calls?from=%d&to=%d" % (lo, hi))
            want = sorted(c for c in self.calls if in_range(c, lo, hi))
            self.assertTrue(r["complete"])
            self.assertEqual(r["count"], len(want))
            got = []
            for th in r["threads"]:
                for c in th["calls"]:
                    got.append((th["tid"], c["type"], c["ts"], c["dur"],
                                c["seq"], c["corr"]))
                self.assertEqual([c["ts"] for c in th["calls"]],
                                 sorted(c["ts"] for c in th["calls"]))
            self.assertEqual(sorted(got), want, (lo, hi))
            self.assertEqual([t["tid"] for t in r["threads"]],
                             sorted({t["tid"] for t in r["threads"]}))
        r = self.srv.get(self.base + "/calls?from=%d&to=%d" % (enter, enter + 1))
        c = [c for t in r["threads"] for c in t["calls"] if c["seq"] == late["seq"]][0]
        self.assertEqual((c["gpu_ts"], c["gpu_dur"], c["stream"]),
                         (late["ts"], late["dur"], late["stream"]))

    def test_calls_summary(self):
        ts = sorted(c[2] for c in self.calls)
        self.check_summary(self.srv, self.base, self.calls, (
            (ts[0], ts[-1] + 1, 300), (ts[10], ts[200], 977),
            (ts[0] - 5, ts[0] + 10 ** 7, 10)))

    def test_calls_summary_long_range(self):
        """More than 4096 kernels in range: the launches are read in seq
        order (store_sql_q_calls.c scan_launches), with the same answer."""
        g = flows_session(self.rnd, 9000)
        g.send(self.srv, batch=3000)
        calls = expected_calls(g)
        self.assertGreater(sum(1 for c in calls if c[1] == "launch"), 4096)
        ts = sorted(c[2] for c in calls)
        wins = [(ts[0], ts[-1] + 1, 1000), (ts[0] - 10 ** 8, ts[-1] + 10 ** 8, 64),
                (ts[len(ts) // 8], ts[len(ts) * 7 // 8], 777)]
        for _ in range(4):
            a = self.rnd.randrange(ts[0], ts[-1])
            wins.append((a, a + self.rnd.choice([10 ** 7, 10 ** 8]), 500))
        self.check_summary(self.srv, "/api/v1/sessions/" + g.sid, calls, wins)

    def check_summary(self, srv, base, calls, wins):
        for lo, hi, width in wins:
            want = [c for c in calls if in_range(c, lo, hi)]
            r = srv.get(base + "/calls?from=%d&to=%d&width=%d&limit=5"
                        % (lo, hi, width))
            self.assertEqual((r["complete"], r["count"]), (False, len(want)))
            bw = -(-(hi - lo) // width)
            self.assertEqual(r["bucket_ns"], bw)
            for th in r["threads"]:
                mine = [c for c in want if c[0] == th["tid"]]
                cols = {b[0]: b for b in th["buckets"]}
                occ = set()
                for c in mine:
                    last = c[2] + max(c[3], 1) - 1
                    a = max(c[2], lo)
                    b = min(last, hi - 1)
                    occ |= set(range((a - lo) // bw, (b - lo) // bw + 1))
                self.assertEqual(set(cols), occ)
                self.assertEqual(sum(b[1] for b in th["buckets"]),
                                 sum(1 for c in mine if c[2] >= lo))
                self.assertEqual(sum(b[2] for b in th["buckets"]),
                                 sum(max(0, min(c[2] + c[3], hi) - max(c[2], lo))
                                     for c in mine))
            self.assertEqual({t["tid"] for t in r["threads"]},
                             {c[0] for c in want})

    def test_latency_columns_and_sort(self):
        ks = [e for e in self.g.lines["device"] if e["type"] == "kernel"]
        with_api = [e for e in ks if "api" in e]
        for sort, key in (("queue", lambda e: -e["api"][0] - e["api"][1]),
                          ("launch_latency", lambda e: -e["api"][0])):
            for desc in (False, True):
                got = T.page_all(self.srv, self.base + "/kernels?sort=%s&desc=%s"
                                 % (sort, "true" if desc else "false"), 23)
                want = sorted(with_api, key=lambda e: (key(e), e["seq"]),
                              reverse=desc)
                self.assertEqual([g["kid"] for g in got], [e["seq"] for e in want])
                for g, e in zip(got, want):
                    self.assertEqual(g["launch_ns"], -e["api"][0])
                    self.assertEqual(g["queue_ns"], -e["api"][0] - e["api"][1])
                    self.assertEqual(g["tid"], e["tid"])
        lo = sorted(e["ts"] for e in ks)[100]
        hi = sorted(e["ts"] for e in ks)[300]
        got = T.page_all(self.srv, self.base + "/kernels?sort=queue&from=%d&to=%d"
                         % (lo, hi), 50)
        self.assertEqual(len(got), sum(1 for e in with_api if lo <= e["ts"] < hi))
        # kernels whose call was not recorded: listed by start, no latency
        plain = T.page_all(self.srv, self.base + "/kernels")
        self.assertEqual(len(plain), len(ks))
        for g in plain:
            if g["kid"] not in {e["seq"] for e in with_api}:
                self.assertEqual((g["launch_ns"], g["queue_ns"], g["tid"]),
                                 (None, None, None))
        st, _, _ = self.srv.req("GET", self.base + "/kernels?sort=nope")
        self.assertEqual(st, 400)

    def test_bad_api_times_refused(self):
        g = Gen()
        n = g.name(GEMM)
        g.kernel(T0 + 100, 10, n, api=(-(T0 + 101), 5), tid=1)
        g.kernel(T0 + 200, 10, n, api=(2 ** 62, 2 ** 62), tid=1)
        lines = [json.dumps(e).encode() for e in g.lines["device"]]
        st, r = self.srv.post("device", b"\n".join(lines))
        self.assertEqual((st, r["rejected"]), (200, 2))
        self.assertIn("the call's entry and exit", r["errors"][0]["reason"])


class Export(Base):
    def test_trace_of_a_range(self):
        rnd = random.Random(4)
        g = flows_session(rnd, 400)
        sname = g.name("train_step")
        ks = [e for e in g.lines["device"] if e["type"] == "kernel"]
        t0, t1 = ks[0]["ts"], ks[-1]["ts"]
        for i in range(20):  # scope instances on thread 101, 60 us each
            b = t0 + i * (t1 - t0) // 20
            g.line("scope", b, "scope_begin", id=i + 1, name=sname, path=0,
                   depth=1, tid=101)
            g.line("scope", b + 60000, "scope_end", id=i + 1, name=sname,
                   path=0, depth=1, tid=101, dur=60000)
        srv = self.server()
        g.send(srv, batch=500)
        disp = {ADD[0]: ADD[1], FILL[0]: FILL[1], GEMM: GEMM}
        idn = {v: k for k, v in g.names.items()}
        calls = expected_calls(g)
        for lo, hi, lanes in ((t0 - 10, t1 + 10 ** 8, None),
                              ((t0 + t1) // 2, (t0 + t1) // 2 + 10 ** 7, None),
                              (t0, t1, [(0, 8)])):
            q = "/api/v1/sessions/%s/export?from=%d&to=%d" % (g.sid, lo, hi)
            if lanes:
                q += "&lanes=" + ",".join("%d:%d" % l for l in lanes)
            st, h, data = srv.req("GET", q)
            self.assertEqual(st, 200, data[:200])
            self.assertTrue(h["Content-Type"].startswith("application/json"))
            tr = json.loads(data)
            ev = tr["traceEvents"]
            od = tr["otherData"]
            self.assertEqual((int(od["from"]), int(od["to"]), od["truncated"]),
                             (lo, hi, False))
            want = [e for e in ks if e["ts"] < hi and (e["ts"] + e["dur"] > lo
                                                       or e["ts"] >= lo)
                    and (not lanes or (e.get("dev", 0), e.get("stream", 0)) in lanes)]
            kern = [e for e in ev if e.get("cat") == "kernel"]
            self.assertEqual(sorted(e["args"]["kid"] for e in kern),
                             sorted(e["seq"] for e in want))
            self.assertEqual(od["kernels"], len(want))
            byk = {e["seq"]: e for e in want}
            for e in kern:
                k = byk[e["args"]["kid"]]
                self.assertEqual(e["args"]["mangled"], idn[k["name"]])
                self.assertEqual(e["name"], disp[idn[k["name"]]])
                self.assertEqual(e["pid"], 2 + k.get("dev", 0))
                self.assertEqual(e["tid"], k.get("stream", 0))
                self.assertAlmostEqual(e["ts"], (k["ts"] - lo) / 1000, places=3)
                self.assertAlmostEqual(e["dur"], k["dur"] / 1000, places=3)
            # an arrow from each exported kernel's launch call to it
            starts = {e["id"]: e for e in ev if e["ph"] == "s"}
            ends = {e["id"]: e for e in ev if e["ph"] == "f"}
            self.assertEqual(set(starts), set(ends))
            self.assertEqual(len(starts), sum(1 for e in want if "api" in e))
            for i, f in ends.items():
                self.assertEqual(f["bp"], "e")
                self.assertEqual(starts[i]["tid"] in (101, 102, 103), True)
            # calls of the range on their threads (launches of exported
            # kernels went out with their arrow)
            inr = [c for c in calls if in_range(c, lo, hi)]
            self.assertEqual(od["calls"], len(inr))
            host = [e for e in ev if e["pid"] == 1 and e["ph"] == "X"]
            syncs = [e for e in host if e["cat"] == "sync"]
            self.assertEqual(len(syncs), sum(1 for c in inr if c[1] == "sync"))
            names = [e for e in ev if e["ph"] == "M" and e["name"] == "thread_name"]
            self.assertTrue(any(e["args"]["name"] == "thread 101" for e in names))
            scopes = [e for e in host if e["cat"] == "scope"]
            self.assertEqual(od["scopes"], len(scopes))
            self.assertTrue(all(e["name"] == "train_step" for e in scopes))
            cps = [e for e in ev if e.get("cat") in ("memcpy", "memset")]
            self.assertEqual(od["copies"], len(cps))
        for bad in ("lanes=x", "from=5&to=4"):
            st, _, _ = srv.req("GET", "/api/v1/sessions/%s/export?%s" % (g.sid, bad))
            self.assertEqual(st, 400, bad)

    def test_no_api_calls(self):
        """A session without API calls (kernels only, no launch times):
        its export and its /calls answer, with none (the sanitizer build's
        server died sorting the empty list of calls)."""
        g = Gen()
        n = g.name(GEMM)
        for i in range(5):
            g.kernel(T0 + 10 ** 6 + i * 1000, 500, n)
        srv = self.server()
        g.send(srv)
        st, _, data = srv.req("GET", "/api/v1/sessions/%s/export" % g.sid)
        self.assertEqual(st, 200, data[:200])
        od = json.loads(data)["otherData"]
        self.assertEqual((od["kernels"], od["calls"]), (5, 0))
        st, _, data = srv.req("GET", "/api/v1/sessions/%s/calls" % g.sid)
        self.assertEqual(st, 200, data[:200])
        self.assertEqual(srv.get("/api/v1/sessions/%s" % g.sid)["id"], g.sid)

    def over_cap(self, g, what):
        """g sent to a new server, whose export of it all is a 413 naming
        `what`; the server and its truncated export (truncate=true)."""
        srv = self.server()
        g.send(srv, batch=10000)
        base = "/api/v1/sessions/%s/export" % g.sid
        st, _, data = srv.req("GET", base)
        self.assertEqual(st, 413)
        self.assertIn("over 20000 " + what, json.loads(data)["error"])
        st, _, data = srv.req("GET", base + "?truncate=true")
        self.assertEqual(st, 200)
        return srv, json.loads(data)

    def test_cap_413_or_truncated(self):
        g = Gen()
        n = g.name(GEMM)
        for i in range(20010):
            g.kernel(T0 + 10 ** 6 + i * 1000, 500, n, api=(-300, 100), tid=9)
        srv, tr = self.over_cap(g, "kernels")
        base = "/api/v1/sessions/%s/export" % g.sid
        od = tr["otherData"]
        # complete up to the first kernel left out, and says so
        self.assertEqual((od["truncated"], od["kernels"], int(od["to"])),
                         (True, 20000, T0 + 10 ** 6 + 20000 * 1000))
        self.assertEqual(len([e for e in tr["traceEvents"] if e.get("cat") == "kernel"]),
                         20000)
        # the calls that began before it: the left-out kernel's own too
        self.assertEqual(od["calls"], 20001)
        # a narrower range fits whole
        st, _, data = srv.req("GET", base + "?from=%d&to=%d" % (T0, T0 + 10 ** 7))
        self.assertEqual(st, 200)
        self.assertFalse(json.loads(data)["otherData"]["truncated"])

    def test_scope_cap_413_or_truncated(self):
        """More scope instances than an export carries (20 000): 413, or
        with truncate=true the first 20 000 and the range cut at the first
        one left out (its read stops there: LIMIT, read_scopes)."""
        g = Gen()
        sname = g.name("train_step")
        for i in range(20010):
            b = T0 + 10 ** 6 + i * 1000
            g.line("scope", b, "scope_begin", id=i + 1, name=sname, path=0,
                   depth=1, tid=101)
            g.line("scope", b + 500, "scope_end", id=i + 1, name=sname,
                   path=0, depth=1, tid=101, dur=500)
        _, tr = self.over_cap(g, "scope instances")
        od = tr["otherData"]
        self.assertEqual((od["truncated"], int(od["to"])),
                         (True, T0 + 10 ** 6 + 20000 * 1000))


class UiDefault(Base):
    """gpufl-server started as a user would, without --ui-dir."""

    def start(self, binary, name, args=()):
        keep = T.SERVER
        T.SERVER = binary
        try:
            return self.server(name, args)
        finally:
            T.SERVER = keep

    def place(self, folder):
        """A copy of the binary in folder/bin (it links no library of the
        build tree)."""
        os.makedirs(os.path.join(folder, "bin"))
        b = os.path.join(folder, "bin", "gpufl-server")
        shutil.copy2(T.SERVER, b)
        return b

    def page(self, folder, text):
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "index.html"), "w") as f:
            f.write(text)

    def test_installed_copy(self):
        prefix = os.path.join(self.dir, "prefix")
        b = self.place(prefix)
        web = os.path.join(prefix, "share", "gpufl", "web")
        self.page(web, "<html>installed</html>")
        srv = self.start(b, "d1")
        st, _, data = srv.req("GET", "/", token=None)
        self.assertEqual((st, data), (200, b"<html>installed</html>"))
        self.assertIn("gpufl-server: web UI from %s\n" % os.path.realpath(web),
                      srv.output())
        srv.stop()
        # --ui-dir none: no UI, and said so
        srv = self.start(b, "d2", ["--ui-dir", "none"])
        st, _, _ = srv.req("GET", "/", token=None)
        self.assertEqual(st, 404)
        self.assertIn("gpufl-server: no web UI (--ui-dir none)", srv.output())
        srv.stop()
        # an installed copy holding the data folder is not served
        srv = self.start(b, os.path.join("prefix", "share", "gpufl", "web", "data"))
        st, _, _ = srv.req("GET", "/", token=None)
        self.assertEqual(st, 404)
        self.assertIn("which must not be served", srv.output())
        st, _, _ = srv.req("GET", "/data/gpufl.db", token=None)
        self.assertEqual(st, 404)
        srv.stop()

    def test_build_tree(self):
        build = os.path.join(self.dir, "build")
        src = os.path.join(self.dir, "src")
        b = self.place(build)
        with open(os.path.join(build, "CMakeCache.txt"), "w") as f:
            f.write("# a build tree\nCMAKE_BUILD_TYPE:STRING=Debug\n"
                    "gpufl_SOURCE_DIR:STATIC=%s\n" % src)
        srv = self.start(b, "d1")
        st, _, _ = srv.req("GET", "/", token=None)
        self.assertEqual(st, 404)
        out = srv.output()
        self.assertIn("gpufl-server: no web UI (looked in %s/../share/gpufl/web, "
                      "%s/web/dist; make web, or give --ui-dir)"
                      % (os.path.realpath(os.path.join(build, "bin")), src), out)
        srv.stop()
        self.page(os.path.join(src, "web", "dist"), "<html>dist</html>")
        srv = self.start(b, "d2")
        st, _, data = srv.req("GET", "/", token=None)
        self.assertEqual((st, data), (200, b"<html>dist</html>"))
        self.assertIn("web UI from %s" % os.path.realpath(os.path.join(src, "web", "dist")),
                      srv.output())
        srv.stop()
        # --ui-dir still wins
        other = os.path.join(self.dir, "other")
        self.page(other, "<html>other</html>")
        srv = self.start(b, "d3", ["--ui-dir", other])
        st, _, data = srv.req("GET", "/", token=None)
        self.assertEqual(data, b"<html>other</html>")
        srv.stop()


if __name__ == "__main__":
    unittest.main()
