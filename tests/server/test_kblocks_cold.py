"""test_kblocks_cold.py - the cold tier of kernel blocks (docs/server.md
"Cold tier"): blocks of silent sessions move to S3 (a real radosgw, which
checks SigV4), read back through a bounded local cache, and the API
answers as from rows; S3 down while moving keeps the blocks in the
database, S3 down while reading answers 503 and loses nothing; pruned
sessions' objects are deleted from S3.  Op blocks (copies, memsets, syncs,
allocs, frees) go the same way: cold, replayed as duplicates, 503 with
S3 down, answers equal a rows server's, merged by the compactor through
S3, pruned out of S3.  Real binary on 127.0.0.1, SQLite
or (with GPUFL_TEST_PG_URI_FILE) PostgreSQL.

Run: python3 test_kblocks_cold.py -v Cold   (exit 77: radosgw missing)
"""
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import srvtest as T
import test_kblocks as KB
import test_kblocks_migrate as KM
import test_oblocks as OB
import test_timeline as TL

sys.path.insert(0, os.path.join(T.HERE, "..", "agent"))
import harness as H  # noqa: E402  (radosgw: ceph_up.sh, s3_curl)

BUCKET = "kcold"
EP = "http://127.0.0.1:7480"
DOWN = "http://127.0.0.1:9"  # nothing listens: S3 down


def cold_args(prefix, ep=EP, cache=None, hot="1s", cmax="64k"):
    a = KB.BLOCKS + ["--cold-s3-endpoint", ep, "--cold-s3-bucket", BUCKET,
                     "--cold-s3-access-key", "TESTKEY", "--cold-s3-prefix",
                     prefix, "--cold-cache-max", cmax]
    if hot:
        a += ["--hot-age", hot]
    if cache:
        a += ["--cold-cache", cache]
    return a


ENV = {"GPUFL_SERVER_COLD_S3_SECRET_KEY": "TESTSECRET"}


def objects(prefix):
    """The bucket's keys under prefix (one page: tests keep few)."""
    st, body = H.s3_curl("GET", "/%s?prefix=%s" % (BUCKET, prefix.replace("/", "%2F")))
    assert st == 200, (st, body[:300])
    return re.findall(r"<Key>([^<]+)</Key>", body.decode())


def wait(cond, what, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.2)
    raise AssertionError("%s: not within %d s" % (what, timeout))


metric = T.metric  # one sample of /metrics, or None


def all_cold(srv):
    n = KB.count(srv, "SELECT count(*) FROM kblocks")
    return n > 0 and KB.count(srv, KB.LEFT) == 0 and KB.count(
        srv, "SELECT count(*) FROM kblocks WHERE length(block)=24") == n


def op_keys(prefix):
    """The op blocks' objects under prefix (<sess>/ops/<seq_lo>-<id>)."""
    return [k for k in objects(prefix) if "/ops/" in k]


def ops_cold(srv, pre):
    """Every op block a stub, recorded once, its object in the bucket."""
    n = KB.count(srv, "SELECT count(*) FROM oblocks")
    return (n > 0 and KB.count(srv, "SELECT count(*) FROM oblocks WHERE"
                                    " length(payload)=24") == n and
            KB.count(srv, "SELECT count(*) FROM ocold") == n and
            len(op_keys(pre)) == n)


def op_answers(srv, g):
    """The op answers of g's session (test_oblocks.py's), and its copies
    in pages of 7 following their cursors."""
    ts = sorted(e["ts"] for e in g.ops)
    lo, hi = ts[len(ts) // 4], ts[3 * len(ts) // 4]
    out = {p: OB.norm(srv.get(p)) for p in OB.Base.answers(None, g, lo, hi)}
    out["pages"] = T.page_all(srv, "/api/v1/sessions/%s/copies" % g.sid, 7)
    return out


def cache_files(d):
    return [os.path.join(d, f) for f in os.listdir(d)] if os.path.isdir(d) \
        else []


def sessions(rnd, n=3):
    return KM.sessions(rnd, n, 4500)


class Cold(KB.Base):
    @classmethod
    def setUpClass(cls):
        if not shutil.which("radosgw"):
            raise unittest.SkipTest("radosgw not installed "
                                    "(scripts/deps/agent.test)")
        cls.ceph = tempfile.mkdtemp(prefix="ceph.", dir=T.TMP)
        why = H.ceph_start(cls.ceph)
        if why:
            raise AssertionError(why)
        assert H.s3_curl("PUT", "/" + BUCKET)[0] == 200

    @classmethod
    def tearDownClass(cls):
        subprocess.run([H.CEPH, "stop", cls.ceph], timeout=60)

    def cold(self, name, args, **kw):
        return self.server(name, args, env=ENV, **kw)

    def prune_empties(self, b, pre, blocks, records):
        """Retention prunes every session of b: no blocks, no records of
        objects, and the sweep leaves prefix pre empty."""
        time.sleep(1.1)
        st, _, body = b.req("POST", "/api/v1/admin/retention?max_age=1")
        self.assertEqual(st, 200, body)
        self.assertEqual(KB.count(b, "SELECT count(*) FROM " + blocks), 0)
        wait(lambda: not objects(pre), "pruned sessions' objects deleted")
        self.assertEqual(KB.count(b, "SELECT count(*) FROM " + records), 0)

    def test_cold_read_evict_down_prune(self):
        rnd = random.Random(230)
        gens = sessions(rnd)
        a = self.server("rows")
        for g in gens:
            g.send(a)
        want = [KM.answers(a, g) for g in gens]
        pre = "t%d/" % rnd.randrange(10 ** 9)
        d = os.path.join(self.dir, "cold")
        cache = os.path.join(self.dir, "cache")
        b = self.cold("cold", cold_args(pre, cache=cache, cmax="8k"))
        for g in gens:
            g.send(b)
        wait(lambda: all_cold(b), "every block cold")
        nb = KB.count(b, "SELECT count(*) FROM kblocks")
        self.assertGreaterEqual(nb, 6)
        self.assertEqual(KB.count(b, "SELECT count(*) FROM kcold"), nb)
        self.assertEqual(len(objects(pre)), nb)
        total = sum(len(g.kernels) for g in gens)
        self.assertEqual(KB.count(b, "SELECT count(*) FROM kernels") +
                         KB.count(b, "SELECT sum(n) FROM kblocks"), total)

        # a replay reads every cold block (the duplicate check, no thaw):
        # from S3 into a cache of 8 KiB, which keeps a few (~2-3 KB each)
        for g in gens:
            r = b.ingest_ok("device", KB.lines(g, "device", 0,
                                               len(g.lines["device"])))
            self.assertEqual(r["accepted"], 0)
        files = cache_files(cache)
        size = sum(os.path.getsize(f) for f in files)
        print("cache: %d of %d blocks, %d bytes" % (len(files), nb, size))
        self.assertLessEqual(size, 8 * 1024)
        self.assertGreater(len(files), 0)
        self.assertLess(len(files), nb)  # evicted
        self.assertEqual(metric(b, "gpufl_server_cold_blocks_moved_total"), nb)
        self.assertGreaterEqual(
            metric(b, 'gpufl_server_cold_reads_total{from="s3"}'), nb)
        self.assertGreater(metric(b, "gpufl_server_cold_cache_evicted_total"),
                           0)
        self.assertEqual(metric(b, "gpufl_server_cold_cache_bytes"), size)
        self.assertFalse([f for f in files
                          if os.path.basename(f).startswith(".tmp-")])

        # S3 down while reading: 503, nothing changes, nothing lost
        b.stop()
        b = self.cold("cold", cold_args(pre, ep=DOWN, hot=None,
                                        cache=os.path.join(self.dir, "c2")))
        base = "/api/v1/sessions/%s/kernels" % gens[1].sid
        st, _, body = b.req("GET", base)
        self.assertEqual(st, 503, body)
        self.assertIn(b"cold storage", body)
        # timeline level 0, computed from the (cold) blocks: 503 too
        t0 = TL.T0 + 10 ** 8
        st, _, body = b.req("GET", "/api/v1/sessions/%s/timeline?from=%d&to=%d"
                            "&width=300" % (gens[1].sid, t0, t0 + 10 ** 8))
        self.assertEqual(st, 503, body)
        self.assertGreater(
            metric(b, 'gpufl_server_cold_reads_total{from="error"}'), 0)
        st, r = b.post("device", KB.lines(gens[1], "device", 0, 200))
        self.assertEqual(st, 503, r)
        self.assertEqual(KB.count(b, "SELECT count(*) FROM kcold"), nb)
        self.assertEqual(KB.count(b, "SELECT sum(n) FROM kblocks"),
                         KB.count(a, "SELECT count(*) FROM kernels") -
                         KB.count(b, "SELECT count(*) FROM kernels"))
        b.stop()

        # S3 back: the API answers as from rows (queries read the cold
        # blocks in place, through the cache or S3); nothing is thawed, so
        # every block stays cold and every object stays
        b = self.cold("cold", cold_args(pre, cache=cache))
        for g, w in zip(gens[:2], want[:2]):
            got = KM.answers(b, g)
            for p in w:
                self.assertEqual(got[p], w[p], p)
        self.assertEqual(KB.count(b, "SELECT count(*) FROM kblocks"), nb)
        self.assertEqual(KB.count(b, "SELECT count(*) FROM kcold"), nb)
        self.assertEqual(len(objects(pre)), nb)
        self.assertGreater(
            metric(b, 'gpufl_server_cold_reads_total{from="s3"}') +
            metric(b, 'gpufl_server_cold_reads_total{from="cache"}'), 0)

        # retention prunes the sessions; the sweep deletes their objects
        self.prune_empties(b, pre, "kblocks", "kcold")

    def test_s3_down_while_moving(self):
        rnd = random.Random(231)
        gens = sessions(rnd, 2)
        pre = "t%d/" % rnd.randrange(10 ** 9)
        c = self.cold("c", cold_args(pre, ep=DOWN))
        for g in gens:
            g.send(c)
        wait(lambda: KB.count(c, KB.LEFT) == 0 and
             KB.count(c, "SELECT count(*) FROM kblocks") > 0, "compacted")
        time.sleep(3)  # passes that fail and back off
        nb = KB.count(c, "SELECT count(*) FROM kblocks")
        self.assertEqual(KB.count(c, "SELECT count(*) FROM kblocks WHERE"
                                     " length(block)=24"), 0)
        self.assertEqual(KB.count(c, "SELECT count(*) FROM kcold"), 0)
        self.assertGreater(metric(c, "gpufl_server_cold_s3_errors_total"), 0)
        self.assertEqual(metric(c, "gpufl_server_cold_blocks_moved_total"), 0)
        c.stop()
        # S3 back: the same blocks move, and read back whole
        c = self.cold("c", cold_args(pre))
        wait(lambda: all_cold(c), "every block cold")
        self.assertEqual(KB.count(c, "SELECT count(*) FROM kblocks"), nb)
        self.assertEqual(len(objects(pre)), nb)
        for g in gens:
            got = T.page_all(c, "/api/v1/sessions/%s/kernels" % g.sid)
            self.assertEqual(sorted(k["kid"] for k in got),
                             sorted(k[0] for k in g.kernels))

    def test_op_blocks_cold(self):
        rnd = random.Random(232)
        g = OB.with_allocs(TL.flows_session(rnd, 3000), rnd)
        dev = g.lines["device"]
        a = self.server("rows")
        pre = "o%d/" % rnd.randrange(10 ** 9)
        cache = os.path.join(self.dir, "ocache")
        # blocks of 2 ops are full: ingest's blocks (one a batch) stay as
        # they are until the compactor's turn below
        env = dict(ENV, GPUFL_SERVER_OB_RUN="2")
        b = self.server("ocold", cold_args(pre, cache=cache), env=env)
        for srv in (a, b):
            for lo in range(0, len(dev), 400):
                srv.ingest_ok("device", OB.body(g, range(
                    lo, min(lo + 400, len(dev)))))
        want = op_answers(a, g)
        self.assertEqual(len(want["pages"]), len(g.ops))
        wait(lambda: ops_cold(b, pre), "every op block cold", 60)
        nob = KB.count(b, "SELECT count(*) FROM oblocks")
        self.assertGreaterEqual(nob, 5)
        self.assertEqual(KB.count(b, "SELECT sum(n) FROM oblocks"),
                         len(g.ops))
        self.assertEqual(KB.count(b, "SELECT count(*) FROM ops"), 0)
        self.assertEqual(
            metric(b, "gpufl_server_cold_op_blocks_moved_total"), nob)
        # kernel and op objects never share a key
        self.assertEqual(len(set(objects(pre))), len(objects(pre)))

        # a replay of every line: all duplicates, read from the cold
        # blocks (kernels' and ops')
        r = b.ingest_ok("device", OB.body(g, range(len(dev))))
        self.assertEqual(r["accepted"], 0, r)
        self.assertGreater(
            metric(b, 'gpufl_server_cold_reads_total{from="s3"}'), 0)
        self.assertEqual(KB.count(b, "SELECT sum(n) FROM oblocks"),
                         len(g.ops))
        b.stop()

        # S3 down: the copies, calls and export 503; an op line too;
        # nothing changes
        b = self.server("ocold", cold_args(pre, ep=DOWN, hot=None,
                                           cache=os.path.join(self.dir,
                                                              "oc2")),
                        env=env)
        base = "/api/v1/sessions/" + g.sid
        for p in (base + "/copies", base + "/copies?kind=memcpy",
                  base + "/export"):
            st, _, body = b.req("GET", p)
            self.assertEqual(st, 503, (p, body))
            self.assertIn(b"cold storage", body)
        st, r = b.post("device", OB.body(g, [
            i for i, ln in enumerate(dev) if ln.get("type") in OB.OPS][:50]))
        self.assertEqual(st, 503, r)
        self.assertTrue(ops_cold(b, pre))
        self.assertEqual(KB.count(b, "SELECT count(*) FROM oblocks"), nob)
        self.assertEqual(KB.count(b, "SELECT sum(n) FROM oblocks"),
                         len(g.ops))
        b.stop()

        # S3 back: every op answer as a rows server's
        b = self.server("ocold", cold_args(pre, cache=cache), env=env)
        got = op_answers(b, g)
        for p in want:
            self.assertEqual(got[p], want[p], p)
        self.assertTrue(ops_cold(b, pre))
        b.stop()

        # the compactor merges the cold blocks (read through the cache or
        # S3); the sweep deletes the sources' objects, the mover moves the
        # merged block
        b = self.server("ocold", cold_args(pre, cache=cache), env=ENV)
        wait(lambda: KB.count(b, "SELECT count(*) FROM oblocks") < nob and
             ops_cold(b, pre), "cold op blocks merged, cold again", 60)
        got = op_answers(b, g)
        for p in want:
            self.assertEqual(got[p], want[p], p)

        # retention prunes the sessions; their objects leave S3
        self.prune_empties(b, pre, "oblocks", "ocold")


if __name__ == "__main__":
    r = unittest.main(exit=False).result
    sys.exit(77 if r.wasSuccessful() and r.skipped else
             0 if r.wasSuccessful() else 1)
