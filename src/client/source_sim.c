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

#include "client_int.h"
#include "common/clock.h"
#include "occupancy.h"

#define SIM_LAYERS 6
#define SIM_STEPS_PER_EPOCH 100
#define SIM_STREAM 7 /* the compute stream id, as CUDA numbers them */
#define SIM_COPY_STREAM 13
#define SIM_CONTEXT_BYTES (512ull << 20)

typedef struct sim_kernel {
    const char *name;
    uint32_t grid[3], block[3];
    uint32_t regs, smem_static, smem_dynamic, local_mem;
    uint32_t dur_us; /* mean duration */
    uint32_t id;     /* interned name */
    float occ;
    uint32_t limiters;
    float fill; /* share of SMs it keeps busy */
} sim_kernel;

/* Names as CUPTI reports them: cuBLAS/cutlass kernels unmangled, PyTorch
 * and flash-attention templates mangled. */
enum {
    K_LN,
    K_QKV,
    K_FLASH_FWD,
    K_OPROJ,
    K_ADD,
    K_UP,
    K_GELU,
    K_DOWN,
    K_SOFTMAX,
    K_NLL,
    K_LN_BWD,
    K_DGRAD,
    K_WGRAD,
    K_FLASH_BWD,
    K_GELU_BWD,
    K_ADAM,
    K_FILL,
    K_ALLREDUCE,
    K_COUNT
};

static sim_kernel catalog[K_COUNT] = {
    [K_LN] = { "_ZN2at6native53_GLOBAL__N__layer_norm_kernel_cu_vectorized_"
               "layer_norm_kernelIN3c108BFloat16EfEEviT0_PKT_S8_S8_PS5_S9_PS6_",
               { 8192, 1, 1 },
               { 256, 1, 1 },
               30,
               0,
               0,
               0,
               14 },
    [K_QKV] = { "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_"
                "warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
                { 24, 16, 1 },
                { 384, 1, 1 },
                168,
                0,
                213000,
                0,
                180 },
    [K_FLASH_FWD] = { "_ZN5flash15flash_fwd_kernelI23Flash_fwd_kernel_"
                      "traitsILi128ELi128ELi64ELi4ELb0ELb0EN7cutlass10bfloat16_"
                      "tE19Flash_kernel_traitsILi128ELi128ELi64ELi4ES4_"
                      "EELb0ELb1ELb0ELb0ELb1ELb1ELb0ELb0EEEv16Flash_fwd_params",
                      { 8, 16, 8 },
                      { 128, 1, 1 },
                      255,
                      0,
                      49152,
                      0,
                      240 },
    [K_OPROJ] = { "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_"
                  "warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
                  { 16, 16, 1 },
                  { 256, 1, 1 },
                  154,
                  0,
                  147456,
                  0,
                  70 },
    [K_ADD] = { "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_"
                "15CUDAFunctor_addIN3c108BFloat16EEESt5arrayIPcLm3EEEEviT0_T1_",
                { 4096, 1, 1 },
                { 128, 1, 1 },
                22,
                0,
                0,
                0,
                9 },
    [K_UP] = { "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_"
               "warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
               { 32, 16, 1 },
               { 384, 1, 1 },
               168,
               0,
               213000,
               0,
               260 },
    [K_GELU] = { "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_"
                 "19GeluCUDAKernelImplERNS_18TensorIteratorBaseENS0_"
                 "13GeluTypeEENKUlvE0_clEvENKUlvE2_clEvEUlN3c108BFloat16EE_"
                 "St5arrayIPcLm2EEEEviT0_T1_",
                 { 16384, 1, 1 },
                 { 128, 1, 1 },
                 26,
                 0,
                 0,
                 0,
                 22 },
    [K_DOWN] = { "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_"
                 "warpgroupsize1x1x1_execute_segment_k_on_kernel__5x_cublas",
                 { 16, 16, 2 },
                 { 256, 1, 1 },
                 154,
                 0,
                 147456,
                 0,
                 250 },
    [K_SOFTMAX] = { "_ZN2at6native43_GLOBAL__N__SoftMax_cu_cunn_"
                    "SoftMaxForwardILi8EN3c108BFloat16EffNS1_"
                    "22LogSoftMaxForwardEpilogueEEEvPT2_PKT0_i",
                    { 8192, 1, 1 },
                    { 1024, 1, 1 },
                    40,
                    0,
                    0,
                    0,
                    120 },
    [K_NLL] = { "_ZN2at6native61_GLOBAL__N__nll_loss_forward_reduce_cuda_"
                "kernel_2dIfflEEvPT_S3_PKS2_PKT1_S6_biii",
                { 1, 1, 1 },
                { 1024, 1, 1 },
                32,
                4096,
                0,
                0,
                12 },
    [K_LN_BWD] = { "_ZN2at6native53_GLOBAL__N__layer_norm_kernel_cu_layer_norm_"
                   "grad_input_kernel_vectorizedIN3c108BFloat16EfEEvPKT_S6_"
                   "PKT0_S9_S6_PS4_i",
                   { 8192, 1, 1 },
                   { 128, 1, 1 },
                   48,
                   0,
                   2048,
                   0,
                   24 },
    [K_DGRAD] = { "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x256x64_"
                  "warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
                  { 32, 16, 1 },
                  { 384, 1, 1 },
                  168,
                  0,
                  213000,
                  0,
                  270 },
    [K_WGRAD] = { "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64_"
                  "warpgroupsize1x1x1_execute_segment_k_on_kernel__5x_cublas",
                  { 16, 16, 1 },
                  { 256, 1, 1 },
                  154,
                  0,
                  147456,
                  0,
                  230 },
    [K_FLASH_BWD] = { "_ZN5flash25flash_bwd_dq_dk_dv_loop_seqk_parallel_"
                      "kernelI23Flash_bwd_kernel_"
                      "traitsILi128ELi64ELi128ELi8ELi2ELi4ELi2ELb0ELb0EN7cutlas"
                      "s10bfloat16_tE19Flash_kernel_"
                      "traitsILi128ELi64ELi128ELi8ES4_"
                      "EELb0ELb1ELb0ELb0ELb1ELb1ELb0EEEv16Flash_bwd_params",
                      { 16, 8, 16 },
                      { 256, 1, 1 },
                      255,
                      0,
                      98304,
                      16,
                      520 },
    [K_GELU_BWD] = { "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_"
                     "27GeluBackwardCUDAKernelImplERNS_"
                     "18TensorIteratorBaseENS0_13GeluTypeEENKUlvE0_"
                     "clEvENKUlvE2_clEvEUlN3c108BFloat16ES8_E_"
                     "St5arrayIPcLm3EEEEviT0_T1_",
                     { 16384, 1, 1 },
                     { 128, 1, 1 },
                     32,
                     0,
                     0,
                     0,
                     30 },
    [K_ADAM] = { "_ZN2at6native12_GLOBAL__N_125multi_tensor_apply_kernelINS1_"
                 "18TensorListMetadataILi4EEENS1_"
                 "14FusedAdamMathFunctorIfLi4ELNS1_8ADAM_"
                 "MODEE1ELb0EEEJPfdddddbbS7_S7_EEEvT_T0_DpT1_",
                 { 320, 1, 1 },
                 { 512, 1, 1 },
                 64,
                 3072,
                 0,
                 0,
                 95 },
    [K_FILL] = { "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_"
                 "11FillFunctorIN3c108BFloat16EEESt5arrayIPcLm1EEEEviT0_T1_",
                 { 2048, 1, 1 },
                 { 128, 1, 1 },
                 16,
                 0,
                 0,
                 0,
                 6 },
    [K_ALLREDUCE] = { "ncclDevKernel_AllReduce_Sum_bf16_RING_LL("
                      "ncclDevKernelArgsStorage<4096ul>)",
                      { 16, 1, 1 },
                      { 640, 1, 1 },
                      96,
                      0,
                      0,
                      0,
                      900 },
};

static const char *const scope_names[] = {
    "epoch", "train_step", "data_loading", "forward",   "block",    "attention",
    "mlp",   "loss",       "backward",     "optimizer", "allreduce"
};
enum {
    S_EPOCH,
    S_STEP,
    S_DATA,
    S_FWD,
    S_BLOCK,
    S_ATTN,
    S_MLP,
    S_LOSS,
    S_BWD,
    S_OPT,
    S_ALLRED,
    S_COUNT
};

static const char *const stall_names[] = {
    "long_scoreboard",  "math_pipe_throttle", "wait",         "barrier",
    "short_scoreboard", "not_selected",       "mio_throttle", "selected"
};
#define N_STALLS (sizeof stall_names / sizeof stall_names[0])

typedef struct sim_dev_stats {
    _Atomic uint64_t busy_ns;    /* sum of kernel time, this device */
    _Atomic uint64_t fill_ns;    /* busy_ns weighted by SM fill */
    _Atomic uint64_t mem_bytes;  /* allocated device memory */
    _Atomic uint64_t copy_bytes; /* bytes over PCIe */
} sim_dev_stats;

typedef struct sim {
    src_config cfg;
    uint32_t ndev;
    src_device dev[SRC_MAX_DEVICES];
    occ_arch arch;
    sim_dev_stats stats[SRC_MAX_DEVICES];
    pthread_t thread;
    int started;
    _Atomic int stop;
    _Atomic uint64_t now; /* simulated CPU clock, ns */
    _Atomic uint64_t steps_done;
    uint64_t t0_sim, t0_real;
    uint64_t rng;
    uint64_t stream_free[SRC_MAX_DEVICES];
    uint32_t corr;
    uint32_t scope_id[S_COUNT];
    uint32_t stall_id[N_STALLS];
    uint32_t file_id;
    /* metrics (sampler thread only) */
    uint64_t m_last_now, m_last_busy[SRC_MAX_DEVICES],
        m_last_fill[SRC_MAX_DEVICES];
    uint64_t m_last_copy[SRC_MAX_DEVICES];
    double m_temp[SRC_MAX_DEVICES];
    uint64_t m_energy[SRC_MAX_DEVICES];
} sim;

/* xorshift64*: deterministic and seedable. */
static uint64_t rnd(sim *s)
{
    uint64_t x = s->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    s->rng = x;
    return x * 2685821657736338717ull;
}

/* Uniform in [lo, hi). */
static double rndf(sim *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(rnd(s) >> 11) / 9007199254740992.0;
}

static void fill_device(src_device *d, uint32_t id)
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
    if (s->ndev > SRC_MAX_DEVICES)
        s->ndev = SRC_MAX_DEVICES;
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
        sim_kernel *sk = &catalog[k];
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
    for (int i = 0; i < S_COUNT; i++)
        s->scope_id[i] = gpufl_intern(scope_names[i]);
    for (size_t i = 0; i < N_STALLS; i++)
        s->stall_id[i] = gpufl_intern(stall_names[i]);
    s->file_id = gpufl_intern("model/transformer.py");
    *state = s;
    return 0;
}

static int sim_devices(void *state, src_device *out, int max)
{
    sim *s = state;
    int n = (int)s->ndev < max ? (int)s->ndev : max;
    memcpy(out, s->dev, (size_t)n * sizeof *out);
    return n;
}

/* ---- the simulated CPU thread and its clock ---- */

static uint64_t cpu_now(sim *s)
{
    return atomic_load_explicit(&s->now, memory_order_relaxed);
}

/* Advance the CPU clock; at speed 1 sleep so simulated time never runs
 * ahead of real time (what a live demo needs). */
static void cpu_advance(sim *s, uint64_t ns)
{
    uint64_t t = cpu_now(s) + ns;
    atomic_store_explicit(&s->now, t, memory_order_relaxed);
    {
        double sim_elapsed = (double)(t - s->t0_sim) / s->cfg.sim_speed;
        uint64_t real_elapsed = clock_mono_ns() - s->t0_real;
        if (sim_elapsed > (double)real_elapsed + 2e6) {
            uint64_t d = (uint64_t)sim_elapsed - real_elapsed;
            struct timespec ts = { (time_t)(d / 1000000000ull),
                                   (long)(d % 1000000000ull) };
            nanosleep(&ts, NULL);
        }
    }
}

static uint64_t scope_in(sim *s, int which)
{
    cpu_advance(s, 300 + rnd(s) % 400);
    return client_scope_begin_at(s->scope_id[which], cpu_now(s));
}

static void scope_out(sim *s, uint64_t tok)
{
    cpu_advance(s, 200 + rnd(s) % 300);
    client_scope_end_at(tok, cpu_now(s));
}

static void launch(sim *s, int k, uint32_t dev)
{
    sim_kernel *sk = &catalog[k];
    gpufl_kernel g;
    uint64_t enter = cpu_now(s), exit_, start, dur;
    cpu_advance(s, 3000 + rnd(s) % 4000); /* launch API cost */
    exit_ = cpu_now(s);
    start = exit_ + 2000 + rnd(s) % 3000;
    if (start < s->stream_free[dev])
        start = s->stream_free[dev];
    dur = (uint64_t)((double)sk->dur_us * 1000.0 * rndf(s, 0.9, 1.1));
    s->stream_free[dev] = start + dur;
    atomic_fetch_add_explicit(&s->stats[dev].busy_ns, dur,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&s->stats[dev].fill_ns,
                              (uint64_t)((double)dur * sk->fill),
                              memory_order_relaxed);
    memset(&g, 0, sizeof g);
    g.sz = sizeof g;
    g.name_id = sk->id;
    g.device = dev;
    g.stream = SIM_STREAM;
    g.corr = ++s->corr;
    memcpy(g.grid, sk->grid, sizeof g.grid);
    memcpy(g.block, sk->block, sizeof g.block);
    g.regs = sk->regs;
    g.smem_static = sk->smem_static;
    g.smem_dynamic = sk->smem_dynamic;
    g.local_mem = sk->local_mem;
    g.start_ns = start;
    g.end_ns = start + dur;
    g.api_enter_ns = enter;
    g.api_exit_ns = exit_;
    g.occupancy = sk->occ;
    g.limiters = sk->limiters;
    gpufl_record_kernel(&g);
    cpu_advance(s, 500 + rnd(s) % 1500); /* framework overhead */
}

static void copy(sim *s, uint32_t dev, uint32_t kind, uint64_t bytes, int async)
{
    gpufl_memcpy m;
    double gbps = kind == GPUFL_COPY_DTOD ? 1800.0 : rndf(s, 22.0, 26.0);
    uint64_t start, dur = 1500 + (uint64_t)((double)bytes / gbps);
    cpu_advance(s, 4000 + rnd(s) % 2000);
    start = cpu_now(s) + 1500;
    if (start < s->stream_free[dev])
        start = s->stream_free[dev];
    s->stream_free[dev] = start + dur;
    atomic_fetch_add_explicit(&s->stats[dev].copy_bytes, bytes,
                              memory_order_relaxed);
    memset(&m, 0, sizeof m);
    m.sz = sizeof m;
    m.kind = kind;
    m.device = dev;
    m.dst_device = dev;
    m.stream = SIM_STREAM;
    m.corr = ++s->corr;
    m.flags = (async ? GPUFL_MEMCPY_ASYNC : 0) | GPUFL_MEMCPY_PINNED;
    m.bytes = bytes;
    m.start_ns = start;
    m.end_ns = start + dur;
    gpufl_record_memcpy(&m);
    if (!async)
        atomic_store(&s->now, s->stream_free[dev] > cpu_now(s)
                                  ? s->stream_free[dev]
                                  : cpu_now(s));
}

static void sync_stream(sim *s, uint32_t dev)
{
    gpufl_sync y;
    uint64_t start = cpu_now(s);
    uint64_t end = s->stream_free[dev] > start ? s->stream_free[dev] : start;
    end += 1000;
    memset(&y, 0, sizeof y);
    y.sz = sizeof y;
    y.kind = GPUFL_SYNC_STREAM;
    y.device = dev;
    y.stream = SIM_STREAM;
    y.corr = ++s->corr;
    y.start_ns = start;
    y.end_ns = end;
    gpufl_record_sync(&y);
    cpu_advance(s, end - start);
}

static void memop(sim *s, uint32_t dev, int is_free, uint64_t addr,
                  uint64_t bytes)
{
    gpufl_memop m;
    memset(&m, 0, sizeof m);
    m.sz = sizeof m;
    m.is_free = (uint32_t)is_free;
    m.kind = GPUFL_MEM_DEVICE;
    m.device = dev;
    m.corr = ++s->corr;
    m.address = addr;
    m.bytes = bytes;
    cpu_advance(s, 20000 + rnd(s) % 30000);
    m.ts_ns = cpu_now(s);
    gpufl_record_memop(&m);
    if (is_free)
        atomic_fetch_sub(&s->stats[dev].mem_bytes, bytes);
    else
        atomic_fetch_add(&s->stats[dev].mem_bytes, bytes);
}

static void memset_grads(sim *s, uint32_t dev)
{
    gpufl_memset m;
    uint64_t start, dur = 60000 + rnd(s) % 10000;
    cpu_advance(s, 4000);
    start = cpu_now(s) + 1500;
    if (start < s->stream_free[dev])
        start = s->stream_free[dev];
    s->stream_free[dev] = start + dur;
    memset(&m, 0, sizeof m);
    m.sz = sizeof m;
    m.device = dev;
    m.stream = SIM_STREAM;
    m.corr = ++s->corr;
    m.bytes = 248ull << 20;
    m.start_ns = start;
    m.end_ns = start + dur;
    gpufl_record_memset(&m);
}

/* SASS metrics and PC-sampling stall summaries for the two heaviest
 * kernels, as the profiling engines would report them per scope. */
static void profile_samples(sim *s)
{
    static const int ks[] = { K_UP, K_FLASH_FWD };
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        for (uint32_t pc = 0; pc < 8; pc++) {
            gpufl_sass a;
            gpufl_pcsamp p;
            uint64_t inst = 40000 + rnd(s) % 20000;
            double div =
                ks[i] == K_FLASH_FWD && pc == 5 ? 0.35 : rndf(s, 0.0, 0.04);
            double coal = pc == 3 ? 0.25 : rndf(s, 0.9, 1.0);
            memset(&a, 0, sizeof a);
            a.sz = sizeof a;
            a.func_id = catalog[ks[i]].id;
            a.file_id = s->file_id;
            a.line = 40 + pc * 3 + (uint32_t)i * 100;
            a.pc = 0x80 + pc * 0x10;
            a.inst_executed = inst;
            a.thread_inst_executed =
                (uint64_t)((double)inst * 32.0 * (1.0 - div));
            a.gmem_sectors_ideal = inst / 4;
            a.gmem_sectors = (uint64_t)((double)(inst / 4) / coal);
            gpufl_record_sass(&a);
            memset(&p, 0, sizeof p);
            p.sz = sizeof p;
            p.func_id = a.func_id;
            p.file_id = a.file_id;
            p.line = a.line;
            p.pc = a.pc;
            p.n_reasons = 4;
            for (uint32_t r = 0; r < 4; r++) {
                uint32_t which = (uint32_t)((pc + r * 3 + i) % N_STALLS);
                p.reason_id[r] = s->stall_id[which];
                p.samples[r] = (uint32_t)(rnd(s) % (r == 0 ? 900 : 200)) + 1;
            }
            gpufl_record_pcsamp(&p);
        }
    }
}

static void train_step(sim *s, uint64_t step)
{
    uint64_t t_step = scope_in(s, S_STEP), t;
    uint32_t nd = s->ndev;

    t = scope_in(s, S_DATA);
    cpu_advance(s, 6000000 + rnd(s) % 4000000); /* tokenizer/collate on CPU */
    for (uint32_t d = 0; d < nd; d++)
        copy(s, d, GPUFL_COPY_HTOD, 8 * 1024 * 8 * 2, 1);
    scope_out(s, t);

    t = scope_in(s, S_FWD);
    for (uint32_t d = 0; d < nd; d++) {
        for (int l = 0; l < SIM_LAYERS; l++) {
            uint64_t b = scope_in(s, S_BLOCK), a;
            a = scope_in(s, S_ATTN);
            launch(s, K_LN, d);
            launch(s, K_QKV, d);
            launch(s, K_FLASH_FWD, d);
            launch(s, K_OPROJ, d);
            launch(s, K_ADD, d);
            scope_out(s, a);
            a = scope_in(s, S_MLP);
            launch(s, K_LN, d);
            launch(s, K_UP, d);
            launch(s, K_GELU, d);
            launch(s, K_DOWN, d);
            launch(s, K_ADD, d);
            scope_out(s, a);
            scope_out(s, b);
        }
    }
    if (step % 20 == 0)
        profile_samples(s);
    scope_out(s, t);

    t = scope_in(s, S_LOSS);
    for (uint32_t d = 0; d < nd; d++) {
        launch(s, K_SOFTMAX, d);
        launch(s, K_NLL, d);
    }
    scope_out(s, t);

    t = scope_in(s, S_BWD);
    for (uint32_t d = 0; d < nd; d++) {
        memset_grads(s, d);
        for (int l = 0; l < SIM_LAYERS; l++) {
            launch(s, K_ADD, d);
            launch(s, K_DGRAD, d);
            launch(s, K_WGRAD, d);
            launch(s, K_GELU_BWD, d);
            launch(s, K_DGRAD, d);
            launch(s, K_WGRAD, d);
            launch(s, K_LN_BWD, d);
            launch(s, K_FLASH_BWD, d);
            launch(s, K_DGRAD, d);
            launch(s, K_WGRAD, d);
            launch(s, K_LN_BWD, d);
        }
    }
    scope_out(s, t);

    t = scope_in(s, S_OPT);
    if (nd > 1) {
        uint64_t a = scope_in(s, S_ALLRED);
        for (uint32_t d = 0; d < nd; d++)
            launch(s, K_ALLREDUCE, d);
        scope_out(s, a);
    }
    for (uint32_t d = 0; d < nd; d++) {
        for (int c = 0; c < 4; c++)
            launch(s, K_ADAM, d);
        launch(s, K_FILL, d);
    }
    scope_out(s, t);

    for (uint32_t d = 0; d < nd; d++) {
        copy(s, d, GPUFL_COPY_DTOH, 4, 1); /* loss.item() */
        sync_stream(s, d);
    }
    scope_out(s, t_step);
    atomic_fetch_add(&s->steps_done, 1);
}

static void *sim_main(void *arg)
{
    sim *s = arg;
    uint64_t step = 0, epoch_tok = 0;
    const uint64_t base = 0x7f3a00000000ull;
    /* the caching allocator's first blocks: weights, activations, workspace */
    for (uint32_t d = 0; d < s->ndev; d++) {
        memop(s, d, 0, base + ((uint64_t)d << 36), 14ull << 30);
        memop(s, d, 0, base + ((uint64_t)d << 36) + (16ull << 30), 22ull << 30);
        memop(s, d, 0, base + ((uint64_t)d << 36) + (40ull << 30), 2ull << 30);
    }
    while (!atomic_load(&s->stop) &&
           (!s->cfg.sim_steps || step < s->cfg.sim_steps)) {
        if (step % SIM_STEPS_PER_EPOCH == 0) {
            if (epoch_tok)
                scope_out(s, epoch_tok);
            epoch_tok = scope_in(s, S_EPOCH);
        }
        train_step(s, step);
        step++;
    }
    if (epoch_tok)
        scope_out(s, epoch_tok);
    /* workspace freed at the end, the rest lives until the process exits */
    for (uint32_t d = 0; d < s->ndev; d++)
        memop(s, d, 1, base + ((uint64_t)d << 36) + (40ull << 30), 2ull << 30);
    return NULL;
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
    if (pthread_create(&s->thread, NULL, sim_main, s) != 0)
        return GPUFL_ENOMEM;
    s->started = 1;
    return 0;
}

/* ---- metrics that follow the simulated load ---- */

static int sim_sample(void *state, src_gpu_sample *out, int max, int *n)
{
    sim *s = state;
    uint64_t now = cpu_now(s);
    uint64_t span = now > s->m_last_now ? now - s->m_last_now : 0;
    int k = 0;
    for (uint32_t d = 0; d < s->ndev && k < max; d++, k++) {
        src_gpu_sample *g = &out[k];
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
