/*
 * config.c - gpufl-server's one option table.  The option engine
 * (src/common/opt.h) makes from it the parser of flags, GPUFL_SERVER_*
 * variables and the config file, --help, --dump-config and the Markdown
 * table in docs/server.md (--help-markdown).
 *
 * The durations kept seconds for a bare number ("--timeout 60" is a
 * minute, as it always was); sizes take k/M/G/T (powers of 1024).
 */
#include "srv_int.h"

#include <gpufl/gpufl.h>

#include <stdlib.h>
#include <string.h>

#define T srv_config
#define DUR_S .type = OPT_DUR, .unit = OPT_SEC
static const opt_def srv_opts[] = {
    { .name = "listen",
      .type = OPT_STR,
      OPT_F_ARR(T, listen),
      .def = "127.0.0.1:8080",
      .arg = "ADDR:PORT",
      .help = "address:port to listen on (port 0 picks a free one)" },
    { .name = "data-dir",
      .type = OPT_STR,
      OPT_F_ARR(T, data_dir),
      .def = "./gpufl-data",
      .arg = "DIR",
      .help = "folder for the SQLite database and the admin token hash" },
    { .name = "db",
      .type = OPT_STR,
      OPT_F_ARR(T, db),
      .arg = "URL",
      .help = "database URL: sqlite:PATH (default: DATA-DIR/gpufl.db) or "
              "postgresql://..." },
    { .name = "admin-token",
      .type = OPT_STR,
      OPT_F_ARR(T, admin_token),
      .flags = OPT_SECRET,
      .arg = "TOKEN",
      .help = "admin bearer token, 32 characters or more and not the "
              "example's change-me... (default: generated once, printed, "
              "stored hashed)" },
    { .name = "ui-dir",
      .type = OPT_STR,
      OPT_F_ARR(T, ui_dir),
      .arg = "DIR",
      .help = "folder of the web UI's built files, served at / without "
              "auth (default: the installed PREFIX/share/gpufl/web, or, run "
              "from the build tree, the source's web/dist; none: no UI)" },
    { .name = "cors-origin",
      .type = OPT_STR,
      OPT_F_ARR(T, cors_origin),
      .arg = "ORIGIN",
      .help = "Access-Control-Allow-Origin value (empty: CORS off)" },
    { .name = "threads",
      .type = OPT_INT,
      OPT_F_UINT(T, threads),
      .def = "4",
      .min = 1,
      .max = 64,
      .help = "HTTP worker threads" },
    { .name = "readers",
      .type = OPT_INT,
      OPT_F_UINT(T, readers),
      .def = "4",
      .min = 1,
      .max = 16,
      .help = "database connections for queries" },
    { .name = "max-body",
      .type = OPT_SIZE,
      OPT_F_UINT(T, max_body),
      .def = "16M",
      .min = 1024,
      .max = 1ull << 32,
      .help = "largest request body as sent (413 above)" },
    { .name = "max-decoded",
      .type = OPT_SIZE,
      OPT_F_UINT(T, max_decoded),
      .def = "64M",
      .min = 1024,
      .max = 1ull << 34,
      .help = "largest ingest body after decompression (413 above)" },
    { .name = "max-lines",
      .type = OPT_INT,
      OPT_F_UINT(T, max_lines),
      .def = "200000",
      .min = 1,
      .max = 10000000,
      .help = "most lines in one ingest request (413 above)" },
    { .name = "timeout",
      DUR_S,
      OPT_F_UINT(T, timeout_s),
      .def = "60",
      .min = 1,
      .max = 86400,
      .help = "idle keep-alive timeout, and the deadline of an "
              "authenticated request's body" },
    { .name = "header-timeout",
      DUR_S,
      OPT_F_UINT(T, header_timeout_s),
      .def = "10",
      .min = 1,
      .max = 3600,
      .help = "a request's line and headers must have arrived this long "
              "after the connection opened or its request line began (else "
              "closed)" },
    { .name = "max-conns",
      .type = OPT_INT,
      OPT_F_UINT(T, max_conns),
      .def = "1000",
      .min = 16,
      .max = 100000,
      .help = "most open connections; one more is answered 503 and closed" },
    { .name = "max-conns-per-ip",
      .type = OPT_INT,
      OPT_F_UINT(T, max_conns_per_ip),
      .def = "128",
      .min = 1,
      .max = 100000,
      .help = "most open connections from one address (IPv6: one /64); one "
              "more is answered 429 and closed" },
    { .name = "max-buffered",
      .type = OPT_SIZE,
      OPT_F_UINT(T, max_buffered),
      .def = "256M",
      .min = 1024,
      .max = 1ull << 40,
      .help = "request body bytes held in memory across all connections "
              "(503 with Retry-After above); at least --max-body" },
    { .name = "tls-cert",
      .type = OPT_STR,
      OPT_F_ARR(T, tls_cert),
      .arg = "FILE",
      .help = "PEM certificate (chain) to serve HTTPS with; needs "
              "--tls-key" },
    { .name = "tls-key",
      .type = OPT_STR,
      OPT_F_ARR(T, tls_key),
      .arg = "FILE",
      .help = "PEM private key of --tls-cert" },
    { .name = "stale-after",
      DUR_S,
      OPT_F_UINT(T, stale_after_s),
      .def = "5m",
      .min = 1,
      .max = 1ull << 32,
      .help = "a running session with no line for this long becomes stale "
              "(the server's own downtime not counted)" },
    { .name = "capture-expiry",
      DUR_S,
      OPT_F_UINT(T, capture_expiry_s),
      .def = "10m",
      .min = 1,
      .max = 86400,
      .help = "a capture request no agent of its host picked up within "
              "this long of its creation expires; it is not handed out "
              "again after that (docs/api.md \"Capture requests\")" },
    { .name = "capture-lease",
      DUR_S,
      OPT_F_UINT(T, capture_lease_s),
      .def = "2m",
      .min = 1,
      .max = 86400,
      .help = "an agent that picked up a capture request and reported no "
              "outcome in this long is taken for dead: the request is "
              "handed out again (docs/api.md \"Capture requests\")" },
    { .name = "capture-attempts",
      .type = OPT_INT,
      OPT_F_UINT(T, capture_attempts),
      .def = "3",
      .min = 1,
      .max = 100,
      .help = "how many times a capture request is handed out before it "
              "fails for want of an outcome" },
    { .name = "retention-max-age",
      DUR_S,
      OPT_F_UINT(T, retention_max_age_s),
      .def = "0",
      .max = 1ull << 40,
      .help = "prune sessions whose last line is older (0: never)" },
    { .name = "retention-max-db",
      .type = OPT_SIZE,
      OPT_F_UINT(T, retention_max_db),
      .def = "0",
      .max = 1ull << 50,
      .help = "prune oldest sessions and memory profiles while the database "
              "is larger (0: no cap)" },
    { .name = "memprof-max-age",
      DUR_S,
      OPT_F_UINT(T, memprof_max_age_s),
      .def = "0",
      .max = 1ull << 40,
      .help = "prune memory profiles that ended longer ago (0: as "
              "retention-max-age)" },
    { .name = "retention-interval",
      DUR_S,
      OPT_F_UINT(T, retention_interval_s),
      .def = "1h",
      .min = 1,
      .max = 1ull << 32,
      .help = "how often retention runs" },
    { .name = "kernel-store",
      .type = OPT_ENUM,
      OPT_F_SINT(T, kernel_store),
      .def = "blocks",
      .choices = "rows|blocks",
      .help = "kernels at rest: rows (one row each), or blocks (ingest "
              "writes each batch's kernels as compressed column blocks per "
              "session and stream, the maintenance thread merges small "
              "blocks into blocks of 4096 to 8192 and compacts any kernel "
              "rows, which queries read in place: "
              "docs/server.md \"Kernel blocks\")" },
    { .name = "kernel-compact-interval",
      DUR_S,
      OPT_F_UINT(T, kernel_compact_s),
      .def = "1m",
      .min = 1,
      .max = 1ull << 32,
      .help = "--kernel-store=blocks: how often the compactor runs (and "
              "the cold tier's mover and sweep)" },
    { .name = "kernel-block-cache",
      .type = OPT_SIZE,
      OPT_F_UINT(T, kblock_cache),
      .def = "64M",
      .max = 1ull << 40,
      .help = "the most bytes of decoded kernel blocks the reads keep in "
              "memory (a block read twice lately is kept; least recently "
              "used go first; docs/server.md \"Kernel blocks (store)\"); "
              "0: none" },
    { .name = "sqlite-writer-cache",
      .type = OPT_SIZE,
      OPT_F_UINT(T, sqlite_writer_cache),
      .def = "256M",
      .min = 1ull << 20,
      .max = 1ull << 36,
      .help = "SQLite: the most bytes of database pages the writer's "
              "connection caches (filled only as pages are read; a long "
              "session's ingest wants them: docs/server.md \"100M a fifth "
              "time\"; the query connections keep SQLite's default, "
              "2000 KiB each); lower it on a small machine" },
    { .name = "hot-age",
      DUR_S,
      OPT_F_UINT(T, hot_age_s),
      .def = "0",
      .max = 1ull << 40,
      .help = "kernel blocks of sessions silent this long move to S3 "
              "(--cold-s3-*; docs/server.md \"Cold tier\"); 0: none move" },
    { .name = "cold-s3-endpoint",
      .type = OPT_STR,
      OPT_F_ARR(T, cold_endpoint),
      .arg = "URL",
      .help = "the cold tier's S3 endpoint, e.g. http://127.0.0.1:7480 "
              "(path-style; empty: no cold tier)" },
    { .name = "cold-s3-bucket",
      .type = OPT_STR,
      OPT_F_ARR(T, cold_bucket),
      .help = "the cold tier's bucket (it must exist)" },
    { .name = "cold-s3-region",
      .type = OPT_STR,
      OPT_F_ARR(T, cold_region),
      .def = "us-east-1",
      .help = "the cold tier's SigV4 region" },
    { .name = "cold-s3-access-key",
      .type = OPT_STR,
      OPT_F_ARR(T, cold_access),
      .help = "the cold tier's access key id" },
    { .name = "cold-s3-secret-key",
      .type = OPT_STR,
      OPT_F_ARR(T, cold_secret),
      .flags = OPT_SECRET,
      .help = "the cold tier's secret key" },
    { .name = "cold-s3-prefix",
      .type = OPT_STR,
      OPT_F_ARR(T, cold_prefix),
      .def = "gpufl-kblocks/",
      .help = "key prefix of the cold tier's objects (one per database)" },
    { .name = "cold-s3-ca-file",
      .type = OPT_STR,
      OPT_F_ARR(T, cold_ca_file),
      .arg = "FILE",
      .help = "PEM file of the CAs an https --cold-s3-endpoint is verified "
              "with (empty: the system's)" },
    { .name = "cold-cache",
      .type = OPT_STR,
      OPT_F_ARR(T, cold_cache),
      .arg = "DIR",
      .help = "folder of the local copies of cold blocks read back from S3 "
              "(default: DATA-DIR/cold-cache)" },
    { .name = "cold-cache-max",
      .type = OPT_SIZE,
      OPT_F_UINT(T, cold_cache_max),
      .def = "1G",
      .min = 1ull << 12,
      .max = 1ull << 50,
      .help = "the most bytes --cold-cache holds (least recently used "
              "blocks go first)" },
    { .name = "regress-baseline",
      .type = OPT_INT,
      OPT_F_UINT(T, regress_baseline),
      .def = "5",
      .min = 0,
      .max = 64,
      .help = "an ended session's kernels, scope paths and peak GPU memory "
              "are compared with the last N ended sessions of the same app (a "
              "job's rank: the same rank of the app's other jobs; "
              "docs/analysis.md); 0: no regression scan" },
    { .name = "price",
      .type = OPT_LIST,
      OPT_F_LIST(T, price, nprice, OPT_ST_ARR),
      .flags = OPT_REPEAT,
      .env_sep = ',',
      .arg = "MODEL=PRICE",
      .help = "what one GPU of a model costs per hour, for the money in "
              "/api/v1/fleet/waste (the model as NVML names it, e.g. "
              "\"NVIDIA H100 80GB HBM3=2.5\"; *=PRICE for every model "
              "without its own; repeatable; none: costs are null)" },
    { .name = "currency",
      .type = OPT_STR,
      OPT_F_ARR(T, currency),
      .def = "USD",
      .arg = "CODE",
      .help = "the currency of --price, as /api/v1/fleet/waste names it" },
    { .name = "alert-webhook",
      .type = OPT_STR,
      OPT_F_ARR(T, alert_webhook),
      .arg = "URL",
      .help = "http(s) URL that gets a JSON summary POSTed once for each "
              "scanned session with kernels, scopes or peak memory "
              "significantly worse than its baseline (empty: none; a session "
              "only faster posts nothing)" },
    { .name = "quiet",
      .type = OPT_BOOL,
      OPT_F_UINT(T, quiet),
      .def = "false",
      .help = "log nothing but errors" },
    GLOG_OPT_ROWS(T, log_level, log_format),
    { .name = "kafka-brokers",
      .type = OPT_STR,
      OPT_F_ARR(T, kafka_brokers),
      .arg = "HOST:PORT,...",
      .help = "Kafka bootstrap servers host:port,...; set: also consume the "
              "agent's topics" },
    { .name = "kafka-group",
      .type = OPT_STR,
      OPT_F_ARR(T, kafka_group),
      .def = "gpufl-server",
      .help = "Kafka consumer group (servers in one group share the "
              "partitions)" },
    { .name = "kafka-topic-prefix",
      .type = OPT_STR,
      OPT_F_ARR(T, kafka_topic_prefix),
      .def = "gpufl",
      .help = "topics are PREFIX.device, PREFIX.scope and PREFIX.system" },
    { .name = "kafka-batch",
      .type = OPT_INT,
      OPT_F_UINT(T, kafka_batch),
      .def = "40000",
      .min = 1,
      .max = 1000000,
      .help = "most Kafka messages gathered per batch, and lines per "
              "transaction (more are stored in several)" },
    { .name = "kafka-batch-bytes",
      .type = OPT_SIZE,
      OPT_F_UINT(T, kafka_batch_bytes),
      .def = "32M",
      .min = 1024,
      .max = 1ull << 30,
      .help = "most Kafka payload bytes held: two batches of half this, "
              "one parsed while the other is stored (a message is never "
              "split: one larger than half is a batch of its own)" },
    { .name = "name",
      .type = OPT_STR,
      OPT_F_ARR(T, key_name),
      .help = "keys create: a label for the new key" },
    { .name = "role",
      .type = OPT_ENUM,
      OPT_F_ARR(T, key_role),
      .def = "read",
      .choices = "ingest|read|admin",
      .help = "keys create: the new key's role" },
    { .name = "hosts",
      .type = OPT_STR,
      OPT_F_ARR(T, key_hosts),
      .arg = "H1,H2",
      .help = "keys create: the hosts an ingest key may write for, "
              "comma-separated (empty: any host)" },
};
#undef DUR_S
#undef T

/* Read by the store for tests (store_sql.c: a smaller top-K;
 * store_sql_kblocks_compact.c: a pause inside compaction, kernels per block,
 * blocks a pass names;
 * store_sql_oblocks_compact.c: ops per block, a pause inside compaction;
 * store_sql_kblocks_ingest.c: a pause after each block ingest writes;
 * store_sql_ingest.c: a session whose batches fail, for the group
 * commit's rerun;
 * store_sql_q_tl0.c: the kernels a computed timeline level 0 may decode;
 * store_sql_kbnpack.c: no packing of kbnames, a pause inside packing;
 * ingest_par.c: the parse helper's thread failing to start, a streamed
 * body's parts of a fixed number of pieces;
 * kafka.c: a pause before each chunk the Kafka bridge stores;
 * db_sqlite.c: SQLite's own VFS instead of db_sqlite_walbuf.c's, for a
 * benchmark's baseline);
 * not options, but no typos either. */
static const char *const srv_env_known[] = {
    "GPUFL_SERVER_OB_RUN",        "GPUFL_SERVER_OB_PAUSE_MS",
    "GPUFL_SERVER_TOPK",          "GPUFL_SERVER_KB_PAUSE_MS",
    "GPUFL_SERVER_KBI_PAUSE_MS",  "GPUFL_SERVER_KB_RUN",
    "GPUFL_SERVER_KB_NAME_MAX",   "GPUFL_SERVER_TL0_MAX",
    "GPUFL_SERVER_FAIL_SID",      "GPUFL_SERVER_KBNP_OFF",
    "GPUFL_SERVER_KBNP_PAUSE_MS", "GPUFL_SERVER_PAR_FAIL",
    "GPUFL_SERVER_PAR_STEP",      "GPUFL_SERVER_KAFKA_PAUSE_MS",
    "GPUFL_SERVER_WALBUF",        NULL,
};

const opt_prog srv_prog = {
    .name = "gpufl-server",
    .env_prefix = "GPUFL_SERVER_",
    .opts = srv_opts,
    .n = sizeof srv_opts / sizeof srv_opts[0],
    .size = sizeof(srv_config),
    .usage = "usage: gpufl-server [options]\n"
             "       gpufl-server keys create --role ROLE [--name N] "
             "[--hosts H1,H2] [options]\n"
             "       gpufl-server keys list [options]\n"
             "       gpufl-server keys revoke ID [options]\n"
             "       gpufl-server migrate [options]   (every kernel row "
             "into blocks, in place;\n"
             "                                         resumable: "
             "docs/server.md \"Kernel blocks\")\n\n"
             "Stores gpufl events POSTed to /api/v1/events/{device|scope|"
             "system} and answers the\nquery API under /api/v1/.\n",
    .tail = "Exit status: 0 ok, 1 runtime failure, 2 usage error.\n",
    .env_known = srv_env_known,
    .version = GPUFL_VERSION_STRING,
    .flags = OPT_P_ARGS,
};

void srv_config_help(FILE *f, int md)
{
    if (md)
        opt_markdown(&srv_prog, f);
    else
        opt_help(&srv_prog, f);
}

/* --price MODEL=PRICE items into c->prices (common/price.c). */
static int srv_prices_parse(srv_config *c, char *err, size_t cap)
{
    c->nprices = 0;
    for (size_t i = 0; i < c->nprice; i++) {
        if (price_parse(c->price[i], "--price", &c->prices[c->nprices], err,
                        cap))
            return -1;
        c->nprices++;
    }
    return 0;
}

int srv_config_load(srv_config *c, int argc, char **argv, char **pos,
                    int pos_cap, int *npos, char *err, size_t cap)
{
    opt_ctx *ctx = malloc(sizeof *ctx);
    int rc;

    *npos = 0;
    if (!ctx) {
        snprintf(err, cap, "out of memory");
        return 2;
    }
    rc = opt_load(ctx, &srv_prog, c, NULL, argc, argv, NULL);
    if (rc) {
        snprintf(err, cap, "%s", ctx->err);
        rc = 2;
        goto out;
    }
    if (ctx->warn[0])
        /* before the logger is set up: the option engine's own line */
        fprintf(stderr, "gpufl-server: warning: %s\n", ctx->warn);
    rc = 3;
    switch (ctx->action) {
    case OPT_HELP: srv_config_help(stdout, 0); goto out;
    case OPT_HELP_MARKDOWN: srv_config_help(stdout, 1); goto out;
    case OPT_DUMP: opt_dump(&srv_prog, c, ctx->org, stdout); goto out;
    case OPT_VERSION:
        printf("gpufl-server %s\n", GPUFL_VERSION_STRING);
        goto out;
    case OPT_RUN: break;
    }
    rc = 0;
    if (c->alert_webhook[0] && strncmp(c->alert_webhook, "http://", 7) &&
        strncmp(c->alert_webhook, "https://", 8)) {
        snprintf(err, cap, "--alert-webhook: an http:// or https:// URL");
        rc = 2;
        goto out;
    }
    if (c->cold_endpoint[0] &&
        (!c->cold_bucket[0] || !c->cold_access[0] || !c->cold_secret[0])) {
        snprintf(err, cap,
                 "--cold-s3-endpoint needs --cold-s3-bucket, "
                 "--cold-s3-access-key and --cold-s3-secret-key");
        rc = 2;
        goto out;
    }
    if (c->hot_age_s && !c->cold_endpoint[0]) {
        snprintf(err, cap,
                 "--hot-age needs --cold-s3-endpoint (where the "
                 "blocks go)");
        rc = 2;
        goto out;
    }
    if (srv_prices_parse(c, err, cap)) {
        rc = 2;
        goto out;
    }
    for (size_t i = 0; i < ctx->nargs; i++) {
        if (*npos >= pos_cap) {
            snprintf(err, cap, "unexpected argument '%s'", ctx->args[i]);
            rc = 2;
            goto out;
        }
        pos[(*npos)++] = ctx->args[i];
    }
out:
    free(ctx);
    return rc;
}
