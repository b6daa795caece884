/*
 * ring.c - allocation of per-thread rings (the inline fast paths are in
 * ring.h).
 */
#include "ring.h"

#include <stdlib.h>
#include <string.h>

ring *ring_new(uint32_t cap, uint32_t tid)
{
    ring *r;
    if (cap < 64 || (cap & (cap - 1)))
        return NULL;
    r = aligned_alloc(64, sizeof *r);
    if (!r)
        return NULL;
    memset(r, 0, sizeof *r);
    r->slots = aligned_alloc(64, (size_t)cap * sizeof(rec));
    if (!r->slots) {
        free(r);
        return NULL;
    }
    r->mask = cap - 1;
    r->tid = tid;
    atomic_init(&r->head, 0);
    atomic_init(&r->tail, 0);
    atomic_init(&r->dead, 0);
    for (int i = 0; i < ST_COUNT; i++)
        atomic_init(&r->drop_pub[i], 0);
    return r;
}

void ring_free(ring *r)
{
    if (!r)
        return;
    free(r->slots);
    free(r);
}
