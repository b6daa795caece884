// vecadd.cu - vector add: per iteration 2 H2D copies, one kernel, one D2H.
#include "common.cuh"

extern "C" __global__ void gfl_vecadd(const float *a, const float *b, float *c,
                                      int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

int main()
{
    const int n = 1 << 20, iters = 10, threads = 256;
    const size_t bytes = n * sizeof(float);
    float *ha = (float *)malloc(bytes), *hb = (float *)malloc(bytes),
          *hc = (float *)malloc(bytes), *da, *db, *dc;
    for (int i = 0; i < n; i++) {
        ha[i] = (float)i;
        hb[i] = 2.0f * i;
    }
    CK(cudaMalloc(&da, bytes));
    CK(cudaMalloc(&db, bytes));
    CK(cudaMalloc(&dc, bytes));
    int blocks = (n + threads - 1) / threads;
    for (int it = 0; it < iters; it++) {
        CK(cudaMemcpy(da, ha, bytes, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(db, hb, bytes, cudaMemcpyHostToDevice));
        gfl_vecadd<<<blocks, threads>>>(da, db, dc, n);
        CK(cudaGetLastError());
        CK(cudaMemcpy(hc, dc, bytes, cudaMemcpyDeviceToHost));
    }
    CK(cudaDeviceSynchronize());
    if (hc[123] != 3.0f * 123) {
        fprintf(stderr, "wrong result\n");
        return 1;
    }
    printf("EXPECT {\"kernels\":{\"gfl_vecadd\":%d},\"grid\":{\"gfl_vecadd\":"
           "[%d]},\"block\":{\"gfl_vecadd\":[%d]},\"bytes\":{\"htod\":%zu,"
           "\"dtoh\":%zu}}\n",
           iters, blocks, threads, 2 * iters * bytes, iters * bytes);
    return 0;
}
