/*
 * store_sql_kblocks_compact.c - the compactor of kernel blocks (issue 23;
 * docs/server.md "Kernel blocks (store)"), on the maintenance thread every
 * --kernel-compact-interval: a (session, stream)'s kernel rows into
 * blocks of SQ_KB_RUN (the rows of older servers and of
 * --kernel-store=rows), and runs of ingest's small blocks merged into
 * blocks of up to KB_MERGE_MAX (store_sql_kblocks_merge.c), then ingest's
 * blocks that will not merge named (their kbnames rows).  Each block is inserted with exactly its
 * sources deleted (checked) in one transaction - merges and namings
 * several blocks a transaction (KB_TX_KERNELS) - so a kill -9 leaves
 * either.  The block writer (sq_kb_put) and the
 * duplicate checks are in store_sql_kblocks.c.
 */
#include "store_sql_int.h"
#include "store_sql_blocks_w.h"
#include "store_sql_kblocks_read.h"

#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "kblock.h"
#include "store_sql_kbnpack.h"
#include "store_sql_kbcompact.h"

/* The kernel columns, in the table's order (store_sql_schema.c,
 * sq_kernel_bind). */
#define KB_COLS KB_ROW_COLS

/* GPUFL_SERVER_KB_PAUSE_MS (tests only): a pause inside each block's
 * transaction, between the block's insert and the rows' delete, so that a
 * test's kill -9 lands inside compaction. */
void sq_kbc_test_pause(void)
{
    sq_kb_test_pause("GPUFL_SERVER_KB_PAUSE_MS");
}

/* A test knob: the environment's value when in 1..max, else max. */
static int64_t kb_env(const char *name, int64_t max)
{
    const char *v = getenv(name);
    long long n = v ? strtoll(v, NULL, 10) : 0;
    return n >= 1 && n <= max ? (int64_t)n : max;
}

/* GPUFL_SERVER_KB_RUN (tests only): kernels per block, 1..SQ_KB_RUN, so
 * that a test makes many small blocks (the reads must handle any size). */
int64_t sq_kbc_run(void)
{
    return kb_env("GPUFL_SERVER_KB_RUN", SQ_KB_RUN);
}

/* Up to SQ_KB_RUN of the session's stream's kernels, lowest seq first,
 * into one block replacing them.  *nk: how many (0: none). */
static int compact_one(srv_store *s, int64_t sess, int64_t stream, uint64_t *nk)
{
    sdb_stmt *st = NULL;
    size_t n = 0;
    kblock_index *idx;
    int rc;

    *nk = 0;
    if ((rc = sq_kb_state(s)) != 0)
        return rc;
    idx = s->kb_idx;
    if (sdb_prepare(s->w,
                    "SELECT " KB_COLS " FROM kernels WHERE sess=?1 AND"
                    " stream=?2 AND" KB_EXACT " ORDER BY seq LIMIT ?3",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sess);
    qbind_i64(st, 2, stream);
    qbind_i64(st, 3, sq_kbc_run());
    while ((rc = sdb_step(st)) == SDB_ROW && n < KB_MAX_EVENTS) {
        unsigned nul; /* KB_EXACT: a NULL occ or tid is the block's own */
        kb_row_ev(st, 0, &s->kb_ev[n++], &nul);
    }
    sdb_finalize(st);
    st = NULL;
    if (rc != SDB_DONE && rc != SDB_ROW)
        return sq_err(rc);
    if (!n)
        return GPUFL_OK;
    /* the kept rows of its kernels among the session's longest and
     * shortest (store_sql_kxrow.c), then the block */
    if ((rc = sq_kx_put(s, sess, s->kb_ev, n, 0)) != 0 ||
        (rc = sq_kb_put(s, sess, stream, n, 1)) != 0)
        return rc;
    sq_kbc_test_pause();
    /* exactly the rows read: the same filter over their seq range (the
     * write lock or advisory lock keeps others out meanwhile) */
    if (sdb_prepare(s->w,
                    "DELETE FROM kernels WHERE sess=?1 AND stream=?2 AND"
                    " seq >= ?3 AND seq <= ?4 AND" KB_EXACT,
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sess);
    qbind_i64(st, 2, stream);
    qbind_u64(st, 3, idx->seq_min);
    qbind_u64(st, 4, idx->seq_max);
    rc = sdb_err(sdb_step(st));
    sdb_finalize(st);
    if (rc)
        return rc;
    if ((size_t)sdb_changes(s->w) != n) {
        glog_error("kblocks",
                   "session %lld stream %lld: read %zu kernels, would delete"
                   " %lld: not compacted",
                   (long long)sess, (long long)stream, n,
                   (long long)sdb_changes(s->w));
        return GPUFL_EINTERNAL;
    }
    *nk = n;
    return sq_kcount_sub(s, sess, stream, (int64_t)n);
}

/* The (session, stream) runs worth a block: SQ_KB_RUN rows or more, or
 * any rows once the session is no longer running - from their counts
 * (kcount, migration 23), not from the rows. */
static int groups_find(srv_store *s, kb_group *g, size_t cap, size_t *ng)
{
    sdb_stmt *st = NULL;
    int rc;

    *ng = 0;
    if (sdb_prepare(s->w,
                    "SELECT c.sess, c.stream, c.n, CASE WHEN x.state="
                    "'running' THEN 0 ELSE 1 END FROM kcount c JOIN sessions"
                    " x ON x.id=c.sess WHERE c.n >= ?1 OR (c.n > 0 AND"
                    " x.state <> 'running') ORDER BY c.sess, c.stream"
                    " LIMIT ?2",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sq_kbc_run());
    qbind_i64(st, 2, (int64_t)cap);
    while ((rc = sdb_step(st)) == SDB_ROW && *ng < cap)
        g[(*ng)++] = (kb_group){ qcol_i64(st, 0), qcol_i64(st, 1),
                                 qcol_i64(st, 2), (int)qcol_i64(st, 3) };
    sdb_finalize(st);
    return rc == SDB_DONE || rc == SDB_ROW ? GPUFL_OK : sq_err(rc);
}

/* ---- naming ingest's blocks ---- */

/* Ingest writes its blocks without kbnames rows, each listed in kbunnamed
 * instead (sq_kb_put): most are merged within a pass or two, and their
 * names, written and deleted again, were most of the store's WAL.  After
 * each merge pass the compactor names those that will not merge: every
 * block of a session no longer running; of a running one a full block and
 * a small one followed by a full block (a run of one).  A running
 * stream's last small block may still merge, and so may a small block
 * followed by a small one that ingest wrote after the merge pass - both
 * wait.  Until named a block reads as holding any name (kbunnamed:
 * store_sql_kblocks_names.c, meta_by_name). */
#define KB_NAME_LIST 64
#define KB_NAME_ROUNDS 64

/* GPUFL_SERVER_KB_NAME_MAX (tests only): blocks a pass names at most,
 * 1..KB_NAME_LIST * KB_NAME_ROUNDS (the default), so that a test sees the
 * passes that follow name the rest (migrate runs passes until one makes
 * and names nothing). */
static uint64_t kb_name_max(void)
{
    return (uint64_t)kb_env("GPUFL_SERVER_KB_NAME_MAX",
                            KB_NAME_LIST * KB_NAME_ROUNDS);
}

typedef struct kb_key3 {
    int64_t sess, stream, seq_lo;
} kb_key3;

/* Up to cap blocks to name (the SQL says which, as above) after the
 * block `after` (in key order: a block that cannot be named is passed,
 * not found again by the pass's next round). */
static int names_find(srv_store *s, const kb_key3 *after, kb_key3 *k,
                      size_t cap, size_t *nk)
{
    sdb_stmt *st = NULL;
    int rc;

    *nk = 0;
    if (sdb_prepare(s->w,
                    "SELECT u.sess, u.stream, u.seq_lo FROM kbunnamed u"
                    " JOIN sessions x ON x.id=u.sess JOIN kblocks b ON"
                    " b.sess=u.sess AND b.stream=u.stream AND"
                    " b.seq_lo=u.seq_lo WHERE (u.sess, u.stream, u.seq_lo) >"
                    " (?3, ?4, ?5) AND (x.state <> 'running' OR"
                    " b.n >= ?1 OR (SELECT c.n FROM kblocks c WHERE"
                    " c.sess=u.sess AND c.stream=u.stream AND c.seq_lo >"
                    " u.seq_lo ORDER BY c.seq_lo LIMIT 1) >= ?1) ORDER BY"
                    " u.sess, u.stream, u.seq_lo LIMIT ?2",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sq_kbc_run());
    qbind_i64(st, 2, (int64_t)cap);
    qbind_i64(st, 3, after->sess);
    qbind_i64(st, 4, after->stream);
    qbind_i64(st, 5, after->seq_lo);
    while ((rc = sdb_step(st)) == SDB_ROW && *nk < cap)
        k[(*nk)++] =
            (kb_key3){ qcol_i64(st, 0), qcol_i64(st, 1), qcol_i64(st, 2) };
    sdb_finalize(st);
    return rc == SDB_DONE || rc == SDB_ROW ? GPUFL_OK : sq_err(rc);
}

/* One block named, in the writer's open transaction: its events decoded,
 * its kbunnamed row deleted (none: named or gone meanwhile, nothing to
 * do), its kbnames rows written.  *nk: its kernels when named, else 0.
 * A block that does not decode: GPUFL_EPARSE with nothing changed (the
 * transaction's other blocks stand; its kbunnamed row stays: read whole
 * by name filters, as before). */
static int name_one(srv_store *s, const kb_key3 *k, size_t *nk)
{
    sdb_stmt *st = NULL, *del = NULL;
    const unsigned char *b = NULL;
    size_t n = 0, len = 0;
    char why[128] = "";
    int rc;

    *nk = 0;
    if ((rc = sq_kb_state(s)) != 0)
        return rc;
    if (sdb_prepare(s->w,
                    "SELECT seq_lo, n, block FROM kblocks WHERE sess=?1 AND"
                    " stream=?2 AND seq_lo=?3",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, k->sess);
    qbind_i64(st, 2, k->stream);
    qbind_i64(st, 3, k->seq_lo);
    if ((rc = sdb_step(st)) != SDB_ROW) {
        sdb_finalize(st);
        return rc == SDB_DONE ? GPUFL_OK : sq_err(rc); /* the block went */
    }
    if ((rc = sq_kb_bytes(s, st, 2, k->sess, k->stream, k->seq_lo, &b, &len)) ==
            0 &&
        (kblock_decode(s->kb_dec, b, len, s->kb_ev, KB_MAX_EVENTS, &n, why,
                       sizeof(why)) ||
         n != (size_t)qcol_i64(st, 1))) {
        glog_debug("kblocks",
                   "session %lld stream %lld block %lld: not decoded: %s",
                   (long long)k->sess, (long long)k->stream,
                   (long long)k->seq_lo, why[0] ? why : "count differs");
        rc = GPUFL_EPARSE;
    }
    /* decoded first: a block that does not decode changes nothing, so
     * the transaction's other blocks are kept */
    if (!rc && sdb_prepare(s->w,
                           "DELETE FROM kbunnamed WHERE sess=?1 AND"
                           " stream=?2 AND seq_lo=?3",
                           &del))
        rc = GPUFL_EINTERNAL;
    if (!rc) {
        qbind_i64(del, 1, k->sess);
        qbind_i64(del, 2, k->stream);
        qbind_i64(del, 3, k->seq_lo);
        rc = qrun(del);
    }
    if (!rc && sdb_changes(s->w) == 1) {
        sq_kbc_test_pause(); /* a kill here leaves the block listed */
        if ((rc = sq_kb_name(s, k->sess, k->stream, b, len, n)) == 0)
            *nk = n;
    }
    sdb_finalize(del);
    sdb_finalize(st);
    return rc;
}

/* The blocks to name: KB_NAME_ROUNDS lists of KB_NAME_LIST at most,
 * each after the last, kb_name_max() in all. */
typedef struct name_pass_ctx {
    kb_key3 k[KB_NAME_LIST], after;
    uint64_t left;
    int round;
} name_pass_ctx;

static int name_find(srv_store *s, void *ctx, size_t *n, int *more)
{
    name_pass_ctx *c = ctx;
    size_t cap = c->left < KB_NAME_LIST ? (size_t)c->left : KB_NAME_LIST;
    int rc;

    *n = 0;
    if (c->round++ >= KB_NAME_ROUNDS || !c->left)
        return GPUFL_OK;
    if ((rc = names_find(s, &c->after, c->k, cap, n)) != 0)
        return rc;
    c->left -= *n;
    if (*n)
        c->after = c->k[*n - 1];
    *more = *n == cap; /* a shorter list was the last */
    return GPUFL_OK;
}

/* A block a step, KB_TX_KERNELS a transaction.  Counts blocks named and
 * their kernels. */
static int name_step(srv_store *s, void *ctx, size_t i, sq_pass_tx *t,
                     int *done)
{
    size_t n = 0;
    int rc = name_one(s, &((name_pass_ctx *)ctx)->k[i], &n);

    *done = 1;
    if (rc == GPUFL_EPARSE) {
        t->bad++;
        return GPUFL_OK;
    }
    t->cnt[0] += n > 0;
    t->cnt[1] += n;
    t->cost += n;
    return rc;
}

/* The blocks to name, several a transaction (KB_TX_KERNELS: the writer's
 * lock held for some tens of ms at most); *named: how many.  A block that
 * does not decode is passed (and counted: s->kb_unnamable), not a stop:
 * one bad block left every later one unnamed, and the pass failing. */
static int name_pass(srv_store *s, uint64_t *named)
{
    name_pass_ctx c = { .after = { -1, -1, -1 }, .left = kb_name_max() };
    uint64_t cnt[2] = { 0, 0 };
    sq_pass p = { .find = name_find,
                  .step = name_step,
                  .ctx = &c,
                  .tx_cost = KB_TX_KERNELS,
                  .tag = "kblocks",
                  .bad_what = "kernel blocks do not decode and stay unnamed"
                              " (a name filter reads them whole; their"
                              " kernels cannot be read; --log-level=debug"
                              " names them)",
                  .bad_last = &s->kb_unnamable };
    int rc = sq_pass_run(s, &p, cnt);

    *named += cnt[0];
    return rc;
}

int srv_store_kblocks_compact(srv_store *s, uint64_t *blocks, uint64_t *kernels,
                              uint64_t *named)
{
    kb_group g[KB_GROUPS_MAX];
    size_t ng = 0;
    int rc;

    *blocks = 0;
    *kernels = 0;
    pthread_mutex_lock(&s->wlock);
    rc = groups_find(s, g, KB_GROUPS_MAX, &ng);
    pthread_mutex_unlock(&s->wlock);
    /* the writer's lock block by block: ingest waits for one block's
     * transaction at most, not for the pass */
    for (size_t i = 0; !rc && i < ng; i++) {
        /* a running stream keeps its last partial run as rows */
        while (!rc && (g[i].n >= sq_kbc_run() || (g[i].ended && g[i].n > 0))) {
            uint64_t nk = 0;
            pthread_mutex_lock(&s->wlock);
            if ((rc = sq_kb_tx_begin(s)) == 0)
                rc = sq_kb_tx_end(s,
                                  compact_one(s, g[i].sess, g[i].stream, &nk));
            pthread_mutex_unlock(&s->wlock);
            if (rc || !nk)
                break;
            *blocks += 1;
            *kernels += nk;
            g[i].n -= (int64_t)nk;
        }
    }
    if (!rc)
        rc = sq_kb_merge_pass(s, blocks, kernels);
    if (!rc) {
        uint64_t nn = 0;
        rc = name_pass(s, &nn);
        if (nn)
            glog_debug("kblocks", "named %llu blocks", (unsigned long long)nn);
        if (named)
            *named = nn;
    }
    return rc;
}
