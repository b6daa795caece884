/*
 * test.h - the tiny harness every C unit test uses.
 *
 * CHECK records a failure and goes on; REQUIRE stops the test function.
 * TEST_MAIN prints "N passed, M failed" and sets the exit status.
 */
#ifndef GPUFL_TEST_H
#define GPUFL_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_pass, t_fail;

#define CHECK(c)                                                               \
    do {                                                                       \
        if (c) {                                                               \
            t_pass++;                                                          \
        } else {                                                               \
            t_fail++;                                                          \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__,   \
                    #c);                                                       \
        }                                                                      \
    } while (0)

#define REQUIRE(c)                                                             \
    do {                                                                       \
        if (c) {                                                               \
            t_pass++;                                                          \
        } else {                                                               \
            t_fail++;                                                          \
            fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, \
                    #c);                                                       \
            return;                                                            \
        }                                                                      \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                     \
    do {                                                                       \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                       \
        if (a_ == b_) {                                                        \
            t_pass++;                                                          \
        } else {                                                               \
            t_fail++;                                                          \
            fprintf(stderr,                                                    \
                    "%s:%d: %s == %s failed: %" PRIu64 " != %" PRIu64 "\n",    \
                    __FILE__, __LINE__, #a, #b, a_, b_);                       \
        }                                                                      \
    } while (0)

#define CHECK_STR(a, b)                                                        \
    do {                                                                       \
        const char *a_ = (a), *b_ = (b);                                       \
        if (a_ && b_ && strcmp(a_, b_) == 0) {                                 \
            t_pass++;                                                          \
        } else {                                                               \
            t_fail++;                                                          \
            fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n",      \
                    __FILE__, __LINE__, #a, #b, a_ ? a_ : "(null)",            \
                    b_ ? b_ : "(null)");                                       \
        }                                                                      \
    } while (0)

#define RUN(fn)                                                                \
    do {                                                                       \
        int f0_ = t_fail;                                                      \
        fn();                                                                  \
        fprintf(stderr, "%s %s\n", t_fail == f0_ ? "ok  " : "FAIL", #fn);      \
    } while (0)

#define TEST_DONE()                                                            \
    do {                                                                       \
        printf("%d passed, %d failed\n", t_pass, t_fail);                      \
        return t_fail ? 1 : (t_pass ? 0 : 1);                                  \
    } while (0)

#endif
