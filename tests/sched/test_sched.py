"""test_sched.py - `gpufl idle` against the real schedulers, started here
from Debian's packages on 127.0.0.1 (scripts/deps/idle.test installs them):

- Slurm (slurmctld + slurmd + munge, one node with two fake GPUs,
  slurm-up.sh): a real job's process on a GPU is charged to its job and
  user, a job holding a GPU with no process on it is ALLOCATED_UNUSED and
  its waste charged to it (`scontrol show job -d`), and the hook example
  deploy/slurm/gpufl-idle-slurm-hook.sh requeues or cancels real jobs.
- JupyterHub (the Hub alone, a spawner without processes, hub-up.sh):
  `watch --jupyterhub-url` moves alice's last_activity while her process
  keeps a GPU busy, and leaves it alone while her GPU is only held.

GPUs are the scripted fake libnvidia-ml.so.1 of the idle tests, listing
real processes started here (environment JUPYTERHUB_USER, or a Slurm job's
own processes).  Skipped (77) only when the schedulers' binaries are absent.
Environment: GPUFL_BIN_DIR, GPUFL_TEST_TMP, FAKE_NVML.
"""
import atexit
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "idle"))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
import srvtest  # noqa: E402
import test_idle as ti  # noqa: E402  (helpers only: its classes stay there)

GPUFL = ti.GPUFL
FAKE = ti.FAKE
ROOT = os.path.dirname(os.path.dirname(HERE))
HOOK = os.path.join(ROOT, "deploy", "slurm", "gpufl-idle-slurm-hook.sh")
FAST = ["--interval", "100", "--window", "1", "--grace", "0"]
GIB = 1 << 30


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_range(n=20):
    """n consecutive free ports (srun's), checked one by one."""
    for _ in range(50):
        lo = random.randrange(20000, 30000)
        try:
            for p in range(lo, lo + n):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
            return "%d-%d" % (lo, lo + n - 1)
        except OSError:
            continue
    raise RuntimeError("no free port range")


def have(*bins):
    return all(shutil.which(b) for b in bins)


def script(d, text):
    path = os.path.join(d, "nvml.txt")
    with open(path, "w") as f:
        f.write(text)
    return path


def watch(args, env, seconds):
    """Starts `gpufl idle watch --listen 127.0.0.1:0 ARGS` for seconds;
    returns (process, base URL)."""
    p = subprocess.Popen(
        [GPUFL, "idle", "watch", "--nvml-lib", FAKE, "--listen",
         "127.0.0.1:0", "--duration", str(seconds)] + args,
        env=srvtest.clean_env(env), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    port, buf = ti.listen_port(p)
    if port is None:
        p.kill()
        p.wait()
        raise AssertionError("watch did not listen: " + buf)
    return p, "http://127.0.0.1:%d" % port


def stop(p):
    """SIGTERM (a clean exit: the sanitizer build checks for leaks then),
    KILL when it does not end within 10 s; its stderr."""
    if p.poll() is None:
        p.terminate()
    try:
        _, err = p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        err += "\n(did not stop on SIGTERM)"
    return err


# ---------------------------------------------------------------- Slurm

class Slurm(unittest.TestCase):
    """One throw-away Slurm for the class (its start takes ~1 s, the
    first job 2-3 s); every test cancels its jobs."""

    @classmethod
    def setUpClass(cls):
        if not have("slurmctld", "slurmd", "munged", "scontrol", "sbatch"):
            raise unittest.SkipTest("slurmctld/slurmd/munge not installed")
        cls.base = os.path.join(ti.TMP, "sched_slurm_%d" % os.getpid())
        shutil.rmtree(cls.base, ignore_errors=True)
        os.makedirs(cls.base)
        cls.env = dict(os.environ, BASE=cls.base,
                       CTLD_PORT=str(free_port()),
                       SLURMD_PORT=str(free_port()), SRUN_PORTS=free_range())
        cls.env["SLURM_CONF"] = os.path.join(cls.base, "etc", "slurm.conf")
        # daemons left running would outlive the test: stopped at exit too
        # (an exception, ^C), not only by tearDownClass
        atexit.register(cls.tearDownClass)
        r = subprocess.run([os.path.join(HERE, "slurm-up.sh")], env=cls.env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=60)
        if r.returncode != 0:
            cls.tearDownClass()
            raise AssertionError("slurm-up.sh failed:\n" + r.stdout)

    @classmethod
    def tearDownClass(cls):
        subprocess.run([os.path.join(HERE, "slurm-down.sh")], env=cls.env,
                       timeout=60)

    def sl(self, *args, check=True):
        r = subprocess.run(list(args), env=self.env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=30)
        if check:
            self.assertEqual(r.returncode, 0, "%s: %s" % (args, r.stdout))
        return r.stdout

    def submit(self, *extra):
        """A job of nobody's holding one GPU, running sleep; its id."""
        jobs = os.path.join(self.base, "jobs")
        jid = self.sl("sbatch", "--parsable", "--uid=nobody", "--gid=nogroup",
                      "--chdir=" + jobs, "-o", jobs + "/%j.out",
                      "--gres=gpu:1", *extra, "--wrap", "sleep 120").strip()
        self.addCleanup(self.sl, "scancel", jid, check=False)
        return jid

    def show(self, jid):
        return self.sl("scontrol", "show", "job", "-d", jid)

    def wait_running(self, jid):
        deadline = time.time() + 20
        while time.time() < deadline:
            if "JobState=RUNNING" in self.show(jid):
                return
            time.sleep(0.1)
        self.fail("job %s not RUNNING: %s" % (jid, self.show(jid)))

    def gpu_of(self, jid):
        m = re.search(r"GRES=gpu:1\(IDX:(\d)\)", self.show(jid))
        self.assertIsNotNone(m, self.show(jid))
        return int(m.group(1))

    def job_pid(self, jid):
        """The job's sleep (the newest of its processes)."""
        deadline = time.time() + 10
        while time.time() < deadline:
            out = self.sl("scontrol", "listpids", jid, check=False)
            pids = [int(l.split()[0]) for l in out.splitlines()[1:]
                    if l.split() and l.split()[0].isdigit()
                    and int(l.split()[0]) > 0]
            for p in sorted(pids, reverse=True):
                try:
                    with open("/proc/%d/cmdline" % p, "rb") as f:
                        if f.read().startswith(b"sleep"):
                            return p
                except OSError:
                    pass
            time.sleep(0.05)
        self.fail("no sleep process in job %s" % jid)

    def nvml(self, busy_gpu, pid):
        """Two fake GPUs: busy_gpu runs pid at 50 %, the other is empty."""
        lines = ["global count=2 autotick=nvmlDeviceGetUtilizationRates"]
        for i in range(2):
            if i == busy_gpu:
                lines.append("dev %d uuid=GPU-s%d util=90 mem_used=%d "
                             "power=200000 power_limit=300000 procs=%d:%d "
                             "putil=%d:50" % (i, i, GIB, pid, GIB, pid))
            else:
                lines.append("dev %d uuid=GPU-s%d util=0 mem_used=0 procs="
                             % (i, i))
        return script(self.base, "\n".join(lines) + "\n")

    def test_job_owner_and_allocated_unused(self):
        """A process of job A on its GPU: busy seconds labelled job A, user
        nobody.  Job B holds the other GPU with no process: ALLOCATED_UNUSED,
        its waste charged to job B and nobody; with --slurm-scontrol off the
        same GPU is EMPTY (nobody is charged)."""
        a, b = self.submit(), self.submit()
        self.wait_running(a)
        self.wait_running(b)
        ga, gb = self.gpu_of(a), self.gpu_of(b)
        self.assertEqual({ga, gb}, {0, 1})
        pid = self.job_pid(a)
        env = {"FAKE_NVML_SCRIPT": self.nvml(ga, pid),
               "SLURM_CONF": self.env["SLURM_CONF"]}
        p, base = watch(FAST, env, 4)
        try:
            time.sleep(2.5)
            _, _, text = ti.get(base + "/metrics")
            _, _, v = ti.get(base + "/verdicts")
        finally:
            err = stop(p)
        self.assertEqual(p.returncode, 0, err)
        self.assertRegex(text, r'gpufl_gpu_busy_seconds_total\{gpu="%d",[^}]*'
                         r'pid="%d",container="",pod="",namespace="",'
                         r'job="%s",user="nobody",source="nvml"\} [0-9.]+' % (ga, pid, a),
                         err)
        m = re.search(r'gpufl_gpu_wasted_seconds_total\{gpu="%d",[^}]*'
                      r'job="%s",user="nobody",reason="allocated_unused"\} '
                      r'(\S+)' % (gb, b), text)
        self.assertIsNotNone(m, text)
        self.assertGreater(float(m.group(1)), 0)
        g = ti.by_dev(json.loads(v))[gb]
        self.assertEqual(g["state"], "ALLOCATED_UNUSED", g)
        self.assertIn("Slurm job %s (user nobody)" % b, " ".join(g["reasons"]))
        self.assertEqual(ti.by_dev(json.loads(v))[ga]["state"], "BUSY")
        # each GPU job is a session of its own (slurm-<id>)
        names = ti.by_name(json.loads(v))
        self.assertEqual(names["slurm-" + b]["state"], "IDLE")
        self.assertEqual(names["slurm-" + a]["state"], "ACTIVE")
        # the same without asking Slurm: nothing says the GPU is held
        rc, out, err = ti.run(["--once", "--json", "--nvml-lib", FAKE,
                               "--samples", "3", "--slurm-scontrol", "off"]
                              + FAST, env=env)
        self.assertEqual(ti.by_dev(json.loads(out))[gb]["state"], "EMPTY",
                         out + err)
        # a wrong scontrol is a clear error, not a silent "no jobs"
        rc, out, err = ti.run(["--once", "--nvml-lib", FAKE, "--slurm-scontrol",
                               "/nonexistent/scontrol"] + FAST, env=env)
        self.assertEqual(rc, 1)
        self.assertIn("--slurm-scontrol /nonexistent/scontrol: not an "
                      "executable", err)

    def test_hook_requeues_and_cancels(self):
        """Both GPUs allocated, no process on them: after --idle and --warn
        the hook example requeues the requeueable job and cancels the one
        submitted with --no-requeue."""
        rq = self.submit("--requeue")
        nrq = self.submit("--no-requeue")
        self.wait_running(rq)
        self.wait_running(nrq)
        env = {"FAKE_NVML_SCRIPT": script(
            self.base, "global count=2\ndev 0 util=0 mem_used=0 procs=\n"
            "dev 1 util=0 mem_used=0 procs=\n"),
            "SLURM_CONF": self.env["SLURM_CONF"],
            "GPUFL_SLURM_ACTION": "requeue"}
        p, base = watch(FAST + ["--idle", "1s", "--warn", "1s",
                                "--hysteresis", "0", "--hook-cmd", HOOK],
                        env, 30)
        try:
            deadline = time.time() + 25
            while time.time() < deadline:
                s_rq, s_nrq = self.show(rq), self.show(nrq)
                if ("JobState=CANCELLED" in s_nrq and
                        not re.search(r"Restarts=0\b", s_rq)):
                    break
                time.sleep(0.2)
        finally:
            err = stop(p)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn("JobState=CANCELLED", s_nrq, err)
        self.assertRegex(s_rq, r"Restarts=[1-9]", err)
        self.assertIn("GPUs of Slurm job %s (user nobody) allocated but "
                      "unused past the warning: requeued" % rq, err)
        self.assertIn("job %s (user nobody) allocated but unused past the "
                      "warning: not requeueable, cancelled" % nrq, err)


# ------------------------------------------------------------ JupyterHub

class Hub(unittest.TestCase):
    """The Hub for the class; alice's server started through its API."""
    TOKEN = "gpufl-test-service-token-0123456789abcdef"

    @classmethod
    def setUpClass(cls):
        if not have("jupyterhub"):
            raise unittest.SkipTest("jupyterhub not installed")
        cls.state = os.path.join(ti.TMP, "sched_hub_%d" % os.getpid())
        shutil.rmtree(cls.state, ignore_errors=True)
        cls.port = free_port()
        cls.env = dict(os.environ, HUB_STATE=cls.state,
                       HUB_PORT=str(cls.port), HUB_PROXY_PORT=str(free_port()),
                       HUB_TOKEN=cls.TOKEN)
        atexit.register(cls.tearDownClass)
        r = subprocess.run([os.path.join(HERE, "hub-up.sh")], env=cls.env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=60)
        if r.returncode != 0:
            cls.tearDownClass()
            raise AssertionError("hub-up.sh failed:\n" + r.stdout)
        cls.url = "http://127.0.0.1:%d" % cls.port
        st, _ = cls.api("POST", "/users/alice/server")
        if st not in (201, 202):
            cls.tearDownClass()
            raise AssertionError("alice's server: HTTP %d" % st)

    @classmethod
    def tearDownClass(cls):
        subprocess.run([os.path.join(HERE, "hub-down.sh")], env=cls.env,
                       timeout=30)

    @classmethod
    def api(cls, method, path):
        req = urllib.request.Request(
            cls.url + "/hub/api" + path, method=method,
            headers={"Authorization": "token " + cls.TOKEN})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                body = r.read()
                return r.status, json.loads(body) if body else None
        except urllib.error.HTTPError as e:
            return e.code, None

    def last_activity(self):
        """alice's and her default server's last_activity, epoch s."""
        st, u = self.api("GET", "/users/alice")
        self.assertEqual(st, 200)
        srv = u["servers"][""]
        return (ti_iso(u["last_activity"]), ti_iso(srv["last_activity"]))

    def alice_process(self):
        """A real process of alice's server (the GPU lists its pid)."""
        p = subprocess.Popen(["sleep", "60"],
                             env=dict(os.environ, JUPYTERHUB_USER="alice"))
        self.addCleanup(lambda: (p.kill(), p.wait()))
        return p.pid

    def nvml(self, pid, busy):
        util = "util=90 power=200000" if busy else "util=0 power=90000"
        return script(self.state, "global count=1 "
                      "autotick=nvmlDeviceGetUtilizationRates\n"
                      "dev 0 uuid=GPU-hub %s power_limit=300000 "
                      "mem_used=%d procs=%d:%d\n" % (util, 4 * GIB, pid,
                                                     4 * GIB))

    def hub_args(self, token=None):
        return FAST + ["--slurm-scontrol", "off", "--jupyterhub-url", self.url,
                       "--jupyterhub-token", token or self.TOKEN,
                       "--jupyterhub-every", "1s"]

    def test_busy_reports_held_does_not(self):
        pid = self.alice_process()
        before = self.last_activity()
        time.sleep(0.05)
        # held: 4 GiB resident, no kernel -> nothing reported
        p, base = watch(self.hub_args(), {"FAKE_NVML_SCRIPT":
                                          self.nvml(pid, False)}, 3)
        try:
            time.sleep(2)
            _, _, v = ti.get(base + "/verdicts")
            self.assertEqual(ti.by_dev(json.loads(v))[0]["state"], "HELD")
            p.wait(15)
        finally:
            err = stop(p)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(self.last_activity(), before, err)
        # busy: reported, and again a second later (every 1 s)
        t0 = time.time()
        p, base = watch(self.hub_args(), {"FAKE_NVML_SCRIPT":
                                          self.nvml(pid, True)}, 5)
        try:
            deadline, first = time.time() + 4, None
            while time.time() < deadline:
                la = self.last_activity()
                if first is None and la[0] > before[0]:
                    first = la
                if first and la[0] > first[0]:
                    break
                time.sleep(0.2)
            _, _, v = ti.get(base + "/verdicts")
            self.assertEqual(ti.by_dev(json.loads(v))[0]["state"], "BUSY")
        finally:
            err = stop(p)
        self.assertEqual(p.returncode, 0, err)
        self.assertIsNotNone(first, err)
        self.assertGreater(la[0], first[0], err)
        # the time of the GPU's work: after this run began, not in the future
        self.assertGreaterEqual(la[0], t0 - 1)
        self.assertLessEqual(la[0], time.time() + 1)
        self.assertEqual(la[0], la[1])  # the server's too

    def test_bad_token_does_not_block(self):
        """A refused report (403) is logged once, retried with backoff, and
        sampling goes on: the daemon stops on time, verdicts keep coming."""
        pid = self.alice_process()
        t0 = time.time()
        p, base = watch(self.hub_args("wrong-token"),
                        {"FAKE_NVML_SCRIPT": self.nvml(pid, True)}, 3)
        try:
            time.sleep(1.5)
            _, _, v = ti.get(base + "/verdicts")
            self.assertEqual(ti.by_dev(json.loads(v))[0]["state"], "BUSY")
            p.wait(15)
        finally:
            err = stop(p)
        self.assertLess(time.time() - t0, 8)
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(err.count("activity of alice not reported: HTTP 403"),
                         1, err)

    def test_cleartext_refused(self):
        """A token to another host over http:// is refused unless
        --jupyterhub-insecure; no token is an error too."""
        base = ["watch", "--simulate", "matmul", "--duration", "1",
                "--jupyterhub-url", "http://192.0.2.1:8081",
                "--jupyterhub-token", "t"]
        rc, _, err = ti.run(base)
        self.assertEqual(rc, 2)
        self.assertIn("plain http to another machine", err)
        rc, _, err = ti.run(base + ["--jupyterhub-insecure"])
        self.assertEqual(rc, 0, err)
        rc, _, err = ti.run(["watch", "--simulate", "matmul", "--duration",
                             "1", "--jupyterhub-url", self.url])
        self.assertEqual(rc, 2)
        self.assertIn("needs --jupyterhub-token", err)


def ti_iso(s):
    """The Hub's "2026-12-01T13:58:42.901000Z" (or without fraction)."""
    return ti_ns(s) / 1e9


def ti_ns(s):
    m = re.match(r"(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)(\.\d+)?Z?$", s)
    assert m, s
    import calendar
    t = calendar.timegm(tuple(int(m.group(i)) for i in range(1, 7)))
    return int(t * 1e9 + (float(m.group(7)) * 1e9 if m.group(7) else 0))


NEEDS = {"Slurm": ("slurmctld", "slurmd", "munged", "scontrol", "sbatch"),
         "Hub": ("jupyterhub",)}

if __name__ == "__main__":
    # ctest runs one class per test; absent binaries are a skip (77), the
    # only one: anything else that goes wrong fails
    names = [a for a in sys.argv[1:] if a in NEEDS]
    missing = [b for n in names for b in NEEDS[n] if not shutil.which(b)]
    if missing:
        print("SKIP: not installed: %s (scripts/deps.sh test)" %
              " ".join(missing))
        sys.exit(77)
    unittest.main()
