/*
 * test_srv_config.c - the option table: defaults, the precedence of file <
 * environment < flags, value parsing and usage errors with hints.
 */
#include "srv_int.h"
#include "test.h"

#include <stdlib.h>
#include <unistd.h>

static int load(srv_config *c, char **argv, char *err)
{
    char *pos[4];
    int npos = 0, argc = 0;
    while (argv[argc])
        argc++;
    return srv_config_load(c, argc, argv, pos, 4, &npos, err, 512);
}

static void test_defaults(void)
{
    srv_config c;
    char err[512];
    char *argv[] = { "gpufl-server", NULL };

    REQUIRE(load(&c, argv, err) == 0);
    CHECK_STR(c.listen, "127.0.0.1:8080");
    CHECK_STR(c.data_dir, "./gpufl-data");
    CHECK_STR(c.db, "");
    CHECK_EQ_U64(c.max_body, 16u << 20);
    CHECK_EQ_U64(c.stale_after_s, 300);
    CHECK_EQ_U64(c.retention_interval_s, 3600);
    CHECK_EQ_U64(c.quiet, 0);
    /* lines a transaction: PostgreSQL's CPU per event was ~50 % higher at
     * 5,000 than at 10,000 and ~25 % higher at 10,000 than at 40,000
     * (docs/fleet.md, docs/server.md "Kafka transactions of 40,000
     * lines") */
    CHECK_EQ_U64(c.kafka_batch, 40000);
    /* the SQLite writer's page cache (docs/server.md "100M a fifth
     * time") */
    CHECK_EQ_U64(c.sqlite_writer_cache, 256u << 20);
}

/* --sqlite-writer-cache: a size, its variable, refused outside 1 MiB ..
 * 64 GiB with a message that names the flag and the range. */
static void test_sqlite_writer_cache(void)
{
    srv_config c;
    char err[512];
    char *a1[] = { "s", "--sqlite-writer-cache", "8M", NULL };
    char *a2[] = { "s", "--sqlite-writer-cache", "512k", NULL };
    char *a3[] = { "s", "--sqlite-writer-cache=65G", NULL };
    char *a4[] = { "s", NULL };

    REQUIRE(load(&c, a1, err) == 0);
    CHECK_EQ_U64(c.sqlite_writer_cache, 8u << 20);
    CHECK(load(&c, a2, err) == 2 && strstr(err, "--sqlite-writer-cache") &&
          strstr(err, "out of range"));
    CHECK(load(&c, a3, err) == 2 && strstr(err, "--sqlite-writer-cache") &&
          strstr(err, "out of range"));
    setenv("GPUFL_SERVER_SQLITE_WRITER_CACHE", "32M", 1);
    REQUIRE(load(&c, a4, err) == 0);
    CHECK_EQ_U64(c.sqlite_writer_cache, 32u << 20);
    unsetenv("GPUFL_SERVER_SQLITE_WRITER_CACHE");
}

static void test_precedence(void)
{
    const char *tmp = getenv("GPUFL_TEST_TMP");
    char path[512], err[512];
    srv_config c;
    FILE *f;

    snprintf(path, sizeof(path), "%s/srv_config_test.conf", tmp ? tmp : "/tmp");
    f = fopen(path, "w");
    REQUIRE(f);
    fprintf(f, "# comment\nlisten = 0.0.0.0:9000\nthreads=8\n"
               "data-dir = /from/file  # trailing\nmax-body = 2M\n");
    fclose(f);
    setenv("GPUFL_SERVER_DATA_DIR", "/from/env", 1);
    setenv("GPUFL_SERVER_THREADS", "6", 1);
    {
        char *argv[] = { "s", "--config", path, "--threads=3", NULL };
        REQUIRE(load(&c, argv, err) == 0);
        CHECK_STR(c.listen, "0.0.0.0:9000"); /* file */
        CHECK_STR(c.data_dir, "/from/env");  /* env over file */
        CHECK_EQ_U64(c.threads, 3);          /* flag over env */
        CHECK_EQ_U64(c.max_body, 2u << 20);
    }
    unsetenv("GPUFL_SERVER_DATA_DIR");
    unsetenv("GPUFL_SERVER_THREADS");
    f = fopen(path, "w");
    REQUIRE(f);
    fprintf(f, "lisen = x\n");
    fclose(f);
    {
        char *argv[] = { "s", "--config", path, NULL };
        CHECK(load(&c, argv, err) == 2);
        CHECK(strstr(err, "lisen") && strstr(err, "listen"));
    }
    unlink(path);
}

static void test_values(void)
{
    srv_config c;
    char err[512];
    char *a1[] = { "s",  "--stale-after", "7d", "--retention-max-db",
                   "1G", "--quiet",       NULL };
    char *a2[] = { "s", "--threads", "0", NULL };
    char *a3[] = { "s", "--threads", "x", NULL };
    char *a4[] = { "s", "--max-body", "5Q", NULL };
    char *a5[] = { "s", "--bogus", NULL };
    char *a6[] = { "s", "--listen", NULL };
    char *a7[] = { "s", "--quiet=maybe", NULL };

    REQUIRE(load(&c, a1, err) == 0);
    CHECK_EQ_U64(c.stale_after_s, 7 * 86400);
    CHECK_EQ_U64(c.retention_max_db, 1u << 30);
    CHECK_EQ_U64(c.quiet, 1);
    CHECK(load(&c, a2, err) == 2 && strstr(err, "out of range"));
    CHECK(load(&c, a3, err) == 2);
    CHECK(load(&c, a4, err) == 2);
    CHECK(load(&c, a5, err) == 2 && strstr(err, "unknown option"));
    CHECK(load(&c, a6, err) == 2);
    CHECK(load(&c, a7, err) == 2);
}

/* The syntax every program shares (src/common/opt.h), and the
 * environment's typos. */
static void test_engine(void)
{
    srv_config c;
    char err[512], why[256];
    char *a1[] = { "s",
                   "--max-body=16MiB",
                   "--timeout=2m",
                   "--quiet=YES",
                   "--role=ADMIN",
                   "--retention-max-db",
                   "1.5G",
                   NULL };
    char *a2[] = { "s", "--timeout=1500ms", NULL };
    char *a3[] = { "s", "keys", "create", "--role", "read", NULL };
    char *a4[] = { "s", "--role=root", NULL };

    CHECK(opt_table_check(&srv_prog, why, sizeof why) == 0);
    REQUIRE(load(&c, a1, err) == 0);
    CHECK_EQ_U64(c.max_body, 16u << 20);
    CHECK_EQ_U64(c.timeout_s, 120);
    CHECK_EQ_U64(c.quiet, 1);
    CHECK_STR(c.key_role, "admin");
    CHECK_EQ_U64(c.retention_max_db, 3ull << 29);
    /* seconds stay seconds: a finer value is refused, not rounded */
    CHECK(load(&c, a2, err) == 2 && strstr(err, "--timeout wants") &&
          strstr(err, "a bare number is seconds"));
    CHECK(load(&c, a3, err) == 0);
    CHECK(load(&c, a4, err) == 2 &&
          strstr(err, "--role wants ingest, read or admin, not 'root'"));
    setenv("GPUFL_SERVER_LISTN", "0.0.0.0:1", 1);
    CHECK(load(&c, a3, err) == 2 && strstr(err, "GPUFL_SERVER_LISTN") &&
          strstr(err, "GPUFL_SERVER_LISTEN"));
    unsetenv("GPUFL_SERVER_LISTN");
    setenv("GPUFL_SERVER_TOPK", "8", 1); /* the store's, not a typo */
    CHECK(load(&c, a3, err) == 0);
    unsetenv("GPUFL_SERVER_TOPK");
}

int main(void)
{
    RUN(test_defaults);
    RUN(test_precedence);
    RUN(test_values);
    RUN(test_engine);
    RUN(test_sqlite_writer_cache);
    TEST_DONE();
}
