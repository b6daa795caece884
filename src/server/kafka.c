/*
 * kafka.c - the Kafka consumer bridge: reads the agent's topics
 * (<prefix>.device|scope|system, one event line per message, key = session
 * id) as a member of a consumer group and feeds the same ingest path as
 * HTTP.
 *
 * Offsets are committed only after the database commit of every message
 * polled before it, so a crash or a rebalance can only make messages come
 * again, never lose them; they come back as duplicates of stored
 * (sid, st, seq) keys and change nothing.  That is how several servers in
 * one group store each event exactly once.  A database that is down is
 * retried (the batch is held, nothing is committed) until it answers or
 * the server stops.
 */
#include "ingest.h"
#include "srv_int.h"

#include <gpufl/gpufl.h>

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long a batch may gather messages (ms). */
#define KAFKA_BATCH_MS 200

typedef struct srv_kafka {
    srv *s;
    rd_kafka_t *rk;
    pthread_t th;
    int stop;
    char topics[SRV_ST_N][300];
} srv_kafka;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int stream_of(srv_kafka *k, const rd_kafka_message_t *m)
{
    const char *t = rd_kafka_topic_name(m->rkt);
    for (int i = 0; i < SRV_ST_N; i++)
        if (strcmp(t, k->topics[i]) == 0)
            return i;
    return -1;
}

/* Validates and stores msgs[0, n); retries while the database is down.
 * Returns 0 once committed. */
static int store_batch(srv_kafka *k, rd_kafka_message_t **msgs, size_t n,
                       srv_ev *ev, size_t ev_cap, ingest_arena *a, jsonl_doc *d)
{
    srv *s = k->s;
    size_t nev = 0, nerr = 0;
    srv_ingest_res res = { 0, 0 };
    char why[INGEST_REASON_MAX];
    int rc;

    a->len = 0;
    for (size_t i = 0; i < n; i++) {
        const char *buf = msgs[i]->payload, *line;
        size_t len = msgs[i]->len, pos = 0, ln;
        int st = stream_of(k, msgs[i]);
        if (st < 0 || !buf)
            continue;
        /* one line per message from the agent; several are accepted */
        while (jsonl_line_next(buf, len, &pos, &line, &ln) ||
               jsonl_line_tail(buf, len, &pos, &line, &ln)) {
            if (ln == 0)
                continue;
            if (nev < ev_cap &&
                ingest_line_parse(d, st, line, ln, a, &ev[nev], why) == 0)
                ev[nev++].line = (uint32_t)(i + 1);
            else
                nerr++;
        }
    }
    while (nev) {
        rc = s->store->ops->ingest(s->store, ev, nev, &res);
        if (rc == 0)
            break;
        if (!s->cfg.quiet)
            fprintf(stderr,
                    "gpufl-server: kafka batch not stored (%s); "
                    "retrying\n",
                    gpufl_strerror(rc));
        for (int w = 0; w < 10 && !__atomic_load_n(&k->stop, __ATOMIC_RELAXED);
             w++)
            nanosleep(&(struct timespec){ 0, 100000000 }, NULL);
        if (__atomic_load_n(&k->stop, __ATOMIC_RELAXED))
            return -1;
    }
    __atomic_fetch_add(&s->met.lines_accepted, res.accepted, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->met.lines_duplicate, res.duplicate,
                       __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->met.lines_rejected, nerr, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->met.batches, 1, __ATOMIC_RELAXED);
    return 0;
}

static void *kafka_main(void *arg)
{
    srv_kafka *k = arg;
    size_t cap = k->s->cfg.kafka_batch, n = 0, bytes = 0;
    rd_kafka_message_t **msgs = calloc(cap, sizeof(*msgs));
    srv_ev *ev = malloc(cap * sizeof(*ev));
    jsonl_tok *tok = malloc(INGEST_MAX_TOKENS * sizeof(*tok));
    ingest_arena a = { NULL, 0, 0 };
    jsonl_doc d;

    if (!msgs || !ev || !tok)
        goto out;
    jsonl_doc_init(&d, tok, INGEST_MAX_TOKENS);
    while (!__atomic_load_n(&k->stop, __ATOMIC_RELAXED)) {
        uint64_t t0 = now_ms();
        n = bytes = 0;
        while (n < cap && now_ms() - t0 < KAFKA_BATCH_MS &&
               !__atomic_load_n(&k->stop, __ATOMIC_RELAXED)) {
            rd_kafka_message_t *m = rd_kafka_consumer_poll(k->rk, 50);
            if (!m)
                continue;
            if (m->err) {
                rd_kafka_message_destroy(m);
                continue;
            }
            msgs[n++] = m;
            bytes += m->len;
        }
        if (n == 0)
            continue;
        /* decoded strings never outgrow their text, plus NULs */
        if (a.cap < bytes + 64 * n) {
            free(a.buf);
            a.cap = 2 * (bytes + 64 * n);
            a.buf = malloc(a.cap);
            if (!a.buf)
                break;
        }
        if (store_batch(k, msgs, n, ev, cap, &a, &d) == 0)
            rd_kafka_commit(k->rk, NULL, 0); /* synchronous */
        for (size_t i = 0; i < n; i++)
            rd_kafka_message_destroy(msgs[i]);
        n = 0;
    }
out:
    for (size_t i = 0; i < n; i++)
        rd_kafka_message_destroy(msgs[i]);
    free(a.buf);
    free(tok);
    free(ev);
    free(msgs);
    return NULL;
}

static int conf_set(rd_kafka_conf_t *c, const char *k, const char *v, char *err,
                    size_t cap)
{
    char e[512];
    if (rd_kafka_conf_set(c, k, v, e, sizeof(e)) != RD_KAFKA_CONF_OK) {
        snprintf(err, cap, "kafka %s: %s", k, e);
        return -1;
    }
    return 0;
}

int srv_kafka_start(srv *s, char *err, size_t cap)
{
    srv_kafka *k;
    rd_kafka_conf_t *c;
    rd_kafka_topic_partition_list_t *tl;
    char e[512];
    rd_kafka_resp_err_t re;

    if (!s->cfg.kafka_brokers[0])
        return 0;
    k = calloc(1, sizeof(*k));
    if (!k)
        return GPUFL_ENOMEM;
    k->s = s;
    c = rd_kafka_conf_new();
    if (conf_set(c, "bootstrap.servers", s->cfg.kafka_brokers, err, cap) ||
        conf_set(c, "group.id", s->cfg.kafka_group, err, cap) ||
        conf_set(c, "enable.auto.commit", "false", err, cap) ||
        conf_set(c, "auto.offset.reset", "earliest", err, cap) ||
        conf_set(c, "session.timeout.ms", "6000", err, cap) ||
        conf_set(c, "heartbeat.interval.ms", "500", err, cap) ||
        conf_set(c, "log_level", s->cfg.quiet ? "3" : "4", err, cap)) {
        rd_kafka_conf_destroy(c);
        free(k);
        return GPUFL_EINVAL;
    }
    k->rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, e, sizeof(e));
    if (!k->rk) {
        snprintf(err, cap, "kafka: %s", e);
        rd_kafka_conf_destroy(c);
        free(k);
        return GPUFL_EUNAVAIL;
    }
    rd_kafka_poll_set_consumer(k->rk);
    tl = rd_kafka_topic_partition_list_new(SRV_ST_N);
    for (int i = 0; i < SRV_ST_N; i++) {
        snprintf(k->topics[i], sizeof(k->topics[i]), "%s.%s",
                 s->cfg.kafka_topic_prefix, ingest_stream_name(i));
        rd_kafka_topic_partition_list_add(tl, k->topics[i],
                                          RD_KAFKA_PARTITION_UA);
    }
    re = rd_kafka_subscribe(k->rk, tl);
    rd_kafka_topic_partition_list_destroy(tl);
    if (re) {
        snprintf(err, cap, "kafka subscribe: %s", rd_kafka_err2str(re));
        rd_kafka_destroy(k->rk);
        free(k);
        return GPUFL_EUNAVAIL;
    }
    if (pthread_create(&k->th, NULL, kafka_main, k) != 0) {
        rd_kafka_consumer_close(k->rk);
        rd_kafka_destroy(k->rk);
        free(k);
        return GPUFL_EIO;
    }
    s->kafka = k;
    return 0;
}

void srv_kafka_stop(srv *s)
{
    srv_kafka *k = s->kafka;

    if (!k)
        return;
    __atomic_store_n(&k->stop, 1, __ATOMIC_RELAXED);
    pthread_join(k->th, NULL);
    rd_kafka_consumer_close(k->rk);
    rd_kafka_destroy(k->rk);
    free(k);
    s->kafka = NULL;
}
