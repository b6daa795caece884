"""test_diff.py - `gpufl diff` and the server's job and regression answers
on runs of the real libgpufl simulated GPU (example_train, GPUFL_SIM_SEED,
GPUFL_SIM_PERTURB), shipped by the real gpufl-agent --once to a real
gpufl-server where a case needs one.

    Folders:  unperturbed runs of different seeds: exit 0, nothing flagged
              (one pair, then 20 pairs); kernel=gemm:x1.2: exit 3, every
              GEMM kernel named, nothing else, 1.2 in each interval; --json
              parsed and checked; single-session files; usage and errors.
    Server:   the same comparison by session ids (--server, --token) through
              GET /api/v1/sessions/{id}/durations, agreeing with the folder
              mode; a bad token or id is exit 1.
    EndToEnd: a 4-rank job whose rank 2 runs every kernel x1.3 -> GET
              /api/v1/jobs/{id} names rank 2 with its evidence; 5 unperturbed
              runs then one with its GEMMs x1.2 -> /api/v1/regressions flags
              the GEMM kernels, and only them.

Needs GPUFL_BIN_DIR (the build's bin/) and GPUFL_TEST_TMP.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
import srvtest as T  # noqa: E402

BIN = T.BIN
TMP = T.TMP
GPUFL = os.path.join(BIN, "gpufl")
AGENT = os.path.join(BIN, "gpufl-agent")
STEPS = 8
LAUNCHER = ("TORCHELASTIC_", "SLURM_", "OMPI_", "PMI_")


def train(d, seed, extra=None, steps=STEPS):
    """One run of example_train into folder d (created)."""
    os.makedirs(d, exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GPUFL_",) + LAUNCHER)
           and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env.update({"GPUFL_SIM_SEED": str(seed), "GPUFL_SYSTEM_INTERVAL_MS": "50"})
    env.update(extra or {})
    subprocess.run([os.path.join(BIN, "example_train"), "--steps", str(steps),
                    "--speed", "200", "--log-dir", d], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=120)


def diff(*args, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}
    e.update(env or {})
    p = subprocess.run([GPUFL, "diff"] + list(args), env=e, timeout=120,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    return p.returncode, p.stdout, p.stderr


def is_gemm(name):
    return "gemm" in name.lower()


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="diff_" + self._testMethodName + ".",
                                    dir=TMP)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, *p):
        return os.path.join(self.dir, *p)

    def check_gemm_verdict(self, doc, want_ratio=1.2):
        """Every GEMM kernel slower with want_ratio in its interval; no
        other kernel changed."""
        kern = [i for i in doc["items"] if i["kind"] == "kernel"]
        gemms = [i for i in kern if is_gemm(i["name"])]
        self.assertGreaterEqual(len(gemms), 4, kern)
        inside = 0
        for i in gemms:
            self.assertEqual(i["verdict"], "slower", i)
            self.assertTrue(i["lo"] <= i["ratio"] <= i["hi"], i)
            self.assertLess(abs(i["ratio"] - want_ratio), 0.04, i)
            self.assertLess(i["p"], 0.05, i)
            inside += i["lo"] <= want_ratio <= i["hi"]
        # a 95 % interval misses the true shift one time in twenty by
        # its definition: most of them hold it, none is far from it
        self.assertGreaterEqual(inside, len(gemms) - 1, gemms)
        for i in kern:
            if not is_gemm(i["name"]):
                self.assertEqual(i["verdict"], "same", i)
        self.assertTrue(doc["regression"])
        self.assertEqual(doc["slower"],
                         sum(i["verdict"] == "slower" for i in doc["items"]))


class Folders(Base):
    def test_same_program_different_seeds(self):
        train(self.path("a"), 1)
        train(self.path("b"), 2)
        rc, out, err = diff(self.path("a"), self.path("b"))
        self.assertEqual(rc, 0, out + err)
        self.assertIn("no regression", out)
        self.assertNotIn("-- slower --", out)
        rc, out, err = diff(self.path("a"), self.path("b"), "--json")
        self.assertEqual(rc, 0, err)
        doc = json.loads(out)
        self.assertFalse(doc["regression"])
        self.assertEqual((doc["slower"], doc["faster"], doc["new"],
                          doc["vanished"]), (0, 0, 0, 0), out)
        # both kinds were compared: the kernels and the scope paths
        self.assertGreaterEqual(doc["kernels_compared"], 10)
        self.assertGreaterEqual(doc["scopes_compared"], 5)
        self.assertTrue(all(i["verdict"] == "same" for i in doc["items"]))

    def test_twenty_pairs_no_false_positive(self):
        for k in range(20):
            a, b = self.path("p%d" % k, "a"), self.path("p%d" % k, "b")
            train(a, 1000 + 2 * k, steps=12)
            train(b, 1001 + 2 * k, steps=12)
            rc, out, err = diff(a, b, "--json")
            self.assertEqual(rc, 0, "pair %d: %s %s" % (k, out, err))
            doc = json.loads(out)
            changed = [i for i in doc["items"] if i["verdict"] != "same"]
            self.assertEqual(changed, [], "pair %d" % k)

    def test_gemm_slower(self):
        base = self.path("base")
        for s in (11, 12, 13):
            train(base, s)          # three runs: the base's own spread
        train(self.path("new"), 14, {"GPUFL_SIM_PERTURB": "kernel=gemm:x1.2"})
        rc, out, err = diff(base, self.path("new"))
        self.assertEqual(rc, 3, out + err)
        self.assertIn("REGRESSION", out)
        slower = out.split("-- slower --")[1].split("\n\n")[0]
        kernel_rows = [ln for ln in slower.splitlines() if " kernel " in ln]
        self.assertGreaterEqual(len(kernel_rows), 4, out)
        self.assertTrue(all("gemm" in ln for ln in kernel_rows), out)
        rc, out, err = diff(base, self.path("new"), "--json")
        self.assertEqual(rc, 3, err)
        doc = json.loads(out)
        self.assertEqual(len(doc["base_runs"]), 3)
        self.assertEqual(len(doc["new_runs"]), 1)
        self.check_gemm_verdict(doc)
        # the threshold: a 25 % one hides a 20 % shift
        rc, out, err = diff(base, self.path("new"), "--threshold", "25",
                            "--json")
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(json.loads(out)["slower"], 0)
        # the other way round it is faster, not a regression
        rc, out, err = diff(self.path("new"), base, "--json")
        self.assertEqual(rc, 0, out + err)
        doc = json.loads(out)
        self.assertGreaterEqual(doc["faster"], 4)
        self.assertEqual(doc["slower"], 0)

    def test_session_files(self):
        d = self.path("both")
        train(d, 1)
        train(self.path("p"), 2, {"GPUFL_SIM_PERTURB": "kernel=gemm:x1.2"})
        train(d, 3)
        names = sorted(n for n in os.listdir(d) if n.endswith(".device.log"))
        self.assertEqual(len(names), 2)
        # one session by a file, the other by its prefix: one run each
        prefix = names[1][:-len(".device.log")]
        rc, out, err = diff(os.path.join(d, names[0]),
                            os.path.join(d, prefix), "--json")
        self.assertEqual(rc, 0, out + err)
        doc = json.loads(out)
        self.assertEqual((len(doc["base_runs"]), len(doc["new_runs"])), (1, 1))
        self.assertNotEqual(doc["base_runs"], doc["new_runs"])
        pdev = [n for n in os.listdir(self.path("p"))
                if n.endswith(".device.log")][0]
        rc, out, err = diff(os.path.join(d, names[0]),
                            os.path.join(self.path("p"), pdev))
        self.assertEqual(rc, 3, out + err)

    def test_usage_and_errors(self):
        train(self.path("a"), 1)
        for args in ([], [self.path("a")], ["--threshold", "x", "a", "b"],
                     ["--bogus", "a", "b"], ["--token", "t", "a", "b"],
                     [self.path("a"), self.path("a"), "c"]):
            rc, out, err = diff(*args)
            self.assertEqual(rc, 2, (args, out, err))
            self.assertIn("gpufl diff", err)
        # the token in the environment (a CI job's) is no usage error
        rc, out, err = diff(self.path("a"), self.path("a"),
                            env={"GPUFL_DIFF_TOKEN": "t"})
        self.assertEqual(rc, 0, out + err)
        rc, out, err = diff(self.path("a"), self.path("nothing"))
        self.assertEqual(rc, 1, out + err)
        self.assertIn("nothing", err)
        os.makedirs(self.path("empty"))
        rc, out, err = diff(self.path("a"), self.path("empty"))
        self.assertEqual(rc, 1, out + err)
        self.assertIn("no gpufl logs", err)
        rc, out, err = diff("--help")
        self.assertEqual(rc, 0)
        self.assertIn("--threshold", out)


class ServerBase(Base):
    def server(self, args=()):
        s = T.Server(self.path("data"), ["--stale-after", "1"] + list(args))
        self.addCleanup(s.stop)
        return s

    def ship(self, srv, folder):
        """gpufl-agent --once: every line of folder into srv; the sids."""
        r = subprocess.run([AGENT, "--folder=" + folder, "--type=http",
                            "--url=http://127.0.0.1:%d/api/v1/events/"
                            % srv.port,
                            "--cursor-file=" + folder + ".cursor",
                            "--linger-ms=20", "--retry-min-ms=50",
                            "--retry-max-ms=500", "--stats-s=0", "--once"],
                           env=T.clean_env({"GPUFL_AGENT_TOKEN": srv.token}),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=60, text=True)
        self.assertEqual(r.returncode, 0, r.stdout)
        sids = []
        for n in sorted(os.listdir(folder)):
            if n.endswith(".device.log"):
                with open(os.path.join(folder, n)) as f:
                    sids.append(json.loads(f.readline())["sid"])
        return sids

    def wait_ended(self, srv, sids, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if all(srv.get("/api/v1/sessions/" + s)["state"] == "ended"
                   for s in sids):
                return
            time.sleep(0.2)
        self.fail("sessions did not end: %s" % sids)


class Server(ServerBase):
    def test_by_session_ids(self):
        srv = self.server()
        base = self.path("base")
        for s in (21, 22, 23):
            train(base, s)
        new = self.path("new")
        train(new, 24, {"GPUFL_SIM_PERTURB": "kernel=gemm:x1.2"})
        bids, nids = self.ship(srv, base), self.ship(srv, new)
        self.assertEqual((len(bids), len(nids)), (3, 1))
        # the endpoint itself
        d = srv.get("/api/v1/sessions/%s/durations" % nids[0])
        self.assertEqual(d["session"], nids[0])
        self.assertGreaterEqual(len(d["by_kernel"]), 10)
        k = d["by_kernel"][0]
        self.assertEqual(len(k["values"]), min(k["count"], d["sample"]))
        self.assertEqual(k["values"], sorted(k["values"]))
        self.assertTrue(any(s["path"] == "epoch/train_step"
                            for s in d["by_scope"]), d["by_scope"])
        self.assertFalse(d["truncated"])
        st, _, _ = srv.req("GET", "/api/v1/sessions/%s/durations?x=1" % nids[0])
        self.assertEqual(st, 400)
        st, _, _ = srv.req("GET", "/api/v1/sessions/nope/durations")
        self.assertEqual(st, 404)
        st, _, _ = srv.req("GET", "/api/v1/sessions/%s/durations" % nids[0],
                           token=None)
        self.assertEqual(st, 401)
        url = "http://127.0.0.1:%d" % srv.port
        # the GEMMs x1.2, by ids
        rc, out, err = diff("--server", url, "--token", srv.token,
                            ",".join(bids), nids[0], "--json")
        self.assertEqual(rc, 3, out + err)
        doc = json.loads(out)
        self.assertEqual(doc["base_runs"], bids)
        self.assertEqual(doc["new_runs"], nids)
        self.check_gemm_verdict(doc)
        # noise by ids, the token from GPUFL_TOKEN
        rc, out, err = diff("--server", url, bids[0], bids[1], "--json",
                            env={"GPUFL_TOKEN": srv.token})
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(json.loads(out)["slower"], 0)
        # failures are exit 1 and said
        rc, out, err = diff("--server", url, "--token", "wrong", bids[0],
                            nids[0])
        self.assertEqual(rc, 1, out + err)
        self.assertIn("401", err)
        rc, out, err = diff("--server", url, "--token", srv.token, bids[0],
                            "0000-not-there")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("404", err)
        rc, out, err = diff("--server", url, "--token", srv.token, bids[0],
                            "a/b")
        self.assertEqual(rc, 1, out + err)
        rc, out, err = diff("--server", "http://127.0.0.1:1", "--token", "t",
                            "a", "b")
        self.assertEqual(rc, 1, out + err)


class EndToEnd(ServerBase):
    def test_straggler_and_regression(self):
        t0 = time.time()
        srv = self.server()
        # regressions first (example_train names its app itself: the
        # job's sessions, later, are not in this baseline): 5 unperturbed
        # runs, then one with its GEMMs x1.2
        base = self.path("nightly")
        for s in range(5):
            train(base, 60 + s, steps=10)
        bids = self.ship(srv, base)
        self.wait_ended(srv, bids)
        new = self.path("nightly-new")
        train(new, 70, {"GPUFL_SIM_PERTURB": "kernel=gemm:x1.2"},
              steps=10)
        nid = self.ship(srv, new)[0]
        deadline = time.time() + 60
        while time.time() < deadline:
            r = srv.get("/api/v1/sessions/%s/regressions" % nid)
            if r["scanned"]:
                break
            time.sleep(0.2)
        self.assertTrue(r["scanned"], r)
        # kernels: the GEMMs and nothing else (scope paths are host wall
        # time, which this loaded machine moves: test_jobs.py holds them)
        slower = [i for i in r["items"] if i["kind"] == "slower" and
                  i["subject"] == "kernel"]
        self.assertGreaterEqual(len(slower), 4, r)
        self.assertEqual([i for i in slower if not is_gemm(i["name"])], [])
        self.assertTrue(all(i["lo"] > 1 for i in slower), slower)
        self.assertEqual([i for i in r["items"] if i["kind"] != "slower" and
                          i["subject"] == "kernel"], [])
        # the base runs themselves found no kernel slower
        for b in bids:
            items = srv.get("/api/v1/sessions/%s/regressions" % b)["items"]
            self.assertEqual([i for i in items if i["kind"] == "slower" and
                              i["subject"] == "kernel"], [])
        listed = srv.get("/api/v1/regressions?app=example_train&kind=slower")
        self.assertEqual(sorted(i["name"] for i in listed["items"]
                                if i["subject"] == "kernel"),
                         sorted(i["name"] for i in slower))
        # a 4-rank job: rank 2 runs every kernel 30 % slower
        job = self.path("job")
        for r in range(4):
            extra = {"GPUFL_JOB": "e2e-job", "GPUFL_RANK": str(r),
                     "GPUFL_WORLD_SIZE": "4", "GPUFL_LOCAL_RANK": str(r)}
            if r == 2:
                extra["GPUFL_SIM_PERTURB"] = "kernel=:x1.3"
            train(job, 40 + r, extra, steps=10)
        sids = self.ship(srv, job)
        self.assertEqual(len(sids), 4)
        self.wait_ended(srv, sids)
        j = srv.get("/api/v1/jobs/e2e-job")
        self.assertEqual(j["ranks_seen"], 4)
        self.assertEqual(j["world_size"], 4)
        self.assertEqual(j["verdict"], "straggler", j)
        self.assertEqual([s["rank"] for s in j["stragglers"]], [2], j)
        st = j["stragglers"][0]
        self.assertTrue(1 < st["lo"] <= st["ratio"] <= st["hi"], st)
        self.assertIn("rank 2", st["evidence"])
        # its cause: a kernel of its own holds the extra time
        self.assertIsNotNone(st["kernel"], st)
        self.assertIn(st["kernel"], st["evidence"])
        self.assertEqual([r["straggler"] for r in j["ranks"]],
                         [r["rank"] == 2 for r in j["ranks"]])
        print("end to end: %.1f s" % (time.time() - t0), file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
