/*
 * srv_int.h - what the files of gpufl-server share: the configuration
 * (one option table, config.c), the server context, auth, metrics, the
 * HTTP glue and the route handlers.
 */
#ifndef GPUFL_SERVER_SRV_INT_H
#define GPUFL_SERVER_SRV_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/buf.h"
#include "common/jsonl.h"
#include "common/jw.h"
#include "common/log.h"
#include "common/opt.h"
#include "store.h"

/* ---- configuration (config.c: the option table; src/common/opt.h) ---- */

#define SRV_STR_MAX 1024

typedef struct srv_config {
    char listen[SRV_STR_MAX];
    char data_dir[SRV_STR_MAX];
    char db[SRV_STR_MAX];
    char admin_token[SRV_STR_MAX];
    char ui_dir[SRV_STR_MAX];
    char cors_origin[SRV_STR_MAX];
    char kafka_brokers[SRV_STR_MAX];
    char kafka_group[256];
    char kafka_topic_prefix[256];
    char key_name[128];
    char key_role[16];
    char key_hosts[SRV_STR_MAX]; /* keys create: "node-7,node-8" */
    char tls_cert[SRV_STR_MAX];
    char tls_key[SRV_STR_MAX];
    uint64_t threads;
    uint64_t readers;
    uint64_t max_body;
    uint64_t max_decoded;
    uint64_t max_lines;
    uint64_t timeout_s;
    uint64_t header_timeout_s;
    uint64_t max_conns;
    uint64_t max_conns_per_ip;
    uint64_t max_buffered;
    uint64_t stale_after_s;
    uint64_t capture_expiry_s; /* capture requests (api_capture.c) */
    uint64_t capture_lease_s;
    uint64_t capture_attempts;
    uint64_t retention_max_age_s;
    uint64_t retention_max_db;
    uint64_t memprof_max_age_s; /* 0: retention_max_age_s */
    uint64_t retention_interval_s;
    uint64_t regress_baseline; /* 0: no regression scan */
    int kernel_store;          /* SRV_KSTORE_* */
    uint64_t kernel_compact_s; /* blocks: the compactor's period */
    uint64_t kblock_cache;     /* bytes of decoded blocks kept (kbcache.h) */
    /* SQLite: the writer connection's page cache, bytes */
    uint64_t sqlite_writer_cache;
    /* the cold tier of kernel blocks (store_sql_kcold.c) */
    uint64_t hot_age_s; /* 0: nothing moves to S3 */
    char cold_endpoint[SRV_STR_MAX], cold_bucket[256], cold_region[64];
    char cold_access[256], cold_secret[256], cold_prefix[256];
    char cold_ca_file[SRV_STR_MAX], cold_cache[SRV_STR_MAX];
    uint64_t cold_cache_max;
    char alert_webhook[SRV_STR_MAX];
    uint64_t quiet;
    uint64_t kafka_batch;
    uint64_t kafka_batch_bytes;
    int log_level, log_format; /* GLOG_* (common/log.h) */
    /* --price MODEL=PRICE as given, and parsed (srv_config_load) */
    char price[SRV_PRICES_MAX][192];
    size_t nprice;
    srv_price prices[SRV_PRICES_MAX];
    size_t nprices;
    char currency[16];
} srv_config;

/* --kernel-store (store_sql_kblocks.c) */
enum { SRV_KSTORE_ROWS = 0, SRV_KSTORE_BLOCKS = 1 };

extern const opt_prog srv_prog;

/*
 * Fills *c from defaults < config file < GPUFL_SERVER_* environment <
 * flags.  argv[0] is skipped; non-option words are returned in pos[]
 * (up to pos_cap; *npos).  Returns 0, or 2 for a usage error with a
 * message in err (err_cap bytes), or 3 when --help / --help-markdown /
 * --dump-config / --version printed something and the program should
 * exit 0.
 */
int srv_config_load(srv_config *c, int argc, char **argv, char **pos,
                    int pos_cap, int *npos, char *err, size_t err_cap);
/* Option documentation: --help text, or the Markdown table of
 * docs/server.md. */
void srv_config_help(FILE *f, int markdown);

/* ---- metrics (metrics.c) ---- */

enum { MET_INGEST = 0, MET_QUERY = 1, MET_OTHER = 2, MET_NCLASS = 3 };
#define MET_NBUCKETS 14

typedef struct srv_metrics {
    uint64_t lines_accepted, lines_duplicate, lines_rejected, batches, bytes_in;
    /* HTTP ingest requests' decode, parse and scope check, ns (the
     * store's phases are srv_store_ingest_times) */
    uint64_t ingest_parse_ns;
    /* HTTP ingest bodies parsed while stored (api_ingest.c stream_body),
     * and those of them checked and stored whole after all */
    uint64_t ingest_streamed, ingest_rewhole;
    /* Kafka bridge (kafka.c): offset resets past the broker's retention,
     * the messages they skipped, and messages that came as errors */
    uint64_t kafka_resets, kafka_skipped, kafka_errors;
    /* connections (conn.c): turned away by --max-conns-per-ip and by
     * --max-conns, shut down past a deadline; request bodies refused by
     * --max-buffered */
    uint64_t conn_refused_ip, conn_refused_full, conn_timeouts;
    uint64_t body_refused_budget;
    uint64_t status[6]; /* by first digit */
    uint64_t lat_count[MET_NCLASS], lat_sum_us[MET_NCLASS];
    uint64_t lat_bucket[MET_NCLASS][MET_NBUCKETS];
} srv_metrics;

void srv_metrics_request(srv_metrics *m, int cls, int status, uint64_t us);

/* What a scrape reads from the store. */
typedef struct srv_gauges {
    uint64_t db_bytes;
    uint64_t missing[SRV_ST_N]; /* srv_store_missing */
    int have_missing;           /* 0: the store could not say */
    uint64_t conns_open;        /* connections held now */
    uint64_t body_buffered;     /* request body bytes held now */
    /* ingest transactions, and the batches they held (group commit) */
    uint64_t ing_commits, ing_batches;
    uint64_t ing_ns[SRV_ING_NT]; /* srv_store_ingest_times */
    /* per app, the worst "slower" ratio of its latest scanned session
     * (srv_store_regress_worst); borrowed, n 0: none */
    const srv_regress_app *regress;
    size_t n_regress;
    srv_cold_stats cold; /* the cold tier (store_sql_kcold.c) */
    srv_kq_stats kq;     /* kernel queries over blocks */
    srv_kbc_stats kbc;   /* decoded kernel blocks (kbcache.c) */
    /* srv_store_sqlite_wcache; 0: none (PostgreSQL) */
    uint64_t sqlite_wcache;
} srv_gauges;

/* The largest /metrics answer (bytes): a few KiB today. */
#define SRV_METRICS_MAX (1u << 20)

/* The Prometheus text exposition, appended to b (errors stick in b). */
void srv_metrics_write(const srv_metrics *m, const srv_gauges *g, gbuf *b);

/* ---- the server ---- */

typedef struct srv {
    srv_config cfg;
    srv_store *store;
    srv_metrics met;
    unsigned char admin_hash[32];
    int have_admin;
    void *http;              /* struct MHD_Daemon */
    struct srv_conns *conns; /* conn.c */
    /* the ingest bodies' second parse thread (ingest_par.c); NULL: one */
    struct ingest_par *par;
    int ui_fd; /* --ui-dir, opened (static.c); -1: none */
    /* which web UI it serves, for the start-up line (static.c) */
    char ui_msg[4 * 4096 + 2 * SRV_STR_MAX + 512];
    /* --tls-cert / --tls-key as read (tls.c); NULL: plain HTTP */
    char *tls_cert, *tls_key;
    int loopback; /* the listening address is a loopback one */
    /* request body bytes held by all connections (relaxed atomic, at
     * most cfg.max_buffered) */
    uint64_t buffered;
    int listen_fd;
    uint16_t port;
    /* maintenance thread */
    pthread_t maint;
    pthread_mutex_t mlock;
    pthread_cond_t mcond;
    int stopping, maint_started;
    /* since when (Unix s) the server could hear its sessions: its start,
     * moved on when the database becomes reachable again after an outage
     * (relaxed atomic); mark_stale counts silence only from here */
    uint64_t heard_since;
    void *kafka;   /* kafka.c's consumer, NULL when off */
    void *webhook; /* regress.c's HTTP client (httpc), made at first use */
} srv;

/* ---- auth (auth.c) ---- */

/* ROLE_UNKNOWN: the token is no admin token and the database could not be
 * asked about keys (answer 503, not 401). */
enum {
    ROLE_UNKNOWN = -1,
    ROLE_NONE = 0,
    ROLE_INGEST = 1,
    ROLE_READ = 2,
    ROLE_ADMIN = 3
};

/* SHA-256 of s[0, n). */
void srv_sha256(const void *s, size_t n, unsigned char out[32]);
void srv_hex(const unsigned char *b, size_t n, char *out);
/* A new random secret "<kind>_<64 hex>" into out (>= 72 bytes). */
int srv_token_new(const char *kind, char *out, size_t cap);
/* The role of a bearer header value (NULL: none); ROLE_NONE if invalid,
 * ROLE_UNKNOWN if the key lookup failed (database unavailable).  The
 * key's hosts (comma-separated, "" = any) into hosts (hosts_cap bytes,
 * SRV_KEY_HOSTS_MAX for all; 0: not wanted). */
int srv_auth_role(srv *s, const char *authorization, char *hosts,
                  size_t hosts_cap);
const char *srv_role_name(int role);
int srv_role_parse(const char *name);
/*
 * The admin token at start-up: configured (hashed in memory), else the
 * hash in data_dir/admin_token.sha256, else a new one printed once on out
 * and its hash stored.  Returns 0 or a gpufl_err: GPUFL_EINVAL (said on
 * stderr, with how to make one) for a configured token shorter than 32
 * characters or starting with the example's "change-me".
 */
int srv_admin_init(srv *s);
/* `gpufl-server migrate` on the open store (migrate.c): every compactable
 * kernel row into blocks, with progress on stdout.  Exit status. */
int srv_migrate_run(srv *s);
/* Most hosts one key may be bound to. */
#define SRV_KEY_HOSTS_N 64
/* 0 when hosts (comma-separated; NULL or "": any) may bind a key of role:
 * ingest keys only, each a host name, at most SRV_KEY_HOSTS_N; else -1
 * with why. */
int srv_key_hosts_check(const char *hosts, const char *role, char *why,
                        size_t cap);
/* 1 when a key bound to hosts ("" = any) may write for host[0, n). */
int srv_key_host_ok(const char *hosts, const char *host, size_t n);
/* Creates a key bound to hosts (NULL or "": any): *secret (cap >= 80) is
 * shown once.  GPUFL_EINVAL for a bad role or hosts. */
int srv_key_create(srv *s, const char *name, const char *role,
                   const char *hosts, char *secret, size_t cap, int64_t *id);

/* ---- HTTP (http.c) and routes (api.c) ---- */

/* Response capacity for one JSON answer. */
#define SRV_RESP_MAX (16u << 20)

typedef struct srv_req {
    const char *method, *path;
    void *conn; /* struct MHD_Connection */
    const char *body;
    size_t body_len;
    int role; /* preset by the first callback; 0: not looked up yet */
    char hosts[SRV_KEY_HOSTS_MAX]; /* the key's hosts ("" = any) */
    int cls;                       /* MET_* */
    int probe; /* only route, method and token: no handler runs, and a
                * request that may go on leaves the answer unset */
} srv_req;

/* A response to send: body is malloc'd (ownership transferred). */
typedef struct srv_resp {
    int status;
    const char *ctype;
    char *body;
    size_t len;
    char allow[64];  /* for 405 */
    int retry_after; /* a Retry-After header */
    int close;       /* close the connection after the answer */
} srv_resp;

const char *srv_req_arg(const srv_req *r, const char *key);
const char *srv_req_header(const srv_req *r, const char *key);
void srv_resp_error(srv_resp *o, int status, const char *msg);
/* A store error rc as the answer: 503 when the database is unavailable
 * (the client retries), else 500 with its text. */
void srv_resp_store_error(srv_resp *o, int rc);
/* 1 after a 403 when a key bound to hosts may not write for host (n
 * bytes; what names the body: "profile", "report"); 0 when it may. */
int srv_resp_host_refused(srv_resp *o, const char *hosts, const char *what,
                          const char *host, size_t n);

/* Query parameter k as an unsigned decimal: 0 when absent (*out untouched)
 * or valid, -1 when malformed. */
int srv_arg_u64(const srv_req *r, const char *k, uint64_t *out);
/* The n named unsigned parameters into v (0 when absent); on a malformed
 * one answers 400 naming it and returns -1. */
int srv_args_u64(const srv_req *r, srv_resp *o, const char *const *names,
                 uint64_t *v, size_t n);
/* A buffer of SRV_RESP_MAX for a query's JSON, w set on it; NULL after
 * answering 500. */
char *srv_query_buf(srv_resp *o, jw *w);
/* Answers a query: 200 with buf (taken) when rc is GPUFL_OK, else frees buf
 * and answers rc's status (GPUFL_ENOTFOUND: 404 with notfound). */
void srv_query_done(srv_resp *o, int rc, char *buf, size_t len,
                    const char *notfound);
void srv_resp_json(srv_resp *o, int status, char *buf, size_t len);

/* Dispatches one complete request. */
void srv_api_handle(srv *s, srv_req *r, srv_resp *o);
void srv_ingest_handle(srv *s, srv_req *r, int stream, srv_resp *o);
/* Called for each line a request may not write: its number, why. */
typedef void (*srv_scope_reject_fn)(void *ctx, uint32_t line, const char *why);
/* Drops from ev[0, *n) (compacting it, *n updated) the lines a key bound
 * to hosts ("" = any) may not write, and lines past their stream's
 * session_end, each said to fn (ingest_scope.c).  GPUFL_OK or the store's
 * error (nothing dropped then). */
int srv_ingest_scope(srv *s, const char *hosts, srv_ev *ev, size_t *n,
                     srv_scope_reject_fn fn, void *ctx);
/* The same check over a body given in parts, in line order, each part
 * stored before the next is known (a streamed body: api_ingest.c): the
 * sessions' policies read once, the ends seen so far kept.  With part set,
 * a part whose answer could depend on the parts after it returns
 * GPUFL_ECONFLICT (a line of a host-bound key whose host is not known yet;
 * a session_end below a line an earlier part kept): the caller must then
 * check the whole body at once instead.  cap: the most sessions (lines)
 * of all the parts. */
typedef struct srv_scope srv_scope;
int srv_scope_new(size_t cap, srv_scope **out);
int srv_scope_part(srv *s, srv_scope *sc, const char *hosts, srv_ev *ev,
                   size_t *n, int part, srv_scope_reject_fn fn, void *ctx);
void srv_scope_free(srv_scope *sc);
/* GET and POST /api/v1/keys (api_keys.c; the admin check is the
 * caller's). */
void srv_api_keys_list(srv *s, srv_req *r, srv_resp *o);
void srv_api_keys_create(srv *s, srv_req *r, srv_resp *o);
/* GET /api/v1/fleet/waste (api_waste.c). */
void srv_api_waste(srv *s, srv_req *r, srv_resp *o);
/* GET /api/v1/fleet (fleet = 1) or /api/v1/verdicts (api_fleet.c). */
void srv_api_fleet(srv *s, srv_req *r, srv_resp *o, int fleet);
/* api_jobs.c: job NULL: the list; sid NULL: regressions of all sessions */
void srv_api_jobs(srv *s, srv_req *r, srv_resp *o, const char *job);
void srv_api_regressions(srv *s, srv_req *r, srv_resp *o, const char *sid);
/* Capture requests (api_capture.c): /api/v1/hosts/{host}/captures (GET,
 * POST) and, id_seg given, .../captures/{id}/result (POST); GET
 * /api/v1/captures and, id_seg given, /api/v1/captures/{id}.  The role
 * checks are theirs (a probe stops after them). */
void srv_api_host_captures(srv *s, srv_req *r, srv_resp *o, const char *host,
                           const char *id_seg);
void srv_api_captures(srv *s, srv_req *r, srv_resp *o, const char *id_seg);
/* The body of POST /api/v1/hosts/{host}/captures, parsed into d, checked
 * and read into *c (c->host untouched): action (16 bytes) and note
 * (SRV_CAPTURE_NOTE_MAX + 1) receive the strings c points to.  0, or -1
 * with why.  Exposed for tests/fuzz/fuzz_capture_post.c. */
int srv_capture_parse(jsonl_doc *d, srv_capture *c, char *action, char *note,
                      char *why, size_t cap);
/* The body of POST .../captures/{id}/result: *ok, reason (rcap bytes, no
 * NUL inside), and procs (borrowed from d's line; p NULL when absent): a
 * JSON array of objects of at most SRV_CAPTURE_RESULT_MAX bytes.  0, or -1
 * with why. */
int srv_capture_result_parse(jsonl_doc *d, int *ok, char *reason, size_t rcap,
                             srv_str *procs, char *why, size_t cap);
/* api_jobs.c: GET /api/v1/sessions/{sid}/durations (no parameters) */
void srv_api_durations(srv *s, srv_req *r, srv_resp *o, const char *sid);
/* POST /api/v1/memprof; GET /api/v1/memory (list = 0),
 * /api/v1/memory/profiles (list = 1), /api/v1/sessions/{sid}/memory
 * (sid given) (api_memprof.c). */
void srv_api_memprof_post(srv *s, srv_req *r, srv_resp *o);
/* The body of POST /api/v1/memprof, parsed into d, checked and read into
 * *p: 0, or the HTTP status (400, 413, 500) with why.  *stacks (caller
 * frees, also after a refusal) holds p->n stacks whose strings borrow d's
 * line.  Exposed for tests/fuzz/fuzz_memprof_post.c. */
int srv_memprof_parse(jsonl_doc *d, srv_memprof *p, srv_memstack **stacks,
                      char *why, size_t cap);
void srv_api_memory(srv *s, srv_req *r, srv_resp *o, const char *sid, int list);
/* A POSTed JSON object (api_memprof.c): Content-Type and -Encoding
 * checked, the body decoded (*body, malloc'd) and parsed into d with the
 * token array *tok (malloc'd); both are the caller's to free, also on
 * failure.  0, or -1 with the error answered in o (415, 413, 400, 500). */
int srv_json_body(srv *s, srv_req *r, srv_resp *o, char **body, jsonl_tok **tok,
                  jsonl_doc *d);
/* POST /api/v1/memprof/oom; GET /api/v1/memory/ooms (id NULL) and
 * /api/v1/memory/ooms/{id} (api_memoom.c). */
void srv_api_memoom_post(srv *s, srv_req *r, srv_resp *o);
/* The body of POST /api/v1/memprof/oom (api_memoom.c; exposed for
 * fuzz_memoom_post): checks the report in d member by member and
 * rewrites it into out (initialised here, capped at 12 MiB; the caller
 * releases it, also on failure) in the form GET answers; *p gets the
 * columns, borrowing from d's text and out (p->body).  0, or the HTTP
 * status (400, 413, 500) with why. */
int srv_memoom_parse(jsonl_doc *d, srv_memoom *p, gbuf *out, char *why,
                     size_t cap);
void srv_api_memooms(srv *s, srv_req *r, srv_resp *o, const char *id);
/* Opens the web UI's folder for srv_static_handle: --ui-dir, or without
 * it the installed copy or (a binary in its build tree) the source tree's
 * web/dist; --ui-dir none: none.  Says which in s->ui_msg.  Refuses
 * (GPUFL_EINVAL, err) a --ui-dir holding the data folder or the database
 * file; a found one holding them is not served (said in ui_msg). */
int srv_static_open(srv *s, char *err, size_t cap);
void srv_static_close(srv *s);
/* rel opened read-only below the folder dir, never through a symbolic
 * link or out of it: openat2, or (walk, or openat2 missing) one component
 * at a time.  An fd or -1 (errno). */
int srv_static_open_below(int dir, const char *rel, int walk);
/* 1 when it answered r with a file of --ui-dir. */
int srv_static_handle(srv *s, srv_req *r, srv_resp *o);

int srv_http_start(srv *s, char *err, size_t cap);
void srv_http_stop(srv *s);

/* ---- TLS (tls.c) ---- */

/* Reads and checks --tls-cert and --tls-key into s->tls_cert/tls_key
 * (both or neither given; GPUFL_EINVAL with why in err for one alone, an
 * unreadable file, no PEM certificate or key, or a key not the
 * certificate's).  Nothing set: both stay NULL. */
int srv_tls_load(srv *s, char *err, size_t cap);
/* Frees them, the key's bytes wiped first. */
void srv_tls_free(srv *s);

/* ---- connections (conn.c) ---- */

/* The phases of a request whose deadlines conn.c keeps: its head is due
 * --header-timeout after the connection opened or the request line began;
 * its body, the sending of its answer and the idle time after it each get
 * --timeout; the handler's own work has none. */
enum {
    SRV_CONN_HEAD = 1,
    SRV_CONN_BODY,
    SRV_CONN_BUSY,
    SRV_CONN_SEND,
    SRV_CONN_IDLE
};

/* Starts the accept loop on s->listen_fd, handing connections to s->http
 * (started with no listening socket of its own).  tls: refusals are closed
 * without an HTTP answer. */
int srv_conns_start(srv *s, int tls, char *err, size_t cap);
/* Stops accepting (before libmicrohttpd stops). */
void srv_conns_stop(srv *s);
/* Frees the table (after libmicrohttpd stopped: its CLOSED notifications
 * use it). */
void srv_conns_free(srv *s);
/* libmicrohttpd started / closed the connection on fd (addr: its peer, a
 * struct sockaddr); returns the socket context for the others. */
void *srv_conn_started(srv *s, int fd, const void *addr);
void srv_conn_closed(srv *s, void *sc);
/* The request on connection sc entered phase (SRV_CONN_*). */
void srv_conn_phase(srv *s, void *sc, int phase);
/* Connections held now. */
size_t srv_conns_open(srv *s);

/* ---- Kafka consumer bridge (kafka.c) ---- */

/* Starts the consumer thread when --kafka-brokers is set (0 otherwise). */
int srv_kafka_start(srv *s, char *err, size_t cap);
/* Stops it: the batch in hand is committed first, offsets after it. */
void srv_kafka_stop(srv *s);

/* ---- maintenance (maint.c) ---- */

int srv_maint_start(srv *s);
void srv_maint_stop(srv *s);
/* One retention pass now (admin endpoint); policy overrides if nonzero.
 * *pruned sessions and *memprofs memory profiles were removed. */
/* regress.c: scans the ended sessions not scanned yet (maintenance
 * thread), posts --alert-webhook; frees its client at stop. */
void srv_regress_run(srv *s);
void srv_regress_stop(srv *s);
/* The webhook's JSON body for one scan's summary (tests, fuzzing). */
int srv_regress_json(const srv_regress_sum *sum, gbuf *b);
/* GET /api/v1/regressions, /jobs, /jobs/{id}: unknown query parameters
 * are refused (http.c) - a typo must not silently widen an answer */
int srv_req_args_only(const srv_req *r, const char *const *allowed, char *bad,
                      size_t cap);
int srv_retention_run(srv *s, const srv_retention *p, uint64_t *pruned,
                      uint64_t *memprofs);

#endif
