/*
 * pprof.c - the profile as gzip'd pprof protobuf (google/pprof
 * proto/profile.proto), written by hand: sample types alloc_objects,
 * alloc_space, inuse_objects, inuse_space (Go's heap convention, which
 * Pyroscope stores as memory:*), period type space/bytes, one function
 * and one location per frame name, labels pid and comm.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "memprof_int.h"

#include "common/buf.h"

#define MP_PPROF_CAP (1u << 30)

/* The protobuf being built, in gbufs capped at MP_PPROF_CAP: the first
 * error sticks, so the writers below check nothing and mp_out_pprof
 * checks once. */
typedef gbuf pb;

static void pb_put(pb *b, const void *d, size_t n)
{
    gbuf_add(b, d, n);
}

static void pb_varint(pb *b, uint64_t v)
{
    unsigned char t[10];
    size_t n = 0;
    do {
        t[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            t[n] |= 0x80;
        n++;
    } while (v);
    pb_put(b, t, n);
}

static void pb_u64(pb *b, unsigned field, uint64_t v)
{
    pb_varint(b, (uint64_t)field << 3);
    pb_varint(b, v);
}

static void pb_bytes(pb *b, unsigned field, const void *d, size_t n)
{
    pb_varint(b, (uint64_t)field << 3 | 2);
    pb_varint(b, n);
    pb_put(b, d, n);
}

static void pb_msg(pb *b, unsigned field, pb *sub)
{
    if (sub->err && !b->err)
        b->err = sub->err;
    pb_bytes(b, field, sub->p, sub->len);
    gbuf_setlen(sub, 0);
}

int mp_gzip(const void *in, size_t n, unsigned char **out, size_t *outn)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    size_t cap = deflateBound(&z, (uLong)n) + 64;
    unsigned char *o = malloc(cap);
    if (!o) {
        deflateEnd(&z);
        return -1;
    }
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)n;
    z.next_out = o;
    z.avail_out = (uInt)cap;
    int r = deflate(&z, Z_FINISH);
    deflateEnd(&z);
    if (r != Z_STREAM_END) {
        free(o);
        return -1;
    }
    *out = o;
    *outn = cap - z.avail_out;
    return 0;
}

int mp_out_pprof(mp_agg *g, const char *path, uint64_t start_ns,
                 uint64_t end_ns)
{
    /* string table: "" then fixed strings, then the frame names by id */
    static const char *fixed[] = {
        "",      "alloc_objects", "count",       "alloc_space",
        "bytes", "inuse_objects", "inuse_space", "space",
        "pid",   "comm"
    };
    enum { S_AO = 1, S_CNT, S_AS, S_BYTES, S_IO, S_IS, S_SPACE, S_PID, S_COMM };
    const size_t nfixed = sizeof fixed / sizeof fixed[0];
    pb b = GBUF_INIT(MP_PPROF_CAP), m = GBUF_INIT(MP_PPROF_CAP),
       sub = GBUF_INIT(MP_PPROF_CAP);
    int rc = -1;
    uint8_t *used = calloc(g->nnames ? g->nnames : 1, 1);
    if (!used)
        return -1;

    static const int st[4][2] = {
        { S_AO, S_CNT }, { S_AS, S_BYTES }, { S_IO, S_CNT }, { S_IS, S_BYTES }
    };
    for (int i = 0; i < 4; i++) {
        pb_u64(&sub, 1, (uint64_t)st[i][0]);
        pb_u64(&sub, 2, (uint64_t)st[i][1]);
        pb_msg(&b, 1, &sub);
    }
    /* samples: location ids leaf first; location/function id = name id+1 */
    for (size_t i = 0; i < g->nstacks; i++) {
        const mp_stack *s = &g->stacks[i];
        if (!s->cum.alloc_n && !s->inuse_n)
            continue;
        pb locs = GBUF_INIT(MP_PPROF_CAP);
        if (g->api_frame) {
            uint32_t id = s->api + 1; /* mp_agg_init interns them */
            used[id] = 1;
            pb_varint(&locs, id + 1);
        }
        for (uint32_t k = 0; k < s->n; k++) {
            used[s->f[k]] = 1;
            pb_varint(&locs, s->f[k] + 1);
        }
        if (locs.len)
            pb_bytes(&sub, 1, locs.p, locs.len);
        if (locs.err && !sub.err)
            sub.err = locs.err;
        gbuf_release(&locs);
        pb vals = GBUF_INIT(MP_PPROF_CAP);
        pb_varint(&vals, s->cum.alloc_n);
        pb_varint(&vals, s->cum.alloc_b);
        pb_varint(&vals, s->inuse_n);
        pb_varint(&vals, s->inuse_b);
        pb_bytes(&sub, 2, vals.p, vals.len);
        if (vals.err && !sub.err)
            sub.err = vals.err;
        gbuf_release(&vals);
        pb_u64(&m, 1, S_PID);
        pb_u64(&m, 3, s->pid);
        pb_msg(&sub, 3, &m);
        /* comm: string nfixed + nnames + index of the process */
        size_t pi = 0;
        for (size_t p = 0; p < g->nprocs; p++)
            if (g->procs[p].pid == s->pid)
                pi = p;
        pb_u64(&m, 1, S_COMM);
        pb_u64(&m, 2, nfixed + g->nnames + pi);
        pb_msg(&sub, 3, &m);
        pb_msg(&b, 2, &sub);
    }
    for (uint32_t k = 0; k < g->nnames; k++) {
        if (!used[k])
            continue;
        pb_u64(&sub, 1, k + 1); /* Location.id */
        pb_u64(&m, 1, k + 1);   /* Line.function_id */
        pb_msg(&sub, 4, &m);    /* Location.line */
        pb_msg(&b, 4, &sub);
        pb_u64(&sub, 1, k + 1);      /* Function.id */
        pb_u64(&sub, 2, nfixed + k); /* Function.name */
        pb_u64(&sub, 3, nfixed + k); /* Function.system_name */
        pb_msg(&b, 5, &sub);
    }
    for (size_t i = 0; i < nfixed; i++)
        pb_bytes(&b, 6, fixed[i], strlen(fixed[i]));
    for (uint32_t k = 0; k < g->nnames; k++)
        pb_bytes(&b, 6, g->names[k], strlen(g->names[k]));
    for (size_t p = 0; p < g->nprocs; p++)
        pb_bytes(&b, 6, g->procs[p].comm, strlen(g->procs[p].comm));
    pb_u64(&b, 9, start_ns);
    pb_u64(&b, 10, end_ns > start_ns ? end_ns - start_ns : 0);
    pb_u64(&sub, 1, S_SPACE);
    pb_u64(&sub, 2, S_BYTES);
    pb_msg(&b, 11, &sub);
    pb_u64(&b, 12, 1);
    pb_u64(&b, 14, S_IS);
    if (b.err || sub.err || m.err)
        goto out;
    unsigned char *z;
    size_t zn;
    if (mp_gzip(b.p, b.len, &z, &zn))
        goto out;
    FILE *f = fopen(path, "wb");
    if (f) {
        rc = fwrite(z, 1, zn, f) == zn ? 0 : -1;
        if (fclose(f))
            rc = -1;
    }
    free(z);
out:
    gbuf_release(&b);
    gbuf_release(&m);
    gbuf_release(&sub);
    free(used);
    return rc;
}
