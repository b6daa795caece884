/*
 * kbnpack_codec.h - the kernel block names' pack codec (kbnpack_codec.c):
 * a name's entries in its range's blocks, or the range's directory of
 * blocks, as varints (store_sql_kbnpack.h packs them).  No
 * database: the fuzz target (tests/fuzz/fuzz_kbnpack.c) links only it.
 */
#ifndef GPUFL_KBNPACK_CODEC_H
#define GPUFL_KBNPACK_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* Seqs per range (r0 a multiple of it): 256 full blocks of one stream
 * at most, ~15 bytes each, so a pack of a busy stream stays near
 * PostgreSQL's 2 kB TOAST threshold; the bench's 1M-kernel session of
 * four streams is one range a stream. */
#define SQ_KBNP_SHIFT 20
#define SQ_KBNP_SHIFT_STR "20"
#define SQ_KBNP_SPAN ((int64_t)1 << SQ_KBNP_SHIFT)
/* Entries one pack holds at most (a range of tiny blocks: the tests'
 * GPUFL_SERVER_KB_RUN); a range that would hold more stays rows. */
#define SQ_KBNP_MAX 65536
/* Four varints of at most 10 bytes an entry (of a name or of the
 * directory). */
#define SQ_KBNP_ENTRY_MAX 40u

/* One block's entry for one name: the block (seq_lo, seq_hi, its time
 * range t_lo..t_hi as kblocks has them) and the name's kernels in it (n,
 * the shortest and longest duration), as stored (int64 bit patterns). */
typedef struct sq_kbne {
    int64_t lo, hi, t_lo, t_hi, n, dmin, dmax;
} sq_kbne;

/* The n entries v (lo ascending, distinct, within r0's range) into out
 * (n * SQ_KBNP_ENTRY_MAX bytes); its length.  dir 0: a name's pack (lo,
 * n, dmin, dmax), 1: the range's directory (lo, hi, t_lo, t_hi). */
size_t sq_kbnp_encode(int dir, const sq_kbne *v, size_t n, int64_t r0,
                      unsigned char *out);
/* A pack or directory of range r0 into v (cap entries; the other fields
 * 0); 0, or GPUFL_EINTERNAL when it does not decode (an entry outside the
 * range, out of order, more than cap). */
int sq_kbnp_decode(int dir, const void *p, size_t len, int64_t r0, sq_kbne *v,
                   size_t cap, size_t *n);
/* Entries by block (lo), for qsort and bsearch. */
int sq_kbne_by_lo(const void *a, const void *b);

#endif
