/*
 * db_sqlite.c - db.h on SQLite: a direct mapping onto sqlite3_* calls.
 *
 * Connections are opened NOMUTEX (each is used by one thread at a time,
 * the store guarantees it) with a busy timeout, so a reader that meets a
 * checkpoint waits instead of failing.
 */
#include "db_int.h"
#include "db_sqlite_walbuf.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sdb {
    sdb_head head;
    sqlite3 *h;
    sdb_wal_fn wal_fn; /* sdb_wal_hook */
    void *wal_arg;
};

struct sdb_stmt {
    sdb *db; /* first, as db_int.h requires */
    sqlite3_stmt *h;
};

int sdb_sqlite_open(const char *path, int readonly, sdb **out, char *err,
                    size_t cap);

extern const sdb_ops sdb_sqlite_ops;

/* Before the first connection: no memory statistics, which SQLite keeps
 * under a global mutex taken at every allocation (a few % of ingest); and
 * the VFS that writes a transaction's WAL frames in a few calls instead
 * of two a frame (db_sqlite_walbuf.c), unless GPUFL_SERVER_WALBUF=0
 * (benchmarks: the same run without it). */
static pthread_once_t g_cfg_once = PTHREAD_ONCE_INIT;
static const char *g_vfs; /* NULL: SQLite's default */

static void cfg_once(void)
{
    const char *v = getenv("GPUFL_SERVER_WALBUF");

    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    if ((!v || strcmp(v, "0")) && sdb_walbuf_register() == SQLITE_OK)
        g_vfs = SDB_WALBUF_VFS;
}

static int map(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_OK: return GPUFL_OK;
    case SQLITE_ROW: return SDB_ROW;
    case SQLITE_DONE: return SDB_DONE;
    case SQLITE_NOMEM: return GPUFL_ENOMEM;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return GPUFL_EUNAVAIL;
    default: return GPUFL_EINTERNAL;
    }
}

/* rc (an sqlite3 result) mapped; a write that failed for disk space is
 * reported to the watcher (SQLite says SQLITE_FULL, or an I/O error whose
 * errno is ENOSPC). */
static int chk(sdb *db, int rc)
{
    int e = rc & 0xff;

    if (e == SQLITE_FULL ||
        (e == SQLITE_IOERR && sqlite3_system_errno(db->h) == ENOSPC)) {
        char why[256];
        snprintf(why, sizeof(why), "%s", sqlite3_errmsg(db->h));
        sdb_notify(db, SDB_EV_NOSPC, why);
    }
    return map(rc);
}

/* sat_sum(x): sum() of integers saturated at 2^63 - 1 (and -2^63), where
 * SQLite's sum() fails with "integer overflow"; PostgreSQL spells it
 * LEAST(sum(x), 9223372036854775807), its sum of bigints being numeric. */
static void sat_step(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    int64_t *acc = sqlite3_aggregate_context(cx, sizeof(*acc));
    int64_t v;

    (void)argc;
    if (!acc || sqlite3_value_type(argv[0]) == SQLITE_NULL)
        return;
    v = sqlite3_value_int64(argv[0]);
    if (__builtin_add_overflow(*acc, v, acc))
        *acc = v > 0 ? INT64_MAX : INT64_MIN;
}

static void sat_final(sqlite3_context *cx)
{
    int64_t *acc = sqlite3_aggregate_context(cx, 0);
    sqlite3_result_int64(cx, acc ? *acc : 0);
}

int sdb_sqlite_open(const char *path, int readonly, sdb **out, char *err,
                    size_t cap)
{
    sdb *db = calloc(1, sizeof(*db));
    int flags = (readonly ? SQLITE_OPEN_READONLY
                          : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
                SQLITE_OPEN_NOMUTEX;
    int rc;

    *out = NULL;
    if (!db)
        return GPUFL_ENOMEM;
    pthread_once(&g_cfg_once, cfg_once);
    db->head.ops = &sdb_sqlite_ops;
    db->head.dialect = SDB_SQLITE;
    rc = sqlite3_open_v2(path, &db->h, flags, g_vfs);
    if (rc != SQLITE_OK) {
        snprintf(err, cap, "cannot open %s: %s", path,
                 db->h ? sqlite3_errmsg(db->h) : "out of memory");
        sqlite3_close(db->h);
        free(db);
        return GPUFL_EUNAVAIL;
    }
    sqlite3_busy_timeout(db->h, 10000);
    sqlite3_create_function(db->h, "sat_sum", 1,
                            SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, NULL,
                            sat_step, sat_final);
    *out = db;
    return GPUFL_OK;
}

static int wal_tramp(void *arg, sqlite3 *h, const char *name, int frames)
{
    sdb *db = arg;

    (void)h;
    (void)name;
    db->wal_fn(db->wal_arg, frames);
    return SQLITE_OK;
}

int sdb_wal_hook(sdb *db, sdb_wal_fn fn, void *arg)
{
    if (!db || db->head.dialect != SDB_SQLITE)
        return GPUFL_EINVAL;
    db->wal_fn = fn;
    db->wal_arg = arg;
    sqlite3_wal_hook(db->h, fn ? wal_tramp : NULL, fn ? db : NULL);
    return GPUFL_OK;
}

static void sdb_sqlite_close(sdb *db)
{
    if (!db)
        return;
    sqlite3_close(db->h);
    free(db);
}

static int sdb_sqlite_exec(sdb *db, const char *sql)
{
    return chk(db, sqlite3_exec(db->h, sql, NULL, NULL, NULL));
}

static const char *sdb_sqlite_errmsg(sdb *db)
{
    return sqlite3_errmsg(db->h);
}

static int64_t sdb_sqlite_changes(sdb *db)
{
    return sqlite3_changes(db->h);
}

static int sdb_sqlite_prepare(sdb *db, const char *sql, sdb_stmt **out)
{
    sdb_stmt *st = calloc(1, sizeof(*st));
    int rc;

    *out = NULL;
    if (!st)
        return GPUFL_ENOMEM;
    st->db = db;
    rc = sqlite3_prepare_v3(db->h, sql, -1, SQLITE_PREPARE_PERSISTENT, &st->h,
                            NULL);
    if (rc != SQLITE_OK) {
        free(st);
        return map(rc) ? map(rc) : GPUFL_EINTERNAL;
    }
    *out = st;
    return GPUFL_OK;
}

static void sdb_sqlite_finalize(sdb_stmt *st)
{
    if (!st)
        return;
    sqlite3_finalize(st->h);
    free(st);
}

static void sdb_sqlite_bind_i64(sdb_stmt *st, int i, int64_t v)
{
    sqlite3_bind_int64(st->h, i, v);
}

static void sdb_sqlite_bind_f64(sdb_stmt *st, int i, double v)
{
    sqlite3_bind_double(st->h, i, v);
}

static void sdb_sqlite_bind_text(sdb_stmt *st, int i, const char *s, size_t n)
{
    sqlite3_bind_text(st->h, i, s, (int)n, SQLITE_STATIC);
}

static void sdb_sqlite_bind_blob(sdb_stmt *st, int i, const void *p, size_t n)
{
    sqlite3_bind_blob(st->h, i, p, (int)n, SQLITE_STATIC);
}

static void sdb_sqlite_bind_null(sdb_stmt *st, int i)
{
    sqlite3_bind_null(st->h, i);
}

static int sdb_sqlite_step(sdb_stmt *st)
{
    int rc = chk(st->db, sqlite3_step(st->h));
    return rc ? rc : GPUFL_EINTERNAL;
}

static void sdb_sqlite_reset(sdb_stmt *st)
{
    sqlite3_reset(st->h);
}

static int64_t sdb_sqlite_col_i64(sdb_stmt *st, int i)
{
    return sqlite3_column_int64(st->h, i);
}

static double sdb_sqlite_col_f64(sdb_stmt *st, int i)
{
    return sqlite3_column_double(st->h, i);
}

static const char *sdb_sqlite_col_text(sdb_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(st->h, i);
}

static const void *sdb_sqlite_col_blob(sdb_stmt *st, int i, size_t *n)
{
    const void *p = sqlite3_column_blob(st->h, i);
    *n = (size_t)sqlite3_column_bytes(st->h, i);
    return p;
}

static int sdb_sqlite_col_null(sdb_stmt *st, int i)
{
    return sqlite3_column_type(st->h, i) == SQLITE_NULL;
}

static int sdb_sqlite_copy(sdb *db, const char *sql, const char *data,
                           size_t len)
{
    (void)db;
    (void)sql;
    (void)data;
    (void)len;
    return GPUFL_EINTERNAL; /* COPY is PostgreSQL's */
}

const sdb_ops sdb_sqlite_ops = {
    sdb_sqlite_close,     sdb_sqlite_exec,      sdb_sqlite_errmsg,
    sdb_sqlite_changes,   sdb_sqlite_prepare,   sdb_sqlite_finalize,
    sdb_sqlite_bind_i64,  sdb_sqlite_bind_f64,  sdb_sqlite_bind_text,
    sdb_sqlite_bind_blob, sdb_sqlite_bind_null, sdb_sqlite_step,
    sdb_sqlite_reset,     sdb_sqlite_col_i64,   sdb_sqlite_col_f64,
    sdb_sqlite_col_text,  sdb_sqlite_col_blob,  sdb_sqlite_col_null,
    sdb_sqlite_copy,
};
