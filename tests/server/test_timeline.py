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

    def test_schema_11_rows_get_null(self):
        """A database of schema 11 (no demangled column) migrates: its
        names answer with name == mangled, its long kernels and API call
        bounds are found from the stored kernels."""
        srv = self.server()
        g = Gen()
        a = g.name(*ADD)
        g.kernel(T0 + 1000, 400 * 10 ** 6, a, api=(-3000, 1000), tid=11)
        g.kernel(T0 + 10 ** 9, 2000, a, api=(-5000, 1200), tid=11)
        g.send(srv)
        srv.stop()
        # back to schema 11: what migration 12 added, removed
        undo = ["DELETE FROM schema_version WHERE version=12",
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
        if srv.pgdb:
            for q in undo:
                srv.sql(q)
        else:
            import sqlite3
            db = sqlite3.connect(os.path.join(srv.data_dir, "gpufl.db"),
                                 isolation_level=None)
            for q in undo:
                db.execute(q)
            db.close()
        srv2 = self.server()
        ks = srv2.get("/api/v1/sessions/%s/kernels" % g.sid)["items"]
        self.assertEqual([(k["name"], k["mangled"]) for k in ks], [(ADD[0], ADD[0])] * 2)
        self.assertEqual([k["tid"] for k in ks], [None, None])
        self.assertEqual([k["launch_ns"] for k in ks], [3000, 5000])
        self.assertEqual(srv2.sql("SELECT count(*) FROM klong"), [["1"]])
        self.assertEqual(srv2.sql("SELECT api_lo, api_hi FROM sessions"),
                         [["2000", "5000"]])


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
        for lo, hi, width in ((ts[0], ts[-1] + 1, 300), (ts[10], ts[200], 977),
                              (ts[0] - 5, ts[0] + 10 ** 7, 10)):
            want = [c for c in self.calls if in_range(c, lo, hi)]
            r = self.srv.get(self.base + "/calls?from=%d&to=%d&width=%d&limit=5"
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


if __name__ == "__main__":
    unittest.main()
