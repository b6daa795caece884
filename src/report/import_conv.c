/*
 * import_conv.c - `gpufl import`: each kind of line of the original GPU
 * Flight v1 format (docs/report.md#gpufl-import) rewritten as
 * gpufl events (docs/events.md).  Columnar batches are read by column
 * name, never by position; what the original lacks is written as the
 * format says for unknown (docs/report.md has the table).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jw.h"
#include "import_int.h"

/* ---- reading the original's lines ------------------------------------------ */

/* Positions of the wanted columns (-1 = absent). */
static void map_cols(jsonl_doc *d, const char *const *want, int n, int *pos)
{
    uint32_t t = jsonl_doc_find(d, "columns"), e;
    for (int i = 0; i < n; i++)
        pos[i] = -1;
    if (jsonl_tok_type(d, t) != JSONL_ARRAY)
        return;
    e = t + 1;
    for (uint32_t c = 0; c < d->tok[t].n; c++, e = d->tok[e].next)
        for (int i = 0; i < n; i++)
            if (pos[i] < 0 && jsonl_tok_streq(d, e, want[i], strlen(want[i])))
                pos[i] = (int)c;
}

/* Token indices of one row's cells. */
static int row_cells(jsonl_doc *d, uint32_t row, uint32_t *cell, int cap)
{
    uint32_t e = row + 1;
    int n = 0;
    if (jsonl_tok_type(d, row) != JSONL_ARRAY)
        return 0;
    for (uint32_t i = 0; i < d->tok[row].n && n < cap; i++, e = d->tok[e].next)
        cell[n++] = e;
    return n;
}

static int64_t cell_i64(jsonl_doc *d, const uint32_t *cell, int n, int pos)
{
    int64_t v;
    double f;
    if (pos < 0 || pos >= n)
        return 0;
    if (!jsonl_tok_i64(d, cell[pos], &v))
        return v;
    /* a fraction is cut; what int64 cannot hold (1e300, NaN) counts as
     * absent rather than converted (undefined in C) */
    if (!jsonl_tok_f64(d, cell[pos], &f) && f > -9.2e18 && f < 9.2e18)
        return (int64_t)f;
    return 0;
}

static uint64_t cell_u64(jsonl_doc *d, const uint32_t *cell, int n, int pos)
{
    int64_t v = cell_i64(d, cell, n, pos);
    return v < 0 ? 0 : (uint64_t)v;
}

/* 0 when the batch has no rows array (nothing to read). */
int imp_rows_open(imp_rows *it, jsonl_doc *d, const char *const *want,
                  int nwant)
{
    it->d = d;
    it->i = 0;
    it->rows = jsonl_doc_find(d, "rows");
    map_cols(d, want, nwant < IMP_WANT ? nwant : IMP_WANT, it->pos);
    if (jsonl_tok_type(d, it->rows) != JSONL_ARRAY)
        return 0;
    it->r = it->rows + 1;
    return 1;
}

int imp_rows_next(imp_rows *it)
{
    if (it->i >= it->d->tok[it->rows].n)
        return 0;
    if (it->i++)
        it->r = it->d->tok[it->r].next;
    it->n = row_cells(it->d, it->r, it->cell, IMP_COLS);
    return 1;
}

/* The cell of wanted column k in the current row (0 when absent). */
uint64_t imp_col_u64(const imp_rows *it, int k)
{
    return cell_u64(it->d, it->cell, it->n, it->pos[k]);
}

int64_t imp_col_i64(const imp_rows *it, int k)
{
    return cell_i64(it->d, it->cell, it->n, it->pos[k]);
}

/* A quoted or plain integer member. */
static uint64_t num_or_str(jsonl_doc *d, const char *key)
{
    uint32_t t = jsonl_doc_find(d, key);
    char b[32];
    size_t n;
    uint64_t v;
    if (!jsonl_tok_u64(d, t, &v))
        return v;
    if (!jsonl_tok_str(d, t, b, sizeof b, &n))
        return strtoull(b, NULL, 10);
    return 0;
}

void imp_read_dicts(imp *m, jsonl_doc *d)
{
    static const struct {
        const char *key;
        char kind;
    } ds[] = { { "kernel_dict", 'k' },
               { "scope_name_dict", 's' },
               { "function_dict", 'f' },
               { "metric_dict", 'm' },
               { "source_file_dict", 'F' } };
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) {
        uint32_t t = jsonl_doc_find(d, ds[i].key), e;
        if (jsonl_tok_type(d, t) != JSONL_OBJECT)
            continue;
        e = t + 1;
        for (uint32_t k = 0; k < d->tok[t].n; k++) {
            uint32_t v = d->tok[e].next;
            char idb[32], nm[4097];
            size_t n, nn;
            if (!jsonl_tok_str(d, e, idb, sizeof idb, &n) &&
                !jsonl_tok_str(d, v, nm, sizeof nm, &nn))
                imp_odict_put(m, ds[i].kind, strtoull(idb, NULL, 10),
                              imp_name_id(m, nm, nn));
            e = d->tok[v].next;
        }
    }
}

void imp_read_job_start(imp *m, jsonl_doc *d)
{
    uint32_t t, e;
    jw w;
    if (m->have_start)
        return;
    m->have_start = 1;
    rpt_str(d, "session_id", m->sid_raw, sizeof m->sid_raw);
    snprintf(m->sid, sizeof m->sid, "%.39s", m->sid_raw);
    rpt_str(d, "app", m->app, sizeof m->app);
    rpt_str(d, "hostname", m->host, sizeof m->host);
    m->pid = rpt_u64(d, "pid", 0);
    m->start = rpt_u64(d, "ts_ns", 0);
    /* static devices: cuda_static_devices, else gpu_static_devices */
    t = jsonl_doc_find(d, "cuda_static_devices");
    if (jsonl_tok_type(d, t) != JSONL_ARRAY || !d->tok[t].n)
        t = jsonl_doc_find(d, "gpu_static_devices");
    jw_init(&w, m->devices, sizeof m->devices);
    jw_arr_begin(&w);
    if (jsonl_tok_type(d, t) == JSONL_ARRAY) {
        e = t + 1;
        for (uint32_t i = 0; i < d->tok[t].n; i++, e = d->tok[e].next) {
            char s[256], cc[32];
            size_t n;
            uint64_t v, mj = 0, mn = 0;
            jw_obj_begin(&w);
            if (jsonl_tok_u64(d, jsonl_obj_find(d, e, "id"), &v))
                v = i;
            jw_kv_u64(&w, "id", v);
            if (jsonl_tok_str(d, jsonl_obj_find(d, e, "name"), s, sizeof s, &n))
                s[0] = 0;
            jw_kv_str(&w, "name", s);
            if (!jsonl_tok_str(d, jsonl_obj_find(d, e, "uuid"), s, sizeof s,
                               &n) &&
                n)
                jw_kv_str(&w, "uuid", s);
            if (!jsonl_tok_u64(d, jsonl_obj_find(d, e, "compute_major"), &mj) &&
                !jsonl_tok_u64(d, jsonl_obj_find(d, e, "compute_minor"), &mn) &&
                mj) {
                snprintf(cc, sizeof cc, "%llu.%llu", (unsigned long long)mj,
                         (unsigned long long)mn);
                jw_kv_str(&w, "cc", cc);
            }
            if (!jsonl_tok_u64(d, jsonl_obj_find(d, e, "multi_processor_count"),
                               &v) &&
                v)
                jw_kv_u64(&w, "sms", v);
            jw_obj_end(&w);
        }
    }
    jw_arr_end(&w);
    if (w.err)
        snprintf(m->devices, sizeof m->devices, "[]");
    else
        m->devices[w.len] = 0;
}

/* Dimensions as the format writes them: trailing 1s left out. */
static int dims(char *b, size_t cap, const uint32_t d[3])
{
    if (d[2] != 1)
        return snprintf(b, cap, "[%u,%u,%u]", d[0], d[1], d[2]);
    if (d[1] != 1)
        return snprintf(b, cap, "[%u,%u]", d[0], d[1]);
    return snprintf(b, cap, "[%u]", d[0]);
}

static void put_kernel(imp *m, size_t i, const uint32_t grid[3],
                       const uint32_t block[3], uint32_t smem, uint32_t lmem,
                       double occ, const char *lim, uint32_t path)
{
    char body[512], key[600], limb[64];
    uint32_t cfg, name = m->pend[i].name;
    int off;
    off = snprintf(body, sizeof body,
                   "\"kind\":\"launch\",\"name\":%u,\"block\":", name);
    off += dims(body + off, sizeof body - (size_t)off, block);
    off += snprintf(body + off, sizeof body - (size_t)off, ",\"regs\":%u",
                    m->pend[i].regs);
    if (smem)
        off += snprintf(body + off, sizeof body - (size_t)off, ",\"smem\":%u",
                        smem);
    if (m->pend[i].dsmem)
        off += snprintf(body + off, sizeof body - (size_t)off, ",\"dsmem\":%u",
                        m->pend[i].dsmem);
    if (lmem)
        off += snprintf(body + off, sizeof body - (size_t)off, ",\"lmem\":%u",
                        lmem);
    if (occ > 0) {
        char ob[32];
        jw w;
        jw_init(&w, ob, sizeof ob);
        jw_f64(&w, occ, 4);
        off += snprintf(body + off, sizeof body - (size_t)off, ",\"occ\":%.*s",
                        (int)w.len, ob);
        if (lim && *lim) {
            imp_esc(limb, sizeof limb, lim, strlen(lim));
            snprintf(body + off, sizeof body - (size_t)off, ",\"lim\":%s",
                     limb);
        }
    }
    snprintf(key, sizeof key, "l:%s", body);
    cfg = imp_intern(m, key, body, name, 0);
    imp_define(m, RPT_DEVICE, cfg, m->pend[i].ts);
    imp_define(m, RPT_DEVICE, path, m->pend[i].ts);
    imp_body_begin(m, "kernel");
    if (m->pend[i].stream)
        jw_kv_u64(&m->w, "stream", m->pend[i].stream);
    if (m->pend[i].corr)
        jw_kv_u64(&m->w, "corr", m->pend[i].corr);
    jw_kv_u64(&m->w, "cfg", cfg);
    jw_key(&m->w, "grid");
    jw_arr_begin(&m->w);
    for (int k = 0; k < (grid[2] != 1 ? 3 : grid[1] != 1 ? 2 : 1); k++)
        jw_u64(&m->w, grid[k]);
    jw_arr_end(&m->w);
    jw_kv_u64(&m->w, "dur", m->pend[i].dur);
    if (path)
        jw_kv_u64(&m->w, "path", path);
    imp_body_end(m, RPT_DEVICE, m->pend[i].ts, RT_KERNEL);
}

void imp_flush_pending(imp *m)
{
    static const uint32_t unknown[3] = { 0, 1, 1 };
    for (size_t i = 0; i < m->npend; i++)
        if (m->pend[i].ts) /* not yet written by a kernel_detail */
            put_kernel(m, i, unknown, unknown, 0, 0, -1, NULL, 0);
    m->npend = 0;
}

void imp_on_kernel_batch(imp *m, jsonl_doc *d, uint64_t base)
{
    static const char *const want[] = { "dt_ns",     "kernel_id",
                                        "stream_id", "duration_ns",
                                        "corr_id",   "dyn_shared",
                                        "num_regs",  "has_details" };
    imp_rows it;
    imp_flush_pending(m);
    if (!imp_rows_open(&it, d, want, 8))
        return;
    while (imp_rows_next(&it)) {
        size_t p;
        if (m->npend == IMP_PENDING)
            imp_flush_pending(m);
        p = m->npend++;
        m->pend[p].ts = base + (uint64_t)imp_col_i64(&it, 0);
        m->pend[p].name = imp_odict_get(m, 'k', imp_col_u64(&it, 1));
        m->pend[p].stream = imp_col_u64(&it, 2);
        m->pend[p].dur = imp_col_u64(&it, 3);
        m->pend[p].corr = imp_col_u64(&it, 4);
        m->pend[p].dsmem = (uint32_t)imp_col_u64(&it, 5);
        m->pend[p].regs = (uint32_t)imp_col_u64(&it, 6);
    }
}

static void parse_dim(jsonl_doc *d, const char *key, uint32_t out[3])
{
    char b[64];
    unsigned x = 1, y = 1, z = 1;
    rpt_str(d, key, b, sizeof b);
    out[0] = 0;
    out[1] = out[2] = 1;
    if (sscanf(b, "(%u,%u,%u)", &x, &y, &z) == 3) {
        out[0] = x;
        out[1] = y;
        out[2] = z;
    }
}

void imp_on_kernel_detail(imp *m, jsonl_doc *d)
{
    uint64_t corr = rpt_u64(d, "corr_id", 0);
    uint32_t grid[3], block[3];
    char lim[32], scope[2048];
    const char *l = lim;
    for (size_t i = 0; i < m->npend; i++) {
        if (m->pend[i].corr != corr || !m->pend[i].ts)
            continue;
        parse_dim(d, "grid", grid);
        parse_dim(d, "block", block);
        rpt_str(d, "limiting_resource", lim, sizeof lim);
        rpt_str(d, "user_scope", scope, sizeof scope);
        if (strstr(lim, "reg"))
            l = "regs";
        else if (strstr(lim, "shared") || strstr(lim, "smem"))
            l = "smem";
        else if (strstr(lim, "warp"))
            l = "warps";
        else if (strstr(lim, "block"))
            l = "blocks";
        put_kernel(m, i, grid, block, (uint32_t)rpt_u64(d, "static_shared", 0),
                   (uint32_t)rpt_u64(d, "local_mem_per_thread_bytes", 0),
                   rpt_f64(d, "occupancy", -1), l, imp_path_of(m, scope));
        m->pend[i].ts = 0;
        return;
    }
}

void imp_on_memcpy_batch(imp *m, jsonl_doc *d, uint64_t base)
{
    static const char *const want[] = { "dt_ns", "stream_id", "duration_ns",
                                        "bytes", "copy_kind", "corr_id" };
    imp_rows it;
    if (!imp_rows_open(&it, d, want, 6))
        return;
    while (imp_rows_next(&it)) {
        uint64_t kind = imp_col_u64(&it, 4);
        uint64_t bytes = imp_col_u64(&it, 3);
        uint64_t dur = imp_col_u64(&it, 2);
        /* CUpti_ActivityMemcpyKind */
        const char *k = kind == 1 || kind == 3   ? "htod"
                        : kind == 2 || kind == 4 ? "dtoh"
                        : kind >= 5 && kind <= 8 ? "dtod"
                        : kind == 9              ? "htoh"
                        : kind == 10             ? "ptop"
                                                 : "unknown";
        imp_body_begin(m, "memcpy");
        if (kind == 10)
            jw_kv_u64(&m->w, "dst_dev", 0);
        if (imp_col_u64(&it, 1))
            jw_kv_u64(&m->w, "stream", imp_col_u64(&it, 1));
        if (imp_col_u64(&it, 5))
            jw_kv_u64(&m->w, "corr", imp_col_u64(&it, 5));
        jw_kv_str(&m->w, "kind", k);
        jw_kv_u64(&m->w, "bytes", bytes);
        jw_kv_u64(&m->w, "dur", dur);
        if (dur) {
            jw_key(&m->w, "gbps");
            jw_f64(&m->w, (double)bytes / dur, 2);
        }
        imp_body_end(m, RPT_DEVICE, base + (uint64_t)imp_col_i64(&it, 0),
                     RT_MEMCPY);
    }
}

void imp_on_sync_batch(imp *m, jsonl_doc *d, uint64_t base)
{
    static const char *const want[] = { "dt_ns", "duration_ns", "sync_type",
                                        "stream_id", "corr_id" };
    static const char *const kinds[] = { "unknown", "event", "stream_wait",
                                         "stream", "context" };
    imp_rows it;
    if (!imp_rows_open(&it, d, want, 5))
        return;
    while (imp_rows_next(&it)) {
        uint64_t k = imp_col_u64(&it, 2);
        imp_body_begin(m, "sync");
        if (imp_col_u64(&it, 3))
            jw_kv_u64(&m->w, "stream", imp_col_u64(&it, 3));
        if (imp_col_u64(&it, 4))
            jw_kv_u64(&m->w, "corr", imp_col_u64(&it, 4));
        jw_kv_str(&m->w, "kind", kinds[k <= 4 ? k : 0]);
        jw_kv_u64(&m->w, "dur", imp_col_u64(&it, 1));
        jw_kv_u64(&m->w, "tid", 0);
        imp_body_end(m, RPT_DEVICE, base + (uint64_t)imp_col_i64(&it, 0),
                     RT_SYNC);
    }
}

void imp_on_alloc_batch(imp *m, jsonl_doc *d, uint64_t base)
{
    static const char *const want[] = { "dt_ns",     "memory_op", "memory_kind",
                                        "address",   "bytes",     "device_id",
                                        "stream_id", "corr_id" };
    /* CUpti_ActivityMemoryKind */
    static const char *const kinds[] = { "unknown", "pageable", "pinned",
                                         "device",  "array",    "managed",
                                         "device",  "managed" };
    imp_rows it;
    if (!imp_rows_open(&it, d, want, 8))
        return;
    while (imp_rows_next(&it)) {
        uint64_t op = imp_col_u64(&it, 1), k, v;
        char addr[32];
        if (op != 1 && op != 2)
            continue;
        k = imp_col_u64(&it, 2);
        imp_body_begin(m, op == 1 ? "alloc" : "free");
        if ((v = imp_col_u64(&it, 5)))
            jw_kv_u64(&m->w, "dev", v);
        if ((v = imp_col_u64(&it, 6)))
            jw_kv_u64(&m->w, "stream", v);
        if ((v = imp_col_u64(&it, 7)))
            jw_kv_u64(&m->w, "corr", v);
        jw_kv_str(&m->w, "kind", kinds[k < 8 ? k : 0]);
        snprintf(addr, sizeof addr, "0x%llx",
                 (unsigned long long)imp_col_u64(&it, 3));
        jw_kv_str(&m->w, "addr", addr);
        jw_kv_u64(&m->w, "bytes", imp_col_u64(&it, 4));
        imp_body_end(m, RPT_DEVICE, base + (uint64_t)imp_col_i64(&it, 0),
                     op == 1 ? RT_ALLOC : RT_FREE);
    }
}

static void scope_line(imp *m, const char *type, int i, uint64_t ts,
                       uint64_t dur)
{
    imp_define(m, RPT_SCOPE, m->stack[i].path, ts);
    imp_body_begin(m, type);
    jw_kv_u64(&m->w, "id", m->stack[i].inst);
    jw_kv_u64(&m->w, "name", m->stack[i].name);
    jw_kv_u64(&m->w, "path", m->stack[i].path);
    if (i)
        jw_kv_u64(&m->w, "parent", m->stack[i - 1].inst);
    jw_kv_u64(&m->w, "depth", (uint64_t)i + 1);
    jw_kv_u64(&m->w, "tid", 0);
    if (!strcmp(type, "scope_end"))
        jw_kv_u64(&m->w, "dur", dur);
    imp_body_end(m, RPT_SCOPE, ts,
                 !strcmp(type, "scope_end") ? RT_SCOPE_END : RT_SCOPE_BEGIN);
}

void imp_on_scope_batch(imp *m, jsonl_doc *d, uint64_t base)
{
    static const char *const want[] = { "dt_ns", "scope_instance_id", "name_id",
                                        "event_type", "original_start_ns" };
    imp_rows it;
    if (!imp_rows_open(&it, d, want, 5))
        return;
    while (imp_rows_next(&it)) {
        uint64_t ts = base + (uint64_t)imp_col_i64(&it, 0);
        uint64_t inst = imp_col_u64(&it, 1) + 1; /* ids from 1 */
        uint64_t ev = imp_col_u64(&it, 3);
        if (ev == 0 || ev == 2) { /* begin, continuation-open */
            uint32_t name = imp_odict_get(m, 's', imp_col_u64(&it, 2));
            int k = m->depth;
            if (k == IMP_STACK || !name)
                continue;
            if (it.pos[4] >= 0 && imp_col_u64(&it, 4))
                ts = imp_col_u64(&it, 4);
            m->stack[k].inst = inst;
            m->stack[k].ts = ts;
            m->stack[k].name = name;
            m->stack[k].path =
                imp_path_id(m, k ? m->stack[k - 1].path : 0, name, k + 1);
            m->depth++;
            scope_line(m, "scope_begin", k, ts, 0);
        } else if (ev == 1 || ev == 3) { /* end, continuation-close */
            int k = m->depth - 1;
            while (k >= 0 && m->stack[k].inst != inst)
                k--;
            if (k < 0)
                continue;
            /* inner scopes still open end with it */
            for (int j = m->depth - 1; j >= k; j--)
                scope_line(m, "scope_end", j, ts,
                           ts > m->stack[j].ts ? ts - m->stack[j].ts : 0);
            m->depth = k;
        }
    }
}

void imp_on_device_metrics(imp *m, jsonl_doc *d, uint64_t base)
{
    static const char *const want[] = {
        "dt_ns",         "device_id",      "gpu_util",  "mem_util",
        "temp_c",        "power_mw",       "used_mib",  "total_mib",
        "clock_sm",      "fan_speed_pct",  "energy_uj", "clock_mem",
        "ecc_corrected", "ecc_uncorrected"
    };
    imp_rows it;
    if (!imp_rows_open(&it, d, want, 14))
        return;
    while (imp_rows_next(&it)) {
        imp_body_begin(m, "gpu");
        jw_kv_u64(&m->w, "dev", imp_col_u64(&it, 1));
        jw_kv_u64(&m->w, "util", imp_col_u64(&it, 2));
        jw_kv_u64(&m->w, "mem_util", imp_col_u64(&it, 3));
        jw_kv_u64(&m->w, "mem_used", imp_col_u64(&it, 6) << 20);
        jw_kv_u64(&m->w, "mem_total", imp_col_u64(&it, 7) << 20);
        jw_kv_i64(&m->w, "temp", imp_col_i64(&it, 4));
        jw_kv_u64(&m->w, "power", imp_col_u64(&it, 5));
        if (it.pos[9] >= 0)
            jw_kv_u64(&m->w, "fan", imp_col_u64(&it, 9));
        jw_kv_u64(&m->w, "clk_sm", imp_col_u64(&it, 8));
        jw_kv_u64(&m->w, "clk_mem", imp_col_u64(&it, 11));
        jw_kv_u64(&m->w, "clk_gfx", 0);
        if (it.pos[12] >= 0 && it.pos[13] >= 0) {
            jw_kv_u64(&m->w, "ecc_corr", imp_col_u64(&it, 12));
            jw_kv_u64(&m->w, "ecc_uncorr", imp_col_u64(&it, 13));
        }
        if (it.pos[10] >= 0)
            jw_kv_u64(&m->w, "energy", imp_col_u64(&it, 10) / 1000);
        imp_body_end(m, RPT_SYSTEM, base + (uint64_t)imp_col_i64(&it, 0),
                     RT_GPU);
    }
}

void imp_on_host_metrics(imp *m, jsonl_doc *d, uint64_t base)
{
    static const char *const want[] = { "dt_ns", "cpu_pct_x100", "ram_used_mib",
                                        "ram_total_mib" };
    imp_rows it;
    if (!imp_rows_open(&it, d, want, 4))
        return;
    while (imp_rows_next(&it)) {
        imp_body_begin(m, "host");
        jw_key(&m->w, "cpu");
        jw_f64(&m->w, imp_col_u64(&it, 1) / 100.0, 1);
        jw_kv_u64(&m->w, "ncpu", 0);
        jw_kv_u64(&m->w, "ram_used", imp_col_u64(&it, 2) << 20);
        jw_kv_u64(&m->w, "ram_total", imp_col_u64(&it, 3) << 20);
        jw_kv_u64(&m->w, "swap_used", 0);
        jw_key(&m->w, "load1");
        jw_i64(&m->w, -1);
        jw_kv_u64(&m->w, "proc_rss", 0);
        imp_body_end(m, RPT_SYSTEM, base + (uint64_t)imp_col_i64(&it, 0),
                     RT_HOST);
    }
}

void imp_on_memset(imp *m, jsonl_doc *d)
{
    uint64_t s = rpt_u64(d, "start_ns", 0), e = rpt_u64(d, "end_ns", s), v;
    imp_body_begin(m, "memset");
    if ((v = num_or_str(d, "device_id")))
        jw_kv_u64(&m->w, "dev", v);
    if ((v = num_or_str(d, "stream_id")))
        jw_kv_u64(&m->w, "stream", v);
    if ((v = rpt_u64(d, "corr_id", 0)))
        jw_kv_u64(&m->w, "corr", v);
    jw_kv_u64(&m->w, "bytes", rpt_u64(d, "bytes", 0));
    jw_kv_u64(&m->w, "dur", e > s ? e - s : 0);
    imp_body_end(m, RPT_DEVICE, s, RT_MEMSET);
}

void imp_on_marker(imp *m, jsonl_doc *d)
{
    char text[101];
    rpt_str(d, "name", text, sizeof text);
    imp_body_begin(m, "marker");
    jw_kv_str(&m->w, "text", text);
    jw_kv_u64(&m->w, "tid", 0);
    imp_body_end(m, RPT_SCOPE, rpt_u64(d, "start_ns", m->start), RT_MARKER);
}
