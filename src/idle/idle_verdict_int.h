/*
 * idle_verdict_int.h - what the two halves of the verdict engine share
 * (idle_verdict.c: GPUs; idle_verdict_sess.c: sessions): the reasons a
 * verdict gives and how they word a duration.  Private to src/idle.
 */
#ifndef GPUFL_IDLE_VERDICT_INT_H
#define GPUFL_IDLE_VERDICT_INT_H

#include <stddef.h>

#include "idle.h"

/* Appends a reason to r[*n] (at most IDLE_MAX_REASONS; one longer than
 * IDLE_REASON_LEN - 1 is cut). */
__attribute__((format(printf, 3, 4))) void
idle_reason_add(char (*r)[IDLE_REASON_LEN], int *n, const char *fmt, ...);
/* s seconds in words: "30 s", "45 min", "2.0 h"; buf returned. */
const char *idle_dur_text(char *buf, size_t cap, double s);

#endif
