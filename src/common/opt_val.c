/*
 * opt_val.c - the value syntax of every option (opt.h): booleans, sizes,
 * durations, integers, numbers, enums; storing a value into its field
 * with its bounds, and saying what a field accepts or holds.
 *
 * The client library links this file alone (its GPUFL_* environment), so
 * it never prints: errors go into the caller's buffer.
 */
#include "common/opt.h"
#include "common/num.h"
#include "common/opt_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Values are quoted in messages up to this many bytes. */
#define SHOWN_MAX 100

int opt_parse_bool(const char *s, int *out)
{
    static const char *const yes[] = { "1", "true", "yes", "on" };
    static const char *const no[] = { "0", "false", "no", "off", "" };

    if (!s)
        return -1;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (!strcasecmp(s, yes[i])) {
            *out = 1;
            return 0;
        }
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (!strcasecmp(s, no[i])) {
            *out = 0;
            return 0;
        }
    return -1;
}

/* k, M, G, T (any case) at *p: the power of 1024 (1-4) and p moved past
 * it and an optional 'i'; 0 when there is none. */
static unsigned binary_prefix(const char **p)
{
    static const char letters[] = "kmgt";
    const char *l = **p ? strchr(letters, **p | 0x20) : NULL;

    if (!l)
        return 0;
    (*p)++;
    if (**p == 'i' || **p == 'I')
        (*p)++;
    return (unsigned)(l - letters) + 1;
}

/* A decimal, a binary multiplier and, for sizes, an optional B. */
static int parse_scaled(const char *s, int bytes, uint64_t *out)
{
    num_dec d;
    const char *p;
    unsigned pw;

    if (num_dec_parse(s, &d, &p))
        return -1;
    pw = binary_prefix(&p);
    if (bytes && (*p == 'b' || *p == 'B'))
        p++;
    if (*p)
        return -1;
    return num_dec_scale(&d, 1ull << (10 * pw), 1, out);
}

int opt_parse_size(const char *s, uint64_t *out)
{
    return parse_scaled(s, 1, out);
}

static const struct {
    const char *suffix;
    uint64_t ms;
} dur_units[] = { { "ms", 1 },
                  { "s", 1000 },
                  { "m", 60000 },
                  { "h", 3600000 },
                  { "d", 86400000 } };

int opt_parse_dur(const char *s, opt_unit bare, opt_unit unit, uint64_t *out)
{
    num_dec d;
    const char *p;
    uint64_t ms = bare;

    if (num_dec_parse(s, &d, &p))
        return -1;
    if (*p) {
        ms = 0;
        for (size_t i = 0; i < sizeof dur_units / sizeof dur_units[0]; i++)
            if (!strcmp(p, dur_units[i].suffix))
                ms = dur_units[i].ms;
        if (!ms)
            return -1;
    }
    return num_dec_scale(&d, ms, unit, out);
}

/* A decimal number as strtod reads it, without its leniencies: no blanks,
 * no '+', no hex, no inf/nan; an optional '-' and exponent. */
static int parse_float(const char *s, double *out)
{
    const char *p = s;
    size_t nd = 0;
    char *end;
    double v;

    if (*p == '-')
        p++;
    for (; *p >= '0' && *p <= '9'; p++)
        nd++;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            nd++;
    if (!nd)
        return -1;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!(*p >= '0' && *p <= '9'))
            return -1;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p)
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno || *end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* The next word of an enum's choices "a|b=2|c" at *p: its length, value
 * (the index unless "=N" says) and *p moved on; 0 at the end. */
static size_t choice_next(const char **p, long idx, long *val)
{
    const char *w = *p, *bar, *eq;
    size_t len;

    if (!*w)
        return 0;
    bar = strchr(w, '|');
    len = bar ? (size_t)(bar - w) : strlen(w);
    *p = w + len + (bar ? 1 : 0);
    eq = memchr(w, '=', len);
    *val = idx;
    if (eq) {
        *val = strtol(eq + 1, NULL, 10);
        len = (size_t)(eq - w);
    }
    return len;
}

/* The choice spelled v (any case): its canonical word (w, wlen) and
 * value; -1 when none. */
static int choice_find(const char *choices, const char *v, const char **w,
                       size_t *wlen, long *val)
{
    const char *p = choices;
    size_t n = strlen(v);

    for (long i = 0;; i++) {
        const char *start = p;
        size_t len = choice_next(&p, i, val);
        if (!len)
            return -1;
        if (len == n && !strncasecmp(start, v, n)) {
            *w = start;
            *wlen = len;
            return 0;
        }
    }
}

/* The word of value val in choices; NULL when none. */
static const char *choice_word(const char *choices, long val, size_t *wlen)
{
    const char *p = choices;
    long v;

    for (long i = 0;; i++) {
        const char *start = p;
        size_t len = choice_next(&p, i, &v);
        if (!len)
            return NULL;
        if (v == val) {
            *wlen = len;
            return start;
        }
    }
}

/* The bounds a field can take, from the row and the field's width. */
static void bounds(const opt_def *o, uint64_t *lo, uint64_t *hi)
{
    uint64_t wmax = o->size >= 8 ? UINT64_MAX : (1ull << (8 * o->size)) - 1;

    if (o->store == OPT_ST_SINT)
        wmax >>= 1;
    *lo = o->min;
    *hi = o->max ? o->max : wmax;
    if (*hi > wmax)
        *hi = wmax;
}

static void store_int(const opt_def *o, void *p, uint64_t v)
{
    switch (o->size) {
    case 1: *(uint8_t *)p = (uint8_t)v; break;
    case 2: *(uint16_t *)p = (uint16_t)v; break;
    case 4: *(uint32_t *)p = (uint32_t)v; break;
    default: *(uint64_t *)p = v; break;
    }
}

static int64_t load_sint(const opt_def *o, const void *p)
{
    switch (o->size) {
    case 1: return *(const int8_t *)p;
    case 2: return *(const int16_t *)p;
    case 4: return *(const int32_t *)p;
    default: return *(const int64_t *)p;
    }
}

static uint64_t load_uint(const opt_def *o, const void *p)
{
    switch (o->size) {
    case 1: return *(const uint8_t *)p;
    case 2: return *(const uint16_t *)p;
    case 4: return *(const uint32_t *)p;
    default: return *(const uint64_t *)p;
    }
}

/* n written as the largest exact binary unit: 4096 -> "4KiB". */
static void fmt_size(uint64_t n, char *out, size_t cap)
{
    static const char *const u[] = { "TiB", "GiB", "MiB", "KiB" };

    for (int i = 0; i < 4 && n; i++) {
        unsigned sh = (unsigned)(40 - 10 * i);
        if (!(n & ((1ull << sh) - 1))) {
            snprintf(out, cap, "%llu%s", (unsigned long long)(n >> sh), u[i]);
            return;
        }
    }
    snprintf(out, cap, "%llu", (unsigned long long)n);
}

/* n (in unit) written as the largest exact duration unit: "5m". */
static void fmt_dur(uint64_t n, opt_unit unit, char *out, size_t cap)
{
    if (!n) {
        snprintf(out, cap, "0%s", unit == OPT_SEC ? "s" : "ms");
        return;
    }
    for (int i = (int)(sizeof dur_units / sizeof dur_units[0]) - 1; i >= 0;
         i--) {
        uint64_t per = dur_units[i].ms;
        if (per < unit || per % unit)
            continue;
        per /= unit;
        if (n % per == 0 || per == 1) {
            snprintf(out, cap, "%llu%s", (unsigned long long)(n / per),
                     dur_units[i].suffix);
            return;
        }
    }
    snprintf(out, cap, "%llu", (unsigned long long)n);
}

static const char *unit_word(opt_unit u)
{
    return u == OPT_SEC ? "seconds" : "milliseconds";
}

/* The choices as "a, b or c". */
static void fmt_choices(const char *choices, char *out, size_t cap)
{
    const char *p = choices;
    size_t len, k = 0, n = 0;
    long v;
    const char *words[32];
    size_t lens[32];

    while (n < 32 && (words[n] = p, len = choice_next(&p, (long)n, &v)))
        lens[n++] = len;
    out[0] = '\0';
    for (size_t i = 0; i < n && k < cap; i++) {
        const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
        int w =
            snprintf(out + k, cap - k, "%s%.*s", sep, (int)lens[i], words[i]);
        if (w < 0)
            break;
        k += (size_t)w;
    }
}

/* A list row as the row of one of its items. */
static opt_def item_of(const opt_def *o)
{
    opt_def item = *o;

    if (o->type == OPT_LIST)
        item.type = o->item ? o->item : OPT_STR;
    return item;
}

const char *opt_range(const opt_def *o, char *out, size_t cap)
{
    opt_def it = item_of(o);
    char a[48], b[48];
    uint64_t lo, hi;

    bounds(&it, &lo, &hi);
    out[0] = '\0';
    switch (it.type) {
    case OPT_INT:
        snprintf(out, cap, "%llu to %llu", (unsigned long long)lo,
                 (unsigned long long)hi);
        break;
    case OPT_SIZE:
        fmt_size(lo, a, sizeof a);
        fmt_size(hi, b, sizeof b);
        snprintf(out, cap, "%s to %s", a, b);
        break;
    case OPT_DUR:
        fmt_dur(lo, it.unit, a, sizeof a);
        fmt_dur(hi, it.unit, b, sizeof b);
        snprintf(out, cap, "%s to %s", a, b);
        break;
    case OPT_FLOAT:
        if (it.fmin != 0 || it.fmax != 0)
            snprintf(out, cap, "%g to %g", it.fmin, it.fmax);
        break;
    default: break;
    }
    return out;
}

const char *opt_allowed(const opt_def *o, char *out, size_t cap)
{
    opt_def it = item_of(o);
    char r[112];

    opt_range(&it, r, sizeof r);
    switch (it.type) {
    case OPT_STR:
        if (it.store == OPT_ST_ARR)
            snprintf(out, cap, "text of at most %zu bytes", it.size - 1);
        else
            snprintf(out, cap, "text");
        break;
    case OPT_BOOL:
        snprintf(out, cap, "true or false (yes/no, on/off, 1/0)");
        break;
    case OPT_INT: snprintf(out, cap, "an integer from %s", r); break;
    case OPT_SIZE:
        snprintf(out, cap,
                 "a size from %s (bytes, or with k, M, G or T: 64k, 16M, "
                 "16MiB)",
                 r);
        break;
    case OPT_DUR:
        snprintf(out, cap,
                 "a duration from %s (250ms, 30s, 5m, 4h, 7d; a bare number "
                 "is %s)",
                 r, unit_word(it.bare ? it.bare : it.unit));
        break;
    case OPT_ENUM: fmt_choices(it.choices, out, cap); break;
    case OPT_FLOAT:
        snprintf(out, cap, "a number%s%s", *r ? " from " : "", r);
        break;
    case OPT_LIST: snprintf(out, cap, "a list"); break;
    }
    return out;
}

/* The canonical text of an integer-like value. */
static void fmt_num(const opt_def *o, uint64_t v, char *out, size_t cap)
{
    if (o->type == OPT_DUR)
        fmt_dur(v, o->unit, out, cap);
    else
        snprintf(out, cap, "%llu", (unsigned long long)v);
}

/* The shortest %g that reads back as v. */
static void fmt_float(double v, char *out, size_t cap)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, cap, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

const char *opt_value_str(const opt_def *o, const void *base, char *out,
                          size_t cap)
{
    const void *p = (const char *)base + o->off;
    size_t wlen;
    const char *w;

    switch (o->store) {
    case OPT_ST_PTR:
    case OPT_ST_REF: return *(char *const *)p;
    case OPT_ST_ARR: return (const char *)p;
    case OPT_ST_DBL: fmt_float(*(const double *)p, out, cap); return out;
    case OPT_ST_SINT:
    case OPT_ST_UINT: {
        int64_t sv = o->store == OPT_ST_SINT ? load_sint(o, p)
                                             : (int64_t)load_uint(o, p);
        if (o->type == OPT_BOOL) {
            snprintf(out, cap, "%s", sv ? "true" : "false");
        } else if (o->type == OPT_ENUM) {
            w = choice_word(o->choices, (long)sv, &wlen);
            if (w)
                snprintf(out, cap, "%.*s", (int)wlen, w);
            else
                snprintf(out, cap, "%lld", (long long)sv);
        } else if (o->store == OPT_ST_SINT) {
            snprintf(out, cap, "%lld", (long long)sv);
        } else {
            fmt_num(o, load_uint(o, p), out, cap);
        }
        return out;
    }
    case OPT_ST_NONE: break;
    }
    return NULL;
}

static int set_str(const opt_def *o, void *p, const char *v, size_t vlen)
{
    char *c;

    switch (o->store) {
    case OPT_ST_REF: *(const char **)p = v; return 0;
    case OPT_ST_ARR:
        memcpy(p, v, vlen);
        ((char *)p)[vlen] = '\0';
        return 0;
    default:
        c = malloc(vlen + 1);
        if (!c)
            return -2;
        memcpy(c, v, vlen);
        c[vlen] = '\0';
        free(*(char **)p);
        *(char **)p = c;
        return 0;
    }
}

int opt_value_set(const opt_def *o, void *base, const char *v, const char *name,
                  char *why, size_t cap)
{
    void *p = (char *)base + o->off;
    const char *shown = (o->flags & OPT_SECRET) ? "(secret)" : v;
    char allowed[256];
    uint64_t u = 0, lo, hi;
    int rc = 0, b;
    double d;

    if (strlen(v) >= OPT_VALUE_MAX) {
        snprintf(why, cap, "%s: the value is longer than %d bytes", name,
                 OPT_VALUE_MAX - 1);
        return -1;
    }
    bounds(o, &lo, &hi);
    switch (o->type) {
    case OPT_STR:
        if (o->store == OPT_ST_ARR && strlen(v) >= o->size) {
            snprintf(why, cap, "%s: the value is longer than %zu bytes", name,
                     o->size - 1);
            return -1;
        }
        return set_str(o, p, v, strlen(v));
    case OPT_BOOL:
        if (opt_parse_bool(v, &b))
            goto bad;
        store_int(o, p, (uint64_t)b);
        return 0;
    case OPT_ENUM: {
        const char *w;
        size_t wlen;
        long val;
        if (choice_find(o->choices, v, &w, &wlen, &val))
            goto bad;
        if (o->store == OPT_ST_UINT || o->store == OPT_ST_SINT) {
            store_int(o, p, (uint64_t)val);
            return 0;
        }
        if (o->store == OPT_ST_ARR && wlen >= o->size)
            goto bad;
        return set_str(o, p, w, wlen);
    }
    case OPT_FLOAT:
        if (parse_float(v, &d))
            goto bad;
        if ((o->fmin || o->fmax) && !(d >= o->fmin && d <= o->fmax))
            goto range;
        *(double *)p = d;
        return 0;
    case OPT_INT: rc = parse_scaled(v, 0, &u); break;
    case OPT_SIZE: rc = opt_parse_size(v, &u); break;
    case OPT_DUR:
        rc = opt_parse_dur(v, o->bare ? o->bare : o->unit, o->unit, &u);
        break;
    case OPT_LIST: goto bad; /* items go through opt.c */
    }
    if (rc)
        goto bad;
    if (u < lo || u > hi)
        goto range;
    store_int(o, p, u);
    return 0;
bad:
    snprintf(why, cap, "%s wants %s, not '%.*s'", name,
             opt_allowed(o, allowed, sizeof allowed), SHOWN_MAX, shown);
    return -1;
range:
    snprintf(why, cap, "%s=%.*s is out of range: %s", name, SHOWN_MAX, shown,
             opt_allowed(o, allowed, sizeof allowed));
    return -1;
}
