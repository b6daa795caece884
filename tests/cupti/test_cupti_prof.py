"""test_cupti_prof.py - the "sass" and "pcsamp" engines without a GPU.

prog_cupti (linked against the fake libcuda.so.1) drives the fake
libcupti.so.13's SASS metrics and PC sampling APIs (tests/cupti/
fake_cupti_prof.c): each launch of a function adds its scripted
per-launch counters / stall samples, so what each GFL_SCOPE must report
is known exactly.  Also the refusals: engines CUPTI cannot run together,
no performance-counter permission, an unsupported device, the simulated
GPU, and failures after the session started.

Same environment as test_cupti.py.
"""
import os
import shutil
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_cupti import BIN, INJECT, Base, gl, run  # noqa: E402

# per-launch counters: (inst, thread_inst, sectors, ideal)
SASS = {("kern_v0", 16): (100, 1600, 400, 100),
        ("kern_v0", 32): (50, 1600, 0, 0),
        ("kern_v1", 0): (10, 320, 40, 40)}
# per-launch samples; sample_count is a total, not a reason, and
# long_scoreboard_not_issued a subset of long_scoreboard (not written, not
# counted twice); 999 has no name
PCS = {("kern_v0", 16): {"long_scoreboard": 10, "barrier": 5,
                         "long_scoreboard_not_issued": 6,
                         "smsp__pcsamp_sample_count": 99},
       ("kern_v0", 48): {"selected": 7, "long_scoreboard": 1},
       ("kern_v2", 0): {"mio_throttle": 4, "math_pipe_throttle": 2,
                        "unnamed_reason": 3}}
FUNC_INDEX = {"kern_v%d" % i: i for i in range(6)}  # module order


def sass_script(extra=""):
    out = ["lineinfo"]
    for (f, pc), (w, t, s, i) in SASS.items():
        out.append("sass func=%s pc=%d inst=%d thread=%d sectors=%d ideal=%d"
                   % (f, pc, w, t, s, i))
    return "\n".join(out) + "\n" + extra


def pcs_script(extra=""):
    out = ["lineinfo", "pcs_per_call 1"]  # one PC per GetData: drain loops
    for (f, pc), st in PCS.items():
        out.append("pcsamp func=%s pc=%d stalls=%s" % (
            f, pc, ",".join("%s:%d" % kv for kv in st.items())))
    return "\n".join(out) + "\n" + extra


def want_stalls(func, pc, times):
    out = {}
    for k, v in PCS[(func, pc)].items():
        if k == "smsp__pcsamp_sample_count" or k.endswith("_not_issued"):
            continue
        out["reason_999" if k == "unnamed_reason" else k] = v * times
    return out


class Prof(Base):
    def markers(self, sess, prefix):
        return [m["text"] for m in sess.streams["scope"].of("marker")
                if m["text"].startswith(prefix)]

    def by_scope(self, sess, kind):
        sc = sess.streams["scope"]
        begins = {e["id"]: e for e in sc.of("scope_begin")}
        out = {}
        for e in sc.of(kind):
            self.assertIn("scope", e, e)
            path = sess.path(begins[e["scope"]]["path"])
            self.assertEqual(sess.path(e["path"]), path)
            out.setdefault((e["scope"], path), []).append(e)
        return out

    def check_line(self, sess, e):
        func = sess.name(e["func"])
        self.assertEqual(sess.name(e["file"]), "/src/fake/kernels.cu")
        self.assertEqual(e["line"], 100 + 10 * FUNC_INDEX[func] + e["pc"] // 16)
        return func


class Sass(Prof):
    def run_sass(self, script, engines="sass,host", **env):
        e = self.env(self.script(script), engines=engines)
        e.update(env)
        return run([BIN + "/prog_cupti", "1", "12"], e)

    def check_sass(self, sess):
        scopes = self.by_scope(sess, "sass")
        # i % 6 == 0 launches kern_v0, == 1 kern_v1: 4 inner scopes, and
        # the main thread's "twice" scope with kern_v0 launched twice
        paths = sorted(p for _, p in scopes)
        self.assertEqual(paths, ["outer/inner"] * 4 + ["twice"])
        for (_, path), lines in scopes.items():
            times = 2 if path == "twice" else 1
            funcs = {self.check_line(sess, e) for e in lines}
            self.assertEqual(len(funcs), 1, lines)  # one kernel per scope
            f = funcs.pop()
            got = {e["pc"]: e for e in lines}
            want = {pc for (fn, pc) in SASS if fn == f}
            self.assertEqual(set(got), want)
            for pc, e in got.items():
                w, t, s, i = (v * times for v in SASS[(f, pc)])
                self.assertEqual((e["inst"], e["thread_inst"], e["sectors"],
                                  e["sectors_ideal"]), (w, t, s, i), e)
        # derived values (docs/events.md §9): divergence and coalescing
        v0 = [e for lines in scopes.values() for e in lines
              if sess.name(e["func"]) == "kern_v0" and e["pc"] == 16]
        for e in v0:
            self.assertEqual(e["thread_inst"] / (32.0 * e["inst"]), 0.5)
            self.assertEqual(e["sectors_ideal"] / e["sectors"], 0.25)

    def test_per_scope(self):
        p = self.run_sass(sass_script(), PROG_TWICE="1")
        self.assertIn("done", p.stdout)
        sess = self.session()
        self.assertEqual(sess.header["engines"]["sass"], "on")
        self.assertNotIn("cupti", sess.header["engines"])
        self.assertEqual(len(sess.header["devices"]), 2)
        self.check_sass(sess)
        self.assertEqual(self.markers(sess, "sass:"), [])
        # no tracing next to SASS patching
        self.assertEqual(sess.streams["device"].of("kernel"), [])

    def test_split_ideal_metrics(self):
        """A chip without sectors_mem_global_ideal: the load and store
        variants are summed."""
        self.run_sass(sass_script("sass_noideal\n"), PROG_TWICE="1")
        sess = self.session()
        self.check_sass(sess)
        self.assertEqual(self.markers(sess, "sass:"), [])

    def test_crc_not_the_low_half(self):
        """SASS records' 32-bit CRC unrelated to the 64-bit cubin CRC: the
        source line is still found, by the function's name."""
        self.run_sass(sass_script("sass_crc_other\n"), PROG_TWICE="1")
        sess = self.session()
        self.check_sass(sess)  # every line checked, file and line
        self.assertEqual(self.markers(sess, "sass:"), [])

    def test_second_session_reconfigures(self):
        """UnsetConfig at the end of a session: the next one configures
        the device again (a second SetConfig would fail)."""
        self.run_sass(sass_script(), PROG_SESSIONS="1")
        sessions = gl.validate(os.path.join(self.dir, "logs"))
        self.assertEqual(len(sessions), 2)
        for sess in sessions.values():
            self.assertEqual(self.markers(sess, "sass:"), [])
        second = [s for s in sessions.values()
                  if "again" in {s.path(e["path"]) for e in
                                 s.streams["scope"].of("scope_begin")}]
        self.assertEqual(len(second), 1)
        scopes = self.by_scope(second[0], "sass")
        self.assertEqual([p for _, p in scopes], ["again"])
        self.assertEqual(sorted(e["pc"] for l in scopes.values() for e in l),
                         [16, 32])

    def test_runtime_failure_is_reported(self):
        self.run_sass(sass_script("prof_fail sassenable 35\n"))
        sess = self.session()
        self.assertEqual(sess.header["engines"]["sass"], "on")
        self.assertEqual(sess.streams["scope"].of("sass"), [])
        m = self.markers(sess, "sass:")
        self.assertEqual(len(m), 1)
        self.assertIn("cuptiSassMetricsEnable failed: insufficient "
                      "privileges", m[0])


class PcSampling(Prof):
    def test_with_tracing(self):
        e = self.env(self.script(pcs_script()), engines="cupti,pcsamp,host")
        e["PROG_TWICE"] = "1"
        run([BIN + "/prog_cupti", "1", "12"], e)
        sess = self.session()
        self.assertEqual(sess.header["engines"]["cupti"], "on")
        self.assertEqual(sess.header["engines"]["pcsamp"], "on")
        kscope = {}
        for k in sess.streams["device"].of("kernel"):
            name = sess.name(sess.launch(k["cfg"])["name"])
            kscope.setdefault(name, set()).add(k["scope"])
        scopes = self.by_scope(sess, "pcsamp")
        n = 0
        for (scope, path), lines in scopes.items():
            times = 2 if path == "twice" else 1
            for e in lines:
                f = self.check_line(sess, e)
                # the same scope as the traced kernel of that function
                self.assertIn(scope, kscope[f])
                self.assertEqual(e["stalls"], want_stalls(f, e["pc"], times))
                self.assertEqual(e["samples"], sum(e["stalls"].values()))
                n += 1
        # kern_v0 (2 PCs) at i = 0, 6 and twice; kern_v2 (1 PC) at 2, 8
        self.assertEqual(n, 2 * 2 + 2 + 2)
        self.assertEqual(sorted(p for _, p in scopes),
                         ["outer/inner"] * 4 + ["twice"])
        self.assertEqual(self.markers(sess, "pcsamp:"), [])

    def test_hardware_buffer_full(self):
        e = self.env(self.script(pcs_script("pcs_hwfull\npcs_dropped 5\n")),
                     engines="pcsamp")
        p = run([BIN + "/prog_cupti", "1", "12"], e)
        self.assertIn("done", p.stdout)
        sess = self.session()
        m = self.markers(sess, "pcsamp:")
        self.assertIn("pcsamp: dropped=5 hardware_buffer_full=1", m)
        self.assertTrue(any("hardware buffer full" in x for x in m), m)
        # the first scope's samples are lost, the later ones arrive
        paths = [p for _, p in self.by_scope(sess, "pcsamp")]
        self.assertEqual(paths, ["outer/inner"] * 3)

    def test_permission_denied_at_runtime(self):
        e = self.env(self.script(pcs_script("prof_fail pcsenable 35\n")),
                     engines="cupti,pcsamp")
        run([BIN + "/prog_cupti", "1", "12"], e)
        sess = self.session()
        self.assertEqual(sess.header["engines"]["pcsamp"], "on")
        self.assertEqual(sess.streams["scope"].of("pcsamp"), [])
        self.assertEqual(len(sess.streams["device"].of("kernel")), 12)
        m = self.markers(sess, "pcsamp:")
        self.assertEqual(len(m), 1, m)
        self.assertIn("cuptiPCSamplingEnable failed: insufficient privileges",
                      m[0])


    def test_no_stall_reasons(self):
        """CUPTI that reports no stall reasons (a CUPTI and driver that do
        not match): nothing sampled, the session says why."""
        e = self.env(self.script(pcs_script("pcs_noreasons\n")),
                     engines="pcsamp")
        p = run([BIN + "/prog_cupti", "1", "12"], e)
        self.assertIn("done", p.stdout)
        sess = self.session()
        self.assertEqual(sess.streams["scope"].of("pcsamp"), [])
        m = self.markers(sess, "pcsamp:")
        self.assertEqual(len(m), 1, m)
        self.assertIn("cuptiPCSamplingGetNumStallReasons (it reports no "
                      "stall reasons)", m[0])


class Injected(Prof):
    def gpufl_run(self, script, engines):
        env = self.env(self.script(script))
        logs = env.pop("GPUFL_LOG_DIR")
        env.pop("GPUFL_ENGINES")
        env["GPUFL_INJECT_LIB"] = INJECT
        p = run([BIN + "/gpufl", "run", "--engines", engines, "--log-dir",
                 logs, "--", BIN + "/prog_cupti_plain", "1", "12"], env)
        self.assertIn("done", p.stdout)
        return p, self.session()

    def test_gpufl_run_sass(self):
        """Injected, the engine opens inside the driver's cuInit: the
        profiler is initialised at the first context (the fake refuses
        cuptiProfilerInitialize inside cuInit, and every profiler call
        before it), and the whole run is written at exit, without a
        scope."""
        p, sess = self.gpufl_run(sass_script(), "sass")
        self.assertEqual(sess.header["engines"]["sass"], "on")
        self.assertNotIn("fake_cupti:", p.stderr)
        lines = sess.streams["scope"].of("sass")
        # kern_v0 (pcs 16, 32) ran at i = 0, 6; kern_v1 (pc 0) at 1, 7
        self.assertEqual(len(lines), 3)
        for e in lines:
            self.assertNotIn("scope", e)
            f = self.check_line(sess, e)
            w, t, s, i = (2 * v for v in SASS[(f, e["pc"])])
            self.assertEqual((e["inst"], e["thread_inst"], e["sectors"],
                              e["sectors_ideal"]), (w, t, s, i), e)
        self.assertEqual(self.markers(sess, "sass:"), [])

    def test_gpufl_run_sass_unsupported(self):
        """The device check comes with the first context: the session
        runs on and says why nothing was profiled."""
        p, sess = self.gpufl_run(sass_script("unsupported vgpu\n"), "sass")
        self.assertEqual(sess.header["engines"]["sass"], "on")
        self.assertEqual(sess.streams["scope"].of("sass"), [])
        self.assertEqual(self.markers(sess, "sass:"),
                         ["sass: 1 errors, first: device 0 cannot be "
                          "profiled: vgpu disabled "
                          "(cuptiProfilerDeviceSupported)"])

    def test_pcsamp_module_reload(self):
        """A module unloaded and loaded again while sampling: CUPTI must
        be drained then (the fake drops undrained samples)."""
        p, sess = self.gpufl_run(pcs_script("module_reload 7\n"),
                                 "cupti,pcsamp")
        self.assertNotIn("fake_cupti:", p.stderr)
        got = {}
        for e in sess.streams["scope"].of("pcsamp"):
            f = self.check_line(sess, e)
            acc = got.setdefault((f, e["pc"]), {})
            for k, v in e["stalls"].items():
                acc[k] = acc.get(k, 0) + v
        # kern_v0 and kern_v2 ran twice each, once on each side of the
        # reload (i = 0 | 6 and 2 | 8)
        self.assertEqual(got, {k: want_stalls(k[0], k[1], 2)
                               for k in PCS})
        self.assertEqual(self.markers(sess, "pcsamp:"), [])

    def test_gpufl_run_pcsamp(self):
        """gpufl run on a program that never calls gpufl: no scopes, so the
        whole run's samples are written at exit, without a scope."""
        env = self.env(self.script(pcs_script()))
        logs = env.pop("GPUFL_LOG_DIR")
        env.pop("GPUFL_ENGINES")
        env["GPUFL_INJECT_LIB"] = INJECT
        run([BIN + "/gpufl", "run", "--engines", "cupti,pcsamp", "--log-dir",
             logs, "--", BIN + "/prog_cupti_plain", "1", "12"], env)
        sess = self.session()
        self.assertEqual(sess.header["engines"],
                         {"cupti": "on", "pcsamp": "on",
                          "host": "off: not selected"})
        self.assertEqual(len(sess.streams["device"].of("kernel")), 12)
        lines = sess.streams["scope"].of("pcsamp")
        self.assertEqual(len(lines), 3)
        for e in lines:
            self.assertNotIn("scope", e)
            f = self.check_line(sess, e)
            # kern_v0 and kern_v2 ran twice each (i = 0, 6 and 2, 8)
            self.assertEqual(e["stalls"], want_stalls(f, e["pc"], 2))


class Demangle(Prof):
    def test_kernel_names(self):
        """A C++ kernel's dict line carries its readable form; a C name
        gets none (names as nvcc 13 mangles them, see
        test_cupti_demangle.c)."""
        script = ("kernel name=_ZN5gpufl4test5scaleIfLi4EEEvPT_S2_i "
                  "grid=2,1,1 block=64,1,1 start=10 dur=100 corr=9701\n"
                  "kernel name=plain_c grid=1,1,1 block=32,1,1 start=20 "
                  "dur=100 corr=9702\n")
        run([BIN + "/prog_cupti", "1", "1"],
            self.env(self.script(script), engines="cupti"))
        sess = self.session()
        dev = sess.streams["device"]
        names = {}
        for k in dev.of("kernel"):
            d = dev.dicts[sess.launch(k["cfg"])["name"]]
            names[d["name"]] = d
        d = names["_ZN5gpufl4test5scaleIfLi4EEEvPT_S2_i"]
        self.assertEqual(d["demangled"],
                         "void gpufl::test::scale<float, 4>(float*, float, int)")
        self.assertNotIn("demangled", names["plain_c"])
        self.assertNotIn("demangled", names["kern_v0"])


class Stacks(Prof):
    def test_frame_pointer_program(self):
        """A program built with frame pointers: the walk goes through the
        fake CUPTI and driver (no frame pointers needed) with DWARF, then
        follows the program's frame pointers; same frames as test_cupti's
        test_stacks."""
        run([BIN + "/prog_cupti_fp", "2", "6"],
            self.env(self.script(""), stacks=1, stack_depth=8))
        sess = self.session()
        dev = sess.streams["device"]
        ks = dev.of("kernel")
        self.assertEqual(len(ks), 12)
        for k in ks:
            frames = dev.dicts[k["stack"]]["frames"]
            self.assertTrue(frames[0].startswith("launch_one+"), frames)
            self.assertIn("(prog_cupti_fp)", frames[1])
            self.assertLessEqual(len(frames), 8)


class Refusals(Prof):
    def engines(self, engines, script="", **kw):
        shutil.rmtree(os.path.join(self.dir, "logs"), ignore_errors=True)
        e = self.env(self.script(script), engines=engines, **kw)
        p = run([BIN + "/prog_cupti", "1", "6"], e)
        self.assertIn("done", p.stdout)
        return self.session().header["engines"]

    def test_sass_and_pcsamp(self):
        h = self.engines("sass,pcsamp")
        self.assertEqual(h["sass"], "on")
        self.assertTrue(h["pcsamp"].startswith(
            "off: refused: sass and pcsamp cannot run in one process"), h)
        h = self.engines("pcsamp,sass")
        self.assertEqual(h["pcsamp"], "on")
        self.assertTrue(h["sass"].startswith("off: refused: sass and pcsamp"))

    def test_sass_and_tracing(self):
        h = self.engines("cupti,sass")
        self.assertEqual(h["sass"], "on")
        self.assertTrue(h["cupti"].startswith(
            "off: refused: the sass engine runs without activity tracing"), h)

    def fixture(self, cap):
        root = os.path.join(self.dir, "proc")
        os.makedirs(os.path.join(root, "driver", "nvidia"))
        os.makedirs(os.path.join(root, "self"))
        with open(os.path.join(root, "driver", "nvidia", "params"), "w") as f:
            f.write("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\n")
        with open(os.path.join(root, "self", "status"), "w") as f:
            f.write("Name:\tprog\nCapEff:\t%016x\n" % cap)
        return root

    def test_no_counter_permission(self):
        h = self.engines("pcsamp", proc_root=self.fixture(0))
        self.assertTrue(h["pcsamp"].startswith(
            "off: pcsamp: GPU performance counters are restricted to "
            "administrators (RmProfilingAdminOnly: 1"), h)
        self.assertIn("NVreg_RestrictProfilingToAdminUsers=0", h["pcsamp"])

    def test_cap_perfmon_suffices(self):
        h = self.engines("sass", proc_root=self.fixture(1 << 38))
        self.assertEqual(h["sass"], "on")

    def test_unsupported_device(self):
        h = self.engines("sass", "unsupported vgpu\n")
        self.assertEqual(h["sass"], "off: sass: device 0 cannot be profiled: "
                         "vgpu disabled (cuptiProfilerDeviceSupported)")

    def test_profiler_refuses(self):
        h = self.engines("pcsamp", "prof_fail profinit 35\n")
        self.assertTrue(h["pcsamp"].startswith(
            "off: pcsamp: cuptiProfilerInitialize: insufficient privileges"),
            h)

    def test_sim(self):
        h = self.engines("sim,sass", sim_steps=1, sim_speed=50)
        self.assertTrue(h["sass"].startswith(
            "off: the simulated GPU is selected"), h)


if __name__ == "__main__":
    unittest.main(verbosity=2)
