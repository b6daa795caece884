/*
 * kbnpack_codec.c - the kernel block names' pack codec (kbnpack_codec.h):
 * per entry LEB128 varints, the block's seq_lo as the step from the
 * previous entry's (the first from the range's r0), then a name's count
 * and duration bounds, or a directory's block seq and time ranges.  Apart
 * from the packer (store_sql_kbnpack.c: libpq, SQL) so the fuzz target
 * (tests/fuzz/fuzz_kbnpack.c) links only it: a pack is read back from the
 * database, input like any other.
 */
#include "kbnpack_codec.h"
#include "kblock_int.h"

#include <gpufl/gpufl.h>

size_t sq_kbnp_encode(int dir, const sq_kbne *v, size_t n, int64_t r0,
                      unsigned char *out)
{
    size_t o = 0;
    uint64_t prev = (uint64_t)r0, pt = 0;

    /* differences as uint64: every int64 bit pattern round-trips; a
     * block's t_lo from the previous one's t_hi (a stream's blocks follow
     * each other: a step of a few bytes, not the block's span) */
    for (size_t i = 0; i < n; i++) {
        o += vput(out + o, (uint64_t)v[i].lo - prev);
        if (dir) {
            o += vput(out + o, (uint64_t)v[i].hi - (uint64_t)v[i].lo);
            o += vput(out + o, zz((uint64_t)v[i].t_lo - pt));
            o += vput(out + o, (uint64_t)v[i].t_hi - (uint64_t)v[i].t_lo);
            pt = (uint64_t)v[i].t_hi;
        } else {
            o += vput(out + o, (uint64_t)v[i].n);
            o += vput(out + o, (uint64_t)v[i].dmin);
            o += vput(out + o, (uint64_t)v[i].dmax - (uint64_t)v[i].dmin);
        }
        prev = (uint64_t)v[i].lo;
    }
    return o;
}

int sq_kbnp_decode(int dir, const void *p, size_t len, int64_t r0, sq_kbne *v,
                   size_t cap, size_t *n)
{
    const unsigned char *q = p;
    size_t i = 0;
    uint64_t prev = (uint64_t)r0, pt = 0;

    *n = 0;
    while (i < len) {
        uint64_t d, f[3];
        if (*n == cap || vget(q, len, &i, &d) || (*n && !d) ||
            d >= (uint64_t)SQ_KBNP_SPAN ||
            prev - (uint64_t)r0 + d >= (uint64_t)SQ_KBNP_SPAN)
            return GPUFL_EINTERNAL;
        for (int k = 0; k < 3; k++)
            if (vget(q, len, &i, &f[k]))
                return GPUFL_EINTERNAL;
        prev += d;
        v[*n] = (sq_kbne){ .lo = (int64_t)prev };
        if (dir) {
            pt += unzz(f[1]); /* the block's t_lo */
            v[*n].hi = (int64_t)(prev + f[0]);
            v[*n].t_lo = (int64_t)pt;
            pt += f[2]; /* its t_hi: the next t_lo is a step from it */
            v[*n].t_hi = (int64_t)pt;
        } else {
            v[*n].n = (int64_t)f[0];
            v[*n].dmin = (int64_t)f[1];
            v[*n].dmax = (int64_t)(f[1] + f[2]);
        }
        (*n)++;
    }
    return GPUFL_OK;
}

int sq_kbne_by_lo(const void *a, const void *b)
{
    const sq_kbne *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}
