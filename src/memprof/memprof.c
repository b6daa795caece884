/*
 * memprof.c - memprof_run(): one profiling session from start to the
 * written profile.  The event source is eBPF (ebpf.c) or the preload
 * pipe (feed.c); the periodic work and the outputs are here.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "session.h"
#include "common/log.h"

volatile sig_atomic_t mp_stop;

static void on_signal(int sig)
{
    (void)sig;
    mp_stop = 1;
}

uint64_t mp_now_mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

uint64_t mp_now_rt(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static void push_all(mp_session *s)
{
    const memprof_opts *o = s->o;
    uint64_t now = mp_now_rt();
    if (o->pyroscope)
        mp_pyroscope_push(s, s->last_push_rt, now);
    if (!o->server) {
        mp_agg_mark(&s->agg);
        s->last_push_rt = now;
        return;
    }
    char url[2048];
    size_t ul = strlen(o->server);
    while (ul && o->server[ul - 1] == '/')
        ul--;
    snprintf(url, sizeof url, "%.*s/api/v1/memprof", (int)ul, o->server);
    int failed = 0;
    for (size_t i = 0; i < s->agg.nprocs; i++) {
        const mp_proc *p = &s->agg.procs[i];
        int dup = 0;
        for (size_t k = i + 1; k < s->agg.nprocs; k++)
            dup |= s->agg.procs[k].pid == p->pid;
        if (dup)
            continue; /* one body per pid: the latest process */
        size_t n = 0;
        char *body =
            mp_out_server_json(&s->agg, p->pid, s->host, s->last_push_rt, now,
                               s->source, o->simulated, &n);
        if (!body)
            continue;
        long st = 0;
        char why[512];
        if (mp_push(url, o->token, o->ca_file, body, n, &st, why, sizeof why)) {
            glog_warn("push", "push of pid %u to %s failed (%s)", p->pid, url,
                      why);
            failed = 1;
            s->push_errors++;
        } else {
            s->pushes++;
        }
        free(body);
    }
    /* a failed interval is not retried: the next one carries its own
     * deltas, the in-use snapshot is complete every time */
    (void)failed;
    mp_agg_mark(&s->agg);
    s->last_push_rt = now;
}

int mp_session_tick(mp_session *s)
{
    const memprof_opts *o = s->o;
    uint64_t now = mp_now_mono();
    if (o->interval > 0 &&
        now - s->last_tick_mono >= (uint64_t)(o->interval * 1e9)) {
        s->last_tick_mono = now;
        if (o->server || o->pyroscope)
            push_all(s);
        if (o->live) {
            fputs("\033[H\033[2J", stdout);
            mp_out_top(&s->agg, o->view, o->top_n, stdout);
            fflush(stdout);
        }
    }
    return o->duration > 0 &&
           now - s->start_mono >= (uint64_t)(o->duration * 1e9);
}

/* --outdir: memprof.{alloc,inuse,fail}.folded, memprof.pb.gz, top.txt */
static int write_all_views(mp_session *s, const char *dir)
{
    static const char *vn[] = { "alloc", "inuse", "fail" };
    char path[4096];
    int rc = 0;
    for (int v = 0; v < 3; v++) {
        snprintf(path, sizeof path, "%s/memprof.%s.folded", dir, vn[v]);
        FILE *f = fopen(path, "w");
        if (!f || mp_out_folded(&s->agg, v, 0, f))
            rc = 1;
        if (f && fclose(f))
            rc = 1;
    }
    snprintf(path, sizeof path, "%s/memprof.top.txt", dir);
    FILE *f = fopen(path, "w");
    if (!f || mp_out_top(&s->agg, s->o->view, s->o->top_n, f))
        rc = 1;
    if (f && fclose(f))
        rc = 1;
    snprintf(path, sizeof path, "%s/memprof.pb.gz", dir);
    if (mp_out_pprof(&s->agg, path, s->start_rt, mp_now_rt()))
        rc = 1;
    if (rc)
        glog_error("out", "cannot write into %s", dir);
    return rc;
}

int mp_session_finish(mp_session *s)
{
    const memprof_opts *o = s->o;
    int rc = 0;
    if (o->server || o->pyroscope)
        push_all(s);
    if (o->live)
        return s->push_errors ? 1 : 0;
    if (o->outdir) {
        rc = write_all_views(s, o->outdir);
    } else if (o->format == MEMPROF_FMT_PPROF) {
        if (mp_out_pprof(&s->agg, o->output, s->start_rt, mp_now_rt())) {
            glog_error("out", "cannot write %s", o->output);
            rc = 1;
        }
    } else {
        FILE *f = o->output ? fopen(o->output, "w") : stdout;
        if (!f) {
            glog_error("out", "cannot write %s", o->output);
            return 1;
        }
        int r = o->format == MEMPROF_FMT_TOP
                    ? mp_out_top(&s->agg, o->view, o->top_n, f)
                    : mp_out_folded(&s->agg, o->view, o->counts, f);
        if (f != stdout) {
            if (fclose(f))
                r = -1;
        } else {
            fflush(f);
        }
        if (r) {
            glog_error("out", "writing the profile failed");
            rc = 1;
        }
    }
    if (o->verbose)
        glog_info(
            "out",
            "%llu events, %llu calls, %zu stacks, %llu "
            "unmatched frees, %llu lost, %llu pushes",
            (unsigned long long)s->agg.events, (unsigned long long)s->agg.calls,
            s->agg.nstacks, (unsigned long long)s->agg.unmatched_frees,
            (unsigned long long)s->agg.lost, (unsigned long long)s->pushes);
    return rc || s->push_errors ? 1 : 0;
}

int memprof_run(const memprof_opts *o)
{
    mp_session s;
    memset(&s, 0, sizeof s);
    s.o = o;
    mp_agg_init(&s.agg, o->api_frame);
    s.start_rt = s.last_push_rt = mp_now_rt();
    s.start_mono = s.last_tick_mono = mp_now_mono();
    if (o->host)
        snprintf(s.host, sizeof s.host, "%s", o->host);
    else if (gethostname(s.host, sizeof s.host - 1))
        snprintf(s.host, sizeof s.host, "localhost");

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: poll returns EINTR */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    int rc, status = 0;
    if (o->mode == MEMPROF_PRELOAD) {
        s.source = "preload";
        rc = mp_feed_run(&s, &status);
    } else {
        s.source = "ebpf";
        rc = mp_ebpf_run(&s);
    }
    if (!rc)
        rc = mp_session_finish(&s);
    mp_agg_release(&s.agg);
    if (!rc && o->mode == MEMPROF_PRELOAD)
        return status;
    return rc;
}
