/*
 * test_scope_macros.c - GPUFL_SCOPE_AUTO (block-scoped, no loop) lets
 * break and continue reach the caller's loop and still ends its scope;
 * GPUFL_SCOPE / GFL_SCOPE (a one-pass for loop) behaves as gpufl.h
 * documents: break and continue leave its block only.  Compiled as C here
 * and as C++ by test_scope_macros.cpp (the same file included).
 */
#include <gpufl/gpufl.h>
#include <gpufl/record.h>
#include <unistd.h>

#include "test.h"

/* The calling thread's innermost open scope token (0 = none). */
static uint64_t open_scope(void)
{
    uint64_t tok = 0;
    gpufl_current_scope(&tok, NULL);
    return tok;
}

static void test_auto_in_loop(void)
{
    int i, after = 0, leaks = 0;
    for (i = 0; i < 5; i++) {
        if (open_scope() != 0)
            leaks++; /* the previous iteration's scope is still open */
        GPUFL_SCOPE_AUTO("item");
        CHECK(open_scope() != 0);
        if (i == 1)
            continue; /* the loop's next iteration */
        if (i == 3)
            break; /* out of the loop */
        after++;
    }
    CHECK(i == 3);     /* break left the loop */
    CHECK(after == 2); /* i = 0, 2: continue skipped the rest of i = 1 */
    CHECK(leaks == 0); /* every iteration's scope ended */
    CHECK(open_scope() == 0);
}

static void test_auto_nested(void)
{
    uint64_t outer, inner;
    {
        GFL_SCOPE_AUTO("outer"); /* the GFL_ spelling is the same macro */
        outer = open_scope();
        {
            GPUFL_SCOPE_AUTO("inner");
            GPUFL_SCOPE_AUTO("innermost"); /* two in one block */
            inner = open_scope();
            CHECK(inner != 0 && inner != outer);
        }
        CHECK(open_scope() == outer); /* both inner ones ended */
    }
    CHECK(outer != 0);
    CHECK(open_scope() == 0);
}

static int auto_return(int x)
{
    GPUFL_SCOPE_AUTO("returns");
    if (x)
        return x;
    return -1;
}

static void test_auto_return(void)
{
    CHECK(auto_return(7) == 7);
    CHECK(open_scope() == 0);
}

/* The documented trap: in GPUFL_SCOPE's block, continue and break end the
 * block, and the caller's loop goes on with the statement after it. */
static void test_loop_form_as_documented(void)
{
    int i, inner = 0, after = 0, leaks = 0;
    for (i = 0; i < 3; i++) {
        if (open_scope() != 0)
            leaks++;
        GFL_SCOPE("item")
        {
            if (i == 1)
                continue; /* leaves GFL_SCOPE's block only */
            inner++;
        }
        after++; /* still runs for i == 1 */
    }
    CHECK(inner == 2);
    CHECK(after == 3);
    for (i = 0; i < 3; i++) {
        if (open_scope() != 0)
            leaks++;
        GPUFL_SCOPE("item")
        {
            if (i == 1)
                break; /* does not leave the for loop */
        }
        after++;
    }
    CHECK(i == 3);
    CHECK(after == 6);
    CHECK(leaks == 0);
    CHECK(open_scope() == 0);
}

int main(void)
{
    char dir[512];
    const char *tmp = getenv("GPUFL_TEST_TMP");
    gpufl_options o;
    snprintf(dir, sizeof dir, "%s/scope_macros.%d", tmp ? tmp : "/tmp",
             (int)getpid());
    gpufl_options_init(&o);
    o.log_dir = dir;
    o.engines = "host";
    o.system_interval_ms = 0;
    o.min_free_bytes = 0;
    if (gpufl_init(&o) != GPUFL_OK) {
        fprintf(stderr, "gpufl_init: %s\n", gpufl_last_error());
        return 1;
    }
    RUN(test_auto_in_loop);
    RUN(test_auto_nested);
    RUN(test_auto_return);
    RUN(test_loop_form_as_documented);
#ifdef __cplusplus
    RUN(test_cxx);
#endif
    gpufl_shutdown();
    TEST_DONE();
}
