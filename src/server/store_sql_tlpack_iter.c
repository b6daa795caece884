/*
 * store_sql_tlpack_iter.c - packed buckets read back (store_sql_tlpack.h,
 * sq_tlp_iter): a window's packs of tlpack or capipack, one decoded at a
 * time, each bucket inside the window in (lane, b) order, for a reader
 * merging them with the rows still beside them (the timeline,
 * store_sql_q_timeline.c; the API calls, store_sql_q_capi.c).  One
 * iterator so that the window's bounds (closed here, whatever the
 * caller's are) and a bad pack's error are decided in one place.
 */
#include "store_sql_int.h"
#include "store_sql_tlpack.h"

#include <gpufl/gpufl.h>

int sq_tlp_iter_start(sq_tlp_iter *P, sdb_stmt *st, int64_t lo, int64_t hi,
                      int *have)
{
    P->st = st;
    P->lane = 0;
    P->lo = lo;
    P->hi = hi;
    P->n = P->i = 0;
    /* the packs of ranges holding a bucket of [lo, hi]: the first's b0 is
     * lo's range, below lo */
    qbind_i64(st, 3, lo & ~(int64_t)(SQ_TLP_N - 1));
    qbind_i64(st, 4, hi);
    return sq_tlp_iter_next(P, have);
}

int sq_tlp_iter_next(sq_tlp_iter *P, int *have)
{
    *have = 0;
    if (P->i < P->n)
        P->i++;
    while (P->st) {
        int rc;
        const void *d;
        size_t len;
        for (; P->i < P->n; P->i++)
            if (P->v[P->i].b >= P->lo && P->v[P->i].b <= P->hi) {
                *have = 1;
                return GPUFL_OK;
            }
        rc = sdb_step(P->st);
        if (rc != SDB_ROW) {
            sdb_finalize(P->st);
            P->st = NULL;
            return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
        }
        P->lane = qcol_i64(P->st, 0);
        d = qcol_blob(P->st, 2, &len);
        P->i = 0;
        if (sq_tlp_decode(d, len, qcol_i64(P->st, 1), P->v, &P->n) != 0) {
            /* the caller answers an error: nothing of this pack read */
            P->n = 0;
            return GPUFL_EINTERNAL;
        }
    }
    return GPUFL_OK;
}

int sq_tlp_iter_cmp(const sq_tlp_iter *P, int64_t lane, int64_t b)
{
    const sq_tlb *v = &P->v[P->i];
    if (P->lane != lane)
        return P->lane < lane ? -1 : 1;
    return v->b < b ? -1 : v->b > b;
}

void sq_tlp_iter_close(sq_tlp_iter *P)
{
    sdb_finalize(P->st);
    P->st = NULL;
}
