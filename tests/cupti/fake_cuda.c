/*
 * fake_cuda.c - a fake libcuda.so.1 for GPU-less tests of the "cupti"
 * engine and of injection (docs/cupti-internals.md#testing-without-a-gpu).
 *
 * cuInit does what the real driver does for tools: on the first call it
 * dlopens CUDA_INJECTION64_PATH and calls its InitializeInjection.  Device
 * queries answer as an sm_86 GPU (A10G-like) from the table of
 * docs/occupancy.md#per-architecture-parameters.  Every entry point fails
 * the test (abort) when called from inside a CUPTI callback or from inside
 * InitializeInjection, which is what the engine promises never to do
 * (docs/cupti-internals.md#callbacks).
 *
 * Launch entry points (cuLaunchKernel, cuLaunchKernelEx,
 * cuLaunchCooperativeKernel, and fakecuda_rt_launch for the runtime's
 * __cudaLaunchKernel / cudaLaunchKernel / ExC / cooperative) hand the
 * launch to the fake CUPTI the engine loaded (found by GPUFL_CUPTI_LIB),
 * which fires the callbacks and queues the kernel record.  A CUfunction
 * here is a pointer to the kernel's name.
 *
 * Scripted through FAKECUPTI_SCRIPT: "fail cuinit CODE", "devices N".
 */
#include "client/cupti_abi_int.h"
#include "fake_cupti.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int fail_cuinit, n_devices = 2, initialized, injected_done;
static _Thread_local int in_injection;
static fakecupti_launch_fn h_launch;
static fakecupti_sync_fn h_sync;
static fakecupti_in_callback_fn h_in_cb;
static fakecupti_api_fn h_api;
static void *(*h_ctx)(void);
static pthread_mutex_t hook_mu = PTHREAD_MUTEX_INITIALIZER;

static void parse(void)
{
    const char *path = getenv("FAKECUPTI_SCRIPT");
    FILE *f = path ? fopen(path, "r") : NULL;
    char line[256];
    long v;
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "fail cuinit %ld", &v) == 1)
            fail_cuinit = (int)v;
        else if (sscanf(line, "devices %ld", &v) == 1)
            n_devices = (int)v;
    }
    fclose(f);
}

/* The fake CUPTI, once the engine has loaded it (never load it here). */
static void hooks(void)
{
    const char *p = getenv("GPUFL_CUPTI_LIB");
    void *h;
    pthread_mutex_lock(&hook_mu);
    if (!h_launch && p && *p && (h = dlopen(p, RTLD_NOW | RTLD_NOLOAD))) {
        h_sync = (fakecupti_sync_fn)dlsym(h, "fakecupti_sync");
        h_in_cb = (fakecupti_in_callback_fn)dlsym(h, "fakecupti_in_callback");
        h_launch = (fakecupti_launch_fn)dlsym(h, "fakecupti_launch");
        h_api = (fakecupti_api_fn)dlsym(h, "fakecupti_api");
        h_ctx = (void *(*)(void))dlsym(h, "fakecupti_current_context");
        /* the NOLOAD reference is dropped; the engine keeps CUPTI loaded */
        dlclose(h);
    }
    pthread_mutex_unlock(&hook_mu);
}

static void guard(const char *fn)
{
    hooks();
    if ((h_in_cb && h_in_cb()) || in_injection) {
        fprintf(stderr, "fake_cuda: %s called from inside a %s\n", fn,
                in_injection ? "InitializeInjection" : "CUPTI callback");
        abort();
    }
}

EXPORT int cuInit(unsigned flags)
{
    (void)flags;
    pthread_once(&once, parse);
    if (in_injection) {
        fprintf(stderr, "fake_cuda: cuInit re-entered by the tool\n");
        abort();
    }
    if (fail_cuinit)
        return fail_cuinit;
    if (!injected_done) {
        const char *p = getenv("CUDA_INJECTION64_PATH");
        injected_done = 1;
        if (p && *p) {
            void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
            int (*ii)(void) =
                h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
            /* like the driver: a library without the symbol is ignored */
            if (ii) {
                in_injection = 1;
                ii();
                in_injection = 0;
            }
        }
    }
    initialized = 1;
    return 0;
}

static int need_init(const char *fn)
{
    guard(fn);
    return initialized ? 0 : GFL_CUDA_ERROR_NOT_INITIALIZED;
}

EXPORT int cuDriverGetVersion(int *v)
{
    guard("cuDriverGetVersion");
    *v = 13000;
    return 0;
}

EXPORT int cuDeviceGetCount(int *n)
{
    int rc = need_init("cuDeviceGetCount");
    if (rc)
        return rc;
    *n = n_devices;
    return 0;
}

EXPORT int cuDeviceGet(int *d, int ord)
{
    int rc = need_init("cuDeviceGet");
    if (rc)
        return rc;
    if (ord < 0 || ord >= n_devices)
        return 101;
    *d = ord;
    return 0;
}

EXPORT int cuDeviceGetAttribute(int *v, int a, int d)
{
    int rc = need_init("cuDeviceGetAttribute");
    if (rc)
        return rc;
    (void)d;
    switch (a) {
    case GFL_CU_ATTR_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case GFL_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK: *v = 49152; break;
    case GFL_CU_ATTR_MAX_REGISTERS_PER_BLOCK: *v = 65536; break;
    case GFL_CU_ATTR_WARP_SIZE: *v = 32; break;
    case GFL_CU_ATTR_MULTIPROCESSOR_COUNT: *v = 80; break;
    case GFL_CU_ATTR_MAX_THREADS_PER_MULTIPROCESSOR: *v = 1536; break;
    case GFL_CU_ATTR_COMPUTE_CAPABILITY_MAJOR: *v = 8; break;
    case GFL_CU_ATTR_COMPUTE_CAPABILITY_MINOR: *v = 6; break;
    case GFL_CU_ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = 102400; break;
    case GFL_CU_ATTR_MAX_REGISTERS_PER_MULTIPROCESSOR: *v = 65536; break;
    case GFL_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 101376; break;
    case GFL_CU_ATTR_MAX_BLOCKS_PER_MULTIPROCESSOR: *v = 16; break;
    case GFL_CU_ATTR_RESERVED_SHARED_MEMORY_PER_BLOCK: *v = 1024; break;
    default: return 1;
    }
    return 0;
}

EXPORT int cuDeviceGetName(char *name, int len, int d)
{
    int rc = need_init("cuDeviceGetName");
    if (rc)
        return rc;
    snprintf(name, (size_t)len, "Fake NVIDIA A10G #%d", d);
    return 0;
}

EXPORT int cuDeviceGetUuid_v2(gfl_cu_uuid *u, int d)
{
    int rc = need_init("cuDeviceGetUuid_v2");
    if (rc)
        return rc;
    for (int i = 0; i < 16; i++)
        u->bytes[i] = (char)(0x10 * d + i);
    return 0;
}

EXPORT int cuDeviceTotalMem_v2(size_t *b, int d)
{
    int rc = need_init("cuDeviceTotalMem_v2");
    (void)d;
    if (rc)
        return rc;
    *b = 24ull << 30;
    return 0;
}

EXPORT int cuCtxSynchronize(void)
{
    int rc = need_init("cuCtxSynchronize");
    if (rc)
        return rc;
    if (h_sync)
        h_sync();
    return 0;
}

/* The context the fake CUPTI made at the first launch, or none. */
EXPORT int cuCtxGetCurrent(void **ctx)
{
    int rc = need_init("cuCtxGetCurrent");
    if (rc)
        return rc;
    *ctx = h_ctx ? h_ctx() : NULL;
    return 0;
}

static int launch(uint32_t rt, uint32_t drv, const char *f, unsigned gx,
                  unsigned gy, unsigned gz, unsigned bx, unsigned by,
                  unsigned bz, unsigned smem, void *stream)
{
    unsigned g[3] = { gx, gy, gz }, b[3] = { bx, by, bz };
    int rc = need_init("launch");
    if (rc)
        return rc;
    if (h_launch)
        h_launch(rt, drv, f, g, b, smem, stream, 0);
    return 0;
}

EXPORT int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz,
                          unsigned bx, unsigned by, unsigned bz, unsigned smem,
                          void *stream, void **params, void **extra)
{
    (void)params;
    (void)extra;
    return launch(0, GFL_DRV_CBID_cuLaunchKernel, f, gx, gy, gz, bx, by, bz,
                  smem, stream);
}

EXPORT int cuLaunchCooperativeKernel(void *f, unsigned gx, unsigned gy,
                                     unsigned gz, unsigned bx, unsigned by,
                                     unsigned bz, unsigned smem, void *stream,
                                     void **params)
{
    (void)params;
    return launch(0, GFL_DRV_CBID_cuLaunchCooperativeKernel, f, gx, gy, gz, bx,
                  by, bz, smem, stream);
}

EXPORT int cuLaunchKernelEx(const gfl_drv_launch_config *c, void *f,
                            void **params, void **extra)
{
    (void)params;
    (void)extra;
    return launch(0, GFL_DRV_CBID_cuLaunchKernelEx, f, c->grid_x, c->grid_y,
                  c->grid_z, c->block_x, c->block_y, c->block_z,
                  c->shared_mem_bytes, c->h_stream);
}

/* The runtime's launch, as libcudart does it: a runtime API (rt_cbid)
 * implemented on a driver launch (drv_cbid) on the same thread. fail != 0
 * makes the launch return that error (no kernel record). */
EXPORT int fakecuda_rt_launch(uint32_t rt_cbid, uint32_t drv_cbid,
                              const char *f, const unsigned grid[3],
                              const unsigned block[3], unsigned smem,
                              void *stream, int fail)
{
    int rc = need_init("fakecuda_rt_launch");
    if (rc)
        return rc;
    if (h_launch)
        h_launch(rt_cbid, drv_cbid, f, grid, block, smem, stream, fail);
    return fail;
}

/* Device memory "allocations": nothing is allocated; a request of 1 TiB or
 * more fails with CUDA_ERROR_OUT_OF_MEMORY (2), as on a real GPU. */
#define FAKE_OOM_BYTES (1ull << 40)

EXPORT int cuMemAlloc_v2(unsigned long long *dptr, size_t bytes)
{
    int rc = need_init("cuMemAlloc_v2");
    if (rc)
        return rc;
    rc = bytes >= FAKE_OOM_BYTES ? 2 : 0;
    if (h_api)
        h_api(0, GFL_DRV_CBID_cuMemAlloc_v2, NULL, "cuMemAlloc_v2", rc);
    if (dptr)
        *dptr = rc ? 0 : 0x7f0000000000ull;
    return rc;
}

/* The runtime's cudaMalloc, as libcudart does it: cuMemAlloc_v2 inside
 * (the runtime's code for out of memory, cudaErrorMemoryAllocation, is
 * also 2). */
EXPORT int fakecuda_rt_malloc(size_t bytes)
{
    int rc = need_init("fakecuda_rt_malloc");
    if (rc)
        return rc;
    rc = bytes >= FAKE_OOM_BYTES ? 2 : 0;
    if (h_api)
        h_api(GFL_RT_CBID_cudaMalloc_v3020, GFL_DRV_CBID_cuMemAlloc_v2,
              "cudaMalloc", "cuMemAlloc_v2", rc);
    return rc;
}
