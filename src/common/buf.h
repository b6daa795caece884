/*
 * buf.h - one growing byte buffer with a named cap (curl's dynbuf, git's
 * strbuf), for every component that collects bytes of unknown length:
 * HTTP answers, request bodies, COPY rows, protobuf, JSON output (jw.h
 * jw_init_gbuf), Prometheus text.
 *
 * Invariants:
 *   - len <= cap <= max: `max` is the cap the owner names (bytes of
 *     content); going past it is GPUFL_ETOOBIG, never a larger buffer;
 *   - when p is not NULL, cap + 1 bytes are allocated and every gbuf
 *     function leaves p[len] == '\0', so the content can be used as a C
 *     string (it may hold NULs); code that writes in place and moves len
 *     itself (b->p[b->len++] = c on a hot path) owes the NUL until its
 *     next gbuf_setlen or add;
 *   - the first error is sticky (err): every later add does nothing and
 *     returns it, so a writer can add many pieces and check once (like jw);
 *     gbuf_reset clears it.
 * A gbuf is plain data: GBUF_INIT(max) or gbuf_init() makes an empty one
 * that owns nothing; gbuf_release() frees it (and may be called on an
 * empty one).  Not thread-safe: one owner at a time.
 *
 * Writing in place (decoders, formatters that know their size): take
 * room with gbuf_grow(b, n), write up to gbuf_avail(b) bytes at
 * b->p + b->len, then gbuf_setlen(b, b->len + written) (or move len
 * yourself, within the room taken).
 */
#ifndef GPUFL_COMMON_BUF_H
#define GPUFL_COMMON_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct gbuf {
    char *p;    /* owned; NULL until the first byte is added */
    size_t len; /* bytes of content */
    size_t cap; /* bytes of content that fit without growing */
    size_t max; /* the named cap: len never exceeds it */
    int err;    /* 0, or the first GPUFL_ETOOBIG / GPUFL_ENOMEM (sticky) */
} gbuf;

#define GBUF_INIT(max_)                                                        \
    {                                                                          \
        NULL, 0, 0, (max_), 0                                                  \
    }

/* An empty buffer that will hold at most max bytes. */
void gbuf_init(gbuf *b, size_t max);

/* Frees the memory; b is empty again (max kept, err cleared). */
void gbuf_release(gbuf *b);

/* len = 0 and err = 0; the memory is kept for reuse. */
void gbuf_reset(gbuf *b);

/* Room for n more bytes (and the NUL): 0, or GPUFL_ETOOBIG when
 * len + n > max, GPUFL_ENOMEM; either is sticky.  Grows by doubling,
 * never past max.  The fast path is inline: callers on hot paths (the
 * agent's batches, COPY rows) pay one compare when there is room. */
int gbuf_grow_slow(gbuf *b, size_t n);
static inline int gbuf_grow(gbuf *b, size_t n)
{
    if (!b->err && b->p && n <= b->cap - b->len)
        return 0;
    return gbuf_grow_slow(b, n);
}

/* The cap (bytes of content) gbuf_grow(b, n) would leave b with, without
 * growing it: for owners that account for memory before they take it
 * (the server's body budget).  b->cap when there is room already; 0 when
 * the grow would fail with GPUFL_ETOOBIG. */
size_t gbuf_grow_size(const gbuf *b, size_t n);

/* Bytes that may be written at b->p + b->len without growing. */
static inline size_t gbuf_avail(const gbuf *b)
{
    return b->cap - b->len;
}

/* Sets len (<= cap: bytes written in place, or a cut) and the NUL. */
void gbuf_setlen(gbuf *b, size_t len);

/* Appends n bytes of p (borrowed; may be NULL when n is 0). */
int gbuf_add(gbuf *b, const void *p, size_t n);
/* Appends a C string, without its NUL. */
int gbuf_adds(gbuf *b, const char *s);
/* Appends one byte. */
int gbuf_addc(gbuf *b, char c);
/* Appends printf output; a result that does not fit under max is not
 * appended at all (GPUFL_ETOOBIG). */
int gbuf_addf(gbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int gbuf_vaddf(gbuf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* The content as a C string: b->p, or "" while nothing is allocated. */
const char *gbuf_str(const gbuf *b);

/* Hands the memory to the caller (free() it), NUL-terminated, its length
 * in *len (may be NULL); b is empty again.  NULL when nothing was ever
 * allocated (an empty buffer) - callers that want "" use gbuf_grow(b, 0)
 * first. */
char *gbuf_detach(gbuf *b, size_t *len);

#endif
