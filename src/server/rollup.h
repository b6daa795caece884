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
    /* new (process-wide unique) whenever values may move or go: init,
     * clear, rehash, release - what an rl_memo checks */
    uint64_t gen;
} rl_map;

/* One remembered entry of a map: a kernel's rollup keys repeat from one
 * kernel to the next (its stream's timeline bucket, its scope), so the
 * last key is checked before the hash.  Valid while the map's gen is the
 * one it was taken at; a zeroed memo is empty. */
typedef struct rl_memo {
    uint64_t k[4];
    void *v;
    uint64_t gen;
} rl_memo;

/* vsize: bytes per value; max: most entries ever held (EFULL past it). */
void rl_map_init(rl_map *m, size_t vsize, size_t max);
void rl_map_release(rl_map *m);
void rl_map_clear(rl_map *m);
/* The value for key k[4], inserted zeroed if new (*fresh = 1); NULL when
 * out of memory or over max. */
void *rl_map_get(rl_map *m, const uint64_t *k, int *fresh);
/* rl_map_get through memo c: the memo's value when its key is k and the
 * map has not changed shape since (no clear or rehash), else the map's
 * (and c remembers it). */
void *rl_map_get_memo(rl_map *m, rl_memo *c, const uint64_t *k, int *fresh);
/* Looks up without inserting. */
void *rl_map_find(const rl_map *m, const uint64_t *k);
/* rl_map_find through memo c (a miss is not remembered). */
void *rl_map_find_memo(const rl_map *m, rl_memo *c, const uint64_t *k);
/* Iteration: slot index i from 0 to m->cap; NULL for empty slots. */
void *rl_map_at(const rl_map *m, size_t i, const uint64_t **k);

/* ---- sums ---- */

/* a + b saturating at 2^63-1: rollup sums of durations land in signed
 * 64-bit columns, and a few absurd (but valid) durations must neither wrap
 * them negative nor fail a batch (PostgreSQL: "bigint out of range") */
static inline uint64_t rl_sat_add(uint64_t a, uint64_t b)
{
    uint64_t c = a + b;
    return c < a || c > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : c;
}

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
/* Stored form: a tag byte, then for each non-empty bucket the gap from
 * the previous one's successor and its count, as LEB128 varints - a
 * kernel name's durations fill a few dozen of the 1024 buckets, so this
 * is ~100 bytes where the dense array was 8 KiB (rewritten for every
 * name a batch touches).  rl_hist_encode writes at most RL_HIST_ENC_MAX
 * bytes and returns the length; rl_hist_decode_add adds a stored
 * histogram (this form, or the dense RL_HIST_N native uint64 of schemas
 * 1-2) into counts: 0, or -1 when malformed.  An encoding that would be
 * exactly as long as the dense form gets tag RL_HIST_TAG_PAD and one
 * ignored byte after it. */
#define RL_HIST_TAG 'S'
#define RL_HIST_TAG_PAD 'P'
#define RL_HIST_ENC_MAX (2 + RL_HIST_N * 12)
size_t rl_hist_encode(const uint64_t *counts, unsigned char *out);
/* m values standing for the n held in counts (m <= n): the evenly spaced
 * quantiles (k + 0.5) / m, each placed within its bucket as if the
 * bucket's values were spread evenly over it - what the regression scan
 * compares (docs/analysis.md).  Writes out[0..m). */
void rl_hist_sample(const uint64_t *counts, uint64_t n, double *out, size_t m);
int rl_hist_decode_add(const void *blob, size_t n, uint64_t *counts);

/* ---- timeline ---- */

/* Levels of the timeline summary: bucket width 2^RL_TL_SHIFT0 ns at level
 * 0, then 2^(16 + 4*level): 262 us, 1.05 ms, 16.8 ms, 268 ms, 4.3 s,
 * 68.7 s.  Level 0 was 65.5 us until schema 3; at that width a busy
 * stream has about one bucket per kernel, so the finest rollup cost as
 * much to write as the kernels (23 % of SQLite ingest CPU), and the
 * timeline now reads the kernels themselves for windows below 2^18 ns a
 * pixel instead of 2^16. */
#define RL_TL_LEVELS 6
#define RL_TL_SHIFT0 18
/* A kernel spreads its busy time over at most this many buckets of one
 * level; beyond it the time goes to its first bucket (documented). */
#define RL_TL_SPAN_MAX 1024
/* Kernels longer than this may span more than RL_TL_SPAN_MAX buckets of
 * level 0 (and so of any level): kept apart at ingest (table klong), so
 * the timeline spreads them exactly over the columns they occupy.  The
 * string is for SQL. */
#define RL_TL_LONG_NS ((uint64_t)(RL_TL_SPAN_MAX - 1) << RL_TL_SHIFT0)
#define RL_TL_LONG_STR "268173312"
static inline unsigned rl_tl_shift(int level)
{
    return level == 0 ? RL_TL_SHIFT0 : 16u + 4u * (unsigned)level;
}

#endif
