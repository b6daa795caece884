/*
 * test_srv_kb_plan.c - the compactor's merge pass finds the small kernel
 * blocks through migration 26's partial index kblocks_small, on SQLite
 * and on PostgreSQL (server_pg_kb_plan), not by reading every kblocks row
 * (each row's first page holds its block's bytes): the plan of
 * SQ_KB_MERGES_SQL names the index, over a table of many full blocks and
 * a few small ones, analyzed as the server's maintenance does; and the
 * query answers what the old full scan did (two small blocks or more per
 * (session, stream), below the bound it is given).
 */
#include "test.h"

#include "store_test.h"
#include "store_sql_int.h"

#define FULL 3000

/* Every line of db's plan of "EXPLAIN [QUERY PLAN] " SQ_KB_MERGES_SQL
 * with ?1 = run, into plan. */
static int plan_of(sdb *db, int64_t run, char *plan, size_t cap)
{
    const char *q = sdb_dialect(db) == SDB_POSTGRES
                        ? "EXPLAIN " SQ_KB_MERGES_SQL
                        : "EXPLAIN QUERY PLAN " SQ_KB_MERGES_SQL;
    int col = sdb_dialect(db) == SDB_POSTGRES ? 0 : 3;
    sdb_stmt *st = NULL;
    size_t len = 0;
    int rc;

    plan[0] = '\0';
    if (sdb_prepare(db, q, &st))
        return -1;
    sdb_bind_i64(st, 1, run);
    while ((rc = sdb_step(st)) == SDB_ROW) {
        const char *t = sdb_col_text(st, col);
        int k = snprintf(plan + len, cap - len, "%s\n", t ? t : "");
        if (k < 0 || (size_t)k >= cap - len)
            break;
        len += (size_t)k;
    }
    sdb_finalize(st);
    return rc == SDB_DONE ? 0 : -1;
}

static int put(sdb_stmt *st, int64_t sess, int64_t stream, int64_t lo,
               int64_t n)
{
    static const unsigned char b[1] = { 0 };

    sdb_bind_i64(st, 1, sess);
    sdb_bind_i64(st, 2, stream);
    sdb_bind_i64(st, 3, lo);
    sdb_bind_i64(st, 4, n);
    sdb_bind_blob(st, 5, b, sizeof(b));
    if (sdb_step(st) != SDB_DONE)
        return -1;
    sdb_reset(st);
    return 0;
}

static void test_plan(void)
{
    srv_store *s = open_tmp("kb_plan");
    char url[512], err[256], plan[4096];
    sdb *db = NULL;
    sdb_stmt *st = NULL;
    int bad = 0;

    REQUIRE(s != NULL);
    tmp_url("kb_plan", url);
    REQUIRE(sdb_open(url, 0, &db, err, sizeof(err)) == 0);
    REQUIRE(sdb_begin(db) == 0);
    REQUIRE(sdb_prepare(db,
                        "INSERT INTO kblocks(sess, stream, seq_lo, seq_hi,"
                        " t_lo, t_hi, n, dur_min, dur_max, block) VALUES(?1,"
                        " ?2, ?3, ?3, 0, 0, ?4, 0, 0, ?5)",
                        &st) == 0);
    /* many full blocks (the compactor's), over 3 sessions x 2 streams */
    for (int64_t i = 0; i < FULL; i++)
        bad |= put(st, 1 + i % 3, i % 2, 100000 + i, SQ_KB_RUN);
    /* small ones (ingest's): (1, 0) has three, (2, 1) two, (3, 0) one,
     * (3, 1) two whose second is not below the bound 100 */
    bad |= put(st, 1, 0, 5, 10) | put(st, 1, 0, 9, 4095) | put(st, 1, 0, 7, 1);
    bad |= put(st, 2, 1, 3, 50) | put(st, 2, 1, 4, 60);
    bad |= put(st, 3, 0, 1, 20);
    bad |= put(st, 3, 1, 1, 20) | put(st, 3, 1, 2, 200);
    sdb_finalize(st);
    CHECK(bad == 0);
    REQUIRE(sdb_exec(db, "COMMIT") == 0);
    CHECK(sdb_exec(db, "ANALYZE") == 0);

    REQUIRE(plan_of(db, SQ_KB_RUN, plan, sizeof(plan)) == 0);
    fprintf(stderr, "  plan:\n%s", plan);
    CHECK(strstr(plan, "kblocks_small") != NULL);
    /* SQLite: no read of the table's rows (the index covers the query) */
    if (sdb_dialect(db) != SDB_POSTGRES)
        CHECK(strstr(plan, "COVERING INDEX kblocks_small") != NULL);

    /* the answer: (sess, stream, count, min(seq_lo)) below 100 */
    {
        static const int64_t want[][4] = { { 1, 0, 2, 5 }, { 2, 1, 2, 3 } };
        size_t k = 0;
        REQUIRE(sdb_prepare(db, SQ_KB_MERGES_SQL, &st) == 0);
        sdb_bind_i64(st, 1, 100);
        while (sdb_step(st) == SDB_ROW) {
            if (k < 2)
                for (int c = 0; c < 4; c++)
                    CHECK(sdb_col_i64(st, c) == want[k][c]);
            k++;
        }
        sdb_finalize(st);
        CHECK(k == 2);
        /* at the production bound (1, 0)'s 4095 counts too */
        REQUIRE(sdb_prepare(db, SQ_KB_MERGES_SQL, &st) == 0);
        sdb_bind_i64(st, 1, SQ_KB_RUN);
        CHECK(sdb_step(st) == SDB_ROW && sdb_col_i64(st, 2) == 3);
        sdb_finalize(st);
    }
    sdb_close(db);
    srv_store_close(s);
}

int main(void)
{
    RUN(test_plan);
    TEST_DONE();
}
