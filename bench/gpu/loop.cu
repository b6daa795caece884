// loop.cu - overhead loops: "tiny" launches many empty kernels (launch
// bound), "compute" launches few long kernels (compute bound).  Prints the
// loop's own time so start-up and exit are not counted.
#include <cstring>

#include "common.cuh"
#include "spin.cuh"

extern "C" __global__ void gfl_tiny(int *x)
{
    if (x && threadIdx.x == 1000000)
        x[0] = 1;
}

int main(int argc, char **argv)
{
    int compute = argc > 1 && !strcmp(argv[1], "compute");
    int n = argc > 2 ? (int)strtol(argv[2], NULL, 10) : (compute ? 50 : 50000);
    float *d;
    CK(cudaMalloc(&d, 1 << 24));
    CK(cudaMemset(d, 0, 1 << 24));
    CK(cudaDeviceSynchronize());
    double t0 = now_ms();
    for (int i = 0; i < n; i++) {
        if (compute)
            gfl_compute<<<(1 << 22) / 256, 256>>>(d, 2000);
        else
            gfl_tiny<<<1, 32>>>(nullptr);
    }
    CK(cudaDeviceSynchronize());
    double t1 = now_ms();
    printf("LOOP_MS %.3f\n", t1 - t0);
    printf("EXPECT {\"kernels\":{\"%s\":%d}}\n", compute ? "gfl_compute" : "gfl_tiny",
           n);
    return 0;
}
