/*
 * fake_cupti.c - a fake libcupti.so.13 for GPU-less tests of the "cupti"
 * engine (docs/cupti-internals.md#testing-without-a-gpu).
 *
 * Exports the real CUPTI entry points the engine resolves, with CUPTI's
 * contracts: buffers come from the engine's request callback (called on the
 * thread that produced the record), full buffers are completed from a
 * worker thread, cuptiActivityFlushAll completes the rest on the caller's
 * thread, the record iterator is stateless, records use the CUDA 13.0
 * layouts (the engine's own declarations, src/client/cupti_abi_int.h) and
 * dropped records are counted.  Launch callbacks are replayed with the
 * real CUpti_CallbackData and parameter structs.
 *
 * Driven by the file named in FAKECUPTI_SCRIPT, one directive per line:
 *   version N | fail WHAT CODE (subscribe, register, enable, callback,
 *   cuinit) | devices N | func NAME regs=R smem=S lmem=L |
 *   kernel k=v... | memcpy k=v... | ptop k=v... | memset k=v... |
 *   sync k=v... | alloc k=v... | free k=v... | context ctx=C dev=D |
 *   bulk N | incomplete | worker_delay MS (the worker thread takes MS
 *   to deliver each full buffer) | clock_step NS after=K (the wall clock
 *   steps by NS in the K-th launch) | flush_hang MS (a forced
 *   cuptiActivityFlushAll blocks MS first: CUPTI's teardown hanging) |
 *   precontext ctx=C dev=D (a context that exists before activity is
 *   enabled: only cuptiActivityEnableAndDump reports it, as in CUPTI)
 * and the SASS / PC sampling directives of fake_cupti_prof.c.
 * Built with FAKE_CUPTI_NOSYM it lacks cuptiActivityRegisterCallbacks (a
 * reduced or foreign CUPTI).
 */
#include "client/cupti_prof_abi_int.h"
#include "fake_cupti.h"
#include "fake_cupti_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_LINES 256
#define MAX_FUNCS 32
#define MAX_QUEUE 4096

typedef struct func {
    char name[64];
    int regs, smem, lmem;
} func;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char lines[MAX_LINES][512];
static int n_lines;
static func funcs[MAX_FUNCS];
static int n_funcs;
static uint32_t version = 130001;
static int fail_subscribe, fail_register, fail_enable, fail_callback,
    fail_cuinit, n_devices = 2;
static long worker_delay_ms;   /* the worker's time per buffer it delivers */
static long flush_hang_ms;     /* a forced FlushAll blocks this long first */
static uint32_t pre_ctx[8][2]; /* precontext: (context, device) */
static int n_pre_ctx;
/* "clock_step NS after=K": CUPTI's clock is CLOCK_REALTIME, and the wall
 * clock is stepped by NS during the K-th launch (which takes 600 ms) */
static long long clock_step_ns;
static long clock_step_after;
static _Atomic long long clock_adj;
static _Atomic long n_launched;

static gfl_cupti_callback_fn cb;
static void *cb_ud;
static int subscribed;
static uint8_t enabled_cb[8][1024];
static gfl_cupti_buf_request_fn req;
static gfl_cupti_buf_complete_fn done;
static uint8_t enabled_kind[64];
static uint32_t next_corr = 1;
static size_t dropped;
static int delivered;

static uint8_t *cur;
static size_t cur_size, cur_used;
static uint8_t *q_buf[MAX_QUEUE];
static size_t q_used[MAX_QUEUE], q_size[MAX_QUEUE];
static int q_n;
#ifndef FAKE_CUPTI_NOSYM
static pthread_t worker;
static int worker_on;
#endif
static _Thread_local int in_cb;

static void parse_script(void)
{
    const char *path = getenv("FAKECUPTI_SCRIPT");
    FILE *f = path ? fopen(path, "r") : NULL;
    char line[512];
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        char w[32], a[64];
        long v = 0;
        unsigned pc[2];
        line[strcspn(line, "\n")] = 0;
        if (!line[0] || line[0] == '#')
            continue;
        if (fake_prof_parse(line)) /* SASS / PC sampling directives */
            continue;
        if (sscanf(line, "version %ld", &v) == 1)
            version = (uint32_t)v;
        else if (sscanf(line, "devices %ld", &v) == 1)
            n_devices = (int)v;
        else if (sscanf(line, "worker_delay %ld", &v) == 1)
            worker_delay_ms = v;
        else if (sscanf(line, "flush_hang %ld", &v) == 1)
            flush_hang_ms = v;
        else if (sscanf(line, "precontext ctx=%u dev=%u", &pc[0], &pc[1]) ==
                     2 &&
                 n_pre_ctx < 8) {
            pre_ctx[n_pre_ctx][0] = pc[0];
            pre_ctx[n_pre_ctx++][1] = pc[1];
        } else if (sscanf(line, "clock_step %lld after=%ld", &clock_step_ns,
                          &clock_step_after) == 2)
            ;
        else if (sscanf(line, "fail %31s %ld", w, &v) == 2) {
            if (!strcmp(w, "subscribe"))
                fail_subscribe = (int)v;
            else if (!strcmp(w, "register"))
                fail_register = (int)v;
            else if (!strcmp(w, "enable"))
                fail_enable = (int)v;
            else if (!strcmp(w, "callback"))
                fail_callback = (int)v;
            else if (!strcmp(w, "cuinit"))
                fail_cuinit = (int)v;
        } else if (sscanf(line, "func %63s", a) == 1 && n_funcs < MAX_FUNCS) {
            func *fn = &funcs[n_funcs++];
            const char *p;
            snprintf(fn->name, sizeof fn->name, "%s", a);
            fn->regs =
                (p = strstr(line, "regs=")) ? (int)strtol(p + 5, 0, 10) : 32;
            fn->smem =
                (p = strstr(line, "smem=")) ? (int)strtol(p + 5, 0, 10) : 0;
            fn->lmem =
                (p = strstr(line, "lmem=")) ? (int)strtol(p + 5, 0, 10) : 0;
        } else if (n_lines < MAX_LINES) {
            snprintf(lines[n_lines++], sizeof lines[0], "%s", line);
        }
    }
    fclose(f);
}

static void init(void)
{
    pthread_once(&once, parse_script);
}

static uint64_t now_real(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec +
           (uint64_t)atomic_load(&clock_adj);
}

static size_t rec_size(uint32_t kind)
{
    switch (kind) {
    case GFL_CUPTI_ACT_KERNEL:
    case GFL_CUPTI_ACT_CONCURRENT_KERNEL: return sizeof(gfl_cupti_kernel10);
    case GFL_CUPTI_ACT_MEMCPY: return sizeof(gfl_cupti_memcpy6);
    case GFL_CUPTI_ACT_MEMCPY2: return sizeof(gfl_cupti_memcpy_ptop4);
    case GFL_CUPTI_ACT_MEMSET: return sizeof(gfl_cupti_memset4);
    case GFL_CUPTI_ACT_SYNCHRONIZATION: return sizeof(gfl_cupti_sync2);
    case GFL_CUPTI_ACT_MEMORY2: return sizeof(gfl_cupti_memory4);
    case GFL_CUPTI_ACT_CONTEXT: return sizeof(gfl_cupti_context3);
    default: return 0;
    }
}

#ifndef FAKE_CUPTI_NOSYM
static void *worker_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!q_n)
            pthread_cond_wait(&cv, &mu);
        uint8_t *b = q_buf[0];
        size_t u = q_used[0], sz = q_size[0];
        q_n--;
        memmove(q_buf, q_buf + 1, (size_t)q_n * sizeof q_buf[0]);
        memmove(q_used, q_used + 1, (size_t)q_n * sizeof q_used[0]);
        memmove(q_size, q_size + 1, (size_t)q_n * sizeof q_size[0]);
        pthread_mutex_unlock(&mu);
        if (worker_delay_ms > 0) {
            /* a buffer the worker took is CUPTI's until it is delivered:
             * a forced flush in the meantime does not return it */
            struct timespec t = { (time_t)(worker_delay_ms / 1000),
                                  (long)(worker_delay_ms % 1000) * 1000000L };
            nanosleep(&t, NULL);
        }
        done(NULL, 0, b, sz, u); /* never under our lock */
        pthread_mutex_lock(&mu);
    }
    return NULL;
}
#endif

/* With mu held. */
static void queue_cur(void)
{
    if (!cur)
        return;
    if (q_n < MAX_QUEUE) {
        q_buf[q_n] = cur;
        q_used[q_n] = cur_used;
        q_size[q_n] = cur_size;
        q_n++;
        pthread_cond_signal(&cv);
    }
    cur = NULL;
    cur_used = cur_size = 0;
}

static void push(const void *rec)
{
    uint32_t kind = *(const uint32_t *)rec;
    size_t sz = rec_size(kind);
    pthread_mutex_lock(&mu);
    if (!sz || kind >= 64 || !enabled_kind[kind] || !req) {
        pthread_mutex_unlock(&mu);
        return;
    }
    if (cur && cur_used + sz > cur_size)
        queue_cur();
    if (!cur) {
        uint8_t *b = NULL;
        size_t bs = 0, maxr = 0;
        /* CUPTI asks on the application thread; the engine's request
         * callback takes no lock, so holding ours is safe here */
        req(&b, &bs, &maxr);
        if (!b || bs < sz || ((uintptr_t)b & 7)) {
            dropped++;
            pthread_mutex_unlock(&mu);
            return;
        }
        cur = b;
        cur_size = bs;
        cur_used = 0;
    }
    memcpy(cur + cur_used, rec, sz);
    cur_used += sz;
    pthread_mutex_unlock(&mu);
}

/* ---- CUPTI entry points ---- */

EXPORT int cuptiGetVersion(uint32_t *v)
{
    init();
    *v = version;
    return 0;
}

EXPORT int cuptiGetResultString(int r, const char **s)
{
    *s = r == 35 ? "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES" : "CUPTI_ERROR";
    return 0;
}

EXPORT int cuptiSubscribe(void **sub, gfl_cupti_callback_fn fn, void *ud)
{
    init();
    if (fail_subscribe)
        return fail_subscribe;
    if (subscribed)
        return GFL_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    subscribed = 1;
    cb = fn;
    cb_ud = ud;
    *sub = (void *)&subscribed;
    return 0;
}

EXPORT int cuptiUnsubscribe(void *sub)
{
    (void)sub;
    return 0;
}

EXPORT int cuptiFinalize(void)
{
    /* the engine must never finalize (docs/cupti-internals.md#teardown):
     * make it visible */
    fprintf(stderr, "fake_cupti: cuptiFinalize called\n");
    abort();
}

EXPORT int cuptiEnableCallback(uint32_t en, void *sub, uint32_t dom,
                               uint32_t cbid)
{
    (void)sub;
    if (fail_callback)
        return fail_callback;
    if (dom >= 8 || cbid >= 1024)
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    enabled_cb[dom][cbid] = en ? 1 : 0;
    return 0;
}

#ifndef FAKE_CUPTI_NOSYM
EXPORT int cuptiActivityRegisterCallbacks(gfl_cupti_buf_request_fn r,
                                          gfl_cupti_buf_complete_fn d)
{
    if (fail_register)
        return fail_register;
    pthread_mutex_lock(&mu);
    req = r;
    done = d;
    if (!worker_on && pthread_create(&worker, NULL, worker_main, NULL) == 0) {
        pthread_detach(worker);
        worker_on = 1;
    }
    pthread_mutex_unlock(&mu);
    return 0;
}
#endif

EXPORT int cuptiActivityEnable(uint32_t kind)
{
    if (fail_enable)
        return fail_enable;
    if (kind >= 64 || !rec_size(kind))
        return GFL_CUPTI_ERROR_INVALID_KIND;
    enabled_kind[kind] = 1;
    if (kind == GFL_CUPTI_ACT_MEMCPY)
        enabled_kind[GFL_CUPTI_ACT_MEMCPY2] = 1;
    return 0;
}

EXPORT int cuptiActivityDisable(uint32_t kind)
{
    if (kind >= 64 || !rec_size(kind))
        return GFL_CUPTI_ERROR_INVALID_KIND;
    enabled_kind[kind] = 0;
    if (kind == GFL_CUPTI_ACT_MEMCPY)
        enabled_kind[GFL_CUPTI_ACT_MEMCPY2] = 0;
    return 0;
}

/* CUPTI: enable the kind, then one record for each object of it that
 * already exists - for CONTEXT, the contexts made before (precontext). */
EXPORT int cuptiActivityEnableAndDump(uint32_t kind)
{
    int rc = cuptiActivityEnable(kind);
    if (rc || kind != GFL_CUPTI_ACT_CONTEXT)
        return rc;
    for (int i = 0; i < n_pre_ctx; i++) {
        gfl_cupti_context3 c;
        memset(&c, 0, sizeof c);
        c.kind = GFL_CUPTI_ACT_CONTEXT;
        c.context_id = pre_ctx[i][0];
        c.device_id = pre_ctx[i][1];
        push(&c);
    }
    return 0;
}

EXPORT int cuptiActivityGetNextRecord(uint8_t *buf, size_t valid,
                                      gfl_cupti_activity **rec)
{
    size_t off = 0, sz;
    gfl_cupti_activity *a;
    if (!buf || !rec)
        return GFL_CUPTI_ERROR_INVALID_PARAMETER;
    if (*rec) {
        sz = rec_size((*rec)->kind);
        if (!sz)
            return GFL_CUPTI_ERROR_INVALID_KIND;
        off = (size_t)((uint8_t *)*rec - buf) + sz;
    }
    if (off >= valid)
        return GFL_CUPTI_ERROR_MAX_LIMIT_REACHED;
    a = (gfl_cupti_activity *)(void *)(buf + off);
    sz = rec_size(a->kind);
    if (!sz || off + sz > valid)
        return GFL_CUPTI_ERROR_INVALID_KIND;
    *rec = a;
    return 0;
}

EXPORT int cuptiActivityFlushAll(uint32_t flag)
{
    uint8_t *b[MAX_QUEUE];
    size_t u[MAX_QUEUE], sz[MAX_QUEUE];
    int n;
    if (in_cb) {
        fprintf(stderr, "fake_cupti: FlushAll inside a callback\n");
        abort();
    }
    if (flag && flush_hang_ms > 0) {
        struct timespec t = { (time_t)(flush_hang_ms / 1000),
                              (long)(flush_hang_ms % 1000) * 1000000L };
        nanosleep(&t, NULL);
    }
    pthread_mutex_lock(&mu);
    queue_cur();
    n = q_n;
    memcpy(b, q_buf, (size_t)n * sizeof b[0]);
    memcpy(u, q_used, (size_t)n * sizeof u[0]);
    memcpy(sz, q_size, (size_t)n * sizeof sz[0]);
    q_n = 0;
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < n; i++)
        done(NULL, 0, b[i], sz[i], u[i]);
    return 0;
}

EXPORT int cuptiActivityGetNumDroppedRecords(void *ctx, uint32_t s, size_t *n)
{
    (void)ctx;
    (void)s;
    pthread_mutex_lock(&mu);
    *n = dropped;
    dropped = 0;
    pthread_mutex_unlock(&mu);
    return 0;
}

EXPORT int cuptiGetTimestamp(uint64_t *t)
{
    *t = now_real();
    return 0;
}

/* ---- test control, for the fake driver ---- */

int fake_resource_callback(uint32_t cbid, const void *data)
{
    if (!subscribed || !enabled_cb[GFL_CUPTI_CB_DOMAIN_RESOURCE][cbid])
        return 0;
    in_cb = 1;
    cb(cb_ud, GFL_CUPTI_CB_DOMAIN_RESOURCE, cbid, data);
    in_cb = 0;
    return 1;
}

void fake_script_init(void)
{
    init();
}

static void emit(uint32_t dom, uint32_t cbid, uint32_t site, const char *fn,
                 const char *sym, const void *params, uint32_t corr,
                 uint64_t *cdata, int *ret)
{
    gfl_cupti_callback_data d;
    if (!subscribed || !enabled_cb[dom][cbid])
        return;
    memset(&d, 0, sizeof d);
    d.callback_site = site;
    d.function_name = fn;
    d.function_params = params;
    d.function_return_value = site == GFL_CUPTI_API_EXIT ? ret : NULL;
    d.symbol_name = sym;
    d.context_uid = 1;
    d.correlation_data = cdata;
    d.correlation_id = corr;
    in_cb = 1;
    cb(cb_ud, dom, cbid, &d);
    in_cb = 0;
}

static const func *find_func(const char *name)
{
    for (int i = 0; i < n_funcs; i++)
        if (!strcmp(funcs[i].name, name))
            return &funcs[i];
    return NULL;
}

EXPORT void fakecupti_launch(uint32_t rt_cbid, uint32_t drv_cbid,
                             const char *name, const unsigned grid[3],
                             const unsigned block[3], unsigned smem,
                             void *stream, int fail)
{
    gfl_rt_launch_params rp;
    gfl_rt_launch_config rc;
    gfl_rt_launch_ex_params rxp;
    gfl_drv_launch_params dp;
    gfl_drv_launch_config dc;
    gfl_drv_launch_ex_params dxp;
    const void *rparams = &rp, *dparams = &dp;
    uint64_t rdata = 0, ddata = 0;
    uint32_t r = 0, d = 0;
    int ret = fail;
    gfl_cupti_kernel10 k;
    const func *fn = find_func(name);
    init();
    if (clock_step_after &&
        atomic_fetch_add(&n_launched, 1) + 1 == clock_step_after) {
        /* quiet before and after the step: the records around it are
         * each flushed within one side (the engine's stated limit) */
        struct timespec t = { 0, 300000000L };
        nanosleep(&t, NULL);
        atomic_store(&clock_adj, clock_step_ns);
        nanosleep(&t, NULL);
    }
    fake_prof_context(); /* the runtime makes its context at first use */
    pthread_mutex_lock(&mu);
    if (rt_cbid)
        r = next_corr++;
    if (drv_cbid)
        d = next_corr++;
    pthread_mutex_unlock(&mu);
    memset(&rp, 0, sizeof rp);
    rp.func = name;
    rp.grid_dim.x = grid[0];
    rp.grid_dim.y = grid[1];
    rp.grid_dim.z = grid[2];
    rp.block_dim.x = block[0];
    rp.block_dim.y = block[1];
    rp.block_dim.z = block[2];
    rp.shared_mem = smem;
    rp.stream = stream;
    memset(&rc, 0, sizeof rc);
    rc.grid_dim = rp.grid_dim;
    rc.block_dim = rp.block_dim;
    rc.dynamic_smem_bytes = smem;
    rc.stream = stream;
    rxp.config = &rc;
    rxp.func = name;
    rxp.args = NULL;
    if (rt_cbid == GFL_RT_CBID_cudaLaunchKernelExC_v11060)
        rparams = &rxp;
    memset(&dp, 0, sizeof dp);
    dp.f = (void *)(uintptr_t)name;
    dp.grid_x = grid[0];
    dp.grid_y = grid[1];
    dp.grid_z = grid[2];
    dp.block_x = block[0];
    dp.block_y = block[1];
    dp.block_z = block[2];
    dp.shared_mem_bytes = smem;
    dp.h_stream = stream;
    memset(&dc, 0, sizeof dc);
    dc.grid_x = grid[0];
    dc.grid_y = grid[1];
    dc.grid_z = grid[2];
    dc.block_x = block[0];
    dc.block_y = block[1];
    dc.block_z = block[2];
    dc.shared_mem_bytes = smem;
    dc.h_stream = stream;
    dxp.config = &dc;
    dxp.f = dp.f;
    dxp.kernel_params = NULL;
    dxp.extra = NULL;
    if (drv_cbid == GFL_DRV_CBID_cuLaunchKernelEx)
        dparams = &dxp;
    if (r)
        emit(GFL_CUPTI_CB_DOMAIN_RUNTIME_API, rt_cbid, GFL_CUPTI_API_ENTER,
             "cudaLaunch", name, rparams, r, &rdata, &ret);
    if (d)
        emit(GFL_CUPTI_CB_DOMAIN_DRIVER_API, drv_cbid, GFL_CUPTI_API_ENTER,
             "cuLaunch", name, dparams, d, &ddata, &ret);
    if (d)
        emit(GFL_CUPTI_CB_DOMAIN_DRIVER_API, drv_cbid, GFL_CUPTI_API_EXIT,
             "cuLaunch", name, dparams, d, &ddata, &ret);
    if (r)
        emit(GFL_CUPTI_CB_DOMAIN_RUNTIME_API, rt_cbid, GFL_CUPTI_API_EXIT,
             "cudaLaunch", name, rparams, r, &rdata, &ret);
    if (fail)
        return;
    memset(&k, 0, sizeof k);
    k.kind = GFL_CUPTI_ACT_CONCURRENT_KERNEL;
    k.registers_per_thread = (uint16_t)(fn ? fn->regs : 32);
    k.static_shared_memory = fn ? fn->smem : 0;
    k.local_memory_per_thread = (uint32_t)(fn ? fn->lmem : 0);
    k.start = now_real() + 1000;
    k.end = k.start + 2000;
    k.stream_id = (uint32_t)(uintptr_t)stream;
    k.grid_x = (int)grid[0];
    k.grid_y = (int)grid[1];
    k.grid_z = (int)grid[2];
    k.block_x = (int)block[0];
    k.block_y = (int)block[1];
    k.block_z = (int)block[2];
    k.dynamic_shared_memory = (int)smem;
    k.correlation_id = r ? r : d; /* runtime launches carry the runtime id */
    /* unscripted kernels keep the name they were launched by, as real
     * CUPTI names them (the launcher keeps that string alive) */
    k.name = fn ? fn->name : name;
    if (rt_cbid == GFL_RT_CBID_cudaLaunchCooperativeKernel_v9000 ||
        drv_cbid == GFL_DRV_CBID_cuLaunchCooperativeKernel)
        k.launch_type = 1;
    push(&k);
    fake_prof_ran(name);
}

/* A CUDA call that is not a launch (an allocation): its callbacks, the
 * runtime one (rt_cbid, 0 = none) around the driver one, with ret as both
 * return values. */
EXPORT int fakecupti_api(uint32_t rt_cbid, uint32_t drv_cbid,
                         const char *rt_name, const char *drv_name, int ret)
{
    uint64_t rdata = 0, ddata = 0;
    uint32_t r = 0, d = 0;
    init();
    pthread_mutex_lock(&mu);
    if (rt_cbid)
        r = next_corr++;
    if (drv_cbid)
        d = next_corr++;
    pthread_mutex_unlock(&mu);
    if (r)
        emit(GFL_CUPTI_CB_DOMAIN_RUNTIME_API, rt_cbid, GFL_CUPTI_API_ENTER,
             rt_name, NULL, NULL, r, &rdata, &ret);
    if (d) {
        emit(GFL_CUPTI_CB_DOMAIN_DRIVER_API, drv_cbid, GFL_CUPTI_API_ENTER,
             drv_name, NULL, NULL, d, &ddata, &ret);
        emit(GFL_CUPTI_CB_DOMAIN_DRIVER_API, drv_cbid, GFL_CUPTI_API_EXIT,
             drv_name, NULL, NULL, d, &ddata, &ret);
    }
    if (r)
        emit(GFL_CUPTI_CB_DOMAIN_RUNTIME_API, rt_cbid, GFL_CUPTI_API_EXIT,
             rt_name, NULL, NULL, r, &rdata, &ret);
    return ret;
}

static long kv(const char *line, const char *key, long def)
{
    char pat[40];
    const char *p;
    snprintf(pat, sizeof pat, " %s=", key);
    p = strstr(line, pat);
    return p ? strtoll(p + strlen(pat), NULL, 0) : def;
}

static void kv3(const char *line, const char *key, int out[3])
{
    char pat[40];
    const char *p;
    snprintf(pat, sizeof pat, " %s=", key);
    out[0] = out[1] = out[2] = 1;
    p = strstr(line, pat);
    if (p)
        sscanf(p + strlen(pat), "%d,%d,%d", &out[0], &out[1], &out[2]);
}

static void deliver_line(const char *l, uint64_t base)
{
    char w[16] = "";
    sscanf(l, "%15s", w);
    if (!strcmp(w, "kernel") || !strcmp(w, "incomplete")) {
        gfl_cupti_kernel10 k;
        static char names[MAX_LINES][64];
        static int nn;
        const char *p = strstr(l, " name=");
        int g[3], b[3];
        memset(&k, 0, sizeof k);
        k.kind = GFL_CUPTI_ACT_CONCURRENT_KERNEL;
        if (p && nn < MAX_LINES) {
            sscanf(p + 6, "%63s", names[nn]);
            k.name = names[nn++];
        }
        kv3(l, "grid", g);
        kv3(l, "block", b);
        k.grid_x = g[0];
        k.grid_y = g[1];
        k.grid_z = g[2];
        k.block_x = b[0];
        k.block_y = b[1];
        k.block_z = b[2];
        k.registers_per_thread = (uint16_t)kv(l, "regs", 32);
        k.static_shared_memory = (int)kv(l, "smem", 0);
        k.dynamic_shared_memory = (int)kv(l, "dsmem", 0);
        k.local_memory_per_thread = (uint32_t)kv(l, "lmem", 0);
        k.device_id = (uint32_t)kv(l, "dev", 0);
        k.stream_id = (uint32_t)kv(l, "stream", 0);
        k.correlation_id = (uint32_t)kv(l, "corr", 0);
        k.launch_type = (uint8_t)kv(l, "launch", 0);
        k.shmem_limit_config = (uint32_t)kv(l, "optin", 0);
        k.shared_memory_executed = (uint32_t)kv(l, "smemexec", 0);
        if (kv(l, "carveout", -1) >= 0) {
            k.is_shared_memory_carveout_requested = 1;
            k.shared_memory_carveout_requested = (uint8_t)kv(l, "carveout", 0);
        }
        k.cache_config = (uint8_t)kv(l, "cache", 0); /* requested nibble */
        if (w[0] == 'k') {
            k.start = base + (uint64_t)kv(l, "start", 0);
            k.end = k.start + (uint64_t)kv(l, "dur", 0);
        }
        push(&k);
    } else if (!strcmp(w, "memcpy")) {
        gfl_cupti_memcpy6 m;
        memset(&m, 0, sizeof m);
        m.kind = GFL_CUPTI_ACT_MEMCPY;
        m.copy_kind = (uint8_t)kv(l, "kind", 1);
        m.src_kind = (uint8_t)kv(l, "src", 1);
        m.dst_kind = (uint8_t)kv(l, "dst", 3);
        m.flags = (uint8_t)kv(l, "flags", 0);
        m.bytes = (uint64_t)kv(l, "bytes", 0);
        m.start = base + (uint64_t)kv(l, "start", 0);
        m.end = m.start + (uint64_t)kv(l, "dur", 0);
        m.device_id = (uint32_t)kv(l, "dev", 0);
        m.stream_id = (uint32_t)kv(l, "stream", 0);
        m.correlation_id = (uint32_t)kv(l, "corr", 0);
        m.runtime_correlation_id = (uint32_t)kv(l, "rcorr", 0);
        m.copy_count = 1;
        push(&m);
    } else if (!strcmp(w, "ptop")) {
        gfl_cupti_memcpy_ptop4 m;
        memset(&m, 0, sizeof m);
        m.kind = GFL_CUPTI_ACT_MEMCPY2;
        m.copy_kind = GFL_CUPTI_COPY_PTOP;
        m.src_kind = m.dst_kind = GFL_CUPTI_MEM_DEVICE;
        m.flags = (uint8_t)kv(l, "flags", 0);
        m.bytes = (uint64_t)kv(l, "bytes", 0);
        m.start = base + (uint64_t)kv(l, "start", 0);
        m.end = m.start + (uint64_t)kv(l, "dur", 0);
        m.src_device_id = (uint32_t)kv(l, "srcdev", 0);
        m.dst_device_id = (uint32_t)kv(l, "dstdev", 1);
        m.device_id = m.src_device_id;
        m.stream_id = (uint32_t)kv(l, "stream", 0);
        m.correlation_id = (uint32_t)kv(l, "corr", 0);
        push(&m);
    } else if (!strcmp(w, "memset")) {
        gfl_cupti_memset4 m;
        memset(&m, 0, sizeof m);
        m.kind = GFL_CUPTI_ACT_MEMSET;
        m.value = (uint32_t)kv(l, "value", 0);
        m.bytes = (uint64_t)kv(l, "bytes", 0);
        m.start = base + (uint64_t)kv(l, "start", 0);
        m.end = m.start + (uint64_t)kv(l, "dur", 0);
        m.device_id = (uint32_t)kv(l, "dev", 0);
        m.stream_id = (uint32_t)kv(l, "stream", 0);
        m.correlation_id = (uint32_t)kv(l, "corr", 0);
        m.flags = (uint16_t)kv(l, "flags", 0);
        m.memory_kind = GFL_CUPTI_MEM_DEVICE;
        push(&m);
    } else if (!strcmp(w, "sync")) {
        gfl_cupti_sync2 y;
        memset(&y, 0, sizeof y);
        y.kind = GFL_CUPTI_ACT_SYNCHRONIZATION;
        y.type = (uint32_t)kv(l, "type", 3);
        y.start = base + (uint64_t)kv(l, "start", 0);
        y.end = y.start + (uint64_t)kv(l, "dur", 0);
        y.correlation_id = (uint32_t)kv(l, "corr", 0);
        y.context_id = (uint32_t)kv(l, "ctx", 1);
        y.stream_id = (uint32_t)kv(l, "stream", (long)GFL_CUPTI_SYNC_INVALID);
        y.cuda_event_id = GFL_CUPTI_SYNC_INVALID;
        push(&y);
    } else if (!strcmp(w, "alloc") || !strcmp(w, "free")) {
        gfl_cupti_memory4 m;
        memset(&m, 0, sizeof m);
        m.kind = GFL_CUPTI_ACT_MEMORY2;
        m.memory_operation_type =
            w[0] == 'a' ? GFL_CUPTI_MEMOP_ALLOC : GFL_CUPTI_MEMOP_RELEASE;
        m.memory_kind = (uint32_t)kv(l, "kind", GFL_CUPTI_MEM_DEVICE);
        m.correlation_id = (uint32_t)kv(l, "corr", 0);
        m.address = (uint64_t)kv(l, "addr", 0);
        m.bytes = (uint64_t)kv(l, "bytes", 0);
        m.timestamp = base + (uint64_t)kv(l, "start", 0);
        m.device_id = (uint32_t)kv(l, "dev", 0);
        m.stream_id = (uint32_t)kv(l, "stream", 0xFFFFFFFF);
        m.context_id = 1;
        push(&m);
    } else if (!strcmp(w, "context")) {
        gfl_cupti_context3 c;
        memset(&c, 0, sizeof c);
        c.kind = GFL_CUPTI_ACT_CONTEXT;
        c.context_id = (uint32_t)kv(l, "ctx", 1);
        c.device_id = (uint32_t)kv(l, "dev", 0);
        push(&c);
    } else if (!strcmp(w, "bulk")) {
        long n = 0;
        gfl_cupti_kernel10 k;
        sscanf(l, "bulk %ld", &n);
        memset(&k, 0, sizeof k);
        k.kind = GFL_CUPTI_ACT_CONCURRENT_KERNEL;
        k.name = "bulk_kernel";
        k.grid_x = k.grid_y = k.grid_z = 1;
        k.block_x = 64;
        k.block_y = k.block_z = 1;
        k.registers_per_thread = 16;
        for (long i = 0; i < n; i++) {
            k.correlation_id = (uint32_t)(2000000 + i);
            k.start = base + (uint64_t)i * 10;
            k.end = k.start + 5;
            push(&k);
        }
    }
}

EXPORT void fakecupti_sync(void)
{
    uint64_t base = now_real();
    init();
    pthread_mutex_lock(&mu);
    if (delivered) {
        pthread_mutex_unlock(&mu);
        return;
    }
    delivered = 1;
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < n_lines; i++)
        deliver_line(lines[i], base);
}

EXPORT int fakecupti_in_callback(void)
{
    return in_cb;
}
