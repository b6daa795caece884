/*
 * test_idle_gpu.c - GPU verdicts from scripted per-second NVML traces
 * replayed by the fake libnvidia-ml.so.1 (tests/gpu/fake_nvml.c),
 * through the real "nvml" source: the seed's five states on an A10G (no
 * GPM: power proxy) and on an H100 (GPM SM activity), bursty use,
 * failed and stale reads, a lost GPU, the R535 32-byte process stride;
 * and waste accounting: STUCK, ALLOCATED_UNUSED from a kubelet checkpoint
 * and a Slurm job cgroup, leaked memory named by its /dev/nvidia* holder,
 * busy seconds per process from NVML's per-process samples.
 * Time is a fake clock: one tick = one second.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/buf.h"
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

#define RUN_GPUS 8 /* GPUs, or MIG instances */

typedef struct run {
    idle_cfg cfg;
    idle_src *src;
    idle_gpu g[RUN_GPUS];
    int ng;
    void *fake;
    void (*set_tick)(int);
    /* with acct: allocations, holders and accounting each tick, as the
     * daemon's round does (idle_watch.c round_gpus) */
    idle_env env;
    idle_acct *acct;
    idle_kern *kern;  /* gpufl session logs, when a test has them */
    int host_pids;    /* idle_dead_scan's */
    const char *dcgm; /* a dcgm-exporter page read every tick, or NULL */
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
    {
        gpu_device d[RUN_GPUS];
        r->ng = idle_src_devices(r->src, d, RUN_GPUS);
        for (int i = 0; i < r->ng; i++)
            if (idle_gpu_init(&r->g[i], &r->cfg, &d[i]))
                return -1;
    }
    return r->set_tick ? 0 : -1;
}

/* Replays ticks [from, to); GPM needs samples >= 100 ms apart in real
 * time, so gpm runs sleep between ticks. */
static void run_ticks(run *r, int from, int to, int gpm)
{
    gpu_sample s[RUN_GPUS];
    for (int t = from; t < to; t++) {
        int n = 0;
        uint64_t now = T0 + (uint64_t)t * IDLE_NS;
        r->set_tick(t);
        if (gpm)
            usleep(105000);
        if (idle_src_sample(r->src, s, r->ng, &n))
            n = 0;
        if (r->acct)
            idle_alloc_scan(&r->env, r->g, r->ng);
        for (int i = 0; r->dcgm && i < r->ng; i++)
            r->g[i].dcgm_sm = r->g[i].dcgm_gr = -1;
        if (r->dcgm)
            idle_dcgm_parse(r->dcgm, strlen(r->dcgm), r->g, r->ng);
        for (int i = 0; i < r->ng; i++)
            idle_gpu_push(&r->g[i], i < n ? &s[i] : NULL, now);
        if (r->kern)
            idle_kern_round(r->kern, r->g, r->ng, now);
        if (r->acct)
            idle_dead_scan(&r->env, r->g, r->ng, &r->host_pids);
        for (int i = 0; i < r->ng; i++)
            idle_gpu_eval(&r->g[i], &r->cfg, now);
        if (r->acct) {
            int need[RUN_GPUS];
            for (int i = 0; i < r->ng; i++)
                need[i] = r->g[i].dirty;
            idle_holders_scan(&r->env, r->g, r->ng, need);
            for (int i = 0; i < r->ng; i++)
                idle_gpu_note_holders(&r->g[i]);
            idle_acct_round(r->acct, &r->env, r->g, r->ng, now);
        }
    }
}

static void run_close(run *r)
{
    idle_acct_free(r->acct);
    idle_kern_free(r->kern);
    for (int i = 0; i < r->ng; i++)
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

/* No process and no memory, one sample at 2 % (an H200 just after a
 * process ended): EMPTY while GPM's SM activity stays 0, UNKNOWN when it
 * shows work (test_idle.py's test_residue_is_empty: without GPM). */
static void test_residue_gpm(void)
{
    static const char *sm[] = { "0", "30" };
    for (int i = 0; i < 2; i++) {
        char trace[256];
        run r;
        snprintf(trace, sizeof trace,
                 "dev 0 util=0 mem_used=0 procs=\n"
                 "dev 1 util=0 mem_used=0 gpm_sm=0 procs=\n"
                 "sample 3 dev 1 util=2 gpm_sm=%s\n"
                 "sample 4 dev 1 util=0 gpm_sm=%s\n",
                 sm[i], sm[i]);
        REQUIRE(run_open(&r, trace, NULL) == 0);
        run_ticks(&r, 0, 8, 1);
        CHECK(r.g[1].sig.has_sm);
        CHECK(r.g[1].sig.util_max > 0);
        EXPECT(r.g[1], i ? IG_UNKNOWN : IG_EMPTY);
        CHECK(i || has_reason(&r.g[1], "below --empty-util"));
        EXPECT(r.g[0], IG_EMPTY);
        run_close(&r);
    }
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

/* ---- waste accounting: fixture trees under a root ---- */

static char g_root[512];

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st, (void)flag, (void)f;
    return remove(p);
}

static void fx_open(void)
{
    snprintf(g_root, sizeof g_root, "%s/idle_root_%d",
             getenv("GPUFL_TEST_TMP") ? getenv("GPUFL_TEST_TMP") : "/tmp",
             (int)getpid());
    nftw(g_root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    mkdir(g_root, 0755);
}

static void fx_close(void)
{
    nftw(g_root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void fx_mkdirs(const char *path)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + strlen(g_root) + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(buf, 0755);
            *p = '/';
        }
    mkdir(buf, 0755);
}

/* rel under the root; len 0 = strlen */
static void fx_write(const char *rel, const char *data, size_t len)
{
    char path[1024], dir[1024];
    FILE *f;
    snprintf(path, sizeof path, "%s%s", g_root, rel);
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = 0;
    fx_mkdirs(dir);
    f = fopen(path, "w");
    if (!f)
        return;
    fwrite(data, 1, len ? len : strlen(data), f);
    fclose(f);
}

static void fx_link(const char *rel, const char *target)
{
    char path[1024], dir[1024];
    snprintf(path, sizeof path, "%s%s", g_root, rel);
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = 0;
    fx_mkdirs(dir);
    CHECK(symlink(target, path) == 0);
}

#define POD_UID "6f1c2d3e-1111-2222-3333-444455556666"
#define POD_CG                                                                 \
    "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"       \
    "6f1c2d3e_1111_2222_3333_444455556666.slice/cri-containerd-"               \
    "abcdef1234567890abcdef.scope\n"

/* a pod "ml/train-0" and a user alice (uid 1001) */
static void fx_base(void)
{
    char d[1024];
    snprintf(d, sizeof d, "%s/var/log/pods/ml_train-0_" POD_UID, g_root);
    fx_mkdirs(d);
    fx_write("/etc/passwd",
             "root:x:0:0::/root:/bin/sh\n"
             "alice:x:1001:1001::/home/alice:/bin/sh\n",
             0);
}

static int run_acct(run *r, const char *trace)
{
    if (run_open(r, trace, NULL))
        return -1;
    r->env.root = g_root;
    return idle_acct_new(&r->acct, &r->cfg, 0);
}

/* the metrics text of r in b (caller releases) */
static const char *metrics(run *r, gbuf *b)
{
    CHECK(idle_acct_metrics(r->acct, b, r->g, r->ng, "node1") == 0);
    return gbuf_str(b);
}

/* a line of text holding every one of the words, and its value */
static double metric_value(const char *text, const char *const *words)
{
    const char *p = text;
    while (p && *p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char line[2048];
        int ok = p[0] != '#';
        snprintf(line, sizeof line, "%.*s", (int)n, p);
        for (int i = 0; ok && words[i]; i++)
            ok = strstr(line, words[i]) != NULL;
        if (ok)
            return strtod(strrchr(line, ' ') + 1, NULL);
        p = nl ? nl + 1 : NULL;
    }
    return -1;
}

/* STUCK on an H100 with GPM: utilisation 100 % with SM activity 0.2 %
 * and memory unchanged; BUSY_LOW_OCC until the hold, then STUCK and
 * dirty.  one_thread's 1.2 % SM is never STUCK. */
static void test_stuck_gpm(void)
{
    run r;
    REQUIRE(run_open(&r,
                     "dev 0 util=100 mem_used=316669952 power=120000 "
                     "gpm=1 gpm_sm=1.2 procs=76:316669952\n"
                     "dev 1 util=100 mem_used=316669952 power=120000 "
                     "gpm_sm=0.2 procs=77:316669952\n",
                     NULL) == 0);
    r.cfg.stuck_hold_s = 6;
    run_ticks(&r, 0, 5, 1);
    EXPECT(r.g[1], IG_BUSY_LOW_OCC);
    CHECK(has_reason(&r.g[1], "STUCK after"));
    run_ticks(&r, 5, 12, 1);
    EXPECT(r.g[1], IG_STUCK);
    CHECK(has_reason(&r.g[1], "SM activity"));
    CHECK(r.g[1].dirty);
    EXPECT(r.g[0], IG_BUSY_LOW_OCC);
    CHECK(!r.g[0].dirty);
    run_close(&r);
}

/* STUCK without GPM: power near the idle floor; memory that moves, or
 * one sample below stuck_util, is progress */
static void test_stuck_power(void)
{
    run r;
    char trace[2048];
    size_t k = 0;
    k += (size_t)snprintf(trace + k, sizeof trace - k,
                          "dev 0 cc=8.6 util=100 mem_used=316669952 "
                          "power=90000 power_limit=300000 "
                          "procs=4101:316669952\n"
                          "dev 1 cc=8.6 util=100 mem_used=316669952 "
                          "power=90000 power_limit=300000 "
                          "procs=4102:316669952\n");
    for (int t = 0; t < 30; t += 2)
        k += (size_t)snprintf(trace + k, sizeof trace - k,
                              "sample %d dev 1 mem_used=%d\n"
                              "sample %d dev 1 mem_used=316669952\n",
                              t, 316669952 + 104857600, t + 1);
    REQUIRE(run_open(&r, trace, NULL) == 0);
    r.cfg.stuck_hold_s = 15;
    run_ticks(&r, 0, 12, 0);
    EXPECT(r.g[0], IG_BUSY_LOW_OCC);
    run_ticks(&r, 12, 22, 0);
    EXPECT(r.g[0], IG_STUCK);
    CHECK(has_reason(&r.g[0], "power limit"));
    CHECK(has_reason(&r.g[0], "no progress"));
    EXPECT(r.g[1], IG_BUSY_LOW_OCC); /* memory moves: progress */
    run_close(&r);
    REQUIRE(run_open(&r,
                     "dev 0 cc=8.6 util=100 mem_used=316669952 power=90000 "
                     "power_limit=300000 procs=4101:316669952\n"
                     "dev 1 procs=\nsample 15 dev 0 util=90\n"
                     "sample 16 dev 0 util=100\n",
                     NULL) == 0);
    r.cfg.stuck_hold_s = 8;
    run_ticks(&r, 0, 12, 0);
    EXPECT(r.g[0], IG_STUCK);
    run_ticks(&r, 12, 24, 0);
    EXPECT(r.g[0], IG_BUSY_LOW_OCC); /* util 90 at 15: progress */
    run_close(&r);
}

/* ALLOCATED_UNUSED from the kubelet device-plugin checkpoint: the pod
 * holds GPU 0 with no process; GPU 1 is another resource's; the waste is
 * charged to the pod; a process ends it.  ids_a and ids_b: the two
 * entries' DeviceIDs, in the per-NUMA-node form (Kubernetes 1.20 and
 * later) or the list form before it. */
static void alloc_kubelet(const char *ids_a, const char *ids_b)
{
    run r;
    gbuf b = GBUF_INIT(1 << 20);
    char ck[1024];
    const char *m;
    const char *want[] = { "gpufl_gpu_wasted_seconds_total{",
                           "UUID=\"GPU-a10g\"",
                           "container=\"trainer\"",
                           "pod=\"train-0\"",
                           "namespace=\"ml\"",
                           "reason=\"allocated_unused\"",
                           NULL };
    snprintf(ck, sizeof ck,
             "{\"Data\":{\"PodDeviceEntries\":[{\"PodUID\":\"" POD_UID
             "\",\"ContainerName\":\"trainer\",\"ResourceName\":"
             "\"nvidia.com/gpu\",\"DeviceIDs\":%s,"
             "\"AllocResp\":\"CgQKAA==\"},{\"PodUID\":\"77\","
             "\"ContainerName\":\"x\",\"ResourceName\":\"example.com/fpga\","
             "\"DeviceIDs\":%s}],\"RegisteredDevices\":"
             "{\"nvidia.com/gpu\":[\"GPU-a10g\",\"GPU-h100\"]}},"
             "\"Checksum\":1}\n",
             ids_a, ids_b);
    fx_open();
    fx_base();
    fx_write("/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint", ck,
             0);
    REQUIRE(run_acct(&r, "dev 0 util=0 mem_used=0 procs=\n"
                         "dev 1 util=0 mem_used=0 procs=\n"
                         "sample 12 dev 0 util=80 mem_used=891289600 "
                         "power=200000 procs=4101:891289600\n") == 0);
    run_ticks(&r, 0, 12, 0);
    EXPECT(r.g[0], IG_ALLOCATED_UNUSED);
    CHECK(has_reason(&r.g[0], "allocated to pod ml/train-0"));
    CHECK(!r.g[0].dirty);
    EXPECT(r.g[1], IG_EMPTY);
    CHECK(fabs(idle_acct_wasted(r.acct, 0, IW_ALLOC) - 11.0) < 1e-6);
    CHECK(idle_acct_wasted(r.acct, 1, IW_ALLOC) == 0);
    m = metrics(&r, &b);
    CHECK(fabs(metric_value(m, want) - 11.0) < 1e-6);
    gbuf_release(&b);
    run_ticks(&r, 12, 14, 0);
    CHECK(r.g[0].state != IG_ALLOCATED_UNUSED);
    run_close(&r);
    fx_close();
}

static void test_alloc_kubelet(void)
{
    alloc_kubelet("{\"-1\":[\"GPU-a10g\"]}", "{\"0\":[\"GPU-h100\"]}");
    alloc_kubelet("[\"GPU-a10g\"]", "[\"GPU-h100\"]"); /* before 1.20 */
}

/* the pre-1.20 checkpoint form (a list) and the "index" ID strategy */
static void test_kubelet_forms(void)
{
    idle_gpu g[2];
    idle_env e;
    const char *ck = "{\"Data\":{\"PodDeviceEntries\":[{\"PodUID\":\"u1\","
                     "\"ContainerName\":\"c\",\"ResourceName\":"
                     "\"nvidia.com/gpu\",\"DeviceIDs\":[\"1\"]}]}}";
    memset(g, 0, sizeof g);
    memset(&e, 0, sizeof e);
    e.root = "/nonexistent";
    g[0].info.id = 0;
    g[1].info.id = 1;
    snprintf(g[1].info.uuid, sizeof g[1].info.uuid, "GPU-x");
    CHECK(idle_kubelet_parse(&e, ck, strlen(ck), g, 2) == 1);
    CHECK(!g[0].allocated && g[1].allocated);
    CHECK_STR(g[1].alloc_what, "pod pod-u1");
    CHECK_STR(g[1].alloc.container, "c");
    /* not JSON, or not the shape: nothing allocated, nothing broken */
    memset(g, 0, sizeof g);
    CHECK(idle_kubelet_parse(&e, "{\"Data\":", 8, g, 2) == 0);
    CHECK(idle_kubelet_parse(&e, "{\"Data\":{\"PodDeviceEntries\":3}}", 31, g,
                             2) == 0);
    CHECK(!g[0].allocated && !g[1].allocated);
}

/* ALLOCATED_UNUSED from a Slurm job cgroup whose process has
 * SLURM_JOB_GPUS=1 in its environment */
static void test_alloc_slurm(void)
{
    run r;
    static const char env[] = "HOME=/home/alice\0SLURM_JOB_GPUS=1\0X=1\0";
    fx_open();
    fx_base();
    fx_write("/sys/fs/cgroup/system.slice/slurmstepd.scope/job_42/"
             "step_batch/user/task_0/cgroup.procs",
             "777\n", 0);
    fx_write("/proc/777/environ", env, sizeof env - 1);
    fx_write("/proc/777/status", "Name:\tbash\nUid:\t1001\t1001\t1001\t1001\n",
             0);
    REQUIRE(run_acct(&r, "dev 0 util=0 mem_used=0 procs=\n"
                         "dev 1 util=0 mem_used=0 procs=\n") == 0);
    run_ticks(&r, 0, 12, 0);
    EXPECT(r.g[0], IG_EMPTY);
    EXPECT(r.g[1], IG_ALLOCATED_UNUSED);
    CHECK(has_reason(&r.g[1], "Slurm job 42 (user alice)"));
    CHECK_STR(r.g[1].alloc.job, "42");
    CHECK(fabs(idle_acct_wasted(r.acct, 1, IW_ALLOC) - 11.0) < 1e-6);
    run_close(&r);
    fx_close();
}

/* leaked memory: 10 GiB used, no process listed.  GPU 0's is held by a
 * process with /dev/nvidia0 open (named: pid, pod, container, user);
 * GPU 1's by nobody (leaked by the driver).  /dev/nvidiactl is no GPU. */
static void test_leaked_holder(void)
{
    run r;
    gbuf b = GBUF_INIT(1 << 20);
    const char *want[] = { "gpufl_gpu_wasted_seconds_total{",
                           "gpu=\"0\"",
                           "pod=\"train-0\"",
                           "user=\"alice\"",
                           "reason=\"phantom\"",
                           NULL };
    const char *dirty[] = { "gpufl_gpu_dirty{", "gpu=\"1\"", NULL };
    const char *m;
    fx_open();
    fx_base();
    fx_write("/proc/555/cgroup", POD_CG, 0);
    fx_write("/proc/555/status", "Uid:\t1001\t1001\t1001\t1001\n", 0);
    fx_link("/proc/555/fd/3", "/dev/nvidiactl");
    fx_link("/proc/555/fd/7", "/dev/nvidia0");
    fx_link("/proc/556/fd/3", "/dev/nvidiactl");
    fx_link("/proc/556/fd/4", "/dev/nvidia10");
    REQUIRE(run_acct(&r, "dev 0 util=0 mem_used=10737418240 procs=\n"
                         "dev 1 util=0 mem_used=10737418240 procs=\n") == 0);
    run_ticks(&r, 0, 12, 0);
    EXPECT(r.g[0], IG_HELD);
    CHECK(r.g[0].dirty && r.g[1].dirty);
    CHECK(r.g[0].nholders == 1 && r.g[0].holders[0] == 555);
    CHECK(has_reason(&r.g[0], "held open by pid 555, pod ml/train-0, "
                              "container abcdef123456, user alice"));
    CHECK(has_reason(&r.g[0], "not safe for the next job"));
    CHECK(r.g[1].nholders == 0);
    CHECK(has_reason(&r.g[1], "leaked by the driver"));
    m = metrics(&r, &b);
    CHECK(fabs(metric_value(m, want) - 11.0) < 1e-6);
    CHECK(metric_value(m, dirty) == 1);
    gbuf_release(&b);
    run_close(&r);
    fx_close();
}

/* busy seconds per process: the sum of smUtil x 1 s over the fake's
 * per-process samples after the first; the owner (pod, or Slurm job and
 * user) on each series, the MIG instance of pid 100 (GPU_I_ID); an
 * exited process's total moves to its owner's
 * pid="" series; with a cap of one process series the other is folded
 * from the start.  Waste "idle" is the rest of the owned time. */
static void test_busy_seconds(void)
{
    const char *trace =
        "dev 0 util=60 mem_used=2000000000 power=200000 "
        "procs=100:1500000000:2,200:500000000 putil=100:50,200:10\n"
        "dev 1 procs=\n"
        "sample 5 dev 0 putil=100:80,200:0\n"
        "sample 8 dev 0 procs=100:1500000000:2 putil=100:80\n";
    const char *p100[] = { "gpufl_gpu_busy_seconds_total{",
                           "GPU_I_ID=\"2\",pid=\"100\"", "pod=\"train-0\"",
                           "container=\"abcdef123456\"", NULL };
    const char *p200[] = { "gpufl_gpu_busy_seconds_total{",
                           "GPU_I_ID=\"\",pid=\"200\"", NULL };
    const char *job7[] = { "gpufl_gpu_busy_seconds_total{", "pid=\"\"",
                           "job=\"7\"", "user=\"alice\"", NULL };
    const char *mem100[] = { "gpufl_gpu_memory_used_bytes{", "pid=\"100\"",
                             NULL };
    for (int cap = 100; cap >= 1; cap -= 99) {
        run r;
        gbuf b = GBUF_INIT(1 << 20);
        const char *m;
        fx_open();
        fx_base();
        fx_write("/proc/100/cgroup", POD_CG, 0);
        fx_write("/proc/200/cgroup",
                 "0::/system.slice/slurmstepd.scope/job_7/step_0/user/"
                 "task_0\n",
                 0);
        fx_write("/proc/200/status", "Uid:\t1001\t1001\t1001\t1001\n", 0);
        REQUIRE(run_open(&r, trace, NULL) == 0);
        r.env.root = g_root;
        r.cfg.metrics_procs = (uint32_t)cap;
        REQUIRE(idle_acct_new(&r.acct, &r.cfg, 0) == 0);
        run_ticks(&r, 0, 6, 0);
        /* ticks 1-4 at 50 % and 10 %, tick 5 at 80 % and 0 % */
        CHECK(fabs(idle_acct_busy(r.acct, 0, 100) - 2.8) < 1e-6);
        CHECK(fabs(idle_acct_busy(r.acct, 0, 200) - 0.4) < 1e-6);
        m = metrics(&r, &b);
        CHECK(fabs(metric_value(m, p100) - 2.8) < 1e-6);
        CHECK(metric_value(m, mem100) == 1500000000);
        if (cap == 1) {
            CHECK(metric_value(m, p200) < 0); /* folded */
            CHECK(fabs(metric_value(m, job7) - 0.4) < 1e-6);
        } else {
            CHECK(fabs(metric_value(m, p200) - 0.4) < 1e-6);
        }
        gbuf_release(&b);
        run_ticks(&r, 6, 12, 0);
        /* pid 200 exited at tick 8: its 0.4 s is its owner's now */
        CHECK(fabs(idle_acct_busy(r.acct, 0, 100) - 7.6) < 1e-6);
        CHECK(idle_acct_busy(r.acct, 0, 200) < 0);
        m = metrics(&r, &b);
        CHECK(fabs(metric_value(m, p100) - 7.6) < 1e-6);
        CHECK(metric_value(m, p200) < 0);
        CHECK(fabs(metric_value(m, job7) - 0.4) < 1e-6);
        /* BUSY at 60 %: 0.4 of each of the 11 intervals is idle */
        CHECK(fabs(idle_acct_wasted(r.acct, 0, IW_IDLE) - 4.4) < 1e-6);
        gbuf_release(&b);
        run_close(&r);
        fx_close();
    }
}

/* MIG on the H100 (dev 1): three GPU instances judged apart, from their
 * own memory, processes and GPM SM activity (NVML gives the GPU no
 * utilisation in MIG mode): GI 1 runs a matmul (BUSY), GI 2 holds 10 GB
 * with no kernel (HELD), GI 3 is empty.  Busy seconds of GI 1's process
 * come from its instance's SM activity (source gpm): 0.9 x 11 rounds;
 * GI 2's held time is wasted (held), on series labelled GPU_I_ID. */
static void test_mig_instances(void)
{
    run r;
    gbuf b = GBUF_INIT(1 << 20);
    const char *m;
    const char *busy100[] = { "gpufl_gpu_busy_seconds_total{",
                              "gpu=\"1\"",
                              "GPU_I_ID=\"1\"",
                              "pid=\"100\"",
                              "pod=\"train-0\"",
                              "source=\"gpm\"",
                              NULL };
    const char *held200[] = { "gpufl_gpu_wasted_seconds_total{",
                              "gpu=\"1\"",
                              "GPU_I_ID=\"2\"",
                              "user=\"alice\"",
                              "reason=\"held\"",
                              NULL };
    const char *mem200[] = { "gpufl_gpu_memory_used_bytes{", "GPU_I_ID=\"2\"",
                             "pid=\"200\"", NULL };
    fx_open();
    fx_base();
    fx_write("/proc/100/cgroup", POD_CG, 0);
    fx_write("/proc/200/cgroup", "0::/user.slice/user-1001.slice/x.scope\n", 0);
    fx_write("/proc/200/status", "Uid:\t1001\t1001\t1001\t1001\n", 0);
    REQUIRE(run_acct(&r,
                     "dev 0 util=0 mem_used=0 procs=\n"
                     "dev 1 util=0 mig=1 mem_used=12000000000 "
                     "procs=100:1500000000:1,200:10000000000:2 "
                     "migs=1:1500000000:20000000000:90,"
                     "2:10000000000:20000000000:0,3:0:10000000000:0\n") == 0);
    REQUIRE(r.ng == 4); /* the A10G, and the H100's three instances */
    CHECK(!r.g[0].info.mig);
    for (int i = 1; i < 4; i++) {
        CHECK(r.g[i].info.mig && r.g[i].info.id == 1);
        CHECK_EQ_U64(r.g[i].info.gi, (uint64_t)i);
    }
    CHECK(r.g[1].info.mem_total == 20000000000ull);
    CHECK(strcmp(r.g[3].info.mig_uuid, "MIG-GPU-h100-3") == 0);
    run_ticks(&r, 0, 12, 1);
    EXPECT(r.g[0], IG_EMPTY);
    EXPECT(r.g[1], IG_BUSY);
    EXPECT(r.g[2], IG_HELD);
    EXPECT(r.g[3], IG_EMPTY);
    CHECK(r.g[2].sig.mem_used == 10000000000ull);
    CHECK(fabs(idle_acct_busy(r.acct, 1, 100) - 9.9) < 1e-6);
    CHECK(fabs(idle_acct_wasted(r.acct, 2, IW_HELD) - 11.0) < 1e-6);
    CHECK(idle_acct_wasted(r.acct, 1, IW_IDLE) == 0);
    CHECK(idle_acct_wasted(r.acct, 3, IW_HELD) == 0);
    m = metrics(&r, &b);
    CHECK(fabs(metric_value(m, busy100) - 9.9) < 1e-6);
    CHECK(fabs(metric_value(m, held200) - 11.0) < 1e-6);
    CHECK(metric_value(m, mem200) == 10000000000.0);
    gbuf_release(&b);
    run_close(&r);
    fx_close();
}

/* MIG without GPM (an A100): NVML has no utilisation of an instance, so
 * one with a process is UNKNOWN, said so; one with no process runs
 * nothing and is EMPTY.  The unprivileged case: the GPU's own process
 * list is refused, the MIG device handles give it. */
static void test_mig_no_gpm(void)
{
    run r;
    REQUIRE(run_open(&r,
                     "dev 0 util=0 mem_used=0 procs=\n"
                     "dev 1 name=\"NVIDIA A100-SXM4-40GB\" cc=8.0 gpm=0 mig=1 "
                     "mig_noagg=1 procs=300:2000000000:5 "
                     "migs=5:2000000000:10000000000,6:0:10000000000\n",
                     NULL) == 0);
    REQUIRE(r.ng == 3);
    run_ticks(&r, 0, 12, 0);
    EXPECT(r.g[1], IG_UNKNOWN);
    CHECK(has_reason(&r.g[1], "NVIDIA/DCGM#58"));
    CHECK(r.g[1].last.nprocs == 1 && r.g[1].last.procs[0].pid == 300 &&
          r.g[1].last.procs[0].gi == 5);
    EXPECT(r.g[2], IG_EMPTY);
    run_close(&r);
    /* with dcgm-exporter's per-instance rows (GPU_I_ID) the instance is
     * judged: SM activity 0.45 -> BUSY; the whole-GPU row and another
     * instance's row are not taken for it */
    REQUIRE(run_open(&r,
                     "dev 0 util=0 mem_used=0 procs=\n"
                     "dev 1 cc=8.0 gpm=0 mig=1 mig_noagg=1 "
                     "procs=300:2000000000:5 "
                     "migs=5:2000000000:10000000000,6:0:10000000000\n",
                     NULL) == 0);
    r.dcgm = "DCGM_FI_PROF_SM_ACTIVE{gpu=\"1\",UUID=\"GPU-h100\","
             "GPU_I_ID=\"5\",GPU_I_PROFILE=\"3g.20gb\"} 0.450\n"
             "DCGM_FI_PROF_SM_ACTIVE{gpu=\"1\",UUID=\"GPU-h100\","
             "GPU_I_ID=\"\"} 0.000\n"
             "DCGM_FI_PROF_SM_ACTIVE{gpu=\"1\",UUID=\"GPU-h100\","
             "GPU_I_ID=\"6\"} 0.000\n";
    run_ticks(&r, 0, 12, 0);
    EXPECT(r.g[1], IG_BUSY);
    CHECK(fabs(r.g[1].sig.sm_mean - 0.45) < 1e-6);
    CHECK(r.g[2].dcgm_sm == 0);
    EXPECT(r.g[2], IG_EMPTY);
    run_close(&r);
}

/* MPS: the compute list names the MPS server (pid 50), the MPS list its
 * clients 61 (a pod) and 62 (a Slurm job), whose own per-process samples
 * give each its busy time; both are marked as MPS clients. */
static void test_mps_clients(void)
{
    run r;
    gbuf b = GBUF_INIT(1 << 20);
    const char *m;
    const char *b61[] = { "gpufl_gpu_busy_seconds_total{", "pid=\"61\"",
                          "pod=\"train-0\"", "source=\"nvml\"", NULL };
    const char *b62[] = { "gpufl_gpu_busy_seconds_total{", "pid=\"62\"",
                          "job=\"7\"", "source=\"nvml\"", NULL };
    const char *mps61[] = { "gpufl_gpu_mps_client{", "pid=\"61\"", NULL };
    const char *mps50[] = { "gpufl_gpu_mps_client{", "pid=\"50\"", NULL };
    fx_open();
    fx_base();
    fx_write("/proc/61/cgroup", POD_CG, 0);
    fx_write("/proc/62/cgroup",
             "0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_0\n", 0);
    REQUIRE(run_acct(&r, "dev 0 cc=8.6 util=60 mem_used=3000000000 "
                         "procs=50:100000000 "
                         "mps=61:1000000000,62:2000000000 "
                         "putil=61:40,62:20\n"
                         "dev 1 procs=\n") == 0);
    run_ticks(&r, 0, 6, 0);
    CHECK(r.g[0].last.nprocs == 3);
    CHECK(fabs(idle_acct_busy(r.acct, 0, 61) - 2.0) < 1e-6);
    CHECK(fabs(idle_acct_busy(r.acct, 0, 62) - 1.0) < 1e-6);
    m = metrics(&r, &b);
    CHECK(fabs(metric_value(m, b61) - 2.0) < 1e-6);
    CHECK(fabs(metric_value(m, b62) - 1.0) < 1e-6);
    CHECK(metric_value(m, mps61) == 1);
    CHECK(metric_value(m, mps50) < 0);
    gbuf_release(&b);
    run_close(&r);
    fx_close();
}

/* a gpufl session's device log: its session line (pid, the H100), then
 * kernel lines; *off is where the next append goes */
static void kern_log(const char *path, const char *text)
{
    FILE *f = fopen(path, "a");
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
}

/* the kernels of tick t: two streams, [0.1, 0.4] and [0.3, 0.6] of the
 * second before it, 0.5 s of union */
static void kern_write(const char *path, int t)
{
    char line[512];
    uint64_t base = T0 + (uint64_t)(t - 1) * IDLE_NS;
    snprintf(line, sizeof line,
             "{\"v\":1,\"sid\":\"s1\",\"st\":\"device\",\"seq\":%d,"
             "\"ts\":%llu,\"type\":\"kernel\",\"dev\":0,\"cfg\":1,"
             "\"grid\":[1],\"dur\":300000000}\n"
             "{\"v\":1,\"sid\":\"s1\",\"st\":\"device\",\"seq\":%d,"
             "\"ts\":%llu,\"type\":\"kernel\",\"stream\":2,\"cfg\":1,"
             "\"grid\":[1],\"dur\":300000000}\n",
             2 * t, (unsigned long long)(base + 100000000ull), 2 * t + 1,
             (unsigned long long)(base + 300000000ull));
    kern_log(path, line);
}

static void kern_ticks(run *r, const char *path, int from, int to, int complete)
{
    for (int t = from; t < to; t++) {
        if (complete && t > 0)
            kern_write(path, t);
        run_ticks(r, t, t + 1, 1);
    }
}

/* STUCK with a gpufl session on the GPU: utilisation 100 % at SM
 * activity 0.1 %.  The session completes kernels every second: progress,
 * never STUCK, though memory stands still; its busy time is the union of
 * its kernel intervals (source cupti, 0.5 s a tick), replacing NVML's
 * sampled 100 %.  The session completes none while memory moves: no
 * progress, STUCK (memory alone would have said progress). */
static void test_stuck_gpufl_session(void)
{
    for (int complete = 1; complete >= 0; complete--) {
        run r;
        char dir[600], path[700], trace[2048];
        gbuf b = GBUF_INIT(1 << 20);
        const char *cupti[] = { "gpufl_gpu_busy_seconds_total{", "pid=\"300\"",
                                "source=\"cupti\"", NULL };
        size_t k = 0;
        fx_open();
        snprintf(dir, sizeof dir, "%s/gpufl", g_root);
        fx_mkdirs(dir);
        snprintf(path, sizeof path, "%s/train_300.device.log", dir);
        kern_log(path, "{\"v\":1,\"sid\":\"s1\",\"st\":\"device\",\"seq\":0,"
                       "\"ts\":1795994980000000000,\"type\":\"session\","
                       "\"app\":\"train\",\"host\":\"n\",\"pid\":300,"
                       "\"devices\":[{\"id\":0,\"name\":\"NVIDIA H100 80GB "
                       "HBM3\",\"uuid\":\"GPU-h100\"}]}\n");
        k += (size_t)snprintf(trace + k, sizeof trace - k,
                              "dev 0 procs=\n"
                              "dev 1 util=100 mem_used=316669952 "
                              "power=120000 gpm_sm=0.1 "
                              "procs=300:316669952 putil=300:100\n");
        for (int t = 0; !complete && t < 20; t += 2)
            k += (size_t)snprintf(trace + k, sizeof trace - k,
                                  "sample %d dev 1 mem_used=%d\n"
                                  "sample %d dev 1 mem_used=316669952\n",
                                  t, 316669952 + 104857600, t + 1);
        fx_base();
        REQUIRE(run_acct(&r, trace) == 0);
        r.cfg.stuck_hold_s = 4;
        r.cfg.window_s = 3;
        REQUIRE(idle_kern_new(&r.kern, dir) == 0);
        idle_acct_set_kern(r.acct, r.kern);
        kern_ticks(&r, path, 0, 12, complete);
        CHECK(r.g[1].kern_sessions == 1);
        if (complete) {
            EXPECT(r.g[1], IG_BUSY_LOW_OCC);
            CHECK(has_reason(&r.g[1], "progress, not STUCK"));
            CHECK(!r.g[1].dirty);
            /* ticks 1-11: 0.5 s each, exact; NVML's 100 % not counted */
            CHECK(fabs(idle_acct_busy(r.acct, 1, 300) - 5.5) < 1e-6);
            CHECK(fabs(metric_value(metrics(&r, &b), cupti) - 5.5) < 1e-6);
            /* the session ends: the round that reads session_end counts
             * the kernels before it; then NVML's samples take over */
            kern_write(path, 12);
            kern_log(path, "{\"v\":1,\"sid\":\"s1\",\"st\":\"device\","
                           "\"seq\":99,\"ts\":1795994992000000000,"
                           "\"type\":\"session_end\",\"reason\":"
                           "\"shutdown\",\"dur\":1,\"lines\":100,"
                           "\"lost\":0,\"rotations\":0}\n");
            run_ticks(&r, 12, 13, 1);
            CHECK(fabs(idle_acct_busy(r.acct, 1, 300) - 6.0) < 1e-6);
            CHECK(r.g[1].kern_sessions == 1);
            run_ticks(&r, 13, 14, 1);
            CHECK(r.g[1].kern_sessions == 0);
            gbuf_reset(&b);
            CHECK(fabs(metric_value(metrics(&r, &b), cupti) - 6.0) < 1e-6);
        } else {
            EXPECT(r.g[1], IG_STUCK);
            CHECK(has_reason(&r.g[1], "no kernel completed in the gpufl "
                                      "session"));
            CHECK(r.g[1].dirty);
            CHECK(metric_value(metrics(&r, &b), cupti) == 0);
        }
        gbuf_release(&b);
        run_close(&r);
        fx_close();
    }
}

/* a dead container: pid 700 (pod ml/train-0) holds 8 GiB on GPU 0 with
 * no kernel (HELD, waste "held"); at tick 5 its container dies, /proc/700
 * goes, but NVML still lists it with the memory: dirty, the reasons say
 * so, and the rest is leaked memory (waste "phantom") charged to the pod
 * it belonged to.  A daemon that never found a listed PID in its /proc
 * (another PID namespace) calls nothing dead. */
static void test_dead_container(void)
{
    run r;
    char path[1024];
    gbuf b = GBUF_INIT(1 << 20);
    const char *m;
    const char *phantom[] = { "gpufl_gpu_wasted_seconds_total{", "gpu=\"0\"",
                              "pod=\"train-0\"", "reason=\"phantom\"", NULL };
    const char *held[] = { "gpufl_gpu_wasted_seconds_total{", "gpu=\"0\"",
                           "pod=\"train-0\"", "reason=\"held\"", NULL };
    fx_open();
    fx_base();
    fx_write("/proc/700/cgroup", POD_CG, 0);
    fx_write("/proc/701/cgroup", "0::/user.slice/user-1001.slice/x.scope\n", 0);
    REQUIRE(run_acct(&r, "dev 0 util=0 mem_used=8589934592 "
                         "procs=700:8589934592\n"
                         "dev 1 util=0 mem_used=1000000000 "
                         "procs=701:1000000000\n") == 0);
    run_ticks(&r, 0, 5, 0);
    EXPECT(r.g[0], IG_HELD);
    CHECK(!r.g[0].dirty && r.g[0].ndead == 0);
    snprintf(path, sizeof path, "%s/proc/700/cgroup", g_root);
    CHECK(unlink(path) == 0);
    run_ticks(&r, 5, 12, 0);
    EXPECT(r.g[0], IG_HELD);
    CHECK(r.g[0].ndead == 1 && r.g[0].dead[0] == 700);
    CHECK(r.g[0].dirty);
    CHECK(has_reason(&r.g[0], "pid 700 listed by NVML no longer exists"));
    CHECK(!r.g[1].dirty);
    /* ticks 1-4 held, ticks 5-11 leaked */
    CHECK(fabs(idle_acct_wasted(r.acct, 0, IW_HELD) - 4.0) < 1e-6);
    CHECK(fabs(idle_acct_wasted(r.acct, 0, IW_PHANTOM) - 7.0) < 1e-6);
    m = metrics(&r, &b);
    CHECK(fabs(metric_value(m, phantom) - 7.0) < 1e-6);
    CHECK(fabs(metric_value(m, held) - 4.0) < 1e-6);
    gbuf_release(&b);
    run_close(&r);
    /* another PID namespace: no listed PID exists here, none is dead */
    REQUIRE(run_acct(&r, "dev 0 util=0 mem_used=8589934592 "
                         "procs=700:8589934592\n"
                         "dev 1 util=0 mem_used=0 procs=\n") == 0);
    run_ticks(&r, 0, 3, 0);
    CHECK(r.g[0].ndead == 0 && !r.g[0].dirty);
    run_close(&r);
    fx_close();
}

int main(void)
{
    RUN(test_seed_a10g);
    RUN(test_phantom);
    RUN(test_seed_h100_gpm);
    RUN(test_residue_gpm);
    RUN(test_bursty);
    RUN(test_failed_reads);
    RUN(test_stale);
    RUN(test_stride32);
    RUN(test_stuck_gpm);
    RUN(test_stuck_power);
    RUN(test_alloc_kubelet);
    RUN(test_kubelet_forms);
    RUN(test_alloc_slurm);
    RUN(test_leaked_holder);
    RUN(test_busy_seconds);
    RUN(test_mig_instances);
    RUN(test_mig_no_gpm);
    RUN(test_mps_clients);
    RUN(test_stuck_gpufl_session);
    RUN(test_dead_container);
    TEST_DONE();
}
