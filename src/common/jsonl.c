/*
 * jsonl.c - the JSON lines reader: line framing and the strict tokenizer
 * (see jsonl.h for the contract; the typed getters of a parsed line are
 * jsonl_get.c, the helpers both use and what the tokenizer proves for the
 * getters are jsonl_int.h).
 *
 * The tokenizer is one function driven by gotos rather than recursion: the
 * nesting stack is a fixed array of JSONL_MAX_DEPTH entries, so hostile
 * input cannot exhaust the C stack, and a compact event line goes through
 * a handful of branches per token.  Strings and digit runs are scanned 8
 * bytes at a time where the target allows (SWAR, jsonl_int.h); only quotes,
 * backslashes, control characters and non-ASCII bytes leave the fast loop.
 * Time per ~270-byte event line is about 250 ns (bench/reader).
 */
#include "jsonl_int.h"

#include <gpufl/gpufl.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* 1 for the bytes that stop the fast scan inside a string: '"', '\\',
 * U+0000..U+001F (rejected), and every non-ASCII byte (UTF-8, checked on
 * the slow path).  DEL (0x7F) is allowed raw by RFC 8259. */
/* clang-format off */
static const uint8_t str_stop[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};
/* clang-format on */

static const char E_TOO_MANY[] = "too many tokens";
static const char E_TOO_DEEP[] = "nesting deeper than 64";
_Static_assert(JSONL_MAX_DEPTH == 64, "E_TOO_DEEP names the depth cap");
static const char E_UNTERMINATED[] = "unterminated string";

/* ---- line framing ---- */

int jsonl_line_next(const char *buf, size_t len, size_t *pos, const char **line,
                    size_t *line_len)
{
    size_t p = *pos, n;
    const char *nl;

    if (p >= len)
        return 0;
    nl = memchr(buf + p, '\n', len - p);
    if (!nl)
        return 0;
    n = (size_t)(nl - (buf + p));
    if (n && nl[-1] == '\r')
        n--;
    *line = buf + p;
    *line_len = n;
    *pos = (size_t)(nl - buf) + 1;
    return 1;
}

int jsonl_line_tail(const char *buf, size_t len, size_t *pos, const char **line,
                    size_t *line_len)
{
    size_t p = *pos, n;

    if (p >= len)
        return 0;
    n = len - p;
    if (buf[len - 1] == '\r')
        n--;
    *line = buf + p;
    *line_len = n;
    *pos = len;
    return 1;
}

/* ---- tokenizer ---- */

void jsonl_doc_init(jsonl_doc *d, jsonl_tok *tok, uint32_t cap)
{
    memset(d, 0, sizeof(*d));
    d->tok = tok;
    d->cap = cap;
}

/* Always inlined: gcc called it out of line after each ',' (13 calls a
 * kernel line, ~200 instructions with the calls). */
JSONL_INLINE const unsigned char *skip_ws(const unsigned char *p,
                                          const unsigned char *end)
{
    /* one compare settles the common compact case */
    while (p < end && *p <= ' ' &&
           (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

JSONL_INLINE const unsigned char *skip_digits(const unsigned char *p,
                                              const unsigned char *end)
{
#if JSONL_SWAR
    while (end - p >= 8) {
        uint64_t m = swar_nondigit(load8(p));
        if (m)
            return p + (__builtin_ctzll(m) >> 3);
        p += 8;
    }
#endif
    while (p < end && is_digit(*p))
        p++;
    return p;
}

/* Length (2..4) of the valid UTF-8 sequence starting with the non-ASCII
 * byte at p, or 0.  The second-byte ranges exclude overlong forms (C0, C1,
 * E0 80..9F, F0 80..8F), UTF-16 surrogates (ED A0..BF) and code points
 * above U+10FFFF (F4 90.., F5..FF). */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0], lo = 0x80, hi = 0xBF;
    size_t n;

    if (c < 0xC2)
        return 0;
    if (c < 0xE0) {
        n = 2;
    } else if (c < 0xF0) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c < 0xF5) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    if ((size_t)(end - p) < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

/* Checks the escape at p (p[0] == '\\'); returns the byte after it, or
 * NULL with *at / *why set. */
static const unsigned char *scan_escape(const unsigned char *p,
                                        const unsigned char *end,
                                        const unsigned char **at,
                                        const char **why)
{
    long cp, lo;

    *at = p;
    if (end - p < 2) {
        *at = NULL; /* reported at the opening quote */
        *why = E_UNTERMINATED;
        return NULL;
    }
    switch (p[1]) {
    case '"':
    case '\\':
    case '/':
    case 'b':
    case 'f':
    case 'n':
    case 'r':
    case 't': return p + 2;
    case 'u': break;
    default: *why = "invalid escape in string"; return NULL;
    }
    cp = hex4(p + 2, end);
    if (cp < 0) {
        *why = "invalid \\u escape";
        return NULL;
    }
    if (cp < 0xD800 || cp > 0xDFFF)
        return p + 6;
    /* A surrogate must be a high one followed at once by a low one, or
     * the string could not be decoded to UTF-8. */
    if (cp <= 0xDBFF && end - p >= 8 && p[6] == '\\' && p[7] == 'u') {
        lo = hex4(p + 8, end);
        if (lo < 0) {
            *at = p + 6;
            *why = "invalid \\u escape";
            return NULL;
        }
        if (lo >= 0xDC00 && lo <= 0xDFFF)
            return p + 12;
    }
    *why = "lone surrogate in \\u escape";
    return NULL;
}

/* Scans a string body from p (just after the opening quote); returns the
 * closing quote, or NULL with *at / *why set (*at NULL: unterminated). */
JSONL_INLINE const unsigned char *
scan_string(const unsigned char *p, const unsigned char *end, uint8_t *flags,
            const unsigned char **at, const char **why)
{
    for (;;) {
        size_t k;

#if JSONL_SWAR
        for (;;) {
            uint64_t m;

            if (end - p < 8) {
                while (p < end && !str_stop[*p])
                    p++;
                break;
            }
            m = swar_str_stop(load8(p));
            if (m) {
                p += __builtin_ctzll(m) >> 3;
                break;
            }
            p += 8;
        }
#else
        while (end - p >= 4 && !str_stop[p[0]] && !str_stop[p[1]] &&
               !str_stop[p[2]] && !str_stop[p[3]])
            p += 4;
        while (p < end && !str_stop[*p])
            p++;
#endif
        if (p == end) {
            *at = NULL;
            *why = E_UNTERMINATED;
            return NULL;
        }
        if (*p == '"')
            return p;
        if (*p == '\\') {
            *flags |= JSONL_F_ESC;
            p = scan_escape(p, end, at, why);
            if (!p)
                return NULL;
            continue;
        }
        if (*p < 0x20) {
            *at = p;
            *why = "control character in string";
            return NULL;
        }
        k = utf8_seq(p, end);
        if (!k) {
            *at = p;
            *why = "invalid UTF-8 in string";
            return NULL;
        }
        p += k;
    }
}

/* Scans the number starting at p (a '-' or a digit); returns the byte
 * after it, or NULL with *at / *why set. */
JSONL_INLINE const unsigned char *
scan_number(const unsigned char *p, const unsigned char *end, uint8_t *flags,
            const unsigned char **at, const char **why)
{
    const char *bad = "invalid number";

    if (*p == '-') {
        *flags |= JSONL_F_NEG;
        p++;
    }
    if (p == end || !is_digit(*p))
        goto fail;
    if (*p == '0') {
        p++;
        if (p < end && is_digit(*p)) {
            bad = "leading zero in number";
            goto fail;
        }
    } else {
        p = skip_digits(p + 1, end);
    }
    if (p < end && *p == '.') {
        *flags |= JSONL_F_REAL;
        p++;
        if (p == end || !is_digit(*p))
            goto fail;
        p = skip_digits(p + 1, end);
    }
    if (p < end && (*p | 0x20) == 'e') {
        *flags |= JSONL_F_REAL;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p == end || !is_digit(*p))
            goto fail;
        p = skip_digits(p + 1, end);
    }
    return p;
fail:
    *at = p;
    *why = bad;
    return NULL;
}

/*
 * The tokenizer.  States are labels: `value` expects any value at p,
 * `key` a member name, `after` what may follow a complete value, `close`
 * ends the container tok[top] at the bracket at p.  Invariant: top is
 * stack[depth - 1] whenever depth > 0.
 */
static int parse(jsonl_doc *d, const char *line, size_t len, int want_obj)
{
    const unsigned char *s = (const unsigned char *)line;
    const unsigned char *p = s, *end = s + len, *q, *at = s;
    jsonl_tok *tok = d->tok, *t;
    uint32_t cap = d->cap, nt = 0, top = 0, nkey = 0;
    uint32_t stack[JSONL_MAX_DEPTH];
    /* in_obj: tok[top] is an object (kept here, not read back per value) */
    int depth = 0, code = GPUFL_EPARSE, in_obj = 0;
    const char *why;

    d->line = line;
    d->len = len;
    d->n = 0;
    d->nkey = 0;
    d->err = NULL;
    d->err_off = 0;
    if (len >= UINT32_MAX) {
        code = GPUFL_ETOOBIG;
        why = "line too long for 32-bit offsets";
        goto fail;
    }
    p = skip_ws(p, end);
    if (want_obj && p < end && *p != '{') {
        at = p;
        why = "top-level value is not an object";
        goto fail;
    }

value_ws:
    p = skip_ws(p, end);
value:
    if (p == end) {
        at = p;
        why = "expected a value";
        goto fail;
    }
    if (nt == cap)
        goto too_many;
    t = tok + nt;
    t->off = (uint32_t)(p - s);
    t->n = 0;
    t->flags = 0;
    switch (*p) {
    case '{':
    case '[':
        if (depth == JSONL_MAX_DEPTH) {
            at = p;
            code = GPUFL_ETOOBIG;
            why = E_TOO_DEEP;
            goto fail;
        }
        top = nt++;
        stack[depth++] = top;
        in_obj = *p == '{';
        if (in_obj) {
            t->type = JSONL_OBJECT;
            p = skip_ws(p + 1, end);
            if (p < end && *p == '}')
                goto close;
            goto key;
        }
        t->type = JSONL_ARRAY;
        p = skip_ws(p + 1, end);
        if (p < end && *p == ']')
            goto close;
        t->n = 1;
        goto value;
    case '"':
        q = scan_string(p + 1, end, &t->flags, &at, &why);
        if (!q) {
            if (!at)
                at = p;
            goto fail;
        }
        t->type = JSONL_STRING;
        t->off++;
        t->len = (uint32_t)(q - p - 1);
        t->next = ++nt;
        p = q + 1;
        goto after;
    case '-':
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9':
        q = scan_number(p, end, &t->flags, &at, &why);
        if (!q)
            goto fail;
        t->type = JSONL_NUMBER;
        t->len = (uint32_t)(q - p);
        t->next = ++nt;
        p = q;
        goto after;
    case 't':
        if (end - p < 4 || memcmp(p, "true", 4) != 0)
            goto bad_literal;
        t->type = JSONL_TRUE;
        t->len = 4;
        break;
    case 'f':
        if (end - p < 5 || memcmp(p, "false", 5) != 0)
            goto bad_literal;
        t->type = JSONL_FALSE;
        t->len = 5;
        break;
    case 'n':
        if (end - p < 4 || memcmp(p, "null", 4) != 0)
            goto bad_literal;
        t->type = JSONL_NULL;
        t->len = 4;
        break;
    default:
        at = p;
        why = "expected a value";
        goto fail;
    }
    t->next = ++nt;
    p += t->len;
    goto after;

key:
    /* p is on the first non-blank byte after '{' (not '}') or ',' */
    if (p == end || *p != '"') {
        at = p;
        why = p < end && *p == '}' ? "trailing comma in object"
                                   : "expected a string key";
        goto fail;
    }
    if (nt == cap)
        goto too_many;
    t = tok + nt;
    t->off = (uint32_t)(p + 1 - s);
    t->n = 0;
    t->flags = 0;
    t->type = JSONL_STRING;
    q = scan_string(p + 1, end, &t->flags, &at, &why);
    if (!q) {
        if (!at)
            at = p;
        goto fail;
    }
    t->len = (uint32_t)(q - p - 1);
    if (depth == 1 && nkey < JSONL_TOP_KEYS) {
        d->key_tok[nkey] = nt;
        d->key_sig[nkey++] =
            t->flags & JSONL_F_ESC ? 0 : key_sig(p + 1, t->len);
    }
    t->next = ++nt;
    tok[top].n++;
    p = q + 1;
    if (p < end && *p == ':') {
        /* compact "key":value, as every gpufl writer emits */
        p++;
        goto value_ws;
    }
    p = skip_ws(p, end);
    if (p == end || *p != ':') {
        at = p;
        why = "expected ':' after key";
        goto fail;
    }
    p++;
    goto value_ws;

after:
    p = skip_ws(p, end);
    if (depth == 0) {
        if (p != end) {
            at = p;
            why = "trailing characters after the value";
            goto fail;
        }
        d->n = nt;
        d->nkey = nkey;
        return GPUFL_OK;
    }
    if (in_obj) {
        if (p < end && *p == ',') {
            p = skip_ws(p + 1, end);
            goto key;
        }
        if (p < end && *p == '}')
            goto close;
        at = p;
        why = "expected ',' or '}'";
        goto fail;
    }
    if (p < end && *p == ',') {
        p = skip_ws(p + 1, end);
        if (p < end && *p == ']') {
            at = p;
            why = "trailing comma in array";
            goto fail;
        }
        tok[top].n++;
        goto value;
    }
    if (p < end && *p == ']')
        goto close;
    at = p;
    why = "expected ',' or ']'";
    goto fail;

close:
    tok[top].len = (uint32_t)(p + 1 - s) - tok[top].off;
    tok[top].next = nt;
    if (--depth) {
        top = stack[depth - 1];
        in_obj = tok[top].type == JSONL_OBJECT;
    }
    p++;
    goto after;

bad_literal:
    at = p;
    why = "invalid literal";
    goto fail;
too_many:
    at = p;
    code = GPUFL_ETOOBIG;
    why = E_TOO_MANY;
fail:
    d->err_off = (size_t)(at - s);
    d->err = why;
    return code;
}

int jsonl_doc_parse(jsonl_doc *d, const char *line, size_t len)
{
    return parse(d, line, len, 0);
}

int jsonl_doc_parse_obj(jsonl_doc *d, const char *line, size_t len)
{
    return parse(d, line, len, 1);
}
