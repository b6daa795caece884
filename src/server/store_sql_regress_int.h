/*
 * store_sql_regress_int.h - what the files of the regression scan share
 * (store_sql_regress.c: the scan, its comparison and answers;
 * store_sql_regress_kernel.c, _scope.c, _mem.c: what each subject reads
 * of a session).  Private to src/server.
 */
#ifndef GPUFL_STORE_SQL_REGRESS_INT_H
#define GPUFL_STORE_SQL_REGRESS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "store_sql_q.h"

/* Fewer baseline sessions than this: nothing is judged (run-to-run noise
 * cannot be told from a change with one or two runs). */
#define REGRESS_MIN_BASE 3
/* Kernel names (scope paths) per session compared (the longest in total
 * first). */
#define REGRESS_NAMES_MAX 4096
/* Values per session and name compared. */
#define REGRESS_SAMPLE 256
/* Findings stored per session at most (the worst first). */
#define REGRESS_ROWS_MAX 1000
/* Baseline sessions at most (--regress-baseline's bound). */
#define REGRESS_BASE_MAX 64

typedef struct rname {
    char *name; /* malloc'd */
    int64_t n;  /* calls */
    double *v;  /* REGRESS_SAMPLE or n values, sorted */
    size_t nv;
} rname;

typedef struct rsess {
    int64_t id;
    rname *names;
    size_t n;
    double peak; /* largest mem_used of a GPU, bytes; < 0: none sampled */
} rsess;

typedef struct rrow {
    const char *kind, *subject, *name; /* name borrowed from an rsess */
    double base_med, cur_med, ratio, lo, hi, p, noise, base_count;
    int64_t cur_count;
} rrow;

/* Frees r's names (r itself is the caller's). */
void sq_regress_release(rsess *r);
/* qsort comparators: rname by name, double ascending. */
int sq_regress_cmp_name(const void *a, const void *b);
int sq_regress_cmp_dbl(const void *a, const void *b);

/* Kernels (store_sql_regress_kernel.c): session r->id's kernel names with
 * their calls and duration sample, from the kagg histograms. */
int sq_regress_load_kernels(qctx *c, rsess *r);

/* Scope paths (store_sql_regress_scope.c): session r->id's scope paths
 * with their instances and wall-time sample; and the step scope's rows
 * rows[first..n) made the subject "step" (step: the session's
 * --step-scope name, empty for the outermost repeated path). */
int sq_regress_load_scopes(qctx *c, rsess *r);
void sq_regress_mark_step(const rsess *cur, const char *step, rrow *rows,
                          size_t first, size_t n);

/* Peak GPU memory (store_sql_regress_mem.c): r->peak of session r->id;
 * and a finding appended to rows[*nrows] when cur's peak is beyond its
 * baseline's. */
int sq_regress_load_peak(qctx *c, rsess *r);
void sq_regress_compare_peak(const srv_regress_cfg *cfg, const rsess *cur,
                             const rsess *base, size_t nb, rrow *rows,
                             size_t *nrows);

#endif
