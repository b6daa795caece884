/*
 * print_json.c - a session's report as JSON (`gpufl report --json`): the
 * aggregates and hints print.c shows as text, every list whole.
 */
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "common/jw.h"
#include "report_int.h"

#define MAX_HINTS 64
/* The largest JSON report (bytes): far above any session's. */
#define RPT_JSON_MAX (1u << 30)

/* ---- JSON ---------------------------------------------------------------- */

static void kv_f(jw *w, const char *k, double v, int dec)
{
    jw_key(w, k);
    jw_f64(w, v, dec);
}

void rpt_json_dims(jw *w, const char *k, const uint32_t d[3])
{
    int n = d[2] != 1 ? 3 : d[1] != 1 ? 2 : 1;
    jw_key(w, k);
    jw_arr_begin(w);
    for (int i = 0; i < n; i++)
        jw_u64(w, d[i]);
    jw_arr_end(w);
}

static void kv_name(jw *w, const rpt_ctx *c, const char *k, uint32_t id)
{
    size_t n;
    const char *s = rpt_name(c, id, &n);
    jw_key(w, k);
    if (n)
        jw_strn(w, s, n, n);
    else
        jw_null(w);
}

static void json_session(jw *w, const rpt_ctx *c, const rpt_agg *a,
                         const rpt_files *files)
{
    const rpt_header *h = &c->hdr;
    uint64_t span, busy = rpt_busy_all(a, &span), copied = 0, ncopy = 0;
    jw_key(w, "session");
    jw_obj_begin(w);
    jw_kv_str(w, "sid", h->sid);
    jw_kv_str(w, "prefix", files->prefix);
    jw_kv_str(w, "app", h->app);
    jw_kv_str(w, "host", h->host);
    jw_kv_u64(w, "pid", h->pid);
    jw_kv_u64(w, "start", h->start);
    jw_kv_str(w, "lib", h->lib);
    jw_kv_str(w, "cmd", h->cmd);
    jw_key(w, "simulated");
    jw_bool(w, h->simulated);
    jw_key(w, "engines");
    /* no session line read (all damaged): an empty object */
    if (h->engines[0])
        jw_raw(w, h->engines, strlen(h->engines));
    else
        jw_raw(w, "{}", 2);
    if (h->warning[0])
        jw_kv_str(w, "warning", h->warning);
    jw_kv_u64(w, "interval_ms", h->interval_ms);
    jw_kv_u64(w, "duration_ns", rpt_session_dur(c));
    jw_key(w, "ended");
    jw_bool(w, c->st[0].ended);
    jw_key(w, "devices");
    jw_arr_begin(w);
    for (uint32_t i = 0; i < h->ndev; i++) {
        if (!h->dev[i].present)
            continue;
        jw_obj_begin(w);
        jw_kv_u64(w, "id", i);
        jw_kv_str(w, "name", h->dev[i].name);
        jw_kv_str(w, "cc", h->dev[i].cc);
        jw_kv_u64(w, "sms", h->dev[i].sms);
        jw_kv_u64(w, "mem", h->dev[i].mem);
        jw_key(w, "simulated");
        jw_bool(w, h->dev[i].simulated);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_obj_end(w);
    for (int k = 0; k < CK_N; k++) {
        copied += a->copy[k].bytes;
        ncopy += a->copy[k].n;
    }
    jw_key(w, "summary");
    jw_obj_begin(w);
    jw_kv_u64(w, "kernels", a->kernels);
    jw_kv_u64(w, "kernel_ns", a->kernel_ns);
    jw_kv_u64(w, "gpu_busy_ns", busy);
    jw_kv_u64(w, "gpu_span_ns", span);
    kv_f(w, "gpu_busy_pct", span ? 100.0 * busy / span : 0, 2);
    jw_kv_u64(w, "copies", ncopy);
    jw_kv_u64(w, "bytes_copied", copied);
    jw_kv_u64(w, "memsets", a->memset_n);
    jw_kv_u64(w, "scopes", a->scopes_n);
    jw_kv_u64(w, "markers", a->markers);
    jw_kv_u64(w, "unattributed_kernel_ns", a->unattributed_gpu);
    jw_obj_end(w);
}

static void json_kernels(jw *w, const rpt_ctx *c, const rpt_agg *a)
{
    uint32_t *idx = malloc((a->nk ? a->nk : 1) * sizeof *idx);
    size_t n = idx ? rpt_kernel_order(a, idx, a->nk) : 0;
    jw_key(w, "kernels");
    jw_arr_begin(w);
    for (size_t i = 0; i < n; i++) {
        const rpt_kernel *k = &a->k[idx[i]];
        jw_obj_begin(w);
        kv_name(w, c, "name", k->name);
        jw_kv_u64(w, "cfg", k->cfg);
        jw_kv_u64(w, "count", k->n);
        jw_kv_u64(w, "total_ns", k->total);
        kv_f(w, "share", a->kernel_ns ? (double)k->total / a->kernel_ns : 0, 4);
        kv_f(w, "avg_ns", (double)k->total / k->n, 1);
        jw_kv_u64(w, "p50_ns",
                  rpt_hist_quantile(k->h, k->n, 0.5, k->min, k->max));
        jw_kv_u64(w, "p99_ns",
                  rpt_hist_quantile(k->h, k->n, 0.99, k->min, k->max));
        jw_kv_u64(w, "min_ns", k->min);
        jw_kv_u64(w, "max_ns", k->max);
        rpt_json_dims(w, "grid", k->grid);
        jw_key(w, "grid_varies");
        jw_bool(w, k->grid_varies);
        rpt_json_dims(w, "block", k->block);
        jw_kv_u64(w, "regs", k->regs);
        jw_kv_u64(w, "smem", k->smem);
        jw_kv_u64(w, "dsmem", k->dsmem);
        jw_kv_u64(w, "lmem", k->lmem);
        jw_key(w, "occ");
        if (k->occ >= 0)
            jw_f64(w, k->occ, 4);
        else
            jw_null(w);
        jw_kv_str(w, "lim", k->lim);
        jw_key(w, "devices");
        jw_arr_begin(w);
        for (int d = 0; d < RPT_MAX_DEV; d++)
            if (k->devmask & (1u << d))
                jw_u64(w, (uint64_t)d);
        jw_arr_end(w);
        if (k->api_n) {
            kv_f(w, "api_call_avg_ns", (double)k->api_call / k->api_n, 1);
            kv_f(w, "queue_avg_ns", (double)k->api_queue / k->api_n, 1);
        }
        jw_obj_end(w);
    }
    jw_arr_end(w);
    free(idx);
}

static void json_copies(jw *w, const rpt_agg *a)
{
    jw_key(w, "copies");
    jw_arr_begin(w);
    for (int k = 0; k < CK_N; k++) {
        const rpt_copy *cp = &a->copy[k];
        if (!cp->n)
            continue;
        jw_obj_begin(w);
        jw_kv_str(w, "kind", rpt_copy_kinds[k]);
        jw_kv_u64(w, "count", cp->n);
        jw_kv_u64(w, "bytes", cp->bytes);
        jw_kv_u64(w, "dur_ns", cp->dur);
        kv_f(w, "gbps", cp->dur ? (double)cp->bytes / cp->dur : 0, 3);
        jw_kv_u64(w, "pageable_count", cp->pageable_n);
        jw_kv_u64(w, "pageable_bytes", cp->pageable_bytes);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_key(w, "memset");
    jw_obj_begin(w);
    jw_kv_u64(w, "count", a->memset_n);
    jw_kv_u64(w, "bytes", a->memset_bytes);
    jw_kv_u64(w, "dur_ns", a->memset_dur);
    jw_obj_end(w);
    jw_key(w, "syncs");
    jw_arr_begin(w);
    for (int k = 0; k < SK_N; k++) {
        if (!a->sync_n[k])
            continue;
        jw_obj_begin(w);
        jw_kv_str(w, "kind", rpt_sync_kinds[k]);
        jw_kv_u64(w, "count", a->sync_n[k]);
        jw_kv_u64(w, "dur_ns", a->sync_dur[k]);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_key(w, "memory");
    jw_obj_begin(w);
    jw_kv_u64(w, "allocs", a->alloc_n);
    jw_kv_u64(w, "alloc_bytes", a->alloc_bytes);
    jw_kv_u64(w, "frees", a->free_n);
    jw_kv_u64(w, "free_bytes", a->free_bytes);
    jw_kv_u64(w, "peak_live_bytes", a->live_peak);
    jw_obj_end(w);
}

static void json_scopes(jw *w, const rpt_ctx *c, const rpt_agg *a)
{
    uint32_t *rows = malloc((a->nscope ? a->nscope : 1) * sizeof *rows);
    size_t n = rows ? rpt_scope_walk(c, a, rows, a->nscope) : 0;
    char path[1024];
    jw_key(w, "scopes");
    jw_arr_begin(w);
    for (size_t i = 0; i < n; i++) {
        const rpt_scope *s = &a->scope[rows[i]];
        const rpt_dict *p = rpt_dict_get(c, rows[i], DK_PATH);
        jw_obj_begin(w);
        jw_kv_str(w, "path", rpt_path_str(c, rows[i], path, sizeof path));
        jw_kv_u64(w, "id", rows[i]);
        jw_kv_u64(w, "parent", p ? p->parent : 0);
        jw_kv_u64(w, "depth", p ? p->depth : 0);
        jw_kv_u64(w, "count", s->n);
        jw_kv_u64(w, "total_ns", s->total);
        jw_kv_u64(w, "self_ns",
                  s->total > s->child_total ? s->total - s->child_total : 0);
        jw_kv_u64(w, "max_ns", s->max);
        jw_kv_u64(w, "gpu_ns", s->gpu);
        jw_kv_u64(w, "kernels", s->kernels);
        jw_kv_u64(w, "unclosed", s->unclosed);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    free(rows);
}

static void json_devices(jw *w, const rpt_agg *a)
{
    jw_key(w, "devices");
    jw_arr_begin(w);
    for (int i = 0; i < RPT_MAX_DEV; i++) {
        const rpt_dev *d = &a->dev[i];
        if (!d->samples && !d->kernels)
            continue;
        jw_obj_begin(w);
        jw_kv_u64(w, "id", (uint64_t)i);
        jw_kv_u64(w, "kernels", d->kernels);
        jw_kv_u64(w, "kernel_ns", d->kernel_ns);
        jw_kv_u64(w, "busy_ns", d->busy.busy);
        jw_kv_u64(w, "span_ns", d->last - d->first);
        kv_f(w, "busy_pct",
             d->last > d->first ? 100.0 * d->busy.busy / (d->last - d->first)
                                : 0,
             2);
        jw_kv_u64(w, "idle_ns", d->busy.idle);
        jw_kv_u64(w, "idle_gaps", d->busy.gaps);
        jw_kv_u64(w, "longest_gap_ns", d->busy.gap_max);
        jw_kv_u64(w, "samples", d->samples);
        if (d->samples) {
            kv_f(w, "util_avg", (double)d->util_sum / d->samples, 2);
            jw_kv_u64(w, "util_max", d->util_max);
            kv_f(w, "mem_util_avg", (double)d->memu_sum / d->samples, 2);
            jw_kv_u64(w, "vram_peak", d->mem_used_max);
            jw_kv_u64(w, "vram_total", d->mem_total);
            if (d->temp_n) {
                jw_kv_i64(w, "temp_max", d->temp_max);
                kv_f(w, "temp_avg", (double)d->temp_sum / d->temp_n, 2);
            }
            if (d->power_n) {
                kv_f(w, "power_avg_w", d->power_sum / 1000.0 / d->power_n, 3);
                kv_f(w, "power_max_w", d->power_max / 1000.0, 3);
            }
            kv_f(w, "power_limit_w", d->power_limit / 1000.0, 3);
            if (d->energy_first)
                kv_f(w, "energy_j",
                     d->energy_last >= d->energy_first
                         ? (d->energy_last - d->energy_first) / 1000.0
                         : 0,
                     3);
            jw_kv_u64(w, "throttled_samples", d->throttle_n);
            jw_key(w, "throttle_reasons");
            jw_obj_begin(w);
            for (int b = 0; b < 8; b++)
                if (d->throttle_bits[b])
                    jw_kv_u64(w, rpt_throttle_names[b], d->throttle_bits[b]);
            jw_obj_end(w);
            jw_kv_u64(w, "sm_clock_min",
                      d->clk_min == UINT64_MAX ? 0 : d->clk_min);
            jw_kv_u64(w, "sm_clock_max", d->clk_max);
            if (d->sm_active_n)
                kv_f(w, "sm_active_avg", d->sm_active_sum / d->sm_active_n, 4);
            jw_kv_u64(w, "ecc_uncorr", d->ecc_uncorr);
        }
        jw_kv_u64(w, "lost_samples", d->lost);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_key(w, "host");
    jw_obj_begin(w);
    jw_kv_u64(w, "samples", a->host_n);
    if (a->cpu_n) {
        kv_f(w, "cpu_avg", a->cpu_sum10 / 10.0 / a->cpu_n, 2);
        kv_f(w, "cpu_max", a->cpu_max10 / 10.0, 1);
    }
    jw_kv_u64(w, "ram_peak", a->ram_max);
    jw_kv_u64(w, "ram_total", a->ram_total);
    jw_kv_u64(w, "rss_peak", a->rss_max);
    jw_obj_end(w);
}

static void json_rest(jw *w, const rpt_ctx *c, const rpt_agg *a)
{
    rpt_hint *hints = malloc(MAX_HINTS * sizeof *hints);
    size_t nh = hints ? rpt_hints(c, a, hints, MAX_HINTS) : 0;
    jw_key(w, "functions");
    jw_arr_begin(w);
    for (size_t i = 0; i < a->nfn; i++) {
        const rpt_func *f = &a->fn[i];
        jw_obj_begin(w);
        kv_name(w, c, "name", f->name);
        jw_kv_u64(w, "inst", f->inst);
        jw_kv_u64(w, "thread_inst", f->thread_inst);
        if (f->inst)
            kv_f(w, "divergence", 1.0 - f->thread_inst / (32.0 * f->inst), 4);
        jw_kv_u64(w, "sectors", f->sectors);
        jw_kv_u64(w, "sectors_ideal", f->ideal);
        if (f->sectors)
            kv_f(w, "coalescing", (double)f->ideal / f->sectors, 4);
        jw_kv_u64(w, "samples", f->samples);
        jw_key(w, "stalls");
        jw_obj_begin(w);
        /* the reasons' names come from the log lines: escaped (a
         * name with a control character made invalid JSON; fuzz_report) */
        for (int r = 0; r < f->nr; r++) {
            jw_key_str(w, f->r[r].name);
            jw_u64(w, f->r[r].n);
        }
        jw_obj_end(w);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_key(w, "counters");
    jw_arr_begin(w);
    for (size_t i = 0; i < a->nctr; i++) {
        jw_obj_begin(w);
        kv_name(w, c, "name", a->ctr[i].name);
        jw_kv_u64(w, "values", a->ctr[i].n);
        jw_kv_i64(w, "first", a->ctr[i].first);
        jw_kv_i64(w, "last", a->ctr[i].last);
        jw_kv_i64(w, "min", a->ctr[i].min);
        jw_kv_i64(w, "max", a->ctr[i].max);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_key(w, "markers");
    jw_obj_begin(w);
    jw_kv_u64(w, "count", a->markers);
    jw_key(w, "first");
    jw_arr_begin(w);
    for (uint64_t i = 0; i < a->markers && i < RPT_MARKERS_KEPT; i++) {
        jw_obj_begin(w);
        jw_kv_u64(w, "ts", a->marker[i].ts);
        jw_kv_str(w, "text", a->marker[i].text);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_obj_end(w);
    jw_key(w, "losses");
    jw_obj_begin(w);
    for (int s = 0; s < RPT_NST; s++) {
        jw_key(w, rpt_stream_names[s]);
        jw_obj_begin(w);
        for (int r = 0; r < RPT_LOSS_REASONS; r++)
            if (a->loss[s][r])
                jw_kv_u64(w, rpt_loss_reasons[r], a->loss[s][r]);
        jw_obj_end(w);
    }
    jw_obj_end(w);
    jw_key(w, "reading");
    jw_obj_begin(w);
    for (int s = 0; s < RPT_NST; s++) {
        const rpt_stats *st = &c->st[s];
        jw_key(w, rpt_stream_names[s]);
        jw_obj_begin(w);
        jw_kv_u64(w, "files", st->files);
        jw_kv_u64(w, "lines", st->lines);
        jw_kv_u64(w, "gaps", st->gaps);
        jw_kv_u64(w, "damaged", st->damaged + st->long_lines);
        jw_kv_u64(w, "partial", st->partial);
        jw_kv_u64(w, "duplicates", st->dups);
        jw_kv_u64(w, "unknown_version", st->badv);
        jw_key(w, "ended");
        jw_bool(w, st->ended);
        if (st->ended)
            jw_kv_u64(w, "session_end_lines", st->end_lines);
        jw_obj_end(w);
    }
    jw_obj_end(w);
    jw_key(w, "hints");
    jw_arr_begin(w);
    for (size_t i = 0; i < nh; i++) {
        jw_obj_begin(w);
        jw_kv_str(w, "kind", hints[i].kind);
        jw_kv_str(w, "severity",
                  hints[i].severity == 2   ? "high"
                  : hints[i].severity == 1 ? "medium"
                                           : "info");
        jw_kv_str(w, "what", hints[i].what);
        jw_kv_str(w, "evidence", hints[i].evidence);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    free(hints);
}

typedef struct json_args {
    const rpt_ctx *c;
    const rpt_agg *a;
    const rpt_files *files;
} json_args;

static void json_all(jw *w, void *ctx)
{
    const json_args *x = ctx;

    jw_obj_begin(w);
    json_session(w, x->c, x->a, x->files);
    json_kernels(w, x->c, x->a);
    json_copies(w, x->a);
    json_scopes(w, x->c, x->a);
    json_devices(w, x->a);
    json_rest(w, x->c, x->a);
    jw_obj_end(w);
}

char *rpt_print_json(const rpt_ctx *c, const rpt_agg *a, const rpt_files *files,
                     size_t *len)
{
    gbuf b = GBUF_INIT(RPT_JSON_MAX);
    json_args x = { c, a, files };

    /* room most reports fit in: one pass for them */
    if (gbuf_grow(&b, 64u << 10) || jw_gbuf_run(&b, json_all, &x)) {
        gbuf_release(&b);
        return NULL;
    }
    return gbuf_detach(&b, len);
}
