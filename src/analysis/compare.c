/*
 * compare.c - the two-sample comparison of compare.h: thinning, a
 * two-level (runs, then values) bootstrap of the ratio of medians, the
 * Mann-Whitney U test and the verdict.
 *
 * Why medians and a ratio: kernel and step durations are skewed and have
 * outliers (a preempted launch, a first-call warm-up); the median ignores
 * them and a ratio reads the same for a 10 us and a 10 ms kernel.  Why two
 * levels: two runs of the same program differ by more than their values'
 * spread suggests (clocks, placement, other tenants), so an interval from
 * values alone would call run-to-run noise a regression.
 */
#include "analysis/compare.h"

#include <gpufl/gpufl.h>

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void an_opts_init(an_opts *o)
{
    o->seed = 1;
    o->resamples = AN_RESAMPLES_DEF;
    o->sample_max = AN_SAMPLE_DEF;
    o->min_shift = AN_MIN_SHIFT_DEF;
    o->conf = 0.95;
}

/* splitmix64: small, fast, and the same sequence on every platform */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [0, n), n < 2^32 (Lemire's multiply; the bias is < n/2^32) */
static size_t rng_below(uint64_t *s, size_t n)
{
    return (size_t)(((rng_next(s) >> 32) * (uint64_t)n) >> 32);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the k-th smallest of v[0..n), v reordered so that everything before k is
 * <= v[k] and everything after is >= (Wirth's select) */
static double select_k(double *v, size_t n, size_t k)
{
    ptrdiff_t l = 0, m = (ptrdiff_t)n - 1, kk = (ptrdiff_t)k;

    while (l < m) {
        double x = v[kk];
        ptrdiff_t i = l, j = m;
        do {
            while (v[i] < x)
                i++;
            while (x < v[j])
                j--;
            if (i <= j) {
                double t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                j--;
            }
        } while (i <= j);
        if (j < kk)
            l = i;
        if (kk < i)
            m = j;
    }
    return v[kk];
}

double an_median(double *v, size_t n)
{
    double hi, lo;

    if (n == 0)
        return 0;
    hi = select_k(v, n, n / 2);
    if (n % 2)
        return hi;
    /* after the select, everything below n/2 is <= hi: its max is the
     * lower middle */
    lo = v[0];
    for (size_t i = 1; i < n / 2; i++)
        if (v[i] > lo)
            lo = v[i];
    return (lo + hi) / 2;
}

double an_mwu_p(const double *a, size_t na, const double *b, size_t nb)
{
    size_t n = na + nb;
    double *v, ra = 0, tie = 0, mu, sd, u, z;

    if (!na || !nb)
        return 1;
    /* values with their side in the lowest bit of a parallel index */
    v = malloc(n * sizeof(*v) * 2);
    if (!v)
        return -1;
    for (size_t i = 0; i < na; i++) {
        v[2 * i] = a[i];
        v[2 * i + 1] = 0;
    }
    for (size_t i = 0; i < nb; i++) {
        v[2 * (na + i)] = b[i];
        v[2 * (na + i) + 1] = 1;
    }
    qsort(v, n, 2 * sizeof(*v), cmp_dbl);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        double rank, t;
        while (j + 1 < n && v[2 * (j + 1)] == v[2 * i])
            j++;
        rank = ((double)i + (double)j) / 2 + 1; /* ties share the mean */
        for (size_t k = i; k <= j; k++)
            if (v[2 * k + 1] == 0)
                ra += rank;
        t = (double)(j - i + 1);
        tie += t * t * t - t;
        i = j + 1;
    }
    free(v);
    u = ra - (double)na * ((double)na + 1) / 2;
    mu = (double)na * (double)nb / 2;
    sd = sqrt((double)na * (double)nb / 12 *
              (((double)n + 1) - tie / ((double)n * ((double)n - 1))));
    if (sd <= 0)
        return 1; /* every value equal */
    z = (fabs(u - mu) - 0.5) / sd;
    if (z < 0)
        z = 0;
    return erfc(z / sqrt(2));
}

/* One side, thinned and kept sorted per group.  A resample is counted,
 * not copied: each draw adds one to its value's rank in the side's pooled
 * order, and the median is found by walking the counts - no selection per
 * resample (the scan's cost, docs/server.md "Figures"). */
typedef struct side {
    double *v;   /* all groups' kept values, group after group */
    size_t *off; /* group g: v[off[g] .. off[g+1]) */
    size_t ng, n;
    double *pool;   /* scratch of n values */
    double *sorted; /* the n values in pooled order */
    uint32_t *pos;  /* v[i] is sorted[pos[i]] */
    uint32_t *cnt;  /* a resample: draws per pooled rank */
} side;

static void side_release(side *s)
{
    free(s->v);
    free(s->off);
    free(s->pool);
    free(s->sorted);
    free(s->pos);
    free(s->cnt);
}

typedef struct vi {
    double v;
    uint32_t i;
} vi;

/* by value, then by index: the pooled order is the same on every run */
static int cmp_vi(const void *a, const void *b)
{
    const vi *x = a, *y = b;
    if (x->v != y->v)
        return x->v < y->v ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static int side_init(side *s, const an_group *g, size_t ng, size_t keep)
{
    size_t total = 0;
    vi *idx;

    memset(s, 0, sizeof(*s));
    if (!g || ng == 0 || ng > AN_GROUPS_MAX)
        return GPUFL_EINVAL;
    for (size_t i = 0; i < ng; i++) {
        if (!g[i].n || !g[i].v)
            return GPUFL_EINVAL;
        total += g[i].n < keep ? g[i].n : keep;
    }
    s->v = malloc(total * sizeof(*s->v));
    s->pool = malloc(total * sizeof(*s->pool));
    s->sorted = malloc(total * sizeof(*s->sorted));
    s->pos = malloc(total * sizeof(*s->pos));
    s->cnt = malloc(total * sizeof(*s->cnt));
    s->off = malloc((ng + 1) * sizeof(*s->off));
    if (!s->v || !s->pool || !s->sorted || !s->pos || !s->cnt || !s->off)
        return GPUFL_ENOMEM;
    s->ng = ng;
    for (size_t i = 0; i < ng; i++) {
        size_t m = g[i].n < keep ? g[i].n : keep;
        double *tmp = malloc(g[i].n * sizeof(*tmp));
        if (!tmp)
            return GPUFL_ENOMEM;
        for (size_t k = 0; k < g[i].n; k++) {
            if (!isfinite(g[i].v[k]) || g[i].v[k] < 0) {
                free(tmp);
                return GPUFL_EINVAL;
            }
            tmp[k] = g[i].v[k];
        }
        qsort(tmp, g[i].n, sizeof(*tmp), cmp_dbl);
        s->off[i] = s->n;
        /* evenly spaced order statistics: the same distribution, fewer
         * values, so the interval can only get wider (conservative) */
        for (size_t k = 0; k < m; k++)
            s->v[s->n++] =
                tmp[(size_t)(((double)k + 0.5) * (double)g[i].n / (double)m)];
        free(tmp);
    }
    s->off[ng] = s->n;
    /* the pooled order */
    if (!(idx = malloc(s->n * sizeof(*idx))))
        return GPUFL_ENOMEM;
    for (size_t i = 0; i < s->n; i++)
        idx[i] = (vi){ s->v[i], (uint32_t)i };
    qsort(idx, s->n, sizeof(*idx), cmp_vi);
    for (size_t r = 0; r < s->n; r++) {
        s->sorted[r] = idx[r].v;
        s->pos[idx[r].i] = (uint32_t)r;
    }
    free(idx);
    return GPUFL_OK;
}

/* The median of one two-level resample of the side. */
static double side_resample(side *s, uint64_t *rng)
{
    size_t len = 0, lo_rank, hi_rank;
    uint64_t acc = 0;
    double lo = 0;

    memset(s->cnt, 0, s->n * sizeof(*s->cnt));
    for (size_t i = 0; i < s->ng; i++) {
        size_t g = s->ng > 1 ? rng_below(rng, s->ng) : 0;
        size_t o = s->off[g], m = s->off[g + 1] - o;
        for (size_t k = 0; k < m; k++)
            s->cnt[s->pos[o + rng_below(rng, m)]]++;
        len += m;
    }
    lo_rank = (len - 1) / 2;
    hi_rank = len / 2;
    for (size_t r = 0; r < s->n; r++) {
        if (!s->cnt[r])
            continue;
        if (acc <= lo_rank && acc + s->cnt[r] > lo_rank)
            lo = s->sorted[r];
        acc += s->cnt[r];
        if (acc > hi_rank)
            return (lo + s->sorted[r]) / 2;
    }
    return lo;
}

static double side_median(side *s)
{
    memcpy(s->pool, s->v, s->n * sizeof(*s->v));
    return an_median(s->pool, s->n);
}

int an_compare(const an_group *base, size_t nbase, const an_group *cur,
               size_t ncur, const an_opts *o, an_result *r)
{
    side b, c;
    double *ratios = NULL;
    uint64_t rng;
    int rc;

    memset(r, 0, sizeof(*r));
    if (!o || o->resamples < 1 || o->resamples > AN_RESAMPLES_MAX ||
        o->sample_max < 16 || o->sample_max > AN_SAMPLE_MAX ||
        !(o->min_shift >= 0 && o->min_shift < 100) ||
        !(o->conf >= 0.5 && o->conf <= 0.999))
        return GPUFL_EINVAL;
    rc = side_init(&b, base, nbase, o->sample_max);
    if (!rc)
        rc = side_init(&c, cur, ncur, o->sample_max);
    else
        memset(&c, 0, sizeof(c));
    if (rc)
        goto out;
    r->n_base = b.n;
    r->n_cur = c.n;
    r->base_median = side_median(&b);
    r->cur_median = side_median(&c);
    if (!(r->base_median > 0)) {
        rc = GPUFL_EINVAL;
        goto out;
    }
    r->ratio = r->cur_median / r->base_median;
    for (size_t i = 0; nbase > 1 && i < b.ng; i++) {
        size_t m = b.off[i + 1] - b.off[i];
        double d;
        memcpy(b.pool, b.v + b.off[i], m * sizeof(*b.v));
        d = fabs(an_median(b.pool, m) / r->base_median - 1);
        if (d > r->noise)
            r->noise = d;
    }
    r->threshold = r->noise > o->min_shift ? r->noise : o->min_shift;
    r->p = an_mwu_p(b.v, b.n, c.v, c.n);
    if (r->p < 0) {
        rc = GPUFL_ENOMEM;
        goto out;
    }
    ratios = malloc(o->resamples * sizeof(*ratios));
    if (!ratios) {
        rc = GPUFL_ENOMEM;
        goto out;
    }
    rng = o->seed;
    for (uint32_t i = 0; i < o->resamples; i++) {
        double mb = side_resample(&b, &rng), mc = side_resample(&c, &rng);
        /* a resample whose base median is 0 says "infinitely slower" */
        ratios[i] = mb > 0 ? mc / mb : INFINITY;
    }
    qsort(ratios, o->resamples, sizeof(*ratios), cmp_dbl);
    {
        double a = (1 - o->conf) / 2;
        size_t klo = (size_t)floor(a * (double)(o->resamples - 1));
        size_t khi = (size_t)ceil((1 - a) * (double)(o->resamples - 1));
        r->lo = ratios[klo];
        r->hi = ratios[khi];
    }
    if (r->lo > 1 && r->ratio - 1 > r->threshold && r->p < 1 - o->conf)
        r->verdict = AN_SLOWER;
    else if (r->hi < 1 && 1 - r->ratio > r->threshold && r->p < 1 - o->conf)
        r->verdict = AN_FASTER;
out:
    free(ratios);
    side_release(&b);
    side_release(&c);
    return rc;
}
