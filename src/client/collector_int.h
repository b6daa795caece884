/*
 * collector_int.h - the collector thread's state, shared by its two files:
 * collector.c (draining the rings, formatting, files, losses, the disk
 * guard, the thread) and recorder.c (ring mode: the window, dumps,
 * triggers, the crash path).  Nothing else includes it.
 *
 * Only the collector thread touches this state, with two exceptions said
 * where they are: collector_crash() (a signal handler, after the collector
 * parked) and collector_exit() (after the thread was joined).
 */
#ifndef GPUFL_CLIENT_COLLECTOR_INT_H
#define GPUFL_CLIENT_COLLECTOR_INT_H

#include <sys/types.h>

#include "client_int.h"
#include "common/jw.h"
#include "writer.h"

enum {
    LOSS_BUFFER_FULL,
    LOSS_DISK_LOW,
    LOSS_DICT_FULL,
    LOSS_TOO_LONG,
    LOSS_SCOPE_DEPTH,
    LOSS_WRITE_ERROR,
    LOSS_REASONS
};

/* What the collector does with a line: write it (file mode, and a dump
 * while it is live) or keep it in the window (ring mode between dumps). */
enum { CS_FILE = 0, CS_RING, CS_LIVE };

typedef struct coll_state {
    wstream w[ST_COUNT];
    int open[ST_COUNT];
    char sid[40];                /* of the files being written */
    char envelope[ST_COUNT][96]; /* {"v":1,"sid":"...","st":"device","seq": */
    size_t envelope_len[ST_COUNT];
    uint64_t lost[ST_COUNT][LOSS_REASONS];    /* since start, for session_end */
    uint64_t pending[ST_COUNT][LOSS_REASONS]; /* not yet in a loss line */
    uint64_t last_loss_ns;
    uint64_t dict_overflow_seen;
    uint64_t lines_lost_seen[ST_COUNT];
    int disk_paused;
    int pause_open[ST_COUNT]; /* a "capture paused" line awaits its end */
    int write_failing;        /* a write failure was logged, not its end */
    uint64_t last_disk_check;
    uint64_t free_bytes;

    /* ring mode (recorder.c) */
    int state;                /* CS_* */
    char *scratch;            /* one line being formatted for the window */
    char *dump_buf[ST_COUNT]; /* the dump writers' buffers, made before a
                                 crash can need them */
    uint64_t dumps;           /* dumps begun */
    uint64_t live_start, live_until; /* gpufl clock */
    char next_sid[40];            /* the next dump's session id, made ahead */
    char prefix[CLIENT_PATH_MAX]; /* of the dump written or last written */
    int held;                     /* window kept after shutdown (exit-error) */
    pid_t tid;                    /* the collector thread */
    /* the crash handshake (collector_crash) */
    _Atomic int crash_req;    /* a handler waits: drain, then park */
    _Atomic int parked;       /* the collector will not touch this again */
    _Atomic int crash_writer; /* the handler writes: do not start work */
    _Atomic int busy;         /* the collector is inside a unit of work */
} coll_state;

extern coll_state C;

/* ---- collector.c, for recorder.c ---- */
typedef void (*coll_body_fn)(jw *j, const void *arg);
/* A line into stream s (written, or kept in the window in CS_RING with
 * the ids it uses): 0, or -1 when it did not fit (counted too_long). */
int coll_emit(int s, uint64_t ts, coll_body_fn body, const void *arg,
              const uint32_t *refs, int nrefs);
/* Before an event line of up to need bytes in a file: room, a session
 * line again after lost writes, the disk guard, rotation.  0 to go on, -1
 * when the line is not written (counted). */
int coll_line_prep(int s, size_t need);
/* The dict line of id and the ones it depends on, unless in this file. */
void coll_dict(int s, uint32_t id);
/* A window line into its file: the envelope, seq, then text. */
void coll_put(int s, const char *text, size_t len);
/* The session line of the current file of s. */
void coll_header(int s);
/* The envelopes of the files of session sid (no snprintf: crashes). */
void coll_envelopes(const char *sid);
void coll_flush_files(void);
void coll_flush_losses(int force, int ending);
/* Losses, session_end lines with reason, close: the end of the files. */
void coll_end_files(const char *reason);
void coll_reset_losses(void);
/* Drain the rings: a batch per ring (fairness), or full: up to what
 * each held when the pass began. */
uint64_t coll_drain_all(int full);

/* ---- recorder.c, for collector.c ---- */
/* Ring mode at collector_start: the window, the dump buffers, the
 * triggers.  0 or a gpufl_err (client_set_error said why). */
int rec_start(void);
/* Ring mode at collector_stop (thread joined, rings drained): pending
 * triggers, the end of a live dump; the window is kept when exit-error is
 * armed, else released. */
void rec_stop(void);
/* Release what rec_start made (and a window kept for exit-error). */
void rec_release(void);
/* A record in CS_RING: its line into the window. */
void rec_keep(rec *r, int s);
/* A scope_end in ring mode: the scope= triggers. */
void rec_scope_end(const rec *r);
/* Once per collector loop in ring mode: triggers, the end of a live
 * part, the window's age bound.  Returns how long the collector may
 * sleep (ms) before it must look again. */
uint32_t rec_poll(uint32_t sleep_ms);
/* File mode's half of a crash (collector_crash): when a fatal signal
 * asked for it, drain every ring, end the files ("crash") and park for
 * good.  Called by the collector between two units of work. */
void rec_file_crash_poll(void);
/* The crash handshake, per unit of collector work: 0 to go on; parks
 * the thread for good when a crash handler writes. */
void rec_work_begin(void);
void rec_work_end(void);

#endif
