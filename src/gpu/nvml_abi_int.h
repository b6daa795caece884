/*
 * nvml_abi_int.h - the part of NVML's C ABI that src/gpu uses, declared
 * by us: nvml.h is not in Debian main and its licence asks for notices we do
 * not want to carry.  Sizes and version words are pinned by static asserts
 * to the values measured against the NVML 13.3 header on x86-64.
 */
#ifndef GPUFL_GPU_NVML_ABI_INT_H
#define GPUFL_GPU_NVML_ABI_INT_H

#include <stddef.h>
#include <stdint.h>

/* ---- NVML ABI (LP64 Linux), our own declarations ----
 * Re-checked field by field against nvml.h as bundled by NVIDIA/DCGM
 * (sdk/nvidia/nvml/nvml.h) and go-nvml's 12.2 copy: every layout, version
 * word and constant below matches both. */

typedef int nvmlReturn_t; /* an enum in NVML; 4 bytes */
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25
};

#define NVML_STRUCT_VERSION(type, ver)                                         \
    ((unsigned int)sizeof(type) | ((unsigned int)(ver) << 24))

typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
typedef struct {
    unsigned int version;
    int sensorType;
    int temperature;
} nvmlTemperature_v1_t;
/* _v2/_v3 layout; the unversioned (v1) call writes a shorter struct whose
 * bus id string also starts at offset 0, so one 68-byte buffer serves all. */
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
    unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessDetail_v1_t;
typedef struct {
    unsigned int version, mode, numProcArrayEntries;
    nvmlProcessDetail_v1_t *procArray;
} nvmlProcessDetailList_v1_t;
/* nvmlDeviceGetProcessUtilization's entries (the CUDA 13.0 toolkit here
 * ships no nvml.h; layout checked against public nvml.h copies, pinned by
 * the asserts below): timeStamp is CPU time in
 * microseconds, the utilisations are percent of the driver's sampling
 * period (1/6 s to 1 s, nvml.h of nvmlDeviceGetSamples). */
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;
typedef struct {
    unsigned int version, isSupportedDevice;
} nvmlGpmSupport_t;
typedef struct {
    unsigned int metricId;
    nvmlReturn_t nvmlReturn;
    double value;
    struct {
        char *shortName, *longName, *unit;
    } metricInfo;
} nvmlGpmMetric_t;
/* NVML_GPM_METRIC_MAX grew (98 in the 12.2 header, 166 in the newer
 * header DCGM bundles) while NVML_GPM_METRICS_GET_VERSION stayed 1, so NVML
 * cannot rely on the array size and touches only numMetrics entries; a
 * larger array than any driver's is safe. */
#define NVML_GPM_METRIC_MAX 333
typedef struct {
    unsigned int version, numMetrics;
    nvmlGpmSample_t sample1, sample2;
    nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

#define NVML_INIT_FLAG_NO_GPUS 1u
#define NVML_TEMPERATURE_GPU 0u
#define NVML_CLOCK_GRAPHICS 0u
#define NVML_CLOCK_SM 1u
#define NVML_CLOCK_MEM 2u
#define NVML_PCIE_UTIL_TX_BYTES 0u
#define NVML_PCIE_UTIL_RX_BYTES 1u
#define NVML_MEMORY_ERROR_TYPE_CORRECTED 0u
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED 1u
#define NVML_VOLATILE_ECC 0u
#define NVML_PROC_MODE_COMPUTE 0u
#define NVML_PROC_MODE_GRAPHICS 1u
#define NVML_DEVICE_MIG_ENABLE 1u
#define NVML_GPM_METRICS_GET_VERSION 1u
#define NVML_GPM_SUPPORT_VERSION 1u
#define NVML_GPM_METRIC_SM_UTIL 2u
#define NVML_GPM_METRIC_SM_OCCUPANCY 3u
#define NVML_VALUE_NOT_AVAILABLE 0xFFFFFFFFFFFFFFFFull

#define NVML_MEMORY_V2_VERSION NVML_STRUCT_VERSION(nvmlMemory_v2_t, 2)
#define NVML_TEMPERATURE_V1_VERSION NVML_STRUCT_VERSION(nvmlTemperature_v1_t, 1)
#define NVML_DETAIL_LIST_V1_VERSION                                            \
    NVML_STRUCT_VERSION(nvmlProcessDetailList_v1_t, 1)

_Static_assert(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t");
_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t");
_Static_assert(NVML_MEMORY_V2_VERSION == 0x02000028u, "memory v2 version");
_Static_assert(sizeof(nvmlTemperature_v1_t) == 12, "nvmlTemperature_v1_t");
_Static_assert(NVML_TEMPERATURE_V1_VERSION == 0x0100000Cu, "temp version");
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t");
_Static_assert(sizeof(nvmlProcessDetail_v1_t) == 32, "process detail");
_Static_assert(sizeof(nvmlProcessDetailList_v1_t) == 24, "detail list");
_Static_assert(NVML_DETAIL_LIST_V1_VERSION == 0x01000018u, "list version");
_Static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32, "proc util");
_Static_assert(offsetof(nvmlProcessUtilizationSample_t, timeStamp) == 8,
               "proc util timeStamp");
_Static_assert(sizeof(nvmlGpmMetric_t) == 40, "nvmlGpmMetric_t");
_Static_assert(sizeof(nvmlGpmMetricsGet_t) == 13344, "nvmlGpmMetricsGet_t");
_Static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == 24, "gpm metrics");
/* dlsym's result is stored into function pointers by memcpy (POSIX). */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "fn pointer size");

/* Raw process entries: v1 {pid@0, mem@8} 16 B; _v2 and documented _v3 add
 * GI/CI ids, 24 B; detail entries and some R535 drivers' _v3, 32 B. */
#define NVML_PROC_ENTRY_V1 16u
#define NVML_PROC_ENTRY_V2 24u
#define NVML_PROC_ENTRY_MAX 32u
#define NVML_PID_MAX 4194304u        /* Linux PID_MAX_LIMIT */
#define NVML_PROC_CAP_START 128u     /* entries per list, grown on demand */
#define NVML_PROC_CAP_MAX 4096u      /* more: the list is reported absent */
#define NVML_GPM_MIN_NS 100000000ull /* GPM needs samples > 100 ms apart */
#define NVML_PUTIL_CAP 2048u /* process samples read per device and call */
/* A process sample covers at most this since the one before it: the
 * driver samples every 1/6 s to 1 s, so a longer gap is samples lost from
 * its buffer, and counting all of it would invent busy time. */
#define NVML_PUTIL_PERIOD_MAX_US 1000000ull

#endif
