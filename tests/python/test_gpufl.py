"""test_gpufl.py - the Python package (python/gpufl) against the built
libgpufl on the simulated GPU: the binding, options and environment,
gpufl.analysis, and an offline pip install.  Run by ctest (python.cmake)
with GPUFL_LIB pointing at build/lib/libgpufl.so."""
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PKG = os.path.join(REPO, "python")
sys.path.insert(0, PKG)
import gpufl  # noqa: E402
from gpufl import analysis  # noqa: E402

TMPROOT = os.environ.get("GPUFL_TEST_TMP")


def run_py(code, env=None, path=PKG):
    """Runs code in a fresh interpreter (one gpufl session per process
    keeps the tests independent); returns stdout."""
    e = dict(os.environ, PYTHONPATH=path, GPUFL_ENGINES="sim",
             PYTHONDONTWRITEBYTECODE="1", **(env or {}))
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=e,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if p.returncode:
        raise AssertionError(p.stderr.decode())
    return p.stdout.decode()


class Binding(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="py-", dir=TMPROOT)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_version_and_library(self):
        self.assertRegex(gpufl.version(), r"^\d+\.\d+\.\d+$")
        self.assertTrue(os.path.exists(gpufl.library_path()))

    def test_options_defaults_match_c(self):
        o = eval(run_py("""
            import os, gpufl
            for k in list(os.environ):
                if k.startswith("GPUFL_") and k != "GPUFL_LIB":
                    del os.environ[k]
            print(repr(gpufl.options()))"""))
        # the defaults of include/gpufl/gpufl.h / src/client/options.c
        self.assertEqual(o["log_dir"], ".")
        self.assertEqual(o["engines"], "auto")
        self.assertEqual(o["system_interval_ms"], 1000)
        self.assertEqual(o["rotate_bytes"], 64 << 20)
        self.assertEqual(o["rotate_keep"], 20)
        self.assertEqual(o["min_free_bytes"], 256 << 20)
        self.assertEqual(o["ring_events"], 16384)
        self.assertEqual(o["flush_ms"], 100)
        self.assertEqual(o["sim_speed"], 1.0)
        self.assertEqual(o["stack_depth"], 32)
        self.assertEqual(o["log_level"], -1)
        self.assertIsNone(o["app"])
        self.assertEqual(o["record"], "file")
        self.assertEqual(o["triggers"],
                         "signal,crash,exit-error,cuda-error,oom,ctl")
        self.assertEqual(o["trigger_after_ms"], 10000)
        self.assertEqual((o["ctl"], o["trace"]), (1, 1))
        # the job and rank: the launcher's unless set
        self.assertIsNone(o["job"])
        self.assertEqual((o["rank"], o["world_size"], o["local_rank"]), (-1, -1, -1))
        self.assertIsNone(o["sim_perturb"])

    def test_job_keywords(self):
        out = run_py("""
            import glob, json, gpufl
            gpufl.init(app="pyjob", log_dir=%r, engines="sim", sim_steps=1,
                       sim_speed=50, job="py-job", rank=1, world_size=2,
                       step_scope="train_step", sim_perturb="kernel=gemm:x2")
            gpufl.shutdown()
            f = glob.glob(%r + "/pyjob.*.device.log")[0]
            h = json.loads(open(f).readline())
            print(h["job"], h["rank"], h["world_size"], h["job_source"],
                  h["step_scope"], h["sim_perturb"])
            """ % (self.dir, self.dir))
        self.assertEqual(out.split(), ["py-job", "1", "2", "gpufl", "train_step",
                                       "kernel=gemm:x2"])

    def test_options_size_is_ours(self):
        # the binding passes ctypes.sizeof of its mirror: a mirror older
        # than the library (here: without the CUPTI fields) is filled up to
        # its own size and not a byte further
        out = run_py("""
            import ctypes, gpufl
            n = [f for f, _ in gpufl._Options._fields_].index("cupti_lib")
            class Old(ctypes.Structure):
                _fields_ = gpufl._Options._fields_[:n]
            class Probe(ctypes.Structure):
                _fields_ = [("o", Old), ("canary", ctypes.c_ubyte * 64)]
            p = Probe()
            ctypes.memset(ctypes.byref(p), 0xA5, ctypes.sizeof(p))
            rc = gpufl._options_init(p.o)
            print(rc, p.o.sz == ctypes.sizeof(Old), p.o.ring_events,
                  sum(b != 0xA5 for b in p.canary))
            o, rc = gpufl._defaults()
            print(o.sz == ctypes.sizeof(gpufl._Options))
            """)
        self.assertEqual(out.split(), ["0", "True", "16384", "0", "True"])

    def test_environment_and_keywords(self):
        o = eval(run_py("import gpufl; print(repr(gpufl.options(flush_ms=7)))",
                        env={"GPUFL_SYSTEM_INTERVAL_MS": "250",
                             "GPUFL_ROTATE_BYTES": "1M", "GPUFL_FLUSH_MS": "50"}))
        self.assertEqual(o["system_interval_ms"], 250)
        self.assertEqual(o["rotate_bytes"], 1 << 20)
        self.assertEqual(o["flush_ms"], 7)  # keywords win over the environment
        with self.assertRaises(TypeError):
            gpufl.options(no_such_option=1)

    def test_session_scopes_markers_counters(self):
        out = run_py("""
            import gpufl, time
            sid = gpufl.init(app="pytest", log_dir=%r, sim_steps=4, sim_speed=50,
                             system_interval_ms=50)
            print(sid)
            assert gpufl.active()
            with gpufl.scope("outer"):
                with gpufl.scope("inner"):
                    gpufl.marker("hello from python")
            @gpufl.scope("decorated")
            def f(x):
                return x * 2
            assert f(21) == 42
            c = gpufl.counter("samples_seen")
            c.add(256); c.add(256)
            time.sleep(0.3)
            gpufl.flush(2000)
            gpufl.shutdown()
            assert not gpufl.active()
            """ % self.dir)
        sid = out.split()[0]
        [s] = analysis.load(self.dir)
        self.assertEqual(s.sid, sid)
        self.assertTrue(s.simulated)
        self.assertEqual(s.header["app"], "pytest")
        paths = {x["path"] for x in s.scopes}
        self.assertTrue({"outer", "outer/inner", "decorated"} <= paths, paths)
        inner = [x for x in s.scopes if x["path"] == "outer/inner"][0]
        outer = [x for x in s.scopes if x["path"] == "outer"][0]
        self.assertTrue(outer["ts"] <= inner["ts"] and
                        inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"])
        self.assertEqual([m["text"] for m in s.markers], ["hello from python"])
        self.assertEqual(s.counters[-1]["name"], "samples_seen")
        self.assertEqual(s.counters[-1]["value"], 512)
        self.assertGreater(len(s.kernels), 0)
        self.assertTrue(s.summary()["complete"])

    def test_disabled(self):
        out = run_py("import gpufl; print(gpufl.init(log_dir=%r))" % self.dir,
                     env={"GPUFL_DISABLED": "1"})
        self.assertEqual(out.strip(), "None")

    def test_bad_option_raises(self):
        out = run_py("""
            import gpufl
            try:
                gpufl.init(log_dir=%r, ring_events=3)
            except gpufl.GpuflError as e:
                print("error", e.code)
            """ % self.dir)
        self.assertEqual(out.strip(), "error 1")


class Analysis(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="pya-", dir=TMPROOT)
        exe = os.path.join(os.environ["GPUFL_BIN_DIR"], "example_train")
        env = dict(os.environ, GPUFL_ENGINES="sim", GPUFL_ROTATE_BYTES="65536",
                   GPUFL_ROTATE_ZSTD="1")
        # a sanitizer build preloads its runtime for Python (python.cmake);
        # the C program links it itself and refuses a second copy
        env.pop("LD_PRELOAD", None)
        subprocess.run([exe, "--steps", "10", "--speed", "50", "--log-dir", cls.dir],
                       env=env, check=True, stdout=subprocess.DEVNULL)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_matches_independent_reader(self):
        sys.path.insert(0, os.path.join(REPO, "tests", "client"))
        import gpufl_logs
        ref = gpufl_logs.validate(self.dir)
        [s] = analysis.load(self.dir)
        r = ref[s.sid]
        self.assertEqual(len(s.kernels), len(r.streams["device"].of("kernel")))
        self.assertEqual(len(s.copies), len(r.streams["device"].of("memcpy")))
        self.assertEqual(len(s.scopes), len(r.streams["scope"].of("scope_end")))
        self.assertEqual(sum(k["dur"] for k in s.kernels),
                         sum(e["dur"] for e in r.streams["device"].of("kernel")))
        rows = s.kernel_summary()
        self.assertEqual(sum(x["count"] for x in rows), len(s.kernels))
        self.assertAlmostEqual(sum(x["share"] for x in rows), 1.0, places=6)
        self.assertTrue(all(x["p50_ns"] <= x["p99_ns"] <= x["max_ns"] for x in rows))
        cs = {c["kind"]: c for c in s.copy_summary()}
        self.assertIn("htod", cs)
        self.assertGreater(cs["htod"]["gbps"], 0)
        dev = s.device_summary()[0]
        self.assertLessEqual(dev["busy_ns"], dev["span_ns"])
        self.assertGreater(dev["samples"], 0)
        self.assertIn("epoch/train_step", {x["path"] for x in s.scope_summary()})
        self.assertEqual(analysis.load(self.dir, session=s.sid[:8])[0].sid, s.sid)
        self.assertEqual(analysis.load(self.dir, session="nomatch"), [])


def pip_python():
    """An interpreter that can build the package offline: this one, else
    Debian's (python3-pip, python3-setuptools, python3-wheel)."""
    for exe in (sys.executable, "/usr/bin/python3"):
        if exe and os.path.exists(exe) and subprocess.run(
                [exe, "-c", "import setuptools, wheel, pip"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
            return exe
    return None


class PipInstall(unittest.TestCase):
    def test_offline_install(self):
        exe = pip_python()
        self.assertIsNotNone(exe, "no Python with pip, setuptools and wheel: "
                             "apt-get install python3-pip python3-setuptools "
                             "python3-wheel (scripts/deps/report.test)")
        target = tempfile.mkdtemp(prefix="pip-", dir=TMPROOT)
        # a copy, so the build leaves nothing (build/, *.egg-info) in the tree
        src = os.path.join(target, "src")
        shutil.copytree(PKG, src, ignore=shutil.ignore_patterns(
            "__pycache__", "build", "*.egg-info"))
        try:
            p = subprocess.run([exe, "-m", "pip", "install", "--no-index",
                                "--no-build-isolation", "--no-deps", "--quiet",
                                "--disable-pip-version-check",
                                "--target", os.path.join(target, "site"), src],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=240, cwd=target)
            self.assertEqual(p.returncode, 0, p.stdout.decode()[-3000:])
            e = dict(os.environ, PYTHONPATH=os.path.join(target, "site"))
            out = subprocess.run([exe, "-c", "import gpufl, gpufl.analysis; "
                                  "print(gpufl.__file__, gpufl.version())"], env=e,
                                 stdout=subprocess.PIPE, check=True).stdout.decode()
            self.assertTrue(out.startswith(os.path.join(target, "site")), out)
        finally:
            shutil.rmtree(target, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
