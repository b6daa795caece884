/*
 * jpath.h - checks on a JSON answer by value, for tests of what the
 * server's store or API says: the text is parsed with common/jsonl (it
 * must be one valid JSON value) and the value at a path compared, so
 * "kernels":100 never matches 1000 the way a search in the text would.
 *
 * A path is dot-separated object keys and array indices:
 * "items.0.count", "gaps.device.ranges.1.0".  Each check parses the text
 * again (test answers are small).
 *
 *   CHECK_JI64(json, path, want)   a JSON integer equal to want
 *   CHECK_JSTR(json, path, want)   a JSON string equal to want
 *   CHECK_JDEC(json, path, want)   a string of decimal digits (the API's
 *                                  64-bit quantities, docs/api.md) == want
 *   CHECK_JNUM(json, path, want)   the API's other integers: a number when
 *                                  want is within +-(2^53 - 1), else a
 *                                  decimal string
 *   CHECK_JF64(json, path, want)   a JSON number within 1e-9 of want
 *   CHECK_JBOOL(json, path, want)  true or false as want says
 *   CHECK_JNULL(json, path)        null
 *   CHECK_JLEN(json, path, n)      an array or object of n elements
 *   CHECK_JABSENT(json, path)      no such member
 *
 * jp_int() and jp_num() read a value for a test's own arithmetic.
 */
#ifndef GPUFL_TESTS_JPATH_H
#define GPUFL_TESTS_JPATH_H

#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonl.h"
#include "test.h"

#define JP_TOKENS (1u << 18)

static jsonl_doc jp_doc;

/* The token at path in json, JSONL_NOTFOUND when json does not parse or
 * the path leads nowhere. */
static inline uint32_t jp_find(const char *json, const char *path)
{
    static jsonl_tok *tok;
    uint32_t t = 0;

    if (!tok && !(tok = malloc(JP_TOKENS * sizeof(*tok))))
        return JSONL_NOTFOUND;
    jsonl_doc_init(&jp_doc, tok, JP_TOKENS);
    if (!json || jsonl_doc_parse(&jp_doc, json, strlen(json)))
        return JSONL_NOTFOUND;
    while (*path) {
        size_t n = strcspn(path, ".");
        jsonl_type ty = jsonl_tok_type(&jp_doc, t);
        if (ty == JSONL_OBJECT) {
            t = jsonl_obj_findn(&jp_doc, t, path, n);
        } else if (ty == JSONL_ARRAY) {
            char *end;
            unsigned long i = strtoul(path, &end, 10);
            uint32_t c = t + 1;
            if (end != path + n || i >= jp_doc.tok[t].n)
                return JSONL_NOTFOUND;
            while (i--)
                c = jp_doc.tok[c].next;
            t = c;
        } else {
            return JSONL_NOTFOUND;
        }
        if (t == JSONL_NOTFOUND)
            return t;
        path += n;
        if (*path == '.')
            path++;
    }
    return t;
}

/* Reads (not checks) an integer at path, a JSON number or a string of
 * decimal digits: 0, or -1 when there is none. */
static inline int jp_int(const char *json, const char *path, int64_t *v)
{
    uint32_t t = jp_find(json, path);
    char buf[32], *end;
    size_t n;

    if (jsonl_tok_type(&jp_doc, t) == JSONL_NUMBER)
        return jsonl_tok_i64(&jp_doc, t, v) ? -1 : 0;
    if (jsonl_tok_type(&jp_doc, t) != JSONL_STRING ||
        jsonl_tok_str(&jp_doc, t, buf, sizeof(buf), &n) || !n)
        return -1;
    *v = strtoll(buf, &end, 10);
    return *end ? -1 : 0;
}

/* Reads a number at path: 0, or -1 when there is none. */
static inline int jp_num(const char *json, const char *path, double *v)
{
    uint32_t t = jp_find(json, path);

    if (jsonl_tok_type(&jp_doc, t) != JSONL_NUMBER)
        return -1;
    return jsonl_tok_f64(&jp_doc, t, v) ? -1 : 0;
}

/* Each check: 1 when it holds, else 0 with why in jp_why. */
static char jp_why[256];

static inline int jp_i64_is(const char *json, const char *path, int64_t want)
{
    uint32_t t = jp_find(json, path);
    int64_t v;

    if (jsonl_tok_type(&jp_doc, t) != JSONL_NUMBER ||
        jsonl_tok_i64(&jp_doc, t, &v)) {
        snprintf(jp_why, sizeof(jp_why), "not an integer (%s)",
                 jsonl_type_name(jsonl_tok_type(&jp_doc, t)));
        return 0;
    }
    snprintf(jp_why, sizeof(jp_why), "%lld != %lld", (long long)v,
             (long long)want);
    return v == want;
}

static inline int jp_str_is(const char *json, const char *path,
                            const char *want)
{
    uint32_t t = jp_find(json, path);
    char buf[1024];
    size_t n;

    if (jsonl_tok_type(&jp_doc, t) != JSONL_STRING ||
        jsonl_tok_str(&jp_doc, t, buf, sizeof(buf), &n)) {
        snprintf(jp_why, sizeof(jp_why), "not a string (%s)",
                 jsonl_type_name(jsonl_tok_type(&jp_doc, t)));
        return 0;
    }
    snprintf(jp_why, sizeof(jp_why), "\"%.100s\" != \"%.100s\"", buf, want);
    return strcmp(buf, want) == 0;
}

static inline int jp_dec_is(const char *json, const char *path, uint64_t want)
{
    char w[24];

    snprintf(w, sizeof(w), "%llu", (unsigned long long)want);
    return jp_str_is(json, path, w);
}

static inline int jp_num_is(const char *json, const char *path, int64_t want)
{
    const int64_t safe = (int64_t)((1ull << 53) - 1);
    char w[24];

    if (want >= -safe && want <= safe)
        return jp_i64_is(json, path, want);
    snprintf(w, sizeof(w), "%lld", (long long)want);
    return jp_str_is(json, path, w);
}

static inline int jp_f64_is(const char *json, const char *path, double want)
{
    uint32_t t = jp_find(json, path);
    double v;

    if (jsonl_tok_type(&jp_doc, t) != JSONL_NUMBER ||
        jsonl_tok_f64(&jp_doc, t, &v)) {
        snprintf(jp_why, sizeof(jp_why), "not a number (%s)",
                 jsonl_type_name(jsonl_tok_type(&jp_doc, t)));
        return 0;
    }
    snprintf(jp_why, sizeof(jp_why), "%.17g != %.17g", v, want);
    return v - want < 1e-9 && want - v < 1e-9;
}

static inline int jp_type_is(const char *json, const char *path,
                             jsonl_type want)
{
    jsonl_type ty = jsonl_tok_type(&jp_doc, jp_find(json, path));

    snprintf(jp_why, sizeof(jp_why), "%s, not %s", jsonl_type_name(ty),
             jsonl_type_name(want));
    return ty == want;
}

static inline int jp_len_is(const char *json, const char *path, uint32_t want)
{
    uint32_t t = jp_find(json, path);
    jsonl_type ty = jsonl_tok_type(&jp_doc, t);

    if (ty != JSONL_ARRAY && ty != JSONL_OBJECT) {
        snprintf(jp_why, sizeof(jp_why), "not a container (%s)",
                 jsonl_type_name(ty));
        return 0;
    }
    snprintf(jp_why, sizeof(jp_why), "%u elements, not %u",
             (unsigned)jp_doc.tok[t].n, (unsigned)want);
    return jp_doc.tok[t].n == want;
}

#define JP_CHECK(ok, json, path)                                               \
    do {                                                                       \
        if (ok) {                                                              \
            t_pass++;                                                          \
        } else {                                                               \
            t_fail++;                                                          \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, (path),     \
                    jp_why);                                                   \
        }                                                                      \
    } while (0)

#define CHECK_JI64(json, path, want)                                           \
    JP_CHECK(jp_i64_is((json), (path), (want)), json, path)
#define CHECK_JSTR(json, path, want)                                           \
    JP_CHECK(jp_str_is((json), (path), (want)), json, path)
#define CHECK_JDEC(json, path, want)                                           \
    JP_CHECK(jp_dec_is((json), (path), (want)), json, path)
#define CHECK_JNUM(json, path, want)                                           \
    JP_CHECK(jp_num_is((json), (path), (want)), json, path)
#define CHECK_JF64(json, path, want)                                           \
    JP_CHECK(jp_f64_is((json), (path), (want)), json, path)
#define CHECK_JBOOL(json, path, want)                                          \
    JP_CHECK(jp_type_is((json), (path), (want) ? JSONL_TRUE : JSONL_FALSE),    \
             json, path)
#define CHECK_JNULL(json, path)                                                \
    JP_CHECK(jp_type_is((json), (path), JSONL_NULL), json, path)
#define CHECK_JLEN(json, path, n)                                              \
    JP_CHECK(jp_len_is((json), (path), (n)), json, path)
#define CHECK_JABSENT(json, path)                                              \
    JP_CHECK(jp_type_is((json), (path), JSONL_NONE), json, path)

#endif
