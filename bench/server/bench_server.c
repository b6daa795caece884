/*
 * bench_server.c - gpufl-server figures on this machine: ingest events/s
 * over HTTP on loopback into SQLite, the same rows straight through the
 * store (the ceiling) and their ratio, then query latency p50/p99 for the
 * kernel page, aggregates by name and the timeline on that session.
 *
 *   bench_server [--kernel-store=blocks] [KERNELS [NAMES [DIR [PGURL]]]]
 *   (defaults 300000, 200, /tmp)
 *
 * Ingest over HTTP runs twice, each into a new session: one keep-alive
 * connection sending batches one after another, then two connections
 * sending at once (as two agents would), which lets one request's parsing
 * overlap the other's commit.  CPU seconds per 1M events: the store
 * thread's for the direct run, the whole process's over HTTP (client,
 * HTTP, parse and SQLite), and with PostgreSQL also its server's (the
 * postmaster and its children, from /proc).
 *
 * With PGURL (postgresql://.../db) the ingest runs go to PostgreSQL
 * instead, each as its own session.  BENCH_DIRECT_ONLY=1 in the
 * environment: stop after the direct run (for perf stat or callgrind);
 * BENCH_HTTP_ONLY=1: stop after the one-connection HTTP run (to profile
 * the HTTP worker's ingest alone);
 * BENCH_BATCH=N: N lines per request instead of 10 000.
 * The events are synthetic kernel lines shaped like the client's (launch
 * dicts, 4 streams on 2 devices, log-normal-ish durations).  Prints
 * figures; not a test.
 *
 * BENCH_KBLOCK_CACHE=BYTES: the store's cache of decoded kernel blocks
 * (--kernel-block-cache; 0: none) for the queries.
 *
 * --kernel-store=blocks: ingest writes kernels as blocks
 * (store_sql_kblocks_ingest.c); after the ingest runs, the compactor
 * (store_sql_kblocks.c) merges the HTTP runs' small blocks; prints the
 * bytes per kernel at rest as ingested and after it (indexes included),
 * its throughput and the first query's latency; the queries read rows and
 * blocks in place (docs/server.md "Kernel blocks (store)").
 */
#include "bench_common.h"
#include "db.h"
#include "ingest.h"
#include "srv_int.h"

#include <gpufl/gpufl.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Lines per request: 10 000, or BENCH_BATCH (1 .. 200 000) from the
 * environment, to see the per-request cost (docs/server.md). */
static size_t BATCH = 10000;
/* The session of run r (0: direct, 1: HTTP). */
#define SID_FMT "5e55e55e-0000-4000-8000-00000000be0%d"
#define SID "5e55e55e-0000-4000-8000-00000000be01"
/* the admin token: gpufl-server wants 32 characters or more */
#define BENCH_TOKEN "bench-admin-token-0123456789abcdef"

/* CPU seconds (user + system) of this thread, or of the whole process. */
static double cpu_s(int who)
{
    struct rusage u;
    getrusage(who, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

/* The postmaster of the cluster at url: the parent of this connection's
 * backend.  0 if unknown. */
static long pg_postmaster(const char *url)
{
    sdb *db;
    sdb_stmt *st = NULL;
    char err[256], path[64], buf[512], *p;
    long pid = 0, ppid = 0;
    FILE *f;
    size_t n;

    if (!url || sdb_open(url, 0, &db, err, sizeof(err)))
        return 0;
    if (sdb_prepare(db, "SELECT pg_backend_pid()", &st) == 0 &&
        sdb_step(st) == SDB_ROW)
        pid = (long)sdb_col_i64(st, 0);
    sdb_finalize(st);
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if (pid && (f = fopen(path, "r"))) {
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        if ((p = strrchr(buf, ')')))
            sscanf(p + 2, "%*c %ld", &ppid);
    }
    sdb_close(db);
    return ppid;
}

/* CPU seconds of the postmaster pm and its children, with the children
 * they reaped (the postmaster reaps closed backends): the database
 * server's side of a PostgreSQL run.  0 without a postmaster. */
static double pg_cpu_s(long pm)
{
    DIR *d = pm ? opendir("/proc") : NULL;
    struct dirent *de;
    double t = 0;
    long hz = sysconf(_SC_CLK_TCK);

    while (d && (de = readdir(d))) {
        char path[300], buf[1024], *p;
        unsigned long long ut, st, cut, cst;
        long ppid;
        FILE *f;
        size_t n;
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        if (!(p = strrchr(buf, ')')))
            continue;
        /* after ") ": state ppid pgrp session tty tpgid flags minflt
         * cminflt majflt cmajflt utime stime cutime cstime */
        if (sscanf(p + 2,
                   "%*c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu "
                   "%llu %llu",
                   &ppid, &ut, &st, &cut, &cst) == 5 &&
            (ppid == pm || strtol(de->d_name, NULL, 10) == pm))
            t += (double)(ut + st + cut + cst) / (double)hz;
    }
    if (d)
        closedir(d);
    return t;
}

/* A day of system samples, one a second: a host line and two GPU lines
 * per second (the sampler's default interval), in BATCH-line batches. */
#define SYS_SECONDS 86400
static body *make_system(const char *sid, size_t *nb)
{
    size_t nbatch = (3 * SYS_SECONDS + 1 + BATCH - 1) / BATCH + 1, seq = 0;
    body *b = calloc(nbatch, sizeof(*b));
    uint64_t ts = 1700000000000000000ull;
    char line[768];
    int n;

    put_session(&b[0], sid, "system", seq++, ts);
    for (unsigned t = 0; t < SYS_SECONDS; t++, ts += 1000000000ull) {
        body *cur = &b[seq / BATCH];
        n = snprintf(line, sizeof(line),
                     "{\"v\":1,\"sid\":\"%s\",\"st\":\"system\","
                     "\"seq\":%zu,\"ts\":%llu,\"type\":\"host\",\"cpu\":%u,"
                     "\"ncpu\":16,\"ram_used\":%llu,\"ram_total\":"
                     "137438953472,\"swap_used\":0,\"load1\":1.5,"
                     "\"proc_cpu\":%u,\"proc_rss\":2072576}\n",
                     sid, seq++, (unsigned long long)ts, 20 + t % 60,
                     (unsigned long long)(40ull << 30) + t, 90 + t % 10);
        body_put(cur, line, (size_t)n);
        cur->lines++;
        for (unsigned d = 0; d < 2; d++) {
            cur = &b[seq / BATCH];
            n = snprintf(
                line, sizeof(line),
                "{\"v\":1,\"sid\":\"%s\",\"st\":\"system\",\"seq\":%zu,"
                "\"ts\":%llu,\"type\":\"gpu\",\"dev\":%u,\"util\":%u,"
                "\"mem_util\":32,\"mem_used\":39191576576,\"mem_total\":"
                "85520809984,\"temp\":%u,\"power\":517888,"
                "\"power_limit\":700000,\"fan\":65,\"clk_sm\":1980,"
                "\"clk_mem\":2619,\"clk_gfx\":1980,\"throttle\":0,"
                "\"pstate\":0,\"pcie_tx\":2297,\"pcie_rx\":2297,"
                "\"ecc_corr\":0,\"ecc_uncorr\":0,\"energy\":%u,"
                "\"sm_active\":0.7,\"sm_occ\":0.29,\"nprocs\":0,"
                "\"procs\":[]}\n",
                sid, seq++, (unsigned long long)ts, d, (t * 7 + d) % 101,
                40 + t % 30, t);
            body_put(cur, line, (size_t)n);
            cur->lines++;
        }
    }
    *nb = (seq + BATCH - 1) / BATCH;
    return b;
}

/* Batches of NDJSON: dicts first, then kernels. */
static body *make(const char *sid, size_t nk, unsigned names, size_t *nb,
                  uint64_t *t_end)
{
    size_t nbatch = (nk + BATCH - 1) / BATCH + 1;
    body *b = calloc(nbatch, sizeof(*b));
    kgen g;

    kgen_init(&g, sid, names);
    kgen_dicts(&g, &b[0]);
    for (size_t i = 1; i < nbatch; i++)
        kgen_kernels(&g, &b[i],
                     nk - (i - 1) * BATCH < BATCH ? nk - (i - 1) * BATCH
                                                  : BATCH);
    *nb = nbatch;
    *t_end = g.ts;
    return b;
}

/* Parses a batch into ev[] (arena from the caller); returns lines. */
static size_t parse(const body *b, srv_ev *ev, ingest_arena *a, jsonl_tok *tok)
{
    jsonl_doc d;
    size_t pos = 0, n, k = 0;
    const char *line;
    char why[INGEST_REASON_MAX];

    jsonl_doc_init(&d, tok, INGEST_MAX_TOKENS);
    a->len = 0;
    while (jsonl_line_next(b->p, b->len, &pos, &line, &n))
        if (ingest_line_parse(&d, SRV_ST_DEVICE, line, n, a, &ev[k], why) == 0)
            k++;
    return k;
}

/* One of several connections sending every nth batch (from 1). */
typedef struct sender {
    body *b;
    size_t nb, part;
    uint16_t port;
    int failed;
} sender;

static void *send_part(void *arg)
{
    sender *sd = arg;
    char *resp = malloc(SRV_RESP_MAX + 4096);
    int fd = connect_to(sd->port);

    for (size_t i = 1 + sd->part; i < sd->nb && resp; i += 2) {
        int code = http(fd, "POST", "/api/v1/events/device", BENCH_TOKEN,
                        sd->b[i].p, sd->b[i].len, resp, SRV_RESP_MAX);
        if (code != 200) {
            fprintf(stderr, "POST -> %d\n", code);
            sd->failed = 1;
            break;
        }
    }
    close(fd);
    free(resp);
    return NULL;
}

/* --kernel-store=blocks (bench_server's own flag, taken out of argv). */
static int kstore_flag(int *argc, char **argv)
{
    int blocks = 0, n = 1;

    for (int i = 1; i < *argc; i++) {
        if (!strcmp(argv[i], "--kernel-store=blocks"))
            blocks = 1;
        else if (strcmp(argv[i], "--kernel-store=rows"))
            argv[n++] = argv[i];
    }
    *argc = n;
    return blocks;
}

/* The whole database's B/kernel line: every table and index, rollups
 * included, over all kernels of every session; the biggest tables. */
static void db_line(const char *what, const srv_kb_stats *b)
{
    uint64_t all = b->rows + b->in_blocks; /* every session's */
    uint64_t mine = 0;

    for (int i = 0; i < SRV_KB_TOP && b->top[i].name[0]; i++)
        mine += b->top[i].bytes;
    printf("    whole database%s: %.1f B/kernel (every table and index, "
           "the rollups included, over %llu kernels); biggest:",
           what, (double)b->db_disk / (double)(all ? all : 1),
           (unsigned long long)all);
    for (int i = 0; i < SRV_KB_TOP && b->top[i].name[0]; i++)
        printf("%s %s %.1f", i ? "," : "", b->top[i].name,
               (double)b->top[i].bytes / (double)(all ? all : 1));
    printf(" (B/kernel; those %d tables %.1f)\n", SRV_KB_TOP,
           (double)mine / (double)(all ? all : 1));
}

/* PostgreSQL: the same after VACUUM FULL, which rewrites every table
 * without its dead rows (the upserts' and the compactor's deletes leave
 * them until a VACUUM makes their space reusable; FULL gives it back,
 * so this is what the live rows take).  pg_database_size also counts the
 * catalog of an empty database (~7.5 MB), which weighs more per kernel
 * the fewer kernels there are. */
static void pg_vacuumed(srv_store *st, const char *pg)
{
    sdb *db = NULL;
    srv_kb_stats b;
    char err[256];
    double t0 = now_s();

    if (!pg || sdb_open(pg, 0, &db, err, sizeof(err))) {
        printf("    (no VACUUM FULL: %s)\n", pg ? err : "not PostgreSQL");
        return;
    }
    if (sdb_exec(db, "VACUUM FULL")) {
        printf("    (VACUUM FULL failed)\n");
        sdb_close(db);
        return;
    }
    sdb_close(db);
    srv_store_kblocks_stats(st, &b);
    printf("    VACUUM FULL took %.1f s\n", now_s() - t0);
    db_line(" after VACUUM FULL", &b);
}

/* The compactor until it has nothing left, and what the kernels take
 * before and after. */
static void kstore_figures(srv_store *st, int *fd, uint16_t port, char *resp,
                           const char *pg)
{
    srv_kb_stats a, b;
    uint64_t nb = 0, nk = 0, tb, tk;
    double t0;
    char p[256];

    srv_store_kblocks_stats(st, &a);
    if (a.in_blocks)
        printf("  as ingested: %llu kernels in %llu blocks, %.1f B/kernel "
               "(kblocks table and its index; the blocks alone %.1f "
               "B/kernel)\n",
               (unsigned long long)a.in_blocks, (unsigned long long)a.blocks,
               (double)a.blocks_disk / (double)a.in_blocks,
               (double)a.block_bytes / (double)a.in_blocks);
    t0 = now_s();
    while (srv_store_kblocks_compact(st, &tb, &tk, NULL) == 0 && tb) {
        nb += tb;
        nk += tk;
    }
    t0 = now_s() - t0;
    {
        /* and the timeline's packer, as the maintenance thread runs it
         * after the compactor (PostgreSQL) */
        uint64_t np = 0, nr = 0, tp, tr;
        double t1 = now_s();
        while (srv_store_tl_pack(st, &tp, &tr) == 0 && tp) {
            np += tp;
            nr += tr;
        }
        if (np)
            printf("  timeline packer: %llu tl rows into %llu packs in %.2f "
                   "s\n",
                   (unsigned long long)nr, (unsigned long long)np,
                   now_s() - t1);
        /* the blocks' names' packer, after it (PostgreSQL) */
        np = nr = 0;
        t1 = now_s();
        while (srv_store_kbn_pack(st, &tp, &tr) == 0 && tp) {
            np += tp;
            nr += tr;
        }
        if (np)
            printf("  kernel names packer: %llu kbnames rows into %llu packs "
                   "in %.2f s\n",
                   (unsigned long long)nr, (unsigned long long)np,
                   now_s() - t1);
        /* the API call summary's packer (PostgreSQL) */
        np = nr = 0;
        t1 = now_s();
        while (srv_store_capi_pack(st, &tp, &tr) == 0 && tp) {
            np += tp;
            nr += tr;
        }
        if (np)
            printf("  API call summary packer: %llu capi rows into %llu packs"
                   " in %.2f s\n",
                   (unsigned long long)nr, (unsigned long long)np,
                   now_s() - t1);
    }
    srv_store_kblocks_stats(st, &b);
    printf("  compactor: %llu kernels into %llu blocks (rows compacted, "
           "small blocks merged) in %.2f s = %.0f kernels/s (one thread)\n",
           (unsigned long long)nk, (unsigned long long)nb, t0,
           (double)nk / (t0 > 0 ? t0 : 1));
    if (a.rows)
        printf("    at rest, rows:   %.1f B/kernel (kernels table and its "
               "indexes, %llu rows)\n",
               (double)a.rows_disk / (double)a.rows,
               (unsigned long long)a.rows);
    if (b.in_blocks)
        printf("    at rest, blocks: %.1f B/kernel (kblocks table and its "
               "index; the blocks alone %.1f B/kernel), %llu rows left\n",
               (double)b.blocks_disk / (double)b.in_blocks,
               (double)b.block_bytes / (double)b.in_blocks,
               (unsigned long long)b.rows);
    if (b.db_disk)
        db_line("", &b);
    if (pg)
        pg_vacuumed(st, pg);
    /* a new connection: the old one may have idled past --timeout */
    close(*fd);
    *fd = connect_to(port);
    snprintf(p, sizeof(p), "/api/v1/sessions/" SID "/kernels?limit=100");
    t0 = now_s();
    http(*fd, "GET", p, BENCH_TOKEN, NULL, 0, resp, SRV_RESP_MAX);
    t0 = now_s() - t0;
    srv_store_kblocks_stats(st, &a);
    printf("    first query of a compacted session: %.1f ms (blocks still "
           "holding %llu kernels; the queries below read them in place)\n",
           t0 * 1e3, (unsigned long long)a.in_blocks);
}

int main(int argc, char **argv)
{
    int kstore_blocks = kstore_flag(&argc, argv);
    size_t nk = argc > 1 ? strtoull(argv[1], NULL, 10) : 300000, nb, total = 0;
    unsigned names = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 200;
    const char *dir = argc > 3 ? argv[3] : "/tmp";
    static srv s;
    char path[1024], err[256], *resp = malloc(SRV_RESP_MAX + 4096);
    char *sargv[] = { "bench", "--listen", "127.0.0.1:0", "--quiet", NULL };
    char *pos[2];
    int npos, fd;
    uint64_t t_end;
    const char *pg = argc > 4 ? argv[4] : NULL;
    char sid[40];
    body *b;
    srv_ev *ev = malloc((BATCH + 2 * names + 8) * sizeof(*ev));
    jsonl_tok *tok = malloc(INGEST_MAX_TOKENS * sizeof(*tok));
    ingest_arena a;
    srv_store *st = NULL;
    srv_ingest_res r;
    double t0, tp = 0, ts = 0, direct, over_http, c0, cp = 0, cs = 0;
    double pg0, pgs;
    long pm;

    if (getenv("BENCH_BATCH")) {
        BATCH = strtoull(getenv("BENCH_BATCH"), NULL, 10);
        if (BATCH < 1 || BATCH > 200000) {
            fprintf(stderr, "BENCH_BATCH: 1 to 200000\n");
            return 1;
        }
        ev = realloc(ev, (BATCH + 2 * names + 8) * sizeof(*ev));
    }
    a.cap = 64u << 20;
    a.buf = malloc(a.cap);
    snprintf(sid, sizeof(sid), SID_FMT, 0);
    b = make(sid, nk, names, &nb, &t_end);
    for (size_t i = 0; i < nb; i++)
        total += b[i].lines;
    printf("bench_server: %zu kernels, %u names, %zu lines in %zu batches\n",
           nk, names, total, nb);

    /* 1. the ceiling: parse + store directly */
    snprintf(path, sizeof(path), "%s/bench_server_direct.db", dir);
    unlink(path);
    if (srv_store_open(pg ? pg : path, 2, &st, err, sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    srv_store_set_kernel_store(st, kstore_blocks);
    pm = pg_postmaster(pg);
    pg0 = pg_cpu_s(pm);
    for (size_t i = 0; i < nb; i++) {
        size_t k;
        t0 = now_s();
        c0 = cpu_s(RUSAGE_THREAD);
        k = parse(&b[i], ev, &a, tok);
        tp += now_s() - t0;
        cp += cpu_s(RUSAGE_THREAD) - c0;
        t0 = now_s();
        c0 = cpu_s(RUSAGE_THREAD);
        if (srv_store_ingest(st, ev, k, &r))
            return 1;
        ts += now_s() - t0;
        cs += cpu_s(RUSAGE_THREAD) - c0;
    }
    pgs = pg_cpu_s(pm) - pg0;
    srv_store_close(st);
    direct = (double)total / (tp + ts);
    printf("  parse only (ingest_line_parse)    %10.0f lines/s, %.2f CPU s "
           "per 1M\n",
           (double)total / tp, cp / ((double)total / 1e6));
    printf("  store only (%s, idempotent) %10.0f rows/s, %.2f CPU s per 1M"
           "%s\n",
           pg ? "PostgreSQL" : "SQLite    ", (double)total / ts,
           cs / ((double)total / 1e6), pg ? " (client side)" : "");
    if (pg)
        printf("    + PostgreSQL server processes        %.2f CPU s per 1M\n",
               pgs / ((double)total / 1e6));
    printf("  parse + store, direct (ceiling)   %10.0f events/s\n", direct);
    /* only the direct run (for instruction counts: perf stat) */
    if (getenv("BENCH_DIRECT_ONLY"))
        return 0;

    /* 2. over HTTP on loopback, one keep-alive connection, a new session */
    for (size_t i = 0; i < nb; i++)
        free(b[i].p);
    free(b);
    snprintf(sid, sizeof(sid), SID_FMT, 1);
    b = make(sid, nk, names, &nb, &t_end);
    if (srv_config_load(&s.cfg, 4, sargv, pos, 2, &npos, err, sizeof(err)))
        return 1;
    snprintf(s.cfg.admin_token, sizeof(s.cfg.admin_token), "%s", BENCH_TOKEN);
    snprintf(path, sizeof(path), "%s/bench_server_http.db", dir);
    unlink(path);
    if (srv_store_open(pg ? pg : path, 4, &s.store, err, sizeof(err)) ||
        srv_admin_init(&s) || srv_http_start(&s, err, sizeof(err))) {
        fprintf(stderr, "start: %s\n", err);
        return 1;
    }
    srv_store_set_kernel_store(s.store, kstore_blocks);
    if (getenv("BENCH_KBLOCK_CACHE") &&
        srv_store_set_kblock_cache(
            s.store, strtoull(getenv("BENCH_KBLOCK_CACHE"), NULL, 10)))
        return 1;
    fd = connect_to(s.port);
    t0 = now_s();
    c0 = cpu_s(RUSAGE_SELF);
    pm = pg_postmaster(pg);
    pg0 = pg_cpu_s(pm);
    for (size_t i = 0; i < nb; i++) {
        int code = http(fd, "POST", "/api/v1/events/device", BENCH_TOKEN,
                        b[i].p, b[i].len, resp, SRV_RESP_MAX);
        if (code != 200) {
            fprintf(stderr, "POST -> %d\n", code);
            return 1;
        }
    }
    over_http = (double)total / (now_s() - t0);
    printf("  over HTTP (loopback, %zu-line batches) %6.0f events/s = %.0f%% "
           "of direct, %.2f CPU s per 1M",
           BATCH, over_http, 100.0 * over_http / direct,
           (cpu_s(RUSAGE_SELF) - c0) / ((double)total / 1e6));
    if (pg)
        printf(" + %.2f PostgreSQL",
               (pg_cpu_s(pm) - pg0) / ((double)total / 1e6));
    printf("\n");
    /* only the direct run and one connection (to profile the HTTP worker's
     * ingest alone: perf record) */
    if (getenv("BENCH_HTTP_ONLY")) {
        close(fd);
        srv_http_stop(&s);
        srv_store_close(s.store);
        return 0;
    }

    /* 2b. two connections at once, another new session */
    {
        body *b2;
        size_t nb2;
        uint64_t t_end2;
        sender sd[2];
        pthread_t th[2];
        char sid2[40];
        snprintf(sid2, sizeof(sid2), SID_FMT, 2);
        b2 = make(sid2, nk, names, &nb2, &t_end2);
        t0 = now_s();
        c0 = cpu_s(RUSAGE_SELF);
        pg0 = pg_cpu_s(pm);
        /* the dicts first: the kernels refer to them */
        if (http(fd, "POST", "/api/v1/events/device", BENCH_TOKEN, b2[0].p,
                 b2[0].len, resp, SRV_RESP_MAX) != 200)
            return 1;
        for (int t = 0; t < 2; t++) {
            sd[t] = (sender){ b2, nb2, (size_t)t, s.port, 0 };
            pthread_create(&th[t], NULL, send_part, &sd[t]);
        }
        for (int t = 0; t < 2; t++) {
            pthread_join(th[t], NULL);
            if (sd[t].failed)
                return 1;
        }
        over_http = (double)total / (now_s() - t0);
        printf("  over HTTP, 2 connections at once   %10.0f events/s = %.0f%% "
               "of direct, %.2f CPU s per 1M",
               over_http, 100.0 * over_http / direct,
               (cpu_s(RUSAGE_SELF) - c0) / ((double)total / 1e6));
        if (pg)
            printf(" + %.2f PostgreSQL",
                   (pg_cpu_s(pm) - pg0) / ((double)total / 1e6));
        printf("\n");
        for (size_t i = 0; i < nb2; i++)
            free(b2[i].p);
        free(b2);
    }

    if (kstore_blocks)
        kstore_figures(s.store, &fd, s.port, resp, pg);

    /* 3. queries on that session (after the maintenance pass, which
     * refreshes PostgreSQL's planner statistics) */
    srv_store_mark_stale(s.store, 1u << 30, 0);
    bench_queries(fd, BENCH_TOKEN, SID, t_end, resp, SRV_RESP_MAX);

    /* 4. a day of 1 s system samples (host + 2 GPUs) in a new session,
     * then the System view's queries: downsampled to 500 points */
    {
        enum { NQ = 50 };
        char sid3[40], *p[NQ];
        size_t nsb, lines = 0;
        body *sb;
        snprintf(sid3, sizeof(sid3), SID_FMT, 3);
        sb = make_system(sid3, &nsb);
        t0 = now_s();
        for (size_t i = 0; i < nsb; i++) {
            lines += sb[i].lines;
            if (http(fd, "POST", "/api/v1/events/system", BENCH_TOKEN, sb[i].p,
                     sb[i].len, resp, SRV_RESP_MAX) != 200) {
                fprintf(stderr, "POST system -> failed\n");
                return 1;
            }
        }
        printf("  24 h of 1 s samples (host + 2 GPUs): %zu lines in %.1f s\n",
               lines, now_s() - t0);
        for (int i = 0; i < NQ; i++) {
            p[i] = malloc(256);
            snprintf(p[i], 256, "/api/v1/sessions/%s/system?points=500%s", sid3,
                     i % 2 ? "&src=gpu0&fields=util,temp,power" : "");
        }
        lat("system, 24 h -> 500 points", fd, BENCH_TOKEN, p, NQ, resp,
            SRV_RESP_MAX);
        for (int i = 0; i < NQ; i++)
            free(p[i]);
        for (size_t i = 0; i < nsb; i++)
            free(sb[i].p);
        free(sb);
    }
    close(fd);
    printf("  database: %.1f MB used\n",
           (double)srv_store_db_bytes(s.store) / 1e6);
    srv_http_stop(&s);
    srv_store_close(s.store);
    for (size_t i = 0; i < nb; i++)
        free(b[i].p);
    free(b);
    free(ev);
    free(tok);
    free(a.buf);
    free(resp);
    return 0;
}
