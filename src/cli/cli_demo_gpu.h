/*
 * cli_demo_gpu.h - `gpufl demo` on a machine with a GPU: is there one, and
 * the CUDA workload built for it (cli_demo_gpu.c).
 */
#ifndef GPUFL_CLI_DEMO_GPU_H
#define GPUFL_CLI_DEMO_GPU_H

#include <stddef.h>

/* Number of CUDA devices the driver (libcuda.so.1, as programs find it)
 * reports; 0 with the reason in why when there is none or no driver. */
int demo_gpu_count(char *why, size_t cap);

/* Builds examples/cuda/demo_cuda.cu (found from bin, the folder of the
 * gpufl binaries: source tree or share/gpufl) with nvcc ($NVCC, PATH,
 * /usr/local/cuda/bin) into outdir, nvcc's output appended to log.
 * GPUFL_DEMO_NVCC_FLAGS adds flags (split at spaces).  An executable newer
 * than its source, built with the same flags, is reused.  0 with the
 * program's path in exe; -1 with the reason in why. */
int demo_gpu_build(const char *bin, const char *outdir, const char *log,
                   char *exe, size_t cap, char *why, size_t wcap);

#endif
