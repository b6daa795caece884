/*
 * db_pg_int.h - what db_pg.c (the connection, statements, results),
 * db_pg_kept.c (statements kept prepared) and db_pg_pipe.c (statements
 * sent without waiting) share: the connection and statement structs and
 * the functions each file gives the others.
 */
#ifndef GPUFL_SERVER_DB_PG_INT_H
#define GPUFL_SERVER_DB_PG_INT_H

#include "db_int.h"

#include <libpq-fe.h>
#include <stdint.h>

/* Statements kept prepared per connection once finalized (pg_finalize). */
#define PG_STMT_CACHE 64

/* Statements in flight whose SQL is kept to name in an error (the
 * writer sends ~5 between two commands that wait), and the bytes of
 * each kept. */
#define PG_PIPE_NAMED 32
#define PG_PIPE_SQL 96

/* pg_type OIDs (stable, from the catalog) */
#define OID_BYTEA 17
#define OID_INT8 20
#define OID_INT4 23
#define OID_TEXT 25
#define OID_FLOAT8 701
#define OID_BYTEA_ARR 1001
#define OID_INT8_ARR 1016
#define OID_FLOAT8_ARR 1022

/* A finalized statement still prepared on the connection: its SQL (as
 * sent) and parameter types, which a new statement must match to use it. */
typedef struct pg_kept {
    char *sql;  /* NULL: a free slot */
    Oid *types; /* nparams + 1, index 0 unused */
    int nparams;
    int rfmt; /* its statement's result format (sdb_stmt) */
    unsigned gen;
    uint64_t tick; /* when it was finalized: the oldest goes first */
    char name[32];
} pg_kept;

struct sdb {
    sdb_head head;
    PGconn *c;
    int64_t changes;
    unsigned nstmt;
    unsigned gen; /* connections made so far: statements compare */
    int lost;     /* the connection is gone: make it again */
    int tx_lost;  /* ... and it was inside a transaction */
    int txs;      /* PQtransactionStatus before the current command */
    int goodbye;  /* the server said FATAL: it is closing the connection */
    uint64_t retry_at, backoff_ms; /* next attempt (mono ms), its delay */
    char err[512];
    pg_kept kept[PG_STMT_CACHE];
    uint64_t tick;
    uint64_t bin_results; /* results received in binary (sdb_pg_binary) */
    /* statements sent (sdb_pg_send) whose results are not yet collected: the
     * connection is in pipeline mode while this is not 0 */
    int piped;
    int pipe_rc; /* an error collected where none could be returned */
    /* the SQL (its start) of the first PG_PIPE_NAMED statements in
     * flight: an error collected later names its statement, not the
     * command that collected it */
    char pipe_sql[PG_PIPE_NAMED][PG_PIPE_SQL];
};

struct sdb_stmt {
    sdb *db; /* first, as db_int.h requires */
    char *sql;
    char name[32];
    int prepared, executed, nparams;
    /* a bind that could not be made (GPUFL_ENOMEM: its copy not
     * allocated; GPUFL_EINVAL, GPUFL_ETOOBIG: an array's type or size):
     * the next step or send fails with it instead of running with a NULL
     * there - an array bound NULL unnests to no rows, a batch's rollups
     * stored as nothing */
    int bind_rc;
    unsigned gen; /* db->gen it was prepared in */
    /* nparams + 1 entries each, index 0 unused */
    char **vals;
    int *lens, *fmts; /* binary parameters (blobs): length, format 1 */
    Oid *types;
    unsigned char *used; /* "$N" appears in the SQL */
    PGresult *res;
    int row, nrows;
    /* results asked for: -1 not known yet (text; bin_ok decides after the
     * first), 0 text, 1 binary */
    int rfmt;
    unsigned char *blob;
    char *tbuf; /* pg_col_text of binary integers: 24 bytes a column */
};

/* ---- db_pg.c: the connection ---- */

/* The connection is gone: the next command makes it again (or, if it was
 * inside a transaction, after the caller's ROLLBACK or next BEGIN). */
void sdb_pg_mark_lost(sdb *db);
/* After a command: where it left the transaction, for sdb_pg_mark_lost. */
void sdb_pg_after(sdb *db);
/* Before each command: a usable connection, made again if it was lost. */
int sdb_pg_ready(sdb *db);
/* A failed result (r may be NULL): why kept in db->err, the error code
 * (GPUFL_EUNAVAIL when the server is unreachable). */
int sdb_pg_fail(sdb *db, PGresult *r);

/* ---- db_pg.c: statements ---- */

void sdb_pg_reset(sdb_stmt *st);
/* Gives a parameter the SQL never mentions a type. */
void sdb_pg_default_types(sdb_stmt *st);
/* sdb_step: prepares st on its first run on a connection, executes it. */
int sdb_pg_step(sdb_stmt *st);

/* ---- db_pg_kept.c: finalized statements kept prepared ---- */

void sdb_pg_kept_free(pg_kept *k);
/* DEALLOCATE name (the pipeline collected first). */
void sdb_pg_deallocate(sdb *db, const char *name);
/* A kept statement of st's SQL and types, prepared on this connection,
 * given to st: 1 if found. */
int sdb_pg_kept_take(sdb_stmt *st);
/* st kept for a later statement of its SQL and types: 0 if st is to be
 * deallocated instead. */
int sdb_pg_kept_put(sdb_stmt *st);

/* ---- db_pg_pipe.c: statements sent without waiting ---- */

/* The sent statements' results: the first error, or 0. */
int sdb_pg_drain(sdb *db);
/* sdb_pg_drain, then an error collected earlier and not yet returned. */
int sdb_pg_collect(sdb *db);
/* sdb_send */
int sdb_pg_send(sdb_stmt *st);

#endif
