/*
 * store_sql_q_durations.c - GET /api/v1/sessions/{id}/durations
 * (docs/api.md): a session's duration distributions by kernel name and by
 * scope path, as evenly spaced quantiles, for `gpufl diff --server` (the
 * same comparison the regression scan makes, docs/analysis.md).
 *
 * Kernels come from the kagg rollup's histogram (every call, at bucket
 * resolution), sampled exactly as the regression scan samples them;
 * scopes from their scope_end rows, sorted and thinned to the same number
 * of order statistics.  Both are capped: DUR_NAMES_MAX names and paths,
 * DUR_SAMPLE values each, DUR_SCOPE_ROWS_MAX scope rows read.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rollup.h"
#include "srv_json.h"
#include "store_sql_q.h"

/* Kernel names and scope paths answered (the longest in total first). */
#define DUR_NAMES_MAX 1000
/* Values per name or path: the regression scan's sample. */
#define DUR_SAMPLE 256
/* scope_end rows read at most; past it "truncated" is true */
#define DUR_SCOPE_ROWS_MAX 2000000

typedef struct dpath {
    int64_t id, n, total;
    double v[DUR_SAMPLE];
    size_t nv;
} dpath;

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_total(const void *a, const void *b)
{
    const dpath *x = a, *y = b;
    return (x->total < y->total) - (x->total > y->total);
}

static void w_values(jw *w, const double *v, size_t n)
{
    jw_key(w, "values");
    jw_arr_begin(w);
    for (size_t i = 0; i < n; i++)
        jw_u64(w, (uint64_t)llround(v[i] > 0 ? v[i] : 0));
    jw_arr_end(w);
}

static int w_kernels(qctx *c, jw *w)
{
    uint64_t *h = malloc(RL_HIST_N * sizeof(*h));
    double v[DUR_SAMPLE];
    int rc;

    if (!h)
        return GPUFL_ENOMEM;
    rc = q_prepare(c, "SELECT coalesce(n.name, ''), a.n, a.total, a.hist FROM"
                      " kagg a LEFT JOIN dicts n ON n.sess=a.sess AND"
                      " n.id=a.name_id WHERE a.sess=? ORDER BY a.total DESC"
                      " LIMIT ?");
    if (rc)
        goto out;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, DUR_NAMES_MAX);
    jw_key(w, "by_kernel");
    jw_arr_begin(w);
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        size_t bn = 0, nv;
        const void *blob = qcol_blob(c->st, 3, &bn);
        uint64_t tot = 0;
        memset(h, 0, RL_HIST_N * sizeof(*h));
        if (!blob || rl_hist_decode_add(blob, bn, h))
            continue; /* no histogram: nothing to compare */
        for (uint32_t b = 0; b < RL_HIST_N; b++)
            tot += h[b];
        if (!tot)
            continue;
        nv = tot < DUR_SAMPLE ? (size_t)tot : DUR_SAMPLE;
        rl_hist_sample(h, tot, v, nv);
        jw_obj_begin(w);
        jw_kv_str(w, "name", qcol_text(c->st, 0));
        jw_kv_i64(w, "count", qcol_i64(c->st, 1));
        jw_key(w, "total_ns");
        srv_jw_udec(w, (uint64_t)qcol_i64(c->st, 2));
        w_values(w, v, nv);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    rc = rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
out:
    free(h);
    return rc;
}

/* Closes the path being read: its values sorted and thinned into p. */
static void path_close(dpath *p, double *vals, size_t n)
{
    if (n > 1)
        qsort(vals, n, sizeof(*vals), cmp_dbl);
    p->nv = n < DUR_SAMPLE ? n : DUR_SAMPLE;
    for (size_t k = 0; k < p->nv; k++)
        p->v[k] = vals[(size_t)(((double)k + 0.5) / (double)p->nv * (double)n)];
}

static int w_scopes(qctx *c, jw *w)
{
    dpath *p = calloc(DUR_NAMES_MAX, sizeof(*p));
    double *vals = NULL;
    size_t np = 0, nvals = 0, cap = 0, rows = 0, over = 0;
    char buf[SQ_PATH_STR_MAX];
    int rc;

    if (!p)
        return GPUFL_ENOMEM;
    rc = q_prepare(c, "SELECT path, dur FROM scopes WHERE sess=? AND type=?"
                      " ORDER BY path LIMIT ?");
    if (rc)
        goto out;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, EV_SCOPE_END);
    qbind_i64(c->st, 3, DUR_SCOPE_ROWS_MAX + 1);
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        int64_t path = qcol_i64(c->st, 0), dur = qcol_i64(c->st, 1);
        if (++rows > DUR_SCOPE_ROWS_MAX) {
            over = 1;
            break;
        }
        if (!np || p[np - 1].id != path) {
            if (np)
                path_close(&p[np - 1], vals, nvals);
            nvals = 0;
            if (np == DUR_NAMES_MAX) {
                /* the path with the least total gives way */
                qsort(p, np, sizeof(*p), cmp_total);
                np--;
            }
            memset(&p[np], 0, sizeof(p[np]));
            p[np++].id = path;
        }
        if (nvals == cap) {
            size_t nc = cap ? 2 * cap : 1024;
            double *nv = realloc(vals, nc * sizeof(*nv));
            if (!nv) {
                rc = GPUFL_ENOMEM;
                goto out;
            }
            vals = nv;
            cap = nc;
        }
        vals[nvals++] = (double)(dur > 0 ? dur : 0);
        p[np - 1].n++;
        p[np - 1].total += dur > 0 ? dur : 0;
    }
    if (rc != SDB_ROW && rc != SDB_DONE) {
        rc = sq_err(rc);
        goto out;
    }
    if (np)
        path_close(&p[np - 1], vals, nvals);
    if (np > 1)
        qsort(p, np, sizeof(*p), cmp_total);
    /* names once the rows are read: one statement at a time */
    sdb_finalize(c->st);
    c->st = NULL;
    jw_key(w, "by_scope");
    jw_arr_begin(w);
    for (size_t i = 0; i < np; i++) {
        jw_obj_begin(w);
        jw_kv_str(w, "path",
                  sq_path_of(c->db, c->sess, p[i].id, buf, sizeof(buf)));
        jw_kv_i64(w, "count", p[i].n);
        jw_key(w, "total_ns");
        srv_jw_udec(w, (uint64_t)p[i].total);
        w_values(w, p[i].v, p[i].nv);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_key(w, "truncated");
    jw_bool(w, (int)over);
    rc = GPUFL_OK;
out:
    free(vals);
    free(p);
    return rc;
}

int srv_store_q_durations(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    int rc;

    q_begin(s, &c);
    if ((rc = q_session(&c, q->sid)) != 0)
        return q_end(&c, rc, w);
    jw_obj_begin(w);
    jw_kv_str(w, "session", q->sid);
    jw_kv_i64(w, "sample", DUR_SAMPLE);
    rc = w_kernels(&c, w);
    if (!rc)
        rc = w_scopes(&c, w);
    jw_obj_end(w);
    return q_end(&c, rc, w);
}
