/*
 * rollup.c - the map, histogram and timeline helpers of rollup.h.
 *
 * The map hashes four 64-bit words with a multiply-xorshift mix; linear
 * probing at <= 50 % load keeps lookups short without tombstones (entries
 * are only ever cleared all at once).
 */
#include "rollup.h"

#include <stdlib.h>
#include <string.h>

/* Generations are unique across maps and threads, so a memo of a map
 * released and set up again (or of another map) never matches. */
static uint64_t gen_next(void)
{
    static uint64_t g;
    return __atomic_add_fetch(&g, 1, __ATOMIC_RELAXED);
}

void rl_map_init(rl_map *m, size_t vsize, size_t max)
{
    memset(m, 0, sizeof(*m));
    m->vsize = vsize;
    m->max = max;
    m->gen = gen_next();
}

void rl_map_release(rl_map *m)
{
    free(m->keys);
    free(m->used);
    free(m->vals);
    m->keys = NULL;
    m->used = NULL;
    m->vals = NULL;
    m->cap = m->n = 0;
    m->gen = gen_next();
}

void rl_map_clear(rl_map *m)
{
    if (m->used)
        memset(m->used, 0, m->cap);
    m->n = 0;
    m->gen = gen_next();
}

static uint64_t mix(const uint64_t *k)
{
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 4; i++) {
        h ^= k[i];
        h *= 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    return h;
}

static size_t slot(const rl_map *m, const uint64_t *k)
{
    size_t i = (size_t)mix(k) & (m->cap - 1);
    while (m->used[i] && memcmp(m->keys + 4 * i, k, 32) != 0)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int rehash(rl_map *m, size_t ncap)
{
    rl_map o = *m;
    m->keys = malloc(ncap * 32);
    m->used = calloc(ncap, 1);
    m->vals = malloc(ncap * m->vsize);
    if (!m->keys || !m->used || !m->vals) {
        free(m->keys);
        free(m->used);
        free(m->vals);
        *m = o;
        return -1;
    }
    m->cap = ncap;
    for (size_t i = 0; i < o.cap; i++) {
        size_t j;
        if (!o.used[i])
            continue;
        j = slot(m, o.keys + 4 * i);
        m->used[j] = 1;
        memcpy(m->keys + 4 * j, o.keys + 4 * i, 32);
        memcpy(m->vals + j * m->vsize, o.vals + i * o.vsize, m->vsize);
    }
    free(o.keys);
    free(o.used);
    free(o.vals);
    m->gen = gen_next();
    return 0;
}

void *rl_map_find(const rl_map *m, const uint64_t *k)
{
    size_t i;
    if (!m->cap)
        return NULL;
    i = slot(m, k);
    return m->used[i] ? m->vals + i * m->vsize : NULL;
}

void *rl_map_get(rl_map *m, const uint64_t *k, int *fresh)
{
    size_t i;

    *fresh = 0;
    if ((m->n + 1) * 2 > m->cap && rehash(m, m->cap ? m->cap * 2 : 64))
        return NULL;
    i = slot(m, k);
    if (!m->used[i]) {
        if (m->n >= m->max)
            return NULL;
        m->used[i] = 1;
        memcpy(m->keys + 4 * i, k, 32);
        memset(m->vals + i * m->vsize, 0, m->vsize);
        m->n++;
        *fresh = 1;
    }
    return m->vals + i * m->vsize;
}

static int memo_hit(const rl_map *m, const rl_memo *c, const uint64_t *k)
{
    return c->v && c->gen == m->gen && c->k[0] == k[0] && c->k[1] == k[1] &&
           c->k[2] == k[2] && c->k[3] == k[3];
}

void *rl_map_find_memo(const rl_map *m, rl_memo *c, const uint64_t *k)
{
    void *v;

    if (memo_hit(m, c, k))
        return c->v;
    v = rl_map_find(m, k);
    if (v) {
        c->v = v;
        c->gen = m->gen;
        memcpy(c->k, k, sizeof(c->k));
    }
    return v;
}

void *rl_map_get_memo(rl_map *m, rl_memo *c, const uint64_t *k, int *fresh)
{
    void *v;

    if (memo_hit(m, c, k)) {
        *fresh = 0;
        return c->v;
    }
    v = rl_map_get(m, k, fresh);
    /* rl_map_get may have rehashed: the gen after it */
    c->v = v;
    c->gen = m->gen;
    memcpy(c->k, k, sizeof(c->k));
    return v;
}

void *rl_map_at(const rl_map *m, size_t i, const uint64_t **k)
{
    if (i >= m->cap || !m->used[i])
        return NULL;
    *k = m->keys + 4 * i;
    return m->vals + i * m->vsize;
}

uint32_t rl_hist_bucket(uint64_t v)
{
    int msb;
    uint32_t b;

    if (v < 2 * RL_HIST_SUB)
        return (uint32_t)v;
    msb = 63 - __builtin_clzll(v);
    /* msb >= 5: 16 sub-buckets from the 4 bits under the top one */
    b = 2 * RL_HIST_SUB + (uint32_t)(msb - 5) * RL_HIST_SUB +
        (uint32_t)((v >> (msb - 4)) & (RL_HIST_SUB - 1));
    return b < RL_HIST_N ? b : RL_HIST_N - 1;
}

uint64_t rl_hist_mid(uint32_t b)
{
    uint32_t msb, sub;
    uint64_t lo, w;

    if (b < 2 * RL_HIST_SUB)
        return b;
    msb = (b - 2 * RL_HIST_SUB) / RL_HIST_SUB + 5;
    sub = (b - 2 * RL_HIST_SUB) % RL_HIST_SUB;
    w = 1ull << (msb - 4);
    lo = (1ull << msb) + sub * w;
    return lo + w / 2;
}

uint64_t rl_hist_quantile(const uint64_t *c, uint64_t n, double q)
{
    uint64_t rank, seen = 0;

    if (n == 0)
        return 0;
    rank = (uint64_t)(q * (double)(n - 1)) + 1;
    for (uint32_t b = 0; b < RL_HIST_N; b++) {
        seen += c[b];
        if (seen >= rank)
            return rl_hist_mid(b);
    }
    return rl_hist_mid(RL_HIST_N - 1);
}

/* bucket b holds [lo, lo + w) */
static void hist_span(uint32_t b, double *lo, double *w)
{
    uint32_t msb, sub;

    if (b < 2 * RL_HIST_SUB) {
        *lo = b;
        *w = 1;
        return;
    }
    msb = (b - 2 * RL_HIST_SUB) / RL_HIST_SUB + 5;
    sub = (b - 2 * RL_HIST_SUB) % RL_HIST_SUB;
    *w = (double)(1ull << (msb - 4));
    *lo = (double)(1ull << msb) + sub * *w;
}

void rl_hist_sample(const uint64_t *c, uint64_t n, double *out, size_t m)
{
    uint64_t seen = 0;
    uint32_t b = 0;

    for (size_t k = 0; k < m && n; k++) {
        double target = ((double)k + 0.5) * (double)n / (double)m, lo, w;
        while (b < RL_HIST_N - 1 && (double)(seen + c[b]) <= target)
            seen += c[b++];
        hist_span(b, &lo, &w);
        /* the exact buckets (below 32 ns) hold one value each */
        out[k] = b < 2 * RL_HIST_SUB || !c[b]
                     ? lo
                     : lo + w * (target - (double)seen) / (double)c[b];
    }
}

/* LEB128 varints. */
static size_t put_varint(unsigned char *o, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        o[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    o[n++] = (unsigned char)v;
    return n;
}

static int get_varint(const unsigned char *p, size_t n, size_t *i, uint64_t *v)
{
    *v = 0;
    for (unsigned sh = 0; *i < n && sh < 64; sh += 7) {
        unsigned char b = p[(*i)++];
        *v |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

_Static_assert(RL_HIST_N % 8 == 0, "rl_hist_encode reads eight at a time");

size_t rl_hist_encode(const uint64_t *h, unsigned char *out)
{
    size_t n = 0;
    uint32_t next = 0;

    out[n++] = RL_HIST_TAG;
    /* a name's durations fill a few dozen of the 1024 buckets: the empty
     * ones are passed eight at a time (~8 500 instructions a name and
     * batch for the scan one by one) */
    for (uint32_t g = 0; g < RL_HIST_N; g += 8) {
        if (!(h[g] | h[g + 1] | h[g + 2] | h[g + 3] | h[g + 4] | h[g + 5] |
              h[g + 6] | h[g + 7]))
            continue;
        for (uint32_t b = g; b < g + 8; b++) {
            if (!h[b])
                continue;
            n += put_varint(out + n, b - next);
            n += put_varint(out + n, h[b]);
            next = b + 1;
        }
    }
    if (n == RL_HIST_N * sizeof(uint64_t)) {
        /* the dense form's length: one pad byte keeps them apart */
        memmove(out + 2, out + 1, n - 1);
        out[0] = RL_HIST_TAG_PAD;
        out[1] = 0;
        n++;
    }
    return n;
}

int rl_hist_decode_add(const void *blob, size_t n, uint64_t *h)
{
    const unsigned char *p = blob;
    size_t i = 1;
    uint64_t b = 0;

    if (!p || n == 0)
        return 0;
    if (n == RL_HIST_N * sizeof(uint64_t)) {
        /* the dense form of schema 1 and 2: RL_HIST_N native uint64 */
        for (uint32_t k = 0; k < RL_HIST_N; k++) {
            uint64_t v;
            memcpy(&v, p + (size_t)k * 8, 8);
            h[k] += v;
        }
        return 0;
    }
    if (p[0] == RL_HIST_TAG_PAD)
        i = 2;
    else if (p[0] != RL_HIST_TAG)
        return -1;
    while (i < n) {
        uint64_t gap, v;
        if (get_varint(p, n, &i, &gap) || get_varint(p, n, &i, &v))
            return -1;
        b += gap;
        if (b >= RL_HIST_N)
            return -1;
        h[b++] += v;
    }
    return 0;
}
