/*
 * sim_perturb.h - GPUFL_SIM_PERTURB: changes the simulated GPU makes on
 * purpose, so that a demo or a test has a slower kernel, a bigger
 * allocation or a stalled step to find (docs/client.md#perturbations).
 */
#ifndef GPUFL_CLIENT_SIM_PERTURB_H
#define GPUFL_CLIENT_SIM_PERTURB_H

#include <stddef.h>
#include <stdint.h>

/* The whole value, in bytes (it is also written in the session line). */
#define SIM_PERTURB_LEN_MAX 255
/* kernel= items, and stall= items. */
#define SIM_PERTURB_KERNELS_MAX 8
#define SIM_PERTURB_STALLS_MAX 8
/* One kernel= substring, in bytes. */
#define SIM_PERTURB_SUB_MAX 63
/* Largest duration factor, extra allocation and stall. */
/* A factor below 0.01 would make kernels of 0 ns. */
#define SIM_PERTURB_FACTOR_MIN 0.01
#define SIM_PERTURB_FACTOR_MAX 100.0
#define SIM_PERTURB_MEM_MAX (20ull << 30)
#define SIM_PERTURB_STALL_MAX_NS (3600ull * 1000000000ull)

typedef struct sim_perturb_kernel {
    char sub[SIM_PERTURB_SUB_MAX + 1]; /* "" = every kernel */
    double factor;                     /* 0.01 ... 100 */
    uint64_t from_step;                /* 0 = from the first step */
} sim_perturb_kernel;

typedef struct sim_perturb_stall {
    uint64_t ns;
    uint64_t step;
} sim_perturb_stall;

typedef struct sim_perturb {
    uint32_t n_kernel, n_stall;
    sim_perturb_kernel kernel[SIM_PERTURB_KERNELS_MAX];
    sim_perturb_stall stall[SIM_PERTURB_STALLS_MAX];
    uint64_t mem_bytes; /* extra allocation held per device; 0 = none */
} sim_perturb;

/*
 * Parses s ("kernel=gemm:x1.2@10,mem=+2GiB,stall=1.5@20"; NULL or "" = no
 * change) into *p (zeroed first).  0; -1 with why[cap] naming the item
 * and what is allowed (*p then holds no change).
 */
int sim_perturb_parse(const char *s, sim_perturb *p, char *why, size_t cap);

#endif
