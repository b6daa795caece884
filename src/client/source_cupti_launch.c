/*
 * source_cupti_launch.c - kernel launch callbacks of the CUPTI engine: API
 * enter/exit times, the scope open at the launch, optionally the CPU call
 * stack, kept in a bounded table keyed by correlation id until the kernel's
 * activity record arrives (docs/cupti-internals.md#launch-correlation).
 *
 * One launch usually fires two callbacks: a runtime one (nvcc 13's
 * <<<>>> goes through __cudaLaunchKernel, CBID 505/506) with a driver one
 * nested inside it on the same thread.  A per-thread depth counter keeps
 * the outer one; the launch is published under both correlation ids,
 * since runtime-launched kernels carry the runtime id and driver-launched
 * ones the driver id.  Direct driver launches (Triton, NVRTC JITs) have
 * only the driver callback.
 *
 * The table is direct-mapped (corr % CUPTI_CORR_SLOTS) with a seqlock per
 * slot: writers are application threads and never wait, the reader is the
 * flush thread.  Eviction: a launch is overwritten by the one 32768
 * correlation ids later, so a record delivered after that many newer API
 * calls loses its API times, scope and stack (it is still written).
 * Lookups do not consume: a graph launch's one id serves all its kernels.
 *
 * Hot path: two clock reads, the caller's scope, one slot write; stacks
 * add one stack capture (raw addresses only; dladdr runs on the flush
 * thread when the record is decoded).  No allocation, no lock, no CUDA
 * call (a thread's first capture reads its stack bounds once).
 *
 * Stack capture is hybrid (docs/cupti-internals.md#stacks): CUPTI and the
 * driver keep no frame pointers, so the walk starts with the DWARF
 * unwinder (libgcc's _Unwind_Backtrace, what backtrace() uses, ~130 ns a
 * frame); at each frame it checks whether the frame keeps a frame pointer
 * - the saved return address at fp+8 must equal the caller's address the
 * unwinder finds next - and from the first frame that passes, it follows
 * the frame-pointer chain (a few ns a frame), each read bounded by the
 * thread's stack and by the previous frame.  An application built without
 * frame pointers never passes the check and is unwound with DWARF to the
 * end.  A function without a frame pointer further up a chain that passed
 * hides its caller (the usual frame-pointer limit).
 */
#include "cupti_int.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <unwind.h>

#include "client_int.h"

#define STACK_SKIP_MAX 8 /* frames of ours and NVIDIA's above the app */

typedef struct launch_tls {
    uint32_t depth;    /* open launch callbacks on this thread */
    uint32_t outer;    /* correlation id of the outermost */
    uint32_t nested;   /* driver id nested in a runtime launch, 0 = none */
    uint64_t enter_ns; /* outermost ENTER */
    uint64_t scope;
    uint32_t path_id, flags, n_frames;
    uintptr_t frames[CUPTI_STACK_MAX];
    uintptr_t stack_hi; /* top of this thread's stack, 0 = unknown */
    int stack_known;
    uint32_t tid; /* this thread's gettid(), 0 until its first launch */
} launch_tls;

static _Thread_local launch_tls tl;

/* ---- stack capture ---- */

#if defined(__x86_64__)
#define FP_REG 6 /* DWARF number of rbp */
#elif defined(__aarch64__)
#define FP_REG 29 /* x29 */
#endif

typedef struct unwind_walk {
    uintptr_t *out;
    int n, max, skip, fp_used;
    uintptr_t cand; /* frame pointer of the previous frame, if plausible */
    uintptr_t lo, hi;
} unwind_walk;

static int fp_plausible(uintptr_t fp, uintptr_t lo, uintptr_t hi)
{
    return fp > lo && hi >= 16 && fp <= hi - 16 && !(fp & 7);
}

static _Unwind_Reason_Code unwind_step(struct _Unwind_Context *ctx, void *arg)
{
    unwind_walk *u = arg;
    uintptr_t ip = (uintptr_t)_Unwind_GetIP(ctx);
    if (!ip)
        return _URC_END_OF_STACK;
    if (u->skip) { /* capture_stack itself */
        u->skip--;
        return _URC_NO_REASON;
    }
#ifdef FP_REG
    /* the previous frame saved its caller's address at fp+8: it keeps a
     * frame pointer, and the chain from there is the rest of the stack */
    if (u->cand && ((const uintptr_t *)u->cand)[1] == ip) {
        uintptr_t prev = u->cand, fp = ((const uintptr_t *)u->cand)[0];
        u->out[u->n++] = ip;
        while (u->n < u->max && fp_plausible(fp, prev, u->hi)) {
            uintptr_t ra = ((const uintptr_t *)fp)[1];
            if (!ra)
                break;
            u->out[u->n++] = ra;
            prev = fp;
            fp = ((const uintptr_t *)fp)[0];
        }
        u->fp_used = 1;
        return _URC_NORMAL_STOP;
    }
#endif
    u->out[u->n++] = ip;
    if (u->n >= u->max)
        return _URC_NORMAL_STOP;
#ifdef FP_REG
    if (u->hi) {
        uintptr_t fp = (uintptr_t)_Unwind_GetGR(ctx, FP_REG);
        u->cand = fp_plausible(fp, u->lo, u->hi) ? fp : 0;
    }
#endif
    return _URC_NO_REASON;
}

/* The calling thread's stack top, read once per thread: the bound of
 * every frame-pointer read. */
static uintptr_t stack_top(void)
{
    pthread_attr_t a;
    void *base = NULL;
    size_t size = 0;
    if (tl.stack_known)
        return tl.stack_hi;
    tl.stack_known = 1;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        if (pthread_attr_getstack(&a, &base, &size) == 0 && base)
            tl.stack_hi = (uintptr_t)base + size;
        pthread_attr_destroy(&a);
    }
    return tl.stack_hi;
}

/* Return addresses of the caller's stack, innermost first (frame 0 is
 * the caller of this function, as with backtrace()). */
__attribute__((noinline)) int cupti_stack_capture(uintptr_t *out, int max,
                                                  int dwarf_only)
{
    unwind_walk u;
    volatile uintptr_t here = 0;
    memset(&u, 0, sizeof u);
    u.out = out;
    u.max = max;
    u.skip = 1;
    u.lo = (uintptr_t)&here;
    u.hi = dwarf_only ? 0 : stack_top();
    if (max <= 0)
        return 0;
    _Unwind_Backtrace(unwind_step, &u);
    return u.n;
}

static const uint32_t rt_cbids[] = {
    GFL_RT_CBID_cudaLaunch_v3020,
    GFL_RT_CBID_cudaLaunchKernel_v7000,
    GFL_RT_CBID_cudaLaunch_ptsz_v7000,
    GFL_RT_CBID_cudaLaunchKernel_ptsz_v7000,
    GFL_RT_CBID_cudaLaunchCooperativeKernel_v9000,
    GFL_RT_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    GFL_RT_CBID_cudaLaunchCooperativeKernelMultiDevice_v9000,
    GFL_RT_CBID_cudaGraphLaunch_v10000,
    GFL_RT_CBID_cudaGraphLaunch_ptsz_v10000,
    GFL_RT_CBID_cudaLaunchKernelExC_v11060,
    GFL_RT_CBID_cudaLaunchKernelExC_ptsz_v11060,
    GFL_RT_CBID___cudaLaunchKernel_v13000,
    GFL_RT_CBID___cudaLaunchKernel_ptsz_v13000,
};

static const uint32_t drv_cbids[] = {
    GFL_DRV_CBID_cuLaunchKernel,
    GFL_DRV_CBID_cuLaunchKernel_ptsz,
    GFL_DRV_CBID_cuLaunchCooperativeKernel,
    GFL_DRV_CBID_cuLaunchCooperativeKernel_ptsz,
    GFL_DRV_CBID_cuGraphLaunch,
    GFL_DRV_CBID_cuGraphLaunch_ptsz,
    GFL_DRV_CBID_cuLaunchKernelEx,
    GFL_DRV_CBID_cuLaunchKernelEx_ptsz,
};

int cupti_launch_enable(cupti_state *s, char *why, size_t whylen)
{
    /* per CBID, not per domain: a domain-wide enable would run our
     * callback on every cudaGetDevice/cudaStreamQuery
     * (docs/cupti-internals.md#callbacks) */
    for (size_t i = 0; i < sizeof rt_cbids / sizeof rt_cbids[0]; i++) {
        int rc = s->EnableCallback(
            1, s->subscriber, GFL_CUPTI_CB_DOMAIN_RUNTIME_API, rt_cbids[i]);
        if (rc) {
            snprintf(why, whylen,
                     "cupti: cuptiEnableCallback(runtime %u) failed (%d)",
                     rt_cbids[i], rc);
            return rc == GFL_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
                       ? GPUFL_EPERM
                       : GPUFL_EUNAVAIL;
        }
    }
    for (size_t i = 0; i < sizeof drv_cbids / sizeof drv_cbids[0]; i++) {
        int rc = s->EnableCallback(
            1, s->subscriber, GFL_CUPTI_CB_DOMAIN_DRIVER_API, drv_cbids[i]);
        if (rc) {
            snprintf(why, whylen,
                     "cupti: cuptiEnableCallback(driver %u) failed (%d)",
                     drv_cbids[i], rc);
            return rc == GFL_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
                       ? GPUFL_EPERM
                       : GPUFL_EUNAVAIL;
        }
    }
    return 0;
}

int cupti_launch_api_records(cupti_state *s)
{
    gfl_cuptiActivityEnableApi_fn rt = (gfl_cuptiActivityEnableApi_fn)dlsym(
        s->lib, "cuptiActivityEnableRuntimeApi");
    gfl_cuptiActivityEnableApi_fn drv = (gfl_cuptiActivityEnableApi_fn)dlsym(
        s->lib, "cuptiActivityEnableDriverApi");
    int n = 0;
    for (size_t i = 0; rt && i < sizeof rt_cbids / sizeof rt_cbids[0]; i++)
        n += rt(rt_cbids[i], 1) == 0;
    for (size_t i = 0; drv && i < sizeof drv_cbids / sizeof drv_cbids[0]; i++)
        n += drv(drv_cbids[i], 1) == 0;
    return n;
}

static int is_coop(uint32_t domain, uint32_t cbid)
{
    if (domain == GFL_CUPTI_CB_DOMAIN_RUNTIME_API)
        return cbid == GFL_RT_CBID_cudaLaunchCooperativeKernel_v9000 ||
               cbid == GFL_RT_CBID_cudaLaunchCooperativeKernel_ptsz_v9000 ||
               cbid == GFL_RT_CBID_cudaLaunchCooperativeKernelMultiDevice_v9000;
    return cbid == GFL_DRV_CBID_cuLaunchCooperativeKernel ||
           cbid == GFL_DRV_CBID_cuLaunchCooperativeKernel_ptsz;
}

static void publish(cupti_state *s, uint32_t corr, uint64_t exit_ns)
{
    cupti_launch *l = &s->launches[corr % CUPTI_CORR_SLOTS];
    uint32_t q = atomic_load_explicit(&l->seq, memory_order_relaxed);
    if (!corr)
        return;
    /* a concurrent writer of the same slot (ids 32768 apart in flight at
     * once) wins; this launch then goes unjoined and is counted */
    if ((q & 1) ||
        !atomic_compare_exchange_strong_explicit(
            &l->seq, &q, q + 1, memory_order_acquire, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&s->launch_lost, 1, memory_order_relaxed);
        return;
    }
    atomic_thread_fence(memory_order_release);
    l->enter_ns = tl.enter_ns;
    l->exit_ns = exit_ns;
    l->scope = tl.scope;
    l->path_id = tl.path_id;
    l->flags = tl.flags;
    l->n_frames = tl.n_frames;
    l->tid = tl.tid;
    if (l->n_frames)
        memcpy(s->frames + (size_t)(corr % CUPTI_CORR_SLOTS) * CUPTI_STACK_MAX,
               tl.frames, l->n_frames * sizeof tl.frames[0]);
    atomic_store_explicit(&l->corr, corr, memory_order_relaxed);
    atomic_store_explicit(&l->seq, q + 2, memory_order_release);
}

int cupti_launch_find(cupti_state *s, uint32_t corr, cupti_launch *out,
                      uintptr_t *frames)
{
    cupti_launch *l = &s->launches[corr % CUPTI_CORR_SLOTS];
    if (!corr || !s->launches)
        return 0;
    for (int tries = 0; tries < 4; tries++) {
        uint32_t q1 = atomic_load_explicit(&l->seq, memory_order_acquire), q2;
        if (q1 & 1)
            continue;
        if (atomic_load_explicit(&l->corr, memory_order_relaxed) != corr)
            return 0;
        out->enter_ns = l->enter_ns;
        out->exit_ns = l->exit_ns;
        out->scope = l->scope;
        out->path_id = l->path_id;
        out->flags = l->flags;
        out->n_frames = l->n_frames;
        out->tid = l->tid;
        if (out->n_frames > CUPTI_STACK_MAX)
            out->n_frames = 0;
        if (out->n_frames && frames && s->frames)
            memcpy(frames,
                   s->frames +
                       (size_t)(corr % CUPTI_CORR_SLOTS) * CUPTI_STACK_MAX,
                   out->n_frames * sizeof *frames);
        atomic_thread_fence(memory_order_acquire);
        q2 = atomic_load_explicit(&l->seq, memory_order_relaxed);
        if (q1 == q2 &&
            atomic_load_explicit(&l->corr, memory_order_relaxed) == corr)
            return 1;
    }
    return 0;
}

void cupti_launch_callback(void *ud, uint32_t domain, uint32_t cbid,
                           const void *cbdata)
{
    cupti_state *s = ud;
    const gfl_cupti_callback_data *cd = cbdata;
    int stopping;
    if (domain == GFL_CUPTI_CB_DOMAIN_RESOURCE) { /* profiling engines */
        cupti_prof_resource(s, cbid, cbdata);
        return;
    }
    if (!cd || (domain != GFL_CUPTI_CB_DOMAIN_RUNTIME_API &&
                domain != GFL_CUPTI_CB_DOMAIN_DRIVER_API))
        return;
    /* The depth is kept even while stopping: a session that closes between
     * a launch's ENTER and EXIT would otherwise leave this thread's depth
     * at 1 for good, and every launch of a later session in the process
     * would be taken for a nested one and never published. */
    stopping = atomic_load_explicit(&s->stopping, memory_order_relaxed);
    if (!stopping && !atomic_load_explicit(&s->api_seen, memory_order_relaxed))
        atomic_store_explicit(&s->api_seen, 1, memory_order_relaxed);
    if (cd->callback_site == GFL_CUPTI_API_ENTER) {
        if (tl.depth) {
            tl.depth++;
            /* the driver half of a runtime launch */
            if (domain == GFL_CUPTI_CB_DOMAIN_DRIVER_API && !tl.nested)
                tl.nested = cd->correlation_id;
            return;
        }
        if (stopping)
            return;
        tl.depth = 1;
        if (!tl.tid) /* once per thread: the API lane the calls belong to */
            tl.tid = (uint32_t)syscall(SYS_gettid);
        tl.outer = cd->correlation_id;
        tl.nested = 0;
        tl.enter_ns = gpufl_now_ns();
        gpufl_current_scope(&tl.scope, &tl.path_id);
        tl.flags = is_coop(domain, cbid) ? GPUFL_KERNEL_COOPERATIVE : 0;
        tl.n_frames = 0;
        if (atomic_load_explicit(&s->stacks_on, memory_order_relaxed)) {
            int want = (int)s->cfg.stack_depth + STACK_SKIP_MAX;
            int n = cupti_stack_capture(
                tl.frames, want > CUPTI_STACK_MAX ? CUPTI_STACK_MAX : want,
                s->stack_dwarf_only);
            tl.n_frames = n > 0 ? (uint32_t)n : 0;
        }
        return;
    }
    if (!tl.depth) /* enabled mid-call: ENTER was not seen */
        return;
    if (is_coop(domain, cbid))
        tl.flags |= GPUFL_KERNEL_COOPERATIVE;
    if (--tl.depth || stopping)
        return;
    /* a failed launch produces no record: nothing to join */
    if (cd->function_return_value && *(const int *)cd->function_return_value)
        return;
    {
        uint64_t exit_ns = gpufl_now_ns();
        publish(s, tl.outer, exit_ns);
        if (tl.nested && tl.nested != tl.outer)
            publish(s, tl.nested, exit_ns);
    }
}

/* ---- stacks: symbolized on the flush thread ---- */

static void skip_ranges(cupti_state *s)
{
    const void *probe[3];
    Dl_info di;
    probe[0] = (const void *)cupti_launch_callback;
    probe[1] = (const void *)s->Subscribe;
    probe[2] = (const void *)s->cuInit;
    s->n_skip = 0;
    for (int i = 0; i < 3; i++) {
        if (!probe[i] || !dladdr(probe[i], &di) || !di.dli_fbase)
            continue;
        s->skip_lo[s->n_skip++] = (uintptr_t)di.dli_fbase;
    }
}

static int in_skipped(cupti_state *s, uintptr_t base)
{
    for (int i = 0; i < s->n_skip; i++)
        if (s->skip_lo[i] == base)
            return 1;
    return 0;
}

/* The module behind link map lm and its .symtab, read once.  dladdr
 * alone names only exported symbols: a static function gets the nearest
 * exported one before it (a wrong name) and a program not linked with
 * -rdynamic gets no names at all.  NULL past the caps (then dladdr). */
static const cupti_elfmod *elf_mod(cupti_state *s, const struct link_map *lm)
{
    const char *path =
        lm->l_name && lm->l_name[0] ? lm->l_name : "/proc/self/exe";
    cupti_elfmod *m;
    for (uint32_t i = 0; i < s->n_elfmods; i++)
        if (s->elfmods[i].lm == lm && s->elfmods[i].base == lm->l_addr &&
            !strcmp(s->elfmods[i].path, path))
            return &s->elfmods[i];
    if (!s->elfmods)
        s->elfmods = calloc(CUPTI_ELF_MODS, sizeof *s->elfmods);
    if (!s->elfmods || s->n_elfmods == CUPTI_ELF_MODS)
        return NULL;
    m = &s->elfmods[s->n_elfmods];
    memset(m, 0, sizeof *m);
    m->lm = lm;
    m->base = lm->l_addr;
    if (!(m->path = strdup(path)))
        return NULL;
    /* .symtab only: .dynsym is what dladdr reads already */
    m->ok = s->elf_syms < CUPTI_ELF_SYMS &&
            elfsym_load(&m->es, m->path, NULL, 0) == 0;
    if (m->ok && s->elf_syms + m->es.nsyms > CUPTI_ELF_SYMS) {
        elfsym_free(&m->es);
        m->ok = 0;
    }
    s->elf_syms += m->es.nsyms;
    s->n_elfmods++;
    return m;
}

uint32_t cupti_stack_intern(cupti_state *s, const uintptr_t *frames, uint32_t n)
{
    char text[CUPTI_STACK_MAX][256], dm[256];
    const char *ptrs[CUPTI_STACK_MAX];
    uint64_t h = 1469598103934665603ull;
    uint32_t first = 0, out = 0, id, slot;
    Dl_info di;
    if (!n)
        return 0;
    if (!s->n_skip)
        skip_ranges(s);
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ frames[i]) * 1099511628211ull;
    h |= 1;
    slot = (uint32_t)(h % CUPTI_STACK_CACHE);
    if (s->stack_key[slot] == h)
        return s->stack_id[slot];
    /* the leading frames are our callback, CUPTI and the driver (and, in
     * a sanitizer build, backtrace's interceptor in the executable): the
     * application starts after the last of those in the leading window */
    for (uint32_t i = 0; i < n && i < STACK_SKIP_MAX + 2; i++)
        if (dladdr((void *)(frames[i] - 1), &di) &&
            in_skipped(s, (uintptr_t)di.dli_fbase))
            first = i + 1;
    for (uint32_t i = first; i < n && out < s->cfg.stack_depth; i++) {
        uintptr_t a = frames[i];
        struct link_map *lm = NULL;
        if (dladdr1((void *)(a - 1), &di, (void **)&lm, RTLD_DL_LINKMAP) &&
            di.dli_fname) {
            const char *mod = strrchr(di.dli_fname, '/'), *sym = NULL;
            const cupti_elfmod *em = lm ? elf_mod(s, lm) : NULL;
            uint64_t start = 0;
            mod = mod ? mod + 1 : di.dli_fname;
            /* a return address: the call is the byte before it */
            if (em && em->ok)
                sym = elfsym_find(&em->es, a - 1 - em->base, &start);
            if (sym)
                snprintf(text[out], sizeof text[out], "%.200s+0x%lx (%.40s)",
                         client_demangle(sym, dm, sizeof dm) ? dm : sym,
                         (unsigned long)(a - em->base - start), mod);
            else if (di.dli_sname)
                snprintf(text[out], sizeof text[out], "%.200s+0x%lx (%.40s)",
                         client_demangle(di.dli_sname, dm, sizeof dm)
                             ? dm
                             : di.dli_sname,
                         (unsigned long)(a - (uintptr_t)di.dli_saddr), mod);
            else
                snprintf(text[out], sizeof text[out], "0x%lx (%.40s)",
                         (unsigned long)(a - (uintptr_t)di.dli_fbase), mod);
        } else {
            snprintf(text[out], sizeof text[out], "0x%lx", (unsigned long)a);
        }
        ptrs[out] = text[out];
        out++;
    }
    id = out ? gpufl_intern_stack(ptrs, out) : 0;
    s->stack_key[slot] = h;
    s->stack_id[slot] = id;
    return id;
}
