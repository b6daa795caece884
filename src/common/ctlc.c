/*
 * ctlc.c - the control socket's client: one connection per request, the
 * request line out, the JSON line back (ctlc.h).
 */
#include "common/ctlc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

int ctlc_ask(long pid, const char *req, int wait_s, char *reply, size_t cap,
             char *err, size_t ecap)
{
    struct sockaddr_un a;
    socklen_t len = ctl_addr(&a, (uint32_t)pid);
    struct timeval tv = { wait_s, 0 };
    size_t got = 0, rl = strlen(req);
    char line[CTL_REQ_MAX];
    int fd;

    if (cap < 2 || rl + 1 > CTL_REQ_MAX) {
        snprintf(err, ecap, "the request is too long");
        return -1;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, ecap, "cannot make a socket: %s", strerror(errno));
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&a, len) != 0) {
        snprintf(err, ecap,
                 "no control socket for pid %ld (not a gpufl program, "
                 "GPUFL_CTL=false, or its session ended): %s",
                 pid, strerror(errno));
        close(fd);
        return -1;
    }
    /* the line in one send: a peer that answers the first bytes it reads
     * and closes must not turn the newline's own send into an EPIPE */
    memcpy(line, req, rl);
    line[rl] = '\n';
    if (send(fd, line, rl + 1, MSG_NOSIGNAL) != (ssize_t)(rl + 1)) {
        close(fd);
        snprintf(err, ecap, "the request could not be sent");
        return -1;
    }
    for (;;) {
        ssize_t n = recv(fd, reply + got, cap - 1 - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
        if (memchr(reply, '\n', got) || got == cap - 1)
            break;
    }
    close(fd);
    reply[got] = 0;
    if (!got || reply[0] != '{' || !strchr(reply, '\n')) {
        snprintf(err, ecap, "%s",
                 got ? "the reply was not one JSON line"
                     : "no reply (timed out, or the process closed the "
                       "connection)");
        return -1;
    }
    strchr(reply, '\n')[1] = 0;
    return 0;
}

size_t ctlc_find_all(long *pids, size_t max)
{
    FILE *f = fopen("/proc/net/unix", "re");
    char line[512];
    size_t n = 0;
    uid_t me = geteuid();
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f) && n < max) {
        char *at = strstr(line, " @" CTL_NAME_PREFIX);
        char path[64], st[256];
        long pid;
        int dup = 0;
        FILE *sf;
        unsigned long uid = (unsigned long)-1;
        if (!at)
            continue;
        pid = strtol(at + 2 + sizeof CTL_NAME_PREFIX - 1, NULL, 10);
        if (pid <= 0 || pid == (long)getpid())
            continue;
        for (size_t i = 0; i < n; i++)
            dup |= pids[i] == pid;
        if (dup)
            continue;
        snprintf(path, sizeof path, "/proc/%ld/status", pid);
        sf = fopen(path, "re");
        if (!sf)
            continue;
        while (fgets(st, sizeof st, sf))
            if (!strncmp(st, "Uid:", 4)) {
                uid = strtoul(st + 4, NULL, 10);
                break;
            }
        fclose(sf);
        if (me == 0 || uid == (unsigned long)me)
            pids[n++] = pid;
    }
    fclose(f);
    return n;
}
