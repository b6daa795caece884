/*
 * source.h - the interface every libgpufl data source implements.
 *
 * Two roles, one struct: an activity source (simulated GPU, CUPTI) reports
 * kernels, copies and the rest through include/gpufl/record.h from threads
 * of its own; a metrics source (NVML, the simulated GPU) fills GPU samples
 * when the sampler thread asks.  Devices and samples are the types of
 * src/gpu (gpu.h), which also reads NVML for the "nvml" source
 * (source_nvml.c).  Host CPU/RAM is source_host.c, a separate
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

#include "gpu/gpu.h"

#define SRC_REASON_LEN 256

/* Options a source may read; the client fills it from gpufl_options. */
typedef struct src_config {
    const char *nvml_lib;  /* library path or soname */
    const char *proc_root; /* "/proc" or a test fixture */
    uint64_t sim_seed;
    uint32_t sim_steps;
    uint32_t sim_devices;
    double sim_speed;
    const struct sim_perturb *sim_perturb; /* borrowed; never NULL */
} src_config;

typedef struct src_ops {
    const char *name; /* "sim", "nvml", "cupti" */
    /* Open: on failure return an error and write the reason into why
     * (why is always non-NULL, whylen >= SRC_REASON_LEN). */
    int (*open)(void **state, const src_config *cfg, char *why, size_t whylen);
    /* Static device list; returns the count (<= max). May be NULL. */
    int (*devices)(void *state, gpu_device *out, int max);
    /* Activity sources: start reporting (threads of their own). May be NULL. */
    int (*start)(void *state);
    /* Metrics sources: fill up to max samples, *n = filled.  May be NULL.
     * Called from the sampler thread only; may block for a while (NVML can). */
    int (*sample)(void *state, gpu_sample *out, int max, int *n);
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
    /* all CPUs, 0..100, since the previous call; < 0 on the first call
     * (no interval yet) */
    double cpu_pct;
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
