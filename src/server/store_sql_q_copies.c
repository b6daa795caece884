/*
 * store_sql_q_copies.c - a session's memory operations (memcpy, memset,
 * sync, alloc, free): a keyset-paginated page in time order, and their
 * totals by type and direction over the range, with the bandwidth of
 * copies.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <string.h>

#include "srv_json.h"
#include "store_sql_q.h"

static const char *const op_names[] = { "memcpy", "memset", "sync", "alloc",
                                        "free" };

static int op_type(const char *kind)
{
    for (int i = 0; i < 5; i++)
        if (strcmp(kind, op_names[i]) == 0)
            return EV_MEMCPY + i;
    return -1;
}

int srv_store_q_copies(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    int64_t cur[2] = { INT64_MIN, -1 }, last[2] = { 0, 0 };
    uint32_t n = 0, l = q_limit(q);
    int type = q->kind ? op_type(q->kind) : 0, rc;

    if (type < 0)
        return GPUFL_EINVAL;
    q_begin(s, &c);
    if ((rc = q_session(&c, q->sid)) != 0)
        return q_end(&c, rc, w);
    if (q_cursor(q, cur, 2) < 0)
        return q_end(&c, GPUFL_EINVAL, w);
    if (cur[0] < (int64_t)q->from) {
        cur[0] = (int64_t)q->from; /* one bound on the index key */
        cur[1] = -1;
    }
    rc = q_prepare(&c,
                   "SELECT seq, type, ts, dur, dev, stream, corr, kind, bytes,"
                   " scope, flags FROM ops WHERE sess=?1 AND ts >= ?2 AND"
                   " ts < ?3 AND (ts, seq) > (?4, ?5) AND"
                   " (?6 = 0 OR type = ?6) ORDER BY ts, seq LIMIT ?7");
    if (rc)
        return q_end(&c, rc, w);
    qbind_i64(c.st, 1, c.sess);
    qbind_i64(c.st, 2, (int64_t)q->from);
    qbind_i64(c.st, 3, q->to ? (int64_t)q->to : INT64_MAX);
    qbind_i64(c.st, 4, cur[0]);
    qbind_i64(c.st, 5, cur[1]);
    qbind_i64(c.st, 6, type);
    qbind_i64(c.st, 7, l + 1);
    jw_obj_begin(w);
    jw_key(w, "items");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW && n < l) {
        int t = (int)qcol_i64(c.st, 1) - EV_MEMCPY;
        jw_obj_begin(w);
        srv_jw_kv_num(w, "seq", qcol_i64(c.st, 0));
        jw_kv_str(w, "type", t >= 0 && t < 5 ? op_names[t] : "?");
        srv_jw_kv_dec(w, "ts", qcol_i64(c.st, 2));
        srv_jw_kv_dec(w, "dur", qcol_i64(c.st, 3));
        srv_jw_kv_num(w, "dev", qcol_i64(c.st, 4));
        srv_jw_kv_num(w, "stream", qcol_i64(c.st, 5));
        srv_jw_kv_num(w, "corr", qcol_i64(c.st, 6));
        if (!qcol_null(c.st, 7))
            jw_kv_str(w, "kind", qcol_text(c.st, 7));
        srv_jw_kv_dec(w, "bytes", qcol_i64(c.st, 8));
        srv_jw_kv_num(w, "scope", qcol_i64(c.st, 9));
        srv_jw_kv_num(w, "flags", qcol_i64(c.st, 10));
        jw_obj_end(w);
        last[0] = qcol_i64(c.st, 2);
        last[1] = qcol_i64(c.st, 0);
        n++;
    }
    jw_arr_end(w);
    q_next(w, rc == SDB_ROW, last, 2);
    if (rc != SDB_ROW && rc != SDB_DONE)
        return q_end(&c, sq_err(rc), w);
    /* aggregates by type and direction over the whole range */
    rc = q_prepare(&c,
                   "SELECT type, coalesce(kind, ''), count(*), sum(bytes),"
                   " sum(dur) FROM ops WHERE sess=?1 AND ts >= ?2 AND ts < ?3"
                   " GROUP BY type, kind ORDER BY type, kind");
    if (rc)
        return q_end(&c, rc, w);
    qbind_i64(c.st, 1, c.sess);
    qbind_i64(c.st, 2, (int64_t)q->from);
    qbind_i64(c.st, 3, q->to ? (int64_t)q->to : INT64_MAX);
    jw_key(w, "aggregate");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW) {
        int t = (int)qcol_i64(c.st, 0) - EV_MEMCPY;
        int64_t bytes = qcol_i64(c.st, 3), dur = qcol_i64(c.st, 4);
        jw_obj_begin(w);
        jw_kv_str(w, "type", t >= 0 && t < 5 ? op_names[t] : "?");
        jw_kv_str(w, "kind", qcol_text(c.st, 1));
        srv_jw_kv_num(w, "count", qcol_i64(c.st, 2));
        srv_jw_kv_dec(w, "bytes", bytes);
        srv_jw_kv_dec(w, "dur_ns", dur);
        jw_key(w, "gbps"); /* bytes per ns = GB/s */
        if (dur > 0 && t == 0)
            jw_f64(w, (double)bytes / (double)dur, 3);
        else
            jw_null(w);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_obj_end(w);
    return q_end(&c, rc == SDB_DONE ? 0 : sq_err(rc), w);
}
