/*
 * store_sql_writer_int.h - the batch writer's interface (sq_writer: what
 * differs by database when an ingest batch is written), and the
 * PostgreSQL writer's rollup merges (store_sql_roll_pg.c) its two files
 * share.
 */
#ifndef GPUFL_SERVER_STORE_SQL_WRITER_INT_H
#define GPUFL_SERVER_STORE_SQL_WRITER_INT_H

#include "store_sql_int.h"

struct gbuf;

/*
 * ---- The batch writer: what differs by database ----
 *
 * Which rows a line makes, the rollups, the transaction and its order are
 * the same for both databases (store_sql_ingest.c).  How the rows get in
 * is not: SQLite runs in this process, so a prepared statement per row is
 * cheap, and new kernels go in grouped INSERTs (store_sql_ingest_sqlite.c);
 * PostgreSQL is a round trip away, so a batch's rows go in bulk - binary
 * COPY, staging tables merged by one statement per table, multi-row
 * statements (store_sql_ingest_pg.c).
 *
 * Every function runs on the writer connection s->w under s->wlock; the
 * writer keeps its own state in s->wst.
 */
typedef struct sq_writer {
    const char *name; /* "sqlite", "postgres" */
    /* the writer connection's settings, before the schema exists */
    int (*setup)(srv_store *s);
    /* after the schema is current: its statements and state; eb says why
     * it failed */
    int (*open)(srv_store *s, char *eb, size_t ec);
    /* frees what open made; accepts a writer that was never opened */
    void (*close)(srv_store *s);
    /* after BEGIN: what makes this batch's view of the database sound
     * (other servers writing the same database) */
    int (*begin)(srv_store *s);
    /* one kernel row (l: its launch configuration), written now or held
     * for flush; either way passed to sq_kernel_done once it is known new
     * or duplicate, at the latest in flush */
    int (*kernel)(srv_store *s, int64_t sess, const srv_ev *e,
                  const sq_launch *l);
    /* the kernels still held, each then passed to sq_kernel_done: the
     * end of one batch of a group (store_sql_igroup.c) */
    int (*settle)(srv_store *s);
    /* the kernels still held, then the batch's kernel aggregates, merged
     * with the stored ones (s->kagg), its timeline buckets (s->tl) and
     * per-scope totals (s->kscope) */
    int (*flush)(srv_store *s);
    /* kext: the rows leaving, then the rows coming (del may be reordered) */
    int (*kext)(srv_store *s, sq_ext_row *del, size_t ndel,
                const sq_ext_row *put, size_t nput);
    /* the batch rolled back: forget what it held or cached */
    void (*abort)(srv_store *s);
    /* the p->n stacks of memory profile prof (store_sql_memprof.c), in the
     * caller's transaction */
    int (*memstacks)(srv_store *s, int64_t prof, const srv_memprof *p);
    /* NULL where a prepared statement a row is cheap (SQLite); else a
     * rollup's rows in bulk: rows writes them into b as COPY text, then
     * they go into the session-local table stage and are merged into dst
     * by one "INSERT INTO dst SELECT * FROM stage" plus the ON CONFLICT
     * clause of sql, the row-at-a-time statement (so both databases merge
     * alike) */
    int (*merge)(srv_store *s, const char *stage, const char *dst,
                 const char *sql, int (*rows)(srv_store *s, struct gbuf *b));
} sq_writer;

extern const sq_writer sq_writer_sqlite; /* store_sql_ingest_sqlite.c */
extern const sq_writer sq_writer_pg;     /* store_sql_ingest_pg.c */

/* ---- store_sql_roll_pg.c: PostgreSQL's rollup merges ---- */
/* COPY text rows: sq_cb_i appends an integer column then sep ('\t' or
 * '\n') into room the caller reserved (SQ_CB_COL bytes a column). */
#define SQ_CB_COL 32
void sq_cb_i(struct gbuf *b, int64_t v, char sep);
/* The rows in cb COPYed into the staging table stage, then merged into
 * dst by "INSERT INTO dst SELECT * FROM stage" plus the ON CONFLICT clause
 * of ws_sql, the row-at-a-time statement (so both databases merge alike);
 * nothing when cb is empty. */
int sq_pg_merge_sql(srv_store *s, struct gbuf *cb, const char *stage,
                    const char *dst, const char *ws_sql);
/* The batch's kernel aggregates, timeline buckets and per-scope totals,
 * cb the scratch.  st (store_sql_ingest_pg.c prepares them): the stored
 * kagg rows of the batch's keys, merged here; then the kagg, tl and
 * kscope upserts, each an INSERT ... SELECT FROM unnest of one array
 * literal a column plus the row-at-a-time statement's ON CONFLICT
 * clause. */
int sq_pg_roll_flush(srv_store *s, struct gbuf *cb, sdb_stmt *const st[4]);

#endif
