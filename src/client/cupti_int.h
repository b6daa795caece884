/*
 * cupti_int.h - the state shared by the files of the CUPTI engines:
 * source_cupti.c (loading, lifecycle, activity buffers, the flush thread),
 * source_cupti_launch.c (launch callbacks, the correlation table, CPU
 * stacks), source_cupti_decode.c (activity records into gpufl events),
 * source_cupti_prof.c (what the profiling engines share: resource
 * callbacks, contexts, cubins and source lines, the scope hook),
 * source_cupti_sass.c (the "sass" engine) and source_cupti_pcs.c (the
 * "pcsamp" engine).
 *
 * CUPTI allows one subscriber per process and its callbacks carry no
 * pointer of ours for the buffer API, so the source keeps one process-wide
 * instance (cupti_g), created by open() and torn down by close().
 */
#ifndef GPUFL_CLIENT_CUPTI_INT_H
#define GPUFL_CLIENT_CUPTI_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <gpufl/record.h>

#include "cupti_prof_abi_int.h"
#include "common/elfsym.h"
#include "occupancy.h"
#include "source.h"

#define CUPTI_BUF_SIZE (1u << 20) /* activity buffer handed to CUPTI */
#define CUPTI_MAX_BUFFERS 64      /* cap: 64 MiB of buffers at most */
#define CUPTI_CORR_SLOTS 32768    /* launches remembered for the join */
#define CUPTI_STACK_MAX 64        /* frames captured per launch, cap */
#define CUPTI_STACK_CACHE 4096    /* raw-stack -> interned id cache */
#define CUPTI_ELF_MODS 256        /* modules whose .symtab is kept */
#define CUPTI_ELF_SYMS (8u << 20) /* symbols kept, all modules together */
#define CUPTI_FLUSH_MS_DEFAULT 500
#define CUPTI_CLOSE_MS_DEFAULT 10000   /* longest wait for the final flush */
#define CUPTI_PROF_MAX_CTX 16          /* contexts a profiling engine follows */
#define CUPTI_MAX_CUBINS 256           /* modules kept for source lines */
#define CUPTI_CUBIN_BYTES (256u << 20) /* cap on the copies, all modules */
#define CUPTI_SRC_CACHE 8192           /* (cubin, function, pc) -> line cache */
#define CUPTI_PCS_PCS 1024 /* PC records per cuptiPCSamplingGetData */
#define CUPTI_PCS_MAX_REASONS 64

/* Settings the CUPTI source reads (resolved by options.c at gpufl_init). */
typedef struct cupti_cfg {
    /* GPUFL_CUPTI_LIB; "" = search (docs/cupti-internals.md#library-loading) */
    char lib[4096];
    int stacks;           /* GPUFL_STACKS */
    uint32_t stack_depth; /* GPUFL_STACK_DEPTH, 1..CUPTI_STACK_MAX */
    uint32_t flush_ms;    /* GPUFL_CUPTI_FLUSH_MS */
    uint32_t close_ms;    /* GPUFL_CUPTI_CLOSE_MS */
} cupti_cfg;

/* The session's resolved settings (options.c). */
const cupti_cfg *client_cupti_cfg(void);

/* What a launch callback saw, kept for the activity record that follows.
 * seq is a seqlock: odd while a writer fills the slot. */
typedef struct cupti_launch {
    _Atomic uint32_t seq;
    _Atomic uint32_t corr; /* 0 = empty */
    uint64_t enter_ns, exit_ns;
    uint64_t scope;
    uint32_t path_id;
    uint32_t flags;    /* GPUFL_KERNEL_COOPERATIVE */
    uint32_t n_frames; /* frames in cupti_g.frames for this slot */
    uint32_t tid;      /* the thread that made the launch call */
} cupti_launch;

typedef struct cupti_dev {
    int known; /* properties read */
    occ_arch arch;
    int arch_ok;
} cupti_dev;

typedef struct cupti_buf {
    uint8_t *mem;
    _Atomic int busy;
} cupti_buf;

/* A context a profiling engine enabled (SASS patching or PC sampling). */
typedef struct cupti_prof_ctx {
    void *ctx;
    uint32_t dev;
    /* pcsamp: our sampling buffer and the chip's stall-reason table */
    gfl_cupti_pcs_data *buf;
    uint32_t n_reasons;
    uint32_t reason_index[CUPTI_PCS_MAX_REASONS];
    uint32_t reason_name[CUPTI_PCS_MAX_REASONS]; /* interned, 0 = skip */
} cupti_prof_ctx;

typedef struct cupti_cubin {
    char *mem; /* our copy */
    size_t len;
    uint64_t crc;
    int crc_done;
} cupti_cubin;

enum {
    CUPTI_SASS_INST,
    CUPTI_SASS_THREAD,
    CUPTI_SASS_SECTORS,
    CUPTI_SASS_IDEAL,
    CUPTI_SASS_IDEAL_LD,
    CUPTI_SASS_IDEAL_ST,
    CUPTI_SASS_N
};

/* The profiling engines ("sass", "pcsamp"); at most one per process. */
typedef struct cupti_prof {
    int mode; /* CUPTI_PROF_SASS or CUPTI_PROF_PCS while a session runs */
    _Atomic int active;
    pthread_mutex_t lock; /* everything below; never held across a
                             driver call */
    /* shared */
    gfl_cuptiGetDeviceId_fn GetDeviceId;
    gfl_cuptiProfilerInitialize_fn ProfilerInitialize, ProfilerDeInitialize;
    gfl_cuptiProfilerDeviceSupported_fn DeviceSupported;
    gfl_cuptiDeviceGetChipName_fn GetChipName;
    gfl_cuptiGetCubinCrc_fn GetCubinCrc;
    gfl_cuptiGetSassToSourceCorrelation_fn SourceCorrelation;
    gfl_cuCtxSynchronize_fn cuCtxSynchronize;
    gfl_cuCtxGetCurrent_fn cuCtxGetCurrent;
    /* sass */
    gfl_cuptiSassMetricsGetProperties_fn SassGetProperties;
    gfl_cuptiSassMetricsSetConfig_fn SassSetConfig;
    gfl_cuptiSassMetricsUnsetConfig_fn SassUnsetConfig;
    gfl_cuptiSassMetricsEnable_fn SassEnable;
    gfl_cuptiSassMetricsDisable_fn SassDisable;
    gfl_cuptiSassMetricsGetDataProperties_fn SassGetDataProperties;
    gfl_cuptiSassMetricsFlushData_fn SassFlushData;
    uint64_t sass_id[GPU_MAX_DEVICES][CUPTI_SASS_N]; /* 0 = not offered */
    int sass_ready[GPU_MAX_DEVICES];                 /* metric ids resolved */
    int sass_config[GPU_MAX_DEVICES];                /* SetConfig done */
    /* pcsamp */
    gfl_cuptiPCSamplingEnable_fn PcsEnable;
    gfl_cuptiPCSamplingDisable_fn PcsDisable;
    gfl_cuptiPCSamplingSetConfigurationAttribute_fn PcsSetConfig;
    gfl_cuptiPCSamplingGetData_fn PcsGetData;
    gfl_cuptiPCSamplingGetNumStallReasons_fn PcsGetNumStallReasons;
    gfl_cuptiPCSamplingGetStallReasons_fn PcsGetStallReasons;
    char **free_names; /* CUPTI's shared function names, freed at close */
    size_t n_free_names, cap_free_names;
    /* contexts, modules, source lines */
    cupti_prof_ctx ctxs[CUPTI_PROF_MAX_CTX];
    int n_ctx;
    void *rejected[CUPTI_PROF_MAX_CTX]; /* contexts that failed: not again */
    int n_rejected;
    cupti_cubin cubins[CUPTI_MAX_CUBINS];
    int n_cubins;
    size_t cubin_bytes;
    uint64_t src_key[CUPTI_SRC_CACHE];
    uint32_t src_file[CUPTI_SRC_CACHE], src_line[CUPTI_SRC_CACHE];
    /* what happened, for the session's markers and counters */
    uint64_t n_lines, n_dropped, n_errors, n_hw_full;
    char error[SRC_REASON_LEN]; /* first runtime failure */
    gpufl_counter *c_dropped;
} cupti_prof;

enum { CUPTI_PROF_NONE = 0, CUPTI_PROF_SASS = 1, CUPTI_PROF_PCS = 2 };

/* One module of the process, as its link map names it, and its .symtab
 * (only: dladdr already reads .dynsym). */
typedef struct cupti_elfmod {
    const void *lm; /* struct link_map *, with base: the key */
    uintptr_t base; /* l_addr: virtual address = address - base */
    char *path;     /* l_name, or /proc/self/exe for the program */
    int ok;         /* elfsym_load succeeded */
    elfsym es;
} cupti_elfmod;

typedef struct cupti_state {
    void *lib, *cuda;
    /* CUPTI */
    gfl_cuptiGetVersion_fn GetVersion;
    gfl_cuptiGetResultString_fn GetResultString;
    gfl_cuptiSubscribe_fn Subscribe;
    gfl_cuptiEnableCallback_fn EnableCallback;
    gfl_cuptiActivityRegisterCallbacks_fn RegisterCallbacks;
    gfl_cuptiActivityEnable_fn Enable;
    gfl_cuptiActivityDisable_fn Disable;      /* optional: trace off */
    gfl_cuptiActivityEnable_fn EnableAndDump; /* optional */
    gfl_cuptiActivityGetNextRecord_fn GetNextRecord;
    gfl_cuptiActivityFlushAll_fn FlushAll;
    gfl_cuptiActivityGetNumDroppedRecords_fn GetNumDropped;
    gfl_cuptiGetTimestamp_fn GetTimestamp;
    /* driver, used outside callbacks only */
    gfl_cuInit_fn cuInit;
    gfl_cuDriverGetVersion_fn cuDriverGetVersion;
    gfl_cuDeviceGetCount_fn cuDeviceGetCount;
    gfl_cuDeviceGet_fn cuDeviceGet;
    gfl_cuDeviceGetAttribute_fn cuDeviceGetAttribute;
    gfl_cuDeviceGetName_fn cuDeviceGetName;
    gfl_cuDeviceGetUuid_fn cuDeviceGetUuid;
    gfl_cuDeviceTotalMem_fn cuDeviceTotalMem;

    void *subscriber;
    uint32_t version;
    int64_t clock_offset; /* gpufl clock - CUPTI clock, ns */
    int deferred_devices; /* inside cuInit (injection): query later */
    _Atomic int api_seen; /* an API callback ran: cuInit has returned */
    _Atomic int stopping; /* callbacks return at once */
    _Atomic int stacks_on;
    int stack_dwarf_only;        /* 1: no frame-pointer hand-off (benchmarks) */
    char broken[SRC_REASON_LEN]; /* why a subscribed CUPTI is unusable */
    cupti_cfg cfg;

    /* activity buffers */
    cupti_buf bufs[CUPTI_MAX_BUFFERS];
    pthread_mutex_t done_lock; /* completed-buffer queue */
    uint8_t *done_buf[CUPTI_MAX_BUFFERS];
    size_t done_valid[CUPTI_MAX_BUFFERS];
    uint32_t n_done;
    _Atomic uint64_t refused; /* request callbacks answered with NULL */
    _Atomic int closing;      /* the final forced flush is done: no more
                                 buffers are handed out */

    /* flush thread */
    pthread_t thread;
    int thread_started;
    /* A flush thread stuck in CUPTI at close is abandoned, not joined
     * (cupti_close): own_gen moves on, and the thread, should CUPTI ever
     * return, checks it under own_lock before touching the session. */
    pthread_mutex_t own_lock;
    uint32_t own_gen;
    uint64_t n_abandoned; /* flush threads given up on, process lifetime */
    int contexts_dumped;  /* existing contexts asked for (EnableAndDump) */
    uint64_t started_ns;  /* CLOCK_MONOTONIC at start() */
    pthread_mutex_t lock; /* thread wake-up and flush handshake */
    pthread_cond_t cond;
    int stop;
    uint64_t flush_req, flush_done;

    /* decoding: only the flush thread decodes */
    cupti_dev devs[GPU_MAX_DEVICES];
    int n_devs;
    gpu_device devices[GPU_MAX_DEVICES];
    uint32_t ctx_id[64], ctx_dev[64]; /* CONTEXT records: context -> device */
    uint32_t n_ctx;
    uint64_t n_dropped, n_invalid, n_records, n_unmatched;
    gpufl_counter *c_dropped, *c_invalid, *c_refused;
    uint64_t stack_key[CUPTI_STACK_CACHE];
    uint32_t stack_id[CUPTI_STACK_CACHE];
    uintptr_t skip_lo[4], skip_hi[4]; /* our, CUPTI's, the driver's text */
    int n_skip;
    /* .symtab of the modules seen in stacks (flush thread only) */
    struct cupti_elfmod *elfmods; /* CUPTI_ELF_MODS */
    uint32_t n_elfmods;
    uint64_t elf_syms; /* symbols held, all modules: capped */

    /* launch join table; frames only when stacks are on */
    cupti_launch *launches;
    uintptr_t *frames; /* CUPTI_CORR_SLOTS x cfg.stack_depth */
    _Atomic uint64_t launch_lost;

    /* attach (libraries, subscription, devices): once per session for
     * all the CUPTI engines; the result is kept for the others */
    uint32_t attach_gen;
    int attach_rc;
    char attach_why[2 * SRC_REASON_LEN]; /* room for every message */
    int traced; /* tracing was on at some time in this process (the
                   sass engine refuses to run after it) */

    /* tracing on and off (cupti_trace_set): buffer callbacks registered
     * once; activity kinds, API records and the launch joins follow
     * trace_on; the launch callbacks stay installed while tracing is off
     * only for the error triggers (err_trigger) */
    int registered;
    int launch_cb_on, alloc_cb_on, api_records_on;
    _Atomic int trace_on;
    _Atomic uint32_t trace_gen; /* moves at every switch: a thread's launch
                                   nesting from before it is stale */
    _Atomic int err_trigger;    /* ring mode's cuda-error / oom armed */

    cupti_prof prof;
} cupti_state;

extern cupti_state *cupti_g;

/* source_cupti.c: load the libraries, check the version, subscribe and
 * read the devices - what every CUPTI engine needs first.  Once per
 * session (later engines get the first one's result); sim excludes it. */
int cupti_attach(cupti_state *s, char *why, size_t whylen);
/* source_cupti_load.c: libcuda's and libcupti's entry points into s
 * (dlopen; why says what is missing); GPUFL_EUNAVAIL when absent. */
int cupti_load_cuda(cupti_state *s, char *why, size_t whylen);
int cupti_load_cupti(cupti_state *s, char *why, size_t whylen);
/* A CUDA driver result's name and meaning. */
const char *cupti_cuda_err_name(int rc);
/* Why `call` failed with CUPTI result rc, into why; marks s stopping. */
void cupti_reason(cupti_state *s, int rc, const char *call, char *why,
                  size_t whylen);
/* Short words for a CUPTI result ("insufficient privileges ..."). */
void cupti_result_text(cupti_state *s, int rc, char *out, size_t outlen);
int cupti_prof_refusal(cupti_state *s, int rc, char *why, size_t whylen,
                       const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* source_cupti_prof.c: shared by the sass and pcsamp engines */
int cupti_prof_open(cupti_state *s, int mode, const src_config *cfg, char *why,
                    size_t whylen);
void cupti_prof_start(cupti_state *s);
/* Collect now, for the calling thread's scope (gpufl_flush). */
void cupti_prof_flush(cupti_state *s);
void cupti_prof_close(cupti_state *s);
/* Resource callbacks (contexts, modules), from cupti_launch_callback. */
void cupti_prof_resource(cupti_state *s, uint32_t cbid, const void *cbdata);
/* A runtime failure: logged, kept for the final marker. */
void cupti_prof_error(cupti_state *s, const char *call, int rc);
/* Source file (interned) and line of a PC; 0s when unknown.  crc32: the
 * SASS API's 32-bit CRC (crc is then only its low half). Lock held. */
void cupti_prof_source(cupti_state *s, uint64_t crc, int crc32,
                       const char *func, uint32_t func_id, uint64_t pc,
                       uint32_t *file_id, uint32_t *line);

/* source_cupti_sass.c */
int cupti_sass_open(cupti_state *s, char *why, size_t whylen);
/* Set up a new context (config, enable); lock held, no driver call.
 * 0, or -1 when the context is not followed (the error is recorded). */
int cupti_sass_ctx_on(cupti_state *s, cupti_prof_ctx *c);
/* Flush every context's counters into sass lines of (scope, path). */
void cupti_sass_collect(cupti_state *s, uint64_t scope, uint32_t path);
void cupti_sass_ctx_off(cupti_state *s, cupti_prof_ctx *c);
void cupti_sass_close(cupti_state *s);

/* source_cupti_pcs.c */
int cupti_pcs_open(cupti_state *s, char *why, size_t whylen);
int cupti_pcs_ctx_on(cupti_state *s, cupti_prof_ctx *c);
void cupti_pcs_collect(cupti_state *s, uint64_t scope, uint32_t path);
void cupti_pcs_ctx_off(cupti_state *s, cupti_prof_ctx *c, uint64_t scope,
                       uint32_t path);
void cupti_pcs_close(cupti_state *s);

/* source_cupti_launch.c */
void cupti_launch_callback(void *ud, uint32_t domain, uint32_t cbid,
                           const void *cbdata);
/* The launch callbacks on (1) or off (0); 0, or a gpufl_err with why. */
int cupti_launch_enable(cupti_state *s, int on, char *why, size_t whylen);
/* The allocation callbacks (error triggers) on or off; 0 or a gpufl_err. */
int cupti_alloc_enable(cupti_state *s, int on, char *why, size_t whylen);
/* API activity records for the launch CBIDs only, where CUPTI has the
 * per-CBID switch: CUPTI generates correlation ids only when API records
 * are on (docs/cupti-internals.md#launch-correlation).  on = 0 switches
 * them off.  Returns how many CBIDs were switched. */
int cupti_launch_api_records(cupti_state *s, int on);

/* source_cupti.c: tracing on or off in a running session (gpufl ctl PID
 * trace on|off): 0, or a gpufl_err with why (the cupti engine is not on,
 * this CUPTI cannot switch kinds off, the sass engine runs). */
int cupti_trace_set(int on, char *why, size_t whylen);
/* -1: the cupti engine is not on in this session; else 0/1 (tracing). */
int cupti_trace_state(void);
/* Copy the launch slot of corr into *out (and its frames into frames[]);
 * 1 when found, 0 otherwise.  Safe against concurrent writers. */
int cupti_launch_find(cupti_state *s, uint32_t corr, cupti_launch *out,
                      uintptr_t *frames);
/* The calling thread's return addresses, innermost first (frame 0 is the
 * caller): DWARF unwinding until a frame keeps a frame pointer, then the
 * frame-pointer chain, bounded by the thread's stack.  Returns the count. */
int cupti_stack_capture(uintptr_t *out, int max, int dwarf_only);
/* Interned stack id of raw frames (symbolized with dladdr), 0 = none. */
uint32_t cupti_stack_intern(cupti_state *s, const uintptr_t *frames,
                            uint32_t n);

/* source_cupti_decode.c */
void cupti_decode_buffer(cupti_state *s, uint8_t *buf, size_t valid);
/* Read device properties through the driver (never inside a callback). */
int cupti_devices_query(cupti_state *s);

#endif /* GPUFL_CLIENT_CUPTI_INT_H */
