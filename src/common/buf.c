/*
 * buf.c - the growing byte buffer with a named cap (see buf.h).
 */
#include "buf.h"

#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first allocation's cap: small answers and lines fit without a
 * second realloc, and an idle buffer costs little. */
#define GBUF_FIRST 256

void gbuf_init(gbuf *b, size_t max)
{
    b->p = NULL;
    b->len = b->cap = 0;
    b->max = max;
    b->err = 0;
}

void gbuf_release(gbuf *b)
{
    free(b->p);
    gbuf_init(b, b->max);
}

void gbuf_reset(gbuf *b)
{
    b->len = 0;
    b->err = 0;
    if (b->p)
        b->p[0] = '\0';
}

/* 1 when n more bytes would pass the cap (len <= max always holds). */
static int over(const gbuf *b, size_t n)
{
    return n > b->max - b->len;
}

size_t gbuf_grow_size(const gbuf *b, size_t n)
{
    size_t want, cap;

    if (over(b, n))
        return 0;
    want = b->len + n;
    if (b->p && want <= b->cap)
        return b->cap;
    cap = b->cap > GBUF_FIRST ? b->cap : GBUF_FIRST;
    while (cap < want && cap <= b->max / 2)
        cap *= 2;
    if (cap < want || cap > b->max)
        cap = b->max; /* the doubling would pass the cap: stop at it */
    return cap;
}

int gbuf_grow_slow(gbuf *b, size_t n)
{
    size_t cap;
    char *p;

    if (b->err)
        return b->err;
    if (over(b, n)) {
        b->err = GPUFL_ETOOBIG;
        return b->err;
    }
    cap = gbuf_grow_size(b, n);
    if (b->p && cap <= b->cap)
        return 0;
    /* + 1: the NUL after the content; a cap near SIZE_MAX is no cap and
     * no allocation could hold it */
    p = cap < SIZE_MAX / 2 ? realloc(b->p, cap + 1) : NULL;
    if (!p) {
        b->err = GPUFL_ENOMEM;
        return b->err;
    }
    if (!b->p)
        p[0] = '\0';
    b->p = p;
    b->cap = cap;
    return 0;
}

void gbuf_setlen(gbuf *b, size_t len)
{
    if (!b->p)
        return;
    b->len = len <= b->cap ? len : b->cap;
    b->p[b->len] = '\0';
}

int gbuf_add(gbuf *b, const void *p, size_t n)
{
    int rc = gbuf_grow(b, n);

    if (rc)
        return rc;
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

int gbuf_adds(gbuf *b, const char *s)
{
    return gbuf_add(b, s, strlen(s));
}

int gbuf_addc(gbuf *b, char c)
{
    return gbuf_add(b, &c, 1);
}

int gbuf_vaddf(gbuf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    int n;
    int rc;

    if (b->err)
        return b->err;
    /* first into the room there is; only a longer result grows */
    va_copy(ap2, ap);
    n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len + 1 : 0,
                  fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        /* an encoding error: nothing sensible to add */
        gbuf_setlen(b, b->len);
        return 0;
    }
    if (b->p && (size_t)n <= b->cap - b->len) {
        b->len += (size_t)n;
        return 0;
    }
    if (b->p)
        b->p[b->len] = '\0'; /* the cut attempt is not content */
    rc = gbuf_grow(b, (size_t)n);
    if (rc)
        return rc;
    vsnprintf(b->p + b->len, b->cap - b->len + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int gbuf_addf(gbuf *b, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = gbuf_vaddf(b, fmt, ap);
    va_end(ap);
    return rc;
}

const char *gbuf_str(const gbuf *b)
{
    return b->p ? b->p : "";
}

char *gbuf_detach(gbuf *b, size_t *len)
{
    char *p = b->p;

    if (len)
        *len = b->len;
    gbuf_init(b, b->max);
    return p;
}
