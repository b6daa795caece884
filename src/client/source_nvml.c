/*
 * source_nvml.c - the "nvml" engine: src/gpu's NVML reader (gpu.h) behind
 * the source interface, so that the session lists its devices and the
 * sampler writes its samples as gpu lines.
 */
#include "source.h"

static int nvml_open(void **state, const src_config *cfg, char *why,
                     size_t whylen)
{
    gpu_nvml *s = NULL;
    int err = gpu_nvml_open(&s, cfg ? cfg->nvml_lib : NULL, why, whylen);
    *state = s;
    return err;
}

static int nvml_devices(void *state, gpu_device *out, int max)
{
    return gpu_nvml_devices(state, out, max);
}

static int nvml_sample(void *state, gpu_sample *out, int max, int *n)
{
    return gpu_nvml_sample(state, out, max, n);
}

static void nvml_close(void *state)
{
    gpu_nvml_close(state);
}

const src_ops src_nvml_ops = {
    .name = "nvml",
    .open = nvml_open,
    .devices = nvml_devices,
    .start = NULL,
    .sample = nvml_sample,
    .flush = NULL,
    .close = nvml_close,
};
