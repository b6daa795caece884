/*
 * source_cupti_sass.c - the "sass" engine: per-instruction counters from
 * CUPTI's SASS metrics API (cupti_sass_metrics.h;
 * docs/cupti-internals.md#sass-metrics), written as `sass` lines per
 * GFL_SCOPE.
 *
 * Metrics: warp-level and thread-level instructions executed (their ratio
 * is the SIMT efficiency; 1 - it is divergence) and global-memory sectors
 * against the ideal count (coalescing).  The ideal-sector metric is
 * smsp__sass_sectors_mem_global_ideal where the chip offers it, else the
 * sum of the _op_ld_ideal and _op_st_ideal variants (much slower to
 * collect on older chips).  Chips differ: every id is looked up by
 * name, every value matched by id.
 *
 * Sequence (as NVIDIA's sass_metrics sample): cuptiProfilerInitialize
 * (source_cupti_prof.c), per device the metric ids and one SetConfig, per
 * context Enable with lazy patching (a function is patched at its first
 * launch); at each scope boundary GetDataProperties + FlushData (which
 * also resets CUPTI's counters); Disable per context and UnsetConfig per
 * device at the end.
 * Everything but the counters' decoding runs under prof.lock.
 */
#include "cupti_int.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

#define SASS_MAX_RECORDS (1u << 20) /* records per flush, a bound */

static const char *const metric_name[CUPTI_SASS_N] = {
    "smsp__sass_inst_executed",
    "smsp__sass_thread_inst_executed",
    "smsp__sass_sectors_mem_global",
    "smsp__sass_sectors_mem_global_ideal",
    "smsp__sass_sectors_mem_global_op_ld_ideal",
    "smsp__sass_sectors_mem_global_op_st_ideal",
};

#define PSYM(field, name) (p->field = (__typeof__(p->field))dlsym(s->lib, name))

/* Metric ids this device's chip offers; 0 or an error recorded in why. */
static int resolve(cupti_state *s, uint32_t dev, char *why, size_t whylen)
{
    cupti_prof *p = &s->prof;
    gfl_cupti_chip_name_params cn;
    uint64_t *id = p->sass_id[dev];
    int rc;
    memset(&cn, 0, sizeof cn);
    cn.struct_size = GFL_CUPTI_CHIP_NAME_SIZE;
    cn.device_index = dev;
    rc = p->GetChipName(&cn);
    if (rc || !cn.chip_name)
        return cupti_prof_refusal(s, rc, why, whylen,
                                  "sass: cuptiDeviceGetChipName(%u)", dev);
    for (int i = 0; i < CUPTI_SASS_N; i++) {
        gfl_cupti_sass_properties_params q;
        memset(&q, 0, sizeof q);
        q.struct_size = GFL_CUPTI_SASS_PROPERTIES_SIZE;
        q.chip_name = cn.chip_name;
        q.metric_name = metric_name[i];
        /* a name the chip does not offer is skipped, not fatal */
        id[i] = p->SassGetProperties(&q) == 0 ? q.metric.metric_id : 0;
    }
    if (id[CUPTI_SASS_IDEAL]) /* the split variants cost far more */
        id[CUPTI_SASS_IDEAL_LD] = id[CUPTI_SASS_IDEAL_ST] = 0;
    /* which names this chip has is known only on a GPU: say it */
    client_log(GPUFL_LOG_INFO,
               "sass: device %u, chip %.40s: inst %s, thread_inst %s, "
               "sectors %s, sectors_ideal %s",
               dev, cn.chip_name, id[CUPTI_SASS_INST] ? "yes" : "no",
               id[CUPTI_SASS_THREAD] ? "yes" : "no",
               id[CUPTI_SASS_SECTORS] ? "yes" : "no",
               id[CUPTI_SASS_IDEAL]                                 ? "yes"
               : id[CUPTI_SASS_IDEAL_LD] && id[CUPTI_SASS_IDEAL_ST] ? "ld+st"
                                                                    : "no");
    if (!id[CUPTI_SASS_INST] || !id[CUPTI_SASS_THREAD]) {
        snprintf(why, whylen, "sass: chip %.40s (device %u) offers no %s",
                 cn.chip_name, dev, metric_name[id[CUPTI_SASS_INST] ? 1 : 0]);
        return GPUFL_EUNAVAIL;
    }
    p->sass_ready[dev] = 1;
    return 0;
}

int cupti_sass_open(cupti_state *s, char *why, size_t whylen)
{
    cupti_prof *p = &s->prof;
    PSYM(SassGetProperties, "cuptiSassMetricsGetProperties");
    PSYM(SassSetConfig, "cuptiSassMetricsSetConfig");
    PSYM(SassUnsetConfig, "cuptiSassMetricsUnsetConfig");
    PSYM(SassEnable, "cuptiSassMetricsEnable");
    PSYM(SassDisable, "cuptiSassMetricsDisable");
    PSYM(SassGetDataProperties, "cuptiSassMetricsGetDataProperties");
    PSYM(SassFlushData, "cuptiSassMetricsFlushData");
    if (!p->SassGetProperties || !p->SassSetConfig || !p->SassUnsetConfig ||
        !p->SassEnable || !p->SassDisable || !p->SassGetDataProperties ||
        !p->SassFlushData || !p->GetChipName) {
        snprintf(why, whylen,
                 "sass: this CUPTI lacks the SASS metrics API "
                 "(cuptiSassMetrics*, cuptiDeviceGetChipName)");
        return GPUFL_EUNAVAIL;
    }
    memset(p->sass_id, 0, sizeof p->sass_id);
    memset(p->sass_ready, 0, sizeof p->sass_ready);
    /* devices known now (not injected, the profiler initialised): refuse
     * before the header says on.  Injected, devices are resolved at their
     * first context, after cuptiProfilerInitialize (ctx_profilable). */
    for (int d = 0; !s->deferred_devices && d < s->n_devs; d++) {
        int rc = resolve(s, (uint32_t)d, why, whylen);
        if (rc)
            return rc;
    }
    return 0;
}

int cupti_sass_ctx_on(cupti_state *s, cupti_prof_ctx *c)
{
    cupti_prof *p = &s->prof;
    gfl_cupti_sass_enable_params en;
    int rc;
    if (!p->sass_ready[c->dev]) {
        char why[SRC_REASON_LEN];
        if (resolve(s, c->dev, why, sizeof why)) {
            p->n_errors++;
            if (!p->error[0])
                snprintf(p->error, sizeof p->error, "%s", why);
            return -1;
        }
    }
    if (!p->sass_config[c->dev]) {
        gfl_cupti_sass_config cfg[CUPTI_SASS_N];
        gfl_cupti_sass_set_config_params sc;
        size_t n = 0;
        for (int i = 0; i < CUPTI_SASS_N; i++)
            if (p->sass_id[c->dev][i]) {
                memset(&cfg[n], 0, sizeof cfg[n]);
                cfg[n].metric_id = p->sass_id[c->dev][i];
                cfg[n].output_granularity = GFL_CUPTI_SASS_GRANULARITY_GPU;
                n++;
            }
        memset(&sc, 0, sizeof sc);
        sc.struct_size = GFL_CUPTI_SASS_SET_CONFIG_SIZE;
        sc.num_configs = n;
        sc.configs = cfg;
        sc.device_index = c->dev;
        rc = p->SassSetConfig(&sc);
        if (rc) {
            cupti_prof_error(s, "cuptiSassMetricsSetConfig", rc);
            return -1;
        }
        p->sass_config[c->dev] = 1;
    }
    memset(&en, 0, sizeof en);
    en.struct_size = GFL_CUPTI_SASS_ENABLE_SIZE;
    en.ctx = c->ctx;
    en.lazy_patching = 1; /* eager patching stalls on big libraries */
    rc = p->SassEnable(&en);
    if (rc) {
        cupti_prof_error(s, "cuptiSassMetricsEnable", rc);
        return -1;
    }
    return 0;
}

/* One instruction's values, summed over every record that names it:
 * CUPTI may return one record per (instruction, metric) or one per
 * instruction with every metric; values are matched by id either way. */
typedef struct sass_acc {
    const char *name;
    uint32_t crc, findex, pc;
    uint64_t v[CUPTI_SASS_N];
} sass_acc;

static sass_acc *acc_find(sass_acc *acc, uint32_t *slots, size_t mask,
                          size_t *n, const gfl_cupti_sass_data *d)
{
    uint64_t h = ((uint64_t)d->cubin_crc * 0x9E3779B97F4A7C15ull) ^
                 ((uint64_t)d->function_index << 32) ^ d->pc_offset;
    size_t i = (size_t)((h * 0xff51afd7ed558ccdull) >> 20) & mask;
    for (;; i = (i + 1) & mask) {
        sass_acc *a;
        if (!slots[i]) {
            a = &acc[*n];
            memset(a, 0, sizeof *a);
            a->name = d->function_name;
            a->crc = d->cubin_crc;
            a->findex = d->function_index;
            a->pc = d->pc_offset;
            slots[i] = (uint32_t)++ * n;
            return a;
        }
        a = &acc[slots[i] - 1];
        if (a->crc == d->cubin_crc && a->findex == d->function_index &&
            a->pc == d->pc_offset &&
            (a->name == d->function_name ||
             (a->name && d->function_name &&
              !strcmp(a->name, d->function_name))))
            return a;
    }
}

static void emit(cupti_state *s, const cupti_prof_ctx *c, const sass_acc *a,
                 uint64_t scope, uint32_t path, uint32_t *last_id,
                 const char **last_name)
{
    cupti_prof *p = &s->prof;
    gpufl_sass r;
    if (!a->v[CUPTI_SASS_INST] && !a->v[CUPTI_SASS_THREAD] &&
        !a->v[CUPTI_SASS_SECTORS])
        return; /* patched, but not executed since the last flush */
    memset(&r, 0, sizeof r);
    r.sz = sizeof r;
    r.device = c->dev;
    if (!*last_name || !a->name || strcmp(*last_name, a->name) != 0)
        *last_id = a->name ? gpufl_intern(a->name) : 0;
    *last_name = a->name;
    r.func_id = *last_id;
    r.pc = a->pc;
    r.inst_executed = a->v[CUPTI_SASS_INST];
    r.thread_inst_executed = a->v[CUPTI_SASS_THREAD];
    r.gmem_sectors = a->v[CUPTI_SASS_SECTORS];
    r.gmem_sectors_ideal = a->v[CUPTI_SASS_IDEAL] + a->v[CUPTI_SASS_IDEAL_LD] +
                           a->v[CUPTI_SASS_IDEAL_ST];
    cupti_prof_source(s, a->crc, 1, a->name, r.func_id, r.pc, &r.file_id,
                      &r.line);
    r.scope = scope;
    r.path_id = path;
    if (gpufl_record_sass(&r) == GPUFL_OK)
        p->n_lines++;
}

/* Sum the records by instruction, then write one line per instruction. */
static void emit_all(cupti_state *s, const cupti_prof_ctx *c,
                     const gfl_cupti_sass_data *data, size_t n, size_t m,
                     uint64_t scope, uint32_t path)
{
    const uint64_t *id = s->prof.sass_id[c->dev];
    size_t cap = 16, na = 0;
    sass_acc *acc;
    uint32_t *slots;
    const char *last_name = NULL;
    uint32_t last_id = 0;
    while (cap < 2 * n)
        cap *= 2;
    acc = calloc(n, sizeof *acc);
    slots = calloc(cap, sizeof *slots);
    if (!acc || !slots) {
        free(acc);
        free(slots);
        cupti_prof_error(s, "sass flush (out of memory)",
                         GFL_CUPTI_ERROR_OUT_OF_MEMORY);
        return;
    }
    for (size_t k = 0; k < n; k++) {
        sass_acc *a = acc_find(acc, slots, cap - 1, &na, &data[k]);
        for (size_t j = 0; j < m; j++)
            for (int x = 0; x < CUPTI_SASS_N; x++)
                if (id[x] && data[k].values[j].metric_id == id[x])
                    a->v[x] += data[k].values[j].value;
    }
    for (size_t k = 0; k < na; k++)
        emit(s, c, &acc[k], scope, path, &last_id, &last_name);
    free(acc);
    free(slots);
}

void cupti_sass_collect(cupti_state *s, uint64_t scope, uint32_t path)
{
    cupti_prof *p = &s->prof;
    for (int i = 0; i < p->n_ctx; i++) {
        cupti_prof_ctx *c = &p->ctxs[i];
        gfl_cupti_sass_data_props_params dp;
        gfl_cupti_sass_flush_params fp;
        gfl_cupti_sass_data *data;
        gfl_cupti_sass_instance_value *vals;
        size_t n, m;
        int rc;
        memset(&dp, 0, sizeof dp);
        dp.struct_size = GFL_CUPTI_SASS_DATA_PROPS_SIZE;
        dp.ctx = c->ctx;
        rc = p->SassGetDataProperties(&dp);
        if (rc) {
            cupti_prof_error(s, "cuptiSassMetricsGetDataProperties", rc);
            continue;
        }
        n = dp.num_records;
        m = dp.num_instances;
        if (!n || !m)
            continue;
        if (n > SASS_MAX_RECORDS || m > 4096) {
            cupti_prof_error(s,
                             "cuptiSassMetricsGetDataProperties (more "
                             "records than gpufl reads at once)",
                             GFL_CUPTI_ERROR_MAX_LIMIT_REACHED);
            continue;
        }
        data = calloc(n, sizeof *data);
        vals = calloc(n * m, sizeof *vals);
        if (!data || !vals) {
            free(data);
            free(vals);
            cupti_prof_error(s, "sass flush (out of memory)",
                             GFL_CUPTI_ERROR_OUT_OF_MEMORY);
            continue;
        }
        for (size_t k = 0; k < n; k++) {
            /* cupti_sass_metrics.h: "[in] equal to
             * CUpti_SassMetricsFlushData_Params_STRUCT_SIZE" (40, not the
             * record's own 48; NVIDIA's sample leaves it unset) */
            data[k].struct_size = GFL_CUPTI_SASS_FLUSH_SIZE;
            data[k].values = vals + k * m;
        }
        memset(&fp, 0, sizeof fp);
        fp.struct_size = GFL_CUPTI_SASS_FLUSH_SIZE;
        fp.ctx = c->ctx;
        fp.num_records = n;
        fp.num_instances = m;
        fp.data = data;
        rc = p->SassFlushData(&fp);
        if (rc) {
            cupti_prof_error(s, "cuptiSassMetricsFlushData", rc);
        } else {
            emit_all(s, c, data, n, m, scope, path);
        }
        /* CUPTI allocates each record's name; its sample frees them */
        for (size_t k = 0; k < n; k++)
            free((void *)(uintptr_t)data[k].function_name);
        free(data);
        free(vals);
    }
}

void cupti_sass_ctx_off(cupti_state *s, cupti_prof_ctx *c)
{
    cupti_prof *p = &s->prof;
    gfl_cupti_sass_disable_params q;
    int rc;
    memset(&q, 0, sizeof q);
    q.struct_size = GFL_CUPTI_SASS_DISABLE_SIZE;
    q.ctx = c->ctx;
    rc = p->SassDisable(&q);
    if (rc)
        cupti_prof_error(s, "cuptiSassMetricsDisable", rc);
    else
        p->n_dropped += q.num_dropped; /* unflushed: none after a flush */
}

void cupti_sass_close(cupti_state *s)
{
    cupti_prof *p = &s->prof;
    for (uint32_t d = 0; d < GPU_MAX_DEVICES; d++) {
        gfl_cupti_sass_unset_config_params q;
        int rc;
        if (!p->sass_config[d])
            continue;
        memset(&q, 0, sizeof q);
        q.struct_size = GFL_CUPTI_SASS_UNSET_CONFIG_SIZE;
        q.device_index = d;
        rc = p->SassUnsetConfig(&q);
        if (rc)
            cupti_prof_error(s, "cuptiSassMetricsUnsetConfig", rc);
        p->sass_config[d] = 0;
    }
}
