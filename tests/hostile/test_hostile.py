"""test_hostile.py - the attacks docs/security.md lists, replayed against
the real gpufl-server on loopback, each asserting what the server promises
there.  Every test is bounded in time: a server that does not
hold fails by a timeout of a few seconds, never by hanging the suite.

Run one class per ctest test: python3 test_hostile.py Connections
Environment: GPUFL_BIN_DIR (the build's bin/), GPUFL_TEST_TMP.
"""
import json
import os
import re
import resource
import select
import shutil
import socket
import sqlite3
import ssl
import stat
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
import srvtest as T  # noqa: E402

# a proper admin token (32+ characters, not the example's placeholder)
ADMIN = "hostile-" + "0123456789abcdef" * 3
SID = "11111111-2222-4333-8444-555555555555"
HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def connect(port, src="127.0.0.1", timeout=5):
    """A TCP connection from the loopback address src (all of 127/8 is
    local on Linux: another address without another machine)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s


def read_all(s, limit=1 << 20, timeout=5):
    """Everything the server sends until it closes (or timeout: then what
    came so far and False)."""
    data = b""
    end = time.time() + timeout
    p = select.poll()
    p.register(s, select.POLLIN)
    while len(data) < limit:
        left = end - time.time()
        if left <= 0 or not p.poll(left * 1000):
            return data, False
        try:
            b = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            return data, True
        if not b:
            return data, True
        data += b
    return data, False


def read_head(s, timeout=15):
    """The answer's status line and headers: read until the blank line (a
    kept-alive connection is not waited out), or timeout."""
    data = b""
    end = time.time() + timeout
    p = select.poll()
    p.register(s, select.POLLIN)
    while b"\r\n\r\n" not in data and len(data) < 65536:
        left = end - time.time()
        if left <= 0 or not p.poll(left * 1000):
            break
        try:
            b = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not b:
            break
        data += b
    return data


def status_of(data):
    m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
    return int(m.group(1)) if m else None


def raw(port, request, timeout=5, src="127.0.0.1"):
    """Sends request bytes, returns (every byte answered, closed?)."""
    s = connect(port, src, timeout)
    try:
        s.sendall(request)
        return read_all(s, timeout=timeout)
    finally:
        s.close()


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="hostile_", dir=T.TMP)
        self.servers = []

    def tearDown(self):
        # a clean stop after every attack: exit 0 (under ASan also no leak)
        try:
            for s in self.servers:
                s.stop()
        finally:
            for s in self.servers:
                s.kill()
            shutil.rmtree(self.dir, ignore_errors=True)

    def server(self, name="data", args=(), admin=ADMIN, **kw):
        s = T.Server(os.path.join(self.dir, name), args=args, admin=admin, **kw)
        self.servers.append(s)
        return s

    def metric(self, srv, name):
        st, _, data = srv.req("GET", "/metrics")
        self.assertEqual(st, 200)
        m = re.search(rb"^" + re.escape(name.encode()) + rb" (\d+)$", data, re.M)
        self.assertIsNotNone(m, name)
        return int(m.group(1))


class Connections(Base):
    """One address cannot take every connection; a slow head is cut."""

    def test_idle_flood_leaves_room_for_others(self):
        """1100 connections from one address, each sending one header byte
        every few seconds (the reported attack): another address gets
        /healthz at once, and the flood's excess gets 429, not silence."""
        if raise_nofile(4096) < 2400:
            self.skipTest("cannot open enough files")
        srv = self.server()
        flood, refused = [], 0
        try:
            for i in range(1100):
                s = connect(srv.port)
                s.send(b"G")
                flood.append(s)
            t0 = time.time()
            data, _ = raw(srv.port, HEALTHZ,
                          timeout=3, src="127.0.0.2")
            took = time.time() - t0
            self.assertEqual(status_of(data), 200, data[:200])
            self.assertLess(took, 1.0)
            # the address's own requests past its cap: 429 with Retry-After
            for s in flood[-20:]:
                got, closed = read_all(s, timeout=2)
                if status_of(got) == 429:
                    refused += 1
                    self.assertIn(b"Retry-After:", got)
                    self.assertTrue(closed)
            self.assertEqual(refused, 20)
            # a second trickle round changes nothing
            for s in flood[:128]:
                try:
                    s.send(b"E")
                except OSError:
                    pass
            data, _ = raw(srv.port, HEALTHZ,
                          timeout=3, src="127.0.0.3")
            self.assertEqual(status_of(data), 200)
        finally:
            for s in flood:
                s.close()
        # the address's places come back as its connections close
        for _ in range(50):
            if srv.req("GET", "/healthz", token=None)[0] == 200:
                break
            time.sleep(0.1)
        self.assertGreaterEqual(
            self.metric(srv, 'gpufl_server_connections_refused_total{why="per_address"}'),
            1100 - 128)

    def test_slow_head_is_cut(self):
        """A byte of request head every 0.4 s: idle timeouts never fire,
        the head deadline does."""
        srv = self.server(args=["--header-timeout", "2", "--timeout", "30"])
        s = connect(srv.port)
        t0 = time.time()
        head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
        closed_at = None
        for b in head:
            try:
                s.send(bytes([b]))
            except OSError:
                closed_at = time.time() - t0
                break
            r, _, _ = select.select([s], [], [], 0.4)
            if r:
                try:
                    got = s.recv(100)
                except ConnectionResetError:
                    got = b""
                if not got:
                    closed_at = time.time() - t0
                    break
        s.close()
        self.assertIsNotNone(closed_at, "the slow head was never cut")
        self.assertGreater(closed_at, 1.5)
        self.assertLess(closed_at, 3.5)
        self.assertGreaterEqual(self.metric(srv, "gpufl_server_connections_timed_out_total"), 1)

    def test_kept_alive_then_slow(self):
        """After a request, a kept-alive connection gets --timeout for the
        next request line and --header-timeout for its headers."""
        srv = self.server(args=["--header-timeout", "1", "--timeout", "3"])
        s = connect(srv.port)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        got = s.recv(4096)
        self.assertEqual(status_of(got), 200)
        t0 = time.time()
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        closed = None
        for _ in range(20):
            try:
                s.send(b"X")
            except OSError:
                closed = time.time() - t0
                break
            r, _, _ = select.select([s], [], [], 0.3)
            if r:
                try:
                    b = s.recv(100)
                except ConnectionResetError:
                    b = b""
                if not b:
                    closed = time.time() - t0
                    break
        s.close()
        self.assertIsNotNone(closed)
        self.assertLess(closed, 2.5)

    def test_caps_answer(self):
        """Over --max-conns-per-ip: 429; over --max-conns: 503; a closed
        connection frees its place (once the server has closed it too)."""
        srv = self.server(args=["--max-conns-per-ip", "4"])
        held = [connect(srv.port) for _ in range(4)]
        time.sleep(0.3)
        data, closed = raw(srv.port, HEALTHZ)
        self.assertEqual(status_of(data), 429, data)
        self.assertTrue(closed)
        self.assertIn(b"too many connections from this address", data)
        held.pop().close()
        for _ in range(30):
            time.sleep(0.1)
            data, _ = raw(srv.port, HEALTHZ)
            if status_of(data) == 200:
                break
        self.assertEqual(status_of(data), 200, data)
        for s in held:
            s.close()
        # the total: 16 idle connections from 16 addresses fill it
        srv = self.server("full", args=["--max-conns", "16"])
        held = [connect(srv.port, src="127.0.1.%d" % (i + 1)) for i in range(16)]
        time.sleep(0.3)
        data, closed = raw(srv.port, HEALTHZ, src="127.0.2.1")
        self.assertEqual(status_of(data), 503, data)
        self.assertIn(b"Retry-After: 5", data)
        self.assertTrue(closed)
        for s in held:  # none of the 16 was turned away
            s.setblocking(False)
            with self.assertRaises(BlockingIOError):
                s.recv(1)
        held.pop().close()
        for _ in range(30):
            time.sleep(0.1)
            data, _ = raw(srv.port, HEALTHZ, src="127.0.2.2")
            if status_of(data) == 200:
                break
        self.assertEqual(status_of(data), 200, data)
        for s in held:
            s.close()


class Framing(Base):
    """Requests whose length two parsers could read differently: 400 and
    the connection closed, nothing after them executed."""

    SMUGGLED = b"GET /api/v1/nope-smuggled HTTP/1.1\r\nHost: x\r\n\r\n"

    def check(self, srv, head, body=b""):
        data, closed = raw(srv.port, head + body + self.SMUGGLED, timeout=3)
        self.assertEqual(status_of(data), 400, (head, data[:300]))
        self.assertEqual(data.count(b"HTTP/1.1 "), 1, data)
        self.assertTrue(closed, head)

    def test_ambiguous_lengths(self):
        srv = self.server()
        auth = ("Authorization: Bearer %s\r\n" % ADMIN).encode()
        post = b"POST /api/v1/events/device HTTP/1.1\r\nHost: x\r\n" + auth + \
            b"Content-Type: application/x-ndjson\r\n"
        self.check(srv, post + b"Content-Length: 5\r\nContent-Length: 40\r\n\r\n", b"{}\n\n\n")
        self.check(srv, post + b"Content-Length: 3\r\nContent-Length: 3\r\n\r\n", b"{}\n")
        self.check(srv, post + b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
                   b"3\r\n{}\n\r\n0\r\n\r\n")
        self.check(srv, post + b"Content-Length : 3\r\n\r\n", b"{}\n")
        self.check(srv, post + b"Content-Length\t: 3\r\n\r\n", b"{}\n")
        self.check(srv, post + b"Transfer-Encoding: gzip\r\n\r\n", b"{}\n")
        self.check(srv, post + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
                   b"0\r\n\r\n")
        # unauthenticated and on any path, the same
        self.check(srv, b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                   b"Content-Length: 9\r\n\r\n", b"{}")
        # a well-framed pipeline still works
        data, _ = raw(srv.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" * 2 +
                      b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        self.assertEqual(data.count(b"HTTP/1.1 200"), 3, data)

    def test_counts(self):
        """~2000 query arguments: 400 at once (was: no answer for ~17 s);
        150 header fields: 431."""
        srv = self.server()
        q = "&".join("a%d=%d" % (i, i) for i in range(2000))
        t0 = time.time()
        data, closed = raw(srv.port, ("GET /api/v1/sessions?%s HTTP/1.1\r\nHost: x\r\n"
                                      "Authorization: Bearer %s\r\n\r\n" % (q, ADMIN)).encode(),
                           timeout=3)
        self.assertEqual(status_of(data), 400, data[:200])
        self.assertIn(b"query arguments", data)
        self.assertLess(time.time() - t0, 1.5)
        h = "".join("X-H%d: %d\r\n" % (i, i) for i in range(150))
        data, _ = raw(srv.port, ("GET /healthz HTTP/1.1\r\nHost: x\r\n%s\r\n" % h).encode(),
                      timeout=3)
        self.assertEqual(status_of(data), 431, data[:200])
        # the API's own parameters still pass
        st, _, _ = srv.req("GET", "/api/v1/sessions?limit=5&desc=true&host=a&app=b")
        self.assertEqual(st, 200)


class BeforeBody(Base):
    """Route, method and token are checked before a body byte is read."""

    def head_only(self, srv, method, path, token, length=16 << 20):
        """Sends only the head of a large upload; the answer must come
        without the body."""
        h = "%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\n" \
            "Content-Length: %d\r\n" % (method, path, length)
        if token:
            h += "Authorization: Bearer %s\r\n" % token
        t0 = time.time()
        data, closed = raw(srv.port, (h + "\r\n").encode(), timeout=3)
        return status_of(data), time.time() - t0, closed, data

    def test_refusals_before_the_body(self):
        srv = self.server(args=["--max-body", "32M"])
        st, _, data = srv.req("POST", "/api/v1/keys", json.dumps({"name": "r", "role": "read"}))
        read = json.loads(data)["key"]
        cases = [
            ("POST", "/api/v1/events/device", None, 401),
            ("POST", "/api/v1/events/device", "gfk_" + "0" * 64, 401),
            ("POST", "/api/v1/memprof", None, 401),
            ("POST", "/api/v1/memprof/oom", None, 401),
            ("POST", "/api/v1/keys", None, 401),
            ("POST", "/api/v1/events/device", read, 403),
            ("POST", "/api/v1/memprof/oom", read, 403),
            ("POST", "/api/v1/keys", read, 403),
            ("POST", "/api/v1/events/nope", ADMIN, 404),
            ("POST", "/api/v1/nope", ADMIN, 404),
            ("POST", "/api/v1/sessions", ADMIN, 405),
            ("PUT", "/api/v1/events/device", ADMIN, 405),
            ("POST", "/healthz", None, 200),
            ("POST", "/index.html", None, 404),
        ]
        for method, path, tok, want in cases:
            st, took, closed, data = self.head_only(srv, method, path, tok)
            self.assertEqual(st, want, (method, path, data[:200]))
            self.assertLess(took, 1.0, (method, path))
            self.assertTrue(closed, (method, path))
        # an allowed upload waits for its body (no answer without it)
        st, _, _, _ = self.head_only(srv, "POST", "/api/v1/events/device", ADMIN, 1000)
        self.assertIsNone(st)
        st, _, _, _ = self.head_only(srv, "POST", "/api/v1/memprof/oom", ADMIN, 1000)
        self.assertIsNone(st)
        # past --max-body: refused from the head, whoever sends it
        for path in ("/api/v1/memprof", "/api/v1/memprof/oom"):
            st, took, closed, data = self.head_only(srv, "POST", path, ADMIN, 33 << 20)
            self.assertEqual(st, 413, (path, data[:200]))
            self.assertLess(took, 1.0, path)

    def test_unauthenticated_uploads_hold_no_memory(self):
        """40 unauthenticated 8 MiB uploads at once (reported: ~640 MiB
        held): each refused before its body, the server's memory flat."""
        srv = self.server()
        before = rss_kib(srv.p.pid)
        socks = []
        body = b"x" * (8 << 20)
        for i in range(40):
            s = connect(srv.port, timeout=5)
            s.sendall(b"POST /api/v1/events/device HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Type: application/x-ndjson\r\n"
                      b"Content-Length: %d\r\n\r\n" % (len(body) + 1))
            try:
                s.sendall(body)  # all but the last byte
            except OSError:
                pass
            socks.append(s)
        grown = rss_kib(srv.p.pid) - before
        try:
            self.assertLess(grown, 64 << 10, "server grew %d KiB" % grown)
            answers = [status_of(read_all(s, timeout=2)[0]) for s in socks]
            self.assertEqual(answers, [401] * 40)
        finally:
            for s in socks:
                s.close()

    def test_buffered_budget(self):
        """Authenticated bodies held at once stop at --max-buffered: the
        next one is answered 503 with Retry-After before its body."""
        srv = self.server(args=["--max-body", "1M", "--max-buffered", "2M"])
        held = []
        for i in range(2):
            s = connect(srv.port)
            s.sendall(("POST /api/v1/events/device HTTP/1.1\r\nHost: x\r\n"
                       "Authorization: Bearer %s\r\nContent-Type: application/x-ndjson\r\n"
                       "Content-Length: %d\r\n\r\n" % (ADMIN, 1 << 20)).encode())
            s.sendall(b" " * 1000)
            held.append(s)
        for _ in range(50):
            if self.metric(srv, "gpufl_server_body_buffered_bytes") == 2 << 20:
                break
            time.sleep(0.05)
        self.assertEqual(self.metric(srv, "gpufl_server_body_buffered_bytes"), 2 << 20)
        st, took, closed, data = self.head_only(srv, "POST", "/api/v1/events/device",
                                                ADMIN, 1 << 20)
        self.assertEqual(st, 503, data)
        self.assertIn(b"Retry-After: ", data)
        self.assertLess(took, 1.0)
        # the held ones finish normally and give their bytes back
        for s in held:
            s.sendall(b" " * ((1 << 20) - 1001) + b"\n")
            # a loaded machine's sanitizer build may take over a second
            self.assertEqual(status_of(read_head(s)), 200)
            s.close()
        for _ in range(50):
            if self.metric(srv, "gpufl_server_body_buffered_bytes") == 0:
                break
            time.sleep(0.05)
        self.assertEqual(self.metric(srv, "gpufl_server_body_buffered_bytes"), 0)
        self.assertEqual(self.metric(srv, "gpufl_server_body_refused_total"), 1)
        # a chunked body that grows past the budget: drained, then 503
        for i in range(2):
            s = connect(srv.port)
            s.sendall(("POST /api/v1/events/device HTTP/1.1\r\nHost: x\r\n"
                       "Authorization: Bearer %s\r\nContent-Type: application/x-ndjson\r\n"
                       "Content-Length: %d\r\n\r\n" % (ADMIN, 1 << 20)).encode())
            held.append(s)
        for _ in range(50):  # both reserved before the chunked one starts
            if self.metric(srv, "gpufl_server_body_buffered_bytes") == 2 << 20:
                break
            time.sleep(0.05)
        c = connect(srv.port)
        c.sendall(("POST /api/v1/events/device HTTP/1.1\r\nHost: x\r\n"
                   "Authorization: Bearer %s\r\nContent-Type: application/x-ndjson\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n" % ADMIN).encode())
        for _ in range(4):
            c.sendall(b"20000\r\n" + b" " * 0x20000 + b"\r\n")
        c.sendall(b"0\r\n\r\n")
        data, _ = read_all(c, timeout=3)
        self.assertEqual(status_of(data), 503, data[:200])
        c.close()
        for s in held:
            s.close()
        self.assertEqual(srv.req("GET", "/healthz", token=None)[0], 200)


class Static(Base):
    """--ui-dir serves its own regular files and nothing else."""

    def test_confined(self):
        ui = os.path.join(self.dir, "ui")
        outside = os.path.join(self.dir, "outside")
        os.makedirs(os.path.join(ui, "assets"))
        os.makedirs(outside)
        with open(os.path.join(ui, "index.html"), "w") as f:
            f.write("<html>gpufl</html>")
        with open(os.path.join(ui, "assets", "app.js"), "w") as f:
            f.write("console.log(1)")
        with open(os.path.join(outside, "secret.txt"), "w") as f:
            f.write("TOP-SECRET")
        os.symlink(os.path.join(outside, "secret.txt"), os.path.join(ui, "secret.txt"))
        os.symlink(outside, os.path.join(ui, "out"))
        os.symlink("/dev/zero", os.path.join(ui, "zero.js"))
        os.symlink("../../outside/secret.txt", os.path.join(ui, "assets", "rel.txt"))
        os.mkfifo(os.path.join(ui, "fifo.js"))
        srv = self.server(args=["--ui-dir", ui])
        for path in ("/secret.txt", "/out/secret.txt", "/assets/rel.txt", "/zero.js",
                     "/fifo.js", "/assets/../../outside/secret.txt"):
            t0 = time.time()
            st, _, data = srv.req("GET", path, token=None, timeout=3)
            self.assertEqual(st, 404, path)
            self.assertNotIn(b"TOP-SECRET", data)
            self.assertLess(time.time() - t0, 1.0, path)
        st, _, data = srv.req("GET", "/", token=None)
        self.assertEqual((st, data), (200, b"<html>gpufl</html>"))
        st, _, data = srv.req("GET", "/assets/app.js", token=None)
        self.assertEqual((st, data), (200, b"console.log(1)"))
        st, _, data = srv.req("GET", "/sessions/abc", token=None)
        self.assertEqual((st, data), (200, b"<html>gpufl</html>"))
        # the workers are all free: nothing hangs on the FIFO
        for _ in range(8):
            self.assertEqual(srv.req("GET", "/", token=None, timeout=3)[0], 200)

    def start_fails(self, args, cwd=None):
        p = subprocess.run([T.SERVER, "--listen", "127.0.0.1:0", "--admin-token", ADMIN]
                           + args, cwd=cwd, env=T.clean_env(), timeout=5,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("--ui-dir", p.stderr)
        self.assertIn("would be served to anyone", p.stderr)
        return p.stderr

    def test_refuses_a_folder_holding_the_data(self):
        """--ui-dir . with the default ./gpufl-data (reported: served
        gpufl.db and its WAL) and a database file below the folder."""
        work = os.path.join(self.dir, "work")
        os.makedirs(work)
        err = self.start_fails(["--ui-dir", "."], cwd=work)
        self.assertIn("data folder", err)
        err = self.start_fails(["--ui-dir", self.dir, "--data-dir",
                                os.path.join(self.dir, "d")])
        self.assertIn("data folder", err)
        os.makedirs(os.path.join(self.dir, "web", "x"))
        err = self.start_fails(["--ui-dir", os.path.join(self.dir, "web"),
                                "--data-dir", os.path.join(self.dir, "d2"),
                                "--db", "sqlite:" + os.path.join(self.dir, "web", "x", "my.db")])
        self.assertIn("database file", err)
        # beside each other: fine
        srv = self.server(args=["--ui-dir", os.path.join(self.dir, "web")])
        self.assertEqual(srv.req("GET", "/healthz", token=None)[0], 200)


class Tokens(Base):
    """Weak admin tokens are refused at start, with how to make one."""

    def run_server(self, args, env=None):
        try:
            p = subprocess.run([T.SERVER, "--listen", "127.0.0.1:0", "--data-dir",
                                os.path.join(self.dir, "d")] + args,
                               env=T.clean_env(env), timeout=5, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except subprocess.TimeoutExpired:
            self.fail("the server started with %s %s" % (args, env))
        return p

    def test_weak_admin_tokens(self):
        root = os.path.join(HERE, "..", "..", "deploy")
        placeholders = set()
        for ex in ("systemd/server.env.example", "compose.env.example"):
            with open(os.path.join(root, ex)) as f:
                for line in f:
                    m = re.match(r"GPUFL_(?:SERVER_)?ADMIN_TOKEN=(\S+)", line)
                    if m:
                        placeholders.add(m.group(1))
        self.assertTrue(placeholders)
        cfg = os.path.join(self.dir, "server.conf")
        with open(cfg, "w") as f:
            f.write("admin-token = short-from-file\n")
        for args, env in [(["--admin-token", "x"], None),
                          (["--admin-token", "a" * 31], None),
                          ([], {"GPUFL_SERVER_ADMIN_TOKEN": "from-env"}),
                          (["--config", cfg], None)] + \
                [(["--admin-token", p], None) for p in placeholders]:
            p = self.run_server(args, env)
            self.assertEqual(p.returncode, 2, (args, env, p.stderr))
            self.assertIn("openssl rand -hex 32", p.stderr)
            self.assertIn("not starting", p.stderr)
        # 32 characters is enough
        srv = self.server(admin="b" * 32)
        self.assertEqual(srv.req("GET", "/api/v1/hosts", token="b" * 32)[0], 200)


def openssl(*args, cwd=None):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)


class Tls(Base):
    """gpufl-server --tls-cert/--tls-key: HTTPS verified by a client that
    trusts the issuing CA, clear refusals of bad pairs."""

    @classmethod
    def setUpClass(cls):
        if not shutil.which("openssl"):
            raise unittest.SkipTest("openssl is not installed")
        d = cls.pki = tempfile.mkdtemp(prefix="hostile_pki_", dir=T.TMP)
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        # a CA, and a server certificate it signs for 127.0.0.1/localhost
        openssl("req", "-x509", *ec, "-days", "2", "-subj", "/CN=gpufl test CA",
                "-keyout", "ca.key", "-out", "ca.crt", cwd=d)
        openssl("req", *ec, "-subj", "/CN=localhost", "-keyout", "srv.key",
                "-out", "srv.csr", cwd=d)
        with open(os.path.join(d, "ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        openssl("x509", "-req", "-in", "srv.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "2", "-extfile", "ext", "-out", "srv.crt",
                cwd=d)
        openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                "-out", "other.key", cwd=d)
        cls.cert = os.path.join(d, "srv.crt")
        cls.key = os.path.join(d, "srv.key")
        cls.ca = os.path.join(d, "ca.crt")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.pki, ignore_errors=True)

    def https(self, srv, path, token=None):
        ctx = ssl.create_default_context(cafile=self.ca)
        req = urllib.request.Request("https://127.0.0.1:%d%s" % (srv.port, path))
        if token:
            req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=5) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def test_https(self):
        srv = self.server(args=["--tls-cert", self.cert, "--tls-key", self.key])
        self.assertIn("listening on https://", srv.output())
        self.assertEqual(self.https(srv, "/healthz"), (200, b'{"ok":1}'))
        self.assertEqual(self.https(srv, "/api/v1/hosts", ADMIN)[0], 200)
        self.assertEqual(self.https(srv, "/api/v1/hosts")[0], 401)
        # curl, verifying with the CA
        if shutil.which("curl"):
            p = subprocess.run(["curl", "-sS", "--cacert", self.ca, "-H",
                                "Authorization: Bearer " + ADMIN,
                                "https://127.0.0.1:%d/api/v1/sessions" % srv.port],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(b'"items"', p.stdout)
            # and without the CA: the certificate is not trusted
            p = subprocess.run(["curl", "-sS", "https://127.0.0.1:%d/healthz" % srv.port],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
            self.assertNotEqual(p.returncode, 0)
        # plain HTTP to the TLS port gets no HTTP answer
        data, _ = raw(srv.port, HEALTHZ, timeout=2)
        self.assertIsNone(status_of(data))
        srv.stop()

    def test_caps_and_deadlines_under_tls(self):
        srv = self.server(args=["--tls-cert", self.cert, "--tls-key", self.key,
                                "--header-timeout", "2", "--max-conns-per-ip", "2"])
        held = [connect(srv.port), connect(srv.port)]
        time.sleep(0.2)
        # over the cap: closed, and no plaintext answer into a handshake
        data, closed = raw(srv.port, b"\x16\x03\x01", timeout=2)
        self.assertEqual((data, closed), (b"", True))
        # the two silent ones are cut by the head deadline
        t0 = time.time()
        for s in held:
            got, closed = read_all(s, timeout=4)
            s.close()
            self.assertTrue(closed)
        self.assertLess(time.time() - t0, 3.5)
        # their places come back once the server has closed them
        for _ in range(40):
            try:
                self.assertEqual(self.https(srv, "/healthz")[0], 200)
                break
            except (urllib.error.URLError, ssl.SSLError, OSError):
                time.sleep(0.05)
        else:
            self.fail("no place came back")

    def refused(self, args, want):
        p = subprocess.run([T.SERVER, "--listen", "127.0.0.1:0", "--data-dir",
                            os.path.join(self.dir, "d"), "--admin-token", ADMIN] + args,
                           env=T.clean_env(), timeout=5, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(want, p.stderr)

    def test_refusals(self):
        self.refused(["--tls-cert", self.cert], "go together")
        self.refused(["--tls-key", self.key], "go together")
        self.refused(["--tls-cert", self.cert, "--tls-key",
                      os.path.join(self.pki, "other.key")], "is not the key of")
        self.refused(["--tls-cert", self.key, "--tls-key", self.key],
                     "no PEM certificate")
        self.refused(["--tls-cert", self.cert, "--tls-key", self.cert],
                     "no PEM private key")
        self.refused(["--tls-cert", os.path.join(self.pki, "missing.crt"),
                      "--tls-key", self.key], "No such file")
        self.refused(["--tls-cert", "/dev/zero", "--tls-key", self.key],
                     "not a regular file")

    def test_plain_http_on_the_network_warns(self):
        """Listening on a non-loopback address without TLS is said at start."""
        def start(args):
            out = os.path.join(self.dir, "out%d" % len(self.servers))
            with open(out, "w") as o:
                p = subprocess.Popen([T.SERVER, "--listen", "0.0.0.0:0", "--data-dir",
                                      os.path.join(self.dir, "w"), "--admin-token",
                                      ADMIN] + args, env=T.clean_env(), stdout=o,
                                     stderr=subprocess.STDOUT)
            try:
                # 30 s as srvtest gives a server to start (this was 100
                # polls, ~5 s: a sanitizer build on a loaded machine)
                deadline = time.time() + 30
                while time.time() < deadline:
                    with open(out) as f:
                        text = f.read()
                    if "listening on" in text:
                        time.sleep(0.1)
                        with open(out) as f:
                            return f.read()
                    time.sleep(0.05)
                self.fail("no start")
            finally:
                p.kill()
                p.wait()
        self.assertIn("without TLS", start([]))
        self.assertNotIn("without TLS", start(["--tls-cert", self.cert, "--tls-key", self.key]))


def line(st, seq, typ, sid=SID, **kw):
    d = {"v": 1, "sid": sid, "st": st, "seq": seq, "ts": 1000 + seq, "type": typ}
    d.update(kw)
    return json.dumps(d).encode()


def sid_n(i):
    return "%08x-2222-4333-8444-555555555555" % i


class Keys(Base):
    """Every key is listed; a key bound to hosts writes only for them; no
    key writes a stream past its end."""

    def test_listing_pages_past_1000(self):
        """1200 decoys in front (reported: the list stopped at 1000 with
        "next": null, hiding the rest)."""
        srv = self.server()
        db = sqlite3.connect(os.path.join(srv.data_dir, "gpufl.db"), timeout=10)
        with db:
            db.executemany("INSERT INTO keys(name, role, prefix, hash, created)"
                           " VALUES(?, 'read', 'gfk_decoy', ?, 1)",
                           [("decoy%d" % i, "%064x" % i) for i in range(1200)])
        db.close()
        st, _, data = srv.req("POST", "/api/v1/keys",
                              json.dumps({"name": "hidden", "role": "admin"}))
        self.assertEqual(st, 201)
        items, cur, pages = [], None, 0
        while True:
            r = srv.get("/api/v1/keys?limit=1000" + ("&cursor=" + cur if cur else ""))
            pages += 1
            self.assertLessEqual(len(r["items"]), 1000)
            items += r["items"]
            cur = r["next"]
            if not cur:
                break
        self.assertEqual((len(items), pages), (1201, 2))
        self.assertEqual(items[-1]["name"], "hidden")
        self.assertEqual(len({k["id"] for k in items}), 1201)
        # the default page is smaller and says where to go on
        r = srv.get("/api/v1/keys")
        self.assertEqual(len(r["items"]), 100)
        self.assertTrue(r["next"])
        for bad in ("limit=0", "limit=1001", "cursor=zz"):
            self.assertEqual(srv.req("GET", "/api/v1/keys?" + bad)[0], 400, bad)
        # the command line lists them all too
        p = subprocess.run([T.SERVER, "keys", "list", "--data-dir", srv.data_dir],
                           env=T.clean_env(), timeout=30, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(p.stdout.splitlines()), 1 + 1201)
        self.assertIn("hidden", p.stdout.splitlines()[-1])

    def key(self, srv, role, hosts=None, want=201):
        body = {"name": "k", "role": role}
        if hosts is not None:
            body["hosts"] = hosts
        st, _, data = srv.req("POST", "/api/v1/keys", json.dumps(body))
        self.assertEqual(st, want, data)
        return json.loads(data)

    def test_host_bound_key(self):
        srv = self.server()
        k7 = self.key(srv, "ingest", ["node-7"])
        self.assertEqual(k7["hosts"], ["node-7"])
        tok = k7["key"]
        for bad in ([], ["a,b"], ["has space"], [""], "node-7", [1]):
            self.key(srv, "ingest", bad, want=400)
        self.key(srv, "read", ["node-7"], want=400)
        # its own host: stored
        a, b, c, u = sid_n(0xa), sid_n(0xb), sid_n(0xc), sid_n(0xd)
        body = b"\n".join([line("device", 0, "session", sid=a, app="x", host="node-7")] +
                          [line("device", i, "kernel", sid=a, dur=5, name=1)
                           for i in range(1, 4)]) + b"\n"
        st, r = srv.post("device", body, token=tok)
        self.assertEqual((st, r["accepted"], r["rejected"]), (200, 4, 0), r)
        # another host's new session: every line refused, nothing stored
        body = b"\n".join([line("device", 0, "session", sid=b, app="x", host="node-8")] +
                          [line("device", i, "kernel", sid=b, dur=5, name=1)
                           for i in range(1, 4)]) + b"\n"
        st, r = srv.post("device", body, token=tok)
        self.assertEqual((st, r["accepted"], r["rejected"]), (200, 0, 4), r)
        self.assertIn("node-8", r["errors"][0]["reason"])
        self.assertEqual(srv.req("GET", "/api/v1/sessions/" + b)[0], 404)
        # another host's stored session (written with an unbound key):
        # neither its lines nor an idle verdict for it
        st, r = srv.post("system", line("system", 0, "session", sid=c, app="idle",
                                        host="node-8") + b"\n")
        self.assertEqual(r["accepted"], 1)
        verdict = line("system", 1, "verdict", sid=c, kind="gpu", dev=0, state="EMPTY",
                       since=1, reasons=["x"])
        st, r = srv.post("system", verdict + b"\n" +
                         line("system", 2, "host", sid=c, cpu=1.0) + b"\n", token=tok)
        self.assertEqual((r["accepted"], r["rejected"]), (0, 2), r)
        self.assertEqual(srv.get("/api/v1/fleet")["items"], [])
        # a session line naming another host for its own session
        st, r = srv.post("scope", line("scope", 0, "session", sid=a, app="x",
                                       host="node-8") + b"\n", token=tok)
        self.assertEqual(r["rejected"], 1, r)
        # a session whose host nobody has said yet
        st, r = srv.post("device", line("device", 5, "kernel", sid=u, dur=1, name=1) +
                         b"\n", token=tok)
        self.assertEqual(r["rejected"], 1)
        self.assertIn("not known yet", r["errors"][0]["reason"])
        # the same verdict with an unbound key goes in
        st, r = srv.post("system", verdict + b"\n")
        self.assertEqual(r["accepted"], 1, r)
        # memory profiles: only its hosts'
        prof = {"v": 1, "host": "node-8", "pid": 1, "comm": "x", "start": 1, "end": 2,
                "source": "preload", "simulated": False,
                "stacks": [{"frames": ["main", "cudaMalloc"], "alloc_bytes": 1,
                            "alloc_count": 1, "free_bytes": 0, "free_count": 0,
                            "inuse_bytes": 1, "inuse_count": 1, "fail_bytes": 0,
                            "fail_count": 0}]}
        st, _, data = srv.req("POST", "/api/v1/memprof", json.dumps(prof), token=tok,
                              headers={"Content-Type": "application/json"})
        self.assertEqual(st, 403, data)
        prof["host"] = "node-7"
        st, _, data = srv.req("POST", "/api/v1/memprof", json.dumps(prof), token=tok,
                              headers={"Content-Type": "application/json"})
        self.assertEqual(st, 200, data)
        # OOM reports (gpufl memprof --oom): the same
        oom = {"v": 1, "host": "node-8", "pid": 1, "ts": 5, "source": "preload",
               "stacks": [["main", "cuMemAlloc_v2"]],
               "request": {"api": "cuMemAlloc_v2", "bytes": 100, "rc": 2, "stack": 0},
               "device": {"source": "unknown"},
               "live": {"bytes": 0, "count": 0, "stacks": []},
               "recent": {"window_ns": 10, "events": []}}
        st, _, data = srv.req("POST", "/api/v1/memprof/oom", json.dumps(oom), token=tok,
                              headers={"Content-Type": "application/json"})
        self.assertEqual(st, 403, data)
        self.assertIn(b"node-8", data)
        self.assertEqual(srv.get("/api/v1/memory/ooms")["items"], [])
        oom["host"] = "node-7"
        st, _, data = srv.req("POST", "/api/v1/memprof/oom", json.dumps(oom), token=tok,
                              headers={"Content-Type": "application/json"})
        self.assertEqual(st, 200, data)
        self.assertEqual([x["host"] for x in srv.get("/api/v1/memory/ooms")["items"]],
                         ["node-7"])
        # listed with its hosts; the command line binds keys too
        keys = srv.get("/api/v1/keys")["items"]
        self.assertEqual([k["hosts"] for k in keys if k["id"] == k7["id"]], [["node-7"]])
        p = subprocess.run([T.SERVER, "keys", "create", "--role", "ingest", "--hosts",
                            "node-9,node-10", "--data-dir", srv.data_dir],
                           env=T.clean_env(), timeout=30, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(p.returncode, 0, p.stderr)
        tok9 = p.stdout.split()[-1]
        st, r = srv.post("device", line("device", 0, "session", sid=sid_n(0x9), app="x",
                                        host="node-10") + b"\n", token=tok9)
        self.assertEqual(r["accepted"], 1, r)
        p = subprocess.run([T.SERVER, "keys", "create", "--role", "read", "--hosts",
                            "node-9", "--data-dir", srv.data_dir],
                           env=T.clean_env(), timeout=30, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(p.returncode, 2)
        self.assertIn("ingest keys only", p.stderr)

    def test_streamed_bodies_scope(self):
        """Large bodies are stored part by part while they are parsed
        (api_ingest.c); each answer is still the one the body checked
        whole gives: parse errors in line order, then the scope's; a
        session_end below lines of an earlier part, or a host-bound key's
        session line after its kernels, makes the server check and store
        that body whole again (gpufl_ingest_rewhole_total), nothing stored
        twice or lost.  Parts of two pieces (GPUFL_SERVER_PAR_STEP): a
        fast helper would otherwise give the whole body as one part."""
        srv = self.server(env={"GPUFL_SERVER_PAR_STEP": "2"})
        n = 4000  # ~440 KB: streamed (16 pieces of 16 KiB or more)

        def counters():
            m = srv.req("GET", "/metrics")[2].decode()
            got = {}
            for ln in m.splitlines():
                for k in ("streamed", "rewhole"):
                    if ln.startswith("gpufl_ingest_%s_total " % k):
                        got[k] = int(ln.split()[1])
            return got["streamed"], got["rewhole"]

        def post(body, token=None, streamed=1, rewhole=0):
            c0 = counters()
            st, r = srv.post("device", b"\n".join(body) + b"\n",
                             **({"token": token} if token else {}))
            self.assertEqual(st, 200, r)
            c1 = counters()
            self.assertEqual((c1[0] - c0[0], c1[1] - c0[1]), (streamed, rewhole))
            return r

        def kernels(sid, lo, hi, skip=()):
            return [line("device", i, "kernel", sid=sid, dur=5 + i, name=1)
                    for i in range(lo, hi) if i not in skip]

        # a session whole in one body: two lines refused by the parser,
        # early and late (different parts), the end last
        a = sid_n(0x51)
        body = [line("device", 0, "session", sid=a, app="x", host="h")] + \
            kernels(a, 1, n) + [line("device", n, "session_end", sid=a, reason="x",
                                     lines=n + 1)]
        body[10] = b'{"v":1,"sid":"%s","st":"device","seq":10' % a.encode()
        body[n - 20] = b"{"
        self.assertGreater(sum(len(x) + 1 for x in body), 16 * 16384)
        r = post(body)
        self.assertEqual((r["accepted"], r["duplicate"], r["rejected"]), (n - 1, 0, 2))
        self.assertEqual([e["line"] for e in r["errors"]], [11, n - 19])
        self.assertEqual(srv.get("/api/v1/sessions/" + a)["counts"]["kernels"], n - 3)
        # the same again: duplicates, the same refusals
        r = post(body)
        self.assertEqual((r["accepted"], r["duplicate"], r["rejected"]), (0, n - 1, 2))
        # past its stored end: the parse errors first (late in the body),
        # then the scope's from the top, as a body checked whole says them
        body = kernels(a, n + 1, 2 * n)
        body[n - 50] = b"not json"
        r = post(body)
        self.assertEqual((r["accepted"], r["rejected"]), (0, n - 1), r)
        self.assertEqual(r["errors"][0]["line"], n - 49)
        self.assertNotIn("past the end", r["errors"][0]["reason"])
        self.assertEqual([e["line"] for e in r["errors"][1:4]], [1, 2, 3])
        self.assertIn("past the end", r["errors"][1]["reason"])
        self.assertEqual(r["errors_truncated"], n - 1 - 50)
        # a session_end at the end of the body below seqs of its first
        # part: checked whole again - the lines past it refused
        b = sid_n(0x52)
        body = [line("device", 0, "session", sid=b, app="x", host="h")] + \
            kernels(b, 1, n, skip=(100,)) + \
            [line("device", 100, "session_end", sid=b, reason="x", lines=101)]
        r = post(body, rewhole=1)
        self.assertEqual((r["accepted"], r["rejected"]), (101, n - 101), r)
        self.assertEqual(r["errors"][0]["line"], 101)  # seq 101
        self.assertIn("past the end", r["errors"][0]["reason"])
        self.assertEqual(srv.get("/api/v1/sessions/" + b)["counts"]["kernels"], 99)
        # a host-bound key and a new session whose session line comes
        # last: its host is known only from the whole body - stored whole
        tok = self.key(srv, "ingest", ["node-s"])["key"]
        c = sid_n(0x53)
        body = kernels(c, 1, n) + \
            [line("device", 0, "session", sid=c, app="x", host="node-s")]
        r = post(body, token=tok, rewhole=1)
        self.assertEqual((r["accepted"], r["rejected"]), (n, 0), r)
        # its next body streams: the host is stored now
        r = post(kernels(c, n, 2 * n), token=tok)
        self.assertEqual((r["accepted"], r["rejected"]), (n, 0), r)
        self.assertEqual(srv.get("/api/v1/sessions/" + c)["counts"]["kernels"],
                         2 * n - 1)
        # another host's key: every line refused, nothing stored
        tok2 = self.key(srv, "ingest", ["node-t"])["key"]
        r = post(kernels(c, 2 * n, 3 * n), token=tok2)
        self.assertEqual((r["accepted"], r["rejected"]), (0, n), r)
        self.assertIn("node-s", r["errors"][0]["reason"])
        self.assertEqual(srv.get("/api/v1/sessions/" + c)["counts"]["kernels"],
                         2 * n - 1)
        # where the time went: a streamed body's parse is not also counted
        # as the store's write, so the phases still fit in the requests
        m = srv.req("GET", "/metrics")[2].decode()
        ph = {ln.split('"')[1]: float(ln.split()[1]) for ln in m.splitlines()
              if ln.startswith("gpufl_ingest_seconds_total{phase=")}
        req = [float(ln.split()[1]) for ln in m.splitlines()
               if ln.startswith('gpufl_http_request_seconds_sum{route="ingest"}')][0]
        self.assertGreater(ph["parse"], 0)
        self.assertLessEqual(sum(ph.values()), req + 1e-5, (ph, req))

    def test_no_append_past_the_end(self):
        srv = self.server()
        d = sid_n(0xe)
        lines = [line("device", 0, "session", sid=d, app="x", host="h")] + \
            [line("device", i, "kernel", sid=d, dur=5, name=1) for i in range(1, 6)] + \
            [line("device", 6, "session_end", sid=d, reason="shutdown", lines=7)]
        st, r = srv.post("device", b"\n".join(lines) + b"\n")
        self.assertEqual(r["accepted"], 7, r)
        st, r = srv.post("device", line("device", 7, "kernel", sid=d, dur=5, name=1) +
                         b"\n" + line("device", 3, "kernel", sid=d, dur=5, name=1) + b"\n" +
                         line("device", 9, "loss", sid=d, reason="x", count=1) + b"\n")
        self.assertEqual((r["accepted"], r["duplicate"], r["rejected"]), (0, 1, 2), r)
        self.assertIn("past the end", r["errors"][0]["reason"])
        self.assertEqual([e["line"] for e in r["errors"]], [1, 3])
        # in one batch: the end and a line after it
        e = sid_n(0xf)
        st, r = srv.post("scope", b"\n".join([
            line("scope", 0, "session", sid=e, app="x", host="h"),
            line("scope", 2, "marker", sid=e, text="after"),
            line("scope", 1, "session_end", sid=e, reason="shutdown", lines=2)]) + b"\n")
        self.assertEqual((r["accepted"], r["rejected"]), (2, 1), r)
        self.assertEqual(r["errors"][0]["line"], 2)
        # other streams of the session go on
        st, r = srv.post("system", line("system", 0, "session", sid=d, app="x", host="h") +
                         b"\n" + line("system", 1, "host", sid=d, cpu=1.0) + b"\n")
        self.assertEqual(r["accepted"], 2, r)


if __name__ == "__main__":
    unittest.main()
