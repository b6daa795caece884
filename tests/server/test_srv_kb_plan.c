/*
 * test_srv_kb_plan.c - the compactor's merge pass finds the small kernel
 * blocks through migration 26's partial index kblocks_small, on SQLite
 * and on PostgreSQL (server_pg_kb_plan), not by reading every kblocks row
 * (each row's first page holds its block's bytes): the plan of
 * SQ_KB_MERGES_SQL names the index, over a table of many full blocks and
 * a few small ones, analyzed as the server's maintenance does; and the
 * query answers what the old full scan did (two small blocks or more per
 * (session, stream), below the bound it is given).  And the name sorts'
 * read of one name's packed entries (SQ_KBNP_READ_SQL_*) goes by
 * kbnpack_name, not by the primary key's sess alone (every pack of the
 * session, all names' blobs, for each name asked): on SQLite with no
 * statistics for kbnpack - a database the server has not closed since its
 * first packs - and with them; on PostgreSQL analyzed.  And SQLite's
 * maintenance gives a table filled since the server opened its statistics,
 * which the server's long-lived readers then plan with (test_stats_pass).
 */
#include "test.h"

#include "store_test.h"
#include "store_sql_int.h"
#include "store_sql_kbnpack.h"

#define FULL 3000

/* Every line of db's plan of "EXPLAIN [QUERY PLAN] " sql with ?1.. =
 * a[0..na), into plan. */
static int plan_args(sdb *db, const char *sql, const int64_t *a, int na,
                     char *plan, size_t cap)
{
    int col = sdb_dialect(db) == SDB_POSTGRES ? 0 : 3;
    sdb_stmt *st = NULL;
    char q[1024];
    size_t len = 0;
    int rc;

    plan[0] = '\0';
    snprintf(q, sizeof(q), "%s%s",
             sdb_dialect(db) == SDB_POSTGRES ? "EXPLAIN "
                                             : "EXPLAIN QUERY PLAN ",
             sql);
    if (sdb_prepare(db, q, &st))
        return -1;
    for (int i = 0; i < na; i++)
        sdb_bind_i64(st, i + 1, a[i]);
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

/* plan_args with ?1 = a1 and, if the query has it, ?2 = a2 */
static int plan_sql(sdb *db, const char *sql, int64_t a1, int64_t a2,
                    char *plan, size_t cap)
{
    const int64_t a[2] = { a1, a2 };

    return plan_args(db, sql, a, strstr(sql, "?2") ? 2 : 1, plan, cap);
}

static int plan_of(sdb *db, int64_t run, char *plan, size_t cap)
{
    return plan_sql(db, SQ_KB_MERGES_SQL, run, 0, plan, cap);
}

/* One row of st: v[0..nv) as ?1.., then the blob b as the next. */
static int put_row(sdb_stmt *st, const int64_t *v, int nv, const void *b,
                   size_t len)
{
    for (int i = 0; i < nv; i++)
        sdb_bind_i64(st, i + 1, v[i]);
    sdb_bind_blob(st, nv + 1, b, len);
    if (sdb_step(st) != SDB_DONE)
        return -1;
    sdb_reset(st);
    return 0;
}

static int put(sdb_stmt *st, int64_t sess, int64_t stream, int64_t lo,
               int64_t n)
{
    static const unsigned char b[1] = { 0 };
    const int64_t v[4] = { sess, stream, lo, n };

    return put_row(st, v, 4, b, sizeof(b));
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

/* kbnpack filled as a long session's packer leaves it: per (session,
 * stream, range) one pack per name and one directory row. */
#define NP_SESS 3
#define NP_STREAMS 4
#define NP_RANGES 20
#define NP_NAMES 60

/* kbnpack and kbndir of db filled (one transaction): 0, or -1 */
static int fill_packs(sdb *db)
{
    static const unsigned char b[64] = { 0 };
    sdb_stmt *pk = NULL, *dir = NULL;
    int bad = 0;

    if (sdb_begin(db) ||
        sdb_prepare(db,
                    "INSERT INTO kbnpack(sess, stream, r0, name_id, data)"
                    " VALUES(?1, ?2, ?3, ?4, ?5)",
                    &pk) ||
        sdb_prepare(db,
                    "INSERT INTO kbndir(sess, stream, r0, data)"
                    " VALUES(?1, ?2, ?3, ?4)",
                    &dir))
        bad = -1;
    for (int64_t se = 1; se <= NP_SESS && !bad; se++)
        for (int64_t sm = 0; sm < NP_STREAMS; sm++)
            for (int64_t r = 0; r < NP_RANGES; r++) {
                int64_t v[4] = { se, sm, r << SQ_KBNP_SHIFT, 0 };
                bad |= put_row(dir, v, 3, b, sizeof(b));
                for (v[3] = 1; v[3] <= NP_NAMES; v[3]++)
                    bad |= put_row(pk, v, 4, b, sizeof(b));
            }
    sdb_finalize(pk);
    sdb_finalize(dir);
    if (sdb_exec(db, bad ? "ROLLBACK" : "COMMIT"))
        bad = -1;
    return bad ? -1 : 0;
}

static void test_pack_read_plan(void)
{
    srv_store *s = open_tmp("kbnp_plan");
    const char *sql = NULL;
    char url[512], err[256], plan[4096];
    sdb *db = NULL;
    static const unsigned char b[64] = { 0 }; /* fill_packs' blobs */
    int64_t n = 0;

    REQUIRE(s != NULL);
    tmp_url("kbnp_plan", url);
    REQUIRE(sdb_open(url, 0, &db, err, sizeof(err)) == 0);
    sql = sdb_dialect(db) == SDB_POSTGRES ? SQ_KBNP_READ_SQL_PG
                                          : SQ_KBNP_READ_SQL_LITE;
    CHECK(fill_packs(db) == 0);

    for (int analyzed = 0; analyzed < 2; analyzed++) {
        if (sdb_dialect(db) == SDB_POSTGRES && !analyzed)
            continue; /* its maintenance analyzes every minute */
        if (analyzed)
            CHECK(sdb_exec(db, "ANALYZE") == 0);
        else { /* none, as a server leaves a database it has not closed */
            sdb_stmt *st = NULL;
            REQUIRE(sdb_prepare(db,
                                "SELECT count(*) FROM sqlite_schema WHERE"
                                " name='sqlite_stat1'",
                                &st) == 0);
            CHECK(sdb_step(st) == SDB_ROW && sdb_col_i64(st, 0) == 0);
            sdb_finalize(st);
        }
        REQUIRE(plan_sql(db, sql, 2, 7, plan, sizeof(plan)) == 0);
        fprintf(stderr, "  pack read plan (%s):\n%s",
                analyzed ? "analyzed" : "no statistics", plan);
        CHECK(strstr(plan, "kbnpack_name") != NULL);
        if (sdb_dialect(db) != SDB_POSTGRES) {
            CHECK(strstr(plan, "USING PRIMARY KEY (sess=?)") == NULL);
            /* (stream, r0) order from the index, no sort */
            CHECK(strstr(plan, "TEMP B-TREE") == NULL);
        }
    }
    /* a range's directory by its key */
    {
        sdb_stmt *st = NULL;
        plan[0] = '\0';
        REQUIRE(sdb_prepare(db,
                            sdb_dialect(db) == SDB_POSTGRES
                                ? "EXPLAIN " SQ_KBNP_DIR_SQL
                                : "EXPLAIN QUERY PLAN " SQ_KBNP_DIR_SQL,
                            &st) == 0);
        for (int i = 1; i <= 3; i++)
            sdb_bind_i64(st, i, i);
        while (sdb_step(st) == SDB_ROW) {
            const char *t =
                sdb_col_text(st, sdb_dialect(db) == SDB_POSTGRES ? 0 : 3);
            size_t l = strlen(plan);
            snprintf(plan + l, sizeof(plan) - l, "%s\n", t ? t : "");
        }
        sdb_finalize(st);
        fprintf(stderr, "  directory read plan:\n%s", plan);
        CHECK(
            strstr(plan, sdb_dialect(db) == SDB_POSTGRES
                             ? "kbndir_pkey"
                             : "PRIMARY KEY (sess=? AND stream=? AND r0=?)") !=
            NULL);
    }
    /* the answer: one name's packs of one session, in (stream, r0)
     * order */
    {
        sdb_stmt *st = NULL;
        int64_t last[2] = { -1, -1 };
        REQUIRE(sdb_prepare(db, sql, &st) == 0);
        sdb_bind_i64(st, 1, 2);
        sdb_bind_i64(st, 2, 7);
        while (sdb_step(st) == SDB_ROW) {
            size_t len = 0;
            int64_t sm = sdb_col_i64(st, 0), r0 = sdb_col_i64(st, 1);
            CHECK(sdb_col_blob(st, 2, &len) != NULL && len == sizeof(b));
            CHECK(sm > last[0] || (sm == last[0] && r0 > last[1]));
            last[0] = sm;
            last[1] = r0;
            n++;
        }
        sdb_finalize(st);
        CHECK(n == NP_STREAMS * NP_RANGES);
    }
    sdb_close(db);
    srv_store_close(s);
}

static int64_t one_int(sdb *db, const char *sql)
{
    sdb_stmt *st = NULL;
    int64_t v = -1;

    if (sdb_prepare(db, sql, &st))
        return -1;
    if (sdb_step(st) == SDB_ROW)
        v = sdb_col_i64(st, 0);
    sdb_finalize(st);
    return v;
}

/* A long-running SQLite server keeps its statistics: its maintenance's
 * pass (sq_lite_stats_pass) analyzes a table filled since the server
 * opened, and a reader connection that was open all along - the server's
 * readers live as long as it does - plans with them from its next
 * statement.  The read here is kbnpack's without the index named (as
 * every other read of the store is written): with no statistics SQLite
 * takes the primary key on sess alone, with them kbnpack_name.  Tables
 * too small to teach the planner (kbndir's 240 rows) and empty ones are
 * left; a pass with nothing new to analyze changes nothing (no schema
 * change, no re-read by every reader). */
static void test_stats_pass(void)
{
    static const char *const read =
        "SELECT stream, r0, data FROM kbnpack WHERE sess=?1 AND name_id=?2";
    srv_store *s = open_tmp("kb_stats");
    char url[512], err[256], plan[4096];
    sdb *db = NULL, *r = NULL;
    int n = -1;
    int64_t v0;

    REQUIRE(s != NULL);
    tmp_url("kb_stats", url);
    REQUIRE(sdb_open(url, 0, &db, err, sizeof(err)) == 0);
    if (sdb_dialect(db) == SDB_POSTGRES) { /* analyzes every minute */
        fprintf(stderr, "  SQLite's pass: nothing to check on PostgreSQL\n");
        sdb_close(db);
        srv_store_close(s);
        return;
    }
    /* statistics already there (their table, for the tables filled so
     * far: the store's own bookkeeping), as a database the server has
     * closed before has them: creating sqlite_stat1 would change the
     * schema and so reload every reader anyway */
    CHECK(sdb_exec(db, "ANALYZE") == 0);
    CHECK(one_int(db, "SELECT count(*) FROM sqlite_schema WHERE"
                      " name='sqlite_stat1'") == 1);
    /* a reader of the store's pool, its schema read before the fill */
    r = sq_reader_get(s);
    REQUIRE(r != NULL);
    CHECK(one_int(r, "SELECT count(*) FROM kbnpack") == 0);

    CHECK(fill_packs(db) == 0);

    CHECK(one_int(r, "SELECT count(*) FROM kbnpack") ==
          NP_SESS * NP_STREAMS * NP_RANGES * NP_NAMES);
    REQUIRE(plan_sql(r, read, 2, 7, plan, sizeof(plan)) == 0);
    fprintf(stderr, "  reader's plan before the pass:\n%s", plan);
    CHECK(strstr(plan, "USING PRIMARY KEY (sess=?)") != NULL);

    /* the pass, as the maintenance runs it (under the write lock) */
    pthread_mutex_lock(&s->wlock);
    CHECK(sq_lite_stats_pass(s, &n) == 0);
    pthread_mutex_unlock(&s->wlock);
    CHECK(n == 1);
    CHECK(one_int(db, "SELECT count(*) FROM sqlite_stat1 WHERE"
                      " tbl='kbnpack'") >= 2);
    CHECK(one_int(db, "SELECT count(*) FROM sqlite_stat1 WHERE"
                      " tbl IN ('kbndir', 'kblocks')") == 0);
    /* the reader, open all along, plans with them from its next query */
    CHECK(one_int(r, "SELECT count(*) FROM kbndir") ==
          NP_SESS * NP_STREAMS * NP_RANGES);
    REQUIRE(plan_sql(r, read, 2, 7, plan, sizeof(plan)) == 0);
    fprintf(stderr, "  reader's plan after the pass:\n%s", plan);
    CHECK(strstr(plan, "kbnpack_name") != NULL);

    /* nothing new: no table analyzed, the schema left alone */
    v0 = one_int(db, "PRAGMA schema_version");
    pthread_mutex_lock(&s->wlock);
    CHECK(sq_lite_stats_pass(s, &n) == 0);
    pthread_mutex_unlock(&s->wlock);
    CHECK(n == 0);
    CHECK(one_int(db, "PRAGMA schema_version") == v0);
    CHECK(one_int(db, "SELECT count(*) FROM sqlite_schema WHERE"
                      " name='gfl_stats_reload'") == 0);
    sq_reader_put(s, r);
    sdb_close(db);
    srv_store_close(s);
}

/* kbunnamed's rows counted by its statistics (-1: none). */
static long long stat_rows(sdb *db)
{
    sdb_stmt *st = NULL;
    long long est = -1;

    if (sdb_prepare(db,
                    "SELECT max(CAST(stat AS INTEGER)) FROM sqlite_stat1"
                    " WHERE tbl='kbunnamed'",
                    &st))
        return -2;
    if (sdb_step(st) == SDB_ROW && !sdb_col_null(st, 0))
        est = (long long)sdb_col_i64(st, 0);
    sdb_finalize(st);
    return est;
}

/* Rows [lo, hi) of kbunnamed. */
static int fill_unnamed(sdb *db, int lo, int hi)
{
    char sql[256];

    snprintf(sql, sizeof(sql),
             "WITH RECURSIVE c(i) AS (SELECT %d UNION ALL SELECT i + 1 FROM c"
             " WHERE i < %d) INSERT INTO kbunnamed SELECT i / 1000, i %% 4, i"
             " FROM c",
             lo, hi - 1);
    return sdb_exec(db, sql);
}

/* One pass as the maintenance runs it; how many tables it analyzed. */
static int pass(srv_store *s)
{
    int n = -1;

    pthread_mutex_lock(&s->wlock);
    CHECK(sq_lite_stats_pass(s, &n) == 0);
    pthread_mutex_unlock(&s->wlock);
    return n;
}

/* A fresh store name's and a connection of its own to its database,
 * analyzed as a closed server leaves it: 0, or -1 on PostgreSQL (the
 * SQLite pass has nothing to check there) or when either did not open
 * (checked); both closed then. */
static int open_lite(const char *name, srv_store **s, sdb **db)
{
    char url[512], err[256];

    *db = NULL;
    *s = open_tmp(name);
    CHECK(*s != NULL);
    if (!*s)
        return -1;
    tmp_url(name, url);
    CHECK(sdb_open(url, 0, db, err, sizeof(err)) == 0);
    if (!*db || sdb_dialect(*db) == SDB_POSTGRES) {
        fprintf(stderr, "  SQLite's pass: nothing to check on PostgreSQL\n");
        sdb_close(*db);
        srv_store_close(*s);
        return -1;
    }
    CHECK(sdb_exec(*db, "ANALYZE") == 0);
    return 0;
}

/* A table past SQ_STATS_FULL_MAX rows (1M) is analyzed from a sample of
 * each index (analysis_limit), not read whole: its statistics are there
 * after the pass, their row count SQLite's estimate from the sample (the
 * exact count is what a whole read writes), within 2x of the truth. */
static void test_stats_pass_sampled(void)
{
    enum { ROWS = 1000100 };
    srv_store *s;
    sdb *db;
    long long est;

    if (open_lite("kb_stats_big", &s, &db))
        return;
    /* kbunnamed: a store table with one key and nothing else */
    REQUIRE(fill_unnamed(db, 0, ROWS) == 0);
    CHECK(one_int(db, "SELECT count(*) FROM kbunnamed") == ROWS);
    CHECK(pass(s) == 1);
    est = stat_rows(db);
    fprintf(stderr, "  kbunnamed: %d rows, estimated %lld from the sample\n",
            ROWS, est);
    CHECK(est > ROWS / 2 && est < 2LL * ROWS);
    CHECK(est != ROWS);
    /* analyzed once: the next pass leaves it */
    CHECK(pass(s) == 0);
    sdb_close(db);
    srv_store_close(s);
}

/* A table analyzed small is analyzed again once it holds SQ_STATS_GROWTH
 * (10) times the rows its statistics count, not before: a table analyzed
 * at its first 2,000 rows is not planned as 2,000 rows for good. */
static void test_stats_pass_growth(void)
{
    srv_store *s;
    sdb *db;

    if (open_lite("kb_stats_grow", &s, &db))
        return;
    CHECK(fill_unnamed(db, 0, 2000) == 0);
    CHECK(pass(s) == 1);
    CHECK(stat_rows(db) == 2000);
    /* 9.99x: left as it is */
    CHECK(fill_unnamed(db, 2000, 19999) == 0);
    CHECK(pass(s) == 0);
    CHECK(stat_rows(db) == 2000);
    /* 10x: analyzed again, whole */
    CHECK(fill_unnamed(db, 19999, 20000) == 0);
    CHECK(pass(s) == 1);
    CHECK(stat_rows(db) == 20000);
    CHECK(pass(s) == 0);
    sdb_close(db);
    srv_store_close(s);
}

/* kbnames as the packer leaves it (PostgreSQL, 2026-12-06: two of seven
 * 20M-kernel runs): the compactor's rows of KN_BLOCKS blocks of
 * KN_STREAMS streams, KN_NAMES names each, all but one taken by the
 * packer, the table analyzed then (the maintenance's ANALYZE every
 * minute, or autovacuum), then written again into the same pages.  The
 * statistics say a row in ~500 pages: PostgreSQL planned the packer's
 * range statements and the merges' deletes by kbnames_nid (sess,
 * name_id) on sess alone - every row of the session - or, that index
 * gone, as a read of the whole table, either one costed below the
 * primary key's range.  In the maintenance's transactions (kb_begin)
 * each goes by the primary key, as on SQLite; and the name sorts' read
 * by name still finds its index (kbnames_sn, migration 37). */
#define KN_STREAMS 8
#define KN_BLOCKS 60
#define KN_NAMES 200
#define KN_SPAN 2500 /* seqs a block */

/* kbnames' rows of blocks [b0, b0 + KN_BLOCKS) of session 7's streams */
static int fill_names(sdb *db, int b0)
{
    char sql[512];

    snprintf(sql, sizeof(sql),
             "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c"
             " WHERE i < %d) INSERT INTO kbnames SELECT 7, i %% %d, (%d + i"
             " / %d %% %d) * %d, i / %d + 1, 12, 100, 200 FROM c",
             KN_STREAMS * KN_BLOCKS * KN_NAMES - 1, KN_STREAMS, b0, KN_STREAMS,
             KN_BLOCKS, KN_SPAN, KN_STREAMS * KN_BLOCKS);
    return sdb_exec(db, sql);
}

static void test_kbnames_range_plan(void)
{
    srv_store *s = open_tmp("kbn_plan");
    char url[512], err[256], plan[4096], del[128];
    const char *pk = NULL;
    sdb *db = NULL;
    /* a range of the second fill, and one block of it */
    const int64_t rng[4] = { 7, 3, (int64_t)(KN_BLOCKS + 10) * KN_SPAN,
                             (int64_t)(KN_BLOCKS + 30) * KN_SPAN };
    const struct {
        const char *what, *sql;
        int na;
    } q[] = {
        { "rows_fit's count", SQ_KBNP_ROWS_SQL, 4 },
        { "the packer's take", SQ_KBNP_TAKE_SQL, 4 },
        { "block_packed", SQ_KBNP_NAMED_SQL, 3 },
        { "the merge's delete", del, 3 },
    };
    int pg;

    REQUIRE(s != NULL);
    tmp_url("kbn_plan", url);
    REQUIRE(sdb_open(url, 0, &db, err, sizeof(err)) == 0);
    pg = sdb_dialect(db) == SDB_POSTGRES;
    pk = pg ? "kbnames_pkey" : "PRIMARY KEY (sess=? AND stream=? AND seq_lo";
    snprintf(del, sizeof(del), SQ_KB_DEL_FMT, "kbnames", "");
    CHECK(fill_names(db, 0) == 0);
    CHECK(sdb_exec(db, "DELETE FROM kbnames WHERE stream < 7 OR name_id < 200"
                       " OR seq_lo < 59 * 2500") == 0);
    CHECK(one_int(db, "SELECT count(*) FROM kbnames") == 1);
    CHECK(sdb_exec(db, "ANALYZE kbnames") == 0);
    CHECK(fill_names(db, KN_BLOCKS) == 0);
    CHECK(one_int(db, "SELECT count(*) FROM kbnames") ==
          1 + KN_STREAMS * KN_BLOCKS * KN_NAMES);
    /* what a connection without the maintenance's setting plans (shown,
     * not checked: it is the planner's choice) */
    if (plan_args(db, SQ_KBNP_ROWS_SQL, rng, 4, plan, sizeof(plan)) == 0)
        fprintf(stderr, "  count, outside the maintenance:\n%s", plan);

    pthread_mutex_lock(&s->wlock);
    REQUIRE(sq_kb_tx_begin(s) == 0);
    for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
        int64_t a[4] = { rng[0], rng[1], rng[2], rng[3] };
        if (q[i].na == 3)
            a[2] = (int64_t)(KN_BLOCKS + 20) * KN_SPAN;
        CHECK(plan_args(s->w, q[i].sql, a, q[i].na, plan, sizeof(plan)) == 0);
        fprintf(stderr, "  %s:\n%s", q[i].what, plan);
        CHECK(strstr(plan, pk) != NULL);
        CHECK(strstr(plan, "kbnames_nid") == NULL);
        CHECK(strstr(plan, "kbnames_sn") == NULL);
        CHECK(strstr(plan, pg ? "Seq Scan on kbnames" : "SCAN kbnames") ==
              NULL);
    }
    /* and the answers, in the same transaction */
    {
        sdb_stmt *st = NULL;
        int64_t n = 0;
        REQUIRE(sdb_prepare(s->w, SQ_KBNP_ROWS_SQL, &st) == 0);
        for (int i = 0; i < 4; i++)
            sdb_bind_i64(st, i + 1, rng[i]);
        CHECK(sdb_step(st) == SDB_ROW);
        CHECK(sdb_col_i64(st, 0) == 20 * KN_NAMES);
        sdb_finalize(st);
        REQUIRE(sdb_prepare(s->w, SQ_KBNP_TAKE_SQL, &st) == 0);
        for (int i = 0; i < 4; i++)
            sdb_bind_i64(st, i + 1, rng[i]);
        while (sdb_step(st) == SDB_ROW) {
            int64_t lo = sdb_col_i64(st, 1);
            CHECK(lo >= rng[2] && lo < rng[3]);
            n++;
        }
        sdb_finalize(st);
        CHECK(n == 20 * KN_NAMES);
    }
    CHECK(sq_kb_tx_end(s, GPUFL_EINTERNAL) == GPUFL_EINTERNAL); /* undone */
    pthread_mutex_unlock(&s->wlock);
    CHECK(one_int(db, "SELECT count(*) FROM kbnames") ==
          1 + KN_STREAMS * KN_BLOCKS * KN_NAMES);

    /* the name sorts' read of one name goes by kbnames_sn */
    for (int desc = 0; desc < 2; desc++) {
        const int64_t a[6] = { 7, 0, INT64_MAX, 5, desc ? INT64_MAX : -1, 128 };
        CHECK(plan_args(db, sq_kb_nord_sql(desc, 0), a, 6, plan,
                        sizeof(plan)) == 0);
        fprintf(stderr, "  one name's chunk (%s):\n%s",
                desc ? "longest first" : "shortest first", plan);
        CHECK(strstr(plan, "kbnames_sn") != NULL);
    }
    sdb_close(db);
    srv_store_close(s);
}

int main(void)
{
    RUN(test_plan);
    RUN(test_pack_read_plan);
    RUN(test_kbnames_range_plan);
    RUN(test_stats_pass);
    RUN(test_stats_pass_sampled);
    RUN(test_stats_pass_growth);
    TEST_DONE();
}
