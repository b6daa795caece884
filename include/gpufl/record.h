/*
 * record.h - report GPU activity to libgpufl from a source outside it.
 *
 * libgpufl's own sources (the simulated GPU, CUPTI) report through these
 * calls, and so can any other runtime that knows what ran on a GPU (a
 * framework's own tracer, another vendor's profiler, a replay tool).  Each
 * call copies the struct into the calling thread's buffer: it never blocks
 * and never allocates after the thread's first event.  Names are passed as
 * ids from gpufl_intern() so the hot path does no string work.
 *
 * Every struct begins with its size (fill it with sizeof): fields are only
 * ever appended (libbpf's OPTS rule, docs/client.md "Versioned structs").
 * Times are ns on the gpufl clock (gpufl_now_ns()).
 * Fields left 0 are written as absent where docs/events.md says so.
 */
#ifndef GPUFL_RECORD_H
#define GPUFL_RECORD_H

#include "gpufl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Wall-clock ns since the Unix epoch, from a monotonic clock anchored at
 * gpufl_init(): never goes backwards within a session. */
GPUFL_API uint64_t gpufl_now_ns(void);

/* The calling thread's innermost open scope: token (0 = none) and path id. */
GPUFL_API void gpufl_current_scope(uint64_t *token, uint32_t *path_id);

/* Limiting resources of theoretical occupancy (bit set). */
#define GPUFL_LIMIT_WARPS 0x01u
#define GPUFL_LIMIT_REGS 0x02u
#define GPUFL_LIMIT_SMEM 0x04u
#define GPUFL_LIMIT_BLOCKS 0x08u
#define GPUFL_LIMIT_BARRIERS 0x10u

typedef struct gpufl_kernel {
    size_t sz;
    uint32_t name_id; /* gpufl_intern() of the (mangled) name */
    uint32_t device;
    uint32_t stream;
    uint32_t corr; /* correlation id of the launch */
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t regs;             /* registers per thread */
    uint32_t smem_static;      /* bytes per block */
    uint32_t smem_dynamic;     /* bytes per block */
    uint32_t local_mem;        /* local memory bytes per thread (spills) */
    uint64_t start_ns, end_ns; /* GPU execution */
    uint64_t api_enter_ns;     /* launch API entered (0 = unknown) */
    uint64_t api_exit_ns;      /* launch API returned (0 = unknown) */
    float occupancy;           /* theoretical, (0, 1]; <= 0 = unknown (a
                                  launch that ran is never at 0) */
    uint32_t limiters;         /* GPUFL_LIMIT_* bits */
    uint64_t scope;            /* scope token, 0 = the caller's current */
    uint32_t path_id;          /* scope path id, 0 = the caller's current */
    uint32_t stack_id;         /* gpufl_intern_stack() id, 0 = none */
    uint32_t flags;            /* GPUFL_KERNEL_* */
    uint32_t reserved_;        /* gpufl 0.1's tail padding: never read */
    /* Added in 0.2.  OS thread id (gettid) of the thread that called the
     * launch API, written with the call's times (the CPU thread whose API
     * lane the call belongs to); 0 = the calling thread of this function. */
    uint32_t api_tid;
} gpufl_kernel;

#define GPUFL_KERNEL_NO_SCOPE 0x1u /* do not attribute to the caller's scope */
#define GPUFL_KERNEL_COOPERATIVE 0x2u

typedef enum gpufl_copy_kind {
    GPUFL_COPY_UNKNOWN = 0,
    GPUFL_COPY_HTOD = 1,
    GPUFL_COPY_DTOH = 2,
    GPUFL_COPY_DTOD = 3,
    GPUFL_COPY_HTOH = 4,
    GPUFL_COPY_PTOP = 5 /* peer: device -> another device */
} gpufl_copy_kind;

typedef struct gpufl_memcpy {
    size_t sz;
    uint32_t kind; /* gpufl_copy_kind */
    uint32_t device;
    uint32_t dst_device; /* for PTOP; else = device */
    uint32_t stream;
    uint32_t corr;
    uint32_t flags; /* GPUFL_MEMCPY_ASYNC, GPUFL_MEMCPY_PINNED */
    uint64_t bytes;
    uint64_t start_ns, end_ns;
    uint64_t scope;
    uint32_t path_id;
    uint32_t stack_id;
    /* Added in 0.2: the copy's API call (cudaMemcpyAsync, ...), both 0 =
     * unknown, and the thread that made it (0 = the calling thread of
     * this function); as for gpufl_kernel. */
    uint64_t api_enter_ns, api_exit_ns;
    uint32_t api_tid;
} gpufl_memcpy;

#define GPUFL_MEMCPY_ASYNC 0x1u
#define GPUFL_MEMCPY_PINNED 0x2u

typedef struct gpufl_memset {
    size_t sz;
    uint32_t device, stream, corr;
    uint32_t value;
    uint64_t bytes;
    uint64_t start_ns, end_ns;
    uint64_t scope;
    uint32_t path_id;
    uint32_t reserved_; /* gpufl 0.1's tail padding: never read */
    /* Added in 0.2: the memset's API call and thread, as for gpufl_memcpy. */
    uint64_t api_enter_ns, api_exit_ns;
    uint32_t api_tid;
} gpufl_memset;

typedef enum gpufl_sync_kind {
    GPUFL_SYNC_UNKNOWN = 0,
    GPUFL_SYNC_EVENT = 1,       /* cudaEventSynchronize */
    GPUFL_SYNC_STREAM_WAIT = 2, /* cudaStreamWaitEvent */
    GPUFL_SYNC_STREAM = 3,      /* cudaStreamSynchronize */
    GPUFL_SYNC_CONTEXT = 4      /* cudaDeviceSynchronize */
} gpufl_sync_kind;

typedef struct gpufl_sync {
    size_t sz;
    uint32_t kind; /* gpufl_sync_kind */
    uint32_t device, stream, corr;
    uint64_t start_ns, end_ns;
    uint64_t scope;
    uint32_t path_id;
    uint32_t stack_id;
} gpufl_sync;

typedef enum gpufl_mem_kind {
    GPUFL_MEM_DEVICE = 0,
    GPUFL_MEM_PINNED = 1,
    GPUFL_MEM_MANAGED = 2,
    GPUFL_MEM_PAGEABLE = 3,
    GPUFL_MEM_ARRAY = 4,
    GPUFL_MEM_UNKNOWN = 5
} gpufl_mem_kind;

typedef struct gpufl_memop {
    size_t sz;
    uint32_t is_free; /* 0 = allocation, 1 = free */
    uint32_t kind;    /* gpufl_mem_kind */
    uint32_t device, stream, corr;
    uint64_t address;
    uint64_t bytes;
    uint64_t ts_ns;
    uint64_t scope;
    uint32_t path_id;
    uint32_t stack_id;
} gpufl_memop;

/* SASS metrics of one instruction (PC) of one function, summed over a scope. */
typedef struct gpufl_sass {
    size_t sz;
    uint32_t device;
    uint32_t func_id;       /* gpufl_intern() of the function name */
    uint32_t file_id;       /* gpufl_intern() of the source file, 0 = unknown */
    uint32_t line;          /* source line, 0 = unknown */
    uint64_t pc;            /* offset within the function */
    uint64_t inst_executed; /* warp-level instructions executed */
    uint64_t thread_inst_executed; /* thread-level: divergence = 1 - t/(32*w) */
    uint64_t gmem_sectors;         /* global memory sectors accessed */
    uint64_t gmem_sectors_ideal; /* ideal sectors: coalescing = ideal/actual */
    uint64_t scope;
    uint32_t path_id;
} gpufl_sass;

/* PC-sampling result: samples per stall reason at one PC of a function. */
#define GPUFL_PC_MAX_REASONS 8
typedef struct gpufl_pcsamp {
    size_t sz;
    uint32_t device;
    uint32_t func_id, file_id, line;
    uint64_t pc;
    uint32_t n_reasons;                       /* <= GPUFL_PC_MAX_REASONS */
    uint32_t reason_id[GPUFL_PC_MAX_REASONS]; /* gpufl_intern() of names */
    uint32_t samples[GPUFL_PC_MAX_REASONS];
    uint64_t scope;
    uint32_t path_id;
} gpufl_pcsamp;

/* Record calls: return GPUFL_OK, GPUFL_ENOTINIT, GPUFL_EINVAL (NULL; sz
 * smaller than the first published struct or above 4096; or a field this
 * libgpufl does not know set), GPUFL_ENOMEM (the thread's buffer could not
 * be allocated) or GPUFL_EFULL (dropped and counted).  A caller built with
 * an older, smaller struct is accepted: nothing past its sz is read, and
 * fields it does not know read as 0.  A caller built with a newer, larger
 * struct is accepted when the bytes past this library's struct are 0. */
GPUFL_API int gpufl_record_kernel(const gpufl_kernel *k);
GPUFL_API int gpufl_record_memcpy(const gpufl_memcpy *m);
GPUFL_API int gpufl_record_memset(const gpufl_memset *m);
GPUFL_API int gpufl_record_sync(const gpufl_sync *s);
GPUFL_API int gpufl_record_memop(const gpufl_memop *m);
GPUFL_API int gpufl_record_sass(const gpufl_sass *s);
GPUFL_API int gpufl_record_pcsamp(const gpufl_pcsamp *p);

/* Intern a call stack (n frames, innermost first, each a symbolized string
 * such as "train_step+0x1c (app)").  Strings are copied.  Returns an id for
 * stack_id fields, 0 on failure.  Takes a lock: call off the hot path. */
GPUFL_API uint32_t gpufl_intern_stack(const char *const *frames, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* GPUFL_RECORD_H */
