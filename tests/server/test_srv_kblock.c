/*
 * test_srv_kblock.c - the kernel block codec (src/server/kblock.c): round
 * trips of realistic and adversarial events under every encoder option,
 * the index against one computed here, seeks, canonical re-encoding, and
 * damaged blocks (every truncation, every byte flipped) refused or, at
 * worst, decoded to the very same events - never to different ones.
 */
#include "kblock.h"
#include "kblock_int.h" /* kb_col_off: where each column's field is */
#include "test.h"

#include <math.h>
#include <stdint.h>

static kblock_enc *enc;
static kblock_dec *dec;
static kblock_ev *ev, *got;
static unsigned char *blk, *blk2;
static char why[256];

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Kernels shaped like the simulated GPU's: a step of `shapes` launch
 * configurations cycling on one stream, durations ±10 % of a per-shape
 * mean, back to back with small gaps, seq with gaps for copies. */
static void fill_real(size_t n, unsigned shapes)
{
    uint64_t ts = 1764000000000000000ull, seq = 100;
    for (size_t i = 0; i < n; i++) {
        kblock_ev *e = &ev[i];
        unsigned s = (unsigned)(i % shapes);
        uint64_t mean = 5000 + 1000ull * s * s;
        memset(e, 0, sizeof(*e));
        e->seq = seq;
        seq += 1 + (rnd() % 8 == 0);
        e->dur = mean - mean / 10 + rnd() % (mean / 5);
        e->ts = ts;
        ts += e->dur + 300 + rnd() % 200;
        e->dev = 0;
        e->stream = 7;
        e->corr = 5000 + i * 3;
        e->cfg = 100 + s;
        e->name_id = 10 + (int64_t)(s % 13);
        e->grid[0] = 1024 >> (s % 4);
        e->grid[1] = 1 + s % 2;
        e->grid[2] = 1;
        e->block[0] = 256;
        e->block[1] = 1;
        e->block[2] = 1;
        e->regs = 32 + s % 64;
        e->smem = (int64_t)(s % 3) * 16384;
        e->occ = s % 5 ? 0.25 * (s % 5) : -1;
        e->scope = 1 + i / 133;
        e->path = 3;
        e->api_off = -(int64_t)(2000 + rnd() % 3000);
        e->api_dur = 3000 + rnd() % 500;
        e->flags = s == 3 ? 1 : 0;
        e->tid = 4242;
    }
}

static int same(const kblock_ev *a, const kblock_ev *b, size_t n)
{
    /* memcmp: every field (occ's bits included, NaN and -0.0) */
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(*a))) {
            fprintf(stderr, "  event %zu differs\n", i);
            return 0;
        }
    return 1;
}

/* encode -> decode == events, encode(decode(b)) == b; returns the block
 * length (0 on failure). */
static size_t trip(size_t n, unsigned opt)
{
    size_t len = 0, len2 = 0, m = 0;
    if (kblock_encode(enc, ev, n, 3, opt, blk, KB_BLOCK_MAX, &len, why,
                      sizeof(why))) {
        fprintf(stderr, "  encode: %s\n", why);
        return 0;
    }
    if (kblock_decode(dec, blk, len, got, KB_MAX_EVENTS, &m, why,
                      sizeof(why))) {
        fprintf(stderr, "  decode: %s\n", why);
        return 0;
    }
    if (m != n || !same(ev, got, n))
        return 0;
    if (kblock_encode(enc, got, m, 3, opt, blk2, KB_BLOCK_MAX, &len2, why,
                      sizeof(why)) ||
        len2 != len || memcmp(blk, blk2, len)) {
        fprintf(stderr, "  re-encoding differs\n");
        return 0;
    }
    return len;
}

static const unsigned opts[] = {
    KB_OPT_DEFAULT,  KB_OPT_NOZSTD, KB_OPT_DUR_PLAIN,
    KB_OPT_NOSHAPES, KB_OPT_NOGAP,  KB_OPT_NOZSTD | KB_OPT_NOSHAPES
};

static void test_realistic(void)
{
    size_t len;
    fill_real(4096, 133);
    for (size_t o = 0; o < sizeof(opts) / sizeof(opts[0]); o++)
        CHECK(trip(4096, opts[o]) > 0);
    len = trip(4096, KB_OPT_DEFAULT);
    /* a regular stream compresses far below the 16 B/kernel;
     * the figure itself is bench_kblock's */
    CHECK(len > 0 && len < 4096 * 16);
    fprintf(stderr, "  4096 realistic kernels: %zu bytes\n", len);
    /* sizes 1, 2, 3 (the delta-of-delta starts) and the cap */
    for (size_t n = 1; n <= 3; n++)
        CHECK(trip(n, KB_OPT_DEFAULT) > 0);
    rng = 7;
    fill_real(KB_MAX_EVENTS, 7);
    CHECK(trip(KB_MAX_EVENTS, KB_OPT_DEFAULT) > 0);
}

static void test_index(void)
{
    kblock_index *idx = malloc(sizeof(*idx));
    uint32_t cnt[13] = { 0 };
    size_t len;
    uint64_t smin = UINT64_MAX, smax = 0, tmin = UINT64_MAX, tmax = 0,
             dmin = UINT64_MAX, dmax = 0;

    REQUIRE(idx);
    fill_real(3000, 40);
    /* out of order: the index is over values, not positions */
    ev[10].ts = 5;
    ev[20].seq = 1;
    ev[30].dur = 0;
    ev[40].dur = 1ull << 40;
    for (size_t i = 0; i < 3000; i++) {
        smin = ev[i].seq < smin ? ev[i].seq : smin;
        smax = ev[i].seq > smax ? ev[i].seq : smax;
        tmin = ev[i].ts < tmin ? ev[i].ts : tmin;
        tmax = ev[i].ts > tmax ? ev[i].ts : tmax;
        dmin = ev[i].dur < dmin ? ev[i].dur : dmin;
        dmax = ev[i].dur > dmax ? ev[i].dur : dmax;
        cnt[ev[i].name_id - 10]++;
    }
    len = trip(3000, KB_OPT_DEFAULT);
    REQUIRE(len > 0);
    REQUIRE(kblock_index_read(blk, len, idx, why, sizeof(why)) == 0);
    CHECK_EQ_U64(idx->n, 3000);
    CHECK_EQ_U64(idx->seq_min, smin);
    CHECK_EQ_U64(idx->seq_max, smax);
    CHECK_EQ_U64(idx->ts_min, tmin);
    CHECK_EQ_U64(idx->ts_max, tmax);
    CHECK_EQ_U64(idx->dur_min, dmin);
    CHECK_EQ_U64(idx->dur_max, dmax);
    CHECK_EQ_U64(idx->nnames, 13);
    for (uint32_t k = 0; k < idx->nnames && k < 13; k++) {
        CHECK_EQ_U64(idx->names[k].name_id, 10 + k);
        CHECK_EQ_U64(idx->names[k].n, cnt[k]);
    }
    free(idx);
}

static void test_adversarial(void)
{
    size_t n = 1000;

    /* equal timestamps, equal everything */
    fill_real(n, 5);
    for (size_t i = 0; i < n; i++)
        ev[i].ts = 1234;
    CHECK(trip(n, KB_OPT_DEFAULT) > 0);
    /* huge gaps and wrap-around differences */
    for (size_t i = 0; i < n; i++) {
        ev[i].ts = i % 2 ? UINT64_MAX : 0;
        ev[i].seq = i % 3 ? (uint64_t)INT64_MAX : i;
        ev[i].dur = i % 5 ? UINT64_MAX - i : 0;
    }
    for (size_t o = 0; o < sizeof(opts) / sizeof(opts[0]); o++)
        CHECK(trip(n, opts[o]) > 0);
    /* out-of-order timestamps and seq going backwards */
    fill_real(n, 17);
    for (size_t i = 0; i < n; i++) {
        ev[i].ts = 1764000000000000000ull - i * 977 + (rnd() % 100000);
        ev[i].seq = n - i;
    }
    CHECK(trip(n, KB_OPT_DEFAULT) > 0);
    /* every field at its extremes, random per event: every shape distinct */
    for (size_t i = 0; i < n; i++) {
        kblock_ev *e = &ev[i];
        static const uint64_t ext[] = {
            0, 1, 127, 128, (uint64_t)INT64_MAX, (uint64_t)INT64_MIN, UINT64_MAX
        };
#define X() ext[rnd() % 7]
        e->seq = X();
        e->ts = X();
        e->dur = X();
        e->dev = X();
        e->stream = X();
        e->corr = X();
        e->cfg = X();
        e->name_id = (int64_t)X();
        for (int k = 0; k < 3; k++) {
            e->grid[k] = X();
            e->block[k] = (int64_t)X();
        }
        e->regs = (int64_t)X();
        e->smem = (int64_t)X();
        e->scope = X();
        e->path = X();
        e->stack = X();
        e->api_off = (int64_t)X();
        e->api_dur = X();
        e->flags = X();
        e->tid = X();
        switch (rnd() % 5) {
        case 0: e->occ = NAN; break;
        case 1: e->occ = -0.0; break;
        case 2: e->occ = INFINITY; break;
        case 3: e->occ = -1; break;
        default: e->occ = 1e-300;
        }
#undef X
    }
    for (size_t o = 0; o < sizeof(opts) / sizeof(opts[0]); o++)
        CHECK(trip(n, opts[o]) > 0);
    /* the worst case at the cap fits KB_BLOCK_MAX */
    for (size_t i = 0; i < KB_MAX_EVENTS; i++) {
        memset(&ev[i], 0xff, sizeof(ev[i]));
        ev[i].seq = rnd();
        ev[i].ts = rnd();
        ev[i].cfg = rnd();
        ev[i].corr = rnd();
    }
    CHECK(trip(KB_MAX_EVENTS, KB_OPT_NOZSTD | KB_OPT_NOSHAPES) > 0);
    CHECK(trip(KB_MAX_EVENTS, KB_OPT_DEFAULT) > 0);
}

static void test_limits(void)
{
    size_t len = 0, m = 0;
    fill_real(10, 3);
    CHECK(kblock_encode(enc, ev, 0, 3, 0, blk, KB_BLOCK_MAX, &len, why,
                        sizeof(why)) == -1);
    CHECK(kblock_encode(enc, ev, KB_MAX_EVENTS + 1, 3, 0, blk, KB_BLOCK_MAX,
                        &len, why, sizeof(why)) == -1);
    CHECK(strstr(why, "1 to") != NULL);
    /* no room: an error, nothing written past cap */
    blk[20] = 0xAB;
    CHECK(kblock_encode(enc, ev, 10, 3, 0, blk, 20, &len, why, sizeof(why)) ==
          -1);
    CHECK(blk[20] == 0xAB);
    CHECK(strstr(why, "room") != NULL);
    /* a decoder with room for fewer events than the block has */
    REQUIRE(kblock_encode(enc, ev, 10, 3, 0, blk, KB_BLOCK_MAX, &len, why,
                          sizeof(why)) == 0);
    CHECK(kblock_decode(dec, blk, len, got, 9, &m, why, sizeof(why)) == -1);
    CHECK(strstr(why, "room") != NULL);
    /* an event count over the cap in the header */
    {
        unsigned char b[32] = { 'G', 'K', 'B', 1, 1, 0x81, 0x80, 0x01 };
        CHECK(kblock_decode(dec, b, sizeof(b), got, KB_MAX_EVENTS, &m, why,
                            sizeof(why)) == -1);
        CHECK(strstr(why, "events") != NULL);
    }
}

/* One value, one spelling: a varint with a redundant zero byte is
 * refused, so that an accepted block is the encoder's own bytes. */
static void test_overlong(void)
{
    static kblock_index idx;
    size_t len = 0, m;
    fill_real(1, 1);
    REQUIRE(kblock_encode(enc, ev, 1, 3, KB_OPT_NOZSTD, blk, KB_BLOCK_MAX, &len,
                          why, sizeof(why)) == 0);
    REQUIRE(blk[5] == 1); /* the event count, right after magic and flags */
    memcpy(blk2, blk, 5);
    blk2[5] = 0x81;
    blk2[6] = 0x00;
    memcpy(blk2 + 7, blk + 6, len - 6);
    CHECK(kblock_decode(dec, blk, len, got, 1, &m, why, sizeof(why)) == 0);
    CHECK(kblock_decode(dec, blk2, len + 1, got, 1, &m, why, sizeof(why)) ==
          -1);
    CHECK(kblock_index_read(blk2, len + 1, &idx, why, sizeof(why)) == -1);
}

static void test_seek(void)
{
    size_t len, pos;
    fill_real(4000, 50);
    len = trip(4000, KB_OPT_DEFAULT);
    REQUIRE(len > 0);
    for (size_t i = 0; i < 4000; i += 333) {
        CHECK(kblock_seek_seq(dec, blk, len, ev[i].seq, &pos, why,
                              sizeof(why)) == 0);
        CHECK_EQ_U64(pos, i);
        CHECK(kblock_seek_ts(dec, blk, len, ev[i].ts, &pos, why, sizeof(why)) ==
              0);
        CHECK_EQ_U64(pos, i);
        /* a time between two kernels: the next one */
        CHECK(kblock_seek_ts(dec, blk, len, ev[i].ts + 1, &pos, why,
                             sizeof(why)) == 0);
        CHECK_EQ_U64(pos, i + 1);
    }
    /* a seq in a gap, and keys outside the block's ranges */
    for (size_t i = 1; i < 4000; i++)
        if (ev[i].seq != ev[i - 1].seq + 1) {
            CHECK(kblock_seek_seq(dec, blk, len, ev[i].seq - 1, &pos, why,
                                  sizeof(why)) == 0);
            CHECK(pos == KB_NOTFOUND);
            break;
        }
    CHECK(kblock_seek_seq(dec, blk, len, ev[3999].seq + 1, &pos, why,
                          sizeof(why)) == 0);
    CHECK(pos == KB_NOTFOUND);
    CHECK(kblock_seek_ts(dec, blk, len, ev[3999].ts + 1, &pos, why,
                         sizeof(why)) == 0);
    CHECK(pos == KB_NOTFOUND);
    CHECK(kblock_seek_ts(dec, blk, len, 0, &pos, why, sizeof(why)) == 0);
    CHECK_EQ_U64(pos, 0);
    /* a seek into a damaged payload is an error, not a position */
    blk[len - 2] ^= 0x40;
    CHECK(kblock_seek_seq(dec, blk, len, ev[5].seq, &pos, why, sizeof(why)) ==
          -1);
}

/* kblock_name_dur gives each event's name and duration as a whole
 * decode does, in every encoding of the duration column. */
static void test_name_dur(void)
{
    static int64_t names[KB_MAX_EVENTS];
    static uint64_t durs[KB_MAX_EVENTS];
    static const unsigned modes[] = { KB_OPT_DEFAULT, KB_OPT_NOZSTD,
                                      KB_OPT_DUR_PLAIN, KB_OPT_NOSHAPES };
    static const size_t sizes[] = { 1, 2, 377, 4096 };
    size_t len, n;

    for (size_t o = 0; o < sizeof(modes) / sizeof(modes[0]); o++)
        for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
            fill_real(sizes[z], 50);
            len = trip(sizes[z], modes[o]);
            REQUIRE(len > 0);
            n = 0;
            CHECK(kblock_name_dur(dec, blk, len, names, durs, KB_MAX_EVENTS, &n,
                                  why, sizeof(why)) == 0);
            CHECK_EQ_U64(n, sizes[z]);
            for (size_t i = 0; i < n; i++)
                if (names[i] != got[i].name_id || durs[i] != got[i].dur) {
                    CHECK(!"name or duration differs");
                    break;
                }
        }
    /* no room, and a damaged payload: errors */
    CHECK(kblock_name_dur(dec, blk, len, names, durs, 10, &n, why,
                          sizeof(why)) == -1);
    blk[len - 2] ^= 0x40;
    CHECK(kblock_name_dur(dec, blk, len, names, durs, KB_MAX_EVENTS, &n, why,
                          sizeof(why)) == -1);
}

/* The two blocks' headers give the same index (a changed header that
 * still decodes must not change what a store would file it under). */
static int same_index(const unsigned char *a, const unsigned char *b,
                      size_t len)
{
    static kblock_index x, y;
    if (kblock_index_read(a, len, &x, why, sizeof(why)) ||
        kblock_index_read(b, len, &y, why, sizeof(why)))
        return 0;
    return x.n == y.n && x.seq_min == y.seq_min && x.seq_max == y.seq_max &&
           x.ts_min == y.ts_min && x.ts_max == y.ts_max &&
           x.dur_min == y.dur_min && x.dur_max == y.dur_max &&
           x.nnames == y.nnames &&
           !memcmp(x.names, y.names, x.nnames * sizeof(x.names[0]));
}

/* Every cut and every one-byte change of the block: refused, or (only
 * for the unchecksummed form) decoded without reading out of bounds. */
static void damage(size_t n, unsigned opt, int checked)
{
    size_t len, m, bad = 0, wrong = 0;

    len = trip(n, opt);
    REQUIRE(len > 0);
    memcpy(blk2, blk, len);
    for (size_t cut = 0; cut < len; cut++)
        if (kblock_decode(dec, blk2, cut, got, KB_MAX_EVENTS, &m, why,
                          sizeof(why)) == 0)
            bad++;
    CHECK_EQ_U64(bad, 0);
    for (size_t i = 0; i < len; i++)
        for (unsigned bit = 0; bit < 8; bit += 5) {
            memcpy(blk2, blk, len);
            blk2[i] ^= (unsigned char)(1u << bit);
            if (kblock_decode(dec, blk2, len, got, KB_MAX_EVENTS, &m, why,
                              sizeof(why)) == 0 &&
                (m != n || memcmp(got, ev, n * sizeof(*ev)) ||
                 !same_index(blk, blk2, len)))
                wrong++;
        }
    if (checked)
        CHECK_EQ_U64(wrong, 0);
    else
        fprintf(stderr,
                "  unchecksummed: %zu of %zu flips decode to other "
                "events\n",
                wrong, len * 2);
}

static void test_damage(void)
{
    fill_real(150, 20);
    damage(150, KB_OPT_DEFAULT, 1);
    damage(150, KB_OPT_NOZSTD, 0);
    fill_real(1, 1);
    damage(1, KB_OPT_DEFAULT, 1);
    /* the error says what is wrong */
    {
        size_t len = trip(1, KB_OPT_DEFAULT), m;
        blk[0] = 'X';
        CHECK(kblock_decode(dec, blk, len, got, 1, &m, why, sizeof(why)) == -1);
        CHECK_STR(why, "not a kernel block");
    }
}

/* Random events for test_cols: each column (and the shape fields)
 * picked from a kind that drives the encoder to a different mode:
 * constant, small, extreme, increasing, per-shape, random. */
static void fill_mixed(size_t n, unsigned shapes)
{
    unsigned kind[KB_NCOLS];
    static const uint64_t ext[] = {
        0, 1, 127, 128, (uint64_t)INT64_MAX, (uint64_t)INT64_MIN, UINT64_MAX
    };
    fill_real(n, shapes);
    for (int c = 0; c < KB_NCOLS; c++)
        kind[c] = (unsigned)(rnd() % 7);
    for (size_t i = 0; i < n; i++) {
        unsigned s = (unsigned)(i % shapes);
        for (int c = 0; c < KB_NCOLS; c++) {
            uint64_t v;
            if (c == KC_SHAPE || c == KC_OCC)
                continue;
            switch (kind[c]) {
            case 0: v = 42; break;
            case 1: v = rnd() % 100; break;
            case 2: v = ext[rnd() % 7]; break;
            case 3: v = 1000000 + i * 1000 + rnd() % 10; break;
            case 4: v = 77 + s * 13 + i * (c < KC_SHAPE ? 0 : 3); break;
            case 5: v = rnd(); break;
            default: continue; /* fill_real's */
            }
            /* a shape field is a function of the shape, or the shape
             * table is as big as the block: both are wanted */
            if (c < KC_SHAPE && kind[c] != 5 && kind[c] != 2)
                v = 5 + s * (uint64_t)(kind[c] + 1);
            memcpy((char *)&ev[i] + kb_col_off[c], &v, sizeof(v));
        }
    }
}

/* Whether out[0..n) has full[0..n)'s values in the columns of cols and
 * the pattern byte everywhere else. */
static int cols_ok(const kblock_ev *full, const kblock_ev *out, size_t n,
                   unsigned cols)
{
    for (size_t k = 0; k < n; k++)
        for (int c = 0; c < KB_NCOLS; c++) {
            const char *f = (const char *)&full[k] + kb_col_off[c];
            const char *o = (const char *)&out[k] + kb_col_off[c];
            static const unsigned char pat[8] = { 0xa5, 0xa5, 0xa5, 0xa5,
                                                  0xa5, 0xa5, 0xa5, 0xa5 };
            if (c == KC_SHAPE)
                continue;
            if ((cols >> c) & 1 ? memcmp(f, o, 8) : memcmp(o, pat, 8)) {
                fprintf(stderr, "  cols 0x%x: event %zu column %s %s\n", cols,
                        k, kblock_col_names[c],
                        (cols >> c) & 1 ? "differs" : "written");
                return 0;
            }
        }
    return 1;
}

/* kblock_decode_cols: any subset of the columns gives exactly the full
 * decode's values for those and leaves the rest alone, over random
 * blocks of every encoder option (every column mode, dictionaries of one
 * shape to one per event, 1 to many events); a skipped column mis-sized
 * shifts every column after it, so this fails. */
static void test_cols(void)
{
    static kblock_ev *part;
    const unsigned tl0 =
        KB_C_TS | KB_C_DUR | KB_C_NAME | KB_C_DEV | KB_C_STREAM;
    unsigned bad = 0, runs = 0;

    static unsigned char *decoy;
    size_t dlen = 0, dm = 0;
    static int64_t names[KB_MAX_EVENTS];
    static uint64_t durs[KB_MAX_EVENTS];

    part = calloc(KB_MAX_EVENTS, sizeof(*part));
    decoy = malloc(KB_BLOCK_MAX);
    REQUIRE(part != NULL && decoy != NULL);
    /* decoded before each partial decode, so that what the decoder kept
     * from the full one (durations, shapes) is another block's: a column
     * the partial decode needs but skips gives wrong values, not stale
     * right ones */
    fill_real(4096, 61);
    for (size_t i = 0; i < 4096; i++)
        ev[i].dur = rnd() % 1000000;
    REQUIRE(kblock_encode(enc, ev, 4096, 3, 0, decoy, KB_BLOCK_MAX, &dlen, why,
                          sizeof(why)) == 0);
    for (int round = 0; round < 60; round++) {
        static const size_t sizes[] = { 1, 2, 3, 17, 500, 4096 };
        size_t n = sizes[rnd() % 6], len = 0, m = 0, pm = 0;
        unsigned shapes = 1 + (unsigned)(rnd() % (round % 3 ? 40 : n + 1));
        unsigned opt = opts[rnd() % (sizeof(opts) / sizeof(opts[0]))];
        fill_mixed(n, shapes);
        if (kblock_encode(enc, ev, n, 3, opt, blk, KB_BLOCK_MAX, &len, why,
                          sizeof(why)) ||
            kblock_decode(dec, blk, len, got, KB_MAX_EVENTS, &m, why,
                          sizeof(why)) ||
            m != n || !same(ev, got, n)) {
            fprintf(stderr, "  round %d: full decode: %s\n", round, why);
            bad++;
            continue;
        }
        for (int t = 0; t < 40; t++) {
            /* each column alone, the timeline's set, then random sets */
            unsigned cols = t < KB_NCOLS    ? 1u << t
                            : t == KB_NCOLS ? tl0
                                            : (unsigned)rnd() & KB_C_ALL;
            cols &= KB_C_ALL;
            if (!cols)
                continue;
            REQUIRE(kblock_decode(dec, decoy, dlen, part, KB_MAX_EVENTS, &dm,
                                  why, sizeof(why)) == 0);
            memset(part, 0xa5, n * sizeof(*part));
            runs++;
            if (kblock_decode_cols(dec, blk, len, cols, part, KB_MAX_EVENTS,
                                   &pm, why, sizeof(why))) {
                fprintf(stderr, "  round %d cols 0x%x: %s\n", round, cols, why);
                bad++;
            } else if (pm != n || !cols_ok(got, part, n, cols)) {
                bad++;
            }
            /* the same columns from the payload kblock_name_dur opened
             * (a sort by duration's block that passes), not decompressed
             * again: the decoy decoded first, as above */
            if (cols == KB_C_ALL)
                continue;
            REQUIRE(kblock_decode(dec, decoy, dlen, part, KB_MAX_EVENTS, &dm,
                                  why, sizeof(why)) == 0);
            memset(part, 0xa5, n * sizeof(*part));
            runs++;
            if (kblock_name_dur(dec, blk, len, names, durs, KB_MAX_EVENTS, &pm,
                                why, sizeof(why)) ||
                kblock_decode_cols_again(dec, cols, part, KB_MAX_EVENTS, &pm,
                                         why, sizeof(why))) {
                fprintf(stderr, "  round %d cols 0x%x again: %s\n", round, cols,
                        why);
                bad++;
            } else if (pm != n || !cols_ok(got, part, n, cols)) {
                bad++;
            }
        }
    }
    fprintf(stderr, "  %u partial decodes, %u wrong\n", runs, bad);
    CHECK(bad == 0);
    CHECK(runs > 1000);
    /* the shape-number bit (no field), too small a buffer: refused */
    fill_real(10, 3);
    {
        size_t len = 0, m = 0;
        REQUIRE(kblock_encode(enc, ev, 10, 3, 0, blk, KB_BLOCK_MAX, &len, why,
                              sizeof(why)) == 0);
        size_t pos = 0;
        /* again: every column (the index check), or after another call
         * on the decoder, refused */
        REQUIRE(kblock_name_dur(dec, blk, len, names, durs, KB_MAX_EVENTS, &m,
                                why, sizeof(why)) == 0);
        CHECK(kblock_decode_cols_again(dec, KB_C_ALL, part, KB_MAX_EVENTS, &m,
                                       why, sizeof(why)) == -1);
        CHECK(kblock_decode_cols_again(dec, KB_C_TS, part, 9, &m, why,
                                       sizeof(why)) == -1);
        CHECK(kblock_seek_seq(dec, blk, len, ev[4].seq, &pos, why,
                              sizeof(why)) == 0);
        CHECK(kblock_decode_cols_again(dec, KB_C_TS, part, KB_MAX_EVENTS, &m,
                                       why, sizeof(why)) == -1);
        CHECK(kblock_decode_cols(dec, blk, len, 1u << KC_SHAPE, part,
                                 KB_MAX_EVENTS, &m, why, sizeof(why)) == -1);
        CHECK(kblock_decode_cols(dec, blk, len, KB_C_TS, part, 9, &m, why,
                                 sizeof(why)) == -1);
        CHECK(strstr(why, "room") != NULL);
        CHECK(kblock_decode_cols(dec, blk, len, KB_C_TS, part, 10, &m, why,
                                 sizeof(why)) == 0 &&
              m == 10 && part[9].ts == ev[9].ts);
    }
    free(part);
    free(decoy);
}

/* kblock_decode_rows: after a decode of a few columns, any ascending set
 * of positions (none, one, the first, the last, a run, every one, a
 * random sparse set) gives exactly the full decode's events there in the
 * columns asked for (the rest left alone), over random blocks of every
 * encoder option; stored uncompressed, the rows are read in place.  A
 * row whose columns were read past the last one asked for, or misplaced,
 * fails; so do rows out of order or past the block, and a call after
 * another use of the decoder. */
static void test_rows(void)
{
    static kblock_ev *part;
    static uint32_t *rows;
    unsigned bad = 0, runs = 0;

    part = calloc(KB_MAX_EVENTS, sizeof(*part));
    rows = malloc(KB_MAX_EVENTS * sizeof(*rows));
    REQUIRE(part != NULL && rows != NULL);
    for (int round = 0; round < 60; round++) {
        static const size_t sizes[] = { 1, 2, 3, 17, 500, 4096, 8192 };
        size_t n = sizes[rnd() % 7], len = 0, m = 0, pm = 0;
        unsigned shapes = 1 + (unsigned)(rnd() % (round % 3 ? 40 : n + 1));
        unsigned opt = opts[rnd() % (sizeof(opts) / sizeof(opts[0]))];
        fill_mixed(n, shapes);
        if (kblock_encode(enc, ev, n, 3, opt, blk, KB_BLOCK_MAX, &len, why,
                          sizeof(why)) ||
            kblock_decode(dec, blk, len, got, KB_MAX_EVENTS, &m, why,
                          sizeof(why)) ||
            m != n || !same(ev, got, n)) {
            fprintf(stderr, "  round %d: full decode: %s\n", round, why);
            bad++;
            continue;
        }
        for (int t = 0; t < 12; t++) {
            size_t k = 0;
            unsigned cols = t % 3 == 0 ? KB_C_ALL
                            : t % 3 == 1
                                ? KB_C_ALL & ~(KB_C_TS | KB_C_SEQ)
                                : ((unsigned)rnd() & KB_C_ALL) | KB_C_TID;
            switch (t % 6) {
            case 0: break; /* none */
            case 1: rows[k++] = (uint32_t)(rnd() % n); break;
            case 2: /* a page's run, the block's end included */
                for (size_t j = rnd() % n; j < n && k < 101; j++)
                    rows[k++] = (uint32_t)j;
                break;
            case 3:
                for (size_t j = 0; j < n; j++)
                    rows[k++] = (uint32_t)j;
                break;
            case 4: rows[k++] = 0; break;
            default:
                for (size_t j = 0; j < n; j++)
                    if (rnd() % 7 == 0)
                        rows[k++] = (uint32_t)j;
            }
            /* the page's first step: a few columns of every event, into
             * what the rows then fill */
            memset(part, 0xa5, n * sizeof(*part));
            if (kblock_decode_cols(dec, blk, len, KB_C_TS | KB_C_SEQ, part,
                                   KB_MAX_EVENTS, &pm, why, sizeof(why)) ||
                pm != n) {
                fprintf(stderr, "  round %d: cols: %s\n", round, why);
                bad++;
                continue;
            }
            memset(part, 0xa5, n * sizeof(*part));
            runs++;
            if (kblock_decode_rows(dec, cols, rows, k, part, why,
                                   sizeof(why))) {
                fprintf(stderr, "  round %d rows: %s\n", round, why);
                bad++;
                continue;
            }
            for (size_t j = 0; j < k; j++)
                if (!cols_ok(&got[rows[j]], &part[j], 1, cols)) {
                    fprintf(stderr, "  round %d opt %u: row %u of %zu\n", round,
                            opt, rows[j], n);
                    bad++;
                    break;
                }
            /* nothing written past the k asked for */
            if (k < n && !cols_ok(&got[0], &part[k], 1, 0))
                bad++;
        }
    }
    fprintf(stderr, "  %u row decodes, %u wrong\n", runs, bad);
    CHECK(bad == 0);
    CHECK(runs > 600);
    /* refused: rows out of order, repeated, past the block; no decode
     * before; another call on the decoder in between */
    fill_real(10, 3);
    {
        size_t len = 0, m = 0, pos = 0;
        kblock_dec *d2 = kblock_dec_new();
        REQUIRE(d2 != NULL);
        CHECK(kblock_decode_rows(d2, KB_C_ALL, rows, 1, part, why,
                                 sizeof(why)) == -1);
        CHECK(strstr(why, "no block decoded") != NULL);
        kblock_dec_free(d2);
        REQUIRE(kblock_encode(enc, ev, 10, 3, 0, blk, KB_BLOCK_MAX, &len, why,
                              sizeof(why)) == 0);
        REQUIRE(kblock_decode_cols(dec, blk, len, KB_C_TS, part, KB_MAX_EVENTS,
                                   &m, why, sizeof(why)) == 0);
        rows[0] = 3;
        rows[1] = 3;
        CHECK(kblock_decode_rows(dec, KB_C_ALL, rows, 2, part, why,
                                 sizeof(why)) == -1);
        rows[1] = 2;
        CHECK(kblock_decode_rows(dec, KB_C_ALL, rows, 2, part, why,
                                 sizeof(why)) == -1);
        rows[0] = 10;
        CHECK(kblock_decode_rows(dec, KB_C_ALL, rows, 1, part, why,
                                 sizeof(why)) == -1);
        rows[0] = 9;
        CHECK(kblock_decode_rows(dec, KB_C_ALL, rows, 1, part, why,
                                 sizeof(why)) == 0 &&
              same(&ev[9], &part[0], 1));
        CHECK(kblock_seek_seq(dec, blk, len, ev[4].seq, &pos, why,
                              sizeof(why)) == 0 &&
              pos == 4);
        CHECK(kblock_decode_rows(dec, KB_C_ALL, rows, 1, part, why,
                                 sizeof(why)) == -1);
        /* a failed decode leaves nothing to read rows of */
        REQUIRE(kblock_decode_cols(dec, blk, len, KB_C_TS, part, KB_MAX_EVENTS,
                                   &m, why, sizeof(why)) == 0);
        CHECK(kblock_decode_cols(dec, blk, len - 1, KB_C_TS, part,
                                 KB_MAX_EVENTS, &m, why, sizeof(why)) == -1);
        CHECK(kblock_decode_rows(dec, KB_C_ALL, rows, 1, part, why,
                                 sizeof(why)) == -1);
    }
    free(part);
    free(rows);
}

/* vlen (kblock_int.h): the LEB128 length of a value, for every bit
 * length, against the byte loop that writes it. */
static void test_vlen(void)
{
    int ok = 1;

    for (int bits = 0; bits <= 64; bits++) {
        uint64_t v = bits ? (uint64_t)1 << (bits - 1) : 0;
        for (int k = 0; k < 3; k++) {
            uint64_t x = k == 0 ? v : k == 1 ? v | (v >> 1) : (v << 1) - 1;
            size_t n = 1;
            for (uint64_t y = x; y >= 0x80; y >>= 7)
                n++;
            if (vlen(x) != n) {
                fprintf(stderr, "  vlen(%llu) %zu, want %zu\n",
                        (unsigned long long)x, vlen(x), n);
                ok = 0;
            }
        }
    }
    CHECK(ok);
}

int main(void)
{
    RUN(test_vlen);
    enc = kblock_enc_new();
    dec = kblock_dec_new();
    ev = calloc(KB_MAX_EVENTS + 1, sizeof(*ev));
    got = calloc(KB_MAX_EVENTS + 1, sizeof(*got));
    blk = malloc(KB_BLOCK_MAX);
    blk2 = malloc(KB_BLOCK_MAX);
    if (!enc || !dec || !ev || !got || !blk || !blk2)
        return 1;
    RUN(test_realistic);
    RUN(test_index);
    RUN(test_adversarial);
    RUN(test_limits);
    RUN(test_overlong);
    RUN(test_seek);
    RUN(test_name_dur);
    RUN(test_cols);
    RUN(test_rows);
    RUN(test_damage);
    kblock_enc_free(enc);
    kblock_dec_free(dec);
    free(ev);
    free(got);
    free(blk);
    free(blk2);
    TEST_DONE();
}
