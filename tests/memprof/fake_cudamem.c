/*
 * fake_cudamem.c - a fake libcuda.so.1 for the memprof tests: the real
 * names and argument order of the driver's allocation API (NVIDIA's CUDA
 * Driver API reference; docs/memprof.md "What is traced"), handing out
 * made-up device addresses.  Sizes above 1 TiB fail with
 * CUDA_ERROR_OUT_OF_MEMORY (2), a free of an address never handed out
 * fails with CUDA_ERROR_INVALID_VALUE (1).  Pitch is the width rounded up
 * to 512.
 *
 * With FAKE_CUDA_MEM_TOTAL set, a device of that many bytes: the
 * cuMemAlloc* family takes from it and its frees give back (live blocks
 * are remembered in a small direct-mapped table; one that finds no slot
 * is never given back; VMM handles are not counted), and a request larger
 * than what is free fails with CUDA_ERROR_OUT_OF_MEMORY.  Without it
 * nothing is counted (the benchmark's calls stay as cheap as before) and
 * the device has 1 TiB free.  cuMemGetInfo_v2 answers (free, total) and
 * cuCtxGetDevice answers FAKE_CUDA_DEVICE (default 0): the OOM tests
 * check that the report's numbers are these.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define OOM_ABOVE (1ULL << 40)
#define FAKE_LIVE_SLOTS 65536 /* power of 2 */
#define FAKE_LIVE_PROBE 8

typedef unsigned long long CUdeviceptr;
static _Atomic unsigned long long next_va = 0x7f0000000000ULL;
static _Atomic unsigned long long next_handle = 0x1000;

static pthread_once_t mem_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t mem_mu = PTHREAD_MUTEX_INITIALIZER;
static int counting;
static unsigned long long mem_total = OOM_ABOVE, mem_used;
static struct {
    CUdeviceptr p;
    unsigned long long n;
} live[FAKE_LIVE_SLOTS];

static unsigned long long env_u64(const char *name, unsigned long long def)
{
    const char *v = getenv(name);
    char *end;
    unsigned long long x = v && *v ? strtoull(v, &end, 10) : 0;
    return v && *v && !*end ? x : def;
}

static void mem_init(void)
{
    counting = getenv("FAKE_CUDA_MEM_TOTAL") != NULL;
    mem_total = env_u64("FAKE_CUDA_MEM_TOTAL", OOM_ABOVE);
}

/* addresses advance in 1 MiB steps: p >> 20 spreads them */
static size_t live_slot(CUdeviceptr p, size_t k)
{
    return ((p >> 20) + k) & (FAKE_LIVE_SLOTS - 1);
}

static int fake_alloc(CUdeviceptr *dptr, size_t n)
{
    if (!dptr || n > OOM_ABOVE)
        return 2;
    pthread_once(&mem_once, mem_init);
    if (!counting) {
        *dptr = atomic_fetch_add(&next_va, (n + 0xfffff) & ~0xfffffULL);
        return 0;
    }
    pthread_mutex_lock(&mem_mu);
    if (n > mem_total - mem_used) {
        pthread_mutex_unlock(&mem_mu);
        return 2;
    }
    *dptr = atomic_fetch_add(&next_va, (n + 0xfffff) & ~0xfffffULL);
    mem_used += n;
    for (size_t k = 0; k < FAKE_LIVE_PROBE; k++) {
        size_t i = live_slot(*dptr, k);
        if (!live[i].p) {
            live[i].p = *dptr;
            live[i].n = n;
            break;
        }
    }
    pthread_mutex_unlock(&mem_mu);
    return 0;
}

static int fake_free(CUdeviceptr p)
{
    if (!(p >= 0x7f0000000000ULL && p < atomic_load(&next_va)))
        return 1;
    pthread_once(&mem_once, mem_init);
    if (!counting)
        return 0;
    pthread_mutex_lock(&mem_mu);
    for (size_t k = 0; k < FAKE_LIVE_PROBE; k++) {
        size_t i = live_slot(p, k);
        if (live[i].p == p) {
            mem_used -= live[i].n;
            live[i].p = 0;
            break;
        }
    }
    pthread_mutex_unlock(&mem_mu);
    return 0;
}

EXPORT int cuMemGetInfo_v2(size_t *free_b, size_t *total_b)
{
    if (!free_b || !total_b)
        return 1;
    pthread_once(&mem_once, mem_init);
    pthread_mutex_lock(&mem_mu);
    *free_b = mem_total - mem_used;
    *total_b = mem_total;
    pthread_mutex_unlock(&mem_mu);
    return 0;
}

EXPORT int cuCtxGetDevice(int *dev)
{
    if (!dev)
        return 1;
    *dev = (int)env_u64("FAKE_CUDA_DEVICE", 0);
    return 0;
}

EXPORT int cuMemAlloc_v2(CUdeviceptr *dptr, size_t n)
{
    return fake_alloc(dptr, n);
}
EXPORT int cuMemAllocManaged(CUdeviceptr *dptr, size_t n, unsigned flags)
{
    (void)flags;
    return fake_alloc(dptr, n);
}
EXPORT int cuMemAllocHost_v2(void **pp, size_t n)
{
    return fake_alloc((CUdeviceptr *)pp, n);
}
EXPORT int cuMemHostAlloc(void **pp, size_t n, unsigned flags)
{
    (void)flags;
    return fake_alloc((CUdeviceptr *)pp, n);
}
EXPORT int cuMemAllocAsync(CUdeviceptr *dptr, size_t n, void *stream)
{
    (void)stream;
    return fake_alloc(dptr, n);
}
EXPORT int cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t n, void *pool,
                                   void *stream)
{
    (void)pool;
    (void)stream;
    return fake_alloc(dptr, n);
}
EXPORT int cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
                              size_t height, unsigned elem)
{
    (void)elem;
    size_t p = (width + 511) & ~(size_t)511;
    int rc = fake_alloc(dptr, p * height);
    if (!rc)
        *pitch = p;
    return rc;
}
EXPORT int cuMemFree_v2(CUdeviceptr p)
{
    return fake_free(p);
}
EXPORT int cuMemFreeHost(void *p)
{
    return fake_free((CUdeviceptr)p);
}
EXPORT int cuMemFreeAsync(CUdeviceptr p, void *stream)
{
    (void)stream;
    return fake_free(p);
}
EXPORT int cuMemCreate(unsigned long long *h, size_t n, const void *prop,
                       unsigned long long flags)
{
    (void)prop;
    (void)flags;
    if (n > OOM_ABOVE)
        return 2;
    *h = atomic_fetch_add(&next_handle, 1);
    return 0;
}
EXPORT int cuMemMap(CUdeviceptr va, size_t n, size_t off, unsigned long long h,
                    unsigned long long flags)
{
    (void)n;
    (void)off;
    (void)flags;
    return va && h ? 0 : 1;
}
EXPORT int cuMemUnmap(CUdeviceptr va, size_t n)
{
    (void)n;
    return va ? 0 : 1;
}
EXPORT int cuMemRelease(unsigned long long h)
{
    return h ? 0 : 1;
}
EXPORT int cuCtxDestroy_v2(void *ctx)
{
    (void)ctx;
    return 0;
}

/* How the CUDA runtime reaches the driver: by name without the version
 * suffix, and the driver hands out its own newest variant (cuMemAlloc ->
 * cuMemAlloc_v2) - never an interposer's, as dlsym would.  CUDA 12's
 * cuGetProcAddress_v2 (what libcudart.so.13 looks up) adds the symbol's
 * status: 0 found, 1 not found.  Both share a static lookup: a call from
 * one exported entry point to another would go through the global scope,
 * to an interposer's. */
static int proc_address(const char *symbol, void **pfn)
{
    static const struct {
        const char *name;
        void *fn;
    } own[] = {
        { "cuMemAlloc", (void *)cuMemAlloc_v2 },
        { "cuMemFree", (void *)cuMemFree_v2 },
        { "cuMemAllocManaged", (void *)cuMemAllocManaged },
        { "cuMemCreate", (void *)cuMemCreate },
        { "cuMemRelease", (void *)cuMemRelease },
    };
    if (!symbol || !pfn)
        return 1;
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (!strcmp(symbol, own[i].name)) {
            *pfn = own[i].fn;
            return 0;
        }
    *pfn = NULL;
    return 500; /* CUDA_ERROR_NOT_FOUND */
}

EXPORT int cuGetProcAddress(const char *symbol, void **pfn, int version,
                            unsigned long long flags)
{
    (void)version;
    (void)flags;
    return proc_address(symbol, pfn);
}

EXPORT int cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                               unsigned long long flags, int *status)
{
    (void)version;
    (void)flags;
    int rc = proc_address(symbol, pfn);
    if (status)
        *status = rc ? 1 : 0;
    return rc;
}
