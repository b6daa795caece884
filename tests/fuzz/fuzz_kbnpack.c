/*
 * fuzz_kbnpack.c - libFuzzer target for the kernel block names' pack
 * codec (src/server/kbnpack_codec.c), whose decoder reads kbnpack and
 * kbndir rows back from the database (a corrupted one included) for the
 * name filters, the packer and a merge's unpack.
 *
 * Byte 0 picks the mode (bit 0: a pack, or a description of entries) and
 * the kind (bit 1: a name's pack, or the range's directory); bytes 1..8
 * the range's r0 (aligned to SQ_KBNP_SPAN, as every range is).
 *   a pack: the rest is one.  Whatever it holds, decoding it returns an
 *     error or entries, reading nothing out of bounds.  Oracles for an
 *     accepted pack: lo strictly ascending within [r0, r0 + SQ_KBNP_SPAN),
 *     the other kind's fields 0; with room for one entry fewer it is
 *     refused; re-encoded it is the input byte for byte (a varint has one
 *     spelling, so a pack has one) within n * SQ_KBNP_ENTRY_MAX; decoded
 *     at another r0 it is the same entries, lo (and a directory's hi)
 *     moved by the difference.
 *   entries: the rest describes entries (each a step of lo, 3 bytes, then
 *     its three fields, 8 bytes each while they last).  Oracles:
 *     decode(encode(v)) == v within n * SQ_KBNP_ENTRY_MAX, and the
 *     encoding re-encodes to itself.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kbnpack_codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "fuzz_kbnpack: %s:%d: %s\n", __FILE__, __LINE__,   \
                    #c);                                                       \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* ~12 MB in all, static: a pack's worth of entries at most */
static sq_kbne v[SQ_KBNP_MAX], w[SQ_KBNP_MAX];
static unsigned char out[SQ_KBNP_MAX * SQ_KBNP_ENTRY_MAX],
    out2[SQ_KBNP_MAX * SQ_KBNP_ENTRY_MAX];

static uint64_t rdn(const uint8_t *p, size_t len, size_t *i, int bytes)
{
    uint64_t x = 0;
    for (int k = 0; k < bytes && *i < len; k++)
        x |= (uint64_t)p[(*i)++] << (8 * k);
    return x;
}

/* The fields the kind keeps (the decoder leaves the others 0). */
static void kind_fields(int dir, sq_kbne *e, int64_t a, int64_t b, int64_t c)
{
    if (dir) {
        e->hi = a;
        e->t_lo = b;
        e->t_hi = c;
    } else {
        e->n = a;
        e->dmin = b;
        e->dmax = c;
    }
}

static void pack_mode(int dir, const uint8_t *p, size_t len, int64_t r0)
{
    size_t n = 0, m = 0, l;
    /* the other range: one further up, wrapping as the codec's uint64
     * arithmetic does */
    uint64_t step = (uint64_t)SQ_KBNP_SPAN;
    int64_t r1 = (int64_t)((uint64_t)r0 + step);

    if (sq_kbnp_decode(dir, p, len, r0, v, SQ_KBNP_MAX, &n) != 0)
        return;
    FUZZ_ASSERT(n <= SQ_KBNP_MAX);
    for (size_t i = 0; i < n; i++) {
        sq_kbne z = v[i];
        FUZZ_ASSERT((uint64_t)v[i].lo - (uint64_t)r0 < step &&
                    (i == 0 || (uint64_t)v[i].lo - (uint64_t)r0 >
                                   (uint64_t)v[i - 1].lo - (uint64_t)r0));
        /* the other kind's fields 0 */
        z.lo = 0;
        kind_fields(dir, &z, 0, 0, 0);
        FUZZ_ASSERT(!z.lo && !z.hi && !z.t_lo && !z.t_hi && !z.n && !z.dmin &&
                    !z.dmax);
    }
    if (n > 0)
        FUZZ_ASSERT(sq_kbnp_decode(dir, p, len, r0, w, n - 1, &m) != 0);
    l = sq_kbnp_encode(dir, v, n, r0, out);
    FUZZ_ASSERT(l <= n * SQ_KBNP_ENTRY_MAX);
    FUZZ_ASSERT(l == len && memcmp(out, p, len) == 0);
    FUZZ_ASSERT(sq_kbnp_decode(dir, p, len, r1, w, SQ_KBNP_MAX, &m) == 0 &&
                m == n);
    for (size_t i = 0; i < n; i++) {
        FUZZ_ASSERT((uint64_t)w[i].lo - (uint64_t)v[i].lo == step);
        w[i].lo = v[i].lo;
        if (dir) {
            FUZZ_ASSERT((uint64_t)w[i].hi - (uint64_t)v[i].hi == step);
            w[i].hi = v[i].hi;
        }
    }
    FUZZ_ASSERT(memcmp(v, w, n * sizeof(*v)) == 0);
}

static void entries_mode(int dir, const uint8_t *p, size_t len, int64_t r0)
{
    size_t n = 0, m = 0, i = 0, l, l2;
    uint64_t off = 0; /* lo - r0 */

    while (i < len && n < SQ_KBNP_MAX) {
        /* a step within the range: the first may be 0, the others not */
        uint64_t d = rdn(p, len, &i, 3) & (uint64_t)(SQ_KBNP_SPAN - 1);
        int64_t a, b, c;
        if (n && !d)
            d = 1;
        if (off + d >= (uint64_t)SQ_KBNP_SPAN)
            break;
        off += d;
        a = (int64_t)rdn(p, len, &i, 8);
        b = (int64_t)rdn(p, len, &i, 8);
        c = (int64_t)rdn(p, len, &i, 8);
        v[n] = (sq_kbne){ .lo = (int64_t)((uint64_t)r0 + off) };
        kind_fields(dir, &v[n], a, b, c);
        n++;
    }
    l = sq_kbnp_encode(dir, v, n, r0, out);
    FUZZ_ASSERT(l <= n * SQ_KBNP_ENTRY_MAX);
    FUZZ_ASSERT(sq_kbnp_decode(dir, out, l, r0, w, SQ_KBNP_MAX, &m) == 0 &&
                m == n);
    FUZZ_ASSERT(memcmp(v, w, n * sizeof(*v)) == 0);
    /* encoding is a function of the entries: the decoded ones give the
     * same bytes */
    l2 = sq_kbnp_encode(dir, w, m, r0, out2);
    FUZZ_ASSERT(l2 == l && memcmp(out, out2, l) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t i = 1;
    int64_t r0;
    int dir;

    if (size < 9)
        return 0;
    /* aligned as a range's r0 is (seq_lo >> SQ_KBNP_SHIFT << SHIFT) */
    r0 = (int64_t)(rdn(data, size, &i, 8) & ~(uint64_t)(SQ_KBNP_SPAN - 1));
    dir = data[0] >> 1 & 1;
    if (data[0] & 1)
        entries_mode(dir, data + 9, size - 9, r0);
    else
        pack_mode(dir, data + 9, size - 9, r0);
    return 0;
}
