/*
 * test_srv_walbuf.c - db_sqlite_walbuf.c, the VFS that holds a WAL's
 * frames back and writes a transaction's in one call:
 *  - a reader on SQLite's own VFS sees every commit whole at once, with
 *    synchronous=OFF too (no sync to flush at: the commit frame does);
 *  - the frames were coalesced (far fewer writes reach the file than
 *    SQLite made);
 *  - a transaction bigger than the writer's page cache (SQLite spills
 *    frames mid-transaction and reads them back) and than the buffer
 *    (SDB_WALBUF_CAP) commits intact;
 *  - the WAL restarted after a checkpoint, and written again;
 *  - a writer killed (_exit, nothing closed) with frames held loses none
 *    of what it committed, and what it had not committed is not there;
 *  - a write that fails as the frames go out (the file size limit) fails
 *    the commit, and nothing of it is seen.
 */
#include "test.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "db_sqlite_walbuf.h"

static char path[512];

static sqlite3 *open_db(const char *vfs, const char *sync)
{
    sqlite3 *h = NULL;
    char sql[128];

    if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                        vfs) != SQLITE_OK) {
        fprintf(stderr, "open %s: %s\n", path, h ? sqlite3_errmsg(h) : "?");
        sqlite3_close(h);
        return NULL;
    }
    sqlite3_busy_timeout(h, 5000);
    snprintf(sql, sizeof(sql),
             "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s;"
             " PRAGMA wal_autocheckpoint=0",
             sync);
    if (sqlite3_exec(h, sql, NULL, NULL, NULL) != SQLITE_OK) {
        fprintf(stderr, "setup: %s\n", sqlite3_errmsg(h));
        sqlite3_close(h);
        return NULL;
    }
    return h;
}

static int exec(sqlite3 *h, const char *sql)
{
    char *e = NULL;
    int rc = sqlite3_exec(h, sql, NULL, NULL, &e);

    if (rc != SQLITE_OK)
        fprintf(stderr, "%s: %s\n", sql, e ? e : "?");
    sqlite3_free(e);
    return rc;
}

static int64_t one(sqlite3 *h, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;

    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    else
        fprintf(stderr, "%s: %s\n", sql, sqlite3_errmsg(h));
    sqlite3_finalize(st);
    return v;
}

/* 1 when SQLite finds the database whole. */
static int integrity_ok(sqlite3 *h)
{
    return one(h, "SELECT count(*) FROM pragma_integrity_check"
                  " WHERE integrity_check = 'ok'") == 1;
}

/* fn run in a child process (its return value the child's exit status,
 * the child ending with _exit: nothing closed, as kill -9 leaves it);
 * returns that status, or -1 when the child could not run or died. */
static int in_child(int (*fn)(void))
{
    pid_t pid = fork();
    int st = 0;

    if (pid < 0)
        return -1;
    if (pid == 0)
        _exit(fn());
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

/* n rows of 1 KiB blobs (~4 a page) numbered from first, in one
 * transaction. */
static int put_rows(sqlite3 *h, int first, int n)
{
    sqlite3_stmt *st = NULL;
    char blob[1024];
    int rc = exec(h, "BEGIN");

    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(h, "INSERT INTO t(id, b) VALUES(?1, ?2)", -1,
                                &st, NULL);
    for (int i = first; i < first + n && rc == SQLITE_OK; i++) {
        memset(blob, 'a' + i % 26, sizeof(blob));
        sqlite3_bind_int(st, 1, i);
        sqlite3_bind_blob(st, 2, blob, sizeof(blob), SQLITE_STATIC);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_OK ? exec(h, "COMMIT") : rc;
}

static void fresh(const char *name)
{
    char f[600];

    snprintf(path, sizeof(path), "%s/walbuf-%s.db",
             getenv("GPUFL_TEST_TMP") ? getenv("GPUFL_TEST_TMP") : "/tmp",
             name);
    unlink(path);
    snprintf(f, sizeof(f), "%s-wal", path);
    unlink(f);
    snprintf(f, sizeof(f), "%s-shm", path);
    unlink(f);
}

/* Each commit seen whole by a reader on SQLite's own VFS, at once. */
static void test_reader_sees_commits(const char *sync)
{
    sqlite3 *w, *r;
    uint64_t w0, f0, w1, f1;
    int total = 0;

    fresh(sync);
    REQUIRE((w = open_db(SDB_WALBUF_VFS, sync)) != NULL);
    REQUIRE((r = open_db(NULL, "FULL")) != NULL);
    REQUIRE(exec(w, "CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB)") == 0);
    sdb_walbuf_stats(&w0, &f0);
    for (int k = 1; k <= 20; k++) {
        REQUIRE(put_rows(w, total, 50 * k) == SQLITE_OK);
        total += 50 * k;
        CHECK_EQ_U64(one(r, "SELECT count(*) FROM t"), total);
        CHECK_EQ_U64(one(r, "SELECT count(*) FROM t WHERE length(b) = 1024"),
                     total);
    }
    sdb_walbuf_stats(&w1, &f1);
    /* each frame is two writes from SQLite; a commit's run reaches the
     * file in pieces of 31 pages, ~70 frames (140 writes) each */
    CHECK(w1 - w0 > 1000);
    CHECK(f1 - f0 < (w1 - w0) / 20);
    fprintf(stderr, "  synchronous=%s: %llu writes, %llu flushes\n", sync,
            (unsigned long long)(w1 - w0), (unsigned long long)(f1 - f0));
    sqlite3_close(r);
    sqlite3_close(w);
    REQUIRE((r = open_db(NULL, "FULL")) != NULL);
    CHECK_EQ_U64(one(r, "SELECT count(*) FROM t"), total);
    CHECK(integrity_ok(r));
    sqlite3_close(r);
}

/* Transactions bigger than the writer's page cache (SQLite writes frames
 * mid-transaction and reads them back before its commit) and than the
 * buffer (SDB_WALBUF_CAP: ~4 MiB of frames), a checkpoint that empties
 * the WAL, and the WAL written again from its start. */
static void test_spill_and_restart(void)
{
    sqlite3 *w, *r;
    int total = 0;

    fresh("spill");
    REQUIRE((w = open_db(SDB_WALBUF_VFS, "FULL")) != NULL);
    REQUIRE((r = open_db(NULL, "FULL")) != NULL);
    REQUIRE(exec(w, "PRAGMA cache_size=20") == 0);
    REQUIRE(exec(w, "CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB)") == 0);
    for (int k = 0; k < 3; k++) {
        REQUIRE(put_rows(w, total, 4000) == SQLITE_OK);
        total += 4000;
        /* rows rewritten: pages spilled earlier are read back */
        REQUIRE(exec(w, "BEGIN; UPDATE t SET b = zeroblob(1024) WHERE id % 7"
                        " = 0; COMMIT") == 0);
        CHECK_EQ_U64(one(r, "SELECT count(*) FROM t"), total);
        CHECK_EQ_U64(one(r, "SELECT count(*) FROM t WHERE b = zeroblob(1024)"),
                     (total + 6) / 7);
        /* the WAL emptied: the next transaction starts it over */
        CHECK_EQ_U64(one(w, "PRAGMA wal_checkpoint(TRUNCATE)"), 0);
    }
    CHECK(integrity_ok(r));
    sqlite3_close(r);
    sqlite3_close(w);
}

/* The killed writer's work: five commits, then frames of an open
 * transaction written (cache 10 pages), then the end. */
static int killed_writer(void)
{
    sqlite3 *w = open_db(SDB_WALBUF_VFS, "FULL");

    if (!w || exec(w, "CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB)"))
        return 2;
    for (int k = 0; k < 5; k++)
        if (put_rows(w, k * 300, 300) != SQLITE_OK)
            return 3;
    if (exec(w, "PRAGMA cache_size=10; BEGIN") ||
        exec(w, "INSERT INTO t SELECT id + 100000, b FROM t"))
        return 4;
    return 0;
}

/* A writer that ends without closing anything (as kill -9 does), frames
 * of an open transaction held: every commit is there, the open
 * transaction is not. */
static void test_killed_writer(void)
{
    sqlite3 *r;

    fresh("kill");
    REQUIRE(in_child(killed_writer) == 0);
    REQUIRE((r = open_db(NULL, "FULL")) != NULL);
    CHECK_EQ_U64(one(r, "SELECT count(*) FROM t"), 1500);
    CHECK_EQ_U64(one(r, "SELECT max(id) FROM t"), 1499);
    CHECK(integrity_ok(r));
    sqlite3_close(r);
}

/* The failing writer's work: 100 rows committed, then the file size
 * limited to 64 KiB more WAL and a commit of ~2 MiB tried; 0 when that
 * commit failed, 5 when SQLite reported it done. */
static int limited_writer(void)
{
    sqlite3 *w = open_db(SDB_WALBUF_VFS, "FULL");
    char wal[600];
    struct stat sb;
    struct rlimit rl;

    if (!w || exec(w, "CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB)") ||
        put_rows(w, 0, 100) != SQLITE_OK)
        return 2;
    snprintf(wal, sizeof(wal), "%s-wal", path);
    if (stat(wal, &sb) != 0)
        return 3;
    signal(SIGXFSZ, SIG_IGN);
    rl.rlim_cur = rl.rlim_max = (rlim_t)sb.st_size + 64 * 1024;
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        return 4;
    return put_rows(w, 100, 2000) == SQLITE_OK ? 5 : 0;
}

/* A write that fails when the held frames go out (the file size limit,
 * as a full disk would) fails the commit: SQLite reports it, and a reader
 * sees the commits before it and nothing of that one. */
static void test_write_error_fails_commit(void)
{
    sqlite3 *r;

    fresh("efbig");
    CHECK(in_child(limited_writer) == 0);
    REQUIRE((r = open_db(NULL, "FULL")) != NULL);
    CHECK_EQ_U64(one(r, "SELECT count(*) FROM t"), 100);
    CHECK(integrity_ok(r));
    sqlite3_close(r);
}

static void test_sync_off(void)
{
    test_reader_sees_commits("OFF");
}

static void test_sync_normal(void)
{
    test_reader_sees_commits("NORMAL");
}

static void test_sync_full(void)
{
    test_reader_sees_commits("FULL");
}

int main(void)
{
    if (sdb_walbuf_register() != SQLITE_OK) {
        fprintf(stderr, "cannot register the VFS\n");
        return 1;
    }
    RUN(test_sync_off);
    RUN(test_sync_normal);
    RUN(test_sync_full);
    RUN(test_spill_and_restart);
    RUN(test_killed_writer);
    RUN(test_write_error_fails_commit);
    TEST_DONE();
}
