"""test_oblocks.py - ops (copies, memsets, syncs) in op blocks
(docs/server.md "Op blocks"): with --kernel-store=blocks a batch's ops are
one oblocks row per session, none in `ops`; a replay that straddles blocks
stores nothing twice and counts as a rows store counts; the copies, calls
and export answers equal a rows store's; and a database whose ops are rows
(written with --kernel-store=rows) reads its rows and the blocks written
after beside them.  OpCompact: the compactor merges many tiny blocks
into full ones and converts `ops` rows into blocks, answers unchanged,
and kill -9 during compaction loses no op.  Real binary on 127.0.0.1, SQLite or (with
GPUFL_TEST_PG_URI_FILE) PostgreSQL.

Run one class per ctest test: python3 test_oblocks.py OpBlocks
"""
import json
import os
import random
import time
import unittest

import srvtest as T
import test_kblocks_migrate as KM
import test_timeline as TL

BLOCKS = ["--kernel-store", "blocks", "--kernel-compact-interval", "1h"]
ROWS = ["--kernel-store", "rows"]
OPS = ("memcpy", "memset", "sync", "alloc", "free")


def count(srv, q):
    return int(srv.sql(q)[0][0] or 0)


def norm(v):
    """An answer without its time of receipt."""
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items() if k != "last_seen"}
    if isinstance(v, list):
        return [norm(x) for x in v]
    return v


def body(g, idx):
    return b"\n".join(json.dumps(g.lines["device"][i],
                                 separators=(",", ":")).encode()
                      for i in idx) + b"\n"


def with_allocs(g, rnd):
    """g with allocs and frees among its lines (the last of the five op
    types flows_session has not)."""
    ts = sorted(e["ts"] for e in g.ops)
    for i in range(120):
        g.op("alloc" if i % 2 == 0 else "free",
             rnd.randrange(ts[0], ts[-1]), 0, bytes=1 << rnd.randrange(10, 30),
             stream=0, corr=0)
    return g


class Base(TL.Base):
    def answers(self, g, lo, hi):
        base = "/api/v1/sessions/" + g.sid
        out = [base, base + "/copies?limit=1000",
               base + "/copies?kind=memcpy&limit=1000",
               base + "/copies?kind=sync&limit=50",
               base + "/copies?kind=alloc&limit=1000",
               base + "/copies?from=%d&to=%d&limit=1000" % (lo, hi),
               base + "/calls?from=%d&to=%d&limit=1000" % (lo, hi),
               base + "/calls?limit=1000",
               base + "/export?from=%d&to=%d" % (lo, hi)]
        return out

    def same_answers(self, a, b, g):
        ts = sorted(e["ts"] for e in g.ops)
        lo, hi = ts[len(ts) // 4], ts[3 * len(ts) // 4]
        for p in self.answers(g, lo, hi):
            self.assertEqual(norm(b.get(p)), norm(a.get(p)), p)
        # pages of 7 following their cursors: every op once, in order
        for srv in (a, b):
            got = T.page_all(srv, "/api/v1/sessions/%s/copies" % g.sid, 7)
            self.assertEqual([x["seq"] for x in got],
                             [e["seq"] for e in sorted(
                                 g.ops, key=lambda e: (e["ts"], e["seq"]))])



class OpBlocks(Base):
    def test_blocks_and_replay_straddling_them(self):
        rnd = random.Random(23)
        g = with_allocs(TL.flows_session(rnd, 3000), rnd)
        dev = g.lines["device"]
        nops = len(g.ops)
        self.assertGreater(nops, 500)
        a = self.server("rows", ROWS)
        b = self.server("blocks", BLOCKS)
        cut = len(dev) * 7 // 10
        for srv in (a, b):
            for lo in range(0, cut, 400):
                srv.ingest_ok("device", body(g, range(lo, min(lo + 400, cut))))
        sess = "(SELECT id FROM sessions WHERE sid='%s')" % g.sid
        inb = count(b, "SELECT sum(n) FROM oblocks")
        self.assertEqual(count(b, "SELECT count(*) FROM ops"), 0)
        self.assertGreaterEqual(count(b, "SELECT count(*) FROM oblocks"), 5)
        self.assertEqual(inb, count(a, "SELECT count(*) FROM ops"))
        # a replay from 30 % to 90 %: straddles the blocks, runs on into new
        # ops; some lines twice within the batch, a stretch in reverse
        idx = list(range(len(dev) * 3 // 10, len(dev) * 9 // 10))
        idx[50:300] = reversed(idx[50:300])
        idx += idx[-200:] + idx[:30]
        res = []
        for srv in (a, b):
            res.append(srv.ingest_ok("device", body(g, idx)))
        self.assertEqual((res[1]["accepted"], res[1]["duplicate"]),
                         (res[0]["accepted"], res[0]["duplicate"]))
        self.assertGreater(res[1]["duplicate"], 0)
        # and the rest, with the first batch again
        for srv in (a, b):
            srv.ingest_ok("device", body(g, range(len(dev) * 9 // 10,
                                                  len(dev))))
            r = srv.ingest_ok("device", body(g, range(0, 400)))
            self.assertEqual(r["accepted"], 0)
        self.assertEqual(count(b, "SELECT count(*) FROM ops"), 0)
        self.assertEqual(count(b, "SELECT sum(n) FROM oblocks"), nops)
        self.assertEqual(count(a, "SELECT count(*) FROM ops"), nops)
        for q in ("SELECT n_ops FROM sessions WHERE id=" + sess,
                  "SELECT n_lines FROM sessions WHERE id=" + sess,
                  "SELECT op_lo, op_hi, first_ts, last_ts FROM sessions",
                  "SELECT * FROM seqr ORDER BY 1, 2, 3"):
            self.assertEqual(b.sql(q), a.sql(q), q)
        self.assertEqual(count(b, "SELECT n_ops FROM sessions WHERE id=" +
                               sess), nops)
        r = b.get("/api/v1/sessions/%s/copies?kind=free&limit=1000" % g.sid)
        self.assertEqual(len(r["items"]), 60)
        self.same_answers(a, b, g)

    def test_range_reads_near_it(self):
        """A late time range's lookup starts near the range in oblocks_t,
        not at the session's first block: the op block rows it reads
        (gpufl_server_oblocks_rows_total) are about the blocks that meet
        the range, not every block before it; the answer is a rows
        store's."""
        rnd = random.Random(77)
        g = TL.flows_session(rnd, 4000)
        dev = g.lines["device"]
        a = self.server("rows", ROWS)
        b = self.server("blocks", BLOCKS)
        send(a, g, 0, len(dev), 500)
        send(b, g, 0, len(dev), 40)
        sess = "(SELECT id FROM sessions WHERE sid='%s')" % g.sid
        nblk = count(b, "SELECT count(*) FROM oblocks WHERE sess=" + sess)
        self.assertGreater(nblk, 60)
        ts = sorted(e["ts"] for e in g.ops)
        lo, hi = ts[len(ts) * 95 // 100], ts[len(ts) * 97 // 100]
        meet = count(b, "SELECT count(*) FROM oblocks WHERE sess=%s AND"
                        " ts_lo <= %d AND ts_hi >= %d" % (sess, hi, lo))
        self.assertLess(meet, nblk // 5)
        name = "gpufl_server_oblocks_rows_total"
        path = "/api/v1/sessions/%s/copies?from=%d&to=%d&limit=1000" % (
            g.sid, lo, hi)
        before = T.metric(b, name)
        got = b.get(path)
        read = T.metric(b, name) - before
        self.assertEqual(norm(got), norm(a.get(path)))
        self.assertGreater(len(got["items"]), 0)
        # each of the page's lookups (at most two) reads the blocks that
        # meet the range and a few beside them; from the session's first
        # block it read every block up to the range's end
        self.assertLessEqual(read, 2 * (meet + 4), (read, meet, nblk))
        # a database of schema 33 (no obspan) gets it filled at open
        want = b.sql("SELECT max(ts_hi - ts_lo) FROM oblocks")
        self.assertEqual(b.sql("SELECT span FROM obspan"), want)
        b.stop()
        KM.undo(b, ["DELETE FROM schema_version WHERE version >= 34",
                    "DROP TABLE obspan"])
        b = self.server("blocks", BLOCKS)
        self.assertEqual(b.sql("SELECT span FROM obspan"), want)
        before = T.metric(b, name)
        self.assertEqual(norm(b.get(path)), norm(got))
        self.assertLessEqual(T.metric(b, name) - before, 2 * (meet + 4))

    def test_rows_before_read_beside_blocks(self):
        """A database whose first ops are rows (a rows store, or one
        written before schema 32) keeps them: served blocks after, every
        reader answers from both."""
        rnd = random.Random(5)
        g = TL.flows_session(rnd, 2000)
        dev = g.lines["device"]
        a = self.server("rows", ROWS)
        half = len(dev) // 2
        for lo in range(0, len(dev), 500):
            a.ingest_ok("device", body(g, range(lo, min(lo + 500, len(dev)))))
        m = self.server("mixed", ROWS)
        for lo in range(0, half, 500):
            m.ingest_ok("device", body(g, range(lo, min(lo + 500, half))))
        m.stop()
        m = self.server("mixed", BLOCKS)
        # the second half, and a replay of the first's end: rows settle it
        for lo in range(half - 300, len(dev), 500):
            m.ingest_ok("device", body(g, range(lo, min(lo + 500, len(dev)))))
        rows, inb = (count(m, "SELECT count(*) FROM ops"),
                     count(m, "SELECT sum(n) FROM oblocks"))
        self.assertGreater(rows, 0)
        self.assertGreater(inb, 0)
        self.assertEqual(rows + inb, len(g.ops))
        self.same_answers(a, m, g)


COMPACT = ["--kernel-store", "blocks", "--kernel-compact-interval", "1s"]
# ops per block (a test knob, store_sql_oblocks_compact.c): full blocks
# of a few hundred ops, not thousands
RUN = 96


def wait_for(srv, q, ok, what, timeout=60):
    deadline = time.time() + timeout
    v = None
    while time.time() < deadline:
        v = count(srv, q)
        if ok(v):
            return v
        time.sleep(0.3)
    raise AssertionError("%s: %r after %d s" % (what, v, timeout))


def send(srv, g, lo, hi, step):
    for i in range(lo, hi, step):
        srv.ingest_ok("device", body(g, range(i, min(i + step, hi))))


class OpCompact(Base):
    ENV = {"GPUFL_SERVER_OB_RUN": str(RUN)}

    def test_tiny_batches_merged(self):
        """Requests of 10 lines (a few ops each, a block each) merged into
        full blocks; every answer a rows store's, before and after a
        replay that meets the merged blocks."""
        rnd = random.Random(41)
        g = with_allocs(TL.flows_session(rnd, 2500), rnd)
        dev = g.lines["device"]
        nops = len(g.ops)
        a = self.server("rows", ROWS)
        send(a, g, 0, len(dev), 500)
        b = self.server("blocks", BLOCKS, env=self.ENV)
        send(b, g, 0, len(dev), 10)
        before = count(b, "SELECT count(*) FROM oblocks")
        self.assertGreater(before, len(dev) // 10 * 3 // 4)
        b.stop()
        b = self.server("blocks", COMPACT, env=self.ENV)
        # full blocks of RUN ops less a batch's: ops / RUN, give or take
        want = nops // (RUN - 20) + 2
        after = wait_for(b, "SELECT count(*) FROM oblocks",
                         lambda v: v <= want, "op blocks")
        print("ops %d: %d blocks -> %d (run %d)" % (nops, before, after, RUN))
        self.assertGreaterEqual(after, nops // RUN)
        self.assertEqual(count(b, "SELECT max(n) FROM oblocks") <= RUN, True)
        self.assertEqual(count(b, "SELECT sum(n) FROM oblocks"), nops)
        self.assertEqual(count(b, "SELECT count(*) FROM ops"), 0)
        self.same_answers(a, b, g)
        # a replay over the merged blocks, and on past the end: nothing
        # twice, counted as the rows store counts
        res = [srv.ingest_ok("device", body(g, range(len(dev) // 3,
                                                     len(dev))))
               for srv in (a, b)]
        self.assertEqual((res[1]["accepted"], res[1]["duplicate"]),
                         (res[0]["accepted"], res[0]["duplicate"]))
        self.assertEqual(res[1]["accepted"], 0)
        self.assertEqual(count(b, "SELECT sum(n) FROM oblocks"), nops)
        self.same_answers(a, b, g)

    def test_rows_converted(self):
        """A database whose ops are rows (a rows store, or one from before
        schema 32), served with blocks: its rows become blocks, `ops`
        empty, every answer as before."""
        rnd = random.Random(8)
        g = TL.flows_session(rnd, 2000)
        dev = g.lines["device"]
        # asked the same twice (same_answers), its data unchanged: once
        a = T.Ref(self.server("rows", ROWS))
        send(a, g, 0, len(dev), 500)
        m = self.server("mixed", ROWS)
        send(m, g, 0, len(dev) * 2 // 3, 500)
        rows = count(m, "SELECT count(*) FROM ops")
        self.assertGreater(rows, 2 * RUN)
        m.stop()
        m = self.server("mixed", COMPACT, env=self.ENV)
        send(m, g, len(dev) * 2 // 3 - 200, len(dev), 10)
        wait_for(m, "SELECT count(*) FROM ops", lambda v: v == 0,
                 "ops rows left")
        self.assertEqual(count(m, "SELECT sum(n) FROM oblocks"), len(g.ops))
        self.assertGreaterEqual(count(m, "SELECT count(*) FROM oblocks"),
                                rows // RUN)
        self.same_answers(a, m, g)
        m.stop()
        # and read by a rows server (no compactor): the blocks alone
        m = self.server("mixed", ROWS)
        self.same_answers(a, m, g)

    def test_run_after_many_full_blocks(self):
        """A run of small blocks that more than a look's page of full ones
        come before (OB_LOOK_ROWS, 64), after a small block alone, is
        merged: the look for a run goes on past the page (PostgreSQL
        sends a statement's whole result, so it reads a page at a time)."""
        env = {"GPUFL_SERVER_OB_RUN": "4"}  # small: fewer than 2 ops
        sizes = [1] + [2] * 70 + [1, 1, 1]
        g = TL.Gen(app="far")
        t = TL.T0
        for n in sizes:
            for _ in range(n):
                t += 1000
                g.op("memcpy", t, 300, stream=7, kind="htod", bytes=4096)
        dev = g.lines["device"]
        b = self.server("blocks", BLOCKS, env=env)
        at = next(i for i, e in enumerate(dev) if e["type"] == "memcpy")
        send(b, g, 0, at + 1, at + 1)
        for n in sizes[1:]:
            send(b, g, at + 1, at + 1 + n, n)
            at += n
        q = "SELECT n FROM oblocks ORDER BY seq_lo"
        self.assertEqual([int(r[0]) for r in b.sql(q)], sizes)
        b.stop()
        b = self.server("blocks", COMPACT, env=env)
        want = [1] + [2] * 70 + [3]
        wait_for(b, "SELECT count(*) FROM oblocks",
                 lambda v: v == len(want), "op blocks", timeout=30)
        self.assertEqual([int(r[0]) for r in b.sql(q)], want)

    def test_kill9_during_compaction_loses_nothing(self):
        """kill -9 inside the compactor's transactions (a pause between a
        block's insert and its sources' delete), over and over: every op
        read back once, and a replay of all accepted as nothing."""
        rnd = random.Random(19)
        d = os.path.join(self.dir, "killed")
        gens = [TL.flows_session(rnd, 1200) for _ in range(4)]
        srv = self.server("killed", ROWS)
        for g in gens[:2]:
            send(srv, g, 0, len(g.lines["device"]), 400)
        srv.stop()
        srv = self.server("killed", BLOCKS, env=self.ENV)
        for g in gens[2:]:
            send(srv, g, 0, len(g.lines["device"]), 10)
        srv.stop()
        env = dict(self.ENV, GPUFL_SERVER_OB_PAUSE_MS="500")
        # rows, or more small blocks than a session's last (each may
        # keep one: a converted tail, a run of one)
        left = ("SELECT (SELECT count(*) FROM ops) * 100 + (SELECT count(*)"
                " FROM oblocks WHERE n < %d)" % (RUN // 2))
        kills = mid = 0
        srv = self.server("killed", COMPACT, env=env)
        for _ in range(6):
            time.sleep(rnd.uniform(1.2, 2.2))
            srv.kill()
            kills += 1
            mid += count(srv, left) > len(gens)
            srv = self.server("killed", COMPACT, env=env)
        print("kills while compaction had work left: %d of %d" % (mid, kills))
        self.assertGreater(mid, 0)
        wait_for(srv, left, lambda v: v <= len(gens), "work left",
                 timeout=120)
        total = sum(len(g.ops) for g in gens)
        self.assertEqual(count(srv, "SELECT sum(n) FROM oblocks"), total)
        for g in gens:
            got = T.page_all(srv, "/api/v1/sessions/%s/copies" % g.sid)
            self.assertEqual(sorted(x["seq"] for x in got),
                             sorted(e["seq"] for e in g.ops))
            r = srv.ingest_ok("device", body(g, range(len(g.lines["device"]))))
            self.assertEqual(r["accepted"], 0)
        self.assertEqual(count(srv, "SELECT sum(n) FROM oblocks"), total)


if __name__ == "__main__":
    unittest.main()
