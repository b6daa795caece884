/*
 * srv_json.c - the API's integers: decimal strings for 64-bit quantities,
 * numbers for small ones (srv_json.h).
 */
#include "srv_json.h"

#include <string.h>

/* Digits and a sign need no escaping: the quoted text goes in raw (a
 * timeline answer writes thousands of these). */
void srv_jw_udec(jw *w, uint64_t v)
{
    char b[24];
    size_t n;

    b[0] = '"';
    n = 1 + jw_fmt_u64(b + 1, v);
    b[n++] = '"';
    jw_raw(w, b, n);
}

void srv_jw_dec(jw *w, int64_t v)
{
    char b[24];
    size_t n;

    if (v >= 0) {
        srv_jw_udec(w, (uint64_t)v);
        return;
    }
    b[0] = '"';
    b[1] = '-';
    n = 2 + jw_fmt_u64(b + 2, 0 - (uint64_t)v);
    b[n++] = '"';
    jw_raw(w, b, n);
}

void srv_jw_kv_dec(jw *w, const char *key, int64_t v)
{
    jw_key(w, key);
    srv_jw_dec(w, v);
}

void srv_jw_kv_udec(jw *w, const char *key, uint64_t v)
{
    jw_key(w, key);
    srv_jw_udec(w, v);
}

void srv_jw_num(jw *w, int64_t v)
{
    if (v > SRV_JSON_SAFE_MAX || v < -SRV_JSON_SAFE_MAX)
        srv_jw_dec(w, v);
    else
        jw_i64(w, v);
}

void srv_jw_unum(jw *w, uint64_t v)
{
    if (v > (uint64_t)SRV_JSON_SAFE_MAX)
        srv_jw_udec(w, v);
    else
        jw_u64(w, v);
}

void srv_jw_kv_num(jw *w, const char *key, int64_t v)
{
    jw_key(w, key);
    srv_jw_num(w, v);
}

void srv_jw_kv_unum(jw *w, const char *key, uint64_t v)
{
    jw_key(w, key);
    srv_jw_unum(w, v);
}

/* An integer's text (no fraction, no exponent) beyond 2^53 - 1: more
 * than 16 digits, or 16 digits above "9007199254740991". */
static int past_safe(const char *p, size_t n)
{
    if (n && *p == '-') {
        p++;
        n--;
    }
    return n > 16 || (n == 16 && memcmp(p, "9007199254740991", 16) > 0);
}

void srv_jw_copy(jw *w, const jsonl_doc *d, uint32_t t)
{
    const jsonl_tok *k = &d->tok[t];
    const char *p = d->line + k->off;

    switch (k->type) {
    case JSONL_OBJECT:
        jw_obj_begin(w);
        for (uint32_t i = 0, c = t + 1; i < k->n; i++) {
            jw_key_json(w, d->line + d->tok[c].off, d->tok[c].len);
            srv_jw_copy(w, d, c + 1);
            c = d->tok[c + 1].next;
        }
        jw_obj_end(w);
        break;
    case JSONL_ARRAY:
        jw_arr_begin(w);
        for (uint32_t i = 0, c = t + 1; i < k->n; i++) {
            srv_jw_copy(w, d, c);
            c = d->tok[c].next;
        }
        jw_arr_end(w);
        break;
    case JSONL_STRING: jw_raw(w, p - 1, k->len + 2); break;
    case JSONL_NUMBER:
        if (!(k->flags & JSONL_F_REAL) && past_safe(p, k->len))
            jw_strn(w, p, k->len, k->len);
        else
            jw_raw(w, p, k->len);
        break;
    default: jw_raw(w, p, k->len);
    }
}
