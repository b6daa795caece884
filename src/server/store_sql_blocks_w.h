/*
 * store_sql_blocks_w.h - the writer's side of kernel and op blocks, split
 * from store_sql_int.h: the compactors' runs of small blocks, a block's
 * put (kernels and ops), the ingest's kernels into blocks and their two-
 * thread encode, the kept rows (kxrow), the cold tier's stubs, ops into
 * blocks.  The read side is store_sql_kblocks_int.h.
 */
#ifndef GPUFL_SERVER_STORE_SQL_BLOCKS_W_H
#define GPUFL_SERVER_STORE_SQL_BLOCKS_W_H

#include "store_sql_int.h"

/* The compactors' merges (kernel and op blocks) gather a run of small
 * blocks, adjacent by seq_lo, reading them in that order: a full block,
 * one that would pass max_total or max_src, or one that does not decode
 * ends the run - merged when it has two blocks or more, else dropped (a
 * run of one) and gathered again after.  Before a block of k events:
 * SQ_MRUN_END (merge what is gathered), SQ_MRUN_PASS (skip the block: it is
 * full) or SQ_MRUN_TAKE (read it, then sq_mrun_took or sq_mrun_bad). */
typedef struct sq_mrun {
    size_t nsrc, total, max_src, max_total;
} sq_mrun;
enum { SQ_MRUN_TAKE, SQ_MRUN_PASS, SQ_MRUN_END };
static inline int sq_mrun_next(sq_mrun *r, size_t k, int full)
{
    if (full ||
        (r->nsrc && (r->total + k > r->max_total || r->nsrc == r->max_src))) {
        if (r->nsrc >= 2)
            return SQ_MRUN_END;
        r->nsrc = r->total = 0; /* a run of one: start again after it */
        if (full)
            return SQ_MRUN_PASS;
    }
    return SQ_MRUN_TAKE;
}
static inline void sq_mrun_took(sq_mrun *r, size_t got)
{
    r->nsrc++;
    r->total += got;
}
/* A block that does not decode: SQ_MRUN_END or SQ_MRUN_PASS, as above. */
static inline int sq_mrun_bad(sq_mrun *r)
{
    if (r->nsrc >= 2)
        return SQ_MRUN_END;
    r->nsrc = r->total = 0;
    return SQ_MRUN_PASS;
}

/* The cold tier (store_sql_kcold.c): whether a block's bytes are a cold
 * row's stub; the block of kind SQ_KC_* a stub (*b, *len) names, from the
 * cache or S3 (as sq_kb_bytes, sq_ob_bytes; an op block's stream is 0);
 * the tier's state, at close. */
enum { SQ_KC_KERNELS, SQ_KC_OPS, SQ_KC_N };
int sq_kc_is_stub(const unsigned char *b, size_t len);
int sq_kc_bytes(srv_store *s, int kind, int64_t sess, int64_t stream,
                int64_t seq_lo, const unsigned char **b, size_t *len);
void sq_kc_release(srv_store *s);

/* The kept rows of kext keys whose kernels are in blocks (kxrow,
 * store_sql_kxrow.c), on the writer in its open transaction: of the
 * events ev[0..n) of session sess going into a block, those kext holds -
 * as this batch's heaps say (heap 1: ingest) or as stored (heap 0: the
 * compactor, the merge, the fill) - get their rows (a row there already
 * stays). */
struct kblock_ev;
int sq_kx_put(srv_store *s, int64_t sess, const struct kblock_ev *ev, size_t n,
              int heap);
/* Off the writer's lock, on db (a reader): which of ev[0..n) (events of
 * session sess about to go into a block) sq_kx_put may still keep, into
 * ix[0..*m): those at or before each side's KX_KEEP-th stored kext key -
 * a key that only moves outward as kernels come, so what is read now
 * covers what the writer reads later - and all of them while a side holds
 * fewer keys (its bound may still move inward). */
int sq_kx_candidates(sdb *db, int64_t sess, const struct kblock_ev *ev,
                     size_t n, uint32_t *ix, size_t *m);
/* The codec state and buffers above, allocated on first use. */
int sq_kb_state(srv_store *s);
/* s->kb_ev[0..n) (one session's stream, seq order) encoded and inserted
 * as one kblocks row, in the writer's open transaction; s->kb_idx is its
 * index after.  named: with its kbnames rows (the compactor's blocks);
 * else with a kbunnamed row (ingest's: most are merged soon, and their
 * ~200 kbnames rows a block, written and deleted again, were a fifth of
 * the server's CPU and most of its WAL - the compactor names the rest). */
int sq_kb_put(srv_store *s, int64_t sess, int64_t stream, size_t n, int named);
/* ... the same for a block already encoded, b[0..len) of n kernels (the
 * ingest's, encoded on two threads: store_sql_kblocks_par.c). */
int sq_kb_put_bytes(srv_store *s, int64_t sess, int64_t stream,
                    const unsigned char *b, size_t len, size_t n, int named);
/* ... the same for a block the compactor encoded off the writer's lock
 * (a merge: store_sql_kblocks_compact.c), with its kbnames rows from the
 * names' duration bounds lo[k], hi[k] (sq_kb_name_bounds, in the order of
 * the block's index). */
int sq_kb_put_named(srv_store *s, int64_t sess, int64_t stream,
                    const unsigned char *b, size_t len, size_t n,
                    const uint64_t *lo, const uint64_t *hi);
/* Per name of idx, its events' duration bounds over ev[0..n) into lo[k],
 * hi[k] (KB_MAX_NAMES each; slot: KB_NSLOT_MAX of scratch); no lock. */
struct kblock_index;
int sq_kb_name_bounds(const struct kblock_index *idx,
                      const struct kblock_ev *ev, size_t n, uint64_t *lo,
                      uint64_t *hi, uint32_t *slot);
/* The kbnames rows of block b[0..len) of n kernels, decoded into
 * s->kb_ev[0..n), in the writer's open transaction (its kbunnamed row is
 * the caller's). */
int sq_kb_name(srv_store *s, int64_t sess, int64_t stream,
               const unsigned char *b, size_t len, size_t n);
/* zstd level of the store's blocks (bench/kblock: 6.1-6.5 bytes/kernel) */
#define KB_ZLEVEL 3

/* A block of the ingest's: ev[off, off + n) of an array of one session
 * and stream's kernels in seq order. */
typedef struct sq_kb_blk {
    int64_t sess, stream;
    size_t off, n;
} sq_kb_blk;
/* The ingest's blocks encoded on two threads (store_sql_kblocks_par.c), a
 * wave at a time: sq_kbp_begin takes the first *w of blk[0..nb) (*w >= 1
 * when nb is) and starts the helper on them (ev and blk borrowed until
 * sq_kbp_end); the caller may use the writer meanwhile, but not
 * s->kb_enc; sq_kbp_end encodes what is left, waits for the helper and
 * says whether every block encoded (it must follow every begin that
 * returned 0); then sq_kbp_block(i) is block i's bytes until the next
 * begin.  Under s->wlock. */
typedef struct sq_kbp sq_kbp;
int sq_kbp_begin(srv_store *s, const struct kblock_ev *ev, const sq_kb_blk *blk,
                 size_t nb, size_t *w);
int sq_kbp_end(srv_store *s);
const unsigned char *sq_kbp_block(srv_store *s, size_t i, size_t *len);
void sq_kbp_release(srv_store *s);
/* Tests only: sleeps the milliseconds named by environment variable env
 * (at most 10 s): a place for a test's kill -9 to land. */
void sq_kb_test_pause(const char *env);

/* Ingest into blocks (store_sql_kblocks_ingest.c), on the writer under its
 * lock, in the batch's transaction: sq_kbi_kernel takes a kernel as
 * sq_writer.kernel does (reported through sq_kernel_done now or at
 * flush); sq_kbi_flush writes what is held as blocks (before the
 * writer's flush, which writes the rollups they fed); sq_kbi_reset
 * forgets what a batch held (at its start and after a rollback). */
int sq_kbi_kernel(srv_store *s, int64_t sess, const srv_ev *e,
                  const sq_launch *l);
int sq_kbi_flush(srv_store *s);
void sq_kbi_reset(srv_store *s);
void sq_kbi_release(srv_store *s);
/* Ops into blocks (store_sql_oblocks_ingest.c), as kernels above: with
 * --kernel-store=blocks sq_obi_op holds an op line of the batch (e must
 * live until the batch ends); sq_obi_flush writes the new ones held as
 * op blocks and reports each through sq_line_done; sq_obi_reset forgets
 * them (a batch's start, a rollback); sq_obi_release at close, before the
 * writer's connection (its statements). */
int sq_obi_op(srv_store *s, int64_t sess, const srv_ev *e);
int sq_obi_flush(srv_store *s);
void sq_obi_reset(srv_store *s);
void sq_obi_release(srv_store *s);
/* One op block written, on the writer in its open transaction: ev[0..m)
 * (one session's, 1..OB_MAX_EVENTS) encoded with enc into blk
 * (OB_BLOCK_MAX bytes), inserted by ins (SQ_OB_INSERT_SQL prepared on
 * the writer) and its time span kept in obspan by span (SQ_OB_SPAN_SQL)
 * - ingest's blocks and the compactor's (store_sql_oblocks_compact.c)
 * alike. */
#define SQ_OB_INSERT_SQL "INSERT INTO oblocks VALUES(?,?,?,?,?,?,?,?)"
#define SQ_OB_SPAN_SQL                                                         \
    "INSERT INTO obspan VALUES(?1, ?2) ON CONFLICT(sess) DO UPDATE SET"        \
    " span=excluded.span WHERE excluded.span > obspan.span"
struct oblock_enc;
struct oblock_ev;
int sq_ob_put(sdb_stmt *ins, sdb_stmt *span, struct oblock_enc *enc,
              unsigned char *blk, int64_t sess, const struct oblock_ev *ev,
              size_t m);

#endif
