/*
 * kblock.c - encodes and decodes kernel blocks (kblock.h; the byte layout
 * is docs/server.md "Kernel blocks (format)").
 *
 * A block is a header holding its index, then a payload of 25 columns:
 * the 11 fields of the kernels' launch shapes (name, config, grid, block,
 * registers, shared memory, occupancy: what a launch dict fixes) once per
 * distinct shape in the block, and 14 per-event columns, the first of
 * them each event's shape number.  Every column picks the cheapest of a
 * few integer transforms (constant, plain, zigzag, delta, delta of delta,
 * delta from the same shape's previous value), written as LEB128 varints;
 * the payload is then one zstd frame with its checksum.
 *
 * The decoder trusts nothing: every varint is bounded and minimal, every
 * count is checked against its cap before it sizes anything, and the
 * header's index must equal what the decoded events give, so a damaged
 * block is an error rather than wrong kernels.
 */
#include "kblock.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define KB_MAGIC0 'G'
#define KB_MAGIC1 'K'
#define KB_MAGIC2 'B'
#define KB_VERSION 1
#define KB_FLAG_ZSTD 1u

/* Column transforms (the mode byte). */
enum {
    KM_CONST = 0, /* one varint, every value */
    KM_RAW = 1,   /* each value */
    KM_ZIG = 2,   /* each value zigzagged as int64 */
    KM_DELTA = 3, /* first, then zigzag differences */
    KM_DOD = 4,   /* first, zigzag first difference, then differences of
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

const char *const kblock_col_names[KB_NCOLS] = {
    "name",  "cfg",   "grid_x", "grid_y", "grid_z",  "block_x", "block_y",
    "block_z", "regs", "smem", "occ",     "shape",   "seq",     "dur",
    "ts",   "dev",   "stream", "corr",   "scope",   "path",    "stack",
    "api_dur", "api_off", "flags", "tid"
};

/* Where each column's value lives in a kblock_ev (every field 8 bytes);
 * KC_SHAPE has none. */
static const size_t col_off[KB_NCOLS] = {
    offsetof(kblock_ev, name_id),  offsetof(kblock_ev, cfg),
    offsetof(kblock_ev, grid[0]),  offsetof(kblock_ev, grid[1]),
    offsetof(kblock_ev, grid[2]),  offsetof(kblock_ev, block[0]),
    offsetof(kblock_ev, block[1]), offsetof(kblock_ev, block[2]),
    offsetof(kblock_ev, regs),     offsetof(kblock_ev, smem),
    offsetof(kblock_ev, occ),      0,
    offsetof(kblock_ev, seq),      offsetof(kblock_ev, dur),
    offsetof(kblock_ev, ts),      offsetof(kblock_ev, dev),
    offsetof(kblock_ev, stream),   offsetof(kblock_ev, corr),
    offsetof(kblock_ev, scope),    offsetof(kblock_ev, path),
    offsetof(kblock_ev, stack),    offsetof(kblock_ev, api_dur),
    offsetof(kblock_ev, api_off),  offsetof(kblock_ev, flags),
    offsetof(kblock_ev, tid)
};

/* The encoder's shape table is open-addressed at twice the most shapes. */
#define KB_HASH (2 * KB_MAX_EVENTS)

struct kblock_enc {
    kblock_ev shape[KB_MAX_EVENTS];
    uint32_t sidx[KB_MAX_EVENTS]; /* event -> shape */
    uint32_t hash[KB_HASH];       /* shape + 1; 0 empty */
    uint32_t scount[KB_MAX_EVENTS];
    uint64_t vals[KB_MAX_EVENTS], last[KB_MAX_EVENTS];
    /* columns KM_GAP predicts from, and its predictions */
    uint64_t dur[KB_MAX_EVENTS], ts[KB_MAX_EVENTS], adur[KB_MAX_EVENTS];
    uint64_t ref[KB_MAX_EVENTS];
    kblock_name names[KB_MAX_NAMES];
    kblock_index idx;
    unsigned char raw[KB_RAW_MAX];
    unsigned char zbuf[ZSTD_COMPRESSBOUND(KB_RAW_MAX)];
    unsigned char hdr[KB_HDR_MAX];
    ZSTD_CCtx *z;
};

struct kblock_dec {
    kblock_ev shape[KB_MAX_EVENTS];
    uint32_t sidx[KB_MAX_EVENTS];
    uint64_t vals[KB_MAX_EVENTS], last[KB_MAX_EVENTS];
    /* columns KM_GAP predicts from, and its predictions */
    uint64_t dur[KB_MAX_EVENTS], ts[KB_MAX_EVENTS], adur[KB_MAX_EVENTS];
    uint64_t ref[KB_MAX_EVENTS];
    uint32_t scount[KB_MAX_EVENTS];
    kblock_index hidx, calc; /* the header's, and the events' */
    size_t hlen;             /* the last block's header bytes */
    unsigned char raw[KB_RAW_MAX];
    ZSTD_DCtx *z;
};

/* ---- small helpers ---- */

static int fail(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    if (why && whylen) {
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static uint64_t zz(uint64_t u)
{
    return (u << 1) ^ (0 - (u >> 63));
}

static uint64_t unzz(uint64_t z)
{
    return (z >> 1) ^ (0 - (z & 1));
}

static size_t vlen(uint64_t v)
{
    /* 1 + (bits - 1) / 7, bits of v | 1 */
    return (size_t)(70 - __builtin_clzll(v | 1)) / 7;
}

static size_t vput(unsigned char *o, uint64_t v)
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
static int vget(const unsigned char *p, size_t n, size_t *i, uint64_t *v)
{
    uint64_t x = 0;
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
static uint64_t col_get(const kblock_ev *e, int c)
{
    uint64_t v;
    memcpy(&v, (const char *)e + col_off[c], sizeof(v));
    return c == KC_OCC ? __builtin_bswap64(v) : v;
}

static void col_set(kblock_ev *e, int c, uint64_t v)
{
    if (c == KC_OCC)
        v = __builtin_bswap64(v);
    memcpy((char *)e + col_off[c], &v, sizeof(v));
}

/* ---- column transforms ---- */

/* The i-th transformed value of v[0..m) under mode (m >= 1). */
static uint64_t xform(int mode, const uint64_t *v, size_t i,
                      const uint32_t *sidx, uint64_t *last,
                      const uint64_t *ref)
{
    uint64_t d;
    switch (mode) {
    case KM_RAW:
        return v[i];
    case KM_ZIG:
        return zz(v[i]);
    case KM_DELTA:
        return i ? zz(v[i] - v[i - 1]) : v[0];
    case KM_DOD:
        if (i == 0)
            return v[0];
        if (i == 1)
            return zz(v[1] - v[0]);
        return zz((v[i] - v[i - 1]) - (v[i - 1] - v[i - 2]));
    case KM_GAP:
        return i ? zz(v[i] - v[i - 1] - ref[i]) : v[0];
    default: /* KM_SDELTA */
        d = zz(v[i] - last[sidx[i]]);
        last[sidx[i]] = v[i];
        return d;
    }
}

/* Picks the mode whose varints are shortest (ties: the lower mode), all
 * sizes summed in one pass, and sets *blen to its body's bytes: with the
 * writing below this is nearly all of the encoder's own time. */
static int pick_mode(const uint64_t *v, size_t m, const uint32_t *sidx,
                     uint64_t *last, size_t nlast, int allow_sdelta,
                     const uint64_t *ref, size_t *blen)
{
    size_t sz[KM_N] = { 0 }, i;
    uint64_t d, pd;
    int bm;

    for (i = 1; i < m && v[i] == v[0]; i++)
        ;
    if (i == m) {
        *blen = vlen(v[0]);
        return KM_CONST;
    }
    sz[KM_RAW] = sz[KM_DELTA] = sz[KM_DOD] = sz[KM_GAP] = vlen(v[0]);
    sz[KM_ZIG] = vlen(zz(v[0]));
    pd = v[1] - v[0];
    for (i = 1; i < m; i++) {
        d = v[i] - v[i - 1];
        sz[KM_RAW] += vlen(v[i]);
        sz[KM_ZIG] += vlen(zz(v[i]));
        sz[KM_DELTA] += vlen(zz(d));
        sz[KM_DOD] += vlen(zz(d - pd));
        pd = d;
    }
    /* the first difference is written as is (pd started at it) */
    sz[KM_DOD] += vlen(zz(v[1] - v[0])) - 1;
    if (ref)
        for (i = 1; i < m; i++)
            sz[KM_GAP] += vlen(zz(v[i] - v[i - 1] - ref[i]));
    if (allow_sdelta) {
        memset(last, 0, nlast * sizeof(*last));
        for (i = 0; i < m; i++) {
            sz[KM_SDELTA] += vlen(zz(v[i] - last[sidx[i]]));
            last[sidx[i]] = v[i];
        }
    }
    bm = KM_RAW;
    for (int mode = KM_ZIG; mode < KM_N; mode++) {
        if ((mode == KM_SDELTA && !allow_sdelta) || (mode == KM_GAP && !ref))
            continue;
        if (sz[mode] < sz[bm])
            bm = mode;
    }
    *blen = sz[bm];
    return bm;
}

/* Writes column v[0..m) as mode byte, body length, body at o; returns
 * the bytes written (at most 1 + 10 + 10 m). */
static size_t put_col(unsigned char *o, const uint64_t *v, size_t m,
                      const uint32_t *sidx, uint64_t *last, size_t nlast,
                      int allow_sdelta, const uint64_t *ref)
{
    size_t blen, n;
    int mode = pick_mode(v, m, sidx, last, nlast, allow_sdelta, ref, &blen);

    o[0] = (unsigned char)mode;
    n = 1 + vput(o + 1, blen);
    switch (mode) {
    case KM_CONST:
        return n + vput(o + n, v[0]);
    case KM_RAW:
        for (size_t i = 0; i < m; i++)
            n += vput(o + n, v[i]);
        return n;
    case KM_ZIG:
        for (size_t i = 0; i < m; i++)
            n += vput(o + n, zz(v[i]));
        return n;
    case KM_SDELTA:
        memset(last, 0, nlast * sizeof(*last));
        break;
    default:
        break;
    }
    for (size_t i = 0; i < m; i++)
        n += vput(o + n, xform(mode, v, i, sidx, last, ref));
    return n;
}

/*
 * Reads one column of m values from p[*i..n) into v; sidx/last for
 * KM_SDELTA (NULL: not allowed here).  0, or -1 with why.
 */
static int get_col(const unsigned char *p, size_t n, size_t *i, uint64_t *v,
                   size_t m, const uint32_t *sidx, uint64_t *last,
                   size_t nlast, const uint64_t *ref, int c, char *why,
                   size_t whylen)
{
    uint64_t blen, x;
    size_t end, j = 0;
    int mode;

    if (*i >= n)
        return fail(why, whylen, "column %s: truncated", kblock_col_names[c]);
    mode = p[(*i)++];
    if (mode >= KM_N || (mode == KM_SDELTA && !sidx) ||
        (mode == KM_GAP && !ref))
        return fail(why, whylen, "column %s: bad mode %d", kblock_col_names[c],
                    mode);
    if (vget(p, n, i, &blen) || blen > n - *i)
        return fail(why, whylen, "column %s: bad length",
                    kblock_col_names[c]);
    end = *i + (size_t)blen;
    if (mode == KM_SDELTA)
        memset(last, 0, nlast * sizeof(*last));
    if (mode == KM_CONST) {
        if (vget(p, end, i, &x))
            goto bad;
        for (j = 0; j < m; j++)
            v[j] = x;
    } else {
        for (j = 0; j < m; j++) {
            if (vget(p, end, i, &x))
                goto bad;
            switch (mode) {
            case KM_RAW:
                v[j] = x;
                break;
            case KM_ZIG:
                v[j] = unzz(x);
                break;
            case KM_DELTA:
                v[j] = j ? v[j - 1] + unzz(x) : x;
                break;
            case KM_DOD:
                if (j == 0)
                    v[j] = x;
                else if (j == 1)
                    v[j] = v[0] + unzz(x);
                else
                    v[j] = v[j - 1] + (v[j - 1] - v[j - 2]) + unzz(x);
                break;
            case KM_GAP:
                v[j] = j ? v[j - 1] + ref[j] + unzz(x) : x;
                break;
            default:
                v[j] = last[sidx[j]] + unzz(x);
                last[sidx[j]] = v[j];
            }
        }
    }
    if (*i != end)
        goto bad;
    return 0;
bad:
    return fail(why, whylen, "column %s: body malformed at value %zu of %zu",
                kblock_col_names[c], j, m);
}

/* ---- the index ---- */

static int cmp_name(const void *a, const void *b)
{
    const kblock_name *x = a, *y = b;
    return x->name_id < y->name_id ? -1 : x->name_id > y->name_id;
}

/* The index of ev[0..n) whose shapes are shape[0..ns) used scount[] times
 * (names sorted and merged in idx->names). */
static void index_calc(const kblock_ev *ev, size_t n, const kblock_ev *shape,
                       const uint32_t *scount, size_t ns, kblock_index *idx)
{
    size_t k = 0;

    idx->n = (uint32_t)n;
    idx->seq_min = idx->seq_max = ev[0].seq;
    idx->ts_min = idx->ts_max = ev[0].ts;
    idx->dur_min = idx->dur_max = ev[0].dur;
    for (size_t i = 1; i < n; i++) {
        const kblock_ev *e = &ev[i];
        if (e->seq < idx->seq_min)
            idx->seq_min = e->seq;
        if (e->seq > idx->seq_max)
            idx->seq_max = e->seq;
        if (e->ts < idx->ts_min)
            idx->ts_min = e->ts;
        if (e->ts > idx->ts_max)
            idx->ts_max = e->ts;
        if (e->dur < idx->dur_min)
            idx->dur_min = e->dur;
        if (e->dur > idx->dur_max)
            idx->dur_max = e->dur;
    }
    for (size_t s = 0; s < ns; s++)
        if (scount[s]) {
            idx->names[k].name_id = shape[s].name_id;
            idx->names[k++].n = scount[s];
        }
    qsort(idx->names, k, sizeof(idx->names[0]), cmp_name);
    idx->nnames = 0;
    for (size_t i = 0; i < k; i++) {
        if (idx->nnames &&
            idx->names[idx->nnames - 1].name_id == idx->names[i].name_id)
            idx->names[idx->nnames - 1].n += idx->names[i].n;
        else
            idx->names[idx->nnames++] = idx->names[i];
    }
}

/* The header: magic, version, flags, the index, raw and stored payload
 * lengths.  Returns its length. */
static size_t hdr_put(unsigned char *o, unsigned flags,
                      const kblock_index *idx, size_t rawlen, size_t plen)
{
    size_t n = 0;
    int64_t prev = 0;

    o[n++] = KB_MAGIC0;
    o[n++] = KB_MAGIC1;
    o[n++] = KB_MAGIC2;
    o[n++] = KB_VERSION;
    o[n++] = (unsigned char)flags;
    n += vput(o + n, idx->n);
    n += vput(o + n, idx->seq_min);
    n += vput(o + n, idx->seq_max - idx->seq_min);
    n += vput(o + n, idx->ts_min);
    n += vput(o + n, idx->ts_max - idx->ts_min);
    n += vput(o + n, idx->dur_min);
    n += vput(o + n, idx->dur_max - idx->dur_min);
    n += vput(o + n, idx->nnames);
    for (uint32_t k = 0; k < idx->nnames; k++) {
        /* ids ascending: the first zigzagged, then the gaps */
        uint64_t id = (uint64_t)idx->names[k].name_id;
        n += vput(o + n, k ? id - (uint64_t)prev : zz(id));
        n += vput(o + n, idx->names[k].n);
        prev = idx->names[k].name_id;
    }
    n += vput(o + n, rawlen);
    n += vput(o + n, plen);
    return n;
}

/* Parses the header; *flags, *rawlen, and the payload's [*pay, +*plen). */
static int hdr_get(const unsigned char *b, size_t len, kblock_index *idx,
                   unsigned *flags, size_t *rawlen, size_t *pay, size_t *plen,
                   char *why, size_t whylen)
{
    size_t i = 5;
    uint64_t v[7], nn, rl, pl, id = 0;

    if (!b || len < 5 || b[0] != KB_MAGIC0 || b[1] != KB_MAGIC1 ||
        b[2] != KB_MAGIC2)
        return fail(why, whylen, "not a kernel block");
    if (b[3] != KB_VERSION)
        return fail(why, whylen, "kernel block version %u unknown", b[3]);
    if (b[4] & ~KB_FLAG_ZSTD)
        return fail(why, whylen, "kernel block flags 0x%x unknown", b[4]);
    *flags = b[4];
    for (int k = 0; k < 7; k++)
        if (vget(b, len, &i, &v[k]))
            return fail(why, whylen, "kernel block header truncated");
    if (v[0] < 1 || v[0] > KB_MAX_EVENTS)
        return fail(why, whylen, "kernel block of %llu events (1 to %d)",
                    (unsigned long long)v[0], KB_MAX_EVENTS);
    idx->n = (uint32_t)v[0];
    idx->seq_min = v[1];
    idx->seq_max = v[1] + v[2];
    idx->ts_min = v[3];
    idx->ts_max = v[3] + v[4];
    idx->dur_min = v[5];
    idx->dur_max = v[5] + v[6];
    if (idx->seq_max < idx->seq_min || idx->ts_max < idx->ts_min ||
        idx->dur_max < idx->dur_min)
        return fail(why, whylen, "kernel block index: a range wraps");
    if (vget(b, len, &i, &nn) || nn < 1 || nn > idx->n)
        return fail(why, whylen, "kernel block index: bad name count");
    idx->nnames = (uint32_t)nn;
    for (uint32_t k = 0; k < idx->nnames; k++) {
        uint64_t x, c;
        if (vget(b, len, &i, &x) || vget(b, len, &i, &c))
            return fail(why, whylen, "kernel block index truncated");
        /* the gaps wrap in uint64_t; the order that must hold is int64_t's */
        id = k ? id + x : unzz(x);
        if (k && (int64_t)id <= idx->names[k - 1].name_id)
            return fail(why, whylen, "kernel block index: names unsorted");
        if (c < 1 || c > idx->n)
            return fail(why, whylen, "kernel block index: bad name count");
        idx->names[k].name_id = (int64_t)id;
        idx->names[k].n = (uint32_t)c;
    }
    if (vget(b, len, &i, &rl) || vget(b, len, &i, &pl))
        return fail(why, whylen, "kernel block header truncated");
    if (rl > KB_RAW_MAX)
        return fail(why, whylen, "kernel block payload of %llu bytes (cap %zu)",
                    (unsigned long long)rl, (size_t)KB_RAW_MAX);
    if (pl != len - i)
        return fail(why, whylen,
                    "kernel block of %zu bytes, its header says %llu",
                    len, (unsigned long long)(i + pl));
    if (!(*flags & KB_FLAG_ZSTD) && pl != rl)
        return fail(why, whylen, "kernel block: stored lengths disagree");
    *rawlen = (size_t)rl;
    *pay = i;
    *plen = (size_t)pl;
    return 0;
}

/* KM_GAP's predictions for column c of m events (ref[i] for i >= 1, what
 * v[i] - v[i - 1] is expected to be), or NULL for a column without one.
 * dur, ts, adur: the columns written before it. */
static const uint64_t *gap_ref(int c, size_t m, const uint64_t *dur,
                               const uint64_t *ts, const uint64_t *adur,
                               uint64_t *ref)
{
    if (c == KC_TS) {
        /* ts[i] = ts[i-1] + dur[i-1] + the stream's idle time */
        for (size_t i = 1; i < m; i++)
            ref[i] = dur[i - 1];
        return ref;
    }
    if (c == KC_API_OFF) {
        /* the launch call starts (ts + api_off) after the previous one
         * ended, on the same host thread */
        for (size_t i = 1; i < m; i++)
            ref[i] = ts[i - 1] + adur[i - 1] - ts[i];
        return ref;
    }
    return NULL;
}

/* Keeps a decoded or written column that a later one is predicted from. */
static void gap_keep(int c, const uint64_t *v, size_t m, uint64_t *dur,
                     uint64_t *ts, uint64_t *adur)
{
    uint64_t *to = c == KC_DUR ? dur : c == KC_TS ? ts
                                   : c == KC_API_DUR ? adur : NULL;
    if (to)
        memcpy(to, v, m * sizeof(*v));
}

/* ---- encode ---- */

kblock_enc *kblock_enc_new(void)
{
    kblock_enc *e = malloc(sizeof(*e));
    if (!e)
        return NULL;
    e->z = ZSTD_createCCtx();
    if (!e->z) {
        free(e);
        return NULL;
    }
    return e;
}

void kblock_enc_free(kblock_enc *e)
{
    if (!e)
        return;
    ZSTD_freeCCtx(e->z);
    free(e);
}

static uint64_t shape_hash(const kblock_ev *s)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int c = 0; c < KC_NSHAPE; c++) {
        h ^= col_get(s, c);
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 29;
    }
    return h;
}

static int shape_eq(const kblock_ev *a, const kblock_ev *b)
{
    for (int c = 0; c < KC_NSHAPE; c++)
        if (col_get(a, c) != col_get(b, c))
            return 0;
    return 1;
}

/* Numbers the events' shapes in order of first use; returns how many. */
static size_t shapes_build(kblock_enc *e, const kblock_ev *ev, size_t n,
                           unsigned opt)
{
    size_t ns = 0;

    memset(e->hash, 0, sizeof(e->hash));
    for (size_t i = 0; i < n; i++) {
        size_t h = (size_t)shape_hash(&ev[i]) & (KB_HASH - 1);
        uint32_t s = 0;
        if (!(opt & KB_OPT_NOSHAPES))
            for (; e->hash[h]; h = (h + 1) & (KB_HASH - 1))
                if (shape_eq(&e->shape[e->hash[h] - 1], &ev[i])) {
                    s = e->hash[h];
                    break;
                }
        if (!s) {
            e->shape[ns] = ev[i];
            s = (uint32_t)++ns;
            e->scount[s - 1] = 0;
            if (!(opt & KB_OPT_NOSHAPES))
                e->hash[h] = s;
        }
        e->sidx[i] = s - 1;
        e->scount[s - 1]++;
    }
    return ns;
}

int kblock_encode(kblock_enc *e, const kblock_ev *ev, size_t n, int zlevel,
                  unsigned opt, unsigned char *out, size_t cap, size_t *len,
                  char *why, size_t whylen)
{
    size_t ns, r = 0, h, plen, zc;
    unsigned flags = 0;
    int allow = !(opt & KB_OPT_DUR_PLAIN);

    if (!e || !ev || !out || n < 1 || n > KB_MAX_EVENTS)
        return fail(why, whylen, "a block holds 1 to %d events, not %zu",
                    KB_MAX_EVENTS, n);
    ns = shapes_build(e, ev, n, opt);
    index_calc(ev, n, e->shape, e->scount, ns, &e->idx);

    r += vput(e->raw, ns);
    for (int c = 0; c < KC_NSHAPE; c++) {
        for (size_t s = 0; s < ns; s++)
            e->vals[s] = col_get(&e->shape[s], c);
        r += put_col(e->raw + r, e->vals, ns, NULL, NULL, 0, 0, NULL);
    }
    for (size_t i = 0; i < n; i++)
        e->vals[i] = e->sidx[i];
    r += put_col(e->raw + r, e->vals, n, NULL, NULL, 0, 0, NULL);
    for (int c = KC_SHAPE + 1; c < KB_NCOLS; c++) {
        for (size_t i = 0; i < n; i++)
            e->vals[i] = col_get(&ev[i], c);
        const uint64_t *ref =
            opt & KB_OPT_NOGAP
                ? NULL
                : gap_ref(c, n, e->dur, e->ts, e->adur, e->ref);
        r += put_col(e->raw + r, e->vals, n, e->sidx, e->last, ns, allow, ref);
        gap_keep(c, e->vals, n, e->dur, e->ts, e->adur);
    }

    plen = r;
    if (!(opt & KB_OPT_NOZSTD)) {
        /* the checksum is what turns a flipped payload bit into an error
         * instead of a wrong kernel that still decodes */
        ZSTD_CCtx_reset(e->z, ZSTD_reset_session_and_parameters);
        if (ZSTD_isError(
                ZSTD_CCtx_setParameter(e->z, ZSTD_c_compressionLevel, zlevel)) ||
            ZSTD_isError(ZSTD_CCtx_setParameter(e->z, ZSTD_c_checksumFlag, 1)))
            return fail(why, whylen, "zstd level %d refused", zlevel);
        zc = ZSTD_compress2(e->z, e->zbuf, sizeof(e->zbuf), e->raw, r);
        if (ZSTD_isError(zc))
            return fail(why, whylen, "zstd: %s", ZSTD_getErrorName(zc));
        /* compressed even when that does not shrink it (a block of a few
         * events): the frame's checksum is the block's only one */
        flags = KB_FLAG_ZSTD;
        plen = zc;
    }
    h = hdr_put(e->hdr, flags, &e->idx, r, plen);
    if (cap < h || cap - h < plen)
        return fail(why, whylen, "block of %zu bytes, room for %zu", h + plen,
                    cap);
    memcpy(out, e->hdr, h);
    memcpy(out + h, flags ? e->zbuf : e->raw, plen);
    *len = h + plen;
    return 0;
}

/* ---- decode ---- */

kblock_dec *kblock_dec_new(void)
{
    kblock_dec *d = malloc(sizeof(*d));
    if (!d)
        return NULL;
    d->z = ZSTD_createDCtx();
    if (!d->z) {
        free(d);
        return NULL;
    }
    return d;
}

void kblock_dec_free(kblock_dec *d)
{
    if (!d)
        return;
    ZSTD_freeDCtx(d->z);
    free(d);
}

int kblock_index_read(const unsigned char *b, size_t len, kblock_index *idx,
                      char *why, size_t whylen)
{
    unsigned flags;
    size_t rl, pay, pl;
    return hdr_get(b, len, idx, &flags, &rl, &pay, &pl, why, whylen);
}

/* The header into d->hidx and the payload, decompressed into d->raw when
 * it is compressed: *p, *plen. */
static int payload_open(kblock_dec *d, const unsigned char *b, size_t len,
                        const unsigned char **p, size_t *plen, char *why,
                        size_t whylen)
{
    unsigned flags;
    size_t rl, pay, pl, got;
    unsigned long long fcs;

    if (hdr_get(b, len, &d->hidx, &flags, &rl, &pay, &pl, why, whylen))
        return -1;
    if (!(flags & KB_FLAG_ZSTD)) {
        d->hlen = pay;
        *p = b + pay;
        *plen = pl;
        return 0;
    }
    /* the frame must say its size, and say the header's */
    fcs = ZSTD_getFrameContentSize(b + pay, pl);
    if (fcs == ZSTD_CONTENTSIZE_ERROR || fcs == ZSTD_CONTENTSIZE_UNKNOWN ||
        fcs != rl)
        return fail(why, whylen, "kernel block payload: not a zstd frame of "
                                 "%zu bytes",
                    rl);
    got = ZSTD_decompressDCtx(d->z, d->raw, rl, b + pay, pl);
    if (ZSTD_isError(got))
        return fail(why, whylen, "kernel block payload: %s",
                    ZSTD_getErrorName(got));
    if (got != rl)
        return fail(why, whylen, "kernel block payload: %zu bytes, not %zu",
                    got, rl);
    *p = d->raw;
    *plen = rl;
    d->hlen = pay;
    return 0;
}

/* Skips one column at p[*i..n). */
static int skip_col(const unsigned char *p, size_t n, size_t *i, int c,
                    char *why, size_t whylen)
{
    uint64_t blen;
    if (*i >= n || p[*i] >= KM_N)
        return fail(why, whylen, "column %s: bad mode", kblock_col_names[c]);
    (*i)++;
    if (vget(p, n, i, &blen) || blen > n - *i)
        return fail(why, whylen, "column %s: bad length",
                    kblock_col_names[c]);
    *i += (size_t)blen;
    return 0;
}

/* The shape count, after the header said n events. */
static int get_nshapes(kblock_dec *d, const unsigned char *p, size_t pl,
                       size_t *i, size_t *ns, char *why, size_t whylen)
{
    uint64_t v;
    if (vget(p, pl, i, &v) || v < 1 || v > d->hidx.n)
        return fail(why, whylen, "kernel block: bad shape count");
    *ns = (size_t)v;
    return 0;
}

/* The shape column (at p[*i]) into d->sidx, every number below ns. */
static int get_sidx(kblock_dec *d, const unsigned char *p, size_t pl,
                    size_t *i, size_t n, size_t ns, char *why, size_t whylen)
{
    if (get_col(p, pl, i, d->vals, n, NULL, NULL, 0, NULL, KC_SHAPE, why,
                whylen))
        return -1;
    for (size_t k = 0; k < n; k++) {
        if (d->vals[k] >= ns)
            return fail(why, whylen, "event %zu: shape %llu of %zu", k,
                        (unsigned long long)d->vals[k], ns);
        d->sidx[k] = (uint32_t)d->vals[k];
    }
    return 0;
}

static int index_eq(const kblock_index *a, const kblock_index *b)
{
    if (a->n != b->n || a->seq_min != b->seq_min || a->seq_max != b->seq_max ||
        a->ts_min != b->ts_min || a->ts_max != b->ts_max ||
        a->dur_min != b->dur_min || a->dur_max != b->dur_max ||
        a->nnames != b->nnames)
        return 0;
    for (uint32_t k = 0; k < a->nnames; k++)
        if (a->names[k].name_id != b->names[k].name_id ||
            a->names[k].n != b->names[k].n)
            return 0;
    return 1;
}

int kblock_decode(kblock_dec *d, const unsigned char *b, size_t len,
                  kblock_ev *out, size_t cap, size_t *n, char *why,
                  size_t whylen)
{
    const unsigned char *p;
    size_t pl, i = 0, ns = 0, m;

    if (!d || !out || !n)
        return fail(why, whylen, "kblock_decode: no decoder");
    if (payload_open(d, b, len, &p, &pl, why, whylen))
        return -1;
    m = d->hidx.n;
    if (m > cap)
        return fail(why, whylen, "kernel block of %zu events, room for %zu",
                    m, cap);
    if (get_nshapes(d, p, pl, &i, &ns, why, whylen))
        return -1;
    for (int c = 0; c < KC_NSHAPE; c++) {
        if (get_col(p, pl, &i, d->vals, ns, NULL, NULL, 0, NULL, c, why,
                    whylen))
            return -1;
        for (size_t s = 0; s < ns; s++)
            col_set(&d->shape[s], c, d->vals[s]);
    }
    if (get_sidx(d, p, pl, &i, m, ns, why, whylen))
        return -1;
    memset(d->scount, 0, ns * sizeof(d->scount[0]));
    for (size_t k = 0; k < m; k++) {
        const kblock_ev *s = &d->shape[d->sidx[k]];
        for (int c = 0; c < KC_NSHAPE; c++)
            col_set(&out[k], c, col_get(s, c));
        d->scount[d->sidx[k]]++;
    }
    for (int c = KC_SHAPE + 1; c < KB_NCOLS; c++) {
        if (get_col(p, pl, &i, d->vals, m, d->sidx, d->last, ns,
                    gap_ref(c, m, d->dur, d->ts, d->adur, d->ref), c, why,
                    whylen))
            return -1;
        gap_keep(c, d->vals, m, d->dur, d->ts, d->adur);
        for (size_t k = 0; k < m; k++)
            col_set(&out[k], c, d->vals[k]);
    }
    if (i != pl)
        return fail(why, whylen, "kernel block: %zu bytes after the columns",
                    pl - i);
    index_calc(out, m, d->shape, d->scount, ns, &d->calc);
    if (!index_eq(&d->calc, &d->hidx))
        return fail(why, whylen, "kernel block: its index disagrees with its "
                                 "events");
    *n = m;
    return 0;
}

/* One event column (KC_SEQ or KC_TS) into d->vals without the others:
 * the shape table skipped, the shape numbers read (a column may be a
 * per-shape delta), and for ts the durations it may be relative to. */
static int one_col(kblock_dec *d, const unsigned char *b, size_t len, int col,
                   char *why, size_t whylen)
{
    const unsigned char *p;
    size_t pl, i = 0, ns = 0, m;

    if (payload_open(d, b, len, &p, &pl, why, whylen))
        return -1;
    m = d->hidx.n;
    if (get_nshapes(d, p, pl, &i, &ns, why, whylen))
        return -1;
    for (int c = 0; c < KC_NSHAPE; c++)
        if (skip_col(p, pl, &i, c, why, whylen))
            return -1;
    if (get_sidx(d, p, pl, &i, m, ns, why, whylen))
        return -1;
    for (int c = KC_SHAPE + 1; c < col; c++) {
        if (c != KC_DUR || col != KC_TS) {
            if (skip_col(p, pl, &i, c, why, whylen))
                return -1;
            continue;
        }
        if (get_col(p, pl, &i, d->dur, m, d->sidx, d->last, ns, NULL, c, why,
                    whylen))
            return -1;
    }
    return get_col(p, pl, &i, d->vals, m, d->sidx, d->last, ns,
                   gap_ref(col, m, d->dur, d->ts, d->adur, d->ref), col, why,
                   whylen);
}

int kblock_seek_seq(kblock_dec *d, const unsigned char *b, size_t len,
                    uint64_t seq, size_t *pos, char *why, size_t whylen)
{
    kblock_index *h;

    *pos = KB_NOTFOUND;
    if (!d)
        return fail(why, whylen, "kblock seek: no decoder");
    h = &d->hidx;
    if (kblock_index_read(b, len, h, why, whylen))
        return -1;
    if (seq < h->seq_min || seq > h->seq_max)
        return 0;
    if (one_col(d, b, len, KC_SEQ, why, whylen))
        return -1;
    for (size_t k = 0; k < h->n; k++)
        if (d->vals[k] == seq) {
            *pos = k;
            break;
        }
    return 0;
}

int kblock_seek_ts(kblock_dec *d, const unsigned char *b, size_t len,
                   uint64_t ts, size_t *pos, char *why, size_t whylen)
{
    kblock_index *h;

    *pos = KB_NOTFOUND;
    if (!d)
        return fail(why, whylen, "kblock seek: no decoder");
    h = &d->hidx;
    if (kblock_index_read(b, len, h, why, whylen))
        return -1;
    if (ts > h->ts_max)
        return 0;
    if (one_col(d, b, len, KC_TS, why, whylen))
        return -1;
    for (size_t k = 0; k < h->n; k++)
        if (d->vals[k] >= ts) {
            *pos = k;
            break;
        }
    return 0;
}

int kblock_stats_get(kblock_dec *d, const unsigned char *b, size_t len,
                     int zlevel, kblock_stats *st, char *why, size_t whylen)
{
    const unsigned char *p;
    size_t pl, i = 0, ns = 0;
    ZSTD_CCtx *z;
    unsigned char *zb;
    size_t zcap = ZSTD_compressBound(KB_RAW_MAX);

    if (!d || !st)
        return fail(why, whylen, "kblock stats: no decoder");
    memset(st, 0, sizeof(*st));
    if (payload_open(d, b, len, &p, &pl, why, whylen))
        return -1;
    st->total = len;
    st->raw = pl;
    st->hdr = d->hlen;
    if (get_nshapes(d, p, pl, &i, &ns, why, whylen))
        return -1;
    st->nshapes = ns;
    z = ZSTD_createCCtx();
    zb = malloc(zcap);
    if (!z || !zb) {
        ZSTD_freeCCtx(z);
        free(zb);
        return fail(why, whylen, "out of memory");
    }
    for (int c = 0; c < KB_NCOLS; c++) {
        size_t at = i, zc;
        if (skip_col(p, pl, &i, c, why, whylen)) {
            ZSTD_freeCCtx(z);
            free(zb);
            return -1;
        }
        st->col_mode[c] = p[at];
        st->col_raw[c] = i - at;
        zc = ZSTD_compressCCtx(z, zb, zcap, p + at, i - at, zlevel);
        st->col_z[c] = ZSTD_isError(zc) ? 0 : zc;
    }
    ZSTD_freeCCtx(z);
    free(zb);
    return 0;
}
