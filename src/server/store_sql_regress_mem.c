/*
 * store_sql_regress_mem.c - what the regression scan compares of a
 * session's memory: its peak GPU memory (the system samples' 60 s rollup,
 * srl: the largest mem_used of any GPU) against its baseline runs'.
 */
#include "store_sql_regress_int.h"

#include <gpufl/gpufl.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/compare.h"

/* srv_sys_fields' index of mem_used: the srl column mx2 */
#define REGRESS_MEM_COL "mx2"

/* The session's peak GPU memory: the largest mem_used any GPU's system
 * samples reported (the 60 s rollup keeps each minute's largest). */
int sq_regress_load_peak(qctx *c, rsess *r)
{
    int rc = q_prepare(c, "SELECT max(" REGRESS_MEM_COL ") FROM srl WHERE"
                          " sess=?");
    if (rc)
        return rc;
    qbind_i64(c->st, 1, r->id);
    r->peak = -1;
    rc = sdb_step(c->st);
    if (rc == SDB_ROW && !qcol_null(c->st, 0))
        r->peak = qcol_f64(c->st, 0);
    return rc == SDB_ROW || rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

/* Peak memory against the baseline's: one value per run, so no interval;
 * reported when it is beyond every baseline run's peak and the shift
 * beats both min_shift and the baseline runs' own spread (the rule of
 * docs/analysis.md, less the interval and p). */
void sq_regress_compare_peak(const srv_regress_cfg *cfg, const rsess *cur,
                             const rsess *base, size_t nb, rrow *rows,
                             size_t *nrows)
{
    double v[REGRESS_BASE_MAX], med, lo = INFINITY, hi = 0, noise = 0;
    size_t n = 0;

    if (cur->peak <= 0 || *nrows >= REGRESS_ROWS_MAX)
        return;
    for (size_t k = 0; k < nb; k++)
        if (base[k].peak > 0)
            v[n++] = base[k].peak;
    if (n < nb || n < REGRESS_MIN_BASE)
        return; /* not every baseline run sampled its memory */
    qsort(v, n, sizeof(*v), sq_regress_cmp_dbl);
    med = an_median(v, n);
    for (size_t k = 0; k < n; k++) {
        double d = fabs(v[k] / med - 1);
        noise = d > noise ? d : noise;
        lo = v[k] < lo ? v[k] : lo;
        hi = v[k] > hi ? v[k] : hi;
    }
    {
        double ratio = cur->peak / med, bar = cfg->min_shift;
        rrow *r = &rows[*nrows];
        bar = noise > bar ? noise : bar;
        if (!(cur->peak > hi && ratio - 1 > bar) &&
            !(cur->peak < lo && 1 - ratio > bar))
            return;
        memset(r, 0, sizeof(*r));
        r->kind = cur->peak > hi ? "slower" : "faster";
        r->subject = "memory";
        r->name = "peak GPU memory";
        r->base_med = med;
        r->cur_med = cur->peak;
        r->ratio = ratio;
        r->lo = r->hi = ratio;
        r->p = -1; /* no test: stored as NULL */
        r->noise = noise;
        r->base_count = 1;
        r->cur_count = 1;
        (*nrows)++;
    }
}
