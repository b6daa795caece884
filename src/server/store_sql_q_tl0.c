/*
 * store_sql_q_tl0.c - level 0 of the timeline summary (2^RL_TL_SHIFT0 ns
 * buckets, rollup.h) computed from the kernels themselves, for sessions
 * whose kernels are in blocks (docs/server.md "Kernel blocks", timeline).
 *
 * With --kernel-store=blocks ingest does not write tl level 0: it was the
 * biggest per-kernel cost left (about one B-tree upsert per four kernels,
 * ~9 of SQLite's 21 bytes per kernel at rest).  A timeline answer that
 * would read level 0 (windows of 2^18 to 2^20 ns a pixel, and the
 * summary of a zoomed-in window too dense to read raw) computes those
 * buckets here instead, exactly as sq_acc_kernel would have stored them:
 * the same kernels (rows of the hot tail, the blocks of the time range
 * decoded in place, and the long kernels of klong that began before the
 * scan), the same spread of busy time, the count in a kernel's first
 * bucket, the same top kernel (the longest; of equally long ones the
 * highest name id, as the rollup keeps it since this file).
 *
 * The work is bounded: a range whose blocks and rows hold more than
 * SQ_TL0_KERNELS_MAX kernels is not decoded (GPUFL_EFULL: the caller
 * answers from level 1 and says so).
 */
#include "store_sql_int.h"
#include "store_sql_kblocks_read.h"

#include <gpufl/gpufl.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kblock.h"
#include "store_sql_q.h"

/* Buckets (lane, b) one computation holds: at most the window's buckets
 * times its lanes. */
#define SQ_TL0_BUCKETS_MAX (1u << 21)

/* GPUFL_SERVER_TL0_MAX (tests only): a lower SQ_TL0_KERNELS_MAX, so that a
 * test crosses it with a few thousand kernels. */
static uint64_t tl0_max_v;
static pthread_once_t tl0_max_once = PTHREAD_ONCE_INIT;

static void tl0_max_read(void)
{
    const char *v = getenv("GPUFL_SERVER_TL0_MAX");
    long long n = v ? strtoll(v, NULL, 10) : 0;
    tl0_max_v =
        n >= 1 && n <= SQ_TL0_KERNELS_MAX ? (uint64_t)n : SQ_TL0_KERNELS_MAX;
}

/* read once: getenv is not safe beside a setenv, and queries run on many
 * threads */
uint64_t sq_tl0_max(void)
{
    pthread_once(&tl0_max_once, tl0_max_read);
    return tl0_max_v;
}

typedef struct tl0_acc {
    uint64_t n, busy, top_dur;
    int64_t top_name;
} tl0_acc;

typedef struct tl0_ctx {
    rl_map m; /* (lane, b) -> tl0_acc */
    uint64_t b_lo, b_hi;
    kb_keep_fn also; /* offered every block event scanned too */
    void *also_arg;
    /* the bucket of the last rl_map_get (a block is one lane in time
     * order: ~20 kernels a bucket in a row skip the hash); any later
     * rl_map_get replaces it, so a rehash never leaves it dangling */
    int64_t last_lane;
    uint64_t last_b;
    tl0_acc *last;
} tl0_ctx;

/* Kernel (ts, dur) of lane into the buckets b_lo..b_hi it touches, as
 * sq_acc_kernel's level 0. */
static int acc(tl0_ctx *a, uint64_t ts, uint64_t dur, int64_t lane,
               int64_t name)
{
    const unsigned sh = RL_TL_SHIFT0;
    uint64_t end = ts + dur, b0 = ts >> sh, b1 = dur ? (end - 1) >> sh : b0;
    int spread = b1 - b0 < RL_TL_SPAN_MAX;

    if (!spread)
        b1 = b0;
    for (uint64_t b = b0 > a->b_lo ? b0 : a->b_lo; b <= b1 && b <= a->b_hi;
         b++) {
        uint64_t k[4] = { (uint64_t)lane, b, 0, 0 };
        uint64_t lo = b << sh, hi = (b + 1) << sh;
        int fresh;
        tl0_acc *t = a->last && a->last_lane == lane && a->last_b == b
                         ? a->last
                         : rl_map_get(&a->m, k, &fresh);
        if (!t)
            return GPUFL_EFULL;
        a->last = t;
        a->last_lane = lane;
        a->last_b = b;
        if (b == b0)
            t->n++;
        if (!spread)
            t->busy = rl_sat_add(t->busy, dur);
        else
            t->busy = rl_sat_add(t->busy,
                                 (end < hi ? end : hi) - (ts > lo ? ts : lo));
        /* as the rollup: of equally long ones the highest name id */
        if (dur > t->top_dur || (dur == t->top_dur && name > t->top_name)) {
            t->top_dur = dur;
            t->top_name = name;
        }
    }
    return GPUFL_OK;
}

static int acc_ev(const kblock_ev *e, void *arg)
{
    tl0_ctx *a = arg;
    int rc =
        acc(a, e->ts, e->dur,
            (int64_t)(e->dev << 32 | (e->stream & 4294967295u)), e->name_id);
    return rc || !a->also ? rc : a->also(e, a->also_arg);
}

/* Every kernel sql gives (ts, dur, lane, name id; parameters the session,
 * p2, p3) into a. */
static int acc_sql(tl0_ctx *a, qctx *c, const char *sql, int64_t p2, int64_t p3)
{
    int rc = q_prepare(c, sql);

    if (rc)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, p2);
    qbind_i64(c->st, 3, p3);
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        int e =
            acc(a, (uint64_t)qcol_i64(c->st, 0), (uint64_t)qcol_i64(c->st, 1),
                qcol_i64(c->st, 2), qcol_i64(c->st, 3));
        if (e)
            return e;
    }
    return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

int sq_kernels_held(qctx *c, int64_t lo, int64_t hi, uint64_t *n)
{
    int rc = q_prepare(c, "SELECT (SELECT coalesce(sum(n), 0) FROM kblocks"
                          " WHERE" KB_IN_RANGE ") +"
                          " (SELECT count(*) FROM kernels WHERE sess=?1 AND"
                          " ts >= ?2 AND ts < ?3)");
    if (rc)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, lo);
    qbind_i64(c->st, 3, hi);
    if ((rc = sdb_step(c->st)) != SDB_ROW)
        return sq_err(rc);
    *n = (uint64_t)qcol_i64(c->st, 0);
    return GPUFL_OK;
}

static int by_lane_b(const void *x, const void *y)
{
    const sq_tl0 *a = x, *b = y;
    if (a->lane != b->lane)
        return a->lane < b->lane ? -1 : 1;
    return a->b < b->b ? -1 : a->b > b->b;
}

/* Lanes place() orders directly; a window of more is sorted. */
#define TL0_PLACE_LANES 64

/* o[0..n) (buckets b_lo..b_hi) into (lane, b) order without comparing
 * them, when the lanes are few and their buckets fill much of the window
 * (the usual level-0 answer: a qsort of its ~30k buckets was an eighth of
 * its time): each bucket's place is its lane's rank times the window's
 * buckets plus its b.  0; 1 when that does not fit (the caller sorts);
 * GPUFL_ENOMEM. */
static int place(sq_tl0 *o, size_t n, uint64_t b_lo, uint64_t b_hi)
{
    int64_t lanes[TL0_PLACE_LANES];
    size_t nl = 0, nb = (size_t)(b_hi - b_lo) + 1, k = 0;
    uint32_t *at;
    sq_tl0 *tmp;

    for (size_t i = 0; i < n; i++) {
        size_t l = 0;
        if (o[i].b < b_lo || o[i].b > b_hi)
            return 1; /* not acc's: no place for it */
        while (l < nl && lanes[l] != o[i].lane)
            l++;
        if (l == nl) {
            if (nl == TL0_PLACE_LANES)
                return 1;
            lanes[nl++] = o[i].lane;
        }
    }
    if (nb > (4 * n + 4096) / nl)
        return 1; /* sparse: sorting is cheaper */
    for (size_t i = 1; i < nl; i++)
        for (size_t j = i; j && lanes[j - 1] > lanes[j]; j--) {
            int64_t x = lanes[j];
            lanes[j] = lanes[j - 1];
            lanes[j - 1] = x;
        }
    at = malloc(nl * nb * sizeof(*at));
    tmp = malloc(n * sizeof(*tmp));
    if (!at || !tmp) {
        free(at);
        free(tmp);
        return GPUFL_ENOMEM;
    }
    memset(at, 0xff, nl * nb * sizeof(*at));
    for (size_t i = 0; i < n; i++) {
        size_t l = 0;
        while (lanes[l] != o[i].lane)
            l++;
        at[l * nb + (size_t)(o[i].b - b_lo)] = (uint32_t)i;
    }
    for (size_t x = 0; x < nl * nb; x++)
        if (at[x] != UINT32_MAX)
            tmp[k++] = o[at[x]];
    memcpy(o, tmp, n * sizeof(*o));
    free(at);
    free(tmp);
    return 0;
}

/* The map's buckets, (lane, b) order, into *out. */
static int collect(tl0_ctx *a, sq_tl0 **out, size_t *n)
{
    const uint64_t *k;
    sq_tl0 *o = malloc((a->m.n ? a->m.n : 1) * sizeof(*o));
    size_t j = 0;
    int rc;

    if (!o)
        return GPUFL_ENOMEM;
    for (size_t i = 0; i < a->m.cap; i++) {
        const tl0_acc *t = rl_map_at(&a->m, i, &k);
        if (!t)
            continue;
        o[j].lane = (int64_t)k[0];
        o[j].b = k[1];
        o[j].n = t->n;
        o[j].busy = t->busy;
        o[j].top_name = t->top_name;
        o[j].top_dur = t->top_dur;
        j++;
    }
    if (j > 1 && (rc = place(o, j, a->b_lo, a->b_hi)) != 0) {
        if (rc != 1) {
            free(o);
            return rc;
        }
        qsort(o, j, sizeof(*o), by_lane_b);
    }
    *out = o;
    *n = j;
    return GPUFL_OK;
}

int sq_tl0_compute(qctx *c, uint64_t b_lo, uint64_t b_hi, kb_keep_fn also,
                   void *also_arg, uint64_t also_max, int *also_used,
                   sq_tl0 **out, size_t *n)
{
    const unsigned sh = RL_TL_SHIFT0;
    int64_t t_lo = (int64_t)(b_lo << sh), t_hi = (int64_t)((b_hi + 1) << sh);
    int64_t lo;
    uint64_t held = 0;
    tl0_ctx a;
    int rc;

    *out = NULL;
    *n = 0;
    *also_used = 0;
    memset(&a, 0, sizeof(a));
    a.b_lo = b_lo;
    a.b_hi = b_hi;
    if ((rc = sq_kernels_back(c, (uint64_t)t_lo, &lo)) != 0 ||
        (rc = sq_kernels_held(c, lo, t_hi, &held)) != 0)
        return rc;
    if (held > sq_tl0_max())
        return GPUFL_EFULL;
    if (held <= also_max) {
        a.also = also;
        a.also_arg = also_arg;
    }
    *also_used = a.also != NULL;
    rl_map_init(&a.m, sizeof(tl0_acc), SQ_TL0_BUCKETS_MAX);
    /* the long kernels that began before the scan and reach the range
     * (none when kext's longest is right: a safety net), the hot tail's
     * rows, then the blocks */
    if ((rc = acc_sql(&a, c,
                      "SELECT ts, dur, lane, coalesce(name_id, 0) FROM klong"
                      " WHERE sess=?1 AND ts < ?2 AND ts + dur > ?3",
                      lo, t_lo)) != 0 ||
        (rc = acc_sql(&a, c,
                      "SELECT ts, dur, (coalesce(dev, 0)<<32) |"
                      " (coalesce(stream, 0) & 4294967295),"
                      " coalesce(name_id, 0) FROM kernels WHERE sess=?1 AND"
                      " ts >= ?2 AND ts < ?3",
                      lo, t_hi)) != 0)
        goto out;
    /* only the columns acc and the raw read's raw_set read: a block's
     * other columns are skipped undecoded */
    if ((rc =
             sq_kb_scan_cols(c->s, c->db, c->sess, lo, t_hi,
                             KB_C_TS | KB_C_DUR | KB_C_NAME | KB_C_DEV |
                                 KB_C_STREAM | (a.also ? SQ_TL0_ALSO_COLS : 0u),
                             acc_ev, &a, NULL)) != 0)
        goto out;
    rc = collect(&a, out, n);
out:
    rl_map_release(&a.m);
    return rc;
}
