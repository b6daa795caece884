/*
 * test_cupti_abi.c - our CUPTI declarations (src/client/cupti_abi_int.h)
 * against NVIDIA's headers, where the CUDA toolkit is installed.
 *
 * The build never needs the headers: every offset is already asserted
 * there (_Static_assert; docs/cupti-internals.md#our-abi-declarations).
 * This test closes the remaining gap - a wrong number copied into both
 * places - on machines that have the toolkit, and says it skipped
 * otherwise.
 */
#include "client/cupti_prof_abi_int.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <gpufl/record.h>

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

/* Every field of every struct we declare, not only the ones read today:
 * the fake writes them all, and a field read later must already agree. */
static void check_records(void)
{
#define K(a, b) SAME_OFF(gfl_cupti_kernel10, CUpti_ActivityKernel10, a, b)
    SAME_SIZE(gfl_cupti_kernel10, CUpti_ActivityKernel10);
    K(kind, kind);
    K(cache_config, cacheConfig);
    K(shared_memory_config, sharedMemoryConfig);
    K(registers_per_thread, registersPerThread);
    K(partitioned_cache_requested, partitionedGlobalCacheRequested);
    K(partitioned_cache_executed, partitionedGlobalCacheExecuted);
    K(start, start);
    K(end, end);
    K(completed, completed);
    K(device_id, deviceId);
    K(context_id, contextId);
    K(stream_id, streamId);
    K(grid_x, gridX);
    K(grid_y, gridY);
    K(grid_z, gridZ);
    K(block_x, blockX);
    K(block_y, blockY);
    K(block_z, blockZ);
    K(static_shared_memory, staticSharedMemory);
    K(dynamic_shared_memory, dynamicSharedMemory);
    K(local_memory_per_thread, localMemoryPerThread);
    K(local_memory_total, localMemoryTotal);
    K(correlation_id, correlationId);
    K(grid_id, gridId);
    K(name, name);
    K(reserved0, reserved0);
    K(queued, queued);
    K(submitted, submitted);
    K(launch_type, launchType);
    K(is_shared_memory_carveout_requested, isSharedMemoryCarveoutRequested);
    K(shared_memory_carveout_requested, sharedMemoryCarveoutRequested);
    K(padding, padding);
    K(shared_memory_executed, sharedMemoryExecuted);
    K(graph_node_id, graphNodeId);
    K(shmem_limit_config, shmemLimitConfig);
    K(graph_id, graphId);
    K(p_access_policy_window, pAccessPolicyWindow);
    K(channel_id, channelID);
    K(channel_type, channelType);
    K(cluster_x, clusterX);
    K(cluster_y, clusterY);
    K(cluster_z, clusterZ);
    K(cluster_scheduling_policy, clusterSchedulingPolicy);
    K(local_memory_total_v2, localMemoryTotal_v2);
    K(max_potential_cluster_size, maxPotentialClusterSize);
    K(max_active_clusters, maxActiveClusters);
    K(is_device_launched, isDeviceLaunched);
    K(padding3, padding3);
#undef K
    /* the cacheConfig union is one byte: requested in the low nibble */
    {
        CUpti_ActivityKernel10 k;
        memset(&k, 0, sizeof k);
        k.cacheConfig.config.requested = 3;
        k.cacheConfig.config.executed = 1;
        CHECK(k.cacheConfig.both == 0x13);
        CHECK(sizeof k.cacheConfig == 1);
    }

#define M(a, b) SAME_OFF(gfl_cupti_memcpy6, CUpti_ActivityMemcpy6, a, b)
    SAME_SIZE(gfl_cupti_memcpy6, CUpti_ActivityMemcpy6);
    M(kind, kind);
    M(copy_kind, copyKind);
    M(src_kind, srcKind);
    M(dst_kind, dstKind);
    M(flags, flags);
    M(bytes, bytes);
    M(start, start);
    M(end, end);
    M(device_id, deviceId);
    M(context_id, contextId);
    M(stream_id, streamId);
    M(correlation_id, correlationId);
    M(runtime_correlation_id, runtimeCorrelationId);
    M(pad, pad);
    M(reserved0, reserved0);
    M(graph_node_id, graphNodeId);
    M(graph_id, graphId);
    M(channel_id, channelID);
    M(channel_type, channelType);
    M(is_device_launched, isDeviceLaunched);
    M(pad2, pad2);
    M(copy_count, copyCount);
#undef M

#define P(a, b)                                                                \
    SAME_OFF(gfl_cupti_memcpy_ptop4, CUpti_ActivityMemcpyPtoP4, a, b)
    SAME_SIZE(gfl_cupti_memcpy_ptop4, CUpti_ActivityMemcpyPtoP4);
    P(kind, kind);
    P(copy_kind, copyKind);
    P(src_kind, srcKind);
    P(dst_kind, dstKind);
    P(flags, flags);
    P(bytes, bytes);
    P(start, start);
    P(end, end);
    P(device_id, deviceId);
    P(context_id, contextId);
    P(stream_id, streamId);
    P(src_device_id, srcDeviceId);
    P(src_context_id, srcContextId);
    P(dst_device_id, dstDeviceId);
    P(dst_context_id, dstContextId);
    P(correlation_id, correlationId);
    P(reserved0, reserved0);
    P(graph_node_id, graphNodeId);
    P(graph_id, graphId);
    P(channel_id, channelID);
    P(channel_type, channelType);
#undef P

#define S(a, b) SAME_OFF(gfl_cupti_memset4, CUpti_ActivityMemset4, a, b)
    SAME_SIZE(gfl_cupti_memset4, CUpti_ActivityMemset4);
    S(kind, kind);
    S(value, value);
    S(bytes, bytes);
    S(start, start);
    S(end, end);
    S(device_id, deviceId);
    S(context_id, contextId);
    S(stream_id, streamId);
    S(correlation_id, correlationId);
    S(flags, flags);
    S(memory_kind, memoryKind);
    S(pad, pad);
    S(reserved0, reserved0);
    S(graph_node_id, graphNodeId);
    S(graph_id, graphId);
    S(channel_id, channelID);
    S(channel_type, channelType);
    S(is_device_launched, isDeviceLaunched);
    S(pad2, pad2);
#undef S

#define Y(a, b) SAME_OFF(gfl_cupti_sync2, CUpti_ActivitySynchronization2, a, b)
    SAME_SIZE(gfl_cupti_sync2, CUpti_ActivitySynchronization2);
    Y(kind, kind);
    Y(type, type);
    Y(start, start);
    Y(end, end);
    Y(correlation_id, correlationId);
    Y(context_id, contextId);
    Y(stream_id, streamId);
    Y(cuda_event_id, cudaEventId);
    Y(cuda_event_sync_id, cudaEventSyncId);
    Y(return_value, returnValue);
    Y(pad, pad);
#undef Y

#define R(a, b) SAME_OFF(gfl_cupti_memory4, CUpti_ActivityMemory4, a, b)
    SAME_SIZE(gfl_cupti_memory4, CUpti_ActivityMemory4);
    R(kind, kind);
    R(memory_operation_type, memoryOperationType);
    R(memory_kind, memoryKind);
    R(correlation_id, correlationId);
    R(address, address);
    R(bytes, bytes);
    R(timestamp, timestamp);
    R(pc, PC);
    R(process_id, processId);
    R(device_id, deviceId);
    R(context_id, contextId);
    R(stream_id, streamId);
    R(name, name);
    R(is_async, isAsync);
    R(pad1, pad1);
    R(memory_pool_config, memoryPoolConfig);
    R(memory_pool_config.memory_pool_type, memoryPoolConfig.memoryPoolType);
    R(memory_pool_config.address, memoryPoolConfig.address);
    R(memory_pool_config.release_threshold, memoryPoolConfig.releaseThreshold);
    R(memory_pool_config.pool_size_or_pid, memoryPoolConfig.pool);
    R(memory_pool_config.utilized_size, memoryPoolConfig.utilizedSize);
    R(source, source);
#undef R

#define C(a, b) SAME_OFF(gfl_cupti_context3, CUpti_ActivityContext3, a, b)
    SAME_SIZE(gfl_cupti_context3, CUpti_ActivityContext3);
    C(kind, kind);
    C(context_id, contextId);
    C(device_id, deviceId);
    C(compute_api_kind, computeApiKind);
    C(null_stream_id, nullStreamId);
    C(parent_context_id, parentContextId);
    C(is_green_context, isGreenContext);
    C(num_multiprocessors, numMultiprocessors);
    C(cig_mode, cigMode);
    C(padding2, padding2);
#undef C
    SAME_SIZE(gfl_cupti_activity, CUpti_Activity);

#define D(a, b) SAME_OFF(gfl_cupti_callback_data, CUpti_CallbackData, a, b)
    SAME_SIZE(gfl_cupti_callback_data, CUpti_CallbackData);
    D(callback_site, callbackSite);
    D(function_name, functionName);
    D(function_params, functionParams);
    D(function_return_value, functionReturnValue);
    D(symbol_name, symbolName);
    D(context, context);
    D(context_uid, contextUid);
    D(correlation_data, correlationData);
    D(correlation_id, correlationId);
#undef D

    /* launch parameter structs: every CBID's own struct (the fake hands
     * ours to the engine for all of them) */
#define RT(T)                                                                  \
    SAME_SIZE(gfl_rt_launch_params, T);                                        \
    SAME_OFF(gfl_rt_launch_params, T, func, func);                             \
    SAME_OFF(gfl_rt_launch_params, T, grid_dim, gridDim);                      \
    SAME_OFF(gfl_rt_launch_params, T, block_dim, blockDim);                    \
    SAME_OFF(gfl_rt_launch_params, T, args, args);                             \
    SAME_OFF(gfl_rt_launch_params, T, shared_mem, sharedMem);                  \
    SAME_OFF(gfl_rt_launch_params, T, stream, stream)
    RT(cudaLaunchKernel_v7000_params);
    RT(cudaLaunchKernel_ptsz_v7000_params);
    RT(cudaLaunchCooperativeKernel_v9000_params);
    RT(cudaLaunchCooperativeKernel_ptsz_v9000_params);
#undef RT
    SAME_SIZE(gfl_dim3, dim3);
    SAME_OFF(gfl_dim3, dim3, z, z);
    SAME_SIZE(gfl_rt_launch_config, cudaLaunchConfig_t);
    SAME_OFF(gfl_rt_launch_config, cudaLaunchConfig_t, grid_dim, gridDim);
    SAME_OFF(gfl_rt_launch_config, cudaLaunchConfig_t, block_dim, blockDim);
    SAME_OFF(gfl_rt_launch_config, cudaLaunchConfig_t, dynamic_smem_bytes,
             dynamicSmemBytes);
    SAME_OFF(gfl_rt_launch_config, cudaLaunchConfig_t, stream, stream);
    SAME_OFF(gfl_rt_launch_config, cudaLaunchConfig_t, attrs, attrs);
    SAME_OFF(gfl_rt_launch_config, cudaLaunchConfig_t, num_attrs, numAttrs);
#define RX(T)                                                                  \
    SAME_SIZE(gfl_rt_launch_ex_params, T);                                     \
    SAME_OFF(gfl_rt_launch_ex_params, T, config, config);                      \
    SAME_OFF(gfl_rt_launch_ex_params, T, func, func);                          \
    SAME_OFF(gfl_rt_launch_ex_params, T, args, args)
    RX(cudaLaunchKernelExC_v11060_params);
    RX(cudaLaunchKernelExC_ptsz_v11060_params);
#undef RX
#define DR(T)                                                                  \
    SAME_OFF(gfl_drv_launch_params, T, f, f);                                  \
    SAME_OFF(gfl_drv_launch_params, T, grid_x, gridDimX);                      \
    SAME_OFF(gfl_drv_launch_params, T, grid_y, gridDimY);                      \
    SAME_OFF(gfl_drv_launch_params, T, grid_z, gridDimZ);                      \
    SAME_OFF(gfl_drv_launch_params, T, block_x, blockDimX);                    \
    SAME_OFF(gfl_drv_launch_params, T, block_y, blockDimY);                    \
    SAME_OFF(gfl_drv_launch_params, T, block_z, blockDimZ);                    \
    SAME_OFF(gfl_drv_launch_params, T, shared_mem_bytes, sharedMemBytes);      \
    SAME_OFF(gfl_drv_launch_params, T, h_stream, hStream);                     \
    SAME_OFF(gfl_drv_launch_params, T, kernel_params, kernelParams)
    DR(cuLaunchKernel_params);
    DR(cuLaunchKernel_ptsz_params);
    DR(cuLaunchCooperativeKernel_params);
    DR(cuLaunchCooperativeKernel_ptsz_params);
#undef DR
    SAME_SIZE(gfl_drv_launch_params, cuLaunchKernel_params);
    SAME_SIZE(gfl_drv_launch_params, cuLaunchKernel_ptsz_params);
    SAME_OFF(gfl_drv_launch_params, cuLaunchKernel_params, extra, extra);
    /* the cooperative struct ends before `extra` */
    CHECK(sizeof(cuLaunchCooperativeKernel_params) ==
          offsetof(gfl_drv_launch_params, extra));
    SAME_SIZE(gfl_drv_launch_config, CUlaunchConfig);
    SAME_OFF(gfl_drv_launch_config, CUlaunchConfig, grid_x, gridDimX);
    SAME_OFF(gfl_drv_launch_config, CUlaunchConfig, grid_z, gridDimZ);
    SAME_OFF(gfl_drv_launch_config, CUlaunchConfig, block_x, blockDimX);
    SAME_OFF(gfl_drv_launch_config, CUlaunchConfig, block_z, blockDimZ);
    SAME_OFF(gfl_drv_launch_config, CUlaunchConfig, shared_mem_bytes,
             sharedMemBytes);
    SAME_OFF(gfl_drv_launch_config, CUlaunchConfig, h_stream, hStream);
    SAME_OFF(gfl_drv_launch_config, CUlaunchConfig, attrs, attrs);
    SAME_OFF(gfl_drv_launch_config, CUlaunchConfig, num_attrs, numAttrs);
#define DX(T)                                                                  \
    SAME_SIZE(gfl_drv_launch_ex_params, T);                                    \
    SAME_OFF(gfl_drv_launch_ex_params, T, config, config);                     \
    SAME_OFF(gfl_drv_launch_ex_params, T, f, f);                               \
    SAME_OFF(gfl_drv_launch_ex_params, T, kernel_params, kernelParams);        \
    SAME_OFF(gfl_drv_launch_ex_params, T, extra, extra)
    DX(cuLaunchKernelEx_params);
    DX(cuLaunchKernelEx_ptsz_params);
#undef DX
    SAME_SIZE(gfl_cu_uuid, CUuuid);
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
#define V(a, b) CHECK((long)(a) == (long)(b))
static void check_values(void)
{
    /* cupti_result.h */
    V(GFL_CUPTI_SUCCESS, CUPTI_SUCCESS);
    V(GFL_CUPTI_ERROR_INVALID_PARAMETER, CUPTI_ERROR_INVALID_PARAMETER);
    V(GFL_CUPTI_ERROR_INVALID_DEVICE, CUPTI_ERROR_INVALID_DEVICE);
    V(GFL_CUPTI_ERROR_INVALID_CONTEXT, CUPTI_ERROR_INVALID_CONTEXT);
    V(GFL_CUPTI_ERROR_INVALID_OPERATION, CUPTI_ERROR_INVALID_OPERATION);
    V(GFL_CUPTI_ERROR_OUT_OF_MEMORY, CUPTI_ERROR_OUT_OF_MEMORY);
    V(GFL_CUPTI_ERROR_MAX_LIMIT_REACHED, CUPTI_ERROR_MAX_LIMIT_REACHED);
    V(GFL_CUPTI_ERROR_NOT_INITIALIZED, CUPTI_ERROR_NOT_INITIALIZED);
    V(GFL_CUPTI_ERROR_INVALID_KIND, CUPTI_ERROR_INVALID_KIND);
    V(GFL_CUPTI_ERROR_NOT_SUPPORTED, CUPTI_ERROR_NOT_SUPPORTED);
    V(GFL_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES,
      CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);
    V(GFL_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
      CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    V(GFL_CUPTI_ERROR_UNKNOWN, CUPTI_ERROR_UNKNOWN);
    /* cuda.h */
    V(GFL_CUDA_SUCCESS, CUDA_SUCCESS);
    V(GFL_CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_NOT_INITIALIZED);
    V(GFL_CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE);
    V(GFL_CUDA_ERROR_STUB_LIBRARY, CUDA_ERROR_STUB_LIBRARY);
    V(GFL_CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, CUDA_ERROR_SYSTEM_DRIVER_MISMATCH);
    V(GFL_CU_FUNC_CACHE_PREFER_NONE, CU_FUNC_CACHE_PREFER_NONE);
    V(GFL_CU_FUNC_CACHE_PREFER_SHARED, CU_FUNC_CACHE_PREFER_SHARED);
    V(GFL_CU_FUNC_CACHE_PREFER_L1, CU_FUNC_CACHE_PREFER_L1);
    V(GFL_CU_FUNC_CACHE_PREFER_EQUAL, CU_FUNC_CACHE_PREFER_EQUAL);
    V(GFL_CU_ATTR_MAX_THREADS_PER_BLOCK,
      CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    V(GFL_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK,
      CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    V(GFL_CU_ATTR_MAX_REGISTERS_PER_BLOCK,
      CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    V(GFL_CU_ATTR_WARP_SIZE, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    V(GFL_CU_ATTR_MULTIPROCESSOR_COUNT,
      CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    V(GFL_CU_ATTR_MAX_THREADS_PER_MULTIPROCESSOR,
      CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    V(GFL_CU_ATTR_COMPUTE_CAPABILITY_MAJOR,
      CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    V(GFL_CU_ATTR_COMPUTE_CAPABILITY_MINOR,
      CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    V(GFL_CU_ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
      CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    V(GFL_CU_ATTR_MAX_REGISTERS_PER_MULTIPROCESSOR,
      CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    V(GFL_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
      CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    V(GFL_CU_ATTR_MAX_BLOCKS_PER_MULTIPROCESSOR,
      CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
    V(GFL_CU_ATTR_RESERVED_SHARED_MEMORY_PER_BLOCK,
      CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
    /* activity kinds and flags (cupti_activity.h) */
    V(GFL_CUPTI_ACT_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY);
    V(GFL_CUPTI_ACT_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET);
    V(GFL_CUPTI_ACT_KERNEL, CUPTI_ACTIVITY_KIND_KERNEL);
    V(GFL_CUPTI_ACT_DRIVER, CUPTI_ACTIVITY_KIND_DRIVER);
    V(GFL_CUPTI_ACT_RUNTIME, CUPTI_ACTIVITY_KIND_RUNTIME);
    V(GFL_CUPTI_ACT_DEVICE, CUPTI_ACTIVITY_KIND_DEVICE);
    V(GFL_CUPTI_ACT_CONTEXT, CUPTI_ACTIVITY_KIND_CONTEXT);
    V(GFL_CUPTI_ACT_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    V(GFL_CUPTI_ACT_OVERHEAD, CUPTI_ACTIVITY_KIND_OVERHEAD);
    V(GFL_CUPTI_ACT_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMCPY2);
    V(GFL_CUPTI_ACT_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
    V(GFL_CUPTI_ACT_MEMORY2, CUPTI_ACTIVITY_KIND_MEMORY2);
    V(GFL_CUPTI_FLUSH_FORCED, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    V(GFL_CUPTI_MEMCPY_ASYNC, CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC);
    V(GFL_CUPTI_MEMSET_ASYNC, CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC);
    V(GFL_CUPTI_MEMOP_ALLOC, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION);
    V(GFL_CUPTI_MEMOP_RELEASE, CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE);
    V(GFL_CUPTI_SHMEM_LIMIT_OPTIN, CUPTI_FUNC_SHMEM_LIMIT_OPTIN);
    V(GFL_CUPTI_LAUNCH_COOP_SINGLE,
      CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE);
    V(GFL_CUPTI_LAUNCH_COOP_MULTI,
      CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE);
    V(GFL_CUPTI_SYNC_INVALID, CUPTI_SYNCHRONIZATION_INVALID_VALUE);
    V(GFL_CUPTI_INVALID_STREAM_ID, CUPTI_INVALID_STREAM_ID);
    V(GFL_CUPTI_COPY_UNKNOWN, CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN);
    V(GFL_CUPTI_COPY_HTOD, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
    V(GFL_CUPTI_COPY_DTOH, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH);
    V(GFL_CUPTI_COPY_HTOA, CUPTI_ACTIVITY_MEMCPY_KIND_HTOA);
    V(GFL_CUPTI_COPY_ATOH, CUPTI_ACTIVITY_MEMCPY_KIND_ATOH);
    V(GFL_CUPTI_COPY_ATOA, CUPTI_ACTIVITY_MEMCPY_KIND_ATOA);
    V(GFL_CUPTI_COPY_ATOD, CUPTI_ACTIVITY_MEMCPY_KIND_ATOD);
    V(GFL_CUPTI_COPY_DTOA, CUPTI_ACTIVITY_MEMCPY_KIND_DTOA);
    V(GFL_CUPTI_COPY_DTOD, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD);
    V(GFL_CUPTI_COPY_HTOH, CUPTI_ACTIVITY_MEMCPY_KIND_HTOH);
    V(GFL_CUPTI_COPY_PTOP, CUPTI_ACTIVITY_MEMCPY_KIND_PTOP);
    V(GFL_CUPTI_MEM_UNKNOWN, CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN);
    V(GFL_CUPTI_MEM_PAGEABLE, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE);
    V(GFL_CUPTI_MEM_PINNED, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
    V(GFL_CUPTI_MEM_DEVICE, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    V(GFL_CUPTI_MEM_ARRAY, CUPTI_ACTIVITY_MEMORY_KIND_ARRAY);
    V(GFL_CUPTI_MEM_MANAGED, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED);
    V(GFL_CUPTI_MEM_DEVICE_STATIC, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC);
    V(GFL_CUPTI_MEM_MANAGED_STATIC, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC);
    /* the decoder passes CUPTI's synchronization type through unchanged */
    V(GPUFL_SYNC_UNKNOWN, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN);
    V(GPUFL_SYNC_EVENT, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE);
    V(GPUFL_SYNC_STREAM_WAIT,
      CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT);
    V(GPUFL_SYNC_STREAM,
      CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE);
    V(GPUFL_SYNC_CONTEXT,
      CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE);
    /* callbacks (cupti_callbacks.h) */
    V(GFL_CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_DRIVER_API);
    V(GFL_CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_RUNTIME_API);
    V(GFL_CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CB_DOMAIN_RESOURCE);
    V(GFL_CUPTI_CB_DOMAIN_STATE, CUPTI_CB_DOMAIN_STATE);
    V(GFL_CUPTI_API_ENTER, CUPTI_API_ENTER);
    V(GFL_CUPTI_API_EXIT, CUPTI_API_EXIT);
#define RTV(n) V(GFL_RT_CBID_##n, CUPTI_RUNTIME_TRACE_CBID_##n)
    RTV(cudaLaunch_v3020);
    RTV(cudaLaunchKernel_v7000);
    RTV(cudaLaunch_ptsz_v7000);
    RTV(cudaLaunchKernel_ptsz_v7000);
    RTV(cudaLaunchCooperativeKernel_v9000);
    RTV(cudaLaunchCooperativeKernel_ptsz_v9000);
    RTV(cudaLaunchCooperativeKernelMultiDevice_v9000);
    RTV(cudaGraphLaunch_v10000);
    RTV(cudaGraphLaunch_ptsz_v10000);
    RTV(cudaLaunchKernelExC_v11060);
    RTV(cudaLaunchKernelExC_ptsz_v11060);
    RTV(__cudaLaunchKernel_v13000);
    RTV(__cudaLaunchKernel_ptsz_v13000);
    RTV(cudaDeviceReset_v3020);
    RTV(cudaMalloc_v3020);
    RTV(cudaMallocPitch_v3020);
    RTV(cudaMallocArray_v3020);
    RTV(cudaMallocHost_v3020);
    RTV(cudaHostAlloc_v3020);
    RTV(cudaMalloc3D_v3020);
    RTV(cudaMallocManaged_v6000);
    RTV(cudaMallocAsync_v11020);
    RTV(cudaMallocAsync_ptsz_v11020);
    RTV(cudaMallocFromPoolAsync_v11020);
    RTV(cudaMallocFromPoolAsync_ptsz_v11020);
#undef RTV
#define DRV(n) V(GFL_DRV_CBID_##n, CUPTI_DRIVER_TRACE_CBID_##n)
    DRV(cuLaunchKernel);
    DRV(cuLaunchKernel_ptsz);
    DRV(cuLaunchCooperativeKernel);
    DRV(cuLaunchCooperativeKernel_ptsz);
    DRV(cuGraphLaunch);
    DRV(cuGraphLaunch_ptsz);
    DRV(cuLaunchKernelEx);
    DRV(cuLaunchKernelEx_ptsz);
    DRV(cuMemAlloc_v2);
    DRV(cuMemAllocPitch_v2);
    DRV(cuMemHostAlloc_v2);
    DRV(cuMemAllocHost_v2);
    DRV(cuMemAllocManaged);
    DRV(cuMemCreate);
    DRV(cuMemAllocAsync);
    DRV(cuMemAllocAsync_ptsz);
    DRV(cuMemAllocFromPoolAsync);
    DRV(cuMemAllocFromPoolAsync_ptsz);
#undef DRV
}
#undef V
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
