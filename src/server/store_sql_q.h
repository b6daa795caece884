/*
 * store_sql_q.h - helpers shared by the SQLite query files: a borrowed
 * read connection with one statement, typed column access, session lookup,
 * cursors and the name/path resolution every answer needs.
 */
#ifndef GPUFL_SERVER_STORE_SQL_Q_H
#define GPUFL_SERVER_STORE_SQL_Q_H

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest.h"
#include "store_sql_int.h"

/* Tokens for re-reading a stored session header or stack line. */
#define INGEST_HDR_TOKENS 4096

#define SQ_LIMIT_DEFAULT 100
#define SQ_LIMIT_MAX 1000
/* Scope paths and aggregate rows handled in memory per query. */
#define SQ_PATHS_MAX 4096
#define SQ_NAMES_MAX 20000
#define SQ_TL_WIDTH_MAX 10000
#define SQ_TL_LANES_MAX 256
#define SQ_POINTS_MAX 5000
/* Names are answered in full (at most ingest's cap on a name); scope path
 * strings ("a/b/c") are cut at SQ_PATH_STR_MAX - 1 bytes, on a UTF-8
 * character boundary (docs/api.md). */
#define SQ_NAME_MAX INGEST_NAME_MAX
#define SQ_PATH_STR_MAX 8192

typedef struct qctx {
    srv_store *s;
    sdb *db;
    sdb_stmt *st;
    int64_t sess;
    int64_t first, last;
} qctx;

static inline int q_begin(srv_store *s, qctx *c)
{
    memset(c, 0, sizeof(*c));
    c->s = s;
    c->db = sq_reader_get(c->s);
    return GPUFL_OK;
}

static inline int q_end(qctx *c, int rc, jw *w)
{
    sdb_finalize(c->st);
    sq_reader_put(c->s, c->db);
    if (!rc && w && w->err)
        rc = GPUFL_ETOOBIG;
    return rc;
}

static inline int prep(qctx *c, const char *sql)
{
    sdb_finalize(c->st);
    c->st = NULL;
    return sdb_prepare(c->db, sql, &c->st) == 0 ? GPUFL_OK : GPUFL_EINTERNAL;
}

static inline int64_t ci(qctx *c, int i)
{
    return sdb_col_i64(c->st, i);
}

static inline const char *ct(qctx *c, int i)
{
    const char *t = sdb_col_text(c->st, i);
    return t ? (const char *)t : "";
}

static inline void bi(qctx *c, int i, int64_t v)
{
    sdb_bind_i64(c->st, i, v);
}

static inline void bt(qctx *c, int i, const char *s)
{
    sdb_bind_text(c->st, i, s, strlen(s));
}

static inline uint32_t lim(const srv_q *q)
{
    return q->limit == 0             ? SQ_LIMIT_DEFAULT
           : q->limit > SQ_LIMIT_MAX ? SQ_LIMIT_MAX
                                     : q->limit;
}

/* The session's row id and time span; ENOTFOUND for an unknown sid. */
static inline int sess_find(qctx *c, const char *sid)
{
    int rc;

    if (!sid || prep(c, "SELECT id, coalesce(first_ts, 0), coalesce(last_ts,"
                        " 0) FROM sessions WHERE sid=?"))
        return sid ? GPUFL_EINTERNAL : GPUFL_EINVAL;
    bt(c, 1, sid);
    rc = sdb_step(c->st);
    if (rc != SDB_ROW)
        return rc == SDB_DONE ? GPUFL_ENOTFOUND : sq_err(rc);
    c->sess = ci(c, 0);
    c->first = ci(c, 1);
    c->last = ci(c, 2);
    return GPUFL_OK;
}

/* A LIKE pattern matching s anywhere, with %, _ and \ escaped. */
static inline void like_pat(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    out[n++] = '%';
    for (; *s && n + 3 < cap; s++) {
        if (*s == '%' || *s == '_' || *s == '\\')
            out[n++] = '\\';
        out[n++] = *s;
    }
    out[n++] = '%';
    out[n] = '\0';
}

static inline void w_next(jw *w, int more, const int64_t *v, int n)
{
    char cur[SRV_CURSOR_MAX];
    jw_key(w, "next");
    if (more && srv_cursor_encode(v, n, cur, sizeof(cur)) == GPUFL_OK)
        jw_str(w, cur);
    else
        jw_null(w);
}

static inline int cursor(const srv_q *q, int64_t *v, int n)
{
    if (!q->cursor)
        return 0;
    return srv_cursor_decode(q->cursor, v, n) ? -1 : 1;
}

/* Appends s to buf (len bytes used of cap, NUL-terminated): as much as
 * fits, cut before a UTF-8 sequence, never inside one.  The new length. */
static inline size_t str_add_utf8(char *buf, size_t len, size_t cap,
                                  const char *s)
{
    size_t n = strlen(s), room = cap - len - 1;

    if (n > room) {
        n = room;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    memcpy(buf + len, s, n);
    buf[len + n] = '\0';
    return len + n;
}

/* The string of a name dict id, into buf (SQ_NAME_MAX + 1 bytes: whole). */
static inline const char *name_of(sdb *db, int64_t sess, int64_t id, char *buf,
                                  size_t cap)
{
    sdb_stmt *st = NULL;
    buf[0] = '\0';
    if (sdb_prepare(db, "SELECT name FROM dicts WHERE sess=? AND id=?", &st) ==
        0) {
        sdb_bind_i64(st, 1, sess);
        sdb_bind_i64(st, 2, id);
        if (sdb_step(st) == SDB_ROW && sdb_col_text(st, 0))
            str_add_utf8(buf, 0, cap, sdb_col_text(st, 0));
    }
    sdb_finalize(st);
    return buf;
}

/* "a/b/c" for a path dict id. */
static inline const char *path_of(sdb *db, int64_t sess, int64_t id, char *buf,
                                  size_t cap)
{
    int64_t ids[64];
    int n = 0;
    size_t len = 0;
    sdb_stmt *st = NULL;

    buf[0] = '\0';
    if (sdb_prepare(db,
                    "SELECT parent, name_id FROM dicts WHERE sess=? AND"
                    " id=? AND kind=1",
                    &st) != 0)
        return buf;
    while (id && n < 64) {
        sdb_bind_i64(st, 1, sess);
        sdb_bind_i64(st, 2, id);
        if (sdb_step(st) != SDB_ROW)
            break;
        ids[n++] = sdb_col_i64(st, 1);
        id = sdb_col_i64(st, 0);
        sdb_reset(st);
    }
    sdb_finalize(st);
    for (int i = n - 1; i >= 0 && len + 1 < cap; i--) {
        char nm[SQ_NAME_MAX + 1];
        if (i < n - 1)
            len = str_add_utf8(buf, len, cap, "/");
        len = str_add_utf8(buf, len, cap,
                           name_of(db, sess, ids[i], nm, sizeof(nm)));
    }
    return buf;
}

#endif
