"""test_idle.py - `gpufl idle` as users run it: the real command against
the scripted fake libnvidia-ml.so.1 replaying per-second traces (autotick),
a real pty, real loopback TCP connections, a small HTTP fixture speaking
Jupyter Server's JSON, the watch daemon's log, /metrics, /probe and action
hooks, and gpufl-server storing the verdict lines (GET /api/v1/fleet and
/api/v1/verdicts).  Prometheus scraping /metrics is test_idle_prom.py.

Environment: GPUFL_BIN_DIR, GPUFL_TEST_TMP, FAKE_NVML (the fake library).
"""
import http.server
import json
import os
import pty
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
import srvtest  # noqa: E402

BIN = os.environ.get("GPUFL_BIN_DIR", "build/bin")
GPUFL = os.path.join(BIN, "gpufl")
FAKE = os.environ.get("FAKE_NVML", "build/fake/nvml-full/libnvidia-ml.so.1")
TMP = os.environ.get("GPUFL_TEST_TMP", tempfile.gettempdir())

# The seed's A10G rows as fake NVML devices (dev 0..4), then a GPU that
# fails its reads from tick 3 on.
SEED = """global count=6 autotick=nvmlDeviceGetUtilizationRates
dev 0 name="NVIDIA A10G" uuid=GPU-none mem_total=24146608128 power_limit=300000 util=0 mem_used=0 power=24300 procs=
dev 1 name="NVIDIA A10G" uuid=GPU-held mem_total=24146608128 power_limit=300000 util=0 mem_used=20316160000 power=89100 procs=4101:20316160000
dev 2 name="NVIDIA A10G" uuid=GPU-one mem_total=24146608128 power_limit=300000 util=100 mem_used=316669952 power=90000 procs=4102:316669952
dev 3 name="NVIDIA A10G" uuid=GPU-mm mem_total=24146608128 power_limit=300000 util=100 mem_used=891289600 power=299200 procs=4103:891289600
dev 4 name="NVIDIA A10G" uuid=GPU-ph mem_total=24146608128 power_limit=300000 util=100 mem_used=0 power=118000 pstate=0 procs=
dev 5 name="NVIDIA A10G" uuid=GPU-bad mem_total=24146608128 power_limit=300000 util=100 mem_used=891289600 power=299200 procs=4105:891289600
sample 3 dev 5 fail=util:999
"""

# dcgm-exporter's text for the seed's one_thread (dev 2) and matmul (3)
DCGM = """# HELP DCGM_FI_PROF_SM_ACTIVE The ratio of cycles an SM has at least 1 warp assigned.
# TYPE DCGM_FI_PROF_SM_ACTIVE gauge
DCGM_FI_PROF_SM_ACTIVE{gpu="2",UUID="GPU-one",pci_bus_id="00000000:00:1E.0",device="nvidia2",modelName="NVIDIA A10G",Hostname="vm"} 0.012
DCGM_FI_PROF_SM_ACTIVE{gpu="3",UUID="GPU-mm",pci_bus_id="00000000:00:1F.0",device="nvidia3",modelName="NVIDIA A10G",Hostname="vm"} 0.984
# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge
DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="2",UUID="GPU-one",Hostname="vm"} 1.000
"""

FAST = ["--interval", "20", "--window", "1", "--grace", "0"]


def run(args, env=None, timeout=60):
    e = srvtest.clean_env(env)
    p = subprocess.run([GPUFL, "idle"] + args, env=e, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def tmpdir(name):
    d = os.path.join(TMP, "idle_%s_%d" % (name, os.getpid()))
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def listen_port(p):
    """The port a `watch --listen ADDR:0` daemon logged, and its stderr so
    far (port None after 20 s)."""
    buf = ""
    deadline = time.time() + 20
    while time.time() < deadline:
        line = p.stderr.readline()
        buf += line
        m = re.search(r"listening on [^:]+:(\d+)", line)
        if m:
            return int(m.group(1)), buf
    return None, buf


def by_dev(doc):
    return {g["dev"]: g for g in doc["gpus"]}


def by_name(doc):
    return {s["session"]: s for s in doc["sessions"]}


class Jupyter(http.server.BaseHTTPRequestHandler):
    """/api/status and /api/kernels as Jupyter Server answers them; a
    wrong token is 403.  The class attributes are the scripted state."""
    token = "s3cret"
    connections = 1
    kernels = []
    posts = []

    def log_message(self, *a):
        pass

    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/metrics":  # dcgm-exporter
            data = DCGM.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if self.headers.get("Authorization") != "token " + Jupyter.token:
            return self._send(403, {"message": "Forbidden"})
        if self.path == "/api/status":
            return self._send(200, {"started": "2026-11-30T00:00:00.000000Z",
                                    "last_activity": iso(time.time()),
                                    "connections": Jupyter.connections,
                                    "kernels": len(Jupyter.kernels)})
        if self.path == "/api/kernels":
            return self._send(200, Jupyter.kernels)
        self._send(404, {"message": "Not found"})

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        Jupyter.posts.append((self.path, self.rfile.read(n)))
        self._send(200, {})


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + \
        ".%06dZ" % int((t % 1) * 1e6)


class Fixture:
    def __init__(self, tls=None):
        """tls: an ssl.SSLContext to serve https with."""
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Jupyter)
        if tls:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket,
                                                server_side=True)
        self.port = self.httpd.server_address[1]
        self.t = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.t.start()
        self.url = "%s://127.0.0.1:%d" % ("https" if tls else "http", self.port)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Cli(unittest.TestCase):
    def setUp(self):
        self.dir = tmpdir("cli")
        self.script = os.path.join(self.dir, "seed.txt")
        with open(self.script, "w") as f:
            f.write(SEED)
        self.env = {"FAKE_NVML_SCRIPT": self.script}

    def test_seed_states_nvml(self):
        """The five measured states through the real NVML source: the
        A10G has no GPM, so one_thread is told from matmul by power."""
        rc, out, err = run(["--once", "--json", "--nvml-lib", FAKE,
                            "--samples", "6", "--phantom-hold", "0"] + FAST,
                           env=self.env)
        doc = json.loads(out)
        g = by_dev(doc)
        self.assertFalse(doc["simulated"])
        self.assertEqual(g[0]["state"], "EMPTY")
        self.assertEqual(g[1]["state"], "HELD")
        self.assertEqual(g[2]["state"], "BUSY_LOW_OCC")
        self.assertIn("power proxy", " ".join(g[2]["reasons"]))
        self.assertEqual(g[3]["state"], "BUSY")
        self.assertEqual(g[4]["state"], "PHANTOM")
        self.assertEqual(g[5]["state"], "UNKNOWN")
        self.assertEqual(g[1]["signals"]["procs"], 1)
        self.assertEqual(g[1]["signals"]["mem_used"], 20316160000)
        self.assertEqual(g[3]["uuid"], "GPU-mm")
        self.assertEqual(rc, 5, err)  # a phantom GPU wins the exit code

    def test_dcgm_sm_active(self):
        """An A10G without GPM: SM_ACTIVE from a dcgm-exporter scrape
        replaces the power proxy."""
        fx = Fixture()
        try:
            rc, out, err = run(["--once", "--json", "--nvml-lib", FAKE,
                                "--samples", "4", "--dcgm-url",
                                fx.url + "/metrics"] + FAST, env=self.env)
        finally:
            fx.close()
        g = by_dev(json.loads(out))
        self.assertEqual(g[2]["state"], "BUSY_LOW_OCC")
        self.assertAlmostEqual(g[2]["signals"]["sm_active"], 0.012, 3)
        self.assertEqual(g[2]["signals"]["gr_active"], 1)
        self.assertIn("SM activity 0.012", " ".join(g[2]["reasons"]))
        self.assertEqual(g[3]["state"], "BUSY")
        self.assertAlmostEqual(g[3]["signals"]["sm_active"], 0.984, 3)
        self.assertNotIn("sm_active", g[1]["signals"])

    def test_residue_is_empty(self):
        """What a real H200 showed right after a PyTorch process exited: no
        process, no memory, one sample of six at 2 %. That is EMPTY; a mean
        of --empty-util or more is not (with SM activity:
        test_idle_gpu.c's test_residue_gpm)."""
        with open(self.script, "w") as f:
            f.write("global count=2 autotick=nvmlDeviceGetUtilizationRates\n")
            for d in range(2):
                f.write('dev %d name="NVIDIA H200" uuid=GPU-r%d '
                        "mem_total=150754820096 power_limit=700000 util=0 "
                        "mem_used=0 power=130000 procs=\n" % (d, d))
            f.write("sample 2 dev 0 util=2\nsample 3 dev 0 util=0\n"
                    "dev 1 util=20\n")
        rc, out, err = run(["--once", "--json", "--nvml-lib", FAKE,
                            "--samples", "6"] + FAST, env=self.env)
        g = by_dev(json.loads(out))
        self.assertEqual(g[0]["state"], "EMPTY", g[0])
        self.assertGreater(g[0]["signals"]["util_max"], 0)
        self.assertIn("below --empty-util 5", " ".join(g[0]["reasons"]))
        self.assertEqual(g[1]["state"], "UNKNOWN", g[1])
        self.assertIn("cannot attribute", " ".join(g[1]["reasons"]))
        rc, out, err = run(["--once", "--json", "--nvml-lib", FAKE,
                            "--samples", "6", "--empty-util", "0"] + FAST,
                           env=self.env)
        self.assertEqual(by_dev(json.loads(out))[0]["state"], "UNKNOWN")

    def test_phantom_needs_time(self):
        rc, out, _ = run(["--once", "--json", "--nvml-lib", FAKE,
                          "--samples", "3"] + FAST, env=self.env)
        g = by_dev(json.loads(out))
        self.assertEqual(g[4]["state"], "UNKNOWN")
        self.assertIn("PHANTOM after 300 s", g[4]["reasons"][0])
        self.assertEqual(rc, 4)

    def test_exit_codes_and_probe(self):
        # one simulated matmul GPU: in use
        rc, out, _ = run(["--once", "--simulate", "matmul", "--samples", "2"]
                         + FAST)
        self.assertEqual(rc, 0)
        self.assertIn("SIMULATED", out)
        # an empty GPU and an idle session: reclaimable
        rc, out, _ = run(["--once", "--probe", "--simulate", "none",
                          "--session", "name=a,devs=0", "--samples", "2"]
                         + FAST)
        self.assertEqual(rc, 3)
        p = json.loads(out)
        self.assertIs(p["has_activity"], False)
        self.assertIs(p["simulated"], True)
        self.assertRegex(p["last_activity"], r"^\d{4}-\d\d-\d\dT")
        rc, out, _ = run(["--once", "--probe", "--simulate", "held",
                          "--session", "name=a,devs=0", "--samples", "2"]
                         + FAST)
        self.assertEqual(rc, 3)  # HELD_IDLE: memory held, nobody there

    def test_veto(self):
        """`gpufl idle keep` writes a veto that turns a stop into vetoed."""
        veto = os.path.join(self.dir, "veto")
        os.makedirs(veto)
        args = ["--once", "--json", "--simulate", "none", "--session",
                "name=bob,devs=0", "--idle", "0s", "--warn", "0s",
                "--veto-dir", veto, "--samples", "2"] + FAST
        rc, out, _ = run(args)
        self.assertEqual(by_name(json.loads(out))["bob"]["action"], "stop")
        rc, out, _ = run(["keep", "bob", "--veto-dir", veto, "--veto-for",
                          "4h"])
        self.assertEqual(rc, 0)
        with open(os.path.join(veto, "bob.keep")) as f:
            until = int(f.read())
        self.assertAlmostEqual(until, time.time() + 4 * 3600, delta=60)
        rc, out, _ = run(args)
        s = by_name(json.loads(out))["bob"]
        self.assertEqual(s["action"], "vetoed")
        self.assertGreater(s["veto_until"], time.time() * 1e9)

    def test_config_file_and_errors(self):
        cfg = os.path.join(self.dir, "idle.conf")
        with open(cfg, "w") as f:
            f.write("# thresholds\nsimulate = one_thread\nbusy-util = 50\n"
                    "low-occ-sm = 0.001\nsamples = 2\ninterval = 20\n")
        rc, out, _ = run(["--once", "--json", "--config", cfg, "--window",
                          "1"])
        self.assertEqual(by_dev(json.loads(out))[0]["state"], "BUSY")
        rc, out, _ = run(["--once", "--json", "--config", cfg, "--window",
                          "1", "--low-occ-sm", "0.05"])
        self.assertEqual(by_dev(json.loads(out))[0]["state"], "BUSY_LOW_OCC")
        with open(cfg, "a") as f:
            f.write("no-such-key = 1\n")
        rc, _, err = run(["--config", cfg])
        self.assertEqual(rc, 2)
        self.assertIn("unknown key", err)
        rc, _, err = run(["--busy-util", "200"])
        self.assertEqual(rc, 2)
        rc, _, err = run(["--session", "name=x,bogus=1"])
        self.assertEqual(rc, 2)
        rc, _, err = run(["--once", "--nvml-lib", "/nonexistent/libnvidia-ml.so"])
        self.assertEqual(rc, 1)
        self.assertIn("cannot load", err)


SCENES = """global count=4 autotick=nvmlDeviceGetUtilizationRates
dev 0 name="NVIDIA A10G" uuid=GPU-0 mem_total=24146608128 power_limit=300000 util=0 mem_used=0 procs=
dev 1 name="NVIDIA A10G" uuid=GPU-train mem_total=24146608128 power_limit=300000 util=97 mem_used=21474836480 power=281000 procs=5001:21474836480
dev 2 name="NVIDIA A10G" uuid=GPU-tab mem_total=24146608128 power_limit=300000 util=0 mem_used=20316160000 power=89100 procs=5002:20316160000
dev 3 name="NVIDIA A10G" uuid=GPU-cpu mem_total=24146608128 power_limit=300000 util=0 mem_used=20316160000 power=89100 procs=5003:20316160000
"""


def fixture_root(d, now):
    """A /proc + cgroup + utmp tree: three containers owning GPUs 1-3."""
    import struct

    def put(rel, text):
        path = os.path.join(d, rel.lstrip("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path
    for pid, cg in ((5001, "/train"), (5002, "/tab"), (5003, "/cpu")):
        put("/proc/%d/cgroup" % pid, "0::%s/main.scope\n" % cg)
        put("/sys/fs/cgroup%s/cpu.stat" % cg, "usage_usec 1000\n")
    # one ESTABLISHED connection on 8888 (the tab), a LISTEN on 6006
    put("/proc/net/tcp",
        "  sl  local_address rem_address   st\n"
        "   0: 0100007F:22B8 0100007F:D2F4 01 0:0 0:0 0 1000 0 1\n"
        "   1: 00000000:1776 00000000:0000 0A 0:0 0:0 0 1000 0 2\n")
    put("/proc/net/tcp6", "  sl  local_address\n")
    # utmp: alice on pts/4, last input 3 h ago (glibc struct utmp, 384 B)
    rec = struct.pack("<hxxi32s4s32s256shhiii4i20x", 7, 4242, b"pts/4",
                      b"ts/4", b"alice", b"", 0, 0, 0, int(now), 0,
                      0, 0, 0, 0)
    assert len(rec) == 384
    os.makedirs(os.path.join(d, "var/run"), exist_ok=True)
    with open(os.path.join(d, "var/run/utmp"), "wb") as f:
        f.write(rec)
    pts = put("/dev/pts/4", "")
    os.utime(pts, (now - 3 * 3600, now - 3 * 3600))


class Scenes(unittest.TestCase):
    """Scripted NVML traces and a fixture tree together: GPUs attributed
    to sessions through /proc/PID/cgroup, connections, utmp input age,
    and container CPU that grows while the command runs."""

    def test_training_tab_cpu_phase(self):
        d = tmpdir("scenes")
        script = os.path.join(d, "scenes.txt")
        with open(script, "w") as f:
            f.write(SCENES)
        root = os.path.join(d, "root")
        fixture_root(root, time.time())
        cpu = os.path.join(root, "sys/fs/cgroup/cpu/cpu.stat")
        stop = threading.Event()

        def burn():  # the "cpu" container uses 1.5 cores
            t0 = time.time()
            while not stop.is_set():
                with open(cpu + ".tmp", "w") as f:
                    f.write("usage_usec %d\n" % (1000 + (time.time() - t0) * 1.5e6))
                os.replace(cpu + ".tmp", cpu)
                time.sleep(0.01)
        t = threading.Thread(target=burn)
        t.start()
        try:
            # cpu_cores is the rate between the last two samples, and
            # burn() a thread of this process: 500 ms apart (not 50), so
            # that burn() starved up to ~160 ms on a loaded machine (a
            # stale last reading) still reads above 1.0 of the 1.5 cores;
            # 50 ms apart one missed write read 0.
            rc, out, err = run(
                ["--once", "--json", "--nvml-lib", FAKE, "--root", root,
                 "--samples", "4", "--interval", "500", "--window", "1",
                 "--grace", "0",
                 "--session", "name=train,cgroup=/train,ports=6006",
                 "--session", "name=tab,cgroup=/tab,ports=8888,user=alice",
                 "--session", "name=cpu,cgroup=/cpu"],
                env={"FAKE_NVML_SCRIPT": script})
        finally:
            stop.set()
            t.join()
        doc = json.loads(out)
        s = by_name(doc)
        # a silent long training job, no connection: kept
        self.assertEqual(s["train"]["devs"], [1])
        self.assertEqual((s["train"]["state"], s["train"]["activity"]),
                         ("ACTIVE", "gpu"))
        self.assertEqual(s["train"]["signals"]["conn"], 0)
        self.assertEqual(s["train"]["signals"]["gpu_procs"], 1)
        # an open tab holding 20 GB, no input for 3 h: not use
        self.assertEqual(s["tab"]["devs"], [2])
        self.assertEqual(s["tab"]["state"], "HELD_IDLE")
        self.assertEqual(s["tab"]["signals"]["conn"], 1)
        self.assertGreater(s["tab"]["signals"]["input_age_s"], 3 * 3600 - 60)
        # a CPU phase with the model resident: kept
        self.assertEqual(s["cpu"]["devs"], [3])
        self.assertEqual((s["cpu"]["state"], s["cpu"]["activity"]),
                         ("ACTIVE", "cpu"))
        self.assertGreater(s["cpu"]["signals"]["cpu_cores"], 1.0)
        self.assertEqual(rc, 0, err)
        # without --session: automatic sessions, one per container
        rc, out, err = run(["--once", "--json", "--nvml-lib", FAKE, "--root",
                            root, "--samples", "2", "--interval", "50"],
                           env={"FAKE_NVML_SCRIPT": script})
        names = sorted(x["session"] for x in json.loads(out)["sessions"])
        self.assertEqual(names, ["cpu", "tab", "train"])


class Signals(unittest.TestCase):
    """Real pty input, real TCP connections, a Jupyter-speaking fixture."""

    def test_pty_input_age(self):
        master, slave = pty.openpty()
        try:
            path = os.ttyname(slave)
            old = time.time() - 3 * 3600
            os.utime(path, (old, old))
            args = ["--once", "--json", "--simulate", "none", "--session",
                    "name=dev,tty=%s,devs=0" % path, "--samples", "2"] + FAST
            rc, out, _ = run(args)
            s = by_name(json.loads(out))["dev"]
            self.assertGreater(s["signals"]["input_age_s"], 3 * 3600 - 60)
            self.assertEqual(s["state"], "IDLE")
            self.assertEqual(rc, 3)
            # the user types: the pty's reader sees input, the kernel
            # updates its atime (with 8 s granularity)
            os.write(master, b"ls\n")
            os.read(slave, 100)
            rc, out, _ = run(args)
            s = by_name(json.loads(out))["dev"]
            self.assertLess(s["signals"]["input_age_s"], 30)
            self.assertEqual(s["state"], "GPU_UNUSED")
            self.assertEqual(rc, 0)
        finally:
            os.close(master)
            os.close(slave)

    def test_tcp_connections(self):
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        port = srv.getsockname()[1]
        clients = [socket.create_connection(("127.0.0.1", port))
                   for _ in range(2)]
        accepted = [srv.accept()[0] for _ in clients]
        try:
            rc, out, _ = run(["--once", "--json", "--simulate", "held",
                              "--session", "name=ide,ports=%d,devs=0" % port,
                              "--samples", "2"] + FAST)
            s = by_name(json.loads(out))["ide"]
            self.assertEqual(s["signals"]["conn"], 2)
            # an open connection with no input is not use (open tab)
            self.assertEqual(s["state"], "HELD_IDLE")
            for c in clients + accepted:
                c.close()
            # the connections closed, the listener still bound: a port
            # given back could be any other process's next outgoing
            # connection's own (an ESTABLISHED socket on it, counted);
            # bound, the kernel gives it to no connect()
            rc, out, _ = run(["--once", "--json", "--simulate", "held",
                              "--session", "name=ide,ports=%d,devs=0" % port,
                              "--samples", "2"] + FAST)
            self.assertEqual(by_name(json.loads(out))["ide"]["signals"]["conn"],
                             0)
        finally:
            for c in clients + accepted:
                c.close()
            srv.close()

    def test_jupyter(self):
        fx = Fixture()
        try:
            Jupyter.kernels = [{"id": "k1", "name": "python3",
                                "last_activity": iso(time.time() - 5),
                                "execution_state": "busy", "connections": 1}]
            spec = "name=nb,jupyter=%s,token=s3cret,devs=0" % fx.url
            rc, out, _ = run(["--once", "--json", "--simulate", "held",
                              "--session", spec, "--samples", "2"] + FAST)
            s = by_name(json.loads(out))["nb"]
            self.assertEqual(s["state"], "ACTIVE")
            self.assertEqual(s["activity"], "gpu_held")
            self.assertIs(s["signals"]["kernel_busy"], True)
            self.assertLess(s["signals"]["input_age_s"], 60)
            self.assertEqual(s["signals"]["conn"], 1)
            # idle kernel, last message 2 h ago, tab still open
            Jupyter.kernels = [{"id": "k1", "name": "python3",
                                "last_activity": iso(time.time() - 7200),
                                "execution_state": "idle", "connections": 1}]
            rc, out, _ = run(["--once", "--json", "--simulate", "held",
                              "--session", spec, "--samples", "2"] + FAST)
            s = by_name(json.loads(out))["nb"]
            self.assertEqual(s["state"], "HELD_IDLE")
            self.assertGreater(s["signals"]["input_age_s"], 7000)
            self.assertEqual(rc, 3)
            # a wrong token: UNKNOWN, which never stops anything
            rc, out, _ = run(["--once", "--json", "--simulate", "held",
                              "--session", spec.replace("s3cret", "bad"),
                              "--samples", "2"] + FAST)
            s = by_name(json.loads(out))["nb"]
            self.assertEqual(s["state"], "UNKNOWN")
            self.assertIn("HTTP 403", " ".join(s["reasons"]))
            self.assertEqual(rc, 4)
        finally:
            fx.close()


    def test_jupyter_tls(self):
        """Client TLS (issue 17): Jupyter over https is read when --ca-file
        names the CA that signed it; with the system's CAs or another CA
        the session is UNKNOWN with the reason (never stopped); a token
        over plain http to another machine is warned about."""
        import ssl
        pki = srvtest.make_pki(tmpdir("pki"))
        if not pki:
            self.skipTest("openssl is not installed")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(pki["cert"], pki["key"])
        fx = Fixture(ctx)
        try:
            Jupyter.kernels = [{"id": "k1", "name": "python3",
                                "last_activity": iso(time.time() - 5),
                                "execution_state": "busy", "connections": 1}]
            spec = "name=nb,jupyter=%s,token=s3cret,devs=0" % fx.url
            base = ["--once", "--json", "--simulate", "held", "--session",
                    spec, "--samples", "2"] + FAST
            rc, out, err = run(base + ["--ca-file", pki["ca"]])
            s = by_name(json.loads(out))["nb"]
            self.assertEqual(s["state"], "ACTIVE", err)
            self.assertIs(s["signals"]["kernel_busy"], True)
            self.assertNotIn("plain http", err)
            for ca in (None, pki["other_ca"]):
                rc, out, err = run(base + (["--ca-file", ca] if ca else []))
                s = by_name(json.loads(out))["nb"]
                self.assertEqual(s["state"], "UNKNOWN")
                self.assertIn("certificate was not accepted",
                              " ".join(s["reasons"]))
                self.assertEqual(rc, 4)
        finally:
            fx.close()
        rc, out, err = run(["--once", "--json", "--simulate", "held",
                            "--session", "name=far,jupyter=http://"
                            "gpufl-test.invalid:9,token=t,devs=0",
                            "--samples", "1"] + FAST)
        self.assertIn("gpufl idle: warning: session far: jupyter=http://"
                      "gpufl-test.invalid:9 is plain http to another machine",
                      err)


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.headers.get("Content-Type"), r.read().decode()


class Watch(unittest.TestCase):
    def test_watch_log_metrics_hooks(self):
        d = tmpdir("watch")
        fx = Fixture()
        Jupyter.posts = []
        hook_out = os.path.join(d, "hook.txt")
        p = subprocess.Popen(
            [GPUFL, "idle", "watch", "--simulate", "none,held,matmul",
             "--session", 'name=bob,devs=0,pod=team-a/bob "the" \\pod',
             "--session", "name=alice,devs=1,pod=team-a/alice",
             "--idle", "1s", "--warn", "1s", "--hysteresis", "0",
             "--log-dir", d, "--listen", "127.0.0.1:0",
             "--hook-cmd", "echo $GPUFL_IDLE_SESSION $GPUFL_IDLE_STATE >> "
             + hook_out, "--hook-url", fx.url + "/stop",
             "--duration", "6"] + FAST, env=srvtest.clean_env(),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            port, buf = listen_port(p)
            self.assertIsNotNone(port, buf)
            base = "http://127.0.0.1:%d" % port
            time.sleep(3)
            st, ctype, text = get(base + "/metrics")
            self.assertEqual(st, 200)
            self.assertTrue(ctype.startswith("text/plain; version=0.0.4"))
            self.assertIn("# HELP gpufl_idle_gpu_state ", text)
            self.assertIn("# TYPE gpufl_idle_gpu_state gauge", text)
            self.assertIn("gpufl_idle_simulated 1", text)
            self.assertRegex(text, r'gpufl_idle_gpu_state\{gpu="2",UUID="GPU-[^"]+",'
                             r'pci_bus_id="[^"]+",modelName="Simulated NVIDIA A10G",'
                             r'Hostname="[^"]+",hostname="[^"]+",state="BUSY"\} 1')
            # label escaping: quote and backslash in a pod name
            self.assertIn('pod="bob \\"the\\" \\\\pod"', text)
            self.assertIn('namespace="team-a"', text)
            # families are contiguous: each TYPE line once
            types = re.findall(r"^# TYPE (\S+)", text, re.M)
            self.assertEqual(len(types), len(set(types)))
            st, _, probe = get(base + "/probe?session=alice")
            self.assertEqual(json.loads(probe)["has_activity"], False)
            st, _, v = get(base + "/verdicts")
            self.assertEqual(by_dev(json.loads(v))[2]["state"], "BUSY")
            p.wait(30)
            self.assertEqual(p.returncode, 0)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            fx.close()
        # the hook ran once for bob (EMPTY GPU, idle 1 s + 1 s warning);
        # alice holds memory: HELD_IDLE waits T_held (2 h), no stop
        with open(hook_out) as f:
            self.assertEqual(f.read().split("\n"), ["bob IDLE", ""])
        self.assertEqual(len(Jupyter.posts), 1)
        self.assertEqual(Jupyter.posts[0][0], "/stop")
        body = json.loads(Jupyter.posts[0][1])
        self.assertEqual((body["session"], body["action"]), ("bob", "stop"))
        # the log: a session line, then verdict lines (docs/events.md)
        logs = [f for f in os.listdir(d) if f.endswith(".system.log")]
        self.assertEqual(len(logs), 1)
        self.assertRegex(logs[0], r"^gpufl-idle\.\d{8}-\d{6}\.[0-9a-f]{8}\.system\.log$")
        with open(os.path.join(d, logs[0])) as f:
            lines = [json.loads(l) for l in f]
        self.assertEqual(lines[0]["type"], "session")
        self.assertEqual(lines[0]["app"], "gpufl-idle")
        self.assertIs(lines[0]["simulated"], True)
        self.assertEqual([l["seq"] for l in lines], list(range(len(lines))))
        # and waste lines (at exit at least)
        self.assertTrue(all(l["type"] in ("verdict", "waste")
                            for l in lines[1:]))
        v = [l for l in lines[1:] if l["type"] == "verdict"]
        actions = [l["action"] for l in v if l.get("session") == "bob"]
        self.assertIn("warn", actions)
        self.assertEqual(actions[-1], "stop")
        self.assertEqual(sum(1 for a in actions if a == "stop"), 1)


POD_UID = "6f1c2d3e-1111-2222-3333-444455556666"


def waste_root(d):
    """A fixture host: pod ml/train-0 holds GPU 1 through the kubelet
    device-plugin checkpoint; pid 100 (in that pod's cgroup) has
    /dev/nvidia0 open; alice is uid 1001."""
    root = os.path.join(d, "root")
    os.makedirs(os.path.join(root, "var/log/pods/ml_train-0_" + POD_UID))
    os.makedirs(os.path.join(root, "etc"))
    os.makedirs(os.path.join(root, "var/lib/kubelet/device-plugins"))
    os.makedirs(os.path.join(root, "proc/100/fd"))
    with open(os.path.join(root, "etc/passwd"), "w") as f:
        f.write("alice:x:1001:1001::/home/alice:/bin/sh\n")
    with open(os.path.join(root, "var/lib/kubelet/device-plugins/"
                           "kubelet_internal_checkpoint"), "w") as f:
        json.dump({"Data": {"PodDeviceEntries": [
            {"PodUID": POD_UID, "ContainerName": "trainer",
             "ResourceName": "nvidia.com/gpu",
             "DeviceIDs": {"-1": ["GPU-alloc"]}}],
            "RegisteredDevices": {"nvidia.com/gpu": ["GPU-alloc"]}},
            "Checksum": 1}, f)
    with open(os.path.join(root, "proc/100/cgroup"), "w") as f:
        f.write("0::/kubepods.slice/kubepods-pod" + POD_UID.replace("-", "_")
                + ".slice/cri-containerd-abcdef1234567890.scope\n")
    with open(os.path.join(root, "proc/100/status"), "w") as f:
        f.write("Uid:\t1001\t1001\t1001\t1001\n")
    os.symlink("/dev/nvidia0", os.path.join(root, "proc/100/fd/7"))
    return root


class Waste(unittest.TestCase):
    """Waste accounting through the real command: the clean check's exit
    codes, the holder of leaked memory, and the daemon's busy seconds per
    process and allocated-unused seconds per pod in /metrics."""

    def script(self, d, text):
        path = os.path.join(d, "nvml.txt")
        with open(path, "w") as f:
            f.write(text)
        return {"FAKE_NVML_SCRIPT": path}

    def test_clean_check(self):
        d = tmpdir("clean")
        root = waste_root(d)
        base = ["--once", "--json", "--clean-check", "--nvml-lib", FAKE,
                "--root", root, "--samples", "3"] + FAST
        cases = [
            ("dev 0 uuid=GPU-a util=0 mem_used=0 procs=\n", 0),
            ("dev 0 uuid=GPU-a util=0 mem_used=10737418240 procs=\n", 6),
            ("dev 0 uuid=GPU-a util=90 mem_used=891289600 power=200000 "
             "power_limit=300000 procs=100:891289600\n", 7),
        ]
        for trace, want in cases:
            rc, out, err = run(base, env=self.script(d, trace))
            self.assertEqual(rc, want, trace + out + err)
        # the leaked case names its holder: pid 100 of pod ml/train-0
        rc, out, err = run(base, env=self.script(d, cases[1][0]))
        g = by_dev(json.loads(out))[0]
        self.assertIs(g["dirty"], True)
        self.assertEqual(g["holders"], [100])
        why = " ".join(g["reasons"])
        self.assertIn("held open by pid 100, pod ml/train-0, container "
                      "abcdef123456, user alice", why)
        self.assertIn("not safe for the next job", why)
        # without --clean-check the old exit codes hold (HELD: idle)
        rc, _, _ = run([a for a in base if a != "--clean-check"],
                       env=self.script(d, cases[1][0]))
        self.assertEqual(rc, 3)

    def test_simulate_all_shows_the_waste_verdicts(self):
        """The demo's `--simulate all`: STUCK, ALLOCATED_UNUSED, leaked
        memory with its (simulated) holder named, and a dead container's
        GPU, the last two dirty (exit 6 with --clean-check)."""
        args = ["--once", "--simulate", "all", "--samples", "5",
                "--phantom-hold", "0", "--stuck-hold", "0"] + FAST
        rc, out, err = run(args + ["--json", "--clean-check"])
        self.assertEqual(rc, 6, err)
        g = by_dev(json.loads(out))
        want = {7: "STUCK", 8: "ALLOCATED_UNUSED", 9: "HELD", 10: "HELD"}
        for dev, st in want.items():
            self.assertEqual(g[dev]["state"], st, g[dev])
        self.assertEqual(g[9]["holders"], [100009])
        self.assertIs(g[9]["dirty"], True)
        self.assertIs(g[10]["dirty"], True)
        self.assertNotIn("dirty", g[1])  # held by a live process: clean
        self.assertIn("held open by pid 100009, pod demo/sim-notebook-9, "
                      "user sim-bob", " ".join(g[9]["reasons"]))
        self.assertIn("pid 100010 listed by NVML no longer exists on this "
                      "host (a dead container?)", " ".join(g[10]["reasons"]))
        # and in the text output
        rc, out, err = run(args)
        self.assertEqual(rc, 5, err)  # the phantom GPU
        self.assertRegex(out, r"gpu 9 HELD .*\n.*\n    - held open by pid "
                         r"100009")
        self.assertIn("gpu 8 ALLOCATED_UNUSED", out)
        self.assertIn("gpu 7 STUCK", out)

    def test_price_text(self):
        """--price: the waste seen per GPU and in all, priced by model,
        and the rate it makes per hour; a bad price is a usage error."""
        base = ["--once", "--simulate", "held,matmul,allocated", "--samples",
                "4", "--interval", "100", "--window", "1", "--grace", "0"]
        rc, out, err = run(base + ["--price", "Simulated NVIDIA A10G=3.6",
                                   "--currency", "EUR"])
        self.assertEqual(rc, 0, err)  # matmul is in use
        seen = re.findall(r"^gpu (\d+) .*\n(?:    - (?!waste).*\n)*"
                          r"    - waste seen: ([\d.]+) GPU-s = ([\d.]+) EUR "
                          r"\(3.60 EUR per GPU-hour\)$", out, re.M)
        got = {int(d): (float(s), float(c)) for d, s, c in seen}
        self.assertEqual(sorted(got), [0, 2], out)  # matmul wastes nothing
        m = re.search(r"^waste seen: ([\d.]+) GPU-s over ([\d.]+) s = "
                      r"([\d.]+) EUR; at this rate ([\d.]+) EUR per hour$",
                      out, re.M)
        self.assertIsNotNone(m, out)
        total, span, cost, rate = map(float, m.groups())
        self.assertGreater(span, 0.25)
        for secs, c in got.values():  # a whole GPU wasted all along
            self.assertAlmostEqual(secs, span, delta=0.002)
            self.assertAlmostEqual(c, secs / 3600 * 3.6, delta=2e-6)
        self.assertAlmostEqual(total, got[0][0] + got[2][0], delta=0.002)
        self.assertAlmostEqual(cost, total / 3600 * 3.6, delta=2e-6)
        self.assertAlmostEqual(rate, 2 * 3.6, delta=0.01)
        # a model without a price: its waste is shown, not counted
        rc, out, err = run(base + ["--price", "NVIDIA H100=9"])
        self.assertIn("(no --price for Simulated NVIDIA A10G)", out)
        self.assertIn("USD (GPUs without a price not counted); at this rate "
                      "0.00 USD per hour", out)
        # without --price: no cost lines
        rc, out, err = run(base)
        self.assertNotIn("waste seen", out)
        for bad, why in (("A10G", "MODEL=PRICE"), ("A10G=-1", "from 0")):
            rc, out, err = run(base + ["--price", bad])
            self.assertEqual(rc, 2, err)
            self.assertIn(why, err)

    def test_watch_waste_metrics(self):
        d = tmpdir("wastew")
        root = waste_root(d)
        logs = os.path.join(d, "logs")
        os.makedirs(logs)
        env = self.script(d, "global count=2 autotick=nvmlDeviceGetUtilizationRates\n"
                          "dev 0 uuid=GPU-busy util=60 mem_used=1073741824 "
                          "power=200000 power_limit=300000 "
                          "procs=100:1073741824 putil=100:50\n"
                          "dev 1 uuid=GPU-alloc util=0 mem_used=0 procs=\n")
        p = subprocess.Popen(
            [GPUFL, "idle", "watch", "--nvml-lib", FAKE, "--root", root,
             "--listen", "127.0.0.1:0", "--log-dir", logs,
             "--duration", "4"] + FAST, env=srvtest.clean_env(env),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            port, buf = listen_port(p)
            self.assertIsNotNone(port, buf)
            time.sleep(2)
            st, _, text = get("http://127.0.0.1:%d/metrics" % port)
            self.assertEqual(st, 200)
            m = re.search(r'^gpufl_gpu_busy_seconds_total\{gpu="0",'
                          r'UUID="GPU-busy",[^}]*pid="100",'
                          r'container="abcdef123456",pod="train-0",'
                          r'namespace="ml",job="",user="alice",'
                          r'source="nvml"\} (\S+)$',
                          text, re.M)
            self.assertIsNotNone(m, text)
            # one fake tick a round, 1 s of samples at 50 % each
            busy = float(m.group(1))
            self.assertGreater(busy, 0)
            self.assertAlmostEqual(busy * 2, round(busy * 2), 6)
            self.assertRegex(text, r'gpufl_gpu_memory_used_bytes\{gpu="0",'
                             r'[^}]*pid="100",[^}]*\} 1073741824\n')
            m = re.search(r'^gpufl_gpu_wasted_seconds_total\{gpu="1",[^}]*'
                          r'container="trainer",pod="train-0",namespace="ml",'
                          r'job="",user="",reason="allocated_unused"\} (\S+)$',
                          text, re.M)
            self.assertIsNotNone(m, text)
            self.assertGreater(float(m.group(1)), 0)
            self.assertRegex(text, r'gpufl_gpu_wasted_seconds_total\{gpu="0",'
                             r'[^}]*pod="train-0",[^}]*reason="idle"\} ')
            self.assertRegex(text, r'gpufl_gpu_dirty\{gpu="1",[^}]*\} 0')
            p.wait(30)
            self.assertEqual(p.returncode, 0)
        finally:
            if p.poll() is None:
                p.kill()
        lines = []
        for name in os.listdir(logs):
            with open(os.path.join(logs, name)) as f:
                lines += [json.loads(x) for x in f if x.strip()]
        v = [x for x in lines if x.get("type") == "verdict"
             and x.get("kind") == "gpu" and x.get("dev") == 1]
        self.assertTrue(v)
        self.assertEqual(v[-1]["state"], "ALLOCATED_UNUSED")
        self.assertEqual(v[-1]["allocated_to"], "pod ml/train-0")


class Server(unittest.TestCase):
    """gpufl-server stores verdict lines and answers /fleet, /verdicts."""

    def test_fleet_endpoints(self):
        d = tmpdir("srv")
        logs = os.path.join(d, "logs")
        os.makedirs(logs)
        rc, _, err = run(["watch", "--simulate",
                          "none,matmul,phantom,stuck,allocated",
                          "--session", "name=alice,devs=1,pod=ns/alice",
                          "--session", "name=bob,devs=0",
                          "--phantom-hold", "0", "--stuck-hold", "0",
                          "--log-dir", logs,
                          "--duration", "1"] + FAST)
        self.assertEqual(rc, 0, err)
        name = os.listdir(logs)[0]
        with open(os.path.join(logs, name), "rb") as f:
            body = f.read()
        srv = srvtest.Server(os.path.join(d, "data"))
        try:
            r = srv.ingest_ok("system", body)
            self.assertGreater(r["accepted"], 4)
            fleet = srv.get("/api/v1/fleet")
            self.assertEqual(len(fleet["items"]), 1)
            self.assertIsNone(fleet["next"])
            h = fleet["items"][0]
            self.assertIs(h["simulated"], True)
            g = {x["dev"]: x for x in h["gpus"]}
            self.assertEqual(g[0]["state"], "EMPTY")
            self.assertEqual(g[1]["state"], "BUSY")
            self.assertEqual(g[2]["state"], "PHANTOM")
            # the waste verdicts are stored like the others
            self.assertEqual(g[3]["state"], "STUCK")
            self.assertEqual(g[4]["state"], "ALLOCATED_UNUSED")
            self.assertEqual(g[4]["allocated_to"],
                             "pod demo/notebook-4 (simulated)")
            self.assertIs(g[3]["dirty"], True)
            self.assertNotIn("dirty", g[4])
            self.assertIn("uuid", g[1])
            self.assertIsInstance(g[1]["signals"]["util"], (int, float))
            s = {x["session"]: x for x in h["sessions"]}
            self.assertEqual(s["alice"]["state"], "ACTIVE")
            self.assertEqual(s["alice"]["pod"], "ns/alice")
            self.assertEqual(s["alice"]["devs"], [1])
            self.assertEqual(s["bob"]["state"], "IDLE")
            # history, newest first, paged
            v = srv.get("/api/v1/verdicts?kind=gpu&dev=2&limit=1")
            self.assertEqual(len(v["items"]), 1)
            self.assertEqual(v["items"][0]["state"], "PHANTOM")
            self.assertEqual(v["items"][0]["kind"], "gpu")
            self.assertEqual(v["items"][0]["host"], h["host"])
            allv = srv.get("/api/v1/verdicts?limit=1000")["items"]
            ts = [x["ts"] for x in allv]
            self.assertEqual(ts, sorted(ts, reverse=True))
            seen, cur = [], None
            while True:
                q = "/api/v1/verdicts?limit=2" + ("&cursor=" + cur if cur else "")
                page = srv.get(q)
                seen += page["items"]
                cur = page["next"]
                if not cur:
                    break
            self.assertEqual(len(seen), len(allv))
            sv = srv.get("/api/v1/verdicts?session=bob")["items"]
            self.assertTrue(sv and all(x["session"] == "bob" for x in sv))
            # the same body again: duplicates, nothing new
            r = srv.ingest_ok("system", body)
            self.assertEqual(r["accepted"], 0)
            # a malformed verdict is refused with its reason
            bad = json.dumps({"v": 1, "sid": allv[0]["sid"], "st": "system",
                              "seq": 999, "ts": 1, "type": "verdict",
                              "kind": "gpu", "dev": 0, "state": "SLEEPY"})
            st, r = srv.post("system", bad.encode() + b"\n")
            self.assertEqual((st, r["rejected"], r["accepted"]), (200, 1, 0))
            self.assertIn("unknown state", r["errors"][0]["reason"])
            st, _, _ = srv.req("GET", "/api/v1/verdicts?kind=bogus")
            self.assertEqual(st, 400)
            st, _, _ = srv.req("GET", "/api/v1/fleet", token=None)
            self.assertEqual(st, 401)
            # the real path: gpufl-agent ships a live daemon's log
            logs2 = os.path.join(d, "logs2")
            os.makedirs(logs2)
            rc, _, err = run(["watch", "--simulate", "held", "--session",
                              "name=carol,devs=0", "--log-dir", logs2,
                              "--duration", "1"] + FAST)
            self.assertEqual(rc, 0, err)
            agent = subprocess.run(
                [os.path.join(BIN, "gpufl-agent"), "--folder=" + logs2,
                 "--type=http", "--once", "--compress=zstd",
                 "--url=http://127.0.0.1:%d/api/v1/events/" % srv.port,
                 "--cursor-file=" + os.path.join(d, "cursor")],
                env=srvtest.clean_env({"GPUFL_AGENT_TOKEN": srv.token}),
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                timeout=120)
            self.assertEqual(agent.returncode, 0, agent.stdout)
            sv = srv.get("/api/v1/verdicts?session=carol")["items"]
            self.assertTrue(sv)
            self.assertEqual(sv[0]["state"], "HELD_IDLE")
            # retention removes a pruned session's verdicts with it
            st, _, data = srv.req("POST",
                                  "/api/v1/admin/retention?max_db_bytes=1")
            self.assertEqual(st, 200, data)
            self.assertEqual(srv.get("/api/v1/fleet")["items"], [])
            self.assertEqual(srv.get("/api/v1/verdicts")["items"], [])
        finally:
            srv.stop()


if __name__ == "__main__":
    unittest.main()
