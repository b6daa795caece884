/*
 * test_opt.c - gpufl-agent's option layers (src/agent/opt.c): defaults <
 * config file < environment < flags, list replacement per layer, bounds,
 * unknown keys, and secrets kept out of every printed form.
 */
#include "agent/opt.h"

#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char conf[4200];

static int load(agent_cfg *c, char **argv, char **envp)
{
    int argc = 0;
    FILE *devnull = fopen("/dev/null", "w");
    int rc;
    while (argv[argc])
        argc++;
    rc = agent_cfg_load(c, argc, argv, envp, devnull);
    fclose(devnull);
    return rc;
}

static void test_defaults(void)
{
    agent_cfg c;
    char *argv[] = { "a", NULL };
    char *env[] = { NULL };
    REQUIRE(load(&c, argv, env) == 0);
    CHECK_STR(c.type, "http");
    CHECK_STR(c.topic_prefix, "gpufl");
    CHECK_EQ_U64(c.max_line_bytes, 1048576);
    CHECK(c.nfolder == 0 && !c.once && !c.url);
    agent_cfg_release(&c);
}

static void test_layers(void)
{
    agent_cfg c;
    FILE *f = fopen(conf, "w");
    REQUIRE(f);
    fputs("# comment\nfolder = /a\nfolder = /b\nurl = http://file/\n"
          "batch-lines = 7\nlinger-ms = 5 # trailing\ntoken = s3cret\n",
          f);
    fclose(f);
    {
        char cflag[4300];
        char *argv[] = { "a", cflag, NULL };
        char *env[] = { NULL };
        snprintf(cflag, sizeof cflag, "--config=%s", conf);
        REQUIRE(load(&c, argv, env) == 0);
        CHECK(c.nfolder == 2);
        CHECK_STR(c.folder[1], "/b");
        CHECK_STR(c.url, "http://file/");
        CHECK_EQ_U64(c.batch_lines, 7);
        CHECK_EQ_U64(c.linger_ms, 5);
        agent_cfg_release(&c);
    }
    {
        char envc[4300];
        char *argv[] = { "a", "--url", "http://flag/", "--folder=/f", NULL };
        char *env[] = { envc, "GPUFL_AGENT_URL=http://env/",
                        "GPUFL_AGENT_FOLDER=/e1,/e2,/e3",
                        "GPUFL_AGENT_BATCH_LINES=9", NULL };
        snprintf(envc, sizeof envc, "GPUFL_AGENT_CONFIG=%s", conf);
        REQUIRE(load(&c, argv, env) == 0);
        CHECK_STR(c.url, "http://flag/");
        CHECK_EQ_U64(c.batch_lines, 9);
        CHECK(c.nfolder == 1);
        CHECK_STR(c.folder[0], "/f");
        CHECK_STR(c.token, "s3cret");
        agent_cfg_release(&c);
    }
    {
        char *argv[] = { "a", NULL };
        char *env[] = { "GPUFL_AGENT_FOLDER=/e1,/e2", NULL };
        REQUIRE(load(&c, argv, env) == 0);
        CHECK(c.nfolder == 2);
        agent_cfg_release(&c);
    }
}

static void test_errors(void)
{
    agent_cfg c;
    char *a1[] = { "a", "--folderz=/x", NULL };
    char *a2[] = { "a", "--batch-lines=0", NULL };
    char *a3[] = { "a", "--type=carrier-pigeon", NULL };
    char *a4[] = { "a", "--batch-lines=12x", NULL };
    char *a5[] = { "a", "positional", NULL };
    char *a6[] = { "a", "--url", NULL };
    char *ok[] = { "a", NULL };
    char *env[] = { NULL };
    char *bad_env[] = { "GPUFL_AGENT_FOLDR=/x", NULL };

    CHECK(load(&c, a1, env) == 2);
    agent_cfg_release(&c);
    CHECK(load(&c, a2, env) == 2);
    agent_cfg_release(&c);
    CHECK(load(&c, a3, env) == 2);
    agent_cfg_release(&c);
    CHECK(load(&c, a4, env) == 2);
    agent_cfg_release(&c);
    CHECK(load(&c, a5, env) == 2);
    agent_cfg_release(&c);
    CHECK(load(&c, a6, env) == 2);
    agent_cfg_release(&c);
    CHECK(load(&c, ok, bad_env) == 2);
    agent_cfg_release(&c);
}

static void test_secrets(void)
{
    agent_cfg c;
    char *argv[] = { "a", "--token=TOPSECRET", "--archiver-secret-key=SK123",
                     NULL };
    char *env[] = { NULL };
    char buf[65536];
    FILE *m;
    size_t n;

    REQUIRE(load(&c, argv, env) == 0);
    m = fmemopen(buf, sizeof buf, "w");
    REQUIRE(m);
    agent_opt_dump(&c, m);
    agent_opt_help(m);
    agent_opt_markdown(m);
    n = (size_t)ftell(m);
    fclose(m);
    buf[n < sizeof buf ? n : sizeof buf - 1] = '\0';
    CHECK(strstr(buf, "TOPSECRET") == NULL);
    CHECK(strstr(buf, "SK123") == NULL);
    CHECK(strstr(buf, "token = (set)") != NULL);
    CHECK(strstr(buf, "GPUFL_AGENT_ARCHIVER_SECRET_KEY") != NULL);
    agent_cfg_release(&c);
}

/* The syntax the option engine gives every program (src/common/opt.h). */
static void test_syntax(void)
{
    agent_cfg c;
    char why[256];
    char *argv[] = { "a",
                     "--batch-bytes=2MiB",
                     "--linger-ms=2s",
                     "--stats-s=1m",
                     "--inotify=OFF",
                     "--no-once",
                     "--max-line-bytes",
                     "64k",
                     NULL };
    char *env[] = { "GPUFL_AGENT_TIMEOUT_MS=900", NULL };
    CHECK(opt_table_check(&agent_prog, why, sizeof why) == 0);
    REQUIRE(load(&c, argv, env) == 0);
    CHECK_EQ_U64(c.batch_bytes, 2097152);
    CHECK_EQ_U64(c.linger_ms, 2000);
    CHECK_EQ_U64(c.timeout_ms, 900); /* a bare number stays milliseconds */
    CHECK_EQ_U64(c.stats_s, 60);
    CHECK_EQ_U64(c.max_line_bytes, 65536);
    CHECK(c.inotify == 0 && c.once == 0);
    CHECK(opt_source(&agent_prog, &c.origin, "batch-bytes") == OPT_SRC_FLAG);
    CHECK(opt_source(&agent_prog, &c.origin, "timeout-ms") == OPT_SRC_ENV);
    agent_cfg_release(&c);
}

int main(void)
{
    const char *t = getenv("GPUFL_TEST_TMP");
    snprintf(conf, sizeof conf, "%s/agent_opt.%d.conf", t ? t : "/tmp",
             (int)getpid());
    RUN(test_defaults);
    RUN(test_layers);
    RUN(test_errors);
    RUN(test_secrets);
    RUN(test_syntax);
    unlink(conf);
    TEST_DONE();
}
