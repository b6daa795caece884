/*
 * fake_cupti.h - the test-control interface between the fake libcuda.so.1
 * and the fake libcupti.so.13 (tests/cupti/fake_*.c).  The fake driver
 * finds these functions with dlsym in the CUPTI the engine loaded, the way
 * the real driver and CUPTI share one tool interface.
 */
#ifndef GPUFL_TESTS_FAKE_CUPTI_H
#define GPUFL_TESTS_FAKE_CUPTI_H

#include <stdint.h>

/* One kernel launch: fires the launch callbacks of the API named by
 * rt_cbid (runtime, 0 = none) around drv_cbid (driver, 0 = none), with the
 * real parameter structs, then queues the kernel's activity record. */
typedef void (*fakecupti_launch_fn)(uint32_t rt_cbid, uint32_t drv_cbid,
                                    const char *name, const unsigned grid[3],
                                    const unsigned block[3], unsigned smem,
                                    void *stream, int fail);
/* A non-launch CUDA call's callbacks (runtime around driver) returning
 * ret; returns ret. */
typedef int (*fakecupti_api_fn)(uint32_t rt_cbid, uint32_t drv_cbid,
                                const char *rt_name, const char *drv_name,
                                int ret);
/* Deliver the scripted records (first call only). */
typedef void (*fakecupti_sync_fn)(void);
/* 1 while the calling thread runs inside a CUPTI callback of ours. */
typedef int (*fakecupti_in_callback_fn)(void);

#endif
