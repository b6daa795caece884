/*
 * print.c - a session's report as text for a terminal (print_json.c: the
 * same as JSON for scripts).  Both print the same aggregates (agg.c) and
 * hints (hints.c); the text cuts long lists (top 15 kernels, 40 scope
 * rows), the JSON does not.
 */
#include <stdlib.h>
#include <string.h>

#include "common/jw.h"
#include "report_int.h"

#define TOP_KERNELS 15
#define TOP_SCOPES 40
#define MAX_HINTS 64

const char *const rpt_throttle_names[8] = { "gpu_idle",     "app_clocks",
                                            "sw_power_cap", "hw_slowdown",
                                            "sync_boost",   "sw_thermal",
                                            "hw_thermal",   "hw_power_brake" };

static char *fmt_ns(char *b, size_t cap, double ns)
{
    if (ns < 1e3)
        snprintf(b, cap, "%.0f ns", ns);
    else if (ns < 1e6)
        snprintf(b, cap, "%.1f us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(b, cap, "%.2f ms", ns / 1e6);
    else
        snprintf(b, cap, "%.2f s", ns / 1e9);
    return b;
}

static char *fmt_bytes(char *b, size_t cap, double v)
{
    static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int i = 0;
    while (v >= 1024 && i < 4) {
        v /= 1024;
        i++;
    }
    snprintf(b, cap, i ? "%.1f %s" : "%.0f %s", v, u[i]);
    return b;
}

static char *fmt_dims(char *b, size_t cap, const uint32_t d[3])
{
    if (d[2] != 1)
        snprintf(b, cap, "%ux%ux%u", d[0], d[1], d[2]);
    else if (d[1] != 1)
        snprintf(b, cap, "%ux%u", d[0], d[1]);
    else
        snprintf(b, cap, "%u", d[0]);
    return b;
}

/* The session's device time span: kernels first, else the lines read. */
uint64_t rpt_session_dur(const rpt_ctx *c)
{
    for (int s = 0; s < RPT_NST; s++)
        if (c->st[s].ended && c->st[s].end_dur)
            return c->st[s].end_dur;
    return c->last_ts > c->first_ts ? c->last_ts - c->first_ts : 0;
}

uint64_t rpt_busy_all(const rpt_agg *a, uint64_t *span)
{
    uint64_t busy = 0;
    *span = 0;
    for (int i = 0; i < RPT_MAX_DEV; i++) {
        busy += a->dev[i].busy.busy;
        if (a->dev[i].kernels)
            *span += a->dev[i].last - a->dev[i].first;
    }
    return busy;
}

/* Scope rows in tree order: children right after their parent, siblings
 * by total time.  Rows are sorted once by (effective parent, total) and
 * walked depth first, so the cost is O(n log n) for n scope paths.  A path
 * whose parent path has no row of its own (it never ended) hangs at the
 * top; the walk stops at depth 256 (the format's limit), which also ends
 * any cycle a damaged dictionary could make. */
typedef struct srow {
    uint32_t id, parent;
    uint64_t total;
} srow;

static int srow_cmp(const void *x, const void *y)
{
    const srow *a = x, *b = y;
    if (a->parent != b->parent)
        return a->parent < b->parent ? -1 : 1;
    if (a->total != b->total)
        return a->total > b->total ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static int has_row(const rpt_agg *a, uint32_t id)
{
    return id && id < a->nscope && (a->scope[id].n || a->scope[id].gpu);
}

static size_t walk(const srow *r, size_t nr, uint32_t parent, uint32_t *out,
                   size_t n, size_t cap, int depth)
{
    size_t lo = 0, hi = nr;
    if (depth > 256)
        return n;
    while (lo < hi) { /* first row of this parent */
        size_t mid = (lo + hi) / 2;
        if (r[mid].parent < parent)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < nr && r[lo].parent == parent && n < cap; lo++) {
        out[n++] = r[lo].id;
        n = walk(r, nr, r[lo].id, out, n, cap, depth + 1);
    }
    return n;
}

size_t rpt_scope_walk(const rpt_ctx *c, const rpt_agg *a, uint32_t *out,
                      size_t cap)
{
    srow *r = malloc((a->nscope ? a->nscope : 1) * sizeof *r);
    size_t nr = 0, n;
    if (!r)
        return 0;
    for (uint32_t id = 1; id < a->nscope; id++) {
        const rpt_dict *p;
        if (!has_row(a, id))
            continue;
        p = rpt_dict_get(c, id, DK_PATH);
        r[nr].id = id;
        r[nr].parent = p && has_row(a, p->parent) ? p->parent : 0;
        r[nr].total = a->scope[id].total;
        nr++;
    }
    qsort(r, nr, sizeof *r, srow_cmp);
    n = walk(r, nr, 0, out, 0, cap, 0);
    free(r);
    return n;
}

static void name_of(const rpt_ctx *c, uint32_t id, char *buf, size_t cap)
{
    size_t n;
    const char *s = rpt_name(c, id, &n);
    if (!n)
        snprintf(buf, cap, "(unknown)");
    else
        snprintf(buf, cap, "%.*s", (int)n, s);
}

void rpt_print_text(FILE *f, const rpt_ctx *c, const rpt_agg *a,
                    const rpt_files *files)
{
    const rpt_header *h = &c->hdr;
    uint32_t top[TOP_KERNELS], *rows;
    uint64_t span, busy = rpt_busy_all(a, &span), copied = 0;
    rpt_hint *hints;
    size_t nt, nh, nrows;
    char b1[64], b2[64], b3[64], b4[64], b5[64], b6[64];

    fprintf(f, "== gpufl report: session %s ==\n", h->sid[0] ? h->sid : "?");
    if (h->simulated)
        fprintf(f, "!! SIMULATED: the GPU activity and GPU samples of this "
                   "session come from gpufl's\n!! simulated GPU "
                   "(GPUFL_ENGINES=sim), not from real hardware.\n");
    fprintf(f, "app %s  host %s  pid %llu  lib %s\n", h->app, h->host,
            (unsigned long long)h->pid, h->lib);
    fprintf(f, "files %s.{device,scope,system}.log (%llu+%llu+%llu files)\n",
            files->prefix, (unsigned long long)c->st[0].files,
            (unsigned long long)c->st[1].files,
            (unsigned long long)c->st[2].files);
    if (h->cmd[0])
        fprintf(f, "cmd %s\n", h->cmd);
    fprintf(f, "engines %s\n", h->engines);
    if (h->warning[0])
        fprintf(f, "warning %s\n", h->warning);
    for (uint32_t i = 0; i < h->ndev; i++)
        if (h->dev[i].present)
            fprintf(f, "GPU %u: %s%s cc %s, %llu SMs, %s\n", i, h->dev[i].name,
                    h->dev[i].simulated ? " (simulated)" : "",
                    h->dev[i].cc[0] ? h->dev[i].cc : "?",
                    (unsigned long long)h->dev[i].sms,
                    fmt_bytes(b1, sizeof b1, (double)h->dev[i].mem));
    for (int k = 0; k < CK_N; k++)
        copied += a->copy[k].bytes;
    fprintf(f, "\n-- summary --\n");
    fprintf(f,
            "duration %s (wall clock)%s; GPU busy %.1f%% of the kernels' "
            "span (%s of %s, all GPUs)\n",
            fmt_ns(b1, sizeof b1, (double)rpt_session_dur(c)),
            c->st[0].ended ? ""
                           : " (no session_end: still running or "
                             "killed)",
            span ? 100.0 * busy / span : 0.0, fmt_ns(b2, sizeof b2, busy),
            fmt_ns(b3, sizeof b3, span));
    if (h->simulated && span > rpt_session_dur(c))
        fprintf(f, "(the simulated GPU's clock runs faster than the wall "
                   "clock when GPUFL_SIM_SPEED > 1, so its span is longer)\n");
    fprintf(f,
            "kernels %llu (%s GPU time); copies %llu (%s); memsets %llu; "
            "scopes %llu; markers %llu\n",
            (unsigned long long)a->kernels,
            fmt_ns(b1, sizeof b1, (double)a->kernel_ns),
            (unsigned long long)(a->copy[0].n + a->copy[1].n + a->copy[2].n +
                                 a->copy[3].n + a->copy[4].n + a->copy[5].n),
            fmt_bytes(b2, sizeof b2, (double)copied),
            (unsigned long long)a->memset_n, (unsigned long long)a->scopes_n,
            (unsigned long long)a->markers);

    nt = rpt_kernel_order(a, top, TOP_KERNELS);
    fprintf(f, "\n-- top kernels by GPU time (p50/p99 from a histogram, "
               "within 1.6%%) --\n");
    fprintf(f, "%6s %9s %7s %9s %9s %9s %9s  %-11s %-7s %4s %9s %6s %s\n",
            "share", "total", "count", "avg", "p50", "p99", "max", "grid",
            "block", "regs", "smem", "occ", "kernel (limit)");
    for (size_t i = 0; i < nt; i++) {
        const rpt_kernel *k = &a->k[top[i]];
        char name[100], grid[32], block[32], occ[16];
        name_of(c, k->name, name, sizeof name);
        fmt_dims(grid, sizeof grid, k->grid);
        if (k->grid_varies)
            snprintf(grid + strlen(grid), sizeof grid - strlen(grid), "*");
        if (k->occ >= 0)
            snprintf(occ, sizeof occ, "%.1f%%", k->occ * 100);
        else
            snprintf(occ, sizeof occ, "?");
        fprintf(
            f,
            "%5.1f%% %9s %7llu %9s %9s %9s %9s  %-11s %-7s %4u %9s %6s "
            "%s%s%s%s\n",
            a->kernel_ns ? 100.0 * k->total / a->kernel_ns : 0.0,
            fmt_ns(b1, sizeof b1, (double)k->total), (unsigned long long)k->n,
            fmt_ns(b2, sizeof b2, (double)k->total / k->n),
            fmt_ns(b3, sizeof b3,
                   (double)rpt_hist_quantile(k->h, k->n, 0.5, k->min, k->max)),
            fmt_ns(b4, sizeof b4,
                   (double)rpt_hist_quantile(k->h, k->n, 0.99, k->min, k->max)),
            fmt_ns(b5, sizeof b5, (double)k->max), grid,
            fmt_dims(block, sizeof block, k->block), k->regs,
            fmt_bytes(b6, sizeof b6, (double)k->smem + k->dsmem), occ, name,
            k->lim[0] ? " (" : "", k->lim, k->lim[0] ? ")" : "");
    }
    if (a->nk > nt)
        fprintf(f,
                "... %zu more launch configurations (--json lists all); "
                "* = grid varies\n",
                a->nk - nt);

    fprintf(f, "\n-- copies --\n");
    for (int k = 0; k < CK_N; k++)
        if (a->copy[k].n)
            fprintf(f, "%-7s %7llu copies %10s in %9s  %.2f GB/s%s\n",
                    rpt_copy_kinds[k], (unsigned long long)a->copy[k].n,
                    fmt_bytes(b1, sizeof b1, (double)a->copy[k].bytes),
                    fmt_ns(b2, sizeof b2, (double)a->copy[k].dur),
                    a->copy[k].dur ? (double)a->copy[k].bytes / a->copy[k].dur
                                   : 0.0,
                    a->copy[k].pageable_n ? " (some pageable)" : "");
    if (a->memset_n)
        fprintf(f, "memset  %7llu        %10s in %9s\n",
                (unsigned long long)a->memset_n,
                fmt_bytes(b1, sizeof b1, (double)a->memset_bytes),
                fmt_ns(b2, sizeof b2, (double)a->memset_dur));
    for (int k = 0; k < SK_N; k++)
        if (a->sync_n[k])
            fprintf(f, "sync %-11s %6llu waits, %s\n", rpt_sync_kinds[k],
                    (unsigned long long)a->sync_n[k],
                    fmt_ns(b1, sizeof b1, (double)a->sync_dur[k]));
    if (a->alloc_n)
        fprintf(f, "alloc %llu (%s), free %llu, peak live %s\n",
                (unsigned long long)a->alloc_n,
                fmt_bytes(b1, sizeof b1, (double)a->alloc_bytes),
                (unsigned long long)a->free_n,
                fmt_bytes(b2, sizeof b2, (double)a->live_peak));

    rows = malloc(TOP_SCOPES * sizeof *rows);
    nrows = rows ? rpt_scope_walk(c, a, rows, TOP_SCOPES) : 0;
    if (nrows) {
        fprintf(f, "\n-- scopes (wall time; self = minus child scopes; GPU = "
                   "kernels in the scope itself) --\n");
        fprintf(f, "%7s %10s %10s %10s %10s  %s\n", "count", "total", "self",
                "avg", "GPU", "scope");
        for (size_t i = 0; i < nrows; i++) {
            const rpt_scope *s = &a->scope[rows[i]];
            const rpt_dict *p = rpt_dict_get(c, rows[i], DK_PATH);
            char nm[128];
            int depth = p ? p->depth : 1;
            name_of(c, p ? p->name : 0, nm, sizeof nm);
            fprintf(f, "%7llu %10s %10s %10s %10s  %*s%s\n",
                    (unsigned long long)s->n,
                    fmt_ns(b1, sizeof b1, (double)s->total),
                    fmt_ns(b2, sizeof b2,
                           s->total > s->child_total
                               ? (double)(s->total - s->child_total)
                               : 0.0),
                    fmt_ns(b3, sizeof b3, s->n ? (double)s->total / s->n : 0.0),
                    fmt_ns(b4, sizeof b4, (double)s->gpu),
                    (depth > 1 ? depth - 1 : 0) * 2, "", nm);
        }
    }
    free(rows);

    fprintf(f, "\n-- system --\n");
    for (int i = 0; i < RPT_MAX_DEV; i++) {
        const rpt_dev *d = &a->dev[i];
        if (!d->samples && !d->kernels)
            continue;
        fprintf(f,
                "GPU %d: %llu kernels, busy %.1f%% of its span; idle %s in "
                "%llu gaps >= 10 us (longest %s)\n",
                i, (unsigned long long)d->kernels,
                d->last > d->first
                    ? 100.0 * d->busy.busy / (double)(d->last - d->first)
                    : 0.0,
                fmt_ns(b1, sizeof b1, (double)d->busy.idle),
                (unsigned long long)d->busy.gaps,
                fmt_ns(b2, sizeof b2, (double)d->busy.gap_max));
        if (d->samples) {
            fprintf(f,
                    "  %llu samples: util avg %.0f%% max %llu%%; VRAM peak "
                    "%s of %s; temp max %lld C; power avg %.0f W max %.0f "
                    "W (limit %.0f W)\n",
                    (unsigned long long)d->samples,
                    (double)d->util_sum / d->samples,
                    (unsigned long long)d->util_max,
                    fmt_bytes(b1, sizeof b1, (double)d->mem_used_max),
                    fmt_bytes(b2, sizeof b2, (double)d->mem_total),
                    (long long)d->temp_max,
                    d->power_n ? d->power_sum / 1000.0 / d->power_n : 0.0,
                    d->power_max / 1000.0, d->power_limit / 1000.0);
            fprintf(f, "  throttled in %llu samples",
                    (unsigned long long)d->throttle_n);
            for (int b = 1; b < 8; b++)
                if (d->throttle_bits[b])
                    fprintf(f, " %s:%llu", rpt_throttle_names[b],
                            (unsigned long long)d->throttle_bits[b]);
            if (d->sm_active_n)
                fprintf(f, "; sm_active avg %.2f",
                        d->sm_active_sum / d->sm_active_n);
            fprintf(f, "\n");
        }
    }
    if (a->host_n)
        fprintf(f,
                "host: %llu samples, CPU avg %.1f%% max %.1f%%, RAM peak "
                "%s of %s, process RSS peak %s\n",
                (unsigned long long)a->host_n,
                a->cpu_n ? a->cpu_sum10 / 10.0 / a->cpu_n : 0.0,
                a->cpu_max10 / 10.0,
                fmt_bytes(b1, sizeof b1, (double)a->ram_max),
                fmt_bytes(b2, sizeof b2, (double)a->ram_total),
                fmt_bytes(b3, sizeof b3, (double)a->rss_max));
    for (size_t i = 0; i < a->nctr; i++) {
        char nm[128];
        name_of(c, a->ctr[i].name, nm, sizeof nm);
        fprintf(f, "counter %s: last %lld (min %lld, max %lld, %llu values)\n",
                nm, (long long)a->ctr[i].last, (long long)a->ctr[i].min,
                (long long)a->ctr[i].max, (unsigned long long)a->ctr[i].n);
    }

    hints = malloc(MAX_HINTS * sizeof *hints);
    nh = hints ? rpt_hints(c, a, hints, MAX_HINTS) : 0;
    fprintf(f, "\n-- hints (%zu) --\n", nh);
    for (size_t i = 0; i < nh; i++)
        fprintf(f, "[%s] %s: %s\n    %s\n",
                hints[i].severity == 2   ? "high"
                : hints[i].severity == 1 ? "medium"
                                         : "info",
                hints[i].kind, hints[i].what, hints[i].evidence);
    if (!nh)
        fprintf(f, "nothing stands out.\n");
    free(hints);

    fprintf(f, "\n-- reading --\n");
    for (int s = 0; s < RPT_NST; s++) {
        const rpt_stats *st = &c->st[s];
        fprintf(f,
                "%-6s %llu lines, %llu missing (seq gaps), %llu damaged, "
                "%llu partial last lines, %s\n",
                rpt_stream_names[s], (unsigned long long)st->lines,
                (unsigned long long)st->gaps,
                (unsigned long long)(st->damaged + st->long_lines),
                (unsigned long long)st->partial,
                st->ended ? "complete (session_end)" : "no session_end");
    }
}
