/*
 * gpu_nvml_procs.c - the processes on each GPU, for gpu_nvml_sample():
 * which NVML call answers (the detail list, _v3, _v2, _v1 as drivers
 * moved), the entry layouts they really write, and the merge of the
 * compute and graphics lists.
 */
#include "nvml_int.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gpufl/gpufl.h>

int gpu_nvml_proc_reserve(gpu_nvml *s, unsigned want)
{
    unsigned char *raw;
    gpu_proc *all;
    unsigned cap = s->proc_cap ? s->proc_cap : NVML_PROC_CAP_START;
    if (want <= s->proc_cap)
        return 0;
    if (want > NVML_PROC_CAP_MAX)
        return GPUFL_ETOOBIG;
    while (cap < want)
        cap *= 2;
    if (cap > NVML_PROC_CAP_MAX)
        cap = NVML_PROC_CAP_MAX;
    raw = realloc(s->proc_raw, (size_t)cap * NVML_PROC_ENTRY_MAX);
    if (!raw)
        return GPUFL_ENOMEM;
    s->proc_raw = raw;
    all = realloc(s->proc_all, (size_t)cap * 2 * sizeof *all);
    if (!all)
        return GPUFL_ENOMEM;
    s->proc_all = all;
    s->proc_cap = cap;
    return 0;
}

/* ---- processes ---- */

/* R535-era drivers wrote 32-byte entries through _v3 while the header says
 * 24; the buffer is pre-filled with 0xAA, and 24-byte entries leave the
 * tail [24n, 32n) untouched, while 32-byte ones write their last entry's
 * fields there. */
static unsigned nvml_v3_stride(const unsigned char *raw, unsigned n)
{
    for (size_t i = (size_t)n * NVML_PROC_ENTRY_V2;
         i < (size_t)n * NVML_PROC_ENTRY_MAX; i++)
        if (raw[i] != 0xAA)
            return NVML_PROC_ENTRY_MAX;
    return NVML_PROC_ENTRY_V2;
}

/* One list call at the current level.  *n = entries, *stride = bytes each. */
static nvmlReturn_t nvml_proc_call(gpu_nvml *s, nvmlDevice_t h, int graphics,
                                   unsigned *n, unsigned *stride)
{
    const nvml_fns *f = &s->f;
    nvml_proc_fn fn = NULL;
    nvmlReturn_t r;
    unsigned cnt = s->proc_cap;

    switch (s->proc_level) {
    case PROC_DETAIL: {
        nvmlProcessDetailList_v1_t l;
        l.version = NVML_DETAIL_LIST_V1_VERSION;
        l.mode = graphics ? NVML_PROC_MODE_GRAPHICS : NVML_PROC_MODE_COMPUTE;
        l.numProcArrayEntries = cnt;
        l.procArray = (nvmlProcessDetail_v1_t *)(void *)s->proc_raw;
        r = f->proc_detail(h, &l);
        *n = l.numProcArrayEntries;
        *stride = sizeof(nvmlProcessDetail_v1_t);
        return r;
    }
    case PROC_V3:
        fn = graphics ? f->graphics_v3 : f->compute_v3;
        memset(s->proc_raw, 0xAA, (size_t)cnt * NVML_PROC_ENTRY_MAX);
        break;
    case PROC_V2:
        fn = graphics ? f->graphics_v2 : f->compute_v2;
        *stride = NVML_PROC_ENTRY_V2;
        break;
    case PROC_V1:
        fn = graphics ? f->graphics_v1 : f->compute_v1;
        *stride = NVML_PROC_ENTRY_V1;
        break;
    default: return NVML_ERROR_NOT_SUPPORTED;
    }
    if (!fn)
        return NVML_ERROR_NOT_SUPPORTED;
    r = fn(h, &cnt, s->proc_raw);
    *n = cnt;
    if (s->proc_level == PROC_V3)
        *stride = r == NVML_SUCCESS && cnt <= s->proc_cap
                      ? nvml_v3_stride(s->proc_raw, cnt)
                      : NVML_PROC_ENTRY_V2;
    return r;
}

static int nvml_proc_level_ok(const gpu_nvml *s)
{
    switch (s->proc_level) {
    case PROC_DETAIL: return s->f.proc_detail != NULL;
    case PROC_V3: return s->f.compute_v3 != NULL;
    case PROC_V2: return s->f.compute_v2 != NULL;
    case PROC_V1: return s->f.compute_v1 != NULL;
    default: return 1;
    }
}

/* Does answer r mean "use the next, older call" for good?  A missing
 * function or a rejected struct version, at any level.  The detail list
 * may answer NOT_SUPPORTED on a pre-Hopper GPU (nvml.h: "For Hopper or
 * newer fully supported devices", while the driver exports it for every
 * GPU) and answers INVALID_ARGUMENT for a version it does not know ("if
 * ... plist->version is invalid"); _v3 serves all those GPUs. */
static int nvml_proc_next_level(const gpu_nvml *s, nvmlReturn_t r)
{
    if (r == NVML_ERROR_FUNCTION_NOT_FOUND ||
        r == NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        return 1;
    return s->proc_level == PROC_DETAIL &&
           (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_INVALID_ARGUMENT);
}

/* Append one list's valid entries to s->proc_all[*nall]. */
static nvmlReturn_t nvml_proc_list(gpu_nvml *s, nvmlDevice_t h, int graphics,
                                   unsigned *nall)
{
    nvmlReturn_t r = NVML_ERROR_NOT_SUPPORTED;
    unsigned n = 0, stride = 0;

    for (int tries = 0; tries < 8; tries++) {
        r = nvml_proc_call(s, h, graphics, &n, &stride);
        if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
            /* the list can grow between calls: leave slack */
            unsigned want = n + n / 4 + 8;
            if (want > NVML_PROC_CAP_MAX && n <= NVML_PROC_CAP_MAX)
                want = NVML_PROC_CAP_MAX;
            if (n <= s->proc_cap || gpu_nvml_proc_reserve(s, want))
                return r;
            continue;
        }
        if (nvml_proc_next_level(s, r)) {
            do
                s->proc_level++;
            while (!nvml_proc_level_ok(s));
            continue;
        }
        break;
    }
    if (r != NVML_SUCCESS)
        return r;
    if (n > s->proc_cap)
        n = s->proc_cap;
    for (unsigned i = 0; i < n; i++) {
        const unsigned char *e = s->proc_raw + (size_t)i * stride;
        unsigned int pid, gi = 0xFFFFFFFFu;
        unsigned long long mem;
        memcpy(&pid, e, sizeof pid);
        memcpy(&mem, e + 8, sizeof mem);
        /* _v2, _v3 and the detail list carry gpuInstanceId at 16; outside
         * MIG mode NVML writes all ones there */
        if (stride >= NVML_PROC_ENTRY_V2)
            memcpy(&gi, e + 16, sizeof gi);
        /* pid 0 or past the kernel's limit: an entry misread or never
         * written.  mem == NOT_AVAILABLE is kept: a real process whose
         * usage the driver cannot attribute (gpu_proc.mem says so). */
        if (pid == 0 || pid > NVML_PID_MAX)
            continue;
        memset(&s->proc_all[*nall], 0, sizeof s->proc_all[*nall]);
        s->proc_all[*nall].pid = pid;
        s->proc_all[*nall].mem =
            mem == NVML_VALUE_NOT_AVAILABLE ? UINT64_MAX : mem;
        s->proc_all[*nall].gi = gi == 0xFFFFFFFFu ? GPU_PROC_NO_GI : gi;
        (*nall)++;
    }
    return NVML_SUCCESS;
}

static int nvml_cmp_pid(const void *a, const void *b)
{
    const gpu_proc *x = a, *y = b;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Larger memory first; "not available" sorts last. */
static int nvml_cmp_mem(const void *a, const void *b)
{
    const gpu_proc *x = a, *y = b;
    uint64_t mx = x->mem == UINT64_MAX ? 0 : x->mem + 1;
    uint64_t my = y->mem == UINT64_MAX ? 0 : y->mem + 1;
    if (mx != my)
        return mx < my ? 1 : -1;
    return nvml_cmp_pid(a, b);
}

nvmlReturn_t gpu_nvml_procs(gpu_nvml *s, nvmlDevice_t h, gpu_sample *o)
{
    unsigned nall = 0, nu = 0;
    nvmlReturn_t r;

    if (s->proc_level >= PROC_NONE)
        return NVML_ERROR_NOT_SUPPORTED;
    r = nvml_proc_list(s, h, 0, &nall);
    if (r != NVML_SUCCESS)
        return r;
    /* graphics lists are optional: compute alone makes a valid list */
    r = nvml_proc_list(s, h, 1, &nall);
    if (nvml_is_lost(r))
        return r;
    /* a process with CUDA and graphics contexts is listed twice */
    qsort(s->proc_all, nall, sizeof *s->proc_all, nvml_cmp_pid);
    for (unsigned i = 0; i < nall; i++) {
        gpu_proc *p = &s->proc_all[i];
        if (nu > 0 && s->proc_all[nu - 1].pid == p->pid) {
            gpu_proc *q = &s->proc_all[nu - 1];
            if (q->mem == UINT64_MAX ||
                (p->mem != UINT64_MAX && p->mem > q->mem))
                q->mem = p->mem;
            continue;
        }
        s->proc_all[nu++] = *p;
    }
    o->nprocs_total = nu;
    if (nu > GPU_MAX_PROCS) {
        /* keep the largest users, still listed in pid order */
        qsort(s->proc_all, nu, sizeof *s->proc_all, nvml_cmp_mem);
        qsort(s->proc_all, GPU_MAX_PROCS, sizeof *s->proc_all, nvml_cmp_pid);
        nu = GPU_MAX_PROCS;
    }
    memcpy(o->procs, s->proc_all, nu * sizeof *s->proc_all);
    o->nprocs = nu;
    o->present |= GS_PROCS;
    return NVML_SUCCESS;
}

/* MPS clients run their kernels in the MPS server's context, so the
 * compute list names the server; nvmlDeviceGetMPSComputeRunningProcesses_v3
 * names the clients (Volta and newer), in the same entry layout as the
 * compute _v3 call (the R535 32-byte stride probed the same way). */
nvmlReturn_t gpu_nvml_mps(gpu_nvml *s, nvmlDevice_t h, gpu_sample *o)
{
    unsigned cnt = s->proc_cap, stride;
    nvmlReturn_t r;

    if (!(o->present & GS_PROCS))
        return NVML_ERROR_NOT_SUPPORTED;
    memset(s->proc_raw, 0xAA, (size_t)cnt * NVML_PROC_ENTRY_MAX);
    r = s->f.mps_v3(h, &cnt, s->proc_raw);
    if (r != NVML_SUCCESS)
        return r; /* NOT_SUPPORTED without MPS; more clients than the
                   * scratch holds: the compute list stands alone */
    if (cnt > s->proc_cap)
        cnt = s->proc_cap;
    stride = nvml_v3_stride(s->proc_raw, cnt);
    for (unsigned i = 0; i < cnt; i++) {
        const unsigned char *e = s->proc_raw + (size_t)i * stride;
        unsigned int pid, gi;
        unsigned long long mem;
        uint32_t k;
        memcpy(&pid, e, sizeof pid);
        memcpy(&mem, e + 8, sizeof mem);
        memcpy(&gi, e + 16, sizeof gi);
        if (pid == 0 || pid > NVML_PID_MAX)
            continue;
        for (k = 0; k < o->nprocs && o->procs[k].pid != pid; k++)
            ;
        if (k == o->nprocs) {
            if (o->nprocs >= GPU_MAX_PROCS) {
                o->nprocs_total++;
                continue;
            }
            memset(&o->procs[k], 0, sizeof o->procs[k]);
            o->procs[k].pid = pid;
            o->procs[k].mem =
                mem == NVML_VALUE_NOT_AVAILABLE ? UINT64_MAX : mem;
            o->procs[k].gi = gi == 0xFFFFFFFFu ? GPU_PROC_NO_GI : gi;
            o->nprocs++;
            o->nprocs_total++;
        }
        o->procs[k].mps = 1;
    }
    return NVML_SUCCESS;
}
