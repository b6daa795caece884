/*
 * store_sql_memprof.c - memory profiles from `gpufl memprof`
 * (docs/memprof.md): one row per POSTed profile in memprofs, one per stack
 * in memsamples (frames kept as the JSON array text they arrived in), and
 * the queries behind GET /api/v1/memory, /sessions/{sid}/memory and
 * /memory/profiles.  The same SQL on SQLite and PostgreSQL (db.h).
 *
 * A profile is linked to a gpufl session by the sid it carries, else by
 * host + pid and time overlap with a stored session.  Views: alloc and
 * fail sum the deltas of every profile in range; inuse takes the latest
 * profile of each (host, pid) in range (each one is a full snapshot).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpufl/gpufl.h>

#include "store_sql_writer_int.h"
#include "srv_json.h"
#include "store_sql_q.h"

#define MEM_STACKS_DEFAULT 5000
#define MEM_STACKS_MAX 20000

/* a + b, at most 2^63 - 1 (as the per-stack sums) */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a + b < a || a + b > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX
                                                    : a + b;
}

static int cursor_of(const char *s, int64_t *v)
{
    if (!s)
        return 0;
    return srv_cursor_decode(s, v, 1) ? -1 : 1;
}

void sq_mem_bind_owner(sdb_stmt *st, srv_str host, uint64_t pid, srv_str comm,
                       int64_t sess, const char *sid)
{
    qbind_str(st, 1, host);
    qbind_i64(st, 2, (int64_t)pid);
    if (comm.p)
        qbind_str(st, 3, comm);
    else
        qbind_null(st, 3);
    if (sess)
        qbind_i64(st, 4, sess);
    else
        qbind_null(st, 4);
    if (sid[0])
        qbind_text(st, 5, sid);
    else
        qbind_null(st, 5);
}

int sq_mem_link(srv_store *s, srv_str psid, srv_str host, uint64_t pid,
                uint64_t start, uint64_t end, int64_t *sess, char *sid,
                size_t cap)
{
    sdb_stmt *st = NULL;
    int rc;
    *sess = 0;
    sid[0] = '\0';
    if (psid.p) {
        if (sdb_prepare(s->w, "SELECT id, sid FROM sessions WHERE sid=?", &st))
            return GPUFL_EINTERNAL;
        qbind_str(st, 1, psid);
    } else {
        if (sdb_prepare(s->w,
                        "SELECT id, sid FROM sessions WHERE host=? AND pid=?"
                        " AND coalesce(first_ts, start_ns, 0) <= ? AND"
                        " coalesce(last_ts, ?) >= ? ORDER BY id DESC LIMIT 1",
                        &st))
            return GPUFL_EINTERNAL;
        qbind_str(st, 1, host);
        qbind_i64(st, 2, (int64_t)pid);
        qbind_i64(st, 3, (int64_t)end);
        qbind_i64(st, 4, (int64_t)end);
        qbind_i64(st, 5, (int64_t)start);
    }
    rc = sdb_step(st);
    if (rc == SDB_ROW) {
        *sess = qcol_i64(st, 0);
        snprintf(sid, cap, "%s", qcol_text(st, 1));
    } else if (psid.p) {
        /* not (yet) stored: keep the process's own word for it */
        snprintf(sid, cap, "%.*s", (int)psid.n, psid.p);
    }
    sdb_finalize(st);
    return sdb_err(rc);
}

static int put(srv_store *s, const srv_memprof *p, int64_t *id, char *sid,
               size_t cap)
{
    sdb_stmt *st = NULL;
    int64_t sess;
    uint64_t alloc = 0, inuse = 0;
    int rc = sq_mem_link(s, p->sid, p->host, p->pid, p->start, p->end, &sess,
                         sid, cap);
    if (rc)
        return rc;
    for (size_t i = 0; i < p->n; i++) {
        alloc += p->stacks[i].v[0];
        inuse += p->stacks[i].v[4];
    }
    if (sdb_prepare(s->w,
                    "INSERT INTO memprofs(host, pid, comm, sess, sid,"
                    " start_ns, end_ns, source, simulated, nstacks,"
                    " alloc_bytes, inuse_bytes, received)"
                    " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " RETURNING id",
                    &st))
        return GPUFL_EINTERNAL;
    sq_mem_bind_owner(st, p->host, p->pid, p->comm, sess, sid);
    qbind_i64(st, 6, (int64_t)p->start);
    qbind_i64(st, 7, (int64_t)p->end);
    qbind_str(st, 8, p->source);
    qbind_i64(st, 9, p->simulated);
    qbind_i64(st, 10, (int64_t)p->n);
    qbind_i64(st, 11, (int64_t)alloc);
    qbind_i64(st, 12, (int64_t)inuse);
    qbind_i64(st, 13, (int64_t)time(NULL) * 1000000000LL);
    rc = sdb_step(st);
    if (rc == SDB_ROW)
        *id = qcol_i64(st, 0);
    sdb_finalize(st);
    if (rc != SDB_ROW)
        return rc == SDB_DONE ? GPUFL_EINTERNAL : sdb_err(rc);
    return p->n ? s->wr->memstacks(s, *id, p) : GPUFL_OK;
}

int sq_write_tx(srv_store *s, int (*fn)(srv_store *, void *), void *arg)
{
    int rc;
    pthread_mutex_lock(&s->wlock);
    rc = sdb_begin(s->w);
    if (!rc)
        rc = fn(s, arg);
    if (!rc)
        rc = sdb_exec(s->w, "COMMIT");
    if (rc)
        sdb_exec(s->w, "ROLLBACK");
    pthread_mutex_unlock(&s->wlock);
    return rc;
}

typedef struct put_args {
    const srv_memprof *p;
    int64_t *id;
    char *sid;
    size_t cap;
} put_args;

static int put_tx(srv_store *s, void *arg)
{
    put_args *a = arg;
    return put(s, a->p, a->id, a->sid, a->cap);
}

int srv_store_memprof_put(srv_store *s, const srv_memprof *p, int64_t *id,
                          char *sid, size_t sid_cap)
{
    put_args a = { p, id, sid, sid_cap };
    return sq_write_tx(s, put_tx, &a);
}

/* The WHERE clause selecting the profiles of a query (alias p) and its
 * parameters, bound by bind_where from index 1. */
static void where(const srv_memq *q, char *out, size_t cap)
{
    size_t k = (size_t)snprintf(out, cap, "1=1");
#define ADD(c) k += (size_t)snprintf(out + k, cap - k, "%s", c)
    if (q->sid)
        ADD(" AND p.sid=?");
    if (q->host)
        ADD(" AND p.host=?");
    if (q->pid)
        ADD(" AND p.pid=?");
    if (q->from)
        ADD(" AND p.end_ns>?");
    if (q->to)
        ADD(" AND p.start_ns<?");
#undef ADD
}

static int bind_where(qctx *c, const srv_memq *q, int i)
{
    if (q->sid)
        qbind_text(c->st, ++i, q->sid);
    if (q->host)
        qbind_text(c->st, ++i, q->host);
    if (q->pid)
        qbind_i64(c->st, ++i, (int64_t)q->pid);
    if (q->from)
        qbind_i64(c->st, ++i, (int64_t)q->from);
    if (q->to)
        qbind_i64(c->st, ++i, (int64_t)q->to);
    return i;
}

int srv_store_q_memory(srv_store *s, const srv_memq *q, jw *w)
{
    static const char *const vname[] = { "alloc", "inuse", "fail" };
    static const char *const col[] = { "alloc", "inuse", "fail" };
    char wh[256], sel[512], sql[2048];
    qctx c;
    int rc, view = q->view >= 0 && q->view <= 2 ? q->view : 0;
    uint32_t lim_ = q->limit == 0               ? MEM_STACKS_DEFAULT
                    : q->limit > MEM_STACKS_MAX ? MEM_STACKS_MAX
                                                : q->limit;
    int64_t nprof = 0, sim = 0;
    char src0[32] = "", src1[32] = "";
    uint64_t tb = 0, tc = 0, n = 0;

    where(q, wh, sizeof(wh));
    /* inuse: each (host, pid)'s latest profile in range */
    if (view == SRV_MEM_INUSE)
        snprintf(sel, sizeof(sel),
                 "p.id IN (SELECT max(p.id) FROM memprofs p WHERE %s"
                 " GROUP BY p.host, p.pid)",
                 wh);
    else
        snprintf(sel, sizeof(sel), "%s", wh);
    q_begin(s, &c);
    if (q->sid) {
        if ((rc = q_prepare(&c, "SELECT 1 FROM sessions WHERE sid=? UNION ALL"
                                " SELECT 1 FROM memprofs WHERE sid=?")))
            return q_end(&c, rc, w);
        qbind_text(c.st, 1, q->sid);
        qbind_text(c.st, 2, q->sid);
        rc = sdb_step(c.st);
        if (rc != SDB_ROW)
            return q_end(&c, rc == SDB_DONE ? GPUFL_ENOTFOUND : sq_err(rc), w);
    }
    snprintf(sql, sizeof(sql),
             "SELECT count(*), coalesce(max(p.simulated), 0),"
             " coalesce(min(p.source), ''), coalesce(max(p.source), '')"
             " FROM memprofs p WHERE %s",
             sel);
    if ((rc = q_prepare(&c, sql)))
        return q_end(&c, rc, w);
    bind_where(&c, q, 0);
    rc = sdb_step(c.st);
    if (rc != SDB_ROW)
        return q_end(&c, sq_err(rc == SDB_DONE ? SDB_ROW : rc), w);
    nprof = qcol_i64(c.st, 0);
    sim = qcol_i64(c.st, 1);
    snprintf(src0, sizeof(src0), "%s", qcol_text(c.st, 2));
    snprintf(src1, sizeof(src1), "%s", qcol_text(c.st, 3));
    /* one row per distinct stack, biggest first; all rows are read for
     * the totals, the first lim_ are written.  Each stored counter is
     * below 2^63 (api_memprof.c), their sums need not be: they saturate
     * at 2^63 - 1 (sat_sum, db_sqlite.c; values are never negative, so
     * max() > 0 says whether the sum is) */
    {
        int pg = sdb_dialect(c.db) == SDB_POSTGRES;
        const char *f0 = pg ? "LEAST(sum(" : "sat_sum(";
        const char *f1 = pg ? "), 9223372036854775807)" : ")";
        snprintf(sql, sizeof(sql),
                 "SELECT m.frames, %sm.%s_bytes%s, %sm.%s_count%s"
                 " FROM memsamples m JOIN memprofs p ON p.id=m.prof WHERE %s"
                 " GROUP BY m.frames HAVING max(m.%s_bytes)>0 OR"
                 " max(m.%s_count)>0 ORDER BY 2 DESC, 1",
                 f0, col[view], f1, f0, col[view], f1, sel, col[view],
                 col[view]);
    }
    if ((rc = q_prepare(&c, sql)))
        return q_end(&c, rc, w);
    bind_where(&c, q, 0);
    jw_obj_begin(w);
    jw_kv_str(w, "view", vname[view]);
    jw_kv_i64(w, "profiles", nprof);
    jw_key(w, "simulated");
    jw_bool(w, sim != 0);
    jw_key(w, "source");
    if (!src0[0])
        jw_null(w);
    else
        jw_str(w, strcmp(src0, src1) ? "mixed" : src0);
    jw_key(w, "stacks");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW) {
        uint64_t b = (uint64_t)qcol_i64(c.st, 1),
                 k = (uint64_t)qcol_i64(c.st, 2);
        tb = sat_add(tb, b);
        tc = sat_add(tc, k);
        if (n++ >= lim_)
            continue;
        const char *fr = qcol_text(c.st, 0);
        jw_obj_begin(w);
        jw_key(w, "frames");
        jw_raw(w, fr, strlen(fr));
        srv_jw_kv_udec(w, "bytes", b);
        srv_jw_kv_unum(w, "count", k);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    srv_jw_kv_udec(w, "total_bytes", tb);
    srv_jw_kv_unum(w, "total_count", tc);
    jw_key(w, "truncated");
    jw_bool(w, n > lim_);
    jw_obj_end(w);
    return q_end(&c, rc == SDB_DONE ? 0 : sq_err(rc), w);
}

int srv_store_q_memprofs(srv_store *s, const srv_memq *q, jw *w)
{
    char wh[256], sql[1024];
    qctx c;
    int64_t cur = 0;
    uint32_t l = q->limit == 0             ? SQ_LIMIT_DEFAULT
                 : q->limit > SQ_LIMIT_MAX ? SQ_LIMIT_MAX
                                           : q->limit,
             n = 0;
    int rc, has_cur;

    q_begin(s, &c);
    has_cur = cursor_of(q->cursor, &cur);
    if (has_cur < 0)
        return q_end(&c, GPUFL_EINVAL, w);
    where(q, wh, sizeof(wh));
    snprintf(sql, sizeof(sql),
             "SELECT p.id, p.host, p.pid, p.comm, p.sid, p.start_ns,"
             " p.end_ns, p.source, p.simulated, p.nstacks, p.alloc_bytes,"
             " p.inuse_bytes FROM memprofs p WHERE %s%s"
             " ORDER BY p.id DESC LIMIT ?",
             wh, has_cur > 0 ? " AND p.id<?" : "");
    if ((rc = q_prepare(&c, sql)))
        return q_end(&c, rc, w);
    int i = bind_where(&c, q, 0);
    if (has_cur > 0)
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
        jw_kv_str(w, "comm", qcol_text(c.st, 3));
        jw_key(w, "sid");
        if (qcol_null(c.st, 4))
            jw_null(w);
        else
            jw_str(w, qcol_text(c.st, 4));
        srv_jw_kv_dec(w, "start", qcol_i64(c.st, 5));
        srv_jw_kv_dec(w, "end", qcol_i64(c.st, 6));
        jw_kv_str(w, "source", qcol_text(c.st, 7));
        jw_key(w, "simulated");
        jw_bool(w, qcol_i64(c.st, 8) != 0);
        jw_kv_i64(w, "stacks", qcol_i64(c.st, 9));
        srv_jw_kv_dec(w, "alloc_bytes", qcol_i64(c.st, 10));
        srv_jw_kv_dec(w, "inuse_bytes", qcol_i64(c.st, 11));
        jw_obj_end(w);
        cur = qcol_i64(c.st, 0);
        n++;
    }
    jw_arr_end(w);
    q_next(w, rc == SDB_ROW, &cur, 1);
    jw_obj_end(w);
    return q_end(&c, rc == SDB_ROW || rc == SDB_DONE ? 0 : sq_err(rc), w);
}
