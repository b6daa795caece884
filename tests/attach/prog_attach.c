/*
 * prog_attach.c - a "CUDA program" that never linked gpufl, for
 * `gpufl attach` (tests/attach/test_attach.py): linked against the fake
 * libcuda.so.1 only (tests/cupti/fake_cuda.c).
 *
 *   prog_attach SECONDS
 *
 * Prints "pid N", calls cuInit, then for SECONDS launches kernel
 * "attach_kern" with cuLaunchKernel every 2 ms from the main thread
 * (which sleeps in nanosleep in between: the thread gpufl attach stops is
 * usually inside that system call, whose restart is then tested too),
 * printing "tick N" every 100 launches and "done N" at the end.  A launch
 * that fails, or a nanosleep that returns early without EINTR, prints
 * "error ..." and exits 3; the output must stay this program's own.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int cuInit(unsigned flags);
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                   unsigned by, unsigned bz, unsigned smem, void *stream,
                   void **params, void **extra);

static const char kern[] = "attach_kern";

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? strtod(argv[1], NULL) : 5, t0;
    unsigned long n = 0;
    int rc;
    printf("pid %ld\n", (long)getpid());
    fflush(stdout);
    rc = cuInit(0);
    if (rc) {
        printf("error cuInit %d\n", rc);
        return 3;
    }
    t0 = now_s();
    while (now_s() - t0 < secs) {
        struct timespec d = { 0, 2000000L }, left;
        rc = cuLaunchKernel((void *)(uintptr_t)kern, 4, 1, 1, 128, 1, 1, 0,
                            NULL, NULL, NULL);
        if (rc) {
            printf("error launch %lu returned %d\n", n, rc);
            return 3;
        }
        if (++n % 100 == 0) {
            printf("tick %lu\n", n);
            fflush(stdout);
        }
        while (nanosleep(&d, &left)) {
            if (errno != EINTR) {
                printf("error nanosleep: %d\n", errno);
                return 3;
            }
            d = left;
        }
    }
    printf("done %lu\n", n);
    return 0;
}
