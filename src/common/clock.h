/*
 * clock.h - time sources shared by every component.
 */
#ifndef GPUFL_COMMON_CLOCK_H
#define GPUFL_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Monotonic ns (CLOCK_MONOTONIC, vDSO: ~20 ns). */
static inline uint64_t clock_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Wall-clock ns since the Unix epoch. */
static inline uint64_t clock_real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The wall-clock instant ns from now, as the absolute timeouts of
 * pthread_cond_timedwait and pthread_timedjoin_np want it. */
static inline struct timespec clock_real_after(uint64_t ns)
{
    uint64_t t = clock_real_ns() + ns;
    struct timespec ts = { (time_t)(t / 1000000000ull),
                           (long)(t % 1000000000ull) };
    return ts;
}

/* Thread CPU time in ns (for benchmarks). */
static inline uint64_t clock_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
