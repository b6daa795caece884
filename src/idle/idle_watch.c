/*
 * idle_watch.c - running the detector: the sampling loop shared by
 * `--once` and `watch`, automatic sessions from GPU process cgroups and
 * Slurm jobs, the answers of `--once` (text, JSON, probe), the action
 * hook, and the verdict log.
 *
 * One thread samples and decides; after each round it renders the
 * metrics text and the verdict JSON for the HTTP listener
 * (idle_watch_http.c), so a slow scraper never delays sampling.
 */
#include "idle_watch_int.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gpufl/gpufl.h>

#include "common/clock.h"
#include "common/jw.h"
#include "common/log.h"

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static int ctx_open(ictx *x, const idle_opts *o, char *why, size_t whylen)
{
    int err;
    memset(x, 0, sizeof *x);
    x->o = o;
    x->env = o->env;
    x->http_fd = -1;
    pthread_mutex_init(&x->mu, NULL);
    if (gethostname(x->host, sizeof x->host) != 0)
        snprintf(x->host, sizeof x->host, "unknown");
    x->host[sizeof x->host - 1] = 0;
    err = idle_src_open(&x->src, o->nvml_lib, o->sim, o->sim_gpus, why, whylen);
    if (err)
        return err;
    x->simulated = idle_src_simulated(x->src);
    x->ngpus = idle_src_devices(x->src, x->devs, IDLE_MAX_GPUS);
    /* simulated GPUs are not this node's: no Slurm job holds them */
    if (!x->simulated) {
        err = idle_slurm_new(&x->slurm, o->slurm_scontrol, o->slurm_node, why,
                             whylen);
        if (err)
            return err;
    }
    for (int i = 0; i < x->ngpus; i++) {
        err = idle_gpu_init(&x->gpus[i], &o->cfg, &x->devs[i]);
        if (err) {
            snprintf(why, whylen, "out of memory");
            return err;
        }
    }
    if (idle_cgcache_new(&x->env.cgcache)) {
        snprintf(why, whylen, "out of memory");
        return GPUFL_ENOMEM;
    }
    x->ss = calloc(IDLE_MAX_SESSIONS, sizeof *x->ss);
    x->scratch = malloc(IDLE_OUT_CAP);
    if (!x->ss || !x->scratch ||
        idle_acct_new(&x->acct, &o->cfg, x->simulated)) {
        snprintf(why, whylen, "out of memory");
        return GPUFL_ENOMEM;
    }
    if (x->env.gpufl_logs && *x->env.gpufl_logs) {
        if (idle_kern_new(&x->kern, x->env.gpufl_logs)) {
            snprintf(why, whylen, "out of memory");
            return GPUFL_ENOMEM;
        }
        idle_acct_set_kern(x->acct, x->kern);
    }
    for (int i = 0; i < o->nsessions && i < IDLE_MAX_SESSIONS; i++)
        idle_sess_init(&x->ss[x->nss++], &o->sessions[i], clock_real_ns());
    return 0;
}

static void ctx_close(ictx *x)
{
    idle_watch_http_close(x);
    for (int i = 0; i < x->ngpus; i++)
        idle_gpu_release(&x->gpus[i]);
    idle_src_close(x->src);
    idle_log_close(x->log);
    idle_acct_free(x->acct);
    idle_slurm_free(x->slurm);
    idle_hub_free(x->hub);
    idle_kern_free(x->kern);
    idle_cgcache_free(x->env.cgcache);
    idle_wline_free(x->waste);
    free(x->ss);
    free(x->scratch);
    free(x->metrics);
    free(x->verdicts);
    pthread_mutex_destroy(&x->mu);
}

/* A session per running Slurm job holding GPUs of this node, so the
 * warning -> stop ladder (and --hook-cmd) applies to a job whose GPUs sit
 * unused; gone when the job is. */
static void slurm_sessions(ictx *x, uint64_t now)
{
    const idle_slurm_job *jobs;
    int n = idle_slurm_jobs(x->slurm, &jobs);
    for (int k = 0; k < n; k++) {
        idle_sess_cfg c;
        int found = 0;
        memset(&c, 0, sizeof c);
        snprintf(c.name, sizeof c.name, "slurm-%s", jobs[k].id);
        for (int i = 0; i < x->nss && !found; i++)
            if (strcmp(x->ss[i].c.name, c.name) == 0)
                found = 1, x->ss[i].seen = 1;
        if (found || x->nss >= IDLE_MAX_SESSIONS)
            continue;
        c.auto_found = 1;
        snprintf(c.job, sizeof c.job, "%s", jobs[k].id);
        snprintf(c.job_user, sizeof c.job_user, "%s", jobs[k].user);
        for (int g = 0; g < x->ngpus && c.ndevs < IDLE_MAX_GPUS; g++)
            if (idle_slurm_holds(&jobs[k], x->gpus[g].info.id))
                c.devs[c.ndevs++] = g;
        idle_sess_init(&x->ss[x->nss], &c, now);
        x->ss[x->nss++].seen = 1;
    }
}

/* A session per cgroup of a GPU process; gone when its processes are. */
static void auto_sessions(ictx *x, uint64_t now)
{
    const idle_env *e = &x->env;
    for (int i = 0; i < x->nss; i++)
        x->ss[i].seen = !x->ss[i].c.auto_found;
    for (int g = 0; g < x->ngpus; g++) {
        const gpu_sample *s = &x->gpus[g].last;
        for (uint32_t k = 0; k < s->nprocs; k++) {
            char cg[256];
            idle_sess_cfg c;
            int found = 0;
            if (idle_proc_cgroup(e, s->procs[k].pid, cg, sizeof cg) ||
                idle_sess_from_cgroup(cg, &c))
                continue;
            for (int i = 0; i < x->nss && !found; i++)
                if (strcmp(x->ss[i].c.name, c.name) == 0)
                    found = 1, x->ss[i].seen = 1;
            if (!found && x->nss < IDLE_MAX_SESSIONS) {
                idle_sess_init(&x->ss[x->nss], &c, now);
                x->ss[x->nss++].seen = 1;
            }
        }
    }
    slurm_sessions(x, now);
    for (int i = 0; i < x->nss;) {
        if (!x->ss[i].seen) {
            x->ss[i] = x->ss[x->nss - 1];
            x->last_action[i] = x->last_action[x->nss - 1];
            x->nss--;
        } else {
            i++;
        }
    }
}

static void round_sample(ictx *x)
{
    gpu_sample *buf = (gpu_sample *)(void *)x->scratch;
    uint64_t now = clock_real_ns();
    int n = 0, err;
    char why[IDLE_WHY];
    if (x->o->dcgm_url)
        idle_dcgm_scrape(x->o->dcgm_url, x->env.ca_file, x->gpus, x->ngpus, why,
                         sizeof why);
    err = idle_src_sample(x->src, buf, x->ngpus, &n);
    for (int i = 0; i < x->ngpus; i++)
        idle_gpu_push(&x->gpus[i], !err && i < n ? &buf[i] : NULL, now);
}

/* Allocations (kubelet checkpoint, Slurm) before the verdicts, holders of
 * the dirty GPUs after; both read files, so at most every
 * IDLE_SCAN_NS unless a GPU just turned dirty. */
#define IDLE_SCAN_NS (5 * IDLE_NS)

static void round_gpus(ictx *x, uint64_t now)
{
    const idle_env *e = &x->env;
    int need[IDLE_MAX_GPUS] = { 0 }, fresh = 0, fresh_jobs;
    idle_cgcache_tick(x->env.cgcache, now);
    /* a new answer from Slurm is applied at once */
    fresh_jobs =
        idle_slurm_poll(x->slurm, clock_mono_ns(), x->once && !x->alloc_ts);
    if (fresh_jobs || !x->alloc_ts || now - x->alloc_ts >= IDLE_SCAN_NS) {
        idle_alloc_scan(e, x->gpus, x->ngpus);
        idle_slurm_mark(x->slurm, x->gpus, x->ngpus);
        for (int i = 0; i < x->ngpus; i++)
            if (idle_src_sim_alloc(x->src, i)) {
                idle_gpu *g = &x->gpus[i];
                g->allocated = 1;
                snprintf(g->alloc.ns, sizeof g->alloc.ns, "demo");
                snprintf(g->alloc.pod, sizeof g->alloc.pod, "notebook-%d", i);
                snprintf(g->alloc_what, sizeof g->alloc_what,
                         "pod demo/notebook-%d (simulated)", i);
            }
        x->alloc_ts = now;
    }
    if (x->kern)
        idle_kern_round(x->kern, x->gpus, x->ngpus, now);
    if (!x->simulated)
        idle_dead_scan(e, x->gpus, x->ngpus, &x->host_pids);
    for (int i = 0; i < x->ngpus && x->simulated; i++)
        idle_src_sim_dirt(x->src, &x->gpus[i], i, 0);
    for (int i = 0; i < x->ngpus; i++) {
        idle_gpu *g = &x->gpus[i];
        idle_gpu_eval(g, &x->o->cfg, now);
        need[i] = g->dirty && g->state != IG_STUCK;
        fresh |= need[i] && !x->was_dirty[i];
        x->was_dirty[i] = need[i];
    }
    if (!x->simulated &&
        (fresh || (x->holders_ts && now - x->holders_ts >= IDLE_SCAN_NS))) {
        idle_holders_scan(e, x->gpus, x->ngpus, need);
        x->holders_ts = now;
    }
    /* simulated GPUs have no /dev/nvidiaN of their own to look up: only
     * the scenarios about holders get them */
    for (int i = 0; i < x->ngpus; i++) {
        if (x->simulated) {
            idle_src_sim_dirt(x->src, &x->gpus[i], i, 1);
            if (!x->gpus[i].nholders && !x->gpus[i].ndead)
                continue;
        }
        idle_gpu_note_holders(&x->gpus[i]);
    }
    idle_acct_round(x->acct, e, x->gpus, x->ngpus, now);
}

static void round_decide(ictx *x)
{
    uint64_t now = clock_real_ns();
    if (!x->t_first)
        x->t_first = now;
    x->t_last = now;
    round_gpus(x, now);
    if (x->o->auto_sessions)
        auto_sessions(x, now);
    for (int i = 0; i < x->nss; i++) {
        idle_sess_collect(&x->env, &x->ss[i], x->gpus, x->ngpus, now);
        idle_sess_eval(&x->ss[i], &x->o->cfg, x->gpus, x->ngpus, now);
    }
}

static int sess_shown(const ictx *x, const idle_sess *s)
{
    return !x->o->only || strcmp(x->o->only, s->c.name) == 0;
}

/* {"simulated":..,"host":..,"gpus":[..],"sessions":[..]} */
size_t idle_watch_render_json(ictx *x, char *buf, size_t cap, int pretty_nl)
{
    jw w;
    jw_init(&w, buf, cap);
    jw_obj_begin(&w);
    jw_kv_str(&w, "host", x->host);
    jw_key(&w, "simulated");
    jw_bool(&w, x->simulated);
    jw_kv_u64(&w, "ts", clock_real_ns());
    jw_key(&w, "gpus");
    jw_arr_begin(&w);
    for (int i = 0; i < x->ngpus; i++) {
        jw_obj_begin(&w);
        idle_out_gpu(&w, &x->gpus[i]);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_key(&w, "sessions");
    jw_arr_begin(&w);
    for (int i = 0; i < x->nss; i++) {
        if (!sess_shown(x, &x->ss[i]))
            continue;
        jw_obj_begin(&w);
        idle_out_sess(&w, &x->ss[i]);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_obj_end(&w);
    if (pretty_nl)
        jw_put(&w, "\n", 1);
    return w.err ? 0 : w.len;
}

/* Kubeflow-style probe: has_activity unless every shown session is
 * reclaimable; UNKNOWN counts as activity (never stop on missing data). */
size_t idle_watch_render_probe(ictx *x, char *buf, size_t cap, const char *only)
{
    int any = 0, act = 0;
    uint64_t last = 0;
    jw w;
    char iso[40];
    for (int i = 0; i < x->nss; i++) {
        const idle_sess *s = &x->ss[i];
        if (only && strcmp(only, s->c.name) != 0)
            continue;
        any = 1;
        if (s->state != IS_IDLE && s->state != IS_HELD_IDLE &&
            s->state != IS_MAX_AGE)
            act = 1;
        if (s->last_active > last)
            last = s->last_active;
    }
    if (!any) /* no session: judge the GPUs */
        for (int i = 0; i < x->ngpus; i++) {
            int st = x->gpus[i].state;
            if (st == IG_BUSY || st == IG_BUSY_LOW_OCC || st == IG_BURSTY ||
                st == IG_UNKNOWN)
                act = 1;
            if (x->gpus[i].last_work > last)
                last = x->gpus[i].last_work;
        }
    {
        time_t t = (time_t)(last / IDLE_NS);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
    jw_init(&w, buf, cap);
    jw_obj_begin(&w);
    jw_key(&w, "has_activity");
    jw_bool(&w, act);
    jw_kv_str(&w, "last_activity", iso);
    jw_key(&w, "simulated");
    jw_bool(&w, x->simulated);
    jw_obj_end(&w);
    jw_put(&w, "\n", 1);
    return w.err ? 0 : w.len;
}

/* --clean-check: may the next job have every GPU? */
static int clean_exit(const ictx *x)
{
    int dirty = 0, busy = 0, unknown = 0;
    for (int i = 0; i < x->ngpus; i++) {
        const idle_gpu *g = &x->gpus[i];
        dirty |= g->dirty;
        busy |= g->sig.procs > 0;
        unknown |= g->state == IG_UNKNOWN;
    }
    if (dirty)
        return IDLE_EXIT_DIRTY;
    if (busy)
        return IDLE_EXIT_BUSY;
    return unknown ? IDLE_EXIT_UNKNOWN : 0;
}

static int once_exit(const ictx *x)
{
    int phantom = 0, unknown = 0, use = 0, any = 0;
    if (x->o->clean_check)
        return clean_exit(x);
    for (int i = 0; i < x->ngpus; i++)
        phantom |= x->gpus[i].state == IG_PHANTOM;
    for (int i = 0; i < x->nss; i++) {
        const idle_sess *s = &x->ss[i];
        if (!sess_shown(x, s))
            continue;
        any = 1;
        unknown |= s->state == IS_UNKNOWN;
        use |= s->state == IS_ACTIVE || s->state == IS_STARTING ||
               s->state == IS_GPU_UNUSED;
    }
    if (!any)
        for (int i = 0; i < x->ngpus; i++) {
            int st = x->gpus[i].state;
            unknown |= st == IG_UNKNOWN;
            use |= st == IG_BUSY || st == IG_BUSY_LOW_OCC || st == IG_BURSTY;
        }
    if (phantom)
        return IDLE_EXIT_PHANTOM;
    if (unknown)
        return IDLE_EXIT_UNKNOWN;
    return use ? IDLE_EXIT_IN_USE : IDLE_EXIT_IDLE;
}

/* --price: the waste seen on GPU i (all reasons, seconds) priced; the
 * line under its reasons, the sums into *hours and *cost (priced ones
 * only; *unpriced set for waste on a model without a price). */
static void print_cost(const ictx *x, FILE *f, int i, double *hours,
                       double *cost, int *unpriced)
{
    const idle_gpu *g = &x->gpus[i];
    const gpu_price *p = price_find(x->o->prices, x->o->nprices, g->info.name);
    double secs = 0;
    for (int r = 0; r < IW_N; r++)
        secs += idle_acct_wasted(x->acct, i, r);
    if (secs <= 0)
        return;
    *hours += secs / 3600.0;
    if (!p) {
        *unpriced = 1;
        fprintf(f, "    - waste seen: %.3f GPU-s (no --price for %s)\n", secs,
                g->info.name);
        return;
    }
    *cost += secs / 3600.0 * p->per_hour;
    fprintf(f,
            "    - waste seen: %.3f GPU-s = %.6f %s (%.2f %s per GPU-hour)\n",
            secs, secs / 3600.0 * p->per_hour, x->o->currency, p->per_hour,
            x->o->currency);
}

static void print_text(ictx *x, FILE *f)
{
    double hours = 0, cost = 0, span = 0;
    int unpriced = 0;
    if (x->simulated)
        fprintf(f, "SIMULATED GPUs: no real GPU was measured\n");
    for (int i = 0; i < x->ngpus; i++) {
        const idle_gpu *g = &x->gpus[i];
        char gi[24] = "";
        if (g->info.mig)
            snprintf(gi, sizeof gi, " GI %u", g->info.gi);
        fprintf(f, "gpu %u%s %-12s %s%s\n", g->info.id, gi,
                idle_gpu_state_name(g->state), g->info.name,
                g->info.simulated ? " (simulated)" : "");
        for (int k = 0; k < g->nreasons; k++)
            fprintf(f, "    - %s\n", g->reasons[k]);
        if (x->o->nprices)
            print_cost(x, f, i, &hours, &cost, &unpriced);
    }
    span = (double)(x->t_last - x->t_first) / 1e9;
    if (x->o->nprices && span > 0)
        fprintf(f,
                "waste seen: %.3f GPU-s over %.3f s = %.6f %s%s; at this "
                "rate %.2f %s per hour\n",
                hours * 3600.0, span, cost, x->o->currency,
                unpriced ? " (GPUs without a price not counted)" : "",
                cost / (span / 3600.0), x->o->currency);
    for (int i = 0; i < x->nss; i++) {
        const idle_sess *s = &x->ss[i];
        if (!sess_shown(x, s))
            continue;
        fprintf(f, "session %s %s%s%s action=%s\n", s->c.name,
                idle_sess_state_name(s->state), s->kind[0] ? ":" : "", s->kind,
                idle_action_name(s->action));
        for (int k = 0; k < s->nreasons; k++)
            fprintf(f, "    - %s\n", s->reasons[k]);
    }
}

static void sleep_until(uint64_t mono)
{
    uint64_t now = clock_mono_ns();
    struct timespec ts;
    if (mono <= now)
        return;
    ts.tv_sec = (time_t)((mono - now) / IDLE_NS);
    ts.tv_nsec = (long)((mono - now) % IDLE_NS);
    nanosleep(&ts, NULL);
}

int idle_once(const idle_opts *o)
{
    ictx x;
    char why[IDLE_WHY];
    uint64_t next, step = (uint64_t)o->cfg.interval_ms * 1000000ull;
    uint32_t n = o->samples ? o->samples : 1;
    int rc;
    size_t len;
    if (ctx_open(&x, o, why, sizeof why)) {
        glog_error("watch", "%s", why);
        ctx_close(&x);
        return 1;
    }
    x.once = 1;
    next = clock_mono_ns();
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            sleep_until(next);
        next += step;
        round_sample(&x);
        /* sessions are sampled each round so CPU rates have an interval */
        round_decide(&x);
    }
    rc = once_exit(&x);
    if (o->probe) {
        len = idle_watch_render_probe(&x, x.scratch, IDLE_OUT_CAP, o->only);
        fwrite(x.scratch, 1, len, stdout);
    } else if (o->json) {
        len = idle_watch_render_json(&x, x.scratch, IDLE_OUT_CAP, 1);
        fwrite(x.scratch, 1, len, stdout);
    } else {
        print_text(&x, stdout);
    }
    ctx_close(&x);
    return rc;
}

/* ---- watch ---- */

static void run_hook(ictx *x, const idle_sess *s)
{
    const idle_opts *o = x->o;
    jw w;
    jw_init(&w, x->scratch, IDLE_OUT_CAP);
    jw_obj_begin(&w);
    jw_kv_str(&w, "host", x->host);
    jw_key(&w, "simulated");
    jw_bool(&w, x->simulated);
    jw_kv_u64(&w, "ts", s->ts);
    idle_out_sess(&w, s);
    jw_obj_end(&w);
    jw_put(&w, "", 1); /* NUL */
    if (w.err)
        return;
    if (o->hook_cmd) {
        pid_t p = fork();
        if (p == 0) {
            setenv("GPUFL_IDLE_SESSION", s->c.name, 1);
            setenv("GPUFL_IDLE_STATE", idle_sess_state_name(s->state), 1);
            setenv("GPUFL_IDLE_POD", s->c.pod, 1);
            setenv("GPUFL_IDLE_CGROUP", s->c.cgroup, 1);
            setenv("GPUFL_IDLE_VERDICT", x->scratch, 1);
            setenv("GPUFL_IDLE_SLURM_JOB", s->c.job, 1);
            setenv("GPUFL_IDLE_USER", s->c.job_user, 1);
            execl("/bin/sh", "sh", "-c", o->hook_cmd, (char *)NULL);
            _exit(127);
        } else if (p < 0) {
            glog_error("hook", "hook: fork: %s", strerror(errno));
        } else {
            glog_info("hook", "stop hook started for %s (pid %d)", s->c.name,
                      (int)p);
            if (x->nhooks < IDLE_MAX_HOOKS)
                x->hooks[x->nhooks++] = p;
        }
    }
    if (o->hook_url) {
        char why[IDLE_WHY];
        if (idle_http_post(o->hook_url, x->env.ca_file, x->scratch, why,
                           sizeof why))
            glog_warn("hook", "webhook for %s failed: %s", s->c.name, why);
    }
}

int idle_watch(const idle_opts *o)
{
    ictx x;
    char why[IDLE_WHY];
    uint64_t step = (uint64_t)o->cfg.interval_ms * 1000000ull;
    uint64_t next, t0, refresh = (uint64_t)o->cfg.refresh_s * IDLE_NS;
    uint64_t wstep = 0, wnext = 0;
    int rc = 1;
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (ctx_open(&x, o, why, sizeof why))
        goto fail;
    if (o->listen && idle_watch_http_open(&x, o->listen, why, sizeof why))
        goto fail;
    /* simulated processes are nobody's: nothing to tell a Hub */
    if (o->hub_url && !x.simulated &&
        idle_hub_new(&x.hub, o->hub_url, o->hub_token ? o->hub_token : "",
                     x.env.ca_file, o->hub_every_s, why, sizeof why))
        goto fail;
    if (o->log_dir &&
        idle_log_open(&x.log, o->log_dir, x.simulated, x.devs, x.ngpus,
                      o->cfg.interval_ms, o->cmdline ? o->cmdline : "", why,
                      sizeof why))
        goto fail;
    if (x.log && idle_wline_new(&x.waste, clock_real_ns())) {
        snprintf(why, sizeof why, "out of memory");
        goto fail;
    }
    wstep = (uint64_t)o->waste_interval_ms * 1000000ull;
    if (x.simulated)
        glog_warn("src", "SIMULATED GPUs (no real GPU is "
                         "measured)");
    t0 = next = clock_mono_ns();
    wnext = t0 + wstep;
    while (!g_stop) {
        uint64_t now;
        /* the HTTP thread's /probe reads GPUs and sessions under mu; only
         * this thread writes them, so reads below need no lock */
        pthread_mutex_lock(&x.mu);
        round_sample(&x);
        round_decide(&x);
        pthread_mutex_unlock(&x.mu);
        idle_hub_round(x.hub, &x.env, x.gpus, x.ngpus);
        now = clock_real_ns();
        for (int i = 0; i < x.ngpus; i++) {
            idle_gpu *g = &x.gpus[i];
            uint64_t *last = &x.last_log[IDLE_MAX_SESSIONS + i];
            if (g->changed || now - *last >= refresh) {
                idle_log_gpu(x.log, g, now);
                *last = now;
            }
        }
        for (int i = 0; i < x.nss; i++) {
            idle_sess *s = &x.ss[i];
            int act = s->changed || s->action != x.last_action[i];
            if (act || now - x.last_log[i] >= refresh) {
                idle_log_sess(x.log, s, now);
                x.last_log[i] = now;
            }
            if (s->action == IA_STOP && !s->stop_done) {
                run_hook(&x, s);
                s->stop_done = 1;
            }
            x.last_action[i] = s->action;
        }
        /* before publish: a scrape sees no count the lines have not */
        if (x.waste && wstep && clock_mono_ns() >= wnext) {
            idle_wline_ship(x.waste, x.log, x.acct, x.gpus, x.ngpus, x.host,
                            now);
            wnext += wstep;
            if (wnext < clock_mono_ns())
                wnext = clock_mono_ns() + wstep; /* a stalled loop */
        }
        idle_watch_publish(&x);
        /* the hooks' children only: scontrol's is idle_slurm.c's to reap */
        for (int i = 0; i < x.nhooks;)
            if (waitpid(x.hooks[i], NULL, WNOHANG) != 0)
                x.hooks[i] = x.hooks[--x.nhooks];
            else
                i++;
        if (o->duration_s && clock_mono_ns() - t0 >= o->duration_s * IDLE_NS)
            break;
        next += step;
        sleep_until(next);
    }
    /* what the last interval counted, so a stop loses nothing */
    if (x.waste)
        idle_wline_ship(x.waste, x.log, x.acct, x.gpus, x.ngpus, x.host,
                        clock_real_ns());
    rc = 0;
    ctx_close(&x);
    return rc;
fail:
    glog_error("watch", "%s", why);
    ctx_close(&x);
    return 1;
}
