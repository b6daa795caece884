/*
 * kbcache.c - the bounded cache of decoded kernel blocks (kbcache.h).
 *
 * A fixed table of KBC_ENTRIES slots searched linearly (a few hundred key
 * compares cost less than one block's decode by three orders), a clock
 * for least-recently-used eviction, and a ring of the last KBC_GHOSTS
 * missed keys for the second-touch rule.  A hit runs the caller's
 * function under the lock, so an entry is never freed while it is read;
 * the function is a pass over the events (tens of microseconds), short
 * next to the decode it saves.
 */
#include "kbcache.h"

#include <gpufl/gpufl.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct kbc_ent {
    kbcache_key k;
    unsigned char *b; /* the block's bytes (NULL: slot free) */
    size_t len, n;
    kblock_ev *ev;
    uint64_t used; /* the clock at its last hit or put */
} kbc_ent;

struct kbcache {
    pthread_mutex_t lock;
    uint64_t max, bytes, clock;
    uint64_t hits, misses, kept, evicted;
    kbc_ent ent[KBC_ENTRIES];
    kbcache_key ghost[KBC_GHOSTS];
    unsigned nghost, gnext;
};

static int key_eq(const kbcache_key *a, const kbcache_key *b)
{
    return a->sess == b->sess && a->stream == b->stream &&
           a->seq_lo == b->seq_lo;
}

static uint64_t ent_bytes(const kbc_ent *e)
{
    return (uint64_t)e->len + (uint64_t)e->n * sizeof(kblock_ev);
}

static void ent_drop(kbcache *c, kbc_ent *e)
{
    c->bytes -= ent_bytes(e);
    free(e->b);
    free(e->ev);
    memset(e, 0, sizeof(*e));
}

kbcache *kbcache_new(uint64_t max_bytes)
{
    kbcache *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    if (pthread_mutex_init(&c->lock, NULL)) {
        free(c);
        return NULL;
    }
    c->max = max_bytes;
    return c;
}

void kbcache_free(kbcache *c)
{
    if (!c)
        return;
    for (unsigned i = 0; i < KBC_ENTRIES; i++)
        if (c->ent[i].b)
            ent_drop(c, &c->ent[i]);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* The ghost ring: whether k missed lately (and, if not, it is now). */
static int ghost_seen(kbcache *c, const kbcache_key *k)
{
    for (unsigned i = 0; i < c->nghost; i++)
        if (key_eq(&c->ghost[i], k))
            return 1;
    c->ghost[c->gnext] = *k;
    c->gnext = (c->gnext + 1) % KBC_GHOSTS;
    if (c->nghost < KBC_GHOSTS)
        c->nghost++;
    return 0;
}

int kbcache_get(kbcache *c, const kbcache_key *k, const unsigned char *b,
                size_t len, kbcache_fn fn, void *arg, int *rc, int *keep)
{
    *keep = 0;
    if (!c || !c->max)
        return 0;
    pthread_mutex_lock(&c->lock);
    for (unsigned i = 0; i < KBC_ENTRIES; i++) {
        kbc_ent *e = &c->ent[i];
        if (!e->b || !key_eq(&e->k, k))
            continue;
        if (e->len != len || memcmp(e->b, b, len)) {
            /* the key's block changed (merged, replaced): forget it */
            ent_drop(c, e);
            break;
        }
        e->used = ++c->clock;
        c->hits++;
        *rc = fn(arg, e->ev, e->n);
        pthread_mutex_unlock(&c->lock);
        return 1;
    }
    c->misses++;
    *keep = ghost_seen(c, k);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

int kbcache_put(kbcache *c, const kbcache_key *k, const unsigned char *b,
                size_t len, const kblock_ev *ev, size_t n)
{
    kbc_ent e = { *k, NULL, len, n, NULL, 0 };
    uint64_t need = ent_bytes(&e);
    kbc_ent *slot = NULL;

    if (!c || need > c->max)
        return GPUFL_ETOOBIG;
    /* copied before the lock: a put's memcpy does not hold up hits */
    e.b = malloc(len ? len : 1);
    e.ev = malloc((n ? n : 1) * sizeof(*ev));
    if (!e.b || !e.ev) {
        free(e.b);
        free(e.ev);
        return GPUFL_ENOMEM;
    }
    memcpy(e.b, b, len);
    memcpy(e.ev, ev, n * sizeof(*ev));
    pthread_mutex_lock(&c->lock);
    for (unsigned i = 0; i < KBC_ENTRIES; i++)
        if (c->ent[i].b && key_eq(&c->ent[i].k, k))
            ent_drop(c, &c->ent[i]);
    for (;;) {
        kbc_ent *old = NULL;
        slot = NULL;
        for (unsigned i = 0; i < KBC_ENTRIES; i++) {
            kbc_ent *x = &c->ent[i];
            if (!x->b) {
                if (!slot)
                    slot = x;
            } else if (!old || x->used < old->used) {
                old = x;
            }
        }
        if ((slot && c->bytes + need <= c->max) || !old)
            break;
        /* full (bytes or slots): the least recently used goes */
        ent_drop(c, old);
        c->evicted++;
    }
    if (!slot) { /* not reached: need <= max, and no entry left */
        pthread_mutex_unlock(&c->lock);
        free(e.b);
        free(e.ev);
        return GPUFL_EINTERNAL;
    }
    e.used = ++c->clock;
    *slot = e;
    c->bytes += need;
    c->kept++;
    pthread_mutex_unlock(&c->lock);
    return GPUFL_OK;
}

void kbcache_stats_get(kbcache *c, kbcache_stats *st)
{
    memset(st, 0, sizeof(*st));
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    st->bytes = c->bytes;
    st->max_bytes = c->max;
    for (unsigned i = 0; i < KBC_ENTRIES; i++)
        st->entries += c->ent[i].b != NULL;
    st->hits = c->hits;
    st->misses = c->misses;
    st->kept = c->kept;
    st->evicted = c->evicted;
    pthread_mutex_unlock(&c->lock);
}
