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

int main(void)
{
    RUN(test_accepts);
    RUN(test_refuses);
    TEST_DONE();
}
