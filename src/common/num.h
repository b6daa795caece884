/*
 * num.h - strict decimal numbers for identifiers that arrive as text (URL
 * path segments, query arguments, command-line ids).
 *
 * strtoull() skips leading blanks and takes a sign, so " 1", "+2" and "-1"
 * (as 2^64 - 1) all parse; an id in a URL must be one spelling of one
 * number, or two requests that look different would name the same key.
 */
#ifndef GPUFL_COMMON_NUM_H
#define GPUFL_COMMON_NUM_H

#include <stdint.h>

/* s is one or more ASCII digits and nothing else (NUL-terminated), at most
 * 20 of them, and the value fits 64 bits: 0 and *out set.  Otherwise -1,
 * *out untouched.  Leading zeros are accepted ("007" is 7). */
int num_u64(const char *s, uint64_t *out);

/* As num_u64, for a value that must also fit int64_t. */
int num_i64(const char *s, int64_t *out);

#endif
