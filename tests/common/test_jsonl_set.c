/*
 * test_jsonl_set.c - jsonl_doc_findset() gives, for every key of a set,
 * exactly what jsonl_doc_find() gives: first of duplicates, escaped and
 * empty keys, keys sharing a signature, nested members skipped, more
 * members than the parse keeps signatures for, and a set over its cap.
 */
#include "common/jsonl.h"
#include "test.h"

#include <gpufl/gpufl.h>

#define NTOK 512

static jsonl_tok toks[NTOK];
static jsonl_doc doc;

/* Every key of the set on the line s: findset against find, one by one. */
static int same_as_find(const char *s, const char *const *keys, size_t n)
{
    jsonl_keyset ks;
    uint32_t at[JSONL_SET_MAX];
    int ok = 1;

    jsonl_doc_init(&doc, toks, NTOK);
    if (jsonl_doc_parse_obj(&doc, s, strlen(s)) != GPUFL_OK ||
        jsonl_keyset_init(&ks, keys, n) != GPUFL_OK)
        return 0;
    jsonl_doc_findset(&doc, &ks, at);
    for (size_t i = 0; i < n; i++)
        if (at[i] != jsonl_doc_find(&doc, keys[i])) {
            fprintf(stderr, "  key '%s': %u, find says %u\n", keys[i], at[i],
                    jsonl_doc_find(&doc, keys[i]));
            ok = 0;
        }
    return ok;
}

static void test_same_as_find(void)
{
    /* "stream" and "scream" share length, first and last byte */
    static const char *const keys[] = { "a",      "x",      "ab",          "",
                                        "stream", "scream", "caf\xC3\xA9", "\n",
                                        "missing" };
    /* the first line's two literals in parentheses: one element (clang's
     * -Wstring-concatenation asks it) */
    static const char *const lines[] = {
        ("{\"a\":{\"x\":1,\"y\":[{\"x\":2}]},\"x\":3,\"a\\u0062\":4,"
         "\"\":5,\"x\":6,\"\\u0078\":7,\"caf\\u00e9\":8,\"\\n\":9}"),
        "{\"\\u0061\":1,\"a\":2}",
        "{\"a\":1,\"a\":2,\"scream\":3,\"stream\":4,\"stream\":5}",
        "{\"scream\":1}",
        "{}",
    };
    size_t n = sizeof(keys) / sizeof(keys[0]);

    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
        CHECK(same_as_find(lines[i], keys, n));
}

/* More members than JSONL_TOP_KEYS: keys past them are found too, and
 * the first of a duplicate pair on both sides of that mark wins. */
static void test_many_members(void)
{
    static const char *const keys[] = {
        "k1", "k31", "k32", "k70", "dup0", "k99"
    };
    char s[4096];
    size_t n = 0;

    n += (size_t)snprintf(s + n, sizeof(s) - n, "{");
    for (unsigned i = 0; i < 3 * JSONL_TOP_KEYS; i++)
        n += (size_t)snprintf(s + n, sizeof(s) - n, "%s\"%s%u\":%u",
                              i ? "," : "", i == 20 || i == 60 ? "dup" : "k",
                              i == 20 || i == 60 ? 0 : i, i);
    snprintf(s + n, sizeof(s) - n, "}");
    CHECK(same_as_find(s, keys, sizeof(keys) / sizeof(keys[0])));
    REQUIRE(doc.nkey == JSONL_TOP_KEYS);
}

static void test_cap(void)
{
    const char *keys[JSONL_SET_MAX + 1];
    char names[JSONL_SET_MAX + 1][8];
    jsonl_keyset ks;

    for (int i = 0; i <= JSONL_SET_MAX; i++) {
        snprintf(names[i], sizeof(names[i]), "f%d", i);
        keys[i] = names[i];
    }
    CHECK(jsonl_keyset_init(&ks, keys, JSONL_SET_MAX) == GPUFL_OK);
    CHECK(jsonl_keyset_init(&ks, keys, JSONL_SET_MAX + 1) == GPUFL_EINVAL);
    /* a full set still finds each of its keys */
    CHECK(same_as_find("{\"f0\":0,\"f31\":1,\"f7\":2}", keys, JSONL_SET_MAX));
}

int main(void)
{
    RUN(test_same_as_find);
    RUN(test_many_members);
    RUN(test_cap);
    TEST_DONE();
}
