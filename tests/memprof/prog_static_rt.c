/*
 * prog_static_rt.c GO_FILE EXIT_FILE - a program with the CUDA runtime
 * linked in statically, as libcudart_static.a would: it defines its own
 * cudaMalloc* / cudaFree* (in the executable, not exported) on top of the
 * fake libcuda's driver calls, and also calls the driver directly.  The
 * memprof tests check that each allocation is counted once, at the
 * runtime layer when it went through it (docs/memprof.md "Runtime layer").
 */
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#define MiB (1ULL << 20)
#define NOINLINE __attribute__((noinline))

typedef unsigned long long CUdeviceptr;
int cuMemAlloc_v2(CUdeviceptr *dptr, size_t n);
int cuMemAllocManaged(CUdeviceptr *dptr, size_t n, unsigned flags);
int cuMemAllocHost_v2(void **pp, size_t n);
int cuMemHostAlloc(void **pp, size_t n, unsigned flags);
int cuMemAllocAsync(CUdeviceptr *dptr, size_t n, void *stream);
int cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t n, void *pool,
                            void *stream);
int cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
                       size_t height, unsigned elem);
int cuMemFree_v2(CUdeviceptr p);
int cuMemFreeHost(void *p);
int cuMemFreeAsync(CUdeviceptr p, void *stream);

/* the "static cudart": cudaError_t is the driver's result here */
int cudaMalloc(void **p, size_t n);
int cudaMallocManaged(void **p, size_t n, unsigned flags);
int cudaMallocHost(void **p, size_t n);
int cudaHostAlloc(void **p, size_t n, unsigned flags);
int cudaMallocAsync(void **p, size_t n, void *stream);
int cudaMallocFromPoolAsync(void **p, size_t n, void *pool, void *stream);
int cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height);
int cudaFree(void *p);
int cudaFreeHost(void *p);
int cudaFreeAsync(void *p, void *stream);

NOINLINE int cudaMalloc(void **p, size_t n)
{
    return cuMemAlloc_v2((CUdeviceptr *)p, n);
}
NOINLINE int cudaMallocManaged(void **p, size_t n, unsigned flags)
{
    return cuMemAllocManaged((CUdeviceptr *)p, n, flags);
}
NOINLINE int cudaMallocHost(void **p, size_t n)
{
    return cuMemAllocHost_v2(p, n);
}
NOINLINE int cudaHostAlloc(void **p, size_t n, unsigned flags)
{
    return cuMemHostAlloc(p, n, flags);
}
NOINLINE int cudaMallocAsync(void **p, size_t n, void *stream)
{
    return cuMemAllocAsync((CUdeviceptr *)p, n, stream);
}
NOINLINE int cudaMallocFromPoolAsync(void **p, size_t n, void *pool,
                                     void *stream)
{
    return cuMemAllocFromPoolAsync((CUdeviceptr *)p, n, pool, stream);
}
NOINLINE int cudaMallocPitch(void **p, size_t *pitch, size_t width,
                             size_t height)
{
    return cuMemAllocPitch_v2((CUdeviceptr *)p, pitch, width, height, 4);
}
NOINLINE int cudaFree(void *p)
{
    return cuMemFree_v2((CUdeviceptr)p);
}
NOINLINE int cudaFreeHost(void *p)
{
    return cuMemFreeHost(p);
}
NOINLINE int cudaFreeAsync(void *p, void *stream)
{
    return cuMemFreeAsync((CUdeviceptr)p, stream);
}

static int failed;

static void ok(int rc, const char *what)
{
    if (rc) {
        fprintf(stderr, "prog_static_rt: %s failed (%d)\n", what, rc);
        failed = 1;
    }
}

NOINLINE static void rt_alloc(void)
{
    void *a, *b;
    ok(cudaMalloc(&a, 8 * MiB), "cudaMalloc");
    ok(cudaMalloc(&b, 8 * MiB), "cudaMalloc");
    ok(cudaFree(b), "cudaFree");
}

NOINLINE static void rt_pinned(void)
{
    void *p;
    ok(cudaMallocHost(&p, 1 * MiB), "cudaMallocHost");
    ok(cudaFreeHost(p), "cudaFreeHost");
}

NOINLINE static void rt_hostalloc(void)
{
    void *p;
    ok(cudaHostAlloc(&p, 1 * MiB, 0), "cudaHostAlloc");
}

NOINLINE static void rt_managed(void)
{
    void *p;
    ok(cudaMallocManaged(&p, 2 * MiB, 1), "cudaMallocManaged");
}

NOINLINE static void rt_pitched(void)
{
    void *p;
    size_t pitch;
    ok(cudaMallocPitch(&p, &pitch, 1000, 10), "cudaMallocPitch");
}

NOINLINE static void rt_async(void)
{
    void *p;
    ok(cudaMallocAsync(&p, 4 * MiB, NULL), "cudaMallocAsync");
    ok(cudaFreeAsync(p, NULL), "cudaFreeAsync");
}

NOINLINE static void rt_pool(void)
{
    void *p;
    ok(cudaMallocFromPoolAsync(&p, 3 * MiB, NULL, NULL),
       "cudaMallocFromPoolAsync");
}

NOINLINE static void rt_oom(void)
{
    void *p;
    if (!cudaMalloc(&p, 2048 * 1024 * MiB))
        failed = 1;
}

/* the driver API called directly: counted at the driver layer */
NOINLINE static void drv_alloc(void)
{
    CUdeviceptr p;
    ok(cuMemAlloc_v2(&p, 6 * MiB), "cuMemAlloc_v2");
}

static void wait_file(const char *path)
{
    while (access(path, F_OK))
        usleep(10000);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        wait_file(argv[1]);
    rt_alloc();
    rt_pinned();
    rt_hostalloc();
    rt_managed();
    rt_pitched();
    rt_async();
    rt_pool();
    rt_oom();
    drv_alloc();
    printf("done\n");
    fflush(stdout);
    if (argc > 2)
        wait_file(argv[2]);
    return failed;
}
