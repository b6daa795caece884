/*
 * store_sql_oblocks_compact.c - the compactor of op blocks (docs/server.md
 * "Op blocks"), on the maintenance thread with the kernel blocks'
 * (maint.c, every --kernel-compact-interval): a session's `ops` rows
 * (written before schema 32 or with --kernel-store=rows) into blocks of
 * ob_run() ops, then runs of ingest's small blocks - one per session and
 * batch (store_sql_oblocks_ingest.c), a few ops each when an agent sends
 * often - merged into blocks of up to ob_run().
 *
 * Readers read rows and blocks (store_sql_oblocks_read.c), and ingest's
 * duplicate check looks at both, so every op must be in exactly one of
 * them at every commit: each new block is inserted with exactly its
 * sources deleted (counted) in one transaction, as the kernel compactor
 * does (store_sql_kblocks_compact.c), and with its bounds: a converted
 * block per transaction, merges several blocks a transaction up to
 * OB_TX_OPS ops, the writer's lock held for one transaction at a time.
 * A kill -9 leaves the sources or the new block.
 */
#include "store_sql_int.h"
#include "store_sql_blocks_w.h"
#include "store_sql_q.h"

#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdlib.h>

#include "common/log.h"
#include "oblock.h"

/* Sessions one pass looks at, at most (the next tick finds the rest). */
#define OB_GROUPS_MAX 64
/* Blocks one merge reads at most: ingest's blocks of one op each still
 * fill a block in a pass or two (the kernels' 64 needed ~7 passes for
 * blocks of ten ops). */
#define OB_MERGE_SRC 1024
/* Blocks a run's look reads at a time (merge_one), as merge_prep's */
#define OB_LOOK_ROWS 64
/* Merges share a transaction up to this many ops (a few tens of ms of
 * ingest's wait on the lock): op blocks have no name indexes, whose
 * pages made the kernels' KB_TX_KERNELS four times this. */
#define OB_TX_OPS 65536

/* GPUFL_SERVER_OB_RUN (tests only): ops per block, 2..OB_MAX_EVENTS, so
 * that a test fills blocks with few ops. */
static size_t ob_run(void)
{
    const char *v = getenv("GPUFL_SERVER_OB_RUN");
    long long n = v ? strtoll(v, NULL, 10) : 0;
    return n >= 2 && n <= OB_MAX_EVENTS ? (size_t)n : OB_MAX_EVENTS;
}

/* A block of fewer ops than this is small: merged with its neighbours.
 * Half a block: two small ones always fit in one. */
static size_t ob_small(void)
{
    return ob_run() / 2;
}

/* The pass's buffers (about 2 MB), a pass's own: one each
 * --kernel-compact-interval, off every hot path. */
typedef struct ob_cx {
    oblock_ev *ev;      /* OB_MAX_EVENTS */
    unsigned char *blk; /* OB_BLOCK_MAX */
    oblock_enc *enc;
    oblock_dec *dec;
    int64_t src[OB_MERGE_SRC];
    int64_t sess[OB_GROUPS_MAX], lo[OB_GROUPS_MAX];
} ob_cx;

static void cx_free(ob_cx *c)
{
    if (!c)
        return;
    free(c->ev);
    free(c->blk);
    oblock_enc_free(c->enc);
    oblock_dec_free(c->dec);
    free(c);
}

static ob_cx *cx_new(void)
{
    ob_cx *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->ev = malloc(OB_MAX_EVENTS * sizeof(*c->ev));
    c->blk = malloc(OB_BLOCK_MAX);
    c->enc = oblock_enc_new();
    c->dec = oblock_dec_new();
    if (!c->ev || !c->blk || !c->enc || !c->dec) {
        cx_free(c);
        return NULL;
    }
    return c;
}

/* c->ev[0..n) of sess as one block, on the writer in its transaction. */
static int put(srv_store *s, ob_cx *c, int64_t sess, size_t n)
{
    sdb_stmt *ins = NULL, *span = NULL;
    int rc = GPUFL_EINTERNAL;

    if (sdb_prepare(s->w, SQ_OB_INSERT_SQL, &ins) == 0 &&
        sdb_prepare(s->w, SQ_OB_SPAN_SQL, &span) == 0)
        rc = sq_ob_put(ins, span, c->enc, c->blk, sess, c->ev, n);
    sdb_finalize(span);
    sdb_finalize(ins);
    return rc;
}

/* ---- rows into blocks ---- */

/* The sessions with `ops` rows: one probe of the key a session, not a
 * scan of the rows. */
static int rows_find(srv_store *s, ob_cx *c, size_t *ng)
{
    sdb_stmt *st = NULL;
    int rc;

    *ng = 0;
    if (sdb_prepare(s->w,
                    "SELECT id FROM sessions x WHERE EXISTS (SELECT 1 FROM"
                    " ops o WHERE o.sess=x.id) ORDER BY id LIMIT ?1",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, OB_GROUPS_MAX);
    while ((rc = sdb_step(st)) == SDB_ROW && *ng < OB_GROUPS_MAX)
        c->sess[(*ng)++] = qcol_i64(st, 0);
    sdb_finalize(st);
    return rc == SDB_DONE || rc == SDB_ROW ? GPUFL_OK : sq_err(rc);
}

/* The session's first ob_run() rows by seq into one block replacing them,
 * in the writer's open transaction.  *n: how many (0: none left).  Ingest
 * keeps a seq in rows or blocks, never both, so the block's seq_lo is no
 * other block's. */
static int convert_one(srv_store *s, ob_cx *c, int64_t sess, size_t *n)
{
    sdb_stmt *st = NULL;
    int rc;

    *n = 0;
    if (sdb_prepare(s->w,
                    "SELECT " SQ_OPS_COLS " FROM ops WHERE sess=?1 ORDER BY"
                    " seq LIMIT ?2",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sess);
    qbind_i64(st, 2, (int64_t)ob_run());
    while ((rc = sdb_step(st)) == SDB_ROW && *n < OB_MAX_EVENTS)
        sq_op_row(st, 0, &c->ev[(*n)++]);
    sdb_finalize(st);
    st = NULL;
    if (rc != SDB_DONE && rc != SDB_ROW)
        return sq_err(rc);
    if (!*n)
        return GPUFL_OK;
    if ((rc = put(s, c, sess, *n)) != 0)
        return rc;
    sq_kb_test_pause("GPUFL_SERVER_OB_PAUSE_MS");
    /* exactly the rows read: their seq range (the writer's lock or the
     * advisory lock keeps ingest out meanwhile) */
    if (sdb_prepare(s->w,
                    "DELETE FROM ops WHERE sess=?1 AND seq >= ?2 AND"
                    " seq <= ?3",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sess);
    qbind_u64(st, 2, c->ev[0].seq);
    qbind_u64(st, 3, c->ev[*n - 1].seq);
    rc = sdb_err(sdb_step(st));
    sdb_finalize(st);
    if (!rc && (size_t)sdb_changes(s->w) != *n) {
        glog_error("oblocks",
                   "session %lld: read %zu op rows, would delete %lld: not"
                   " converted",
                   (long long)sess, *n, (long long)sdb_changes(s->w));
        rc = GPUFL_EINTERNAL;
    }
    return rc;
}

/* Every session's rows, a block a transaction under the writer's lock
 * (ingest waits for one block's transaction at most, not the pass). */
static int convert_pass(srv_store *s, ob_cx *c, uint64_t *blocks, uint64_t *ops)
{
    size_t ng = 0;
    int rc;

    pthread_mutex_lock(&s->wlock);
    rc = rows_find(s, c, &ng);
    pthread_mutex_unlock(&s->wlock);
    for (size_t i = 0; !rc && i < ng; i++)
        for (;;) {
            size_t n = 0;
            pthread_mutex_lock(&s->wlock);
            if ((rc = sq_kb_tx_begin(s)) == 0)
                rc = sq_kb_tx_end(s, convert_one(s, c, c->sess[i], &n));
            pthread_mutex_unlock(&s->wlock);
            if (rc || !n)
                break;
            *blocks += 1;
            *ops += n;
        }
    return rc;
}

/* ---- merging small blocks ---- */

static int ev_seq_cmp(const void *a, const void *b)
{
    const oblock_ev *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The block in st's column 2 (seq_lo 0, n 1) decoded at c->ev + at; *n
 * its ops.  One that does not decode, or whose count is not its row's:
 * GPUFL_EPARSE (not merged; the readers say so when they meet it). */
static int merge_read(srv_store *s, ob_cx *c, sdb_stmt *st, int64_t sess,
                      size_t at, size_t *n)
{
    size_t len = 0;
    const unsigned char *b = NULL;
    char why[128] = "";
    int rc;

    /* a cold block through the cold tier: S3 down is GPUFL_EAGAIN (the
     * pass stops; the next tick tries again) */
    if ((rc = sq_ob_bytes(s, st, 2, sess, qcol_i64(st, 0), &b, &len)) != 0)
        return rc;

    if (oblock_decode(c->dec, b, len, c->ev + at, OB_MAX_EVENTS - at, n, why,
                      sizeof(why)) ||
        *n != (size_t)qcol_i64(st, 1)) {
        glog_debug("oblocks", "session %lld block %lld: not decoded: %s",
                   (long long)sess, (long long)qcol_i64(st, 0),
                   why[0] ? why : "count differs");
        return GPUFL_EPARSE;
    }
    return GPUFL_OK;
}

/* The session's first run of small blocks from seq_lo lo on - adjacent by
 * seq_lo, two or more, ob_run() ops at most - into one block, in the
 * writer's open transaction: the sources deleted, each exactly once, and
 * the merged block inserted.  *n its ops (0: no run); *bad the blocks
 * passed over that do not decode. */
static int merge_one(srv_store *s, ob_cx *c, int64_t sess, int64_t lo,
                     size_t *n, uint64_t *bad)
{
    sdb_stmt *st = NULL;
    size_t small = ob_small(), nsrc, total;
    sq_mrun r = { 0, 0, OB_MERGE_SRC, ob_run() };
    int64_t rows = OB_LOOK_ROWS;
    int rc = SDB_DONE, err = GPUFL_OK, stop = 0;

    *n = 0;
    /* the bytes of small blocks only (a full block's are not read),
     * OB_LOOK_ROWS at a time: PostgreSQL sends a statement's whole result
     * at once (merge_prep in store_sql_kblocks_merge.c) */
    if (sdb_prepare(s->w,
                    "SELECT seq_lo, n, CASE WHEN n < ?2 THEN payload END"
                    " FROM oblocks WHERE sess=?1 AND seq_lo >= ?3 ORDER BY"
                    " seq_lo LIMIT ?4",
                    &st))
        return GPUFL_EINTERNAL;
    /* a page that came back whole may have more after it */
    while (!stop && !err && rows == OB_LOOK_ROWS) {
        qbind_i64(st, 1, sess);
        qbind_i64(st, 2, (int64_t)small);
        qbind_i64(st, 3, lo);
        qbind_i64(st, 4, OB_LOOK_ROWS);
        rows = 0;
        while ((rc = sdb_step(st)) == SDB_ROW) {
            size_t k = (size_t)qcol_i64(st, 1), got = 0;
            int next = sq_mrun_next(&r, k, k >= small);
            rows++;
            lo = qcol_i64(st, 0) + 1;
            if (next == SQ_MRUN_PASS)
                continue;
            if (next == SQ_MRUN_END) {
                stop = 1;
                break;
            }
            if ((err = merge_read(s, c, st, sess, r.total, &got)) ==
                GPUFL_EPARSE) {
                err = GPUFL_OK;
                *bad += 1;
                if (sq_mrun_bad(&r) == SQ_MRUN_END) {
                    stop = 1;
                    break;
                }
                continue;
            }
            if (err)
                break;
            c->src[r.nsrc] = qcol_i64(st, 0);
            sq_mrun_took(&r, got);
        }
        sdb_reset(st);
        if (rc != SDB_DONE && rc != SDB_ROW)
            break;
    }
    sdb_finalize(st);
    st = NULL;
    if (err)
        return err;
    if (rc != SDB_DONE && rc != SDB_ROW)
        return sq_err(rc);
    if ((nsrc = r.nsrc) < 2)
        return GPUFL_OK;
    total = r.total;
    rc = GPUFL_OK;
    /* in seq order: ingest's blocks of a replay interleave */
    qsort(c->ev, total, sizeof(*c->ev), ev_seq_cmp);
    if (sdb_prepare(s->w, "DELETE FROM oblocks WHERE sess=?1 AND seq_lo=?2",
                    &st))
        return GPUFL_EINTERNAL;
    for (size_t i = 0; i < nsrc && !rc; i++) {
        qbind_i64(st, 1, sess);
        qbind_i64(st, 2, c->src[i]);
        /* one that went (retention) gives the merge up */
        if ((rc = qrun(st)) == 0 && sdb_changes(s->w) != 1) {
            glog_error("oblocks",
                       "session %lld: block %lld went while merged: not"
                       " merged",
                       (long long)sess, (long long)c->src[i]);
            rc = GPUFL_EINTERNAL;
        }
    }
    sdb_finalize(st);
    if (rc || (rc = put(s, c, sess, total)) != 0)
        return rc;
    sq_kb_test_pause("GPUFL_SERVER_OB_PAUSE_MS");
    *n = total;
    return GPUFL_OK;
}

/* The sessions with two small blocks or more, and the first's seq_lo. */
static int merge_find(srv_store *s, void *ctx, size_t *ng, int *more)
{
    ob_cx *c = ctx;
    sdb_stmt *st = NULL;
    int rc;

    (void)more; /* one round: the next tick finds what is left */
    *ng = 0;
    if (sdb_prepare(s->w,
                    "SELECT sess, min(seq_lo) FROM oblocks WHERE n < ?1"
                    " GROUP BY sess HAVING count(*) >= 2 ORDER BY sess"
                    " LIMIT ?2",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, (int64_t)ob_small());
    qbind_i64(st, 2, OB_GROUPS_MAX);
    while ((rc = sdb_step(st)) == SDB_ROW && *ng < OB_GROUPS_MAX) {
        c->sess[*ng] = qcol_i64(st, 0);
        c->lo[(*ng)++] = qcol_i64(st, 1);
    }
    sdb_finalize(st);
    return rc == SDB_DONE || rc == SDB_ROW ? GPUFL_OK : sq_err(rc);
}

/* A merged block a step, the session done when it has no run left;
 * OB_TX_OPS a transaction. */
static int merge_step(srv_store *s, void *ctx, size_t i, sq_pass_tx *t,
                      int *done)
{
    ob_cx *c = ctx;
    size_t n = 0;
    uint64_t b = 0;
    int rc = merge_one(s, c, c->sess[i], c->lo[i], &n, &b);

    if (rc)
        return rc;
    if (n) {
        t->cnt[0]++;
        t->cnt[1] += n;
        t->cost += n;
    } else {
        t->bad += b; /* re-read each step: counted at the last */
        *done = 1;
    }
    return GPUFL_OK;
}

int srv_store_oblocks_compact(srv_store *s, uint64_t *blocks, uint64_t *ops)
{
    ob_cx *c = cx_new();
    uint64_t cnt[2] = { 0, 0 };
    sq_pass p = { .find = merge_find,
                  .step = merge_step,
                  .tx_cost = OB_TX_OPS,
                  .tag = "oblocks",
                  .bad_what = "op blocks are not merged: they do not decode"
                              " (--log-level=debug names them)",
                  .bad_last = &s->ob_unmergeable };
    int rc;

    *blocks = 0;
    *ops = 0;
    if (!c)
        return GPUFL_ENOMEM;
    p.ctx = c;
    rc = convert_pass(s, c, blocks, ops);
    if (!rc)
        rc = sq_pass_run(s, &p, cnt);
    *blocks += cnt[0];
    *ops += cnt[1];
    cx_free(c);
    return rc;
}
