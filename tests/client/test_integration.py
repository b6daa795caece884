"""test_integration.py - libgpufl end to end: real programs linked with the
shared library write real files, which an independent reader
(gpufl_logs.py, Python's json) checks field by field.

Needs GPUFL_BIN_DIR (the build's bin/) and GPUFL_TEST_TMP.
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpufl_logs as gl  # noqa: E402

BIN = os.environ.get("GPUFL_BIN_DIR", "build/bin")
TMP = os.environ.get("GPUFL_TEST_TMP", tempfile.gettempdir())


def run(args, env_extra, timeout=120, check=True):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}
    env.update(env_extra)
    p = subprocess.run(args, env=env, timeout=timeout, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        raise AssertionError("%s exited %d:\n%s%s" % (args, p.returncode, p.stdout, p.stderr))
    return p


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self._testMethodName + ".", dir=TMP)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def env(self, **kw):
        e = {"GPUFL_LOG_DIR": self.dir, "GPUFL_ENGINES": "host",
             "GPUFL_SYSTEM_INTERVAL_MS": "200"}
        e.update({"GPUFL_" + k.upper(): str(v) for k, v in kw.items()})
        return e

    def one_session(self, **kw):
        s = gl.validate(self.dir, **kw)
        self.assertEqual(len(s), 1)
        return next(iter(s.values()))


class Workload(Base):
    def check_kernels(self, sess, threads, n):
        dev = sess.streams["device"]
        scopes = {e["id"]: e for e in sess.streams["scope"].of("scope_begin")}
        ends = {e["id"]: e for e in sess.streams["scope"].of("scope_end")}
        seen = set()
        tids = {}
        for k in dev.of("kernel"):
            t = k["stream"] - 100
            i = k["corr"] - t * 1000000 - 1
            self.assertTrue(0 <= t < threads and 0 <= i < n, k)
            seen.add((t, i))
            cfg = sess.launch(k["cfg"])
            self.assertEqual(sess.name(cfg["name"]), "kernel_%d<float>(float*, int)" % (i % 5))
            self.assertEqual(cfg["block"], [128])
            self.assertEqual(cfg["regs"], 32 + i % 16)
            self.assertEqual(cfg.get("dsmem", 0), i % 3 * 1024)
            self.assertNotIn("smem", cfg)
            self.assertEqual(cfg["occ"], 0.5)
            self.assertEqual(cfg["lim"], "regs")
            self.assertEqual(k["grid"], [i % 7 + 1, 2])
            self.assertEqual(k["dur"], 1000 + i)
            self.assertEqual(k["api"], [-5000, 4000])
            self.assertEqual(k.get("dev", 0), t % 2)
            b, e = scopes[k["scope"]], ends[k["scope"]]
            # the launching thread: the one whose scope it ran in
            self.assertEqual(k["tid"], b["tid"])
            tids.setdefault(k["stream"], b["tid"])
            self.assertEqual(sess.path(b["path"]), "outer/inner")
            self.assertTrue(b["ts"] <= k["ts"] <= e["ts"])
        self.assertEqual(len(seen), threads * n)
        copies = dev.of("memcpy")
        self.assertEqual(len(copies), threads * ((n + 9) // 10))
        for c in copies:
            t = c["stream"] - 100
            self.assertEqual(c["kind"], "htod")
            self.assertEqual(c["dur"], 2000)
            self.assertEqual(c.get("dev", 0), t % 2)
            self.assertEqual(c["gbps"], round(c["bytes"] / 2000, 2))
            self.assertEqual((c["bytes"] // 100 - 1) % 10, 0)
            # the copy's API call and thread: the recording one, or the one
            # the source named
            self.assertEqual(c["api"], [-3000, 1000])
            i = c["bytes"] // 100 - 1
            self.assertEqual(c["tid"], 4242 if i % 20 == 10 else tids[c["stream"]])
        self.assertEqual(len(set(tids.values())), threads)

    def test_fields(self):
        p = run([BIN + "/prog_workload", "3", "500"], self.env())
        prefix = p.stdout.strip()
        self.assertTrue(prefix.startswith(self.dir + "/prog_workload."))
        sess = self.one_session()
        self.check_kernels(sess, 3, 500)
        sc = sess.streams["scope"]
        self.assertEqual(len(sc.of("scope_begin")), 3000)
        self.assertEqual({sess.path(e["path"]) for e in sc.of("scope_begin")},
                         {"outer", "outer/inner"})
        marks = [e["text"] for e in sc.of("marker")]
        self.assertEqual(marks, ['start "quoted" \u00e9', "end"])
        ctr = sc.of("counter")
        self.assertEqual(sess.name(ctr[-1]["name"]), "iterations")
        self.assertEqual(ctr[-1]["value"], 1500)
        h = sess.header
        self.assertEqual(h["app"], "prog_workload")
        self.assertEqual(h["pid"] > 0, True)
        self.assertFalse(h["simulated"])
        self.assertEqual(h["engines"]["host"], "on")
        self.assertEqual(h["lib"], "0.1.0")
        host = sess.streams["system"].of("host")
        self.assertGreaterEqual(len(host), 1)
        for e in host:
            self.assertGreater(e["ram_total"], 0)
            self.assertLessEqual(e["ram_used"], e["ram_total"])
        # nothing was lost
        for st in sess.streams.values():
            self.assertEqual(st.of("loss"), [])
            self.assertEqual(st.events[-1]["lost"], 0)

    def test_nvml_missing_is_explained(self):
        run([BIN + "/prog_workload", "1", "10"],
            self.env(engines="auto", nvml_lib="/nonexistent/libnvidia-ml.so.1"))
        sess = self.one_session()
        st = sess.header["engines"]["nvml"]
        self.assertTrue(st.startswith("off: "), st)
        self.assertIn("/nonexistent/libnvidia-ml.so.1", st)
        self.assertTrue(sess.header["engines"]["cupti"].startswith("off: "))
        self.assertEqual(sess.streams["system"].of("gpu"), [])
        self.assertGreaterEqual(len(sess.streams["system"].of("host")), 1)

    def test_rotation_under_load(self):
        run([BIN + "/prog_workload", "4", "5000"],
            self.env(rotate_bytes=65536, rotate_keep=0, ring_events=65536))
        sess = self.one_session()
        dev = sess.streams["device"]
        self.assertGreaterEqual(len(dev.files), 10)
        lost = sum(e["count"] for e in dev.of("loss") if e["reason"] == "buffer_full")
        self.assertEqual(len(dev.of("kernel")) + len(dev.of("memcpy")) + lost,
                         4 * 5000 + 4 * 500)
        self.assertEqual(dev.events[-1]["lost"], lost)
        if lost == 0:
            self.check_kernels(sess, 4, 5000)
        # every file is self-contained: gpufl_logs checked dict-before-use
        # per file; also each starts with its own session line
        for path, n in dev.files:
            with open(path) as f:
                self.assertEqual(json.loads(f.readline())["type"], "session")

    def test_overflow_is_counted(self):
        # a tiny ring and 4 busy threads: drops must happen and be counted
        run([BIN + "/prog_workload", "4", "20000"], self.env(ring_events=64))
        sess = self.one_session()
        dev = sess.streams["device"]
        lost = sum(e["count"] for e in dev.of("loss") if e["reason"] == "buffer_full")
        kept = len(dev.of("kernel")) + len(dev.of("memcpy"))
        self.assertEqual(kept + lost, 4 * 20000 + 4 * 2000)
        sc = sess.streams["scope"]
        lost_sc = sum(e["count"] for e in sc.of("loss") if e["reason"] == "buffer_full")
        self.assertEqual(sc.events[-1]["lost"], lost_sc)

    def test_keep_and_zstd(self):
        run([BIN + "/prog_workload", "2", "6000"],
            self.env(rotate_bytes=32768, rotate_keep=2, rotate_zstd=1,
                     ring_events=65536))
        names = sorted(os.listdir(self.dir))
        dev_rot = [n for n in names if ".device.log." in n]
        self.assertTrue(all(n.endswith(".zst") for n in dev_rot), dev_rot)
        self.assertLessEqual(len(dev_rot), 2)
        self.assertGreaterEqual(len(dev_rot), 1)
        sess = self.one_session(pruned_ok=True)
        self.assertGreater(sess.streams["device"].events[0]["file"], 2)

    def test_atexit_without_shutdown(self):
        run([BIN + "/prog_workload", "2", "100", "0", "no_shutdown"], self.env())
        sess = self.one_session()
        self.assertEqual(len(sess.streams["device"].of("kernel")), 200)

    def test_fork_child_writes_nothing(self):
        run([BIN + "/prog_workload", "2", "100", "0", "fork"], self.env())
        sess = self.one_session()
        sc = sess.streams["scope"]
        names = {sess.name(e["name"]) for e in sc.of("scope_begin")}
        self.assertEqual(names, {"outer", "inner"})
        self.assertNotIn("child", [e["text"] for e in sc.of("marker")])
        self.assertEqual(len(sess.streams["device"].of("kernel")), 200)

    def test_disabled(self):
        p = run([BIN + "/prog_workload", "1", "10"], self.env(disabled=1))
        self.assertEqual(p.stdout.strip(), "disabled")
        self.assertEqual(os.listdir(self.dir), [])

    def test_bad_engine(self):
        p = run([BIN + "/prog_workload", "1", "10"], self.env(engines="host,gpu"),
                check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn('unknown engine "gpu"', p.stderr)
        self.assertEqual(os.listdir(self.dir), [])

    def test_engines_naming_nothing(self):
        """GPUFL_ENGINES=",,," named no engine and recorded nothing,
        silently: now refused like an unknown name."""
        p = run([BIN + "/prog_workload", "1", "10"], self.env(engines=",, ,"),
                check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("names no engine", p.stderr)
        self.assertEqual(os.listdir(self.dir), [])

    def test_longest_prefix(self):
        """GPUFL_LOG_PREFIX up to 226 bytes works, rotation and zstd
        included (245-255, documented as allowed, failed init); longer is
        refused with the limit."""
        ok = "p" * 226
        run([BIN + "/prog_workload", "1", "400"],
            self.env(log_prefix=ok, rotate_bytes=4096, rotate_zstd=1,
                     rotate_keep=0))
        names = os.listdir(self.dir)
        self.assertTrue(any(n.startswith(ok + ".device.log.") and
                            n.endswith(".zst") for n in names), names)
        self.assertTrue(all(len(n) <= 255 for n in names))
        self.one_session()
        shutil.rmtree(self.dir)
        os.makedirs(self.dir)
        p = run([BIN + "/prog_workload", "1", "10"],
                self.env(log_prefix="p" * 227), check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("at most 226", p.stderr)

    def test_proc_root_missing_is_said(self):
        """GPUFL_PROC_ROOT that cannot be read wrote sessions without one
        host sample and no word why: the session line says it."""
        run([BIN + "/prog_workload", "1", "10"],
            self.env(proc_root="/nonexistent"))
        h = self.one_session().header
        self.assertTrue(h["engines"]["host"].startswith(
            "off: cannot read /nonexistent/stat"), h["engines"])

    def test_bad_env_value_keeps_default(self):
        run([BIN + "/prog_workload", "1", "10"], self.env(rotate_bytes="lots"))
        self.one_session()


FAKE_SCRIPT = """global driver=535.104.05
dev 0 name="NVIDIA A10G" uuid=GPU-3b1e4c2a-0000-1111-2222-333344445555 pci=00000000:00:1E.0 cc=8.6 mem_total=24146608128 power_limit=300000 max_sm=1710 max_mem=6251 bus_width=384
dev 1 name="NVIDIA H100 80GB HBM3" uuid=GPU-h100 pci=00000000:3B:00.0 cc=9.0 mem_total=85520809984 power_limit=700000
sample 0 dev 0 util=100 util_mem=3 mem_used=316669952 temp=45 power=89100 fan=31 clk_sm=1710 clk_mem=6251 clk_gfx=1710 throttle=4 pstate=0 pcie_tx=1200 pcie_rx=3400 ecc_corr=2 ecc_uncorr=1 energy=123456789 procs=1234:316669952,5678:1000 gprocs=1234:316669952,999:5
sample 0 dev 1 util=7 mem_used=1000 temp=30 power=70000 unsupported=fan
"""


class Nvml(Base):
    """The NVML source through the whole pipeline, against the fake
    libnvidia-ml the tests build (the real struct layouts)."""

    def test_gpu_lines_from_nvml(self):
        fake = os.path.join(os.environ.get("GPUFL_FAKE_DIR", "build/fake"),
                            "nvml-full", "libnvidia-ml.so.1")
        if not os.path.exists(fake):
            self.fail("fake NVML not built: " + fake)
        script = os.path.join(self.dir, "nvml.script")
        with open(script, "w") as f:
            f.write(FAKE_SCRIPT)
        env = self.env(engines="nvml,host", nvml_lib=fake, system_interval_ms=50)
        env["FAKE_NVML_SCRIPT"] = script
        run([BIN + "/prog_workload", "1", "2000", "300"], env)
        sess = self.one_session()
        h = sess.header
        self.assertEqual(h["engines"]["nvml"], "on")
        self.assertFalse(h["simulated"])
        d0, d1 = h["devices"]
        self.assertEqual(d0["name"], "NVIDIA A10G")
        self.assertEqual(d0["uuid"], "GPU-3b1e4c2a-0000-1111-2222-333344445555")
        self.assertEqual(d0["pci"], "00000000:00:1E.0")
        self.assertEqual(d0["cc"], "8.6")
        self.assertEqual(d0["mem"], 24146608128)
        self.assertEqual(d0["power_limit"], 300000)
        self.assertEqual(d0["driver"], "535.104.05")
        self.assertNotIn("simulated", d0)
        self.assertEqual(d1["cc"], "9.0")
        gpus = sess.streams["system"].of("gpu")
        self.assertGreaterEqual(len(gpus), 4)
        g0 = [g for g in gpus if g.get("dev", 0) == 0][-1]
        g1 = [g for g in gpus if g["dev"] == 1][-1]
        want = {"util": 100, "mem_util": 3, "mem_used": 316669952,
                "mem_total": 24146608128, "temp": 45, "power": 89100,
                "power_limit": 300000, "fan": 31, "clk_sm": 1710, "clk_mem": 6251,
                "clk_gfx": 1710, "throttle": 4, "pstate": 0, "pcie_tx": 1200,
                "pcie_rx": 3400, "ecc_corr": 2, "ecc_uncorr": 1, "energy": 123456789}
        for k, v in want.items():
            self.assertEqual(g0[k], v, k)
        self.assertEqual(sorted(p["pid"] for p in g0["procs"]), [999, 1234, 5678])
        self.assertEqual(g0["nprocs"], 3)
        self.assertEqual(g1["util"], 7)
        self.assertNotIn("fan", g1)  # unsupported: absent, never 0
        self.assertEqual(g1["temp"], 30)


    def test_lost_gpu_is_said(self):
        """A GPU that falls off the bus: its gpu lines are empty, and one
        marker says why; another when it answers again."""
        fake = os.path.join(os.environ.get("GPUFL_FAKE_DIR", "build/fake"),
                            "nvml-full", "libnvidia-ml.so.1")
        script = os.path.join(self.dir, "nvml.script")
        with open(script, "w") as f:
            f.write("global autotick=nvmlDeviceGetUtilizationRates\n"
                    "dev 0 util=50\ndev 1 util=60\n"
                    "sample 3 dev 1 lost=1\nsample 6 dev 1 lost=0\n")
        env = self.env(engines="nvml,host", nvml_lib=fake, system_interval_ms=20)
        env["FAKE_NVML_SCRIPT"] = script
        run([BIN + "/prog_workload", "1", "2000", "300"], env)
        sess = self.one_session()
        g1 = [g for g in sess.streams["system"].of("gpu") if g["dev"] == 1]
        self.assertTrue(any("util" not in g for g in g1), g1)  # lost ones
        self.assertEqual(g1[-1].get("util"), 60)  # back
        marks = [m["text"] for m in sess.streams["scope"].of("marker")]
        lost = [m for m in marks if m.startswith("nvml: GPU 1 is lost")]
        self.assertEqual(len(lost), 1, marks)
        self.assertIn("nvml: GPU 1 answers again", marks)
        self.assertFalse(any("GPU 0" in m for m in marks), marks)


class Killed(Base):
    def test_kill9_leaves_whole_lines(self):
        for i in range(4):
            d = os.path.join(self.dir, "run%d" % i)
            os.mkdir(d)
            env = self.env(engines="sim,host", sim_speed=20, log_dir=d,
                           flush_ms=5)
            envp = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}
            envp.update(env)
            p = subprocess.Popen([BIN + "/example_train", "--steps", "1000000",
                                  "--log-dir", d], env=envp,
                                 stdout=subprocess.DEVNULL)
            time.sleep(0.4 + 0.15 * i)
            p.send_signal(signal.SIGKILL)
            p.wait()
            sessions = gl.validate(d, allow_partial=True, complete=False)
            self.assertEqual(len(sessions), 1)
            s = next(iter(sessions.values()))
            self.assertGreater(len(s.streams["device"].of("kernel")), 100)


class Simulated(Base):
    def sim_run(self, d, seed, steps=30):
        os.makedirs(d, exist_ok=True)
        run([BIN + "/example_train", "--steps", str(steps), "--speed", "1000",
             "--log-dir", d], {"GPUFL_SIM_SEED": str(seed), "GPUFL_SYSTEM_INTERVAL_MS": "50"})
        s = gl.validate(d)
        self.assertEqual(len(s), 1)
        return next(iter(s.values()))

    def shape(self, sess):
        dev = sess.streams["device"]
        t0 = min(e["ts"] for e in dev.of("kernel"))
        out = []
        for e in dev.events:
            if e["type"] == "kernel":
                out.append((sess.name(sess.launch(e["cfg"])["name"]), tuple(e["grid"]),
                            e["dur"], e["ts"] - t0, e["api"]))
            elif e["type"] in ("memcpy", "memset", "sync"):
                out.append((e["type"], e.get("bytes"), e["dur"]))
        return out

    def test_deterministic(self):
        a = self.sim_run(self.dir + "/a", 7)
        b = self.sim_run(self.dir + "/b", 7)
        c = self.sim_run(self.dir + "/c", 8)
        self.assertEqual(self.shape(a), self.shape(b))
        self.assertNotEqual(self.shape(a), self.shape(c))

    def test_content(self):
        s = self.sim_run(self.dir, 1, steps=40)
        h = s.header
        self.assertTrue(h["simulated"])
        self.assertTrue(all(d["simulated"] for d in h["devices"]))
        self.assertIn("Simulated", h["devices"][0]["name"])
        self.assertEqual(h["engines"]["sim"], "on")
        dev, sc, sy = (s.streams[k] for k in ("device", "scope", "system"))
        kernels = dev.of("kernel")
        self.assertGreater(len(kernels), 40 * 100)
        names = {s.name(s.launch(k["cfg"])["name"]) for k in kernels}
        self.assertTrue(any(n.startswith("sm90_xmma_gemm") for n in names))
        self.assertTrue(any("flash_fwd_kernel" in n for n in names))
        # the simulated CPU thread: the one whose scopes the kernels ran in
        begins = {e["id"]: e for e in sc.of("scope_begin")}
        tid = {begins[k["scope"]]["tid"] for k in kernels}
        self.assertEqual(len(tid), 1)
        for k in kernels:
            cfg = s.launch(k["cfg"])
            self.assertTrue(0 < cfg["occ"] <= 1)
            self.assertGreater(k["dur"], 0)
            self.assertLess(k["api"][0], 0)
            self.assertEqual(k["tid"], min(tid))
        # copies and memsets carry their API call, made before the GPU
        # started them, on the simulated CPU thread
        for e in dev.of("memcpy") + dev.of("memset"):
            self.assertLess(e["api"][0] + e["api"][1], 0, e)
            self.assertGreater(e["api"][1], 0)
            self.assertEqual(e["tid"], min(tid))
        self.assertEqual({e["kind"] for e in dev.of("memcpy")}, {"htod", "dtoh"})
        self.assertEqual(len(dev.of("sync")), 40)
        self.assertEqual(len(dev.of("memset")), 40)
        self.assertEqual(len(dev.of("alloc")), 3)
        paths = {s.path(e["path"]) for e in sc.of("scope_begin")}
        for p in ("epoch", "epoch/train_step", "epoch/train_step/forward/block/attention",
                  "epoch/train_step/backward", "epoch/train_step/optimizer"):
            self.assertIn(p, paths)
        self.assertGreater(len(sc.of("sass")), 0)
        for e in sc.of("pcsamp"):
            self.assertEqual(sum(e["stalls"].values()), e["samples"])
        gpus = sy.of("gpu")
        self.assertGreater(len(gpus), 0)
        for g in gpus:
            self.assertTrue(0 <= g["util"] <= 100)
            self.assertLessEqual(g["mem_used"], g["mem_total"])
            self.assertEqual(g["procs"][0]["pid"], h["pid"])


class DiskGuard(Base):
    def test_pause_and_resume(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to mount a small tmpfs")
        mnt = os.path.join(self.dir, "mnt")
        os.mkdir(mnt)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", mnt]).returncode:
            self.skipTest("cannot mount tmpfs here")
        try:
            ballast = os.path.join(mnt, "ballast")
            with open(ballast, "wb") as f:
                f.write(b"\0" * (20 << 20))  # 4 MiB left < 8 MiB threshold
            envp = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}
            envp.update(self.env(engines="sim,host", log_dir=mnt, min_free_bytes="8M",
                                 sim_speed=2))
            p = subprocess.Popen([BIN + "/example_train", "--steps", "400",
                                  "--log-dir", mnt], env=envp, stdout=subprocess.PIPE)
            time.sleep(2.0)
            os.unlink(ballast)
            out, _ = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0)
            s = gl.validate(mnt)
            sess = next(iter(s.values()))
            dev = sess.streams["device"]
            losses = [e for e in dev.of("loss") if e["reason"] == "disk_low"]
            self.assertGreaterEqual(len(losses), 2, dev.of("loss"))
            self.assertIn("capture paused", losses[0]["detail"])
            self.assertEqual(losses[0]["count"], 0)
            self.assertGreater(losses[-1]["count"], 0)
            self.assertIn("resumed", losses[-1]["detail"])
            self.assertEqual(dev.events[-1]["lost"], sum(e["count"] for e in losses))
            # capture went on after the resume
            after = [e for e in dev.events if e["seq"] > losses[-1]["seq"] and e["type"] == "kernel"]
            self.assertGreater(len(after), 0)
        finally:
            subprocess.run(["umount", "-l", mnt])


    def test_full_disk_write_errors(self):
        """No guard (min_free_bytes=0): writes fail with ENOSPC until space
        comes back.  Lost lines are counted exactly, damaged lines are
        ended, and every file still defines what it uses."""
        if os.geteuid() != 0:
            self.skipTest("needs root to mount a small tmpfs")
        mnt = os.path.join(self.dir, "mnt")
        os.mkdir(mnt)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", mnt]).returncode:
            self.skipTest("cannot mount tmpfs here")
        try:
            # ~0.5 MiB left: full within a fraction of a second at ~1 MB/s
            ballast = os.path.join(mnt, "ballast")
            with open(ballast, "wb") as f:
                f.write(b"\0" * (23 << 19))
            envp = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}
            envp.update(self.env(engines="sim,host", log_dir=mnt, min_free_bytes=0,
                                 sim_speed=1, rotate_bytes="256K", rotate_keep=0))
            p = subprocess.Popen([BIN + "/example_train", "--steps", "150",
                                  "--log-dir", mnt], env=envp, stdout=subprocess.PIPE)
            time.sleep(1.5)
            os.unlink(ballast)
            p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0)
            sess = next(iter(gl.validate(mnt, write_errors=True).values()))
            dev = sess.streams["device"]
            werr = [e for e in dev.of("loss") if e["reason"] == "write_error"]
            self.assertGreater(len(werr), 0, "the disk never filled")
            # a loss line can itself be lost on a full disk: "total" is
            # cumulative, so the last one still accounts for every line
            self.assertEqual(werr[-1]["total"], dev.gaps)
            self.assertLessEqual(sum(e["count"] for e in werr), dev.gaps)
            self.assertEqual(dev.events[-1]["lost"], dev.gaps)
            self.assertLessEqual(len(dev.damaged), len(werr))
            # identity written again after the loss, before more events
            first_loss = werr[0]["seq"]
            self.assertTrue(any(e["type"] == "session" and e["seq"] > first_loss
                                for e in dev.events))
            # no empty rotated files from a full disk
            for path, n in dev.files:
                self.assertGreater(n, 0, path)
        finally:
            subprocess.run(["umount", "-l", mnt])

    def tmpfs(self, size):
        """A small file system of its own, unmounted at the end."""
        if os.geteuid() != 0:
            self.skipTest("needs root to mount a small tmpfs")
        mnt = os.path.join(self.dir, "mnt")
        os.mkdir(mnt)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", mnt]).returncode:
            self.skipTest("cannot mount tmpfs here")
        self.addCleanup(subprocess.run, ["umount", "-l", mnt])
        return mnt

    def test_disk_stays_full(self):
        """No guard (min_free_bytes=0) and the disk never frees up: writes
        stop whole buffers at a time (space is reserved before each write),
        so no line is cut, and the space kept back takes each file's loss
        and session_end lines; the failure is said through the log."""
        mnt = self.tmpfs("4m")
        with open(os.path.join(mnt, "ballast"), "wb") as f:
            f.write(b"\0" * ((4096 - 400) << 10))  # 400 KiB left
        envp = {k: v for k, v in os.environ.items() if not k.startswith("GPUFL_")}
        envp.update(self.env(engines="sim,host", log_dir=mnt, min_free_bytes=0,
                             sim_speed=1, log_level="warn"))
        p = subprocess.run([BIN + "/example_train", "--steps", "60", "--log-dir", mnt],
                           env=envp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("No space left on device", p.stderr)
        self.assertIn("lines of", p.stderr)
        self.assertEqual(p.stderr.count("failed: No space left"), 1, p.stderr)
        sess = next(iter(gl.validate(mnt, write_errors=True).values()))
        for name in ("device", "scope"):
            st = sess.streams[name]
            for path, _ in st.files:
                with open(path, "rb") as f:
                    self.assertTrue(f.read().endswith(b"\n"), path + " ends mid-line")
            self.assertEqual(st.damaged, [], name)
            self.assertGreater(st.gaps, 0, "the disk never filled")
            werr = [e for e in st.of("loss") if e["reason"] == "write_error"]
            self.assertTrue(werr, name)
            self.assertEqual(werr[-1]["total"], st.gaps)
            self.assertEqual(st.events[-1]["type"], "session_end")
            self.assertEqual(st.events[-1]["lost"], st.gaps)


class Cxx(Base):
    def test_scopes_balance_with_exceptions(self):
        run([BIN + "/example_scopes_cxx", self.dir], {})
        sess = self.one_session()
        sc = sess.streams["scope"]
        self.assertEqual(len(sc.of("scope_begin")), len(sc.of("scope_end")))
        self.assertEqual(len(sc.of("scope_begin")), 30 + 20)
        self.assertEqual(len(sc.of("marker")), 4)


if __name__ == "__main__":
    unittest.main(verbosity=2)
