/*
 * store_sql_q.h - what the store's query files share (store_sql_q.c): a
 * query context holding a borrowed read connection and its one statement,
 * the session a query is about, page limits and cursors, and the name and
 * path resolution every answer needs.
 */
#ifndef GPUFL_SERVER_STORE_SQL_Q_H
#define GPUFL_SERVER_STORE_SQL_Q_H

#include <string.h>

#include "ingest.h"
#include "kblock.h"
#include "oblock.h"
#include "store_sql_kblocks_read.h"

/* Tokens for re-reading a stored session header or stack line. */
#define INGEST_HDR_TOKENS 4096

#define SQ_LIMIT_DEFAULT 100
#define SQ_LIMIT_MAX 1000
/* Scope paths and aggregate rows handled in memory per query. */
#define SQ_PATHS_MAX 4096
#define SQ_NAMES_MAX 20000
#define SQ_TL_WIDTH_MAX 10000
#define SQ_TL_LANES_MAX 256
#define SQ_POINTS_MAX 5000
/* Names are answered in full (at most ingest's cap on a name); scope path
 * strings ("a/b/c") are cut at SQ_PATH_STR_MAX - 1 bytes, on a UTF-8
 * character boundary (docs/api.md). */
#define SQ_NAME_MAX INGEST_NAME_MAX
#define SQ_PATH_STR_MAX 8192

/* One query: a read connection borrowed from the pool (q_begin .. q_end)
 * and the statement in hand (q_prepare replaces it). */
typedef struct qctx {
    srv_store *s;
    sdb *db;
    sdb_stmt *st;
    int64_t sess;        /* q_session: the session's row id */
    int64_t first, last; /* ... and its time span (ns) */
    int txn;             /* q_snapshot: a read transaction is open */
} qctx;

/* Borrows a read connection (blocks until one is free). */
void q_begin(srv_store *s, qctx *c);
/* Finalizes the statement, gives the connection back; rc, or
 * GPUFL_ETOOBIG when the answer overflowed w (w may be NULL). */
int q_end(qctx *c, int rc, jw *w);
/* Prepares sql as c->st (the previous statement finalized). */
int q_prepare(qctx *c, const char *sql);
/* The page size asked for, within SQ_LIMIT_MAX (SQ_LIMIT_DEFAULT if
 * none). */
uint32_t q_limit(const srv_q *q);
/* The session's row id and time span into c; GPUFL_ENOTFOUND for an
 * unknown sid, GPUFL_EINVAL for none. */
int q_session(qctx *c, const char *sid);
/* Opens a read transaction (one snapshot) for the rest of the query,
 * closed by q_end: a query that reads kernel rows and blocks must see
 * each kernel once while the compactor moves rows into blocks. */
int q_snapshot(qctx *c);
/* The page cursor's n integers into v: 0 when there is none (v kept), 1
 * when read, -1 when it is not one of ours. */
int q_cursor(const srv_q *q, int64_t *v, int n);
/* "next": the cursor after v (n integers) when more, else null. */
void q_next(jw *w, int more, const int64_t *v, int n);

/* Pixel columns of a window [from, to) bw ns wide (docs/api.md,
 * timeline): column i covers [from + i*bw, from + (i+1)*bw) within the
 * window.  A span [t0, t0 + dur) - the instant t0 when dur is 0 - occupies
 * columns c0..c1; 0 when it occupies none, else 1 with, per column, the
 * ns of it the span covers from sq_cols_overlap. */
int sq_cols_of(uint64_t from, uint64_t to, uint64_t bw, uint32_t width,
               uint64_t t0, uint64_t dur, uint32_t *c0, uint32_t *c1);
uint64_t sq_cols_overlap(uint64_t from, uint64_t to, uint64_t bw, uint32_t c,
                         uint64_t t0, uint64_t dur);
/* The window's column width: ceil((to - from) / width). */
static inline uint64_t sq_cols_width(uint64_t from, uint64_t to, uint32_t width)
{
    return (to - from) / width + ((to - from) % width != 0);
}

/* The earliest ts a kernel of c's session that occupies time t can have,
 * unless it is a long one (klong, RL_TL_LONG_NS): t minus the session's
 * longest kernel (kext's first row), bounded by RL_TL_LONG_NS, into *lo. */
int sq_kernels_back(qctx *c, uint64_t t, int64_t *lo);
/* Timeline level 0 computed from the kernels (store_sql_q_tl0.c): the
 * buckets b_lo..b_hi (2^RL_TL_SHIFT0 ns) of every lane of c's session as
 * the rollup stores them, (lane, b) order, into *out (*n; free it).
 * GPUFL_EFULL when the rows and blocks of the range hold more than
 * SQ_TL0_KERNELS_MAX kernels (nothing decoded) or make more buckets than
 * one answer holds; GPUFL_EAGAIN when a cold block cannot be read now.
 * also (unless NULL) is offered every block event the scan decodes (those
 * of ts in [b_lo's start less the session's longest kernel, b_hi's end)),
 * so a caller that wants some of them raw needs no second decode; its
 * non-zero return ends the scan with it.  Only when the rows and blocks of
 * the range hold at most also_max kernels (*also_used 1): a denser range
 * would not be read raw, and offering is not free.  The events also sees
 * hold only ts, dur, name, dev, stream and SQ_TL0_ALSO_COLS (the blocks'
 * other columns are not decoded; those fields are stale). */
#define SQ_TL0_KERNELS_MAX 2000000
#define SQ_TL0_ALSO_COLS (KB_C_SEQ | KB_C_CORR)
typedef struct sq_tl0 {
    int64_t lane, top_name;
    uint64_t b, n, busy, top_dur;
} sq_tl0;
int sq_tl0_compute(qctx *c, uint64_t b_lo, uint64_t b_hi, kb_keep_fn also,
                   void *also_arg, uint64_t also_max, int *also_used,
                   sq_tl0 **out, size_t *n);
/* The kernels a computed level 0 (timeline, API calls) may read:
 * SQ_TL0_KERNELS_MAX, or less by GPUFL_SERVER_TL0_MAX (tests). */
uint64_t sq_tl0_max(void);
/* An upper bound of the kernels of c's session with ts in [lo, hi), rows
 * and blocks (blocks that meet the range count whole), into *n. */
int sq_kernels_held(qctx *c, int64_t lo, int64_t hi, uint64_t *n);
/* lanes= of the timeline and the export: "dev:stream,..." into out (at
 * most cap lane keys dev << 32 | stream, *n of them); GPUFL_EINVAL when
 * malformed or more than cap. */
int sq_lanes_parse(const char *s, int64_t *out, int cap, int *n);

/* The session's longest block time span - kernel blocks' (kbspan, ob 0)
 * or op blocks' (obspan, ob 1) - into *span: the lower bound of a time
 * lookup in the blocks' start index; INT64_MAX when the session has no
 * row (no bound).  store_sql_kblocks_scan.c. */
int sq_span_get(sdb *db, int ob, int64_t sess, int64_t *span);

/* A session's ops (copies, memsets, syncs, allocs, frees) as the readers
 * filter them (store_sql_oblocks_read.c): sq_ops_each calls fn for every
 * op of c's session with ts in [lo, hi] (ends included), from its `ops`
 * rows when rows is set and from its op blocks, in no order; fn's
 * non-zero return stops it with that.  sq_op_row: an `ops` row selected
 * as SQ_OPS_COLS from column i0 on.  sq_ops_max_dur: a bound on the
 * longest op of the types (a SQL list of numbers), for how far before a
 * range to look. */
#define SQ_OPS_COLS                                                            \
    "seq, type, ts, dur, dev, stream, corr, kind, bytes, scope, path,"         \
    " stack, flags, tid, api_off, api_dur"
typedef int (*sq_op_fn)(void *arg, const oblock_ev *o);
void sq_op_row(sdb_stmt *st, int i0, oblock_ev *o);
int sq_ops_each(qctx *c, int64_t lo, int64_t hi, int rows, sq_op_fn fn,
                void *arg);
int sq_ops_max_dur(qctx *c, const char *types, int64_t *back);
/* The first cap ops by (ts, seq) of those added (a max-heap: h[0] is the
 * last kept until sorted), for a page or an export of ops cut at a count
 * however many the range holds.  init: 0 or GPUFL_ENOMEM; sort: h[0..n)
 * ascending (no add after it). */
typedef struct sq_ops_first {
    oblock_ev *h;
    size_t n, cap;
} sq_ops_first;
int sq_ops_first_init(sq_ops_first *f, size_t cap);
void sq_ops_first_add(sq_ops_first *f, const oblock_ev *o);
void sq_ops_first_sort(sq_ops_first *f);
void sq_ops_first_free(sq_ops_first *f);
/* An op's kind into dst[cap] (a call's or an export item's), cut to fit
 * as the rows' text was. */
static inline void sq_kind_copy(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* A CUDA API call (store_sql_q_calls.c, docs/api.md "calls"): its type
 * (SQ_CALL_*, named by sq_call_types), entry ts and duration, the line's
 * seq, correlation id, device and stream, the GPU work's start and
 * duration (not for a sync), a copy's bytes, a copy's or sync's kind. */
enum { SQ_CALL_LAUNCH, SQ_CALL_MEMCPY, SQ_CALL_MEMSET, SQ_CALL_SYNC };
extern const char *const sq_call_types[4];
typedef struct sq_call {
    int64_t ts, dur, gpu_ts, gpu_dur, seq, corr, dev, stream, bytes;
    uint32_t tid; /* 0: not recorded */
    uint8_t type;
    char kind[16];
} sq_call;
/* Called per call; a non-zero return stops the scan with it. */
typedef int (*sq_call_fn)(void *arg, const sq_call *c);
/* Every API call of c's session overlapping [from, to), in no order. */
int sq_calls_each(qctx *c, uint64_t from, uint64_t to, sq_call_fn fn,
                  void *arg);
/* As sq_calls_each, for readers of a call's ts, dur and tid only: a
 * launch from a block has its other fields stale (the block's other
 * columns are not decoded: ~half the time of a summary computed from
 * them). */
int sq_calls_times(qctx *c, uint64_t from, uint64_t to, sq_call_fn fn,
                   void *arg);
/* An upper bound of the rows sq_calls_each(from, to) reads (kernels of
 * rows and blocks, ops), from the indexes only, into *n. */
int sq_calls_held(qctx *c, uint64_t from, uint64_t to, uint64_t *n);
/* Whether level lv of the API calls' summary may have packs (capipack):
 * PostgreSQL's levels SQ_CAPP_LVL_MIN..MAX, SQLite's SQ_CAPP_LITE_LVL. */
int sq_capi_packed(qctx *c, int lv);
/* The API calls' summary stored at level lv (table capi, store_sql_capi.c),
 * its buckets b in [b_lo, b_hi) of every thread, each once into fn: at a
 * packed level the rows and the packs (capipack, store_sql_capipack.c)
 * merged, a bucket in both (a late call's row beside its pack) added as
 * capi's upsert adds, in (tid, b) order; else in b order.  0, fn's
 * error, or GPUFL_EINTERNAL for a pack that does not decode (a corrupted
 * database). */
typedef int (*sq_capi_fn)(void *arg, uint32_t tid, uint64_t b, uint64_t n,
                          uint64_t busy);
int sq_capi_each(qctx *c, int lv, int64_t b_lo, int64_t b_hi, sq_capi_fn fn,
                 void *arg);
/* SQLite, a level without packs: one statement reading level lv's buckets of many
 * short ranges (store_sql_q_calls_sum.c's straddling buckets), prepared once
 * and bound again per range - a prepare per range cost more than its rows.
 * sq_capi_rd_each: buckets b_lo..b_hi - 1, 0 or fn's error. */
typedef struct sq_capi_rd {
    sdb_stmt *st;
} sq_capi_rd;
int sq_capi_rd_open(qctx *c, int lv, sq_capi_rd *r);
int sq_capi_rd_each(sq_capi_rd *r, int64_t b_lo, int64_t b_hi, sq_capi_fn fn,
                    void *arg);
void sq_capi_rd_close(sq_capi_rd *r);
/* The API calls' summary level 0 (table capi, store_sql_capi.c) computed
 * from the calls, for sessions whose level 0 is not stored (kernel
 * blocks; store_sql_q_capi0.c): buckets b_lo..b_hi (2^RL_TL_SHIFT0 ns) of
 * every thread as sq_capi_acc stores them - a long call's busy time not
 * in them (capi_long) - in (b, tid) order, into *out (*n; free it).
 * GPUFL_EFULL when the range's rows hold more than sq_tl0_max() kernels
 * and ops (nothing read) or make more buckets than one answer holds. */
typedef struct sq_capi0 {
    uint64_t b, n, busy;
    uint32_t tid;
} sq_capi0;
int sq_capi0_compute(qctx *c, uint64_t b_lo, uint64_t b_hi, sq_capi0 **out,
                     size_t *n);
/* Whether c's session's capi level 0 is computed (sq_capi0_compute)
 * rather than read, into *yes: on PostgreSQL only (SQLite stores it:
 * capi0_query in store_sql_int.h says why), where ingest did not write it
 * - a session with blocks or on a blocks server, as the timeline's level
 * 0 (store_sql_q_timeline.c) - and where none is stored (a blocks
 * server's session, its kernels since deleted or all in rows, read by a
 * rows server).  Computed is exact whatever is stored, so a session whose
 * level 0 is stored in part (ingested by a rows server, then a blocks
 * one) reads right. */
int sq_capi0_computed(qctx *c, int *yes);

/* ---- store_sql_q_calls.c, store_sql_q_calls_sum.c: the calls answer ---- */
/* Threads summarised per answer (each a row of columns). */
#define SQ_CALL_THREADS_MAX 256
/* A thread's row of a bucket of the level above cut by a column boundary
 * (capi_whole): its sums, less those read of the level used (capi_sub). */
typedef struct sq_capi_cut {
    uint32_t tid;
    uint64_t n, busy;
} sq_capi_cut;

/* Per thread: its columns (summary) - calls started, busy ns. */
typedef struct sq_call_thr {
    uint32_t tid;
    uint64_t *n, *busy;
} sq_call_thr;

/* One calls answer: the window and its threads' columns (both files), the
 * list (store_sql_q_calls.c), the rollup's reading state from in0 on
 * (store_sql_q_calls_sum.c).  Allocated per request: cutb and the thread
 * tables make it too big for a stack. */
typedef struct sq_calls_ctx {
    uint64_t from, to, bw;
    uint32_t width, limit;
    uint64_t count; /* calls in the range, all */
    sq_call *list;  /* the first limit + 1 */
    size_t nlist;
    sq_call_thr thr[SQ_CALL_THREADS_MAX];
    int nthr;
    uint64_t threads_cut; /* calls of threads past SQ_CALL_THREADS_MAX */
    uint32_t cut_tids[SQ_CALL_THREADS_MAX];
    int ncut;
    uint64_t in0, in1;  /* rollup answers: its buckets cover [in0, in1) */
    uint64_t rollup_ns; /* ... of this width (0: read from the rows) */
    unsigned lv_sh;     /* the stored level's shift (capi_stored) */
    unsigned up_sh;     /* the level above's (capi_whole) */
    uint64_t rows;      /* capi rows (and packed buckets) read */
    /* capi_two: the level used's reader, the cut bucket of the level above
     * being gathered (cut_on), its threads' rows (cut_over: more than
     * cutb holds) */
    struct sq_capi_rd *rd;
    uint64_t cut_b;
    int cut_on, cut_over, ncutb;
    sq_capi_cut cutb[SQ_CALL_THREADS_MAX];
} sq_calls_ctx;
/* The columns of thread tid into *t: NULL (and GPUFL_OK) for a thread
 * past SQ_CALL_THREADS_MAX, counted in threads_cut; GPUFL_ENOMEM when its
 * columns cannot be had. */
int sq_calls_thr_for(sq_calls_ctx *x, uint32_t tid, sq_call_thr **t);
/* Frees the threads' columns and forgets what was counted and listed. */
void sq_calls_reset(sq_calls_ctx *x);
/* The summary of x's window [from, to) in columns bw ns wide from the
 * rollup (store_sql_q_calls_sum.c): count and the threads' columns into
 * x, *used 1; *used 0 when the rollup cannot answer (columns too narrow
 * for its buckets, no whole bucket in the window, too many long calls, a
 * session older than the rollup) and the answer is read from the rows.
 * When level 0 is computed past its cap level 1 answers (rollup_ns says
 * so).  0, GPUFL_ENOMEM, or a database error. */
int sq_calls_summary(qctx *c, sq_calls_ctx *x, int *used);

/* A LIKE pattern matching s anywhere, with %, _ and \ escaped, into out
 * (cut to cap). */
void sq_like_pat(const char *s, char *out, size_t cap);
/* Appends s to buf (len bytes used of cap, NUL-terminated): as much as
 * fits, cut before a UTF-8 sequence, never inside one.  The new length. */
size_t sq_str_add_utf8(char *buf, size_t len, size_t cap, const char *s);
/* The string of name dict id of session sess, into buf (SQ_NAME_MAX + 1
 * bytes hold any whole); "" when unknown. */
const char *sq_name_of(sdb *db, int64_t sess, int64_t id, char *buf,
                       size_t cap);
/* A kernel or function name id's display name (demangled when stored)
 * and recorded name (docs/api.md "Names"), each into cap bytes
 * (SQ_NAME_MAX + 1 hold any whole); "" when unknown. */
void sq_kname_of(sdb *db, int64_t sess, int64_t id, char *disp, char *mangled,
                 size_t cap);
/* "a/b/c" for a path dict id, into buf. */
const char *sq_path_of(sdb *db, int64_t sess, int64_t id, char *buf,
                       size_t cap);
/* Member key of a stored line (hdr: a session header or stack dict, which
 * ingest validated) into w as raw JSON; nothing when absent. */
void sq_raw_member(jw *w, const char *hdr, const char *key);

/* int64_t ascending, for qsort and bsearch */
int sq_cmp_i64(const void *a, const void *b);

/* The display and recorded names of the page's kernels (their distinct
 * name ids, ascending: ids[0..n), disp[i] and mang[i] malloc'd, "" for an
 * id that names nothing, as the rows' LEFT JOIN gives): one statement per
 * PAGE_NAMES_IN ids, where a lookup per kernel cost the page a statement
 * step each (on PostgreSQL a round trip each). */
typedef struct sq_page_names {
    int64_t *ids;
    char **disp, **mang;
    size_t n;
} sq_page_names;
int sq_page_names_get(qctx *c, const kblock_ev *ev, size_t n,
                      sq_page_names *pn);
/* The same for other ids: sq_names_init makes pn room for n ids (zeroed
 * first; sq_page_names_free frees it either way), the caller writes them
 * into pn->ids[0..n) (any order, repeats allowed), sq_names_lookup sorts,
 * deduplicates and looks them up - the timeline's names and the export's
 * kernels, which were a lookup per name and answer field or per kernel
 * (~400 round trips a timeline of 200 names on PostgreSQL). */
int sq_names_init(sq_page_names *pn, size_t n);
int sq_names_lookup(qctx *c, size_t n, sq_page_names *pn);
/* id's display (mangled 0) or recorded name, "" when it names nothing. */
const char *sq_names_str(const sq_page_names *pn, int64_t id, int mangled);
void sq_page_names_free(sq_page_names *pn);

#endif
