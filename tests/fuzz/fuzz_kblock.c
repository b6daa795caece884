/*
 * fuzz_kblock.c - libFuzzer target for the kernel block codec
 * (src/server/kblock.c), whose decoder will read blocks back from the
 * database and from cold storage.
 *
 * The first byte picks the mode:
 *   even: the rest is a block.  Whatever it holds, decoding it returns an
 *     error or events, reading nothing out of bounds.  Oracles for an
 *     accepted block b: its index (read alone) is the decoder's; every
 *     event is found again by seq; e = decode(b) re-encodes to b2 with
 *     decode(b2) == e and encode(decode(b2)) == b2 byte for byte.
 *     (b2 == b itself is not required: a zstd frame, or a column, may
 *     be spelled several ways that all decode to e; the encoder's own
 *     output is the canonical spelling.)  The page's two-step decode
 *     (kblock_decode_cols of a few columns, then kblock_decode_rows of
 *     rows the first byte's other bits choose) runs on the bytes first,
 *     whatever they are; for an accepted block its rows are the full
 *     decode's, with every column and with a few.
 *   odd: the rest describes events (a few bytes per field: small values,
 *     extremes, or steps from the previous event's value) and the
 *     encoder's options.  Oracles: decode(encode(events)) == events,
 *     encoding is deterministic, and the block with one byte changed (at
 *     a place the input picks) never decodes to other events.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kblock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "fuzz_kblock: %s:%d: %s\n", __FILE__, __LINE__,    \
                    #c);                                                       \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* Events the odd mode builds at most (inputs stay small and fast). */
#define FK_MAX_EV 512

static kblock_enc *enc;
static kblock_dec *dec;
static kblock_ev *ev, *got, *got2, *part;
static unsigned char *b1, *b2;
static kblock_index *idx;
static uint32_t *rows;

static int setup(void)
{
    if (enc)
        return 0;
    enc = kblock_enc_new();
    dec = kblock_dec_new();
    ev = calloc(KB_MAX_EVENTS, sizeof(*ev));
    got = calloc(KB_MAX_EVENTS, sizeof(*got));
    got2 = calloc(KB_MAX_EVENTS, sizeof(*got2));
    b1 = malloc(KB_BLOCK_MAX);
    b2 = malloc(KB_BLOCK_MAX);
    idx = malloc(sizeof(*idx));
    part = calloc(KB_MAX_EVENTS, sizeof(*part));
    rows = malloc(KB_MAX_EVENTS * sizeof(*rows));
    return enc && dec && ev && got && got2 && b1 && b2 && idx && part && rows
               ? 0
               : -1;
}

/* The round trips from decoded events got[0..n). */
static void check_events(size_t n, unsigned opt)
{
    size_t l1, l2, m;
    char why[256];

    FUZZ_ASSERT(kblock_encode(enc, got, n, 1, opt, b1, KB_BLOCK_MAX, &l1, why,
                              sizeof(why)) == 0);
    FUZZ_ASSERT(kblock_decode(dec, b1, l1, got2, KB_MAX_EVENTS, &m, why,
                              sizeof(why)) == 0);
    FUZZ_ASSERT(m == n && memcmp(got, got2, n * sizeof(*got)) == 0);
    FUZZ_ASSERT(kblock_encode(enc, got2, m, 1, opt, b2, KB_BLOCK_MAX, &l2, why,
                              sizeof(why)) == 0);
    FUZZ_ASSERT(l1 == l2 && memcmp(b1, b2, l1) == 0);
}

/*
 * Rows of m for the second step, ascending, chosen by sel (the first
 * byte's bits above the mode) and len: all of them, a page's run of 101
 * from anywhere (the block's end included), every s-th, or the last.
 * Their count.
 */
static size_t pick_rows(size_t m, unsigned sel, size_t len)
{
    size_t k = 0, from = (len * 31 + sel) % m, s = 1 + (sel >> 2) % 29;

    switch (sel & 3) {
    case 0:
        for (size_t j = 0; j < m; j++)
            rows[k++] = (uint32_t)j;
        break;
    case 1:
        for (size_t j = from; j < m && k < 101; j++)
            rows[k++] = (uint32_t)j;
        break;
    case 2:
        for (size_t j = from % s; j < m; j += s)
            rows[k++] = (uint32_t)j;
        break;
    default: rows[k++] = (uint32_t)(m - 1);
    }
    return k;
}

/*
 * The page's two steps on p: cols1 of every event, then cols2 of the
 * rows pick_rows chooses into part[0..k), filled before with a pattern
 * (full NULL) or with full[rows[j]].  Returns -1 when the first step
 * refused p, else the second's result, with *k.  On any bytes, an error
 * says why.
 */
static int two_step(const uint8_t *p, size_t len, unsigned cols1,
                    unsigned cols2, unsigned sel, const kblock_ev *full,
                    size_t *k)
{
    size_t m = 0;
    char why[256];

    why[0] = '\0';
    *k = 0;
    if (kblock_decode_cols(dec, p, len, cols1, got2, KB_MAX_EVENTS, &m, why,
                           sizeof(why)) != 0) {
        FUZZ_ASSERT(why[0] != '\0');
        return -1;
    }
    FUZZ_ASSERT(m >= 1 && m <= KB_MAX_EVENTS);
    *k = pick_rows(m, sel, len);
    for (size_t j = 0; j < *k; j++)
        if (full)
            part[j] = full[rows[j]];
        else
            memset(&part[j], 0xa5, sizeof(*part));
    if (kblock_decode_rows(dec, cols2, rows, *k, part, why, sizeof(why)) != 0) {
        FUZZ_ASSERT(why[0] != '\0');
        return 1;
    }
    return 0;
}

static void block_mode(const uint8_t *p, size_t len, unsigned sel)
{
    size_t n, pos, nr;
    char why[256];
    const unsigned page = KB_C_TS | KB_C_SEQ;
    int r;

    /* the page's path on the bytes as they are (the first step checks no
     * index, so it accepts more than the full decode): every column of
     * the rows into a pattern, compared below when the block is valid */
    r = two_step(p, len, page, KB_C_ALL, sel, NULL, &nr);
    if (kblock_decode(dec, p, len, got, KB_MAX_EVENTS, &n, why, sizeof(why)) !=
        0) {
        FUZZ_ASSERT(why[0] != '\0');
        return;
    }
    /* a valid block: both steps took it, and the rows are the decode's */
    FUZZ_ASSERT(r == 0 && nr >= 1);
    for (size_t j = 0; j < nr; j++)
        FUZZ_ASSERT(rows[j] < n &&
                    memcmp(&part[j], &got[rows[j]], sizeof(*part)) == 0);
    /* a few columns of the rows, over what the full decode gave them:
     * the columns asked for equal, the others untouched */
    {
        unsigned c = ((unsigned)(len * 2246822519u) ^ sel << 9) & KB_C_ALL;
        FUZZ_ASSERT(two_step(p, len, page, c, sel, got, &nr) == 0);
        for (size_t j = 0; j < nr; j++)
            FUZZ_ASSERT(memcmp(&part[j], &got[rows[j]], sizeof(*part)) == 0);
    }
    FUZZ_ASSERT(n >= 1 && n <= KB_MAX_EVENTS);
    FUZZ_ASSERT(kblock_index_read(p, len, idx, why, sizeof(why)) == 0);
    FUZZ_ASSERT(idx->n == n);
    for (size_t k = 0; k < n && k < 64; k++) {
        FUZZ_ASSERT(kblock_seek_seq(dec, p, len, got[k].seq, &pos, why,
                                    sizeof(why)) == 0);
        FUZZ_ASSERT(pos != KB_NOTFOUND && pos <= k &&
                    got[pos].seq == got[k].seq);
    }
    /* a block that decodes whole decodes in part to the same values:
     * out pre-filled with the whole decode must come back unchanged (the
     * columns asked for equal, the others untouched) */
    {
        unsigned masks[2] = { KB_C_TS | KB_C_DUR | KB_C_NAME | KB_C_DEV |
                                  KB_C_STREAM,
                              (unsigned)(len * 2654435761u) ^ p[len / 2] };
        for (int k = 0; k < 2; k++) {
            size_t m = 0;
            unsigned c = masks[k] & KB_C_ALL;
            if (!c)
                continue;
            memcpy(got2, got, n * sizeof(*got));
            FUZZ_ASSERT(kblock_decode_cols(dec, p, len, c, got2, KB_MAX_EVENTS,
                                           &m, why, sizeof(why)) == 0);
            FUZZ_ASSERT(m == n && memcmp(got, got2, n * sizeof(*got)) == 0);
        }
    }
    check_events(n, KB_OPT_DEFAULT);
    check_events(n, KB_OPT_NOZSTD);
}

/* Input bytes as values: see the file comment. */
typedef struct rd {
    const uint8_t *p;
    size_t n, i;
} rd;

static uint64_t next(rd *r, uint64_t prev)
{
    uint8_t t;
    uint64_t v = 0;
    if (r->i >= r->n)
        return prev;
    t = r->p[r->i++];
    switch (t & 7) {
    case 0: return prev;
    case 1: return t >> 3;
    case 2: return UINT64_MAX - (t >> 3);
    case 3:
        for (int k = 0; k < 8 && r->i < r->n; k++)
            v |= (uint64_t)r->p[r->i++] << (8 * k);
        return v;
    case 4: return prev + (t >> 3);
    case 5: return prev - (t >> 3);
    case 6: return (uint64_t)INT64_MAX - (t >> 3);
    default: return (uint64_t)INT64_MIN + (t >> 3);
    }
}

static void events_mode(const uint8_t *p, size_t len)
{
    rd r = { p, len, 0 };
    size_t n = 0, l1, m;
    unsigned opt;
    char why[256];

    if (len < 3)
        return;
    opt = p[0] & 15;
    r.i = 1;
    memset(ev, 0, sizeof(*ev));
    while (r.i < r.n && n < FK_MAX_EV) {
        kblock_ev *e = &ev[n];
        uint64_t *f = (uint64_t *)(void *)e;
        const uint64_t *prev =
            n ? (const uint64_t *)(const void *)&ev[n - 1] : f;
        /* every field is 8 bytes (kblock.h); occ's double as its bits */
        for (size_t k = 0; k < sizeof(*e) / sizeof(uint64_t); k++)
            f[k] = next(&r, n ? prev[k] : 0);
        n++;
    }
    memcpy(got, ev, n * sizeof(*ev));
    check_events(n, opt);
    /* one byte of the encoded block changed: an error, or the same events
     * (the unchecksummed form may decode to others, but must not crash) */
    FUZZ_ASSERT(kblock_encode(enc, ev, n, 1, opt, b1, KB_BLOCK_MAX, &l1, why,
                              sizeof(why)) == 0);
    {
        size_t at = ((size_t)p[1] << 8 | p[2]) % l1;
        b1[at] ^= (uint8_t)(p[len - 1] | 1);
        if (kblock_decode(dec, b1, l1, got2, KB_MAX_EVENTS, &m, why,
                          sizeof(why)) == 0 &&
            !(opt & KB_OPT_NOZSTD))
            FUZZ_ASSERT(m == n && memcmp(got2, ev, n * sizeof(*ev)) == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || setup())
        return 0;
    if (data[0] & 1)
        events_mode(data + 1, size - 1);
    else
        block_mode(data + 1, size - 1, data[0] >> 1);
    return 0;
}
