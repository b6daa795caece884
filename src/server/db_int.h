/*
 * db_int.h - how db.c dispatches to a backend: every connection struct
 * starts with an sdb_head naming its operations, every statement struct
 * with its connection.
 */
#ifndef GPUFL_SERVER_DB_INT_H
#define GPUFL_SERVER_DB_INT_H

#include "db.h"

typedef struct sdb_ops {
    void (*close)(sdb *db);
    int (*exec)(sdb *db, const char *sql);
    const char *(*errmsg)(sdb *db);
    int64_t (*changes)(sdb *db);
    int (*prepare)(sdb *db, const char *sql, sdb_stmt **out);
    void (*finalize)(sdb_stmt *st);
    void (*bind_i64)(sdb_stmt *st, int i, int64_t v);
    void (*bind_f64)(sdb_stmt *st, int i, double v);
    void (*bind_text)(sdb_stmt *st, int i, const char *s, size_t n);
    void (*bind_blob)(sdb_stmt *st, int i, const void *p, size_t n);
    void (*bind_null)(sdb_stmt *st, int i);
    int (*step)(sdb_stmt *st);
    void (*reset)(sdb_stmt *st);
    int64_t (*col_i64)(sdb_stmt *st, int i);
    double (*col_f64)(sdb_stmt *st, int i);
    const char *(*col_text)(sdb_stmt *st, int i);
    const void *(*col_blob)(sdb_stmt *st, int i, size_t *n);
    int (*col_null)(sdb_stmt *st, int i);
    int (*copy)(sdb *db, const char *sql, const char *data, size_t len);
    /* NULL (left out of an initializer): stepped to its end (sdb_send) */
    int (*send)(sdb_stmt *st);
    /* NULL: no arrays (SQLite), the parameter bound NULL (sdb_bind_arr) */
    void (*bind_arr)(sdb_stmt *st, int i, const void *p, size_t len, size_t n,
                     int elem);
} sdb_ops;

typedef struct sdb_head {
    const sdb_ops *ops;
    int dialect;
    const char *setup; /* sdb_set_setup, borrowed */
    sdb_watch_fn watch;
    void *watch_arg;
} sdb_head;

/* Tells db's watcher, if any, about ev. */
void sdb_notify(sdb *db, int ev, const char *why);

int sdb_sqlite_open(const char *path, int readonly, sdb **out, char *err,
                    size_t cap);
int sdb_pg_open(const char *url, sdb **out, char *err, size_t cap);
uint64_t sdb_pg_binary(const sdb *db);

#endif
