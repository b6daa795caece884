/*
 * test_srv_kb_wal.c - the compactor's merges share transactions (SQLite):
 * every merged block writes its ~names kbnames rows, one at each name's
 * place in kbnames_sn (kbnames_nid until migration 37; kbnames_dur and
 * kbnames_dmin, each, until migration 36), so a transaction per merged
 * block wrote nearly every leaf page of both indexes into the WAL again
 * (at 2M kernels ~890 MB of writes, ~40 % of the server's CPU during
 * ingest: docs/server.md "Where ingest's CPU goes").  Here 40 small
 * blocks of 150 names merge into 20 (blocks of 200 kernels,
 * GPUFL_SERVER_KB_RUN): the WAL frames the pass writes must stay well
 * under a transaction's worth of index pages per merged block, and every
 * kernel must still be in the blocks once, every merged block named.
 * And the pass writes little besides its WAL frames: the statement
 * journals of its multi-row inserts (a copy of each page a statement
 * changes) went to a temporary file, 390 MB of the compactor's writes per
 * 2M kernels, until the writer kept them in memory (temp_store=MEMORY).
 * The merges are prepared off the writer's lock and swapped in under it:
 * a source that goes while its merge is prepared (another server's
 * compactor, retention) passes that merge, not the transaction.  And
 * an ingest batch that comes during a long merge transaction waits for
 * one merge, not the transaction.
 */
#include "test.h"

#include "store_test.h"
#include "store_sql_int.h"

#include <pthread.h>
#include <unistd.h>

#define SIDW "eeeeeeee-0000-4000-8000-000000000007"
#define BATCH 100
#define NBATCH 40
#define NAMES 150

static char lines[BATCH + 1][512];
static char arena[1 << 20];
static srv_ev ev[BATCH + 1];

/* Kernels seq0 .. seq0 + BATCH - 1 of one stream, names i % NAMES and
 * durations scattered so that each name's bounds differ block to block. */
static size_t batch(int seq0)
{
    int k = 0;

    snprintf(lines[k++], sizeof(lines[0]),
             "{\"v\":1,\"sid\":\"" SIDW "\",\"st\":\"device\",\"seq\":0,"
             "\"ts\":100,\"type\":\"session\",\"app\":\"t\","
             "\"host\":\"h\"}");
    for (int i = 0; i < BATCH; i++) {
        int s = seq0 + i;
        snprintf(lines[k++], sizeof(lines[0]),
                 "{\"v\":1,\"sid\":\"" SIDW "\",\"st\":\"device\","
                 "\"seq\":%d,\"ts\":%d,\"type\":\"kernel\",\"name\":%d,"
                 "\"dur\":%d}",
                 s, 1000 + 10 * s, s % NAMES, 100 + (s * 7919) % 5000);
    }
    return st_parse(SRV_ST_DEVICE, lines, k, arena, sizeof(arena), ev);
}

/* This process's bytes written by write(2) and its kin so far. */
static int64_t wchar(void)
{
    char l[128];
    long long v = -1;
    FILE *f = fopen("/proc/self/io", "r");

    while (f && fgets(l, sizeof(l), f))
        if (sscanf(l, "wchar: %lld", &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}

static int64_t one(sdb *db, const char *sql, int col)
{
    sdb_stmt *st = NULL;
    int64_t v = -1;

    if (sdb_prepare(db, sql, &st) == 0 && sdb_step(st) == SDB_ROW)
        v = sdb_col_i64(st, col);
    sdb_finalize(st);
    return v;
}

/* A store of NBATCH ingested batches, a block each, and a connection of
 * the test's own on its file (*db); NULL (a failure counted) when either
 * could not be made. */
static srv_store *fill(const char *name, sdb **db)
{
    char url[512], err[256];
    srv_ingest_res r;
    srv_store *s = open_tmp(name);
    int ok = s != NULL;

    CHECK(ok);
    if (!ok)
        return NULL;
    srv_store_set_kernel_store(s, 1);
    for (int b = 0; ok && b < NBATCH; b++) {
        size_t n = batch(1 + b * BATCH);
        ok = srv_store_ingest(s, ev, n, &r) == GPUFL_OK;
    }
    tmp_url(name, url);
    ok = ok && sdb_open(url, 0, db, err, sizeof(err)) == 0;
    CHECK(ok);
    if (!ok) {
        srv_store_close(s);
        return NULL;
    }
    CHECK(one(*db, "SELECT count(*) FROM kblocks", 0) == NBATCH);
    return s;
}

static void test_merge_wal(void)
{
    srv_store *s;
    sdb *db = NULL;
    uint64_t nb = 0, nk = 0, named = 0;
    int64_t frames, w0, w1;

    if (pg_uri()[0]) {
        fprintf(stderr, "  SQLite's WAL only: skipped on PostgreSQL\n");
        return;
    }
    setenv("GPUFL_SERVER_KB_RUN", "200", 1);
    s = fill("kb_wal", &db);
    REQUIRE(s != NULL);
    /* an empty WAL: what is in it afterwards is the pass's */
    CHECK(one(db, "PRAGMA wal_checkpoint(TRUNCATE)", 0) == 0);
    w0 = wchar();
    REQUIRE(srv_store_kblocks_compact(s, &nb, &nk, &named) == GPUFL_OK);
    w1 = wchar();
    frames = one(db, "PRAGMA wal_checkpoint(PASSIVE)", 1);
    fprintf(stderr,
            "  merged %llu blocks (%llu kernels), named %llu: %lld WAL"
            " frames, %lld bytes written\n",
            (unsigned long long)nb, (unsigned long long)nk,
            (unsigned long long)named, (long long)frames, (long long)(w1 - w0));
    CHECK_EQ_U64(nb, NBATCH / 2);
    CHECK_EQ_U64(nk, NBATCH * BATCH);
    /* a transaction per merged block wrote 561 frames here, 28 a block
     * (both name indexes' leaves again, the block's pages, the
     * commit's); shared transactions 55 */
    CHECK(frames > 0 && frames < 10 * (int64_t)(NBATCH / 2));
    /* a frame is a page and its 24-byte header; the WAL's own header and
     * the -shm's are a few KiB */
    CHECK(w0 >= 0 && w1 - w0 < frames * 4120 + 65536);
    /* every kernel once, every block named */
    CHECK(one(db, "SELECT count(*) FROM kblocks", 0) == NBATCH / 2);
    CHECK(one(db, "SELECT sum(n) FROM kblocks", 0) == NBATCH * BATCH);
    CHECK(one(db, "SELECT count(*) FROM kbunnamed", 0) == 0);
    CHECK(one(db,
              "SELECT count(*) FROM kblocks k WHERE NOT EXISTS (SELECT 1"
              " FROM kbnames n WHERE n.sess=k.sess AND n.stream=k.stream"
              " AND n.seq_lo=k.seq_lo)",
              0) == 0);
    CHECK(one(db, "SELECT sum(n) FROM kbnames", 0) == NBATCH * BATCH);
    sdb_close(db);
    srv_store_close(s);
    unsetenv("GPUFL_SERVER_KB_RUN");
}

struct compact_arg {
    srv_store *s;
    uint64_t nb, nk;
    int rc;
};

static void *compact_main(void *arg)
{
    struct compact_arg *a = arg;
    a->rc = srv_store_kblocks_compact(a->s, &a->nb, &a->nk, NULL);
    return NULL;
}

/* 40 blocks of 100 merge in pairs (blocks of 200); while the merges are
 * prepared (GPUFL_SERVER_KB_PREP_PAUSE_MS) the block at seq 201 goes, as
 * another server's merge or retention would take it: the pass succeeds,
 * its pair (201, 301) is passed and 301 left as it was, the 19 other
 * pairs merged - every kernel that was not taken is there once. */
static void test_merge_source_gone(void)
{
    srv_store *s;
    sdb *db = NULL;
    pthread_t th;
    struct compact_arg a = { 0 };

    if (pg_uri()[0]) {
        fprintf(stderr, "  SQLite's file: skipped on PostgreSQL\n");
        return;
    }
    setenv("GPUFL_SERVER_KB_RUN", "200", 1);
    setenv("GPUFL_SERVER_KB_PREP_PAUSE_MS", "400", 1);
    s = fill("kb_gone", &db);
    REQUIRE(s != NULL);
    a.s = s;
    REQUIRE(pthread_create(&th, NULL, compact_main, &a) == 0);
    usleep(150000); /* inside the pause: every merge prepared */
    pthread_mutex_lock(&s->wlock);
    CHECK(sdb_exec(s->w,
                   "BEGIN; DELETE FROM kblocks WHERE seq_lo=201;"
                   " DELETE FROM kbunnamed WHERE seq_lo=201; COMMIT") == 0);
    pthread_mutex_unlock(&s->wlock);
    pthread_join(th, NULL);
    fprintf(stderr, "  pass: rc %d, merged %llu blocks (%llu kernels)\n", a.rc,
            (unsigned long long)a.nb, (unsigned long long)a.nk);
    CHECK(a.rc == GPUFL_OK);
    CHECK_EQ_U64(a.nb, NBATCH / 2 - 1);
    CHECK_EQ_U64(a.nk, (NBATCH - 2) * BATCH);
    CHECK(one(db, "SELECT n FROM kblocks WHERE seq_lo=301", 0) == BATCH);
    CHECK(one(db, "SELECT count(*) FROM kblocks", 0) == NBATCH / 2);
    CHECK(one(db, "SELECT sum(n) FROM kblocks", 0) == (NBATCH - 1) * BATCH);
    sdb_close(db);
    srv_store_close(s);
    unsetenv("GPUFL_SERVER_KB_PREP_PAUSE_MS");
    unsetenv("GPUFL_SERVER_KB_RUN");
}

/* 40 blocks of 100 merge in pairs, each merge held 40 ms inside its
 * transaction (GPUFL_SERVER_KB_PAUSE_MS): 20 merges would hold the
 * writer's lock 800 ms.  An ingest batch that comes meanwhile gets the
 * lock once the transaction has held it 50 ms (SQLite's give_ns) and
 * its merge is done (the pass gives way: store_sql_int.h), not after the whole
 * transaction; and the pass still merges every pair, the batch is stored
 * once. */
static void test_merge_gives_way(void)
{
    srv_store *s;
    sdb *db = NULL;
    pthread_t th;
    struct compact_arg a = { 0 };
    srv_ingest_res r;
    struct timespec t0, t1;
    double ms;
    size_t n;

    if (pg_uri()[0]) {
        fprintf(stderr, "  SQLite's file: skipped on PostgreSQL\n");
        return;
    }
    setenv("GPUFL_SERVER_KB_RUN", "200", 1);
    s = fill("kb_give", &db);
    REQUIRE(s != NULL);
    setenv("GPUFL_SERVER_KB_PAUSE_MS", "40", 1);
    a.s = s;
    REQUIRE(pthread_create(&th, NULL, compact_main, &a) == 0);
    usleep(100000); /* inside the transaction: a merge or two done */
    n = batch(1 + NBATCH * BATCH);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(srv_store_ingest(s, ev, n, &r) == GPUFL_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
         (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    pthread_join(th, NULL);
    fprintf(stderr,
            "  the batch waited %.0f ms; pass: rc %d, merged %llu blocks"
            " (%llu kernels)\n",
            ms, a.rc, (unsigned long long)a.nb, (unsigned long long)a.nk);
    /* the rest of the transaction would be ~700 ms; 50 ms and a merge's
     * 40, with room for a slow machine */
    CHECK(ms < 350);
    CHECK(r.accepted == BATCH);
    CHECK(a.rc == GPUFL_OK);
    CHECK_EQ_U64(a.nb, NBATCH / 2);
    CHECK_EQ_U64(a.nk, NBATCH * BATCH);
    CHECK(one(db, "SELECT count(*) FROM kblocks", 0) == NBATCH / 2 + 1);
    CHECK(one(db, "SELECT sum(n) FROM kblocks", 0) == (NBATCH + 1) * BATCH);
    sdb_close(db);
    srv_store_close(s);
    unsetenv("GPUFL_SERVER_KB_PAUSE_MS");
    unsetenv("GPUFL_SERVER_KB_RUN");
}

int main(void)
{
    RUN(test_merge_wal);
    RUN(test_merge_source_gone);
    RUN(test_merge_gives_way);
    TEST_DONE();
}
