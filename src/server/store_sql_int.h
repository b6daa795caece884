/*
 * store_sql_int.h - the store's private state, shared by its write side
 * (store_sql.c) and its queries (store_sql_q.c, store_sql_view.c); the
 * same code serves SQLite and PostgreSQL through db.h.
 */
#ifndef GPUFL_SERVER_STORE_SQL_INT_H
#define GPUFL_SERVER_STORE_SQL_INT_H

#include <pthread.h>

#include "db.h"
#include "rollup.h"
#include "store.h"

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
    WS_SRL_GET,
    WS_SRL_PUT,
    WS_SEQ_EXT,
    WS_SEQ_TAKE,
    WS_SEQ_JOIN,
    WS_SEQ_ADD,
    WS_N
};

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
} sq_kagg;

typedef struct sq_tl {
    uint64_t n, busy, top_name, top_dur;
} sq_tl;

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
} sq_sacc;

/* Entries a batch accumulator or cache may hold. */
#define SQ_ACC_MAX (4u << 20)
#define SQ_CACHE_MAX (1u << 20)

/* PostgreSQL: a kernel line waiting for the batch's multi-row INSERT
 * (a round trip per row would cap ingest at ~10k rows/s). */
typedef struct sq_pend {
    const srv_ev *e;
    int64_t sess;
    sq_launch l;
    int fresh;
} sq_pend;

#define SQ_PEND_MAX 16384

/* SQLite: kernels known new (after every stored kernel of their session)
 * go in this many rows per INSERT: one statement end per row was ~10 %
 * of the store's time. */
#define SQ_KGROUP 16

/* kext (store_sql_ext.c): keys kept per session and side by default
 * (GPUFL_SERVER_TOPK changes it: tests), sessions whose heaps stay in
 * memory, and a stored key leaving in this batch. */
#define SQ_EXT_K 4096
#define SQ_EXT_K_MAX (1u << 20)
#define SQ_EXT_SESS 32
struct sq_ext;
typedef struct sq_ext_del {
    int64_t sess;
    int side;
    int64_t dur, seq;
} sq_ext_del;

/* A run of stored seqs of one (session, stream): a batch's accepted lines
 * (store_sql_gaps.c), or the stored range a writer last extended. */
typedef struct sq_run {
    int64_t sess, lo, hi;
    int st;
} sq_run;

/* Ranges of missing seqs listed per stream in a session's "gaps"; the
 * count is always exact. */
#define SQ_GAP_RANGES_MAX 100

/* PostgreSQL: the rows a batch stages with COPY (text format). */
typedef struct sq_cbuf {
    char *p;
    size_t len, cap;
} sq_cbuf;

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

typedef struct sq_store {
    srv_store base;
    char path[4096];       /* SQLite: the database file (store_sql_health.c) */
    pthread_mutex_t wlock; /* the one writer connection and the caches */
    sdb *w;
    sdb_stmt *ws[WS_N];
    rl_map sess_cache;             /* uuid (2 words) -> int64 rowid */
    rl_map launch_cache;           /* (sess, cfg) -> sq_launch */
    rl_map kagg, tl, kscope, sacc; /* per-batch accumulators */
    rl_map srl;                    /* per-batch: (sess, src, b) -> sq_srl */
    sq_pend *pend;                 /* SQ_PEND_MAX, PostgreSQL only */
    sq_pend kq[SQ_KGROUP];         /* SQLite: new kernels, not yet written */
    size_t nkq;
    rl_map khigh; /* SQLite: sess -> highest kernel seq stored or in kq */
    /* SQLite: PRAGMA data_version, and its value at this writer's last
     * batch: another process committed in between when it differs, and
     * khigh may be behind what is stored */
    sdb_stmt *dver;
    int64_t dver_last;
    sdb_stmt *kgrp; /* SQLite: SQ_KGROUP kernels in one INSERT */
    size_t npend;
    rl_map pend_idx;         /* (sess, seq) -> 1 + first index in pend */
    sdb_stmt *kmerge;        /* PostgreSQL: kstage -> kernels, RETURNING */
    sdb_stmt *kaget;         /* PostgreSQL: the stored kagg rows of a batch */
    sq_cbuf cb;              /* PostgreSQL: COPY rows being built */
    int staged;              /* PostgreSQL: kstage filled in this transaction */
    int64_t analyzed;        /* PostgreSQL: when ANALYZE last ran (Unix s) */
    struct sq_ext *ext;      /* SQ_EXT_SESS heaps (store_sql_ext.c) */
    struct sq_ext *ext_last; /* the slot a kernel last went to */
    uint32_t ext_k, ext_gen;
    uint64_t ext_clock;
    int ext_dirty; /* keys added in this batch */
    sq_ext_del *del;
    size_t ndel, del_cap;
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
    pthread_mutex_t rlock;
    pthread_cond_t rcond;
    sdb *r[SQ_READERS_MAX];
    int rfree[SQ_READERS_MAX];
    unsigned nr;
    sq_health health;
} sq_store;

/* The writer's statements, by WS_* (store_sql.c). */
extern const char *const sq_wsql[WS_N];

/* Write side (store_sql_ingest.c) and maintenance (store_sql_admin.c). */
int sq_ingest(srv_store *bs, const srv_ev *ev, size_t n, srv_ingest_res *r);
uint64_t sq_db_bytes(srv_store *bs);

/* Health (store_sql_health.c): the watcher every connection reports to
 * (arg: the sq_store), and readiness: GPUFL_OK, GPUFL_EUNAVAIL (database
 * unreachable) or GPUFL_ENOSPC (writes fail for disk space). */
void sq_health_init(sq_store *s, const char *url);
void sq_health_release(sq_store *s);
void sq_health_watch(void *arg, int ev, const char *why);
int sq_ping(srv_store *bs);
int sq_mark_stale(srv_store *bs, uint64_t stale_s, uint64_t heard_since);
int sq_prune(srv_store *bs, const srv_retention *p, uint64_t *n_pruned);
int sq_set_keep(srv_store *bs, const char *sid, int keep);
int sq_key_add(srv_store *bs, const char *name, const char *role,
               const char *prefix, const char *hash, const char *hosts,
               int64_t *id);
int sq_key_list(srv_store *bs, int64_t after, srv_key *out, size_t cap,
                size_t *n);
int sq_key_revoke(srv_store *bs, int64_t id);
int sq_key_lookup(srv_store *bs, const char *hash, char *role, size_t cap,
                  char *hosts, size_t hosts_cap);
/* store_sql_policy.c */
int sq_sess_policy(srv_store *bs, const char *sid, srv_sess_policy *out);

/* Small statement helpers shared by the store files. */
static inline int exec(sdb *db, const char *sql)
{
    return sdb_exec(db, sql);
}

/* Runs a statement with no result rows and resets it. */
static inline int step_done(sdb_stmt *st)
{
    int rc = sdb_step(st);
    sdb_reset(st);
    return sdb_err(rc);
}

static inline void bind_i(sdb_stmt *st, int i, uint64_t v)
{
    sdb_bind_i64(st, i, (int64_t)v);
}

static inline void bind_s(sdb_stmt *st, int i, srv_str s)
{
    if (s.p)
        sdb_bind_text(st, i, s.p, s.n);
    else
        sdb_bind_null(st, i);
}

/* Borrow a query connection (blocks until one is free), give it back. */
sdb *sq_reader_get(sq_store *s);
void sq_reader_put(sq_store *s, sdb *db);
/* sdb_step() answer -> 0 or gpufl_err */
int sq_err(int rc);

/* The query operations (store_sql_q.c, store_sql_view.c). */
int sq_q_hosts(srv_store *s, const srv_q *q, jw *w);
int sq_q_sessions(srv_store *s, const srv_q *q, jw *w);
int sq_q_session(srv_store *s, const srv_q *q, jw *w);
int sq_q_kernels(srv_store *s, const srv_q *q, jw *w);
int sq_q_kernel_agg(srv_store *s, const srv_q *q, jw *w);
int sq_q_kernel(srv_store *s, const srv_q *q, jw *w);
int sq_q_timeline(srv_store *s, const srv_q *q, jw *w);
int sq_q_copies(srv_store *s, const srv_q *q, jw *w);
int sq_q_scopes(srv_store *s, const srv_q *q, jw *w);
int sq_q_profile(srv_store *s, const srv_q *q, jw *w);
int sq_q_system(srv_store *s, const srv_q *q, jw *w);
int sq_q_compare(srv_store *s, const srv_q *q, jw *w);

/* Idle verdicts (store_sql_fleet.c): stores one fresh `verdict` line. */
int sq_fleet_put(sq_store *s, int64_t sess, const srv_ev *e);
int sq_q_fleet(srv_store *s, const srv_q *q, jw *w);
int sq_q_verdicts(srv_store *s, const srv_q *q, jw *w);

/* Memory profiles (store_sql_memprof.c). */
int sq_memprof_put(srv_store *s, const srv_memprof *p, int64_t *id, char *sid,
                   size_t sid_cap);
int sq_q_memory(srv_store *s, const srv_memq *q, jw *w);
int sq_q_memprofs(srv_store *s, const srv_memq *q, jw *w);

/* ---- store_sql_rollup.c ---- */
/* COPY text rows: sq_cb_i/_f/_null append a column, then sep ('\t' or
 * '\n'), into room the caller reserved with sq_cb_reserve (CB_COL bytes
 * a column). */
#define CB_COL 32
int sq_cb_reserve(sq_cbuf *b, size_t n);
void sq_cb_i(sq_cbuf *b, int64_t v, char sep);
/* text of n bytes, escaped: reserve 2 * n + 1 */
void sq_cb_text(sq_cbuf *b, const char *p, size_t n, char sep);
void sq_cb_f(sq_cbuf *b, double v, char sep);
void sq_cb_null(sq_cbuf *b, char sep);
int sq_acc_kernel(sq_store *s, int64_t sess, const srv_ev *e,
                  const sq_launch *l);
int sq_flush_kagg(sq_store *s);
int sq_flush_kagg_pg(sq_store *s);
int sq_flush_rest(sq_store *s, int64_t now);
/* A new gpu or host sample into this batch's 60 s buckets; written (merged
 * with the stored buckets) by sq_flush_srl before COMMIT. */
int sq_acc_sample(sq_store *s, int64_t sess, const srv_ev *e);
int sq_flush_srl(sq_store *s);

/* ---- store_sql_gaps.c: stored seq ranges and what is missing ---- */
/* Room for a batch of n lines, all marked not accepted yet. */
int sq_gaps_begin(sq_store *s, const srv_ev *ev, size_t n);
/* Line e of the batch (sess: its session's row id) was stored as new. */
static inline void sq_gaps_note(sq_store *s, const srv_ev *e, int64_t sess)
{
    size_t i = (size_t)(e - s->bev);
    s->bacc[i] = 1;
    s->bsess[i] = sess;
}
/* Writes the batch's accepted seqs into seqr (before COMMIT). */
int sq_gaps_flush(sq_store *s, size_t n);
/* Forgets the hints (after a ROLLBACK or a prune). */
void sq_gaps_reset(sq_store *s);
void sq_gaps_release(sq_store *s);
/* "missing" (exact) and "gaps" of session sess, members of an open
 * object in w; a borrowed read connection. */
int sq_gaps_json(sdb *db, int64_t sess, jw *w);
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
int sq_missing(srv_store *bs, uint64_t out[SRV_ST_N]);

/* ---- store_sql_ext.c: the longest and shortest kernels per session ---- */
int sq_ext_add(sq_store *s, int64_t sess, int64_t dur, int64_t seq);
/* Writes the batch's kext changes (before COMMIT). */
int sq_ext_flush(sq_store *s);
/* Forgets the heaps (after a ROLLBACK or a prune); they are reloaded. */
void sq_ext_reset(sq_store *s);
void sq_ext_release(sq_store *s);

#endif
