/*
 * sink_kafka.c - the Kafka backend: a librdkafka producer with
 * enable.idempotence and acks=all, one topic per stream
 * (<prefix>.device|scope|system), key = session id (a session stays on one
 * partition, in order), value = the line's bytes as in the file without
 * its '\n' (never re-encoded).
 *
 * A batch is produced whole (librdkafka batches and compresses it on the
 * wire), then the sink waits for every delivery report: only when all are
 * in does the pipeline move the cursor.  A report with a retriable error,
 * or a broker that stays down past --timeout-ms (message.timeout.ms), makes
 * the whole batch a retry: the backlog stays in the log files, and what
 * was delivered meanwhile is re-sent with the same (sid, st, seq), which
 * downstream de-duplicates.  A line the cluster refuses for good (too
 * large, invalid) is rejected to the dead-letter file.
 */
#include "agent/sink.h"
#include "common/log.h"

#include <librdkafka/rdkafka.h>
#include <stdlib.h>
#include <string.h>

typedef struct kafka_sink {
    agent_sink base;
    rd_kafka_t *rk;
    rd_kafka_topic_t *topic[AGENT_NSTREAMS];
    uint64_t timeout_ms;
    /* the batch in flight (one at a time) */
    uint32_t outstanding;
    uint32_t failed;
    char fail_why[256];
    agent_reject_fn reject;
    void *reject_ctx;
    char err[512]; /* the last error callback, for messages */
    volatile int *stop;
} kafka_sink;

static int permanent(rd_kafka_resp_err_t e)
{
    return e == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ||
           e == RD_KAFKA_RESP_ERR_INVALID_MSG;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                        void *opaque)
{
    kafka_sink *k = opaque;
    uint32_t line = (uint32_t)(uintptr_t)m->_private - 1;
    (void)rk;

    if (k->outstanding)
        k->outstanding--;
    if (!m->err)
        return;
    if (permanent(m->err) && k->reject) {
        const char *why = rd_kafka_err2str(m->err);
        k->reject(k->reject_ctx, line, why, strlen(why));
        return;
    }
    if (!k->failed++)
        snprintf(k->fail_why, sizeof k->fail_why, "%s",
                 rd_kafka_err2str(m->err));
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    kafka_sink *k = opaque;
    (void)rk;
    (void)err;
    snprintf(k->err, sizeof k->err, "%s", reason);
}

static void on_log(const rd_kafka_t *rk, int level, const char *fac,
                   const char *buf)
{
    (void)rk;
    /* librdkafka is chatty while a broker is down; warnings and worse
     * (syslog levels: 3 and below errors, 4 warnings) */
    if (level <= 4)
        glog(level <= 3 ? GLOG_ERROR : GLOG_WARN, "kafka", "kafka %s: %s", fac,
             buf);
}

static agent_send_rc kafka_send(agent_sink *s, const agent_batch *b,
                                agent_reject_fn reject, void *ctx, char *why,
                                size_t why_cap)
{
    kafka_sink *k = (kafka_sink *)s;
    size_t keylen = strlen(b->sid);
    uint64_t waited = 0, limit = k->timeout_ms + 5000;
    char fatal[256];

    k->failed = 0;
    k->fail_why[0] = '\0';
    k->reject = reject;
    k->reject_ctx = ctx;
    for (uint32_t i = 0; i < b->n; i++) {
        size_t start = i ? b->end[i - 1] : 0;
        size_t len = b->end[i] - start - 1; /* without the '\n' */
        rd_kafka_resp_err_t e;
        for (;;) {
            /* F_COPY: a batch abandoned after a timeout may still be in
             * librdkafka's queues when its buffer is reused */
            e = rd_kafka_producev(
                k->rk, RD_KAFKA_V_RKT(k->topic[b->stream]),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                RD_KAFKA_V_KEY(keylen ? b->sid : NULL, keylen),
                RD_KAFKA_V_VALUE((void *)(uintptr_t)(b->buf + start), len),
                RD_KAFKA_V_OPAQUE((void *)(uintptr_t)(i + 1)), RD_KAFKA_V_END);
            if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                break;
            rd_kafka_poll(k->rk, 50);
        }
        if (e) {
            snprintf(why, why_cap, "produce: %s", rd_kafka_err2str(e));
            /* what was queued is still reported; wait for it below */
            k->failed++;
            break;
        }
        k->outstanding++;
    }
    while (k->outstanding && waited < limit && !(k->stop && *k->stop)) {
        rd_kafka_poll(k->rk, 100);
        waited += 100;
    }
    k->reject = NULL;
    if (rd_kafka_fatal_error(k->rk, fatal, sizeof fatal)) {
        snprintf(why, why_cap, "fatal producer error: %s", fatal);
        return AGENT_SEND_CONFIG;
    }
    if (k->outstanding) {
        snprintf(why, why_cap, "%u delivery reports missing after %llu ms%s%s",
                 k->outstanding, (unsigned long long)limit,
                 k->err[0] ? "; last error: " : "", k->err);
        k->outstanding = 0;
        return AGENT_SEND_RETRY;
    }
    if (k->failed) {
        if (!why[0])
            snprintf(why, why_cap, "%u lines not delivered: %s", k->failed,
                     k->fail_why);
        return AGENT_SEND_RETRY;
    }
    return AGENT_SEND_OK;
}

static void kafka_free(agent_sink *s)
{
    kafka_sink *k = (kafka_sink *)s;
    if (!k)
        return;
    if (k->rk) {
        rd_kafka_flush(k->rk, 2000);
        for (int i = 0; i < AGENT_NSTREAMS; i++)
            if (k->topic[i])
                rd_kafka_topic_destroy(k->topic[i]);
        rd_kafka_destroy(k->rk);
    }
    free(k);
}

static const agent_sink_ops kafka_ops = { "kafka", kafka_send, kafka_free };

static int conf_set(rd_kafka_conf_t *c, const char *k, const char *v, char *err,
                    size_t errcap)
{
    return rd_kafka_conf_set(c, k, v, err, errcap) == RD_KAFKA_CONF_OK ? 0 : -1;
}

agent_sink *agent_sink_kafka_new(const agent_cfg *cfg, volatile int *stop,
                                 char *err, size_t errcap)
{
    kafka_sink *k = calloc(1, sizeof *k);
    rd_kafka_conf_t *c;
    char num[32];
    const char *comp = !strcmp(cfg->compress, "none") ? "none" : cfg->compress;

    if (!k) {
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    k->base.ops = &kafka_ops;
    k->stop = stop;
    k->timeout_ms = cfg->timeout_ms;
    c = rd_kafka_conf_new();
    snprintf(num, sizeof num, "%llu", (unsigned long long)cfg->timeout_ms);
    if (conf_set(c, "bootstrap.servers", cfg->brokers, err, errcap) ||
        conf_set(c, "enable.idempotence", "true", err, errcap) ||
        conf_set(c, "acks", "all", err, errcap) ||
        conf_set(c, "compression.type", comp, err, errcap) ||
        conf_set(c, "linger.ms", "5", err, errcap) ||
        conf_set(c, "message.timeout.ms", num, err, errcap) ||
        conf_set(c, "queue.buffering.max.messages", "1000000", err, errcap) ||
        conf_set(c, "client.id", "gpufl-agent", err, errcap)) {
        rd_kafka_conf_destroy(c);
        free(k);
        return NULL;
    }
    rd_kafka_conf_set_opaque(c, k);
    rd_kafka_conf_set_dr_msg_cb(c, on_delivery);
    rd_kafka_conf_set_error_cb(c, on_error);
    rd_kafka_conf_set_log_cb(c, on_log);
    k->rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, errcap);
    if (!k->rk) {
        rd_kafka_conf_destroy(c);
        free(k);
        return NULL;
    }
    for (int i = 0; i < AGENT_NSTREAMS; i++) {
        char name[300];
        snprintf(name, sizeof name, "%s.%s", cfg->topic_prefix,
                 agent_stream_names[i]);
        k->topic[i] = rd_kafka_topic_new(k->rk, name, NULL);
        if (!k->topic[i]) {
            snprintf(err, errcap, "cannot create topic handle %s", name);
            kafka_free(&k->base);
            return NULL;
        }
    }
    return &k->base;
}
