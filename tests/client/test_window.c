/*
 * test_window.c - the flight recorder's window (src/client/window.c): lines
 * come back oldest first with their stream and ids, the oldest go when a
 * line does not fit (counted per stream), lines never straddle the end of
 * the mapping, the age bound, the cap is never exceeded, refusals.
 */
#include "client/window.h"
#include "test.h"

#include <gpufl/gpufl.h>

#define CAP WINDOW_MIN_BYTES

/* Line i: ",\"ts\":<i>,...<pad>\n", len bytes (>= 16). */
static size_t line(char *buf, uint64_t i, size_t len)
{
    int n = snprintf(buf, len + 1, ",\"ts\":%llu,", (unsigned long long)i);
    memset(buf + n, 'x', len - (size_t)n - 1);
    buf[len - 1] = '\n';
    return len;
}

static uint64_t line_no(const win_entry *e)
{
    return strtoull(e->text + 6, NULL, 10);
}

static void test_refused(void)
{
    char buf[64];
    win_stats st;
    CHECK(window_open(CAP - 8, 0) == GPUFL_EINVAL);
    CHECK(window_open(WINDOW_MAX_BYTES + 8, 0) == GPUFL_EINVAL);
    CHECK(!window_is_open());
    CHECK(window_append(0, 1, NULL, 0, buf, line(buf, 1, 32)) == GPUFL_ETOOBIG);
    REQUIRE(window_open(CAP, 0) == 0);
    CHECK(window_append(ST_COUNT, 1, NULL, 0, buf, 32) == GPUFL_ETOOBIG);
    CHECK(window_append(0, 1, NULL, WINDOW_MAX_REFS + 1, buf, 32) ==
          GPUFL_ETOOBIG);
    {
        char *big = malloc(CAP);
        REQUIRE(big);
        CHECK(window_append(0, 1, NULL, 0, big, CAP) == GPUFL_ETOOBIG);
        free(big);
    }
    window_stats(&st);
    CHECK_EQ_U64(st.refused, 3);
    CHECK_EQ_U64(st.used, 0);
    window_close();
}

static void test_order_refs_and_streams(void)
{
    char buf[256];
    uint64_t pos = window_first();
    win_entry e;
    uint32_t refs[3] = { 7, 8, 9 };
    win_stats st;
    REQUIRE(window_open(CAP, 0) == 0);
    for (uint64_t i = 0; i < 100; i++)
        REQUIRE(window_append((int)(i % 3), 1000 + i, refs, (int)(i % 4), buf,
                              line(buf, i, 40 + i)) == 0);
    for (uint64_t i = 0; i < 100; i++) {
        REQUIRE(window_next(&pos, &e));
        CHECK_EQ_U64(line_no(&e), i);
        CHECK_EQ_U64(e.stream, i % 3);
        CHECK_EQ_U64(e.t, 1000 + i);
        CHECK_EQ_U64(e.len, 40 + i);
        CHECK_EQ_U64(e.nrefs, i % 4);
        for (int k = 0; k < e.nrefs; k++)
            CHECK_EQ_U64(e.refs[k], 7 + (uint64_t)k);
        CHECK(e.text[e.len - 1] == '\n');
    }
    CHECK(!window_next(&pos, &e));
    window_stats(&st);
    CHECK_EQ_U64(st.lines[0] + st.lines[1] + st.lines[2], 100);
    CHECK_EQ_U64(st.oldest, 1000);
    CHECK_EQ_U64(st.evicted[0] + st.evicted[1] + st.evicted[2], 0);
    window_reset();
    window_stats(&st);
    CHECK_EQ_U64(st.used, 0);
    CHECK_EQ_U64(st.oldest, 0);
    pos = window_first();
    CHECK(!window_next(&pos, &e));
    window_close();
}

/* Many more lines than fit, of awkward sizes: what is left is always the
 * newest lines, contiguous, within the cap; the dropped ones are counted
 * in their stream; no line is cut by the end of the mapping. */
static void test_eviction_and_wrap(void)
{
    char buf[8192];
    uint64_t n = 0, dropped_bytes = 0, kept_bytes = 0;
    win_stats st;
    REQUIRE(window_open(CAP, 0) == 0);
    for (uint64_t i = 0; i < 20000; i++) {
        size_t len = 16 + (size_t)((i * 2654435761u) % 5000);
        REQUIRE(window_append((int)(i % 3), i, NULL, 0, buf,
                              line(buf, i, len)) == 0);
        n++;
        window_stats(&st);
        REQUIRE(st.used <= CAP);
    }
    {
        uint64_t pos = window_first(), expect = 0, count = 0;
        win_entry e;
        int first = 1;
        while (window_next(&pos, &e)) {
            uint64_t no = line_no(&e);
            if (first)
                expect = no;
            first = 0;
            CHECK_EQ_U64(no, expect);
            CHECK(e.text[e.len - 1] == '\n');
            CHECK_EQ_U64(e.len, 16 + (no * 2654435761u) % 5000);
            kept_bytes += e.len;
            expect++;
            count++;
        }
        CHECK_EQ_U64(expect, n); /* the newest is the last line given */
        window_stats(&st);
        CHECK_EQ_U64(count, st.lines[0] + st.lines[1] + st.lines[2]);
        CHECK_EQ_U64(count + st.evicted[0] + st.evicted[1] + st.evicted[2], n);
        CHECK_EQ_U64(kept_bytes, st.bytes[0] + st.bytes[1] + st.bytes[2]);
        /* a window this full drops only what it must: more than 3/4 used */
        CHECK(st.used > CAP / 4 * 3);
    }
    window_stats(&st);
    for (int s = 0; s < ST_COUNT; s++)
        dropped_bytes += st.evicted_bytes[s];
    CHECK(dropped_bytes > 0);
    window_close();
}

static void test_age(void)
{
    char buf[64];
    uint64_t pos = window_first();
    win_entry e;
    win_stats st;
    REQUIRE(window_open(CAP, 1000) == 0);
    for (uint64_t i = 0; i < 50; i++)
        REQUIRE(window_append(1, 100 * i, NULL, 0, buf, line(buf, i, 32)) == 0);
    /* at t = 5000, lines from before 4000 are older than 1000 */
    window_expire(5000);
    REQUIRE(window_next(&pos, &e));
    CHECK_EQ_U64(e.t, 4000);
    window_stats(&st);
    CHECK_EQ_U64(st.aged[1], 40);
    CHECK_EQ_U64(st.evicted[1], 0);
    CHECK_EQ_U64(st.lines[1], 10);
    CHECK_EQ_U64(st.age_ns, 1000);
    window_expire(1000000);
    window_stats(&st);
    CHECK_EQ_U64(st.lines[1], 0);
    CHECK_EQ_U64(st.used, 0);
    /* an empty window starts again at the beginning of the mapping */
    REQUIRE(window_append(2, 1, NULL, 0, buf, line(buf, 99, 32)) == 0);
    pos = window_first();
    REQUIRE(window_next(&pos, &e));
    CHECK_EQ_U64(line_no(&e), 99);
    window_close();
    window_close(); /* twice is fine */
}

int main(void)
{
    RUN(test_refused);
    RUN(test_order_refs_and_streams);
    RUN(test_eviction_and_wrap);
    RUN(test_age);
    TEST_DONE();
}
