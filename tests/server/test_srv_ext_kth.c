/*
 * test_srv_ext_kth.c - sq_ext_kth (store_sql_ext.c), the key of a given
 * rank in a session's heaps of longest and shortest kernels, which the
 * ingest asks for once per block written (the bound of the kept rows,
 * store_sql_kxrow.c).  Its answer is remembered until the heap changes;
 * every change must forget it: a key pushed while the heap fills, and one
 * that replaces the heap's worst once it is full, on both sides.
 */
#include "test.h"

#include "store_test.h"
#include "store_sql_int.h"

/* side d's key of rank r, asked twice (the second answer may be the
 * remembered one: both must be want) */
static void kth_is(srv_store *s, int d, uint32_t r, int64_t want)
{
    for (int i = 0; i < 2; i++) {
        int64_t k[2] = { -1, -1 };
        int have = 0;
        CHECK(sq_ext_kth(s, 1, d, r, k, &have) == 0);
        CHECK(have == 1);
        CHECK(k[0] == want);
        if (k[0] != want)
            fprintf(stderr, "  side %d rank %u: dur %lld, want %lld\n", d, r,
                    (long long)k[0], (long long)want);
    }
}

static void test_kth_follows_the_heaps(void)
{
    srv_store *s = open_tmp("ext_kth");

    REQUIRE(s != NULL);
    s->ext_k = 64; /* heaps of 64 keys a side: full after 64 kernels */
    for (int64_t i = 1; i <= 40; i++)
        REQUIRE(sq_ext_add(s, 1, 10 * i, i) == 0);
    kth_is(s, 0, 5, 360); /* 400 390 380 370 360 */
    kth_is(s, 1, 5, 50);  /* 10 20 30 40 50 */
    /* pushed while the heaps fill */
    REQUIRE(sq_ext_add(s, 1, 1000, 41) == 0);
    kth_is(s, 0, 5, 370);
    REQUIRE(sq_ext_add(s, 1, 1, 42) == 0);
    kth_is(s, 1, 5, 40);
    /* past 64 keys: a better key replaces the worst kept */
    for (int64_t i = 43; i <= 90; i++)
        REQUIRE(sq_ext_add(s, 1, 10 * (i - 2), i) == 0); /* 410 .. 880 */
    kth_is(s, 0, 5, 850); /* 1000 880 870 860 850 */
    kth_is(s, 1, 5, 40);  /* 1 10 20 30 40 */
    REQUIRE(sq_ext_add(s, 1, 2000, 91) == 0);
    kth_is(s, 0, 5, 860);
    REQUIRE(sq_ext_add(s, 1, 0, 92) == 0);
    kth_is(s, 1, 5, 30);
    srv_store_close(s);
}

int main(void)
{
    RUN(test_kth_follows_the_heaps);
    TEST_DONE();
}
