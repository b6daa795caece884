/*
 * inject_attach.h - what `gpufl attach` (src/cli/cli_attach.c) and
 * libgpufl_inject.so (src/inject/attach.c) share: the entry point the
 * attacher calls inside the target, the settings text it passes, and the
 * state block it reads and writes in the target's memory
 * (docs/recorder.md#gpufl-attach).
 *
 * No file, no environment variable, no socket carries anything between
 * them: the attacher writes the settings on the stopped thread's stack and
 * calls gpufl_attach_start() there by ptrace; afterwards it follows the
 * session through gpufl_attach_blk with process_vm_readv/writev (which
 * need the same permission as ptrace) and through the control socket.
 */
#ifndef GPUFL_INJECT_ATTACH_H
#define GPUFL_INJECT_ATTACH_H

#include <stdint.h>

#define GPUFL_ATTACH_START_SYM "gpufl_attach_start"
#define GPUFL_ATTACH_BLK_SYM "gpufl_attach_blk"
#define GPUFL_ATTACH_MAGIC "gpuflat1"  /* 8 bytes, no NUL in the block */
#define GPUFL_ATTACH_SETTINGS_MAX 2048 /* the settings text, NUL included */

/*
 * The settings, one "key=value" a line (unknown keys are refused):
 *   log_dir=DIR     GPUFL_LOG_DIR (absolute)     engines=LIST  GPUFL_ENGINES
 *   app=NAME        GPUFL_APP                    for_ms=N      end after N ms
 * Anything not given comes from the target's own GPUFL_* environment and
 * the defaults, as for any gpufl_init.
 */

/* gpufl_attach_blk.state */
enum {
    GPUFL_ATTACH_IDLE = 0,     /* never started in this process */
    GPUFL_ATTACH_STARTING = 1, /* the thread is in gpufl_init */
    GPUFL_ATTACH_RUNNING = 2,  /* the session runs */
    GPUFL_ATTACH_FAILED = 3,   /* gpufl_init failed: rc, msg */
    GPUFL_ATTACH_ENDED = 4     /* the session ended (stop, for_ms, or the
                                  session was ended otherwise) */
};

/* The block, exported by libgpufl_inject.so.  Written by the library's
 * attach thread (state last, so that the rest is complete when state
 * changes); `stop` is written by gpufl attach. */
typedef struct gpufl_attach_block {
    char magic[8];
    volatile int32_t state;
    volatile int32_t stop; /* non-zero: end the session now */
    int32_t rc;            /* gpufl_init's return code */
    int32_t gen;           /* sessions started by attach in this process */
    char sid[40];          /* the session id */
    char prefix[512];      /* the session's log prefix (files: .*.log) */
    char msg[512];         /* why it failed */
} gpufl_attach_block;

/* gpufl_attach_start's return codes (besides 0: the thread started) */
#define GPUFL_ATTACH_E_BUSY 1     /* a session started by attach runs */
#define GPUFL_ATTACH_E_SETTINGS 2 /* the settings text is malformed */
#define GPUFL_ATTACH_E_THREAD 3   /* pthread_create failed */

#endif
