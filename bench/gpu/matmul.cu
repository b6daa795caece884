// matmul.cu - tiled matrix multiply (16x16 tiles in shared memory).
#include "common.cuh"

#define TILE 16

extern "C" __global__ void gfl_matmul(const float *a, const float *b, float *c,
                                      int n)
{
    __shared__ float ta[TILE][TILE], tb[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0;
    for (int t = 0; t < n / TILE; t++) {
        ta[threadIdx.y][threadIdx.x] = a[row * n + t * TILE + threadIdx.x];
        tb[threadIdx.y][threadIdx.x] = b[(t * TILE + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; k++)
            acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
        __syncthreads();
    }
    c[row * n + col] = acc;
}

int main()
{
    const int n = 1024, iters = 5;
    const size_t bytes = (size_t)n * n * sizeof(float);
    float *h = (float *)malloc(bytes), *da, *db, *dc;
    for (int i = 0; i < n * n; i++)
        h[i] = 1.0f;
    CK(cudaMalloc(&da, bytes));
    CK(cudaMalloc(&db, bytes));
    CK(cudaMalloc(&dc, bytes));
    CK(cudaMemcpy(da, h, bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, h, bytes, cudaMemcpyHostToDevice));
    dim3 grid(n / TILE, n / TILE), block(TILE, TILE);
    for (int it = 0; it < iters; it++)
        gfl_matmul<<<grid, block>>>(da, db, dc, n);
    CK(cudaGetLastError());
    CK(cudaMemcpy(h, dc, bytes, cudaMemcpyDeviceToHost));
    if (h[0] != (float)n) {
        fprintf(stderr, "wrong result %f\n", h[0]);
        return 1;
    }
    printf("EXPECT {\"kernels\":{\"gfl_matmul\":%d},\"grid\":{\"gfl_matmul\":"
           "[%d,%d]},\"block\":{\"gfl_matmul\":[%d,%d]},\"smem\":{\"gfl_matmul\":"
           "%d},\"bytes\":{\"htod\":%zu,\"dtoh\":%zu}}\n",
           iters, n / TILE, n / TILE, TILE, TILE,
           (int)(2 * TILE * TILE * sizeof(float)), 2 * bytes, bytes);
    return 0;
}
