/*
 * source_cupti_pcs.c - the "pcsamp" engine: warp stall reasons per PC from
 * CUPTI's PC sampling API (cupti_pcsampling.h;
 * docs/cupti-internals.md#pc-sampling), written as `pcsamp` lines per
 * GFL_SCOPE.
 *
 * Continuous mode (kernels keep running concurrently; serialized mode
 * cost the original GPU Flight +665 % on a small-kernel workload).  Per
 * context, in the CONTEXT_CREATED callback as NVIDIA's sample does:
 * Enable, the chip's stall-reason table (indices differ between chips:
 * reasons are written by name, never by index), one sampling buffer of
 * CUPTI_PCS_PCS records, the configuration.  At each scope boundary, and
 * at every module load (CUPTI wants a drain after a load-unload-load),
 * GetData is called until CUPTI has nothing left (remainingNumPcs), and
 * Disable at the end flushes the rest into the buffer.  PC sampling works
 * on one context per device at a time.  No cuptiProfilerInitialize when
 * injected (inside cuInit), as in NVIDIA's PC sampling injection sample.
 *
 * Function names in PC records are CUPTI's and may be shared with other
 * records; they are freed once each, at the end (cupti_pcsampling.h says
 * the client frees them after all processing).
 */
#include "cupti_int.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

#define PCS_MAX_ROUNDS 4096 /* GetData calls per drain, a bound */

#define PSYM(field, name) (p->field = (__typeof__(p->field))dlsym(s->lib, name))

int cupti_pcs_open(cupti_state *s, char *why, size_t whylen)
{
    cupti_prof *p = &s->prof;
    PSYM(PcsEnable, "cuptiPCSamplingEnable");
    PSYM(PcsDisable, "cuptiPCSamplingDisable");
    PSYM(PcsSetConfig, "cuptiPCSamplingSetConfigurationAttribute");
    PSYM(PcsGetData, "cuptiPCSamplingGetData");
    PSYM(PcsGetNumStallReasons, "cuptiPCSamplingGetNumStallReasons");
    PSYM(PcsGetStallReasons, "cuptiPCSamplingGetStallReasons");
    if (!p->PcsEnable || !p->PcsDisable || !p->PcsSetConfig || !p->PcsGetData ||
        !p->PcsGetNumStallReasons || !p->PcsGetStallReasons) {
        snprintf(why, whylen,
                 "pcsamp: this CUPTI lacks the PC sampling API "
                 "(cuptiPCSampling*)");
        return GPUFL_EUNAVAIL;
    }
    return 0;
}

/* "smsp__pcsamp_warps_issue_stalled_long_scoreboard" -> "long_scoreboard";
 * 0 = not a reason of its own: the sample and dropped counts are totals,
 * and an "X_not_issued" reason counts the samples of X in which no
 * instruction was issued - a subset of X (CUPTI's activity API says so of
 * the same split: "samples ... includes latencySamples"; Nsight Compute
 * shows them as a second view, not added).  Kept, they would count those
 * samples twice in a line's total. */
static uint32_t reason_intern(const char *raw)
{
    static const char stalled[] = "smsp__pcsamp_warps_issue_stalled_";
    static const char pcsamp[] = "smsp__pcsamp_";
    static const char not_issued[] = "_not_issued";
    size_t len = strlen(raw);
    if (!raw[0] || !strcmp(raw, "smsp__pcsamp_sample_count") ||
        !strcmp(raw, "smsp__pcsamp_samples_data_dropped") ||
        (len > sizeof not_issued - 1 &&
         !strcmp(raw + len - (sizeof not_issued - 1), not_issued)))
        return 0;
    if (!strncmp(raw, stalled, sizeof stalled - 1) && raw[sizeof stalled - 1])
        return gpufl_intern(raw + sizeof stalled - 1);
    if (!strncmp(raw, pcsamp, sizeof pcsamp - 1) && raw[sizeof pcsamp - 1])
        return gpufl_intern(raw + sizeof pcsamp - 1);
    return gpufl_intern(raw);
}

static int stall_table(cupti_state *s, cupti_prof_ctx *c)
{
    cupti_prof *p = &s->prof;
    gfl_cupti_pcs_num_stall_params nq;
    gfl_cupti_pcs_stall_params sq;
    uint32_t index[CUPTI_PCS_MAX_REASONS];
    char *names[CUPTI_PCS_MAX_REASONS];
    char *block;
    size_t n = 0;
    int rc;
    memset(&nq, 0, sizeof nq);
    nq.size = GFL_CUPTI_PCS_NUM_STALL_SIZE;
    nq.ctx = c->ctx;
    nq.num = &n;
    rc = p->PcsGetNumStallReasons(&nq);
    if (rc) {
        cupti_prof_error(s, "cuptiPCSamplingGetNumStallReasons", rc);
        return -1;
    }
    if (!n) { /* seen when CUPTI and the driver do not match */
        cupti_prof_error(s,
                         "cuptiPCSamplingGetNumStallReasons (it reports no "
                         "stall reasons)",
                         GFL_CUPTI_ERROR_NOT_SUPPORTED);
        return -1;
    }
    if (n > CUPTI_PCS_MAX_REASONS) /* the rest are written "reason_<i>" */
        n = CUPTI_PCS_MAX_REASONS;
    block = calloc(n ? n : 1, GFL_CUPTI_STALL_REASON_STRING_SIZE);
    if (!block) {
        cupti_prof_error(s, "pcsamp (out of memory)",
                         GFL_CUPTI_ERROR_OUT_OF_MEMORY);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        names[i] = block + i * GFL_CUPTI_STALL_REASON_STRING_SIZE;
    memset(&sq, 0, sizeof sq);
    sq.size = GFL_CUPTI_PCS_STALL_SIZE;
    sq.ctx = c->ctx;
    sq.num = n;
    sq.index = index;
    sq.names = names;
    rc = p->PcsGetStallReasons(&sq);
    if (rc) {
        free(block);
        cupti_prof_error(s, "cuptiPCSamplingGetStallReasons", rc);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        names[i][GFL_CUPTI_STALL_REASON_STRING_SIZE - 1] = 0;
        c->reason_index[i] = index[i];
        c->reason_name[i] = reason_intern(names[i]);
    }
    c->n_reasons = (uint32_t)n;
    free(block);
    return 0;
}

static int configure(cupti_state *s, cupti_prof_ctx *c)
{
    cupti_prof *p = &s->prof;
    gfl_cupti_pcs_config_info info[4];
    gfl_cupti_pcs_config_params q;
    size_t nr = c->n_reasons ? c->n_reasons : 1;
    gfl_cupti_pcs_pc *pcs;
    gfl_cupti_pcs_stall *stalls;
    uint8_t *mem;
    int rc;
    /* one block: the buffer header, its PC records, their reason arrays */
    mem = calloc(1, sizeof(gfl_cupti_pcs_data) +
                        CUPTI_PCS_PCS * (sizeof *pcs + nr * sizeof *stalls));
    if (!mem) {
        cupti_prof_error(s, "pcsamp (out of memory)",
                         GFL_CUPTI_ERROR_OUT_OF_MEMORY);
        return -1;
    }
    c->buf = (gfl_cupti_pcs_data *)(void *)mem;
    pcs = (gfl_cupti_pcs_pc *)(void *)(mem + sizeof(gfl_cupti_pcs_data));
    stalls = (gfl_cupti_pcs_stall *)(void *)(pcs + CUPTI_PCS_PCS);
    c->buf->size = sizeof *c->buf;
    c->buf->collect_num_pcs = CUPTI_PCS_PCS;
    c->buf->pc_data = pcs;
    for (size_t i = 0; i < CUPTI_PCS_PCS; i++) {
        pcs[i].size = sizeof pcs[i];
        pcs[i].stall_reasons = stalls + i * nr;
    }
    memset(info, 0, sizeof info);
    info[0].attribute_type = GFL_CUPTI_PCS_ATTR_SAMPLING_DATA_BUFFER;
    info[0].u.buffer = c->buf;
    info[1].attribute_type = GFL_CUPTI_PCS_ATTR_COLLECTION_MODE;
    info[1].u.u32 = GFL_CUPTI_PCS_MODE_CONTINUOUS;
    info[2].attribute_type = GFL_CUPTI_PCS_ATTR_OUTPUT_DATA_FORMAT;
    info[2].u.u32 = GFL_CUPTI_PCS_FORMAT_PARSED;
    info[3].attribute_type = GFL_CUPTI_PCS_ATTR_ENABLE_START_STOP_CONTROL;
    info[3].u.u32 = 0;
    memset(&q, 0, sizeof q);
    q.size = GFL_CUPTI_PCS_CONFIG_SIZE;
    q.ctx = c->ctx;
    q.num_attributes = 4;
    q.info = info;
    rc = p->PcsSetConfig(&q);
    if (rc) {
        static const char fn[] = "cuptiPCSamplingSetConfigurationAttribute";
        char call[96];
        snprintf(call, sizeof call, "%s", fn);
        /* CUPTI writes a status per attribute: name the one refused */
        for (int i = 0; i < 4; i++)
            if (info[i].attribute_status) {
                snprintf(call, sizeof call, "%s (attribute %d: status %d)", fn,
                         info[i].attribute_type, info[i].attribute_status);
                break;
            }
        cupti_prof_error(s, call, rc);
        free(c->buf);
        c->buf = NULL;
        return -1;
    }
    return 0;
}

static void disable(cupti_state *s, cupti_prof_ctx *c)
{
    gfl_cupti_pcs_ctx_params q;
    int rc;
    memset(&q, 0, sizeof q);
    q.size = GFL_CUPTI_PCS_CTX_SIZE;
    q.ctx = c->ctx;
    rc = s->prof.PcsDisable(&q);
    if (rc)
        cupti_prof_error(s, "cuptiPCSamplingDisable", rc);
}

int cupti_pcs_ctx_on(cupti_state *s, cupti_prof_ctx *c)
{
    cupti_prof *p = &s->prof;
    gfl_cupti_pcs_ctx_params q;
    int rc;
    for (int i = 0; i < p->n_ctx; i++)
        if (p->ctxs[i].dev == c->dev) {
            /* CUPTI samples one context per device */
            cupti_prof_error(s,
                             "cuptiPCSamplingEnable (a second context on "
                             "the device is not sampled)",
                             GFL_CUPTI_ERROR_NOT_SUPPORTED);
            return -1;
        }
    memset(&q, 0, sizeof q);
    q.size = GFL_CUPTI_PCS_CTX_SIZE;
    q.ctx = c->ctx;
    rc = p->PcsEnable(&q);
    if (rc) {
        cupti_prof_error(s, "cuptiPCSamplingEnable", rc);
        return -1;
    }
    if (stall_table(s, c) || configure(s, c)) {
        disable(s, c);
        return -1;
    }
    return 0;
}

/* CUPTI's function names, each freed once at the end: an open-addressing
 * set of pointers (free_names, cap_free_names slots, a power of two).
 * The header only says a name "might be" shared between records: when it
 * is not, every PC record brings a new one, and a linear search would be
 * quadratic over a long run. */
static size_t name_slot(char **set, size_t cap, const char *name)
{
    size_t i =
        (size_t)(((uintptr_t)name >> 4) * 0x9E3779B97F4A7C15ull) & (cap - 1);
    while (set[i] && set[i] != name)
        i = (i + 1) & (cap - 1);
    return i;
}

static void keep_name(cupti_prof *p, char *name)
{
    size_t i;
    if (!name)
        return;
    if (2 * (p->n_free_names + 1) > p->cap_free_names) {
        size_t cap = p->cap_free_names ? p->cap_free_names * 2 : 64;
        char **grown = calloc(cap, sizeof *grown);
        if (!grown)
            return; /* leaks one name rather than risk a double free */
        for (size_t k = 0; k < p->cap_free_names; k++)
            if (p->free_names[k])
                grown[name_slot(grown, cap, p->free_names[k])] =
                    p->free_names[k];
        free(p->free_names);
        p->free_names = grown;
        p->cap_free_names = cap;
    }
    i = name_slot(p->free_names, p->cap_free_names, name);
    if (!p->free_names[i]) {
        p->free_names[i] = name;
        p->n_free_names++;
    }
}

static uint32_t reason_of(const cupti_prof_ctx *c, uint32_t index)
{
    char buf[32];
    for (uint32_t i = 0; i < c->n_reasons; i++)
        if (c->reason_index[i] == index)
            return c->reason_name[i];
    snprintf(buf, sizeof buf, "reason_%u", index);
    return gpufl_intern(buf);
}

static void emit(cupti_state *s, const cupti_prof_ctx *c,
                 const gfl_cupti_pcs_pc *pc, uint64_t scope, uint32_t path)
{
    cupti_prof *p = &s->prof;
    uint32_t name[CUPTI_PCS_MAX_REASONS], count[CUPTI_PCS_MAX_REASONS];
    uint32_t n = 0, nr = c->n_reasons ? c->n_reasons : 1;
    size_t m = pc->stall_reason_count < nr ? pc->stall_reason_count : nr;
    gpufl_pcsamp r;
    /* merge by name (a chip may list one name twice), skip totals */
    for (size_t i = 0; i < m; i++) {
        uint32_t id = reason_of(c, pc->stall_reasons[i].index), k;
        if (!id || !pc->stall_reasons[i].samples)
            continue;
        for (k = 0; k < n && name[k] != id; k++)
            ;
        if (k == n) {
            if (n == CUPTI_PCS_MAX_REASONS)
                continue;
            name[n] = id;
            count[n++] = 0;
        }
        count[k] += pc->stall_reasons[i].samples;
    }
    if (!n)
        return;
    memset(&r, 0, sizeof r);
    r.sz = sizeof r;
    r.device = c->dev;
    r.func_id = pc->function_name ? gpufl_intern(pc->function_name) : 0;
    r.pc = pc->pc_offset;
    /* the line holds 8 reasons: keep the most sampled ones */
    while (r.n_reasons < GPUFL_PC_MAX_REASONS && n) {
        uint32_t best = 0;
        for (uint32_t k = 1; k < n; k++)
            if (count[k] > count[best])
                best = k;
        r.reason_id[r.n_reasons] = name[best];
        r.samples[r.n_reasons++] = count[best];
        name[best] = name[--n];
        count[best] = count[n];
    }
    cupti_prof_source(s, pc->cubin_crc, 0, pc->function_name, r.func_id, r.pc,
                      &r.file_id, &r.line);
    r.scope = scope;
    r.path_id = path;
    if (gpufl_record_pcsamp(&r) == GPUFL_OK)
        p->n_lines++;
}

/* Write what the buffer holds and forget it. */
static void emit_buffer(cupti_state *s, cupti_prof_ctx *c, uint64_t scope,
                        uint32_t path)
{
    gfl_cupti_pcs_data *b = c->buf;
    size_t n = b->total_num_pcs < b->collect_num_pcs ? b->total_num_pcs
                                                     : b->collect_num_pcs;
    s->prof.n_dropped += b->dropped_samples;
    for (size_t i = 0; i < n; i++) {
        keep_name(&s->prof, b->pc_data[i].function_name);
        emit(s, c, &b->pc_data[i], scope, path);
    }
    b->total_num_pcs = 0;
    b->dropped_samples = 0;
    b->remaining_num_pcs = 0;
}

static void drain(cupti_state *s, cupti_prof_ctx *c, uint64_t scope,
                  uint32_t path)
{
    cupti_prof *p = &s->prof;
    for (int round = 0; c->buf && round < PCS_MAX_ROUNDS; round++) {
        gfl_cupti_pcs_get_data_params q;
        int rc, more;
        memset(&q, 0, sizeof q);
        q.size = GFL_CUPTI_PCS_GET_DATA_SIZE;
        q.ctx = c->ctx;
        q.data = c->buf;
        c->buf->hardware_buffer_full = 0;
        rc = p->PcsGetData(&q);
        if (rc == GFL_CUPTI_ERROR_OUT_OF_MEMORY &&
            c->buf->hardware_buffer_full) {
            /* the device buffer overflowed: those samples are gone, the
             * PC data of this call are zero (cupti_pcsampling.h); stop
             * here like NVIDIA's sample, not 4096 failing calls later */
            p->n_hw_full++;
            cupti_prof_error(s,
                             "cuptiPCSamplingGetData (hardware buffer "
                             "full, samples lost)",
                             rc);
            c->buf->total_num_pcs = 0;
            return;
        }
        if (rc) {
            cupti_prof_error(s, "cuptiPCSamplingGetData", rc);
            return;
        }
        more = c->buf->remaining_num_pcs != 0;
        emit_buffer(s, c, scope, path);
        if (!more)
            return;
    }
}

void cupti_pcs_collect(cupti_state *s, uint64_t scope, uint32_t path)
{
    for (int i = 0; i < s->prof.n_ctx; i++)
        drain(s, &s->prof.ctxs[i], scope, path);
}

void cupti_pcs_ctx_off(cupti_state *s, cupti_prof_ctx *c, uint64_t scope,
                       uint32_t path)
{
    drain(s, c, scope, path);
    if (c->buf)
        c->buf->total_num_pcs = 0;
    disable(s, c); /* flushes what is left into the buffer */
    if (c->buf) {
        emit_buffer(s, c, scope, path);
        free(c->buf);
        c->buf = NULL;
    }
}

void cupti_pcs_close(cupti_state *s)
{
    cupti_prof *p = &s->prof;
    for (size_t i = 0; i < p->cap_free_names; i++)
        free(p->free_names[i]);
    free(p->free_names);
    p->free_names = NULL;
    p->n_free_names = p->cap_free_names = 0;
}
