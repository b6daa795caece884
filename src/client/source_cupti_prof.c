/*
 * source_cupti_prof.c - what the two profiling engines, "sass" (SASS
 * metrics, source_cupti_sass.c) and "pcsamp" (PC sampling,
 * source_cupti_pcs.c), share: opening (the performance-counter permission,
 * the profiler's device support, the resource callbacks), the contexts
 * they follow, the cubins kept to map PCs to source lines, and the scope
 * hook that gives every result its GFL_SCOPE.
 *
 * Per-scope attribution (docs/cupti-internals.md#sass-metrics): CUPTI
 * accumulates per context, so at every scope begin and end on a thread
 * the hook synchronises the thread's context, drains what CUPTI gathered
 * since the previous boundary and attributes it to the scope that was
 * open during that time (the enclosing one at a begin, the ending one at
 * an end).  Scopes running at the same time on different threads cannot
 * be told apart; the synchronisation serialises the program at scope
 * boundaries - these engines are a profiling pass, not always-on.
 *
 * Calls into CUPTI happen under prof.lock (which serialises the engine's
 * own threads); driver calls (cuCtxSynchronize) never do, since the
 * driver may hold its lock while CUPTI runs our resource callback.
 */
#include "cupti_int.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

/* cuptiProfilerInitialize done (DeInitialize at close); devices that
 * passed cuptiProfilerDeviceSupported.  One profiling engine per process. */
static int prof_inited;
static uint8_t prof_dev_checked[GPU_MAX_DEVICES];

static const char *prof_name(int mode)
{
    return mode == CUPTI_PROF_SASS ? "sass" : "pcsamp";
}

void cupti_prof_error(cupti_state *s, const char *call, int rc)
{
    cupti_prof *p = &s->prof;
    char text[200];
    cupti_result_text(s, rc, text, sizeof text);
    p->n_errors++;
    if (!p->error[0]) {
        snprintf(p->error, sizeof p->error, "%s failed: %s", call, text);
        client_log(GPUFL_LOG_WARN, "%s: %s", prof_name(p->mode), p->error);
    }
}

/* A CUPTI call that refused the engine: why = "<what>: <CUPTI's text>",
 * and the engine's status (no permission, or unavailable). */
int cupti_prof_refusal(cupti_state *s, int rc, char *why, size_t whylen,
                       const char *fmt, ...)
{
    char what[160], text[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    cupti_result_text(s, rc, text, sizeof text);
    snprintf(why, whylen, "%s: %s", what, text);
    return rc == GFL_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ? GPUFL_EPERM
                                                         : GPUFL_EUNAVAIL;
}

/* ---- permission, before anything is loaded ---- */
/* docs/cupti-internals.md#permissions */

static int read_small(const char *root, const char *rel, char *buf, size_t cap)
{
    char path[CLIENT_PATH_MAX + 64];
    FILE *f;
    size_t n;
    snprintf(path, sizeof path, "%s/%s", root, rel);
    f = fopen(path, "re");
    if (!f)
        return -1;
    n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = 0;
    return 0;
}

/* The driver restricts GPU performance counters to administrators unless
 * NVreg_RestrictProfilingToAdminUsers=0; without CAP_SYS_ADMIN (21) or
 * CAP_PERFMON (38) every profiling call would fail with
 * CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, after the session header is
 * written.  Say so up front.  No driver file: nothing to check. */
static int perm_check(const char *root, const char *engine, char *why,
                      size_t whylen)
{
    char buf[8192];
    const char *p;
    unsigned long long cap = 0;
    if (read_small(root, "driver/nvidia/params", buf, sizeof buf) < 0)
        return 0;
    p = strstr(buf, "RmProfilingAdminOnly:");
    if (!p || strtol(p + 21, NULL, 10) != 1)
        return 0;
    if (read_small(root, "self/status", buf, sizeof buf) == 0 &&
        (p = strstr(buf, "CapEff:")) != NULL)
        cap = strtoull(p + 7, NULL, 16);
    if (cap & ((1ull << 21) | (1ull << 38)))
        return 0;
    snprintf(why, whylen,
             "%s: GPU performance counters are restricted to administrators "
             "(RmProfilingAdminOnly: 1) and this process has neither "
             "CAP_SYS_ADMIN nor CAP_PERFMON; run as root or set "
             "NVreg_RestrictProfilingToAdminUsers=0",
             engine);
    return GPUFL_EPERM;
}

/* ---- contexts ---- */

static const char *level_word(int v)
{
    switch (v) {
    case GFL_CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED: return "unsupported";
    case GFL_CUPTI_PROFILER_CONFIGURATION_DISABLED: return "disabled";
    default: return "unknown";
    }
}

/* cuptiProfilerDeviceSupported for one device (CUDA ordinal `index`,
 * driver handle `cud`); 0, or the refusal with its reason in why. */
static int device_ok(cupti_state *s, int mode, int index, gfl_cu_device cud,
                     char *why, size_t whylen)
{
    cupti_prof *p = &s->prof;
    gfl_cupti_device_supported_params d;
    static const char *const field[] = {
        "architecture", "sli", "vgpu", "confidential computing", "cmp", "wsl"
    };
    int rc, lv[6];
    memset(&d, 0, sizeof d);
    d.struct_size = GFL_CUPTI_DEVICE_SUPPORTED_SIZE;
    d.api = mode == CUPTI_PROF_SASS ? GFL_CUPTI_PROFILER_SASS_METRICS
                                    : GFL_CUPTI_PROFILER_PC_SAMPLING;
    d.cu_device = cud;
    rc = p->DeviceSupported(&d);
    if (rc)
        return cupti_prof_refusal(s, rc, why, whylen,
                                  "%s: cuptiProfilerDeviceSupported",
                                  prof_name(mode));
    if (d.is_supported == GFL_CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
        return 0;
    lv[0] = d.architecture;
    lv[1] = d.sli;
    lv[2] = d.vgpu;
    lv[3] = d.confidential_compute;
    lv[4] = d.cmp;
    lv[5] = d.wsl;
    for (int f = 0; f < 6; f++)
        if (lv[f] != GFL_CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
            snprintf(why, whylen,
                     "%s: device %d cannot be profiled: %s %s "
                     "(cuptiProfilerDeviceSupported)",
                     prof_name(mode), index, field[f], level_word(lv[f]));
            return GPUFL_EUNAVAIL;
        }
    snprintf(why, whylen, "%s: device %d cannot be profiled (%s)",
             prof_name(mode), index, level_word(d.is_supported));
    return GPUFL_EUNAVAIL;
}

static int device_check(cupti_state *s, int mode, char *why, size_t whylen)
{
    if (!s->prof.DeviceSupported)
        return 0;
    for (int i = 0; i < s->n_devs; i++) {
        gfl_cu_device cud;
        int rc;
        if (s->cuDeviceGet(&cud, i) != 0)
            continue;
        rc = device_ok(s, mode, i, cud, why, whylen);
        if (rc)
            return rc;
        prof_dev_checked[i] = 1;
    }
    return 0;
}

/* cuptiProfilerInitialize: before any other profiler call (every NVIDIA
 * sample: cuptiDeviceGetChipName and the SASS metric lookups need it). */
static int prof_initialize(cupti_state *s, int mode, char *why, size_t whylen)
{
    gfl_cupti_profiler_init_params ip;
    int rc;
    memset(&ip, 0, sizeof ip);
    ip.struct_size = GFL_CUPTI_PROFILER_INIT_SIZE;
    rc = s->prof.ProfilerInitialize(&ip);
    if (rc)
        return cupti_prof_refusal(
            s, rc, why, whylen, "%s: cuptiProfilerInitialize", prof_name(mode));
    prof_inited = 1;
    return 0;
}

static void prof_deinitialize(cupti_state *s)
{
    gfl_cupti_profiler_init_params ip;
    if (!prof_inited || !s->prof.ProfilerDeInitialize)
        return;
    memset(&ip, 0, sizeof ip);
    ip.struct_size = GFL_CUPTI_PROFILER_INIT_SIZE;
    s->prof.ProfilerDeInitialize(&ip);
    prof_inited = 0;
}

/* Injected, the SASS engine opened inside the driver's cuInit, where the
 * profiler is not initialised (NVIDIA's injection sample initialises it
 * in the CONTEXT_CREATED callback, not in InitializeInjection): do it at
 * the first context, and check that context's device.  Lock held. */
static int ctx_profilable(cupti_state *s, uint32_t dev)
{
    cupti_prof *p = &s->prof;
    char why[SRC_REASON_LEN];
    if (p->mode != CUPTI_PROF_SASS)
        return 1;
    if (!prof_inited && prof_initialize(s, p->mode, why, sizeof why))
        goto refused;
    /* NVIDIA's samples pass the CUDA ordinal as the CUdevice */
    if (!prof_dev_checked[dev] && p->DeviceSupported &&
        device_ok(s, p->mode, (int)dev, (gfl_cu_device)dev, why, sizeof why))
        goto refused;
    prof_dev_checked[dev] = 1;
    return 1;
refused:
    p->n_errors++;
    if (!p->error[0]) { /* the marker names the engine: not twice */
        size_t pre = strlen(prof_name(p->mode));
        snprintf(p->error, sizeof p->error, "%s",
                 !strncmp(why, prof_name(p->mode), pre) &&
                         !strncmp(why + pre, ": ", 2)
                     ? why + pre + 2
                     : why);
        client_log(GPUFL_LOG_WARN, "%s", why);
    }
    return 0;
}

/* Follow a new context; lock held. */
static void ctx_add(cupti_state *s, void *ctx)
{
    cupti_prof *p = &s->prof;
    cupti_prof_ctx *c;
    uint32_t dev = 0;
    int rc;
    if (!ctx)
        return;
    for (int i = 0; i < p->n_ctx; i++)
        if (p->ctxs[i].ctx == ctx)
            return;
    for (int i = 0; i < p->n_rejected; i++)
        if (p->rejected[i] == ctx)
            return; /* reported once already */
    if (p->n_ctx >= CUPTI_PROF_MAX_CTX) {
        cupti_prof_error(s, "following a context (too many contexts)",
                         GFL_CUPTI_ERROR_MAX_LIMIT_REACHED);
        return;
    }
    rc = p->GetDeviceId(ctx, &dev);
    if (rc || dev >= GPU_MAX_DEVICES) {
        cupti_prof_error(s, "cuptiGetDeviceId", rc ? rc : 1);
        return;
    }
    c = &p->ctxs[p->n_ctx];
    memset(c, 0, sizeof *c);
    c->ctx = ctx;
    c->dev = dev;
    if (!ctx_profilable(s, dev))
        rc = -1;
    else
        rc = p->mode == CUPTI_PROF_SASS ? cupti_sass_ctx_on(s, c)
                                        : cupti_pcs_ctx_on(s, c);
    if (rc == 0)
        p->n_ctx++;
    else if (p->n_rejected < CUPTI_PROF_MAX_CTX)
        p->rejected[p->n_rejected++] = ctx;
}

static void ctx_remove(cupti_state *s, void *ctx)
{
    cupti_prof *p = &s->prof;
    uint64_t scope;
    uint32_t path;
    gpufl_current_scope(&scope, &path);
    for (int i = 0; i < p->n_ctx; i++) {
        if (p->ctxs[i].ctx != ctx)
            continue;
        if (p->mode == CUPTI_PROF_SASS) {
            cupti_sass_collect(s, scope, path);
            cupti_sass_ctx_off(s, &p->ctxs[i]);
        } else {
            cupti_pcs_ctx_off(s, &p->ctxs[i], scope, path);
        }
        p->ctxs[i] = p->ctxs[--p->n_ctx];
        return;
    }
}

static void module_add(cupti_state *s, const gfl_cupti_module_data *m)
{
    cupti_prof *p = &s->prof;
    char *copy;
    if (!m || !m->cubin || !m->cubin_size ||
        m->cubin_size > CUPTI_CUBIN_BYTES - p->cubin_bytes ||
        p->n_cubins >= CUPTI_MAX_CUBINS)
        return;
    copy = malloc(m->cubin_size);
    if (!copy)
        return;
    memcpy(copy, m->cubin, m->cubin_size);
    p->cubins[p->n_cubins].mem = copy;
    p->cubins[p->n_cubins].len = m->cubin_size;
    p->cubins[p->n_cubins].crc_done = 0;
    p->n_cubins++;
    p->cubin_bytes += m->cubin_size;
}

void cupti_prof_resource(cupti_state *s, uint32_t cbid, const void *cbdata)
{
    const gfl_cupti_resource_data *rd = cbdata;
    cupti_prof *p = &s->prof;
    if (!rd || !atomic_load_explicit(&p->active, memory_order_acquire))
        return;
    pthread_mutex_lock(&p->lock);
    if (p->mode) {
        switch (cbid) {
        case GFL_CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
            ctx_add(s, rd->context);
            break;
        case GFL_CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
            ctx_remove(s, rd->context);
            break;
        case GFL_CUPTI_CBID_RESOURCE_MODULE_LOADED:
            /* continuous PC sampling must be drained after every module
             * load-unload-load to keep PCs unique (cupti_pcsampling.h,
             * cuptiPCSamplingGetData); NVIDIA's sample drains here.  No
             * synchronisation: what is still running comes later. */
            if (p->mode == CUPTI_PROF_PCS && p->n_ctx) {
                uint64_t scope;
                uint32_t path;
                gpufl_current_scope(&scope, &path);
                cupti_pcs_collect(s, scope, path);
            }
            module_add(s, rd->resource_descriptor);
            break;
        default: break;
        }
    }
    pthread_mutex_unlock(&p->lock);
}

/* ---- source lines ---- */

static int cubin_matches(cupti_state *s, cupti_cubin *c, uint64_t crc,
                         int crc32)
{
    cupti_prof *p = &s->prof;
    if (!c->crc_done && p->GetCubinCrc) {
        gfl_cupti_cubin_crc_params q;
        memset(&q, 0, sizeof q);
        q.size = GFL_CUPTI_CUBIN_CRC_SIZE;
        q.cubin_size = c->len;
        q.cubin = c->mem;
        c->crc = p->GetCubinCrc(&q) == 0 ? q.cubin_crc : 0;
        c->crc_done = 1;
    }
    /* whether SASS's 32-bit CRC is the low half of the 64-bit one is
     * undocumented (verify on a GPU); a miss falls back to every cubin */
    return crc32 ? (uint32_t)c->crc == (uint32_t)crc : c->crc == crc;
}

static int try_cubin(cupti_state *s, const cupti_cubin *c, const char *func,
                     uint64_t pc, uint32_t *file_id, uint32_t *line)
{
    gfl_cupti_sass_source_params q;
    char path[1024];
    memset(&q, 0, sizeof q);
    q.size = GFL_CUPTI_SASS_SOURCE_SIZE;
    q.cubin = c->mem;
    q.cubin_size = c->len;
    q.function_name = func;
    q.pc_offset = pc;
    /* fails without -lineinfo, or when the function is elsewhere */
    if (s->prof.SourceCorrelation(&q) != 0)
        return 0;
    if (q.file_name && q.file_name[0] != '/' && q.dir_name && q.dir_name[0])
        snprintf(path, sizeof path, "%s/%s", q.dir_name, q.file_name);
    else
        snprintf(path, sizeof path, "%s", q.file_name ? q.file_name : "");
    free(q.file_name);
    free(q.dir_name);
    *file_id = path[0] ? gpufl_intern(path) : 0;
    *line = q.line_number;
    return 1;
}

void cupti_prof_source(cupti_state *s, uint64_t crc, int crc32,
                       const char *func, uint32_t func_id, uint64_t pc,
                       uint32_t *file_id, uint32_t *line)
{
    cupti_prof *p = &s->prof;
    uint64_t key = 1469598103934665603ull;
    uint32_t slot;
    int found = 0, matched = 0;
    *file_id = 0;
    *line = 0;
    if (!p->SourceCorrelation || !func || !p->n_cubins)
        return;
    key = (key ^ crc) * 1099511628211ull;
    key = (key ^ func_id) * 1099511628211ull;
    key = ((key ^ pc) * 1099511628211ull) | 1;
    slot = (uint32_t)(key % CUPTI_SRC_CACHE);
    if (p->src_key[slot] == key) {
        *file_id = p->src_file[slot];
        *line = p->src_line[slot];
        return;
    }
    /* the module with the record's CRC; only when none has it, every
     * other module that may hold the function.  A module built without
     * -lineinfo is not a reason to try all the others (one call each,
     * per PC: slow with many modules) */
    for (int i = 0; i < p->n_cubins && !found; i++)
        if (cubin_matches(s, &p->cubins[i], crc, crc32)) {
            matched = 1;
            found = try_cubin(s, &p->cubins[i], func, pc, file_id, line);
        }
    for (int i = 0; i < p->n_cubins && !found && !matched; i++)
        found = try_cubin(s, &p->cubins[i], func, pc, file_id, line);
    p->src_key[slot] = key;
    p->src_file[slot] = *file_id;
    p->src_line[slot] = *line;
}

/* ---- the scope hook ---- */

static void collect(cupti_state *s, int sync)
{
    cupti_prof *p = &s->prof;
    uint64_t scope;
    uint32_t path;
    void *cur = NULL;
    /* a context made before the session, or on a thread CUPTI's callback
     * did not show us (a framework's primary context): follow it now.
     * Outside any callback, after cuInit: the driver may be called. */
    if (sync && p->cuCtxGetCurrent && p->cuCtxGetCurrent(&cur) == 0 && cur) {
        pthread_mutex_lock(&p->lock);
        ctx_add(s, cur);
        pthread_mutex_unlock(&p->lock);
    }
    /* the data describe completed kernels; no context yet: nothing ran */
    if (sync && p->n_ctx && p->cuCtxSynchronize)
        (void)p->cuCtxSynchronize();
    gpufl_current_scope(&scope, &path);
    pthread_mutex_lock(&p->lock);
    if (p->mode == CUPTI_PROF_SASS)
        cupti_sass_collect(s, scope, path);
    else if (p->mode == CUPTI_PROF_PCS)
        cupti_pcs_collect(s, scope, path);
    pthread_mutex_unlock(&p->lock);
}

static void prof_scope_hook(void)
{
    cupti_state *s = cupti_g;
    if (atomic_load_explicit(&s->prof.active, memory_order_acquire))
        collect(s, 1);
}

/* ---- lifecycle ---- */

#define PSYM(field, lib, name)                                                 \
    (p->field = (__typeof__(p->field))dlsym(lib, name))

int cupti_prof_open(cupti_state *s, int mode, const src_config *cfg, char *why,
                    size_t whylen)
{
    static const uint32_t res_cbids[] = {
        GFL_CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
        GFL_CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
        GFL_CUPTI_CBID_RESOURCE_MODULE_LOADED,
    };
    cupti_prof *p = &s->prof;
    const char *name = prof_name(mode);
    int rc;
    if (g_client.simulated) {
        snprintf(why, whylen,
                 "the simulated GPU is selected (sim and %s are not combined "
                 "in one session)",
                 name);
        return GPUFL_ECONFLICT;
    }
    if (p->mode) {
        snprintf(why, whylen, "%s: %s already runs in this process", name,
                 prof_name(p->mode));
        return GPUFL_EALREADY;
    }
    if (mode == CUPTI_PROF_SASS && s->traced) {
        snprintf(why, whylen,
                 "sass: activity tracing was switched on earlier in this "
                 "process (the sass engine runs without it)");
        return GPUFL_ECONFLICT;
    }
    rc = perm_check(cfg && cfg->proc_root ? cfg->proc_root : "/proc", name, why,
                    whylen);
    if (rc)
        return rc;
    rc = cupti_attach(s, why, whylen);
    if (rc)
        return rc;
    PSYM(GetDeviceId, s->lib, "cuptiGetDeviceId");
    PSYM(ProfilerInitialize, s->lib, "cuptiProfilerInitialize");
    PSYM(ProfilerDeInitialize, s->lib, "cuptiProfilerDeInitialize");
    PSYM(DeviceSupported, s->lib, "cuptiProfilerDeviceSupported");
    PSYM(GetChipName, s->lib, "cuptiDeviceGetChipName");
    PSYM(GetCubinCrc, s->lib, "cuptiGetCubinCrc");
    PSYM(SourceCorrelation, s->lib, "cuptiGetSassToSourceCorrelation");
    PSYM(cuCtxSynchronize, s->cuda, "cuCtxSynchronize");
    PSYM(cuCtxGetCurrent, s->cuda, "cuCtxGetCurrent");
    if (!p->GetDeviceId || !p->ProfilerInitialize || !p->cuCtxSynchronize) {
        snprintf(why, whylen,
                 "%s: CUPTI or the driver lacks %s (not a CUDA 13 toolkit?)",
                 name,
                 !p->GetDeviceId          ? "cuptiGetDeviceId"
                 : !p->ProfilerInitialize ? "cuptiProfilerInitialize"
                                          : "cuCtxSynchronize");
        return GPUFL_EUNAVAIL;
    }
    prof_inited = 0;
    memset(prof_dev_checked, 0, sizeof prof_dev_checked);
    /* Linked (gpufl_init after cuInit): the profiler first, then the
     * devices and the engine's own look-ups, so that a refusal is in the
     * session header.  Injected, we are inside the driver's cuInit: SASS
     * initialises the profiler at the first context (ctx_profilable);
     * PC sampling does without it, as NVIDIA's PC sampling injection
     * sample does (cuptiPCSamplingEnable then says why it cannot run). */
    if (!s->deferred_devices) {
        rc = prof_initialize(s, mode, why, whylen);
        if (!rc)
            rc = device_check(s, mode, why, whylen);
    }
    if (!rc)
        rc = mode == CUPTI_PROF_SASS ? cupti_sass_open(s, why, whylen)
                                     : cupti_pcs_open(s, why, whylen);
    for (size_t i = 0; !rc && i < sizeof res_cbids / sizeof res_cbids[0]; i++) {
        int r = s->EnableCallback(1, s->subscriber,
                                  GFL_CUPTI_CB_DOMAIN_RESOURCE, res_cbids[i]);
        if (r) {
            char text[200];
            cupti_result_text(s, r, text, sizeof text);
            snprintf(why, whylen, "%s: cuptiEnableCallback(resource %u): %s",
                     name, res_cbids[i], text);
            rc = GPUFL_EUNAVAIL;
        }
    }
    if (rc) {
        prof_deinitialize(s);
        return rc;
    }
    p->n_lines = p->n_dropped = p->n_errors = p->n_hw_full = 0;
    p->error[0] = 0;
    p->n_ctx = 0;
    p->n_rejected = 0;
    memset(p->sass_config, 0, sizeof p->sass_config);
    memset(p->src_key, 0, sizeof p->src_key);
    p->mode = mode;
    return 0;
}

void cupti_prof_start(cupti_state *s)
{
    cupti_prof *p = &s->prof;
    void *ctx = NULL;
    p->c_dropped = gpufl_counter_get(p->mode == CUPTI_PROF_SASS
                                         ? "sass.records_dropped"
                                         : "pcsamp.samples_dropped");
    atomic_store_explicit(&p->active, 1, memory_order_release);
    /* a context made before gpufl_init (never when injected: cuInit is
     * still running then and the driver must not be re-entered) */
    if (!s->deferred_devices && p->cuCtxGetCurrent &&
        p->cuCtxGetCurrent(&ctx) == 0 && ctx) {
        pthread_mutex_lock(&p->lock);
        ctx_add(s, ctx);
        pthread_mutex_unlock(&p->lock);
    }
    atomic_store_explicit(&client_scope_hook, prof_scope_hook,
                          memory_order_release);
}

void cupti_prof_flush(cupti_state *s)
{
    if (atomic_load_explicit(&s->prof.active, memory_order_acquire))
        collect(s, 1);
}

void cupti_prof_close(cupti_state *s)
{
    cupti_prof *p = &s->prof;
    char msg[SRC_REASON_LEN + 64];
    atomic_store_explicit(&client_scope_hook, NULL, memory_order_release);
    if (!p->mode)
        return;
    /* what ran after the last scope boundary: the closing thread's scope */
    collect(s, 1);
    atomic_store_explicit(&p->active, 0, memory_order_release);
    pthread_mutex_lock(&p->lock);
    while (p->n_ctx) {
        cupti_prof_ctx *c = &p->ctxs[p->n_ctx - 1];
        if (p->mode == CUPTI_PROF_SASS)
            cupti_sass_ctx_off(s, c);
        else
            cupti_pcs_ctx_off(s, c, 0, 0);
        p->n_ctx--;
    }
    if (p->mode == CUPTI_PROF_SASS)
        cupti_sass_close(s);
    else
        cupti_pcs_close(s);
    pthread_mutex_unlock(&p->lock);
    prof_deinitialize(s);
    if (p->c_dropped)
        gpufl_counter_set(p->c_dropped, (int64_t)p->n_dropped);
    if (p->n_errors) {
        snprintf(msg, sizeof msg, "%s: %llu errors, first: %s",
                 prof_name(p->mode), (unsigned long long)p->n_errors, p->error);
        gpufl_marker(msg);
    }
    if (p->n_dropped || p->n_hw_full) {
        snprintf(msg, sizeof msg, "%s: dropped=%llu hardware_buffer_full=%llu",
                 prof_name(p->mode), (unsigned long long)p->n_dropped,
                 (unsigned long long)p->n_hw_full);
        gpufl_marker(msg);
    }
    client_log(GPUFL_LOG_INFO, "%s: %llu lines, %llu dropped, %llu errors",
               prof_name(p->mode), (unsigned long long)p->n_lines,
               (unsigned long long)p->n_dropped,
               (unsigned long long)p->n_errors);
    p->mode = CUPTI_PROF_NONE;
}

/* ---- src_ops: the "sass" and "pcsamp" engines ---- */

static int sass_open(void **state, const src_config *cfg, char *why,
                     size_t whylen)
{
    int rc = cupti_prof_open(cupti_g, CUPTI_PROF_SASS, cfg, why, whylen);
    *state = rc ? NULL : cupti_g;
    return rc;
}

static int prof_devices(void *state, gpu_device *out, int max)
{
    cupti_state *s = state;
    int n = s->n_devs < max ? s->n_devs : max;
    memcpy(out, s->devices, (size_t)n * sizeof *out);
    return n;
}

static int prof_start(void *state)
{
    cupti_prof_start(state);
    return 0;
}

static void prof_flush(void *state, uint32_t timeout_ms)
{
    (void)timeout_ms;
    cupti_prof_flush(state);
}

static void prof_close(void *state)
{
    if (state)
        cupti_prof_close(state);
}

const src_ops src_sass_ops = {
    .name = "sass",
    .open = sass_open,
    .devices = prof_devices,
    .start = prof_start,
    .sample = NULL,
    .flush = prof_flush,
    .close = prof_close,
};

static int pcsamp_open(void **state, const src_config *cfg, char *why,
                       size_t whylen)
{
    int rc = cupti_prof_open(cupti_g, CUPTI_PROF_PCS, cfg, why, whylen);
    *state = rc ? NULL : cupti_g;
    return rc;
}

const src_ops src_pcsamp_ops = {
    .name = "pcsamp",
    .open = pcsamp_open,
    .devices = prof_devices,
    .start = prof_start,
    .sample = NULL,
    .flush = prof_flush,
    .close = prof_close,
};
