/*
 * store_sql_q_sessions.c - the lists a user starts from: hosts, sessions
 * (filtered, newest first), and one session with its header, counts and
 * what is missing of it.
 *
 * Sessions are keyset-paginated (the cursor holds the last row's start
 * and id), so a page costs the same at any depth.  Hosts page by offset:
 * their key is a name, the list has one row per host, and its order
 * (by name) does not move when sessions arrive.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv_json.h"
#include "store_sql_q.h"

int srv_store_q_hosts(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    int64_t off = 0;
    uint32_t n = 0, l = q_limit(q);
    int rc;

    q_begin(s, &c);
    if (q_cursor(q, &off, 1) < 0)
        return q_end(&c, GPUFL_EINVAL, w);
    rc =
        q_prepare(&c, sdb_dialect(c.db) == SDB_POSTGRES
                          ? "SELECT host, count(*), max(start_ns),"
                            " string_agg(DISTINCT app, ',') FROM sessions WHERE"
                            " host IS NOT NULL GROUP BY host ORDER BY host"
                            " LIMIT ? OFFSET ?"
                          : "SELECT host, count(*), max(start_ns),"
                            " group_concat(DISTINCT app) FROM sessions WHERE"
                            " host IS NOT NULL GROUP BY host ORDER BY host"
                            " LIMIT ? OFFSET ?");
    if (rc)
        return q_end(&c, rc, w);
    qbind_i64(c.st, 1, l + 1);
    qbind_i64(c.st, 2, off);
    jw_obj_begin(w);
    jw_key(w, "items");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW && n < l) {
        jw_obj_begin(w);
        jw_kv_str(w, "host", qcol_text(c.st, 0));
        jw_kv_i64(w, "sessions", qcol_i64(c.st, 1));
        srv_jw_kv_dec(w, "last_start_ns", qcol_i64(c.st, 2));
        jw_kv_str(w, "apps", qcol_text(c.st, 3));
        jw_obj_end(w);
        n++;
    }
    jw_arr_end(w);
    off += n;
    q_next(w, rc == SDB_ROW, &off, 1);
    jw_obj_end(w);
    return q_end(&c, rc == SDB_ROW || rc == SDB_DONE ? 0 : sq_err(rc), w);
}

static void w_session_row(qctx *c, jw *w)
{
    jw_kv_str(w, "id", qcol_text(c->st, 0));
    jw_kv_str(w, "app", qcol_text(c->st, 1));
    jw_kv_str(w, "host", qcol_text(c->st, 2));
    srv_jw_kv_num(w, "pid", qcol_i64(c->st, 3));
    srv_jw_kv_dec(w, "start_ns", qcol_i64(c->st, 4));
    jw_kv_str(w, "state", qcol_text(c->st, 5));
    if (!qcol_null(c->st, 6))
        jw_kv_str(w, "end_reason", qcol_text(c->st, 6));
    srv_jw_kv_dec(w, "first_ts", qcol_i64(c->st, 7));
    srv_jw_kv_dec(w, "last_ts", qcol_i64(c->st, 8));
    jw_kv_i64(w, "last_seen", qcol_i64(c->st, 9));
    jw_key(w, "keep");
    jw_bool(w, qcol_i64(c->st, 10) != 0);
    jw_key(w, "simulated");
    jw_bool(w, qcol_i64(c->st, 11) != 0);
    jw_key(w, "counts");
    jw_obj_begin(w);
    jw_kv_i64(w, "lines", qcol_i64(c->st, 12));
    jw_kv_i64(w, "kernels", qcol_i64(c->st, 13));
    jw_kv_i64(w, "ops", qcol_i64(c->st, 14));
    jw_kv_i64(w, "scopes", qcol_i64(c->st, 15));
    jw_kv_i64(w, "samples", qcol_i64(c->st, 16));
    jw_kv_i64(w, "profile", qcol_i64(c->st, 17));
    jw_obj_end(w);
    /* a session ends when all its streams have: those that have so far */
    jw_key(w, "streams_ended");
    jw_arr_begin(w);
    for (int st = 0; st < SRV_ST_N; st++)
        if (qcol_i64(c->st, 20) & (1 << st))
            jw_str(w, ingest_stream_name(st));
    jw_arr_end(w);
    /* the job fields (docs/api.md "Jobs"): omitted when unknown */
    if (!qcol_null(c->st, 21))
        jw_kv_str(w, "job", qcol_text(c->st, 21));
    if (!qcol_null(c->st, 22))
        srv_jw_kv_num(w, "rank", qcol_i64(c->st, 22));
    if (!qcol_null(c->st, 23))
        srv_jw_kv_num(w, "world_size", qcol_i64(c->st, 23));
    if (!qcol_null(c->st, 24))
        srv_jw_kv_num(w, "local_rank", qcol_i64(c->st, 24));
    if (!qcol_null(c->st, 25))
        jw_kv_str(w, "job_source", qcol_text(c->st, 25));
    if (!qcol_null(c->st, 26))
        jw_kv_str(w, "step_scope", qcol_text(c->st, 26));
    if (!qcol_null(c->st, 27))
        jw_kv_str(w, "sim_perturb", qcol_text(c->st, 27));
}

/* The session line's record mode and dump number (libgpufl's flight
 * recorder), when it has them. */
static void w_record(jw *w, const char *hdr)
{
    sq_raw_member(w, hdr, "record");
    sq_raw_member(w, hdr, "dump");
}

#define SESS_COLS                                                              \
    "sid, coalesce(app, ''), coalesce(host, ''), coalesce(pid, 0),"            \
    " coalesce(start_ns, 0), state, end_reason, coalesce(first_ts, 0),"        \
    " coalesce(last_ts, 0), coalesce(last_seen, 0), keep,"                     \
    " coalesce(simulated, 0), n_lines, n_kernels, n_ops, n_scopes,"            \
    " n_samples, n_profile, id, header, ended, job, rank, world_size,"         \
    " local_rank, job_source, step_scope, sim_perturb"

int srv_store_q_sessions(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    int64_t cur[2] = { INT64_MAX, INT64_MAX }, last[2] = { 0, 0 };
    uint32_t n = 0, l = q_limit(q);
    char pat[600];
    int rc;

    q_begin(s, &c);
    if (q_cursor(q, cur, 2) < 0)
        return q_end(&c, GPUFL_EINVAL, w);
    rc = q_prepare(
        &c, "SELECT " SESS_COLS ", " SQ_MISSING_COL ", " SQ_TRIGGER_COLS
            " FROM sessions"
            " WHERE (coalesce(start_ns, 0) < ?1 OR (coalesce(start_ns, 0) = ?1"
            " AND id < ?2))"
            " AND (CAST(?3 AS TEXT) IS NULL OR host = ?3)"
            " AND (CAST(?4 AS TEXT) IS NULL OR app = ?4)"
            " AND (CAST(?5 AS TEXT) IS NULL OR state = ?5)"
            " AND (CAST(?6 AS BIGINT) IS NULL OR"
            " coalesce(last_ts, start_ns, 0) >= ?6)"
            " AND (CAST(?7 AS BIGINT) IS NULL OR"
            " coalesce(start_ns, first_ts, 0) <= ?7)"
            " AND (CAST(?8 AS TEXT) IS NULL OR app LIKE ?8 ESCAPE '\\'"
            " OR host LIKE ?8 ESCAPE '\\' OR sid LIKE ?8 ESCAPE '\\')"
            " AND (CAST(?10 AS TEXT) IS NULL OR job = ?10)"
            " ORDER BY coalesce(start_ns, 0) DESC, id DESC LIMIT ?9");
    if (rc)
        return q_end(&c, rc, w);
    qbind_i64(c.st, 1, cur[0]);
    qbind_i64(c.st, 2, cur[1]);
    if (q->host)
        qbind_text(c.st, 3, q->host);
    if (q->app)
        qbind_text(c.st, 4, q->app);
    if (q->state)
        qbind_text(c.st, 5, q->state);
    if (q->from)
        qbind_i64(c.st, 6, (int64_t)q->from);
    if (q->to)
        qbind_i64(c.st, 7, (int64_t)q->to);
    if (q->search) {
        sq_like_pat(q->search, pat, sizeof(pat));
        qbind_text(c.st, 8, pat);
    }
    qbind_i64(c.st, 9, l + 1);
    if (q->job)
        qbind_text(c.st, 10, q->job);
    jw_obj_begin(w);
    jw_key(w, "items");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW && n < l) {
        jw_obj_begin(w);
        w_session_row(&c, w);
        srv_jw_kv_num(w, "missing", qcol_i64(c.st, 28));
        /* a flight-recorder dump: its mode, number and what fired */
        w_record(w, qcol_null(c.st, 19) ? NULL : qcol_text(c.st, 19));
        sq_trigger_summary(w, qcol_i64(c.st, 29),
                           qcol_null(c.st, 30) ? NULL : qcol_text(c.st, 30));
        jw_obj_end(w);
        last[0] = qcol_i64(c.st, 4);
        last[1] = qcol_i64(c.st, 18);
        n++;
    }
    jw_arr_end(w);
    q_next(w, rc == SDB_ROW, last, 2);
    jw_obj_end(w);
    return q_end(&c, rc == SDB_ROW || rc == SDB_DONE ? 0 : sq_err(rc), w);
}

int srv_store_q_session(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    int rc;
    int64_t sess;
    char *hdr = NULL;

    q_begin(s, &c);
    rc = q_prepare(&c, "SELECT " SESS_COLS ", " SQ_TRIGGER_COLS
                       " FROM sessions WHERE sid=?");
    if (rc)
        return q_end(&c, rc, w);
    qbind_text(c.st, 1, q->sid);
    rc = sdb_step(c.st);
    if (rc != SDB_ROW)
        return q_end(&c, rc == SDB_DONE ? GPUFL_ENOTFOUND : sq_err(rc), w);
    jw_obj_begin(w);
    w_session_row(&c, w);
    if (!qcol_null(c.st, 19))
        hdr = strdup(qcol_text(c.st, 19));
    sq_raw_member(w, hdr, "devices");
    sq_raw_member(w, hdr, "engines");
    sq_raw_member(w, hdr, "cmd");
    sq_raw_member(w, hdr, "lib");
    sq_raw_member(w, hdr, "interval_ms");
    /* a flight-recorder dump: its number and the recorder's session id */
    sq_raw_member(w, hdr, "record");
    sq_raw_member(w, hdr, "dump");
    sq_raw_member(w, hdr, "recorder");
    free(hdr);
    sq_trigger_summary(w, qcol_i64(c.st, 28),
                       qcol_null(c.st, 29) ? NULL : qcol_text(c.st, 29));
    sess = qcol_i64(c.st, 18);
    rc = sq_triggers_json(c.db, sess, w);
    if (rc) {
        jw_obj_end(w);
        return q_end(&c, rc, w);
    }
    srv_jw_kv_dec(w, "span_ns",
                  qcol_i64(c.st, 8) > qcol_i64(c.st, 7)
                      ? qcol_i64(c.st, 8) - qcol_i64(c.st, 7)
                      : 0);
    /* slots for the memory-profile and idle-verdict issues */
    jw_key(w, "memprof");
    jw_null(w);
    jw_key(w, "idle");
    jw_null(w);
    rc = sq_gaps_json(c.db, sess, w);
    jw_obj_end(w);
    return q_end(&c, rc, w);
}
