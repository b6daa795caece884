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
 * Two threads: one polls a gather of messages and parses it into chunks
 * of --kafka-batch lines while the other stores the gather before, a
 * chunk a transaction, then commits that gather's own offsets (an
 * explicit list: the consumer's position is already past the next
 * gather).  At most two gathers and two chunks are held.
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
/* A gather ends early when the consumer's queue has been empty
 * KAFKA_DRAIN_MS, the store thread is idle and the gather is at least
 * KAFKA_DRAIN_MIN_MS old: a burst's last messages are stored after that,
 * not after KAFKA_BATCH_MS.  While the store thread is busy a gather goes
 * on to its caps, so the batches grow with the load; the minimum age keeps
 * a trickle of messages from becoming a transaction each (at most ~20 a
 * second a server, where every transaction costs the database its fixed
 * statements, docs/fleet.md). */
#define KAFKA_DRAIN_MS 5
#define KAFKA_DRAIN_MIN_MS 50
/* fetch.wait.max.ms: how long the broker may hold a fetch that finds no
 * new data.  librdkafka's mock broker holds it that long even when data
 * comes meanwhile (a real broker answers on arrival), which left a
 * caught-up bridge idle ~0.5 s a time; 100 ms costs an idle consumer 10
 * empty fetches a second a broker. */
#define KAFKA_FETCH_WAIT_MS "100"
/* Consumer errors are logged at most this often (s), with a count. */
#define KAFKA_ERRLOG_S 10
/* How long a watermark query or a seek may take (ms). */
#define KAFKA_CALL_MS 5000

/* The lines of one poll's messages refused before the store: counted,
 * the first one named in the log with its topic, partition and offset. */
typedef struct kafka_rej {
    rd_kafka_message_t **msgs; /* ev[].line is the message's index + 1 */
    size_t n;
    char first[INGEST_REASON_MAX + 400];
} kafka_rej;

/* One gather: the messages of a poll, their arena (the lines' decoded
 * strings; the events point into it and into the payloads) and what was
 * refused of them.  Two are in flight: one parsed while the other is
 * stored. */
typedef struct kafka_gather {
    rd_kafka_message_t **msgs;
    size_t n;
    ingest_arena a;
    kafka_rej rj; /* refused at the store (srv_ingest_scope) */
    size_t nerr;  /* rejected by the parse */
    char first[INGEST_REASON_MAX + 400];
} kafka_gather;

/* Up to --kafka-batch parsed lines of one gather: one store transaction. */
typedef struct kafka_chunk {
    srv_ev *ev;
    size_t nev;
    kafka_gather *g;
    int last; /* the gather's last: its offsets are committed after it */
} kafka_chunk;

/* Gathers and chunks in flight: one filled by the poll thread while the
 * store thread stores the other. */
#define KAFKA_INFLIGHT 2

typedef struct srv_kafka {
    srv *s;
    rd_kafka_t *rk;
    pthread_t th, sth; /* the poll and parse thread; the store thread */
    int stop;
    char topics[SRV_ST_N][300];
    glog_limit errlog; /* consumer errors: one line a KAFKA_ERRLOG_S */
    rl_map next;       /* (stream, partition) -> 1 + next offset expected */
    /* the pipeline between the two threads, under mu: chunk i and gather
     * i live in slot i % KAFKA_INFLIGHT; c_sub counts the chunks handed to
     * the store thread, c_done and g_done the chunks and gathers it
     * finished (the gathers read are the poll thread's own count) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    kafka_gather gat[KAFKA_INFLIGHT];
    kafka_chunk chk[KAFKA_INFLIGHT];
    uint64_t g_done, c_sub, c_done;
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

static void rej_add(void *ctx, uint32_t line, const char *why)
{
    kafka_rej *r = ctx;
    const rd_kafka_message_t *m = r->msgs[line - 1];

    if (!r->n++)
        snprintf(r->first, sizeof(r->first), "%s [%d] offset %lld: %s",
                 rd_kafka_topic_name(m->rkt), (int)m->partition,
                 (long long)m->offset, why);
}

/* Stores ev[0, nev), retrying while the database is down.  0, or -1 when
 * stopping.  Lines past their stream's session_end are refused first, as
 * over HTTP: a broker replaying an ended stream cannot grow it (no host
 * scope here: the broker's ACLs say who may produce). */
static int flush_ev(srv_kafka *k, srv_ev *ev, size_t nev, kafka_rej *rj)
{
    srv *s = k->s;
    srv_ingest_res res = { 0, 0 };
    int rc;

    while (nev) {
        rc = srv_ingest_scope(s, "", ev, &nev, rej_add, rj);
        if (rc == 0 && nev == 0)
            break;
        if (rc == 0)
            rc = srv_store_ingest(s->store, ev, nev, &res);
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
    return 0;
}

/* ---- the pipeline: the poll thread parses, the store thread stores ---- */

/* The slot for chunk or gather number i once the store thread is done
 * with number i - KAFKA_INFLIGHT; NULL when stopping. */
static void *slot_wait(srv_kafka *k, const uint64_t *done, uint64_t i,
                       void *base, size_t size)
{
    pthread_mutex_lock(&k->mu);
    while (i - *done >= KAFKA_INFLIGHT &&
           !__atomic_load_n(&k->stop, __ATOMIC_RELAXED))
        pthread_cond_wait(&k->cv, &k->mu);
    pthread_mutex_unlock(&k->mu);
    if (__atomic_load_n(&k->stop, __ATOMIC_RELAXED))
        return NULL;
    return (char *)base + (i % KAFKA_INFLIGHT) * size;
}

static void bump(srv_kafka *k, uint64_t *n)
{
    pthread_mutex_lock(&k->mu);
    __atomic_fetch_add(n, 1, __ATOMIC_RELEASE); /* read unlocked too */
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
}

/* Both threads stop at their next wait or check. */
static void kafka_halt(srv_kafka *k)
{
    pthread_mutex_lock(&k->mu);
    __atomic_store_n(&k->stop, 1, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
}

/* Hands the chunk being filled to the store thread and takes the next
 * slot (NULL when stopping). */
static kafka_chunk *chunk_pass(srv_kafka *k, kafka_chunk *c, int last)
{
    c->last = last;
    bump(k, &k->c_sub);
    if (last)
        return NULL;
    if (!(c = slot_wait(k, &k->c_done, k->c_sub, k->chk, sizeof(*c))))
        return NULL;
    c->nev = 0;
    return c;
}

/* Parses every line of gather g into chunks of at most cap lines, each
 * handed to the store thread when full, the last one (maybe empty) marked
 * so.  0, or -1 when stopping. */
static int parse_gather(srv_kafka *k, kafka_gather *g, size_t cap, jsonl_doc *d)
{
    char why[INGEST_REASON_MAX];
    kafka_chunk *c = slot_wait(k, &k->c_done, k->c_sub, k->chk, sizeof(*c));

    if (!c)
        return -1;
    c->nev = 0;
    for (size_t i = 0; i < g->n; i++) {
        const char *buf = g->msgs[i]->payload, *line;
        size_t len = g->msgs[i]->len, pos = 0, ln, no = 0;
        int st = stream_of(k, g->msgs[i]);
        if (st < 0 || !buf)
            continue;
        /* the agent packs several lines a message: each is validated on
         * its own, so a bad one costs only itself */
        while (jsonl_line_next(buf, len, &pos, &line, &ln) ||
               jsonl_line_tail(buf, len, &pos, &line, &ln)) {
            no++;
            if (ln == 0)
                continue;
            if (c->nev == cap) {
                c->g = g;
                if (!(c = chunk_pass(k, c, 0)))
                    return -1;
            }
            if (ingest_line_parse(d, st, line, ln, &g->a, &c->ev[c->nev],
                                  why) == 0) {
                c->ev[c->nev++].line = (uint32_t)(i + 1);
                continue;
            }
            if (!g->nerr++)
                snprintf(g->first, sizeof(g->first),
                         "%s [%d] offset %lld line %zu: %s", k->topics[st],
                         (int)g->msgs[i]->partition,
                         (long long)g->msgs[i]->offset, no, why);
        }
    }
    c->g = g;
    chunk_pass(k, c, 1);
    return 0;
}

/* Commits the offsets after gather g's messages: only its own, so a
 * gather the poll thread read since stays uncommitted until stored.
 * Synchronous. */
static void commit_gather(srv_kafka *k, const kafka_gather *g)
{
    rd_kafka_topic_partition_list_t *tl = rd_kafka_topic_partition_list_new(8);
    rd_kafka_resp_err_t e;

    for (size_t i = 0; i < g->n; i++) {
        const rd_kafka_message_t *m = g->msgs[i];
        const char *t = rd_kafka_topic_name(m->rkt);
        rd_kafka_topic_partition_t *p =
            rd_kafka_topic_partition_list_find(tl, t, m->partition);
        if (!p)
            p = rd_kafka_topic_partition_list_add(tl, t, m->partition);
        if (m->offset + 1 > p->offset)
            p->offset = m->offset + 1;
    }
    /* a failed commit (a rebalance took the partition) only makes the
     * messages come again, as duplicates */
    if ((e = rd_kafka_commit(k->rk, tl, 0)) != 0 && !k->s->cfg.quiet)
        glog_warn("kafka",
                  "kafka: offset commit: %s (the messages may be "
                  "read again, as duplicates)",
                  rd_kafka_err2str(e));
    rd_kafka_topic_partition_list_destroy(tl);
}

/* The gather's end on the store thread: its refusals reported, its
 * offsets committed, its messages freed. */
static void gather_end(srv_kafka *k, kafka_gather *g)
{
    srv *s = k->s;

    /* no client hears of these: the log is where they are reported */
    if (g->nerr)
        glog_warn("kafka",
                  "kafka: %zu line(s) rejected, not stored (the"
                  " first: %s)",
                  g->nerr, g->first);
    if (g->rj.n)
        glog_warn("kafka",
                  "kafka: %zu line(s) refused, not stored (the first: %s)",
                  g->rj.n, g->rj.first);
    __atomic_fetch_add(&s->met.lines_rejected, g->nerr + g->rj.n,
                       __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->met.batches, 1, __ATOMIC_RELAXED);
    commit_gather(k, g);
    for (size_t i = 0; i < g->n; i++)
        rd_kafka_message_destroy(g->msgs[i]);
    g->n = 0;
}

/* GPUFL_SERVER_KAFKA_PAUSE_MS (tests only): a pause before each chunk is
 * stored, cut short by a stop, so that a test stops the bridge while one
 * gather is stored and the next read.  -1 when stopping. */
static int test_pause(srv_kafka *k, long ms)
{
    for (long t = 0; t < ms; t += 10) {
        if (__atomic_load_n(&k->stop, __ATOMIC_RELAXED))
            return -1;
        nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
    }
    return 0;
}

/* The store thread: each chunk in order, one transaction (or several, when
 * retried); a gather's offsets after its last chunk. */
static void *store_main(void *arg)
{
    srv_kafka *k = arg;
    const char *pv = getenv("GPUFL_SERVER_KAFKA_PAUSE_MS");
    long pause_ms = pv ? strtol(pv, NULL, 10) : 0;

    for (;;) {
        kafka_chunk *c;
        pthread_mutex_lock(&k->mu);
        while (k->c_sub == k->c_done &&
               !__atomic_load_n(&k->stop, __ATOMIC_RELAXED))
            pthread_cond_wait(&k->cv, &k->mu);
        pthread_mutex_unlock(&k->mu);
        if (__atomic_load_n(&k->stop, __ATOMIC_RELAXED))
            break;
        c = &k->chk[k->c_done % KAFKA_INFLIGHT];
        if (pause_ms > 0 && test_pause(k, pause_ms))
            break;
        if (flush_ev(k, c->ev, c->nev, &c->g->rj))
            break;
        if (c->last) {
            gather_end(k, c->g);
            bump(k, &k->g_done);
        }
        bump(k, &k->c_done);
    }
    return NULL;
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

/* The poll thread: gathers a poll's messages (--kafka-batch of them,
 * half of --kafka-batch-bytes: two gathers are held at once, so the
 * bytes held stay under the option) and parses them while the store
 * thread stores the gather before. */
static void *kafka_main(void *arg)
{
    srv_kafka *k = arg;
    size_t cap = k->s->cfg.kafka_batch;
    size_t bcap = k->s->cfg.kafka_batch_bytes / KAFKA_INFLIGHT;
    jsonl_tok *tok = malloc(INGEST_MAX_TOKENS * sizeof(*tok));
    jsonl_doc d;
    uint64_t ng = 0; /* gathers read */

    if (!tok)
        return NULL;
    jsonl_doc_init(&d, tok, INGEST_MAX_TOKENS);
    while (!__atomic_load_n(&k->stop, __ATOMIC_RELAXED)) {
        kafka_gather *g = slot_wait(k, &k->g_done, ng, k->gat, sizeof(*g));
        uint64_t t0 = now_ms();
        size_t bytes = 0;
        if (!g)
            break;
        while (g->n < cap && bytes < bcap && now_ms() - t0 < KAFKA_BATCH_MS &&
               !__atomic_load_n(&k->stop, __ATOMIC_RELAXED)) {
            rd_kafka_message_t *m =
                rd_kafka_consumer_poll(k->rk, g->n ? KAFKA_DRAIN_MS : 50);
            if (!m) {
                if (g->n && now_ms() - t0 >= KAFKA_DRAIN_MIN_MS &&
                    __atomic_load_n(&k->c_done, __ATOMIC_ACQUIRE) == k->c_sub)
                    break; /* drained, and the store thread idle */
                continue;
            }
            if (m->err) {
                on_error(k, m);
                rd_kafka_message_destroy(m);
                continue;
            }
            if (stream_of(k, m) >= 0)
                offset_check(k, stream_of(k, m), m);
            g->msgs[g->n++] = m;
            bytes += m->len;
        }
        if (g->n == 0)
            continue;
        /* decoded strings never outgrow their text, plus NULs */
        if (g->a.cap < bytes + 64 * g->n) {
            free(g->a.buf);
            g->a.cap = 2 * (bytes + 64 * g->n);
            g->a.buf = malloc(g->a.cap);
            if (!g->a.buf) {
                g->a.cap = 0;
                glog_error("kafka",
                           "kafka: out of memory for a batch of "
                           "%zu bytes; the bridge stops (nothing of it was "
                           "committed)",
                           bytes);
                break;
            }
        }
        g->a.len = 0;
        g->nerr = 0;
        g->rj = (kafka_rej){ .msgs = g->msgs, .n = 0, .first = "" };
        ng++;
        if (parse_gather(k, g, cap, &d))
            break;
    }
    free(tok);
    return NULL;
}

/* What srv_kafka_start allocated, the consumer aside. */
static void kafka_free(srv_kafka *k)
{
    for (int i = 0; i < KAFKA_INFLIGHT; i++) {
        free(k->gat[i].msgs);
        free(k->gat[i].a.buf);
        free(k->chk[i].ev);
    }
    pthread_cond_destroy(&k->cv);
    pthread_mutex_destroy(&k->mu);
    rl_map_release(&k->next);
    free(k);
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
        conf_set(c, "fetch.wait.max.ms", KAFKA_FETCH_WAIT_MS, err, cap) ||
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
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cv, NULL);
    for (int i = 0; i < KAFKA_INFLIGHT; i++) {
        k->gat[i].msgs = calloc(s->cfg.kafka_batch, sizeof(*k->gat[i].msgs));
        k->chk[i].ev = malloc(s->cfg.kafka_batch * sizeof(*k->chk[i].ev));
        if (!k->gat[i].msgs || !k->chk[i].ev)
            goto fail;
    }
    if (pthread_create(&k->sth, NULL, store_main, k) != 0)
        goto fail;
    if (pthread_create(&k->th, NULL, kafka_main, k) != 0) {
        kafka_halt(k);
        pthread_join(k->sth, NULL);
        goto fail;
    }
    s->kafka = k;
    return 0;
fail:
    rd_kafka_consumer_close(k->rk);
    rd_kafka_destroy(k->rk);
    kafka_free(k);
    return GPUFL_EIO;
}

void srv_kafka_stop(srv *s)
{
    srv_kafka *k = s->kafka;

    if (!k)
        return;
    kafka_halt(k);
    pthread_join(k->th, NULL);
    pthread_join(k->sth, NULL);
    /* gathers not stored whole: their offsets were not committed, so
     * their messages come again to whoever reads the partitions next */
    for (int i = 0; i < KAFKA_INFLIGHT; i++)
        for (size_t j = 0; j < k->gat[i].n; j++)
            rd_kafka_message_destroy(k->gat[i].msgs[j]);
    rd_kafka_consumer_close(k->rk);
    rd_kafka_destroy(k->rk);
    kafka_free(k);
    s->kafka = NULL;
}
