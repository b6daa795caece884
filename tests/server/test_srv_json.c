/*
 * test_srv_json.c - the API's integers (srv_json.h, docs/api.md
 * "Numbers"): 64-bit quantities as decimal strings whatever their value,
 * small ones as numbers up to 2^53 - 1 and as strings past it, and
 * members copied from event lines with only their big integers quoted.
 */
#include "srv_json.h"
#include "test.h"

#include <gpufl/gpufl.h>

#include <stdint.h>
#include <string.h>

static char b[4096];

static const char *done(jw *w)
{
    jw_put(w, "", 1);
    return w->err ? "(overflow)" : b;
}

static void test_dec_and_num(void)
{
    jw w;

    jw_init(&w, b, sizeof b);
    jw_arr_begin(&w);
    srv_jw_dec(&w, 0);
    srv_jw_dec(&w, 5);
    srv_jw_dec(&w, -5);
    srv_jw_dec(&w, INT64_MAX);
    srv_jw_dec(&w, INT64_MIN);
    srv_jw_udec(&w, UINT64_MAX);
    jw_arr_end(&w);
    CHECK_STR(done(&w), "[\"0\",\"5\",\"-5\",\"9223372036854775807\","
                        "\"-9223372036854775808\",\"18446744073709551615\"]");
    /* numbers up to 2^53 - 1 either side; past it, strings */
    jw_init(&w, b, sizeof b);
    jw_obj_begin(&w);
    srv_jw_kv_num(&w, "a", 9007199254740991);
    srv_jw_kv_num(&w, "b", 9007199254740992);
    srv_jw_kv_num(&w, "c", -9007199254740991);
    srv_jw_kv_num(&w, "d", -9007199254740992);
    srv_jw_kv_dec(&w, "e", 7);
    srv_jw_kv_udec(&w, "f", 8);
    jw_obj_end(&w);
    CHECK_STR(done(&w), "{\"a\":9007199254740991,\"b\":\"9007199254740992\","
                        "\"c\":-9007199254740991,\"d\":\"-9007199254740992\","
                        "\"e\":\"7\",\"f\":\"8\"}");
}

/* text copied through srv_jw_copy, inside an array */
static const char *copy(const char *text)
{
    static jsonl_tok tok[256];
    jsonl_doc d;
    jw w;

    jsonl_doc_init(&d, tok, 256);
    if (jsonl_doc_parse(&d, text, strlen(text)))
        return "(does not parse)";
    jw_init(&w, b, sizeof b);
    jw_arr_begin(&w);
    srv_jw_copy(&w, &d, 0);
    jw_arr_end(&w);
    return done(&w);
}

static void test_copy(void)
{
    /* what is safe stays as it came: strings with escapes, reals,
     * literals, nesting, an escaped key */
    CHECK_STR(copy("{\"a\\u0062\":[1,-2,0.5,1e300,true,null,\"x\\\"y\"],"
                   "\"c\":{},\"d\":[]}"),
              "[{\"a\\u0062\":[1,-2,0.5,1e300,true,null,\"x\\\"y\"],"
              "\"c\":{},\"d\":[]}]");
    /* integers past 2^53 - 1, at any depth, become strings */
    CHECK_STR(copy("{\"since\":1796002920442988735,\"s\":{\"m\":"
                   "9007199254740992,\"n\":9007199254740991,\"o\":"
                   "-9007199254740992,\"p\":-9007199254740991}}"),
              "[{\"since\":\"1796002920442988735\",\"s\":{\"m\":"
              "\"9007199254740992\",\"n\":9007199254740991,\"o\":"
              "\"-9007199254740992\",\"p\":-9007199254740991}}]");
    CHECK_STR(copy("[18446744073709551616, 12345678901234567890.5]"),
              "[[\"18446744073709551616\",12345678901234567890.5]]");
    CHECK_STR(copy("42"), "[42]");
}

int main(void)
{
    RUN(test_dec_and_num);
    RUN(test_copy);
    TEST_DONE();
}
