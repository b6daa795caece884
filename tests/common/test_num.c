/*
 * test_num.c - strict decimal ids (src/common/num.c): one spelling of one
 * number, the 64-bit edges, and every form strtoull would also take.
 */
#include "common/num.h"
#include "test.h"

static void test_accepts(void)
{
    uint64_t u = 7;
    int64_t i = 7;
    CHECK(num_u64("0", &u) == 0 && u == 0);
    CHECK(num_u64("007", &u) == 0 && u == 7);
    CHECK(num_u64("18446744073709551615", &u) == 0 && u == UINT64_MAX);
    CHECK(num_i64("9223372036854775807", &i) == 0 && i == INT64_MAX);
}

static void test_refuses(void)
{
    static const char *const bad[] = { "",
                                       " 1",
                                       "1 ",
                                       "+2",
                                       "-1",
                                       "0x10",
                                       "1.0",
                                       "1e3",
                                       "1,2",
                                       "١",
                                       "18446744073709551616",
                                       "000000000000000000001" };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        uint64_t u = 42;
        CHECK(num_u64(bad[k], &u) == -1);
        CHECK(u == 42); /* untouched */
    }
    {
        int64_t i = 42;
        CHECK(num_i64("9223372036854775808", &i) == -1 && i == 42);
        CHECK(num_u64(NULL, NULL) == -1);
    }
}

/* Decimals with a fraction, scaled exactly (sizes and durations). */
static void test_decimal(void)
{
    num_dec d;
    const char *end = NULL;
    uint64_t v = 0;
    CHECK(num_dec_parse("1.5k", &d, &end) == 0 && !strcmp(end, "k"));
    CHECK(d.whole == 1 && d.frac == 5 && d.nfrac == 1);
    CHECK(num_dec_scale(&d, 1024, 1, &v) == 0 && v == 1536);
    CHECK(num_dec_scale(&d, 1, 1, &v) == -1); /* 1.5 is not whole */
    CHECK(num_dec_scale(&d, 1000, 1, &v) == 0 && v == 1500);
    CHECK(num_dec_parse("0.001", &d, &end) == 0 &&
          num_dec_scale(&d, 1000, 1, &v) == 0 && v == 1);
    CHECK(num_dec_parse("18446744073709551615", &d, &end) == 0 &&
          num_dec_scale(&d, 1, 1, &v) == 0 && v == UINT64_MAX);
    CHECK(num_dec_scale(&d, 2, 1, &v) == -1); /* overflow */
    CHECK(num_dec_parse("90", &d, &end) == 0 &&
          num_dec_scale(&d, 1, 60, &v) == -1); /* 1.5 minutes */
    CHECK(num_dec_parse("120", &d, &end) == 0 &&
          num_dec_scale(&d, 1, 60, &v) == 0 && v == 2);
    end = "untouched";
    CHECK(num_dec_parse(".5", &d, &end) == -1 && !strcmp(end, "untouched"));
    CHECK(num_dec_parse("1.", &d, &end) == -1);
    CHECK(num_dec_parse("+1", &d, &end) == -1);
    CHECK(num_dec_parse(" 1", &d, &end) == -1);
    CHECK(num_dec_parse("1.0000000001", &d, &end) == -1); /* 10 digits */
    CHECK(num_dec_parse("184467440737095516160", &d, &end) == -1);
}

int main(void)
{
    RUN(test_accepts);
    RUN(test_refuses);
    RUN(test_decimal);
    TEST_DONE();
}
