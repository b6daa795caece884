/*
 * kafka.c - the Kafka consumer bridge: reads the agent's topics
 * (<prefix>.device|scope|system, key = session id; a message holds one or
 * more event lines, '\n'-separated: the agent packs a batch's lines of one
 * session into messages of up to 64 KiB) as a member of a consumer group
 * and feeds the same ingest path as HTTP.
 *
 * Offsets are committed only after the database commit of every message
 * polled before it, so a crash or a rebalance can only make messages come
 * again, never lose them; they come back as duplicates of stored
 * (sid, st, seq) keys and change nothing.  That is how several servers in
 * one group store each event exactly once.  A database that is down is
 * retried (the batch is held, nothing is committed) until it answers or
 * the server stops.  Every line of every message is stored or counted as
 * rejected: a batch holding more lines than --kafka-batch is stored in
 * several transactions, all before the commit.
 *
 * What the broker deleted before it was read cannot be stored, but it is
 * never skipped silently.  When the group's offset falls out of the
 * broker's retention, librdkafka resets it to the oldest message kept
 * (auto.offset.reset=earliest) and says so only in a debug line; so the
 * bridge watches each partition's offsets itself: the agent's producer is
 * idempotent and not transactional, so a partition's offsets are
 * contiguous, and a message past the next expected one (or, the first time
 * a partition is seen, past the group's committed offset) means the
 * messages in between were deleted unread.  They are counted, logged with
 * their range, and their lines show in their sessions' gaps.  A partition
 * the group never read has no committed offset: what the broker deleted
 * before the group existed is not counted.
 */
#include "ingest.h"
#include "rollup.h"
#include "srv_int.h"

#include <gpufl/gpufl.h>

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common/log.h"

/* How long a batch may gather messages (ms). */
#define KAFKA_BATCH_MS 200
/* Consumer errors are logged at most this often (s), with a count. */
#define KAFKA_ERRLOG_S 10
/* How long a watermark query or a seek may take (ms). */
#define KAFKA_CALL_MS 5000

typedef struct srv_kafka {
    srv *s;
    rd_kafka_t *rk;
    pthread_t th;
    int stop;
    char topics[SRV_ST_N][300];
    glog_limit errlog; /* consumer errors: one line a KAFKA_ERRLOG_S */
    rl_map next;       /* (stream, partition) -> 1 + next offset expected */
} srv_kafka;

/* Partitions whose next offset is tracked at most (then forgotten, and
 * learnt again from the committed offsets). */
#define KAFKA_PARTS_MAX 65536

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

/* The lines of one poll's messages refused before the store: counted,
 * the first one named in the log with its topic, partition and offset. */
typedef struct kafka_rej {
    rd_kafka_message_t **msgs; /* ev[].line is the message's index + 1 */
    size_t n;
    char first[INGEST_REASON_MAX + 400];
} kafka_rej;

static void rej_add(void *ctx, uint32_t line, const char *why)
{
    kafka_rej *r = ctx;
    const rd_kafka_message_t *m = r->msgs[line - 1];

    if (!r->n++)
        snprintf(r->first, sizeof(r->first), "%s [%d] offset %lld: %s",
                 rd_kafka_topic_name(m->rkt), (int)m->partition,
                 (long long)m->offset, why);
}

/* Stores ev[0, *nev), retrying while the database is down; then the
 * batch's arena and events are free again.  0, or -1 when stopping.
 * Lines past their stream's session_end are refused first, as over
 * HTTP: a broker replaying an ended stream cannot grow it (no host scope
 * here: the broker's ACLs say who may produce). */
static int flush_ev(srv_kafka *k, srv_ev *ev, size_t *nev, ingest_arena *a,
                    kafka_rej *rj)
{
    srv *s = k->s;
    srv_ingest_res res = { 0, 0 };
    int rc;

    while (*nev) {
        rc = srv_ingest_scope(s, "", ev, nev, rej_add, rj);
        if (rc == 0 && *nev == 0)
            break;
        if (rc == 0)
            rc = srv_store_ingest(s->store, ev, *nev, &res);
        if (rc == 0)
            break;
        if (!s->cfg.quiet)
            glog_warn("kafka",
                      "kafka batch not stored (%s); "
                      "retrying",
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
    *nev = 0;
    a->len = 0;
    return 0;
}

/* Validates and stores every line of msgs[0, n): ev_cap lines per store
 * call, so a message of more lines than that is stored whole, in pieces.
 * Returns 0 once all is committed (the offsets after them may be). */
static int store_batch(srv_kafka *k, rd_kafka_message_t **msgs, size_t n,
                       srv_ev *ev, size_t ev_cap, ingest_arena *a, jsonl_doc *d)
{
    srv *s = k->s;
    size_t nev = 0, nerr = 0;
    char why[INGEST_REASON_MAX], first[INGEST_REASON_MAX + 400] = "";
    kafka_rej rj = { .msgs = msgs, .n = 0, .first = "" };

    a->len = 0;
    for (size_t i = 0; i < n; i++) {
        const char *buf = msgs[i]->payload, *line;
        size_t len = msgs[i]->len, pos = 0, ln, no = 0;
        int st = stream_of(k, msgs[i]);
        if (st < 0 || !buf)
            continue;
        /* the agent packs several lines a message: each is validated on
         * its own, so a bad one costs only itself */
        while (jsonl_line_next(buf, len, &pos, &line, &ln) ||
               jsonl_line_tail(buf, len, &pos, &line, &ln)) {
            no++;
            if (ln == 0)
                continue;
            if (nev == ev_cap && flush_ev(k, ev, &nev, a, &rj))
                return -1;
            if (ingest_line_parse(d, st, line, ln, a, &ev[nev], why) == 0) {
                ev[nev++].line = (uint32_t)(i + 1);
                continue;
            }
            if (!nerr++)
                snprintf(first, sizeof(first),
                         "%s [%d] offset %lld line %zu: %s", k->topics[st],
                         (int)msgs[i]->partition, (long long)msgs[i]->offset,
                         no, why);
        }
    }
    if (nev && flush_ev(k, ev, &nev, a, &rj))
        return -1;
    /* no client hears of these: the log is where they are reported */
    if (nerr)
        glog_warn("kafka",
                  "kafka: %zu line(s) rejected, not stored (the"
                  " first: %s)",
                  nerr, first);
    if (rj.n)
        glog_warn("kafka",
                  "kafka: %zu line(s) refused, not stored (the first: %s)",
                  rj.n, rj.first);
    nerr += rj.n;
    __atomic_fetch_add(&s->met.lines_rejected, nerr, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->met.batches, 1, __ATOMIC_RELAXED);
    return 0;
}

/* The group's committed offset of topic [part], -1 if none or unknown. */
static int64_t committed(srv_kafka *k, const char *topic, int32_t part)
{
    rd_kafka_topic_partition_list_t *tl = rd_kafka_topic_partition_list_new(1);
    int64_t off = -1;

    rd_kafka_topic_partition_list_add(tl, topic, part);
    if (!rd_kafka_committed(k->rk, tl, KAFKA_CALL_MS) && !tl->elems[0].err &&
        tl->elems[0].offset >= 0)
        off = tl->elems[0].offset;
    rd_kafka_topic_partition_list_destroy(tl);
    return off;
}

/* Message m of stream st arrived: were messages before it skipped (deleted
 * by the broker before this group read them)?  Counted and logged. */
static void offset_check(srv_kafka *k, int st, const rd_kafka_message_t *m)
{
    uint64_t key[4] = { (uint64_t)st, (uint64_t)(uint32_t)m->partition, 0, 0 };
    int64_t *v, from, c;
    int fresh;

    if (k->next.n >= KAFKA_PARTS_MAX)
        rl_map_clear(&k->next);
    if (!(v = rl_map_get(&k->next, key, &fresh)))
        return;
    from = *v - 1; /* -1: first message of this partition seen here */
    *v = m->offset + 1 + 1;
    if (from >= 0 && m->offset <= from)
        return; /* in order, or read again after a rebalance */
    /* a jump, or the first message: what did the group commit?  (other
     * servers may have read the messages in between, after a rebalance) */
    c = committed(k, k->topics[st], m->partition);
    if (c > from)
        from = c;
    if (from < 0 || m->offset <= from)
        return;
    __atomic_fetch_add(&k->s->met.kafka_resets, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&k->s->met.kafka_skipped, (uint64_t)(m->offset - from),
                       __ATOMIC_RELAXED);
    glog_error("kafka",
               "kafka: %s [%d]: messages %lld to %lld were"
               " deleted by the broker (retention) before they were read:"
               " %lld message(s) lost, reading on from %lld (their lines show"
               " in their sessions' gaps)",
               k->topics[st], (int)m->partition, (long long)from,
               (long long)m->offset - 1, (long long)(m->offset - from),
               (long long)m->offset);
}

/* A message that is an error: an offset out of range, or one of the
 * consumer's errors (counted; logged at most every KAFKA_ERRLOG_S). */
static void on_error(srv_kafka *k, const rd_kafka_message_t *m)
{
    uint64_t more = 0;

    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
        return; /* not an error: the end of what is there */
    __atomic_fetch_add(&k->s->met.kafka_errors, 1, __ATOMIC_RELAXED);
    if (!glog_limit_pass(&k->errlog, KAFKA_ERRLOG_S * 1000u, 0, &more))
        return;
    if (m->rkt)
        glog_warn("kafka",
                  "kafka: %s [%d]: %s (%llu more errors since the last one"
                  " logged)",
                  rd_kafka_topic_name(m->rkt), (int)m->partition,
                  rd_kafka_message_errstr(m), (unsigned long long)more);
    else
        glog_warn("kafka",
                  "kafka: %s (%llu more errors since the last one logged)",
                  rd_kafka_message_errstr(m), (unsigned long long)more);
}

static void *kafka_main(void *arg)
{
    srv_kafka *k = arg;
    size_t cap = k->s->cfg.kafka_batch, n = 0, bytes = 0;
    /* what one gather may hold: the messages and an arena twice their
     * size (below), whatever --kafka-batch messages of up to the broker's
     * message size would come to */
    size_t bcap = k->s->cfg.kafka_batch_bytes;
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
        while (n < cap && bytes < bcap && now_ms() - t0 < KAFKA_BATCH_MS &&
               !__atomic_load_n(&k->stop, __ATOMIC_RELAXED)) {
            rd_kafka_message_t *m = rd_kafka_consumer_poll(k->rk, 50);
            if (!m)
                continue;
            if (m->err) {
                on_error(k, m);
                rd_kafka_message_destroy(m);
                continue;
            }
            if (stream_of(k, m) >= 0)
                offset_check(k, stream_of(k, m), m);
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
    rl_map_init(&k->next, sizeof(int64_t), KAFKA_PARTS_MAX);
    c = rd_kafka_conf_new();
    if (conf_set(c, "bootstrap.servers", s->cfg.kafka_brokers, err, cap) ||
        conf_set(c, "group.id", s->cfg.kafka_group, err, cap) ||
        conf_set(c, "enable.auto.commit", "false", err, cap) ||
        conf_set(c, "auto.offset.reset", "earliest", err, cap) ||
        conf_set(c, "session.timeout.ms", "6000", err, cap) ||
        conf_set(c, "heartbeat.interval.ms", "500", err, cap) ||
        conf_set(c, "log_level", s->cfg.quiet ? "3" : "4", err, cap)) {
        rd_kafka_conf_destroy(c);
        rl_map_release(&k->next);
        free(k);
        return GPUFL_EINVAL;
    }
    k->rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, e, sizeof(e));
    if (!k->rk) {
        snprintf(err, cap, "kafka: %s", e);
        rd_kafka_conf_destroy(c);
        rl_map_release(&k->next);
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
        rl_map_release(&k->next);
        free(k);
        return GPUFL_EUNAVAIL;
    }
    if (pthread_create(&k->th, NULL, kafka_main, k) != 0) {
        rd_kafka_consumer_close(k->rk);
        rd_kafka_destroy(k->rk);
        rl_map_release(&k->next);
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
    rl_map_release(&k->next);
    free(k);
    s->kafka = NULL;
}
