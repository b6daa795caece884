/*
 * alloc.c - a training-like program that allocates GPU memory through the
 * CUDA driver API from known call chains, for `gpufl memprof` to profile
 * (gpufl demo runs it).  It is also a gpufl session (simulated GPU), so the
 * server links its memory profile to the session.
 *
 *   example_alloc [--steps N] [--log-dir DIR]     (N = 0: until killed)
 *
 * The driver is whatever libcuda.so.1 the loader finds: the real one on a
 * GPU machine, the tests' stand-in (build/fake/cudamem) in the demo when
 * there is none.  Built with frame pointers and no inlining so the stacks
 * read load_model -> alloc_weights -> cuMemAlloc_v2.
 */
#include <gpufl/gpufl.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef unsigned long long dptr_t;
typedef int (*alloc_fn)(dptr_t *p, size_t n);
typedef int (*free_fn)(dptr_t p);
typedef int (*init_fn)(unsigned flags);

#define MiB (1024ull * 1024)
#define NOINLINE __attribute__((noinline))
#define LAYERS 12
#define KV_MAX 64

static alloc_fn mem_alloc;
static free_fn mem_free;
static dptr_t weights[LAYERS], kv[KV_MAX];
static unsigned nkv;

static void nap_ms(long ms)
{
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
}

NOINLINE static dptr_t alloc_weights(int layer)
{
    dptr_t p = 0;
    if (mem_alloc(&p, (size_t)(layer % 3 + 1) * 16 * MiB))
        fprintf(stderr, "example_alloc: cuMemAlloc_v2 failed\n");
    return p;
}

NOINLINE static void load_model(void)
{
    GFL_SCOPE("load_model")
    {
        for (int l = 0; l < LAYERS; l++)
            weights[l] = alloc_weights(l);
    }
}

NOINLINE static dptr_t alloc_activations(size_t n)
{
    dptr_t p = 0;
    mem_alloc(&p, n);
    return p;
}

NOINLINE static void forward(void)
{
    GFL_SCOPE("forward")
    {
        dptr_t a = alloc_activations(8 * MiB);
        dptr_t b = alloc_activations(4 * MiB);
        nap_ms(20);
        mem_free(b);
        mem_free(a);
    }
}

NOINLINE static void grow_kv_cache(void)
{
    dptr_t p = 0;
    if (nkv == KV_MAX) { /* full: release the oldest half */
        for (unsigned i = 0; i < KV_MAX / 2; i++)
            mem_free(kv[i]);
        memmove(kv, kv + KV_MAX / 2, sizeof kv / 2);
        nkv = KV_MAX / 2;
    }
    if (!mem_alloc(&p, 2 * MiB))
        kv[nkv++] = p;
}

int main(int argc, char **argv)
{
    gpufl_options o;
    unsigned long steps = 200;
    void *h;
    init_fn init;

    gpufl_options_init(&o);
    o.app = "example_alloc";
    o.engines = "sim,host";
    o.log_dir = "./gpufl-logs";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--log-dir") && i + 1 < argc)
            o.log_dir = argv[++i];
        else {
            fprintf(stderr, "usage: example_alloc [--steps N] [--log-dir "
                            "DIR]\n  --steps N      training steps, 0 = until "
                            "killed (default 200)\n  --log-dir DIR  where the "
                            "gpufl logs go (default ./gpufl-logs)\n");
            return strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        fprintf(stderr, "example_alloc: no CUDA driver (%s)\n", dlerror());
        return 1;
    }
    mem_alloc = (alloc_fn)dlsym(h, "cuMemAlloc_v2");
    mem_free = (free_fn)dlsym(h, "cuMemFree_v2");
    init = (init_fn)dlsym(h, "cuInit");
    if (!mem_alloc || !mem_free) {
        fprintf(stderr, "example_alloc: libcuda.so.1 lacks cuMemAlloc_v2\n");
        return 1;
    }
    if (init && init(0))
        fprintf(stderr, "example_alloc: cuInit failed (no GPU?)\n");
    if (gpufl_init(&o) != GPUFL_OK)
        fprintf(stderr, "example_alloc: gpufl off: %s\n", gpufl_last_error());
    load_model();
    for (unsigned long s = 0; steps == 0 || s < steps; s++) {
        GFL_SCOPE("train_step")
        {
            forward();
            if (s % 5 == 0)
                grow_kv_cache();
            if (s % 100 == 99) { /* reload from a checkpoint */
                for (int l = 0; l < LAYERS; l++)
                    mem_free(weights[l]);
                load_model();
            }
        }
        nap_ms(30);
    }
    for (int l = 0; l < LAYERS; l++)
        mem_free(weights[l]);
    gpufl_shutdown();
    printf("done: %lu steps\n", steps);
    return 0;
}
