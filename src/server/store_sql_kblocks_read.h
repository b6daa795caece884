/*
 * store_sql_kblocks_read.h - block-native reads of kernels: the bounded
 * heap of a page (kb_top), the block range lookup (KB_IN_RANGE) and the
 * scans of a session's blocks and rows (store_sql_kblocks_read.c,
 * store_sql_kblocks_scan.c), for the queries.  Apart from store_sql_int.h,
 * which the writer's and the maintenance files share, so that the store's
 * internal header holds what every file of the store needs.
 */
#ifndef GPUFL_SERVER_STORE_SQL_KBLOCKS_READ_H
#define GPUFL_SERVER_STORE_SQL_KBLOCKS_READ_H

#include "store_sql_int.h"

/* Block-native reads (store_sql_kblocks_read.c): queries read a
 * session's kernel rows and its blocks together, never thawing. */

/* Sort keys of kernel pages (store_sql_q_kernels.c sorts[]). */
enum { KB_KEY_TS, KB_KEY_DUR, KB_KEY_QUEUE, KB_KEY_LAUNCH };

/* The first cap kernels in (key, seq) order (descending when desc) of
 * those offered: a bounded heap over caller-sized arrays (kb_top_init). */
typedef struct kb_top {
    struct kblock_ev *ev; /* cap events */
    uint8_t *nul;         /* cap: bit 0 occ NULL, bit 1 tid NULL */
    size_t *h;            /* cap: heap of indexes, worst on top */
    size_t n, cap;
    int key, desc;
    /* optional: only these name ids (sorted) can be kept - lets a scan by
     * duration rule a block out from its names and durations alone */
    const int64_t *ids;
    size_t nids;
    int named;
    /* optional: no kernel with a key worse than bound can be kept (known
     * from elsewhere: kext, for a sort by duration) */
    int has_bound;
    int64_t bound;
    /* optional: the page's cursor (key, seq) - only kernels after it in
     * the page's order can be kept; lets the name sort pass over a block
     * tied at the cursor's key whose seqs all come before it
     * (store_sql_kblocks_names.c) */
    int has_cur;
    int64_t cur[2];
} kb_top;
int kb_top_init(kb_top *t, size_t cap, int key, int desc);
void kb_top_free(kb_top *t);
int64_t kb_key(const struct kblock_ev *e, int key);
/* Offers e (nul: its NULL bits). */
/* Offers e to t: the slot of t->ev it went to, or KB_TOP_NONE (it does
 * not place).  The slot is e's until a later offer takes it. */
#define KB_TOP_NONE ((size_t)-1)
size_t kb_top_add(kb_top *t, const struct kblock_ev *e, unsigned nul);
/* Sorts the kept events best first into t->ev[0..n) (heap given up). */
void kb_top_sort(kb_top *t);
/* Whether a block whose best key is b (the best any of its events can
 * have) may still hold an event that places in t. */
int kb_top_open(const kb_top *t, int64_t b);
/* A kernel row (columns from col: seq, ts, dur, dev, stream, corr,
 * name_id, cfg, gx, gy, gz, bx, by, bz, regs, smem, occ, scope, path,
 * stack, api_off, api_dur, flags, tid) as an event; *nul its NULL bits. */
void kb_row_ev(sdb_stmt *st, int col, struct kblock_ev *e, unsigned *nul);
#define KB_ROW_COLS                                                            \
    "seq, ts, dur, dev, stream, corr, name_id, cfg, gx, gy, gz, bx, by, bz,"   \
    " regs, smem, occ, scope, path, stack, api_off, api_dur, flags, tid"
/* The kblocks rows of session ?1 that may hold kernels of [?2, ?3): a
 * block ending at or after ?2 starts at or after ?2 minus the session's
 * longest block span (kbspan, migration 25), which bounds the walk of the
 * kblocks_t index; without the bound every block row of the session was
 * read (~50 ms a query at 100M kernels).  No kbspan row: unbounded. */
#define KB_IN_RANGE                                                            \
    " sess=?1 AND t_lo < ?3 AND t_lo >= ?2 - coalesce((SELECT span FROM"       \
    " kbspan WHERE sess=?1), 4611686018427387904) AND t_hi >= ?2"

/* What a kernel row must have for the codec to keep it exactly (every
 * row this server writes has it; rows of older servers may not, and stay
 * rows): the compactor's filter, and migration 23's count (kcount). */
#define KB_EXACT                                                               \
    " dev IS NOT NULL AND stream IS NOT NULL AND corr IS NOT NULL AND"         \
    " name_id IS NOT NULL AND cfg IS NOT NULL AND gx IS NOT NULL AND gy IS"    \
    " NOT NULL AND gz IS NOT NULL AND bx IS NOT NULL AND by IS NOT NULL AND"   \
    " bz IS NOT NULL AND regs IS NOT NULL AND smem IS NOT NULL AND scope IS"   \
    " NOT NULL AND path IS NOT NULL AND stack IS NOT NULL AND api_off IS NOT"  \
    " NULL AND api_dur IS NOT NULL AND flags IS NOT NULL AND (occ IS NULL OR"  \
    " occ >= 0) AND (tid IS NULL OR tid <> 0)"

/* Whether session sess has blocks (*any), on read connection db. */
int sq_kb_any(sdb *db, int64_t sess, int *any);
/* Offers to t every event of the session's blocks whose ts is in
 * [t_lo, t_hi) and that keep accepts (keep NULL: all), reading the
 * blocks in the order of t's key and stopping when no further block can
 * hold an event better than t's worst.  t NULL: keep is called on every
 * event in the range, blocks in t_lo order, and its non-zero return (an
 * error) ends the scan with it.  db is one of s's readers. */
typedef int (*kb_keep_fn)(const struct kblock_ev *e, void *arg);
int sq_kb_scan(srv_store *s, sdb *db, int64_t sess, int64_t t_lo, int64_t t_hi,
               kb_keep_fn keep, void *arg, kb_top *t);
/* As sq_kb_scan, decoding only the columns cols (KB_C_* of kblock.h,
 * KB_C_TS always added: the range test reads it): the other fields of
 * the events keep and t see are stale (from another block, or 0), so
 * keep, and with t its key, must read only those. */
int sq_kb_scan_cols(srv_store *s, sdb *db, int64_t sess, int64_t t_lo,
                    int64_t t_hi, unsigned cols, kb_keep_fn keep, void *arg,
                    kb_top *t);
/* As sq_kb_scan_cols, in two steps when sel is not 0 (and t given): each
 * block's events decoded in the columns sel only (KB_C_TS and KB_C_SEQ
 * added: the range and the heap's order read them), offered to keep and
 * t, and only those that placed then decoded in the columns cols
 * (kblock_decode_rows) - a page of 100 kernels reads every field of 100
 * events, not of a block of 4 096.  keep and t's key must read only the
 * columns of sel; the events t ends with are as sq_kb_scan_cols gives
 * them. */
int sq_kb_scan_sel(srv_store *s, sdb *db, int64_t sess, int64_t t_lo,
                   int64_t t_hi, unsigned cols, unsigned sel, kb_keep_fn keep,
                   void *arg, kb_top *t);
/* The kernel of seq in the session's blocks into *e (*found 0: none). */
int sq_kb_find(srv_store *s, sdb *db, int64_t sess, uint64_t seq,
               struct kblock_ev *e, int *found);
/* The per-reader decoders, at close. */
void sq_kb_read_release(srv_store *s);

#endif
