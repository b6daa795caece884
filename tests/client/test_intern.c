/*
 * test_intern.c - the process-wide dictionary: stable dense ids, kinds kept
 * apart, concurrent interning from several threads, caps.
 */
#include "client/intern.h"
#include "test.h"

#include <pthread.h>
#include <stdio.h>

static void test_names(void)
{
    uint32_t a = intern_name("alpha", 5), b = intern_name("beta", 4);
    CHECK(a && b && a != b);
    CHECK_EQ_U64(intern_name("alpha", 5), a);
    CHECK_EQ_U64(intern_name("alphabet", 5), a); /* len is honoured */
    CHECK_STR(intern_get(a)->str, "alpha");
    CHECK(intern_get(a)->kind == IK_NAME);
    CHECK(intern_get(0) == NULL);
    CHECK(intern_get(INTERN_MAX_IDS + 1) == NULL);
    CHECK(intern_name(NULL, 0) == 0);
}

static void test_paths(void)
{
    uint32_t n1 = intern_name("train", 5), n2 = intern_name("fwd", 3);
    uint32_t p1 = intern_path(0, n1), p2 = intern_path(p1, n2);
    uint32_t p3 = intern_path(0, n2);
    CHECK(p1 && p2 && p3 && p1 != p2 && p2 != p3);
    CHECK_EQ_U64(intern_path(p1, n2), p2);
    CHECK_EQ_U64(intern_get(p2)->parent, p1);
    CHECK_EQ_U64(intern_get(p2)->name, n2);
    CHECK_EQ_U64(intern_get(p2)->depth, 2);
    CHECK_EQ_U64(intern_get(p3)->depth, 1);
    CHECK(intern_path(p1, 0) == 0);
    /* a path id never collides with a name id of the same number */
    CHECK(intern_get(p1)->kind == IK_PATH);
}

static void test_stacks_and_launch(void)
{
    const char *f1[] = { "main", "train_step+0x1c", "launch" };
    const char *f2[] = { "main", "train_step+0x1c" };
    uint32_t s1 = intern_stack(f1, 3), s2 = intern_stack(f2, 2);
    intern_launch l = { 0 }, l2;
    CHECK(s1 && s2 && s1 != s2);
    CHECK_EQ_U64(intern_stack(f1, 3), s1);
    CHECK_STR(intern_get(s1)->str, "main\ntrain_step+0x1c\nlaunch");
    CHECK_EQ_U64(intern_get(s1)->nframes, 3);
    CHECK(intern_stack(f1, 0) == 0);
    l.name = intern_name("k", 1);
    l.block[0] = 256;
    l.block[1] = l.block[2] = 1;
    l.regs = 32;
    l.occ = 0.5f;
    l2 = l;
    CHECK_EQ_U64(intern_launch_cfg(&l), intern_launch_cfg(&l2));
    l2.regs = 33;
    CHECK(intern_launch_cfg(&l) != intern_launch_cfg(&l2));
    CHECK(intern_get(intern_launch_cfg(&l))->kind == IK_LAUNCH);
    CHECK_EQ_U64(intern_get(intern_launch_cfg(&l))->name, l.name);
}

static uint32_t seen[4][500];

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    char name[32];
    for (int i = 0; i < 500; i++) {
        int n = snprintf(name, sizeof name, "conc_%d", i);
        seen[t][i] = intern_name(name, (size_t)n);
    }
    return NULL;
}

static void test_concurrent(void)
{
    pthread_t th[4];
    int same = 1;
    for (int t = 0; t < 4; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], NULL);
    for (int i = 0; i < 500; i++)
        for (int t = 1; t < 4; t++)
            if (seen[t][i] != seen[0][i] || !seen[0][i])
                same = 0;
    CHECK(same);
}

static void test_long_name_cut(void)
{
    static char big[INTERN_MAX_LEN + 100];
    uint32_t id;
    memset(big, 'x', sizeof big - 1);
    id = intern_name(big, sizeof big - 1);
    REQUIRE(id);
    CHECK_EQ_U64(intern_get(id)->len, INTERN_MAX_LEN);
}

/* Runs last: fills the table, then every new name is refused and counted. */
static void test_full(void)
{
    char name[32];
    uint32_t last = 1;
    uint64_t before = intern_overflows();
    for (int i = 0; i < INTERN_MAX_IDS + 10; i++) {
        int n = snprintf(name, sizeof name, "fill_%d", i);
        uint32_t id = intern_name(name, (size_t)n);
        if (id)
            last = id;
    }
    CHECK_EQ_U64(intern_count(), INTERN_MAX_IDS);
    CHECK_EQ_U64(last, INTERN_MAX_IDS);
    CHECK(intern_overflows() > before);
    /* known names still resolve */
    CHECK(intern_name("alpha", 5) != 0);
}

int main(void)
{
    RUN(test_names);
    RUN(test_paths);
    RUN(test_stacks_and_launch);
    RUN(test_concurrent);
    RUN(test_long_name_cut);
    RUN(test_full);
    TEST_DONE();
}
