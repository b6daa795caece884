"""test_server.py - gpufl-server over real HTTP on 127.0.0.1, fed with real
logs from the client's programs; every answer is checked against what an
independent reader (tests/client/gpufl_logs.py) finds in those logs.

Run one class per ctest test: python3 test_server.py Query
"""
import bisect
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

import srvtest as T

gl = T.gl


def exact_quantile(vals, q):
    v = sorted(vals)
    return v[int(q * (len(v) - 1))]


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self._testMethodName + ".", dir=T.TMP)
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s.stop(check=False) if s.p.poll() is None else None
        shutil.rmtree(self.dir, ignore_errors=True)

    def server(self, name="data", args=(), **kw):
        s = T.Server(os.path.join(self.dir, name), args, **kw)
        self.servers.append(s)
        return s


class Query(Base):
    """Ingest real logs, then check every query endpoint against them."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="query.", dir=T.TMP)
        # two GPUs, 10 ms system samples, rotation so dicts repeat per file
        env = {"GPUFL_SIM_DEVICES": "2", "GPUFL_SYSTEM_INTERVAL_MS": "10",
               "GPUFL_ROTATE_BYTES": "400000"}
        cls.train = list(T.make_logs(os.path.join(cls.tmp, "a"), "train", 40,
                                     env).values())[0]
        cls.train2 = list(T.make_logs(os.path.join(cls.tmp, "b"), "train", 20,
                                      {"GPUFL_SIM_SEED": "7"}).values())[0]
        cls.work = list(T.make_logs(os.path.join(cls.tmp, "c"), "workload",
                                    150).values())[0]
        cls.srv = T.Server(os.path.join(cls.tmp, "data"))
        # runs even when the rest of setUpClass fails (tearDownClass would not)
        cls.addClassCleanup(cls.srv.kill)
        cls.sent = T.send_session(cls.srv, cls.train, batch=700, enc=None)
        T.send_session(cls.srv, cls.train2, batch=3000, enc="gzip")
        T.send_session(cls.srv, cls.work, batch=100000, enc="zstd")
        if os.environ.get("GPUFL_TEST_KB_COMPACTED"):
            cls.wait_compacted()

    @classmethod
    def wait_compacted(cls):
        """GPUFL_TEST_KB_COMPACTED (server.cmake's *_http_QueryCompacted,
        with --kernel-compact-interval=1s): the tests read the blocks the
        compactor merged, not ingest's small ones (which the other run of
        the class reads: it starts before the compactor's first pass)."""
        assert T.kernel_store() == "blocks", T.SERVER_ARGS
        # ingest writes a block per batch and stream: train's, sent 700
        # lines a batch, hold 700 kernels at most until merged
        q = ("SELECT count(*), (SELECT max(n) FROM kblocks WHERE sess=(SELECT"
             " id FROM sessions WHERE sid='%s')) FROM kblocks" % cls.train.sid)
        last, since, deadline = None, time.time(), time.time() + 120
        # settled: train's merged, then no change for over two of the
        # compactor's 1 s passes
        while time.time() < deadline:
            n = cls.srv.sql(q)[0]
            if n != last:
                last, since = n, time.time()
            elif int(n[1] or 0) > 700 and time.time() - since > 2.5:
                break
            time.sleep(0.1)
        assert int(last[1] or 0) > 700, "the compactor merged nothing: %s" % last

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        pass

    def tearDown(self):
        pass

    def kernels(self, sess):
        dev = sess.streams["device"]
        out = []
        for e in dev.of("kernel"):
            name = sess.name(sess.launch(e["cfg"])["name"]) if e.get("cfg") \
                else sess.name(e["name"])
            out.append((e["seq"], e["ts"], e["dur"], name, e))
        return out

    def test_kernel_store(self):
        """The kernels are at rest where the suite's store puts them: the
        default run tests blocks, and a run with --kernel-store=rows
        (GPUFL_TEST_SERVER_ARGS, server.cmake's server_rows_* entries)
        tests rows, not the default by mistake."""
        rows, blocks = self.srv.sql("SELECT (SELECT count(*) FROM kernels),"
                                    " (SELECT count(*) FROM kblocks)")[0]
        store = T.kernel_store()
        self.assertIn(store, ("rows", "blocks"))
        if store == "blocks":
            self.assertEqual((rows, blocks != "0"), ("0", True))
        else:
            self.assertEqual((rows != "0", blocks), (True, "0"))

    def test_counts(self):
        s = self.train
        n = sum(len(st.events) for st in s.streams.values())
        self.assertEqual(self.sent, {"accepted": n, "duplicate": 0, "rejected": 0})
        d = self.srv.get("/api/v1/sessions/" + s.sid)
        dev = s.streams["device"]
        self.assertEqual(d["counts"]["lines"], n)
        self.assertEqual(d["counts"]["kernels"], len(dev.of("kernel")))
        self.assertEqual(d["counts"]["ops"], len(dev.of("memcpy", "memset", "sync",
                                                        "alloc", "free")))
        self.assertEqual(d["counts"]["scopes"], len(s.streams["scope"].of("scope_end")))
        self.assertEqual(d["counts"]["samples"], len(s.streams["system"].of("gpu", "host")))
        self.assertEqual(d["counts"]["profile"], len(s.streams["scope"].of("sass", "pcsamp")))
        self.assertEqual(d["state"], "ended")
        self.assertEqual(d["streams_ended"], ["device", "scope", "system"])
        # every line stored: no gaps, each stream up to its session_end
        self.assertEqual(d["missing"], 0)
        for st in T.STREAMS:
            ev = s.streams[st].events
            self.assertEqual(ev[-1]["type"], "session_end")
            self.assertEqual(d["gaps"][st], {"count": 0, "ranges": [],
                                             "ranges_cut": False,
                                             "last_seq": ev[-1]["lines"] - 1})
        self.assertEqual(d["app"], s.header["app"])
        self.assertEqual(d["host"], s.header["host"])
        self.assertEqual(d["devices"], s.header["devices"])
        self.assertEqual(d["engines"], s.header["engines"])
        self.assertTrue(d["simulated"])
        self.assertEqual(d["start_ns"], s.header["start"])

    def test_duplicates(self):
        again = T.send_session(self.srv, self.train, batch=1000)
        n = sum(len(st.events) for st in self.train.streams.values())
        self.assertEqual(again, {"accepted": 0, "duplicate": n, "rejected": 0})
        d = self.srv.get("/api/v1/sessions/" + self.train.sid)
        self.assertEqual(d["counts"]["lines"], n)
        agg = self.srv.get("/api/v1/sessions/%s/kernels/aggregate?limit=1000" % self.train.sid)
        self.assertEqual(sum(i["count"] for i in agg["items"]),
                         len(self.train.streams["device"].of("kernel")))

    def test_aggregate_pages(self):
        """The aggregate by name in pages of every size, following the
        cursors: the whole list's rows in its order, each once, the last
        page without a cursor (each page reads its own rows: LIMIT and
        OFFSET in agg_load)."""
        for s in (self.train, self.work):
            p = "/api/v1/sessions/%s/kernels/aggregate" % s.sid
            full = self.srv.get(p + "?limit=1000")
            self.assertIsNone(full.get("next"))
            n = len(full["items"])
            self.assertGreater(n, 3)
            for lim in (1, 2, 3, n - 1, n, n + 1):
                self.assertEqual(T.page_all(self.srv, p, lim), full["items"],
                                 (s.sid, lim))
            one = self.srv.get(p + "?limit=%d" % (n - 1))
            self.assertIsNotNone(one.get("next"))
            self.assertEqual(self.srv.get(p + "?limit=%d" % n).get("next"),
                             None)

    def test_kernels_page_all(self):
        for s in (self.train, self.work):
            want = {k[0]: k for k in self.kernels(s)}
            got = T.page_all(self.srv, "/api/v1/sessions/%s/kernels" % s.sid, 333)
            self.assertEqual(len(got), len(want))
            self.assertEqual([g["ts"] for g in got], sorted(g["ts"] for g in got))
            for g in got:
                seq, ts, dur, name, e = want[g["kid"]]
                self.assertEqual((g["ts"], g["dur"], g["mangled"]), (ts, dur, name))
                nid = s.launch(e["cfg"])["name"] if e.get("cfg") else e["name"]
                self.assertEqual(g["name"], s.display(nid))
                self.assertEqual(g["stream"], e.get("stream", 0))
                self.assertEqual(g["dev"], e.get("dev", 0))
                grid = e["grid"] + [1] * (3 - len(e["grid"]))
                self.assertEqual(g["grid"], grid)

    def test_kernels_sort_filter_range(self):
        s = self.train
        ks = self.kernels(s)
        got = T.page_all(self.srv, "/api/v1/sessions/%s/kernels?sort=duration&desc=true" % s.sid, 500)
        self.assertEqual([g["dur"] for g in got], sorted((k[2] for k in ks), reverse=True))
        asc = T.page_all(self.srv, "/api/v1/sessions/%s/kernels?sort=duration" % s.sid, 500)
        self.assertEqual([g["dur"] for g in asc], sorted(k[2] for k in ks))
        name = ks[0][3]
        frag = name[5:25]
        got = T.page_all(self.srv, "/api/v1/sessions/%s/kernels?name=%s" % (s.sid, frag))
        self.assertEqual(len(got), sum(1 for k in ks if frag in k[3]))
        ts = sorted(k[1] for k in ks)
        lo, hi = ts[len(ts) // 4], ts[len(ts) // 2]
        got = T.page_all(self.srv, "/api/v1/sessions/%s/kernels?from=%d&to=%d" % (s.sid, lo, hi))
        self.assertEqual(len(got), sum(1 for t in ts if lo <= t < hi))

    def test_kernel_detail(self):
        s = self.train
        scopes = {e["id"]: e for e in s.streams["scope"].of("scope_begin")}
        for seq, ts, dur, name, e in self.kernels(s)[::97]:
            d = self.srv.get("/api/v1/sessions/%s/kernels/%d" % (s.sid, seq))
            l = s.launch(e["cfg"])
            self.assertEqual(d["mangled"], name)
            self.assertEqual(d["name"], s.display(l["name"]))
            self.assertEqual(d["regs"], l["regs"])
            self.assertEqual(d["block"], l["block"] + [1] * (3 - len(l["block"])))
            self.assertEqual(d["smem"], l.get("smem", 0) + l.get("dsmem", 0))
            self.assertAlmostEqual(d["occ"], l["occ"], places=4)
            self.assertEqual(d["end"], ts + dur)
            self.assertEqual(d["api_dur"], e["api"][1])
            if e.get("scope"):
                self.assertEqual(d["path"], s.path(scopes[e["scope"]]["path"]))
        st, _, _ = self.srv.req("GET", "/api/v1/sessions/%s/kernels/999999999" % s.sid)
        self.assertEqual(st, 404)

    def test_aggregate(self):
        s = self.train
        by = {}
        for seq, ts, dur, name, e in self.kernels(s):
            by.setdefault(name, []).append(dur)
        agg = self.srv.get("/api/v1/sessions/%s/kernels/aggregate?limit=1000" % s.sid)
        self.assertEqual(len(agg["items"]), len(by))
        for it in agg["items"]:
            v = by[it["mangled"]]
            self.assertEqual(it["count"], len(v))
            self.assertEqual(it["total_ns"], sum(v))
            self.assertEqual(it["min_ns"], min(v))
            self.assertEqual(it["max_ns"], max(v))
            for q, k in ((0.5, "p50_ns"), (0.99, "p99_ns")):
                ex = exact_quantile(v, q)
                self.assertLessEqual(abs(it[k] - ex), ex * 0.0325 + 1, (it["name"], k))
        totals = [i["total_ns"] for i in agg["items"]]
        self.assertEqual(totals, sorted(totals, reverse=True))

    def test_timeline(self):
        s = self.train
        ks = self.kernels(s)
        tl = self.srv.get("/api/v1/sessions/%s/timeline?width=800" % s.sid)
        n = sum(b[1] for lane in tl["lanes"] for b in lane["buckets"])
        busy = sum(b[2] for lane in tl["lanes"] for b in lane["buckets"])
        self.assertEqual(n, len(ks))
        self.assertEqual(busy, sum(k[2] for k in ks))
        lanes = {(k[4].get("dev", 0), k[4].get("stream", 0)) for k in ks}
        self.assertEqual({(l["dev"], l["stream"]) for l in tl["lanes"]}, lanes)
        for lane in tl["lanes"]:
            for b in lane["buckets"]:
                self.assertIn(str(b[3]), tl["names"])
        # zoomed below the finest rollup level: raw kernels
        t0 = sorted(k[1] for k in ks)[len(ks) // 2]
        z = self.srv.get("/api/v1/sessions/%s/timeline?from=%d&to=%d&width=1000"
                         % (s.sid, t0, t0 + 2000000))
        self.assertEqual(z["level"], "raw")
        self.assertEqual(sum(b[1] for l in z["lanes"] for b in l["buckets"]),
                         sum(1 for k in ks if t0 <= k[1] < t0 + 2000000))
        # every zoom level counts the kernels starting in range
        for width in (3, 50, 5000):
            r = self.srv.get("/api/v1/sessions/%s/timeline?width=%d" % (s.sid, width))
            self.assertEqual(sum(b[1] for l in r["lanes"] for b in l["buckets"]), len(ks))

    def test_copies(self):
        s = self.train
        ops = s.streams["device"].of("memcpy", "memset", "sync", "alloc", "free")
        got = T.page_all(self.srv, "/api/v1/sessions/%s/copies" % s.sid, 7)
        self.assertEqual(sorted(g["seq"] for g in got), sorted(o["seq"] for o in ops))
        r = self.srv.get("/api/v1/sessions/%s/copies?kind=memcpy&limit=1000" % s.sid)
        agg = {(a["type"], a["kind"]): a for a in r["aggregate"]}
        cps = s.streams["device"].of("memcpy")
        self.assertEqual(len(r["items"]), len(cps))
        for kind in {c["kind"] for c in cps}:
            cs = [c for c in cps if c["kind"] == kind]
            a = agg[("memcpy", kind)]
            self.assertEqual(a["count"], len(cs))
            self.assertEqual(a["bytes"], sum(c["bytes"] for c in cs))
            self.assertEqual(a["dur_ns"], sum(c["dur"] for c in cs))

    def test_scopes(self):
        for s in (self.train, self.work):
            sc = s.streams["scope"]
            begins = {e["id"]: e for e in sc.of("scope_begin")}
            want = {}
            for e in sc.of("scope_end"):
                w = want.setdefault(s.path(e["path"]), [0, 0, 0, 0])
                w[0] += 1
                w[1] += e["dur"]
            for k in s.streams["device"].of("kernel"):
                if k.get("scope"):
                    w = want.setdefault(s.path(begins[k["scope"]]["path"]), [0, 0, 0, 0])
                    w[2] += 1
                    w[3] += k["dur"]
            got = {}

            def walk(nodes):
                for n in nodes:
                    got[n["path"]] = [n["instances"], n["total_ns"], n["kernels"], n["gpu_ns"]]
                    kids = sum(c["total_ns"] for c in n["children"])
                    self.assertEqual(n["self_ns"], max(0, n["total_ns"] - kids))
                    self.assertEqual(n["kernels_total"],
                                     n["kernels"] + sum(c["kernels_total"] for c in n["children"]))
                    walk(n["children"])
            walk(self.srv.get("/api/v1/sessions/%s/scopes" % s.sid)["items"])
            self.assertEqual({k: v for k, v in got.items() if any(v)}, want)

    def test_profile(self):
        s = self.train
        sc = s.streams["scope"]
        stalls = {}
        for p in sc.of("pcsamp"):
            for k, v in p["stalls"].items():
                stalls[k] = stalls.get(k, 0) + v
        r = self.srv.get("/api/v1/sessions/%s/profile" % s.sid)
        self.assertEqual({x["reason"]: x["samples"] for x in r["stalls"]}, stalls)
        inst = {}
        for x in sc.of("sass"):
            f = (s.display(x["func"]), s.name(x["func"]))
            inst[f] = inst.get(f, 0) + x["inst"]
        self.assertEqual({(f["function"], f["function_mangled"]): f["inst"]
                          for f in r["functions"] if f["inst"]}, inst)
        # the display names are readable: a mangled C++ function shows
        # demangled (the simulated flash-attention kernel is one)
        self.assertTrue(any(f["function_mangled"].startswith("_Z") and
                            not f["function"].startswith("_Z")
                            for f in r["functions"]), r["functions"])
        # per scope path
        path = s.path(sc.of("sass")[0]["path"])
        r2 = self.srv.get("/api/v1/sessions/%s/profile?path=%s" % (s.sid, path))
        want = sum(x["inst"] for x in sc.of("sass") if s.path(x["path"]) == path)
        self.assertEqual(sum(f["inst"] for f in r2["functions"]), want)
        st, _, _ = self.srv.req("GET", "/api/v1/sessions/%s/profile?path=no/such" % s.sid)
        self.assertEqual(st, 404)

    def test_system(self):
        s = self.train
        samples = s.streams["system"].of("gpu", "host")
        r = self.srv.get("/api/v1/sessions/%s/system?points=5000" % s.sid)
        by = {}
        for x in samples:
            by.setdefault("host" if x["type"] == "host" else "gpu%d" % x.get("dev", 0), []).append(x)
        self.assertEqual({x["src"] for x in r["series"]}, set(by))
        for ser in r["series"]:
            xs = by[ser["src"]]
            self.assertEqual(sum(p["n"] for p in ser["points"]), len(xs))
        # downsampled to 4 points: min/max over all equals the logs'
        r = self.srv.get("/api/v1/sessions/%s/system?points=4&src=gpu1&fields=util,temp" % s.sid)
        self.assertEqual(len(r["series"]), 1)
        pts = r["series"][0]["points"]
        self.assertLessEqual(len(pts), 4)
        g1 = [x for x in samples if x["type"] == "gpu" and x.get("dev", 0) == 1]
        self.assertEqual(min(p["util"][0] for p in pts), min(x["util"] for x in g1))
        self.assertEqual(max(p["util"][1] for p in pts), max(x["util"] for x in g1))
        self.assertNotIn("power", pts[0])
        st, _, _ = self.srv.req("GET", "/api/v1/sessions/%s/system?fields=nope" % s.sid)
        self.assertEqual(st, 400)

    def test_sessions_hosts_compare(self):
        all_ = T.page_all(self.srv, "/api/v1/sessions", 1)
        sids = [x["id"] for x in all_]
        self.assertEqual(sorted(sids), sorted({self.train.sid, self.train2.sid, self.work.sid}))
        starts = [x["start_ns"] for x in all_]
        self.assertEqual(starts, sorted(starts, reverse=True))
        r = self.srv.get("/api/v1/sessions?app=prog_workload")
        self.assertEqual([x["id"] for x in r["items"]], [self.work.sid])
        r = self.srv.get("/api/v1/sessions?search=example_tr")
        self.assertEqual(len(r["items"]), 2)
        r = self.srv.get("/api/v1/sessions?state=running")
        self.assertEqual(r["items"], [])
        r = self.srv.get("/api/v1/sessions?host=%s&state=ended" % self.train.header["host"])
        self.assertEqual(len(r["items"]), 3)
        h = self.srv.get("/api/v1/hosts")
        self.assertEqual(h["items"][0]["host"], self.train.header["host"])
        self.assertEqual(h["items"][0]["sessions"], 3)
        c = self.srv.get("/api/v1/compare?a=%s&b=%s&limit=1000" % (self.train.sid, self.train2.sid))
        names = {k[3] for k in self.kernels(self.train)} | {k[3] for k in self.kernels(self.train2)}
        self.assertEqual({i["mangled"] for i in c["items"]}, names)
        for i in c["items"]:
            n2 = sum(1 for k in self.kernels(self.train2) if k[3] == i["mangled"])
            self.assertEqual(i["b"]["count"] if i["b"] else 0, n2)
        st, _, _ = self.srv.req("GET", "/api/v1/sessions/00000000-0000-4000-8000-000000000000")
        self.assertEqual(st, 404)
        st, _, _ = self.srv.req("GET", "/api/v1/sessions?cursor=garbage")
        self.assertEqual(st, 400)

    def test_numbers_read_exactly_as_doubles(self):
        """docs/api.md "Numbers": every answer reads the same through
        doubles (what JavaScript's JSON.parse does) as exactly, and each
        ns time, duration, byte and instruction count is a decimal string
        whatever its value - checked on the raw text, not through
        srv.get."""
        s, w = self.train, self.work
        kid = self.kernels(s)[0][0]
        paths = ["/api/v1/hosts", "/api/v1/sessions", "/api/v1/sessions/" + s.sid]
        paths += ["/api/v1/sessions/%s/%s" % (x.sid, q) for x in (s, w) for q in (
            "kernels?limit=1000", "kernels?sort=duration", "kernels/aggregate",
            "timeline?width=700", "timeline?width=10000&from=%d&to=%d" % (
                x.streams["device"].events[0]["ts"],
                x.streams["device"].events[0]["ts"] + 100000),
            "copies?limit=1000", "scopes", "profile", "system?points=50")]
        paths += ["/api/v1/sessions/%s/kernels/%d" % (s.sid, kid),
                  "/api/v1/compare?a=%s&b=%s" % (s.sid, self.train2.sid),
                  "/api/v1/memory", "/api/v1/memory/profiles", "/api/v1/fleet",
                  "/api/v1/verdicts", "/api/v1/keys"]

        def same(a, b, where):
            if isinstance(a, dict):
                self.assertEqual(a.keys(), b.keys(), where)
                for k in a:
                    same(a[k], b[k], where + "." + k)
            elif isinstance(a, list):
                self.assertEqual(len(a), len(b), where)
                for i, (x, y) in enumerate(zip(a, b)):
                    same(x, y, "%s[%d]" % (where, i))
            elif isinstance(a, int) and not isinstance(a, bool):
                self.assertEqual(int(b), a, where + ": rounded through a double")
            else:
                self.assertEqual(a, b, where)
        strings = 0
        for p in paths:
            st, _, data = self.srv.req("GET", p)
            self.assertEqual(st, 200, p)
            same(json.loads(data), json.loads(data, parse_int=float), p)
            T.api_json(data)  # every member of docs/api.md's list a string
            strings += len(re.findall(rb'"(ts|dur|t|total_ns|bytes)":"[0-9]+"', data))
        self.assertGreater(strings, 1000)
        # one kernel as the log has it: ns as strings, ids as numbers
        e = s.streams["device"].of("kernel")[0]
        st, _, data = self.srv.req("GET", "/api/v1/sessions/%s/kernels/%d" % (s.sid, e["seq"]))
        self.assertIn(('"kid":%d,"ts":"%d","dur":"%d"' % (e["seq"], e["ts"], e["dur"])).encode(), data)


# (method, path, role that may call it; None = no token needed)
def endpoints(sid):
    return [
        ("GET", "/healthz", None), ("GET", "/readyz", None),
        ("GET", "/metrics", "read"),
        ("POST", "/api/v1/events/device", "ingest"),
        ("POST", "/api/v1/events/scope", "ingest"),
        ("POST", "/api/v1/events/system", "ingest"),
        ("GET", "/api/v1/hosts", "read"), ("GET", "/api/v1/sessions", "read"),
        ("GET", "/api/v1/sessions/" + sid, "read"),
        ("GET", "/api/v1/sessions/%s/kernels" % sid, "read"),
        ("GET", "/api/v1/sessions/%s/kernels/aggregate" % sid, "read"),
        ("GET", "/api/v1/sessions/%s/kernels/1" % sid, "read"),
        ("GET", "/api/v1/sessions/%s/timeline" % sid, "read"),
        ("GET", "/api/v1/sessions/%s/calls" % sid, "read"),
        ("GET", "/api/v1/sessions/%s/export" % sid, "read"),
        ("GET", "/api/v1/sessions/%s/copies" % sid, "read"),
        ("GET", "/api/v1/sessions/%s/scopes" % sid, "read"),
        ("GET", "/api/v1/sessions/%s/profile" % sid, "read"),
        ("GET", "/api/v1/sessions/%s/system" % sid, "read"),
        ("GET", "/api/v1/compare?a=%s&b=%s" % (sid, sid), "read"),
        ("GET", "/api/v1/jobs", "read"),
        ("GET", "/api/v1/regressions", "read"),
        ("GET", "/api/v1/sessions/%s/regressions" % sid, "read"),
        ("PUT", "/api/v1/sessions/%s/keep" % sid, "admin"),
        ("GET", "/api/v1/keys", "admin"), ("POST", "/api/v1/keys", "admin"),
        ("DELETE", "/api/v1/keys/999", "admin"),
        ("POST", "/api/v1/admin/retention", "admin"),
        # capture requests; the host-bound routes: test_capture.py
        ("GET", "/api/v1/captures", "read"),
        ("POST", "/api/v1/hosts/node-7/captures", "admin"),
    ]


class Auth(Base):
    def test_matrix_and_keys(self):
        logs = T.make_logs(os.path.join(self.dir, "logs"), "workload", 5)
        sess = list(logs.values())[0]
        srv = self.server()
        T.send_session(srv, sess)
        keys = {}
        for role in ("ingest", "read", "admin"):
            st, _, data = srv.req("POST", "/api/v1/keys",
                                  json.dumps({"name": "k-" + role, "role": role}))
            self.assertEqual(st, 201, data)
            keys[role] = json.loads(data)["key"]
        tokens = {"none": None, "bad": "not-a-key", "ingest": keys["ingest"],
                  "read": keys["read"], "admin": keys["admin"], "root": T.ADMIN}
        line = T.stream_lines(sess, "system")[0] + b"\n"
        for method, path, need in endpoints(sess.sid):
            for who, tok in tokens.items():
                body = None
                h = {}
                if path.startswith("/api/v1/events/"):
                    body, h = line.replace(b'"st":"system"', ('"st":"%s"' % path.split("/")[-1]).encode()), \
                        {"Content-Type": "application/x-ndjson"}
                elif path.endswith("/keep"):
                    body = b'{"keep": false}'
                elif method == "POST" and path.endswith("/keys"):
                    body = b'{"name":"x","role":"read"}'
                st, hdr, data = srv.req(method, path, body, token=tok, headers=h)
                if need is None:
                    ok = st == 200
                elif who in ("none", "bad"):
                    ok = st == 401 and hdr.get("WWW-Authenticate") == "Bearer"
                elif who in ("admin", "root") or who == need:
                    ok = st not in (401, 403)
                else:
                    ok = st == 403
                self.assertTrue(ok, "%s %s as %s -> %d %s" % (method, path, who, st, data[:200]))
                self.assertNotIn("Access-Control-Allow-Origin", hdr)
        # list shows prefixes and last use, never secrets
        lst = srv.get("/api/v1/keys")
        body = json.dumps(lst)
        for k in keys.values():
            self.assertNotIn(k, body)
        rk = [k for k in lst["items"] if k["name"] == "k-read"][0]
        self.assertTrue(keys["read"].startswith(rk["prefix"]))
        self.assertIsNotNone(rk["last_used"])
        # revoke: the key stops working
        st, _, _ = srv.req("DELETE", "/api/v1/keys/%d" % rk["id"])
        self.assertEqual(st, 200)
        st, _, _ = srv.req("GET", "/api/v1/sessions", token=keys["read"])
        self.assertEqual(st, 401)
        st, _, _ = srv.req("DELETE", "/api/v1/keys/%d" % rk["id"])
        self.assertEqual(st, 404)
        # only hashes in the database
        srv.stop()
        rows = srv.sql("SELECT * FROM keys")
        hashes = {r[4] for r in rows}
        self.assertIn(hashlib.sha256(keys["admin"].encode()).hexdigest(), hashes)
        for k in keys.values():
            self.assertNotIn(k, json.dumps(rows))
        if not srv.pgdb:
            with open(os.path.join(srv.data_dir, "gpufl.db"), "rb") as f:
                raw = f.read()
            for k in keys.values():
                self.assertNotIn(k.encode(), raw)

    def test_generated_admin_token_and_cli_keys(self):
        d = os.path.join(self.dir, "gen")
        srv = T.Server(d, admin=None)
        self.servers.append(srv)
        out = srv.output()
        tok = [l for l in out.splitlines() if l.startswith("gfa_")]
        self.assertEqual(len(tok), 1, out)
        tok = tok[0]
        with open(os.path.join(d, "admin_token.sha256")) as f:
            h = f.read().strip()
        self.assertEqual(h, hashlib.sha256(tok.encode()).hexdigest())
        st, _, _ = srv.req("GET", "/api/v1/sessions", token=tok)
        self.assertEqual(st, 200)
        # the CLI makes keys in the same database, the server accepts them
        p = subprocess.run([T.SERVER, "keys", "create", "--data-dir", d, "--role",
                            "read", "--name", "cli"] + srv.db_args(), stdout=subprocess.PIPE,
                           text=True, env=T.clean_env(), check=True)
        key = p.stdout.strip().splitlines()[-1]
        self.assertTrue(key.startswith("gfk_"))
        st, _, _ = srv.req("GET", "/api/v1/sessions", token=key)
        self.assertEqual(st, 200)
        st, _, _ = srv.req("POST", "/api/v1/events/device", b"", token=key,
                           headers={"Content-Type": "application/x-ndjson"})
        self.assertEqual(st, 403)
        p = subprocess.run([T.SERVER, "keys", "list", "--data-dir", d] + srv.db_args(),
                           stdout=subprocess.PIPE, text=True, env=T.clean_env(), check=True)
        self.assertIn("cli", p.stdout)
        self.assertNotIn(key, p.stdout)
        kid = p.stdout.splitlines()[1].split()[0]
        subprocess.run([T.SERVER, "keys", "revoke", kid, "--data-dir", d] + srv.db_args(),
                       stdout=subprocess.PIPE, env=T.clean_env(), check=True)
        st, _, _ = srv.req("GET", "/api/v1/sessions", token=key)
        self.assertEqual(st, 401)
        srv.stop()
        # a restart reuses the stored hash and prints no new token
        srv2 = T.Server(d, admin=None)
        self.servers.append(srv2)
        self.assertNotIn("gfa_", srv2.output())
        st, _, _ = srv2.req("GET", "/api/v1/hosts", token=tok)
        self.assertEqual(st, 200)
        srv2.stop()
        # usage errors exit 2 with a hint
        p = subprocess.run([T.SERVER, "--listne", "x"], stderr=subprocess.PIPE,
                           text=True, env=T.clean_env())
        self.assertEqual(p.returncode, 2)
        self.assertIn("did you mean '--listen'", p.stderr.replace("'listen'", "'--listen'"))
        p = subprocess.run([T.SERVER, "--help"], stdout=subprocess.PIPE, text=True,
                           env=T.clean_env())
        self.assertEqual(p.returncode, 0)
        for o in ("--listen", "--data-dir", "--db", "--admin-token", "GPUFL_SERVER_ADMIN_TOKEN"):
            self.assertIn(o, p.stdout)

    def test_env_and_config_file(self):
        d = os.path.join(self.dir, "cfg")
        cfg = os.path.join(self.dir, "server.conf")
        with open(cfg, "w") as f:
            f.write("# test\nadmin-token = from-file-0123456789abcdef0123456789\nmax-body = 2K\n")
        srv = T.Server(d, ["--config", cfg], admin=None,
                       env={"GPUFL_SERVER_ADMIN_TOKEN": "from-env-0123456789abcdef0123456789"})
        self.servers.append(srv)
        st, _, _ = srv.req("GET", "/api/v1/hosts", token="from-file-0123456789abcdef0123456789")
        self.assertEqual(st, 401)
        st, _, _ = srv.req("GET", "/api/v1/hosts", token="from-env-0123456789abcdef0123456789")
        self.assertEqual(st, 200)
        st, _, _ = srv.req("POST", "/api/v1/events/device", b"x" * 4096, token="from-env-0123456789abcdef0123456789",
                           headers={"Content-Type": "application/x-ndjson"})
        self.assertEqual(st, 413)
        srv.stop()
        srv = T.Server(d + "2", ["--config", cfg, "--cors-origin", "https://ui.example"],
                       admin="from-flag-0123456789abcdef0123456789", env={"GPUFL_SERVER_ADMIN_TOKEN": "from-env-0123456789abcdef0123456789"})
        self.servers.append(srv)
        st, hdr, _ = srv.req("GET", "/api/v1/hosts", token="from-flag-0123456789abcdef0123456789")
        self.assertEqual(st, 200)
        self.assertEqual(hdr.get("Access-Control-Allow-Origin"), "https://ui.example")
        srv.stop()

    def test_sqlite_writer_cache(self):
        """--sqlite-writer-cache (or its variable) reaches the writer's
        connection: /metrics says what PRAGMA cache_size reads back from it
        after the server set it; SQLite only (PostgreSQL has no such
        cache: no sample)."""
        name = "gpufl_server_sqlite_writer_cache_bytes"
        runs = [("default", [], None, 256 << 20),
                ("flag", ["--sqlite-writer-cache", "8M"], None, 8 << 20),
                ("env", [], {"GPUFL_SERVER_SQLITE_WRITER_CACHE": "3M"},
                 3 << 20)]
        for d, args, env, want in runs:
            srv = self.server(d, args, env=env)
            srv.ingest_ok("device", mkline("device", 0, "session", app="a",
                                           host="h"))
            self.assertEqual(T.metric(srv, name),
                             None if T.pg_base() else want, d)
            srv.stop()
        # outside 1 MiB .. 64 GiB: usage error naming the flag and range
        p = subprocess.run([T.SERVER, "--data-dir", os.path.join(self.dir, "x"),
                            "--sqlite-writer-cache", "100k"],
                           env=T.clean_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stdout)
        self.assertIn("--sqlite-writer-cache", p.stdout)
        self.assertIn("is out of range: a size from 1MiB to 64GiB", p.stdout)


def mkline(st, seq, typ, sid="11111111-2222-4333-8444-555555555555", **kw):
    d = {"v": 1, "sid": sid, "st": st, "seq": seq, "ts": 1000 + seq, "type": typ}
    d.update(kw)
    return json.dumps(d).encode()


KIND = "k'; DROP TABLE ops;--"


class Hostile(Base):
    def test_flight_recorder_dump(self):
        """A ring-mode dump (docs/recorder.md) is a session like any other;
        its trigger lines are kept and the session says it is a dump."""
        logs = os.path.join(self.dir, "ring")
        env = T.clean_env({"GPUFL_LOG_DIR": logs, "GPUFL_ENGINES": "host",
                           "GPUFL_RECORD": "ring:10s",
                           "GPUFL_TRIGGER_AFTER": "600ms",
                           "GPUFL_TRIGGERS": "signal,scope=slow>100ms"})
        # a signal, then a slow scope while the dump is live: two firings
        subprocess.run([os.path.join(T.BIN, "prog_ring"), "work:200", "usr2",
                        "work:20", "scope:slow:150", "work:20"], env=env,
                       check=True, timeout=120, stdout=subprocess.DEVNULL)
        (sess,) = T.gl.validate(logs).values()
        srv = self.server()
        tot = T.send_session(srv, sess)
        self.assertEqual(tot["rejected"], 0)
        got = srv.get("/api/v1/sessions/" + sess.sid)
        self.assertEqual((got["record"], got["dump"]), ("ring", 1))
        self.assertEqual(got["recorder"], sess.header["recorder"])
        self.assertEqual(got["state"], "ended")
        bodies = [r[0] for r in srv.sql("SELECT body FROM lines WHERE body"
                                        " LIKE '%\"type\":\"trigger\"%'")]
        self.assertEqual(len(bodies), 6)  # one per stream and firing
        self.assertEqual(sum('"trigger":"signal"' in b for b in bodies), 3)
        # the session's detail: each firing once, its window summed over
        # the streams (what the files say)
        trig = [ln for st in ("device", "scope", "system")
                for ln in sess.streams[st].of("trigger")]
        want_lines = sum(ln["window"]["lines"] for ln in trig
                         if "window" in ln)
        self.assertGreater(want_lines, 0)
        self.assertFalse(got["triggers_cut"])
        self.assertEqual([(t["trigger"], t["streams"], t["dump"])
                          for t in got["triggers"]],
                         [("signal", ["device", "scope", "system"], 1),
                          ("scope", ["device", "scope", "system"], 1)])
        first, second = got["triggers"]
        self.assertEqual(first["detail"], "SIGUSR2")
        self.assertEqual(first["ts"], trig[0]["ts"])
        self.assertEqual(first["window"]["lines"], want_lines)
        self.assertEqual(first["window"]["evicted"], 0)
        self.assertEqual(first["window"]["duration_ms"], 10000)
        self.assertIn("scope slow took", second["detail"])
        self.assertNotIn("window", second)
        self.assertEqual((got["trigger"]["count"], got["trigger"]["last"]),
                         (2, "scope"))
        # the list marks it: mode, dump number, what fired last
        (row,) = srv.get("/api/v1/sessions")["items"]
        self.assertEqual((row["record"], row["dump"]), ("ring", 1))
        self.assertEqual((row["trigger"]["count"], row["trigger"]["last"]),
                         (2, "scope"))
        # a session of file mode has no trigger
        flogs = os.path.join(self.dir, "file")
        subprocess.run([os.path.join(T.BIN, "prog_ring"), "work:20"],
                       env=T.clean_env({"GPUFL_LOG_DIR": flogs,
                                        "GPUFL_ENGINES": "host"}),
                       check=True, timeout=120, stdout=subprocess.DEVNULL)
        (fsess,) = T.gl.validate(flogs).values()
        T.send_session(srv, fsess)
        rows = {r["id"]: r for r in srv.get("/api/v1/sessions")["items"]}
        self.assertNotIn("trigger", rows[fsess.sid])
        self.assertNotIn("record", rows[fsess.sid])
        self.assertEqual(srv.get("/api/v1/sessions/" + fsess.sid)["triggers"],
                         [])

    def test_bad_lines(self):
        srv = self.server(args=["--max-body", "1M", "--max-decoded", "4M"])
        sid = "11111111-2222-4333-8444-555555555555"
        good = mkline("device", 0, "session", app="a", host="h")
        cases = [
            b'{"v":1,"sid":"' + sid.encode() + b'","st":"device","seq":1,"ts":5,"type":"kernel","dur":1,"name":1,"x":"\xff\xfe"}',
            b"[" * 100 + b"]" * 100,
            b'{"a":' * 80 + b"1" + b"}" * 80,
            mkline("device", 2, "kernel", dur=10 ** 30, name=1),
            mkline("device", 99999999999999999999999, "kernel", dur=1, name=1),
            mkline("scope", 3, "session", app="a", host="h"),
            mkline("device", 4, "nonsense"),
            mkline("device", 5, "gpu", dev=0),
            mkline("device", 6, "kernel", name=1),
            mkline("device", 7, "kernel", dur="12", name=1),
            mkline("device", 8, "kernel", dur=-5, name=1),
            mkline("device", 9, "memcpy", sid="not-a-uuid", kind="htod", bytes=1),
            b'{"v":2,"sid":"' + sid.encode() + b'","st":"device","seq":10,"ts":5,"type":"session","app":"a","host":"h"}',
            b"not json at all",
            mkline("device", 11, "dict", id=0, kind="name", name="x"),
            mkline("device", 12, "kernel", dur=1, name=1, grid=[1, 2, 3, 4]),
            b'{"v":1}' + b" " * 10 + b"x",
        ]
        body = good + b"\n" + b"\n".join(cases) + b"\n\n"
        st, r = srv.post("device", body)
        self.assertEqual(st, 200, r)
        self.assertEqual(r["accepted"], 1)
        self.assertEqual(r["rejected"], len(cases))
        self.assertEqual([e["line"] for e in r["errors"]], list(range(2, 2 + len(cases))))
        for e in r["errors"]:
            self.assertTrue(e["reason"])

    def test_ids_are_one_spelling(self):
        """Path ids and numeric arguments are digits only: " 1", "+2",
        "-1" and "" named keys 1, 2, 2^64-1 through strtoull."""
        srv = self.server()
        sid = "31111111-2222-4333-8444-555555555555"
        lines = [mkline("device", 0, "session", sid=sid, app="a", host="h"),
                 mkline("device", 1, "dict", sid=sid, id=1, kind="name", name="k"),
                 mkline("device", 2, "kernel", sid=sid, dur=5, name=1, grid=[1])]
        srv.ingest_ok("device", b"\n".join(lines))
        base = "/api/v1/sessions/%s/kernels/" % sid
        self.assertEqual(srv.get(base + "2")["name"], "k")
        for bad in ("+2", "%202", "2%20", "-2", "0x2", "2.0",
                    "99999999999999999999999"):
            st, _, _ = srv.req("GET", base + bad)
            self.assertEqual(st, 400, bad)
        for bad in ("+5", "%205", "-5", "5x"):
            st, _, _ = srv.req("GET", "/api/v1/sessions?limit=" + bad)
            self.assertEqual(st, 400, bad)
        for bad in ("+1", "%201", "-1"):
            st, _, _ = srv.req("DELETE", "/api/v1/keys/" + bad)
            self.assertEqual(st, 404, bad)
        st, _, _ = srv.req("GET", "/api/v1/sessions/%s/system?src=gpu+0" % sid)
        self.assertEqual(st, 400)

    def test_overflowing_durations(self):
        # a kernel or copy whose end (ts + dur) is past 2^63-1 ns is refused
        # with its reason and the rest of the batch stored (on PostgreSQL it
        # failed the whole request with 500, forever: "bigint out of
        # range"); durations whose sums overflow a rollup saturate it; the
        # refused lines are missing from the session's gaps; the same
        # answers on SQLite and PostgreSQL
        srv = self.server()
        sid = "31111111-2222-4333-8444-555555555555"
        t0, big, top = 1795995293491406088, 4700000000000000000, 2 ** 63 - 1

        def k(seq, typ="kernel", **kw):
            return mkline("device", seq, typ, sid=sid, ts=t0 + 10 * seq, **kw)
        lines = [k(0, "session", app="a", host="h"),
                 k(1, "dict", id=1, kind="name", name="big"),
                 k(2, dur=10, name=1),
                 k(3, dur=top, name=1),
                 k(4, dur=big, name=1),
                 k(5, dur=big, name=1),
                 k(6, "memcpy", kind="htod", bytes=1, dur=2 ** 63 - t0)]
        r = srv.ingest_ok("device", b"\n".join(lines))
        self.assertEqual((r["accepted"], r["rejected"]), (5, 2), r)
        self.assertEqual([e["line"] for e in r["errors"]], [4, 7])
        for e in r["errors"]:
            self.assertIn("ts + dur exceeds 2^63-1", e["reason"])
        r = srv.ingest_ok("device", k(7, dur=big, name=1))
        self.assertEqual(r["accepted"], 1, r)
        agg = srv.get("/api/v1/sessions/%s/kernels/aggregate" % sid)["items"]
        self.assertEqual([(a["name"], a["count"], a["total_ns"], a["max_ns"])
                          for a in agg], [("big", 4, top, big)])
        tl = srv.get("/api/v1/sessions/%s/timeline?width=100" % sid)
        busy = [b[2] for ln in tl["lanes"] for b in ln["buckets"]]
        self.assertTrue(busy and min(busy) >= 0 and max(busy) <= top, tl)
        # the long kernels occupy every column, each spread exactly (the
        # rollup could not: its first bucket's sum saturated)
        lo, hi, bw = tl["from"], tl["to"], tl["bucket_ns"]
        ks = [(t0 + 40, big), (t0 + 50, big), (t0 + 70, big)]
        self.assertEqual(len(busy), 100)
        for p in range(1, 100):
            c0, c1 = lo + p * bw, min(lo + (p + 1) * bw, hi)
            self.assertEqual(busy[p], sum(max(0, min(a + d, c1) - max(a, c0))
                                          for a, d in ks), p)
        self.assertEqual(sum(b[1] for ln in tl["lanes"] for b in ln["buckets"]), 4)
        self.assertEqual(srv.get("/api/v1/sessions/%s/kernels/7" % sid)["end"],
                         t0 + 70 + big)
        d = srv.get("/api/v1/sessions/" + sid)
        self.assertEqual(d["last_ts"], t0 + 70 + big)
        self.assertEqual(d["missing"], 2)
        self.assertEqual(d["gaps"], {"device": {"count": 2, "ranges": [[3, 3], [6, 6]],
                                                "ranges_cut": False, "last_seq": 7}})
        m = srv.req("GET", "/metrics")[2].decode()
        self.assertIn('gpufl_server_lines_missing{stream="device"} 2\n', m)
        srv.stop()

    def test_seqs_at_2_63(self):
        """Seqs are the database's signed 64-bit integers: up to 2^63-1 a
        kernel or op is stored and read back exactly, through the
        duplicate checks of rows and blocks alike (a replay stores
        nothing twice); 2^63 and up is refused with its reason and counted
        as rejected, never stored as a negative seq, dropped unsaid or
        taken for a duplicate."""
        srv = self.server()
        sid = "41111111-2222-4333-8444-555555555555"
        top = 2 ** 63 - 1
        t0 = 1795995293491406088

        def ln(seq, typ, **kw):
            d = {"v": 1, "sid": sid, "st": "device", "seq": seq,
                 "ts": t0 + (seq % 1000), "type": typ}
            d.update(kw)
            return json.dumps(d).encode()

        def k(seq):
            return ln(seq, "kernel", dur=5, name=1)

        def cp(seq):
            return ln(seq, "memcpy", kind="htod", bytes=8, dur=3)
        good = [ln(0, "session", app="a", host="h"),
                ln(1, "dict", id=1, kind="name", name="k"),
                cp(top - 3), k(top - 2), cp(top - 1), k(top)]
        bad = [k(top + 1), cp(top + 1), k(2 ** 64 - 1), cp(2 ** 64 - 1),
               b'{"v":1,"sid":"%s","st":"device","seq":%d,"ts":%d,'
               b'"type":"kernel","dur":5,"name":1}' % (sid.encode(),
                                                        2 ** 64, t0)]
        body = b"\n".join(good + bad)
        r = srv.ingest_ok("device", body)
        self.assertEqual((r["accepted"], r["duplicate"], r["rejected"]),
                         (len(good), 0, len(bad)), r)
        self.assertEqual([e["line"] for e in r["errors"]],
                         list(range(len(good) + 1, len(good) + len(bad) + 1)))
        for e in r["errors"]:
            self.assertIn("seq", e["reason"])
        # the same batch again, then the stored ones alone: duplicates
        r = srv.ingest_ok("device", body)
        self.assertEqual((r["accepted"], r["duplicate"], r["rejected"]),
                         (0, len(good), len(bad)), r)
        r = srv.ingest_ok("device", b"\n".join(good[2:]))
        self.assertEqual((r["accepted"], r["duplicate"]), (0, 4), r)
        # one just below them is new, not a duplicate of a range
        r = srv.ingest_ok("device", k(top - 4))
        self.assertEqual((r["accepted"], r["duplicate"]), (1, 0), r)
        base = "/api/v1/sessions/" + sid
        ks = T.page_all(srv, base + "/kernels", 2)
        self.assertEqual(sorted(x["kid"] for x in ks),
                         [top - 4, top - 2, top])
        self.assertEqual(srv.get(base + "/kernels/%d" % top)["kid"], top)
        st, _, _ = srv.req("GET", base + "/kernels/%d" % (top + 1))
        self.assertIn(st, (400, 404))
        cps = T.page_all(srv, base + "/copies", 1)
        self.assertEqual(sorted(x["seq"] for x in cps), [top - 3, top - 1])
        self.assertEqual(srv.get(base)["counts"]["kernels"], 3)
        self.assertEqual(
            T.metric(srv, 'gpufl_ingest_lines_total{outcome="rejected"}'),
            2 * len(bad))
        self.assertEqual(
            T.metric(srv, 'gpufl_ingest_lines_total{outcome="accepted"}'),
            len(good) + 1)
        srv.stop()

    def test_long_names_whole(self):
        # names are answered whole up to ingest's cap (4096 bytes), never
        # cut (they were cut at 511 bytes in aggregates and the timeline,
        # 255 in the scope tree, mid-character); scope path strings are
        # cut at 8191 bytes on a character boundary
        srv = self.server()
        sa, sb = "51111111-2222-4333-8444-555555555555", "61111111-2222-4333-8444-555555555555"
        long_a = "k" + "\u00e9" * 2047 + "a"         # 4096 bytes of UTF-8
        long_b = "k" + "\u00e9" * 2047 + "b"         # differs in its last byte
        snow = "\u2603" * 1300                       # 3900 bytes
        for sid, nm in ((sa, long_a), (sb, long_b)):
            lines = [mkline("device", 0, "session", sid=sid, app="a", host="h"),
                     mkline("device", 1, "dict", sid=sid, id=1, kind="name", name=nm),
                     mkline("device", 2, "kernel", sid=sid, name=1, dur=50)]
            self.assertEqual(srv.ingest_ok("device", b"\n".join(lines))["accepted"], 3)
        sc = [mkline("scope", i, "dict", sid=sa, id=10 + i, kind="name", name=snow + str(i))
              for i in range(3)]
        sc += [mkline("scope", 3 + i, "dict", sid=sa, id=20 + i, kind="path",
                      parent=19 + i if i else 0, name=10 + i, depth=i + 1) for i in range(3)]
        self.assertEqual(srv.ingest_ok("scope", b"\n".join(sc))["accepted"], 6)
        agg = srv.get("/api/v1/sessions/%s/kernels/aggregate" % sa)["items"]
        self.assertEqual([a["name"] for a in agg], [long_a])
        tl = srv.get("/api/v1/sessions/%s/timeline" % sa)
        self.assertEqual(list(tl["names"].values()), [long_a])
        cmp = srv.get("/api/v1/compare?a=%s&b=%s" % (sa, sb))["items"]
        self.assertEqual([(c["name"], c["a"] is None, c["b"] is None) for c in cmp],
                         [(long_a, False, True), (long_b, True, False)])
        paths = []

        def walk(nodes):
            for n in nodes:
                paths.append((n["name"], n["path"]))
                walk(n["children"])
        walk(srv.get("/api/v1/sessions/%s/scopes" % sa)["items"])
        full = snow + "0/" + snow + "1/" + snow + "2"
        self.assertEqual([p[0] for p in paths], [snow + "0", snow + "1", snow + "2"])
        self.assertEqual(paths[0][1], snow + "0")
        self.assertEqual(paths[1][1], snow + "0/" + snow + "1")
        cut = paths[2][1]
        self.assertTrue(full.startswith(cut) and len(cut.encode()) in (8190, 8191), len(cut.encode()))
        self.assertNotIn("\ufffd", cut)
        srv.stop()

    def test_body_framing(self):
        """A body is decoded whole: every member of a gzip body (RFC 1952:
        `cat a.gz b.gz`), every zstd frame; bytes after the last one are a
        400 with the reason, never silently dropped."""
        import gzip
        srv = self.server()
        sid = "f4a1e000-0000-4000-8000-000000000001"

        def body(a, b):
            return b"".join(mkline("scope", i, "marker", sid=sid, text="m") + b"\n"
                            for i in range(a, b))

        def zstd(b):
            return subprocess.run(["zstd", "-q", "-c"], input=b, check=True,
                                  stdout=subprocess.PIPE).stdout

        def post(data, enc):
            st, _, out = srv.req("POST", "/api/v1/events/scope", data,
                                 headers={"Content-Type": "application/x-ndjson",
                                          "Content-Encoding": enc})
            return st, json.loads(out)

        st, r = post(gzip.compress(body(0, 5)) + gzip.compress(body(5, 12)), "gzip")
        self.assertEqual((st, r.get("accepted")), (200, 12), r)
        st, r = post(zstd(body(12, 15)) + zstd(body(15, 20)), "zstd")
        self.assertEqual((st, r.get("accepted")), (200, 8), r)
        for enc, data in (("gzip", gzip.compress(body(20, 25)) + b"garbage"),
                          ("gzip", gzip.compress(body(20, 25)) + b"\0\0\0\0"),
                          ("zstd", zstd(body(20, 25)) + b"garbage!")):
            st, r = post(data, enc)
            self.assertEqual(st, 400, (enc, r))
            self.assertIn("after the end", r["error"])
        st, r = post(gzip.compress(body(20, 25))[:-3], "gzip")
        self.assertEqual(st, 400, r)
        self.assertIn("cut short", r["error"])
        # none of the refused bodies' lines went in
        self.assertEqual(srv.get("/api/v1/sessions/" + sid)["counts"]["lines"], 20)
        st, _, out = srv.req("POST", "/api/v1/memprof",
                             gzip.compress(b'{"v":1}') + b"x",
                             headers={"Content-Type": "application/json",
                                      "Content-Encoding": "gzip"})
        self.assertEqual(st, 400, out)
        self.assertIn(b"after the end", out)

    def test_memprof_limits(self):
        """Memory-profile counters are stored as signed 64-bit: 2^63 or more
        is refused with the reason (it was stored negative), so is a profile
        whose totals reach it; sums over profiles saturate at 2^63 - 1
        instead of wrapping or failing; sid must be a session id."""
        srv = self.server()
        big = 2 ** 62 + 2 ** 61  # 6.9e18: two of them pass 2^63

        def post(stacks, **kw):
            d = {"v": 1, "host": "mph", "pid": 7, "start": 1, "end": 2,
                 "source": "simulated", "stacks": stacks}
            d.update(kw)
            st, _, out = srv.req("POST", "/api/v1/memprof", json.dumps(d),
                                 headers={"Content-Type": "application/json"})
            return st, json.loads(out)

        for v in (2 ** 63, 2 ** 64 - 1):
            st, r = post([{"frames": ["a"], "alloc_bytes": v}])
            self.assertEqual(st, 400, r)
            self.assertIn("stacks[0].alloc_bytes", r["error"])
        st, r = post([{"frames": ["a"], "inuse_bytes": big},
                      {"frames": ["b"], "inuse_bytes": big}])
        self.assertEqual(st, 400, r)
        self.assertIn("inuse_bytes add up", r["error"])
        st, r = post([{"frames": ["a"]}], start=2 ** 63, end=2 ** 63)
        self.assertEqual(st, 400, r)
        for sid in ("not-a-uuid", "AAAAAAAA-0000-4000-8000-000000000001",
                    "aaaaaaaa-0000-4000-8000-00000000000g", ""):
            st, r = post([{"frames": ["a"]}], sid=sid)
            self.assertEqual(st, 400, (sid, r))
            self.assertIn("sid", r["error"])
        for _ in range(2):
            st, r = post([{"frames": ["x", "y"], "alloc_bytes": big, "alloc_count": big}],
                         sid="aaaaaaaa-0000-4000-8000-000000000001")
            self.assertEqual(st, 200, r)
        m = srv.get("/api/v1/memory?host=mph")
        self.assertEqual((m["stacks"][0]["bytes"], m["stacks"][0]["count"]),
                         (2 ** 63 - 1, 2 ** 63 - 1))
        self.assertEqual(m["total_bytes"], 2 ** 63 - 1)
        profs = srv.get("/api/v1/memory/profiles?host=mph")["items"]
        self.assertEqual([p["alloc_bytes"] for p in profs], [big, big])

    def test_sql_metacharacters_everywhere(self):
        srv = self.server()
        evil = "x'; DROP TABLE sessions; --\"\\ %_ \u00e9\u2603 \U0001F600"
        sid = "21111111-2222-4333-8444-555555555555"
        lines = [
            mkline("device", 0, "session", sid=sid, app=evil, host=evil, lib=evil, cmd=evil,
                   streams=["device", "scope"]),
            mkline("device", 1, "dict", sid=sid, id=1, kind="name", name=evil),
            mkline("device", 2, "dict", sid=sid, id=2, kind="launch", name=1, block=[32], regs=8, occ=0.5, lim=evil),
            mkline("device", 3, "kernel", sid=sid, cfg=2, dur=100, grid=[1]),
            mkline("device", 4, "memcpy", sid=sid, kind=KIND, bytes=10, dur=5),
            mkline("device", 5, "loss", sid=sid, reason=evil, count=1),
            mkline("device", 6, "dict", sid=sid, id=3, kind="stack", frames=[evil]),
            mkline("device", 7, "session_end", sid=sid, reason=evil),
        ]
        r = srv.ingest_ok("device", b"\n".join(lines))
        self.assertEqual(r["accepted"], len(lines), r)
        sc = [mkline("scope", 0, "marker", sid=sid, text=evil),
              mkline("scope", 1, "dict", sid=sid, id=9, kind="path", parent=0, name=1, depth=1),
              mkline("scope", 2, "pcsamp", sid=sid, func=1, pc=16, stalls={evil: 3}, samples=3, path=9),
              mkline("scope", 3, "session_end", sid=sid, reason=evil)]
        self.assertEqual(srv.ingest_ok("scope", b"\n".join(sc))["accepted"], 4)
        d = srv.get("/api/v1/sessions/" + sid)
        self.assertEqual((d["app"], d["host"], d["end_reason"]), (evil, evil, evil))
        k = srv.get("/api/v1/sessions/%s/kernels" % sid)["items"]
        self.assertEqual(k[0]["name"], evil)
        self.assertEqual(srv.get("/api/v1/sessions/%s/kernels/3" % sid)["limiter"], evil)
        import urllib.parse as up
        q = up.quote(evil)
        for p in ("/api/v1/sessions?search=%s" % q, "/api/v1/sessions?app=%s" % q,
                  "/api/v1/sessions?host=%s" % q,
                  "/api/v1/sessions/%s/kernels?name=%s" % (sid, q),
                  "/api/v1/sessions/%s/kernels/aggregate?name=%s" % (sid, q),
                  "/api/v1/sessions/%s/profile" % sid):
            srv.get(p)
        self.assertEqual(len(srv.get("/api/v1/sessions?search=%s" % q)["items"]), 1)
        self.assertEqual(len(srv.get("/api/v1/sessions?search=%25")["items"]), 1)
        prof = srv.get("/api/v1/sessions/%s/profile" % sid)
        self.assertEqual(prof["stalls"], [{"reason": evil, "samples": 3}])
        cp = srv.get("/api/v1/sessions/%s/copies" % sid)
        self.assertEqual(cp["items"][0]["kind"], KIND)
        self.assertEqual(len(srv.get("/api/v1/sessions")["items"]), 1)

    def test_http_errors(self):
        srv = self.server(args=["--max-body", "1M", "--max-decoded", "4M"])
        # 10 MB over a 1 MB cap, with Content-Length (answered before the
        # body is read: the send may fail once the server closes) and chunked
        import http.client
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        c.putrequest("POST", "/api/v1/events/device")
        c.putheader("Authorization", "Bearer " + T.ADMIN)
        c.putheader("Content-Type", "application/x-ndjson")
        c.putheader("Content-Length", str(10 << 20))
        c.endheaders()
        try:
            c.send(b"x" * (10 << 20))
        except OSError:
            pass
        self.assertEqual(c.getresponse().status, 413)
        c.close()
        c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        c.putrequest("POST", "/api/v1/events/device")
        c.putheader("Authorization", "Bearer " + T.ADMIN)
        c.putheader("Content-Type", "application/x-ndjson")
        c.putheader("Transfer-Encoding", "chunked")
        c.endheaders()
        for _ in range(40):
            chunk = b"y" * (256 << 10)
            c.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        c.send(b"0\r\n\r\n")
        self.assertEqual(c.getresponse().status, 413)
        c.close()
        # decompression bomb: 1 MB of gzip that inflates past 4 MB
        import gzip
        bomb = gzip.compress(b"\n" * (64 << 20))
        self.assertLess(len(bomb), 1 << 20)
        st, _, _ = srv.req("POST", "/api/v1/events/device", bomb,
                           headers={"Content-Type": "application/x-ndjson",
                                    "Content-Encoding": "gzip"})
        self.assertEqual(st, 413)
        st, _, _ = srv.req("POST", "/api/v1/events/device", b"\x1f\x8b garbage",
                           headers={"Content-Type": "application/x-ndjson",
                                    "Content-Encoding": "gzip"})
        self.assertEqual(st, 400)
        st, _, _ = srv.req("POST", "/api/v1/events/device", b"\x28\xb5\x2f\xfd junk",
                           headers={"Content-Type": "application/x-ndjson",
                                    "Content-Encoding": "zstd"})
        self.assertEqual(st, 400)
        st, _, _ = srv.req("POST", "/api/v1/events/device", b"{}",
                           headers={"Content-Type": "application/x-ndjson",
                                    "Content-Encoding": "br"})
        self.assertEqual(st, 415)
        st, _, _ = srv.req("POST", "/api/v1/events/device", b"{}",
                           headers={"Content-Type": "text/plain"})
        self.assertEqual(st, 415)
        st, _, _ = srv.req("POST", "/api/v1/events/device", b"{}")
        self.assertEqual(st, 415)
        st, _, data = srv.req("POST", "/api/v1/events/kernels", b"{}",
                              headers={"Content-Type": "application/x-ndjson"})
        self.assertEqual(st, 404)
        for s in ("device", "scope", "system"):
            self.assertIn(s.encode(), data)
        st, r = srv.post("device", b"", ctype="application/json; charset=utf-8")
        self.assertEqual((st, r["accepted"], r["rejected"]), (200, 0, 0))
        st, _, _ = srv.req("GET", "/api/v1/events/device")
        self.assertEqual(st, 405)
        st, _, _ = srv.req("GET", "/api/v1/nope")
        self.assertEqual(st, 404)
        st, _, _ = srv.req("GET", "/api/v1/sessions?limit=-1")
        self.assertEqual(st, 400)
        st, _, _ = srv.req("GET", "/api/v1/sessions?limit=99999999999999999999999")
        self.assertEqual(st, 400)
        st, _, _ = srv.req("GET", "/%2e%2e/%2e%2e/etc/passwd", token=None)
        self.assertEqual(st, 404)
        # many errors: counted exactly, itemised up to the cap
        bad = b"\n".join([b"{bad"] * 500)
        st, r = srv.post("device", bad)
        self.assertEqual((r["rejected"], len(r["errors"])), (500, 50))
        self.assertEqual(srv.get("/healthz" if False else "/api/v1/hosts")["items"], [])
        st, _, _ = srv.req("GET", "/healthz", token=None)
        self.assertEqual(st, 200)


class Static(Base):
    def test_ui_files(self):
        ui = os.path.join(self.dir, "ui")
        os.makedirs(os.path.join(ui, "assets"))
        with open(os.path.join(ui, "index.html"), "w") as f:
            f.write("<html>gpufl</html>")
        with open(os.path.join(ui, "assets", "app.js"), "w") as f:
            f.write("console.log(1)")
        srv = self.server(args=["--ui-dir", ui])
        st, h, data = srv.req("GET", "/", token=None)
        self.assertEqual((st, data), (200, b"<html>gpufl</html>"))
        self.assertTrue(h["Content-Type"].startswith("text/html"))
        st, h, data = srv.req("GET", "/assets/app.js", token=None)
        self.assertEqual((st, data), (200, b"console.log(1)"))
        self.assertTrue(h["Content-Type"].startswith("text/javascript"))
        # client-side routes reload to index.html; missing files are 404
        st, _, data = srv.req("GET", "/sessions/abc", token=None)
        self.assertEqual((st, data), (200, b"<html>gpufl</html>"))
        st, _, _ = srv.req("GET", "/assets/missing.js", token=None)
        self.assertEqual(st, 404)
        for bad in ("/../../etc/passwd", "/assets/..%2f..%2fetc/passwd", "/a\\b"):
            st, _, data = srv.req("GET", bad, token=None)
            self.assertNotIn(b"root:", data)
        st, _, _ = srv.req("GET", "/api/v1/sessions", token=None)
        self.assertEqual(st, 401)
        srv.stop()


class Durability(Base):
    def test_pg_commits_are_durable(self):
        """The server acknowledges after COMMIT; that is a promise only with
        synchronous_commit on (off: COMMIT returns before the WAL is
        written, and a crash of PostgreSQL loses acknowledged batches)."""
        if not T.pg_base():
            self.skipTest("PostgreSQL only")
        self.assertEqual(T.psql("postgres", "SHOW synchronous_commit").strip(), "on")

    def test_big_batch_duplicates(self):
        """One POST with more kernels than PostgreSQL stages at once
        (SQ_PEND_MAX, 16384), with in-batch duplicates on both sides of
        that boundary, then the whole batch again."""
        sid = "0b1b2b3b-0000-4000-8000-00000000b16b"
        head = ('{"v":1,"sid":"%s","st":"device","seq":0,"ts":1000,'
                '"type":"session","app":"big","host":"big","start":1000}\n'
                '{"v":1,"sid":"%s","st":"device","seq":1,"ts":1000,'
                '"type":"dict","id":1,"kind":"name","name":"big_k"}\n'
                % (sid, sid))
        srv = self.server()
        n, durs, lines = 20000, [], []
        for i in range(n):
            dur = 1000 + (i * 7919) % 50000
            durs.append(dur)
            lines.append('{"v":1,"sid":"%s","st":"device","seq":%d,'
                         '"ts":%d,"type":"kernel","dev":0,"stream":7,'
                         '"corr":%d,"name":1,"grid":[1],"dur":%d}\n'
                         % (sid, i + 2, 2000 + i * 60000, i, dur))
        body = (head + "".join(lines) + "".join(lines[:10]) +
                "".join(lines[17000:17010])).encode()
        keys = ("accepted", "duplicate", "rejected")
        r = srv.ingest_ok("device", body)
        self.assertEqual([r[k] for k in keys], [n + 2, 20, 0])
        r = srv.ingest_ok("device", body)
        self.assertEqual([r[k] for k in keys], [0, n + 22, 0])
        d = srv.get("/api/v1/sessions/" + sid)
        self.assertEqual(d["counts"]["kernels"], n)
        agg = srv.get("/api/v1/sessions/%s/kernels/aggregate" % sid)
        self.assertEqual([(i["name"], i["count"], i["total_ns"], i["min_ns"],
                           i["max_ns"]) for i in agg["items"]],
                         [("big_k", n, sum(durs), min(durs), max(durs))])
        tl = srv.get("/api/v1/sessions/%s/timeline?width=100" % sid)
        self.assertTrue(tl)

    def test_no_parse_helper(self):
        """The parse helper's thread failing to start (GPUFL_SERVER_PAR_FAIL,
        as pthread_create would on a process out of threads): said once in
        the log, and every body parsed on its connection's thread alone -
        every kernel and op stored, the refused lines reported in line
        order, the kernel blocks encoded without it - the same answers as
        a server that has it."""
        sid = "0c1c2c3c-0000-4000-8000-00000000c16c"
        n = 6000
        lines = [json.dumps({"v": 1, "sid": sid, "st": "device", "seq": 0,
                             "ts": 1000, "type": "session", "app": "p",
                             "host": "p", "start": 1000}),
                 json.dumps({"v": 1, "sid": sid, "st": "device", "seq": 1,
                             "ts": 1000, "type": "dict", "id": 1,
                             "kind": "name", "name": "par_k"})]
        for i in range(2, n):
            e = {"v": 1, "sid": sid, "st": "device", "seq": i,
                 "ts": 2000 + i * 1000, "dev": 0, "stream": 7, "corr": i,
                 "dur": 100 + i % 977}
            if i % 3 == 0:
                e.update(type="memcpy", kind="htod", bytes=i)
            else:
                e.update(type="kernel", name=1, grid=[1])
            lines.append(json.dumps(e))
        # refused lines early, in the middle and late: pieces on both sides
        bad = {5, 2999, 3001, 5990}
        for b in bad:
            lines[b] = '{"v":1,"sid":"%s","st":"device","seq":%d}' % (sid, b)
        body = ("\n".join(lines) + "\n").encode()
        self.assertGreater(len(body), 64 * 1024)  # the par path's minimum
        keys = ("accepted", "duplicate", "rejected")
        got = []
        for name, env in (("alone", {"GPUFL_SERVER_PAR_FAIL": "1"}),
                          ("helped", None)):
            srv = self.server(name, ["--quiet=false"], env=env)
            r = srv.ingest_ok("device", body)
            self.assertEqual([r[k] for k in keys], [n - len(bad), 0, len(bad)])
            self.assertEqual([e["line"] for e in r["errors"]],
                             sorted(b + 1 for b in bad))
            base = "/api/v1/sessions/" + sid
            ks = T.page_all(srv, base + "/kernels", 1000)
            cps = T.page_all(srv, base + "/copies", 1000)
            want_k = [i for i in range(2, n) if i % 3 and i not in bad]
            want_c = [i for i in range(2, n) if i % 3 == 0 and i not in bad]
            self.assertEqual(sorted(x["kid"] for x in ks), want_k, name)
            self.assertEqual(sorted(x["seq"] for x in cps), want_c, name)
            d = srv.get(base)
            self.assertEqual((d["counts"]["kernels"], d["counts"]["ops"]),
                             (len(want_k), len(want_c)))
            r = srv.ingest_ok("device", body)
            self.assertEqual([r[k] for k in keys], [0, n - len(bad), len(bad)])
            got.append(srv.get(base + "/kernels/aggregate"))
            srv.stop()
            with open(srv.out_path) as f:
                said = "no second parse thread" in f.read()
            self.assertEqual(said, env is not None, name)
        self.assertEqual(got[0], got[1])

    def test_streamed_bodies_at_once(self):
        """Three connections sending large bodies at once: a body is stored
        while it is parsed (one at a time holds the parse helper, the
        others parse alone, and a group's writer may take another
        connection's parts). Reported: the helper given back at a body's
        last part and taken at once by another connection's body, the
        first body's writer asked the helper for a part again and got the
        other body's (or waited forever). Every answer must count its own
        lines, in time, and every kernel be stored once."""
        srv = self.server()
        n, rounds, conns = 3000, 16, 3  # ~330 KB bodies: streamed

        def body(sid, r):
            lines = []
            if r == 0:
                lines.append(json.dumps({"v": 1, "sid": sid, "st": "device", "seq": 0,
                                         "ts": 1000, "type": "session", "app": "s",
                                         "host": "s", "start": 1000}))
            for i in range(1 + r * n, 1 + (r + 1) * n):
                lines.append(json.dumps({"v": 1, "sid": sid, "st": "device", "seq": i,
                                         "ts": 2000 + i * 100, "type": "kernel",
                                         "dev": 0, "stream": 1 + i % 3, "corr": i,
                                         "name": 1, "grid": [1], "dur": 50 + i % 99}))
            return ("\n".join(lines) + "\n").encode()

        sids = ["0d1d2d3d-0000-4000-8000-0000000000%02x" % t for t in range(conns)]
        bodies = {t: [body(sids[t], r) for r in range(rounds)] for t in range(conns)}
        got, errs = {t: [] for t in range(conns)}, []
        go = threading.Barrier(conns)

        def send(t):
            try:
                go.wait()
                for b in bodies[t]:
                    st, _, data = srv.req("POST", "/api/v1/events/device", b,
                                          timeout=30,
                                          headers={"Content-Type": "application/x-ndjson"})
                    got[t].append((st, json.loads(data)))
            except Exception as e:  # a hung server times out here
                errs.append(repr(e))

        th = [threading.Thread(target=send, args=(t,)) for t in range(conns)]
        for x in th:
            x.start()
        for x in th:
            x.join(120)
        self.assertFalse([x for x in th if x.is_alive()], "a request never came back")
        self.assertEqual(errs, [])
        for t in range(conns):
            self.assertEqual([(st, r["accepted"], r["duplicate"], r["rejected"])
                              for st, r in got[t]],
                             [(200, n + (r == 0), 0, 0) for r in range(rounds)])
            d = srv.get("/api/v1/sessions/" + sids[t])
            self.assertEqual(d["counts"]["kernels"], n * rounds)
        m = srv.req("GET", "/metrics")[2].decode()
        streamed = [int(ln.split()[1]) for ln in m.splitlines()
                    if ln.startswith("gpufl_ingest_streamed_total ")][0]
        self.assertGreater(streamed, 0)

    def test_kill9_loses_no_acknowledged_line(self):
        logs = T.make_logs(os.path.join(self.dir, "logs"), "train", 60)
        sess = list(logs.values())[0]
        srv = self.server()
        acked = []
        stop = threading.Event()
        batches = [(st, b) for st in T.STREAMS for b in T.chunks(T.stream_lines(sess, st), 40)]

        def pump():
            for st, body in batches:
                if stop.is_set():
                    return
                try:
                    code, r = srv.post(st, body)
                except Exception:
                    return
                if code == 200:
                    acked.append((st, body))

        th = threading.Thread(target=pump)
        th.start()
        while len(acked) < 3 and th.is_alive():
            time.sleep(0.01)
        srv.kill()
        stop.set()
        th.join()
        self.assertGreater(len(acked), 0)
        self.assertLess(len(acked), len(batches), "kill came too late to mean anything")
        srv2 = T.Server(srv.data_dir)
        self.servers.append(srv2)
        n = 0
        for st, body in acked:
            r = srv2.ingest_ok(st, body)
            self.assertEqual(r["accepted"], 0, "an acknowledged line was lost")
            n += r["duplicate"]
        self.assertEqual(n, sum(b.count(b"\n") for _, b in acked))
        # the rest goes in, and the session is whole
        T.send_session(srv2, sess, batch=1000)
        d = srv2.get("/api/v1/sessions/" + sess.sid)
        self.assertEqual(d["counts"]["lines"], sum(len(s.events) for s in sess.streams.values()))
        agg = srv2.get("/api/v1/sessions/%s/kernels/aggregate?limit=1000" % sess.sid)
        self.assertEqual(sum(i["count"] for i in agg["items"]), len(sess.streams["device"].of("kernel")))
        srv2.stop()


class Retention(Base):
    def test_prune_keep_and_schedule(self):
        a = list(T.make_logs(os.path.join(self.dir, "a"), "workload", 20).values())[0]
        b = list(T.make_logs(os.path.join(self.dir, "b"), "train", 5).values())[0]
        srv = self.server()
        T.send_session(srv, a)
        T.send_session(srv, b)
        st, _, _ = srv.req("PUT", "/api/v1/sessions/%s/keep" % a.sid, b'{"keep": true}')
        self.assertEqual(st, 200)
        self.assertTrue(srv.get("/api/v1/sessions/" + a.sid)["keep"])
        st, _, _ = srv.req("PUT", "/api/v1/sessions/00000000-0000-4000-8000-000000000000/keep", b"{}")
        self.assertEqual(st, 404)
        st, _, data = srv.req("POST", "/api/v1/admin/retention?max_db_bytes=1")
        self.assertEqual(st, 200, data)
        self.assertEqual(json.loads(data)["pruned"], 1)
        st, _, _ = srv.req("GET", "/api/v1/sessions/" + b.sid)
        self.assertEqual(st, 404)
        self.assertEqual(srv.get("/api/v1/sessions/" + a.sid)["counts"]["kernels"], 200 * 2 // 2 if False else
                         len(a.streams["device"].of("kernel")))
        ids = [r[0] for r in srv.sql("SELECT id FROM sessions")]
        self.assertEqual(len(ids), 1)
        # the kernels' tables of both stores (blocks, the default, and
        # --kernel-store=rows: GPUFL_TEST_SERVER_ARGS), all created by
        # the migrations whatever the store
        tables = ["lines", "dicts", "kernels", "ops", "scopes", "sass", "stalls",
                  "samples", "kagg", "tl", "kscope", "klong", "kblocks",
                  "kbnames", "kbnpack", "kbndir", "kcount", "kbspan",
                  "kbunnamed"]
        for t in tables:
            n = srv.sql("SELECT count(*) FROM %s WHERE sess <> %s" % (t, ids[0]))[0][0]
            self.assertEqual(n, "0", t)
        # the kept session's kernels are stored: rows, or blocks (ingest
        # writes a blocks server's kernels straight into blocks)
        self.assertNotEqual(srv.sql("SELECT (SELECT count(*) FROM kernels) +"
                                    " (SELECT count(*) FROM kblocks)")[0][0], "0")
        # re-sending a pruned session stores it again
        T.send_session(srv, b)
        self.assertEqual(srv.get("/api/v1/sessions/" + b.sid)["counts"]["kernels"],
                         len(b.streams["device"].of("kernel")))
        srv.stop()

    def test_stale_counts_only_time_heard(self):
        # a server that was down heard nothing: after a restart a silent
        # session turns stale --stale-after later, not at once (it used to
        # flip to stale and back, the server counting its own downtime)
        sid = "41111111-2222-4333-8444-555555555555"
        args = ["--stale-after", "4s", "--retention-interval", "1s"]
        srv = self.server("down", args=args)
        srv.ingest_ok("device", mkline("device", 0, "session", sid=sid, app="a", host="h"))
        srv.stop()
        time.sleep(5)
        t0 = time.time()  # before the start: it may be slow under load
        srv = self.server("down", args=args)
        time.sleep(max(0.0, t0 + 2.5 - time.time()))  # two maintenance passes
        self.assertEqual(srv.get("/api/v1/sessions/" + sid)["state"], "running")
        while time.time() < t0 + 15 and \
                srv.get("/api/v1/sessions/" + sid)["state"] != "stale":
            time.sleep(0.2)
        self.assertEqual(srv.get("/api/v1/sessions/" + sid)["state"], "stale")
        # 4 s after the restart, less up to 1 s of whole-second clocks
        self.assertGreaterEqual(time.time() - t0, 3.0)
        srv.stop()

    def test_scheduled_age_and_stale(self):
        a = list(T.make_logs(os.path.join(self.dir, "a"), "workload", 5).values())[0]
        srv = self.server(args=["--retention-max-age", "1s", "--retention-interval", "1s"])
        T.send_session(srv, a)
        deadline = time.time() + 20
        while time.time() < deadline:
            st, _, _ = srv.req("GET", "/api/v1/sessions/" + a.sid)
            if st == 404:
                break
            time.sleep(0.3)
        self.assertEqual(st, 404)
        srv.stop()
        # a session without session_end goes stale, and back on new lines
        srv = self.server("stale", args=["--stale-after", "1s"])
        lines = T.stream_lines(a, "device")
        for st in ("scope", "system"):
            srv.ingest_ok(st, b"\n".join(T.stream_lines(a, st)))
        srv.ingest_ok("device", b"\n".join(lines[:-1]))
        self.assertEqual(srv.get("/api/v1/sessions/" + a.sid)["state"], "running")
        deadline = time.time() + 20
        while time.time() < deadline and \
                srv.get("/api/v1/sessions/" + a.sid)["state"] != "stale":
            time.sleep(0.3)
        self.assertEqual(srv.get("/api/v1/sessions?state=stale")["items"][0]["id"], a.sid)
        srv.ingest_ok("device", lines[-1])
        self.assertEqual(srv.get("/api/v1/sessions/" + a.sid)["state"], "ended")
        m = srv.req("GET", "/metrics")[2].decode()
        n = sum(len(a.streams[st].events) for st in T.STREAMS)
        self.assertIn('gpufl_ingest_lines_total{outcome="accepted"} %d' % n, m)
        self.assertIn("gpufl_db_bytes", m)
        self.assertIn('gpufl_http_request_seconds_count{route="ingest"} 4', m)
        self.assertIn('gpufl_server_lines_missing{stream="device"} 0', m)
        # where the 4 requests' time went: each phase lies inside its
        # request, so together they are at most the requests' seconds
        ph = {}
        for line in m.splitlines():
            if line.startswith("gpufl_ingest_seconds_total{phase="):
                ph[line.split('"')[1]] = float(line.split(" ")[1])
            if line.startswith('gpufl_http_request_seconds_sum{route="ingest"}'):
                req = float(line.split(" ")[1])
        self.assertEqual(sorted(ph), ["commit", "parse", "wait", "write"])
        for k in ("parse", "write", "commit"):
            self.assertGreater(ph[k], 0, k)
        self.assertGreaterEqual(ph["wait"], 0)
        self.assertLessEqual(sum(ph.values()), req + 1e-5, (ph, req))
        srv.stop()


def fill(path):
    """Writes path until the file system is full."""
    with open(path, "wb", buffering=0) as f:
        for size in (1 << 20, 4096, 512):
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError:
                pass


class DiskFull(Base):
    """SQLite's disk fills up (a small tmpfs; root only)."""

    def mount(self, size):
        if os.geteuid() != 0:
            self.skipTest("needs root to mount a small tmpfs")
        mnt = os.path.join(self.dir, "mnt")
        os.mkdir(mnt)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs",
                           mnt]).returncode:
            self.skipTest("cannot mount tmpfs here")
        self.addCleanup(subprocess.run, ["umount", "-l", mnt])
        return mnt

    def test_full_disk_is_said_and_not_ready(self):
        """A full disk: ingest 503 (the agent retries), said once in the log,
        /readyz not ready until there is room again; then the same batches
        go in and nothing is lost."""
        if T.pg_base():
            self.skipTest("SQLite only")
        mnt = self.mount("32m")
        # the database on the small disk; the server's log off it
        srv = self.server(args=["--db", "sqlite:" + os.path.join(mnt, "gpufl.db")])
        sid = "d15cf011-0000-4000-8000-000000000001"

        def batch(i):
            return b"\n".join(mkline("scope", i * 2000 + k, "marker", sid=sid,
                                     text="x" * 300) for k in range(2000)) + b"\n"

        srv.ingest_ok("scope", batch(0))
        ballast = os.path.join(mnt, "ballast")
        fill(ballast)
        failed = []
        for i in range(1, 6):
            st, r = srv.post("scope", batch(i))
            if st != 200:
                self.assertEqual(st, 503, r)
                failed.append(i)
        self.assertTrue(failed, "the full disk failed no write")
        st, _, data = srv.req("GET", "/readyz", token=None)
        self.assertEqual(st, 503, data)
        self.assertIn(b"disk full", data)
        self.assertEqual(srv.req("GET", "/healthz", token=None)[0], 200)
        out = srv.output()
        self.assertEqual(out.count("failed for want of disk space"), 1, out)
        os.unlink(ballast)
        st, _, data = srv.req("GET", "/readyz", token=None)
        self.assertEqual(st, 200, data)
        for i in failed:
            srv.ingest_ok("scope", batch(i))
        self.assertEqual(srv.get("/api/v1/sessions/" + sid)["counts"]["lines"],
                         6 * 2000)
        self.assertEqual(srv.output().count("database writes succeed again"), 1)
        srv.stop()

    def test_first_start_on_full_disk(self):
        """The admin token's hash cannot be written: the start fails saying
        why, and leaves no file behind that would block the next start."""
        mnt = self.mount("1m")
        data = os.path.join(mnt, "data")
        os.mkdir(data)
        fill(os.path.join(mnt, "ballast"))
        db = "sqlite:" + os.path.join(self.dir, "gpufl.db")  # room for it
        p = subprocess.run([T.SERVER, "--listen", "127.0.0.1:0", "--data-dir", data,
                            "--db", db], env=T.clean_env(), timeout=60,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("admin_token.sha256", p.stderr)
        self.assertIn("No space left on device", p.stderr)
        self.assertNotIn("gfa_", p.stdout)  # no token shown that was not stored
        self.assertEqual(os.listdir(data), [])
        os.unlink(os.path.join(mnt, "ballast"))
        srv = self.server(os.path.join("mnt", "data"), args=["--db", db], admin=None)
        self.assertIn("generated admin token", srv.output())
        srv.stop()
        # an empty file (what a failed start of an older version left) is
        # taken for no file: a new token, not a refusal to start
        path = os.path.join(data, "admin_token.sha256")
        open(path, "w").close()
        srv = self.server(os.path.join("mnt", "data"), args=["--db", db], admin=None)
        self.assertIn("generated admin token", srv.output())
        self.assertEqual(os.path.getsize(path), 65)
        srv.stop()


if __name__ == "__main__":
    unittest.main()
