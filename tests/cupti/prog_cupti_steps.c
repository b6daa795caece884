/*
 * prog_cupti_steps.c - a "CUDA program" on the fake driver for the flight
 * recorder's and the control socket's tests with the fake CUPTI
 * (tests/cupti/test_cupti_ring.py).  It calls gpufl_init() itself (options
 * from GPUFL_*), then runs its arguments as steps:
 *
 *   launch:MS     a launch of kern_a (runtime __cudaLaunchKernel around
 *                 cuLaunchKernel) in a scope "step", every ms for MS ms
 *   launches:N    N such launches, a ms apart, however long they take (a
 *                 count a test can rely on where launch:MS's depends on
 *                 how loaded the machine is)
 *   fail:CODE     a launch of kern_fail that returns CODE
 *   alloc:BYTES   cudaMalloc (around cuMemAlloc_v2); 1 TiB or more fails
 *                 with out of memory
 *   dalloc:BYTES  cuMemAlloc_v2 alone
 *   bench:N       N launches of kern_a back to back (no scope), then
 *                 "LAUNCH_NS x": the thread's CPU time per launch (the
 *                 fake driver's own work, plus what gpufl adds; bench/
 *                 client/bench_ring.sh compares the modes)
 *   say:TEXT      a marker TEXT, then TEXT on stdout (the test's cue)
 *   wait:PATH     wait (at most 30 s) until PATH exists
 *   flush | sleep:MS | pid | exit:N
 */
#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int cuInit(unsigned flags);
int cuMemAlloc_v2(unsigned long long *dptr, size_t bytes);
int fakecuda_rt_launch(uint32_t rt_cbid, uint32_t drv_cbid, const char *f,
                       const unsigned grid[3], const unsigned block[3],
                       unsigned smem, void *stream, int fail);
int fakecuda_rt_malloc(size_t bytes);

static void sleep_ms(unsigned long ms)
{
    struct timespec t = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
}

static uint64_t mono_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
    unsigned g[3] = { 1, 1, 1 }, b[3] = { 128, 1, 1 };
    unsigned long n = 0;
    int rc = gpufl_init(NULL);
    if (rc) {
        fprintf(stderr, "gpufl_init: %s: %s\n", gpufl_strerror(rc),
                gpufl_last_error());
        return 1;
    }
    if (cuInit(0) != 0)
        return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "launch:", 7) || !strncmp(a, "launches:", 9)) {
            int counted = !strncmp(a, "launches:", 9);
            unsigned long v = strtoul(a + (counted ? 9 : 7), NULL, 10);
            uint64_t end = mono_ms() + v;
            for (unsigned long j = 0; counted ? j < v : mono_ms() < end; j++) {
                GFL_SCOPE("step")
                {
                    g[0] = (unsigned)(++n % 1000 + 1);
                    fakecuda_rt_launch(505, 307, "kern_a", g, b, 0,
                                       (void *)(uintptr_t)1, 0);
                }
                sleep_ms(1);
            }
        } else if (!strncmp(a, "bench:", 6)) {
            unsigned long k = strtoul(a + 6, NULL, 10);
            struct timespec t0, t1;
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
            for (unsigned long j = 0; j < k; j++)
                fakecuda_rt_launch(505, 307, "kern_a", g, b, 0,
                                   (void *)(uintptr_t)1, 0);
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
            n += k;
            printf("LAUNCH_NS %.1f\n",
                   k ? ((double)(t1.tv_sec - t0.tv_sec) * 1e9 +
                        (double)(t1.tv_nsec - t0.tv_nsec)) /
                           (double)k
                     : 0.0);
            fflush(stdout);
        } else if (!strncmp(a, "fail:", 5)) {
            fakecuda_rt_launch(505, 307, "kern_fail", g, b, 0, NULL,
                               (int)strtol(a + 5, NULL, 10));
        } else if (!strncmp(a, "alloc:", 6)) {
            fakecuda_rt_malloc((size_t)strtoull(a + 6, NULL, 10));
        } else if (!strncmp(a, "dalloc:", 7)) {
            unsigned long long p;
            cuMemAlloc_v2(&p, (size_t)strtoull(a + 7, NULL, 10));
        } else if (!strncmp(a, "say:", 4)) {
            gpufl_marker(a + 4);
            printf("%s\n", a + 4);
            fflush(stdout);
        } else if (!strncmp(a, "wait:", 5)) {
            for (int t = 0; t < 3000 && access(a + 5, F_OK) != 0; t++)
                sleep_ms(10);
        } else if (!strcmp(a, "flush")) {
            gpufl_flush(5000);
        } else if (!strncmp(a, "sleep:", 6)) {
            sleep_ms(strtoul(a + 6, NULL, 10));
        } else if (!strcmp(a, "pid")) {
            printf("pid %d\n", (int)getpid());
            fflush(stdout);
        } else if (!strncmp(a, "exit:", 5)) {
            exit((int)strtol(a + 5, NULL, 10));
        } else {
            fprintf(stderr, "prog_cupti_steps: unknown step %s\n", a);
            return 2;
        }
    }
    gpufl_shutdown();
    printf("launched %lu\n", n);
    return 0;
}
