/*
 * test_srv_ingest.c - the ingest line parser and body decoding: every
 * event type, the envelope rules, type and range errors, caps, and gzip /
 * zstd bodies including corrupt and oversized ones.
 */
#include "ingest.h"
#include "test.h"

#include <gpufl/gpufl.h>

#include <zlib.h>
#include <zstd.h>

#define SID "\"sid\":\"0f1e2d3c-4b5a-4968-8776-655443322110\""

static jsonl_tok tok[INGEST_MAX_TOKENS];
static char arena_buf[1 << 16];

static int parse(int st, const char *line, srv_ev *ev, char *why)
{
    jsonl_doc d;
    ingest_arena a = { arena_buf, 0, sizeof(arena_buf) };
    jsonl_doc_init(&d, tok, INGEST_MAX_TOKENS);
    return ingest_line_parse(&d, st, line, strlen(line), &a, ev, why);
}

static void test_good(void)
{
    srv_ev e;
    char why[INGEST_REASON_MAX];

    REQUIRE(parse(SRV_ST_DEVICE,
                  "{\"v\":1," SID ",\"st\":\"device\",\"seq\":7,\"ts\":"
                  "1795995293499341418,\"type\":\"kernel\",\"stream\":7,"
                  "\"corr\":5,\"cfg\":52,\"grid\":[8192,2],\"dur\":12804,"
                  "\"api\":[-11082,6236],\"scope\":262,\"coop\":1}",
                  &e, why) == GPUFL_OK);
    CHECK(e.type == EV_KERNEL);
    CHECK_EQ_U64(e.seq, 7);
    CHECK_EQ_U64(e.ts, 1795995293499341418ull);
    CHECK_EQ_U64(e.cfg, 52);
    CHECK_EQ_U64(e.grid[0], 8192);
    CHECK_EQ_U64(e.grid[1], 2);
    CHECK_EQ_U64(e.grid[2], 1);
    CHECK(e.api_off == -11082);
    CHECK_EQ_U64(e.api_dur, 6236);
    CHECK(e.flags & EVF_COOP);
    CHECK_STR(e.sid, "0f1e2d3c-4b5a-4968-8776-655443322110");

    REQUIRE(parse(SRV_ST_SCOPE,
                  "{\"v\":1," SID ",\"st\":\"scope\",\"seq\":1,\"ts\":5,"
                  "\"type\":\"dict\",\"id\":42,\"kind\":\"path\",\"parent\":0,"
                  "\"name\":19,\"depth\":1}",
                  &e, why) == GPUFL_OK);
    CHECK(e.type == EV_DICT && e.dkind == DK_PATH && e.id == 42 &&
          e.name == 19 && e.depth == 1);

    REQUIRE(parse(SRV_ST_DEVICE,
                  "{\"v\":1," SID ",\"st\":\"device\",\"seq\":1,\"ts\":5,"
                  "\"type\":\"dict\",\"id\":1,\"kind\":\"name\",\"name\":"
                  "\"a\\u00e9\\\"b\"}",
                  &e, why) == GPUFL_OK);
    CHECK(e.dname.n == 5 && memcmp(e.dname.p, "a\xc3\xa9\"b", 5) == 0);

    REQUIRE(parse(SRV_ST_SYSTEM,
                  "{\"v\":1," SID ",\"st\":\"system\",\"seq\":4,\"ts\":5,"
                  "\"type\":\"gpu\",\"dev\":1,\"util\":70,\"temp\":38,"
                  "\"sm_active\":0.6946}",
                  &e, why) == GPUFL_OK);
    CHECK(e.type == EV_GPU && e.dev == 1);
    CHECK(e.sys_set & 1u);
    CHECK(e.sys[0] == 70.0 && e.sys[9] == 0.6946);

    REQUIRE(parse(SRV_ST_SCOPE,
                  "{\"v\":1," SID ",\"st\":\"scope\",\"seq\":59,\"ts\":5,"
                  "\"type\":\"pcsamp\",\"func\":6,\"file\":38,\"line\":40,"
                  "\"pc\":128,\"stalls\":{\"barrier\":136,\"wait\":1},"
                  "\"samples\":137,\"scope\":260,\"path\":45}",
                  &e, why) == GPUFL_OK);
    CHECK(e.type == EV_PCSAMP && e.samples == 137 && e.srcline == 40);

    REQUIRE(parse(SRV_ST_DEVICE,
                  "{\"v\":1," SID ",\"st\":\"device\",\"seq\":0,\"ts\":5,"
                  "\"type\":\"session\",\"app\":\"x\",\"host\":\"h\","
                  "\"pid\":3,\"start\":4,\"simulated\":true,\"devices\":[],"
                  "\"future_field\":{\"a\":[1,2]}}",
                  &e, why) == GPUFL_OK);
    CHECK(e.type == EV_SESSION && e.simulated == 1 && e.pid == 3);
    CHECK(e.streams == 0); /* not said: all three */

    /* a session of fewer streams names them; it ends with those */
    REQUIRE(parse(SRV_ST_SYSTEM,
                  "{\"v\":1," SID ",\"st\":\"system\",\"seq\":0,\"ts\":5,"
                  "\"type\":\"session\",\"app\":\"x\",\"host\":\"h\","
                  "\"streams\":[\"system\",\"scope\"]}",
                  &e, why) == GPUFL_OK);
    CHECK_EQ_U64(e.streams, (1u << SRV_ST_SYSTEM) | (1u << SRV_ST_SCOPE));

    /* a flight-recorder dump's trigger line, in any stream */
    for (int st = 0; st < SRV_ST_N; st++) {
        char line[512];
        snprintf(line, sizeof line,
                 "{\"v\":1," SID ",\"st\":\"%s\",\"seq\":1,\"ts\":5,"
                 "\"type\":\"trigger\",\"trigger\":\"oom\",\"detail\":"
                 "\"cudaMalloc returned 2\",\"dump\":3,\"live_ms\":10000,"
                 "\"window\":{\"lines\":4,\"bytes\":400}}",
                 ingest_stream_name(st));
        REQUIRE(parse(st, line, &e, why) == GPUFL_OK);
        CHECK(e.type == EV_TRIGGER && e.id == 3);
        CHECK(e.kind.n == 3 && memcmp(e.kind.p, "oom", 3) == 0);
        CHECK(e.text.n == 21);
    }

    /* an operation may end at 2^63-1 ns, not after */
    REQUIRE(parse(SRV_ST_DEVICE,
                  "{\"v\":1," SID ",\"st\":\"device\",\"seq\":1,\"ts\":7,"
                  "\"type\":\"kernel\",\"dur\":9223372036854775800}",
                  &e, why) == GPUFL_OK);
}

static void bad(int st, const char *line, const char *want)
{
    srv_ev e;
    char why[INGEST_REASON_MAX];
    int rc = parse(st, line, &e, why);
    CHECK(rc != GPUFL_OK);
    if (rc != GPUFL_OK && !strstr(why, want)) {
        fprintf(stderr, "reason '%s' lacks '%s'\n", why, want);
        CHECK(0);
    }
}

static void test_bad(void)
{
    char deep[300];

    bad(SRV_ST_DEVICE, "", "invalid JSON");
    bad(SRV_ST_DEVICE, "[1]", "invalid JSON");
    /* a trigger line says what fired */
    bad(SRV_ST_SCOPE,
        "{\"v\":1," SID ",\"st\":\"scope\",\"seq\":1,"
        "\"ts\":5,\"type\":\"trigger\",\"dump\":1}",
        "trigger");
    bad(SRV_ST_DEVICE,
        "{\"v\":2," SID ",\"st\":\"device\",\"seq\":1,"
        "\"ts\":5,\"type\":\"loss\"}",
        "\"v\"");
    bad(SRV_ST_DEVICE,
        "{\"v\":1,\"sid\":\"ABC\",\"st\":\"device\",\"seq\":1,"
        "\"ts\":5,\"type\":\"loss\"}",
        "sid");
    bad(SRV_ST_DEVICE,
        "{\"v\":1," SID ",\"st\":\"scope\",\"seq\":1,"
        "\"ts\":5,\"type\":\"loss\"}",
        "\"st\"");
    bad(SRV_ST_DEVICE,
        "{\"v\":1," SID ",\"st\":\"device\",\"seq\":-1,"
        "\"ts\":5,\"type\":\"loss\"}",
        "seq");
    bad(SRV_ST_DEVICE,
        "{\"v\":1," SID ",\"st\":\"device\",\"seq\":1e3,"
        "\"ts\":5,\"type\":\"loss\"}",
        "seq");
    bad(SRV_ST_DEVICE,
        "{\"v\":1," SID ",\"st\":\"device\",\"seq\":"
        "18446744073709551615,\"ts\":5,\"type\":\"loss\"}",
        "seq");
    bad(SRV_ST_DEVICE,
        "{\"v\":1," SID ",\"st\":\"device\",\"seq\":1,"
        "\"ts\":0,\"type\":\"loss\"}",
        "ts");
    bad(SRV_ST_DEVICE,
        "{\"v\":1," SID ",\"st\":\"device\",\"seq\":1,"
        "\"ts\":5,\"type\":\"gpu\",\"dev\":0}",
        "stream");
    bad(SRV_ST_DEVICE,
        "{\"v\":1," SID ",\"st\":\"device\",\"seq\":1,"
        "\"ts\":5,\"type\":\"kernel\",\"name\":1}",
        "dur");
    bad(SRV_ST_DEVICE,
        "{\"v\":1," SID ",\"st\":\"device\",\"seq\":1,"
        "\"ts\":5,\"type\":\"kernel\",\"dur\":1,\"grid\":[]}",
        "grid");
    bad(SRV_ST_DEVICE,
        "{\"v\":1," SID ",\"st\":\"device\",\"seq\":1,"
        "\"ts\":5,\"type\":\"kernel\",\"dur\":"
        "99999999999999999999}",
        "dur");
    bad(SRV_ST_DEVICE,
        "{\"v\":1," SID ",\"st\":\"device\",\"seq\":1,"
        "\"ts\":5,\"type\":\"kernel\",\"dur\":"
        "9223372036854775808}",
        "2^63");
    bad(SRV_ST_DEVICE,
        "{\"v\":1," SID ",\"st\":\"device\",\"seq\":1,"
        "\"ts\":5,\"type\":\"dict\",\"id\":3,\"kind\":\"x\"}",
        "kind");
    bad(SRV_ST_DEVICE,
        "{\"v\":1," SID ",\"st\":\"device\",\"seq\":1,"
        "\"ts\":5,\"type\":\"dict\",\"id\":3,\"kind\":\"stack\","
        "\"frames\":[1]}",
        "frames");
    bad(SRV_ST_SCOPE,
        "{\"v\":1," SID ",\"st\":\"scope\",\"seq\":1,"
        "\"ts\":5,\"type\":\"pcsamp\",\"func\":1,\"pc\":2,"
        "\"stalls\":{\"a\":-1}}",
        "stall");
    bad(SRV_ST_DEVICE,
        "{\"v\":1," SID ",\"st\":\"device\",\"seq\":1,"
        "\"ts\":5,\"type\":\"session\",\"app\":\"\xff\","
        "\"host\":\"h\"}",
        "invalid JSON");
    /* ts + dur past 2^63-1: the end would wrap (kernel and copies) */
    bad(SRV_ST_DEVICE,
        "{\"v\":1," SID ",\"st\":\"device\",\"seq\":1,"
        "\"ts\":8,\"type\":\"kernel\",\"dur\":9223372036854775800}",
        "ts + dur exceeds 2^63-1");
    bad(SRV_ST_DEVICE,
        "{\"v\":1," SID ",\"st\":\"device\",\"seq\":1,"
        "\"ts\":1795995293499341418,\"type\":\"memcpy\",\"kind\":"
        "\"htod\",\"dur\":9223372036854775807}",
        "ts + dur exceeds 2^63-1");
    bad(SRV_ST_DEVICE,
        "{\"v\":1," SID ",\"st\":\"device\",\"seq\":0,"
        "\"ts\":5,\"type\":\"session\",\"app\":\"a\",\"host\":\"h\","
        "\"streams\":[\"scope\"]}",
        "must name this stream (device)");
    bad(SRV_ST_DEVICE,
        "{\"v\":1," SID ",\"st\":\"device\",\"seq\":0,"
        "\"ts\":5,\"type\":\"session\",\"app\":\"a\",\"host\":\"h\","
        "\"streams\":[\"device\",\"gpu\"]}",
        "streams");
    bad(SRV_ST_DEVICE,
        "{\"v\":1," SID ",\"st\":\"device\",\"seq\":0,"
        "\"ts\":5,\"type\":\"session\",\"app\":\"a\",\"host\":\"h\","
        "\"streams\":[]}",
        "streams");
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    deep[200] = '\0';
    bad(SRV_ST_DEVICE, deep, "invalid JSON");
}

/* One gzip member of text into out (cap bytes); its size, 0 on failure. */
static size_t gz_member(const char *text, size_t n, unsigned char *out,
                        size_t cap)
{
    z_stream z;
    size_t len = 0;

    memset(&z, 0, sizeof(z));
    if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK)
        return 0;
    z.next_in = (Bytef *)(uintptr_t)text;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) == Z_STREAM_END)
        len = cap - z.avail_out;
    deflateEnd(&z);
    return len;
}

/* Bodies are decoded whole: every gzip member and zstd frame, and bytes
 * after the last one are an error (never silently dropped). */
static void test_decode_members(void)
{
    const char *a = "{\"a\":1}\n", *b = "{\"b\":2}\n", *why = NULL;
    static unsigned char buf[1 << 20];
    size_t na = strlen(a), nb = strlen(b), n, k, on;
    char *out;

    n = gz_member(a, na, buf, sizeof(buf));
    REQUIRE(n > 0);
    k = gz_member(b, nb, buf + n, sizeof(buf) - n);
    REQUIRE(k > 0);
    REQUIRE(ingest_decode(ENC_GZIP, (char *)buf, n + k, 1 << 20, &out, &on,
                          &why) == GPUFL_OK);
    CHECK(on == na + nb && memcmp(out, a, na) == 0 &&
          memcmp(out + na, b, nb) == 0);
    free(out);
    /* the cap counts every member's output */
    CHECK(ingest_decode(ENC_GZIP, (char *)buf, n + k, na + 2, &out, &on,
                        NULL) == GPUFL_ETOOBIG);
    /* a second member cut short */
    CHECK(ingest_decode(ENC_GZIP, (char *)buf, n + k - 3, 1 << 20, &out, &on,
                        &why) == GPUFL_EPARSE);
    CHECK(strstr(why, "cut short") != NULL);
    /* trailing bytes: garbage, zeros, one byte of a magic */
    memcpy(buf + n + k, "garbage", 7);
    CHECK(ingest_decode(ENC_GZIP, (char *)buf, n + k + 7, 1 << 20, &out, &on,
                        &why) == GPUFL_EPARSE);
    CHECK(strstr(why, "after the end") != NULL);
    memset(buf + n, 0, 4);
    CHECK(ingest_decode(ENC_GZIP, (char *)buf, n + 4, 1 << 20, &out, &on,
                        &why) == GPUFL_EPARSE);
    buf[n] = 0x1f;
    CHECK(ingest_decode(ENC_GZIP, (char *)buf, n + 1, 1 << 20, &out, &on,
                        &why) == GPUFL_EPARSE);

    /* zstd: two frames, then trailing bytes */
    n = ZSTD_compress(buf, sizeof(buf), a, na, 3);
    REQUIRE(!ZSTD_isError(n));
    k = ZSTD_compress(buf + n, sizeof(buf) - n, b, nb, 3);
    REQUIRE(!ZSTD_isError(k));
    REQUIRE(ingest_decode(ENC_ZSTD, (char *)buf, n + k, 1 << 20, &out, &on,
                          NULL) == GPUFL_OK);
    CHECK(on == na + nb && memcmp(out + na, b, nb) == 0);
    free(out);
    memcpy(buf + n + k, "garbage!", 8);
    CHECK(ingest_decode(ENC_ZSTD, (char *)buf, n + k + 8, 1 << 20, &out, &on,
                        &why) == GPUFL_EPARSE);
    CHECK(strstr(why, "after the end") != NULL);
    CHECK(ingest_decode(ENC_ZSTD, (char *)buf, n + k + 2, 1 << 20, &out, &on,
                        &why) == GPUFL_EPARSE);
}

static void test_decode(void)
{
    const char *text = "{\"a\":1}\n{\"b\":2}\n";
    size_t n = strlen(text), on;
    unsigned char gz[256], zs[256];
    uLongf gzn = sizeof(gz);
    char *out;
    size_t zn;

    CHECK(ingest_encoding(NULL) == ENC_IDENTITY);
    CHECK(ingest_encoding("gzip") == ENC_GZIP);
    CHECK(ingest_encoding("ZSTD") == ENC_ZSTD);
    CHECK(ingest_encoding("br") == -1);
    REQUIRE(compress2(gz, &gzn, (const Bytef *)text, n, 6) == Z_OK);
    REQUIRE(ingest_decode(ENC_GZIP, (char *)gz, gzn, 1 << 20, &out, &on,
                          NULL) == GPUFL_OK);
    CHECK(on == n && memcmp(out, text, n) == 0);
    free(out);
    CHECK(ingest_decode(ENC_GZIP, (char *)gz, gzn, 4, &out, &on, NULL) ==
          GPUFL_ETOOBIG);
    CHECK(ingest_decode(ENC_GZIP, (char *)gz, gzn - 3, 1 << 20, &out, &on,
                        NULL) == GPUFL_EPARSE);
    zn = ZSTD_compress(zs, sizeof(zs), text, n, 3);
    REQUIRE(!ZSTD_isError(zn));
    REQUIRE(ingest_decode(ENC_ZSTD, (char *)zs, zn, 1 << 20, &out, &on, NULL) ==
            GPUFL_OK);
    CHECK(on == n && memcmp(out, text, n) == 0);
    free(out);
    CHECK(ingest_decode(ENC_ZSTD, (char *)zs, zn - 2, 1 << 20, &out, &on,
                        NULL) == GPUFL_EPARSE);
    CHECK(ingest_decode(ENC_ZSTD, (char *)zs, zn, 3, &out, &on, NULL) ==
          GPUFL_ETOOBIG);
    CHECK(ingest_decode(ENC_ZSTD, "junkjunk", 8, 100, &out, &on, NULL) ==
          GPUFL_EPARSE);
    CHECK(ingest_decode(ENC_IDENTITY, text, n, 3, &out, &on, NULL) ==
          GPUFL_ETOOBIG);
    CHECK(ingest_stream_index("scope") == SRV_ST_SCOPE);
    CHECK(ingest_stream_index("kernels") == -1);
}

/* A session id as the format writes it, byte by byte (the rule that
 * ingest_is_uuid checks eight bytes at a time). */
static int uuid_ref(const unsigned char *s, size_t n)
{
    if (n != 36)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned c = s[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-')
                return 0;
        } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return 0;
        }
    }
    return 1;
}

/* Every byte value at every place of a valid id, two places at once for
 * neighbours across the 8-byte words, and the lengths around 36: the
 * same answer as the byte rule. */
static void test_uuid(void)
{
    static const char ok[] = "0f1e2d3c-4b5a-4968-8776-655443322110";
    unsigned char b[40];
    size_t bad = 0;

    CHECK(ingest_is_uuid(ok, 36) == 1);
    CHECK(ingest_is_uuid("abcdef01-2345-6789-abcd-ef0123456789", 36) == 1);
    CHECK(ingest_is_uuid("ABCDEF01-2345-6789-abcd-ef0123456789", 36) == 0);
    for (size_t i = 0; i < 36; i++)
        for (unsigned c = 0; c < 256; c++) {
            memcpy(b, ok, 37);
            b[i] = (unsigned char)c;
            bad += ingest_is_uuid((const char *)b, 36) != uuid_ref(b, 36);
            if (i + 1 < 36) {
                b[i + 1] = (unsigned char)(255 - c);
                bad += ingest_is_uuid((const char *)b, 36) != uuid_ref(b, 36);
            }
        }
    for (size_t n = 0; n < 40; n++) {
        memset(b, 'a', sizeof(b));
        memcpy(b, ok, n < 36 ? n : 36);
        bad += ingest_is_uuid((const char *)b, n) != uuid_ref(b, n);
    }
    CHECK(bad == 0);
}

int main(void)
{
    RUN(test_uuid);
    RUN(test_good);
    RUN(test_decode_members);
    RUN(test_bad);
    RUN(test_decode);
    TEST_DONE();
}
