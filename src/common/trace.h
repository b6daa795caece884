/*
 * trace.h - members of Chrome trace events (the JSON format chrome://tracing
 * and Perfetto's UI open), shared by `gpufl export` (src/report/export.c,
 * which reads log files) and gpufl-server's export route
 * (src/server/store_sql_q_export.c, which reads its database), so both
 * write the same layout: a host process with a track per OS thread, a
 * process per GPU with a track per stream, and flow arrows from launch
 * calls to kernels.
 *
 * Each function writes members into an event object the caller opened on
 * a jw; the caller writes the braces, anything else the event carries
 * ("args") and the separators between events.  Times are microseconds
 * with three decimals (so ns are exact) from a base time.
 */
#ifndef GPUFL_COMMON_TRACE_H
#define GPUFL_COMMON_TRACE_H

#include <stdint.h>

#include "common/jw.h"

/* key: t - base in us, "12.345" ("-12.345" when t is before base). */
void trace_us(jw *w, const char *key, uint64_t base, uint64_t t);
/* "ph", "pid", "tid". */
void trace_ph(jw *w, const char *ph, int pid, uint64_t tid);
/* A complete slice after its "name": "cat", "ph":"X", "pid", "tid",
 * "ts", "dur". */
void trace_slice(jw *w, const char *cat, int pid, uint64_t tid, uint64_t base,
                 uint64_t ts, uint64_t dur);
/* A metadata event: what is "process_name" or "thread_name", name its
 * value. */
void trace_meta(jw *w, const char *what, int pid, uint64_t tid,
                const char *name);
/* Its sort index: what is "process_sort_index" or "thread_sort_index". */
void trace_sort(jw *w, const char *what, int pid, uint64_t tid, int sort);
/* One end of launch arrow id: its start on the calling thread (end 0,
 * "ph":"s") or its end on the kernel's track (end 1, "ph":"f", bound to
 * the enclosing slice). */
void trace_flow(jw *w, int end, uint64_t id, int pid, uint64_t tid,
                uint64_t base, uint64_t ts);

#endif
