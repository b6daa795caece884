/*
 * test_idle_gpu.c - GPU verdicts from scripted per-second NVML traces
 * replayed by the fake libnvidia-ml.so.1 (tests/gpu/fake_nvml.c),
 * through the real "nvml" source: the seed's five states on an A10G (no
 * GPM: power proxy) and on an H100 (GPM SM activity), bursty use,
 * failed and stale reads, a lost GPU, the R535 32-byte process stride.
 * Time is a fake clock: one tick = one second.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "idle/idle.h"
#include "test.h"

#ifndef FAKE_NVML_FULL
#define FAKE_NVML_FULL "/tmp/fake/nvml-full/libnvidia-ml.so.1"
#endif

#define T0 1795994980000000000ull

static char g_script[512];

/* A10G and H100 defaults, then the trace. */
static const char *hdr =
    "dev 0 name=\"NVIDIA A10G\" uuid=GPU-a10g pci=00000000:00:1E.0 "
    "mem_total=24146608128 power_limit=300000 gpm=0 fan=30\n"
    "dev 1 name=\"NVIDIA H100 80GB HBM3\" uuid=GPU-h100 "
    "pci=00000000:3B:00.0 mem_total=85520809984 power_limit=700000 "
    "gpm=1\n";

typedef struct run {
    idle_cfg cfg;
    idle_src *src;
    idle_gpu g[2];
    void *fake;
    void (*set_tick)(int);
} run;

static int run_open(run *r, const char *trace, const char *global)
{
    char why[256];
    FILE *f;
    void *p;
    memset(r, 0, sizeof *r);
    idle_cfg_init(&r->cfg);
    r->cfg.window_s = 10;
    r->cfg.phantom_hold_s = 20;
    snprintf(g_script, sizeof g_script, "%s/idle_trace_%d.txt",
             getenv("GPUFL_TEST_TMP") ? getenv("GPUFL_TEST_TMP") : "/tmp",
             (int)getpid());
    f = fopen(g_script, "w");
    if (!f)
        return -1;
    fprintf(f, "global count=2 %s\n%s%s", global ? global : "", hdr, trace);
    fclose(f);
    setenv("FAKE_NVML_SCRIPT", g_script, 1);
    if (idle_src_open(&r->src, FAKE_NVML_FULL, NULL, 0, why, sizeof why)) {
        fprintf(stderr, "open: %s\n", why);
        return -1;
    }
    r->fake = dlopen(FAKE_NVML_FULL, RTLD_NOW | RTLD_NOLOAD);
    if (!r->fake)
        return -1;
    p = dlsym(r->fake, "fake_nvml_set_tick");
    memcpy(&r->set_tick, &p, sizeof p);
    for (int i = 0; i < 2; i++) {
        gpu_device d[2];
        idle_src_devices(r->src, d, 2);
        if (idle_gpu_init(&r->g[i], &r->cfg, &d[i]))
            return -1;
    }
    return r->set_tick ? 0 : -1;
}

/* Replays ticks [from, to); GPM needs samples >= 100 ms apart in real
 * time, so gpm runs sleep between ticks. */
static void run_ticks(run *r, int from, int to, int gpm)
{
    gpu_sample s[2];
    for (int t = from; t < to; t++) {
        int n = 0;
        uint64_t now = T0 + (uint64_t)t * IDLE_NS;
        r->set_tick(t);
        if (gpm)
            usleep(105000);
        if (idle_src_sample(r->src, s, 2, &n))
            n = 0;
        for (int i = 0; i < 2; i++) {
            idle_gpu_push(&r->g[i], i < n ? &s[i] : NULL, now);
            idle_gpu_eval(&r->g[i], &r->cfg, now);
        }
    }
}

static void run_close(run *r)
{
    for (int i = 0; i < 2; i++)
        idle_gpu_release(&r->g[i]);
    idle_src_close(r->src);
    if (r->fake)
        dlclose(r->fake);
    unlink(g_script);
}

static int has_reason(const idle_gpu *g, const char *word)
{
    for (int i = 0; i < g->nreasons; i++)
        if (strstr(g->reasons[i], word))
            return 1;
    return 0;
}

static void dump(const idle_gpu *g)
{
    fprintf(stderr, "  gpu %u: %s\n", g->info.id,
            idle_gpu_state_name(g->state));
    for (int i = 0; i < g->nreasons; i++)
        fprintf(stderr, "    - %s\n", g->reasons[i]);
}

#define EXPECT(gpu, st)                                                        \
    do {                                                                       \
        CHECK((gpu).state == (st));                                            \
        if ((gpu).state != (st))                                               \
            dump(&(gpu));                                                      \
    } while (0)

/* The seed's table, A10G (no GPM, power proxy) on dev 0; dev 1 idle. */
static void test_seed_a10g(void)
{
    static const struct {
        const char *row;
        int want;
    } rows[] = {
        { "dev 0 util=0 mem_used=0 power=24300 procs=\n", IG_EMPTY },
        { "dev 0 util=0 mem_used=20316160000 power=89100 "
          "procs=4101:20316160000\n",
          IG_HELD },
        { "dev 0 util=100 mem_used=316669952 power=90000 "
          "procs=4101:316669952\n",
          IG_BUSY_LOW_OCC },
        { "dev 0 util=100 mem_used=891289600 power=299200 "
          "procs=4101:891289600\n",
          IG_BUSY },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        run r;
        char trace[512];
        /* cc 8.6: the driver's detail list answers NOT_SUPPORTED for an
         * A10G, the process list must still come (from _v3) */
        snprintf(trace, sizeof trace,
                 "dev 0 cc=8.6\n%sdev 1 util=0 mem_used=0 procs=\n",
                 rows[i].row);
        REQUIRE(run_open(&r, trace, NULL) == 0);
        run_ticks(&r, 0, 12, 0);
        EXPECT(r.g[0], rows[i].want);
        CHECK(!r.g[0].sig.has_sm); /* A10G: no GPM */
        EXPECT(r.g[1], IG_EMPTY);
        if (rows[i].want == IG_BUSY_LOW_OCC)
            CHECK(has_reason(&r.g[0], "power proxy"));
        run_close(&r);
    }
}

/* phantom: 100 % with no process and no memory; UNKNOWN until held for
 * phantom_hold_s, then PHANTOM, and never BUSY. */
static void test_phantom(void)
{
    run r;
    REQUIRE(run_open(&r,
                     "dev 0 util=100 mem_used=0 power=118000 pstate=0 "
                     "procs=\ndev 1 util=0 mem_used=0 procs=\n",
                     NULL) == 0);
    run_ticks(&r, 0, 12, 0);
    EXPECT(r.g[0], IG_UNKNOWN);
    CHECK(has_reason(&r.g[0], "PHANTOM after"));
    run_ticks(&r, 12, 25, 0);
    EXPECT(r.g[0], IG_PHANTOM);
    CHECK(has_reason(&r.g[0], "no process"));
    /* a process appears: no longer phantom */
    run_close(&r);
}

/* H100 with GPM: one_thread vs matmul is told by SM activity. */
static void test_seed_h100_gpm(void)
{
    run r;
    REQUIRE(run_open(&r,
                     "dev 0 util=0 mem_used=0 procs=\n"
                     "dev 1 util=100 mem_used=316669952 power=120000 "
                     "gpm_sm=1.2 procs=77:316669952\n"
                     "sample 6 dev 1 util=100 gpm_sm=98.4 power=690000\n",
                     NULL) == 0);
    run_ticks(&r, 0, 6, 1);
    EXPECT(r.g[1], IG_BUSY_LOW_OCC);
    CHECK(r.g[1].sig.has_sm);
    CHECK(r.g[1].sig.sm_mean < 0.05);
    run_ticks(&r, 6, 30, 0); /* GPM reads skipped: too close */
    run_ticks(&r, 30, 42, 1);
    EXPECT(r.g[1], IG_BUSY);
    CHECK(r.g[1].sig.sm_mean > 0.5);
    run_close(&r);
}

/* a notebook: a 2 s cell every 10 s, model resident */
static void test_bursty(void)
{
    run r;
    char trace[4096];
    size_t k = 0;
    k += (size_t)snprintf(trace + k, sizeof trace - k,
                          "dev 0 util=0 mem_used=6442450944 power=90000 "
                          "procs=900:6442450944\ndev 1 procs=\n");
    for (int t = 0; t < 40; t += 10)
        k += (size_t)snprintf(trace + k, sizeof trace - k,
                              "sample %d dev 0 util=95 power=250000\n"
                              "sample %d dev 0 util=0 power=90000\n",
                              t, t + 2);
    REQUIRE(run_open(&r, trace, NULL) == 0);
    run_ticks(&r, 0, 35, 0);
    EXPECT(r.g[0], IG_BURSTY);
    CHECK(r.g[0].sig.duty > 0 && r.g[0].sig.duty < 0.5);
    run_close(&r);
}

/* failed utilisation reads, then a lost GPU, then recovery */
static void test_failed_reads(void)
{
    run r;
    REQUIRE(run_open(&r,
                     "dev 0 util=100 mem_used=891289600 power=299200 "
                     "procs=1:891289600\ndev 1 procs=\n"
                     "sample 12 dev 0 fail=util:999\n"
                     "sample 20 dev 0 ok=util lost=1\n"
                     "sample 26 dev 0 lost=0\n",
                     NULL) == 0);
    run_ticks(&r, 0, 12, 0);
    EXPECT(r.g[0], IG_BUSY);
    run_ticks(&r, 12, 14, 0);
    EXPECT(r.g[0], IG_UNKNOWN);
    CHECK(has_reason(&r.g[0], "read failed"));
    run_ticks(&r, 14, 24, 0);
    EXPECT(r.g[0], IG_UNKNOWN);
    run_ticks(&r, 26, 40, 0);
    EXPECT(r.g[0], IG_BUSY);
    run_close(&r);
}

/* no sample for a while: stale */
static void test_stale(void)
{
    run r;
    REQUIRE(run_open(&r,
                     "dev 0 util=100 mem_used=891289600 power=299200 "
                     "procs=1:891289600\ndev 1 procs=\n",
                     NULL) == 0);
    run_ticks(&r, 0, 12, 0);
    EXPECT(r.g[0], IG_BUSY);
    idle_gpu_eval(&r.g[0], &r.cfg, T0 + 30 * IDLE_NS);
    EXPECT(r.g[0], IG_UNKNOWN);
    CHECK(has_reason(&r.g[0], "stale"));
    run_close(&r);
}

/* R535 drivers wrote 32-byte _v3 entries: the probe keeps pids right */
static void test_stride32(void)
{
    run r;
    REQUIRE(run_open(&r,
                     "dev 0 util=0 mem_used=20316160000 power=89100 "
                     "procs=4101:10000000000,4102:10316160000\n"
                     "dev 1 procs=\n",
                     "stride=32 fnerr=nvmlDeviceGetRunningProcessDetailList:"
                     "13") == 0);
    run_ticks(&r, 0, 12, 0);
    EXPECT(r.g[0], IG_HELD);
    CHECK(r.g[0].sig.procs == 2);
    CHECK(r.g[0].last.nprocs == 2 && r.g[0].last.procs[0].pid == 4101 &&
          r.g[0].last.procs[1].pid == 4102);
    run_close(&r);
}

int main(void)
{
    RUN(test_seed_a10g);
    RUN(test_phantom);
    RUN(test_seed_h100_gpm);
    RUN(test_bursty);
    RUN(test_failed_reads);
    RUN(test_stale);
    RUN(test_stride32);
    TEST_DONE();
}
