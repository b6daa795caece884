/*
 * jw.c - bounded JSON writer (see jw.h).
 *
 * Numbers are formatted by hand: snprintf is ~10x slower and the collector
 * formats millions of numbers a second.
 */
#include "jw.h"

#include "buf.h"

#include <gpufl/gpufl.h>

#include <math.h>
#include <string.h>

void jw_init(jw *w, char *buf, size_t cap)
{
    w->buf = buf;
    w->cap = cap;
    jw_reset(w);
}

void jw_reset(jw *w)
{
    w->len = 0;
    w->err = 0;
    w->depth = 0;
    w->comma = 0;
    w->need = 0;
    w->deep = 0;
}

void jw_put(jw *w, const char *s, size_t n)
{
    if (w->err || n > w->cap - w->len) {
        w->err = 1;
        w->need += n;
        return;
    }
    memcpy(w->buf + w->len, s, n);
    w->len += n;
}

static void put_c(jw *w, char c)
{
    if (w->err || w->len >= w->cap) {
        w->err = 1;
        w->need++;
        return;
    }
    w->buf[w->len++] = c;
}

/* Called before every value or key: writes the separating comma. */
static void sep(jw *w)
{
    uint32_t bit = 1u << (w->depth & 31);
    if (w->comma & bit)
        put_c(w, ',');
    w->comma |= bit;
}

static void open_c(jw *w, char c)
{
    sep(w);
    put_c(w, c);
    if (w->depth + 1 >= JW_MAX_DEPTH) {
        w->err = 1;
        w->deep = 1;
        return;
    }
    w->depth++;
    w->comma &= ~(1u << w->depth);
}

static void close_c(jw *w, char c)
{
    if (w->depth > 0)
        w->depth--;
    put_c(w, c);
}

void jw_obj_begin(jw *w)
{
    open_c(w, '{');
}
void jw_obj_end(jw *w)
{
    close_c(w, '}');
}
void jw_arr_begin(jw *w)
{
    open_c(w, '[');
}
void jw_arr_end(jw *w)
{
    close_c(w, ']');
}

void jw_key(jw *w, const char *key)
{
    size_t n = strlen(key);
    sep(w);
    put_c(w, '"');
    jw_put(w, key, n);
    put_c(w, '"');
    put_c(w, ':');
    /* the value that follows must not get a comma of its own */
    w->comma &= ~(1u << (w->depth & 31));
}

void jw_key_str(jw *w, const char *key)
{
    jw_strn(w, key, strlen(key), (size_t)-1);
    put_c(w, ':');
    w->comma &= ~(1u << (w->depth & 31));
}

void jw_key_json(jw *w, const char *s, size_t n)
{
    sep(w);
    put_c(w, '"');
    jw_put(w, s, n);
    put_c(w, '"');
    put_c(w, ':');
    w->comma &= ~(1u << (w->depth & 31));
}

size_t jw_fmt_u64(char *out, uint64_t v)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

void jw_u64(jw *w, uint64_t v)
{
    char tmp[24];
    sep(w);
    jw_put(w, tmp, jw_fmt_u64(tmp, v));
}

void jw_i64(jw *w, int64_t v)
{
    char tmp[24];
    size_t n = 0;
    uint64_t u;
    sep(w);
    if (v < 0) {
        tmp[n++] = '-';
        u = (uint64_t)0 - (uint64_t)v;
    } else {
        u = (uint64_t)v;
    }
    n += jw_fmt_u64(tmp + n, u);
    jw_put(w, tmp, n);
}

void jw_f64(jw *w, double v, int decimals)
{
    char tmp[48];
    size_t n = 0;
    uint64_t scale = 1, ip, fp;
    double a;
    if (!isfinite(v) || fabs(v) >= 9e15) {
        jw_null(w);
        return;
    }
    if (decimals < 0)
        decimals = 0;
    if (decimals > 9)
        decimals = 9;
    for (int i = 0; i < decimals; i++)
        scale *= 10;
    /* a large value keeps fewer decimals: |v| * scale must stay exact in
     * a double (< 2^53) to fit uint64_t and not print noise digits
     * (fuzz_report found 2.5e19 from 2.5e10 at 9 decimals) */
    while (decimals > 0 && fabs(v) * (double)scale >= 9e15) {
        scale /= 10;
        decimals--;
    }
    a = fabs(v) * (double)scale + 0.5;
    ip = (uint64_t)a / scale;
    fp = (uint64_t)a % scale;
    sep(w);
    if (v < 0 && (ip || fp))
        tmp[n++] = '-';
    n += jw_fmt_u64(tmp + n, ip);
    if (fp) {
        int d = decimals;
        while (fp % 10 == 0) {
            fp /= 10;
            d--;
        }
        tmp[n++] = '.';
        char digs[24];
        size_t k = jw_fmt_u64(digs, fp);
        for (size_t z = k; z < (size_t)d; z++)
            tmp[n++] = '0';
        memcpy(tmp + n, digs, k);
        n += k;
    }
    jw_put(w, tmp, n);
}

void jw_bool(jw *w, int v)
{
    sep(w);
    if (v)
        jw_put(w, "true", 4);
    else
        jw_put(w, "false", 5);
}

void jw_null(jw *w)
{
    sep(w);
    jw_put(w, "null", 4);
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return (n >= 2 && (s[1] & 0xC0) == 0x80) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80)
            return 0;
        if (c == 0xE0 && s[1] < 0xA0)
            return 0; /* overlong */
        if (c == 0xED && s[1] >= 0xA0)
            return 0; /* surrogate */
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 ||
            (s[3] & 0xC0) != 0x80)
            return 0;
        if (c == 0xF0 && s[1] < 0x90)
            return 0;
        if (c == 0xF4 && s[1] >= 0x90)
            return 0;
        return 4;
    }
    return 0;
}

void jw_strn(jw *w, const char *s, size_t n, size_t maxlen)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    if (n > maxlen) {
        n = maxlen;
        /* cut before a UTF-8 sequence, never inside it (a sequence has at
         * most 3 continuation bytes; longer runs are invalid anyway and
         * are replaced below) */
        size_t k = n;
        while (k > 0 && n - k < 3 && (p[k] & 0xC0) == 0x80)
            k--;
        if ((p[k] & 0xC0) != 0x80)
            n = k;
    }
    sep(w);
    put_c(w, '"');
    /* on past an error too: need counts every byte */
    while (i < n) {
        unsigned char c = p[i];
        size_t run = i;
        /* copy the longest run of bytes that need no escaping at once */
        while (run < n && p[run] >= 0x20 && p[run] < 0x80 && p[run] != '"' &&
               p[run] != '\\')
            run++;
        if (run > i) {
            jw_put(w, s + i, run - i);
            i = run;
            continue;
        }
        if (c < 0x80) {
            char e[6] = { '\\', 'u', '0', '0', 0, 0 };
            switch (c) {
            case '"': jw_put(w, "\\\"", 2); break;
            case '\\': jw_put(w, "\\\\", 2); break;
            case '\n': jw_put(w, "\\n", 2); break;
            case '\r': jw_put(w, "\\r", 2); break;
            case '\t': jw_put(w, "\\t", 2); break;
            default:
                e[4] = hex[c >> 4];
                e[5] = hex[c & 15];
                jw_put(w, e, 6);
            }
            i++;
            continue;
        }
        size_t k = utf8_len(p + i, n - i);
        if (k == 0) {
            /* cut inside a sequence at maxlen, or invalid: U+FFFD */
            jw_put(w, "\xEF\xBF\xBD", 3);
            i++;
        } else {
            jw_put(w, s + i, k);
            i += k;
        }
    }
    put_c(w, '"');
}

void jw_str(jw *w, const char *s)
{
    if (!s) {
        jw_null(w);
        return;
    }
    jw_strn(w, s, strlen(s), (size_t)-1);
}

void jw_raw(jw *w, const char *s, size_t n)
{
    sep(w);
    jw_put(w, s, n);
}

void jw_kv_u64(jw *w, const char *key, uint64_t v)
{
    jw_key(w, key);
    jw_u64(w, v);
}

void jw_kv_i64(jw *w, const char *key, int64_t v)
{
    jw_key(w, key);
    jw_i64(w, v);
}

void jw_kv_str(jw *w, const char *key, const char *s)
{
    jw_key(w, key);
    jw_str(w, s);
}

int jw_gbuf_run(gbuf *g, void (*fn)(jw *w, void *ctx), void *ctx)
{
    jw w;
    int rc;

    /* a buffer to point at, even when fn writes nothing */
    if ((rc = gbuf_grow(g, 0)) != 0)
        return rc;
    jw_init(&w, g->p + g->len, gbuf_avail(g));
    fn(&w, ctx);
    if (w.err && !w.deep) {
        /* the exact size is known now: one more pass */
        if ((rc = gbuf_grow(g, w.len + w.need)) != 0) {
            gbuf_setlen(g, g->len); /* the first pass is not content */
            return rc;
        }
        jw_init(&w, g->p + g->len, gbuf_avail(g));
        fn(&w, ctx);
    }
    if (w.err) {
        gbuf_setlen(g, g->len);
        return GPUFL_ETOOBIG;
    }
    gbuf_setlen(g, g->len + w.len);
    return 0;
}
