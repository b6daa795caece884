// ring.cu - the flight recorder and `gpufl ctl` on a real GPU (bench/gpu/
// run.sh section 7).  Never linked with gpufl: under `gpufl run` the driver
// loads libgpufl at cuInit, and the scope timing finds it there.
//
//   ring cost N       N launches of an empty kernel, timed on the CPU:
//                     LAUNCH_NS (the loop's wall time / N, synchronised at
//                     the end); then, when libgpufl is in the process, N
//                     scope begin+end pairs: SCOPE_NS (per event: a begin
//                     or an end); "SCOPE_NS none" without gpufl
//   ring run SECONDS  READY, then an empty kernel about every 200 us,
//                     each synchronised, for SECONDS; KERNELS n at the end
#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <unistd.h>

#include "common.cuh"

extern "C" __global__ void gfl_ring_tiny(int *x)
{
    if (x && threadIdx.x == 1000000)
        x[0] = 1;
}

typedef uint64_t (*scope_begin_fn)(const char *);
typedef void (*scope_end_fn)(uint64_t);

static int cost(int n)
{
    CK(cudaFree(0)); // cuInit: gpufl run's injection loads libgpufl here
    CK(cudaDeviceSynchronize());
    for (int i = 0; i < 1000; i++) // warm: the first launches load the module
        gfl_ring_tiny<<<1, 32>>>(nullptr);
    CK(cudaDeviceSynchronize());
    double t0 = now_ms();
    for (int i = 0; i < n; i++)
        gfl_ring_tiny<<<1, 32>>>(nullptr);
    CK(cudaDeviceSynchronize());
    printf("LAUNCH_NS %.1f\n", (now_ms() - t0) * 1e6 / n);

    void *lib = dlopen("libgpufl.so.0", RTLD_NOW | RTLD_NOLOAD);
    scope_begin_fn b = lib ? (scope_begin_fn)dlsym(lib, "gpufl_scope_begin") : nullptr;
    scope_end_fn e = lib ? (scope_end_fn)dlsym(lib, "gpufl_scope_end") : nullptr;
    if (!b || !e) {
        printf("SCOPE_NS none\n");
        return 0;
    }
    t0 = now_ms();
    for (int i = 0; i < n; i++)
        e(b("ring_step"));
    printf("SCOPE_NS %.1f\n", (now_ms() - t0) * 1e6 / (2.0 * n));
    return 0;
}

static int run(double secs)
{
    CK(cudaFree(0));
    printf("READY\n");
    fflush(stdout);
    long k = 0;
    double end = now_ms() + secs * 1000;
    while (now_ms() < end) {
        gfl_ring_tiny<<<1, 32>>>(nullptr);
        CK(cudaDeviceSynchronize());
        k++;
        usleep(200);
    }
    printf("KERNELS %ld\n", k);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "cost"))
        return cost((int)strtol(argv[2], NULL, 10));
    if (argc == 3 && !strcmp(argv[1], "run"))
        return run(strtod(argv[2], NULL));
    fprintf(stderr, "usage: ring cost N | ring run SECONDS\n");
    return 2;
}
