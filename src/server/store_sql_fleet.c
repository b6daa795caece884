/*
 * store_sql_fleet.c - idle verdicts (`verdict` lines of the system
 * stream, written by `gpufl idle watch`, docs/idle.md): every verdict in
 * table verdicts, the latest per (host, gpu) and (host, session) in table
 * fleet, and the two queries behind GET /api/v1/fleet and
 * /api/v1/verdicts.  The same SQL on SQLite and PostgreSQL (db.h).
 *
 * The host of a verdict is its session's (the session line comes first in
 * every log); the line itself is kept as body and answered member by
 * member, so fields added to verdicts later pass through unchanged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpufl/gpufl.h>

#include "common/jsonl.h"
#include "store_sql_int.h"
#include "srv_json.h"
#include "store_sql_q.h"

#define FLEET_TOKENS 4096
#define FLEET_KEY_MAX 128

int sq_fleet_put(srv_store *s, int64_t sess, const srv_ev *e)
{
    sdb_stmt *st = NULL;
    char host[256] = "unknown", vkey[160];
    int64_t simulated = 0;
    int rc;
    int gpu = e->kind.n == 3 && !memcmp(e->kind.p, "gpu", 3);

    if (gpu)
        snprintf(vkey, sizeof(vkey), "%llu", (unsigned long long)e->dev);
    else
        snprintf(vkey, sizeof(vkey), "%.*s", (int)e->text.n, e->text.p);
    if (sdb_prepare(s->w, "SELECT host, simulated FROM sessions WHERE id=?",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sess);
    if ((rc = sdb_step(st)) == SDB_ROW) {
        const char *h = qcol_text(st, 0);
        if (*h)
            snprintf(host, sizeof(host), "%s", h);
        simulated = qcol_i64(st, 1);
    }
    sdb_finalize(st);
    st = NULL;
    if (rc != SDB_ROW && rc != SDB_DONE)
        return sdb_err(rc);
    if (sdb_prepare(s->w,
                    "INSERT INTO verdicts(sess, seq, ts, host, kind, dev,"
                    " vkey, state, since, simulated, body)"
                    " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT DO NOTHING",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sess);
    qbind_i64(st, 2, (int64_t)e->seq);
    qbind_i64(st, 3, (int64_t)e->ts);
    qbind_text(st, 4, host);
    qbind_str(st, 5, e->kind);
    if (gpu)
        qbind_i64(st, 6, (int64_t)e->dev);
    else
        qbind_null(st, 6);
    qbind_text(st, 7, vkey);
    qbind_str(st, 8, e->reason);
    qbind_i64(st, 9, (int64_t)e->start);
    qbind_i64(st, 10, simulated);
    qbind_str(st, 11, e->raw);
    rc = qrun(st);
    sdb_finalize(st);
    st = NULL;
    if (rc)
        return rc;
    if (sdb_prepare(s->w,
                    "INSERT INTO fleet(host, kind, vkey, dev, ts, sess, seq,"
                    " simulated, body) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT(host, kind, vkey) DO UPDATE SET"
                    " dev=excluded.dev, ts=excluded.ts, sess=excluded.sess,"
                    " seq=excluded.seq, simulated=excluded.simulated,"
                    " body=excluded.body WHERE excluded.ts >= fleet.ts",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_text(st, 1, host);
    qbind_str(st, 2, e->kind);
    qbind_text(st, 3, vkey);
    if (gpu)
        qbind_i64(st, 4, (int64_t)e->dev);
    else
        qbind_null(st, 4);
    qbind_i64(st, 5, (int64_t)e->ts);
    qbind_i64(st, 6, sess);
    qbind_i64(st, 7, (int64_t)e->seq);
    qbind_i64(st, 8, simulated);
    qbind_str(st, 9, e->raw);
    rc = qrun(st);
    sdb_finalize(st);
    if (!rc && gpu)
        rc = sq_waste_run(s, sess, host, (int64_t)e->dev, (int64_t)e->ts,
                          e->reason);
    return rc;
}

/* Writes the members of a stored verdict line, minus the envelope (and
 * "kind" unless keep_kind), into the open object of w. */
static void body_members(jw *w, jsonl_doc *d, const char *body, int keep_kind)
{
    static const char *const skip[] = { "v", "sid", "st", "seq", "type" };
    /* times in ns since the epoch: decimal strings, as every ns time the
     * API writes (srv_json.h); the rest as the line had it */
    static const char *const ns[] = { "ts", "since", "deadline", "veto_until" };
    if (!body || jsonl_doc_parse_obj(d, body, strlen(body)))
        return;
    for (uint32_t i = 1, k = 0; k < d->tok[0].n; k++) {
        uint32_t v = i + 1;
        char key[FLEET_KEY_MAX];
        size_t kn = d->tok[i].len;
        int drop = 0;
        if (kn >= sizeof(key) || (d->tok[i].flags & JSONL_F_ESC))
            drop = 1; /* verdict keys are short plain words */
        else {
            memcpy(key, body + d->tok[i].off, kn);
            key[kn] = '\0';
            for (size_t j = 0; j < sizeof(skip) / sizeof(skip[0]); j++)
                drop |= !strcmp(key, skip[j]);
            if (!keep_kind && !strcmp(key, "kind"))
                drop = 1;
        }
        if (!drop) {
            int64_t t;
            int is_ns = 0;
            for (size_t j = 0; j < sizeof(ns) / sizeof(ns[0]); j++)
                is_ns |= !strcmp(key, ns[j]);
            jw_key(w, key);
            if (is_ns && jsonl_tok_i64(d, v, &t) == GPUFL_OK)
                srv_jw_dec(w, t);
            else
                srv_jw_copy(w, d, v);
        }
        i = d->tok[v].next;
    }
}

static jsonl_tok *tokens(jsonl_doc *d)
{
    jsonl_tok *t = malloc(FLEET_TOKENS * sizeof(*t));
    if (t)
        jsonl_doc_init(d, t, FLEET_TOKENS);
    return t;
}

/* Ends a host's object: the open array, an empty "sessions" when it had
 * GPUs only, then its newest ts and whether any of its GPUs is simulated. */
static void host_close(jw *w, int section, int64_t ts, int simulated)
{
    jw_arr_end(w);
    if (section == 1) {
        jw_key(w, "sessions");
        jw_arr_begin(w);
        jw_arr_end(w);
    }
    jw_key(w, "simulated");
    jw_bool(w, simulated);
    srv_jw_kv_dec(w, "ts", ts);
    jw_obj_end(w);
}

int srv_store_q_fleet(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    jsonl_doc d;
    jsonl_tok *tok = tokens(&d);
    int64_t off = 0;
    uint32_t l = q_limit(q), nh = 0;
    char cur_host[256] = "";
    int64_t host_ts = 0;
    int rc, open = 0, section = 0,
            host_sim = 0; /* section: 1 gpus, 2 sessions */

    if (!tok)
        return GPUFL_ENOMEM;
    q_begin(s, &c);
    if (q_cursor(q, &off, 1) < 0) {
        free(tok);
        return q_end(&c, GPUFL_EINVAL, w);
    }
    rc = q_prepare(&c, q->host
                           ? "SELECT host, kind, ts, simulated, body FROM fleet"
                             " WHERE host=? ORDER BY host, kind, dev, vkey"
                           : "SELECT host, kind, ts, simulated, body FROM fleet"
                             " WHERE host IN (SELECT DISTINCT host FROM fleet"
                             " ORDER BY host LIMIT ? OFFSET ?)"
                             " ORDER BY host, kind, dev, vkey");
    if (rc) {
        free(tok);
        return q_end(&c, rc, w);
    }
    if (q->host) {
        qbind_text(c.st, 1, q->host);
    } else {
        qbind_i64(c.st, 1, l + 1);
        qbind_i64(c.st, 2, off);
    }
    jw_obj_begin(w);
    jw_key(w, "items");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW) {
        const char *host = qcol_text(c.st, 0), *kind = qcol_text(c.st, 1);
        int gpu = !strcmp(kind, "gpu");
        if (!open || strcmp(host, cur_host) != 0) {
            if (open)
                host_close(w, section, host_ts, host_sim);
            if (nh == l) {
                nh++; /* a further host: there is a next page */
                open = 0;
                break;
            }
            nh++;
            snprintf(cur_host, sizeof(cur_host), "%s", host);
            jw_obj_begin(w);
            jw_kv_str(w, "host", host);
            open = 1;
            section = 0;
            host_ts = 0;
            host_sim = 0;
        }
        if (qcol_i64(c.st, 2) > host_ts)
            host_ts = qcol_i64(c.st, 2);
        host_sim |= qcol_i64(c.st, 3) != 0;
        if (section == 0) {
            if (!gpu) {
                jw_key(w, "gpus");
                jw_arr_begin(w);
                jw_arr_end(w);
            }
            jw_key(w, gpu ? "gpus" : "sessions");
            jw_arr_begin(w);
            section = gpu ? 1 : 2;
        } else if (section == 1 && !gpu) {
            jw_arr_end(w);
            jw_key(w, "sessions");
            jw_arr_begin(w);
            section = 2;
        }
        jw_obj_begin(w);
        body_members(w, &d, qcol_text(c.st, 4), 0);
        jw_obj_end(w);
    }
    if (open)
        host_close(w, section, host_ts, host_sim);
    jw_arr_end(w);
    off += l;
    q_next(w, !q->host && nh > l, &off, 1);
    jw_obj_end(w);
    free(tok);
    return q_end(&c, rc == SDB_ROW || rc == SDB_DONE ? 0 : sq_err(rc), w);
}

int srv_store_q_verdicts(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    jsonl_doc d;
    jsonl_tok *tok = tokens(&d);
    int64_t cur[3] = { 0, 0, 0 };
    char sql[1024];
    size_t k;
    uint32_t l = q_limit(q), n = 0;
    int rc, p = 0, has_cur;

    if (!tok)
        return GPUFL_ENOMEM;
    q_begin(s, &c);
    has_cur = q_cursor(q, cur, 3);
    if (has_cur < 0 ||
        (q->kind && strcmp(q->kind, "gpu") && strcmp(q->kind, "session"))) {
        free(tok);
        return q_end(&c, GPUFL_EINVAL, w);
    }
    k = (size_t)snprintf(sql, sizeof(sql),
                         "SELECT v.host, v.ts, v.sess, v.seq, v.body, s.sid,"
                         " v.simulated FROM verdicts v JOIN sessions s ON"
                         " s.id=v.sess WHERE 1=1");
#define ADD(cond) k += (size_t)snprintf(sql + k, sizeof(sql) - k, "%s", cond)
    if (q->host)
        ADD(" AND v.host=?");
    if (q->kind)
        ADD(" AND v.kind=?");
    if (q->dev >= 0)
        ADD(" AND v.dev=?");
    if (q->session)
        ADD(" AND v.kind='session' AND v.vkey=?");
    if (q->from)
        ADD(" AND v.ts>=?");
    if (q->to)
        ADD(" AND v.ts<?");
    if (has_cur > 0)
        ADD(" AND (v.ts, v.sess, v.seq) < (?, ?, ?)");
    ADD(" ORDER BY v.ts DESC, v.sess DESC, v.seq DESC LIMIT ?");
#undef ADD
    if ((rc = q_prepare(&c, sql)) != 0) {
        free(tok);
        return q_end(&c, rc, w);
    }
    if (q->host)
        qbind_text(c.st, ++p, q->host);
    if (q->kind)
        qbind_text(c.st, ++p, q->kind);
    if (q->dev >= 0)
        qbind_i64(c.st, ++p, q->dev);
    if (q->session)
        qbind_text(c.st, ++p, q->session);
    if (q->from)
        qbind_i64(c.st, ++p, (int64_t)q->from);
    if (q->to)
        qbind_i64(c.st, ++p, (int64_t)q->to);
    if (has_cur > 0)
        for (int i = 0; i < 3; i++)
            qbind_i64(c.st, ++p, cur[i]);
    qbind_i64(c.st, ++p, l + 1);
    jw_obj_begin(w);
    jw_key(w, "items");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW && n < l) {
        jw_obj_begin(w);
        jw_kv_str(w, "host", qcol_text(c.st, 0));
        jw_kv_str(w, "sid", qcol_text(c.st, 5));
        jw_key(w, "simulated");
        jw_bool(w, qcol_i64(c.st, 6) != 0);
        body_members(w, &d, qcol_text(c.st, 4), 1);
        jw_obj_end(w);
        cur[0] = qcol_i64(c.st, 1);
        cur[1] = qcol_i64(c.st, 2);
        cur[2] = qcol_i64(c.st, 3);
        n++;
    }
    jw_arr_end(w);
    q_next(w, rc == SDB_ROW, cur, 3);
    jw_obj_end(w);
    free(tok);
    return q_end(&c, rc == SDB_ROW || rc == SDB_DONE ? 0 : sq_err(rc), w);
}
