/*
 * fuzz_tlpack.c - libFuzzer target for the timeline pack's codec
 * (src/server/tlpack_codec.c), whose decoder reads tlpack rows back from
 * the database (a corrupted one included) for the timeline and the packer.
 *
 * Byte 0 picks the mode, bytes 1..8 the range's b0 (aligned to SQ_TLP_N,
 * as every range is: so b0 + SQ_TLP_N - 1 never overflows):
 *   even: the rest is a pack.  Whatever it holds, decoding it returns an
 *     error or buckets, reading nothing out of bounds.  Oracles for an
 *     accepted pack: at most SQ_TLP_N buckets, b strictly ascending within
 *     [b0, b0 + SQ_TLP_N); re-encoded it is the input byte for byte (a
 *     varint has one spelling, so a pack has one); decoded at another b0
 *     it is the same buckets moved by the difference.
 *   odd: the rest describes buckets (a presence bit per bucket of the
 *     range, then each bucket's columns, 8 bytes each while they last).
 *     Oracles: decode(encode(v)) == v, within SQ_TLP_BYTES_MAX; and
 *     sq_tlb_add of two of them is the same either way round.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_sql_tlpack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "fuzz_tlpack: %s:%d: %s\n", __FILE__, __LINE__,    \
                    #c);                                                       \
            abort();                                                           \
        }                                                                      \
    } while (0)

static sq_tlb v[SQ_TLP_N], w[SQ_TLP_N];
static unsigned char out[SQ_TLP_BYTES_MAX];

static int64_t rd64(const uint8_t *p, size_t len, size_t *i)
{
    uint64_t x = 0;
    for (int k = 0; k < 8 && *i < len; k++)
        x |= (uint64_t)p[(*i)++] << (8 * k);
    return (int64_t)x;
}

static void pack_mode(const uint8_t *p, size_t len, int64_t b0)
{
    size_t n = 0, m = 0, l;
    /* the other range: one further up, or down when b0 is the last */
    int64_t b1 = b0 <= INT64_MAX - 2 * (int64_t)SQ_TLP_N
                     ? b0 + (int64_t)SQ_TLP_N
                     : b0 - (int64_t)SQ_TLP_N;

    if (sq_tlp_decode(p, len, b0, v, &n) != 0)
        return;
    FUZZ_ASSERT(n <= SQ_TLP_N);
    for (size_t i = 0; i < n; i++)
        FUZZ_ASSERT(v[i].b >= b0 && v[i].b - b0 < (int64_t)SQ_TLP_N &&
                    (i == 0 || v[i].b > v[i - 1].b));
    l = sq_tlp_encode(v, n, b0, out);
    FUZZ_ASSERT(l == len && memcmp(out, p, len) == 0);
    FUZZ_ASSERT(sq_tlp_decode(p, len, b1, w, &m) == 0 && m == n);
    for (size_t i = 0; i < n; i++) {
        FUZZ_ASSERT(w[i].b - b1 == v[i].b - b0);
        w[i].b = v[i].b;
    }
    FUZZ_ASSERT(memcmp(v, w, n * sizeof(*v)) == 0);
}

static void buckets_mode(const uint8_t *p, size_t len, int64_t b0)
{
    size_t n = 0, m = 0, i = 0, l;
    const size_t bits = SQ_TLP_N / 8;

    for (unsigned k = 0; k < SQ_TLP_N; k++) {
        sq_tlb *e = &v[n];
        if (k / 8 >= len || !(p[k / 8] >> (k % 8) & 1))
            continue;
        i = i < bits ? bits : i;
        e->b = b0 + k;
        e->n = rd64(p, len, &i);
        e->busy = rd64(p, len, &i);
        e->top_name = rd64(p, len, &i);
        e->top_dur = rd64(p, len, &i);
        n++;
    }
    l = sq_tlp_encode(v, n, b0, out);
    FUZZ_ASSERT(l <= SQ_TLP_BYTES_MAX);
    FUZZ_ASSERT(sq_tlp_decode(out, l, b0, w, &m) == 0 && m == n);
    FUZZ_ASSERT(memcmp(v, w, n * sizeof(*v)) == 0);
    if (n >= 2) {
        sq_tlb a = v[0], b = v[n - 1];
        a.b = b.b = 0;
        sq_tlb ab = a, ba = b;
        sq_tlb_add(&ab, &b);
        sq_tlb_add(&ba, &a);
        FUZZ_ASSERT(memcmp(&ab, &ba, sizeof(ab)) == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t i = 1;
    int64_t b0;

    if (size < 9)
        return 0;
    /* aligned as a range's b0 is (b >> SQ_TLP_SHIFT << SQ_TLP_SHIFT) */
    b0 = (int64_t)((uint64_t)rd64(data, size, &i) & ~(uint64_t)(SQ_TLP_N - 1));
    if (data[0] & 1)
        buckets_mode(data + 9, size - 9, b0);
    else
        pack_mode(data + 9, size - 9, b0);
    return 0;
}
