/*
 * prog_dlopen_rt.c - the dynamic CUDA runtime's way to the driver, as
 * libcudart.so.13 takes it: libcuda.so.1 is not linked but opened with
 * dlopen(RTLD_LOCAL) (found through this program's RUNPATH), so it is
 * outside the global scope, and every entry point comes through
 * cuGetProcAddress_v2 or dlsym on that handle.  An LD_PRELOAD interposer
 * is bypassed by both lookups, and dlsym(RTLD_NEXT) from it cannot find
 * this driver at all: the --preload test checks that the allocations are
 * seen anyway (docs/memprof.md, --preload and dlsym).
 *
 * usage: prog_dlopen_rt; prints "done N", N the calls that went wrong.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

#define MiB (1ULL << 20)
#define NOINLINE __attribute__((noinline))

typedef unsigned long long CUdeviceptr;
typedef int (*gpa_fn)(const char *, void **, int, unsigned long long, int *);
typedef int (*alloc_fn)(CUdeviceptr *, size_t);
typedef int (*free_fn)(CUdeviceptr);

static int failures;
static void ck(int rc, int want)
{
    if (rc != want)
        failures++;
}

/* cudart's way: the driver's table of entry points, by name */
NOINLINE static void gpa_alloc(void *drv)
{
    gpa_fn gpa = (gpa_fn)dlsym(drv, "cuGetProcAddress_v2");
    alloc_fn alloc = NULL;
    free_fn release = NULL;
    CUdeviceptr p;
    int st = -1;
    if (!gpa) {
        failures++;
        return;
    }
    ck(gpa("cuMemAlloc", (void **)&alloc, 13000, 0, &st), 0);
    ck(st, 0);
    ck(gpa("cuMemFree", (void **)&release, 13000, 0, NULL), 0);
    if (!alloc || !release) {
        failures++;
        return;
    }
    ck(alloc(&p, 7 * MiB), 0);
    ck(release(p), 0);
}

/* ctypes' way (CDLL without RTLD_GLOBAL): the exported symbol itself */
NOINLINE static void sym_alloc(void *drv)
{
    alloc_fn alloc = (alloc_fn)dlsym(drv, "cuMemAlloc_v2");
    CUdeviceptr p;
    if (!alloc) {
        failures++;
        return;
    }
    ck(alloc(&p, 9 * MiB), 0); /* kept: in use at exit */
}

int main(void)
{
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!drv) {
        fprintf(stderr, "prog_dlopen_rt: %s\n", dlerror());
        return 1;
    }
    gpa_alloc(drv);
    sym_alloc(drv);
    printf("done %d\n", failures);
    return failures ? 1 : 0;
}
