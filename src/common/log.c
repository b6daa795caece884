/*
 * log.c - the daemons' logger (see log.h).
 */
#include "log.h"

#include "clock.h"
#include "jw.h"

#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

/* The one process-wide state: settings written by glog_setup before
 * threads start, the info/debug budget under its lock. */
static struct {
    const char *program;
    int level, format;
    FILE *out;
    pthread_mutex_t lock;
    double tokens;    /* info/debug lines that may go out now */
    uint64_t fill_ns; /* when tokens was last topped up */
    uint64_t dropped; /* info/debug lines dropped since the last told */
} G = { "gpufl",    GLOG_INFO, GLOG_TEXT, NULL, PTHREAD_MUTEX_INITIALIZER,
        GLOG_BURST, 0,         0 };

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void glog_setup(const char *program, int level, int format)
{
    G.program = program;
    G.level = level < GLOG_ERROR   ? GLOG_ERROR
              : level > GLOG_DEBUG ? GLOG_DEBUG
                                   : level;
    G.format = format == GLOG_JSON ? GLOG_JSON : GLOG_TEXT;
}

void glog_set_stream(FILE *f)
{
    G.out = f;
}

int glog_on(int level)
{
    return level <= G.level;
}

/* An info/debug line takes a token; the count of lines dropped before it
 * in *told (0: none). */
static int budget_take(uint64_t *told)
{
    uint64_t now = clock_mono_ns();
    int ok;

    pthread_mutex_lock(&G.lock);
    if (G.fill_ns) {
        G.tokens += (double)(now - G.fill_ns) * GLOG_RATE / 1e9;
        if (G.tokens > GLOG_BURST)
            G.tokens = GLOG_BURST;
    }
    G.fill_ns = now;
    ok = G.tokens >= 1;
    if (ok) {
        G.tokens -= 1;
        *told = G.dropped;
        G.dropped = 0;
    } else {
        G.dropped++;
    }
    pthread_mutex_unlock(&G.lock);
    return ok;
}

static void emit(const char *line, size_t n)
{
    /* one write: lines of threads never interleave */
    fwrite(line, 1, n, G.out ? G.out : stderr);
    fflush(G.out ? G.out : stderr);
}

static void json_line(int level, const char *component, const glog_field *f,
                      size_t nf, const char *msg, uint64_t dropped)
{
    /* jw writes at most 6 bytes for one of the message (\u00XX) */
    char line[GLOG_MSG_MAX * 6 + 1024], ts[40];
    uint64_t ns = clock_real_ns();
    time_t t = (time_t)(ns / 1000000000u);
    struct tm tm;
    jw w;

    gmtime_r(&t, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + strlen(ts), sizeof ts - strlen(ts), ".%03uZ",
             (unsigned)(ns / 1000000u % 1000u));
    if (level == GLOG_WARN && !strncmp(msg, "warning: ", 9))
        msg += 9;
    jw_init(&w, line, sizeof line - 1);
    jw_obj_begin(&w);
    jw_kv_str(&w, "ts", ts);
    jw_kv_str(&w, "level", level_names[level]);
    jw_kv_str(&w, "program", G.program);
    jw_kv_str(&w, "component", component ? component : "");
    jw_kv_str(&w, "msg", msg);
    for (size_t i = 0; i < nf; i++) {
        if (f[i].s)
            jw_kv_str(&w, f[i].key, f[i].s);
        else
            jw_kv_i64(&w, f[i].key, f[i].n);
    }
    if (dropped)
        jw_kv_u64(&w, "dropped_before", dropped);
    jw_obj_end(&w);
    if (w.err && nf) {
        /* the message alone fits: the fields are what is cut */
        json_line(level, component, NULL, 0, msg, dropped);
        return;
    }
    if (w.err)
        return;
    line[w.len++] = '\n';
    emit(line, w.len);
}

__attribute__((format(printf, 5, 0))) static void
vwrite(int level, const char *component, const glog_field *f, size_t nf,
       const char *fmt, va_list ap)
{
    char msg[GLOG_MSG_MAX], line[GLOG_MSG_MAX + 128];
    uint64_t dropped = 0;
    int n;

    if (level > G.level)
        return;
    if (level >= GLOG_INFO && !budget_take(&dropped))
        return;
    n = vsnprintf(msg, sizeof msg, fmt, ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof msg)
        memcpy(msg + sizeof msg - 4, "...", 4);
    if (G.format == GLOG_JSON) {
        json_line(level, component, f, nf, msg, dropped);
        return;
    }
    if (dropped) {
        n = snprintf(line, sizeof line,
                     "%s: %llu log lines dropped (more than %d a second)\n",
                     G.program, (unsigned long long)dropped, GLOG_RATE);
        emit(line, (size_t)n);
    }
    n = snprintf(line, sizeof line, "%s: %s\n", G.program, msg);
    emit(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

void glog_fields(int level, const char *component, const glog_field *f,
                 size_t nf, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vwrite(level, component, f, nf, fmt, ap);
    va_end(ap);
}

void glog(int level, const char *component, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vwrite(level, component, NULL, 0, fmt, ap);
    va_end(ap);
}

int glog_limit_pass(glog_limit *l, uint64_t every_ms, uint64_t now_ms,
                    uint64_t *dropped)
{
    if (!now_ms)
        now_ms = clock_mono_ns() / 1000000u;
    if (l->last_ms && now_ms - l->last_ms < every_ms) {
        l->dropped++;
        return 0;
    }
    l->last_ms = now_ms ? now_ms : 1;
    if (dropped)
        *dropped = l->dropped;
    l->dropped = 0;
    return 1;
}
