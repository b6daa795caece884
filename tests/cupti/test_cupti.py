"""test_cupti.py - the "cupti" engine and `gpufl run` without a GPU.

Programs linked against the fake libcuda.so.1 drive the fake
libcupti.so.13 (tests/cupti/fake_*.c): launch callbacks with the real
parameter structs, scripted activity records in the CUDA 13.0 layouts
delivered through the engine's real buffer callbacks, and scripted errors.
The logs are checked field by field with the independent reader
tests/client/gpufl_logs.py.

Needs GPUFL_BIN_DIR, GPUFL_FAKE_DIR, GPUFL_TEST_TMP, GPUFL_INJECT_LIB.
"""
import glob
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
INJECT = os.environ.get("GPUFL_INJECT_LIB", "")
CUPTI = os.path.join(FAKE, "cupti-full", "libcupti.so.13")

# kern_vN: launch API variant N of prog_cupti.c (runtime CBID, driver CBID)
FUNCS = {"kern_v0": (32, 0, 0), "kern_v1": (128, 4096, 0),
         "kern_v2": (64, 0, 16), "kern_v3": (32, 0, 0),
         "kern_v4": (40, 0, 0), "kern_v5": (255, 0, 0)}

SCRIPT = """
context ctx=5 dev=1
kernel name=scripted_k grid=4,2,3 block=256,2,1 regs=40 smem=1024 dsmem=2048 lmem=8 start=100 dur=5000 corr=9001 dev=1 stream=7
kernel name=optin_k grid=1,1,1 block=1024,1,1 regs=64 dsmem=65536 optin=1 start=200 dur=10 corr=9002 launch=2
memcpy kind=1 bytes=1001 src=2 dst=3 flags=1 dur=1000 corr=9101 rcorr=9102 stream=3
memcpy kind=2 bytes=1002 src=3 dst=1 dur=1000 corr=9103
memcpy kind=8 bytes=1003 src=3 dst=3 dur=1000 corr=9104 dev=1
memcpy kind=9 bytes=1004 src=1 dst=1 dur=1000 corr=9105
memcpy kind=3 bytes=1005 src=1 dst=4 dur=1000 corr=9106
memcpy kind=7 bytes=1006 src=3 dst=4 dur=1000 corr=9107
memcpy kind=0 bytes=1007 dur=0 corr=9108
ptop srcdev=1 dstdev=0 bytes=1048576 dur=50000 corr=9201 flags=1
memset value=7 bytes=4096 dur=300 corr=9301 dev=1 stream=2
sync type=1 dur=11 corr=9401 ctx=5
sync type=2 dur=12 corr=9402 ctx=5 stream=4
sync type=3 dur=13 corr=9403 ctx=5 stream=4
sync type=4 dur=14 corr=9404 ctx=99
alloc addr=0x7f0000001000 bytes=65536 corr=9501 dev=1
alloc addr=0x7f0000100000 bytes=4096 corr=9502 kind=5 stream=6
free addr=0x7f0000001000 bytes=65536 corr=9503 dev=1
incomplete name=never_finished corr=9601
"""


def run(args, env_extra, timeout=120, check=True):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GPUFL_", "CUDA_INJECTION", "FAKECUPTI"))}
    env.update(env_extra)
    p = subprocess.run(args, env=env, timeout=timeout, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        raise AssertionError("%s exited %d:\n%s%s" % (args, p.returncode,
                                                      p.stdout, p.stderr))
    return p


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self._testMethodName + ".", dir=TMP)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def script(self, text, funcs=True):
        path = os.path.join(self.dir, "script")
        with open(path, "w") as f:
            if funcs:
                for n, (r, s, l) in FUNCS.items():
                    f.write("func %s regs=%d smem=%d lmem=%d\n" % (n, r, s, l))
            f.write(text)
        return path

    def env(self, script, **kw):
        e = {"GPUFL_LOG_DIR": os.path.join(self.dir, "logs"),
             "GPUFL_ENGINES": "cupti,host", "GPUFL_SYSTEM_INTERVAL_MS": "100",
             "GPUFL_CUPTI_LIB": CUPTI, "FAKECUPTI_SCRIPT": script}
        e.update({"GPUFL_" + k.upper(): str(v) for k, v in kw.items()})
        return e

    def session(self):
        s = gl.validate(os.path.join(self.dir, "logs"))
        self.assertEqual(len(s), 1)
        return next(iter(s.values()))

    def check_launches(self, sess, threads, n, scoped=True):
        """Every launch of prog_cupti, field by field."""
        dev = sess.streams["device"]
        sc = sess.streams["scope"]
        begins = {e["id"]: e for e in sc.of("scope_begin")}
        tid_of = {}
        seen = set()
        for k in dev.of("kernel"):
            cfg = sess.launch(k["cfg"]) if "cfg" in k else k
            name = sess.name(cfg["name"])
            if not name.startswith("kern_v"):
                continue
            self.assertNotEqual(name, "kern_fail")
            v = int(name[-1])
            g = k["grid"] + [1, 1]  # trailing 1s are left out
            i, t = g[0] - 1, g[1] - 1
            self.assertEqual(i % 6, v, k)
            seen.add((t, i))
            regs, smem, lmem = FUNCS[name]
            self.assertEqual(cfg["block"], [128])
            self.assertEqual(cfg["regs"], regs)
            self.assertEqual(cfg.get("smem", 0), smem)
            self.assertEqual(cfg.get("lmem", 0), lmem)
            self.assertEqual(cfg.get("dsmem", 0), i % 3 * 1024)
            self.assertEqual(k["stream"], t + 1)
            self.assertEqual(k["dur"], 2000)
            self.assertLessEqual(len(k["grid"]), 2)
            # API enter before the GPU start, exit after enter
            self.assertLess(k["api"][0], 0)
            self.assertGreaterEqual(k["api"][1], 0)
            self.assertEqual(k.get("coop", 0), 1 if v == 4 else 0, k)
            if name == "kern_v0":  # 4 warps x 12 blocks = 48 of 48 slots
                self.assertEqual((cfg["occ"], cfg["lim"]), (1, "warps"))
            if name == "kern_v1":  # 128 regs: 16384 per block, 4 blocks
                self.assertEqual((cfg["occ"], cfg["lim"]), (0.3333, "regs"))
            if name == "kern_v5":  # 255 regs -> 256 x 32 x 4 = 32768: 2
                self.assertEqual((cfg["occ"], cfg["lim"]), (0.1667, "regs"))
            if scoped:
                b = begins[k["scope"]]
                self.assertEqual(sess.path(b["path"]), "outer/inner")
                # every launch of thread t is attributed to t's scopes
                self.assertEqual(tid_of.setdefault(t, b["tid"]), b["tid"])
                # and its call to t's API lane: the launching thread, not
                # the one that read CUPTI's buffer
                self.assertEqual(k["tid"], b["tid"])
            else:
                self.assertNotIn("scope", k)
        self.assertEqual(seen, {(t, i) for t in range(threads)
                                for i in range(n)})
        if scoped:
            self.assertEqual(len(set(tid_of.values())), threads)


class Capture(Base):
    def test_every_record_kind(self):
        p = run([BIN + "/prog_cupti", "4", "30"], self.env(self.script(SCRIPT)))
        self.assertIn("gpufl_init: 0", p.stdout)
        sess = self.session()
        h = sess.header
        self.assertEqual(h["engines"], {"cupti": "on", "host": "on"})
        self.assertEqual(len(h["devices"]), 2)
        d = h["devices"][1]
        self.assertEqual(d["name"], "Fake NVIDIA A10G #1")
        self.assertEqual(d["uuid"], "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f")
        self.assertEqual((d["cc"], d["sms"], d["max_threads_sm"]), ("8.6", 80, 1536))
        self.assertEqual(d["smem_block_optin"], 101376)
        self.check_launches(sess, 4, 30)
        dev = sess.streams["device"]
        ks = {sess.name(sess.launch(k["cfg"])["name"]): k for k in dev.of("kernel")}
        k = ks["scripted_k"]
        cfg = sess.launch(k["cfg"])
        self.assertEqual((k["dev"], k["stream"], k["corr"], k["grid"], k["dur"]),
                         (1, 7, 9001, [4, 2, 3], 5000))
        self.assertEqual((cfg["block"], cfg["regs"], cfg["smem"], cfg["dsmem"],
                          cfg["lmem"]), ([256, 2], 40, 1024, 2048, 8))
        # 512 threads = 16 warps: 3 blocks by warps, 40 regs -> 3 by regs
        self.assertEqual((cfg["occ"], cfg["lim"]), (1, "warps+regs"))
        for f in ("api", "tid", "scope", "stack", "coop"):
            self.assertNotIn(f, k)  # no launch callback: nothing invented
        k = ks["optin_k"]
        self.assertEqual(k["coop"], 1)
        self.assertEqual(sess.launch(k["cfg"])["dsmem"], 65536)
        self.assertNotIn("never_finished", ks)
        cp = {c["corr"]: c for c in dev.of("memcpy")}
        want = {9102: ("htod", 1001, 0, 1, 1), 9103: ("dtoh", 1002, 0, 0, 0),
                9104: ("dtod", 1003, 1, 0, 0), 9105: ("htoh", 1004, 0, 0, 0),
                9106: ("htod", 1005, 0, 0, 0), 9107: ("dtod", 1006, 0, 0, 0),
                9108: ("unknown", 1007, 0, 0, 0)}
        for corr, (kind, b, dv, asy, pin) in want.items():
            c = cp[corr]
            self.assertEqual((c["kind"], c["bytes"], c.get("dev", 0),
                              c.get("async", 0), c.get("pinned", 0)),
                             (kind, b, dv, asy, pin), c)
        self.assertEqual(cp[9102]["stream"], 3)
        self.assertEqual(cp[9102]["dur"], 1000)
        self.assertEqual(cp[9102]["gbps"], 1.0)
        pp = cp[9201]
        self.assertEqual((pp["kind"], pp["dev"], pp["dst_dev"], pp["bytes"],
                          pp["dur"], pp["async"]), ("ptop", 1, 0, 1048576, 50000, 1))
        ms = dev.of("memset")
        self.assertEqual(len(ms), 1)
        self.assertEqual((ms[0]["dev"], ms[0]["stream"], ms[0]["corr"],
                          ms[0]["bytes"], ms[0]["value"], ms[0]["dur"]),
                         (1, 2, 9301, 4096, 7, 300))
        sy = {y["corr"]: y for y in dev.of("sync")}
        self.assertEqual(sy[9401]["kind"], "event")
        self.assertEqual(sy[9402]["kind"], "stream_wait")
        self.assertEqual((sy[9403]["kind"], sy[9403]["stream"], sy[9403]["dur"]),
                         ("stream", 4, 13))
        self.assertEqual(sy[9404]["kind"], "context")
        self.assertEqual(sy[9401]["dev"], 1)  # context 5 is on device 1
        self.assertNotIn("dev", sy[9404])  # unknown context: device 0
        self.assertNotIn("stream", sy[9401])  # CUPTI's invalid stream id
        al = {a["corr"]: a for a in dev.of("alloc")}
        fr = {a["corr"]: a for a in dev.of("free")}
        self.assertEqual((al[9501]["addr"], al[9501]["bytes"], al[9501]["kind"],
                          al[9501]["dev"]), ("0x7f0000001000", 65536, "device", 1))
        self.assertEqual((al[9502]["kind"], al[9502]["stream"]), ("managed", 6))
        self.assertEqual((fr[9503]["addr"], fr[9503]["bytes"]),
                         ("0x7f0000001000", 65536))
        marks = [m["text"] for m in sess.streams["scope"].of("marker")]
        self.assertIn("cupti: dropped=0 invalid=1", marks)

    def test_stacks(self):
        run([BIN + "/prog_cupti", "2", "6"],
            self.env(self.script(""), stacks=1, stack_depth=8))
        sess = self.session()
        dev = sess.streams["device"]
        n = 0
        for k in dev.of("kernel"):
            self.assertIn("stack", k)
            frames = dev.dicts[k["stack"]]["frames"]
            self.assertLessEqual(len(frames), 8)
            # the first frame is the application's, not ours or CUPTI's
            self.assertTrue(frames[0].startswith("launch_one+"), frames)
            # a static function: named from the ELF .symtab (dladdr knows
            # only exported names)
            self.assertTrue(frames[1].startswith("worker+"), frames)
            self.assertIn("(prog_cupti)", frames[1])
            n += 1
        self.assertEqual(n, 12)

    def test_stacks_without_rdynamic(self):
        """A program linked without -rdynamic, profiled with no code change:
        its own functions are named from its .symtab."""
        env = self.env(self.script(""))
        logs = env.pop("GPUFL_LOG_DIR")
        env.pop("GPUFL_ENGINES")
        env["GPUFL_INJECT_LIB"] = INJECT
        run([BIN + "/gpufl", "run", "--engines", "cupti,host", "--stacks",
             "--log-dir", logs, "--", BIN + "/prog_cupti_plain", "1", "3"], env)
        dev = self.session().streams["device"]
        ks = dev.of("kernel")
        self.assertEqual(len(ks), 3)
        for k in ks:
            frames = dev.dicts[k["stack"]]["frames"]
            self.assertTrue(frames[0].startswith("launch_one+"), frames)
            self.assertTrue(frames[1].startswith("worker+"), frames)
            self.assertIn("(prog_cupti_plain)", frames[0])

    def test_stacks_off_by_default(self):
        run([BIN + "/prog_cupti", "1", "6"], self.env(self.script("")))
        for k in self.session().streams["device"].of("kernel"):
            self.assertNotIn("stack", k)

    def test_buffer_pressure(self, extra=""):
        """Many records: every one is written or counted as lost."""
        bulk = 150000
        run([BIN + "/prog_cupti", "2", "50"],
            self.env(self.script(extra + "bulk %d\n" % bulk), ring_events=1024,
                     system_interval_ms=1000), timeout=240)
        sess = self.session()
        dev = sess.streams["device"]
        kept = len(dev.of("kernel"))
        lost = sum(e["count"] for e in dev.of("loss")
                   if e["reason"] == "buffer_full")
        dropped = 0
        for m in sess.streams["scope"].of("marker"):
            if m["text"].startswith("cupti: dropped="):
                dropped = int(m["text"].split("=")[1].split()[0])
        self.assertEqual(kept + lost + dropped, bulk + 100)
        self.assertGreater(kept, 0)

    def test_wall_clock_step(self):
        """CUPTI stamps with CLOCK_REALTIME, gpufl's clock is monotonic:
        kernels launched after the wall clock stepped back 10 s still
        start after their launch call, not 10 s before it."""
        run([BIN + "/prog_cupti", "1", "12"],
            self.env(self.script("clock_step -10000000000 after=6\n"),
                     cupti_flush_ms=20))
        sess = self.session()
        self.check_launches(sess, 1, 12)
        for k in sess.streams["device"].of("kernel"):
            self.assertLess(-k["api"][0], 100000000, k)  # enter: < 100 ms

    def test_cache_preference_is_a_carveout(self):
        """A kernel's legacy cache preference (cudaFuncSetCacheConfig)
        counts as the carveout it stands for (L1 0 %, equal 50 %, shared
        100 %); an explicit carveout request wins."""
        base = ("grid=1,1,1 block=128,1,1 regs=32 smem=20480 start=1 dur=1 "
                "dev=0")
        lines = [("cc_none", ""), ("cc_l1", "cache=2"), ("cc_eq", "cache=3"),
                 ("cc_sh", "cache=1"), ("cv_0", "carveout=0"),
                 ("cv_50", "carveout=50"), ("cv_100", "carveout=100"),
                 ("cv_wins", "carveout=50 cache=2")]
        env = self.env(self.script("".join(
            "kernel name=%s %s %s corr=%d\n" % (n, base, extra, 9700 + i)
            for i, (n, extra) in enumerate(lines))))
        run([BIN + "/prog_cupti", "1", "1"], env, timeout=60)
        sess = self.session()
        occ = {}
        for k in sess.streams["device"].of("kernel"):
            cfg = sess.launch(k["cfg"]) if "cfg" in k else k
            occ[sess.name(cfg["name"])] = cfg.get("occ")
        self.assertEqual(occ["cc_l1"], occ["cv_0"])
        self.assertEqual(occ["cc_eq"], occ["cv_50"])
        self.assertEqual(occ["cc_sh"], occ["cv_100"])
        self.assertEqual(occ["cv_wins"], occ["cv_50"])
        self.assertLess(occ["cc_l1"], occ["cc_none"])  # the preference counts

    def test_contexts_made_before_init(self):
        """A context the program created before gpufl_init: CUPTI reports
        it only through cuptiActivityEnableAndDump, and its sync records
        must still name its device."""
        env = self.env(self.script(
            "precontext ctx=7 dev=1\n"
            "sync type=3 dur=5 corr=9901 ctx=7 stream=2\n"))
        run([BIN + "/prog_cupti", "1", "2"], env, timeout=60)
        sy = {y["corr"]: y for y in self.session().streams["device"].of("sync")}
        self.assertEqual(sy[9901].get("dev"), 1)

    def test_final_flush_hangs(self):
        """CUPTI's final flush never returning must not keep the program
        from exiting: after GPUFL_CUPTI_CLOSE_MS the session ends without
        it, says so, and the logs stay valid."""
        env = self.env(self.script("flush_hang 30000\n"), cupti_close_ms=300)
        t0 = time.time()
        p = run([BIN + "/prog_cupti", "2", "6"], env, timeout=60)
        took = time.time() - t0
        self.assertIn("done", p.stdout)
        self.assertLess(took, 20, "the program waited for the hung flush")
        sess = self.session()
        marks = [m["text"] for m in sess.streams["scope"].of("marker")]
        self.assertTrue(any("final flush did not return within 300 ms" in m
                            for m in marks), marks)
        for st in sess.streams.values():  # validate() checked the counts
            self.assertEqual(st.of("session_end")[0]["reason"], "shutdown")

    def test_buffer_in_transit_at_exit(self):
        """A full buffer CUPTI's worker thread still holds at the final
        forced flush is delivered after it: it must still be decoded."""
        self.test_buffer_pressure("worker_delay 300\n")


    def test_fork(self):
        env = self.env(self.script(""))
        env["PROG_FORK"] = "1"
        p = run([BIN + "/prog_cupti", "2", "6"], env, timeout=60)
        self.assertIn("child: 0", p.stdout)
        sess = self.session()  # the child wrote nothing
        self.check_launches(sess, 2, 6)

    def test_periodic_flush_streams(self):
        """A running process's kernels reach the log on the flush timer,
        long before it exits."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GPUFL_", "CUDA_INJECTION", "FAKECUPTI"))}
        env.update(self.env(self.script(""), cupti_flush_ms=50, flush_ms=20))
        p = subprocess.Popen([BIN + "/prog_cupti", "1", "12", "8000"], env=env,
                             stdout=subprocess.PIPE, text=True)
        try:
            while p.stdout.readline().strip() != "holding":
                pass
            found = 0
            deadline = time.time() + 5
            while time.time() < deadline and found < 12:
                time.sleep(0.1)
                found = 0
                for f in glob.glob(os.path.join(self.dir, "logs", "*.device.log")):
                    with open(f) as fh:
                        found += fh.read().count('"type":"kernel"')
            self.assertIsNone(p.poll())  # still running
            self.assertEqual(found, 12)
        finally:
            p.kill()
            p.wait()
            p.stdout.close()


class Refusals(Base):
    def refused(self, env, prefix):
        p = run([BIN + "/prog_cupti", "2", "5"], env)
        self.assertIn("gpufl_init: 0", p.stdout)
        self.assertIn("done", p.stdout)
        sess = self.session()
        st = sess.header["engines"]["cupti"]
        self.assertTrue(st.startswith(prefix), st)
        self.assertEqual(sess.header["engines"]["host"], "on")
        self.assertGreater(len(sess.streams["system"].of("host")), 0)
        self.assertEqual(sess.streams["device"].of("kernel"), [])
        return st

    def test_missing_library(self):
        self.refused(self.env(self.script(""),
                              cupti_lib="/nonexistent/libcupti.so.13"),
                     "off: cupti: cannot load /nonexistent/libcupti.so.13 "
                     "(GPUFL_CUPTI_LIB)")

    def test_permission_denied(self):
        st = self.refused(self.env(self.script("fail subscribe 35\n")),
                          "off: cupti: cuptiSubscribe: insufficient privileges")
        self.assertIn("NVreg_RestrictProfilingToAdminUsers", st)

    def test_activity_permission_denied(self):
        self.refused(self.env(self.script("fail enable 35\n")),
                     "off: cupti: cuptiActivityEnable(CONCURRENT_KERNEL): "
                     "insufficient privileges")

    def test_other_tool_attached(self):
        self.refused(self.env(self.script("fail subscribe 39\n")),
                     "off: cupti: cuptiSubscribe: another CUPTI tool")

    def test_no_device(self):
        self.refused(self.env(self.script("fail cuinit 100\n")),
                     "off: cupti: cuInit failed: CUDA_ERROR_NO_DEVICE")

    def test_zero_devices(self):
        self.refused(self.env(self.script("devices 0\n")),
                     "off: cupti: no CUDA device")

    def test_missing_symbol(self):
        lib = os.path.join(FAKE, "cupti-nosym", "libcupti.so.13")
        self.refused(self.env(self.script(""), cupti_lib=lib),
                     "off: cupti: %s lacks cuptiActivityRegisterCallbacks" % lib)

    def test_old_cupti(self):
        self.refused(self.env(self.script("version 28\n")),
                     "off: cupti: CUPTI API version 28 is not supported")

    def test_sim_and_cupti(self):
        env = self.env(self.script(""), engines="sim,cupti,host", sim_steps=1,
                       sim_speed=50)
        run([BIN + "/prog_cupti", "1", "2"], env)
        st = self.session().header["engines"]["cupti"]
        self.assertTrue(st.startswith("off: the simulated GPU is selected"), st)


class Run(Base):
    def gpufl(self, args, env, check=True):
        return run([BIN + "/gpufl"] + args, env, check=check)

    def test_zero_code_change(self):
        """gpufl run on a program that never calls gpufl."""
        env = self.env(self.script(SCRIPT))
        logs = env.pop("GPUFL_LOG_DIR")
        env.pop("GPUFL_ENGINES")
        env["GPUFL_INJECT_LIB"] = INJECT
        p = self.gpufl(["run", "--engines", "cupti,host", "--app", "plainapp",
                        "--log-dir", logs, "--", BIN + "/prog_cupti_plain",
                        "3", "12"], env)
        self.assertIn("done", p.stdout)
        self.assertIn("logs in " + logs, p.stderr)
        sess = self.session()
        h = sess.header
        self.assertEqual(h["app"], "plainapp")
        self.assertEqual(h["engines"]["cupti"], "on")
        self.check_launches(sess, 3, 12, scoped=False)
        dev = sess.streams["device"]
        self.assertEqual(len(dev.of("memset")), 1)
        self.assertEqual(len(dev.of("sync")), 4)
        self.assertTrue(os.path.basename(
            gl.prefixes(logs)[0]).startswith("plainapp."))

    def test_exit_status_and_signal(self):
        env = {"GPUFL_INJECT_LIB": INJECT, "GPUFL_LOG_DIR": self.dir}
        p = self.gpufl(["run", "--", "sh", "-c", "exit 7"], env, check=False)
        self.assertEqual(p.returncode, 7)
        p = self.gpufl(["run", "--", "sh", "-c", "kill -TERM $$"], env,
                       check=False)
        self.assertEqual(p.returncode, 128 + 15)
        # a program that never initialises CUDA loads nothing: no logs
        self.assertEqual(gl.prefixes(self.dir), [])
        p = self.gpufl(["run", "--", "/nonexistent/prog"], env, check=False)
        self.assertEqual(p.returncode, 127)

    def test_signal_forwarded(self):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("GPUFL_", "CUDA_INJECTION"))}
        env.update({"GPUFL_INJECT_LIB": INJECT, "GPUFL_LOG_DIR": self.dir})
        p = subprocess.Popen([BIN + "/gpufl", "run", "--", "sh", "-c",
                              "trap 'exit 42' TERM; echo ready; "
                              "while :; do sleep 0.05; done"],
                             env=env, stdout=subprocess.PIPE, text=True,
                             start_new_session=True)
        try:
            self.assertEqual(p.stdout.readline().strip(), "ready")
            p.send_signal(signal.SIGTERM)
            self.assertEqual(p.wait(timeout=30), 42)
        finally:
            if p.poll() is None:  # never leave the loop holding our pipes
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            p.stdout.close()

    def test_usage(self):
        p = self.gpufl(["--help"], {})
        self.assertIn("run", p.stdout)
        p = self.gpufl(["run", "--help"], {})
        for flag in ("--engines", "--app", "--log-dir", "--stacks",
                     "GPUFL_ENGINES", "CUDA_INJECTION64_PATH"):
            self.assertIn(flag, p.stdout)
        p = self.gpufl(["version"], {})
        self.assertRegex(p.stdout, r"^gpufl \d+\.\d+\.\d+ ")
        p = self.gpufl(["run", "--bogus", "--", "true"], {}, check=False)
        self.assertEqual(p.returncode, 2)
        p = self.gpufl(["run"], {}, check=False)
        self.assertEqual(p.returncode, 2)
        p = self.gpufl(["frobnicate"], {}, check=False)
        self.assertEqual(p.returncode, 2)
        # the driver would ignore a library without InitializeInjection
        p = self.gpufl(["run", "--inject", CUPTI, "--", "true"], {},
                       check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("does not export InitializeInjection", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
