/*
 * format.h - records to event lines: the one place that knows the JSON
 * field names of docs/events.md on the writing side.
 *
 * The collector writes the envelope ({"v","sid","st","seq","ts") itself;
 * these functions add "type" and the event's own fields, and close the
 * object.  All run on the collector thread.
 */
#ifndef GPUFL_CLIENT_FORMAT_H
#define GPUFL_CLIENT_FORMAT_H

#include "client_int.h"
#include "intern.h"
#include "window.h"

/* Ids a record refers to, in the order their dict lines must be written;
 * returns the count (<= 8). */
int fmt_refs(const rec *r, uint32_t *ids);

/* The event fields of a structured record. */
void fmt_record(jw *j, const rec *r);
void fmt_dict(jw *j, const intern_entry *e);
void fmt_session(jw *j, uint32_t file_index);
void fmt_loss(jw *j, const char *reason, uint64_t count, uint64_t total,
              const char *detail);
void fmt_session_end(jw *j, const char *reason, uint64_t lines, uint64_t lost,
                     uint32_t rotations);

/* A trigger line (docs/events.md#trigger): what fired, and for the first
 * one of a dump, the window of its stream that follows. */
typedef struct fmt_trg {
    const char *name, *detail;
    uint64_t repeats;
    uint64_t dump;        /* the dump's number in this recorder */
    uint64_t live_ms;     /* how long the dump stays live from here */
    const win_stats *win; /* NULL after the first trigger of a dump */
    int stream;
} fmt_trg;
void fmt_trigger(jw *j, const fmt_trg *t);

/* Wire names. */
const char *fmt_stream_name(int stream);
const char *fmt_copy_kind(uint32_t kind);
const char *fmt_sync_kind(uint32_t kind);
const char *fmt_mem_kind(uint32_t kind);
const char *fmt_limiters(uint32_t limiters);

#endif
