/*
 * num.h - strict decimal numbers for values that arrive as text (URL path
 * segments, query arguments, command-line ids, option values).
 *
 * strtoull() skips leading blanks and takes a sign, so " 1", "+2" and "-1"
 * (as 2^64 - 1) all parse; an id in a URL must be one spelling of one
 * number, or two requests that look different would name the same key.
 * Option values (src/common/opt.c) add a decimal fraction and a unit
 * suffix on top of the same digits, and are scaled exactly, in integers.
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

/* Digits after the point a num_dec keeps: a finer fraction is refused. */
#define NUM_FRAC_MAX 9

/* A non-negative decimal, whole + frac / 10^nfrac, exactly. */
typedef struct num_dec {
    uint64_t whole;
    uint64_t frac;
    unsigned nfrac; /* 0 ... NUM_FRAC_MAX */
} num_dec;

/*
 * Reads the decimal at the start of s: one or more digits, optionally a
 * '.' and one to NUM_FRAC_MAX more digits ("12", "1.5"; not ".5", "1.",
 * "+1", " 1").  On success returns 0, fills *d and points *end just past
 * it (a suffix may follow); otherwise -1 (*d, *end untouched).
 */
int num_dec_parse(const char *s, num_dec *d, const char **end);

/*
 * *out = d * mul / div, exactly: 0, or -1 when that is not a whole number
 * or does not fit 64 bits.  mul >= 1, 1 <= div <= 10^9 (units: a size
 * suffix in bytes, a duration suffix over the stored unit).
 */
int num_dec_scale(const num_dec *d, uint64_t mul, uint64_t div, uint64_t *out);

#endif
