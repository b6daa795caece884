/*
 * sampler.c - the system sampler thread: once per interval it reads host
 * CPU/RAM and every metrics source (NVML, the simulated GPU), and the named
 * counters that changed, and hands the lines to the collector.
 *
 * A thread of its own because NVML calls can block for seconds (a GPU
 * without persistence mode re-initialises on first touch); the collector
 * and the application never wait for it.  System sampling is on by default
 * (docs/events.md §11: GPU Flight's default of 0 silently turned it off).
 */
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <string.h>
#include <time.h>

#include "client_int.h"
#include "common/clock.h"

#define BODY_CAP 16384

static src_host *host;
static gpu_sample samples[GPU_MAX_DEVICES];
static uint8_t was_lost[GPU_MAX_DEVICES];

static char *body_dup(const jw *j, uint32_t *len)
{
    char *b;
    if (j->err)
        return NULL;
    b = malloc(j->len ? j->len : 1);
    if (b && j->len)
        memcpy(b, j->buf, j->len);
    *len = (uint32_t)j->len;
    return b;
}

/* Members of a "gpu" line (no braces: the collector adds the envelope). */
static void gpu_body(jw *j, const gpu_sample *g)
{
    uint32_t p = g->present;
    jw_kv_str(j, "type", "gpu");
    jw_kv_u64(j, "dev", g->dev);
    if (p & GS_UTIL_GPU)
        jw_kv_u64(j, "util", g->util_gpu);
    if (p & GS_UTIL_MEM)
        jw_kv_u64(j, "mem_util", g->util_mem);
    if (p & GS_MEM) {
        jw_kv_u64(j, "mem_used", g->mem_used);
        jw_kv_u64(j, "mem_total", g->mem_total);
    }
    if (p & GS_MEM_RESERVED)
        jw_kv_u64(j, "mem_reserved", g->mem_reserved);
    if (p & GS_TEMP)
        jw_kv_i64(j, "temp", g->temp_c);
    if (p & GS_POWER)
        jw_kv_u64(j, "power", g->power_mw);
    if (p & GS_POWER_LIMIT)
        jw_kv_u64(j, "power_limit", g->power_limit_mw);
    if (p & GS_FAN)
        jw_kv_u64(j, "fan", g->fan_pct);
    if (p & GS_CLOCKS) {
        jw_kv_u64(j, "clk_sm", g->clk_sm);
        jw_kv_u64(j, "clk_mem", g->clk_mem);
        jw_kv_u64(j, "clk_gfx", g->clk_gfx);
    }
    if (p & GS_THROTTLE)
        jw_kv_u64(j, "throttle", g->throttle);
    if (p & GS_PSTATE)
        jw_kv_i64(j, "pstate", g->pstate);
    if (p & GS_PCIE) {
        jw_kv_u64(j, "pcie_tx", g->pcie_tx_kbps);
        jw_kv_u64(j, "pcie_rx", g->pcie_rx_kbps);
    }
    if (p & GS_ECC) {
        jw_kv_u64(j, "ecc_corr", g->ecc_corrected);
        jw_kv_u64(j, "ecc_uncorr", g->ecc_uncorrected);
    }
    if (p & GS_ENERGY)
        jw_kv_u64(j, "energy", g->energy_mj);
    if (p & GS_SM_ACTIVE) {
        jw_key(j, "sm_active");
        jw_f64(j, g->sm_active, 4);
    }
    if (p & GS_SM_OCC) {
        jw_key(j, "sm_occ");
        jw_f64(j, g->sm_occupancy, 4);
    }
    if (p & GS_PROCS) {
        uint32_t n = g->nprocs > GPU_MAX_PROCS ? GPU_MAX_PROCS : g->nprocs;
        jw_kv_u64(j, "nprocs", g->nprocs_total > n ? g->nprocs_total : n);
        jw_key(j, "procs");
        jw_arr_begin(j);
        for (uint32_t i = 0; i < n; i++) {
            jw_obj_begin(j);
            jw_kv_u64(j, "pid", g->procs[i].pid);
            if (g->procs[i].mem != UINT64_MAX)
                jw_kv_u64(j, "mem", g->procs[i].mem);
            jw_obj_end(j);
        }
        jw_arr_end(j);
    }
}

static void host_body(jw *j, const src_host_sample *h)
{
    jw_kv_str(j, "type", "host");
    if (h->cpu_pct >= 0) {
        jw_key(j, "cpu");
        jw_f64(j, h->cpu_pct, 1);
    }
    jw_kv_u64(j, "ncpu", h->ncpu);
    jw_kv_u64(j, "ram_used", h->ram_used);
    jw_kv_u64(j, "ram_total", h->ram_total);
    jw_kv_u64(j, "swap_used", h->swap_used);
    jw_key(j, "load1");
    jw_f64(j, h->load1, 2);
    if (h->proc_cpu_pct >= 0) {
        jw_key(j, "proc_cpu");
        jw_f64(j, h->proc_cpu_pct, 1);
    }
    jw_kv_u64(j, "proc_rss", h->proc_rss);
}

static void push_body(void (*fn)(jw *, const void *), const void *arg,
                      uint64_t ts)
{
    char buf[BODY_CAP];
    jw j;
    uint32_t len;
    char *b;
    jw_init(&j, buf, sizeof buf);
    j.depth = 1; /* members of the line's object */
    fn(&j, arg);
    b = body_dup(&j, &len);
    if (b)
        client_push_raw(ST_SYSTEM, b, len, ts);
}

static void gpu_fn(jw *j, const void *a)
{
    gpu_body(j, a);
}
static void host_fn(jw *j, const void *a)
{
    host_body(j, a);
}

/* A lost GPU's gpu lines carry no field: a marker says why, once per
 * loss, and another when it answers again. */
static void lost_marker(const gpu_sample *g)
{
    uint8_t lost = (g->present & GS_LOST) != 0;
    char msg[192];
    if (g->dev >= GPU_MAX_DEVICES || lost == was_lost[g->dev])
        return;
    was_lost[g->dev] = lost;
    if (lost)
        snprintf(msg, sizeof msg,
                 "nvml: GPU %u is lost (NVML_ERROR_GPU_IS_LOST: fallen off "
                 "the bus, or it needs a reset); its gpu lines are empty "
                 "until it answers",
                 g->dev);
    else
        snprintf(msg, sizeof msg, "nvml: GPU %u answers again", g->dev);
    gpufl_marker(msg);
}

static void sample_once(void)
{
    uint64_t ts = client_now();
    if (host) {
        src_host_sample h;
        memset(&h, 0, sizeof h);
        src_host_sample_now(host, &h);
        push_body(host_fn, &h, ts);
    }
    for (int i = 0; i < g_client.n_engines; i++) {
        client_engine *e = &g_client.engines[i];
        int n = 0;
        if (!e->on || !e->ops->sample)
            continue;
        if (e->ops->sample(e->state, samples, GPU_MAX_DEVICES, &n) != 0)
            continue;
        for (int k = 0; k < n && k < GPU_MAX_DEVICES; k++) {
            push_body(gpu_fn, &samples[k], ts);
            lost_marker(&samples[k]);
        }
    }
}

/* Counters of this session that changed since the last tick become
 * counter records (the table holds every session's; api.c). */
static void sample_counters(void)
{
    uint32_t n =
        atomic_load_explicit(&g_client.n_counters, memory_order_acquire);
    uint32_t gen = atomic_load_explicit(&g_client.gen, memory_order_relaxed);
    for (uint32_t i = 0; i < n; i++) {
        gpufl_counter_s *c = &g_client.counters[i];
        int64_t v;
        if (atomic_load_explicit(&c->gen, memory_order_acquire) != gen)
            continue;
        v = atomic_load_explicit(&c->value, memory_order_relaxed);
        if (c->written_gen == gen && v == c->last_written)
            continue;
        if (client_push_counter(c->name, v) != GPUFL_OK)
            continue; /* dropped and counted; retried next tick */
        c->last_written = v;
        c->written_gen = gen;
    }
}

static void *sampler_main(void *arg)
{
    uint64_t interval = (uint64_t)g_client.cfg.system_interval_ms * 1000000ull;
    uint64_t next = clock_mono_ns();
    (void)arg;
    while (!atomic_load(&g_client.stop_sampler)) {
        uint64_t now = clock_mono_ns();
        if (now >= next) {
            if (interval)
                sample_once();
            sample_counters();
            /* catch up without bursts after a long NVML stall */
            next += interval ? interval : 1000000000ull;
            if (next <= now)
                next = now + (interval ? interval : 1000000000ull);
        }
        /* sleep until the next sample; sampler_stop() wakes us through
         * the same futex word, so an idle session costs one wakeup per
         * interval and shutdown is still immediate */
        uint64_t wait = next > now ? next - now : 0;
        struct timespec ts = { (time_t)(wait / 1000000000ull),
                               (long)(wait % 1000000000ull) };
        if (wait)
            syscall(SYS_futex, &g_client.stop_sampler, FUTEX_WAIT_PRIVATE, 0,
                    &ts, NULL, 0);
    }
    /* a final sample so short sessions still have one, and final counters */
    if (interval)
        sample_once();
    sample_counters();
    return NULL;
}

int sampler_start(void)
{
    memset(was_lost, 0, sizeof was_lost); /* per session */
    if (!strncmp(g_client.host_status, "on", 2)) {
        host = src_host_open(g_client.cfg.proc_root);
        if (!host)
            snprintf(g_client.host_status, sizeof g_client.host_status,
                     "off: out of memory");
    }
    atomic_store(&g_client.stop_sampler, 0);
    if (pthread_create(&g_client.sampler, NULL, sampler_main, NULL) != 0) {
        client_set_error("cannot start the sampler thread");
        return GPUFL_ENOMEM;
    }
    g_client.sampler_started = 1;
    return 0;
}

void sampler_stop(void)
{
    if (g_client.sampler_started) {
        atomic_store(&g_client.stop_sampler, 1);
        syscall(SYS_futex, &g_client.stop_sampler, FUTEX_WAKE_PRIVATE, 1, NULL,
                NULL, 0);
        pthread_join(g_client.sampler, NULL);
        g_client.sampler_started = 0;
    }
    src_host_close(host);
    host = NULL;
}
