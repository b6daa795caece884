/*
 * sim_loop.c - the simulated GPU's training loop: a transformer's forward,
 * backward and optimizer steps as kernel launches, copies, memsets, syncs,
 * allocations and scopes, on a simulated clock (see source_sim.c for how
 * time and determinism work).  Its thread is started by source_sim.c.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "sim_int.h"

/* Names as CUPTI reports them: cuBLAS/cutlass kernels unmangled, PyTorch
 * and flash-attention templates mangled.  The mangled ones are what g++
 * emits for declarations shaped like PyTorch's and flash-attention's, so
 * c++filt and the C++ runtime read them (tests/client/test_sim_names.c). */
sim_kernel sim_catalog[K_COUNT] = {
    [K_LN] = { "_ZN2at6native12_GLOBAL__N_128vectorized_layer_norm_kernelIN3"
               "c108BFloat16EfEEviT0_PKT_S8_S8_PS5_S9_PS6_",
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
    [K_FLASH_FWD] = { "_ZN5flash16flash_fwd_kernelI23Flash_fwd_kernel_"
                      "traitsILi128E"
                      "Li128ELi64ELi4ELb0ELb0EN7cutlass10bfloat16_tE19Flash_"
                      "kernel_"
                      "traitsILi128ELi128ELi64ELi4ES3_"
                      "EELb0ELb1ELb0ELb0ELb1ELb1ELb0"
                      "ELb0EEEv16Flash_fwd_params",
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
    [K_GELU] = { "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_18Ge"
                 "luCUDAKernelImplERNS_18TensorIteratorBaseENS0_8GeluTypeEENKU"
                 "lvE_clEvENKUlvE_clEvEUlN3c108BFloat16EE_St5arrayIPcLm2EEEEvi"
                 "T0_T1_",
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
    [K_SOFTMAX] = { "_ZN2at6native12_GLOBAL__N_119cunn_"
                    "SoftMaxForwardILi8EN3c108B"
                    "Float16EffNS1_25LogSoftMaxForwardEpilogueEEEvPT2_PKT0_i",
                    { 8192, 1, 1 },
                    { 1024, 1, 1 },
                    40,
                    0,
                    0,
                    0,
                    120 },
    [K_NLL] = { "_ZN2at6native12_GLOBAL__N_138nll_loss_forward_reduce_cuda_ke"
                "rnel_2dIflEEvPT_S4_PKS3_PKT0_S6_blll",
                { 1, 1, 1 },
                { 1024, 1, 1 },
                32,
                4096,
                0,
                0,
                12 },
    [K_LN_BWD] = { "_ZN2at6native12_GLOBAL__N_139layer_norm_grad_input_kernel_"
                   "ve"
                   "ctorizedIN3c108BFloat16EfEEvPKT_S7_PKT0_SA_S7_PS5_i",
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
    [K_FLASH_BWD] = { "_ZN5flash44flash_bwd_dq_dk_dv_loop_seqk_parallel_"
                      "kernelI23Fl"
                      "ash_bwd_kernel_"
                      "traitsILi128ELi64ELi128ELi8ELi2ELi4ELi2ELb0EL"
                      "b0EN7cutlass10bfloat16_tE19Flash_kernel_"
                      "traitsILi128ELi64ELi"
                      "128ELi8ES3_EELb0ELb1ELb0ELb0ELb1ELb1ELb0EEEv16Flash_bwd_"
                      "para"
                      "ms",
                      { 16, 8, 16 },
                      { 256, 1, 1 },
                      255,
                      0,
                      98304,
                      16,
                      520 },
    [K_GELU_BWD] = { "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_"
                     "26Ge"
                     "luBackwardCUDAKernelImplERNS_18TensorIteratorBaseENS0_"
                     "8GeluT"
                     "ypeEENKUlvE_clEvENKUlvE_clEvEUlN3c108BFloat16ES8_E_"
                     "St5arrayI"
                     "PcLm3EEEEviT0_T1_",
                     { 16384, 1, 1 },
                     { 128, 1, 1 },
                     32,
                     0,
                     0,
                     0,
                     30 },
    [K_ADAM] = { "_ZN2at6native12_GLOBAL__N_125multi_tensor_apply_kernelINS1_1"
                 "8TensorListMetadataILi4EEENS1_20FusedAdamMathFunctorIfLi4ELN"
                 "S0_9ADAM_MODEE1ELb0EEEJPfdddddbbS8_S8_EEEvT_T0_DpT1_",
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

const char *const sim_scope_names[S_COUNT] = {
    "epoch", "train_step", "data_loading", "forward",   "block",    "attention",
    "mlp",   "loss",       "backward",     "optimizer", "allreduce"
};

const char *const sim_stall_names[N_STALLS] = {
    "long_scoreboard",  "math_pipe_throttle", "wait",         "barrier",
    "short_scoreboard", "not_selected",       "mio_throttle", "selected"
};

/* ---- the simulated CPU thread and its clock ---- */

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
    sim_kernel *sk = &sim_catalog[k];
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
    uint64_t enter = cpu_now(s);
    cpu_advance(s, 4000 + rnd(s) % 2000); /* the copy API call */
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
    m.api_enter_ns = enter;
    m.api_exit_ns = cpu_now(s);
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
    uint64_t enter = cpu_now(s);
    cpu_advance(s, 4000); /* the memset API call */
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
    m.api_enter_ns = enter;
    m.api_exit_ns = cpu_now(s);
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
            a.func_id = sim_catalog[ks[i]].id;
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

void *sim_loop_main(void *arg)
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
