/*
 * test_buf.c - the growing buffer with a named cap: growth, the cap
 * (exact fit, one byte over, sticky), printf appends, writing in place,
 * detach and reset, and jw writing into a gbuf (the same bytes as into a
 * fixed buffer; the size a full writer counts is exact; the cap and the
 * depth limit honoured).
 */
#include "common/buf.h"
#include "common/jw.h"
#include "test.h"

#include <gpufl/gpufl.h>

#include <stdint.h>

static void test_add_and_grow(void)
{
    gbuf b = GBUF_INIT(1 << 20);
    char chunk[1000];

    CHECK(b.p == NULL && b.len == 0);
    CHECK(gbuf_str(&b)[0] == '\0');
    memset(chunk, 'x', sizeof chunk);
    for (int i = 0; i < 1000; i++)
        REQUIRE(gbuf_add(&b, chunk, sizeof chunk) == 0);
    CHECK_EQ_U64(b.len, 1000000);
    CHECK(b.cap >= b.len && b.cap <= b.max);
    CHECK(b.p[b.len] == '\0');
    CHECK(b.p[0] == 'x' && b.p[999999] == 'x');
    CHECK(gbuf_add(&b, NULL, 0) == 0);
    gbuf_release(&b);
    CHECK(b.p == NULL && b.len == 0 && b.cap == 0 && b.max == (1 << 20));
}

static void test_cap(void)
{
    gbuf b;
    gbuf_init(&b, 10);
    CHECK(gbuf_adds(&b, "0123456789") == 0); /* exactly the cap */
    CHECK_EQ_U64(b.len, 10);
    CHECK(strcmp(b.p, "0123456789") == 0);
    CHECK(gbuf_addc(&b, 'a') == GPUFL_ETOOBIG); /* one over */
    CHECK_EQ_U64(b.len, 10);                    /* nothing added */
    CHECK(b.err == GPUFL_ETOOBIG);
    gbuf_setlen(&b, 2);
    CHECK(gbuf_addc(&b, 'a') == GPUFL_ETOOBIG); /* sticky */
    CHECK_EQ_U64(b.len, 2);
    CHECK(strcmp(b.p, "01") == 0);
    gbuf_reset(&b);
    CHECK(b.err == 0 && b.len == 0 && b.p && b.p[0] == '\0');
    CHECK(gbuf_adds(&b, "abc") == 0);
    CHECK(strcmp(gbuf_str(&b), "abc") == 0);
    gbuf_release(&b);

    /* a cap below the first allocation: never more than the cap */
    gbuf_init(&b, 3);
    CHECK(gbuf_grow(&b, 1) == 0);
    CHECK_EQ_U64(b.cap, 3);
    CHECK(gbuf_grow(&b, 4) == GPUFL_ETOOBIG);
    gbuf_release(&b);

    /* a huge request is refused by the cap, never wrapped around */
    gbuf_init(&b, 100);
    CHECK(gbuf_add(&b, "x", 1) == 0);
    CHECK(gbuf_grow(&b, SIZE_MAX) == GPUFL_ETOOBIG);
    gbuf_release(&b);
}

static void test_grow_size(void)
{
    gbuf b = GBUF_INIT(100000);
    size_t c = gbuf_grow_size(&b, 10);
    CHECK(c >= 10 && c <= 100000);
    REQUIRE(gbuf_grow(&b, 10) == 0);
    CHECK_EQ_U64(b.cap, c); /* what it said is what it did */
    CHECK_EQ_U64(gbuf_grow_size(&b, 1), b.cap); /* room: no growth */
    c = gbuf_grow_size(&b, 70000);
    CHECK(c >= 70000 && c <= 100000);
    REQUIRE(gbuf_grow(&b, 70000) == 0);
    CHECK_EQ_U64(b.cap, c);
    CHECK_EQ_U64(gbuf_grow_size(&b, 100001), 0);
    gbuf_release(&b);
}

static void test_addf(void)
{
    gbuf b = GBUF_INIT(4096);
    char big[2000];

    CHECK(gbuf_addf(&b, "%d-%s", 42, "x") == 0);
    CHECK(strcmp(b.p, "42-x") == 0);
    memset(big, 'y', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    /* longer than the room there is: grows and formats again */
    CHECK(gbuf_addf(&b, "[%s]", big) == 0);
    CHECK_EQ_U64(b.len, 4 + 2 + 1999);
    CHECK(b.p[4] == '[' && b.p[b.len - 1] == ']' && b.p[b.len] == '\0');
    /* a result that passes the cap is not appended at all */
    CHECK(gbuf_addf(&b, "%s%s", big, big) == GPUFL_ETOOBIG);
    CHECK_EQ_U64(b.len, 4 + 2 + 1999);
    CHECK(b.p[b.len] == '\0');
    gbuf_release(&b);
}

static void test_in_place_and_detach(void)
{
    gbuf b = GBUF_INIT(64);
    size_t n;
    char *p;

    REQUIRE(gbuf_grow(&b, 5) == 0);
    CHECK(gbuf_avail(&b) >= 5);
    memcpy(b.p + b.len, "hello", 5);
    gbuf_setlen(&b, b.len + 5);
    CHECK(strcmp(b.p, "hello") == 0);
    p = gbuf_detach(&b, &n);
    CHECK(p && n == 5 && strcmp(p, "hello") == 0);
    CHECK(b.p == NULL && b.len == 0 && b.max == 64);
    free(p);
    CHECK(gbuf_detach(&b, &n) == NULL && n == 0);
    gbuf_release(&b);
}

static void write_doc(jw *w, void *ctx)
{
    int n = *(int *)ctx;
    jw_obj_begin(w);
    jw_key(w, "items");
    jw_arr_begin(w);
    for (int i = 0; i < n; i++) {
        jw_obj_begin(w);
        jw_kv_u64(w, "i", (uint64_t)i);
        jw_kv_str(w, "name", "a \"quoted\" name\n\x01\xff");
        jw_key(w, "f");
        jw_f64(w, i / 3.0, 3);
        jw_key(w, "e");
        jw_arr_begin(w);
        jw_arr_end(w);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_obj_end(w);
}

static void write_deep(jw *w, void *ctx)
{
    (void)ctx;
    for (int i = 0; i < JW_MAX_DEPTH + 1; i++)
        jw_arr_begin(w);
}

static void test_jw_gbuf(void)
{
    static char fixed[1 << 20];
    gbuf b = GBUF_INIT(1 << 20);
    int n = 5000;
    jw w;

    jw_init(&w, fixed, sizeof fixed);
    write_doc(&w, &n);
    REQUIRE(!w.err);
    /* into an empty gbuf: larger than its first room, so two passes */
    CHECK(jw_gbuf_run(&b, write_doc, &n) == 0);
    CHECK(b.len == w.len && memcmp(b.p, fixed, w.len) == 0);
    CHECK(b.p[b.len] == '\0');
    gbuf_release(&b);

    /* the count of what did not fit is exact, whatever failed first */
    n = 3;
    jw_init(&w, fixed, sizeof fixed);
    write_doc(&w, &n);
    for (size_t cap = 0; cap < w.len; cap++) {
        static char small[1 << 12];
        jw c;
        jw_init(&c, small, cap);
        write_doc(&c, &n);
        CHECK(c.err && !c.deep);
        CHECK_EQ_U64(c.len + c.need, w.len);
        CHECK(c.len <= cap && memcmp(small, fixed, c.len) == 0);
    }

    /* after what the gbuf holds already */
    gbuf_adds(&b, "x=");
    n = 1;
    CHECK(jw_gbuf_run(&b, write_doc, &n) == 0);
    CHECK(strncmp(b.p, "x={\"items\":[{\"i\":0,", 19) == 0);
    gbuf_release(&b);

    /* the cap: an error, nothing added */
    gbuf_init(&b, 1000);
    gbuf_adds(&b, "kept");
    n = 100;
    CHECK(jw_gbuf_run(&b, write_doc, &n) == GPUFL_ETOOBIG);
    CHECK(strcmp(gbuf_str(&b), "kept") == 0);
    gbuf_release(&b);

    /* too deep: no size would do */
    gbuf_init(&b, 1 << 20);
    CHECK(jw_gbuf_run(&b, write_deep, NULL) == GPUFL_ETOOBIG);
    CHECK_EQ_U64(b.len, 0);
    gbuf_release(&b);
}

int main(void)
{
    RUN(test_add_and_grow);
    RUN(test_cap);
    RUN(test_grow_size);
    RUN(test_addf);
    RUN(test_in_place_and_detach);
    RUN(test_jw_gbuf);
    TEST_DONE();
}
