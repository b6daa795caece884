/*
 * test_cupti_prof_abi.c - the profiling engines' CUPTI declarations
 * (src/client/cupti_prof_abi_int.h) field by field against NVIDIA's
 * headers, where the CUDA toolkit is installed.
 *
 * test_cupti_abi.c compares the sizes and a few offsets; this one
 * compares every field the engines or the fake read or write, every size
 * value a params struct carries, and every enum value and result code the
 * engines use, so that a number copied wrongly into both our header and
 * the fake cannot pass.  Without the toolkit it says it skipped.
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

#define OFF(ours, theirs, f1, f2)                                              \
    CHECK(offsetof(ours, f1) == offsetof(theirs, f2))
#define SIZE(ours, theirs) CHECK(sizeof(ours) == sizeof(theirs))
/* the member's own size too: an int where CUPTI has a size_t would pass
 * an offset check when it is the last field */
#define FIELD(ours, theirs, f1, f2)                                            \
    do {                                                                       \
        OFF(ours, theirs, f1, f2);                                             \
        CHECK(sizeof(((ours *)0)->f1) == sizeof(((theirs *)0)->f2));           \
    } while (0)
#define VAL(a, b) CHECK((long)(a) == (long)(b))

static void check_target(void)
{
    FIELD(gfl_cupti_resource_data, CUpti_ResourceData, context, context);
    FIELD(gfl_cupti_resource_data, CUpti_ResourceData, stream, resourceHandle);
    FIELD(gfl_cupti_resource_data, CUpti_ResourceData, resource_descriptor,
          resourceDescriptor);
    SIZE(gfl_cupti_module_data, CUpti_ModuleResourceData);
    FIELD(gfl_cupti_module_data, CUpti_ModuleResourceData, module_id, moduleId);
    FIELD(gfl_cupti_module_data, CUpti_ModuleResourceData, cubin_size,
          cubinSize);
    FIELD(gfl_cupti_module_data, CUpti_ModuleResourceData, cubin, pCubin);
    VAL(GFL_CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
        CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
    VAL(GFL_CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
        CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    VAL(GFL_CUPTI_CBID_RESOURCE_MODULE_LOADED,
        CUPTI_CBID_RESOURCE_MODULE_LOADED);
    VAL(GFL_CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING,
        CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING);

    SIZE(gfl_cupti_profiler_init_params, CUpti_Profiler_Initialize_Params);
    SIZE(gfl_cupti_profiler_init_params, CUpti_Profiler_DeInitialize_Params);
    VAL(GFL_CUPTI_PROFILER_INIT_SIZE,
        CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
    VAL(GFL_CUPTI_PROFILER_INIT_SIZE,
        CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE);

    SIZE(gfl_cupti_device_supported_params,
         CUpti_Profiler_DeviceSupported_Params);
    VAL(GFL_CUPTI_DEVICE_SUPPORTED_SIZE,
        CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE);
    FIELD(gfl_cupti_device_supported_params,
          CUpti_Profiler_DeviceSupported_Params, cu_device, cuDevice);
    FIELD(gfl_cupti_device_supported_params,
          CUpti_Profiler_DeviceSupported_Params, is_supported, isSupported);
    FIELD(gfl_cupti_device_supported_params,
          CUpti_Profiler_DeviceSupported_Params, architecture, architecture);
    FIELD(gfl_cupti_device_supported_params,
          CUpti_Profiler_DeviceSupported_Params, sli, sli);
    FIELD(gfl_cupti_device_supported_params,
          CUpti_Profiler_DeviceSupported_Params, vgpu, vGpu);
    FIELD(gfl_cupti_device_supported_params,
          CUpti_Profiler_DeviceSupported_Params, confidential_compute,
          confidentialCompute);
    FIELD(gfl_cupti_device_supported_params,
          CUpti_Profiler_DeviceSupported_Params, cmp, cmp);
    FIELD(gfl_cupti_device_supported_params,
          CUpti_Profiler_DeviceSupported_Params, wsl, wsl);
    FIELD(gfl_cupti_device_supported_params,
          CUpti_Profiler_DeviceSupported_Params, api, api);
    VAL(GFL_CUPTI_PROFILER_CONFIGURATION_UNKNOWN,
        CUPTI_PROFILER_CONFIGURATION_UNKNOWN);
    VAL(GFL_CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED,
        CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED);
    VAL(GFL_CUPTI_PROFILER_CONFIGURATION_DISABLED,
        CUPTI_PROFILER_CONFIGURATION_DISABLED);
    VAL(GFL_CUPTI_PROFILER_CONFIGURATION_SUPPORTED,
        CUPTI_PROFILER_CONFIGURATION_SUPPORTED);
    VAL(GFL_CUPTI_PROFILER_RANGE_PROFILING, CUPTI_PROFILER_RANGE_PROFILING);
    VAL(GFL_CUPTI_PROFILER_PC_SAMPLING, CUPTI_PROFILER_PC_SAMPLING);
    VAL(GFL_CUPTI_PROFILER_SASS_METRICS, CUPTI_PROFILER_SASS_METRICS);

    SIZE(gfl_cupti_chip_name_params, CUpti_Device_GetChipName_Params);
    VAL(GFL_CUPTI_CHIP_NAME_SIZE, CUpti_Device_GetChipName_Params_STRUCT_SIZE);
    FIELD(gfl_cupti_chip_name_params, CUpti_Device_GetChipName_Params,
          device_index, deviceIndex);
    FIELD(gfl_cupti_chip_name_params, CUpti_Device_GetChipName_Params,
          chip_name, pChipName);
}

static void check_sass(void)
{
    SIZE(gfl_cupti_sass_metric_details, CUpti_SassMetrics_MetricDetails);
    FIELD(gfl_cupti_sass_metric_details, CUpti_SassMetrics_MetricDetails,
          metric_id, metricId);
    FIELD(gfl_cupti_sass_metric_details, CUpti_SassMetrics_MetricDetails, name,
          pMetricName);
    FIELD(gfl_cupti_sass_metric_details, CUpti_SassMetrics_MetricDetails,
          description, pMetricDescription);

    SIZE(gfl_cupti_sass_num_metrics_params,
         CUpti_SassMetrics_GetNumOfMetrics_Params);
    VAL(GFL_CUPTI_SASS_NUM_METRICS_SIZE,
        CUpti_SassMetrics_GetNumOfMetrics_Params_STRUCT_SIZE);
    FIELD(gfl_cupti_sass_num_metrics_params,
          CUpti_SassMetrics_GetNumOfMetrics_Params, chip_name, pChipName);
    FIELD(gfl_cupti_sass_num_metrics_params,
          CUpti_SassMetrics_GetNumOfMetrics_Params, num_metrics, numOfMetrics);

    SIZE(gfl_cupti_sass_metrics_params, CUpti_SassMetrics_GetMetrics_Params);
    VAL(GFL_CUPTI_SASS_METRICS_SIZE,
        CUpti_SassMetrics_GetMetrics_Params_STRUCT_SIZE);
    FIELD(gfl_cupti_sass_metrics_params, CUpti_SassMetrics_GetMetrics_Params,
          chip_name, pChipName);
    FIELD(gfl_cupti_sass_metrics_params, CUpti_SassMetrics_GetMetrics_Params,
          num_metrics, numOfMetrics);
    FIELD(gfl_cupti_sass_metrics_params, CUpti_SassMetrics_GetMetrics_Params,
          list, pMetricsList);

    SIZE(gfl_cupti_sass_properties_params,
         CUpti_SassMetrics_GetProperties_Params);
    VAL(GFL_CUPTI_SASS_PROPERTIES_SIZE,
        CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE);
    FIELD(gfl_cupti_sass_properties_params,
          CUpti_SassMetrics_GetProperties_Params, chip_name, pChipName);
    FIELD(gfl_cupti_sass_properties_params,
          CUpti_SassMetrics_GetProperties_Params, metric_name, pMetricName);
    FIELD(gfl_cupti_sass_properties_params,
          CUpti_SassMetrics_GetProperties_Params, metric, metric);

    SIZE(gfl_cupti_sass_config, CUpti_SassMetrics_Config);
    FIELD(gfl_cupti_sass_config, CUpti_SassMetrics_Config, metric_id, metricId);
    FIELD(gfl_cupti_sass_config, CUpti_SassMetrics_Config, output_granularity,
          outputGranularity);
    VAL(GFL_CUPTI_SASS_GRANULARITY_GPU,
        CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU);

    SIZE(gfl_cupti_sass_set_config_params, CUpti_SassMetricsSetConfig_Params);
    VAL(GFL_CUPTI_SASS_SET_CONFIG_SIZE,
        CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE);
    FIELD(gfl_cupti_sass_set_config_params, CUpti_SassMetricsSetConfig_Params,
          num_configs, numOfMetricConfig);
    FIELD(gfl_cupti_sass_set_config_params, CUpti_SassMetricsSetConfig_Params,
          configs, pConfigs);
    FIELD(gfl_cupti_sass_set_config_params, CUpti_SassMetricsSetConfig_Params,
          device_index, deviceIndex);

    SIZE(gfl_cupti_sass_unset_config_params,
         CUpti_SassMetricsUnsetConfig_Params);
    VAL(GFL_CUPTI_SASS_UNSET_CONFIG_SIZE,
        CUpti_SassMetricsUnsetConfig_Params_STRUCT_SIZE);
    FIELD(gfl_cupti_sass_unset_config_params,
          CUpti_SassMetricsUnsetConfig_Params, device_index, deviceIndex);

    SIZE(gfl_cupti_sass_enable_params, CUpti_SassMetricsEnable_Params);
    VAL(GFL_CUPTI_SASS_ENABLE_SIZE, CUpti_SassMetricsEnable_Params_STRUCT_SIZE);
    FIELD(gfl_cupti_sass_enable_params, CUpti_SassMetricsEnable_Params, ctx,
          ctx);
    FIELD(gfl_cupti_sass_enable_params, CUpti_SassMetricsEnable_Params,
          lazy_patching, enableLazyPatching);

    SIZE(gfl_cupti_sass_disable_params, CUpti_SassMetricsDisable_Params);
    VAL(GFL_CUPTI_SASS_DISABLE_SIZE,
        CUpti_SassMetricsDisable_Params_STRUCT_SIZE);
    FIELD(gfl_cupti_sass_disable_params, CUpti_SassMetricsDisable_Params, ctx,
          ctx);
    FIELD(gfl_cupti_sass_disable_params, CUpti_SassMetricsDisable_Params,
          num_dropped, numOfDroppedRecords);

    SIZE(gfl_cupti_sass_data_props_params,
         CUpti_SassMetricsGetDataProperties_Params);
    VAL(GFL_CUPTI_SASS_DATA_PROPS_SIZE,
        CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE);
    FIELD(gfl_cupti_sass_data_props_params,
          CUpti_SassMetricsGetDataProperties_Params, ctx, ctx);
    FIELD(gfl_cupti_sass_data_props_params,
          CUpti_SassMetricsGetDataProperties_Params, num_records,
          numOfPatchedInstructionRecords);
    FIELD(gfl_cupti_sass_data_props_params,
          CUpti_SassMetricsGetDataProperties_Params, num_instances,
          numOfInstances);

    SIZE(gfl_cupti_sass_instance_value, CUpti_SassMetrics_InstanceValue);
    FIELD(gfl_cupti_sass_instance_value, CUpti_SassMetrics_InstanceValue,
          metric_id, metricId);
    FIELD(gfl_cupti_sass_instance_value, CUpti_SassMetrics_InstanceValue, value,
          value);

    SIZE(gfl_cupti_sass_data, CUpti_SassMetrics_Data);
    FIELD(gfl_cupti_sass_data, CUpti_SassMetrics_Data, struct_size, structSize);
    FIELD(gfl_cupti_sass_data, CUpti_SassMetrics_Data, cubin_crc, cubinCrc);
    FIELD(gfl_cupti_sass_data, CUpti_SassMetrics_Data, function_index,
          functionIndex);
    FIELD(gfl_cupti_sass_data, CUpti_SassMetrics_Data, function_name,
          functionName);
    FIELD(gfl_cupti_sass_data, CUpti_SassMetrics_Data, pc_offset, pcOffset);
    FIELD(gfl_cupti_sass_data, CUpti_SassMetrics_Data, values, pInstanceValues);

    SIZE(gfl_cupti_sass_flush_params, CUpti_SassMetricsFlushData_Params);
    VAL(GFL_CUPTI_SASS_FLUSH_SIZE,
        CUpti_SassMetricsFlushData_Params_STRUCT_SIZE);
    FIELD(gfl_cupti_sass_flush_params, CUpti_SassMetricsFlushData_Params, ctx,
          ctx);
    FIELD(gfl_cupti_sass_flush_params, CUpti_SassMetricsFlushData_Params,
          num_records, numOfPatchedInstructionRecords);
    FIELD(gfl_cupti_sass_flush_params, CUpti_SassMetricsFlushData_Params,
          num_instances, numOfInstances);
    FIELD(gfl_cupti_sass_flush_params, CUpti_SassMetricsFlushData_Params, data,
          pMetricsData);
}

static void check_pcsamp(void)
{
    SIZE(gfl_cupti_pcs_stall, CUpti_PCSamplingStallReason);
    FIELD(gfl_cupti_pcs_stall, CUpti_PCSamplingStallReason, index,
          pcSamplingStallReasonIndex);
    FIELD(gfl_cupti_pcs_stall, CUpti_PCSamplingStallReason, samples, samples);

    SIZE(gfl_cupti_pcs_pc, CUpti_PCSamplingPCData);
    FIELD(gfl_cupti_pcs_pc, CUpti_PCSamplingPCData, size, size);
    FIELD(gfl_cupti_pcs_pc, CUpti_PCSamplingPCData, cubin_crc, cubinCrc);
    FIELD(gfl_cupti_pcs_pc, CUpti_PCSamplingPCData, pc_offset, pcOffset);
    FIELD(gfl_cupti_pcs_pc, CUpti_PCSamplingPCData, function_index,
          functionIndex);
    FIELD(gfl_cupti_pcs_pc, CUpti_PCSamplingPCData, function_name,
          functionName);
    FIELD(gfl_cupti_pcs_pc, CUpti_PCSamplingPCData, stall_reason_count,
          stallReasonCount);
    FIELD(gfl_cupti_pcs_pc, CUpti_PCSamplingPCData, stall_reasons, stallReason);
    FIELD(gfl_cupti_pcs_pc, CUpti_PCSamplingPCData, correlation_id,
          correlationId);

    SIZE(gfl_cupti_pcs_data, CUpti_PCSamplingData);
    FIELD(gfl_cupti_pcs_data, CUpti_PCSamplingData, size, size);
    FIELD(gfl_cupti_pcs_data, CUpti_PCSamplingData, collect_num_pcs,
          collectNumPcs);
    FIELD(gfl_cupti_pcs_data, CUpti_PCSamplingData, total_samples,
          totalSamples);
    FIELD(gfl_cupti_pcs_data, CUpti_PCSamplingData, dropped_samples,
          droppedSamples);
    FIELD(gfl_cupti_pcs_data, CUpti_PCSamplingData, total_num_pcs, totalNumPcs);
    FIELD(gfl_cupti_pcs_data, CUpti_PCSamplingData, remaining_num_pcs,
          remainingNumPcs);
    FIELD(gfl_cupti_pcs_data, CUpti_PCSamplingData, range_id, rangeId);
    FIELD(gfl_cupti_pcs_data, CUpti_PCSamplingData, pc_data, pPcData);
    FIELD(gfl_cupti_pcs_data, CUpti_PCSamplingData,
          non_user_kernels_total_samples, nonUsrKernelsTotalSamples);
    FIELD(gfl_cupti_pcs_data, CUpti_PCSamplingData, hardware_buffer_full,
          hardwareBufferFull);

    /* the union members we write: at the union's start, the right widths */
    SIZE(gfl_cupti_pcs_config_info, CUpti_PCSamplingConfigurationInfo);
    FIELD(gfl_cupti_pcs_config_info, CUpti_PCSamplingConfigurationInfo,
          attribute_type, attributeType);
    FIELD(gfl_cupti_pcs_config_info, CUpti_PCSamplingConfigurationInfo,
          attribute_status, attributeStatus);
    FIELD(gfl_cupti_pcs_config_info, CUpti_PCSamplingConfigurationInfo, u,
          attributeData);
    FIELD(gfl_cupti_pcs_config_info, CUpti_PCSamplingConfigurationInfo, u.u32,
          attributeData.samplingPeriodData.samplingPeriod);
    FIELD(gfl_cupti_pcs_config_info, CUpti_PCSamplingConfigurationInfo, u.u32,
          attributeData.collectionModeData.collectionMode);
    FIELD(gfl_cupti_pcs_config_info, CUpti_PCSamplingConfigurationInfo, u.u32,
          attributeData.outputDataFormatData.outputDataFormat);
    FIELD(gfl_cupti_pcs_config_info, CUpti_PCSamplingConfigurationInfo, u.u32,
          attributeData.enableStartStopControlData.enableStartStopControl);
    FIELD(gfl_cupti_pcs_config_info, CUpti_PCSamplingConfigurationInfo, u.u32,
          attributeData.workerThreadPeriodicSleepSpanData
              .workerThreadPeriodicSleepSpan);
    FIELD(gfl_cupti_pcs_config_info, CUpti_PCSamplingConfigurationInfo, u.size,
          attributeData.scratchBufferSizeData.scratchBufferSize);
    FIELD(gfl_cupti_pcs_config_info, CUpti_PCSamplingConfigurationInfo, u.size,
          attributeData.hardwareBufferSizeData.hardwareBufferSize);
    FIELD(gfl_cupti_pcs_config_info, CUpti_PCSamplingConfigurationInfo,
          u.buffer, attributeData.samplingDataBufferData.samplingDataBuffer);
    FIELD(gfl_cupti_pcs_config_info, CUpti_PCSamplingConfigurationInfo,
          u.stall.count, attributeData.stallReasonData.stallReasonCount);
    FIELD(gfl_cupti_pcs_config_info, CUpti_PCSamplingConfigurationInfo,
          u.stall.index, attributeData.stallReasonData.pStallReasonIndex);
    VAL(GFL_CUPTI_PCS_ATTR_SAMPLING_PERIOD,
        CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD);
    VAL(GFL_CUPTI_PCS_ATTR_STALL_REASON,
        CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON);
    VAL(GFL_CUPTI_PCS_ATTR_SCRATCH_BUFFER_SIZE,
        CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE);
    VAL(GFL_CUPTI_PCS_ATTR_HARDWARE_BUFFER_SIZE,
        CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE);
    VAL(GFL_CUPTI_PCS_ATTR_COLLECTION_MODE,
        CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE);
    VAL(GFL_CUPTI_PCS_ATTR_ENABLE_START_STOP_CONTROL,
        CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL);
    VAL(GFL_CUPTI_PCS_ATTR_OUTPUT_DATA_FORMAT,
        CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT);
    VAL(GFL_CUPTI_PCS_ATTR_SAMPLING_DATA_BUFFER,
        CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER);
    VAL(GFL_CUPTI_PCS_MODE_CONTINUOUS,
        CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS);
    VAL(GFL_CUPTI_PCS_FORMAT_PARSED,
        CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED);
    VAL(GFL_CUPTI_STALL_REASON_STRING_SIZE, CUPTI_STALL_REASON_STRING_SIZE);

    SIZE(gfl_cupti_pcs_config_params, CUpti_PCSamplingConfigurationInfoParams);
    VAL(GFL_CUPTI_PCS_CONFIG_SIZE, CUpti_PCSamplingConfigurationInfoParamsSize);
    FIELD(gfl_cupti_pcs_config_params, CUpti_PCSamplingConfigurationInfoParams,
          ctx, ctx);
    FIELD(gfl_cupti_pcs_config_params, CUpti_PCSamplingConfigurationInfoParams,
          num_attributes, numAttributes);
    FIELD(gfl_cupti_pcs_config_params, CUpti_PCSamplingConfigurationInfoParams,
          info, pPCSamplingConfigurationInfo);

    SIZE(gfl_cupti_pcs_get_data_params, CUpti_PCSamplingGetDataParams);
    VAL(GFL_CUPTI_PCS_GET_DATA_SIZE, CUpti_PCSamplingGetDataParamsSize);
    FIELD(gfl_cupti_pcs_get_data_params, CUpti_PCSamplingGetDataParams, ctx,
          ctx);
    FIELD(gfl_cupti_pcs_get_data_params, CUpti_PCSamplingGetDataParams, data,
          pcSamplingData);

    SIZE(gfl_cupti_pcs_ctx_params, CUpti_PCSamplingEnableParams);
    SIZE(gfl_cupti_pcs_ctx_params, CUpti_PCSamplingDisableParams);
    SIZE(gfl_cupti_pcs_ctx_params, CUpti_PCSamplingStartParams);
    SIZE(gfl_cupti_pcs_ctx_params, CUpti_PCSamplingStopParams);
    VAL(GFL_CUPTI_PCS_CTX_SIZE, CUpti_PCSamplingEnableParamsSize);
    VAL(GFL_CUPTI_PCS_CTX_SIZE, CUpti_PCSamplingDisableParamsSize);
    FIELD(gfl_cupti_pcs_ctx_params, CUpti_PCSamplingEnableParams, ctx, ctx);
    FIELD(gfl_cupti_pcs_ctx_params, CUpti_PCSamplingDisableParams, ctx, ctx);

    SIZE(gfl_cupti_pcs_num_stall_params,
         CUpti_PCSamplingGetNumStallReasonsParams);
    VAL(GFL_CUPTI_PCS_NUM_STALL_SIZE,
        CUpti_PCSamplingGetNumStallReasonsParamsSize);
    FIELD(gfl_cupti_pcs_num_stall_params,
          CUpti_PCSamplingGetNumStallReasonsParams, ctx, ctx);
    FIELD(gfl_cupti_pcs_num_stall_params,
          CUpti_PCSamplingGetNumStallReasonsParams, num, numStallReasons);

    SIZE(gfl_cupti_pcs_stall_params, CUpti_PCSamplingGetStallReasonsParams);
    VAL(GFL_CUPTI_PCS_STALL_SIZE, CUpti_PCSamplingGetStallReasonsParamsSize);
    FIELD(gfl_cupti_pcs_stall_params, CUpti_PCSamplingGetStallReasonsParams,
          ctx, ctx);
    FIELD(gfl_cupti_pcs_stall_params, CUpti_PCSamplingGetStallReasonsParams,
          num, numStallReasons);
    FIELD(gfl_cupti_pcs_stall_params, CUpti_PCSamplingGetStallReasonsParams,
          index, stallReasonIndex);
    FIELD(gfl_cupti_pcs_stall_params, CUpti_PCSamplingGetStallReasonsParams,
          names, stallReasons);

    SIZE(gfl_cupti_sass_source_params, CUpti_GetSassToSourceCorrelationParams);
    VAL(GFL_CUPTI_SASS_SOURCE_SIZE, CUpti_GetSassToSourceCorrelationParamsSize);
    FIELD(gfl_cupti_sass_source_params, CUpti_GetSassToSourceCorrelationParams,
          cubin, cubin);
    FIELD(gfl_cupti_sass_source_params, CUpti_GetSassToSourceCorrelationParams,
          function_name, functionName);
    FIELD(gfl_cupti_sass_source_params, CUpti_GetSassToSourceCorrelationParams,
          cubin_size, cubinSize);
    FIELD(gfl_cupti_sass_source_params, CUpti_GetSassToSourceCorrelationParams,
          line_number, lineNumber);
    FIELD(gfl_cupti_sass_source_params, CUpti_GetSassToSourceCorrelationParams,
          pc_offset, pcOffset);
    FIELD(gfl_cupti_sass_source_params, CUpti_GetSassToSourceCorrelationParams,
          file_name, fileName);
    FIELD(gfl_cupti_sass_source_params, CUpti_GetSassToSourceCorrelationParams,
          dir_name, dirName);

    SIZE(gfl_cupti_cubin_crc_params, CUpti_GetCubinCrcParams);
    VAL(GFL_CUPTI_CUBIN_CRC_SIZE, CUpti_GetCubinCrcParamsSize);
    FIELD(gfl_cupti_cubin_crc_params, CUpti_GetCubinCrcParams, cubin_size,
          cubinSize);
    FIELD(gfl_cupti_cubin_crc_params, CUpti_GetCubinCrcParams, cubin, cubin);
    FIELD(gfl_cupti_cubin_crc_params, CUpti_GetCubinCrcParams, cubin_crc,
          cubinCrc);
}

/* result codes the engines and the fake name (cupti_abi_int.h) */
static void check_results(void)
{
    VAL(GFL_CUPTI_ERROR_INVALID_PARAMETER, CUPTI_ERROR_INVALID_PARAMETER);
    VAL(GFL_CUPTI_ERROR_INVALID_DEVICE, CUPTI_ERROR_INVALID_DEVICE);
    VAL(GFL_CUPTI_ERROR_INVALID_CONTEXT, CUPTI_ERROR_INVALID_CONTEXT);
    VAL(GFL_CUPTI_ERROR_INVALID_OPERATION, CUPTI_ERROR_INVALID_OPERATION);
    VAL(GFL_CUPTI_ERROR_OUT_OF_MEMORY, CUPTI_ERROR_OUT_OF_MEMORY);
    VAL(GFL_CUPTI_ERROR_MAX_LIMIT_REACHED, CUPTI_ERROR_MAX_LIMIT_REACHED);
    VAL(GFL_CUPTI_ERROR_NOT_INITIALIZED, CUPTI_ERROR_NOT_INITIALIZED);
    VAL(GFL_CUPTI_ERROR_NOT_SUPPORTED, CUPTI_ERROR_NOT_SUPPORTED);
    VAL(GFL_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES,
        CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);
    VAL(GFL_CUPTI_ERROR_UNKNOWN, CUPTI_ERROR_UNKNOWN);
    VAL(GFL_CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CB_DOMAIN_RESOURCE);
}
#endif

int main(void)
{
#ifdef GPUFL_HAVE_CUPTI_HEADERS
    check_target();
    check_sass();
    check_pcsamp();
    check_results();
#else
    printf("skipped: CUDA toolkit headers (cupti_sass_metrics.h) not found; "
           "the layouts are still checked by _Static_assert in "
           "cupti_prof_abi_int.h\n0 passed, 0 failed\n");
    return 0;
#endif
    TEST_DONE();
}
