/*
 * rollup.h - the in-memory pieces of ingest-time rollups, shared by the
 * store backends: a small open-addressing map keyed by four integers, the
 * log-bucket duration histogram, and the timeline level geometry.
 *
 * A batch accumulates its kernel aggregates, timeline buckets and
 * per-scope kernel totals here; the backend then merges each touched
 * entry into the database once per batch, so a million kernels cost a few
 * thousand row updates, not a million.
 */
#ifndef GPUFL_SERVER_ROLLUP_H
#define GPUFL_SERVER_ROLLUP_H

#include <stddef.h>
#include <stdint.h>

/* ---- map ---- */

typedef struct rl_map {
    uint64_t *keys; /* 4 per slot */
    uint8_t *used;  /* 1 per slot */
    char *vals;     /* vsize per slot, zeroed on insert */
    size_t vsize, cap, n, max;
} rl_map;

/* vsize: bytes per value; max: most entries ever held (EFULL past it). */
void rl_map_init(rl_map *m, size_t vsize, size_t max);
void rl_map_release(rl_map *m);
void rl_map_clear(rl_map *m);
/* The value for key k[4], inserted zeroed if new (*fresh = 1); NULL when
 * out of memory or over max. */
void *rl_map_get(rl_map *m, const uint64_t *k, int *fresh);
/* Looks up without inserting. */
void *rl_map_find(const rl_map *m, const uint64_t *k);
/* Iteration: slot index i from 0 to m->cap; NULL for empty slots. */
void *rl_map_at(const rl_map *m, size_t i, const uint64_t **k);

/* ---- histogram ---- */

/* Durations: exact below 32 ns, then 16 buckets per power of two, so a
 * reported quantile (the bucket's midpoint) is within 1/32 = 3.2 % of a
 * value actually in that bucket. */
#define RL_HIST_SUB 16
#define RL_HIST_N 1024
uint32_t rl_hist_bucket(uint64_t v);
uint64_t rl_hist_mid(uint32_t b);
/* The q-quantile (0..1) of counts[RL_HIST_N] holding n values in all. */
uint64_t rl_hist_quantile(const uint64_t *counts, uint64_t n, double q);

/* ---- timeline ---- */

/* Levels of the timeline summary: bucket width 2^(RL_TL_SHIFT0 + 4*level)
 * ns, i.e. 65.5 us, 1.05 ms, 16.8 ms, 268 ms, 4.3 s, 68.7 s. */
#define RL_TL_LEVELS 6
#define RL_TL_SHIFT0 16
/* A kernel spreads its busy time over at most this many buckets of one
 * level; beyond it the time goes to its first bucket (documented). */
#define RL_TL_SPAN_MAX 1024
static inline unsigned rl_tl_shift(int level)
{
    return RL_TL_SHIFT0 + 4u * (unsigned)level;
}

#endif
