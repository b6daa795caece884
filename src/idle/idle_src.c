/*
 * idle_src.c - where GPU samples come from: NVML, through src/gpu (gpu.h,
 * nvml.c: dlopen with our own ABI declarations, the versioned process-list
 * calls with the R535 stride probe, GPM; libgpufl reads GPUs the same way), or a
 * simulation of the seed's measured A10G states for demos and benchmarks.
 * Simulated devices carry simulated = 1 and a "Simulated" name, and every
 * output of `gpufl idle` says so.
 */
#include "idle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpufl/gpufl.h>

#include "common/clock.h"

enum {
    SIM_NONE,
    SIM_HELD,
    SIM_ONE_THREAD,
    SIM_MATMUL,
    SIM_PHANTOM,
    SIM_BURSTY,
    SIM_TRAIN,
    SIM_STUCK,
    SIM_ALLOC,
    SIM_LEAKED,
    SIM_DEAD,
    SIM_N
};
static const char *const sim_names[SIM_N] = { "none",   "held",    "one_thread",
                                              "matmul", "phantom", "bursty",
                                              "train",  "stuck",   "allocated",
                                              "leaked", "dead" };

struct idle_src {
    gpu_nvml *nvml; /* NULL: simulated */
    int ndev;
    gpu_device dev[IDLE_MAX_GPUS];
    /* NVML: entry i is GPU phys[i], all of it or (dev[i].mig) one GPU
     * instance; raw holds the GPUs' samples the entries are cut from */
    int phys[IDLE_MAX_GPUS];
    int nphys;
    gpu_sample *raw;
    int sim[IDLE_MAX_GPUS];
    uint64_t tick;
    uint64_t last_mono; /* the previous simulated sample, 0 = none */
};

#define MIB (1024ull * 1024ull)
#define SIM_PID(i) (100000u + (uint32_t)(i)) /* simulated GPU i's process */

static int sim_parse(idle_src *s, const char *list, int ngpus, char *why,
                     size_t whylen)
{
    int n = 0, kinds[IDLE_MAX_GPUS];
    const char *p = list;
    while (*p && n < IDLE_MAX_GPUS) {
        size_t len = strcspn(p, ",");
        int k = -1;
        for (int i = 0; i < SIM_N; i++)
            if (strlen(sim_names[i]) == len && !strncmp(p, sim_names[i], len))
                k = i;
        if (len == 3 && !strncmp(p, "all", 3)) {
            for (int i = 0; i < SIM_N && n < IDLE_MAX_GPUS; i++)
                kinds[n++] = i;
        } else if (k < 0) {
            snprintf(why, whylen,
                     "unknown simulated scenario \"%.*s\" (none, held, "
                     "one_thread, matmul, phantom, bursty, train, stuck, "
                     "allocated, leaked, dead, all)",
                     (int)len, p);
            return GPUFL_EINVAL;
        } else {
            kinds[n++] = k;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    if (!n) {
        snprintf(why, whylen, "empty simulation list");
        return GPUFL_EINVAL;
    }
    if (ngpus <= 0)
        ngpus = n;
    if (ngpus > IDLE_MAX_GPUS)
        ngpus = IDLE_MAX_GPUS;
    for (int i = 0; i < ngpus; i++) {
        gpu_device *d = &s->dev[i];
        s->sim[i] = kinds[i % n];
        memset(d, 0, sizeof *d);
        d->id = (uint32_t)i;
        snprintf(d->name, sizeof d->name, "Simulated NVIDIA A10G");
        snprintf(d->uuid, sizeof d->uuid, "GPU-51a1a7ed-0000-4000-8000-%012d",
                 i);
        snprintf(d->pci_bus_id, sizeof d->pci_bus_id, "00000000:%02X:00.0",
                 0x18 + i);
        snprintf(d->driver, sizeof d->driver, "simulated");
        d->cc_major = 8;
        d->cc_minor = 6;
        d->sm_count = 80;
        d->mem_total = 23028 * MIB;
        d->power_limit_mw = 300000;
        d->simulated = 1;
    }
    s->ndev = ngpus;
    return 0;
}

/* The entries of the NVML devices: a GPU, or each GPU instance of a GPU
 * in MIG mode (from one sample taken now).  NVML has no utilisation of a
 * GPU in MIG mode nor of an instance, so a MIG GPU as a whole cannot be
 * judged; its instances can, from their own memory, processes and GPM SM
 * activity (mig_sample). */
static int nvml_views(idle_src *s, char *why, size_t whylen)
{
    gpu_device phys[GPU_MAX_DEVICES];
    int n = 0;
    s->nphys = gpu_nvml_devices(s->nvml, phys, GPU_MAX_DEVICES);
    s->raw = calloc(GPU_MAX_DEVICES, sizeof *s->raw);
    if (!s->raw) {
        snprintf(why, whylen, "out of memory");
        return GPUFL_ENOMEM;
    }
    if (gpu_nvml_sample(s->nvml, s->raw, s->nphys, &n))
        n = 0;
    for (int i = 0; i < s->nphys; i++) {
        const gpu_sample *r = &s->raw[i];
        int mig = i < n && (r->present & GS_MIG) && r->nmig > 0;
        for (uint32_t k = 0; k < (mig ? r->nmig : 1u); k++) {
            gpu_device *d = &s->dev[s->ndev];
            int dup = 0;
            if (s->ndev >= IDLE_MAX_GPUS)
                return 0;
            /* several compute instances of one GPU instance: one entry */
            for (uint32_t j = 0; mig && j < k; j++)
                dup |= r->mig[j].gi == r->mig[k].gi;
            if (dup)
                continue;
            *d = phys[i];
            s->phys[s->ndev++] = i;
            if (!mig)
                continue;
            d->mig = 1;
            d->gi = r->mig[k].gi;
            snprintf(d->mig_uuid, sizeof d->mig_uuid, "%s", r->mig[k].uuid);
            if (r->mig[k].present & GS_MEM)
                d->mem_total = r->mig[k].mem_total;
            d->power_limit_mw = 0; /* power is the whole GPU's */
        }
    }
    return 0;
}

/* GPU instance d of GPU sample r, as a sample of its own: its memory, its
 * processes, its GPM SM activity.  Utilisation: NVML has none per
 * instance (NVIDIA/DCGM#58), so it is 100 when GPM saw an SM active in
 * the interval and 0 when it saw none; without GPM (A100), 0 for an
 * instance with no process (no context to run a kernel: a phantom is not
 * seen there), else absent (a dcgm-exporter row may stand in,
 * idle_gpu_push), else UNKNOWN.  Power, clocks and the rest are the whole
 * GPU's and are left out. */
static void mig_sample(const gpu_device *d, const gpu_sample *r, gpu_sample *o)
{
    const gpu_mig *m = NULL;
    memset(o, 0, sizeof *o);
    if (r->present & GS_LOST) {
        o->present = GS_LOST;
        return;
    }
    for (uint32_t k = 0; k < r->nmig && !m; k++)
        if (r->mig[k].gi == d->gi)
            m = &r->mig[k];
    if (!m)
        return; /* the instance is gone: no field, the verdict says so */
    if (m->present & GS_MEM) {
        o->mem_used = m->mem_used;
        o->mem_total = m->mem_total;
        o->present |= GS_MEM;
    }
    if (r->present & GS_PROCS) {
        for (uint32_t k = 0; k < r->nprocs; k++)
            if (r->procs[k].gi == d->gi)
                o->procs[o->nprocs++] = r->procs[k];
        o->nprocs_total = o->nprocs;
        o->present |= GS_PROCS;
    }
    if (m->present & GS_SM_ACTIVE) {
        o->sm_active = m->sm_active;
        o->util_gpu = m->sm_active > 0 ? 100 : 0;
        o->present |= GS_SM_ACTIVE | GS_UTIL_GPU;
    } else if ((o->present & GS_PROCS) && !o->nprocs) {
        o->util_gpu = 0;
        o->present |= GS_UTIL_GPU;
    }
    o->present |= GS_MIG;
}

int idle_src_open(idle_src **out, const char *nvml_lib, const char *sim,
                  int sim_gpus, char *why, size_t whylen)
{
    idle_src *s = calloc(1, sizeof *s);
    int err;
    *out = NULL;
    if (!s) {
        snprintf(why, whylen, "out of memory");
        return GPUFL_ENOMEM;
    }
    if (sim) {
        err = sim_parse(s, sim, sim_gpus, why, whylen);
    } else {
        err = gpu_nvml_open(&s->nvml, nvml_lib, why, whylen);
        if (!err)
            err = nvml_views(s, why, whylen);
    }
    if (err) {
        idle_src_close(s);
        return err;
    }
    *out = s;
    return 0;
}

int idle_src_devices(idle_src *s, gpu_device *out, int max)
{
    int n = s->ndev < max ? s->ndev : max;
    memcpy(out, s->dev, (size_t)n * sizeof *out);
    return n;
}

int idle_src_simulated(const idle_src *s)
{
    return s && !s->nvml;
}

int idle_src_sim_alloc(const idle_src *s, int i)
{
    return s && !s->nvml && i >= 0 && i < s->ndev && s->sim[i] == SIM_ALLOC;
}

/* What a real node's /proc would say of simulated GPU i, which has none
 * of its own: SIM_DEAD's listed process is gone (a dead container, before
 * the verdict), SIM_LEAKED's memory is held by a simulated process with
 * /dev/nvidia<i> open (after it, as idle_holders_scan would). */
void idle_src_sim_dirt(const idle_src *s, idle_gpu *g, int i, int after)
{
    if (!s || s->nvml || i < 0 || i >= s->ndev)
        return;
    if (!after) {
        g->ndead = s->sim[i] == SIM_DEAD;
        g->dead[0] = SIM_PID(i);
        return;
    }
    g->nholders = s->sim[i] == SIM_LEAKED && g->dirty;
    memset(&g->holder_owner[0], 0, sizeof g->holder_owner[0]);
    g->holders[0] = SIM_PID(i);
    snprintf(g->holder_owner[0].ns, sizeof g->holder_owner[0].ns, "demo");
    snprintf(g->holder_owner[0].pod, sizeof g->holder_owner[0].pod,
             "sim-notebook-%d", i);
    snprintf(g->holder_owner[0].user, sizeof g->holder_owner[0].user,
             "sim-bob");
}

/* The seed's measured A10G rows (none, held, one_thread, matmul,
 * phantom) plus a bursty notebook and a long training job. */
static void sim_sample(const idle_src *s, int i, gpu_sample *o, uint64_t dt_us)
{
    uint64_t t = s->tick;
    double util = 0, power = 24.3, sm = 0;
    uint64_t mem = 0;
    int procs = 1, pstate = 8;
    switch (s->sim[i]) {
    case SIM_NONE: procs = 0; break;
    case SIM_HELD:
        mem = 19376 * MIB;
        power = 89.1;
        break;
    case SIM_ONE_THREAD:
        util = 100, mem = 302 * MIB, power = 90.0, sm = 0.012, pstate = 0;
        break;
    case SIM_MATMUL:
        util = 100, mem = 850 * MIB, power = 299.2, sm = 0.984, pstate = 0;
        break;
    case SIM_PHANTOM: util = 100, power = 118, procs = 0, pstate = 0; break;
    case SIM_STUCK:
        /* a hung collective: pinned utilisation, no SM doing work */
        util = 100, mem = 1200 * MIB, power = 85.0, sm = 0.001, pstate = 0;
        break;
    case SIM_ALLOC: procs = 0; break; /* held by a pod: idle_src_sim_alloc */
    case SIM_LEAKED: /* memory with no process, a holder: idle_src_sim_dirt */
        mem = 8192 * MIB, power = 61.0, procs = 0;
        break;
    case SIM_DEAD: /* its listed process is gone: idle_src_sim_dirt */
        mem = 8192 * MIB, power = 61.0;
        break;
    case SIM_BURSTY:
        /* a cell runs for 6 s of every 40 */
        mem = 6144 * MIB;
        if (t % 40 < 6)
            util = 95, power = 240, sm = 0.7, pstate = 0;
        else
            power = 92;
        break;
    default:
        util = 97, mem = 20480 * MIB, power = 281, sm = 0.71, pstate = 0;
        break;
    }
    o->util_gpu = (uint32_t)util;
    o->util_mem = (uint32_t)(util / 3);
    o->mem_used = mem;
    o->mem_total = s->dev[i].mem_total;
    o->power_mw = (uint32_t)(power * 1000);
    o->power_limit_mw = s->dev[i].power_limit_mw;
    o->pstate = pstate;
    o->sm_active = sm;
    o->sm_occupancy = sm / 3;
    o->present = GS_UTIL_GPU | GS_UTIL_MEM | GS_MEM | GS_POWER |
                 GS_POWER_LIMIT | GS_PSTATE | GS_SM_ACTIVE | GS_SM_OCC |
                 GS_PROCS;
    o->nprocs = o->nprocs_total = (uint32_t)procs;
    if (procs) {
        /* the process's share of the SMs is the GPU's utilisation, over
         * the real time since the previous sample (NVML's per-process
         * samples, src/gpu/nvml_putil.c) */
        o->present |= GS_PROC_UTIL;
        o->procs[0].pid = SIM_PID(i);
        o->procs[0].mem = mem;
        o->procs[0].gi = GPU_PROC_NO_GI;
        o->procs[0].sm_util = (uint32_t)util;
        o->procs[0].busy_us = (uint64_t)(util / 100.0 * (double)dt_us);
    }
}

int idle_src_sample(idle_src *s, gpu_sample *out, int max, int *n)
{
    int k = s->ndev < max ? s->ndev : max;
    if (s->nvml) {
        int np = 0, err = gpu_nvml_sample(s->nvml, s->raw, s->nphys, &np);
        if (err)
            return err;
        for (int i = 0; i < k; i++) {
            const gpu_sample *r = &s->raw[s->phys[i]];
            if (s->phys[i] >= np)
                memset(&out[i], 0, sizeof out[i]);
            else if (s->dev[i].mig)
                mig_sample(&s->dev[i], r, &out[i]);
            else
                out[i] = *r;
            out[i].dev = (uint32_t)i;
        }
        *n = k;
        return 0;
    }
    uint64_t now = clock_mono_ns();
    uint64_t dt_us = s->last_mono ? (now - s->last_mono) / 1000 : 0;
    for (int i = 0; i < k; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].dev = (uint32_t)i;
        sim_sample(s, i, &out[i], dt_us);
    }
    s->last_mono = now;
    s->tick++;
    *n = k;
    return 0;
}

void idle_src_close(idle_src *s)
{
    if (!s)
        return;
    gpu_nvml_close(s->nvml);
    free(s->raw);
    free(s);
}
