/*
 * ctl_cmd.c - the commands of the control socket (docs/recorder.md#
 * control-socket) and their timers: status, dump, trace on|off, engines.
 * Runs on the control thread only (ctl.c), one request at a time, so the
 * timers need no lock.
 *
 * A request is words separated by single spaces:
 *   status
 *   dump [TEXT...]                    (TEXT: the trigger line's detail)
 *   trace on|off [for=DURATION]
 *   engines sass|pcsamp|cupti [for=DURATION] | engines off
 * DURATION in the option syntax (30s, 500ms, 2m; a bare number is ms).
 */
#include "ctl.h"

#include <stdio.h>
#include <string.h>

#include "client_int.h"
#include "common/clock.h"
#include "common/ctlproto.h"
#include "common/opt.h"
#include "cupti_int.h"
#include "window.h"

#define CTL_WORDS 8
#define CTL_FOR_MAX_MS (24ull * 3600 * 1000) /* a timed change: 1 day */
#define CTL_DUMP_WAIT_NS 10000000000ull      /* the collector takes it */

static struct {
    uint64_t trace_until; /* CLOCK_MONOTONIC; 0 = no timer */
    int trace_back;       /* tracing goes back to this */
    const src_ops *eng_ops;
    void *eng_state;
    char eng_name[16];
    uint64_t eng_until; /* 0 = until `engines off` or the session's end */
} T;

void ctl_fail(jw *j, int code, const char *msg)
{
    jw_obj_begin(j);
    jw_key(j, "ok");
    jw_bool(j, 0);
    jw_kv_str(j, "error", msg);
    jw_kv_u64(j, "code", (uint64_t)code);
    jw_obj_end(j);
}

static void ok_begin(jw *j, const char *cmd)
{
    jw_obj_begin(j);
    jw_key(j, "ok");
    jw_bool(j, 1);
    jw_kv_str(j, "cmd", cmd);
}

static uint64_t left_ms(uint64_t until, uint64_t now)
{
    return until > now ? (until - now + 999999) / 1000000ull : 0;
}

/* ---- status ---- */

static void status(jw *j)
{
    const client_cfg *cfg = &g_client.cfg;
    collector_info ci;
    win_stats ws;
    uint64_t fired[TRG_N], limited[TRG_N], now = clock_mono_ns();
    int tr = cupti_trace_state();
    collector_get_info(&ci);
    ok_begin(j, "status");
    jw_kv_u64(j, "proto", CTL_PROTO);
    jw_kv_str(j, "sid", g_client.sid);
    jw_kv_str(j, "app", cfg->app);
    jw_kv_str(j, "lib", GPUFL_VERSION_STRING);
    jw_kv_str(j, "mode", cfg->ring ? "ring" : "file");
    jw_kv_str(j, "state", !cfg->ring ? "file" : ci.live ? "live" : "ring");
    jw_key(j, "files");
    jw_arr_begin(j);
    if (!cfg->ring || ci.live)
        for (int s = 0; s < ST_COUNT; s++) {
            char p[CLIENT_PATH_MAX + 16];
            static const char *const n[] = { "device", "scope", "system" };
            snprintf(p, sizeof p, "%s.%s.log",
                     cfg->ring ? ci.prefix : g_client.prefix_path, n[s]);
            jw_str(j, p);
        }
    jw_arr_end(j);
    if (cfg->ring) {
        collector_get_window(&ws);
        jw_key(j, "window");
        jw_obj_begin(j);
        jw_kv_u64(j, "cap", ws.cap);
        jw_kv_u64(j, "used", ws.used);
        if (ws.age_ns)
            jw_kv_u64(j, "duration_ms", ws.age_ns / 1000000ull);
        jw_kv_u64(j, "lines", ws.lines[0] + ws.lines[1] + ws.lines[2]);
        jw_kv_u64(j, "bytes", ws.bytes[0] + ws.bytes[1] + ws.bytes[2]);
        if (ws.oldest)
            jw_kv_u64(j, "from", ws.oldest);
        jw_kv_u64(j, "evicted", ws.evicted[0] + ws.evicted[1] + ws.evicted[2]);
        jw_kv_u64(j, "evicted_bytes",
                  ws.evicted_bytes[0] + ws.evicted_bytes[1] +
                      ws.evicted_bytes[2]);
        jw_kv_u64(j, "aged", ws.aged[0] + ws.aged[1] + ws.aged[2]);
        jw_obj_end(j);
        jw_kv_u64(j, "dumps", ci.dumps);
        if (ci.prefix[0])
            jw_kv_str(j, "last_dump", ci.prefix);
        if (ci.live)
            jw_kv_u64(j, "live_ms", left_ms(ci.live_until, client_now()));
        trigger_counts(fired, limited);
        jw_key(j, "triggers");
        jw_obj_begin(j);
        for (int k = 0; k < TRG_N; k++) {
            if (!(cfg->trg.armed & (1u << k)))
                continue;
            jw_key(j, trigger_name(k));
            jw_obj_begin(j);
            jw_kv_u64(j, "fired", fired[k]);
            jw_kv_u64(j, "limited", limited[k]);
            jw_obj_end(j);
        }
        jw_obj_end(j);
    }
    jw_kv_str(j, "trace", tr < 0 ? "unavailable" : tr ? "on" : "off");
    if (T.trace_until)
        jw_kv_u64(j, "trace_for_ms", left_ms(T.trace_until, now));
    jw_key(j, "engines");
    jw_obj_begin(j);
    for (int i = 0; i < g_client.n_engines; i++)
        jw_kv_str(j, g_client.engine_names[i], g_client.engines[i].status);
    jw_kv_str(j, "host", g_client.host_status);
    if (T.eng_ops) {
        char st[64];
        if (T.eng_until)
            snprintf(st, sizeof st, "on (gpufl ctl, %llu ms left)",
                     (unsigned long long)left_ms(T.eng_until, now));
        else
            snprintf(st, sizeof st, "on (gpufl ctl)");
        jw_kv_str(j, T.eng_name, st);
    }
    jw_obj_end(j);
    jw_obj_end(j);
}

/* ---- dump ---- */

static void dump(const char *why, jw *j)
{
    const client_cfg *cfg = &g_client.cfg;
    uint64_t h0 = trigger_handled(TRG_CTL), fired[TRG_N], limited[TRG_N], f0,
             deadline = clock_mono_ns() + CTL_DUMP_WAIT_NS;
    collector_info ci;
    char detail[TRG_DETAIL_MAX];
    if (!cfg->ring) {
        ctl_fail(j, GPUFL_ECONFLICT,
                 "not in ring mode (GPUFL_RECORD=file): every event is written "
                 "as it comes already");
        return;
    }
    if (!(cfg->trg.armed & (1u << TRG_CTL))) {
        ctl_fail(j, GPUFL_ECONFLICT,
                 "the ctl trigger is not in GPUFL_TRIGGERS");
        return;
    }
    trigger_counts(fired, limited);
    f0 = fired[TRG_CTL];
    snprintf(detail, sizeof detail, "%s", why && *why ? why : "gpufl ctl");
    trigger_post(TRG_CTL, detail);
    while (trigger_handled(TRG_CTL) == h0 && clock_mono_ns() < deadline) {
        struct timespec t = { 0, 2000000L };
        nanosleep(&t, NULL);
    }
    if (trigger_handled(TRG_CTL) == h0) {
        ctl_fail(j, GPUFL_ETIMEDOUT,
                 "the recorder did not take the request within 10 s");
        return;
    }
    trigger_counts(fired, limited);
    if (fired[TRG_CTL] == f0) {
        ctl_fail(j, GPUFL_EAGAIN,
                 "rate-limited: a ctl trigger fired less than 1 s ago (counted "
                 "as a repeat of it)");
        return;
    }
    /* the dump's head and window are written when the trigger is taken */
    collector_get_info(&ci);
    ok_begin(j, "dump");
    jw_kv_u64(j, "dump", ci.dumps);
    jw_kv_str(j, "prefix", ci.prefix);
    jw_key(j, "live");
    jw_bool(j, ci.live);
    jw_obj_end(j);
}

/* ---- trace ---- */

static int parse_for(const char *w, uint64_t *ms, jw *j)
{
    if (strncmp(w, "for=", 4) || opt_parse_dur(w + 4, OPT_MS, OPT_MS, ms) ||
        !*ms || *ms > CTL_FOR_MAX_MS) {
        ctl_fail(j, GPUFL_EINVAL,
                 "expected for=DURATION (e.g. for=30s, for=500ms; at most 1 "
                 "day)");
        return -1;
    }
    return 0;
}

static void trace(int on, uint64_t for_ms, jw *j)
{
    char why[SRC_REASON_LEN], msg[96];
    int was = cupti_trace_state(), rc;
    if (was < 0) {
        ctl_fail(j, GPUFL_EUNAVAIL,
                 "the cupti engine is not on in this session (it needs "
                 "GPUFL_ENGINES with cupti or auto, and a GPU)");
        return;
    }
    rc = cupti_trace_set(on, why, sizeof why);
    if (rc) {
        ctl_fail(j, rc, why);
        return;
    }
    if (for_ms) {
        if (!T.trace_until) /* a second timed change keeps the first's end */
            T.trace_back = was;
        T.trace_until = clock_mono_ns() + for_ms * 1000000ull;
    } else {
        T.trace_until = 0;
    }
    if (for_ms)
        snprintf(msg, sizeof msg, "gpufl: tracing %s (gpufl ctl, for %llu ms)",
                 on ? "on" : "off", (unsigned long long)for_ms);
    else
        snprintf(msg, sizeof msg, "gpufl: tracing %s (gpufl ctl)",
                 on ? "on" : "off");
    if (on != was)
        gpufl_marker(msg);
    ok_begin(j, "trace");
    jw_kv_str(j, "trace", on ? "on" : "off");
    jw_kv_str(j, "was", was ? "on" : "off");
    if (for_ms)
        jw_kv_u64(j, "for_ms", for_ms);
    jw_obj_end(j);
}

/* ---- engines ---- */

static void engine_off(const char *why)
{
    char msg[96];
    if (!T.eng_ops)
        return;
    T.eng_ops->close(T.eng_state);
    snprintf(msg, sizeof msg, "gpufl: engine %s off (%s)", T.eng_name, why);
    gpufl_marker(msg);
    T.eng_ops = NULL;
    T.eng_state = NULL;
    T.eng_until = 0;
}

static void engines(const char *list, uint64_t for_ms, jw *j)
{
    const src_ops *ops = NULL;
    src_config sc;
    char why[SRC_REASON_LEN], msg[SRC_REASON_LEN + 64];
    int rc;
    if (!strcmp(list, "off")) {
        int had = T.eng_ops != NULL;
        engine_off("gpufl ctl");
        ok_begin(j, "engines");
        jw_key(j, "stopped");
        jw_bool(j, had);
        jw_obj_end(j);
        return;
    }
    if (!strcmp(list, "cupti")) {
        trace(1, for_ms, j);
        return;
    }
    if (!strcmp(list, "sass"))
        ops = &src_sass_ops;
    else if (!strcmp(list, "pcsamp"))
        ops = &src_pcsamp_ops;
    if (!ops) {
        ctl_fail(j, GPUFL_EINVAL,
                 "engines takes one of sass, pcsamp, cupti, or off (sass and "
                 "pcsamp share the GPU's performance monitors: one at a time)");
        return;
    }
    if (T.eng_ops) {
        snprintf(msg, sizeof msg,
                 "%s runs already (gpufl ctl); 'engines off' first",
                 T.eng_name);
        ctl_fail(j, GPUFL_EALREADY, msg);
        return;
    }
    for (int i = 0; i < g_client.n_engines; i++)
        if (g_client.engines[i].on &&
            (!strcmp(g_client.engine_names[i], "sass") ||
             !strcmp(g_client.engine_names[i], "pcsamp"))) {
            snprintf(msg, sizeof msg, "%s runs in this session already",
                     g_client.engine_names[i]);
            ctl_fail(j, GPUFL_EALREADY, msg);
            return;
        }
    memset(&sc, 0, sizeof sc);
    sc.nvml_lib = g_client.cfg.nvml_lib;
    sc.proc_root = g_client.cfg.proc_root;
    why[0] = 0;
    rc = ops->open(&T.eng_state, &sc, why, sizeof why);
    if (!rc && ops->start && ops->start(T.eng_state) != 0) {
        ops->close(T.eng_state);
        snprintf(why, sizeof why, "%s: could not start", ops->name);
        rc = GPUFL_EUNAVAIL;
    }
    if (rc) {
        ctl_fail(j, rc, why[0] ? why : gpufl_strerror(rc));
        T.eng_state = NULL;
        return;
    }
    T.eng_ops = ops;
    snprintf(T.eng_name, sizeof T.eng_name, "%s", ops->name);
    T.eng_until = for_ms ? clock_mono_ns() + for_ms * 1000000ull : 0;
    snprintf(msg, sizeof msg, "gpufl: engine %s on (gpufl ctl%s)", ops->name,
             for_ms ? ", timed" : "");
    gpufl_marker(msg);
    ok_begin(j, "engines");
    jw_kv_str(j, "engine", ops->name);
    if (for_ms)
        jw_kv_u64(j, "for_ms", for_ms);
    jw_obj_end(j);
}

/* ---- dispatch and timers ---- */

void ctl_cmd_run(char *line, jw *j)
{
    char *w[CTL_WORDS], *p = line;
    int n = 0;
    uint64_t for_ms = 0;
    /* dump keeps the rest of the line as its text */
    if (!strncmp(line, "dump", 4) && (!line[4] || line[4] == ' ')) {
        dump(line[4] ? line + 5 : NULL, j);
        return;
    }
    while (*p && n < CTL_WORDS) {
        char *sp = strchr(p, ' ');
        w[n++] = p;
        if (!sp)
            break;
        *sp = 0;
        p = sp + 1;
    }
    if (!n || !w[0][0]) {
        ctl_fail(j, GPUFL_EPARSE, "empty request");
        return;
    }
    if (!strcmp(w[0], "status") && n == 1) {
        status(j);
        return;
    }
    if (!strcmp(w[0], "trace") && (n == 2 || n == 3) &&
        (!strcmp(w[1], "on") || !strcmp(w[1], "off"))) {
        if (n == 3 && parse_for(w[2], &for_ms, j) < 0)
            return;
        trace(!strcmp(w[1], "on"), for_ms, j);
        return;
    }
    if (!strcmp(w[0], "engines") && (n == 2 || n == 3)) {
        if (n == 3 && parse_for(w[2], &for_ms, j) < 0)
            return;
        engines(w[1], for_ms, j);
        return;
    }
    ctl_fail(j, GPUFL_EINVAL,
             "unknown or malformed request; requests: status | dump [TEXT] | "
             "trace on|off [for=DURATION] | engines sass|pcsamp|cupti|off "
             "[for=DURATION]");
}

uint64_t ctl_cmd_tick(uint64_t now)
{
    uint64_t next = UINT64_MAX;
    if (T.trace_until && now >= T.trace_until) {
        char why[SRC_REASON_LEN];
        int back = T.trace_back, cur = cupti_trace_state();
        T.trace_until = 0;
        if (cur >= 0 && cur != back) {
            if (cupti_trace_set(back, why, sizeof why) == 0)
                gpufl_marker(back ? "gpufl: tracing on (its gpufl ctl time "
                                    "ended)"
                                  : "gpufl: tracing off (its gpufl ctl time "
                                    "ended)");
            else
                client_log(GPUFL_LOG_WARN, "ctl: tracing back %s: %s",
                           back ? "on" : "off", why);
        }
    }
    if (T.eng_ops && T.eng_until && now >= T.eng_until)
        engine_off("its gpufl ctl time ended");
    if (T.trace_until)
        next = T.trace_until - now;
    if (T.eng_ops && T.eng_until && T.eng_until - now < next)
        next = T.eng_until - now;
    return next;
}

void ctl_cmd_stop(void)
{
    engine_off("the session ends");
    T.trace_until = 0;
}
