/*
 * store_sql_kxrow.c - the kept rows of the session's longest and shortest
 * kernels that live in blocks (table kxrow, schema 24; docs/server.md
 * "Kernel blocks (store)").
 *
 * A page sorted by duration over all names reads kext's prefix (the
 * session's SQ_EXT_K longest and shortest keys, store_sql_ext.c) joined
 * with its kernels' rows.  A kernel in a block has no row, so that page
 * read the blocks in dur_max order and decoded up to one block per kernel
 * of the page (33.5 ms p50 at 1M kernels against 0.7 ms from rows).  Here
 * the rows of the first KX_KEEP keys of each side whose kernels go into a
 * block are kept, keyed as kext (sess, side, dur, seq), so that page reads
 * kext joined with the kernels' rows and these (store_sql_q_kernels.c),
 * and decodes nothing.
 *
 * Written where a kernel goes into a block, in that block's transaction,
 * so a kill -9 leaves the block with its rows or neither: ingest
 * (store_sql_kblocks_ingest.c; which of a block's kernels kext holds, and
 * among its first KX_KEEP, as this batch's heaps say), the compactor's
 * rows into a block and its merge of blocks (kext as stored: its prefix
 * property - a side holds every kernel of the session at or before its
 * last key - makes the test one comparison per kernel against the
 * KX_KEEP-th key), and `gpufl-server migrate` for blocks written before
 * (srv_store_kx_fill).  A row leaves with its kext key (the batch writers,
 * store_sql_ingest_*.c, when this server writes blocks) and with its
 * session (retention); a key whose kernel went below the first KX_KEEP
 * keeps its row until then.  A key without its row (a batch of more than
 * SQ_EXT_SESS sessions, a session written by a rows server, a page past
 * the rows kept) costs speed only: the query checks that every key it
 * takes has its row, and reads the blocks otherwise.
 */
#include "store_sql_int.h"
#include "store_sql_blocks_w.h"
#include "store_sql_writer_int.h"

#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "kblock.h"
#include "store_sql_q.h"

/* Keys per side whose kernels' rows are kept: the biggest page and the
 * one after it (the next page's "more" test), so a first page of any size
 * and the next pages up to this depth read no block.  Keeping the whole
 * prefix (SQ_EXT_K) would cost a session of few kernels two rows each. */
#define KX_KEEP (SQ_LIMIT_MAX + 1)

/* Blocks' keys a fill reads per session at most at a time. */
#define KX_FILL_BLOCKS 256

/* 1 when key (dur, seq) is at or before b in side d's order (0: longest
 * first, 1: shortest first). */
static int kx_before(int d, int64_t dur, int64_t seq, const int64_t b[2])
{
    if (dur != b[0])
        return d ? dur < b[0] : dur > b[0];
    return d ? seq <= b[1] : seq >= b[1];
}

/* Side d's KX_KEEP-th stored kext key of session sess, or its last when
 * it holds fewer (*have 0: none). */
static int kx_stored_bound(srv_store *s, int64_t sess, int d, int64_t b[2],
                           int *have)
{
    static const char *const sql[2][2] = {
        { "SELECT dur, seq FROM kext WHERE sess=?1 AND side=0 ORDER BY dur"
          " DESC, seq DESC LIMIT 1 OFFSET ?2",
          "SELECT dur, seq FROM kext WHERE sess=?1 AND side=0 ORDER BY dur,"
          " seq LIMIT 1" },
        { "SELECT dur, seq FROM kext WHERE sess=?1 AND side=1 ORDER BY dur,"
          " seq LIMIT 1 OFFSET ?2",
          "SELECT dur, seq FROM kext WHERE sess=?1 AND side=1 ORDER BY dur"
          " DESC, seq DESC LIMIT 1" },
    };
    int rc = SDB_DONE;

    *have = 0;
    for (int k = 0; k < 2 && !*have; k++) {
        sdb_stmt *st = s->kx_bound_st[d][k];
        if (!st && sdb_prepare(s->w, sql[d][k], &s->kx_bound_st[d][k]))
            return GPUFL_EINTERNAL;
        st = s->kx_bound_st[d][k];
        qbind_i64(st, 1, sess);
        if (!k)
            qbind_i64(st, 2, KX_KEEP - 1);
        if ((rc = sdb_step(st)) == SDB_ROW) {
            b[0] = qcol_i64(st, 0);
            b[1] = qcol_i64(st, 1);
            *have = 1;
        }
        sdb_reset(st);
        if (rc != SDB_ROW && rc != SDB_DONE)
            return sq_err(rc);
    }
    return GPUFL_OK;
}

int sq_kx_candidates(sdb *db, int64_t sess, const kblock_ev *ev, size_t n,
                     uint32_t *ix, size_t *m)
{
    int64_t b[2][2];
    int full[2] = { 0, 0 };

    *m = 0;
    for (int d = 0; d < 2; d++) {
        static const char *const sql[2] = {
            "SELECT dur, seq FROM kext WHERE sess=?1 AND side=0 ORDER BY"
            " dur DESC, seq DESC LIMIT 1 OFFSET ?2",
            "SELECT dur, seq FROM kext WHERE sess=?1 AND side=1 ORDER BY"
            " dur, seq LIMIT 1 OFFSET ?2",
        };
        sdb_stmt *st = NULL;
        int rc;
        if (sdb_prepare(db, sql[d], &st))
            return GPUFL_EINTERNAL;
        qbind_i64(st, 1, sess);
        qbind_i64(st, 2, KX_KEEP - 1);
        if ((rc = sdb_step(st)) == SDB_ROW) {
            b[d][0] = qcol_i64(st, 0);
            b[d][1] = qcol_i64(st, 1);
            full[d] = 1;
        }
        sdb_finalize(st);
        if (rc != SDB_ROW && rc != SDB_DONE)
            return sq_err(rc);
    }
    for (size_t i = 0; i < n; i++)
        if (!full[0] || !full[1] ||
            kx_before(0, (int64_t)ev[i].dur, (int64_t)ev[i].seq, b[0]) ||
            kx_before(1, (int64_t)ev[i].dur, (int64_t)ev[i].seq, b[1]))
            ix[(*m)++] = (uint32_t)i;
    return GPUFL_OK;
}

/* Kept rows one INSERT writes on SQLite (26 parameters each; the first
 * blocks of a session keep nearly every kernel, its first 1 001 are all
 * among them); PostgreSQL sends a block's rows as arrays instead
 * (sq_writer.kxrows), a statement being a round trip there. */
#define KX_ROWS (1u << (SQ_KX_PUT_N - 1))

/* The rows of ev[ix[0..m)] (side sd[i] each; m a power of two up to
 * KX_ROWS) in one statement (a row there already stays), kept prepared on
 * the writer: one prepare per size and server.  Prepared per call, the
 * shorter ones (a block's last rows) cost ~2 % of the HTTP worker's CPU
 * per kernel (docs/server.md "Where ingest's CPU goes").  *rows += how
 * many went in. */
static int kx_rows(srv_store *s, int64_t sess, const kblock_ev *ev,
                   const uint32_t *ix, const uint8_t *sd, size_t m,
                   uint64_t *rows)
{
    sdb_stmt **sp = &s->kx_put_st[__builtin_ctzll(m)];
    int rc;

    if (!*sp) {
        char sql[64 + 64 * KX_ROWS];
        size_t len =
            (size_t)snprintf(sql, sizeof(sql), "INSERT INTO kxrow VALUES");
        for (size_t j = 0; j < m; j++)
            len += (size_t)snprintf(sql + len, sizeof(sql) - len, "%s%s",
                                    j ? "," : "",
                                    "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
                                    "?,?,?,?,?,?)");
        snprintf(sql + len, sizeof(sql) - len, " ON CONFLICT DO NOTHING");
        if (sdb_prepare(s->w, sql, sp))
            return GPUFL_EINTERNAL;
    }
    for (size_t j = 0; j < m; j++) {
        sq_kernel_bind(*sp, (int)(26 * j), sess, &ev[ix[j]]);
        qbind_i64(*sp, (int)(26 * j + 26), sd[j]);
    }
    rc = qrun(*sp);
    if (!rc && rows)
        *rows += (uint64_t)sdb_changes(s->w);
    return rc;
}

/* ev[ix[0..m)] (m up to KX_ROWS) as kx_rows' statements of power-of-two
 * sizes, biggest first. */
static int kx_rows_any(srv_store *s, int64_t sess, const kblock_ev *ev,
                       const uint32_t *ix, const uint8_t *sd, size_t m,
                       uint64_t *rows)
{
    int rc = GPUFL_OK;

    for (size_t part = KX_ROWS; part && !rc; part /= 2)
        if (m & part) {
            rc = kx_rows(s, sess, ev, ix, sd, part, rows);
            ix += part;
            sd += part;
        }
    return rc;
}

/* ev[ix[0..m)]'s rows: on PostgreSQL one statement (sq_writer.kxrows:
 * the columns as arrays; a round trip each of kx_rows' power-of-two
 * statements cost more than the rows, docs/server.md "kxrow in one
 * statement"), else kx_rows_any's. */
static int kx_flush(srv_store *s, int64_t sess, const kblock_ev *ev,
                    const uint32_t *ix, const uint8_t *sd, size_t m,
                    uint64_t *rows)
{
    if (!m)
        return GPUFL_OK;
    if (s->wr->kxrows)
        return s->wr->kxrows(s, sess, ev, ix, sd, m, rows);
    return kx_rows_any(s, sess, ev, ix, sd, m, rows);
}

/* The kept rows of those of ev[0..n) at or before a side's bound (b[d],
 * have[d] 0: none), KX_ROWS a statement (SQ_KX_ARR on PostgreSQL); *rows
 * += how many went in (rows NULL: not counted, and on PostgreSQL not
 * waited for, sdb_send). */
static int kx_put_bound(srv_store *s, int64_t sess, const kblock_ev *ev,
                        size_t n, int64_t b[2][2], const int *have,
                        uint64_t *rows)
{
    uint32_t ix[SQ_KX_ARR];
    uint8_t sd[SQ_KX_ARR];
    size_t m = 0, cap = s->wr->kxrows ? SQ_KX_ARR : KX_ROWS;
    int rc = GPUFL_OK;

    for (size_t i = 0; i < n && !rc; i++)
        for (int d = 0; d < 2 && !rc; d++) {
            if (!have[d] ||
                !kx_before(d, (int64_t)ev[i].dur, (int64_t)ev[i].seq, b[d]))
                continue;
            ix[m] = (uint32_t)i;
            sd[m++] = (uint8_t)d;
            if (m == cap) {
                rc = kx_flush(s, sess, ev, ix, sd, m, rows);
                m = 0;
            }
        }
    return rc ? rc : kx_flush(s, sess, ev, ix, sd, m, rows);
}

int sq_kx_put(srv_store *s, int64_t sess, const kblock_ev *ev, size_t n,
              int heap)
{
    int64_t b[2][2] = { { 0, 0 }, { 0, 0 } };
    int have[2] = { 0, 0 }, rc;

    for (int d = 0; d < 2; d++) {
        if (heap) {
            if ((rc = sq_ext_kth(s, sess, d, KX_KEEP, b[d], &have[d])) != 0)
                return rc;
        } else if ((rc = kx_stored_bound(s, sess, d, b[d], &have[d])) != 0) {
            return rc;
        }
    }
    if (!have[0] && !have[1])
        return GPUFL_OK;
    return kx_put_bound(s, sess, ev, n, b, have, NULL);
}

/* ---- the fill (migrate) ---- */

typedef struct kx_blk {
    int64_t stream, lo;
} kx_blk;

/* The statements of one session's fill, prepared once for it (not once
 * per batch of blocks and once per block): kx_blocks' search and
 * kx_decode's read. */
#define KX_BLOCKS_SQL                                                          \
    "SELECT stream, seq_lo FROM kblocks WHERE sess=?1 AND (stream > ?2 OR"     \
    " (stream = ?2 AND seq_lo > ?3)) AND (dur_max >= ?4 OR dur_min <= ?5)"     \
    " ORDER BY stream, seq_lo LIMIT ?6"
#define KX_BLOCK_SQL                                                           \
    "SELECT block FROM kblocks WHERE sess=? AND stream=? AND seq_lo=?"

/* The blocks of sess that may hold a kernel at or before a bound (b0 of
 * side 0: dur_max >= its dur; b1 of side 1: dur_min <= its dur), from
 * after (stream, lo) on, in key order, into m (*n of cap); st is
 * KX_BLOCKS_SQL, reset after. */
static int kx_blocks(sdb_stmt *st, int64_t sess, const int64_t *b0,
                     const int64_t *b1, const kx_blk *after, kx_blk *m,
                     size_t cap, size_t *n)
{
    int rc;

    *n = 0;
    qbind_i64(st, 1, sess);
    qbind_i64(st, 2, after->stream);
    qbind_i64(st, 3, after->lo);
    qbind_i64(st, 4, b0 ? b0[0] : INT64_MAX);
    qbind_i64(st, 5, b1 ? b1[0] : INT64_MIN);
    qbind_i64(st, 6, (int64_t)cap);
    while ((rc = sdb_step(st)) == SDB_ROW && *n < cap) {
        m[*n].stream = qcol_i64(st, 0);
        m[(*n)++].lo = qcol_i64(st, 1);
    }
    sdb_reset(st);
    return rc == SDB_ROW || rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

/* One block decoded into s->kb_ev (*n events); st is KX_BLOCK_SQL, reset
 * after. */
static int kx_decode(srv_store *s, sdb_stmt *st, int64_t sess, const kx_blk *k,
                     size_t *n)
{
    const unsigned char *b = NULL;
    size_t len = 0;
    char why[128];
    int rc;

    *n = 0;
    qbind_i64(st, 1, sess);
    qbind_i64(st, 2, k->stream);
    qbind_i64(st, 3, k->lo);
    if ((rc = sdb_step(st)) != SDB_ROW) {
        sdb_reset(st);
        return rc == SDB_DONE ? GPUFL_OK : sq_err(rc); /* merged away */
    }
    rc = sq_kb_bytes(s, st, 0, sess, k->stream, k->lo, &b, &len);
    if (!rc && kblock_decode(s->kb_dec, b, len, s->kb_ev, KB_MAX_EVENTS, n, why,
                             sizeof(why))) {
        glog_error("kblocks", "session %lld: unreadable block: %s",
                   (long long)sess, why);
        rc = GPUFL_EINTERNAL;
    }
    sdb_reset(st);
    return rc;
}

/* The kept rows of one session: its blocks that may hold one, each
 * decoded and its kernels offered (one transaction; *rows written). */
static int kx_fill_one(srv_store *s, int64_t sess, uint64_t *rows)
{
    kx_blk *m = malloc(KX_FILL_BLOCKS * sizeof(*m));
    kx_blk after = { INT64_MIN, 0 };
    int64_t b[2][2] = { { 0, 0 }, { 0, 0 } };
    int have[2] = { 0, 0 }, rc = GPUFL_OK;
    size_t n = 0;
    sdb_stmt *bst = NULL, *dst = NULL;

    if (!m)
        return GPUFL_ENOMEM;
    for (int d = 0; d < 2 && !rc; d++)
        rc = kx_stored_bound(s, sess, d, b[d], &have[d]);
    if (rc || (!have[0] && !have[1]))
        goto out;
    if (sdb_prepare(s->w, KX_BLOCKS_SQL, &bst) ||
        sdb_prepare(s->w, KX_BLOCK_SQL, &dst)) {
        rc = GPUFL_EINTERNAL;
        goto out;
    }
    do {
        if ((rc = kx_blocks(bst, sess, have[0] ? b[0] : NULL,
                            have[1] ? b[1] : NULL, &after, m, KX_FILL_BLOCKS,
                            &n)) != 0)
            break;
        for (size_t i = 0; i < n && !rc; i++) {
            size_t ne = 0;
            if ((rc = kx_decode(s, dst, sess, &m[i], &ne)) != 0)
                break;
            rc = kx_put_bound(s, sess, s->kb_ev, ne, b, have, rows);
        }
        if (n)
            after = m[n - 1];
    } while (!rc && n == KX_FILL_BLOCKS);
out:
    sdb_finalize(bst);
    sdb_finalize(dst);
    free(m);
    return rc;
}

int srv_store_kx_fill(srv_store *s, uint64_t *rows)
{
    int64_t last = 0;
    int rc = GPUFL_OK;

    *rows = 0;
    /* a session at a time, each its own transaction (the writer's lock,
     * on PostgreSQL the ingest's advisory lock): a kill keeps what is
     * done, and a rerun writes only what is missing */
    for (;;) {
        sdb_stmt *st = NULL;
        int64_t sess = 0;
        int got = 0;
        pthread_mutex_lock(&s->wlock);
        if ((rc = sq_kb_state(s)) == 0 && (rc = sq_kb_tx_begin(s)) == 0) {
            if (sdb_prepare(s->w,
                            "SELECT min(sess) FROM kblocks WHERE sess > ?",
                            &st)) {
                rc = GPUFL_EINTERNAL;
            } else {
                qbind_i64(st, 1, last);
                if ((rc = sdb_step(st)) == SDB_ROW && !qcol_null(st, 0)) {
                    sess = qcol_i64(st, 0);
                    got = 1;
                }
                rc = rc == SDB_ROW || rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
                sdb_finalize(st);
            }
            if (!rc && got)
                rc = kx_fill_one(s, sess, rows);
            rc = sq_kb_tx_end(s, rc);
        }
        pthread_mutex_unlock(&s->wlock);
        if (rc || !got)
            break;
        last = sess;
    }
    return rc;
}

void srv_store_kq_stats(srv_store *s, srv_kq_stats *o)
{
    o->decoded = __atomic_load_n(&s->kq_decoded, __ATOMIC_RELAXED);
    o->kept = __atomic_load_n(&s->kq_kept, __ATOMIC_RELAXED);
    o->scanned = __atomic_load_n(&s->kq_scanned, __ATOMIC_RELAXED);
    o->indexed = __atomic_load_n(&s->kq_indexed, __ATOMIC_RELAXED);
    o->capi_rows = __atomic_load_n(&s->kq_capi_rows, __ATOMIC_RELAXED);
    o->ob_rows = __atomic_load_n(&s->kq_ob_rows, __ATOMIC_RELAXED);
}
