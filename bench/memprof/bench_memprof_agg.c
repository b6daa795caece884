/*
 * bench_memprof_agg.c - events/s the user-space side of gpufl memprof
 * sustains: N synthetic alloc/free events (24-frame stacks made of this
 * program's own code addresses, so symbolization is real, 512 distinct
 * stacks) through mp_agg_event(), then one folded + one pprof write.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "memprof/memprof_int.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000000;
    mp_agg g;
    mp_agg_init(&g, 1);
    struct mp_event e;
    memset(&e, 0, sizeof e);
    e.kind = MP_EV_CALL;
    e.pid = (unsigned)getpid();
    e.tid = e.pid;
    memcpy(e.comm, "bench", 6);
    e.nframes = 24;
    uintptr_t code[4] = { (uintptr_t)main, (uintptr_t)now,
                          (uintptr_t)mp_agg_event, (uintptr_t)mp_out_folded };
    double t0 = now();
    for (long i = 0; i < n; i++) {
        unsigned s = (unsigned)(i / 2) % 512;
        for (unsigned k = 0; k < e.nframes; k++)
            e.ips[k] = code[(s >> (k % 9)) & 3] + 16 + ((s + k) & 7);
        if (i % 2 == 0) {
            e.api = MP_cuMemAlloc_v2;
            e.arg[1] = 1 << 20;
            e.out = 0x7f0000000000ULL + (uint64_t)i * 4096;
        } else {
            e.api = MP_cuMemFree_v2;
            e.arg[0] = 0x7f0000000000ULL + (uint64_t)(i - 1) * 4096;
        }
        mp_agg_event(&g, &e);
    }
    double t1 = now();
    FILE *f = fopen("/dev/null", "w");
    mp_out_folded(&g, MEMPROF_VIEW_ALLOC, 0, f);
    fclose(f);
    mp_out_pprof(&g, "/dev/null", 0, 1);
    double t2 = now();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("events %ld stacks %zu events_per_s %.0f ns_per_event %.0f "
           "write_ms %.1f maxrss_kib %ld\n",
           n, g.nstacks, (double)n / (t1 - t0), (t1 - t0) * 1e9 / (double)n,
           (t2 - t1) * 1e3, ru.ru_maxrss);
    mp_agg_release(&g);
    return 0;
}
