/*
 * cupti_int.h - the state shared by the three files of the CUPTI source:
 * source_cupti.c (loading, lifecycle, activity buffers, the flush thread),
 * source_cupti_launch.c (launch callbacks, the correlation table, CPU
 * stacks) and source_cupti_decode.c (activity records into gpufl events).
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

#include "cupti_abi_int.h"
#include "occupancy.h"
#include "source.h"

#define CUPTI_BUF_SIZE (1u << 20) /* activity buffer handed to CUPTI */
#define CUPTI_MAX_BUFFERS 64      /* cap: 64 MiB of buffers at most */
#define CUPTI_CORR_SLOTS 32768    /* launches remembered for the join */
#define CUPTI_STACK_MAX 64        /* frames captured per launch, cap */
#define CUPTI_STACK_CACHE 4096    /* raw-stack -> interned id cache */
#define CUPTI_FLUSH_MS_DEFAULT 500

/* Settings the CUPTI source reads (resolved by options.c at gpufl_init). */
typedef struct cupti_cfg {
    char lib[4096];       /* GPUFL_CUPTI_LIB; "" = search (§1.2) */
    int stacks;           /* GPUFL_STACKS */
    uint32_t stack_depth; /* GPUFL_STACK_DEPTH, 1..CUPTI_STACK_MAX */
    uint32_t flush_ms;    /* GPUFL_CUPTI_FLUSH_MS */
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

typedef struct cupti_state {
    void *lib, *cuda;
    /* CUPTI */
    gfl_cuptiGetVersion_fn GetVersion;
    gfl_cuptiGetResultString_fn GetResultString;
    gfl_cuptiSubscribe_fn Subscribe;
    gfl_cuptiEnableCallback_fn EnableCallback;
    gfl_cuptiActivityRegisterCallbacks_fn RegisterCallbacks;
    gfl_cuptiActivityEnable_fn Enable;
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
    char broken[SRC_REASON_LEN]; /* why a subscribed CUPTI is unusable */
    cupti_cfg cfg;

    /* activity buffers */
    cupti_buf bufs[CUPTI_MAX_BUFFERS];
    pthread_mutex_t done_lock; /* completed-buffer queue */
    uint8_t *done_buf[CUPTI_MAX_BUFFERS];
    size_t done_valid[CUPTI_MAX_BUFFERS];
    uint32_t n_done;
    _Atomic uint64_t refused; /* request callbacks answered with NULL */

    /* flush thread */
    pthread_t thread;
    int thread_started;
    uint64_t started_ns;  /* CLOCK_MONOTONIC at start() */
    pthread_mutex_t lock; /* thread wake-up and flush handshake */
    pthread_cond_t cond;
    int stop;
    uint64_t flush_req, flush_done;

    /* decoding: only the flush thread decodes */
    cupti_dev devs[SRC_MAX_DEVICES];
    int n_devs;
    src_device devices[SRC_MAX_DEVICES];
    uint32_t ctx_id[64], ctx_dev[64]; /* CONTEXT records: context -> device */
    uint32_t n_ctx;
    uint64_t n_dropped, n_invalid, n_records, n_unmatched;
    gpufl_counter *c_dropped, *c_invalid, *c_refused;
    uint64_t stack_key[CUPTI_STACK_CACHE];
    uint32_t stack_id[CUPTI_STACK_CACHE];
    uintptr_t skip_lo[4], skip_hi[4]; /* our, CUPTI's, the driver's text */
    int n_skip;

    /* launch join table; frames only when stacks are on */
    cupti_launch *launches;
    uintptr_t *frames; /* CUPTI_CORR_SLOTS x cfg.stack_depth */
    _Atomic uint64_t launch_lost;
} cupti_state;

extern cupti_state *cupti_g;

/* source_cupti_launch.c */
void cupti_launch_callback(void *ud, uint32_t domain, uint32_t cbid,
                           const void *cbdata);
int cupti_launch_enable(cupti_state *s, char *why, size_t whylen);
/* API activity records for the launch CBIDs only, where CUPTI has the
 * per-CBID switch: CUPTI generates correlation ids only when API records
 * are on (§3.8).  Returns how many CBIDs were switched on. */
int cupti_launch_api_records(cupti_state *s);
/* Copy the launch slot of corr into *out (and its frames into frames[]);
 * 1 when found, 0 otherwise.  Safe against concurrent writers. */
int cupti_launch_find(cupti_state *s, uint32_t corr, cupti_launch *out,
                      uintptr_t *frames);
/* Interned stack id of raw frames (symbolized with dladdr), 0 = none. */
uint32_t cupti_stack_intern(cupti_state *s, const uintptr_t *frames,
                            uint32_t n);

/* source_cupti_decode.c */
void cupti_decode_buffer(cupti_state *s, uint8_t *buf, size_t valid);
/* Read device properties through the driver (never inside a callback). */
int cupti_devices_query(cupti_state *s);

#endif /* GPUFL_CLIENT_CUPTI_INT_H */
