/*
 * source_sim.c - the simulated GPU: a deterministic, seedable transformer
 * training loop (forward, backward, optimizer; copies, memsets, syncs,
 * allocations; SASS and PC-sampling summaries) on simulated H100-class
 * devices, plus system metrics that follow the simulated load.
 *
 * Used by demos and tests on machines without a GPU.  Everything it
 * produces is marked simulated: the session header's "simulated": true and
 * each device's "simulated": true.
 *
 * Time: the loop runs on a simulated clock anchored at the session clock
 * when it starts.  With speed 1 it sleeps to stay in step with real time
 * (live demos); with speed s it runs s times faster, so tests finish
 * quickly (timestamps then run ahead of the wall clock).  Given the same
 * seed, the sequence of events and their offsets from the start are the
 * same on every run.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "sim_int.h"

static void fill_device(gpu_device *d, uint32_t id)
{
    memset(d, 0, sizeof *d);
    d->id = id;
    snprintf(d->name, sizeof d->name, "Simulated NVIDIA H100 80GB HBM3");
    snprintf(d->uuid, sizeof d->uuid, "GPU-51a1a7ed-0000-4000-8000-%012x", id);
    snprintf(d->pci_bus_id, sizeof d->pci_bus_id, "00000000:%02X:00.0",
             0x18 + 0x10 * id);
    snprintf(d->driver, sizeof d->driver, "simulated");
    d->cc_major = 9;
    d->cc_minor = 0;
    d->sm_count = 132;
    d->mem_total = 85520809984ull;
    d->power_limit_mw = 700000;
    d->max_sm_clock_mhz = 1980;
    d->max_mem_clock_mhz = 2619;
    d->mem_bus_width = 5120;
    d->max_threads_per_sm = 2048;
    d->max_blocks_per_sm = 32;
    d->regs_per_sm = 65536;
    d->smem_per_sm = 233472;
    d->smem_per_block_optin = 232448;
    d->simulated = 1;
}

static int sim_open(void **state, const src_config *cfg, char *why,
                    size_t whylen)
{
    sim *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, whylen, "sim: out of memory");
        return GPUFL_ENOMEM;
    }
    s->cfg = *cfg;
    s->ndev = cfg->sim_devices ? cfg->sim_devices : 1;
    if (s->ndev > GPU_MAX_DEVICES)
        s->ndev = GPU_MAX_DEVICES;
    for (uint32_t i = 0; i < s->ndev; i++) {
        fill_device(&s->dev[i], i);
        s->m_temp[i] = 32.0;
    }
    occ_arch_for_cc(9, 0, &s->arch);
    s->rng = cfg->sim_seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
    if (!s->rng)
        s->rng = 1;
    /* names, and occupancy computed once per kernel shape */
    for (int k = 0; k < K_COUNT; k++) {
        sim_kernel *sk = &sim_catalog[k];
        occ_launch l = { 0 };
        occ_result r;
        sk->id = gpufl_intern(sk->name);
        l.threads = sk->block[0] * sk->block[1] * sk->block[2];
        l.regs = sk->regs;
        l.smem_static = sk->smem_static;
        l.smem_dynamic = sk->smem_dynamic;
        l.optin = sk->smem_static + sk->smem_dynamic > 48 * 1024;
        l.carveout_pct = -1;
        if (occ_compute(&s->arch, &l, &r) == 0) {
            double blocks = (double)sk->grid[0] * sk->grid[1] * sk->grid[2];
            double slots = (double)r.blocks_per_sm * 132.0;
            sk->occ = (float)r.occupancy;
            sk->limiters = r.limiters;
            sk->fill = slots > 0
                           ? (float)(blocks >= slots ? 1.0 : blocks / slots)
                           : 0.0f;
        } else {
            sk->occ = -1.0f;
            sk->fill = 0.5f;
        }
    }
    /* the names are fixed: which kernels each kernel= item slows is known
     * before the first step */
    for (uint32_t i = 0; i < cfg->sim_perturb->n_kernel; i++)
        for (int k = 0; k < K_COUNT; k++)
            if (strstr(sim_catalog[k].name, cfg->sim_perturb->kernel[i].sub))
                s->perturb_mask[i] |= 1u << k;
    for (int i = 0; i < S_COUNT; i++)
        s->scope_id[i] = gpufl_intern(sim_scope_names[i]);
    for (size_t i = 0; i < N_STALLS; i++)
        s->stall_id[i] = gpufl_intern(sim_stall_names[i]);
    s->file_id = gpufl_intern("model/transformer.py");
    *state = s;
    return 0;
}

static int sim_devices(void *state, gpu_device *out, int max)
{
    sim *s = state;
    int n = (int)s->ndev < max ? (int)s->ndev : max;
    memcpy(out, s->dev, (size_t)n * sizeof *out);
    return n;
}

static int sim_start(void *state)
{
    sim *s = state;
    s->t0_real = clock_mono_ns();
    s->t0_sim = client_now();
    atomic_store(&s->now, s->t0_sim);
    s->m_last_now = s->t0_sim;
    for (uint32_t d = 0; d < s->ndev; d++)
        s->stream_free[d] = s->t0_sim;
    if (pthread_create(&s->thread, NULL, sim_loop_main, s) != 0)
        return GPUFL_ENOMEM;
    s->started = 1;
    return 0;
}

/* ---- metrics that follow the simulated load ---- */

static int sim_sample(void *state, gpu_sample *out, int max, int *n)
{
    sim *s = state;
    uint64_t now = cpu_now(s);
    uint64_t span = now > s->m_last_now ? now - s->m_last_now : 0;
    int k = 0;
    for (uint32_t d = 0; d < s->ndev && k < max; d++, k++) {
        gpu_sample *g = &out[k];
        uint64_t busy = atomic_load(&s->stats[d].busy_ns);
        uint64_t fill = atomic_load(&s->stats[d].fill_ns);
        uint64_t cp = atomic_load(&s->stats[d].copy_bytes);
        uint64_t mem = atomic_load(&s->stats[d].mem_bytes);
        double util =
            span ? (double)(busy - s->m_last_busy[d]) / (double)span : 0;
        double act =
            span ? (double)(fill - s->m_last_fill[d]) / (double)span : 0;
        double power_w;
        if (util > 1)
            util = 1;
        if (act > util)
            act = util;
        memset(g, 0, sizeof *g);
        g->dev = d;
        g->present = GS_UTIL_GPU | GS_UTIL_MEM | GS_MEM | GS_TEMP | GS_POWER |
                     GS_POWER_LIMIT | GS_FAN | GS_CLOCKS | GS_THROTTLE |
                     GS_PSTATE | GS_PCIE | GS_ECC | GS_ENERGY | GS_SM_ACTIVE |
                     GS_SM_OCC | GS_PROCS;
        g->util_gpu = (uint32_t)(util * 100.0 + 0.5);
        g->util_mem = (uint32_t)(util * 45.0 + 0.5);
        g->mem_total = s->dev[d].mem_total;
        g->mem_used = mem + SIM_CONTEXT_BYTES;
        /* the seed's measurement: a held context idles near 90 W, a full
         * matmul loop reaches the cap */
        power_w = 90.0 + 580.0 * act + 30.0 * util;
        g->power_mw = (uint32_t)(power_w * 1000.0);
        g->power_limit_mw = s->dev[d].power_limit_mw;
        s->m_temp[d] += (30.0 + 45.0 * act - s->m_temp[d]) * 0.2;
        g->temp_c = (int32_t)(s->m_temp[d] + 0.5);
        g->fan_pct = (uint32_t)(30 + 50 * act);
        g->clk_sm = util > 0.05 ? 1980 : 345;
        g->clk_mem = 2619;
        g->clk_gfx = g->clk_sm;
        g->throttle = util > 0.05 ? 0 : 1; /* GpuIdle */
        g->pstate = util > 0.05 ? 0 : 8;
        g->pcie_tx_kbps = span ? (uint32_t)((double)(cp - s->m_last_copy[d]) /
                                            ((double)span / 1e9) / 1024.0 / 2.0)
                               : 0;
        g->pcie_rx_kbps = g->pcie_tx_kbps;
        s->m_energy[d] += (uint64_t)(power_w * (double)span / 1e6); /* mJ */
        g->energy_mj = s->m_energy[d];
        g->sm_active = act;
        g->sm_occupancy = act * 0.42;
        g->nprocs = 1;
        g->nprocs_total = 1;
        g->procs[0].pid = (uint32_t)getpid();
        g->procs[0].mem = g->mem_used;
        g->procs[0].gi = GPU_PROC_NO_GI;
        s->m_last_busy[d] = busy;
        s->m_last_fill[d] = fill;
        s->m_last_copy[d] = cp;
    }
    s->m_last_now = now;
    *n = k;
    return 0;
}

static void sim_stop_thread(sim *s)
{
    if (s->started) {
        atomic_store(&s->stop, 1);
        pthread_join(s->thread, NULL);
        s->started = 0;
    }
}

/* Flush: the simulated GPU reports synchronously; waiting (up to the
 * timeout) for the loop to finish its configured steps is what "deliver
 * pending" means here. */
static void sim_flush(void *state, uint32_t timeout_ms)
{
    sim *s = state;
    uint64_t deadline = clock_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
    if (s->started && s->cfg.sim_steps) {
        while (atomic_load(&s->steps_done) < s->cfg.sim_steps &&
               !atomic_load(&s->stop) && clock_mono_ns() < deadline) {
            struct timespec ts = { 0, 1000000 };
            nanosleep(&ts, NULL);
        }
    }
}

static void sim_close(void *state)
{
    sim *s = state;
    if (!s)
        return;
    sim_stop_thread(s);
    free(s);
}

const src_ops src_sim_ops = {
    .name = "sim",
    .open = sim_open,
    .devices = sim_devices,
    .start = sim_start,
    .sample = sim_sample,
    .flush = sim_flush,
    .close = sim_close,
};
