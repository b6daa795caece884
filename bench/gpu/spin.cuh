// spin.cuh - the compute-bound kernel of loop.cu and idle.cu: every thread
// runs ITERS dependent multiply-adds on its element.
#pragma once

extern "C" __global__ void gfl_compute(float *x, int iters)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    for (int k = 0; k < iters; k++)
        v = v * 0.999f + 0.001f;
    x[i] = v;
}
