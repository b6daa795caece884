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


if __name__ == "__main__":
    unittest.main()
