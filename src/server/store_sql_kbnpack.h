/*
 * store_sql_kbnpack.h - the kernel blocks' names packed on PostgreSQL
 * (store_sql_kbnpack.c, schema 30): the kbnames rows of one (session,
 * stream, name) whose blocks start in one range of SQ_KBNP_SPAN seqs, in
 * one kbnpack row of varints; the range's blocks' seq_hi and time range
 * (what the name filters' readers joined kblocks for) once per range, in
 * its kbndir row.
 */
#ifndef GPUFL_STORE_SQL_KBNPACK_H
#define GPUFL_STORE_SQL_KBNPACK_H

#include <stddef.h>
#include <stdint.h>

#include "store_sql_int.h"

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

/* The writer's open transaction (PostgreSQL; nothing on SQLite): the
 * packs of the ranges of blocks src[0..n) of (sess, stream) put back as
 * kbnames rows, before a merge deletes those blocks' rows, so that no
 * pack names a block that is gone (the next pass packs the rest again).
 * A pack that does not decode: GPUFL_EINTERNAL (the merge rolls back). */
int sq_kbnp_unpack(srv_store *s, int64_t sess, int64_t stream,
                   const int64_t *src, size_t n);

/* A reader's entries of name name_id in session sess whose block meets
 * [t_lo, t_hi) (kblocks' t_lo < t_hi, t_hi >= t_lo, as the rows' join),
 * each handed to fn with its stream; *packs: rows read.  A pack that
 * does not decode: GPUFL_EINTERNAL. */
typedef int (*sq_kbnp_fn)(void *arg, int64_t stream, const sq_kbne *e);
int sq_kbnp_read(sdb *db, int64_t sess, int64_t name_id, int64_t t_lo,
                 int64_t t_hi, sq_kbnp_fn fn, void *arg, uint64_t *packs);

#endif
