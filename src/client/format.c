/*
 * format.c - event fields as JSON (see format.h and docs/events.md).
 *
 * Compactness matters (always-on capture): zero or unknown optional fields
 * are omitted, names travel as dictionary ids, API times are offsets from
 * the event time, and 64-bit addresses are hex strings (JSON readers that
 * use doubles would round them).
 */
#include "format.h"

#include <stdio.h>
#include <string.h>

#include "occupancy.h"

const char *fmt_stream_name(int stream)
{
    static const char *const n[] = { "device", "scope", "system" };
    return stream >= 0 && stream < ST_COUNT ? n[stream] : "?";
}

const char *fmt_copy_kind(uint32_t kind)
{
    static const char *const n[] = { "unknown", "htod", "dtoh",
                                     "dtod",    "htoh", "ptop" };
    return kind < sizeof n / sizeof n[0] ? n[kind] : "unknown";
}

const char *fmt_sync_kind(uint32_t kind)
{
    static const char *const n[] = { "unknown", "event", "stream_wait",
                                     "stream", "context" };
    return kind < sizeof n / sizeof n[0] ? n[kind] : "unknown";
}

const char *fmt_mem_kind(uint32_t kind)
{
    static const char *const n[] = { "device",   "pinned", "managed",
                                     "pageable", "array",  "unknown" };
    return kind < sizeof n / sizeof n[0] ? n[kind] : "unknown";
}

const char *fmt_limiters(uint32_t limiters)
{
    return occ_limiter_name(limiters);
}

int fmt_refs(const rec *r, uint32_t *ids)
{
    int n = 0;
#define REF(x)                                                                 \
    do {                                                                       \
        if (x)                                                                 \
            ids[n++] = (x);                                                    \
    } while (0)
    switch (r->type) {
    case REC_KERNEL:
        REF(r->u.k.cfg); /* its dict line names the kernel */
        if (!r->u.k.cfg)
            REF(r->u.k.name);
        if (!r->u.k.scope)
            REF(r->u.k.path);
        REF(r->u.k.stack);
        break;
    case REC_MEMCPY:
        if (!r->u.cp.scope)
            REF(r->u.cp.path);
        REF(r->u.cp.stack);
        break;
    case REC_MEMSET:
        if (!r->u.ms.scope)
            REF(r->u.ms.path);
        break;
    case REC_SYNC:
        if (!r->u.sy.scope)
            REF(r->u.sy.path);
        REF(r->u.sy.stack);
        break;
    case REC_MEMOP:
        if (!r->u.mo.scope)
            REF(r->u.mo.path);
        REF(r->u.mo.stack);
        break;
    case REC_SCOPE_BEGIN:
    case REC_SCOPE_END:
        REF(r->u.sc.name);
        REF(r->u.sc.path);
        break;
    case REC_COUNTER: REF(r->u.ctr.name); break;
    case REC_SASS:
        REF(r->u.sass.func);
        REF(r->u.sass.file);
        REF(r->u.sass.path);
        break;
    case REC_PCSAMP:
        REF(r->u.pc.func);
        REF(r->u.pc.file);
        REF(r->u.pc.path);
        break;
    default: break;
    }
#undef REF
    return n;
}

static void kv_opt(jw *j, const char *k, uint64_t v)
{
    if (v)
        jw_kv_u64(j, k, v);
}

/* Launch dimensions with trailing 1s left out: [256] is (256,1,1). */
static void xyz(jw *j, const char *k, const uint32_t *v)
{
    int n = v[2] != 1 ? 3 : v[1] != 1 ? 2 : 1;
    jw_key(j, k);
    jw_arr_begin(j);
    for (int i = 0; i < n; i++)
        jw_u64(j, v[i]);
    jw_arr_end(j);
}

static void dur(jw *j, uint64_t start, uint64_t end)
{
    jw_kv_u64(j, "dur", end > start ? end - start : 0);
}

/* Device-stream events name their scope instance; its path is on the
 * instance's scope_begin line, so it is written only when there is no
 * instance (a source that knows the path alone). */
static void scope_refs(jw *j, uint64_t scope, uint32_t path)
{
    kv_opt(j, "scope", scope);
    if (!scope)
        kv_opt(j, "path", path);
}

static void scope_refs_full(jw *j, uint64_t scope, uint32_t path)
{
    kv_opt(j, "scope", scope);
    kv_opt(j, "path", path);
}

/* "api": [API call entry relative to ts, its duration], and "tid": the
 * thread that made the call (docs/events.md); nothing when unknown. */
static void api_call(jw *j, const rec *r, uint64_t enter, uint64_t exit_)
{
    if (!enter || !exit_)
        return;
    jw_key(j, "api");
    jw_arr_begin(j);
    jw_i64(j, (int64_t)(enter - r->ts));
    jw_u64(j, exit_ > enter ? exit_ - enter : 0);
    jw_arr_end(j);
    jw_kv_u64(j, "tid", r->tid);
}

static void fmt_kernel(jw *j, const rec *r)
{
    const __typeof__(r->u.k) *k = &r->u.k;
    jw_kv_str(j, "type", "kernel");
    kv_opt(j, "dev", k->dev);
    kv_opt(j, "stream", k->stream);
    kv_opt(j, "corr", k->corr);
    if (k->cfg) {
        jw_kv_u64(j, "cfg", k->cfg);
    } else {
        /* launch config table full: everything inline */
        jw_kv_u64(j, "name", k->name);
        xyz(j, "block", k->block);
        jw_kv_u64(j, "regs", k->regs);
        kv_opt(j, "smem", k->smem_static);
        kv_opt(j, "dsmem", k->smem_dynamic);
        kv_opt(j, "lmem", k->local_mem);
    }
    xyz(j, "grid", k->grid);
    dur(j, r->ts, k->end);
    api_call(j, r, k->api_enter, k->api_exit);
    if (!k->cfg && k->occ >= 0.0f) {
        jw_key(j, "occ");
        jw_f64(j, k->occ, 3);
        if (k->limiters)
            jw_kv_str(j, "lim", fmt_limiters(k->limiters));
    }
    scope_refs(j, k->scope, k->path);
    kv_opt(j, "stack", k->stack);
    if (r->flags & GPUFL_KERNEL_COOPERATIVE)
        jw_kv_u64(j, "coop", 1);
}

static void fmt_memcpy(jw *j, const rec *r)
{
    const __typeof__(r->u.cp) *c = &r->u.cp;
    uint64_t d = r->u.cp.end > r->ts ? r->u.cp.end - r->ts : 0;
    jw_kv_str(j, "type", "memcpy");
    kv_opt(j, "dev", c->dev);
    if (c->kind == GPUFL_COPY_PTOP)
        jw_kv_u64(j, "dst_dev", c->dst_dev);
    kv_opt(j, "stream", c->stream);
    kv_opt(j, "corr", c->corr);
    jw_kv_str(j, "kind", fmt_copy_kind(c->kind));
    jw_kv_u64(j, "bytes", c->bytes);
    jw_kv_u64(j, "dur", d);
    if (d) {
        jw_key(j, "gbps"); /* bytes per ns = GB/s */
        jw_f64(j, (double)c->bytes / (double)d, 2);
    }
    if (c->flags & GPUFL_MEMCPY_ASYNC)
        jw_kv_u64(j, "async", 1);
    if (c->flags & GPUFL_MEMCPY_PINNED)
        jw_kv_u64(j, "pinned", 1);
    api_call(j, r, c->api_enter, c->api_exit);
    scope_refs(j, c->scope, c->path);
    kv_opt(j, "stack", c->stack);
}

static void fmt_memset(jw *j, const rec *r)
{
    const __typeof__(r->u.ms) *m = &r->u.ms;
    jw_kv_str(j, "type", "memset");
    kv_opt(j, "dev", m->dev);
    kv_opt(j, "stream", m->stream);
    kv_opt(j, "corr", m->corr);
    jw_kv_u64(j, "bytes", m->bytes);
    kv_opt(j, "value", m->value);
    dur(j, r->ts, m->end);
    api_call(j, r, m->api_enter, m->api_exit);
    scope_refs(j, m->scope, m->path);
}

static void fmt_sync(jw *j, const rec *r)
{
    const __typeof__(r->u.sy) *s = &r->u.sy;
    jw_kv_str(j, "type", "sync");
    kv_opt(j, "dev", s->dev);
    kv_opt(j, "stream", s->stream);
    kv_opt(j, "corr", s->corr);
    jw_kv_str(j, "kind", fmt_sync_kind(s->kind));
    dur(j, r->ts, s->end);
    jw_kv_u64(j, "tid", r->tid);
    scope_refs(j, s->scope, s->path);
    kv_opt(j, "stack", s->stack);
}

static void fmt_memop(jw *j, const rec *r)
{
    const __typeof__(r->u.mo) *m = &r->u.mo;
    char addr[24];
    jw_kv_str(j, "type", m->is_free ? "free" : "alloc");
    kv_opt(j, "dev", m->dev);
    kv_opt(j, "stream", m->stream);
    kv_opt(j, "corr", m->corr);
    jw_kv_str(j, "kind", fmt_mem_kind(m->kind));
    snprintf(addr, sizeof addr, "0x%llx", (unsigned long long)m->address);
    jw_kv_str(j, "addr", addr);
    jw_kv_u64(j, "bytes", m->bytes);
    scope_refs(j, m->scope, m->path);
    kv_opt(j, "stack", m->stack);
}

static void fmt_scope(jw *j, const rec *r)
{
    const __typeof__(r->u.sc) *s = &r->u.sc;
    int end = r->type == REC_SCOPE_END;
    jw_kv_str(j, "type", end ? "scope_end" : "scope_begin");
    jw_kv_u64(j, "id", s->token);
    jw_kv_u64(j, "name", s->name);
    jw_kv_u64(j, "path", s->path);
    kv_opt(j, "parent", s->parent);
    jw_kv_u64(j, "depth", s->depth);
    jw_kv_u64(j, "tid", r->tid);
    if (end) {
        dur(j, s->begin_ts, r->ts);
        if (r->flags & 1)
            jw_kv_u64(j, "unclosed", 1);
    }
}

static void fmt_sass(jw *j, const rec *r)
{
    const __typeof__(r->u.sass) *s = &r->u.sass;
    jw_kv_str(j, "type", "sass");
    kv_opt(j, "dev", s->dev);
    jw_kv_u64(j, "func", s->func);
    kv_opt(j, "file", s->file);
    kv_opt(j, "line", s->line);
    jw_kv_u64(j, "pc", s->pc);
    jw_kv_u64(j, "inst", s->inst);
    jw_kv_u64(j, "thread_inst", s->thread_inst);
    jw_kv_u64(j, "sectors", s->sectors);
    jw_kv_u64(j, "sectors_ideal", s->sectors_ideal);
    scope_refs_full(j, s->scope, s->path);
}

static void fmt_pcsamp(jw *j, const rec *r)
{
    const __typeof__(r->u.pc) *p = &r->u.pc;
    uint64_t total = 0;
    jw_kv_str(j, "type", "pcsamp");
    kv_opt(j, "dev", p->dev);
    jw_kv_u64(j, "func", p->func);
    kv_opt(j, "file", p->file);
    kv_opt(j, "line", p->line);
    jw_kv_u64(j, "pc", p->pc);
    char keys[REC_PC_REASONS][64];
    uint64_t sums[REC_PC_REASONS];
    uint32_t nk = 0;
    for (uint32_t i = 0; i < p->n && i < REC_PC_REASONS; i++) {
        const intern_entry *e = intern_get(p->reason[i]);
        char key[64];
        size_t n = e && e->str ? e->len : 0;
        uint32_t k;
        /* reason names are identifiers: anything else becomes '_' so the
         * key needs no escaping and is valid UTF-8 */
        if (n >= sizeof key)
            n = sizeof key - 1;
        for (size_t c = 0; c < n; c++) {
            char ch = e->str[c];
            int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                     (ch >= '0' && ch <= '9') || ch == '_' || ch == '.';
            key[c] = ok ? ch : '_';
        }
        key[n] = 0;
        if (!n)
            snprintf(key, sizeof key, "reason_%u", p->reason[i]);
        /* one key per name as written: reasons that read the same are
         * summed */
        for (k = 0; k < nk; k++)
            if (!strcmp(keys[k], key))
                break;
        if (k == nk) {
            memcpy(keys[nk], key, sizeof key);
            sums[nk++] = 0;
        }
        sums[k] += p->samples[i];
        total += p->samples[i];
    }
    jw_key(j, "stalls");
    jw_obj_begin(j);
    for (uint32_t k = 0; k < nk; k++)
        jw_kv_u64(j, keys[k], sums[k]);
    jw_obj_end(j);
    jw_kv_u64(j, "samples", total);
    scope_refs_full(j, p->scope, p->path);
}

void fmt_record(jw *j, const rec *r)
{
    switch (r->type) {
    case REC_KERNEL: fmt_kernel(j, r); break;
    case REC_MEMCPY: fmt_memcpy(j, r); break;
    case REC_MEMSET: fmt_memset(j, r); break;
    case REC_SYNC: fmt_sync(j, r); break;
    case REC_MEMOP: fmt_memop(j, r); break;
    case REC_SCOPE_BEGIN:
    case REC_SCOPE_END: fmt_scope(j, r); break;
    case REC_MARKER:
        jw_kv_str(j, "type", "marker");
        jw_key(j, "text");
        jw_strn(j, r->u.mk.text, r->u.mk.len, REC_MARKER_MAX);
        jw_kv_u64(j, "tid", r->tid);
        kv_opt(j, "scope", r->u.mk.scope);
        if (r->flags & 1)
            jw_kv_u64(j, "cut", 1);
        break;
    case REC_COUNTER:
        jw_kv_str(j, "type", "counter");
        jw_kv_u64(j, "name", r->u.ctr.name);
        jw_kv_i64(j, "value", r->u.ctr.value);
        break;
    case REC_SASS: fmt_sass(j, r); break;
    case REC_PCSAMP: fmt_pcsamp(j, r); break;
    default: break;
    }
    jw_obj_end(j);
}

static void fmt_launch(jw *j, const intern_launch *l)
{
    jw_kv_u64(j, "name", l->name);
    xyz(j, "block", l->block);
    jw_kv_u64(j, "regs", l->regs);
    kv_opt(j, "smem", l->smem_static);
    kv_opt(j, "dsmem", l->smem_dynamic);
    kv_opt(j, "lmem", l->local_mem);
    if (l->occ >= 0.0f) {
        jw_key(j, "occ");
        jw_f64(j, l->occ, 4);
        if (l->limiters)
            jw_kv_str(j, "lim", fmt_limiters(l->limiters));
    }
}

void fmt_dict(jw *j, const intern_entry *e)
{
    static const char *const kinds[] = { "name", "path", "stack", "launch" };
    jw_kv_str(j, "type", "dict");
    jw_kv_u64(j, "id", e->id);
    jw_kv_str(j, "kind", kinds[e->kind & 3]);
    if (e->kind == IK_LAUNCH) {
        intern_launch l;
        memcpy(&l, e->str, sizeof l);
        fmt_launch(j, &l);
    } else if (e->kind == IK_PATH) {
        jw_kv_u64(j, "parent", e->parent);
        jw_kv_u64(j, "name", e->name);
        jw_kv_u64(j, "depth", e->depth);
    } else if (e->kind == IK_STACK) {
        const char *p = e->str, *end = e->str + e->len;
        jw_key(j, "frames");
        jw_arr_begin(j);
        while (p <= end && e->len) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
            jw_strn(j, p, n, n);
            if (!nl)
                break;
            p = nl + 1;
        }
        jw_arr_end(j);
    } else {
        char dm[INTERN_MAX_LEN + 1];
        jw_key(j, "name");
        jw_strn(j, e->str, e->len, INTERN_MAX_LEN);
        /* collector thread: a C++ kernel or function name, readable */
        if (e->len > 2 && client_demangle(e->str, dm, sizeof dm))
            jw_kv_str(j, "demangled", dm);
    }
    jw_obj_end(j);
}

static void fmt_device(jw *j, const gpu_device *d)
{
    char cc[16];
    jw_obj_begin(j);
    jw_kv_u64(j, "id", d->id);
    jw_kv_str(j, "name", d->name);
    if (d->uuid[0])
        jw_kv_str(j, "uuid", d->uuid);
    if (d->pci_bus_id[0])
        jw_kv_str(j, "pci", d->pci_bus_id);
    if (d->driver[0])
        jw_kv_str(j, "driver", d->driver);
    if (d->cc_major) {
        snprintf(cc, sizeof cc, "%d.%d", d->cc_major, d->cc_minor);
        jw_kv_str(j, "cc", cc);
    }
    kv_opt(j, "sms", d->sm_count);
    kv_opt(j, "mem", d->mem_total);
    kv_opt(j, "power_limit", d->power_limit_mw);
    kv_opt(j, "max_sm_clock", d->max_sm_clock_mhz);
    kv_opt(j, "max_mem_clock", d->max_mem_clock_mhz);
    kv_opt(j, "bus_width", d->mem_bus_width);
    kv_opt(j, "max_threads_sm", d->max_threads_per_sm);
    kv_opt(j, "max_blocks_sm", d->max_blocks_per_sm);
    kv_opt(j, "regs_sm", d->regs_per_sm);
    kv_opt(j, "smem_sm", d->smem_per_sm);
    kv_opt(j, "smem_block_optin", d->smem_per_block_optin);
    if (d->simulated) {
        jw_key(j, "simulated");
        jw_bool(j, 1);
    }
    jw_obj_end(j);
}

void fmt_session(jw *j, uint32_t file_index)
{
    const client_state *c = &g_client;
    jw_kv_str(j, "type", "session");
    jw_kv_str(j, "app", c->cfg.app);
    jw_kv_str(j, "host", c->host);
    jw_kv_u64(j, "pid", c->pid);
    jw_kv_u64(j, "start", c->start_ns);
    jw_kv_u64(j, "file", file_index);
    jw_kv_str(j, "lib", GPUFL_VERSION_STRING);
    jw_key(j, "simulated");
    jw_bool(j, c->simulated);
    jw_key(j, "cmd");
    jw_strn(j, c->cmdline, strlen(c->cmdline), 1000);
    jw_kv_u64(j, "interval_ms", c->cfg.system_interval_ms);
    if (c->env_warning[0])
        jw_kv_str(j, "warning", c->env_warning);
    jw_key(j, "engines");
    jw_obj_begin(j);
    for (int i = 0; i < c->n_engines; i++)
        jw_kv_str(j, c->engine_names[i], c->engines[i].status);
    jw_kv_str(j, "host", c->host_status);
    jw_obj_end(j);
    jw_key(j, "devices");
    jw_arr_begin(j);
    for (int i = 0; i < c->n_devices; i++)
        fmt_device(j, &c->devices[i]);
    jw_arr_end(j);
    jw_obj_end(j);
}

void fmt_loss(jw *j, const char *reason, uint64_t count, uint64_t total,
              const char *detail)
{
    jw_kv_str(j, "type", "loss");
    jw_kv_str(j, "reason", reason);
    jw_kv_u64(j, "count", count);
    /* cumulative: if an earlier loss line was itself lost (a failed
     * write), the next one still gives the exact figure */
    jw_kv_u64(j, "total", total);
    if (detail)
        jw_kv_str(j, "detail", detail);
    jw_obj_end(j);
}

void fmt_session_end(jw *j, const char *reason, uint64_t lines, uint64_t lost,
                     uint32_t rotations)
{
    jw_kv_str(j, "type", "session_end");
    jw_kv_str(j, "reason", reason);
    jw_kv_u64(j, "dur", client_now() - g_client.start_ns);
    jw_kv_u64(j, "lines", lines);
    jw_kv_u64(j, "lost", lost);
    jw_kv_u64(j, "rotations", rotations);
    jw_obj_end(j);
}
