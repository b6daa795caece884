/*
 * test_srv_kafka.c - the Kafka consumer bridge against librdkafka's mock
 * cluster: two servers in one consumer group, sharing one database, read
 * the agent's three topics; every event is stored exactly once, also when
 * one server stops halfway and the other takes its partitions over.
 */
#include "srv_int.h"
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
    s->cfg.kafka_batch = 100;
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
    s->store->ops->close(s->store);
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
            st->ops->close(st);
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
        stop(&b);
        rd_kafka_destroy(prod);
    }
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(p);
}

int main(void)
{
    RUN(test_two_servers_exactly_once);
    TEST_DONE();
}
