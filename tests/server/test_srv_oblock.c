/*
 * test_srv_oblock.c - the op block codec (src/server/oblock.c): round
 * trips of realistic and adversarial ops (kinds absent, empty, at their
 * cap; extreme values), the index, the limits, and hostile bytes (every
 * truncation, every byte flipped, random bytes behind a valid header)
 * refused or decoded to the very same ops - never to different ones.
 */
#include "oblock.h"
#include "test.h"

#include <stdint.h>

static oblock_enc *enc;
static oblock_dec *dec;
static oblock_ev *ev, *got;
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

static void set_kind(oblock_ev *e, const char *k)
{
    if (!k) {
        e->kind_len = -1;
        e->kind[0] = '\0';
        return;
    }
    e->kind_len = (int)strlen(k);
    memcpy(e->kind, k, (size_t)e->kind_len + 1);
}

/* A training step's ops: copies in and out, memsets, a sync per step,
 * allocs and frees, on two streams, seq with gaps (kernels between). */
static void fill_real(size_t n)
{
    static const char *const kinds[] = { "HtoD", "DtoH", "DtoD" };
    uint64_t ts = 1764000000000000000ull, seq = 100;
    for (size_t i = 0; i < n; i++) {
        oblock_ev *e = &ev[i];
        unsigned t = (unsigned)(rnd() % 10);
        memset(e, 0, sizeof(*e));
        e->seq = seq;
        seq += 1 + rnd() % 20;
        e->type = t < 6 ? 6 : t < 7 ? 7 : t < 8 ? 8 : t < 9 ? 9 : 10;
        e->ts = ts;
        e->dur = e->type == 6 ? 2000 + rnd() % 50000 : rnd() % 3000;
        ts += e->dur + rnd() % 100000;
        e->dev = 0;
        e->stream = e->type == 8 ? 0 : 7 + i % 2;
        e->corr = 9000 + i * 7;
        e->bytes = e->type == 8 ? 0 : 1ull << (10 + rnd() % 20);
        e->scope = 1 + i / 50;
        e->path = 3;
        e->stack = i % 3 ? 0 : 11;
        e->api_off = -(int64_t)(1000 + rnd() % 2000);
        e->api_dur = 2000 + rnd() % 900;
        e->flags = rnd() % 4;
        e->tid = i % 5 ? 4242 : 0;
        set_kind(e, e->type == 6   ? kinds[rnd() % 3]
                    : e->type == 8 ? "device"
                                   : NULL);
    }
}

static int same(const oblock_ev *a, const oblock_ev *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const oblock_ev *x = &a[i], *y = &b[i];
        if (x->seq != y->seq || x->type != y->type || x->ts != y->ts ||
            x->dur != y->dur || x->dev != y->dev || x->stream != y->stream ||
            x->corr != y->corr || x->bytes != y->bytes ||
            x->scope != y->scope || x->path != y->path ||
            x->stack != y->stack || x->api_off != y->api_off ||
            x->api_dur != y->api_dur || x->flags != y->flags ||
            x->tid != y->tid || x->kind_len != y->kind_len ||
            (x->kind_len > 0 &&
             memcmp(x->kind, y->kind, (size_t)x->kind_len)) ||
            (x->kind_len >= 0 && y->kind[y->kind_len] != '\0')) {
            fprintf(stderr, "  op %zu differs\n", i);
            return 0;
        }
    }
    return 1;
}

/* encode -> decode == ops, and encoding is deterministic; the block's
 * length, or 0 on a failure. */
static size_t trip(size_t n)
{
    size_t len, len2, m = 0;
    if (oblock_encode(enc, ev, n, 3, blk, OB_BLOCK_MAX, &len, why,
                      sizeof(why))) {
        fprintf(stderr, "  encode: %s\n", why);
        return 0;
    }
    memset(got, 0xa5, n * sizeof(*got));
    if (oblock_decode(dec, blk, len, got, OB_MAX_EVENTS, &m, why,
                      sizeof(why))) {
        fprintf(stderr, "  decode: %s\n", why);
        return 0;
    }
    if (m != n || !same(ev, got, n))
        return 0;
    if (oblock_encode(enc, got, m, 3, blk2, OB_BLOCK_MAX, &len2, why,
                      sizeof(why)) ||
        len2 != len || memcmp(blk, blk2, len))
        return 0;
    return len;
}

static void test_realistic(void)
{
    size_t len;
    fill_real(1000);
    len = trip(1000);
    CHECK(len > 0);
    /* a row in `ops` costs ~60-90 bytes (SQLite) before its index: the
     * block is to be several times smaller */
    fprintf(stderr, "  1000 ops: %zu bytes, %.1f B/op\n", len, len / 1000.0);
    CHECK(len < 1000 * 20);
    for (size_t n = 1; n <= 5; n++)
        CHECK(trip(n) > 0);
    fill_real(OB_MAX_EVENTS);
    CHECK(trip(OB_MAX_EVENTS) > 0);
}

static void test_index(void)
{
    oblock_index idx;
    size_t len;
    uint64_t smin = UINT64_MAX, smax = 0, tmin = UINT64_MAX, tmax = 0, dmax = 0;

    fill_real(300);
    /* out of order: the index is over the values, not the positions */
    ev[0].seq += 100000;
    ev[5].ts -= 1000;
    for (size_t i = 0; i < 300; i++) {
        smin = ev[i].seq < smin ? ev[i].seq : smin;
        smax = ev[i].seq > smax ? ev[i].seq : smax;
        tmin = ev[i].ts < tmin ? ev[i].ts : tmin;
        tmax = ev[i].ts > tmax ? ev[i].ts : tmax;
        dmax = ev[i].dur > dmax ? ev[i].dur : dmax;
    }
    len = trip(300);
    REQUIRE(len > 0);
    REQUIRE(oblock_index_read(blk, len, &idx, why, sizeof(why)) == 0);
    CHECK_EQ_U64(idx.n, 300);
    CHECK_EQ_U64(idx.seq_min, smin);
    CHECK_EQ_U64(idx.seq_max, smax);
    CHECK_EQ_U64(idx.ts_min, tmin);
    CHECK_EQ_U64(idx.ts_max, tmax);
    CHECK_EQ_U64(idx.dur_max, dmax);
}

static void test_adversarial(void)
{
    char k32[OB_KIND_MAX + 1];
    memset(k32, 'x', OB_KIND_MAX);
    k32[OB_KIND_MAX] = '\0';
    for (size_t i = 0; i < 200; i++) {
        oblock_ev *e = &ev[i];
        uint64_t pick[] = {
            0, 1, UINT64_MAX, UINT64_MAX - 1, 1ull << 63, rnd()
        };
        uint64_t *f[] = { &e->seq,   &e->type,   &e->ts,   &e->dur,
                          &e->dev,   &e->stream, &e->corr, &e->bytes,
                          &e->scope, &e->path,   &e->stack };
        for (size_t k = 0; k < sizeof(f) / sizeof(f[0]); k++)
            *f[k] = pick[rnd() % 6];
        e->api_off = (int64_t)pick[rnd() % 6];
        e->api_dur = pick[rnd() % 6];
        e->flags = pick[rnd() % 6];
        e->tid = pick[rnd() % 6];
        switch (i % 4) {
        case 0: set_kind(e, NULL); break;
        case 1: set_kind(e, ""); break;
        case 2: set_kind(e, k32); break;
        default: set_kind(e, i % 8 == 3 ? "a\tb" : "HtoD");
        }
    }
    CHECK(trip(200) > 0);
    /* every op its own kind, up to the cap */
    for (size_t i = 0; i < OB_MAX_KINDS; i++) {
        char k[16];
        snprintf(k, sizeof(k), "k%zu", i);
        set_kind(&ev[i], k);
    }
    CHECK(trip(OB_MAX_KINDS) > 0);
}

static void test_limits(void)
{
    size_t len;
    fill_real(OB_MAX_EVENTS + 1);
    CHECK(oblock_encode(enc, ev, 0, 3, blk, OB_BLOCK_MAX, &len, why,
                        sizeof(why)) == -1);
    CHECK(oblock_encode(enc, ev, OB_MAX_EVENTS + 1, 3, blk, OB_BLOCK_MAX, &len,
                        why, sizeof(why)) == -1);
    ev[3].kind_len = OB_KIND_MAX + 1;
    CHECK(oblock_encode(enc, ev, 10, 3, blk, OB_BLOCK_MAX, &len, why,
                        sizeof(why)) == -1);
    fill_real(OB_MAX_KINDS + 1);
    for (size_t i = 0; i <= OB_MAX_KINDS; i++) {
        char k[16];
        snprintf(k, sizeof(k), "k%zu", i);
        set_kind(&ev[i], k);
    }
    CHECK(oblock_encode(enc, ev, OB_MAX_KINDS + 1, 3, blk, OB_BLOCK_MAX, &len,
                        why, sizeof(why)) == -1);
    /* cap: short output, and a decode into too few ops */
    fill_real(100);
    CHECK(oblock_encode(enc, ev, 100, 3, blk, 20, &len, why, sizeof(why)) ==
          -1);
    REQUIRE(oblock_encode(enc, ev, 100, 3, blk, OB_BLOCK_MAX, &len, why,
                          sizeof(why)) == 0);
    size_t m;
    CHECK(oblock_decode(dec, blk, len, got, 99, &m, why, sizeof(why)) == -1);
    CHECK(oblock_decode(dec, blk, len, got, 100, &m, why, sizeof(why)) == 0);
}

/* Hostile bytes: every truncation, every byte of the block flipped (in
 * the header: refused or the same ops; in the frame: the checksum), and
 * random payloads behind a header that names them. */
static void test_damage(void)
{
    size_t len, m, bad = 0, wrong = 0;
    fill_real(150);
    REQUIRE(oblock_encode(enc, ev, 150, 3, blk, OB_BLOCK_MAX, &len, why,
                          sizeof(why)) == 0);
    for (size_t cut = 0; cut < len; cut++) {
        memcpy(blk2, blk, cut);
        if (oblock_decode(dec, blk2, cut, got, OB_MAX_EVENTS, &m, why,
                          sizeof(why)) == 0)
            bad++;
    }
    CHECK_EQ_U64(bad, 0);
    for (size_t at = 0; at < len; at++)
        for (unsigned bit = 0; bit < 8; bit += 3) {
            memcpy(blk2, blk, len);
            blk2[at] ^= (unsigned char)(1u << bit);
            if (oblock_decode(dec, blk2, len, got, OB_MAX_EVENTS, &m, why,
                              sizeof(why)) == 0 &&
                (m != 150 || !same(ev, got, 150)))
                wrong++;
        }
    CHECK_EQ_U64(wrong, 0);
    /* a header that holds, then random bytes (no zstd frame): refused */
    for (int r = 0; r < 2000; r++) {
        size_t n = 5 + rnd() % 64;
        for (size_t i = 0; i < n; i++)
            blk2[i] = (unsigned char)rnd();
        memcpy(blk2, blk, 5 + rnd() % 12);
        m = 0;
        if (oblock_decode(dec, blk2, n, got, OB_MAX_EVENTS, &m, why,
                          sizeof(why)) == 0)
            CHECK(m >= 1 && m <= OB_MAX_EVENTS);
        oblock_index idx;
        (void)oblock_index_read(blk2, n, &idx, why, sizeof(why));
    }
    /* one op, every column constant: a header saying two ops (the
     * count byte right after magic, version and flags) is refused, not
     * read as the op twice */
    fill_real(1);
    REQUIRE(oblock_encode(enc, ev, 1, 3, blk, OB_BLOCK_MAX, &len, why,
                          sizeof(why)) == 0);
    REQUIRE(blk[5] == 1);
    blk[5] = 2;
    CHECK(oblock_decode(dec, blk, len, got, OB_MAX_EVENTS, &m, why,
                        sizeof(why)) == -1);
    CHECK(oblock_decode(dec, NULL, 0, got, OB_MAX_EVENTS, &m, why,
                        sizeof(why)) == -1);
    /* a kernel block is not an op block */
    memcpy(blk2, blk, len);
    blk2[1] = 'K';
    CHECK(oblock_decode(dec, blk2, len, got, OB_MAX_EVENTS, &m, why,
                        sizeof(why)) == -1);
}

int main(void)
{
    enc = oblock_enc_new();
    dec = oblock_dec_new();
    ev = calloc(OB_MAX_EVENTS + 1, sizeof(*ev));
    got = calloc(OB_MAX_EVENTS + 1, sizeof(*got));
    blk = malloc(OB_BLOCK_MAX);
    blk2 = malloc(OB_BLOCK_MAX);
    if (!enc || !dec || !ev || !got || !blk || !blk2)
        return 1;
    RUN(test_realistic);
    RUN(test_index);
    RUN(test_adversarial);
    RUN(test_limits);
    RUN(test_damage);
    oblock_enc_free(enc);
    oblock_dec_free(dec);
    free(ev);
    free(got);
    free(blk);
    free(blk2);
    TEST_DONE();
}
