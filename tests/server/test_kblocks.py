"""test_kblocks.py - gpufl-server --kernel-store=blocks (docs/server.md
"Kernel blocks"): the compactor turns kernel rows into column blocks, a
replay of compacted kernels is still a duplicate, a query answers the same
as from rows alone, and kill -9 during compaction loses no kernel.  Real
binary on 127.0.0.1, SQLite or (with GPUFL_TEST_PG_URI_FILE) PostgreSQL.

Ingest and IngestCrash: ingest writes a batch's kernels straight into
blocks (store_sql_kblocks_ingest.c): every acknowledged kernel is stored
exactly once, replays that straddle blocks (merged by the compactor or
not) and batches out of order or with repeats count right, the rollups are
those of a rows store, and kill -9 during a block write loses nothing
acknowledged.

Pages: pages by time from many random starts, both ways, following their
cursors, answer as rows do.

NameSorts: a sort by duration filtered by name reads the blocks through
their names' duration bounds (kbnames) and answers as rows do, blocks
without kbnames rows (older ones) included.

Counts: the compactor's per-(session, stream) row counts (kcount) stay
equal to the rows through kill -9 during rows ingest and compaction.

KeptSorts: a sort by duration over all names reads kext and the kept rows
of its kernels in blocks (kxrow) without decoding a block, answers as rows
do, and the kept rows follow ingest, merges, kill -9 and retention.

Run one class per ctest test: python3 test_kblocks.py Blocks
"""
import collections
import threading
import json
import os
import random
import shutil
import tempfile
import time
import unittest

import srvtest as T
import test_timeline as TL

BLOCKS = ["--kernel-store", "blocks", "--kernel-compact-interval", "1s"]
# the reference store these tests compare blocks with: blocks are the
# default, so a rows server says so
ROWS = ["--kernel-store", "rows"]


def count(srv, q):
    return int(srv.sql(q)[0][0] or 0)


def wait_compacted(srv, timeout=60):
    """Until the compactor has nothing left to do (LEFT) and made blocks."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if count(srv, LEFT) == 0 and \
                count(srv, "SELECT count(*) FROM kblocks") > 0:
            return
        time.sleep(0.2)
    raise AssertionError("not compacted in %d s" % timeout)


def ended(g):
    """g's session with both streams ended (the compactor takes all)."""
    g.lines["device"][0]["streams"] = ["device", "scope"]
    g.line("device", TL.T0 + 10 ** 10, "session_end", reason="exit")
    g.line("scope", TL.T0 + 10 ** 10, "session_end", reason="exit")
    return g


def norm(v):
    """An answer without its time of receipt, and with the timeline's
    lanes in (dev, stream) order: their order is not specified
    (docs/api.md), and PostgreSQL's follows where the rows lie, which a
    thaw changes."""
    if isinstance(v, dict) and "last_seen" in v:
        v = dict(v)
        del v["last_seen"]  # when the server received it (Unix s)
    if isinstance(v, dict) and isinstance(v.get("lanes"), list):
        v = dict(v)
        v["lanes"] = sorted(v["lanes"], key=lambda l: (l.get("dev", 0),
                                                       l.get("stream", 0)))
    return v


def lines(g, st, lo, hi):
    return b"\n".join(json.dumps(e, separators=(",", ":")).encode()
                      for e in g.lines[st][lo:hi]) + b"\n"


class Base(TL.Base):
    def server(self, name="data", args=(), **kw):
        """A rows server unless args say blocks (a later option wins)."""
        return super().server(name, ROWS + list(args), **kw)


class Blocks(Base):
    def test_same_answers_and_replays(self):
        # a running session: full runs of 4096 of a stream are compacted,
        # the rest stay rows (the hot tail)
        g, lanes = TL.lod_session(random.Random(23))
        nk = len(g.kernels)
        a = self.server("rows")
        b = self.server("blocks", BLOCKS)
        g.send(a)
        g.send(b)
        wait_compacted(b)
        inb = count(b, "SELECT sum(n) FROM kblocks")
        self.assertGreaterEqual(inb, 4 * 4096)
        self.assertEqual(inb + count(b, "SELECT count(*) FROM kernels"), nk)
        self.assertEqual(count(a, "SELECT count(*) FROM kblocks"), 0)
        per = (count(b, "SELECT sum(length(block)) FROM kblocks") / inb)
        self.assertLess(per, 40)  # a row is ~250 bytes with its indexes

        # replays of compacted kernels are duplicates: the whole device
        # stream, then a range that straddles a block and runs on into
        # new kernels (their seqs above every block's)
        dev = g.lines["device"]
        r = b.ingest_ok("device", lines(g, "device", 0, len(dev)))
        self.assertEqual((r["accepted"], r["duplicate"]), (0, len(dev)))
        n0 = len(dev)
        seqs = sorted(k[0] for k in g.kernels)
        for i in range(5):
            g.kernel(TL.T0 + 9 * 10 ** 9 + i, 10 + i, 1, stream=7)
        # from inside a block on, through the last block after it (ingest
        # writes blocks: no rows after them)
        last = count(b, "SELECT max(seq_lo) FROM kblocks")
        lo = seqs[seqs.index(last) - 50]
        first = next(i for i, e in enumerate(g.lines["device"])
                     if e["seq"] == lo)
        for srv in (a, b):
            r = srv.ingest_ok("device", lines(g, "device", first,
                                              len(g.lines["device"])))
            self.assertEqual(r["accepted"], 5, (srv.data_dir, r))
        for srv in (a, b):
            self.assertEqual(count(srv, "SELECT n_kernels FROM sessions"),
                             nk + 5)
            self.assertEqual(count(srv, "SELECT sum(n) FROM kagg"), nk + 5)
        # still compacted: nothing read them yet
        self.assertGreater(count(b, "SELECT count(*) FROM kblocks"), 0)
        state = ("SELECT (SELECT sum(n) FROM kblocks), (SELECT count(*) FROM"
                 " kernels)")
        before = b.sql(state)[0]
        self.assertEqual(int(before[0]) + int(before[1]), nk + 5)

        # the API answers as from rows alone
        base = "/api/v1/sessions/" + g.sid
        t0, t1 = TL.T0 + 3 * 10 ** 9, TL.T0 + 3 * 10 ** 9 + 5 * 10 ** 6
        paths = [base, base + "/kernels?limit=1000",
                 base + "/kernels?sort=duration&desc=true&limit=300",
                 base + "/kernels?sort=duration&limit=300",
                 base + "/kernels?from=%d&to=%d&limit=1000" % (t0, t1),
                 base + "/kernels/aggregate", base + "/durations",
                 base + "/timeline?from=%d&to=%d&width=500&exact=5000"
                 % (t0, t1),
                 base + "/timeline?width=800",
                 base + "/calls?from=%d&to=%d" % (t0, t1)]
        paths += [base + "/kernels/%d" % s
                  for s in (seqs[0], seqs[4095], seqs[4096], seqs[-1])]
        for p in paths:
            self.assertEqual(norm(b.get(p)), norm(a.get(p)), p)
        self.assertEqual(T.page_all(b, base + "/kernels"),
                         T.page_all(a, base + "/kernels"))
        for srv in (a, b):
            st, _, data = srv.req("GET", base + "/export?from=%d&to=%d"
                                  % (t0, t1))
            self.assertEqual(st, 200)
            if srv is a:
                want = json.loads(data)
        self.assertEqual(json.loads(data), want)
        # the queries read the blocks where they lie: none thawed
        self.assertEqual(b.sql(state)[0], before)
        # and a replay after the queries is still a duplicate
        r = b.ingest_ok("device", lines(g, "device", 0, 50))
        self.assertEqual(r["accepted"], 0)

    def test_run_after_many_full_blocks(self):
        """A run of small blocks that many full ones come before, after a
        small block alone, is merged: the compactor reads a stream's
        blocks a few at a time (docs/server.md "PostgreSQL's compactor
        reads a run, not the stream"), so its look for a run goes on past
        a page of full blocks."""
        g = TL.Gen(app="far")
        k = g.name("k_far")
        sizes = [5] + [20] * 12 + [5, 5, 5]  # RUN 20: full at 20
        t = TL.T0
        for n in sizes:
            for _ in range(n):
                t += 1000
                g.kernel(t, 100, k, stream=3)
        g = ended(g)
        env = {"GPUFL_SERVER_KB_RUN": "20"}
        b = self.server("blocks", NOCOMPACT, env=env)
        dev = g.lines["device"]
        first = next(i for i, e in enumerate(dev) if e["type"] == "kernel")
        at = first
        for j, n in enumerate(sizes):
            # the session and dict lines with the first block, the end
            # with the last
            lo = 0 if j == 0 else at
            hi = len(dev) if j == len(sizes) - 1 else at + n
            b.ingest_ok("device", lines(g, "device", lo, hi))
            at += n
        b.ingest_ok("scope", lines(g, "scope", 0, len(g.lines["scope"])))
        q = "SELECT n FROM kblocks ORDER BY seq_lo"
        self.assertEqual([int(r[0]) for r in b.sql(q)], sizes)
        b.stop()
        b = self.server("blocks", BLOCKS, env=env)
        want = [5] + [20] * 12 + [15]
        deadline = time.time() + 30
        while time.time() < deadline and len(b.sql(q)) != len(want):
            time.sleep(0.2)
        self.assertEqual([int(r[0]) for r in b.sql(q)], want)
        self.assertEqual(count(b, "SELECT n_kernels FROM sessions"),
                         sum(sizes))

    def test_rows_store_compacts_nothing(self):
        g, _ = TL.lod_session(random.Random(3))
        ended(g)
        a = self.server("rows", ["--kernel-compact-interval", "1s"])
        g.send(a)
        time.sleep(2.5)
        self.assertEqual(count(a, "SELECT count(*) FROM kblocks"), 0)
        self.assertEqual(count(a, "SELECT count(*) FROM kernels"),
                         len(g.kernels))


# Kernels per block in Reads (GPUFL_SERVER_KB_RUN): small, so that a
# session has many blocks per stream, of odd sizes, and a hot tail.
RUN = 377


def wait_settled(srv, run, timeout=60):
    """Until no (session, stream) has a run of `run` rows left, nor an
    ended session any row (what the compactor takes)."""
    q = ("SELECT count(*) FROM (SELECT k.sess, k.stream, count(*) AS c,"
         " max(s.state) AS st FROM kernels k JOIN sessions s ON s.id=k.sess"
         " GROUP BY k.sess, k.stream) t WHERE c >= %d OR st <> 'running'"
         % run)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if count(srv, q) == 0 and \
                count(srv, "SELECT count(*) FROM kblocks") > 0:
            return
        time.sleep(0.2)
    raise AssertionError("not compacted in %d s" % timeout)


def kernel_paths(base, g, seqs, windows):
    """Every kernel-reading answer of a session worth comparing; windows:
    (from, to) pairs, the first a dense one."""
    (t0, t1), rest = windows[0], windows[1:]
    p = [base, base + "/kernels/aggregate", base + "/durations",
         base + "/kernels/aggregate?name=gemm",
         base + "/kernels?limit=1000",
         base + "/kernels?desc=true&limit=700",
         base + "/kernels?from=%d&to=%d&limit=1000" % (t0, t1),
         base + "/kernels?name=gemm&limit=300",
         base + "/kernels?name=nosuchkernel&limit=10",
         base + "/kernels?sort=queue&desc=true&limit=100",
         base + "/kernels?sort=launch_latency&limit=100",
         base + "/timeline?from=%d&to=%d&width=500&exact=5000" % (t0, t1),
         base + "/timeline?width=800",
         base + "/calls",
         base + "/export?from=%d&to=%d" % (t0, t1)]
    for w0, w1 in rest:
        p += [base + "/kernels?from=%d&to=%d&overlap=true&limit=1000"
              % (w0, w1),
              base + "/kernels?from=%d&overlap=true&desc=true&limit=50" % w0,
              base + "/timeline?from=%d&to=%d&width=300" % (w0, w1),
              base + "/calls?from=%d&to=%d" % (w0, w1),
              base + "/export?from=%d&to=%d" % (w0, w1)]
    for sort in ("duration", "start"):
        for desc in ("true", "false"):
            for name in ("", "&name=Fill", "&name=gemm"):
                p.append(base + "/kernels?sort=%s&desc=%s%s&limit=250"
                         % (sort, desc, name))
    rnd = random.Random(5)
    p += [base + "/kernels/%d" % s for s in
          seqs[:3] + seqs[-3:] + rnd.sample(seqs, 20)]
    p.append(base + "/kernels/%d" % (seqs[-1] + 10 ** 6))  # none
    return p


class Reads(Base):
    def test_block_native_answers_without_thaw(self):
        """Every kernel-reading endpoint answers from blocks exactly as
        from rows, and no query thaws: the blocks and rows stay as the
        compactor left them."""
        g, _ = TL.lod_session(random.Random(31))
        h = ended(TL.flows_session(random.Random(32), 3000))
        # h: API calls and threads, all of it compacted, its last blocks
        # short; g: runs of RUN compacted, a hot tail of rows
        # (ingest with --kernel-store=blocks writes blocks itself: the
        # rows to compact come from a rows server on the same database)
        env = {"GPUFL_SERVER_KB_RUN": str(RUN)}
        a = self.server("rows")
        b = self.server("blocks")
        for gen in (g, h):
            gen.send(a)
            gen.send(b)
        b.stop()
        b = self.server("blocks", BLOCKS, env=env)
        wait_settled(b, RUN)
        state = ("SELECT (SELECT count(*) FROM kblocks), (SELECT sum(n) FROM"
                 " kblocks), (SELECT count(*) FROM kernels)")
        before = b.sql(state)[0]
        nk = len(g.kernels) + len(h.kernels)
        self.assertEqual(int(before[1]) + int(before[2]), nk)
        self.assertGreater(int(before[0]), 2 * nk // RUN // 3)
        self.assertGreater(int(before[2]), 0)  # g's hot tail
        self.assertGreater(count(b, "SELECT count(*) FROM kblocks WHERE n <"
                                 " %d" % RUN), 0)  # short blocks too
        for gen in (g, h):
            base = "/api/v1/sessions/" + gen.sid
            seqs = sorted(k[0] for k in gen.kernels)
            ts = sorted(k[3] for k in gen.kernels)
            mid = ts[len(ts) // 2]
            windows = [(mid, mid + 5 * 10 ** 6), (mid - 10 ** 7, mid + 10 ** 7),
                       (ts[0] + 2 * 10 ** 8, ts[0] + 2 * 10 ** 8 + 3 * 10 ** 7)]
            if gen is g:  # the 18000-kernel burst
                windows[0] = (TL.T0 + 3 * 10 ** 9, TL.T0 + 3 * 10 ** 9 +
                              5 * 10 ** 6)
            for p in kernel_paths(base, gen, seqs, windows):
                sa, _, da = a.req("GET", p)
                sb, _, db = b.req("GET", p)
                self.assertEqual(sb, sa, p)
                self.assertEqual(norm(json.loads(db or b"null")),
                                 norm(json.loads(da or b"null")), p)
            for q in ("?sort=duration&desc=true", "?name=add"):
                self.assertEqual(T.page_all(b, base + "/kernels" + q, 999),
                                 T.page_all(a, base + "/kernels" + q, 999), q)
        # h's calls came from its blocks (launches with their calls)
        self.assertGreater(b.get("/api/v1/sessions/%s/calls" % h.sid)
                           ["count"], 1000)
        # no query thawed a block back into rows
        self.assertEqual(b.sql(state)[0], before)


    def test_reads_during_compaction(self):
        """Pages read while the compactor moves rows into blocks see every
        kernel once: rows and blocks are read in one snapshot."""
        h = ended(TL.flows_session(random.Random(33), 3000))
        env = {"GPUFL_SERVER_KB_RUN": "37", "GPUFL_SERVER_KB_PAUSE_MS": "25"}
        a = self.server("rows")
        b = self.server("blocks")  # rows (see above), then compacted
        h.send(a)
        h.send(b)
        b.stop()
        b = self.server("blocks", BLOCKS, env=env)
        base = "/api/v1/sessions/%s/kernels" % h.sid
        want = T.page_all(a, base, 1000)
        wd = a.get(base + "?sort=duration&desc=true&limit=1000")
        reads, mid = 0, 0
        deadline = time.time() + 60
        while time.time() < deadline:
            left = count(b, "SELECT count(*) FROM kernels")
            if not left and reads >= 3:
                break
            self.assertEqual(T.page_all(b, base, 1000), want)
            self.assertEqual(b.get(base + "?sort=duration&desc=true"
                                   "&limit=1000"), wd)
            reads += 1
            mid += left > 0
        self.assertEqual(count(b, "SELECT count(*) FROM kernels"), 0)
        self.assertGreater(mid, 0)  # reads while rows were being moved


class Pages(Base):
    def test_pages_by_time_as_rows(self):
        """Pages by time (and the other sorts) from blocks answer as from
        rows for many random `from`s - on a kernel's own start, between
        kernels, before and after the session - with and without `to`,
        name filter and overlap, forwards and backwards, following their
        cursors: first with no cache of decoded blocks (each block's
        events chosen by ts and seq, then only those that place decoded
        whole: kblock_decode_rows; the blocks read start at the cursor),
        then with the cache (blocks read twice kept decoded)."""
        g, _ = TL.lod_session(random.Random(41))
        env = {"GPUFL_SERVER_KB_RUN": str(RUN)}
        a = self.server("rows")
        b = self.server("blocks")
        g.send(a)
        g.send(b)
        b.stop()
        b = self.server("blocks", BLOCKS + ["--kernel-block-cache", "0"],
                        env=env)
        wait_settled(b, RUN)
        self.assertGreater(count(b, "SELECT count(*) FROM kblocks"), 20)
        self.assertGreater(count(b, "SELECT count(*) FROM kernels"), 0)
        base = "/api/v1/sessions/%s/kernels" % g.sid
        ts = sorted(k[3] for k in g.kernels)
        # both compare()s ask the rows server the same paths: once
        a = T.Ref(a)

        def same(srv, p):
            sa, _, da = a.req("GET", p)
            sb, _, db = srv.req("GET", p)
            self.assertEqual(sb, sa, p)
            ja, jb = json.loads(da or b"null"), json.loads(db or b"null")
            self.assertEqual(jb, ja, p)
            return ja

        def compare(srv):
            rnd = random.Random(42)
            compared = pages = 0
            for i in range(160):
                pick = rnd.random()
                if pick < 0.4:
                    frm = rnd.choice(ts)  # a kernel's own start: ties
                elif pick < 0.9:
                    frm = rnd.randrange(ts[0], ts[-1])
                else:
                    frm = rnd.choice([1, ts[0] - 1, ts[-1], ts[-1] + 1])
                q = "?from=%d&limit=%d" % (frm,
                                           rnd.choice([1, 2, 7, 100, 250]))
                if rnd.random() < 0.3:
                    q += "&to=%d" % (frm + rnd.choice([10 ** 4, 10 ** 6,
                                                       10 ** 8]))
                if rnd.random() < 0.5:
                    q += "&desc=true"
                if rnd.random() < 0.2:
                    q += "&name=" + rnd.choice(["gemm", "Fill", "nosuch"])
                if rnd.random() < 0.15:
                    q += "&overlap=true"
                if rnd.random() < 0.1:
                    q += "&sort=" + rnd.choice(["queue", "launch_latency"])
                r = same(srv, base + q)
                compared += 1
                # and on from its cursor, a few pages
                for _ in range(rnd.choice([0, 0, 1, 4])):
                    if not r.get("next"):
                        break
                    r = same(srv, base + q + "&cursor=" + r["next"])
                    pages += 1
            self.assertGreater(pages, 40)
            # kernels that start at the same ns: a page ending on the first
            # must go on with the second (the cursor's ts again, a higher
            # seq; backwards a lower one)
            tied = sorted(t for t, n in collections.Counter(ts).items()
                          if n > 1)
            self.assertGreater(len(tied), 10)
            for t in tied[:: max(1, len(tied) // 40)]:
                # the cursor's page from further away (the cursor, not
                # the range, then bounds what is read)
                for q, q2 in (("?from=%d&limit=1" % t,
                               "?from=%d&limit=3" % (t - 10 ** 7)),
                              ("?to=%d&desc=true&limit=1" % (t + 1),
                               "?to=%d&desc=true&limit=3" % (t + 10 ** 7))):
                    r = same(srv, base + q)
                    r = same(srv, base + q2 + "&cursor=" + r["next"])
                    self.assertEqual(int(r["items"][0]["ts"]), t, q)
                    pages += 1
            # the whole session both ways in pages by start, deep cursors
            for q, lim in (("", 997), ("?desc=true", 613),
                           ("?from=%d" % ts[len(ts) // 3], 251)):
                self.assertEqual(T.page_all(srv, base + q, lim),
                                 T.page_all(a, base + q, lim), q)
            self.assertEqual(len(T.page_all(srv, base, 1000)),
                             len(g.kernels))
            print("  %d pages from random froms, %d by their cursors" %
                  (compared, pages))

        compare(b)
        self.assertIsNone(T.metric(b, "gpufl_server_kblock_cache_bytes"))
        b.stop()
        b = self.server("blocks", BLOCKS, env=env)
        compare(b)
        hits = T.metric(b, 'gpufl_server_kblock_cache_reads_total'
                         '{result="hit"}')
        self.assertGreater(hits, 100)
        self.assertGreater(T.metric(b, "gpufl_server_kblock_cache_bytes"), 0)



def tied_session(rnd, steps, nstreams=7, sparse_every=20):
    """nstreams lanes launching at the same instants (their blocks start
    at the same t_lo: ties in the block index's order), a kernel of name
    "rare" now and then, and a sparse lane whose blocks each span a large
    part of the session (the session's kbspan) and interleave with every
    other lane's."""
    g = TL.Gen()
    common, rare, sparse = g.name("common"), g.name("rare"), g.name("sparse")
    t = TL.T0
    for i in range(steps):
        t += rnd.choice([0, 1, 1000, 20000, 70000])
        for s in range(1, nstreams + 1):
            g.kernel(t, rnd.randrange(0, 50000),
                     rare if rnd.random() < 0.02 else common, stream=s,
                     corr=len(g.kernels) + 1)
        if i % sparse_every == 7:
            g.kernel(t + rnd.choice([0, 1]), 5, sparse, dev=1, stream=20)
    return g


class PageScan(Base):
    """Pages by start time read the block index in t_lo order from the
    page's start and stop once no further block can place
    (store_sql_kblocks_scan.c): the same pages as rows, where blocks of
    different streams overlap and start at the same instants and one
    stream's blocks span much of the session, and a page reads a few index
    rows per stream, not every block from its start to the session's end
    (gpufl_server_kblocks_index_rows_total)."""
    RUN = 50

    def load(self, gens):
        a = self.server("rows")
        b = self.server("blocks")  # rows (as in Pages), then compacted
        for g in gens:
            g.send(a)
            g.send(b)
        b.stop()
        b = self.server("blocks", BLOCKS + ["--kernel-block-cache", "0"],
                        env={"GPUFL_SERVER_KB_RUN": str(self.RUN)})
        wait_settled(b, self.RUN)
        return a, b

    def same(self, a, b, p):
        sa, _, da = a.req("GET", p)
        sb, _, db = b.req("GET", p)
        self.assertEqual(sb, sa, p)
        ja, jb = json.loads(da or b"null"), json.loads(db or b"null")
        self.assertEqual(jb, ja, p)
        return ja

    def test_early_stop_same_pages_few_index_rows(self):
        rnd = random.Random(61)
        g = tied_session(rnd, 1400)
        h = lanes_session(random.Random(62), 40000, streams=(7, 8, 9, 10))
        a, b = self.load([g, h])
        nblk = {}
        for gen in (g, h):
            sess = b.sql("SELECT id FROM sessions WHERE sid='%s'"
                         % gen.sid)[0][0]
            nblk[gen] = count(b, "SELECT count(*) FROM kblocks WHERE"
                                 " sess=%s" % sess)
        self.assertGreater(nblk[g], 150)
        self.assertGreater(nblk[h], 600)
        # g's sparse lane: blocks far longer than the others'
        self.assertGreater(count(b, "SELECT max(t_hi - t_lo) FROM kblocks"
                                    " WHERE stream=20"),
                           20 * count(b, "SELECT min(t_hi - t_lo) FROM"
                                         " kblocks WHERE stream=1"))

        # g: pages as rows, both ways, a name filter making the scan read
        # many chunks of the index (ties split across them), cursors
        base = "/api/v1/sessions/%s/kernels" % g.sid
        ts = sorted(k[3] for k in g.kernels)
        pages = 0
        for i in range(120):
            frm = rnd.choice(ts) if rnd.random() < 0.5 else \
                rnd.randrange(ts[0] - 10, ts[-1] + 10)
            desc = rnd.random() < 0.5
            q = ("?to=%d&desc=true" % (frm + 1)) if desc else \
                ("?from=%d" % frm)
            q += "&limit=%d" % rnd.choice([1, 3, 40, 100, 333])
            if rnd.random() < 0.3:
                q += "&name=" + rnd.choice(["rare", "sparse"])
            r = self.same(a, b, base + q)
            for _ in range(rnd.choice([0, 1, 3])):
                if not r.get("next"):
                    break
                r = self.same(a, b, base + q + "&cursor=" + r["next"])
                pages += 1
        self.assertGreater(pages, 30)
        for q, lim in (("", 377), ("?desc=true", 211),
                       ("?name=sparse&desc=true", 9)):
            self.assertEqual(T.page_all(b, base + q, lim),
                             T.page_all(a, base + q, lim), q)

        # h: 4 streams, ~800 blocks; a page of 100 from a random start
        # (by start, or back from its end) reads the blocks at its start
        # and a first chunk of the index, not the blocks to the session's
        # end (or its start)
        base = "/api/v1/sessions/%s/kernels" % h.sid
        ts = sorted(k[3] for k in h.kernels)
        n = 40
        before = T.metric(b, "gpufl_server_kblocks_index_rows_total")
        for i in range(n):
            frm = ts[rnd.randrange(len(ts) // 10, len(ts) * 9 // 10)]
            q = ("?to=%d&desc=true" % frm) if i % 2 else ("?from=%d" % frm)
            self.same(a, b, base + q + "&limit=100")
        per = (T.metric(b, "gpufl_server_kblocks_index_rows_total") -
               before) / n
        print("  %.1f index rows a page (%d blocks)" % (per, nblk[h]))
        self.assertLess(per, 80)


def exec_sql(srv, q):
    """Runs a statement that writes (srv.sql's SQLite connection would
    roll it back)."""
    if srv.pgdb:
        srv.sql(q)
        return
    import sqlite3
    db = sqlite3.connect(os.path.join(srv.data_dir, "gpufl.db"),
                         isolation_level=None, timeout=30)
    try:
        db.execute(q)
    finally:
        db.close()


def wait_stable(srv, timeout=60):
    """Until the blocks stay as they are for 3 s (the compactor merged
    what it merges)."""
    q = "SELECT count(*), sum(seq_lo), sum(n) FROM kblocks"
    deadline = time.time() + timeout
    last, since = None, time.time()
    while time.time() < deadline:
        now = srv.sql(q)[0]
        if now != last:
            last, since = now, time.time()
        elif time.time() - since >= 3:
            return
        time.sleep(0.3)
    raise AssertionError("blocks not settled in %d s" % timeout)


def wait_named(srv, left=0, timeout=60):
    """Until the compactor has named ingest's blocks (kbunnamed down to
    `left` rows: a running stream's last block waits)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if count(srv, "SELECT count(*) FROM kbunnamed") <= left:
            return
        time.sleep(0.2)
    raise AssertionError("not named in %d s" % timeout)


def block_names(rows, blocks):
    """Per (stream, seq_lo, name id) of blocks [(stream, seq_lo, seq_hi)]:
    [count, min dur, max dur] of rows [(stream, seq, name id, dur)]."""
    want = {}
    for st, lo, hi in blocks:
        st, lo, hi = int(st), int(lo), int(hi)
        for s, seq, nid, dur in rows:
            if s == st and lo <= seq <= hi:
                w = want.setdefault((st, lo, nid), [0, dur, dur])
                w[0] += 1
                w[1] = min(w[1], dur)
                w[2] = max(w[2], dur)
    return want


def check_names(t, srv):
    """Every block named (kbnames rows, or on PostgreSQL entries of
    kbnpack's packs) or listed in kbunnamed, not both; neither holds a
    block that is gone."""
    # one snapshot: read apart, a compaction committed between the reads
    # showed named blocks it had just merged away as gone
    o = {}
    names, _ = kbn_unpacked(srv, o)
    named = {k[:3] for k in names}
    unnamed, blocks = o["unnamed"], o["blocks"]
    t.assertEqual(named & unnamed, set())
    t.assertEqual(blocks - named - unnamed, set())
    t.assertEqual((named | unnamed) - blocks, set())


class NameSorts(Base):
    def test_ingest_blocks_named_by_compactor(self):
        """Ingest writes its blocks without kbnames rows, each listed in
        kbunnamed; the compactor names those that will not merge - a lone
        small block of an ended session, a running session's full block -
        and leaves a running stream's last small block; one-name sorts
        answer as rows do before naming (through kbunnamed) and after."""
        rnd = random.Random(53)
        names = ["a%d_kernel" % i for i in range(6)]
        # ended: one small block; running: a full block and a small one
        g1, g2 = TL.Gen(app="ended"), TL.Gen(app="running")
        for g, nk, st in ((g1, 300, 7), (g2, 5000, 9)):
            ids = [g.name(n) for n in names]
            t = TL.T0
            for j in range(nk):
                t += rnd.randrange(1, 5000)
                i = rnd.randrange(len(ids))
                g.kernel(t, rnd.randrange(10 ** i, 10 ** (i + 2)), ids[i],
                         stream=st, corr=j + 1)
        g1 = ended(g1)
        a = T.Ref(self.server("rows"))
        b = self.server("blocks", NOCOMPACT)
        for g in (g1, g2):
            g.send(a, batch=6000)
            g.send(b, batch=6000)
        self.assertEqual(count(b, "SELECT count(*) FROM kernels"), 0)
        self.assertEqual(sorted(int(r[0]) for r in
                                b.sql("SELECT n FROM kblocks")),
                         [300, 904, 4096])
        self.assertEqual(count(b, "SELECT count(*) FROM kbnames"), 0)
        self.assertEqual(b.sql("SELECT sess, stream, seq_lo FROM kbunnamed"
                               " ORDER BY 1, 2, 3"),
                         b.sql("SELECT sess, stream, seq_lo FROM kblocks"
                               " ORDER BY 1, 2, 3"))
        paths = []
        for g in (g1, g2):
            for name in ("a0_", "a3_", "a5_", "a", "nosuch"):
                for desc in ("true", "false"):
                    for lim in (1, 30, 1000):
                        paths.append("/api/v1/sessions/%s/kernels?sort="
                                     "duration&desc=%s&name=%s&limit=%d"
                                     % (g.sid, desc, name, lim))

        def same(why):
            for p in paths:
                self.assertEqual(b.get(p), a.get(p), (why, p))
            for g in (g1, g2):
                q = "/api/v1/sessions/%s/kernels?sort=duration&desc=true" \
                    "&name=a2_" % g.sid
                self.assertEqual(T.page_all(b, q, 70), T.page_all(a, q, 70),
                                 (why, q))
        same("unnamed")
        # the compactor on: both blocks named but the running stream's last
        b.stop()
        b = self.server("blocks", BLOCKS)
        wait_named(b, left=1)
        time.sleep(2)  # another pass or two: the last block stays
        s2 = count(b, "SELECT id FROM sessions WHERE app='running'")
        self.assertEqual(b.sql("SELECT sess, stream, seq_lo FROM kbunnamed"),
                         b.sql("SELECT sess, stream, max(seq_lo) FROM kblocks"
                               " WHERE sess=%d GROUP BY sess, stream" % s2))
        self.assertEqual(sorted(int(r[0]) for r in
                                b.sql("SELECT n FROM kblocks")),
                         [300, 904, 4096])  # nothing merged
        for sid, app in ((s2, "running"), (count(b, "SELECT id FROM sessions"
                                                 " WHERE app='ended'"),
                                           "ended")):
            ra = count(a, "SELECT id FROM sessions WHERE app='%s'" % app)
            rows = [tuple(int(v) for v in r) for r in
                    a.sql("SELECT stream, seq, name_id, dur FROM kernels"
                          " WHERE sess=%d" % ra)]
            blocks = b.sql("SELECT stream, seq_lo, seq_hi FROM kblocks k"
                           " WHERE sess=%d AND NOT EXISTS (SELECT 1 FROM"
                           " kbunnamed u WHERE u.sess=k.sess AND"
                           " u.stream=k.stream AND u.seq_lo=k.seq_lo)" % sid)
            self.assertEqual(len(blocks), 1, app)
            got = {(int(r[0]), int(r[1]), int(r[2])):
                   [int(r[3]), int(r[4]), int(r[5])] for r in
                   b.sql("SELECT stream, seq_lo, name_id, n, dur_min,"
                         " dur_max FROM kbnames WHERE sess=%d" % sid)}
            self.assertEqual(got, block_names(rows, blocks), app)
        same("named")

    def test_undecodable_block_does_not_stop_compaction(self):
        """A block that does not decode is passed by the compactor's merge
        and naming passes, not a stop: the blocks after it are merged and
        named (one bad block stopped every pass - the merge failing left
        every block unnamed), it stays in kbunnamed (read whole by a name
        filter) and the log says so."""
        gs = []
        for app in ("bad", "good1", "good2"):
            g = TL.Gen(app=app)
            k = g.name("k_" + app)
            for j in range(50):
                g.kernel(TL.T0 + 1000 * j, 100 + j, k, stream=3, corr=j + 1)
            gs.append(ended(g))
        b = self.server("blocks", NOCOMPACT)
        gs[0].send(b, batch=15)  # 4 small blocks
        for g in gs[1:]:
            g.send(b, batch=100)
        bad = count(b, "SELECT id FROM sessions WHERE app='bad'")
        self.assertEqual(count(b, "SELECT count(*) FROM kbunnamed"), 6)
        self.assertLess(bad, count(b, "SELECT min(id) FROM sessions WHERE"
                                   " app <> 'bad'"))  # compacted first
        lo = [int(r[0]) for r in b.sql("SELECT seq_lo FROM kblocks WHERE"
                                       " sess=%d ORDER BY 1" % bad)]
        self.assertEqual(len(lo), 4)
        b.stop()
        junk = "6e6f74206120626c6f636b"  # "not a block"
        exec_sql(b, "UPDATE kblocks SET block=%s WHERE sess=%d AND"
                 " seq_lo=%d"
                 % ("'\\x%s'::bytea" % junk if b.pgdb else "X'%s'" % junk,
                    bad, lo[1]))
        b = self.server("blocks", BLOCKS)
        wait_named(b, left=1)
        self.assertEqual(b.sql("SELECT sess, seq_lo FROM kbunnamed"),
                         [[str(bad), str(lo[1])]])
        # the two after the bad block merged, the first alone: named
        self.assertEqual([int(r[0]) for r in b.sql(
            "SELECT seq_lo FROM kblocks WHERE sess=%d ORDER BY 1" % bad)],
            lo[:3])
        for g in gs[1:]:
            p = "/api/v1/sessions/%s/kernels?sort=duration&desc=true" \
                "&name=k_&limit=5" % g.sid
            st, _, body = b.req("GET", p)
            self.assertEqual(st, 200, p)
            self.assertEqual([int(x["dur"]) for x in
                              json.loads(body)["items"]],
                             [149, 148, 147, 146, 145], p)
        deadline = time.time() + 30
        for want in ("1 kernel blocks are not merged: they or their names'"
                     " packs do not decode",
                     "1 kernel blocks do not decode and stay unnamed"):
            while want not in b.output() and time.time() < deadline:
                time.sleep(0.2)
            self.assertIn(want, b.output())

    def test_one_name_by_duration_prunes_by_name(self):
        """A sort by duration filtered by name reads the blocks through
        their names' duration bounds (kbnames, schema 22) and answers as
        rows do: names of widely different durations in every block, a
        pattern naming two kernels, a block without kbnames rows (one
        written before schema 22) read as holding any name."""
        rnd = random.Random(41)
        g = TL.Gen()
        add, fill = g.name(*TL.ADD), g.name(*TL.FILL)
        gemm = g.name(TL.GEMM)
        others = [g.name("k%d_kernel" % i) for i in range(5)]
        t = TL.T0
        for j in range(9000):
            t += rnd.choice([0, 300, 5000, 70000])
            r = rnd.random()
            if j % 61 == 7:  # rare and long
                nid, dur = gemm, rnd.randrange(10 ** 6, 10 ** 7)
            elif r < 0.4:
                nid, dur = add, rnd.randrange(1, 200)
            elif r < 0.7:
                nid, dur = fill, rnd.randrange(10 ** 3, 10 ** 5)
            else:
                i = rnd.randrange(len(others))
                nid, dur = others[i], rnd.randrange(10 ** i, 10 ** (i + 2))
            g.kernel(t, dur, nid, stream=7 + j % 2, corr=j + 1)
        g = ended(g)
        a = T.Ref(self.server("rows"))
        b = self.server("blocks", BLOCKS,
                        env={"GPUFL_SERVER_KB_RUN": str(RUN)})
        # small batches: small blocks at ingest, merged by the compactor
        g.send(a, batch=2000)
        g.send(b, batch=150)
        wait_stable(b)
        wait_named(b)  # the ended session's every block
        nb = count(b, "SELECT count(*) FROM kblocks")
        self.assertGreater(nb, 9000 // RUN // 2)
        # every block's names: counts and bounds agree with the block's
        per = b.sql("SELECT k.n, k.dur_min, k.dur_max, sum(x.n),"
                    " min(x.dur_min), max(x.dur_max), count(x.name_id)"
                    " FROM kblocks k JOIN kbnames x ON x.sess=k.sess AND"
                    " x.stream=k.stream AND x.seq_lo=k.seq_lo GROUP BY"
                    " k.sess, k.stream, k.seq_lo, k.n, k.dur_min, k.dur_max")
        self.assertEqual(len(per), nb)
        for r in per:
            self.assertEqual(r[0:3], r[3:6])
            self.assertGreaterEqual(int(r[6]), 3)  # every name, most blocks
        sid = count(b, "SELECT id FROM sessions")
        base = "/api/v1/sessions/" + g.sid
        paths = []
        for name in ("add", "Fill", "vectorized", "gemm", "k0_", "k4_",
                     "nosuchkernel", ""):
            for desc in ("true", "false"):
                for lim in (1, 40, 1000):
                    paths.append(base + "/kernels?sort=duration&desc=%s&"
                                 "name=%s&limit=%d" % (desc, name, lim))

        def same(why):
            for p in paths:
                self.assertEqual(b.get(p), a.get(p), (why, p))
            for q in ("?sort=duration&desc=true&name=gemm",
                      "?sort=duration&name=k2_"):
                self.assertEqual(T.page_all(b, base + "/kernels" + q, 17),
                                 T.page_all(a, base + "/kernels" + q, 17),
                                 (why, q))
        same("indexed")
        # the merged blocks' names went with them
        self.assertGreater(count(b, "SELECT count(*) FROM kblocks WHERE"
                                 " n > 150"), 0)  # merges made
        self.assertEqual(count(b, "SELECT count(*) FROM kbnames x WHERE"
                               " NOT EXISTS (SELECT 1 FROM kblocks k WHERE"
                               " x.sess=k.sess AND x.stream=k.stream AND"
                               " x.seq_lo=k.seq_lo)"), 0)

        # the index decides which blocks are read: without gemm's row in
        # the block of gemm's longest kernel, that block is not read
        top = a.get(base + "/kernels?sort=duration&desc=true&name=gemm"
                    "&limit=1")["items"][0]
        blk = b.sql("SELECT stream, seq_lo FROM kblocks WHERE sess=%d AND"
                    " seq_lo <= %d AND seq_hi >= %d AND stream=%d AND"
                    " EXISTS (SELECT 1 FROM kbnames x WHERE x.sess=%d AND"
                    " x.stream=kblocks.stream AND x.seq_lo=kblocks.seq_lo"
                    " AND x.name_id=%d)"
                    % (sid, top["kid"], top["kid"], int(top["stream"]), sid,
                       gemm))
        self.assertEqual(len(blk), 1, blk)
        st, lo = int(blk[0][0]), int(blk[0][1])
        key = "sess=%d AND stream=%d AND seq_lo=%d" % (sid, st, lo)
        exec_sql(b, "DELETE FROM kbnames WHERE %s AND name_id=%d"
                 % (key, gemm))
        got = b.get(base + "/kernels?sort=duration&desc=true&name=gemm"
                    "&limit=1")["items"][0]
        self.assertNotEqual(got["kid"], top["kid"])
        self.assertLessEqual(int(got["dur"]), int(top["dur"]))

        # a block without any kbnames row (as written before schema 22)
        # may hold any name: that block, and every other second block,
        # read again - listed in kbunnamed by migration 27, run again on
        # a database taken back to schema 26
        exec_sql(b, "DELETE FROM kbnames WHERE " + key)
        exec_sql(b, "DELETE FROM kbnames WHERE sess=%d AND seq_lo %% 2 = 1"
                 % sid)
        b = self.back_to_26(b, BLOCKS, {"GPUFL_SERVER_KB_RUN": str(RUN)})
        self.assertGreater(count(b, "SELECT count(*) FROM kbunnamed"), 1)
        same("older blocks")

    def back_to_26(self, srv, args, env):
        """srv restarted on its database taken back to schema 26 (no
        kbunnamed, kbnames_name for migration 37's kbnames_sn):
        migration 27 lists the blocks without kbnames rows in kbunnamed,
        36 makes kbnames_nid, 37 kbnames_sn in its place; the restarted
        server, whose compactor
        waits an hour: it would name those blocks while they are checked
        (since it names several blocks a transaction, before the test's
        first query on PostgreSQL)."""
        args = [("1h" if a == "1s" and i and
                 args[i - 1] == "--kernel-compact-interval" else a)
                for i, a in enumerate(args)]
        srv.stop()
        for q in ("DELETE FROM schema_version WHERE version>=27",
                  "DROP TABLE kbunnamed", "DROP INDEX kbnames_sn",
                  "CREATE INDEX kbnames_name ON kbnames(sess, name_id)"):
            exec_sql(srv, q)
        srv = self.server(os.path.basename(srv.data_dir), args, env=env)
        self.assertEqual(count(srv, "SELECT max(version) FROM"
                               " schema_version"), 37)
        if srv.pgdb:
            # migration 35: blocks go out of line as they are, not through
            # pglz (zstd's output: it kept none and cost the backend 5 %)
            for t, c in (("kblocks", "block"), ("oblocks", "payload")):
                self.assertEqual(srv.sql(
                    "SELECT attstorage FROM pg_attribute WHERE attrelid ="
                    " '%s'::regclass AND attname = '%s'" % (t, c)), [["e"]])
        unnamed = ("SELECT k.sess, k.stream, k.seq_lo FROM kblocks k WHERE"
                   " NOT EXISTS (SELECT 1 FROM kbnames x WHERE"
                   " x.sess=k.sess AND x.stream=k.stream AND"
                   " x.seq_lo=k.seq_lo) ORDER BY 1, 2, 3")
        self.assertEqual(srv.sql("SELECT sess, stream, seq_lo FROM kbunnamed"
                                 " ORDER BY 1, 2, 3"), srv.sql(unnamed))
        return srv

    def test_one_name_read_in_order(self):
        """A sort by duration (longest first) filtered by one name reads
        that name's blocks longest first (kbnames by dur_max), in chunks (128
        rows, then 256; rows tied at a chunk's end read whole), merged
        with the blocks without kbnames rows (kbunnamed), and stops at the
        first block that cannot place: every page and every cursor's
        answers as rows.  Hundreds of blocks of 20 kernels; a name of
        durations 1 to 30 (most blocks tie at its longest), one of one
        duration (every block ties: the order is by seq), one whose
        longest kernels are in a few blocks, one rare."""
        rnd = random.Random(47)
        g = TL.Gen()
        few = g.name("few_kernel")
        tie = g.name("tie_kernel")
        rare = g.name("rare_kernel")
        wide = g.name("wide_kernel")
        flat = g.name("flat_kernel")
        t = TL.T0
        for j in range(6000):
            t += rnd.choice([0, 300, 5000])
            r = rnd.random()
            if j % 97 == 5:
                nid, dur = rare, rnd.randrange(10 ** 3, 10 ** 8)
            elif r < 0.1:
                nid, dur = flat, 4242
            elif r < 0.3:
                nid, dur = tie, rnd.randrange(1, 31)
            elif r < 0.6:
                # a few long kernels among many short ones
                nid = few
                dur = rnd.randrange(10 ** 6, 10 ** 7) if rnd.random() < \
                    0.01 else rnd.randrange(1, 10 ** 4)
            else:
                nid, dur = wide, rnd.randrange(0, 10 ** 6)
            g.kernel(t, dur, nid, stream=7 + j % 3, corr=j + 1)
        g = ended(g)
        a, b, nb = self.small_named_blocks(g, 256)  # more than two chunks
        base = "/api/v1/sessions/" + g.sid
        t0 = TL.T0 + 10 ** 7

        def same(why):
            for name in ("tie_", "flat_", "few_", "rare_", "wide_",
                         "nosuch"):
                for lim in (1, 7, 100, 1000):
                    for rng in ("", "&from=%d&to=%d" % (t0, t0 + 10 ** 7)):
                        p = (base + "/kernels?sort=duration&desc=true&name="
                             "%s&limit=%d%s" % (name, lim, rng))
                        self.assertEqual(b.get(p), a.get(p), (why, p))
            for name in ("tie_", "flat_", "few_"):
                q = "?sort=duration&desc=true&name=" + name
                self.assertEqual(T.page_all(b, base + "/kernels" + q, 150),
                                 T.page_all(a, base + "/kernels" + q, 150),
                                 (why, q))
        same("named")
        # the blocks of few's longest kernels, and a third of the others,
        # as written before schema 22 (no kbnames rows): found through
        # kbunnamed, longest first among the named ones
        sid = count(b, "SELECT id FROM sessions")
        exec_sql(b, "DELETE FROM kbnames WHERE sess=%d AND (seq_lo %% 3 = 0"
                    " OR EXISTS (SELECT 1 FROM kbnames x WHERE x.sess="
                    "kbnames.sess AND x.stream=kbnames.stream AND x.seq_lo="
                    "kbnames.seq_lo AND x.name_id=%d AND x.dur_max >= %d))"
                 % (sid, few, 10 ** 6))
        b = self.back_to_26(b, BLOCKS, self.RUN20)
        self.assertGreater(count(b, "SELECT count(*) FROM kbunnamed"), nb // 4)
        same("unnamed")

    RUN20 = {"GPUFL_SERVER_KB_RUN": "20"}

    def small_named_blocks(self, g, least=500, args=()):
        """g sent to a rows server and to a blocks server (args added)
        whose ingest writes blocks of 20 kernels a stream, compacted and
        named: (rows server, blocks server, its number of blocks, over
        least)."""
        a = T.Ref(self.server("rows"))
        b = self.server("blocks", BLOCKS + list(args), env=self.RUN20)
        g.send(a, batch=3000)
        g.send(b, batch=60)  # ingest's blocks: 20 kernels a stream
        wait_compacted(b)
        wait_stable(b)
        # naming follows the merges: settled blocks may still be unnamed
        # for a while on a loaded machine
        wait_named(b)
        nb = count(b, "SELECT count(*) FROM kblocks")
        self.assertGreater(nb, least)
        self.assertEqual(count(b, "SELECT count(*) FROM kbunnamed"), 0)
        return a, b, nb

    def test_shortest_first_and_names_in_order(self):
        """A sort by duration filtered by name, shortest first, reads the
        name's blocks by their dur_min (kbnames' dur_min; migration 28)
        and a filter matching several names merges the names' ordered
        streams (a block holding two of them offered once), either way:
        every page and cursor answers as rows, and a page reads a chunk
        of each name's index rows, not every block's
        (gpufl_server_kblocks_index_rows_total; before: every block of
        the range).  Names of durations 1 to 30 (most blocks tie at the
        shortest), of one duration, one whose shortest kernels are in a
        few blocks, one rare, two in every block (sa_)."""
        rnd = random.Random(59)
        g = TL.Gen()
        one, two = g.name("sa_one_kernel"), g.name("sa_two_kernel")
        tie, flat = g.name("tie_kernel"), g.name("flat_kernel")
        few, rare = g.name("few_kernel"), g.name("rare_kernel")
        t = TL.T0
        for j in range(12000):
            t += rnd.choice([0, 300, 5000])
            r = rnd.random()
            if j % 97 == 5:
                nid, dur = rare, rnd.randrange(10 ** 3, 10 ** 8)
            elif r < 0.1:
                nid, dur = flat, 4242
            elif r < 0.3:
                nid, dur = tie, rnd.randrange(1, 31)
            elif r < 0.45:
                # a few short kernels among many long ones
                nid = few
                dur = rnd.randrange(0, 10 ** 3) if rnd.random() < 0.01 \
                    else rnd.randrange(10 ** 6, 10 ** 7)
            else:
                nid, dur = rnd.choice([one, two]), rnd.randrange(0, 10 ** 6)
            g.kernel(t, dur, nid, stream=7 + j % 3, corr=j + 1)
        g = ended(g)
        a, b, nb = self.small_named_blocks(g)
        # sa_one and sa_two in (nearly) every block
        self.assertGreater(count(b, "SELECT count(*) FROM kbnames WHERE"
                                    " name_id=%d" % one), nb * 9 // 10)
        base = "/api/v1/sessions/" + g.sid
        t0 = TL.T0 + 10 ** 7

        def same(why):
            for name in ("sa_one", "sa_", "tie_", "flat_", "few_", "rare_",
                         "_kernel", "nosuch"):
                for desc in ("false", "true"):
                    for lim in (1, 7, 100, 1000):
                        for rng in ("", "&from=%d&to=%d" % (t0, t0 + 10 ** 7)):
                            p = (base + "/kernels?sort=duration&desc=%s&"
                                 "name=%s&limit=%d%s" % (desc, name, lim, rng))
                            self.assertEqual(b.get(p), a.get(p), (why, p))
            for q in ("?sort=duration&name=tie_", "?sort=duration&name=flat_",
                      "?sort=duration&name=few_", "?sort=duration&name=sa_",
                      "?sort=duration&desc=true&name=sa_",
                      "?sort=duration&desc=false&name=e_k"):
                self.assertEqual(T.page_all(b, base + "/kernels" + q, 150),
                                 T.page_all(a, base + "/kernels" + q, 150),
                                 (why, q))
        same("named")

        # a page of 20 reads the first chunk (128 rows) of each name's
        # index rows; before, every block's index row
        for name, desc, most in (("sa_one", "false", nb // 2),
                                 ("rare_", "false", nb // 2),
                                 ("sa_", "false", nb * 7 // 10),
                                 ("sa_", "true", nb * 7 // 10)):
            p = (base + "/kernels?sort=duration&desc=%s&name=%s&limit=20"
                 % (desc, name))
            before = T.metric(b, "gpufl_server_kblocks_index_rows_total")
            self.assertEqual(b.get(p), a.get(p), p)
            rows = (T.metric(b, "gpufl_server_kblocks_index_rows_total")
                    - before)
            print("  %s desc=%s: %d index rows (%d blocks)"
                  % (name, desc, rows, nb))
            self.assertLess(rows, most, p)

        # the blocks of few's shortest kernels, and a third of the others,
        # as written before schema 22 (no kbnames rows): found through
        # kbunnamed, in order among the named ones
        sid = count(b, "SELECT id FROM sessions")
        exec_sql(b, "DELETE FROM kbnames WHERE sess=%d AND (seq_lo %% 3 = 0"
                    " OR EXISTS (SELECT 1 FROM kbnames x WHERE x.sess="
                    "kbnames.sess AND x.stream=kbnames.stream AND x.seq_lo="
                    "kbnames.seq_lo AND x.name_id=%d AND x.dur_min < %d))"
                 % (sid, few, 10 ** 3))
        b = self.back_to_26(b, BLOCKS, self.RUN20)
        self.assertGreater(count(b, "SELECT count(*) FROM kbunnamed"), nb // 4)
        same("unnamed")

    def test_several_names_read_ties_when_needed(self):
        """A filter of several names whose every name ties at its longest
        (and shortest) duration in most blocks: a page reads the tied
        kbnames rows of the name that places only, not every name's (the
        tied rows of a chunk's end are read when the merge gets to them;
        at 100M kernels bench_scale's 11-name page read 7 600 index rows
        for ~700 since: docs/server.md "Several names by duration at
        100M"), and every page and cursor's pages answer as rows."""
        rnd = random.Random(61)
        g = TL.Gen()
        ids = [g.name("tn_%d_kernel" % i) for i in range(8)]
        t = TL.T0
        for j in range(12000):
            t += rnd.choice([0, 300, 5000])
            i = rnd.randrange(8)
            r = rnd.random()
            # name i: shortest i + 1, longest 1000 (i + 1), each in most
            # blocks
            dur = (1000 * (i + 1) if r < 0.4 else i + 1 if r < 0.8
                   else rnd.randrange(i + 2, 1000 * (i + 1)))
            g.kernel(t, dur, ids[i], stream=7 + j % 3, corr=j + 1)
        g = ended(g)
        a, b, nb = self.small_named_blocks(g)
        base = "/api/v1/sessions/" + g.sid
        sid = count(b, "SELECT id FROM sessions")

        def tied(col, i, v):
            return count(b, "SELECT count(*) FROM kbnames WHERE sess=%d AND"
                            " name_id=%d AND %s=%d" % (sid, ids[i], col, v))

        # every name ties in most blocks: the answer's name (the longest,
        # tn_7, or the shortest, tn_0) in its tied rows, the others in
        # theirs
        for desc, col, top, v in (("true", "dur_max", 7, 8000),
                                  ("false", "dur_min", 0, 1)):
            own = tied(col, top, v)
            rest = sum(tied(col, i, 1000 * (i + 1) if desc == "true"
                            else i + 1) for i in range(8) if i != top)
            self.assertGreater(own, nb // 3)
            self.assertGreater(rest, 7 * nb // 3)
            for lim in (1, 20, 100):
                p = (base + "/kernels?sort=duration&desc=%s&name=tn_"
                     "&limit=%d" % (desc, lim))
                before = T.metric(b, "gpufl_server_kblocks_index_rows_total")
                self.assertEqual(b.get(p), a.get(p), p)
                rows = T.metric(b, "gpufl_server_kblocks_index_rows_total") - \
                    before
                print("  tn_ desc=%s limit=%d: %d index rows (%d tied of"
                      " the name, %d of the others)" % (desc, lim, rows,
                                                        own, rest))
                # the name's tied rows, a chunk or two past them, and the
                # first chunk of each other name (before: every name's
                # tied rows)
                self.assertLess(rows, own + 400, p)
        for desc in ("false", "true"):
            for lim in (7, 1000):
                p = (base + "/kernels?sort=duration&desc=%s&name=tn_"
                     "&limit=%d" % (desc, lim))
                self.assertEqual(b.get(p), a.get(p), p)
            for name in ("tn_", "tn_3", "_kernel"):
                q = "?sort=duration&desc=%s&name=%s" % (desc, name)
                self.assertEqual(T.page_all(b, base + "/kernels" + q, 900),
                                 T.page_all(a, base + "/kernels" + q, 900), q)

    def test_deep_pages_by_cursor_decode_no_more(self):
        """A name's pages by duration followed by cursor, when its longest
        (and shortest) duration ties in most blocks: a page deep into the
        tie decodes about as many blocks as the first, not the blocks of
        every page before it again (docs/server.md "100M an eighth time":
        +25 ms a page of depth at 100M), either way; every page answers
        as rows."""
        rnd = random.Random(67)
        g = TL.Gen()
        tz, other = g.name("tz_kernel"), g.name("oz_kernel")
        t = TL.T0
        for j in range(12000):
            t += rnd.choice([0, 300, 5000])
            r = rnd.random()
            # tz: 9000 or 2 in most blocks, a few values between
            if r < 0.12:
                g.kernel(t, 9000, tz, stream=7 + j % 3, corr=j + 1)
            elif r < 0.24:
                g.kernel(t, 2, tz, stream=7 + j % 3, corr=j + 1)
            elif r < 0.3:
                g.kernel(t, rnd.choice([50, 400, 3000]), tz,
                         stream=7 + j % 3, corr=j + 1)
            else:
                g.kernel(t, rnd.randrange(1, 20000), other,
                         stream=7 + j % 3, corr=j + 1)
        g = ended(g)
        # no decoded blocks kept: every block a page reads is decoded,
        # and counted (gpufl_server_kblocks_decoded_total)
        a, b, nb = self.small_named_blocks(g, args=("--kernel-block-cache", "0"))
        base = "/api/v1/sessions/" + g.sid
        for desc in ("true", "false"):
            p = base + "/kernels?sort=duration&desc=%s&name=tz_&limit=20" \
                % desc
            cur, per = None, []
            for _ in range(30):  # 600 kernels: deep into the tie
                q = p + ("&cursor=" + cur if cur else "")
                before = T.metric(b, "gpufl_server_kblocks_decoded_total")
                got = b.get(q)
                per.append(T.metric(b, "gpufl_server_kblocks_decoded_total")
                           - before)
                self.assertEqual(got, a.get(q), q)
                cur = got.get("next")
                if not cur:
                    break
            print("  tz_ desc=%s: blocks decoded a page %s (of %d)"
                  % (desc, per, nb))
            self.assertGreaterEqual(len(per), 20, "pages deep into the tie")
            # before: page k decoded the k - 1 pages' blocks before it again
            # (~20 more a page: the last above 400)
            self.assertLess(max(per[10:20]), 3 * max(per[:3]) + 10, per)

    def test_many_names_per_block(self):
        """A block of more names than one kbnames INSERT writes (64 rows a
        statement): every name's row, count and bounds as the rows say."""
        rnd = random.Random(43)
        g = TL.Gen()
        names = [g.name("n%03d_kernel" % i) for i in range(150)]
        t = TL.T0
        for j in range(6000):
            t += rnd.randrange(1, 5000)
            g.kernel(t, rnd.randrange(0, 10 ** 6), rnd.choice(names),
                     stream=7 + j % 2, corr=j + 1)
        g = ended(g)
        a = T.Ref(self.server("rows"))
        # ingest's blocks of 1,500 kernels, full at a run of 1,000: not
        # merged, named by the compactor (the session ended)
        b = self.server("blocks", BLOCKS, env={"GPUFL_SERVER_KB_RUN": "1000"})
        g.send(a, batch=3000)
        g.send(b, batch=3000)
        wait_named(b)
        rows = [tuple(int(v) for v in r) for r in
                a.sql("SELECT stream, seq, name_id, dur FROM kernels")]
        want = block_names(rows, b.sql("SELECT stream, seq_lo, seq_hi FROM"
                                       " kblocks"))
        got = {(int(r[0]), int(r[1]), int(r[2])):
               [int(r[3]), int(r[4]), int(r[5])] for r in
               b.sql("SELECT stream, seq_lo, name_id, n, dur_min, dur_max"
                     " FROM kbnames")}
        self.assertEqual(got, want)
        per = {}
        for st, lo, _ in got:
            per[(st, lo)] = per.get((st, lo), 0) + 1
        # the full batches' blocks: three statements each
        self.assertGreaterEqual(sum(v > 2 * 64 for v in per.values()), 4,
                                per)
        base = "/api/v1/sessions/" + g.sid
        for name in ("n007_", "n149_", "n1"):
            p = base + "/kernels?sort=duration&desc=true&name=%s&limit=50" \
                % name
            self.assertEqual(b.get(p), a.get(p), p)


def name_kernels(g, rnd, nk, t, corr):
    """nk kernels after time t over streams 7-9 of names of many ties
    (durations 1 to 30), of one duration, of a few short ones among
    long ones, a rare one and two in every block (sa_); the last time."""
    ids = {n: g.name(n + "_kernel") for n in ("sa_one", "sa_two", "tie",
                                               "flat", "few", "rare")}
    for j in range(nk):
        t += rnd.choice([0, 300, 5000])
        r = rnd.random()
        if j % 97 == 5:
            nid, dur = ids["rare"], rnd.randrange(10 ** 3, 10 ** 8)
        elif r < 0.1:
            nid, dur = ids["flat"], 4242
        elif r < 0.3:
            nid, dur = ids["tie"], rnd.randrange(1, 31)
        elif r < 0.45:
            nid = ids["few"]
            dur = rnd.randrange(0, 10 ** 3) if rnd.random() < 0.01 \
                else rnd.randrange(10 ** 6, 10 ** 7)
        else:
            nid = rnd.choice([ids["sa_one"], ids["sa_two"]])
            dur = rnd.randrange(0, 10 ** 6)
        g.kernel(t, dur, nid, stream=7 + j % 3, corr=corr + j)
    return t


def kbn_unpacked(srv, others=None):
    """kbnames with its packs (kbnpack, schema 30: per block four varints
    - seq_lo as the step from the previous one's (the first from r0), n,
    dur_min, dur_max - dur_min) unpacked: {(sess, stream, seq_lo, name
    id): (n, dur_min, dur_max)}, and the packs' blocks from their range's
    directory (kbndir: per block seq_lo as in a pack, seq_hi - seq_lo,
    t_lo as the zigzag step from the previous block's t_hi, t_hi - t_lo):
    {(sess, stream, seq_lo): (seq_hi, t_lo, t_hi)}.  A block both in rows
    and in a pack of the same name, or in a pack and not in its
    directory, is a failure.  others: a dict given gets, from the same
    snapshot, "unnamed" (kbunnamed) and "blocks" (kblocks), each a set of
    (sess, stream, seq_lo)."""
    m64 = (1 << 64) - 1
    names, blocks, dirs = {}, {}, {}
    hexf = "encode(data, 'hex')" if srv.pgdb else "hex(data)"
    # one statement, one snapshot: read in three, a pass of the packer
    # committed between them showed a block in rows and in a pack
    got = srv.sql("SELECT 0, sess, stream, seq_lo, name_id, n, dur_min,"
                  " dur_max, '' FROM kbnames UNION ALL SELECT 1, sess,"
                  " stream, r0, 0, 0, 0, 0, %s FROM kbndir UNION ALL"
                  " SELECT 2, sess, stream, r0, name_id, 0, 0, 0, %s FROM"
                  " kbnpack%s" % (hexf, hexf, "" if others is None else
                                  " UNION ALL SELECT 3, sess, stream, seq_lo,"
                                  " 0, 0, 0, 0, '' FROM kbunnamed UNION ALL"
                                  " SELECT 4, sess, stream, seq_lo, 0, 0, 0,"
                                  " 0, '' FROM kblocks"))
    if others is not None:
        for tag, key in (("3", "unnamed"), ("4", "blocks")):
            others[key] = {tuple(int(c) for c in r[1:4]) for r in got
                           if r[0] == tag}
    for r in got:
        if r[0] == "0":
            names[tuple(int(c) for c in r[1:5])] = \
                tuple(int(c) for c in r[5:8])
    for sess, stream, r0, h in [(r[1], r[2], r[3], r[8]) for r in got
                                if r[0] == "1"]:
        v = uvarints(bytes.fromhex(h))
        assert len(v) % 4 == 0, (sess, stream, r0)
        lo, th = int(r0), 0
        for i in range(0, len(v), 4):
            z = v[i + 2] & m64
            lo += v[i]
            t_lo = th + ((z >> 1) ^ -(z & 1))
            th = t_lo + v[i + 3]
            dirs[(int(sess), int(stream), lo)] = (lo + v[i + 1], t_lo, th)
    for sess, stream, r0, nid, h in [(r[1], r[2], r[3], r[4], r[8])
                                     for r in got if r[0] == "2"]:
        v = uvarints(bytes.fromhex(h))
        assert len(v) % 4 == 0, (sess, stream, r0, nid)
        lo = int(r0)
        for i in range(0, len(v), 4):
            lo += v[i]
            k = (int(sess), int(stream), lo, int(nid))
            assert k not in names, ("in rows and in a pack", k)
            assert k[:3] in dirs, ("not in its directory", k)
            names[k] = (v[i + 1], v[i + 2], v[i + 2] + v[i + 3])
            blocks[k[:3]] = dirs[k[:3]]
    return names, blocks


class NamePack(Base):
    """Both databases (schema 30; SQLite since docs/server.md "100M a
    seventh time"): the maintenance pass packs the kbnames rows of each
    range of 2^20 seqs of a (session, stream) into one kbnpack row per name (store_sql_kbnpack.c), and the sorts by duration filtered by
    name answer as a rows server's - packed, with a session's last
    (unnamed) blocks, with rows named late beside the packs, once those
    are folded in, after a merge of packed blocks (a stale session that
    resumed) and after a kill -9 while packing; the packs hold exactly
    what kbnames held, their blocks' seq and time ranges those of
    kblocks; retention deletes them."""

    ENV = {"GPUFL_SERVER_KB_RUN": "20"}

    def settle(self, srv, timeout=60):
        """Until every block is named but a running stream's last (3
        streams) and no kbnames row is left unpacked."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if count(srv, "SELECT count(*) FROM kbnames") == 0 and \
                    count(srv, "SELECT count(*) FROM kbunnamed") <= 3 and \
                    count(srv, "SELECT count(*) FROM kbnpack") > 0:
                return
            time.sleep(0.2)
        raise AssertionError("not packed in %d s" % timeout)

    def check_packs(self, a, b, what):
        """b's kbnames rows and packs unpacked: one per (block, name) of
        its named blocks, with the counts and bounds of a's kernels (a
        rows server's), the blocks' ranges as kblocks has them."""
        names, blocks = kbn_unpacked(b)
        kb = {tuple(int(c) for c in r[:3]): tuple(int(c) for c in r[3:])
              for r in b.sql("SELECT sess, stream, seq_lo, seq_hi, t_lo,"
                             " t_hi FROM kblocks")}
        for k, v in blocks.items():
            self.assertEqual(kb.get(k), v, (what, "pack's block", k))
        unnamed = {tuple(int(c) for c in r) for r in b.sql(
            "SELECT sess, stream, seq_lo FROM kbunnamed")}
        rows = [tuple(int(c) for c in r) for r in a.sql(
            "SELECT stream, seq, name_id, dur FROM kernels")]
        sess = {k[0] for k in kb}
        self.assertEqual(len(sess), 1, what)
        sid = sess.pop()
        want = block_names(rows, [(k[1], k[2], v[0]) for k, v in kb.items()
                                  if k not in unnamed])
        got = {k[1:]: list(v) for k, v in names.items()}
        self.assertEqual(len(got), len(want), what)
        self.assertEqual(got, {k: v for k, v in want.items()}, what)
        self.assertTrue(all(k[0] == sid for k in names), what)

    def same(self, a, b, sid, what):
        base = "/api/v1/sessions/" + sid
        t0 = TL.T0 + 10 ** 7
        for name in ("sa_one", "sa_", "tie_", "flat_", "few_", "rare_",
                     "_kernel", "nosuch"):
            for desc in ("false", "true"):
                for lim in (1, 7, 100):
                    for rng in ("", "&from=%d&to=%d" % (t0, t0 + 10 ** 7)):
                        p = (base + "/kernels?sort=duration&desc=%s&"
                             "name=%s&limit=%d%s" % (desc, name, lim, rng))
                        self.assertEqual(b.get(p), a.get(p), (what, p))
        for q in ("?sort=duration&name=tie_", "?sort=duration&name=few_",
                  "?sort=duration&desc=true&name=sa_"):
            self.assertEqual(T.page_all(b, base + "/kernels" + q, 150),
                             T.page_all(a, base + "/kernels" + q, 150),
                             (what, q))

    def more(self, g, rnd, a, b, nk, t):
        """nk kernels more after time t into a and b; the last time."""
        n0 = len(g.lines["device"])
        t = name_kernels(g, rnd, nk, t, 10 ** 6 + n0)
        n1 = len(g.lines["device"])
        for srv in (a, b):
            for i in range(n0, n1, 45):  # ingest's blocks: 15 a stream
                srv.ingest_ok("device", device_lines(
                    g, range(i, min(i + 45, n1))))
        return t

    def packed(self, seed, rows=True):
        """The setup of the tests of what the packer passes: 3000 kernels
        of many names (random seed) in a blocks server b, in ingest's
        blocks of 15 merged by 2, compacted, named and packed (settle);
        and in a rows server a to compare with (None without rows).
        (g, rnd, t: the last kernel's time, a, b)"""
        rnd = random.Random(seed)
        g = TL.Gen()
        t = name_kernels(g, rnd, 3000, TL.T0, 1)
        a = T.Ref(self.server("rows")) if rows else None
        b = self.server("blocks", BLOCKS, env=self.ENV)
        if a is not None:
            g.send(a, batch=3000)
        g.send(b, batch=45)
        wait_compacted(b)
        wait_stable(b)
        self.settle(b)
        return g, rnd, t, a, b

    def test_packed_answers_equal_rows(self):
        rnd = random.Random(3001)
        g = TL.Gen()
        t = name_kernels(g, rnd, 6000, TL.T0, 1)
        a = T.Ref(self.server("rows"))
        b = self.server("blocks", BLOCKS, env=self.ENV)
        g.send(a, batch=3000)
        g.send(b, batch=45)  # ingest's blocks of 15: merged by 2
        wait_compacted(b)
        wait_stable(b)
        self.settle(b)
        self.assertGreater(count(b, "SELECT count(*) FROM kblocks"), 150)
        self.check_packs(a, b, "packed")
        self.same(a, b, g.sid, "packed")

        # blocks named late: rows beside the range's packs (no packer
        # meanwhile), then folded in
        b.stop()
        b = self.server("blocks", BLOCKS,
                        env=dict(self.ENV, GPUFL_SERVER_KBNP_OFF="1"))
        t = self.more(g, rnd, a, b, 1500, t)
        wait_compacted(b)
        wait_stable(b)
        wait_named(b, left=3)
        beside = ("SELECT count(*) FROM kbnames n WHERE EXISTS (SELECT 1"
                  " FROM kbnpack p WHERE p.sess=n.sess AND"
                  " p.stream=n.stream AND p.r0=n.seq_lo >> 20 << 20 AND"
                  " p.name_id=n.name_id)")
        self.assertGreater(count(b, beside), 100)
        self.check_packs(a, b, "rows beside packs")
        self.same(a, b, g.sid, "rows beside packs")
        b.stop()
        b = self.server("blocks", BLOCKS, env=self.ENV)
        self.settle(b)
        self.check_packs(a, b, "rows folded in")
        self.same(a, b, g.sid, "rows folded in")

        # a stale session: its last blocks named and packed too; it
        # resumes, and ingest's new blocks merge with those (the merge
        # puts their range's packs back as rows first); 2 kernels a
        # stream first: each stream's last block small
        t = self.more(g, rnd, a, b, 6, t)
        wait_compacted(b)
        exec_sql(b, "UPDATE sessions SET state='stale'")
        deadline = time.time() + 60
        while time.time() < deadline and (
                count(b, "SELECT count(*) FROM kbunnamed") or
                count(b, "SELECT count(*) FROM kbnames")):
            time.sleep(0.2)
        self.assertEqual(count(b, "SELECT count(*) FROM kbunnamed"), 0)
        nq = "SELECT n FROM kblocks WHERE stream=%s AND seq_lo=%s"
        last = b.sql("SELECT stream, max(seq_lo) FROM kblocks GROUP BY"
                     " stream ORDER BY 1")
        small = [(r[0], r[1], count(b, nq % tuple(r))) for r in last]
        small = [r for r in small if r[2] < 20]
        self.assertTrue(small, last)  # some stream ends in a small block
        # no packer: what the merge left (a pack naming the merged block
        # as it was, beside its rows, were the packs not put back)
        b.stop()
        b = self.server("blocks", BLOCKS,
                        env=dict(self.ENV, GPUFL_SERVER_KBNP_OFF="1"))
        t = self.more(g, rnd, a, b, 12, t)
        wait_compacted(b)
        wait_stable(b)
        wait_named(b, left=3)
        for st_, lo, n in small:  # merged: the block there grew
            self.assertGreater(count(b, nq % (st_, lo)), n, (st_, lo))
        self.check_packs(a, b, "after a merge of packed blocks")
        self.same(a, b, g.sid, "after a merge of packed blocks")
        b.stop()
        b = self.server("blocks", BLOCKS, env=self.ENV)
        self.settle(b)
        self.check_packs(a, b, "after a merge, packed again")
        self.same(a, b, g.sid, "after a merge, packed again")

        # kill -9 while packing (a pause inside each range's transaction,
        # after its rows' delete): each range its rows or its packs
        rnd2 = random.Random(3002)
        g2 = TL.Gen()
        name_kernels(g2, rnd2, 3000, TL.T0, 1)
        a2 = T.Ref(self.server("rows2"))
        c = self.server("killed", BLOCKS, env=dict(
            self.ENV, GPUFL_SERVER_KBNP_PAUSE_MS="2500"))
        g2.send(a2, batch=3000)
        g2.send(c, batch=45)
        wait_compacted(c)
        wait_named(c, left=3)
        time.sleep(1.0)
        c.kill()
        c = self.server("killed", BLOCKS, env=dict(
            self.ENV, GPUFL_SERVER_KBNP_OFF="1"))
        self.assertGreater(count(c, "SELECT count(*) FROM kbnames"), 0,
                           "the killed transaction's rows are back")
        self.check_packs(a2, c, "after kill -9, unpacked")
        self.same(a2, c, g2.sid, "after kill -9, unpacked")
        c.stop()
        c = self.server("killed", BLOCKS, env=self.ENV)
        self.settle(c)
        self.check_packs(a2, c, "after kill -9, packed")
        self.same(a2, c, g2.sid, "after kill -9, packed")

        # retention: the sessions' packs go with their blocks
        time.sleep(1.2)
        st, _, body = c.req("POST", "/api/v1/admin/retention?max_age=1")
        self.assertEqual(st, 200, body)
        self.assertEqual(count(c, "SELECT count(*) FROM kblocks"), 0)
        self.assertEqual(count(c, "SELECT count(*) FROM kbnpack"), 0)

    def test_undecodable_pack_does_not_stop_packing(self):
        """A pack that does not decode (a corrupted database) is passed by
        the packer, not a stop: its range's rows stay rows, the rows of
        another range of the same transaction are packed, the log says
        so (and names it with --log-level=debug), a sort of its name
        answers an error, and of another name as before."""
        g, _, _, a, b = self.packed(3003)
        b.stop()
        keys = b.sql("SELECT stream, r0, name_id FROM kbnpack ORDER BY 1, 3")
        streams = sorted({k[0] for k in keys})
        self.assertGreaterEqual(len(streams), 3)
        s_bad, s_ok = streams[0], streams[-1]
        nid = {int(k[2]) for k in keys if k[0] == s_bad} & \
            {int(k[2]) for k in keys if k[0] == s_ok}
        bad_name, moved = sorted(nid)[:2]
        names, _ = kbn_unpacked(b)
        # one name's pack of each of the two ranges back as rows (late
        # rows to pack), then the other name's pack of the first range
        # cut short
        for st_ in (s_bad, s_ok):
            for k, v in names.items():
                if k[1] == int(st_) and k[3] == moved:
                    exec_sql(b, "INSERT INTO kbnames VALUES(%d, %d, %d, %d,"
                             " %d, %d, %d)" % (k + v))
            exec_sql(b, "DELETE FROM kbnpack WHERE stream=%s AND name_id=%d"
                     % (st_, moved))
        exec_sql(b, "UPDATE kbnpack SET data=substr(data, 1, 3)"
                 " WHERE stream=%s AND name_id=%d" % (s_bad, bad_name))
        rows = "SELECT count(*) FROM kbnames WHERE stream=%s"
        self.assertGreater(count(b, rows % s_bad), 0)
        self.assertGreater(count(b, rows % s_ok), 0)
        b = self.server("blocks", BLOCKS + ["--log-level", "debug"],
                        env=self.ENV)
        deadline = time.time() + 60
        while count(b, rows % s_ok) and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(count(b, rows % s_ok), 0, "the other range packed")
        self.assertGreater(count(b, rows % s_bad), 0, "its rows stay")
        want = "1 kernel block name range(s) cannot be packed"
        while want not in b.output() and time.time() < deadline:
            time.sleep(0.2)
        self.assertIn(want, b.output())
        self.assertIn("stream %s r0 0 name %d: its pack does not decode"
                      % (s_bad, bad_name), b.output())
        nm = {v: k for k, v in g.names.items()}
        base = "/api/v1/sessions/%s/kernels?sort=duration&name=" % g.sid
        st, _, body = b.req("GET", base + nm[bad_name])
        self.assertEqual(st, 500, body)
        self.assertEqual(b.get(base + nm[moved]), a.get(base + nm[moved]))
        st, _, _ = b.req("GET", "/api/v1/sessions")
        self.assertEqual(st, 200)

    def test_range_too_large_stays_rows(self):
        """A range whose rows and packed entries together are more than a
        pass packs (KBNP_GROUP_MAX, 2^19: a range of many names in many
        small blocks) is passed before its rows are deleted, not a stop:
        its rows stay rows, a range of another stream in the same
        transaction is packed, the log says so and --log-level=debug
        names it.  One row over the bound exactly: packed entries + rows
        = 2^19 + 1."""
        group_max = 1 << 19
        _, _, _, _, b = self.packed(3005, rows=False)
        b.stop()
        keys = b.sql("SELECT stream, r0, name_id FROM kbnpack ORDER BY 1, 3")
        streams = sorted({int(k[0]) for k in keys})
        self.assertGreaterEqual(len(streams), 3)
        # the big range first in the packer's order, the other after it
        s_big, s_ok = streams[0], streams[-1]
        names, _ = kbn_unpacked(b)
        packed = sum(1 for k in names if k[1] == s_big)
        # late rows of one name in s_ok's range, its pack gone
        moved = min(k[3] for k in names if k[1] == s_ok)
        for k, v in names.items():
            if k[1] == s_ok and k[3] == moved:
                exec_sql(b, "INSERT INTO kbnames VALUES(%d, %d, %d, %d,"
                         " %d, %d, %d)" % (k + v))
        exec_sql(b, "DELETE FROM kbnpack WHERE stream=%d AND name_id=%d"
                 % (s_ok, moved))
        # rows of names no pack has, over s_big's blocks: one too many
        extra = group_max - packed + 1
        # a recursive series: SQLite's library has no generate_series
        exec_sql(b, "WITH RECURSIVE g(i) AS (SELECT 0 UNION ALL SELECT"
                 " i + 1 FROM g WHERE i < %d) INSERT INTO kbnames SELECT"
                 " sess, stream, seq_lo, 1000000 + i, 1, 5, 5 FROM kblocks"
                 " CROSS JOIN g WHERE stream=%d ORDER BY i, seq_lo LIMIT %d"
                 % (extra, s_big, extra))
        rows = "SELECT count(*) FROM kbnames WHERE stream=%d"
        self.assertEqual(count(b, rows % s_big), extra)
        self.assertGreater(count(b, rows % s_ok), 0)
        b = self.server("blocks", BLOCKS + ["--log-level", "debug"],
                        env=self.ENV)
        deadline = time.time() + 60
        while count(b, rows % s_ok) and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(count(b, rows % s_ok), 0, "the other range packed")
        want = "1 kernel block name range(s) cannot be packed"
        while want not in b.output() and time.time() < deadline:
            time.sleep(0.2)
        self.assertIn(want, b.output())
        self.assertIn("stream %d r0 0: %d rows and %d packed entries are"
                      " more than a pass packs; its rows stay"
                      % (s_big, extra, packed), b.output())
        self.assertEqual(count(b, rows % s_big), extra, "its rows stay")

    def test_merge_meets_undecodable_pack(self):
        """A merge of packed blocks (a stale session that resumed) whose
        range has a pack that does not decode is given up, not a stop:
        that run stays as it is (its blocks, the pack), counted in the
        compactor's warning and named by --log-level=debug, while another
        stream's run of packed blocks merges in the same pass and
        ingest's new blocks are named; the kernels read as a rows
        server's."""
        g, rnd, t, a, b = self.packed(3004)
        # stale: every stream's last, small block named and packed
        t = self.more(g, rnd, a, b, 6, t)
        wait_compacted(b)
        exec_sql(b, "UPDATE sessions SET state='stale'")
        deadline = time.time() + 60
        while time.time() < deadline and (
                count(b, "SELECT count(*) FROM kbunnamed") or
                count(b, "SELECT count(*) FROM kbnames")):
            time.sleep(0.2)
        self.assertEqual(count(b, "SELECT count(*) FROM kbunnamed"), 0)
        self.assertEqual(count(b, "SELECT count(*) FROM kbnames"), 0)
        b.stop()
        nq = "SELECT n FROM kblocks WHERE stream=%s AND seq_lo=%s"
        last = b.sql("SELECT stream, max(seq_lo) FROM kblocks GROUP BY"
                     " stream ORDER BY 1")
        small = [(r[0], r[1], count(b, nq % tuple(r))) for r in last]
        small = [r for r in small if r[2] < 20]
        self.assertGreaterEqual(len(small), 2, last)
        (s_bad, lo_bad, n_bad), (s_ok, lo_ok, n_ok) = small[0], small[1]
        bad_name = count(b, "SELECT min(name_id) FROM kbnpack WHERE"
                            " stream=%s" % s_bad)
        exec_sql(b, "UPDATE kbnpack SET data=substr(data, 1, 3)"
                 " WHERE stream=%s AND name_id=%d" % (s_bad, bad_name))
        # it resumes: ingest's new small blocks after each stream's last
        b = self.server("blocks", BLOCKS + ["--log-level", "debug"],
                        env=self.ENV)
        t = self.more(g, rnd, a, b, 12, t)
        deadline = time.time() + 60
        while time.time() < deadline and count(b, nq % (s_ok, lo_ok)) <= n_ok:
            time.sleep(0.2)
        self.assertGreater(count(b, nq % (s_ok, lo_ok)), n_ok,
                           "the other stream's packed blocks merged")
        unnamed = "SELECT count(*) FROM kbunnamed WHERE stream=%s"
        while time.time() < deadline and count(b, unnamed % s_ok) > 1:
            time.sleep(0.2)
        self.assertLessEqual(count(b, unnamed % s_ok), 1, "named")
        want = "stream %s r0 0 name %d: its pack does not decode: the" \
            " merge is given up" % (s_bad, bad_name)
        while want not in b.output() and time.time() < deadline:
            time.sleep(0.2)
        self.assertIn(want, b.output())
        self.assertIn(" kernel blocks are not merged: they or their names'"
                      " packs do not decode", b.output())
        self.assertEqual(count(b, nq % (s_bad, lo_bad)), n_bad, "not merged")
        self.assertEqual(count(b, "SELECT length(data) FROM kbnpack WHERE"
                                  " stream=%s AND name_id=%d"
                                  % (s_bad, bad_name)), 3, "the pack stays")
        base = "/api/v1/sessions/%s/kernels" % g.sid
        self.assertEqual(T.page_all(b, base, 500), T.page_all(a, base, 500))


class Crash(Base):
    def test_kill9_during_compaction_loses_nothing(self):
        rnd = random.Random(9)
        want = {}
        d = os.path.join(self.dir, "data")
        # each block's transaction pauses 400 ms between the block's insert
        # and the rows' delete: most kills land inside one
        env = {"GPUFL_SERVER_KB_PAUSE_MS": "400"}
        # fed by a rows server (nothing compacts), then compacted by blocks
        # servers killed one after another
        srv = self.server("data")
        gens = []
        for i in range(6):
            g = TL.Gen()
            nid = g.name("k%d" % i)
            t = TL.T0
            for j in range(9000 + rnd.randrange(3000)):
                t += rnd.randrange(1, 50000)
                g.kernel(t, rnd.randrange(0, 90000), nid,
                         stream=7 + j % 3, corr=j + 1)
            if i % 2 == 0:
                ended(g)  # the others keep a partial run as rows
            g.send(srv, batch=4000)
            want[g.sid] = sorted(k[0] for k in g.kernels)
            gens.append(g)
        srv.stop()
        srv = T.Server(d, BLOCKS, env=env)
        self.servers.append(srv)
        kills, mid = 0, 0
        for _ in range(8):
            time.sleep(rnd.uniform(1.2, 2.4))
            srv.kill()
            kills += 1
            mid += count(srv, LEFT) > 0
            srv = T.Server(d, BLOCKS, env=env)
            self.servers.append(srv)
        print("kills while compaction had work left: %d of %d" % (mid, kills))
        self.assertGreater(mid, 0)
        # let it finish, then count every kernel: rows + blocks, and read
        # back every seq, exactly once
        deadline = time.time() + 60
        while time.time() < deadline and count(srv, LEFT) > 0:
            time.sleep(0.3)
        self.assertEqual(count(srv, LEFT), 0)
        self.assertGreater(count(srv, "SELECT count(*) FROM kblocks"), 0)
        total = sum(len(v) for v in want.values())
        self.assertEqual(count(srv, "SELECT count(*) FROM kernels") +
                         count(srv, "SELECT coalesce(sum(n), 0) FROM kblocks"),
                         total)
        check_names(self, srv)
        # rows into blocks (compact_one) and their merges name directly
        self.assertEqual(count(srv, "SELECT count(*) FROM kbunnamed"), 0)
        for g in gens:
            r = srv.ingest_ok("device", lines(g, "device", 0,
                                              len(g.lines["device"])))
            self.assertEqual(r["accepted"], 0)
        srv.stop()
        # rows: nothing compacts; the queries read rows and blocks
        srv = T.Server(d, ROWS)
        self.servers.append(srv)
        nb = count(srv, "SELECT count(*) FROM kblocks")
        for sid, seqs in want.items():
            got = T.page_all(srv, "/api/v1/sessions/%s/kernels" % sid)
            self.assertEqual(sorted(k["kid"] for k in got), seqs)
        self.assertEqual(count(srv, "SELECT count(*) FROM kblocks"), nb)
        self.assertEqual(count(srv, "SELECT count(*) FROM kernels") +
                         count(srv, "SELECT coalesce(sum(n), 0) FROM kblocks"),
                         total)
        self.assertEqual(kills, 8)


NOCOMPACT = ["--kernel-store", "blocks", "--kernel-compact-interval", "1h"]
# the tables fed at ingest, in a stable order, to compare with a rows store
# (tl level 0 is not written with blocks: computed when asked,
# test_kblocks_tl0.py)
TL_Q = "SELECT * FROM tl WHERE lvl > 0 ORDER BY 1, 2, 3, 4"
ROLLUPS = ["SELECT * FROM kagg ORDER BY 1, 2",
           TL_Q,
           "SELECT * FROM kscope ORDER BY 1, 2",
           "SELECT * FROM kext ORDER BY 1, 2, 3, 4",
           "SELECT * FROM klong ORDER BY 1, 2",
           "SELECT * FROM seqr ORDER BY 1, 2, 3",
           "SELECT n_kernels, n_lines, first_ts, last_ts FROM sessions"
           " ORDER BY id"]


def uvarints(data):
    """The LEB128 varints of bytes data."""
    out, x, sh = [], 0, 0
    for c in data:
        x |= (c & 0x7f) << sh
        sh += 7
        if not c & 0x80:
            out.append(x - (1 << 64) if x >= 1 << 63 else x)
            x, sh = 0, 0
    return out


def tl_rows(srv, where="lvl > 0"):
    """tl's rows (as TL_Q lists them) with the packed buckets (tlpack,
    schema 29: 5 varints a bucket, b as the step from the previous, from
    b0) added in as the timeline adds them: what tl held were nothing
    packed."""
    rows = {}
    hexf = "encode(data, 'hex')" if srv.pgdb else "hex(data)"
    # one statement, one snapshot: read in two, a pass of the packer
    # committed between them counted its rows twice
    got = srv.sql("SELECT 0, sess, lvl, lane, b, n, busy, top_name, top_dur,"
                  " '' FROM tl WHERE %s UNION ALL SELECT 1, sess, lvl, lane,"
                  " b0, 0, 0, 0, 0, %s FROM tlpack WHERE %s"
                  % (where, hexf, where))
    for r in got:
        if r[0] == "0":
            rows[tuple(int(c) for c in r[1:5])] = [int(c) for c in r[5:9]]
    for sess, lvl, lane, b0, h in [r[1:5] + [r[9]] for r in got
                                   if r[0] == "1"]:
        v, b = uvarints(bytes.fromhex(h)), int(b0)
        for i in range(0, len(v), 5):
            b += v[i]
            k = (int(sess), int(lvl), int(lane), b)
            n, busy, tn, td = v[i + 1:i + 5]
            if k in rows:
                r = rows[k]
                busy = min(r[1] + busy, (1 << 63) - 1)
                if (r[3], r[2]) > (td, tn):
                    tn, td = r[2], r[3]
                n += r[0]
            rows[k] = [n, busy, tn, td]
    return [[str(c) for c in k + tuple(rows[k])] for k in sorted(rows)]


# capi's levels a blocks server on PostgreSQL stores (level 0 computed)
CAPI_Q = "SELECT * FROM capi WHERE lvl >= 1 ORDER BY 1, 2, 3, 4"
# ... and level 0 (SQLite: packed at ingest)
CAPI_ALL_Q = "SELECT * FROM capi ORDER BY 1, 2, 3, 4"


def capi_rows(srv, where="lvl >= 1"):
    """capi's rows (as CAPI_Q lists them) with the packed buckets
    (capipack, schema 31: the timeline pack's 5 varints a bucket, the top
    two 0, b as the step from the previous, from b0) added in as /calls
    adds them: what capi held were nothing packed."""
    rows = {}
    hexf = "encode(data, 'hex')" if srv.pgdb else "hex(data)"
    # one statement, one snapshot (a pass of the packer between two
    # would count its rows twice)
    got = srv.sql("SELECT 0, sess, lvl, b, tid, n, busy, '' FROM capi WHERE"
                  " %s UNION ALL SELECT 1, sess, lvl, tid, b0, 0, 0, %s FROM"
                  " capipack WHERE %s" % (where, hexf, where))
    for r in got:
        if r[0] == "0":
            rows[tuple(int(c) for c in r[1:5])] = [int(c) for c in r[5:7]]
    for sess, lvl, tid, b0, h in [r[1:5] + [r[7]] for r in got
                                  if r[0] == "1"]:
        v, b = uvarints(bytes.fromhex(h)), int(b0)
        for i in range(0, len(v), 5):
            b += v[i]
            k = (int(sess), int(lvl), b, int(tid))
            n, busy = v[i + 1:i + 3]
            if k in rows:
                n += rows[k][0]
                busy = min(rows[k][1] + busy, (1 << 63) - 1)
            rows[k] = [n, busy]
    return [[str(c) for c in k + tuple(rows[k])] for k in sorted(rows)]


def rollup(srv, q):
    """srv's rows of q, one of ROLLUPS or CAPI_Q: tl's and capi's with
    their packs unpacked."""
    if q == TL_Q:
        return tl_rows(srv)
    if q == CAPI_ALL_Q:
        return capi_rows(srv, "lvl >= 0")
    return capi_rows(srv) if q == CAPI_Q else srv.sql(q)


def device_lines(g, idx):
    """The device lines at indexes idx, as one body."""
    return b"\n".join(json.dumps(g.lines["device"][i],
                                  separators=(",", ":")).encode()
                       for i in idx) + b"\n"


def lanes_session(rnd, nk, streams=(7, 8, 9), sid=None):
    """nk kernels over streams on 2 GPUs, in time order."""
    g = TL.Gen(sid=sid)
    names = [g.name("k%d" % i) for i in range(5)]
    t = TL.T0
    for i in range(nk):
        t += rnd.randrange(1, 40000)
        g.kernel(t, rnd.randrange(0, 90000), names[i % 5], dev=i % 2,
                 stream=streams[i % len(streams)], corr=i + 1)
    return g


class Ingest(Base):
    def check_stored(self, srv, g, rows=None):
        """Every kernel of g stored exactly once: none as a row, the blocks'
        counts, the API's kernels (each seq once), the rollups; and the
        rollups equal those of the rows store rows."""
        seqs = sorted(k[0] for k in g.kernels)
        nk = len(seqs)
        self.assertEqual(count(srv, "SELECT count(*) FROM kernels"), 0)
        self.assertEqual(count(srv, "SELECT sum(n) FROM kblocks"), nk)
        # the blocks of a stream do not overlap
        last = {}
        for st, lo, hi in srv.sql("SELECT stream, seq_lo, seq_hi FROM kblocks"
                                  " ORDER BY stream, seq_lo"):
            self.assertGreater(int(lo), last.get(st, -1), (st, lo))
            last[st] = int(hi)
        self.assertEqual(count(srv, "SELECT n_kernels FROM sessions"), nk)
        self.assertEqual(count(srv, "SELECT sum(n) FROM kagg"), nk)
        if rows is not None:
            for q in ROLLUPS:
                self.assertEqual(rollup(srv, q), rollup(rows, q), q)
        got = T.page_all(srv, "/api/v1/sessions/%s/kernels" % g.sid)
        self.assertEqual(sorted(k["kid"] for k in got), seqs)

    def test_batches_go_straight_into_blocks(self):
        g, _ = TL.lod_session(random.Random(5))
        nk = len(g.kernels)
        a = self.server("rows")
        b = self.server("blocks", NOCOMPACT)
        g.send(a, batch=3000)
        g.send(b, batch=3000)
        # acknowledged is stored: as blocks, with no compactor pass
        self.assertEqual(count(b, "SELECT count(*) FROM kernels"), 0)
        self.assertEqual(count(b, "SELECT sum(n) FROM kblocks"), nk)
        self.assertLessEqual(count(b, "SELECT max(n) FROM kblocks"), 4096)
        for q in ROLLUPS:
            self.assertEqual(rollup(b, q), rollup(a, q), q)
        # and as compact as the compactor's blocks (batches of 3000 lines
        # over 6 lanes: ~500 kernels a block)
        per = (count(b, "SELECT sum(length(block)) FROM kblocks") / nk)
        self.assertLess(per, 40)
        base = "/api/v1/sessions/" + g.sid
        t0, t1 = TL.T0 + 3 * 10 ** 9, TL.T0 + 3 * 10 ** 9 + 5 * 10 ** 6
        for p in [base, base + "/kernels/aggregate", base + "/durations",
                  base + "/timeline?width=800",
                  base + "/kernels?sort=duration&desc=true&limit=300",
                  base + "/kernels?from=%d&to=%d&limit=1000" % (t0, t1)]:
            self.assertEqual(norm(b.get(p)), norm(a.get(p)), p)
        got = T.page_all(b, base + "/kernels")
        self.assertEqual(sorted(k["kid"] for k in got),
                         sorted(k[0] for k in g.kernels))

    def test_replays_straddle_blocks(self):
        rnd = random.Random(77)
        g = lanes_session(rnd, 25000)
        dev = g.lines["device"]
        kidx = [i for i, e in enumerate(dev) if e["type"] == "kernel"]
        a = self.server("rows")
        b = self.server("blocks", BLOCKS)
        # 60 % in batches of 1500 lines, then the compactor merges the
        # small blocks (500 kernels a stream and batch) into full ones
        cut = kidx[len(kidx) * 6 // 10]
        for srv in (a, b):
            for lo in range(0, cut, 1500):
                srv.ingest_ok("device", device_lines(
                    g, range(lo, min(lo + 1500, cut))))
        deadline = time.time() + 60
        small = ("SELECT count(*) FROM (SELECT stream FROM kblocks WHERE"
                 " n < 4096 GROUP BY sess, stream HAVING count(*) >= 2) t")
        while time.time() < deadline and count(b, small) > 0:
            time.sleep(0.2)
        self.assertEqual(count(b, small), 0)
        self.assertGreater(count(b, "SELECT count(*) FROM kblocks WHERE"
                                    " n >= 4096"), 0)
        # a replay from 40 % to 80 %: straddles merged blocks, runs on into
        # new kernels; some lines twice, a stretch in reverse
        mid = kidx[len(kidx) * 4 // 10]
        end = kidx[len(kidx) * 8 // 10]
        idx = list(range(mid, end))
        idx[100:400] = reversed(idx[100:400])
        idx += idx[-300:] + idx[:20]
        rnd.shuffle(idx[-2000:])
        fresh = len(set(i for i in idx if i >= cut))
        for srv in (a, b):
            r = srv.ingest_ok("device", device_lines(g, idx))
            self.assertEqual((r["accepted"], r["duplicate"]),
                             (fresh, len(idx) - fresh), srv.data_dir)
        # the rest in reverse (each kernel below the batch's first) and
        # twice; then the whole stream again: all duplicates
        rest = list(reversed(range(end, len(dev))))
        for srv in (a, b):
            r = srv.ingest_ok("device", device_lines(g, rest + rest))
            self.assertEqual((r["accepted"], r["duplicate"]),
                             (len(rest), len(rest)))
            r = srv.ingest_ok("device", device_lines(g, range(len(dev))))
            self.assertEqual((r["accepted"], r["duplicate"]), (0, len(dev)))
        self.check_stored(b, g, rows=a)


    def test_batches_bigger_than_held(self):
        # more kernels in one batch than are held (32 768) or doubted at
        # once: blocks and doubts go in several rounds of one transaction
        g = lanes_session(random.Random(8), 70000, streams=(7, 8))
        n = len(g.lines["device"])
        half = n // 2
        a = self.server("rows")
        b = self.server("blocks", NOCOMPACT)
        for srv in (a, b):
            srv.ingest_ok("device", device_lines(g, range(0, half)))
            # the whole stream in reverse: all but its first line doubts
            r = srv.ingest_ok("device", device_lines(g, reversed(range(n))))
            self.assertEqual((r["accepted"], r["duplicate"]),
                             (n - half, half))
        self.check_stored(b, g, rows=a)


class IngestCrash(Base):
    def test_kill9_block_writes(self):
        """kill -9 while ingest writes blocks loses nothing acknowledged."""
        rnd = random.Random(31)
        d = os.path.join(self.dir, "data")
        # each block the ingest writes pauses 50 ms inside the batch's
        # transaction: most kills land between a block's insert and COMMIT;
        # each merge and naming of a block 20 ms inside its own
        args = ["--kernel-store", "blocks", "--kernel-compact-interval", "2s"]
        env = {"GPUFL_SERVER_KBI_PAUSE_MS": "50",
               "GPUFL_SERVER_KB_PAUSE_MS": "20"}
        gens = [lanes_session(rnd, 6000 + rnd.randrange(2000))
                for _ in range(3)]
        # each batch holds a stretch of every session (one block per
        # session and stream)
        batches = []
        most = max(len(g.lines["device"]) for g in gens)
        for lo in range(0, most, 400):
            batches.append(b"".join(
                device_lines(g, range(lo, min(lo + 400, len(g.lines["device"]))))
                for g in gens if lo < len(g.lines["device"])))
        srv = T.Server(d, args, env=env)
        self.servers.append(srv)
        kills = cut = 0
        i = 0
        while i < len(batches):
            timer = None
            if kills < 8 and rnd.random() < 0.5:
                timer = threading.Timer(rnd.uniform(0.05, 0.4), srv.kill)
                timer.start()
            try:
                st, r = srv.post("device", batches[i])
                ok = st == 200
            except (OSError, http_exc()):
                ok = False
            if timer:
                timer.join()
                kills += 1
            if ok and srv.p.poll() is None:
                i += 1  # acknowledged: never sent again
                continue
            # the batch went unacknowledged: it is sent again to a new
            # server, as an agent would (what was committed is duplicate)
            cut += not ok
            srv.kill()
            srv = T.Server(d, args, env=env)
            self.servers.append(srv)
        print("kills: %d, batches cut off: %d" % (kills, cut))
        self.assertGreater(cut, 0)
        for g in gens:
            nk = len(g.kernels)
            sess = "(SELECT id FROM sessions WHERE sid='%s')" % g.sid
            self.assertEqual(count(srv, "SELECT coalesce(sum(n), 0) FROM"
                                   " kblocks WHERE sess=" + sess) +
                             count(srv, "SELECT count(*) FROM kernels WHERE"
                                   " sess=" + sess), nk)
            self.assertEqual(count(srv, "SELECT sum(n) FROM kagg WHERE sess="
                                   + sess), nk)
            self.assertEqual(count(srv, "SELECT n_kernels FROM sessions WHERE"
                                   " id=" + sess), nk)
            got = T.page_all(srv, "/api/v1/sessions/%s/kernels" % g.sid)
            self.assertEqual(sorted(k["kid"] for k in got),
                             sorted(k[0] for k in g.kernels))
        check_names(self, srv)
        # the sessions ended: every block named (a killed naming's block
        # is still listed, and named by a later pass)
        srv.post("device", b"".join(device_lines(ended(g), [-1])
                                    for g in gens))
        wait_named(srv)
        check_names(self, srv)
        self.assertEqual(count(srv, "SELECT count(*) FROM kbunnamed"), 0)


def http_exc():
    import http.client
    return http.client.HTTPException


def counts_of(srv):
    """kcount's counts (migration 23) and the kernel rows' own, each as
    {(sess, stream): n} without the zeros."""
    kept = {(int(a), int(b)): int(n) for a, b, n in srv.sql(
        "SELECT sess, stream, n FROM kcount WHERE n <> 0")}
    real = {(int(a), int(b)): int(n) for a, b, n in srv.sql(
        "SELECT sess, stream, count(*) FROM kernels GROUP BY sess, stream")}
    return kept, real


def post_killed(srv, body, rnd, args, env, d, servers):
    """body posted to srv, which a timer may kill -9 meanwhile; on no 200
    a new server (the same args) and again, as an agent would.  Returns
    the server alive after it and whether a kill cut a batch off."""
    cut = False
    while True:
        timer = None
        if rnd.random() < 0.4:
            timer = threading.Timer(rnd.uniform(0.0, 0.08), srv.kill)
            timer.start()
        try:
            st, _ = srv.post("device", body)
            ok = st == 200
        except (OSError, http_exc()):
            ok = False
        if timer:
            timer.join()
        if ok and srv.p.poll() is None:
            return srv, cut
        cut = cut or not ok
        srv.kill()
        srv = T.Server(d, args, env=env)
        servers.append(srv)


class Counts(Base):
    def test_counts_follow_rows_through_kills(self):
        """The compactor finds its work from kcount, kept with the rows in
        their transaction: after kill -9 during rows ingest and during
        compaction, and replays, the counts equal a GROUP BY over the rows
        and the compactor still takes every ended session's rows."""
        rnd = random.Random(47)
        d = os.path.join(self.dir, "data")
        gens = [lanes_session(rnd, 5000 + rnd.randrange(3000))
                for _ in range(4)]
        for g in gens[:3]:
            ended(g)  # the last keeps running: its partial runs stay rows
        # the sessions' batches interleaved at random, each session's in
        # order but the third's: after its first, newest first (kernels
        # below the session's highest seq, written one by one)
        per = []
        for i, g in enumerate(gens):
            n, lo, mine = len(g.lines["device"]), 0, []
            while lo < n:
                hi = min(n, lo + rnd.randrange(100, 1500))
                mine.append(device_lines(g, range(lo, hi)))
                lo = hi
            if i == 2:
                mine = mine[:1] + mine[:0:-1]
            per.append(mine[::-1])
        batches = []
        while any(per):
            batches.append(rnd.choice([m for m in per if m]).pop())
        # rows, killed at random while it ingests (and replays)
        srv = T.Server(d, ROWS)
        self.servers.append(srv)
        cuts = 0
        for i, body in enumerate(batches):
            srv, cut = post_killed(srv, body, rnd, ROWS, None, d, self.servers)
            cuts += cut
            if i % 7 == 3:  # an older batch again: all duplicates
                r = srv.ingest_ok("device", batches[rnd.randrange(i + 1)])
                self.assertEqual(r["accepted"], 0)
        print("rows ingest: batches cut off by kill -9: %d" % cuts)
        self.assertGreater(cuts, 0)
        kept, real = counts_of(srv)
        self.assertEqual(kept, real)
        self.assertEqual(sum(real.values()),
                         sum(len(g.kernels) for g in gens))
        for g in gens:
            g.send(srv, batch=4000)  # the scope stream; device: duplicates
        srv.stop()
        # compacted by blocks servers killed inside block transactions
        env = {"GPUFL_SERVER_KB_PAUSE_MS": "300"}
        srv = T.Server(d, BLOCKS, env=env)
        self.servers.append(srv)
        mid = 0
        for _ in range(4):
            time.sleep(rnd.uniform(0.8, 1.6))
            srv.kill()
            mid += count(srv, LEFT) > 0
            kept, real = counts_of(srv)
            self.assertEqual(kept, real)
            srv = T.Server(d, BLOCKS, env=env)
            self.servers.append(srv)
        print("kills while compaction had work left: %d of 4" % mid)
        self.assertGreater(mid, 0)
        wait_compacted(srv)
        kept, real = counts_of(srv)
        self.assertEqual(kept, real)
        running = count(srv, "SELECT id FROM sessions WHERE sid='%s'"
                        % gens[3].sid)
        # only the running session's partial runs are rows
        self.assertEqual(set(s for s, _ in real), {running})
        self.assertTrue(all(n < 4096 for n in real.values()), real)
        self.assertEqual(count(srv, "SELECT count(*) FROM kernels") +
                         count(srv, "SELECT sum(n) FROM kblocks"),
                         sum(len(g.kernels) for g in gens))
        for g in gens:
            got = T.page_all(srv, "/api/v1/sessions/%s/kernels" % g.sid)
            self.assertEqual(sorted(k["kid"] for k in got),
                             sorted(k[0] for k in g.kernels))


# kext keys per side whose kernels' rows are kept when they are in blocks
# (SQ_LIMIT_MAX + 1: store_sql_kxrow.c KX_KEEP)
KEEP = 1001
DECODED = "gpufl_server_kblocks_decoded_total"
KEPT = 'gpufl_server_kernel_duration_pages_total{from="kept"}'
SCANNED = 'gpufl_server_kernel_duration_pages_total{from="blocks"}'
# each side's first KEEP kext keys whose kernel has neither a row nor a
# kept row
KEPT_MISSING = (
    "SELECT count(*) FROM (SELECT sess, side, dur, seq, row_number() OVER"
    " (PARTITION BY sess, side ORDER BY CASE WHEN side=0 THEN -dur ELSE dur"
    " END, CASE WHEN side=0 THEN -seq ELSE seq END) AS rn FROM kext) x"
    " WHERE rn <= %d AND NOT EXISTS (SELECT 1 FROM kernels k WHERE"
    " k.sess=x.sess AND k.seq=x.seq) AND NOT EXISTS (SELECT 1 FROM kxrow r"
    " WHERE r.sess=x.sess AND r.side=x.side AND r.dur=x.dur AND"
    " r.seq=x.seq)" % KEEP)
# kept rows of no kext key (a key that left without its row), or of a
# kernel that is a row
KEPT_STALE = ("SELECT count(*) FROM kxrow r WHERE NOT EXISTS (SELECT 1 FROM"
              " kext x WHERE x.sess=r.sess AND x.side=r.side AND"
              " x.dur=r.dur AND x.seq=r.seq) OR EXISTS (SELECT 1 FROM"
              " kernels k WHERE k.sess=r.sess AND k.seq=r.seq)")


def dur_pages(srv, base, desc, limit, n):
    """The first n pages sorted by duration (fewer when they end), each
    answer whole (items and cursor)."""
    out, cur = [], None
    for _ in range(n):
        p = base + "/kernels?sort=duration&desc=%s&limit=%d%s" % (
            desc, limit, "&cursor=" + cur if cur else "")
        r = srv.get(p)
        out.append(r)
        cur = r.get("next")
        if not cur:
            break
    return out


def tie_session(rnd, nk, running=False):
    """nk kernels of 4 names on 3 streams, durations of a few values
    (ties by the hundred) and a spread; an API call, thread and
    occupancy on two of three."""
    g = TL.Gen()
    nids = [g.name("k%d_kernel" % j) for j in range(4)]
    t = TL.T0
    for j in range(nk):
        t += rnd.randrange(1, 30000)
        dur = rnd.choice([0, 7, 1000, 1000, 250000, rnd.randrange(10 ** 6),
                          rnd.randrange(10 ** 3)])
        # on two of three an API call, a CPU thread and an occupancy (a
        # kept row's nullable columns, either way)
        e = g.kernel(t, dur, nids[j % 4], stream=7 + j % 3, corr=j + 1,
                     api=(-(1000 + j % 7), 500 + j % 11) if j % 3 else None,
                     tid=4000 + j % 3 if j % 3 else None)
        if j % 3:
            e["occ"] = 1 / (2 + j % 5)
    return g if running else ended(g)


class KeptSorts(Base):
    def same_pages(self, a, b, gens, why,
                   sizes=((100, 12), (1, 3), (7, 5), (1000, 2))):
        """Sorts by duration over all names: the first n pages of each
        (limit, n) of sizes, both orders, answered by b as by the rows
        server a."""
        for g in gens:
            base = "/api/v1/sessions/" + g.sid
            for desc in ("true", "false"):
                for lim, n in sizes:
                    self.assertEqual(dur_pages(b, base, desc, lim, n),
                                     dur_pages(a, base, desc, lim, n),
                                     (why, g.sid, desc, lim))

    def check_kept(self, srv, why):
        self.assertEqual(count(srv, KEPT_MISSING), 0, why)
        self.assertEqual(count(srv, KEPT_STALE), 0, why)
        self.assertGreater(count(srv, "SELECT count(*) FROM kxrow"), 0, why)

    def test_duration_pages_read_kept_rows(self):
        """A page by duration over all names of a session with blocks
        reads kext and the kept rows of its kernels in blocks (kxrow,
        schema 24): no block decoded for the first KEEP kernels of each
        order, the same answers as rows (ties, cursors, both orders, a
        hot tail of rows), past them the blocks; the kept rows follow
        ingest (in order, and a batch written in two rounds whose second
        pushes kernels of the first out of kext), merges, kill -9 inside
        compaction, and retention."""
        rnd = random.Random(57)
        gens = [tie_session(rnd, 9000), tie_session(rnd, 9000, True)]
        a = self.server("rows")
        # kext of 1100 a side: a kernel of the first round among the first
        # KEEP, its row written, leaves kext in the second round (its row
        # must go with it)
        b = self.server("blocks", BLOCKS,
                        env={"GPUFL_SERVER_KB_RUN": str(RUN),
                             "GPUFL_SERVER_TOPK": "1100"})
        for g in gens:
            g.send(a, batch=4000)
            # the first 60 % in small batches (small blocks, merged), then
            # one batch of 80 % to the end followed by 40 % to 80 %: the
            # kernels above the session's highest seq are written first
            # (their kept rows as the heaps rank them then), the doubts
            # after them (60 % to 80 % new), and the longest of those push
            # kernels of the first round out of kext
            dev = g.lines["device"]
            n = len(dev)
            cut, back, mid = n * 6 // 10, n * 4 // 10, n * 8 // 10
            for lo in range(0, cut, 700):
                b.ingest_ok("device", lines(g, "device", lo, min(lo + 700,
                                                                cut)))
            r = b.ingest_ok("device", device_lines(
                g, list(range(mid, n)) + list(range(back, mid))))
            self.assertEqual(r["duplicate"], cut - back)
            b.ingest_ok("scope", lines(g, "scope", 0, len(g.lines["scope"])))
        wait_stable(b)
        self.check_kept(b, "ingest")
        # the first pages decode no block; pages past KEEP read blocks
        d0, k0 = T.metric(b, DECODED), T.metric(b, KEPT)
        s0 = T.metric(b, SCANNED)
        for g in gens:
            base = "/api/v1/sessions/" + g.sid
            for desc in ("true", "false"):
                self.assertEqual(len(dur_pages(b, base, desc, 100, 10)), 10)
                self.assertEqual(len(dur_pages(b, base, desc, 1000, 1)), 1)
        self.assertEqual(T.metric(b, DECODED), d0)
        self.assertEqual(T.metric(b, KEPT), k0 + 44)
        self.assertEqual(T.metric(b, SCANNED), s0)
        # past kext's 1100 (pages 2 to 6 of 1000) the blocks answer (a
        # page between the first KEEP and the end of kext may still find
        # every row: a kernel that fell below the first KEEP keeps its row
        # while in kext)
        self.assertEqual(len(dur_pages(b, "/api/v1/sessions/" + gens[0].sid,
                                       "true", 1000, 6)), 6)
        self.assertGreater(T.metric(b, DECODED), d0)
        self.assertGreaterEqual(T.metric(b, SCANNED), s0 + 2)
        self.assertEqual(T.metric(b, SCANNED) - s0 + T.metric(b, KEPT) - k0,
                         44 + 6)
        self.same_pages(a, b, gens, "ingest")

        # a rows server's sessions compacted by blocks servers killed -9
        # inside compaction transactions (400 ms each); the running one
        # keeps a hot tail of rows
        more = [tie_session(rnd, 9000), tie_session(rnd, 9000, True),
                tie_session(rnd, 9000)]
        c = self.server("crash")
        for g in more:
            g.send(a, batch=3000)
            g.send(c, batch=3000)
        c.stop()
        d = c.data_dir
        env = {"GPUFL_SERVER_KB_PAUSE_MS": "400",
               "GPUFL_SERVER_KB_RUN": str(RUN)}
        kills = 0
        for _ in range(3):
            c = T.Server(d, BLOCKS, env=env)
            self.servers.append(c)
            deadline = time.time() + 30
            while count(c, "SELECT count(*) FROM kblocks") == 0 and \
                    time.time() < deadline:
                time.sleep(0.05)
            time.sleep(rnd.uniform(0.2, 0.6))
            kills += count(c, LEFT) > 0
            c.kill()
        self.assertGreater(kills, 0)
        c = T.Server(d, BLOCKS, env={"GPUFL_SERVER_KB_RUN": str(RUN)})
        self.servers.append(c)
        deadline = time.time() + 60
        while time.time() < deadline and count(c, LEFT) > 0:
            time.sleep(0.3)
        wait_stable(c)
        self.check_kept(c, "compaction")
        self.assertGreater(count(c, "SELECT count(*) FROM kernels"), 0)
        d0 = T.metric(c, DECODED)
        self.same_pages(a, c, more, "compaction",
                        ((100, 10), (1, 3), (7, 5), (1000, 1)))
        self.assertEqual(T.metric(c, DECODED), d0)
        self.same_pages(a, c, more, "compaction, past the kept rows",
                        ((1000, 3),))

        # retention: the pruned sessions' kept rows go with their blocks
        time.sleep(1.2)
        st, _, body = c.req("POST", "/api/v1/admin/retention?max_age=1")
        self.assertEqual(st, 200, body)
        self.assertEqual(count(c, "SELECT count(*) FROM kblocks"), 0)
        self.assertEqual(count(c, "SELECT count(*) FROM kxrow"), 0)
def metrics(srv):
    """The unlabelled samples of one /metrics scrape, {name: value}."""
    for tries in range(3):
        try:
            st, _, data = srv.req("GET", "/metrics")
            break
        except OSError:
            if tries == 2:
                raise
            time.sleep(0.2)
    assert st == 200, st
    out = {}
    for line in data.decode().splitlines():
        f = line.split(" ")
        if len(f) == 2 and not line.startswith("#"):
            out[f[0]] = float(f[1])
    return out


def api_session(rnd, nk):
    """nk kernels on 3 streams, with API calls on 2 threads (the API call
    summary, capi, is a rollup too)."""
    g = TL.Gen()
    names = [g.name("g%d" % i) for i in range(7)]
    t = TL.T0
    for i in range(nk):
        t += rnd.randrange(1, 30000)
        g.kernel(t, rnd.randrange(0, 60000), names[i % 7], dev=i % 2,
                 stream=(7, 8, 9)[i % 3], corr=i + 1,
                 api=(-rnd.randrange(1000, 9000), rnd.randrange(100, 5000)),
                 tid=1 + i % 2)
    return g


# kill -9s of IngestGroup's server while its agents send
KILLS = 5


class IngestGroup(Base):
    def test_concurrent_batches_share_commits_kill9(self):
        """Batches sent at once by several agents share transactions (group
        commit, store_sql_igroup.c), each answered only after the commit
        that holds it: through kill -9 at random moments every
        acknowledged line is stored, and after the agents resend what was
        not acknowledged every kernel is stored once and the rollups equal
        those of a rows server fed the same batches one at a time."""
        rnd = random.Random(23)
        d = os.path.join(self.dir, "data")
        # 40 ms pause per block written, inside the transaction: while one
        # group is written the other agents' batches queue up
        args = NOCOMPACT
        env = {"GPUFL_SERVER_KBI_PAUSE_MS": "40"}
        gens = [api_session(rnd, 1500 + rnd.randrange(600)) for _ in range(6)]
        per = []  # each agent's batches, in order
        for g in gens:
            n, lo, mine = len(g.lines["device"]), 0, []
            while lo < n:
                hi = min(n, lo + rnd.randrange(150, 400))
                mine.append((g.lines["device"][lo]["seq"],
                             g.lines["device"][hi - 1]["seq"],
                             device_lines(g, range(lo, hi))))
                lo = hi
            per.append(mine)
        ref = self.server("rows")
        state = {"srv": T.Server(d, args, env=env), "gen": 0, "stop": False,
                 "kills": 0}
        self.servers.append(state["srv"])
        # the sessions' first batches one by one on both servers: their
        # row ids (the rollups' keys) in the same order
        for mine in per:
            ref.ingest_ok("device", mine[0][2])
            state["srv"].ingest_ok("device", mine[0][2])
        for mine in per:
            for b in mine[1:]:
                ref.ingest_ok("device", b[2])
        acked = [set() for _ in gens]  # (lo, hi) of acknowledged batches
        cv = threading.Condition()
        errors = []

        def agent(i):
            try:
                for j, (lo, hi, body) in enumerate(per[i][1:]):
                    if j == len(per[i]) - 2:
                        # the last batch only once the kills are done: the
                        # agents cannot all finish before the fifth (a
                        # fast run killed 4 times and failed)
                        with cv:
                            cv.wait_for(lambda: state["kills"] >= KILLS or
                                        state["stop"], 120)
                    while not state["stop"]:
                        with cv:
                            srv, gen = state["srv"], state["gen"]
                        try:
                            st, r = srv.post("device", body)
                            ok = st == 200
                        except (OSError, http_exc()):
                            ok = False
                        if ok:
                            with cv:
                                acked[i].add((lo, hi))
                            break
                        with cv:  # sent again to the next server
                            cv.wait_for(lambda: state["gen"] != gen or
                                        state["stop"], 60)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        def stored_seqs(srv, g):
            """The device seqs stored, as ranges (touching ones joined)."""
            sess = "(SELECT id FROM sessions WHERE sid='%s')" % g.sid
            out = []
            for a, b2 in sorted((int(a), int(b2)) for a, b2 in srv.sql(
                    "SELECT lo, hi FROM seqr WHERE st=0 AND sess=" + sess)):
                if out and a <= out[-1][1] + 1:
                    out[-1] = (out[-1][0], max(out[-1][1], b2))
                else:
                    out.append((a, b2))
            return out

        threads = [threading.Thread(target=agent, args=(i,))
                   for i in range(len(gens))]
        for t in threads:
            t.start()
        kills = grouped = 0
        try:
            kills, grouped = self.kill_loop(rnd, threads, state, cv, acked,
                                            gens, stored_seqs, d, args, env)
        finally:  # the agents stop when a check fails
            with cv:
                state["stop"] = True
                cv.notify_all()
            for t in threads:
                t.join()
        self.assertEqual(errors, [])
        print("kills: %d, batches that shared a commit: %d" % (kills, grouped))
        self.assertEqual(kills, KILLS)
        self.assertGreater(grouped, 0)
        srv = state["srv"]
        for i, g in enumerate(gens):
            self.assertEqual(len(acked[i]), len(per[i]) - 1)
            seqs = sorted(k[0] for k in g.kernels)
            got = T.page_all(srv, "/api/v1/sessions/%s/kernels" % g.sid)
            self.assertEqual(sorted(k["kid"] for k in got), seqs)
        self.assertEqual(count(srv, "SELECT count(*) FROM kernels"), 0)
        self.assertEqual(count(srv, "SELECT sum(n) FROM kblocks"),
                         sum(len(g.kernels) for g in gens))
        # capi level 0: on PostgreSQL not written with blocks (computed
        # when asked, test_kblocks_tl0.py Capi0), on SQLite written
        # (packed: test_kblocks_tl0.py CapiLite; docs/server.md says why)
        n0 = len(capi_rows(srv, "lvl = 0"))
        if srv.pgdb:
            self.assertEqual(n0, 0)
        else:
            self.assertGreater(n0, 0)
        for q in ROLLUPS + [CAPI_Q if srv.pgdb else CAPI_ALL_Q]:
            self.assertEqual(rollup(srv, q), rollup(ref, q), q)

    def kill_loop(self, rnd, threads, state, cv, acked, gens, stored_seqs,
                  d, args, env):
        """kill -9 at random moments while the agents send (KILLS times),
        checking after each kill that every acknowledged batch is stored;
        returns the kills and the batches that shared a commit."""
        kills = grouped = 0
        while any(t.is_alive() for t in threads):
            time.sleep(rnd.uniform(0.3, 1.2))
            srv = state["srv"]
            m = metrics(srv)  # one scrape: both counters at one moment
            self.assertIn("gpufl_ingest_commits_total", m)
            grouped += int(m["gpufl_ingest_commit_batches_total"] -
                           m["gpufl_ingest_commits_total"])
            if kills >= KILLS or not any(t.is_alive() for t in threads):
                continue
            srv.kill()
            kills += 1
            with cv:
                before = [set(a) for a in acked]
            # every batch acknowledged before the kill is stored
            for i, g in enumerate(gens):
                ranges = stored_seqs(srv, g)
                for lo, hi in before[i]:
                    self.assertTrue(any(a <= lo and hi <= b2
                                        for a, b2 in ranges),
                                    (g.sid, lo, hi, ranges))
            with cv:
                state["srv"] = T.Server(d, args, env=env)
                self.servers.append(state["srv"])
                state["gen"] += 1
                state["kills"] = kills
                cv.notify_all()
        return kills, grouped


# (session, stream) runs the compactor still has to do: 4096 rows or more
# (SQ_KB_RUN), or any of an ended session
LEFT = ("SELECT count(*) FROM (SELECT k.sess, k.stream, count(*) AS c,"
        " max(s.state) AS st FROM kernels k JOIN sessions s ON s.id=k.sess"
        " GROUP BY k.sess, k.stream) t WHERE c >= 4096 OR st <> 'running'")

if __name__ == "__main__":
    unittest.main()
