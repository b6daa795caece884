/*
 * compare.h - robust comparison of two samples of durations (docs/analysis.md):
 * the ratio of their medians with a bootstrap confidence interval, a
 * Mann-Whitney U p-value, and the verdict "significantly slower / faster /
 * the same" that gpufl-server's regression scan and straggler test and
 * `gpufl diff` share.
 *
 * Pure computation: no I/O, no globals, deterministic for a given seed.
 * Every cost is bounded: a sample larger than sample_max is thinned to
 * sample_max evenly spaced order statistics (which keeps its shape and only
 * widens the interval), and the bootstrap draws at most AN_RESAMPLES_MAX
 * resamples.  Thread-safe: each call owns its scratch memory.
 */
#ifndef GPUFL_ANALYSIS_COMPARE_H
#define GPUFL_ANALYSIS_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#define AN_RESAMPLES_DEF 1000u
#define AN_RESAMPLES_MAX 10000u
#define AN_SAMPLE_DEF 2000u
#define AN_SAMPLE_MAX 100000u
/* most groups (runs) on either side of one comparison */
#define AN_GROUPS_MAX 256u
/* the default smallest shift worth reporting: 5 % */
#define AN_MIN_SHIFT_DEF 0.05

/* One run's values (durations, any unit, the same on both sides); borrowed. */
typedef struct an_group {
    const double *v;
    size_t n;
} an_group;

typedef struct an_opts {
    uint64_t seed;       /* the bootstrap's generator; same seed, same CI */
    uint32_t resamples;  /* 1 .. AN_RESAMPLES_MAX */
    uint32_t sample_max; /* values kept per group, 16 .. AN_SAMPLE_MAX */
    double min_shift;    /* |ratio - 1| below this is never reported */
    double conf;         /* confidence of the interval, 0.5 .. 0.999 */
} an_opts;

/* Fills the defaults: seed 1, 1000 resamples, 2000 values per group, 5 %,
 * 95 %. */
void an_opts_init(an_opts *o);

enum { AN_FASTER = -1, AN_SAME = 0, AN_SLOWER = 1 };

typedef struct an_result {
    double base_median, cur_median; /* of the pooled (thinned) values */
    double ratio;                   /* cur_median / base_median */
    double lo, hi;                  /* the ratio's bootstrap interval */
    double p;                       /* Mann-Whitney U, two-sided */
    /* the base's run-to-run spread: the largest |median of one base group /
     * base_median - 1| (0 with one group) */
    double noise;
    double threshold;     /* max(min_shift, noise): the shift to beat */
    size_t n_base, n_cur; /* values used after thinning */
    int verdict;          /* AN_SLOWER, AN_FASTER or AN_SAME */
} an_result;

/*
 * Compares cur against base.  Each side is one or more groups (runs);
 * the bootstrap resamples groups, then values within each chosen group,
 * so the interval includes the run-to-run variance of the base.  The
 * verdict is AN_SLOWER when lo > 1, ratio - 1 > threshold and
 * p < 1 - conf; AN_FASTER symmetrically (hi < 1, 1 - ratio > threshold).
 * Values must be finite and >= 0 and the base median > 0.
 * Returns 0, GPUFL_EINVAL (an empty side, too many groups, a bad value or
 * option) or GPUFL_ENOMEM.
 */
int an_compare(const an_group *base, size_t nbase, const an_group *cur,
               size_t ncur, const an_opts *o, an_result *r);

/* The median of v[0..n) (n >= 1); reorders v. */
double an_median(double *v, size_t n);

/* Two-sided p-value of the Mann-Whitney U test of a against b (normal
 * approximation with tie and continuity corrections; 1 when either is
 * empty).  Returns a negative value when out of memory. */
double an_mwu_p(const double *a, size_t na, const double *b, size_t nb);

#endif
