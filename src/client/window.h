/*
 * window.h - the flight recorder's in-memory window (ring mode,
 * docs/recorder.md): the formatted lines of the three streams, oldest
 * first, bounded in bytes and optionally in age.
 *
 * A line is kept without its envelope's identity (sid, stream, seq): the
 * text from ",\"ts\":" to the newline, and the dictionary ids it uses, so a
 * dump can give it the dump's session id and a sequence number contiguous
 * with the lines around it, and write the dict lines it needs first.
 *
 * One FIFO in one mapping of `cap` bytes, shared by the streams: when a
 * new line does not fit, the oldest lines go, whatever their stream, and
 * are counted.  Pages are touched as the FIFO first grows, so a window
 * that never fills uses what it holds.  Used by the collector thread;
 * read (without changes) by collector_crash() while the collector is
 * parked, so every change is committed only after it is complete.
 */
#ifndef GPUFL_CLIENT_WINDOW_H
#define GPUFL_CLIENT_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "ring.h"

/* The smallest window (a line can be 256 KiB) and the largest. */
#define WINDOW_MIN_BYTES (1ull << 20)
#define WINDOW_MAX_BYTES (1ull << 40)
/* Memory cap of a window given only as a duration. */
#define WINDOW_DEFAULT_BYTES (256ull << 20)
#define WINDOW_MAX_REFS 8 /* dictionary ids per line (fmt_refs) */

typedef struct win_entry {
    int stream;
    uint64_t t; /* when it entered the window (gpufl clock) */
    int nrefs;
    const uint32_t *refs;
    const char *text; /* ",\"ts\":..." through "\n" */
    size_t len;
} win_entry;

typedef struct win_stats {
    uint64_t cap, used; /* bytes of the mapping / held (with headers) */
    uint64_t age_ns;    /* 0: bounded in bytes only */
    uint64_t oldest;    /* t of the oldest line held, 0 = none */
    uint64_t lines[ST_COUNT], bytes[ST_COUNT]; /* held, text bytes */
    /* since the window started: lines that left it for room (the window
     * then covers less than age_ns) and for age */
    uint64_t evicted[ST_COUNT], evicted_bytes[ST_COUNT];
    uint64_t aged[ST_COUNT];
    uint64_t refused; /* lines bigger than the whole window */
} win_stats;

/* Map the window: cap bytes (WINDOW_MIN_BYTES..WINDOW_MAX_BYTES), lines
 * older than age_ns leave it (0 = no age bound).  0 or GPUFL_ENOMEM. */
int window_open(uint64_t cap, uint64_t age_ns);
/* Unmap; safe when not open. */
void window_close(void);
int window_is_open(void);
/* Keep one line (copied), making room by dropping the oldest.  0, or
 * GPUFL_ETOOBIG when it cannot fit even in an empty window (counted). */
int window_append(int stream, uint64_t t, const uint32_t *refs, int nrefs,
                  const char *text, size_t len);
/* Drop the lines that entered before now - age_ns. */
void window_expire(uint64_t now);
/* The oldest line's position; then window_next() gives the line at *pos
 * and moves it on: 1, or 0 at the end.  No change to the window. */
uint64_t window_first(void);
int window_next(uint64_t *pos, win_entry *e);
/* Empty the window and restart its counts (after a dump). */
void window_reset(void);
void window_stats(win_stats *out);

#endif
