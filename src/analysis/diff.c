/*
 * diff.c - the name-by-name comparison of two sides for `gpufl diff`
 * (diff.h): building the runs' series, then one compare.h verdict per
 * name or path both sides ran, and the names only one side ran.
 *
 * Why a reservoir past DF_KEEP values: the comparison thins every run to
 * a few thousand order statistics anyway (compare.h), so keeping more only
 * costs memory; a uniform sample keeps the distribution's shape, and a
 * seeded one keeps the result reproducible.
 */
#include "analysis/diff.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const df_verdict_names[6] = { "same", "slower",   "faster",
                                          "new",  "vanished", "varies" };

void df_side_init(df_side *s)
{
    memset(s, 0, sizeof *s);
}

static void group_release(df_group *g)
{
    for (size_t i = 0; i < g->n; i++) {
        free(g->s[i].name);
        free(g->s[i].v);
    }
    free(g->s);
    memset(g, 0, sizeof *g);
}

void df_side_release(df_side *s)
{
    for (size_t i = 0; i < s->n; i++)
        group_release(&s->g[i]);
    free(s->g);
    memset(s, 0, sizeof *s);
}

df_group *df_side_add(df_side *s, const char *id, int *err)
{
    df_group *g;
    if (s->n >= DF_GROUPS_MAX) {
        *err = GPUFL_EFULL;
        return NULL;
    }
    if (s->n == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 8;
        df_group *ng = realloc(s->g, nc * sizeof *ng);
        if (!ng) {
            *err = GPUFL_ENOMEM;
            return NULL;
        }
        s->g = ng;
        s->cap = nc;
    }
    g = &s->g[s->n++];
    memset(g, 0, sizeof *g);
    snprintf(g->id, sizeof g->id, "%s", id ? id : "");
    g->rng = 0x6a09e667f3bcc909ull ^ (uint64_t)s->n;
    return g;
}

df_series *df_group_add(df_group *g, int kind, const char *name, size_t len,
                        int *err)
{
    df_series *x;
    if (g->n >= DF_SERIES_MAX) {
        *err = GPUFL_EFULL;
        return NULL;
    }
    if (g->n == g->cap) {
        size_t nc = g->cap ? 2 * g->cap : 64;
        df_series *ns = realloc(g->s, nc * sizeof *ns);
        if (!ns) {
            *err = GPUFL_ENOMEM;
            return NULL;
        }
        g->s = ns;
        g->cap = nc;
    }
    if (len > DF_NAME_MAX)
        len = DF_NAME_MAX;
    x = &g->s[g->n];
    memset(x, 0, sizeof *x);
    x->kind = kind;
    x->name = malloc(len + 1);
    if (!x->name) {
        *err = GPUFL_ENOMEM;
        return NULL;
    }
    memcpy(x->name, name, len);
    x->name[len] = 0;
    g->n++;
    g->sorted = 0;
    return x;
}

/* splitmix64, as compare.c: the same sample on every platform */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int df_series_push(df_group *g, df_series *s, double dur)
{
    s->calls++;
    s->total += dur;
    if (s->nv < DF_KEEP) {
        if (s->nv == s->cap) {
            size_t nc = s->cap ? 2 * s->cap : 16;
            double *nv;
            if (nc > DF_KEEP)
                nc = DF_KEEP;
            nv = realloc(s->v, nc * sizeof *nv);
            if (!nv)
                return GPUFL_ENOMEM;
            s->v = nv;
            s->cap = nc;
        }
        s->v[s->nv++] = dur;
    } else {
        /* reservoir (Vitter's R): call k replaces a kept value with
         * probability DF_KEEP / k */
        uint64_t j = rng_next(&g->rng) % s->calls;
        if (j < DF_KEEP)
            s->v[j] = dur;
    }
    return GPUFL_OK;
}

static int cmp_series(const void *a, const void *b)
{
    const df_series *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind - y->kind;
    return strcmp(x->name, y->name);
}

int df_group_finish(df_group *g)
{
    size_t w = 0;
    qsort(g->s, g->n, sizeof *g->s, cmp_series);
    for (size_t i = 0; i < g->n; i++) {
        df_series *x = &g->s[i];
        if (w && !cmp_series(&g->s[w - 1], x)) {
            df_series *d = &g->s[w - 1];
            /* the same string under two ids: one series, values kept up
             * to the cap (the merged calls and total stay exact) */
            size_t take = x->nv;
            if (d->nv + take > DF_KEEP)
                take = DF_KEEP - d->nv;
            if (take) {
                double *nv = realloc(d->v, (d->nv + take) * sizeof *nv);
                if (!nv)
                    return GPUFL_ENOMEM;
                memcpy(nv + d->nv, x->v, take * sizeof *nv);
                d->v = nv;
                d->nv += take;
                d->cap = d->nv;
            }
            d->calls += x->calls;
            d->total += x->total;
            free(x->name);
            free(x->v);
            continue;
        }
        g->s[w++] = *x;
    }
    g->n = w;
    g->sorted = 1;
    return GPUFL_OK;
}

static const df_series *find(const df_group *g, int kind, const char *name)
{
    df_series key;
    memset(&key, 0, sizeof key);
    key.kind = kind;
    key.name = (char *)(uintptr_t)name;
    return bsearch(&key, g->s, g->n, sizeof *g->s, cmp_series);
}

/* The groups of side that ran (kind, name): into gr, with their calls and
 * totals summed; returns how many. */
static size_t gather(const df_side *side, int kind, const char *name,
                     an_group *gr, uint64_t *min_calls, double *calls,
                     double *total)
{
    size_t n = 0;
    *min_calls = UINT64_MAX;
    *calls = *total = 0;
    for (size_t i = 0; i < side->n; i++) {
        const df_series *x = find(&side->g[i], kind, name);
        if (!x)
            continue;
        gr[n].v = x->v;
        gr[n].n = x->nv;
        n++;
        if (x->calls < *min_calls)
            *min_calls = x->calls;
        *calls += (double)x->calls;
        *total += x->total;
    }
    if (n) {
        *calls /= (double)n;
        *total /= (double)n;
    }
    return n;
}

static int rank_of(const df_finding *f)
{
    static const int order[6] = { 4, 0, 1, 2, 3, 5 };
    return order[f->verdict];
}

static int cmp_finding(const void *a, const void *b)
{
    const df_finding *x = a, *y = b;
    int rx = rank_of(x), ry = rank_of(y);
    if (rx != ry)
        return rx - ry;
    if (x->verdict == DF_SLOWER && x->r.ratio != y->r.ratio)
        return x->r.ratio < y->r.ratio ? 1 : -1;
    if (x->verdict == DF_FASTER && x->r.ratio != y->r.ratio)
        return x->r.ratio > y->r.ratio ? 1 : -1;
    if (x->kind != y->kind)
        return x->kind - y->kind;
    return strcmp(x->name, y->name);
}

/* Adds a finding for every name of `from` not yet in res (a linear check
 * against what is there would be quadratic: names are walked in order
 * per group instead, and a name is added when its first holder is this
 * group). */
static int add_names(const df_side *base, const df_side *cur, const an_opts *o,
                     const df_side *from, size_t gi, an_group *gb, an_group *gc,
                     df_result *res, size_t *cap)
{
    const df_group *g = &from->g[gi];
    for (size_t i = 0; i < g->n; i++) {
        const df_series *x = &g->s[i];
        size_t nb, nc, first = 0;
        uint64_t minb, minc;
        df_finding *f;
        int rc;
        /* the first group of either side (base first) that holds it adds
         * it, so each name is added once */
        if (from == cur)
            for (size_t k = 0; k < base->n && !first; k++)
                first = find(&base->g[k], x->kind, x->name) != NULL;
        for (size_t k = 0; k < gi && !first; k++)
            first = find(&from->g[k], x->kind, x->name) != NULL;
        if (first)
            continue;
        if (res->n == *cap) {
            size_t ncap = *cap ? 2 * *cap : 256;
            df_finding *nf = realloc(res->f, ncap * sizeof *nf);
            if (!nf)
                return GPUFL_ENOMEM;
            res->f = nf;
            *cap = ncap;
        }
        f = &res->f[res->n++];
        memset(f, 0, sizeof *f);
        f->kind = x->kind;
        f->name = x->name;
        nb = gather(base, x->kind, x->name, gb, &minb, &f->base_calls,
                    &f->base_total);
        nc = gather(cur, x->kind, x->name, gc, &minc, &f->cur_calls,
                    &f->cur_total);
        if (!nb) {
            f->verdict = DF_NEW;
            res->added++;
            continue;
        }
        if (!nc) {
            f->verdict = nb == base->n ? DF_VANISHED : DF_VARIES;
            res->vanished += f->verdict == DF_VANISHED;
            continue;
        }
        if (nb < base->n || nc < cur->n) {
            f->verdict = DF_VARIES;
            continue;
        }
        if (minb < DF_MIN_CALLS || minc < DF_MIN_CALLS)
            continue; /* too few calls: the same, not judged */
        rc = an_compare(gb, nb, gc, nc, o, &f->r);
        if (rc == GPUFL_EINVAL)
            continue; /* a base median of 0 ns: no ratio */
        if (rc)
            return rc;
        f->judged = 1;
        res->compared[x->kind == DF_SCOPE]++;
        if (f->r.verdict == AN_SLOWER) {
            f->verdict = DF_SLOWER;
            res->slower++;
        } else if (f->r.verdict == AN_FASTER) {
            f->verdict = DF_FASTER;
            res->faster++;
        }
    }
    return GPUFL_OK;
}

/* Many names are compared at once: at a 5 % level each, one in twenty
 * unchanged names would pass the test by chance, and a diff compares
 * dozens.  So a shift counts only when its Mann-Whitney p is below
 * alpha / m, m the names and paths judged (Bonferroni): the chance that
 * any unchanged one is reported stays below alpha.  The interval and the
 * threshold rules still apply as they are. */
static void bonferroni(df_result *res, double alpha)
{
    size_t m = res->compared[0] + res->compared[1];
    for (size_t i = 0; i < res->n && m > 1; i++) {
        df_finding *f = &res->f[i];
        if ((f->verdict != DF_SLOWER && f->verdict != DF_FASTER) ||
            f->r.p < alpha / (double)m)
            continue;
        if (f->verdict == DF_SLOWER)
            res->slower--;
        else
            res->faster--;
        f->verdict = DF_SAME;
    }
}

int df_compare(const df_side *base, const df_side *cur, const an_opts *o,
               df_result *res)
{
    size_t cap = 0;
    int rc = GPUFL_OK;
    /* scratch: the groups of one name on each side */
    an_group *gb = malloc(2 * DF_GROUPS_MAX * sizeof *gb);
    memset(res, 0, sizeof *res);
    if (!gb)
        return GPUFL_ENOMEM;
    if (!base->n || !cur->n) {
        free(gb);
        return GPUFL_EINVAL;
    }
    for (size_t i = 0; i < base->n && !rc; i++)
        rc =
            add_names(base, cur, o, base, i, gb, gb + DF_GROUPS_MAX, res, &cap);
    for (size_t i = 0; i < cur->n && !rc; i++)
        rc = add_names(base, cur, o, cur, i, gb, gb + DF_GROUPS_MAX, res, &cap);
    free(gb);
    if (rc) {
        df_result_release(res);
        return rc;
    }
    bonferroni(res, 1 - o->conf);
    if (res->n)
        qsort(res->f, res->n, sizeof *res->f, cmp_finding);
    return GPUFL_OK;
}

void df_result_release(df_result *res)
{
    free(res->f);
    memset(res, 0, sizeof *res);
}
