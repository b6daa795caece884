/*
 * test_nvml.c - src/gpu's NVML reader against scripted fake NVML libraries
 * (fake_nvml.c built four ways), plus one run against whatever real
 * libnvidia-ml.so.1 the machine has.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gpufl/gpufl.h>

#include "gpu/gpu.h"
#include "gpu/nvml_int.h" /* the real-GPU run reports internals */
#include "test.h"

#ifndef FAKE_NVML_FULL
#define FAKE_NVML_FULL "/tmp/fake/nvml-full/libnvidia-ml.so.1"
#endif
#ifndef FAKE_NVML_MINIMAL
#define FAKE_NVML_MINIMAL "/tmp/fake/nvml-minimal/libnvidia-ml.so.1"
#endif
#ifndef FAKE_NVML_NOINIT
#define FAKE_NVML_NOINIT "/tmp/fake/nvml-noinit/libnvidia-ml.so.1"
#endif
#ifndef FAKE_NVML_NODETAIL
#define FAKE_NVML_NODETAIL "/tmp/fake/nvml-nodetail/libnvidia-ml.so.1"
#endif

#define MIB (1024ull * 1024ull)
#define WHY_LEN 256 /* as the client's SRC_REASON_LEN */

/* The hooks of the fake the source loaded (same path: same instance). */
typedef struct fake {
    void *h;
    void (*set_tick)(int);
    int (*calls)(const char *);
    int (*refs)(void);
    int (*live_gpm)(void);
} fake;

/* What a test left open when a REQUIRE stopped it, closed before the next
 * test so that one failure does not leave the fake initialised for all. */
static gpu_nvml *g_open_src;
static void *g_open_fake;

static void fake_sym(void *h, const char *name, void *out)
{
    void *p = dlsym(h, name);
    memcpy(out, &p, sizeof p);
}

static int fake_attach(fake *f, const char *lib)
{
    memset(f, 0, sizeof *f);
    f->h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
    if (!f->h)
        return -1;
    g_open_fake = f->h;
    fake_sym(f->h, "fake_nvml_set_tick", &f->set_tick);
    fake_sym(f->h, "fake_nvml_calls", &f->calls);
    fake_sym(f->h, "fake_nvml_init_refs", &f->refs);
    fake_sym(f->h, "fake_nvml_live_gpm", &f->live_gpm);
    return f->set_tick && f->calls && f->refs && f->live_gpm ? 0 : -1;
}

static void fake_detach(fake *f)
{
    if (f->h)
        dlclose(f->h);
    f->h = NULL;
    g_open_fake = NULL;
}

static void cleanup(void)
{
    if (g_open_src)
        gpu_nvml_close(g_open_src);
    if (g_open_fake)
        dlclose(g_open_fake);
    g_open_src = g_open_fake = NULL;
}

static char script_path[512];

static void script(const char *text)
{
    char *path = script_path;
    const char *dir = getenv("GPUFL_TEST_TMP");
    FILE *fp;
    snprintf(path, sizeof script_path, "%s/nvml_%ld.script",
             dir && *dir ? dir : "/tmp", (long)getpid());
    fp = fopen(path, "w");
    if (!fp) {
        perror(path);
        exit(2);
    }
    fputs(text, fp);
    fclose(fp);
    setenv("FAKE_NVML_SCRIPT", path, 1);
}

static int nvml_at(const char *lib, gpu_nvml **st, char *why)
{
    int rc;
    why[0] = 0;
    rc = gpu_nvml_open(st, lib, why, WHY_LEN);
    if (rc == 0)
        g_open_src = *st;
    return rc;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* Close the source while holding the fake, and check it was left clean. */
static void close_clean(gpu_nvml *st, fake *f)
{
    gpu_nvml_close(st);
    g_open_src = NULL;
    CHECK_EQ_U64(f->refs(), 0);
    CHECK_EQ_U64(f->live_gpm(), 0);
    CHECK_EQ_U64(f->calls("nvmlShutdown"), 1);
    fake_detach(f);
}

static const char full_script[] =
    "global driver=535.104.05\n"
    "dev 0 name=\"NVIDIA A10G\" uuid=GPU-3b1e4c2a-0000-1111-2222-333344445555"
    " pci=00000000:00:1E.0 cc=8.6 mem_total=24146608128 power_limit=300000"
    " max_sm=1710 max_mem=6251 bus_width=384\n"
    "dev 1 name=\"NVIDIA H100 80GB HBM3\" uuid=GPU-h100 pci=00000000:3B:00.0"
    " cc=9.0 mem_total=85520809984 power_limit=700000 gpm=1\n"
    "sample 0 dev 0 util=100 util_mem=3 mem_used=316669952"
    " mem_reserved=445644800 temp=45 power=89100 fan=31 clk_sm=1710"
    " clk_mem=6251 clk_gfx=1710 throttle=4 pstate=0 pcie_tx=1200"
    " pcie_rx=3400 ecc_corr=2 ecc_uncorr=1 energy=123456789"
    " procs=1234:316669952,5678:1000 gprocs=1234:316669952,999:5\n"
    "sample 0 dev 1 util=7 gpm_sm=45 gpm_occ=12.5\n"
    "sample 1 dev 1 gpm_sm=80 gpm_occ=50\n"
    "sample 2 dev 1 gpm_sm=10 gpm_occ=2\n";

static void test_full_devices(void)
{
    gpu_nvml *st = NULL;
    char why[WHY_LEN];
    gpu_device d[4];
    fake f;

    script(full_script);
    REQUIRE(nvml_at(FAKE_NVML_FULL, &st, why) == 0);
    REQUIRE(fake_attach(&f, FAKE_NVML_FULL) == 0);
    REQUIRE(gpu_nvml_devices(st, d, 4) == 2);
    CHECK_EQ_U64(d[0].id, 0);
    CHECK_EQ_U64(d[1].id, 1);
    CHECK_STR(d[0].name, "NVIDIA A10G");
    CHECK_STR(d[0].uuid, "GPU-3b1e4c2a-0000-1111-2222-333344445555");
    CHECK_STR(d[0].pci_bus_id, "00000000:00:1E.0");
    CHECK_STR(d[0].driver, "535.104.05");
    CHECK(d[0].cc_major == 8 && d[0].cc_minor == 6);
    CHECK_EQ_U64(d[0].mem_total, 24146608128ull);
    CHECK_EQ_U64(d[0].power_limit_mw, 300000);
    CHECK_EQ_U64(d[0].max_sm_clock_mhz, 1710);
    CHECK_EQ_U64(d[0].max_mem_clock_mhz, 6251);
    CHECK_EQ_U64(d[0].mem_bus_width, 384);
    CHECK_EQ_U64(d[0].simulated, 0);
    CHECK_STR(d[1].name, "NVIDIA H100 80GB HBM3");
    CHECK(d[1].cc_major == 9 && d[1].cc_minor == 0);
    CHECK_EQ_U64(gpu_nvml_devices(st, d, 1), 1);
    /* versioned symbols were preferred */
    CHECK_EQ_U64(f.calls("nvmlInitWithFlags"), 1);
    CHECK_EQ_U64(f.calls("nvmlInit_v2"), 0);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetCount_v2"), 1);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetHandleByIndex_v2"), 2);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetHandleByIndex"), 0);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetPciInfo_v3"), 2);
    CHECK_EQ_U64(f.calls("nvmlGpmSampleAlloc"), 2); /* only the H100 */
    close_clean(st, &f);
}

static void test_full_sample(void)
{
    gpu_nvml *st = NULL;
    char why[WHY_LEN];
    gpu_sample s[4];
    const gpu_sample *a = &s[0];
    int n = -1;
    fake f;

    script(full_script);
    REQUIRE(nvml_at(FAKE_NVML_FULL, &st, why) == 0);
    REQUIRE(fake_attach(&f, FAKE_NVML_FULL) == 0);
    REQUIRE(gpu_nvml_sample(st, s, 4, &n) == 0);
    REQUIRE(n == 2);
    CHECK_EQ_U64(a->dev, 0);
    CHECK_EQ_U64(a->present, GS_UTIL_GPU | GS_UTIL_MEM | GS_MEM | GS_TEMP |
                                 GS_POWER | GS_POWER_LIMIT | GS_FAN |
                                 GS_CLOCKS | GS_THROTTLE | GS_PCIE | GS_ECC |
                                 GS_ENERGY | GS_PSTATE | GS_PROCS |
                                 GS_MEM_RESERVED | GS_PROC_UTIL);
    CHECK_EQ_U64(a->util_gpu, 100);
    CHECK_EQ_U64(a->util_mem, 3);
    CHECK_EQ_U64(a->mem_used, 316669952ull); /* v2: reserved not counted */
    CHECK_EQ_U64(a->mem_reserved, 445644800ull);
    CHECK_EQ_U64(a->mem_total, 24146608128ull);
    CHECK_EQ_U64(a->temp_c, 45);
    CHECK_EQ_U64(a->power_mw, 89100);
    CHECK_EQ_U64(a->power_limit_mw, 300000);
    CHECK_EQ_U64(a->fan_pct, 31);
    CHECK_EQ_U64(a->clk_sm, 1710);
    CHECK_EQ_U64(a->clk_mem, 6251);
    CHECK_EQ_U64(a->clk_gfx, 1710);
    CHECK_EQ_U64(a->throttle, 4);
    CHECK_EQ_U64(a->pstate, 0);
    CHECK_EQ_U64(a->pcie_tx_kbps, 1200);
    CHECK_EQ_U64(a->pcie_rx_kbps, 3400);
    CHECK_EQ_U64(a->ecc_corrected, 2);
    CHECK_EQ_U64(a->ecc_uncorrected, 1);
    CHECK_EQ_U64(a->energy_mj, 123456789ull);
    /* compute {1234, 5678} + graphics {1234, 999}: 1234 once */
    REQUIRE(a->nprocs == 3);
    CHECK_EQ_U64(a->nprocs_total, 3);
    CHECK_EQ_U64(a->procs[0].pid, 999);
    CHECK_EQ_U64(a->procs[0].mem, 5);
    CHECK_EQ_U64(a->procs[1].pid, 1234);
    CHECK_EQ_U64(a->procs[1].mem, 316669952ull);
    CHECK_EQ_U64(a->procs[2].pid, 5678);
    CHECK_EQ_U64(a->procs[2].mem, 1000);
    /* the H100 has no processes: a valid, empty list */
    CHECK(s[1].present & GS_PROCS);
    CHECK_EQ_U64(s[1].nprocs, 0);
    CHECK_EQ_U64(s[1].util_gpu, 7);
    CHECK(!(s[1].present & (GS_SM_ACTIVE | GS_SM_OCC)));
    /* the A10G (pre-Hopper) answers NOT_SUPPORTED to the detail list, as
     * real drivers may: _v3 serves both GPUs from then on */
    CHECK_EQ_U64(f.calls("nvmlDeviceGetRunningProcessDetailList"), 1);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetComputeRunningProcesses_v3"), 2);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetGraphicsRunningProcesses_v3"), 2);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetTemperature"), 0);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetTemperatureV"), 2);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetMemoryInfo"), 0);
    /* max smaller than the device count */
    REQUIRE(gpu_nvml_sample(st, s, 1, &n) == 0);
    CHECK_EQ_U64(n, 1);
    close_clean(st, &f);
}

static void test_gpm(void)
{
    gpu_nvml *st = NULL;
    char why[WHY_LEN];
    gpu_sample s[2];
    int n;
    fake f;

    script(full_script);
    REQUIRE(nvml_at(FAKE_NVML_FULL, &st, why) == 0);
    REQUIRE(fake_attach(&f, FAKE_NVML_FULL) == 0);
    REQUIRE(gpu_nvml_sample(st, s, 2, &n) == 0 && n == 2);
    CHECK(!(s[1].present & (GS_SM_ACTIVE | GS_SM_OCC))); /* no interval yet */
    sleep_ms(120);
    f.set_tick(1);
    REQUIRE(gpu_nvml_sample(st, s, 2, &n) == 0 && n == 2);
    CHECK(s[1].present & GS_SM_ACTIVE);
    CHECK(s[1].present & GS_SM_OCC);
    CHECK(s[1].sm_active > 0.799 && s[1].sm_active < 0.801);
    CHECK(s[1].sm_occupancy > 0.499 && s[1].sm_occupancy < 0.501);
    CHECK(!(s[0].present & (GS_SM_ACTIVE | GS_SM_OCC))); /* A10G: no GPM */
    /* too soon after the last GPM sample: absent, not stale */
    f.set_tick(2);
    REQUIRE(gpu_nvml_sample(st, s, 2, &n) == 0);
    CHECK(!(s[1].present & (GS_SM_ACTIVE | GS_SM_OCC)));
    sleep_ms(120);
    REQUIRE(gpu_nvml_sample(st, s, 2, &n) == 0);
    CHECK(s[1].sm_active > 0.099 && s[1].sm_active < 0.101);
    CHECK(s[1].sm_occupancy > 0.019 && s[1].sm_occupancy < 0.021);
    CHECK_EQ_U64(f.calls("nvmlGpmSampleGet"), 3);
    CHECK_EQ_U64(f.calls("nvmlGpmMetricsGet"), 2);
    close_clean(st, &f);
}

static void test_minimal(void)
{
    gpu_nvml *st = NULL;
    char why[WHY_LEN];
    gpu_device d;
    gpu_sample s;
    int n;
    fake f;

    script("dev 0 name=\"Tesla T4\" uuid=GPU-t4 pci=00000000:3B:00.0 cc=7.5"
           " mem_total=16000000000 power_limit=70000 gpm=1\n"
           "sample 0 dev 0 util=50 util_mem=10 mem_used=1000 mem_reserved=300"
           " temp=60 power=30000 fan=40 clk_sm=1500 clk_mem=5000"
           " clk_gfx=1500 throttle=1 pstate=8 procs=42:1000,43:2000"
           " gprocs=42:1000\n");
    REQUIRE(nvml_at(FAKE_NVML_MINIMAL, &st, why) == 0);
    REQUIRE(fake_attach(&f, FAKE_NVML_MINIMAL) == 0);
    REQUIRE(gpu_nvml_devices(st, &d, 1) == 1);
    CHECK_STR(d.name, "Tesla T4");
    CHECK_STR(d.pci_bus_id, "0000:3B:00.0"); /* v1: the legacy form */
    CHECK_EQ_U64(d.mem_total, 16000000000ull);
    CHECK_EQ_U64(d.power_limit_mw, 70000);
    CHECK_EQ_U64(f.calls("nvmlInit"), 1);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetCount"), 1);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetHandleByIndex"), 1);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetPowerManagementLimit"), 1);
    REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
    sleep_ms(120);
    REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
    CHECK(s.present & GS_MEM);
    CHECK(!(s.present & GS_MEM_RESERVED));
    CHECK_EQ_U64(s.mem_used, 1300); /* v1 counts the reservation */
    CHECK(s.present & GS_TEMP);
    CHECK_EQ_U64(s.temp_c, 60);
    CHECK(s.present & GS_THROTTLE);
    CHECK_EQ_U64(s.throttle, 1);
    CHECK_EQ_U64(s.pstate, 8);
    CHECK_EQ_U64(s.power_limit_mw, 70000);
    CHECK(!(s.present & (GS_SM_ACTIVE | GS_SM_OCC)));
    REQUIRE(s.nprocs == 2);
    CHECK_EQ_U64(s.procs[0].pid, 42);
    CHECK_EQ_U64(s.procs[0].mem, 1000);
    CHECK_EQ_U64(s.procs[1].pid, 43);
    CHECK_EQ_U64(s.procs[1].mem, 2000);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetTemperature"), 2);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetMemoryInfo"), 3);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetCurrentClocksThrottleReasons"), 2);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetComputeRunningProcesses"), 2);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetGraphicsRunningProcesses"), 2);
    close_clean(st, &f);
}

static const char procs4[] =
    " procs=4001:100000000,4002:200000000,4003:300000000,4004:400000000"
    " gprocs=4005:500000000\n";

static void check_procs4(const gpu_sample *s)
{
    REQUIRE(s->present & GS_PROCS);
    REQUIRE(s->nprocs == 5);
    for (unsigned i = 0; i < 5; i++) {
        CHECK_EQ_U64(s->procs[i].pid, 4001 + i);
        CHECK_EQ_U64(s->procs[i].mem, (i + 1) * 100000000ull);
    }
}

/* 32-byte _v3 entries read correctly: the 0xAA probe finds the stride. */
static void test_stride(void)
{
    static const char *const globals[] = { "global stride=32\n",
                                           "global stride=24\n" };
    char text[512];
    for (int g = 0; g < 2; g++) {
        gpu_nvml *st = NULL;
        char why[WHY_LEN];
        gpu_sample s;
        int n;
        fake f;
        snprintf(text, sizeof text, "%sdev 0%s", globals[g], procs4);
        script(text);
        REQUIRE(nvml_at(FAKE_NVML_NODETAIL, &st, why) == 0);
        REQUIRE(fake_attach(&f, FAKE_NVML_NODETAIL) == 0);
        REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
        check_procs4(&s);
        CHECK_EQ_U64(f.calls("nvmlDeviceGetComputeRunningProcesses_v3"), 1);
        close_clean(st, &f);
    }
}

/* A driver that has the detail list but rejects our struct version
 * (ARGUMENT_VERSION_MISMATCH, or INVALID_ARGUMENT as nvml.h documents for
 * this call) or the GPU (NOT_SUPPORTED: "For Hopper or newer") falls back
 * to _v3 once and for all. */
static void test_detail_fallback(void)
{
    static const int codes[] = { 25, 2, 3 };
    for (size_t c = 0; c < sizeof codes / sizeof codes[0]; c++) {
        gpu_nvml *st = NULL;
        char why[WHY_LEN];
        gpu_sample s;
        char text[512];
        int n;
        fake f;

        snprintf(text, sizeof text,
                 "global stride=32 fnerr=nvmlDeviceGetRunningProcessDetailList:"
                 "%d\ndev 0%s",
                 codes[c], procs4);
        script(text);
        REQUIRE(nvml_at(FAKE_NVML_FULL, &st, why) == 0);
        REQUIRE(fake_attach(&f, FAKE_NVML_FULL) == 0);
        REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
        check_procs4(&s);
        REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
        check_procs4(&s);
        CHECK_EQ_U64(f.calls("nvmlDeviceGetRunningProcessDetailList"), 1);
        CHECK_EQ_U64(f.calls("nvmlDeviceGetComputeRunningProcesses_v3"), 2);
        close_clean(st, &f);
    }
}

/* No _v3 at run time: the 24-byte _v2 lists. */
static void test_v2_fallback(void)
{
    gpu_nvml *st = NULL;
    char why[WHY_LEN];
    gpu_sample s;
    char text[512];
    int n;
    fake f;

    snprintf(text, sizeof text,
             "global stride=32 fnerr=nvmlDeviceGetComputeRunningProcesses_v3:13"
             "\ndev 0%s",
             procs4);
    script(text);
    REQUIRE(nvml_at(FAKE_NVML_NODETAIL, &st, why) == 0);
    REQUIRE(fake_attach(&f, FAKE_NVML_NODETAIL) == 0);
    REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
    check_procs4(&s);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetComputeRunningProcesses_v2"), 1);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetGraphicsRunningProcesses_v2"), 1);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetGraphicsRunningProcesses_v3"), 0);
    close_clean(st, &f);
}

static void test_junk_procs(void)
{
    static const char *const libs[] = { FAKE_NVML_FULL, FAKE_NVML_NODETAIL,
                                        FAKE_NVML_MINIMAL };
    script("dev 0 procs=0:100,5000000:7,42:na,77:123,4194304:9\n");
    for (int i = 0; i < 3; i++) {
        gpu_nvml *st = NULL;
        char why[WHY_LEN];
        gpu_sample s;
        int n;
        fake f;
        REQUIRE(nvml_at(libs[i], &st, why) == 0);
        REQUIRE(fake_attach(&f, libs[i]) == 0);
        REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
        REQUIRE(s.nprocs == 3);
        CHECK_EQ_U64(s.nprocs_total, 3);
        CHECK_EQ_U64(s.procs[0].pid, 42);
        CHECK_EQ_U64(s.procs[0].mem, UINT64_MAX); /* kept: not available */
        CHECK_EQ_U64(s.procs[1].pid, 77);
        CHECK_EQ_U64(s.procs[1].mem, 123);
        CHECK_EQ_U64(s.procs[2].pid, 4194304);
        close_clean(st, &f);
    }
}

/* More processes than GPU_MAX_PROCS, and than the first buffer holds. */
static void test_many_procs(void)
{
    static char text[8192];
    size_t len;
    gpu_nvml *st = NULL;
    char why[WHY_LEN];
    gpu_sample s;
    int n;
    fake f;

    len = (size_t)snprintf(text, sizeof text, "dev 0 procs=");
    for (int i = 0; i < 200; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%s%d:%d",
                                i ? "," : "", 1000 + i, (i * 37) % 200 + 1);
    snprintf(text + len, sizeof text - len, "\n");
    script(text);
    REQUIRE(nvml_at(FAKE_NVML_FULL, &st, why) == 0);
    REQUIRE(fake_attach(&f, FAKE_NVML_FULL) == 0);
    REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
    CHECK_EQ_U64(s.nprocs, GPU_MAX_PROCS);
    CHECK_EQ_U64(s.nprocs_total, 200);
    /* the 64 largest users (memory 137..200), in pid order */
    for (unsigned i = 0; i < s.nprocs; i++) {
        CHECK(s.procs[i].mem > 200 - GPU_MAX_PROCS);
        if (i)
            CHECK(s.procs[i].pid > s.procs[i - 1].pid);
    }
    /* the second sample needs no retry: the buffer grew and stayed */
    REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0);
    CHECK_EQ_U64(s.nprocs_total, 200);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetRunningProcessDetailList"), 5);
    close_clean(st, &f);
}

/* Per-process busy time from nvmlDeviceGetProcessUtilization: each
 * sample counts smUtil x the time since that process's previous sample
 * (1 s a tick in the fake), only the samples newer than the last call are
 * read, the first call has no start for its oldest sample, a gap longer
 * than NVML_PUTIL_PERIOD_MAX_US counts the cap, and samples of processes
 * no longer listed are dropped. */
static void test_proc_util(void)
{
    gpu_nvml *st = NULL;
    char why[WHY_LEN];
    gpu_sample s;
    int n;
    fake f;

    script("dev 0 util=50 procs=11:1000,22:2000\n"
           "sample 0 dev 0 putil=11:50,22:10\n"
           "sample 1 dev 0 putil=11:100,22:20:7\n"
           "sample 2 dev 0 putil=11:40,22:0,33:90\n"
           "sample 3 dev 0 putil=11:40\n"
           "sample 4 dev 0 putil=\n");
    REQUIRE(nvml_at(FAKE_NVML_FULL, &st, why) == 0);
    REQUIRE(fake_attach(&f, FAKE_NVML_FULL) == 0);
    f.set_tick(1);
    REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
    REQUIRE(s.present & GS_PROC_UTIL);
    REQUIRE(s.nprocs == 2);
    /* ticks 0 and 1 read at once: tick 0 opens the clock, tick 1 counts */
    CHECK_EQ_U64(s.procs[0].busy_us, 1000000);
    CHECK_EQ_U64(s.procs[1].busy_us, 200000);
    CHECK_EQ_U64(s.procs[0].sm_util, 75);
    CHECK_EQ_U64(s.procs[1].sm_util, 15);
    /* the same tick again: nothing new, nobody busy */
    REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
    CHECK(s.present & GS_PROC_UTIL);
    CHECK_EQ_U64(s.procs[0].busy_us, 0);
    CHECK_EQ_U64(s.procs[1].busy_us, 0);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetProcessUtilization"), 2);
    /* tick 3 read after 1: two samples of pid 11, one period each; pid 22
     * absent at tick 3 (the driver leaves out idle processes); pid 33
     * is not listed */
    f.set_tick(3);
    REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
    CHECK_EQ_U64(s.procs[0].busy_us, 800000);
    CHECK_EQ_U64(s.procs[1].busy_us, 0);
    CHECK_EQ_U64(s.procs[0].sm_util, 40);
    /* a gap of 4 s in pid 11's samples counts 1 s at most */
    f.set_tick(8);
    REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
    CHECK_EQ_U64(s.procs[0].busy_us, 0);
    close_clean(st, &f);

    script("dev 0 util=50 procs=11:1000 putil=11:60\n");
    REQUIRE(nvml_at(FAKE_NVML_FULL, &st, why) == 0);
    REQUIRE(fake_attach(&f, FAKE_NVML_FULL) == 0);
    f.set_tick(2);
    REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
    CHECK_EQ_U64(s.procs[0].busy_us, 1200000);
    f.set_tick(6);
    REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
    CHECK_EQ_U64(s.procs[0].busy_us, 2400000);
    close_clean(st, &f);

    /* a failing call leaves the field absent, the rest of the sample in */
    script("dev 0 util=50 procs=11:1000 putil=11:60 fail=putil\n");
    REQUIRE(nvml_at(FAKE_NVML_FULL, &st, why) == 0);
    REQUIRE(fake_attach(&f, FAKE_NVML_FULL) == 0);
    REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
    CHECK(!(s.present & GS_PROC_UTIL));
    CHECK(s.present & GS_PROCS);
    CHECK_EQ_U64(s.procs[0].busy_us, 0);
    close_clean(st, &f);
}

/* MIG: the GPU instance of each process, from the detail list and _v3
 * (gpuInstanceId at 16); all ones (not MIG) reads as GPU_PROC_NO_GI, and
 * the unversioned call has no such field */
static void test_mig_gi(void)
{
    static const char *const globals[] = {
        "", "global fnerr=nvmlDeviceGetRunningProcessDetailList:13\n"
    };
    for (int k = 0; k < 2; k++) {
        gpu_nvml *st = NULL;
        char why[WHY_LEN], text[256];
        gpu_sample s;
        int n;
        fake f;
        snprintf(text, sizeof text, "%sdev 0 procs=11:1000:3,12:2000\n",
                 globals[k]);
        script(text);
        REQUIRE(nvml_at(FAKE_NVML_FULL, &st, why) == 0);
        REQUIRE(fake_attach(&f, FAKE_NVML_FULL) == 0);
        REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
        REQUIRE(s.nprocs == 2);
        CHECK_EQ_U64(s.procs[0].gi, 3);
        CHECK_EQ_U64(s.procs[1].gi, GPU_PROC_NO_GI);
        CHECK_EQ_U64(s.procs[0].mem, 1000);
        close_clean(st, &f);
    }
}

/* MIG mode: the GPU has no utilisation and no per-process samples (NVML
 * answers NOT_SUPPORTED), its MIG devices are read through their own
 * handles: ids, memory, processes per instance, and SM activity per GPU
 * instance from GPM (nvmlGpmMigSampleGet).  Then an unprivileged caller:
 * the GPU's own process lists are refused and the MIG handles' lists
 * give the processes, tagged with their instance. */
static void test_mig_devices(void)
{
    static const char *const noagg[] = { "", " mig_noagg=1" };
    for (int k = 0; k < 2; k++) {
        gpu_nvml *st = NULL;
        char why[WHY_LEN], text[512];
        gpu_sample s;
        int n;
        fake f;
        snprintf(text, sizeof text,
                 "dev 0 name=\"NVIDIA H100 80GB HBM3\" mem_total=85520809984 "
                 "gpm=1 util=77 mig=1%s procs=11:1000:3,12:2000:5,13:3000:3 "
                 "putil=11:50 migs=3:4000:10000:90,5:2000:20000:0,9:0:5000:0\n",
                 noagg[k]);
        script(text);
        REQUIRE(nvml_at(FAKE_NVML_FULL, &st, why) == 0);
        REQUIRE(fake_attach(&f, FAKE_NVML_FULL) == 0);
        REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
        CHECK(s.present & GS_MIG);
        CHECK(!(s.present & GS_UTIL_GPU)); /* N/A in MIG mode */
        CHECK(!(s.present & GS_PROC_UTIL));
        REQUIRE(s.nmig == 3);
        CHECK_EQ_U64(s.mig[0].gi, 3);
        CHECK_EQ_U64(s.mig[1].gi, 5);
        CHECK_EQ_U64(s.mig[2].gi, 9);
        CHECK_EQ_U64(s.mig[0].ci, 0);
        CHECK_EQ_U64(s.mig[0].mem_used, 4000);
        CHECK_EQ_U64(s.mig[1].mem_total, 20000);
        CHECK(s.mig[0].present & GS_MEM);
        CHECK(strcmp(s.mig[2].uuid,
                     "MIG-GPU-00000000-0000-0000-0000-000000000000-9") == 0);
        REQUIRE(s.present & GS_PROCS);
        REQUIRE(s.nprocs == 3);
        CHECK_EQ_U64(s.mig[0].nprocs, 2);
        CHECK_EQ_U64(s.mig[1].nprocs, 1);
        CHECK_EQ_U64(s.mig[2].nprocs, 0);
        for (uint32_t i = 0; i < s.nprocs; i++)
            CHECK_EQ_U64(s.procs[i].gi, s.procs[i].pid == 12 ? 5u : 3u);
        CHECK(!(s.mig[0].present & GS_SM_ACTIVE)); /* no GPM interval yet */
        sleep_ms(120);
        f.set_tick(1);
        REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
        REQUIRE(s.nmig == 3);
        CHECK(s.mig[0].present & GS_SM_ACTIVE);
        CHECK(s.mig[0].sm_active > 0.899 && s.mig[0].sm_active < 0.901);
        CHECK(s.mig[1].present & GS_SM_ACTIVE);
        CHECK(s.mig[1].sm_active < 0.001);
        CHECK(f.calls("nvmlGpmMigSampleGet") == 6);
        CHECK(f.calls("nvmlDeviceGetMigDeviceHandleByIndex") >= 6);
        close_clean(st, &f);
    }
}

/* MPS: the compute list names the MPS server, the MPS call its clients;
 * clients are marked (and appended when the compute list lacks them),
 * through both entry strides. */
static void test_mps(void)
{
    static const char *const globals[] = { "", "global stride=32\n" };
    for (int k = 0; k < 2; k++) {
        gpu_nvml *st = NULL;
        char why[WHY_LEN], text[256];
        gpu_sample s;
        int n, mps = 0;
        fake f;
        snprintf(text, sizeof text,
                 "%sdev 0 cc=8.0 procs=50:500 mps=61:1000,62:2000\n",
                 globals[k]);
        script(text);
        REQUIRE(nvml_at(FAKE_NVML_FULL, &st, why) == 0);
        REQUIRE(fake_attach(&f, FAKE_NVML_FULL) == 0);
        REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
        REQUIRE(s.nprocs == 3);
        CHECK_EQ_U64(s.nprocs_total, 3);
        for (uint32_t i = 0; i < s.nprocs; i++) {
            mps += s.procs[i].mps;
            CHECK_EQ_U64(s.procs[i].mps, s.procs[i].pid != 50);
            if (s.procs[i].pid == 62)
                CHECK_EQ_U64(s.procs[i].mem, 2000);
        }
        CHECK(mps == 2);
        CHECK(!(s.present & GS_MIG));
        close_clean(st, &f);
    }
}

static void test_unsupported(void)
{
    gpu_nvml *st = NULL;
    char why[WHY_LEN];
    gpu_sample s;
    int n;
    fake f;

    script("dev 0 util=5 mem_total=100 mem_used=10 temp=40 power=5000 "
           "unsupported=fan,ecc,pcie,energy,throttle,power_limit,clk_sm "
           "fail=util:999\n"
           "sample 1 dev 0 pstate=32 unsupported=procs,temp ok=util\n");
    REQUIRE(nvml_at(FAKE_NVML_FULL, &st, why) == 0);
    REQUIRE(fake_attach(&f, FAKE_NVML_FULL) == 0);
    REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
    CHECK_EQ_U64(s.present, GS_MEM | GS_MEM_RESERVED | GS_TEMP | GS_POWER |
                                GS_PSTATE | GS_PROCS | GS_PROC_UTIL);
    CHECK_EQ_U64(s.fan_pct, 0);
    CHECK_EQ_U64(s.temp_c, 40);
    f.set_tick(1);
    REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
    CHECK_EQ_U64(s.present, GS_UTIL_GPU | GS_UTIL_MEM | GS_MEM |
                                GS_MEM_RESERVED | GS_POWER);
    CHECK_EQ_U64(s.util_gpu, 5);
    close_clean(st, &f);
}

/* One device lost: it is reported with no fields, the other is intact. */
static void test_lost(void)
{
    gpu_nvml *st = NULL;
    char why[WHY_LEN];
    gpu_sample s[2];
    int n;
    fake f;

    script("dev 0 util=11 procs=10:1\n"
           "dev 1 util=22 procs=20:2\n"
           "sample 1 dev 1 lost=1\n"
           "sample 2 dev 1 lost=0\n");
    REQUIRE(nvml_at(FAKE_NVML_FULL, &st, why) == 0);
    REQUIRE(fake_attach(&f, FAKE_NVML_FULL) == 0);
    f.set_tick(1);
    REQUIRE(gpu_nvml_sample(st, s, 2, &n) == 0);
    REQUIRE(n == 2);
    CHECK_EQ_U64(s[1].dev, 1);
    CHECK_EQ_U64(s[1].present, GS_LOST);
    CHECK_EQ_U64(s[1].util_gpu, 0);
    CHECK(s[0].present & GS_UTIL_GPU);
    CHECK(s[0].present & GS_PROCS);
    CHECK_EQ_U64(s[0].util_gpu, 11);
    /* the GPU is reported as soon as it answers again */
    f.set_tick(2);
    REQUIRE(gpu_nvml_sample(st, s, 2, &n) == 0 && n == 2);
    CHECK_EQ_U64(s[1].util_gpu, 22);
    CHECK(s[1].present & GS_PROCS);
    close_clean(st, &f);
}

/* A lost GPU in the middle of a sample (processes) also clears fields
 * already read. */
static void test_lost_midway(void)
{
    gpu_nvml *st = NULL;
    char why[WHY_LEN];
    gpu_sample s;
    int n;
    fake f;

    script("dev 0 util=11 fail=procs:15\n");
    REQUIRE(nvml_at(FAKE_NVML_NODETAIL, &st, why) == 0);
    REQUIRE(fake_attach(&f, FAKE_NVML_NODETAIL) == 0);
    REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
    CHECK_EQ_U64(s.present, GS_LOST);
    CHECK_EQ_U64(s.util_gpu, 0);
    close_clean(st, &f);
}

static void test_versioned_fallbacks(void)
{
    gpu_nvml *st = NULL;
    char why[WHY_LEN];
    gpu_sample s;
    int n;
    fake f;

    script("global fnerr=nvmlInitWithFlags:2,nvmlDeviceGetMemoryInfo_v2:25,"
           "nvmlDeviceGetTemperatureV:25\n"
           "dev 0 mem_total=1000 mem_used=100 mem_reserved=50 temp=70\n");
    REQUIRE(nvml_at(FAKE_NVML_FULL, &st, why) == 0);
    REQUIRE(fake_attach(&f, FAKE_NVML_FULL) == 0);
    CHECK_EQ_U64(f.calls("nvmlInit_v2"), 1);
    REQUIRE(gpu_nvml_sample(st, &s, 1, &n) == 0 && n == 1);
    CHECK(s.present & GS_MEM);
    CHECK(!(s.present & GS_MEM_RESERVED));
    CHECK_EQ_U64(s.mem_used, 150);
    CHECK_EQ_U64(s.temp_c, 70);
    CHECK_EQ_U64(f.calls("nvmlDeviceGetTemperature"), 1);
    close_clean(st, &f);
}

static void test_missing_lib(void)
{
    gpu_nvml *st = (void *)1;
    char why[WHY_LEN];
    const char *path = "/nonexistent/gpufl-test/libnvidia-ml.so.1";

    CHECK_EQ_U64(nvml_at(path, &st, why), GPUFL_EUNAVAIL);
    CHECK(st == NULL);
    CHECK(strstr(why, "nvml: ") == why);
    CHECK(strstr(why, path) != NULL);
    CHECK(strstr(why, "No such file") != NULL);
    CHECK(strstr(why, "host CPU/RAM") != NULL);
    /* a file that is not NVML */
    CHECK_EQ_U64(nvml_at("libc.so.6", &st, why), GPUFL_EUNAVAIL);
    CHECK(strstr(why, "not an NVML library") != NULL);
}

static void test_init_failures(void)
{
    gpu_nvml *st = NULL;
    char why[WHY_LEN];

    script("dev 0\n");
    CHECK_EQ_U64(nvml_at(FAKE_NVML_NOINIT, &st, why), GPUFL_EUNAVAIL);
    CHECK(st == NULL);
    CHECK(strstr(why, "driver is not loaded") != NULL);
    CHECK(strstr(why, "Driver Not Loaded") != NULL);

    script("global init_err=4\ndev 0\n");
    CHECK_EQ_U64(nvml_at(FAKE_NVML_FULL, &st, why), GPUFL_EPERM);
    CHECK(strstr(why, "/dev/nvidia") != NULL);

    script("global init_err=18\ndev 0\n");
    CHECK_EQ_U64(nvml_at(FAKE_NVML_FULL, &st, why), GPUFL_EUNAVAIL);
    CHECK(strstr(why, "reboot") != NULL);

    script("global init_err=999\ndev 0\n");
    CHECK_EQ_U64(nvml_at(FAKE_NVML_FULL, &st, why), GPUFL_EUNAVAIL);
    CHECK(strstr(why, "Unknown Error (NVML error 999)") != NULL);
    /* nothing stayed loaded or initialised */
    CHECK(dlopen(FAKE_NVML_FULL, RTLD_NOW | RTLD_NOLOAD) == NULL);
}

static void test_no_devices(void)
{
    gpu_nvml *st = NULL;
    char why[WHY_LEN];

    script("global driver=550.54.15\n");
    CHECK_EQ_U64(nvml_at(FAKE_NVML_FULL, &st, why), GPUFL_EUNAVAIL);
    CHECK(st == NULL);
    CHECK(strstr(why, "no NVIDIA GPU visible") != NULL);
    CHECK(strstr(why, "550.54.15") != NULL);

    script("dev 0 fail=handle:4\ndev 1 fail=handle:4\n");
    CHECK_EQ_U64(nvml_at(FAKE_NVML_FULL, &st, why), GPUFL_EPERM);
    CHECK(strstr(why, "all 2 GPUs") != NULL);

    script("global count_err=999\n");
    CHECK_EQ_U64(nvml_at(FAKE_NVML_FULL, &st, why), GPUFL_EUNAVAIL);
    CHECK(strstr(why, "nvmlDeviceGetCount") != NULL);
    CHECK(dlopen(FAKE_NVML_FULL, RTLD_NOW | RTLD_NOLOAD) == NULL);
}

/* One GPU that cannot be opened is skipped; the rest are numbered 0.. */
static void test_skip_device(void)
{
    gpu_nvml *st = NULL;
    char why[WHY_LEN];
    gpu_device d[4];
    gpu_sample s[4];
    int n;
    fake f;

    script("dev 0 name=A fail=handle:4 util=1\ndev 1 name=B util=2\n");
    REQUIRE(nvml_at(FAKE_NVML_FULL, &st, why) == 0);
    REQUIRE(fake_attach(&f, FAKE_NVML_FULL) == 0);
    REQUIRE(gpu_nvml_devices(st, d, 4) == 1);
    CHECK_STR(d[0].name, "B");
    CHECK_EQ_U64(d[0].id, 0);
    REQUIRE(gpu_nvml_sample(st, s, 4, &n) == 0 && n == 1);
    CHECK_EQ_U64(s[0].util_gpu, 2);
    close_clean(st, &f);
}

static int still_loaded(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}

static const char *proc_level_name(int level)
{
    static const char *const names[] = { "detail", "v3", "v2", "v1", "none" };
    return level >= 0 && level <= PROC_NONE ? names[level] : "?";
}

/* One real GPU's sample, checked for NVML's documented units and ranges
 * (mW, MHz, Celsius, percent, bytes, ratios from GPM). */
static void check_real_sample(const gpu_device *d, const gpu_sample *s,
                              const gpu_sample *prev)
{
    CHECK(s->present & GS_MEM);
    CHECK(strncmp(d->uuid, "GPU-", 4) == 0);
    CHECK(d->mem_total > 0 && s->mem_used <= s->mem_total);
    if (s->present & GS_MEM_RESERVED)
        CHECK(s->mem_used + s->mem_reserved <= s->mem_total);
    if (s->present & GS_UTIL_GPU)
        CHECK(s->util_gpu <= 100 && s->util_mem <= 100);
    if (s->present & GS_TEMP)
        CHECK(s->temp_c > 0 && s->temp_c < 125);
    if (s->present & GS_POWER) /* mW: 1 W .. 3 kW */
        CHECK(s->power_mw >= 1000 && s->power_mw <= 3000000);
    if (s->present & GS_POWER_LIMIT)
        CHECK(s->power_limit_mw >= 10000 && s->power_limit_mw <= 3000000);
    if ((s->present & GS_CLOCKS) && d->max_sm_clock_mhz)
        CHECK(s->clk_sm > 0 && s->clk_sm <= d->max_sm_clock_mhz + 50);
    if (s->present & GS_PSTATE)
        CHECK(s->pstate >= 0 && s->pstate <= 15);
    if (s->present & GS_SM_ACTIVE)
        CHECK(s->sm_active >= 0 && s->sm_active <= 1.0001);
    if (s->present & GS_SM_OCC)
        CHECK(s->sm_occupancy >= 0 && s->sm_occupancy <= 1.0001);
    if ((s->present & GS_ENERGY) && (prev->present & GS_ENERGY))
        CHECK(s->energy_mj >= prev->energy_mj);
    if (s->present & GS_PROCS) {
        CHECK(s->nprocs <= s->nprocs_total);
        for (unsigned k = 0; k < s->nprocs; k++)
            CHECK(s->procs[k].pid > 0 && s->procs[k].pid <= 4194304u);
    }
}

/* Whatever the machine has: absent here, a smoke test on a GPU host.
 * Two samples 150 ms apart, so that a Hopper GPU also reports GPM. */
static void test_real_nvml(void)
{
    gpu_nvml *st = NULL;
    char why[WHY_LEN];
    gpu_device d[GPU_MAX_DEVICES];
    gpu_sample s0[GPU_MAX_DEVICES], s[GPU_MAX_DEVICES];
    int rc, nd, n = 0;

    unsetenv("FAKE_NVML_SCRIPT");
    /* the fakes' soname is libnvidia-ml.so.1: one still loaded would be
     * what dlopen("libnvidia-ml.so.1") returns */
    CHECK(!still_loaded(FAKE_NVML_FULL) && !still_loaded(FAKE_NVML_NODETAIL) &&
          !still_loaded(FAKE_NVML_MINIMAL) && !still_loaded(FAKE_NVML_NOINIT));
    rc = nvml_at(NULL, &st, why);
    if (rc) {
        fprintf(stderr, "  (no usable NVML here: %s)\n", why);
        CHECK(strstr(why, "nvml: ") == why);
        CHECK(st == NULL);
        return;
    }
    g_open_src = st;
    {
        const gpu_nvml *ns = st;
        struct link_map *lm = NULL;
        CHECK(dlsym(ns->dl, "fake_nvml_calls") == NULL);
        if (dlinfo(ns->dl, RTLD_DI_LINKMAP, &lm) == 0 && lm)
            fprintf(stderr, "  nvml-real library %s\n", lm->l_name);
    }
    nd = gpu_nvml_devices(st, d, GPU_MAX_DEVICES);
    CHECK(nd > 0);
    CHECK(gpu_nvml_sample(st, s0, GPU_MAX_DEVICES, &n) == 0);
    CHECK(n == nd);
    sleep_ms(150);
    CHECK(gpu_nvml_sample(st, s, GPU_MAX_DEVICES, &n) == 0);
    CHECK(n == nd);
    for (int i = 0; i < n; i++) {
        const gpu_nvml *ns = st;
        fprintf(stderr,
                "  nvml-real GPU %d \"%s\" %s pci %s driver %s cc %d.%d"
                " mem %" PRIu64 "/%" PRIu64 " reserved %" PRIu64
                " present 0x%x util %u%% temp %d C power %u mW limit %u mW"
                " clk %u/%u MHz pstate %d procs %u/%u (list: %s) gpm %d"
                " sm_active %.3f sm_occ %.3f\n",
                i, d[i].name, d[i].uuid, d[i].pci_bus_id, d[i].driver,
                d[i].cc_major, d[i].cc_minor, s[i].mem_used, s[i].mem_total,
                s[i].mem_reserved, s[i].present, s[i].util_gpu, s[i].temp_c,
                s[i].power_mw, s[i].power_limit_mw, s[i].clk_sm, s[i].clk_mem,
                s[i].pstate, s[i].nprocs, s[i].nprocs_total,
                proc_level_name(ns->proc_level), ns->dev[i].gpm, s[i].sm_active,
                s[i].sm_occupancy);
        check_real_sample(&d[i], &s[i], &s0[i]);
    }
    gpu_nvml_close(st);
    g_open_src = NULL;
}

#define T(fn)                                                                  \
    do {                                                                       \
        RUN(fn);                                                               \
        cleanup();                                                             \
    } while (0)

int main(void)
{
    T(test_full_devices);
    T(test_full_sample);
    T(test_gpm);
    T(test_minimal);
    T(test_stride);
    T(test_detail_fallback);
    T(test_v2_fallback);
    T(test_junk_procs);
    T(test_many_procs);
    T(test_proc_util);
    T(test_mig_gi);
    T(test_mig_devices);
    T(test_mps);
    T(test_unsupported);
    T(test_lost);
    T(test_lost_midway);
    T(test_versioned_fallbacks);
    T(test_missing_lib);
    T(test_init_failures);
    T(test_no_devices);
    T(test_skip_device);
    T(test_real_nvml);
    if (script_path[0])
        unlink(script_path);
    TEST_DONE();
}
