"""test_kblocks_migrate.py - `gpufl-server migrate` (docs/server.md
"Migrating to blocks"): a database made by the previous version (kernel
rows, schema 18: no kblocks table) is converted in place to blocks, killed
-9 midway and run again, and every kernel answer of the API is the same
afterwards; no kernel is lost or doubled; the kept rows of the longest
and shortest kernels in blocks (kxrow, schema 24) are written for blocks
made before it.  Real binary on 127.0.0.1,
SQLite or (with GPUFL_TEST_PG_URI_FILE) PostgreSQL.

Run: python3 test_kblocks_migrate.py -v Migrate
"""
import os
import random
import subprocess
import time
import unittest

import srvtest as T
import test_kblocks as KB
import test_timeline as TL

# schema 19 (kblocks) and what came after undone: the previous version's
# database
UNDO = ["DELETE FROM schema_version WHERE version>=19",
        "DROP TABLE IF EXISTS kcold", "DROP TABLE kblocks",
        "DROP TABLE IF EXISTS kbnames",
        "DROP TABLE IF EXISTS capi", "DROP TABLE IF EXISTS capi_long",
        "DROP TABLE IF EXISTS capi_from", "DROP TABLE IF EXISTS kcount",
        "DROP TABLE IF EXISTS kxrow", "DROP TABLE IF EXISTS kbspan",
        "DROP TABLE IF EXISTS kbunnamed"]
# schema 24 (kxrow) undone: blocks written before it, without kept rows
UNDO_24 = ["DELETE FROM schema_version WHERE version>=24",
           "DROP TABLE kxrow", "DROP TABLE IF EXISTS kbspan",
           "DROP INDEX IF EXISTS kblocks_small",
           "DROP INDEX IF EXISTS kbnames_dmin"]


def sessions(rnd, n, size, running=()):
    """n sessions of size to 1.33 x size kernels on two GPUs and two
    streams, of three names, gaps and durations from 0 to 10 ms; all but
    those in running ended."""
    gens = []
    for i in range(n):
        g = TL.Gen()
        nids = [g.name(*TL.ADD), g.name(*TL.FILL), g.name(TL.GEMM)]
        t = TL.T0
        for j in range(size + rnd.randrange(size // 3)):
            t += rnd.choice([0, 1, 300, 5000, 70000, 400000])
            g.kernel(t, rnd.choice([0, 1, 900, 40000, 262144, 10 ** 7]),
                     nids[j % 3], dev=j % 5 // 4, stream=7 + j % 2,
                     corr=j + 1)
        gens.append(g if i in running else KB.ended(g))
    return gens


def undo(srv, qs=UNDO):
    """srv's database back to the previous version's schema."""
    if srv.pgdb:
        for q in qs:
            srv.sql(q)
        return
    import sqlite3
    db = sqlite3.connect(os.path.join(srv.data_dir, "gpufl.db"),
                         isolation_level=None)
    for q in qs:
        db.execute(q)
    db.close()


def answers(srv, g):
    """Every kernel answer of g's session: pages, sorts, windows,
    aggregates, timelines, each kernel by id."""
    base = "/api/v1/sessions/" + g.sid
    t0, t1 = TL.T0 + 10 ** 8, TL.T0 + 2 * 10 ** 8
    paths = [base, base + "/kernels?sort=duration&desc=true&limit=300",
             base + "/kernels?sort=duration&limit=300",
             base + "/kernels?from=%d&to=%d&limit=1000" % (t0, t1),
             base + "/kernels/aggregate", base + "/durations",
             base + "/timeline?from=%d&to=%d&width=500&exact=5000" % (t0, t1),
             base + "/timeline?width=800",
             # level 0 (2^18 <= ns a pixel < 2^20): stored rows before,
             # computed from the blocks after
             base + "/timeline?from=%d&to=%d&width=300" % (t0, t1),
             base + "/timeline?from=%d&to=%d&width=1000" % (t0, t0 + 5 *
                                                            10 ** 8)]
    out = {p: KB.norm(srv.get(p)) for p in paths}
    out["all"] = T.page_all(srv, base + "/kernels")
    seqs = sorted(k[0] for k in g.kernels)
    for s in seqs[::997] + [seqs[-1]]:
        p = base + "/kernels/%d" % s
        out[p] = srv.get(p)
    return out


class Migrate(KB.Base):
    def migrate(self, d, db_args, env=None, kill_when=None):
        """gpufl-server migrate; with kill_when, kill -9 as soon as it
        returns true (polled every 20 ms while migrate runs)."""
        cmd = [T.SERVER, "migrate", "--data-dir", d] + db_args
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             env=T.clean_env(env))
        if kill_when is None:
            out = p.communicate(timeout=120)[0]
            self.assertEqual(p.returncode, 0, out)
            return out
        deadline = time.time() + 60
        while not kill_when():
            self.assertIsNone(p.poll(), "migrate ended before the kill")
            self.assertLess(time.time(), deadline, "no block in 60 s")
            time.sleep(0.02)
        p.kill()
        out = p.communicate()[0]
        self.assertEqual(p.returncode, -9, out)  # killed, not finished
        return out

    def test_previous_version_in_place(self):
        rnd = random.Random(23)
        # session 1 keeps running: its tails stay rows
        gens = sessions(rnd, 3, 9000, running=(1,))
        d = os.path.join(self.dir, "data")
        srv = self.server("data")
        for g in gens:
            g.send(srv)
        srv.stop()
        undo(srv)
        db_args = srv.db_args()
        total = sum(len(g.kernels) for g in gens)

        # the previous version's answers, from its rows (the server opens
        # it, migrates the schema, compacts nothing: --kernel-store=rows)
        srv = T.Server(d, KB.ROWS)
        self.servers.append(srv)
        before = [answers(srv, g) for g in gens]
        self.assertEqual(KB.count(srv, "SELECT count(*) FROM kblocks"), 0)
        # the compactor's row counts (migration 23) filled from the rows
        kept, real = KB.counts_of(srv)
        self.assertEqual(kept, real)
        self.assertEqual(sum(kept.values()), total)
        srv.stop()
        undo(srv)

        # killed inside a block's transaction (each pauses 400 ms), twice:
        # right after a block committed, so in the next one's pause (a
        # fixed delay missed every block on a loaded machine, where
        # migrate took longer than it to open the database)
        def blocks():
            try:
                return KB.count(srv, "SELECT count(*) FROM kblocks")
            except Exception:  # not made yet: the schema is the old one
                return 0
        for _ in range(2):
            n0 = blocks()
            self.migrate(d, db_args, {"GPUFL_SERVER_KB_PAUSE_MS": "400"},
                         kill_when=lambda n0=n0: blocks() > n0)
        self.assertGreater(KB.count(srv, "SELECT count(*) FROM kblocks"), 0)
        self.assertGreater(KB.count(srv, KB.LEFT), 0)  # midway
        self.assertEqual(KB.count(srv, "SELECT count(*) FROM kernels") +
                         KB.count(srv, "SELECT sum(n) FROM kblocks"), total)
        lvl0 = "SELECT count(*) FROM tl WHERE lvl=0"
        self.assertGreater(KB.count(srv, lvl0), 0)
        out = self.migrate(d, db_args)
        print(out)
        # every session has blocks now: its level 0 rows went
        self.assertRegex(out, r"migrate: [1-9]\d* timeline level 0 row\(s\)"
                              r" deleted")
        self.assertEqual(KB.count(srv, lvl0), 0)
        self.assertRegex(out, r"migrate: pass 1: \d+ kernel\(s\) into \d+ "
                              r"block\(s\)")
        self.assertIn("migrate: done", out)
        self.assertEqual(KB.count(srv, KB.LEFT), 0)
        rows = KB.count(srv, "SELECT count(*) FROM kernels")
        inb = KB.count(srv, "SELECT sum(n) FROM kblocks")
        self.assertEqual(rows + inb, total)
        kept, real = KB.counts_of(srv)  # through the kills too
        self.assertEqual(kept, real)
        # only the running session's partial runs (< 4096 a stream) stay
        running = gens[1]
        self.assertEqual(rows, KB.count(
            srv, "SELECT count(*) FROM kernels k JOIN sessions s ON"
                 " s.id=k.sess WHERE s.sid='%s'" % running.sid))
        self.assertLess(rows, 2 * 4096)
        # run again: nothing to do, nothing doubled
        out = self.migrate(d, db_args)
        self.assertNotIn("pass 1", out)
        self.assertIn("migrate: 0 timeline level 0 row(s) deleted", out)
        self.assertEqual(KB.count(srv, "SELECT sum(n) FROM kblocks"), inb)
        self.assertEqual(KB.count(srv, "SELECT max(version) FROM"
                                       " schema_version"), 37)
        self.assertIn("migrate: 0 kept row(s)", out)
        # the compactor kept the rows of the first KEEP kext keys of each
        # side whose kernels went into blocks; blocks of a database before
        # schema 24 have none, and migrate writes the same ones
        kept_q = "SELECT * FROM kxrow ORDER BY sess, side, dur, seq"
        kept = srv.sql(kept_q)
        self.assertGreater(len(kept), 0)
        self.assertEqual(KB.count(srv, KB.KEPT_MISSING), 0)
        undo(srv, UNDO_24)
        out = self.migrate(d, db_args)
        self.assertIn("migrate: %d kept row(s)" % len(kept), out)
        self.assertEqual(srv.sql(kept_q), kept)
        self.assertEqual(KB.count(srv, KB.KEPT_STALE), 0)

        # a replay is still a duplicate, and the API answers the same
        srv = T.Server(d, KB.BLOCKS)
        self.servers.append(srv)
        for g in gens:
            r = srv.ingest_ok("device", KB.lines(g, "device", 0,
                                                 len(g.lines["device"])))
            self.assertEqual(r["accepted"], 0)
        for g, want in zip(gens, before):
            got = answers(srv, g)
            for p in want:
                self.assertEqual(got[p], want[p], p)

    def test_names_every_block(self):
        """migrate runs passes until one makes and names nothing: with a
        pass naming at most 2 blocks (GPUFL_SERVER_KB_NAME_MAX), ingest's
        5 lone blocks (5 ended sessions, compactor off) are all named by
        the passes that follow (before, migrate stopped after the first
        pass that made no block, 3 left unnamed)."""
        d = os.path.join(self.dir, "data")
        srv = self.server("data", KB.NOCOMPACT)
        for i in range(5):
            g = TL.Gen(app="s%d" % i)
            k = g.name("k%d" % i)
            for j in range(20):
                g.kernel(TL.T0 + 1000 * j, 100 + j, k, stream=1, corr=j + 1)
            KB.ended(g).send(srv)
        srv.stop()
        self.assertEqual(KB.count(srv, "SELECT count(*) FROM kbunnamed"), 5)
        out = self.migrate(d, srv.db_args(), {"GPUFL_SERVER_KB_NAME_MAX": "2"})
        self.assertEqual(KB.count(srv, "SELECT count(*) FROM kbunnamed"), 0,
                         out)
        self.assertRegex(out, r"migrate: pass 3: 0 kernel\(s\) into 0 "
                              r"block\(s\), 1 block\(s\) named")
        self.assertRegex(out, r"migrate: done in \d+ s: 0 kernel\(s\) into"
                              r" 0 block\(s\), 5 block\(s\) named")
        self.assertEqual(KB.count(srv, "SELECT count(DISTINCT sess) FROM"
                                       " kbnames"), 5)

    def test_ops_rows_converted(self):
        """migrate converts `ops` rows (copies, memsets, syncs, allocs,
        frees of a rows store or one before schema 32) into op blocks
        (store_sql_oblocks_compact.c), answers unchanged."""
        rnd = random.Random(3)
        g = TL.flows_session(rnd, 2000)
        d = os.path.join(self.dir, "data")
        srv = self.server("data", KB.ROWS)
        g.send(srv, batch=500)
        base = "/api/v1/sessions/" + g.sid
        paths = [base + "/copies?limit=1000", base + "/calls?limit=1000",
                 base + "/export"]
        before = {p: srv.get(p) for p in paths}
        srv.stop()
        rows = KB.count(srv, "SELECT count(*) FROM ops")
        self.assertEqual(rows, len(g.ops))
        out = self.migrate(d, srv.db_args(), {"GPUFL_SERVER_OB_RUN": "100"})
        self.assertRegex(out, r"migrate: pass 1: %d op\(s\) into %d "
                              r"block\(s\)" % (rows, (rows + 99) // 100))
        self.assertEqual(KB.count(srv, "SELECT count(*) FROM ops"), 0)
        self.assertEqual(KB.count(srv, "SELECT sum(n) FROM oblocks"), rows)
        srv = self.server("data", KB.ROWS)
        for p in paths:
            self.assertEqual(srv.get(p), before[p], p)

    def test_help_and_usage(self):
        out = subprocess.run([T.SERVER, "migrate", "--help"],
                             stdout=subprocess.PIPE, text=True, check=True)
        self.assertIn("gpufl-server migrate", out.stdout)
        r = subprocess.run([T.SERVER, "migrate", "extra", "--data-dir",
                            os.path.join(self.dir, "x")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        self.assertEqual(r.returncode, 2, r.stdout)


if __name__ == "__main__":
    unittest.main()
