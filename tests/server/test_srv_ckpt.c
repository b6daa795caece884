/*
 * test_srv_ckpt.c - SQLite's WAL checkpointed on the store's own thread
 * (store_sql_ckpt.c) instead of in the commit that fills it.  With the
 * bound at 64 pages (GPUFL_SERVER_CKPT_FRAMES), 30 transactions of ~1 MB
 * through the writer leave a WAL file of a few MB, where SQLite's own
 * checkpoint at commit (65 536 pages, 256 MiB) lets it pass 30 MB; the
 * thread counts its checkpoints and the pages it copied under the
 * writer's lock (fewer than it copied beside it); every row is there,
 * and the store closes with the thread running.
 */
#include "test.h"

#include "store_test.h"
#include "store_sql_int.h"

#include <sys/stat.h>
#include <unistd.h>

#define TX 30

static long long one(sdb *db, const char *sql)
{
    sdb_stmt *st = NULL;
    long long v = -1;

    if (sdb_prepare(db, sql, &st))
        return -1;
    if (sdb_step(st) == SDB_ROW)
        v = (long long)sdb_col_i64(st, 0);
    sdb_finalize(st);
    return v;
}

static void test_ckpt_thread(void)
{
    char url[512], wal[600];
    srv_store *s;
    uint64_t runs = 0, locked = 0;
    struct stat sb;
    sdb *db = NULL;
    char err[256];

    setenv("GPUFL_SERVER_CKPT_FRAMES", "64", 1);
    s = open_tmp("ckpt");
    REQUIRE(s != NULL);
    if (sdb_dialect(s->w) != SDB_SQLITE) {
        fprintf(stderr, "  SQLite's WAL only: skipped on PostgreSQL\n");
        srv_store_close(s);
        return;
    }
    tmp_url("ckpt", url);
    snprintf(wal, sizeof(wal), "%s-wal", url);
    pthread_mutex_lock(&s->wlock);
    CHECK(sdb_exec(s->w, "CREATE TABLE ck(x BLOB)") == 0);
    pthread_mutex_unlock(&s->wlock);
    for (int i = 0; i < TX; i++) {
        pthread_mutex_lock(&s->wlock);
        CHECK(sdb_exec(s->w,
                       "BEGIN; WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL"
                       " SELECT i + 1 FROM c WHERE i < 999) INSERT INTO ck"
                       " SELECT randomblob(1000) FROM c; COMMIT") == 0);
        pthread_mutex_unlock(&s->wlock);
        usleep(20000); /* the thread's turn at the lock */
    }
    for (int i = 0; i < 500; i++) {
        sq_ckpt_counts(s, &runs, &locked);
        if (runs >= 1)
            break;
        usleep(10000);
    }
    REQUIRE(stat(wal, &sb) == 0);
    fprintf(stderr,
            "  %d transactions of ~1 MB: %llu checkpoints on the thread,"
            " %llu pages copied under the writer's lock, WAL file %.1f MB\n",
            TX, (unsigned long long)runs, (unsigned long long)locked,
            (double)sb.st_size / 1048576.0);
    CHECK(runs >= 1);
    CHECK(sb.st_size < 16 << 20);
    /* most pages copied beside the writer: ~250 a transaction in all */
    CHECK(locked < (uint64_t)TX * 250 / 2);
    REQUIRE(sdb_open(url, 1, &db, err, sizeof(err)) == 0);
    CHECK(one(db, "SELECT count(*) FROM ck") == TX * 1000);
    sdb_close(db);
    srv_store_close(s);
}

int main(void)
{
    RUN(test_ckpt_thread);
    TEST_DONE();
}
