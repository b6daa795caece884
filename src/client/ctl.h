/*
 * ctl.h - libgpufl's control socket (docs/recorder.md#control-socket):
 * `gpufl ctl PID status|dump|trace|engines` on a running program, served
 * by a thread of the library, never by the program's threads.
 *
 * ctl.c owns the socket, the thread and the protocol (one request line
 * in, one JSON line out, the peer's uid checked); ctl_cmd.c runs the
 * commands and keeps their timers (trace ... for=, engines ... for=).
 */
#ifndef GPUFL_CLIENT_CTL_H
#define GPUFL_CLIENT_CTL_H

#include <stdint.h>

#include "common/jw.h"

/* gpufl_init, after the engines: bind @gpufl-ctl.<pid> and start the
 * thread.  A failure is logged and leaves the session without a socket
 * (never an error of gpufl_init). */
void ctl_start(void);
/* gpufl_shutdown, first: stop the thread, end timed changes (live
 * engines stop; tracing stays as it is). */
void ctl_stop(void);
/* A forked child: the parent's socket is not ours to serve. */
void ctl_atfork_child(void);
/* "on", or "off: <why>", for the status. */
const char *ctl_state(void);

/* ---- ctl_cmd.c, for ctl.c ---- */
/* Run one request line (NUL-terminated, printable ASCII) and write the
 * response object into j. */
void ctl_cmd_run(char *line, jw *j);
/* Timers due at now (CLOCK_MONOTONIC ns): run them; returns the ns until
 * the next one, or UINT64_MAX. */
uint64_t ctl_cmd_tick(uint64_t now);
/* End what the commands started (ctl_stop). */
void ctl_cmd_stop(void);
/* A refusal into j (empty): {"ok":false,"error":msg,"code":code}. */
void ctl_fail(jw *j, int code, const char *msg);

#endif
