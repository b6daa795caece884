"""test_pg_outage.py - gpufl-server when PostgreSQL goes away and comes back.

A private throwaway cluster (pg_cluster.sh ... durable: fsync and
synchronous_commit on, as docs/deploy.md asks), because these tests crash
and restart it; the shared cluster of the other PostgreSQL tests must not
see that.  Posters behave as the agent does: a batch is resent until it is
acknowledged (200 with every line accounted for), 503 means retry.

    python3 test_pg_outage.py -v
"""
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

import srvtest as T

CLUSTER = os.path.join(T.HERE, "pg_cluster.sh")


def cluster(*args):
    subprocess.run([CLUSTER] + list(args), check=True,
                   stdout=subprocess.DEVNULL)


def wait_for(what, fn, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if fn():
            return
        time.sleep(0.05)
    raise AssertionError("timed out after %.0f s waiting for %s" % (timeout, what))


def kernel_lines(sid, seq0, n):
    return ['{"v":1,"sid":"%s","st":"device","seq":%d,"ts":%d,"type":"kernel",'
            '"dev":0,"stream":%d,"corr":%d,"name":1,"grid":[1],"dur":%d}'
            % (sid, s, 1000 + s * 5000, s % 3, s, 100 + s % 977)
            for s in range(seq0, seq0 + n)]


class Poster(threading.Thread):
    """One session's device stream, sent as the agent sends it: each batch
    again and again until it is acknowledged."""

    def __init__(self, srv, sid, per=250, token="admin"):
        super().__init__(daemon=True)
        self.srv, self.sid, self.per, self.token = srv, sid, per, token
        self.stop = threading.Event()
        self.acked = []          # seqs acknowledged
        self.batches = 0         # batches acknowledged
        self.n503 = 0
        self.error = None

    def run(self):
        head = ['{"v":1,"sid":"%s","st":"device","seq":0,"ts":1000,'
                '"type":"session","app":"outage","host":"pg","start":1000}'
                % self.sid,
                '{"v":1,"sid":"%s","st":"device","seq":1,"ts":1000,'
                '"type":"dict","id":1,"kind":"name","name":"k_outage"}'
                % self.sid]
        seq, first = 2, True
        deadline = time.time() + 60
        while not self.stop.is_set():
            lines = (head if first else []) + kernel_lines(self.sid, seq, self.per)
            body = ("\n".join(lines) + "\n").encode()
            while True:
                if time.time() > deadline:
                    self.error = "batch at seq %d never acknowledged" % seq
                    return
                try:
                    code, r = self.srv.post("device", body, token=self.token)
                except OSError:
                    code, r = None, None
                if code == 200:
                    if r["rejected"] or r["accepted"] + r["duplicate"] != len(lines):
                        self.error = "bad acknowledgement %r" % (r,)
                        return
                    break
                if code != 503:
                    self.error = "answer %r %r" % (code, r)
                    return
                self.n503 += 1
                time.sleep(0.05)
            self.acked += ([0, 1] if first else []) + list(range(seq, seq + self.per))
            self.batches += 1
            seq += self.per
            first = False


class PgOutage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="pgoutage.", dir=T.TMP)
        os.chmod(cls.dir, 0o755)  # the cluster runs as postgres when we are root
        cls.pg = os.path.join(cls.dir, "pg")
        cluster("start", cls.pg, "durable")
        with open(os.path.join(cls.pg, "uri")) as f:
            cls.uri = f.read().strip()

    @classmethod
    def tearDownClass(cls):
        cluster("stop", cls.pg)
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        # a test that failed halfway may have left the cluster down
        if subprocess.run(["pg_isready", "-q", "-d", self.uri + "/postgres"]).returncode:
            cluster("restart", self.pg)
        self.db = self._testMethodName.lower()[:60]
        self.psql("postgres", "DROP DATABASE IF EXISTS %s" % self.db)
        self.psql("postgres", "CREATE DATABASE %s" % self.db)
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s.kill()

    def psql(self, db, sql):
        env = dict(os.environ, PGOPTIONS="-c client_min_messages=warning")
        return subprocess.run(["psql", "-At", "-v", "ON_ERROR_STOP=1",
                               "%s/%s" % (self.uri, db), "-c", sql], check=True,
                              stdout=subprocess.PIPE, text=True, env=env).stdout

    def server(self):
        # the default kernel store (blocks): stored() reads the kernels
        # through the server's pages, which cover rows and blocks
        s = T.Server(os.path.join(self.dir, self.db),
                     ["--db", "%s/%s" % (self.uri, self.db)])
        self.servers.append(s)
        return s

    def status(self, srv, path, token=None):
        try:
            return srv.req("GET", path, token=token, timeout=10)[0]
        except OSError:
            return None

    def stored(self, srv, sids):
        """{(sid, seq)} of the device lines stored: the kernels as the
        server pages them (its own read path: a kernel block holds its
        seqs compressed, out of SQL's reach), the others from lines.  A
        kernel answered twice fails here."""
        rows = self.psql(self.db, "SELECT s.sid, l.seq FROM lines l JOIN"
                                  " sessions s ON s.id=l.sess WHERE l.st=0")
        got = {(r.split("|")[0], int(r.split("|")[1])) for r in rows.split()}
        for sid in sids:
            kids = [k["kid"] for k in
                    T.page_all(srv, "/api/v1/sessions/%s/kernels" % sid)]
            self.assertEqual(len(kids), len(set(kids)),
                             "a kernel of %s answered twice" % sid)
            got |= {(sid, k) for k in kids}
        return got

    def check_posters(self, srv, posters):
        for p in posters:
            p.stop.set()
        for p in posters:
            p.join(90)
            self.assertFalse(p.is_alive(), "a poster hung")
            self.assertIsNone(p.error, p.error)
        stored = self.stored(srv, [p.sid for p in posters])
        for p in posters:
            acked = {(p.sid, s) for s in p.acked}
            self.assertEqual(len(acked - stored), 0,
                             "%d acknowledged lines of %s are not in the database"
                             % (len(acked - stored), p.sid))
            # retried batches were stored once: in either store, the
            # counts and the rollups agree
            n = self.psql(self.db, "SELECT (SELECT count(*) FROM kernels k JOIN"
                                   " sessions s ON s.id=k.sess WHERE s.sid='%s')"
                                   " + (SELECT coalesce(sum(b.n), 0) FROM kblocks b"
                                   " JOIN sessions s ON s.id=b.sess WHERE"
                                   " s.sid='%s')" % (p.sid, p.sid))
            self.assertEqual(int(n), len(p.acked) - 2)
        # at rest where the run's store puts them (blocks unless
        # GPUFL_TEST_SERVER_ARGS says rows): this test ran that store
        rows, blocks = (int(x) for x in self.psql(
            self.db, "SELECT (SELECT count(*) FROM kernels),"
                     " (SELECT count(*) FROM kblocks)").strip().split("|"))
        if T.kernel_store() == "blocks":
            self.assertEqual((rows, blocks > 0), (0, True))
        else:
            self.assertEqual((rows > 0, blocks), (True, 0))
            d = srv.get("/api/v1/sessions/" + p.sid)
            self.assertEqual(d["counts"]["kernels"], len(p.acked) - 2)
            agg = srv.get("/api/v1/sessions/%s/kernels/aggregate" % p.sid)
            self.assertEqual([i["count"] for i in agg["items"]], [len(p.acked) - 2])

    def test_postmaster_killed_under_ingest(self):
        """kill -9 of the postmaster while four sessions stream in: the server
        answers 503 and /readyz says not ready while PostgreSQL is gone,
        reconnects by itself when it is back, and every acknowledged line
        is in the database afterwards."""
        self.assertEqual(self.psql(self.db, "SHOW synchronous_commit").strip(), "on")
        srv = self.server()
        posters = [Poster(srv, "0a0a0a0a-0000-4000-8000-%012d" % i) for i in range(4)]
        for p in posters:
            p.start()
        wait_for("the first acknowledgements",
                 lambda: all(p.batches >= 3 for p in posters), 30)
        cluster("kill", self.pg)
        t_kill = time.time()
        wait_for("/readyz to say not ready", lambda: self.status(srv, "/readyz") == 503, 10)
        self.assertEqual(self.status(srv, "/healthz"), 200)
        time.sleep(1.0)  # the posters meet the outage
        before = [p.batches for p in posters]
        cluster("restart", self.pg)
        t_up = time.time()
        wait_for("/readyz to say ready again", lambda: self.status(srv, "/readyz") == 200, 15)
        print("PostgreSQL down %.1f s; ready %.1f s after its restart"
              % (t_up - t_kill, time.time() - t_up))
        wait_for("ingest after the restart",
                 lambda: all(p.batches >= b + 3 for p, b in zip(posters, before)), 20)
        self.assertGreater(sum(p.n503 for p in posters), 0, "the outage hit no request")
        self.check_posters(srv, posters)
        out = srv.output()
        self.assertEqual(out.count("the database is unavailable"), 1, out)
        self.assertEqual(out.count("the database is reachable again"), 1, out)
        srv.stop()

    def test_terminated_connections(self):
        """pg_terminate_backend of every connection of the server: the next
        requests get new connections (prepared statements and staging
        tables made again) without an error, idle or under load."""
        srv = self.server()
        st, _, data = srv.req("POST", "/api/v1/keys", b'{"name":"r","role":"read"}',
                              headers={"Content-Type": "application/json"})
        self.assertEqual(st, 201, data)
        key = json.loads(data)["key"]
        p = Poster(srv, "0b0b0b0b-0000-4000-8000-000000000001")
        p.start()
        wait_for("a first acknowledgement", lambda: p.batches >= 2, 30)
        p.stop.set()
        p.join(30)
        self.assertEqual(self.status(srv, "/api/v1/sessions", key), 200)
        kill = ("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE datname='%s' AND pid<>pg_backend_pid()" % self.db)
        self.assertGreaterEqual(int(self.psql("postgres", kill)), 2)
        wait_for("the backends to end", lambda: self.psql(
            "postgres", "SELECT count(*) FROM pg_stat_activity WHERE datname='%s'"
            % self.db).strip() == "0", 10)
        # idle connections found closed are replaced before use: no error
        self.assertEqual(self.status(srv, "/api/v1/sessions", key), 200)
        self.assertEqual(self.status(srv, "/readyz"), 200)
        q = Poster(srv, "0b0b0b0b-0000-4000-8000-000000000002")
        q.start()
        wait_for("ingest on new connections", lambda: q.batches >= 2, 10)
        self.assertEqual(q.n503, 0)
        # and while batches are in flight, three times
        posters = [q] + [Poster(srv, "0b0b0b0b-0000-4000-8000-00000000000%d" % i)
                         for i in (3, 4)]
        for x in posters[1:]:
            x.start()
        for _ in range(3):
            time.sleep(0.3)
            self.psql("postgres", kill)
        n = [x.batches for x in posters]
        wait_for("ingest after the terminations",
                 lambda: all(x.batches >= b + 2 for x, b in zip(posters, n)), 20)
        self.check_posters(srv, [p] + posters)
        srv.stop()

    def test_api_key_while_database_down(self):
        """An API key that cannot be looked up is 503 (retry), not 401
        (which tells the agent's operator to check --token)."""
        srv = self.server()
        st, _, data = srv.req("POST", "/api/v1/keys", b'{"name":"i","role":"ingest"}',
                              headers={"Content-Type": "application/json"})
        self.assertEqual(st, 201, data)
        key = json.loads(data)["key"]
        body = kernel_lines("0c0c0c0c-0000-4000-8000-000000000001", 5, 1)[0].encode()
        self.assertEqual(srv.post("device", body, token=key)[0], 200)
        cluster("stop", self.pg)
        code, r = srv.post("device", body, token=key)
        self.assertEqual(code, 503, r)
        self.assertEqual(self.status(srv, "/api/v1/sessions", key), 503)
        self.assertEqual(self.status(srv, "/readyz"), 503)
        self.assertEqual(self.status(srv, "/healthz"), 200)
        cluster("restart", self.pg)
        wait_for("/readyz", lambda: self.status(srv, "/readyz") == 200, 15)
        wait_for("the key to work again",
                 lambda: srv.post("device", body, token=key)[0] == 200, 5)
        self.assertEqual(self.status(srv, "/api/v1/sessions", "gfk_wrong"), 401)
        srv.stop()


if __name__ == "__main__":
    unittest.main()
