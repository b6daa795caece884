/*
 * idle_out.c - what the idle detector writes: verdict objects (the body
 * of a `verdict` event, docs/events.md; also `--once --json`), the
 * Prometheus text exposition (labels that join dcgm-exporter's), and a
 * gpufl log whose system stream carries the verdict lines for gpufl-agent.
 */
#include "idle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gpufl/gpufl.h>

#include "common/clock.h"
#include "common/jw.h"
#include "common/prom.h"
#include "common/uuid.h"

static void reasons(jw *w, char (*r)[IDLE_REASON_LEN], int n)
{
    jw_key(w, "reasons");
    jw_arr_begin(w);
    for (int i = 0; i < n; i++)
        jw_str(w, r[i]);
    jw_arr_end(w);
}

void idle_out_gpu(jw *w, const idle_gpu *g)
{
    const idle_gsig *q = &g->sig;
    jw_kv_str(w, "kind", "gpu");
    jw_kv_u64(w, "dev", g->info.id);
    if (g->info.uuid[0])
        jw_kv_str(w, "uuid", g->info.uuid);
    if (g->info.pci_bus_id[0])
        jw_kv_str(w, "pci", g->info.pci_bus_id);
    jw_kv_str(w, "model", g->info.name);
    jw_kv_str(w, "state", idle_gpu_state_name(g->state));
    jw_kv_u64(w, "since", g->since);
    if (g->info.simulated) {
        jw_key(w, "simulated");
        jw_bool(w, 1);
    }
    reasons(w, (char(*)[IDLE_REASON_LEN])g->reasons, g->nreasons);
    if (g->dirty) {
        jw_key(w, "dirty");
        jw_bool(w, 1);
    }
    if (g->allocated)
        jw_kv_str(w, "allocated_to", g->alloc_what);
    if (g->dirty && g->nholders) {
        jw_key(w, "holders");
        jw_arr_begin(w);
        for (int i = 0; i < g->nholders; i++)
            jw_u64(w, g->holders[i]);
        jw_arr_end(w);
    }
    jw_key(w, "signals");
    jw_obj_begin(w);
    jw_kv_u64(w, "samples", q->total);
    jw_kv_u64(w, "valid", q->valid);
    if (q->valid) {
        jw_key(w, "util");
        jw_f64(w, q->util_mean, 1);
        jw_key(w, "util_max");
        jw_f64(w, q->util_max, 0);
        jw_key(w, "duty");
        jw_f64(w, q->duty, 3);
        jw_kv_u64(w, "procs", q->procs);
        jw_kv_u64(w, "mem_used", q->mem_used);
        if (q->mem_total)
            jw_kv_u64(w, "mem_total", q->mem_total);
    }
    if (q->has_sm) {
        jw_key(w, "sm_active");
        jw_f64(w, q->sm_mean, 4);
    }
    if (q->has_gr) {
        jw_key(w, "gr_active");
        jw_f64(w, q->gr_mean, 4);
    }
    if (q->has_power) {
        jw_key(w, "power_w");
        jw_f64(w, q->power_w, 1);
        jw_key(w, "power_ratio");
        jw_f64(w, q->power_ratio, 3);
    }
    if (q->pstate >= 0)
        jw_kv_i64(w, "pstate", q->pstate);
    if (q->has_throttle)
        jw_kv_u64(w, "throttle", q->throttle);
    jw_obj_end(w);
}

void idle_out_sess(jw *w, const idle_sess *s)
{
    const idle_ssig *q = &s->sig;
    jw_kv_str(w, "kind", "session");
    jw_kv_str(w, "session", s->c.name);
    if (s->c.pod[0])
        jw_kv_str(w, "pod", s->c.pod);
    if (s->c.container[0])
        jw_kv_str(w, "container", s->c.container);
    jw_key(w, "devs");
    jw_arr_begin(w);
    for (int i = 0; i < s->ndevs; i++)
        jw_u64(w, (uint64_t)s->devs[i]);
    jw_arr_end(w);
    jw_kv_str(w, "state", idle_sess_state_name(s->state));
    if (s->kind[0])
        jw_kv_str(w, "activity", s->kind);
    jw_kv_u64(w, "since", s->since);
    jw_kv_str(w, "action", idle_action_name(s->action));
    if (s->deadline)
        jw_kv_u64(w, "deadline", s->deadline);
    if (s->veto_until > s->ts)
        jw_kv_u64(w, "veto_until", s->veto_until);
    if (s->phantom_alert) {
        jw_key(w, "alert");
        jw_str(w, "GPU_PHANTOM");
    }
    reasons(w, (char(*)[IDLE_REASON_LEN])s->reasons, s->nreasons);
    jw_key(w, "signals");
    jw_obj_begin(w);
    jw_kv_str(w, "gpu_state", idle_gpu_state_name(s->gpu_state));
    if (q->conn >= 0)
        jw_kv_i64(w, "conn", q->conn);
    if (q->input_age_s >= 0) {
        jw_key(w, "input_age_s");
        jw_f64(w, q->input_age_s, 1);
    }
    if (q->kernel_busy >= 0) {
        jw_key(w, "kernel_busy");
        jw_bool(w, q->kernel_busy);
    }
    if (q->cpu_cores >= 0) {
        jw_key(w, "cpu_cores");
        jw_f64(w, q->cpu_cores, 3);
    }
    jw_kv_i64(w, "gpu_procs", q->gpu_procs);
    jw_key(w, "idle_s");
    jw_f64(w,
           s->ts > s->last_active ? (double)(s->ts - s->last_active) / 1e9 : 0,
           1);
    jw_obj_end(w);
}

/* ---- Prometheus ---- */

/* The labels that join dcgm-exporter's series, and a last one (state,
 * action) when extra is not NULL; returns the count. */
typedef struct gpu_lbl {
    prom_label l[7];
    char id[16];
} gpu_lbl;

size_t idle_out_gpu_labels(prom_label *l, char *id, size_t idcap,
                           const idle_gpu *g, const char *host)
{
    snprintf(id, idcap, "%u", g->info.id);
    l[0] = (prom_label){ "gpu", id };
    l[1] = (prom_label){ "UUID", g->info.uuid };
    l[2] = (prom_label){ "pci_bus_id", g->info.pci_bus_id };
    l[3] = (prom_label){ "modelName", g->info.name };
    l[4] = (prom_label){ "Hostname", host };
    l[5] = (prom_label){ "hostname", host };
    return IDLE_GPU_LABELS;
}

static size_t gpu_labels(gpu_lbl *x, const idle_gpu *g, const char *host,
                         const char *extra_name, const char *extra)
{
    size_t n = idle_out_gpu_labels(x->l, x->id, sizeof x->id, g, host);
    x->l[n] = (prom_label){ extra_name, extra };
    return extra ? n + 1 : n;
}

typedef struct sess_lbl {
    prom_label l[7];
    char ns[sizeof(((idle_sess_cfg *)0)->pod)];
} sess_lbl;

static size_t sess_labels(sess_lbl *x, const idle_sess *s, const char *host,
                          const char *extra_name, const char *extra)
{
    const char *slash = strchr(s->c.pod, '/');
    snprintf(x->ns, sizeof x->ns, "%.*s", slash ? (int)(slash - s->c.pod) : 0,
             s->c.pod);
    x->l[0] = (prom_label){ "session", s->c.name };
    x->l[1] = (prom_label){ "namespace", x->ns };
    x->l[2] = (prom_label){ "pod", slash ? slash + 1 : s->c.pod };
    x->l[3] = (prom_label){ "container", s->c.container };
    x->l[4] = (prom_label){ "Hostname", host };
    x->l[5] = (prom_label){ "hostname", host };
    x->l[6] = (prom_label){ extra_name, extra };
    return extra ? 7 : 6;
}

int idle_out_metrics(gbuf *b, const idle_gpu *gpus, int ngpus,
                     const idle_sess *ss, int nss, const char *host,
                     int simulated)
{
    gpu_lbl g;
    sess_lbl sl;
    size_t n;

    prom_family(b, "gpufl_idle_simulated", "gauge",
                "1 when the GPU source is simulated (no real GPU measured).");
    prom_u64(b, "gpufl_idle_simulated", NULL, 0, simulated ? 1 : 0);
    prom_family(b, "gpufl_idle_gpu_state", "gauge",
                "GPU verdict over the window: 1 for the current state, else "
                "0.");
    for (int i = 0; i < ngpus; i++)
        for (int k = 0; k < IG_N; k++) {
            n = gpu_labels(&g, &gpus[i], host, "state", idle_gpu_state_name(k));
            prom_u64(b, "gpufl_idle_gpu_state", g.l, n, gpus[i].state == k);
        }
    prom_family(b, "gpufl_idle_gpu_utilization_ratio", "gauge",
                "Mean share of time a kernel ran over the window (0..1).");
    for (int i = 0; i < ngpus; i++)
        if (gpus[i].sig.valid) {
            n = gpu_labels(&g, &gpus[i], host, NULL, NULL);
            prom_f64(b, "gpufl_idle_gpu_utilization_ratio", g.l, n,
                     gpus[i].sig.util_mean / 100.0, 4);
        }
    prom_family(b, "gpufl_idle_gpu_sm_active_ratio", "gauge",
                "Mean share of SMs busy over the window (GPM or DCGM only).");
    for (int i = 0; i < ngpus; i++)
        if (gpus[i].sig.has_sm) {
            n = gpu_labels(&g, &gpus[i], host, NULL, NULL);
            prom_f64(b, "gpufl_idle_gpu_sm_active_ratio", g.l, n,
                     gpus[i].sig.sm_mean, 4);
        }
    prom_family(b, "gpufl_idle_gpu_memory_used_bytes", "gauge",
                "Device memory used (latest sample).");
    for (int i = 0; i < ngpus; i++)
        if (gpus[i].sig.valid) {
            n = gpu_labels(&g, &gpus[i], host, NULL, NULL);
            prom_u64(b, "gpufl_idle_gpu_memory_used_bytes", g.l, n,
                     gpus[i].sig.mem_used);
        }
    prom_family(b, "gpufl_idle_gpu_power_watts", "gauge",
                "Mean power over the window.");
    for (int i = 0; i < ngpus; i++)
        if (gpus[i].sig.has_power) {
            n = gpu_labels(&g, &gpus[i], host, NULL, NULL);
            prom_f64(b, "gpufl_idle_gpu_power_watts", g.l, n,
                     gpus[i].sig.power_w, 1);
        }
    prom_family(b, "gpufl_idle_gpu_processes", "gauge",
                "Processes with a context on the GPU (most over the window).");
    for (int i = 0; i < ngpus; i++)
        if (gpus[i].sig.valid) {
            n = gpu_labels(&g, &gpus[i], host, NULL, NULL);
            prom_u64(b, "gpufl_idle_gpu_processes", g.l, n, gpus[i].sig.procs);
        }
    prom_family(b, "gpufl_idle_gpu_energy_joules_total", "counter",
                "Energy since the driver loaded.");
    for (int i = 0; i < ngpus; i++)
        if (gpus[i].last.present & GS_ENERGY) {
            n = gpu_labels(&g, &gpus[i], host, NULL, NULL);
            prom_f64(b, "gpufl_idle_gpu_energy_joules_total", g.l, n,
                     (double)gpus[i].last.energy_mj / 1000.0, 3);
        }
    prom_family(b, "gpufl_idle_session_state", "gauge",
                "Session verdict: 1 for the current state, else 0.");
    for (int i = 0; i < nss; i++)
        for (int k = 0; k < IS_N; k++) {
            n = sess_labels(&sl, &ss[i], host, "state",
                            idle_sess_state_name(k));
            prom_u64(b, "gpufl_idle_session_state", sl.l, n, ss[i].state == k);
        }
    prom_family(b, "gpufl_idle_session_idle_seconds", "gauge",
                "Seconds since the session last showed activity.");
    for (int i = 0; i < nss; i++) {
        n = sess_labels(&sl, &ss[i], host, NULL, NULL);
        prom_f64(b, "gpufl_idle_session_idle_seconds", sl.l, n,
                 ss[i].ts > ss[i].last_active
                     ? (double)(ss[i].ts - ss[i].last_active) / 1e9
                     : 0.0,
                 1);
    }
    prom_family(b, "gpufl_idle_session_connections", "gauge",
                "Open interactive connections (when known).");
    for (int i = 0; i < nss; i++)
        if (ss[i].sig.conn >= 0) {
            n = sess_labels(&sl, &ss[i], host, NULL, NULL);
            prom_u64(b, "gpufl_idle_session_connections", sl.l, n,
                     (uint64_t)ss[i].sig.conn);
        }
    prom_family(b, "gpufl_idle_session_action", "gauge",
                "1 for the action the verdict asks for now.");
    for (int i = 0; i < nss; i++) {
        n = sess_labels(&sl, &ss[i], host, "action",
                        idle_action_name(ss[i].action));
        prom_u64(b, "gpufl_idle_session_action", sl.l, n, 1);
    }
    return b->err;
}

/* ---- log ---- */

#define IDLE_LINE_CAP 8192

struct idle_log {
    int fd;
    uint64_t seq;
    char sid[UUID_STR_LEN + 1];
    char line[IDLE_LINE_CAP];
};

static void log_write(idle_log *l, jw *w)
{
    if (w->err)
        return; /* a verdict never exceeds the cap: reasons are bounded */
    jw_put(w, "\n", 1);
    if (write(l->fd, w->buf, w->len) != (ssize_t)w->len)
        return;
    l->seq++;
}

static void envelope(idle_log *l, jw *w, uint64_t ts, const char *type)
{
    jw_init(w, l->line, sizeof l->line);
    jw_obj_begin(w);
    jw_kv_u64(w, "v", 1);
    jw_kv_str(w, "sid", l->sid);
    jw_kv_str(w, "st", "system");
    jw_kv_u64(w, "seq", l->seq);
    jw_kv_u64(w, "ts", ts);
    jw_kv_str(w, "type", type);
}

int idle_log_open(idle_log **out, const char *dir, int simulated,
                  const gpu_device *devs, int ndev, uint32_t interval_ms,
                  const char *cmd, char *why, size_t whylen)
{
    idle_log *l = calloc(1, sizeof *l);
    char path[1100], host[256];
    uint64_t now = clock_real_ns();
    time_t t = (time_t)(now / IDLE_NS);
    struct tm tm;
    jw w;
    *out = NULL;
    if (!l || uuid_v4(l->sid)) {
        free(l);
        snprintf(why, whylen, "out of memory or no random source");
        return GPUFL_ENOMEM;
    }
    gmtime_r(&t, &tm);
    snprintf(path, sizeof path,
             "%s/gpufl-idle.%04d%02d%02d-%02d%02d%02d.%.8s.system.log", dir,
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec, l->sid);
    l->fd =
        open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (l->fd < 0) {
        snprintf(why, whylen, "cannot create %s: %s", path, strerror(errno));
        free(l);
        return GPUFL_EIO;
    }
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = 0;
    envelope(l, &w, now, "session");
    jw_kv_str(&w, "app", "gpufl-idle");
    jw_kv_str(&w, "host", host);
    jw_kv_u64(&w, "pid", (uint64_t)getpid());
    jw_kv_u64(&w, "start", now);
    jw_kv_u64(&w, "file", 0);
    jw_kv_str(&w, "lib", GPUFL_VERSION_STRING);
    jw_key(&w, "simulated");
    jw_bool(&w, simulated);
    jw_key(&w, "cmd");
    jw_strn(&w, cmd, strlen(cmd), 1000);
    jw_kv_u64(&w, "interval_ms", interval_ms);
    jw_key(&w, "engines");
    jw_obj_begin(&w);
    jw_kv_str(&w, simulated ? "sim" : "nvml", "on");
    jw_obj_end(&w);
    jw_key(&w, "devices");
    jw_arr_begin(&w);
    for (int i = 0; i < ndev; i++) {
        jw_obj_begin(&w);
        jw_kv_u64(&w, "id", devs[i].id);
        jw_kv_str(&w, "name", devs[i].name);
        if (devs[i].uuid[0])
            jw_kv_str(&w, "uuid", devs[i].uuid);
        if (devs[i].pci_bus_id[0])
            jw_kv_str(&w, "pci", devs[i].pci_bus_id);
        if (devs[i].driver[0])
            jw_kv_str(&w, "driver", devs[i].driver);
        if (devs[i].mem_total)
            jw_kv_u64(&w, "mem", devs[i].mem_total);
        if (devs[i].simulated) {
            jw_key(&w, "simulated");
            jw_bool(&w, 1);
        }
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_obj_end(&w);
    log_write(l, &w);
    *out = l;
    return 0;
}

void idle_log_gpu(idle_log *l, const idle_gpu *g, uint64_t ts)
{
    jw w;
    if (!l)
        return;
    envelope(l, &w, ts, "verdict");
    idle_out_gpu(&w, g);
    jw_obj_end(&w);
    log_write(l, &w);
}

void idle_log_sess(idle_log *l, const idle_sess *s, uint64_t ts)
{
    jw w;
    if (!l)
        return;
    envelope(l, &w, ts, "verdict");
    idle_out_sess(&w, s);
    jw_obj_end(&w);
    log_write(l, &w);
}

void idle_log_event(idle_log *l, uint64_t ts, const char *type,
                    idle_log_fill fn, const void *ctx)
{
    jw w;
    if (!l)
        return;
    envelope(l, &w, ts, type);
    fn(&w, ctx);
    jw_obj_end(&w);
    log_write(l, &w);
}

void idle_log_close(idle_log *l)
{
    if (!l)
        return;
    close(l->fd);
    free(l);
}
