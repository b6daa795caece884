/*
 * attach.c - the target side of `gpufl attach PID` (docs/recorder.md#
 * gpufl-attach): a process that was not started with gpufl gets
 * libgpufl_inject.so through a dlopen that gpufl attach makes one of its
 * threads call (ptrace), then a call of gpufl_attach_start(settings).
 *
 * Nothing runs at load time (the library has no constructor: dlopen holds
 * the loader lock, and the thread that called it was stopped anywhere).
 * gpufl_attach_start itself runs on that borrowed thread, so it only copies
 * the settings and starts a thread with every signal blocked; that thread
 * does the real work: gpufl_init (CUPTI subscribed and activity enabled
 * after the program's cuInit, which CUPTI allows), then it waits for the
 * end - `stop` set by gpufl attach, the settings' for_ms, or the session
 * ended otherwise - turns CUDA tracing off through the control socket
 * (`trace off`, as gpufl ctl) and calls gpufl_shutdown, which flushes and
 * writes session_end.  The process goes on.
 *
 * The outcome is published in gpufl_attach_blk, which gpufl attach reads
 * with process_vm_readv: no file, socket or environment variable.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <gpufl/gpufl.h>

#include "common/ctlproto.h"
#include "inject/inject_attach.h"

#define ATTACH_POLL_NS 100000000L /* how often the thread looks at stop */
#define ATTACH_FIELD_MAX 1024     /* one setting's value, NUL included */

int gpufl_attach_start(const char *settings)
    __attribute__((visibility("default")));
extern gpufl_attach_block gpufl_attach_blk
    __attribute__((visibility("default")));

gpufl_attach_block gpufl_attach_blk = { .magic = GPUFL_ATTACH_MAGIC };

/* The settings of the session being started: written by
 * gpufl_attach_start before the thread exists, read by the thread only. */
static struct {
    char log_dir[ATTACH_FIELD_MAX], engines[ATTACH_FIELD_MAX],
        app[ATTACH_FIELD_MAX];
    unsigned long long for_ms;
} cfg;

static void publish(int32_t state)
{
    __atomic_store_n(&gpufl_attach_blk.state, state, __ATOMIC_RELEASE);
}

static int parse(const char *s)
{
    char line[ATTACH_FIELD_MAX + 16];
    memset(&cfg, 0, sizeof cfg);
    while (*s) {
        size_t n = strcspn(s, "\n");
        char *eq, *end;
        if (n >= sizeof line)
            return -1;
        memcpy(line, s, n);
        line[n] = 0;
        s += n + (s[n] == '\n');
        if (!n)
            continue;
        eq = strchr(line, '=');
        if (!eq)
            return -1;
        *eq++ = 0;
        if (!strcmp(line, "log_dir"))
            snprintf(cfg.log_dir, sizeof cfg.log_dir, "%s", eq);
        else if (!strcmp(line, "engines"))
            snprintf(cfg.engines, sizeof cfg.engines, "%s", eq);
        else if (!strcmp(line, "app"))
            snprintf(cfg.app, sizeof cfg.app, "%s", eq);
        else if (!strcmp(line, "for_ms")) {
            errno = 0;
            cfg.for_ms = strtoull(eq, &end, 10);
            if (errno || *end || end == eq)
                return -1;
        } else
            return -1;
    }
    return 0;
}

static unsigned long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (unsigned long long)t.tv_sec * 1000ull +
           (unsigned long long)t.tv_nsec / 1000000ull;
}

/* `trace off` through the session's own control socket, as gpufl ctl
 * would send it: gpufl_shutdown ends the session but leaves CUPTI's
 * activity kinds and launch callbacks as they are (a program's session
 * normally ends with the process), and a process that runs on after the
 * session must not keep paying for tracing nobody reads. */
static void trace_off(void)
{
    struct sockaddr_un a;
    socklen_t al = ctl_addr(&a, (uint32_t)getpid());
    struct timeval tv = { CTL_IO_MS / 1000, 0 };
    static const char req[] = "trace off\n";
    char reply[512];
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    /* the answer is read to its end so that the switch is done before
     * the session ends; its content does not matter (a session without
     * the cupti engine refuses, which is fine) */
    if (!connect(fd, (struct sockaddr *)&a, al) &&
        write(fd, req, sizeof req - 1) == (ssize_t)(sizeof req - 1))
        while (read(fd, reply, sizeof reply) > 0)
            ;
    close(fd);
}

static void *attach_main(void *arg)
{
    gpufl_attach_block *b = &gpufl_attach_blk;
    unsigned long long end = cfg.for_ms ? now_ms() + cfg.for_ms : 0;
    gpufl_options o;
    int rc;
    (void)arg;
    /* the target's own GPUFL_* variables apply, as for any gpufl_init; a
     * bad one keeps its default and is said in the session line */
    (void)gpufl_options_init(&o);
    if (cfg.log_dir[0])
        o.log_dir = cfg.log_dir;
    if (cfg.engines[0])
        o.engines = cfg.engines;
    if (cfg.app[0])
        o.app = cfg.app;
    o.ctl = 1; /* gpufl attach and gpufl ctl talk to the session through it */
    rc = gpufl_init(&o);
    if (rc) {
        b->rc = rc;
        snprintf(b->msg, sizeof b->msg, "%s",
                 rc == GPUFL_EALREADY
                     ? "a gpufl session already runs in this process"
                     : gpufl_last_error());
        publish(GPUFL_ATTACH_FAILED);
        return NULL;
    }
    snprintf(b->sid, sizeof b->sid, "%s", gpufl_session_id());
    snprintf(b->prefix, sizeof b->prefix, "%s", gpufl_log_prefix());
    publish(GPUFL_ATTACH_RUNNING);
    while (!__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE) && gpufl_active() &&
           (!end || now_ms() < end)) {
        struct timespec t = { 0, ATTACH_POLL_NS };
        nanosleep(&t, NULL);
    }
    if (gpufl_active())
        trace_off();
    gpufl_shutdown();
    publish(GPUFL_ATTACH_ENDED);
    return NULL;
}

int gpufl_attach_start(const char *settings)
{
    gpufl_attach_block *b = &gpufl_attach_blk;
    int32_t st = __atomic_load_n(&b->state, __ATOMIC_ACQUIRE);
    sigset_t all, old;
    pthread_attr_t a;
    pthread_t t;
    int rc;
    if (st == GPUFL_ATTACH_STARTING || st == GPUFL_ATTACH_RUNNING)
        return GPUFL_ATTACH_E_BUSY;
    if (!settings || parse(settings))
        return GPUFL_ATTACH_E_SETTINGS;
    b->stop = 0;
    b->rc = 0;
    b->sid[0] = b->prefix[0] = b->msg[0] = 0;
    b->gen++;
    publish(GPUFL_ATTACH_STARTING);
    /* the program's signals go to its own threads, never to ours */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&t, &a, attach_main, NULL);
    pthread_attr_destroy(&a);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        b->rc = rc;
        snprintf(b->msg, sizeof b->msg, "pthread_create: %s", strerror(rc));
        publish(GPUFL_ATTACH_FAILED);
        return GPUFL_ATTACH_E_THREAD;
    }
    return 0;
}
