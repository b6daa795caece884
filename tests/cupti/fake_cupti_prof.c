/*
 * fake_cupti_prof.c - the SASS metrics and PC sampling half of the fake
 * libcupti.so.13 (docs/cupti-internals.md#testing-without-a-gpu): the real
 * entry points with CUPTI's contracts, driven by the script.
 *
 * Contracts enforced (a violation returns an error the engine must report,
 * and is printed): every params struct's size field equals the header's
 * *_STRUCT_SIZE value; the profiler API (device support, chip name, SASS
 * metric look-ups and configuration) answers CUPTI_ERROR_NOT_INITIALIZED
 * before cuptiProfilerInitialize, which every NVIDIA sample calls first;
 * cuptiProfilerInitialize itself refuses to run inside cuInit (NVIDIA's
 * injection sample initialises the profiler in the CONTEXT_CREATED
 * callback, never in InitializeInjection; what the real one does inside
 * cuInit is unverified); PC sampling works without it, as in NVIDIA's PC
 * sampling injection sample; SetConfig twice on a device without UnsetConfig,
 * Enable without a config, GetDataProperties/FlushData outside
 * Enable..Disable are CUPTI_ERROR_INVALID_OPERATION; PC sampling once per
 * device; stall reasons have chip-specific indices (deliberately not
 * 0..n-1) so index-based code writes the wrong names; continuous PC
 * sampling must be drained (GetData) after a module load-unload-load
 * (cupti_pcsampling.h): what the real one does otherwise is unspecified,
 * the fake drops the samples gathered before the reload.
 *
 * Model: the first launch creates context 0 on device 0 (CONTEXT_CREATED)
 * and loads one module (MODULE_LOADED) whose "cubin" is a text listing the
 * functions.  Each launch of a function adds its scripted per-launch
 * values to the counters of its instructions (SASS) or PCs (sampling);
 * FlushData returns one record per (instruction, metric), the metrics in
 * reverse order of configuration, and resets; GetData hands out at most
 * pcs_per_call PCs per call, the rest stays "remaining".
 *
 * Script directives:
 *   sass func=F pc=P inst=W thread=T sectors=S ideal=I
 *   pcsamp func=F pc=P stalls=NAME:N,NAME:N...
 *   sass_noideal | lineinfo | pcs_per_call N | pcs_hwfull | pcs_dropped N
 *   sass_crc_other    (SASS records carry a 32-bit CRC that is not the
 *                      low half of cuptiGetCubinCrc's: how the two relate
 *                      is undocumented)
 *   pcs_noreasons     (GetNumStallReasons reports 0, as when CUPTI and
 *                      the driver do not match)
 *   module_reload N   (the module is unloaded and loaded again as the
 *                      N-th launch runs, before its samples; from 1)
 *   prof_fail {profinit|sassconfig|sassenable|pcsenable} CODE
 *   unsupported vgpu
 */
#include "client/cupti_prof_abi_int.h"
#include "fake_cupti_int.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_PCS 64
#define MAX_NAMES 64

typedef struct sass_pc {
    char func[64];
    uint32_t pc;
    uint64_t val[4]; /* inst, thread, sectors, ideal per launch */
    uint64_t acc[4];
    int patched;
} sass_pc;

typedef struct pcs_pc {
    char func[64];
    uint32_t pc;
    uint32_t n;
    uint32_t index[8], samples[8], acc[8];
} pcs_pc;

/* the fake chip's stall reasons: indices chosen not to be 0..n-1 */
static const struct {
    uint32_t index;
    const char *name;
} reasons[] = {
    { 7, "smsp__pcsamp_warps_issue_stalled_long_scoreboard" },
    { 3, "smsp__pcsamp_warps_issue_stalled_barrier" },
    { 11, "smsp__pcsamp_warps_issue_stalled_selected" },
    { 42, "smsp__pcsamp_warps_issue_stalled_mio_throttle" },
    { 5, "smsp__pcsamp_sample_count" },
    { 19, "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle" },
    { 23, "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued" },
};
#define N_REASONS (sizeof reasons / sizeof reasons[0])

/* metric ids: arbitrary, as on a real chip */
static const struct {
    uint64_t id;
    const char *name;
} metrics[] = {
    { 0x51a1, "smsp__sass_inst_executed" },
    { 0x3b07, "smsp__sass_thread_inst_executed" },
    { 0x9c2e, "smsp__sass_sectors_mem_global" },
    { 0x77d4, "smsp__sass_sectors_mem_global_ideal" },
    { 0x1f00, "smsp__sass_sectors_mem_global_op_ld_ideal" },
    { 0x1f01, "smsp__sass_sectors_mem_global_op_st_ideal" },
};
#define N_METRICS (sizeof metrics / sizeof metrics[0])

static pthread_mutex_t pmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static int ctx_obj[1];
static int ctx_made;
static char cubin[4096];
static size_t cubin_len;
static char names[MAX_NAMES][64];
static int n_names;
static sass_pc spc[MAX_PCS];
static int n_spc;
static pcs_pc ppc[MAX_PCS];
static int n_ppc;
static int noideal, lineinfo, pcs_per_call = 2, hwfull, pcs_dropped,
                              unsupported_vgpu, module_reload, n_launches,
                              pcs_noreasons, sass_crc_other;
static int fail_profinit, fail_sassconfig, fail_sassenable, fail_pcsenable;
static int prof_init, sass_configured, sass_enabled, pcs_enabled;
static uint64_t config_ids[8];
static size_t n_config;
static gfl_cupti_pcs_data *pcs_buf;

static int bad_size(const char *fn, size_t got, size_t want)
{
    if (got == want)
        return 0;
    fprintf(stderr, "fake_cupti: %s: size %zu, want %zu\n", fn, got, want);
    return 1;
}

static void add_name(const char *n)
{
    for (int i = 0; i < n_names; i++)
        if (!strcmp(names[i], n))
            return;
    if (n_names < MAX_NAMES)
        snprintf(names[n_names++], sizeof names[0], "%s", n);
}

static long val(const char *line, const char *key, long def)
{
    char pat[40];
    const char *p;
    snprintf(pat, sizeof pat, " %s=", key);
    p = strstr(line, pat);
    return p ? strtol(p + strlen(pat), NULL, 0) : def;
}

static uint32_t reason_index(const char *name, size_t len)
{
    for (size_t i = 0; i < N_REASONS; i++) {
        const char *full = reasons[i].name;
        /* match the suffix after "stalled_", or the whole name */
        const char *sfx = strstr(full, "stalled_");
        sfx = sfx ? sfx + 8 : full;
        if (strlen(sfx) == len && !strncmp(sfx, name, len))
            return reasons[i].index;
        if (strlen(full) == len && !strncmp(full, name, len))
            return reasons[i].index;
    }
    return 999; /* a reason the table does not name */
}

int fake_prof_parse(const char *line)
{
    char w[32] = "", fn[64] = "";
    const char *p;
    long v;
    sscanf(line, "%31s", w);
    if ((p = strstr(line, " func=")) != NULL)
        sscanf(p + 6, "%63s", fn);
    if (!strcmp(w, "func")) {
        if (sscanf(line, "func %63s", fn) == 1)
            add_name(fn);
        return 0; /* fake_cupti.c uses it too */
    }
    if (!strcmp(w, "sass") && fn[0] && n_spc < MAX_PCS) {
        sass_pc *s = &spc[n_spc++];
        snprintf(s->func, sizeof s->func, "%s", fn);
        s->pc = (uint32_t)val(line, "pc", 0);
        s->val[0] = (uint64_t)val(line, "inst", 0);
        s->val[1] = (uint64_t)val(line, "thread", 0);
        s->val[2] = (uint64_t)val(line, "sectors", 0);
        s->val[3] = (uint64_t)val(line, "ideal", 0);
        add_name(fn);
        return 1;
    }
    if (!strcmp(w, "pcsamp") && fn[0] && n_ppc < MAX_PCS) {
        pcs_pc *s = &ppc[n_ppc++];
        snprintf(s->func, sizeof s->func, "%s", fn);
        s->pc = (uint32_t)val(line, "pc", 0);
        p = strstr(line, " stalls=");
        for (p = p ? p + 8 : NULL; p && *p && s->n < 8;) {
            const char *colon = strchr(p, ':');
            if (!colon)
                break;
            s->index[s->n] = reason_index(p, (size_t)(colon - p));
            s->samples[s->n++] = (uint32_t)strtoul(colon + 1, NULL, 10);
            p = strchr(colon, ',');
            if (p)
                p++;
        }
        add_name(fn);
        return 1;
    }
    if (!strcmp(w, "sass_noideal"))
        return noideal = 1;
    if (!strcmp(w, "lineinfo"))
        return lineinfo = 1;
    if (!strcmp(w, "pcs_hwfull"))
        return hwfull = 1;
    if (!strcmp(w, "pcs_noreasons"))
        return pcs_noreasons = 1;
    if (!strcmp(w, "sass_crc_other"))
        return sass_crc_other = 1;
    if (sscanf(line, "pcs_per_call %ld", &v) == 1)
        return (pcs_per_call = (int)v), 1;
    if (sscanf(line, "pcs_dropped %ld", &v) == 1)
        return (pcs_dropped = (int)v), 1;
    if (sscanf(line, "module_reload %ld", &v) == 1)
        return (module_reload = (int)v), 1;
    if (!strcmp(line, "unsupported vgpu"))
        return unsupported_vgpu = 1;
    if (sscanf(line, "prof_fail %31s %ld", fn, &v) == 2) {
        if (!strcmp(fn, "profinit"))
            fail_profinit = (int)v;
        else if (!strcmp(fn, "sassconfig"))
            fail_sassconfig = (int)v;
        else if (!strcmp(fn, "sassenable"))
            fail_sassenable = (int)v;
        else if (!strcmp(fn, "pcsenable"))
            fail_pcsenable = (int)v;
        return 1;
    }
    return 0;
}

static void make_context(void)
{
    gfl_cupti_resource_data rd;
    gfl_cupti_module_data md;
    int n = snprintf(cubin, sizeof cubin, "FAKECUBIN\n%s",
                     lineinfo ? "lineinfo\n" : "");
    for (int i = 0; i < n_names && n > 0 && (size_t)n < sizeof cubin; i++)
        n += snprintf(cubin + n, sizeof cubin - (size_t)n, "F %s %d\n",
                      names[i], i);
    cubin_len = strlen(cubin);
    memset(&rd, 0, sizeof rd);
    rd.context = &ctx_obj[0];
    pthread_mutex_lock(&pmu);
    ctx_made = 1;
    pthread_mutex_unlock(&pmu);
    fake_resource_callback(GFL_CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &rd);
    memset(&md, 0, sizeof md);
    md.module_id = 1;
    md.cubin = cubin;
    md.cubin_size = cubin_len;
    rd.resource_descriptor = &md;
    fake_resource_callback(GFL_CUPTI_CBID_RESOURCE_MODULE_LOADED, &rd);
}

/* The module goes and comes back (a framework reloading its kernels):
 * samples not drained by then are dropped, see the top of the file. */
static void reload_module(void)
{
    gfl_cupti_resource_data rd;
    gfl_cupti_module_data md;
    int lost = 0;
    memset(&rd, 0, sizeof rd);
    memset(&md, 0, sizeof md);
    rd.context = &ctx_obj[0];
    md.module_id = 1;
    md.cubin = cubin;
    md.cubin_size = cubin_len;
    rd.resource_descriptor = &md;
    fake_resource_callback(GFL_CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING, &rd);
    md.module_id = 2;
    fake_resource_callback(GFL_CUPTI_CBID_RESOURCE_MODULE_LOADED, &rd);
    pthread_mutex_lock(&pmu);
    for (int i = 0; pcs_enabled && i < n_ppc; i++)
        for (uint32_t k = 0; k < ppc[i].n; k++) {
            lost |= ppc[i].acc[k] != 0;
            ppc[i].acc[k] = 0;
        }
    pthread_mutex_unlock(&pmu);
    if (lost)
        fprintf(stderr, "fake_cupti: module reloaded without a "
                        "cuptiPCSamplingGetData: samples dropped\n");
}

void fake_prof_context(void)
{
    fake_script_init();
    pthread_once(&ctx_once, make_context);
}

EXPORT void *fakecupti_current_context(void)
{
    void *c;
    pthread_mutex_lock(&pmu);
    c = ctx_made ? &ctx_obj[0] : NULL;
    pthread_mutex_unlock(&pmu);
    return c;
}

void fake_prof_ran(const char *name)
{
    int reload;
    pthread_mutex_lock(&pmu);
    reload = module_reload && ++n_launches == module_reload;
    pthread_mutex_unlock(&pmu);
    if (reload)
        reload_module();
    pthread_mutex_lock(&pmu);
    for (int i = 0; sass_enabled && i < n_spc; i++)
        if (!strcmp(spc[i].func, name)) {
            spc[i].patched = 1; /* lazy patching: at its first launch */
            for (int k = 0; k < 4; k++)
                spc[i].acc[k] += spc[i].val[k];
        }
    for (int i = 0; pcs_enabled && i < n_ppc; i++)
        if (!strcmp(ppc[i].func, name))
            for (uint32_t k = 0; k < ppc[i].n; k++)
                ppc[i].acc[k] += ppc[i].samples[k];
    pthread_mutex_unlock(&pmu);
}

/* ---- shared ---- */

EXPORT int cuptiGetDeviceId(void *ctx, uint32_t *dev)
{
    if (ctx != &ctx_obj[0] || !dev)
        return GFL_CUPTI_ERROR_INVALID_CONTEXT;
    *dev = 0;
    return 0;
}

/* Is the driver's cuInit on this thread's stack (we run inside
 * InitializeInjection)? */
static int inside_cuinit(void)
{
    void *pc[64];
    int n = backtrace(pc, 64);
    for (int i = 0; i < n; i++) {
        Dl_info di;
        if (dladdr(pc[i], &di) && di.dli_sname &&
            !strcmp(di.dli_sname, "cuInit"))
            return 1;
    }
    return 0;
}

/* the profiler API before cuptiProfilerInitialize */
static int not_init(const char *fn)
{
    if (prof_init)
        return 0;
    fprintf(stderr, "fake_cupti: %s before cuptiProfilerInitialize\n", fn);
    return 1;
}

EXPORT int cuptiProfilerInitialize(gfl_cupti_profiler_init_params *p)
{
    if (bad_size(__func__, p->struct_size, GFL_CUPTI_PROFILER_INIT_SIZE))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    if (fail_profinit)
        return fail_profinit;
    if (inside_cuinit()) {
        fprintf(stderr, "fake_cupti: cuptiProfilerInitialize inside cuInit\n");
        return GFL_CUPTI_ERROR_NOT_INITIALIZED;
    }
    prof_init = 1;
    return 0;
}

EXPORT int cuptiProfilerDeInitialize(gfl_cupti_profiler_init_params *p)
{
    if (bad_size(__func__, p->struct_size, GFL_CUPTI_PROFILER_INIT_SIZE))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    prof_init = 0;
    return 0;
}

EXPORT int cuptiProfilerDeviceSupported(gfl_cupti_device_supported_params *p)
{
    const int ok = GFL_CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
    if (bad_size(__func__, p->struct_size, GFL_CUPTI_DEVICE_SUPPORTED_SIZE))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    if (not_init(__func__))
        return GFL_CUPTI_ERROR_NOT_INITIALIZED;
    if (p->cu_device != 0 && p->cu_device != 1)
        return GFL_CUPTI_ERROR_INVALID_DEVICE;
    p->architecture = p->sli = p->confidential_compute = p->cmp = p->wsl = ok;
    p->vgpu = unsupported_vgpu ? GFL_CUPTI_PROFILER_CONFIGURATION_DISABLED : ok;
    p->is_supported =
        unsupported_vgpu ? GFL_CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED : ok;
    return 0;
}

EXPORT int cuptiDeviceGetChipName(gfl_cupti_chip_name_params *p)
{
    if (bad_size(__func__, p->struct_size, GFL_CUPTI_CHIP_NAME_SIZE))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    if (not_init(__func__))
        return GFL_CUPTI_ERROR_NOT_INITIALIZED;
    if (p->device_index > 1)
        return GFL_CUPTI_ERROR_INVALID_DEVICE;
    p->chip_name = "GA102";
    return 0;
}

static uint64_t fnv64(const void *b, size_t n)
{
    const unsigned char *c = b;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

EXPORT int cuptiGetCubinCrc(gfl_cupti_cubin_crc_params *p)
{
    if (bad_size(__func__, p->size, GFL_CUPTI_CUBIN_CRC_SIZE))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    p->cubin_crc = fnv64(p->cubin, p->cubin_size);
    return 0;
}

EXPORT int cuptiGetSassToSourceCorrelation(gfl_cupti_sass_source_params *p)
{
    char pat[80];
    const char *hit, *text = p->cubin;
    if (bad_size(__func__, p->size, GFL_CUPTI_SASS_SOURCE_SIZE))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    if (!text || p->cubin_size < 9 || strncmp(text, "FAKECUBIN", 9))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    if (!memmem(text, p->cubin_size, "lineinfo", 8))
        return GFL_CUPTI_ERROR_UNKNOWN; /* built without -lineinfo */
    snprintf(pat, sizeof pat, "F %s ",
             p->function_name ? p->function_name : "");
    hit = memmem(text, p->cubin_size, pat, strlen(pat));
    if (!hit)
        return 24; /* CUPTI_ERROR_INVALID_MODULE: not in this module */
    p->line_number = 100 + 10 * (uint32_t)strtoul(hit + strlen(pat), NULL, 10) +
                     (uint32_t)(p->pc_offset / 16);
    p->file_name = strdup("kernels.cu");
    p->dir_name = strdup("/src/fake");
    return 0;
}

/* ---- SASS metrics ---- */

static uint64_t metric_id(const char *name)
{
    for (size_t i = 0; i < N_METRICS; i++)
        if (!strcmp(metrics[i].name, name)) {
            if (noideal && metrics[i].id == 0x77d4)
                return 0;
            return metrics[i].id;
        }
    return 0;
}

EXPORT int cuptiSassMetricsGetNumOfMetrics(gfl_cupti_sass_num_metrics_params *p)
{
    if (bad_size(__func__, p->struct_size, GFL_CUPTI_SASS_NUM_METRICS_SIZE))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    if (not_init(__func__))
        return GFL_CUPTI_ERROR_NOT_INITIALIZED;
    p->num_metrics = N_METRICS - (size_t)noideal;
    return 0;
}

EXPORT int cuptiSassMetricsGetProperties(gfl_cupti_sass_properties_params *p)
{
    uint64_t id;
    if (bad_size(__func__, p->struct_size, GFL_CUPTI_SASS_PROPERTIES_SIZE))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    if (not_init(__func__))
        return GFL_CUPTI_ERROR_NOT_INITIALIZED;
    if (!p->chip_name || strcmp(p->chip_name, "GA102") || !p->metric_name)
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    id = metric_id(p->metric_name);
    if (!id)
        return GFL_CUPTI_ERROR_INVALID_PARAMETER; /* not on this chip */
    p->metric.metric_id = id;
    p->metric.name = p->metric_name;
    p->metric.description = "fake";
    return 0;
}

EXPORT int cuptiSassMetricsSetConfig(gfl_cupti_sass_set_config_params *p)
{
    if (bad_size(__func__, p->struct_size, GFL_CUPTI_SASS_SET_CONFIG_SIZE))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    if (not_init(__func__))
        return GFL_CUPTI_ERROR_NOT_INITIALIZED;
    if (fail_sassconfig)
        return fail_sassconfig;
    if (p->device_index != 0 || !p->num_configs || p->num_configs > 8)
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&pmu);
    if (sass_configured) {
        pthread_mutex_unlock(&pmu);
        fprintf(stderr, "fake_cupti: SetConfig twice without UnsetConfig\n");
        return GFL_CUPTI_ERROR_INVALID_OPERATION;
    }
    n_config = p->num_configs;
    for (size_t i = 0; i < n_config; i++) {
        if (p->configs[i].output_granularity != 0) {
            pthread_mutex_unlock(&pmu);
            return GFL_CUPTI_ERROR_INVALID_PARAMETER;
        }
        config_ids[i] = p->configs[i].metric_id;
    }
    sass_configured = 1;
    pthread_mutex_unlock(&pmu);
    return 0;
}

EXPORT int cuptiSassMetricsUnsetConfig(gfl_cupti_sass_unset_config_params *p)
{
    if (bad_size(__func__, p->struct_size, GFL_CUPTI_SASS_UNSET_CONFIG_SIZE))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&pmu);
    sass_configured = 0;
    n_config = 0;
    pthread_mutex_unlock(&pmu);
    return 0;
}

EXPORT int cuptiSassMetricsEnable(gfl_cupti_sass_enable_params *p)
{
    int rc = 0;
    if (bad_size(__func__, p->struct_size, GFL_CUPTI_SASS_ENABLE_SIZE))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    if (fail_sassenable)
        return fail_sassenable;
    if (p->ctx != &ctx_obj[0])
        return GFL_CUPTI_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&pmu);
    if (!sass_configured || sass_enabled)
        rc = GFL_CUPTI_ERROR_INVALID_OPERATION;
    else
        sass_enabled = 1;
    pthread_mutex_unlock(&pmu);
    return rc;
}

static size_t patched(void)
{
    size_t n = 0;
    for (int i = 0; i < n_spc; i++)
        n += spc[i].patched;
    return n;
}

EXPORT int
cuptiSassMetricsGetDataProperties(gfl_cupti_sass_data_props_params *p)
{
    int rc = 0;
    if (bad_size(__func__, p->struct_size, GFL_CUPTI_SASS_DATA_PROPS_SIZE))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&pmu);
    if (!sass_enabled || p->ctx != &ctx_obj[0]) {
        rc = GFL_CUPTI_ERROR_INVALID_OPERATION;
    } else {
        p->num_records = patched() * n_config; /* per instruction, metric */
        p->num_instances = 1;                  /* GPU granularity */
    }
    pthread_mutex_unlock(&pmu);
    return rc;
}

static uint64_t metric_value(const sass_pc *s, uint64_t id)
{
    switch (id) {
    case 0x51a1: return s->acc[0];
    case 0x3b07: return s->acc[1];
    case 0x9c2e: return s->acc[2];
    case 0x77d4: return s->acc[3];
    case 0x1f00: return s->acc[3] / 2 + s->acc[3] % 2; /* loads */
    case 0x1f01: return s->acc[3] / 2;                 /* stores */
    default: return 0;
    }
}

EXPORT int cuptiSassMetricsFlushData(gfl_cupti_sass_flush_params *p)
{
    size_t k = 0;
    uint64_t crc64 = fnv64(cubin, cubin_len);
    uint32_t crc = sass_crc_other ? (uint32_t)(crc64 >> 32) ^ 0x5a5a5a5au
                                  : (uint32_t)crc64;
    if (bad_size(__func__, p->struct_size, GFL_CUPTI_SASS_FLUSH_SIZE))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&pmu);
    if (!sass_enabled) {
        pthread_mutex_unlock(&pmu);
        fprintf(stderr, "fake_cupti: FlushData outside Enable..Disable\n");
        return GFL_CUPTI_ERROR_INVALID_OPERATION;
    }
    if (p->num_records != patched() * n_config || p->num_instances != 1 ||
        !p->data) {
        pthread_mutex_unlock(&pmu);
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    }
    /* each record's structSize: the header's documented value */
    for (size_t r = 0; r < p->num_records; r++)
        if (bad_size(__func__, p->data[r].struct_size,
                     GFL_CUPTI_SASS_FLUSH_SIZE)) {
            pthread_mutex_unlock(&pmu);
            return GFL_CUPTI_ERROR_INVALID_PARAMETER;
        }
    for (int i = 0; i < n_spc; i++) {
        if (!spc[i].patched)
            continue;
        /* reverse configuration order: values must be matched by id */
        for (size_t j = n_config; j > 0; j--, k++) {
            gfl_cupti_sass_data *d = &p->data[k];
            d->cubin_crc = crc;
            for (int f = 0; f < n_names; f++)
                if (!strcmp(names[f], spc[i].func))
                    d->function_index = (uint32_t)f;
            d->function_name = strdup(spc[i].func); /* the caller frees */
            d->pc_offset = spc[i].pc;
            d->values[0].metric_id = config_ids[j - 1];
            d->values[0].value = metric_value(&spc[i], config_ids[j - 1]);
        }
        memset(spc[i].acc, 0, sizeof spc[i].acc); /* flushing resets */
    }
    pthread_mutex_unlock(&pmu);
    return 0;
}

EXPORT int cuptiSassMetricsDisable(gfl_cupti_sass_disable_params *p)
{
    size_t unflushed = 0;
    if (bad_size(__func__, p->struct_size, GFL_CUPTI_SASS_DISABLE_SIZE))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&pmu);
    if (!sass_enabled) {
        pthread_mutex_unlock(&pmu);
        return GFL_CUPTI_ERROR_INVALID_OPERATION;
    }
    for (int i = 0; i < n_spc; i++) {
        if (spc[i].acc[0] || spc[i].acc[1] || spc[i].acc[2])
            unflushed += n_config;
        memset(spc[i].acc, 0, sizeof spc[i].acc);
        spc[i].patched = 0; /* Disable removes the patches */
    }
    p->num_dropped = unflushed;
    sass_enabled = 0;
    pthread_mutex_unlock(&pmu);
    return 0;
}

/* ---- PC sampling ---- */

EXPORT int cuptiPCSamplingEnable(gfl_cupti_pcs_ctx_params *p)
{
    int rc = 0;
    if (bad_size(__func__, p->size, GFL_CUPTI_PCS_CTX_SIZE))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    if (fail_pcsenable)
        return fail_pcsenable;
    if (p->ctx != &ctx_obj[0])
        return GFL_CUPTI_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&pmu);
    if (pcs_enabled)
        rc = GFL_CUPTI_ERROR_INVALID_OPERATION; /* one per device */
    else
        pcs_enabled = 1;
    pthread_mutex_unlock(&pmu);
    return rc;
}

EXPORT int cuptiPCSamplingGetNumStallReasons(gfl_cupti_pcs_num_stall_params *p)
{
    if (bad_size(__func__, p->size, GFL_CUPTI_PCS_NUM_STALL_SIZE))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    if (!pcs_enabled || !p->num)
        return GFL_CUPTI_ERROR_INVALID_OPERATION;
    *p->num = pcs_noreasons ? 0 : N_REASONS;
    return 0;
}

EXPORT int cuptiPCSamplingGetStallReasons(gfl_cupti_pcs_stall_params *p)
{
    if (bad_size(__func__, p->size, GFL_CUPTI_PCS_STALL_SIZE))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    if (!pcs_enabled || !p->num || p->num > N_REASONS || !p->index || !p->names)
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    for (size_t i = 0; i < p->num; i++) {
        p->index[i] = reasons[i].index;
        snprintf(p->names[i], GFL_CUPTI_STALL_REASON_STRING_SIZE, "%s",
                 reasons[i].name);
    }
    return 0;
}

EXPORT int
cuptiPCSamplingSetConfigurationAttribute(gfl_cupti_pcs_config_params *p)
{
    if (bad_size(__func__, p->size, GFL_CUPTI_PCS_CONFIG_SIZE))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    if (!pcs_enabled)
        return GFL_CUPTI_ERROR_INVALID_OPERATION;
    for (size_t i = 0; i < p->num_attributes; i++) {
        gfl_cupti_pcs_config_info *a = &p->info[i];
        a->attribute_status = 0;
        switch (a->attribute_type) {
        case GFL_CUPTI_PCS_ATTR_SAMPLING_DATA_BUFFER: {
            gfl_cupti_pcs_data *b = a->u.buffer;
            if (!b || b->size != sizeof *b || !b->collect_num_pcs ||
                !b->pc_data || b->pc_data[0].size != sizeof b->pc_data[0])
                return GFL_CUPTI_ERROR_INVALID_PARAMETER;
            pcs_buf = b;
            break;
        }
        case GFL_CUPTI_PCS_ATTR_COLLECTION_MODE:
            if (a->u.u32 != 1 && a->u.u32 != 2)
                return GFL_CUPTI_ERROR_INVALID_PARAMETER;
            break;
        default: break;
        }
    }
    return 0;
}

/* Move up to max pending PCs into b; with pmu held. */
static void fill(gfl_cupti_pcs_data *b, size_t max)
{
    size_t n = 0, left = 0;
    uint64_t crc = fnv64(cubin, cubin_len);
    char *shared[MAX_NAMES] = { 0 };
    for (int i = 0; i < n_ppc; i++) {
        pcs_pc *s = &ppc[i];
        gfl_cupti_pcs_pc *d;
        int f = 0, any = 0;
        for (uint32_t k = 0; k < s->n; k++)
            any |= s->acc[k] != 0;
        if (!any)
            continue;
        if (n == max) {
            left++;
            continue;
        }
        d = &b->pc_data[n++];
        for (f = 0; f < n_names && strcmp(names[f], s->func); f++)
            ;
        /* one name per function per call, shared by its records */
        if (f < MAX_NAMES && !shared[f])
            shared[f] = strdup(s->func);
        d->cubin_crc = crc;
        d->pc_offset = s->pc;
        d->function_index = (uint32_t)f;
        d->function_name = f < MAX_NAMES ? shared[f] : NULL;
        d->stall_reason_count = s->n;
        for (uint32_t k = 0; k < s->n; k++) {
            d->stall_reasons[k].index = s->index[k];
            d->stall_reasons[k].samples = s->acc[k];
            b->total_samples += s->acc[k];
            s->acc[k] = 0;
        }
    }
    b->total_num_pcs = n;
    b->remaining_num_pcs = left;
    b->dropped_samples = (uint64_t)pcs_dropped;
    pcs_dropped = 0;
}

EXPORT int cuptiPCSamplingGetData(gfl_cupti_pcs_get_data_params *p)
{
    gfl_cupti_pcs_data *b = p->data;
    size_t max;
    if (bad_size(__func__, p->size, GFL_CUPTI_PCS_GET_DATA_SIZE))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    if (!pcs_enabled || p->ctx != &ctx_obj[0])
        return GFL_CUPTI_ERROR_INVALID_OPERATION;
    if (!b || b->size != sizeof *b || !b->pc_data)
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&pmu);
    if (hwfull) {
        int any = 0;
        for (int i = 0; i < n_ppc; i++)
            for (uint32_t k = 0; k < ppc[i].n; k++)
                any |= ppc[i].acc[k] != 0;
        if (any) { /* the device buffer overflowed: these samples are gone */
            for (int i = 0; i < n_ppc; i++)
                memset(ppc[i].acc, 0, sizeof ppc[i].acc);
            hwfull = 0;
            b->hardware_buffer_full = 1;
            b->total_num_pcs = 0;
            pthread_mutex_unlock(&pmu);
            return GFL_CUPTI_ERROR_OUT_OF_MEMORY;
        }
    }
    max = b->collect_num_pcs < (size_t)pcs_per_call ? b->collect_num_pcs
                                                    : (size_t)pcs_per_call;
    fill(b, max);
    pthread_mutex_unlock(&pmu);
    return 0;
}

EXPORT int cuptiPCSamplingDisable(gfl_cupti_pcs_ctx_params *p)
{
    if (bad_size(__func__, p->size, GFL_CUPTI_PCS_CTX_SIZE))
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&pmu);
    if (!pcs_enabled) {
        pthread_mutex_unlock(&pmu);
        return GFL_CUPTI_ERROR_INVALID_OPERATION;
    }
    /* what is left goes into the configured buffer */
    if (pcs_buf)
        fill(pcs_buf, pcs_buf->collect_num_pcs);
    pcs_enabled = 0;
    pcs_buf = NULL;
    pthread_mutex_unlock(&pmu);
    return 0;
}
