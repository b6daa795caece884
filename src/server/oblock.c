/*
 * oblock.c - encodes and decodes op blocks (oblock.h; the byte layout is
 * docs/server.md "Op blocks (format)").
 *
 * A block is a header holding its index, then a payload: the table of
 * the block's distinct kinds (in order of first use), then 16 columns of
 * n values, each in the cheapest of the kernel codec's plain transforms
 * (kb_put_col: constant, plain, zigzag, delta, delta of delta), the kind
 * column as 0 (none) or 1 + its number in the table; the payload is one
 * zstd frame with its checksum.  The decoder trusts nothing: every count
 * is checked against its cap before it sizes anything and the index must
 * equal what the ops give, so a damaged block is an error, not wrong ops.
 */
#include "oblock.h"

#include "kblock_int.h"

#include <stdlib.h>
#include <string.h>

#define OB_MAGIC0 'G'
#define OB_MAGIC1 'O'
#define OB_MAGIC2 'B'
#define OB_VERSION 1
#define OB_FLAG_ZSTD 1u

/* The columns in their order in the payload; OC_KIND's values are kind
 * numbers, the others a field of oblock_ev (ob_off). */
enum {
    OC_SEQ,
    OC_TYPE,
    OC_KIND,
    OC_TS,
    OC_DUR,
    OC_DEV,
    OC_STREAM,
    OC_CORR,
    OC_BYTES,
    OC_SCOPE,
    OC_PATH,
    OC_STACK,
    OC_API_OFF,
    OC_API_DUR,
    OC_FLAGS,
    OC_TID
};
_Static_assert(OC_TID + 1 == OB_NCOLS, "oblock.h counts the columns");

static const char *const ob_names[OB_NCOLS] = {
    "op seq",     "op type",    "op kind",  "op ts",    "op dur",  "op dev",
    "op stream",  "op corr",    "op bytes", "op scope", "op path", "op stack",
    "op api_off", "op api_dur", "op flags", "op tid"
};

static const size_t ob_off[OB_NCOLS] = { offsetof(oblock_ev, seq),
                                         offsetof(oblock_ev, type),
                                         0,
                                         offsetof(oblock_ev, ts),
                                         offsetof(oblock_ev, dur),
                                         offsetof(oblock_ev, dev),
                                         offsetof(oblock_ev, stream),
                                         offsetof(oblock_ev, corr),
                                         offsetof(oblock_ev, bytes),
                                         offsetof(oblock_ev, scope),
                                         offsetof(oblock_ev, path),
                                         offsetof(oblock_ev, stack),
                                         offsetof(oblock_ev, api_off),
                                         offsetof(oblock_ev, api_dur),
                                         offsetof(oblock_ev, flags),
                                         offsetof(oblock_ev, tid) };

struct oblock_enc {
    uint64_t vals[OB_MAX_EVENTS], kref[OB_MAX_EVENTS];
    uint8_t klen[OB_MAX_KINDS];
    char kinds[OB_MAX_KINDS][OB_KIND_MAX];
    unsigned char raw[OB_RAW_MAX];
    unsigned char zbuf[ZSTD_COMPRESSBOUND(OB_RAW_MAX)];
    ZSTD_CCtx *z;
};

struct oblock_dec {
    uint64_t vals[OB_MAX_EVENTS];
    uint8_t klen[OB_MAX_KINDS];
    char kinds[OB_MAX_KINDS][OB_KIND_MAX];
    unsigned char raw[OB_RAW_MAX];
    ZSTD_DCtx *z;
};

_Static_assert(OB_BLOCK_MAX >= OB_HDR_MAX + ZSTD_COMPRESSBOUND(OB_RAW_MAX),
               "OB_BLOCK_MAX holds the largest frame");

static uint64_t fld_get(const oblock_ev *e, int c)
{
    uint64_t v;
    memcpy(&v, (const char *)e + ob_off[c], sizeof(v));
    return v;
}

static void fld_set(oblock_ev *e, int c, uint64_t v)
{
    memcpy((char *)e + ob_off[c], &v, sizeof(v));
}

static void index_calc(const oblock_ev *ev, size_t n, oblock_index *idx)
{
    idx->n = (uint32_t)n;
    idx->seq_min = idx->seq_max = ev[0].seq;
    idx->ts_min = idx->ts_max = ev[0].ts;
    idx->dur_max = ev[0].dur;
    for (size_t i = 1; i < n; i++) {
        if (ev[i].seq < idx->seq_min)
            idx->seq_min = ev[i].seq;
        if (ev[i].seq > idx->seq_max)
            idx->seq_max = ev[i].seq;
        if (ev[i].ts < idx->ts_min)
            idx->ts_min = ev[i].ts;
        if (ev[i].ts > idx->ts_max)
            idx->ts_max = ev[i].ts;
        if (ev[i].dur > idx->dur_max)
            idx->dur_max = ev[i].dur;
    }
}

/* ---- encode ---- */

oblock_enc *oblock_enc_new(void)
{
    oblock_enc *e = malloc(sizeof(*e));
    if (!e)
        return NULL;
    if (!(e->z = ZSTD_createCCtx())) {
        free(e);
        return NULL;
    }
    return e;
}

void oblock_enc_free(oblock_enc *e)
{
    if (!e)
        return;
    ZSTD_freeCCtx(e->z);
    free(e);
}

/* The kind numbers of ev[0..n) into e->kref (0: none), the table into
 * e->kinds in order of first use; how many, or -1 past OB_MAX_KINDS.  A
 * linear search: a block has a handful. */
static int kinds_build(oblock_enc *e, const oblock_ev *ev, size_t n)
{
    int nk = 0, k;

    for (size_t i = 0; i < n; i++) {
        if (ev[i].kind_len < 0) {
            e->kref[i] = 0;
            continue;
        }
        for (k = 0; k < nk; k++)
            if (e->klen[k] == ev[i].kind_len &&
                !memcmp(e->kinds[k], ev[i].kind, (size_t)ev[i].kind_len))
                break;
        if (k == nk) {
            if (nk == OB_MAX_KINDS)
                return -1;
            e->klen[nk] = (uint8_t)ev[i].kind_len;
            memcpy(e->kinds[nk++], ev[i].kind, (size_t)ev[i].kind_len);
        }
        e->kref[i] = (uint64_t)k + 1;
    }
    return nk;
}

int oblock_encode(oblock_enc *e, const oblock_ev *ev, size_t n, int zlevel,
                  unsigned char *out, size_t cap, size_t *len, char *why,
                  size_t whylen)
{
    unsigned char hdr[OB_HDR_MAX];
    oblock_index idx;
    size_t r = 0, h = 0, zc;
    int nk;

    if (!e || !ev || !out || n < 1 || n > OB_MAX_EVENTS)
        return kb_fail(why, whylen, "an op block holds 1 to %d ops, not %zu",
                       OB_MAX_EVENTS, n);
    for (size_t i = 0; i < n; i++)
        if (ev[i].kind_len > OB_KIND_MAX)
            return kb_fail(why, whylen, "op %zu: kind of %d bytes (cap %d)", i,
                           ev[i].kind_len, OB_KIND_MAX);
    if ((nk = kinds_build(e, ev, n)) < 0)
        return kb_fail(why, whylen, "more than %d kinds in one op block",
                       OB_MAX_KINDS);
    /* the count again, under the checksum: a constant column decodes to
     * any count, so a damaged header's would otherwise go unseen */
    r += vput(e->raw, n);
    r += vput(e->raw + r, (uint64_t)nk);
    for (int k = 0; k < nk; k++) {
        e->raw[r++] = e->klen[k];
        memcpy(e->raw + r, e->kinds[k], e->klen[k]);
        r += e->klen[k];
    }
    for (int c = 0; c < OB_NCOLS; c++) {
        for (size_t i = 0; i < n; i++)
            e->vals[i] = c == OC_KIND ? e->kref[i] : fld_get(&ev[i], c);
        r += kb_put_col(e->raw + r, e->vals, n);
    }
    /* compressed even when that does not shrink it: the frame's checksum
     * is the block's only one */
    if (kb_zstd(e->z, zlevel, e->raw, r, e->zbuf, sizeof(e->zbuf), &zc, why,
                whylen))
        return -1;
    index_calc(ev, n, &idx);
    hdr[h++] = OB_MAGIC0;
    hdr[h++] = OB_MAGIC1;
    hdr[h++] = OB_MAGIC2;
    hdr[h++] = OB_VERSION;
    hdr[h++] = OB_FLAG_ZSTD;
    h += vput(hdr + h, idx.n);
    h += vput(hdr + h, idx.seq_min);
    h += vput(hdr + h, idx.seq_max - idx.seq_min);
    h += vput(hdr + h, idx.ts_min);
    h += vput(hdr + h, idx.ts_max - idx.ts_min);
    h += vput(hdr + h, idx.dur_max);
    h += vput(hdr + h, r);
    h += vput(hdr + h, zc);
    if (cap < h || cap - h < zc)
        return kb_fail(why, whylen, "op block of %zu bytes, room for %zu",
                       h + zc, cap);
    memcpy(out, hdr, h);
    memcpy(out + h, e->zbuf, zc);
    *len = h + zc;
    return 0;
}

/* ---- decode ---- */

oblock_dec *oblock_dec_new(void)
{
    oblock_dec *d = malloc(sizeof(*d));
    if (!d)
        return NULL;
    if (!(d->z = ZSTD_createDCtx())) {
        free(d);
        return NULL;
    }
    return d;
}

void oblock_dec_free(oblock_dec *d)
{
    if (!d)
        return;
    ZSTD_freeDCtx(d->z);
    free(d);
}

/* Parses the header: the index, the raw payload's length and where the
 * stored one starts (it runs to the end of the block). */
static int hdr_get(const unsigned char *b, size_t len, oblock_index *idx,
                   size_t *rawlen, size_t *pay, char *why, size_t whylen)
{
    uint64_t v[8];
    size_t i = 5;

    if (!b || len < 5 || b[0] != OB_MAGIC0 || b[1] != OB_MAGIC1 ||
        b[2] != OB_MAGIC2)
        return kb_fail(why, whylen, "not an op block");
    if (b[3] != OB_VERSION)
        return kb_fail(why, whylen, "op block version %u unknown", b[3]);
    if (b[4] != OB_FLAG_ZSTD)
        return kb_fail(why, whylen, "op block flags 0x%x unknown", b[4]);
    for (int k = 0; k < 8; k++)
        if (vget(b, len, &i, &v[k]))
            return kb_fail(why, whylen, "op block header truncated");
    if (v[0] < 1 || v[0] > OB_MAX_EVENTS)
        return kb_fail(why, whylen, "op block of %llu ops (1 to %d)",
                       (unsigned long long)v[0], OB_MAX_EVENTS);
    idx->n = (uint32_t)v[0];
    idx->seq_min = v[1];
    idx->seq_max = v[1] + v[2];
    idx->ts_min = v[3];
    idx->ts_max = v[3] + v[4];
    idx->dur_max = v[5];
    if (idx->seq_max < idx->seq_min || idx->ts_max < idx->ts_min)
        return kb_fail(why, whylen, "op block index: a range wraps");
    if (v[6] > OB_RAW_MAX)
        return kb_fail(why, whylen, "op block payload of %llu bytes (cap %zu)",
                       (unsigned long long)v[6], (size_t)OB_RAW_MAX);
    if (v[7] != len - i)
        return kb_fail(why, whylen,
                       "op block of %zu bytes, its header says %llu", len,
                       (unsigned long long)(i + v[7]));
    *rawlen = (size_t)v[6];
    *pay = i;
    return 0;
}

int oblock_index_read(const unsigned char *b, size_t len, oblock_index *idx,
                      char *why, size_t whylen)
{
    size_t rl, pay;
    return hdr_get(b, len, idx, &rl, &pay, why, whylen);
}

/* The payload's count (the header's, n) and its kind table at
 * p[*i..pl) into d. */
static int kinds_get(oblock_dec *d, const unsigned char *p, size_t pl,
                     size_t *i, size_t n, uint64_t *nk, char *why,
                     size_t whylen)
{
    uint64_t pn;

    if (vget(p, pl, i, &pn) || pn != n)
        return kb_fail(why, whylen, "op block: payload and header disagree");
    if (vget(p, pl, i, nk) || *nk > OB_MAX_KINDS || *nk > n)
        return kb_fail(why, whylen, "op block: bad kind count");
    for (uint64_t k = 0; k < *nk; k++) {
        if (*i >= pl || p[*i] > OB_KIND_MAX || p[*i] > pl - *i - 1)
            return kb_fail(why, whylen, "op block: kind %llu malformed",
                           (unsigned long long)k);
        d->klen[k] = p[(*i)++];
        memcpy(d->kinds[k], p + *i, d->klen[k]);
        *i += d->klen[k];
    }
    return 0;
}

int oblock_decode(oblock_dec *d, const unsigned char *b, size_t len,
                  oblock_ev *out, size_t cap, size_t *n, char *why,
                  size_t whylen)
{
    /* zeroed: gcc -O3 (Release) cannot see hdr_get sets them on success */
    oblock_index hidx = { 0 }, calc;
    size_t rl = 0, pay = 0, i = 0, m;
    uint64_t nk = 0;

    if (hdr_get(b, len, &hidx, &rl, &pay, why, whylen))
        return -1;
    m = hidx.n;
    if (m > cap)
        return kb_fail(why, whylen, "op block of %zu ops, room for %zu", m,
                       cap);
    if (kb_unzstd(d->z, b + pay, len - pay, d->raw, rl, "op block", why,
                  whylen) ||
        kinds_get(d, d->raw, rl, &i, m, &nk, why, whylen))
        return -1;
    for (int c = 0; c < OB_NCOLS; c++) {
        if (kb_get_col(d->raw, rl, &i, d->vals, m, ob_names[c], why, whylen))
            return -1;
        for (size_t j = 0; j < m; j++) {
            oblock_ev *e = &out[j];
            if (c != OC_KIND) {
                fld_set(e, c, d->vals[j]);
                continue;
            }
            if (d->vals[j] > nk)
                return kb_fail(why, whylen, "op %zu: kind %llu of %llu", j,
                               (unsigned long long)d->vals[j],
                               (unsigned long long)nk);
            if (!d->vals[j]) {
                e->kind_len = -1;
                e->kind[0] = '\0';
                continue;
            }
            e->kind_len = d->klen[d->vals[j] - 1];
            memcpy(e->kind, d->kinds[d->vals[j] - 1], (size_t)e->kind_len);
            e->kind[e->kind_len] = '\0';
        }
    }
    if (i != rl)
        return kb_fail(why, whylen, "op block: %zu bytes after the columns",
                       rl - i);
    index_calc(out, m, &calc);
    if (calc.seq_min != hidx.seq_min || calc.seq_max != hidx.seq_max ||
        calc.ts_min != hidx.ts_min || calc.ts_max != hidx.ts_max ||
        calc.dur_max != hidx.dur_max)
        return kb_fail(why, whylen, "op block: index disagrees with its ops");
    *n = m;
    return 0;
}
