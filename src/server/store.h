/*
 * store.h - the storage interface of gpufl-server: one parsed event batch
 * in, one transaction; queries answer as JSON written into a jw.
 *
 * One implementation (store_sql*.c), written against db.h, whose backends
 * are db_sqlite.c and db_pg.c; only the way an ingest batch's rows go in
 * differs by database (the batch writer, store_sql_int.h).  The store owns
 * its connections and its schema.  Every operation is safe to call from
 * any HTTP thread: ingest is serialised inside the store, queries run
 * concurrently on their own connections.
 *
 * Events reach the store already validated (ingest.c): strings point into
 * the request's decoded body, which outlives the call (borrowed).
 */
#ifndef GPUFL_SERVER_STORE_H
#define GPUFL_SERVER_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "common/jw.h"
#include "common/price.h"

/* The three streams, in URL order. */
enum { SRV_ST_DEVICE = 0, SRV_ST_SCOPE = 1, SRV_ST_SYSTEM = 2, SRV_ST_N = 3 };

/* Event types (docs/events.md). */
typedef enum srv_type {
    EV_SESSION = 1,
    EV_SESSION_END,
    EV_DICT,
    EV_LOSS,
    EV_KERNEL,
    EV_MEMCPY,
    EV_MEMSET,
    EV_SYNC,
    EV_ALLOC,
    EV_FREE,
    EV_SCOPE_BEGIN,
    EV_SCOPE_END,
    EV_MARKER,
    EV_COUNTER,
    EV_SASS,
    EV_PCSAMP,
    EV_GPU,
    EV_HOST,
    EV_VERDICT, /* gpufl idle (store_sql_fleet.c) */
    EV_TRIGGER, /* a flight-recorder dump's cause (docs/recorder.md) */
    EV_WASTE,   /* gpufl idle's GPU time per owner (store_sql_waste.c) */
    EV_NTYPES
} srv_type;

/* Dictionary kinds. */
enum { DK_NAME = 0, DK_PATH = 1, DK_STACK = 2, DK_LAUNCH = 3 };

/* Numeric system-sample fields kept as columns (docs/api.md lists them);
 * the table is shared by ingest and query so they cannot drift. */
#define SRV_SYS_NFIELDS 21
extern const char *const srv_sys_fields[SRV_SYS_NFIELDS];

/* A borrowed string: bytes, not NUL-terminated. */
typedef struct srv_str {
    const char *p;
    size_t n;
} srv_str;

/* One validated event line. */
typedef struct srv_ev {
    uint32_t line; /* 1-based line number in the request body */
    uint8_t st;    /* SRV_ST_* */
    uint8_t type;  /* srv_type */
    uint8_t dkind; /* dict: DK_* */
    uint8_t simulated;
    uint8_t streams; /* session: bit per SRV_ST_* it writes; 0: not said */
    char sid[40];    /* NUL-terminated UUID */
    uint64_t seq, ts;
    /* numbers, 0 when absent (the format omits zero fields) */
    uint64_t dev, stream, corr, dur, bytes, scope, path, stack, id, parent,
        depth, tid, name, cfg, func, file, srcline, pc, inst, thread_inst,
        sectors, sectors_ideal, samples, regs, smem, dsmem, lmem, pid, start,
        api_dur, lines, lost, count;
    uint64_t grid[3], block[3];
    int64_t api_off, value;
    double occ;     /* < 0 when absent */
    uint32_t flags; /* EVF_* */
    /* dname: a name dict's string; demangled: its readable form (p NULL:
     * not given) */
    srv_str app, host, kind, reason, lim, text, dname, demangled, raw;
    /* session: the job it belongs to (docs/events.md "session"); p NULL
     * and the job_set bit clear when absent */
    srv_str job, job_source, step_scope, sim_perturb;
    uint32_t rank, world_size, local_rank;
    uint8_t job_set; /* SRV_JOB_* bits: which of the three are present */
    double sys[SRV_SYS_NFIELDS];
    uint32_t sys_set; /* bit i: sys[i] present */
} srv_ev;

#define SRV_JOB_RANK 1u
#define SRV_JOB_WORLD 2u
#define SRV_JOB_LOCAL 4u
/* ranks and world sizes are below this (a sanity cap, not a cluster's) */
#define SRV_JOB_RANK_MAX (1u << 24)

#define EVF_ASYNC 1u
#define EVF_PINNED 2u
#define EVF_COOP 4u
#define EVF_UNCLOSED 8u

/* Per-batch outcome, filled by srv_store_ingest. */
typedef struct srv_ingest_res {
    uint64_t accepted, duplicate;
} srv_ingest_res;

/* Query parameters (api.c parses them; 0/NULL = not given). */
typedef struct srv_q {
    const char *sid; /* session UUID */
    const char *host, *app, *state, *search, *name, *sort, *kind, *fields,
        *path, *src, *b_sid;
    const char *cursor; /* opaque, from a previous page */
    uint64_t from, to;  /* ns; to == 0: no upper bound */
    uint64_t kid;       /* kernel seq */
    uint32_t limit, width, points;
    uint32_t exact;    /* timeline: kernels per lane listed one by one */
    const char *lanes; /* timeline, export: "dev:stream,..." */
    int truncate;      /* export: the part that fits, not 413 */
    int overlap;       /* kernels: those occupying [from, to), not started */
    int desc;
    const char *session; /* verdicts: a session name */
    const char *job;     /* sessions: one job's */
    int64_t dev;         /* verdicts: a GPU, -1 = any */
} srv_q;

/* The hosts an ingest key is bound to, comma-separated ("" = any). */
#define SRV_KEY_HOSTS_MAX 1024

/* A stored API key as listed (never the secret). */
typedef struct srv_key {
    int64_t id;
    char name[128], role[16], prefix[16];
    char hosts[SRV_KEY_HOSTS_MAX];
    int64_t created, last_used, revoked;
} srv_key;

/* What the ingest scope check (ingest_scope.c) needs of a stored session:
 * its host and where its ended streams ended. */
typedef struct srv_sess_policy {
    int found;
    char host[256];             /* "" until a session line is stored */
    uint8_t ended;              /* bit per SRV_ST_* with a session_end */
    uint64_t end_seq[SRV_ST_N]; /* that session_end's seq */
} srv_sess_policy;

/* The store: opaque (store_sql_int.h). */
typedef struct srv_store srv_store;

/* ---- memory profiles (gpufl memprof, docs/api.md "Memory profiles";
 * api_memprof.c parses, store_sql_memprof.c stores) ---- */
enum { SRV_MEM_ALLOC = 0, SRV_MEM_INUSE = 1, SRV_MEM_FAIL = 2 };

/* One stack of a POSTed profile; frames is the JSON array text (borrowed
 * from the request body). v: alloc_bytes, alloc_count, free_bytes,
 * free_count, inuse_bytes, inuse_count, fail_bytes, fail_count. */
typedef struct srv_memstack {
    srv_str frames;
    uint64_t v[8];
} srv_memstack;

typedef struct srv_memprof {
    srv_str host, comm, sid, source; /* sid.p NULL when absent */
    uint64_t pid, start, end;
    int simulated;
    const srv_memstack *stacks; /* borrowed */
    size_t n;
} srv_memprof;

/* GET /api/v1/memory, /sessions/{sid}/memory, /memory/profiles. */
typedef struct srv_memq {
    const char *sid, *host, *cursor;
    uint64_t pid, from, to; /* pid 0, to 0: not given */
    int view;               /* SRV_MEM_* */
    uint32_t limit;
} srv_memq;

/* ---- OOM reports (gpufl memprof --oom, docs/api.md "OOM reports";
 * api_memoom.c checks and rewrites, store_sql_memoom.c stores) ---- */
typedef struct srv_memoom {
    srv_str host, comm, sid, source; /* comm.p, sid.p NULL when absent */
    srv_str api, dev_source;
    uint64_t pid, ts, bytes, live_bytes;
    int64_t dev; /* -1: not known */
    int have_mem, simulated;
    uint64_t free_bytes, total_bytes;
    const char *body; /* the report as answered (borrowed), body_len bytes */
    size_t body_len;
} srv_memoom;
/* ---- capture requests (docs/api.md "Capture requests"; api_capture.c
 * parses, store_sql_capture.c stores) ---- */

/* Requests of one host waiting for its agent at most: more are refused. */
#define SRV_CAPTURE_PENDING_MAX 64
/* Bytes of the per-process outcome an agent reports (JSON array text). */
#define SRV_CAPTURE_RESULT_MAX 16384
/* Bytes of a request's note and of a reason. */
#define SRV_CAPTURE_NOTE_MAX 200
#define SRV_CAPTURE_REASON_MAX 512
/* Finished requests are kept this long (s), then deleted. */
#define SRV_CAPTURE_KEEP_S (7 * 86400)

typedef struct srv_capture {
    const char *host;   /* borrowed */
    int64_t pid;        /* 0: every gpufl process of the host */
    const char *action; /* "dump" | "trace" */
    uint64_t for_ms;    /* trace: for how long; dump: 0 */
    const char *note;   /* NULL: none */
} srv_capture;

/* GET /api/v1/captures. */
typedef struct srv_capq {
    const char *host, *state; /* NULL: any */
    int64_t before;           /* ids below it (a cursor); 0: newest first */
    uint32_t limit;
} srv_capq;

/* The times of capture requests (--capture-expiry, --capture-lease,
 * --capture-attempts). */
typedef struct srv_captimes {
    uint64_t expiry_s; /* a request waits this long (from its creation) */
    uint64_t lease_s;  /* a claim holds this long without an outcome */
    uint32_t attempts; /* claims at most, then it fails */
} srv_captimes;

/*
 * Each call first moves on the requests whose times t passed: a pending
 * one past its expiry is expired; a delivered one whose claim is older
 * than t->lease_s without an outcome (its agent died, or lost the
 * server) goes back to pending - handed out again - while it has had
 * fewer than t->attempts claims and its expiry has not passed, else it
 * fails saying why; those finished SRV_CAPTURE_KEEP_S ago are deleted.
 *
 * add: a pending request (*id); GPUFL_EAGAIN when its host has
 * SRV_CAPTURE_PENDING_MAX pending already.
 * claim: the host's pending requests as {"items":[...]} into w, each now
 * delivered (once per claim: a second claim gets only what went back to
 * pending since).
 * result: the outcome of a request of host that a claim handed out and
 * is not finished (delivered, or back to pending after its lease: the
 * late agent did the work): GPUFL_ENOTFOUND (no such request of this
 * host), GPUFL_ECONFLICT (never handed out, or finished already).
 * result_json (NULL: none) is a JSON array text the caller checked.
 * get / list: one request, or a page, as docs/api.md shows them.
 */
int srv_store_capture_add(srv_store *s, const srv_capture *c,
                          const srv_captimes *t, int64_t *id);
int srv_store_capture_claim(srv_store *s, const char *host,
                            const srv_captimes *t, jw *w);
int srv_store_capture_result(srv_store *s, const char *host, int64_t id, int ok,
                             const char *reason, const char *result_json,
                             const srv_captimes *t);
int srv_store_capture_get(srv_store *s, int64_t id, const srv_captimes *t,
                          jw *w);
int srv_store_q_captures(srv_store *s, const srv_capq *q, const srv_captimes *t,
                         jw *w);

/* Retention policy, for srv_store_prune. */
typedef struct srv_retention {
    uint64_t max_age_s;    /* 0: no age limit */
    uint64_t max_db_bytes; /* 0: no size limit */
    /* memory profiles older (by end time) than this; 0: max_age_s */
    uint64_t memprof_max_age_s;
    /* out, may be NULL: memory profiles removed (their stacks with them) */
    uint64_t *n_memprofs;
} srv_retention;

/*
 * The store's operations.  Return GPUFL_OK or a gpufl_err:
 * GPUFL_EUNAVAIL when the database cannot be reached (HTTP 503),
 * GPUFL_ENOTFOUND for an unknown session/kernel/key (404), GPUFL_EINVAL for
 * a bad cursor or parameter (400), GPUFL_ETOOBIG when the answer does not
 * fit the response buffer.
 */
int srv_store_ingest(srv_store *s, const srv_ev *ev, size_t n,
                     srv_ingest_res *r);
/* A batch given in parts, in line order, as they are parsed (a streamed
 * body, api_ingest.c): part(ctx, k, &ev, &n) gives part k (k = 0, 1, ...)
 * and returns 1, or 0 after the last, or a negative gpufl_err that fails
 * the batch (-GPUFL_ECONFLICT: the caller stores the whole body another
 * way).  It is called on the caller's thread, perhaps with the writer's
 * lock held, and again from k = 0 when the batch is written a second time
 * (its group failed: each batch alone), so it gives a part it gave before
 * the same; the parts stay valid until srv_store_ingest_parts returns.
 * One transaction and one outcome for all the parts, as if they were one
 * batch of at most n lines. */
typedef int (*srv_ingest_part_fn)(void *ctx, size_t k, const srv_ev **ev,
                                  size_t *n);
int srv_store_ingest_parts(srv_store *s, srv_ingest_part_fn part, void *ctx,
                           size_t n, srv_ingest_res *r);
/* Ingest transactions committed, and the batches they held (more than
 * the commits when concurrent batches shared one: group commit,
 * store_sql_igroup.c). */
void srv_store_ingest_stats(srv_store *s, uint64_t *commits, uint64_t *batches);
/* Where the ingest's writers spent their time, ns summed over groups
 * (HTTP and Kafka): waiting for the writer's lock (the compactor's and
 * other writers' transactions), writing a group's rows, blocks and
 * rollups, and its COMMIT (on SQLite the WAL's writes and fsync).  So an
 * operator can tell a slow database from a busy compactor or slow disk
 * (/metrics gpufl_ingest_seconds_total). */
enum { SRV_ING_WAIT, SRV_ING_WRITE, SRV_ING_COMMIT, SRV_ING_NT };
void srv_store_ingest_times(srv_store *s, uint64_t ns[SRV_ING_NT]);
/* Accepts NULL. */
void srv_store_close(srv_store *s);
/* "sqlite" or "postgres" (static). */
const char *srv_store_backend(const srv_store *s);
uint64_t srv_store_db_bytes(srv_store *s);
int srv_store_ping(srv_store *s);
/* running sessions silent for stale_s seconds of the time the server
 * could hear them become "stale": nothing before heard_since (Unix s:
 * when the server started, or the database became reachable again)
 * counts, so a server outage never makes a session stale */
int srv_store_mark_stale(srv_store *s, uint64_t stale_s, uint64_t heard_since);
/* lines missing below the highest stored seq, summed over sessions, per
 * stream (the gaps of docs/api.md) */
int srv_store_missing(srv_store *s, uint64_t out[SRV_ST_N]);
/* prunes whole sessions (not kept) and memory profiles (not linked to a
 * kept session); *n_pruned sessions removed */
int srv_store_prune(srv_store *s, const srv_retention *p, uint64_t *n_pruned);

/*
 * Kernel blocks (--kernel-store=blocks, store_sql_kblocks.c): one pass of
 * the compactor - every (session, stream) with SQ_KB_RUN kernel rows or
 * more, or any once its session is no longer running, turned into blocks
 * of up to SQ_KB_RUN kernels, each in its own transaction that deletes
 * the rows it holds; small blocks merged; ingest's blocks named (their
 * kbnames rows).  *blocks, *kernels: what it made; *named (may be NULL):
 * how many blocks it named.
 */
int srv_store_kblocks_compact(srv_store *s, uint64_t *blocks, uint64_t *kernels,
                              uint64_t *named);
/*
 * Op blocks (--kernel-store=blocks, store_sql_oblocks_compact.c): one
 * pass of their compactor - every session's `ops` rows into blocks, each
 * in its own transaction that deletes the rows it holds, then runs of
 * small blocks merged.  *blocks, *ops: what it made.
 */
int srv_store_oblocks_compact(srv_store *s, uint64_t *blocks, uint64_t *ops);
/* PostgreSQL: one pass of the timeline's packer (store_sql_tlpack.c):
 * every range of 128 buckets of tl levels 1-3 that its session has moved
 * past (range end <= last_ts) or of a session no longer running, up to
 * 512, its rows folded into one tlpack
 * row, 32 ranges a transaction.  *packs, *rows: ranges written, rows
 * deleted.  Nothing on SQLite. */
int srv_store_tl_pack(srv_store *s, uint64_t *packs, uint64_t *rows);
/* One pass of the kernel blocks' names packer
 * (store_sql_kbnpack.c): every range of 2^20 seqs of a (session, stream)
 * holding kbnames rows, up to 512, its rows folded into one kbnpack row
 * per name, 4 ranges a transaction.
 * *packs, *rows: packs written, rows deleted.  Both databases. */
int srv_store_kbn_pack(srv_store *s, uint64_t *packs, uint64_t *rows);
/* PostgreSQL: one pass of the API call summary's packer
 * (store_sql_capipack.c): every range of 128 buckets of a (session,
 * level 1-5, thread) of capi that its session has moved past or of a
 * session no longer running, up to 512, its rows folded into one
 * capipack row, 32 ranges a transaction.  *packs, *rows: ranges written,
 * rows deleted.  Nothing on SQLite. */
int srv_store_capi_pack(srv_store *s, uint64_t *packs, uint64_t *rows);
/* Deletes the stored level 0 rows that are now computed: the timeline's
 * (tl, lvl 0) of every session with blocks, and on PostgreSQL (srv_store_capi0_computed) the API calls'
 * (capi, lvl 0): this version computes those levels from such a
 * session's kernels and calls (store_sql_q_tl0.c, store_sql_q_capi0.c),
 * so they are bytes nobody reads.  One transaction per session; *rows,
 * *capi_rows: how many went of each. */
int srv_store_level0_drop(srv_store *s, uint64_t *rows, uint64_t *capi_rows);
/* Whether the API calls' summary level 0 of sessions with blocks is
 * computed by /calls rather than stored: PostgreSQL yes, SQLite no (why:
 * store_sql_int.h, capi0_query). */
int srv_store_capi0_computed(const srv_store *s);
/* Writes the kept rows (kxrow, store_sql_kxrow.c) of the kext keys
 * whose kernels are in blocks and have none (blocks written before
 * schema 24): every session with blocks, one transaction each, reading
 * the blocks that may hold such a kernel.  *rows: how many were written. */
int srv_store_kx_fill(srv_store *s, uint64_t *rows);
/* Kernel queries' counters since start (/metrics): blocks decoded, and
 * pages sorted by duration of sessions with blocks answered from the
 * kept rows (kept) or from the blocks (scanned); rows of the block index
 * the block scans read (indexed). */
typedef struct srv_kq_stats {
    uint64_t decoded, kept, scanned, indexed;
    uint64_t capi_rows; /* capi rows /calls summaries read */
    uint64_t ob_rows;   /* oblocks rows time ranges' lookups read */
} srv_kq_stats;
void srv_store_kq_stats(srv_store *s, srv_kq_stats *o);
/* What the kernels take (bench_server): rows, blocks and the kernels in
 * them, the blocks' bytes, and on disk with indexes the kernels table's
 * and the kblocks table's bytes (0: not known); db_disk: the whole
 * database's (every table and index: the rollups too), and its biggest
 * tables with their indexes. */
#define SRV_KB_TOP 8
typedef struct srv_kb_stats {
    uint64_t rows, blocks, in_blocks, block_bytes, rows_disk, blocks_disk;
    uint64_t db_disk;
    struct {
        char name[64];
        uint64_t bytes;
    } top[SRV_KB_TOP];
} srv_kb_stats;
void srv_store_kblocks_stats(srv_store *s, srv_kb_stats *o);
/* --kernel-store=blocks (blocks != 0): ingest writes a batch's kernels as
 * blocks (store_sql_kblocks_ingest.c) instead of rows; before the first
 * batch. */
void srv_store_set_kernel_store(srv_store *s, int blocks);
/* The second core's helper (ingest_par.h) ingest may encode kernel blocks
 * on, or NULL (then one thread); set before ingest starts, NULL again
 * before the helper is freed. */
struct ingest_par;
void srv_store_set_par(srv_store *s, struct ingest_par *par);
/* The cache of decoded kernel blocks the reads keep (kbcache.h,
 * --kernel-block-cache): at most max_bytes, 0 for none (the store opens
 * with SRV_KBC_DEFAULT).  Before the first query: not with reads under
 * way.  0, or GPUFL_ENOMEM. */
#define SRV_KBC_DEFAULT (64ull << 20)
int srv_store_set_kblock_cache(srv_store *s, uint64_t max_bytes);
/* Its counters since start (/metrics). */
typedef struct srv_kbc_stats {
    uint64_t bytes, entries, max_bytes;
    uint64_t hits, misses, kept, evicted;
} srv_kbc_stats;
void srv_store_kblock_cache_stats(srv_store *s, srv_kbc_stats *o);
/*
 * SQLite: the writer connection's page cache, at most bytes (rounded down
 * to KiB; store_sql_admin.c).  Opening sets SRV_SQLITE_WCACHE_DEFAULT
 * (the migrations at open run with it).  Reads the value back from SQLite
 * for srv_store_sqlite_wcache.  PostgreSQL: nothing.  0, or an error.
 */
#define SRV_SQLITE_WCACHE_DEFAULT (256ull << 20)
int srv_store_set_sqlite_wcache(srv_store *s, uint64_t bytes);
/* The writer's page cache in bytes as SQLite last reported it after
 * srv_store_set_sqlite_wcache; 0: not set, or not SQLite (/metrics). */
uint64_t srv_store_sqlite_wcache(srv_store *s);
/*
 * The cold tier of kernel and op blocks (store_sql_kcold.c, docs/server.md
 * "Cold tier").  srv_store_cold_open: S3 and the local cache for s's cold
 * blocks (strings borrowed for the call); 0, or an error with err[cap].
 * srv_store_cold_pass (one thread): objects no block names any more out
 * of S3, then (hot_age_s > 0) blocks of sessions silent that long into
 * S3; *moved (kernel and op blocks), *deleted: how many.  GPUFL_EAGAIN: S3 failed, or is being
 * waited for after it did (the wait doubles up to 5 minutes).
 */
typedef struct srv_cold_cfg {
    const char *endpoint, *bucket, *region, *access, *secret, *prefix;
    const char *ca_file;   /* NULL or "": the system's CAs */
    const char *cache_dir; /* the cache's folder */
    uint64_t cache_max;    /* its cap in bytes */
} srv_cold_cfg;
int srv_store_cold_open(srv_store *s, const srv_cold_cfg *c, char *err,
                        size_t cap);
int srv_store_cold_pass(srv_store *s, uint64_t hot_age_s, uint64_t *moved,
                        uint64_t *deleted);
/* The cold tier's counters since start (/metrics); on 0: no cold tier. */
typedef struct srv_cold_stats {
    int on;
    uint64_t moved, deleted, s3_errors;  /* the mover and the sweep */
    uint64_t moved_ops;                  /* op blocks moved */
    uint64_t reads_cache, reads_s3;      /* cold blocks read, by source */
    uint64_t read_errors;                /* reads answered 503 or lost */
    uint64_t cache_bytes, cache_evicted; /* the local cache */
} srv_cold_stats;
void srv_store_cold_stats(srv_store *s, srv_cold_stats *o);
int srv_store_set_keep(srv_store *s, const char *sid, int keep);
/* keys: hash is the hex SHA-256 of the secret; hosts as in srv_key */
int srv_store_key_add(srv_store *s, const char *name, const char *role,
                      const char *prefix, const char *hash, const char *hosts,
                      int64_t *id);
/* up to cap keys with an id above after, by id */
int srv_store_key_list(srv_store *s, int64_t after, srv_key *out, size_t cap,
                       size_t *n);
int srv_store_key_revoke(srv_store *s, int64_t id);
/* *role filled ("" if no live key has this hash), and its hosts */
int srv_store_key_lookup(srv_store *s, const char *hash, char *role, size_t cap,
                         char *hosts, size_t hosts_cap);
/* a session's host and ended streams (out->found 0: not stored) */
int srv_store_sess_policy(srv_store *s, const char *sid, srv_sess_policy *out);

/* Queries, JSON into w (docs/api.md says what each answers). */
typedef int (*srv_query_fn)(srv_store *s, const srv_q *q, jw *w);
int srv_store_q_hosts(srv_store *s, const srv_q *q, jw *w);
int srv_store_q_sessions(srv_store *s, const srv_q *q, jw *w);
int srv_store_q_session(srv_store *s, const srv_q *q, jw *w);
int srv_store_q_kernels(srv_store *s, const srv_q *q, jw *w);
int srv_store_q_kernel_agg(srv_store *s, const srv_q *q, jw *w);
/* GET /api/v1/sessions/{id}/durations (store_sql_q_durations.c): per
 * kernel name and scope path, evenly spaced quantiles of the durations,
 * for gpufl diff --server */
int srv_store_q_durations(srv_store *s, const srv_q *q, jw *w);
int srv_store_q_kernel(srv_store *s, const srv_q *q, jw *w);
int srv_store_q_timeline(srv_store *s, const srv_q *q, jw *w);
int srv_store_q_calls(srv_store *s, const srv_q *q, jw *w);
/* The range as a Chrome trace (docs/api.md "export"): GPUFL_ETOOBIG
 * with why (cap bytes) when it is over the caps and truncation was not
 * asked, or the answer does not fit w. */
int srv_store_q_export(srv_store *s, const srv_q *q, jw *w, char *why,
                       size_t cap);
int srv_store_q_copies(srv_store *s, const srv_q *q, jw *w);
int srv_store_q_scopes(srv_store *s, const srv_q *q, jw *w);
int srv_store_q_profile(srv_store *s, const srv_q *q, jw *w);
int srv_store_q_system(srv_store *s, const srv_q *q, jw *w);
int srv_store_q_compare(srv_store *s, const srv_q *q, jw *w);
/* GET /api/v1/jobs (q: app, state, limit, cursor) and /jobs/{q->job}
 * (store_sql_jobs.c, docs/api.md "Jobs") */
int srv_store_q_jobs(srv_store *s, const srv_q *q, jw *w);
int srv_store_q_job(srv_store *s, const srv_q *q, jw *w);

/* ---- regressions (store_sql_regress.c, docs/analysis.md) ---- */
/* Items of one scan kept for its summary (the webhook's list). */
#define SRV_REGRESS_SUM_ITEMS 16
#define SRV_REGRESS_NAME_MAX 512

typedef struct srv_regress_cfg {
    uint32_t baseline; /* ended sessions of the same app compared with */
    double min_shift;  /* 0.05: the smallest reported median shift */
} srv_regress_cfg;

/* What the scan of one ended session found (kinds: "slower", "faster",
 * "new", "vanished", "count"; for the subject "memory", "slower" is a
 * larger peak). */
typedef struct srv_regress_sum {
    char sid[40], app[256];
    uint32_t base_sessions; /* 0: too few to compare with, nothing done */
    uint32_t n_slower, n_faster, n_new, n_vanished, n_count;
    size_t nitems; /* the slower ones first, worst first */
    struct {
        char kind[12], subject[8]; /* subject: kernel, scope, step, memory */
        char name[SRV_REGRESS_NAME_MAX];
        double ratio, lo, hi;
    } items[SRV_REGRESS_SUM_ITEMS];
} srv_regress_sum;

typedef void (*srv_regress_fn)(void *arg, const srv_regress_sum *sum);
/* Scans up to max ended sessions not scanned yet, oldest first, each
 * once even with several servers on one database (claimed by an UPDATE);
 * fn(arg, sum) after a session's results are stored.  *done: how many. */
int srv_store_regress_scan(srv_store *s, const srv_regress_cfg *cfg,
                           uint32_t max, srv_regress_fn fn, void *arg,
                           uint32_t *done);
/* GET /api/v1/regressions (q->app; limit, cursor) and
 * /sessions/{q->sid}/regressions */
int srv_store_q_regressions(srv_store *s, const srv_q *q, jw *w);
int srv_store_q_sess_regressions(srv_store *s, const srv_q *q, jw *w);
/* Per app (at most cap, by name), the largest ratio among the "slower"
 * findings of its latest scanned session (1 when none): /metrics. */
#define SRV_REGRESS_APPS_MAX 100
typedef struct srv_regress_app {
    char app[256];
    double worst;
} srv_regress_app;
int srv_store_regress_worst(srv_store *s, srv_regress_app *out, size_t cap,
                            size_t *n);
/* idle verdicts: latest per host GPU/session, and history */
int srv_store_q_fleet(srv_store *s, const srv_q *q, jw *w);
int srv_store_q_verdicts(srv_store *s, const srv_q *q, jw *w);

/* ---- GPU waste (docs/idle.md "Waste accounting", docs/api.md) ---- */

#define SRV_WASTE_N 5 /* idle, held, phantom, stuck, allocated_unused */
#define SRV_WASTE_SPAN_MAX (86400ull * 1000000000ull) /* one line's from..to */
extern const char *const srv_waste_reasons[SRV_WASTE_N];

/* One `waste` line's fields (waste_line.c); "" = not given. */
typedef struct srv_waste {
    char host[256], uuid[96], model[128];
    char user[64], ns[64], pod[128], container[64], job[64], app[128];
    uint64_t dev, from, to; /* ns */
    double busy, wasted[SRV_WASTE_N];
    int simulated;
} srv_waste;

struct jsonl_doc;
/* Reads and checks the waste fields of the parsed line d into *w; 0, or
 * GPUFL_EPARSE with why in reason (INGEST_REASON_MAX bytes). */
int srv_waste_parse(struct jsonl_doc *d, srv_waste *w, char *reason);

/* GET /api/v1/fleet/waste: what api_waste.c validated. */
enum {
    SRV_WBY_USER,
    SRV_WBY_NAMESPACE,
    SRV_WBY_POD,
    SRV_WBY_JOB,
    SRV_WBY_APP,
    SRV_WBY_HOST,
    SRV_WBY_GPU,
    SRV_WBY_N
};
#define SRV_PRICES_MAX 64
typedef gpu_price srv_price; /* common/price.h */
typedef struct srv_wasteq {
    int by;                    /* SRV_WBY_* */
    uint64_t from, to, step_s; /* ns, ns, seconds */
    uint64_t now;              /* ns: the server's clock (waste rate) */
    uint32_t limit;
    const srv_price *prices;
    size_t nprices;
    const char *currency;
} srv_wasteq;
extern const char *const srv_waste_by[SRV_WBY_N];
int srv_store_q_waste(srv_store *s, const srv_wasteq *q, jw *w);

/* Memory profiles: one POSTed profile in one transaction (*id, and the
 * uuid of the session it was linked to, "" if none, into sid). */
int srv_store_memprof_put(srv_store *s, const srv_memprof *p, int64_t *id,
                          char *sid, size_t sid_cap);
int srv_store_q_memory(srv_store *s, const srv_memq *q, jw *w);
int srv_store_q_memprofs(srv_store *s, const srv_memq *q, jw *w);
/* Stores one OOM report in one transaction; *id and its linked session
 * (sid, "" when none) as for memory profiles. */
int srv_store_memoom_put(srv_store *s, const srv_memoom *p, int64_t *id,
                         char *sid, size_t sid_cap);
/* GET /api/v1/memory/ooms (host, pid, sid, from/to on ts, limit, cursor)
 * and /api/v1/memory/ooms/{id} (GPUFL_ENOTFOUND when none). */
int srv_store_q_memooms(srv_store *s, const srv_memq *q, jw *w);
int srv_store_q_memoom(srv_store *s, int64_t id, jw *w);

/*
 * Opens the store named by url: "sqlite:PATH" or a plain path (SQLite),
 * "postgres://..." or "postgresql://..." (libpq).  Creates or migrates
 * the schema.  readers: query connections kept open.  On failure errbuf
 * says why.
 */
int srv_store_open(const char *url, unsigned readers, srv_store **out,
                   char *errbuf, size_t errcap);

/* Opaque cursors: a few integers as a hex string (cursor.c). */
#define SRV_CURSOR_MAX 64
int srv_cursor_encode(const int64_t *v, int n, char *out, size_t cap);
int srv_cursor_decode(const char *s, int64_t *v, int n);

#endif
