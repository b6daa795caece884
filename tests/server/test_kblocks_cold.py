"""test_kblocks_cold.py - the cold tier of kernel blocks (docs/server.md
"Cold tier"): blocks of silent sessions move to S3 (a real radosgw, which
checks SigV4), read back through a bounded local cache, and the API
answers as from rows; S3 down while moving keeps the blocks in the
database, S3 down while reading answers 503 and loses nothing; pruned
sessions' objects are deleted from S3.  Real binary on 127.0.0.1, SQLite
or (with GPUFL_TEST_PG_URI_FILE) PostgreSQL.

Run: python3 test_kblocks_cold.py -v Cold   (exit 77: radosgw missing)
"""
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import unittest

import srvtest as T
import test_kblocks as KB
import test_kblocks_migrate as KM
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


def cache_files(d):
    return [os.path.join(d, f) for f in os.listdir(d)] if os.path.isdir(d) \
        else []


def sessions(rnd, n=3):
    return KM.sessions(rnd, n, 4500)


class Cold(KB.Base):
    @classmethod
    def setUpClass(cls):
        cls.ceph = tempfile.mkdtemp(prefix="ceph.", dir=T.TMP)
        why = H.ceph_start(cls.ceph)
        if why:
            raise unittest.SkipTest("radosgw did not start: " + why)
        assert H.s3_curl("PUT", "/" + BUCKET)[0] == 200

    @classmethod
    def tearDownClass(cls):
        subprocess.run([H.CEPH, "stop", cls.ceph], timeout=60)

    def cold(self, name, args, **kw):
        return self.server(name, args, env=ENV, **kw)

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
        time.sleep(1.1)
        st, _, body = b.req("POST", "/api/v1/admin/retention?max_age=1")
        self.assertEqual(st, 200, body)
        self.assertEqual(KB.count(b, "SELECT count(*) FROM kblocks"), 0)
        wait(lambda: not objects(pre), "pruned sessions' objects deleted")
        self.assertEqual(KB.count(b, "SELECT count(*) FROM kcold"), 0)

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


if __name__ == "__main__":
    r = unittest.main(exit=False).result
    sys.exit(77 if r.wasSuccessful() and r.skipped else
             0 if r.wasSuccessful() else 1)
