/*
 * db_pg_pipe.c - sdb_send on PostgreSQL: libpq's pipeline mode.  A
 * statement whose result the caller does not read is sent and flushed,
 * and the caller goes on while PostgreSQL executes it.  The next command
 * that waits for a result (a step, an exec, a COPY, a DEALLOCATE) first
 * collects every result up to a Sync (sdb_pg_drain) and returns the
 * first error among them.  Only executions are pipelined: a statement
 * not yet prepared on the connection is prepared synchronously, outside
 * the pipeline, so that an error in the pipeline (which skips what
 * follows it up to the Sync) never leaves a statement believed prepared
 * that is not.
 */
#include "db_pg_int.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <string.h>

/* db->err, the error of statement i (from 0) of those in flight, said to
 * be that statement's: the command that collected it is another. */
static void blame(sdb *db, int i)
{
    char why[sizeof(db->err)];
    int n;

    memcpy(why, db->err, sizeof(why));
    n = snprintf(
        db->err, sizeof(db->err),
        "statement %d of %d sent before this command (%s) failed: ", i + 1,
        db->piped, i < PG_PIPE_NAMED ? db->pipe_sql[i] : "its SQL not kept");
    if (n > 0 && (size_t)n < sizeof(db->err))
        snprintf(db->err + n, sizeof(db->err) - (size_t)n, "%s", why);
}

/* The results of the statements sent (sdb_pg_send): a Sync, every result up
 * to its answer, then out of pipeline mode.  The first error, or 0. */
int sdb_pg_drain(sdb *db)
{
    int rc = 0, nulls = 0;

    if (!db->piped)
        return 0;
    if (PQpipelineSync(db->c) != 1)
        rc = sdb_pg_fail(db, NULL);
    while (!rc || PQstatus(db->c) == CONNECTION_OK) {
        PGresult *r = PQgetResult(db->c);
        ExecStatusType s;

        if (!r) {
            /* one NULL ends each statement's results; more than the
             * statements sent means the Sync will not come (the
             * connection broke) */
            if (++nulls > db->piped) {
                if (!rc)
                    rc = sdb_pg_fail(db, NULL);
                break;
            }
            continue;
        }
        s = PQresultStatus(r);
        if (s == PGRES_PIPELINE_SYNC) {
            PQclear(r);
            break;
        }
        /* PIPELINE_ABORTED: skipped after an earlier error, counted there */
        if (!rc && s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK &&
            s != PGRES_PIPELINE_ABORTED) {
            rc = sdb_pg_fail(db, r);
            blame(db, nulls);
        }
        PQclear(r);
    }
    db->piped = 0;
    if (PQexitPipelineMode(db->c) != 1) {
        /* results left unread: no later command could run on it */
        if (!rc)
            snprintf(db->err, sizeof(db->err),
                     "PostgreSQL pipeline not ended: %s",
                     PQerrorMessage(db->c));
        sdb_pg_mark_lost(db);
        rc = GPUFL_EUNAVAIL;
    }
    sdb_pg_after(db);
    return rc;
}

/* Before a command that waits for its result: the sent statements'
 * results collected, and an error among them not yet returned. */
int sdb_pg_collect(sdb *db)
{
    int rc = sdb_pg_drain(db);

    if (!rc)
        rc = db->pipe_rc;
    db->pipe_rc = 0;
    return rc;
}

/* sdb_send: executed in the pipeline, prepared (once) outside it; outside
 * a transaction, run as sdb_step. */
int sdb_pg_send(sdb_stmt *st)
{
    sdb *db = st->db;
    int rc;

    if (db->pipe_rc) {
        rc = db->pipe_rc;
        db->pipe_rc = 0;
        return rc;
    }
    if (st->bind_rc) {
        rc = st->bind_rc;
        st->bind_rc = 0;
        return rc;
    }
    if (st->executed)
        sdb_pg_reset(st);
    if ((!st->prepared || st->gen != db->gen) && !db->lost) {
        /* one kept prepared on the connection needs no PREPARE */
        sdb_pg_default_types(st);
        if (sdb_pg_kept_take(st)) {
            st->prepared = 1;
            st->gen = db->gen;
        }
    }
    if (!st->prepared || st->gen != db->gen) {
        /* sdb_pg_step prepares (the pipeline collected first) and runs it:
         * the first run of a statement on a connection waits */
        rc = sdb_pg_step(st);
        return sdb_err(rc);
    }
    if (!db->piped) {
        if ((rc = sdb_pg_ready(db)) != 0)
            return rc;
        /* made again just now, or outside a transaction: there no later
         * command of the caller's would be the one to return its error */
        if (st->gen != db->gen || db->txs != PQTRANS_INTRANS)
            return sdb_err(sdb_pg_step(st));
        if (PQenterPipelineMode(db->c) != 1)
            return sdb_pg_fail(db, NULL);
    }
    if (PQsendQueryPrepared(db->c, st->name, st->nparams,
                            (const char *const *)(st->vals + 1), st->lens + 1,
                            st->fmts + 1, 0) != 1)
        goto broken;
    if (db->piped < PG_PIPE_NAMED)
        snprintf(db->pipe_sql[db->piped], PG_PIPE_SQL, "%s", st->sql);
    db->piped++;
    st->executed = 1;
    st->row = -1;
    st->nrows = 0;
    db->changes = 0;
    /* on its way now: libpq holds what is sent in pipeline mode until a
     * flush, and the point is that PostgreSQL works meanwhile */
    if (PQflush(db->c) != 0)
        goto broken;
    return GPUFL_OK;
broken:
    /* the send's own failure is the answer; what was in flight is
     * collected (its error moot: the transaction fails) */
    rc = sdb_pg_fail(db, NULL);
    (void)sdb_pg_drain(db);
    return rc;
}
