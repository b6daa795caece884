/*
 * import_prof.c - `gpufl import`: the original's profile_sample_batch
 * (docs/report.md#gpufl-import) as gpufl `sass` and `pcsamp` lines
 * (docs/events.md).  The original writes one row per metric: sample_kind
 * 1 rows carry one SASS metric (metric_id names it through metric_dict),
 * sample_kind 0 rows one PC-sampling stall reason (metric_id names the
 * reason) and its sample count, sample_kind 2 rows (isa_source_map) map
 * instructions to source lines and are no event.  Rows of one batch with
 * the same (device, function, pc, scope) are folded into one line; the
 * fold table holds one batch's keys, nothing is kept between batches.
 */
#include <stdlib.h>
#include <string.h>

#include "common/jw.h"
#include "import_int.h"

/* The SASS metrics the original configures (CUPTI's names, as in
 * source_cupti_sass.c) -> inst, thread_inst, sectors, sectors_ideal.  The ideal sectors of
 * loads and of stores (the pre-sm_120 fallback) add up to sectors_ideal. */
static int sass_slot(const char *name)
{
    static const struct {
        const char *name;
        int slot;
    } map[] = {
        { "smsp__sass_inst_executed", 0 },
        { "smsp__sass_thread_inst_executed", 1 },
        { "smsp__sass_sectors_mem_global", 2 },
        { "smsp__sass_sectors_mem_global_ideal", 3 },
        { "smsp__sass_sectors_mem_global_op_ld_ideal", 3 },
        { "smsp__sass_sectors_mem_global_op_st_ideal", 3 },
    };
    for (size_t i = 0; name && i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(name, map[i].name))
            return map[i].slot;
    return -1;
}

/* The original's name for id in one of its dictionaries, or NULL. */
static const char *orig_name(imp *m, char kind, uint64_t orig)
{
    uint32_t id = imp_odict_get(m, kind, orig);
    return id && id <= m->ne ? m->byid[id]->key + 2 : NULL; /* "n:" */
}

/* docs/events.md pcsamp: the prefix goes; bytes other than A-Z a-z 0-9 _
 * . become _; at most 63 bytes; an unknown name is "reason_<index>". */
static int reason_key(imp *m, const char *name, uint64_t index)
{
    static const char pre[] = "smsp__pcsamp_warps_issue_stalled_";
    char key[64];
    size_t n = 0;
    int k;
    if (name && !strncmp(name, pre, sizeof pre - 1) && name[sizeof pre - 1])
        name += sizeof pre - 1;
    for (; name && name[n] && n < sizeof key - 1; n++) {
        char c = name[n];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9') || c == '_' || c == '.';
        key[n] = ok ? c : '_';
    }
    key[n] = 0;
    if (!n)
        snprintf(key, sizeof key, "reason_%llu", (unsigned long long)index);
    for (k = 0; k < m->nrkey && strcmp(m->rkey[k], key); k++)
        ;
    if (k == m->nrkey) {
        if (k == IMP_RKEYS)
            return -1;
        memcpy(m->rkey[k], key, sizeof key);
        m->nrkey++;
    }
    return k;
}

static uint64_t fold_hash(const ifold *f)
{
    uint64_t h = 1469598103934665603ull;
    const uint64_t v[5] = { f->kind, f->dev, f->func, f->pc, f->scope };
    for (int i = 0; i < 5; i++)
        h = (h ^ v[i]) * 0x9e3779b97f4a7c15ull;
    return h ^ h >> 29;
}

static int same(const ifold *a, const ifold *b)
{
    return a->kind == b->kind && a->dev == b->dev && a->func == b->func &&
           a->pc == b->pc && a->scope == b->scope;
}

/* The fold of key k (k->ts, file, line kept when new), NULL when out of
 * memory. */
static ifold *fold_get(imp *m, const ifold *k)
{
    size_t i;
    if ((m->nfold + 1) * 2 > m->fcap) {
        size_t nc = m->fcap ? m->fcap * 2 : 1024;
        ifold *nf = realloc(m->fold, nc / 2 * sizeof *nf);
        uint32_t *ni;
        if (!nf)
            return NULL;
        m->fold = nf;
        if (!(ni = calloc(nc, sizeof *ni)))
            return NULL;
        free(m->fidx);
        m->fidx = ni;
        m->fcap = nc;
        for (size_t j = 0; j < m->nfold; j++) {
            for (i = fold_hash(&m->fold[j]) & (nc - 1); ni[i];
                 i = (i + 1) & (nc - 1))
                ;
            ni[i] = (uint32_t)j + 1;
        }
    }
    for (i = fold_hash(k) & (m->fcap - 1); m->fidx[i];
         i = (i + 1) & (m->fcap - 1))
        if (same(&m->fold[m->fidx[i] - 1], k))
            return &m->fold[m->fidx[i] - 1];
    m->fidx[i] = (uint32_t)m->nfold + 1;
    m->fold[m->nfold] = *k;
    return &m->fold[m->nfold++];
}

static void note_unknown(imp *m, const char *name, uint64_t id)
{
    char b[96];
    size_t l = strlen(m->unknown_metrics);
    if (name)
        snprintf(b, sizeof b, "%.80s", name);
    else
        snprintf(b, sizeof b, "metric_id %llu", (unsigned long long)id);
    if (!strstr(m->unknown_metrics, b) &&
        l + strlen(b) + 3 < sizeof m->unknown_metrics)
        snprintf(m->unknown_metrics + l, sizeof m->unknown_metrics - l, "%s%s",
                 l ? ", " : "", b);
}

/* The fields both line types share, up to pc. */
static void fold_head(imp *m, const ifold *f, const char *type, uint32_t *path)
{
    uint32_t func = imp_odict_get(m, 'f', f->func);
    uint32_t file = imp_odict_get(m, 'F', f->file);
    const char *scope = orig_name(m, 's', f->scope);
    *path = scope ? imp_path_of(m, scope) : 0;
    imp_define(m, RPT_SCOPE, func, f->ts);
    imp_define(m, RPT_SCOPE, file, f->ts);
    imp_define(m, RPT_SCOPE, *path, f->ts);
    imp_body_begin(m, type);
    if (f->dev)
        jw_kv_u64(&m->w, "dev", f->dev);
    jw_kv_u64(&m->w, "func", func);
    if (file)
        jw_kv_u64(&m->w, "file", file);
    if (file && f->line)
        jw_kv_u64(&m->w, "line", f->line);
    jw_kv_u64(&m->w, "pc", f->pc);
}

static void put_fold(imp *m, ifold *f)
{
    uint32_t path;
    if (f->kind == 1) {
        /* a ratio of a pair with one half absent would be false
         * (divergence 1, coalescing 0): such a pair is written as 0, 0 */
        for (int p = 0; p < 2; p++) {
            unsigned bits = f->has >> (2 * p) & 3;
            if (bits && bits != 3) {
                m->half_pairs++;
                f->v[2 * p] = f->v[2 * p + 1] = 0;
                f->has &= (uint8_t) ~(3u << (2 * p));
            }
        }
        if (!f->has)
            return;
        fold_head(m, f, "sass", &path);
        jw_kv_u64(&m->w, "inst", f->v[0]);
        jw_kv_u64(&m->w, "thread_inst", f->v[1]);
        jw_kv_u64(&m->w, "sectors", f->v[2]);
        jw_kv_u64(&m->w, "sectors_ideal", f->v[3]);
        if (path)
            jw_kv_u64(&m->w, "path", path);
        imp_body_end(m, RPT_SCOPE, f->ts, RT_SASS);
        return;
    }
    if (!f->nr)
        return;
    fold_head(m, f, "pcsamp", &path);
    {
        uint64_t total = 0;
        jw_key(&m->w, "stalls");
        jw_obj_begin(&m->w);
        for (int r = 0; r < f->nr; r++) {
            jw_kv_u64(&m->w, m->rkey[f->rid[r]], f->rn[r]);
            total += f->rn[r];
        }
        jw_obj_end(&m->w);
        jw_kv_u64(&m->w, "samples", total);
    }
    if (path)
        jw_kv_u64(&m->w, "path", path);
    imp_body_end(m, RPT_SCOPE, f->ts, RT_PCSAMP);
}

void imp_on_profile_batch(imp *m, jsonl_doc *d, uint64_t base)
{
    static const char *const want[] = {
        "dt_ns",       "corr_id",       "device_id",      "function_id",
        "pc_offset",   "metric_id",     "metric_value",   "stall_reason",
        "sample_kind", "scope_name_id", "source_file_id", "source_line"
    };
    imp_rows it;
    int kept = 0; /* rows not converted: the line is also copied */
    m->nfold = 0;
    if (m->fidx)
        memset(m->fidx, 0, m->fcap * sizeof *m->fidx);
    if (!imp_rows_open(&it, d, want, 12))
        return;
    while (imp_rows_next(&it)) {
        uint64_t kind = imp_col_u64(&it, 8), mid = imp_col_u64(&it, 5);
        uint64_t val = imp_col_u64(&it, 6);
        const char *name = orig_name(m, 'm', mid);
        ifold k, *f;
        int slot = -1, rid = -1, r;
        if (kind > 2) {
            m->prof_bad_rows++;
            kept = 1;
            continue;
        }
        m->prof_rows[kind]++;
        if (kind == 2) {
            kept = 1;
            continue;
        }
        if (kind == 1 && (slot = sass_slot(name)) < 0) {
            m->unknown_metric_rows++;
            note_unknown(m, name, mid);
            kept = 1;
            continue;
        }
        if (kind == 0 && (rid = reason_key(m, name, imp_col_u64(&it, 7))) < 0) {
            m->dropped_reasons++; /* more than IMP_RKEYS distinct keys */
            m->dropped_samples += val;
            continue;
        }
        memset(&k, 0, sizeof k);
        k.kind = (uint8_t)kind;
        k.dev = imp_col_u64(&it, 2);
        k.func = imp_col_u64(&it, 3);
        k.pc = imp_col_u64(&it, 4);
        k.scope = imp_col_u64(&it, 9);
        k.ts = base + (uint64_t)imp_col_i64(&it, 0);
        k.file = imp_col_u64(&it, 10);
        k.line = imp_col_u64(&it, 11);
        if (!(f = fold_get(m, &k)))
            return;
        if (!f->file && k.file) {
            f->file = k.file;
            f->line = k.line;
        }
        if (kind == 1) {
            f->v[slot] += val;
            f->has |= (uint8_t)(1u << slot);
            continue;
        }
        for (r = 0; r < f->nr && f->rid[r] != rid; r++)
            ;
        if (r == f->nr) {
            if (r == IMP_REASONS) {
                /* the 9th reason of a line: left out, also from samples */
                m->dropped_reasons++;
                m->dropped_samples += val;
                continue;
            }
            f->rid[r] = (uint16_t)rid;
            f->rn[r] = 0;
            f->nr++;
        }
        f->rn[r] += val;
    }
    for (size_t i = 0; i < m->nfold; i++)
        put_fold(m, &m->fold[i]);
    if (kept)
        imp_unconverted(m, "profile_sample_batch");
}
