"""test_kblocks_tl0.py - level 0 of the timeline and of the API call
summary computed when asked, for kernel blocks (docs/server.md "Kernel
blocks": timeline, calls).  Tl0: with --kernel-store=blocks
ingest writes no tl level 0, and a timeline window at that resolution
(2^18 to 2^20 ns a pixel, or a zoomed-in window too dense to read raw)
answers exactly as a rows server's stored level 0 does - from blocks only,
from blocks and a hot tail of rows with a session half ingested as rows,
and for a session ingested as rows read by a blocks server.  Past
GPUFL_SERVER_TL0_MAX kernels the answer comes from level 1 and says so.
Real binary on 127.0.0.1, SQLite or (with GPUFL_TEST_PG_URI_FILE)
PostgreSQL.

Capi0: the same of /calls (class Capi0).  Tl1: on both databases ingest
writes the timeline's level 1 packed (tlpack).  TlPack and CapiPack: on
PostgreSQL the timeline's and the API call summary's buckets packed by
the maintenance pass (tlpack, capipack) answer as their rows.

Run: python3 test_kblocks_tl0.py -v Tl0 (or Capi0, Tl1, TlPack, CapiPack)
"""
import json
import os
import random
import subprocess
import threading
import time
import unittest

import srvtest as T
import test_kblocks as KB
import test_timeline as TL

L0 = 1 << 18
L1 = 1 << 20
LONG_NS = 1023 << 18  # RL_TL_LONG_NS
RUN = 377  # kernels per compacted block (GPUFL_SERVER_KB_RUN)


def tl0_session(rnd):
    """Kernels on 2 GPUs x 2 streams over ~4 s, durations distinct (a
    bucket's top kernel is never a tie) but in the burst: gaps and
    durations from 0 to 25 ms, some concurrent in a lane, a burst of
    20 000 in 60 ms (denser than a window may be read raw; the same
    durations under other names, ties for the top), and long kernels: one 0.6 s (its busy
    time in its first level-0 bucket, kept in klong), one just over
    RL_TL_LONG_NS aligned to a bucket (in klong, yet spread at level 0)."""
    g = TL.Gen()
    names = [g.name(*TL.ADD), g.name(*TL.FILL), g.name(TL.GEMM)]
    used = set()

    def uniq(d):
        while d in used:
            d += 1
        used.add(d)
        return d

    ks = []
    for li, (d, s) in enumerate([(0, 7), (0, 8), (1, 7), (1, 8)]):
        t = TL.T0 + rnd.randrange(0, 10 ** 6)
        for i in range(1500):
            t += rnd.choice([0, 1000, 30000, 200000, 1500000])
            dur = uniq(rnd.choice([0, 900, 40000, 262144, 2 * 10 ** 6,
                                   25 * 10 ** 6]))
            ks.append((t, dur, names[(li + i) % 3], d, s))
            if rnd.random() < 0.05:
                ks.append((t + 17, uniq(dur // 2 + 3), names[0], d, s))
            t += dur // (1 + rnd.randrange(3))
    ks.append((TL.T0 + 5 * 10 ** 8 + 123, uniq(6 * 10 ** 8), names[2], 1, 8))
    b = (TL.T0 + 9 * 10 ** 8) // L0 * L0
    ks.append((b, uniq(LONG_NS + 1), names[1], 0, 8))
    t = TL.T0 + 12 * 10 ** 8
    for i in range(20000):
        # equal durations of other names: ties for a bucket's top
        ks.append((t + i * 3000, 2000 + i % 60 // 3 * 100, names[i % 3], 0,
                   7))
    # sent in time order, as an agent does
    for ts, dur, n, d, s in sorted(ks, key=lambda k: k[0]):
        g.kernel(ts, dur, n, dev=d, stream=s, corr=len(g.kernels) + 1)
    return g


def windows(g):
    """(path suffix, expect level 0) of timeline windows over g."""
    ts = sorted(k[3] for k in g.kernels)
    lo, hi = ts[0], max(k[3] + k[4] for k in g.kernels)
    out = []
    # level 0: 2^18 <= bw < 2^20 (width 300: windows of 79 to 314 ms)
    for t in range(lo - 3 * 10 ** 7, hi, 61 * 10 ** 6):
        out.append(("?from=%d&to=%d&width=300" % (t, t + 10 ** 8), True))
    for t in range(lo, hi, 250 * 10 ** 6):
        out.append(("?from=%d&to=%d&width=1000" % (t, t + 5 * 10 ** 8), True))
    # the burst zoomed in: too dense to read raw, level 0 as its summary
    b = TL.T0 + 12 * 10 ** 8
    out += [("?from=%d&to=%d&width=1000" % (b - 10 ** 6, b + 6 * 10 ** 7),
             True),
            ("?from=%d&to=%d&width=700&exact=5000" % (b + 7777, b + 58 * 10 ** 6),
             True),
            ("?from=%d&to=%d&width=300&lanes=0:7,1:8" % (b - 10 ** 7,
                                                         b + 9 * 10 ** 7),
             True),
            # the long kernels' ends, and a level-1 and a raw window
            ("?from=%d&to=%d&width=300" % (TL.T0 + 10 ** 9,
                                           TL.T0 + 11 * 10 ** 8), True),
            ("?from=%d&to=%d&width=400" % (TL.T0 + 10 ** 9 + 10 ** 8,
                                           TL.T0 + 13 * 10 ** 8), True),
            ("?width=800", False),
            ("?from=%d&to=%d&width=500" % (lo + 10 ** 6, lo + 3 * 10 ** 6),
             False)]
    return out


def ask(srv, sid, suffix):
    st, _, data = srv.req("GET", "/api/v1/sessions/%s/timeline%s"
                          % (sid, suffix))
    return st, KB.norm(json.loads(data or b"null"))


# What bad_pack_and_late_rows needs of a table PostgreSQL's packer packs:
# its packs' keys, the rows table and lane column, a late row of a pack's
# key k (one bucket past b0), and the warning's words.
TL_PACKED = {
    "keys": "SELECT sess, lvl, lane, b0 FROM tlpack ORDER BY 1, 2, 3, 4",
    "packs": "tlpack", "rows": "tl", "lane": "lane",
    "late": lambda k: "INSERT INTO tl VALUES(%s, %s, %s, %d, 1, 5, 1, 5)"
    % (k[0], k[1], k[2], int(k[3]) + 1),
    "what": "timeline", "lane_word": "lane",
}
CAPI_PACKED = {
    "keys": "SELECT sess, lvl, tid, b0 FROM capipack WHERE lvl=1"
            " ORDER BY 1, 2, 3, 4",
    "packs": "capipack", "rows": "capi", "lane": "tid",
    "late": lambda k: "INSERT INTO capi VALUES(%s, %s, %d, %s, 1, 5)"
    % (k[0], k[1], int(k[3]) + 1, k[2]),
    "what": "API call summary", "lane_word": "thread",
}


def bad_pack_and_late_rows(case, b, kind):
    """b (packed, stopped) with its first pack of kind truncated and a late
    row beside it and beside its last pack, started again with debug logs:
    the packer folds the last one's row in, leaves the bad one's, and warns
    (checked).  The running server and the bad pack's key."""
    keys = b.sql(kind["keys"])
    case.assertGreater(len(keys), 2)
    bad, later = keys[0], keys[-1]
    where = "sess=%%s AND lvl=%%s AND %s=%%s AND b0=%%s" % kind["lane"]
    KB.exec_sql(b, "UPDATE %s SET data=substring(data from 1 for 3)"
                " WHERE " % kind["packs"] + where % tuple(bad))
    # late rows beside both packs (their ranges hold no rows: packed)
    rows = "SELECT count(*) FROM %s WHERE sess=%%s AND lvl=%%s AND" \
           " %s=%%s AND b >> 7 << 7 = %%s" % (kind["rows"], kind["lane"])
    for k in (bad, later):
        case.assertEqual(KB.count(b, rows % tuple(k)), 0)
        KB.exec_sql(b, kind["late"](k))
    b = case.server("blocks", KB.BLOCKS + ["--log-level", "debug"])
    deadline = time.time() + 60
    while KB.count(b, rows % tuple(later)) and time.time() < deadline:
        time.sleep(0.2)
    case.assertEqual(KB.count(b, rows % tuple(later)), 0,
                     "the range after the bad pack folded in")
    case.assertEqual(KB.count(b, rows % tuple(bad)), 1)
    want = "1 %s range(s) have a pack that does not decode" % kind["what"]
    while want not in b.output() and time.time() < deadline:
        time.sleep(0.2)
    case.assertIn(want, b.output())
    case.assertIn(("session %s level %s " + kind["lane_word"] +
                   " %s b0 %s: its pack does not decode") % tuple(bad),
                  b.output())
    return b, bad


def kill_and_resend(case, g, seed):
    """A server killed -9 at a random moment while g's batches go in,
    started again and sent all of g: that server."""
    c = case.server("killed", KB.NOCOMPACT)
    th = threading.Thread(target=lambda: quiet(g.send, c, batch=300))
    th.start()
    time.sleep(random.Random(seed).uniform(0.3, 0.9))
    c.kill()
    th.join()
    c = case.server("killed", KB.NOCOMPACT)
    g.send(c, batch=3000)
    return c


def quiet(fn, *a, **kw):
    """fn, its failure ignored (a server killed under it)."""
    try:
        fn(*a, **kw)
    except Exception:  # noqa: BLE001 - any: the server is gone
        pass


def level0_rows(srv):
    return KB.count(srv, "SELECT count(*) FROM tl WHERE lvl=0")


def mixed_server(test, g, n):
    """A server "mixed" whose first n/2 kernels of g were ingested by a rows
    server, then compacted into blocks of RUN with a hot tail of rows left,
    and the rest ingested into blocks."""
    c = test.server("mixed")
    half = n // 2
    for lo in range(0, half, 3000):
        c.ingest_ok("device", KB.device_lines(g, range(lo, min(lo + 3000, half))))
    c.stop()
    c = test.server("mixed", KB.BLOCKS, env={"GPUFL_SERVER_KB_RUN": str(RUN)})
    KB.wait_settled(c, RUN)
    for lo in range(half, n, 3000):
        c.ingest_ok("device", KB.device_lines(g, range(lo, min(lo + 3000, n))))
    return c


class Tl0(KB.Base):
    def same(self, want, srv, g, what):
        n0 = 0
        for suffix, l0 in windows(g):
            st, got = ask(srv, g.sid, suffix)
            self.assertEqual(st, 200, (what, suffix))
            self.assertEqual(got, want[suffix], (what, suffix))
            if l0:
                self.assertEqual(int(got["level"]), L0, (what, suffix))
                self.assertTrue(got["lanes"], (what, suffix))
                n0 += 1
        return n0

    def test_level0_from_kernels(self):
        g = tl0_session(random.Random(2300))
        dev = g.lines["device"]
        a = self.server("rows")
        b = self.server("blocks", KB.NOCOMPACT)
        g.send(a, batch=3000)
        g.send(b, batch=3000)
        want = {}
        for suffix, l0 in windows(g):
            st, want[suffix] = ask(a, g.sid, suffix)
            self.assertEqual(st, 200, suffix)
        # blocks: no level 0 at rest, the rest of tl as rows'
        self.assertGreater(level0_rows(a), 1000)
        self.assertEqual(level0_rows(b), 0)
        self.assertEqual(KB.tl_rows(b), KB.tl_rows(a))
        self.assertEqual(KB.count(b, "SELECT count(*) FROM kernels"), 0)
        self.assertGreaterEqual(self.same(want, b, g, "blocks"), 20)

        # half ingested as rows, compacted into blocks of RUN with a hot
        # tail of rows left, the rest ingested into blocks: windows over
        # blocks, rows and new blocks at once
        c = mixed_server(self, g, len(dev))
        self.assertGreater(KB.count(c, "SELECT count(*) FROM kernels"), 0)
        self.assertGreater(level0_rows(c), 0)
        self.assertLess(level0_rows(c), level0_rows(a))
        self.same(want, c, g, "mixed")

        # a session ingested as rows, read by a blocks server (no blocks)
        a.stop()
        a2 = self.server("rows", KB.NOCOMPACT)
        self.assertEqual(KB.count(a2, "SELECT count(*) FROM kblocks"), 0)
        self.same(want, a2, g, "rows under blocks")

        # past the cap: level 1, said in the answer, its counts those of
        # the level-1 buckets the window meets
        b.stop()
        b = self.server("blocks", KB.NOCOMPACT,
                        env={"GPUFL_SERVER_TL0_MAX": "10000"})
        t = TL.T0 + 12 * 10 ** 8
        st, r = ask(b, g.sid, "?from=%d&to=%d&width=300" % (t, t + 10 ** 8))
        self.assertEqual(st, 200)
        self.assertEqual(int(r["level"]), L1)
        started = sum(bk[1] for ln in r["lanes"] for bk in ln["buckets"])
        b0, b1 = t // L1, (t + 10 ** 8 - 1) // L1
        self.assertEqual(started, sum(1 for k in g.kernels
                                      if b0 <= k[3] // L1 <= b1))
        # a window holding fewer still computes level 0
        t = TL.T0 + 2 * 10 ** 9
        suffix = "?from=%d&to=%d&width=300" % (t, t + 10 ** 8)
        st, r = ask(b, g.sid, suffix)
        self.assertEqual((st, int(r["level"])), (200, L0))
        self.assertEqual(r, ask(a2, g.sid, suffix)[1])


def pack_windows(g):
    """Timeline windows over g read from levels 1 to 3 (2^20 to 2^32 ns a
    pixel), unaligned, over the session's edges, some of two lanes."""
    ts = sorted(k[3] for k in g.kernels)
    lo, hi = ts[0], max(k[3] + k[4] for k in g.kernels)
    out = ["?width=2000", "?width=800", "?width=300", "?width=100",
           "?width=2000&lanes=0:7,1:8"]
    for width, span in ((1000, 2 * 10 ** 9), (300, 10 ** 9),
                        (500, 3 * 10 ** 9), (100, 6 * 10 ** 9)):
        for t in range(lo - 10 ** 8, hi, span // 3 + 12345):
            out.append("?from=%d&to=%d&width=%d" % (t, t + span, width))
    return out


# rows of tl in ranges the packer takes (levels 1-3, range of 128 buckets
# ended at or before the session's last event, or the session ended:
# store_sql_tlpack.c)
PACKABLE = ("SELECT count(*) FROM tl t JOIN sessions s ON s.id=t.sess"
            " WHERE t.lvl BETWEEN 1 AND 3 AND (s.state <> 'running' OR"
            " (((t.b >> 7) + 1) << CAST(23 + 4 * t.lvl AS INTEGER))"
            " <= s.last_ts)")


L1_ROWS = "SELECT count(*) FROM tl WHERE lvl=1"


def l1_buckets(srv):
    """Level 1's buckets, rows and packs together (KB.tl_rows): {(sess,
    lvl, lane, b): [n, busy, top_name, top_dur]}."""
    return {tuple(int(c) for c in r[:4]): [int(c) for c in r[4:]]
            for r in KB.tl_rows(srv, "lvl=1")}


class TlPack(KB.Base):
    """PostgreSQL (schema 29): the maintenance pass packs each range of 128
    timeline buckets of levels 1-3 its session has moved past into one
    tlpack row, and the timeline answers as from the rows - packed, with a
    late kernel's row beside its pack, once that row is folded in, and
    after a kill -9 while packing; tl with its packs unpacked holds what a
    rows server's tl holds."""

    def settle(self, srv, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if KB.count(srv, PACKABLE) == 0 and \
                    KB.count(srv, "SELECT count(*) FROM tlpack") > 0:
                return
            time.sleep(0.2)
        raise AssertionError("not packed in %d s" % timeout)

    def same(self, a, b, g, wins, what):
        for suffix in wins:
            st, want = ask(a, g.sid, suffix)
            self.assertEqual(st, 200, (what, suffix))
            st, got = ask(b, g.sid, suffix)
            self.assertEqual(st, 200, (what, suffix))
            self.assertEqual(got, want, (what, suffix))
        got, want = KB.tl_rows(b), KB.tl_rows(a)
        if got != want:  # the first rows that differ, not difflib's 10^4
            d = [(x, y) for x, y in zip(got, want) if x != y][:3]
            self.fail("%s: tl %d rows != %d: %s" % (what, len(got), len(want),
                                                      d))

    def test_packed_answers_equal_rows(self):
        if not T.pg_base():
            self.skipTest("packing is PostgreSQL's (docs/server.md)")
        g = tl0_session(random.Random(2301))
        wins = pack_windows(g)
        a = self.server("rows")
        b = self.server("blocks", KB.BLOCKS)
        g.send(a, batch=3000)
        g.send(b, batch=3000)
        self.settle(b)
        # level 1 is packed at ingest (store_sql_tl1_pg.c), levels 2-3 by
        # the packer (settle)
        self.assertEqual(KB.count(b, L1_ROWS), 0)
        self.same(a, b, g, wins, "packed")

        # late kernels into packed ranges (every lane, level 1's first
        # ranges): a row again beside the pack, the answer adds both
        n0 = len(g.kernels)
        t0 = min(k[3] for k in g.kernels)
        for i, (d, s) in enumerate([(0, 7), (0, 8), (1, 7), (1, 8)]):
            for j in range(3):
                g.kernel(t0 + 10 ** 7 * (1 + 3 * i + j) + 11, 3 * 10 ** 7 + j,
                         g.kernels[0][5], dev=d, stream=s, corr=n0 + 4 * i + j)
        late = KB.device_lines(g, range(len(g.lines["device"]) - 12,
                                        len(g.lines["device"])))
        # no packer pass meanwhile: the rows stay beside their packs
        b.stop()
        b = self.server("blocks", KB.NOCOMPACT)
        a.ingest_ok("device", late)
        b.ingest_ok("device", late)
        beside = ("SELECT count(*) FROM tl t JOIN tlpack p ON p.sess=t.sess"
                  " AND p.lvl=t.lvl AND p.lane=t.lane AND p.b0=t.b >> 7 << 7")
        # level 1's late buckets went into their packs; 2-3's are rows
        self.assertEqual(KB.count(b, beside + " WHERE t.lvl=1"), 0)
        self.assertGreater(KB.count(b, beside), 0)
        self.same(a, b, g, wins, "late rows beside packs")
        b.stop()
        b = self.server("blocks", KB.BLOCKS)
        self.settle(b)
        self.assertEqual(KB.count(b, beside), 0)
        self.same(a, b, g, wins, "late rows folded in")

        # kill -9 while the packer runs (a session of its own, packed
        # from its first pass): each range its rows or its pack
        g2 = tl0_session(random.Random(2302))
        a2 = self.server("rows2")
        c = self.server("killed", KB.BLOCKS)
        g2.send(a2, batch=3000)
        g2.send(c, batch=3000)
        time.sleep(random.Random(7).uniform(0.8, 1.4))
        c.kill()
        c = self.server("killed", KB.BLOCKS)
        self.settle(c)
        self.same(a2, c, g2, pack_windows(g2), "after kill -9")

    def test_undecodable_pack_does_not_stop_packing(self):
        """A pack that does not decode (a corrupted database) is passed by
        the packer, not a stop: the late rows of a range after it (in key
        order, the same transaction) are folded in, its own rows stay
        rows, the log says so, and a window over it answers an error
        (one bad pack rolled every pass back: nothing after it packed)."""
        if not T.pg_base():
            self.skipTest("packing is PostgreSQL's (docs/server.md)")
        g = tl0_session(random.Random(2303))
        b = self.server("blocks", KB.BLOCKS)
        g.send(b, batch=3000)
        self.settle(b)
        b.stop()
        b, bad = bad_pack_and_late_rows(self, b, TL_PACKED)
        # the full range reads level 1, the bad pack's: an error, no crash
        st, _, body = b.req("GET", "/api/v1/sessions/%s/timeline?width=2000"
                            % g.sid)
        self.assertEqual(st, 500, body)
        self.assertIn("error", json.loads(body))
        st, _, _ = b.req("GET", "/api/v1/sessions")
        self.assertEqual(st, 200)


def calls_windows(calls):
    """/calls windows at the widths that read the API call summary's level
    0 (columns of 2^21 to 2^23 ns), unaligned, some over the long calls'
    ends and the session's edges."""
    lo = min(c[2] for c in calls)
    hi = max(c[2] + c[3] for c in calls)
    out = []
    for width, span in ((1000, 3 * 10 ** 9), (300, 10 ** 9), (100, 5 * 10 ** 8),
                        (1000, 8 * 10 ** 9), (64, 2 * 10 ** 8)):
        for t in range(lo - 10 ** 8, hi, span // 2 + 12345):
            out.append("?from=%d&to=%d&width=%d&limit=100" % (t, t + span,
                                                               width))
    return out


def diff(got, want):
    """Where two /calls answers differ, in short."""
    if set(got) != set(want):
        return "keys %s != %s" % (sorted(got), sorted(want))
    for k in got:
        if k == "threads" and got[k] != want[k]:
            for g, w in zip(got[k], want[k]):
                if g != w:
                    gb = {b[0]: b for b in g.get("buckets", [])}
                    wb = {b[0]: b for b in w.get("buckets", [])}
                    cols = sorted(c for c in set(gb) | set(wb)
                                  if gb.get(c) != wb.get(c))[:5]
                    return "tid %s columns %s: %s != %s" % (
                        g.get("tid"), cols, [gb.get(c) for c in cols],
                        [wb.get(c) for c in cols])
            return "threads %d != %d" % (len(got[k]), len(want[k]))
        if got[k] != want[k]:
            return "%s: %s != %s" % (k, got[k], want[k])
    return "?"


def calls_ask(srv, sid, suffix):
    st, _, data = srv.req("GET", "/api/v1/sessions/%s/calls%s" % (sid, suffix))
    return st, json.loads(data or b"null")


def capi0_rows(srv):
    """capi's level-0 buckets, rows and packs (SQLite's ingest writes that
    level packed: store_sql_capi.c)."""
    return len(KB.capi_rows(srv, "lvl = 0"))


CAPI0_ROWS = "SELECT count(*) FROM capi WHERE lvl=0"


def capi0_unpack(srv):
    """srv (stopped) as a database from before SQLite packed capi's level
    0: its level-0 packs made rows again; those rows."""
    rows = KB.capi_rows(srv, "lvl = 0")
    KB.exec_sql(srv, "DELETE FROM capipack WHERE lvl=0")
    for i in range(0, len(rows), 500):
        KB.exec_sql(srv, "INSERT INTO capi VALUES " + ",".join(
            "(%s)" % ",".join(r) for r in rows[i:i + 500]))
    return rows


def l1_shift(srv):
    """log2 of the buckets a level-1 pack holds: SQLite's are 64 (a pack
    within a 4 KiB page's leaf: store_sql_writer_int.h SQ_TL1_SHIFT_LITE),
    PostgreSQL's 128 as its packer's."""
    return 7 if srv.pgdb else 6


class Tl1(KB.Base):
    """Both databases (issue 23; docs/server.md "Level 1 written packed"):
    ingest writes the timeline's level 1 into packs, a range of 128
    buckets a tlpack row, merged with the stored pack each batch."""

    def answers(self, srv, g, wins):
        out = []
        for suffix in wins:
            st, got = ask(srv, g.sid, suffix)
            self.assertEqual(st, 200, suffix)
            out.append(got)
        return out

    def test_level1_packed_at_ingest(self):
        """Issue 23: ingest merges a batch's level-1 buckets into their
        ranges' packs (no tl row, no packer pass): on PostgreSQL the
        timeline answers as a SQLite server's; a replay adds nothing; a
        kill -9 during ingest and the lines sent again lose and double
        nothing; a database from before (level 1 as rows) answers the same
        as its session goes on into packs, and (PostgreSQL) after the
        packer folds the rows.  The packs' values against the kernels
        they came from: test_srv_tlrun."""
        g = tl0_session(random.Random(2304))
        wins = pack_windows(g)
        ref = self.server("lite", KB.NOCOMPACT + [
            "--db", "sqlite:" + os.path.join(self.dir, "lite.db")])
        g.send(ref, batch=3000)
        want = self.answers(ref, g, wins)
        ref.stop()

        b = self.server("packed", KB.NOCOMPACT)
        g.send(b, batch=3000)
        self.assertEqual(KB.count(b, L1_ROWS), 0)
        self.assertGreater(KB.count(b, "SELECT count(*) FROM tlpack"
                                       " WHERE lvl=1"), 10)
        self.assertEqual(self.answers(b, g, wins), want, "packed at ingest")
        packed = KB.tl_rows(b)
        g.send(b, batch=3000)  # every line a duplicate
        self.assertEqual(KB.tl_rows(b), packed, "replay")
        self.assertEqual(self.answers(b, g, wins), want, "replay")
        b.stop()

        # kill -9 while batches go in, then everything sent again
        c = kill_and_resend(self, g, 8)
        self.assertEqual(KB.tl_rows(c), packed, "after kill -9")
        self.assertEqual(self.answers(c, g, wins), want, "after kill -9")
        c.stop()

        # a database from before: the first half's level 1 as rows, no
        # level-1 packs; the second half goes on into packs beside them
        d = self.server("old", KB.NOCOMPACT)
        half = len(g.lines["device"]) // 2
        d.ingest_ok("device", KB.device_lines(g, range(half)))
        d.stop()
        rows = KB.tl_rows(d, "lvl=1")
        self.assertGreater(len(rows), 100)
        KB.exec_sql(d, "DELETE FROM tlpack WHERE lvl=1")
        for i in range(0, len(rows), 500):
            KB.exec_sql(d, "INSERT INTO tl VALUES " + ",".join(
                "(%s)" % ",".join(str(c) for c in r) for r in rows[i:i + 500]))
        d = self.server("old", KB.NOCOMPACT)
        d.ingest_ok("device", KB.device_lines(
            g, range(half, len(g.lines["device"]))))
        g.send(d, batch=3000)  # the scope stream; the device lines again
        self.assertEqual(KB.count(d, L1_ROWS), len(rows))
        sh = l1_shift(d)
        beside = ("SELECT count(*) FROM tl t JOIN tlpack p ON p.sess=t.sess"
                  " AND p.lvl=t.lvl AND p.lane=t.lane AND p.b0=t.b >> %d << %d"
                  " WHERE t.lvl=1" % (sh, sh))
        self.assertGreater(KB.count(d, beside), 0)
        self.assertEqual(KB.tl_rows(d), packed, "rows from before")
        self.assertEqual(self.answers(d, g, wins), want, "rows from before")
        d.stop()
        if not d.pgdb:
            return  # SQLite has no packer to fold the rows
        d = self.server("old", KB.BLOCKS)
        TlPack.settle(self, d)
        self.assertEqual(KB.count(d, L1_ROWS), 0)
        self.assertEqual(KB.tl_rows(d), packed, "rows folded in")
        self.assertEqual(self.answers(d, g, wins), want, "rows folded in")

    def test_ingest_meets_undecodable_level1_pack(self):
        """Issue 23: a stored level-1 pack that does not decode (a corrupted
        database) met by ingest's merge is left as it is, and the batch's
        buckets of its range go as rows - counted, nothing lost: every
        level-1 bucket of the range holds as rows what the second half of
        the session added (the reference's count less the first half's),
        every other bucket equals the reference's, and the pack's bytes
        are untouched."""
        g = tl0_session(random.Random(2305))
        dev = g.lines["device"]
        half = len(dev) // 2
        ref = self.server("ref", KB.NOCOMPACT)
        ref.ingest_ok("device", KB.device_lines(g, range(len(dev))))
        full = l1_buckets(ref)
        ref.stop()

        b = self.server("bad", KB.NOCOMPACT)
        b.ingest_ok("device", KB.device_lines(g, range(half)))
        first = l1_buckets(b)
        self.assertEqual(KB.count(b, L1_ROWS), 0)

        sh = l1_shift(b)

        def rng(k):
            return (k[0], k[1], k[2], k[3] >> sh << sh)
        # a packed range the second half adds to
        grown = sorted({rng(k) for k in full
                        if full[k][0] != first.get(k, [0])[0]} &
                       {rng(k) for k in first})
        self.assertTrue(grown, "no range of the first half grows")
        bad = grown[0]
        where = "sess=%d AND lvl=%d AND lane=%d AND b0=%d" % bad
        KB.exec_sql(b, "UPDATE tlpack SET data=substr(data, 1, 3)"
                    " WHERE " + where)
        hexf = "encode(data, 'hex')" if b.pgdb else "hex(data)"
        cut = b.sql("SELECT " + hexf + " FROM tlpack WHERE " + where)
        self.assertEqual(len(cut), 1)
        b.stop()

        b = self.server("bad", KB.NOCOMPACT)
        b.ingest_ok("device", KB.device_lines(g, range(half, len(dev))))
        self.assertEqual(b.sql("SELECT " + hexf + " FROM tlpack"
                               " WHERE " + where), cut, "the pack untouched")
        rows = b.sql("SELECT sess, lvl, lane, b, n FROM tl WHERE lvl=1")
        got = {tuple(int(c) for c in r[:4]): int(r[4]) for r in rows}
        self.assertTrue(got, "the range's buckets went as rows")
        for k, n in got.items():
            self.assertEqual(rng(k), bad, "a row outside the bad range")
            self.assertEqual(n, full[k][0] - first.get(k, [0])[0], k)
        want = {k: full[k][0] - first.get(k, [0])[0] for k in full
                if rng(k) == bad and full[k][0] != first.get(k, [0])[0]}
        self.assertEqual(got, want, "every bucket the second half added")
        # the rest (the bad pack dropped: tl_rows would not decode it),
        # rows and packs read together: the reference's
        KB.exec_sql(b, "DELETE FROM tlpack WHERE " + where)
        rest = {k: v for k, v in l1_buckets(b).items() if rng(k) != bad}
        self.assertEqual(rest, {k: v for k, v in full.items()
                                if rng(k) != bad})
        b.stop()


class Capi0(KB.Base):
    """On PostgreSQL, with --kernel-store=blocks ingest writes no level 0
    of the API call summary (capi), and /calls at that resolution answers
    exactly as a rows server's stored level 0 does: from blocks only, for
    a session whose level 0 is stored in part (ingested by a rows server,
    then by a blocks one, compacted) and for a rows session read by a
    blocks server; migrate deletes the stored rows.  Past
    GPUFL_SERVER_TL0_MAX kernels and ops level 1 answers and rollup_ns
    says so.  On SQLite level 0 stays written (packed, CapiLite) and read
    (docs/server.md says why): the same buckets as a rows server's, migrate
    keeps them and says nothing of them, the cap does not apply; the
    answers equal the rows server's on both."""

    def same(self, want, srv, sid, what):
        n0 = 0
        for suffix in want:
            st, got = calls_ask(srv, sid, suffix)
            self.assertEqual(st, 200, (what, suffix))
            if got != want[suffix]:  # not the whole answers: too long
                self.fail("%s %s: %s" % (what, suffix, diff(got,
                                                            want[suffix])))
            n0 += int(got.get("rollup_ns", 0)) == L0
        return n0

    def test_level0_from_calls(self):
        g = TL.capi_session(random.Random(2301))
        calls = TL.expected_calls(g)
        dev = g.lines["device"]
        a = self.server("rows")
        b = self.server("blocks", KB.NOCOMPACT)
        g.send(a, batch=3000)
        g.send(b, batch=3000)
        want = {}
        for suffix in calls_windows(calls):
            st, want[suffix] = calls_ask(a, g.sid, suffix)
            self.assertEqual(st, 200, suffix)
        # most windows a summary from level 0 (the rest lists: the
        # session's edges)
        self.assertGreaterEqual(sum(int(w.get("rollup_ns", 0)) == L0
                                    for w in want.values()), 30)
        # blocks: on PostgreSQL no level 0 at rest, the rest of capi as
        # rows'; on SQLite all of capi as rows'
        pg = b.pgdb is not None
        self.assertGreater(capi0_rows(a), 1000)
        self.assertEqual(capi0_rows(b), 0 if pg else capi0_rows(a))
        lv = "lvl >= %d" % (1 if pg else 0)
        self.assertEqual(KB.capi_rows(b, lv), KB.capi_rows(a, lv))
        q = "SELECT * FROM capi_long ORDER BY 1, 2, 3"
        self.assertEqual(b.sql(q), a.sql(q), q)
        self.assertEqual(KB.count(b, "SELECT count(*) FROM kernels"), 0)
        self.assertGreaterEqual(self.same(want, b, g.sid, "blocks"), 30)

        # half ingested by a rows server (its level 0 stored), compacted
        # into blocks with a hot tail of rows left, the rest ingested into
        # blocks: level 0 stored in part, computed whole
        c = mixed_server(self, g, len(dev))
        self.assertGreater(KB.count(c, "SELECT count(*) FROM kernels"), 0)
        self.assertGreater(capi0_rows(c), 0)
        if pg:
            self.assertLess(capi0_rows(c), capi0_rows(a))
        else:
            self.assertEqual(KB.capi_rows(c, "lvl >= 0"),
                             KB.capi_rows(a, "lvl >= 0"))
        self.same(want, c, g.sid, "mixed")
        # gpufl-server migrate deletes those rows nobody reads (PostgreSQL);
        # on SQLite they are read: kept, and not spoken of
        n0, db_args = capi0_rows(c), c.db_args()
        c.stop()
        out = subprocess.run([T.SERVER, "migrate", "--data-dir", c.data_dir] +
                             db_args, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             env=T.clean_env(None), timeout=120, check=True)
        self.assertIn("timeline level 0 row(s) deleted", out.stdout)
        if pg:
            self.assertIn("migrate: %d API call summary level 0 row(s) "
                          "deleted" % n0, out.stdout)
        else:
            self.assertNotIn("API call summary", out.stdout)
        c = self.server("mixed", KB.NOCOMPACT)
        self.assertEqual(capi0_rows(c), 0 if pg else n0)
        self.same(want, c, g.sid, "migrated")

        # a session ingested as rows, read by a blocks server (no blocks)
        a.stop()
        a2 = self.server("rows", KB.NOCOMPACT)
        self.assertEqual(KB.count(a2, "SELECT count(*) FROM kblocks"), 0)
        self.same(want, a2, g.sid, "rows under blocks")

        # past the cap: level 1, said by rollup_ns, the counts and busy ns
        # per thread still exact (PostgreSQL); SQLite reads its stored
        # level 0, which has no cap: the rows server's answer
        b.stop()
        b = self.server("blocks", KB.NOCOMPACT,
                        env={"GPUFL_SERVER_TL0_MAX": "3000"})
        lo = min(c[2] for c in calls)
        big = "?from=%d&to=%d&width=1000&limit=100" % (lo, lo + 3 * 10 ** 9)
        st, r = calls_ask(b, g.sid, big)
        w = want[big] if big in want else calls_ask(a2, g.sid, big)[1]
        self.assertEqual(int(w["rollup_ns"]), L0)
        if not pg:
            self.assertEqual((st, r), (200, w))
            return
        self.assertEqual((st, int(r["rollup_ns"])), (200, L1))
        self.assertEqual(r["count"], w["count"])

        def sums(ans):
            return {t["tid"]: (sum(x[1] for x in t["buckets"]),
                               sum(int(x[2]) for x in t["buckets"]))
                    for t in ans["threads"]}
        self.assertEqual(sums(r), sums(w))
        # a window holding fewer still computes level 0
        small = "?from=%d&to=%d&width=100&limit=100" % (lo, lo + 3 * 10 ** 8)
        st, r = calls_ask(b, g.sid, small)
        self.assertEqual((st, int(r["rollup_ns"])), (200, L0))
        self.assertEqual(r, calls_ask(a2, g.sid, small)[1])


class CapiLite(KB.Base):
    """SQLite (issue 23; docs/server.md "API call summary level 0 packed on
    SQLite"): ingest writes the API call summary's level 0 into packs, a
    range of 64 buckets a capipack row, merged with the stored pack each
    batch; /calls answers as from the same buckets as rows."""

    def answers(self, srv, g, wins):
        out, n0 = [], 0
        for suffix in wins:
            st, got = calls_ask(srv, g.sid, suffix)
            self.assertEqual(st, 200, suffix)
            out.append(got)
            n0 += int(got.get("rollup_ns", 0)) == L0
        # most windows a summary from level 0 (the rest lists: the
        # session's edges)
        self.assertGreaterEqual(n0, 30)
        return out

    def test_level0_packed_at_ingest(self):
        """No level-0 capi row after ingest, only packs; /calls answers as
        from those buckets as rows (the packs made rows again: a database
        from before); a replay adds nothing; a kill -9 during ingest and
        the lines sent again lose and double nothing; a database from
        before (level 0 as rows) goes on into packs beside its rows and
        answers the same.  The packs' values against the calls they came
        from: test_srv_tlrun."""
        g = TL.capi_session(random.Random(2306))
        wins = calls_windows(TL.expected_calls(g))
        b = self.server("packed", KB.NOCOMPACT)
        self.assertIsNone(b.pgdb, "SQLite's ingest packs capi's level 0")
        g.send(b, batch=3000)
        self.assertEqual(KB.count(b, CAPI0_ROWS), 0)
        self.assertGreater(KB.count(b, "SELECT count(*) FROM capipack"
                                       " WHERE lvl=0"), 10)
        got = self.answers(b, g, wins)
        packed = KB.capi_rows(b, "lvl >= 0")
        self.assertGreater(capi0_rows(b), 1000)
        g.send(b, batch=3000)  # every line a duplicate
        self.assertEqual(KB.capi_rows(b, "lvl >= 0"), packed, "replay")
        self.assertEqual(self.answers(b, g, wins), got, "replay")
        b.stop()
        # the same buckets as rows: the answers the rows gave before
        capi0_unpack(b)
        b = self.server("packed", KB.NOCOMPACT)
        self.assertEqual(KB.count(b, "SELECT count(*) FROM capipack"
                                     " WHERE lvl=0"), 0)
        self.assertEqual(KB.capi_rows(b, "lvl >= 0"), packed, "as rows")
        self.assertEqual(self.answers(b, g, wins), got, "as rows")
        b.stop()

        # kill -9 while batches go in, then everything sent again
        c = kill_and_resend(self, g, 9)
        self.assertEqual(KB.count(c, CAPI0_ROWS), 0)
        self.assertEqual(KB.capi_rows(c, "lvl >= 0"), packed, "after kill -9")
        self.assertEqual(self.answers(c, g, wins), got, "after kill -9")
        c.stop()

        # a database from before: the first half's level 0 as rows; the
        # second half goes on into packs beside them
        d = self.server("old", KB.NOCOMPACT)
        half = len(g.lines["device"]) // 2
        d.ingest_ok("device", KB.device_lines(g, range(half)))
        d.stop()
        rows = capi0_unpack(d)
        self.assertGreater(len(rows), 100)
        d = self.server("old", KB.NOCOMPACT)
        d.ingest_ok("device", KB.device_lines(
            g, range(half, len(g.lines["device"]))))
        g.send(d, batch=3000)  # the other streams; the device lines again
        self.assertEqual(KB.count(d, CAPI0_ROWS), len(rows))
        beside = ("SELECT count(*) FROM capi c JOIN capipack p ON"
                  " p.sess=c.sess AND p.lvl=c.lvl AND p.tid=c.tid AND"
                  " p.b0=c.b >> 6 << 6 WHERE c.lvl=0")
        self.assertGreater(KB.count(d, beside), 0)
        self.assertEqual(KB.capi_rows(d, "lvl >= 0"), packed,
                         "rows from before")
        self.assertEqual(self.answers(d, g, wins), got, "rows from before")

    def test_ingest_meets_undecodable_level0_pack(self):
        """A stored level-0 pack that does not decode (a corrupted
        database) met by ingest's merge is left as it is, and the batch's
        buckets of its range go as rows - nothing lost: every level-0
        bucket of the range holds as rows what the second half of the
        session added, every other bucket equals the reference's."""
        g = TL.capi_session(random.Random(2307))
        dev = g.lines["device"]
        half = len(dev) // 2

        def buckets(srv):  # {(sess, lvl, b, tid): (n, busy)}
            return {tuple(int(c) for c in r[:4]): (int(r[4]), int(r[5]))
                    for r in KB.capi_rows(srv, "lvl = 0")}

        def less(k):  # what the second half added to bucket k
            a, f = first.get(k, (0, 0)), full[k]
            return (f[0] - a[0], f[1] - a[1])
        ref = self.server("ref", KB.NOCOMPACT)
        self.assertIsNone(ref.pgdb, "SQLite's ingest packs capi's level 0")
        ref.ingest_ok("device", KB.device_lines(g, range(len(dev))))
        full = buckets(ref)
        ref.stop()

        b = self.server("bad", KB.NOCOMPACT)
        b.ingest_ok("device", KB.device_lines(g, range(half)))
        first = buckets(b)
        self.assertEqual(KB.count(b, CAPI0_ROWS), 0)

        def rng(k):  # (sess, lvl, b, tid) -> its pack's (sess, tid, b0)
            return (k[0], k[3], k[2] >> 6 << 6)
        grown = sorted({rng(k) for k in full if less(k) != (0, 0)} &
                       {rng(k) for k in first})
        self.assertTrue(grown, "no range of the first half grows")
        bad = grown[0]
        where = "sess=%d AND lvl=0 AND tid=%d AND b0=%d" % bad
        KB.exec_sql(b, "UPDATE capipack SET data=substr(data, 1, 3)"
                    " WHERE " + where)
        cut = b.sql("SELECT hex(data) FROM capipack WHERE " + where)
        self.assertEqual(len(cut), 1)
        b.stop()

        b = self.server("bad", KB.NOCOMPACT)
        b.ingest_ok("device", KB.device_lines(g, range(half, len(dev))))
        self.assertEqual(b.sql("SELECT hex(data) FROM capipack WHERE " +
                               where), cut, "the pack untouched")
        rows = b.sql("SELECT sess, lvl, b, tid, n, busy FROM capi"
                     " WHERE lvl=0")
        got = {tuple(int(c) for c in r[:4]): (int(r[4]), int(r[5]))
               for r in rows}
        self.assertTrue(got, "the range's buckets went as rows")
        for k in got:
            self.assertEqual(rng(k), bad, "a row outside the bad range")
        want = {k: less(k) for k in full
                if rng(k) == bad and less(k) != (0, 0)}
        self.assertEqual(got, want, "every bucket the second half added")
        # the rest: the bad pack dropped (it does not decode), the other
        # buckets as the reference's
        KB.exec_sql(b, "DELETE FROM capipack WHERE " + where)
        KB.exec_sql(b, "DELETE FROM capi WHERE lvl=0")
        rest = buckets(b)
        self.assertEqual(rest, {k: v for k, v in full.items()
                                if rng(k) != bad})
        b.stop()


def capi_pack_windows(calls):
    """/calls windows over the session read from the API call summary's
    levels 1 to 3 (columns of 2^23 ns and more), unaligned, some over the
    session's edges, limit=100 (a summary, not a list)."""
    lo = min(c[2] for c in calls)
    hi = max(c[2] + c[3] for c in calls)
    out = ["?width=%d&limit=100" % w for w in (300, 100, 20, 4)]
    for width, span in ((100, 10 ** 9), (50, 2 * 10 ** 9), (20, 5 * 10 ** 9),
                        (10, 3 * 10 ** 9), (4, 10 ** 10)):
        for t in range(lo - 10 ** 8, hi, span // 3 + 12345):
            out.append("?from=%d&to=%d&width=%d&limit=100" % (t, t + span,
                                                               width))
    return out


# rows of capi in ranges the packer takes (levels 1-5, range of 128
# buckets ended at or before the session's last event, or the session
# ended: store_sql_capipack.c)
CAPI_PACKABLE = ("SELECT count(*) FROM capi c JOIN sessions s ON s.id=c.sess"
                 " WHERE c.lvl BETWEEN 1 AND 5 AND (s.state <> 'running' OR"
                 " (((c.b >> 7) + 1) << CAST(23 + 4 * c.lvl AS INTEGER))"
                 " <= s.last_ts)")
CAPI_BESIDE = ("SELECT count(*) FROM capi c JOIN capipack p ON"
               " p.sess=c.sess AND p.lvl=c.lvl AND p.tid=c.tid AND"
               " p.b0=c.b >> 7 << 7")


class CapiPack(KB.Base):
    """PostgreSQL (schema 31): the maintenance pass packs each range of 128
    buckets of the API call summary (capi) of levels 1-5 its session has
    moved past into one capipack row, and /calls at those levels answers
    as from the rows - packed, with a late call's row beside its pack,
    once that row is folded in, and after a kill -9 while packing; capi
    with its packs unpacked holds what a rows server's capi holds."""

    def settle(self, srv, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if KB.count(srv, CAPI_PACKABLE) == 0 and \
                    KB.count(srv, "SELECT count(*) FROM capipack") > 0:
                return
            time.sleep(0.2)
        raise AssertionError("not packed in %d s" % timeout)

    def same(self, a, b, sid, wins, what):
        levels = set()
        for suffix in wins:
            st, want = calls_ask(a, sid, suffix)
            self.assertEqual(st, 200, (what, suffix))
            st, got = calls_ask(b, sid, suffix)
            self.assertEqual(st, 200, (what, suffix))
            if got != want:  # not the whole answers: too long
                self.fail("%s %s: %s" % (what, suffix, diff(got, want)))
            levels.add(int(got.get("rollup_ns", 0)))
        # the windows read levels 1, 2 and 3 (the rest lists or level 0)
        self.assertLessEqual({L1, L1 << 4, L1 << 8}, levels, what)
        got, want = KB.capi_rows(b), a.sql(KB.CAPI_Q)
        if got != want:  # the first rows that differ
            d = [(x, y) for x, y in zip(got, want) if x != y][:3]
            self.fail("%s: capi %d rows != %d: %s" % (what, len(got),
                                                        len(want), d))

    def test_packed_answers_equal_rows(self):
        if not T.pg_base():
            self.skipTest("packing is PostgreSQL's (docs/server.md)")
        g = TL.capi_session(random.Random(3101))
        calls = TL.expected_calls(g)
        wins = capi_pack_windows(calls)
        a = self.server("rows")
        b = self.server("blocks", KB.BLOCKS)
        g.send(a, batch=3000)
        g.send(b, batch=3000)
        self.settle(b)
        l1 = "SELECT count(*) FROM capi WHERE lvl=1"
        self.assertLess(KB.count(b, l1) * 4, KB.count(a, l1))
        self.same(a, b, g.sid, wins, "packed")

        # late calls into packed ranges (every thread, level 1's first
        # ranges and level 2's first): a row again beside the pack, the
        # answer adds both
        lo = min(c[2] for c in calls)
        name = g.kernels[0][5]
        n0 = len(g.lines["device"])
        for i, tid in enumerate((101, 102, 103, 104)):
            for j in range(3):
                t = lo + 10 ** 7 * (1 + 3 * i + j) + 11
                gpu = t + 5000 + j
                g.kernel(gpu, 2000, name, stream=7, corr=90000 + 3 * i + j,
                         api=(t - gpu, 3000 + 7 * j), tid=tid)
        late = KB.device_lines(g, range(n0, len(g.lines["device"])))
        # no packer pass meanwhile: the rows stay beside their packs
        b.stop()
        b = self.server("blocks", KB.NOCOMPACT)
        a.ingest_ok("device", late)
        b.ingest_ok("device", late)
        # level 1: a row each; level 2 (16.7 ms buckets): one a thread
        # at least
        self.assertGreaterEqual(KB.count(b, CAPI_BESIDE), 12 + 4)
        calls = TL.expected_calls(g)
        self.same(a, b, g.sid, wins, "late rows beside packs")
        b.stop()
        b = self.server("blocks", KB.BLOCKS)
        self.settle(b)
        self.assertEqual(KB.count(b, CAPI_BESIDE), 0)
        self.same(a, b, g.sid, wins, "late rows folded in")

        # kill -9 while the packer runs (a session of its own, packed
        # from its first pass, ended: every level packed, its last
        # partial ranges too): each range its rows or its pack
        g2 = TL.capi_session(random.Random(3102))
        g2.lines["device"][0]["streams"] = ["device"]
        g2.line("device", max(c[2] + c[3] for c in TL.expected_calls(g2)) + 1,
                "session_end", reason="exit")
        a2 = self.server("rows2")
        c = self.server("killed", KB.BLOCKS)
        g2.send(a2, batch=3000)
        g2.send(c, batch=3000)
        time.sleep(random.Random(7).uniform(0.8, 1.4))
        c.kill()
        c = self.server("killed", KB.BLOCKS)
        self.settle(c)
        self.assertEqual(KB.count(c, "SELECT count(*) FROM capi WHERE"
                                     " lvl >= 1"), 0)
        self.assertGreater(KB.count(c, "SELECT count(*) FROM capipack"
                                       " WHERE lvl=3"), 0)
        self.same(a2, c, g2.sid, capi_pack_windows(TL.expected_calls(g2)),
                  "after kill -9")

        # retention: the session's packs go with it
        time.sleep(1.2)
        st, _, body = c.req("POST", "/api/v1/admin/retention?max_age=1")
        self.assertEqual(st, 200, body)
        self.assertEqual(KB.count(c, "SELECT count(*) FROM sessions"), 0)
        self.assertEqual(KB.count(c, "SELECT count(*) FROM capipack"), 0)

    def test_undecodable_pack(self):
        """A pack that does not decode (a corrupted database) is passed by
        the packer, not a stop: a late row of a range after it is folded
        in, its own row stays a row, the log says so, and /calls over it
        answers an error, not a crash."""
        if not T.pg_base():
            self.skipTest("packing is PostgreSQL's (docs/server.md)")
        g = TL.capi_session(random.Random(3103))
        b = self.server("blocks", KB.BLOCKS)
        g.send(b, batch=3000)
        self.settle(b)
        b.stop()
        b, bad = bad_pack_and_late_rows(self, b, CAPI_PACKED)
        # a level-1 window over the bad pack: an error, no crash
        t = (int(bad[3]) + 1) << 20
        st, _, body = b.req("GET", "/api/v1/sessions/%s/calls?from=%d&to=%d"
                            "&width=100&limit=10" % (g.sid, t, t + 10 ** 9))
        self.assertEqual(st, 500, body)
        st, _, _ = b.req("GET", "/api/v1/sessions")
        self.assertEqual(st, 200)


if __name__ == "__main__":
    unittest.main()
