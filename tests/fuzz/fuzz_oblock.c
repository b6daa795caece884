/*
 * fuzz_oblock.c - libFuzzer target for the op block codec
 * (src/server/oblock.c), whose decoder reads blocks back from the
 * database.
 *
 * The first byte picks the mode:
 *   even: the rest is a block.  Whatever it holds, decoding it returns an
 *     error (saying why) or ops, reading nothing out of bounds.  For an
 *     accepted block: its index read alone agrees, and decode(encode(ops))
 *     == ops with encode deterministic.
 *   odd: the rest describes ops (each field from a byte: a small value,
 *     an extreme, or a step from the previous op's) and kinds.  Oracles:
 *     decode(encode(ops)) == ops, and the block with one byte changed (at
 *     a place the input picks) never decodes to other ops.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oblock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "fuzz_oblock: %s:%d: %s\n", __FILE__, __LINE__,    \
                    #c);                                                       \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* Ops the odd mode builds at most (inputs stay small and fast). */
#define FO_MAX_EV 256
/* Fields of an op the odd mode fills from bytes: seq .. tid. */
#define FO_NF 15

static oblock_enc *enc;
static oblock_dec *dec;
static oblock_ev *ev, *got, *got2;
static unsigned char *b1, *b2;

static int setup(void)
{
    if (enc)
        return 0;
    enc = oblock_enc_new();
    dec = oblock_dec_new();
    ev = calloc(OB_MAX_EVENTS, sizeof(*ev));
    got = calloc(OB_MAX_EVENTS, sizeof(*got));
    got2 = calloc(OB_MAX_EVENTS, sizeof(*got2));
    b1 = malloc(OB_BLOCK_MAX);
    b2 = malloc(OB_BLOCK_MAX);
    return enc && dec && ev && got && got2 && b1 && b2 ? 0 : -1;
}

static uint64_t *field(oblock_ev *e, int f)
{
    uint64_t *p[FO_NF] = { &e->seq,   &e->type,  &e->ts,
                           &e->dur,   &e->dev,   &e->stream,
                           &e->corr,  &e->bytes, &e->scope,
                           &e->path,  &e->stack, &e->api_dur,
                           &e->flags, &e->tid,   (uint64_t *)&e->api_off };
    return p[f];
}

static int same(const oblock_ev *a, const oblock_ev *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (int f = 0; f < FO_NF; f++)
            if (*field((oblock_ev *)&a[i], f) != *field((oblock_ev *)&b[i], f))
                return 0;
        if (a[i].kind_len != b[i].kind_len ||
            (a[i].kind_len > 0 &&
             memcmp(a[i].kind, b[i].kind, (size_t)a[i].kind_len)))
            return 0;
    }
    return 1;
}

static void round_trip(const oblock_ev *e, size_t n, size_t *l1)
{
    size_t m, l2;
    char why[256];

    FUZZ_ASSERT(oblock_encode(enc, e, n, 1, b1, OB_BLOCK_MAX, l1, why,
                              sizeof(why)) == 0);
    FUZZ_ASSERT(oblock_decode(dec, b1, *l1, got2, OB_MAX_EVENTS, &m, why,
                              sizeof(why)) == 0);
    FUZZ_ASSERT(m == n && same(e, got2, n));
    FUZZ_ASSERT(oblock_encode(enc, got2, m, 1, b2, OB_BLOCK_MAX, &l2, why,
                              sizeof(why)) == 0);
    FUZZ_ASSERT(l2 == *l1 && memcmp(b1, b2, l2) == 0);
}

static void block_mode(const uint8_t *p, size_t len)
{
    oblock_index idx;
    size_t n, l1;
    char why[256];

    why[0] = '\0';
    if (oblock_decode(dec, p, len, got, OB_MAX_EVENTS, &n, why, sizeof(why))) {
        FUZZ_ASSERT(why[0] != '\0');
        return;
    }
    FUZZ_ASSERT(n >= 1 && n <= OB_MAX_EVENTS);
    FUZZ_ASSERT(oblock_index_read(p, len, &idx, why, sizeof(why)) == 0);
    FUZZ_ASSERT(idx.n == n);
    round_trip(got, n, &l1);
}

static void events_mode(const uint8_t *p, size_t len)
{
    static const char *const kinds[] = { "HtoD", "DtoH", "", "device",
                                         "0123456789abcdef0123456789abcdef" };
    size_t n = 0, at = 0, l1, m;
    char why[256];

    while (n < FO_MAX_EV && at + 2 <= len) {
        oblock_ev *e = &ev[n];
        unsigned k = p[at++];
        for (int f = 0; f < FO_NF; f++) {
            uint64_t prev = n ? *field(&ev[n - 1], f) : 0;
            unsigned b = at < len ? p[at++] : 0;
            switch (b >> 6) {
            case 0: *field(e, f) = b & 63; break;
            case 1: *field(e, f) = prev + (b & 63); break;
            case 2: *field(e, f) = prev - (b & 63); break;
            default:
                *field(e, f) =
                    (uint64_t)0 - (b & 63) - (b & 1 ? 0 : (1ull << 63));
            }
        }
        e->kind_len = k % 6 == 5 ? -1 : (int)strlen(kinds[k % 6 % 5]);
        if (e->kind_len >= 0)
            memcpy(e->kind, kinds[k % 6 % 5], (size_t)e->kind_len + 1);
        n++;
    }
    if (!n)
        return;
    round_trip(ev, n, &l1);
    /* one byte changed: an error or the very same ops */
    {
        size_t pos = (p[0] * 131u + len) % l1;
        b1[pos] ^= (unsigned char)(1u << (p[len - 1] & 7));
        if (oblock_decode(dec, b1, l1, got, OB_MAX_EVENTS, &m, why,
                          sizeof(why)) == 0)
            FUZZ_ASSERT(m == n && same(ev, got, n));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || setup())
        return 0;
    if (data[0] & 1)
        events_mode(data + 1, size - 1);
    else
        block_mode(data + 1, size - 1);
    return 0;
}
