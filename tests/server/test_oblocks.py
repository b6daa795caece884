"""test_oblocks.py - ops (copies, memsets, syncs) in op blocks
(docs/server.md "Op blocks"): with --kernel-store=blocks a batch's ops are
one oblocks row per session, none in `ops`; a replay that straddles blocks
stores nothing twice and counts as a rows store counts; the copies, calls
and export answers equal a rows store's; and a database whose ops are rows
(written with --kernel-store=rows) reads its rows and the blocks written
after beside them.  Real binary on 127.0.0.1, SQLite or (with
GPUFL_TEST_PG_URI_FILE) PostgreSQL.

Run one class per ctest test: python3 test_oblocks.py OpBlocks
"""
import json
import random
import unittest

import srvtest as T
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


class OpBlocks(TL.Base):
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


if __name__ == "__main__":
    unittest.main()
