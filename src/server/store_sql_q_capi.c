/*
 * store_sql_q_capi.c - the API calls' summary as stored (table capi,
 * store_sql_capi.c) read back for /calls (store_sql_q_calls.c): a level's
 * buckets of a window.  On PostgreSQL the ranges a session has moved past
 * are packs (capipack, store_sql_capipack.c) and a late call's upsert may
 * leave a row beside its range's pack: rows and packs are read in
 * (thread, bucket) order and merged, a bucket in both added, so the
 * answer is the one the rows alone gave before packing.  SQLite has no
 * packs: its rows as stored.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include "store_sql_capipack.h"
#include "store_sql_q.h"

/* The window's packs, one decoded at a time, in (tid, b) order. */
typedef struct capi_packs {
    sdb_stmt *st; /* NULL: none (left) */
    int64_t tid, lo, hi;
    sq_tlb v[SQ_TLP_N];
    size_t n, i;
} capi_packs;

/* The next packed bucket in [lo, hi) at P->v[P->i], *have 1; *have 0 at
 * the end.  0 or a gpufl_err. */
static int packs_next(capi_packs *P, int *have)
{
    *have = 0;
    if (P->i < P->n)
        P->i++;
    while (P->st) {
        int rc;
        const void *d;
        size_t len;
        for (; P->i < P->n; P->i++)
            if (P->v[P->i].b >= P->lo && P->v[P->i].b < P->hi) {
                *have = 1;
                return GPUFL_OK;
            }
        rc = sdb_step(P->st);
        if (rc != SDB_ROW) {
            sdb_finalize(P->st);
            P->st = NULL;
            return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
        }
        P->tid = qcol_i64(P->st, 0);
        d = qcol_blob(P->st, 2, &len);
        P->i = 0;
        if (sq_tlp_decode(d, len, qcol_i64(P->st, 1), P->v, &P->n) != 0)
            return GPUFL_EINTERNAL;
    }
    return GPUFL_OK;
}

/* PostgreSQL, a packed level: the window's packs opened into P, its
 * first bucket read (*have); else nothing. */
static int packs_open(qctx *c, int lv, int64_t lo, int64_t hi, capi_packs *P,
                      int *have)
{
    P->st = NULL;
    P->n = P->i = 0;
    *have = 0;
    if (lv < SQ_CAPP_LVL_MIN || lv > SQ_CAPP_LVL_MAX ||
        sdb_dialect(c->db) != SDB_POSTGRES)
        return GPUFL_OK;
    P->lo = lo;
    P->hi = hi;
    if (sdb_prepare(c->db,
                    "SELECT tid, b0, data FROM capipack WHERE sess=?1 AND"
                    " lvl=?2 AND b0 >= ?3 AND b0 < ?4 ORDER BY tid, b0",
                    &P->st))
        return GPUFL_EINTERNAL;
    qbind_i64(P->st, 1, c->sess);
    qbind_i64(P->st, 2, lv);
    qbind_i64(P->st, 3, lo & ~(int64_t)(SQ_TLP_N - 1));
    qbind_i64(P->st, 4, hi);
    return packs_next(P, have);
}

int sq_capi_each(qctx *c, int lv, int64_t b_lo, int64_t b_hi, sq_capi_fn fn,
                 void *arg)
{
    /* ~5 kB: one per query, on the query thread's stack */
    capi_packs P;
    int rc, have = 0, pg = sdb_dialect(c->db) == SDB_POSTGRES;

    P.st = NULL;
    /* PostgreSQL's in (tid, b) order to merge with the packs (a sort of
     * the window's rows: a few thousand); SQLite's as its key holds them */
    rc = q_prepare(c, pg ? "SELECT tid, b, n, busy FROM capi WHERE sess=?1"
                           " AND lvl=?2 AND b >= ?3 AND b < ?4"
                           " ORDER BY tid, b"
                         : "SELECT tid, b, n, busy FROM capi WHERE sess=?1"
                           " AND lvl=?2 AND b >= ?3 AND b < ?4");
    if (rc || (rc = packs_open(c, lv, b_lo, b_hi, &P, &have)) != 0)
        goto out;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, lv);
    qbind_i64(c->st, 3, b_lo);
    qbind_i64(c->st, 4, b_hi);
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        sq_tlb r = { qcol_i64(c->st, 1), qcol_i64(c->st, 2), qcol_i64(c->st, 3),
                     0, 0 };
        int64_t tid = qcol_i64(c->st, 0);
        /* the packed buckets before this row's */
        while (have && (P.tid < tid || (P.tid == tid && P.v[P.i].b < r.b))) {
            const sq_tlb *v = &P.v[P.i];
            if ((rc = fn(arg, (uint32_t)P.tid, (uint64_t)v->b, (uint64_t)v->n,
                         (uint64_t)v->busy)) != 0 ||
                (rc = packs_next(&P, &have)) != 0)
                goto out;
        }
        if (have && P.tid == tid && P.v[P.i].b == r.b) {
            sq_tlb_add(&r, &P.v[P.i]);
            if ((rc = packs_next(&P, &have)) != 0)
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
    while (have) {
        const sq_tlb *v = &P.v[P.i];
        if ((rc = fn(arg, (uint32_t)P.tid, (uint64_t)v->b, (uint64_t)v->n,
                     (uint64_t)v->busy)) != 0 ||
            (rc = packs_next(&P, &have)) != 0)
            goto out;
    }
out:
    sdb_finalize(P.st);
    return rc;
}
