/*
 * trace.c - members of Chrome trace events (trace.h).
 */
#include "common/trace.h"

#include <stdio.h>

void trace_us(jw *w, const char *key, uint64_t base, uint64_t t)
{
    char b[48];
    int neg = t < base;
    uint64_t d = neg ? base - t : t - base;
    /* integer arithmetic: a double would round ns past 2^53 */
    int n = snprintf(b, sizeof b, "%s%llu.%03llu", neg ? "-" : "",
                     (unsigned long long)(d / 1000),
                     (unsigned long long)(d % 1000));
    jw_key(w, key);
    jw_raw(w, b, (size_t)n);
}

void trace_ph(jw *w, const char *ph, int pid, uint64_t tid)
{
    jw_kv_str(w, "ph", ph);
    jw_kv_u64(w, "pid", (uint64_t)pid);
    jw_kv_u64(w, "tid", tid);
}

void trace_slice(jw *w, const char *cat, int pid, uint64_t tid, uint64_t base,
                 uint64_t ts, uint64_t dur)
{
    jw_kv_str(w, "cat", cat);
    trace_ph(w, "X", pid, tid);
    trace_us(w, "ts", base, ts);
    trace_us(w, "dur", 0, dur);
}

void trace_meta(jw *w, const char *what, int pid, uint64_t tid,
                const char *name)
{
    jw_kv_str(w, "name", what);
    trace_ph(w, "M", pid, tid);
    jw_key(w, "args");
    jw_obj_begin(w);
    jw_kv_str(w, "name", name);
    jw_obj_end(w);
}

void trace_sort(jw *w, const char *what, int pid, uint64_t tid, int sort)
{
    jw_kv_str(w, "name", what);
    trace_ph(w, "M", pid, tid);
    jw_key(w, "args");
    jw_obj_begin(w);
    jw_kv_u64(w, "sort_index", (uint64_t)sort);
    jw_obj_end(w);
}

void trace_flow(jw *w, int end, uint64_t id, int pid, uint64_t tid,
                uint64_t base, uint64_t ts)
{
    jw_kv_str(w, "name", "launch");
    jw_kv_str(w, "cat", "launch");
    trace_ph(w, end ? "f" : "s", pid, tid);
    if (end)
        jw_kv_str(w, "bp", "e");
    jw_kv_u64(w, "id", id);
    trace_us(w, "ts", base, ts);
}
