/*
 * store_sql_policy.c - what the ingest scope check (ingest_scope.c) reads
 * of a stored session before a batch: its host, and the seq of each ended
 * stream's session_end line.
 *
 * The session row is one indexed lookup; the end lines are read only for
 * streams that have ended, so a running session (the common case) costs
 * that one lookup per batch.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <string.h>

int srv_store_sess_policy(srv_store *s, const char *sid, srv_sess_policy *out)
{
    sdb *db = sq_reader_get(s);
    sdb_stmt *st = NULL;
    int64_t id = 0;
    int rc;

    memset(out, 0, sizeof(*out));
    rc = sdb_prepare(db, "SELECT id, host, ended FROM sessions WHERE sid=?",
                     &st);
    if (rc == 0) {
        qbind_text(st, 1, sid);
        rc = sdb_step(st);
        if (rc == SDB_ROW) {
            out->found = 1;
            id = qcol_i64(st, 0);
            snprintf(out->host, sizeof(out->host), "%s", qcol_text(st, 1));
            out->ended = (uint8_t)qcol_i64(st, 2);
            rc = SDB_DONE;
        }
    }
    sdb_finalize(st);
    st = NULL;
    if (rc == SDB_DONE && out->ended) {
        rc = sdb_prepare(db,
                         "SELECT st, min(seq) FROM lines WHERE sess=? AND"
                         " type=? GROUP BY st",
                         &st);
        if (rc == 0) {
            qbind_i64(st, 1, id);
            qbind_i64(st, 2, EV_SESSION_END);
            while ((rc = sdb_step(st)) == SDB_ROW) {
                int64_t k = qcol_i64(st, 0);
                if (k >= 0 && k < SRV_ST_N)
                    out->end_seq[k] = (uint64_t)qcol_i64(st, 1);
            }
        }
        sdb_finalize(st);
    }
    sq_reader_put(s, db);
    return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}
