/*
 * bench_client.c - figures for libgpufl's hot path and collector.
 *
 * Prints, not asserts (the design targets beside each figure):
 *   1. app-thread cost per event (median of 1000-event rounds), 1 and 4
 *      threads: scope begin+end, kernel record       target <= 50 ns
 *   2. collector throughput: events per CPU-second of the collector thread
 *                                                     target >= 2M/s
 *   3. bytes per kernel line on disk                  target <= 256
 *   4. drops at a sustained 1M events/s for 10 s      target 0
 *
 *   bench_client [--quick] [--keep] [--only cost|collector|sustained] [DIR]
 *                                           (DIR: a folder under /tmp;
 *                                            removed at the end unless --keep)
 */
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gpufl/gpufl.h>
#include <gpufl/record.h>

#include "client/client_int.h"
#include "common/clock.h"

#define ROUND 1000
#define NAMES 12

static char dir[512];
static int quick, keep;
static const char *only; /* run one part: cost, collector, sustained */
static uint32_t names[NAMES], scope_name;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void start_session(uint32_t ring_events, const char *sub)
{
    gpufl_options o;
    char d[700];
    gpufl_options_init(&o);
    snprintf(d, sizeof d, "%s/%s", dir, sub);
    o.app = "bench";
    o.log_dir = d;
    o.engines = "host";
    o.ring_events = ring_events;
    o.rotate_bytes = 1ull << 30;
    o.min_free_bytes = 0;
    if (gpufl_init(&o) != GPUFL_OK) {
        fprintf(stderr, "bench: gpufl_init: %s\n", gpufl_last_error());
        exit(1);
    }
    for (int i = 0; i < NAMES; i++) {
        char n[160];
        snprintf(n, sizeof n,
                 "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tile%dx128x64_"
                 "warpgroupsize1x1x1_execute_kernel__5x_cublas",
                 64 + i);
        names[i] = gpufl_intern(n);
    }
    scope_name = gpufl_intern("train_step");
}

static void fill_kernel(gpufl_kernel *k, uint64_t i)
{
    uint64_t now = gpufl_now_ns();
    memset(k, 0, sizeof *k);
    k->sz = sizeof *k;
    k->name_id = names[i % NAMES];
    k->stream = 7;
    k->corr = (uint32_t)(1000000 + i);
    k->grid[0] = 132 + (uint32_t)(i % 4);
    k->grid[1] = k->grid[2] = 1;
    k->block[0] = 256;
    k->block[1] = k->block[2] = 1;
    k->regs = 128;
    k->smem_dynamic = 98304;
    k->start_ns = now;
    k->end_ns = now + 150000 + i % 1000;
    k->api_enter_ns = now - 20000;
    k->api_exit_ns = now - 15000;
    k->occupancy = 0.25f;
    k->limiters = GPUFL_LIMIT_REGS;
}

/* Wait (untimed) until the collector has room for another round. */
static void wait_drained(void)
{
    ring *r = client_thread_ring();
    while (r &&
           atomic_load(&r->head) - atomic_load(&r->tail) > (r->mask + 1) / 2) {
        struct timespec ts = { 0, 50000 };
        nanosleep(&ts, NULL);
    }
}

typedef struct cost_arg {
    int kind; /* 0 scope pair, 1 kernel */
    int rounds;
    uint64_t *ns; /* per round: ns per event */
} cost_arg;

static void *cost_thread(void *p)
{
    cost_arg *a = p;
    gpufl_kernel k;
    fill_kernel(&k, 0);
    for (int r = 0; r < a->rounds; r++) {
        uint64_t t0, t1;
        wait_drained();
        t0 = clock_mono_ns();
        if (a->kind == 0) {
            for (int i = 0; i < ROUND / 2; i++)
                gpufl_scope_end(gpufl_scope_begin("train_step"));
        } else {
            for (int i = 0; i < ROUND; i++) {
                k.corr++;
                gpufl_record_kernel(&k);
            }
        }
        t1 = clock_mono_ns();
        a->ns[r] = (t1 - t0) / ROUND;
    }
    return NULL;
}

static uint64_t lost_total(void)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < client_ring_slots(); i++) {
        ring *r = client_ring_at(i);
        for (int s = 0; r && s < ST_COUNT; s++)
            n += atomic_load(&r->drop_pub[s]);
    }
    return n;
}

static void bench_cost(int kind, int threads)
{
    pthread_t th[8];
    cost_arg a[8];
    int rounds = quick ? 200 : 2000;
    uint64_t *all = calloc((size_t)(rounds * threads), sizeof(uint64_t));
    uint64_t lost0;
    start_session(1u << 16, kind ? "cost-kernel" : "cost-scope");
    lost0 = lost_total();
    for (int t = 0; t < threads; t++) {
        a[t].kind = kind;
        a[t].rounds = rounds;
        a[t].ns = all + (size_t)t * (size_t)rounds;
        pthread_create(&th[t], NULL, cost_thread, &a[t]);
    }
    for (int t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    qsort(all, (size_t)(rounds * threads), sizeof(uint64_t), cmp_u64);
    printf("  %-22s %d thread%s: median %3llu ns/event, p90 %3llu ns "
           "(drops %llu)   target <= 50 ns\n",
           kind ? "kernel record" : "scope begin+end (per event)", threads,
           threads > 1 ? "s" : " ",
           (unsigned long long)all[(size_t)(rounds * threads) / 2],
           (unsigned long long)all[(size_t)(rounds * threads) * 9 / 10],
           (unsigned long long)(lost_total() - lost0));
    gpufl_shutdown();
    free(all);
}

static uint64_t thread_cpu_ns(pthread_t t)
{
    clockid_t c;
    struct timespec ts;
    if (pthread_getcpuclockid(t, &c) || clock_gettime(c, &ts))
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? (long)st.st_size : 0;
}

/* Mean length of kernel lines in a device log. */
static double kernel_line_bytes(const char *path, uint64_t *n)
{
    FILE *f = fopen(path, "r");
    static char line[65536];
    uint64_t bytes = 0, count = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "\"type\":\"kernel\"")) {
            bytes += strlen(line);
            count++;
        }
    fclose(f);
    *n = count;
    return count ? (double)bytes / (double)count : 0;
}

static void bench_collector(void)
{
    uint64_t n = quick ? 2000000 : 8000000, cpu0, cpu1, w0, w1, lines = 0;
    char path[CLIENT_PATH_MAX + 16];
    gpufl_kernel k;
    double avg;
    start_session(1u << 22, "collector");
    fill_kernel(&k, 0);
    cpu0 = thread_cpu_ns(g_client.collector);
    w0 = clock_mono_ns();
    for (uint64_t i = 0; i < n; i++) {
        k.corr++;
        k.grid[0] = 132 + (uint32_t)(i % 4);
        k.name_id = names[i % NAMES];
        while (gpufl_record_kernel(&k) == GPUFL_EFULL) {
            struct timespec ts = { 0, 100000 };
            nanosleep(&ts, NULL);
        }
    }
    gpufl_flush(600000);
    w1 = clock_mono_ns();
    cpu1 = thread_cpu_ns(g_client.collector);
    snprintf(path, sizeof path, "%s.device.log", gpufl_log_prefix());
    if (g_client.cfg.ring) {
        /* the flight recorder: how long writing its full window takes */
        uint64_t h0 = trigger_handled(TRG_CTL), d0 = clock_mono_ns();
        collector_info ci;
        trigger_post(TRG_CTL, "bench_client");
        while (trigger_handled(TRG_CTL) == h0) {
            struct timespec ts = { 0, 1000000 };
            nanosleep(&ts, NULL);
        }
        collector_get_info(&ci);
        snprintf(path, sizeof path, "%s.device.log", ci.prefix);
        printf("  ring dump: the window written in %.2f s (%.1f MB device "
               "file, with its live part until shutdown)\n",
               (double)(clock_mono_ns() - d0) / 1e9,
               (double)file_size(path) / 1e6);
    }
    gpufl_shutdown();
    avg = kernel_line_bytes(path, &lines);
    printf("  collector: %llu kernel events in %.2f s wall, %.2f CPU-s: "
           "%.2fM events per collector CPU-second   target >= 2M/s\n",
           (unsigned long long)n, (double)(w1 - w0) / 1e9,
           (double)(cpu1 - cpu0) / 1e9,
           (double)n / ((double)(cpu1 - cpu0) / 1e9) / 1e6);
    printf("  bytes: %.1f bytes per kernel line (%llu lines, file %.1f MB)   "
           "target <= 256\n",
           avg, (unsigned long long)lines, (double)file_size(path) / 1e6);
}

static void bench_sustained(void)
{
    int secs = quick ? 3 : 10;
    uint64_t per_ms = 1000, sent = 0, lost0, cpu0, cpu1;
    uint64_t t0, next;
    gpufl_kernel k;
    struct rusage ru;
    start_session(8192, "sustained");
    fill_kernel(&k, 0);
    lost0 = lost_total();
    cpu0 = thread_cpu_ns(g_client.collector);
    t0 = next = clock_mono_ns();
    /* 1,000 events every millisecond: 8 kernels per scope pair, the mix of
     * a launch-bound training loop */
    while (clock_mono_ns() - t0 < (uint64_t)secs * 1000000000ull) {
        for (uint64_t i = 0; i < per_ms; i += 10) {
            uint64_t tok = gpufl_scope_begin_id(scope_name);
            for (int j = 0; j < 8; j++) {
                k.corr++;
                k.name_id = names[(sent + (uint64_t)j) % NAMES];
                gpufl_record_kernel(&k);
            }
            gpufl_scope_end(tok);
            sent += 10;
        }
        next += 1000000;
        while (clock_mono_ns() < next)
            ;
    }
    gpufl_flush(60000);
    cpu1 = thread_cpu_ns(g_client.collector);
    printf("  sustained %.2fM events/s for %d s: %llu events, %llu dropped, "
           "collector %.0f%% of a core   target 0 drops\n",
           (double)sent / secs / 1e6, secs, (unsigned long long)sent,
           (unsigned long long)(lost_total() - lost0),
           (double)(cpu1 - cpu0) / 1e9 / secs * 100.0);
    gpufl_shutdown();
    getrusage(RUSAGE_SELF, &ru);
    printf("  peak RSS of this benchmark process: %.1f MB\n",
           (double)ru.ru_maxrss / 1024.0);
}

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--keep"))
            keep = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else
            snprintf(dir, sizeof dir, "%s", argv[i]);
    }
    if (!dir[0])
        snprintf(dir, sizeof dir, "/tmp/gpufl-bench-client.%d", (int)getpid());
    printf("bench_client: libgpufl %s, %ld CPUs, logs in %s%s, "
           "GPUFL_RECORD=%s\n",
           gpufl_version(), sysconf(_SC_NPROCESSORS_ONLN), dir,
           quick ? " (quick)" : "",
           getenv("GPUFL_RECORD") ? getenv("GPUFL_RECORD")
                                  : "file (ring:256MiB: the flight recorder)");
    if (!only || !strcmp(only, "cost")) {
        printf("app-thread cost\n");
        bench_cost(0, 1);
        bench_cost(0, 4);
        bench_cost(1, 1);
        bench_cost(1, 4);
    }
    if (!only || !strcmp(only, "collector")) {
        printf("collector\n");
        bench_collector();
    }
    if (!only || !strcmp(only, "sustained")) {
        printf("sustained load\n");
        bench_sustained();
    }
    /* the collector phase writes a few GB: leave nothing behind */
    if (!keep)
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
