// idle.cu - the loads of the idle-detection seed's table, for `gpufl idle`
// on a real GPU (run.sh section 5):
//   idle hold SECONDS        4 GiB allocated, no kernels      -> HELD
//   idle one_thread SECONDS  a 1-thread kernel back to back   -> BUSY_LOW_OCC
//   idle matmul SECONDS      every SM busy                    -> BUSY
// Prints READY once the load is in place, then keeps it for SECONDS.
#include <cstring>
#include <unistd.h>

#include "common.cuh"
#include "spin.cuh"

// ~1 ms of one thread's arithmetic per launch: the GPU is never without a
// kernel, yet one SM of all is busy.
extern "C" __global__ void gfl_one_thread(float *x, int iters)
{
    float v = x[0];
    for (int k = 0; k < iters; k++)
        v = v * 0.999f + 0.001f;
    x[0] = v;
}


int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: idle hold|one_thread|matmul SECONDS\n");
        return 2;
    }
    const char *mode = argv[1];
    double secs = strtod(argv[2], NULL);
    float *d;
    if (!strcmp(mode, "hold")) {
        size_t n = 4ull << 30;
        CK(cudaMalloc(&d, n));
        CK(cudaMemset(d, 0, n));
        CK(cudaDeviceSynchronize());
        printf("READY\n");
        fflush(stdout);
        usleep((useconds_t)(secs * 1e6));
        return 0;
    }
    int one = !strcmp(mode, "one_thread");
    if (!one && strcmp(mode, "matmul")) {
        fprintf(stderr, "idle: unknown load %s\n", mode);
        return 2;
    }
    CK(cudaMalloc(&d, 1 << 26));
    CK(cudaMemset(d, 0, 1 << 26));
    CK(cudaDeviceSynchronize());
    printf("READY\n");
    fflush(stdout);
    double t0 = now_ms();
    while (now_ms() - t0 < secs * 1000) {
        for (int i = 0; i < 20; i++) {
            if (one)
                gfl_one_thread<<<1, 1>>>(d, 200000);
            else
                gfl_compute<<<(1 << 24) / 256, 256>>>(d, 2000);
        }
        CK(cudaDeviceSynchronize());
    }
    return 0;
}
