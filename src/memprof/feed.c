/*
 * feed.c - the preload event source: start CMD with the interposer
 * (libgpufl_memprof_preload.so) in LD_PRELOAD and a pipe in
 * GPUFL_MEMPROF_FD, read fixed-size struct mp_event records (and the maps
 * text that follows an MP_EV_MAPS record) until every writer is gone.
 * Children of CMD inherit both and are profiled too.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session.h"
#include "common/log.h"

#define MP_FEED_MAPS_CAP (8u << 20)

static int read_full(int fd, void *p, size_t n)
{
    char *c = p;
    while (n) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

int mp_feed_run(mp_session *s, int *child_status)
{
    const memprof_opts *o = s->o;
    if (!o->preload_so || access(o->preload_so, R_OK)) {
        glog_error("preload", "interposer %s not found",
                   o->preload_so ? o->preload_so : "(none)");
        return 1;
    }
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC)) {
        perror("gpufl memprof: pipe");
        return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("gpufl memprof: fork");
        return 1;
    }
    if (pid == 0) {
        char fdv[16], pre[8192];
        int wfd = dup(pfd[1]); /* without O_CLOEXEC: survives exec */
        snprintf(fdv, sizeof fdv, "%d", wfd);
        const char *old = getenv("LD_PRELOAD");
        snprintf(pre, sizeof pre, "%s%s%s", o->preload_so,
                 old && *old ? ":" : "", old && *old ? old : "");
        setenv("GPUFL_MEMPROF_FD", fdv, 1);
        setenv("LD_PRELOAD", pre, 1);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        execvp(o->cmd[0], o->cmd);
        glog_error("preload", "cannot run %s: %s", o->cmd[0], strerror(errno));
        _exit(127);
    }
    close(pfd[1]);
    int fd = pfd[0], forwarded = 0;
    struct mp_event e;
    char *maps = NULL;
    for (;;) {
        if (mp_stop && !forwarded) {
            kill(pid, SIGTERM);
            forwarded = 1;
        }
        if (mp_session_tick(s) && !forwarded) {
            kill(pid, SIGTERM); /* --duration over */
            forwarded = 1;
        }
        struct pollfd p = { fd, POLLIN, 0 };
        int r = poll(&p, 1, 100);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        if (read_full(fd, &e, sizeof e))
            break; /* EOF: every writer is gone */
        if (e.kind == MP_EV_MAPS) {
            if (e.arg[0] > MP_FEED_MAPS_CAP)
                break;
            free(maps);
            maps = malloc(e.arg[0] ? e.arg[0] : 1);
            if (!maps || read_full(fd, maps, e.arg[0]))
                break;
            mp_agg_maps(&s->agg, e.pid, maps, e.arg[0]);
            continue;
        }
        if (e.kind == MP_EV_PYNAME) {
            char name[512];
            if (e.arg[3] >= sizeof name || read_full(fd, name, e.arg[3]))
                break;
            name[e.arg[3]] = 0;
            mp_agg_pyname(&s->agg, e.pid, (unsigned)e.arg[2], e.arg[0],
                          e.arg[1], name);
            continue;
        }
        mp_agg_event(&s->agg, &e);
    }
    free(maps);
    close(fd);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    *child_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return 0;
}
