/*
 * test_srv_kafka.c - the Kafka consumer bridge against librdkafka's mock
 * cluster: two servers in one consumer group, sharing one database, read
 * the agent's three topics; every event is stored exactly once, also when
 * one server stops halfway and the other takes its partitions over.  A
 * group pushed past the broker's retention counts and logs the messages
 * it lost, and their lines show in their session's gaps; a message of more
 * lines than --kafka-batch is stored whole; consumer errors are counted;
 * lines past their stream's session_end are refused, as over HTTP; a
 * packed message (several lines) is stored line by line, a bad line in it
 * counted, and stored once when it comes again.
 */
#include "srv_int.h"
#include "jpath.h"
#include "test.h"

#include <gpufl/gpufl.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <sqlite3.h>
#include <time.h>
#include <unistd.h>

#define NSESS 3
#define NKERN 400

static char bootstraps[512];
static char dbpath[512];

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

/* Writes NSESS sessions to the topics; returns the number of lines. */
static int produce_all(rd_kafka_t *p, int first_kernel, int nkern)
{
    char line[512];
    int n = 0;

    for (int s = 0; s < NSESS; s++) {
        char sid[40];
        snprintf(sid, sizeof(sid), "cafe000%d-0000-4000-8000-000000000000", s);
        if (first_kernel == 0) {
            snprintf(line, sizeof(line),
                     "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":0,"
                     "\"ts\":100,\"type\":\"session\",\"app\":\"k\","
                     "\"host\":\"h\"}",
                     sid);
            produce(p, "gpufl.device", sid, line);
            snprintf(line, sizeof(line),
                     "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":1,"
                     "\"ts\":101,\"type\":\"dict\",\"id\":1,\"kind\":\"name\","
                     "\"name\":\"kern\"}",
                     sid);
            produce(p, "gpufl.device", sid, line);
            snprintf(line, sizeof(line),
                     "{\"v\":1,\"sid\":\"%s\",\"st\":\"system\",\"seq\":0,"
                     "\"ts\":100,\"type\":\"host\",\"cpu\":5}",
                     sid);
            produce(p, "gpufl.system", sid, line);
            snprintf(line, sizeof(line),
                     "{\"v\":1,\"sid\":\"%s\",\"st\":\"scope\",\"seq\":0,"
                     "\"ts\":100,\"type\":\"marker\",\"text\":\"go\"}",
                     sid);
            produce(p, "gpufl.scope", sid, line);
            n += 4;
        }
        for (int k = first_kernel; k < first_kernel + nkern; k++) {
            snprintf(line, sizeof(line),
                     "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%d,"
                     "\"ts\":%d,\"type\":\"kernel\",\"name\":1,\"dur\":%d}",
                     sid, k + 2, 1000 + k * 10, 5 + k);
            produce(p, "gpufl.device", sid, line);
            n++;
        }
    }
    rd_kafka_flush(p, 10000);
    return n;
}

static int64_t stored(const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    int64_t v = -1;

    if (sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        return -1;
    sqlite3_busy_timeout(db, 5000);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return v;
}

static int wait_lines(int64_t want, int seconds)
{
    for (int i = 0; i < seconds * 10; i++) {
        if (stored("SELECT coalesce(sum(n_lines), 0) FROM sessions") >= want)
            return 1;
        usleep(100000);
    }
    return 0;
}

static const char *topic_prefix = "gpufl";
static uint64_t batch_bytes; /* --kafka-batch-bytes when set */

static int start(srv *s, const char *group)
{
    char err[512];
    char *argv[] = { "t", "--quiet", NULL };
    char *pos[2];
    int npos;

    memset(s, 0, sizeof(*s));
    if (srv_config_load(&s->cfg, 2, argv, pos, 2, &npos, err, sizeof(err)))
        return -1;
    snprintf(s->cfg.kafka_brokers, sizeof(s->cfg.kafka_brokers), "%s",
             bootstraps);
    snprintf(s->cfg.kafka_group, sizeof(s->cfg.kafka_group), "%s", group);
    snprintf(s->cfg.kafka_topic_prefix, sizeof(s->cfg.kafka_topic_prefix), "%s",
             topic_prefix);
    s->cfg.kafka_batch = 100;
    if (batch_bytes)
        s->cfg.kafka_batch_bytes = batch_bytes;
    if (srv_store_open(dbpath, 1, &s->store, err, sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    if (srv_kafka_start(s, err, sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}

static void stop(srv *s)
{
    srv_kafka_stop(s);
    srv_store_close(s->store);
}

static void test_two_servers_exactly_once(void)
{
    static srv a, b;
    char err[512];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    rd_kafka_t *p;
    rd_kafka_mock_cluster_t *mc;
    const char *tmp = getenv("GPUFL_TEST_TMP");
    int n1, n2;

    snprintf(dbpath, sizeof(dbpath), "%s/kafka_test.db", tmp ? tmp : "/tmp");
    unlink(dbpath);
    rd_kafka_conf_set(c, "log_level", "3", err, sizeof(err));
    p = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
    REQUIRE(p);
    mc = rd_kafka_mock_cluster_new(p, 3);
    REQUIRE(mc);
    snprintf(bootstraps, sizeof(bootstraps), "%s",
             rd_kafka_mock_cluster_bootstraps(mc));
    rd_kafka_mock_topic_create(mc, "gpufl.device", 4, 1);
    rd_kafka_mock_topic_create(mc, "gpufl.scope", 2, 1);
    rd_kafka_mock_topic_create(mc, "gpufl.system", 2, 1);
    {
        rd_kafka_conf_t *pc = rd_kafka_conf_new();
        rd_kafka_t *prod;
        rd_kafka_conf_set(pc, "bootstrap.servers", bootstraps, err,
                          sizeof(err));
        rd_kafka_conf_set(pc, "log_level", "3", err, sizeof(err));
        prod = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof(err));
        REQUIRE(prod);
        /* the database exists before the consumers share it */
        {
            srv_store *st;
            REQUIRE(srv_store_open(dbpath, 1, &st, err, sizeof(err)) == 0);
            srv_store_close(st);
        }
        n1 = produce_all(prod, 0, NKERN);
        REQUIRE(start(&a, "g1") == 0);
        REQUIRE(start(&b, "g1") == 0);
        CHECK(wait_lines(n1, 60));
        /* one server leaves; the other takes every partition over */
        stop(&a);
        n2 = produce_all(prod, NKERN, NKERN);
        CHECK(wait_lines(n1 + n2, 60));
        usleep(500000);
        CHECK_EQ_U64(stored("SELECT sum(n_lines) FROM sessions"), n1 + n2);
        CHECK_EQ_U64(stored("SELECT count(*) FROM kernels"), NSESS * 2 * NKERN);
        CHECK_EQ_U64(stored("SELECT sum(n) FROM kagg"), NSESS * 2 * NKERN);
        CHECK_EQ_U64(stored("SELECT count(*) FROM samples"), NSESS);
        CHECK_EQ_U64(a.met.lines_rejected + b.met.lines_rejected, 0);
        /* every stored line was accepted once, by one of the two */
        CHECK_EQ_U64(a.met.lines_accepted + b.met.lines_accepted, n1 + n2);
        CHECK(a.met.lines_accepted > 0);
        /* a partition taken over is no loss */
        CHECK_EQ_U64(a.met.kafka_resets + b.met.kafka_resets, 0);
        CHECK_EQ_U64(a.met.kafka_skipped + b.met.kafka_skipped, 0);
        stop(&b);
        rd_kafka_destroy(prod);
    }
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(p);
}

/* Kernel lines of session SIDR, seq [from, to), as one message each
 * (padded with an unknown member of pad bytes), or all in one message. */
#define SIDR "feed0000-0000-4000-8000-000000000000"
static void produce_kernels(rd_kafka_t *p, int from, int to, int pad,
                            int one_message)
{
    static char msg[1 << 20];
    char *line = malloc((size_t)pad + 512);
    size_t len = 0;

    if (!line)
        return;
    for (int k = from; k < to; k++) {
        int n = snprintf(line, (size_t)pad + 512,
                         "{\"v\":1,\"sid\":\"" SIDR "\",\"st\":\"device\","
                         "\"seq\":%d,\"ts\":%d,\"type\":\"kernel\",\"name\":1,"
                         "\"dur\":5,\"pad\":\"%0*d\"}",
                         k, 1000 + k, pad, 0);
        if (!one_message) {
            produce(p, "rt.device", SIDR, line);
        } else if (len + (size_t)n + 2 < sizeof(msg)) {
            memcpy(msg + len, line, (size_t)n);
            len += (size_t)n;
            msg[len++] = '\n';
            msg[len] = '\0';
        }
    }
    if (one_message)
        produce(p, "rt.device", SIDR, msg);
    rd_kafka_flush(p, 10000);
    free(line);
}

static int wait_seq(int seq, int seconds)
{
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM kernels WHERE seq=%d",
             seq);
    for (int i = 0; i < seconds * 10; i++) {
        if (stored(sql) == 1)
            return 1;
        usleep(100000);
    }
    return 0;
}

/* Group g2 reads 100 lines, stops; 1000 lines of 8 KiB each follow while
 * it is away, more than the mock broker keeps (5 MiB a partition), so the
 * oldest are deleted unread; then one message of 250 lines (kafka-batch
 * is 100), a line that does not parse and one more line.  The second
 * server of the group counts the deleted messages as one reset and logs
 * them; every other line is stored or rejected; the session's gaps are
 * exactly the deleted range and the rejected line.  The scope topic
 * refuses the group (authorization): consumer errors, counted. */
/* A one-broker mock cluster with topic <prefix>.device and a producer
 * on it; the database at GPUFL_TEST_TMP/kafka_<prefix>.db, removed. */
typedef struct one_broker {
    rd_kafka_t *p, *prod;
    rd_kafka_mock_cluster_t *mc;
} one_broker;

static void one_broker_open(one_broker *k, const char *prefix)
{
    char err[512], topic[64];
    rd_kafka_conf_t *c = rd_kafka_conf_new(), *pc = rd_kafka_conf_new();
    const char *tmp = getenv("GPUFL_TEST_TMP");

    snprintf(dbpath, sizeof(dbpath), "%s/kafka_%s.db", tmp ? tmp : "/tmp",
             prefix);
    unlink(dbpath);
    topic_prefix = prefix;
    rd_kafka_conf_set(c, "log_level", "3", err, sizeof(err));
    k->p = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
    REQUIRE(k->p);
    k->mc = rd_kafka_mock_cluster_new(k->p, 1);
    REQUIRE(k->mc);
    snprintf(bootstraps, sizeof(bootstraps), "%s",
             rd_kafka_mock_cluster_bootstraps(k->mc));
    snprintf(topic, sizeof(topic), "%s.device", prefix);
    rd_kafka_mock_topic_create(k->mc, topic, 1, 1);
    rd_kafka_conf_set(pc, "bootstrap.servers", bootstraps, err, sizeof(err));
    rd_kafka_conf_set(pc, "log_level", "3", err, sizeof(err));
    k->prod = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof(err));
    REQUIRE(k->prod);
}

static void one_broker_close(one_broker *k)
{
    rd_kafka_destroy(k->prod);
    rd_kafka_mock_cluster_destroy(k->mc);
    rd_kafka_destroy(k->p);
}

static void test_retention_and_big_messages(void)
{
    static srv a, b;
    char out[8192];
    one_broker kc;
    uint64_t skipped, miss[SRV_ST_N];
    const int n2 = 1000, big = 100 + n2, bad = big + 250, last = bad + 1;

    one_broker_open(&kc, "rt");
    /* the scope topic refuses this group: the consumer reports it */
    rd_kafka_mock_topic_set_error(kc.mc, "rt.scope",
                                  RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    {
        char line[512];
        snprintf(line, sizeof(line),
                 "{\"v\":1,\"sid\":\"" SIDR "\",\"st\":\"device\","
                 "\"seq\":0,\"ts\":100,\"type\":\"session\",\"app\":\"k\","
                 "\"host\":\"h\"}");
        produce(kc.prod, "rt.device", SIDR, line);
    }
    produce_kernels(kc.prod, 1, 100, 1, 0);
    REQUIRE(start(&a, "g2") == 0);
    CHECK(wait_lines(100, 60));
    stop(&a);
    CHECK_EQ_U64(a.met.kafka_resets, 0);
    produce_kernels(kc.prod, 100, big, 8192, 0);
    produce_kernels(kc.prod, big, bad, 1, 1);
    {
        char line[512];
        snprintf(line, sizeof(line),
                 "{\"v\":1,\"sid\":\"" SIDR "\",\"st\":\"device\","
                 "\"seq\":%d,\"ts\":5,\"type\":\"kernel\",\"dur\":\"x\"}",
                 bad);
        produce(kc.prod, "rt.device", SIDR, line);
    }
    produce_kernels(kc.prod, last, last + 1, 1, 0);
    REQUIRE(start(&b, "g2") == 0);
    CHECK(wait_seq(last, 60));
    usleep(300000);
    skipped = b.met.kafka_skipped;
    CHECK_EQ_U64(b.met.kafka_resets, 1);
    CHECK(skipped > 0 && skipped < (uint64_t)n2);
    CHECK_EQ_U64(b.met.lines_rejected, 1);
    CHECK_EQ_U64(b.met.lines_accepted,
                 (uint64_t)(last + 1 - 100) - skipped - 1);
    CHECK_EQ_U64(stored("SELECT n_lines FROM sessions"),
                 (uint64_t)(last + 1) - skipped - 1);
    CHECK(b.met.kafka_errors > 0); /* rt.scope refused */
    /* the session's gaps: what the broker deleted, and the rejected line */
    {
        srv_q qq;
        jw w;
        memset(&qq, 0, sizeof(qq));
        qq.sid = SIDR;
        jw_init(&w, out, sizeof(out));
        CHECK(srv_store_q_session(b.store, &qq, &w) == 0);
        jw_put(&w, "", 1);
        CHECK_JI64(out, "gaps.device.count", (int64_t)skipped + 1);
        CHECK_JLEN(out, "gaps.device.ranges", 2);
        CHECK_JI64(out, "gaps.device.ranges.0.0", 100);
        CHECK_JI64(out, "gaps.device.ranges.0.1", (int64_t)(99 + skipped));
        CHECK_JI64(out, "gaps.device.ranges.1.0", bad);
        CHECK_JI64(out, "gaps.device.ranges.1.1", bad);
        CHECK(srv_store_missing(b.store, miss) == 0);
        CHECK_EQ_U64(miss[SRV_ST_DEVICE], skipped + 1);
    }
    stop(&b);
    one_broker_close(&kc);
}

/* A stream ended stays ended: lines past its session_end (in the same
 * poll as the end, or in a later one) are refused and counted, as over
 * HTTP, and nothing of them is stored. */
#define SIDE "e0d00000-0000-4000-8000-000000000000"
static void produce_seq(rd_kafka_t *p, int seq, const char *rest)
{
    char line[512];
    snprintf(line, sizeof(line),
             "{\"v\":1,\"sid\":\"" SIDE "\",\"st\":\"device\","
             "\"seq\":%d,\"ts\":%d,%s}",
             seq, 100 + seq, rest);
    produce(p, "pe.device", SIDE, line);
}

static void test_past_the_end(void)
{
    static srv a;
    one_broker kc;

    one_broker_open(&kc, "pe");
    produce_seq(kc.prod, 0,
                "\"type\":\"session\",\"app\":\"k\","
                "\"host\":\"h\",\"streams\":[\"device\"]");
    produce_seq(kc.prod, 1,
                "\"type\":\"dict\",\"id\":1,\"kind\":\"name\","
                "\"name\":\"kern\"");
    for (int k = 2; k < 10; k++)
        produce_seq(kc.prod, k, "\"type\":\"kernel\",\"name\":1,\"dur\":5");
    produce_seq(kc.prod, 10,
                "\"type\":\"session_end\",\"reason\":\"shutdown\","
                "\"dur\":10,\"lines\":11,\"lost\":0,"
                "\"rotations\":0");
    /* past the end, in the same poll as the end */
    produce_seq(kc.prod, 11, "\"type\":\"kernel\",\"name\":1,\"dur\":5");
    produce_seq(kc.prod, 12, "\"type\":\"kernel\",\"name\":1,\"dur\":5");
    rd_kafka_flush(kc.prod, 10000);
    REQUIRE(start(&a, "g3") == 0);
    CHECK(wait_lines(11, 60));
    for (int i = 0; i < 100 && a.met.lines_rejected < 2; i++)
        usleep(100000);
    /* and in a later poll, with the end stored */
    produce_seq(kc.prod, 13, "\"type\":\"kernel\",\"name\":1,\"dur\":5");
    rd_kafka_flush(kc.prod, 10000);
    for (int i = 0; i < 100 && a.met.lines_rejected < 3; i++)
        usleep(100000);
    usleep(300000);
    CHECK_EQ_U64(a.met.lines_rejected, 3);
    CHECK_EQ_U64(a.met.lines_accepted, 11);
    CHECK_EQ_U64(stored("SELECT n_lines FROM sessions"), 11);
    CHECK_EQ_U64(stored("SELECT count(*) FROM kernels"), 8);
    CHECK_EQ_U64(stored("SELECT count(*) FROM kernels WHERE seq > 10"), 0);
    stop(&a);
    one_broker_close(&kc);
}

/* A packed message as the agent sends it (docs/agent.md "Kafka sink"):
 * lines '\n'-separated, no '\n' after the last.  pack_session and
 * pack_kernels append to msg (len bytes used of cap) and return the new
 * length; a message past cap is the test's mistake, and ends it. */
static size_t pack_fit(int w, size_t len, size_t cap)
{
    if (w < 0 || (size_t)w >= cap - len) {
        fprintf(stderr, "packed message past %zu bytes\n", cap);
        exit(1);
    }
    return len + (size_t)w;
}

/* Session sid's session line, seq 0. */
static size_t pack_session(char *msg, size_t len, size_t cap, const char *sid)
{
    return pack_fit(snprintf(msg + len, cap - len,
                             "%s{\"v\":1,\"sid\":\"%s\",\"st\":\"device\","
                             "\"seq\":0,\"ts\":100,\"type\":\"session\","
                             "\"app\":\"k\",\"host\":\"h\"}",
                             len ? "\n" : "", sid),
                    len, cap);
}

/* n kernel lines of session sid, seq seq0 on, ts 1000 + seq, dur 5 but for
 * seq bad's, a string: a line that does not parse (bad -1: none). */
static size_t pack_kernels(char *msg, size_t len, size_t cap, const char *sid,
                           int seq0, int n, int bad)
{
    for (int seq = seq0; seq < seq0 + n; seq++)
        len = pack_fit(snprintf(msg + len, cap - len,
                                "%s{\"v\":1,\"sid\":\"%s\",\"st\":\"device\","
                                "\"seq\":%d,\"ts\":%d,\"type\":\"kernel\","
                                "\"name\":1,\"dur\":%s}",
                                len ? "\n" : "", sid, seq, 1000 + seq,
                                seq == bad ? "\"x\"" : "5"),
                       len, cap);
    return len;
}

/* The agent packs a batch's lines into one message, '\n'-separated
 * (docs/agent.md "Kafka sink"): every line of it is stored; a line that
 * does not parse, in the middle, is counted and the lines after it are
 * still stored; the same message again (the agent's retry, or a replay
 * after a rebalance) stores nothing twice. */
#define SIDP "beef0000-0000-4000-8000-000000000000"
static void test_packed_message(void)
{
    static srv a;
    static char msg[8192];
    one_broker kc;
    size_t len = 0;

    one_broker_open(&kc, "pk");
    len = pack_session(msg, len, sizeof(msg), SIDP);
    len = pack_kernels(msg, len, sizeof(msg), SIDP, 1, 10, 6);
    produce(kc.prod, "pk.device", SIDP, msg);
    rd_kafka_flush(kc.prod, 10000);
    REQUIRE(start(&a, "g4") == 0);
    CHECK(wait_lines(10, 60));
    for (int i = 0; i < 100 && a.met.lines_rejected < 1; i++)
        usleep(100000);
    CHECK_EQ_U64(a.met.lines_accepted, 10);
    CHECK_EQ_U64(a.met.lines_rejected, 1);
    /* the same message again */
    produce(kc.prod, "pk.device", SIDP, msg);
    rd_kafka_flush(kc.prod, 10000);
    for (int i = 0; i < 100 && a.met.lines_duplicate < 10; i++)
        usleep(100000);
    usleep(300000);
    CHECK_EQ_U64(a.met.lines_duplicate, 10);
    CHECK_EQ_U64(a.met.lines_accepted, 10);
    CHECK_EQ_U64(a.met.lines_rejected, 2);
    CHECK_EQ_U64(stored("SELECT n_lines FROM sessions"), 10);
    CHECK_EQ_U64(stored("SELECT count(*) FROM kernels"), 9);
    CHECK_EQ_U64(stored("SELECT count(*) FROM kernels WHERE seq = 6"), 0);
    stop(&a);
    one_broker_close(&kc);
}

/* A gather stops at --kafka-batch-bytes, not only at --kafka-batch
 * messages: four messages of ~5 KiB already in the topic, a cap of 4 KiB,
 * four gathers (each message alone is past the cap; without the cap the
 * four come in one), every line stored. */
#define SIDB "b17e0000-0000-4000-8000-000000000000"
static void test_batch_bytes(void)
{
    static srv a;
    static char msg[8192];
    one_broker kc;
    int seq = 0;

    one_broker_open(&kc, "bb");
    for (int m = 0; m < 4; m++) {
        size_t len = 0;
        if (m == 0) {
            len = pack_session(msg, len, sizeof(msg), SIDB);
            seq++;
        }
        len = pack_kernels(msg, len, sizeof(msg), SIDB, seq, 40, -1);
        seq += 40;
        CHECK(len > 4096);
        produce(kc.prod, "bb.device", SIDB, msg);
    }
    rd_kafka_flush(kc.prod, 10000);
    batch_bytes = 4096;
    REQUIRE(start(&a, "g5") == 0);
    CHECK(wait_lines(seq, 60));
    CHECK_EQ_U64(a.met.lines_accepted, (uint64_t)seq);
    CHECK(a.met.batches >= 4);
    stop(&a);
    batch_bytes = 0;
    one_broker_close(&kc);
}

/* The group's committed offset of topic [0], -1 if none. */
static int64_t group_offset(const char *group, const char *topic)
{
    char err[512];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    rd_kafka_topic_partition_list_t *tl = rd_kafka_topic_partition_list_new(1);
    rd_kafka_t *rk;
    int64_t off = -1;

    rd_kafka_conf_set(c, "bootstrap.servers", bootstraps, err, sizeof(err));
    rd_kafka_conf_set(c, "group.id", group, err, sizeof(err));
    rd_kafka_conf_set(c, "log_level", "3", err, sizeof(err));
    rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof(err));
    if (!rk) {
        rd_kafka_topic_partition_list_destroy(tl);
        return -1;
    }
    rd_kafka_topic_partition_list_add(tl, topic, 0);
    if (!rd_kafka_committed(rk, tl, 10000) && !tl->elems[0].err)
        off = tl->elems[0].offset;
    rd_kafka_topic_partition_list_destroy(tl);
    rd_kafka_destroy(rk);
    return off;
}

/* The bridge reads the next gather while it stores one: the offsets it
 * commits are those of what it stored, never those read since.  300
 * messages of a line each; the store thread waits 1 s before each chunk
 * (GPUFL_SERVER_KAFKA_PAUSE_MS), so the next gather has been read when the
 * first is stored; the bridge is stopped in the pause after it.  The
 * group's committed offset is then exactly the lines stored (a commit of
 * the consumer's position would be past them, and a restart would skip
 * the gather read but not stored); a second server stores the rest, none
 * twice. */
#define SIDC "c0a70000-0000-4000-8000-000000000000"
static void test_commit_stored_only(void)
{
    static srv a, b;
    static char msg[512];
    one_broker kc;
    int64_t got, off;
    const int nmsg = 300;

    one_broker_open(&kc, "cm");
    for (int m = 0; m < nmsg; m++) {
        if (m == 0)
            pack_session(msg, 0, sizeof(msg), SIDC);
        else
            pack_kernels(msg, 0, sizeof(msg), SIDC, m, 1, -1);
        produce(kc.prod, "cm.device", SIDC, msg);
    }
    rd_kafka_flush(kc.prod, 10000);
    setenv("GPUFL_SERVER_KAFKA_PAUSE_MS", "1000", 1);
    REQUIRE(start(&a, "g6") == 0);
    for (int i = 0;
         i < 6000 && !__atomic_load_n(&a.met.lines_accepted, __ATOMIC_RELAXED);
         i++)
        usleep(5000);
    stop(&a);
    unsetenv("GPUFL_SERVER_KAFKA_PAUSE_MS");
    got = stored("SELECT coalesce(sum(n_lines), 0) FROM sessions");
    off = group_offset("g6", "cm.device");
    fprintf(stderr, "  stored %lld of %d lines, committed offset %lld\n",
            (long long)got, nmsg, (long long)off);
    CHECK(got > 0 && got < nmsg);
    CHECK_EQ_U64(a.met.lines_accepted, (uint64_t)got);
    CHECK_EQ_U64(off, (uint64_t)got); /* message i holds line i */
    REQUIRE(start(&b, "g6") == 0);
    CHECK(wait_lines(nmsg, 60));
    usleep(300000);
    CHECK_EQ_U64(b.met.lines_accepted, (uint64_t)(nmsg - got));
    CHECK_EQ_U64(b.met.lines_duplicate, 0);
    CHECK_EQ_U64(stored("SELECT count(*) FROM kernels"), nmsg - 1);
    stop(&b);
    one_broker_close(&kc);
}

int main(void)
{
    RUN(test_two_servers_exactly_once);
    RUN(test_retention_and_big_messages);
    RUN(test_past_the_end);
    RUN(test_packed_message);
    RUN(test_batch_bytes);
    RUN(test_commit_stored_only);
    TEST_DONE();
}
