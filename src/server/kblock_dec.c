/*
 * kblock_dec.c - decodes kernel blocks (kblock.h), reads their index and
 * seeks in them.
 *
 * The decoder trusts nothing: every varint is bounded and minimal, every
 * count is checked against its cap before it sizes anything, the zstd
 * frame must carry its size and checksum, and the header's index must
 * equal what the decoded events give, so a damaged block is an error
 * rather than wrong kernels.
 */
#include "kblock_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

struct kblock_dec {
    kblock_ev shape[KB_MAX_EVENTS];
    uint32_t sidx[KB_MAX_EVENTS];
    uint64_t vals[KB_MAX_EVENTS], last[KB_MAX_EVENTS];
    /* columns KM_GAP predicts from, and its predictions */
    uint64_t dur[KB_MAX_EVENTS], ts[KB_MAX_EVENTS], adur[KB_MAX_EVENTS];
    uint64_t ref[KB_MAX_EVENTS];
    uint64_t seq[KB_MAX_EVENTS];
    /* the columns (bits of KC_*) of the open payload read whole into the
     * arrays above (shape numbers: sidx; shape columns: shape) - what
     * kblock_decode_rows takes as they are instead of reading again */
    unsigned have;
    uint32_t scount[KB_MAX_EVENTS];
    kblock_index hidx, calc; /* the header's, and the events' */
    size_t hlen;             /* the last block's header bytes */
    /* what kblock_decode_rows and kblock_decode_cols_again read: the
     * payload the last kblock_decode_cols or kblock_name_dur opened
     * (d->raw, or the caller's block when it was stored uncompressed),
     * its events, shapes and where its columns start; opened 0 once any
     * other call reuses d */
    const unsigned char *op;
    size_t opl, om, ons, oi;
    int opened;
    unsigned char raw[KB_RAW_MAX];
    ZSTD_DCtx *z;
};

/*
 * Reads one column of m values from p[*i..n) into v; sidx/last for
 * KM_SDELTA (NULL: not allowed here).  Only its first stop values (stop
 * <= m) are read: *i then jumps to the column's end, which is checked
 * only when every value was.  0, or -1 with why.
 */
static int get_col(const unsigned char *p, size_t n, size_t *io, uint64_t *v,
                   size_t m, size_t stop, const uint32_t *sidx, uint64_t *last,
                   size_t nlast, const uint64_t *ref, const char *cname,
                   char *why, size_t whylen)
{
    uint64_t blen, x;
    /* the position in a local: size_t and uint64_t are one type, so
     * through io every store to v[] would reload and store it again */
    size_t end, j = 0, at = *io, *i = &at;
    int mode, cut = stop < m;

    if (*i >= n)
        return kb_fail(why, whylen, "column %s: truncated", cname);
    mode = p[(*i)++];
    if (mode >= KM_N || (mode == KM_SDELTA && !sidx) ||
        (mode == KM_GAP && !ref))
        return kb_fail(why, whylen, "column %s: bad mode %d", cname, mode);
    if (vget(p, n, i, &blen) || blen > n - *i)
        return kb_fail(why, whylen, "column %s: bad length", cname);
    end = *i + (size_t)blen;
    if (cut)
        m = stop; /* the rest of the column is skipped unread */
    if (mode == KM_SDELTA)
        memset(last, 0, nlast * sizeof(*last));
    if (mode == KM_CONST) {
        if (vget(p, end, i, &x))
            goto bad;
        for (j = 0; j < m; j++)
            v[j] = x;
    } else {
        /* one loop per mode, the mode's first values apart: the switch
         * out of the inner loop (the decoder's hottest) */
        size_t first = mode == KM_DOD ? 2 : mode == KM_SDELTA ? 0 : 1;
        for (j = 0; j < m && j < first; j++) {
            if (vget(p, end, i, &x))
                goto bad;
            if (mode == KM_RAW || j == 0)
                v[j] = mode == KM_ZIG ? unzz(x) : x;
            else /* KM_DOD's first difference */
                v[j] = v[0] + unzz(x);
        }
        switch (mode) {
        case KM_RAW:
            for (; j < m; j++)
                if (vget(p, end, i, &v[j]))
                    goto bad;
            break;
        case KM_ZIG:
            for (; j < m; j++) {
                if (vget(p, end, i, &x))
                    goto bad;
                v[j] = unzz(x);
            }
            break;
        case KM_DELTA:
            for (; j < m; j++) {
                if (vget(p, end, i, &x))
                    goto bad;
                v[j] = v[j - 1] + unzz(x);
            }
            break;
        case KM_DOD:
            for (; j < m; j++) {
                if (vget(p, end, i, &x))
                    goto bad;
                v[j] = v[j - 1] + (v[j - 1] - v[j - 2]) + unzz(x);
            }
            break;
        case KM_GAP:
            for (; j < m; j++) {
                if (vget(p, end, i, &x))
                    goto bad;
                v[j] = v[j - 1] + ref[j] + unzz(x);
            }
            break;
        default: /* KM_SDELTA */
            for (; j < m; j++) {
                if (vget(p, end, i, &x))
                    goto bad;
                v[j] = last[sidx[j]] + unzz(x);
                last[sidx[j]] = v[j];
            }
        }
    }
    /* a column read whole must end where its length says */
    if (*i != end && !cut)
        goto bad;
    *io = end;
    return 0;
bad:
    return kb_fail(why, whylen, "column %s: body malformed at value %zu of %zu",
                   cname, j, m);
}

/* get_col for the other codecs of the store (oblock.c); get_col itself
 * stays static so that this file's decoder inlines it. */
int kb_get_col(const unsigned char *p, size_t n, size_t *i, uint64_t *v,
               size_t m, const char *cname, char *why, size_t whylen)
{
    return get_col(p, n, i, v, m, m, NULL, NULL, 0, NULL, cname, why, whylen);
}

int kb_unzstd(ZSTD_DCtx *z, const unsigned char *src, size_t sl,
              unsigned char *dst, size_t rl, const char *what, char *why,
              size_t whylen)
{
    unsigned long long fcs = ZSTD_getFrameContentSize(src, sl);
    size_t got;

    /* the frame must say its size, and say the header's */
    if (fcs == ZSTD_CONTENTSIZE_ERROR || fcs == ZSTD_CONTENTSIZE_UNKNOWN ||
        fcs != rl)
        return kb_fail(why, whylen, "%s payload: not a zstd frame of %zu bytes",
                       what, rl);
    got = ZSTD_decompressDCtx(z, dst, rl, src, sl);
    if (ZSTD_isError(got))
        return kb_fail(why, whylen, "%s payload: %s", what,
                       ZSTD_getErrorName(got));
    if (got != rl)
        return kb_fail(why, whylen, "%s payload: %zu bytes, not %zu", what, got,
                       rl);
    return 0;
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
        return kb_fail(why, whylen, "not a kernel block");
    if (b[3] != KB_VERSION)
        return kb_fail(why, whylen, "kernel block version %u unknown", b[3]);
    if (b[4] & ~KB_FLAG_ZSTD)
        return kb_fail(why, whylen, "kernel block flags 0x%x unknown", b[4]);
    *flags = b[4];
    for (int k = 0; k < 7; k++)
        if (vget(b, len, &i, &v[k]))
            return kb_fail(why, whylen, "kernel block header truncated");
    if (v[0] < 1 || v[0] > KB_MAX_EVENTS)
        return kb_fail(why, whylen, "kernel block of %llu events (1 to %d)",
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
        return kb_fail(why, whylen, "kernel block index: a range wraps");
    if (vget(b, len, &i, &nn) || nn < 1 || nn > idx->n)
        return kb_fail(why, whylen, "kernel block index: bad name count");
    idx->nnames = (uint32_t)nn;
    for (uint32_t k = 0; k < idx->nnames; k++) {
        uint64_t x, c;
        if (vget(b, len, &i, &x) || vget(b, len, &i, &c))
            return kb_fail(why, whylen, "kernel block index truncated");
        /* the gaps wrap in uint64_t; the order that must hold is int64_t's */
        id = k ? id + x : unzz(x);
        if (k && (int64_t)id <= idx->names[k - 1].name_id)
            return kb_fail(why, whylen, "kernel block index: names unsorted");
        if (c < 1 || c > idx->n)
            return kb_fail(why, whylen, "kernel block index: bad name count");
        idx->names[k].name_id = (int64_t)id;
        idx->names[k].n = (uint32_t)c;
    }
    if (vget(b, len, &i, &rl) || vget(b, len, &i, &pl))
        return kb_fail(why, whylen, "kernel block header truncated");
    if (rl > KB_RAW_MAX)
        return kb_fail(why, whylen,
                       "kernel block payload of %llu bytes (cap %zu)",
                       (unsigned long long)rl, (size_t)KB_RAW_MAX);
    if (pl != len - i)
        return kb_fail(why, whylen,
                       "kernel block of %zu bytes, its header says %llu", len,
                       (unsigned long long)(i + pl));
    if (!(*flags & KB_FLAG_ZSTD) && pl != rl)
        return kb_fail(why, whylen, "kernel block: stored lengths disagree");
    *rawlen = (size_t)rl;
    *pay = i;
    *plen = (size_t)pl;
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
    size_t rl, pay, pl;

    d->opened = 0; /* d->raw and d->hidx are about to change */
    d->have = 0;
    if (hdr_get(b, len, &d->hidx, &flags, &rl, &pay, &pl, why, whylen))
        return -1;
    if (!(flags & KB_FLAG_ZSTD)) {
        d->hlen = pay;
        *p = b + pay;
        *plen = pl;
        return 0;
    }
    if (kb_unzstd(d->z, b + pay, pl, d->raw, rl, "kernel block", why, whylen))
        return -1;
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
        return kb_fail(why, whylen, "column %s: bad mode", kblock_col_names[c]);
    (*i)++;
    if (vget(p, n, i, &blen) || blen > n - *i)
        return kb_fail(why, whylen, "column %s: bad length",
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
        return kb_fail(why, whylen, "kernel block: bad shape count");
    *ns = (size_t)v;
    return 0;
}

/* The shape column (at p[*i]) into d->sidx, every number below ns; its
 * first stop of n values only. */
static int get_sidx(kblock_dec *d, const unsigned char *p, size_t pl, size_t *i,
                    size_t n, size_t stop, size_t ns, char *why, size_t whylen)
{
    if (get_col(p, pl, i, d->vals, n, stop, NULL, NULL, 0, NULL,
                kblock_col_names[KC_SHAPE], why, whylen))
        return -1;
    for (size_t k = 0; k < n && k < stop; k++) {
        if (d->vals[k] >= ns)
            return kb_fail(why, whylen, "event %zu: shape %llu of %zu", k,
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

/* What every reader of a block does first: the payload opened (*p, *pl),
 * its event count checked against cap (SIZE_MAX: any), and the shape count
 * read (*ns), with *i just after it. */
static int body_open(kblock_dec *d, const unsigned char *b, size_t len,
                     size_t cap, const unsigned char **p, size_t *pl, size_t *i,
                     size_t *ns, char *why, size_t whylen)
{
    if (payload_open(d, b, len, p, pl, why, whylen))
        return -1;
    if (d->hidx.n > cap)
        return kb_fail(why, whylen, "kernel block of %zu events, room for %zu",
                       (size_t)d->hidx.n, cap);
    *i = 0;
    return get_nshapes(d, *p, *pl, i, ns, why, whylen);
}

/* The columns a wanted set needs read: KM_GAP predicts ts from dur and
 * api_off from ts and api_dur (whether it did is known only on reading
 * the mode byte), and every column needs the shape numbers (the shape
 * column, KC_SHAPE's bit): a shape field is given per event through
 * them, an event column may be a per-shape delta. */
static unsigned cols_needed(unsigned want)
{
    if (want & (1u << KC_API_OFF))
        want |= 1u << KC_TS | 1u << KC_API_DUR;
    if (want & (1u << KC_TS))
        want |= 1u << KC_DUR;
    if (want)
        want |= 1u << KC_SHAPE;
    return want;
}

/*
 * The column walk over an opened payload p[*pi..pl) of m events and ns
 * shapes: the columns of want (bits of KC_*) read, the others skipped,
 * stopping after the last one needed.  Each event column read ends in
 * d->vals (the last one read stays there), dur, ts and api_dur also in
 * d->dur, d->ts, d->adur; the shapes' columns in d->shape[0..ns) and each
 * event's shape number in d->sidx.  With out, the wanted fields are set
 * too: of out[0..m), or with rows (k positions, ascending, each < m) of
 * out[j] = the event at rows[j] only, every event column then read only
 * as far as the last of them.  *pi: after the last column read.
 */
static int walk_body(kblock_dec *d, const unsigned char *p, size_t pl,
                     size_t *pi, size_t m, size_t ns, unsigned want,
                     kblock_ev *out, const uint32_t *rows, size_t k, char *why,
                     size_t whylen)
{
    size_t i = *pi, stop = rows ? (k ? rows[k - 1] + 1 : 0) : m;
    unsigned need = cols_needed(want);

    for (int c = 0; c < KB_NCOLS && (need >> c); c++) {
        const uint32_t *sidx = c > KC_SHAPE ? d->sidx : NULL;
        size_t nv = c < KC_SHAPE ? ns : m;
        const uint64_t *v = d->vals;
        if (!(need & (1u << c))) {
            if (skip_col(p, pl, &i, c, why, whylen))
                return -1;
            continue;
        }
        if (rows && (d->have & (1u << c))) {
            /* read whole by the decode before: taken as it is */
            if (skip_col(p, pl, &i, c, why, whylen))
                return -1;
            v = c == KC_SEQ   ? d->seq
                : c == KC_DUR ? d->dur
                : c == KC_TS  ? d->ts
                              : d->adur;
        } else if (c == KC_SHAPE) {
            if (get_sidx(d, p, pl, &i, m, stop, ns, why, whylen))
                return -1;
        } else {
            if (get_col(p, pl, &i, d->vals, nv, c < KC_SHAPE ? ns : stop, sidx,
                        d->last, ns,
                        kb_gap_ref(c, stop, d->dur, d->ts, d->adur, d->ref),
                        kblock_col_names[c], why, whylen))
                return -1;
            if (c < KC_SHAPE)
                for (size_t s = 0; s < ns; s++)
                    col_set(&d->shape[s], c, d->vals[s]);
            else
                kb_gap_keep(c, d->vals, stop, d->dur, d->ts, d->adur);
            if (c == KC_SEQ && !rows)
                memcpy(d->seq, d->vals, m * sizeof(*d->seq));
        }
        /* kept whole: the shape numbers, the shape columns, and the event
         * columns with an array of their own */
        if (!rows && (c <= KC_SHAPE || c == KC_SEQ || c == KC_DUR ||
                      c == KC_TS || c == KC_API_DUR))
            d->have |= 1u << c;
        if (c <= KC_SHAPE || !out || !(want & (1u << c)))
            continue;
        if (rows)
            for (size_t j = 0; j < k; j++)
                col_set(&out[j], c, v[rows[j]]);
        else
            for (size_t j = 0; j < m; j++)
                col_set(&out[j], c, v[j]);
    }
    if (out && (want & ((1u << KC_SHAPE) - 1))) {
        size_t nout = rows ? k : m;
        for (size_t j = 0; j < nout; j++) {
            const kblock_ev *s = &d->shape[d->sidx[rows ? rows[j] : j]];
            for (int c = 0; c < KC_NSHAPE; c++)
                if (want & (1u << c))
                    col_set(&out[j], c, col_get(s, c));
        }
    }
    *pi = i;
    return 0;
}

/* The block opened (body_open) and walked whole (walk_body, every event):
 * *pp, *ppl the payload, *pi after the last column read, *pns shapes. */
static int walk(kblock_dec *d, const unsigned char *b, size_t len,
                unsigned want, kblock_ev *out, size_t cap,
                const unsigned char **pp, size_t *ppl, size_t *pi, size_t *pns,
                char *why, size_t whylen)
{
    if (body_open(d, b, len, cap, pp, ppl, pi, pns, why, whylen))
        return -1;
    return walk_body(d, *pp, *ppl, pi, d->hidx.n, *pns, want, out, NULL, 0, why,
                     whylen);
}

/* The block just walked stays open for kblock_decode_rows and
 * kblock_decode_cols_again: its decompressed body, rows, names and where
 * its columns start, so a second read decompresses nothing. */
static void keep_open(kblock_dec *d, const unsigned char *p, size_t pl,
                      size_t m, size_t ns, size_t i0)
{
    d->op = p;
    d->opl = pl;
    d->om = m;
    d->ons = ns;
    d->oi = i0;
    d->opened = 1;
}

int kblock_decode_cols(kblock_dec *d, const unsigned char *b, size_t len,
                       unsigned cols, kblock_ev *out, size_t cap, size_t *n,
                       char *why, size_t whylen)
{
    const unsigned char *p;
    size_t pl, i = 0, i0, ns = 0, m;

    if (!d || !out || !n)
        return kb_fail(why, whylen, "kblock_decode: no decoder");
    if (cols & ~(unsigned)KB_C_ALL)
        return kb_fail(why, whylen, "kblock_decode: columns 0x%x unknown",
                       cols);
    if (body_open(d, b, len, cap, &p, &pl, &i, &ns, why, whylen))
        return -1;
    i0 = i;
    m = d->hidx.n;
    if (walk_body(d, p, pl, &i, m, ns, cols, out, NULL, 0, why, whylen))
        return -1;
    if (cols == KB_C_ALL) {
        if (i != pl)
            return kb_fail(why, whylen,
                           "kernel block: %zu bytes after the columns", pl - i);
        memset(d->scount, 0, ns * sizeof(d->scount[0]));
        for (size_t k = 0; k < m; k++)
            d->scount[d->sidx[k]]++;
        kb_index_calc(out, m, d->shape, d->scount, ns, &d->calc);
        if (!index_eq(&d->calc, &d->hidx))
            return kb_fail(why, whylen,
                           "kernel block: its index disagrees with its "
                           "events");
    }
    keep_open(d, p, pl, m, ns, i0);
    *n = m;
    return 0;
}

int kblock_decode_rows(kblock_dec *d, unsigned cols, const uint32_t *rows,
                       size_t k, kblock_ev *out, char *why, size_t whylen)
{
    size_t i;

    if (!d || (k && (!rows || !out)))
        return kb_fail(why, whylen, "kblock_decode_rows: no decoder");
    if (!d->opened)
        return kb_fail(why, whylen,
                       "kblock_decode_rows: no block decoded before");
    if (cols & ~(unsigned)KB_C_ALL)
        return kb_fail(why, whylen, "kblock_decode_rows: columns 0x%x unknown",
                       cols);
    for (size_t j = 0; j < k; j++)
        if (rows[j] >= d->om || (j && rows[j] <= rows[j - 1]))
            return kb_fail(why, whylen,
                           "kblock_decode_rows: row %zu (%u) not ascending"
                           " below %zu",
                           j, rows[j], d->om);
    if (!k)
        return 0;
    i = d->oi;
    return walk_body(d, d->op, d->opl, &i, d->om, d->ons, cols, out, rows, k,
                     why, whylen);
}

int kblock_decode(kblock_dec *d, const unsigned char *b, size_t len,
                  kblock_ev *out, size_t cap, size_t *n, char *why,
                  size_t whylen)
{
    return kblock_decode_cols(d, b, len, KB_C_ALL, out, cap, n, why, whylen);
}

/* One event column (KC_SEQ or KC_TS) into d->vals without the others. */
static int one_col(kblock_dec *d, const unsigned char *b, size_t len, int col,
                   char *why, size_t whylen)
{
    const unsigned char *p;
    size_t pl, i, ns;

    return walk(d, b, len, 1u << col, NULL, SIZE_MAX, &p, &pl, &i, &ns, why,
                whylen);
}

int kblock_name_dur(kblock_dec *d, const unsigned char *b, size_t len,
                    int64_t *names, uint64_t *durs, size_t cap, size_t *n,
                    char *why, size_t whylen)
{
    const unsigned char *p;
    size_t pl, i = 0, i0, ns = 0, m;

    *n = 0;
    if (!d)
        return kb_fail(why, whylen, "kblock_name_dur: no decoder");
    if (body_open(d, b, len, cap, &p, &pl, &i, &ns, why, whylen))
        return -1;
    i0 = i;
    m = d->hidx.n;
    if (walk_body(d, p, pl, &i, m, ns, 1u << KC_NAME | 1u << KC_DUR, NULL, NULL,
                  0, why, whylen))
        return -1;
    for (size_t k = 0; k < m; k++)
        names[k] = d->shape[d->sidx[k]].name_id;
    memcpy(durs, d->dur, m * sizeof(*durs));
    /* open for kblock_decode_rows (or kblock_decode_cols_again): the
     * block that passes is then decoded without a second decompression */
    keep_open(d, p, pl, m, ns, i0);
    *n = m;
    return 0;
}

int kblock_decode_cols_again(kblock_dec *d, unsigned cols, kblock_ev *out,
                             size_t cap, size_t *n, char *why, size_t whylen)
{
    size_t i;

    if (!d || !out || !n)
        return kb_fail(why, whylen, "kblock_decode_cols_again: no decoder");
    if (!d->opened)
        return kb_fail(why, whylen,
                       "kblock_decode_cols_again: no block opened before");
    if ((cols & ~(unsigned)KB_C_ALL) || cols == KB_C_ALL)
        return kb_fail(why, whylen,
                       "kblock_decode_cols_again: columns 0x%x not some of"
                       " them",
                       cols);
    if (d->om > cap)
        return kb_fail(why, whylen, "kernel block of %zu events, room for %zu",
                       d->om, cap);
    i = d->oi;
    if (walk_body(d, d->op, d->opl, &i, d->om, d->ons, cols, out, NULL, 0, why,
                  whylen))
        return -1;
    *n = d->om;
    return 0;
}

/* The first position whose col (KC_SEQ: == key, KC_TS: >= key) matches,
 * the header first ruling the block out when it can. */
static int seek(kblock_dec *d, const unsigned char *b, size_t len, int col,
                uint64_t key, size_t *pos, char *why, size_t whylen)
{
    kblock_index *h;

    *pos = KB_NOTFOUND;
    if (!d)
        return kb_fail(why, whylen, "kblock seek: no decoder");
    h = &d->hidx;
    d->opened = 0; /* d->hidx changes */
    if (kblock_index_read(b, len, h, why, whylen))
        return -1;
    if (col == KC_SEQ ? key < h->seq_min || key > h->seq_max : key > h->ts_max)
        return 0;
    if (one_col(d, b, len, col, why, whylen))
        return -1;
    for (size_t k = 0; k < h->n; k++)
        if (col == KC_SEQ ? d->vals[k] == key : d->vals[k] >= key) {
            *pos = k;
            break;
        }
    return 0;
}

int kblock_seek_seq(kblock_dec *d, const unsigned char *b, size_t len,
                    uint64_t seq, size_t *pos, char *why, size_t whylen)
{
    return seek(d, b, len, KC_SEQ, seq, pos, why, whylen);
}

int kblock_seek_ts(kblock_dec *d, const unsigned char *b, size_t len,
                   uint64_t ts, size_t *pos, char *why, size_t whylen)
{
    return seek(d, b, len, KC_TS, ts, pos, why, whylen);
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
        return kb_fail(why, whylen, "kblock stats: no decoder");
    memset(st, 0, sizeof(*st));
    if (body_open(d, b, len, SIZE_MAX, &p, &pl, &i, &ns, why, whylen))
        return -1;
    st->total = len;
    st->raw = pl;
    st->hdr = d->hlen;
    st->nshapes = ns;
    z = ZSTD_createCCtx();
    zb = malloc(zcap);
    if (!z || !zb) {
        ZSTD_freeCCtx(z);
        free(zb);
        return kb_fail(why, whylen, "out of memory");
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
