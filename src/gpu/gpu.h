/*
 * gpu.h - src/gpu, the GPU device layer shared by libgpufl (the "nvml"
 * engine, src/client/source_nvml.c) and the idle detector (src/idle): what
 * a device is, what one sample of it holds, and reading both from the
 * NVIDIA Management Library.
 *
 * NVML is loaded at run time (dlopen), so programs that link this module
 * build and run on machines without a driver; nvml.c owns NVML's lifetime
 * in the process, the choice among its versioned symbols and the
 * translation of its answers; nvml_procs.c the per-GPU process lists, whose
 * calls changed shape across drivers.  Absent is not zero: a field NVML
 * cannot read (NOT_SUPPORTED, no permission, missing symbol) leaves its
 * GS_* bit clear.
 *
 * Thread contract: a gpu_nvml handle is used by one thread at a time
 * (open, devices, sample, close); sample may block for a while (NVML can).
 * Nothing here prints or exits; failures come back as gpufl_err codes with
 * a reason in words ("nvml: libnvidia-ml.so.1 not found").
 */
#ifndef GPUFL_GPU_GPU_H
#define GPUFL_GPU_GPU_H

#include <stddef.h>
#include <stdint.h>

#define GPU_MAX_DEVICES 16
#define GPU_MAX_PROCS 64 /* processes listed per device sample */
#define GPU_MAX_MIG 8    /* MIG devices read per GPU (7 on A100/H100) */

/* Static properties of a device (the client's session header "devices"
 * array, `gpufl idle`'s GPU list). */
typedef struct gpu_device {
    uint32_t id; /* index as the session numbers it */
    char name[96];
    char uuid[96];           /* "GPU-..." */
    char pci_bus_id[32];     /* "00000000:3B:00.0" */
    char driver[80];         /* driver version, "" = unknown */
    int cc_major, cc_minor;  /* compute capability, 0 = unknown */
    uint32_t sm_count;       /* 0 = unknown */
    uint64_t mem_total;      /* bytes, 0 = unknown */
    uint32_t power_limit_mw; /* 0 = unknown */
    uint32_t max_sm_clock_mhz, max_mem_clock_mhz;
    uint32_t mem_bus_width; /* bits, 0 = unknown */
    uint32_t max_threads_per_sm, max_blocks_per_sm;
    uint32_t regs_per_sm, smem_per_sm, smem_per_block_optin;
    int simulated;
    /* `gpufl idle`'s per-instance view of a GPU in MIG mode: this entry
     * is GPU instance gi of GPU id (MIG device mig_uuid); 0 for a GPU */
    int mig;
    uint32_t gi;
    char mig_uuid[96];
} gpu_device;

/* Which fields of a gpu_sample hold data (absent fields are not written). */
enum {
    GS_UTIL_GPU = 1u << 0,
    GS_UTIL_MEM = 1u << 1,
    GS_MEM = 1u << 2, /* mem_used + mem_total */
    GS_TEMP = 1u << 3,
    GS_POWER = 1u << 4,
    GS_POWER_LIMIT = 1u << 5,
    GS_FAN = 1u << 6,
    GS_CLOCKS = 1u << 7, /* clk_sm, clk_mem, clk_gfx */
    GS_THROTTLE = 1u << 8,
    GS_PCIE = 1u << 9, /* pcie_tx_kbps, pcie_rx_kbps */
    GS_ECC = 1u << 10, /* ecc_corrected, ecc_uncorrected */
    GS_ENERGY = 1u << 11,
    GS_PSTATE = 1u << 12,
    GS_SM_ACTIVE = 1u << 13, /* from GPM (Hopper+) or DCGM */
    GS_SM_OCC = 1u << 14,
    GS_PROCS = 1u << 15, /* nprocs/procs valid (may be 0 processes) */
    GS_MEM_RESERVED = 1u << 16,
    GS_LOST = 1u << 17, /* the device is gone (fell off the bus): no field */
    GS_PROC_UTIL = 1u << 18, /* gpu_proc.sm_util and busy_us valid */
    GS_MIG = 1u << 19        /* MIG mode on: nmig/mig valid (may be 0) */
};

#define GPU_PROC_NO_GI UINT32_MAX /* gpu_proc.gi: not MIG, or unknown */

typedef struct gpu_proc {
    uint32_t pid;
    uint64_t mem; /* bytes; UINT64_MAX = not available */
    uint32_t gi;  /* MIG GPU instance the process runs in, GPU_PROC_NO_GI */
    /* From NVML's per-process samples since the previous gpu_sample
     * (GS_PROC_UTIL): the mean SM utilisation (percent) and the time the
     * process kept the SMs busy, sum of smUtil x sampling period. */
    uint32_t sm_util;
    uint64_t busy_us;
    /* a Multi-Process Service client: listed by
     * nvmlDeviceGetMPSComputeRunningProcesses_v3, its kernels run in the
     * MPS server's context */
    uint8_t mps;
} gpu_proc;

/* One MIG device (a compute instance of a GPU instance) of a GPU in MIG
 * mode, read through its own NVML handle.  present uses the GS_* bits:
 * GS_MEM (the instance's memory), GS_SM_ACTIVE (GPM per GPU instance,
 * nvmlGpmMigSampleGet: Hopper and newer), GS_PROCS (nprocs: the
 * processes of gpu_sample.procs in this instance).  NVML has no
 * per-instance utilisation (nvmlDeviceGetProcessUtilization: "On
 * MIG-enabled GPUs, querying process utilization is not currently
 * supported"; NVIDIA/DCGM#58), so there is no GS_UTIL_GPU here. */
typedef struct gpu_mig {
    uint32_t gi, ci; /* GPU and compute instance ids */
    uint32_t present;
    uint64_t mem_used, mem_total; /* bytes */
    double sm_active;             /* ratio 0..1 */
    uint32_t nprocs;
    char uuid[96]; /* "MIG-..." */
} gpu_mig;

typedef struct gpu_sample {
    uint32_t dev;                 /* gpu_device.id */
    uint32_t present;             /* GS_* bits */
    uint32_t util_gpu, util_mem;  /* percent */
    uint64_t mem_used, mem_total; /* bytes */
    uint64_t mem_reserved;        /* bytes */
    int32_t temp_c;
    uint32_t power_mw, power_limit_mw;
    uint32_t fan_pct;
    uint32_t clk_sm, clk_mem, clk_gfx; /* MHz */
    uint64_t throttle;                 /* NVML clock-event reason bits */
    uint32_t pcie_tx_kbps, pcie_rx_kbps;
    uint64_t ecc_corrected, ecc_uncorrected; /* volatile counts */
    uint64_t energy_mj;                      /* since driver load */
    int32_t pstate;                          /* 0..15 */
    double sm_active, sm_occupancy;          /* ratio 0..1 */
    uint32_t nprocs;                         /* <= GPU_MAX_PROCS */
    uint32_t nprocs_total; /* as reported, may exceed nprocs */
    gpu_proc procs[GPU_MAX_PROCS];
    uint32_t nmig; /* GS_MIG: the MIG devices found, in index order */
    gpu_mig mig[GPU_MAX_MIG];
} gpu_sample;

/* ---- NVML (nvml.c, nvml_procs.c) ---- */

typedef struct gpu_nvml gpu_nvml;

/*
 * Load NVML (lib: a soname searched the usual way or a path; NULL =
 * "libnvidia-ml.so.1"), initialise it and list the devices (at most
 * GPU_MAX_DEVICES).  Returns 0 and *out (owned by the caller: close it with
 * gpu_nvml_close), or GPUFL_EUNAVAIL / GPUFL_ENOMEM with the reason in
 * why[0, whylen) and *out = NULL.
 */
int gpu_nvml_open(gpu_nvml **out, const char *lib, char *why, size_t whylen);

/* The devices found at open, copied into out (up to max): the count. */
int gpu_nvml_devices(const gpu_nvml *s, gpu_device *out, int max);

/* One sample per device into out (up to max), *n = filled; 0, or
 * GPUFL_EINVAL for a NULL argument.  A device that fell off the bus is
 * reported with GS_LOST and no field.  Allocates only when a GPU runs more
 * processes than ever before. */
int gpu_nvml_sample(gpu_nvml *s, gpu_sample *out, int max, int *n);

/* Release NVML (shutdown, dlclose) and the handle; NULL is accepted. */
void gpu_nvml_close(gpu_nvml *s);

#endif
