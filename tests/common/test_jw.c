/*
 * test_jw.c - the bounded JSON writer: numbers, escaping, UTF-8 repair,
 * commas and nesting, overflow behaviour.
 */
#include "common/jw.h"
#include "test.h"

#include <math.h>
#include <stdint.h>

static char buf[4096];

static const char *render(void (*fn)(jw *))
{
    jw j;
    jw_init(&j, buf, sizeof buf - 1);
    fn(&j);
    buf[j.err ? 0 : j.len] = 0;
    return j.err ? "<err>" : buf;
}

static void w_numbers(jw *j)
{
    jw_arr_begin(j);
    jw_u64(j, 0);
    jw_u64(j, UINT64_MAX);
    jw_i64(j, INT64_MIN);
    jw_i64(j, -1);
    jw_f64(j, 0.5, 3);
    jw_f64(j, 1.0, 3);
    jw_f64(j, -2.25, 1);
    jw_f64(j, 0.0001, 3);
    jw_f64(j, 0.1875, 4);
    jw_f64(j, NAN, 2);
    jw_f64(j, INFINITY, 2);
    jw_f64(j, 12.05, 4);
    /* |v| * 10^decimals past 2^64: fewer decimals, not an overflow */
    jw_f64(j, 12345678901.5, 9);
    jw_f64(j, -8.5e15, 9);
    jw_arr_end(j);
}

static void test_numbers(void)
{
    CHECK_STR(render(w_numbers), "[0,18446744073709551615,-9223372036854775808,"
                                 "-1,0.5,1,-2.3,0,0.1875,null,null,12.05,"
                                 "12345678901.5,-8500000000000000]");
}

static void w_object(jw *j)
{
    jw_obj_begin(j);
    jw_kv_u64(j, "a", 1);
    jw_key(j, "b");
    jw_arr_begin(j);
    jw_obj_begin(j);
    jw_obj_end(j);
    jw_arr_begin(j);
    jw_arr_end(j);
    jw_null(j);
    jw_bool(j, 1);
    jw_bool(j, 0);
    jw_arr_end(j);
    jw_kv_str(j, "c", "x");
    jw_key(j, "d");
    jw_str(j, NULL);
    jw_obj_end(j);
}

static void test_nesting(void)
{
    CHECK_STR(render(w_object),
              "{\"a\":1,\"b\":[{},[],null,true,false],\"c\":\"x\",\"d\":null}");
}

static void w_escapes(jw *j)
{
    jw_str(j, "q\"b\\n\n\r\t\x01\x1f/é€😀");
}

static void w_bad_utf8(jw *j)
{
    /* lone continuation, overlong, surrogate, truncated 4-byte */
    jw_strn(j,
            "a\x80"
            "b\xC0\xAF"
            "c\xED\xA0\x80"
            "d\xF0\x9F\x98",
            13, 100);
}

static void w_cut(jw *j)
{
    /* a cut that would split a 2-byte sequence falls before it */
    jw_strn(j, "ab\xC3\xA9", 4, 3);
}

static void test_strings(void)
{
    CHECK_STR(render(w_escapes), "\"q\\\"b\\\\n\\n\\r\\t\\u0001\\u001f/é€😀\"");
    CHECK_STR(render(w_bad_utf8), "\"a\xEF\xBF\xBD"
                                  "b\xEF\xBF\xBD\xEF\xBF\xBD"
                                  "c\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
                                  "d\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");
    CHECK_STR(render(w_cut), "\"ab\"");
}

static void test_overflow(void)
{
    char small[8];
    jw j;
    jw_init(&j, small, sizeof small);
    jw_obj_begin(&j);
    jw_kv_u64(&j, "abc", 12345);
    CHECK(j.err == 1);
    CHECK(j.len <= sizeof small);
    jw_kv_u64(&j, "x", 1); /* no-op after an error */
    CHECK(j.len <= sizeof small);
    jw_reset(&j);
    CHECK(j.err == 0 && j.len == 0);
    jw_u64(&j, 1234567);
    CHECK(!j.err && j.len == 7);
    jw_u64(&j, 1); /* ",1" does not fit */
    CHECK(j.err);
}

static void test_fmt_u64(void)
{
    char o[24];
    CHECK_EQ_U64(jw_fmt_u64(o, 0), 1);
    CHECK(o[0] == '0');
    CHECK_EQ_U64(jw_fmt_u64(o, 10000000000000000000ull), 20);
    CHECK(memcmp(o, "10000000000000000000", 20) == 0);
}

/* A key copied as JSON text (escapes kept) takes its place like jw_key:
 * a comma before it, none between it and its value. */
static void test_key_json(void)
{
    static char b[128];
    jw j;
    jw_init(&j, b, sizeof b);
    jw_obj_begin(&j);
    jw_kv_u64(&j, "a", 1);
    jw_key_json(&j, "b\\u0063", 7);
    jw_u64(&j, 2);
    jw_key_json(&j, "", 0);
    jw_str(&j, "x");
    jw_obj_end(&j);
    jw_put(&j, "", 1);
    CHECK_STR(b, "{\"a\":1,\"b\\u0063\":2,\"\":\"x\"}");
}

/* A key from data is escaped like a string value (the report wrote a
 * stall reason's control character raw: invalid JSON, found by
 * fuzz_report), with the comma rules of jw_key. */
static void test_key_str(void)
{
    static char b[128];
    jw j;
    jw_init(&j, b, sizeof b);
    jw_obj_begin(&j);
    jw_kv_u64(&j, "a", 1);
    jw_key_str(&j, "long_scorebo\rd\"ev\x01");
    jw_u64(&j, 2);
    jw_key_str(&j, "");
    jw_str(&j, "x");
    jw_obj_end(&j);
    jw_put(&j, "", 1);
    CHECK_STR(b, "{\"a\":1,\"long_scorebo\\rd\\\"ev\\u0001\":2,\"\":\"x\"}");
}

static void test_depth_cap(void)
{
    static char big[512];
    jw j;
    jw_init(&j, big, sizeof big);
    for (int i = 0; i < JW_MAX_DEPTH + 2; i++)
        jw_arr_begin(&j);
    CHECK(j.err);
}

int main(void)
{
    RUN(test_numbers);
    RUN(test_nesting);
    RUN(test_strings);
    RUN(test_overflow);
    RUN(test_fmt_u64);
    RUN(test_key_json);
    RUN(test_key_str);
    RUN(test_depth_cap);
    TEST_DONE();
}
