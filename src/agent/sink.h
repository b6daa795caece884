/*
 * sink.h - where batches of event lines go: one small interface, one file
 * per backend (sink_http.c, sink_kafka.c).
 *
 * The pipeline hands a sink one batch at a time and waits for the answer,
 * so "acknowledged" has one meaning for every backend: the lines are
 * durably accepted (HTTP 200 after the server's commit; Kafka delivery
 * reports with acks=all).  Only then does the cursor move.
 */
#ifndef GPUFL_AGENT_SINK_H
#define GPUFL_AGENT_SINK_H

#include "agent/opt.h"

#include <stddef.h>
#include <stdint.h>

/* Streams, in the order of their names in agent_stream_names. */
#define AGENT_NSTREAMS 3
extern const char *const agent_stream_names[AGENT_NSTREAMS];

/* A batch: n lines of one file, each ending in '\n', back to back in
 * buf[0, len); end[i] is the offset in buf just past line i's '\n'.
 * Everything is borrowed for the duration of the call. */
typedef struct agent_batch {
    int stream;      /* index into agent_stream_names */
    const char *sid; /* session id (Kafka key); may be "" */
    const char *buf;
    size_t len;
    uint32_t n;
    const uint32_t *end;
} agent_batch;

typedef enum agent_send_rc {
    AGENT_SEND_OK = 0,     /* every line acknowledged or rejected */
    AGENT_SEND_RETRY = 1,  /* nothing known: retry the whole batch */
    AGENT_SEND_CONFIG = 2, /* auth or configuration: retry after long wait */
} agent_send_rc;

/* Called for each line the receiver refused for good (line is 0-based in
 * the batch); reason is borrowed for the call. */
typedef void (*agent_reject_fn)(void *ctx, uint32_t line, const char *reason,
                                size_t reason_len);

typedef struct agent_sink agent_sink;

typedef struct agent_sink_ops {
    const char *name;
    agent_send_rc (*send)(agent_sink *s, const agent_batch *b,
                          agent_reject_fn reject, void *ctx, char *why,
                          size_t why_cap);
    void (*free)(agent_sink *s);
} agent_sink_ops;

struct agent_sink {
    const agent_sink_ops *ops;
};

/* Backends.  Each returns NULL with a reason in err (never a secret).
 * stop (borrowed, may be NULL) is the process's stop flag: a send in
 * progress gives up when it is set, so SIGTERM is not held up by a hung
 * receiver (the batch is then simply not acknowledged). */
agent_sink *agent_sink_http_new(const agent_cfg *cfg, volatile int *stop,
                                char *err, size_t errcap);
agent_sink *agent_sink_kafka_new(const agent_cfg *cfg, volatile int *stop,
                                 char *err, size_t errcap);

/*
 * Sends b.  AGENT_SEND_OK: every line is either acknowledged or was passed
 * to reject(); otherwise why[0, why_cap) says what happened (no secrets).
 */
agent_send_rc agent_sink_send(agent_sink *s, const agent_batch *b,
                              agent_reject_fn reject, void *ctx, char *why,
                              size_t why_cap);
void agent_sink_free(agent_sink *s);

#endif
