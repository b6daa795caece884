/*
 * ring.h - per-thread single-producer/single-consumer event rings.
 *
 * Each application thread that records an event gets its own ring on its
 * first event (the one allocation a thread ever makes); the collector thread
 * is the only consumer of all rings.  So producers never share a cache line
 * with each other and never wait: a full ring drops the event and counts it.
 *
 * Slots are fixed 128-byte records (two cache lines): big enough for the
 * largest structured event (a kernel launch); system samples, whose size
 * varies, travel as REC_RAW with a heap body the sampler thread made.
 */
#ifndef GPUFL_CLIENT_RING_H
#define GPUFL_CLIENT_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum rec_type {
    REC_NONE = 0,
    REC_KERNEL,
    REC_MEMCPY,
    REC_MEMSET,
    REC_SYNC,
    REC_MEMOP,
    REC_SCOPE_BEGIN,
    REC_SCOPE_END,
    REC_MARKER,
    REC_COUNTER,
    REC_SASS,
    REC_PCSAMP,
    REC_RAW,
    REC_TYPE_COUNT
};

/* The three streams. */
enum { ST_DEVICE = 0, ST_SCOPE = 1, ST_SYSTEM = 2, ST_COUNT = 3 };

#define REC_MARKER_MAX 100 /* marker text bytes kept */
#define REC_PC_REASONS 8

typedef struct rec {
    uint16_t type; /* enum rec_type */
    uint8_t gen;   /* session generation: stale records are discarded */
    uint8_t flags;
    /* OS thread id of the producer; for a kernel, copy or memset with
     * API times, of the thread that made the API call */
    uint32_t tid;
    uint64_t ts; /* event time, ns (gpufl clock) */
    union {
        struct {
            uint32_t name, dev, stream, corr;
            uint32_t grid[3], block[3];
            uint32_t regs, smem_static, smem_dynamic, local_mem;
            uint64_t end;
            uint64_t api_enter, api_exit;
            float occ;
            uint32_t limiters;
            uint64_t scope;
            uint32_t path, stack;
            uint32_t cfg; /* set by the collector: launch config id */
        } k;
        struct {
            uint32_t kind, dev, dst_dev, stream, corr, flags;
            uint64_t bytes, end, scope;
            uint32_t path, stack;
            uint64_t api_enter, api_exit; /* 0: unknown */
        } cp;                             /* memcpy */
        struct {
            uint32_t dev, stream, corr, value;
            uint64_t bytes, end, scope;
            uint32_t path;
            uint64_t api_enter, api_exit; /* 0: unknown */
        } ms;                             /* memset */
        struct {
            uint32_t kind, dev, stream, corr;
            uint64_t end, scope;
            uint32_t path, stack;
        } sy; /* sync */
        struct {
            uint32_t is_free, kind, dev, stream, corr;
            uint64_t address, bytes, scope;
            uint32_t path, stack;
        } mo; /* memop */
        struct {
            uint64_t token, parent, begin_ts;
            uint32_t name, path, depth;
        } sc; /* scope begin/end */
        struct {
            uint32_t len;
            char text[REC_MARKER_MAX];
            uint64_t scope;
        } mk;
        struct {
            uint32_t name;
            int64_t value;
        } ctr;
        struct {
            uint32_t dev, func, file, line;
            uint64_t pc, inst, thread_inst, sectors, sectors_ideal, scope;
            uint32_t path;
        } sass;
        struct {
            uint32_t dev, func, file, line;
            uint64_t pc, scope;
            uint32_t path, n;
            uint32_t reason[REC_PC_REASONS], samples[REC_PC_REASONS];
        } pc;
        struct {
            uint32_t stream; /* ST_* */
            uint32_t len;
            /* malloc'd JSON members without braces; owned by the record,
             * freed by the consumer */
            char *body;
        } raw;
    } u;
} rec;

_Static_assert(sizeof(rec) <= 128, "ring records are two cache lines");

typedef struct ring {
    /* producer side */
    _Alignas(64) uint64_t head_local;    /* next slot to fill (producer only) */
    uint64_t tail_cache;                 /* last tail seen by the producer */
    uint64_t dropped[ST_COUNT];          /* written by producer only */
    _Atomic uint64_t drop_pub[ST_COUNT]; /* published copy for the collector */
    uint64_t depth_drops;                /* scopes nested deeper than the cap */
    _Atomic uint64_t depth_pub;
    _Alignas(64) _Atomic uint64_t head; /* published head */
    _Alignas(64) _Atomic uint64_t tail; /* consumer's position */
    uint64_t drop_seen[ST_COUNT];       /* consumer only */
    uint64_t depth_seen;
    _Alignas(64) _Atomic int dead; /* owning thread exited */
    uint32_t tid;
    uint32_t mask;
    rec *slots;
} ring;

/* cap must be a power of two >= 64.  Returns NULL on out of memory. */
ring *ring_new(uint32_t cap, uint32_t tid);
void ring_free(ring *r);

/* Producer: a slot to fill, or NULL when full (the caller counts the drop
 * with ring_drop). */
static inline rec *ring_reserve(ring *r)
{
    uint64_t h = r->head_local;
    if (h - r->tail_cache > r->mask) {
        r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (h - r->tail_cache > r->mask)
            return NULL;
    }
    /* The slot a few events ahead was last read by the collector on
     * another core: ask for it in writable state now, so the store that
     * fills it later does not wait for the cache line to move. */
    __builtin_prefetch(&r->slots[(h + 4) & r->mask], 1, 3);
    __builtin_prefetch((const char *)&r->slots[(h + 4) & r->mask] + 64, 1, 3);
    return &r->slots[h & r->mask];
}

static inline void ring_commit(ring *r)
{
    r->head_local++;
    atomic_store_explicit(&r->head, r->head_local, memory_order_release);
}

static inline void ring_drop(ring *r, int stream)
{
    r->dropped[stream]++;
    atomic_store_explicit(&r->drop_pub[stream], r->dropped[stream],
                          memory_order_relaxed);
}

/* Fill level after the last commit, as a fraction of capacity in 1/256. */
static inline uint32_t ring_fill256(const ring *r)
{
    return (uint32_t)(((r->head_local - r->tail_cache) * 256) / (r->mask + 1));
}

#endif
