/*
 * store_sql_upgroup.c - a rollup's upserts on SQLite in groups of
 * SQ_UPGROUP rows a statement (tl, capi: a few hundred rows a batch).
 *
 * SQLite's work for one upserted row is a seek in the table's b-tree,
 * the merge and the insert; around it, each statement run also pays for
 * sqlite3_step's start and end (the transaction check, a cursor opened
 * and closed, the statement reset): about a third of a row's ~8 000
 * instructions there.  A statement of SQ_UPGROUP rows (a VALUES list,
 * ON CONFLICT applied row by row as for one) pays that once a group.
 * The rows are the same: a batch's map holds each key once, so no two
 * rows of a group meet the same stored row.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <string.h>

int sq_upgroup_prepare(sdb *db, const char *sql1, int ncol, sdb_stmt **out)
{
    /* sql1 is "INSERT INTO t VALUES(?,...,?) ON CONFLICT ..." */
    char sql[4096];
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
