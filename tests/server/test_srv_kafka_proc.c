/*
 * test_srv_kafka_proc.c - the Kafka bridge as deployed: two gpufl-server
 * PROCESSES in one consumer group on librdkafka's mock cluster (hosted by
 * this test), writing to one database, while a producer keeps sending the
 * agent's three topics.  Once both servers have stored lines, one is
 * killed with SIGKILL mid-stream; the other must take its partitions over
 * and, at the end, every produced line is stored exactly once (counts in
 * the database equal what was produced, rollups included).
 *
 *   test_srv_kafka_proc GPUFL_SERVER_BINARY
 *
 * The database is a SQLite file shared by both processes or, when
 * GPUFL_TEST_PG_URI_FILE names a throwaway cluster's URI
 * (tests/server/pg_cluster.sh), a fresh PostgreSQL database.
 */
#include "db.h"
#include "srv_int.h"
#include "test.h"

#include <gpufl/gpufl.h>

#include <arpa/inet.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NSESS 4
#define CHUNKS 40      /* produced one after another ... */
#define CHUNK_KERN 150 /* ... kernels per session each */
#define CHUNK_GAP_MS 100
#define TOTAL_LINES (NSESS * (2 + CHUNKS * (CHUNK_KERN + 2)))

static char bootstraps[512];
static char dburl[1024];

typedef struct server {
    pid_t pid;
    unsigned port;
} server;

/* ---- producer ---- */

typedef struct prod_arg {
    rd_kafka_t *p;
    int64_t lines, kernels;
    int resume, done; /* __atomic */
} prod_arg;

static void produce(rd_kafka_t *p, const char *topic, const char *sid,
                    const char *line)
{
    rd_kafka_resp_err_t e;
    do {
        e = rd_kafka_producev(
            p, RD_KAFKA_V_TOPIC(topic),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_KEY(sid, strlen(sid)),
            RD_KAFKA_V_VALUE((void *)(uintptr_t)line, strlen(line)),
            RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL)
            rd_kafka_poll(p, 10);
    } while (e == RD_KAFKA_RESP_ERR__QUEUE_FULL);
}

static void sid_of(int s, char *sid, size_t cap)
{
    snprintf(sid, cap, "beef000%d-0000-4000-8000-00000000000%d", s, s);
}

/* Session headers and dicts first, then CHUNKS chunks of kernels (device
 * topic), host samples (system) and markers (scope) for every session,
 * CHUNK_GAP_MS apart.  Halfway it waits for resume, so a server is
 * killed while the stream is still flowing. */
static void *producer(void *arg)
{
    prod_arg *pa = arg;
    char line[512], sid[40];

    for (int s = 0; s < NSESS; s++) {
        sid_of(s, sid, sizeof(sid));
        snprintf(line, sizeof(line),
                 "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":0,"
                 "\"ts\":100,\"type\":\"session\",\"app\":\"kp\","
                 "\"host\":\"h%d\"}",
                 sid, s);
        produce(pa->p, "gpufl.device", sid, line);
        snprintf(line, sizeof(line),
                 "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":1,"
                 "\"ts\":101,\"type\":\"dict\",\"id\":1,\"kind\":\"name\","
                 "\"name\":\"kern_%d\"}",
                 sid, s);
        produce(pa->p, "gpufl.device", sid, line);
        pa->lines += 2;
    }
    for (int c = 0; c < CHUNKS; c++) {
        if (c == CHUNKS / 2) {
            for (int w = 0;
                 w < 12000 && !__atomic_load_n(&pa->resume, __ATOMIC_SEQ_CST);
                 w++)
                usleep(10000);
        }
        for (int s = 0; s < NSESS; s++) {
            sid_of(s, sid, sizeof(sid));
            for (int k = c * CHUNK_KERN; k < (c + 1) * CHUNK_KERN; k++) {
                snprintf(line, sizeof(line),
                         "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\","
                         "\"seq\":%d,\"ts\":%d,\"type\":\"kernel\","
                         "\"name\":1,\"dur\":%d,\"stream\":%d}",
                         sid, k + 2, 1000 + k * 100, 5 + k % 90, k % 3);
                produce(pa->p, "gpufl.device", sid, line);
            }
            snprintf(line, sizeof(line),
                     "{\"v\":1,\"sid\":\"%s\",\"st\":\"system\",\"seq\":%d,"
                     "\"ts\":%d,\"type\":\"host\",\"cpu\":%d}",
                     sid, c, 1000 + c * 100 * CHUNK_KERN, c);
            produce(pa->p, "gpufl.system", sid, line);
            snprintf(line, sizeof(line),
                     "{\"v\":1,\"sid\":\"%s\",\"st\":\"scope\",\"seq\":%d,"
                     "\"ts\":%d,\"type\":\"marker\",\"text\":\"chunk %d\"}",
                     sid, c, 1000 + c * 100 * CHUNK_KERN, c);
            produce(pa->p, "gpufl.scope", sid, line);
            pa->lines += CHUNK_KERN + 2;
            pa->kernels += CHUNK_KERN;
        }
        rd_kafka_flush(pa->p, 10000);
        usleep(CHUNK_GAP_MS * 1000);
    }
    rd_kafka_flush(pa->p, 30000);
    __atomic_store_n(&pa->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* ---- database ---- */

static int64_t stored(const char *sql)
{
    sdb *db;
    sdb_stmt *st;
    char err[256];
    int64_t v = -1;

    if (sdb_open(dburl, 1, &db, err, sizeof(err)))
        return -1;
    if (sdb_prepare(db, sql, &st) == 0) {
        if (sdb_step(st) == SDB_ROW)
            v = sdb_col_i64(st, 0);
        sdb_finalize(st);
    }
    sdb_close(db);
    return v;
}

static int64_t stored_lines(void)
{
    return stored("SELECT coalesce(sum(n_lines), 0) FROM sessions");
}

/* A fresh database: a SQLite file, or a new PostgreSQL database. */
static int make_db(const char *tmp)
{
    const char *uf = getenv("GPUFL_TEST_PG_URI_FILE");
    char err[512], uri[512] = "";
    srv_store *st;

    if (uf && uf[0]) {
        FILE *f = fopen(uf, "r");
        sdb *db;
        if (!f || !fgets(uri, sizeof(uri), f)) {
            if (f)
                fclose(f);
            fprintf(stderr, "cannot read %s\n", uf);
            return -1;
        }
        fclose(f);
        uri[strcspn(uri, "\r\n")] = '\0';
        snprintf(dburl, sizeof(dburl), "%s/postgres", uri);
        if (sdb_open(dburl, 0, &db, err, sizeof(err))) {
            fprintf(stderr, "%s\n", err);
            return -1;
        }
        sdb_exec(db, "DROP DATABASE IF EXISTS gpufl_kafka_proc");
        if (sdb_exec(db, "CREATE DATABASE gpufl_kafka_proc")) {
            fprintf(stderr, "create database: %s\n", sdb_errmsg(db));
            sdb_close(db);
            return -1;
        }
        sdb_close(db);
        snprintf(dburl, sizeof(dburl), "%s/gpufl_kafka_proc", uri);
    } else {
        char p[1100];
        snprintf(dburl, sizeof(dburl), "%s/kafka_proc.db", tmp);
        unlink(dburl);
        snprintf(p, sizeof(p), "%s-wal", dburl);
        unlink(p);
        snprintf(p, sizeof(p), "%s-shm", dburl);
        unlink(p);
    }
    /* the schema exists before the two servers share it */
    if (srv_store_open(dburl, 1, &st, err, sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    srv_store_close(st);
    return 0;
}

/* ---- servers ---- */

static int spawn(const char *bin, const char *tmp, const char *name, server *sv)
{
    char ddir[1100], line[512];
    int pfd[2];
    FILE *f;
    char *colon;

    snprintf(ddir, sizeof(ddir), "%s/kafka_proc_%s", tmp, name);
    mkdir(ddir, 0700);
    if (pipe(pfd))
        return -1;
    sv->pid = fork();
    if (sv->pid < 0)
        return -1;
    if (sv->pid == 0) {
        char *argv[] = { (char *)bin,
                         "--listen",
                         "127.0.0.1:0",
                         "--db",
                         dburl,
                         "--data-dir",
                         ddir,
                         "--admin-token",
                         "kafkaproc-admin-token-0123456789abcdef",
                         "--quiet",
                         "--threads",
                         "2",
                         "--readers",
                         "1",
                         "--kafka-brokers",
                         bootstraps,
                         "--kafka-group",
                         "gpufl-proc",
                         "--kafka-batch",
                         "300",
                         NULL };
        dup2(pfd[1], 1);
        close(pfd[0]);
        close(pfd[1]);
        execv(bin, argv);
        _exit(127);
    }
    close(pfd[1]);
    f = fdopen(pfd[0], "r");
    if (!f)
        return -1;
    /* "gpufl-server: listening on http://127.0.0.1:PORT (store ...)" */
    if (!fgets(line, sizeof(line), f) || !strstr(line, "listening on") ||
        !(colon = strrchr(strstr(line, "http://") + 7, ':'))) {
        fclose(f);
        return -1;
    }
    sv->port = (unsigned)strtoul(colon + 1, NULL, 10);
    fclose(f);
    return sv->port ? 0 : -1;
}

/* The server's lines accepted so far (from /metrics); -1 if unreachable. */
static int64_t accepted(const server *sv)
{
    struct sockaddr_in a;
    char req[256], resp[65536], *m;
    size_t got = 0;
    int fd = socket(AF_INET, SOCK_STREAM, 0), n;
    ssize_t r;

    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)sv->port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    n = snprintf(req, sizeof(req),
                 "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                 "kafkaproc-admin-token-0123456789abcdef\r\nConnection: "
                 "close\r\n\r\n");
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return -1;
    }
    while (got + 1 < sizeof(resp) &&
           (r = read(fd, resp + got, sizeof(resp) - 1 - got)) > 0)
        got += (size_t)r;
    close(fd);
    resp[got] = '\0';
    m = strstr(resp, "gpufl_ingest_lines_total{outcome=\"accepted\"} ");
    return m ? strtoll(strchr(m, '}') + 2, NULL, 10) : -1;
}

static void stop(server *sv, int sig)
{
    int status;
    if (sv->pid <= 0)
        return;
    kill(sv->pid, sig);
    waitpid(sv->pid, &status, 0);
    sv->pid = 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *g_bin;

static void test_two_processes_one_killed(void)
{
    static server a, b;
    char err[512], tmp[512];
    rd_kafka_conf_t *c = rd_kafka_conf_new(), *pc;
    rd_kafka_t *host, *prod;
    rd_kafka_mock_cluster_t *mc;
    const char *t = getenv("GPUFL_TEST_TMP");
    prod_arg pa;
    pthread_t th;
    int64_t acc_a = 0, acc_b = 0, at_kill, want_k;
    double t0;

    snprintf(tmp, sizeof(tmp), "%s", t ? t : "/tmp");
    mkdir(tmp, 0700);
    REQUIRE(make_db(tmp) == 0);
    rd_kafka_conf_set(c, "log_level", "3", err, sizeof(err));
    host = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
    REQUIRE(host);
    mc = rd_kafka_mock_cluster_new(host, 3);
    REQUIRE(mc);
    snprintf(bootstraps, sizeof(bootstraps), "%s",
             rd_kafka_mock_cluster_bootstraps(mc));
    rd_kafka_mock_topic_create(mc, "gpufl.device", 4, 1);
    rd_kafka_mock_topic_create(mc, "gpufl.scope", 2, 1);
    rd_kafka_mock_topic_create(mc, "gpufl.system", 2, 1);
    pc = rd_kafka_conf_new();
    rd_kafka_conf_set(pc, "bootstrap.servers", bootstraps, err, sizeof(err));
    rd_kafka_conf_set(pc, "log_level", "3", err, sizeof(err));
    prod = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof(err));
    REQUIRE(prod);

    REQUIRE(spawn(g_bin, tmp, "a", &a) == 0);
    REQUIRE(spawn(g_bin, tmp, "b", &b) == 0);
    /* let the group form with both members before data flows */
    sleep(3);
    memset(&pa, 0, sizeof(pa));
    pa.p = prod;
    REQUIRE(pthread_create(&th, NULL, producer, &pa) == 0);

    /* both servers store lines (they share the partitions) ... */
    t0 = now_s();
    while (now_s() - t0 < 90) {
        acc_a = accepted(&a);
        acc_b = accepted(&b);
        /* and a quarter of the stream is in */
        if (acc_a > 0 && acc_b > 0 && stored_lines() >= TOTAL_LINES / 4)
            break;
        usleep(50000);
    }
    printf("before the kill: A accepted %lld, B accepted %lld\n",
           (long long)acc_a, (long long)acc_b);
    CHECK(acc_a > 0);
    CHECK(acc_b > 0);
    /* ... then A dies mid-stream, with no chance to commit anything */
    at_kill = stored_lines();
    CHECK(!__atomic_load_n(&pa.done, __ATOMIC_SEQ_CST));
    stop(&a, SIGKILL);
    printf("A killed with %lld of the lines stored\n", (long long)at_kill);
    /* the second half of the stream, while only B is left */
    __atomic_store_n(&pa.resume, 1, __ATOMIC_SEQ_CST);

    pthread_join(th, NULL);
    printf("produced %lld lines (%lld kernels)\n", (long long)pa.lines,
           (long long)pa.kernels);
    CHECK_EQ_U64(pa.lines, TOTAL_LINES);
    CHECK(at_kill < pa.lines);
    /* B takes A's partitions over (after the group's session timeout)
     * and stores the rest */
    t0 = now_s();
    while (now_s() - t0 < 90 && stored_lines() < pa.lines)
        usleep(200000);
    usleep(500000);
    want_k = pa.kernels;
    CHECK_EQ_U64(stored_lines(), pa.lines);
    /* the kernels at rest in either store (blocks by default, rows of
     * --kernel-store=rows): a kernel stored twice counts twice */
    CHECK_EQ_U64(stored("SELECT (SELECT count(*) FROM kernels) +"
                        " (SELECT coalesce(sum(n), 0) FROM kblocks)"),
                 want_k);
    CHECK_EQ_U64(stored("SELECT coalesce(sum(n_kernels), 0) FROM sessions"),
                 want_k);
    CHECK_EQ_U64(stored("SELECT coalesce(sum(n), 0) FROM kagg"), want_k);
    CHECK_EQ_U64(stored("SELECT count(*) FROM samples"), NSESS * CHUNKS);
    /* the markers, from the scope topic */
    CHECK_EQ_U64(stored("SELECT count(*) FROM lines WHERE st=1"),
                 NSESS * CHUNKS);
    CHECK_EQ_U64(stored("SELECT count(*) FROM sessions"), NSESS);
    acc_b = accepted(&b);
    printf("B accepted %lld in all, stored after the kill: %lld\n",
           (long long)acc_b, (long long)(pa.lines - at_kill));
    /* B stored at least everything that was not stored when A died */
    CHECK(acc_b >= pa.lines - at_kill);
    stop(&b, SIGTERM);
    rd_kafka_destroy(prod);
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(host);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_srv_kafka_proc GPUFL_SERVER_BINARY\n");
        return 2;
    }
    g_bin = argv[1];
    signal(SIGPIPE, SIG_IGN);
    RUN(test_two_processes_one_killed);
    TEST_DONE();
}
