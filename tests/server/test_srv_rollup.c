/*
 * test_srv_rollup.c - the rollup helpers: map growth and lookups, the
 * histogram's error bound and stored form, timeline geometry, cursors.
 */
#include "rollup.h"
#include "store.h"
#include "test.h"

#include <gpufl/gpufl.h>

#include <string.h>

static void test_map(void)
{
    rl_map m;
    int fresh;

    rl_map_init(&m, sizeof(uint64_t), 100000);
    for (uint64_t i = 0; i < 50000; i++) {
        uint64_t k[4] = { i, i * 7, 0, 1 };
        uint64_t *v = rl_map_get(&m, k, &fresh);
        REQUIRE(v && fresh);
        *v = i + 1;
    }
    CHECK_EQ_U64(m.n, 50000);
    for (uint64_t i = 0; i < 50000; i += 997) {
        uint64_t k[4] = { i, i * 7, 0, 1 };
        uint64_t *v = rl_map_find(&m, k);
        REQUIRE(v);
        CHECK_EQ_U64(*v, i + 1);
        v = rl_map_get(&m, k, &fresh);
        CHECK(!fresh);
    }
    {
        uint64_t k[4] = { 1, 2, 3, 4 };
        CHECK(rl_map_find(&m, k) == NULL);
    }
    rl_map_clear(&m);
    CHECK_EQ_U64(m.n, 0);
    rl_map_release(&m);
    /* the cap */
    rl_map_init(&m, 8, 10);
    for (uint64_t i = 0; i < 10; i++) {
        uint64_t k[4] = { i, 0, 0, 0 };
        CHECK(rl_map_get(&m, k, &fresh) != NULL);
    }
    {
        uint64_t k[4] = { 99, 0, 0, 0 };
        CHECK(rl_map_get(&m, k, &fresh) == NULL);
    }
    rl_map_release(&m);
}

/* A memo answers for its key until the map changes shape: after a clear
 * or a rehash it must go to the map again (a kept pointer would point at
 * a cleared or freed slot), and a memo of another map never matches. */
static void test_memo(void)
{
    rl_map m, o;
    rl_memo c, f;
    uint64_t k[4] = { 5, 1, 0, 9 }, *v, *w, gen;
    int fresh;

    memset(&c, 0, sizeof(c));
    memset(&f, 0, sizeof(f));
    rl_map_init(&m, sizeof(uint64_t), 100000);
    rl_map_init(&o, sizeof(uint64_t), 100000);
    v = rl_map_get_memo(&m, &c, k, &fresh);
    REQUIRE(v && fresh);
    *v = 42;
    w = rl_map_get_memo(&m, &c, k, &fresh);
    CHECK(w == v && !fresh);
    CHECK(rl_map_find_memo(&m, &f, k) == v);
    /* cleared: the key is new again, and zeroed */
    rl_map_clear(&m);
    CHECK(rl_map_find_memo(&m, &f, k) == NULL);
    w = rl_map_get_memo(&m, &c, k, &fresh);
    REQUIRE(w);
    CHECK(fresh);
    CHECK_EQ_U64(*w, 0);
    *w = 43;
    /* grown past a rehash by other keys: the memo's pointer moved */
    gen = m.gen;
    for (uint64_t i = 0; i < 1000; i++) {
        uint64_t kk[4] = { i, 2, 0, 0 };
        REQUIRE(rl_map_get(&m, kk, &fresh));
    }
    CHECK(m.gen != gen);
    w = rl_map_get_memo(&m, &c, k, &fresh);
    REQUIRE(w);
    CHECK(!fresh);
    CHECK_EQ_U64(*w, 43);
    CHECK(w == rl_map_find(&m, k));
    /* a memo of m is no memo of o */
    w = rl_map_get_memo(&o, &c, k, &fresh);
    REQUIRE(w);
    CHECK(fresh);
    CHECK(w == rl_map_find(&o, k));
    rl_map_release(&m);
    rl_map_release(&o);
}

static void test_hist(void)
{
    static uint64_t h[RL_HIST_N];
    /* every value lands in a bucket whose midpoint is within 1/32 */
    for (uint64_t v = 0; v < 5000000; v = v < 100 ? v + 1 : v + v / 7) {
        uint32_t b = rl_hist_bucket(v);
        uint64_t m = rl_hist_mid(b);
        double err = v ? (double)(m > v ? m - v : v - m) / (double)v : 0;
        CHECK(b < RL_HIST_N);
        CHECK(err <= 1.0 / 32 + 1e-9);
        if (b + 1 < RL_HIST_N)
            CHECK(rl_hist_mid(b + 1) > m);
    }
    CHECK(rl_hist_bucket(UINT64_MAX) < RL_HIST_N);
    for (uint64_t v = 1; v <= 1000; v++)
        h[rl_hist_bucket(v * 1000)]++;
    {
        uint64_t p50 = rl_hist_quantile(h, 1000, 0.5);
        uint64_t p99 = rl_hist_quantile(h, 1000, 0.99);
        CHECK(p50 >= 500000 * 31 / 32 && p50 <= 500000 * 33 / 32);
        CHECK(p99 >= 990000 * 31 / 32 && p99 <= 990000 * 33 / 32);
    }
    CHECK_EQ_U64(rl_hist_quantile(h, 0, 0.5), 0);
}

/* The stored (sparse) form round-trips, adds into what is there, reads
 * the old dense form, never has the dense form's length, and rejects
 * damaged input. */
static void test_hist_stored(void)
{
    static uint64_t h[RL_HIST_N], back[RL_HIST_N];
    static unsigned char enc[RL_HIST_ENC_MAX];
    size_t n;
    int same = 1;

    h[0] = 3;
    h[40] = 1;
    h[41] = 1ull << 40;
    h[RL_HIST_N - 1] = UINT64_MAX;
    n = rl_hist_encode(h, enc);
    CHECK(n > 1 && n < 40);
    CHECK(rl_hist_decode_add(enc, n, back) == 0);
    CHECK(rl_hist_decode_add(enc, n, back) == 0);
    for (int b = 0; b < RL_HIST_N; b++)
        same &= back[b] == 2 * h[b];
    CHECK(same);
    /* the dense form of schemas 1-2 */
    memset(back, 0, sizeof(back));
    CHECK(rl_hist_decode_add(h, sizeof(h), back) == 0);
    CHECK(memcmp(back, h, sizeof(h)) == 0);
    /* empty */
    memset(back, 0, sizeof(back));
    n = rl_hist_encode(back, enc);
    CHECK_EQ_U64(n, 1);
    CHECK(rl_hist_decode_add(enc, n, back) == 0);
    /* damaged: truncated varint, bucket past the end, unknown tag */
    n = rl_hist_encode(h, enc);
    CHECK(rl_hist_decode_add(enc, n - 1, back) == -1);
    CHECK(rl_hist_decode_add((const unsigned char *)"S\x80\x10\x01", 4, back) ==
          -1);
    CHECK(rl_hist_decode_add((const unsigned char *)"X\x01\x01", 3, back) ==
          -1);
    /* an encoding as long as the dense form gets a pad byte: 1024 buckets
     * of 2-byte gaps... find counts that make it exactly 8192 */
    for (int b = 0; b < RL_HIST_N; b++)
        h[b] = 1ull << 20; /* 3-byte varint: 1 + 1024 * 4 = 4097 */
    for (int b = 0; b < 1023; b++)
        h[b] = 1ull << 48; /* 7-byte varint: 1 + 1023 * 8 + 4 = 8189 */
    h[1023] = 1ull << 35;  /* 6 bytes: 1 + 1023 * 8 + 7 = 8192 */
    n = rl_hist_encode(h, enc);
    CHECK_EQ_U64(n, RL_HIST_N * 8 + 1);
    CHECK(enc[0] == RL_HIST_TAG_PAD);
    memset(back, 0, sizeof(back));
    CHECK(rl_hist_decode_add(enc, n, back) == 0);
    CHECK(memcmp(back, h, sizeof(h)) == 0);
}

/* rl_hist_encode passes empty buckets in groups: every bucket on its own,
 * and every pair of a bucket with one 1-9 places on, round-trips to the
 * same counts (a bucket at any place of a group, and groups either side
 * of one). */
static void test_hist_stored_every_bucket(void)
{
    static uint64_t h[RL_HIST_N], back[RL_HIST_N];
    static unsigned char enc[RL_HIST_ENC_MAX];
    int same = 1;

    for (int a = 0; a < RL_HIST_N; a++)
        for (int d = 0; d < 10; d++) {
            size_t n;
            memset(h, 0, sizeof(h));
            memset(back, 0, sizeof(back));
            h[a] = (uint64_t)a + 1;
            if (d && a + d < RL_HIST_N)
                h[a + d] = 7;
            n = rl_hist_encode(h, enc);
            same &= rl_hist_decode_add(enc, n, back) == 0 &&
                    memcmp(back, h, sizeof(h)) == 0;
        }
    CHECK(same);
}

/* rl_hist_sample: quantiles placed within their bucket, so the sample's
 * median is the values' within far less than a bucket's width (1/16 to
 * 1/32 of the value), and the exact buckets give exact values. */
static void test_hist_sample(void)
{
    static uint64_t c[RL_HIST_N];
    double v[256];
    uint64_t n = 0;

    memset(c, 0, sizeof(c));
    /* 100 000 values spread evenly over [100 000, 140 000) */
    for (uint64_t x = 100000; x < 140000; x++)
        if (x % 2 == 0) {
            c[rl_hist_bucket(x)] += 5;
            n += 5;
        }
    rl_hist_sample(c, n, v, 256);
    for (int i = 1; i < 256; i++)
        CHECK(v[i] >= v[i - 1]);
    /* the end buckets spread over their whole width: [98304, 147456) */
    CHECK(v[0] >= 98304 && v[255] < 147456);
    /* the median, 120 000: the midpoint of its bucket would be off by up
     * to half a bucket (2 048 ns here) */
    CHECK(v[127] > 119800 && v[128] < 120200);
    memset(c, 0, sizeof(c));
    c[7] = 3;
    c[9] = 1;
    rl_hist_sample(c, 4, v, 4);
    CHECK(v[0] == 7 && v[1] == 7 && v[2] == 7 && v[3] == 9);
}

static void test_cursor(void)
{
    int64_t v[3] = { -1, 0, INT64_MAX }, w[3];
    char buf[SRV_CURSOR_MAX];

    REQUIRE(srv_cursor_encode(v, 3, buf, sizeof(buf)) == GPUFL_OK);
    REQUIRE(srv_cursor_decode(buf, w, 3) == GPUFL_OK);
    CHECK(w[0] == -1 && w[1] == 0 && w[2] == INT64_MAX);
    CHECK(srv_cursor_decode(buf, w, 2) != GPUFL_OK);
    CHECK(srv_cursor_decode("c1.2.3.4", w, 3) != GPUFL_OK);
    CHECK(srv_cursor_decode("x1", w, 1) != GPUFL_OK);
    CHECK(srv_cursor_decode("c-1", w, 1) != GPUFL_OK);
    CHECK(srv_cursor_decode("c11111111111111111", w, 1) != GPUFL_OK);
    CHECK(srv_cursor_decode("c", w, 1) != GPUFL_OK);
    CHECK(srv_cursor_encode(v, 3, buf, 8) == GPUFL_ETOOBIG);
}

int main(void)
{
    RUN(test_map);
    RUN(test_memo);
    RUN(test_hist);
    RUN(test_hist_stored);
    RUN(test_hist_stored_every_bucket);
    RUN(test_hist_sample);
    RUN(test_cursor);
    TEST_DONE();
}
