/*
 * prog_workload.c - a small program linked with the shared libgpufl, used
 * by the integration tests.  Options come from the GPUFL_* environment;
 * the workload from the arguments:
 *
 *   prog_workload THREADS KERNELS [hold_ms] [no_shutdown|fork]
 *
 * Each thread t runs KERNELS iterations of
 *   GFL_SCOPE("outer") { GFL_SCOPE("inner") { kernel; every 10th: memcpy } }
 * with fields derived from (t, i) by the formulas check_logs.py repeats, so
 * the checker can compare every field of every event.  hold_ms keeps the
 * process alive afterwards (for kill -9 tests); no_shutdown skips
 * gpufl_shutdown() so the atexit path is exercised; fork makes a child that
 * records (and must write nothing) before the workload starts.
 */
#include <gpufl/gpufl.h>
#include <gpufl/record.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned long n_kernels;
static uint32_t names[5];

static void *worker(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    for (unsigned long i = 0; i < n_kernels; i++) {
        GFL_SCOPE("outer")
        {
            GFL_SCOPE("inner")
            {
                gpufl_kernel k;
                uint64_t now = gpufl_now_ns();
                memset(&k, 0, sizeof k);
                k.sz = sizeof k;
                k.name_id = names[i % 5];
                k.device = t % 2;
                k.stream = 100 + t;
                k.corr = (uint32_t)(t * 1000000 + i + 1);
                k.grid[0] = (uint32_t)(i % 7 + 1);
                k.grid[1] = 2;
                k.grid[2] = 1;
                k.block[0] = 128;
                k.block[1] = 1;
                k.block[2] = 1;
                k.regs = (uint32_t)(32 + i % 16);
                k.smem_dynamic = (uint32_t)(i % 3 * 1024);
                k.start_ns = now;
                k.end_ns = now + 1000 + i;
                k.api_enter_ns = now - 5000;
                k.api_exit_ns = now - 1000;
                k.occupancy = 0.5f;
                k.limiters = GPUFL_LIMIT_REGS;
                gpufl_record_kernel(&k);
                if (i % 10 == 0) {
                    gpufl_memcpy m;
                    memset(&m, 0, sizeof m);
                    m.sz = sizeof m;
                    m.kind = GPUFL_COPY_HTOD;
                    m.device = t % 2;
                    m.stream = 100 + t;
                    m.bytes = (uint64_t)(i + 1) * 100;
                    m.start_ns = now;
                    m.end_ns = now + 2000;
                    /* the copy's API call: on every other copy made by
                     * a thread the source names (4242), else this one */
                    m.api_enter_ns = now - 3000;
                    m.api_exit_ns = now - 2000;
                    m.api_tid = i % 20 == 10 ? 4242 : 0;
                    gpufl_record_memcpy(&m);
                }
            }
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    unsigned threads = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1;
    unsigned long hold_ms = argc > 3 ? strtoul(argv[3], NULL, 10) : 0;
    int no_shutdown = argc > 4 && !strcmp(argv[4], "no_shutdown");
    int do_fork = argc > 4 && !strcmp(argv[4], "fork");
    pthread_t th[64];
    gpufl_counter *c;
    int rc;

    n_kernels = argc > 2 ? strtoul(argv[2], NULL, 10) : 100;
    if (threads > 64)
        threads = 64;
    rc = gpufl_init(NULL);
    if (rc) {
        fprintf(stderr, "prog_workload: gpufl_init: %s: %s\n",
                gpufl_strerror(rc), gpufl_last_error());
        /* a disabled library is not a failure of the program */
        printf("disabled\n");
        return rc == GPUFL_EDISABLED ? 0 : 1;
    }
    printf("%s\n", gpufl_log_prefix());
    fflush(stdout);
    for (int i = 0; i < 5; i++) {
        char n[32];
        snprintf(n, sizeof n, "kernel_%d<float>(float*, int)", i);
        names[i] = gpufl_intern(n);
    }
    c = gpufl_counter_get("iterations");
    if (do_fork) {
        /* the child must neither write into our files nor hang */
        pid_t pid = fork();
        if (pid == 0) {
            for (int i = 0; i < 1000; i++)
                gpufl_scope_end(gpufl_scope_begin("child"));
            gpufl_marker("child");
            gpufl_shutdown();
            _exit(gpufl_active() ? 3 : 0);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "prog_workload: child failed (%d)\n", st);
            return 1;
        }
    }
    gpufl_marker("start \"quoted\" \xC3\xA9");
    for (unsigned t = 0; t < threads; t++)
        pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)t);
    for (unsigned t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    gpufl_counter_add(c, (int64_t)(threads * n_kernels));
    gpufl_marker("end");
    if (hold_ms) {
        gpufl_flush(10000);
        struct timespec ts = { (time_t)(hold_ms / 1000),
                               (long)(hold_ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
    }
    if (!no_shutdown)
        gpufl_shutdown();
    return 0;
}
