/*
 * idle_acct.c - GPU waste accounting: busy seconds per process from NVML's
 * per-process samples (src/gpu: gpu_proc.busy_us), folded up to the
 * owner (container, pod, namespace, Slurm job, user: idle_owner.c), the
 * memory each holds, and wasted seconds by reason from the GPU verdicts;
 * rendered as Prometheus counters whose GPU labels join dcgm-exporter's.
 *
 * Cardinality is bounded: the first cfg.metrics_procs processes get a
 * series of their own (pid label), later ones are counted in their
 * owner's series (pid=""), and so is a process's total when it exits, so
 * an owner's sum never goes back.  Owners are capped at ACCT_OWNERS_MAX
 * (past it: the GPU's unlabelled series) and dropped an hour after their
 * last process or waste.
 */
#include "idle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpufl/gpufl.h>

#include "common/buf.h"
#include "common/prom.h"

#define ACCT_PROCS_MAX 4096 /* tracked processes, every GPU */
#define ACCT_OWNERS_MAX 512
#define ACCT_OWNER_TTL_NS (3600ull * IDLE_NS)

typedef struct acct_proc {
    int gpu, owner, series; /* series: has its own pid series */
    uint32_t pid, gi;       /* gi: MIG GPU instance, GPU_PROC_NO_GI */
    int alive;
    int has_util; /* NVML gave per-process samples for it: busy_s known */
    double busy_s;
    uint64_t mem; /* UINT64_MAX: not available */
} acct_proc;

typedef struct acct_owner {
    int gpu;
    idle_owner o;
    double busy_s; /* exited processes and those without a series */
    int has_util;  /* some of them had per-process samples */
    double wasted[IW_N];
    uint64_t last_ns;
} acct_owner;

struct idle_acct {
    idle_cfg cfg;
    int simulated; /* simulated pids are nobody's on this host */
    acct_proc *p;
    int np, nseries;
    acct_owner *o;
    int no;
    uint64_t last_ns[IDLE_MAX_GPUS];
    double wasted[IDLE_MAX_GPUS][IW_N];
};

static const char *const waste_names[IW_N] = { "idle", "held", "phantom",
                                               "stuck", "allocated_unused" };

const char *idle_waste_name(int w)
{
    return w >= 0 && w < IW_N ? waste_names[w] : "idle";
}

int idle_acct_new(idle_acct **out, const idle_cfg *c, int simulated)
{
    idle_acct *a = calloc(1, sizeof *a);
    *out = NULL;
    if (!a)
        return GPUFL_ENOMEM;
    a->p = calloc(ACCT_PROCS_MAX, sizeof *a->p);
    a->o = calloc(ACCT_OWNERS_MAX, sizeof *a->o);
    if (!a->p || !a->o) {
        idle_acct_free(a);
        return GPUFL_ENOMEM;
    }
    a->cfg = *c;
    a->simulated = simulated;
    *out = a;
    return 0;
}

void idle_acct_free(idle_acct *a)
{
    if (!a)
        return;
    free(a->p);
    free(a->o);
    free(a);
}

/* The owner entry of (gpu, o); past the cap, the GPU's unlabelled one
 * (which always fits: one per GPU is kept free). */
static int owner_at(idle_acct *a, int gpu, const idle_owner *o, uint64_t now)
{
    static const idle_owner none;
    for (int i = 0; i < a->no; i++)
        if (a->o[i].gpu == gpu && !memcmp(&a->o[i].o, o, sizeof *o)) {
            a->o[i].last_ns = now;
            return i;
        }
    if (a->no >= ACCT_OWNERS_MAX - IDLE_MAX_GPUS &&
        memcmp(o, &none, sizeof none))
        return owner_at(a, gpu, &none, now);
    memset(&a->o[a->no], 0, sizeof a->o[a->no]);
    a->o[a->no].gpu = gpu;
    a->o[a->no].o = *o;
    a->o[a->no].last_ns = now;
    return a->no++;
}

/* Owners unused for the TTL go; procs' owner indices follow the move. */
static void owners_expire(idle_acct *a, uint64_t now)
{
    int map[ACCT_OWNERS_MAX], k = 0;
    for (int i = 0; i < a->np; i++)
        a->o[a->p[i].owner].last_ns = now; /* a live process keeps it */
    for (int i = 0; i < a->no; i++) {
        if (now - a->o[i].last_ns > ACCT_OWNER_TTL_NS) {
            map[i] = -1;
            continue;
        }
        map[i] = k;
        if (k != i)
            a->o[k] = a->o[i];
        k++;
    }
    if (k == a->no)
        return;
    a->no = k;
    for (int i = 0; i < a->np; i++)
        a->p[i].owner = map[a->p[i].owner];
}

static void procs_update(idle_acct *a, const idle_env *e, int gi,
                         const idle_gpu *g, uint64_t now)
{
    const gpu_sample *s = &g->last;
    for (int i = 0; i < a->np; i++)
        if (a->p[i].gpu == gi)
            a->p[i].alive = 0;
    if (!(s->present & GS_PROCS))
        return;
    for (uint32_t k = 0; k < s->nprocs; k++) {
        const gpu_proc *q = &s->procs[k];
        acct_proc *p = NULL;
        double busy;
        for (int i = 0; i < a->np && !p; i++)
            if (a->p[i].gpu == gi && a->p[i].pid == q->pid)
                p = &a->p[i];
        if (!p) {
            idle_owner o;
            if (a->np >= ACCT_PROCS_MAX)
                continue; /* counted again once others exit */
            memset(&o, 0, sizeof o);
            if (!a->simulated)
                idle_owner_of_pid(e, q->pid, &o);
            p = &a->p[a->np++];
            memset(p, 0, sizeof *p);
            p->gpu = gi;
            p->pid = q->pid;
            p->owner = owner_at(a, gi, &o, now);
            p->series = (uint32_t)a->nseries < a->cfg.metrics_procs;
            a->nseries += p->series;
        }
        p->alive = 1;
        p->mem = q->mem;
        p->gi = q->gi;
        p->has_util |= (s->present & GS_PROC_UTIL) != 0;
        busy = (s->present & GS_PROC_UTIL) ? (double)q->busy_us / 1e6 : 0;
        p->busy_s += busy;
        if (!p->series)
            a->o[p->owner].busy_s += busy;
    }
    /* exited: the total moves to the owner's series */
    for (int i = 0; i < a->np;) {
        acct_proc *p = &a->p[i];
        if (p->gpu != gi || p->alive) {
            i++;
            continue;
        }
        if (p->series) {
            a->o[p->owner].busy_s += p->busy_s;
            a->nseries--;
        }
        a->o[p->owner].has_util |= p->has_util;
        a->o[p->owner].last_ns = now;
        a->p[i] = a->p[--a->np];
    }
}

/* Reason and share of the interval wasted on g, -1 for none. */
static int waste_of(const idle_gpu *g, double *share)
{
    *share = 1;
    switch (g->state) {
    case IG_PHANTOM: return IW_PHANTOM;
    case IG_STUCK: return IW_STUCK;
    case IG_ALLOCATED_UNUSED: return IW_ALLOC;
    case IG_HELD: return g->sig.procs ? IW_HELD : IW_PHANTOM; /* leaked */
    case IG_BUSY:
    case IG_BUSY_LOW_OCC:
    case IG_BURSTY:
        if (!(g->last.present & GS_UTIL_GPU) || g->last.util_gpu >= 100)
            return -1;
        *share = 1.0 - g->last.util_gpu / 100.0;
        return IW_IDLE;
    default: return -1;
    }
}

static void waste_update(idle_acct *a, int gi, const idle_gpu *g, uint64_t now)
{
    uint64_t cap = 2ull * a->cfg.interval_ms * 1000000ull + IDLE_NS;
    uint64_t dt =
        a->last_ns[gi] && now > a->last_ns[gi] ? now - a->last_ns[gi] : 0;
    int owners[IDLE_MAX_HOLDERS + GPU_MAX_PROCS], n = 0, w;
    double share, sec;
    a->last_ns[gi] = now;
    w = waste_of(g, &share);
    if (w < 0 || !dt)
        return;
    if (dt > cap)
        dt = cap; /* a stalled loop does not invent waste */
    sec = (double)dt / 1e9 * share;
    a->wasted[gi][w] += sec;
    if (w == IW_ALLOC) {
        owners[n++] = owner_at(a, gi, &g->alloc, now);
    } else {
        for (int i = 0; i < a->np; i++)
            if (a->p[i].gpu == gi && a->p[i].alive) {
                int dup = 0;
                for (int k = 0; k < n; k++)
                    dup |= owners[k] == a->p[i].owner;
                if (!dup && n < GPU_MAX_PROCS)
                    owners[n++] = a->p[i].owner;
            }
        for (int i = 0; !n && i < g->nholders; i++)
            owners[n++] = owner_at(a, gi, &g->holder_owner[i], now);
        if (!n) {
            static const idle_owner none;
            owners[n++] = owner_at(a, gi, &none, now);
        }
    }
    for (int k = 0; k < n; k++) {
        a->o[owners[k]].wasted[w] += sec / n;
        a->o[owners[k]].last_ns = now;
    }
}

void idle_acct_round(idle_acct *a, const idle_env *e, const idle_gpu *gpus,
                     int ngpus, uint64_t now)
{
    owners_expire(a, now);
    for (int i = 0; i < ngpus && i < IDLE_MAX_GPUS; i++) {
        procs_update(a, e, i, &gpus[i], now);
        waste_update(a, i, &gpus[i], now);
    }
}

double idle_acct_busy(const idle_acct *a, int gpu, uint32_t pid)
{
    for (int i = 0; i < a->np; i++)
        if (a->p[i].gpu == gpu && a->p[i].pid == pid)
            return a->p[i].busy_s;
    return -1;
}

double idle_acct_wasted(const idle_acct *a, int gpu, int reason)
{
    if (gpu < 0 || gpu >= IDLE_MAX_GPUS || reason < 0 || reason >= IW_N)
        return 0;
    return a->wasted[gpu][reason];
}

/* ---- Prometheus ---- */

typedef struct acct_lbl {
    prom_label l[IDLE_GPU_LABELS + 8];
    char id[16], pid[16], gi[16];
} acct_lbl;

/* GPU_I_ID is dcgm-exporter's label of a MIG GPU instance: a process's
 * memory joins its instance's series; "" outside MIG and on owner
 * series. */
static size_t acct_labels(acct_lbl *x, const idle_gpu *g, const char *host,
                          const idle_owner *o, const acct_proc *p,
                          const char *reason)
{
    size_t n = idle_out_gpu_labels(x->l, x->id, sizeof x->id, g, host);
    x->pid[0] = x->gi[0] = 0;
    if (p)
        snprintf(x->pid, sizeof x->pid, "%u", p->pid);
    if (p && p->gi != GPU_PROC_NO_GI)
        snprintf(x->gi, sizeof x->gi, "%u", p->gi);
    x->l[n++] = (prom_label){ "GPU_I_ID", x->gi };
    x->l[n++] = (prom_label){ "pid", x->pid };
    x->l[n++] = (prom_label){ "container", o->container };
    x->l[n++] = (prom_label){ "pod", o->pod };
    x->l[n++] = (prom_label){ "namespace", o->ns };
    x->l[n++] = (prom_label){ "job", o->job };
    x->l[n++] = (prom_label){ "user", o->user };
    if (reason)
        x->l[n++] = (prom_label){ "reason", reason };
    return n;
}

int idle_acct_metrics(const idle_acct *a, gbuf *b, const idle_gpu *gpus,
                      int ngpus, const char *host)
{
    acct_lbl x;
    size_t n;

    prom_family(b, "gpufl_gpu_busy_seconds_total", "counter",
                "Seconds a process kept the GPU's SMs busy (NVML per-process "
                "samples); pid=\"\": its owner's exited processes and those "
                "past the process series cap.");
    for (int i = 0; i < a->np; i++) {
        const acct_proc *p = &a->p[i];
        /* no per-process samples (an old driver, a simulation): unknown,
         * not zero */
        if (!p->series || p->gpu >= ngpus || !p->has_util)
            continue;
        n = acct_labels(&x, &gpus[p->gpu], host, &a->o[p->owner].o, p, NULL);
        prom_f64(b, "gpufl_gpu_busy_seconds_total", x.l, n, p->busy_s, 3);
    }
    for (int i = 0; i < a->no; i++) {
        const acct_owner *o = &a->o[i];
        int folded = o->has_util;
        for (int k = 0; k < a->np && !folded; k++)
            folded = a->p[k].owner == i && !a->p[k].series && a->p[k].has_util;
        if (!folded || o->gpu >= ngpus)
            continue;
        n = acct_labels(&x, &gpus[o->gpu], host, &o->o, NULL, NULL);
        prom_f64(b, "gpufl_gpu_busy_seconds_total", x.l, n, o->busy_s, 3);
    }
    prom_family(b, "gpufl_gpu_memory_used_bytes", "gauge",
                "GPU memory a process holds now (pid=\"\": its owner's "
                "processes past the process series cap).");
    for (int i = 0; i < a->np; i++) {
        const acct_proc *p = &a->p[i];
        if (!p->series || p->gpu >= ngpus || p->mem == UINT64_MAX)
            continue;
        n = acct_labels(&x, &gpus[p->gpu], host, &a->o[p->owner].o, p, NULL);
        prom_u64(b, "gpufl_gpu_memory_used_bytes", x.l, n, p->mem);
    }
    for (int i = 0; i < a->no; i++) {
        uint64_t mem = 0;
        int any = 0;
        for (int k = 0; k < a->np; k++)
            if (a->p[k].owner == i && !a->p[k].series &&
                a->p[k].mem != UINT64_MAX) {
                mem += a->p[k].mem;
                any = 1;
            }
        if (!any || a->o[i].gpu >= ngpus)
            continue;
        n = acct_labels(&x, &gpus[a->o[i].gpu], host, &a->o[i].o, NULL, NULL);
        prom_u64(b, "gpufl_gpu_memory_used_bytes", x.l, n, mem);
    }
    prom_family(b, "gpufl_gpu_wasted_seconds_total", "counter",
                "GPU seconds wasted, by reason (docs/idle.md, waste "
                "accounting), charged to the owners holding the GPU.");
    for (int i = 0; i < a->no; i++)
        for (int w = 0; w < IW_N; w++) {
            const acct_owner *o = &a->o[i];
            if (o->wasted[w] <= 0 || o->gpu >= ngpus)
                continue;
            n = acct_labels(&x, &gpus[o->gpu], host, &o->o, NULL,
                            idle_waste_name(w));
            prom_f64(b, "gpufl_gpu_wasted_seconds_total", x.l, n, o->wasted[w],
                     3);
        }
    prom_family(b, "gpufl_gpu_dirty", "gauge",
                "1 when the GPU is not safe to hand to the next job: memory "
                "with no process (leaked), PHANTOM or STUCK.");
    for (int i = 0; i < ngpus; i++) {
        n = idle_out_gpu_labels(x.l, x.id, sizeof x.id, &gpus[i], host);
        prom_u64(b, "gpufl_gpu_dirty", x.l, n, gpus[i].dirty ? 1 : 0);
    }
    return b->err;
}

int idle_acct_owners(const idle_acct *a, idle_acct_row *out, int max)
{
    int n = 0;
    for (int i = 0; i < a->no && n < max; i++) {
        idle_acct_row *r = &out[n++];
        r->gpu = a->o[i].gpu;
        r->o = a->o[i].o;
        r->busy_s = a->o[i].busy_s;
        r->has_util = a->o[i].has_util;
        for (int w = 0; w < IW_N; w++)
            r->wasted[w] = a->o[i].wasted[w];
        /* live processes with a series of their own hold their busy time
         * until they exit */
        for (int k = 0; k < a->np; k++)
            if (a->p[k].owner == i && a->p[k].series) {
                r->busy_s += a->p[k].busy_s;
                r->has_util |= a->p[k].has_util;
            } else if (a->p[k].owner == i) {
                r->has_util |= a->p[k].has_util;
            }
    }
    return n;
}
