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
 * A summary (more calls than the list holds) is read from the rollup
 * where it can answer (store_sql_q_calls_sum.c), else from the rows here.
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

const char *const sq_call_types[4] = { "launch", "memcpy", "memset", "sync" };

static sq_call_thr *thr_get(sq_calls_ctx *x, uint32_t tid)
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
static void thr_cut(sq_calls_ctx *x, uint32_t tid)
{
    for (int i = 0; i < x->ncut; i++)
        if (x->cut_tids[i] == tid)
            return;
    if (x->ncut < SQ_CALL_THREADS_MAX)
        x->cut_tids[x->ncut++] = tid;
    x->threads_cut++;
}

int sq_calls_thr_for(sq_calls_ctx *x, uint32_t tid, sq_call_thr **t)
{
    *t = thr_get(x, tid);
    if (*t)
        return GPUFL_OK;
    if (x->nthr < SQ_CALL_THREADS_MAX)
        return GPUFL_ENOMEM;
    thr_cut(x, tid);
    return GPUFL_OK;
}

void sq_calls_reset(sq_calls_ctx *x)
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

/* One call of the range: kept while the list has room, and added to its
 * thread's columns.  GPUFL_ENOMEM when a thread's columns cannot be had. */
static int call_add(void *arg, const sq_call *c)
{
    sq_calls_ctx *x = arg;
    uint32_t c0, c1;
    sq_call_thr *t;
    int rc;

    x->count++;
    if (x->nlist <= x->limit)
        x->list[x->nlist++] = *c;
    if ((rc = sq_calls_thr_for(x, c->tid, &t)) != 0 || !t)
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
    const sq_call_thr *x = a, *y = b;
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

static void w_calls(jw *w, sq_calls_ctx *x)
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

static void w_summary(jw *w, sq_calls_ctx *x)
{
    if (x->nthr > 1)
        qsort(x->thr, (size_t)x->nthr, sizeof(sq_call_thr), thr_cmp);
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
int srv_store_q_calls(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    sq_calls_ctx *x = calloc(1, sizeof(*x));
    int rc, used = 0;

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
    if ((rc = sq_calls_summary(&c, x, &used)) != 0)
        goto out;
    if (!used || x->count <= x->limit) {
        /* a list (or no rollup): from the rows */
        sq_calls_reset(x);
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
    sq_calls_reset(x);
    free(x->list);
    free(x);
    return q_end(&c, rc, w);
}
