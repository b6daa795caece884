/*
 * store_sql_regress_kernel.c - what the regression scan compares of a
 * session's kernels: each name's call count and duration sample.
 *
 * The durations come from the kagg rollup's log histogram, which ingest
 * keeps for every name of every session: all kernels of the name, not a
 * sample of them, at a resolution of 1/16 to 1/32 of a power of two.  The
 * comparison takes REGRESS_SAMPLE evenly spaced quantiles of each (placed
 * within their bucket as if its values were spread evenly), so a scan
 * costs the same for a thousand kernels as for a million.
 */
#include "store_sql_regress_int.h"

#include <gpufl/gpufl.h>

#include <stdlib.h>
#include <string.h>

int sq_regress_load_kernels(qctx *c, rsess *r)
{
    uint64_t *h = malloc(RL_HIST_N * sizeof(*h));
    int rc;

    r->names = calloc(REGRESS_NAMES_MAX, sizeof(*r->names));
    if (!h || !r->names) {
        free(h);
        return GPUFL_ENOMEM;
    }
    rc = q_prepare(c, "SELECT coalesce(n.name, ''), a.n, a.hist FROM kagg a"
                      " LEFT JOIN dicts n ON n.sess=a.sess AND"
                      " n.id=a.name_id WHERE a.sess=? ORDER BY a.total DESC"
                      " LIMIT ?");
    if (rc)
        goto out;
    qbind_i64(c->st, 1, r->id);
    qbind_i64(c->st, 2, REGRESS_NAMES_MAX);
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        rname *x = &r->names[r->n];
        size_t bn = 0;
        const void *blob = qcol_blob(c->st, 2, &bn);
        int64_t n = qcol_i64(c->st, 1);
        uint64_t tot = 0;
        memset(h, 0, RL_HIST_N * sizeof(*h));
        if (n <= 0 || !blob || rl_hist_decode_add(blob, bn, h))
            continue; /* no histogram: nothing to compare */
        for (uint32_t b = 0; b < RL_HIST_N; b++)
            tot += h[b];
        if (!tot)
            continue;
        x->nv = tot < REGRESS_SAMPLE ? (size_t)tot : REGRESS_SAMPLE;
        x->v = malloc(x->nv * sizeof(*x->v));
        x->name = strdup(qcol_text(c->st, 0));
        if (!x->v || !x->name) {
            free(x->v);
            free(x->name);
            rc = GPUFL_ENOMEM;
            goto out;
        }
        rl_hist_sample(h, tot, x->v, x->nv);
        x->n = n;
        r->n++;
    }
    rc = rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
    /* one name twice (two name ids of one string): the first, the
     * larger in total, stands for it */
    if (r->n > 1)
        qsort(r->names, r->n, sizeof(*r->names), sq_regress_cmp_name);
out:
    free(h);
    return rc;
}
