/*
 * fuzz_jsonl.c - libFuzzer target for the JSONL reader (src/common/jsonl.c).
 *
 * Beyond "does not crash", every input is checked against oracles that
 * share no code with the reader:
 *   - a plain recursive-descent RFC 8259 validator must agree on accept or
 *     reject (and on which cap, for depth);
 *   - the token tree must be well formed (offsets inside the line, brackets
 *     and quotes where the tokens say, `next` and `n` consistent);
 *   - every string must decode, compare equal to its decoding, and survive
 *     a jw re-encode and re-parse unchanged (so its decoding is valid
 *     UTF-8);
 *   - lookups must return the first member whose decoded key matches;
 *   - numbers: u64, i64 and f64 must agree with each other and with
 *     strtod();
 *   - a small token array must give the same tokens or "too many tokens".
 * Built with clang -fsanitize=fuzzer it fuzzes; built with replay_main.c it
 * replays a corpus as an ordinary test.
 */
#include "common/jsonl.h"
#include "common/jw.h"

#include <gpufl/gpufl.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Inputs up to this size get the differential checks (each byte makes at
 * most one token, so this many tokens always suffice). */
#define FUZZ_MAX_TOKENS 65536
#define FUZZ_STR_MAX 65536

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A failed oracle: report and abort so libFuzzer keeps the input. */
#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: oracle failed: %s\n", __FILE__, __LINE__,  \
                    #c);                                                       \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* ---- the reference validator ---- */

typedef struct ref {
    const unsigned char *p, *end;
    int depth;
    int too_deep;
} ref;

static int ref_value(ref *r);

static void ref_ws(ref *r)
{
    while (r->p < r->end &&
           (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

static int ref_hex(ref *r, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c;
        if (r->p == r->end)
            return 0;
        c = *r->p++;
        if (c >= '0' && c <= '9')
            *v = *v * 16 + (c - '0');
        else if (c >= 'a' && c <= 'f')
            *v = *v * 16 + (c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            *v = *v * 16 + (c - 'A' + 10);
        else
            return 0;
    }
    return 1;
}

/* One UTF-8 sequence, decoded and range-checked (the reader checks byte
 * ranges instead). */
static int ref_utf8(ref *r)
{
    unsigned c = *r->p++, cp, need, min;

    if (c >= 0xF0 && c <= 0xF7) {
        cp = c & 7;
        need = 3;
        min = 0x10000;
    } else if (c >= 0xE0) {
        if (c > 0xEF)
            return 0;
        cp = c & 15;
        need = 2;
        min = 0x800;
    } else if (c >= 0xC0) {
        cp = c & 31;
        need = 1;
        min = 0x80;
    } else {
        return 0;
    }
    for (unsigned i = 0; i < need; i++) {
        if (r->p == r->end || (*r->p & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (*r->p++ & 0x3F);
    }
    return cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
}

static int ref_string(ref *r)
{
    r->p++; /* '"' */
    for (;;) {
        unsigned c, v, lo;
        if (r->p == r->end)
            return 0;
        c = *r->p;
        if (c == '"') {
            r->p++;
            return 1;
        }
        if (c < 0x20)
            return 0;
        if (c >= 0x80) {
            if (!ref_utf8(r))
                return 0;
            continue;
        }
        r->p++;
        if (c != '\\')
            continue;
        if (r->p == r->end)
            return 0;
        c = *r->p++;
        if (strchr("\"\\/bfnrt", (int)c) && c)
            continue;
        if (c != 'u' || !ref_hex(r, &v))
            return 0;
        if (v >= 0xDC00 && v <= 0xDFFF)
            return 0;
        if (v >= 0xD800 && v <= 0xDBFF) {
            if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u')
                return 0;
            r->p += 2;
            if (!ref_hex(r, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                return 0;
        }
    }
}

static int ref_digits(ref *r)
{
    const unsigned char *s = r->p;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
        r->p++;
    return r->p > s;
}

static int ref_number(ref *r)
{
    if (*r->p == '-')
        r->p++;
    if (r->p == r->end)
        return 0;
    if (*r->p == '0')
        r->p++;
    else if (!ref_digits(r))
        return 0;
    if (r->p < r->end && *r->p == '.') {
        r->p++;
        if (!ref_digits(r))
            return 0;
    }
    if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
        r->p++;
        if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
            r->p++;
        if (!ref_digits(r))
            return 0;
    }
    /* "01": the tokenizer says "leading zero", here the next value check
     * fails on the digit; both reject */
    return 1;
}

static int ref_lit(ref *r, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n) != 0)
        return 0;
    r->p += n;
    return 1;
}

static int ref_container(ref *r, int obj)
{
    char close = obj ? '}' : ']';

    if (++r->depth > JSONL_MAX_DEPTH) {
        r->too_deep = 1;
        return 0;
    }
    r->p++;
    ref_ws(r);
    if (r->p < r->end && *r->p == close) {
        r->p++;
        r->depth--;
        return 1;
    }
    for (;;) {
        if (obj) {
            if (r->p == r->end || *r->p != '"' || !ref_string(r))
                return 0;
            ref_ws(r);
            if (r->p == r->end || *r->p != ':')
                return 0;
            r->p++;
            ref_ws(r);
        }
        if (!ref_value(r))
            return 0;
        ref_ws(r);
        if (r->p == r->end)
            return 0;
        if (*r->p == close) {
            r->p++;
            r->depth--;
            return 1;
        }
        if (*r->p != ',')
            return 0;
        r->p++;
        ref_ws(r);
    }
}

static int ref_value(ref *r)
{
    if (r->p == r->end)
        return 0;
    switch (*r->p) {
    case '{': return ref_container(r, 1);
    case '[': return ref_container(r, 0);
    case '"': return ref_string(r);
    case 't': return ref_lit(r, "true");
    case 'f': return ref_lit(r, "false");
    case 'n': return ref_lit(r, "null");
    default:
        if (*r->p == '-' || (*r->p >= '0' && *r->p <= '9'))
            return ref_number(r);
        return 0;
    }
}

/* GPUFL_OK, GPUFL_EPARSE or GPUFL_ETOOBIG (too deep), as the reader. */
static int ref_check(const unsigned char *s, size_t n)
{
    ref r = { s, s + n, 0, 0 };

    ref_ws(&r);
    if (!ref_value(&r))
        return r.too_deep ? GPUFL_ETOOBIG : GPUFL_EPARSE;
    ref_ws(&r);
    return r.p == r.end ? GPUFL_OK : GPUFL_EPARSE;
}

/* ---- checks on a parsed line ---- */

typedef struct fuzz_ctx {
    jsonl_doc *d;
    char *s1, *s2, *s3; /* FUZZ_STR_MAX each */
    jsonl_tok *tok2;    /* FUZZ_MAX_TOKENS, for re-parsing */
} fuzz_ctx;

static void check_string(fuzz_ctx *c, uint32_t t)
{
    jsonl_doc *d = c->d;
    size_t n = 0, m = 0, n2 = 0;
    jsonl_doc d2;
    jw w;
    int rc = jsonl_tok_str(d, t, c->s1, FUZZ_STR_MAX, &n);

    FUZZ_ASSERT(rc == GPUFL_OK || rc == GPUFL_ETOOBIG);
    if (rc)
        return;
    FUZZ_ASSERT(n <= d->tok[t].len && c->s1[n] == '\0');
    FUZZ_ASSERT(jsonl_tok_streq(d, t, c->s1, n));
    if (n > 0)
        FUZZ_ASSERT(!jsonl_tok_streq(d, t, c->s1, n - 1));
    if (!(d->tok[t].flags & JSONL_F_ESC))
        FUZZ_ASSERT(n == d->tok[t].len &&
                    memcmp(c->s1, d->line + d->tok[t].off, n) == 0);
    /* jw replaces invalid UTF-8 with U+FFFD: an unchanged round trip means
     * the decoding was valid UTF-8 */
    jw_init(&w, c->s2, FUZZ_STR_MAX);
    jw_strn(&w, c->s1, n, n);
    if (w.err)
        return; /* escaping can make it 6x longer */
    jsonl_doc_init(&d2, c->tok2, 4);
    FUZZ_ASSERT(jsonl_doc_parse(&d2, c->s2, w.len) == GPUFL_OK);
    FUZZ_ASSERT(d2.n == 1 && d2.tok[0].type == JSONL_STRING);
    FUZZ_ASSERT(jsonl_tok_str(&d2, 0, c->s3, FUZZ_STR_MAX, &n2) == GPUFL_OK);
    FUZZ_ASSERT(n2 == n && memcmp(c->s1, c->s3, n) == 0);
    /* a buffer one byte short must be refused, never overrun */
    if (n > 0) {
        FUZZ_ASSERT(jsonl_tok_str(d, t, c->s3, n, &m) == GPUFL_ETOOBIG);
        FUZZ_ASSERT(jsonl_tok_str(d, t, c->s3, n + 1, &m) == GPUFL_OK &&
                    m == n);
    }
}

static void check_number(fuzz_ctx *c, uint32_t t)
{
    jsonl_doc *d = c->d;
    const jsonl_tok *tk = &d->tok[t];
    uint64_t u = 0;
    int64_t i = 0;
    double f = 0, ref_f;
    char tmp[JSONL_MAX_NUMBER + 1];
    int ru = jsonl_tok_u64(d, t, &u);
    int ri = jsonl_tok_i64(d, t, &i);
    int rf = jsonl_tok_f64(d, t, &f);

    if (tk->flags & JSONL_F_REAL) {
        FUZZ_ASSERT(ru == GPUFL_EPARSE && ri == GPUFL_EPARSE);
    } else {
        if (ru == GPUFL_OK && u <= (uint64_t)INT64_MAX)
            FUZZ_ASSERT(ri == GPUFL_OK && (uint64_t)i == u);
        if (ri == GPUFL_OK && i >= 0)
            FUZZ_ASSERT(ru == GPUFL_OK && (uint64_t)i == u);
        if (ri == GPUFL_OK && i < 0)
            FUZZ_ASSERT(ru == GPUFL_EPARSE);
        if (ru == GPUFL_OK && tk->len <= 15)
            FUZZ_ASSERT(rf == GPUFL_OK && f == (double)u);
    }
    /* the fast path must agree with strtod exactly */
    if (tk->len <= JSONL_MAX_NUMBER) {
        memcpy(tmp, d->line + tk->off, tk->len);
        tmp[tk->len] = '\0';
        ref_f = strtod(tmp, NULL);
        if (isinf(ref_f)) {
            FUZZ_ASSERT(rf == GPUFL_ETOOBIG);
        } else {
            FUZZ_ASSERT(rf == GPUFL_OK);
            FUZZ_ASSERT(memcmp(&f, &ref_f, sizeof(f)) == 0);
        }
    } else {
        FUZZ_ASSERT(rf == GPUFL_OK || rf == GPUFL_ETOOBIG);
    }
}

static void check_object(fuzz_ctx *c, uint32_t obj)
{
    jsonl_doc *d = c->d;
    uint32_t k = obj + 1;

    for (uint32_t i = 0; i < d->tok[obj].n; i++) {
        size_t n;
        uint32_t want = k + 1, j = obj + 1;

        FUZZ_ASSERT(d->tok[k].type == JSONL_STRING);
        if (jsonl_tok_str(d, k, c->s1, FUZZ_STR_MAX, &n) == GPUFL_OK) {
            /* the first member with this decoded key */
            for (uint32_t m = 0; m < i; m++) {
                if (jsonl_tok_streq(d, j, c->s1, n)) {
                    want = j + 1;
                    break;
                }
                j = d->tok[j + 1].next;
            }
            FUZZ_ASSERT(jsonl_obj_findn(d, obj, c->s1, n) == want);
            if (obj == 0)
                FUZZ_ASSERT(jsonl_doc_findn(d, c->s1, n) == want);
        }
        k = d->tok[k + 1].next;
    }
    FUZZ_ASSERT(k == d->tok[obj].next);
}

/* Walks the token tree checking its shape, then every token's getters. */
static void check_tokens(fuzz_ctx *c)
{
    jsonl_doc *d = c->d;
    const unsigned char *s = (const unsigned char *)d->line;

    for (uint32_t t = 0; t < d->n; t++) {
        const jsonl_tok *tk = &d->tok[t];

        FUZZ_ASSERT(tk->next > t && tk->next <= d->n);
        FUZZ_ASSERT((size_t)tk->off + tk->len <= d->len);
        switch (tk->type) {
        case JSONL_OBJECT:
        case JSONL_ARRAY: {
            uint32_t k = t + 1, cnt = 0;
            FUZZ_ASSERT(s[tk->off] == (tk->type == JSONL_OBJECT ? '{' : '['));
            FUZZ_ASSERT(s[tk->off + tk->len - 1] ==
                        (tk->type == JSONL_OBJECT ? '}' : ']'));
            while (k < tk->next) {
                FUZZ_ASSERT(d->tok[k].off >= tk->off &&
                            d->tok[k].off < tk->off + tk->len);
                k = d->tok[k].next;
                cnt++;
            }
            FUZZ_ASSERT(k == tk->next);
            FUZZ_ASSERT(cnt == (tk->type == JSONL_OBJECT ? 2 * tk->n : tk->n));
            if (tk->type == JSONL_OBJECT)
                check_object(c, t);
            break;
        }
        case JSONL_STRING:
            FUZZ_ASSERT(tk->next == t + 1 && tk->n == 0);
            FUZZ_ASSERT(tk->off > 0 && s[tk->off - 1] == '"' &&
                        s[tk->off + tk->len] == '"');
            check_string(c, t);
            break;
        case JSONL_NUMBER:
            FUZZ_ASSERT(tk->next == t + 1 && tk->len > 0);
            check_number(c, t);
            break;
        case JSONL_TRUE:
        case JSONL_FALSE:
        case JSONL_NULL:
            FUZZ_ASSERT(tk->next == t + 1);
            FUZZ_ASSERT(
                memcmp(s + tk->off, jsonl_type_name(tk->type), tk->len) == 0);
            break;
        default: FUZZ_ASSERT(0);
        }
    }
    FUZZ_ASSERT(d->tok[0].next == d->n);
}

/* One line through every entry point. */
static void fuzz_line(fuzz_ctx *c, const char *line, size_t n)
{
    jsonl_doc *d = c->d;
    jsonl_tok small[8];
    jsonl_doc ds;
    int rc = jsonl_doc_parse(d, line, n), rc_obj, rs, root_obj;
    uint32_t ntok = d->n;
    const char *err = d->err;
    size_t err_off = d->err_off;

    if (rc == GPUFL_OK) {
        FUZZ_ASSERT(err == NULL && ntok > 0);
        check_tokens(c);
    } else {
        FUZZ_ASSERT(rc == GPUFL_EPARSE || rc == GPUFL_ETOOBIG);
        FUZZ_ASSERT(err != NULL && err_off <= n && d->n == 0);
    }
    if (n < FUZZ_MAX_TOKENS)
        FUZZ_ASSERT(rc == ref_check((const unsigned char *)line, n));

    /* the object check is the generic parse plus the root's type */
    root_obj = rc == GPUFL_OK && d->tok[0].type == JSONL_OBJECT;
    rc_obj = jsonl_doc_parse_obj(d, line, n);
    if (rc == GPUFL_OK)
        FUZZ_ASSERT(rc_obj == (root_obj ? GPUFL_OK : GPUFL_EPARSE));
    else
        FUZZ_ASSERT(rc_obj != GPUFL_OK);

    /* a small array: the same answer, or out of tokens first */
    jsonl_doc_init(&ds, small, 1 + (uint32_t)(n % 8));
    rs = jsonl_doc_parse(&ds, line, n);
    if (rs == GPUFL_ETOOBIG && strcmp(ds.err, "too many tokens") == 0)
        FUZZ_ASSERT(rc != GPUFL_OK || ntok > ds.cap);
    else if (rc == GPUFL_OK)
        FUZZ_ASSERT(rs == GPUFL_OK && ntok <= ds.cap && ds.n == ntok);
    else
        FUZZ_ASSERT(rs == rc && ds.err == err && ds.err_off == err_off);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static jsonl_tok *tok, *tok2;
    static char *s1, *s2, *s3;
    const char *buf = (const char *)data, *line;
    size_t pos = 0, n;
    jsonl_doc d;
    fuzz_ctx c;

    /* allocated once: the harness may allocate, the reader may not */
    if (!tok) {
        tok = malloc(FUZZ_MAX_TOKENS * sizeof(*tok));
        tok2 = malloc(FUZZ_MAX_TOKENS * sizeof(*tok2));
        s1 = malloc(FUZZ_STR_MAX);
        s2 = malloc(FUZZ_STR_MAX);
        s3 = malloc(FUZZ_STR_MAX);
        if (!tok || !tok2 || !s1 || !s2 || !s3)
            abort();
    }
    jsonl_doc_init(&d, tok, FUZZ_MAX_TOKENS);
    c.d = &d;
    c.s1 = s1;
    c.s2 = s2;
    c.s3 = s3;
    c.tok2 = tok2;

    /* the whole input as one value: newlines are blanks inside it */
    fuzz_line(&c, buf, size);

    /* and as JSON lines, framed as a tailer would */
    while (jsonl_line_next(buf, size, &pos, &line, &n)) {
        FUZZ_ASSERT(line >= buf && line + n <= buf + size && pos <= size);
        FUZZ_ASSERT(buf[pos - 1] == '\n' && memchr(line, '\n', n) == NULL);
        fuzz_line(&c, line, n);
    }
    FUZZ_ASSERT(memchr(buf + pos, '\n', size - pos) == NULL);
    if (jsonl_line_tail(buf, size, &pos, &line, &n))
        fuzz_line(&c, line, n);
    FUZZ_ASSERT(pos == size);
    return 0;
}
