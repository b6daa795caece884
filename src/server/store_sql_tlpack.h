/*
 * store_sql_tlpack.h - timeline buckets packed (store_sql_tlpack.c): a
 * range of SQ_TLP_N buckets of one (session, level, lane) of tl in one
 * tlpack row - level 1 by ingest on both databases (store_sql_tl1.c),
 * levels 2-3 by PostgreSQL's packer - and the rules to add rows of the
 * same bucket to a packed one (the rollup's: n and busy add, the top by
 * top_dur).
 * The codec and the rule are in tlpack_codec.c (no database).
 */
#ifndef GPUFL_STORE_SQL_TLPACK_H
#define GPUFL_STORE_SQL_TLPACK_H

#include <stddef.h>
#include <stdint.h>

/* Buckets per pack (2^SQ_TLP_SHIFT, aligned: b0 a multiple of it).  128
 * buckets of at most ~45 bytes keep a pack under PostgreSQL's 2 kB TOAST
 * threshold in the common case (~10 bytes a bucket): no second lookup. */
#define SQ_TLP_SHIFT 7
#define SQ_TLP_SHIFT_STR "7"
#define SQ_TLP_N (1u << SQ_TLP_SHIFT)
/* Five varints of at most 10 bytes a bucket. */
#define SQ_TLP_BYTES_MAX (SQ_TLP_N * 50u)
/* The levels packed: level 0 is computed (blocks) or written by SQLite;
 * levels 4 and 5 are a few rows a session, and the timeline finds a
 * session's lanes in level 5's rows. */
#define SQ_TLP_LVL_MIN 1
#define SQ_TLP_LVL_MAX 3
/* The level both databases' ingest writes packed (store_sql_tl1.c); the
 * others PostgreSQL's packer packs once a session has moved past them. */
#define SQ_TL1_LVL 1

/* One bucket of tl, its columns as stored (int64). */
typedef struct sq_tlb {
    int64_t b, n, busy, top_name, top_dur;
} sq_tlb;

/* a += b, as tl's upsert does (store_sql.c WS_TL): n and busy add
 * (saturating at the int64 bounds), the top is the longer, a tie the
 * larger name. */
void sq_tlb_add(sq_tlb *a, const sq_tlb *b);
/* a[0..na) and b[0..nb) (each b ascending, distinct) merged into out in
 * b order, a bucket in both added (sq_tlb_add); how many went out. */
size_t sq_tlb_merge(const sq_tlb *a, size_t na, const sq_tlb *b, size_t nb,
                    sq_tlb *out);
/* The n buckets v (b ascending, distinct, within b0's range) into out
 * (SQ_TLP_BYTES_MAX); its length. */
size_t sq_tlp_encode(const sq_tlb *v, size_t n, int64_t b0, unsigned char *out);
/* A pack of range b0 into v (SQ_TLP_N); 0, or GPUFL_EINTERNAL when it
 * does not decode (a bucket outside the range, out of order). */
int sq_tlp_decode(const void *p, size_t len, int64_t b0, sq_tlb *v, size_t *n);

/* What a bucket packer packs (store_sql_tlpack.c): the timeline's tl and
 * the API calls' capi (store_sql_capipack.c) are both rows of (session,
 * level, lane, bucket) summed by their upserts, packed the same way. */
typedef struct sq_tlp_kind {
    const char *rows, *packs; /* the tables: rows folded, packs written */
    const char *lane;         /* the lane's column */
    const char *lane_word;    /* the lane in a log line */
    int top;                  /* 1: rows have top_name, top_dur */
    int lvl_min, lvl_max;     /* the levels packed */
    const char *bad_what;     /* sq_pass's warning on undecodable packs */
} sq_tlp_kind;

struct srv_store;
/* One pass of k's packer on PostgreSQL (nothing on SQLite): each range of
 * SQ_TLP_N buckets its session has moved past folded into one pack, 32
 * ranges a transaction; *bad_last: the undecodable count last warned.
 * *packs, *rows: ranges written, rows deleted. */
int sq_tlp_pass(struct srv_store *s, const sq_tlp_kind *k, uint64_t *bad_last,
                uint64_t *packs, uint64_t *rows);

/* A window's packed buckets read back (store_sql_tlpack_iter.c), one pack
 * decoded at a time, in (lane, b) order as the rows beside them: the
 * readers merge the two, a bucket in both added (sq_tlb_add).  ~5 kB: on
 * the query thread's stack. */
struct sdb_stmt;
typedef struct sq_tlp_iter {
    struct sdb_stmt *st;  /* NULL: none left */
    int64_t lane, lo, hi; /* the bucket's lane; the window [lo, hi] */
    sq_tlb v[SQ_TLP_N];   /* the pack decoded, v[i] the bucket */
    size_t n, i;
} sq_tlp_iter;
/* P over st, prepared with its other parameters bound and owned by P from
 * here: its columns (lane, b0, data) of a pack table in (lane, b0) order,
 * its ?3 and ?4 (b0 >= ?3 AND b0 <= ?4) bound here to the packs holding
 * a bucket of the closed window [lo, hi]; the first such bucket read
 * (*have).  0, a gpufl_err, or GPUFL_EINTERNAL for a pack that does not
 * decode (a corrupted database). */
int sq_tlp_iter_start(sq_tlp_iter *P, struct sdb_stmt *st, int64_t lo,
                      int64_t hi, int *have);
/* The next bucket in [lo, hi] at P->v[P->i], *have 1; *have 0 at the end.
 * Errors as sq_tlp_iter_start's. */
int sq_tlp_iter_next(sq_tlp_iter *P, int *have);
/* (lane, b) of P's bucket against a row's: <0, 0, >0. */
int sq_tlp_iter_cmp(const sq_tlp_iter *P, int64_t lane, int64_t b);
/* P's statement finalized (none: nothing). */
void sq_tlp_iter_close(sq_tlp_iter *P);

#endif
