/*
 * source_cupti.c - the "cupti" engine: real GPU activity from NVIDIA's CUPTI.
 *
 * This file owns attaching (loading, version check, subscription), the
 * session lifecycle of the engine (open/start/flush/close), the pool of
 * activity buffers handed to CUPTI, and the flush thread that asks CUPTI
 * for completed buffers on a timer and decodes them.  Loading the
 * libraries and wording their errors is source_cupti_load.c, launch
 * callbacks are in source_cupti_launch.c, record decoding in
 * source_cupti_decode.c; the ABI we rely on is declared in cupti_abi_int.h.
 *
 * Threads: buffer requests arrive on application threads and must not
 * block (a lock-free scan of a fixed pool); completed buffers arrive on a
 * CUPTI thread or on ours and are only queued; everything else - decoding,
 * device queries, gpufl_record_* - happens on the flush thread, outside any
 * CUPTI callback, so the no-CUDA-calls-in-callbacks rule holds
 * (docs/cupti-internals.md#callbacks).
 *
 * CUPTI is never finalized, unsubscribed or dlclosed
 * (docs/cupti-internals.md#teardown): its threads and driver hooks outlive
 * us.  So the engine's state is static and lives
 * as long as the process; a later session in the same process reuses the
 * subscription.
 */
#include "cupti_int.h"

#include <errno.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_int.h"
#include "common/clock.h"

static cupti_state st;
cupti_state *cupti_g = &st;
static _Atomic int live;  /* a session uses the engine */
static int attached;      /* subscribed once in this process */
static uint32_t gen_seen; /* g_client.gen of the open session */

/* ---- activity buffers ---- */

static void buf_request(uint8_t **buf, size_t *size, size_t *max_records)
{
    cupti_state *s = cupti_g;
    *buf = NULL;
    *size = 0;
    *max_records = 0;
    if (!atomic_load_explicit(&live, memory_order_acquire) ||
        atomic_load_explicit(&s->closing, memory_order_acquire))
        return; /* after the session's end: not a loss of the session */
    for (int i = 0; i < CUPTI_MAX_BUFFERS; i++) {
        int exp = 0;
        if (!atomic_compare_exchange_strong(&s->bufs[i].busy, &exp, 1))
            continue;
        if (!s->bufs[i].mem) /* first use of this slot only */
            s->bufs[i].mem = aligned_alloc(16, CUPTI_BUF_SIZE);
        if (!s->bufs[i].mem) {
            atomic_store(&s->bufs[i].busy, 0);
            break;
        }
        *buf = s->bufs[i].mem;
        *size = CUPTI_BUF_SIZE;
        return;
    }
    /* CUPTI drops the records and counts them (GetNumDroppedRecords) */
    atomic_fetch_add(&s->refused, 1);
}

static void buf_release(cupti_state *s, const uint8_t *buf)
{
    for (int i = 0; i < CUPTI_MAX_BUFFERS; i++)
        if (s->bufs[i].mem == buf) {
            atomic_store_explicit(&s->bufs[i].busy, 0, memory_order_release);
            return;
        }
}

static void buf_complete(void *ctx, uint32_t stream, uint8_t *buf, size_t size,
                         size_t valid)
{
    cupti_state *s = cupti_g;
    (void)ctx;
    (void)stream;
    (void)size;
    if (!buf)
        return;
    if (!atomic_load_explicit(&live, memory_order_acquire)) {
        buf_release(s, buf);
        return;
    }
    /* queue only: decoding may call the driver, which a callback may not */
    pthread_mutex_lock(&s->done_lock);
    if (s->n_done < CUPTI_MAX_BUFFERS) {
        s->done_buf[s->n_done] = buf;
        s->done_valid[s->n_done] = valid;
        s->n_done++;
        buf = NULL;
    }
    pthread_mutex_unlock(&s->done_lock);
    if (buf) /* cannot happen: at most CUPTI_MAX_BUFFERS are handed out */
        buf_release(s, buf);
    pthread_mutex_lock(&s->lock);
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

/* Decode every queued buffer and give it back to the pool. */
static void drain(cupti_state *s)
{
    for (;;) {
        uint8_t *buf;
        size_t valid;
        pthread_mutex_lock(&s->done_lock);
        if (!s->n_done) {
            pthread_mutex_unlock(&s->done_lock);
            break;
        }
        buf = s->done_buf[0];
        valid = s->done_valid[0];
        s->n_done--;
        memmove(s->done_buf, s->done_buf + 1, s->n_done * sizeof buf);
        memmove(s->done_valid, s->done_valid + 1, s->n_done * sizeof valid);
        pthread_mutex_unlock(&s->done_lock);
        cupti_decode_buffer(s, buf, valid);
        buf_release(s, buf);
    }
}

/* Buffers handed to CUPTI and not yet back (queued ones count as back). */
static int outstanding(cupti_state *s)
{
    int n = 0;
    for (int i = 0; i < CUPTI_MAX_BUFFERS; i++)
        n += atomic_load_explicit(&s->bufs[i].busy, memory_order_acquire);
    pthread_mutex_lock(&s->done_lock);
    n -= (int)s->n_done;
    pthread_mutex_unlock(&s->done_lock);
    return n;
}

/* After a call into CUPTI returns on the flush thread: whether the thread
 * still belongs to the session (cupti_close may have given up on it while
 * CUPTI held it).  On 1, own_lock is held until disown(). */
static int still_own(cupti_state *s, uint32_t gen)
{
    pthread_mutex_lock(&s->own_lock);
    if (s->own_gen == gen)
        return 1;
    pthread_mutex_unlock(&s->own_lock);
    return 0;
}

static void disown(cupti_state *s)
{
    pthread_mutex_unlock(&s->own_lock);
}

/* The end of a session: a forced flush returns every buffer CUPTI holds,
 * but one its worker thread already took (full) is completed later, on
 * that thread, possibly after we stopped looking - its records would be
 * lost without a count.  So no new buffers are handed out, and the ones
 * still out are waited for (bounded: 1 s).  0 when the session gave up
 * on this thread while CUPTI held it. */
static int final_flush(cupti_state *s, uint32_t gen)
{
    s->FlushAll(GFL_CUPTI_FLUSH_FORCED);
    if (!still_own(s, gen))
        return 0;
    atomic_store_explicit(&s->closing, 1, memory_order_release);
    drain(s);
    for (int i = 0; i < 100 && outstanding(s) > 0; i++) {
        struct timespec t = { 0, 10000000L };
        nanosleep(&t, NULL);
        drain(s);
    }
    disown(s);
    return 1;
}

static void update_counters(cupti_state *s)
{
    size_t n = 0;
    /* outside every lock of ours: Kineto deadlocked calling this under its
     * own mutex (docs/cupti-internals.md#activity-records) */
    if (s->GetNumDropped && s->GetNumDropped(NULL, 0, &n) == 0)
        s->n_dropped += n;
    if (s->c_dropped)
        gpufl_counter_set(s->c_dropped, (int64_t)s->n_dropped);
    if (s->c_invalid)
        gpufl_counter_set(s->c_invalid, (int64_t)s->n_invalid);
    if (s->c_refused)
        gpufl_counter_set(s->c_refused, (int64_t)atomic_load(&s->refused));
}

/* gpufl's clock minus CUPTI's, ns, from the tightest of 5 bracketed
 * reads (*ok: that bracket, ns, 0 when CUPTI gives no timestamp); its
 * error is at most half the bracket. */
static int64_t clock_offset_now(cupti_state *s, uint64_t *ok)
{
    uint64_t best = UINT64_MAX;
    int64_t off = 0;
    *ok = 0;
    for (int i = 0; i < 5; i++) {
        uint64_t a = gpufl_now_ns(), c = 0, b;
        if (s->GetTimestamp(&c) != 0)
            c = 0;
        b = gpufl_now_ns();
        if (c && b - a < best) {
            best = b - a;
            off = (int64_t)(a + (b - a) / 2) - (int64_t)c;
            *ok = best + 1;
        }
    }
    return off;
}

static void clock_anchor(cupti_state *s)
{
    uint64_t ok;
    int64_t off = clock_offset_now(s, &ok);
    if (ok)
        s->clock_offset = off;
}

/* gpufl's clock runs on CLOCK_MONOTONIC from the session's start, CUPTI's
 * is CLOCK_REALTIME: the two part when the wall clock is stepped (NTP or
 * chrony stepping, settimeofday, a VM resumed).  Checked after every
 * flush round, so only records stamped within one flush period of a step
 * are off.  Only a change over 1 ms, read within a 100 us bracket, counts:
 * read noise never moves the offset. */
static void clock_recheck(cupti_state *s)
{
    uint64_t ok;
    int64_t off = clock_offset_now(s, &ok), d = off - s->clock_offset;
    if (ok && ok <= 100000 && (d > 1000000 || d < -1000000))
        s->clock_offset = off;
}

/* ---- the flush thread ---- */

static void *flush_main(void *arg)
{
    cupti_state *s = arg;
    uint64_t next = 0;
    uint32_t gen;
    pthread_mutex_lock(&s->own_lock);
    gen = s->own_gen;
    pthread_mutex_unlock(&s->own_lock);
    pthread_mutex_lock(&s->lock);
    for (;;) {
        struct timespec now, until;
        uint64_t now_ns, want = s->flush_req;
        int stop = s->stop, flushed = 0;
        clock_gettime(CLOCK_MONOTONIC, &now);
        now_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
        if (!next)
            next = now_ns + (uint64_t)s->cfg.flush_ms * 1000000ull;
        pthread_mutex_unlock(&s->lock);
        /* injected, we started inside cuInit: no periodic flush until the
         * driver is known to be out of it (an API callback ran, or 2 s) */
        if (!stop && s->deferred_devices &&
            !atomic_load_explicit(&s->api_seen, memory_order_relaxed) &&
            now_ns < s->started_ns + 2000000000ull)
            next = now_ns + (uint64_t)s->cfg.flush_ms * 1000000ull;
        if (stop) {
            /* a forced flush returns incomplete records too (start = end =
             * 0, counted as invalid): only at the end of the session */
            if (!final_flush(s, gen))
                return NULL; /* abandoned: the session is gone */
        } else if (want != s->flush_done || now_ns >= next) {
            s->FlushAll(0);
            next = now_ns + (uint64_t)s->cfg.flush_ms * 1000000ull;
            flushed = 1;
        }
        if (!still_own(s, gen))
            return NULL;
        drain(s);
        if (flushed) /* after the decode: these records had the old one */
            clock_recheck(s);
        update_counters(s);
        disown(s);
        pthread_mutex_lock(&s->lock);
        s->flush_done = want;
        pthread_cond_broadcast(&s->cond);
        if (stop)
            break;
        if (s->flush_req != want || s->stop)
            continue;
        until = clock_real_after(next - now_ns);
        pthread_cond_timedwait(&s->cond, &s->lock, &until);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* A forked child has CUPTI's memory but none of its threads, nor ours:
 * capture is off there (a child hung in cuptiActivityFlushAll at exit in
 * HPCToolkit #195).  CUDA itself does not survive fork either. */
static void cupti_atfork_child(void)
{
    atomic_store(&live, 0);
    atomic_store(&st.stopping, 1);
    atomic_store(&st.prof.active, 0); /* no scope hook, no drains */
    atomic_store(&client_scope_hook, NULL);
    st.prof.mode = CUPTI_PROF_NONE;
    st.thread_started = 0;
    pthread_mutex_init(&st.lock, NULL);
    pthread_mutex_init(&st.own_lock, NULL);
    pthread_mutex_init(&st.done_lock, NULL);
    pthread_mutex_init(&st.prof.lock, NULL);
    pthread_cond_init(&st.cond, NULL);
}

/* ---- src_ops ---- */

/* The activity kinds of tracing (CONTEXT is not among them: it stays on,
 * it is rare and maps contexts to devices). */
static const uint32_t optional_kinds[] = {
    GFL_CUPTI_ACT_MEMCPY,          GFL_CUPTI_ACT_MEMCPY2, GFL_CUPTI_ACT_MEMSET,
    GFL_CUPTI_ACT_SYNCHRONIZATION, GFL_CUPTI_ACT_MEMORY2,
};

static int register_buffers(cupti_state *s, char *why, size_t whylen)
{
    int rc;
    if (s->registered)
        return 0;
    rc = s->RegisterCallbacks(buf_request, buf_complete);
    if (rc) {
        cupti_reason(s, rc, "cuptiActivityRegisterCallbacks", why, whylen);
        return rc == GFL_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ? GPUFL_EPERM
                                                             : GPUFL_EUNAVAIL;
    }
    if (s->Enable(GFL_CUPTI_ACT_CONTEXT) != 0)
        client_log(GPUFL_LOG_INFO, "cupti: activity kind %u not enabled",
                   GFL_CUPTI_ACT_CONTEXT);
    s->registered = 1;
    return 0;
}

static int enable_kinds(cupti_state *s, char *why, size_t whylen)
{
    int rc = s->Enable(GFL_CUPTI_ACT_CONCURRENT_KERNEL);
    if (rc) {
        cupti_reason(s, rc, "cuptiActivityEnable(CONCURRENT_KERNEL)", why,
                     whylen);
        return rc == GFL_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ? GPUFL_EPERM
                                                             : GPUFL_EUNAVAIL;
    }
    /* MEMCPY implies MEMCPY2 on current CUPTI; a kind an older or reduced
     * CUPTI refuses costs that kind only */
    for (size_t i = 0; i < sizeof optional_kinds / sizeof optional_kinds[0];
         i++)
        if (s->Enable(optional_kinds[i]) != 0)
            client_log(GPUFL_LOG_INFO, "cupti: activity kind %u not enabled",
                       optional_kinds[i]);
    /* the API records themselves are skipped by the decoder */
    if (!cupti_launch_api_records(s, 1))
        client_log(GPUFL_LOG_INFO, "cupti: no per-API activity switch; "
                                   "correlation ids rely on callbacks");
    return 0;
}

static void disable_kinds(cupti_state *s)
{
    s->Disable(GFL_CUPTI_ACT_CONCURRENT_KERNEL);
    for (size_t i = 0; i < sizeof optional_kinds / sizeof optional_kinds[0];
         i++)
        s->Disable(optional_kinds[i]);
    if (s->api_records_on)
        cupti_launch_api_records(s, 0);
}

/* Tracing on or off, and the callbacks the error triggers need; each
 * switch is done only when it changes something (CUPTI's state persists
 * from one session to the next in the process). */
static int trace_apply(cupti_state *s, int on, char *why, size_t whylen)
{
    int err = atomic_load(&s->err_trigger);
    int rc = register_buffers(s, why, whylen);
    if (rc)
        return rc;
    if (!on && atomic_load(&s->trace_on) && !s->Disable) {
        snprintf(why, whylen,
                 "cupti: this CUPTI has no cuptiActivityDisable: tracing "
                 "cannot be switched off");
        return GPUFL_EUNAVAIL;
    }
    /* the launch callbacks: for tracing, or for the error triggers */
    if ((on || err) != s->launch_cb_on) {
        rc = cupti_launch_enable(s, on || err, why, whylen);
        if (rc)
            return rc;
    }
    if (err != s->alloc_cb_on) {
        rc = cupti_alloc_enable(s, err, why, whylen);
        if (rc)
            return rc;
    }
    if (on && !atomic_load(&s->trace_on)) {
        rc = enable_kinds(s, why, whylen);
        if (rc)
            return rc;
        s->traced = 1;
    } else if (!on && atomic_load(&s->trace_on)) {
        disable_kinds(s);
    }
    if (on != atomic_load(&s->trace_on)) {
        atomic_fetch_add(&s->trace_gen, 1);
        atomic_store(&s->trace_on, on);
    }
    return 0;
}

/* Libraries, version, subscription and devices, for this session. */
static int attach_once(cupti_state *s, char *why, size_t whylen)
{
    const char *inj = getenv("CUDA_INJECTION64_PATH");
    int rc;
    /* per-session fields; the loaded libraries and subscription persist */
    memcpy(&s->cfg, client_cupti_cfg(), sizeof s->cfg);
    if (!s->cfg.flush_ms)
        s->cfg.flush_ms = CUPTI_FLUSH_MS_DEFAULT;
    if (!s->cfg.close_ms)
        s->cfg.close_ms = CUPTI_CLOSE_MS_DEFAULT;
    if (s->cfg.stack_depth < 1 || s->cfg.stack_depth > CUPTI_STACK_MAX - 8)
        s->cfg.stack_depth = 32;
    s->n_dropped = s->n_invalid = s->n_records = s->n_unmatched = 0;
    atomic_store(&s->refused, 0);
    atomic_store(&s->launch_lost, 0);
    s->flush_req = s->flush_done = 0;
    s->stop = 0;
    s->n_devs = 0;
    memset(s->devs, 0, sizeof s->devs);
    memset(s->stack_key, 0, sizeof s->stack_key);
    if (!attached) {
        rc = cupti_load_cuda(s, why, whylen);
        if (rc)
            return rc;
    }
    /* Inside the driver's cuInit (gpufl run injected us) the driver must
     * not be re-entered, and an application's own cuInit would run the
     * injection under gpufl_init's lock: devices are then read later,
     * from the flush thread, once an API callback shows cuInit is done. */
    s->deferred_devices = inj && *inj;
    if (!s->deferred_devices) {
        rc = s->cuInit(0);
        if (rc) {
            snprintf(why, whylen, "cupti: cuInit failed: %s (%d)",
                     cupti_cuda_err_name(rc), rc);
            return GPUFL_EUNAVAIL;
        }
        rc = cupti_devices_query(s);
        if (rc <= 0) {
            snprintf(why, whylen,
                     "cupti: no CUDA device (cuDeviceGetCount "
                     "found none)");
            return GPUFL_EUNAVAIL;
        }
    }
    if (!attached) {
        uint32_t v = 0;
        rc = cupti_load_cupti(s, why, whylen);
        if (rc)
            return rc;
        rc = s->GetVersion(&v);
        if (rc || v / 10000 != 13 || v < 130001) {
            snprintf(why, whylen,
                     "cupti: CUPTI API version %u is not supported (need "
                     "CUDA 13, 130001 or later)",
                     v);
            return GPUFL_EUNAVAIL;
        }
        s->version = v;
        rc = s->Subscribe(&s->subscriber, cupti_launch_callback, s);
        if (rc) {
            cupti_reason(s, rc, "cuptiSubscribe", why, whylen);
            return rc == GFL_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
                       ? GPUFL_EPERM
                       : GPUFL_EUNAVAIL;
        }
        attached = 1;
        pthread_atfork(NULL, NULL, cupti_atfork_child);
        if (!s->launches) /* kept for the process: callbacks may be live */
            s->launches = calloc(CUPTI_CORR_SLOTS, sizeof *s->launches);
        if (!s->launches) {
            snprintf(why, whylen, "cupti: out of memory");
            return GPUFL_ENOMEM;
        }
        pthread_mutex_init(&s->done_lock, NULL);
        pthread_mutex_init(&s->lock, NULL);
        pthread_mutex_init(&s->own_lock, NULL);
        pthread_cond_init(&s->cond, NULL);
        pthread_mutex_init(&s->prof.lock, NULL);
    }
    return 0;
}

int cupti_attach(cupti_state *s, char *why, size_t whylen)
{
    uint32_t gen = atomic_load(&g_client.gen);
    if (s->attach_gen != gen) {
        s->attach_gen = gen;
        s->attach_why[0] = 0;
        s->attach_rc = attach_once(s, s->attach_why, sizeof s->attach_why);
    }
    if (s->attach_rc)
        snprintf(why, whylen, "%s", s->attach_why);
    return s->attach_rc;
}

static int cupti_open(void **state, const src_config *cfg, char *why,
                      size_t whylen)
{
    cupti_state *s = &st;
    int rc;
    (void)cfg;
    *state = NULL;
    if (g_client.simulated) {
        snprintf(why, whylen,
                 "the simulated GPU is selected (sim and cupti are both "
                 "activity sources and are not combined in one session)");
        return GPUFL_ECONFLICT;
    }
    if (atomic_load(&live)) {
        snprintf(why, whylen, "cupti: already capturing in this process");
        return GPUFL_EALREADY;
    }
    if (s->broken[0]) { /* subscribed, but enabling failed */
        snprintf(why, whylen, "%s", s->broken);
        return GPUFL_EUNAVAIL;
    }
    rc = cupti_attach(s, why, whylen);
    if (rc)
        return rc;
    /* ring mode's cuda-error and oom triggers read return codes in the
     * launch and allocation callbacks */
    atomic_store(&s->err_trigger,
                 g_client.cfg.ring &&
                     (g_client.cfg.trg.armed &
                      ((1u << TRG_CUDA_ERROR) | (1u << TRG_OOM))) != 0);
    rc = trace_apply(s, g_client.cfg.trace, why, whylen);
    if (rc) {
        snprintf(s->broken, sizeof s->broken, "%s", why);
        return rc;
    }
    if (s->cfg.stacks && !s->frames) {
        void *warm[4];
        s->frames = calloc((size_t)CUPTI_CORR_SLOTS * CUPTI_STACK_MAX,
                           sizeof *s->frames);
        /* backtrace's first call dlopens libgcc_s, and the unwinder sets
         * itself up on its first walk: not inside a callback */
        backtrace(warm, 4);
        (void)cupti_stack_capture((uintptr_t *)warm, 4, 0);
        if (!s->frames)
            s->cfg.stacks = 0;
    }
    atomic_store(&s->stacks_on, s->cfg.stacks && s->frames);
    clock_anchor(s);
    atomic_store(&s->closing, 0);
    s->stopping = 0;
    gen_seen = atomic_load(&g_client.gen);
    atomic_store_explicit(&live, 1, memory_order_release);
    /* Sync records name a context, not a device; CONTEXT records map one to
     * the other, but Enable(CONTEXT) reports only contexts created after
     * it.  A program that made its contexts before gpufl_init (PyTorch,
     * then gpufl.init()) gets records of those from EnableAndDump - once
     * per process (the map persists), and only now that buffers are handed
     * out.  Injected, we start inside the first cuInit: no context yet. */
    if (!s->contexts_dumped) {
        s->contexts_dumped = 1;
        if (s->EnableAndDump && !s->deferred_devices &&
            s->EnableAndDump(GFL_CUPTI_ACT_CONTEXT) != 0)
            client_log(GPUFL_LOG_INFO, "cupti: contexts that existed before "
                                       "the session are not mapped to "
                                       "devices (EnableAndDump failed)");
    }
    *state = s;
    return 0;
}

static int cupti_devices(void *state, gpu_device *out, int max)
{
    cupti_state *s = state;
    int n = s->n_devs < max ? s->n_devs : max;
    memcpy(out, s->devices, (size_t)n * sizeof *out);
    return n;
}

static int cupti_start(void *state)
{
    cupti_state *s = state;
    s->c_dropped = gpufl_counter_get("cupti.records_dropped");
    s->c_invalid = gpufl_counter_get("cupti.records_invalid");
    s->c_refused = gpufl_counter_get("cupti.buffers_refused");
    {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        s->started_ns =
            (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    }
    if (pthread_create(&s->thread, NULL, flush_main, s) != 0)
        return GPUFL_ENOMEM;
    s->thread_started = 1;
    return 0;
}

static void cupti_flush(void *state, uint32_t timeout_ms)
{
    cupti_state *s = state;
    struct timespec until;
    uint64_t want;
    if (!s || !s->thread_started)
        return;
    pthread_mutex_lock(&s->lock);
    want = ++s->flush_req;
    pthread_cond_broadcast(&s->cond);
    until = clock_real_after((uint64_t)timeout_ms * 1000000ull);
    while (timeout_ms && s->flush_done < want)
        if (pthread_cond_timedwait(&s->cond, &s->lock, &until) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&s->lock);
}

/* CUPTI's teardown can hang (HPCToolkit #195; the original GPU Flight
 * reported hangs releasing CUPTI at exit; docs/cupti-internals.md#teardown):
 * a recorder must not keep the program from exiting.  After cfg.close_ms the flush thread is given up on - its
 * records still in CUPTI are lost, and said so - and left to CUPTI; under
 * own_lock it can no longer touch the session (still_own). */
static void join_bounded(cupti_state *s)
{
    struct timespec until =
        clock_real_after((uint64_t)s->cfg.close_ms * 1000000ull);
    char msg[160];
    if (pthread_timedjoin_np(s->thread, NULL, &until) == 0)
        return;
    pthread_mutex_lock(&s->own_lock);
    s->own_gen++;
    pthread_mutex_unlock(&s->own_lock);
    pthread_detach(s->thread);
    s->n_abandoned++;
    snprintf(msg, sizeof msg,
             "cupti: CUPTI's final flush did not return within %u ms; "
             "records it still held are lost (GPUFL_CUPTI_CLOSE_MS)",
             s->cfg.close_ms);
    gpufl_marker(msg);
    client_log(GPUFL_LOG_WARN, "%s", msg);
}

static void cupti_close(void *state)
{
    cupti_state *s = state;
    char msg[100];
    if (!s)
        return;
    atomic_store(&s->stopping, 1);
    if (s->thread_started) {
        pthread_mutex_lock(&s->lock);
        s->stop = 1; /* the thread's last round is a forced flush */
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
        join_bounded(s);
        s->thread_started = 0;
    }
    if (s->n_dropped || s->n_invalid || atomic_load(&s->refused)) {
        snprintf(msg, sizeof msg, "cupti: dropped=%llu invalid=%llu",
                 (unsigned long long)s->n_dropped,
                 (unsigned long long)s->n_invalid);
        gpufl_marker(msg);
    }
    client_log(
        GPUFL_LOG_INFO,
        "cupti: %llu records, %llu dropped by CUPTI, %llu invalid, "
        "%llu without a launch callback",
        (unsigned long long)s->n_records, (unsigned long long)s->n_dropped,
        (unsigned long long)s->n_invalid, (unsigned long long)s->n_unmatched);
    atomic_store_explicit(&live, 0, memory_order_release);
    (void)gen_seen;
}

const src_ops src_cupti_ops = {
    .name = "cupti",
    .open = cupti_open,
    .devices = cupti_devices,
    .start = cupti_start,
    .sample = NULL,
    .flush = cupti_flush,
    .close = cupti_close,
};

int cupti_trace_state(void)
{
    if (!atomic_load_explicit(&live, memory_order_acquire))
        return -1;
    return atomic_load(&st.trace_on);
}

int cupti_trace_set(int on, char *why, size_t whylen)
{
    cupti_state *s = &st;
    int rc;
    if (!atomic_load_explicit(&live, memory_order_acquire)) {
        snprintf(why, whylen,
                 "the cupti engine is not on in this session (GPUFL_ENGINES "
                 "with cupti, and a GPU, are needed for tracing)");
        return GPUFL_EUNAVAIL;
    }
    if (on && s->prof.mode == CUPTI_PROF_SASS) {
        snprintf(why, whylen,
                 "the sass engine runs in this process, and it runs without "
                 "tracing (SASS patching next to activity tracing hung in "
                 "practice)");
        return GPUFL_ECONFLICT;
    }
    rc = trace_apply(s, on, why, whylen);
    if (!rc && !on)
        cupti_flush(s, 0); /* what was recorded until now comes out soon */
    return rc;
}
