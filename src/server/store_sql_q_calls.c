/*
 * store_sql_q_calls.c - the CUDA API calls of a time range per CPU thread
 * (docs/api.md "calls"): kernel launches, copies' and memsets' calls, and
 * syncs, listed one by one when they are few, else summarised per thread
 * and pixel column - never a list cut short.
 *
 * No index holds API times: a call is found through the ts index of its
 * kernel or op.  Each session keeps the bounds of start - call exit (lo)
 * and start - call entry (hi) over its kernels, and over its ops, updated
 * by every batch (store_sql_ingest.c), so a call overlapping [from, to)
 * belongs to a row whose ts lies in [from + lo, to + hi]: one range scan,
 * as wide as the session's worst queue latency is long.
 *
 * A summary (more calls than the list holds) is read from the rollup kept
 * at ingest (table capi, store_sql_capi.c) when its buckets are at most an
 * eighth of a column: the buckets wholly inside the window, the calls of
 * the two partial buckets at its edges from their rows, the long calls'
 * busy time from capi_long - the same counts and ns as the rows, for a
 * few thousand bucket reads instead of every call of the window.  With
 * kernel blocks level 0 is computed from the calls (store_sql_q_capi0.c);
 * on PostgreSQL the levels above are rows and packs (store_sql_q_capi.c).
 */
#include "store_sql_int.h"
#include "store_sql_kblocks_read.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kblock.h"
#include "srv_json.h"
#include "store_sql_q.h"

/* Calls listed one by one: default and cap of limit=. */
#define SQ_CALLS_DEFAULT 10000
#define SQ_CALLS_MAX 50000
/* Threads summarised per answer (each a row of columns). */
#define SQ_CALL_THREADS_MAX 256

const char *const sq_call_types[4] = { "launch", "memcpy", "memset", "sync" };

/* A thread's row of a bucket of the level above cut by a column boundary
 * (capi_whole): its sums, less those read of the level used (capi_sub). */
typedef struct capi_cut {
    uint32_t tid;
    uint64_t n, busy;
} capi_cut;

/* Per thread: its columns (summary) - calls started, busy ns. */
typedef struct thr {
    uint32_t tid;
    uint64_t *n, *busy;
} thr;

typedef struct calls_ctx {
    uint64_t from, to, bw;
    uint32_t width, limit;
    uint64_t count; /* calls in the range, all */
    sq_call *list;  /* the first limit + 1 */
    size_t nlist;
    thr thr[SQ_CALL_THREADS_MAX];
    int nthr;
    uint64_t threads_cut; /* calls of threads past SQ_CALL_THREADS_MAX */
    uint32_t cut_tids[SQ_CALL_THREADS_MAX];
    int ncut;
    uint64_t in0, in1;  /* rollup answers: its buckets cover [in0, in1) */
    uint64_t rollup_ns; /* ... of this width (0: read from the rows) */
    unsigned lv_sh;     /* the stored level's shift (capi_stored) */
    unsigned up_sh;     /* the level above's (capi_whole) */
    uint64_t rows;      /* capi rows (and packed buckets) read */
    /* capi_two: the level used's reader, the cut bucket of the level above
     * being gathered (cut_on), its threads' rows (cut_over: more than
     * cutb holds) */
    struct sq_capi_rd *rd;
    uint64_t cut_b;
    int cut_on, cut_over, ncutb;
    capi_cut cutb[SQ_CALL_THREADS_MAX];
} calls_ctx;

static thr *thr_get(calls_ctx *x, uint32_t tid)
{
    for (int i = 0; i < x->nthr; i++)
        if (x->thr[i].tid == tid)
            return &x->thr[i];
    if (x->nthr == SQ_CALL_THREADS_MAX)
        return NULL;
    x->thr[x->nthr].tid = tid;
    x->thr[x->nthr].n = calloc(x->width, sizeof(uint64_t));
    x->thr[x->nthr].busy = calloc(x->width, sizeof(uint64_t));
    if (!x->thr[x->nthr].n || !x->thr[x->nthr].busy) {
        free(x->thr[x->nthr].n);
        free(x->thr[x->nthr].busy);
        return NULL;
    }
    return &x->thr[x->nthr++];
}

/* Threads left out of the summary, counted once each. */
static void thr_cut(calls_ctx *x, uint32_t tid)
{
    for (int i = 0; i < x->ncut; i++)
        if (x->cut_tids[i] == tid)
            return;
    if (x->ncut < SQ_CALL_THREADS_MAX)
        x->cut_tids[x->ncut++] = tid;
    x->threads_cut++;
}

/* The columns of thread tid into *t: NULL (and GPUFL_OK) for a thread
 * past SQ_CALL_THREADS_MAX, counted in threads_cut; GPUFL_ENOMEM when its
 * columns cannot be had. */
static int thr_for(calls_ctx *x, uint32_t tid, thr **t)
{
    *t = thr_get(x, tid);
    if (*t)
        return GPUFL_OK;
    if (x->nthr < SQ_CALL_THREADS_MAX)
        return GPUFL_ENOMEM;
    thr_cut(x, tid);
    return GPUFL_OK;
}

/* One call of the range: kept while the list has room, and added to its
 * thread's columns.  GPUFL_ENOMEM when a thread's columns cannot be had. */
static int call_add(void *arg, const sq_call *c)
{
    calls_ctx *x = arg;
    uint32_t c0, c1;
    thr *t;
    int rc;

    x->count++;
    if (x->nlist <= x->limit)
        x->list[x->nlist++] = *c;
    if ((rc = thr_for(x, c->tid, &t)) != 0 || !t)
        return rc;
    if (!sq_cols_of(x->from, x->to, x->bw, x->width, (uint64_t)c->ts,
                    (uint64_t)c->dur, &c0, &c1))
        return GPUFL_OK;
    if ((uint64_t)c->ts >= x->from)
        t->n[c0]++;
    for (uint32_t i = c0; i <= c1; i++)
        t->busy[i] = rl_sat_add(
            t->busy[i], sq_cols_overlap(x->from, x->to, x->bw, i,
                                        (uint64_t)c->ts, (uint64_t)c->dur));
    return GPUFL_OK;
}

static int64_t sat_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}

/* Kernels a launch scan reads through the ts index (a table lookup per
 * row) before the seq-range plan below is considered. */
#define SQ_CALLS_SEQ_SCAN 4096

/* The seq span of the kernels started in [a, b] and their number, from
 * the covering ts index (no table reads), into s[0], s[1], *n. */
static int launch_seqs(qctx *c, int64_t a, int64_t b, int64_t *s, int64_t *n)
{
    int rc = q_prepare(c, "SELECT count(*), coalesce(min(seq), 0),"
                          " coalesce(max(seq), -1) FROM kernels WHERE sess=?1"
                          " AND ts >= ?2 AND ts <= ?3");
    if (rc)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, a);
    qbind_i64(c->st, 3, b);
    if ((rc = sdb_step(c->st)) != SDB_ROW)
        return sq_err(rc);
    *n = qcol_i64(c->st, 0);
    s[0] = qcol_i64(c->st, 1);
    s[1] = qcol_i64(c->st, 2);
    return GPUFL_OK;
}

/* The launch calls of a session's blocks (as scan_launches' rows). */
typedef struct launch_scan {
    int64_t from, to;
    sq_call_fn fn;
    void *arg;
} launch_scan;

static int launch_ev(const kblock_ev *e, void *arg)
{
    const launch_scan *ls = arg;
    int64_t ts = (int64_t)e->ts, off = e->api_off, dur = (int64_t)e->api_dur;
    sq_call k;

    /* SQ_API_OK_K, then the call overlapping [from, to) */
    if (!(dur > 0 && off >= -ts && off <= INT64_MAX - ts - dur) ||
        !(ts + off < ls->to && ts + off + dur > ls->from))
        return GPUFL_OK;
    memset(&k, 0, sizeof(k));
    k.type = SQ_CALL_LAUNCH;
    k.seq = (int64_t)e->seq;
    k.gpu_ts = ts;
    k.gpu_dur = (int64_t)e->dur;
    k.ts = ts + off;
    k.dur = dur;
    k.tid = (uint32_t)e->tid;
    k.corr = (int64_t)e->corr;
    k.dev = (int64_t)e->dev;
    k.stream = (int64_t)e->stream;
    return ls->fn(ls->arg, &k);
}

/* The kernels' launch calls (bounds lo, hi: start - exit, start - entry).
 * A long range is read in primary-key order over the seq span of its
 * kernels (seq follows ts closely: each stream's lines come in order), a
 * sequential read about 3x faster than a table lookup per index entry
 * (1M calls: 0.45 s against 1.4 s on SQLite); the ts test still decides,
 * so a seq span wider than twice the kernels keeps the index plan. */
static int scan_launches(qctx *c, uint64_t from, uint64_t to, int64_t lo,
                         int64_t hi, unsigned cols, sq_call_fn fn, void *arg)
{
    int64_t a = sat_add((int64_t)from, lo), b = sat_add((int64_t)to, hi);
    int64_t seqs[2] = { 0, -1 }, n = 0;
    int rc, by_seq;

    if ((rc = launch_seqs(c, a, b, seqs, &n)) != 0)
        return rc;
    by_seq = n > SQ_CALLS_SEQ_SCAN && (seqs[1] - seqs[0]) / 2 < n;
    rc = q_prepare(
        c, by_seq
               ? "SELECT k.seq, k.ts, k.dur, k.api_off, k.api_dur,"
                 " coalesce(k.tid, 0), k.corr, k.dev, k.stream FROM"
                 " kernels k WHERE k.sess=?1 AND k.seq >= ?6 AND"
                 " k.seq <= ?7 AND +k.ts >= ?2 AND +k.ts <= ?3 AND " SQ_API_OK_K
                 " AND k.ts + k.api_off < ?4 AND"
                 " k.ts + k.api_off + k.api_dur > ?5"
               : "SELECT k.seq, k.ts, k.dur, k.api_off, k.api_dur,"
                 " coalesce(k.tid, 0), k.corr, k.dev, k.stream FROM"
                 " kernels k WHERE k.sess=?1 AND k.ts >= ?2 AND"
                 " k.ts <= ?3 AND " SQ_API_OK_K " AND k.ts + k.api_off < ?4 AND"
                 " k.ts + k.api_off + k.api_dur > ?5");
    if (rc)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, a);
    qbind_i64(c->st, 3, b);
    qbind_i64(c->st, 4, (int64_t)to);
    qbind_i64(c->st, 5, (int64_t)from);
    if (by_seq) {
        qbind_i64(c->st, 6, seqs[0]);
        qbind_i64(c->st, 7, seqs[1]);
    }
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        sq_call k;
        memset(&k, 0, sizeof(k));
        k.type = SQ_CALL_LAUNCH;
        k.seq = qcol_i64(c->st, 0);
        k.gpu_ts = qcol_i64(c->st, 1);
        k.gpu_dur = qcol_i64(c->st, 2);
        k.ts = k.gpu_ts + qcol_i64(c->st, 3);
        k.dur = qcol_i64(c->st, 4);
        k.tid = (uint32_t)qcol_i64(c->st, 5);
        k.corr = qcol_i64(c->st, 6);
        k.dev = qcol_i64(c->st, 7);
        k.stream = qcol_i64(c->st, 8);
        if ((rc = fn(arg, &k)) != 0)
            return rc;
    }
    if (rc != SDB_DONE)
        return sq_err(rc);
    /* and those in blocks (store_sql_kblocks_read.c), ts in [a, b] */
    {
        launch_scan ls = { (int64_t)from, (int64_t)to, fn, arg };
        return sq_kb_scan_cols(c->s, c->db, c->sess, a,
                               b < INT64_MAX ? b + 1 : INT64_MAX, cols,
                               launch_ev, &ls, NULL);
    }
}

/* What scan_ops passes on: syncs overlapping [from, to) by their own
 * times, copies and memsets by their API call's (SQ_API_OK's checks). */
typedef struct ops_scan {
    int64_t from, to;
    sq_call_fn fn;
    void *arg;
} ops_scan;

static int op_call(void *arg, const oblock_ev *e)
{
    const ops_scan *a = arg;
    int64_t ts = (int64_t)e->ts, adur = (int64_t)e->api_dur;
    sq_call o;

    if (e->type == EV_SYNC) {
        if (ts >= a->to || !(ts + (int64_t)e->dur > a->from || ts >= a->from))
            return GPUFL_OK;
    } else if (e->type == EV_MEMCPY || e->type == EV_MEMSET) {
        /* ts < 0 first: -ts and INT64_MAX - ts are then defined */
        if (ts < 0 || adur <= 0 || e->api_off < -ts ||
            e->api_off > INT64_MAX - ts - adur || ts + e->api_off >= a->to ||
            ts + e->api_off + adur <= a->from)
            return GPUFL_OK;
    } else {
        return GPUFL_OK;
    }
    memset(&o, 0, sizeof(o));
    o.seq = (int64_t)e->seq;
    o.tid = (uint32_t)e->tid;
    o.corr = (int64_t)e->corr;
    o.dev = (int64_t)e->dev;
    o.stream = (int64_t)e->stream;
    sq_kind_copy(o.kind, sizeof(o.kind), e->kind);
    if (e->type == EV_SYNC) {
        o.type = SQ_CALL_SYNC;
        o.ts = ts;
        o.dur = (int64_t)e->dur;
    } else {
        o.type = e->type == EV_MEMCPY ? SQ_CALL_MEMCPY : SQ_CALL_MEMSET;
        o.gpu_ts = ts;
        o.gpu_dur = (int64_t)e->dur;
        o.ts = ts + e->api_off;
        o.dur = adur;
        o.bytes = (int64_t)e->bytes;
    }
    return a->fn(a->arg, &o);
}

/* Syncs (their own times) and the API calls of copies and memsets, from
 * the rows and the op blocks whose ts is in [from + lo, to + hi]. */
static int scan_ops(qctx *c, uint64_t from, uint64_t to, int64_t lo, int64_t hi,
                    sq_call_fn fn, void *arg)
{
    ops_scan a = { (int64_t)from, (int64_t)to, fn, arg };

    return sq_ops_each(c, sat_add((int64_t)from, lo), sat_add((int64_t)to, hi),
                       1, op_call, &a);
}

/* The session's call bounds (api_lo, api_hi, op_lo, op_hi) into b, has
 * (0: NULL, no such calls). */
static int calls_bounds(qctx *c, int64_t *b, int *has)
{
    int rc = q_prepare(c, "SELECT api_lo, api_hi, op_lo, op_hi FROM"
                          " sessions WHERE id=?");

    if (rc)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    if ((rc = sdb_step(c->st)) != SDB_ROW)
        return sq_err(rc);
    for (int i = 0; i < 4; i++) {
        has[i] = !qcol_null(c->st, i);
        b[i] = has[i] ? qcol_i64(c->st, i) : 0;
    }
    return GPUFL_OK;
}

/* The calls, the blocks' launches decoded in the columns cols. */
static int calls_each(qctx *c, uint64_t from, uint64_t to, unsigned cols,
                      sq_call_fn fn, void *arg)
{
    int64_t b[4];
    int has[4], rc;

    if ((rc = calls_bounds(c, b, has)) != 0)
        return rc;
    if (has[0] && has[1])
        rc = scan_launches(c, from, to, b[0], b[1], cols, fn, arg);
    if (!rc && has[2] && has[3])
        rc = scan_ops(c, from, to, b[2], b[3], fn, arg);
    return rc;
}

int sq_calls_each(qctx *c, uint64_t from, uint64_t to, sq_call_fn fn, void *arg)
{
    return calls_each(c, from, to, KB_C_ALL, fn, arg);
}

int sq_calls_times(qctx *c, uint64_t from, uint64_t to, sq_call_fn fn,
                   void *arg)
{
    /* what launch_ev tests and sets ts, dur and tid from */
    return calls_each(
        c, from, to, KB_C_TS | KB_C_API_OFF | KB_C_API_DUR | KB_C_TID, fn, arg);
}

static int op_count(void *arg, const oblock_ev *e)
{
    (void)e;
    ++*(uint64_t *)arg;
    return GPUFL_OK;
}

int sq_calls_held(qctx *c, uint64_t from, uint64_t to, uint64_t *n)
{
    int64_t b[4], hi;
    uint64_t k = 0;
    int has[4], rc;

    *n = 0;
    if ((rc = calls_bounds(c, b, has)) != 0)
        return rc;
    /* the ts ranges scan_launches and scan_ops read, ends included */
    if (has[0] && has[1]) {
        hi = sat_add((int64_t)to, b[1]);
        if ((rc = sq_kernels_held(c, sat_add((int64_t)from, b[0]),
                                  hi < INT64_MAX ? hi + 1 : hi, &k)) != 0)
            return rc;
        *n += k;
    }
    if (!has[2] || !has[3])
        return GPUFL_OK;
    if ((rc = q_prepare(c, "SELECT count(*) FROM ops WHERE sess=?1 AND"
                           " ts >= ?2 AND ts <= ?3")) != 0)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, sat_add((int64_t)from, b[2]));
    qbind_i64(c->st, 3, sat_add((int64_t)to, b[3]));
    if ((rc = sdb_step(c->st)) != SDB_ROW)
        return sq_err(rc);
    *n += (uint64_t)qcol_i64(c->st, 0);
    /* and the op blocks' (decoded: a block's ops may straddle the range) */
    return sq_ops_each(c, sat_add((int64_t)from, b[2]),
                       sat_add((int64_t)to, b[3]), 0, op_count, n);
}

static int call_cmp(const void *a, const void *b)
{
    const sq_call *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int thr_cmp(const void *a, const void *b)
{
    const thr *x = a, *y = b;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void w_call(jw *w, const sq_call *c)
{
    jw_obj_begin(w);
    jw_kv_str(w, "type", sq_call_types[c->type]);
    srv_jw_kv_dec(w, "ts", c->ts);
    srv_jw_kv_dec(w, "dur", c->dur);
    srv_jw_kv_num(w, "seq", c->seq);
    srv_jw_kv_num(w, "corr", c->corr);
    srv_jw_kv_num(w, "dev", c->dev);
    srv_jw_kv_num(w, "stream", c->stream);
    if (c->type == SQ_CALL_MEMCPY || c->type == SQ_CALL_SYNC)
        jw_kv_str(w, "kind", c->kind);
    if (c->type == SQ_CALL_MEMCPY || c->type == SQ_CALL_MEMSET)
        srv_jw_kv_dec(w, "bytes", c->bytes);
    if (c->type != SQ_CALL_SYNC) {
        srv_jw_kv_dec(w, "gpu_ts", c->gpu_ts);
        srv_jw_kv_dec(w, "gpu_dur", c->gpu_dur);
    }
    jw_obj_end(w);
}

static void w_calls(jw *w, calls_ctx *x)
{
    size_t i = 0;

    if (x->nlist > 1) /* list is NULL when there are none */
        qsort(x->list, x->nlist, sizeof(sq_call), call_cmp);
    jw_key(w, "threads");
    jw_arr_begin(w);
    while (i < x->nlist) {
        uint32_t tid = x->list[i].tid;
        jw_obj_begin(w);
        srv_jw_kv_num(w, "tid", tid);
        jw_key(w, "calls");
        jw_arr_begin(w);
        for (; i < x->nlist && x->list[i].tid == tid; i++)
            w_call(w, &x->list[i]);
        jw_arr_end(w);
        jw_obj_end(w);
    }
    jw_arr_end(w);
}

static void w_summary(jw *w, calls_ctx *x)
{
    if (x->nthr > 1)
        qsort(x->thr, (size_t)x->nthr, sizeof(thr), thr_cmp);
    jw_kv_u64(w, "width", x->width);
    srv_jw_kv_udec(w, "bucket_ns", x->bw);
    jw_key(w, "threads");
    jw_arr_begin(w);
    for (int i = 0; i < x->nthr; i++) {
        jw_obj_begin(w);
        srv_jw_kv_num(w, "tid", x->thr[i].tid);
        /* [pixel, calls started, busy ns], the occupied columns */
        jw_key(w, "buckets");
        jw_arr_begin(w);
        for (uint32_t p = 0; p < x->width; p++) {
            /* an occupied column has a start or covered ns */
            if (!x->thr[i].n[p] && !x->thr[i].busy[p])
                continue;
            jw_arr_begin(w);
            jw_u64(w, p);
            srv_jw_unum(w, x->thr[i].n[p]);
            srv_jw_udec(w, x->thr[i].busy[p]);
            jw_arr_end(w);
        }
        jw_arr_end(w);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_kv_u64(w, "threads_cut", x->threads_cut);
    if (x->rollup_ns)
        srv_jw_kv_udec(w, "rollup_ns", x->rollup_ns);
}

/* ---- the summary from the rollup (capi) ---- */

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
static int capi_span(calls_ctx *x, uint32_t tid, uint64_t t0, uint64_t dur,
                     uint64_t a, uint64_t b, int started)
{
    uint64_t lo = t0 > a ? t0 : a, end = t0 + dur, hi = end < b ? end : b;
    uint32_t c0, c1;
    thr *t;
    int rc = thr_for(x, tid, &t);

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
static int capi_edge(calls_ctx *x, const sq_call *c, uint64_t a, uint64_t b,
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
    calls_ctx *x = arg;
    /* begun before the buckets: before from too when it reaches in */
    return capi_edge(x, c, x->from, x->in0, (uint64_t)c->ts < x->in0);
}

static int capi_right(void *arg, const sq_call *c)
{
    calls_ctx *x = arg;
    /* calls begun before in1 were counted by the buckets or the left
     * edge; only their ns in [in1, to) are this edge's */
    return capi_edge(x, c, x->in1, x->to, (uint64_t)c->ts >= x->in1);
}

/* A stored bucket [t0, t0 + w) inside the window: its calls to the column
 * of its start, its ns in proportion to each column's share of it (the
 * remainder to the first, so sums stay exact). */
static int capi_bucket(calls_ctx *x, uint32_t tid, uint64_t t0, uint64_t w,
                       uint64_t n, uint64_t busy)
{
    uint32_t c0, c1;
    uint64_t rest = busy;
    thr *t;
    int rc;

    x->count += n;
    if ((rc = thr_for(x, tid, &t)) != 0 || !t)
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
    calls_ctx *x = arg;
    x->rows++;
    return capi_bucket(x, tid, b << x->lv_sh, 1ull << x->lv_sh, n, busy);
}

/* sq_capi_fn: a bucket of the level used read for a cut bucket above:
 * its sums taken off that thread's (cut_flush), then as any. */
static int capi_sub(void *arg, uint32_t tid, uint64_t b, uint64_t n,
                    uint64_t busy)
{
    calls_ctx *x = arg;

    for (int i = 0; i < x->ncutb; i++)
        if (x->cutb[i].tid == tid) {
            capi_cut *k = &x->cutb[i];
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
static int cut_flush(calls_ctx *x)
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
    calls_ctx *x = arg;
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
        x->cutb[x->ncutb++] = (capi_cut){ tid, n, busy };
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
 * range). */
static int capi_two(qctx *c, calls_ctx *x, int lv, int *done)
{
    unsigned sh = rl_tl_shift(lv), up;
    uint64_t w1, a0, a1;
    sq_capi_rd rd;
    int rc;

    *done = 0;
    if (lv + 1 >= RL_TL_LEVELS || sdb_dialect(c->db) != SDB_SQLITE)
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

static void thr_reset(calls_ctx *x)
{
    for (int i = 0; i < x->nthr; i++) {
        free(x->thr[i].n);
        free(x->thr[i].busy);
    }
    x->nthr = x->ncut = 0;
    x->threads_cut = x->count = 0;
    x->nlist = 0;
    x->rollup_ns = 0;
}

/* The level-0 buckets of [in0, in1) computed from the calls into x;
 * GPUFL_EFULL when the range holds too many to read. */
static int capi0_buckets(qctx *c, calls_ctx *x)
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

/* The window's summary from the rollup at level lv into x (count
 * included); *used 0 when it cannot answer (no whole bucket in the
 * window, too many long calls, a session older than the rollup).
 * GPUFL_EFULL when level 0 is computed (sq_capi0_computed) and the window
 * holds more calls than that may read: level 1 answers instead. */
static int capi_summary(qctx *c, calls_ctx *x, int lv, int *used)
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
    rc = q_prepare(c, "SELECT count(*) FROM capi_long WHERE sess=?1 AND"
                      " ts < ?2 AND ts + dur > ?3");
    if (rc)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, (int64_t)x->in1);
    qbind_i64(c->st, 3, (int64_t)x->in0);
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
    rc = q_prepare(c, "SELECT tid, ts, dur FROM capi_long WHERE sess=?1 AND"
                      " ts < ?2 AND ts + dur > ?3");
    if (rc)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, (int64_t)x->in1);
    qbind_i64(c->st, 3, (int64_t)x->in0);
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

int srv_store_q_calls(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    calls_ctx *x = calloc(1, sizeof(*x));
    int rc, lv, used = 0;

    if (!x)
        return GPUFL_ENOMEM;
    x->width = q->width ? q->width : 1000;
    if (x->width > SQ_TL_WIDTH_MAX)
        x->width = SQ_TL_WIDTH_MAX;
    x->limit = q->limit ? q->limit : SQ_CALLS_DEFAULT;
    if (x->limit > SQ_CALLS_MAX)
        x->limit = SQ_CALLS_MAX;
    x->list = malloc(((size_t)x->limit + 1) * sizeof(sq_call));
    if (!x->list) {
        free(x);
        return GPUFL_ENOMEM;
    }
    q_begin(s, &c);
    if ((rc = q_session(&c, q->sid)) != 0 || (rc = q_snapshot(&c)) != 0)
        goto out;
    x->from = q->from ? q->from : (uint64_t)c.first;
    x->to = q->to ? q->to : (uint64_t)c.last + 1;
    if (x->to <= x->from) {
        rc = GPUFL_EINVAL;
        goto out;
    }
    x->bw = sq_cols_width(x->from, x->to, x->width);
    lv = capi_level(x->bw);
    rc = lv >= 0 ? capi_summary(&c, x, lv, &used) : GPUFL_OK;
    if (rc == GPUFL_EFULL && lv == 0) {
        /* level 0 computed past its cap: level 1's buckets (at most half a
         * column), rollup_ns says so */
        thr_reset(x);
        rc = capi_summary(&c, x, 1, &used);
    }
    if (rc)
        goto out;
    if (!used || x->count <= x->limit) {
        /* a list (or no rollup): from the rows */
        thr_reset(x);
        if ((rc = sq_calls_each(&c, x->from, x->to, call_add, x)) != 0)
            goto out;
    }
    jw_obj_begin(w);
    srv_jw_kv_udec(w, "from", x->from);
    srv_jw_kv_udec(w, "to", x->to);
    jw_key(w, "complete");
    jw_bool(w, x->count <= x->limit);
    jw_kv_u64(w, "count", x->count);
    if (x->count <= x->limit)
        w_calls(w, x);
    else
        w_summary(w, x);
    jw_obj_end(w);
out:
    thr_reset(x);
    free(x->list);
    free(x);
    return q_end(&c, rc, w);
}
