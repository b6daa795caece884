/*
 * log.h - the daemons' one logger: gpufl-server, gpufl-agent, `gpufl idle
 * watch`, `gpufl memprof` and `gpufl demo` (the client library keeps its
 * own callback logger and never prints; one-shot CLI output to stdout is
 * not logging).
 *
 * A line has a level (error, warn, info, debug), the component that said
 * it ("ship", "db", "push" ...) and a message, optionally with fields.
 * Two formats (--log-format):
 *   - text (the default): "<program>: <message>\n", the very lines the
 *     programs always printed (users and tests match them: "gpufl-agent:
 *     LOST: ..."), so level and component are not shown;
 *   - json: one object a line for journald and Kubernetes collectors,
 *     {"ts":"2026-12-01T10:00:00.123Z","level":"warn","program":
 *     "gpufl-server","component":"db","msg":"...", <fields>}; a message's
 *     leading "warning: " is left out there (the level says it).
 * Lines above --log-level are not written.  info and debug lines share a
 * budget (GLOG_RATE a second, bursts of GLOG_BURST): past it they are
 * dropped and counted, and the next line that goes out is preceded by
 * how many were; errors and warnings are never dropped by it (a loss must
 * always be told).  A call site that repeats itself (a server that stays
 * down) rate-limits its own line with a glog_limit.
 *
 * The logger's settings are the one process-wide state (set once by
 * main() with glog_setup, before threads start); writing is thread-safe,
 * each line one write to stderr.
 */
#ifndef GPUFL_COMMON_LOG_H
#define GPUFL_COMMON_LOG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/opt.h"

enum { GLOG_ERROR = 0, GLOG_WARN, GLOG_INFO, GLOG_DEBUG };
enum { GLOG_TEXT = 0, GLOG_JSON };

/* info and debug lines a second, and the burst allowed above that. */
#define GLOG_RATE 200
#define GLOG_BURST 1000
/* Longest message (bytes); longer ones are cut and end in "...". */
#define GLOG_MSG_MAX 4096

/* The two rows every daemon's option table carries (opt.h): T the
 * config struct, lvl and fmt its int fields. */
#define GLOG_OPT_ROWS(T, lvl, fmt)                                             \
    { .name = "log-level",                                                     \
      .type = OPT_ENUM,                                                        \
      OPT_F_SINT(T, lvl),                                                      \
      .def = "info",                                                           \
      .choices = "error|warn|info|debug",                                      \
      .help = "The least important stderr lines written." },                   \
    {                                                                          \
        .name = "log-format", .type = OPT_ENUM, OPT_F_SINT(T, fmt),            \
        .def = "text", .choices = "text|json",                                 \
        .help = "stderr lines: text (the program's name, then the message) "   \
                "or json (an object a line: ts, level, program, component, "   \
                "msg and fields; for journald and Kubernetes)."                \
    }

/* A field of a json line: a string (s) or, when s is NULL, a number. */
typedef struct glog_field {
    const char *key;
    const char *s;
    int64_t n;
} glog_field;

#define GLOG_STR(k, v) ((glog_field){ (k), (v) ? (v) : "", 0 })
#define GLOG_NUM(k, v) ((glog_field){ (k), NULL, (int64_t)(v) })

/* Program name (borrowed: a literal), level and format.  Before it is
 * called: "gpufl", info, text. */
void glog_setup(const char *program, int level, int format);

/* 1 when a line of this level would be written (to skip costly
 * formatting). */
int glog_on(int level);

/* One line; fields (nf of them, may be NULL) show in json only, so the
 * message must say what matters by itself. */
void glog_fields(int level, const char *component, const glog_field *f,
                 size_t nf, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void glog(int level, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define glog_error(c, ...) glog(GLOG_ERROR, (c), __VA_ARGS__)
#define glog_warn(c, ...) glog(GLOG_WARN, (c), __VA_ARGS__)
#define glog_info(c, ...) glog(GLOG_INFO, (c), __VA_ARGS__)
#define glog_debug(c, ...) glog(GLOG_DEBUG, (c), __VA_ARGS__)

/* A call site's own limit: at most one line every `every_ms`.  Owned by
 * the caller's context (zeroed to start); not locked: one thread, or the
 * caller's lock. */
typedef struct glog_limit {
    uint64_t last_ms; /* monotonic; 0: never */
    uint64_t dropped; /* lines held back since the last one let through */
} glog_limit;

/* 1 when a line may go out now (*dropped then says how many were held
 * back before it, and the count starts again); 0 when it is held back
 * (counted).  now_ms: a monotonic clock in ms, 0 = read it here. */
int glog_limit_pass(glog_limit *l, uint64_t every_ms, uint64_t now_ms,
                    uint64_t *dropped);

/* For tests: where lines go (NULL: stderr). */
void glog_set_stream(FILE *f);

#endif
