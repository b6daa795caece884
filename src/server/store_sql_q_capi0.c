/*
 * store_sql_q_capi0.c - level 0 of the API calls' summary (table capi,
 * 2^RL_TL_SHIFT0 ns buckets per CPU thread, store_sql_capi.c) computed
 * from the calls themselves, for sessions whose kernels are in blocks
 * (docs/server.md "Kernel blocks", calls).
 *
 * With --kernel-store=blocks on PostgreSQL (SQLite stores it: capi0_query
 * in store_sql_int.h says why) ingest does not write capi level 0, as it
 * does not write the timeline's (store_sql_q_tl0.c): it was ~80% of the
 * capi rows, about one B-tree upsert per eighteen calls and ~8 bytes per
 * kernel at rest on PostgreSQL.  A /calls summary that would read level 0
 * (columns 2^21 to 2^23 ns wide) computes those buckets here instead,
 * exactly as sq_capi_acc would have stored them: the same calls (those
 * the rows path lists, sq_calls_each: hot rows, blocks, ops; the blocks
 * decoded in the columns of a call's times only), counted in
 * the bucket of their start, their time spread over the buckets they
 * cover - but a long call's (capi_long, spread by the caller).
 *
 * The work is bounded as the timeline's level 0 is: a range whose rows
 * and blocks hold more than sq_tl0_max() kernels and ops is not read
 * (GPUFL_EFULL: the caller answers from level 1 and says so).
 */
#include "store_sql_int.h"
#include "store_sql_kblocks_read.h"

#include <gpufl/gpufl.h>

#include <stdlib.h>
#include <string.h>

#include "store_sql_q.h"

/* Buckets (b, tid) one computation holds: at most the window's buckets
 * times its threads. */
#define SQ_CAPI0_BUCKETS_MAX (1u << 21)

typedef struct capi0_acc {
    uint64_t n, busy;
} capi0_acc;

typedef struct capi0_ctx {
    rl_map m; /* (b, tid) -> capi0_acc */
    uint64_t b_lo, b_hi;
} capi0_ctx;

/* One call into the buckets b_lo..b_hi it touches, as sq_capi_acc's
 * level 0. */
static int acc(void *arg, const sq_call *c)
{
    const unsigned sh = RL_TL_SHIFT0;
    capi0_ctx *a = arg;
    uint64_t ts = (uint64_t)c->ts, dur = (uint64_t)c->dur, end = ts + dur;
    uint64_t b0 = ts >> sh, b1 = dur ? (end - 1) >> sh : b0;
    int lng = dur > RL_TL_LONG_NS;

    if (lng)
        b1 = b0; /* its busy time: capi_long */
    for (uint64_t b = b0 > a->b_lo ? b0 : a->b_lo; b <= b1 && b <= a->b_hi;
         b++) {
        uint64_t k[4] = { b, c->tid, 0, 0 };
        uint64_t lo = b << sh, hi = (b + 1) << sh;
        int fresh;
        capi0_acc *v = rl_map_get(&a->m, k, &fresh);
        if (!v)
            return GPUFL_EFULL;
        if (b == b0)
            v->n++;
        if (!lng)
            v->busy = rl_sat_add(v->busy,
                                 (end < hi ? end : hi) - (ts > lo ? ts : lo));
    }
    return GPUFL_OK;
}

/* (b, tid): capi's key order, so that the threads an answer lists past
 * its cap are those the stored rows would give */
static int by_b_tid(const void *x, const void *y)
{
    const sq_capi0 *a = x, *b = y;
    if (a->b != b->b)
        return a->b < b->b ? -1 : 1;
    return a->tid < b->tid ? -1 : a->tid > b->tid;
}

int sq_capi0_compute(qctx *c, uint64_t b_lo, uint64_t b_hi, sq_capi0 **out,
                     size_t *n)
{
    const unsigned sh = RL_TL_SHIFT0;
    uint64_t t_lo = b_lo << sh, t_hi = (b_hi + 1) << sh, held = 0;
    const uint64_t *k;
    capi0_ctx a;
    sq_capi0 *o;
    size_t j = 0;
    int rc;

    *out = NULL;
    *n = 0;
    if ((rc = sq_calls_held(c, t_lo, t_hi, &held)) != 0)
        return rc;
    if (held > sq_tl0_max())
        return GPUFL_EFULL;
    memset(&a, 0, sizeof(a));
    a.b_lo = b_lo;
    a.b_hi = b_hi;
    rl_map_init(&a.m, sizeof(capi0_acc), SQ_CAPI0_BUCKETS_MAX);
    if ((rc = sq_calls_times(c, t_lo, t_hi, acc, &a)) != 0)
        goto out;
    if (!(o = malloc((a.m.n ? a.m.n : 1) * sizeof(*o)))) {
        rc = GPUFL_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < a.m.cap; i++) {
        const capi0_acc *v = rl_map_at(&a.m, i, &k);
        if (!v)
            continue;
        o[j].b = k[0];
        o[j].tid = (uint32_t)k[1];
        o[j].n = v->n;
        o[j].busy = v->busy;
        j++;
    }
    if (j > 1)
        qsort(o, j, sizeof(*o), by_b_tid);
    *out = o;
    *n = j;
out:
    rl_map_release(&a.m);
    return rc;
}

int sq_capi0_computed(qctx *c, int *yes)
{
    int rc;

    *yes = 0;
    if (!c->s->capi0_query)
        return GPUFL_OK;
    if ((rc = sq_kb_any(c->db, c->sess, yes)) != 0 || *yes ||
        (*yes = c->s->kstore_blocks) != 0)
        return rc;
    if ((rc = q_prepare(c, "SELECT 1 FROM capi WHERE sess=?1 AND lvl=0"
                           " LIMIT 1")) != 0)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    rc = sdb_step(c->st);
    if (rc != SDB_ROW && rc != SDB_DONE)
        return sq_err(rc);
    *yes = rc == SDB_DONE;
    return GPUFL_OK;
}
