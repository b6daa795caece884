/*
 * idle_out.c - what the idle detector writes: verdict objects (the body
 * of a `verdict` event, docs/events.md; also `--once --json`), the
 * Prometheus text exposition (labels that join dcgm-exporter's), and a
 * gpufl log whose system stream carries the verdict lines for gpufl-agent.
 */
#include "idle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gpufl/gpufl.h>

#include "common/clock.h"
#include "common/jw.h"
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

typedef struct pbuf {
    char *p;
    size_t len, cap;
    int over;
} pbuf;

__attribute__((format(printf, 2, 3))) static void pf(pbuf *b, const char *fmt,
                                                     ...)
{
    va_list ap;
    int n;
    if (b->over)
        return;
    va_start(ap, fmt);
    n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= b->cap - b->len)
        b->over = 1;
    else
        b->len += (size_t)n;
}

/* A label value: backslash, double quote and newline escaped. */
static void pv(pbuf *b, const char *s)
{
    for (; *s && !b->over; s++) {
        if (*s == '\\')
            pf(b, "\\\\");
        else if (*s == '"')
            pf(b, "\\\"");
        else if (*s == '\n')
            pf(b, "\\n");
        else
            pf(b, "%c", *s);
    }
}

static void gpu_labels(pbuf *b, const idle_gpu *g, const char *host)
{
    pf(b, "gpu=\"%u\",UUID=\"", g->info.id);
    pv(b, g->info.uuid);
    pf(b, "\",pci_bus_id=\"");
    pv(b, g->info.pci_bus_id);
    pf(b, "\",modelName=\"");
    pv(b, g->info.name);
    pf(b, "\",Hostname=\"");
    pv(b, host);
    pf(b, "\",hostname=\"");
    pv(b, host);
    pf(b, "\"");
}

static void sess_labels(pbuf *b, const idle_sess *s, const char *host)
{
    const char *slash = strchr(s->c.pod, '/');
    pf(b, "session=\"");
    pv(b, s->c.name);
    pf(b, "\",namespace=\"");
    if (slash)
        pf(b, "%.*s", (int)(slash - s->c.pod), s->c.pod);
    pf(b, "\",pod=\"");
    pv(b, slash ? slash + 1 : s->c.pod);
    pf(b, "\",container=\"");
    pv(b, s->c.container);
    pf(b, "\",Hostname=\"");
    pv(b, host);
    pf(b, "\",hostname=\"");
    pv(b, host);
    pf(b, "\"");
}

#define HELP(name, type, text)                                                 \
    pf(&b, "# HELP " name " " text "\n# TYPE " name " " type "\n")

size_t idle_out_metrics(char *buf, size_t cap, const idle_gpu *gpus, int ngpus,
                        const idle_sess *ss, int nss, const char *host,
                        int simulated)
{
    pbuf b = { buf, 0, cap, 0 };
    HELP("gpufl_idle_simulated", "gauge",
         "1 when the GPU source is simulated (no real GPU measured).");
    pf(&b, "gpufl_idle_simulated %d\n", simulated ? 1 : 0);
    HELP("gpufl_idle_gpu_state", "gauge",
         "GPU verdict over the window: 1 for the current state, else 0.");
    for (int i = 0; i < ngpus; i++)
        for (int k = 0; k < IG_N; k++) {
            pf(&b, "gpufl_idle_gpu_state{");
            gpu_labels(&b, &gpus[i], host);
            pf(&b, ",state=\"%s\"} %d\n", idle_gpu_state_name(k),
               gpus[i].state == k);
        }
    HELP("gpufl_idle_gpu_utilization_ratio", "gauge",
         "Mean share of time a kernel ran over the window (0..1).");
    for (int i = 0; i < ngpus; i++)
        if (gpus[i].sig.valid) {
            pf(&b, "gpufl_idle_gpu_utilization_ratio{");
            gpu_labels(&b, &gpus[i], host);
            pf(&b, "} %.4f\n", gpus[i].sig.util_mean / 100.0);
        }
    HELP("gpufl_idle_gpu_sm_active_ratio", "gauge",
         "Mean share of SMs busy over the window (GPM or DCGM only).");
    for (int i = 0; i < ngpus; i++)
        if (gpus[i].sig.has_sm) {
            pf(&b, "gpufl_idle_gpu_sm_active_ratio{");
            gpu_labels(&b, &gpus[i], host);
            pf(&b, "} %.4f\n", gpus[i].sig.sm_mean);
        }
    HELP("gpufl_idle_gpu_memory_used_bytes", "gauge",
         "Device memory used (latest sample).");
    for (int i = 0; i < ngpus; i++)
        if (gpus[i].sig.valid) {
            pf(&b, "gpufl_idle_gpu_memory_used_bytes{");
            gpu_labels(&b, &gpus[i], host);
            pf(&b, "} %llu\n", (unsigned long long)gpus[i].sig.mem_used);
        }
    HELP("gpufl_idle_gpu_power_watts", "gauge", "Mean power over the window.");
    for (int i = 0; i < ngpus; i++)
        if (gpus[i].sig.has_power) {
            pf(&b, "gpufl_idle_gpu_power_watts{");
            gpu_labels(&b, &gpus[i], host);
            pf(&b, "} %.1f\n", gpus[i].sig.power_w);
        }
    HELP("gpufl_idle_gpu_processes", "gauge",
         "Processes with a context on the GPU (most over the window).");
    for (int i = 0; i < ngpus; i++)
        if (gpus[i].sig.valid) {
            pf(&b, "gpufl_idle_gpu_processes{");
            gpu_labels(&b, &gpus[i], host);
            pf(&b, "} %u\n", gpus[i].sig.procs);
        }
    HELP("gpufl_idle_gpu_energy_joules_total", "counter",
         "Energy since the driver loaded.");
    for (int i = 0; i < ngpus; i++)
        if (gpus[i].last.present & GS_ENERGY) {
            pf(&b, "gpufl_idle_gpu_energy_joules_total{");
            gpu_labels(&b, &gpus[i], host);
            pf(&b, "} %.3f\n", (double)gpus[i].last.energy_mj / 1000.0);
        }
    HELP("gpufl_idle_session_state", "gauge",
         "Session verdict: 1 for the current state, else 0.");
    for (int i = 0; i < nss; i++)
        for (int k = 0; k < IS_N; k++) {
            pf(&b, "gpufl_idle_session_state{");
            sess_labels(&b, &ss[i], host);
            pf(&b, ",state=\"%s\"} %d\n", idle_sess_state_name(k),
               ss[i].state == k);
        }
    HELP("gpufl_idle_session_idle_seconds", "gauge",
         "Seconds since the session last showed activity.");
    for (int i = 0; i < nss; i++) {
        pf(&b, "gpufl_idle_session_idle_seconds{");
        sess_labels(&b, &ss[i], host);
        pf(&b, "} %.1f\n",
           ss[i].ts > ss[i].last_active
               ? (double)(ss[i].ts - ss[i].last_active) / 1e9
               : 0.0);
    }
    HELP("gpufl_idle_session_connections", "gauge",
         "Open interactive connections (when known).");
    for (int i = 0; i < nss; i++)
        if (ss[i].sig.conn >= 0) {
            pf(&b, "gpufl_idle_session_connections{");
            sess_labels(&b, &ss[i], host);
            pf(&b, "} %d\n", ss[i].sig.conn);
        }
    HELP("gpufl_idle_session_action", "gauge",
         "1 for the action the verdict asks for now.");
    for (int i = 0; i < nss; i++) {
        pf(&b, "gpufl_idle_session_action{");
        sess_labels(&b, &ss[i], host);
        pf(&b, ",action=\"%s\"} 1\n", idle_action_name(ss[i].action));
    }
    return b.over ? 0 : b.len;
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

void idle_log_close(idle_log *l)
{
    if (!l)
        return;
    close(l->fd);
    free(l);
}
