/*
 * test_cupti_abi.c - our CUPTI declarations (src/client/cupti_abi_int.h)
 * against NVIDIA's headers, where the CUDA toolkit is installed.
 *
 * The build never needs the headers: every offset is already asserted
 * against the numbers of reference/cupti-and-occupancy.md.  This test
 * closes the remaining gap - a wrong number copied into both places - on
 * machines that have the toolkit, and says it skipped otherwise.
 */
#include "client/cupti_prof_abi_int.h"

#include <stddef.h>
#include <stdio.h>

#include "test.h"

#ifdef GPUFL_HAVE_CUPTI_HEADERS
#include <cuda.h>
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

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

/* The profiling engines' structs, and the size values the params
 * structs must carry (NVIDIA's *_STRUCT_SIZE macros, not sizeof). */
#define SAME_VAL(a, b) CHECK((long)(a) == (long)(b))
static void check_profiling(void)
{
    SAME_SIZE(gfl_cupti_resource_data, CUpti_ResourceData);
    SAME_OFF(gfl_cupti_resource_data, CUpti_ResourceData, resource_descriptor,
             resourceDescriptor);
    SAME_SIZE(gfl_cupti_module_data, CUpti_ModuleResourceData);
    SAME_OFF(gfl_cupti_module_data, CUpti_ModuleResourceData, cubin_size,
             cubinSize);
    SAME_OFF(gfl_cupti_module_data, CUpti_ModuleResourceData, cubin, pCubin);

    SAME_VAL(GFL_CUPTI_PROFILER_INIT_SIZE,
             CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
    SAME_VAL(GFL_CUPTI_DEVICE_SUPPORTED_SIZE,
             CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE);
    SAME_OFF(gfl_cupti_device_supported_params,
             CUpti_Profiler_DeviceSupported_Params, cu_device, cuDevice);
    SAME_OFF(gfl_cupti_device_supported_params,
             CUpti_Profiler_DeviceSupported_Params, is_supported, isSupported);
    SAME_OFF(gfl_cupti_device_supported_params,
             CUpti_Profiler_DeviceSupported_Params, confidential_compute,
             confidentialCompute);
    SAME_OFF(gfl_cupti_device_supported_params,
             CUpti_Profiler_DeviceSupported_Params, wsl, wsl);
    SAME_OFF(gfl_cupti_device_supported_params,
             CUpti_Profiler_DeviceSupported_Params, api, api);
    SAME_VAL(GFL_CUPTI_PROFILER_SASS_METRICS, CUPTI_PROFILER_SASS_METRICS);
    SAME_VAL(GFL_CUPTI_PROFILER_PC_SAMPLING, CUPTI_PROFILER_PC_SAMPLING);
    SAME_VAL(GFL_CUPTI_PROFILER_CONFIGURATION_SUPPORTED,
             CUPTI_PROFILER_CONFIGURATION_SUPPORTED);
    SAME_VAL(GFL_CUPTI_CHIP_NAME_SIZE,
             CUpti_Device_GetChipName_Params_STRUCT_SIZE);
    SAME_OFF(gfl_cupti_chip_name_params, CUpti_Device_GetChipName_Params,
             chip_name, pChipName);

    SAME_SIZE(gfl_cupti_sass_metric_details, CUpti_SassMetrics_MetricDetails);
    SAME_VAL(GFL_CUPTI_SASS_NUM_METRICS_SIZE,
             CUpti_SassMetrics_GetNumOfMetrics_Params_STRUCT_SIZE);
    SAME_VAL(GFL_CUPTI_SASS_METRICS_SIZE,
             CUpti_SassMetrics_GetMetrics_Params_STRUCT_SIZE);
    SAME_VAL(GFL_CUPTI_SASS_PROPERTIES_SIZE,
             CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE);
    SAME_OFF(gfl_cupti_sass_properties_params,
             CUpti_SassMetrics_GetProperties_Params, metric, metric);
    SAME_SIZE(gfl_cupti_sass_config, CUpti_SassMetrics_Config);
    SAME_OFF(gfl_cupti_sass_config, CUpti_SassMetrics_Config,
             output_granularity, outputGranularity);
    SAME_VAL(GFL_CUPTI_SASS_SET_CONFIG_SIZE,
             CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE);
    SAME_OFF(gfl_cupti_sass_set_config_params,
             CUpti_SassMetricsSetConfig_Params, configs, pConfigs);
    SAME_OFF(gfl_cupti_sass_set_config_params,
             CUpti_SassMetricsSetConfig_Params, device_index, deviceIndex);
    SAME_VAL(GFL_CUPTI_SASS_UNSET_CONFIG_SIZE,
             CUpti_SassMetricsUnsetConfig_Params_STRUCT_SIZE);
    SAME_VAL(GFL_CUPTI_SASS_ENABLE_SIZE,
             CUpti_SassMetricsEnable_Params_STRUCT_SIZE);
    SAME_OFF(gfl_cupti_sass_enable_params, CUpti_SassMetricsEnable_Params,
             lazy_patching, enableLazyPatching);
    SAME_VAL(GFL_CUPTI_SASS_DISABLE_SIZE,
             CUpti_SassMetricsDisable_Params_STRUCT_SIZE);
    SAME_OFF(gfl_cupti_sass_disable_params, CUpti_SassMetricsDisable_Params,
             num_dropped, numOfDroppedRecords);
    SAME_VAL(GFL_CUPTI_SASS_DATA_PROPS_SIZE,
             CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE);
    SAME_OFF(gfl_cupti_sass_data_props_params,
             CUpti_SassMetricsGetDataProperties_Params, num_instances,
             numOfInstances);
    SAME_SIZE(gfl_cupti_sass_instance_value, CUpti_SassMetrics_InstanceValue);
    SAME_SIZE(gfl_cupti_sass_data, CUpti_SassMetrics_Data);
    SAME_OFF(gfl_cupti_sass_data, CUpti_SassMetrics_Data, cubin_crc, cubinCrc);
    SAME_OFF(gfl_cupti_sass_data, CUpti_SassMetrics_Data, function_name,
             functionName);
    SAME_OFF(gfl_cupti_sass_data, CUpti_SassMetrics_Data, pc_offset, pcOffset);
    SAME_OFF(gfl_cupti_sass_data, CUpti_SassMetrics_Data, values,
             pInstanceValues);
    SAME_SIZE(gfl_cupti_sass_flush_params, CUpti_SassMetricsFlushData_Params);
    SAME_VAL(GFL_CUPTI_SASS_FLUSH_SIZE,
             CUpti_SassMetricsFlushData_Params_STRUCT_SIZE);
    SAME_OFF(gfl_cupti_sass_flush_params, CUpti_SassMetricsFlushData_Params,
             data, pMetricsData);

    SAME_SIZE(gfl_cupti_pcs_stall, CUpti_PCSamplingStallReason);
    SAME_SIZE(gfl_cupti_pcs_pc, CUpti_PCSamplingPCData);
    SAME_OFF(gfl_cupti_pcs_pc, CUpti_PCSamplingPCData, cubin_crc, cubinCrc);
    SAME_OFF(gfl_cupti_pcs_pc, CUpti_PCSamplingPCData, pc_offset, pcOffset);
    SAME_OFF(gfl_cupti_pcs_pc, CUpti_PCSamplingPCData, function_name,
             functionName);
    SAME_OFF(gfl_cupti_pcs_pc, CUpti_PCSamplingPCData, stall_reason_count,
             stallReasonCount);
    SAME_OFF(gfl_cupti_pcs_pc, CUpti_PCSamplingPCData, stall_reasons,
             stallReason);
    SAME_OFF(gfl_cupti_pcs_pc, CUpti_PCSamplingPCData, correlation_id,
             correlationId);
    SAME_SIZE(gfl_cupti_pcs_data, CUpti_PCSamplingData);
    SAME_OFF(gfl_cupti_pcs_data, CUpti_PCSamplingData, remaining_num_pcs,
             remainingNumPcs);
    SAME_OFF(gfl_cupti_pcs_data, CUpti_PCSamplingData, pc_data, pPcData);
    SAME_OFF(gfl_cupti_pcs_data, CUpti_PCSamplingData, hardware_buffer_full,
             hardwareBufferFull);
    SAME_SIZE(gfl_cupti_pcs_config_info, CUpti_PCSamplingConfigurationInfo);
    SAME_OFF(gfl_cupti_pcs_config_info, CUpti_PCSamplingConfigurationInfo,
             attribute_status, attributeStatus);
    SAME_OFF(gfl_cupti_pcs_config_info, CUpti_PCSamplingConfigurationInfo, u,
             attributeData);
    SAME_VAL(GFL_CUPTI_PCS_CONFIG_SIZE,
             CUpti_PCSamplingConfigurationInfoParamsSize);
    SAME_VAL(GFL_CUPTI_PCS_GET_DATA_SIZE, CUpti_PCSamplingGetDataParamsSize);
    SAME_VAL(GFL_CUPTI_PCS_CTX_SIZE, CUpti_PCSamplingEnableParamsSize);
    SAME_VAL(GFL_CUPTI_PCS_CTX_SIZE, CUpti_PCSamplingDisableParamsSize);
    SAME_VAL(GFL_CUPTI_PCS_NUM_STALL_SIZE,
             CUpti_PCSamplingGetNumStallReasonsParamsSize);
    SAME_VAL(GFL_CUPTI_PCS_STALL_SIZE,
             CUpti_PCSamplingGetStallReasonsParamsSize);
    SAME_OFF(gfl_cupti_pcs_stall_params, CUpti_PCSamplingGetStallReasonsParams,
             names, stallReasons);
    SAME_VAL(GFL_CUPTI_SASS_SOURCE_SIZE,
             CUpti_GetSassToSourceCorrelationParamsSize);
    SAME_OFF(gfl_cupti_sass_source_params,
             CUpti_GetSassToSourceCorrelationParams, line_number, lineNumber);
    SAME_OFF(gfl_cupti_sass_source_params,
             CUpti_GetSassToSourceCorrelationParams, pc_offset, pcOffset);
    SAME_OFF(gfl_cupti_sass_source_params,
             CUpti_GetSassToSourceCorrelationParams, dir_name, dirName);
    SAME_VAL(GFL_CUPTI_CUBIN_CRC_SIZE, CUpti_GetCubinCrcParamsSize);
    SAME_OFF(gfl_cupti_cubin_crc_params, CUpti_GetCubinCrcParams, cubin_crc,
             cubinCrc);
    SAME_VAL(GFL_CUPTI_STALL_REASON_STRING_SIZE,
             CUPTI_STALL_REASON_STRING_SIZE);
    SAME_VAL(GFL_CUPTI_PCS_ATTR_SAMPLING_DATA_BUFFER,
             CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER);
    SAME_VAL(
        GFL_CUPTI_PCS_ATTR_ENABLE_START_STOP_CONTROL,
        CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL);
    SAME_VAL(GFL_CUPTI_PCS_MODE_CONTINUOUS,
             CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS);
    SAME_VAL(GFL_CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
             CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
    SAME_VAL(GFL_CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
             CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    SAME_VAL(GFL_CUPTI_CBID_RESOURCE_MODULE_LOADED,
             CUPTI_CBID_RESOURCE_MODULE_LOADED);
    SAME_VAL(GFL_CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CB_DOMAIN_RESOURCE);
    SAME_VAL(GFL_CUPTI_ERROR_INVALID_OPERATION, CUPTI_ERROR_INVALID_OPERATION);
    SAME_VAL(GFL_CUPTI_ERROR_OUT_OF_MEMORY, CUPTI_ERROR_OUT_OF_MEMORY);
    SAME_VAL(GFL_CUPTI_ERROR_INVALID_CONTEXT, CUPTI_ERROR_INVALID_CONTEXT);
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
    check_profiling();
#else
    printf("skipped: CUDA toolkit headers (cupti_activity.h) not found; the "
           "layouts are still checked by _Static_assert in "
           "cupti_abi_int.h\n0 passed, 0 failed\n");
    return 0;
#endif
    TEST_DONE();
}
