/*
 * store_sql_kbnpack.h - the kernel blocks' names packed, both databases
 * (store_sql_kbnpack.c, schema 30): the kbnames rows of one (session,
 * stream, name) whose blocks start in one range of SQ_KBNP_SPAN seqs, in
 * one kbnpack row of varints; the range's blocks' seq_hi and time range
 * (what the name filters' readers joined kblocks for) once per range, in
 * its kbndir row.  The codec: kbnpack_codec.h.
 */
#ifndef GPUFL_STORE_SQL_KBNPACK_H
#define GPUFL_STORE_SQL_KBNPACK_H

#include <stddef.h>
#include <stdint.h>

#include "kbnpack_codec.h"
#include "store_sql_int.h"

/* The writer's open transaction: the
 * packs of the ranges of blocks src[0..n) of (sess, stream) put back as
 * kbnames rows, before a merge deletes those blocks' rows, so that no
 * pack names a block that is gone (the next pass packs the rest again).
 * A pack of those ranges that does not decode: GPUFL_EPARSE, nothing
 * changed (every pack decoded first: the merge is passed). */
int sq_kbnp_unpack(srv_store *s, int64_t sess, int64_t stream,
                   const int64_t *src, size_t n);

/* A reader's blocks holding any of names ids[0..nids) in session sess
 * that meet [t_lo, t_hi) (kblocks' t_lo < t_hi, t_hi >= t_lo, as the
 * rows' join), each handed to fn once with its stream: its seq and time
 * ranges, and over those names their count (n) and duration bounds (dmin,
 * dmax); *packs: pack rows read.  A pack or directory that does not decode,
 * or a pack without its range's directory: GPUFL_EINTERNAL. */
typedef int (*sq_kbnp_fn)(void *arg, int64_t stream, const sq_kbne *e);
int sq_kbnp_read(sdb *db, int64_t sess, const int64_t *ids, size_t nids,
                 int64_t t_lo, int64_t t_hi, sq_kbnp_fn fn, void *arg,
                 uint64_t *packs);

/* sq_kbnp_read's queries (test_srv_kb_plan checks their plans): one
 * name's packs (?1 sess, ?2 name_id) in (stream, r0) order, and a range's
 * directory by its key.  SQLite's names kbnpack_name: without
 * sqlite_stat1 rows for kbnpack - a database the server has not closed
 * since its first packs, PRAGMA optimize running at close, before the
 * maintenance's statistics pass - its planner took the primary key (sess,
 * stream, r0, name_id) by sess alone, which reads every pack of the
 * session (all names' blobs) for each name asked: the 11-name sort at 30M
 * took 134-150 ms that way against 37-52 ms by the index (docs/server.md
 * "100M an eighth time").  The index holds the primary key's columns
 * after its own, so its order is (stream, r0) for one name: no sort.
 * PostgreSQL's maintenance analyzes every minute. */
#define SQ_KBNP_READ_SEL "SELECT stream, r0, data FROM kbnpack"
#define SQ_KBNP_READ_REST " WHERE sess=?1 AND name_id=?2 ORDER BY stream, r0"
#define SQ_KBNP_READ_SQL_LITE                                                  \
    SQ_KBNP_READ_SEL " INDEXED BY kbnpack_name" SQ_KBNP_READ_REST
#define SQ_KBNP_READ_SQL_PG SQ_KBNP_READ_SEL SQ_KBNP_READ_REST
#define SQ_KBNP_DIR_SQL                                                        \
    "SELECT data FROM kbndir WHERE sess=?1 AND stream=?2 AND r0=?3"
/* On PostgreSQL the directories of every range where one of the names
 * (?2, a bigint[] literal) has a pack, in one statement, in (stream, r0)
 * order: read beside the names' packs as they come.  A statement a range
 * was a round trip each, 384 of them for one name at 100M kernels
 * (docs/server.md "PostgreSQL: a name sort's directories in one
 * statement"); SQLite's lookups stay in the process. */
#define SQ_KBNP_DIRS_SQL_PG                                                    \
    "SELECT d.stream, d.r0, d.data FROM kbndir d WHERE d.sess=?1 AND"          \
    " (d.stream, d.r0) IN (SELECT p.stream, p.r0 FROM kbnpack p WHERE"         \
    " p.sess=?1 AND p.name_id = ANY(?2::bigint[])) ORDER BY d.stream, d.r0"

/* The packer's statements over a range's kbnames rows (?1 sess, ?2
 * stream, seq_lo in [?3, ?4)) - counted, then taken - and whether a block
 * (?3 its seq_lo) is named; test_srv_kb_plan checks that PostgreSQL
 * plans them by the primary key whatever kbnames' statistics say
 * (migration 37, store_sql_kblocks.c kb_begin). */
#define SQ_KBNP_ROWS_SQL                                                       \
    "SELECT count(*) FROM kbnames WHERE sess=?1 AND stream=?2 AND"             \
    " seq_lo >= ?3 AND seq_lo < ?4"
#define SQ_KBNP_TAKE_SQL                                                       \
    "DELETE FROM kbnames WHERE sess=?1 AND stream=?2 AND seq_lo >= ?3 AND"     \
    " seq_lo < ?4 RETURNING name_id, seq_lo, n, dur_min, dur_max"
#define SQ_KBNP_NAMED_SQL                                                      \
    "SELECT (SELECT count(*) FROM kbunnamed WHERE sess=?1 AND stream=?2 AND"   \
    " seq_lo=?3) + (SELECT count(*) FROM (SELECT 1 FROM kbnames WHERE"         \
    " sess=?1 AND stream=?2 AND seq_lo=?3 LIMIT 1) x)"

#endif
