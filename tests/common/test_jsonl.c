/*
 * test_jsonl.c - unit tests of the JSON lines reader (src/common/jsonl.c):
 * framing, every token type, every error path with its offset, the caps,
 * the getters at their limits, and a randomized round trip through the jw
 * writer.
 */
#include "common/jsonl.h"
#include "common/jw.h"
#include "test.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <float.h>
#include <math.h>

#define NTOK 256

static jsonl_tok toks[NTOK];
static jsonl_doc doc;

/* Parses a literal (sizeof keeps embedded NULs) with the generic parser. */
#define PARSE(s) parse_n(0, s, sizeof(s) - 1)
#define PARSE_OBJ(s) parse_n(1, s, sizeof(s) - 1)

static int parse_n(int obj, const char *s, size_t n)
{
    jsonl_doc_init(&doc, toks, NTOK);
    return obj ? jsonl_doc_parse_obj(&doc, s, n) : jsonl_doc_parse(&doc, s, n);
}

/* 1 if parsing s fails with exactly this code, offset and reason. */
static int err_is(int obj, const char *s, size_t n, int code, size_t off,
                  const char *why)
{
    int rc = parse_n(obj, s, n);

    if (rc == code && doc.err_off == off && doc.err &&
        strcmp(doc.err, why) == 0 && doc.n == 0)
        return 1;
    fprintf(stderr,
            "  input '%.*s': rc %d off %zu err \"%s\"; want %d %zu \"%s\"\n",
            (int)n, s, rc, doc.err_off, doc.err ? doc.err : "(none)", code, off,
            why);
    return 0;
}

#define CHECK_ERR(s, code, off, why)                                           \
    CHECK(err_is(0, s, sizeof(s) - 1, code, off, why))
#define CHECK_ERR_OBJ(s, code, off, why)                                       \
    CHECK(err_is(1, s, sizeof(s) - 1, code, off, why))

/* The decoded string token t, NUL-terminated, in a static buffer. */
static const char *str_of(uint32_t t)
{
    static char buf[512];
    size_t n;

    if (jsonl_tok_str(&doc, t, buf, sizeof(buf), &n))
        return "(error)";
    return buf;
}

/* splitmix64: small, seedable, the same everywhere */
typedef struct gen_rng {
    uint64_t s;
} gen_rng;

static uint32_t gen_rng_next(gen_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* ---- framing ---- */

static void test_lines(void)
{
    static const char buf[] = "a\nbb\r\n\n\r\nc\rd\nrest";
    const char *line;
    size_t pos = 0, n;

    REQUIRE(jsonl_line_next(buf, sizeof(buf) - 1, &pos, &line, &n) == 1);
    CHECK(n == 1 && memcmp(line, "a", 1) == 0);
    CHECK_EQ_U64(pos, 2);
    REQUIRE(jsonl_line_next(buf, sizeof(buf) - 1, &pos, &line, &n) == 1);
    CHECK(n == 2 && memcmp(line, "bb", 2) == 0); /* CRLF */
    REQUIRE(jsonl_line_next(buf, sizeof(buf) - 1, &pos, &line, &n) == 1);
    CHECK_EQ_U64(n, 0); /* empty line */
    REQUIRE(jsonl_line_next(buf, sizeof(buf) - 1, &pos, &line, &n) == 1);
    CHECK_EQ_U64(n, 0); /* "\r\n" alone */
    REQUIRE(jsonl_line_next(buf, sizeof(buf) - 1, &pos, &line, &n) == 1);
    CHECK(n == 3 && memcmp(line, "c\rd", 3) == 0); /* inner CR is kept */
    /* the partial last line: 0, and nothing moves */
    line = NULL;
    CHECK(jsonl_line_next(buf, sizeof(buf) - 1, &pos, &line, &n) == 0);
    CHECK(line == NULL);
    CHECK_EQ_U64(sizeof(buf) - 1 - pos, 4);
    CHECK(jsonl_line_tail(buf, sizeof(buf) - 1, &pos, &line, &n) == 1);
    CHECK(n == 4 && memcmp(line, "rest", 4) == 0);
    CHECK_EQ_U64(pos, sizeof(buf) - 1);
    CHECK(jsonl_line_tail(buf, sizeof(buf) - 1, &pos, &line, &n) == 0);
    CHECK(jsonl_line_next(buf, sizeof(buf) - 1, &pos, &line, &n) == 0);

    /* empty buffer, buffer ending in '\n', tail with CR */
    pos = 0;
    CHECK(jsonl_line_next("", 0, &pos, &line, &n) == 0);
    CHECK(jsonl_line_tail("", 0, &pos, &line, &n) == 0);
    pos = 0;
    CHECK(jsonl_line_next("x\n", 2, &pos, &line, &n) == 1);
    CHECK(jsonl_line_tail("x\n", 2, &pos, &line, &n) == 0);
    pos = 0;
    CHECK(jsonl_line_tail("x\r", 2, &pos, &line, &n) == 1);
    CHECK(n == 1 && line[0] == 'x');
    pos = 0;
    CHECK(jsonl_line_next("\n", 1, &pos, &line, &n) == 1);
    CHECK(n == 0 && pos == 1);
}

/* A tailer that receives a stream in random chunks sees every line once,
 * whole, and in order. */
static void test_lines_chunked(void)
{
    char src[4096], acc[4096];
    size_t srclen = 0, acclen = 0, fed = 0, pos;
    unsigned seen = 0, rnd = 12345;
    const char *line;
    size_t n;
    int ok = 1;

    for (unsigned i = 0; i < 100; i++) {
        char tmp[32];
        size_t k = jw_fmt_u64(tmp, i * 7919u);
        memcpy(src + srclen, tmp, k);
        srclen += k;
        if (i % 3 == 0)
            src[srclen++] = '\r';
        src[srclen++] = '\n';
    }
    while (fed < srclen) {
        size_t chunk;
        rnd = rnd * 1103515245u + 12345u;
        chunk = 1 + (rnd >> 16) % 9;
        if (chunk > srclen - fed)
            chunk = srclen - fed;
        memcpy(acc + acclen, src + fed, chunk);
        acclen += chunk;
        fed += chunk;
        pos = 0;
        while (jsonl_line_next(acc, acclen, &pos, &line, &n)) {
            char want[32];
            size_t k = jw_fmt_u64(want, seen * 7919u);
            if (n != k || memcmp(line, want, k) != 0)
                ok = 0;
            seen++;
        }
        /* keep the partial line, as a tailer does */
        memmove(acc, acc + pos, acclen - pos);
        acclen -= pos;
    }
    CHECK(ok);
    CHECK_EQ_U64(seen, 100);
    CHECK_EQ_U64(acclen, 0);
}

/* ---- tokens ---- */

static void test_types(void)
{
    static const char s[] =
        "{\"a\":1,\"b\":\"x\",\"c\":true,\"d\":false,\"e\":null,"
        "\"f\":[1,[2,3],{}],\"g\":{\"h\":-2.5e3}}";
    uint32_t f, g;

    REQUIRE(PARSE_OBJ(s) == GPUFL_OK);
    CHECK(doc.err == NULL);
    CHECK_EQ_U64(doc.n, 22);
    CHECK(toks[0].type == JSONL_OBJECT);
    CHECK_EQ_U64(toks[0].n, 7);
    CHECK_EQ_U64(toks[0].off, 0);
    CHECK_EQ_U64(toks[0].len, sizeof(s) - 1);
    CHECK_EQ_U64(toks[0].next, doc.n);
    /* keys are strings, values follow them */
    CHECK(toks[1].type == JSONL_STRING && toks[1].len == 1);
    CHECK_EQ_U64(toks[1].off, 2);
    CHECK(toks[2].type == JSONL_NUMBER && toks[2].len == 1);
    CHECK_EQ_U64(toks[2].next, 3);
    CHECK(jsonl_tok_type(&doc, jsonl_doc_find(&doc, "b")) == JSONL_STRING);
    CHECK(jsonl_tok_type(&doc, jsonl_doc_find(&doc, "c")) == JSONL_TRUE);
    CHECK(jsonl_tok_type(&doc, jsonl_doc_find(&doc, "d")) == JSONL_FALSE);
    CHECK(jsonl_tok_type(&doc, jsonl_doc_find(&doc, "e")) == JSONL_NULL);
    f = jsonl_doc_find(&doc, "f");
    REQUIRE(jsonl_tok_type(&doc, f) == JSONL_ARRAY);
    CHECK_EQ_U64(toks[f].n, 3);
    CHECK_EQ_U64(toks[f].len, strlen("[1,[2,3],{}]"));
    CHECK(memcmp(s + toks[f].off, "[1,[2,3],{}]", toks[f].len) == 0);
    /* siblings through next: 1 -> [2,3] -> {} -> end of f */
    CHECK(toks[f + 1].type == JSONL_NUMBER);
    CHECK(toks[toks[f + 1].next].type == JSONL_ARRAY);
    CHECK_EQ_U64(toks[toks[f + 1].next].n, 2);
    CHECK(toks[toks[toks[f + 1].next].next].type == JSONL_OBJECT);
    CHECK_EQ_U64(toks[toks[toks[f + 1].next].next].n, 0);
    CHECK_EQ_U64(toks[toks[toks[f + 1].next].next].next, toks[f].next);
    g = jsonl_doc_find(&doc, "g");
    REQUIRE(jsonl_tok_type(&doc, g) == JSONL_OBJECT);
    CHECK(toks[jsonl_obj_find(&doc, g, "h")].flags & JSONL_F_NEG);
    CHECK(toks[jsonl_obj_find(&doc, g, "h")].flags & JSONL_F_REAL);
    CHECK_EQ_U64(toks[g].next, doc.n);
    CHECK(jsonl_tok_type(&doc, doc.n) == JSONL_NONE);
    CHECK(jsonl_tok_type(&doc, JSONL_NOTFOUND) == JSONL_NONE);
    CHECK_STR(jsonl_type_name(JSONL_ARRAY), "array");
    CHECK_STR(jsonl_type_name(JSONL_NONE), "none");
    CHECK_STR(jsonl_type_name((jsonl_type)99), "none");
}

static void test_top_level(void)
{
    double v;

    CHECK(PARSE("42") == GPUFL_OK && doc.n == 1 &&
          toks[0].type == JSONL_NUMBER);
    CHECK(PARSE("\"s\"") == GPUFL_OK && toks[0].type == JSONL_STRING &&
          toks[0].off == 1 && toks[0].len == 1);
    CHECK(PARSE(" true ") == GPUFL_OK && toks[0].type == JSONL_TRUE &&
          toks[0].off == 1);
    CHECK(PARSE("null") == GPUFL_OK && toks[0].type == JSONL_NULL);
    CHECK(PARSE("false") == GPUFL_OK && toks[0].type == JSONL_FALSE);
    CHECK(PARSE("[]") == GPUFL_OK && toks[0].n == 0 && toks[0].next == 1);
    CHECK(PARSE("{}") == GPUFL_OK && toks[0].n == 0 && toks[0].len == 2);
    CHECK(PARSE("-0.5") == GPUFL_OK && jsonl_tok_f64(&doc, 0, &v) == GPUFL_OK &&
          v == -0.5);
    CHECK(PARSE_OBJ("{}") == GPUFL_OK);
    CHECK(PARSE_OBJ(" \t{ } ") == GPUFL_OK);
    CHECK_ERR_OBJ("42", GPUFL_EPARSE, 0, "top-level value is not an object");
    CHECK_ERR_OBJ("  [1]", GPUFL_EPARSE, 2, "top-level value is not an object");
    CHECK_ERR_OBJ("\"{}\"", GPUFL_EPARSE, 0,
                  "top-level value is not an object");
    CHECK_ERR_OBJ("", GPUFL_EPARSE, 0, "expected a value");
    /* find on something that is not an object */
    CHECK(PARSE("[1]") == GPUFL_OK);
    CHECK(jsonl_doc_find(&doc, "a") == JSONL_NOTFOUND);
    CHECK(jsonl_obj_find(&doc, 1, "a") == JSONL_NOTFOUND);
    CHECK(jsonl_obj_find(&doc, 99, "a") == JSONL_NOTFOUND);
}

static void test_whitespace(void)
{
    uint64_t v;

    CHECK(PARSE(" \t\r\n{ \"a\" \t: [ 1 ,\n2 ] , \"b\":{ } }\r\n ") ==
          GPUFL_OK);
    CHECK_EQ_U64(doc.n, 7);
    CHECK(jsonl_tok_u64(&doc, jsonl_doc_find(&doc, "a") + 2, &v) == GPUFL_OK &&
          v == 2);
    /* only the four RFC 8259 blanks */
    CHECK_ERR("\f{}", GPUFL_EPARSE, 0, "expected a value");
    CHECK_ERR("{}\v", GPUFL_EPARSE, 2, "trailing characters after the value");
    CHECK_ERR("\xC2\xA0{}", GPUFL_EPARSE, 0, "expected a value");
    CHECK_ERR("{\"a\":1,\x01\"b\":2}", GPUFL_EPARSE, 7,
              "expected a string key");
    /* a NUL byte is not the end of the line */
    CHECK_ERR("{}\0", GPUFL_EPARSE, 2, "trailing characters after the value");
}

/* ---- strings ---- */

static void test_escapes(void)
{
    char buf[64];
    size_t n;

    REQUIRE(PARSE("\"a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti\"") == GPUFL_OK);
    CHECK(toks[0].flags & JSONL_F_ESC);
    CHECK(jsonl_tok_str(&doc, 0, buf, sizeof(buf), &n) == GPUFL_OK);
    CHECK(n == 17 && memcmp(buf, "a\"b\\c/d\be\ff\ng\rh\ti", 18) == 0);
    CHECK(jsonl_tok_streq(&doc, 0, "a\"b\\c/d\be\ff\ng\rh\ti", 17));
    CHECK(!jsonl_tok_streq(&doc, 0, "a\"b\\c/d\be\ff\ng\rh\t", 16));
    CHECK(!jsonl_tok_streq(&doc, 0, "a\"b\\c/d\be\ff\ng\rh\tix", 18));

    REQUIRE(PARSE("\"plain\"") == GPUFL_OK);
    CHECK(!(toks[0].flags & JSONL_F_ESC));
    CHECK_STR(str_of(0), "plain");
    CHECK(jsonl_tok_streq(&doc, 0, "plain", 5));
    CHECK(!jsonl_tok_streq(&doc, 0, "plai", 4));
    CHECK(!jsonl_tok_streq(&doc, 0, "plaiN", 5));

    REQUIRE(PARSE("\"\"") == GPUFL_OK);
    CHECK(toks[0].len == 0 && jsonl_tok_streq(&doc, 0, "", 0));
    CHECK(jsonl_tok_str(&doc, 0, buf, 1, &n) == GPUFL_OK && n == 0 &&
          buf[0] == '\0');

    /* \u escapes: ASCII, 2-, 3-byte, upper case hex, a pair -> 4 bytes */
    REQUIRE(PARSE("\"\\u0041\\u00e9\\u20AC\\uD83D\\uDE00\\u007f\"") ==
            GPUFL_OK);
    CHECK_STR(str_of(0), "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\x7F");
    CHECK(jsonl_tok_streq(&doc, 0, "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\x7F",
                          11));
    CHECK(!jsonl_tok_streq(&doc, 0, "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x81\x7F",
                           11));
    /* the top of the range: U+10FFFF = \uDBFF\uDFFF */
    REQUIRE(PARSE("\"\\udbff\\udfff\"") == GPUFL_OK);
    CHECK_STR(str_of(0), "\xF4\x8F\xBF\xBF");
    /* \u0000 decodes to a NUL byte counted in the length */
    REQUIRE(PARSE("\"a\\u0000b\"") == GPUFL_OK);
    CHECK(jsonl_tok_str(&doc, 0, buf, sizeof(buf), &n) == GPUFL_OK);
    CHECK(n == 3 && memcmp(buf, "a\0b", 4) == 0);
    CHECK(jsonl_tok_streq(&doc, 0, "a\0b", 3));
    CHECK(!jsonl_tok_streq(&doc, 0, "a", 1));
}

static void test_surrogates(void)
{
    CHECK_ERR("\"\\ud83d\"", GPUFL_EPARSE, 1, "lone surrogate in \\u escape");
    CHECK_ERR("\"\\ud83dx\"", GPUFL_EPARSE, 1, "lone surrogate in \\u escape");
    CHECK_ERR("\"\\ud83d\\n\"", GPUFL_EPARSE, 1,
              "lone surrogate in \\u escape");
    CHECK_ERR("\"\\ud83d\\u0041\"", GPUFL_EPARSE, 1,
              "lone surrogate in \\u escape");
    CHECK_ERR("\"\\ud83d\\ud83d\"", GPUFL_EPARSE, 1,
              "lone surrogate in \\u escape");
    CHECK_ERR("\"\\ude00\"", GPUFL_EPARSE, 1, "lone surrogate in \\u escape");
    CHECK_ERR("\"x\\uDFFF\\uD800\"", GPUFL_EPARSE, 2,
              "lone surrogate in \\u escape");
    CHECK_ERR("\"\\ud83d\\uZZ00\"", GPUFL_EPARSE, 7, "invalid \\u escape");
    CHECK_ERR("\"\\ud83d", GPUFL_EPARSE, 1, "lone surrogate in \\u escape");
    CHECK_ERR("\"\\ud83d\\ude0", GPUFL_EPARSE, 7, "invalid \\u escape");
    CHECK_ERR("\"\\ude00\\ude00\"", GPUFL_EPARSE, 1,
              "lone surrogate in \\u escape");
}

static void test_utf8(void)
{
    /* valid: 2, 3 and 4 bytes, at each end of their ranges */
    CHECK(PARSE("\"\xC2\x80\xDF\xBF\xE0\xA0\x80\xEF\xBF\xBF\xED\x9F\xBF"
                "\xEE\x80\x80\xF0\x90\x80\x80\xF4\x8F\xBF\xBF\x7F\"") ==
          GPUFL_OK);
    CHECK(!(toks[0].flags & JSONL_F_ESC));
    /* overlong forms */
    CHECK_ERR("\"\xC0\x80\"", GPUFL_EPARSE, 1, "invalid UTF-8 in string");
    CHECK_ERR("\"\xC1\xBF\"", GPUFL_EPARSE, 1, "invalid UTF-8 in string");
    CHECK_ERR("\"a\xE0\x80\x80\"", GPUFL_EPARSE, 2, "invalid UTF-8 in string");
    CHECK_ERR("\"\xE0\x9F\xBF\"", GPUFL_EPARSE, 1, "invalid UTF-8 in string");
    CHECK_ERR("\"\xF0\x80\x80\x80\"", GPUFL_EPARSE, 1,
              "invalid UTF-8 in string");
    CHECK_ERR("\"\xF0\x8F\xBF\xBF\"", GPUFL_EPARSE, 1,
              "invalid UTF-8 in string");
    /* encoded surrogates */
    CHECK_ERR("\"\xED\xA0\x80\"", GPUFL_EPARSE, 1, "invalid UTF-8 in string");
    CHECK_ERR("\"\xED\xBF\xBF\"", GPUFL_EPARSE, 1, "invalid UTF-8 in string");
    /* above U+10FFFF */
    CHECK_ERR("\"\xF4\x90\x80\x80\"", GPUFL_EPARSE, 1,
              "invalid UTF-8 in string");
    CHECK_ERR("\"\xF5\x80\x80\x80\"", GPUFL_EPARSE, 1,
              "invalid UTF-8 in string");
    CHECK_ERR("\"\xFF\"", GPUFL_EPARSE, 1, "invalid UTF-8 in string");
    /* lone continuation, truncated sequences, bad continuation */
    CHECK_ERR("\"\x80\"", GPUFL_EPARSE, 1, "invalid UTF-8 in string");
    CHECK_ERR("\"\xC3\"", GPUFL_EPARSE, 1, "invalid UTF-8 in string");
    CHECK_ERR("\"\xE2\x82\"", GPUFL_EPARSE, 1, "invalid UTF-8 in string");
    CHECK_ERR("\"\xF0\x9F\x98\"", GPUFL_EPARSE, 1, "invalid UTF-8 in string");
    CHECK_ERR("\"\xE2\x82", GPUFL_EPARSE, 1, "invalid UTF-8 in string");
    CHECK_ERR("\"\xE2\xC2\xA0\"", GPUFL_EPARSE, 1, "invalid UTF-8 in string");
    CHECK_ERR("\"\xF0\x9F\x98\x41\"", GPUFL_EPARSE, 1,
              "invalid UTF-8 in string");
    /* raw control characters, the tab included */
    CHECK_ERR("\"a\x01\"", GPUFL_EPARSE, 2, "control character in string");
    CHECK_ERR("\"\x1F\"", GPUFL_EPARSE, 1, "control character in string");
    CHECK_ERR("\"a\tb\"", GPUFL_EPARSE, 2, "control character in string");
    CHECK_ERR("\"a\nb\"", GPUFL_EPARSE, 2, "control character in string");
    CHECK_ERR("\"a\0b\"", GPUFL_EPARSE, 2, "control character in string");
    /* and in keys */
    CHECK_ERR("{\"k\xC0\xAF\":1}", GPUFL_EPARSE, 3, "invalid UTF-8 in string");
}

static void test_string_errors(void)
{
    CHECK_ERR("\"abc", GPUFL_EPARSE, 0, "unterminated string");
    CHECK_ERR("{\"a\":\"abc", GPUFL_EPARSE, 5, "unterminated string");
    CHECK_ERR("{\"abc", GPUFL_EPARSE, 1, "unterminated string");
    CHECK_ERR("\"ab\\", GPUFL_EPARSE, 0, "unterminated string");
    CHECK_ERR("\"ab\\\"", GPUFL_EPARSE, 0, "unterminated string");
    CHECK_ERR("\"\\x\"", GPUFL_EPARSE, 1, "invalid escape in string");
    CHECK_ERR("\"\\U0041\"", GPUFL_EPARSE, 1, "invalid escape in string");
    CHECK_ERR("\"\\'\"", GPUFL_EPARSE, 1, "invalid escape in string");
    CHECK_ERR("\"\\u12\"", GPUFL_EPARSE, 1, "invalid \\u escape");
    CHECK_ERR("\"\\u12g4\"", GPUFL_EPARSE, 1, "invalid \\u escape");
    CHECK_ERR("\"\\u123", GPUFL_EPARSE, 1, "invalid \\u escape");
    CHECK_ERR("'a'", GPUFL_EPARSE, 0, "expected a value");
}

static void test_str_buffer(void)
{
    char buf[8];
    size_t n = 99;

    REQUIRE(PARSE("[\"1234567\",\"12345678\",\"\\u00e9\\u00e9\\u00e9x\","
                  "\"\\u00e9\\u00e9\\u00e9xy\",\"abc\\n\",1]") == GPUFL_OK);
    CHECK(jsonl_tok_str(&doc, 1, buf, 8, &n) == GPUFL_OK && n == 7);
    CHECK_STR(buf, "1234567");
    CHECK(jsonl_tok_str(&doc, 2, buf, 8, &n) == GPUFL_ETOOBIG);
    CHECK_STR(doc.err, "string does not fit in buffer");
    CHECK_EQ_U64(doc.err_off, toks[2].off);
    CHECK(jsonl_tok_str(&doc, 3, buf, 8, &n) == GPUFL_OK && n == 7);
    CHECK_STR(buf, "\xC3\xA9\xC3\xA9\xC3\xA9x");
    CHECK(jsonl_tok_str(&doc, 4, buf, 8, &n) == GPUFL_ETOOBIG);
    CHECK(jsonl_tok_str(&doc, 3, buf, 7, &n) == GPUFL_ETOOBIG);
    CHECK(jsonl_tok_str(&doc, 3, buf, 6, &n) == GPUFL_ETOOBIG);
    CHECK(jsonl_tok_str(&doc, 5, buf, 5, &n) == GPUFL_OK && n == 4);
    CHECK(jsonl_tok_str(&doc, 5, buf, 4, &n) == GPUFL_ETOOBIG);
    CHECK(jsonl_tok_str(&doc, 5, buf, 3, &n) == GPUFL_ETOOBIG);
    CHECK(jsonl_tok_str(&doc, 5, NULL, 0, &n) == GPUFL_ETOOBIG);
    CHECK(jsonl_tok_str(&doc, 1, NULL, 0, &n) == GPUFL_ETOOBIG);
    CHECK(jsonl_tok_str(&doc, 6, buf, 8, &n) == GPUFL_EPARSE);
    CHECK_STR(doc.err, "not a string");
    CHECK(jsonl_tok_str(&doc, 0, buf, 8, &n) == GPUFL_EPARSE);
    CHECK(jsonl_tok_str(&doc, JSONL_NOTFOUND, buf, 8, &n) == GPUFL_ENOTFOUND);
    CHECK_STR(doc.err, "no such token");
    CHECK(!jsonl_tok_streq(&doc, 6, "1", 1));
    CHECK(!jsonl_tok_streq(&doc, JSONL_NOTFOUND, "", 0));
}

/* ---- numbers ---- */

static void test_number_grammar(void)
{
    static const char *const ok[] = { "0",
                                      "-0",
                                      "1",
                                      "-1",
                                      "10",
                                      "1.5",
                                      "-0.0",
                                      "0.25",
                                      "1e5",
                                      "1E5",
                                      "1e+5",
                                      "1e-5",
                                      "1E-05",
                                      "-0.5e-3",
                                      "123456789012345678901234567890",
                                      "1.0e0000",
                                      "9.99999e999999" };
    static const char *const bad[] = { "+1",        ".5",   "1.",  "1e",
                                       "1e+",       "-",    "--1", "0x10",
                                       "1.e5",      "NaN",  "-a",  "Infinity",
                                       "-Infinity", "01",   "-01", "00",
                                       "1.5.",      "1e5e", "- 1", "1 2" };

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int rc = parse_n(0, ok[i], strlen(ok[i]));
        CHECK(rc == GPUFL_OK && toks[0].type == JSONL_NUMBER &&
              toks[0].len == strlen(ok[i]));
        if (rc)
            fprintf(stderr, "  rejected %s: %s\n", ok[i], doc.err);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = parse_n(0, bad[i], strlen(bad[i]));
        CHECK(rc == GPUFL_EPARSE);
        if (!rc)
            fprintf(stderr, "  accepted %s\n", bad[i]);
    }
    CHECK(PARSE("-1.5e3") == GPUFL_OK &&
          toks[0].flags == (JSONL_F_NEG | JSONL_F_REAL));
    CHECK(PARSE("15") == GPUFL_OK && toks[0].flags == 0);
    CHECK_ERR("01", GPUFL_EPARSE, 1, "leading zero in number");
    CHECK_ERR("[-01]", GPUFL_EPARSE, 3, "leading zero in number");
    CHECK_ERR("-", GPUFL_EPARSE, 1, "invalid number");
    CHECK_ERR("-a", GPUFL_EPARSE, 1, "invalid number");
    CHECK_ERR("1.", GPUFL_EPARSE, 2, "invalid number");
    CHECK_ERR("1.x", GPUFL_EPARSE, 2, "invalid number");
    CHECK_ERR("1e", GPUFL_EPARSE, 2, "invalid number");
    CHECK_ERR("1e+", GPUFL_EPARSE, 3, "invalid number");
    CHECK_ERR("1E-x", GPUFL_EPARSE, 3, "invalid number");
    CHECK_ERR("+1", GPUFL_EPARSE, 0, "expected a value");
    CHECK_ERR(".5", GPUFL_EPARSE, 0, "expected a value");
    CHECK_ERR("0x10", GPUFL_EPARSE, 1, "trailing characters after the value");
    CHECK_ERR("[1.5.]", GPUFL_EPARSE, 4, "expected ',' or ']'");
}

static void test_u64(void)
{
    uint64_t v = 7;

    REQUIRE(PARSE("[0,18446744073709551615,18446744073709551616,"
                  "99999999999999999999,100000000000000000000,-1,-0,1.0,1e3,"
                  "\"1\",true,10000000000000000000,12345678901234567890]") ==
            GPUFL_OK);
    CHECK(jsonl_tok_u64(&doc, 1, &v) == GPUFL_OK && v == 0);
    CHECK(jsonl_tok_u64(&doc, 2, &v) == GPUFL_OK && v == UINT64_MAX);
    v = 7;
    CHECK(jsonl_tok_u64(&doc, 3, &v) == GPUFL_ETOOBIG && v == 7);
    CHECK_STR(doc.err, "integer out of range");
    CHECK_EQ_U64(doc.err_off, toks[3].off);
    CHECK(jsonl_tok_u64(&doc, 4, &v) == GPUFL_ETOOBIG);
    CHECK(jsonl_tok_u64(&doc, 5, &v) == GPUFL_ETOOBIG);
    CHECK(jsonl_tok_u64(&doc, 6, &v) == GPUFL_EPARSE);
    CHECK_STR(doc.err, "negative value for unsigned");
    CHECK(jsonl_tok_u64(&doc, 7, &v) == GPUFL_OK && v == 0);
    CHECK(jsonl_tok_u64(&doc, 8, &v) == GPUFL_EPARSE);
    CHECK_STR(doc.err, "not an integer");
    CHECK(jsonl_tok_u64(&doc, 9, &v) == GPUFL_EPARSE);
    CHECK_STR(doc.err, "not an integer");
    CHECK(jsonl_tok_u64(&doc, 10, &v) == GPUFL_EPARSE);
    CHECK_STR(doc.err, "not a number");
    CHECK(jsonl_tok_u64(&doc, 11, &v) == GPUFL_EPARSE);
    CHECK(jsonl_tok_u64(&doc, 12, &v) == GPUFL_OK &&
          v == 10000000000000000000ull);
    CHECK(jsonl_tok_u64(&doc, 13, &v) == GPUFL_OK &&
          v == 12345678901234567890ull);
    CHECK(jsonl_tok_u64(&doc, 0, &v) == GPUFL_EPARSE);
    CHECK(jsonl_tok_u64(&doc, JSONL_NOTFOUND, &v) == GPUFL_ENOTFOUND);
    CHECK(jsonl_tok_u64(&doc, doc.n, &v) == GPUFL_ENOTFOUND);
}

static void test_i64(void)
{
    int64_t v = 7;

    REQUIRE(PARSE("[9223372036854775807,-9223372036854775808,"
                  "9223372036854775808,-9223372036854775809,-0,-42,42,"
                  "-18446744073709551616,2.5]") == GPUFL_OK);
    CHECK(jsonl_tok_i64(&doc, 1, &v) == GPUFL_OK && v == INT64_MAX);
    CHECK(jsonl_tok_i64(&doc, 2, &v) == GPUFL_OK && v == INT64_MIN);
    v = 7;
    CHECK(jsonl_tok_i64(&doc, 3, &v) == GPUFL_ETOOBIG && v == 7);
    CHECK(jsonl_tok_i64(&doc, 4, &v) == GPUFL_ETOOBIG && v == 7);
    CHECK_STR(doc.err, "integer out of range");
    CHECK(jsonl_tok_i64(&doc, 5, &v) == GPUFL_OK && v == 0);
    CHECK(jsonl_tok_i64(&doc, 6, &v) == GPUFL_OK && v == -42);
    CHECK(jsonl_tok_i64(&doc, 7, &v) == GPUFL_OK && v == 42);
    CHECK(jsonl_tok_i64(&doc, 8, &v) == GPUFL_ETOOBIG);
    CHECK(jsonl_tok_i64(&doc, 9, &v) == GPUFL_EPARSE);
    CHECK_STR(doc.err, "not an integer");
    CHECK(jsonl_tok_i64(&doc, JSONL_NOTFOUND, &v) == GPUFL_ENOTFOUND);
}

static void test_f64(void)
{
    char big[300];
    double v = 7;
    size_t n = 0;

    REQUIRE(PARSE("[0.75,-1.5e-3,1e22,1e23,123456789012345678901,1e400,"
                  "-1e400,1e-400,42,0.1,5e-324,-0,9007199254740993,"
                  "0.000000000000000000001,1.7976931348623157e308,\"1\","
                  "2.2250738585072014E-308]") == GPUFL_OK);
    CHECK(jsonl_tok_f64(&doc, 1, &v) == GPUFL_OK && v == 0.75);
    CHECK(jsonl_tok_f64(&doc, 2, &v) == GPUFL_OK && v == -1.5e-3);
    CHECK(jsonl_tok_f64(&doc, 3, &v) == GPUFL_OK && v == 1e22);
    CHECK(jsonl_tok_f64(&doc, 4, &v) == GPUFL_OK && v == 1e23);
    CHECK(jsonl_tok_f64(&doc, 5, &v) == GPUFL_OK &&
          v == 123456789012345678901.0);
    v = 7;
    CHECK(jsonl_tok_f64(&doc, 6, &v) == GPUFL_ETOOBIG && v == 7);
    CHECK_STR(doc.err, "number out of range");
    CHECK(jsonl_tok_f64(&doc, 7, &v) == GPUFL_ETOOBIG);
    CHECK(jsonl_tok_f64(&doc, 8, &v) == GPUFL_OK && v == 0.0);
    CHECK(jsonl_tok_f64(&doc, 9, &v) == GPUFL_OK && v == 42.0);
    CHECK(jsonl_tok_f64(&doc, 10, &v) == GPUFL_OK && v == 0.1);
    CHECK(jsonl_tok_f64(&doc, 11, &v) == GPUFL_OK && v == 5e-324);
    CHECK(jsonl_tok_f64(&doc, 12, &v) == GPUFL_OK && v == 0.0 && signbit(v));
    /* 2^53 + 1 rounds to even: needs the slow path to be exact */
    CHECK(jsonl_tok_f64(&doc, 13, &v) == GPUFL_OK && v == 9007199254740992.0);
    CHECK(jsonl_tok_f64(&doc, 14, &v) == GPUFL_OK && v == 1e-21);
    CHECK(jsonl_tok_f64(&doc, 15, &v) == GPUFL_OK && v == DBL_MAX);
    CHECK(jsonl_tok_f64(&doc, 16, &v) == GPUFL_EPARSE);
    CHECK_STR(doc.err, "not a number");
    CHECK(jsonl_tok_f64(&doc, 17, &v) == GPUFL_OK && v == DBL_MIN);
    /* a significand over 2^53 must not take the fast path: this one would
     * be rounded twice there (found by mutating the bound) */
    REQUIRE(PARSE("9173021677453855e2") == GPUFL_OK);
    CHECK(jsonl_tok_f64(&doc, 0, &v) == GPUFL_OK &&
          v == strtod("9173021677453855e2", NULL));
    CHECK(jsonl_tok_f64(&doc, JSONL_NOTFOUND, &v) == GPUFL_ENOTFOUND);

    /* a number longer than JSONL_MAX_NUMBER on the slow path */
    big[n++] = '1';
    big[n++] = '.';
    while (n < JSONL_MAX_NUMBER + 10)
        big[n++] = '3';
    REQUIRE(parse_n(0, big, n) == GPUFL_OK);
    CHECK(jsonl_tok_f64(&doc, 0, &v) == GPUFL_ETOOBIG);
    CHECK_STR(doc.err, "number too long");
    REQUIRE(parse_n(0, big, JSONL_MAX_NUMBER) == GPUFL_OK);
    CHECK(jsonl_tok_f64(&doc, 0, &v) == GPUFL_OK && fabs(v - 4.0 / 3) < 1e-15);
}

/* Every string length and stop-byte position, near and far from the end
 * of the line: the 8-byte scan and the byte loop must agree. */
static void test_scan_boundaries(void)
{
    static const char bad[] = { '\x01', '\x1f', '\x80', '\xff' };
    char s[64];
    int ok = 1;

    for (size_t len = 0; len < 24; len++) {
        for (size_t pad = 0; pad < 12; pad++) {
            size_t n = 0;
            s[n++] = '"';
            for (size_t i = 0; i < len; i++)
                s[n++] = (char)('a' + i);
            s[n++] = '"';
            for (size_t i = 0; i < pad; i++)
                s[n++] = ' ';
            if (parse_n(0, s, n) != GPUFL_OK || toks[0].len != len)
                ok = 0;
            /* a bad byte at each position */
            for (size_t at = 0; at < len; at++) {
                for (size_t b = 0; b < sizeof(bad); b++) {
                    s[1 + at] = bad[b];
                    if (parse_n(0, s, n) != GPUFL_EPARSE ||
                        doc.err_off != 1 + at)
                        ok = 0;
                }
                s[1 + at] = '"'; /* an early quote: trailing characters */
                if (parse_n(0, s, n) != GPUFL_EPARSE || doc.err_off != 2 + at)
                    ok = 0;
                s[1 + at] = (char)('a' + at);
            }
            /* unterminated at every length */
            if (parse_n(0, s, 1 + len) != GPUFL_EPARSE || doc.err_off != 0)
                ok = 0;
        }
    }
    CHECK(ok);
}

/* Every byte value at every place of a string's first three scan words
 * (and the short tail), with each kind of stop right after it: the first
 * stop decides, whatever the one after it would borrow or flag. */
static void test_scan_every_byte(void)
{
    static const char after[] = { 'a', '\x01', '"', '\\' };
    char s[64];
    int ok = 1;

    for (size_t at = 0; at < 18; at++)
        for (unsigned c = 0; c < 256; c++)
            for (size_t t = 0; t < sizeof(after); t++) {
                size_t n = 0, want_off = 0;
                int want = GPUFL_EPARSE;
                s[n++] = '"';
                for (size_t i = 0; i < at; i++)
                    s[n++] = 'a';
                s[n++] = (char)c;
                s[n++] = after[t];
                for (size_t i = 0; i < 9; i++)
                    s[n++] = 'b';
                s[n++] = '"';
                if (c < 0x20 || c >= 0x80) {
                    /* control, or a UTF-8 byte with no continuation */
                    want_off = 1 + at;
                } else if (c == '"') {
                    want_off = 2 + at; /* trailing characters */
                } else if (c == '\\') {
                    /* \a, \<0x01> invalid; \" and \\ escapes */
                    if (after[t] == '"' || after[t] == '\\')
                        want = GPUFL_OK;
                    else
                        want_off = 1 + at;
                } else if (after[t] == 'a' || after[t] == '\\') {
                    want = GPUFL_OK; /* the second: \b, an escape */
                } else {
                    /* a control, or trailing after an early quote */
                    want_off = after[t] == '"' ? 3 + at : 2 + at;
                }
                if (parse_n(0, s, n) != want ||
                    (want != GPUFL_OK && doc.err_off != want_off) ||
                    (want == GPUFL_OK && toks[0].len != n - 2)) {
                    if (ok)
                        fprintf(stderr, "  byte 0x%02x at %zu, then 0x%02x\n",
                                c, at, (unsigned char)after[t]);
                    ok = 0;
                }
            }
    CHECK(ok);
}

/* Integers of every length, against strtoull, with a delimiter at every
 * distance from the 8-byte scan's window. */
static void test_number_lengths(void)
{
    gen_rng rng = { 42 };
    int ok = 1;

    for (int round = 0; round < 200; round++) {
        for (size_t len = 1; len <= 21; len++) {
            char s[40], num[24];
            size_t n = 0;
            uint64_t v = 0, want;
            int rc;

            num[0] = (char)('1' + gen_rng_next(&rng) % 9);
            for (size_t i = 1; i < len; i++)
                num[i] = (char)('0' + gen_rng_next(&rng) % 10);
            num[len] = '\0';
            errno = 0;
            want = strtoull(num, NULL, 10);
            s[n++] = '[';
            memcpy(s + n, num, len);
            n += len;
            s[n++] = round % 2 ? ']' : ',';
            if (round % 2 == 0) {
                memcpy(s + n, "0]", 2);
                n += 2;
            }
            if (parse_n(0, s, n) != GPUFL_OK || toks[1].len != len) {
                ok = 0;
                continue;
            }
            rc = jsonl_tok_u64(&doc, 1, &v);
            if (errno == ERANGE ? rc != GPUFL_ETOOBIG
                                : rc != GPUFL_OK || v != want)
                ok = 0;
            /* a non-digit right after the digits is never taken as one */
            s[1 + len] = ':';
            if (parse_n(0, s, n) != GPUFL_EPARSE || doc.err_off != 1 + len)
                ok = 0;
        }
    }
    CHECK(ok);
}

static void test_bool_null(void)
{
    int b = 7;

    REQUIRE(PARSE("[true,false,null,1]") == GPUFL_OK);
    CHECK(jsonl_tok_bool(&doc, 1, &b) == GPUFL_OK && b == 1);
    CHECK(jsonl_tok_bool(&doc, 2, &b) == GPUFL_OK && b == 0);
    b = 7;
    CHECK(jsonl_tok_bool(&doc, 3, &b) == GPUFL_EPARSE && b == 7);
    CHECK_STR(doc.err, "not a boolean");
    CHECK(jsonl_tok_bool(&doc, 4, &b) == GPUFL_EPARSE);
    CHECK(jsonl_tok_bool(&doc, JSONL_NOTFOUND, &b) == GPUFL_ENOTFOUND);
    CHECK(jsonl_tok_type(&doc, 3) == JSONL_NULL);
    CHECK_ERR("tru", GPUFL_EPARSE, 0, "invalid literal");
    CHECK_ERR("[nul]", GPUFL_EPARSE, 1, "invalid literal");
    CHECK_ERR("fals", GPUFL_EPARSE, 0, "invalid literal");
    CHECK_ERR("trUe", GPUFL_EPARSE, 0, "invalid literal");
    CHECK_ERR("True", GPUFL_EPARSE, 0, "expected a value");
    CHECK_ERR("nullx", GPUFL_EPARSE, 4, "trailing characters after the value");
    CHECK_ERR("[truex]", GPUFL_EPARSE, 5, "expected ',' or ']'");
}

/* ---- structure errors ---- */

static void test_structure_errors(void)
{
    CHECK_ERR("", GPUFL_EPARSE, 0, "expected a value");
    CHECK_ERR("   ", GPUFL_EPARSE, 3, "expected a value");
    CHECK_ERR("@", GPUFL_EPARSE, 0, "expected a value");
    CHECK_ERR("{", GPUFL_EPARSE, 1, "expected a string key");
    CHECK_ERR("{\"a\"", GPUFL_EPARSE, 4, "expected ':' after key");
    CHECK_ERR("{\"a\" 1}", GPUFL_EPARSE, 5, "expected ':' after key");
    CHECK_ERR("{\"a\":", GPUFL_EPARSE, 5, "expected a value");
    CHECK_ERR("{\"a\":}", GPUFL_EPARSE, 5, "expected a value");
    CHECK_ERR("{\"a\":1", GPUFL_EPARSE, 6, "expected ',' or '}'");
    CHECK_ERR("{\"a\":1]", GPUFL_EPARSE, 6, "expected ',' or '}'");
    CHECK_ERR("{\"a\":1 \"b\":2}", GPUFL_EPARSE, 7, "expected ',' or '}'");
    CHECK_ERR("{\"a\":1,}", GPUFL_EPARSE, 7, "trailing comma in object");
    CHECK_ERR("{\"a\":1, }", GPUFL_EPARSE, 8, "trailing comma in object");
    CHECK_ERR("{,}", GPUFL_EPARSE, 1, "expected a string key");
    CHECK_ERR("{1:2}", GPUFL_EPARSE, 1, "expected a string key");
    CHECK_ERR("{a:2}", GPUFL_EPARSE, 1, "expected a string key");
    CHECK_ERR("[", GPUFL_EPARSE, 1, "expected a value");
    CHECK_ERR("[1,]", GPUFL_EPARSE, 3, "trailing comma in array");
    CHECK_ERR("[1,", GPUFL_EPARSE, 3, "expected a value");
    CHECK_ERR("[1 2]", GPUFL_EPARSE, 3, "expected ',' or ']'");
    CHECK_ERR("[1,2", GPUFL_EPARSE, 4, "expected ',' or ']'");
    CHECK_ERR("[1}", GPUFL_EPARSE, 2, "expected ',' or ']'");
    CHECK_ERR("[,1]", GPUFL_EPARSE, 1, "expected a value");
    CHECK_ERR("]", GPUFL_EPARSE, 0, "expected a value");
    CHECK_ERR("{\"a\":1}x", GPUFL_EPARSE, 7,
              "trailing characters after the value");
    CHECK_ERR("{} {}", GPUFL_EPARSE, 3, "trailing characters after the value");
    CHECK_ERR("{}\n{}", GPUFL_EPARSE, 3, "trailing characters after the value");
    CHECK_ERR("{}}", GPUFL_EPARSE, 2, "trailing characters after the value");
    /* a failed parse leaves no tokens, and a later success clears err */
    CHECK(doc.n == 0);
    CHECK(PARSE("{}") == GPUFL_OK && doc.err == NULL && doc.err_off == 0);
}

/* ---- caps ---- */

static void test_depth(void)
{
    char s[2 * JSONL_MAX_DEPTH + 8];
    size_t n = 0;

    /* exactly JSONL_MAX_DEPTH containers: fine */
    for (int i = 0; i < JSONL_MAX_DEPTH; i++)
        s[n++] = '[';
    for (int i = 0; i < JSONL_MAX_DEPTH; i++)
        s[n++] = ']';
    REQUIRE(parse_n(0, s, n) == GPUFL_OK);
    CHECK_EQ_U64(doc.n, JSONL_MAX_DEPTH);
    CHECK_EQ_U64(toks[JSONL_MAX_DEPTH - 1].n, 0);
    CHECK_EQ_U64(toks[0].next, JSONL_MAX_DEPTH);
    CHECK_EQ_U64(toks[0].len, n);
    /* one more */
    n = 0;
    for (int i = 0; i <= JSONL_MAX_DEPTH; i++)
        s[n++] = '[';
    for (int i = 0; i <= JSONL_MAX_DEPTH; i++)
        s[n++] = ']';
    CHECK(err_is(0, s, n, GPUFL_ETOOBIG, JSONL_MAX_DEPTH,
                 "nesting deeper than 64"));
    /* objects count too: {"a":{"a":...}} */
    {
        char o[6 * (JSONL_MAX_DEPTH + 1) + 8];
        size_t m = 0;
        for (int i = 0; i <= JSONL_MAX_DEPTH; i++) {
            memcpy(o + m, "{\"a\":", 5);
            m += 5;
        }
        o[m++] = '1';
        for (int i = 0; i <= JSONL_MAX_DEPTH; i++)
            o[m++] = '}';
        CHECK(err_is(1, o, m, GPUFL_ETOOBIG, 5 * JSONL_MAX_DEPTH,
                     "nesting deeper than 64"));
    }
    /* depth falls back: 64 deep, then siblings at the top */
    n = 0;
    s[n++] = '[';
    for (int i = 1; i < JSONL_MAX_DEPTH; i++)
        s[n++] = '[';
    for (int i = 1; i < JSONL_MAX_DEPTH; i++)
        s[n++] = ']';
    s[n++] = ',';
    s[n++] = '[';
    s[n++] = ']';
    s[n++] = ']';
    REQUIRE(parse_n(0, s, n) == GPUFL_OK);
    CHECK_EQ_U64(toks[0].n, 2);
}

static void test_token_cap(void)
{
    static const char s[] = "{\"a\":[1,2],\"b\":\"x\"}"; /* 7 tokens */
    jsonl_tok small[8];
    jsonl_doc d;

    jsonl_doc_init(&d, small, 7);
    CHECK(jsonl_doc_parse(&d, s, sizeof(s) - 1) == GPUFL_OK && d.n == 7);
    jsonl_doc_init(&d, small, 6); /* runs out at the last value */
    CHECK(jsonl_doc_parse(&d, s, sizeof(s) - 1) == GPUFL_ETOOBIG);
    CHECK_STR(d.err, "too many tokens");
    CHECK_EQ_U64(d.err_off, 15);
    CHECK_EQ_U64(d.n, 0);
    jsonl_doc_init(&d, small, 5); /* runs out at a key */
    CHECK(jsonl_doc_parse(&d, s, sizeof(s) - 1) == GPUFL_ETOOBIG);
    CHECK_EQ_U64(d.err_off, 11);
    jsonl_doc_init(&d, small, 1);
    CHECK(jsonl_doc_parse(&d, "7", 1) == GPUFL_OK);
    CHECK(jsonl_doc_parse(&d, "[]", 2) == GPUFL_OK);
    CHECK(jsonl_doc_parse(&d, "[7]", 3) == GPUFL_ETOOBIG);
    jsonl_doc_init(&d, small, 0);
    CHECK(jsonl_doc_parse(&d, "7", 1) == GPUFL_ETOOBIG);
}

/* ---- lookup ---- */

static void test_find(void)
{
    static const char s[] =
        "{\"a\":{\"x\":1,\"y\":[{\"x\":2}]},\"x\":3,\"a\\u0062\":4,"
        "\"\":5,\"x\":6,\"\\u0078\":7,\"caf\\u00e9\":8,\"\\n\":9}";
    uint64_t v = 0;
    uint32_t a;

    REQUIRE(PARSE_OBJ(s) == GPUFL_OK);
    /* the nested x's are skipped, the first top-level x wins */
    CHECK(jsonl_tok_u64(&doc, jsonl_doc_find(&doc, "x"), &v) == GPUFL_OK &&
          v == 3);
    a = jsonl_doc_find(&doc, "a");
    CHECK(jsonl_tok_u64(&doc, jsonl_obj_find(&doc, a, "x"), &v) == GPUFL_OK &&
          v == 1);
    CHECK(jsonl_obj_find(&doc, a, "a") == JSONL_NOTFOUND);
    /* keys compare decoded */
    CHECK(jsonl_tok_u64(&doc, jsonl_doc_find(&doc, "ab"), &v) == GPUFL_OK &&
          v == 4);
    CHECK(jsonl_doc_find(&doc, "a\\u0062") == JSONL_NOTFOUND);
    CHECK(jsonl_tok_u64(&doc, jsonl_doc_find(&doc, ""), &v) == GPUFL_OK &&
          v == 5);
    CHECK(jsonl_tok_u64(&doc, jsonl_doc_find(&doc, "caf\xC3\xA9"), &v) ==
              GPUFL_OK &&
          v == 8);
    CHECK(jsonl_tok_u64(&doc, jsonl_obj_findn(&doc, 0, "\n", 1), &v) ==
              GPUFL_OK &&
          v == 9);
    CHECK(jsonl_obj_findn(&doc, 0, "xy", 1) == jsonl_doc_find(&doc, "x"));
    CHECK(jsonl_doc_find(&doc, "missing") == JSONL_NOTFOUND);
    CHECK(jsonl_doc_find(&doc, "X") == JSONL_NOTFOUND);
    CHECK(jsonl_obj_find(&doc, JSONL_NOTFOUND, "x") == JSONL_NOTFOUND);
    /* a missing key goes straight into a getter */
    CHECK(jsonl_tok_u64(&doc, jsonl_doc_find(&doc, "nope"), &v) ==
          GPUFL_ENOTFOUND);

    /* duplicates where the first has an escape: still the first */
    REQUIRE(PARSE_OBJ("{\"\\u0061\":1,\"a\":2}") == GPUFL_OK);
    CHECK(jsonl_tok_u64(&doc, jsonl_doc_find(&doc, "a"), &v) == GPUFL_OK &&
          v == 1);
    REQUIRE(PARSE_OBJ("{\"a\":1,\"a\":2}") == GPUFL_OK);
    CHECK(jsonl_tok_u64(&doc, jsonl_doc_find(&doc, "a"), &v) == GPUFL_OK &&
          v == 1);
    CHECK_EQ_U64(toks[0].n, 2);
}

/* More top-level members than jsonl_doc_find() keeps signatures for. */
static void test_find_many(void)
{
    char s[2048];
    size_t n = 0;
    uint64_t v = 0;
    int ok = 1;

    s[n++] = '{';
    for (unsigned i = 0; i < 3 * JSONL_TOP_KEYS; i++) {
        char num[24];
        size_t k;
        /* k0..k95, then "dup" at 40 and 50: the first must win */
        if (i == 40 || i == 50) {
            memcpy(s + n, "\"dup\":", 6);
            n += 6;
        } else {
            s[n++] = '"';
            s[n++] = 'k';
            k = jw_fmt_u64(num, i);
            memcpy(s + n, num, k);
            n += k;
            memcpy(s + n, "\":", 2);
            n += 2;
        }
        k = jw_fmt_u64(num, i);
        memcpy(s + n, num, k);
        n += k;
        s[n++] = ',';
    }
    s[n - 1] = '}';
    REQUIRE(parse_n(1, s, n) == GPUFL_OK);
    CHECK_EQ_U64(doc.nkey, JSONL_TOP_KEYS);
    for (unsigned i = 0; i < 3 * JSONL_TOP_KEYS; i++) {
        char key[24];
        size_t k;
        if (i == 40 || i == 50)
            continue;
        key[0] = 'k';
        k = jw_fmt_u64(key + 1, i) + 1;
        if (jsonl_tok_u64(&doc, jsonl_doc_findn(&doc, key, k), &v) || v != i ||
            jsonl_doc_findn(&doc, key, k) != jsonl_obj_findn(&doc, 0, key, k))
            ok = 0;
    }
    CHECK(ok);
    CHECK(jsonl_tok_u64(&doc, jsonl_doc_find(&doc, "dup"), &v) == GPUFL_OK &&
          v == 40);
    CHECK(jsonl_doc_find(&doc, "k40") == JSONL_NOTFOUND);
    CHECK(jsonl_doc_find(&doc, "k") == JSONL_NOTFOUND);
    CHECK(jsonl_doc_find(&doc, "k1000") == JSONL_NOTFOUND);
}

/* An event line as the client writes it. */
static void test_event_line(void)
{
    static const char s[] =
        "{\"v\":1,\"sid\":\"0f8fad5b-d9cb-469f-a165-70867728950e\","
        "\"st\":\"device\",\"seq\":123456,\"ts\":1764457393123456789,"
        "\"type\":\"kernel\",\"dev\":0,\"stream\":7,\"corr\":104123,"
        "\"name\":12,\"grid\":[4096,1,1],\"block\":[256,1,1],\"regs\":32,"
        "\"dur\":15000,\"occ\":0.75,\"lim\":\"regs\",\"scope\":88,"
        "\"path\":3}";
    uint64_t seq = 0, ts = 0, dur = 0;
    double occ = 0;
    uint32_t grid;

    REQUIRE(PARSE_OBJ(s) == GPUFL_OK);
    CHECK_EQ_U64(toks[0].n, 18);
    CHECK(jsonl_tok_streq(&doc, jsonl_doc_find(&doc, "sid"),
                          "0f8fad5b-d9cb-469f-a165-70867728950e", 36));
    CHECK(jsonl_tok_streq(&doc, jsonl_doc_find(&doc, "type"), "kernel", 6));
    CHECK(jsonl_tok_u64(&doc, jsonl_doc_find(&doc, "seq"), &seq) == 0);
    CHECK(jsonl_tok_u64(&doc, jsonl_doc_find(&doc, "ts"), &ts) == 0);
    CHECK(jsonl_tok_u64(&doc, jsonl_doc_find(&doc, "dur"), &dur) == 0);
    CHECK(jsonl_tok_f64(&doc, jsonl_doc_find(&doc, "occ"), &occ) == 0);
    CHECK(seq == 123456 && ts == 1764457393123456789ull && dur == 15000 &&
          occ == 0.75);
    grid = jsonl_doc_find(&doc, "grid");
    CHECK(toks[grid].type == JSONL_ARRAY && toks[grid].n == 3);
    CHECK(jsonl_tok_u64(&doc, grid + 1, &seq) == 0 && seq == 4096);
}

/* ---- randomized round trip through jw ---- */

typedef struct gen {
    gen_rng rng;
    int check; /* 0: write with jw; 1: compare with tokens */
    jw *w;
    uint32_t cur; /* check: the next token to compare */
    int bad;
} gen;

static uint32_t gen_rand(gen *g)
{
    /* the same seed gives the same stream in both passes */
    return gen_rng_next(&g->rng);
}

static uint64_t gen_rand64(gen *g)
{
    uint64_t hi = gen_rand(g);
    return hi << 32 | gen_rand(g);
}

/* Random valid UTF-8 with quotes, backslashes, controls and non-ASCII. */
static size_t gen_text(gen *g, char *s, size_t max)
{
    static const char *const pieces[] = { "a",
                                          "Z",
                                          "0",
                                          " ",
                                          "\"",
                                          "\\",
                                          "/",
                                          "\n",
                                          "\t",
                                          "\x01",
                                          "\x1f",
                                          "\x7f",
                                          "\xC3\xA9",
                                          "\xE2\x82\xAC",
                                          "\xF0\x9F\x98\x80",
                                          "\xEF\xBF\xBF",
                                          "\xF4\x8F\xBF\xBF",
                                          "kernel",
                                          "\xE4\xB8\xAD" };
    size_t n = 0, parts = gen_rand(g) % 12;

    for (size_t i = 0; i < parts; i++) {
        const char *p =
            pieces[gen_rand(g) % (sizeof(pieces) / sizeof(pieces[0]))];
        size_t k = strlen(p);
        if (n + k > max)
            break;
        memcpy(s + n, p, k);
        n += k;
    }
    if (gen_rand(g) % 8 == 0 && n < max)
        s[n++] = '\0'; /* written as \u0000 */
    return n;
}

static void gen_fail(gen *g, const char *what)
{
    if (!g->bad)
        fprintf(stderr, "  round trip: %s at token %u\n", what, g->cur);
    g->bad = 1;
}

static void gen_value(gen *g, jsonl_doc *d, int depth);

static void gen_container(gen *g, jsonl_doc *d, int depth, int obj)
{
    uint32_t n = gen_rand(g) % 6, self = g->cur;
    char keys[8][24];
    size_t klen[8];

    if (!g->check) {
        if (obj)
            jw_obj_begin(g->w);
        else
            jw_arr_begin(g->w);
    } else {
        if (d->tok[self].type != (obj ? JSONL_OBJECT : JSONL_ARRAY) ||
            d->tok[self].n != n)
            gen_fail(g, "container");
        g->cur++;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (obj) {
            /* unique keys: an index byte, then random text */
            char text[16];
            size_t k = gen_text(g, text, 15);
            keys[i][0] = (char)('a' + i);
            memcpy(keys[i] + 1, text, k);
            klen[i] = k + 1;
            if (!g->check) {
                /* jw_key takes plain ASCII only: write it as a string
                 * with jw_strn, then ':' by hand */
                jw_strn(g->w, keys[i], klen[i], klen[i]);
                jw_put(g->w, ":", 1);
                g->w->comma &= ~(1u << (g->w->depth & 31));
            } else {
                if (!jsonl_tok_streq(d, g->cur, keys[i], klen[i]))
                    gen_fail(g, "key");
                g->cur++;
            }
        }
        gen_value(g, d, depth + 1);
    }
    if (!g->check) {
        if (obj)
            jw_obj_end(g->w);
        else
            jw_arr_end(g->w);
        return;
    }
    if (d->tok[self].next != g->cur)
        gen_fail(g, "next");
    /* every key is found, at the value that follows it */
    for (uint32_t i = 0; obj && i < n; i++) {
        uint32_t v = jsonl_obj_findn(d, self, keys[i], klen[i]);
        if (v == JSONL_NOTFOUND || !jsonl_tok_streq(d, v - 1, keys[i], klen[i]))
            gen_fail(g, "find");
    }
}

static void gen_value(gen *g, jsonl_doc *d, int depth)
{
    uint32_t kind = gen_rand(g) % (depth < 5 ? 9 : 7);
    jsonl_tok *t = g->check ? &d->tok[g->cur] : NULL;

    switch (kind) {
    case 0: {
        uint64_t v = gen_rand64(g) >> (gen_rand(g) % 64), got = 0;
        if (!g->check)
            jw_u64(g->w, v);
        else if (jsonl_tok_u64(d, g->cur++, &got) || got != v)
            gen_fail(g, "u64");
        break;
    }
    case 1: {
        int64_t v = (int64_t)gen_rand64(g), got = 0;
        if (!g->check)
            jw_i64(g->w, v);
        else if (jsonl_tok_i64(d, g->cur++, &got) || got != v)
            gen_fail(g, "i64");
        break;
    }
    case 2: {
        double v = ((double)gen_rand(g) - 2147483648.0) / 1000.0, got = 0;
        if (!g->check)
            jw_f64(g->w, v, 3);
        else if (jsonl_tok_f64(d, g->cur++, &got) || fabs(got - v) > 1e-3)
            gen_fail(g, "f64");
        break;
    }
    case 3:
    case 4: {
        char s[200], out[200];
        size_t n = gen_text(g, s, sizeof(s)), m = 0;
        if (!g->check) {
            jw_strn(g->w, s, n, n);
        } else {
            if (jsonl_tok_str(d, g->cur, out, sizeof(out), &m) || m != n ||
                memcmp(out, s, n) != 0 || !jsonl_tok_streq(d, g->cur, s, n))
                gen_fail(g, "string");
            g->cur++;
        }
        break;
    }
    case 5: {
        int v = (int)(gen_rand(g) & 1), got = -1;
        if (!g->check)
            jw_bool(g->w, v);
        else if (jsonl_tok_bool(d, g->cur++, &got) || got != v)
            gen_fail(g, "bool");
        break;
    }
    case 6:
        if (!g->check)
            jw_null(g->w);
        else if (t->type != JSONL_NULL)
            gen_fail(g, "null");
        if (g->check)
            g->cur++;
        break;
    case 7: gen_container(g, d, depth, 0); break;
    default: gen_container(g, d, depth, 1); break;
    }
}

static void test_roundtrip_jw(void)
{
    static char buf[1 << 20];
    static jsonl_tok tk[1 << 14];
    jsonl_doc d;
    jw w;
    int ok = 1, lines = 0;
    size_t len = 0;
    const uint64_t seed0 = 0x6770666cull;

    jsonl_doc_init(&d, tk, 1 << 14);
    /* many lines into one buffer (a writer per line: jw keeps comma state
     * across values), then framed and checked one by one */
    for (int i = 0; i < 2000; i++) {
        gen g = { .rng = { seed0 + (uint64_t)i }, .w = &w };
        jw_init(&w, buf + len, sizeof(buf) - len);
        gen_container(&g, &d, 0, 1);
        jw_put(&w, "\n", 1);
        REQUIRE(!w.err);
        len += w.len;
    }
    {
        size_t pos = 0, n;
        const char *line;
        while (jsonl_line_next(buf, len, &pos, &line, &n)) {
            gen g = { .rng = { seed0 + (uint64_t)lines }, .check = 1 };
            if (jsonl_doc_parse_obj(&d, line, n)) {
                fprintf(stderr, "  line %d: %s at %zu\n", lines, d.err,
                        d.err_off);
                ok = 0;
                break;
            }
            gen_container(&g, &d, 0, 1);
            if (g.bad || g.cur != d.n) {
                fprintf(stderr, "  line %d: %.*s\n", lines, (int)n, line);
                ok = 0;
                break;
            }
            lines++;
        }
        CHECK_EQ_U64(pos, len);
    }
    CHECK(ok);
    CHECK_EQ_U64(lines, 2000);
}

int main(void)
{
    RUN(test_lines);
    RUN(test_lines_chunked);
    RUN(test_types);
    RUN(test_top_level);
    RUN(test_whitespace);
    RUN(test_escapes);
    RUN(test_surrogates);
    RUN(test_utf8);
    RUN(test_string_errors);
    RUN(test_str_buffer);
    RUN(test_number_grammar);
    RUN(test_u64);
    RUN(test_i64);
    RUN(test_f64);
    RUN(test_scan_boundaries);
    RUN(test_scan_every_byte);
    RUN(test_number_lengths);
    RUN(test_bool_null);
    RUN(test_structure_errors);
    RUN(test_depth);
    RUN(test_token_cap);
    RUN(test_find);
    RUN(test_find_many);
    RUN(test_event_line);
    RUN(test_roundtrip_jw);
    TEST_DONE();
}
