/*
 * source.h - the interface every libgpufl data source implements.
 *
 * Two roles, one struct: an activity source (simulated GPU, CUPTI) reports
 * kernels, copies and the rest through include/gpufl/record.h from threads
 * of its own; a metrics source (NVML, the simulated GPU) fills GPU samples
 * when the sampler thread asks.  Host CPU/RAM is source_host.c, a separate
 * small interface below, since it exists on every machine.
 *
 * A source never writes files and never prints: it returns data and, when it
 * cannot work, a reason in words that the session header records
 * ("nvml: libnvidia-ml.so.1 not found").
 */
#ifndef GPUFL_CLIENT_SOURCE_H
#define GPUFL_CLIENT_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include <gpufl/gpufl.h>

#define SRC_MAX_DEVICES 16
#define SRC_MAX_PROCS 64 /* processes listed per device sample */
#define SRC_REASON_LEN 256

/* Static properties of a device: the session header's "devices" array. */
typedef struct src_device {
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
} src_device;

/* Which fields of a src_gpu_sample hold data (absent fields are not written). */
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
    GS_LOST = 1u << 17 /* the device is gone (fell off the bus): no field */
};

typedef struct src_proc {
    uint32_t pid;
    uint64_t mem; /* bytes; UINT64_MAX = not available */
} src_proc;

typedef struct src_gpu_sample {
    uint32_t dev;                 /* src_device.id */
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
    uint32_t nprocs;                         /* <= SRC_MAX_PROCS */
    uint32_t nprocs_total; /* as reported, may exceed nprocs */
    src_proc procs[SRC_MAX_PROCS];
} src_gpu_sample;

/* Options a source may read; the client fills it from gpufl_options. */
typedef struct src_config {
    const char *nvml_lib;  /* library path or soname */
    const char *proc_root; /* "/proc" or a test fixture */
    uint64_t sim_seed;
    uint32_t sim_steps;
    uint32_t sim_devices;
    double sim_speed;
} src_config;

typedef struct src_ops {
    const char *name; /* "sim", "nvml", "cupti" */
    /* Open: on failure return an error and write the reason into why
     * (why is always non-NULL, whylen >= SRC_REASON_LEN). */
    int (*open)(void **state, const src_config *cfg, char *why, size_t whylen);
    /* Static device list; returns the count (<= max). May be NULL. */
    int (*devices)(void *state, src_device *out, int max);
    /* Activity sources: start reporting (threads of their own). May be NULL. */
    int (*start)(void *state);
    /* Metrics sources: fill up to max samples, *n = filled.  May be NULL.
     * Called from the sampler thread only; may block for a while (NVML can). */
    int (*sample)(void *state, src_gpu_sample *out, int max, int *n);
    /* Deliver buffered activity now (shutdown, gpufl_flush), waiting at
     * most timeout_ms (0 = do not wait). May be NULL. */
    void (*flush)(void *state, uint32_t timeout_ms);
    /* Stop threads and release everything; state may be NULL. */
    void (*close)(void *state);
} src_ops;

extern const src_ops src_sim_ops;
extern const src_ops src_nvml_ops;
extern const src_ops src_cupti_ops;  /* source_cupti*.c, docs/capture.md */
extern const src_ops src_sass_ops;   /* source_cupti_prof.c, capture.md */
extern const src_ops src_pcsamp_ops; /* source_cupti_prof.c, capture.md */

/* ---- host CPU and memory (source_host.c) ---- */

typedef struct src_host_sample {
    double cpu_pct;     /* all CPUs, 0..100, since the previous call;
                                  < 0 on the first call (no interval yet) */
    uint64_t ram_total; /* bytes */
    uint64_t ram_used;  /* total - MemAvailable (cache not counted) */
    uint64_t swap_used; /* bytes */
    double load1;       /* 1-minute load average */
    uint32_t ncpu;
    double proc_cpu_pct; /* this process, 100 = one core; < 0 first */
    uint64_t proc_rss;   /* this process, bytes */
} src_host_sample;

typedef struct src_host src_host;

/* proc_root: "/proc" or a fixture tree with stat, meminfo, loadavg,
 * self/stat, self/statm.  Returns NULL only on out of memory. */
src_host *src_host_open(const char *proc_root);
/* Returns 0, or GPUFL_EIO when a file could not be read or parsed (fields
 * it did read are still filled; unknown ones are 0 / negative). */
int src_host_sample_now(src_host *h, src_host_sample *out);
void src_host_close(src_host *h);

#endif
