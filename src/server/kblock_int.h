/*
 * kblock_int.h - what the kernel block encoder (kblock.c) and decoder
 * (kblock_dec.c) share: the format's constants, its column list and the
 * varint primitives (inline: they are the codec's inner loops).
 */
#ifndef GPUFL_SERVER_KBLOCK_INT_H
#define GPUFL_SERVER_KBLOCK_INT_H

#include "kblock.h"

#include <string.h>
#include <zstd.h>

#define KB_MAGIC0 'G'
#define KB_MAGIC1 'K'
#define KB_MAGIC2 'B'
#define KB_VERSION 1
#define KB_FLAG_ZSTD 1u

/* Column transforms (the mode byte). */
enum {
    KM_CONST = 0,  /* one varint, every value */
    KM_RAW = 1,    /* each value */
    KM_ZIG = 2,    /* each value zigzagged as int64 */
    KM_DELTA = 3,  /* first, then zigzag differences */
    KM_DOD = 4,    /* first, zigzag first difference, then differences of
                     differences */
    KM_SDELTA = 5, /* zigzag difference from the previous value of the
                      same shape (0 before the first); event columns */
    KM_GAP = 6,    /* first, then zigzag differences from a prediction out
                      of columns before it: ts from the previous kernel's
                      end (the stream's idle time), api_off from the end
                      of the previous launch call (the host's gap) */
    KM_N
};

/* Shape columns, then event columns; KC_SHAPE is the first event one. */
enum {
    KC_NAME,
    KC_CFG,
    KC_GX,
    KC_GY,
    KC_GZ,
    KC_BX,
    KC_BY,
    KC_BZ,
    KC_REGS,
    KC_SMEM,
    KC_OCC,
    KC_SHAPE,
    KC_SEQ,
    KC_DUR, /* before ts: KM_GAP reads it */
    KC_TS,
    KC_DEV,
    KC_STREAM,
    KC_CORR,
    KC_SCOPE,
    KC_PATH,
    KC_STACK,
    KC_API_DUR, /* before api_off: its KM_GAP reads it */
    KC_API_OFF,
    KC_FLAGS,
    KC_TID
};
#define KC_NSHAPE KC_SHAPE

/* Where each column's value lives in a kblock_ev (every field 8 bytes);
 * KC_SHAPE has none. */
extern const size_t kb_col_off[KB_NCOLS];

/* Writes the message into why (when given); returns -1. */
int kb_fail(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline uint64_t zz(uint64_t u)
{
    return (u << 1) ^ (0 - (u >> 63));
}

static inline uint64_t unzz(uint64_t z)
{
    return (z >> 1) ^ (0 - (z & 1));
}

static inline size_t vlen(uint64_t v)
{
    /* 1 + (bits - 1) / 7, bits of v | 1; x * 37 >> 8 is x / 7 for x up
     * to 70 (checked for every clz in test_srv_kblock), a multiply where
     * gcc's division by 7 is five instructions: the encoder sizes each
     * value for every mode it weighs */
    return (size_t)((unsigned)(70 - __builtin_clzll(v | 1)) * 37u >> 8);
}

static inline size_t vput(unsigned char *o, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        o[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    o[n++] = (unsigned char)v;
    return n;
}

/* A minimal LEB128 varint from p[*i..n): 0, or -1 when it runs past n, is
 * longer than 64 bits, or has a redundant trailing zero byte (one value,
 * one spelling: what makes the encoder's output canonical). */
static inline int vget(const unsigned char *p, size_t n, size_t *i, uint64_t *v)
{
    uint64_t x = 0;
    /* one byte (most values of a block's columns): no loop */
    if (*i < n && p[*i] < 0x80) {
        *v = p[(*i)++];
        return 0;
    }
    /* ten bytes there: no bound to check per byte (the decoder's
     * inner loop); the same rules */
    if (*i < n && n - *i >= 10) {
        const unsigned char *q = p + *i;
        unsigned k = 0;
        uint64_t b;
        do {
            b = q[k];
            x |= (b & 0x7f) << (7 * k);
            k++;
        } while ((b & 0x80) && k < 10);
        if ((b & 0x80) || (k == 10 && b > 1) || (b == 0 && k > 1))
            return -1;
        *i += k;
        *v = x;
        return 0;
    }
    for (unsigned sh = 0; sh < 70; sh += 7) {
        unsigned char b;
        if (*i >= n)
            return -1;
        b = p[(*i)++];
        if (sh == 63 && b > 1)
            return -1;
        x |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80)) {
            if (b == 0 && sh)
                return -1;
            *v = x;
            return 0;
        }
    }
    return -1;
}

/* A column's value of an event as 64 bits; occupancy's double is
 * byte-swapped so that its zero low mantissa bytes come first and its
 * varint is short (0.5 takes 2 bytes, not 9). */
static inline uint64_t col_get(const kblock_ev *e, int c)
{
    uint64_t v;
    memcpy(&v, (const char *)e + kb_col_off[c], sizeof(v));
    return c == KC_OCC ? __builtin_bswap64(v) : v;
}

static inline void col_set(kblock_ev *e, int c, uint64_t v)
{
    if (c == KC_OCC)
        v = __builtin_bswap64(v);
    memcpy((char *)e + kb_col_off[c], &v, sizeof(v));
}

/* The index of ev[0..n) whose shapes are shape[0..ns), used scount[]
 * times (names sorted by id and merged). */
void kb_index_calc(const kblock_ev *ev, size_t n, const kblock_ev *shape,
                   const uint32_t *scount, size_t ns, kblock_index *idx);

/* KM_GAP's predictions for column c of m events (ref[i] for i >= 1, what
 * v[i] - v[i - 1] is expected to be), or NULL for a column without one;
 * dur, ts, adur: the columns before it, kept by kb_gap_keep. */
const uint64_t *kb_gap_ref(int c, size_t m, const uint64_t *dur,
                           const uint64_t *ts, const uint64_t *adur,
                           uint64_t *ref);
void kb_gap_keep(int c, const uint64_t *v, size_t m, uint64_t *dur,
                 uint64_t *ts, uint64_t *adur);

/* What the store's other codecs (oblock.c) take from this one: a column
 * of m values written in its cheapest plain transform (constant, plain,
 * zigzag, delta, delta of delta: no shapes, no prediction; at most
 * 1 + 10 + 10 m bytes), and read back with every bound checked (cname
 * names it in why); a payload compressed with its checksum (zlevel:
 * zstd's level) and decompressed to exactly rl bytes (what: the codec's
 * name in why).  0, or -1 with why. */
size_t kb_put_col(unsigned char *o, const uint64_t *v, size_t m);
int kb_get_col(const unsigned char *p, size_t n, size_t *i, uint64_t *v,
               size_t m, const char *cname, char *why, size_t whylen);
int kb_zstd(ZSTD_CCtx *z, int zlevel, const unsigned char *src, size_t n,
            unsigned char *dst, size_t cap, size_t *len, char *why,
            size_t whylen);
int kb_unzstd(ZSTD_DCtx *z, const unsigned char *src, size_t sl,
              unsigned char *dst, size_t rl, const char *what, char *why,
              size_t whylen);

#endif
