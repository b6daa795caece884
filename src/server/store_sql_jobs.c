/*
 * store_sql_jobs.c - sessions grouped into jobs by the job id their session
 * line carries (docs/api.md "Jobs"): the list of jobs, and one job per rank
 * - its step time (the step scope's durations), GPU busy share, time in
 * collectives (NCCL kernels) - with the straggler verdict and its evidence.
 *
 * A straggler is judged on the step time outside collectives: in a
 * synchronous job every rank's step lasts as long as the slowest one's,
 * because the others wait for it inside the collective; what differs is
 * the work before the wait.  Each rank's steps are compared with the other
 * ranks' (src/analysis: two-level bootstrap, the ranks' own spread as the
 * noise floor), so one slow step or a job whose ranks all jitter names no
 * one.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/compare.h"
#include "srv_json.h"
#include "store_sql_q.h"

/* Ranks (sessions) of one job answered; more are cut and said so. */
#define JOB_RANKS_MAX 1024
/* Steps read per rank, and kept in the answer's series per rank. */
#define JOB_STEPS_MAX 100000
#define JOB_SERIES_MAX 500
/* Kernel names per rank looked at for the evidence (by total time). */
#define JOB_KNAMES 64
/* Steps per rank compared (thinned beyond), and bootstrap resamples. */
#define JOB_SAMPLE 256
#define JOB_RESAMPLES 500
/* A rank with fewer steps is listed but not judged. */
#define JOB_MIN_STEPS 3

typedef struct jkern {
    char *name; /* malloc'd */
    double per_step;
} jkern;

typedef struct jrank {
    int64_t id, rank, local_rank, world, first, last;
    int has_rank, has_local, has_world;
    char sid[40], host[256], state[16], app[256];
    char scope[INGEST_JOB_MAX + 1]; /* "" until found */
    double *steps, *compute;        /* ns, per step */
    size_t nsteps;
    double busy_ns, coll_ns, med_step, med_compute;
    jkern k[JOB_KNAMES];
    size_t nk;
    jkern sc[JOB_KNAMES]; /* scope names but the step's: wall ns per step */
    size_t nsc;
    int64_t step_name; /* the step scope's name id */
    an_result r;
    int judged, straggler;
} jrank;

static void jrank_release(jrank *r)
{
    free(r->steps);
    free(r->compute);
    for (size_t i = 0; i < r->nk; i++)
        free(r->k[i].name);
    for (size_t i = 0; i < r->nsc; i++)
        free(r->sc[i].name);
}

static int is_collective(const char *name)
{
    return strcasestr(name, "nccl") != NULL;
}

/* ---- GET /api/v1/jobs ---- */

int srv_store_q_jobs(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    int64_t off = 0;
    uint32_t n = 0, l = q_limit(q);
    int rc;

    q_begin(s, &c);
    if (q_cursor(q, &off, 1) < 0)
        return q_end(&c, GPUFL_EINVAL, w);
    rc = q_prepare(
        &c, "SELECT job, min(coalesce(app, '')), count(DISTINCT rank),"
            " count(*), max(world_size), sum(CASE WHEN state='ended' THEN 0"
            " ELSE 1 END), min(coalesce(start_ns, first_ts, 0)),"
            " max(coalesce(last_ts, start_ns, 0)) FROM sessions WHERE job IS"
            " NOT NULL AND (CAST(?1 AS TEXT) IS NULL OR app = ?1)"
            " GROUP BY job HAVING (CAST(?2 AS TEXT) IS NULL OR (?2 = 'ended'"
            " AND sum(CASE WHEN state='ended' THEN 0 ELSE 1 END) = 0) OR"
            " (?2 = 'running' AND sum(CASE WHEN state='ended' THEN 0 ELSE 1"
            " END) > 0)) ORDER BY min(coalesce(start_ns, first_ts, 0)) DESC,"
            " job LIMIT ?3 OFFSET ?4");
    if (rc)
        return q_end(&c, rc, w);
    if (q->app)
        qbind_text(c.st, 1, q->app);
    if (q->state)
        qbind_text(c.st, 2, q->state);
    qbind_i64(c.st, 3, l + 1);
    qbind_i64(c.st, 4, off);
    jw_obj_begin(w);
    jw_key(w, "items");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW && n < l) {
        jw_obj_begin(w);
        jw_kv_str(w, "job", qcol_text(c.st, 0));
        jw_kv_str(w, "app", qcol_text(c.st, 1));
        srv_jw_kv_num(w, "ranks_seen", qcol_i64(c.st, 2));
        srv_jw_kv_num(w, "sessions", qcol_i64(c.st, 3));
        jw_key(w, "world_size");
        if (qcol_null(c.st, 4))
            jw_null(w);
        else
            srv_jw_num(w, qcol_i64(c.st, 4));
        jw_kv_str(w, "state", qcol_i64(c.st, 5) ? "running" : "ended");
        srv_jw_kv_dec(w, "start_ns", qcol_i64(c.st, 6));
        srv_jw_kv_dec(w, "last_ts", qcol_i64(c.st, 7));
        jw_obj_end(w);
        n++;
    }
    jw_arr_end(w);
    off += n;
    q_next(w, rc == SDB_ROW, &off, 1);
    jw_obj_end(w);
    return q_end(&c, rc == SDB_ROW || rc == SDB_DONE ? 0 : sq_err(rc), w);
}

/* ---- GET /api/v1/jobs/{id} ---- */

static double median_of(const double *v, size_t n)
{
    double *t, m;

    if (!n)
        return 0;
    t = malloc(n * sizeof(*t));
    if (!t)
        return 0;
    memcpy(t, v, n * sizeof(*t));
    m = an_median(t, n);
    free(t);
    return m;
}

/* The rank's kernel time: in all, in collectives, and its top names. */
static int load_kernels(qctx *c, jrank *r)
{
    int rc = q_prepare(c, "SELECT coalesce(n.name, ''), a.total FROM kagg a"
                          " LEFT JOIN dicts n ON n.sess=a.sess AND"
                          " n.id=a.name_id WHERE a.sess=? ORDER BY a.total"
                          " DESC");
    if (rc)
        return rc;
    qbind_i64(c->st, 1, r->id);
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        const char *name = qcol_text(c->st, 0);
        double t = (double)qcol_i64(c->st, 1);
        r->busy_ns += t;
        if (is_collective(name)) {
            r->coll_ns += t;
        } else if (r->nk < JOB_KNAMES) {
            if (!(r->k[r->nk].name = strdup(name)))
                return GPUFL_ENOMEM;
            r->k[r->nk++].per_step = t;
        }
    }
    return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

/* The step scope's name id in the rank's session: the one named by the
 * session line, else the outermost scope name that repeats most; 0 when
 * there is none. */
static int find_step_scope(qctx *c, jrank *r, int64_t *name_id)
{
    int64_t best_depth = INT64_MAX, best_n = 1;
    int rc;

    *name_id = 0;
    if (r->scope[0]) {
        rc = q_prepare(c, "SELECT id FROM dicts WHERE sess=? AND kind=0 AND"
                          " name=? ORDER BY id LIMIT 1");
        if (rc)
            return rc;
        qbind_i64(c->st, 1, r->id);
        qbind_text(c->st, 2, r->scope);
        rc = sdb_step(c->st);
        if (rc == SDB_ROW)
            *name_id = qcol_i64(c->st, 0);
        return rc == SDB_ROW || rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
    }
    rc = q_prepare(c, "SELECT name, min(depth), count(*) FROM scopes WHERE"
                      " sess=? AND type=? GROUP BY name");
    if (rc)
        return rc;
    qbind_i64(c->st, 1, r->id);
    qbind_i64(c->st, 2, EV_SCOPE_END);
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        int64_t d = qcol_i64(c->st, 1), n = qcol_i64(c->st, 2);
        if (n < 2)
            continue;
        if (d < best_depth || (d == best_depth && n > best_n)) {
            best_depth = d;
            best_n = n;
            *name_id = qcol_i64(c->st, 0);
        }
    }
    if (rc != SDB_DONE)
        return sq_err(rc);
    if (*name_id) {
        char buf[SQ_NAME_MAX + 1];
        sq_name_of(c->db, r->id, *name_id, buf, sizeof(buf));
        /* shown cut to INGEST_JOB_MAX bytes, as a session line's would be */
        r->scope[0] = '\0';
        sq_str_add_utf8(r->scope, 0, sizeof(r->scope), buf);
    }
    return GPUFL_OK;
}

/* The wall time per step of the rank's other scope names (the longest in
 * total first): where a straggler's extra time goes when it is not in its
 * kernels (a data-loading scope, a host-side stall). */
static int load_scopes(qctx *c, jrank *r)
{
    int64_t ids[JOB_KNAMES];
    char buf[SQ_NAME_MAX + 1];
    int rc = q_prepare(c, "SELECT name, sum(dur) FROM scopes WHERE sess=?"
                          " AND type=? AND name<>? GROUP BY name ORDER BY"
                          " sum(dur) DESC LIMIT ?");
    if (rc)
        return rc;
    qbind_i64(c->st, 1, r->id);
    qbind_i64(c->st, 2, EV_SCOPE_END);
    qbind_i64(c->st, 3, r->step_name);
    qbind_i64(c->st, 4, JOB_KNAMES);
    while ((rc = sdb_step(c->st)) == SDB_ROW && r->nsc < JOB_KNAMES) {
        ids[r->nsc] = qcol_i64(c->st, 0);
        r->sc[r->nsc++].per_step =
            (double)qcol_i64(c->st, 1) / (double)r->nsteps;
    }
    if (rc != SDB_ROW && rc != SDB_DONE)
        return sq_err(rc);
    /* names once the rows are read: one statement at a time */
    for (size_t i = 0; i < r->nsc; i++) {
        sq_name_of(c->db, r->id, ids[i], buf, sizeof(buf));
        if (!(r->sc[i].name = strdup(buf))) {
            r->nsc = i;
            return GPUFL_ENOMEM;
        }
    }
    return GPUFL_OK;
}

static int load_steps(qctx *c, jrank *r)
{
    int64_t name_id;
    size_t cap = 0;
    int rc = find_step_scope(c, r, &name_id);

    if (rc || !name_id)
        return rc;
    rc = q_prepare(c, "SELECT dur FROM scopes WHERE sess=? AND type=? AND"
                      " name=? ORDER BY ts, seq LIMIT ?");
    if (rc)
        return rc;
    qbind_i64(c->st, 1, r->id);
    qbind_i64(c->st, 2, EV_SCOPE_END);
    qbind_i64(c->st, 3, name_id);
    qbind_i64(c->st, 4, JOB_STEPS_MAX);
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        /* grown as the steps come: most runs have far fewer than the cap */
        if (r->nsteps == cap) {
            double *n;
            cap = cap ? 2 * cap : 256;
            if (!(n = realloc(r->steps, cap * sizeof(*n))))
                return GPUFL_ENOMEM;
            r->steps = n;
        }
        r->steps[r->nsteps++] = (double)qcol_i64(c->st, 0);
    }
    if (rc != SDB_DONE)
        return sq_err(rc);
    if (!r->nsteps)
        return GPUFL_OK;
    /* the time of a step outside collectives: its duration less the
     * rank's mean collective time per step */
    r->compute = malloc(r->nsteps * sizeof(*r->compute));
    if (!r->compute)
        return GPUFL_ENOMEM;
    for (size_t i = 0; i < r->nsteps; i++) {
        double v = r->steps[i] - r->coll_ns / (double)r->nsteps;
        r->compute[i] = v > 0 ? v : 0;
    }
    r->med_step = median_of(r->steps, r->nsteps);
    r->med_compute = median_of(r->compute, r->nsteps);
    for (size_t i = 0; i < r->nk; i++)
        r->k[i].per_step /= (double)r->nsteps;
    r->step_name = name_id;
    return load_scopes(c, r);
}

/* Each rank well above the job's median compared with all the others. */
static int judge(jrank *rk, size_t n, double *job_med)
{
    double meds[JOB_RANKS_MAX];
    an_group *g = malloc(AN_GROUPS_MAX * sizeof(*g));
    size_t nm = 0;
    an_opts o;
    int rc = GPUFL_OK;

    if (!g)
        return GPUFL_ENOMEM;
    for (size_t i = 0; i < n; i++)
        if (rk[i].nsteps >= JOB_MIN_STEPS)
            meds[nm++] = rk[i].med_compute;
    *job_med = nm ? an_median(meds, nm) : 0;
    an_opts_init(&o);
    o.sample_max = JOB_SAMPLE;
    o.resamples = JOB_RESAMPLES;
    for (size_t i = 0; i < n && nm >= 3 && *job_med > 0; i++) {
        size_t ng = 0;
        if (rk[i].nsteps < JOB_MIN_STEPS)
            continue;
        rk[i].judged = 1;
        /* a rank at or below the median cannot be slower than the rest */
        if (rk[i].med_compute / *job_med - 1 <= o.min_shift)
            continue;
        for (size_t j = 0; j < n && ng < AN_GROUPS_MAX; j++)
            if (j != i && rk[j].nsteps >= JOB_MIN_STEPS)
                g[ng++] = (an_group){ rk[j].compute, rk[j].nsteps };
        o.seed = (uint64_t)i + 1;
        rc = an_compare(g, ng, &(an_group){ rk[i].compute, rk[i].nsteps }, 1,
                        &o, &rk[i].r);
        if (rc == GPUFL_EINVAL) { /* e.g. the others' steps all 0 ns */
            rc = GPUFL_OK;
            continue;
        }
        if (rc)
            break;
        rk[i].straggler = rk[i].r.verdict == AN_SLOWER;
    }
    free(g);
    return rc;
}

/* A per-step figure of the ranks that are not stragglers, their median:
 * collective time (kname NULL), a kernel name's time (scope 0) or a scope
 * name's (scope 1). */
static double others_median(const jrank *rk, size_t n, const char *kname,
                            int scope)
{
    double v[JOB_RANKS_MAX];
    size_t m = 0;

    for (size_t i = 0; i < n; i++) {
        const jkern *k = scope ? rk[i].sc : rk[i].k;
        size_t nk = scope ? rk[i].nsc : rk[i].nk;
        double x = 0;
        if (rk[i].straggler || rk[i].nsteps < JOB_MIN_STEPS)
            continue;
        if (!kname) {
            x = rk[i].coll_ns / (double)rk[i].nsteps;
        } else {
            for (size_t j = 0; j < nk; j++)
                if (!strcmp(k[j].name, kname))
                    x = k[j].per_step;
        }
        v[m++] = x;
    }
    return m ? an_median(v, m) : 0;
}

/* The name of list k (n of them) whose per-step time exceeds the other
 * ranks' median by most: *extra by how much, *base their median. */
static const char *most_extra(const jrank *rk, size_t n, const jkern *k,
                              size_t nk, int scope, double *extra, double *base)
{
    const char *best = NULL;

    *extra = *base = 0;
    for (size_t i = 0; i < nk; i++) {
        double o = others_median(rk, n, k[i].name, scope);
        if (k[i].per_step - o > *extra) {
            *extra = k[i].per_step - o;
            *base = o;
            best = k[i].name;
        }
    }
    return best;
}

static void w_evidence(jw *w, const jrank *rk, size_t n, const jrank *r,
                       double job_med)
{
    char text[2048];
    size_t len;
    double extra = r->med_compute - job_med, best, coll_wait, kbase;
    double sbest, sbase;
    const char *kname = most_extra(rk, n, r->k, r->nk, 0, &best, &kbase);
    const char *sname = most_extra(rk, n, r->sc, r->nsc, 1, &sbest, &sbase);

    coll_wait = others_median(rk, n, NULL, 0) - r->coll_ns / (double)r->nsteps;
    len = (size_t)snprintf(
        text, sizeof(text),
        "rank %lld: %.3f ms per step outside collectives against %.3f ms"
        " for the job's median rank (x%.3f, %.0f%% interval %.3f-%.3f,"
        " Mann-Whitney p %.2g, over %zu steps)",
        (long long)r->rank, r->med_compute / 1e6, job_med / 1e6, r->r.ratio,
        95.0, r->r.lo, r->r.hi, r->r.p, r->nsteps);
    if (kname && best > 0.2 * extra && len < sizeof(text))
        len += (size_t)snprintf(text + len, sizeof(text) - len,
                                "; its extra time is in kernel %s: +%.3f ms"
                                " per step (%.3f ms against %.3f ms)",
                                kname, best / 1e6, (best + kbase) / 1e6,
                                kbase / 1e6);
    else if (len < sizeof(text))
        len += (size_t)snprintf(text + len, sizeof(text) - len,
                                "; its extra time is not in its GPU kernels"
                                " (host side, data loading or launch)");
    if (sname && sbest > 0.2 * extra && len < sizeof(text))
        len += (size_t)snprintf(text + len, sizeof(text) - len,
                                "; scope %s lasts +%.3f ms per step longer"
                                " (%.3f ms against %.3f ms)",
                                sname, sbest / 1e6, (sbest + sbase) / 1e6,
                                sbase / 1e6);
    if (coll_wait > 0.2 * extra && len < sizeof(text))
        snprintf(text + len, sizeof(text) - len,
                 "; the other ranks spend +%.3f ms per step more in NCCL"
                 " collectives: they wait for it",
                 coll_wait / 1e6);
    jw_obj_begin(w);
    srv_jw_kv_num(w, "rank", r->rank);
    jw_kv_str(w, "session", r->sid);
    jw_key(w, "ratio");
    jw_f64(w, r->r.ratio, 4);
    jw_key(w, "lo");
    jw_f64(w, r->r.lo, 4);
    jw_key(w, "hi");
    jw_f64(w, r->r.hi, 4);
    jw_key(w, "p");
    jw_f64(w, r->r.p, 6);
    jw_key(w, "noise");
    jw_f64(w, r->r.noise, 4);
    srv_jw_kv_dec(w, "extra_ns", (int64_t)extra);
    jw_key(w, "kernel");
    if (kname && best > 0.2 * extra)
        jw_str(w, kname);
    else
        jw_null(w);
    srv_jw_kv_dec(w, "kernel_extra_ns", kname ? (int64_t)best : 0);
    jw_key(w, "scope");
    if (sname && sbest > 0.2 * extra)
        jw_str(w, sname);
    else
        jw_null(w);
    srv_jw_kv_dec(w, "scope_extra_ns", sname ? (int64_t)sbest : 0);
    srv_jw_kv_dec(w, "collective_wait_ns",
                  coll_wait > 0 ? (int64_t)coll_wait : 0);
    jw_kv_str(w, "evidence", text);
    jw_obj_end(w);
}

static void w_rank(jw *w, const jrank *r, size_t series)
{
    double span = (double)(r->last - r->first);

    jw_obj_begin(w);
    jw_key(w, "rank");
    if (r->has_rank)
        srv_jw_num(w, r->rank);
    else
        jw_null(w);
    if (r->has_local)
        srv_jw_kv_num(w, "local_rank", r->local_rank);
    jw_kv_str(w, "session", r->sid);
    jw_kv_str(w, "host", r->host);
    jw_kv_str(w, "state", r->state);
    jw_key(w, "step_scope");
    if (r->scope[0] && r->nsteps)
        jw_str(w, r->scope);
    else
        jw_null(w);
    srv_jw_kv_num(w, "steps", (int64_t)r->nsteps);
    srv_jw_kv_dec(w, "step_median_ns", (int64_t)r->med_step);
    srv_jw_kv_dec(w, "compute_median_ns", (int64_t)r->med_compute);
    /* at most `series` points: every k-th step beyond */
    jw_key(w, "steps_ns");
    jw_arr_begin(w);
    for (size_t i = 0, k = r->nsteps / series + 1; i < r->nsteps; i += k)
        srv_jw_dec(w, (int64_t)r->steps[i]);
    jw_arr_end(w);
    srv_jw_kv_dec(w, "kernel_ns", (int64_t)r->busy_ns);
    srv_jw_kv_dec(w, "collective_ns", (int64_t)r->coll_ns);
    jw_key(w, "busy_share");
    jw_f64(w, span > 0 ? fmin(1, r->busy_ns / span) : 0, 4);
    jw_key(w, "collective_share");
    jw_f64(w, r->busy_ns > 0 ? r->coll_ns / r->busy_ns : 0, 4);
    jw_key(w, "straggler");
    jw_bool(w, r->straggler);
    jw_obj_end(w);
}

int srv_store_q_job(srv_store *s, const srv_q *q, jw *w)
{
    jrank *rk = calloc(JOB_RANKS_MAX + 1, sizeof(*rk));
    size_t n = 0, series, nstrag = 0, seen = 0;
    int64_t world = 0, first = INT64_MAX, last = 0, running = 0;
    double job_med = 0;
    qctx c;
    int rc;

    if (!rk)
        return GPUFL_ENOMEM;
    q_begin(s, &c);
    if (!q->job) {
        rc = GPUFL_EINVAL;
        goto out;
    }
    rc = q_prepare(&c, "SELECT id, sid, rank, local_rank, world_size,"
                       " coalesce(host, ''), state, coalesce(first_ts, 0),"
                       " coalesce(last_ts, 0), step_scope, coalesce(app, '')"
                       " FROM sessions WHERE job=? ORDER BY rank, id"
                       " LIMIT ?");
    if (rc)
        goto out;
    qbind_text(c.st, 1, q->job);
    qbind_i64(c.st, 2, JOB_RANKS_MAX + 1);
    while ((rc = sdb_step(c.st)) == SDB_ROW && n < JOB_RANKS_MAX) {
        jrank *r = &rk[n++];
        r->id = qcol_i64(c.st, 0);
        snprintf(r->sid, sizeof(r->sid), "%s", qcol_text(c.st, 1));
        r->has_rank = !qcol_null(c.st, 2);
        r->rank = qcol_i64(c.st, 2);
        r->has_local = !qcol_null(c.st, 3);
        r->local_rank = qcol_i64(c.st, 3);
        r->has_world = !qcol_null(c.st, 4);
        r->world = qcol_i64(c.st, 4);
        snprintf(r->host, sizeof(r->host), "%s", qcol_text(c.st, 5));
        snprintf(r->state, sizeof(r->state), "%s", qcol_text(c.st, 6));
        r->first = qcol_i64(c.st, 7);
        r->last = qcol_i64(c.st, 8);
        snprintf(r->scope, sizeof(r->scope), "%s", qcol_text(c.st, 9));
        snprintf(r->app, sizeof(r->app), "%s", qcol_text(c.st, 10));
    }
    if (rc != SDB_ROW && rc != SDB_DONE) {
        rc = sq_err(rc);
        goto out;
    }
    if (!n) {
        rc = GPUFL_ENOTFOUND;
        goto out;
    }
    {
        int more = rc == SDB_ROW;
        for (size_t i = 0; i < n; i++) {
            if ((rc = load_kernels(&c, &rk[i])) != 0 ||
                (rc = load_steps(&c, &rk[i])) != 0)
                goto out;
            if (rk[i].has_world && rk[i].world > world)
                world = rk[i].world;
            if (rk[i].first && rk[i].first < first)
                first = rk[i].first;
            if (rk[i].last > last)
                last = rk[i].last;
            running += strcmp(rk[i].state, "ended") != 0;
            seen += rk[i].has_rank && (i == 0 || !rk[i - 1].has_rank ||
                                       rk[i - 1].rank != rk[i].rank);
        }
        if ((rc = judge(rk, n, &job_med)) != 0)
            goto out;
        series = JOB_SERIES_MAX;
        if (n > 64)
            series = JOB_SERIES_MAX * 64 / n + 1;
        jw_obj_begin(w);
        jw_kv_str(w, "job", q->job);
        jw_kv_str(w, "app", rk[0].app);
        jw_key(w, "world_size");
        if (world)
            srv_jw_num(w, world);
        else
            jw_null(w);
        srv_jw_kv_num(w, "ranks_seen", (int64_t)seen);
        jw_kv_str(w, "state", running ? "running" : "ended");
        srv_jw_kv_dec(w, "start_ns", first == INT64_MAX ? 0 : first);
        srv_jw_kv_dec(w, "last_ts", last);
        srv_jw_kv_dec(w, "compute_median_ns", (int64_t)job_med);
        jw_key(w, "truncated");
        jw_bool(w, more);
        jw_key(w, "ranks");
        jw_arr_begin(w);
        for (size_t i = 0; i < n; i++)
            w_rank(w, &rk[i], series);
        jw_arr_end(w);
        jw_key(w, "stragglers");
        jw_arr_begin(w);
        for (size_t i = 0; i < n; i++) {
            if (!rk[i].straggler)
                continue;
            w_evidence(w, rk, n, &rk[i], job_med);
            nstrag++;
        }
        jw_arr_end(w);
        jw_kv_str(w, "verdict",
                  nstrag        ? "straggler"
                  : job_med > 0 ? "no straggler"
                                : "not enough steps to judge");
        jw_obj_end(w);
        rc = GPUFL_OK;
    }
out:
    for (size_t i = 0; i < n; i++)
        jrank_release(&rk[i]);
    free(rk);
    return q_end(&c, rc, w);
}
