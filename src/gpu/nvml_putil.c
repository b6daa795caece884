/*
 * nvml_putil.c - per-process GPU time for gpu_nvml_sample(): NVML's
 * per-process utilisation samples (nvmlDeviceGetProcessUtilization, every
 * process on the GPU, no instrumentation) turned into busy microseconds
 * per listed process.
 *
 * A sample says what share of its sampling period a process kept the SMs
 * busy; the period is not in the sample, so it is the time since the
 * process's previous sample (or, for its first, since the newest sample of
 * the previous call), capped at NVML_PUTIL_PERIOD_MAX_US.  The very first
 * call of a device has no start for its oldest samples and counts only
 * from the second timestamp on: busy time is never invented.
 */
#include "nvml_int.h"

#include <stdlib.h>
#include <string.h>

static int putil_cmp_ts(const void *a, const void *b)
{
    const nvmlProcessUtilizationSample_t *x = a, *y = b;
    if (x->timeStamp != y->timeStamp)
        return x->timeStamp < y->timeStamp ? -1 : 1;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

static uint64_t putil_last_ts(const nvml_dev *d, uint32_t pid)
{
    for (uint32_t i = 0; i < d->nputil_last; i++)
        if (d->putil_last[i].pid == pid)
            return d->putil_last[i].ts_us;
    return 0;
}

nvmlReturn_t gpu_nvml_proc_util(gpu_nvml *s, nvml_dev *d, gpu_sample *o)
{
    uint32_t nsm[GPU_MAX_PROCS] = { 0 };
    uint64_t smsum[GPU_MAX_PROCS] = { 0 }, last[GPU_MAX_PROCS];
    uint64_t newest = d->putil_seen_us;
    unsigned int cnt = NVML_PUTIL_CAP;
    nvmlReturn_t r;

    if (!s->f.proc_util || !s->putil || !(o->present & GS_PROCS))
        return NVML_ERROR_NOT_SUPPORTED;
    for (uint32_t k = 0; k < o->nprocs; k++)
        last[k] = putil_last_ts(d, o->procs[k].pid);
    r = s->f.proc_util(d->h, s->putil, &cnt, d->putil_seen_us);
    if (r == NVML_ERROR_NOT_FOUND) {
        cnt = 0; /* no sample since the last call: nobody was busy */
    } else if (r != NVML_SUCCESS) {
        /* INSUFFICIENT_SIZE: more than NVML_PUTIL_CAP samples in one
         * interval; reported absent rather than partly counted */
        return r;
    }
    if (cnt > NVML_PUTIL_CAP)
        cnt = NVML_PUTIL_CAP;
    qsort(s->putil, cnt, sizeof *s->putil, putil_cmp_ts);
    for (unsigned int i = 0; i < cnt; i++) {
        const nvmlProcessUtilizationSample_t *e = &s->putil[i];
        uint32_t k;
        uint64_t from, period = 0;
        if (e->timeStamp > newest)
            newest = e->timeStamp;
        for (k = 0; k < o->nprocs && o->procs[k].pid != e->pid; k++)
            ;
        /* a process no longer listed has exited: its context is gone */
        if (k == o->nprocs || e->smUtil > 100)
            continue;
        from = last[k] ? last[k] : d->putil_seen_us;
        if (from && e->timeStamp > from) {
            period = e->timeStamp - from;
            if (period > NVML_PUTIL_PERIOD_MAX_US)
                period = NVML_PUTIL_PERIOD_MAX_US;
        }
        o->procs[k].busy_us += period * e->smUtil / 100;
        smsum[k] += e->smUtil;
        nsm[k]++;
        last[k] = e->timeStamp;
    }
    d->nputil_last = 0;
    for (uint32_t k = 0; k < o->nprocs; k++) {
        o->procs[k].sm_util = nsm[k] ? (uint32_t)(smsum[k] / nsm[k]) : 0;
        if (last[k]) {
            d->putil_last[d->nputil_last].pid = o->procs[k].pid;
            d->putil_last[d->nputil_last++].ts_us = last[k];
        }
    }
    d->putil_seen_us = newest;
    o->present |= GS_PROC_UTIL;
    return NVML_SUCCESS;
}
