/*
 * ctlc.h - the client side of the control socket (docs/recorder.md#
 * control-socket): find the processes that listen, send one request line,
 * read the one JSON line back.  `gpufl ctl` (src/cli/cli_ctl.c) and the
 * agent's capture requests (src/agent/capture.c) both talk through it.
 */
#ifndef GPUFL_COMMON_CTLC_H
#define GPUFL_COMMON_CTLC_H

#include <stddef.h>

#include "common/ctlproto.h"

/* How long one request may take: a dump waits up to 10 s inside the
 * process. */
#define CTLC_WAIT_S 20

/*
 * The processes with a control socket ("@gpufl-ctl.<pid>" in
 * /proc/net/unix) of this effective uid (every one for root), this
 * process excluded, into pids[0, max).  Returns how many.
 */
size_t ctlc_find_all(long *pids, size_t max);

/*
 * Sends req (one line, no newline, < CTL_REQ_MAX bytes) to pid's socket
 * and waits up to wait_s seconds for the answer.  0: reply[0, cap) (cap >
 * 1; CTL_RESP_MAX + 1 holds any) holds the JSON line, newline included,
 * NUL-terminated.  -1: err[0, ecap) says why (no socket, no reply, not
 * one JSON line).
 */
int ctlc_ask(long pid, const char *req, int wait_s, char *reply, size_t cap,
             char *err, size_t ecap);

#endif
