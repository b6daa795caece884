/*
 * sink_kafka.c - the Kafka backend: a librdkafka producer with
 * enable.idempotence and acks=all, one topic per stream
 * (<prefix>.device|scope|system), key = session id (a session stays on one
 * partition, in order), value = one or more of the batch's consecutive
 * lines, joined by '\n' (the bytes as in the file, never re-encoded, without
 * the last line's '\n'): up to KAFKA_PACK bytes a message, a longer line
 * alone.  Consumers split the value on '\n' (the server's bridge does).
 *
 * Why several lines a message: one message a line cost the agent a
 * librdkafka message, an allocation, a copy and a delivery report per
 * event, 7.9 CPU-s per 1M events against 0.76 over HTTP (docs/fleet.md).
 * A batch is one file's lines of one stream and one session, so packing
 * keeps the key, the partition and the order.
 *
 * A batch is produced whole (librdkafka batches and compresses it on the
 * wire), then the sink waits for every delivery report: only when all are
 * in does the pipeline move the cursor.  A report with a retriable error,
 * or a broker that stays down past --timeout-ms (message.timeout.ms), makes
 * the whole batch a retry: the backlog stays in the log files, and what
 * was delivered meanwhile is re-sent with the same (sid, st, seq), which
 * downstream de-duplicates.  A message the cluster refuses for good (too
 * large, invalid) is mapped back to its lines through the batch's message
 * table: a single line is rejected to the dead-letter file; a packed
 * message's lines are produced again one a message (a broker whose topic
 * allows less than KAFKA_PACK bytes must not cost every line packed with
 * one that is too big), and only those refused alone are dead-lettered.
 */
#include "agent/sink.h"
#include "common/log.h"

#include <librdkafka/rdkafka.h>
#include <stdlib.h>
#include <string.h>

/* Most bytes of lines in one message (lowered to fit message.max.bytes).
 * 64 KiB: hundreds of lines, so the per-message costs vanish, and far
 * below any broker's default message size limit (1 MB). */
#define KAFKA_PACK (64u << 10)
/* Room for the record's framing and key (a session id) beside the value,
 * under message.max.bytes. */
#define KAFKA_FRAMING 1024u

/* A message of the batch in flight: its lines [first, first + n). */
typedef struct kafka_msg {
    uint32_t first, n;
    int resend; /* refused for good while packed: its lines go again alone */
} kafka_msg;

typedef struct kafka_sink {
    agent_sink base;
    rd_kafka_t *rk;
    rd_kafka_topic_t *topic[AGENT_NSTREAMS];
    uint64_t timeout_ms;
    size_t pack; /* most value bytes of a packed message */
    /* the batch in flight (one at a time): its messages, and which send
     * they belong to (a report of an abandoned batch is not this one's) */
    kafka_msg *msg;
    uint32_t nmsg, msg_cap;
    uint32_t gen;
    uint32_t outstanding;
    uint32_t failed;
    uint32_t resend;
    char fail_why[256];
    agent_reject_fn reject;
    void *reject_ctx;
    char err[512]; /* the last error callback, for messages */
    volatile int *stop;
} kafka_sink;

/* A message's opaque: the send's generation and its index in the table
 * (+ 1), in one pointer-sized integer. */
_Static_assert(sizeof(uintptr_t) >= 8, "opaque holds generation and index");
#define KAFKA_OPAQUE(gen, i) ((void *)(((uintptr_t)(gen) << 32) | ((i) + 1u)))

static int permanent(rd_kafka_resp_err_t e)
{
    return e == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE ||
           e == RD_KAFKA_RESP_ERR_INVALID_MSG;
}

/* Message i is refused for good: its line is dead-lettered, or, packed,
 * its lines are marked to go again one a message. */
static void refused(kafka_sink *k, uint32_t i, rd_kafka_resp_err_t e)
{
    kafka_msg *m = &k->msg[i];
    const char *why = rd_kafka_err2str(e);

    if (m->n > 1) {
        m->resend = 1;
        k->resend++;
    } else if (k->reject) {
        k->reject(k->reject_ctx, m->first, why, strlen(why));
    }
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                        void *opaque)
{
    kafka_sink *k = opaque;
    uintptr_t v = (uintptr_t)m->_private;
    uint32_t i = (uint32_t)(v & 0xffffffffu) - 1;
    (void)rk;

    /* a report of a batch already answered (a retry) */
    if ((uint32_t)(v >> 32) != k->gen || i >= k->nmsg)
        return;
    if (k->outstanding)
        k->outstanding--;
    if (!m->err)
        return;
    if (permanent(m->err)) {
        refused(k, i, m->err);
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

/* Room in the message table for n more messages: grown, never shrunk, so
 * a send allocates nothing once the table fits its batches.  Reports run
 * only inside rd_kafka_poll on this thread, so the table may move. */
static int msg_room(kafka_sink *k, uint32_t n)
{
    kafka_msg *t;
    uint32_t cap = k->msg_cap ? k->msg_cap : 64;

    if (k->nmsg + n <= k->msg_cap)
        return 0;
    while (cap < k->nmsg + n)
        cap *= 2;
    t = realloc(k->msg, (size_t)cap * sizeof *t);
    if (!t)
        return -1;
    k->msg = t;
    k->msg_cap = cap;
    return 0;
}

/* Produces message i of the table.  0 when it is queued or refused for
 * good (handled then and there), -1 with why set when it could not be
 * queued (the batch is then a retry). */
static int produce_msg(kafka_sink *k, const agent_batch *b, uint32_t i,
                       char *why, size_t why_cap)
{
    const kafka_msg *m = &k->msg[i];
    size_t keylen = strlen(b->sid);
    size_t start = m->first ? b->end[m->first - 1] : 0;
    /* the lines are back to back in buf: joined by their own '\n',
     * without the last one's */
    size_t len = b->end[m->first + m->n - 1] - start - 1;
    rd_kafka_resp_err_t e;

    for (;;) {
        /* F_COPY: a batch abandoned after a timeout may still be in
         * librdkafka's queues when its buffer is reused; one copy a
         * message of up to KAFKA_PACK bytes, no longer one a line */
        e = rd_kafka_producev(
            k->rk, RD_KAFKA_V_RKT(k->topic[b->stream]),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_KEY(keylen ? b->sid : NULL, keylen),
            RD_KAFKA_V_VALUE((void *)(uintptr_t)(b->buf + start), len),
            RD_KAFKA_V_OPAQUE(KAFKA_OPAQUE(k->gen, i)), RD_KAFKA_V_END);
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
            break;
        rd_kafka_poll(k->rk, 50);
    }
    if (!e) {
        k->outstanding++;
        return 0;
    }
    /* a line over message.max.bytes is refused here, never sent: waiting
     * cannot help it, so it is dead-lettered (before, it made the batch a
     * retry for ever) */
    if (permanent(e)) {
        refused(k, i, e);
        return 0;
    }
    snprintf(why, why_cap, "produce: %s", rd_kafka_err2str(e));
    /* what was queued is still reported; the caller waits for it */
    k->failed++;
    return -1;
}

/* Polls until every report of this send is in, the limit passes or the
 * process stops. */
static void wait_reports(kafka_sink *k, uint64_t limit)
{
    uint64_t waited = 0;

    while (k->outstanding && waited < limit && !(k->stop && *k->stop)) {
        rd_kafka_poll(k->rk, 100);
        waited += 100;
    }
}

/* The lines of the packed messages refused for good, produced again one a
 * message (table entries appended); their reports are waited for. */
static void resend_alone(kafka_sink *k, const agent_batch *b, uint64_t limit,
                         char *why, size_t why_cap)
{
    uint32_t packed = k->nmsg, lines = 0;

    for (uint32_t i = 0; i < packed; i++)
        if (k->msg[i].resend)
            lines += k->msg[i].n;
    k->resend = 0;
    if (msg_room(k, lines)) {
        snprintf(why, why_cap, "out of memory");
        k->failed++;
        return;
    }
    for (uint32_t i = 0; i < packed && !k->failed; i++) {
        if (!k->msg[i].resend)
            continue;
        for (uint32_t l = 0; l < k->msg[i].n && !k->failed; l++) {
            k->msg[k->nmsg] = (kafka_msg){ k->msg[i].first + l, 1, 0 };
            (void)produce_msg(k, b, k->nmsg++, why, why_cap);
        }
    }
    wait_reports(k, limit);
}

static agent_send_rc kafka_send(agent_sink *s, const agent_batch *b,
                                agent_reject_fn reject, void *ctx, char *why,
                                size_t why_cap)
{
    kafka_sink *k = (kafka_sink *)s;
    uint64_t limit = k->timeout_ms + 5000;
    char fatal[256];

    k->gen++;
    k->nmsg = 0;
    k->outstanding = 0;
    k->failed = 0;
    k->resend = 0;
    k->fail_why[0] = '\0';
    k->reject = reject;
    k->reject_ctx = ctx;
    if (msg_room(k, b->n)) {
        snprintf(why, why_cap, "out of memory");
        return AGENT_SEND_RETRY;
    }
    /* consecutive lines up to k->pack bytes a message, a longer line
     * alone: the batch is one stream of one session, so one key */
    for (uint32_t i = 0, j; i < b->n; i = j) {
        size_t start = i ? b->end[i - 1] : 0;
        for (j = i + 1; j < b->n && b->end[j] - start - 1 <= k->pack; j++)
            ;
        k->msg[k->nmsg] = (kafka_msg){ i, j - i, 0 };
        if (produce_msg(k, b, k->nmsg++, why, why_cap))
            break;
    }
    wait_reports(k, limit);
    if (!k->outstanding && !k->failed && k->resend)
        resend_alone(k, b, limit, why, why_cap);
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
            snprintf(why, why_cap, "%u messages not delivered: %s", k->failed,
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
    free(k->msg);
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
        /* zstd level 1, not 3: librdkafka starts a fresh zstd context for
         * each record batch, and level 3 cost a fifth more of the agent's
         * CPU for 2 % fewer bytes (1 MB of kernel lines: 17.3 kB at 1,
         * 16.9 kB at 3) */
        (!strcmp(comp, "zstd") &&
         conf_set(c, "compression.level", "1", err, errcap)) ||
        conf_set(c, "message.timeout.ms", num, err, errcap) ||
        conf_set(c, "queue.buffering.max.messages", "1000000", err, errcap) ||
        conf_set(c, "client.id", "gpufl-agent", err, errcap)) {
        rd_kafka_conf_destroy(c);
        free(k);
        return NULL;
    }
    /* a packed message stays under the producer's own limit (the value,
     * key and framing must fit message.max.bytes) */
    {
        char v[32];
        size_t vn = sizeof v;
        unsigned long max = 0;
        k->pack = KAFKA_PACK;
        if (rd_kafka_conf_get(c, "message.max.bytes", v, &vn) ==
                RD_KAFKA_CONF_OK &&
            (max = strtoul(v, NULL, 10)) < k->pack + KAFKA_FRAMING)
            k->pack = max > KAFKA_FRAMING ? max - KAFKA_FRAMING : 1;
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
