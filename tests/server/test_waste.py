"""test_waste.py - GPU waste on the server (docs/api.md "GPU waste"): the
`waste` lines of gpufl idle POSTed to the system stream over real HTTP on
127.0.0.1, and GET /api/v1/fleet/waste checked against sums computed here
from the same lines: totals and owners by every dimension, money with
--price, the series buckets from the hourly rollup and from the lines,
the waste rate now, the per-GPU verdict strip, idempotent replays,
retention taking a session's lines back out of the rollup, and the 400s
and 401s.  On SQLite, and on PostgreSQL with GPUFL_TEST_PG_URI_FILE.

Run one class per ctest test: python3 test_waste.py Waste
"""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest
import uuid

import srvtest as T

H = 3600 * 10 ** 9
M = 60 * 10 ** 9
T0 = 472222 * H  # 2023-11-14T21:00:00Z, a whole hour
REASONS = ("idle", "held", "phantom", "stuck", "allocated_unused")
MODEL_A = "Simulated NVIDIA A10G"
MODEL_B = "Simulated NVIDIA H100"


class Log:
    """One gpufl idle log's system stream, built by hand."""

    def __init__(self, host, simulated=True):
        self.sid = str(uuid.uuid4())
        self.host = host
        self.seq = 0
        self.lines = []
        self.add("session", T0 - H, app="gpufl-idle", host=host, pid=1,
                 start=T0 - H, simulated=simulated)

    def add(self, type_, ts, **kw):
        o = {"v": 1, "sid": self.sid, "st": "system", "seq": self.seq,
             "ts": ts, "type": type_}
        o.update(kw)
        self.seq += 1
        self.lines.append(o)
        return o

    def waste(self, dev, model, t0, t1, busy=0.0, wasted=None, **owner):
        kw = {"host": self.host, "dev": dev, "uuid": "GPU-%s-%d" % (
            self.host, dev), "model": model, "from": t0, "to": t1,
            "busy_s": busy, "wasted_s": dict(wasted or {}), "simulated": True}
        kw.update(owner)
        return self.add("waste", t1, **kw)

    def verdict(self, dev, ts, state, model=MODEL_A):
        return self.add("verdict", ts, kind="gpu", dev=dev,
                        uuid="GPU-%s-%d" % (self.host, dev), model=model,
                        state=state, since=ts, simulated=True)

    def body(self, lines=None):
        return "".join(json.dumps(o) + "\n" for o in (lines or self.lines))


def key_of(w, by):
    if by == "user":
        return w.get("user", "")
    if by == "namespace":
        return w.get("namespace", "")
    if by == "pod":
        ns, pod = w.get("namespace", ""), w.get("pod", "")
        return "%s/%s" % (ns, pod) if ns and pod else pod
    if by == "host":
        return w["host"]
    if by == "gpu":
        return w["uuid"]
    return w.get(by, "")


def expect(lines, by, t0, t1, step, prices=None):
    """What /fleet/waste must answer for lines over [t0, t1): totals, per
    key, and per bucket, in GPU-hours; cost as wasted hours x price."""
    def blank():
        return {"busy": 0.0, "w": dict.fromkeys(REASONS, 0.0), "cost": 0.0,
                "unpriced": False}
    tot, keys = blank(), {}
    nb = -(-(t1 - t0) // (step * 10 ** 9))
    series = [dict.fromkeys(REASONS, 0.0) for _ in range(nb)]
    for w in lines:
        a, b = max(w["from"], t0), min(w["to"], t1)
        if b <= a:
            continue
        f = (b - a) / (w["to"] - w["from"])
        price = None
        if prices is not None:
            price = prices.get(w["model"], prices.get("*"))
        for e in (tot, keys.setdefault(key_of(w, by), blank())):
            e["busy"] += w["busy_s"] * f / 3600
            ws = sum(w["wasted_s"].values()) * f / 3600
            for r, v in w["wasted_s"].items():
                e["w"][r] += v * f / 3600
            if price is None:
                e["unpriced"] |= ws > 0
            else:
                e["cost"] += ws * price
        span = w["to"] - w["from"]
        for i in range(nb):
            c0 = t0 + i * step * 10 ** 9
            o = min(c0 + step * 10 ** 9, b) - max(c0, a)
            if o > 0:
                for r, v in w["wasted_s"].items():
                    series[i][r] += v * o / span / 3600
    return tot, keys, series


class Waste(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self._testMethodName + ".",
                                    dir=T.TMP)
        self.servers = []

    def tearDown(self):
        try:
            for s in self.servers:
                s.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def server(self, args=()):
        s = T.Server(os.path.join(self.dir, "data%d" % len(self.servers)),
                     list(args))
        self.servers.append(s)
        return s

    def post(self, srv, body, token="admin"):
        st, _, data = srv.req("POST", "/api/v1/events/system", body,
                              token=token, headers={
                                  "Content-Type": "application/x-ndjson"})
        self.assertEqual(st, 200, data)
        return json.loads(data)

    def fleet(self):
        """Two hosts, three owners, two models, lines crossing hours."""
        a, b = Log("node-a"), Log("node-b")
        alice = dict(user="alice", namespace="ml", pod="train-0",
                     container="c0ffee", job="", app="trainer")
        bob = dict(user="bob", namespace="lab", pod="nb-1", job="",
                   app="jupyter")
        carol = dict(user="carol", job="4242", app="")
        for i in range(12):  # 10-minute lines over two hours
            t = T0 + i * 10 * M
            a.waste(0, MODEL_A, t, t + 10 * M, busy=420.5,
                    wasted={"idle": 179.5}, **alice)
            a.waste(1, MODEL_A, t, t + 10 * M,
                    wasted={"held": 600.0}, **bob)
            b.waste(0, MODEL_B, t + 5 * M, t + 15 * M, busy=12.25,
                    wasted={"stuck": 587.75}, **carol)
        # a GPU nobody owns: phantom, and a pod holding one with no process
        a.waste(2, MODEL_A, T0 + 50 * M, T0 + 70 * M,
                wasted={"phantom": 1200.0})
        b.waste(1, MODEL_B, T0 + 30 * M, T0 + 90 * M,
                wasted={"allocated_unused": 3600.0}, namespace="lab",
                pod="nb-2")
        return a, b

    @staticmethod
    def wastes(*logs):
        return [o for g in logs for o in g.lines if o["type"] == "waste"]

    def check(self, r, lines, by, t0, t1, step, prices=None, limit=20):
        tot, keys, series = expect(lines, by, t0, t1, step, prices)
        eps = 1e-5
        self.assertEqual(r["by"], by)
        self.assertEqual((r["from"], r["to"], r["step_s"]), (t0, t1, step))
        self.assertAlmostEqual(r["totals"]["busy_gpu_h"], tot["busy"],
                               delta=eps)
        self.assertAlmostEqual(r["totals"]["wasted_gpu_h"],
                               sum(tot["w"].values()), delta=eps)
        for k in REASONS:
            self.assertAlmostEqual(r["totals"]["by_reason"][k], tot["w"][k],
                                   delta=eps, msg=k)
        if prices is None or tot["unpriced"]:
            self.assertIsNone(r["totals"]["cost"])
        else:
            self.assertAlmostEqual(r["totals"]["cost"], tot["cost"],
                                   delta=1e-3)
        order = sorted(keys, key=lambda k: (-sum(keys[k]["w"].values()), k))
        self.assertEqual([e["key"] for e in r["top"]], order[:limit])
        for e in r["top"]:
            x = keys[e["key"]]
            self.assertAlmostEqual(e["busy_gpu_h"], x["busy"], delta=eps)
            self.assertAlmostEqual(e["wasted_gpu_h"], sum(x["w"].values()),
                                   delta=eps, msg=e["key"])
            for k in REASONS:
                self.assertAlmostEqual(e["by_reason"][k], x["w"][k],
                                       delta=eps)
            if prices is None or x["unpriced"]:
                self.assertIsNone(e["cost"], e["key"])
            else:
                self.assertAlmostEqual(e["cost"], x["cost"], delta=1e-3)
        self.assertEqual(len(r["series"]), len(series))
        for i, (got, want) in enumerate(zip(r["series"], series)):
            self.assertEqual(got["t"], t0 + i * step * 10 ** 9)
            for k in REASONS:
                self.assertAlmostEqual(got["by_reason"][k], want[k],
                                       delta=eps, msg="bucket %d %s" % (i, k))

    def test_totals_by_every_dimension(self):
        prices = {MODEL_A: 1.25, "*": 3.5}
        srv = self.server(["--price", MODEL_A + "=1.25", "--price", "*=3.5",
                           "--currency", "EUR"])
        a, b = self.fleet()
        for g in (a, b):
            r = self.post(srv, g.body())
            self.assertEqual((r["accepted"], r["rejected"]),
                             (len(g.lines), 0), r)
        lines = self.wastes(a, b)
        t0, t1 = T0 - H, T0 + 3 * H
        for by in ("user", "namespace", "pod", "job", "app", "host", "gpu"):
            # whole hours: the rollup; 10 minutes: the lines themselves
            for step in (3600, 600, 7200):
                r = srv.get("/api/v1/fleet/waste?by=%s&from=%d&to=%d&step=%d"
                            % (by, t0, t1, step))
                self.check(r, lines, by, t0, t1, step, prices)
                self.assertEqual(r["currency"], "EUR")
                self.assertTrue(r["simulated"])
        # whole UTC days (the daily rollup), and whole days then hours
        d0 = T0 - 22 * H  # the midnight before T0
        for by in ("pod", "gpu", "user"):
            # (the rollups are exact to the hour: ranges of whole hours)
            for t1 in (d0 + 48 * H, T0 + H, d0 + 27 * H):
                r = srv.get("/api/v1/fleet/waste?by=%s&from=%d&to=%d"
                            "&step=86400" % (by, d0, t1))
                self.check(r, lines, by, d0, t1, 86400, prices)
        # a range cutting lines and hours: each counted pro rata
        r = srv.get("/api/v1/fleet/waste?by=user&from=%d&to=%d&step=600"
                    % (T0 + 25 * M, T0 + 95 * M))
        self.check(r, lines, "user", T0 + 25 * M, T0 + 95 * M, 600, prices)
        # limit
        r = srv.get("/api/v1/fleet/waste?by=gpu&from=%d&to=%d&step=3600"
                    "&limit=2" % (t0, t1))
        self.check(r, lines, "gpu", t0, t1, 3600, prices, limit=2)
        self.assertEqual(len(r["top"]), 2)
        # the sums are the lines' (not only the same code twice): alice
        # wasted 12 x 179.5 s idle on a 1.25 model
        r = srv.get("/api/v1/fleet/waste?by=user&from=%d&to=%d" % (t0, t1))
        al = [e for e in r["top"] if e["key"] == "alice"][0]
        self.assertAlmostEqual(al["by_reason"]["idle"], 12 * 179.5 / 3600,
                               places=6)
        self.assertAlmostEqual(al["busy_gpu_h"], 12 * 420.5 / 3600, places=6)
        self.assertAlmostEqual(al["cost"], 12 * 179.5 / 3600 * 1.25,
                               places=4)

    def test_days_and_edge_hours(self):
        """Hourly steps over ranges holding whole UTC days: the owners
        from the daily rollup plus the edge hours, the series from the
        hourly rows of the dimension with the fewest (namespace here, or
        the asked one): the same sums as the lines'."""
        prices = {MODEL_A: 1.25, "*": 3.5}
        srv = self.server(["--price", MODEL_A + "=1.25", "--price", "*=3.5"])
        d0 = T0 - 21 * H  # the midnight before T0
        owners = [dict(user="alice", namespace="ml", pod="train-0",
                       job="", app="trainer"),
                  dict(user="bob", namespace="lab", pod="nb-1", app="jup"),
                  dict(user="carol", job="4242"),
                  dict(namespace="lab", pod="nb-2")]
        a, b = Log("node-a"), Log("node-b")
        for i in range(40):  # 90-minute lines from 05:00 over 2.5 days
            t = d0 + 5 * H + i * 90 * M
            g = (a, b)[i % 2]
            g.waste(i % 3, (MODEL_A, MODEL_B)[i % 3 == 2], t, t + 90 * M,
                    busy=100.0 + i, wasted={REASONS[i % 5]: 1000.0 + 7 * i,
                                            "idle": 3.5 * i},
                    **owners[i % 4])
        for g in (a, b):
            r = self.post(srv, g.body())
            self.assertEqual(r["rejected"], 0, r)
        lines = self.wastes(a, b)
        ranges = ((d0 + 7 * H, d0 + 61 * H), (d0, d0 + 61 * H),
                  (d0 + 7 * H, d0 + 48 * H), (d0 + 3 * H, d0 + 27 * H))
        for by in ("user", "namespace", "pod", "job", "app", "host", "gpu"):
            for t0, t1 in ranges:
                for step in (3600, 7200, 86400):
                    r = srv.get("/api/v1/fleet/waste?by=%s&from=%d&to=%d"
                                "&step=%d" % (by, t0, t1, step))
                    self.check(r, lines, by, t0, t1, step, prices)

    def test_cost_null_without_price(self):
        srv = self.server()
        a, b = self.fleet()
        self.post(srv, a.body())
        self.post(srv, b.body())
        r = srv.get("/api/v1/fleet/waste?by=namespace&from=%d&to=%d"
                    "&step=3600" % (T0, T0 + 2 * H))
        self.check(r, self.wastes(a, b), "namespace", T0, T0 + 2 * H, 3600)
        self.assertEqual(r["currency"], "USD")
        self.assertIsNone(r["totals"]["cost"])
        # a price for one model only: owners on the other have no cost
        srv2 = self.server(["--price", MODEL_A + "=2"])
        self.post(srv2, a.body())
        self.post(srv2, b.body())
        r = srv2.get("/api/v1/fleet/waste?by=user&from=%d&to=%d&step=3600"
                     % (T0, T0 + 2 * H))
        self.check(r, self.wastes(a, b), "user", T0, T0 + 2 * H, 3600,
                   {MODEL_A: 2.0})
        costs = {e["key"]: e["cost"] for e in r["top"]}
        self.assertIsNone(costs["carol"])
        self.assertAlmostEqual(costs["bob"], 2 * 2.0, places=4)

    def test_replay_not_counted_twice(self):
        srv = self.server()
        a, b = self.fleet()
        self.post(srv, a.body())
        r = self.post(srv, a.body())  # the agent sends it again
        self.assertEqual(r["duplicate"], len(a.lines), r)
        self.post(srv, b.body())
        # and a part of it, overlapping the next batch
        half = a.lines[len(a.lines) // 2:]
        r = self.post(srv, a.body(half))
        self.assertEqual(r["duplicate"], len(half))
        for step in (3600, 600):
            r = srv.get("/api/v1/fleet/waste?by=user&from=%d&to=%d&step=%d"
                        % (T0, T0 + 2 * H, step))
            self.check(r, self.wastes(a, b), "user", T0, T0 + 2 * H, step)

    def test_host_is_the_sessions(self):
        srv = self.server()
        g = Log("node-a")
        g.waste(0, MODEL_A, T0, T0 + M, wasted={"idle": 30.0})
        g.lines[-1]["host"] = "someone-else"
        self.post(srv, g.body())
        r = srv.get("/api/v1/fleet/waste?by=host&from=%d&to=%d&step=3600"
                    % (T0, T0 + H))
        self.assertEqual([e["key"] for e in r["top"]], ["node-a"])

    def test_bad_lines_rejected(self):
        srv = self.server()
        g = Log("node-a")
        ok = g.waste(0, MODEL_A, T0, T0 + M, busy=1.0, wasted={"idle": 2})
        bad = [
            dict(ok, seq=10, dev=None),
            dict(ok, seq=11, to=T0),
            dict(ok, seq=12, busy_s=-1),
            dict(ok, seq=13, wasted_s={"sleepy": 1}),
            dict(ok, seq=14, wasted_s={"idle": 61}),
            dict(ok, seq=15, wasted_s=[1, 2]),
            dict(ok, seq=16, user=7),
            dict(ok, seq=17, pod="p" * 300),
            dict(ok, seq=18, to=T0 + 2 * 86400 * 10 ** 9),
        ]
        for o in bad:
            if o.get("dev", 0) is None:
                del o["dev"]
        body = g.body() + "".join(json.dumps(o) + "\n" for o in bad)
        r = self.post(srv, body)
        self.assertEqual(r["accepted"], 2)
        self.assertEqual(r["rejected"], len(bad))
        for e in r["errors"]:
            self.assertIn("waste", e["reason"])
        x = srv.get("/api/v1/fleet/waste?from=%d&to=%d&step=3600"
                    % (T0, T0 + H))
        self.assertAlmostEqual(x["totals"]["wasted_gpu_h"], 2 / 3600,
                               places=7)

    def test_params_and_auth(self):
        srv = self.server()
        base = "/api/v1/fleet/waste"
        for q in ("?by=color", "?by=", "?from=10&to=10", "?from=20&to=10",
                  "?from=x", "?step=10", "?step=0", "?limit=0",
                  "?limit=501", "?limit=-1",
                  "?from=1&to=%d&step=60" % (3 * 86400 * 10 ** 9),
                  "?from=1&to=%d" % (500 * 86400 * 10 ** 9)):
            st, _, data = srv.req("GET", base + q)
            self.assertEqual(st, 400, "%s: %s" % (q, data))
            self.assertIn("error", json.loads(data))
        st, _, _ = srv.req("GET", base, token=None)
        self.assertEqual(st, 401)
        st, _, _ = srv.req("GET", base, token="not-a-key-0123456789")
        self.assertEqual(st, 401)
        st, _, _ = srv.req("POST", base, "{}")
        self.assertEqual(st, 405)
        # an ingest key may not read
        st, _, data = srv.req("POST", "/api/v1/keys",
                              json.dumps({"name": "i", "role": "ingest"}))
        self.assertEqual(st, 201, data)
        st, _, _ = srv.req("GET", base, token=json.loads(data)["key"])
        self.assertEqual(st, 403)
        # the read (viewer) role may ask
        st, _, data = srv.req("POST", "/api/v1/keys",
                              json.dumps({"name": "v", "role": "read"}))
        self.assertEqual(st, 201, data)
        key = json.loads(data)["key"]
        r = srv.get(base, token=key)
        self.assertEqual(r["by"], "user")
        self.assertEqual(r["step_s"], 3600)
        self.assertEqual(r["to"] - r["from"], 24 * H)  # the last day
        self.assertIsNone(r["totals"]["cost"])
        self.assertEqual(r["top"], [])
        self.assertEqual(len(r["series"]), 24)

    def test_bad_price_is_a_usage_error(self):
        for bad, why in (("H100", "MODEL=PRICE"), ("=3", "MODEL=PRICE"),
                         ("H100=-1", "number from 0"),
                         ("H100=cheap", "number from 0")):
            p = subprocess.run([T.SERVER, "--price", bad, "--data-dir",
                                os.path.join(self.dir, "never")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, timeout=30, env=T.clean_env())
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(why, p.stderr)

    def test_now_and_strip(self):
        srv = self.server()
        g = Log("node-a")
        # verdicts of GPU 0: EMPTY, BUSY (refreshed), HELD, then silence
        g.verdict(0, T0 - 5 * M, "EMPTY")
        g.verdict(0, T0 + 3 * M, "EMPTY")
        g.verdict(0, T0 + 10 * M, "BUSY")
        g.verdict(0, T0 + 11 * M, "BUSY")
        g.verdict(0, T0 + 12 * M, "BUSY")
        g.verdict(0, T0 + 20 * M, "HELD")
        g.verdict(0, T0 + 25 * M, "HELD")
        g.verdict(1, T0 + 5 * M, "STUCK")
        g.verdict(2, T0, "PHANTOM", model=MODEL_B)
        now = time.time_ns()
        g.verdict(2, now - 10 ** 9, "BUSY", model=MODEL_B)
        # the waste rate now: 60 s wasted over the 4 minutes covered of
        # the last five
        g.waste(2, MODEL_B, now - 2 * M, now - M, wasted={"idle": 45.0,
                                                          "held": 15.0})
        g.waste(2, MODEL_B, now - 20 * M, now - 10 * M,
                wasted={"idle": 600.0})
        self.post(srv, g.body())
        r = srv.get("/api/v1/fleet/waste?from=%d&to=%d&step=3600"
                    % (T0, T0 + H))
        self.assertEqual(r["now"]["gpus_by_state"]["HELD"], 1)
        self.assertEqual(r["now"]["gpus_by_state"]["STUCK"], 1)
        self.assertEqual(r["now"]["gpus_by_state"]["BUSY"], 1)
        self.assertEqual(r["now"]["gpus_by_state"]["EMPTY"], 0)
        self.assertAlmostEqual(r["now"]["waste_rate"], 60 / 240, delta=0.01)
        gp = {(x["host"], x["dev"]): x for x in r["gpus"]}
        self.assertEqual(sorted(gp), [("node-a", 0), ("node-a", 1),
                                      ("node-a", 2)])
        self.assertEqual(gp[("node-a", 2)]["model"], MODEL_B)
        self.assertEqual(gp[("node-a", 0)]["uuid"], "GPU-node-a-0")
        strip = [(s["from"], s["to"], s["state"])
                 for s in gp[("node-a", 0)]["strip"]]
        # the verdict in force at from, refreshes merged, and the last
        # one held for 10 minutes after it was last said
        self.assertEqual(strip, [
            (T0, T0 + 10 * M, "EMPTY"),
            (T0 + 10 * M, T0 + 20 * M, "BUSY"),
            (T0 + 20 * M, T0 + 35 * M, "HELD")])
        self.assertEqual([(s["from"], s["to"], s["state"])
                          for s in gp[("node-a", 1)]["strip"]],
                         [(T0 + 5 * M, T0 + 15 * M, "STUCK")])
        # limit: the first GPUs by host and index
        r = srv.get("/api/v1/fleet/waste?from=%d&to=%d&limit=1"
                    % (T0, T0 + H))
        self.assertEqual([(x["host"], x["dev"]) for x in r["gpus"]],
                         [("node-a", 0)])

    def test_upgrade_makes_runs(self):
        """Migration 16 makes the strips' runs from the verdicts stored
        before it."""
        srv = self.server()
        g = Log("node-a")
        for i, st in enumerate(["EMPTY", "EMPTY", "BUSY", "BUSY", "HELD"]):
            g.verdict(0, T0 + i * 4 * M, st)
        g.verdict(0, T0 + 60 * M, "HELD")  # after a gap: a run of its own
        g.verdict(1, T0 + 2 * M, "STUCK")
        self.post(srv, g.body())
        q = "/api/v1/fleet/waste?from=%d&to=%d&step=3600" % (T0, T0 + 2 * H)
        before = srv.get(q)["gpus"]
        self.assertEqual([(x["from"] - T0, x["to"] - T0, x["state"])
                          for x in before[0]["strip"]],
                         [(0, 8 * M, "EMPTY"), (8 * M, 16 * M, "BUSY"),
                          (16 * M, 26 * M, "HELD"),
                          (60 * M, 70 * M, "HELD")])
        srv.stop()
        undo = ["DELETE FROM schema_version WHERE version>=16",
                "DROP INDEX lines_trigger",
                "ALTER TABLE captures DROP COLUMN attempts",
                "ALTER TABLE regressions DROP COLUMN subject",
                "DROP TABLE waste", "DROP TABLE wasteh", "DROP TABLE wasted",
                "DROP TABLE vruns"]
        if srv.pgdb:
            for x in undo:
                srv.sql(x)
        else:
            import sqlite3
            db = sqlite3.connect(os.path.join(srv.data_dir, "gpufl.db"),
                                 isolation_level=None)
            for x in undo:
                db.execute(x)
            db.close()
        srv2 = T.Server(srv.data_dir)
        self.servers.append(srv2)
        self.assertEqual(srv2.get(q)["gpus"], before)

    def test_strip_capped(self):
        srv = self.server()
        g = Log("node-a")
        # 1000 changes a minute apart: at most 200 segments (slots painted
        # with their main state), no gap, no overlap, the whole run
        for i in range(1000):
            g.verdict(0, T0 + i * M, ("BUSY", "HELD", "EMPTY")[i % 3])
        self.post(srv, g.body())
        r = srv.get("/api/v1/fleet/waste?from=%d&to=%d&step=3600"
                    % (T0, T0 + 1000 * M))
        strip = r["gpus"][0]["strip"]
        self.assertLessEqual(len(strip), 200)
        self.assertGreater(len(strip), 10)
        self.assertEqual(strip[0]["from"], T0)
        self.assertEqual(strip[-1]["to"], T0 + 1000 * M)
        for x, y in zip(strip, strip[1:]):
            self.assertEqual(x["to"], y["from"])
            self.assertNotEqual(x["state"], y["state"])

    def test_retention_takes_lines_out(self):
        srv = self.server(["--retention-max-age", "2",
                           "--retention-interval", "1"])
        a, b = self.fleet()
        self.post(srv, a.body())
        r = srv.get("/api/v1/fleet/waste?by=host&from=%d&to=%d&step=3600"
                    % (T0, T0 + 2 * H))
        self.assertGreater(r["totals"]["wasted_gpu_h"], 1)
        deadline = time.time() + 30
        while time.time() < deadline:
            r = srv.get("/api/v1/fleet/waste?by=host&from=%d&to=%d"
                        "&step=3600" % (T0, T0 + 2 * H))
            if not r["top"]:
                break
            time.sleep(0.5)
        self.assertEqual(r["top"], [])
        self.assertAlmostEqual(r["totals"]["wasted_gpu_h"], 0, places=6)
        # a later session counts alone
        self.post(srv, b.body())
        r = srv.get("/api/v1/fleet/waste?by=host&from=%d&to=%d&step=3600"
                    % (T0, T0 + 2 * H))
        self.check(r, self.wastes(b), "host", T0, T0 + 2 * H, 3600)


if __name__ == "__main__":
    unittest.main()
