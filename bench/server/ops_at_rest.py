#!/usr/bin/env python3
"""ops_at_rest.py - bytes per op (copies, memsets, syncs) at rest, as rows
(--kernel-store=rows: table `ops` and its index) and as op blocks
(--kernel-store=blocks: table oblocks and its two indexes), the same
session ingested into each by a real gpufl-server (docs/server.md "Op
blocks").  Prints figures; not a test.

    GPUFL_BIN_DIR=build/bin python3 bench/server/ops_at_rest.py \
        [STEPS [BATCH [KERNELS]]]

A session of STEPS (default 20000) training steps, each: KERNELS
(default 20; 0 to time the ops' ingest alone) kernels on
two streams, two host-to-device copies of the batch, a memset, a
device-to-host copy of the loss and a stream sync, with their API calls
and thread - 5 ops a step - in requests of BATCH (default 5000) lines.
Also the server's CPU seconds for the whole ingest (kernels included:
PostgreSQL's own not counted).  With GPUFL_TEST_PG_URI_FILE (a cluster of tests/server/pg_cluster.sh) the
stores are PostgreSQL databases (pg_total_relation_size; "compacted"
after VACUUM FULL of oblocks, and printed after a plain VACUUM), else SQLite files (dbstat: pages of the tables and indexes;
free pages are the file's, not the table's).  "compacted": the blocks
store again after the compactor (store_sql_oblocks_compact.c) merged its
blocks - what small requests (BATCH 10) leave at rest - and the CPU
seconds of the server that did it.
"""
import time
import os
import random
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "tests", "server"))
import srvtest as T  # noqa: E402
import test_timeline as TL  # noqa: E402


def session(steps, rnd, nk):
    g = TL.Gen()
    names = [g.name(*TL.ADD), g.name(*TL.FILL), g.name(TL.GEMM)]
    t = TL.T0 + 10 ** 6
    corr = 0
    for s in range(steps):
        tid = 4242
        for kind, size in (("HtoD", 3 * 224 * 224 * 64 * 2), ("HtoD", 256)):
            corr += 1
            call = rnd.randrange(3000, 9000)
            dur = size // 12 + rnd.randrange(0, 2000)
            g.op("memcpy", t + call, dur, stream=7, corr=corr, kind=kind,
                 bytes=size, api=[-call, call + 500], tid=tid)
            t += call + dur + rnd.randrange(500, 3000)
        corr += 1
        g.op("memset", t + 2000, 1500 + rnd.randrange(0, 300), stream=7,
             corr=corr, bytes=1 << 20, api=[-2000, 2400], tid=tid)
        t += 5000
        for k in range(nk):
            corr += 1
            dur = rnd.randrange(5000, 200000)
            g.kernel(t, dur, names[k % 3], stream=7 + k % 2, corr=corr,
                     api=(-3000, 2500), tid=tid)
            t += dur + rnd.randrange(500, 4000)
        corr += 1
        g.op("memcpy", t + 3000, 1800 + rnd.randrange(0, 400), stream=7,
             corr=corr, kind="DtoH", bytes=4, api=[-3000, 6000], tid=tid)
        t += 8000
        corr += 1
        sync = rnd.randrange(1000, 50000)
        g.op("sync", t, sync, stream=7, corr=corr, kind="stream", tid=tid)
        t += sync + rnd.randrange(10000, 100000)
    return g


def cpu_s(pid):
    """User + system CPU seconds of process pid so far."""
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")


def at_rest(srv, tables):
    """Bytes of the tables and their indexes."""
    if srv.pgdb:
        q = " + ".join("pg_total_relation_size('%s')" % t for t in tables)
        return int(srv.sql("SELECT " + q)[0][0])
    import sqlite3
    db = sqlite3.connect(os.path.join(srv.data_dir, "gpufl.db"))
    try:
        names = ",".join("'%s'" % n for n in tables)
        idx = [r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type='index' AND tbl_name"
            " IN (%s)" % names)]
        allp = ",".join("'%s'" % n for n in list(tables) + idx)
        return int(db.execute("SELECT sum(pgsize) FROM dbstat WHERE name IN"
                              " (%s)" % allp).fetchone()[0] or 0)
    finally:
        db.close()


def compacted(path, tables, nops):
    """The blocks store at path reopened with the compactor every second,
    until its count of blocks holds still: (bytes, blocks, CPU s)."""
    srv = T.Server(path, ["--kernel-store", "blocks",
                          "--kernel-compact-interval", "1s"])
    try:
        c0 = cpu_s(srv.p.pid)
        last, same = -1, 0
        for _ in range(600):
            nb = int(srv.sql("SELECT count(*) FROM oblocks")[0][0])
            same = same + 1 if nb == last else 0
            last = nb
            if same >= 6:
                break
            time.sleep(0.5)
        cpu = cpu_s(srv.p.pid) - c0
        n = int(srv.sql("SELECT sum(n) FROM oblocks")[0][0])
        assert n == nops, (n, nops)
        if srv.pgdb:
            # the merged blocks' sources are dead tuples until a vacuum
            # frees their space for later rows; VACUUM FULL gives the
            # file back, as what the table holds
            srv.sql("VACUUM oblocks")
            print("  (PostgreSQL after compaction and VACUUM: %d bytes)" %
                  at_rest(srv, tables))
            srv.sql("VACUUM FULL oblocks")
        return at_rest(srv, tables), last, cpu
    finally:
        srv.stop()


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
    nk = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    g = session(steps, random.Random(1), nk)
    nops = len(g.ops)
    d = tempfile.mkdtemp(prefix="ops_at_rest.", dir=T.TMP)
    try:
        out = []
        for name, args, tables in (
                ("rows", ["--kernel-store", "rows"], ("ops",)),
                ("blocks", ["--kernel-store", "blocks",
                            "--kernel-compact-interval", "1h"],
                 ("oblocks",))):
            srv = T.Server(os.path.join(d, name), args)
            try:
                c0 = cpu_s(srv.p.pid)
                g.send(srv, batch=batch)
                cpu = cpu_s(srv.p.pid) - c0
                n = int(srv.sql("SELECT n_ops FROM sessions")[0][0])
                assert n == nops, (n, nops)
                b = at_rest(srv, tables)
                nb = srv.sql("SELECT count(*) FROM oblocks")[0][0]
                out.append((name, b, nb, cpu))
            finally:
                srv.stop()
            if name == "blocks":
                out.append(("compacted",) +
                           compacted(os.path.join(d, name), tables, nops))
        print("%d ops (%d steps of %d kernels, %d lines a request), %s" %
              (nops, steps, nk, batch,
               "PostgreSQL" if T.pg_base() else "SQLite"))
        for name, b, nb, cpu in out:
            print("  %-9s %10d bytes  %6.1f B/op  (oblocks rows: %s)"
                  "  server CPU %.2f s %s" %
                  (name, b, b / nops, nb, cpu,
                   "compacting" if name == "compacted" else
                   "for the %d lines" % len(g.lines["device"])))
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
