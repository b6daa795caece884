/*
 * store_sql_q_export_int.h - what an export (store_sql_q_export.c) read of
 * a session's range, shared with the file that writes it as a Chrome
 * trace (store_sql_q_export_trace.c).
 */
#ifndef GPUFL_SERVER_STORE_SQL_Q_EXPORT_INT_H
#define GPUFL_SERVER_STORE_SQL_Q_EXPORT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "common/jw.h"
#include "store_sql_q.h"

/* Items of each kind one export holds. */
#define SQ_EXP_KERNELS 20000
#define SQ_EXP_COPIES 20000
#define SQ_EXP_CALLS 40000
#define SQ_EXP_SCOPES 20000
/* API calls gathered before they are sorted to find where to cut: past
 * this many the range is refused even with truncation. */
#define SQ_EXP_CALLS_READ (4 * SQ_EXP_CALLS)
/* Lanes of lanes=, GPU processes named. */
#define SQ_EXP_LANES 256
#define SQ_EXP_DEVS 64
/* The host process; GPU d is process SQ_EXP_PID_HOST + 1 + d. */
#define SQ_EXP_PID_HOST 1

/* A kernel, copy, memset or scope instance as exported. */
typedef struct ex_item {
    int64_t seq, ts, dur, dev, stream, corr, a, b;
    uint32_t tid;
    char *name, *mangled; /* kernels: display and recorded; scopes: name */
    int64_t name_id;      /* a block's kernel: its names looked up after */
    char kind[16];
} ex_item;

typedef struct ex_list {
    ex_item *v;
    size_t n, cap, max;
    int over;    /* more than max in the range */
    int64_t cut; /* then: the time of the first left out */
} ex_list;

typedef struct ex_ctx {
    qctx c;
    uint64_t from, to;
    int64_t lanes[SQ_EXP_LANES];
    int nlanes; /* 0: every lane */
    ex_list k, cp, sc;
    sq_call *calls;
    size_t ncalls, calls_cap;
    int calls_over; /* more than SQ_EXP_CALLS_READ */
    uint64_t flows;
    /* tracks named: host threads, GPU (dev << 32 | stream) */
    int64_t tracks[2 * SQ_EXP_LANES];
    int ntracks;
    int devs_named[SQ_EXP_DEVS];
    char devname[SQ_EXP_DEVS][128];
    char app[256], host[256];
    int64_t pid;
    int simulated;
} ex_ctx;

/* The trace of what x holds before time cut into w (the session sid). */
void sq_ex_write(ex_ctx *x, jw *w, const char *sid, uint64_t cut);

#endif
