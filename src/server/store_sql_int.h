/*
 * store_sql_int.h - the store's private state, shared by its files: the
 * schema and connections (store_sql.c), the ingest batch (store_sql_ingest.c
 * and its rollups, kext and seq ranges), maintenance, and the queries
 * (store_sql_q*.c).  The same code serves SQLite and PostgreSQL through
 * db.h; what differs is how a batch's rows go in, the batch writer
 * (sq_writer, store_sql_writer_int.h), one file per database.
 */
#ifndef GPUFL_SERVER_STORE_SQL_INT_H
#define GPUFL_SERVER_STORE_SQL_INT_H

#include <pthread.h>
#include <string.h>
#include <time.h>

#include "db.h"
#include "rollup.h"
#include "store.h"
#include "store_sql_stmt.h"

/* Query connections held open at most. */
#define SQ_READERS_MAX 16

enum {
    WS_SESS_FIND,
    WS_SESS_ADD,
    WS_SESS_HEADER,
    WS_SESS_END,
    WS_SESS_STREAMS,
    WS_SESS_TOUCH,
    WS_LINE,
    WS_DICT,
    WS_DICT_GET,
    WS_KERNEL,
    WS_OP,
    WS_SCOPE,
    WS_SASS,
    WS_STALL,
    WS_SAMPLE,
    WS_KAGG_GET,
    WS_KAGG_PUT,
    WS_TL,
    WS_KSCOPE,
    WS_EXT_LOAD0,
    WS_EXT_LOAD1,
    WS_KMAX,
    WS_EXT_COUNT,
    WS_EXT_VER,
    WS_EXT_BUMP,
    WS_EXT_PUT,
    WS_EXT_DEL,
    WS_KX_DEL,
    WS_SRL_GET,
    WS_SRL_PUT,
    WS_SEQ_EXT,
    WS_SEQ_TAKE,
    WS_SEQ_JOIN,
    WS_SEQ_ADD,
    WS_KLONG,
    WS_WASTE_PUT,   /* store_sql_waste.c */
    WS_WASTE_ROLL,  /* its hourly rollup, += */
    WS_WASTE_ROLLD, /* its daily rollup, += */
    WS_VRUN_LAST,   /* a GPU's newest run of one verdict state */
    WS_VRUN_EXT,    /* ... extended to a verdict */
    WS_VRUN_ADD,    /* a new run */
    WS_N
};

/* A stored API call (a kernel's or op's api_off, api_dur as ALIAS.x) that
 * counts: recorded (a duration), its entry and exit times (rows stored
 * before ingest checked them may not be; docs/api.md "calls"). */
#define SQ_API_OK(a)                                                           \
    a ".api_dur > 0 AND " a ".api_off >= -" a ".ts AND " a                     \
      ".api_off <= 9223372036854775807 - " a ".ts - " a ".api_dur"
/* ... of the kernels as k, the ops as o (what the queries name them) */
#define SQ_API_OK_K SQ_API_OK("k")
#define SQ_API_OK_O SQ_API_OK("o")

/* A kernel's launch configuration, resolved at ingest. */
typedef struct sq_launch {
    int64_t name_id, regs, smem;
    double occ;
    int64_t bx, by, bz;
} sq_launch;

/* Accumulator values. */
typedef struct sq_kagg {
    uint64_t n, total, min, max, n_occ;
    double sum_occ;
    int64_t regs, smem;
    uint64_t hist[RL_HIST_N];
    /* PostgreSQL: merged from the writer's cache of the stored row
     * (store_sql_kagg_cache.c), not to be read from kagg */
    int cached;
} sq_kagg;

typedef struct sq_tl {
    uint64_t n, busy, top_name, top_dur;
} sq_tl;

/* A run of kernels of one lane that each lie within one bucket of the
 * finest timeline level written (sq_acc_kernel): summed here, then added
 * into s->tl at every level in one go when the lane's next kernel is in
 * another bucket or the batch is flushed (sq_tl_runs_flush).  A kernel in
 * one bucket of the finest level is in one bucket of every coarser one
 * and adds its whole duration there, and the sums (saturating, of
 * non-negative values) and the top (a maximum) do not depend on order,
 * so the rows are the ones a kernel-by-kernel update gives. */
typedef struct sq_tlrun {
    int64_t sess;
    uint64_t lane, b; /* b: bucket at the finest level written */
    uint64_t n, busy, top_dur;
    int64_t top_name;
    int used;
} sq_tlrun;

/* The same for the API calls' summary (store_sql_capi.c), by thread. */
typedef struct sq_capirun {
    int64_t sess;
    uint64_t tid, b, n, busy;
    int used;
} sq_capirun;

/* srl (system samples per 60 s bucket, store_sql_rollup.c): for each of
 * the SRV_SYS_NFIELDS fields its min, max, sum and count (the table in
 * store_sql_schema.c, its statements in store_sql.c). */
#define SRL_F(i) " mn" #i " REAL, mx" #i " REAL, sm" #i " REAL, ct" #i " REAL,"
#define SRL_AGG(i) ", min(f" #i "), max(f" #i "), sum(f" #i "), count(f" #i ")"
#define SRL_LIST(m)                                                            \
    m(0) m(1) m(2) m(3) m(4) m(5) m(6) m(7) m(8) m(9) m(10) m(11) m(12) m(13)  \
        m(14) m(15) m(16) m(17) m(18) m(19) m(20)
#define SRL_SET(i)                                                             \
    ", mn" #i "=excluded.mn" #i ", mx" #i "=excluded.mx" #i ", sm" #i          \
    "=excluded.sm" #i ", ct" #i "=excluded.ct" #i
#define SRL_Q4(i) ",?,?,?,?"
#define SRL_GETC(i) ", mn" #i ", mx" #i ", sm" #i ", ct" #i

/* System samples of one 60 s bucket of one source (srl). */
#define SQ_SRL_NS 60000000000ll
typedef struct sq_srl {
    uint64_t n;
    int64_t t0;
    double mn[SRV_SYS_NFIELDS], mx[SRV_SYS_NFIELDS], sm[SRV_SYS_NFIELDS],
        ct[SRV_SYS_NFIELDS];
} sq_srl;

typedef struct sq_sacc {
    uint64_t first, last, lines, kernels, ops, scopes, samples, profile;
    /* bounds of start - call exit (lo) and start - call entry (hi) of the
     * batch's kernels (api_*) and ops (op_*): INT64_MAX / INT64_MIN when
     * none */
    int64_t api_lo, api_hi, op_lo, op_hi;
} sq_sacc;

/* Entries a batch accumulator or cache may hold. */
#define SQ_ACC_MAX (4u << 20)
#define SQ_CACHE_MAX (1u << 20)

/* kext (store_sql_ext.c): keys kept per session and side by default
 * (GPUFL_SERVER_TOPK changes it: tests), sessions whose heaps stay in
 * memory, and a stored key leaving in this batch. */
#define SQ_EXT_K 4096
#define SQ_EXT_K_MAX (1u << 20)
#define SQ_EXT_SESS 32
/* kxrow inserts of 1, 2, 4, ... 32 rows kept prepared (store_sql_kxrow.c) */
#define SQ_KX_PUT_N 6
struct sq_ext;
/* A kext row (its key) the batch deletes or inserts. */
typedef struct sq_ext_row {
    int64_t sess;
    int side;
    int64_t dur, seq;
} sq_ext_row;

/* A run of stored seqs of one (session, stream): a batch's accepted lines
 * (store_sql_gaps.c), or the stored range a writer last extended. */
typedef struct sq_run {
    int64_t sess, lo, hi;
    int st;
} sq_run;

/* Ranges of missing seqs listed per stream in a session's "gaps"; the
 * count is always exact. */
#define SQ_GAP_RANGES_MAX 100

struct sq_writer;

/* The database's health as the connections report it
 * (store_sql_health.c). */
typedef struct sq_health {
    pthread_mutex_t lock; /* orders the changes and their log lines */
    int down;             /* a command failed for want of the database */
    int nospc;            /* a write failed for disk space: not ready */
    int nospc_logged;     /* ... said once, until a COMMIT succeeds */
    uint64_t down_since, last_log; /* mono ns */
    uint64_t up_wall;              /* Unix s: when the database was last back */
} sq_health;

/* Kernel blocks (store_sql_kblocks.c): kernels per block the compactor
 * makes. */
#define SQ_KB_RUN 4096

/* The compactor's merge pass's search (store_sql_kblocks.c merges_find):
 * the (session, stream)s with two small blocks or more (n below ?1, the
 * kernels per block, at most SQ_KB_RUN).  "n < 4096" is migration 26's
 * kblocks_small's WHERE term, spelt literally for the planners: SQLite
 * uses a partial index only when the query has that term, and
 * PostgreSQL cannot prove it from a parameter in a generic plan.  An
 * index range over the small blocks alone, not a read of every kblocks
 * row (tests/server/test_srv_kb_plan.c checks the plan). */
#define SQ_KB_SMALL " n < 4096"
_Static_assert(SQ_KB_RUN == 4096, "SQ_KB_SMALL spells it");
#define SQ_KB_MERGES_SQL                                                       \
    "SELECT sess, stream, count(*), min(seq_lo) FROM kblocks "                 \
    "WHERE" SQ_KB_SMALL                                                        \
    " AND n < ?1 GROUP BY sess, stream HAVING count(*) >= 2"                   \
    " ORDER BY sess, stream"
/* The merge's delete of a merged source's rows (printf: the table, and
 * for kblocks " AND n=?4"; store_sql_kblocks_merge.c del_merged):
 * test_srv_kb_plan checks PostgreSQL's plan of it on kbnames. */
#define SQ_KB_DEL_FMT                                                          \
    "DELETE FROM %s WHERE sess=?1 AND stream=?2 AND seq_lo=?3%s"
/* The name sorts' read of one name's kbnames rows (desc: longest first;
 * tied: the rows tied at ?5, else the next ?6 past it; ?1 sess, ?2/?3
 * the time range, ?4 name_id; store_sql_kblocks_names.c): by kbnames_sn,
 * test_srv_kb_plan checks. */
const char *sq_kb_nord_sql(int desc, int tied);

typedef struct sq_kcold sq_kcold;

struct srv_store {
    char path[4096];       /* SQLite: the database file (store_sql_health.c) */
    pthread_mutex_t wlock; /* the one writer connection and the caches */
    sdb *w;
    sdb_stmt *ws[WS_N];
    rl_map sess_cache;             /* uuid (2 words) -> int64 rowid */
    rl_map launch_cache;           /* (sess, cfg) -> sq_launch */
    rl_map kagg, tl, kscope, sacc; /* per-batch accumulators */
    rl_map srl;                    /* per-batch: (sess, src, b) -> sq_srl */
    rl_map kcount; /* per-batch: (sess, stream) -> kernel rows written */
    /* per-batch: (sess, lvl, b, tid) -> API calls (store_sql_capi.c) */
    rl_map capi;
    /* the last entry each of them gave (rl_memo): a stream's kernels come
     * in time order, so its next kernel mostly lands in the same timeline
     * bucket of every level but the finest, the same scope and session -
     * checked before the hash.  tl and capi by lane / thread (SQ_MEMO_N
     * slots, a hash of it) and level. */
#define SQ_MEMO_N 16
    rl_memo tl_memo[SQ_MEMO_N][RL_TL_LEVELS];
    rl_memo capi_memo[SQ_MEMO_N][RL_TL_LEVELS];
    /* the open run of each memo slot's lane / thread (sq_tlrun) */
    sq_tlrun tl_run[SQ_MEMO_N];
    sq_capirun capi_run[SQ_MEMO_N];
    rl_memo kscope_memo, sacc_memo;
    char sid_last[36]; /* the session sess_id gave last (store_sql_ingest.c) */
    int64_t sid_last_id;
    uint64_t sid_gen;
    /* group commit (store_sql_igroup.c): the batches waiting for a
     * transaction, whether one of their threads is writing a group now,
     * and what has committed (under wlock) */
    pthread_mutex_t gq_lock;
    pthread_cond_t gq_cond;
    struct sq_ibatch *gq_head, *gq_tail;
    int gq_leader;
    uint64_t ing_commits, ing_batches;
    uint64_t ing_ns[SRV_ING_NT]; /* srv_store_ingest_times (atomic adds) */
    int ing_want; /* ingest writers waiting for wlock (sq_ingest_give) */
    sdb_stmt *capi_put, *capi_long_put; /* prepared on first use */
    sdb_stmt *capi_put_grp;             /* SQLite: SQ_UPGROUP rows */
    struct sq_lite_tl1 *capi_pk;        /* SQLite: level 0's packs */
    /* the batch writer (sq_writer, chosen by the database) and its own
     * state; the batch's outcome while it is written */
    const struct sq_writer *wr;
    void *wst;
    srv_ingest_res *bres;
    /* when ANALYZE (PostgreSQL) or the statistics pass (SQLite:
     * sq_lite_stats_pass) last ran (Unix s); SQLite: statistics analyzed
     * that the readers have not been made to reload yet */
    int64_t analyzed;
    int stats_reload;
    struct sq_ckpt *ckpt;    /* SQLite: the WAL's checkpointer thread */
    struct sq_ext *ext;      /* SQ_EXT_SESS heaps (store_sql_ext.c) */
    struct sq_ext *ext_last; /* the slot a kernel last went to */
    uint32_t ext_k, ext_gen;
    uint64_t ext_clock;
    uint64_t ext_txn;      /* ingest transactions begun (sq_ext_kac) */
    int ext_dirty;         /* keys added in this batch */
    sq_ext_row *del, *put; /* kext rows leaving, coming in this batch */
    size_t ndel, del_cap, nput, put_cap;
    /* seq ranges (store_sql_gaps.c): the batch in hand, per line of it
     * whether it was accepted and its session's row id, the runs they
     * form, and per (session, stream) the range this writer extended
     * last (a hint the SQL re-checks: another server may have moved it) */
    const srv_ev *bev;
    uint8_t *bacc;
    int64_t *bsess;
    size_t bcap;
    sq_run *runs;
    size_t nruns, runs_cap;
    rl_map seqhint; /* (sess, st) -> sq_run */
    /* kernel blocks (store_sql_kblocks.c): the writer's codec state and
     * buffers (allocated on first use) */
    struct kblock_enc *kb_enc;
    struct kblock_dec *kb_dec;
    struct kblock_ev *kb_ev;
    struct kblock_index *kb_idx;
    uint64_t *kb_ndur;  /* per index name: min, then max duration */
    uint32_t *kb_nslot; /* name id -> index place (kb_names_insert) */
    /* the compactor's merges prepared off the writer's lock, with codec
     * state of their own (store_sql_kblocks_compact.c) */
    struct kb_prepper *kb_pr;
    /* blocks the last naming/merge pass could not decode (logged on change) */
    uint64_t kb_unnamable, kb_unmergeable;
    uint64_t ob_unmergeable; /* op blocks (store_sql_oblocks_compact.c) */
    /* timeline ranges whose pack does not decode (store_sql_tlpack.c;
     * logged on change) */
    uint64_t tl_unpackable;
    /* kbnames ranges that cannot be packed (store_sql_kbnpack.c; logged
     * on change) */
    uint64_t kbn_unpackable;
    /* API call summary ranges whose pack does not decode
     * (store_sql_capipack.c; logged on change) */
    uint64_t capi_unpackable;
    /* the writer's statement of KB_NAMES_ROWS kbnames rows, kept: one
     * prepare (on PostgreSQL a round trip) per server, not per block */
    sdb_stmt *kb_names_st;
    /* the writer's statements of 1, 2, 4, ... KX_ROWS kxrow rows
     * (store_sql_kxrow.c), kept: [i] writes 2^i rows */
    sdb_stmt *kx_put_st[SQ_KX_PUT_N];
    /* the writer's kblocks insert, kbspan upsert and kbunnamed insert
     * (store_sql_kblocks.c), kept: one prepare per server, not per block */
    sdb_stmt *kb_put_st[3];
    /* kx_stored_bound's searches (side, which), kept: one prepare per
     * server, not up to four per merged block */
    sdb_stmt *kx_bound_st[2][2];
    /* this batch wrote blocks already: a kext key it added and drops
     * again may have its kxrow row (store_sql_ext.c deletes it) */
    int kx_wrote;
    /* the parts of a batch given in parts are being written: the held
     * kernels wait for the last one (sq_kbi_flush writes blocks of the
     * whole batch, not of each part) */
    int kbi_hold;
    /* ... and the time this group's writer spent getting them (parsing:
     * counted as the request's parse, not the store's write) */
    uint64_t part_ns;
    /* queries' counters since start (/metrics; relaxed atomics): blocks
     * decoded (whole or some columns), pages sorted by duration of a
     * session with blocks answered from kext and its kept rows, and those
     * that read the blocks; block index rows the scans read */
    uint64_t kq_decoded, kq_kept, kq_scanned, kq_indexed;
    /* ... and the API calls' summary rows (capi, packed buckets too) the
     * /calls summaries read */
    uint64_t kq_capi_rows;
    /* ... and the op blocks' rows a time range's lookup read
     * (store_sql_oblocks_read.c) */
    uint64_t kq_ob_rows;
    unsigned char *kb_buf;
    /* --kernel-store=blocks: ingest writes kernels as blocks, and its
     * state (store_sql_kblocks_ingest.c) */
    int kstore_blocks;
    /* with kstore_blocks, the API calls' level 0 (capi lvl 0) is computed
     * by /calls (store_sql_q_capi0.c), not written: PostgreSQL only (set
     * at open), where those rows were 6.8 of 38.3 B/kernel.  SQLite's
     * capi (WITHOUT ROWID, clustered) holds them in 1.3 B/kernel, under
     * the 16 B target already, and computing made /calls at level-0
     * widths 4x slower (p50 9.9 -> 42 ms): there they stay stored */
    int capi0_query;
    struct sq_kbi *kbi;
    struct sq_obi *obi; /* ops held for blocks (store_sql_oblocks_ingest.c) */
    /* the ingest's blocks encoded on two threads (store_sql_kblocks_par.c)
     * and the helper they share with the body's parse (ingest_par.c; set
     * by the HTTP server, NULL: one thread) */
    struct sq_kbp *kbp;
    struct ingest_par *par;
    sq_kcold *kc; /* the cold tier (store_sql_kcold.c); NULL: none */
    /* per read connection (r[i]): its block decoder and decoded block
     * (store_sql_kblocks_read.c), allocated on first use */
    struct kb_rd *kb_rd[SQ_READERS_MAX];
    /* the decoded blocks the reads share (kbcache.h); NULL: none */
    struct kbcache *kbc;
    /* SQLite: the writer's page cache as it read back (bytes; 0: not
     * set: srv_store_set_sqlite_wcache) */
    uint64_t sqlite_wcache;
    pthread_mutex_t rlock;
    pthread_cond_t rcond;
    sdb *r[SQ_READERS_MAX];
    int rfree[SQ_READERS_MAX];
    unsigned nr;
    sq_health health;
};

/* Kernel blocks (store_sql_kblocks.c).  sq_kb_stored: the kernels of
 * session sess with a seq in [lo, hi] that its blocks hold (and with rows
 * set, its kernel rows too), each passed to seen (a seq may come twice);
 * on the writer, its lock held.  The one duplicate check against blocks:
 * a single seq (lo == hi) seeks it, a range decodes each block once.
 * sq_kb_member: whether the session's blocks hold kernel seq (*in), the
 * same check for one seq.  sq_kb_release: the codec state, at close. */
typedef void (*sq_kb_seen_fn)(void *arg, uint64_t seq);
int sq_kb_stored(srv_store *s, int64_t sess, int64_t lo, int64_t hi, int rows,
                 sq_kb_seen_fn seen, void *arg);
int sq_kb_member(srv_store *s, int64_t sess, uint64_t seq, int *in);
void sq_kb_release(srv_store *s);
void sq_kb_prep_release(srv_store *s);
/* SQLite: analyze the tables filled without statistics so far, and have
 * the readers reload them (store_sql_admin.c); how many were analyzed
 * into *analyzed. */
int sq_lite_stats_pass(srv_store *s, int *analyzed);
/* SQLite: the WAL checkpointed on a thread of its own instead of in the
 * commit that fills it (store_sql_ckpt.c); url: the database.  A start
 * that fails leaves SQLite's checkpoint at commit (returns the error). */
int sq_ckpt_start(srv_store *s, const char *url);
void sq_ckpt_stop(srv_store *s);
/* Checkpoints the thread ran and WAL pages it copied under the writer's
 * lock (tests, the debug log). */
void sq_ckpt_counts(srv_store *s, uint64_t *runs, uint64_t *locked_frames);
/* The bytes of the block a kblocks row stands for.  Every reader of a
 * block goes through here (never qcol_blob on the `block` column itself)
 * so that a block kept elsewhere (a cold tier) reads the same: st's column
 * col holds the row's `block`; sess, stream, seq_lo are the row's key.
 * *b stays valid until st steps again or is finalized, and for a cold
 * block (one read from the cold tier's cache or S3 into a buffer of the
 * calling thread) until the next sq_kb_bytes on the same thread.  A cold
 * block S3 cannot give now is GPUFL_EAGAIN (the API's 503). */
int sq_kb_bytes(srv_store *s, sdb_stmt *st, int col, int64_t sess,
                int64_t stream, int64_t seq_lo, const unsigned char **b,
                size_t *len);
/* The same for an oblocks row (store_sql_oblocks_read.c): st's column col
 * holds its `payload`, sess and seq_lo are its key.  Every reader of an
 * op block's bytes goes through here. */
int sq_ob_bytes(srv_store *s, sdb_stmt *st, int col, int64_t sess,
                int64_t seq_lo, const unsigned char **b, size_t *len);
/* A transaction of the writer that other servers' ingest waits for (the
 * advisory lock on PostgreSQL), and its end: COMMIT, or ROLLBACK when rc
 * is not 0 (rc returned).  Under s->wlock. */
int sq_kb_tx_begin(srv_store *s);
int sq_kb_tx_end(srv_store *s, int rc);

/* A pass over items found under the writer's lock, worked through in
 * its transactions (store_sql_pass.c): the timeline packer's and the
 * compactor's.  What a transaction's steps did, added on its commit. */
typedef struct sq_pass_tx {
    uint64_t cnt[2]; /* the pass's counts (cnt of sq_pass_run) */
    uint64_t cost;   /* towards sq_pass.tx_cost */
    uint64_t bad;    /* items passed over: their input does not decode */
} sq_pass_tx;
typedef struct sq_pass {
    /* *n items found (under s->wlock); *more 1: find again when they are
     * done (a pass of several rounds) */
    int (*find)(srv_store *s, void *ctx, size_t *n, int *more);
    /* One step on item i in the writer's open transaction, adding to *t;
     * *done 1 when item i is finished.  Bad input is counted in t->bad
     * with nothing changed, not an error: an error rolls the transaction
     * back and ends the pass. */
    int (*step)(srv_store *s, void *ctx, size_t i, sq_pass_tx *t, int *done);
    void *ctx;
    uint64_t tx_cost; /* a transaction takes steps while its cost is below */
    /* the warning when the count of bad items changes: "<count> <what>",
     * the count of the last pass kept in *bad_last */
    const char *tag, *bad_what;
    uint64_t *bad_last;
} sq_pass;
/* p's pass; its transactions' counts added to cnt.  0 or the first error. */
int sq_pass_run(srv_store *s, const sq_pass *p, uint64_t cnt[2]);

/* A line whose newness was settled after put_line: counted as a
 * duplicate, or as accepted into its session's counters (fresh). */
int sq_line_done(srv_store *s, int64_t sess, const srv_ev *e, int fresh);
/* The one form of a kernel row: a kernel line and its launch as the
 * codec's event (absent occ and tid as the table keeps them), and that
 * event as the kernels row's 25 parameters from index b + 1. */
struct kblock_ev;
void sq_kernel_ev(const srv_ev *e, const sq_launch *l, struct kblock_ev *o);
void sq_kernel_bind(sdb_stmt *st, int b, int64_t sess,
                    const struct kblock_ev *e);

/* The writer's statements, by WS_* (store_sql.c). */
extern const char *const sq_wsql[WS_N];

/* A rollup's upserts on SQLite, SQ_UPGROUP rows a statement
 * (store_sql_upgroup.c).  sq_upgroup_prepare: sql1, a one-row
 * "INSERT INTO t VALUES(?,...) ON CONFLICT ...", over SQ_UPGROUP rows of
 * ncol (<= SQ_UPGROUP_COLS) values.  sq_upgroup_run: nrow rows of ncol
 * values each in v, whole groups through grp and the rest through one
 * (sql1's statement). */
#define SQ_UPGROUP 64
#define SQ_UPGROUP_COLS 8
int sq_upgroup_prepare(sdb *db, const char *sql1, int ncol, sdb_stmt **out);
int sq_upgroup_run(sdb_stmt *grp, sdb_stmt *one, const uint64_t *v, size_t nrow,
                   int ncol);

/* Health (store_sql_health.c): the watcher every connection reports to
 * (arg: the srv_store), and readiness: GPUFL_OK, GPUFL_EUNAVAIL (database
 * unreachable) or GPUFL_ENOSPC (writes fail for disk space). */
void sq_health_init(srv_store *s, const char *url);
void sq_health_release(srv_store *s);
void sq_health_watch(void *arg, int ev, const char *why);

/* Borrow a query connection (blocks until one is free), give it back. */
sdb *sq_reader_get(srv_store *s);
void sq_reader_put(srv_store *s, sdb *db);
/* sdb_step() answer -> 0 or gpufl_err */
int sq_err(int rc);
/* One integer of a query (its first column of its first row) on db;
 * 0 when it fails or is NULL (no dbstat, say). */
uint64_t sq_one(sdb *db, const char *sql);
/* Kernel row counts per (session, stream) (store_sql_kcount.c), on the
 * writer in its transaction: sq_kcount_add, n rows of the batch written
 * (summed, written by sq_kcount_flush before COMMIT); sq_kcount_sub, n
 * rows deleted (at once); sq_kcount_reset, the batch's sums dropped (on
 * ROLLBACK); sq_kcount_release, at close. */
int sq_kcount_add(srv_store *s, int64_t sess, uint64_t stream, int64_t n);
int sq_kcount_flush(srv_store *s);
int sq_kcount_sub(srv_store *s, int64_t sess, int64_t stream, int64_t n);
void sq_kcount_reset(srv_store *s);
void sq_kcount_release(srv_store *s);
/* The schema of db brought to this server's version, one transaction per
 * migration (store_sql_schema.c); 0, or gpufl_err with why in eb. */
int sq_schema_migrate(sdb *db, char *eb, size_t ec);
/* fn(s, arg) in one write transaction under the writer lock: committed
 * when it returns 0, rolled back otherwise; its result
 * (store_sql_memprof.c). */
int sq_write_tx(srv_store *s, int (*fn)(srv_store *, void *), void *arg);
/* The session a memory profile or OOM report belongs to
 * (store_sql_memprof.c): the one named by psid, else the newest of host
 * and pid whose time range meets [start, end]; *sess its row id (0: none)
 * and sid its id ("" when none; psid as given when not stored). */
int sq_mem_link(srv_store *s, srv_str psid, srv_str host, uint64_t pid,
                uint64_t start, uint64_t end, int64_t *sess, char *sid,
                size_t cap);
/* Binds the columns 1..5 both tables begin with: host, pid, comm (NULL
 * when comm.p is), sess and sid (NULL when 0 / ""), as sq_mem_link found
 * them. */
void sq_mem_bind_owner(sdb_stmt *st, srv_str host, uint64_t pid, srv_str comm,
                       int64_t sess, const char *sid);

/* ---- store_sql_ingest.c ---- */
/* A kernel row the writer has written (fresh: new, else a duplicate
 * already stored): counted in the batch's outcome, and a new one feeds
 * the rollups and its session's counters. */
int sq_kernel_done(srv_store *s, int64_t sess, const srv_ev *e,
                   const sq_launch *l, int fresh);

/* Idle verdicts (store_sql_fleet.c): stores one fresh `verdict` line. */
int sq_fleet_put(srv_store *s, int64_t sess, const srv_ev *e);
/* GPU waste (store_sql_waste.c): stores one fresh `waste` line and adds
 * it to the hourly rollup; before a session's rows are deleted, takes
 * them out of the rollup again. */
int sq_waste_put(srv_store *s, int64_t sess, const srv_ev *e);
int sq_waste_unroll(srv_store *s, int64_t sess);
/* The owner key of a line in dimension dim (SRV_WBY_*): a pod is
 * "namespace/pod", a GPU its UUID (else "host:index"); "" = unknown. */
void sq_waste_key(const srv_waste *w, int dim, char *out, size_t cap);
/* Table waste's columns as a line's fields; a row of them, from column
 * 0, into *w. */
#define SQ_WASTE_COLS                                                          \
    "host, dev, uuid, model, usr, ns, pod, container, job, app, t0, t1,"       \
    " busy, w_idle, w_held, w_phantom, w_stuck, w_alloc, simulated"
void sq_waste_row(sdb_stmt *st, srv_waste *w);
/* A GPU verdict (sq_fleet_put) into its GPU's runs of one state. */
#define SQ_RUN_HOLD_NS (600ll * 1000000000ll)
int sq_waste_run(srv_store *s, int64_t sess, const char *host, int64_t dev,
                 int64_t ts, srv_str state);

/* ---- store_sql_ingest.c, store_sql_igroup.c: batches into the store ---- */
/* One ingest batch waiting for, or written in, a group's transaction. */
typedef struct sq_ibatch {
    const srv_ev *ev;
    size_t n;
    srv_ingest_res *r;
    int rc, done;
    struct sq_ibatch *next;
    /* a batch in parts (srv_store_ingest_parts; ev NULL, n its most
     * lines) */
    srv_ingest_part_fn part;
    void *part_ctx;
} sq_ibatch;
/* The batches b[0..nb) in one transaction (the caller holds wlock): each
 * batch's lines and outcome (b[i].r) as if it were alone, the rollups of
 * all of them merged once, then one COMMIT.  On failure nothing of any of
 * them is stored (rolled back) and their outcomes are zero. */
int sq_ingest_group(srv_store *s, sq_ibatch *b, size_t nb);
/*
 * Maintenance gives way to ingest (store_sql_igroup.c).  A compactor or
 * packer transaction held wlock for up to ~50 steps (on PostgreSQL
 * ~190 ms) while an ingest batch waited: a quarter of the ingest's time
 * at 2M kernels on PostgreSQL (docs/server.md "Maintenance gives way").
 * Now a maintenance transaction takes wlock by sq_maint_lock (which
 * returns the time, t0) and ends after the step where sq_ingest_give says
 * an ingest writer waits and it has held the lock the writer's give_ns
 * (10 ms on PostgreSQL, 50 on SQLite) - not after every step: each COMMIT
 * costs (on SQLite an fsync and its pages written again, under the lock).
 * sq_maint_unlock(s, gave) then returns, when it gave way, once the
 * writer has the lock (10 ms at most): a thread that unlocks and locks
 * again at once mostly gets the lock first, the woken waiter not yet
 * running.
 */
uint64_t sq_maint_lock(srv_store *s);
int sq_ingest_give(srv_store *s, uint64_t t0);
void sq_maint_unlock(srv_store *s, int gave);

/* ---- store_sql_rollup.c: what new lines add up to ---- */
/* The memo slot (srv_store's tl_memo, capi_memo) of a lane or thread. */
static inline unsigned sq_memo_slot(uint64_t x)
{
    x *= 0x9E3779B97F4A7C15ull;
    return (unsigned)(x >> 60) & (SQ_MEMO_N - 1);
}
/* A new kernel into this batch's accumulators: its name's aggregate
 * (s->kagg), the timeline buckets (s->tl), its scope's totals (s->kscope)
 * and the session's kext heaps. */
int sq_acc_kernel(srv_store *s, int64_t sess, const srv_ev *e,
                  const sq_launch *l);
/* The batch's open timeline runs (sq_tlrun) into s->tl: before s->tl is
 * read, after the last kernel of the group is counted.  GPUFL_EFULL when
 * s->tl is full. */
int sq_tl_runs_flush(srv_store *s);
/* Adds a stored kagg row (its columns from c: n, total, min, max, sum_occ,
 * n_occ, regs, smem, hist) into an accumulator. */
void sq_kagg_merge(sq_kagg *a, sdb_stmt *g, int c);
/* The batch's session counters and time spans (s->sacc) into sessions. */
int sq_flush_sessions(srv_store *s, int64_t now);
/* A new gpu or host sample into this batch's 60 s buckets; written (merged
 * with the stored buckets) by sq_flush_srl before COMMIT. */
int sq_acc_sample(srv_store *s, int64_t sess, const srv_ev *e);
int sq_flush_srl(srv_store *s);

/* ---- store_sql_gaps.c: stored seq ranges and what is missing ---- */
/* Room for a batch of n lines, all marked not accepted yet. */
int sq_gaps_begin(srv_store *s, const srv_ev *ev, size_t n);
/* Line e of the batch (sess: its session's row id) was stored as new. */
static inline void sq_gaps_note(srv_store *s, const srv_ev *e, int64_t sess)
{
    size_t i = (size_t)(e - s->bev);
    s->bacc[i] = 1;
    s->bsess[i] = sess;
}
/* Writes the batch's accepted seqs into seqr (before COMMIT). */
int sq_gaps_flush(srv_store *s, size_t n);
/* Forgets the hints (after a ROLLBACK or a prune). */
void sq_gaps_reset(srv_store *s);
void sq_gaps_release(srv_store *s);
/* "missing" (exact) and "gaps" of session sess, members of an open
 * object in w; a borrowed read connection. */
int sq_gaps_json(sdb *db, int64_t sess, jw *w);

/* ---- store_sql_q_triggers.c: a flight-recorder dump's trigger lines ---- */
/* The list's columns: the firings (distinct times) and the latest
 * trigger line's text of session row "sessions.id". */
/* (count(DISTINCT ts) over the same rows made SQLite read the session's
 * lines by the primary key instead of the partial index: a derived table
 * keeps it on lines_trigger) */
#define SQ_TRIGGER_COLS                                                        \
    "(SELECT count(*) FROM (SELECT DISTINCT ts FROM lines WHERE"               \
    " lines.sess=sessions.id AND type=20) f), (SELECT body FROM lines WHERE"   \
    " lines.sess=sessions.id AND type=20 ORDER BY ts DESC, st LIMIT 1)"
/* "trigger": {"count", "last", "detail"} when count > 0, a member of an
 * open object in w. */
void sq_trigger_summary(jw *w, int64_t count, const char *last_body);
/* "triggers" (one per firing, oldest first) and "triggers_cut" of
 * session sess, members of an open object in w; a borrowed read
 * connection. */
int sq_triggers_json(sdb *db, int64_t sess, jw *w);
/* The seq missing in one (session, stream) group of seqr rows: max(hi) + 1
 * - sum(hi - lo + 1), arranged so no term passes 2^63-1 (a seq may be
 * 2^63-1; PostgreSQL would fail, SQLite turn it into a REAL). */
#define SQ_MISSING_EXPR "(max(hi) - sum(hi - lo) - count(*) + 1)"
/* The list's light form: SQL for the lines missing in session row
 * "sessions.id", as one column. */
#define SQ_MISSING_COL                                                         \
    "(SELECT coalesce(sum(CASE WHEN m > 0 THEN m ELSE 0 END), 0) FROM"         \
    " (SELECT " SQ_MISSING_EXPR " AS m FROM seqr WHERE"                        \
    " seqr.sess=sessions.id GROUP BY st) g)"

/* ---- store_sql_capi.c: the API calls' summary kept at ingest ---- */
/* A new line's API call (if any) into the batch's buckets (s->capi). */
int sq_capi_acc(srv_store *s, int64_t sess, const srv_ev *e);
/* Merges the batch's buckets into capi (before COMMIT). */
int sq_capi_flush(srv_store *s);
void sq_capi_init(srv_store *s);
void sq_capi_release(srv_store *s);

/* ---- store_sql_ext.c: the longest and shortest kernels per session ---- */
int sq_ext_add(srv_store *s, int64_t sess, int64_t dur, int64_t seq);
/* Side d's key of rank r (1: the best) of session sess as this batch's
 * heaps hold it now, or the heap's last when it holds fewer, into out
 * (dur, seq): kext holds every kernel of the session at or before it
 * among its first r.  *have 0: not known (the session's heaps are not in
 * memory) or none.  0, or GPUFL_ENOMEM. */
int sq_ext_kth(srv_store *s, int64_t sess, int d, uint32_t r, int64_t out[2],
               int *have);
/* The keys leaving a side's heap were each its worst when they left, and
 * what it keeps is better than all of them: so the rows of that session
 * and side at or past the best key leaving are exactly those leaving
 * (kext holds the heap's keys, kxrow rows of some of them), one range
 * delete for them all.  Folds leaving key r into cut[0..*ncut), each
 * (session, side)'s best key leaving so far: 1, or 0 when r's session and
 * side has no cut and max are taken (r is then deleted by its key).
 * far (NULL: not wanted) gets, beside each cut, the duration of its worst
 * key leaving: the first to leave was the side's worst stored row (kext
 * holds the heap's keys, ext_load), so no row lies past it and the range
 * may end there (PostgreSQL: sq_pg_kext). */
int sq_ext_cut_add(sq_ext_row *cut, int64_t *far, size_t *ncut, size_t max,
                   const sq_ext_row *r);
/* Writes the batch's kext changes (before COMMIT), through the writer. */
int sq_ext_flush(srv_store *s);
/* Forgets the heaps (after a ROLLBACK or a prune); they are reloaded. */
void sq_ext_reset(srv_store *s);
void sq_ext_release(srv_store *s);

/* ---- store_sql_kagg_cache.c: PostgreSQL's kagg rows kept by the writer
 * between batches ---- */
/* A session's kagg rows as this writer last wrote them (name id -> row),
 * held beside its kext heaps and as valid as they are: sessions.kext_ver
 * is bumped by every batch that adds kernels to the session, by whichever
 * server, and a slot whose version is older is dropped (store_sql_ext.c).
 * At most SQ_KAC_NAMES names and SQ_KAC_BYTES of histograms a session; a
 * name past them is read from kagg as before. */
#define SQ_KAC_NAMES 4096
#define SQ_KAC_BYTES ((size_t)1 << 20)
typedef struct sq_kac {
    rl_map m;
    size_t bytes;
} sq_kac;
void sq_kac_release(sq_kac *c);
/* Session sess's cache, when its heaps are in memory and were checked
 * against the database in this transaction; else NULL. */
sq_kac *sq_ext_kac(srv_store *s, int64_t sess);
/* Merges the cached stored rows into the batch's s->kagg (marking those
 * keys cached); returns how many keys are left to read from kagg. */
size_t sq_kac_merge(srv_store *s);
/* The batch's merged rows into the caches, once the kagg upsert wrote
 * them (a name that cannot be kept is marked unknown: read next time). */
void sq_kac_store(srv_store *s);
/* One merged row k (its histogram encoded h[0, hn), as written) into its
 * session's cache (SQLite's flush, which writes a row at a time). */
void sq_kac_keep(srv_store *s, const uint64_t *k, const sq_kagg *a,
                 const unsigned char *h, size_t hn);

/* The batch writer (sq_writer): store_sql_writer_int.h. */

/* PostgreSQL: every connection's session settings. */
#define SQ_PG_SETUP "SET client_min_messages=warning"

#endif
