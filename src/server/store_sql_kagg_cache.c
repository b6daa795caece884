/*
 * store_sql_kagg_cache.c - the kagg rows kept by the writer between
 * batches (sq_kac, store_sql_int.h), so a batch merges its kernel
 * aggregates with the stored rows without reading them back (PostgreSQL's
 * upsert, store_sql_roll_pg.c, and SQLite's, store_sql_ingest_sqlite.c).
 *
 * The batch writer merged each batch's aggregates into kagg by a SELECT of
 * the stored rows for the batch's (session, name) keys, a merge here and an
 * upsert of the result (store_sql_roll_pg.c): the SELECT was ~95 ms of
 * PostgreSQL's exec time per 1M bench kernels (docs/server.md "PostgreSQL
 * ingest's CPU").  The writer wrote those rows itself, so it keeps them:
 * per session, next to its kext heaps (store_sql_ext.c), whose validity it
 * shares.  Every batch that adds kernels to a session feeds its heaps and
 * bumps sessions.kext_ver in the same transaction; a server whose slot's
 * version differs (another server wrote the session since) drops the slot,
 * this cache with it, and a rollback drops every slot.  Batches take turns
 * (the advisory lock), so a slot checked in this transaction stays right
 * until its COMMIT.  Keys not in the cache (a name new to this writer, one
 * past the caps, a session whose slot went) are read from kagg as before.
 */
#include "store_sql_int.h"

#include <stdlib.h>
#include <string.h>

/* A stored kagg row: its columns, the histogram as stored (encoded) */
typedef struct kc_row {
    uint64_t n, total, min, max, n_occ;
    double sum_occ;
    int64_t regs, smem;
    unsigned char *h;
    uint32_t hn, hcap;
    int ok; /* 0: not known (read it from kagg) */
} kc_row;

void sq_kac_release(sq_kac *c)
{
    const uint64_t *k;

    for (size_t i = 0; i < c->m.cap; i++) {
        kc_row *r = rl_map_at(&c->m, i, &k);
        if (r)
            free(r->h);
    }
    rl_map_release(&c->m);
    c->bytes = 0;
}

/* The cache of the session of key k, looked up once per run of keys of
 * one session (*last, *c carried between calls). */
static sq_kac *kc_of(srv_store *s, const uint64_t *k, int64_t *last, int *have,
                     sq_kac **c)
{
    if (!*have || *last != (int64_t)k[0]) {
        *c = sq_ext_kac(s, (int64_t)k[0]);
        *last = (int64_t)k[0];
        *have = 1;
    }
    return *c;
}

size_t sq_kac_merge(srv_store *s)
{
    const uint64_t *k;
    sq_kac *c = NULL;
    int64_t last = 0;
    int have = 0;
    size_t miss = 0;

    for (size_t i = 0; i < s->kagg.cap; i++) {
        sq_kagg *a = rl_map_at(&s->kagg, i, &k);
        uint64_t nk[4];
        kc_row *r;

        if (!a)
            continue;
        nk[0] = k[1], nk[1] = nk[2] = nk[3] = 0;
        c = kc_of(s, k, &last, &have, &c);
        r = c ? rl_map_find(&c->m, nk) : NULL;
        if (!r || !r->ok) {
            a->cached = 0;
            miss++;
            continue;
        }
        /* as sq_kagg_merge does with the row read back */
        a->n += r->n;
        a->total = rl_sat_add(a->total, r->total);
        a->min = r->min < a->min ? r->min : a->min;
        a->max = r->max > a->max ? r->max : a->max;
        a->sum_occ += r->sum_occ;
        a->n_occ += r->n_occ;
        if (r->regs > a->regs)
            a->regs = r->regs;
        if (r->smem > a->smem)
            a->smem = r->smem;
        (void)rl_hist_decode_add(r->h, r->hn, a->hist);
        a->cached = 1;
    }
    return miss;
}

/* Row k's merged aggregate a, its histogram encoded h[0, hn), into
 * cache c (a name past the caps is marked unknown: read next time). */
static void kac_keep(sq_kac *c, const uint64_t *k, const sq_kagg *a,
                     const unsigned char *h, size_t hn)
{
    uint64_t nk[4] = { k[1], 0, 0, 0 };
    kc_row *r;
    int fresh;

    if (!c->m.vsize)
        rl_map_init(&c->m, sizeof(kc_row), SQ_KAC_NAMES);
    if (!(r = rl_map_get(&c->m, nk, &fresh)))
        return; /* past SQ_KAC_NAMES: never known */
    if (hn > r->hcap) {
        unsigned char *p;
        if (c->bytes - r->hcap + hn > SQ_KAC_BYTES ||
            !(p = realloc(r->h, hn))) {
            r->ok = 0;
            return;
        }
        c->bytes += hn - r->hcap;
        r->h = p;
        r->hcap = (uint32_t)hn;
    }
    memcpy(r->h, h, hn);
    r->hn = (uint32_t)hn;
    r->n = a->n;
    r->total = a->total;
    r->min = a->min;
    r->max = a->max;
    r->n_occ = a->n_occ;
    r->sum_occ = a->sum_occ;
    r->regs = a->regs;
    r->smem = a->smem;
    r->ok = 1;
}

void sq_kac_store(srv_store *s)
{
    const uint64_t *k;
    sq_kac *c = NULL;
    int64_t last = 0;
    int have = 0;
    unsigned char h[RL_HIST_ENC_MAX];

    for (size_t i = 0; i < s->kagg.cap; i++) {
        const sq_kagg *a = rl_map_at(&s->kagg, i, &k);
        if (a && (c = kc_of(s, k, &last, &have, &c)) != NULL)
            kac_keep(c, k, a, h, rl_hist_encode(a->hist, h));
    }
}

void sq_kac_keep(srv_store *s, const uint64_t *k, const sq_kagg *a,
                 const unsigned char *h, size_t hn)
{
    sq_kac *c = sq_ext_kac(s, (int64_t)k[0]);

    if (c)
        kac_keep(c, k, a, h, hn);
}
