/*
 * store_sql_q_capi.c - the API calls' summary as stored (table capi,
 * store_sql_capi.c) read back for /calls (store_sql_q_calls_sum.c): a level's
 * buckets of a window.  On PostgreSQL the ranges a session has moved past
 * are packs (capipack, store_sql_capipack.c) and a late call's upsert may
 * leave a row beside its range's pack; on SQLite level 0 is packed at
 * ingest, and a database from before keeps its rows beside the packs.
 * Rows and packs are read in (thread, bucket) order and merged, a bucket
 * in both added, so the answer is the one the rows alone gave before
 * packing.  SQLite's other levels are rows as stored.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include "store_sql_capipack.h"
#include "store_sql_q.h"

int sq_capi_packed(qctx *c, int lv)
{
    return sdb_dialect(c->db) == SDB_POSTGRES
               ? lv >= SQ_CAPP_LVL_MIN && lv <= SQ_CAPP_LVL_MAX
               : lv == SQ_CAPP_LITE_LVL;
}

/* A packed level: the packs of the window [lo, hi] opened into P, its
 * first bucket read (*have); else nothing. */
static int packs_open(qctx *c, int lv, int64_t lo, int64_t hi, sq_tlp_iter *P,
                      int *have)
{
    sdb_stmt *st;

    P->st = NULL;
    *have = 0;
    if (!sq_capi_packed(c, lv))
        return GPUFL_OK;
    /* SQLite: the threads listed first (level 5's rows, never packed
     * there), so that the key (sess, lvl, tid, b0) seeks each thread's
     * window - with b0 alone after (sess, lvl) it read every level-0
     * pack of the session, the whole session's bytes for any window */
    if (sdb_prepare(c->db,
                    sdb_dialect(c->db) == SDB_SQLITE
                        ? "SELECT tid, b0, data FROM capipack WHERE sess=?1"
                          " AND lvl=?2 AND tid IN (SELECT DISTINCT tid FROM"
                          " capi WHERE sess=?1 AND lvl=?5) AND b0 >= ?3 AND"
                          " b0 <= ?4 ORDER BY tid, b0"
                        : "SELECT tid, b0, data FROM capipack WHERE sess=?1"
                          " AND lvl=?2 AND b0 >= ?3 AND b0 <= ?4"
                          " ORDER BY tid, b0",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, c->sess);
    qbind_i64(st, 2, lv);
    if (sdb_dialect(c->db) == SDB_SQLITE)
        qbind_i64(st, 5, RL_TL_LEVELS - 1);
    return sq_tlp_iter_start(P, st, lo, hi, have);
}

static int packs_put(sq_capi_fn fn, void *arg, const sq_tlp_iter *P)
{
    const sq_tlb *v = &P->v[P->i];
    return fn(arg, (uint32_t)P->lane, (uint64_t)v->b, (uint64_t)v->n,
              (uint64_t)v->busy);
}

int sq_capi_each(qctx *c, int lv, int64_t b_lo, int64_t b_hi, sq_capi_fn fn,
                 void *arg)
{
    /* ~5 kB: one per query, on the query thread's stack */
    sq_tlp_iter P;
    int rc, have = 0, pk = sq_capi_packed(c, lv);

    P.st = NULL;
    /* the rows' window is half-open, the packs' closed: [b_lo, b_hi - 1],
     * not wrapping once an empty window has answered nothing */
    if (b_hi <= b_lo)
        return GPUFL_OK;
    /* a packed level's in (tid, b) order to merge with the packs (a sort
     * of the window's rows: a few thousand, on SQLite a database's from
     * before packing); SQLite's unpacked levels as its key holds them,
     * in b order (no sort: the key's order) - store_sql_q_calls_sum.c's
     * capi_whole gathers a bucket's threads as they come one after the
     * other */
    rc = q_prepare(c, pk ? "SELECT tid, b, n, busy FROM capi WHERE sess=?1"
                           " AND lvl=?2 AND b >= ?3 AND b < ?4"
                           " ORDER BY tid, b"
                         : "SELECT tid, b, n, busy FROM capi WHERE sess=?1"
                           " AND lvl=?2 AND b >= ?3 AND b < ?4 ORDER BY b");
    if (rc || (rc = packs_open(c, lv, b_lo, b_hi - 1, &P, &have)) != 0)
        goto out;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, lv);
    qbind_i64(c->st, 3, b_lo);
    qbind_i64(c->st, 4, b_hi);
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        sq_tlb r = { qcol_i64(c->st, 1), qcol_i64(c->st, 2), qcol_i64(c->st, 3),
                     0, 0 };
        int64_t tid = qcol_i64(c->st, 0);
        int k = 1;
        /* the packed buckets before this row's */
        while (have && (k = sq_tlp_iter_cmp(&P, tid, r.b)) < 0)
            if ((rc = packs_put(fn, arg, &P)) != 0 ||
                (rc = sq_tlp_iter_next(&P, &have)) != 0)
                goto out;
        if (have && k == 0) {
            sq_tlb_add(&r, &P.v[P.i]);
            if ((rc = sq_tlp_iter_next(&P, &have)) != 0)
                goto out;
        }
        if ((rc = fn(arg, (uint32_t)tid, (uint64_t)r.b, (uint64_t)r.n,
                     (uint64_t)r.busy)) != 0)
            goto out;
    }
    if (rc != SDB_DONE) {
        rc = sq_err(rc);
        goto out;
    }
    rc = GPUFL_OK;
    /* the packed buckets after the last row */
    while (have)
        if ((rc = packs_put(fn, arg, &P)) != 0 ||
            (rc = sq_tlp_iter_next(&P, &have)) != 0)
            goto out;
out:
    sq_tlp_iter_close(&P);
    return rc;
}

int sq_capi_rd_open(qctx *c, int lv, sq_capi_rd *r)
{
    r->st = NULL;
    if (sdb_prepare(c->db,
                    "SELECT tid, b, n, busy FROM capi WHERE sess=?1 AND"
                    " lvl=?2 AND b >= ?3 AND b < ?4",
                    &r->st))
        return GPUFL_EINTERNAL;
    qbind_i64(r->st, 1, c->sess);
    qbind_i64(r->st, 2, lv);
    return GPUFL_OK;
}

int sq_capi_rd_each(sq_capi_rd *r, int64_t b_lo, int64_t b_hi, sq_capi_fn fn,
                    void *arg)
{
    int rc;

    if (b_hi <= b_lo)
        return GPUFL_OK;
    sdb_reset(r->st);
    qbind_i64(r->st, 3, b_lo);
    qbind_i64(r->st, 4, b_hi);
    while ((rc = sdb_step(r->st)) == SDB_ROW)
        if ((rc = fn(arg, (uint32_t)qcol_i64(r->st, 0),
                     (uint64_t)qcol_i64(r->st, 1), (uint64_t)qcol_i64(r->st, 2),
                     (uint64_t)qcol_i64(r->st, 3))) != 0)
            return rc;
    return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

void sq_capi_rd_close(sq_capi_rd *r)
{
    sdb_finalize(r->st);
    r->st = NULL;
}
