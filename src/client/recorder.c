/*
 * recorder.c - ring mode, the flight recorder (docs/recorder.md): between
 * dumps every line goes to the in-memory window (window.c); a trigger
 * (trigger.c) writes a dump - a gpufl file set of its own session id that
 * begins with a session and a trigger line, then the window with the dict
 * lines it needs - and keeps it live for trigger_after_ms, then the
 * recorder goes back to its window.
 *
 * The crash path: a fatal signal's handler (trigger.c) calls
 * collector_crash(), which asks the collector to drain the rings and park
 * for good, then writes the dump itself with what a signal handler may
 * call: open, write, fallocate, fdatasync, close, clock_gettime, nanosleep
 * and code of ours that formats by hand into buffers made beforehand.
 * Nothing is allocated, no lock is taken, nothing is logged (in_crash).
 */
#include "collector_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/uuid.h"
#include "format.h"
#include "intern.h"
#include "window.h"

/* A dump stays live at most this many times trigger_after_ms, however
 * many triggers extend it (a program that fails in a loop still gets
 * dumps that end). */
#define LIVE_MAX_FACTOR 10
/* How long a crash handler waits for the collector to drain and park,
 * then for it to leave a unit of work (it may be stuck, e.g. in a malloc
 * the crashed thread held): then it writes anyway. */
#define CRASH_PARK_MS 3000
#define CRASH_BUSY_MS 2000
#define INFO_EVERY_NS 50000000ull /* status snapshot for the control socket */
#define REPLAY_CHECK 256          /* window lines between crash checks */

static uint32_t scope_ids[TRG_SCOPES_MAX]; /* scope= names, interned */

/* What `gpufl ctl status` sees: a copy the collector publishes. */
static pthread_mutex_t info_lock = PTHREAD_MUTEX_INITIALIZER;
static collector_info info;
static win_stats info_win;
static uint64_t info_at;

/* Where a replay is, for a crash handler that takes over from it. */
static struct {
    int on;
    uint64_t pos;
} replay_at;

/* ---- names, by hand (a crash handler cannot call snprintf) ---- */

static size_t cat(char *dst, size_t at, size_t cap, const char *src)
{
    while (*src && at + 1 < cap)
        dst[at++] = *src++;
    dst[at < cap ? at : cap - 1] = 0;
    return at;
}

static size_t cat_u64(char *dst, size_t at, size_t cap, uint64_t v, int width)
{
    char num[24], pad[24];
    size_t n = jw_fmt_u64(num, v), k = 0;
    while ((int)(n + k) < width && k < sizeof pad - 1)
        pad[k++] = '0';
    memcpy(pad + k, num, n);
    pad[k + n] = 0;
    return cat(dst, at, cap, pad);
}

/* yyyymmdd-hhmmss (UTC) of a Unix time: the civil calendar from days
 * (Howard Hinnant's algorithm), since gmtime_r is not allowed in a
 * signal handler. */
static size_t cat_stamp(char *dst, size_t at, size_t cap, uint64_t sec)
{
    int64_t z = (int64_t)(sec / 86400) + 719468;
    int64_t era = z / 146097, doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int64_t d = doy - (153 * mp + 2) / 5 + 1;
    int64_t m = mp < 10 ? mp + 3 : mp - 9;
    int64_t y = yoe + era * 400 + (m <= 2);
    uint64_t s = sec % 86400;
    at = cat_u64(dst, at, cap, (uint64_t)y, 4);
    at = cat_u64(dst, at, cap, (uint64_t)m, 2);
    at = cat_u64(dst, at, cap, (uint64_t)d, 2);
    at = cat(dst, at, cap, "-");
    at = cat_u64(dst, at, cap, s / 3600, 2);
    at = cat_u64(dst, at, cap, s / 60 % 60, 2);
    return cat_u64(dst, at, cap, s % 60, 2);
}

/* log_dir/<app>.<stamp>.<sid8>, or log_dir/<log_prefix>.dump<n>: 0, or
 * -1 when it does not fit. */
static int dump_prefix(char *out, size_t cap, uint64_t wall_ns, const char *sid,
                       uint64_t n)
{
    const client_cfg *cfg = &g_client.cfg;
    char sid8[9];
    size_t at = cat(out, 0, cap, cfg->log_dir);
    at = cat(out, at, cap, "/");
    if (cfg->log_prefix[0]) {
        at = cat(out, at, cap, cfg->log_prefix);
        at = cat(out, at, cap, ".dump");
        at = cat_u64(out, at, cap, n, 0);
    } else {
        memcpy(sid8, sid, 8);
        sid8[8] = 0;
        at = cat(out, at, cap, cfg->app);
        at = cat(out, at, cap, ".");
        at = cat_stamp(out, at, cap, wall_ns / 1000000000ull);
        at = cat(out, at, cap, ".");
        at = cat(out, at, cap, sid8);
    }
    /* room for ".system.log.999999999.zst.tmp" */
    return at + 32 < cap ? 0 : -1;
}

/* ---- the status snapshot ---- */

static void publish(int force)
{
    uint64_t now = client_now();
    if (atomic_load_explicit(&g_client.in_crash, memory_order_relaxed) ||
        (!force && now - info_at < INFO_EVERY_NS))
        return;
    info_at = now;
    pthread_mutex_lock(&info_lock);
    info.ring = g_client.cfg.ring;
    info.live = C.state == CS_LIVE;
    info.dumps = C.dumps;
    info.live_until = C.state == CS_LIVE ? C.live_until : 0;
    memcpy(info.prefix, C.prefix, sizeof info.prefix);
    window_stats(&info_win);
    pthread_mutex_unlock(&info_lock);
}

void collector_get_info(collector_info *out)
{
    pthread_mutex_lock(&info_lock);
    *out = info;
    pthread_mutex_unlock(&info_lock);
}

void collector_get_window(win_stats *out)
{
    pthread_mutex_lock(&info_lock);
    *out = info_win;
    pthread_mutex_unlock(&info_lock);
}

/* ---- trigger lines ---- */

static void body_trigger(jw *j, const void *arg)
{
    fmt_trigger(j, arg);
}

/* now: the clock reading that set live_until (one reading, not a second
 * one here: the collector preempted between the two made live_ms 399 for
 * a 400 ms GPUFL_TRIGGER_AFTER in a loaded CI run) */
static void trigger_lines(const trg_event *ev, const win_stats *ws,
                          uint64_t now)
{
    for (int s = 0; s < ST_COUNT; s++) {
        fmt_trg t = {
            trigger_name(ev->kind), ev->detail, ev->repeats, C.dumps, 0, ws, s
        };
        if (!C.open[s])
            continue;
        /* how long the dump stays live from here (none in a crash) */
        if (ev->kind != TRG_CRASH && C.live_until > now)
            t.live_ms = (C.live_until - now + 500000) / 1000000ull;
        if (!ws && coll_line_prep(s, 2048) < 0)
            continue;
        coll_emit(s, ev->ts, body_trigger, &t, NULL, 0);
    }
}

/* ---- dumps ---- */

static void replay(int crash)
{
    win_entry e;
    unsigned k = 0;
    replay_at.on = 1;
    while (window_next(&replay_at.pos, &e)) {
        if (coll_line_prep(e.stream, e.len + 256) == 0) {
            for (int i = 0; i < e.nrefs; i++)
                coll_dict(e.stream, e.refs[i]);
            coll_put(e.stream, e.text, e.len);
        }
        if (!crash && ++k % REPLAY_CHECK == 0) {
            rec_work_end(); /* a crash handler that gave up waiting */
            rec_work_begin();
        }
    }
    replay_at.on = 0;
}

/* Open the dump's files and write its head and window.  crash: in a
 * signal handler (no rotation, no compression, no logging).  0, or -1
 * when no file could be made. */
static int dump_begin(const trg_event *ev, int crash)
{
    const client_cfg *cfg = &g_client.cfg;
    uint64_t after = (uint64_t)cfg->trigger_after_ms * 1000000ull;
    char path[CLIENT_PATH_MAX + 32];
    win_stats ws;
    int n_open = 0;
    C.dumps++;
    g_client.dump_n = (uint32_t)C.dumps;
    if (dump_prefix(C.prefix, sizeof C.prefix, clock_real_ns(), C.next_sid,
                    C.dumps) < 0) {
        client_log(GPUFL_LOG_ERROR, "ring: dump %llu: log path too long",
                   (unsigned long long)C.dumps);
        return -1;
    }
    coll_envelopes(C.next_sid);
    for (int s = 0; s < ST_COUNT; s++) {
        size_t at = cat(path, 0, sizeof path, C.prefix);
        int rc;
        at = cat(path, at, sizeof path, ".");
        at = cat(path, at, sizeof path, fmt_stream_name(s));
        cat(path, at, sizeof path, ".log");
        rc = writer_open_buf(&C.w[s], s, path, C.dump_buf[s], WRITER_BUF,
                             crash ? UINT64_MAX : cfg->rotate_bytes,
                             cfg->rotate_keep,
                             crash ? 0 : cfg->compress_rotated);
        C.open[s] = rc == 0;
        n_open += rc == 0;
        if (rc && !crash)
            client_log(GPUFL_LOG_ERROR, "ring: cannot create %s: %s", path,
                       strerror(errno));
    }
    if (!n_open)
        return -1;
    C.state = CS_LIVE; /* lines go to the files from here */
    C.live_start = client_now();
    C.live_until = ev->kind == TRG_CRASH ? 0 : C.live_start + after;
    if (!crash) {
        memcpy(g_client.prefix_path, C.prefix, sizeof g_client.prefix_path);
        client_log(GPUFL_LOG_INFO, "ring: %s trigger: writing %s",
                   trigger_name(ev->kind), C.prefix);
    }
    window_stats(&ws);
    for (int s = 0; s < ST_COUNT; s++)
        if (C.open[s])
            coll_header(s);
    trigger_lines(ev, &ws, C.live_start);
    replay_at.pos = window_first();
    replay(crash);
    window_reset();
    /* losses from before the dump, then out to the disk */
    coll_flush_losses(1, 0);
    coll_flush_files();
    if (!crash)
        uuid_v4(C.next_sid);
    publish(1);
    return 0;
}

static void dump_end(const char *reason)
{
    coll_end_files(reason);
    C.state = CS_RING;
    C.live_until = 0;
    coll_reset_losses();
    publish(1);
}

static void fire(const trg_event *ev)
{
    uint64_t after = (uint64_t)g_client.cfg.trigger_after_ms * 1000000ull;
    if (C.state == CS_RING) {
        if (dump_begin(ev, 0) == 0 && !after)
            dump_end("dump_end");
        return;
    }
    /* live already: the files have everything; say what fired, and stay
     * live longer, up to LIVE_MAX_FACTOR times trigger_after_ms */
    if (C.state == CS_LIVE) {
        uint64_t now = client_now();
        uint64_t until = now + after;
        uint64_t cap = C.live_start + LIVE_MAX_FACTOR * after;
        if (until > cap)
            until = cap;
        if (until > C.live_until)
            C.live_until = until;
        trigger_lines(ev, NULL, now);
    }
}

/* ---- the collector's side ---- */

int rec_start(void)
{
    const client_cfg *cfg = &g_client.cfg;
    int rc = window_open(cfg->ring_bytes, cfg->ring_ns);
    if (rc) {
        client_set_error("gpufl_init: cannot map a ring window of %llu "
                         "bytes (%s)",
                         (unsigned long long)cfg->ring_bytes,
                         gpufl_strerror(rc));
        return rc;
    }
    C.scratch = malloc(WRITER_BUF);
    for (int s = 0; s < ST_COUNT; s++)
        C.dump_buf[s] = malloc(WRITER_BUF);
    if (!C.scratch || !C.dump_buf[0] || !C.dump_buf[1] || !C.dump_buf[2]) {
        rec_release();
        client_set_error("gpufl_init: out of memory for the ring buffers");
        return GPUFL_ENOMEM;
    }
    uuid_v4(C.next_sid);
    g_client.dump_n = 0;
    for (int i = 0; i < cfg->trg.n_scopes; i++)
        scope_ids[i] = gpufl_intern(cfg->trg.scopes[i].name);
    trigger_reset();
    trigger_arm(&cfg->trg);
    info_at = 0;
    publish(1);
    return 0;
}

void rec_release(void)
{
    window_close();
    free(C.scratch);
    C.scratch = NULL;
    for (int s = 0; s < ST_COUNT; s++) {
        free(C.dump_buf[s]);
        C.dump_buf[s] = NULL;
    }
    C.held = 0;
}

void rec_stop(void)
{
    trg_event ev;
    /* triggers that came in at the end (exit-error) */
    while (trigger_take(&ev)) {
        if (C.state == CS_RING)
            dump_begin(&ev, 0);
        else
            fire(&ev);
        trigger_done(ev.kind);
    }
    if (C.state == CS_LIVE)
        dump_end("shutdown");
    trigger_disarm();
    publish(1);
    /* a program that ends its session itself, then exits with an error:
     * the window waits for collector_exit */
    if (g_client.cfg.trg.armed & (1u << TRG_EXIT_ERROR))
        C.held = 1;
    else
        rec_release();
}

void collector_exit(int status)
{
    trg_event ev;
    if (!status || !g_client.cfg.ring ||
        !(g_client.cfg.trg.armed & (1u << TRG_EXIT_ERROR)))
        return;
    memset(&ev, 0, sizeof ev);
    ev.kind = TRG_EXIT_ERROR;
    ev.ts = client_now();
    snprintf(ev.detail, sizeof ev.detail, "exit status %d", status);
    if (g_client.collector_started) {
        /* gpufl_shutdown() follows: rec_stop() takes it */
        trigger_post(TRG_EXIT_ERROR, ev.detail);
        return;
    }
    /* the session already ended; the thread is gone and its window kept */
    if (C.held && C.state == CS_RING && window_is_open()) {
        if (dump_begin(&ev, 0) == 0)
            dump_end("shutdown");
        rec_release();
    }
}

void rec_scope_end(const rec *r)
{
    const trg_cfg *t = &g_client.cfg.trg;
    uint64_t dur = r->ts > r->u.sc.begin_ts ? r->ts - r->u.sc.begin_ts : 0;
    if (!(t->armed & (1u << TRG_SCOPE)))
        return;
    for (int i = 0; i < t->n_scopes; i++)
        if (scope_ids[i] && r->u.sc.name == scope_ids[i] &&
            dur > t->scopes[i].ns) {
            char detail[TRG_DETAIL_MAX];
            snprintf(detail, sizeof detail,
                     "scope %s took %.3f s (more than %.3f s)",
                     t->scopes[i].name, (double)dur / 1e9,
                     (double)t->scopes[i].ns / 1e9);
            trigger_post(TRG_SCOPE, detail);
        }
}

static void park(void)
{
    atomic_store(&C.busy, 0);
    atomic_store(&C.parked, 1);
    for (;;) { /* the process is ending: a crash handler writes */
        struct timespec t = { 1, 0 };
        nanosleep(&t, NULL);
    }
}

void rec_work_begin(void)
{
    /* Dekker with collector_crash: busy then crash_writer here, the
     * reverse there (both sequentially consistent) */
    atomic_store(&C.busy, 1);
    if (atomic_load(&C.crash_writer))
        park();
}

void rec_work_end(void)
{
    atomic_store(&C.busy, 0);
}

uint32_t rec_poll(uint32_t sleep_ms)
{
    trg_event ev;
    uint64_t now;
    if (atomic_load(&C.crash_req)) {
        coll_drain_all(1); /* everything recorded before the crash */
        park();
    }
    /* the window a trigger writes holds everything recorded before it */
    if (atomic_load_explicit(&trigger_waiting, memory_order_acquire))
        coll_drain_all(1);
    if (atomic_load_explicit(&trigger_waiting, memory_order_acquire))
        while (trigger_take(&ev)) {
            fire(&ev);
            trigger_done(ev.kind);
        }
    now = client_now();
    if (C.state == CS_LIVE && now >= C.live_until)
        dump_end("dump_end");
    if (C.state == CS_RING)
        window_expire(now);
    publish(0);
    if (C.state == CS_LIVE) {
        uint64_t ms = (C.live_until - now) / 1000000ull + 1;
        if (ms < sleep_ms)
            sleep_ms = (uint32_t)ms;
    }
    return sleep_ms;
}

void rec_file_crash_poll(void)
{
    if (!atomic_load(&C.crash_req))
        return;
    /* the collector's own thread, not a signal handler: it formats and
     * writes as always (a lock the crashed thread held can stop it: the
     * handler then gives up waiting) */
    coll_drain_all(1);
    coll_end_files("crash");
    park();
}

/* ---- the crash path (a signal handler) ---- */

static void wait_for(_Atomic int *flag, int want, uint32_t ms)
{
    for (uint32_t i = 0; i < ms && atomic_load(flag) != want; i++) {
        struct timespec t = { 0, 1000000L };
        nanosleep(&t, NULL);
    }
}

static void crash_detail(char *out, size_t cap, int sig, const siginfo_t *si)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = { { SIGSEGV, "SIGSEGV" },
                  { SIGBUS, "SIGBUS" },
                  { SIGILL, "SIGILL" },
                  { SIGFPE, "SIGFPE" },
                  { SIGABRT, "SIGABRT" } };
    size_t at = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].sig == sig)
            at = cat(out, 0, cap, names[i].name);
    if (!at)
        at = cat_u64(out, cat(out, 0, cap, "signal "), cap, (uint64_t)sig, 0);
    if (si && si->si_code > 0 && sig != SIGABRT) {
        /* a fault: the address the CPU could not use */
        uintptr_t a = (uintptr_t)si->si_addr;
        char hex[2 + 2 * sizeof a + 1];
        size_t n = 0, k = 2 * sizeof a;
        hex[n++] = '0';
        hex[n++] = 'x';
        while (k > 1 && !((a >> ((k - 1) * 4)) & 15))
            k--;
        while (k--)
            hex[n++] = "0123456789abcdef"[(a >> (k * 4)) & 15];
        hex[n] = 0;
        at = cat(out, at, cap, " at ");
        cat(out, at, cap, hex);
    } else if (si && si->si_code <= 0) {
        at = cat(out, at, cap, " sent by pid ");
        cat_u64(out, at, cap, (uint64_t)si->si_pid, 0);
    }
}

/* File mode: nothing to write here, the collector does it (it writes
 * files as always); what the handler adds is the wait, so that the
 * process does not die before.  A crash of the collector itself is not
 * waited for (nobody would write). */
static void crash_file(pid_t self)
{
    if (!g_client.collector_started || !atomic_load(&g_client.active) ||
        self == C.tid)
        return;
    atomic_store(&g_client.in_crash, 1);
    atomic_store(&C.crash_req, 1);
    client_kick();
    wait_for(&C.parked, 1, CRASH_PARK_MS + CRASH_BUSY_MS);
}

void collector_crash(int sig, const siginfo_t *si)
{
    trg_event ev;
    pid_t self = (pid_t)syscall(SYS_gettid);
    if (!g_client.cfg.ring) {
        crash_file(self);
        return;
    }
    if (!g_client.collector_started || !atomic_load(&g_client.active) || C.held)
        return;
    atomic_store(&g_client.in_crash, 1);
    atomic_store(&C.crash_req, 1);
    if (self != C.tid) {
        /* the collector drains what the threads recorded, then parks */
        client_kick();
        wait_for(&C.parked, 1, CRASH_PARK_MS);
        atomic_store(&C.crash_writer, 1);
        wait_for(&C.busy, 0, CRASH_BUSY_MS);
    }
    memset(&ev, 0, sizeof ev);
    ev.kind = TRG_CRASH;
    ev.ts = client_now();
    crash_detail(ev.detail, sizeof ev.detail, sig, si);
    if (C.state == CS_RING) {
        if (dump_begin(&ev, 1) < 0)
            return;
    } else if (C.state == CS_LIVE) {
        if (replay_at.on) { /* a dump the collector did not finish */
            replay(1);
            window_reset();
        }
        trigger_lines(&ev, NULL, ev.ts);
    } else {
        return;
    }
    coll_end_files("crash");
}
