/*
 * api.c - libgpufl's one process-wide state and its hot paths: the
 * per-thread rings and scope stacks, scopes, markers, counters and the
 * record calls that put events into the rings.  Session start and stop are
 * in session.c.
 *
 * Hot-path rules (each public record/scope call): one relaxed load of
 * `active`, a thread-local lookup, a lock-free dictionary probe for string
 * names, a copy into the thread's own ring, one release store.  No locks,
 * no allocation after the thread's first event, no system calls except a
 * futex wake when a ring is more than half full while the collector sleeps.
 */
#include "client_int.h"

#include <linux/futex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/clock.h"
#include "intern.h"

client_state g_client;

static _Atomic(ring *) rings[CLIENT_MAX_THREADS];
static _Atomic uint32_t ring_hwm; /* slots [0, hwm) may be in use */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;
static _Atomic uint64_t scope_ids = 1;

typedef struct scope_frame {
    uint64_t token, begin;
    uint32_t name, path;
    uint32_t gen;
    uint32_t dropped; /* its begin was dropped: drop the end too, so the
                         tree written stays well formed */
} scope_frame;

/* Per-thread caches in front of the shared dictionary: a scope name
 * pointer seen before, and a (parent path, name) pair seen before, resolve
 * without hashing.  Direct-mapped; a miss falls through to intern.c. */
#define NAME_CACHE 64
#define PATH_CACHE 64

typedef struct tls_state {
    const char *name_ptr[NAME_CACHE];
    const intern_entry *name_ent[NAME_CACHE];
    uint64_t path_key[PATH_CACHE];
    uint32_t path_val[PATH_CACHE];
    ring *r;
    uint32_t tid;
    uint32_t depth;
    uint64_t id_next, id_end;
    scope_frame stack[CLIENT_MAX_SCOPE_DEPTH];
} tls_state;

/* initial-exec: one TLS read on the hot path instead of a __tls_get_addr
 * call; 16 bytes fit the static TLS surplus glibc keeps for dlopen'ed
 * libraries (Python's ctypes loads us that way). */
static __thread tls_state *tls __attribute__((tls_model("initial-exec")));
static __thread int tls_failed __attribute__((tls_model("initial-exec")));

/* ---- logging and errors ---- */

static const char *const level_name[] = { "error", "warn", "info", "debug" };

void client_log(gpufl_log_level lvl, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    const client_cfg *c = &g_client.cfg;
    int level = c->log_level;
    /* a callback with no level chosen gets errors and warnings */
    if (c->log && level < 0)
        level = GPUFL_LOG_WARN;
    if ((int)lvl > level)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->log)
        c->log(lvl, msg, c->log_ud);
    else
        fprintf(stderr, "gpufl %s: %s\n", level_name[lvl & 3], msg);
}

void client_env_warning(const char *msg)
{
    if (!msg)
        g_client.env_warning[0] = 0;
    else
        snprintf(g_client.env_warning, sizeof g_client.env_warning, "%s", msg);
}

void client_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_client.last_error, sizeof g_client.last_error, fmt, ap);
    va_end(ap);
}

const char *gpufl_last_error(void)
{
    return g_client.last_error;
}

uint64_t client_now(void)
{
    return clock_mono_ns() - g_client.mono_base + g_client.start_ns;
}

uint64_t gpufl_now_ns(void)
{
    if (!g_client.start_ns)
        return clock_real_ns();
    return client_now();
}

/* ---- thread registry ---- */

static void tls_destroy(void *p)
{
    tls_state *t = p;
    if (t->r)
        atomic_store_explicit(&t->r->dead, 1, memory_order_release);
    free(t);
    tls = NULL;
}

static void tls_key_make(void)
{
    pthread_key_create(&tls_key, tls_destroy);
}

static tls_state *tls_setup(void)
{
    tls_state *t;
    uint32_t slot;
    if (tls_failed)
        return NULL;
    pthread_once(&tls_once, tls_key_make);
    t = calloc(1, sizeof *t);
    if (!t)
        goto fail;
    t->tid = (uint32_t)syscall(SYS_gettid);
    t->r = ring_new(g_client.cfg.ring_events, t->tid);
    if (!t->r)
        goto fail;
    pthread_mutex_lock(&reg_lock);
    for (slot = 0; slot < CLIENT_MAX_THREADS; slot++)
        if (!atomic_load_explicit(&rings[slot], memory_order_relaxed))
            break;
    if (slot == CLIENT_MAX_THREADS) {
        pthread_mutex_unlock(&reg_lock);
        client_log(GPUFL_LOG_WARN,
                   "more than %d threads record events; "
                   "thread %u is not captured",
                   CLIENT_MAX_THREADS, t->tid);
        goto fail;
    }
    atomic_store_explicit(&rings[slot], t->r, memory_order_release);
    if (slot + 1 > atomic_load_explicit(&ring_hwm, memory_order_relaxed))
        atomic_store_explicit(&ring_hwm, slot + 1, memory_order_release);
    pthread_mutex_unlock(&reg_lock);
    pthread_setspecific(tls_key, t);
    tls = t;
    return t;
fail:
    if (t) {
        ring_free(t->r);
        free(t);
    }
    tls_failed = 1; /* do not retry on every event */
    return NULL;
}

ring *client_thread_ring(void)
{
    tls_state *t = tls ? tls : tls_setup();
    return t ? t->r : NULL;
}

ring *client_ring_at(uint32_t i)
{
    return atomic_load_explicit(&rings[i], memory_order_acquire);
}

uint32_t client_ring_slots(void)
{
    return atomic_load_explicit(&ring_hwm, memory_order_acquire);
}

void client_ring_release(uint32_t i)
{
    ring *r;
    pthread_mutex_lock(&reg_lock);
    r = atomic_load_explicit(&rings[i], memory_order_relaxed);
    atomic_store_explicit(&rings[i], NULL, memory_order_release);
    pthread_mutex_unlock(&reg_lock);
    ring_free(r);
}

void client_kick(void)
{
    atomic_fetch_add_explicit(&g_client.wake, 1, memory_order_release);
    syscall(SYS_futex, &g_client.wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* ---- the hot path ---- */

static inline int is_active(void)
{
    return atomic_load_explicit(&g_client.active, memory_order_relaxed);
}

static inline tls_state *get_tls(void)
{
    return tls ? tls : tls_setup();
}

/* A slot on the thread's ring with the common header filled, or NULL (the
 * drop is counted against `stream`). */
static inline rec *rec_begin(tls_state *t, uint16_t type, int stream,
                             uint64_t ts)
{
    rec *r = ring_reserve(t->r);
    if (!r) {
        ring_drop(t->r, stream);
        return NULL;
    }
    r->type = type;
    r->gen = (uint8_t)atomic_load_explicit(&g_client.gen, memory_order_relaxed);
    r->flags = 0;
    r->tid = t->tid;
    r->ts = ts;
    return r;
}

static inline void rec_end(tls_state *t)
{
    ring *r = t->r;
    ring_commit(r);
    /* Every eighth of the ring, make sure a sleeping collector knows we
     * are filling up; waking it at a quarter full leaves it three
     * quarters of the ring to get scheduled on a busy machine.  Cheap:
     * one branch per event, a load every cap/8. */
    if ((r->head_local & ((r->mask + 1) / 8 - 1)) == 0 &&
        atomic_load_explicit(&g_client.collector_sleeping,
                             memory_order_relaxed)) {
        uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
        if ((r->head_local - tail) * 4 > r->mask)
            client_kick();
    }
}

_Atomic(client_scope_hook_fn) client_scope_hook;

static inline void scope_hook(void)
{
    client_scope_hook_fn h =
        atomic_load_explicit(&client_scope_hook, memory_order_acquire);
    if (h)
        h();
}

static uint64_t scope_begin_id(tls_state *t, uint32_t name_id, uint64_t now)
{
    uint32_t parent, path;
    uint64_t token;
    scope_frame *f;
    rec *r;
    scope_hook();
    if (t->depth >= CLIENT_MAX_SCOPE_DEPTH) {
        t->r->depth_drops++;
        atomic_store_explicit(&t->r->depth_pub, t->r->depth_drops,
                              memory_order_relaxed);
        return 0;
    }
    parent = t->depth ? t->stack[t->depth - 1].path : 0;
    {
        uint64_t key = ((uint64_t)parent << 32) | name_id;
        uint32_t slot = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 58);
        if (t->path_key[slot] == key) {
            path = t->path_val[slot];
        } else {
            path = intern_path(parent, name_id);
            t->path_key[slot] = key;
            t->path_val[slot] = path;
        }
    }
    if (t->id_next == t->id_end) {
        t->id_next =
            atomic_fetch_add_explicit(&scope_ids, 256, memory_order_relaxed);
        t->id_end = t->id_next + 256;
    }
    token = t->id_next++;
    f = &t->stack[t->depth++];
    f->token = token;
    f->begin = now;
    f->name = name_id;
    f->path = path;
    f->gen = atomic_load_explicit(&g_client.gen, memory_order_relaxed);
    r = rec_begin(t, REC_SCOPE_BEGIN, ST_SCOPE, now);
    f->dropped = r == NULL;
    if (r) {
        r->u.sc.token = token;
        r->u.sc.parent = t->depth > 1 ? t->stack[t->depth - 2].token : 0;
        r->u.sc.begin_ts = now;
        r->u.sc.name = name_id;
        r->u.sc.path = path;
        r->u.sc.depth = t->depth;
        rec_end(t);
    }
    return token;
}

uint64_t gpufl_scope_begin(const char *name)
{
    tls_state *t;
    uint32_t id;
    if (!is_active() || !name || !(t = get_tls()))
        return 0;
    {
        /* A name pointer seen before is usually the same literal; its
         * content is still compared, so a reused buffer is never
         * misattributed. */
        uint32_t slot = (uint32_t)(((uintptr_t)name >> 3) & (NAME_CACHE - 1));
        const intern_entry *e = t->name_ent[slot];
        if (t->name_ptr[slot] == name && e && strcmp(e->str, name) == 0) {
            id = e->id;
        } else {
            id = intern_name(name, strlen(name));
            if (!id)
                return 0;
            t->name_ptr[slot] = name;
            t->name_ent[slot] = intern_get(id);
        }
    }
    return scope_begin_id(t, id, client_now());
}

uint64_t gpufl_scope_begin_id(uint32_t name_id)
{
    tls_state *t;
    if (!is_active() || !intern_get(name_id) || !(t = get_tls()))
        return 0;
    return scope_begin_id(t, name_id, client_now());
}

uint64_t client_scope_begin_at(uint32_t name_id, uint64_t ts)
{
    tls_state *t;
    if (!is_active() || !intern_get(name_id) || !(t = get_tls()))
        return 0;
    return scope_begin_id(t, name_id, ts);
}

static void scope_end_at(uint64_t token, uint64_t now)
{
    tls_state *t = tls;
    uint32_t i, gen;
    if (!token || token == UINT64_MAX || !t || !t->depth)
        return;
    for (i = t->depth; i > 0; i--)
        if (t->stack[i - 1].token == token)
            break;
    if (i == 0)
        return; /* not open on this thread: ignore */
    scope_hook();
    gen = atomic_load_explicit(&g_client.gen, memory_order_relaxed);
    /* Scopes opened inside this one and never ended are closed with it and
     * flagged, so the tree stays well formed. */
    while (t->depth >= i) {
        scope_frame *f = &t->stack[t->depth - 1];
        rec *r;
        t->depth--;
        if (!is_active() || f->gen != gen)
            continue;
        if (f->dropped) {
            ring_drop(t->r, ST_SCOPE);
            continue;
        }
        r = rec_begin(t, REC_SCOPE_END, ST_SCOPE, now);
        if (!r)
            continue;
        r->flags = f->token != token; /* 1 = closed by an outer end */
        r->u.sc.token = f->token;
        r->u.sc.parent = t->depth ? t->stack[t->depth - 1].token : 0;
        r->u.sc.begin_ts = f->begin;
        r->u.sc.name = f->name;
        r->u.sc.path = f->path;
        r->u.sc.depth = t->depth + 1;
        rec_end(t);
    }
}

void gpufl_scope_end(uint64_t token)
{
    if (token && token != UINT64_MAX)
        scope_end_at(token, client_now());
}

void client_scope_end_at(uint64_t token, uint64_t ts)
{
    scope_end_at(token, ts);
}

void gpufl_current_scope(uint64_t *token, uint32_t *path_id)
{
    tls_state *t = tls;
    uint64_t tok = 0;
    uint32_t path = 0;
    if (t && t->depth) {
        tok = t->stack[t->depth - 1].token;
        path = t->stack[t->depth - 1].path;
    }
    if (token)
        *token = tok;
    if (path_id)
        *path_id = path;
}

uint32_t gpufl_intern(const char *name)
{
    return name ? intern_name(name, strlen(name)) : 0;
}

uint32_t gpufl_intern_stack(const char *const *frames, size_t n)
{
    return intern_stack(frames, n);
}

void gpufl_marker(const char *text)
{
    tls_state *t;
    rec *r;
    size_t n;
    if (!is_active() || !text || !(t = get_tls()))
        return;
    r = rec_begin(t, REC_MARKER, ST_SCOPE, client_now());
    if (!r)
        return;
    n = strnlen(text, REC_MARKER_MAX + 1);
    r->flags = n > REC_MARKER_MAX; /* cut */
    if (n > REC_MARKER_MAX) {
        n = REC_MARKER_MAX;
        /* never cut inside a UTF-8 sequence */
        while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80)
            n--;
    }
    memcpy(r->u.mk.text, text, n);
    r->u.mk.len = (uint32_t)n;
    r->u.mk.scope = t->depth ? t->stack[t->depth - 1].token : 0;
    rec_end(t);
}

/* Fill the scope fields of a record from the caller's stack when asked. */
static inline void attribute(const tls_state *t, uint64_t scope, uint32_t path,
                             int no_scope, uint64_t *out_scope,
                             uint32_t *out_path)
{
    if (!scope && !path && !no_scope && t->depth) {
        scope = t->stack[t->depth - 1].token;
        path = t->stack[t->depth - 1].path;
    }
    *out_scope = scope;
    *out_path = path;
}

/* Structs only grow (libbpf's OPTS rule).  A caller built against an
 * older header passes a smaller sz: its struct is copied into a zeroed
 * current one (the slow path), so new fields read as 0 and nothing past
 * its sz is read.  A caller built against a newer header passes a larger
 * sz: accepted only when the fields this library does not know are 0,
 * since recording without them would silently lose what the caller set.
 * record_min_size() has the first published sizes. */
#define RECORD_PROLOGUE(arg, stype, type, stream, ts)                          \
    tls_state *t;                                                              \
    rec *r;                                                                    \
    stype up_;                                                                 \
    if (!is_active())                                                          \
        return GPUFL_ENOTINIT;                                                 \
    if (!(arg) || (arg)->sz != sizeof *(arg)) {                                \
        if (!(arg) || (arg)->sz < record_min_size(type) ||                     \
            (arg)->sz > CLIENT_OPTS_SZ_MAX ||                                  \
            client_tail_set((arg), sizeof *(arg), (arg)->sz))                  \
            return GPUFL_EINVAL;                                               \
        if ((arg)->sz < sizeof *(arg)) {                                       \
            memset(&up_, 0, sizeof up_);                                       \
            memcpy(&up_, (arg), (arg)->sz);                                    \
            (arg) = &up_;                                                      \
        }                                                                      \
    }                                                                          \
    if (!(t = get_tls()))                                                      \
        return GPUFL_ENOMEM;                                                   \
    r = rec_begin(t, type, stream, ts);                                        \
    if (!r)                                                                    \
    return GPUFL_EFULL

/* The first published size of each record struct (v0.1). */
static size_t record_min_size(int type)
{
    /* Fixed numbers, not sizeof: when a struct grows, callers built with
     * the old header keep working.  (x86-64 sizes of gpufl 0.1.) */
    switch (type) {
    case REC_KERNEL: return 128;
    case REC_MEMCPY: return 72;
    case REC_MEMSET: return 64;
    case REC_SYNC: return 56;
    case REC_MEMOP: return 72;
    case REC_SASS: return 80;
    case REC_PCSAMP: return 120;
    default: return SIZE_MAX;
    }
}

_Static_assert(sizeof(gpufl_kernel) >= 128 && sizeof(gpufl_memcpy) >= 72 &&
                   sizeof(gpufl_memset) >= 64 && sizeof(gpufl_sync) >= 56 &&
                   sizeof(gpufl_memop) >= 72 && sizeof(gpufl_sass) >= 80 &&
                   sizeof(gpufl_pcsamp) >= 120,
               "record structs only grow");

int gpufl_record_kernel(const gpufl_kernel *k)
{
    RECORD_PROLOGUE(k, gpufl_kernel, REC_KERNEL, ST_DEVICE, k->start_ns);
    r->u.k.name = k->name_id;
    r->u.k.dev = k->device;
    r->u.k.stream = k->stream;
    r->u.k.corr = k->corr;
    memcpy(r->u.k.grid, k->grid, sizeof k->grid);
    memcpy(r->u.k.block, k->block, sizeof k->block);
    r->u.k.regs = k->regs;
    r->u.k.smem_static = k->smem_static;
    r->u.k.smem_dynamic = k->smem_dynamic;
    r->u.k.local_mem = k->local_mem;
    r->u.k.end = k->end_ns;
    r->u.k.api_enter = k->api_enter_ns;
    r->u.k.api_exit = k->api_exit_ns;
    /* the call's thread, when another one recorded it (CUPTI's buffers) */
    if (k->api_tid)
        r->tid = k->api_tid;
    /* a launch that ran cannot have 0 theoretical occupancy: 0 (a zeroed
     * struct) means unknown, like negative values */
    r->u.k.occ = k->occupancy > 0.0f ? k->occupancy : -1.0f;
    r->u.k.limiters = k->limiters;
    r->u.k.stack = k->stack_id;
    r->flags = (uint8_t)k->flags;
    attribute(t, k->scope, k->path_id, k->flags & GPUFL_KERNEL_NO_SCOPE,
              &r->u.k.scope, &r->u.k.path);
    rec_end(t);
    return GPUFL_OK;
}

int gpufl_record_memcpy(const gpufl_memcpy *m)
{
    RECORD_PROLOGUE(m, gpufl_memcpy, REC_MEMCPY, ST_DEVICE, m->start_ns);
    r->u.cp.kind = m->kind;
    r->u.cp.dev = m->device;
    r->u.cp.dst_dev = m->dst_device;
    r->u.cp.stream = m->stream;
    r->u.cp.corr = m->corr;
    r->u.cp.flags = m->flags;
    r->u.cp.bytes = m->bytes;
    r->u.cp.end = m->end_ns;
    r->u.cp.stack = m->stack_id;
    r->u.cp.api_enter = m->api_enter_ns;
    r->u.cp.api_exit = m->api_exit_ns;
    if (m->api_tid)
        r->tid = m->api_tid;
    attribute(t, m->scope, m->path_id, 0, &r->u.cp.scope, &r->u.cp.path);
    rec_end(t);
    return GPUFL_OK;
}

int gpufl_record_memset(const gpufl_memset *m)
{
    RECORD_PROLOGUE(m, gpufl_memset, REC_MEMSET, ST_DEVICE, m->start_ns);
    r->u.ms.dev = m->device;
    r->u.ms.stream = m->stream;
    r->u.ms.corr = m->corr;
    r->u.ms.value = m->value;
    r->u.ms.bytes = m->bytes;
    r->u.ms.end = m->end_ns;
    r->u.ms.api_enter = m->api_enter_ns;
    r->u.ms.api_exit = m->api_exit_ns;
    if (m->api_tid)
        r->tid = m->api_tid;
    attribute(t, m->scope, m->path_id, 0, &r->u.ms.scope, &r->u.ms.path);
    rec_end(t);
    return GPUFL_OK;
}

int gpufl_record_sync(const gpufl_sync *s)
{
    RECORD_PROLOGUE(s, gpufl_sync, REC_SYNC, ST_DEVICE, s->start_ns);
    r->u.sy.kind = s->kind;
    r->u.sy.dev = s->device;
    r->u.sy.stream = s->stream;
    r->u.sy.corr = s->corr;
    r->u.sy.end = s->end_ns;
    r->u.sy.stack = s->stack_id;
    attribute(t, s->scope, s->path_id, 0, &r->u.sy.scope, &r->u.sy.path);
    rec_end(t);
    return GPUFL_OK;
}

int gpufl_record_memop(const gpufl_memop *m)
{
    RECORD_PROLOGUE(m, gpufl_memop, REC_MEMOP, ST_DEVICE, m->ts_ns);
    r->u.mo.is_free = m->is_free;
    r->u.mo.kind = m->kind;
    r->u.mo.dev = m->device;
    r->u.mo.stream = m->stream;
    r->u.mo.corr = m->corr;
    r->u.mo.address = m->address;
    r->u.mo.bytes = m->bytes;
    r->u.mo.stack = m->stack_id;
    attribute(t, m->scope, m->path_id, 0, &r->u.mo.scope, &r->u.mo.path);
    rec_end(t);
    return GPUFL_OK;
}

int gpufl_record_sass(const gpufl_sass *s)
{
    RECORD_PROLOGUE(s, gpufl_sass, REC_SASS, ST_SCOPE, client_now());
    r->u.sass.dev = s->device;
    r->u.sass.func = s->func_id;
    r->u.sass.file = s->file_id;
    r->u.sass.line = s->line;
    r->u.sass.pc = s->pc;
    r->u.sass.inst = s->inst_executed;
    r->u.sass.thread_inst = s->thread_inst_executed;
    r->u.sass.sectors = s->gmem_sectors;
    r->u.sass.sectors_ideal = s->gmem_sectors_ideal;
    attribute(t, s->scope, s->path_id, 0, &r->u.sass.scope, &r->u.sass.path);
    rec_end(t);
    return GPUFL_OK;
}

int gpufl_record_pcsamp(const gpufl_pcsamp *p)
{
    uint32_t n;
    RECORD_PROLOGUE(p, gpufl_pcsamp, REC_PCSAMP, ST_SCOPE, client_now());
    n = p->n_reasons > REC_PC_REASONS ? REC_PC_REASONS : p->n_reasons;
    r->u.pc.dev = p->device;
    r->u.pc.func = p->func_id;
    r->u.pc.file = p->file_id;
    r->u.pc.line = p->line;
    r->u.pc.pc = p->pc;
    r->u.pc.n = n;
    memcpy(r->u.pc.reason, p->reason_id, n * sizeof(uint32_t));
    memcpy(r->u.pc.samples, p->samples, n * sizeof(uint32_t));
    attribute(t, p->scope, p->path_id, 0, &r->u.pc.scope, &r->u.pc.path);
    rec_end(t);
    return GPUFL_OK;
}

int client_push_raw(int stream, char *body, uint32_t len, uint64_t ts)
{
    tls_state *t;
    rec *r;
    if (!is_active() || !(t = get_tls())) {
        free(body);
        return GPUFL_ENOTINIT;
    }
    r = rec_begin(t, REC_RAW, stream, ts);
    if (!r) {
        free(body);
        return GPUFL_EFULL;
    }
    r->u.raw.stream = (uint32_t)stream;
    r->u.raw.len = len;
    r->u.raw.body = body;
    rec_end(t);
    return GPUFL_OK;
}

int client_push_counter(uint32_t name, int64_t value)
{
    tls_state *t;
    rec *r;
    if (!is_active() || !(t = get_tls()))
        return GPUFL_ENOTINIT;
    r = rec_begin(t, REC_COUNTER, ST_SCOPE, client_now());
    if (!r)
        return GPUFL_EFULL;
    r->u.ctr.name = name;
    r->u.ctr.value = value;
    rec_end(t);
    return GPUFL_OK;
}

/* ---- counters ---- */

/* Never destroyed: gpufl_counter_get may run on another thread while a
 * session starts or stops. */
static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;

void client_counters_atfork(void)
{
    pthread_mutex_init(&counter_lock, NULL);
}

gpufl_counter *gpufl_counter_get(const char *name)
{
    uint32_t id, n, gen;
    gpufl_counter_s *c = NULL;
    if (!is_active() || !name || !(id = intern_name(name, strlen(name))))
        return NULL;
    gen = atomic_load_explicit(&g_client.gen, memory_order_relaxed);
    pthread_mutex_lock(&counter_lock);
    n = atomic_load_explicit(&g_client.n_counters, memory_order_relaxed);
    for (uint32_t i = 0; i < n && !c; i++)
        if (g_client.counters[i].name == id)
            c = &g_client.counters[i];
    if (!c && n < CLIENT_MAX_COUNTERS) {
        c = &g_client.counters[n];
        c->name = id;
        atomic_store_explicit(&c->gen, 0, memory_order_relaxed);
        atomic_store_explicit(&g_client.n_counters, n + 1,
                              memory_order_release);
    }
    if (c && atomic_load_explicit(&c->gen, memory_order_relaxed) != gen) {
        /* first get in this session: it starts at 0 and counts from now */
        atomic_store_explicit(&c->value, 0, memory_order_relaxed);
        atomic_store_explicit(&c->gen, gen, memory_order_release);
    }
    pthread_mutex_unlock(&counter_lock);
    return c;
}

/* A handle not got in the running session: ignored, and said once per
 * session (log and a marker), since a count that silently goes nowhere is
 * a loss nobody would see. */
static int counter_live(gpufl_counter_s *c)
{
    uint32_t gen = atomic_load_explicit(&g_client.gen, memory_order_relaxed);
    if (atomic_load_explicit(&c->gen, memory_order_acquire) == gen)
        return 1;
    if (is_active() &&
        atomic_exchange_explicit(&g_client.counter_stale_gen, gen,
                                 memory_order_relaxed) != gen) {
        client_log(GPUFL_LOG_WARN,
                   "a gpufl_counter handle from an earlier session was used "
                   "and ignored; call gpufl_counter_get() again after "
                   "gpufl_init()");
        gpufl_marker("gpufl: counter handle from an earlier session "
                     "ignored; get it again after gpufl_init");
    }
    return 0;
}

void gpufl_counter_add(gpufl_counter *c, int64_t delta)
{
    if (c && counter_live(c))
        atomic_fetch_add_explicit(&c->value, delta, memory_order_relaxed);
}

void gpufl_counter_set(gpufl_counter *c, int64_t value)
{
    if (c && counter_live(c))
        atomic_store_explicit(&c->value, value, memory_order_relaxed);
}
