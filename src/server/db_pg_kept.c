/*
 * db_pg_kept.c - PostgreSQL statements kept prepared once finalized: a
 * cache of PG_STMT_CACHE (SQL, parameter types) a connection, the least
 * recently finalized deallocated first, so per-request queries do not
 * pile up on the server and the next statement of the same SQL and types
 * runs without a PREPARE (the compactor prepared and deallocated ~10
 * statements a merge: two round trips each, under the writer's lock).
 * A statement has one owner at a time: taking it frees its slot.
 */
#include "db_pg_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sdb_pg_kept_free(pg_kept *k)
{
    free(k->sql);
    free(k->types);
    memset(k, 0, sizeof(*k));
}

void sdb_pg_deallocate(sdb *db, const char *name)
{
    char sql[64];
    int rc;

    /* a synchronous command: the pipeline first, its error kept for the
     * next command to return */
    if ((rc = sdb_pg_drain(db)) != 0 && !db->pipe_rc)
        db->pipe_rc = rc;

    snprintf(sql, sizeof(sql), "DEALLOCATE %s", name);
    PQclear(PQexec(db->c, sql));
    sdb_pg_after(db);
}

/* Whether slot k holds a statement prepared on the live connection. */
static int kept_live(const sdb *db, const pg_kept *k)
{
    return k->sql && k->gen == db->gen;
}

/* Whether slot k is live and holds st's SQL and parameter types. */
static int kept_is(const pg_kept *k, const sdb_stmt *st)
{
    return kept_live(st->db, k) && k->nparams == st->nparams &&
           !strcmp(k->sql, st->sql) &&
           !memcmp(k->types + 1, st->types + 1,
                   (size_t)st->nparams * sizeof(Oid));
}

/* A kept statement of st's SQL and types, prepared on this connection:
 * its name given to st and its slot freed (one owner at a time).  1 if
 * found. */
int sdb_pg_kept_take(sdb_stmt *st)
{
    for (int i = 0; i < PG_STMT_CACHE; i++) {
        pg_kept *k = &st->db->kept[i];
        if (kept_is(k, st)) {
            memcpy(st->name, k->name, sizeof(st->name));
            st->rfmt = k->rfmt;
            sdb_pg_kept_free(k);
            return 1;
        }
    }
    return 0;
}

/* st, prepared on the live connection, kept for a later statement of the
 * same SQL and types: a free slot (or one of a lost connection's), else
 * the oldest, deallocated.  0 if st is to be deallocated instead (the same
 * statement kept already). */
int sdb_pg_kept_put(sdb_stmt *st)
{
    sdb *db = st->db;
    pg_kept *v = NULL;
    char *q;

    for (int i = 0; i < PG_STMT_CACHE; i++) {
        pg_kept *k = &db->kept[i];
        if (kept_is(k, st))
            return 0;
        /* a free or dead slot first, else the oldest live one */
        if (!v ||
            (kept_live(db, v) && (!kept_live(db, k) || k->tick < v->tick)))
            v = k;
    }
    if (kept_live(db, v))
        sdb_pg_deallocate(db, v->name);
    sdb_pg_kept_free(v);
    /* translate's buffer is 6x the SQL's length */
    if ((q = realloc(st->sql, strlen(st->sql) + 1)) != NULL)
        st->sql = q;
    v->sql = st->sql;
    v->types = st->types;
    v->nparams = st->nparams;
    v->rfmt = st->rfmt;
    v->gen = db->gen;
    v->tick = ++db->tick;
    memcpy(v->name, st->name, sizeof(v->name));
    st->sql = NULL; /* the slot owns them now */
    st->types = NULL;
    return 1;
}
