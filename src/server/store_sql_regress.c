/*
 * store_sql_regress.c - the regression scan of ended sessions and its
 * answers (docs/analysis.md, docs/api.md "Regressions").
 *
 * When a session has ended, each of its kernel names and scope paths is
 * compared with the same name in the last --regress-baseline ended
 * sessions of the same app (for a rank of a job: the same rank of the
 * app's other jobs, never its own job's other ranks): the shift of the
 * median duration with its interval (src/analysis, the baseline sessions
 * as groups, so their run-to-run spread counts), the change of the call
 * count, and names that are new or vanished; and its peak GPU memory
 * against theirs.  This file picks the sessions and their baseline,
 * compares the names, stores the findings and answers the API; what each
 * subject reads of a session is in store_sql_regress_kernel.c (kernel
 * names, from the kagg histograms), store_sql_regress_scope.c (scope
 * paths and the step) and store_sql_regress_mem.c (peak GPU memory).
 */
#include "store_sql_regress_int.h"

#include <gpufl/gpufl.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/compare.h"
#include "srv_json.h"

/* Bootstrap resamples of a comparison. */
#define REGRESS_RESAMPLES 400
/* Calls of a name needed on each side for a median shift. */
#define REGRESS_MIN_CALLS 5

void sq_regress_release(rsess *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->names[i].name);
        free(r->names[i].v);
    }
    free(r->names);
    r->names = NULL;
    r->n = 0;
}

int sq_regress_cmp_name(const void *a, const void *b)
{
    return strcmp(((const rname *)a)->name, ((const rname *)b)->name);
}

int sq_regress_cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static const rname *find_name(const rsess *r, const char *name)
{
    rname key = { (char *)(uintptr_t)name, 0, NULL, 0 };
    return bsearch(&key, r->names, r->n, sizeof(*r->names),
                   sq_regress_cmp_name);
}

static double pooled_median(const an_group *g, size_t ng, double *tmp)
{
    size_t n = 0;
    for (size_t i = 0; i < ng; i++) {
        memcpy(tmp + n, g[i].v, g[i].n * sizeof(*tmp));
        n += g[i].n;
    }
    return an_median(tmp, n);
}

/* Compares cur with the baseline sessions: findings into rows. */
static int compare(const srv_regress_cfg *cfg, const char *subject,
                   const rsess *cur, const rsess *base, size_t nb, rrow *rows,
                   size_t *nrows)
{
    an_group g[REGRESS_BASE_MAX];
    double *tmp =
        malloc((REGRESS_BASE_MAX + 1) * REGRESS_SAMPLE * sizeof(*tmp));
    an_opts o;
    size_t judged = 0, first;
    int rc = GPUFL_OK;

    if (!tmp)
        return GPUFL_ENOMEM;
    an_opts_init(&o);
    first = *nrows;
    o.resamples = REGRESS_RESAMPLES;
    o.sample_max = REGRESS_SAMPLE;
    o.min_shift = cfg->min_shift;
    for (size_t i = 0; i < cur->n && *nrows < REGRESS_ROWS_MAX; i++) {
        const rname *x = &cur->names[i];
        size_t ng = 0, with_calls = 0;
        int64_t cmin = INT64_MAX, cmax = 0;
        double csum = 0;
        rrow *r = &rows[*nrows];
        an_result res;
        for (size_t k = 0; k < nb; k++) {
            const rname *y = find_name(&base[k], x->name);
            if (!y)
                continue;
            g[ng++] = (an_group){ y->v, y->nv };
            with_calls += y->n >= REGRESS_MIN_CALLS;
            cmin = y->n < cmin ? y->n : cmin;
            cmax = y->n > cmax ? y->n : cmax;
            csum += (double)y->n;
        }
        memset(r, 0, sizeof(*r));
        r->subject = subject;
        r->name = x->name;
        r->cur_count = x->n;
        r->base_count = ng ? csum / (double)ng : 0;
        if (!ng) {
            r->kind = "new";
            r->cur_med = pooled_median(&(an_group){ x->v, x->nv }, 1, tmp);
            (*nrows)++;
            continue;
        }
        /* a name in only some baseline runs comes and goes: no verdict */
        if (ng < nb)
            continue;
        if ((double)x->n < 0.5 * (double)cmin ||
            (double)x->n > 2.0 * (double)cmax) {
            r->kind = "count";
            (*nrows)++;
            if (*nrows >= REGRESS_ROWS_MAX)
                break;
            r = &rows[*nrows];
            memset(r, 0, sizeof(*r));
            r->subject = subject;
            r->name = x->name;
            r->cur_count = x->n;
            r->base_count = csum / (double)ng;
        }
        if (x->n < REGRESS_MIN_CALLS || with_calls < ng)
            continue;
        judged++;
        /* the point estimate alone decides when it cannot pass the bar:
         * the bootstrap only for shifts that might be reported */
        {
            double bm = pooled_median(g, ng, tmp);
            double cm = pooled_median(&(an_group){ x->v, x->nv }, 1, tmp);
            if (bm > 0 && fabs(cm / bm - 1) <= cfg->min_shift)
                continue;
        }
        o.seed = (uint64_t)cur->id * 1000003u + i;
        rc = an_compare(g, ng, &(an_group){ x->v, x->nv }, 1, &o, &res);
        if (rc == GPUFL_EINVAL) { /* a baseline median of 0 ns */
            rc = GPUFL_OK;
            continue;
        }
        if (rc)
            break;
        if (res.verdict == AN_SAME)
            continue;
        r->kind = res.verdict == AN_SLOWER ? "slower" : "faster";
        r->base_med = res.base_median;
        r->cur_med = res.cur_median;
        r->ratio = res.ratio;
        r->lo = res.lo;
        r->hi = res.hi;
        r->p = res.p;
        r->noise = res.noise;
        (*nrows)++;
    }
    /* Bonferroni across the names judged: at a 5 % level each, one
     * unchanged name in twenty would pass by chance, and a session has
     * dozens (docs/analysis.md) */
    for (size_t i = first, w = first; !rc && i <= *nrows; i++) {
        if (i == *nrows) {
            *nrows = w;
            break;
        }
        if (rows[i].kind &&
            (!strcmp(rows[i].kind, "slower") ||
             !strcmp(rows[i].kind, "faster")) &&
            judged > 1 && rows[i].p >= (1 - o.conf) / (double)judged)
            continue;
        rows[w++] = rows[i];
    }
    /* names every baseline run had and this one has not */
    for (size_t i = 0; !rc && nb && i < base[0].n && *nrows < REGRESS_ROWS_MAX;
         i++) {
        const rname *y = &base[0].names[i];
        size_t ng = 1;
        double csum = (double)y->n;
        rrow *r = &rows[*nrows];
        if (find_name(cur, y->name))
            continue;
        for (size_t k = 1; k < nb; k++) {
            const rname *z = find_name(&base[k], y->name);
            if (z) {
                ng++;
                csum += (double)z->n;
            }
        }
        if (ng < nb)
            continue;
        memset(r, 0, sizeof(*r));
        r->kind = "vanished";
        r->subject = subject;
        r->name = y->name;
        r->base_count = csum / (double)ng;
        (*nrows)++;
    }
    free(tmp);
    return rc;
}

static int kind_rank(const char *k)
{
    return !strcmp(k, "slower")     ? 0
           : !strcmp(k, "new")      ? 1
           : !strcmp(k, "vanished") ? 2
           : !strcmp(k, "count")    ? 3
                                    : 4;
}

static int cmp_row(const void *a, const void *b)
{
    const rrow *x = a, *y = b;
    int kx = kind_rank(x->kind), ky = kind_rank(y->kind);
    if (kx != ky)
        return kx - ky;
    if (x->ratio != y->ratio)
        return x->ratio < y->ratio ? 1 : -1;
    return strcmp(x->name, y->name);
}

/* The findings, in one transaction on the writer. */
static int store_rows(srv_store *s, int64_t sess, const char *app, int64_t ts,
                      const rrow *rows, size_t n, size_t nb)
{
    sdb_stmt *st = NULL;
    int rc;

    if (!n)
        return GPUFL_OK;
    pthread_mutex_lock(&s->wlock);
    if ((rc = sdb_begin(s->w)) != 0)
        goto out;
    rc = sdb_prepare(s->w,
                     "INSERT INTO regressions VALUES(?,?,?,?,?,?,?,?,?,?,?,?,"
                     "?,?,?,?,?) ON CONFLICT DO NOTHING",
                     &st);
    for (size_t i = 0; !rc && i < n; i++) {
        const rrow *r = &rows[i];
        qbind_i64(st, 1, sess);
        qbind_i64(st, 2, (int64_t)i);
        qbind_text(st, 3, app);
        qbind_i64(st, 4, ts);
        qbind_text(st, 5, r->kind);
        qbind_text(st, 6, r->name);
        if (r->ratio > 0) {
            qbind_f64(st, 7, r->base_med);
            qbind_f64(st, 8, r->cur_med);
            qbind_f64(st, 9, r->ratio);
            qbind_f64(st, 10, r->lo);
            qbind_f64(st, 11, r->hi);
            if (r->p < 0)
                qbind_null(st, 12);
            else
                qbind_f64(st, 12, r->p);
            qbind_f64(st, 13, r->noise);
        } else {
            for (int k = 7; k <= 13; k++)
                qbind_null(st, k);
            if (r->cur_med > 0)
                qbind_f64(st, 8, r->cur_med);
        }
        qbind_f64(st, 14, r->base_count);
        qbind_i64(st, 15, r->cur_count);
        qbind_i64(st, 16, (int64_t)nb);
        qbind_text(st, 17, r->subject);
        rc = qrun(st);
    }
    sdb_finalize(st);
    if (rc)
        sdb_exec(s->w, "ROLLBACK");
    else
        rc = sdb_exec(s->w, "COMMIT");
out:
    pthread_mutex_unlock(&s->wlock);
    return rc;
}

/* sessions.regress: 0 not scanned, 2 claimed by a scan in progress, 1
 * scanned (its findings stored).  The API says "scanned" for 1 only: a
 * reader polling while the scan runs must not take a claimed session
 * for one that found nothing. */
#define REGRESS_DONE 1
#define REGRESS_CLAIMED 2

/* Sets session id's regress from `from` to `to`; *changed: whether it did
 * (0 when another server claimed it first). */
static int set_state(srv_store *s, int64_t id, int from, int to, int *changed)
{
    sdb_stmt *st = NULL;
    int rc;

    *changed = 0;
    pthread_mutex_lock(&s->wlock);
    rc = sdb_prepare(s->w,
                     "UPDATE sessions SET regress=? WHERE id=? AND"
                     " regress=?",
                     &st);
    if (!rc) {
        qbind_i64(st, 1, to);
        qbind_i64(st, 2, id);
        qbind_i64(st, 3, from);
        rc = qrun(st);
        *changed = !rc && sdb_changes(s->w) > 0;
    }
    sdb_finalize(st);
    pthread_mutex_unlock(&s->wlock);
    return rc;
}

/* 1 when this server takes session id for its scan, 0 when another has. */
static int claim(srv_store *s, int64_t id, int *mine)
{
    return set_state(s, id, 0, REGRESS_CLAIMED, mine);
}

static void summarize(srv_regress_sum *sum, const rrow *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *k = rows[i].kind;
        sum->n_slower += !strcmp(k, "slower");
        sum->n_faster += !strcmp(k, "faster");
        sum->n_new += !strcmp(k, "new");
        sum->n_vanished += !strcmp(k, "vanished");
        sum->n_count += !strcmp(k, "count");
        if (sum->nitems < SRV_REGRESS_SUM_ITEMS) {
            size_t j = sum->nitems++;
            snprintf(sum->items[j].kind, sizeof(sum->items[j].kind), "%s", k);
            snprintf(sum->items[j].subject, sizeof(sum->items[j].subject), "%s",
                     rows[i].subject);
            snprintf(sum->items[j].name, sizeof(sum->items[j].name), "%s",
                     rows[i].name);
            sum->items[j].ratio = rows[i].ratio;
            sum->items[j].lo = rows[i].lo;
            sum->items[j].hi = rows[i].hi;
        }
    }
}

/* The session scanned: its app, start, job and rank (job empty: none),
 * step scope name (empty: the outermost repeated one). */
typedef struct rcur {
    int64_t id, ts, rank;
    char sid[40], app[256], job[128], step[128];
} rcur;

/* Scans session k->id. */
static int scan_one(srv_store *s, const srv_regress_cfg *cfg, const rcur *k,
                    srv_regress_sum *sum)
{
    rsess cur = { k->id, NULL, 0, -1 }, base[REGRESS_BASE_MAX];
    rsess scur = { k->id, NULL, 0, -1 }, sbase[REGRESS_BASE_MAX];
    rrow *rows = NULL;
    size_t nb = 0, nrows = 0, first;
    uint32_t want = cfg->baseline;
    qctx c;
    int rc;

    memset(base, 0, sizeof(base));
    memset(sbase, 0, sizeof(sbase));
    if (want > REGRESS_BASE_MAX)
        want = REGRESS_BASE_MAX;
    q_begin(s, &c);
    /* a rank of a job is compared with the same rank of the app's other
     * jobs (and its runs without a job), never with its own job's other
     * ranks: they ran at the same time, and a straggler among them is the
     * job view's finding, not a regression (docs/analysis.md) */
    rc = q_prepare(&c, "SELECT id FROM sessions WHERE app=?1 AND"
                       " state='ended' AND id<>?2 AND coalesce(start_ns, 0)"
                       " <= ?3 AND (CAST(?5 AS TEXT) IS NULL OR job IS NULL"
                       " OR (job<>?5 AND rank=?6)) ORDER BY"
                       " coalesce(start_ns, 0) DESC, id DESC LIMIT ?4");
    if (rc)
        goto out;
    qbind_text(c.st, 1, k->app);
    qbind_i64(c.st, 2, k->id);
    qbind_i64(c.st, 3, k->ts);
    qbind_i64(c.st, 4, want);
    if (k->job[0]) {
        qbind_text(c.st, 5, k->job);
        qbind_i64(c.st, 6, k->rank);
    } else {
        qbind_null(c.st, 5);
        qbind_null(c.st, 6);
    }
    while ((rc = sdb_step(c.st)) == SDB_ROW && nb < want)
        base[nb++].id = qcol_i64(c.st, 0);
    if (rc != SDB_ROW && rc != SDB_DONE) {
        rc = sq_err(rc);
        goto out;
    }
    rc = GPUFL_OK;
    sum->base_sessions = (uint32_t)nb;
    if (nb < REGRESS_MIN_BASE) {
        sum->base_sessions = 0;
        goto out;
    }
    if ((rc = sq_regress_load_kernels(&c, &cur)) != 0 ||
        (rc = sq_regress_load_scopes(&c, &scur)) ||
        (rc = sq_regress_load_peak(&c, &cur)))
        goto out;
    for (size_t i = 0; i < nb; i++) {
        sbase[i].id = base[i].id;
        if ((rc = sq_regress_load_kernels(&c, &base[i])) != 0 ||
            (rc = sq_regress_load_scopes(&c, &sbase[i])) ||
            (rc = sq_regress_load_peak(&c, &base[i])))
            goto out;
    }
    rows = malloc(REGRESS_ROWS_MAX * sizeof(*rows));
    if (!rows) {
        rc = GPUFL_ENOMEM;
        goto out;
    }
    if ((rc = compare(cfg, "kernel", &cur, base, nb, rows, &nrows)) != 0)
        goto out;
    first = nrows;
    if ((rc = compare(cfg, "scope", &scur, sbase, nb, rows, &nrows)) != 0)
        goto out;
    sq_regress_mark_step(&scur, k->step, rows, first, nrows);
    sq_regress_compare_peak(cfg, &cur, base, nb, rows, &nrows);
    if (nrows > 1)
        qsort(rows, nrows, sizeof(*rows), cmp_row);
    q_end(&c, 0, NULL);
    c.db = NULL;
    rc = store_rows(s, k->id, k->app, k->ts, rows, nrows, nb);
    if (!rc)
        summarize(sum, rows, nrows);
out:
    if (c.db)
        q_end(&c, rc, NULL);
    free(rows);
    sq_regress_release(&cur);
    sq_regress_release(&scur);
    for (size_t i = 0; i < nb; i++) {
        sq_regress_release(&base[i]);
        sq_regress_release(&sbase[i]);
    }
    return rc;
}

int srv_store_regress_scan(srv_store *s, const srv_regress_cfg *cfg,
                           uint32_t max, srv_regress_fn fn, void *arg,
                           uint32_t *done)
{
    rcur *k = malloc(64 * sizeof(*k));
    size_t n = 0;
    qctx c;
    int rc;

    *done = 0;
    if (!k)
        return GPUFL_ENOMEM;
    if (max > 64)
        max = 64;
    q_begin(s, &c);
    rc = q_prepare(&c, "SELECT id, sid, coalesce(app, ''),"
                       " coalesce(start_ns, 0), coalesce(job, ''),"
                       " coalesce(rank, -1), coalesce(step_scope, '') FROM"
                       " sessions WHERE regress=0 AND state='ended' ORDER BY"
                       " id LIMIT ?");
    if (!rc) {
        qbind_i64(c.st, 1, max);
        while ((rc = sdb_step(c.st)) == SDB_ROW && n < max) {
            rcur *x = &k[n++];
            x->id = qcol_i64(c.st, 0);
            snprintf(x->sid, sizeof(x->sid), "%s", qcol_text(c.st, 1));
            snprintf(x->app, sizeof(x->app), "%s", qcol_text(c.st, 2));
            x->ts = qcol_i64(c.st, 3);
            snprintf(x->job, sizeof(x->job), "%s", qcol_text(c.st, 4));
            x->rank = qcol_i64(c.st, 5);
            snprintf(x->step, sizeof(x->step), "%s", qcol_text(c.st, 6));
        }
        rc = rc == SDB_ROW || rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
    }
    q_end(&c, rc, NULL);
    for (size_t i = 0; !rc && i < n; i++) {
        srv_regress_sum sum;
        int mine;
        if ((rc = claim(s, k[i].id, &mine)) != 0 || !mine)
            continue;
        memset(&sum, 0, sizeof(sum));
        snprintf(sum.sid, sizeof(sum.sid), "%s", k[i].sid);
        snprintf(sum.app, sizeof(sum.app), "%s", k[i].app);
        rc = scan_one(s, cfg, &k[i], &sum);
        /* scanned, its findings stored - or the scan failed, and the
         * session is not scanned again (as before the claim state) */
        {
            int changed, e = set_state(s, k[i].id, REGRESS_CLAIMED,
                                       REGRESS_DONE, &changed);
            if (!rc)
                rc = e;
        }
        (*done)++;
        if (!rc && fn)
            fn(arg, &sum);
    }
    free(k);
    return rc;
}

/* ---- answers ---- */

#define REG_COLS                                                               \
    "r.kind, r.name, r.base_median, r.cur_median, r.ratio, r.lo, r.hi, r.p,"   \
    " r.noise, r.base_count, r.cur_count, r.base_sessions, s.sid, r.app,"      \
    " r.ts, r.seq, r.subject"

static void w_opt_f64(jw *w, qctx *c, const char *key, int col, int dec)
{
    jw_key(w, key);
    if (qcol_null(c->st, col))
        jw_null(w);
    else
        jw_f64(w, qcol_f64(c->st, col), dec);
}

static void w_reg_row(jw *w, qctx *c)
{
    int mem = !strcmp(qcol_text(c->st, 16), "memory");

    jw_obj_begin(w);
    jw_kv_str(w, "session", qcol_text(c->st, 12));
    jw_kv_str(w, "app", qcol_text(c->st, 13));
    srv_jw_kv_dec(w, "start_ns", qcol_i64(c->st, 14));
    jw_kv_str(w, "kind", qcol_text(c->st, 0));
    jw_kv_str(w, "subject", qcol_text(c->st, 16));
    jw_kv_str(w, "name", qcol_text(c->st, 1));
    /* peak memory is bytes, not a duration: its own keys */
    jw_key(w, mem ? "base_peak_bytes" : "base_median_ns");
    if (qcol_null(c->st, 2))
        jw_null(w);
    else
        srv_jw_dec(w, (int64_t)llround(qcol_f64(c->st, 2)));
    jw_key(w, mem ? "cur_peak_bytes" : "cur_median_ns");
    if (qcol_null(c->st, 3))
        jw_null(w);
    else
        srv_jw_dec(w, (int64_t)llround(qcol_f64(c->st, 3)));
    w_opt_f64(w, c, "ratio", 4, 4);
    w_opt_f64(w, c, "lo", 5, 4);
    w_opt_f64(w, c, "hi", 6, 4);
    w_opt_f64(w, c, "p", 7, 6);
    w_opt_f64(w, c, "noise", 8, 4);
    w_opt_f64(w, c, "base_count", 9, 1);
    srv_jw_kv_num(w, "cur_count", qcol_i64(c->st, 10));
    srv_jw_kv_num(w, "base_sessions", qcol_i64(c->st, 11));
    jw_obj_end(w);
}

int srv_store_q_regressions(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    int64_t off = 0;
    uint32_t n = 0, l = q_limit(q);
    int rc;

    q_begin(s, &c);
    if (q_cursor(q, &off, 1) < 0)
        return q_end(&c, GPUFL_EINVAL, w);
    rc = q_prepare(&c, "SELECT " REG_COLS " FROM regressions r JOIN sessions"
                       " s ON s.id=r.sess WHERE (CAST(?1 AS TEXT) IS NULL OR"
                       " r.app = ?1) AND (CAST(?2 AS TEXT) IS NULL OR r.kind"
                       " = ?2) ORDER BY r.ts DESC, r.sess DESC, r.seq"
                       " LIMIT ?3 OFFSET ?4");
    if (rc)
        return q_end(&c, rc, w);
    if (q->app)
        qbind_text(c.st, 1, q->app);
    if (q->kind)
        qbind_text(c.st, 2, q->kind);
    qbind_i64(c.st, 3, l + 1);
    qbind_i64(c.st, 4, off);
    jw_obj_begin(w);
    jw_key(w, "items");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW && n < l) {
        w_reg_row(w, &c);
        n++;
    }
    jw_arr_end(w);
    off += n;
    q_next(w, rc == SDB_ROW, &off, 1);
    jw_obj_end(w);
    return q_end(&c, rc == SDB_ROW || rc == SDB_DONE ? 0 : sq_err(rc), w);
}

int srv_store_q_sess_regressions(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    int64_t scanned;
    uint32_t n = 0;
    int rc;

    q_begin(s, &c);
    rc = q_prepare(&c, "SELECT id, regress, state, coalesce(app, '') FROM"
                       " sessions WHERE sid=?");
    if (rc)
        return q_end(&c, rc, w);
    qbind_text(c.st, 1, q->sid);
    rc = sdb_step(c.st);
    if (rc != SDB_ROW)
        return q_end(&c, rc == SDB_DONE ? GPUFL_ENOTFOUND : sq_err(rc), w);
    c.sess = qcol_i64(c.st, 0);
    scanned = qcol_i64(c.st, 1) == REGRESS_DONE &&
              !strcmp(qcol_text(c.st, 2), "ended");
    jw_obj_begin(w);
    jw_kv_str(w, "session", q->sid);
    jw_kv_str(w, "app", qcol_text(c.st, 3));
    jw_key(w, "scanned");
    jw_bool(w, scanned != 0);
    rc = q_prepare(&c, "SELECT " REG_COLS " FROM regressions r JOIN sessions"
                       " s ON s.id=r.sess WHERE r.sess=? ORDER BY r.seq"
                       " LIMIT ?");
    if (rc)
        return q_end(&c, rc, w);
    qbind_i64(c.st, 1, c.sess);
    qbind_i64(c.st, 2, REGRESS_ROWS_MAX);
    jw_key(w, "items");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW) {
        w_reg_row(w, &c);
        n++;
    }
    jw_arr_end(w);
    jw_obj_end(w);
    return q_end(&c, rc == SDB_DONE ? 0 : sq_err(rc), w);
}

int srv_store_regress_worst(srv_store *s, srv_regress_app *out, size_t cap,
                            size_t *n)
{
    qctx c;
    int rc;

    *n = 0;
    q_begin(s, &c);
    rc = q_prepare(
        &c, "SELECT a.app, (SELECT max(r.ratio) FROM regressions r WHERE"
            " r.app=a.app AND r.kind='slower' AND r.sess=(SELECT max(id) FROM"
            " sessions WHERE app=a.app AND regress=1 AND state='ended'))"
            " FROM (SELECT DISTINCT app FROM regressions) a ORDER BY a.app"
            " LIMIT ?");
    if (rc)
        return q_end(&c, rc, NULL);
    qbind_i64(c.st, 1, (int64_t)cap);
    while ((rc = sdb_step(c.st)) == SDB_ROW && *n < cap) {
        snprintf(out[*n].app, sizeof(out[*n].app), "%s", qcol_text(c.st, 0));
        out[*n].worst = qcol_null(c.st, 1) ? 1 : qcol_f64(c.st, 1);
        (*n)++;
    }
    return q_end(&c, rc == SDB_ROW || rc == SDB_DONE ? 0 : sq_err(rc), NULL);
}
