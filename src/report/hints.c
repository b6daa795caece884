/*
 * hints.c - what a GPU engineer could act on, each with the numbers that
 * led to it.  Thresholds are written next to each rule; a hint is only
 * given for kernels and functions that matter (>= 1 % of GPU time, or with
 * enough samples), so a report on a healthy run stays short.
 */
#include <string.h>

#include "report_int.h"

#define MIN_SHARE 0.01     /* kernels below 1 % of GPU time get no hint */
#define LOW_OCC 0.5        /* theoretical occupancy below this is low */
#define DIVERGENT 0.2      /* 1 - thread_inst / (32 inst) above this */
#define UNCOALESCED 0.6    /* sectors_ideal / sectors below this */
#define STALL_SHARE 0.3    /* one stall reason above this share */
#define STALL_MIN 100      /* samples needed before a stall hint */
#define IDLE_SHARE 0.2     /* GPU idle between kernels above this share */
#define THROTTLE_SHARE 0.1 /* samples slowed down above this share */

typedef struct hl {
    rpt_hint *h;
    size_t n, cap;
} hl;

static rpt_hint *add(hl *l, const char *kind, int sev)
{
    rpt_hint *h;
    if (l->n == l->cap)
        return NULL;
    h = &l->h[l->n++];
    memset(h, 0, sizeof *h);
    snprintf(h->kind, sizeof h->kind, "%s", kind);
    h->severity = sev;
    return h;
}

static void kname(const rpt_ctx *c, uint32_t id, char *buf, size_t cap)
{
    size_t n;
    const char *s = rpt_name(c, id, &n);
    if (!n)
        snprintf(buf, cap, "(unknown kernel)");
    else if (n >= cap)
        snprintf(buf, cap, "%.*s...", (int)(cap - 4), s);
    else
        snprintf(buf, cap, "%.*s", (int)n, s);
}

/* Why occupancy is what it is: resident blocks per SM allowed by each
 * resource, from the device's limits when the session header has them
 * (the simulated GPU's do; NVML cannot tell them for real GPUs).
 * Register allocation granularity is ignored, so the numbers are upper
 * bounds. */
static void why(char *b, size_t cap, const rpt_devinfo *dv, const rpt_kernel *k)
{
    uint64_t threads = (uint64_t)k->block[0] * k->block[1] * k->block[2];
    uint64_t regs = (uint64_t)k->regs * threads, smem = k->smem + k->dsmem;
    size_t off = 0;
    b[0] = 0;
    if (!dv || !threads)
        return;
    if (dv->regs_sm && regs)
        off += (size_t)snprintf(b + off, cap - off,
                                "; registers allow %llu block(s)/SM (%llu of "
                                "%llu per SM)",
                                (unsigned long long)(dv->regs_sm / regs),
                                (unsigned long long)regs,
                                (unsigned long long)dv->regs_sm);
    if (off < cap && dv->smem_sm && smem)
        off += (size_t)snprintf(b + off, cap - off,
                                "; shared memory allows %llu (%llu B of %llu "
                                "B per SM)",
                                (unsigned long long)(dv->smem_sm / smem),
                                (unsigned long long)smem,
                                (unsigned long long)dv->smem_sm);
    if (off < cap && dv->max_threads_sm)
        snprintf(b + off, cap - off, "; threads allow %llu (%llu of %llu)",
                 (unsigned long long)(dv->max_threads_sm / threads),
                 (unsigned long long)threads,
                 (unsigned long long)dv->max_threads_sm);
}

static const char *lim_why(const char *lim)
{
    if (strstr(lim, "regs") && strstr(lim, "smem"))
        return "registers and shared memory both: cut registers "
               "(__launch_bounds__, -maxrregcount) and shared memory per "
               "block";
    if (strstr(lim, "regs"))
        return "registers per thread: cut them (__launch_bounds__, "
               "-maxrregcount) or use smaller blocks";
    if (strstr(lim, "smem"))
        return "shared memory per block: use less, or trade it for more "
               "blocks per SM";
    if (strstr(lim, "blocks"))
        return "the blocks-per-SM limit: the blocks are too small, launch "
               "bigger ones";
    if (strstr(lim, "warps"))
        return "warp slots: already at the SM's thread limit";
    if (strstr(lim, "barriers"))
        return "barriers per SM";
    return "an unknown limit";
}

static void occupancy_hints(hl *l, const rpt_ctx *c, const rpt_agg *a)
{
    uint32_t order[64]; /* the kernels that take the most time first */
    size_t n = rpt_kernel_order(a, order, 64);
    for (size_t i = 0; i < n; i++) {
        const rpt_kernel *k = &a->k[order[i]];
        double share = a->kernel_ns ? (double)k->total / a->kernel_ns : 0;
        char name[160], per_sm[320];
        uint64_t threads = (uint64_t)k->block[0] * k->block[1] * k->block[2];
        const rpt_devinfo *dv = NULL;
        rpt_hint *h;
        if (share < MIN_SHARE)
            continue;
        kname(c, k->name, name, sizeof name);
        for (int d = 0; d < RPT_MAX_DEV && !dv; d++)
            if ((k->devmask & (1u << d)) && c->hdr.dev[d].present)
                dv = &c->hdr.dev[d];
        why(per_sm, sizeof per_sm, dv, k);
        if (k->occ >= 0 && k->occ < LOW_OCC &&
            (h = add(l, "occupancy", k->occ < 0.25 ? 2 : 1))) {
            snprintf(h->what, sizeof h->what,
                     "%s: theoretical occupancy %.1f%%, limited by %s", name,
                     k->occ * 100, k->lim[0] ? k->lim : "?");
            snprintf(h->evidence, sizeof h->evidence,
                     "%.1f%% of GPU time; %u registers/thread, %llu "
                     "threads/block, %u B static + %u B dynamic shared "
                     "memory/block%s; the limit is %s",
                     share * 100, k->regs, (unsigned long long)threads, k->smem,
                     k->dsmem, per_sm, lim_why(k->lim));
        }
        if (k->lmem && (h = add(l, "spills", share > 0.1 ? 2 : 1))) {
            snprintf(h->what, sizeof h->what,
                     "%s: %u bytes/thread of local memory (register spills)",
                     name, k->lmem);
            snprintf(h->evidence, sizeof h->evidence,
                     "%.1f%% of GPU time; %u registers/thread; local memory "
                     "lives in DRAM/L2, so every spill is a slow load or "
                     "store",
                     share * 100, k->regs);
        }
    }
}

static const char *stall_why(const char *r)
{
    static const struct {
        const char *r, *why;
    } t[] = {
        { "long_scoreboard", "waiting on global/local memory: improve "
                             "locality or coalescing, prefetch to shared "
                             "memory" },
        { "barrier", "waiting at __syncthreads: uneven work between warps "
                     "of a block" },
        { "mio_throttle", "the memory I/O queue is full: too many shared "
                          "memory or special-function instructions" },
        { "math_pipe_throttle", "a math pipe is saturated: compute bound" },
        { "short_scoreboard", "waiting on shared memory or MUFU results" },
        { "lg_throttle", "the local/global queue is full: too many small "
                         "memory instructions, vectorise them" },
        { "wait", "fixed-latency dependencies: more independent work per "
                  "warp" },
        { "not_selected", "warps were ready but not picked: healthy, the "
                          "scheduler is busy" },
        { "tex_throttle", "the texture pipe is full" },
        { "membar", "memory barriers" },
        { "drain", "draining memory stores at exit" },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(t[i].r, r))
            return t[i].why;
    return "see the CUDA profiler documentation for this reason";
}

static void func_hints(hl *l, const rpt_ctx *c, const rpt_agg *a)
{
    for (size_t i = 0; i < a->nfn; i++) {
        const rpt_func *f = &a->fn[i];
        char name[160];
        rpt_hint *h;
        kname(c, f->name, name, sizeof name);
        if (f->inst) {
            double div = 1.0 - (double)f->thread_inst / (32.0 * f->inst);
            if (div > DIVERGENT && (h = add(l, "divergence", 1))) {
                snprintf(h->what, sizeof h->what, "%s: warp divergence %.0f%%",
                         name, div * 100);
                snprintf(h->evidence, sizeof h->evidence,
                         "%llu thread instructions over %llu warp "
                         "instructions = %.1f active threads per warp of "
                         "32: branches split warps",
                         (unsigned long long)f->thread_inst,
                         (unsigned long long)f->inst,
                         (double)f->thread_inst / f->inst);
            }
        }
        if (f->sectors) {
            double co = (double)f->ideal / f->sectors;
            if (co < UNCOALESCED && (h = add(l, "coalescing", 1))) {
                snprintf(h->what, sizeof h->what,
                         "%s: poorly coalesced memory access (%.0f%% "
                         "efficiency)",
                         name, co * 100);
                snprintf(h->evidence, sizeof h->evidence,
                         "%llu 32-byte sectors moved where %llu would do: "
                         "neighbouring threads should touch neighbouring "
                         "addresses",
                         (unsigned long long)f->sectors,
                         (unsigned long long)f->ideal);
            }
        }
        if (f->samples >= STALL_MIN) {
            int top = 0;
            for (int r = 1; r < f->nr; r++)
                if (f->r[r].n > f->r[top].n)
                    top = r;
            if (f->nr &&
                (h = add(l, "stalls",
                         (double)f->r[top].n / f->samples > STALL_SHARE ? 1
                                                                        : 0))) {
                size_t off;
                snprintf(h->what, sizeof h->what,
                         "%s: %.0f%% of sampled warps stalled on %s%s", name,
                         100.0 * f->r[top].n / f->samples, f->r[top].name,
                         h->severity ? ""
                                     : " (the largest share; no reason "
                                       "dominates)");
                off = (size_t)snprintf(
                    h->evidence, sizeof h->evidence,
                    "%s; %llu samples:", stall_why(f->r[top].name),
                    (unsigned long long)f->samples);
                for (int r = 0; r < f->nr && off < sizeof h->evidence; r++)
                    off += (size_t)snprintf(h->evidence + off,
                                            sizeof h->evidence - off,
                                            " %s %.0f%%", f->r[r].name,
                                            100.0 * f->r[r].n / f->samples);
            }
        }
    }
}

static void device_hints(hl *l, const rpt_ctx *c, const rpt_agg *a)
{
    static const char *const bits[8] = { "gpu_idle",     "app_clocks",
                                         "sw_power_cap", "hw_slowdown",
                                         "sync_boost",   "sw_thermal",
                                         "hw_thermal",   "hw_power_brake" };
    for (int i = 0; i < RPT_MAX_DEV; i++) {
        const rpt_dev *d = &a->dev[i];
        rpt_hint *h;
        uint64_t span = d->last - d->first;
        if (d->kernels > 1 && span &&
            (double)d->busy.idle / span > IDLE_SHARE &&
            (h = add(l, "idle", (double)d->busy.idle / span > 0.5 ? 2 : 1))) {
            snprintf(h->what, sizeof h->what,
                     "GPU %d idle %.0f%% of the time between its first and "
                     "last kernel",
                     i, 100.0 * d->busy.idle / span);
            snprintf(h->evidence, sizeof h->evidence,
                     "%llu gaps of 10 us or more between kernels, %.3f ms "
                     "idle in all; the longest, %.3f ms, began %.3f ms "
                     "after the first kernel: the GPU waited for the CPU "
                     "(data loading, synchronisation, launch overhead)",
                     (unsigned long long)d->busy.gaps, d->busy.idle / 1e6,
                     d->busy.gap_max / 1e6,
                     (d->busy.gap_max_at - d->first) / 1e6);
        }
        if (d->samples && (double)d->throttle_n / d->samples > THROTTLE_SHARE &&
            (h = add(l, "throttling", 1))) {
            size_t off;
            snprintf(h->what, sizeof h->what,
                     "GPU %d clocks held down in %.0f%% of samples", i,
                     100.0 * d->throttle_n / d->samples);
            off = (size_t)snprintf(
                h->evidence, sizeof h->evidence,
                "max %lld C, max %.0f W of %.0f W limit, SM clock %llu-%llu "
                "MHz; reasons:",
                (long long)d->temp_max, d->power_max / 1000.0,
                d->power_limit / 1000.0,
                (unsigned long long)(d->clk_min == UINT64_MAX ? 0 : d->clk_min),
                (unsigned long long)d->clk_max);
            for (int b = 1; b < 8 && off < sizeof h->evidence; b++)
                if (d->throttle_bits[b])
                    off += (size_t)snprintf(
                        h->evidence + off, sizeof h->evidence - off,
                        " %s %.0f%%", bits[b],
                        100.0 * d->throttle_bits[b] / d->samples);
        }
    }
    (void)c;
}

static void copy_hints(hl *l, const rpt_agg *a)
{
    for (int k = CK_HTOD; k <= CK_DTOH; k++) {
        const rpt_copy *cp = &a->copy[k];
        rpt_hint *h;
        if (cp->pageable_bytes >= (64u << 20) && (h = add(l, "copies", 0))) {
            snprintf(h->what, sizeof h->what,
                     "%s copies from pageable host memory", rpt_copy_kinds[k]);
            snprintf(
                h->evidence, sizeof h->evidence,
                "%llu copies, %.1f MB at %.2f GB/s; pinned "
                "(cudaHostAlloc) memory copies faster and can overlap "
                "kernels",
                (unsigned long long)cp->pageable_n, cp->pageable_bytes / 1e6,
                cp->pageable_dur ? (double)cp->pageable_bytes / cp->pageable_dur
                                 : 0.0);
        }
    }
}

static void loss_hints(hl *l, const rpt_ctx *c, const rpt_agg *a)
{
    uint64_t lost = 0, gaps = 0, bad = 0;
    rpt_hint *h;
    for (int s = 0; s < RPT_NST; s++) {
        for (int r = 0; r < RPT_LOSS_REASONS; r++)
            lost += a->loss[s][r];
        gaps += c->st[s].gaps;
        bad += c->st[s].damaged + c->st[s].long_lines;
    }
    if ((lost || gaps || bad) && (h = add(l, "data", 1))) {
        snprintf(h->what, sizeof h->what,
                 "the logs are incomplete: numbers above undercount");
        snprintf(h->evidence, sizeof h->evidence,
                 "%llu events reported lost by loss lines, %llu lines "
                 "missing (seq gaps), %llu damaged lines skipped",
                 (unsigned long long)lost, (unsigned long long)gaps,
                 (unsigned long long)bad);
    }
}

size_t rpt_hints(const rpt_ctx *c, const rpt_agg *a, rpt_hint *out, size_t cap)
{
    hl l = { out, 0, cap };
    occupancy_hints(&l, c, a);
    func_hints(&l, c, a);
    device_hints(&l, c, a);
    copy_hints(&l, a);
    loss_hints(&l, c, a);
    /* most severe first; a stable insertion sort keeps the rule order
     * above within one severity */
    for (size_t i = 1; i < l.n; i++) {
        rpt_hint t = out[i];
        size_t j = i;
        for (; j > 0 && out[j - 1].severity < t.severity; j--)
            out[j] = out[j - 1];
        out[j] = t;
    }
    return l.n;
}
