/*
 * jsonl.c - the JSON lines reader: line framing, the strict tokenizer and
 * the typed getters (see jsonl.h for the contract).
 *
 * The tokenizer is one function driven by gotos rather than recursion: the
 * nesting stack is a fixed array of JSONL_MAX_DEPTH entries, so hostile
 * input cannot exhaust the C stack, and a compact event line goes through
 * a handful of branches per token.  Strings and digit runs are scanned 8
 * bytes at a time where the target allows (SWAR, below); only quotes,
 * backslashes, control characters and non-ASCII bytes leave the fast loop.
 * Time per ~270-byte event line is about 250 ns (bench/reader).
 *
 * Longer than the 800-line aim on purpose: the getters rely on what the
 * tokenizer has proven (escapes valid, integer tokens digits only) and
 * share its escape and UTF-8 helpers; splitting them apart would spread
 * those invariants over two files.
 */
#include "jsonl.h"

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

/*
 * SWAR: on little-endian GCC/Clang targets the string and digit scans test
 * 8 bytes per step.  Beyond raw speed this makes the loop exit predictable:
 * most keys and numbers end inside their first word, where a byte-by-byte
 * loop would mispredict on every length change.  Elsewhere the byte loops
 * below do the same job.
 */
#if defined(__GNUC__) && defined(__BYTE_ORDER__) &&                            \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define JSONL_SWAR 1
#define JSONL_INLINE static inline __attribute__((always_inline))
#else
#define JSONL_SWAR 0
#define JSONL_INLINE static inline
#endif

#if JSONL_SWAR
#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

static inline uint64_t load8(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* The high bit of each byte of x that would stop the string scan ('"',
 * '\\', < 0x20, >= 0x80).  Borrows can flag bytes above a flagged one, so
 * only the lowest flag is exact: that is the one used. */
static inline uint64_t swar_str_stop(uint64_t x)
{
    uint64_t q = x ^ (ONES * '"'), b = x ^ (ONES * '\\');
    return (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((x - ONES * 0x20) & ~x) |
            x) &
           HIGHS;
}

/* The value of 8 ASCII digits (Lemire's "parsing eight digits"): pairs,
 * then quads, then the whole, in three multiplies instead of eight
 * dependent multiply-adds. */
static inline uint64_t swar_eight_digits(uint64_t x)
{
    x -= ONES * '0';
    x = x * 10 + (x >> 8);
    x = (((x & 0x000000FF000000FFull) * (100 + (1000000ull << 32))) +
         (((x >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32)))) >>
        32;
    return x;
}

/* The high bit of each byte of x that is not an ASCII digit; as above,
 * only the lowest flag is exact.  x ^ '0' maps the digits, and only them,
 * to 0..9; adding 0x76 sets the high bit of anything from 10 up. */
static inline uint64_t swar_nondigit(uint64_t x)
{
    uint64_t t = x ^ (ONES * '0');
    return ((t + ONES * 0x76) | t) & HIGHS;
}
#endif

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

static inline const unsigned char *skip_ws(const unsigned char *p,
                                           const unsigned char *end)
{
    /* one compare settles the common compact case */
    while (p < end && *p <= ' ' &&
           (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

static inline int is_digit(unsigned c)
{
    return c - '0' < 10u;
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

/* A key's signature for jsonl_doc_find(): its length (255 for longer),
 * first and last byte, enough to tell event keys apart without touching
 * the line.  0 is kept for keys that must always be compared in full:
 * those with escapes (and the empty key, harmlessly). */
static inline uint32_t key_sig(const unsigned char *k, size_t len)
{
    if (len == 0)
        return 0;
    return (len < 255 ? (uint32_t)len : 255) | (uint32_t)k[0] << 8 |
           (uint32_t)k[len - 1] << 16;
}

/* Value of 4 hex digits at p, or -1 (also when fewer than 4 bytes are
 * left before end). */
static long hex4(const unsigned char *p, const unsigned char *end)
{
    long v = 0;

    if (end - p < 4)
        return -1;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i];
        v <<= 4;
        if (c - '0' < 10u)
            v |= c - '0';
        else if ((c | 0x20) - 'a' < 6u)
            v |= (c | 0x20) - 'a' + 10;
        else
            return -1;
    }
    return v;
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
    int depth = 0, code = GPUFL_EPARSE;
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
        if (*p == '{') {
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
    if (tok[top].type == JSONL_OBJECT) {
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
    if (--depth)
        top = stack[depth - 1];
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
