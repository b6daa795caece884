/*
 * session.h - one profiling run, shared by the two event sources (ebpf.c,
 * feed.c): the aggregation, the clock, the periodic work (server push,
 * live top) and the final outputs.
 */
#ifndef GPUFL_MEMPROF_SESSION_H
#define GPUFL_MEMPROF_SESSION_H

#include <signal.h>

#include "memprof_int.h"

typedef struct mp_session {
    const memprof_opts *o;
    mp_agg agg;
    uint64_t start_rt, last_push_rt; /* CLOCK_REALTIME ns */
    uint64_t start_mono, last_tick_mono;
    const char *source; /* "ebpf" | "preload" */
    char host[256];
    uint64_t pushes, push_errors;
} mp_session;

extern volatile sig_atomic_t mp_stop; /* set by SIGINT/SIGTERM */

uint64_t mp_now_mono(void);
uint64_t mp_now_rt(void);
/* Periodic work when an interval has passed; returns 1 when the duration
 * is over. */
int mp_session_tick(mp_session *s);
/* Final push and outputs; returns 0 or 1. */
int mp_session_finish(mp_session *s);

int mp_ebpf_run(mp_session *s);
int mp_ebpf_check(void);
int mp_feed_run(mp_session *s, int *child_status);
/* Folded views of every process to Pyroscope's /ingest (pyroscope.c). */
void mp_pyroscope_push(mp_session *s, uint64_t from_ns, uint64_t until_ns);
/* POSTs a profile (JSON, gzip'd above 64 KiB) to url with a bearer token
 * (none when NULL), https verified with ca_file (NULL: the system's CAs).
 * 0 when the server said 2xx; else -1 with the HTTP status in
 * *http_status (0: no answer) and what went wrong in why[whylen]. */
int mp_push(const char *url, const char *token, const char *ca_file,
            const char *body, size_t n, long *http_status, char *why,
            size_t whylen);

#endif
