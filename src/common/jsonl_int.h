/*
 * jsonl_int.h - what the JSON lines reader's two files share (jsonl.c: the
 * tokenizer; jsonl_get.c: the typed getters): the SWAR word helpers, the
 * key signature and the \u escape's hex digits, all inline so the
 * tokenizer's loops compile as they did in one file.  Private to
 * src/common.
 *
 * What the getters rely on the tokenizer to have proven for every token
 * of a parsed line: a string's escapes are valid (JSONL_F_ESC set when it
 * holds any), a number matches the JSON grammar (JSONL_F_NEG for a
 * leading '-', JSONL_F_REAL for a fraction or exponent, else digits only
 * and no leading zero), and a key's sig is key_sig() of its raw bytes (0
 * when escaped).
 */
#ifndef GPUFL_COMMON_JSONL_INT_H
#define GPUFL_COMMON_JSONL_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "jsonl.h"

/*
 * SWAR: on little-endian GCC/Clang targets the string and digit scans test
 * 8 bytes per step.  Beyond raw speed this makes the loop exit predictable:
 * most keys and numbers end inside their first word, where a byte-by-byte
 * loop would mispredict on every length change.  Elsewhere the byte loops
 * below do the same job.
 */
#if defined(__GNUC__) && defined(__BYTE_ORDER__) &&                            \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define JSONL_SWAR 1
#define JSONL_INLINE static inline __attribute__((always_inline))
#else
#define JSONL_SWAR 0
#define JSONL_INLINE static inline
#endif

#if JSONL_SWAR
#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

static inline uint64_t load8(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* The high bit of each byte of x that would stop the string scan ('"',
 * '\\', < 0x20, >= 0x80).  Borrows can flag bytes above a flagged one, so
 * only the lowest flag is exact: that is the one used.  Below the lowest
 * stop nothing borrows, so there a byte under 0x80 gets its high bit
 * from q - 1 only when it is '"', from b - 1 only when '\\', from x - 0x20
 * only when under 0x20; a byte of 0x80 or more gets it from q - 1 or
 * b - 1 (both clear it only for q == b == 0x80, and q != b).  Three
 * terms and no "& ~q" masks (13 -> 9 operations a word). */
static inline uint64_t swar_str_stop(uint64_t x)
{
    uint64_t q = x ^ (ONES * '"'), b = x ^ (ONES * '\\');
    return ((q - ONES) | (b - ONES) | (x - ONES * 0x20)) & HIGHS;
}

/* The value of 8 ASCII digits (Lemire's "parsing eight digits"): pairs,
 * then quads, then the whole, in three multiplies instead of eight
 * dependent multiply-adds. */
static inline uint64_t swar_eight_digits(uint64_t x)
{
    x -= ONES * '0';
    x = x * 10 + (x >> 8);
    x = (((x & 0x000000FF000000FFull) * (100 + (1000000ull << 32))) +
         (((x >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32)))) >>
        32;
    return x;
}

/* The high bit of each byte of x that is not an ASCII digit; as above,
 * only the lowest flag is exact.  x ^ '0' maps the digits, and only them,
 * to 0..9; adding 0x76 sets the high bit of anything from 10 up. */
static inline uint64_t swar_nondigit(uint64_t x)
{
    uint64_t t = x ^ (ONES * '0');
    return ((t + ONES * 0x76) | t) & HIGHS;
}
#endif

static inline int is_digit(unsigned c)
{
    return c - '0' < 10u;
}

/* A key's signature for jsonl_doc_find(): its length (255 for longer),
 * first and last byte, enough to tell event keys apart without touching
 * the line.  0 is kept for keys that must always be compared in full:
 * those with escapes (and the empty key, harmlessly). */
static inline uint32_t key_sig(const unsigned char *k, size_t len)
{
    if (len == 0)
        return 0;
    return (len < 255 ? (uint32_t)len : 255) | (uint32_t)k[0] << 8 |
           (uint32_t)k[len - 1] << 16;
}

/* Value of 4 hex digits at p, or -1 (also when fewer than 4 bytes are
 * left before end). */
static inline long hex4(const unsigned char *p, const unsigned char *end)
{
    long v = 0;

    if (end - p < 4)
        return -1;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i];
        v <<= 4;
        if (c - '0' < 10u)
            v |= c - '0';
        else if ((c | 0x20) - 'a' < 6u)
            v |= (c | 0x20) - 'a' + 10;
        else
            return -1;
    }
    return v;
}

#endif
