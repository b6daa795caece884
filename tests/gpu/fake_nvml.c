/*
 * fake_nvml.c - a scripted libnvidia-ml.so.1 for the tests of src/gpu's NVML
 * reader (tests/gpu), libgpufl's nvml engine and `gpufl idle`.
 *
 * It exports NVML's real symbol names with the real struct layouts (declared
 * here independently of src/gpu/nvml_abi_int.h, so a layout mistake in one does not
 * hide in both) and answers from a script named by FAKE_NVML_SCRIPT, read
 * at every first nvmlInit*.  Build variants:
 *   (none)               everything, as a current R550+ driver
 *   -DFAKE_NVML_NODETAIL no nvmlDeviceGetRunningProcessDetailList (R525-R535)
 *   -DFAKE_NVML_MINIMAL  only the old unversioned symbols: no _v2/_v3, no
 *                        nvmlInitWithFlags, MemoryInfo_v2, TemperatureV,
 *                        ClocksEventReasons, EnforcedPowerLimit or GPM
 *   -DFAKE_NVML_NOINIT   every nvmlInit* answers DRIVER_NOT_LOADED
 *
 * Script, one directive a line, '#' starts a comment:
 *   global count=N driver=STR stride=24|32 init_err=CODE count_err=CODE
 *          fnerr=SYMBOL:CODE[,SYMBOL:CODE] autotick=SYMBOL
 *                             (autotick: every call of SYMBOL on device 0
 *                             advances the tick by one before answering, so
 *                             a daemon replays a per-second trace by itself)
 *   dev D  FIELD=VALUE ...    base values of device D
 *   sample T dev D FIELD=VALUE ...
 *                             applied on top once fake_nvml_set_tick(>=T),
 *                             in file order (so later ticks inherit)
 * FIELDs: name="..." uuid= pci= cc=MAJ.MIN (default 9.0; below 9.0
 * nvmlDeviceGetRunningProcessDetailList answers NOT_SUPPORTED, as NVML
 * documents it "For Hopper or newer") mem_total= mem_used=
 * mem_reserved= power_limit= max_sm= max_mem= bus_width= util= util_mem=
 * temp= power= fan= clk_sm= clk_mem= clk_gfx= throttle= pstate= pcie_tx=
 * pcie_rx= ecc_corr= ecc_uncorr= energy= gpm=0|1 gpm_sm=PCT gpm_occ=PCT
 * lost=0|1 procs=PID:BYTES[:GI],... gprocs=PID:BYTES[:GI],... (BYTES "na"
 * = not available; GI a MIG GPU instance id), putil=PID:SM[:MEM],... (the per-process utilisation sample
 * of each tick, nvmlDeviceGetProcessUtilization: one sample a tick, its
 * timeStamp FAKE_PUTIL_T0_US + tick * 1 s, the last FAKE_PUTIL_DEPTH
 * ticks kept as the driver's buffer does), and the error switches unsupported=F,F (NOT_SUPPORTED),
 * fail=F:CODE,F:CODE (alias err=; no code = UNKNOWN) and ok=F,F, where F
 * is one of fake_field_names[] ("handle" fails nvmlDeviceGetHandleByIndex).
 *
 * MIG and MPS (FIELDs): mig=0|1 (MIG mode; on, the GPU answers
 * nvmlDeviceGetUtilizationRates and nvmlDeviceGetProcessUtilization with
 * NOT_SUPPORTED, as nvml.h documents for MIG-enabled GPUs),
 * migs=GI:USED:TOTAL[:SM],... (its MIG devices in index order, one compute
 * instance 0 each: memory bytes and the GPM SM activity percent of that
 * GPU instance, nvmlGpmMigSampleGet), mig_noagg=1 (the GPU's own process
 * lists answer NO_PERMISSION, as NVML does in MIG mode for an
 * unprivileged caller; the MIG device handles list the processes of
 * their instance), mps=PID:BYTES[:GI],... (MPS clients,
 * nvmlDeviceGetMPSComputeRunningProcesses_v3).
 *
 * stride=32 makes the _v3 process calls write 32-byte entries, as some
 * R535 drivers did.  Test hooks (not NVML): fake_nvml_set_tick,
 * fake_nvml_calls, fake_nvml_init_refs, fake_nvml_live_gpm.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- ABI ---- */

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;

#define OK 0
#define E_UNINIT 1
#define E_ARG 2
#define E_UNSUP 3
#define E_SIZE 7
#define E_DRIVER 9
#define E_NOTFOUND 6
#define E_LOST 15
#define E_VERSION 25
#define E_UNKNOWN 999

typedef struct {
    unsigned int gpu, memory;
} fake_util_t;
typedef struct {
    unsigned long long total, free, used;
} fake_mem_v1_t;
typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} fake_mem_v2_t;
typedef struct {
    unsigned int version;
    int sensorType, temperature;
} fake_temp_t;
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} fake_pci_t;
typedef struct {
    char busId[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
} fake_pci_v1_t;
typedef struct {
    unsigned int version, mode, numProcArrayEntries;
    void *procArray;
} fake_detail_list_t;
typedef struct {
    unsigned int version, isSupportedDevice;
} fake_gpm_support_t;
typedef struct {
    unsigned int metricId;
    nvmlReturn_t nvmlReturn;
    double value;
    char *names[3];
} fake_gpm_metric_t;
typedef struct {
    unsigned int version, numMetrics;
    nvmlGpmSample_t sample1, sample2;
    fake_gpm_metric_t metrics[333];
} fake_gpm_get_t;

/* nvmlProcessUtilizationSample_t (nvml.h): pid, timeStamp (CPU time in
 * microseconds), smUtil, memUtil, encUtil, decUtil (percent). */
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil, memUtil, encUtil, decUtil;
} fake_putil_t;

_Static_assert(sizeof(fake_putil_t) == 32, "process utilization sample");
_Static_assert(offsetof(fake_putil_t, timeStamp) == 8, "putil timeStamp");
_Static_assert(sizeof(fake_mem_v2_t) == 40, "mem v2");
_Static_assert(sizeof(fake_temp_t) == 12, "temp v1");
_Static_assert(sizeof(fake_pci_t) == 68, "pci");
_Static_assert(sizeof(fake_detail_list_t) == 24, "detail list");
_Static_assert(sizeof(fake_gpm_get_t) == 13344, "gpm get");

/* Every exported symbol, declared first (the project builds with
 * -Wmissing-prototypes, and this list doubles as the export list). */
#define DEVF(name, ...) nvmlReturn_t name(nvmlDevice_t dev, __VA_ARGS__)
nvmlReturn_t nvmlInit(void);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t r);
nvmlReturn_t nvmlSystemGetDriverVersion(char *, unsigned int);
nvmlReturn_t nvmlDeviceGetCount(unsigned int *);
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int, nvmlDevice_t *);
DEVF(nvmlDeviceGetName, char *, unsigned int);
DEVF(nvmlDeviceGetUUID, char *, unsigned int);
DEVF(nvmlDeviceGetPciInfo, fake_pci_v1_t *);
DEVF(nvmlDeviceGetCudaComputeCapability, int *, int *);
DEVF(nvmlDeviceGetMemoryInfo, fake_mem_v1_t *);
DEVF(nvmlDeviceGetPowerManagementLimit, unsigned int *);
DEVF(nvmlDeviceGetMaxClockInfo, unsigned int, unsigned int *);
DEVF(nvmlDeviceGetMemoryBusWidth, unsigned int *);
DEVF(nvmlDeviceGetUtilizationRates, fake_util_t *);
DEVF(nvmlDeviceGetTemperature, unsigned int, unsigned int *);
DEVF(nvmlDeviceGetPowerUsage, unsigned int *);
DEVF(nvmlDeviceGetFanSpeed, unsigned int *);
DEVF(nvmlDeviceGetClockInfo, unsigned int, unsigned int *);
DEVF(nvmlDeviceGetCurrentClocksThrottleReasons, unsigned long long *);
DEVF(nvmlDeviceGetPerformanceState, int *);
DEVF(nvmlDeviceGetPcieThroughput, unsigned int, unsigned int *);
DEVF(nvmlDeviceGetTotalEccErrors, unsigned int, unsigned int,
     unsigned long long *);
DEVF(nvmlDeviceGetTotalEnergyConsumption, unsigned long long *);
DEVF(nvmlDeviceGetComputeRunningProcesses, unsigned int *, void *);
DEVF(nvmlDeviceGetGraphicsRunningProcesses, unsigned int *, void *);
DEVF(nvmlDeviceGetProcessUtilization, fake_putil_t *, unsigned int *,
     unsigned long long);
#ifndef FAKE_NVML_MINIMAL
nvmlReturn_t nvmlInitWithFlags(unsigned int);
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int, nvmlDevice_t *);
DEVF(nvmlDeviceGetPciInfo_v3, fake_pci_t *);
DEVF(nvmlDeviceGetPciInfo_v2, fake_pci_t *);
DEVF(nvmlDeviceGetMemoryInfo_v2, fake_mem_v2_t *);
DEVF(nvmlDeviceGetEnforcedPowerLimit, unsigned int *);
DEVF(nvmlDeviceGetTemperatureV, fake_temp_t *);
DEVF(nvmlDeviceGetCurrentClocksEventReasons, unsigned long long *);
DEVF(nvmlDeviceGetComputeRunningProcesses_v3, unsigned int *, void *);
DEVF(nvmlDeviceGetGraphicsRunningProcesses_v3, unsigned int *, void *);
DEVF(nvmlDeviceGetComputeRunningProcesses_v2, unsigned int *, void *);
DEVF(nvmlDeviceGetGraphicsRunningProcesses_v2, unsigned int *, void *);
DEVF(nvmlGpmQueryDeviceSupport, fake_gpm_support_t *);
nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *);
nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t);
DEVF(nvmlGpmSampleGet, nvmlGpmSample_t);
nvmlReturn_t nvmlGpmMetricsGet(fake_gpm_get_t *);
#ifndef FAKE_NVML_NODETAIL
DEVF(nvmlDeviceGetRunningProcessDetailList, fake_detail_list_t *);
#endif
DEVF(nvmlDeviceGetMigMode, unsigned int *, unsigned int *);
DEVF(nvmlDeviceGetMaxMigDeviceCount, unsigned int *);
DEVF(nvmlDeviceGetMigDeviceHandleByIndex, unsigned int, nvmlDevice_t *);
DEVF(nvmlDeviceGetGpuInstanceId, unsigned int *);
DEVF(nvmlDeviceGetComputeInstanceId, unsigned int *);
DEVF(nvmlGpmMigSampleGet, unsigned int, nvmlGpmSample_t);
DEVF(nvmlDeviceGetMPSComputeRunningProcesses_v3, unsigned int *, void *);
#endif
void fake_nvml_set_tick(int tick);
int fake_nvml_calls(const char *fn);
int fake_nvml_init_refs(void);
int fake_nvml_live_gpm(void);

/* ---- scripted state ---- */

#define FAKE_MAX_DEV 8
#define FAKE_MAX_MIG 7 /* MIG devices per GPU (A100/H100: 7) */
#define FAKE_MAX_PROCS 256
#define FAKE_SCRIPT_CAP (256 * 1024)
#define FAKE_MAX_SAMPLES 1024
#define FAKE_MAX_FNERR 16
#define FAKE_MAX_CALLS 128
#define FAKE_GPM_POOL 32
#define FAKE_PUTIL_DEPTH 10 /* ticks of process samples the driver keeps */
#define FAKE_PUTIL_T0_US 1795994980000000ull

enum {
    F_HANDLE,
    F_NAME,
    F_UUID,
    F_PCI,
    F_CC,
    F_MEM,
    F_POWER_LIMIT,
    F_MAX_CLOCK,
    F_BUS_WIDTH,
    F_UTIL,
    F_TEMP,
    F_POWER,
    F_FAN,
    F_CLK_SM,
    F_CLK_MEM,
    F_CLK_GFX,
    F_THROTTLE,
    F_PSTATE,
    F_PCIE,
    F_ECC,
    F_ENERGY,
    F_PROCS,
    F_GPROCS,
    F_GPM,
    F_GPM_SM,
    F_GPM_OCC,
    F_PUTIL,
    F_N
};
static const char *const fake_field_names[F_N] = {
    "handle",      "name",      "uuid",      "pci",     "cc",       "mem",
    "power_limit", "max_clock", "bus_width", "util",    "temp",     "power",
    "fan",         "clk_sm",    "clk_mem",   "clk_gfx", "throttle", "pstate",
    "pcie",        "ecc",       "energy",    "procs",   "gprocs",   "gpm",
    "gpm_sm",      "gpm_occ",   "putil"
};

typedef struct {
    unsigned int pid;
    unsigned long long mem;
    unsigned int gi; /* MIG GPU instance, all ones outside MIG */
} fake_proc;

typedef struct {
    unsigned int pid, sm, mem;
} fake_putil;

typedef struct {
    unsigned int gi;
    unsigned long long used, total;
    double sm; /* GPM SM activity, percent */
} fake_mig;

struct nvmlDevice_st {
    char name[96], uuid[96], pci[32];
    int cc_major, cc_minor;
    unsigned long long mem_total, mem_used, mem_reserved;
    unsigned int power_limit, max_sm, max_mem, bus_width;
    unsigned int util, util_mem, power, fan, clk_sm, clk_mem, clk_gfx;
    unsigned int pcie_tx, pcie_rx;
    int temp, pstate, gpm, lost;
    unsigned long long throttle, ecc_corr, ecc_uncorr, energy;
    double gpm_sm, gpm_occ;
    int nprocs, ngprocs;
    fake_proc procs[FAKE_MAX_PROCS], gprocs[FAKE_MAX_PROCS];
    int nputil;
    fake_putil putil[FAKE_MAX_PROCS];
    int err[F_N];
    int mig, mig_noagg, nmig, nmps;
    fake_mig migs[FAKE_MAX_MIG];
    fake_proc mps[FAKE_MAX_PROCS];
    /* a MIG device handle: its parent's index + 1 (0: a GPU) and ids */
    int mig_parent;
    unsigned int gi;
};
typedef struct nvmlDevice_st fake_dev;

struct nvmlGpmSample_st {
    int used, taken, dev;
    unsigned long long seq;
    double sm, occ;
    int err_sm, err_occ;
};

static struct {
    int refs, tick, count, stride, init_err, count_err;
    char driver[80];
    char autotick[64]; /* this symbol on device 0 advances the tick */
    struct {
        char fn[64];
        int code;
    } fnerr[FAKE_MAX_FNERR];
    int nfnerr;
    fake_dev base[FAKE_MAX_DEV], cur[FAKE_MAX_DEV];
    fake_dev migdev[FAKE_MAX_DEV][FAKE_MAX_MIG]; /* MIG device handles */
    char script[FAKE_SCRIPT_CAP];
    struct {
        int tick, dev;
        const char *fields;
    } samples[FAKE_MAX_SAMPLES];
    int nsamples;
    struct {
        const char *fn;
        int n;
    } calls[FAKE_MAX_CALLS];
    int ncalls;
    struct nvmlGpmSample_st gpm[FAKE_GPM_POOL];
    unsigned long long gpm_seq;
} F;

static void fake_count(const char *fn)
{
    for (int i = 0; i < F.ncalls; i++)
        if (strcmp(F.calls[i].fn, fn) == 0) {
            F.calls[i].n++;
            return;
        }
    if (F.ncalls < FAKE_MAX_CALLS) {
        F.calls[F.ncalls].fn = fn; /* __func__: static storage */
        F.calls[F.ncalls++].n = 1;
    }
}

/* Truncating copy; the fake's strings are test inputs. */
static void fake_copy(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

static int fake_fnerr(const char *fn)
{
    for (int i = 0; i < F.nfnerr; i++)
        if (strcmp(F.fnerr[i].fn, fn) == 0)
            return F.fnerr[i].code;
    return 0;
}

/* ---- script parsing ---- */

static int fake_bad(int line, const char *what, const char *s)
{
    fprintf(stderr, "fake_nvml: script line %d: %s: %s\n", line, what, s);
    return -1;
}

/* Next key=value token of p.  Returns the rest, or NULL at the end. */
static const char *fake_kv(const char *p, char *key, size_t kcap, char *val,
                           size_t vcap)
{
    size_t k = 0, v = 0;
    while (*p == ' ' || *p == '\t')
        p++;
    if (!*p || *p == '#')
        return NULL;
    while (*p && *p != '=' && *p != ' ' && k + 1 < kcap)
        key[k++] = *p++;
    key[k] = 0;
    if (*p == '=')
        p++;
    if (*p == '"') {
        for (p++; *p && *p != '"' && v + 1 < vcap;)
            val[v++] = *p++;
        if (*p == '"')
            p++;
    } else {
        while (*p && *p != ' ' && *p != '\t' && v + 1 < vcap)
            val[v++] = *p++;
    }
    val[v] = 0;
    return p;
}

static int fake_field(const char *name)
{
    for (int i = 0; i < F_N; i++)
        if (strcmp(fake_field_names[i], name) == 0)
            return i;
    return -1;
}

static int fake_procs(fake_proc *out, int *n, const char *v, int line)
{
    const char *p = v;
    char *end;
    *n = 0;
    while (*p) {
        if (*n >= FAKE_MAX_PROCS)
            return fake_bad(line, "too many processes", v);
        out[*n].pid = (unsigned int)strtoul(p, &end, 10);
        if (end == p || *end != ':')
            return fake_bad(line, "bad process", p);
        p = end + 1;
        if (strncmp(p, "na", 2) == 0) {
            out[*n].mem = ~0ull;
            p += 2;
        } else {
            out[*n].mem = strtoull(p, &end, 10);
            if (end == p)
                return fake_bad(line, "bad process memory", p);
            p = end;
        }
        out[*n].gi = 0xFFFFFFFFu;
        if (*p == ':') { /* PID:BYTES:GI, a process in MIG instance GI */
            out[*n].gi = (unsigned int)strtoul(p + 1, &end, 10);
            if (end == p + 1)
                return fake_bad(line, "bad GPU instance", p);
            p = end;
        }
        (*n)++;
        if (*p == ',')
            p++;
        else if (*p)
            return fake_bad(line, "bad process list", v);
    }
    return 0;
}

/* "PID:SM[:MEM],..." */
static int fake_putils(fake_dev *d, const char *v, int line)
{
    const char *p = v;
    char *end;
    d->nputil = 0;
    while (*p) {
        fake_putil *u;
        if (d->nputil >= FAKE_MAX_PROCS)
            return fake_bad(line, "too many putil samples", v);
        u = &d->putil[d->nputil];
        memset(u, 0, sizeof *u);
        u->pid = (unsigned int)strtoul(p, &end, 10);
        if (end == p || *end != ':')
            return fake_bad(line, "bad putil (PID:SM[:MEM])", p);
        p = end + 1;
        u->sm = (unsigned int)strtoul(p, &end, 10);
        if (end == p)
            return fake_bad(line, "bad putil SM", p);
        p = end;
        if (*p == ':') {
            u->mem = (unsigned int)strtoul(p + 1, &end, 10);
            p = end;
        }
        d->nputil++;
        if (*p == ',')
            p++;
        else if (*p)
            return fake_bad(line, "bad putil list", v);
    }
    return 0;
}

/* "GI:USED:TOTAL[:SM],..." */
static int fake_migs(fake_dev *d, const char *v, int line)
{
    const char *p = v;
    char *end;
    d->nmig = 0;
    while (*p) {
        fake_mig *m;
        if (d->nmig >= FAKE_MAX_MIG)
            return fake_bad(line, "too many MIG devices", v);
        m = &d->migs[d->nmig];
        memset(m, 0, sizeof *m);
        m->gi = (unsigned int)strtoul(p, &end, 10);
        if (end == p || *end != ':')
            return fake_bad(line, "bad MIG device (GI:USED:TOTAL[:SM])", p);
        p = end + 1;
        m->used = strtoull(p, &end, 10);
        if (end == p || *end != ':')
            return fake_bad(line, "bad MIG memory used", p);
        p = end + 1;
        m->total = strtoull(p, &end, 10);
        if (end == p)
            return fake_bad(line, "bad MIG memory total", p);
        p = end;
        if (*p == ':') {
            m->sm = strtod(p + 1, &end);
            p = end;
        }
        d->nmig++;
        if (*p == ',')
            p++;
        else if (*p)
            return fake_bad(line, "bad MIG list", v);
    }
    return 0;
}

/* "a:1,b:2" or "a,b" (code given) applied to d->err. */
static int fake_errs(fake_dev *d, const char *v, int code, int line)
{
    char name[32];
    const char *p = v;
    while (*p) {
        size_t k = 0;
        int c = code, f;
        while (*p && *p != ',' && *p != ':' && k + 1 < sizeof name)
            name[k++] = *p++;
        name[k] = 0;
        if (*p == ':') {
            char *end;
            c = (int)strtol(p + 1, &end, 10);
            p = end;
        }
        f = fake_field(name);
        if (f < 0)
            return fake_bad(line, "unknown field", name);
        d->err[f] = c;
        if (*p == ',')
            p++;
    }
    return 0;
}

enum { T_STR, T_U32, T_I32, T_U64, T_DBL };
#define FLD(f, t)                                                              \
    {                                                                          \
#f, t, offsetof(fake_dev, f), sizeof(((fake_dev *)0)->f)               \
    }
static const struct {
    const char *key;
    int type;
    size_t off, size;
} fake_values[] = {
    FLD(name, T_STR),        FLD(uuid, T_STR),     FLD(pci, T_STR),
    FLD(mem_total, T_U64),   FLD(mem_used, T_U64), FLD(mem_reserved, T_U64),
    FLD(power_limit, T_U32), FLD(max_sm, T_U32),   FLD(max_mem, T_U32),
    FLD(bus_width, T_U32),   FLD(util, T_U32),     FLD(util_mem, T_U32),
    FLD(temp, T_I32),        FLD(power, T_U32),    FLD(fan, T_U32),
    FLD(clk_sm, T_U32),      FLD(clk_mem, T_U32),  FLD(clk_gfx, T_U32),
    FLD(throttle, T_U64),    FLD(pstate, T_I32),   FLD(pcie_tx, T_U32),
    FLD(pcie_rx, T_U32),     FLD(ecc_corr, T_U64), FLD(ecc_uncorr, T_U64),
    FLD(energy, T_U64),      FLD(gpm, T_I32),      FLD(gpm_sm, T_DBL),
    FLD(gpm_occ, T_DBL),     FLD(lost, T_I32),     FLD(mig, T_I32),
    FLD(mig_noagg, T_I32),
};

static int fake_value(fake_dev *d, const char *key, const char *val, int line)
{
    for (size_t i = 0; i < sizeof fake_values / sizeof fake_values[0]; i++) {
        char *at = (char *)d + fake_values[i].off, *end;
        unsigned int u32;
        int i32;
        unsigned long long u64;
        double dbl;
        if (strcmp(fake_values[i].key, key) != 0)
            continue;
        switch (fake_values[i].type) {
        case T_STR: fake_copy(at, fake_values[i].size, val); return 0;
        case T_U32:
            u32 = (unsigned int)strtoul(val, &end, 10);
            memcpy(at, &u32, sizeof u32);
            break;
        case T_I32:
            i32 = (int)strtol(val, &end, 10);
            memcpy(at, &i32, sizeof i32);
            break;
        case T_U64:
            u64 = strtoull(val, &end, 10);
            memcpy(at, &u64, sizeof u64);
            break;
        default:
            dbl = strtod(val, &end);
            memcpy(at, &dbl, sizeof dbl);
            break;
        }
        return end == val || *end ? fake_bad(line, "bad number", val) : 0;
    }
    return fake_bad(line, "unknown key", key);
}

static int fake_apply(fake_dev *d, const char *p, int line)
{
    static char key[64], val[16384];
    int rc = 0;
    while (!rc && (p = fake_kv(p, key, sizeof key, val, sizeof val))) {
        if (strcmp(key, "cc") == 0) {
            char *end;
            d->cc_major = (int)strtol(val, &end, 10);
            d->cc_minor = *end == '.' ? (int)strtol(end + 1, NULL, 10) : 0;
        } else if (strcmp(key, "procs") == 0) {
            rc = fake_procs(d->procs, &d->nprocs, val, line);
        } else if (strcmp(key, "gprocs") == 0) {
            rc = fake_procs(d->gprocs, &d->ngprocs, val, line);
        } else if (strcmp(key, "putil") == 0) {
            rc = fake_putils(d, val, line);
        } else if (strcmp(key, "migs") == 0) {
            rc = fake_migs(d, val, line);
        } else if (strcmp(key, "mps") == 0) {
            rc = fake_procs(d->mps, &d->nmps, val, line);
        } else if (strcmp(key, "unsupported") == 0) {
            rc = fake_errs(d, val, E_UNSUP, line);
        } else if (strcmp(key, "fail") == 0 || strcmp(key, "err") == 0) {
            rc = fake_errs(d, val, E_UNKNOWN, line);
        } else if (strcmp(key, "ok") == 0) {
            rc = fake_errs(d, val, OK, line);
        } else {
            rc = fake_value(d, key, val, line);
        }
    }
    return rc;
}

static int fake_int(const char *s, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s)
        return -1;
    *out = (int)v;
    return 0;
}

static int fake_global(const char *p, int line)
{
    char key[64], val[1024];
    while ((p = fake_kv(p, key, sizeof key, val, sizeof val)) != NULL) {
        int bad = 0;
        if (strcmp(key, "count") == 0)
            bad = fake_int(val, &F.count);
        else if (strcmp(key, "driver") == 0)
            fake_copy(F.driver, sizeof F.driver, val);
        else if (strcmp(key, "stride") == 0)
            bad = fake_int(val, &F.stride);
        else if (strcmp(key, "init_err") == 0)
            bad = fake_int(val, &F.init_err);
        else if (strcmp(key, "count_err") == 0)
            bad = fake_int(val, &F.count_err);
        else if (strcmp(key, "autotick") == 0)
            fake_copy(F.autotick, sizeof F.autotick, val);
        else if (strcmp(key, "fnerr") == 0) {
            char *s = val;
            while (*s && F.nfnerr < FAKE_MAX_FNERR) {
                char *colon = strchr(s, ':'), *comma;
                size_t n;
                if (!colon)
                    return fake_bad(line, "fnerr wants SYMBOL:CODE", s);
                n = (size_t)(colon - s);
                if (n >= sizeof F.fnerr[0].fn)
                    return fake_bad(line, "symbol too long", s);
                memcpy(F.fnerr[F.nfnerr].fn, s, n);
                F.fnerr[F.nfnerr].fn[n] = 0;
                F.fnerr[F.nfnerr++].code = (int)strtol(colon + 1, &comma, 10);
                s = *comma == ',' ? comma + 1 : comma;
            }
        } else {
            return fake_bad(line, "unknown global", key);
        }
        if (bad)
            return fake_bad(line, "bad number", val);
    }
    return 0;
}

/* "WORD N " at p: *num = N, *used = bytes up to the next token. */
static int fake_directive(const char *p, const char *word, int *num, int *used)
{
    size_t wl = strlen(word);
    char *end;
    if (strncmp(p, word, wl) != 0)
        return -1;
    *num = (int)strtol(p + wl, &end, 10);
    if (end == p + wl || (*end && *end != ' ' && *end != '\t'))
        return -1;
    while (*end == ' ' || *end == '\t')
        end++;
    *used = (int)(end - p);
    return 0;
}

static void fake_dev_defaults(fake_dev *d, int i)
{
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "Fake GPU %d", i);
    snprintf(d->uuid, sizeof d->uuid,
             "GPU-00000000-0000-0000-0000-00000000000%d", i);
    snprintf(d->pci, sizeof d->pci, "00000000:%02X:00.0", i + 1);
    d->cc_major = 9; /* Hopper unless scripted: the detail list answers */
    d->pstate = 8;
}

static int fake_load(void)
{
    const char *path = getenv("FAKE_NVML_SCRIPT");
    char *p, *nl;
    size_t len = 0;
    int line = 0, maxdev = -1;
    FILE *fp;

    int refs = F.refs;
    memset(&F, 0, sizeof F);
    F.refs = refs;
    F.count = -1;
    F.stride = 24;
    fake_copy(F.driver, sizeof F.driver, "550.54.15");
    for (int i = 0; i < FAKE_MAX_DEV; i++)
        fake_dev_defaults(&F.base[i], i);
    if (path && *path) {
        fp = fopen(path, "r");
        if (!fp)
            return fake_bad(0, "cannot open", path);
        len = fread(F.script, 1, sizeof F.script - 1, fp);
        fclose(fp);
    }
    F.script[len] = 0;
    for (p = F.script; p && *p; p = nl) {
        int n = 0, k = 0, t = 0, d = 0;
        line++;
        nl = strchr(p, '\n');
        if (nl)
            *nl++ = 0;
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p || *p == '#')
            continue;
        if (strncmp(p, "global", 6) == 0) {
            if (fake_global(p + 6, line))
                return -1;
        } else if (fake_directive(p, "dev ", &d, &n) == 0) {
            if (d < 0 || d >= FAKE_MAX_DEV)
                return fake_bad(line, "bad device", p);
            if (fake_apply(&F.base[d], p + n, line))
                return -1;
            if (d > maxdev)
                maxdev = d;
        } else if (fake_directive(p, "sample ", &t, &n) == 0 &&
                   fake_directive(p + n, "dev ", &d, &k) == 0 && (n += k)) {
            if (d < 0 || d >= FAKE_MAX_DEV || F.nsamples >= FAKE_MAX_SAMPLES)
                return fake_bad(line, "bad sample", p);
            /* check it parses now rather than at set_tick */
            F.cur[d] = F.base[d];
            if (fake_apply(&F.cur[d], p + n, line))
                return -1;
            F.samples[F.nsamples].tick = t;
            F.samples[F.nsamples].dev = d;
            F.samples[F.nsamples++].fields = p + n;
        } else {
            return fake_bad(line, "unknown directive", p);
        }
    }
    if (F.count < 0)
        F.count = maxdev + 1;
    if (F.count > FAKE_MAX_DEV)
        return fake_bad(0, "count too large", "");
    fake_nvml_set_tick(0);
    return 0;
}

void fake_nvml_set_tick(int tick)
{
    F.tick = tick;
    memcpy(F.cur, F.base, sizeof F.cur);
    for (int i = 0; i < F.nsamples; i++)
        if (F.samples[i].tick <= tick)
            fake_apply(&F.cur[F.samples[i].dev], F.samples[i].fields, 0);
}

int fake_nvml_calls(const char *fn)
{
    for (int i = 0; i < F.ncalls; i++)
        if (strcmp(F.calls[i].fn, fn) == 0)
            return F.calls[i].n;
    return 0;
}

int fake_nvml_init_refs(void)
{
    return F.refs;
}

int fake_nvml_live_gpm(void)
{
    int n = 0;
    for (int i = 0; i < FAKE_GPM_POOL; i++)
        n += F.gpm[i].used;
    return n;
}

/* ---- entry points ---- */

static nvmlReturn_t fake_init(const char *fn)
{
    if (F.refs == 0 && fake_load())
        return E_UNKNOWN;
    fake_count(fn);
#ifdef FAKE_NVML_NOINIT
    return E_DRIVER;
#else
    if (F.init_err)
        return F.init_err;
    if (fake_fnerr(fn))
        return fake_fnerr(fn);
    F.refs++;
    return OK;
#endif
}

static nvmlReturn_t fake_enter(const char *fn)
{
    fake_count(fn);
    if (F.refs == 0)
        return E_UNINIT;
    return fake_fnerr(fn);
}

/* The device behind h, or an error: uninitialised, scripted per-symbol
 * error, bad handle, lost GPU, or the field's scripted error. */
static nvmlReturn_t fake_dev_enter(const char *fn, nvmlDevice_t h, int field,
                                   fake_dev **d)
{
    nvmlReturn_t r = fake_enter(fn);
    if (r)
        return r;
    if (h >= &F.migdev[0][0] &&
        h < &F.migdev[0][0] + FAKE_MAX_DEV * FAKE_MAX_MIG) {
        /* a MIG device handle: valid while its parent still has it */
        if (!h->mig_parent)
            return E_ARG;
        *d = h;
        if (F.cur[h->mig_parent - 1].lost)
            return E_LOST;
        return field >= 0 ? h->err[field] : OK;
    }
    if (h < F.cur || h >= F.cur + F.count)
        return E_ARG;
    if (h == F.cur && F.autotick[0] && strcmp(fn, F.autotick) == 0)
        fake_nvml_set_tick(F.tick + 1);
    *d = h;
    if (h->lost)
        return E_LOST;
    return field >= 0 ? h->err[field] : OK;
}

#define DEV(field)                                                             \
    fake_dev *d;                                                               \
    nvmlReturn_t r_ = fake_dev_enter(__func__, dev, field, &d);                \
    if (r_)                                                                    \
    return r_

#define DEV_OUT(field, out)                                                    \
    DEV(field);                                                                \
    if (!(out))                                                                \
    return E_ARG

static nvmlReturn_t fake_str(char *buf, unsigned int len, const char *s)
{
    if (!buf)
        return E_ARG;
    if (strlen(s) + 1 > len)
        return E_SIZE;
    memcpy(buf, s, strlen(s) + 1);
    return OK;
}

nvmlReturn_t nvmlInit(void)
{
    return fake_init(__func__);
}

nvmlReturn_t nvmlShutdown(void)
{
    fake_count(__func__);
    if (F.refs == 0)
        return E_UNINIT;
    F.refs--;
    return OK;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case OK: return "Success";
    case E_UNINIT: return "Uninitialized";
    case E_ARG: return "Invalid Argument";
    case E_UNSUP: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case E_NOTFOUND: return "Not Found";
    case E_SIZE: return "Insufficient Size";
    case E_DRIVER: return "Driver Not Loaded";
    case 13: return "Function Not Found";
    case E_LOST: return "GPU is lost";
    case 18: return "RM has detected an NVML/RM version mismatch";
    case E_VERSION: return "Argument version mismatch";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned int len)
{
    nvmlReturn_t r = fake_enter(__func__);
    return r ? r : fake_str(buf, len, F.driver);
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *n)
{
    nvmlReturn_t r = fake_enter(__func__);
    if (r)
        return r;
    if (F.count_err)
        return F.count_err;
    *n = (unsigned int)F.count;
    return OK;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *out)
{
    nvmlReturn_t r = fake_enter(__func__);
    if (r)
        return r;
    if ((int)i >= F.count || !out)
        return E_ARG;
    if (F.cur[i].err[F_HANDLE])
        return F.cur[i].err[F_HANDLE];
    *out = &F.cur[i];
    return OK;
}

DEVF(nvmlDeviceGetName, char *buf, unsigned int len)
{
    DEV(F_NAME);
    return fake_str(buf, len, d->name);
}

DEVF(nvmlDeviceGetUUID, char *buf, unsigned int len)
{
    DEV(F_UUID);
    return fake_str(buf, len, d->uuid);
}

/* "00000000:3B:00.0" -> the legacy 16-byte form "0000:3B:00.0" */
static void fake_legacy_bus(char out[16], const char *pci)
{
    const char *p = strlen(pci) > 12 ? pci + strlen(pci) - 12 : pci;
    fake_copy(out, 16, p);
}

DEVF(nvmlDeviceGetPciInfo, fake_pci_v1_t *p)
{
    DEV_OUT(F_PCI, p);
    memset(p, 0, sizeof *p);
    fake_legacy_bus(p->busId, d->pci);
    p->bus = (unsigned int)(d - F.cur) + 1;
    return OK;
}

DEVF(nvmlDeviceGetCudaComputeCapability, int *major, int *minor)
{
    DEV_OUT(F_CC, major && minor);
    *major = d->cc_major;
    *minor = d->cc_minor;
    return OK;
}

DEVF(nvmlDeviceGetMemoryInfo, fake_mem_v1_t *m)
{
    DEV_OUT(F_MEM, m);
    /* v1 counts the driver's reservation as used */
    m->total = d->mem_total;
    m->used = d->mem_used + d->mem_reserved;
    m->free = d->mem_total - m->used;
    return OK;
}

DEVF(nvmlDeviceGetPowerManagementLimit, unsigned int *v)
{
    DEV_OUT(F_POWER_LIMIT, v);
    *v = d->power_limit;
    return OK;
}

DEVF(nvmlDeviceGetMaxClockInfo, unsigned int type, unsigned int *v)
{
    DEV_OUT(F_MAX_CLOCK, v);
    if (type == 1)
        *v = d->max_sm;
    else if (type == 2)
        *v = d->max_mem;
    else if (type == 0)
        *v = d->max_sm;
    else
        return E_UNSUP;
    return OK;
}

DEVF(nvmlDeviceGetMemoryBusWidth, unsigned int *v)
{
    DEV_OUT(F_BUS_WIDTH, v);
    *v = d->bus_width;
    return OK;
}

DEVF(nvmlDeviceGetUtilizationRates, fake_util_t *u)
{
    DEV_OUT(F_UTIL, u);
    if (d->mig || d->mig_parent)
        return E_UNSUP;
    u->gpu = d->util;
    u->memory = d->util_mem;
    return OK;
}

DEVF(nvmlDeviceGetTemperature, unsigned int sensor, unsigned int *v)
{
    DEV_OUT(F_TEMP, v);
    if (sensor != 0)
        return E_ARG;
    *v = (unsigned int)d->temp;
    return OK;
}

DEVF(nvmlDeviceGetPowerUsage, unsigned int *v)
{
    DEV_OUT(F_POWER, v);
    *v = d->power;
    return OK;
}

DEVF(nvmlDeviceGetFanSpeed, unsigned int *v)
{
    DEV_OUT(F_FAN, v);
    *v = d->fan;
    return OK;
}

DEVF(nvmlDeviceGetClockInfo, unsigned int type, unsigned int *v)
{
    int field = type == 0 ? F_CLK_GFX : type == 1 ? F_CLK_SM : F_CLK_MEM;
    DEV_OUT(field, v);
    *v = type == 0 ? d->clk_gfx : type == 1 ? d->clk_sm : d->clk_mem;
    return type <= 2 ? OK : E_ARG;
}

DEVF(nvmlDeviceGetCurrentClocksThrottleReasons, unsigned long long *v)
{
    DEV_OUT(F_THROTTLE, v);
    *v = d->throttle;
    return OK;
}

DEVF(nvmlDeviceGetPerformanceState, int *v)
{
    DEV_OUT(F_PSTATE, v);
    *v = d->pstate;
    return OK;
}

DEVF(nvmlDeviceGetPcieThroughput, unsigned int counter, unsigned int *v)
{
    DEV_OUT(F_PCIE, v);
    if (counter > 1)
        return E_ARG;
    *v = counter == 0 ? d->pcie_tx : d->pcie_rx;
    return OK;
}

DEVF(nvmlDeviceGetTotalEccErrors, unsigned int type, unsigned int counter,
     unsigned long long *v)
{
    DEV_OUT(F_ECC, v);
    if (counter != 0) /* the fake only keeps volatile counts */
        return E_UNSUP;
    *v = type == 0 ? d->ecc_corr : d->ecc_uncorr;
    return OK;
}

DEVF(nvmlDeviceGetTotalEnergyConsumption, unsigned long long *v)
{
    DEV_OUT(F_ENERGY, v);
    *v = d->energy;
    return OK;
}

/* Write n entries of `stride` bytes: pid@0, mem@8, then GI/CI ids (not
 * MIG: all ones; a scripted GI with compute instance 0) and the
 * confidential-computing bytes, 0. */
static nvmlReturn_t fake_write_procs(const fake_proc *p, int n,
                                     unsigned int *count, void *buf,
                                     unsigned int stride)
{
    if (!count)
        return E_ARG;
    if (*count < (unsigned int)n || (!buf && n > 0)) {
        *count = (unsigned int)n;
        return n > 0 ? E_SIZE : OK;
    }
    for (int i = 0; i < n; i++) {
        unsigned char *e = (unsigned char *)buf + (size_t)i * stride;
        unsigned int ci = p[i].gi == 0xFFFFFFFFu ? 0xFFFFFFFFu : 0;
        memset(e, 0, stride);
        memcpy(e, &p[i].pid, 4);
        memcpy(e + 8, &p[i].mem, 8);
        if (stride >= 24) {
            memcpy(e + 16, &p[i].gi, 4);
            memcpy(e + 20, &ci, 4);
        }
    }
    *count = (unsigned int)n;
    return OK;
}

DEVF(nvmlDeviceGetComputeRunningProcesses, unsigned int *n, void *buf)
{
    DEV(F_PROCS);
    if (d->mig_noagg)
        return 4; /* NO_PERMISSION */
    return fake_write_procs(d->procs, d->nprocs, n, buf, 16);
}

DEVF(nvmlDeviceGetGraphicsRunningProcesses, unsigned int *n, void *buf)
{
    DEV(F_GPROCS);
    if (d->mig_noagg)
        return 4; /* NO_PERMISSION */
    return fake_write_procs(d->gprocs, d->ngprocs, n, buf, 16);
}

/* Device dev as scripted at tick (base, then the samples up to it). */
static void fake_state_at(int tick, int dev, fake_dev *out)
{
    *out = F.base[dev];
    for (int i = 0; i < F.nsamples; i++)
        if (F.samples[i].tick <= tick && F.samples[i].dev == dev)
            fake_apply(out, F.samples[i].fields, 0);
}

/* nvml.h: the samples newer than lastSeenTimeStamp; a NULL buffer (or a
 * short one) answers INSUFFICIENT_SIZE with the count needed, no sample
 * NOT_FOUND. */
DEVF(nvmlDeviceGetProcessUtilization, fake_putil_t *buf, unsigned int *count,
     unsigned long long last_seen)
{
    static fake_dev past; /* large; the fake is single-threaded */
    unsigned int n = 0, cap;
    int from;
    DEV(F_PUTIL);
    if (!count)
        return E_ARG;
    /* nvml.h: "On MIG-enabled GPUs, querying process utilization is not
     * currently supported" */
    if (d->mig || d->mig_parent)
        return E_UNSUP;
    cap = buf ? *count : 0;
    from = F.tick - FAKE_PUTIL_DEPTH + 1;
    for (int t = from < 0 ? 0 : from; t <= F.tick; t++) {
        unsigned long long ts =
            FAKE_PUTIL_T0_US + (unsigned long long)t * 1000000ull;
        if (ts <= last_seen)
            continue;
        fake_state_at(t, (int)(d - F.cur), &past);
        for (int i = 0; i < past.nputil; i++, n++)
            if (n < cap) {
                memset(&buf[n], 0, sizeof buf[n]);
                buf[n].pid = past.putil[i].pid;
                buf[n].timeStamp = ts;
                buf[n].smUtil = past.putil[i].sm;
                buf[n].memUtil = past.putil[i].mem;
            }
    }
    *count = n;
    if (!n)
        return E_NOTFOUND;
    return n > cap ? E_SIZE : OK;
}

#ifndef FAKE_NVML_MINIMAL

nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    (void)flags;
    return fake_init(__func__);
}

nvmlReturn_t nvmlInit_v2(void)
{
    return fake_init(__func__);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
    nvmlReturn_t r = fake_enter(__func__);
    if (r)
        return r;
    if (F.count_err)
        return F.count_err;
    *n = (unsigned int)F.count;
    return OK;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *out)
{
    nvmlReturn_t r = fake_enter(__func__);
    if (r)
        return r;
    if ((int)i >= F.count || !out)
        return E_ARG;
    if (F.cur[i].err[F_HANDLE])
        return F.cur[i].err[F_HANDLE];
    *out = &F.cur[i];
    return OK;
}

static nvmlReturn_t fake_pci(fake_dev *d, fake_pci_t *p)
{
    memset(p, 0, sizeof *p);
    fake_legacy_bus(p->busIdLegacy, d->pci);
    fake_copy(p->busId, sizeof p->busId, d->pci);
    p->bus = (unsigned int)(d - F.cur) + 1;
    return OK;
}

DEVF(nvmlDeviceGetPciInfo_v3, fake_pci_t *p)
{
    DEV_OUT(F_PCI, p);
    return fake_pci(d, p);
}

DEVF(nvmlDeviceGetPciInfo_v2, fake_pci_t *p)
{
    DEV_OUT(F_PCI, p);
    return fake_pci(d, p);
}

DEVF(nvmlDeviceGetMemoryInfo_v2, fake_mem_v2_t *m)
{
    DEV_OUT(F_MEM, m);
    if (m->version != (40u | 2u << 24))
        return E_VERSION;
    m->total = d->mem_total;
    m->reserved = d->mem_reserved;
    m->used = d->mem_used;
    m->free = d->mem_total - d->mem_used - d->mem_reserved;
    return OK;
}

DEVF(nvmlDeviceGetEnforcedPowerLimit, unsigned int *v)
{
    DEV_OUT(F_POWER_LIMIT, v);
    *v = d->power_limit;
    return OK;
}

DEVF(nvmlDeviceGetTemperatureV, fake_temp_t *t)
{
    DEV_OUT(F_TEMP, t);
    if (t->version != (12u | 1u << 24))
        return E_VERSION;
    if (t->sensorType != 0)
        return E_ARG;
    t->temperature = d->temp;
    return OK;
}

DEVF(nvmlDeviceGetCurrentClocksEventReasons, unsigned long long *v)
{
    DEV_OUT(F_THROTTLE, v);
    *v = d->throttle;
    return OK;
}

DEVF(nvmlDeviceGetComputeRunningProcesses_v3, unsigned int *n, void *buf)
{
    DEV(F_PROCS);
    if (d->mig_noagg)
        return 4; /* NO_PERMISSION */
    return fake_write_procs(d->procs, d->nprocs, n, buf,
                            (unsigned int)F.stride);
}

DEVF(nvmlDeviceGetGraphicsRunningProcesses_v3, unsigned int *n, void *buf)
{
    DEV(F_GPROCS);
    if (d->mig_noagg)
        return 4; /* NO_PERMISSION */
    return fake_write_procs(d->gprocs, d->ngprocs, n, buf,
                            (unsigned int)F.stride);
}

DEVF(nvmlDeviceGetComputeRunningProcesses_v2, unsigned int *n, void *buf)
{
    DEV(F_PROCS);
    if (d->mig_noagg)
        return 4; /* NO_PERMISSION */
    return fake_write_procs(d->procs, d->nprocs, n, buf, 24);
}

DEVF(nvmlDeviceGetGraphicsRunningProcesses_v2, unsigned int *n, void *buf)
{
    DEV(F_GPROCS);
    if (d->mig_noagg)
        return 4; /* NO_PERMISSION */
    return fake_write_procs(d->gprocs, d->ngprocs, n, buf, 24);
}

#ifndef FAKE_NVML_NODETAIL
DEVF(nvmlDeviceGetRunningProcessDetailList, fake_detail_list_t *l)
{
    DEV_OUT(-1, l);
    /* nvml.h: INVALID_ARGUMENT "if ... plist->version is invalid" */
    if (l->version != (24u | 1u << 24))
        return E_ARG;
    /* nvml.h: "For Hopper or newer fully supported devices" */
    if (d->cc_major < 9)
        return E_UNSUP;
    if (d->mig_noagg)
        return 4; /* NO_PERMISSION */
    switch (l->mode) {
    case 0:
        if (d->err[F_PROCS])
            return d->err[F_PROCS];
        return fake_write_procs(d->procs, d->nprocs, &l->numProcArrayEntries,
                                l->procArray, 32);
    case 1:
        if (d->err[F_GPROCS])
            return d->err[F_GPROCS];
        return fake_write_procs(d->gprocs, d->ngprocs, &l->numProcArrayEntries,
                                l->procArray, 32);
    case 2: l->numProcArrayEntries = 0; return OK;
    default: return E_ARG;
    }
}
#endif

DEVF(nvmlGpmQueryDeviceSupport, fake_gpm_support_t *s)
{
    DEV_OUT(-1, s);
    if (s->version != 1)
        return E_VERSION;
    s->isSupportedDevice = (unsigned int)d->gpm;
    return OK;
}

static int fake_gpm_valid(nvmlGpmSample_t s)
{
    return s >= F.gpm && s < F.gpm + FAKE_GPM_POOL && s->used;
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *out)
{
    nvmlReturn_t r = fake_enter(__func__);
    if (r)
        return r;
    for (int i = 0; i < FAKE_GPM_POOL; i++)
        if (!F.gpm[i].used) {
            memset(&F.gpm[i], 0, sizeof F.gpm[i]);
            F.gpm[i].used = 1;
            *out = &F.gpm[i];
            return OK;
        }
    return E_UNKNOWN;
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s)
{
    nvmlReturn_t r = fake_enter(__func__);
    if (r)
        return r;
    if (!fake_gpm_valid(s))
        return E_ARG;
    s->used = 0;
    return OK;
}

DEVF(nvmlGpmSampleGet, nvmlGpmSample_t s)
{
    DEV(F_GPM);
    if (!fake_gpm_valid(s) || !d->gpm)
        return E_ARG;
    s->taken = 1;
    s->dev = (int)(d - F.cur);
    s->seq = ++F.gpm_seq;
    s->sm = d->gpm_sm;
    s->occ = d->gpm_occ;
    s->err_sm = d->err[F_GPM_SM];
    s->err_occ = d->err[F_GPM_OCC];
    return OK;
}

/* Values are those scripted at the later sample's tick: the fake's notion
 * of "the interval between the two samples". */
nvmlReturn_t nvmlGpmMetricsGet(fake_gpm_get_t *m)
{
    nvmlReturn_t r = fake_enter(__func__);
    if (r)
        return r;
    if (!m)
        return E_ARG;
    if (m->version != 1)
        return E_VERSION;
    if (m->numMetrics == 0 || m->numMetrics > 333 ||
        !fake_gpm_valid(m->sample1) || !fake_gpm_valid(m->sample2) ||
        !m->sample1->taken || !m->sample2->taken ||
        m->sample1->dev != m->sample2->dev ||
        m->sample1->seq >= m->sample2->seq)
        return E_ARG;
    for (unsigned int i = 0; i < m->numMetrics; i++) {
        fake_gpm_metric_t *x = &m->metrics[i];
        x->value = 0;
        if (x->metricId == 2) {
            x->nvmlReturn = m->sample2->err_sm;
            x->value = m->sample2->sm;
        } else if (x->metricId == 3) {
            x->nvmlReturn = m->sample2->err_occ;
            x->value = m->sample2->occ;
        } else {
            x->nvmlReturn = E_UNSUP;
        }
    }
    return OK;
}

/* ---- MIG and MPS ---- */

DEVF(nvmlDeviceGetMigMode, unsigned int *cur, unsigned int *pending)
{
    DEV_OUT(-1, cur && pending);
    if (d->mig_parent)
        return E_UNSUP;
    *cur = *pending = d->mig ? 1u : 0u;
    return OK;
}

/* nvml.h: "Returns zero if MIG is not supported or enabled" */
DEVF(nvmlDeviceGetMaxMigDeviceCount, unsigned int *count)
{
    DEV_OUT(-1, count);
    *count = d->mig && !d->mig_parent ? FAKE_MAX_MIG : 0;
    return OK;
}

/* The handle of MIG device `index`, refreshed from the parent's scripted
 * state: memory, the parent's processes in that GPU instance; NOT_FOUND
 * past the scripted devices. */
DEVF(nvmlDeviceGetMigDeviceHandleByIndex, unsigned int index, nvmlDevice_t *out)
{
    fake_dev *m;
    const fake_mig *g;
    int p;
    DEV_OUT(-1, out);
    if (!d->mig || d->mig_parent)
        return E_UNSUP;
    if (index >= FAKE_MAX_MIG)
        return E_ARG;
    p = (int)(d - F.cur);
    m = &F.migdev[p][index];
    if ((int)index >= d->nmig) {
        m->mig_parent = 0;
        return E_NOTFOUND;
    }
    g = &d->migs[index];
    fake_dev_defaults(m, p);
    m->mig_parent = p + 1;
    m->gi = g->gi;
    snprintf(m->uuid, sizeof m->uuid, "MIG-%.60s-%u", d->uuid, g->gi);
    snprintf(m->name, sizeof m->name, "%.80s MIG", d->name);
    m->mem_used = g->used;
    m->mem_total = g->total;
    m->cc_major = d->cc_major;
    m->cc_minor = d->cc_minor;
    m->nprocs = m->ngprocs = 0;
    for (int i = 0; i < d->nprocs; i++)
        if (d->procs[i].gi == g->gi)
            m->procs[m->nprocs++] = d->procs[i];
    for (int i = 0; i < d->ngprocs; i++)
        if (d->gprocs[i].gi == g->gi)
            m->gprocs[m->ngprocs++] = d->gprocs[i];
    *out = m;
    return OK;
}

DEVF(nvmlDeviceGetGpuInstanceId, unsigned int *id)
{
    DEV_OUT(-1, id);
    if (!d->mig_parent)
        return E_ARG; /* not a MIG device handle */
    *id = d->gi;
    return OK;
}

DEVF(nvmlDeviceGetComputeInstanceId, unsigned int *id)
{
    DEV_OUT(-1, id);
    if (!d->mig_parent)
        return E_ARG;
    *id = 0;
    return OK;
}

/* GPM for one GPU instance: the SM activity scripted for it. */
DEVF(nvmlGpmMigSampleGet, unsigned int gi, nvmlGpmSample_t s)
{
    DEV(F_GPM);
    if (!fake_gpm_valid(s) || !d->gpm || !d->mig || d->mig_parent)
        return E_ARG;
    for (int i = 0; i < d->nmig; i++)
        if (d->migs[i].gi == gi) {
            s->taken = 1;
            s->dev = (int)(d - F.cur) * 100 + (int)gi + 1;
            s->seq = ++F.gpm_seq;
            s->sm = d->migs[i].sm;
            s->occ = d->migs[i].sm / 2;
            s->err_sm = s->err_occ = 0;
            return OK;
        }
    return E_NOTFOUND;
}

DEVF(nvmlDeviceGetMPSComputeRunningProcesses_v3, unsigned int *n, void *buf)
{
    DEV(F_PROCS);
    return fake_write_procs(d->mps, d->nmps, n, buf, (unsigned int)F.stride);
}

#endif /* !FAKE_NVML_MINIMAL */
