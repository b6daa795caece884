/*
 * db.c - db.h's entry points: picks the backend from the URL, then
 * forwards each call through the connection's operation table.
 */
#include "db_int.h"

#include <gpufl/gpufl.h>

#include <string.h>

#define OPS(db) (((const sdb_head *)(const void *)(db))->ops)
#define SOPS(st) OPS(*(sdb *const *)(const void *)(st))

int sdb_open(const char *url, int readonly, sdb **out, char *err, size_t cap)
{
    if (strncmp(url, "postgres://", 11) == 0 ||
        strncmp(url, "postgresql://", 13) == 0)
        return sdb_pg_open(url, out, err, cap);
    if (strncmp(url, "sqlite:", 7) == 0)
        url += 7;
    return sdb_sqlite_open(url, readonly, out, err, cap);
}

void sdb_close(sdb *db)
{
    if (db)
        OPS(db)->close(db);
}

int sdb_dialect(const sdb *db)
{
    return ((const sdb_head *)(const void *)db)->dialect;
}

int sdb_exec(sdb *db, const char *sql)
{
    int rc = OPS(db)->exec(db, sql);

    /* the store commits only through here: a write reached the disk */
    if (!rc && strncmp(sql, "COMMIT", 6) == 0)
        sdb_notify(db, SDB_EV_COMMIT, NULL);
    return rc;
}

void sdb_set_setup(sdb *db, const char *setup)
{
    ((sdb_head *)(void *)db)->setup = setup;
}

void sdb_set_watch(sdb *db, sdb_watch_fn fn, void *arg)
{
    sdb_head *h = (sdb_head *)(void *)db;

    h->watch = fn;
    h->watch_arg = arg;
}

void sdb_notify(sdb *db, int ev, const char *why)
{
    const sdb_head *h = (const sdb_head *)(const void *)db;

    if (h->watch)
        h->watch(h->watch_arg, ev, why);
}

const char *sdb_errmsg(sdb *db)
{
    return OPS(db)->errmsg(db);
}

int64_t sdb_changes(sdb *db)
{
    return OPS(db)->changes(db);
}

int sdb_copy(sdb *db, const char *sql, const char *data, size_t len)
{
    return OPS(db)->copy(db, sql, data, len);
}

uint64_t sdb_binary_results(const sdb *db)
{
    return sdb_dialect(db) == SDB_POSTGRES ? sdb_pg_binary(db) : 0;
}

int sdb_begin(sdb *db)
{
    /* IMMEDIATE: take SQLite's write lock now, not at the first write */
    return sdb_exec(db, sdb_dialect(db) == SDB_SQLITE ? "BEGIN IMMEDIATE"
                                                      : "BEGIN");
}

int sdb_prepare(sdb *db, const char *sql, sdb_stmt **out)
{
    return OPS(db)->prepare(db, sql, out);
}

void sdb_finalize(sdb_stmt *st)
{
    if (st)
        SOPS(st)->finalize(st);
}

void sdb_bind_i64(sdb_stmt *st, int i, int64_t v)
{
    SOPS(st)->bind_i64(st, i, v);
}

void sdb_bind_f64(sdb_stmt *st, int i, double v)
{
    SOPS(st)->bind_f64(st, i, v);
}

void sdb_bind_text(sdb_stmt *st, int i, const char *s, size_t n)
{
    SOPS(st)->bind_text(st, i, s, n);
}

void sdb_bind_blob(sdb_stmt *st, int i, const void *p, size_t n)
{
    SOPS(st)->bind_blob(st, i, p, n);
}

void sdb_bind_arr(sdb_stmt *st, int i, const void *p, size_t len, size_t n,
                  int elem)
{
    if (SOPS(st)->bind_arr)
        SOPS(st)->bind_arr(st, i, p, len, n, elem);
    else
        SOPS(st)->bind_null(st, i);
}

void sdb_bind_null(sdb_stmt *st, int i)
{
    SOPS(st)->bind_null(st, i);
}

int sdb_step(sdb_stmt *st)
{
    return SOPS(st)->step(st);
}

int sdb_send(sdb_stmt *st)
{
    int rc;

    if (SOPS(st)->send)
        return SOPS(st)->send(st);
    rc = SOPS(st)->step(st);
    return sdb_err(rc);
}

void sdb_reset(sdb_stmt *st)
{
    SOPS(st)->reset(st);
}

int64_t sdb_col_i64(sdb_stmt *st, int i)
{
    return SOPS(st)->col_i64(st, i);
}

double sdb_col_f64(sdb_stmt *st, int i)
{
    return SOPS(st)->col_f64(st, i);
}

const char *sdb_col_text(sdb_stmt *st, int i)
{
    return SOPS(st)->col_text(st, i);
}

const void *sdb_col_blob(sdb_stmt *st, int i, size_t *n)
{
    return SOPS(st)->col_blob(st, i, n);
}

int sdb_col_null(sdb_stmt *st, int i)
{
    return SOPS(st)->col_null(st, i);
}
