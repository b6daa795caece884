/*
 * fake_cudart.c - a fake libcudart.so.13 so that programs compiled by the
 * real nvcc (with -cudart shared) run on GPU-less machines against the
 * fake driver (fake_cuda.c): what `gpufl demo --gpu on` is tested with.
 *
 * nvcc's host code registers each kernel (__cudaRegisterFunction: host
 * stub -> device name) and turns kernel<<<g, b, smem, stream>>>(...) into
 * __cudaPushCallConfiguration, then, in the stub, __cudaGetKernel,
 * __cudaPopCallConfiguration and __cudaLaunchKernel (CUDA 13).  Launches
 * go to the fake driver's fakecuda_rt_launch as a runtime launch
 * (__cudaLaunchKernel, CBID 505) on cuLaunchKernel; the kernel handle is
 * its device name, which is what the fake driver takes as a CUfunction.
 * Kernels do not execute: device memory is host memory and copies are
 * memcpy, so programs must not check results.  The first runtime call
 * initialises the driver (cuInit), as the real runtime does lazily.
 *
 * Symbols carry the version node libcudart.so.13 (fake_cudart.map), as
 * the programs nvcc links ask for.
 */
#include "client/cupti_abi_int.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define FAKE_MAX_FUNCS 256
#define FAKE_MAX_CONFIGS 8

typedef struct dim3 {
    unsigned x, y, z;
} dim3;

typedef struct launch_cfg {
    dim3 grid, block;
    size_t smem;
    void *stream;
} launch_cfg;

int cuInit(unsigned flags);
int cuCtxSynchronize(void);
int fakecuda_rt_launch(uint32_t rt_cbid, uint32_t drv_cbid, const char *f,
                       const unsigned grid[3], const unsigned block[3],
                       unsigned smem, void *stream, int fail);

static struct {
    const void *host;
    const char *name;
} funcs[FAKE_MAX_FUNCS];
static int nfuncs;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int init_rc;
/* <<<>>> pushes, the stub pops: per thread, nested launches are rare */
static _Thread_local launch_cfg cfgs[FAKE_MAX_CONFIGS];
static _Thread_local int ncfg;

static void init_driver(void)
{
    init_rc = cuInit(0);
}

static int lazy_init(void)
{
    pthread_once(&once, init_driver);
    return init_rc;
}

EXPORT void **__cudaRegisterFatBinary(void *fat)
{
    static void *handle;
    handle = fat;
    return &handle;
}

EXPORT void __cudaRegisterFatBinaryEnd(void **h)
{
    (void)h;
}

EXPORT void __cudaUnregisterFatBinary(void **h)
{
    (void)h;
}

EXPORT void __cudaRegisterFunction(void **h, const char *host_fun,
                                   char *device_fun, const char *device_name,
                                   int thread_limit, void *tid, void *bid,
                                   void *bdim, void *gdim, int *wsize)
{
    (void)h;
    (void)device_fun;
    (void)thread_limit;
    (void)tid;
    (void)bid;
    (void)bdim;
    (void)gdim;
    (void)wsize;
    pthread_mutex_lock(&mu);
    if (nfuncs < FAKE_MAX_FUNCS) {
        funcs[nfuncs].host = host_fun;
        funcs[nfuncs].name = device_name;
        nfuncs++;
    }
    pthread_mutex_unlock(&mu);
}

EXPORT unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t smem,
                                            void *stream)
{
    if (ncfg == FAKE_MAX_CONFIGS)
        return 1;
    cfgs[ncfg].grid = grid;
    cfgs[ncfg].block = block;
    cfgs[ncfg].smem = smem;
    cfgs[ncfg].stream = stream;
    ncfg++;
    return 0;
}

EXPORT int __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *smem,
                                      void *stream)
{
    if (!ncfg)
        return 9; /* cudaErrorInvalidConfiguration */
    ncfg--;
    *grid = cfgs[ncfg].grid;
    *block = cfgs[ncfg].block;
    *smem = cfgs[ncfg].smem;
    *(void **)stream = cfgs[ncfg].stream;
    return 0;
}

EXPORT int __cudaGetKernel(void **kernel, const void *host_fun)
{
    const char *name = NULL;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < nfuncs; i++)
        if (funcs[i].host == host_fun)
            name = funcs[i].name;
    pthread_mutex_unlock(&mu);
    *kernel = (void *)name;
    return name ? 0 : 98; /* cudaErrorInvalidDeviceFunction */
}

static int launch(uint32_t cbid, const void *kernel, dim3 g, dim3 b,
                  size_t smem, void *stream)
{
    unsigned grid[3] = { g.x, g.y, g.z }, block[3] = { b.x, b.y, b.z };
    int rc = lazy_init();
    if (rc)
        return 3; /* cudaErrorInitializationError */
    if (!kernel)
        return 98;
    return fakecuda_rt_launch(cbid, GFL_DRV_CBID_cuLaunchKernel,
                              (const char *)kernel, grid, block, (unsigned)smem,
                              stream, 0);
}

EXPORT int __cudaLaunchKernel(const void *kernel, dim3 g, dim3 b, void **args,
                              size_t smem, void *stream)
{
    (void)args;
    return launch(GFL_RT_CBID___cudaLaunchKernel_v13000, kernel, g, b, smem,
                  stream);
}

EXPORT int __cudaLaunchKernel_ptsz(const void *kernel, dim3 g, dim3 b,
                                   void **args, size_t smem, void *stream)
{
    (void)args;
    return launch(GFL_RT_CBID___cudaLaunchKernel_ptsz_v13000, kernel, g, b,
                  smem, stream);
}

/* ---- memory, copies, streams: host memory, no records ---------------- */

EXPORT int cudaMalloc(void **p, size_t n)
{
    if (lazy_init())
        return 3;
    *p = calloc(1, n ? n : 1);
    return *p ? 0 : 2; /* cudaErrorMemoryAllocation */
}

EXPORT int cudaMallocHost(void **p, size_t n)
{
    return cudaMalloc(p, n);
}

EXPORT int cudaHostAlloc(void **p, size_t n, unsigned flags)
{
    (void)flags;
    return cudaMalloc(p, n);
}

EXPORT int cudaFree(void *p)
{
    free(p);
    return 0;
}

EXPORT int cudaFreeHost(void *p)
{
    free(p);
    return 0;
}

EXPORT int cudaMemcpy(void *dst, const void *src, size_t n, int kind)
{
    (void)kind;
    memmove(dst, src, n);
    return 0;
}

EXPORT int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind,
                           void *stream)
{
    (void)stream;
    return cudaMemcpy(dst, src, n, kind);
}

EXPORT int cudaMemset(void *p, int v, size_t n)
{
    memset(p, v, n);
    return 0;
}

EXPORT int cudaStreamCreate(void **s)
{
    static uintptr_t next = 0x100;
    if (lazy_init())
        return 3;
    pthread_mutex_lock(&mu);
    *s = (void *)(next++);
    pthread_mutex_unlock(&mu);
    return 0;
}

EXPORT int cudaStreamDestroy(void *s)
{
    (void)s;
    return 0;
}

EXPORT int cudaStreamSynchronize(void *s)
{
    (void)s;
    return lazy_init() ? 3 : cuCtxSynchronize();
}

EXPORT int cudaDeviceSynchronize(void)
{
    return lazy_init() ? 3 : cuCtxSynchronize();
}

EXPORT int cudaGetLastError(void)
{
    return 0;
}

EXPORT const char *cudaGetErrorString(int e)
{
    return e ? "fake cudart error" : "no error";
}
