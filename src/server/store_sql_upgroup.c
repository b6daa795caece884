/*
 * store_sql_upgroup.c - a rollup's upserts on SQLite in groups of
 * SQ_UPGROUP rows a statement (tl, capi, kscope: a few hundred rows a
 * batch each).
 *
 * A row's upsert is a seek in the table's b-tree (a second one and a
 * delete when the row is there), then the insert: most of its ~9 000
 * instructions, whatever the statement.  Around it each run of a
 * statement pays for sqlite3_step's start and end and the reset; a
 * VALUES list of SQ_UPGROUP rows, ON CONFLICT applied row by row as for
 * one, pays them once a group: ~1 300 fewer instructions a row at 64
 * (16: ~750 on capi, ~150 on tl; 256: no better than 64, more rows left
 * to go one by one; docs/server.md).  The rows are the same: a batch's
 * map holds each key once, so no two rows of a group meet the same
 * stored row.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <string.h>

int sq_upgroup_prepare(sdb *db, const char *sql1, int ncol, sdb_stmt **out)
{
    /* sql1 is "INSERT INTO t VALUES(?,...,?) ON CONFLICT ..." */
    char sql[8192];
    const char *v = strstr(sql1, "VALUES("), *tail;
    size_t len;

    *out = NULL;
    if (!v || ncol < 1 || ncol > SQ_UPGROUP_COLS)
        return GPUFL_EINVAL;
    v += strlen("VALUES");
    tail = strchr(v, ')');
    if (!tail)
        return GPUFL_EINVAL;
    len = (size_t)(v - sql1);
    if (len + SQ_UPGROUP * (size_t)(2 * ncol + 2) + strlen(tail) >= sizeof(sql))
        return GPUFL_EINVAL;
    memcpy(sql, sql1, len);
    for (int r = 0; r < SQ_UPGROUP; r++) {
        if (r)
            sql[len++] = ',';
        sql[len++] = '(';
        for (int c = 0; c < ncol; c++) {
            if (c)
                sql[len++] = ',';
            sql[len++] = '?';
        }
        sql[len++] = ')';
    }
    snprintf(sql + len, sizeof(sql) - len, "%s", tail + 1);
    return sdb_prepare(db, sql, out) ? GPUFL_EINTERNAL : GPUFL_OK;
}

int sq_upgroup_run(sdb_stmt *grp, sdb_stmt *one, const uint64_t *v, size_t nrow,
                   int ncol)
{
    size_t r = 0;
    int rc;

    for (; r + SQ_UPGROUP <= nrow; r += SQ_UPGROUP) {
        const uint64_t *g = v + r * (size_t)ncol;
        for (int i = 0; i < SQ_UPGROUP * ncol; i++)
            qbind_u64(grp, i + 1, g[i]);
        if ((rc = qrun(grp)) != 0)
            return rc;
    }
    for (; r < nrow; r++) {
        for (int c = 0; c < ncol; c++)
            qbind_u64(one, c + 1, v[r * (size_t)ncol + (size_t)c]);
        if ((rc = qrun(one)) != 0)
            return rc;
    }
    return GPUFL_OK;
}
