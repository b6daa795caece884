"""test_attach.py - `gpufl attach PID` (docs/recorder.md#gpufl-attach)
against prog_attach, a running program that never linked gpufl and
launches kernels through the fake libcuda.so.1 (tests/cupti/fake_cuda.c):
kernel lines appear in a session of that pid, the program goes on and
finishes with its own output; and the refusals: a second attach, a static
program, another CUPTI client in the process, another user, a stopped
process, a process that exited, a library that does not load.  The logs are read by the independent reader
tests/client/gpufl_logs.py.

Needs GPUFL_BIN_DIR, GPUFL_FAKE_DIR, GPUFL_TEST_TMP (GPUFL_INJECT_LIB
names the injection library).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "client"))
import gpufl_logs as gl  # noqa: E402

BIN = os.environ.get("GPUFL_BIN_DIR", "build/bin")
FAKE = os.environ.get("GPUFL_FAKE_DIR", "build/fake")
TMP = os.environ.get("GPUFL_TEST_TMP", tempfile.gettempdir())
CUPTI = os.path.join(FAKE, "cupti-full", "libcupti.so.13")
GPUFL = os.path.join(BIN, "gpufl")


class Attach(unittest.TestCase):
    def setUp(self):
        os.makedirs(TMP, exist_ok=True)
        self.dir = tempfile.mkdtemp(prefix=self._testMethodName + ".", dir=TMP)
        os.chmod(self.dir, 0o755)
        self.logs = os.path.join(self.dir, "logs")
        self.script = os.path.join(self.dir, "script")
        open(self.script, "w").close()

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def start(self, prog, *args, script=""):
        """The target: no GPUFL_* but the CUPTI path the fake driver reads
        (a real driver finds CUPTI's tool interface by itself)."""
        with open(self.script, "w") as f:
            f.write(script)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GPUFL_", "CUDA_INJECTION", "FAKECUPTI"))}
        env.update({"GPUFL_CUPTI_LIB": CUPTI, "GPUFL_CUPTI_FLUSH_MS": "50",
                    "FAKECUPTI_SCRIPT": self.script})
        # In the sanitizer build the target is an ASan program into which
        # the (ASan) libgpufl is loaded by dlopen; its main thread then uses
        # that library's thread-locals (the launch callbacks).  Up to LLVM
        # 16 the runtime's __tls_get_addr interceptor can take such a
        # dynamic TLS block for a glibc 2.19 one and LeakSanitizer's tracer
        # dies at exit on the bogus range (google/sanitizers#1322; the same
        # with a plain dlopen, no ptrace).  Leak checking stays on.
        env["ASAN_OPTIONS"] = ":".join(
            x for x in (env.get("ASAN_OPTIONS"), "intercept_tls_get_addr=0")
            if x)
        p = subprocess.Popen([os.path.join(BIN, prog)] + list(args), env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=self.dir)

        def stop():
            if p.poll() is None:
                p.kill()
                p.wait()
            p.stdout.close()
            p.stderr.close()
        self.addCleanup(stop)
        line = p.stdout.readline()
        if not line.startswith("pid "):
            self.fail(line + p.stderr.read())
        return p, int(line.split()[1])

    def attach(self, pid, *args, rc=0, pre=()):
        r = subprocess.run(list(pre) + [GPUFL, "attach", str(pid)] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=120)
        if r.returncode != rc:
            self.fail("gpufl attach %s: exit %d, not %d\n%s%s"
                      % (args, r.returncode, rc, r.stdout, r.stderr))
        out = json.loads(r.stdout) if r.stdout.strip() else None
        return out, r.stderr

    def finish(self, p):
        """The program ends by itself, with its own output only."""
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, out + err)
        self.assertEqual(err, "")
        lines = out.split("\n")
        self.assertEqual(lines[-1], "")
        ticks = [ln for ln in lines[:-2] if ln]
        self.assertEqual(ticks, ["tick %d" % (100 * (i + 1))
                                 for i in range(len(ticks))])
        self.assertTrue(lines[-2].startswith("done "), lines[-2])
        return int(lines[-2].split()[1])

    def kernels(self, pid, sid):
        sessions = gl.validate(self.logs)
        self.assertIn(sid, sessions)
        s = sessions[sid]
        self.assertEqual(s.header["pid"], pid)
        self.assertEqual(s.header["engines"]["cupti"], "on")
        # the session ended with CUDA tracing switched off (the process
        # runs on without paying for it)
        marks = [m["text"] for m in s.streams["scope"].of("marker")]
        # CUPTI's drops are reported at its close, after that mark (the
        # fake's buffers fill on a loaded machine: CI saw dropped=1); a
        # reported drop is not what this checks
        while marks and marks[-1].startswith("cupti: dropped="):
            marks.pop()
        self.assertEqual(marks[-1:], ["gpufl: tracing off (gpufl ctl)"])
        ks = s.streams["device"].of("kernel")
        for k in ks:
            self.assertEqual(s.name(s.launch(k["cfg"])["name"]), "attach_kern")
        return ks

    def test_attach_for_records_and_leaves_the_program_running(self):
        p, pid = self.start("prog_attach", "6")
        time.sleep(0.5)
        t0 = time.monotonic()
        out, err = self.attach(pid, "--for", "2s", "--log-dir", self.logs)
        took = time.monotonic() - t0
        self.assertTrue(out["ok"] and out["ended"], out)
        self.assertGreaterEqual(took, 2.0)
        self.assertTrue(out["prefix"].startswith(self.logs + "/prog_attach."))
        self.assertIsNone(p.poll(), "the program ended with the session")
        ks = self.kernels(pid, out["sid"])
        # 2 s of one launch per ~2 ms
        self.assertGreater(len(ks), 100)
        done = self.finish(p)
        self.assertLess(len(ks), done)  # only those of the session

    def test_twice_refused_then_stop_then_again(self):
        p, pid = self.start("prog_attach", "8")
        out, _ = self.attach(pid, "--log-dir", self.logs, "--engines",
                             "cupti")
        self.assertTrue(out["ok"] and not out["ended"], out)
        _, err = self.attach(pid, "--for", "1s", rc=1)
        self.assertIn("already runs a gpufl session", err)
        self.assertIn("gpufl ctl %d" % pid, err)
        # gpufl ctl reaches the attached session
        r = subprocess.run([GPUFL, "ctl", str(pid), "status"],
                           stdout=subprocess.PIPE, text=True, timeout=60)
        st = json.loads(r.stdout)
        self.assertEqual((st["ok"], st["trace"], st["sid"]),
                         (True, "on", out["sid"]))
        time.sleep(1)
        stopped, _ = self.attach(pid, "--stop")
        self.assertTrue(stopped["ok"] and stopped["ended"], stopped)
        self.assertEqual(stopped["sid"], out["sid"])
        self.assertIsNone(p.poll())
        _, err = self.attach(pid, "--stop", rc=1)
        self.assertIn("no session started by gpufl attach", err)
        # the library stays loaded; a new session starts in it
        again, _ = self.attach(pid, "--for", "1s", "--log-dir", self.logs)
        self.assertTrue(again["ok"] and again["ended"], again)
        self.assertNotEqual(again["sid"], out["sid"])
        first = self.kernels(pid, out["sid"])
        second = self.kernels(pid, again["sid"])
        self.assertGreater(len(first), 100)
        self.assertGreater(len(second), 50)
        self.finish(p)

    def test_dlopen_failure_reported_and_thread_restored(self):
        bad = os.path.join(self.dir, "libnotalib.so")
        with open(bad, "w") as f:
            f.write("not an ELF file\n" * 20)
        p, pid = self.start("prog_attach", "3")
        out, err = self.attach(pid, "--for", "1s", "--inject", bad, rc=1)
        self.assertIn("dlopen(%s) failed in process %d: " % (bad, pid), err)
        self.assertIn("invalid ELF header", err)
        self.assertIsNone(out)
        # the borrowed thread goes on as before, its nanosleep restarted
        self.finish(p)

    def test_static_program_refused(self):
        p, pid = self.start("prog_attach_static", "30")
        _, err = self.attach(pid, "--for", "1s", rc=1)
        self.assertIn("maps no C library", err)
        self.assertIsNone(p.poll())

    def test_cupti_client_already_attached(self):
        # CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED from cuptiSubscribe
        p, pid = self.start("prog_attach", "5", script="fail subscribe 39\n")
        out, err = self.attach(pid, "--for", "1s", "--log-dir", self.logs,
                               rc=1)
        self.assertIn("another CUPTI tool is attached", err)
        self.assertFalse(out["ok"])
        self.assertTrue(out["ended"], out)
        self.assertIn("another CUPTI tool", out["error"])
        self.assertIsNone(p.poll())
        self.finish(p)

    def test_another_users_process_refused(self):
        if os.geteuid() != 0 or not shutil.which("setpriv"):
            self.skipTest("needs root and setpriv to run gpufl as nobody")
        p, pid = self.start("prog_attach", "5")
        _, err = self.attach(pid, "--for", "1s", rc=1,
                             pre=["setpriv", "--reuid=65534", "--regid=65534",
                                  "--clear-groups"])
        self.assertIn("belongs to uid 0 and you are uid 65534", err)
        self.finish(p)

    def test_stopped_process_refused(self):
        p, pid = self.start("prog_attach", "3")
        os.kill(pid, signal.SIGSTOP)
        try:
            _, err = self.attach(pid, "--for", "1s", rc=1)
        finally:
            os.kill(pid, signal.SIGCONT)
        self.assertIn("is stopped (SIGSTOP, Ctrl-Z)", err)
        self.finish(p)

    def test_exited_process_refused(self):
        p = subprocess.Popen(["true"])
        p.wait()
        _, err = self.attach(p.pid, rc=1)
        self.assertIn("does not exist", err)

    def test_usage(self):
        r = subprocess.run([GPUFL, "attach"], stderr=subprocess.PIPE,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        r = subprocess.run([GPUFL, "attach", "1", "--stop", "--for", "1s"],
                           stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--stop takes no other option", r.stderr)
        r = subprocess.run([GPUFL, "attach", "--help"],
                           stdout=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(r.returncode, 0)
        self.assertIn("--for=DUR", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
