/*
 * cupti_prof_abi_int.h - our own declarations of the CUDA 13.0 CUPTI ABI
 * that only the profiling engines use (source_cupti_prof.c, _sass.c,
 * _pcs.c): resource callbacks, the profiler target, SASS metrics and PC
 * sampling.  Same rules as cupti_abi_int.h (whose macros it uses): every
 * offset asserted at compile time, compared with the real headers by
 * tests/cupti/test_cupti_abi.c.
 */
#ifndef GPUFL_CLIENT_CUPTI_PROF_ABI_INT_H
#define GPUFL_CLIENT_CUPTI_PROF_ABI_INT_H

#include "cupti_abi_int.h"

/* ---- resource callbacks (cupti_callbacks.h), for the profiling engines ---- */
enum {
    GFL_CUPTI_CBID_RESOURCE_CONTEXT_CREATED = 1,
    GFL_CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING = 2,
    GFL_CUPTI_CBID_RESOURCE_MODULE_LOADED = 6,
    GFL_CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING = 7
};

/* CUpti_ResourceData */
typedef struct gfl_cupti_resource_data {
    void *context;
    void *stream; /* union resourceHandle */
    void *resource_descriptor;
} gfl_cupti_resource_data;
GFL_CUPTI_SIZE(gfl_cupti_resource_data, 24);
GFL_CUPTI_OFF(gfl_cupti_resource_data, resource_descriptor, 16);

/* CUpti_ModuleResourceData, behind resource_descriptor of MODULE_* */
typedef struct gfl_cupti_module_data {
    uint32_t module_id;
    size_t cubin_size;
    const char *cubin;
} gfl_cupti_module_data;
GFL_CUPTI_SIZE(gfl_cupti_module_data, 24);
GFL_CUPTI_OFF(gfl_cupti_module_data, cubin_size, 8);
GFL_CUPTI_OFF(gfl_cupti_module_data, cubin, 16);

typedef gfl_cupti_result (*gfl_cuptiGetDeviceId_fn)(void *ctx, uint32_t *dev);

/* ---- profiler target (cupti_profiler_target.h, cupti_target.h) ----
 * Every params struct starts with its size, which must be the header's
 * *_STRUCT_SIZE value: offsetof(last field) + its size, not sizeof. */
#define GFL_CUPTI_STRUCT_SIZE(T, f) (offsetof(T, f) + sizeof(((T *)0)->f))

enum {
    GFL_CUPTI_PROFILER_CONFIGURATION_UNKNOWN = 0,
    GFL_CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED = 1,
    GFL_CUPTI_PROFILER_CONFIGURATION_DISABLED = 2,
    GFL_CUPTI_PROFILER_CONFIGURATION_SUPPORTED = 3
};
enum {
    GFL_CUPTI_PROFILER_RANGE_PROFILING = 0,
    GFL_CUPTI_PROFILER_PC_SAMPLING = 1,
    GFL_CUPTI_PROFILER_SASS_METRICS = 2
};

typedef struct gfl_cupti_profiler_init_params { /* also DeInitialize */
    size_t struct_size;
    void *priv;
} gfl_cupti_profiler_init_params;
#define GFL_CUPTI_PROFILER_INIT_SIZE                                           \
    GFL_CUPTI_STRUCT_SIZE(gfl_cupti_profiler_init_params, priv)
GFL_CUPTI_SIZE(gfl_cupti_profiler_init_params, 16);

typedef struct gfl_cupti_device_supported_params {
    size_t struct_size;
    void *priv;
    gfl_cu_device cu_device;
    int is_supported;
    int architecture;
    int sli;
    int vgpu;
    int confidential_compute;
    int cmp;
    int wsl;
    int api;
} gfl_cupti_device_supported_params;
#define GFL_CUPTI_DEVICE_SUPPORTED_SIZE                                        \
    GFL_CUPTI_STRUCT_SIZE(gfl_cupti_device_supported_params, api)
GFL_CUPTI_OFF(gfl_cupti_device_supported_params, cu_device, 16);
GFL_CUPTI_OFF(gfl_cupti_device_supported_params, is_supported, 20);
GFL_CUPTI_OFF(gfl_cupti_device_supported_params, vgpu, 32);
GFL_CUPTI_OFF(gfl_cupti_device_supported_params, wsl, 44);
GFL_CUPTI_OFF(gfl_cupti_device_supported_params, api, 48);
_Static_assert(GFL_CUPTI_DEVICE_SUPPORTED_SIZE == 52, "DeviceSupported size");

typedef struct gfl_cupti_chip_name_params {
    size_t struct_size;
    void *priv;
    size_t device_index;
    const char *chip_name;
} gfl_cupti_chip_name_params;
#define GFL_CUPTI_CHIP_NAME_SIZE                                               \
    GFL_CUPTI_STRUCT_SIZE(gfl_cupti_chip_name_params, chip_name)
GFL_CUPTI_SIZE(gfl_cupti_chip_name_params, 32);

typedef gfl_cupti_result (*gfl_cuptiProfilerInitialize_fn)(
    gfl_cupti_profiler_init_params *p);
typedef gfl_cupti_result (*gfl_cuptiProfilerDeviceSupported_fn)(
    gfl_cupti_device_supported_params *p);
typedef gfl_cupti_result (*gfl_cuptiDeviceGetChipName_fn)(
    gfl_cupti_chip_name_params *p);

/* ---- SASS metrics (cupti_sass_metrics.h) ---- */
enum { GFL_CUPTI_SASS_GRANULARITY_GPU = 0 };

typedef struct gfl_cupti_sass_metric_details {
    uint64_t metric_id;
    const char *name;
    const char *description;
} gfl_cupti_sass_metric_details;
GFL_CUPTI_SIZE(gfl_cupti_sass_metric_details, 24);

typedef struct gfl_cupti_sass_num_metrics_params {
    size_t struct_size;
    void *priv;
    const char *chip_name;
    size_t num_metrics;
} gfl_cupti_sass_num_metrics_params;
#define GFL_CUPTI_SASS_NUM_METRICS_SIZE                                        \
    GFL_CUPTI_STRUCT_SIZE(gfl_cupti_sass_num_metrics_params, num_metrics)
GFL_CUPTI_SIZE(gfl_cupti_sass_num_metrics_params, 32);

typedef struct gfl_cupti_sass_metrics_params {
    size_t struct_size;
    void *priv;
    const char *chip_name;
    size_t num_metrics;
    gfl_cupti_sass_metric_details *list;
} gfl_cupti_sass_metrics_params;
#define GFL_CUPTI_SASS_METRICS_SIZE                                            \
    GFL_CUPTI_STRUCT_SIZE(gfl_cupti_sass_metrics_params, list)
GFL_CUPTI_SIZE(gfl_cupti_sass_metrics_params, 40);

typedef struct gfl_cupti_sass_properties_params {
    size_t struct_size;
    void *priv;
    const char *chip_name;
    const char *metric_name;
    gfl_cupti_sass_metric_details metric;
} gfl_cupti_sass_properties_params;
#define GFL_CUPTI_SASS_PROPERTIES_SIZE                                         \
    GFL_CUPTI_STRUCT_SIZE(gfl_cupti_sass_properties_params, metric)
GFL_CUPTI_SIZE(gfl_cupti_sass_properties_params, 56);
GFL_CUPTI_OFF(gfl_cupti_sass_properties_params, metric, 32);

typedef struct gfl_cupti_sass_config {
    uint64_t metric_id;
    uint8_t output_granularity;
} gfl_cupti_sass_config;
GFL_CUPTI_SIZE(gfl_cupti_sass_config, 16);

typedef struct gfl_cupti_sass_set_config_params {
    size_t struct_size;
    void *priv;
    size_t num_configs;
    gfl_cupti_sass_config *configs;
    uint32_t device_index;
} gfl_cupti_sass_set_config_params;
#define GFL_CUPTI_SASS_SET_CONFIG_SIZE                                         \
    GFL_CUPTI_STRUCT_SIZE(gfl_cupti_sass_set_config_params, device_index)
_Static_assert(GFL_CUPTI_SASS_SET_CONFIG_SIZE == 36, "SetConfig size");

typedef struct gfl_cupti_sass_unset_config_params {
    size_t struct_size;
    void *priv;
    uint32_t device_index;
} gfl_cupti_sass_unset_config_params;
#define GFL_CUPTI_SASS_UNSET_CONFIG_SIZE                                       \
    GFL_CUPTI_STRUCT_SIZE(gfl_cupti_sass_unset_config_params, device_index)
_Static_assert(GFL_CUPTI_SASS_UNSET_CONFIG_SIZE == 20, "UnsetConfig size");

typedef struct gfl_cupti_sass_enable_params {
    size_t struct_size;
    void *priv;
    void *ctx;
    uint8_t lazy_patching;
} gfl_cupti_sass_enable_params;
#define GFL_CUPTI_SASS_ENABLE_SIZE                                             \
    GFL_CUPTI_STRUCT_SIZE(gfl_cupti_sass_enable_params, lazy_patching)
_Static_assert(GFL_CUPTI_SASS_ENABLE_SIZE == 25, "SassEnable size");

typedef struct gfl_cupti_sass_disable_params {
    size_t struct_size;
    void *priv;
    void *ctx;
    size_t num_dropped;
} gfl_cupti_sass_disable_params;
#define GFL_CUPTI_SASS_DISABLE_SIZE                                            \
    GFL_CUPTI_STRUCT_SIZE(gfl_cupti_sass_disable_params, num_dropped)
GFL_CUPTI_SIZE(gfl_cupti_sass_disable_params, 32);

typedef struct gfl_cupti_sass_data_props_params {
    size_t struct_size;
    void *priv;
    void *ctx;
    size_t num_records;
    size_t num_instances;
} gfl_cupti_sass_data_props_params;
#define GFL_CUPTI_SASS_DATA_PROPS_SIZE                                         \
    GFL_CUPTI_STRUCT_SIZE(gfl_cupti_sass_data_props_params, num_instances)
GFL_CUPTI_SIZE(gfl_cupti_sass_data_props_params, 40);

typedef struct gfl_cupti_sass_instance_value {
    uint64_t metric_id;
    uint64_t value;
} gfl_cupti_sass_instance_value;
GFL_CUPTI_SIZE(gfl_cupti_sass_instance_value, 16);

/* CUpti_SassMetrics_Data: one patched instruction */
typedef struct gfl_cupti_sass_data {
    size_t struct_size;
    void *priv;
    uint32_t cubin_crc; /* 32 bits here, 64 in PC sampling */
    uint32_t function_index;
    const char *function_name; /* malloc'd by CUPTI; we free it */
    uint32_t pc_offset;
    gfl_cupti_sass_instance_value *values; /* ours, num_instances */
} gfl_cupti_sass_data;
GFL_CUPTI_SIZE(gfl_cupti_sass_data, 48);
GFL_CUPTI_OFF(gfl_cupti_sass_data, cubin_crc, 16);
GFL_CUPTI_OFF(gfl_cupti_sass_data, function_name, 24);
GFL_CUPTI_OFF(gfl_cupti_sass_data, pc_offset, 32);
GFL_CUPTI_OFF(gfl_cupti_sass_data, values, 40);

/* The header's size macro stops at num_instances (40), before the data
 * pointer at 40; NVIDIA's sample passes the macro value, so do we. */
typedef struct gfl_cupti_sass_flush_params {
    size_t struct_size;
    void *priv;
    void *ctx;
    size_t num_records;
    size_t num_instances;
    gfl_cupti_sass_data *data;
} gfl_cupti_sass_flush_params;
#define GFL_CUPTI_SASS_FLUSH_SIZE                                              \
    GFL_CUPTI_STRUCT_SIZE(gfl_cupti_sass_flush_params, num_instances)
GFL_CUPTI_SIZE(gfl_cupti_sass_flush_params, 48);
_Static_assert(GFL_CUPTI_SASS_FLUSH_SIZE == 40, "SassFlushData size");

typedef gfl_cupti_result (*gfl_cuptiSassMetricsGetNumOfMetrics_fn)(
    gfl_cupti_sass_num_metrics_params *p);
typedef gfl_cupti_result (*gfl_cuptiSassMetricsGetMetrics_fn)(
    gfl_cupti_sass_metrics_params *p);
typedef gfl_cupti_result (*gfl_cuptiSassMetricsGetProperties_fn)(
    gfl_cupti_sass_properties_params *p);
typedef gfl_cupti_result (*gfl_cuptiSassMetricsSetConfig_fn)(
    gfl_cupti_sass_set_config_params *p);
typedef gfl_cupti_result (*gfl_cuptiSassMetricsUnsetConfig_fn)(
    gfl_cupti_sass_unset_config_params *p);
typedef gfl_cupti_result (*gfl_cuptiSassMetricsEnable_fn)(
    gfl_cupti_sass_enable_params *p);
typedef gfl_cupti_result (*gfl_cuptiSassMetricsDisable_fn)(
    gfl_cupti_sass_disable_params *p);
typedef gfl_cupti_result (*gfl_cuptiSassMetricsGetDataProperties_fn)(
    gfl_cupti_sass_data_props_params *p);
typedef gfl_cupti_result (*gfl_cuptiSassMetricsFlushData_fn)(
    gfl_cupti_sass_flush_params *p);

/* ---- PC sampling (cupti_pcsampling.h); data structs are PACKED ---- */
#define GFL_CUPTI_STALL_REASON_STRING_SIZE 128
enum { GFL_CUPTI_PCS_MODE_CONTINUOUS = 1, GFL_CUPTI_PCS_FORMAT_PARSED = 1 };
enum {
    GFL_CUPTI_PCS_ATTR_SAMPLING_PERIOD = 1,
    GFL_CUPTI_PCS_ATTR_STALL_REASON = 2,
    GFL_CUPTI_PCS_ATTR_SCRATCH_BUFFER_SIZE = 3,
    GFL_CUPTI_PCS_ATTR_HARDWARE_BUFFER_SIZE = 4,
    GFL_CUPTI_PCS_ATTR_COLLECTION_MODE = 5,
    GFL_CUPTI_PCS_ATTR_ENABLE_START_STOP_CONTROL = 6,
    GFL_CUPTI_PCS_ATTR_OUTPUT_DATA_FORMAT = 7,
    GFL_CUPTI_PCS_ATTR_SAMPLING_DATA_BUFFER = 8
};

typedef struct GFL_CUPTI_PACKED gfl_cupti_pcs_stall {
    uint32_t index; /* chip-specific: look the name up, never assume */
    uint32_t samples;
} gfl_cupti_pcs_stall;
GFL_CUPTI_SIZE(gfl_cupti_pcs_stall, 8);

typedef struct GFL_CUPTI_PACKED gfl_cupti_pcs_pc {
    size_t size;
    uint64_t cubin_crc;
    uint64_t pc_offset;
    uint32_t function_index;
    uint32_t pad;
    char *function_name; /* shared between records; freed at the end */
    size_t stall_reason_count;
    gfl_cupti_pcs_stall *stall_reasons; /* ours */
    uint32_t correlation_id;
} gfl_cupti_pcs_pc;
GFL_CUPTI_SIZE(gfl_cupti_pcs_pc, 64);
GFL_CUPTI_OFF(gfl_cupti_pcs_pc, cubin_crc, 8);
GFL_CUPTI_OFF(gfl_cupti_pcs_pc, pc_offset, 16);
GFL_CUPTI_OFF(gfl_cupti_pcs_pc, function_index, 24);
GFL_CUPTI_OFF(gfl_cupti_pcs_pc, function_name, 32);
GFL_CUPTI_OFF(gfl_cupti_pcs_pc, stall_reason_count, 40);
GFL_CUPTI_OFF(gfl_cupti_pcs_pc, stall_reasons, 48);
GFL_CUPTI_OFF(gfl_cupti_pcs_pc, correlation_id, 56);

typedef struct GFL_CUPTI_PACKED gfl_cupti_pcs_data {
    size_t size;
    size_t collect_num_pcs;
    uint64_t total_samples;
    uint64_t dropped_samples;
    size_t total_num_pcs;
    size_t remaining_num_pcs;
    uint64_t range_id;
    gfl_cupti_pcs_pc *pc_data;
    uint64_t non_user_kernels_total_samples;
    uint8_t hardware_buffer_full;
} gfl_cupti_pcs_data;
GFL_CUPTI_SIZE(gfl_cupti_pcs_data, 80);
GFL_CUPTI_OFF(gfl_cupti_pcs_data, total_samples, 16);
GFL_CUPTI_OFF(gfl_cupti_pcs_data, dropped_samples, 24);
GFL_CUPTI_OFF(gfl_cupti_pcs_data, total_num_pcs, 32);
GFL_CUPTI_OFF(gfl_cupti_pcs_data, remaining_num_pcs, 40);
GFL_CUPTI_OFF(gfl_cupti_pcs_data, pc_data, 56);
GFL_CUPTI_OFF(gfl_cupti_pcs_data, hardware_buffer_full, 72);

typedef struct gfl_cupti_pcs_config_info {
    int attribute_type;
    int attribute_status; /* written by CUPTI */
    union {
        uint64_t data[3];
        uint32_t u32; /* period, mode, format, start/stop */
        size_t size;  /* scratch / hardware buffer bytes */
        void *buffer; /* SAMPLING_DATA_BUFFER */
        struct {
            size_t count;
            uint32_t *index;
        } stall;
    } u;
} gfl_cupti_pcs_config_info;
GFL_CUPTI_SIZE(gfl_cupti_pcs_config_info, 32);
GFL_CUPTI_OFF(gfl_cupti_pcs_config_info, u, 8);

typedef struct gfl_cupti_pcs_config_params {
    size_t size;
    void *priv;
    void *ctx;
    size_t num_attributes;
    gfl_cupti_pcs_config_info *info;
} gfl_cupti_pcs_config_params;
#define GFL_CUPTI_PCS_CONFIG_SIZE                                              \
    GFL_CUPTI_STRUCT_SIZE(gfl_cupti_pcs_config_params, info)
GFL_CUPTI_SIZE(gfl_cupti_pcs_config_params, 40);

typedef struct gfl_cupti_pcs_get_data_params {
    size_t size;
    void *priv;
    void *ctx;
    void *data; /* a gfl_cupti_pcs_data */
} gfl_cupti_pcs_get_data_params;
#define GFL_CUPTI_PCS_GET_DATA_SIZE                                            \
    GFL_CUPTI_STRUCT_SIZE(gfl_cupti_pcs_get_data_params, data)
GFL_CUPTI_SIZE(gfl_cupti_pcs_get_data_params, 32);

/* Enable, Disable, Start, Stop */
typedef struct gfl_cupti_pcs_ctx_params {
    size_t size;
    void *priv;
    void *ctx;
} gfl_cupti_pcs_ctx_params;
#define GFL_CUPTI_PCS_CTX_SIZE                                                 \
    GFL_CUPTI_STRUCT_SIZE(gfl_cupti_pcs_ctx_params, ctx)
GFL_CUPTI_SIZE(gfl_cupti_pcs_ctx_params, 24);

typedef struct gfl_cupti_pcs_num_stall_params {
    size_t size;
    void *priv;
    void *ctx;
    size_t *num; /* out, through the pointer */
} gfl_cupti_pcs_num_stall_params;
#define GFL_CUPTI_PCS_NUM_STALL_SIZE                                           \
    GFL_CUPTI_STRUCT_SIZE(gfl_cupti_pcs_num_stall_params, num)
GFL_CUPTI_SIZE(gfl_cupti_pcs_num_stall_params, 32);

typedef struct gfl_cupti_pcs_stall_params {
    size_t size;
    void *priv;
    void *ctx;
    size_t num;
    uint32_t *index; /* ours, num entries */
    char **names;    /* ours, num buffers of STALL_REASON_STRING_SIZE */
} gfl_cupti_pcs_stall_params;
#define GFL_CUPTI_PCS_STALL_SIZE                                               \
    GFL_CUPTI_STRUCT_SIZE(gfl_cupti_pcs_stall_params, names)
GFL_CUPTI_SIZE(gfl_cupti_pcs_stall_params, 48);

typedef struct gfl_cupti_sass_source_params {
    size_t size;
    const void *cubin;
    const char *function_name;
    size_t cubin_size;
    uint32_t line_number; /* out */
    uint64_t pc_offset;
    char *file_name; /* out, malloc'd: we free */
    char *dir_name;  /* out, malloc'd: we free */
} gfl_cupti_sass_source_params;
#define GFL_CUPTI_SASS_SOURCE_SIZE                                             \
    GFL_CUPTI_STRUCT_SIZE(gfl_cupti_sass_source_params, dir_name)
GFL_CUPTI_SIZE(gfl_cupti_sass_source_params, 64);
GFL_CUPTI_OFF(gfl_cupti_sass_source_params, line_number, 32);
GFL_CUPTI_OFF(gfl_cupti_sass_source_params, pc_offset, 40);
GFL_CUPTI_OFF(gfl_cupti_sass_source_params, file_name, 48);

typedef struct gfl_cupti_cubin_crc_params {
    size_t size;
    size_t cubin_size;
    const void *cubin;
    uint64_t cubin_crc; /* out */
} gfl_cupti_cubin_crc_params;
#define GFL_CUPTI_CUBIN_CRC_SIZE                                               \
    GFL_CUPTI_STRUCT_SIZE(gfl_cupti_cubin_crc_params, cubin_crc)
GFL_CUPTI_SIZE(gfl_cupti_cubin_crc_params, 32);

typedef gfl_cupti_result (*gfl_cuptiPCSamplingSetConfigurationAttribute_fn)(
    gfl_cupti_pcs_config_params *p);
typedef gfl_cupti_result (*gfl_cuptiPCSamplingGetData_fn)(
    gfl_cupti_pcs_get_data_params *p);
typedef gfl_cupti_result (*gfl_cuptiPCSamplingEnable_fn)(
    gfl_cupti_pcs_ctx_params *p);
typedef gfl_cupti_result (*gfl_cuptiPCSamplingDisable_fn)(
    gfl_cupti_pcs_ctx_params *p);
typedef gfl_cupti_result (*gfl_cuptiPCSamplingGetNumStallReasons_fn)(
    gfl_cupti_pcs_num_stall_params *p);
typedef gfl_cupti_result (*gfl_cuptiPCSamplingGetStallReasons_fn)(
    gfl_cupti_pcs_stall_params *p);
typedef gfl_cupti_result (*gfl_cuptiGetSassToSourceCorrelation_fn)(
    gfl_cupti_sass_source_params *p);
typedef gfl_cupti_result (*gfl_cuptiGetCubinCrc_fn)(
    gfl_cupti_cubin_crc_params *p);

#endif /* GPUFL_CLIENT_CUPTI_PROF_ABI_INT_H */
