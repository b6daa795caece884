/*
 * sim_int.h - the simulated GPU's shared state: the kernel catalog, the
 * scope names, and the state that the training loop (sim_loop.c) and the
 * source around it (source_sim.c: devices, metrics, lifecycle) share.
 */
#ifndef GPUFL_CLIENT_SIM_INT_H
#define GPUFL_CLIENT_SIM_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "client_int.h"
#include "occupancy.h"

#define SIM_LAYERS 6
#define SIM_STEPS_PER_EPOCH 100
#define SIM_STREAM 7 /* the compute stream id, as CUDA numbers them */
#define SIM_COPY_STREAM 13
#define SIM_CONTEXT_BYTES (512ull << 20)

_Static_assert(SIM_PERTURB_MEM_MAX <= (20ull << 30),
               "the extra allocation fits between the workspace and the "
               "next device's addresses");

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

_Static_assert(K_COUNT <= 32, "a perturbation's kernels are a 32-bit mask");

extern sim_kernel sim_catalog[K_COUNT];

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

extern const char *const sim_scope_names[S_COUNT];

#define N_STALLS 8
extern const char *const sim_stall_names[N_STALLS];

typedef struct sim_dev_stats {
    _Atomic uint64_t busy_ns;    /* sum of kernel time, this device */
    _Atomic uint64_t fill_ns;    /* busy_ns weighted by SM fill */
    _Atomic uint64_t mem_bytes;  /* allocated device memory */
    _Atomic uint64_t copy_bytes; /* bytes over PCIe */
} sim_dev_stats;

typedef struct sim {
    src_config cfg;
    uint32_t ndev;
    gpu_device dev[GPU_MAX_DEVICES];
    occ_arch arch;
    sim_dev_stats stats[GPU_MAX_DEVICES];
    pthread_t thread;
    int started;
    _Atomic int stop;
    _Atomic uint64_t now; /* simulated CPU clock, ns */
    _Atomic uint64_t steps_done;
    uint64_t t0_sim, t0_real;
    uint64_t rng;
    uint64_t stream_free[GPU_MAX_DEVICES];
    uint32_t corr;
    uint32_t scope_id[S_COUNT];
    uint32_t stall_id[N_STALLS];
    uint32_t file_id;
    /* GPUFL_SIM_PERTURB (sim_perturb.h): the kernels each kernel= item
     * names (bit k: sim_catalog[k]) and the duration factor of each kernel
     * in the step being played */
    uint32_t perturb_mask[SIM_PERTURB_KERNELS_MAX];
    double kfactor[K_COUNT];
    /* metrics (sampler thread only) */
    uint64_t m_last_now, m_last_busy[GPU_MAX_DEVICES],
        m_last_fill[GPU_MAX_DEVICES];
    uint64_t m_last_copy[GPU_MAX_DEVICES];
    double m_temp[GPU_MAX_DEVICES];
    uint64_t m_energy[GPU_MAX_DEVICES];
} sim;

/* xorshift64*: deterministic and seedable. */
static inline uint64_t rnd(sim *s)
{
    uint64_t x = s->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    s->rng = x;
    return x * 2685821657736338717ull;
}

/* Uniform in [lo, hi). */
static inline double rndf(sim *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(rnd(s) >> 11) / 9007199254740992.0;
}

/* The simulated CPU clock. */
static inline uint64_t cpu_now(sim *s)
{
    return atomic_load_explicit(&s->now, memory_order_relaxed);
}

/* The training loop's thread (sim_loop.c). */
void *sim_loop_main(void *arg);

#endif
