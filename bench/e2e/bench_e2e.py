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
import resource
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
EXTRA = []   # --server-args
PGSS = []    # --pgss
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

    def __init__(self, kind, work, kstore, agent_on=True, server_on=True):
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
            if PGSS:
                # statement times (--pgss): the library loads at start
                pgc = os.path.join(ROOT, "tests", "server", "pg_cluster.sh")
                subprocess.run([pgc, "stop", self.pgdir], check=True)
                with open(os.path.join(self.pgdir, "opts"), "a") as f:
                    f.write(" -c shared_preload_libraries=pg_stat_statements")
                with open(os.path.join(self.pgdir, "opts")) as f:
                    o = f.read().replace("\n", "")
                with open(os.path.join(self.pgdir, "opts"), "w") as f:
                    f.write(o + "\n")
                subprocess.run([pgc, "restart", self.pgdir], check=True)
            subprocess.run(["psql", "-q", uri + "/postgres", "-c",
                            "CREATE DATABASE gpufl"], check=True)
            if PGSS:
                subprocess.run(["psql", "-q", uri + "/gpufl", "-c",
                                "CREATE EXTENSION pg_stat_statements"],
                               check=True)
            self.db = uri + "/gpufl"
            args = ["--db", self.db, "--kafka-brokers", self.bootstrap]
        args += ["--kernel-store", kstore] + EXTRA
        self.srv_args, self.srv, self.agent = args, None, None
        self.psql = None
        if server_on:
            self.start_server()
        if agent_on:
            self.start_agent()

    def start_server(self):
        self.srv = st.Server(os.path.join(self.work, "data"), admin=TOKEN,
                             args=self.srv_args)

    def agent_cmd(self):
        work, kind = self.work, self.kind
        agent = [os.path.join(BIN, "gpufl-agent"), "--folder=" + self.logs,
                 "--cursor-file=" + os.path.join(work, "cursor"),
                 "--stats-s=0", "--linger-ms=100"]
        if kind == "kafka":
            agent += ["--type=kafka", "--brokers=" + self.bootstrap]
        else:
            agent += ["--type=http", "--url=http://127.0.0.1:%d/api/v1/events/"
                      % self.srv.port]
        return agent

    def start_agent(self):
        self.agent = subprocess.Popen(self.agent_cmd(), env=st.clean_env(
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
            # one psql kept open: a psql and a backend started every 50 ms
            # took ~2 CPU-s of a fill run's ~10 from the server and
            # PostgreSQL; the \echo ends each answer, an error's included
            if self.psql is None:
                self.psql = subprocess.Popen(
                    ["psql", "-At", "-q", self.db], stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                    text=True, bufsize=1)
                self.procs.append(self.psql)
            self.psql.stdin.write(q + ";\n\\echo .\n")
            self.psql.stdin.flush()
            out = ""
            while True:
                line = self.psql.stdout.readline()
                if not line or line.strip() == ".":
                    break
                out = line.strip()
            n, ts = (out.split("|") + ["0"])[:2] if out else ("0", "0")
            return int(n), int(ts)
        r = self.srv.sql(q)
        return int(r[0][0]), int(r[0][1])

    def pg_cpu_s(self):
        """CPU of PostgreSQL: the postmaster, the backends it reaped (its
        children's times) and those still running."""
        with open(os.path.join(self.pgdir, "data", "postmaster.pid")) as f:
            pm = int(f.readline())
        tot = 0.0
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % d) as f:
                    fl = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(d) == pm:
                tot += sum(int(x) for x in fl[11:15])
            elif int(fl[1]) == pm:
                tot += int(fl[11]) + int(fl[12])
        return tot / os.sysconf("SC_CLK_TCK")

    def stop(self):
        if self.agent:
            self.agent.terminate()
            self.agent.wait()
        if self.srv:
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
        srv0 = cpu_s(path.srv.p.pid)
        cpu0 = agent0 + srv0
        pg0 = path.pg_cpu_s() if kind == "kafka" else 0.0
        mock0 = cpu_s(path.mock.pid) if kind == "kafka" else 0.0
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
        srv = cpu_s(path.srv.p.pid) - srv0
        cpu = agent + srv
        pg = path.pg_cpu_s() - pg0 if kind == "kafka" else float("nan")
        mock = cpu_s(path.mock.pid) - mock0 if kind == "kafka" else float("nan")
        return {"path": kind, "target": rate, "produced": produced,
                "lost": lost, "stored": n, "rate": n / (t1 - t0),
                "lag_p50": pct(lags, 50), "lag_p99": pct(lags, 99),
                "lag_max": max(lags) if lags else float("nan"),
                "cpu_per_m": cpu / max(n, 1) * 1e6,
                "agent_per_m": agent / max(n, 1) * 1e6,
                "srv_per_m": srv / max(n, 1) * 1e6,
                "pg_per_m": pg / max(n, 1) * 1e6,
                "mock_per_m": mock / max(n, 1) * 1e6}
    finally:
        path.stop()
        shutil.rmtree(work, ignore_errors=True)


def metric(srv, name):
    """A /metrics sample (name with its labels, as printed), or 0."""
    st_, _, body = srv.req("GET", "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return int(float(line.split()[-1]))
    return 0


def fill(total, sessions, base, kstore):
    """The server's Kafka bridge with the producer and the agent off its
    cores: in SESSIONS rounds, one producer run writes a session of
    TOTAL / SESSIONS kernels to logs (the server idle), then `gpufl-agent
    --once` puts it into the mock broker and the round is timed from the
    agent's start to the last kernel stored.  One round, one session: the
    mock broker keeps 5 MiB a partition (~500k of these kernels) and a
    session's messages all go to one partition.  CPU of the server and of
    PostgreSQL over all rounds.  Then every session is checked: no gaps
    (each (sid, seq) up to its session_end stored), no duplicate and no
    rejected line, nothing skipped by the broker; exits 1, loudly, if
    not."""
    work = tempfile.mkdtemp(prefix="e2e-fill-", dir=base)
    os.chmod(work, 0o755)   # PostgreSQL runs as the postgres user
    path = Path("kafka", work, kstore, agent_on=False, server_on=False)
    bad = []
    try:
        per = (total + sessions - 1) // sessions
        produced = lost = size = 0
        span = ag_wall = ag_cpu = tail = 0.0
        path.start_server()
        time.sleep(1)
        srv0, mock0 = cpu_s(path.srv.p.pid), cpu_s(path.mock.pid)
        pg0 = path.pg_cpu_s()
        n = 0
        for _ in range(sessions):
            env = st.clean_env({"GPUFL_LOG_DIR": path.logs,
                                "GPUFL_ENGINES": "host",
                                "GPUFL_APP": "bench_e2e_fill"})
            # 100k/s: what the producer alone keeps up with, no drops
            out = subprocess.run([os.path.join(BIN, "bench_e2e_producer"),
                                  "100000", str(per / 100000.0)], env=env,
                                 check=True, text=True,
                                 stdout=subprocess.PIPE).stdout
            produced += int(out.strip() or 0)
            lost = client_lost(path.logs)
            t = time.time()
            ru = resource.getrusage(resource.RUSAGE_CHILDREN)
            ag = subprocess.run(path.agent_cmd() + ["--once"],
                                env=st.clean_env({"GPUFL_AGENT_TOKEN": TOKEN}),
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
            t_ag = time.time()
            ag_wall += t_ag - t
            ru2 = resource.getrusage(resource.RUSAGE_CHILDREN)
            ag_cpu += (ru2.ru_utime + ru2.ru_stime) - (ru.ru_utime + ru.ru_stime)
            if ag.returncode != 0:
                bad.append("agent --once exited %d: %s" % (
                    ag.returncode, ag.stderr[-500:]))
            t_last, last_n, last_t = None, -1, time.time()
            while time.time() - last_t < 15:   # until no progress for 15 s
                n, _ = path.newest()
                if n >= produced - lost:
                    t_last = time.time()
                    break
                if n != last_n:
                    last_n, last_t = n, time.time()
                time.sleep(0.05)
            span += (t_last or time.time()) - t
            tail += max((t_last or time.time()) - t_ag, 0.0)
            if t_last is None:
                break
        size = sum(os.path.getsize(os.path.join(path.logs, f))
                   for f in os.listdir(path.logs))
        srv = cpu_s(path.srv.p.pid) - srv0
        pg = path.pg_cpu_s() - pg0
        mock = cpu_s(path.mock.pid) - mock0
        if t_last is None:
            bad.append("stored %d of %d kernels (no progress for 15 s)" % (
                n, produced - lost))
        if lost:   # never logged, so never in the topic: not the bridge's
            print("note: the producer dropped %d kernels (its buffers full,"
                  " reported in its session_end)" % lost)
        # exactly once: nothing arrived twice, none refused, nothing the
        # broker deleted, and each session stored to its session_end
        for name, want in (("duplicate", 0), ("rejected", 0)):
            got = metric(path.srv, 'gpufl_ingest_lines_total{outcome="%s"}'
                         % name)
            if got != want:
                bad.append("%d %s line(s)" % (got, name))
        sk = metric(path.srv, "gpufl_server_kafka_skipped_messages_total")
        if sk:
            bad.append("%d message(s) deleted by the broker unread" % sk)
        commits = metric(path.srv, "gpufl_ingest_commits_total")
        polls = metric(path.srv, "gpufl_ingest_batches_total")
        sess = st.page_all(path.srv, "/api/v1/sessions")
        kern = 0
        for it in sess:
            d = path.srv.get("/api/v1/sessions/" + it["id"])
            kern += d["counts"]["kernels"]
            if d["missing"] or d["state"] != "ended" or any(
                    g["count"] for g in d["gaps"].values()):
                bad.append("session %s: state %s, missing %s, gaps %s" % (
                    it["id"], d["state"], d["missing"], d["gaps"]))
        if len(sess) != sessions:
            bad.append("%d sessions stored, %d produced" % (len(sess),
                                                            sessions))
        if kern != produced - lost or n != produced - lost:
            bad.append("kernels: %d produced (%d dropped by the producer),"
                       " %d in the sessions' counts, %d stored" % (
                           produced, lost, kern, n))
        span = max(span, 1e-3)
        print("bench_e2e --fill: %d kernels in %d sessions, a round each "
              "(%.0f MB of logs; agent --once %.1f s in all), "
              "--kernel-store=%s" % (produced, sessions, size / 1e6, ag_wall,
                                     kstore))
        print("agent start -> all stored, summed over the rounds: %.2f s, "
              "%.0f kernels/s" % (span, n / span))
        # the agent shares the cores while it runs;
        # after it exits, what is left is the server's alone
        print("of which the agent's run %.2f s (its CPU %.2f s), then the "
              "server's tail %.2f s" % (ag_wall, ag_cpu, tail))
        print("CPU-s per 1M: server %.2f, PostgreSQL %.2f, broker %.2f"
              " (server %.2f s, PostgreSQL %.2f s, broker %.2f s)" % (
                  srv / n * 1e6, pg / n * 1e6, mock / n * 1e6, srv, pg, mock))
        print("%d store transactions (%.0f kernels each), %d polled batches"
              % (commits, n / max(commits, 1), polls))
        if PGSS:
            print(subprocess.run(["psql", "-P", "pager=off", path.db, "-c",
                "SELECT calls, round(total_exec_time + total_plan_time) ms,"
                " rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 90) q"
                " FROM pg_stat_statements ORDER BY 2 DESC LIMIT 25"],
                text=True, stdout=subprocess.PIPE).stdout)
        print("load average: %s" % open("/proc/loadavg").read().strip())
    finally:
        path.stop()
    if bad:
        print("bench_e2e --fill: FAILED, not every (sid, seq) stored exactly"
              " once:\n  " + "\n  ".join(bad))
        sys.exit(1)
    print("check: every (sid, seq) produced stored exactly once (no gaps,"
          " no duplicate, none rejected or skipped)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--paths", default="http,kafka")
    ap.add_argument("--rates", default="20000,50000,100000")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--fill", type=int, default=0, metavar="N",
                    help="Kafka bridge alone: N kernels into the topic "
                    "first, then time one server storing them all")
    ap.add_argument("--sessions", type=int, default=3,
                    help="--fill: sessions (rounds) N is spread over; at "
                    "most ~500k kernels a session (the mock's 5 MiB)")
    ap.add_argument("--kernel-store", default="blocks",
                    choices=("rows", "blocks"))
    ap.add_argument("--server-args", default="",
                    help="more gpufl-server options, space-separated")
    ap.add_argument("--pgss", action="store_true",
                    help="--fill: PostgreSQL's top statements by time")
    a = ap.parse_args()
    if a.pgss:
        PGSS.append(1)
    EXTRA.extend(a.server_args.split())
    os.makedirs(st.TMP, exist_ok=True)
    base = tempfile.mkdtemp(prefix="bench-e2e-", dir=st.TMP)
    os.chmod(base, 0o755)
    print("bench_e2e: %s s per rate, kernels only, --kernel-store=%s, 2-core "
          "machine shared with the producer" % (a.seconds, a.kernel_store))
    if a.fill:
        try:
            fill(a.fill, a.sessions, base, a.kernel_store)
        finally:
            shutil.rmtree(base, ignore_errors=True)
        return
    print("%-6s %9s %9s %11s %9s %11s %9s %9s %9s %12s %9s %9s %9s %9s" % (
        "path", "target/s", "produced", "client lost", "stored",
        "stored ev/s", "lag p50", "lag p99", "lag max", "CPU-s/1M ev",
        "(agent)", "(server)", "(pg)", "(broker)"))
    try:
        for kind in a.paths.split(","):
            if kind == "kafka" and not os.path.exists(
                    os.path.join(BIN, "gpufl-kafka-mock")):
                print("kafka: gpufl-kafka-mock not built; skipped")
                continue
            for rate in (int(r) for r in a.rates.split(",")):
                r = run(kind, rate, a.seconds, base, a.kernel_store)
                print("%-6s %9d %9d %11d %9d %11.0f %8.2fs %8.2fs %8.2fs "
                      "%12.2f %9.2f %9.2f %9.2f %9.2f" % (
                    r["path"], r["target"], r["produced"], r["lost"],
                    r["stored"],
                    r["rate"], r["lag_p50"], r["lag_p99"], r["lag_max"],
                    r["cpu_per_m"], r["agent_per_m"], r["srv_per_m"],
                    r["pg_per_m"], r["mock_per_m"]))
                sys.stdout.flush()
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
