/*
 * test_srv_db_pg.c - db.h's PostgreSQL backend when the server ends its
 * connection (pg_terminate_backend, as a restart or a failover does):
 *  - idle: the next command runs on a new connection, without an error;
 *    a statement prepared on the old one is prepared again, the setup SQL
 *    (temporary tables) runs again, the watcher hears SDB_EV_UP;
 *  - inside a transaction: every command fails until ROLLBACK (nothing of
 *    the lost transaction may run by itself on a new connection), COMMIT
 *    fails, then the next command reconnects; only what committed is there.
 * And the statements kept prepared once finalized (db_pg.c, pg_kept): the
 * same SQL and types runs again on the kept one, other types get their
 * own, and a connection keeps at most PG_STMT_CACHE of them.  And results
 * in binary (db_pg.c, bin_ok): a statement of blobs and integers reads the
 * same from its second run on (extremes, NULs in blobs, empty and NULL
 * ones), in binary; one with a text column stays in text.  And
 * statements sent without waiting (sdb_send, libpq's pipeline mode): in
 * order, an error among them returned by the next command that waits (a
 * COMMIT after one fails and commits nothing), run at once outside a
 * transaction, and a connection lost with some in flight handled as any
 * lost inside a transaction.  And array parameters in binary
 * (sdb_bind_arr, built by store_sql_roll_pg.c's sq_arr_bind and sq_av_*):
 * bigint, double and bytea elements read back exactly through unnest
 * (extremes, -0.0, NULLs, empty and long byteas), an empty array, a
 * prepared statement run again with other values, a 100 000-element array.
 *
 * Needs the throwaway cluster (GPUFL_TEST_PG_URI_FILE, pg_cluster.sh);
 * without it the test is skipped (exit 77).
 */
#include "test.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "db.h"
#include "store_sql_writer_int.h"

static int n_up, n_down;
static char base[512]; /* the cluster's URI, no database */

static void watch(void *arg, int ev, const char *why)
{
    (void)arg;
    (void)why;
    n_up += ev == SDB_EV_UP;
    n_down += ev == SDB_EV_DOWN;
}

static int64_t one(sdb *db, const char *sql)
{
    sdb_stmt *st = NULL;
    int64_t v = -1;

    if (sdb_prepare(db, sql, &st) == 0 && sdb_step(st) == SDB_ROW)
        v = sdb_col_i64(st, 0);
    sdb_finalize(st);
    return v;
}

/* Ends pid's session from the admin connection and waits until it is
 * gone. */
static int terminate(sdb *adm, int64_t pid)
{
    char sql[160];
    struct timespec ms10 = { 0, 10000000 };

    snprintf(sql, sizeof(sql), "SELECT pg_terminate_backend(%lld)::int",
             (long long)pid);
    if (one(adm, sql) != 1)
        return -1;
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM pg_stat_activity WHERE pid=%lld",
             (long long)pid);
    for (int i = 0; i < 500; i++) {
        if (one(adm, sql) == 0)
            return 0;
        nanosleep(&ms10, NULL);
    }
    return -1;
}

static int step_i64(sdb_stmt *st, int64_t v)
{
    int rc;

    sdb_bind_i64(st, 1, v);
    rc = sdb_step(st);
    sdb_reset(st);
    return rc;
}

static void test_terminated(void)
{
    char url[600], err[256];
    sdb *adm = NULL, *db = NULL;
    sdb_stmt *ins = NULL;
    int64_t pid;

    snprintf(url, sizeof(url), "%s/postgres", base);
    REQUIRE(sdb_open(url, 0, &adm, err, sizeof(err)) == 0);
    sdb_exec(adm, "DROP DATABASE IF EXISTS gpufl_dbpg");
    REQUIRE(sdb_exec(adm, "CREATE DATABASE gpufl_dbpg") == 0);
    snprintf(url, sizeof(url), "%s/gpufl_dbpg", base);
    REQUIRE(sdb_open(url, 0, &db, err, sizeof(err)) == 0);
    sdb_set_watch(db, watch, NULL);
    sdb_set_setup(db, "CREATE TEMP TABLE tt(x BIGINT)");
    REQUIRE(sdb_exec(db, "CREATE TEMP TABLE tt(x BIGINT)") == 0);
    REQUIRE(sdb_exec(db, "CREATE TABLE t(x BIGINT)") == 0);
    REQUIRE(sdb_prepare(db, "INSERT INTO t VALUES(?)", &ins) == 0);
    CHECK(step_i64(ins, 1) == SDB_DONE);

    /* idle */
    pid = one(db, "SELECT pg_backend_pid()");
    REQUIRE(terminate(adm, pid) == 0);
    CHECK(step_i64(ins, 2) == SDB_DONE);
    CHECK_EQ_U64(n_up, 1);
    CHECK_EQ_U64(n_down, 0);
    CHECK(one(db, "SELECT pg_backend_pid()") != pid);
    CHECK(sdb_exec(db, "INSERT INTO tt VALUES(1)") == 0);

    /* inside a transaction */
    REQUIRE(sdb_begin(db) == 0);
    CHECK(step_i64(ins, 3) == SDB_DONE);
    pid = one(db, "SELECT pg_backend_pid()");
    REQUIRE(terminate(adm, pid) == 0);
    CHECK(step_i64(ins, 4) == GPUFL_EUNAVAIL);
    CHECK(sdb_exec(db, "INSERT INTO t VALUES(5)") == GPUFL_EUNAVAIL);
    CHECK(sdb_exec(db, "COMMIT") == GPUFL_EUNAVAIL);
    CHECK(sdb_exec(db, "ROLLBACK") == 0);
    CHECK_EQ_U64(n_up, 1);
    CHECK(step_i64(ins, 6) == SDB_DONE);
    CHECK_EQ_U64(n_up, 2);
    /* the autocommitted rows, nothing of the lost transaction */
    CHECK_EQ_U64(one(db, "SELECT count(*) FROM t"), 3);
    CHECK_EQ_U64(one(db, "SELECT sum(x) FROM t"), 1 + 2 + 6);
    sdb_finalize(ins);
    sdb_close(db);
    sdb_exec(adm, "DROP DATABASE gpufl_dbpg");
    sdb_close(adm);
}

/* Statements of this connection prepared on the server whose SQL has
 * "like" in it (this query's own left out). */
static int64_t prepared(sdb *db, const char *like)
{
    char sql[200];

    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM pg_prepared_statements WHERE statement"
             " LIKE '%%%s%%' AND statement NOT LIKE '%%pg_prepared%%'",
             like);
    return one(db, sql);
}

/* sql run with its one parameter bound as kind ('i' v, 't' or 'b' p of n
 * bytes): its first column, -1 if it gave no row. */
static int64_t run1(sdb *db, const char *sql, int kind, int64_t v,
                    const char *p, size_t n)
{
    sdb_stmt *st = NULL;
    int64_t r = -1;

    if (sdb_prepare(db, sql, &st) != 0)
        return -1;
    if (kind == 'i')
        sdb_bind_i64(st, 1, v);
    else if (kind == 't')
        sdb_bind_text(st, 1, p, n);
    else
        sdb_bind_blob(st, 1, p, n);
    if (sdb_step(st) == SDB_ROW)
        r = sdb_col_i64(st, 0);
    sdb_finalize(st);
    return r;
}

static void test_kept(void)
{
    char url[600], err[256], sql[96];
    sdb *db = NULL;

    snprintf(url, sizeof(url), "%s/postgres", base);
    REQUIRE(sdb_open(url, 0, &db, err, sizeof(err)) == 0);
    /* the same SQL three times: one statement on the server, each run
     * with its own value */
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_U64(run1(db, "SELECT ?::bigint + 1001", 'i', i, NULL, 0),
                     1001 + i);
        CHECK_EQ_U64(prepared(db, "+ 1001"), 1);
    }
    /* two live at once: two statements; both kept once finalized */
    {
        sdb_stmt *a = NULL, *b = NULL;
        REQUIRE(sdb_prepare(db, "SELECT ?::bigint + 1001", &a) == 0);
        REQUIRE(sdb_prepare(db, "SELECT ?::bigint + 1001", &b) == 0);
        sdb_bind_i64(a, 1, 1);
        sdb_bind_i64(b, 1, 2);
        CHECK(sdb_step(a) == SDB_ROW && sdb_step(b) == SDB_ROW);
        CHECK_EQ_U64(sdb_col_i64(a, 0), 1002);
        CHECK_EQ_U64(sdb_col_i64(b, 0), 1003);
        CHECK_EQ_U64(prepared(db, "+ 1001"), 2);
        sdb_finalize(a);
        sdb_finalize(b);
        /* the second is the same SQL and types: deallocated */
        CHECK_EQ_U64(prepared(db, "+ 1001"), 1);
    }
    /* the same SQL with a parameter of another type: a statement of its
     * own, the text one's value read as text */
    CHECK_EQ_U64(run1(db, "SELECT length(?::text) + 2002", 't', 0, "abc", 3),
                 2005);
    CHECK_EQ_U64(run1(db, "SELECT length(?::text) + 2002", 'i', 12345, NULL, 0),
                 2007);
    CHECK_EQ_U64(prepared(db, "+ 2002"), 2);
    /* kept under the types it was prepared with, not the last bound: a
     * bigint statement given a text value runs ("12" read as a bigint),
     * and a text statement of the same SQL is not given it ("abcd") */
    {
        sdb_stmt *st = NULL;
        REQUIRE(sdb_prepare(db, "SELECT length(?::text) + 5005", &st) == 0);
        sdb_bind_i64(st, 1, 12345);
        CHECK(sdb_step(st) == SDB_ROW);
        sdb_reset(st);
        sdb_bind_text(st, 1, "12", 2);
        CHECK(sdb_step(st) == SDB_ROW);
        CHECK_EQ_U64(sdb_col_i64(st, 0), 5007);
        sdb_finalize(st);
        CHECK_EQ_U64(
            run1(db, "SELECT length(?::text) + 5005", 't', 0, "abcd", 4), 5009);
    }
    /* a blob of NULs goes whole (a binary parameter) */
    CHECK_EQ_U64(
        run1(db, "SELECT length(?) + 3003", 'b', 0, "\0\1\2\x00\x7f", 5), 3008);
    /* many distinct statements: at most the cache's 64 stay */
    for (int i = 0; i < 150; i++) {
        snprintf(sql, sizeof(sql), "SELECT %d + 4004 + ?::bigint", i);
        CHECK_EQ_U64(run1(db, sql, 'i', 0, NULL, 0), 4004 + i);
    }
    CHECK(prepared(db, "+ 4004") <= 64);
    CHECK(prepared(db, "+ 4004") >= 60);
    CHECK(one(db, "SELECT count(*) FROM pg_prepared_statements") <= 64 + 1);
    sdb_close(db);
}

/* One run of "SELECT id, big, b, small FROM tb ORDER BY id" (a fresh
 * statement each time: a kept one carries its result format) checked row
 * by row; with text set, a statement with a text column instead. */
static void bin_run(sdb *db, int text)
{
    static const char blob[] = { 0, 1, 2, 0, 0x7f, (char)0xff };
    sdb_stmt *st = NULL;
    const void *b;
    size_t n = 9;

    REQUIRE(sdb_prepare(db,
                        text ? "SELECT id, b, 'x'::text FROM tb ORDER BY id"
                             : "SELECT id, big, b, small FROM tb ORDER BY id",
                        &st) == 0);
    CHECK(sdb_step(st) == SDB_ROW);
    CHECK_EQ_U64(sdb_col_i64(st, 0), 1);
    if (text) {
        CHECK_STR(sdb_col_text(st, 2), "x");
        sdb_finalize(st);
        return;
    }
    CHECK(sdb_col_i64(st, 1) == INT64_MIN);
    CHECK_STR(sdb_col_text(st, 1), "-9223372036854775808");
    b = sdb_col_blob(st, 2, &n);
    CHECK(b && n == sizeof(blob) && !memcmp(b, blob, sizeof(blob)));
    CHECK(sdb_col_i64(st, 3) == -7);
    CHECK(sdb_col_f64(st, 3) == -7.0);
    CHECK(sdb_step(st) == SDB_ROW);
    CHECK(sdb_col_i64(st, 1) == INT64_MAX);
    n = 9;
    CHECK(sdb_col_blob(st, 2, &n) != NULL && n == 0);
    CHECK(sdb_col_i64(st, 3) == INT32_MAX);
    CHECK_STR(sdb_col_text(st, 3), "2147483647");
    CHECK(sdb_step(st) == SDB_ROW);
    CHECK_EQ_U64(sdb_col_i64(st, 0), 3);
    CHECK(sdb_col_null(st, 1) && sdb_col_null(st, 2) && sdb_col_null(st, 3));
    CHECK(sdb_col_blob(st, 2, &n) == NULL && n == 0);
    CHECK(sdb_col_i64(st, 1) == 0);
    CHECK(sdb_step(st) == SDB_DONE);
    sdb_finalize(st);
}

static void test_binary(void)
{
    char url[600], err[256];
    sdb *db = NULL;
    sdb_stmt *st = NULL;
    uint64_t b0;

    snprintf(url, sizeof(url), "%s/postgres", base);
    REQUIRE(sdb_open(url, 0, &db, err, sizeof(err)) == 0);
    REQUIRE(sdb_exec(db, "CREATE TEMP TABLE tb(id bigint, big bigint,"
                         " b bytea, small int)") == 0);
    REQUIRE(sdb_prepare(db, "INSERT INTO tb VALUES(?, ?, ?, -7)", &st) == 0);
    sdb_bind_i64(st, 1, 1);
    sdb_bind_i64(st, 2, INT64_MIN);
    sdb_bind_blob(st, 3, "\0\1\2\0\x7f\xff", 6);
    CHECK(sdb_step(st) == SDB_DONE);
    sdb_finalize(st);
    REQUIRE(sdb_exec(db,
                     "INSERT INTO tb VALUES(2, 9223372036854775807,"
                     " ''::bytea, 2147483647), (3, NULL, NULL, NULL)") == 0);
    /* the first run in text, every later one in binary, reading the same */
    b0 = sdb_binary_results(db);
    bin_run(db, 0);
    CHECK_EQ_U64(sdb_binary_results(db), b0);
    for (int i = 1; i <= 3; i++) {
        bin_run(db, 0);
        CHECK_EQ_U64(sdb_binary_results(db), b0 + (uint64_t)i);
    }
    /* a text column: text every time */
    for (int i = 0; i < 3; i++)
        bin_run(db, 1);
    CHECK_EQ_U64(sdb_binary_results(db), b0 + 3);
    sdb_close(db);
}

static int send_i64(sdb_stmt *st, int64_t v)
{
    int rc;

    sdb_bind_i64(st, 1, v);
    rc = sdb_send(st);
    sdb_reset(st);
    return rc;
}

static void test_sent(void)
{
    char url[600], err[256];
    sdb *adm = NULL, *db = NULL;
    sdb_stmt *ins = NULL, *cnt = NULL, *insw = NULL;
    int64_t pid;
    int sent = 0;

    snprintf(url, sizeof(url), "%s/postgres", base);
    REQUIRE(sdb_open(url, 0, &adm, err, sizeof(err)) == 0);
    sdb_exec(adm, "DROP DATABASE IF EXISTS gpufl_dbsend");
    REQUIRE(sdb_exec(adm, "CREATE DATABASE gpufl_dbsend") == 0);
    snprintf(url, sizeof(url), "%s/gpufl_dbsend", base);
    REQUIRE(sdb_open(url, 0, &db, err, sizeof(err)) == 0);
    REQUIRE(sdb_exec(db, "CREATE TABLE u(x BIGINT PRIMARY KEY)") == 0);
    REQUIRE(sdb_exec(db, "CREATE TABLE w(y BIGINT)") == 0);
    REQUIRE(sdb_prepare(db, "INSERT INTO u VALUES(?)", &ins) == 0);
    REQUIRE(sdb_prepare(db, "INSERT INTO w VALUES(?)", &insw) == 0);
    REQUIRE(sdb_prepare(db, "SELECT count(*) FROM u", &cnt) == 0);

    /* in order; a read in the transaction sees those sent before it */
    REQUIRE(sdb_begin(db) == 0);
    for (int i = 1; i <= 100; i++)
        sent += send_i64(ins, i) == 0;
    CHECK(sdb_step(cnt) == SDB_ROW);
    CHECK_EQ_U64(sdb_col_i64(cnt, 0), 100);
    sdb_reset(cnt);
    for (int i = 101; i <= 200; i++)
        sent += send_i64(ins, i) == 0;
    CHECK_EQ_U64(sent, 200);
    CHECK(sdb_exec(db, "COMMIT") == 0);
    CHECK_EQ_U64(one(db, "SELECT sum(x) FROM u"), 200 * 201 / 2);

    /* a duplicate key among them: sent (0), its error comes with the
     * COMMIT, which commits nothing, and names the statement that failed
     * (the third of four); after the ROLLBACK all is usable */
    REQUIRE(sdb_begin(db) == 0);
    CHECK(send_i64(insw, 1) == 0); /* run once, outside the pipeline */
    CHECK(send_i64(insw, 2) == 0);
    CHECK(send_i64(ins, 201) == 0);
    CHECK(send_i64(ins, 5) == 0);
    CHECK(send_i64(insw, 3) == 0);
    CHECK(sdb_exec(db, "COMMIT") == GPUFL_EINTERNAL);
    CHECK(strstr(sdb_errmsg(db),
                 "statement 3 of 4 sent before this command"
                 " (INSERT INTO u VALUES($1)) failed: ") != NULL);
    CHECK(strstr(sdb_errmsg(db), "duplicate key") != NULL);
    printf("  the COMMIT's error: %s\n", sdb_errmsg(db));
    CHECK(sdb_exec(db, "ROLLBACK") == 0);
    CHECK_EQ_U64(one(db, "SELECT count(*) FROM u"), 200);
    CHECK_EQ_U64(one(db, "SELECT count(*) FROM w"), 0);
    /* ... or with the next step, of another statement */
    REQUIRE(sdb_begin(db) == 0);
    CHECK(send_i64(ins, 7) == 0);
    CHECK(sdb_step(cnt) == GPUFL_EINTERNAL);
    sdb_reset(cnt);
    CHECK(sdb_exec(db, "ROLLBACK") == 0);
    /* the same statements go on working */
    REQUIRE(sdb_begin(db) == 0);
    CHECK(send_i64(ins, 203) == 0);
    CHECK(sdb_exec(db, "COMMIT") == 0);
    CHECK_EQ_U64(one(db, "SELECT count(*) FROM u"), 201);

    /* outside a transaction a send waits: its own error, at once */
    CHECK(send_i64(ins, 1) == GPUFL_EINTERNAL);
    CHECK(send_i64(ins, 300) == 0);
    CHECK_EQ_U64(one(db, "SELECT count(*) FROM u WHERE x=300"), 1);

    /* the connection lost with one in flight: the transaction fails
     * until ROLLBACK, then a new connection; nothing of it stored */
    REQUIRE(sdb_begin(db) == 0);
    pid = one(db, "SELECT pg_backend_pid()");
    CHECK(send_i64(ins, 301) == 0);
    REQUIRE(terminate(adm, pid) == 0);
    (void)send_i64(ins, 302); /* the socket may take it, or not */
    CHECK(sdb_exec(db, "COMMIT") == GPUFL_EUNAVAIL);
    CHECK(sdb_exec(db, "ROLLBACK") == 0);
    CHECK(send_i64(ins, 303) == 0);
    CHECK(one(db, "SELECT pg_backend_pid()") != pid);
    CHECK_EQ_U64(one(db, "SELECT count(*) FROM u WHERE x > 300"), 1);
    sdb_finalize(ins);
    sdb_finalize(insw);
    sdb_finalize(cnt);
    sdb_close(db);
    sdb_exec(adm, "DROP DATABASE gpufl_dbsend");
    sdb_close(adm);
}

/* The elements of test_arrays' columns: row r of 5 */
static const int64_t arr_i[5] = { INT64_MIN, -1, 0, 1, INT64_MAX };
static const double arr_f[5] = { -0.0, 0.1, 1e300, -2.5, 0 };
static unsigned char arr_long[300];

typedef struct arr_ctx {
    int c, shift; /* column (0 i, 1 f, 2 b); a run's rotation of the rows */
} arr_ctx;

/* Row j of column c: NULL at (c 0, row 2), (c 1, row 4), (c 2, row 3) */
static void arr_el(gbuf *cb, void *ctx, size_t j)
{
    const arr_ctx *x = ctx;
    size_t r = (j + (size_t)x->shift) % 5;

    if ((x->c == 0 && r == 2) || (x->c == 1 && r == 4) ||
        (x->c == 2 && r == 3)) {
        sq_av_null(cb);
        return;
    }
    if (x->c == 0)
        sq_av_i64(cb, arr_i[r]);
    else if (x->c == 1)
        sq_av_f64(cb, arr_f[r]);
    else {
        /* "\\0\\1\\xff", "", 300 bytes, NULL (above), "x" */
        static const size_t len[5] = { 3, 0, sizeof(arr_long), 0, 1 };
        const unsigned char *src = r == 0   ? (const unsigned char *)"\0\1\xff"
                                   : r == 2 ? arr_long
                                            : (const unsigned char *)"x";
        memcpy(cb->p + cb->len + 4, src, len[r]);
        sq_av_bytes(cb, len[r]);
    }
}

static void arr_check(sdb *db, int shift)
{
    sdb_stmt *st = NULL;

    REQUIRE(sdb_prepare(db, "SELECT k, i, f, b FROM ta ORDER BY k", &st) == 0);
    for (int j = 0; j < 5; j++) {
        int r = (j + shift) % 5;
        size_t n = 0;
        const unsigned char *b;
        CHECK(sdb_step(st) == SDB_ROW);
        CHECK_EQ_U64(sdb_col_i64(st, 0), (uint64_t)j + 1);
        if (r == 2)
            CHECK(sdb_col_null(st, 1));
        else
            CHECK(sdb_col_i64(st, 1) == arr_i[r]);
        if (r == 4)
            CHECK(sdb_col_null(st, 2));
        else {
            double f = sdb_col_f64(st, 2);
            CHECK(!memcmp(&f, &arr_f[r], sizeof(f))); /* -0.0 too */
        }
        b = sdb_col_blob(st, 3, &n);
        if (r == 3)
            CHECK(sdb_col_null(st, 3));
        else if (r == 0)
            CHECK(b && n == 3 && !memcmp(b, "\0\1\xff", 3));
        else if (r == 1)
            CHECK(!sdb_col_null(st, 3) && n == 0);
        else if (r == 4)
            CHECK(b && n == 1 && b[0] == 'x');
        else
            CHECK(b && n == sizeof(arr_long) &&
                  !memcmp(b, arr_long, sizeof(arr_long)));
    }
    CHECK(sdb_step(st) == SDB_DONE);
    sdb_finalize(st);
}

static int arr_insert(sdb_stmt *ins, gbuf *cb, size_t n, int shift)
{
    static const int el[3] = { SDB_ARR_I64, SDB_ARR_F64, SDB_ARR_BYTEA };
    int rc = GPUFL_OK;

    for (int c = 0; c < 3 && !rc; c++)
        rc = sq_arr_bind(ins, c + 1, cb, n, el[c], sizeof(arr_long) + 8, arr_el,
                         &(arr_ctx){ c, shift });
    return rc ? rc : sdb_step(ins);
}

/* Element j of a long bigint array: j * 3 - 7 */
static void long_el(gbuf *cb, void *ctx, size_t j)
{
    (void)ctx;
    sq_av_i64(cb, (int64_t)j * 3 - 7);
}

static void test_arrays(void)
{
    char url[600], err[256];
    sdb *db = NULL;
    sdb_stmt *ins = NULL, *sum = NULL;
    gbuf cb;

    for (size_t i = 0; i < sizeof(arr_long); i++)
        arr_long[i] = (unsigned char)(i * 7 + 1);
    gbuf_init(&cb, 100000 * SQ_CB_COL);
    snprintf(url, sizeof(url), "%s/postgres", base);
    REQUIRE(sdb_open(url, 0, &db, err, sizeof(err)) == 0);
    REQUIRE(sdb_exec(db, "CREATE TEMP TABLE ta(k bigint, i bigint,"
                         " f double precision, b bytea)") == 0);
    REQUIRE(sdb_prepare(
                db,
                "INSERT INTO ta(i, f, b, k) SELECT u.* FROM unnest(?::bigint[],"
                " ?::double precision[], ?::bytea[]) WITH ORDINALITY"
                " u(i, f, b, k)",
                &ins) == 0);
    CHECK(arr_insert(ins, &cb, 5, 0) == SDB_DONE);
    arr_check(db, 0);
    /* the prepared statement again, other values; then an empty array */
    REQUIRE(sdb_exec(db, "DELETE FROM ta") == 0);
    sdb_reset(ins);
    CHECK(arr_insert(ins, &cb, 5, 2) == SDB_DONE);
    arr_check(db, 2);
    sdb_reset(ins);
    CHECK(arr_insert(ins, &cb, 0, 0) == SDB_DONE);
    CHECK_EQ_U64(one(db, "SELECT count(*) FROM ta"), 5);
    /* a bind that cannot be made fails the statement, stepped or sent,
     * instead of running it with a NULL (no rows from unnest); bound
     * again properly, it runs */
    sdb_reset(ins);
    CHECK(arr_insert(ins, &cb, 5, 1) == SDB_DONE);
    sdb_reset(ins);
    sdb_bind_arr(ins, 1, "", 0, 0, 7);
    CHECK(sdb_step(ins) == GPUFL_EINVAL);
    sdb_reset(ins);
    sdb_bind_arr(ins, 3, "", (size_t)INT32_MAX, 1, SDB_ARR_BYTEA);
    REQUIRE(sdb_exec(db, "BEGIN") == 0);
    CHECK(sdb_send(ins) == GPUFL_ETOOBIG);
    CHECK(sdb_exec(db, "ROLLBACK") == 0);
    CHECK_EQ_U64(one(db, "SELECT count(*) FROM ta"), 10);
    sdb_reset(ins);
    CHECK(arr_insert(ins, &cb, 5, 1) == SDB_DONE);
    CHECK_EQ_U64(one(db, "SELECT count(*) FROM ta"), 15);
    /* a long one, as a query's parameter */
    REQUIRE(sdb_prepare(db,
                        "SELECT count(*), sum(x), min(x), max(x) FROM"
                        " unnest(?::bigint[]) x",
                        &sum) == 0);
    CHECK(sq_arr_bind(sum, 1, &cb, 100000, SDB_ARR_I64, SQ_CB_COL, long_el,
                      NULL) == 0);
    CHECK(sdb_step(sum) == SDB_ROW);
    CHECK_EQ_U64(sdb_col_i64(sum, 0), 100000);
    /* sum of 3j - 7 over j < 100 000 */
    CHECK(sdb_col_i64(sum, 1) == 3 * (100000LL * 99999 / 2) - 7 * 100000LL);
    CHECK(sdb_col_i64(sum, 2) == -7);
    CHECK(sdb_col_i64(sum, 3) == 3 * 99999LL - 7);
    sdb_finalize(sum);
    sdb_finalize(ins);
    gbuf_release(&cb);
    sdb_close(db);
}

int main(void)
{
    const char *uf = getenv("GPUFL_TEST_PG_URI_FILE");
    FILE *f;

    if (!uf || !(f = fopen(uf, "r"))) {
        printf("skipped: GPUFL_TEST_PG_URI_FILE names no PostgreSQL cluster\n");
        return 77;
    }
    if (!fgets(base, sizeof(base), f))
        base[0] = '\0';
    fclose(f);
    base[strcspn(base, "\r\n")] = '\0';
    RUN(test_terminated);
    RUN(test_kept);
    RUN(test_binary);
    RUN(test_sent);
    RUN(test_arrays);
    TEST_DONE();
}
