/*
 * test_srv_rollup.c - the rollup helpers: map growth and lookups, the
 * histogram's error bound, timeline geometry, cursors.
 */
#include "rollup.h"
#include "store.h"
#include "test.h"

#include <gpufl/gpufl.h>

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
    RUN(test_hist);
    RUN(test_cursor);
    TEST_DONE();
}
