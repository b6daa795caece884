/*
 * occupancy.h - theoretical occupancy of a kernel launch: how many blocks of
 * it fit on one SM at once given its threads, registers and shared memory,
 * what fraction of the SM's warp slots they fill, and which resources set
 * that number.
 *
 * The algorithm is the host-side calculator of the CUDA 13.0 toolkit
 * (cuda_occupancy.h, cudaOccMaxActiveBlocksPerMultiprocessor), restated in
 * docs/occupancy.md; it needs neither a GPU nor CUDA.
 * Every function is pure over caller-owned structs: thread-safe, no
 * allocation, callable from a CUPTI buffer callback.
 */
#ifndef GPUFL_CLIENT_OCCUPANCY_H
#define GPUFL_CLIENT_OCCUPANCY_H

#include <limits.h>
#include <stdint.h>

#include <gpufl/record.h>

/* A limit that does not constrain (no registers, no shared memory). */
#define OCC_INF INT_MAX

#define OCC_MAX_CARVEOUTS 12

/* Per-architecture parameters.  occ_arch_for_cc() fills them from the
 * table of docs/occupancy.md#per-architecture-parameters; the caller may
 * then overwrite fields with what the device reports (occ_arch_override()),
 * since the device's own values win. */
typedef struct occ_arch {
    int cc_major, cc_minor;
    uint32_t max_threads_block; /* threads per block (1024) */
    uint32_t max_threads_sm;    /* resident threads per SM = warps x 32 */
    uint32_t max_blocks_sm;     /* resident blocks per SM */
    uint32_t regs_sm;           /* 32-bit registers per SM */
    uint32_t regs_block;        /* 32-bit registers per block */
    uint32_t max_regs_thread;   /* per-thread check (256, as the header) */
    uint32_t smem_sm;           /* shared memory per SM, bytes */
    uint32_t smem_block;        /* default per-block limit, bytes (48 KiB) */
    uint32_t smem_optin;        /* opt-in per-block limit, bytes */
    uint32_t smem_reserved;     /* driver's reservation per block, bytes */
    uint32_t smem_gran;         /* shared memory allocation unit, bytes */
    uint32_t barrier_factor;    /* named barriers per block slot; 0 = none */
    uint32_t n_carveouts;       /* <= OCC_MAX_CARVEOUTS */
    uint32_t carveout_kib[OCC_MAX_CARVEOUTS]; /* supported per-SM sizes */
} occ_arch;

/* What a device reports about itself (CUpti_ActivityDevice5, or
 * cuDeviceGetAttribute outside callbacks).  0 = unknown: keep the table. */
typedef struct occ_device {
    uint32_t max_threads_block; /* maxThreadsPerBlock */
    uint32_t max_warps_sm;      /* maxWarpsPerMultiprocessor */
    uint32_t max_blocks_sm;     /* maxBlocksPerMultiprocessor (attr 106) */
    uint32_t regs_sm;           /* maxRegistersPerMultiprocessor */
    uint32_t regs_block;        /* maxRegistersPerBlock */
    uint32_t smem_sm;           /* maxSharedMemoryPerMultiprocessor */
    uint32_t smem_block;        /* maxSharedMemoryPerBlock */
    uint32_t smem_optin;        /* attribute 97, opt-in per-block maximum */
} occ_device;

/* One launch.  Fields come from the kernel record (docs/occupancy.md#inputs). */
typedef struct occ_launch {
    uint32_t threads;       /* per block: blockX * blockY * blockZ */
    uint32_t regs;          /* registers per thread */
    uint32_t smem_static;   /* bytes per block */
    uint32_t smem_dynamic;  /* bytes per block */
    int optin;              /* non-zero: the function opted in above the
                             * 48 KiB default (shmemLimitConfig == OPTIN);
                             * its maximum dynamic size is taken to be
                             * smem_optin - smem_static */
    int carveout_pct;       /* requested carveout 0..100; negative = none */
    uint32_t smem_executed; /* per-SM bytes the driver configured
                             * (sharedMemoryExecuted); 0 = unknown, and then
                             * launched occupancy is not computed */
    uint32_t barriers;      /* named barriers per block; 0 = no barrier
                             * limit.  CUPTI does not record it: gpufl
                             * passes 0. */
} occ_launch;

typedef struct occ_result {
    int blocks_per_sm; /* resident blocks per SM; 0 = cannot launch */
    int active_warps;  /* blocks_per_sm x warps per block */
    int max_warps;     /* warp slots per SM */
    double occupancy;  /* active_warps / max_warps, 0..1 */
    /* GPUFL_LIMIT_* of every limit equal to the result (several can tie) */
    uint32_t limiters;
    /* blocks each resource alone allows; OCC_INF where it does not
     * constrain */
    int limit_warps, limit_regs, limit_smem, limit_blocks, limit_barriers;
    uint64_t regs_per_block; /* registers allocated per block */
    /* shared memory allocated per block, bytes, the driver's reservation
     * included */
    uint64_t smem_per_block;
    /* per-SM shared memory assumed, bytes (0 when the block cannot launch) */
    uint64_t smem_config;
    int launched_blocks_per_sm; /* with smem_executed; -1 = unknown */
    double launched_occupancy;  /* with smem_executed; < 0 = unknown */
} occ_result;

/* Fill *out with the parameters of compute capability major.minor
 * (docs/occupancy.md#per-architecture-parameters).
 * Returns 0, GPUFL_EINVAL (out NULL) or GPUFL_EUNAVAIL (an architecture the
 * table does not know: before 7.0, or newer than CUDA 13.0). */
int occ_arch_for_cc(int major, int minor, occ_arch *out);

/* Overwrite the fields of *a with the non-zero values of *d (borrowed).
 * Values that cannot be right (warps x 32 beyond 32 bits) are ignored. */
void occ_arch_override(occ_arch *a, const occ_device *d);

/* Theoretical occupancy of launch *l on architecture *a, into *r.
 * Returns 0, or GPUFL_EINVAL for a NULL pointer, 0 threads, a carveout above
 * 100 % or an unusable *a (fewer than 32 threads per SM, allocation unit 0,
 * n_carveouts too large); *r is then zeroed with launched values -1.
 * A launch that cannot fit is not an error: blocks 0, occupancy 0 and the
 * limiter bits of the limits that are 0. */
int occ_compute(const occ_arch *a, const occ_launch *l, occ_result *r);

/* Stable wire name of a limiter bit set: the names "warps", "regs", "smem",
 * "blocks", "barriers" joined with '+' in that order ("warps+regs").  Bits
 * above GPUFL_LIMIT_BARRIERS are ignored; no bit gives "".  Static storage. */
const char *occ_limiter_name(uint32_t limiters);

#endif /* GPUFL_CLIENT_OCCUPANCY_H */
