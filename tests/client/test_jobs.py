"""test_jobs.py - the job and rank in the session line, and the simulated
GPU's perturbations (GPUFL_SIM_PERTURB), measured from the written logs of
real runs of example_train (read by gpufl_logs.py, Python's json).

Needs GPUFL_BIN_DIR (the build's bin/) and GPUFL_TEST_TMP.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpufl_logs as gl  # noqa: E402

BIN = os.environ.get("GPUFL_BIN_DIR", "build/bin")
TMP = os.environ.get("GPUFL_TEST_TMP", tempfile.gettempdir())
LAUNCHER = ("TORCHELASTIC_", "SLURM_", "OMPI_", "PMI_")
STEPS = 12


def train(d, env_extra, steps=STEPS, check=True):
    """One run of example_train into d; its one session, or the process."""
    os.makedirs(d, exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GPUFL_",) + LAUNCHER)
           and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env.update({"GPUFL_SYSTEM_INTERVAL_MS": "20", "GPUFL_SIM_SEED": "5"})
    env.update(env_extra)
    p = subprocess.run([BIN + "/example_train", "--steps", str(steps),
                        "--speed", "200", "--log-dir", d], env=env,
                       timeout=120, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if not check:
        return p
    if p.returncode:
        raise AssertionError("example_train exited %d: %s" % (p.returncode, p.stderr))
    s = gl.validate(d)
    assert len(s) == 1, s
    return next(iter(s.values()))


def headers(sess):
    """The session line of each of the three streams."""
    return [sess.streams[k].of("session")[0] for k in ("device", "scope", "system")]


def kernels(sess):
    """(name, step, dur) of every kernel, in order; the step from the
    train_step scope the kernel ran in."""
    sc = sess.streams["scope"]
    begins = {e["id"]: e for e in sc.of("scope_begin")}
    step_of, steps = {}, 0
    for e in sc.of("scope_begin"):
        if sess.name(e["name"]) == "train_step":
            step_of[e["id"]] = steps
            steps += 1

    def step(scope_id):
        while scope_id in begins and scope_id not in step_of:
            scope_id = begins[scope_id].get("parent")
        return step_of.get(scope_id)
    return [(sess.name(sess.launch(k["cfg"])["name"]), step(k["scope"]), k["dur"])
            for k in sess.streams["device"].of("kernel")]


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self._testMethodName + ".", dir=TMP)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)


class Jobs(Base):
    def test_gpufl_vars_in_every_stream(self):
        s = train(self.dir, {"GPUFL_JOB": "demo job/1", "GPUFL_RANK": "2",
                             "GPUFL_WORLD_SIZE": "4", "GPUFL_LOCAL_RANK": "2",
                             "GPUFL_STEP_SCOPE": "train_step"}, steps=2)
        for h in headers(s):
            self.assertEqual(h["job"], "demo_job_1")
            self.assertEqual((h["rank"], h["world_size"], h["local_rank"]), (2, 4, 2))
            self.assertEqual(h["job_source"], "gpufl")
            self.assertEqual(h["step_scope"], "train_step")
            self.assertNotIn("sim_perturb", h)
            self.assertNotIn("warning", h)

    def test_launchers(self):
        cases = [
            ({"TORCHELASTIC_RUN_ID": "r1", "RANK": "1", "WORLD_SIZE": "2",
              "LOCAL_RANK": "1", "SLURM_JOB_ID": "9", "SLURM_PROCID": "0",
              "SLURM_NTASKS": "1"},
             {"job": "r1", "rank": 1, "world_size": 2, "local_rank": 1,
              "job_source": "torchelastic"}),
            ({"SLURM_JOB_ID": "4242", "SLURM_STEP_ID": "0", "SLURM_PROCID": "3",
              "SLURM_NTASKS": "8", "SLURM_LOCALID": "3"},
             {"job": "4242.0", "rank": 3, "world_size": 8, "local_rank": 3,
              "job_source": "slurm"}),
            ({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2",
              "OMPI_MCA_ess_base_jobid": "77"},
             {"job": "77", "rank": 0, "world_size": 2, "job_source": "ompi"}),
            ({"PMI_RANK": "1", "PMI_SIZE": "2", "GPUFL_JOB": "hydra-1"},
             {"job": "hydra-1", "rank": 1, "world_size": 2, "job_source": "gpufl"}),
        ]
        keys = ("job", "rank", "world_size", "local_rank", "job_source")
        for i, (env, want) in enumerate(cases):
            h = train("%s/%d" % (self.dir, i), env, steps=1).header
            self.assertEqual({k: h[k] for k in keys if k in h}, want)

    def test_no_job_writes_no_fields(self):
        # a rank without a job id (PMI alone) is not a job
        h = train(self.dir, {"PMI_RANK": "1", "PMI_SIZE": "2"}, steps=1).header
        for k in ("job", "rank", "world_size", "local_rank", "job_source",
                  "step_scope", "sim_perturb"):
            self.assertNotIn(k, h)

    def test_bad_value_is_the_warning(self):
        h = train(self.dir, {"SLURM_JOB_ID": "5", "SLURM_PROCID": "x",
                             "SLURM_NTASKS": "2"}, steps=1).header
        self.assertNotIn("job", h)
        self.assertIn('SLURM_PROCID="x"', h["warning"])
        h = train(self.dir + "/b", {"GPUFL_JOB": "j", "GPUFL_RANK": "4",
                                    "GPUFL_WORLD_SIZE": "4"}, steps=1).header
        self.assertNotIn("job", h)
        self.assertIn("rank 4 of 4", h["warning"])


class Perturb(Base):
    @classmethod
    def setUpClass(cls):
        cls.base_dir = tempfile.mkdtemp(prefix="perturb_base.", dir=TMP)
        cls.base = train(cls.base_dir, {})

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.base_dir, ignore_errors=True)

    def ratios(self, sess):
        a, b = kernels(self.base), kernels(sess)
        self.assertEqual([(n, st) for n, st, _ in a], [(n, st) for n, st, _ in b])
        return [(n, st, y / x) for (n, st, x), (_, _, y) in zip(a, b)]

    def test_kernel_factor(self):
        s = train(self.dir, {"GPUFL_SIM_PERTURB": "kernel=gemm:x1.2"})
        for h in headers(s):
            self.assertEqual(h["sim_perturb"], "kernel=gemm:x1.2")
        r = self.ratios(s)
        gemm = [q for n, _, q in r if "gemm" in n]
        rest = [q for n, _, q in r if "gemm" not in n]
        self.assertGreater(len(gemm), STEPS * 50)
        # the same seed: each GEMM is its unperturbed self x 1.2 (to the
        # nanosecond the durations are rounded to), the rest unchanged
        for q in gemm:
            self.assertAlmostEqual(q, 1.2, delta=0.001)
        self.assertEqual(set(rest), {1.0})
        self.assertAlmostEqual(statistics.median(gemm), 1.2, places=3)

    def test_kernel_from_step_and_every_kernel(self):
        s = train(self.dir, {"GPUFL_SIM_PERTURB": "kernel=:x1.3@5"})
        for n, st, q in self.ratios(s):
            if st is None or st < 5:
                self.assertEqual(q, 1.0, (n, st))
            else:
                self.assertAlmostEqual(q, 1.3, delta=0.001, msg=(n, st))

    def test_noise_differs_by_seed(self):
        # GPUFL_SIM_SEED is the run-to-run noise: another seed moves every
        # kernel by up to +-10 %, not more
        s = train(self.dir, {"GPUFL_SIM_SEED": "6"})
        r = [q for _, _, q in self.ratios(s)]
        self.assertGreater(len(set(r)), len(r) // 2)
        self.assertTrue(all(0.9 / 1.1 - 1e-3 < q < 1.1 / 0.9 + 1e-3 for q in r))
        self.assertAlmostEqual(statistics.median(r), 1.0, delta=0.02)

    def test_stall(self):
        s = train(self.dir, {"GPUFL_SIM_PERTURB": "stall=0.5@3"})

        def data_loading(sess):
            return [e["dur"] for e in sess.streams["scope"].of("scope_end")
                    if sess.name(e["name"]) == "data_loading"]
        a, b = data_loading(self.base), data_loading(s)
        self.assertEqual(len(a), STEPS)
        for i, (x, y) in enumerate(zip(a, b)):
            self.assertEqual(y - x, 500000000 if i == 3 else 0, i)
        # and the GPU idled: the kernels are unchanged
        self.assertEqual(set(q for _, _, q in self.ratios(s)), {1.0})

    def test_mem(self):
        s = train(self.dir, {"GPUFL_SIM_PERTURB": "mem=+3GiB"})
        allocs = [e["bytes"] for e in s.streams["device"].of("alloc")]
        base = [e["bytes"] for e in self.base.streams["device"].of("alloc")]
        self.assertEqual(allocs, base + [3 << 30])
        self.assertEqual(len(s.streams["device"].of("free")),
                         len(self.base.streams["device"].of("free")))
        # the gpu lines: samples come on the real clock, so which moments
        # they catch varies; what is held after the first allocations is
        # 14 + 22 GiB (+ the 2 GiB workspace until the end) + 512 MiB of
        # context, and the extra 3 GiB: above anything the base run holds
        gib, ctx = 1 << 30, 512 << 20
        top = max(g["mem_used"] for g in s.streams["system"].of("gpu"))
        top0 = max(g["mem_used"] for g in self.base.streams["system"].of("gpu"))
        self.assertIn(top0, (36 * gib + ctx, 38 * gib + ctx))
        self.assertIn(top, (39 * gib + ctx, 41 * gib + ctx))

    def test_bad_value_refused(self):
        p = train(self.dir, {"GPUFL_SIM_PERTURB": "kernel=gemm:1.2"}, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn('GPUFL_SIM_PERTURB item "kernel=gemm:1.2"', p.stderr)
        self.assertEqual(os.listdir(self.dir), [])

    def test_not_simulated_is_said(self):
        d = self.dir
        os.makedirs(d, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}
        env.update({"GPUFL_ENGINES": "host", "GPUFL_SIM_PERTURB": "mem=+1G"})
        subprocess.run([BIN + "/example_train", "--steps", "1", "--log-dir", d],
                       env=env, timeout=60, check=True, stdout=subprocess.PIPE)
        h = next(iter(gl.validate(d).values())).header
        self.assertNotIn("sim_perturb", h)
        self.assertIn("simulated GPU is not on", h["warning"])


if __name__ == "__main__":
    unittest.main()
