"""srvtest.py - helpers for gpufl-server's HTTP-level tests: start the real
binary on 127.0.0.1 with an ephemeral port and a temporary data folder,
talk to it with http.client, and produce real logs with the client's
programs.

Environment: GPUFL_BIN_DIR (the build's bin/), GPUFL_TEST_TMP.
"""
import copy
import fcntl
import gzip
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "client"))
import gpufl_logs as gl  # noqa: E402

BIN = os.environ.get("GPUFL_BIN_DIR", "build/bin")
TMP = os.environ.get("GPUFL_TEST_TMP", tempfile.gettempdir())
SERVER = os.path.join(BIN, "gpufl-server")
ADMIN = "test-admin-token-0123456789abcdef0123"
STREAMS = ("device", "scope", "system")


# docs/api.md "Numbers": the members that are always strings of decimal
# digits (ns times and durations, byte counts, instruction and sector
# counts); every other integer is a JSON number up to 2^53 - 1, which a
# JavaScript reader holds exactly, and a decimal string past it.
API_DEC = frozenset((
    "ts", "dur", "start_ns", "first_ts", "last_ts", "span_ns", "last_start_ns",
    "end", "api_enter", "api_dur", "total_ns", "avg_ns", "min_ns", "p50_ns",
    "p99_ns", "max_ns", "from", "to", "bucket_ns", "t", "dur_ns", "self_ns",
    "gpu_ns", "gpu_ns_total", "bytes", "inst", "thread_inst", "sectors",
    "sectors_ideal", "start", "alloc_bytes", "inuse_bytes", "total_bytes",
    "since", "deadline", "veto_until", "gpu_ts", "gpu_dur", "queue_ns",
    "launch_ns",
    # OOM reports (docs/api.md "OOM reports")
    "received", "window_ns", "settle_ns", "free_bytes", "process_bytes",
    "live_bytes", "host_bytes", "untracked_bytes", "reserved_bytes",
    "other_bytes", "released_bytes", "released_allocator_bytes",
    "held_bytes",
    # flight-recorder trigger windows (docs/api.md "Sessions")
    "evicted_bytes", "cap",
    # jobs and regressions (docs/api.md "Jobs", "Regressions")
    "step_median_ns", "compute_median_ns", "steps_ns",
    "kernel_ns", "collective_ns", "extra_ns", "kernel_extra_ns",
    "collective_wait_ns", "base_median_ns", "cur_median_ns",
    "scope_extra_ns"))
# Members copied from event lines as they came: their integers are
# numbers up to 2^53 - 1 and decimal strings past it, whatever the key.
API_COPIED = frozenset(("devices", "engines", "cmd", "lib", "interval_ms",
                        "stack", "signals"))
SAFE = 2 ** 53 - 1
DEC_RE = re.compile(r"-?(0|[1-9][0-9]*)")


def api_decode(v, key=None, copied=False, where="$"):
    """An API answer checked against docs/api.md "Numbers", its decimal
    strings turned into ints for the tests' arithmetic: raises
    AssertionError naming the member that breaks the rule."""
    def bad(why):
        raise AssertionError("%s: %s (%r)" % (where, why, v))
    dec = key in API_DEC and not copied
    if isinstance(v, dict):
        return {k: api_decode(x, k, copied or k in API_COPIED,
                              where + "." + k) for k, x in v.items()}
    if isinstance(v, list):
        if key == "buckets" and not copied:
            # timeline: [pixel, kernels started, busy ns, top name id];
            # API calls: [pixel, calls started, busy ns]
            for b in v:
                if not (isinstance(b, list) and len(b) in (3, 4)):
                    bad("a bucket is [pixel, count, busy ns(, name id)]")
            return [[api_decode(x, "dur" if i == 2 else None, False,
                                "%s[%d][%d]" % (where, j, i))
                     for i, x in enumerate(b)] for j, b in enumerate(v)]
        if key == "kernels" and not copied:
            # timeline: [kid, ts, dur, name id, corr]
            for b in v:
                if not (isinstance(b, list) and len(b) == 5):
                    bad("a kernel row is [kid, ts, dur, name id, corr]")
            return [[api_decode(x, ("ts", "dur")[i - 1] if i in (1, 2)
                                else None, False, "%s[%d][%d]" % (where, j, i))
                     for i, x in enumerate(b)] for j, b in enumerate(v)]
        return [api_decode(x, key, copied, "%s[%d]" % (where, i))
                for i, x in enumerate(v)]
    if isinstance(v, bool) or v is None or isinstance(v, float):
        return v
    if isinstance(v, int):
        if abs(v) > SAFE:
            bad("an integer past 2^53 - 1 as a bare number")
        if dec:
            bad("a number where docs/api.md says a decimal string")
        return v
    if isinstance(v, str) and DEC_RE.fullmatch(v):
        if dec or (key == "level" and not copied):
            return int(v)
        if abs(int(v)) > SAFE:
            return int(v)  # an integer too big for a number
    elif dec and not (key == "level" and v == "raw"):
        bad("not a decimal string")
    return v


def api_json(data):
    """An API answer's body (bytes): parsed, checked, decimal strings as
    ints (api_decode)."""
    return api_decode(json.loads(data))


def make_pki(d):
    """A test CA, a server certificate it signs for 127.0.0.1 and
    localhost, and another CA that signed nothing, made with openssl in
    folder d: {"ca", "cert", "key", "other_ca"} paths, or None when openssl
    is not installed."""
    import shutil
    if not shutil.which("openssl"):
        return None
    os.makedirs(d, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
          "-nodes"]

    def ossl(*args):
        subprocess.run(["openssl"] + list(args), cwd=d, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=30)
    ossl("req", "-x509", *ec, "-days", "2", "-subj", "/CN=gpufl test CA",
         "-keyout", "ca.key", "-out", "ca.crt")
    ossl("req", "-x509", *ec, "-days", "2", "-subj", "/CN=another CA",
         "-keyout", "other.key", "-out", "other.crt")
    ossl("req", *ec, "-subj", "/CN=localhost", "-keyout", "srv.key",
         "-out", "srv.csr")
    with open(os.path.join(d, "ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    ossl("x509", "-req", "-in", "srv.csr", "-CA", "ca.crt", "-CAkey",
         "ca.key", "-CAcreateserial", "-days", "2", "-extfile", "ext",
         "-out", "srv.crt")
    return {"ca": os.path.join(d, "ca.crt"), "cert": os.path.join(d, "srv.crt"),
            "key": os.path.join(d, "srv.key"),
            "other_ca": os.path.join(d, "other.crt")}


def json_log_lines(text):
    """The lines of a --log-format json stderr, each parsed; an
    AssertionError names the first that is not one log object."""
    out = []
    for line in text.splitlines():
        try:
            o = json.loads(line)
        except ValueError:
            raise AssertionError("not a JSON log line: %r" % line)
        if not (isinstance(o, dict) and {"ts", "level", "program",
                                         "component", "msg"} <= set(o)):
            raise AssertionError("not a log object: %r" % line)
        out.append(o)
    return out


def child_output(path):
    """A new (truncated) file to give a child process as stdout/stderr and
    read back while it runs by seeking to 0.  O_APPEND on the description
    the child shares: the reader's seek to 0 moves the child's write offset
    too, and without it a write landing then went to offset 0, over the
    first lines (a CI run lost the server's 'generated admin token' that
    way); with it every write goes to the end whatever the offset."""
    f = open(path, "w+")
    fcntl.fcntl(f, fcntl.F_SETFL, fcntl.fcntl(f, fcntl.F_GETFL) | os.O_APPEND)
    return f


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GPUFL_SERVER_") and not k.startswith("GPUFL_")
           or k in ("GPUFL_TEST_TMP", "GPUFL_BIN_DIR")
           or k == "GPUFL_SERVER_KB_RUN" and SERVER_ARGS
           # a ctest's switch for all its servers (server.cmake: the
           # tests that read kbnames rows run without their packer)
           or k == "GPUFL_SERVER_KBNP_OFF"}
    env.update(extra or {})
    return env


PG_URI_FILE = os.environ.get("GPUFL_TEST_PG_URI_FILE")
# Arguments added to every server's command line (a run of the HTTP suite
# with --kernel-store=rows, docs/server.md "Kernel blocks"); with them,
# GPUFL_SERVER_KB_RUN passes through too.
SERVER_ARGS = os.environ.get("GPUFL_TEST_SERVER_ARGS", "").split()


def kernel_store(args=()):
    """The --kernel-store a server started with SERVER_ARGS + args runs:
    the last one given (a later option wins), else the default, blocks
    (src/server/config.c).  The tests that check where the kernels are at
    rest compare with it, so arguments that do not reach the server fail
    them."""
    store, argv = "blocks", SERVER_ARGS + list(args)
    for i, a in enumerate(argv):
        if a.startswith("--kernel-store="):
            store = a.split("=", 1)[1]
        elif a == "--kernel-store" and i + 1 < len(argv):
            store = argv[i + 1]
    return store


def pg_base():
    """The throwaway cluster's URI (no database) when testing PostgreSQL."""
    if not PG_URI_FILE:
        return None
    with open(PG_URI_FILE) as f:
        return f.read().strip()


def psql(dbname, sql):
    return subprocess.run(["psql", "-At", "-v", "ON_ERROR_STOP=1",
                           "%s/%s" % (pg_base(), dbname), "-c", sql],
                          check=True, stdout=subprocess.PIPE, text=True).stdout


class Server:
    """A running gpufl-server; stop() sends SIGTERM and checks exit 0.
    With GPUFL_TEST_PG_URI_FILE set, its store is a fresh PostgreSQL
    database on the throwaway cluster (one per data folder)."""

    def __init__(self, data_dir, args=(), admin=ADMIN, env=None):
        self.data_dir = data_dir
        os.makedirs(data_dir, exist_ok=True)
        self.pgdb = None
        extra = []
        if pg_base():
            self.pgdb = "t_" + os.path.basename(os.path.dirname(data_dir) + "_" +
                                                os.path.basename(data_dir))
            self.pgdb = re.sub(r"[^a-z0-9_]", "_", self.pgdb.lower())[:60]
            if not os.path.exists(os.path.join(data_dir, ".pgdb")):
                psql("postgres", "CREATE DATABASE %s" % self.pgdb)
                open(os.path.join(data_dir, ".pgdb"), "w").close()
            extra = ["--db", "%s/%s" % (pg_base(), self.pgdb)]
        cmd = [SERVER, "--listen", "127.0.0.1:0", "--data-dir", data_dir,
               "--quiet"] + extra + SERVER_ARGS + list(args)
        if admin:
            cmd += ["--admin-token", admin]
        self.out_path = os.path.join(data_dir + ".out")
        self.out = child_output(self.out_path)
        self.p = subprocess.Popen(cmd, stdout=self.out, stderr=subprocess.STDOUT,
                                  env=clean_env(env))
        self.port = None
        deadline = time.time() + 30
        while time.time() < deadline:
            self.out.seek(0)
            text = self.out.read()
            m = re.search(r"listening on https?://[^:]+:(\d+)", text)
            if m:
                self.port = int(m.group(1))
                break
            if self.p.poll() is not None:
                raise AssertionError("server exited %d:\n%s" % (self.p.returncode, text))
            time.sleep(0.02)
        if not self.port:
            self.kill()
            raise AssertionError("server did not start")
        self.token = admin

    def db_args(self):
        """--db for a CLI command on the same store."""
        return ["--db", "%s/%s" % (pg_base(), self.pgdb)] if self.pgdb else []

    def sql(self, q):
        """Rows of a query on the server's database, as lists of strings."""
        if self.pgdb:
            out = psql(self.pgdb, q)
            return [l.split("|") for l in out.splitlines() if l]
        import sqlite3
        db = sqlite3.connect(os.path.join(self.data_dir, "gpufl.db"))
        try:
            return [[str(c) for c in r] for r in db.execute(q)]
        finally:
            db.close()

    def output(self):
        self.out.seek(0)
        return self.out.read()

    def req(self, method, path, body=None, token="admin", headers=None, timeout=60):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = dict(headers or {})
        if token == "admin":
            token = self.token
        if token:
            h["Authorization"] = "Bearer " + token
        if isinstance(body, str):
            body = body.encode()
        try:
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
            return r.status, dict(r.getheaders()), data
        finally:
            c.close()

    def get(self, path, token="admin"):
        """A 200 answer, checked against docs/api.md "Numbers" (api_json)."""
        st, _, data = self.req("GET", path, token=token)
        if st != 200:
            raise AssertionError("GET %s -> %d %s" % (path, st, data[:300]))
        return api_json(data)

    def post(self, stream, body, token="admin", enc=None,
             ctype="application/x-ndjson"):
        h = {"Content-Type": ctype}
        if enc == "gzip":
            body = gzip.compress(body)
            h["Content-Encoding"] = "gzip"
        elif enc == "zstd":
            body = subprocess.run(["zstd", "-q", "-c"], input=body, check=True,
                                  stdout=subprocess.PIPE).stdout
            h["Content-Encoding"] = "zstd"
        st, _, data = self.req("POST", "/api/v1/events/" + stream, body,
                               token=token, headers=h)
        return st, (json.loads(data) if data else None)

    def ingest_ok(self, stream, body, **kw):
        st, r = self.post(stream, body, **kw)
        if st != 200:
            raise AssertionError("ingest %s -> %d %s" % (stream, st, r))
        return r

    def stop(self, check=True):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(60)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
                raise AssertionError("server did not stop on SIGTERM")
        if not self.out.closed:
            self.out.close()
        if check and self.p.returncode != 0:
            raise AssertionError("server exited %d:\n%s" % (
                self.p.returncode, open(self.out_path).read()[-3000:]))

    def kill(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)
            self.p.wait()
        if not self.out.closed:
            self.out.close()


class Ref:
    """A reference server's GET answers, each asked once: tests that
    compare a server under test with a reference (a rows server) ask the
    same paths of the reference again and again while its data stay as
    they were.  Answers are kept by path and forgotten at anything that
    may change the data: a request other than GET, any other method of
    the server (ingest, stop, a restart) but a SELECT through sql.  A
    write behind its back (a connection of the test's own, as
    test_kblocks.exec_sql opens on SQLite) must call forget().  Not for
    the server under test: only its answers are checked."""

    def __init__(self, srv):
        self.srv = srv
        self.answers = {}

    def forget(self):
        self.answers = {}

    def req(self, method, path, *a, **kw):
        if method != "GET" or a or kw or path.startswith("/metrics"):
            if method != "GET":
                self.forget()
            return self.srv.req(method, path, *a, **kw)
        if path not in self.answers:
            self.answers[path] = self.srv.req("GET", path)
        return copy.deepcopy(self.answers[path])

    def get(self, path):
        if path.startswith("/metrics"):
            return self.srv.get(path)
        if ("get", path) not in self.answers:
            self.answers[("get", path)] = self.srv.get(path)
        return copy.deepcopy(self.answers[("get", path)])

    def sql(self, q):
        if not q.lstrip().upper().startswith("SELECT"):
            self.forget()
        return self.srv.sql(q)

    def __getattr__(self, name):
        v = getattr(self.srv, name)
        if not callable(v):
            return v

        def call(*a, **kw):
            self.forget()
            return v(*a, **kw)
        return call


def make_logs(log_dir, prog="train", steps=50, env=None):
    """Real logs from the client's programs; returns the validated sessions."""
    os.makedirs(log_dir, exist_ok=True)
    e = clean_env(env)
    if prog == "train":
        cmd = [os.path.join(BIN, "example_train"), "--steps", str(steps),
               "--speed", "50", "--log-dir", log_dir]
    else:
        e.update({"GPUFL_LOG_DIR": log_dir, "GPUFL_ENGINES": "host"})
        cmd = [os.path.join(BIN, "prog_workload"), "2", str(steps)]
    subprocess.run(cmd, env=e, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=300)
    return gl.validate(log_dir)


def stream_lines(sess, stream):
    """Every line of one stream of a validated session, as bytes lines."""
    return [json.dumps(e, separators=(",", ":")).encode()
            for e in sess.streams[stream].events]


def chunks(lines, n):
    for i in range(0, len(lines), n):
        yield b"\n".join(lines[i:i + n]) + b"\n"


def send_session(srv, sess, batch=500, enc=None):
    tot = {"accepted": 0, "duplicate": 0, "rejected": 0}
    for st in STREAMS:
        for body in chunks(stream_lines(sess, st), batch):
            r = srv.ingest_ok(st, body, enc=enc)
            for k in tot:
                tot[k] += r[k]
    return tot


def metric(srv, name):
    """One sample of /metrics (name with its labels), or None."""
    st, _, body = srv.req("GET", "/metrics")
    assert st == 200, st
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return int(float(line.split()[1]))
    return None



def page_all(srv, path, limit=1000):
    """Follows cursors; returns every item."""
    items, cur = [], None
    sep = "&" if "?" in path else "?"
    for _ in range(100000):
        p = path + sep + "limit=%d" % limit + ("&cursor=" + cur if cur else "")
        r = srv.get(p)
        items += r["items"]
        cur = r.get("next")
        if not cur:
            return items
    raise AssertionError("pagination did not end")
