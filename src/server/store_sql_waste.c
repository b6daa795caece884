/*
 * store_sql_waste.c - GPU waste (`waste` lines of the system stream,
 * written by `gpufl idle watch`, docs/idle.md "Waste accounting"): every
 * line in table waste, and an hourly rollup (wasteh) per dimension
 * (user, namespace, pod, job, app, host, gpu), owner key and GPU model,
 * which GET /api/v1/fleet/waste reads so a month of a thousand GPUs is a
 * few tens of thousands of rows, not millions of lines.
 *
 * A line spanning an hour boundary is split between the hours in
 * proportion to time.  The rollup holds no session: a session removed by
 * retention first takes its lines back out of it (sq_waste_unroll), so
 * the rollup is always the sum of the stored lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpufl/gpufl.h>

#include "common/jsonl.h"
#include "ingest.h"
#include "store_sql_int.h"
#include "srv_json.h"
#include "store_sql_q.h"

#define HOUR_NS (3600ull * 1000000000ull)
#define WASTE_TOKENS 256

/* The owner key of a line in dimension dim (SRV_WBY_*): a pod is
 * "namespace/pod", a GPU its UUID (else "host:index"); "" = unknown. */
static void key_of(const srv_waste *w, int dim, char *out, size_t cap)
{
    switch (dim) {
    case SRV_WBY_USER: snprintf(out, cap, "%s", w->user); break;
    case SRV_WBY_NAMESPACE: snprintf(out, cap, "%s", w->ns); break;
    case SRV_WBY_POD:
        if (w->ns[0] && w->pod[0])
            snprintf(out, cap, "%s/%s", w->ns, w->pod);
        else
            snprintf(out, cap, "%s", w->pod);
        break;
    case SRV_WBY_JOB: snprintf(out, cap, "%s", w->job); break;
    case SRV_WBY_APP: snprintf(out, cap, "%s", w->app); break;
    case SRV_WBY_HOST: snprintf(out, cap, "%s", w->host); break;
    default:
        if (w->uuid[0])
            snprintf(out, cap, "%s", w->uuid);
        else
            snprintf(out, cap, "%s:%llu", w->host, (unsigned long long)w->dev);
    }
}

/* Adds sign x the line to the rollup: each hour it overlaps gets its
 * share, in every dimension. */
static int roll(srv_store *s, const srv_waste *w, double sign)
{
    sdb_stmt *st = s->ws[WS_WASTE_ROLL];
    double span = (double)(w->to - w->from);
    char key[400];
    int rc;

    for (uint64_t h = w->from / HOUR_NS; h <= (w->to - 1) / HOUR_NS; h++) {
        uint64_t a = h * HOUR_NS > w->from ? h * HOUR_NS : w->from;
        uint64_t b = (h + 1) * HOUR_NS < w->to ? (h + 1) * HOUR_NS : w->to;
        double f = sign * (double)(b - a) / span;
        for (int dim = 0; dim < SRV_WBY_N; dim++) {
            key_of(w, dim, key, sizeof(key));
            qbind_i64(st, 1, dim);
            qbind_i64(st, 2, (int64_t)h);
            qbind_text(st, 3, key);
            qbind_text(st, 4, w->model);
            qbind_f64(st, 5, w->busy * f);
            for (int r = 0; r < SRV_WASTE_N; r++)
                qbind_f64(st, 6 + r, w->wasted[r] * f);
            qbind_i64(st, 11, w->simulated);
            if ((rc = qrun(st)) != 0)
                return rc;
        }
    }
    return GPUFL_OK;
}

int sq_waste_put(srv_store *s, int64_t sess, const srv_ev *e)
{
    jsonl_tok tok[WASTE_TOKENS];
    jsonl_doc d;
    srv_waste w;
    sdb_stmt *st = NULL;
    char why[INGEST_REASON_MAX];
    int rc, p = 0;

    jsonl_doc_init(&d, tok, WASTE_TOKENS);
    /* ingest checked the line: failing now is a bug, not bad input */
    if (jsonl_doc_parse_obj(&d, e->raw.p, e->raw.n) ||
        srv_waste_parse(&d, &w, why))
        return GPUFL_EINTERNAL;
    /* the host and simulation flag of its session when the line omits
     * them */
    if (sdb_prepare(s->w, "SELECT host, simulated FROM sessions WHERE id=?",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sess);
    if ((rc = sdb_step(st)) == SDB_ROW) {
        if (!w.host[0])
            snprintf(w.host, sizeof(w.host), "%s", qcol_text(st, 0));
        w.simulated |= qcol_i64(st, 1) != 0;
    }
    sdb_finalize(st);
    if (rc != SDB_ROW && rc != SDB_DONE)
        return sdb_err(rc);
    if (!w.host[0])
        snprintf(w.host, sizeof(w.host), "unknown");
    st = s->ws[WS_WASTE_PUT];
    qbind_i64(st, ++p, sess);
    qbind_i64(st, ++p, (int64_t)e->seq);
    qbind_i64(st, ++p, (int64_t)e->ts);
    qbind_text(st, ++p, w.host);
    qbind_i64(st, ++p, (int64_t)w.dev);
    qbind_text(st, ++p, w.uuid);
    qbind_text(st, ++p, w.model);
    qbind_text(st, ++p, w.user);
    qbind_text(st, ++p, w.ns);
    qbind_text(st, ++p, w.pod);
    qbind_text(st, ++p, w.container);
    qbind_text(st, ++p, w.job);
    qbind_text(st, ++p, w.app);
    qbind_i64(st, ++p, (int64_t)w.from);
    qbind_i64(st, ++p, (int64_t)w.to);
    qbind_f64(st, ++p, w.busy);
    for (int r = 0; r < SRV_WASTE_N; r++)
        qbind_f64(st, ++p, w.wasted[r]);
    qbind_i64(st, ++p, w.simulated);
    if ((rc = qrun(st)) != 0)
        return rc;
    if (sdb_changes(s->w) == 0)
        return GPUFL_OK; /* already counted */
    return roll(s, &w, 1);
}

#define WASTE_COLS                                                             \
    "host, dev, uuid, model, usr, ns, pod, container, job, app, t0, t1,"       \
    " busy, w_idle, w_held, w_phantom, w_stuck, w_alloc, simulated"

/* A row of WASTE_COLS, from column 0, into *w. */
static void row_of(sdb_stmt *st, srv_waste *w)
{
    char *const strs[] = { w->host, NULL,   w->uuid,      w->model, w->user,
                           w->ns,   w->pod, w->container, w->job,   w->app };
    const size_t caps[] = { sizeof(w->host), 0,
                            sizeof(w->uuid), sizeof(w->model),
                            sizeof(w->user), sizeof(w->ns),
                            sizeof(w->pod),  sizeof(w->container),
                            sizeof(w->job),  sizeof(w->app) };

    for (int i = 0; i < 10; i++)
        if (strs[i])
            snprintf(strs[i], caps[i], "%s", qcol_text(st, i));
    w->dev = (uint64_t)qcol_i64(st, 1);
    w->from = (uint64_t)qcol_i64(st, 10);
    w->to = (uint64_t)qcol_i64(st, 11);
    w->busy = qcol_f64(st, 12);
    for (int r = 0; r < SRV_WASTE_N; r++)
        w->wasted[r] = qcol_f64(st, 13 + r);
    w->simulated = (int)qcol_i64(st, 18);
}

int sq_waste_unroll(srv_store *s, int64_t sess)
{
    sdb_stmt *st = NULL;
    srv_waste w;
    int rc;

    if (sdb_prepare(s->w, "SELECT " WASTE_COLS " FROM waste WHERE sess=?", &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sess);
    while ((rc = sdb_step(st)) == SDB_ROW) {
        memset(&w, 0, sizeof(w));
        row_of(st, &w);
        if (w.to > w.from && (rc = roll(s, &w, -1)) != 0) {
            sdb_finalize(st);
            return rc;
        }
    }
    sdb_finalize(st);
    if (rc != SDB_DONE)
        return sdb_err(rc);
    /* hours nobody is left in (a sum back at 0, give or take rounding) */
    return sdb_exec(s->w, "DELETE FROM wasteh WHERE busy < 1e-6 AND"
                          " w_idle < 1e-6 AND w_held < 1e-6 AND"
                          " w_phantom < 1e-6 AND w_stuck < 1e-6 AND"
                          " w_alloc < 1e-6");
}

/* ---- GET /api/v1/fleet/waste ---- */

#define WQ_KEYS_MAX 50000 /* owner keys summed per answer */
#define WQ_STRIP_MAX 200  /* segments per GPU strip */
#define WQ_STRIP_HOLD_NS (600ull * 1000000000ull)
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

static const srv_price *price_of(const srv_wasteq *q, const char *model)
{
    const srv_price *any = NULL;
    for (size_t i = 0; i < q->nprices; i++) {
        if (!strcmp(q->prices[i].model, model))
            return &q->prices[i];
        if (!strcmp(q->prices[i].model, "*"))
            any = &q->prices[i];
    }
    return any;
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

/* Adds a piece of time [t0, t1) of one owner key: its share inside the
 * range to the totals and the key, spread over the series buckets. */
static int piece(wq *x, uint64_t t0, uint64_t t1, const char *key,
                 const char *model, double busy, const double *wasted,
                 int simulated)
{
    const srv_wasteq *q = x->q;
    uint64_t a = t0 > q->from ? t0 : q->from, b = t1 < q->to ? t1 : q->to;
    uint64_t k[4] = { 0, 0, 0, 0 }, step = q->step_s * 1000000000ull;
    const srv_price *p = price_of(q, model);
    double span = (double)(t1 - t0);
    wq_ent *e;
    int fresh = 0;

    if (t1 <= t0 || b <= a)
        return GPUFL_OK;
    x->simulated |= simulated;
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

/* The hourly rollup's rows of the range. */
static int from_rollup(qctx *c, wq *x)
{
    const srv_wasteq *q = x->q;
    double wasted[SRV_WASTE_N];
    int rc;

    rc = q_prepare(c, "SELECT hour, key, model, busy, w_idle, w_held,"
                      " w_phantom, w_stuck, w_alloc, simulated FROM wasteh"
                      " WHERE dim=? AND hour>=? AND hour<=?");
    if (rc)
        return rc;
    qbind_i64(c->st, 1, q->by);
    qbind_i64(c->st, 2, (int64_t)(q->from / HOUR_NS));
    qbind_i64(c->st, 3, (int64_t)((q->to - 1) / HOUR_NS));
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        uint64_t h = (uint64_t)qcol_i64(c->st, 0);
        for (int r = 0; r < SRV_WASTE_N; r++)
            wasted[r] = qcol_f64(c->st, 4 + r);
        if ((rc = piece(x, h * HOUR_NS, (h + 1) * HOUR_NS, qcol_text(c->st, 1),
                        qcol_text(c->st, 2), qcol_f64(c->st, 3), wasted,
                        qcol_i64(c->st, 9) != 0)) != 0)
            return rc;
    }
    return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

/* The lines themselves, for a step that is no whole number of hours. */
static int from_lines(qctx *c, wq *x)
{
    const srv_wasteq *q = x->q;
    char key[400];
    srv_waste w;
    int rc;

    rc = q_prepare(c, "SELECT " WASTE_COLS " FROM waste WHERE t1 > ? AND"
                      " t0 < ?");
    if (rc)
        return rc;
    qbind_i64(c->st, 1, (int64_t)q->from);
    qbind_i64(c->st, 2, (int64_t)q->to);
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        memset(&w, 0, sizeof(w));
        row_of(c->st, &w);
        key_of(&w, q->by, key, sizeof(key));
        if ((rc = piece(x, w.from, w.to, key, w.model, w.busy, w.wasted,
                        w.simulated)) != 0)
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
    uint64_t end = q->to < q->now ? q->to : q->now, pa = 0;
    char vkey[32];
    int rc, ps = -1;

    memset(x, 0, sizeof(*x));
    x->from = q->from;
    x->to = q->to;
    snprintf(vkey, sizeof(vkey), "%lld", (long long)dev);
    /* the verdict in force at from, then those inside the range */
    rc = q_prepare(c, "SELECT ts, state FROM (SELECT ts, state FROM verdicts"
                      " WHERE host=? AND kind='gpu' AND vkey=? AND ts<?"
                      " ORDER BY ts DESC LIMIT 1) p UNION ALL SELECT ts, state"
                      " FROM (SELECT ts, state FROM verdicts WHERE host=? AND"
                      " kind='gpu' AND vkey=? AND ts>=? AND ts<? ORDER BY ts)"
                      " r ORDER BY 1");
    if (rc)
        return rc;
    qbind_text(c->st, 1, host);
    qbind_text(c->st, 2, vkey);
    qbind_i64(c->st, 3, (int64_t)q->from);
    qbind_text(c->st, 4, host);
    qbind_text(c->st, 5, vkey);
    qbind_i64(c->st, 6, (int64_t)q->from);
    qbind_i64(c->st, 7, (int64_t)end);
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        uint64_t t = (uint64_t)qcol_i64(c->st, 0);
        const char *st = qcol_text(c->st, 1);
        if (ps >= 0) {
            uint64_t b = t < pa + WQ_STRIP_HOLD_NS ? t : pa + WQ_STRIP_HOLD_NS;
            strip_add(x, pa > q->from ? pa : q->from, b, ps);
        }
        pa = t;
        ps = state_idx(st, strlen(st));
    }
    if (rc != SDB_DONE)
        return sq_err(rc);
    if (ps >= 0) {
        uint64_t b = end < pa + WQ_STRIP_HOLD_NS ? end : pa + WQ_STRIP_HOLD_NS;
        strip_add(x, pa > q->from ? pa : q->from, b, ps);
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
