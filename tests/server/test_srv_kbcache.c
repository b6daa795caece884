/*
 * test_srv_kbcache.c - the cache of decoded kernel blocks
 * (src/server/kbcache.c): a block is kept only when asked for twice
 * lately, a hit gives back exactly the events put, the bytes held never
 * pass the cap (the least recently used go first, a hit counting as a
 * use), a key whose block's bytes changed (a merge) is a miss and its
 * entry goes, and a cap of 0 keeps nothing.
 */
#include "kbcache.h"
#include "test.h"

#include <gpufl/gpufl.h>

#include <stdlib.h>
#include <string.h>

/* what a hit gave */
typedef struct seen {
    const kblock_ev *want;
    size_t n;
    int calls, same;
} seen;

static int on_hit(void *arg, const kblock_ev *ev, size_t n)
{
    seen *s = arg;
    s->calls++;
    s->same = n == s->n && !memcmp(ev, s->want, n * sizeof(*ev));
    return 7; /* handed back through *rc */
}

static void fill(kblock_ev *ev, size_t n, uint64_t seed)
{
    memset(ev, 0, n * sizeof(*ev));
    for (size_t i = 0; i < n; i++) {
        ev[i].seq = seed * 100000 + i;
        ev[i].ts = seed * 7 + i * 3;
        ev[i].name_id = (int64_t)(seed % 5);
    }
}

/* One lookup: 1 on a hit (then sd->same), 0 on a miss (*keep). */
static int get(kbcache *c, int64_t lo, const unsigned char *b, size_t len,
               seen *sd, int *keep)
{
    kbcache_key k = { 1, 2, lo };
    int rc = 0, hit = kbcache_get(c, &k, b, len, on_hit, sd, &rc, keep);
    if (hit)
        CHECK(rc == 7);
    return hit;
}

static void test_second_touch_and_hit(void)
{
    kbcache *c = kbcache_new(1u << 20);
    kblock_ev ev[100];
    unsigned char b[64], b2[64];
    seen sd = { ev, 100, 0, 0 };
    kbcache_key k = { 1, 2, 500 };
    kbcache_stats st;
    int keep = -1;

    REQUIRE(c != NULL);
    fill(ev, 100, 3);
    memset(b, 0x11, sizeof(b));
    /* first read: a miss, not to be kept; second: a miss, to be kept */
    CHECK(get(c, 500, b, sizeof(b), &sd, &keep) == 0 && keep == 0);
    CHECK(get(c, 500, b, sizeof(b), &sd, &keep) == 0 && keep == 1);
    CHECK(kbcache_put(c, &k, b, sizeof(b), ev, 100) == GPUFL_OK);
    /* a hit gives the very events, even after the caller's are gone */
    fill(ev, 100, 3);
    memset(ev, 0, sizeof(ev[0])); /* the copy must not be the caller's */
    {
        kblock_ev want[100];
        fill(want, 100, 3);
        sd.want = want;
        CHECK(get(c, 500, b, sizeof(b), &sd, &keep) == 1);
        CHECK(sd.calls == 1 && sd.same);
        sd.want = ev;
    }
    /* the same key, other bytes (a merge took the key): a miss, and the
     * stale entry goes */
    memcpy(b2, b, sizeof(b2));
    b2[63] ^= 1;
    CHECK(get(c, 500, b2, sizeof(b2), &sd, &keep) == 0);
    CHECK(get(c, 500, b2, sizeof(b2) - 1, &sd, &keep) == 0);
    CHECK(get(c, 500, b, sizeof(b), &sd, &keep) == 0);
    kbcache_stats_get(c, &st);
    CHECK_EQ_U64(st.hits, 1);
    CHECK_EQ_U64(st.entries, 0);
    CHECK_EQ_U64(st.bytes, 0);
    CHECK_EQ_U64(st.kept, 1);
    kbcache_free(c);
}

static void test_cap(void)
{
    /* room for three entries of 100 events and 64 bytes */
    uint64_t one = 100 * sizeof(kblock_ev) + 64;
    kbcache *c = kbcache_new(3 * one + 10);
    kblock_ev ev[100], big[400];
    unsigned char b[64];
    seen sd = { ev, 100, 0, 0 };
    kbcache_stats st;
    int keep;

    REQUIRE(c != NULL);
    memset(b, 0x22, sizeof(b));
    for (int64_t lo = 0; lo < 3; lo++) {
        kbcache_key k = { 1, 2, lo };
        fill(ev, 100, (uint64_t)lo);
        CHECK(kbcache_put(c, &k, b, sizeof(b), ev, 100) == GPUFL_OK);
    }
    kbcache_stats_get(c, &st);
    CHECK_EQ_U64(st.entries, 3);
    CHECK_EQ_U64(st.bytes, 3 * one);
    /* block 0 used: block 1 is now the least recently used */
    fill(ev, 100, 0);
    CHECK(get(c, 0, b, sizeof(b), &sd, &keep) == 1 && sd.same);
    {
        kbcache_key k = { 1, 2, 3 };
        fill(ev, 100, 3);
        CHECK(kbcache_put(c, &k, b, sizeof(b), ev, 100) == GPUFL_OK);
    }
    kbcache_stats_get(c, &st);
    CHECK(st.bytes <= st.max_bytes);
    CHECK_EQ_U64(st.entries, 3);
    CHECK_EQ_U64(st.evicted, 1);
    CHECK(get(c, 1, b, sizeof(b), &sd, &keep) == 0); /* evicted */
    fill(ev, 100, 0);
    CHECK(get(c, 0, b, sizeof(b), &sd, &keep) == 1 && sd.same);
    fill(ev, 100, 2);
    CHECK(get(c, 2, b, sizeof(b), &sd, &keep) == 1 && sd.same);
    /* bigger than the whole cap: refused, nothing evicted for it */
    {
        kbcache_key k = { 1, 2, 9 };
        fill(big, 400, 9);
        CHECK(kbcache_put(c, &k, b, sizeof(b), big, 400) == GPUFL_ETOOBIG);
    }
    kbcache_stats_get(c, &st);
    CHECK_EQ_U64(st.entries, 3);
    /* many more puts: never past the cap */
    for (int64_t lo = 10; lo < 400; lo++) {
        kbcache_key k = { 1, 2, lo };
        size_t n = 1 + (size_t)(lo % 100);
        fill(ev, n, (uint64_t)lo);
        CHECK(kbcache_put(c, &k, b, sizeof(b), ev, n) == GPUFL_OK);
        kbcache_stats_get(c, &st);
        if (st.bytes > st.max_bytes || st.entries > KBC_ENTRIES) {
            CHECK(0);
            break;
        }
    }
    kbcache_free(c);
    /* a cap of 0: every read a miss, never asked to keep */
    c = kbcache_new(0);
    REQUIRE(c != NULL);
    CHECK(get(c, 5, b, sizeof(b), &sd, &keep) == 0 && keep == 0);
    CHECK(get(c, 5, b, sizeof(b), &sd, &keep) == 0 && keep == 0);
    kbcache_free(c);
    kbcache_free(NULL);
}

/* More small entries than slots: the slot count caps them too. */
static void test_slots(void)
{
    kbcache *c = kbcache_new(1ull << 30);
    kblock_ev ev[1];
    unsigned char b[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    kbcache_stats st;

    REQUIRE(c != NULL);
    fill(ev, 1, 1);
    for (int64_t lo = 0; lo < 3 * KBC_ENTRIES; lo++) {
        kbcache_key k = { 4, 4, lo };
        CHECK(kbcache_put(c, &k, b, sizeof(b), ev, 1) == GPUFL_OK);
    }
    kbcache_stats_get(c, &st);
    CHECK_EQ_U64(st.entries, KBC_ENTRIES);
    CHECK_EQ_U64(st.evicted, 2 * KBC_ENTRIES);
    kbcache_free(c);
}

int main(void)
{
    RUN(test_second_touch_and_hit);
    RUN(test_cap);
    RUN(test_slots);
    TEST_DONE();
}
