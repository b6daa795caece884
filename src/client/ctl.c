/*
 * ctl.c - the control socket (ctl.h): an abstract Unix socket named
 * "gpufl-ctl.<pid>", a thread of the library that accepts one connection
 * at a time, and the protocol's framing: one request line of at most
 * CTL_REQ_MAX bytes in, one JSON line out, then the connection closes.
 *
 * Refusals, each answered with a reason before closing: a peer whose uid
 * is neither ours nor root's (SO_PEERCRED; the abstract namespace has no
 * file permissions), a request that is too long, not one line, or not
 * printable ASCII.  A peer that stops sending is dropped after CTL_IO_MS.
 */
#include "ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client_int.h"
#include "common/clock.h"
#include "common/ctlproto.h"

static struct {
    int fd, wake; /* listening socket, eventfd that stops the thread */
    pthread_t thread;
    int started;
    char state[160];
    char resp[CTL_RESP_MAX];
} K = { -1, -1 };

const char *ctl_state(void)
{
    return K.state[0] ? K.state : "off: not started";
}

static void reply(int c, jw *j)
{
    size_t off = 0;
    if (j->err) { /* cannot happen with the caps above; say so anyway */
        jw_reset(j);
        jw_obj_begin(j);
        jw_key(j, "ok");
        jw_bool(j, 0);
        jw_kv_str(j, "error", "response too long");
        jw_obj_end(j);
    }
    jw_put(j, "\n", 1);
    while (off < j->len) {
        ssize_t n = send(c, j->buf + off, j->len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        off += (size_t)n;
    }
}

static void refuse(int c, jw *j, int code, const char *msg)
{
    jw_reset(j);
    ctl_fail(j, code, msg);
    reply(c, j);
}

/* One request line into buf: its length, or -1 with why said to the
 * peer. */
static int read_line(int c, char *buf, size_t cap, jw *j)
{
    size_t len = 0;
    for (;;) {
        ssize_t n = recv(c, buf + len, cap - 1 - len, 0);
        char *nl;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            refuse(c, j, GPUFL_EPROTO,
                   n == 0 ? "the request ended without a newline"
                          : "no request line within 5 s");
            return -1;
        }
        len += (size_t)n;
        buf[len] = 0;
        nl = memchr(buf, '\n', len);
        if (nl) {
            if ((size_t)(nl - buf) + 1 != len) {
                refuse(c, j, GPUFL_EPROTO,
                       "one request per connection: bytes after the newline");
                return -1;
            }
            *nl = 0;
            len = (size_t)(nl - buf);
            break;
        }
        if (len == cap - 1) {
            refuse(c, j, GPUFL_ETOOBIG,
                   "request longer than 1024 bytes (one line, at most 1023 "
                   "bytes and its newline)");
            return -1;
        }
    }
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] > 0x7e) {
            refuse(c, j, GPUFL_EPARSE,
                   "a request is printable ASCII (words separated by "
                   "spaces)");
            return -1;
        }
    return (int)len;
}

static void serve(int c)
{
    struct ucred cr;
    socklen_t cl = sizeof cr;
    struct timeval tv = { CTL_IO_MS / 1000, (CTL_IO_MS % 1000) * 1000 };
    char line[CTL_REQ_MAX + 1];
    jw j;
    jw_init(&j, K.resp, sizeof K.resp - 1);
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0 ||
        (cr.uid != geteuid() && cr.uid != 0)) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "permission denied: uid %ld is not the owner of process %ld "
                 "(uid %ld) or root",
                 (long)(cl == sizeof cr ? (long)cr.uid : -1L), (long)getpid(),
                 (long)geteuid());
        client_log(GPUFL_LOG_WARN, "ctl: %s", msg);
        refuse(c, &j, GPUFL_EPERM, msg);
        return;
    }
    if (read_line(c, line, sizeof line, &j) < 0)
        return;
    jw_reset(&j);
    ctl_cmd_run(line, &j);
    reply(c, &j);
}

/* Close after the reply so that the peer reads it: what it sent beyond
 * the request is read and dropped first (bounded), since closing with
 * unread input would reset the connection and lose the reply. */
static void drain_close(int c)
{
    struct timeval tv = { 0, 100000 };
    char sink[4096];
    size_t total = 0;
    shutdown(c, SHUT_WR);
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    while (total < 64 * 1024) {
        ssize_t n = recv(c, sink, sizeof sink, 0);
        if (n <= 0)
            break;
        total += (size_t)n;
    }
    close(c);
}

static void *ctl_main(void *arg)
{
    (void)arg;
    for (;;) {
        struct pollfd p[2] = { { K.fd, POLLIN, 0 }, { K.wake, POLLIN, 0 } };
        uint64_t next = ctl_cmd_tick(clock_mono_ns());
        int ms = next == UINT64_MAX ? -1 : (int)(next / 1000000ull + 1);
        int n = poll(p, 2, ms);
        if (n < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        if (n > 0 && (p[0].revents & POLLIN)) {
            int c = accept4(K.fd, NULL, NULL, SOCK_CLOEXEC);
            if (c >= 0) {
                serve(c);
                drain_close(c);
            }
        }
    }
    return NULL;
}

void ctl_start(void)
{
    struct sockaddr_un a;
    socklen_t len = ctl_addr(&a, (uint32_t)getpid());
    K.state[0] = 0;
    if (!g_client.cfg.ctl) {
        snprintf(K.state, sizeof K.state, "off: GPUFL_CTL=false");
        return;
    }
    K.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    K.wake = eventfd(0, EFD_CLOEXEC);
    if (K.fd < 0 || K.wake < 0 || bind(K.fd, (struct sockaddr *)&a, len) ||
        listen(K.fd, 8)) {
        snprintf(K.state, sizeof K.state, "off: @%.*s: %s",
                 (int)(len - offsetof(struct sockaddr_un, sun_path) - 1),
                 a.sun_path + 1, strerror(errno));
        goto fail;
    }
    if (pthread_create(&K.thread, NULL, ctl_main, NULL) != 0) {
        snprintf(K.state, sizeof K.state, "off: cannot start its thread");
        goto fail;
    }
    K.started = 1;
    snprintf(K.state, sizeof K.state, "on");
    return;
fail:
    client_log(GPUFL_LOG_WARN,
               "control socket %s; gpufl ctl cannot reach "
               "this process",
               K.state);
    if (K.fd >= 0)
        close(K.fd);
    if (K.wake >= 0)
        close(K.wake);
    K.fd = K.wake = -1;
}

void ctl_stop(void)
{
    if (K.started) {
        uint64_t one = 1;
        if (write(K.wake, &one, sizeof one) != (ssize_t)sizeof one)
            client_log(GPUFL_LOG_WARN, "ctl: cannot wake its thread");
        pthread_join(K.thread, NULL);
        K.started = 0;
    }
    ctl_cmd_stop();
    if (K.fd >= 0)
        close(K.fd);
    if (K.wake >= 0)
        close(K.wake);
    K.fd = K.wake = -1;
    snprintf(K.state, sizeof K.state, "off: the session ended");
}

void ctl_atfork_child(void)
{
    /* the thread is the parent's; the name too (it has the parent's pid) */
    if (K.fd >= 0)
        close(K.fd);
    if (K.wake >= 0)
        close(K.wake);
    K.fd = K.wake = -1;
    K.started = 0;
}
