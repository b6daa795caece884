/*
 * prog_cupti.c - a "CUDA program" for the cupti engine's tests, linked
 * against the fake libcuda.so.1 (tests/cupti/fake_cuda.c).
 *
 *   prog_cupti THREADS LAUNCHES [HOLD_MS]
 *
 * Built twice: prog_cupti calls gpufl_init()/gpufl_shutdown() itself
 * (engines from GPUFL_ENGINES); prog_cupti_plain (NO_GPUFL) never calls
 * gpufl and is profiled through injection (gpufl run).  Thread t's launch i
 * uses API variant i % 6 (see launch_one) with grid (i+1, t+1), block 128,
 * dynamic shared memory (i % 3) KiB and stream t+1, inside the scopes
 * outer/inner; each thread ends with one launch that fails.  Then
 * cuCtxSynchronize() makes the fake CUPTI deliver its scripted records.
 * HOLD_MS keeps the process alive before that (periodic-flush tests).
 * PROG_FORK=1: a forked child launches and exits first (capture is off
 * there: it must neither write logs nor hang).  PROG_TWICE=1: after the
 * threads, the main thread launches kern_v0 twice in one scope "twice".
 * PROG_SESSIONS=1: a second session follows, one launch in scope "again".
 */
#ifndef NO_GPUFL
#include <gpufl/gpufl.h>
#endif

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct launch_config {
    unsigned gx, gy, gz, bx, by, bz, smem;
    void *stream, *attrs;
    unsigned nattrs;
} launch_config;

int cuInit(unsigned flags);
int cuCtxSynchronize(void);
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                   unsigned by, unsigned bz, unsigned smem, void *stream,
                   void **params, void **extra);
int cuLaunchKernelEx(const launch_config *c, void *f, void **params,
                     void **extra);
int fakecuda_rt_launch(uint32_t rt_cbid, uint32_t drv_cbid, const char *f,
                       const unsigned grid[3], const unsigned block[3],
                       unsigned smem, void *stream, int fail);

static unsigned long n_launch;
static const char *const names[6] = { "kern_v0", "kern_v1", "kern_v2",
                                      "kern_v3", "kern_v4", "kern_v5" };

/* Exported (the program links with -rdynamic) so stacks name it. */
int launch_one(unsigned t, unsigned long i);
int launch_one(unsigned t, unsigned long i)
{
    unsigned g[3] = { (unsigned)i + 1, t + 1, 1 }, b[3] = { 128, 1, 1 };
    unsigned smem = (unsigned)(i % 3) * 1024;
    void *st = (void *)(uintptr_t)(t + 1);
    const char *f = names[i % 6];
    launch_config c = { g[0], g[1], g[2], b[0], b[1], b[2], smem, st, 0, 0 };
    switch (i % 6) {
    case 0: return fakecuda_rt_launch(505, 307, f, g, b, smem, st, 0);
    case 1: return fakecuda_rt_launch(211, 307, f, g, b, smem, st, 0);
    case 2:
        return cuLaunchKernel((void *)(uintptr_t)f, g[0], g[1], g[2], b[0],
                              b[1], b[2], smem, st, NULL, NULL);
    case 3: return cuLaunchKernelEx(&c, (void *)(uintptr_t)f, NULL, NULL);
    case 4: return fakecuda_rt_launch(269, 477, f, g, b, smem, st, 0);
    default: return fakecuda_rt_launch(430, 652, f, g, b, smem, st, 0);
    }
}

static void *worker(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    unsigned g[3] = { 1, 1, 1 }, b[3] = { 32, 1, 1 };
    for (unsigned long i = 0; i < n_launch; i++) {
#ifndef NO_GPUFL
        GFL_SCOPE("outer")
        {
            GFL_SCOPE("inner")
            {
                launch_one(t, i);
            }
        }
#else
        launch_one(t, i);
#endif
    }
    /* 2 = cudaErrorMemoryAllocation: a failed launch has no record */
    fakecuda_rt_launch(505, 307, "kern_fail", g, b, 0, NULL, 2);
    return NULL;
}

int main(int argc, char **argv)
{
    unsigned threads = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 2;
    pthread_t th[64];
    int rc;
    n_launch = argc > 2 ? strtoul(argv[2], NULL, 10) : 10;
    if (threads > 64)
        threads = 64;
#ifndef NO_GPUFL
    rc = gpufl_init(NULL);
    printf("gpufl_init: %d\n", rc);
#endif
    rc = cuInit(0);
    printf("cuInit: %d\n", rc);
#ifndef NO_GPUFL
    if (getenv("PROG_FORK")) {
        pid_t pid = fork();
        if (pid == 0) {
            /* _exit: the sanitizers' leak check misreads a forked child's
             * missing threads; the launch must not be captured here */
            launch_one(0, 0);
            _exit(gpufl_active() ? 3 : 0);
        }
        if (pid > 0) {
            int st = 0;
            waitpid(pid, &st, 0);
            printf("child: %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        }
    }
#endif
    for (unsigned t = 0; t < threads; t++)
        pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)t);
    for (unsigned t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
#ifndef NO_GPUFL
    if (getenv("PROG_TWICE")) {
        /* one scope, kern_v0 twice: per-scope sums (sass, pcsamp) */
        GFL_SCOPE("twice")
        {
            launch_one(0, 0);
            launch_one(0, 6);
        }
    }
#endif
    if (argc > 3) {
        unsigned long ms = strtoul(argv[3], NULL, 10);
        struct timespec ts = { (time_t)(ms / 1000),
                               (long)(ms % 1000) * 1000000L };
        printf("holding\n");
        fflush(stdout);
        nanosleep(&ts, NULL);
    }
    cuCtxSynchronize();
#ifndef NO_GPUFL
    gpufl_shutdown();
    if (getenv("PROG_SESSIONS")) { /* a second session, same process */
        rc = gpufl_init(NULL);
        printf("second gpufl_init: %d\n", rc);
        GFL_SCOPE("again")
        {
            launch_one(0, 0);
        }
        gpufl_shutdown();
    }
#endif
    printf("done\n");
    return 0;
}
