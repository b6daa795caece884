/*
 * test_cupti_abi.c - our CUPTI declarations (src/client/cupti_abi_int.h)
 * against NVIDIA's headers, where the CUDA toolkit is installed.
 *
 * The build never needs the headers: every offset is already asserted
 * against the numbers of reference/cupti-and-occupancy.md.  This test
 * closes the remaining gap - a wrong number copied into both places - on
 * machines that have the toolkit, and says it skipped otherwise.
 */
#include "client/cupti_abi_int.h"

#include <stddef.h>
#include <stdio.h>

#include "test.h"

#ifdef GPUFL_HAVE_CUPTI_HEADERS
#include <cuda.h>
#include <cupti.h>

#define SAME_OFF(ours, theirs, f1, f2)                                         \
    CHECK(offsetof(ours, f1) == offsetof(theirs, f2))
#define SAME_SIZE(ours, theirs) CHECK(sizeof(ours) == sizeof(theirs))

static void check_records(void)
{
    SAME_SIZE(gfl_cupti_kernel10, CUpti_ActivityKernel10);
    SAME_OFF(gfl_cupti_kernel10, CUpti_ActivityKernel10, registers_per_thread,
             registersPerThread);
    SAME_OFF(gfl_cupti_kernel10, CUpti_ActivityKernel10, start, start);
    SAME_OFF(gfl_cupti_kernel10, CUpti_ActivityKernel10, end, end);
    SAME_OFF(gfl_cupti_kernel10, CUpti_ActivityKernel10, device_id, deviceId);
    SAME_OFF(gfl_cupti_kernel10, CUpti_ActivityKernel10, stream_id, streamId);
    SAME_OFF(gfl_cupti_kernel10, CUpti_ActivityKernel10, grid_x, gridX);
    SAME_OFF(gfl_cupti_kernel10, CUpti_ActivityKernel10, block_z, blockZ);
    SAME_OFF(gfl_cupti_kernel10, CUpti_ActivityKernel10, static_shared_memory,
             staticSharedMemory);
    SAME_OFF(gfl_cupti_kernel10, CUpti_ActivityKernel10, dynamic_shared_memory,
             dynamicSharedMemory);
    SAME_OFF(gfl_cupti_kernel10, CUpti_ActivityKernel10,
             local_memory_per_thread, localMemoryPerThread);
    SAME_OFF(gfl_cupti_kernel10, CUpti_ActivityKernel10, correlation_id,
             correlationId);
    SAME_OFF(gfl_cupti_kernel10, CUpti_ActivityKernel10, name, name);
    SAME_OFF(gfl_cupti_kernel10, CUpti_ActivityKernel10, launch_type,
             launchType);
    SAME_OFF(gfl_cupti_kernel10, CUpti_ActivityKernel10,
             is_shared_memory_carveout_requested,
             isSharedMemoryCarveoutRequested);
    SAME_OFF(gfl_cupti_kernel10, CUpti_ActivityKernel10,
             shared_memory_carveout_requested, sharedMemoryCarveoutRequested);
    SAME_OFF(gfl_cupti_kernel10, CUpti_ActivityKernel10, shared_memory_executed,
             sharedMemoryExecuted);
    SAME_OFF(gfl_cupti_kernel10, CUpti_ActivityKernel10, shmem_limit_config,
             shmemLimitConfig);
    SAME_OFF(gfl_cupti_kernel10, CUpti_ActivityKernel10, local_memory_total_v2,
             localMemoryTotal_v2);
    SAME_OFF(gfl_cupti_kernel10, CUpti_ActivityKernel10, is_device_launched,
             isDeviceLaunched);

    SAME_SIZE(gfl_cupti_memcpy6, CUpti_ActivityMemcpy6);
    SAME_OFF(gfl_cupti_memcpy6, CUpti_ActivityMemcpy6, bytes, bytes);
    SAME_OFF(gfl_cupti_memcpy6, CUpti_ActivityMemcpy6, start, start);
    SAME_OFF(gfl_cupti_memcpy6, CUpti_ActivityMemcpy6, stream_id, streamId);
    SAME_OFF(gfl_cupti_memcpy6, CUpti_ActivityMemcpy6, correlation_id,
             correlationId);
    SAME_OFF(gfl_cupti_memcpy6, CUpti_ActivityMemcpy6, runtime_correlation_id,
             runtimeCorrelationId);
    SAME_OFF(gfl_cupti_memcpy6, CUpti_ActivityMemcpy6, copy_count, copyCount);

    SAME_SIZE(gfl_cupti_memcpy_ptop4, CUpti_ActivityMemcpyPtoP4);
    SAME_OFF(gfl_cupti_memcpy_ptop4, CUpti_ActivityMemcpyPtoP4, src_device_id,
             srcDeviceId);
    SAME_OFF(gfl_cupti_memcpy_ptop4, CUpti_ActivityMemcpyPtoP4, dst_device_id,
             dstDeviceId);
    SAME_OFF(gfl_cupti_memcpy_ptop4, CUpti_ActivityMemcpyPtoP4, correlation_id,
             correlationId);

    SAME_SIZE(gfl_cupti_memset4, CUpti_ActivityMemset4);
    SAME_OFF(gfl_cupti_memset4, CUpti_ActivityMemset4, value, value);
    SAME_OFF(gfl_cupti_memset4, CUpti_ActivityMemset4, correlation_id,
             correlationId);
    SAME_OFF(gfl_cupti_memset4, CUpti_ActivityMemset4, flags, flags);
    SAME_OFF(gfl_cupti_memset4, CUpti_ActivityMemset4, memory_kind, memoryKind);

    SAME_SIZE(gfl_cupti_sync2, CUpti_ActivitySynchronization2);
    SAME_OFF(gfl_cupti_sync2, CUpti_ActivitySynchronization2, correlation_id,
             correlationId);
    SAME_OFF(gfl_cupti_sync2, CUpti_ActivitySynchronization2, context_id,
             contextId);
    SAME_OFF(gfl_cupti_sync2, CUpti_ActivitySynchronization2, stream_id,
             streamId);
    SAME_OFF(gfl_cupti_sync2, CUpti_ActivitySynchronization2, return_value,
             returnValue);

    SAME_SIZE(gfl_cupti_memory4, CUpti_ActivityMemory4);
    SAME_OFF(gfl_cupti_memory4, CUpti_ActivityMemory4, correlation_id,
             correlationId);
    SAME_OFF(gfl_cupti_memory4, CUpti_ActivityMemory4, address, address);
    SAME_OFF(gfl_cupti_memory4, CUpti_ActivityMemory4, timestamp, timestamp);
    SAME_OFF(gfl_cupti_memory4, CUpti_ActivityMemory4, stream_id, streamId);
    SAME_OFF(gfl_cupti_memory4, CUpti_ActivityMemory4, name, name);
    SAME_OFF(gfl_cupti_memory4, CUpti_ActivityMemory4, source, source);

    SAME_SIZE(gfl_cupti_context3, CUpti_ActivityContext3);
    SAME_OFF(gfl_cupti_context3, CUpti_ActivityContext3, device_id, deviceId);

    SAME_SIZE(gfl_cupti_callback_data, CUpti_CallbackData);
    SAME_OFF(gfl_cupti_callback_data, CUpti_CallbackData, symbol_name,
             symbolName);
    SAME_OFF(gfl_cupti_callback_data, CUpti_CallbackData, correlation_data,
             correlationData);
    SAME_OFF(gfl_cupti_callback_data, CUpti_CallbackData, correlation_id,
             correlationId);

    SAME_SIZE(gfl_rt_launch_params, cudaLaunchKernel_v7000_params);
    SAME_OFF(gfl_rt_launch_params, cudaLaunchKernel_v7000_params, shared_mem,
             sharedMem);
    SAME_SIZE(gfl_rt_launch_config, cudaLaunchConfig_t);
    SAME_SIZE(gfl_drv_launch_params, cuLaunchKernel_params);
    SAME_OFF(gfl_drv_launch_params, cuLaunchKernel_params, shared_mem_bytes,
             sharedMemBytes);
    SAME_SIZE(gfl_drv_launch_config, CUlaunchConfig);
    SAME_OFF(gfl_drv_launch_config, CUlaunchConfig, h_stream, hStream);
    SAME_SIZE(gfl_drv_launch_ex_params, cuLaunchKernelEx_params);
}

/* ours and NVIDIA's are different enum types: compare as numbers */
static void check_values(void)
{
    CHECK((long)(GFL_CUPTI_ACT_CONCURRENT_KERNEL) ==
          (long)(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    CHECK((long)(GFL_CUPTI_ACT_MEMCPY2) == (long)(CUPTI_ACTIVITY_KIND_MEMCPY2));
    CHECK((long)(GFL_CUPTI_ACT_SYNCHRONIZATION) ==
          (long)(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION));
    CHECK((long)(GFL_CUPTI_ACT_MEMORY2) == (long)(CUPTI_ACTIVITY_KIND_MEMORY2));
    CHECK((long)(GFL_CUPTI_ACT_CONTEXT) == (long)(CUPTI_ACTIVITY_KIND_CONTEXT));
    CHECK((long)(GFL_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) ==
          (long)(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES));
    CHECK((long)(GFL_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) ==
          (long)(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED));
    CHECK((long)(GFL_CUPTI_ERROR_MAX_LIMIT_REACHED) ==
          (long)(CUPTI_ERROR_MAX_LIMIT_REACHED));
    CHECK((long)(GFL_CUPTI_COPY_PTOP) ==
          (long)(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP));
    CHECK((long)(GFL_CUPTI_MEM_MANAGED_STATIC) ==
          (long)(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC));
    CHECK((long)(GFL_RT_CBID___cudaLaunchKernel_v13000) ==
          (long)(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000));
    CHECK((long)(GFL_RT_CBID___cudaLaunchKernel_ptsz_v13000) ==
          (long)(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000));
    CHECK((long)(GFL_RT_CBID_cudaLaunchKernelExC_v11060) ==
          (long)(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060));
    CHECK((long)(GFL_RT_CBID_cudaLaunchCooperativeKernel_v9000) ==
          (long)(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000));
    CHECK((long)(GFL_RT_CBID_cudaGraphLaunch_v10000) ==
          (long)(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000));
    CHECK((long)(GFL_DRV_CBID_cuLaunchKernel) ==
          (long)(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
    CHECK((long)(GFL_DRV_CBID_cuLaunchKernelEx) ==
          (long)(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx));
    CHECK((long)(GFL_DRV_CBID_cuLaunchKernelEx_ptsz) ==
          (long)(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz));
    CHECK((long)(GFL_DRV_CBID_cuLaunchCooperativeKernel) ==
          (long)(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel));
    CHECK((long)(GFL_DRV_CBID_cuGraphLaunch) ==
          (long)(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch));
    CHECK((long)(GFL_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) ==
          (long)(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
    CHECK((long)(GFL_CU_ATTR_MAX_BLOCKS_PER_MULTIPROCESSOR) ==
          (long)(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR));
    CHECK((long)(GFL_CU_ATTR_RESERVED_SHARED_MEMORY_PER_BLOCK) ==
          (long)(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK));
    CHECK((long)(GFL_CU_ATTR_MAX_REGISTERS_PER_BLOCK) ==
          (long)(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK));
    CHECK((long)(GFL_CUDA_ERROR_NO_DEVICE) == (long)(CUDA_ERROR_NO_DEVICE));
}
#endif

int main(void)
{
#ifdef GPUFL_HAVE_CUPTI_HEADERS
    check_records();
    check_values();
#else
    printf("skipped: CUDA toolkit headers (cupti_activity.h) not found; the "
           "layouts are still checked by _Static_assert in "
           "cupti_abi_int.h\n0 passed, 0 failed\n");
    return 0;
#endif
    TEST_DONE();
}
