/*
 * fuzz_memprof.c - libFuzzer target for gpufl memprof's parsers and
 * accounting (src/memprof): the input is
 *   u16 n | n bytes of /proc/PID/maps text | u16 m | m bytes of a CPython
 *   3.11 location table | struct mp_event records ...
 * Events run through mp_agg_event() for one made-up pid whose maps are the
 * given text, then every writer runs.
 *
 * Oracles beyond "does not crash": a stack never holds more in use than it
 * allocated, and the writers succeed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memprof/memprof_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "fuzz_memprof: %s:%d: %s\n", __FILE__, __LINE__,   \
                    #c);                                                       \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* a pid no test machine runs (pid_max is at most 2^22) */
#define FUZZ_PID 4194303u

static size_t take(const uint8_t **d, size_t *n, size_t want)
{
    size_t k = want < *n ? want : *n;
    *d += k;
    *n -= k;
    return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mp_agg g;
    uint16_t n = 0;
    const uint8_t *p = data;
    if (size >= 2)
        memcpy(&n, p, 2);
    take(&p, &size, 2);
    const uint8_t *maps = p;
    size_t nm = take(&p, &size, n);
    uint16_t m = 0;
    if (size >= 2)
        memcpy(&m, p, 2);
    take(&p, &size, 2);
    const uint8_t *lt = p;
    size_t nl = take(&p, &size, m);
    (void)mp_py_line_of(lt, nl, 1, nl / 2);

    mp_agg_init(&g, size & 1);
    mp_agg_maps(&g, FUZZ_PID, (const char *)maps, nm);
    while (size >= sizeof(struct mp_event)) {
        struct mp_event e;
        memcpy(&e, p, sizeof e);
        take(&p, &size, sizeof e);
        e.pid = FUZZ_PID;
        /* sizes below 2^40 (and pitch factors below 2^20): counters are
         * sums of sizes and must not wrap */
        e.arg[1] &= (1ULL << 40) - 1;
        e.arg[2] &= (1ULL << 20) - 1;
        e.arg[3] &= (1ULL << 20) - 1;
        e.out2 &= (1ULL << 20) - 1;
        mp_agg_event(&g, &e);
    }
    for (size_t i = 0; i < g.nstacks; i++) {
        FUZZ_ASSERT(g.stacks[i].inuse_b <= g.stacks[i].cum.alloc_b);
        FUZZ_ASSERT(g.stacks[i].inuse_n <= g.stacks[i].cum.alloc_n);
    }
    FILE *f = fopen("/dev/null", "w");
    FUZZ_ASSERT(f);
    for (int v = 0; v < 3; v++)
        FUZZ_ASSERT(!mp_out_folded(&g, v, v == 1, f));
    FUZZ_ASSERT(!mp_out_top(&g, 0, 10, f));
    fclose(f);
    FUZZ_ASSERT(!mp_out_pprof(&g, "/dev/null", 0, 1));
    mp_agg_release(&g);
    return 0;
}
