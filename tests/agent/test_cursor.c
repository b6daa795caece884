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
        e[i].mark = 0xfedcba9876543210ull ^ i;
        e[i].mark_len = (uint32_t)(i * 16 % (CURSOR_MARK_MAX + 1));
        snprintf(e[i].name, sizeof e[i].name,
                 "app.20261129-120000.abcd1234.device.log.%zu", i + 1);
    }
}

static void mk_keys(agent_ckey *k, size_t n)
{
    memset(k, 0, n * sizeof *k);
    for (size_t i = 0; i < n; i++) {
        k[i].next_file = 7 * i;
        k[i].next_seq = 100000 * i + 3;
        k[i].lost_files = i;
        k[i].lost_lines = 1000 * i;
        k[i].flags = (uint32_t)(i % 4);
        snprintf(k[i].name, sizeof k[i].name, "app.20261129-120000.abcd1234.%s",
                 i % 2 ? "scope" : "device");
    }
}

static void test_roundtrip(void)
{
    agent_centry in[5];
    agent_ckey kin[3];
    agent_cursor cur = { in, 5, kin, 3 }, out;
    char *buf = NULL, err[256];
    size_t len;

    mk_entries(in, 5);
    mk_keys(kin, 3);
    REQUIRE(agent_cursor_format(&cur, &buf, &len) == 0);
    CHECK(memcmp(buf, "gpufl-agent-cursor 2\n", 21) == 0);
    REQUIRE(agent_cursor_parse(buf, len, &out, err, sizeof err) == 0);
    CHECK_EQ_U64(out.n, 5);
    CHECK_EQ_U64(out.nk, 3);
    CHECK(memcmp(in, out.e, sizeof in) == 0);
    CHECK(memcmp(kin, out.k, sizeof kin) == 0);
    agent_cursor_release(&out);
    /* every single-byte change is refused (the checksum covers it) */
    for (size_t i = 0; i < len; i++) {
        int rc;
        buf[i] ^= 0x01;
        rc = agent_cursor_parse(buf, len, &out, err, sizeof err);
        if (rc == 0)
            fprintf(stderr, "accepted a flip at %zu\n", i);
        CHECK(rc != 0 && out.e == NULL && out.k == NULL);
        buf[i] ^= 0x01;
    }
    /* and every truncation */
    for (size_t i = 0; i < len; i++)
        CHECK(agent_cursor_parse(buf, i, &out, err, sizeof err) != 0);
    free(buf);
}

/* A version 1 cursor (before stream entries and offset markers) still
 * loads: its entries, no marks, no streams. */
static void test_v1(void)
{
    const char body[] = "gpufl-agent-cursor 1\n"
                        "0123456789abcdef 1024 2049 131 65536 1 "
                        "app.20261129-120000.abcd1234.device.log.1\n";
    char buf[512], err[256];
    agent_cursor out;
    int n = snprintf(buf, sizeof buf, "%send 1 %016llx\n", body,
                     (unsigned long long)agent_fp(body, sizeof body - 1));

    REQUIRE(agent_cursor_parse(buf, (size_t)n, &out, err, sizeof err) == 0);
    CHECK_EQ_U64(out.n, 1);
    CHECK_EQ_U64(out.nk, 0);
    CHECK_EQ_U64(out.e[0].off, 65536);
    CHECK_EQ_U64(out.e[0].mark_len, 0);
    CHECK_STR(out.e[0].name, "app.20261129-120000.abcd1234.device.log.1");
    agent_cursor_release(&out);
    /* a version 2 line in a version 1 file is refused */
    n = snprintf(buf, sizeof buf,
                 "gpufl-agent-cursor 1\nk 1 2 0 0 3 a.device\nend 0 %016llx\n",
                 0ull);
    CHECK(agent_cursor_parse(buf, (size_t)n, &out, err, sizeof err) ==
          GPUFL_EPARSE);
}

static void test_bad_entries(void)
{
    agent_centry e;
    agent_ckey k;
    agent_cursor cur = { &e, 1, NULL, 0 }, out;
    char *buf, err[256];
    size_t len;

    mk_entries(&e, 1);
    memcpy(e.name, "a/b.device.log", 15);
    CHECK(agent_cursor_format(&cur, &buf, &len) == 0);
    /* a '/' is refused at parse: names never hold one */
    CHECK(agent_cursor_parse(buf, len, &out, err, sizeof err) == GPUFL_EPARSE);
    free(buf);
    mk_entries(&e, 1);
    e.fp_len = 10; /* shorter than the offset: ambiguous identity */
    CHECK(agent_cursor_format(&cur, &buf, &len) == 0);
    CHECK(agent_cursor_parse(buf, len, &out, err, sizeof err) == GPUFL_EPARSE);
    CHECK(strstr(err, "line 2") != NULL);
    free(buf);
    mk_entries(&e, 1);
    e.mark_len = CURSOR_MARK_MAX + 1; /* a marker longer than its cap */
    CHECK(agent_cursor_format(&cur, &buf, &len) == 0);
    CHECK(agent_cursor_parse(buf, len, &out, err, sizeof err) == GPUFL_EPARSE);
    free(buf);
    mk_entries(&e, 1);
    e.off = 3;
    e.mark_len = 4; /* more marker bytes than bytes before the offset */
    CHECK(agent_cursor_format(&cur, &buf, &len) == 0);
    CHECK(agent_cursor_parse(buf, len, &out, err, sizeof err) == GPUFL_EPARSE);
    free(buf);
    /* a stream entry with unknown flags */
    mk_keys(&k, 1);
    k.flags = 4;
    cur.e = NULL;
    cur.n = 0;
    cur.k = &k;
    cur.nk = 1;
    CHECK(agent_cursor_format(&cur, &buf, &len) == 0);
    CHECK(agent_cursor_parse(buf, len, &out, err, sizeof err) == GPUFL_EPARSE);
    CHECK(strstr(err, "stream entry") != NULL);
    free(buf);
}

static void test_save_load(void)
{
    agent_centry in[3];
    agent_ckey kin[2];
    agent_cursor cur = { in, 3, kin, 2 }, out;
    char path[4200], err[256];
    int missing;
    struct stat st;
    FILE *f;

    snprintf(path, sizeof path, "%s/cursor", tmpdir);
    unlink(path);
    CHECK(agent_cursor_load(path, &out, &missing, err, sizeof err) == 0);
    CHECK(missing == 1 && out.n == 0 && out.nk == 0);
    mk_entries(in, 3);
    mk_keys(kin, 2);
    REQUIRE(agent_cursor_save(path, &cur) == 0);
    CHECK(access(path, F_OK) == 0);
    /* the cursor says which files exist and how far they were read */
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    {
        char tmp[4300];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        CHECK(access(tmp, F_OK) != 0);
    }
    REQUIRE(agent_cursor_load(path, &out, &missing, err, sizeof err) == 0);
    CHECK(out.n == 3 && out.nk == 2 && !missing &&
          memcmp(in, out.e, sizeof in) == 0 &&
          memcmp(kin, out.k, sizeof kin) == 0);
    agent_cursor_release(&out);
    f = fopen(path, "a");
    REQUIRE(f);
    fputs("junk\n", f);
    fclose(f);
    CHECK(agent_cursor_load(path, &out, &missing, err, sizeof err) ==
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
    RUN(test_v1);
    RUN(test_bad_entries);
    RUN(test_save_load);
    RUN(test_names);
    rmdir(tmpdir);
    TEST_DONE();
}
