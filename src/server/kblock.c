/*
 * kblock.c - encodes kernel blocks (kblock.h; the byte layout is
 * docs/server.md "Kernel blocks (format)"), and what the decoder
 * (kblock_dec.c) shares with it: the column list, the index, KM_GAP's
 * predictions.
 *
 * A block is a header holding its index, then a payload of 25 columns:
 * the 11 fields of the kernels' launch shapes (name, config, grid, block,
 * registers, shared memory, occupancy: what a launch dict fixes) once per
 * distinct shape in the block, and 14 per-event columns, the first of
 * them each event's shape number.  Every column picks the cheapest of a
 * few integer transforms (constant, plain, zigzag, delta, delta of delta,
 * delta from the same shape's previous value, difference from a
 * prediction), written as LEB128 varints; the payload is then one zstd
 * frame with its checksum.  The output is a pure function of the input:
 * encoding a decoded block gives the same bytes.
 */
#include "kblock_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

const char *const kblock_col_names[KB_NCOLS] = {
    "name",    "cfg",     "grid_x", "grid_y", "grid_z", "block_x", "block_y",
    "block_z", "regs",    "smem",   "occ",    "shape",  "seq",     "dur",
    "ts",      "dev",     "stream", "corr",   "scope",  "path",    "stack",
    "api_dur", "api_off", "flags",  "tid"
};

const size_t kb_col_off[KB_NCOLS] = {
    offsetof(kblock_ev, name_id),  offsetof(kblock_ev, cfg),
    offsetof(kblock_ev, grid[0]),  offsetof(kblock_ev, grid[1]),
    offsetof(kblock_ev, grid[2]),  offsetof(kblock_ev, block[0]),
    offsetof(kblock_ev, block[1]), offsetof(kblock_ev, block[2]),
    offsetof(kblock_ev, regs),     offsetof(kblock_ev, smem),
    offsetof(kblock_ev, occ),      0,
    offsetof(kblock_ev, seq),      offsetof(kblock_ev, dur),
    offsetof(kblock_ev, ts),       offsetof(kblock_ev, dev),
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
    kblock_index idx;
    unsigned char raw[KB_RAW_MAX];
    unsigned char zbuf[ZSTD_COMPRESSBOUND(KB_RAW_MAX)];
    unsigned char hdr[KB_HDR_MAX];
    ZSTD_CCtx *z;
};

int kb_fail(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    if (why && whylen) {
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* ---- column transforms ---- */

/* The i-th transformed value of v[0..m) under mode (m >= 1). */
static uint64_t xform(int mode, const uint64_t *v, size_t i,
                      const uint32_t *sidx, uint64_t *last, const uint64_t *ref)
{
    uint64_t d;
    switch (mode) {
    case KM_RAW: return v[i];
    case KM_ZIG: return zz(v[i]);
    case KM_DELTA: return i ? zz(v[i] - v[i - 1]) : v[0];
    case KM_DOD:
        if (i == 0)
            return v[0];
        if (i == 1)
            return zz(v[1] - v[0]);
        return zz((v[i] - v[i - 1]) - (v[i - 1] - v[i - 2]));
    case KM_GAP: return i ? zz(v[i] - v[i - 1] - ref[i]) : v[0];
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
    case KM_CONST: return n + vput(o + n, v[0]);
    case KM_RAW:
        for (size_t i = 0; i < m; i++)
            n += vput(o + n, v[i]);
        return n;
    case KM_ZIG:
        for (size_t i = 0; i < m; i++)
            n += vput(o + n, zz(v[i]));
        return n;
    case KM_SDELTA: memset(last, 0, nlast * sizeof(*last)); break;
    default: break;
    }
    for (size_t i = 0; i < m; i++)
        n += vput(o + n, xform(mode, v, i, sidx, last, ref));
    return n;
}

/* put_col for the other codecs of the store (oblock.c): no shapes, no
 * prediction; put_col stays static so that this file inlines it. */
size_t kb_put_col(unsigned char *o, const uint64_t *v, size_t m)
{
    return put_col(o, v, m, NULL, NULL, 0, 0, NULL);
}

int kb_zstd(ZSTD_CCtx *z, int zlevel, const unsigned char *src, size_t n,
            unsigned char *dst, size_t cap, size_t *len, char *why,
            size_t whylen)
{
    size_t zc;

    ZSTD_CCtx_reset(z, ZSTD_reset_session_and_parameters);
    if (ZSTD_isError(
            ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, zlevel)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 1)))
        return kb_fail(why, whylen, "zstd level %d refused", zlevel);
    zc = ZSTD_compress2(z, dst, cap, src, n);
    if (ZSTD_isError(zc))
        return kb_fail(why, whylen, "zstd: %s", ZSTD_getErrorName(zc));
    *len = zc;
    return 0;
}

/* ---- the index ---- */

static int cmp_name(const void *a, const void *b)
{
    const kblock_name *x = a, *y = b;
    return x->name_id < y->name_id ? -1 : x->name_id > y->name_id;
}

/* The index of ev[0..n) whose shapes are shape[0..ns) used scount[] times
 * (names sorted and merged in idx->names). */
void kb_index_calc(const kblock_ev *ev, size_t n, const kblock_ev *shape,
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
static size_t hdr_put(unsigned char *o, unsigned flags, const kblock_index *idx,
                      size_t rawlen, size_t plen)
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

/* KM_GAP's predictions for column c of m events (ref[i] for i >= 1, what
 * v[i] - v[i - 1] is expected to be), or NULL for a column without one.
 * dur, ts, adur: the columns written before it. */
const uint64_t *kb_gap_ref(int c, size_t m, const uint64_t *dur,
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
void kb_gap_keep(int c, const uint64_t *v, size_t m, uint64_t *dur,
                 uint64_t *ts, uint64_t *adur)
{
    uint64_t *to = c == KC_DUR       ? dur
                   : c == KC_TS      ? ts
                   : c == KC_API_DUR ? adur
                                     : NULL;
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
        return kb_fail(why, whylen, "a block holds 1 to %d events, not %zu",
                       KB_MAX_EVENTS, n);
    ns = shapes_build(e, ev, n, opt);
    kb_index_calc(ev, n, e->shape, e->scount, ns, &e->idx);

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
                : kb_gap_ref(c, n, e->dur, e->ts, e->adur, e->ref);
        r += put_col(e->raw + r, e->vals, n, e->sidx, e->last, ns, allow, ref);
        kb_gap_keep(c, e->vals, n, e->dur, e->ts, e->adur);
    }

    plen = r;
    if (!(opt & KB_OPT_NOZSTD)) {
        /* the checksum is what turns a flipped payload bit into an error
         * instead of a wrong kernel that still decodes */
        if (kb_zstd(e->z, zlevel, e->raw, r, e->zbuf, sizeof(e->zbuf), &zc, why,
                    whylen))
            return -1;
        /* compressed even when that does not shrink it (a block of a few
         * events): the frame's checksum is the block's only one */
        flags = KB_FLAG_ZSTD;
        plen = zc;
    }
    h = hdr_put(e->hdr, flags, &e->idx, r, plen);
    if (cap < h || cap - h < plen)
        return kb_fail(why, whylen, "block of %zu bytes, room for %zu",
                       h + plen, cap);
    memcpy(out, e->hdr, h);
    memcpy(out + h, flags ? e->zbuf : e->raw, plen);
    *len = h + plen;
    return 0;
}
