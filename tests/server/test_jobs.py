"""test_jobs.py - jobs, stragglers and regressions on the real gpufl-server
(docs/api.md "Jobs", "Regressions"; docs/analysis.md), on SQLite, and on
PostgreSQL when GPUFL_TEST_PG_URI_FILE names a cluster.

The sessions are written here as event lines (docs/events.md) with seeded
noise, so every figure is known: kernel durations log-normal (10 %) around
their name's median, each run scaled by up to +-2 % (run-to-run noise).

    Jobs:        a 4-rank job whose rank 2 runs its GEMMs 30 % slower (the
                 others wait in NCCL) names rank 2, the GEMM and the wait; a
                 4-rank job with only noise names no one (5 such jobs, 20
                 sessions); the session fields.
    Regressions: 20 runs with only noise find nothing; a run with its GEMMs
                 x1.2 is found with both GEMM names and 1.2 in the interval,
                 and its step and forward scopes, nothing else; /metrics;
                 the webhook fires once, and not for a run only faster; a
                 job's rank against the same rank of other jobs only; peak
                 GPU memory.
"""
import http.server
import json
import math
import os
import random
import shutil
import sys
import tempfile
import threading
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import srvtest as T  # noqa: E402

GEMMS = ("ampere_sgemm_128x64_nn", "sm90_xmma_gemm_f16f16_f32_tn")
EW = "vectorized_elementwise_kernel_add"
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
# median durations (ns) per step of each kernel, and calls per step
KERNELS = ((GEMMS[0], 400000, 2), (GEMMS[1], 250000, 2), (EW, 30000, 6))
NCCL_NS = 200000
T0 = 1_800_000_000_000_000_000


def session_lines(sid, app, seed, steps=30, gemm=1.0, job=None, rank=None,
                  world=None, wait=None, step_scope=None, jitter=True,
                  start=T0, stall=20000, mem=None, flood=0):
    """Device and scope lines of one run. wait[i]: ns the NCCL kernel of
    step i lasts beyond NCCL_NS (the rank waits for a slower one); returns
    (device lines, scope lines, per-step compute ns). stall: ns per step
    in a scope "data_load" without kernels (host side). mem: the GPU's
    mem_used (bytes) at its peak: then the device lines end with a few
    "gpu" samples (stream system, sent by send()) rising to it. flood:
    scope_end rows of a path "train_step/flood" (path id 10, below the
    steps' 20-22) recorded after the steps."""
    rng = random.Random(seed)
    run = 1 + (rng.uniform(-0.02, 0.02) if jitter else 0)
    sess = {"app": app, "host": "h-%s" % app, "pid": 1000 + seed,
            "start": start, "lib": "0.1.0", "simulated": True,
            "streams": ["device", "scope"]}
    if job is not None:
        sess.update(job=job, job_source="GPUFL_JOB")
    if rank is not None:
        sess.update(rank=rank, local_rank=rank % 8)
    if world is not None:
        sess["world_size"] = world
    if step_scope:
        sess["step_scope"] = step_scope
    dev, sc = [], []

    def d(typ, ts, **kw):
        e = {"v": 1, "sid": sid, "st": "device", "seq": len(dev), "ts": ts,
             "type": typ}
        e.update(kw)
        dev.append(json.dumps(e, separators=(",", ":")).encode())

    def s(typ, ts, **kw):
        e = {"v": 1, "sid": sid, "st": "scope", "seq": len(sc), "ts": ts,
             "type": typ}
        e.update(kw)
        sc.append(json.dumps(e, separators=(",", ":")).encode())

    d("session", start, **sess)
    names = [k[0] for k in KERNELS] + [NCCL, "train_step", "forward",
                                       "data_load"]
    STEP, FWD, LOAD = len(names) - 2, len(names) - 1, len(names)
    for i, n in enumerate(names):
        d("dict", start, id=i + 1, kind="name", name=n)
    s("session", start, **sess)
    s("dict", start, id=20, kind="path", parent=0, name=STEP, depth=1)
    s("dict", start, id=21, kind="path", parent=20, name=FWD, depth=2)
    s("dict", start, id=22, kind="path", parent=20, name=LOAD, depth=2)
    t = start + 1000
    inst = 100
    compute = []
    for step in range(steps):
        b = t
        inst += 1
        top = inst
        s("scope_begin", b, id=top, name=STEP, path=20, depth=1, tid=1)
        inst += 1
        s("scope_begin", t, id=inst, name=LOAD, path=22, parent=top, depth=2,
          tid=1)
        t += stall
        s("scope_end", t, id=inst, name=LOAD, path=22, parent=top, depth=2,
          tid=1, dur=stall)
        busy = stall
        inst += 1
        f0 = t
        s("scope_begin", t, id=inst, name=FWD, path=21, parent=top, depth=2,
          tid=1)
        for ki, (name, med, calls) in enumerate(KERNELS):
            f = gemm if name in GEMMS else 1.0
            for _ in range(calls):
                dur = int(med * f * run * math.exp(rng.gauss(0, 0.1)))
                d("kernel", t, dev=0, stream=7, name=ki + 1, dur=dur,
                  scope=inst)
                t += dur + 2000
                busy += dur + 2000
        s("scope_end", t, id=inst, name=FWD, path=21, parent=top, depth=2,
          tid=1, dur=t - f0)
        compute.append(busy)
        nd = int(NCCL_NS * math.exp(rng.gauss(0, 0.02))) + \
            (wait[step] if wait else 0)
        d("kernel", t, dev=0, stream=8, name=len(KERNELS) + 1, dur=nd)
        t += nd + 5000
        s("scope_end", t, id=top, name=STEP, path=20, depth=1, tid=1,
          dur=t - b)
        t += 1000
    if flood:
        d("dict", start, id=30, kind="name", name="flood")
        s("dict", start, id=10, kind="path", parent=20, name=30, depth=2)
        for _ in range(flood):
            inst += 1
            s("scope_end", t, id=inst, name=30, path=10, depth=2, tid=1,
              dur=1000)
            t += 1000
    if mem is not None:
        sy = []
        for i, f in enumerate((0.5, 0.9, 1.0, 0.7)):
            e = {"v": 1, "sid": sid, "st": "system", "seq": i + 1,
                 "ts": start + i * 61 * 10 ** 9, "type": "gpu", "dev": 0,
                 "util": 50, "mem_used": int(mem * f),
                 "mem_total": 80 * 2 ** 30}
            sy.append(json.dumps(e, separators=(",", ":")).encode())
        e = {"v": 1, "sid": sid, "st": "system", "seq": 0, "ts": start,
             "type": "session"}
        e.update(sess)
        e["streams"] = ["device", "scope", "system"]
        dev.append(("system", [json.dumps(e, separators=(",", ":"))
                               .encode()] + sy))
    d("session_end", t, reason="exit")
    s("session_end", t, reason="exit")
    return dev, sc, compute


def send(srv, dev, sc):
    # a ("system", lines) item of dev: the system stream (mem=)
    for x in [x for x in dev if isinstance(x, tuple)]:
        r = srv.ingest_ok(x[0], b"\n".join(x[1]) + b"\n")
        assert r["rejected"] == 0, r
    dev = [x for x in dev if not isinstance(x, tuple)]
    for st, lines in (("device", dev), ("scope", sc)):
        for body in T.chunks(lines, 2000):
            r = srv.ingest_ok(st, body)
            assert r["rejected"] == 0, r


def wait_scanned(srv, sids, timeout=60):
    deadline = time.time() + timeout
    out = {}
    while time.time() < deadline:
        for sid in sids:
            if sid not in out:
                r = srv.get("/api/v1/sessions/%s/regressions" % sid)
                if r["scanned"]:
                    out[sid] = r
        if len(out) == len(sids):
            return out
        time.sleep(0.2)
    raise AssertionError("not scanned in %d s: %d of %d" %
                         (timeout, len(out), len(sids)))


class Hook(http.server.BaseHTTPRequestHandler):
    got = []

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        Hook.got.append((self.path, self.headers.get("Content-Type"),
                         self.rfile.read(n)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *a):
        pass


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

    def server(self, args=()):
        # --stale-after 1: the maintenance tick (and so the scan) each second
        s = T.Server(os.path.join(self.dir, "data"),
                     ["--stale-after", "1"] + list(args))
        self.servers.append(s)
        return s


class Jobs(Base):
    def job(self, srv, job, slow_rank=None, factor=1.3, seed0=0,
            step_scope=None, stall_rank=None, stall=400000):
        comp = {}
        sids = {}
        for r in range(4):
            _, _, c = session_lines("x", "trainer", seed0 + r, gemm=factor
                                    if r == slow_rank else 1.0,
                                    stall=stall if r == stall_rank
                                    else 20000)
            comp[r] = c
        steps = len(comp[0])
        slowest = [max(comp[r][i] for r in range(4)) for i in range(steps)]
        for r in range(4):
            sid = str(uuid.UUID(int=random.Random(seed0 * 10 + r)
                                .getrandbits(128), version=4))
            sids[r] = sid
            dev, sc, _ = session_lines(
                sid, "trainer", seed0 + r, job=job, rank=r, world=4,
                gemm=factor if r == slow_rank else 1.0,
                wait=[slowest[i] - comp[r][i] for i in range(steps)],
                step_scope=step_scope,
                stall=stall if r == stall_rank else 20000)
            send(srv, dev, sc)
        return sids

    def test_straggler_named_with_cause(self):
        srv = self.server()
        sids = self.job(srv, "job-slow", slow_rank=2)
        j = srv.get("/api/v1/jobs/job-slow")
        self.assertEqual((j["job"], j["app"], j["world_size"], j["ranks_seen"],
                          j["state"]), ("job-slow", "trainer", 4, 4, "ended"))
        self.assertEqual(j["verdict"], "straggler")
        self.assertEqual([r["rank"] for r in j["ranks"]], [0, 1, 2, 3])
        for r in j["ranks"]:
            self.assertEqual(r["session"], sids[r["rank"]])
            self.assertEqual(r["step_scope"], "train_step")  # outermost
            self.assertEqual(r["steps"], 30)
            self.assertEqual(len(r["steps_ns"]), 30)
            self.assertGreater(r["collective_ns"], 30 * NCCL_NS * 0.9)
            self.assertTrue(0 < r["busy_share"] <= 1)
            self.assertEqual(r["straggler"], r["rank"] == 2)
        # synchronous: every rank's step lasts about as long
        meds = [r["step_median_ns"] for r in j["ranks"]]
        self.assertLess(max(meds) / min(meds), 1.05, meds)
        # but the others wait in NCCL for rank 2
        coll = {r["rank"]: r["collective_ns"] for r in j["ranks"]}
        self.assertLess(coll[2], min(coll[0], coll[1], coll[3]))
        self.assertEqual(len(j["stragglers"]), 1)
        st = j["stragglers"][0]
        self.assertEqual((st["rank"], st["session"]), (2, sids[2]))
        self.assertIn(st["kernel"], GEMMS)
        self.assertGreater(st["collective_wait_ns"], 0)
        self.assertTrue(1 < st["lo"] <= st["ratio"] <= st["hi"], st)
        self.assertIn("rank 2", st["evidence"])
        self.assertIn(st["kernel"], st["evidence"])
        self.assertIn("wait for it", st["evidence"])
        # the scope its extra time is in: forward (where the GEMMs run)
        self.assertEqual(st["scope"], "forward")
        self.assertIn("scope forward", st["evidence"])
        # the list
        items = srv.get("/api/v1/jobs")["items"]
        self.assertEqual([(i["job"], i["ranks_seen"], i["sessions"],
                           i["world_size"], i["state"]) for i in items],
                         [("job-slow", 4, 4, 4, "ended")])
        self.assertEqual(srv.get("/api/v1/jobs?app=other")["items"], [])
        self.assertEqual(len(srv.get("/api/v1/jobs?state=ended")["items"]), 1)
        self.assertEqual(srv.get("/api/v1/jobs?state=running")["items"], [])

    def test_no_straggler_in_noise(self):
        srv = self.server()
        # 5 jobs of 4 ranks: 20 sessions of noise, no straggler named
        for k in range(5):
            job = "job-even-%d" % k
            self.job(srv, job, seed0=100 + 10 * k,
                     step_scope="train_step" if k == 1 else None)
            j = srv.get("/api/v1/jobs/" + job)
            self.assertEqual(j["verdict"], "no straggler", j["stragglers"])
            self.assertEqual(j["stragglers"], [])
            self.assertFalse(any(r["straggler"] for r in j["ranks"]))

    def test_host_stall_named_by_scope(self):
        """A rank slow on the host (400 us more per step in data_load, no
        kernel slower): named, its kernels cleared, the scope named."""
        srv = self.server()
        self.job(srv, "job-stall", stall_rank=1)
        j = srv.get("/api/v1/jobs/job-stall")
        self.assertEqual([s["rank"] for s in j["stragglers"]], [1])
        st = j["stragglers"][0]
        self.assertIsNone(st["kernel"], st)
        self.assertIn("not in its GPU kernels", st["evidence"])
        self.assertEqual(st["scope"], "data_load")
        self.assertGreater(st["scope_extra_ns"], 300000)
        self.assertGreater(st["collective_wait_ns"], 300000)

    def test_named_step_scope(self):
        srv = self.server()
        self.job(srv, "job-fwd", slow_rank=1, step_scope="forward")
        j = srv.get("/api/v1/jobs/job-fwd")
        self.assertEqual({r["step_scope"] for r in j["ranks"]}, {"forward"})
        self.assertEqual([s["rank"] for s in j["stragglers"]], [1])

    def test_session_fields_and_bad_input(self):
        srv = self.server()
        sid = "31111111-2222-4333-8444-555555555555"
        dev, sc, _ = session_lines(sid, "a", 1, steps=2, job="j1", rank=3,
                                   world=8, step_scope="train_step")
        send(srv, dev, sc)
        d = srv.get("/api/v1/sessions/" + sid)
        self.assertEqual((d["job"], d["rank"], d["world_size"], d["local_rank"],
                          d["job_source"], d["step_scope"]),
                         ("j1", 3, 8, 3, "GPUFL_JOB", "train_step"))
        self.assertNotIn("sim_perturb", d)
        items = srv.get("/api/v1/sessions?job=j1")["items"]
        self.assertEqual([i["id"] for i in items], [sid])
        self.assertEqual(items[0]["rank"], 3)
        self.assertEqual(srv.get("/api/v1/sessions?job=j2")["items"], [])
        # a session line without them: the fields are left out
        sid2 = "41111111-2222-4333-8444-555555555555"
        dev, sc, _ = session_lines(sid2, "a", 2, steps=2)
        send(srv, dev, sc)
        d = srv.get("/api/v1/sessions/" + sid2)
        for k in ("job", "rank", "world_size", "local_rank", "job_source",
                  "step_scope", "sim_perturb"):
            self.assertNotIn(k, d)
        # rank 0 is a rank; sim_perturb kept as given
        sid3 = "51111111-2222-4333-8444-555555555555"
        ok = json.dumps({"v": 1, "sid": sid3, "st": "device", "seq": 0,
                         "ts": T0, "type": "session", "app": "a", "host": "h",
                         "rank": 0, "world_size": 1,
                         "sim_perturb": "kernel=gemm:x1.2@3"}).encode()
        srv.ingest_ok("device", ok)
        d = srv.get("/api/v1/sessions/" + sid3)
        self.assertEqual((d["rank"], d["world_size"], d["sim_perturb"]),
                         (0, 1, "kernel=gemm:x1.2@3"))
        # bad values reject the line, with the reason
        for extra, why in (({"rank": 4, "world_size": 4}, "rank"),
                           ({"rank": "1"}, "rank"),
                           ({"world_size": 0}, "world_size"),
                           ({"local_rank": -1}, "local_rank"),
                           ({"rank": 1 << 24}, "rank"),
                           ({"job": 7}, "job"),
                           ({"job": "x" * 300}, "job")):
            body = {"v": 1, "sid": str(uuid.uuid4()), "st": "device",
                    "seq": 0, "ts": T0, "type": "session", "app": "a",
                    "host": "h"}
            body.update(extra)
            st, r = srv.post("device", json.dumps(body).encode())
            self.assertEqual(st, 200, r)
            self.assertEqual((r["accepted"], r["rejected"]), (0, 1), extra)
            self.assertIn(why, r["errors"][0]["reason"], r)

    def test_strict_params_auth_and_404(self):
        srv = self.server()
        for path in ("/api/v1/jobs?bogus=1", "/api/v1/jobs/x?limit=2",
                     "/api/v1/jobs?limit=0", "/api/v1/jobs?limit=1001",
                     "/api/v1/jobs?limit=x", "/api/v1/jobs?state=stale",
                     "/api/v1/regressions?kind=worse",
                     "/api/v1/regressions?appp=x",
                     "/api/v1/jobs?cursor=zz"):
            st, _, body = srv.req("GET", path)
            self.assertEqual(st, 400, (path, body))
        st, _, _ = srv.req("GET", "/api/v1/jobs/none")
        self.assertEqual(st, 404)
        st, _, _ = srv.req("GET", "/api/v1/sessions/%s/regressions" %
                           uuid.uuid4())
        self.assertEqual(st, 404)
        for path in ("/api/v1/jobs", "/api/v1/jobs/x", "/api/v1/regressions"):
            st, _, _ = srv.req("GET", path, token=None)
            self.assertEqual(st, 401, path)
            st, _, _ = srv.req("POST", path)
            self.assertEqual(st, 405, path)
        # a read key reads them; an ingest key does not
        st, _, b = srv.req("POST", "/api/v1/keys",
                           json.dumps({"name": "r", "role": "read"}))
        read = json.loads(b)["key"]
        st, _, b = srv.req("POST", "/api/v1/keys",
                           json.dumps({"name": "i", "role": "ingest"}))
        ing = json.loads(b)["key"]
        self.assertEqual(srv.req("GET", "/api/v1/jobs", token=read)[0], 200)
        self.assertEqual(srv.req("GET", "/api/v1/regressions",
                                 token=read)[0], 200)
        self.assertEqual(srv.req("GET", "/api/v1/jobs", token=ing)[0], 403)


class Regressions(Base):
    def setUp(self):
        super().setUp()
        Hook.got = []
        self.hook = http.server.HTTPServer(("127.0.0.1", 0), Hook)
        threading.Thread(target=self.hook.serve_forever, daemon=True).start()

    def tearDown(self):
        self.hook.shutdown()
        self.hook.server_close()
        super().tearDown()

    def test_noise_then_gemm_x1_2(self):
        srv = self.server(["--alert-webhook", "http://127.0.0.1:%d/hook" %
                           self.hook.server_address[1]])
        sids = []
        for i in range(20):
            sid = str(uuid.UUID(int=random.Random(i).getrandbits(128),
                                version=4))
            dev, sc, _ = session_lines(sid, "nightly", 1000 + i,
                                       start=T0 + i * 10 ** 12)
            send(srv, dev, sc)
            sids.append(sid)
        got = wait_scanned(srv, sids)
        flagged = {s: r["items"] for s, r in got.items() if r["items"]}
        self.assertEqual(flagged, {}, "false positives")
        self.assertEqual(srv.get("/api/v1/regressions?app=nightly")["items"],
                         [])
        self.assertEqual(Hook.got, [])
        # the nightly run whose GEMMs got 20 % slower
        bad = "61111111-2222-4333-8444-555555555555"
        dev, sc, _ = session_lines(bad, "nightly", 5000, gemm=1.2,
                                   jitter=False, start=T0 + 20 * 10 ** 12)
        send(srv, dev, sc)
        r = wait_scanned(srv, [bad])[bad]
        slower = {i["name"]: i for i in r["items"] if i["kind"] == "slower"
                  and i["subject"] == "kernel"}
        self.assertEqual(set(slower), set(GEMMS), r["items"])
        self.assertEqual([i for i in r["items"] if i["kind"] != "slower"], [])
        # the scopes around them: the step (train_step) and its forward
        # phase, each slower by the GEMMs' share of it; data_load is not
        scopes = {i["name"]: i for i in r["items"] if i["subject"] != "kernel"}
        self.assertEqual({n: i["subject"] for n, i in scopes.items()},
                         {"train_step": "step",
                          "train_step/forward": "scope"}, r["items"])
        for i in scopes.values():
            self.assertEqual((i["kind"], i["base_count"], i["cur_count"]),
                             ("slower", 30, 30))
            self.assertTrue(1.1 < i["ratio"] < 1.25 and i["lo"] > 1, i)
        for name, i in slower.items():
            self.assertTrue(i["lo"] <= 1.2 <= i["hi"], i)
            self.assertTrue(1.1 < i["ratio"] < 1.3, i)
            self.assertLess(i["p"], 0.001)
            self.assertEqual((i["base_sessions"], i["cur_count"]), (5, 60))
            self.assertEqual(i["base_count"], 60)
            self.assertGreater(i["cur_median_ns"], i["base_median_ns"])
            self.assertEqual(i["session"], bad)
        items = srv.get("/api/v1/regressions?app=nightly")["items"]
        self.assertEqual({i["name"] for i in items},
                         set(GEMMS) | set(scopes))
        self.assertEqual(srv.get("/api/v1/regressions?app=other")["items"], [])
        self.assertEqual(len(srv.get("/api/v1/regressions?kind=slower&limit=1")
                             ["items"]), 1)
        # the gauge: the worst ratio of the app's latest session
        st, _, m = srv.req("GET", "/metrics")
        line = [ln for ln in m.decode().splitlines()
                if ln.startswith('gpufl_regression_worst_ratio{app="nightly"}')]
        self.assertEqual(len(line), 1, m[-600:])
        self.assertAlmostEqual(float(line[0].split()[-1]),
                               max(i["ratio"] for i in slower.values()),
                               places=3)
        # the webhook: once, naming both GEMMs; not again a few ticks later
        deadline = time.time() + 15
        while not Hook.got and time.time() < deadline:
            time.sleep(0.1)
        time.sleep(3)
        self.assertEqual(len(Hook.got), 1, Hook.got)
        path, ctype, body = Hook.got[0]
        self.assertEqual((path, ctype), ("/hook", "application/json"))
        h = json.loads(body)
        self.assertEqual((h["event"], h["session"], h["app"], h["slower"],
                          h["base_sessions"]),
                         ("regression", bad, "nightly", 4, 5))
        self.assertEqual({(i["subject"], i["name"]) for i in h["items"]},
                         {("kernel", g) for g in GEMMS} |
                         {("step", "train_step"),
                          ("scope", "train_step/forward")})
        # a restart scans nothing again and posts nothing
        srv.stop()
        srv2 = T.Server(srv.data_dir, ["--stale-after", "1", "--alert-webhook",
                                       "http://127.0.0.1:%d/hook" %
                                       self.hook.server_address[1]])
        self.servers.append(srv2)
        time.sleep(3)
        self.assertEqual(len(Hook.got), 1)
        self.assertEqual(len(srv2.get("/api/v1/regressions")["items"]), 4)

    def test_webhook_only_slower_once(self):
        """A run only faster is stored and answered but posts nothing; the
        next one, slower, posts once; a restart posts nothing again."""
        url = "http://127.0.0.1:%d/h" % self.hook.server_address[1]
        srv = self.server(["--alert-webhook", url])
        sids = []
        for i in range(7):
            sid = str(uuid.UUID(int=random.Random(300 + i).getrandbits(128),
                                version=4))
            gemm = {5: 0.8, 6: 1.25}.get(i, 1.0)
            # step_scope names the step: forward, not the outermost path
            dev, sc, _ = session_lines(sid, "hooked", 300 + i, gemm=gemm,
                                       jitter=i < 5, start=T0 + i * 10 ** 12,
                                       step_scope="forward")
            send(srv, dev, sc)
            sids.append(sid)
            if i == 5:  # the faster one scanned before the slower comes
                r = wait_scanned(srv, [sid])[sid]
                self.assertEqual({x["kind"] for x in r["items"]}, {"faster"})
                self.assertTrue(set(GEMMS) <= {x["name"] for x in r["items"]})
        wait_scanned(srv, sids)
        deadline = time.time() + 15
        while not Hook.got and time.time() < deadline:
            time.sleep(0.1)
        time.sleep(2.5)  # a few more ticks: nothing more comes
        self.assertEqual([json.loads(b)["session"] for _, _, b in Hook.got],
                         [sids[6]])
        h = json.loads(Hook.got[0][2])
        self.assertEqual(h["faster"], 0)
        self.assertEqual({i["kind"] for i in h["items"]}, {"slower"})
        self.assertEqual({(i["subject"], i["name"]) for i in h["items"]
                          if i["subject"] != "kernel"},
                         {("step", "train_step/forward"),
                          ("scope", "train_step")})
        srv.stop()
        srv2 = T.Server(srv.data_dir, ["--stale-after", "1",
                                       "--alert-webhook", url])
        self.servers.append(srv2)
        time.sleep(2.5)
        self.assertEqual(len(Hook.got), 1)

    def test_baseline_same_rank_other_jobs(self):
        """A rank of a job is compared with the same rank of the app's
        earlier jobs, not with its own job's other ranks: a straggler is
        not a regression of its job's last rank, and a rank that got slower
        since the last jobs is one, against exactly those jobs."""
        srv = self.server()
        jobs = []
        for j in range(5):
            job = []
            for rank in range(4):
                sid = str(uuid.UUID(int=random.Random(
                    400 + 10 * j + rank).getrandbits(128), version=4))
                slow = (j == 0 and rank == 3) or (j == 4 and rank == 1)
                dev, sc, _ = session_lines(
                    sid, "ranked", 400 + 10 * j + rank,
                    gemm=1.3 if slow else 1.0, jitter=not slow,
                    job="run-%d" % j, rank=rank, world=4,
                    start=T0 + j * 10 ** 12 + rank * 10 ** 6)
                send(srv, dev, sc)
                job.append(sid)
            jobs.append(job)
        got = wait_scanned(srv, [x for j in jobs for x in j])
        # job 0's rank 3 ran slower than its ranks 0-2: no finding (its
        # baseline is earlier jobs' rank 3: none)
        self.assertEqual(got[jobs[0][3]]["items"], [])
        # job 4's rank 1 against rank 1 of jobs 0-3 (4 sessions)
        items = got[jobs[4][1]]["items"]
        self.assertEqual({i["name"] for i in items
                          if i["kind"] == "slower" and
                          i["subject"] == "kernel"}, set(GEMMS), items)
        self.assertEqual({i["base_sessions"] for i in items}, {4})
        flagged = {s: r["items"] for s, r in got.items()
                   if r["items"] and s != jobs[4][1]}
        self.assertEqual(flagged, {})

    def test_peak_memory(self):
        """Peak GPU memory: a run whose peak is 30 % above its baseline's
        is flagged (subject memory, bytes); within the runs' spread is
        not."""
        srv = self.server()
        sids = []
        G = 2 ** 30
        for i, peak in enumerate((10.0, 10.2, 9.9, 10.1, 10.0, 10.15, 13.0)):
            sid = str(uuid.UUID(int=random.Random(500 + i).getrandbits(128),
                                version=4))
            dev, sc, _ = session_lines(sid, "memapp", 500 + i,
                                       start=T0 + i * 10 ** 12,
                                       mem=int(peak * G))
            send(srv, dev, sc)
            sids.append(sid)
        got = wait_scanned(srv, sids)
        self.assertEqual(got[sids[5]]["items"], [])
        items = got[sids[6]]["items"]
        self.assertEqual(len(items), 1, items)
        m = items[0]
        self.assertEqual((m["kind"], m["subject"], m["name"],
                          int(m["cur_peak_bytes"]), int(m["base_peak_bytes"]),
                          m["base_sessions"]),
                         ("slower", "memory", "peak GPU memory", 13 * G,
                          int(10.1 * G), 5))
        self.assertAlmostEqual(m["ratio"], 13 / 10.1, places=3)
        self.assertNotIn("cur_median_ns", m)

    def test_scope_rows_over_the_cap(self):
        """A session with more scope ends than the scan reads (200,000) is
        judged on the first ones recorded: its steps, recorded before a
        flood of a path whose id sorts first, are all read and unchanged,
        and the flood is new.  (Sorted by path id before the cap, the flood
        filled it and the steps read as vanished.)"""
        srv = self.server()
        sids = []
        for i in range(6):
            sid = str(uuid.UUID(int=random.Random(700 + i).getrandbits(128),
                                version=4))
            dev, sc, _ = session_lines(sid, "capped", 700 + i,
                                       start=T0 + i * 10 ** 12,
                                       flood=200000 if i == 5 else 0)
            send(srv, dev, sc)
            sids.append(sid)
        got = wait_scanned(srv, sids, timeout=120)
        items = got[sids[5]]["items"]
        self.assertEqual([(i["kind"], i["subject"], i["name"], i["cur_count"])
                          for i in items],
                         [("new", "scope", "train_step/flood", 200000 - 90)],
                         items)

    def test_upgrade_from_schema_13(self):
        """Sessions stored before migration 14 keep their data, count as
        scanned (found nothing) and serve as the baseline of new ones."""
        srv = self.server(["--regress-baseline", "0"])
        old = []
        for i in range(4):
            sid = str(uuid.UUID(int=random.Random(50 + i).getrandbits(128),
                                version=4))
            dev, sc, _ = session_lines(sid, "up", 60 + i, start=T0 + i)
            send(srv, dev, sc)
            old.append(sid)
        srv.stop()
        undo = ["DELETE FROM schema_version WHERE version>=14",
                "DROP TABLE captures", "DROP INDEX lines_trigger",
                "DROP TABLE waste",
                "DROP TABLE wasteh", "DROP TABLE wasted", "DROP TABLE vruns",
                "DROP INDEX sessions_job", "DROP INDEX sessions_regress",
                "DROP INDEX sessions_app",
                "DROP TABLE regressions"] + [
            "ALTER TABLE sessions DROP COLUMN " + c for c in (
                "job", "rank", "world_size", "local_rank", "job_source",
                "step_scope", "sim_perturb", "regress")]
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
        srv2 = T.Server(srv.data_dir, ["--stale-after", "1"])
        self.servers.append(srv2)
        for sid in old:
            r = srv2.get("/api/v1/sessions/%s/regressions" % sid)
            self.assertEqual((r["scanned"], r["items"]), (True, []))
            self.assertNotIn("job", srv2.get("/api/v1/sessions/" + sid))
        new = "71111111-2222-4333-8444-555555555555"
        dev, sc, _ = session_lines(new, "up", 70, gemm=1.5, start=T0 + 10,
                                   job="j-up", rank=0, world=1)
        send(srv2, dev, sc)
        r = wait_scanned(srv2, [new])[new]
        self.assertEqual({i["name"] for i in r["items"]
                          if i["subject"] == "kernel"}, set(GEMMS))
        self.assertEqual({i["base_sessions"] for i in r["items"]}, {4})

    def test_webhook_down(self):
        """A webhook that cannot be reached loses nothing: the findings are
        stored and answered, the server goes on, the failure is logged."""
        import socket
        sk = socket.socket()
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]
        sk.close()  # nothing listens there now
        srv = T.Server(os.path.join(self.dir, "data"),
                       ["--stale-after", "1", "--log-level", "info",
                        "--alert-webhook", "http://127.0.0.1:%d/x" % port])
        self.servers.append(srv)
        sids = []
        for i in range(4):
            sid = str(uuid.UUID(int=random.Random(300 + i).getrandbits(128),
                                version=4))
            dev, sc, _ = session_lines(sid, "down", 300 + i,
                                       gemm=1.5 if i == 3 else 1.0,
                                       start=T0 + i)
            send(srv, dev, sc)
            sids.append(sid)
        r = wait_scanned(srv, sids)[sids[3]]
        self.assertEqual({i["name"] for i in r["items"]
                          if i["subject"] == "kernel"}, set(GEMMS))
        deadline = time.time() + 15
        while "alert webhook" not in srv.output() and time.time() < deadline:
            time.sleep(0.1)
        self.assertIn("alert webhook for session %s" % sids[3], srv.output())
        self.assertEqual(srv.req("GET", "/readyz", token=None)[0], 200)
        # retention takes a session's findings with it
        self.assertTrue(srv.get("/api/v1/regressions")["items"])
        st, _, b = srv.req("POST", "/api/v1/admin/retention?max_db_bytes=1")
        self.assertEqual(st, 200, b)
        self.assertEqual(srv.get("/api/v1/sessions")["items"], [])
        self.assertEqual(srv.get("/api/v1/regressions")["items"], [])
        self.assertEqual(srv.sql("SELECT count(*) FROM regressions"), [["0"]])

    def test_off_and_bad_webhook(self):
        import subprocess
        p = subprocess.run([T.SERVER, "--listen", "127.0.0.1:0", "--data-dir",
                            os.path.join(self.dir, "x"), "--alert-webhook",
                            "ftp://h/x"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=30,
                           env=T.clean_env())
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"alert-webhook", p.stderr)
        # --regress-baseline 0: nothing is scanned
        srv = self.server(["--regress-baseline", "0"])
        sids = []
        for i in range(4):
            sid = str(uuid.uuid4())
            dev, sc, _ = session_lines(sid, "off", i, gemm=2.0 if i == 3
                                       else 1.0, start=T0 + i)
            send(srv, dev, sc)
            sids.append(sid)
        time.sleep(2.5)
        for sid in sids:
            self.assertFalse(srv.get("/api/v1/sessions/%s/regressions" %
                                     sid)["scanned"])


if __name__ == "__main__":
    unittest.main()
