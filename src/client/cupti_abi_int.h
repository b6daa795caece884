/*
 * cupti_abi_int.h - our own declarations of the subset of the CUDA 13.0
 * CUPTI and driver ABI that gpufl uses: result codes, activity kinds, the
 * activity record layouts, callback data and launch parameter structs, and
 * the function signatures resolved with dlsym.  The profiling engines' part
 * (resource callbacks, profiler target, SASS metrics, PC sampling) is in
 * cupti_prof_abi_int.h.
 *
 * Why not NVIDIA's headers: they are licensed deliverables that our build
 * machines do not have (docs/cupti-internals.md#our-abi-declarations).  Every
 * offset below is asserted at compile time; tests/cupti/test_cupti_abi.c
 * compares them with the real headers on machines that have the toolkit.
 * The fake libraries of tests/cupti build from this same file.
 *
 * Layouts are x86-64 Linux (LP64).  Records are CUPTI's PACKED_ALIGNMENT:
 * packed, 8-byte aligned, explicit padding.
 */
#ifndef GPUFL_CLIENT_CUPTI_ABI_INT_H
#define GPUFL_CLIENT_CUPTI_ABI_INT_H

#include <stddef.h>
#include <stdint.h>

#define GFL_CUPTI_PACKED __attribute__((__packed__, aligned(8)))
#define GFL_CUPTI_OFF(T, f, n) _Static_assert(offsetof(T, f) == (n), #T "." #f)
#define GFL_CUPTI_SIZE(T, n) _Static_assert(sizeof(T) == (n), "sizeof " #T)

/* ---- result codes (cupti_result.h) ---- */
enum {
    GFL_CUPTI_SUCCESS = 0,
    GFL_CUPTI_ERROR_INVALID_PARAMETER = 1,
    GFL_CUPTI_ERROR_INVALID_DEVICE = 2,
    GFL_CUPTI_ERROR_INVALID_CONTEXT = 3,
    GFL_CUPTI_ERROR_INVALID_OPERATION = 7,
    GFL_CUPTI_ERROR_OUT_OF_MEMORY = 8,
    GFL_CUPTI_ERROR_MAX_LIMIT_REACHED = 12,
    GFL_CUPTI_ERROR_NOT_INITIALIZED = 15,
    GFL_CUPTI_ERROR_INVALID_KIND = 21,
    GFL_CUPTI_ERROR_NOT_SUPPORTED = 27,
    GFL_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES = 35,
    GFL_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 39,
    GFL_CUPTI_ERROR_UNKNOWN = 999
};

/* ---- driver (cuda.h) ---- */
enum {
    GFL_CUDA_SUCCESS = 0,
    GFL_CUDA_ERROR_NOT_INITIALIZED = 3,
    GFL_CUDA_ERROR_STUB_LIBRARY = 34, /* the toolkit's stubs/libcuda.so */
    GFL_CUDA_ERROR_NO_DEVICE = 100,
    GFL_CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803 /* libcuda vs kernel module */
};

/* CUfunc_cache: a kernel record's cacheConfig nibbles */
enum {
    GFL_CU_FUNC_CACHE_PREFER_NONE = 0,
    GFL_CU_FUNC_CACHE_PREFER_SHARED = 1,
    GFL_CU_FUNC_CACHE_PREFER_L1 = 2,
    GFL_CU_FUNC_CACHE_PREFER_EQUAL = 3
};

enum {
    GFL_CU_ATTR_MAX_THREADS_PER_BLOCK = 1,
    GFL_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    GFL_CU_ATTR_MAX_REGISTERS_PER_BLOCK = 12,
    GFL_CU_ATTR_WARP_SIZE = 10,
    GFL_CU_ATTR_MULTIPROCESSOR_COUNT = 16,
    GFL_CU_ATTR_MAX_THREADS_PER_MULTIPROCESSOR = 39,
    GFL_CU_ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
    GFL_CU_ATTR_COMPUTE_CAPABILITY_MINOR = 76,
    GFL_CU_ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
    GFL_CU_ATTR_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
    GFL_CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
    GFL_CU_ATTR_MAX_BLOCKS_PER_MULTIPROCESSOR = 106,
    GFL_CU_ATTR_RESERVED_SHARED_MEMORY_PER_BLOCK = 111
};

typedef int gfl_cu_result;
typedef int gfl_cu_device;
typedef struct gfl_cu_uuid {
    char bytes[16];
} gfl_cu_uuid;

typedef gfl_cu_result (*gfl_cuInit_fn)(unsigned flags);
typedef gfl_cu_result (*gfl_cuDriverGetVersion_fn)(int *v);
typedef gfl_cu_result (*gfl_cuDeviceGetCount_fn)(int *n);
typedef gfl_cu_result (*gfl_cuDeviceGet_fn)(gfl_cu_device *d, int ordinal);
typedef gfl_cu_result (*gfl_cuDeviceGetAttribute_fn)(int *v, int attr,
                                                     gfl_cu_device d);
typedef gfl_cu_result (*gfl_cuDeviceGetName_fn)(char *name, int len,
                                                gfl_cu_device d);
typedef gfl_cu_result (*gfl_cuDeviceGetUuid_fn)(gfl_cu_uuid *u,
                                                gfl_cu_device d);
typedef gfl_cu_result (*gfl_cuDeviceTotalMem_fn)(size_t *bytes,
                                                 gfl_cu_device d);
typedef gfl_cu_result (*gfl_cuCtxSynchronize_fn)(void);
typedef gfl_cu_result (*gfl_cuCtxGetCurrent_fn)(void **ctx);

/* ---- activity kinds (cupti_activity.h) ---- */
enum {
    GFL_CUPTI_ACT_MEMCPY = 1,
    GFL_CUPTI_ACT_MEMSET = 2,
    GFL_CUPTI_ACT_KERNEL = 3,
    GFL_CUPTI_ACT_DRIVER = 4,
    GFL_CUPTI_ACT_RUNTIME = 5,
    GFL_CUPTI_ACT_DEVICE = 8,
    GFL_CUPTI_ACT_CONTEXT = 9,
    GFL_CUPTI_ACT_CONCURRENT_KERNEL = 10,
    GFL_CUPTI_ACT_OVERHEAD = 17,
    GFL_CUPTI_ACT_MEMCPY2 = 22,
    GFL_CUPTI_ACT_SYNCHRONIZATION = 38,
    GFL_CUPTI_ACT_MEMORY2 = 49
};

enum { GFL_CUPTI_FLUSH_FORCED = 1 };
enum { GFL_CUPTI_MEMCPY_ASYNC = 1, GFL_CUPTI_MEMSET_ASYNC = 1 };
enum { GFL_CUPTI_MEMOP_ALLOC = 1, GFL_CUPTI_MEMOP_RELEASE = 2 };
enum { GFL_CUPTI_SHMEM_LIMIT_OPTIN = 1 };
/* CUpti_ActivityLaunchType (Kernel10.launchType) */
enum { GFL_CUPTI_LAUNCH_COOP_SINGLE = 1, GFL_CUPTI_LAUNCH_COOP_MULTI = 2 };
#define GFL_CUPTI_INVALID_STREAM_ID 0xFFFFFFFFu

/* CUpti_ActivityMemcpyKind and CUpti_ActivityMemoryKind */
enum {
    GFL_CUPTI_COPY_UNKNOWN = 0,
    GFL_CUPTI_COPY_HTOD = 1,
    GFL_CUPTI_COPY_DTOH = 2,
    GFL_CUPTI_COPY_HTOA = 3,
    GFL_CUPTI_COPY_ATOH = 4,
    GFL_CUPTI_COPY_ATOA = 5,
    GFL_CUPTI_COPY_ATOD = 6,
    GFL_CUPTI_COPY_DTOA = 7,
    GFL_CUPTI_COPY_DTOD = 8,
    GFL_CUPTI_COPY_HTOH = 9,
    GFL_CUPTI_COPY_PTOP = 10
};
enum {
    GFL_CUPTI_MEM_UNKNOWN = 0,
    GFL_CUPTI_MEM_PAGEABLE = 1,
    GFL_CUPTI_MEM_PINNED = 2,
    GFL_CUPTI_MEM_DEVICE = 3,
    GFL_CUPTI_MEM_ARRAY = 4,
    GFL_CUPTI_MEM_MANAGED = 5,
    GFL_CUPTI_MEM_DEVICE_STATIC = 6,
    GFL_CUPTI_MEM_MANAGED_STATIC = 7
};

typedef struct GFL_CUPTI_PACKED gfl_cupti_activity {
    uint32_t kind;
} gfl_cupti_activity;

typedef struct GFL_CUPTI_PACKED gfl_cupti_kernel10 {
    uint32_t kind;
    uint8_t cache_config; /* low nibble requested, high executed */
    uint8_t shared_memory_config;
    uint16_t registers_per_thread;
    uint32_t partitioned_cache_requested;
    uint32_t partitioned_cache_executed;
    uint64_t start;
    uint64_t end;
    uint64_t completed;
    uint32_t device_id;
    uint32_t context_id;
    uint32_t stream_id;
    int32_t grid_x, grid_y, grid_z;
    int32_t block_x, block_y, block_z;
    int32_t static_shared_memory;
    int32_t dynamic_shared_memory;
    uint32_t local_memory_per_thread;
    uint32_t local_memory_total;
    uint32_t correlation_id;
    int64_t grid_id;
    const char *name;
    void *reserved0;
    uint64_t queued;
    uint64_t submitted;
    uint8_t launch_type;
    uint8_t is_shared_memory_carveout_requested;
    uint8_t shared_memory_carveout_requested;
    uint8_t padding;
    uint32_t shared_memory_executed;
    uint64_t graph_node_id;
    uint32_t shmem_limit_config;
    uint32_t graph_id;
    void *p_access_policy_window;
    uint32_t channel_id;
    uint32_t channel_type;
    uint32_t cluster_x, cluster_y, cluster_z;
    uint32_t cluster_scheduling_policy;
    uint64_t local_memory_total_v2;
    uint32_t max_potential_cluster_size;
    uint32_t max_active_clusters;
    uint8_t is_device_launched;
    uint8_t padding3[7];
} gfl_cupti_kernel10;
GFL_CUPTI_SIZE(gfl_cupti_kernel10, 216);
GFL_CUPTI_OFF(gfl_cupti_kernel10, registers_per_thread, 6);
GFL_CUPTI_OFF(gfl_cupti_kernel10, start, 16);
GFL_CUPTI_OFF(gfl_cupti_kernel10, end, 24);
GFL_CUPTI_OFF(gfl_cupti_kernel10, completed, 32);
GFL_CUPTI_OFF(gfl_cupti_kernel10, device_id, 40);
GFL_CUPTI_OFF(gfl_cupti_kernel10, context_id, 44);
GFL_CUPTI_OFF(gfl_cupti_kernel10, stream_id, 48);
GFL_CUPTI_OFF(gfl_cupti_kernel10, grid_x, 52);
GFL_CUPTI_OFF(gfl_cupti_kernel10, grid_z, 60);
GFL_CUPTI_OFF(gfl_cupti_kernel10, block_x, 64);
GFL_CUPTI_OFF(gfl_cupti_kernel10, block_z, 72);
GFL_CUPTI_OFF(gfl_cupti_kernel10, static_shared_memory, 76);
GFL_CUPTI_OFF(gfl_cupti_kernel10, dynamic_shared_memory, 80);
GFL_CUPTI_OFF(gfl_cupti_kernel10, local_memory_per_thread, 84);
GFL_CUPTI_OFF(gfl_cupti_kernel10, local_memory_total, 88);
GFL_CUPTI_OFF(gfl_cupti_kernel10, correlation_id, 92);
GFL_CUPTI_OFF(gfl_cupti_kernel10, grid_id, 96);
GFL_CUPTI_OFF(gfl_cupti_kernel10, name, 104);
GFL_CUPTI_OFF(gfl_cupti_kernel10, reserved0, 112);
GFL_CUPTI_OFF(gfl_cupti_kernel10, queued, 120);
GFL_CUPTI_OFF(gfl_cupti_kernel10, submitted, 128);
GFL_CUPTI_OFF(gfl_cupti_kernel10, launch_type, 136);
GFL_CUPTI_OFF(gfl_cupti_kernel10, shared_memory_carveout_requested, 138);
GFL_CUPTI_OFF(gfl_cupti_kernel10, shared_memory_executed, 140);
GFL_CUPTI_OFF(gfl_cupti_kernel10, graph_node_id, 144);
GFL_CUPTI_OFF(gfl_cupti_kernel10, shmem_limit_config, 152);
GFL_CUPTI_OFF(gfl_cupti_kernel10, graph_id, 156);
GFL_CUPTI_OFF(gfl_cupti_kernel10, p_access_policy_window, 160);
GFL_CUPTI_OFF(gfl_cupti_kernel10, channel_id, 168);
GFL_CUPTI_OFF(gfl_cupti_kernel10, channel_type, 172);
GFL_CUPTI_OFF(gfl_cupti_kernel10, cluster_x, 176);
GFL_CUPTI_OFF(gfl_cupti_kernel10, cluster_scheduling_policy, 188);
GFL_CUPTI_OFF(gfl_cupti_kernel10, local_memory_total_v2, 192);
GFL_CUPTI_OFF(gfl_cupti_kernel10, max_potential_cluster_size, 200);
GFL_CUPTI_OFF(gfl_cupti_kernel10, max_active_clusters, 204);
GFL_CUPTI_OFF(gfl_cupti_kernel10, is_device_launched, 208);

typedef struct GFL_CUPTI_PACKED gfl_cupti_memcpy6 {
    uint32_t kind;
    uint8_t copy_kind;
    uint8_t src_kind;
    uint8_t dst_kind;
    uint8_t flags;
    uint64_t bytes;
    uint64_t start;
    uint64_t end;
    uint32_t device_id;
    uint32_t context_id;
    uint32_t stream_id;
    uint32_t correlation_id;
    uint32_t runtime_correlation_id;
    uint32_t pad;
    void *reserved0;
    uint64_t graph_node_id;
    uint32_t graph_id;
    uint32_t channel_id;
    uint32_t channel_type;
    uint8_t is_device_launched;
    uint8_t pad2[3];
    uint64_t copy_count;
} gfl_cupti_memcpy6;
GFL_CUPTI_SIZE(gfl_cupti_memcpy6, 96);
GFL_CUPTI_OFF(gfl_cupti_memcpy6, copy_kind, 4);
GFL_CUPTI_OFF(gfl_cupti_memcpy6, src_kind, 5);
GFL_CUPTI_OFF(gfl_cupti_memcpy6, dst_kind, 6);
GFL_CUPTI_OFF(gfl_cupti_memcpy6, flags, 7);
GFL_CUPTI_OFF(gfl_cupti_memcpy6, bytes, 8);
GFL_CUPTI_OFF(gfl_cupti_memcpy6, start, 16);
GFL_CUPTI_OFF(gfl_cupti_memcpy6, end, 24);
GFL_CUPTI_OFF(gfl_cupti_memcpy6, device_id, 32);
GFL_CUPTI_OFF(gfl_cupti_memcpy6, context_id, 36);
GFL_CUPTI_OFF(gfl_cupti_memcpy6, stream_id, 40);
GFL_CUPTI_OFF(gfl_cupti_memcpy6, correlation_id, 44);
GFL_CUPTI_OFF(gfl_cupti_memcpy6, runtime_correlation_id, 48);
GFL_CUPTI_OFF(gfl_cupti_memcpy6, reserved0, 56);
GFL_CUPTI_OFF(gfl_cupti_memcpy6, graph_node_id, 64);
GFL_CUPTI_OFF(gfl_cupti_memcpy6, graph_id, 72);
GFL_CUPTI_OFF(gfl_cupti_memcpy6, channel_id, 76);
GFL_CUPTI_OFF(gfl_cupti_memcpy6, channel_type, 80);
GFL_CUPTI_OFF(gfl_cupti_memcpy6, is_device_launched, 84);
GFL_CUPTI_OFF(gfl_cupti_memcpy6, copy_count, 88);

typedef struct GFL_CUPTI_PACKED gfl_cupti_memcpy_ptop4 {
    uint32_t kind;
    uint8_t copy_kind;
    uint8_t src_kind;
    uint8_t dst_kind;
    uint8_t flags;
    uint64_t bytes;
    uint64_t start;
    uint64_t end;
    uint32_t device_id;
    uint32_t context_id;
    uint32_t stream_id;
    uint32_t src_device_id;
    uint32_t src_context_id;
    uint32_t dst_device_id;
    uint32_t dst_context_id;
    uint32_t correlation_id;
    void *reserved0;
    uint64_t graph_node_id;
    uint32_t graph_id;
    uint32_t channel_id;
    uint32_t channel_type;
    uint32_t pad;
} gfl_cupti_memcpy_ptop4;
GFL_CUPTI_SIZE(gfl_cupti_memcpy_ptop4, 96);
GFL_CUPTI_OFF(gfl_cupti_memcpy_ptop4, bytes, 8);
GFL_CUPTI_OFF(gfl_cupti_memcpy_ptop4, start, 16);
GFL_CUPTI_OFF(gfl_cupti_memcpy_ptop4, device_id, 32);
GFL_CUPTI_OFF(gfl_cupti_memcpy_ptop4, stream_id, 40);
GFL_CUPTI_OFF(gfl_cupti_memcpy_ptop4, src_device_id, 44);
GFL_CUPTI_OFF(gfl_cupti_memcpy_ptop4, src_context_id, 48);
GFL_CUPTI_OFF(gfl_cupti_memcpy_ptop4, dst_device_id, 52);
GFL_CUPTI_OFF(gfl_cupti_memcpy_ptop4, dst_context_id, 56);
GFL_CUPTI_OFF(gfl_cupti_memcpy_ptop4, correlation_id, 60);
GFL_CUPTI_OFF(gfl_cupti_memcpy_ptop4, reserved0, 64);
GFL_CUPTI_OFF(gfl_cupti_memcpy_ptop4, graph_node_id, 72);
GFL_CUPTI_OFF(gfl_cupti_memcpy_ptop4, graph_id, 80);
GFL_CUPTI_OFF(gfl_cupti_memcpy_ptop4, channel_id, 84);
GFL_CUPTI_OFF(gfl_cupti_memcpy_ptop4, channel_type, 88);

typedef struct GFL_CUPTI_PACKED gfl_cupti_memset4 {
    uint32_t kind;
    uint32_t value;
    uint64_t bytes;
    uint64_t start;
    uint64_t end;
    uint32_t device_id;
    uint32_t context_id;
    uint32_t stream_id;
    uint32_t correlation_id;
    uint16_t flags;
    uint16_t memory_kind;
    uint32_t pad;
    void *reserved0;
    uint64_t graph_node_id;
    uint32_t graph_id;
    uint32_t channel_id;
    uint32_t channel_type;
    uint8_t is_device_launched;
    uint8_t pad2[3];
} gfl_cupti_memset4;
GFL_CUPTI_SIZE(gfl_cupti_memset4, 88);
GFL_CUPTI_OFF(gfl_cupti_memset4, value, 4);
GFL_CUPTI_OFF(gfl_cupti_memset4, bytes, 8);
GFL_CUPTI_OFF(gfl_cupti_memset4, start, 16);
GFL_CUPTI_OFF(gfl_cupti_memset4, device_id, 32);
GFL_CUPTI_OFF(gfl_cupti_memset4, stream_id, 40);
GFL_CUPTI_OFF(gfl_cupti_memset4, correlation_id, 44);
GFL_CUPTI_OFF(gfl_cupti_memset4, flags, 48);
GFL_CUPTI_OFF(gfl_cupti_memset4, memory_kind, 50);
GFL_CUPTI_OFF(gfl_cupti_memset4, reserved0, 56);
GFL_CUPTI_OFF(gfl_cupti_memset4, graph_node_id, 64);
GFL_CUPTI_OFF(gfl_cupti_memset4, graph_id, 72);
GFL_CUPTI_OFF(gfl_cupti_memset4, channel_type, 80);
GFL_CUPTI_OFF(gfl_cupti_memset4, is_device_launched, 84);

typedef struct GFL_CUPTI_PACKED gfl_cupti_sync2 {
    uint32_t kind;
    uint32_t type; /* 1 event, 2 stream wait, 3 stream, 4 context */
    uint64_t start;
    uint64_t end;
    uint32_t correlation_id;
    uint32_t context_id;
    uint32_t stream_id;
    uint32_t cuda_event_id;
    uint64_t cuda_event_sync_id;
    uint32_t return_value;
    uint32_t pad;
} gfl_cupti_sync2;
GFL_CUPTI_SIZE(gfl_cupti_sync2, 56);
GFL_CUPTI_OFF(gfl_cupti_sync2, type, 4);
GFL_CUPTI_OFF(gfl_cupti_sync2, start, 8);
GFL_CUPTI_OFF(gfl_cupti_sync2, end, 16);
GFL_CUPTI_OFF(gfl_cupti_sync2, correlation_id, 24);
GFL_CUPTI_OFF(gfl_cupti_sync2, context_id, 28);
GFL_CUPTI_OFF(gfl_cupti_sync2, stream_id, 32);
GFL_CUPTI_OFF(gfl_cupti_sync2, cuda_event_id, 36);
GFL_CUPTI_OFF(gfl_cupti_sync2, cuda_event_sync_id, 40);
GFL_CUPTI_OFF(gfl_cupti_sync2, return_value, 48);

#define GFL_CUPTI_SYNC_INVALID 0xFFFFFFFFu

typedef struct GFL_CUPTI_PACKED gfl_cupti_memory4 {
    uint32_t kind;
    uint32_t memory_operation_type;
    uint32_t memory_kind;
    uint32_t correlation_id;
    uint64_t address;
    uint64_t bytes;
    uint64_t timestamp;
    uint64_t pc;
    uint32_t process_id;
    uint32_t device_id;
    uint32_t context_id;
    uint32_t stream_id;
    const char *name;
    uint32_t is_async;
    uint32_t pad1;
    struct GFL_CUPTI_PACKED {
        uint32_t memory_pool_type;
        uint32_t pad2;
        uint64_t address;
        uint64_t release_threshold;
        uint64_t pool_size_or_pid;
        uint64_t utilized_size;
    } memory_pool_config;
    const char *source;
} gfl_cupti_memory4;
GFL_CUPTI_SIZE(gfl_cupti_memory4, 128);
GFL_CUPTI_OFF(gfl_cupti_memory4, memory_operation_type, 4);
GFL_CUPTI_OFF(gfl_cupti_memory4, memory_kind, 8);
GFL_CUPTI_OFF(gfl_cupti_memory4, correlation_id, 12);
GFL_CUPTI_OFF(gfl_cupti_memory4, address, 16);
GFL_CUPTI_OFF(gfl_cupti_memory4, bytes, 24);
GFL_CUPTI_OFF(gfl_cupti_memory4, timestamp, 32);
GFL_CUPTI_OFF(gfl_cupti_memory4, pc, 40);
GFL_CUPTI_OFF(gfl_cupti_memory4, process_id, 48);
GFL_CUPTI_OFF(gfl_cupti_memory4, device_id, 52);
GFL_CUPTI_OFF(gfl_cupti_memory4, context_id, 56);
GFL_CUPTI_OFF(gfl_cupti_memory4, stream_id, 60);
GFL_CUPTI_OFF(gfl_cupti_memory4, name, 64);
GFL_CUPTI_OFF(gfl_cupti_memory4, is_async, 72);
GFL_CUPTI_OFF(gfl_cupti_memory4, memory_pool_config, 80);
GFL_CUPTI_OFF(gfl_cupti_memory4, source, 120);

typedef struct GFL_CUPTI_PACKED gfl_cupti_context3 {
    uint32_t kind;
    uint32_t context_id;
    uint32_t device_id;
    uint16_t compute_api_kind;
    uint16_t null_stream_id;
    uint32_t parent_context_id;
    uint8_t is_green_context;
    uint8_t padding;
    uint16_t num_multiprocessors;
    uint32_t cig_mode;
    uint32_t padding2;
} gfl_cupti_context3;
GFL_CUPTI_SIZE(gfl_cupti_context3, 32);
GFL_CUPTI_OFF(gfl_cupti_context3, context_id, 4);
GFL_CUPTI_OFF(gfl_cupti_context3, device_id, 8);
GFL_CUPTI_OFF(gfl_cupti_context3, null_stream_id, 14);
GFL_CUPTI_OFF(gfl_cupti_context3, parent_context_id, 16);
GFL_CUPTI_OFF(gfl_cupti_context3, is_green_context, 20);
GFL_CUPTI_OFF(gfl_cupti_context3, num_multiprocessors, 22);
GFL_CUPTI_OFF(gfl_cupti_context3, cig_mode, 24);

/* ---- callbacks (cupti_callbacks.h) ---- */
enum {
    GFL_CUPTI_CB_DOMAIN_DRIVER_API = 1,
    GFL_CUPTI_CB_DOMAIN_RUNTIME_API = 2,
    GFL_CUPTI_CB_DOMAIN_RESOURCE = 3,
    GFL_CUPTI_CB_DOMAIN_STATE = 6
};
enum { GFL_CUPTI_API_ENTER = 0, GFL_CUPTI_API_EXIT = 1 };

/* Runtime launch CBIDs (cupti_runtime_cbid.h, CUDA 13.0). */
enum {
    GFL_RT_CBID_cudaLaunch_v3020 = 13,
    GFL_RT_CBID_cudaLaunchKernel_v7000 = 211,
    GFL_RT_CBID_cudaLaunch_ptsz_v7000 = 213,
    GFL_RT_CBID_cudaLaunchKernel_ptsz_v7000 = 214,
    GFL_RT_CBID_cudaLaunchCooperativeKernel_v9000 = 269,
    GFL_RT_CBID_cudaLaunchCooperativeKernel_ptsz_v9000 = 270,
    GFL_RT_CBID_cudaLaunchCooperativeKernelMultiDevice_v9000 = 272,
    GFL_RT_CBID_cudaGraphLaunch_v10000 = 311,
    GFL_RT_CBID_cudaGraphLaunch_ptsz_v10000 = 312,
    GFL_RT_CBID_cudaLaunchKernelExC_v11060 = 430,
    GFL_RT_CBID_cudaLaunchKernelExC_ptsz_v11060 = 431,
    GFL_RT_CBID___cudaLaunchKernel_v13000 = 505,
    GFL_RT_CBID___cudaLaunchKernel_ptsz_v13000 = 506,
    GFL_RT_CBID_cudaDeviceReset_v3020 = 164
};
/* Driver launch CBIDs (cupti_driver_cbid.h, CUDA 13.0). */
enum {
    GFL_DRV_CBID_cuLaunchKernel = 307,
    GFL_DRV_CBID_cuLaunchKernel_ptsz = 442,
    GFL_DRV_CBID_cuLaunchCooperativeKernel = 477,
    GFL_DRV_CBID_cuLaunchCooperativeKernel_ptsz = 478,
    GFL_DRV_CBID_cuGraphLaunch = 514,
    GFL_DRV_CBID_cuGraphLaunch_ptsz = 515,
    GFL_DRV_CBID_cuLaunchKernelEx = 652,
    GFL_DRV_CBID_cuLaunchKernelEx_ptsz = 653
};

/* Device and pinned-host allocation CBIDs (CUDA 13.0): their return codes
 * feed the oom and cuda-error triggers of ring mode (docs/recorder.md). */
enum {
    GFL_RT_CBID_cudaMalloc_v3020 = 20,
    GFL_RT_CBID_cudaMallocPitch_v3020 = 21,
    GFL_RT_CBID_cudaMallocArray_v3020 = 23,
    GFL_RT_CBID_cudaMallocHost_v3020 = 25,
    GFL_RT_CBID_cudaHostAlloc_v3020 = 27,
    GFL_RT_CBID_cudaMalloc3D_v3020 = 140,
    GFL_RT_CBID_cudaMallocManaged_v6000 = 206,
    GFL_RT_CBID_cudaMallocAsync_v11020 = 373,
    GFL_RT_CBID_cudaMallocAsync_ptsz_v11020 = 374,
    GFL_RT_CBID_cudaMallocFromPoolAsync_v11020 = 391,
    GFL_RT_CBID_cudaMallocFromPoolAsync_ptsz_v11020 = 392
};
enum {
    GFL_DRV_CBID_cuMemAlloc_v2 = 243,
    GFL_DRV_CBID_cuMemAllocPitch_v2 = 244,
    GFL_DRV_CBID_cuMemHostAlloc_v2 = 271,
    GFL_DRV_CBID_cuMemAllocHost_v2 = 294,
    GFL_DRV_CBID_cuMemAllocManaged = 371,
    GFL_DRV_CBID_cuMemCreate = 549,
    GFL_DRV_CBID_cuMemAllocAsync = 598,
    GFL_DRV_CBID_cuMemAllocAsync_ptsz = 599,
    GFL_DRV_CBID_cuMemAllocFromPoolAsync = 611,
    GFL_DRV_CBID_cuMemAllocFromPoolAsync_ptsz = 612
};

typedef struct gfl_cupti_callback_data {
    uint32_t callback_site;
    const char *function_name;
    const void *function_params;
    void *function_return_value;
    const char *symbol_name;
    void *context;
    uint32_t context_uid;
    uint64_t *correlation_data;
    uint32_t correlation_id;
} gfl_cupti_callback_data;
GFL_CUPTI_SIZE(gfl_cupti_callback_data, 72);
GFL_CUPTI_OFF(gfl_cupti_callback_data, function_name, 8);
GFL_CUPTI_OFF(gfl_cupti_callback_data, function_params, 16);
GFL_CUPTI_OFF(gfl_cupti_callback_data, function_return_value, 24);
GFL_CUPTI_OFF(gfl_cupti_callback_data, symbol_name, 32);
GFL_CUPTI_OFF(gfl_cupti_callback_data, context, 40);
GFL_CUPTI_OFF(gfl_cupti_callback_data, context_uid, 48);
GFL_CUPTI_OFF(gfl_cupti_callback_data, correlation_data, 56);
GFL_CUPTI_OFF(gfl_cupti_callback_data, correlation_id, 64);

typedef struct gfl_dim3 {
    unsigned x, y, z;
} gfl_dim3;

/* cudaLaunchKernel_v7000_params (also _ptsz, cooperative) */
typedef struct gfl_rt_launch_params {
    const void *func;
    gfl_dim3 grid_dim;
    gfl_dim3 block_dim;
    void **args;
    size_t shared_mem;
    void *stream;
} gfl_rt_launch_params;
GFL_CUPTI_SIZE(gfl_rt_launch_params, 56);
GFL_CUPTI_OFF(gfl_rt_launch_params, grid_dim, 8);
GFL_CUPTI_OFF(gfl_rt_launch_params, block_dim, 20);
GFL_CUPTI_OFF(gfl_rt_launch_params, args, 32);
GFL_CUPTI_OFF(gfl_rt_launch_params, shared_mem, 40);
GFL_CUPTI_OFF(gfl_rt_launch_params, stream, 48);

/* cudaLaunchConfig_t, behind cudaLaunchKernelExC_v11060_params.config */
typedef struct gfl_rt_launch_config {
    gfl_dim3 grid_dim;
    gfl_dim3 block_dim;
    size_t dynamic_smem_bytes;
    void *stream;
    void *attrs;
    unsigned num_attrs;
} gfl_rt_launch_config;
GFL_CUPTI_SIZE(gfl_rt_launch_config, 56);
GFL_CUPTI_OFF(gfl_rt_launch_config, dynamic_smem_bytes, 24);
GFL_CUPTI_OFF(gfl_rt_launch_config, stream, 32);
GFL_CUPTI_OFF(gfl_rt_launch_config, num_attrs, 48);

typedef struct gfl_rt_launch_ex_params {
    const gfl_rt_launch_config *config;
    const void *func;
    void **args;
} gfl_rt_launch_ex_params;
GFL_CUPTI_SIZE(gfl_rt_launch_ex_params, 24);

/* cuLaunchKernel_params (also _ptsz; cooperative lacks `extra`) */
typedef struct gfl_drv_launch_params {
    void *f;
    unsigned grid_x, grid_y, grid_z;
    unsigned block_x, block_y, block_z;
    unsigned shared_mem_bytes;
    void *h_stream;
    void **kernel_params;
    void **extra;
} gfl_drv_launch_params;
GFL_CUPTI_SIZE(gfl_drv_launch_params, 64);
GFL_CUPTI_OFF(gfl_drv_launch_params, grid_x, 8);
GFL_CUPTI_OFF(gfl_drv_launch_params, block_x, 20);
GFL_CUPTI_OFF(gfl_drv_launch_params, shared_mem_bytes, 32);
GFL_CUPTI_OFF(gfl_drv_launch_params, h_stream, 40);
GFL_CUPTI_OFF(gfl_drv_launch_params, kernel_params, 48);
GFL_CUPTI_OFF(gfl_drv_launch_params, extra, 56);

/* CUlaunchConfig, behind cuLaunchKernelEx_params.config */
typedef struct gfl_drv_launch_config {
    unsigned grid_x, grid_y, grid_z;
    unsigned block_x, block_y, block_z;
    unsigned shared_mem_bytes;
    void *h_stream;
    void *attrs;
    unsigned num_attrs;
} gfl_drv_launch_config;
GFL_CUPTI_SIZE(gfl_drv_launch_config, 56);
GFL_CUPTI_OFF(gfl_drv_launch_config, shared_mem_bytes, 24);
GFL_CUPTI_OFF(gfl_drv_launch_config, h_stream, 32);
GFL_CUPTI_OFF(gfl_drv_launch_config, attrs, 40);
GFL_CUPTI_OFF(gfl_drv_launch_config, num_attrs, 48);

typedef struct gfl_drv_launch_ex_params {
    const gfl_drv_launch_config *config;
    void *f;
    void **kernel_params;
    void **extra;
} gfl_drv_launch_ex_params;
GFL_CUPTI_SIZE(gfl_drv_launch_ex_params, 32);

/* ---- CUPTI functions resolved with dlsym ---- */
typedef int gfl_cupti_result;
typedef void (*gfl_cupti_callback_fn)(void *ud, uint32_t domain, uint32_t cbid,
                                      const void *cbdata);
typedef void (*gfl_cupti_buf_request_fn)(uint8_t **buf, size_t *size,
                                         size_t *max_records);
typedef void (*gfl_cupti_buf_complete_fn)(void *ctx, uint32_t stream,
                                          uint8_t *buf, size_t size,
                                          size_t valid);

typedef gfl_cupti_result (*gfl_cuptiGetVersion_fn)(uint32_t *v);
typedef gfl_cupti_result (*gfl_cuptiGetResultString_fn)(gfl_cupti_result r,
                                                        const char **s);
typedef gfl_cupti_result (*gfl_cuptiSubscribe_fn)(void **sub,
                                                  gfl_cupti_callback_fn cb,
                                                  void *ud);
typedef gfl_cupti_result (*gfl_cuptiEnableCallback_fn)(uint32_t enable,
                                                       void *sub,
                                                       uint32_t domain,
                                                       uint32_t cbid);
typedef gfl_cupti_result (*gfl_cuptiActivityRegisterCallbacks_fn)(
    gfl_cupti_buf_request_fn req, gfl_cupti_buf_complete_fn done);
typedef gfl_cupti_result (*gfl_cuptiActivityEnable_fn)(uint32_t kind);
typedef gfl_cupti_result (*gfl_cuptiActivityDisable_fn)(uint32_t kind);
typedef gfl_cupti_result (*gfl_cuptiActivityGetNextRecord_fn)(
    uint8_t *buf, size_t valid, gfl_cupti_activity **rec);
typedef gfl_cupti_result (*gfl_cuptiActivityFlushAll_fn)(uint32_t flag);
typedef gfl_cupti_result (*gfl_cuptiActivityGetNumDroppedRecords_fn)(
    void *ctx, uint32_t stream, size_t *dropped);
typedef gfl_cupti_result (*gfl_cuptiGetTimestamp_fn)(uint64_t *ts);
/* cuptiActivityEnableRuntimeApi / cuptiActivityEnableDriverApi (12.5+) */
typedef gfl_cupti_result (*gfl_cuptiActivityEnableApi_fn)(uint32_t cbid,
                                                          uint8_t enable);

#endif /* GPUFL_CLIENT_CUPTI_ABI_INT_H */
