/*
 * store_sql_capture.c - capture requests (docs/api.md "Capture
 * requests"): an admin's request for a host's processes waits in table
 * captures (pending) until that host's agent claims it (delivered), then
 * holds the agent's outcome (done or failed).  A claim is a lease: an
 * agent that dies after claiming leaves no outcome, and the request goes
 * back to pending for the next claim, a bounded number of times.  Time moves a request on
 * lazily: every call first expires what waited too long, so no timer
 * thread is needed and every answer is current.  The same SQL on SQLite
 * and PostgreSQL (db.h); all writes go through the writer connection.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpufl/gpufl.h>

#include "store_sql_int.h"

#define CAP_COLS                                                               \
    "id, host, pid, action, for_ms, note, state, created, expires,"            \
    " delivered, finished, reason, result, attempts"
#define CAP_PAGE 100
#define CAP_PAGE_MAX 1000

/* Moves on what waited too long, in this order: claims past their lease
 * fail when they were the last attempt or the request's expiry passed,
 * the others go back to pending (handed out again); pending requests
 * past their expiry expire; what finished long ago is forgotten.  Under
 * the writer lock.  Times are whole seconds, so the comparisons are
 * strict: a claim at 10.99 s is stored as 10, and "<=" would end a 1 s
 * lease at 11.0 s, 10 ms after it began (a CI run saw it). */
static int sweep(srv_store *s, int64_t now, const srv_captimes *t)
{
    enum { NSQL = 5 };
    sdb_stmt *st = NULL;
    char why[4][200];
    static const char *const sql[NSQL] = {
        "UPDATE captures SET state='failed', finished=?1, reason=?2"
        " WHERE state='delivered' AND delivered < ?1 - ?3 AND attempts >= ?4",
        "UPDATE captures SET state='failed', finished=?1, reason=?2"
        " WHERE state='delivered' AND delivered < ?1 - ?3 AND expires < ?1",
        "UPDATE captures SET state='pending', reason=?2"
        " WHERE state='delivered' AND delivered < ?1 - ?3",
        "UPDATE captures SET state='expired', finished=?1,"
        " reason=CASE WHEN attempts > 0 THEN ?3 ELSE ?2 END"
        " WHERE state='pending' AND expires < ?1",
        "DELETE FROM captures WHERE finished IS NOT NULL AND finished < ?1 - "
        "?3",
    };
    int rc = 0;

    snprintf(why[0], sizeof why[0],
             "handed out %u times; no agent reported an outcome within "
             "%llu s of picking it up",
             (unsigned)t->attempts, (unsigned long long)t->lease_s);
    snprintf(why[1], sizeof why[1],
             "the agent picked it up but reported no outcome within %llu s,"
             " and the request's %llu s expiry passed",
             (unsigned long long)t->lease_s, (unsigned long long)t->expiry_s);
    snprintf(why[2], sizeof why[2],
             "handed out again: the agent that picked it up reported no "
             "outcome within %llu s",
             (unsigned long long)t->lease_s);
    snprintf(why[3], sizeof why[3],
             "no agent of the host picked it up within %llu s",
             (unsigned long long)t->expiry_s);
    for (int i = 0; i < NSQL && !rc; i++) {
        rc = sdb_prepare(s->w, sql[i], &st);
        if (rc)
            break;
        qbind_i64(st, 1, now);
        if (i < 3) {
            qbind_text(st, 2, why[i]);
            qbind_i64(st, 3, (int64_t)t->lease_s);
        }
        if (i == 0)
            qbind_i64(st, 4, (int64_t)t->attempts);
        if (i == 3) {
            qbind_text(st, 2, why[3]);
            /* one handed out before, then no agent came back for it */
            qbind_text(st, 3,
                       "its agent reported no outcome, and no agent"
                       " of the host picked it up again before it"
                       " expired");
        }
        if (i == 4)
            qbind_i64(st, 3, SRV_CAPTURE_KEEP_S);
        rc = sdb_step(st);
        rc = rc == SDB_DONE ? 0 : rc;
        sdb_finalize(st);
        st = NULL;
    }
    return rc ? sq_err(rc) : GPUFL_OK;
}

/* One row (CAP_COLS) as the API shows it. */
static void row_json(sdb_stmt *st, jw *w)
{
    static const char *const opt_i[] = { "delivered", "finished" };
    jw_obj_begin(w);
    jw_kv_i64(w, "id", qcol_i64(st, 0));
    jw_kv_str(w, "host", qcol_text(st, 1));
    jw_key(w, "pid");
    if (qcol_null(st, 2))
        jw_null(w);
    else
        jw_i64(w, qcol_i64(st, 2));
    jw_kv_str(w, "action", qcol_text(st, 3));
    jw_key(w, "for_ms");
    if (qcol_i64(st, 4))
        jw_i64(w, qcol_i64(st, 4));
    else
        jw_null(w);
    jw_key(w, "note");
    if (qcol_null(st, 5))
        jw_null(w);
    else
        jw_str(w, qcol_text(st, 5));
    jw_kv_str(w, "state", qcol_text(st, 6));
    jw_kv_i64(w, "created", qcol_i64(st, 7));
    jw_kv_i64(w, "expires", qcol_i64(st, 8));
    for (int i = 0; i < 2; i++) {
        jw_key(w, opt_i[i]);
        if (qcol_null(st, 9 + i))
            jw_null(w);
        else
            jw_i64(w, qcol_i64(st, 9 + i));
    }
    jw_key(w, "reason");
    if (qcol_null(st, 11))
        jw_null(w);
    else
        jw_str(w, qcol_text(st, 11));
    /* stored only after api_capture.c checked it is a JSON array */
    jw_key(w, "processes");
    if (qcol_null(st, 12))
        jw_null(w);
    else
        jw_raw(w, qcol_text(st, 12), strlen(qcol_text(st, 12)));
    jw_kv_i64(w, "attempts", qcol_i64(st, 13));
    jw_obj_end(w);
}

int srv_store_capture_add(srv_store *s, const srv_capture *c,
                          const srv_captimes *t, int64_t *id)
{
    sdb_stmt *st = NULL;
    int64_t now = (int64_t)time(NULL), pending = 0;
    int rc;

    pthread_mutex_lock(&s->wlock);
    rc = sweep(s, now, t);
    if (rc)
        goto out;
    rc = sdb_prepare(s->w,
                     "SELECT count(*) FROM captures WHERE host=? AND"
                     " state='pending'",
                     &st);
    if (rc)
        goto out_db;
    qbind_text(st, 1, c->host);
    rc = sdb_step(st);
    if (rc != SDB_ROW)
        goto out_db;
    pending = qcol_i64(st, 0);
    sdb_finalize(st);
    st = NULL;
    if (pending >= SRV_CAPTURE_PENDING_MAX) {
        rc = GPUFL_EAGAIN;
        goto out;
    }
    rc = sdb_prepare(s->w,
                     "INSERT INTO captures(host, pid, action, for_ms, note,"
                     " state, created, expires) VALUES(?,?,?,?,?,"
                     "'pending',?,?) RETURNING id",
                     &st);
    if (rc)
        goto out_db;
    qbind_text(st, 1, c->host);
    if (c->pid)
        qbind_i64(st, 2, c->pid);
    else
        qbind_null(st, 2);
    qbind_text(st, 3, c->action);
    qbind_u64(st, 4, c->for_ms);
    qbind_text(st, 5, c->note);
    qbind_i64(st, 6, now);
    qbind_i64(st, 7, now + (int64_t)t->expiry_s);
    rc = sdb_step(st);
    if (rc != SDB_ROW)
        goto out_db;
    *id = qcol_i64(st, 0);
    rc = GPUFL_OK;
    goto out;
out_db:
    rc = rc == SDB_DONE ? GPUFL_EINTERNAL : sq_err(rc);
out:
    sdb_finalize(st);
    pthread_mutex_unlock(&s->wlock);
    return rc;
}

int srv_store_capture_claim(srv_store *s, const char *host,
                            const srv_captimes *t, jw *w)
{
    sdb_stmt *st = NULL;
    int64_t now = (int64_t)time(NULL);
    int rc;

    pthread_mutex_lock(&s->wlock);
    rc = sweep(s, now, t);
    if (rc)
        goto out;
    /* one statement: two pollers of one host never both get a request */
    rc = sdb_prepare(s->w,
                     "UPDATE captures SET state='delivered', delivered=?1,"
                     " attempts=attempts+1 WHERE host=?2 AND state='pending' "
                     "RETURNING " CAP_COLS,
                     &st);
    if (rc) {
        rc = sq_err(rc);
        goto out;
    }
    qbind_i64(st, 1, now);
    qbind_text(st, 2, host);
    jw_obj_begin(w);
    jw_key(w, "items");
    jw_arr_begin(w);
    while ((rc = sdb_step(st)) == SDB_ROW)
        row_json(st, w);
    jw_arr_end(w);
    jw_obj_end(w);
    rc = rc == SDB_DONE ? (w->err ? GPUFL_ETOOBIG : GPUFL_OK) : sq_err(rc);
out:
    sdb_finalize(st);
    pthread_mutex_unlock(&s->wlock);
    return rc;
}

int srv_store_capture_result(srv_store *s, const char *host, int64_t id, int ok,
                             const char *reason, const char *result_json,
                             const srv_captimes *t)
{
    sdb_stmt *st = NULL;
    int64_t now = (int64_t)time(NULL);
    int rc, changed = 0;

    pthread_mutex_lock(&s->wlock);
    rc = sweep(s, now, t);
    if (rc)
        goto out;
    rc = sdb_prepare(s->w,
                     "UPDATE captures SET state=?1, finished=?2, reason=?3,"
                     " result=?4 WHERE id=?5 AND host=?6 AND"
                     " (state='delivered' OR (state='pending' AND"
                     " attempts > 0))",
                     &st);
    if (rc) {
        rc = sq_err(rc);
        goto out;
    }
    qbind_text(st, 1, ok ? "done" : "failed");
    qbind_i64(st, 2, now);
    qbind_text(st, 3, reason && *reason ? reason : NULL);
    qbind_text(st, 4, result_json);
    qbind_i64(st, 5, id);
    qbind_text(st, 6, host);
    rc = sdb_step(st);
    changed = (int)sdb_changes(s->w);
    sdb_finalize(st);
    st = NULL;
    if (rc != SDB_DONE) {
        rc = sq_err(rc);
        goto out;
    }
    rc = GPUFL_OK;
    if (changed)
        goto out;
    /* why not: no such request of this host, or not waiting for one */
    rc = sdb_prepare(s->w, "SELECT state FROM captures WHERE id=? AND host=?",
                     &st);
    if (rc) {
        rc = sq_err(rc);
        goto out;
    }
    qbind_i64(st, 1, id);
    qbind_text(st, 2, host);
    rc = sdb_step(st);
    rc = rc == SDB_ROW    ? GPUFL_ECONFLICT
         : rc == SDB_DONE ? GPUFL_ENOTFOUND
                          : sq_err(rc);
out:
    sdb_finalize(st);
    pthread_mutex_unlock(&s->wlock);
    return rc;
}

/* The rows of a SELECT into w: an object (one row, single) or
 * {"items":[...],"next":...} (a page of limit). */
static int list(srv_store *s, const srv_capq *q, int64_t one,
                const srv_captimes *t, jw *w)
{
    sdb_stmt *st = NULL;
    int64_t now = (int64_t)time(NULL), last = 0;
    uint32_t limit = q ? (q->limit ? q->limit : CAP_PAGE) : 1, n = 0;
    char sql[512];
    int rc, i = 1;

    if (limit > CAP_PAGE_MAX)
        limit = CAP_PAGE_MAX;
    pthread_mutex_lock(&s->wlock);
    rc = sweep(s, now, t);
    pthread_mutex_unlock(&s->wlock);
    if (rc)
        return rc;
    sdb *db = sq_reader_get(s);
    if (one)
        snprintf(sql, sizeof sql,
                 "SELECT " CAP_COLS " FROM captures"
                 " WHERE id=?");
    else
        snprintf(sql, sizeof sql,
                 "SELECT " CAP_COLS " FROM captures WHERE id < ?%s%s"
                 " ORDER BY id DESC LIMIT ?",
                 q->host ? " AND host=?" : "", q->state ? " AND state=?" : "");
    rc = sdb_prepare(db, sql, &st);
    if (rc) {
        rc = sq_err(rc);
        goto out;
    }
    if (one) {
        qbind_i64(st, i++, one);
    } else {
        qbind_i64(st, i++, q->before ? q->before : INT64_MAX);
        if (q->host)
            qbind_text(st, i++, q->host);
        if (q->state)
            qbind_text(st, i++, q->state);
        qbind_i64(st, i++, (int64_t)limit + 1);
        jw_obj_begin(w);
        jw_key(w, "items");
        jw_arr_begin(w);
    }
    while ((rc = sdb_step(st)) == SDB_ROW) {
        if (one) {
            row_json(st, w);
            n++;
            continue;
        }
        if (n == limit) { /* one more than asked: a next page exists */
            n++;
            break;
        }
        last = qcol_i64(st, 0);
        row_json(st, w);
        n++;
    }
    if (rc != SDB_ROW && rc != SDB_DONE) {
        rc = sq_err(rc);
        goto out;
    }
    if (one) {
        rc = n ? GPUFL_OK : GPUFL_ENOTFOUND;
        goto out;
    }
    jw_arr_end(w);
    jw_key(w, "next");
    if (n > limit) {
        char c[SRV_CURSOR_MAX];
        srv_cursor_encode(&last, 1, c, sizeof c);
        jw_str(w, c);
    } else {
        jw_null(w);
    }
    jw_obj_end(w);
    rc = GPUFL_OK;
out:
    sdb_finalize(st);
    sq_reader_put(s, db);
    return rc == GPUFL_OK && w->err ? GPUFL_ETOOBIG : rc;
}

int srv_store_capture_get(srv_store *s, int64_t id, const srv_captimes *t,
                          jw *w)
{
    return list(s, NULL, id, t, w);
}

int srv_store_q_captures(srv_store *s, const srv_capq *q, const srv_captimes *t,
                         jw *w)
{
    return list(s, q, 0, t, w);
}
