/*
 * kbcache.h - a bounded in-memory cache of decoded kernel blocks for the
 * read path (store_sql_kblocks_read.c; docs/server.md "Kernel blocks
 * (store)"): a UI paging forward through a session reads the same few
 * blocks page after page, and decoding them is most of a page's cost.
 *
 * An entry is a block's decoded events and a copy of its bytes, under the
 * block's key (session, stream, seq_lo).  A lookup compares the bytes too,
 * so an entry whose block was merged, replaced or deleted (a key taken
 * again) is never answered: what is cached is a pure function of the
 * bytes.  Only a block read twice within the last KBC_GHOSTS misses is
 * kept (a page at a random place reads blocks once; decoding one whole to
 * keep it costs more than the page's own partial decode).  At most
 * max_bytes (events and bytes counted) and KBC_ENTRIES entries are held;
 * the least recently used go first.  Thread-safe (one mutex).
 */
#ifndef GPUFL_SERVER_KBCACHE_H
#define GPUFL_SERVER_KBCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "kblock.h"

/* Entries at most, whatever their size. */
#define KBC_ENTRIES 256
/* Misses remembered for the second-touch rule. */
#define KBC_GHOSTS 64

typedef struct kbcache kbcache;

typedef struct kbcache_key {
    int64_t sess, stream, seq_lo;
} kbcache_key;

/* Counters since kbcache_new (/metrics: srv_kbc_stats, store.h). */
typedef struct kbcache_stats {
    uint64_t bytes, entries, max_bytes;
    uint64_t hits, misses, kept, evicted;
} kbcache_stats;

/* A cache of at most max_bytes (0: none - every call then misses).
 * NULL when out of memory. */
kbcache *kbcache_new(uint64_t max_bytes);
void kbcache_free(kbcache *c);

/* Called on a hit with the block's events (borrowed: valid during the
 * call only, under the cache's lock - so fn must not call the cache). */
typedef int (*kbcache_fn)(void *arg, const kblock_ev *ev, size_t n);

/*
 * On a hit (k and the bytes b[0..len) equal an entry's): fn(arg, events)
 * runs, its return in *rc, and 1 is returned.  On a miss 0, and *keep
 * says whether the caller should decode the block whole and kbcache_put
 * it (the second miss of k within the last KBC_GHOSTS misses).
 */
int kbcache_get(kbcache *c, const kbcache_key *k, const unsigned char *b,
                size_t len, kbcache_fn fn, void *arg, int *rc, int *keep);

/* Keeps copies of ev[0..n) and b[0..len) under k (replacing an entry of
 * k), evicting the least recently used first to stay within the cap.
 * Best effort: an entry bigger than the whole cap, or no memory, keeps
 * nothing.  0, or GPUFL_ETOOBIG / GPUFL_ENOMEM. */
int kbcache_put(kbcache *c, const kbcache_key *k, const unsigned char *b,
                size_t len, const kblock_ev *ev, size_t n);

void kbcache_stats_get(kbcache *c, kbcache_stats *st);

#endif
