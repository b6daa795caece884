/*
 * capture.h - the agent's capture requests (capture.c): a thread that
 * polls gpufl-server for this host's capture requests and forwards them
 * to the local gpufl processes' control sockets (--captures).
 */
#ifndef GPUFL_AGENT_CAPTURE_H
#define GPUFL_AGENT_CAPTURE_H

#include "agent/opt.h"

#include <stddef.h>

typedef struct agent_capture agent_capture;

/* Starts the thread (*out; cfg borrowed for its life; it ends once *stop
 * is set).  GPUFL_OK, GPUFL_EINVAL (said on the log: no usable host name
 * or --url, a CA file that cannot be read) or GPUFL_ENOMEM. */
int agent_capture_start(const agent_cfg *cfg, volatile int *stop,
                        agent_capture **out);
/* Joins the thread (after *stop was set: up to one control request, 20 s
 * at most) and frees it.  NULL is fine. */
void agent_capture_stop(agent_capture *c);
/* The host name polled for: --captures-host, else gethostname(); -1 when
 * it is not 1 to 255 letters, digits, '.', '-' or '_'. */
int agent_capture_host(const agent_cfg *cfg, char *out, size_t cap);
/* The poll URL from --url (the part before "/api/v1/"); -1 without one. */
int agent_capture_url(const agent_cfg *cfg, const char *host, char *out,
                      size_t cap);

#endif
