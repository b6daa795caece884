/*
 * oom_int.h - OOM forensics, `gpufl memprof --oom` (oom.c, docs/memprof.md
 * "OOM forensics"): a bounded window of each process's recent calls, and a
 * report when an allocation fails with CUDA_ERROR_OUT_OF_MEMORY.  The
 * session drives it: the aggregation tells it every call (its hook), the
 * preload source hands it the driver's memory figures, the session's tick
 * and end settle the reports.
 */
#ifndef GPUFL_MEMPROF_OOM_INT_H
#define GPUFL_MEMPROF_OOM_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memprof/mp_event.h"

struct mp_session;
struct mp_agg;
typedef struct mp_oom mp_oom;

#define MP_OOM_RETRIES_MAX 16

/* One call in a process's window (ring): what the aggregation said. */
typedef struct mp_oom_rec {
    uint64_t ts;    /* CLOCK_MONOTONIC ns */
    uint64_t bytes; /* asked (alloc, fail) or given back (free) */
    uint32_t stack; /* aggregation stack id: the allocating one for a free */
    uint32_t tid;
    uint16_t api; /* mp_api */
    uint8_t rec;  /* MP_REC_ALLOC, _FREE, _FAIL */
} mp_oom_rec;

typedef struct mp_oom_live {
    uint32_t stack;
    uint64_t bytes, count;
} mp_oom_live;

/* One OOM: taken at the failed call (request, device, live set, recent
 * calls), then completed while it settles (what the process gave back,
 * its retries). */
typedef struct mp_oom_report {
    uint32_t pid, tid;
    char comm[16];
    uint64_t ts; /* the failed call's CLOCK_MONOTONIC ns */
    uint32_t api, stack;
    uint64_t bytes;
    int rc;
    unsigned seq; /* the process's k-th report */
    /* the device: source 0 unknown (why says), 1 driver, 2 NVML */
    int dev_src, have_mem, have_proc;
    int64_t index; /* CUDA ordinal (driver) or NVML index; -1 unknown */
    uint64_t free_b, total_b, proc_b, dev_ts;
    char why[256];
    /* device memory the process held, by stack, biggest first */
    mp_oom_live *live;
    size_t nlive;
    uint64_t host_b, host_n, untracked_b, untracked_n;
    /* its calls in the window before the OOM, oldest first */
    mp_oom_rec *recent;
    size_t nrecent;
    int recent_cut; /* the ring dropped calls inside the window */
    /* after the OOM */
    uint64_t released_b, released_n, released_ca_b;
    struct {
        uint64_t ts;
        int ok;
    } retries[MP_OOM_RETRIES_MAX];
    size_t nretries;
    uint64_t more_ooms;
    int exited;
} mp_oom_report;

/* Sets up OOM forensics for session s (borrowed; it outlives *out):
 * installs the aggregation's hook and opens NVML (a failure to is kept
 * as the reason reports give for unknown device figures).  0, or -1 when
 * out of memory (said on stderr). */
int mp_oom_new(struct mp_session *s, mp_oom **out);
/* Frees what mp_oom_new made; NULL is accepted. */
void mp_oom_free(mp_oom *m);
/* The preload interposer's MP_EV_MEMINFO record (copied): the figures of
 * the failed call that follows it. */
void mp_oom_meminfo(mp_oom *m, const struct mp_event *e);
/* Writes the reports whose settle time is over (called every loop). */
void mp_oom_tick(mp_oom *m);
/* End of the run: writes every report still open and says how many OOMs
 * went unreported (--oom-max).  Returns 1 when a report could not be
 * written or pushed, else 0. */
int mp_oom_finish(mp_oom *m);

/* ---- writing a report (oom_out.c) ---- */
/* 1 when one of stack's frames is PyTorch's caching allocator
 * (c10::cuda::CUDACachingAllocator). */
int mp_oom_is_caching(const struct mp_agg *g, uint32_t stack);
/* The report as JSON (docs/api.md "OOM reports"), malloc'd, *len bytes;
 * NULL when out of memory. */
char *mp_oom_json(struct mp_session *s, const mp_oom_report *r, size_t *len);
/* The live set as folded stacks ("comm;frame;...;api bytes") into f. */
int mp_oom_folded(struct mp_session *s, const mp_oom_report *r, FILE *f);

#endif
