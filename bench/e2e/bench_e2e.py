"""bench_e2e.py - sustained end-to-end rate, client to queryable in the
server, on this machine: libgpufl (bench_e2e_producer, real clock) -> logs
-> gpufl-agent -> gpufl-server, for two paths:

  http   agent --type=http  -> one server -> SQLite
  kafka  agent --type=kafka -> Kafka (librdkafka mock) -> server -> PostgreSQL

For each target rate the producer records kernels for SECONDS; every 200 ms
the driver reads the newest stored kernel timestamp straight from the
database and notes the lag (now - newest stored ts).  Printed per rate:
stored events/s over the whole run (first event to last one stored), the
events the client dropped and reported (its buffers full: not stored), lag
p50/p99/max while producing, and CPU seconds of agent + server per 1M
events (and the agent's alone).  A figure printer, not a test.

Usage: bench_e2e.py [--paths http,kafka] [--rates 20000,50000,100000]
                    [--seconds 10] [--kernel-store rows|blocks]

--kernel-store is the server's (docs/server.md "Kernel blocks"; blocks by
default, as the server's since issue 23): with blocks, the stored count and newest timestamp are read from the kernel
rows and the kblocks index together.
Environment: GPUFL_BIN_DIR (default build/bin).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "server"))
import srvtest as st  # noqa: E402

BIN = st.BIN
TOKEN = "bench-e2e-token-0123456789abcdef0123"


def cpu_s(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def client_lost(logs):
    """Events the client dropped and said so (its session_end lines'
    "lost", docs/events.md "loss"): at rates the two cores cannot carry
    the producer's buffers fill, and those never reach a log."""
    import json
    lost = 0
    for f in os.listdir(logs):
        if ".device.log" not in f:
            continue
        with open(os.path.join(logs, f), errors="replace") as fh:
            for line in fh:
                if '"type":"session_end"' in line:
                    try:
                        lost += int(json.loads(line).get("lost", 0))
                    except ValueError:
                        pass
    return lost


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))]


class Path:
    """A running agent + server (+ broker, + PostgreSQL) for one rate."""

    def __init__(self, kind, work, kstore):
        self.kind, self.work = kind, work
        self.logs = os.path.join(work, "logs")
        os.makedirs(self.logs)
        self.procs = []
        args = []
        if kind == "kafka":
            bs = os.path.join(work, "bootstrap")
            self.mock = subprocess.Popen([os.path.join(BIN, "gpufl-kafka-mock"),
                                          "serve", bs, "gpufl"])
            self.procs.append(self.mock)
            for _ in range(100):
                if os.path.exists(bs):
                    break
                time.sleep(0.1)
            with open(bs) as f:
                self.bootstrap = f.read().strip()
            self.pgdir = os.path.join(work, "pg")
            uri = subprocess.run([os.path.join(ROOT, "tests", "server",
                                               "pg_cluster.sh"), "start",
                                  self.pgdir], check=True, text=True,
                                 stdout=subprocess.PIPE).stdout.strip()
            subprocess.run(["psql", "-q", uri + "/postgres", "-c",
                            "CREATE DATABASE gpufl"], check=True)
            self.db = uri + "/gpufl"
            args = ["--db", self.db, "--kafka-brokers", self.bootstrap]
        args += ["--kernel-store", kstore]
        self.srv = st.Server(os.path.join(work, "data"), admin=TOKEN, args=args)
        agent = [os.path.join(BIN, "gpufl-agent"), "--folder=" + self.logs,
                 "--cursor-file=" + os.path.join(work, "cursor"),
                 "--stats-s=0", "--linger-ms=100"]
        if kind == "kafka":
            agent += ["--type=kafka", "--brokers=" + self.bootstrap]
        else:
            agent += ["--type=http", "--url=http://127.0.0.1:%d/api/v1/events/"
                      % self.srv.port]
        self.agent = subprocess.Popen(agent, env=st.clean_env(
            {"GPUFL_AGENT_TOKEN": TOKEN}), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        self.procs.append(self.agent)

    def newest(self):
        # kernels as rows and in blocks (t_hi: the block's newest start)
        q = ("SELECT (SELECT count(*) FROM kernels) + (SELECT coalesce(sum(n),"
             " 0) FROM kblocks), max((SELECT coalesce(max(ts), 0) FROM"
             " kernels), (SELECT coalesce(max(t_hi), 0) FROM kblocks))")
        if self.kind == "kafka":
            q = q.replace("max((", "greatest((")
        if self.kind == "kafka":
            out = subprocess.run(["psql", "-At", self.db, "-c", q], text=True,
                                 stdout=subprocess.PIPE).stdout.strip()
            n, ts = (out.split("|") + ["0"])[:2] if out else ("0", "0")
            return int(n), int(ts)
        r = self.srv.sql(q)
        return int(r[0][0]), int(r[0][1])

    def stop(self):
        self.agent.terminate()
        self.agent.wait()
        self.srv.stop(check=False)
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                p.wait()
        if self.kind == "kafka":
            subprocess.run([os.path.join(ROOT, "tests", "server",
                                         "pg_cluster.sh"), "stop", self.pgdir],
                           stdout=subprocess.DEVNULL)  # a failed stop says why


def run(kind, rate, seconds, base, kstore):
    work = tempfile.mkdtemp(prefix="e2e-%s-%d-" % (kind, rate), dir=base)
    os.chmod(work, 0o755)   # PostgreSQL runs as the postgres user
    path = Path(kind, work, kstore)
    try:
        agent0 = cpu_s(path.agent.pid)
        cpu0 = agent0 + cpu_s(path.srv.p.pid)
        env = st.clean_env({"GPUFL_LOG_DIR": path.logs, "GPUFL_ENGINES": "host",
                            "GPUFL_APP": "bench_e2e"})
        t0 = time.time()
        prod = subprocess.Popen([os.path.join(BIN, "bench_e2e_producer"),
                                 str(rate), str(seconds)], env=env,
                                stdout=subprocess.PIPE, text=True)
        lags = []
        while prod.poll() is None:
            time.sleep(0.2)
            n, ts = path.newest()
            if n:
                lags.append(time.time() - ts / 1e9)
        produced = int(prod.stdout.read().strip() or 0)
        # what the client dropped (reported in its stream) never arrives:
        # waiting for it made the rate the deadline's
        lost = client_lost(path.logs)
        deadline = time.time() + max(120, seconds * 10)
        n = 0
        while time.time() < deadline:
            n, _ = path.newest()
            if n >= produced - lost:
                break
            time.sleep(0.1)
        t1 = time.time()
        agent = cpu_s(path.agent.pid) - agent0
        cpu = agent + cpu_s(path.srv.p.pid) + agent0 - cpu0
        return {"path": kind, "target": rate, "produced": produced,
                "lost": lost, "stored": n, "rate": n / (t1 - t0),
                "lag_p50": pct(lags, 50), "lag_p99": pct(lags, 99),
                "lag_max": max(lags) if lags else float("nan"),
                "cpu_per_m": cpu / max(n, 1) * 1e6,
                "agent_per_m": agent / max(n, 1) * 1e6}
    finally:
        path.stop()
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--paths", default="http,kafka")
    ap.add_argument("--rates", default="20000,50000,100000")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--kernel-store", default="blocks",
                    choices=("rows", "blocks"))
    a = ap.parse_args()
    os.makedirs(st.TMP, exist_ok=True)
    base = tempfile.mkdtemp(prefix="bench-e2e-", dir=st.TMP)
    os.chmod(base, 0o755)
    print("bench_e2e: %s s per rate, kernels only, --kernel-store=%s, 2-core "
          "machine shared with the producer" % (a.seconds, a.kernel_store))
    print("%-6s %9s %9s %11s %9s %11s %9s %9s %9s %12s %9s" % (
        "path", "target/s", "produced", "client lost", "stored",
        "stored ev/s", "lag p50", "lag p99", "lag max", "CPU-s/1M ev",
        "(agent)"))
    try:
        for kind in a.paths.split(","):
            if kind == "kafka" and not os.path.exists(
                    os.path.join(BIN, "gpufl-kafka-mock")):
                print("kafka: gpufl-kafka-mock not built; skipped")
                continue
            for rate in (int(r) for r in a.rates.split(",")):
                r = run(kind, rate, a.seconds, base, a.kernel_store)
                print("%-6s %9d %9d %11d %9d %11.0f %8.2fs %8.2fs %8.2fs "
                      "%12.2f %9.2f" % (
                    r["path"], r["target"], r["produced"], r["lost"],
                    r["stored"],
                    r["rate"], r["lag_p50"], r["lag_p99"], r["lag_max"],
                    r["cpu_per_m"], r["agent_per_m"]))
                sys.stdout.flush()
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
