/*
 * ingest_body.c - decoding of ingest request bodies: the Content-Encoding
 * named (identity, gzip/deflate, zstd) and the body inflated into a buffer
 * that never grows past the caller's cap, so a small compressed body
 * cannot expand into unbounded memory.
 */
#include "ingest.h"

#include "common/buf.h"

#include <gpufl/gpufl.h>

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

int ingest_encoding(const char *h)
{
    if (!h || !*h || strcasecmp(h, "identity") == 0)
        return ENC_IDENTITY;
    if (strcasecmp(h, "gzip") == 0 || strcasecmp(h, "x-gzip") == 0 ||
        strcasecmp(h, "deflate") == 0)
        return ENC_GZIP;
    if (strcasecmp(h, "zstd") == 0)
        return ENC_ZSTD;
    return -1;
}

/* Room for the next piece of decoded output: at least the first
 * allocation's worth, then doubling (gbuf), never past the cap. */
static int room(gbuf *b)
{
    size_t want = b->len < 65536 ? 65536 - b->len : 1;

    if (gbuf_avail(b))
        return GPUFL_OK;
    if (want > b->max - b->len && b->len < b->max)
        want = b->max - b->len;
    return gbuf_grow(b, want) ? b->err : GPUFL_OK;
}

/* Every member of a gzip body (RFC 1952 allows several, as `cat a.gz
 * b.gz` makes), or one zlib stream; bytes after the last are an error,
 * never ignored.  cap bounds the output of all members together. */
static int decode_gzip(const char *in, size_t n, size_t cap, char **out,
                       size_t *out_n, const char **why)
{
    const unsigned char *p = (const unsigned char *)in;
    int gzip = n >= 2 && p[0] == 0x1f && p[1] == 0x8b;
    size_t left = n;
    gbuf b = GBUF_INIT(cap);
    int rc = GPUFL_OK, zr;
    z_stream z;

    memset(&z, 0, sizeof(z));
    /* 32 + MAX_WBITS: zlib or gzip header, detected */
    if (inflateInit2(&z, 32 + MAX_WBITS) != Z_OK)
        return GPUFL_ENOMEM;
    for (;;) {
        const unsigned char *next;
        size_t more;
        for (;;) {
            uInt avail;
            if (z.avail_in == 0 && left > 0) {
                z.next_in = (Bytef *)(uintptr_t)p;
                z.avail_in = left > (1u << 30) ? (1u << 30) : (uInt)left;
                p += z.avail_in;
                left -= z.avail_in;
            }
            if ((rc = room(&b)) != 0)
                goto out;
            avail =
                gbuf_avail(&b) > (1u << 30) ? (1u << 30) : (uInt)gbuf_avail(&b);
            z.next_out = (Bytef *)b.p + b.len;
            z.avail_out = avail;
            zr = inflate(&z, Z_NO_FLUSH);
            gbuf_setlen(&b, b.len + (avail - z.avail_out));
            if (zr == Z_STREAM_END)
                break;
            if (zr == Z_BUF_ERROR && z.avail_in == 0 && left == 0) {
                *why = "the compressed body is cut short";
                rc = GPUFL_EPARSE;
                goto out;
            }
            if (zr != Z_OK && zr != Z_BUF_ERROR) {
                *why = "the compressed body is corrupt";
                rc = GPUFL_EPARSE;
                goto out;
            }
        }
        /* what is left of the input is contiguous: the unread part of the
         * chunk inflate holds, then the rest */
        more = z.avail_in + left;
        if (more == 0)
            break;
        next = z.avail_in ? z.next_in : p;
        if (!gzip || more < 2 || next[0] != 0x1f || next[1] != 0x8b) {
            *why = "bytes after the end of the compressed body";
            rc = GPUFL_EPARSE;
            goto out;
        }
        inflateReset(&z); /* the next member; next_in is kept */
    }
out:
    inflateEnd(&z);
    if (rc)
        gbuf_release(&b);
    *out = gbuf_detach(&b, out_n);
    return rc;
}

/* Every frame of a zstd body (ZSTD_decompressStream goes on to the next
 * by itself; bytes that are no frame make it fail). */
static int decode_zstd(const char *in, size_t n, size_t cap, char **out,
                       size_t *out_n, const char **why)
{
    ZSTD_DStream *z = ZSTD_createDStream();
    ZSTD_inBuffer ib = { in, n, 0 };
    ZSTD_outBuffer ob = { NULL, 0, 0 };
    gbuf b = GBUF_INIT(cap);
    size_t r = 1;
    int rc = GPUFL_OK;

    if (!z)
        return GPUFL_ENOMEM;
    ZSTD_initDStream(z);
    while (ib.pos < ib.size || r != 0) {
        gbuf_setlen(&b, ob.pos);
        if ((rc = room(&b)) != 0)
            goto out;
        ob.dst = b.p;
        ob.size = b.cap;
        r = ZSTD_decompressStream(z, &ob, &ib);
        if (ZSTD_isError(r)) {
            *why = ZSTD_getErrorCode(r) == ZSTD_error_prefix_unknown
                       ? "bytes after the end of the compressed body"
                       : "the compressed body is corrupt";
            rc = GPUFL_EPARSE;
            goto out;
        }
        if (ib.pos == ib.size && r != 0 && ob.pos < ob.size) {
            *why = "the compressed body is cut short";
            rc = GPUFL_EPARSE;
            goto out;
        }
    }
out:
    ZSTD_freeDStream(z);
    gbuf_setlen(&b, ob.pos);
    if (rc)
        gbuf_release(&b);
    *out = gbuf_detach(&b, out_n);
    return rc;
}

int ingest_decode(int enc, const char *in, size_t n, size_t cap, char **out,
                  size_t *out_n, const char **why)
{
    const char *w = NULL;

    *out = NULL;
    *out_n = 0;
    if (!why)
        why = &w;
    *why = "body does not decode";
    if (enc == ENC_GZIP)
        return decode_gzip(in, n, cap, out, out_n, why);
    if (enc == ENC_ZSTD)
        return decode_zstd(in, n, cap, out, out_n, why);
    if (n > cap)
        return GPUFL_ETOOBIG;
    *out = malloc(n ? n : 1);
    if (!*out)
        return GPUFL_ENOMEM;
    memcpy(*out, in, n);
    *out_n = n;
    return GPUFL_OK;
}
