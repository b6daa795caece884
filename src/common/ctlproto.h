/*
 * ctlproto.h - the control socket's address and limits, shared by libgpufl
 * (src/client/ctl.c, the server side) and `gpufl ctl` (src/cli/cli_ctl.c).
 * The protocol itself is in docs/recorder.md#control-socket.
 *
 * The socket is abstract (Linux): the name "gpufl-ctl.<pid>" after a NUL
 * byte, no file; /proc/net/unix lists it as "@gpufl-ctl.<pid>".
 */
#ifndef GPUFL_COMMON_CTLPROTO_H
#define GPUFL_COMMON_CTLPROTO_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#define CTL_NAME_PREFIX "gpufl-ctl."
#define CTL_PROTO 1
/* A request is one line of at most this many bytes, newline included. */
#define CTL_REQ_MAX 1024
/* A response is one line of JSON of at most this many bytes. */
#define CTL_RESP_MAX 65536
/* Each side gives up on a peer that stops reading or writing. */
#define CTL_IO_MS 5000

/* The address of pid's socket into *a; returns its length. */
static inline socklen_t ctl_addr(struct sockaddr_un *a, uint32_t pid)
{
    char num[12];
    size_t n = 0, k = sizeof CTL_NAME_PREFIX - 1;
    uint32_t v = pid;
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    do {
        num[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    memcpy(a->sun_path + 1, CTL_NAME_PREFIX, k);
    while (n)
        a->sun_path[1 + k++] = num[--n];
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + k);
}

#endif
