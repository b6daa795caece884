/*
 * store_sql_q_waste.c - GET /api/v1/fleet/waste (docs/api.md "GPU
 * waste"): the owners' busy and wasted GPU-hours over a range from the
 * rollups (or the lines, for a step of no whole hours) that
 * store_sql_waste.c keeps, summed per owner key and series bucket, priced
 * per GPU model; the GPUs by their latest verdict, the waste rate now,
 * and each GPU's verdict strip from its runs (vruns).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpufl/gpufl.h>

#include "common/jsonl.h"
#include "srv_json.h"
#include "store_sql_int.h"
#include "store_sql_q.h"

#define HOUR_NS (3600ull * 1000000000ull)
#define DAY_NS (24ull * HOUR_NS)
#define WASTE_TOKENS 256

#define WQ_KEYS_MAX 50000 /* owner keys summed per answer */
#define WQ_STRIP_MAX 200  /* segments per GPU strip */
#define WQ_STRIP_HOLD_NS ((uint64_t)SQ_RUN_HOLD_NS)
#define WQ_RATE_NS (300ull * 1000000000ull) /* "now": the last 5 minutes */

typedef struct wq_ent {
    char key[264];
    double busy, wasted[SRV_WASTE_N], cost;
    int unpriced; /* some of its waste is on a GPU model without a price */
} wq_ent;

typedef struct wq {
    const srv_wasteq *q;
    rl_map keys;
    wq_ent total;
    double (*series)[SRV_WASTE_N];
    uint32_t nb;
    int simulated, overflow;
} wq;

static uint64_t fnv(const char *s, uint64_t h)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void ent_add(wq_ent *e, const srv_price *p, double f, double busy,
                    const double *wasted)
{
    double sum = 0;
    e->busy += busy * f;
    for (int r = 0; r < SRV_WASTE_N; r++) {
        e->wasted[r] += wasted[r] * f;
        sum += wasted[r] * f;
    }
    if (p)
        e->cost += sum / 3600.0 * p->per_hour;
    else if (sum > 0)
        e->unpriced = 1;
}

/* What a row read counts for: the totals and owners (TOP), the series
 * buckets (SERIES), or both.  Every line is in every dimension of the
 * rollups (under key "" when unknown), so the series, which is per
 * reason only, may come from another dimension than the owners. */
#define WQ_TOP 1
#define WQ_SERIES 2

/* Adds a piece of time [t0, t1) of one owner key: its share inside the
 * range to the totals and the key (TOP), spread over the series buckets
 * (SERIES). */
static int piece(wq *x, int roles, uint64_t t0, uint64_t t1, const char *key,
                 const char *model, double busy, const double *wasted,
                 int simulated)
{
    const srv_wasteq *q = x->q;
    uint64_t a = t0 > q->from ? t0 : q->from, b = t1 < q->to ? t1 : q->to;
    uint64_t k[4] = { 0, 0, 0, 0 }, step = q->step_s * 1000000000ull;
    const srv_price *p = price_find(q->prices, q->nprices, model);
    double span = (double)(t1 - t0);
    wq_ent *e;
    int fresh = 0;

    if (t1 <= t0 || b <= a)
        return GPUFL_OK;
    x->simulated |= simulated;
    if (!(roles & WQ_TOP))
        goto series;
    k[0] = fnv(key, 1469598103934665603ull);
    k[1] = fnv(key, 7809847782465536322ull);
    k[2] = strlen(key);
    e = rl_map_get(&x->keys, k, &fresh);
    if (!e) {
        x->overflow = 1;
        k[0] = k[1] = k[2] = 0;
        k[3] = 1; /* the one "(other)" entry past the cap */
        if (!(e = rl_map_find(&x->keys, k)))
            return GPUFL_ENOMEM;
    }
    if (fresh)
        snprintf(e->key, sizeof(e->key), "%s", key);
    ent_add(e, p, (double)(b - a) / span, busy, wasted);
    ent_add(&x->total, p, (double)(b - a) / span, busy, wasted);
series:
    if (!(roles & WQ_SERIES))
        return GPUFL_OK;
    for (uint64_t i = (a - q->from) / step; i < x->nb; i++) {
        uint64_t c0 = q->from + i * step, c1 = c0 + step;
        uint64_t o0 = c0 > a ? c0 : a, o1 = c1 < b ? c1 : b;
        if (c0 >= b)
            break;
        if (o1 > o0)
            for (int r = 0; r < SRV_WASTE_N; r++)
                x->series[i][r] += wasted[r] * (double)(o1 - o0) / span;
    }
    return GPUFL_OK;
}

/* Rows [u0, u1] of dimension dim of a rollup table (its time column
 * col, unit ns), counted for roles. */
static int from_table(qctx *c, wq *x, int roles, int dim, const char *table,
                      const char *col, uint64_t unit, uint64_t u0, uint64_t u1)
{
    double wasted[SRV_WASTE_N];
    char sql[256];
    int rc;

    if (u1 < u0)
        return GPUFL_OK;
    snprintf(sql, sizeof(sql),
             "SELECT %s, key, model, busy, w_idle, w_held, w_phantom,"
             " w_stuck, w_alloc, simulated FROM %s WHERE dim=? AND %s>=? AND"
             " %s<=?",
             col, table, col, col);
    if ((rc = q_prepare(c, sql)) != 0)
        return rc;
    qbind_i64(c->st, 1, dim);
    qbind_i64(c->st, 2, (int64_t)u0);
    qbind_i64(c->st, 3, (int64_t)u1);
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        uint64_t h = (uint64_t)qcol_i64(c->st, 0);
        for (int r = 0; r < SRV_WASTE_N; r++)
            wasted[r] = qcol_f64(c->st, 4 + r);
        if ((rc = piece(x, roles, h * unit, (h + 1) * unit, qcol_text(c->st, 1),
                        qcol_text(c->st, 2), qcol_f64(c->st, 3), wasted,
                        qcol_i64(c->st, 9) != 0)) != 0)
            return rc;
    }
    return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

/* The dimension with the fewest daily rows over days [d0, d1): its
 * hourly rows give the series with the least reading.  Each count stops
 * at the best so far, so this reads at most a few times the rows of the
 * smallest, in the order where the small ones usually come first. */
static int fewest_rows(qctx *c, uint64_t d0, uint64_t d1, int *out)
{
    static const int order[] = { SRV_WBY_NAMESPACE, SRV_WBY_HOST, SRV_WBY_APP,
                                 SRV_WBY_USER,      SRV_WBY_JOB,  SRV_WBY_POD,
                                 SRV_WBY_GPU };
    _Static_assert(sizeof(order) / sizeof(order[0]) == SRV_WBY_N,
                   "every dimension is counted");
    int64_t best = INT64_MAX;
    int rc;

    for (size_t i = 0; i < SRV_WBY_N && best > 0; i++) {
        rc = q_prepare(c, "SELECT count(*) FROM (SELECT 1 FROM wasted WHERE"
                          " dim=? AND day>=? AND day<? LIMIT ?) AS t");
        if (rc)
            return rc;
        qbind_i64(c->st, 1, order[i]);
        qbind_i64(c->st, 2, (int64_t)d0);
        qbind_i64(c->st, 3, (int64_t)d1);
        qbind_i64(c->st, 4, best);
        if ((rc = sdb_step(c->st)) != SDB_ROW)
            return sq_err(rc);
        if (qcol_i64(c->st, 0) < best) {
            best = qcol_i64(c->st, 0);
            *out = order[i];
        }
    }
    return GPUFL_OK;
}

/* The rollups' rows of the range.  Owners and totals: the daily rollup
 * for the UTC days wholly inside it, the hourly one for the hours at its
 * edges.  The series: with buckets of whole days from a midnight, the
 * same rows; else the hourly rows of the dimension with the fewest
 * (a month of a thousand GPUs by pod is 720,000 hourly rows, by
 * namespace a few thousand: docs/server.md "GPU waste"). */
static int from_rollup(qctx *c, wq *x)
{
    const srv_wasteq *q = x->q;
    uint64_t h0 = q->from / HOUR_NS, h1 = (q->to - 1) / HOUR_NS;
    uint64_t d0 = (q->from + DAY_NS - 1) / DAY_NS, d1 = q->to / DAY_NS;
    int by = q->by, sdim = by, both = WQ_TOP | WQ_SERIES, rc;

    if (d0 < d1 && q->step_s % 86400 == 0 && q->from % DAY_NS == 0) {
        rc = from_table(c, x, both, by, "wasted", "day", DAY_NS, d0, d1 - 1);
        return rc ? rc
                  : from_table(c, x, both, by, "wasteh", "hour", HOUR_NS,
                               d1 * 24, h1);
    }
    if (d0 < d1 && (rc = fewest_rows(c, d0, d1, &sdim)) != 0)
        return rc;
    if (sdim == by) /* no whole day, or by is the smallest: one pass */
        return from_table(c, x, both, by, "wasteh", "hour", HOUR_NS, h0, h1);
    rc = from_table(c, x, WQ_TOP, by, "wasted", "day", DAY_NS, d0, d1 - 1);
    if (!rc)
        rc = from_table(c, x, WQ_TOP, by, "wasteh", "hour", HOUR_NS, h0,
                        d0 * 24 - 1);
    if (!rc)
        rc = from_table(c, x, WQ_TOP, by, "wasteh", "hour", HOUR_NS, d1 * 24,
                        h1);
    if (!rc)
        rc = from_table(c, x, WQ_SERIES, sdim, "wasteh", "hour", HOUR_NS, h0,
                        h1);
    return rc;
}

/* The lines themselves, for a step that is no whole number of hours. */
static int from_lines(qctx *c, wq *x)
{
    const srv_wasteq *q = x->q;
    char key[400];
    srv_waste w;
    int rc;

    rc = q_prepare(c, "SELECT " SQ_WASTE_COLS " FROM waste WHERE t1 > ? AND"
                      " t0 < ?");
    if (rc)
        return rc;
    qbind_i64(c->st, 1, (int64_t)q->from);
    qbind_i64(c->st, 2, (int64_t)q->to);
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        memset(&w, 0, sizeof(w));
        sq_waste_row(c->st, &w);
        sq_waste_key(&w, q->by, key, sizeof(key));
        if ((rc = piece(x, WQ_TOP | WQ_SERIES, w.from, w.to, key, w.model,
                        w.busy, w.wasted, w.simulated)) != 0)
            return rc;
    }
    return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

/* Wasted GPU-seconds per second over the last WQ_RATE_NS before now, up
 * to the newest line received (lines come every --waste-interval, so the
 * last minute is not in yet). */
static int waste_rate(qctx *c, const srv_wasteq *q, double *rate)
{
    uint64_t a = q->now > WQ_RATE_NS ? q->now - WQ_RATE_NS : 0, end = a;
    double sum = 0;
    int rc;

    *rate = 0;
    rc = q_prepare(c, "SELECT t0, t1, w_idle + w_held + w_phantom + w_stuck"
                      " + w_alloc FROM waste WHERE t1 > ?");
    if (rc)
        return rc;
    qbind_i64(c->st, 1, (int64_t)a);
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        uint64_t t0 = (uint64_t)qcol_i64(c->st, 0);
        uint64_t t1 = (uint64_t)qcol_i64(c->st, 1);
        uint64_t o0 = t0 > a ? t0 : a, o1 = t1 < q->now ? t1 : q->now;
        if (t1 <= t0 || o1 <= o0)
            continue;
        sum += qcol_f64(c->st, 2) * (double)(o1 - o0) / (double)(t1 - t0);
        if (o1 > end)
            end = o1;
    }
    if (rc != SDB_DONE)
        return sq_err(rc);
    if (end > a)
        *rate = sum / ((double)(end - a) / 1e9);
    return GPUFL_OK;
}

static const char *const gpu_states[] = {
    "EMPTY",   "HELD",  "BURSTY",           "BUSY_LOW_OCC", "BUSY",
    "PHANTOM", "STUCK", "ALLOCATED_UNUSED", "UNKNOWN"
};
#define NSTATES (sizeof(gpu_states) / sizeof(gpu_states[0]))

static int state_idx(const char *s, size_t n)
{
    for (size_t i = 0; i < NSTATES; i++)
        if (strlen(gpu_states[i]) == n && !memcmp(gpu_states[i], s, n))
            return (int)i;
    return -1;
}

/* The latest verdict of every host GPU (the table behind /fleet). */
static int by_state(qctx *c, uint64_t *count, int *simulated)
{
    jsonl_tok *tok = malloc(WASTE_TOKENS * 8 * sizeof(*tok));
    jsonl_doc d;
    int rc;

    if (!tok)
        return GPUFL_ENOMEM;
    jsonl_doc_init(&d, tok, WASTE_TOKENS * 8);
    rc = q_prepare(c, "SELECT body, simulated FROM fleet WHERE kind='gpu'");
    if (rc) {
        free(tok);
        return rc;
    }
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        const char *b = qcol_text(c->st, 0);
        uint32_t t;
        int i;
        if (jsonl_doc_parse_obj(&d, b, strlen(b)))
            continue;
        t = jsonl_doc_find(&d, "state");
        if (jsonl_tok_type(&d, t) != JSONL_STRING)
            continue;
        i = state_idx(b + d.tok[t].off, d.tok[t].len);
        if (i >= 0)
            count[i]++;
        *simulated |= qcol_i64(c->st, 1) != 0;
    }
    free(tok);
    return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

static void by_reason(jw *w, const double *wasted)
{
    jw_key(w, "by_reason");
    jw_obj_begin(w);
    for (int r = 0; r < SRV_WASTE_N; r++) {
        jw_key(w, srv_waste_reasons[r]);
        jw_f64(w, wasted[r] / 3600.0, 9);
    }
    jw_obj_end(w);
}

static void ent_write(jw *w, const wq_ent *e, int priced)
{
    double sum = 0;
    for (int r = 0; r < SRV_WASTE_N; r++)
        sum += e->wasted[r];
    jw_key(w, "busy_gpu_h");
    jw_f64(w, e->busy / 3600.0, 9);
    jw_key(w, "wasted_gpu_h");
    jw_f64(w, sum / 3600.0, 9);
    jw_key(w, "cost");
    if (priced && !e->unpriced)
        jw_f64(w, e->cost, 6);
    else
        jw_null(w);
    by_reason(w, e->wasted);
}

static double ent_wasted(const wq_ent *e)
{
    double sum = 0;
    for (int r = 0; r < SRV_WASTE_N; r++)
        sum += e->wasted[r];
    return sum;
}

static int ent_cmp(const void *a, const void *b)
{
    const wq_ent *x = *(const wq_ent *const *)a, *y = *(const wq_ent *const *)b;
    double dx = ent_wasted(x), dy = ent_wasted(y);
    if (dx != dy)
        return dx < dy ? 1 : -1;
    return strcmp(x->key, y->key);
}

/* One GPU's strip: its verdicts as runs of equal state, each verdict
 * holding until the next or WQ_STRIP_HOLD_NS after it (a GPU gone
 * silent shows a gap).  Up to WQ_STRIP_MAX runs come exact; past that
 * the range is cut into WQ_STRIP_MAX equal slots, each painted with the
 * state that covered most of it, and equal neighbours merged. */
typedef struct seg {
    uint64_t a, b;
    int state;
} seg;

typedef struct strip_acc {
    seg sg[WQ_STRIP_MAX];
    uint32_t n;
    int over;                           /* more runs than fit */
    double slot[WQ_STRIP_MAX][NSTATES]; /* ns of each state per slot */
    uint64_t from, to;
} strip_acc;

static uint64_t slot_edge(const strip_acc *x, uint32_t i)
{
    /* a range is at most 400 days (api_waste.c): x 200 fits 64 bits */
    return x->from + (x->to - x->from) * i / WQ_STRIP_MAX;
}

static void strip_add(strip_acc *x, uint64_t a, uint64_t b, int state)
{
    uint32_t i;
    if (b <= a || state < 0)
        return;
    if (x->n && x->sg[x->n - 1].b == a && x->sg[x->n - 1].state == state)
        x->sg[x->n - 1].b = b;
    else if (x->n < WQ_STRIP_MAX)
        x->sg[x->n++] = (seg){ a, b, state };
    else
        x->over = 1;
    i = (uint32_t)((a - x->from) * WQ_STRIP_MAX / (x->to - x->from));
    for (; i < WQ_STRIP_MAX; i++) {
        uint64_t c0 = slot_edge(x, i), c1 = slot_edge(x, i + 1);
        uint64_t o0 = c0 > a ? c0 : a, o1 = c1 < b ? c1 : b;
        if (c0 >= b)
            break;
        if (o1 > o0)
            x->slot[i][state] += (double)(o1 - o0);
    }
}

/* Past WQ_STRIP_MAX runs: the slots' dominant states as the runs. */
static void strip_slots(strip_acc *x)
{
    x->n = 0;
    for (uint32_t i = 0; i < WQ_STRIP_MAX; i++) {
        int best = -1;
        for (int k = 0; k < (int)NSTATES; k++)
            if (x->slot[i][k] > 0 &&
                (best < 0 || x->slot[i][k] > x->slot[i][best]))
                best = k;
        if (best < 0)
            continue;
        if (x->n && x->sg[x->n - 1].b == slot_edge(x, i) &&
            x->sg[x->n - 1].state == best)
            x->sg[x->n - 1].b = slot_edge(x, i + 1);
        else
            x->sg[x->n++] = (seg){ slot_edge(x, i), slot_edge(x, i + 1), best };
    }
}

static int strip(qctx *c, const srv_wasteq *q, strip_acc *x, const char *host,
                 int64_t dev, jw *w)
{
    uint64_t end = q->to < q->now ? q->to : q->now, pa = 0, pf = 0;
    int rc, ps = -1;

    memset(x, 0, sizeof(*x));
    x->from = q->from;
    x->to = q->to;
    /* the runs reaching into the range (a run holds SQ_RUN_HOLD_NS past
     * its last verdict, until the next run) */
    rc = q_prepare(c, "SELECT t0, t1, state FROM vruns WHERE host=? AND"
                      " dev=? AND t1>=? AND t0<? ORDER BY t0, sess");
    if (rc)
        return rc;
    qbind_text(c->st, 1, host);
    qbind_i64(c->st, 2, dev);
    qbind_i64(c->st, 3,
              (int64_t)(q->from > (uint64_t)SQ_RUN_HOLD_NS
                            ? q->from - (uint64_t)SQ_RUN_HOLD_NS
                            : 0));
    qbind_i64(c->st, 4, (int64_t)end);
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        uint64_t t0 = (uint64_t)qcol_i64(c->st, 0);
        uint64_t t1 = (uint64_t)qcol_i64(c->st, 1);
        const char *st = qcol_text(c->st, 2);
        if (ps >= 0) {
            uint64_t b =
                t0 < pa + WQ_STRIP_HOLD_NS ? t0 : pa + WQ_STRIP_HOLD_NS;
            strip_add(x, pf > q->from ? pf : q->from, b < end ? b : end, ps);
        }
        pf = t0;
        pa = t1;
        ps = state_idx(st, strlen(st));
    }
    if (rc != SDB_DONE)
        return sq_err(rc);
    if (ps >= 0) {
        uint64_t b = end < pa + WQ_STRIP_HOLD_NS ? end : pa + WQ_STRIP_HOLD_NS;
        strip_add(x, pf > q->from ? pf : q->from, b, ps);
    }
    if (x->over)
        strip_slots(x);
    jw_key(w, "strip");
    jw_arr_begin(w);
    for (uint32_t i = 0; i < x->n; i++) {
        jw_obj_begin(w);
        srv_jw_kv_udec(w, "from", x->sg[i].a);
        srv_jw_kv_udec(w, "to", x->sg[i].b);
        jw_kv_str(w, "state", gpu_states[x->sg[i].state]);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    return GPUFL_OK;
}

/* The GPUs /fleet knows (by host, index), at most limit, each with its
 * strip over the range. */
typedef struct wq_gpu {
    char host[256], uuid[96], model[128];
    int64_t dev;
} wq_gpu;

static int gpus(qctx *c, const srv_wasteq *q, jw *w)
{
    wq_gpu *g = calloc(q->limit ? q->limit : 1, sizeof(*g));
    strip_acc *x = malloc(sizeof(*x));
    jsonl_tok *tok = malloc(WASTE_TOKENS * 8 * sizeof(*tok));
    jsonl_doc d;
    uint32_t n = 0;
    int rc;

    if (!g || !tok || !x) {
        free(g);
        free(tok);
        free(x);
        return GPUFL_ENOMEM;
    }
    jsonl_doc_init(&d, tok, WASTE_TOKENS * 8);
    rc = q_prepare(c, "SELECT host, dev, body FROM fleet WHERE kind='gpu'"
                      " ORDER BY host, dev LIMIT ?");
    if (rc)
        goto out;
    qbind_i64(c->st, 1, q->limit);
    while ((rc = sdb_step(c->st)) == SDB_ROW && n < q->limit) {
        const char *b = qcol_text(c->st, 2);
        snprintf(g[n].host, sizeof(g[n].host), "%s", qcol_text(c->st, 0));
        g[n].dev = qcol_i64(c->st, 1);
        if (!jsonl_doc_parse_obj(&d, b, strlen(b))) {
            size_t len;
            jsonl_tok_str(&d, jsonl_doc_find(&d, "uuid"), g[n].uuid,
                          sizeof(g[n].uuid), &len);
            jsonl_tok_str(&d, jsonl_doc_find(&d, "model"), g[n].model,
                          sizeof(g[n].model), &len);
        }
        n++;
    }
    if (rc != SDB_DONE && rc != SDB_ROW) {
        rc = sq_err(rc);
        goto out;
    }
    rc = GPUFL_OK;
    jw_key(w, "gpus");
    jw_arr_begin(w);
    for (uint32_t i = 0; i < n && !rc; i++) {
        jw_obj_begin(w);
        jw_kv_str(w, "host", g[i].host);
        jw_kv_i64(w, "dev", g[i].dev);
        jw_kv_str(w, "uuid", g[i].uuid);
        jw_kv_str(w, "model", g[i].model);
        rc = strip(c, q, x, g[i].host, g[i].dev, w);
        jw_obj_end(w);
    }
    jw_arr_end(w);
out:
    free(g);
    free(tok);
    free(x);
    return rc;
}

int srv_store_q_waste(srv_store *s, const srv_wasteq *q, jw *w)
{
    uint64_t count[NSTATES] = { 0 }, step = q->step_s * 1000000000ull;
    uint64_t other[4] = { 0, 0, 0, 1 };
    wq_ent **top = NULL;
    size_t ntop = 0;
    double rate = 0;
    qctx c;
    wq x;
    int rc, fresh;

    memset(&x, 0, sizeof(x));
    x.q = q;
    x.nb = (uint32_t)((q->to - q->from + step - 1) / step);
    x.series = calloc(x.nb ? x.nb : 1, sizeof(*x.series));
    rl_map_init(&x.keys, sizeof(wq_ent), WQ_KEYS_MAX);
    if (!x.series) {
        rl_map_release(&x.keys);
        return GPUFL_ENOMEM;
    }
    q_begin(s, &c);
    /* the "(other)" entry first, so it always fits */
    if (!rl_map_get(&x.keys, other, &fresh)) {
        rc = GPUFL_ENOMEM;
        goto out;
    }
    rc = q->step_s % 3600 == 0 ? from_rollup(&c, &x) : from_lines(&c, &x);
    if (!rc)
        rc = waste_rate(&c, q, &rate);
    if (!rc)
        rc = by_state(&c, count, &x.simulated);
    if (rc)
        goto out;
    top = malloc((x.keys.n ? x.keys.n : 1) * sizeof(*top));
    if (!top) {
        rc = GPUFL_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < x.keys.cap; i++) {
        const uint64_t *k;
        wq_ent *e = rl_map_at(&x.keys, i, &k);
        if (!e)
            continue;
        if (k[3] == 1) {
            if (!x.overflow)
                continue;
            snprintf(e->key, sizeof(e->key), "(other)");
        }
        top[ntop++] = e;
    }
    qsort(top, ntop, sizeof(*top), ent_cmp);

    jw_obj_begin(w);
    jw_kv_str(w, "by", srv_waste_by[q->by]);
    srv_jw_kv_udec(w, "from", q->from);
    srv_jw_kv_udec(w, "to", q->to);
    jw_kv_u64(w, "step_s", q->step_s);
    jw_kv_str(w, "currency", q->currency);
    jw_key(w, "simulated");
    jw_bool(w, x.simulated);
    jw_key(w, "now");
    jw_obj_begin(w);
    jw_key(w, "gpus_by_state");
    jw_obj_begin(w);
    for (size_t i = 0; i < NSTATES; i++)
        jw_kv_u64(w, gpu_states[i], count[i]);
    jw_obj_end(w);
    jw_key(w, "waste_rate");
    jw_f64(w, rate, 4);
    jw_obj_end(w);
    jw_key(w, "totals");
    jw_obj_begin(w);
    ent_write(w, &x.total, q->nprices > 0);
    jw_obj_end(w);
    jw_key(w, "top");
    jw_arr_begin(w);
    for (size_t i = 0; i < ntop && i < q->limit; i++) {
        jw_obj_begin(w);
        jw_kv_str(w, "key", top[i]->key);
        ent_write(w, top[i], q->nprices > 0);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_key(w, "series");
    jw_arr_begin(w);
    for (uint32_t i = 0; i < x.nb; i++) {
        jw_obj_begin(w);
        srv_jw_kv_udec(w, "t", q->from + i * step);
        by_reason(w, x.series[i]);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    rc = gpus(&c, q, w);
    jw_obj_end(w);
out:
    free(top);
    free(x.series);
    rl_map_release(&x.keys);
    return q_end(&c, rc, w);
}
