/*
 * prog_memprof.c - the workload the memprof tests profile: known call
 * chains into the (fake) driver, with known sizes (test_memprof.py holds
 * the expected numbers).  Built with frame pointers and no inlining.
 *
 * usage: prog_memprof GO_FILE [EXIT_FILE]
 *   allocates 1 MiB in early() at once, waits for GO_FILE to exist (the
 *   profiler attaches meanwhile), runs the workload (3 threads), frees
 *   early()'s block, prints "done" and, with EXIT_FILE, waits for it
 *   before exiting (so in-use can be read while the process lives).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef unsigned long long CUdeviceptr;
int cuMemAlloc_v2(CUdeviceptr *dptr, size_t n);
int cuMemAllocManaged(CUdeviceptr *dptr, size_t n, unsigned flags);
int cuMemAllocHost_v2(void **pp, size_t n);
int cuMemAllocAsync(CUdeviceptr *dptr, size_t n, void *stream);
int cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
                       size_t height, unsigned elem);
int cuMemFree_v2(CUdeviceptr p);
int cuMemFreeHost(void *p);
int cuMemFreeAsync(CUdeviceptr p, void *stream);
int cuMemCreate(unsigned long long *h, size_t n, const void *prop,
                unsigned long long flags);
int cuMemMap(CUdeviceptr va, size_t n, size_t off, unsigned long long h,
             unsigned long long flags);
int cuMemUnmap(CUdeviceptr va, size_t n);
int cuMemRelease(unsigned long long h);
int cuGetProcAddress(const char *symbol, void **pfn, int version,
                     unsigned long long flags);

#define MiB (1024ULL * 1024)
#define NOINLINE __attribute__((noinline))

static int failures;
static void ck(int rc, int want)
{
    if (rc != want)
        failures++;
}

NOINLINE static CUdeviceptr early(void)
{
    CUdeviceptr p = 0;
    ck(cuMemAlloc_v2(&p, 1 * MiB), 0);
    return p;
}

NOINLINE static void alloc_weights(void)
{
    CUdeviceptr p;
    ck(cuMemAlloc_v2(&p, 64 * MiB), 0);
}

NOINLINE static void load_model(void)
{
    for (int i = 0; i < 4; i++)
        alloc_weights();
}

NOINLINE static void init_cache(void)
{
    CUdeviceptr p;
    ck(cuMemAlloc_v2(&p, 512 * MiB), 0);
}

NOINLINE static void scratch(void)
{
    CUdeviceptr p;
    ck(cuMemAlloc_v2(&p, 8 * MiB), 0);
    ck(cuMemFree_v2(p), 0);
}

NOINLINE static void step(void)
{
    scratch();
}

NOINLINE static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5; i++)
        step();
    return NULL;
}

NOINLINE static void oom(void)
{
    CUdeviceptr p;
    ck(cuMemAlloc_v2(&p, 2048ULL * 1024 * MiB), 2);
}

NOINLINE static void vmm_grow(void)
{
    unsigned long long h;
    ck(cuMemCreate(&h, 32 * MiB, NULL, 0), 0);
    ck(cuMemMap(0x7e0000000000ULL, 32 * MiB, 0, h, 0), 0);
}

NOINLINE static void vmm_temp(void)
{
    unsigned long long h;
    ck(cuMemCreate(&h, 16 * MiB, NULL, 0), 0);
    ck(cuMemMap(0x7e1000000000ULL, 16 * MiB, 0, h, 0), 0);
    ck(cuMemRelease(h), 0); /* still mapped: memory stays */
    ck(cuMemUnmap(0x7e1000000000ULL, 16 * MiB), 0);
}

NOINLINE static void pitched(void)
{
    CUdeviceptr p;
    size_t pitch;
    ck(cuMemAllocPitch_v2(&p, &pitch, 1000, 10, 4), 0); /* 1024 x 10 */
}

NOINLINE static void pinned(void)
{
    void *p;
    ck(cuMemAllocHost_v2(&p, 1 * MiB), 0);
    ck(cuMemFreeHost(p), 0);
}

NOINLINE static void managed(void)
{
    CUdeviceptr p;
    ck(cuMemAllocManaged(&p, 2 * MiB, 1), 0);
}

/* the CUDA runtime's way in: a pointer from cuGetProcAddress */
NOINLINE static void runtime_style(void)
{
    int (*alloc)(CUdeviceptr *, size_t) = NULL;
    int (*release)(CUdeviceptr) = NULL;
    CUdeviceptr p;
    ck(cuGetProcAddress("cuMemAlloc", (void **)&alloc, 12000, 0), 0);
    ck(cuGetProcAddress("cuMemFree", (void **)&release, 12000, 0), 0);
    if (!alloc || !release) {
        failures++;
        return;
    }
    ck(alloc(&p, 3 * MiB), 0);
    ck(release(p), 0);
}

/* the dynamic CUDA runtime's way in (libcudart.so.13): its own handle on
 * the driver, cuGetProcAddress_v2 looked up on that handle - a lookup
 * that LD_PRELOAD does not interpose, so --preload must hook dlsym */
NOINLINE static void runtime_dlopen(void)
{
    typedef int (*gpa_fn)(const char *, void **, int, unsigned long long,
                          int *);
    int (*alloc)(CUdeviceptr *, size_t) = NULL;
    int (*release)(CUdeviceptr) = NULL;
    CUdeviceptr p;
    int st = -1;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gpa_fn gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
    if (!gpa) {
        failures++;
        return;
    }
    ck(gpa("cuMemAlloc", (void **)&alloc, 12000, 0, &st), 0);
    ck(st, 0);
    ck(gpa("cuMemFree", (void **)&release, 12000, 0, NULL), 0);
    if (!alloc || !release) {
        failures++;
        return;
    }
    ck(alloc(&p, 5 * MiB), 0);
    ck(release(p), 0);
}

/* dlsym(RTLD_NEXT) means "after the caller": from here the first
 * definition after this program, the one its own calls are bound to (the
 * interposer's under --preload, which must pass the caller through) */
NOINLINE static void lookup_next(void)
{
    void *bound = (void *)cuMemAlloc_v2;
    if (dlsym(RTLD_NEXT, "cuMemAlloc_v2") != bound ||
        dlsym(RTLD_DEFAULT, "cuMemAlloc_v2") != bound) {
        fprintf(stderr, "prog_memprof: dlsym(RTLD_NEXT/RTLD_DEFAULT) is not "
                        "what this program's calls are bound to\n");
        failures++;
    }
}

NOINLINE static void async_alloc(void)
{
    CUdeviceptr p;
    ck(cuMemAllocAsync(&p, 4 * MiB, NULL), 0);
    ck(cuMemFreeAsync(p, NULL), 0);
}

static void wait_file(const char *path)
{
    while (access(path, F_OK))
        usleep(10000);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: prog_memprof GO_FILE [EXIT_FILE]\n");
        return 2;
    }
    CUdeviceptr e = early();
    wait_file(argv[1]);
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    load_model();
    init_cache();
    oom();
    vmm_grow();
    vmm_temp();
    pitched();
    pinned();
    managed();
    async_alloc();
    runtime_style();
    runtime_dlopen();
    lookup_next();
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    ck(cuMemFree_v2(e), 0);
    printf("done %d\n", failures);
    fflush(stdout);
    if (argc > 2)
        wait_file(argv[2]);
    return failures ? 1 : 0;
}
