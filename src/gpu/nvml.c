/*
 * nvml.c - devices and per-GPU samples from the NVIDIA Management Library
 * (gpu.h), for libgpufl's "nvml" engine and `gpufl idle`.
 *
 * It owns NVML's lifetime in this process (dlopen, init, shutdown, dlclose),
 * the choice among NVML's versioned symbols, and the translation of NVML's
 * answers into gpu_device and gpu_sample.  NVML is loaded at run time so
 * that its users link and run on machines without a driver; nvml.h is not
 * used (it is not in Debian main, and its licence asks for notices we do not
 * want to carry), so the few types needed are declared in nvml_abi_int.h
 * from the documented ABI and pinned by static asserts to the sizes and
 * version words measured against the NVML 13.3 header on x86-64.
 *
 * Absent is not zero: a field NVML cannot read (NOT_SUPPORTED, no
 * permission, missing symbol) leaves its GS_* bit clear.
 */
#include "gpu.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpufl/gpufl.h>

#include "common/clock.h"

#include "nvml_abi_int.h"
#include "nvml_int.h"

static const struct nvml_sym {
    size_t off;
    const char *names[3];
} nvml_syms[] = {
    { NVML_FN(init_with_flags), { "nvmlInitWithFlags" } },
    { NVML_FN(init), { "nvmlInit_v2", "nvmlInit" } },
    { NVML_FN(shutdown), { "nvmlShutdown" } },
    { NVML_FN(error_string), { "nvmlErrorString" } },
    { NVML_FN(driver_version), { "nvmlSystemGetDriverVersion" } },
    { NVML_FN(count), { "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount" } },
    { NVML_FN(handle_by_index),
      { "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex" } },
    { NVML_FN(name), { "nvmlDeviceGetName" } },
    { NVML_FN(uuid), { "nvmlDeviceGetUUID" } },
    { NVML_FN(pci_info),
      { "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2" } },
    { NVML_FN(pci_info_v1), { "nvmlDeviceGetPciInfo" } },
    { NVML_FN(cuda_cc), { "nvmlDeviceGetCudaComputeCapability" } },
    { NVML_FN(mem_v2), { "nvmlDeviceGetMemoryInfo_v2" } },
    { NVML_FN(mem_v1), { "nvmlDeviceGetMemoryInfo" } },
    { NVML_FN(power_limit),
      { "nvmlDeviceGetEnforcedPowerLimit",
        "nvmlDeviceGetPowerManagementLimit" } },
    { NVML_FN(max_clock), { "nvmlDeviceGetMaxClockInfo" } },
    { NVML_FN(bus_width), { "nvmlDeviceGetMemoryBusWidth" } },
    { NVML_FN(util), { "nvmlDeviceGetUtilizationRates" } },
    { NVML_FN(temp_v), { "nvmlDeviceGetTemperatureV" } },
    { NVML_FN(temp), { "nvmlDeviceGetTemperature" } },
    { NVML_FN(power), { "nvmlDeviceGetPowerUsage" } },
    { NVML_FN(fan), { "nvmlDeviceGetFanSpeed" } },
    { NVML_FN(clock), { "nvmlDeviceGetClockInfo" } },
    { NVML_FN(clock_reasons),
      { "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetCurrentClocksThrottleReasons" } },
    { NVML_FN(pstate), { "nvmlDeviceGetPerformanceState" } },
    { NVML_FN(pcie), { "nvmlDeviceGetPcieThroughput" } },
    { NVML_FN(ecc), { "nvmlDeviceGetTotalEccErrors" } },
    { NVML_FN(energy), { "nvmlDeviceGetTotalEnergyConsumption" } },
    { NVML_FN(proc_detail), { "nvmlDeviceGetRunningProcessDetailList" } },
    { NVML_FN(compute_v3), { "nvmlDeviceGetComputeRunningProcesses_v3" } },
    { NVML_FN(graphics_v3), { "nvmlDeviceGetGraphicsRunningProcesses_v3" } },
    { NVML_FN(compute_v2), { "nvmlDeviceGetComputeRunningProcesses_v2" } },
    { NVML_FN(graphics_v2), { "nvmlDeviceGetGraphicsRunningProcesses_v2" } },
    { NVML_FN(compute_v1), { "nvmlDeviceGetComputeRunningProcesses" } },
    { NVML_FN(graphics_v1), { "nvmlDeviceGetGraphicsRunningProcesses" } },
    { NVML_FN(proc_util), { "nvmlDeviceGetProcessUtilization" } },
    { NVML_FN(gpm_support), { "nvmlGpmQueryDeviceSupport" } },
    { NVML_FN(gpm_alloc), { "nvmlGpmSampleAlloc" } },
    { NVML_FN(gpm_free), { "nvmlGpmSampleFree" } },
    { NVML_FN(gpm_get), { "nvmlGpmSampleGet" } },
    { NVML_FN(gpm_metrics), { "nvmlGpmMetricsGet" } },
    { NVML_FN(gpm_mig_get), { "nvmlGpmMigSampleGet" } },
    { NVML_FN(mig_mode), { "nvmlDeviceGetMigMode" } },
    { NVML_FN(mig_max), { "nvmlDeviceGetMaxMigDeviceCount" } },
    { NVML_FN(mig_handle), { "nvmlDeviceGetMigDeviceHandleByIndex" } },
    { NVML_FN(mig_gi), { "nvmlDeviceGetGpuInstanceId" } },
    { NVML_FN(mig_ci), { "nvmlDeviceGetComputeInstanceId" } },
    { NVML_FN(mps_v3), { "nvmlDeviceGetMPSComputeRunningProcesses_v3" } },
};

static const char nvml_default_lib[] = "libnvidia-ml.so.1";
static const char nvml_fallback_lib[] = "libnvidia-ml.so";

static const char *nvml_errstr(const gpu_nvml *s, nvmlReturn_t r)
{
    const char *m = s->f.error_string ? s->f.error_string(r) : NULL;
    return m ? m : "unknown error";
}

static int nvml_ok(nvmlReturn_t r, int *lost)
{
    if (r == NVML_SUCCESS)
        return 1;
    if (nvml_is_lost(r))
        *lost = 1;
    return 0;
}

static void nvml_terminate(char *buf, size_t len)
{
    if (len)
        buf[len - 1] = 0;
}

/* ---- open ---- */

static int nvml_load(gpu_nvml *s, const char *lib, char *why, size_t whylen)
{
    int explicit_path = lib && *lib && strchr(lib, '/');
    if (!lib || !*lib)
        lib = nvml_default_lib;
    s->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!s->dl && strcmp(lib, nvml_default_lib) == 0)
        s->dl = dlopen(nvml_fallback_lib, RTLD_NOW | RTLD_LOCAL);
    if (!s->dl) {
        if (explicit_path) {
            /* dlerror() repeats the path; keep only what follows it */
            const char *e = dlerror();
            size_t n = strlen(lib);
            if (!e)
                e = "cannot load";
            else if (strncmp(e, lib, n) == 0 && e[n] == ':')
                e += n + 1 + (e[n + 1] == ' ');
            snprintf(why, whylen,
                     "nvml: cannot load %s (%s); system metrics limited to "
                     "host CPU/RAM",
                     lib, e);
        } else {
            snprintf(why, whylen,
                     "nvml: %s not found (no NVIDIA driver?); system metrics "
                     "limited to host CPU/RAM",
                     lib);
        }
        return GPUFL_EUNAVAIL;
    }
    for (size_t i = 0; i < sizeof nvml_syms / sizeof nvml_syms[0]; i++) {
        const struct nvml_sym *y = &nvml_syms[i];
        void *p = NULL;
        for (size_t k = 0; !p && k < 3 && y->names[k]; k++)
            p = dlsym(s->dl, y->names[k]);
        memcpy((char *)&s->f + y->off, &p, sizeof p);
    }
    if (!(s->f.init || s->f.init_with_flags) || !s->f.shutdown || !s->f.count ||
        !s->f.handle_by_index) {
        snprintf(why, whylen,
                 "nvml: %s lacks nvmlInit/nvmlDeviceGetCount; not an NVML "
                 "library?",
                 lib);
        return GPUFL_EUNAVAIL;
    }
    if (s->f.proc_detail)
        s->proc_level = PROC_DETAIL;
    else if (s->f.compute_v3)
        s->proc_level = PROC_V3;
    else if (s->f.compute_v2)
        s->proc_level = PROC_V2;
    else if (s->f.compute_v1)
        s->proc_level = PROC_V1;
    else
        s->proc_level = PROC_NONE;
    return 0;
}

static int nvml_start(gpu_nvml *s, char *why, size_t whylen)
{
    nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
    /* NO_GPUS: a driver with no visible GPU is reported as such below
     * instead of as an opaque init failure. */
    if (s->f.init_with_flags)
        r = s->f.init_with_flags(NVML_INIT_FLAG_NO_GPUS);
    if ((r == NVML_ERROR_FUNCTION_NOT_FOUND ||
         r == NVML_ERROR_INVALID_ARGUMENT) &&
        s->f.init)
        r = s->f.init();
    if (r == NVML_SUCCESS) {
        s->inited = 1;
        return 0;
    }
    switch (r) {
    case NVML_ERROR_DRIVER_NOT_LOADED:
        snprintf(why, whylen,
                 "nvml: the NVIDIA kernel driver is not loaded (%s); load the "
                 "nvidia module; system metrics limited to host CPU/RAM",
                 nvml_errstr(s, r));
        return GPUFL_EUNAVAIL;
    case NVML_ERROR_NO_PERMISSION:
        snprintf(why, whylen,
                 "nvml: permission denied (%s); the user needs read/write "
                 "access to /dev/nvidia* (video group, NVIDIA container "
                 "runtime)",
                 nvml_errstr(s, r));
        return GPUFL_EPERM;
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        snprintf(why, whylen,
                 "nvml: libnvidia-ml and the kernel driver differ in version "
                 "(driver upgraded without reboot?); reboot or reload the "
                 "nvidia module");
        return GPUFL_EUNAVAIL;
    default:
        snprintf(why, whylen, "nvml: nvmlInit failed: %s (NVML error %d)",
                 nvml_errstr(s, r), r);
        return GPUFL_EUNAVAIL;
    }
}

static int nvml_gpm_alloc(gpu_nvml *s, nvml_gpm_pair *p)
{
    if (s->f.gpm_alloc(&p->s[0]) != NVML_SUCCESS)
        return -1;
    if (s->f.gpm_alloc(&p->s[1]) != NVML_SUCCESS) {
        s->f.gpm_free(p->s[0]);
        p->s[0] = NULL;
        return -1;
    }
    return 0;
}

static int nvml_mig_on(const gpu_nvml *s, nvmlDevice_t h)
{
    unsigned int cur = 0, pend = 0;
    return s->f.mig_mode && s->f.mig_max && s->f.mig_handle &&
           s->f.mig_mode(h, &cur, &pend) == NVML_SUCCESS &&
           cur == NVML_DEVICE_MIG_ENABLE;
}

static void nvml_gpm_setup(gpu_nvml *s, nvml_dev *d)
{
    nvmlGpmSupport_t sup = { NVML_GPM_SUPPORT_VERSION, 0 };
    if (!s->f.gpm_support || !s->f.gpm_alloc || !s->f.gpm_free ||
        !s->f.gpm_get || !s->f.gpm_metrics)
        return;
    if (s->f.gpm_support(d->h, &sup) != NVML_SUCCESS || !sup.isSupportedDevice)
        return;
    if (nvml_gpm_alloc(s, &d->gp))
        return;
    d->gpm = 1;
    /* MIG: SM activity per GPU instance (nvmlGpmMigSampleGet); the pairs
     * are allocated here so that sampling allocates nothing */
    if (!s->f.gpm_mig_get || !nvml_mig_on(s, d->h))
        return;
    while (d->nmig_gpm < GPU_MAX_MIG &&
           !nvml_gpm_alloc(s, &d->mig_gp[d->nmig_gpm]))
        d->nmig_gpm++;
}

static void nvml_describe(gpu_nvml *s, nvml_dev *d, gpu_device *info,
                          const char *driver)
{
    const nvml_fns *f = &s->f;
    nvmlPciInfo_t pci;
    unsigned int v;

    if (f->name && f->name(d->h, info->name, sizeof info->name) == NVML_SUCCESS)
        nvml_terminate(info->name, sizeof info->name);
    else
        info->name[0] = 0;
    if (f->uuid && f->uuid(d->h, info->uuid, sizeof info->uuid) == NVML_SUCCESS)
        nvml_terminate(info->uuid, sizeof info->uuid);
    else
        info->uuid[0] = 0;
    memset(&pci, 0, sizeof pci);
    if (f->pci_info && f->pci_info(d->h, &pci) == NVML_SUCCESS) {
        nvml_terminate(pci.busId, sizeof pci.busId);
        snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%s", pci.busId);
    } else if (f->pci_info_v1 && f->pci_info_v1(d->h, &pci) == NVML_SUCCESS) {
        nvml_terminate(pci.busIdLegacy, sizeof pci.busIdLegacy);
        snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "%s",
                 pci.busIdLegacy);
    }
    snprintf(info->driver, sizeof info->driver, "%s", driver);
    if (f->cuda_cc &&
        f->cuda_cc(d->h, &info->cc_major, &info->cc_minor) != NVML_SUCCESS)
        info->cc_major = info->cc_minor = 0;
    if (f->mem_v2) {
        nvmlMemory_v2_t m = { NVML_MEMORY_V2_VERSION, 0, 0, 0, 0 };
        if (f->mem_v2(d->h, &m) == NVML_SUCCESS)
            info->mem_total = m.total;
    }
    if (!info->mem_total && f->mem_v1) {
        nvmlMemory_t m = { 0, 0, 0 };
        if (f->mem_v1(d->h, &m) == NVML_SUCCESS)
            info->mem_total = m.total;
    }
    if (f->power_limit && f->power_limit(d->h, &v) == NVML_SUCCESS)
        info->power_limit_mw = v;
    if (f->max_clock && f->max_clock(d->h, NVML_CLOCK_SM, &v) == NVML_SUCCESS)
        info->max_sm_clock_mhz = v;
    if (f->max_clock && f->max_clock(d->h, NVML_CLOCK_MEM, &v) == NVML_SUCCESS)
        info->max_mem_clock_mhz = v;
    if (f->bus_width && f->bus_width(d->h, &v) == NVML_SUCCESS)
        info->mem_bus_width = v;
}

static int nvml_enumerate(gpu_nvml *s, char *why, size_t whylen)
{
    char driver[80] = "";
    unsigned int count = 0, nperm = 0;
    nvmlReturn_t r, first = NVML_SUCCESS;

    r = s->f.count(&count);
    if (r != NVML_SUCCESS) {
        snprintf(why, whylen,
                 "nvml: nvmlDeviceGetCount failed: %s (NVML "
                 "error %d)",
                 nvml_errstr(s, r), r);
        return r == NVML_ERROR_NO_PERMISSION ? GPUFL_EPERM : GPUFL_EUNAVAIL;
    }
    if (s->f.driver_version &&
        s->f.driver_version(driver, sizeof driver) == NVML_SUCCESS)
        nvml_terminate(driver, sizeof driver);
    else
        driver[0] = 0;
    /* Devices past GPU_MAX_DEVICES are not reported. */
    for (unsigned int i = 0; i < count && s->ndev < GPU_MAX_DEVICES; i++) {
        nvml_dev *d = &s->dev[s->ndev];
        gpu_device *info = &s->info[s->ndev];
        r = s->f.handle_by_index(i, &d->h);
        if (r != NVML_SUCCESS) {
            /* a GPU this container or user may not open: skip it */
            nperm += r == NVML_ERROR_NO_PERMISSION;
            if (first == NVML_SUCCESS)
                first = r;
            continue;
        }
        info->id = (uint32_t)s->ndev;
        nvml_describe(s, d, info, driver);
        nvml_gpm_setup(s, d);
        s->ndev++;
    }
    if (s->ndev > 0)
        return 0;
    if (count == 0) {
        snprintf(why, whylen,
                 "nvml: no NVIDIA GPU visible (driver %s); in a container, "
                 "pass GPUs with --gpus or NVIDIA_VISIBLE_DEVICES",
                 driver[0] ? driver : "unknown");
        return GPUFL_EUNAVAIL;
    }
    if (nperm == count) {
        snprintf(why, whylen,
                 "nvml: permission denied on all %u GPUs; the user needs "
                 "access to /dev/nvidia*",
                 count);
        return GPUFL_EPERM;
    }
    snprintf(why, whylen,
             "nvml: none of %u GPUs could be opened: %s (NVML "
             "error %d)",
             count, nvml_errstr(s, first), first);
    return GPUFL_EUNAVAIL;
}

int gpu_nvml_open(gpu_nvml **out, const char *lib, char *why, size_t whylen)
{
    gpu_nvml *s;
    int err;

    *out = NULL;
    s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, whylen, "nvml: out of memory");
        return GPUFL_ENOMEM;
    }
    err = nvml_load(s, lib, why, whylen);
    if (err)
        goto fail;
    err = nvml_start(s, why, whylen);
    if (err)
        goto fail;
    err = nvml_enumerate(s, why, whylen);
    if (err)
        goto fail;
    err = gpu_nvml_proc_reserve(s, NVML_PROC_CAP_START);
    if (!err && s->f.mig_handle) {
        s->mig_procs = calloc(1, sizeof *s->mig_procs);
        if (!s->mig_procs)
            err = GPUFL_ENOMEM;
    }
    if (!err && s->f.proc_util) {
        s->putil = calloc(NVML_PUTIL_CAP, sizeof *s->putil);
        if (!s->putil)
            err = GPUFL_ENOMEM;
    }
    if (err) {
        snprintf(why, whylen, "nvml: out of memory");
        goto fail;
    }
    *out = s;
    return 0;
fail:
    gpu_nvml_close(s);
    return err;
}

int gpu_nvml_devices(const gpu_nvml *s, gpu_device *out, int max)
{
    int n = s && max > 0 ? (s->ndev < max ? s->ndev : max) : 0;
    for (int i = 0; i < n; i++)
        out[i] = s->info[i];
    return n;
}

/* ---- GPM ---- */

/* Takes the next sample of pair p (mig: of GPU instance gi) and, with
 * the one before, sets *sm and *occ (< 0 when not read). */
static nvmlReturn_t nvml_gpm_next(gpu_nvml *s, nvml_dev *d, nvml_gpm_pair *p,
                                  int mig, uint32_t gi, double *sm, double *occ)
{
    nvmlGpmMetricsGet_t *q = &s->gpm_req;
    nvmlGpmSample_t cur;
    uint64_t now = clock_mono_ns();
    nvmlReturn_t r;

    *sm = *occ = -1;
    if (mig && p->gi != gi) {
        p->have_prev = 0; /* another instance at this index now */
        p->gi = gi;
    }
    /* Too soon after the previous sample: keep it and wait, so that the
     * next interval is long enough. */
    if (p->have_prev && now - p->prev_ns < NVML_GPM_MIN_NS)
        return NVML_SUCCESS;
    cur = p->s[p->have_prev ? 1 - p->prev : 0];
    r = mig ? s->f.gpm_mig_get(d->h, gi, cur) : s->f.gpm_get(d->h, cur);
    if (r != NVML_SUCCESS) {
        p->have_prev = 0;
        return r;
    }
    if (p->have_prev) {
        memset(q, 0,
               offsetof(nvmlGpmMetricsGet_t, metrics) +
                   2 * sizeof q->metrics[0]);
        q->version = NVML_GPM_METRICS_GET_VERSION;
        q->numMetrics = 2;
        q->sample1 = p->s[p->prev];
        q->sample2 = cur;
        q->metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
        q->metrics[1].metricId = NVML_GPM_METRIC_SM_OCCUPANCY;
        r = s->f.gpm_metrics(q);
        if (r == NVML_SUCCESS && q->metrics[0].nvmlReturn == NVML_SUCCESS)
            *sm = q->metrics[0].value / 100.0;
        if (r == NVML_SUCCESS && q->metrics[1].nvmlReturn == NVML_SUCCESS)
            *occ = q->metrics[1].value / 100.0;
        p->prev = 1 - p->prev;
    } else {
        p->prev = 0;
    }
    p->have_prev = 1;
    p->prev_ns = now;
    return r;
}

static nvmlReturn_t nvml_gpm(gpu_nvml *s, nvml_dev *d, gpu_sample *o)
{
    double sm, occ;
    nvmlReturn_t r = nvml_gpm_next(s, d, &d->gp, 0, 0, &sm, &occ);
    if (sm >= 0) {
        o->sm_active = sm;
        o->present |= GS_SM_ACTIVE;
    }
    if (occ >= 0) {
        o->sm_occupancy = occ;
        o->present |= GS_SM_OCC;
    }
    return r;
}

/* ---- MIG ---- */

/* The processes of one MIG device, when the GPU's own list gave none
 * (NVML: "In MIG mode, if device handle is provided, the API returns
 * aggregate information, only if the caller has appropriate
 * privileges"), appended to o with the instance's id. */
static void nvml_mig_procs(gpu_nvml *s, nvmlDevice_t mh, uint32_t gi,
                           gpu_sample *o)
{
    gpu_sample *t = s->mig_procs;
    t->present = 0;
    t->nprocs = 0;
    if (gpu_nvml_procs(s, mh, t) != NVML_SUCCESS)
        return;
    for (uint32_t k = 0; k < t->nprocs && o->nprocs < GPU_MAX_PROCS; k++) {
        o->procs[o->nprocs] = t->procs[k];
        o->procs[o->nprocs++].gi = gi;
    }
    o->nprocs_total += t->nprocs_total;
    o->present |= GS_PROCS;
}

/* The MIG devices of a GPU in MIG mode: ids, memory, SM activity per GPU
 * instance (GPM), processes per instance.  Lost only when the parent is. */
static nvmlReturn_t nvml_mig(gpu_nvml *s, nvml_dev *d, gpu_sample *o)
{
    const nvml_fns *f = &s->f;
    unsigned int max = 0;
    int own_list = (o->present & GS_PROCS) && o->nprocs > 0;
    nvmlReturn_t r;

    if (!nvml_mig_on(s, d->h))
        return NVML_SUCCESS;
    r = f->mig_max(d->h, &max);
    if (r != NVML_SUCCESS)
        return r;
    o->present |= GS_MIG;
    for (unsigned int i = 0; i < max && o->nmig < GPU_MAX_MIG; i++) {
        gpu_mig *m = &o->mig[o->nmig];
        nvmlDevice_t mh;
        unsigned int id = 0;
        double sm, occ;
        if (f->mig_handle(d->h, i, &mh) != NVML_SUCCESS)
            continue; /* NOT_FOUND: no MIG device at this index */
        memset(m, 0, sizeof *m);
        m->gi = m->ci = GPU_PROC_NO_GI;
        if (f->mig_gi && f->mig_gi(mh, &id) == NVML_SUCCESS)
            m->gi = id;
        if (f->mig_ci && f->mig_ci(mh, &id) == NVML_SUCCESS)
            m->ci = id;
        if (f->uuid && f->uuid(mh, m->uuid, sizeof m->uuid) == NVML_SUCCESS)
            nvml_terminate(m->uuid, sizeof m->uuid);
        else
            m->uuid[0] = 0;
        if (f->mem_v2) {
            nvmlMemory_v2_t mm = { NVML_MEMORY_V2_VERSION, 0, 0, 0, 0 };
            if (f->mem_v2(mh, &mm) == NVML_SUCCESS) {
                m->mem_used = mm.used;
                m->mem_total = mm.total;
                m->present |= GS_MEM;
            }
        }
        if (!(m->present & GS_MEM) && f->mem_v1) {
            nvmlMemory_t m1 = { 0, 0, 0 };
            if (f->mem_v1(mh, &m1) == NVML_SUCCESS) {
                m->mem_used = m1.used;
                m->mem_total = m1.total;
                m->present |= GS_MEM;
            }
        }
        if (!own_list && m->gi != GPU_PROC_NO_GI)
            nvml_mig_procs(s, mh, m->gi, o);
        if ((int)o->nmig < d->nmig_gpm && m->gi != GPU_PROC_NO_GI) {
            r = nvml_gpm_next(s, d, &d->mig_gp[o->nmig], 1, m->gi, &sm, &occ);
            if (nvml_is_lost(r))
                return r;
            if (sm >= 0) {
                m->sm_active = sm;
                m->present |= GS_SM_ACTIVE;
            }
        }
        o->nmig++;
    }
    for (uint32_t k = 0; k < o->nmig; k++) {
        gpu_mig *m = &o->mig[k];
        if (!(o->present & GS_PROCS))
            continue;
        for (uint32_t p = 0; p < o->nprocs; p++)
            m->nprocs += o->procs[p].gi == m->gi;
        m->present |= GS_PROCS;
    }
    return NVML_SUCCESS;
}

/* ---- sample ---- */

static void nvml_sample_dev(gpu_nvml *s, nvml_dev *d, gpu_sample *o)
{
    const nvml_fns *f = &s->f;
    nvmlDevice_t h = d->h;
    int lost = 0;
    unsigned int a = 0, b = 0;
    unsigned long long x = 0, y = 0;
    int pstate = -1;

    if (f->util) {
        nvmlUtilization_t u = { 0, 0 };
        if (nvml_ok(f->util(h, &u), &lost)) {
            o->util_gpu = u.gpu;
            o->util_mem = u.memory;
            o->present |= GS_UTIL_GPU | GS_UTIL_MEM;
        }
        if (lost)
            goto lost;
    }
    {
        nvmlMemory_v2_t m = { NVML_MEMORY_V2_VERSION, 0, 0, 0, 0 };
        nvmlMemory_t m1 = { 0, 0, 0 };
        if (f->mem_v2 && nvml_ok(f->mem_v2(h, &m), &lost)) {
            /* v2: used is allocations only; reserved is the driver's */
            o->mem_used = m.used;
            o->mem_total = m.total;
            o->mem_reserved = m.reserved;
            o->present |= GS_MEM | GS_MEM_RESERVED;
        } else if (!lost && f->mem_v1 && nvml_ok(f->mem_v1(h, &m1), &lost)) {
            o->mem_used = m1.used; /* includes reserved */
            o->mem_total = m1.total;
            o->present |= GS_MEM;
        }
    }
    {
        nvmlTemperature_v1_t t = { NVML_TEMPERATURE_V1_VERSION,
                                   (int)NVML_TEMPERATURE_GPU, 0 };
        if (f->temp_v && nvml_ok(f->temp_v(h, &t), &lost)) {
            o->temp_c = t.temperature;
            o->present |= GS_TEMP;
        } else if (!lost && f->temp &&
                   nvml_ok(f->temp(h, NVML_TEMPERATURE_GPU, &a), &lost)) {
            o->temp_c = (int32_t)a;
            o->present |= GS_TEMP;
        }
    }
    if (f->power && nvml_ok(f->power(h, &a), &lost)) {
        o->power_mw = a;
        o->present |= GS_POWER;
    }
    if (f->power_limit && nvml_ok(f->power_limit(h, &a), &lost)) {
        o->power_limit_mw = a;
        o->present |= GS_POWER_LIMIT;
    }
    if (f->fan && nvml_ok(f->fan(h, &a), &lost)) {
        o->fan_pct = a;
        o->present |= GS_FAN;
    }
    if (lost)
        goto lost;
    /* GS_CLOCKS means the SM clock was read; the others are 0 if not */
    if (f->clock && nvml_ok(f->clock(h, NVML_CLOCK_SM, &a), &lost)) {
        o->clk_sm = a;
        o->present |= GS_CLOCKS;
        if (nvml_ok(f->clock(h, NVML_CLOCK_MEM, &a), &lost))
            o->clk_mem = a;
        if (nvml_ok(f->clock(h, NVML_CLOCK_GRAPHICS, &a), &lost))
            o->clk_gfx = a;
    }
    if (f->clock_reasons && nvml_ok(f->clock_reasons(h, &x), &lost)) {
        o->throttle = x;
        o->present |= GS_THROTTLE;
    }
    /* 0..15; NVML_PSTATE_UNKNOWN (32) is absent */
    if (f->pstate && nvml_ok(f->pstate(h, &pstate), &lost) && pstate >= 0 &&
        pstate <= 15) {
        o->pstate = pstate;
        o->present |= GS_PSTATE;
    }
    if (lost)
        goto lost;
    if (f->pcie && nvml_ok(f->pcie(h, NVML_PCIE_UTIL_TX_BYTES, &a), &lost) &&
        nvml_ok(f->pcie(h, NVML_PCIE_UTIL_RX_BYTES, &b), &lost)) {
        o->pcie_tx_kbps = a;
        o->pcie_rx_kbps = b;
        o->present |= GS_PCIE;
    }
    if (f->ecc &&
        nvml_ok(
            f->ecc(h, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &x),
            &lost) &&
        nvml_ok(f->ecc(h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC,
                       &y),
                &lost)) {
        o->ecc_corrected = x;
        o->ecc_uncorrected = y;
        o->present |= GS_ECC;
    }
    if (f->energy && nvml_ok(f->energy(h, &x), &lost)) {
        o->energy_mj = x;
        o->present |= GS_ENERGY;
    }
    if (lost)
        goto lost;
    if (nvml_is_lost(gpu_nvml_procs(s, h, o)))
        goto lost;
    if (s->f.mps_v3 && nvml_is_lost(gpu_nvml_mps(s, h, o)))
        goto lost;
    if (nvml_is_lost(nvml_mig(s, d, o)))
        goto lost;
    if (nvml_is_lost(gpu_nvml_proc_util(s, d, o)))
        goto lost;
    if (d->gpm && nvml_is_lost(nvml_gpm(s, d, o)))
        goto lost;
    return;
lost:
    memset(o, 0, sizeof *o);
    o->dev = (uint32_t)(d - s->dev);
    o->present = GS_LOST;
}

int gpu_nvml_sample(gpu_nvml *s, gpu_sample *out, int max, int *n)
{
    int k;
    if (!n)
        return GPUFL_EINVAL;
    *n = 0;
    if (!s || !out)
        return GPUFL_EINVAL;
    k = s->ndev < max ? s->ndev : max;
    for (int i = 0; i < k; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].dev = (uint32_t)i;
        nvml_sample_dev(s, &s->dev[i], &out[i]);
    }
    *n = k > 0 ? k : 0;
    return 0;
}

void gpu_nvml_close(gpu_nvml *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->ndev; i++) {
        nvml_dev *d = &s->dev[i];
        if (d->gpm) {
            s->f.gpm_free(d->gp.s[0]);
            s->f.gpm_free(d->gp.s[1]);
        }
        for (int k = 0; k < d->nmig_gpm; k++) {
            s->f.gpm_free(d->mig_gp[k].s[0]);
            s->f.gpm_free(d->mig_gp[k].s[1]);
        }
    }
    if (s->inited)
        s->f.shutdown();
    if (s->dl)
        dlclose(s->dl);
    free(s->proc_raw);
    free(s->proc_all);
    free(s->putil);
    free(s->mig_procs);
    free(s);
}
