// streams.cu - 4 streams, each: async H2D (pinned), a kernel, D2D, D2H.
#include "common.cuh"

extern "C" __global__ void gfl_scale(float *x, int n, float f)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= f;
}

int main()
{
    const int ns = 4, n = 1 << 18, rounds = 8;
    const size_t bytes = n * sizeof(float);
    cudaStream_t st[ns];
    float *h[ns], *d[ns], *d2[ns];
    for (int s = 0; s < ns; s++) {
        CK(cudaStreamCreate(&st[s]));
        CK(cudaMallocHost(&h[s], bytes));
        CK(cudaMalloc(&d[s], bytes));
        CK(cudaMalloc(&d2[s], bytes));
        for (int i = 0; i < n; i++)
            h[s][i] = 1.0f;
    }
    for (int r = 0; r < rounds; r++)
        for (int s = 0; s < ns; s++) {
            CK(cudaMemcpyAsync(d[s], h[s], bytes, cudaMemcpyHostToDevice, st[s]));
            gfl_scale<<<n / 256, 256, 0, st[s]>>>(d[s], n, 2.0f);
            CK(cudaMemcpyAsync(d2[s], d[s], bytes, cudaMemcpyDeviceToDevice, st[s]));
            CK(cudaMemcpyAsync(h[s], d2[s], bytes, cudaMemcpyDeviceToHost, st[s]));
        }
    CK(cudaDeviceSynchronize());
    printf("EXPECT {\"kernels\":{\"gfl_scale\":%d},\"grid\":{\"gfl_scale\":[%d]},"
           "\"block\":{\"gfl_scale\":[256]},\"bytes\":{\"htod\":%zu,\"dtod\":%zu,"
           "\"dtoh\":%zu},\"streams_min\":%d}\n",
           ns * rounds, n / 256, ns * rounds * bytes, ns * rounds * bytes,
           ns * rounds * bytes, ns);
    return 0;
}
