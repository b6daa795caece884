/*
 * test_log.c - the daemons' logger: text lines exactly as the programs
 * always printed them, levels, json lines that parse with their fields,
 * the info/debug budget (dropped lines counted and told, errors and
 * warnings never dropped), a call site's own limit.
 */
#include "common/jsonl.h"
#include "common/log.h"
#include "test.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static char out[1 << 20];
static FILE *f;

static const char *take(void)
{
    long n;
    fflush(f);
    n = ftell(f);
    rewind(f);
    n = (long)fread(out, 1, (size_t)n, f);
    out[n] = '\0';
    rewind(f);
    if (ftruncate(fileno(f), 0)) {
        /* nothing: the next lines are written from the start anyway */
    }
    return out;
}

static void test_text(void)
{
    glog_setup("gpufl-agent", GLOG_INFO, GLOG_TEXT);
    glog_warn("gaps", "LOST: %s/%s: %s (%s); never shipped", "/logs", "x",
              "file 3", "deleted");
    glog_info("ship", "sink is back");
    glog_debug("ship", "not shown");
    CHECK_STR(take(), "gpufl-agent: LOST: /logs/x: file 3 (deleted); never "
                      "shipped\ngpufl-agent: sink is back\n");
    glog_setup("gpufl-server", GLOG_WARN, GLOG_TEXT);
    glog_info("db", "hidden");
    glog_warn("tls", "warning: --tls-cert %s has expired", "c.pem");
    glog_error("main", "cannot listen");
    CHECK_STR(take(), "gpufl-server: warning: --tls-cert c.pem has expired\n"
                      "gpufl-server: cannot listen\n");
    glog_setup("gpufl-server", GLOG_DEBUG, GLOG_TEXT);
    glog_debug("db", "shown");
    CHECK_STR(take(), "gpufl-server: shown\n");
    CHECK(glog_on(GLOG_DEBUG));
    glog_setup("gpufl-server", GLOG_ERROR, GLOG_TEXT);
    CHECK(!glog_on(GLOG_WARN) && glog_on(GLOG_ERROR));
}

static void test_json(void)
{
    jsonl_tok tok[64];
    jsonl_doc d;
    char s[256];
    size_t n;
    uint64_t v;
    glog_field fl[2] = { GLOG_STR("file", "/logs/a \"b\".log"),
                         GLOG_NUM("bytes", 123) };

    glog_setup("gpufl-agent", GLOG_INFO, GLOG_JSON);
    glog_fields(GLOG_WARN, "gaps", fl, 2, "warning: LOST: %s", "x\ny");
    take();
    REQUIRE(out[strlen(out) - 1] == '\n');
    jsonl_doc_init(&d, tok, 64);
    REQUIRE(jsonl_doc_parse_obj(&d, out, strlen(out) - 1) == 0);
    CHECK(jsonl_tok_str(&d, jsonl_doc_find(&d, "level"), s, sizeof s, &n) ==
              0 &&
          !strcmp(s, "warn"));
    CHECK(jsonl_tok_str(&d, jsonl_doc_find(&d, "program"), s, sizeof s, &n) ==
              0 &&
          !strcmp(s, "gpufl-agent"));
    CHECK(jsonl_tok_str(&d, jsonl_doc_find(&d, "component"), s, sizeof s, &n) ==
              0 &&
          !strcmp(s, "gaps"));
    /* the level says "warning": the message does not repeat it */
    CHECK(jsonl_tok_str(&d, jsonl_doc_find(&d, "msg"), s, sizeof s, &n) == 0 &&
          !strcmp(s, "LOST: x\ny"));
    CHECK(jsonl_tok_str(&d, jsonl_doc_find(&d, "file"), s, sizeof s, &n) == 0 &&
          !strcmp(s, "/logs/a \"b\".log"));
    CHECK(jsonl_tok_u64(&d, jsonl_doc_find(&d, "bytes"), &v) == 0 && v == 123);
    CHECK(jsonl_tok_str(&d, jsonl_doc_find(&d, "ts"), s, sizeof s, &n) == 0 &&
          n == 24 && s[10] == 'T' && s[23] == 'Z');
    /* one object a line, even for a long message */
    {
        static char big[GLOG_MSG_MAX * 2];
        memset(big, '"', sizeof big - 1);
        glog_error("x", "%s", big);
        take();
        CHECK(strchr(out, '\n') == out + strlen(out) - 1);
        CHECK(strstr(out, "...\"") != NULL);
    }
}

static void test_budget(void)
{
    int lines = 0;
    glog_setup("gpufl-server", GLOG_INFO, GLOG_TEXT);
    /* the budget starts full: GLOG_BURST lines, then drops */
    for (int i = 0; i < GLOG_BURST + 500; i++)
        glog_info("http", "batch %d", i);
    take();
    for (char *p = out; (p = strchr(p, '\n')); p++)
        lines++;
    CHECK(lines >= GLOG_BURST - 10 && lines < GLOG_BURST + 20);
    /* warnings and errors are never dropped */
    for (int i = 0; i < 50; i++)
        glog_warn("gaps", "LOST: %d", i);
    take();
    lines = 0;
    for (char *p = out; (p = strchr(p, '\n')); p++)
        lines++;
    CHECK_EQ_U64(lines, 50);
    /* the next info line that goes out tells how many were dropped */
    {
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    glog_info("http", "after");
    take();
    CHECK(strstr(out, "log lines dropped (more than 200 a second)\n"
                      "gpufl-server: after\n") != NULL);
}

static void test_limit(void)
{
    glog_limit l = { 0, 0 };
    uint64_t dropped = 99;
    CHECK(glog_limit_pass(&l, 1000, 5000, &dropped));
    CHECK_EQ_U64(dropped, 0);
    CHECK(!glog_limit_pass(&l, 1000, 5500, &dropped));
    CHECK(!glog_limit_pass(&l, 1000, 5999, &dropped));
    CHECK(glog_limit_pass(&l, 1000, 6000, &dropped));
    CHECK_EQ_U64(dropped, 2);
    CHECK(glog_limit_pass(&l, 1000, 9000, &dropped));
    CHECK_EQ_U64(dropped, 0);
}

int main(void)
{
    f = tmpfile();
    if (!f)
        return 1;
    glog_set_stream(f);
    RUN(test_text);
    RUN(test_json);
    RUN(test_budget);
    RUN(test_limit);
    TEST_DONE();
}
