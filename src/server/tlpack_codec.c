/*
 * tlpack_codec.c - the timeline pack's codec (store_sql_tlpack.h): a
 * range's buckets as LEB128 varints (the gap from the previous bucket,
 * then its four columns), and the rule adding two rows of one bucket.
 * Apart from the store (no database) so the fuzz target
 * (tests/fuzz/fuzz_tlpack.c) links only it: a pack is read back from the
 * database, input like any other.
 */
#include "store_sql_tlpack.h"
#include "kblock_int.h"

#include <gpufl/gpufl.h>

void sq_tlb_add(sq_tlb *a, const sq_tlb *b)
{
    /* saturating both ways: a pack read back from a corrupted database
     * may hold any int64 (negative too), and an overflow must neither be
     * undefined nor make a + b differ from b + a; valid rows never reach
     * the bounds */
    if (__builtin_add_overflow(a->n, b->n, &a->n))
        a->n = b->n < 0 ? INT64_MIN : INT64_MAX;
    if (__builtin_add_overflow(a->busy, b->busy, &a->busy))
        a->busy = b->busy < 0 ? INT64_MIN : INT64_MAX;
    if (b->top_dur > a->top_dur ||
        (b->top_dur == a->top_dur && b->top_name > a->top_name)) {
        a->top_name = b->top_name;
        a->top_dur = b->top_dur;
    }
}

size_t sq_tlb_merge(const sq_tlb *a, size_t na, const sq_tlb *b, size_t nb,
                    sq_tlb *out)
{
    size_t n = 0;

    for (size_t i = 0, j = 0; i < na || j < nb;) {
        if (j == nb || (i < na && a[i].b < b[j].b)) {
            out[n++] = a[i++];
        } else if (i == na || b[j].b < a[i].b) {
            out[n++] = b[j++];
        } else {
            out[n] = b[j++];
            sq_tlb_add(&out[n++], &a[i++]);
        }
    }
    return n;
}

size_t sq_tlp_encode(const sq_tlb *v, size_t n, int64_t b0, unsigned char *out)
{
    size_t o = 0;
    int64_t prev = b0;

    for (size_t i = 0; i < n; i++) {
        o += vput(out + o, (uint64_t)(v[i].b - prev));
        o += vput(out + o, (uint64_t)v[i].n);
        o += vput(out + o, (uint64_t)v[i].busy);
        o += vput(out + o, (uint64_t)v[i].top_name);
        o += vput(out + o, (uint64_t)v[i].top_dur);
        prev = v[i].b;
    }
    return o;
}

int sq_tlp_decode(const void *p, size_t len, int64_t b0, sq_tlb *v, size_t *n)
{
    const unsigned char *q = p;
    size_t i = 0;
    int64_t prev = b0;

    *n = 0;
    while (i < len) {
        uint64_t d, f[4];
        if (*n == SQ_TLP_N || vget(q, len, &i, &d) || (*n && !d) ||
            d >= SQ_TLP_N || (uint64_t)(prev - b0) + d >= SQ_TLP_N)
            return GPUFL_EINTERNAL;
        for (int k = 0; k < 4; k++)
            if (vget(q, len, &i, &f[k]))
                return GPUFL_EINTERNAL;
        prev += (int64_t)d;
        v[*n] = (sq_tlb){ prev, (int64_t)f[0], (int64_t)f[1], (int64_t)f[2],
                          (int64_t)f[3] };
        (*n)++;
    }
    return GPUFL_OK;
}
