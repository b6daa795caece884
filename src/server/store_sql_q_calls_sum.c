/*
 * store_sql_q_calls_sum.c - the summary of the CUDA API calls answer
 * (docs/api.md "calls") read from the rollup kept at ingest (table capi,
 * store_sql_capi.c) when a window holds more calls than the list
 * (store_sql_q_calls.c) holds.
 *
 * The rollup answers when its buckets are at most an eighth of a column:
 * the buckets wholly inside the window, the calls of the two partial
 * buckets at its edges from their rows, the long calls' busy time from
 * capi_long - the same counts and ns as the rows, for a few thousand
 * bucket reads instead of every call of the window.  With kernel blocks
 * level 0 is computed from the calls (store_sql_q_capi0.c); on PostgreSQL
 * the levels above are rows and packs (store_sql_q_capi.c).
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <stdlib.h>

#include "store_sql_q.h"

/* Buckets per column at least (their columns' placement within 1/8). */
#define SQ_CAPI_PER_COL 8
/* Long calls (capi_long) one answer spreads at most: past it the answer
 * is read from the rows. */
#define SQ_CAPI_LONG_MAX 65536

/* The rollup level for columns bw ns wide: the coarsest whose buckets are
 * at most 1/SQ_CAPI_PER_COL of a column; -1 when none is. */
static int capi_level(uint64_t bw)
{
    for (int lv = RL_TL_LEVELS - 1; lv >= 0; lv--)
        if ((1ull << rl_tl_shift(lv)) <= bw / SQ_CAPI_PER_COL)
            return lv;
    return -1;
}

/* The span [t0, t0 + dur) clipped to [a, b): its ns into the thread's
 * columns; counted (n, at its column) when started is set. */
static int capi_span(sq_calls_ctx *x, uint32_t tid, uint64_t t0, uint64_t dur,
                     uint64_t a, uint64_t b, int started)
{
    uint64_t lo = t0 > a ? t0 : a, end = t0 + dur, hi = end < b ? end : b;
    uint32_t c0, c1;
    sq_call_thr *t;
    int rc = sq_calls_thr_for(x, tid, &t);

    if (rc || !t)
        return rc;
    if (started && sq_cols_of(x->from, x->to, x->bw, x->width, t0, 0, &c0, &c1))
        t->n[c0]++;
    if (hi <= lo ||
        !sq_cols_of(x->from, x->to, x->bw, x->width, lo, hi - lo, &c0, &c1))
        return GPUFL_OK;
    for (uint32_t i = c0; i <= c1; i++)
        t->busy[i] = rl_sat_add(
            t->busy[i], sq_cols_overlap(x->from, x->to, x->bw, i, lo, hi - lo));
    return GPUFL_OK;
}

/* A call of an edge [a, b) read from the rows: its ns in the edge, and
 * counted when mine (it began on this side of the rollup's buckets). */
static int capi_edge(sq_calls_ctx *x, const sq_call *c, uint64_t a, uint64_t b,
                     int mine)
{
    uint64_t ts = (uint64_t)c->ts;

    if (mine)
        x->count++;
    return capi_span(x, c->tid, ts, (uint64_t)c->dur, a, b,
                     mine && ts >= x->from);
}

static int capi_left(void *arg, const sq_call *c)
{
    sq_calls_ctx *x = arg;
    /* begun before the buckets: before from too when it reaches in */
    return capi_edge(x, c, x->from, x->in0, (uint64_t)c->ts < x->in0);
}

static int capi_right(void *arg, const sq_call *c)
{
    sq_calls_ctx *x = arg;
    /* calls begun before in1 were counted by the buckets or the left
     * edge; only their ns in [in1, to) are this edge's */
    return capi_edge(x, c, x->in1, x->to, (uint64_t)c->ts >= x->in1);
}

/* A stored bucket [t0, t0 + w) inside the window: its calls to the column
 * of its start, its ns in proportion to each column's share of it (the
 * remainder to the first, so sums stay exact). */
static int capi_bucket(sq_calls_ctx *x, uint32_t tid, uint64_t t0, uint64_t w,
                       uint64_t n, uint64_t busy)
{
    uint32_t c0, c1;
    uint64_t rest = busy;
    sq_call_thr *t;
    int rc;

    x->count += n;
    if ((rc = sq_calls_thr_for(x, tid, &t)) != 0 || !t)
        return rc;
    if (!sq_cols_of(x->from, x->to, x->bw, x->width, t0, w, &c0, &c1))
        return GPUFL_OK;
    for (uint32_t c = c1; c > c0; c--) {
        uint64_t ov = sq_cols_overlap(x->from, x->to, x->bw, c, t0, w);
        uint64_t share = (uint64_t)((double)busy * ((double)ov / (double)w));
        /* a column the bucket's busy time reaches is listed, however
         * small its share */
        if (busy && ov && !share)
            share = 1;
        if (share > rest)
            share = rest;
        rest -= share;
        t->busy[c] = rl_sat_add(t->busy[c], share);
    }
    t->n[c0] += n;
    t->busy[c0] = rl_sat_add(t->busy[c0], rest);
    return GPUFL_OK;
}

/* sq_capi_fn: a stored bucket of level x->lv_sh's buckets. */
static int capi_stored(void *arg, uint32_t tid, uint64_t b, uint64_t n,
                       uint64_t busy)
{
    sq_calls_ctx *x = arg;
    x->rows++;
    return capi_bucket(x, tid, b << x->lv_sh, 1ull << x->lv_sh, n, busy);
}

/* sq_capi_fn: a bucket of the level used read for a cut bucket above:
 * its sums taken off that thread's (cut_flush), then as any. */
static int capi_sub(void *arg, uint32_t tid, uint64_t b, uint64_t n,
                    uint64_t busy)
{
    sq_calls_ctx *x = arg;

    for (int i = 0; i < x->ncutb; i++)
        if (x->cutb[i].tid == tid) {
            sq_capi_cut *k = &x->cutb[i];
            k->n -= n < k->n ? n : k->n;
            k->busy -= busy < k->busy ? busy : k->busy;
            break;
        }
    return capi_stored(arg, tid, b, n, busy);
}

/* The cut bucket gathered (cut_b of the level above): the column boundary
 * p cuts it in two; the side with fewer buckets of the level used is read
 * (the bucket p falls in, straddling, with it), and what is left of each
 * thread's row - the other side's sums, lying in one column - goes to that
 * column as one bucket: the same sums per column as reading all 16.  With
 * more threads than cutb holds, all 16 are read. */
static int cut_flush(sq_calls_ctx *x)
{
    unsigned sh = x->lv_sh;
    uint64_t w0 = 1ull << sh, w1 = 1ull << x->up_sh, s0 = x->cut_b << x->up_sh;
    uint64_t p = x->from + ((s0 - x->from) / x->bw + 1) * x->bw;
    uint64_t dn = (p >> sh) << sh, up = ((p + w0 - 1) >> sh) << sh;
    uint64_t r0 = s0, r1 = up, m0 = up, m1 = s0 + w1;
    int rc = GPUFL_OK;

    x->cut_on = 0;
    if (x->cut_over) {
        x->cut_over = x->ncutb = 0;
        return sq_capi_rd_each(x->rd, (int64_t)(s0 >> sh),
                               (int64_t)((s0 + w1) >> sh), capi_stored, x);
    }
    if (s0 + w1 - dn < up - s0) {
        r0 = dn;
        r1 = s0 + w1;
        m0 = s0;
        m1 = dn;
    }
    rc = sq_capi_rd_each(x->rd, (int64_t)(r0 >> sh), (int64_t)(r1 >> sh),
                         capi_sub, x);
    for (int i = 0; !rc && i < x->ncutb; i++)
        if (x->cutb[i].n || x->cutb[i].busy)
            rc = capi_bucket(x, x->cutb[i].tid, m0, m1 - m0, x->cutb[i].n,
                             x->cutb[i].busy);
    x->ncutb = 0;
    return rc;
}

/* sq_capi_fn: a bucket of the level above (x->up_sh), taken when it lies
 * in one column: there it adds to that column exactly what its buckets of
 * the level below would (their calls started in it, their ns all in it;
 * a bucket of a level is the sum of the level below's in it), so the
 * answer is the same; one a column boundary cuts is gathered (its
 * threads' rows come one after the other) for cut_flush. */
static int capi_whole(void *arg, uint32_t tid, uint64_t b, uint64_t n,
                      uint64_t busy)
{
    sq_calls_ctx *x = arg;
    uint64_t t0 = b << x->up_sh, w = 1ull << x->up_sh;
    uint32_t c0, c1;
    int rc;

    x->rows++;
    if (!sq_cols_of(x->from, x->to, x->bw, x->width, t0, w, &c0, &c1) ||
        c0 == c1)
        return capi_bucket(x, tid, t0, w, n, busy);
    if (x->cut_on && b != x->cut_b && (rc = cut_flush(x)) != 0)
        return rc;
    x->cut_on = 1;
    x->cut_b = b;
    if (x->ncutb == SQ_CALL_THREADS_MAX)
        x->cut_over = 1;
    else
        x->cutb[x->ncutb++] = (sq_capi_cut){ tid, n, busy };
    return GPUFL_OK;
}

/* Level lv+1's buckets (16 times lv's; level 1 4 times level 0's) used where
 * a column holds at least this many: lv is the coarsest level of at most
 * an eighth of a column, so a column holds 8 to 128 of its buckets - at
 * the top of that range most of them inside buckets of lv+1 that lie in
 * one column (a 100M-kernel session's whole range at 1000 px: 83 755
 * level-2 rows; docs/server.md "The call summary's rows"). */
#define SQ_CAPI_UP_PER_COL 2

/* SQLite: the buckets of [in0, in1) at level lv read as lv+1's buckets
 * lying in one column, lv's buckets only for the rest - one side of each
 * lv+1 bucket a column boundary cuts (cut_flush), and the ends [in0, a0),
 * [a1, in1) not covered by whole lv+1 buckets: at most 7 + 1 + 9 rows per
 * column and thread instead of up to 128.  The same sums per column as
 * lv's buckets alone (capi_whole, cut_flush).  *done 0 when not worth it
 * (columns narrower than SQ_CAPI_UP_PER_COL buckets of lv+1, no whole one
 * in the window, PostgreSQL: its packs would cost a round trip per
 * range; a packed level - SQLite's level 0 - is read whole: a pack holds
 * 64 buckets, and lv's reader reads rows only). */
static int capi_two(qctx *c, sq_calls_ctx *x, int lv, int *done)
{
    unsigned sh = rl_tl_shift(lv), up;
    uint64_t w1, a0, a1;
    sq_capi_rd rd;
    int rc;

    *done = 0;
    if (lv + 1 >= RL_TL_LEVELS || sdb_dialect(c->db) != SDB_SQLITE ||
        sq_capi_packed(c, lv))
        return GPUFL_OK;
    up = rl_tl_shift(lv + 1);
    w1 = 1ull << up;
    if (x->bw / w1 < SQ_CAPI_UP_PER_COL)
        return GPUFL_OK;
    a0 = ((x->in0 + w1 - 1) >> up) << up;
    a1 = (x->in1 >> up) << up;
    if (a1 <= a0)
        return GPUFL_OK;
    *done = 1;
    x->up_sh = up;
    x->lv_sh = sh;
    x->cut_on = x->cut_over = x->ncutb = 0;
    /* lv's reader steps while the lv+1 scan is open (cut_flush): SQLite
     * runs both on the one connection */
    if ((rc = sq_capi_rd_open(c, lv, &rd)) != 0)
        goto out;
    x->rd = &rd;
    rc = sq_capi_each(c, lv + 1, (int64_t)(a0 >> up), (int64_t)(a1 >> up),
                      capi_whole, x);
    if (!rc && x->cut_on)
        rc = cut_flush(x);
    /* the ends not covered by whole lv+1 buckets */
    if (!rc)
        rc = sq_capi_rd_each(&rd, (int64_t)(x->in0 >> sh), (int64_t)(a0 >> sh),
                             capi_stored, x);
    if (!rc)
        rc = sq_capi_rd_each(&rd, (int64_t)(a1 >> sh), (int64_t)(x->in1 >> sh),
                             capi_stored, x);
out:
    x->rd = NULL;
    sq_capi_rd_close(&rd);
    return rc;
}

/* Whether the session's calls all went into the rollup (sessions made
 * before migration 20 did not). */
static int capi_kept(qctx *c, int *kept)
{
    int rc = q_prepare(c, "SELECT sess FROM capi_from");
    if (rc)
        return rc;
    rc = sdb_step(c->st);
    if (rc != SDB_ROW && rc != SDB_DONE)
        return sq_err(rc);
    *kept = rc == SDB_ROW && c->sess >= qcol_i64(c->st, 0);
    return GPUFL_OK;
}

/* The level-0 buckets of [in0, in1) computed from the calls into x;
 * GPUFL_EFULL when the range holds too many to read. */
static int capi0_buckets(qctx *c, sq_calls_ctx *x)
{
    const unsigned sh = RL_TL_SHIFT0;
    sq_capi0 *v = NULL;
    size_t n = 0;
    int rc = sq_capi0_compute(c, x->in0 >> sh, (x->in1 >> sh) - 1, &v, &n);

    for (size_t i = 0; !rc && i < n; i++)
        rc = capi_bucket(x, v[i].tid, v[i].b << sh, 1ull << sh, v[i].n,
                         v[i].busy);
    free(v);
    return rc;
}

/* The long calls (capi_long) overlapping the buckets [in0, in1): sql
 * selects from CAPI_LONG_IN, prepared into c->st with its parameters
 * bound. */
#define CAPI_LONG_IN                                                           \
    " FROM capi_long WHERE sess=?1 AND ts < ?2 AND ts + dur > ?3"
static int capi_long_q(qctx *c, const sq_calls_ctx *x, const char *sql)
{
    int rc = q_prepare(c, sql);

    if (rc)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, (int64_t)x->in1);
    qbind_i64(c->st, 3, (int64_t)x->in0);
    return GPUFL_OK;
}

/* The window's summary from the rollup at level lv into x (count
 * included); *used 0 when it cannot answer (no whole bucket in the
 * window, too many long calls, a session older than the rollup).
 * GPUFL_EFULL when level 0 is computed (sq_capi0_computed) and the window
 * holds more calls than that may read: level 1 answers instead. */
static int capi_summary(qctx *c, sq_calls_ctx *x, int lv, int *used)
{
    unsigned sh = rl_tl_shift(lv);
    uint64_t w = 1ull << sh, nlong = 0;
    int kept = 0, computed = 0, rc;

    *used = 0;
    if ((rc = capi_kept(c, &kept)) != 0 || !kept ||
        (lv == 0 && (rc = sq_capi0_computed(c, &computed)) != 0))
        return rc;
    x->in0 = ((x->from + w - 1) >> sh) << sh;
    x->in1 = (x->to >> sh) << sh;
    if (x->in1 <= x->in0)
        return GPUFL_OK;
    if ((rc = capi_long_q(c, x, "SELECT count(*)" CAPI_LONG_IN)) != 0)
        return rc;
    if ((rc = sdb_step(c->st)) != SDB_ROW)
        return sq_err(rc);
    nlong = (uint64_t)qcol_i64(c->st, 0);
    if (nlong > SQ_CAPI_LONG_MAX)
        return GPUFL_OK;
    *used = 1;
    x->rollup_ns = w;
    if (lv == 0 && computed) {
        if ((rc = capi0_buckets(c, x)) != 0)
            return rc;
    } else {
        /* SQLite: lv+1's buckets where they fit a column, lv's between;
         * else lv's rows and packs (store_sql_q_capi.c) */
        int two = 0;
        x->lv_sh = sh;
        x->rows = 0;
        rc = capi_two(c, x, lv, &two);
        if (!rc && !two)
            rc = sq_capi_each(c, lv, (int64_t)(x->in0 >> sh),
                              (int64_t)(x->in1 >> sh), capi_stored, x);
        __atomic_fetch_add(&c->s->kq_capi_rows, x->rows, __ATOMIC_RELAXED);
        if (rc)
            return rc;
    }
    /* the long calls' ns inside the buckets (their count is in them) */
    if ((rc = capi_long_q(c, x, "SELECT tid, ts, dur" CAPI_LONG_IN)) != 0)
        return rc;
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        rc = capi_span(x, (uint32_t)qcol_i64(c->st, 0),
                       (uint64_t)qcol_i64(c->st, 1),
                       (uint64_t)qcol_i64(c->st, 2), x->in0, x->in1, 0);
        if (rc)
            return rc;
    }
    if (rc != SDB_DONE)
        return sq_err(rc);
    /* the edges from the rows: [from, in0) - at least the instant from,
     * where the calls begun earlier that reach into the window are - and
     * [in1, to) */
    rc = sq_calls_each(c, x->from, x->in0 > x->from ? x->in0 : x->from + 1,
                       capi_left, x);
    if (!rc && x->in1 < x->to)
        rc = sq_calls_each(c, x->in1, x->to, capi_right, x);
    return rc;
}

int sq_calls_summary(qctx *c, sq_calls_ctx *x, int *used)
{
    int lv = capi_level(x->bw);
    int rc = lv >= 0 ? capi_summary(c, x, lv, used) : GPUFL_OK;

    if (rc == GPUFL_EFULL && lv == 0) {
        /* level 0 computed past its cap: level 1's buckets (at most half a
         * column), rollup_ns says so */
        sq_calls_reset(x);
        rc = capi_summary(c, x, 1, used);
    }
    return rc;
}
