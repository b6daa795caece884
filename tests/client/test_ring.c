/*
 * test_ring.c - the per-thread SPSC ring: order, wrap-around, full ring
 * drops counted, and a producer/consumer pair on two threads.
 */
#include "client/ring.h"
#include "test.h"

#include <pthread.h>

static void test_bad_caps(void)
{
    CHECK(ring_new(0, 1) == NULL);
    CHECK(ring_new(100, 1) == NULL);
    CHECK(ring_new(32, 1) == NULL);
    ring_free(NULL);
}

static void test_fill_and_drop(void)
{
    ring *r = ring_new(64, 7);
    uint64_t tail, head;
    REQUIRE(r);
    for (int i = 0; i < 100; i++) {
        rec *x = ring_reserve(r);
        if (!x) {
            ring_drop(r, ST_SCOPE);
            continue;
        }
        x->type = REC_MARKER;
        x->ts = (uint64_t)i;
        ring_commit(r);
    }
    CHECK_EQ_U64(atomic_load(&r->head), 64);
    CHECK_EQ_U64(atomic_load(&r->drop_pub[ST_SCOPE]), 36);
    CHECK_EQ_U64(atomic_load(&r->drop_pub[ST_DEVICE]), 0);
    CHECK_EQ_U64(ring_fill256(r), 256);
    /* the collector's view: the first 64 events, in order, none later */
    tail = atomic_load(&r->tail);
    head = atomic_load(&r->head);
    CHECK_EQ_U64(head - tail, 64);
    for (uint64_t t = tail; t < head; t++)
        CHECK_EQ_U64(r->slots[t & r->mask].ts, t);
    /* it consumes half; then the producer can write 32 more, wrapping
     * into the freed slots and no further */
    atomic_store(&r->tail, tail + 32);
    for (int i = 0; i < 32; i++) {
        rec *x = ring_reserve(r);
        REQUIRE(x);
        x->ts = 1000 + (uint64_t)i;
        ring_commit(r);
    }
    CHECK(ring_reserve(r) == NULL);
    tail = atomic_load(&r->tail);
    head = atomic_load(&r->head);
    CHECK_EQ_U64(head - tail, 64);
    for (uint64_t t = tail; t < head; t++)
        CHECK_EQ_U64(r->slots[t & r->mask].ts, t < 64 ? t : 1000 + (t - 64));
    ring_free(r);
}

#define N_EVENTS 2000000

static void *producer(void *arg)
{
    ring *r = arg;
    for (uint64_t i = 0; i < N_EVENTS;) {
        rec *x = ring_reserve(r);
        if (!x)
            continue; /* spin: this test wants every event through */
        x->type = REC_COUNTER;
        x->ts = i;
        x->u.ctr.value = (int64_t)(i * 3);
        ring_commit(r);
        i++;
    }
    return NULL;
}

static void test_two_threads(void)
{
    ring *r = ring_new(1024, 1);
    pthread_t th;
    uint64_t next = 0, bad = 0;
    REQUIRE(r);
    pthread_create(&th, NULL, producer, r);
    while (next < N_EVENTS) {
        uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
        uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
        for (; tail < head; tail++) {
            rec *x = &r->slots[tail & r->mask];
            if (x->ts != next || x->u.ctr.value != (int64_t)(next * 3))
                bad++;
            next++;
        }
        atomic_store_explicit(&r->tail, tail, memory_order_release);
    }
    pthread_join(th, NULL);
    CHECK_EQ_U64(bad, 0);
    CHECK_EQ_U64(next, N_EVENTS);
    ring_free(r);
}

int main(void)
{
    RUN(test_bad_caps);
    RUN(test_fill_and_drop);
    RUN(test_two_threads);
    TEST_DONE();
}
