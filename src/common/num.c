/*
 * num.c - strict decimal numbers (num.h).
 */
#include "common/num.h"

#include <stddef.h>

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

/* Digits at p into *v (at most max of them, the value within 64 bits);
 * returns how many were read, 0 when none or too many. */
static size_t digits(const char *p, size_t max, uint64_t *v)
{
    size_t n = 0;

    *v = 0;
    for (; p[n] >= '0' && p[n] <= '9'; n++) {
        unsigned d = (unsigned)(p[n] - '0');
        if (n == max || *v > (UINT64_MAX - d) / 10)
            return 0;
        *v = *v * 10 + d;
    }
    return n;
}

int num_dec_parse(const char *s, num_dec *d, const char **end)
{
    num_dec r = { 0, 0, 0 };
    size_t n;

    if (!s)
        return -1;
    n = digits(s, 20, &r.whole);
    if (!n)
        return -1;
    s += n;
    if (*s == '.') {
        n = digits(s + 1, NUM_FRAC_MAX, &r.frac);
        if (!n)
            return -1;
        r.nfrac = (unsigned)n;
        s += 1 + n;
    }
    *d = r;
    *end = s;
    return 0;
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

int num_dec_scale(const num_dec *d, uint64_t mul, uint64_t div, uint64_t *out)
{
    uint64_t pow = 1, x, g;

    if (!mul || !div || div > 1000000000u)
        return -1;
    for (unsigned i = 0; i < d->nfrac; i++)
        pow *= 10;
    /* x / (pow * div) * mul, with x = whole * pow + frac: reduce the
     * fraction mul / (pow * div) first so that only a true overflow or a
     * true remainder fails (pow * div <= 10^18 fits) */
    if (d->whole > (UINT64_MAX - d->frac) / pow)
        return -1;
    x = d->whole * pow + d->frac;
    div *= pow;
    g = gcd(mul, div);
    mul /= g;
    div /= g;
    if (x % div)
        return -1;
    x /= div;
    if (x && mul > UINT64_MAX / x)
        return -1;
    *out = x * mul;
    return 0;
}
