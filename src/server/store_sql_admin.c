/*
 * store_sql_admin.c - the store's maintenance: database size and health,
 * stale sessions, SQLite's planner statistics, retention (whole sessions
 * from every table, and memory profiles with their stacks), the keep flag
 * and API keys.
 *
 * Memory profiles have their own lifetime: a long-running process keeps
 * its session alive while it posts a profile every interval, so they are
 * pruned by their end time (memprof_max_age_s), whatever their session.
 * A profile of a kept session is kept; one linked to a pruned
 * session is unlinked (sess NULL, its sid text stays) and lives on by its
 * own age.  Size pruning takes whichever is oldest, a session (by its last
 * line received) or a profile (by its end).
 */
#include "store_sql_int.h"

#include "common/log.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Profiles deleted per transaction by age: the write lock is held that
 * long and ingest waits behind it (a profile may hold thousands of stacks).
 * By size one at a time, as sessions: the size is checked after each, so
 * no more is removed than needed. */
#define MEMPROF_PRUNE_BATCH 64
#define MEMPROF_PRUNE_BATCH_DB 1

/* Tables holding per-session rows, for retention. */
static const char *const sess_tables[] = {
    "lines", "dicts", "kernels", "ops", "scopes", "sass", "stalls", "samples",
    "kagg", "tl", "tlpack", "kscope", "kext", "srl", "seqr", "klong", "kblocks",
    "kbnames", "kbnpack", "kbndir", "kbunnamed", "kcount", "kxrow", "kbspan",
    "capi", "capipack", "capi_long", "oblocks", "obspan",
    /* idle verdicts */
    "verdicts", "fleet",
    /* GPU waste (after the rollup
                                            * gave its share back) */
    "waste", "vruns",
    /* what its scan found */
    "regressions"
};

/* ---- maintenance, retention, keys ---- */

uint64_t srv_store_db_bytes(srv_store *s)
{
    sdb *db = sq_reader_get(s);
    sdb_stmt *st = NULL;
    uint64_t v = 0;

    /* SQLite: pages in use (freed pages are reused before the file
     * grows); PostgreSQL: the database's size on disk */
    if (sdb_prepare(db,
                    sdb_dialect(db) == SDB_POSTGRES
                        ? "SELECT pg_database_size(current_database()), 1"
                        : "SELECT (SELECT page_count FROM pragma_page_count)"
                          " - (SELECT freelist_count FROM"
                          " pragma_freelist_count), (SELECT page_size FROM"
                          " pragma_page_size)",
                    &st) == 0 &&
        sdb_step(st) == SDB_ROW)
        v = (uint64_t)qcol_i64(st, 0) * (uint64_t)qcol_i64(st, 1);
    sdb_finalize(st);
    sq_reader_put(s, db);
    return v;
}

int srv_store_set_sqlite_wcache(srv_store *s, uint64_t bytes)
{
    sdb_stmt *st = NULL;
    char sql[64];
    int rc = GPUFL_OK;

    if (sdb_dialect(s->w) != SDB_SQLITE)
        return GPUFL_OK;
    /* a negative cache_size is KiB, whatever the page size; config.c
     * bounds bytes to 64 GiB, well inside SQLite's int */
    snprintf(sql, sizeof(sql), "PRAGMA cache_size=-%llu",
             (unsigned long long)(bytes >> 10));
    pthread_mutex_lock(&s->wlock);
    /* read back, so /metrics says what SQLite holds, not what was asked */
    if ((rc = sdb_exec(s->w, sql)) == 0 &&
        (rc = sdb_prepare(s->w,
                          "SELECT (SELECT cache_size FROM pragma_cache_size),"
                          " (SELECT page_size FROM pragma_page_size)",
                          &st)) == 0) {
        if (sdb_step(st) == SDB_ROW) {
            int64_t v = qcol_i64(st, 0);
            s->sqlite_wcache = v < 0 ? (uint64_t)-v * 1024
                                     : (uint64_t)v * (uint64_t)qcol_i64(st, 1);
        } else
            rc = GPUFL_EINTERNAL;
    }
    sdb_finalize(st);
    pthread_mutex_unlock(&s->wlock);
    return rc;
}

uint64_t srv_store_sqlite_wcache(srv_store *s)
{
    uint64_t v;

    pthread_mutex_lock(&s->wlock);
    v = s->sqlite_wcache;
    pthread_mutex_unlock(&s->wlock);
    return v;
}

/* SQLite's statistics for tables first filled after the server opened.
 * The server analyzes at close (PRAGMA optimize), and SQLite 3.40's
 * optimize looks only at tables its own connection queried: a long-running
 * server's readers plan every table filled since it opened with no
 * statistics at all (a name sort's packs were read by the wrong key that
 * way: store_sql_kbnpack.h).  So every SQ_STATS_EVERY_S the writer
 * analyzes each table that has no sqlite_stat1 row yet and holds
 * SQ_STATS_MIN_ROWS rows or more (fewer would teach the planner a table is
 * tiny for good), and again each table whose statistics count fewer than
 * SQ_STATS_FULL_MAX / SQ_STATS_GROWTH rows once it holds SQ_STATS_GROWTH
 * times as many (a table first analyzed at 1,000 rows is planned as 1,000
 * rows no more once it holds 10,000, 100,000, ...): whole up to
 * SQ_STATS_FULL_MAX rows (1M kernels' tables: 0.2-6 ms each), beyond by a
 * sample of about SQ_STATS_SAMPLE rows an index (analysis_limit; a sample
 * of 1,000 was tried: it put ~1,000 rows behind every prefix, 57,192 for
 * one session's timeline when whole).  Under the write lock; the probe
 * that counts a candidate's rows stops at the count that decides (a table
 * not grown costs a read of under SQ_STATS_GROWTH times its statistics'
 * rows, at most SQ_STATS_FULL_MAX).  Another connection does
 * not reload statistics when they change - only when the schema does - so
 * the pass then creates and drops a table: each reader re-reads schema and
 * statistics before its next statement, and its prepared statements
 * re-prepare themselves.  Tables whose statistics count SQ_STATS_FULL_MAX /
 * SQ_STATS_GROWTH rows or more keep them (PRAGMA optimize at close
 * refreshes those the writer used that grew). */
#define SQ_STATS_EVERY_S 600
#define SQ_STATS_MIN_ROWS 1000
#define SQ_STATS_FULL_MAX 1000000
#define SQ_STATS_SAMPLE 100000
#define SQ_STATS_GROWTH 10
#define SQ_STATS_TABLES 128

/* Rows of table t counted up to lim: the probe stops there. */
static uint64_t rows_upto(srv_store *s, const char *t, uint64_t lim)
{
    char sql[160];

    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM (SELECT 1 FROM \"%.63s\" LIMIT %llu)", t,
             (unsigned long long)lim);
    return sq_one(s->w, sql);
}

int sq_lite_stats_pass(srv_store *s, int *analyzed)
{
    /* each table and the rows its statistics count (NULL: none; a
     * partial index counts fewer, so the largest) */
    static const char *const cand_sql =
        "SELECT m.name, %s FROM sqlite_schema m WHERE m.type='table' AND"
        " m.name NOT LIKE 'sqlite%%' AND m.sql NOT LIKE 'CREATE VIRTUAL%%'"
        " ORDER BY m.name";
    char names[SQ_STATS_TABLES][64], sql[384];
    int64_t est[SQ_STATS_TABLES];
    sdb_stmt *st = NULL;
    int have_stat1, n = 0, rc;

    *analyzed = 0;
    have_stat1 = sq_one(s->w, "SELECT count(*) FROM sqlite_schema WHERE"
                              " name='sqlite_stat1'") > 0;
    snprintf(sql, sizeof(sql), cand_sql,
             have_stat1 ? "(SELECT max(CAST(stat AS INTEGER)) FROM"
                          " sqlite_stat1 WHERE tbl=m.name)"
                        : "NULL");
    if ((rc = sdb_prepare(s->w, sql, &st)) != 0)
        return rc;
    while (n < SQ_STATS_TABLES && (rc = sdb_step(st)) == SDB_ROW) {
        const char *t = sdb_col_text(st, 0);
        int64_t e = sdb_col_null(st, 1) ? -1 : qcol_i64(st, 1);
        /* the server's own names: nothing to quote; statistics of a
         * table this large are kept */
        if (t && strlen(t) < sizeof(names[0]) && !strchr(t, '"') &&
            e < SQ_STATS_FULL_MAX / SQ_STATS_GROWTH) {
            snprintf(names[n], sizeof(names[0]), "%s", t);
            est[n++] = e;
        }
    }
    sdb_finalize(st);
    if (rc != SDB_ROW && rc != SDB_DONE)
        return sq_err(rc);
    rc = GPUFL_OK;
    for (int i = 0; i < n; i++) {
        uint64_t rows, need = SQ_STATS_MIN_ROWS;
        if (est[i] >= 0 && (uint64_t)est[i] * SQ_STATS_GROWTH > need)
            need = (uint64_t)est[i] * SQ_STATS_GROWTH;
        /* no statistics: the count decides whole or sampled at once */
        rows =
            rows_upto(s, names[i], est[i] < 0 ? SQ_STATS_FULL_MAX + 1 : need);
        if (rows < need)
            continue;
        if (est[i] >= 0) /* grown: whole or sampled */
            rows = rows_upto(s, names[i], SQ_STATS_FULL_MAX + 1);
        snprintf(sql, sizeof(sql),
                 "PRAGMA analysis_limit=%d; ANALYZE \"%.63s\";"
                 " PRAGMA analysis_limit=0",
                 rows > SQ_STATS_FULL_MAX ? SQ_STATS_SAMPLE : 0, names[i]);
        if ((rc = sdb_exec(s->w, sql)) != 0) {
            sdb_exec(s->w, "PRAGMA analysis_limit=0");
            break;
        }
        (*analyzed)++;
        s->stats_reload = 1;
    }
    /* the tables analyzed are no candidates any more: the readers' reload
     * is owed until it happens, whatever failed since */
    if (s->stats_reload) {
        int rr;
        /* one transaction: no other connection sees the table; a failure
         * (say, a statement of this connection still open) leaves none
         * open */
        if ((rr = sdb_exec(s->w, "BEGIN")) != 0)
            return rc ? rc : rr;
        if ((rr = sdb_exec(s->w, "CREATE TABLE gfl_stats_reload(x)")) != 0 ||
            (rr = sdb_exec(s->w, "DROP TABLE gfl_stats_reload")) != 0 ||
            (rr = sdb_exec(s->w, "COMMIT")) != 0) {
            sdb_exec(s->w, "ROLLBACK");
            return rc ? rc : rr;
        }
        s->stats_reload = 0;
    }
    return rc;
}

int srv_store_mark_stale(srv_store *s, uint64_t stale_s, uint64_t heard_since)
{
    long long now = (long long)time(NULL);
    char sql[160];
    int rc = GPUFL_OK;

    /* silent for stale_s of the time the server could hear: before
     * heard_since + stale_s no session can have been (a line sent while
     * the server or its database was down is still to come) */
    snprintf(sql, sizeof(sql),
             "UPDATE sessions SET state='stale' WHERE state='running' AND"
             " last_seen < %lld",
             now - (long long)stale_s);
    pthread_mutex_lock(&s->health.lock);
    if (s->health.up_wall > heard_since)
        heard_since = s->health.up_wall; /* the database was back then */
    if (s->health.down)
        heard_since = (uint64_t)now; /* and is away now: nobody is heard */
    pthread_mutex_unlock(&s->health.lock);
    pthread_mutex_lock(&s->wlock);
    if ((long long)heard_since + (long long)stale_s <= now)
        rc = sdb_exec(s->w, sql);
    /* fresh statistics for the planner: autovacuum lags behind bulk
     * ingest (SQLite's planner does without) */
    if (!rc && sdb_dialect(s->w) == SDB_POSTGRES &&
        time(NULL) - s->analyzed >= 60) {
        s->analyzed = time(NULL);
        sdb_exec(s->w, "ANALYZE");
    } else if (!rc && sdb_dialect(s->w) != SDB_POSTGRES &&
               time(NULL) - s->analyzed >= SQ_STATS_EVERY_S) {
        struct timespec t0, t1;
        int n = 0;
        s->analyzed = time(NULL);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (sq_lite_stats_pass(s, &n) != 0)
            glog_warn("store", "statistics pass: %s", sdb_errmsg(s->w));
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (n)
            glog_debug(
                "store",
                "statistics for %d newly filled or grown table(s) in %.1f ms",
                n,
                (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
                    (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    }
    pthread_mutex_unlock(&s->wlock);
    return rc;
}

static int delete_session(srv_store *s, int64_t id)
{
    char sql[96];
    int rc;

    /* the hourly waste rollup holds no session: its lines leave it */
    if ((rc = sq_waste_unroll(s, id)) != 0)
        return rc;
    for (size_t i = 0; i < sizeof(sess_tables) / sizeof(sess_tables[0]); i++) {
        snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE sess=%lld",
                 sess_tables[i], (long long)id);
        if ((rc = sdb_exec(s->w, sql)) != 0)
            return rc;
    }
    /* its memory profiles and OOM reports outlive it, unlinked: the id
     * may be reused */
    snprintf(sql, sizeof(sql), "UPDATE memprofs SET sess=NULL WHERE sess=%lld",
             (long long)id);
    if ((rc = sdb_exec(s->w, sql)) != 0)
        return rc;
    snprintf(sql, sizeof(sql), "UPDATE memooms SET sess=NULL WHERE sess=%lld",
             (long long)id);
    if ((rc = sdb_exec(s->w, sql)) != 0)
        return rc;
    snprintf(sql, sizeof(sql), "DELETE FROM sessions WHERE id=%lld",
             (long long)id);
    /* its kext heaps and seq range hints go too (the id may come back
     * for another session) */
    sq_ext_reset(s);
    sq_gaps_reset(s);
    return sdb_exec(s->w, sql);
}

/* The oldest prunable session (by last line received, Unix s): its id and
 * *seen, or 0 if none. */
static int64_t oldest(srv_store *s, int64_t before, int64_t *seen)
{
    sdb_stmt *st = NULL;
    int64_t id = 0;

    if (sdb_prepare(s->w,
                    "SELECT id, coalesce(last_seen, 0) FROM sessions WHERE"
                    " keep=0 AND coalesce(last_seen, 0) < ? ORDER BY"
                    " last_seen, id LIMIT 1",
                    &st) == 0) {
        qbind_i64(st, 1, before);
        if (sdb_step(st) == SDB_ROW) {
            id = qcol_i64(st, 0);
            if (seen)
                *seen = qcol_i64(st, 1);
        }
    }
    sdb_finalize(st);
    return id;
}

/* The memory profiles retention may remove that ended before ?1 (ns),
 * oldest first: those of no kept session, by link or by sid (a profile
 * posted before its session's first line carries only the sid). */
#define MP_PRUNABLE                                                            \
    "SELECT p.id FROM memprofs p WHERE p.end_ns < ?1 AND NOT EXISTS"           \
    " (SELECT 1 FROM sessions k WHERE k.id=p.sess AND k.keep<>0) AND NOT"      \
    " EXISTS (SELECT 1 FROM sessions k WHERE k.sid=p.sid AND k.keep<>0)"       \
    " ORDER BY p.end_ns, p.id LIMIT ?2"

/* The end (ns) of the oldest prunable profile, or -1 if none. */
static int64_t oldest_memprof(srv_store *s)
{
    sdb_stmt *st = NULL;
    int64_t end = -1;

    if (sdb_prepare(s->w,
                    "SELECT q.end_ns FROM memprofs q WHERE q.id IN"
                    " (" MP_PRUNABLE ")",
                    &st) == 0) {
        qbind_i64(st, 1, INT64_MAX);
        qbind_i64(st, 2, 1);
        if (sdb_step(st) == SDB_ROW)
            end = qcol_i64(st, 0);
    }
    sdb_finalize(st);
    return end;
}

/* Deletes up to max prunable profiles that ended before end_ns, stacks
 * first, in one transaction; *n of them.  Both statements select the
 * same rows: the writer lock is held and the order is total. */
static int delete_memprofs(srv_store *s, int64_t before_ns, int64_t max,
                           uint64_t *n)
{
    static const char *const sql[] = {
        "DELETE FROM memsamples WHERE prof IN (" MP_PRUNABLE ")",
        "DELETE FROM memprofs WHERE id IN (" MP_PRUNABLE ")",
    };
    sdb_stmt *st = NULL;
    int rc = sdb_begin(s->w);

    *n = 0;
    for (size_t i = 0; !rc && i < 2; i++) {
        if ((rc = sdb_prepare(s->w, sql[i], &st)) != 0)
            break;
        qbind_i64(st, 1, before_ns);
        qbind_i64(st, 2, max);
        rc = sdb_err(sdb_step(st));
        if (!rc && i == 1)
            *n = (uint64_t)sdb_changes(s->w);
        sdb_finalize(st);
        st = NULL;
    }
    if (rc) {
        sdb_exec(s->w, "ROLLBACK");
        *n = 0;
        return rc;
    }
    return sdb_exec(s->w, "COMMIT");
}

/* OOM reports of before_ns (by their ts) and of no kept session, as
 * memory profiles; *n of them. */
static int delete_memooms(srv_store *s, int64_t before_ns, uint64_t *n)
{
    sdb_stmt *st = NULL;
    int rc;

    *n = 0;
    if (sdb_prepare(s->w,
                    "DELETE FROM memooms WHERE ts < ?1 AND NOT EXISTS"
                    " (SELECT 1 FROM sessions k WHERE k.id=memooms.sess AND"
                    " k.keep<>0) AND NOT EXISTS (SELECT 1 FROM sessions k"
                    " WHERE k.sid=memooms.sid AND k.keep<>0)",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, before_ns);
    rc = sdb_err(sdb_step(st));
    if (!rc)
        *n = (uint64_t)sdb_changes(s->w);
    sdb_finalize(st);
    return rc;
}

static int delete_session_tx(srv_store *s, int64_t id)
{
    int rc = sdb_begin(s->w);
    if (!rc)
        rc = delete_session(s, id);
    return rc ? (sdb_exec(s->w, "ROLLBACK"), rc) : sdb_exec(s->w, "COMMIT");
}

/* ns cutoff for "older than age_s", clamped at 0 */
static int64_t cutoff_ns(int64_t now, uint64_t age_s)
{
    if (age_s >= (uint64_t)now)
        return 0;
    return (now - (int64_t)age_s) * 1000000000LL;
}

int srv_store_prune(srv_store *s, const srv_retention *p, uint64_t *n_pruned)
{
    int64_t now = (int64_t)time(NULL), id, seen = 0, mend;
    uint64_t mage = p->memprof_max_age_s ? p->memprof_max_age_s : p->max_age_s;
    uint64_t n_mem = 0, k;
    int rc = GPUFL_OK;

    *n_pruned = 0;
    pthread_mutex_lock(&s->wlock);
    if (p->max_age_s) {
        while (!rc && (id = oldest(s, now - (int64_t)p->max_age_s, NULL))) {
            rc = delete_session_tx(s, id);
            *n_pruned += !rc;
        }
    }
    pthread_mutex_unlock(&s->wlock);
    /* one batch per lock hold, so ingest gets in between */
    for (k = mage ? MEMPROF_PRUNE_BATCH : 0; !rc && k == MEMPROF_PRUNE_BATCH;) {
        pthread_mutex_lock(&s->wlock);
        rc = delete_memprofs(s, cutoff_ns(now, mage), MEMPROF_PRUNE_BATCH, &k);
        pthread_mutex_unlock(&s->wlock);
        n_mem += k;
    }
    if (!rc && mage) {
        pthread_mutex_lock(&s->wlock);
        rc = delete_memooms(s, cutoff_ns(now, mage), &k);
        pthread_mutex_unlock(&s->wlock);
        n_mem += k;
    }
    while (!rc && p->max_db_bytes && srv_store_db_bytes(s) > p->max_db_bytes) {
        pthread_mutex_lock(&s->wlock);
        id = oldest(s, INT64_MAX, &seen);
        mend = oldest_memprof(s);
        k = 0;
        if (mend >= 0 && (!id || mend / 1000000000LL <= seen)) {
            /* the profiles no newer than the oldest session, one by one */
            rc = delete_memprofs(s,
                                 id && seen < INT64_MAX / 1000000000LL - 1
                                     ? (seen + 1) * 1000000000LL
                                     : INT64_MAX,
                                 MEMPROF_PRUNE_BATCH_DB, &k);
            n_mem += k;
        } else if (id) {
            rc = delete_session_tx(s, id);
            *n_pruned += !rc;
            k = !rc;
        }
        pthread_mutex_unlock(&s->wlock);
        if (!k)
            break; /* nothing left to prune, or no progress */
    }
    pthread_mutex_lock(&s->wlock);
    if ((*n_pruned || n_mem) && sdb_dialect(s->w) == SDB_SQLITE)
        sdb_exec(s->w, "PRAGMA incremental_vacuum");
    if (*n_pruned) {
        rl_map_clear(&s->sess_cache);
        rl_map_clear(&s->launch_cache);
    }
    pthread_mutex_unlock(&s->wlock);
    if (p->n_memprofs)
        *p->n_memprofs = n_mem;
    return rc;
}

static int simple_update(srv_store *s, const char *sql, const char *text,
                         int64_t v, int *changed)
{
    sdb_stmt *st = NULL;
    int rc;

    pthread_mutex_lock(&s->wlock);
    rc = sdb_prepare(s->w, sql, &st);
    if (rc == 0) {
        qbind_i64(st, 1, v);
        if (text)
            qbind_text(st, 2, text);
        rc = sdb_step(st);
        *changed = sdb_changes(s->w);
    }
    sdb_finalize(st);
    pthread_mutex_unlock(&s->wlock);
    return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

int srv_store_set_keep(srv_store *s, const char *sid, int keep)
{
    int changed = 0;
    int rc = simple_update(s, "UPDATE sessions SET keep=?1 WHERE sid=?2", sid,
                           keep, &changed);
    return rc ? rc : changed ? GPUFL_OK : GPUFL_ENOTFOUND;
}

int srv_store_key_add(srv_store *s, const char *name, const char *role,
                      const char *prefix, const char *hash, const char *hosts,
                      int64_t *id)
{
    sdb_stmt *st = NULL;
    int rc;

    pthread_mutex_lock(&s->wlock);
    rc = sdb_prepare(s->w,
                     "INSERT INTO keys(name, role, prefix, hash,"
                     " created, hosts) VALUES(?,?,?,?,?,?) RETURNING id",
                     &st);
    if (rc == 0) {
        qbind_text(st, 1, name);
        qbind_text(st, 2, role);
        qbind_text(st, 3, prefix);
        qbind_text(st, 4, hash);
        qbind_i64(st, 5, (int64_t)time(NULL));
        /* "" and NULL both mean any host: stored as SQL NULL */
        qbind_text(st, 6, hosts && hosts[0] ? hosts : NULL);
        rc = sdb_step(st);
        if (rc == SDB_ROW)
            *id = qcol_i64(st, 0);
    }
    sdb_finalize(st);
    pthread_mutex_unlock(&s->wlock);
    return rc == SDB_ROW ? GPUFL_OK : rc == SDB_DONE ? GPUFL_EINTERNAL : rc;
}

static void col_text(sdb_stmt *st, int i, char *out, size_t cap)
{
    snprintf(out, cap, "%s", qcol_text(st, i));
}

int srv_store_key_list(srv_store *s, int64_t after, srv_key *out, size_t cap,
                       size_t *n)
{
    sdb *db = sq_reader_get(s);
    sdb_stmt *st = NULL;
    int rc;

    *n = 0;
    rc = sdb_prepare(db,
                     "SELECT id, name, role, prefix, created,"
                     " last_used, revoked, hosts FROM keys WHERE id > ?"
                     " ORDER BY id LIMIT ?",
                     &st);
    if (rc == 0) {
        qbind_i64(st, 1, after);
        qbind_i64(st, 2, (int64_t)cap);
    }
    while (rc == 0 && (rc = sdb_step(st)) == SDB_ROW && *n < cap) {
        srv_key *k = &out[(*n)++];
        k->id = qcol_i64(st, 0);
        col_text(st, 1, k->name, sizeof(k->name));
        col_text(st, 2, k->role, sizeof(k->role));
        col_text(st, 3, k->prefix, sizeof(k->prefix));
        k->created = qcol_i64(st, 4);
        k->last_used = qcol_i64(st, 5);
        k->revoked = qcol_i64(st, 6);
        col_text(st, 7, k->hosts, sizeof(k->hosts));
        rc = 0;
    }
    sdb_finalize(st);
    sq_reader_put(s, db);
    return rc == SDB_DONE || rc == SDB_ROW || rc == 0 ? GPUFL_OK : sq_err(rc);
}

int srv_store_key_revoke(srv_store *s, int64_t id)
{
    char sql[128];
    int changed = 0, rc;

    snprintf(sql, sizeof(sql),
             "UPDATE keys SET revoked=%lld WHERE id=?1 AND revoked IS NULL",
             (long long)time(NULL));
    rc = simple_update(s, sql, NULL, id, &changed);
    return rc ? rc : changed ? GPUFL_OK : GPUFL_ENOTFOUND;
}

int srv_store_key_lookup(srv_store *s, const char *hash, char *role, size_t cap,
                         char *hosts, size_t hosts_cap)
{
    sdb *db = sq_reader_get(s);
    sdb_stmt *st = NULL;
    int64_t id = 0, last = 0, now = (int64_t)time(NULL);
    int rc, changed;

    role[0] = '\0';
    if (hosts_cap)
        hosts[0] = '\0';
    rc = sdb_prepare(db,
                     "SELECT id, role, coalesce(last_used, 0), hosts FROM keys"
                     " WHERE hash=? AND revoked IS NULL",
                     &st);
    if (rc == 0) {
        qbind_text(st, 1, hash);
        rc = sdb_step(st);
        if (rc == SDB_ROW) {
            id = qcol_i64(st, 0);
            col_text(st, 1, role, cap);
            last = qcol_i64(st, 2);
            if (hosts_cap)
                col_text(st, 3, hosts, hosts_cap);
        }
    }
    sdb_finalize(st);
    sq_reader_put(s, db);
    if (rc != SDB_ROW && rc != SDB_DONE)
        return sq_err(rc);
    /* last-used to the minute: a write per request would serialise reads
     * behind the ingest lock */
    if (id && now - last >= 60) {
        char sql[96];
        snprintf(sql, sizeof(sql), "UPDATE keys SET last_used=%lld WHERE id=?1",
                 (long long)now);
        simple_update(s, sql, NULL, id, &changed);
    }
    return GPUFL_OK;
}
