/*
 * store_sql_writer_int.h - the batch writer's interface (sq_writer: what
 * differs by database when an ingest batch is written), and the
 * PostgreSQL writer's rollup merges (store_sql_roll_pg.c) its two files
 * share.
 */
#ifndef GPUFL_SERVER_STORE_SQL_WRITER_INT_H
#define GPUFL_SERVER_STORE_SQL_WRITER_INT_H

#include "store_sql_int.h"
#include "store_sql_tlpack.h"

struct gbuf;
struct kblock_ev;

/* Kept rows (kxrow) one sq_writer.kxrows statement takes at most. */
#define SQ_KX_ARR 1024

/* Appends column c of a rollup's row (k, v) as one array element
 * (sq_av_*) into room the caller reserved (sq_pg_arr_upsert). */
typedef void (*sq_roll_col_fn)(struct gbuf *cb, const uint64_t *k, void *v,
                               int c);

/*
 * ---- The batch writer: what differs by database ----
 *
 * Which rows a line makes, the rollups, the transaction and its order are
 * the same for both databases (store_sql_ingest.c).  How the rows get in
 * is not: SQLite runs in this process, so a prepared statement per row is
 * cheap, and new kernels go in grouped INSERTs (store_sql_ingest_sqlite.c);
 * PostgreSQL is a round trip away, so a batch's rows go in bulk - binary
 * COPY, one statement per table with the rows as array parameters,
 * multi-row statements (store_sql_ingest_pg.c).
 *
 * Every function runs on the writer connection s->w under s->wlock; the
 * writer keeps its own state in s->wst.
 */
typedef struct sq_writer {
    const char *name; /* "sqlite", "postgres" */
    /* how long a maintenance transaction holds wlock at least before it
     * ends for a waiting ingest writer (sq_ingest_give, store_sql_int.h) */
    uint64_t give_ns;
    /* the writer connection's settings, before the schema exists */
    int (*setup)(srv_store *s);
    /* after the schema is current: its statements and state; eb says why
     * it failed */
    int (*open)(srv_store *s, char *eb, size_t ec);
    /* frees what open made; accepts a writer that was never opened */
    void (*close)(srv_store *s);
    /* after BEGIN: what makes this batch's view of the database sound
     * (other servers writing the same database) */
    int (*begin)(srv_store *s);
    /* one kernel row (l: its launch configuration), written now or held
     * for flush; either way passed to sq_kernel_done once it is known new
     * or duplicate, at the latest in flush */
    int (*kernel)(srv_store *s, int64_t sess, const srv_ev *e,
                  const sq_launch *l);
    /* the kernels still held, each then passed to sq_kernel_done: the
     * end of one batch of a group (store_sql_igroup.c) */
    int (*settle)(srv_store *s);
    /* the kernels still held, then the batch's kernel aggregates, merged
     * with the stored ones (s->kagg), its timeline buckets (s->tl) and
     * per-scope totals (s->kscope) */
    int (*flush)(srv_store *s);
    /* kext: the rows leaving, then the rows coming (del may be reordered) */
    int (*kext)(srv_store *s, sq_ext_row *del, size_t ndel,
                const sq_ext_row *put, size_t nput);
    /* the batch rolled back: forget what it held or cached */
    void (*abort)(srv_store *s);
    /* the p->n stacks of memory profile prof (store_sql_memprof.c), in the
     * caller's transaction */
    int (*memstacks)(srv_store *s, int64_t prof, const srv_memprof *p);
    /* NULL where a prepared statement a row is cheap (SQLite); else a
     * rollup's rows in bulk: the rows of m upserted by st, an INSERT ...
     * SELECT FROM unnest of ncol bigint arrays (sq_pg_arr_upsert; room
     * and col as there) ending with the row-at-a-time statement's ON
     * CONFLICT clause, so both databases merge alike */
    int (*roll_put)(srv_store *s, sdb_stmt *st, rl_map *m, int ncol,
                    size_t room, sq_roll_col_fn col);
    /* NULL where a prepared statement a row is cheap (SQLite: kxrow's
     * power-of-two INSERTs, store_sql_kxrow.c); else the kept rows of
     * ev[ix[0..m)] (side sd[j] each, m <= SQ_KX_ARR) in one statement, a
     * row there already staying; *rows += how many went in */
    int (*kxrows)(srv_store *s, int64_t sess, const struct kblock_ev *ev,
                  const uint32_t *ix, const uint8_t *sd, size_t m,
                  uint64_t *rows);
} sq_writer;

extern const sq_writer sq_writer_sqlite; /* store_sql_ingest_sqlite.c */
extern const sq_writer sq_writer_pg;     /* store_sql_ingest_pg.c */

/* ---- store_sql_roll_pg.c: PostgreSQL's rollup merges ---- */
/* COPY text rows: sq_cb_i appends an integer column then sep ('\t' or
 * '\n') into room the caller reserved (SQ_CB_COL bytes a column). */
#define SQ_CB_COL 32
void sq_cb_i(struct gbuf *b, int64_t v, char sep);
/* Appends v's low bytes (1..8) big-endian, as PostgreSQL's binary forms
 * (COPY, arrays) want integers and lengths, into room reserved. */
void sq_cb_be(struct gbuf *b, uint64_t v, int bytes);
/* Array elements in PostgreSQL's binary form (sdb_bind_arr), appended
 * into room the caller reserved (SQ_CB_COL bytes an integer or double):
 * an integer, a double, a NULL; sq_av_bytes makes an element of the n
 * bytes the caller put at b->p + b->len + 4 (room for n + 4). */
void sq_av_i64(struct gbuf *b, int64_t v);
void sq_av_f64(struct gbuf *b, double v);
void sq_av_null(struct gbuf *b);
void sq_av_bytes(struct gbuf *b, size_t n);
/* Appends element j of an array (sq_av_*) into room the caller
 * reserved; called for j = 0, 1, ... in order. */
typedef void (*sq_arr_fn)(struct gbuf *cb, void *ctx, size_t j);
/* The n elements fn appends, of type elem (SDB_ARR_*), bound to parameter
 * i of st as one array in binary; room: the most bytes one element takes;
 * cb is scratch.  Every array parameter of the PostgreSQL writer is made
 * here (the rollups' columns, the kext keys, kxrow's rows). */
int sq_arr_bind(sdb_stmt *st, int i, struct gbuf *cb, size_t n, int elem,
                size_t room, sq_arr_fn fn, void *ctx);
/* The rows of map m upserted by st - INSERT ... SELECT FROM unnest of
 * ncol arrays, one a column, col appending a row's column c of type
 * ty[c] (SDB_ARR_*; ty NULL: all bigint) -
 * ARR_ROWS_MAX rows a statement; room: the most bytes one value takes. */
int sq_pg_arr_upsert(rl_map *m, struct gbuf *cb, sdb_stmt *st, int ncol,
                     const int *ty, size_t room, sq_roll_col_fn col);
/* The batch's kernel aggregates, timeline buckets and per-scope totals,
 * cb the scratch.  st (store_sql_ingest_pg.c prepares them): the stored
 * kagg rows of the batch's keys, merged here; then the kagg, tl and
 * kscope upserts, each an INSERT ... SELECT FROM unnest of one array
 * literal a column plus the row-at-a-time statement's ON CONFLICT
 * clause. */
int sq_pg_roll_flush(srv_store *s, struct gbuf *cb, sdb_stmt *const st[4]);

/*
 * The batch's level-1 timeline buckets are written into their ranges'
 * packs in tlpack, not as tl rows (the tl upserts leave them out:
 * sq_tl1_skip): store_sql_tl1.c gathers them by range and is SQLite's
 * writer, store_sql_tl1_pg.c PostgreSQL's.  Both run before the other
 * rollups, in the batch's transaction; rows is the tl upsert, for the
 * buckets of a range whose stored pack does not decode.
 */
/* SQLite's level-1 packs hold ranges of 64 buckets, not SQ_TLP_N: a
 * WITHOUT ROWID row over 1002 bytes (a 4 KiB page's most in its leaf)
 * spills into an overflow page of its own, and 128 buckets are ~1.2 kB:
 * each rewrite wrote that page too (~4 kB for ~200 bytes), and at rest
 * ~2 B a kernel where 64-bucket packs take ~0.5.  The readers take any
 * aligned range within SQ_TLP_N (sq_tlp_iter_start, sq_tlp_decode). */
#define SQ_TL1_SHIFT_LITE 6
/* One level-1 bucket of the batch. */
typedef struct sq_tl1_el {
    int64_t sess, lane, b0; /* b0: the first bucket of its range */
    sq_tlb t;
} sq_tl1_el;
/* A range of the batch: its buckets v[i0, next's i0); bad: its stored
 * pack does not decode (its buckets go as rows). */
typedef struct sq_tl1_grp {
    size_t i0;
    int bad;
} sq_tl1_grp;
/* The batch's buckets sorted by (sess, lane, b), grouped by range:
 * g[0..ng], the last one's i0 the count.  Kept between batches (cap). */
typedef struct sq_tl1_set {
    sq_tl1_el *v;
    sq_tl1_grp *g;
    size_t cap, ng;
} sq_tl1_set;
/* A range's scratch for sq_tl1_pack. */
typedef struct sq_tl1_scratch {
    sq_tlb a[SQ_TLP_N], m[SQ_TLP_N];
    unsigned char out[SQ_TLP_BYTES_MAX];
} sq_tl1_scratch;
/* 1 for a key of s->tl written into packs */
int sq_tl1_skip(const uint64_t *k);
/* (sess, lane, b) against another: <0, 0, >0 */
int sq_tl1_key_cmp(int64_t s0, int64_t l0, int64_t b0, int64_t s1, int64_t l1,
                   int64_t b1);
/* What a batch's buckets packed at ingest are: the timeline's level 1
 * (s->tl into tlpack, both databases) and, on SQLite, the API calls'
 * level 0 (s->capi into capipack, store_sql_capi.c).  Both maps' keys
 * are (sess, lvl, ., .) with the lane and the bucket at lane_k and b_k. */
typedef struct sq_tl1_kind {
    const char *packs, *lane; /* the pack table and its lane's column */
    int lvl;                  /* the level packed */
    int lane_k, b_k;
    /* a map value's sums into t (t->b is set by the caller) */
    void (*val)(const void *v, sq_tlb *t);
    /* rows bound with bucket e of the level (its range's stored pack
     * does not decode: the buckets go as rows, as the packer leaves
     * such a range's rows) */
    void (*row)(sdb_stmt *rows, const sq_tl1_el *e, int lvl);
} sq_tl1_kind;
extern const sq_tl1_kind sq_tl1_tl;
/* m's buckets of k's level into B, sorted and grouped by ranges of
 * 2^shift buckets; GPUFL_ENOMEM. */
int sq_tl1_collect(const rl_map *m, const sq_tl1_kind *k, sq_tl1_set *B,
                   unsigned shift);
/* Range g of B merged with its stored buckets w[0..nw) and encoded into
 * x->out; its length. */
size_t sq_tl1_pack(const sq_tl1_set *B, size_t g, const sq_tlb *w, size_t nw,
                   sq_tl1_scratch *x);
void sq_tl1_set_release(sq_tl1_set *B);

typedef struct sq_lite_tl1 sq_lite_tl1;
typedef struct sq_pg_tl1 sq_pg_tl1;
/* Their statements on w and their state (*out freed by the close whether
 * or not the open succeeds); SQLite's for kind k's packs. */
int sq_lite_tl1_open(sdb *w, const sq_tl1_kind *k, sq_lite_tl1 **out);
void sq_lite_tl1_close(sq_lite_tl1 *T);
/* m's buckets of T's level into their packs; rows: the level's row
 * upsert (k->row binds it) */
int sq_lite_tl1_put(sq_lite_tl1 *T, const rl_map *m, sdb_stmt *rows);
int sq_pg_tl1_open(sdb *w, sq_pg_tl1 **out);
void sq_pg_tl1_close(sq_pg_tl1 *T);
int sq_pg_tl1_put(srv_store *s, sq_pg_tl1 *T, struct gbuf *cb, sdb_stmt *rows);

/*
 * PostgreSQL: the kept heaps' keys (kext) and kept rows (kxrow) of a batch
 * as a few statements with the keys as arrays (store_sql_ext_pg.c), on
 * the writer connection; the statements prepared at first use, cb the
 * writer's COPY buffer (borrowed).  sq_pg_kext and sq_pg_kxrows are
 * sq_writer.kext and sq_writer.kxrows; sq_pg_ext_close finalizes.
 */
typedef struct sq_pg_ext {
    /* insert (plain, then ON CONFLICT); delete from kext, kxrow */
    sdb_stmt *kxnew, *kxput, *kxdel[2];
    sdb_stmt *kxcut[2]; /* range deletes: kext, kext and kxrow */
    sdb_stmt *kxrow;    /* kept rows as arrays */
    struct gbuf *cb;
} sq_pg_ext;
int sq_pg_kext(srv_store *s, sq_pg_ext *pw, sq_ext_row *del, size_t ndel,
               const sq_ext_row *put, size_t nput);
int sq_pg_kxrows(srv_store *s, sq_pg_ext *pw, int64_t sess,
                 const struct kblock_ev *ev, const uint32_t *ix,
                 const uint8_t *sd, size_t m, uint64_t *rows);
void sq_pg_ext_close(sq_pg_ext *pw);

#endif
