/*
 * jsonl_get.c - the typed getters of a parsed JSON line (see jsonl.h):
 * strings unescaped into the caller's buffer or compared in place, member
 * lookup by key (the tokenizer's key signatures first), and numbers and
 * booleans checked for type and range.  They read the line through the
 * tokens jsonl.c made and rely on what it proved (jsonl_int.h), checking
 * again only what keeps a read inside a token.
 */
#include "jsonl_int.h"

#include <gpufl/gpufl.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- strings ---- */

/* Writes code point cp as UTF-8 into u; returns the length. */
static size_t utf8_put(unsigned char *u, unsigned long cp)
{
    if (cp < 0x80) {
        u[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        u[0] = (unsigned char)(0xC0 | cp >> 6);
        u[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        u[0] = (unsigned char)(0xE0 | cp >> 12);
        u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        u[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    u[0] = (unsigned char)(0xF0 | cp >> 18);
    u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    u[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/*
 * Decodes the escape at *pp (**pp == '\\') into u (4 bytes), advancing *pp.
 * The tokenizer has checked it, but this is checked again against end so
 * that a line changed after parsing (a broken caller) cannot make us read
 * outside the token; returns 0 on an invalid escape or lone surrogate.
 */
static size_t unescape_one(const unsigned char **pp, const unsigned char *end,
                           unsigned char u[4])
{
    const unsigned char *p = *pp;
    long cp, lo;

    if (end - p < 2)
        return 0;
    switch (p[1]) {
    case '"': u[0] = '"'; break;
    case '\\': u[0] = '\\'; break;
    case '/': u[0] = '/'; break;
    case 'b': u[0] = '\b'; break;
    case 'f': u[0] = '\f'; break;
    case 'n': u[0] = '\n'; break;
    case 'r': u[0] = '\r'; break;
    case 't': u[0] = '\t'; break;
    case 'u':
        cp = hex4(p + 2, end);
        if (cp < 0 || (cp >= 0xDC00 && cp <= 0xDFFF))
            return 0;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (end - p < 12 || p[6] != '\\' || p[7] != 'u')
                return 0;
            lo = hex4(p + 8, end);
            if (lo < 0xDC00 || lo > 0xDFFF)
                return 0;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            *pp = p + 12;
        } else {
            *pp = p + 6;
        }
        return utf8_put(u, (unsigned long)cp);
    default: return 0;
    }
    *pp = p + 2;
    return 1;
}

static const jsonl_tok *tok_at(const jsonl_doc *d, uint32_t t)
{
    return t < d->n ? &d->tok[t] : NULL;
}

static int tok_fail(jsonl_doc *d, const jsonl_tok *tk, int code,
                    const char *why)
{
    d->err = why;
    d->err_off = tk ? tk->off : 0;
    return code;
}

int jsonl_tok_str(jsonl_doc *d, uint32_t t, char *buf, size_t cap, size_t *len)
{
    const jsonl_tok *tk = tok_at(d, t);
    const unsigned char *p, *end;
    size_t n = 0;

    if (!tk)
        return tok_fail(d, tk, GPUFL_ENOTFOUND, "no such token");
    if (tk->type != JSONL_STRING)
        return tok_fail(d, tk, GPUFL_EPARSE, "not a string");
    p = (const unsigned char *)d->line + tk->off;
    end = p + tk->len;
    if (!(tk->flags & JSONL_F_ESC)) {
        if (tk->len >= cap)
            goto too_big;
        memcpy(buf, p, tk->len);
        n = tk->len;
    } else {
        while (p < end) {
            const unsigned char *bs = memchr(p, '\\', (size_t)(end - p));
            size_t run = bs ? (size_t)(bs - p) : (size_t)(end - p), k;
            unsigned char u[4];

            if (run >= cap - n)
                goto too_big;
            memcpy(buf + n, p, run);
            n += run;
            p += run;
            if (p == end)
                break;
            k = unescape_one(&p, end, u);
            if (!k)
                return tok_fail(d, tk, GPUFL_EPARSE, "invalid escape");
            if (k >= cap - n)
                goto too_big;
            memcpy(buf + n, u, k);
            n += k;
        }
    }
    buf[n] = '\0';
    *len = n;
    return GPUFL_OK;
too_big:
    return tok_fail(d, tk, GPUFL_ETOOBIG, "string does not fit in buffer");
}

/* jsonl_tok_streq() for a string with escapes: decodes as it compares. */
static int streq_esc(const unsigned char *p, const unsigned char *end,
                     const unsigned char *s, size_t n)
{
    size_t i = 0;

    while (p < end) {
        unsigned char u[4];
        size_t k;

        if (*p != '\\') {
            if (i == n || *p != s[i])
                return 0;
            p++;
            i++;
            continue;
        }
        k = unescape_one(&p, end, u);
        if (!k || k > n - i || memcmp(u, s + i, k) != 0)
            return 0;
        i += k;
    }
    return i == n;
}

int jsonl_tok_streq(const jsonl_doc *d, uint32_t t, const char *s, size_t n)
{
    const jsonl_tok *tk = tok_at(d, t);
    const unsigned char *p;

    if (!tk || tk->type != JSONL_STRING)
        return 0;
    p = (const unsigned char *)d->line + tk->off;
    if (!(tk->flags & JSONL_F_ESC))
        return tk->len == n && (n == 0 || memcmp(p, s, n) == 0);
    return streq_esc(p, p + tk->len, (const unsigned char *)s, n);
}

/* ---- lookup ---- */

/* Whether key token k equals key[0, key_len) once decoded. */
static inline int key_eq(const jsonl_doc *d, const jsonl_tok *kt,
                         const char *key, size_t key_len)
{
    const unsigned char *k = (const unsigned char *)d->line + kt->off;

    if (!(kt->flags & JSONL_F_ESC))
        return kt->len == key_len &&
               (key_len == 0 || (k[0] == (unsigned char)key[0] &&
                                 memcmp(k, key, key_len) == 0));
    /* an escape is never shorter than what it decodes to */
    return kt->len >= key_len &&
           streq_esc(k, k + kt->len, (const unsigned char *)key, key_len);
}

/* Searches m members whose first key token is k. */
static uint32_t members_find(const jsonl_doc *d, uint32_t k, uint32_t m,
                             const char *key, size_t key_len)
{
    const jsonl_tok *tok = d->tok;

    /* Key tokens of an object are k, tok[k + 1].next, ...: the value's
     * `next` is the next key, so nested values are never walked. */
    while (m--) {
        if (key_eq(d, &tok[k], key, key_len))
            return k + 1;
        k = tok[k + 1].next;
    }
    return JSONL_NOTFOUND;
}

uint32_t jsonl_obj_findn(const jsonl_doc *d, uint32_t obj, const char *key,
                         size_t key_len)
{
    if (obj >= d->n || d->tok[obj].type != JSONL_OBJECT)
        return JSONL_NOTFOUND;
    return members_find(d, obj + 1, d->tok[obj].n, key, key_len);
}

uint32_t jsonl_obj_find(const jsonl_doc *d, uint32_t obj, const char *key)
{
    return jsonl_obj_findn(d, obj, key, strlen(key));
}

uint32_t jsonl_doc_findn(const jsonl_doc *d, const char *key, size_t key_len)
{
    uint32_t sig, i, last;

    if (d->n == 0 || d->tok[0].type != JSONL_OBJECT)
        return JSONL_NOTFOUND;
    sig = key_sig((const unsigned char *)key, key_len);
    /* in order, so the first of duplicate keys still wins */
    for (i = 0; i < d->nkey; i++) {
        if (d->key_sig[i] != sig && d->key_sig[i] != 0)
            continue;
        if (key_eq(d, &d->tok[d->key_tok[i]], key, key_len))
            return d->key_tok[i] + 1;
    }
    if (d->tok[0].n <= d->nkey)
        return JSONL_NOTFOUND;
    last = d->key_tok[d->nkey - 1];
    return members_find(d, d->tok[last + 1].next, d->tok[0].n - d->nkey, key,
                        key_len);
}

uint32_t jsonl_doc_find(const jsonl_doc *d, const char *key)
{
    return jsonl_doc_findn(d, key, strlen(key));
}

/* Whether unescaped key token kt, whose signature equals that of key (so
 * its length, below 255, and its first and last bytes match), is key: the
 * bytes between compared in place, as the keys of events are short (a
 * memcmp call per field cost more than the compare). */
static inline int sig_key_eq(const jsonl_doc *d, const jsonl_tok *kt,
                             const char *key, size_t key_len)
{
    const unsigned char *k = (const unsigned char *)d->line + kt->off;

    if (key_len > 16)
        return key_eq(d, kt, key, key_len);
    for (size_t i = 1; i + 1 < key_len; i++)
        if (k[i] != (unsigned char)key[i])
            return 0;
    return 1;
}

static unsigned set_hash(uint32_t sig)
{
    return (sig * 0x9e3779b1u) >> 26; /* 6 bits: JSONL_SET_SLOTS */
}

int jsonl_keyset_init(jsonl_keyset *ks, const char *const *keys, size_t n)
{
    memset(ks, 0, sizeof(*ks));
    if (n > JSONL_SET_MAX)
        return GPUFL_EINVAL;
    for (size_t i = 0; i < n; i++) {
        unsigned h;
        ks->key[i] = keys[i];
        ks->len[i] = (uint32_t)strlen(keys[i]);
        ks->sig[i] = key_sig((const unsigned char *)keys[i], ks->len[i]);
        for (h = set_hash(ks->sig[i]); ks->slot[h];
             h = (h + 1) % JSONL_SET_SLOTS)
            ;
        ks->slot[h] = (uint8_t)(i + 1);
    }
    ks->n = (uint32_t)n;
    return GPUFL_OK;
}

void jsonl_doc_findset(const jsonl_doc *d, const jsonl_keyset *ks,
                       uint32_t *out)
{
    for (uint32_t j = 0; j < ks->n; j++)
        out[j] = JSONL_NOTFOUND;
    if (d->n == 0 || d->tok[0].type != JSONL_OBJECT)
        return;
    /* the line's keys in order, each set only once: the first of
     * duplicate keys wins, as in jsonl_doc_findn() */
    for (uint32_t i = 0; i < d->nkey; i++) {
        const jsonl_tok *kt = &d->tok[d->key_tok[i]];
        uint32_t sig = d->key_sig[i];
        if (sig == 0) {
            /* escaped or empty: compared with every key, as findn does */
            for (uint32_t j = 0; j < ks->n; j++)
                if (out[j] == JSONL_NOTFOUND &&
                    key_eq(d, kt, ks->key[j], ks->len[j])) {
                    out[j] = d->key_tok[i] + 1;
                    break;
                }
            continue;
        }
        for (unsigned h = set_hash(sig); ks->slot[h];
             h = (h + 1) % JSONL_SET_SLOTS) {
            uint32_t j = ks->slot[h] - 1u;
            if (ks->sig[j] == sig &&
                sig_key_eq(d, kt, ks->key[j], ks->len[j])) {
                if (out[j] == JSONL_NOTFOUND)
                    out[j] = d->key_tok[i] + 1;
                break;
            }
        }
    }
    /* keys past the first JSONL_TOP_KEYS: the slow way (rare) */
    if (d->tok[0].n > d->nkey)
        for (uint32_t j = 0; j < ks->n; j++)
            if (out[j] == JSONL_NOTFOUND)
                out[j] = jsonl_doc_findn(d, ks->key[j], ks->len[j]);
}

jsonl_type jsonl_tok_type(const jsonl_doc *d, uint32_t t)
{
    return t < d->n ? (jsonl_type)d->tok[t].type : JSONL_NONE;
}

const char *jsonl_type_name(jsonl_type type)
{
    static const char *const names[] = { "none",   "object", "array", "string",
                                         "number", "true",   "false", "null" };
    if ((unsigned)type >= sizeof(names) / sizeof(names[0]))
        return "none";
    return names[type];
}

/* ---- numbers ---- */

/* The magnitude of the integer token tk in *out; the grammar guarantees
 * digits only (after an optional '-') and no leading zeros, so at most 20
 * digits can fit and only the 20th needs an overflow check. */
static int int_magnitude(jsonl_doc *d, const jsonl_tok *tk, uint64_t *out)
{
    const unsigned char *p, *end;
    uint64_t v = 0;
    size_t n;

    if (!tk)
        return tok_fail(d, tk, GPUFL_ENOTFOUND, "no such token");
    if (tk->type != JSONL_NUMBER)
        return tok_fail(d, tk, GPUFL_EPARSE, "not a number");
    if (tk->flags & JSONL_F_REAL)
        return tok_fail(d, tk, GPUFL_EPARSE, "not an integer");
    p = (const unsigned char *)d->line + tk->off;
    end = p + tk->len;
    if (tk->flags & JSONL_F_NEG)
        p++;
    n = (size_t)(end - p);
    if (n > 20)
        return tok_fail(d, tk, GPUFL_ETOOBIG, "integer out of range");
    if (n == 20)
        end--; /* the 20th digit is added with an overflow check below */
#if JSONL_SWAR
    while (end - p >= 8) {
        v = v * 100000000 + swar_eight_digits(load8(p));
        p += 8;
    }
#endif
    while (p < end)
        v = v * 10 + (unsigned)(*p++ - '0');
    if (n == 20) {
        unsigned last = *end - '0';
        if (v > (UINT64_MAX - last) / 10)
            return tok_fail(d, tk, GPUFL_ETOOBIG, "integer out of range");
        v = v * 10 + last;
    }
    *out = v;
    return GPUFL_OK;
}

int jsonl_tok_u64(jsonl_doc *d, uint32_t t, uint64_t *out)
{
    const jsonl_tok *tk = tok_at(d, t);
    uint64_t v;
    int err = int_magnitude(d, tk, &v);

    if (err)
        return err;
    if ((tk->flags & JSONL_F_NEG) && v)
        return tok_fail(d, tk, GPUFL_EPARSE, "negative value for unsigned");
    *out = v;
    return GPUFL_OK;
}

int jsonl_tok_i64(jsonl_doc *d, uint32_t t, int64_t *out)
{
    const jsonl_tok *tk = tok_at(d, t);
    uint64_t v;
    int err = int_magnitude(d, tk, &v);

    if (err)
        return err;
    if (tk->flags & JSONL_F_NEG) {
        if (v > (uint64_t)INT64_MAX + 1)
            return tok_fail(d, tk, GPUFL_ETOOBIG, "integer out of range");
        /* -(2^63) is INT64_MIN: negate in unsigned arithmetic */
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX)
            return tok_fail(d, tk, GPUFL_ETOOBIG, "integer out of range");
        *out = (int64_t)v;
    }
    return GPUFL_OK;
}

/* Exact powers of ten for the fast path (all representable in a double). */
static const double pow10_exact[23] = { 1e0,  1e1,  1e2,  1e3,  1e4,  1e5,
                                        1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                        1e12, 1e13, 1e14, 1e15, 1e16, 1e17,
                                        1e18, 1e19, 1e20, 1e21, 1e22 };

/*
 * Clinger's fast path: with a significand below 2^53 and |exp10| <= 22
 * both operands are exact doubles, so one IEEE multiply or divide gives the
 * correctly rounded result.  It needs double arithmetic without extended
 * precision (FLT_EVAL_METHOD 0, true of x86-64 and arm64).  Returns 0 when
 * the number is outside the fast path.
 */
static int f64_fast(const unsigned char *p, const unsigned char *end,
                    double *out)
{
#if FLT_EVAL_METHOD == 0
    uint64_t m = 0;
    int digits = 0, e10 = 0, neg = 0, eneg = 0, e = 0;
    double v;

    if (*p == '-') {
        neg = 1;
        p++;
    }
    for (; p < end && is_digit(*p); p++) {
        if (m || *p != '0')
            digits++;
        m = m * 10 + (unsigned)(*p - '0');
        if (digits > 19)
            return 0;
    }
    if (p < end && *p == '.') {
        for (p++; p < end && is_digit(*p); p++) {
            if (m || *p != '0')
                digits++;
            if (digits > 19)
                return 0;
            m = m * 10 + (unsigned)(*p - '0');
            e10--;
        }
    }
    if (p < end) {
        p++; /* 'e' or 'E' */
        if (*p == '+' || *p == '-')
            eneg = *p++ == '-';
        for (; p < end; p++) {
            e = e * 10 + (*p - '0');
            if (e > 1000)
                return 0;
        }
    }
    e10 += eneg ? -e : e;
    if (m > (1ull << 53))
        return 0;
    if (m == 0)
        v = 0.0;
    else if (e10 >= 0 && e10 <= 22)
        v = (double)m * pow10_exact[e10];
    else if (e10 < 0 && e10 >= -22)
        v = (double)m / pow10_exact[-e10];
    else
        return 0;
    *out = neg ? -v : v;
    return 1;
#else
    (void)p;
    (void)end;
    (void)out;
    return 0;
#endif
}

int jsonl_tok_f64(jsonl_doc *d, uint32_t t, double *out)
{
    const jsonl_tok *tk = tok_at(d, t);
    const unsigned char *p;
    char tmp[JSONL_MAX_NUMBER + 1], *ep;
    double v;

    if (!tk)
        return tok_fail(d, tk, GPUFL_ENOTFOUND, "no such token");
    if (tk->type != JSONL_NUMBER)
        return tok_fail(d, tk, GPUFL_EPARSE, "not a number");
    p = (const unsigned char *)d->line + tk->off;
    if (f64_fast(p, p + tk->len, out))
        return GPUFL_OK;
    if (tk->len > JSONL_MAX_NUMBER)
        return tok_fail(d, tk, GPUFL_ETOOBIG, "number too long");
    /* strtod needs a NUL-terminated copy: the line is not terminated */
    memcpy(tmp, p, tk->len);
    tmp[tk->len] = '\0';
    v = strtod(tmp, &ep);
    if (ep != tmp + tk->len)
        return tok_fail(d, tk, GPUFL_EPARSE, "not a number");
    if (isinf(v))
        return tok_fail(d, tk, GPUFL_ETOOBIG, "number out of range");
    *out = v;
    return GPUFL_OK;
}

int jsonl_tok_bool(jsonl_doc *d, uint32_t t, int *out)
{
    const jsonl_tok *tk = tok_at(d, t);

    if (!tk)
        return tok_fail(d, tk, GPUFL_ENOTFOUND, "no such token");
    if (tk->type != JSONL_TRUE && tk->type != JSONL_FALSE)
        return tok_fail(d, tk, GPUFL_EPARSE, "not a boolean");
    *out = tk->type == JSONL_TRUE;
    return GPUFL_OK;
}
