/*
 * db.h - the small SQL interface the store is written against, with one
 * backend per database: db_sqlite.c (embedded) and db_pg.c (libpq, with
 * db_pg_kept.c and db_pg_pipe.c).
 *
 * Its shape is SQLite's: prepare, bind, step through rows, reset, finalize.
 * SQL text uses "?N" (or "?") parameters; the PostgreSQL backend rewrites
 * them to "$N".  Statements must stick to the dialect both accept
 * (ON CONFLICT upserts, RETURNING, row values, CAST(? AS TEXT) where a
 * parameter's type is otherwise unknown); the few places that differ ask
 * sdb_dialect().
 *
 * Ownership: text and blob parameters are borrowed until the statement's
 * next sdb_step() returns (the SQLite backend binds them SQLITE_STATIC,
 * the PostgreSQL one copies them at bind).  Column values are valid until
 * the next step, reset or finalize of that statement.  A connection and
 * its statements are used by one thread at a time.
 */
#ifndef GPUFL_SERVER_DB_H
#define GPUFL_SERVER_DB_H

#include <stddef.h>
#include <stdint.h>

typedef struct sdb sdb;
typedef struct sdb_stmt sdb_stmt;

enum { SDB_SQLITE = 1, SDB_POSTGRES = 2 };

/* sdb_step() answers: a row, or the end (errors are gpufl_err, < 100). */
#define SDB_ROW 100
#define SDB_DONE 101

/* 0 for SDB_ROW/SDB_DONE, else the error itself. */
static inline int sdb_err(int rc)
{
    return rc == SDB_ROW || rc == SDB_DONE ? 0 : rc;
}

/*
 * Opens url: "postgres://..." or "postgresql://..." (libpq), anything
 * else a SQLite file path ("sqlite:" prefix optional).  readonly: SQLite
 * opens read-only (PostgreSQL ignores it).  On failure err holds why.
 * Returns GPUFL_OK, GPUFL_EUNAVAIL (cannot connect/open) or GPUFL_ENOMEM.
 */
int sdb_open(const char *url, int readonly, sdb **out, char *err, size_t cap);
void sdb_close(sdb *db);
int sdb_dialect(const sdb *db);
/* Runs SQL text (several statements allowed), no parameters, no rows. */
int sdb_exec(sdb *db, const char *sql);
/* The last error message of this connection (static or owned by db). */
const char *sdb_errmsg(sdb *db);
/* Rows changed by the last INSERT/UPDATE/DELETE stepped on db. */
int64_t sdb_changes(sdb *db);
/* PostgreSQL only: runs sql, a "COPY ... FROM STDIN" (text, or binary
 * with "(FORMAT binary)"), and sends len bytes of rows from data
 * (borrowed) - one round trip where row-at-a-time INSERTs take thousands.
 * SQLite: GPUFL_EINTERNAL. */
int sdb_copy(sdb *db, const char *sql, const char *data, size_t len);
/* PostgreSQL: the results db received in binary so far (db_pg.c: a
 * statement of blobs and integers alone, from its second run on); tests
 * count them.  SQLite: 0. */
uint64_t sdb_binary_results(const sdb *db);
/* Starts a write transaction (SQLite: BEGIN IMMEDIATE). */
int sdb_begin(sdb *db);
/* SQLite only: fn(arg, frames) after each commit of db, frames the pages
 * in its WAL then, on the committing thread - in place of SQLite's own
 * checkpoint at commit (wal_autocheckpoint), which it replaces; NULL fn
 * restores none.  PostgreSQL: GPUFL_EINVAL. */
typedef void (*sdb_wal_fn)(void *arg, int frames);
int sdb_wal_hook(sdb *db, sdb_wal_fn fn, void *arg);

/*
 * Losing the database.  A PostgreSQL connection that the server closed (a
 * restart, pg_terminate_backend, a failover) is made again, with backoff,
 * at the next command that finds it gone - never inside a transaction:
 * a connection lost in one fails every command (GPUFL_EUNAVAIL) until the
 * caller's ROLLBACK or next BEGIN, so no statement of a failed transaction
 * runs on its own on the new connection.  Statements are prepared again
 * on the new connection by themselves.
 *
 * setup: SQL run on every connection made again (session settings,
 * temporary tables), borrowed, must outlive db; NULL for none.
 */
void sdb_set_setup(sdb *db, const char *setup);

/* What a backend reports to its watcher (sdb_set_watch). */
enum {
    SDB_EV_DOWN = 1,  /* a command failed for want of the database: the
                       * connection was lost, or making it again failed */
    SDB_EV_UP = 2,    /* a lost connection was made again */
    SDB_EV_NOSPC = 3, /* a write failed for want of disk space */
    SDB_EV_COMMIT = 4 /* a COMMIT succeeded */
};
/* Called on the thread using db; why is borrowed for the call. */
typedef void (*sdb_watch_fn)(void *arg, int ev, const char *why);
void sdb_set_watch(sdb *db, sdb_watch_fn fn, void *arg);

int sdb_prepare(sdb *db, const char *sql, sdb_stmt **out);
void sdb_finalize(sdb_stmt *st);
/* Parameters are 1-based. */
void sdb_bind_i64(sdb_stmt *st, int i, int64_t v);
void sdb_bind_f64(sdb_stmt *st, int i, double v);
void sdb_bind_text(sdb_stmt *st, int i, const char *s, size_t n);
void sdb_bind_blob(sdb_stmt *st, int i, const void *p, size_t n);
void sdb_bind_null(sdb_stmt *st, int i);
/*
 * An array parameter (PostgreSQL; SQLite has none and binds NULL), sent
 * in binary: the n elements p[0..len) in array_send's form, each a
 * 4-byte big-endian length (-1: NULL) and its bytes - an integer's 8
 * big-endian bytes, a double's IEEE bits the same way, a bytea's bytes
 * (store_sql_roll_pg.c sq_av_*) - of type elem, the header prepended
 * here.  The statement must take the parameter as that array type (a
 * "?::bigint[]" cast).  A bind that cannot be made (no memory for the
 * copy, elem unknown, over 2 GiB) makes the statement's next step or
 * send fail (GPUFL_ENOMEM, GPUFL_EINVAL, GPUFL_ETOOBIG), never run with a
 * NULL there.  Array literals in text cost PostgreSQL's parser
 * ~0.1-0.2 us an integer and 4 us a 200-byte bytea (docs/server.md
 * "Array parameters in binary").
 */
enum { SDB_ARR_I64 = 1, SDB_ARR_F64 = 2, SDB_ARR_BYTEA = 3 };
void sdb_bind_arr(sdb_stmt *st, int i, const void *p, size_t len, size_t n,
                  int elem);
/* SDB_ROW, SDB_DONE or a gpufl_err (GPUFL_EUNAVAIL when the database is
 * gone or busy, GPUFL_EINTERNAL for an SQL error). */
int sdb_step(sdb_stmt *st);
/*
 * Runs a statement whose rows and changes the caller will not read (an
 * INSERT, an upsert, a DELETE without RETURNING).
 * SQLite steps it to its end.  PostgreSQL sends it and returns at once
 * (libpq's pipeline mode), so that the database executes it while the
 * caller prepares the next one; its result is collected by the next
 * command that waits for one, inside the transaction (outside one it is
 * stepped at once, as there the next command may be anyone's): sdb_step
 * of any statement, sdb_exec (COMMIT among them), sdb_copy (an
 * sdb_finalize that must collect them keeps their error for the next of
 * these).  An error of a sent
 * statement is therefore returned by that later call (never lost: a
 * COMMIT after one fails instead of committing), and the caller's error
 * path, a ROLLBACK, is the same.  sdb_changes() is not known after it.
 * 0, or a gpufl_err (a send that failed, or one collected before it).
 */
int sdb_send(sdb_stmt *st);
/* Ready to run again; bindings are kept. */
void sdb_reset(sdb_stmt *st);

/* Columns are 0-based. */
int64_t sdb_col_i64(sdb_stmt *st, int i);
double sdb_col_f64(sdb_stmt *st, int i);
const char *sdb_col_text(sdb_stmt *st, int i); /* NULL for SQL NULL */
const void *sdb_col_blob(sdb_stmt *st, int i, size_t *n);
int sdb_col_null(sdb_stmt *st, int i);

#endif
