/*
 * store_sql_regress_scope.c - what the regression scan compares of a
 * session's scopes: each scope path's instances and wall-time sample
 * (its scope_end rows: the first REGRESS_SCOPE_ROWS_MAX of a session as
 * recorded, thinned to REGRESS_SAMPLE order statistics), and which path
 * is the step (reported as the subject "step", the others as "scope").
 */
#include "store_sql_regress_int.h"

#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* scope_end rows read per session at most (the first ones recorded) */
#define REGRESS_SCOPE_ROWS_MAX 200000

/* Closes path x being read: its n values sorted, thinned to at most
 * REGRESS_SAMPLE order statistics (as sq_regress_load_kernels's quantiles). */
static int path_close(rname *x, double *vals, size_t n)
{
    qsort(vals, n, sizeof(*vals), sq_regress_cmp_dbl);
    x->nv = n < REGRESS_SAMPLE ? n : REGRESS_SAMPLE;
    x->v = malloc(x->nv * sizeof(*x->v));
    if (!x->v)
        return GPUFL_ENOMEM;
    for (size_t k = 0; k < x->nv; k++)
        x->v[k] = vals[(size_t)(((double)k + 0.5) / (double)x->nv * (double)n)];
    x->n = (int64_t)n;
    return GPUFL_OK;
}

/* A session's scope paths ("a/b/c") with their instances and wall-time
 * sample: its first REGRESS_SCOPE_ROWS_MAX scope_end rows, grouped by path
 * id, then the ids' strings.  The cap comes before the sort: the inner
 * query walks the primary key (sess, seq) and stops at the cap, so only
 * the rows kept are sorted, never all of a session's; under the cap the
 * rows, and so the answer, are the same as sorting them all. */
int sq_regress_load_scopes(qctx *c, rsess *r)
{
    int64_t *ids = malloc(REGRESS_NAMES_MAX * sizeof(*ids));
    double *vals = malloc(REGRESS_SCOPE_ROWS_MAX * sizeof(*vals));
    char *buf = malloc(SQ_PATH_STR_MAX);
    size_t nvals = 0;
    int rc;

    r->names = calloc(REGRESS_NAMES_MAX, sizeof(*r->names));
    if (!ids || !vals || !buf || !r->names) {
        rc = GPUFL_ENOMEM;
        goto out;
    }
    rc = q_prepare(c, "SELECT path, dur FROM (SELECT path, dur FROM scopes"
                      " WHERE sess=? AND type=? AND path IS NOT NULL ORDER"
                      " BY seq LIMIT ?) AS first_rows ORDER BY path");
    if (rc)
        goto out;
    qbind_i64(c->st, 1, r->id);
    qbind_i64(c->st, 2, EV_SCOPE_END);
    qbind_i64(c->st, 3, REGRESS_SCOPE_ROWS_MAX);
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        int64_t path = qcol_i64(c->st, 0), dur = qcol_i64(c->st, 1);
        if (nvals == REGRESS_SCOPE_ROWS_MAX)
            break; /* the LIMIT's own bound, held here too */
        if (!r->n || ids[r->n - 1] != path) {
            if (r->n && (rc = path_close(&r->names[r->n - 1], vals, nvals)))
                goto out;
            nvals = 0;
            if (r->n == REGRESS_NAMES_MAX)
                break; /* the paths past the cap are not compared */
            ids[r->n++] = path;
        }
        vals[nvals++] = (double)(dur > 0 ? dur : 0);
    }
    if (rc != SDB_ROW && rc != SDB_DONE) {
        rc = sq_err(rc);
        goto out;
    }
    if (r->n && !r->names[r->n - 1].v &&
        (rc = path_close(&r->names[r->n - 1], vals, nvals)) != 0)
        goto out;
    rc = GPUFL_OK;
    /* the strings once the rows are read: one statement at a time */
    sdb_finalize(c->st);
    c->st = NULL;
    for (size_t i = 0; i < r->n; i++) {
        r->names[i].name =
            strdup(sq_path_of(c->db, r->id, ids[i], buf, SQ_PATH_STR_MAX));
        if (!r->names[i].name) {
            rc = GPUFL_ENOMEM;
            goto out;
        }
    }
    if (r->n > 1)
        qsort(r->names, r->n, sizeof(*r->names), sq_regress_cmp_name);
out:
    free(buf);
    free(vals);
    free(ids);
    return rc;
}

/* The step scope's rows become the subject "step": the path ending in
 * the session's --step-scope name, else the outermost path run more than
 * once (as the job view chooses it, store_sql_jobs.c). */
void sq_regress_mark_step(const rsess *cur, const char *step, rrow *rows,
                          size_t first, size_t n)
{
    const rname *best = NULL;
    size_t best_depth = SIZE_MAX;

    for (size_t i = 0; i < cur->n; i++) {
        const rname *x = &cur->names[i];
        const char *leaf = strrchr(x->name, '/');
        size_t depth = 0;
        for (const char *p = x->name; *p; p++)
            depth += *p == '/';
        leaf = leaf ? leaf + 1 : x->name;
        if (step[0] ? strcmp(leaf, step) != 0 : x->n < 2)
            continue;
        if (depth < best_depth ||
            (depth == best_depth && best && x->n > best->n)) {
            best = x;
            best_depth = depth;
        }
    }
    if (!best)
        return;
    for (size_t i = first; i < n; i++)
        if (!strcmp(rows[i].name, best->name))
            rows[i].subject = "step";
}
