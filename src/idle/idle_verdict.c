/*
 * idle_verdict.c - the verdict engine's GPU half: per-GPU states over a
 * window, the state names and defaults, and the reasons every verdict
 * gives (the sessions' verdicts are idle_verdict_sess.c's).  The decision
 * table is docs/idle.md §3-§4 (its thresholds come from the A10G
 * measurements tabled in §3).
 *
 * Invariants: PHANTOM never counts as work; UNKNOWN never leads to a
 * stop.
 */
#include "idle_verdict_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpufl/gpufl.h>

static const char *const gpu_names[IG_N] = {
    "EMPTY",   "HELD",  "BURSTY",           "BUSY_LOW_OCC", "BUSY",
    "PHANTOM", "STUCK", "ALLOCATED_UNUSED", "UNKNOWN"
};
static const char *const sess_names[IS_N] = { "STARTING",   "ACTIVE",
                                              "GPU_UNUSED", "HELD_IDLE",
                                              "IDLE",       "MAX_AGE",
                                              "UNKNOWN" };
static const char *const action_names[IA_N] = {
    "none", "warn", "stop", "vetoed", "notify", "suggest_release", "alert"
};

const char *idle_gpu_state_name(int s)
{
    return s >= 0 && s < IG_N ? gpu_names[s] : "UNKNOWN";
}

const char *idle_sess_state_name(int s)
{
    return s >= 0 && s < IS_N ? sess_names[s] : "UNKNOWN";
}

const char *idle_action_name(int a)
{
    return a >= 0 && a < IA_N ? action_names[a] : "none";
}

int idle_gpu_state_parse(const char *s)
{
    for (int i = 0; i < IG_N; i++)
        if (strcmp(s, gpu_names[i]) == 0)
            return i;
    return -1;
}

void idle_cfg_init(idle_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->interval_ms = 1000;
    c->window_s = 60;
    c->fb_empty = 64ull << 20; /* a CUDA context alone is ~300 MiB */
    c->busy_util = 50;
    c->bursty_duty = 0.5;
    c->low_occ_sm = 0.05; /* one_thread 0.012, matmul 0.984 */
    c->held_sm = 0.01;
    c->busy_power = 0.5;  /* matmul ~1.0 of cap */
    c->held_floor = 0.30; /* held 89.1 W / 300 W */
    c->low_occ_margin = 0.10;
    c->phantom_util = 90;
    c->empty_util = 5; /* H200: a sample at 2 % just after a process ended */
    c->phantom_hold_s = 300;
    c->min_valid = 0.5;
    c->cpu_busy = 0.5;
    c->grace_s = 15 * 60;
    c->idle_s = 60 * 60;
    c->held_s = 120 * 60;
    c->max_age_s = 7ull * 24 * 3600;
    c->gpu_unused_s = 4 * 3600;
    c->warn_s = 300;
    c->hyst_s = 60;
    c->refresh_s = 60;
    c->veto_s = 4 * 3600;
    c->unattended_mult = 4;
    c->stuck_util = 95;
    c->stuck_sm = 0.005; /* below one_thread's 0.012: nothing runs */
    c->stuck_margin = 0.05;
    c->stuck_hold_s = 300;
    c->metrics_procs = 100;
}

/* ---- reasons ---- */

void idle_reason_add(char (*r)[IDLE_REASON_LEN], int *n, const char *fmt, ...)
{
    va_list ap;
    if (*n >= IDLE_MAX_REASONS)
        return;
    va_start(ap, fmt);
    vsnprintf(r[*n], IDLE_REASON_LEN, fmt, ap);
    va_end(ap);
    (*n)++;
}

#define GR(...) idle_reason_add(g->reasons, &g->nreasons, __VA_ARGS__)

static double gib(uint64_t b)
{
    return (double)b / (1024.0 * 1024.0 * 1024.0);
}

const char *idle_dur_text(char *buf, size_t cap, double s)
{
    if (s < 120)
        snprintf(buf, cap, "%.0f s", s);
    else if (s < 3 * 3600)
        snprintf(buf, cap, "%.0f min", s / 60);
    else
        snprintf(buf, cap, "%.1f h", s / 3600);
    return buf;
}

/* ---- GPUs ---- */

int idle_gpu_init(idle_gpu *g, const idle_cfg *c, const gpu_device *info)
{
    uint64_t n =
        (uint64_t)c->window_s * 1000 / (c->interval_ms ? c->interval_ms : 1000);
    memset(g, 0, sizeof *g);
    if (info)
        g->info = *info;
    if (n < 1)
        n = 1;
    if (n > IDLE_WIN_MAX)
        n = IDLE_WIN_MAX;
    g->ring = calloc((size_t)n, sizeof *g->ring);
    if (!g->ring)
        return GPUFL_ENOMEM;
    g->cap = (uint32_t)n;
    g->state = IG_UNKNOWN;
    g->dcgm_sm = g->dcgm_gr = -1;
    return 0;
}

void idle_gpu_release(idle_gpu *g)
{
    if (!g)
        return;
    free(g->ring);
    g->ring = NULL;
}

void idle_gpu_push(idle_gpu *g, const gpu_sample *s, uint64_t ts)
{
    idle_gsample *e = &g->ring[g->head];
    memset(e, 0, sizeof *e);
    e->ts = ts;
    g->last_ts = ts;
    if (s) {
        g->last = *s;
        /* a sample is usable when utilisation and the process list were
         * both read: without either no state can be told apart */
        e->valid = (s->present & GS_UTIL_GPU) && (s->present & GS_PROCS);
        e->util = s->util_gpu;
        /* a MIG GPU instance without GPM (A100): dcgm-exporter's SM
         * activity of the instance stands in for the utilisation NVML
         * does not give, as GPM's does on Hopper (idle_src.c) */
        if (!e->valid && g->info.mig && (s->present & GS_PROCS) &&
            g->dcgm_sm >= 0) {
            e->valid = 1;
            e->util = g->dcgm_sm > 0 ? 100 : 0;
        }
        e->nprocs = s->nprocs_total;
        e->mem = (s->present & GS_MEM) ? s->mem_used : 0;
        if ((s->present & GS_POWER) && (s->present & GS_POWER_LIMIT) &&
            s->power_limit_mw) {
            e->has_power = 1;
            e->power_mw = s->power_mw;
            e->limit_mw = s->power_limit_mw;
        }
        if (s->present & GS_SM_ACTIVE) {
            e->has_sm = 1;
            e->sm = (float)s->sm_active;
        } else if (g->dcgm_sm >= 0) {
            e->has_sm = 1;
            e->sm = (float)g->dcgm_sm;
        }
        if (g->dcgm_gr >= 0) {
            e->has_gr = 1;
            e->gr = (float)g->dcgm_gr;
        }
    } else {
        memset(&g->last, 0, sizeof g->last);
    }
    g->head = (g->head + 1) % g->cap;
    if (g->n < g->cap)
        g->n++;
}

static void gpu_summarise(idle_gpu *g, uint64_t now, uint64_t win_ns)
{
    idle_gsig *q = &g->sig;
    double usum = 0, smsum = 0, grsum = 0, psum = 0, rsum = 0;
    uint32_t nsm = 0, ngr = 0, npow = 0, nbusy = 0;
    memset(q, 0, sizeof *q);
    q->pstate = -1;
    q->util_min = 100;
    q->mem_min = UINT64_MAX;
    for (uint32_t i = 0; i < g->n; i++) {
        const idle_gsample *e = &g->ring[(g->head + g->cap - 1 - i) % g->cap];
        if (e->ts + win_ns < now)
            break;
        q->total++;
        if (!e->valid)
            continue;
        q->valid++;
        usum += e->util;
        if (e->util < q->util_min)
            q->util_min = e->util;
        if (e->mem < q->mem_min)
            q->mem_min = e->mem;
        if (e->mem > q->mem_max)
            q->mem_max = e->mem;
        if (e->util > q->util_max)
            q->util_max = e->util;
        if (e->util > 0)
            nbusy++;
        if (e->nprocs > q->procs)
            q->procs = e->nprocs;
        if (e->has_sm) {
            smsum += e->sm;
            nsm++;
        }
        if (e->has_gr) {
            grsum += e->gr;
            ngr++;
        }
        if (e->has_power) {
            psum += e->power_mw / 1000.0;
            rsum += (double)e->power_mw / e->limit_mw;
            npow++;
        }
    }
    if (q->valid) {
        q->util_mean = usum / q->valid;
        q->duty = (double)nbusy / q->valid;
    } else {
        q->util_min = 0;
        q->mem_min = 0;
    }
    /* a source that reports only some samples (GPM skips the first) counts
     * when it covers at least half of the good ones */
    if (nsm && nsm * 2 >= q->valid) {
        q->has_sm = 1;
        q->sm_mean = smsum / nsm;
    }
    if (ngr && ngr * 2 >= q->valid) {
        q->has_gr = 1;
        q->gr_mean = grsum / ngr;
    }
    if (npow && npow * 2 >= q->valid) {
        q->has_power = 1;
        q->power_w = psum / npow;
        q->power_ratio = rsum / npow;
    }
    if (g->last.present & GS_MEM) {
        q->mem_used = g->last.mem_used;
        q->mem_total = g->last.mem_total;
    }
    if (g->last.present & GS_PSTATE)
        q->pstate = g->last.pstate;
    if (g->last.present & GS_THROTTLE) {
        q->has_throttle = 1;
        q->throttle = g->last.throttle;
    }
}

/* Utilisation pinned high while nothing runs: SM activity ~0 (GPM or
 * DCGM), or without it power near a resident idle context; and no
 * progress the detector can see (memory unchanged), sustained for
 * stuck_hold_s.  An NCCL hang or a busy-wait: every culler reads it as
 * busy.  1 when STUCK; else a reason while the hold runs. */
static int gpu_stuck(idle_gpu *g, const idle_cfg *c, uint64_t now)
{
    const idle_gsig *q = &g->sig;
    char d[32];
    int nothing_runs =
        q->has_sm
            ? q->sm_mean <= c->stuck_sm
            : q->has_power && q->power_ratio <= c->held_floor + c->stuck_margin;
    uint64_t win = (uint64_t)c->window_s * IDLE_NS;
    /* progress: with a gpufl session on the GPU, a kernel completion it
     * recorded within the window (exact); else memory that moved */
    int progress = g->kern_sessions
                       ? g->kern_last_end && g->kern_last_end + win >= now
                       : q->mem_max - q->mem_min > (1u << 20);
    if (q->util_min < c->stuck_util || !nothing_runs || progress) {
        if (g->kern_sessions && progress && q->util_min >= c->stuck_util &&
            nothing_runs)
            GR("a gpufl session saw a kernel complete %s ago: progress, "
               "not STUCK",
               idle_dur_text(d, sizeof d,
                             now > g->kern_last_end
                                 ? (double)(now - g->kern_last_end) / 1e9
                                 : 0));
        g->stuck_since = 0;
        return 0;
    }
    if (!g->stuck_since)
        g->stuck_since = now;
    if (now - g->stuck_since < (uint64_t)c->stuck_hold_s * IDLE_NS) {
        GR("utilisation >= %.0f %% with %s for %s: STUCK after %u s",
           c->stuck_util,
           q->has_sm ? "SM activity ~0" : "power near the idle floor",
           idle_dur_text(d, sizeof d, (double)(now - g->stuck_since) / 1e9),
           c->stuck_hold_s);
        return 0;
    }
    if (q->has_sm)
        GR("utilisation >= %.0f %% in every sample but SM activity %.4f "
           "(<= %.3f) for %s: a kernel spins or waits (a hung collective?)",
           c->stuck_util, q->sm_mean, c->stuck_sm,
           idle_dur_text(d, sizeof d, (double)(now - g->stuck_since) / 1e9));
    else
        GR("utilisation >= %.0f %% in every sample at %.2f of the power limit "
           "(<= idle floor %.2f + %.2f) for %s, no SM activity metric: a spin "
           "or a hang",
           c->stuck_util, q->power_ratio, c->held_floor, c->stuck_margin,
           idle_dur_text(d, sizeof d, (double)(now - g->stuck_since) / 1e9));
    if (g->kern_sessions)
        GR("no kernel completed in the gpufl session%s on this GPU for %s: "
           "no progress (a kernel running longer than that, or none "
           "launched)",
           g->kern_sessions > 1 ? "s" : "",
           idle_dur_text(d, sizeof d, c->window_s));
    else
        GR("memory unchanged at %.1f GiB: no progress seen", gib(q->mem_used));
    return 1;
}

/* Process count and memory of the latest good sample decide ownership. */
/* The memory and utilisation of a GPU with no process that counts as
 * quiet (gpu_classify). */
static void gpu_quiet_reason(idle_gpu *g, const idle_cfg *c)
{
    const idle_gsig *q = &g->sig;
    if (q->util_max == 0) {
        GR("%.0f MiB used, utilisation 0", (double)q->mem_used / 1048576.0);
        return;
    }
    GR("%.0f MiB used, utilisation %.1f %% (peak %.0f %%, below "
       "--empty-util %.0f): what an ended context leaves, no work",
       (double)q->mem_used / 1048576.0, q->util_mean, (double)q->util_max,
       c->empty_util);
}

static int gpu_classify(idle_gpu *g, const idle_cfg *c, uint64_t now)
{
    const idle_gsig *q = &g->sig;
    const idle_gsample *last = &g->ring[(g->head + g->cap - 1) % g->cap];
    uint64_t interval = (uint64_t)c->interval_ms * 1000000ull;
    char d[32];
    int busy, owned, quiet;

    if (!g->n || now > g->last_ts + 3 * interval + IDLE_NS) {
        GR("no GPU sample for %s (stale data)",
           idle_dur_text(d, sizeof d,
                         g->n ? (double)(now - g->last_ts) / 1e9 : 0));
        return IG_UNKNOWN;
    }
    if (!last->valid && g->info.mig && (g->last.present & GS_PROCS) &&
        g->last.nprocs) {
        /* idle_src.c: an instance's utilisation is its GPM SM activity */
        GR("MIG GPU instance %u with %u process%s: NVML gives no "
           "utilisation per instance (NVIDIA/DCGM#58) and this GPU has no "
           "GPM SM activity",
           g->info.gi, g->last.nprocs, g->last.nprocs == 1 ? "" : "es");
        return IG_UNKNOWN;
    }
    if (!last->valid) {
        GR("the last NVML read failed (utilisation or process list "
           "missing)");
        return IG_UNKNOWN;
    }
    if (q->valid < c->min_valid * q->total) {
        GR("only %u of %u samples in the window could be read", q->valid,
           q->total);
        return IG_UNKNOWN;
    }
    owned = q->procs > 0;
    if (!owned) {
        g->stuck_since = 0;
        int phantomish =
            q->util_mean >= c->phantom_util || (q->has_gr && q->gr_mean >= 0.9);
        if (phantomish && q->mem_used <= c->fb_empty) {
            if (!g->phantom_since)
                g->phantom_since = now;
            if (now - g->phantom_since >=
                (uint64_t)c->phantom_hold_s * IDLE_NS) {
                GR("utilisation %.0f %% with no process and %.0f MiB used, "
                   "for %s (>= %u s): no context can run kernels without "
                   "memory",
                   q->util_mean, (double)q->mem_used / 1048576.0,
                   idle_dur_text(d, sizeof d,
                                 (double)(now - g->phantom_since) / 1e9),
                   c->phantom_hold_s);
                if (q->has_power)
                    GR("power %.0f W (%.2f of the limit) with no owner",
                       q->power_w, q->power_ratio);
                if (q->pstate == 0)
                    GR("performance state P0");
                return IG_PHANTOM;
            }
            GR("utilisation %.0f %% with no process for %s; PHANTOM after "
               "%u s (a process list may lag a starting job)",
               q->util_mean,
               idle_dur_text(d, sizeof d,
                             (double)(now - g->phantom_since) / 1e9),
               c->phantom_hold_s);
            return IG_UNKNOWN;
        }
        g->phantom_since = 0;
        /* With no process and no memory no kernel can run: a little
         * utilisation then is what a context that just ended leaves in
         * NVML's sampling period (a real H200: one sample of six at 2 %,
         * SM activity 0, right after a PyTorch process exited). */
        quiet =
            q->mem_used <= c->fb_empty &&
            !(q->has_gr && q->gr_mean > c->held_sm) &&
            (q->util_max == 0 || (q->util_mean < c->empty_util &&
                                  (!q->has_sm || q->sm_mean <= c->held_sm)));
        if (g->allocated && quiet) {
            GR("allocated to %s but no process on it over %u s", g->alloc_what,
               c->window_s);
            gpu_quiet_reason(g, c);
            return IG_ALLOCATED_UNUSED;
        }
        if (quiet) {
            GR("no process over %u s", c->window_s);
            gpu_quiet_reason(g, c);
            return IG_EMPTY;
        }
        if (q->util_max == 0) {
            GR("%.1f GiB used but no process listed (PIDs not visible "
               "here?), utilisation 0",
               gib(q->mem_used));
            return IG_HELD;
        }
        GR("utilisation %.0f %% but no process listed: cannot attribute "
           "the work",
           q->util_mean);
        return IG_UNKNOWN;
    }
    g->phantom_since = 0;
    if (q->util_max == 0 && (!q->has_sm || q->sm_mean <= c->held_sm) &&
        (!q->has_gr || q->gr_mean <= c->held_sm)) {
        GR("%u process%s hold%s %.1f GiB with utilisation 0 over %u s",
           q->procs, q->procs == 1 ? "" : "es", q->procs == 1 ? "s" : "",
           gib(q->mem_used), c->window_s);
        if (q->has_power)
            GR("power %.0f W is what a resident context draws, not work",
               q->power_w);
        return IG_HELD;
    }
    if (q->duty < c->bursty_duty) {
        GR("kernels ran in %.0f %% of the samples (< %.0f %%): "
           "interactive bursts",
           q->duty * 100, c->bursty_duty * 100);
        return IG_BURSTY;
    }
    busy = q->util_mean >= c->busy_util || (q->has_gr && q->gr_mean >= 0.5);
    if (gpu_stuck(g, c, now))
        return IG_STUCK;
    if (!busy) {
        GR("kernels ran in %.0f %% of the samples at utilisation %.0f %%",
           q->duty * 100, q->util_mean);
        return IG_BUSY;
    }
    if (q->has_sm) {
        if (q->sm_mean < c->low_occ_sm) {
            GR("utilisation %.0f %% but SM activity %.3f over the last %u s "
               "(< %.2f): few SMs busy",
               q->util_mean, q->sm_mean, c->window_s, c->low_occ_sm);
            return IG_BUSY_LOW_OCC;
        }
        GR("SM activity %.2f over the last %u s (>= %.2f)", q->sm_mean,
           c->window_s, c->low_occ_sm);
        return IG_BUSY;
    }
    if (q->has_power) {
        if (q->power_ratio <= c->held_floor + c->low_occ_margin &&
            q->power_ratio < c->busy_power) {
            GR("utilisation %.0f %% at %.2f of the power limit (<= %.2f): "
               "low occupancy by the power proxy (no SM activity metric)",
               q->util_mean, q->power_ratio, c->held_floor + c->low_occ_margin);
            return IG_BUSY_LOW_OCC;
        }
        GR("utilisation %.0f %% at %.2f of the power limit (no SM activity "
           "metric)",
           q->util_mean, q->power_ratio);
        return IG_BUSY;
    }
    GR("utilisation %.0f %% (no SM activity or power metric)", q->util_mean);
    return IG_BUSY;
}

/* Every process NVML lists is gone from this host: what they hold is
 * leaked, as memory with no process is. */
static int gpu_dead_only(const idle_gpu *g)
{
    return g->ndead > 0 && (g->last.present & GS_PROCS) &&
           (uint32_t)g->ndead >= g->last.nprocs;
}

void idle_gpu_eval(idle_gpu *g, const idle_cfg *c, uint64_t now)
{
    int st;
    g->nreasons = 0;
    gpu_summarise(g, now, (uint64_t)c->window_s * IDLE_NS);
    st = gpu_classify(g, c, now);
    if (st != IG_UNKNOWN && st != IG_PHANTOM && g->sig.procs > 0 &&
        g->nreasons < IDLE_MAX_REASONS && st != IG_HELD)
        GR("%u process%s %.1f GiB", g->sig.procs,
           g->sig.procs == 1 ? " uses" : "es use", gib(g->sig.mem_used));
    if (st == IG_BUSY || st == IG_BUSY_LOW_OCC || st == IG_BURSTY ||
        !g->last_work)
        g->last_work = now;
    g->changed = st != g->state || !g->since;
    if (g->changed)
        g->since = now;
    g->state = st;
    g->ts = now;
    g->dirty = st == IG_PHANTOM || st == IG_STUCK ||
               (st == IG_HELD && g->sig.procs == 0) || gpu_dead_only(g);
    if (gpu_dead_only(g) && g->nreasons < IDLE_MAX_REASONS)
        GR("pid %u%s listed by NVML no longer exist%s on this host (a dead "
           "container?): %.1f GiB left behind; not safe for the next job",
           g->dead[0], g->ndead > 1 ? " and others" : "",
           g->ndead > 1 ? "" : "s", gib(g->last.mem_used));
}

int idle_gpu_dead_only(const idle_gpu *g)
{
    return gpu_dead_only(g);
}

void idle_gpu_note_holders(idle_gpu *g)
{
    char who[IDLE_REASON_LEN];
    if (!g->dirty)
        return;
    if (g->state == IG_STUCK) {
        GR("not safe for the next job: stop the stuck processes first");
        return;
    }
    if (!g->nholders && g->state == IG_PHANTOM) {
        GR("no process holds /dev/nvidia%u open: nobody owns this work; "
           "drain and reset the GPU before the next job",
           g->info.id);
        return;
    }
    if (!g->nholders) {
        GR("no process holds /dev/nvidia%u open: the memory is leaked by the "
           "driver; reset the GPU before the next job",
           g->info.id);
        return;
    }
    for (int i = 0; i < g->nholders && i < 2; i++) {
        const idle_owner *o = &g->holder_owner[i];
        int k = snprintf(who, sizeof who, "pid %u", g->holders[i]);
        if (o->pod[0] && k > 0 && (size_t)k < sizeof who)
            k += snprintf(who + k, sizeof who - (size_t)k, ", pod %.40s%s%.40s",
                          o->ns, o->ns[0] ? "/" : "", o->pod);
        if (o->container[0] && k > 0 && (size_t)k < sizeof who)
            k += snprintf(who + k, sizeof who - (size_t)k, ", container %s",
                          o->container);
        if (o->job[0] && k > 0 && (size_t)k < sizeof who)
            k += snprintf(who + k, sizeof who - (size_t)k, ", Slurm job %s",
                          o->job);
        if (o->user[0] && k > 0 && (size_t)k < sizeof who)
            snprintf(who + k, sizeof who - (size_t)k, ", user %s", o->user);
        GR("held open by %s (/dev/nvidia%u) though NVML lists no process", who,
           g->info.id);
    }
    GR("not safe for the next job: %d process%s still hold%s the device",
       g->nholders, g->nholders == 1 ? "" : "es", g->nholders == 1 ? "s" : "");
}
