/*
 * srv_json.h - how the API writes integers (docs/api.md, "Numbers").
 *
 * JavaScript's JSON.parse reads every number as a double, exact only up to
 * 2^53 - 1: a 19-digit nanosecond time loses its last digits.  So the
 * quantities that pass 2^53 in normal use - times in ns since the epoch
 * (and, sharing their unit, every duration and sum of durations in ns),
 * byte counts of copies, allocations and memory, and instruction and
 * sector counts - are strings of decimal digits, always (srv_jw_dec).
 * Every other integer (counts, ids, seqs, indices, launch sizes) is a
 * number (srv_jw_num); one past 2^53 - 1, which only a client sending
 * such values can cause, is written as a decimal string rather than be
 * rounded.  Members copied as they came from an event line keep their
 * JSON, except that an integer past 2^53 - 1 becomes a string
 * (srv_jw_copy).  So no reader using doubles rounds an integer, and a
 * field's type does not depend on its value in normal use.
 */
#ifndef GPUFL_SERVER_SRV_JSON_H
#define GPUFL_SERVER_SRV_JSON_H

#include <stdint.h>

#include "common/jsonl.h"
#include "common/jw.h"

/* The largest magnitude a double holds exactly with all below it. */
#define SRV_JSON_SAFE_MAX ((int64_t)((1ull << 53) - 1))

/* v as a string of decimal digits ("-" first when negative). */
void srv_jw_dec(jw *w, int64_t v);
void srv_jw_udec(jw *w, uint64_t v);
void srv_jw_kv_dec(jw *w, const char *key, int64_t v);
void srv_jw_kv_udec(jw *w, const char *key, uint64_t v);

/* v as a number; beyond +-(2^53 - 1) (the format allows 64 bits where
 * real values stay far smaller) as a decimal string, never rounded. */
void srv_jw_num(jw *w, int64_t v);
void srv_jw_unum(jw *w, uint64_t v);
void srv_jw_kv_num(jw *w, const char *key, int64_t v);
void srv_jw_kv_unum(jw *w, const char *key, uint64_t v);

/* Value token t of d, parsed from text the server validated, copied as
 * it is except that integers beyond +-(2^53 - 1) are written as decimal
 * strings. */
void srv_jw_copy(jw *w, const jsonl_doc *d, uint32_t t);

#endif
