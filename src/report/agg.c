/*
 * agg.c - the aggregates a report is made of, updated line by line.
 *
 * Memory is bounded by what the session defines, not by how many events it
 * has: one row per kernel launch configuration (with a fixed-size duration
 * histogram for p50/p99), per scope path, per GPU function with SASS or
 * PC-sampling data, per counter and per device.
 *
 * GPU busy time is the union of kernel intervals per device.  Kernels come
 * almost in start order (each stream is written in order, streams
 * interleave), so the union is kept as a sorted set of disjoint intervals;
 * when it holds RPT_BUSY_CAP intervals the older half is retired into the
 * totals (busy time, idle gaps between them) and a horizon remembers where
 * they ended.  A later kernel that starts before the horizon counts only
 * from the horizon on: exact unless a kernel arrives more than ~2,000
 * intervals out of order.
 */
#include <stdlib.h>
#include <string.h>

#include "gpufl/gpufl.h"
#include "report_int.h"

const char *const rpt_copy_kinds[CK_N] = { "htod", "dtoh", "dtod",
                                           "htoh", "ptop", "unknown" };
const char *const rpt_sync_kinds[SK_N] = { "event", "stream_wait", "stream",
                                           "context", "unknown" };
const char *const rpt_loss_reasons[RPT_LOSS_REASONS] = {
    "buffer_full", "disk_low",    "dict_full", "too_long",
    "scope_depth", "write_error", "other"
};

/* Gaps shorter than this between kernels are launch overhead, not idle. */
#define IDLE_GAP_NS 10000

void rpt_hist_add(rpt_hist *h, uint64_t v)
{
    uint32_t b;
    if (v < RPT_HSUB) {
        b = (uint32_t)v;
    } else {
        int e = 63 - __builtin_clzll(v); /* >= 5 */
        if (e >= RPT_HEXP) {
            b = RPT_HBUCKETS - 1;
        } else {
            b = RPT_HSUB + (uint32_t)(e - 5) * RPT_HSUB +
                (uint32_t)((v >> (e - 5)) & (RPT_HSUB - 1));
        }
    }
    h->b[b]++;
}

/* The midpoint of bucket b. */
static uint64_t bucket_mid(uint32_t b)
{
    uint32_t e, sub;
    uint64_t lo, w;
    if (b < RPT_HSUB)
        return b;
    e = (b - RPT_HSUB) / RPT_HSUB + 5;
    sub = (b - RPT_HSUB) % RPT_HSUB;
    w = 1ull << (e - 5);
    lo = (1ull << e) + sub * w;
    return lo + w / 2;
}

uint64_t rpt_hist_quantile(const rpt_hist *h, uint64_t n, double q,
                           uint64_t min, uint64_t max)
{
    uint64_t rank, seen = 0, v = max;
    if (!n)
        return 0;
    rank = (uint64_t)(q * (double)n + 0.999999); /* nearest rank */
    if (rank < 1)
        rank = 1;
    for (uint32_t b = 0; b < RPT_HBUCKETS; b++) {
        seen += h->b[b];
        if (seen >= rank) {
            v = bucket_mid(b);
            break;
        }
    }
    return v < min ? min : v > max ? max : v;
}

int rpt_agg_init(rpt_agg *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 0; i < RPT_MAX_DEV; i++)
        a->dev[i].clk_min = UINT64_MAX;
    return GPUFL_OK;
}

void rpt_agg_release(rpt_agg *a)
{
    for (size_t i = 0; i < a->nk; i++)
        free(a->k[i].h);
    free(a->k);
    free(a->cfg2k);
    free(a->name2k);
    free(a->scope);
    free(a->fn);
    free(a->ctr);
    for (int i = 0; i < RPT_MAX_DEV; i++)
        free(a->dev[i].busy.iv);
    memset(a, 0, sizeof *a);
}

/* Grows an array indexed by id so that id fits; -1 on failure. */
static int grow_idx(void **arr, uint32_t *n, size_t elem, uint64_t id)
{
    uint32_t nn;
    char *p;
    if (id < *n)
        return 0;
    if (id >= RPT_MAX_IDS)
        return -1;
    nn = *n ? *n : 256;
    while (nn <= id)
        nn *= 2;
    p = realloc(*arr, (size_t)nn * elem);
    if (!p)
        return -1;
    memset(p + (size_t)*n * elem, 0, (size_t)(nn - *n) * elem);
    *arr = p;
    *n = nn;
    return 0;
}

static void busy_retire(rpt_busy *b, size_t upto)
{
    for (size_t i = 0; i < upto; i++) {
        uint64_t s = b->iv[i][0], e = b->iv[i][1];
        if (b->started && s > b->last_end) {
            uint64_t g = s - b->last_end;
            b->idle += g;
            if (g >= IDLE_GAP_NS)
                b->gaps++;
            if (g > b->gap_max) {
                b->gap_max = g;
                b->gap_max_at = b->last_end;
            }
        }
        b->busy += e - s;
        b->last_end = e;
        b->started = 1;
    }
    if (upto) {
        b->horizon = b->iv[upto - 1][1];
        memmove(b->iv, b->iv + upto, (b->n - upto) * sizeof *b->iv);
        b->n -= upto;
    }
}

static void busy_add(rpt_busy *b, uint64_t s, uint64_t e)
{
    size_t lo = 0, hi, i, j;
    if (e <= b->horizon)
        return;
    if (s < b->horizon)
        s = b->horizon;
    if (e <= s)
        return;
    /* the array comes with a device's first kernel (16 x 64 KiB for every
     * report was most of a small one's cost); without memory the interval
     * is counted whole, overlaps and all, rather than not at all */
    if (!b->iv && !(b->iv = malloc(RPT_BUSY_CAP * sizeof *b->iv))) {
        b->busy += e - s;
        b->horizon = e;
        return;
    }
    /* first interval whose end >= s (touching intervals merge) */
    hi = b->n;
    if (b->n && b->iv[b->n - 1][1] < s) {
        lo = b->n;
    } else {
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (b->iv[mid][1] < s)
                lo = mid + 1;
            else
                hi = mid;
        }
    }
    i = lo;
    j = i; /* intervals [i, j) overlap [s, e] */
    while (j < b->n && b->iv[j][0] <= e)
        j++;
    if (j > i) {
        if (b->iv[i][0] < s)
            s = b->iv[i][0];
        if (b->iv[j - 1][1] > e)
            e = b->iv[j - 1][1];
        b->iv[i][0] = s;
        b->iv[i][1] = e;
        memmove(b->iv + i + 1, b->iv + j, (b->n - j) * sizeof *b->iv);
        b->n -= j - i - 1;
        return;
    }
    if (b->n == RPT_BUSY_CAP) {
        busy_retire(b, RPT_BUSY_CAP / 2);
        busy_add(b, s, e);
        return;
    }
    memmove(b->iv + i + 1, b->iv + i, (b->n - i) * sizeof *b->iv);
    b->iv[i][0] = s;
    b->iv[i][1] = e;
    b->n++;
}

void rpt_agg_finish(rpt_agg *a)
{
    for (int i = 0; i < RPT_MAX_DEV; i++)
        busy_retire(&a->dev[i].busy, a->dev[i].busy.n);
}

static rpt_kernel *kernel_row(rpt_agg *a, rpt_ctx *c, jsonl_doc *d,
                              uint64_t cfg)
{
    uint64_t name;
    uint32_t *slot;
    rpt_kernel *k;
    if (cfg) {
        if (grow_idx((void **)&a->cfg2k, &a->ncfg2k, sizeof *a->cfg2k, cfg))
            return NULL;
        slot = &a->cfg2k[cfg];
    } else {
        name = rpt_u64(d, "name", 0);
        if (grow_idx((void **)&a->name2k, &a->nname2k, sizeof *a->name2k, name))
            return NULL;
        slot = &a->name2k[name];
    }
    if (*slot)
        return &a->k[*slot - 1];
    if (a->nk == a->kcap) {
        size_t nc = a->kcap ? a->kcap * 2 : 64;
        rpt_kernel *nk = realloc(a->k, nc * sizeof *nk);
        if (!nk)
            return NULL;
        a->k = nk;
        a->kcap = nc;
    }
    k = &a->k[a->nk];
    memset(k, 0, sizeof *k);
    k->h = calloc(1, sizeof *k->h);
    if (!k->h)
        return NULL;
    k->min = UINT64_MAX;
    k->cfg = (uint32_t)cfg;
    if (cfg) {
        const rpt_dict *l = rpt_dict_get(c, (uint32_t)cfg, DK_LAUNCH);
        if (l) {
            k->name = l->name;
            memcpy(k->block, l->block, sizeof k->block);
            k->regs = l->regs;
            k->smem = l->smem;
            k->dsmem = l->dsmem;
            k->lmem = l->lmem;
            k->occ = l->has_occ ? l->occ : -1;
            memcpy(k->lim, l->lim, sizeof k->lim);
        } else {
            k->occ = -1;
        }
    } else {
        k->name = (uint32_t)rpt_u64(d, "name", 0);
        rpt_dims(d, jsonl_doc_find(d, "block"), k->block);
        k->regs = (uint32_t)rpt_u64(d, "regs", 0);
        k->smem = (uint32_t)rpt_u64(d, "smem", 0);
        k->dsmem = (uint32_t)rpt_u64(d, "dsmem", 0);
        k->lmem = (uint32_t)rpt_u64(d, "lmem", 0);
        k->occ = rpt_f64(d, "occ", -1);
        rpt_str(d, "lim", k->lim, sizeof k->lim);
    }
    *slot = (uint32_t)++a->nk;
    return k;
}

static void on_kernel(rpt_agg *a, rpt_ctx *c, const rpt_line *ln)
{
    jsonl_doc *d = ln->d;
    const uint32_t *f = ln->f;
    uint32_t grid[3], path = 0;
    uint64_t dur, dev, sc;
    int attributed = 1;
    rpt_kernel *k;
    dur = rpt_tu64(d, f[RF_DUR], 0);
    dev = rpt_tu64(d, f[RF_DEV], 0);
    k = kernel_row(a, c, d, rpt_tu64(d, f[RF_CFG], 0));
    if (!k)
        return;
    rpt_dims(d, f[RF_GRID], grid);
    if (!k->n)
        memcpy(k->grid, grid, sizeof grid);
    else if (memcmp(k->grid, grid, sizeof grid))
        k->grid_varies = 1;
    k->n++;
    k->total += dur;
    if (dur < k->min)
        k->min = dur;
    if (dur > k->max)
        k->max = dur;
    rpt_hist_add(k->h, dur);
    if (f[RF_API] != JSONL_NOTFOUND &&
        jsonl_tok_type(d, f[RF_API]) == JSONL_ARRAY &&
        d->tok[f[RF_API]].n == 2) {
        int64_t x, y;
        uint32_t api = f[RF_API];
        if (!jsonl_tok_i64(d, api + 1, &x) &&
            !jsonl_tok_i64(d, d->tok[api + 1].next, &y) && x <= 0 && y >= 0) {
            k->api_n++;
            k->api_call += (uint64_t)y;
            if (-x > y)
                k->api_queue += (uint64_t)(-x - y);
        }
    }
    a->kernels++;
    a->kernel_ns += dur;
    if (!a->kfirst || ln->ts < a->kfirst)
        a->kfirst = ln->ts;
    if (ln->ts + dur > a->klast)
        a->klast = ln->ts + dur;
    if (dev < RPT_MAX_DEV) {
        rpt_dev *v = &a->dev[dev];
        k->devmask |= 1u << dev;
        v->kernels++;
        v->kernel_ns += dur;
        if (!v->first || ln->ts < v->first)
            v->first = ln->ts;
        if (ln->ts + dur > v->last)
            v->last = ln->ts + dur;
        busy_add(&v->busy, ln->ts, ln->ts + dur);
    }
    /* the scope: the instance's path, else the line's own path */
    sc = rpt_tu64(d, f[RF_SCOPE], 0);
    if (sc) {
        const rpt_inst *i = rpt_inst_get(c, sc);
        path = i ? i->path : 0;
    } else {
        path = (uint32_t)rpt_tu64(d, f[RF_PATH], 0);
        attributed = path != 0;
    }
    if (path &&
        !grow_idx((void **)&a->scope, &a->nscope, sizeof *a->scope, path)) {
        a->scope[path].gpu += dur;
        a->scope[path].kernels++;
    } else if (attributed) {
        a->scope_unknown_gpu += dur;
    } else {
        a->unattributed_gpu += dur;
    }
}

static int copy_kind(jsonl_doc *d)
{
    uint32_t t = jsonl_doc_find(d, "kind");
    for (int i = 0; i < CK_UNKNOWN; i++)
        if (jsonl_tok_streq(d, t, rpt_copy_kinds[i], strlen(rpt_copy_kinds[i])))
            return i;
    return CK_UNKNOWN;
}

static void on_memcpy(rpt_agg *a, jsonl_doc *d)
{
    rpt_copy *cp = &a->copy[copy_kind(d)];
    uint64_t bytes = rpt_u64(d, "bytes", 0), dur = rpt_u64(d, "dur", 0);
    cp->n++;
    cp->bytes += bytes;
    cp->dur += dur;
    if (!rpt_u64(d, "pinned", 0)) {
        cp->pageable_n++;
        cp->pageable_bytes += bytes;
        cp->pageable_dur += dur;
    }
}

static void on_sync(rpt_agg *a, jsonl_doc *d)
{
    uint32_t t = jsonl_doc_find(d, "kind");
    int k = SK_UNKNOWN;
    for (int i = 0; i < SK_UNKNOWN; i++)
        if (jsonl_tok_streq(d, t, rpt_sync_kinds[i], strlen(rpt_sync_kinds[i])))
            k = i;
    a->sync_n[k]++;
    a->sync_dur[k] += rpt_u64(d, "dur", 0);
}

static void on_scope_end(rpt_agg *a, rpt_ctx *c, jsonl_doc *d)
{
    uint64_t path = rpt_u64(d, "path", 0), dur = rpt_u64(d, "dur", 0);
    rpt_scope *s;
    const rpt_dict *p;
    if (grow_idx((void **)&a->scope, &a->nscope, sizeof *a->scope, path))
        return;
    s = &a->scope[path];
    a->scopes_n++;
    s->n++;
    s->total += dur;
    if (dur > s->max)
        s->max = dur;
    s->unclosed += rpt_u64(d, "unclosed", 0);
    p = rpt_dict_get(c, (uint32_t)path, DK_PATH);
    if (p && p->parent &&
        !grow_idx((void **)&a->scope, &a->nscope, sizeof *a->scope, p->parent))
        a->scope[p->parent].child_total += dur;
}

static void on_gpu(rpt_agg *a, jsonl_doc *d)
{
    uint64_t dev = rpt_u64(d, "dev", 0), v;
    rpt_dev *g;
    int64_t t;
    double f;
    if (dev >= RPT_MAX_DEV)
        return;
    g = &a->dev[dev];
    if (!rpt_has(d, "util") && !rpt_has(d, "temp")) {
        g->lost++; /* a line with only dev: the GPU was lost */
        return;
    }
    g->samples++;
    v = rpt_u64(d, "util", 0);
    g->util_sum += v;
    if (v > g->util_max)
        g->util_max = v;
    g->memu_sum += rpt_u64(d, "mem_util", 0);
    v = rpt_u64(d, "mem_used", 0);
    if (v > g->mem_used_max)
        g->mem_used_max = v;
    if ((v = rpt_u64(d, "mem_total", 0)))
        g->mem_total = v;
    if (rpt_has(d, "temp")) {
        t = rpt_i64(d, "temp", 0);
        if (!g->temp_n || t > g->temp_max)
            g->temp_max = t;
        /* saturating: a hostile log's absurd temperatures must not
         * overflow (undefined behaviour) */
        if (__builtin_add_overflow(g->temp_sum, t, &g->temp_sum))
            g->temp_sum = t < 0 ? INT64_MIN : INT64_MAX;
        g->temp_n++;
    }
    if (rpt_has(d, "power")) {
        v = rpt_u64(d, "power", 0);
        g->power_sum += v;
        g->power_n++;
        if (v > g->power_max)
            g->power_max = v;
    }
    if ((v = rpt_u64(d, "power_limit", 0)))
        g->power_limit = v;
    v = rpt_u64(d, "throttle", 0);
    /* bit 0 (GPU idle) is not a slowdown of work */
    if (v & ~1ull)
        g->throttle_n++;
    for (int b = 0; b < 8; b++)
        if (v & (1ull << b))
            g->throttle_bits[b]++;
    if (rpt_has(d, "clk_sm")) {
        v = rpt_u64(d, "clk_sm", 0);
        if (v && v < g->clk_min)
            g->clk_min = v;
        if (v > g->clk_max)
            g->clk_max = v;
        g->clk_n++;
    }
    f = rpt_f64(d, "sm_active", -1);
    if (f >= 0) {
        g->sm_active_sum += f;
        g->sm_active_n++;
    }
    if (rpt_has(d, "energy")) {
        v = rpt_u64(d, "energy", 0);
        if (!g->energy_first)
            g->energy_first = v ? v : 1;
        g->energy_last = v;
    }
    v = rpt_u64(d, "ecc_uncorr", 0);
    if (v > g->ecc_uncorr)
        g->ecc_uncorr = v;
}

static void on_host(rpt_agg *a, jsonl_doc *d)
{
    double cpu = rpt_f64(d, "cpu", -1);
    uint64_t v;
    a->host_n++;
    if (cpu >= 0) {
        uint64_t c10 = (uint64_t)(cpu * 10 + 0.5);
        a->cpu_sum10 += c10;
        a->cpu_n++;
        if (c10 > a->cpu_max10)
            a->cpu_max10 = c10;
    }
    if ((v = rpt_u64(d, "ram_used", 0)) > a->ram_max)
        a->ram_max = v;
    if ((v = rpt_u64(d, "ram_total", 0)))
        a->ram_total = v;
    if ((v = rpt_u64(d, "proc_rss", 0)) > a->rss_max)
        a->rss_max = v;
}

static rpt_func *func_row(rpt_agg *a, uint32_t name)
{
    for (size_t i = 0; i < a->nfn; i++)
        if (a->fn[i].name == name)
            return &a->fn[i];
    if (a->nfn == a->fncap) {
        size_t nc = a->fncap ? a->fncap * 2 : 16;
        rpt_func *nf;
        if (nc > 65536)
            return NULL;
        nf = realloc(a->fn, nc * sizeof *nf);
        if (!nf)
            return NULL;
        a->fn = nf;
        a->fncap = nc;
    }
    memset(&a->fn[a->nfn], 0, sizeof a->fn[0]);
    a->fn[a->nfn].name = name;
    return &a->fn[a->nfn++];
}

static void on_sass(rpt_agg *a, jsonl_doc *d)
{
    rpt_func *f = func_row(a, (uint32_t)rpt_u64(d, "func", 0));
    if (!f)
        return;
    f->inst += rpt_u64(d, "inst", 0);
    f->thread_inst += rpt_u64(d, "thread_inst", 0);
    f->sectors += rpt_u64(d, "sectors", 0);
    f->ideal += rpt_u64(d, "sectors_ideal", 0);
}

static void on_pcsamp(rpt_agg *a, jsonl_doc *d)
{
    rpt_func *f = func_row(a, (uint32_t)rpt_u64(d, "func", 0));
    uint32_t t = jsonl_doc_find(d, "stalls"), e;
    if (!f || jsonl_tok_type(d, t) != JSONL_OBJECT)
        return;
    e = t + 1;
    for (uint32_t i = 0; i < d->tok[t].n; i++) {
        uint32_t val = d->tok[e].next;
        char name[64];
        size_t n;
        uint64_t v;
        int r;
        if (jsonl_tok_str(d, e, name, sizeof name, &n) ||
            jsonl_tok_u64(d, val, &v)) {
            e = d->tok[val].next;
            continue;
        }
        for (r = 0; r < f->nr; r++)
            if (!strcmp(f->r[r].name, name))
                break;
        if (r == f->nr && f->nr < RPT_REASONS) {
            memcpy(f->r[r].name, name, n + 1);
            f->r[r].n = 0;
            f->nr++;
        }
        if (r < f->nr)
            f->r[r].n += v;
        f->samples += v;
        e = d->tok[val].next;
    }
}

static void on_counter(rpt_agg *a, const rpt_line *ln)
{
    uint32_t name = (uint32_t)rpt_u64(ln->d, "name", 0);
    int64_t v = rpt_i64(ln->d, "value", 0);
    rpt_counter *c = NULL;
    for (size_t i = 0; i < a->nctr; i++)
        if (a->ctr[i].name == name)
            c = &a->ctr[i];
    if (!c) {
        if (a->nctr == a->ctrcap) {
            size_t nc = a->ctrcap ? a->ctrcap * 2 : 16;
            rpt_counter *n2;
            if (nc > 4096)
                return;
            n2 = realloc(a->ctr, nc * sizeof *n2);
            if (!n2)
                return;
            a->ctr = n2;
            a->ctrcap = nc;
        }
        c = &a->ctr[a->nctr++];
        memset(c, 0, sizeof *c);
        c->name = name;
        c->first = c->min = c->max = v;
        c->first_ts = ln->ts;
    }
    c->n++;
    c->last = v;
    c->last_ts = ln->ts;
    if (v < c->min)
        c->min = v;
    if (v > c->max)
        c->max = v;
}

static void on_loss(rpt_agg *a, const rpt_line *ln)
{
    uint32_t t = jsonl_doc_find(ln->d, "reason");
    int r = RPT_LOSS_REASONS - 1;
    uint64_t total = rpt_u64(ln->d, "total", 0);
    for (int i = 0; i < RPT_LOSS_REASONS - 1; i++)
        if (jsonl_tok_streq(ln->d, t, rpt_loss_reasons[i],
                            strlen(rpt_loss_reasons[i])))
            r = i;
    /* `total` is exact even when an earlier loss line was lost */
    a->loss[ln->st][RPT_LOSS_REASONS] += rpt_u64(ln->d, "count", 0);
    if (total > a->loss[ln->st][r])
        a->loss[ln->st][r] = total;
    else if (!rpt_has(ln->d, "total"))
        a->loss[ln->st][r] += rpt_u64(ln->d, "count", 0);
}

int rpt_agg_visit(void *ud, rpt_ctx *c, const rpt_line *ln)
{
    rpt_agg *a = ud;
    jsonl_doc *d = ln->d;
    switch (ln->type) {
    case RT_KERNEL: on_kernel(a, c, ln); break;
    case RT_MEMCPY: on_memcpy(a, d); break;
    case RT_MEMSET:
        a->memset_n++;
        a->memset_bytes += rpt_u64(d, "bytes", 0);
        a->memset_dur += rpt_u64(d, "dur", 0);
        break;
    case RT_SYNC: on_sync(a, d); break;
    case RT_ALLOC:
        a->alloc_n++;
        a->alloc_bytes += rpt_u64(d, "bytes", 0);
        a->live += rpt_u64(d, "bytes", 0);
        if (a->live > a->live_peak)
            a->live_peak = a->live;
        break;
    case RT_FREE: {
        uint64_t b = rpt_u64(d, "bytes", 0);
        a->free_n++;
        a->free_bytes += b;
        a->live = a->live > b ? a->live - b : 0;
        break;
    }
    case RT_SCOPE_END: on_scope_end(a, c, d); break;
    case RT_MARKER:
        if (a->markers < RPT_MARKERS_KEPT) {
            a->marker[a->markers].ts = ln->ts;
            rpt_str(d, "text", a->marker[a->markers].text,
                    sizeof a->marker[0].text);
        }
        a->markers++;
        break;
    case RT_COUNTER: on_counter(a, ln); break;
    case RT_SASS: on_sass(a, d); break;
    case RT_PCSAMP: on_pcsamp(a, d); break;
    case RT_GPU: on_gpu(a, d); break;
    case RT_HOST: on_host(a, d); break;
    case RT_LOSS: on_loss(a, ln); break;
    case RT_SESSION_END:
        if (ln->ts > a->end_ts)
            a->end_ts = ln->ts;
        break;
    default: break;
    }
    return 0;
}

uint64_t rpt_kernel_order(const rpt_agg *a, uint32_t *idx, size_t cap)
{
    size_t n = 0;
    /* insertion into a top-cap list by total time, then count */
    for (size_t i = 0; i < a->nk; i++) {
        size_t j;
        const rpt_kernel *k = &a->k[i];
        if (n < cap)
            n++;
        else if (a->k[idx[n - 1]].total >= k->total)
            continue;
        for (j = n - 1; j > 0 && a->k[idx[j - 1]].total < k->total; j--)
            idx[j] = idx[j - 1];
        idx[j] = (uint32_t)i;
    }
    return n;
}
