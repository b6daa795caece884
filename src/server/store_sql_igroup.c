/*
 * store_sql_igroup.c - group commit: ingest batches that arrive while
 * another is being written share the next transaction.
 *
 * Each caller of srv_store_ingest queues its batch and waits.  When no
 * thread is writing, the caller whose turn it is becomes the writer: it
 * takes the queue (SQ_GROUP_BATCHES batches, SQ_GROUP_LINES lines at
 * most; always at least one), writes those batches in one transaction
 * (sq_ingest_group: each batch's lines and outcome as if alone, the
 * rollups merged once, one COMMIT - on SQLite one fsync), marks them done
 * and wakes the others.  Batches that came meanwhile form the next group.
 * A batch alone - one connection sending one request after another -
 * finds the queue empty and is written at once, as before: nothing
 * waits for company.
 *
 * Every caller returns only after the COMMIT that holds its batch, so an
 * acknowledged line (HTTP 200, a Kafka offset) is as durable as before
 * and a kill -9 loses only batches nobody was answered for.  A group
 * whose transaction fails (a database error, a cold block S3 cannot give,
 * a rollup map over its cap) is rolled back whole, then its batches are
 * written again one per transaction, so each gets the answer it would
 * have had alone and one bad batch does not fail the others.
 */
#include "store_sql_writer_int.h"

#include "common/clock.h"

#include <gpufl/gpufl.h>

#include <time.h>

/* Most batches and lines in one group: a group's rollups share the
 * batch's in-memory maps (SQ_ACC_MAX entries), and its writer answers
 * nobody until all of it is in. */
#define SQ_GROUP_BATCHES 16
#define SQ_GROUP_LINES (256u * 1024u)

/* Takes the head of the queue as a group into g[]; returns its size. */
static size_t group_take(srv_store *s, sq_ibatch **g)
{
    size_t n = 0, lines = 0;

    while (s->gq_head && n < SQ_GROUP_BATCHES &&
           (n == 0 || lines + s->gq_head->n <= SQ_GROUP_LINES)) {
        sq_ibatch *b = s->gq_head;
        s->gq_head = b->next;
        if (!s->gq_head)
            s->gq_tail = NULL;
        b->next = NULL;
        lines += b->n;
        g[n++] = b;
    }
    return n;
}

/* Writes group g[0..n) (wlock held); sets each batch's rc. */
static void group_write(srv_store *s, sq_ibatch **g, size_t n)
{
    sq_ibatch b[SQ_GROUP_BATCHES];
    int rc;

    for (size_t i = 0; i < n; i++)
        b[i] = *g[i];
    rc = sq_ingest_group(s, b, n);
    if (rc && n > 1) {
        /* each alone: its own answer, the good ones stored */
        for (size_t i = 0; i < n; i++)
            g[i]->rc = sq_ingest_group(s, &b[i], 1);
        return;
    }
    for (size_t i = 0; i < n; i++)
        g[i]->rc = rc;
}

/* Queues b and waits for the COMMIT that holds it (or writes it). */
static int ingest_wait(srv_store *s, sq_ibatch *b)
{
    b->r->accepted = b->r->duplicate = 0;
    pthread_mutex_lock(&s->gq_lock);
    if (s->gq_tail)
        s->gq_tail->next = b;
    else
        s->gq_head = b;
    s->gq_tail = b;
    while (!b->done) {
        sq_ibatch *g[SQ_GROUP_BATCHES];
        size_t ng;
        uint64_t t0;
        if (s->gq_leader) {
            pthread_cond_wait(&s->gq_cond, &s->gq_lock);
            continue;
        }
        /* this thread writes the next group (maybe without its own
         * batch, when the queue is longer than a group: then again) */
        s->gq_leader = 1;
        ng = group_take(s, g);
        pthread_mutex_unlock(&s->gq_lock);
        t0 = clock_mono_ns();
        __atomic_fetch_add(&s->ing_want, 1, __ATOMIC_RELAXED);
        pthread_mutex_lock(&s->wlock);
        __atomic_fetch_sub(&s->ing_want, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&s->ing_ns[SRV_ING_WAIT], clock_mono_ns() - t0,
                           __ATOMIC_RELAXED);
        group_write(s, g, ng);
        pthread_mutex_unlock(&s->wlock);
        pthread_mutex_lock(&s->gq_lock);
        for (size_t i = 0; i < ng; i++)
            g[i]->done = 1;
        s->gq_leader = 0;
        pthread_cond_broadcast(&s->gq_cond);
    }
    pthread_mutex_unlock(&s->gq_lock);
    return b->rc;
}

int srv_store_ingest(srv_store *s, const srv_ev *ev, size_t n,
                     srv_ingest_res *r)
{
    sq_ibatch me = { ev, n, r, 0, 0, NULL, NULL, NULL };

    return ingest_wait(s, &me);
}

int srv_store_ingest_parts(srv_store *s, srv_ingest_part_fn part, void *ctx,
                           size_t n, srv_ingest_res *r)
{
    sq_ibatch me = { NULL, n, r, 0, 0, NULL, part, ctx };

    return ingest_wait(s, &me);
}

void srv_store_ingest_stats(srv_store *s, uint64_t *commits, uint64_t *batches)
{
    /* not under wlock: /metrics must not wait for a group's fsync */
    *commits = __atomic_load_n(&s->ing_commits, __ATOMIC_RELAXED);
    *batches = __atomic_load_n(&s->ing_batches, __ATOMIC_RELAXED);
}

static int ingest_waiting(srv_store *s)
{
    return __atomic_load_n(&s->ing_want, __ATOMIC_RELAXED) != 0;
}

int sq_ingest_give(srv_store *s, uint64_t t0)
{
    return ingest_waiting(s) && clock_mono_ns() - t0 >= s->wr->give_ns;
}

uint64_t sq_maint_lock(srv_store *s)
{
    pthread_mutex_lock(&s->wlock);
    return clock_mono_ns();
}

void sq_maint_unlock(srv_store *s, int gave)
{
    pthread_mutex_unlock(&s->wlock);
    /* the lock's waiter is woken, but a thread that unlocks and locks
     * again at once mostly gets it first: so the waiter's turn is waited
     * for (10 ms at most: a waiter that does not come is not waited on) */
    for (int i = 0; gave && i < 200 && ingest_waiting(s); i++) {
        struct timespec ts = { 0, 50 * 1000 };
        nanosleep(&ts, NULL);
    }
}

void srv_store_ingest_times(srv_store *s, uint64_t ns[SRV_ING_NT])
{
    for (int i = 0; i < SRV_ING_NT; i++)
        ns[i] = __atomic_load_n(&s->ing_ns[i], __ATOMIC_RELAXED);
}
