/*
 * store_sql_memoom.c - OOM reports from `gpufl memprof --oom`
 * (docs/memprof.md "OOM forensics"): one row per report in memooms, the
 * report kept as the text api_memoom.c rewrote it into (what GET answers)
 * beside the columns the list shows and filters on, and the queries
 * behind GET /api/v1/memory/ooms and /api/v1/memory/ooms/{id}.  Linked to
 * a session as memory profiles are (sq_mem_link); retention removes them
 * with memory profiles (store_sql_admin.c).  The same SQL on SQLite and
 * PostgreSQL (db.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpufl/gpufl.h>

#include "srv_json.h"
#include "store_sql_int.h"
#include "store_sql_q.h"

static int put(srv_store *s, const srv_memoom *p, int64_t *id, char *sid,
               size_t cap)
{
    sdb_stmt *st = NULL;
    int64_t sess;
    int rc =
        sq_mem_link(s, p->sid, p->host, p->pid, p->ts, p->ts, &sess, sid, cap);
    if (rc)
        return rc;
    if (sdb_prepare(s->w,
                    "INSERT INTO memooms(host, pid, comm, sess, sid, ts, api,"
                    " bytes, dev, dev_source, free_bytes, total_bytes,"
                    " live_bytes, source, simulated, body, received)"
                    " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " RETURNING id",
                    &st))
        return GPUFL_EINTERNAL;
    sq_mem_bind_owner(st, p->host, p->pid, p->comm, sess, sid);
    qbind_i64(st, 6, (int64_t)p->ts);
    qbind_str(st, 7, p->api);
    qbind_i64(st, 8, (int64_t)p->bytes);
    if (p->dev >= 0)
        qbind_i64(st, 9, p->dev);
    else
        qbind_null(st, 9);
    qbind_str(st, 10, p->dev_source);
    if (p->have_mem) {
        qbind_i64(st, 11, (int64_t)p->free_bytes);
        qbind_i64(st, 12, (int64_t)p->total_bytes);
    } else {
        qbind_null(st, 11);
        qbind_null(st, 12);
    }
    qbind_i64(st, 13, (int64_t)p->live_bytes);
    qbind_str(st, 14, p->source);
    qbind_i64(st, 15, p->simulated);
    qbind_str(st, 16, (srv_str){ p->body, p->body_len });
    qbind_i64(st, 17, (int64_t)time(NULL) * 1000000000LL);
    rc = sdb_step(st);
    if (rc == SDB_ROW)
        *id = qcol_i64(st, 0);
    sdb_finalize(st);
    if (rc != SDB_ROW)
        return rc == SDB_DONE ? GPUFL_EINTERNAL : sdb_err(rc);
    return GPUFL_OK;
}

typedef struct put_args {
    const srv_memoom *p;
    int64_t *id;
    char *sid;
    size_t cap;
} put_args;

static int put_tx(srv_store *s, void *arg)
{
    put_args *a = arg;
    return put(s, a->p, a->id, a->sid, a->cap);
}

int srv_store_memoom_put(srv_store *s, const srv_memoom *p, int64_t *id,
                         char *sid, size_t sid_cap)
{
    put_args a = { p, id, sid, sid_cap };
    return sq_write_tx(s, put_tx, &a);
}

/* a nullable integer column as a decimal string or null */
static void kv_dec_col(jw *w, const char *key, sdb_stmt *st, int c)
{
    if (qcol_null(st, c)) {
        jw_key(w, key);
        jw_null(w);
    } else {
        srv_jw_kv_dec(w, key, qcol_i64(st, c));
    }
}

static void kv_text_col(jw *w, const char *key, sdb_stmt *st, int c)
{
    jw_key(w, key);
    if (qcol_null(st, c))
        jw_null(w);
    else
        jw_str(w, qcol_text(st, c));
}

int srv_store_q_memooms(srv_store *s, const srv_memq *q, jw *w)
{
    char wh[256], sql[1024];
    qctx c;
    int64_t cur = 0;
    uint32_t l = q->limit == 0             ? SQ_LIMIT_DEFAULT
                 : q->limit > SQ_LIMIT_MAX ? SQ_LIMIT_MAX
                                           : q->limit,
             n = 0;
    int rc, has_cur = 0, i = 0;
    size_t k;

    q_begin(s, &c);
    if (q->cursor) {
        if (srv_cursor_decode(q->cursor, &cur, 1))
            return q_end(&c, GPUFL_EINVAL, w);
        has_cur = 1;
    }
    k = (size_t)snprintf(wh, sizeof(wh), "1=1");
#define ADD(x) k += (size_t)snprintf(wh + k, sizeof(wh) - k, "%s", x)
    if (q->sid)
        ADD(" AND sid=?");
    if (q->host)
        ADD(" AND host=?");
    if (q->pid)
        ADD(" AND pid=?");
    if (q->from)
        ADD(" AND ts>=?");
    if (q->to)
        ADD(" AND ts<?");
    if (has_cur)
        ADD(" AND id<?");
#undef ADD
    snprintf(sql, sizeof(sql),
             "SELECT id, host, pid, comm, sid, ts, api, bytes, dev,"
             " dev_source, free_bytes, total_bytes, live_bytes, source,"
             " simulated FROM memooms WHERE %s ORDER BY id DESC LIMIT ?",
             wh);
    if ((rc = q_prepare(&c, sql)))
        return q_end(&c, rc, w);
    if (q->sid)
        qbind_text(c.st, ++i, q->sid);
    if (q->host)
        qbind_text(c.st, ++i, q->host);
    if (q->pid)
        qbind_i64(c.st, ++i, (int64_t)q->pid);
    if (q->from)
        qbind_i64(c.st, ++i, (int64_t)q->from);
    if (q->to)
        qbind_i64(c.st, ++i, (int64_t)q->to);
    if (has_cur)
        qbind_i64(c.st, ++i, cur);
    qbind_i64(c.st, ++i, (int64_t)l + 1);
    jw_obj_begin(w);
    jw_key(w, "items");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW && n < l) {
        jw_obj_begin(w);
        jw_kv_i64(w, "id", qcol_i64(c.st, 0));
        jw_kv_str(w, "host", qcol_text(c.st, 1));
        srv_jw_kv_num(w, "pid", qcol_i64(c.st, 2));
        kv_text_col(w, "comm", c.st, 3);
        kv_text_col(w, "sid", c.st, 4);
        srv_jw_kv_dec(w, "ts", qcol_i64(c.st, 5));
        jw_kv_str(w, "api", qcol_text(c.st, 6));
        srv_jw_kv_dec(w, "bytes", qcol_i64(c.st, 7));
        jw_key(w, "device");
        if (qcol_null(c.st, 8))
            jw_null(w);
        else
            srv_jw_num(w, qcol_i64(c.st, 8));
        jw_kv_str(w, "device_source", qcol_text(c.st, 9));
        kv_dec_col(w, "free_bytes", c.st, 10);
        kv_dec_col(w, "total_bytes", c.st, 11);
        srv_jw_kv_dec(w, "live_bytes", qcol_i64(c.st, 12));
        jw_kv_str(w, "source", qcol_text(c.st, 13));
        jw_key(w, "simulated");
        jw_bool(w, qcol_i64(c.st, 14) != 0);
        jw_obj_end(w);
        cur = qcol_i64(c.st, 0);
        n++;
    }
    jw_arr_end(w);
    q_next(w, rc == SDB_ROW, &cur, 1);
    jw_obj_end(w);
    return q_end(&c, rc == SDB_ROW || rc == SDB_DONE ? 0 : sq_err(rc), w);
}

int srv_store_q_memoom(srv_store *s, int64_t id, jw *w)
{
    qctx c;
    int rc;

    q_begin(s, &c);
    if ((rc = q_prepare(&c, "SELECT id, sid, received, body FROM memooms"
                            " WHERE id=?")))
        return q_end(&c, rc, w);
    qbind_i64(c.st, 1, id);
    rc = sdb_step(c.st);
    if (rc != SDB_ROW)
        return q_end(&c, rc == SDB_DONE ? GPUFL_ENOTFOUND : sq_err(rc), w);
    jw_obj_begin(w);
    jw_kv_i64(w, "id", qcol_i64(c.st, 0));
    kv_text_col(w, "sid", c.st, 1);
    srv_jw_kv_dec(w, "received", qcol_i64(c.st, 2));
    jw_key(w, "report");
    /* stored as api_memoom.c wrote it: valid JSON in the answer's form */
    const char *body = qcol_text(c.st, 3);
    jw_raw(w, body, strlen(body));
    jw_obj_end(w);
    return q_end(&c, 0, w);
}
