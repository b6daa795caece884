// demo_cuda.cu - the workload `gpufl demo` runs on a real GPU, through
// `gpufl run` (no gpufl call in here: capture is injected).
//
//   demo_cuda [STEPS]      (default 50)
//
// Each step looks like a small training step: copy a batch in, a few
// kernels of different shapes on two streams (an element-wise kernel, a
// tiled matrix multiply with shared memory, a reduction), copy a result
// out.  The demo builds this with nvcc when a GPU is present; the numbers
// are not checked (bench/gpu does that), so it also runs on the tests'
// stand-in runtime, where kernels do not execute.
#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                  \
    do {                                                                       \
        cudaError_t e_ = (x);                                                  \
        if (e_ != cudaSuccess) {                                               \
            fprintf(stderr, "demo_cuda: %s: %s\n", #x, cudaGetErrorString(e_)); \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

#define TILE 16

extern "C" __global__ void gfl_demo_scale(float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = a * x[i] + 1.0f;
}

extern "C" __global__ void gfl_demo_matmul(const float *a, const float *b,
                                           float *c, int n)
{
    __shared__ float ta[TILE][TILE], tb[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
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

extern "C" __global__ void gfl_demo_reduce(const float *x, float *out, int n)
{
    extern __shared__ float part[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    part[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s)
            part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = part[0];
}

int main(int argc, char **argv)
{
    const int steps = argc > 1 ? atoi(argv[1]) : 50;
    const int n = 1 << 20, m = 512, threads = 256;
    const int blocks = (n + threads - 1) / threads;
    float *h = (float *)calloc(n, sizeof(float)), *dx, *da, *db, *dc, *dr;
    cudaStream_t s[2];

    if (!h || steps <= 0) {
        fprintf(stderr, "usage: demo_cuda [STEPS > 0]\n");
        return 2;
    }
    for (int i = 0; i < n; i++)
        h[i] = (float)(i % 97);
    CK(cudaMalloc(&dx, n * sizeof(float)));
    CK(cudaMalloc(&da, m * m * sizeof(float)));
    CK(cudaMalloc(&db, m * m * sizeof(float)));
    CK(cudaMalloc(&dc, m * m * sizeof(float)));
    CK(cudaMalloc(&dr, blocks * sizeof(float)));
    CK(cudaStreamCreate(&s[0]));
    CK(cudaStreamCreate(&s[1]));
    for (int step = 0; step < steps; step++) {
        CK(cudaMemcpyAsync(dx, h, n * sizeof(float), cudaMemcpyHostToDevice,
                           s[0]));
        gfl_demo_scale<<<blocks, threads, 0, s[0]>>>(dx, 0.5f, n);
        gfl_demo_matmul<<<dim3(m / TILE, m / TILE), dim3(TILE, TILE), 0,
                          s[1]>>>(da, db, dc, m);
        gfl_demo_reduce<<<blocks, threads, threads * sizeof(float), s[0]>>>(
            dx, dr, n);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(h, dr, sizeof(float), cudaMemcpyDeviceToHost,
                           s[0]));
        CK(cudaDeviceSynchronize());
    }
    printf("demo_cuda: %d steps, %d kernels, %zu bytes copied\n", steps,
           3 * steps, (size_t)steps * (n + 1) * sizeof(float));
    CK(cudaStreamDestroy(s[0]));
    CK(cudaStreamDestroy(s[1]));
    CK(cudaFree(dx));
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFree(dc));
    CK(cudaFree(dr));
    free(h);
    return 0;
}
