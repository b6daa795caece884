// common.cuh - shared helpers of the bench/gpu programs: error checks and
// the EXPECT line that check.py compares with what gpufl captured.
#pragma once
#include <chrono>
#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                  \
    do {                                                                       \
        cudaError_t e_ = (x);                                                  \
        if (e_ != cudaSuccess) {                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,         \
                    cudaGetErrorString(e_));                                   \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

static inline double now_ms()
{
    using namespace std::chrono;
    return duration<double, std::milli>(
               steady_clock::now().time_since_epoch())
        .count();
}
