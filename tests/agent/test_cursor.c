/*
 * test_cursor.c - the cursor file (src/agent/cursor.c) and file-name
 * parsing (scan.c): round trips, atomic save, and every way a damaged
 * file must be refused rather than half-believed.
 */
#include "agent/agent_int.h"
#include "agent/cursor.h"

#include <gpufl/gpufl.h>

#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[4096];

static void mk_entries(agent_centry *e, size_t n)
{
    memset(e, 0, n * sizeof *e);
    for (size_t i = 0; i < n; i++) {
        e[i].fp = 0x0123456789abcdefull * (i + 1);
        e[i].fp_len = 1024;
        e[i].dev = 2049;
        e[i].ino = 1000 + i;
        e[i].off = 12345 * (i + 1);
        e[i].flags = (uint32_t)(i % 4);
        snprintf(e[i].name, sizeof e[i].name,
                 "app.20261129-120000.abcd1234.device.log.%zu", i + 1);
    }
}

static void test_roundtrip(void)
{
    agent_centry in[5], *out = NULL;
    char *buf = NULL, err[256];
    size_t len, n;

    mk_entries(in, 5);
    REQUIRE(agent_cursor_format(in, 5, &buf, &len) == 0);
    REQUIRE(agent_cursor_parse(buf, len, &out, &n, err, sizeof err) == 0);
    CHECK_EQ_U64(n, 5);
    CHECK(memcmp(in, out, sizeof in) == 0);
    free(out);
    /* every single-byte change is refused (the checksum covers it) */
    for (size_t i = 0; i < len; i++) {
        int rc;
        buf[i] ^= 0x01;
        rc = agent_cursor_parse(buf, len, &out, &n, err, sizeof err);
        if (rc == 0)
            fprintf(stderr, "accepted a flip at %zu\n", i);
        CHECK(rc != 0 && out == NULL);
        buf[i] ^= 0x01;
    }
    /* and every truncation */
    for (size_t i = 0; i < len; i++)
        CHECK(agent_cursor_parse(buf, i, &out, &n, err, sizeof err) != 0);
    free(buf);
}

static void test_bad_entries(void)
{
    agent_centry e, *out;
    char *buf, err[256];
    size_t len, n;

    mk_entries(&e, 1);
    memcpy(e.name, "a/b.device.log", 15);
    CHECK(agent_cursor_format(&e, 1, &buf, &len) == 0);
    /* a '/' is refused at parse: names never hold one */
    CHECK(agent_cursor_parse(buf, len, &out, &n, err, sizeof err) ==
          GPUFL_EPARSE);
    free(buf);
    mk_entries(&e, 1);
    e.fp_len = 10; /* shorter than the offset: ambiguous identity */
    CHECK(agent_cursor_format(&e, 1, &buf, &len) == 0);
    CHECK(agent_cursor_parse(buf, len, &out, &n, err, sizeof err) ==
          GPUFL_EPARSE);
    CHECK(strstr(err, "line 2") != NULL);
    free(buf);
}

static void test_save_load(void)
{
    agent_centry in[3], *out = NULL;
    char path[4200], err[256];
    size_t n;
    int missing;
    FILE *f;

    snprintf(path, sizeof path, "%s/cursor", tmpdir);
    unlink(path);
    CHECK(agent_cursor_load(path, &out, &n, &missing, err, sizeof err) == 0);
    CHECK(missing == 1 && n == 0);
    mk_entries(in, 3);
    REQUIRE(agent_cursor_save(path, in, 3) == 0);
    CHECK(access(path, F_OK) == 0);
    {
        char tmp[4300];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        CHECK(access(tmp, F_OK) != 0);
    }
    REQUIRE(agent_cursor_load(path, &out, &n, &missing, err, sizeof err) == 0);
    CHECK(n == 3 && !missing && memcmp(in, out, sizeof in) == 0);
    free(out);
    f = fopen(path, "a");
    REQUIRE(f);
    fputs("junk\n", f);
    fclose(f);
    CHECK(agent_cursor_load(path, &out, &n, &missing, err, sizeof err) ==
          GPUFL_EPARSE);
    unlink(path);
}

static void test_names(void)
{
    char key[256];
    int st, zst;
    uint32_t n;

    CHECK(agent_name_parse("app.20261129-120000.abcd1234.device.log", key,
                           sizeof key, &st, &n, &zst) == 0);
    CHECK_STR(key, "app.20261129-120000.abcd1234.device");
    CHECK(st == 0 && n == AGENT_LIVE && !zst);
    CHECK(agent_name_parse("a.b.scope.log.12", key, sizeof key, &st, &n,
                           &zst) == 0);
    CHECK(st == 1 && n == 12 && !zst);
    CHECK_STR(key, "a.b.scope");
    CHECK(agent_name_parse("a.system.log.3.zst", key, sizeof key, &st, &n,
                           &zst) == 0);
    CHECK(st == 2 && n == 3 && zst);
    CHECK(agent_name_parse("a.system.log.3.zst.tmp", key, sizeof key, &st, &n,
                           &zst) != 0);
    CHECK(agent_name_parse("a.system.log.zst", key, sizeof key, &st, &n,
                           &zst) != 0);
    CHECK(agent_name_parse("a.gpu.log", key, sizeof key, &st, &n, &zst) != 0);
    CHECK(agent_name_parse("device.log", key, sizeof key, &st, &n, &zst) != 0);
    CHECK(agent_name_parse("a.device.log.0", key, sizeof key, &st, &n, &zst) !=
          0);
    CHECK(agent_name_parse("a.device.log.x", key, sizeof key, &st, &n, &zst) !=
          0);
}

int main(void)
{
    const char *t = getenv("GPUFL_TEST_TMP");
    snprintf(tmpdir, sizeof tmpdir, "%s/agent_cursor.%d", t ? t : "/tmp",
             (int)getpid());
    if (mkdir(tmpdir, 0700))
        return 1;
    RUN(test_roundtrip);
    RUN(test_bad_entries);
    RUN(test_save_load);
    RUN(test_names);
    rmdir(tmpdir);
    TEST_DONE();
}
