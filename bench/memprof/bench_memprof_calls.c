/*
 * bench_memprof_calls.c - N cuMemAlloc_v2 + cuMemFree_v2 pairs on the fake
 * driver; prints the ns per API call.  Run bare, under
 * `gpufl memprof --preload --`, and with `gpufl memprof --pid` attached
 * (bench_memprof.py does all three).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int cuMemAlloc_v2(unsigned long long *dptr, size_t n);
int cuMemFree_v2(unsigned long long p);

__attribute__((noinline)) static void pair(void)
{
    unsigned long long p;
    if (!cuMemAlloc_v2(&p, 1 << 20))
        cuMemFree_v2(p);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;
    /* GO_FILE: wait until it exists (the profiler attaches meanwhile) */
    if (argc > 2)
        while (access(argv[2], F_OK))
            usleep(10000);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++)
        pair();
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns =
        (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
    printf("calls %ld ns_per_call %.1f\n", 2 * n, ns / (2.0 * (double)n));
    return 0;
}
