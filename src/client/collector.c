/*
 * collector.c - the collector thread: drains every thread's ring, writes
 * dictionary lines before first use in each file, formats events, rotates
 * files, emits loss markers, and guards the disk.  In ring mode the lines
 * go to the flight recorder's window instead, until a trigger fires
 * (recorder.c).
 *
 * It is the only writer of the three files, so sequence numbers, rotation
 * and dictionaries need no locks.  It sleeps on a futex when there is
 * nothing to do; producers wake it when a ring is half full.
 */
#include <errno.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collector_int.h"
#include "common/clock.h"
#include "format.h"
#include "intern.h"
#include "window.h"

#define DRAIN_BATCH 4096            /* records per ring per pass: fairness */
#define DISK_CHECK_NS 1000000000ull /* statvfs once a second */
#define LOSS_EVERY_NS 100000000ull  /* at most 10 loss lines/s per stream */
#define IDLE_WAIT_MS 100
/* An event + up to 8 dict lines (a stack dict can reach 33 KiB). */
#define EVENT_ROOM (96 * 1024)

static const char *const loss_name[LOSS_REASONS] = {
    "buffer_full", "disk_low",    "dict_full",
    "too_long",    "scope_depth", "write_error"
};

coll_state C;

/* ---- line building ---- */

/* Start a line in stream s: envelope + seq + ts.  Returns 0 and a jw over
 * the writer buffer, or -1 when even an empty buffer is too small. */
static int line_begin(int s, jw *j, uint64_t ts, size_t need)
{
    wstream *w = &C.w[s];
    size_t avail;
    char *p = writer_space(w, need, &avail);
    if (!p)
        return -1;
    jw_init(j, p, avail);
    jw_put(j, C.envelope[s], C.envelope_len[s]);
    {
        char num[24];
        jw_put(j, num, jw_fmt_u64(num, w->seq));
        jw_put(j, ",\"ts\":", 6);
        jw_put(j, num, jw_fmt_u64(num, ts));
    }
    /* the object is open at depth 1 with members already written */
    j->depth = 1;
    j->comma = 1u << 1;
    return 0;
}

/* Finish: newline and commit; on overflow retry once with an empty buffer
 * of full size, then give up (counted as too_long). */
typedef coll_body_fn body_fn;

/* Ring mode: the line without its identity (see window.h) into the
 * window, with the ids it uses. */
static int keep(int s, uint64_t ts, body_fn body, const void *arg,
                const uint32_t *refs, int nrefs)
{
    jw j;
    char num[24];
    /* room for the envelope too: a kept line must fit a file later */
    jw_init(&j, C.scratch, WRITER_BUF - 128);
    jw_put(&j, ",\"ts\":", 6);
    jw_put(&j, num, jw_fmt_u64(num, ts));
    j.depth = 1;
    j.comma = 1u << 1;
    body(&j, arg);
    jw_put(&j, "\n", 1);
    if (j.err || window_append(s, client_now(), refs, nrefs, j.buf, j.len)) {
        C.lost[s][LOSS_TOO_LONG]++;
        C.pending[s][LOSS_TOO_LONG]++;
        return -1;
    }
    return 0;
}

int coll_emit(int s, uint64_t ts, body_fn body, const void *arg,
              const uint32_t *refs, int nrefs)
{
    wstream *w = &C.w[s];
    jw j;
    if (C.state == CS_RING)
        return keep(s, ts, body, arg, refs, nrefs);
    for (int attempt = 0; attempt < 2; attempt++) {
        size_t need = attempt == 0 ? 4096 : w->cap;
        if (attempt == 1)
            writer_flush(w);
        if (line_begin(s, &j, ts, need) < 0)
            break;
        body(&j, arg);
        jw_put(&j, "\n", 1);
        if (!j.err) {
            writer_commit(w, j.len);
            return 0;
        }
    }
    C.lost[s][LOSS_TOO_LONG]++;
    C.pending[s][LOSS_TOO_LONG]++;
    return -1;
}

static int emit(int s, uint64_t ts, body_fn body, const void *arg)
{
    return coll_emit(s, ts, body, arg, NULL, 0);
}

static void body_session(jw *j, const void *arg)
{
    fmt_session(j, *(const uint32_t *)arg);
}

static void body_dict(jw *j, const void *arg)
{
    fmt_dict(j, arg);
}

static void body_record(jw *j, const void *arg)
{
    fmt_record(j, arg);
}

static void body_raw(jw *j, const void *arg)
{
    const rec *r = arg;
    if (r->u.raw.len) {
        jw_put(j, ",", 1);
        jw_put(j, r->u.raw.body, r->u.raw.len);
    }
    jw_put(j, "}", 1);
}

struct loss_arg {
    const char *reason;
    uint64_t count, total;
    const char *detail;
};

static void body_loss(jw *j, const void *arg)
{
    const struct loss_arg *l = arg;
    fmt_loss(j, l->reason, l->count, l->total, l->detail);
}

struct end_arg {
    const char *reason;
    uint64_t lines, lost;
    uint32_t rotations;
};

static void body_end(jw *j, const void *arg)
{
    const struct end_arg *e = arg;
    fmt_session_end(j, e->reason, e->lines, e->lost, e->rotations);
}

/* ---- files ---- */

static void write_header(int s)
{
    uint32_t idx = C.w[s].rotations;
    emit(s, client_now(), body_session, &idx);
}

void coll_header(int s)
{
    write_header(s);
}

/* Rotation happens before an event's dictionary lines are written, so an
 * event and the dict lines it needs always share a file. */
static void maybe_rotate(int s, size_t need)
{
    wstream *w = &C.w[s];
    if (C.state == CS_RING || !writer_should_rotate(w, need))
        return;
    if (writer_rotate(w) != 0) {
        client_log(GPUFL_LOG_ERROR,
                   "rotating %s failed: %s; capture of the "
                   "%s stream stops",
                   w->path, strerror(errno), fmt_stream_name(s));
        C.open[s] = 0;
        return;
    }
    write_header(s);
}

static void dict_ensure(int s, uint32_t id, int depth)
{
    intern_entry *e = intern_get_mut(id);
    if (!e || e->emitted[s] == C.w[s].file_gen || depth > 300)
        return;
    if (e->kind == IK_PATH) {
        dict_ensure(s, e->parent, depth + 1);
        dict_ensure(s, e->name, depth + 1);
    } else if (e->kind == IK_LAUNCH) {
        dict_ensure(s, e->name, depth + 1);
    }
    e->emitted[s] = C.w[s].file_gen;
    emit(s, client_now(), body_dict, e);
}

void coll_dict(int s, uint32_t id)
{
    dict_ensure(s, id, 0);
}

static int rec_stream(const rec *r)
{
    switch (r->type) {
    case REC_KERNEL:
    case REC_MEMCPY:
    case REC_MEMSET:
    case REC_SYNC:
    case REC_MEMOP: return ST_DEVICE;
    case REC_RAW:
        return r->u.raw.stream < ST_COUNT ? (int)r->u.raw.stream : ST_SYSTEM;
    default: return ST_SCOPE;
    }
}

/* The launch configuration of a kernel record, interned. */
static void kernel_cfg(rec *r)
{
    intern_launch l;
    memset(&l, 0, sizeof l);
    l.name = r->u.k.name;
    memcpy(l.block, r->u.k.block, sizeof l.block);
    l.regs = r->u.k.regs;
    l.smem_static = r->u.k.smem_static;
    l.smem_dynamic = r->u.k.smem_dynamic;
    l.local_mem = r->u.k.local_mem;
    l.occ = r->u.k.occ < 0.0f ? -1.0f : r->u.k.occ;
    l.limiters = r->u.k.limiters;
    r->u.k.cfg = r->u.k.name ? intern_launch_cfg(&l) : 0;
}

int coll_line_prep(int s, size_t need)
{
    if (!C.open[s])
        return -1;
    /* Room for the event and the dict lines it may need, up front: a
     * flush (which can fail and drop the buffer) then never happens
     * between a dict line and the event that relies on it. */
    if (C.w[s].cap - C.w[s].len < EVENT_ROOM)
        writer_flush(&C.w[s]);
    if (C.w[s].lost_context) {
        /* a failed write took lines this file relies on: say who we are
         * again (dict lines follow on demand: the file generation moved) */
        C.w[s].lost_context = 0;
        write_header(s);
    }
    if (C.disk_paused) {
        C.lost[s][LOSS_DISK_LOW]++;
        C.pending[s][LOSS_DISK_LOW]++;
        return -1;
    }
    maybe_rotate(s, need);
    return C.open[s] ? 0 : -1;
}

void coll_put(int s, const char *text, size_t len)
{
    wstream *w = &C.w[s];
    size_t avail;
    char num[24], *p = writer_space(w, C.envelope_len[s] + 24 + len, &avail);
    size_t n;
    if (!p) {
        C.lost[s][LOSS_TOO_LONG]++;
        C.pending[s][LOSS_TOO_LONG]++;
        return;
    }
    memcpy(p, C.envelope[s], C.envelope_len[s]);
    n = C.envelope_len[s];
    memcpy(p + n, num, jw_fmt_u64(num, w->seq));
    n += jw_fmt_u64(num, w->seq);
    memcpy(p + n, text, len);
    writer_commit(w, n + len);
}

static void handle(rec *r)
{
    int s = rec_stream(r);
    uint32_t ids[8];
    int n;
    if (r->type == REC_SCOPE_END && g_client.cfg.ring)
        rec_scope_end(r);
    if (C.state == CS_RING) {
        if (r->type == REC_RAW) {
            keep(s, r->ts, body_raw, r, NULL, 0);
            return;
        }
        if (r->type == REC_KERNEL)
            kernel_cfg(r);
        n = fmt_refs(r, ids);
        keep(s, r->ts, body_record, r, ids, n);
        return;
    }
    if (coll_line_prep(s, r->type == REC_RAW ? r->u.raw.len + 256 : 1024) < 0)
        return;
    if (r->type == REC_RAW) {
        emit(s, r->ts, body_raw, r);
        return;
    }
    if (r->type == REC_KERNEL)
        kernel_cfg(r);
    n = fmt_refs(r, ids);
    for (int i = 0; i < n; i++)
        dict_ensure(s, ids[i], 0);
    emit(s, r->ts, body_record, r);
}

/* ---- draining ---- */

/* full: up to the head seen now, not a batch (a flush, a trigger, a
 * crash: everything recorded so far). */
static uint64_t drain_ring(ring *r, uint8_t gen, int full)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    uint64_t n = 0;
    while (tail != head && (full || n < DRAIN_BATCH)) {
        rec *x = &r->slots[tail & r->mask];
        if (x->gen == gen)
            handle(x);
        if (x->type == REC_RAW)
            free(x->u.raw.body);
        tail++;
        n++;
    }
    atomic_store_explicit(&r->tail, tail, memory_order_release);
    /* producer-side drops, published by the producer */
    for (int s = 0; s < ST_COUNT; s++) {
        uint64_t d =
            atomic_load_explicit(&r->drop_pub[s], memory_order_relaxed);
        if (d != r->drop_seen[s]) {
            C.lost[s][LOSS_BUFFER_FULL] += d - r->drop_seen[s];
            C.pending[s][LOSS_BUFFER_FULL] += d - r->drop_seen[s];
            r->drop_seen[s] = d;
        }
    }
    {
        uint64_t d = atomic_load_explicit(&r->depth_pub, memory_order_relaxed);
        if (d != r->depth_seen) {
            C.lost[ST_SCOPE][LOSS_SCOPE_DEPTH] += d - r->depth_seen;
            C.pending[ST_SCOPE][LOSS_SCOPE_DEPTH] += d - r->depth_seen;
            r->depth_seen = d;
        }
    }
    return n;
}

uint64_t coll_drain_all(int full)
{
    uint8_t gen = (uint8_t)atomic_load(&g_client.gen);
    uint32_t slots = client_ring_slots();
    uint64_t total = 0;
    for (uint32_t i = 0; i < slots; i++) {
        ring *r = client_ring_at(i);
        if (!r)
            continue;
        int dead = atomic_load_explicit(&r->dead, memory_order_acquire);
        total += drain_ring(r, gen, full);
        if (dead && atomic_load(&r->tail) == atomic_load(&r->head))
            client_ring_release(i);
    }
    return total;
}

/* Discard what a previous session left in the rings. */
static void discard_all(void)
{
    uint32_t slots = client_ring_slots();
    for (uint32_t i = 0; i < slots; i++) {
        ring *r = client_ring_at(i);
        if (!r)
            continue;
        uint64_t tail = atomic_load(&r->tail), head = atomic_load(&r->head);
        for (; tail != head; tail++) {
            rec *x = &r->slots[tail & r->mask];
            if (x->type == REC_RAW)
                free(x->u.raw.body);
        }
        atomic_store(&r->tail, tail);
        for (int s = 0; s < ST_COUNT; s++)
            r->drop_seen[s] = atomic_load(&r->drop_pub[s]);
        r->depth_seen = atomic_load(&r->depth_pub);
        if (atomic_load(&r->dead))
            client_ring_release(i);
    }
}

/* ---- losses and the disk guard ---- */

/* Failed writes are said once when they start and once when they end (the
 * loss lines in the file may themselves be lost while the disk is full). */
static void write_health(void)
{
    int failing = -1;
    if (atomic_load(&g_client.in_crash)) /* strerror, logging: not there */
        return;
    for (int s = 0; s < ST_COUNT; s++)
        if (C.open[s] && C.w[s].failing) {
            failing = s;
            break;
        }
    if (failing >= 0 && !C.write_failing) {
        const wstream *w = &C.w[failing];
        C.write_failing = 1;
        client_log(GPUFL_LOG_WARN,
                   "writing %s failed: %s; lines are dropped and counted "
                   "(write_error loss lines) until writes succeed again%s",
                   w->path, strerror(w->err),
                   g_client.cfg.min_free_bytes
                       ? ""
                       : " (min_free_bytes=0: the disk guard is off)");
    } else if (failing < 0 && C.write_failing) {
        C.write_failing = 0;
        client_log(GPUFL_LOG_INFO, "writes to the log files succeed again");
    }
}

/* ending: the session is ending (a paused capture did not resume) */
static void flush_losses(int force, int ending)
{
    uint64_t now = clock_mono_ns();
    uint64_t ov = intern_overflows();
    if (ov != C.dict_overflow_seen) {
        /* names that could not be interned: the events still went out,
         * without the name, so count them on the device stream */
        C.lost[ST_DEVICE][LOSS_DICT_FULL] += ov - C.dict_overflow_seen;
        C.pending[ST_DEVICE][LOSS_DICT_FULL] += ov - C.dict_overflow_seen;
        C.dict_overflow_seen = ov;
    }
    for (int s = 0; s < ST_COUNT; s++) {
        if (C.w[s].lines_lost != C.lines_lost_seen[s]) {
            uint64_t d = C.w[s].lines_lost - C.lines_lost_seen[s];
            C.lost[s][LOSS_WRITE_ERROR] += d;
            C.pending[s][LOSS_WRITE_ERROR] += d;
            C.lines_lost_seen[s] = C.w[s].lines_lost;
        }
    }
    write_health();
    if (!force && now - C.last_loss_ns < LOSS_EVERY_NS)
        return;
    C.last_loss_ns = now;
    if (C.disk_paused)
        return; /* written when capture resumes */
    for (int s = 0; s < ST_COUNT; s++) {
        if (!C.open[s] && C.state != CS_RING)
            continue;
        for (int k = 0; k < LOSS_REASONS; k++) {
            struct loss_arg a = { loss_name[k], C.pending[s][k], C.lost[s][k],
                                  NULL };
            /* every stream that got "capture paused" gets the matching
             * end of the pause, even when it lost nothing meanwhile */
            int close_pause = k == LOSS_DISK_LOW && C.pause_open[s];
            if (!C.pending[s][k] && !close_pause)
                continue;
            if (k == LOSS_DISK_LOW)
                C.pause_open[s] = 0;
            if (k == LOSS_WRITE_ERROR)
                a.detail = "a write to the log file failed (disk full or "
                           "I/O error); the lines it held were dropped";
            if (k == LOSS_DISK_LOW)
                a.detail = ending ? "the session ended while capture was "
                                    "paused for low disk space"
                                  : "capture resumed: free disk space is "
                                    "above the threshold again";
            C.pending[s][k] = 0;
            maybe_rotate(s, 512);
            emit(s, client_now(), body_loss, &a);
        }
    }
}

void coll_flush_losses(int force, int ending)
{
    flush_losses(force, ending);
}

void coll_reset_losses(void)
{
    memset(C.lost, 0, sizeof C.lost);
    memset(C.pending, 0, sizeof C.pending);
    memset(C.lines_lost_seen, 0, sizeof C.lines_lost_seen);
    memset(C.pause_open, 0, sizeof C.pause_open);
    C.disk_paused = 0;
    C.write_failing = 0;
    C.last_disk_check = 0; /* a dump looks at the disk before it writes */
}

static void disk_guard(uint64_t now)
{
    struct statvfs sv;
    uint64_t min = g_client.cfg.min_free_bytes;
    if (C.state == CS_RING) /* nothing is written */
        return;
    if (now - C.last_disk_check < DISK_CHECK_NS && C.last_disk_check)
        return;
    C.last_disk_check = now;
    if (!min || statvfs(g_client.cfg.log_dir, &sv) < 0)
        return;
    C.free_bytes = (uint64_t)sv.f_bavail * sv.f_frsize;
    if (!C.disk_paused && C.free_bytes < min) {
        char detail[200];
        struct loss_arg a = { "disk_low", 0, 0, detail };
        snprintf(detail, sizeof detail,
                 "capture paused: %llu bytes free in "
                 "the log directory, below min_free_bytes=%llu",
                 (unsigned long long)C.free_bytes, (unsigned long long)min);
        for (int s = 0; s < ST_COUNT; s++)
            if (C.open[s]) {
                a.total = C.lost[s][LOSS_DISK_LOW];
                emit(s, client_now(), body_loss, &a);
                writer_flush(&C.w[s]);
                C.pause_open[s] = 1;
            }
        C.disk_paused = 1;
        client_log(GPUFL_LOG_WARN, "%s", detail);
    } else if (C.disk_paused && C.free_bytes >= min + min / 10) {
        /* 10 % hysteresis so capture does not flap at the threshold */
        C.disk_paused = 0;
        client_log(GPUFL_LOG_INFO, "capture resumed: %llu bytes free",
                   (unsigned long long)C.free_bytes);
        flush_losses(1, 0);
    }
}

/* ---- the thread ---- */

static void flush_files(void)
{
    for (int s = 0; s < ST_COUNT; s++)
        if (C.open[s])
            writer_flush(&C.w[s]);
}

void coll_flush_files(void)
{
    flush_files();
}

static void wait_for_work(uint32_t ms)
{
    uint32_t seen = atomic_load_explicit(&g_client.wake, memory_order_acquire);
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    atomic_store(&g_client.collector_sleeping, 1);
    syscall(SYS_futex, &g_client.wake, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
    atomic_store(&g_client.collector_sleeping, 0);
}

static void *collector_main(void *arg)
{
    uint64_t last_flush = clock_mono_ns();
    uint64_t flush_ns = (uint64_t)g_client.cfg.flush_ms * 1000000ull;
    int busy = 0;
    (void)arg;
    C.tid = (pid_t)syscall(SYS_gettid);
    for (;;) {
        uint64_t req = atomic_load(&g_client.flush_req);
        int stop = atomic_load(&g_client.stop_collector);
        uint64_t n, now;
        uint32_t ms;
        rec_work_begin();
        n = coll_drain_all(0);
        now = clock_mono_ns();
        disk_guard(now);
        flush_losses(0, 0);
        if (now - last_flush >= flush_ns ||
            req != atomic_load(&g_client.flush_done) || stop) {
            /* gpufl_flush: everything recorded before it was asked (a
             * batch per ring would leave a backlog behind) */
            if (req != atomic_load(&g_client.flush_done))
                n += coll_drain_all(1);
            flush_files();
            last_flush = now;
            atomic_store(&g_client.flush_done, req);
        }
        /* while events keep coming, look again soon instead of waiting
         * for a producer's kick; idle, sleep long */
        ms = g_client.cfg.flush_ms < IDLE_WAIT_MS ? g_client.cfg.flush_ms
                                                  : IDLE_WAIT_MS;
        if (busy)
            ms = 1;
        if (g_client.cfg.ring)
            ms = rec_poll(ms);
        else
            rec_file_crash_poll();
        rec_work_end();
        if (stop && n == 0)
            break;
        if (n == 0)
            wait_for_work(ms);
        busy = n > 0;
    }
    return NULL;
}

/* {"v":1,"sid":"<sid>","st":"<stream>","seq": - by hand, since a crash
 * dump makes them in a signal handler. */
void coll_envelopes(const char *sid)
{
    for (int s = 0; s < ST_COUNT; s++) {
        jw j;
        char num[24];
        jw_init(&j, C.envelope[s], sizeof C.envelope[s]);
        jw_put(&j, "{\"v\":", 5);
        jw_put(&j, num, jw_fmt_u64(num, GPUFL_FORMAT_VERSION));
        jw_put(&j, ",\"sid\":\"", 8);
        jw_put(&j, sid, strlen(sid));
        jw_put(&j, "\",\"st\":\"", 8);
        jw_put(&j, fmt_stream_name(s), strlen(fmt_stream_name(s)));
        jw_put(&j, "\",\"seq\":", 8);
        C.envelope_len[s] = j.len;
    }
    memcpy(C.sid, sid, strlen(sid) + 1);
}

static void default_prefix(char *out, size_t cap)
{
    time_t t = (time_t)(g_client.start_ns / 1000000000ull);
    struct tm tm;
    char stamp[32];
    gmtime_r(&t, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    snprintf(out, cap, "%s.%s.%.8s", g_client.cfg.app, stamp, g_client.sid);
}

int collector_start(void)
{
    const client_cfg *cfg = &g_client.cfg;
    char prefix[300];
    int rc = 0;
    rec_release(); /* a window an earlier session kept for exit-error */
    memset(&C, 0, sizeof C);
    C.dict_overflow_seen = intern_overflows();
    discard_all();
    if (cfg->ring) {
        /* the flight recorder: no file until a trigger fires */
        g_client.prefix_path[0] = 0;
        C.state = CS_RING;
        rc = rec_start();
        if (rc)
            return rc;
        goto thread;
    }
    if (cfg->log_prefix[0])
        snprintf(prefix, sizeof prefix, "%s", cfg->log_prefix);
    else
        default_prefix(prefix, sizeof prefix);
    if ((size_t)snprintf(g_client.prefix_path, sizeof g_client.prefix_path,
                         "%s/%s", cfg->log_dir,
                         prefix) >= sizeof g_client.prefix_path) {
        client_set_error("gpufl_init: log path too long");
        return GPUFL_ETOOBIG;
    }
    coll_envelopes(g_client.sid);
    for (int s = 0; s < ST_COUNT; s++) {
        rc = writer_open(&C.w[s], s, g_client.prefix_path, fmt_stream_name(s),
                         cfg->rotate_bytes, cfg->rotate_keep,
                         cfg->compress_rotated);
        if (rc) {
            client_set_error("gpufl_init: cannot create %s: %s (%s)",
                             C.w[s].path[0] ? C.w[s].path
                                            : g_client.prefix_path,
                             strerror(errno), gpufl_strerror(rc));
            for (int k = 0; k <= s; k++)
                writer_close(&C.w[k]);
            return rc;
        }
        C.open[s] = 1;
    }
    for (int s = 0; s < ST_COUNT; s++) {
        write_header(s);
        writer_flush(&C.w[s]);
    }
thread:
    if (cfg->compress_rotated)
        writer_compressor_start();
    atomic_store(&g_client.stop_collector, 0);
    if (pthread_create(&g_client.collector, NULL, collector_main, NULL) != 0) {
        client_set_error("gpufl_init: cannot start the collector thread");
        for (int s = 0; s < ST_COUNT; s++)
            if (C.open[s])
                writer_close(&C.w[s]);
        rec_release();
        return GPUFL_ENOMEM;
    }
    g_client.collector_started = 1;
    if (!cfg->ring && (cfg->trg.armed & (1u << TRG_CRASH))) {
        /* file mode: only the crash trigger (rec_file_crash_poll); the
         * others would make dumps, which need ring mode */
        trg_cfg only;
        memset(&only, 0, sizeof only);
        only.armed = 1u << TRG_CRASH;
        trigger_arm(&only);
    }
    return 0;
}

void coll_end_files(const char *reason)
{
    int ending = 1;
    /* the events out first (or dropped and counted), so the file's reserve
     * is left for its last lines: the losses and the end */
    flush_files();
    C.disk_paused = 0;
    flush_losses(1, ending);
    for (int s = 0; s < ST_COUNT; s++) {
        struct end_arg e = { reason, 0, 0, 0 };
        uint64_t lost0;
        int bad;
        if (!C.open[s])
            continue;
        for (int k = 0; k < LOSS_REASONS; k++)
            e.lost += C.lost[s][k];
        e.lines = C.w[s].lines + 1;
        e.rotations = C.w[s].rotations;
        emit(s, client_now(), body_end, &e);
        lost0 = C.w[s].lines_lost;
        bad = writer_close(&C.w[s]) != 0;
        if (atomic_load(&g_client.in_crash))
            ; /* a crash dump: no strerror, no logging in a signal handler */
        else if (bad)
            client_log(GPUFL_LOG_ERROR,
                       "the last %llu lines of %s could not be written (%s);"
                       " its loss and session_end lines are among them",
                       (unsigned long long)(C.w[s].lines_lost - lost0),
                       C.w[s].path, strerror(C.w[s].err));
        else if (C.lost[s][LOSS_WRITE_ERROR])
            client_log(GPUFL_LOG_WARN,
                       "%llu lines of %s were lost to failed writes; its"
                       " write_error loss lines say where",
                       (unsigned long long)C.lost[s][LOSS_WRITE_ERROR],
                       C.w[s].path);
        C.open[s] = 0;
    }
}

void collector_stop(const char *reason)
{
    if (!g_client.collector_started)
        return;
    atomic_store(&g_client.stop_collector, 1);
    client_kick();
    pthread_join(g_client.collector, NULL);
    g_client.collector_started = 0;
    /* last words: whatever a racing producer added, then losses, then the
     * end line that tells readers the session finished cleanly */
    coll_drain_all(1);
    if (g_client.cfg.ring) {
        rec_stop();
    } else {
        coll_end_files(reason);
        trigger_disarm(); /* file mode's crash handler */
    }
    writer_compressor_stop();
}
