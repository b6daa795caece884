/*
 * cursor.c - opaque pagination cursors: a few signed integers (the sort
 * key of the last row returned and its tie-breaker) written as "c" and
 * dot-separated hex.  Clients must treat them as opaque; the server
 * rejects any that does not decode to exactly the expected count.
 */
#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>

#include "store.h"

int srv_cursor_encode(const int64_t *v, int n, char *out, size_t cap)
{
    size_t len = 0;

    for (int i = 0; i < n; i++) {
        int w = snprintf(out + len, cap - len, "%s%llx", i ? "." : "c",
                         (unsigned long long)v[i]);
        if (w < 0 || (size_t)w >= cap - len)
            return GPUFL_ETOOBIG;
        len += (size_t)w;
    }
    return GPUFL_OK;
}

int srv_cursor_decode(const char *s, int64_t *v, int n)
{
    const char *p = s;

    /* one spelling per cursor, the encoder's: lowercase hex without
     * leading zeros (strtoull also took "0x1f", "1F" and "001") */
    if (!s || *p++ != 'c' || n < 1)
        return GPUFL_EINVAL;
    for (int i = 0; i < n; i++) {
        uint64_t x = 0;
        const char *d;
        if (i && *p++ != '.')
            return GPUFL_EINVAL;
        for (d = p; (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'); p++)
            x = x << 4 | (uint64_t)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
        if (p == d || p - d > 16 || (*d == '0' && p - d > 1))
            return GPUFL_EINVAL;
        v[i] = (int64_t)x;
    }
    return *p ? GPUFL_EINVAL : GPUFL_OK;
}
