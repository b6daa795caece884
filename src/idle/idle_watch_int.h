/*
 * idle_watch_int.h - what the files of `gpufl idle`'s loop share: the
 * daemon's context (idle_watch.c: the sampling loop, sessions, hook,
 * verdict log; idle_watch_http.c: the HTTP listener and the buffers it
 * serves).  Private to src/idle.
 */
#ifndef GPUFL_IDLE_WATCH_INT_H
#define GPUFL_IDLE_WATCH_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "idle.h"

struct MHD_Daemon;

#define IDLE_OUT_CAP (4u << 20)
#define IDLE_WHY 256
#define IDLE_MAX_HOOKS 64

typedef struct ictx {
    const idle_opts *o;
    idle_src *src;
    int ngpus, simulated;
    gpu_device devs[IDLE_MAX_GPUS];
    idle_gpu gpus[IDLE_MAX_GPUS];
    idle_sess *ss;
    int nss;
    int last_action[IDLE_MAX_SESSIONS];
    uint64_t last_log[IDLE_MAX_SESSIONS + IDLE_MAX_GPUS];
    idle_log *log;
    idle_acct *acct;
    idle_kern *kern;               /* --gpufl-logs */
    idle_env env;                  /* o->env, with this daemon's cgroup cache:
                                      the one every read after ctx_open uses */
    int host_pids;                 /* a PID NVML lists was found in /proc */
    idle_wline *waste;             /* waste lines, with the log */
    uint64_t alloc_ts, holders_ts; /* last allocation and holder scans */
    idle_slurm *slurm;             /* scontrol show job -d, or NULL */
    idle_hub *hub;                 /* --jupyterhub-url reporter, or NULL */
    int once;                      /* --once: wait for scontrol's answer */
    pid_t hooks[IDLE_MAX_HOOKS];   /* --hook-cmd children not yet reaped */
    int nhooks;
    int was_dirty[IDLE_MAX_GPUS];
    uint64_t t_first, t_last; /* the first and latest rounds (real ns) */
    char host[256];
    /* rendered after each round, read by the HTTP thread */
    pthread_mutex_t mu;
    char *metrics, *verdicts;
    size_t metrics_len, verdicts_len;
    char *scratch;
    struct MHD_Daemon *http;
    int http_fd;
} ictx;

/* {"simulated":..,"host":..,"gpus":[..],"sessions":[..]} into buf[cap]
 * (pretty_nl: a newline after it); its length, 0 when it did not fit. */
size_t idle_watch_render_json(ictx *x, char *buf, size_t cap, int pretty_nl);
/* The Kubeflow-style probe answer (only: one session's, NULL: all). */
size_t idle_watch_render_probe(ictx *x, char *buf, size_t cap,
                               const char *only);

/* idle_watch_http.c: starts the listener on spec ("ADDR:PORT"); why says
 * what failed. */
int idle_watch_http_open(ictx *x, const char *spec, char *why, size_t whylen);
/* Renders the round's metrics and verdicts into the buffers the listener
 * serves (after each round, by the sampling thread). */
void idle_watch_publish(ictx *x);
/* Stops the listener, if started (its thread joined). */
void idle_watch_http_close(ictx *x);

#endif
