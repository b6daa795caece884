/*
 * api.c - the probed CUDA driver (and statically linked runtime) entry
 * points and what each one does to the accounting.  Order = enum mp_api
 * (mp_event.h).
 */
#include "memprof_int.h"

/* allocations read *arg1 and need the stack; frees need neither */
#define O1 (MP_COOKIE_OUT1 | MP_COOKIE_STACK)
#define RT MP_COOKIE_RT
const mp_api_info mp_apis[MP_API_N] = {
    [MP_cuMemAlloc_v2] = { "cuMemAlloc_v2", O1, MP_OP_ALLOC },
    [MP_cuMemAlloc] = { "cuMemAlloc", O1, MP_OP_ALLOC },
    [MP_cuMemAllocPitch_v2] = { "cuMemAllocPitch_v2", O1 | MP_COOKIE_PITCH,
                                MP_OP_ALLOC },
    [MP_cuMemAllocPitch] = { "cuMemAllocPitch", O1 | MP_COOKIE_PITCH,
                             MP_OP_ALLOC },
    [MP_cuMemAllocManaged] = { "cuMemAllocManaged", O1, MP_OP_ALLOC },
    [MP_cuMemAllocHost_v2] = { "cuMemAllocHost_v2", O1, MP_OP_ALLOC },
    [MP_cuMemAllocHost] = { "cuMemAllocHost", O1, MP_OP_ALLOC },
    [MP_cuMemHostAlloc] = { "cuMemHostAlloc", O1, MP_OP_ALLOC },
    [MP_cuMemAllocAsync] = { "cuMemAllocAsync", O1, MP_OP_ALLOC },
    [MP_cuMemAllocAsync_ptsz] = { "cuMemAllocAsync_ptsz", O1, MP_OP_ALLOC },
    [MP_cuMemAllocFromPoolAsync] = { "cuMemAllocFromPoolAsync", O1,
                                     MP_OP_ALLOC },
    [MP_cuMemAllocFromPoolAsync_ptsz] = { "cuMemAllocFromPoolAsync_ptsz", O1,
                                          MP_OP_ALLOC },
    [MP_cuMemCreate] = { "cuMemCreate", O1, MP_OP_CREATE },
    [MP_cuMemMap] = { "cuMemMap", 0, MP_OP_MAP },
    [MP_cuMemUnmap] = { "cuMemUnmap", 0, MP_OP_UNMAP },
    [MP_cuMemRelease] = { "cuMemRelease", 0, MP_OP_RELEASE },
    [MP_cuMemFree_v2] = { "cuMemFree_v2", 0, MP_OP_FREE },
    [MP_cuMemFree] = { "cuMemFree", 0, MP_OP_FREE },
    [MP_cuMemFreeHost] = { "cuMemFreeHost", 0, MP_OP_FREE },
    [MP_cuMemFreeAsync] = { "cuMemFreeAsync", 0, MP_OP_FREE },
    [MP_cuMemFreeAsync_ptsz] = { "cuMemFreeAsync_ptsz", 0, MP_OP_FREE },
    [MP_cuCtxDestroy_v2] = { "cuCtxDestroy_v2", 0, MP_OP_CTX },
    [MP_cuCtxDestroy] = { "cuCtxDestroy", 0, MP_OP_CTX },
    /* runtime: cudaError_t, 0 = success, like CUresult; same argument
     * positions as the driver call each one makes */
    [MP_cudaMalloc] = { "cudaMalloc", O1 | RT, MP_OP_ALLOC },
    [MP_cudaMallocManaged] = { "cudaMallocManaged", O1 | RT, MP_OP_ALLOC },
    [MP_cudaMallocHost] = { "cudaMallocHost", O1 | RT, MP_OP_ALLOC },
    [MP_cudaHostAlloc] = { "cudaHostAlloc", O1 | RT, MP_OP_ALLOC },
    [MP_cudaMallocAsync] = { "cudaMallocAsync", O1 | RT, MP_OP_ALLOC },
    [MP_cudaMallocAsync_ptsz] = { "cudaMallocAsync_ptsz", O1 | RT,
                                  MP_OP_ALLOC },
    [MP_cudaMallocFromPoolAsync] = { "cudaMallocFromPoolAsync", O1 | RT,
                                     MP_OP_ALLOC },
    [MP_cudaMallocFromPoolAsync_ptsz] = { "cudaMallocFromPoolAsync_ptsz",
                                          O1 | RT, MP_OP_ALLOC },
    [MP_cudaMallocPitch] = { "cudaMallocPitch", O1 | MP_COOKIE_PITCH | RT,
                             MP_OP_ALLOC },
    [MP_cudaFree] = { "cudaFree", RT, MP_OP_FREE },
    [MP_cudaFreeHost] = { "cudaFreeHost", RT, MP_OP_FREE },
    [MP_cudaFreeAsync] = { "cudaFreeAsync", RT, MP_OP_FREE },
    [MP_cudaFreeAsync_ptsz] = { "cudaFreeAsync_ptsz", RT, MP_OP_FREE },
};
