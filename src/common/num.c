/*
 * num.c - strict decimal numbers (num.h).
 */
#include "common/num.h"

int num_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    const char *p = s;

    if (!s || !*s)
        return -1;
    for (; *p; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (d > 9 || p - s >= 20)
            return -1;
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int num_i64(const char *s, int64_t *out)
{
    uint64_t v;

    if (num_u64(s, &v) || v > (uint64_t)INT64_MAX)
        return -1;
    *out = (int64_t)v;
    return 0;
}
