"""test_e2e.py - the parts together, as a user runs them.

Demo:     `gpufl demo` starts server + agent + workloads; the query API
          answers with what the workloads did; Ctrl-C (SIGINT) stops every
          process it started; the stored lines equal the lines in the logs.
Restart:  server, agent and workload killed with SIGKILL in turn while a
          workload writes; after recovery the database holds every line of
          the logs exactly once (no loss, no duplicates).

The expected data always comes from the log files, read by the independent
reader tests/client/gpufl_logs.py; the stored data from the server's own
database (sqlite3 / psql), not from gpufl's code, except the kernels: they
are paged through the query API (kid = seq), which reads kernel rows and
blocks alike, so the servers run the default store (blocks; a block holds
its seqs compressed, out of SQL's reach), and the count of kernels at rest
(rows + kblocks.n) must equal the logged ones too.

Environment: GPUFL_BIN_DIR, GPUFL_TEST_TMP (as the server tests).
"""
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
import srvtest as st  # noqa: E402
from srvtest import gl  # noqa: E402

BIN = st.BIN
GPUFL = os.path.join(BIN, "gpufl")
AGENT = os.path.join(BIN, "gpufl-agent")
TOKEN = "e2e-admin-token-0123456789abcdef0123"
STREAM_NO = {"device": 0, "scope": 1, "system": 2}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def free_port_pair():
    """Two consecutive free ports below the kernel's ephemeral range
    (32768-60999), for scripts/fleet.sh's servers on P and P+1: a port
    from bind(0) is in that range, and during the fleet's ~20 s start-up
    any outgoing connection on the machine may take P+1 (seen in CI:
    "gpufl-server 2 ... Address already in use")."""
    for _ in range(200):
        p = random.randrange(20000, 32000, 2)
        socks = []
        try:
            for q in (p, p + 1):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", q))
            return p
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no two consecutive free ports in 20000-32000")


def fresh(name):
    d = os.path.join(st.TMP, "e2e", name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def procs_mentioning(text):
    """PIDs of live processes whose command line mentions text."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        # text as a whole path: "/x/demo" must not match "/x/demo-gpu" of
        # a test running beside this one
        if re.search(re.escape(text) + r"(?=[/\s]|$)", cmd):
            out.append((int(pid), cmd))
    return out


def wait_for(cond, timeout, what, step=0.2):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    raise AssertionError("timed out after %ds waiting for %s" % (timeout, what))


# Every stored line but the kernels, whatever table its type went to
# (docs/server.md): lines keeps the types without a table of their own,
# with their stream (and verdict lines, which the verdicts table repeats
# for queries).
STORED_SQL = " UNION ALL ".join(
    ["SELECT s.sid, l.st, l.seq FROM lines l JOIN sessions s ON s.id = l.sess"]
    + ["SELECT s.sid, %d, t.seq FROM %s t JOIN sessions s ON s.id = t.sess"
       % (stn, table) for table, stn in (("scopes", 1), ("sass", 1),
                                          ("samples", 2))])


def stored_count(db):
    """Lines stored, kernels and ops in either store: rows (kernels, ops)
    or blocks (kblocks.n and oblocks.n, what a block holds)."""
    return sum(int(db.sql("SELECT count(*) FROM %s" % t)[0][0])
               for t in ("lines", "kernels", "ops", "scopes", "sass",
                         "samples")) + \
        sum(int(db.sql("SELECT coalesce(sum(n), 0) FROM %s" % t)[0][0])
            for t in ("kblocks", "oblocks"))


def stored_kids(api, sid):
    """The kernel ids (= device seqs, docs/api.md) of a session as the
    server answers them, page after page: its own read path, which reads
    kernel rows and blocks alike (a block holds its seqs compressed, out
    of SQL's reach), so these checks run whatever store the server runs."""
    return [k["kid"] for k in st.page_all(api, "/api/v1/sessions/%s/kernels"
                                          % sid)]


def stored_ops(api, sid):
    """The seqs of a session's copies, memsets, syncs, allocs and frees as
    the server answers them (its copies pages read the `ops` rows and the
    op blocks alike, docs/server.md "Op blocks")."""
    return [o["seq"] for o in st.page_all(api, "/api/v1/sessions/%s/copies"
                                          % sid)]


def stored_seqs(db, api):
    """{(sid, stream_no): sorted list of seq} stored: the kernels and ops
    through api's kernel and copies pages, the other lines from db's
    tables; plus the number of rows, kernels and ops returned (so a
    duplicate would show)."""
    rows = db.sql(STORED_SQL)
    got = {}
    for sid, stn, seq in rows:
        got.setdefault((sid, int(stn)), []).append(int(seq))
    n = len(rows)
    for (sid,) in db.sql("SELECT sid FROM sessions"):
        kids = stored_kids(api, sid) + stored_ops(api, sid)
        n += len(kids)
        if kids:
            got.setdefault((sid, 0), []).extend(kids)
    for k in got:
        got[k].sort()
    return got, n


def assert_store(t, db, args=()):
    """The kernels are at rest where the run's store puts them
    (srvtest.kernel_store: blocks unless the arguments say rows), so the
    checks above ran that store and not another by mistake."""
    rows, blocks = (int(x) for x in db.sql(
        "SELECT (SELECT count(*) FROM kernels), (SELECT count(*) FROM kblocks)")[0])
    if st.kernel_store(args) == "blocks":
        t.assertEqual((rows, blocks > 0), (0, True))
    else:
        t.assertEqual((rows > 0, blocks), (True, 0))


def logged_seqs(log_dir):
    """The same from the log files, read independently.  Sessions whose
    process was killed may end without session_end and with a partial last
    line: allowed (the partial line was never a line)."""
    want = {}
    sessions = gl.validate(log_dir, allow_partial=True, complete=False)
    for sid, sess in sessions.items():
        for name, stream in sess.streams.items():
            seqs = sorted(e["seq"] for e in stream.events)
            if seqs:
                want[(sid, STREAM_NO[name])] = seqs
    return want, sessions


def agent_cmd(log_dir, port, cursor):
    return [AGENT, "--folder=" + log_dir, "--type=http",
            "--url=http://127.0.0.1:%d/api/v1/events/" % port,
            "--cursor-file=" + cursor, "--linger-ms=50", "--retry-min-ms=50",
            "--retry-max-ms=500", "--stats-s=0"]


def agent_env():
    return st.clean_env({"GPUFL_AGENT_TOKEN": TOKEN})


class Demo(unittest.TestCase):
    def test_demo_runs_stops_and_stores_everything(self):
        root = fresh("demo")
        port = free_port()
        out = st.child_output(os.path.join(root, "demo.out"))
        # --gpu auto (the default) falls back to the simulated GPU here;
        # where a GPU exists DemoGpu covers the real path
        gpu = ["--gpu", "off"] if os.path.exists("/dev/nvidiactl") else []
        p = subprocess.Popen([GPUFL, "demo", "--listen", "127.0.0.1:%d" % port,
                              "--dir", root, "--token", TOKEN, "--steps", "40",
                              "--pause", "1", "--duration", "300"] + gpu,
                             stdout=out, stderr=subprocess.STDOUT,
                             env=st.clean_env())
        srv = st.Server.__new__(st.Server)  # only for req()/get()
        srv.port, srv.token = port, TOKEN
        try:
            def two_ended():
                try:
                    items = srv.get("/api/v1/sessions?limit=50")["items"]
                except Exception:
                    return None
                items = [s for s in items if s["app"] == "example_train"]
                ended = [s for s in items if s.get("state") == "ended"]
                return items if len(ended) >= 2 else None
            items = wait_for(two_ended, 45, "two ended sessions in the API")
            out.seek(0)
            text = out.read()
            self.assertIn("sign in with token: " + TOKEN, text)
            self.assertIn("http://127.0.0.1:%d/" % port, text)
            if not gpu:
                self.assertIn("the simulated GPU it is", text)
            for s in items:
                self.assertTrue(s["simulated"], s)   # labelled simulated
            sid = [s for s in items if s["state"] == "ended"][0]["id"]
            detail = srv.get("/api/v1/sessions/" + sid)
            # the workload's own record of the session, read independently
            logs = gl.validate(os.path.join(root, "logs"), allow_partial=True,
                               complete=False)
            sess = logs[sid]
            kernels = sess.streams["device"].of("kernel")
            # "ended" comes once every stream's session_end is stored
            # (docs/api.md), so the aggregates are complete; waited for
            # anyway, as an upper bound
            path = "/api/v1/sessions/%s/kernels/aggregate?limit=1000" % sid
            agg = wait_for(lambda: (lambda a: a if sum(x["count"] for x in a)
                                    == len(kernels) else None)(
                                        srv.get(path)["items"]),
                           30, "the kernel aggregates to reach the log's")
            names = {}
            for k in kernels:
                n = sess.name(sess.launch(k["cfg"])["name"])
                names[n] = names.get(n, 0) + 1
            self.assertEqual({a["mangled"]: a["count"] for a in agg}, names)
            self.assertEqual(detail["app"], "example_train")
            # the idle detector's verdicts reach the Fleet endpoint
            fleet = wait_for(lambda: srv.get("/api/v1/fleet")["items"], 30,
                             "idle verdicts in /api/v1/fleet")
            gpus = [g for h in fleet for g in h["gpus"]]
            self.assertEqual(len(gpus), 6)
            states = sorted(g["state"] for g in gpus)
            # leaked -> HELD, dirty, its (simulated) holder named
            leak = [g for g in gpus if g.get("holders")]
            self.assertEqual(len(leak), 1, gpus)
            self.assertEqual((leak[0]["dev"], leak[0]["state"],
                              leak[0]["dirty"]), (5, "HELD", True))
            # train -> BUSY, held -> HELD, allocated -> ALLOCATED_UNUSED;
            # phantom is UNKNOWN for its first 300 s (a process list may
            # lag a starting job), then PHANTOM; stuck is BUSY_LOW_OCC for
            # its first 300 s, then STUCK
            self.assertIn("BUSY", states, gpus)
            self.assertIn("HELD", states, gpus)
            self.assertIn("ALLOCATED_UNUSED", states, gpus)
            self.assertTrue(set(states) <= {"BUSY", "HELD", "UNKNOWN",
                                            "PHANTOM", "BUSY_LOW_OCC",
                                            "STUCK", "ALLOCATED_UNUSED"},
                            gpus)
            self.assertTrue(all(h["simulated"] for h in fleet))
            # its waste lines (every 5 s in the demo) reach /fleet/waste,
            # labelled simulated, with the simulated owners
            waste = wait_for(lambda: (lambda w: w if w["totals"][
                "wasted_gpu_h"] > 0 and any(
                    e["key"].startswith("sim-") for e in w["top"]) else None)(
                        srv.get("/api/v1/fleet/waste?by=user&step=600")),
                30, "waste in /api/v1/fleet/waste")
            self.assertIs(waste["simulated"], True)
            self.assertEqual(sum(waste["now"]["gpus_by_state"].values()), 6)
            self.assertEqual(len(waste["gpus"]), 6)
            # the memory profiler's flame graph data, where eBPF is allowed
            chk = subprocess.run([GPUFL, "memprof", "--check"],
                                 stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            if chk.returncode == 0:
                self.check_memory(srv)
            else:
                print("eBPF not permitted: the demo's memprof part not checked")
            # the UI's files are served without a token when they are built,
            # and in a real browser it shows this session and its kernels
            dist = os.path.join(HERE, "..", "..", "web", "dist", "index.html")
            if os.path.exists(dist):
                code, _, body = srv.req("GET", "/", token=None)
                self.assertEqual(code, 200)
                self.assertIn(b"<html", body.lower())
                self.check_ui(port, sid, agg, root)
            else:
                print("web/dist not built (no Node.js >= 20.19): UI not checked")
            # Ctrl-C: everything it started stops
            p.send_signal(signal.SIGINT)
            self.assertEqual(p.wait(60), 0)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            out.close()
        left = procs_mentioning(root)
        self.assertEqual(left, [], "processes left behind")
        with open(os.path.join(root, "demo.out")) as f:
            self.assertIn("stopped;", f.read())
        # nothing lost: ship what the stop left unshipped, then compare
        srv = st.Server(os.path.join(root, "data"), admin=TOKEN,
                        args=["--listen", "127.0.0.1:%d" % port])
        try:
            subprocess.run(agent_cmd(os.path.join(root, "logs"), srv.port,
                                     os.path.join(root, "agent.cursor"))
                           + ["--once"], env=agent_env(), check=True,
                           timeout=120, stdout=subprocess.DEVNULL)
            want, _ = logged_seqs(os.path.join(root, "logs"))
            got, nrows = stored_seqs(srv, srv)
            self.assertEqual(got, want)
            total = sum(len(v) for v in want.values())
            self.assertEqual(nrows, total)
            self.assertEqual(stored_count(srv), total)  # stored once
            assert_store(self, srv)
        finally:
            srv.stop()

    def check_ui(self, port, sid, agg, root):
        if not shutil.which("node"):
            print("node missing: the browser check is skipped")
            return
        r = subprocess.run(["node", os.path.join(HERE, "ui_check.mjs"),
                            "http://127.0.0.1:%d/" % port, TOKEN, sid,
                            os.path.join(root, "ui-kernels.png")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=120)
        if r.returncode == 77:
            print(r.stdout.strip())
            return
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        seen = json.loads(r.stdout.strip().splitlines()[-1])
        self.assertTrue(seen["signin_first"], "data shown before sign-in")
        self.assertIn("example_train", seen["row_text"])
        self.assertIn("simulated", seen["row_text"])
        # one aggregate row per kernel name, each with the API's count
        self.assertEqual(len(seen["agg_rows"]), len(agg))
        for a in agg:
            self.assertTrue(any(re.search(r"(^|\s)%d(\s|$)" % a["count"], t)
                                for t in seen["agg_rows"]), (a, seen))

    def check_memory(self, srv):
        """example_alloc runs under gpufl memprof (eBPF, stand-in driver):
        its session's Memory view has its call chains, labelled simulated."""
        def alloc_session():
            items = srv.get("/api/v1/sessions?limit=50")["items"]
            return [s for s in items if s["app"] == "example_alloc"]
        (sess,) = wait_for(alloc_session, 30, "the example_alloc session")

        def stacks():
            m = srv.get("/api/v1/sessions/%s/memory?view=alloc" % sess["id"])
            joined = [" > ".join(s["frames"]) for s in m["stacks"]]
            want = ("load_model > alloc_weights", "forward > alloc_activations")
            if all(any(w in j for j in joined) for w in want):
                return m
            return None
        m = wait_for(stacks, 40, "memory profile stacks from memprof")
        self.assertTrue(m["simulated"])
        fwd = [s for s in m["stacks"]
               if "forward > alloc_activations" in " > ".join(s["frames"])]
        # forward() allocates 8 MiB then 4 MiB per step from two call sites
        # of one function: one stack (frames are functions), whose bytes
        # are exactly that alternation (odd count: cut after the 8 MiB)
        self.assertEqual(len(fwd), 1, fwd)
        n = fwd[0]["count"]
        self.assertEqual(fwd[0]["bytes"], (8 << 20) * ((n + 1) // 2)
                         + (4 << 20) * (n // 2))
        self.assertEqual(m["total_bytes"], sum(s["bytes"] for s in m["stacks"]))

    def test_runs_past_the_child_table(self):
        """The demo runs its workload over and over for as long as it is
        left running: the 12th run (more children than the 16 slots of its
        process table hold, with the server, agent and detectors) starts
        like the first, and Ctrl-C still stops everything cleanly."""
        root = fresh("demo-many")
        port = free_port()
        out = st.child_output(os.path.join(root, "demo.out"))
        p = subprocess.Popen([GPUFL, "demo", "--listen", "127.0.0.1:%d" % port,
                              "--dir", root, "--token", TOKEN, "--steps", "1",
                              "--pause", "0", "--duration", "240"],
                             stdout=out, stderr=subprocess.STDOUT,
                             env=st.clean_env())
        try:
            def runs():
                out.seek(0)
                text = out.read()
                if p.poll() is not None:
                    return text
                return text if "run 20:" in text else None
            text = wait_for(runs, 200, "20 workload runs")
            self.assertNotIn("too many child processes", text)
            self.assertIsNone(p.poll(), "the demo stopped:\n" + text)
            p.send_signal(signal.SIGINT)
            self.assertEqual(p.wait(60), 0)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            out.close()
        self.assertEqual(procs_mentioning(root), [], "processes left behind")

    def test_port_in_use_is_explained(self):
        root = fresh("demo-busy")
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        try:
            r = subprocess.run([GPUFL, "demo", "--listen", "127.0.0.1:%d" % port,
                                "--dir", root, "--duration", "5"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, timeout=60, env=st.clean_env())
        finally:
            s.close()
        self.assertEqual(r.returncode, 1)
        self.assertIn("already in use", r.stderr)
        self.assertEqual(procs_mentioning(root), [])

    def test_usage_errors(self):
        for args in (["--steps", "x"], ["--listen", "nocolon"], ["--bogus"]):
            r = subprocess.run([GPUFL, "demo"] + args, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=30)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn("gpufl demo:", r.stderr)
        r = subprocess.run([GPUFL, "demo", "--help"], stdout=subprocess.PIPE,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 0)
        for flag in ("--listen", "--token", "--fleet", "--duration"):
            self.assertIn(flag, r.stdout)


class DemoRuns(unittest.TestCase):
    def test_jobs_perturbed_runs_and_many_runs(self):
        """The demo's cycle of runs (docs/demo.md): plain, a 4-rank job with
        rank 2 slowed, plain, GEMMs slowed; and it keeps going past the
        16 processes a supervisor could once start."""
        root = fresh("demoruns")
        port = free_port()
        p = subprocess.run([GPUFL, "demo", "--listen", "127.0.0.1:%d" % port,
                            "--dir", root, "--token", TOKEN, "--steps", "2",
                            "--pause", "0", "--duration", "25", "--gpu", "off",
                            "--no-idle", "--no-memprof"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, env=st.clean_env(), timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout[-3000:])
        logs = gl.validate(os.path.join(root, "logs"), allow_partial=True,
                           complete=False)
        heads = sorted((s.header for s in logs.values()), key=lambda h: h["start"])
        runs, jobs = [], {}
        for h in heads:
            self.assertEqual(h["step_scope"], "train_step")
            if "job" in h:
                if h["job"] not in jobs:
                    runs.append(("job", h["job"]))
                jobs.setdefault(h["job"], []).append(h)
            else:
                runs.append(("perturbed" if "sim_perturb" in h else "plain",
                             h.get("sim_perturb")))
        # more runs than 16 slots: finished children's slots are reused
        self.assertGreater(len(runs), 16, runs)
        cycle = ["plain", "job", "plain", "perturbed"]
        self.assertEqual(sorted(jobs), sorted("%s-%d" % (next(iter(jobs)).rsplit("-", 1)[0], n)
                                              for n in range(1, len(jobs) + 1)))
        self.assertEqual([k for k, _ in runs], [cycle[i % 4] for i in range(len(runs))])
        for k, v in runs:
            if k == "perturbed":
                self.assertEqual(v, "kernel=gemm:x1.25")
        for job, hs in jobs.items():
            self.assertRegex(job, r"^demo-job-\d+-\d+$")
            self.assertEqual(sorted(h["rank"] for h in hs), [0, 1, 2, 3])
            for h in hs:
                self.assertEqual((h["world_size"], h["local_rank"], h["job_source"]),
                                 (4, h["rank"], "gpufl"))
                self.assertEqual(h.get("sim_perturb"),
                                 "kernel=:x1.3" if h["rank"] == 2 else None)
        # every run has a seed of its own: two plain runs' kernels differ
        plain = [logs[h["sid"]] for h in heads[:8]
                 if "job" not in h and "sim_perturb" not in h][:2]
        durs = [[k["dur"] for k in s.streams["device"].of("kernel")][:200]
                for s in plain]
        self.assertEqual(len(durs[0]), 200)
        self.assertEqual(len(durs[1]), 200)
        self.assertNotEqual(durs[0], durs[1])


class DemoGpu(unittest.TestCase):
    """`gpufl demo` on a machine with a GPU, without one: the demo's CUDA
    program is built by the real nvcc (-cudart shared) and runs against the
    tests' fake runtime, driver and CUPTI (tests/cupti/fake_cuda*.c,
    fake_cupti.c), so detection, the nvcc build, `gpufl run` with the
    cupti engine, shipping and storing are the real code; only the GPU is
    not.  Kernel counts and shapes come from the program's source."""

    STEPS = 4
    # demo_cuda.cu: per step one launch each, these grids and blocks
    SHAPES = {"gfl_demo_scale": ([4096], [256]),
              "gfl_demo_matmul": ([32, 32], [16, 16]),
              "gfl_demo_reduce": ([4096], [256])}

    def env(self, script=None):
        fake = os.environ.get("GPUFL_FAKE_DIR", "")
        lib = os.path.join(fake, "cupti-full", "libcupti.so.13")
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        if not os.path.exists(lib) or not os.access(nvcc, os.X_OK):
            print("SKIP: needs nvcc (CUDA toolkit) and the fake CUDA "
                  "libraries (GPUFL_FAKE_DIR)")
            sys.exit(77)
        flags = "-cudart shared"
        if os.environ.get("GPUFL_TEST_SANITIZE") == "1":
            # clang's ASan/UBSan runtime in the program, for the
            # instrumented fake libraries and injected libgpufl
            flags += (" -ccbin clang -Xcompiler -fsanitize=address"
                      " -Xcompiler -fsanitize=undefined")
        extra = {"LD_LIBRARY_PATH": "%s/cuda:%s/cudart" % (fake, fake),
                 "GPUFL_CUPTI_LIB": lib, "NVCC": nvcc,
                 "GPUFL_DEMO_NVCC_FLAGS": flags}
        if script:
            extra["FAKECUPTI_SCRIPT"] = script
        return st.clean_env(extra)

    def test_cuda_workload_through_gpufl_run(self):
        root = fresh("gpudemo")
        port = free_port()
        out = st.child_output(os.path.join(root, "demo.out"))
        p = subprocess.Popen([GPUFL, "demo", "--gpu", "on", "--listen",
                              "127.0.0.1:%d" % port, "--dir", root, "--token",
                              TOKEN, "--steps", str(self.STEPS), "--pause",
                              "1", "--duration", "90", "--no-idle",
                              "--no-memprof"],
                             stdout=out, stderr=subprocess.STDOUT,
                             env=self.env())
        srv = st.Server.__new__(st.Server)
        srv.port, srv.token = port, TOKEN
        try:
            def two_ended():
                try:
                    items = srv.get("/api/v1/sessions?limit=50")["items"]
                except Exception:
                    return None
                ended = [s for s in items if s["app"] == "cuda-demo" and
                         s.get("state") == "ended"]
                return ended if len(ended) >= 2 else None
            ended = wait_for(two_ended, 75, "two ended cuda-demo sessions")
            out.seek(0)
            text = out.read()
            self.assertIn("CUDA devices found", text)
            self.assertIn("under gpufl run (engines cupti,nvml,host)", text)
            self.assertNotIn("simulated GPU it is", text)
            self.assertTrue(os.access(os.path.join(root, "cuda", "demo_cuda"),
                                      os.X_OK))
            logs = gl.validate(os.path.join(root, "logs"), allow_partial=True,
                               complete=False)
            for s in ended:
                self.assertFalse(s["simulated"], s)  # real capture path
                sess = logs[s["id"]]
                self.assertIn("cupti", sess.header["engines"])
                kernels = sess.streams["device"].of("kernel")
                seen = {}
                for k in kernels:
                    launch = sess.launch(k["cfg"])
                    name = sess.name(launch["name"])
                    seen[name] = seen.get(name, 0) + 1
                    self.assertEqual((k["grid"], launch["block"]),
                                     self.SHAPES[name], name)
                self.assertEqual(seen, {n: self.STEPS for n in self.SHAPES})
                path = ("/api/v1/sessions/%s/kernels/aggregate?limit=100"
                        % s["id"])
                agg = wait_for(lambda: (lambda a: a if sum(
                    x["count"] for x in a) == 3 * self.STEPS else None)(
                        srv.get(path)["items"]), 30, "stored kernels")
                self.assertEqual({a["mangled"]: a["count"] for a in agg}, seen)
            p.send_signal(signal.SIGINT)
            self.assertEqual(p.wait(60), 0)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            out.close()
        self.assertEqual(procs_mentioning(root), [], "processes left behind")

    def test_gpu_on_without_a_device_fails_clearly(self):
        root = fresh("nogpu")
        script = os.path.join(root, "script")
        with open(script, "w") as f:
            f.write("devices 0\n")
        r = subprocess.run([GPUFL, "demo", "--gpu", "on", "--listen",
                            "127.0.0.1:%d" % free_port(), "--dir", root,
                            "--duration", "5", "--no-idle", "--no-memprof"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60, env=self.env(script))
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("--gpu on: the driver reports no CUDA device", r.stderr)
        self.assertEqual(procs_mentioning(root), [])
        r = subprocess.run([GPUFL, "demo", "--gpu", "maybe"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--gpu wants auto, on or off", r.stderr)


class Restart(unittest.TestCase):
    def test_kill_9_in_turn_loses_nothing_and_duplicates_nothing(self):
        root = fresh("restart")
        logs = os.path.join(root, "logs")
        os.makedirs(logs)
        data = os.path.join(root, "data")
        cursor = os.path.join(root, "agent.cursor")
        port = free_port()
        listen = ["--listen", "127.0.0.1:%d" % port]
        srv = st.Server(data, admin=TOKEN, args=listen)
        agent_out = open(os.path.join(root, "agent.out"), "a")

        def start_agent():
            return subprocess.Popen(agent_cmd(logs, port, cursor),
                                    env=agent_env(), stdout=agent_out,
                                    stderr=subprocess.STDOUT)

        def start_work(steps):
            return subprocess.Popen(
                [os.path.join(BIN, "example_train"), "--steps", str(steps),
                 "--log-dir", logs], env=st.clean_env(),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        agent = start_agent()
        work = start_work(5000)  # long: killed below
        procs = [agent, work]
        try:
            def stored():
                return stored_count(srv)
            wait_for(lambda: stored() > 500, 30, "lines stored")
            agent.kill()                      # 1. the agent
            agent.wait()
            time.sleep(0.5)
            agent = start_agent()
            procs.append(agent)
            n = stored()
            wait_for(lambda: stored() > n + 500, 30, "the agent to resume")
            srv.kill()                        # 2. the server
            time.sleep(1.0)                   # the agent retries meanwhile
            srv = st.Server(data, admin=TOKEN, args=listen)
            n = stored()
            wait_for(lambda: stored() > n + 500, 30, "shipping after restart")
            work.kill()                       # 3. the workload
            work.wait()
            agent.kill()                      # 4. the agent again, mid-batch
            agent.wait()
            agent = start_agent()
            procs.append(agent)
            w2 = start_work(30)               # a clean run after the crash
            procs.append(w2)
            self.assertEqual(w2.wait(120), 0)
            want, sessions = logged_seqs(logs)
            self.assertEqual(len(sessions), 2)
            total = sum(len(v) for v in want.values())
            wait_for(lambda: stored() >= total, 90, "every logged line stored")
            time.sleep(1.0)                   # nothing more must arrive
            got, nrows = stored_seqs(srv, srv)
            self.assertEqual(nrows, total)    # no duplicates answered
            self.assertEqual(stored_count(srv), total)  # nor stored
            assert_store(self, srv, listen)
            self.assertEqual(got, want)       # no loss, same lines
            # the kernels are answered as kernels (from their table or
            # blocks), not only kept as lines
            for sid, sess in sessions.items():
                self.assertEqual(
                    sorted(stored_kids(srv, sid)),
                    sorted(e["seq"] for e in sess.streams["device"].of("kernel")))
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            agent_out.close()
            srv.stop(check=False)


class PgStore:
    """The fleet's PostgreSQL database, queried with psql (as srvtest)."""

    def __init__(self, uri):
        self.uri = uri

    def sql(self, q):
        out = subprocess.run(["psql", "-At", "-v", "ON_ERROR_STOP=1", self.uri,
                              "-c", q], check=True, stdout=subprocess.PIPE,
                             text=True, timeout=60).stdout
        return [l.split("|") for l in out.splitlines() if l]


def read_env(path):
    env = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            env[k] = v.strip('"')
    return env


def unzstd(b):
    return subprocess.run(["zstd", "-dqc"], input=b, stdout=subprocess.PIPE,
                          check=True).stdout


class Fleet(unittest.TestCase):
    """scripts/fleet.sh (= gpufl demo --fleet): agents -> Kafka mock -> two
    servers in one group -> PostgreSQL, rotated logs archived to radosgw.
    One server is killed with SIGKILL mid-run: the other takes over its
    partitions and every line is stored exactly once."""

    def test_fleet_kafka_two_servers_postgres_s3(self):
        if not [d for d in os.listdir("/usr/lib/postgresql")
                if os.path.exists("/usr/lib/postgresql/%s/bin/initdb" % d)] \
                if os.path.isdir("/usr/lib/postgresql") else True:
            print("SKIP: PostgreSQL server binaries not installed")
            sys.exit(77)
        s3 = shutil.which("radosgw") is not None
        root = fresh("fleet")
        port = free_port_pair()
        args = [GPUFL, "demo", "--fleet", "--dir", root, "--port", str(port),
                "--token", TOKEN, "--agents", "2", "--steps", "40",
                "--runs", "2", "--pause", "6"]
        if not s3:
            print("radosgw not installed: the S3 archive part is skipped")
            args.append("--no-s3")
        out = st.child_output(os.path.join(root, "fleet.out"))
        p = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                             env=st.clean_env({"GPUFL_BIN_DIR": BIN}))
        try:
            envf = os.path.join(root, "fleet.env")
            # radosgw alone may take ceph_up.sh's 2 x 120 s on a loaded
            # machine (it fails rather than return early since) and
            # fleet.sh retries it
            wait_for(lambda: os.path.exists(envf) or p.poll() is not None,
                     300, "the fleet to start")
            if p.poll() is not None:
                out.seek(0)
                self.fail("fleet.sh exited %d:\n%s" % (p.returncode, out.read()))
            env = read_env(envf)
            db = PgStore(env["GPUFL_FLEET_DB"])
            wait_for(lambda: stored_count(db) > 1000, 60, "lines in PostgreSQL")
            with open(os.path.join(root, "run", "server1.pid")) as f:
                os.kill(int(f.read()), signal.SIGKILL)   # one server dies
            logs = [os.path.join(root, "agent%d" % n, "logs") for n in (1, 2)]

            def runs_done():
                for n in (1, 2):
                    with open(os.path.join(root, "work%d.log" % n)) as f:
                        if "all runs done" not in f.read():
                            return False
                return True
            wait_for(runs_done, 120, "both workloads to finish their runs")
            want, sessions = {}, {}
            for d in logs:
                w, ss = logged_seqs(d)
                want.update(w)
                sessions.update(ss)
            total = sum(len(v) for v in want.values())
            self.assertEqual(len({k[0] for k in want}), 4)  # 2 agents x 2 runs
            wait_for(lambda: stored_count(db) >= total, 120,
                     "every line through Kafka into PostgreSQL")
            time.sleep(2)
            # the surviving server answers for all sessions
            srv = st.Server.__new__(st.Server)
            srv.port, srv.token = port + 1, TOKEN
            got, nrows = stored_seqs(db, srv)
            self.assertEqual(nrows, total)   # exactly once
            self.assertEqual(stored_count(db), total)
            # fleet.sh gives its servers no --kernel-store: blocks, the default
            assert_store(self, db)
            self.assertEqual(got, want)
            # the kernels are answered as kernels (from their table or
            # blocks), not only kept as lines (as Restart)
            for sid, sess in sessions.items():
                self.assertEqual(
                    sorted(stored_kids(srv, sid)),
                    sorted(e["seq"] for e in sess.streams["device"].of("kernel")))
            items = srv.get("/api/v1/sessions?limit=100")["items"]
            self.assertEqual({s["id"] for s in items}, {k[0] for k in want})
            if s3:
                self.check_archive(logs)
            p.send_signal(signal.SIGINT)
            self.assertEqual(p.wait(120), 0)
        finally:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
                try:
                    p.wait(120)
                except subprocess.TimeoutExpired:
                    p.kill()
            out.close()
        self.assertEqual(procs_mentioning(root), [], "processes left behind")

    def check_archive(self, logs):
        """Every rotated, shipped file is in the bucket under
        gpufl/<host>/<session>/<stream>.<n>.log.zst with the same content."""
        sys.path.insert(0, os.path.join(HERE, "..", "agent"))
        import harness  # noqa: E402  (its SigV4 curl helper)
        import re
        rotated = {}
        for d in logs:
            for f in os.listdir(d):
                m = re.match(r".*\.([0-9a-f]{8})\.(device|scope|system)\.log\."
                             r"(\d+)(\.zst)?$", f)
                if m:
                    rotated[(m.group(1), m.group(2), int(m.group(3)))] = \
                        os.path.join(d, f)
        self.assertGreater(len(rotated), 4)

        def listed():
            code, body = harness.s3_curl("GET", "/gpufl-archive?list-type=2"
                                         "&max-keys=1000")
            self.assertEqual(code, 200, body[:300])
            return re.findall(rb"<Key>([^<]+)</Key>", body)
        keys = wait_for(lambda: (lambda k: k if len(k) >= len(rotated)
                                 else None)(listed()), 60,
                        "the archive uploads")
        seen = 0
        for key in keys:
            m = re.match(rb"gpufl/[^/]+/([0-9a-f-]{36})/(device|scope|system)"
                         rb"\.(\d+)\.log\.zst$", key)
            self.assertTrue(m, key)
            k = (m.group(1)[:8].decode(), m.group(2).decode(), int(m.group(3)))
            if k not in rotated:
                continue
            code, body = harness.s3_curl("GET", "/gpufl-archive/" + key.decode())
            self.assertEqual(code, 200)
            with open(rotated[k], "rb") as f:
                local = f.read()
            if rotated[k].endswith(".zst"):
                local = unzstd(local)
            self.assertEqual(unzstd(body), local, key)
            seen += 1
        self.assertEqual(seen, len(rotated))


if __name__ == "__main__":
    unittest.main()
