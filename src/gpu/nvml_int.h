/*
 * nvml_int.h - the NVML reader's state, shared by its files: nvml.c
 * (loading, devices, samples) and gpu_nvml_procs.c (the per-GPU process lists,
 * whose NVML calls changed shape across drivers).
 */
#ifndef GPUFL_GPU_NVML_INT_H
#define GPUFL_GPU_NVML_INT_H

#include <stdint.h>

#include "nvml_abi_int.h"
#include "gpu.h"

/* ---- resolved entry points ---- */

typedef nvmlReturn_t (*nvml_proc_fn)(nvmlDevice_t, unsigned int *, void *);

typedef struct nvml_fns {
    nvmlReturn_t (*init_with_flags)(unsigned int);
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    const char *(*error_string)(nvmlReturn_t);
    nvmlReturn_t (*driver_version)(char *, unsigned int);
    nvmlReturn_t (*count)(unsigned int *);
    nvmlReturn_t (*handle_by_index)(unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*pci_info)(nvmlDevice_t, nvmlPciInfo_t *);
    nvmlReturn_t (*pci_info_v1)(nvmlDevice_t, nvmlPciInfo_t *);
    nvmlReturn_t (*cuda_cc)(nvmlDevice_t, int *, int *);
    nvmlReturn_t (*mem_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
    nvmlReturn_t (*mem_v1)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*max_clock)(nvmlDevice_t, unsigned int, unsigned int *);
    nvmlReturn_t (*bus_width)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*util)(nvmlDevice_t, nvmlUtilization_t *);
    nvmlReturn_t (*temp_v)(nvmlDevice_t, nvmlTemperature_v1_t *);
    nvmlReturn_t (*temp)(nvmlDevice_t, unsigned int, unsigned int *);
    nvmlReturn_t (*power)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*fan)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*clock)(nvmlDevice_t, unsigned int, unsigned int *);
    nvmlReturn_t (*clock_reasons)(nvmlDevice_t, unsigned long long *);
    nvmlReturn_t (*pstate)(nvmlDevice_t, int *);
    nvmlReturn_t (*pcie)(nvmlDevice_t, unsigned int, unsigned int *);
    nvmlReturn_t (*ecc)(nvmlDevice_t, unsigned int, unsigned int,
                        unsigned long long *);
    nvmlReturn_t (*energy)(nvmlDevice_t, unsigned long long *);
    nvmlReturn_t (*proc_detail)(nvmlDevice_t, nvmlProcessDetailList_v1_t *);
    nvml_proc_fn compute_v3, graphics_v3;
    nvml_proc_fn compute_v2, graphics_v2;
    nvml_proc_fn compute_v1, graphics_v1;
    nvmlReturn_t (*proc_util)(nvmlDevice_t, nvmlProcessUtilizationSample_t *,
                              unsigned int *, unsigned long long);
    nvmlReturn_t (*gpm_support)(nvmlDevice_t, nvmlGpmSupport_t *);
    nvmlReturn_t (*gpm_alloc)(nvmlGpmSample_t *);
    nvmlReturn_t (*gpm_free)(nvmlGpmSample_t);
    nvmlReturn_t (*gpm_get)(nvmlDevice_t, nvmlGpmSample_t);
    nvmlReturn_t (*gpm_metrics)(nvmlGpmMetricsGet_t *);
    nvmlReturn_t (*gpm_mig_get)(nvmlDevice_t, unsigned int, nvmlGpmSample_t);
    nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned int *, unsigned int *);
    nvmlReturn_t (*mig_max)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*mig_handle)(nvmlDevice_t, unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*mig_gi)(nvmlDevice_t, unsigned int *);
    nvmlReturn_t (*mig_ci)(nvmlDevice_t, unsigned int *);
    nvml_proc_fn mps_v3;
} nvml_fns;

#define NVML_FN(m) offsetof(nvml_fns, m)

/* Each entry: where the pointer goes, then the names to try, best first.
 * Only names with the same signature share an entry; an older ABI (memory
 * v1, unversioned process lists) gets its own field. */
/* How process lists are read, best first; a call answering "no such
 * function" or "wrong struct version" moves to the next for good. */
enum { PROC_DETAIL, PROC_V3, PROC_V2, PROC_V1, PROC_NONE };

/* Two GPM samples, taken in turn: metrics come from a pair. */
typedef struct nvml_gpm_pair {
    int have_prev;
    unsigned prev; /* index into s of the older sample */
    uint64_t prev_ns;
    uint32_t gi; /* MIG: the GPU instance the pair samples */
    nvmlGpmSample_t s[2];
} nvml_gpm_pair;

typedef struct nvml_dev {
    nvmlDevice_t h;
    int gpm; /* GPM samples allocated */
    nvml_gpm_pair gp;
    /* MIG: one GPM pair per MIG device index, allocated at open when the
     * GPU is in MIG mode and has GPM (nmig_gpm of them) */
    int nmig_gpm;
    nvml_gpm_pair mig_gp[GPU_MAX_MIG];
    /* process samples: the newest timestamp read, and each listed
     * process's last sample (the start of its next period) */
    uint64_t putil_seen_us;
    uint32_t nputil_last;
    struct {
        uint32_t pid;
        uint64_t ts_us;
    } putil_last[GPU_MAX_PROCS];
} nvml_dev;

struct gpu_nvml {
    void *dl;
    nvml_fns f;
    int inited;
    int ndev;
    int proc_level;
    nvml_dev dev[GPU_MAX_DEVICES];
    gpu_device info[GPU_MAX_DEVICES];
    /* Scratch for process lists, reused by every sample(): raw entries
     * (proc_cap * 32 bytes) and the merged list (2 * proc_cap). */
    unsigned proc_cap;
    unsigned char *proc_raw;
    gpu_proc *proc_all;
    nvmlProcessUtilizationSample_t *putil; /* NVML_PUTIL_CAP, when the
                                               symbol exists */
    nvmlGpmMetricsGet_t gpm_req;
    gpu_sample *mig_procs; /* scratch: one MIG device's process list */
};

/* The device is gone for this sample: report it with no fields. */
static inline int nvml_is_lost(nvmlReturn_t r)
{
    return r == NVML_ERROR_GPU_IS_LOST || r == NVML_ERROR_RESET_REQUIRED;
}

/* Grow the process scratch to hold want entries per list.  The only
 * allocation sample() may do, and only when a GPU runs more processes than
 * ever before.  0 or a gpufl_err. */
int gpu_nvml_proc_reserve(gpu_nvml *s, unsigned want);

/* The GPU's processes (compute and graphics, merged by pid) into o. */
nvmlReturn_t gpu_nvml_procs(gpu_nvml *s, nvmlDevice_t h, gpu_sample *o);

/* MPS clients (nvmlDeviceGetMPSComputeRunningProcesses_v3) into o's
 * list: a listed pid is marked mps, an unlisted one appended. */
nvmlReturn_t gpu_nvml_mps(gpu_nvml *s, nvmlDevice_t h, gpu_sample *o);

/* Busy time and SM utilisation of o's processes from the per-process
 * samples NVML took since the last call (nvml_putil.c). */
nvmlReturn_t gpu_nvml_proc_util(gpu_nvml *s, nvml_dev *d, gpu_sample *o);

#endif
