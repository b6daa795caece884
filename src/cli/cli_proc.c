/*
 * cli_proc.c - start, watch and stop child processes (see cli_proc.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_proc.h"

extern char **environ;

static void sleep_ms(int ms)
{
    struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&t, &t) && errno == EINTR)
        ;
}

/* Only async-signal-safe calls between fork and exec. */
static void child(char *const argv[], const char *log, char *const extra[],
                  pid_t parent)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) /* the parent died before prctl */
        _exit(126);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    if (log) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        int in = open("/dev/null", O_RDONLY);
        if (in >= 0)
            dup2(in, 0);
    }
    for (size_t i = 0; extra && extra[i]; i++)
        putenv(extra[i]);
    execv(argv[0], argv);
    {
        static const char m[] = "gpufl: cannot start a child program\n";
        ssize_t w = write(2, m, sizeof m - 1);
        (void)w;
    }
    _exit(127);
}

int cli_proc_start(cli_procs *ps, const char *name, char *const argv[],
                   const char *log, char *const extra_env[])
{
    pid_t parent = getpid(), pid;
    cli_proc *p;
    int slot = 0;

    while (slot < ps->n && ps->p[slot].used)
        slot++;
    if (slot >= CLI_PROC_MAX) {
        fprintf(stderr, "gpufl: too many child processes\n");
        return -1;
    }
    if (access(argv[0], X_OK) != 0) {
        fprintf(stderr,
                "gpufl: %s: %s is not executable (%s); build it with "
                "'make'\n",
                name, argv[0], strerror(errno));
        return -1;
    }
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "gpufl: %s: fork: %s\n", name, strerror(errno));
        return -1;
    }
    if (pid == 0)
        child(argv, log, extra_env, parent);
    setpgid(pid, pid); /* also here: no race with an early signal */
    p = &ps->p[slot];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->used = 1;
    p->pid = pid;
    if (slot == ps->n)
        ps->n++;
    return slot;
}

void cli_proc_release(cli_procs *ps, int i)
{
    if (i >= 0 && i < ps->n && ps->p[i].pid <= 0)
        ps->p[i].used = 0;
}

int cli_proc_poll(cli_procs *ps)
{
    for (int i = 0; i < ps->n; i++) {
        int st;
        if (ps->p[i].pid > 0 && waitpid(ps->p[i].pid, &st, WNOHANG) > 0) {
            ps->p[i].pid = 0;
            ps->p[i].status = st;
            return i;
        }
    }
    return -1;
}

int cli_proc_wait(cli_procs *ps, int i, int timeout_ms)
{
    cli_proc *p = &ps->p[i];
    for (int t = 0; p->pid > 0; t += 20) {
        int st;
        pid_t r = waitpid(p->pid, &st, WNOHANG);
        if (r > 0 || (r < 0 && errno == ECHILD)) {
            p->pid = 0;
            p->status = r > 0 ? st : 0;
            break;
        }
        if (t >= timeout_ms)
            return -1;
        sleep_ms(20);
    }
    return 0;
}

void cli_proc_stop(cli_procs *ps, int i, int grace_ms)
{
    cli_proc *p = &ps->p[i];
    if (p->pid <= 0)
        return;
    kill(p->pid, SIGTERM);
    if (cli_proc_wait(ps, i, grace_ms) == 0)
        return;
    fprintf(stderr, "gpufl: %s did not stop in %d ms; killing it\n", p->name,
            grace_ms);
    kill(-p->pid, SIGKILL); /* its group: helpers it started too */
    kill(p->pid, SIGKILL);
    cli_proc_wait(ps, i, 5000);
}

void cli_proc_stop_all(cli_procs *ps, int grace_ms)
{
    for (int i = ps->n - 1; i >= 0; i--)
        cli_proc_stop(ps, i, grace_ms);
}

int cli_http_ok(const char *hostport, const char *path, int timeout_ms)
{
    char host[256], req[512], buf[64];
    const char *colon = strrchr(hostport, ':');
    struct addrinfo hints = { 0 }, *ai = NULL;
    struct pollfd pf;
    int fd, ok = 0;
    size_t got = 0;

    if (!colon || (size_t)(colon - hostport) >= sizeof host)
        return 0;
    memcpy(host, hostport, (size_t)(colon - hostport));
    host[colon - hostport] = 0;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, colon + 1, &hints, &ai) || !ai)
        return 0;
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        goto out;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS)
        goto out;
    pf.fd = fd;
    pf.events = POLLOUT;
    if (poll(&pf, 1, timeout_ms) != 1)
        goto out;
    snprintf(req, sizeof req,
             "GET %s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n", path,
             hostport);
    if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req))
        goto out;
    pf.events = POLLIN;
    while (got < 12 && poll(&pf, 1, timeout_ms) == 1) {
        ssize_t r = recv(fd, buf + got, sizeof buf - 1 - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    buf[got] = 0;
    ok =
        got >= 12 && !strncmp(buf, "HTTP/1.", 7) && !strncmp(buf + 9, "200", 3);
out:
    if (fd >= 0)
        close(fd);
    freeaddrinfo(ai);
    return ok;
}

int cli_self_dir(char *out, size_t cap)
{
    ssize_t n = readlink("/proc/self/exe", out, cap - 1);
    char *slash;
    if (n <= 0)
        return -1;
    out[n] = 0;
    slash = strrchr(out, '/');
    if (!slash)
        return -1;
    *slash = 0;
    return 0;
}
