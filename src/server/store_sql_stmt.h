/*
 * store_sql_stmt.h - the store's statement helpers: the one vocabulary
 * the store's files use for binding parameters, reading columns and
 * running statements (db.h underneath).  Included by store_sql_int.h.
 */
#ifndef GPUFL_SERVER_STORE_SQL_STMT_H
#define GPUFL_SERVER_STORE_SQL_STMT_H

#include <stdint.h>
#include <string.h>

#include "db.h"
#include "store.h"

/* Parameters are 1-based, columns 0-based; text is borrowed until the
 * next step (db.h). */
static inline void qbind_i64(sdb_stmt *st, int i, int64_t v)
{
    sdb_bind_i64(st, i, v);
}

/* An unsigned event field (ts, seq, ids...), stored as the int64 of the
 * same bits: the format's values stay below 2^63 (ingest.c checks). */
static inline void qbind_u64(sdb_stmt *st, int i, uint64_t v)
{
    sdb_bind_i64(st, i, (int64_t)v);
}

static inline void qbind_f64(sdb_stmt *st, int i, double v)
{
    sdb_bind_f64(st, i, v);
}

static inline void qbind_null(sdb_stmt *st, int i)
{
    sdb_bind_null(st, i);
}

/* A NUL-terminated string; NULL binds SQL NULL. */
static inline void qbind_text(sdb_stmt *st, int i, const char *s)
{
    if (s)
        sdb_bind_text(st, i, s, strlen(s));
    else
        sdb_bind_null(st, i);
}

/* A borrowed string of the batch (s.p NULL: absent, SQL NULL). */
static inline void qbind_str(sdb_stmt *st, int i, srv_str s)
{
    if (s.p)
        sdb_bind_text(st, i, s.p, s.n);
    else
        sdb_bind_null(st, i);
}

static inline void qbind_blob(sdb_stmt *st, int i, const void *p, size_t n)
{
    sdb_bind_blob(st, i, p, n);
}

static inline int64_t qcol_i64(sdb_stmt *st, int i)
{
    return sdb_col_i64(st, i);
}

static inline double qcol_f64(sdb_stmt *st, int i)
{
    return sdb_col_f64(st, i);
}

/* Never NULL: "" for SQL NULL (qcol_null tells them apart). */
static inline const char *qcol_text(sdb_stmt *st, int i)
{
    const char *t = sdb_col_text(st, i);
    return t ? t : "";
}

static inline int qcol_null(sdb_stmt *st, int i)
{
    return sdb_col_null(st, i);
}

static inline const void *qcol_blob(sdb_stmt *st, int i, size_t *n)
{
    return sdb_col_blob(st, i, n);
}

/* Runs a statement that returns no rows and resets it: 0 or gpufl_err. */
static inline int qrun(sdb_stmt *st)
{
    int rc = sdb_step(st);
    sdb_reset(st);
    return sdb_err(rc);
}

/* qrun for a writer's statement whose changes nobody reads: on
 * PostgreSQL sent without waiting (sdb_send), its error returned by the
 * transaction's next statement that waits, at the latest its COMMIT. */
static inline int qsend(sdb_stmt *st)
{
    int rc = sdb_send(st);
    sdb_reset(st);
    return rc;
}

#endif
