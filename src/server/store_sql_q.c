/*
 * store_sql_q.c - the query files' shared machinery (store_sql_q.h): the
 * query context over a pooled read connection, session lookup, limits and
 * cursors, and names and scope paths read back from the dictionaries.
 *
 * Every query answers as JSON into the caller's jw.  SQL text is fixed:
 * user input only ever reaches it as bound parameters; the few
 * identifiers chosen by the user (system fields) are looked up in a
 * static table.
 */
#include "store_sql_q.h"

#include <gpufl/gpufl.h>

#include <string.h>

#include "common/jsonl.h"
#include "common/num.h"
#include "srv_json.h"

void q_begin(srv_store *s, qctx *c)
{
    memset(c, 0, sizeof(*c));
    c->s = s;
    c->db = sq_reader_get(s);
}

int q_end(qctx *c, int rc, jw *w)
{
    sdb_finalize(c->st);
    c->st = NULL;
    /* read only: COMMIT ends it, ROLLBACK when that fails */
    if (c->txn && sdb_exec(c->db, "COMMIT"))
        sdb_exec(c->db, "ROLLBACK");
    sq_reader_put(c->s, c->db);
    if (!rc && w && w->err)
        rc = GPUFL_ETOOBIG;
    return rc;
}

int q_prepare(qctx *c, const char *sql)
{
    sdb_finalize(c->st);
    c->st = NULL;
    return sdb_prepare(c->db, sql, &c->st) == 0 ? GPUFL_OK : GPUFL_EINTERNAL;
}

uint32_t q_limit(const srv_q *q)
{
    return q->limit == 0             ? SQ_LIMIT_DEFAULT
           : q->limit > SQ_LIMIT_MAX ? SQ_LIMIT_MAX
                                     : q->limit;
}

int q_session(qctx *c, const char *sid)
{
    int rc;

    if (!sid)
        return GPUFL_EINVAL;
    if (q_prepare(c, "SELECT id, coalesce(first_ts, 0), coalesce(last_ts,"
                     " 0) FROM sessions WHERE sid=?"))
        return GPUFL_EINTERNAL;
    qbind_text(c->st, 1, sid);
    rc = sdb_step(c->st);
    if (rc != SDB_ROW)
        return rc == SDB_DONE ? GPUFL_ENOTFOUND : sq_err(rc);
    c->sess = qcol_i64(c->st, 0);
    c->first = qcol_i64(c->st, 1);
    c->last = qcol_i64(c->st, 2);
    sdb_finalize(c->st);
    c->st = NULL;
    return GPUFL_OK;
}

int q_snapshot(qctx *c)
{
    /* SQLite: a deferred BEGIN takes its snapshot at the first read, as
     * PostgreSQL's REPEATABLE READ at its first statement */
    if (sdb_exec(c->db, sdb_dialect(c->db) == SDB_POSTGRES
                            ? "BEGIN ISOLATION LEVEL REPEATABLE READ"
                            : "BEGIN"))
        return GPUFL_EINTERNAL;
    c->txn = 1;
    return GPUFL_OK;
}

int q_cursor(const srv_q *q, int64_t *v, int n)
{
    if (!q->cursor)
        return 0;
    return srv_cursor_decode(q->cursor, v, n) ? -1 : 1;
}

void q_next(jw *w, int more, const int64_t *v, int n)
{
    char cur[SRV_CURSOR_MAX];
    jw_key(w, "next");
    if (more && srv_cursor_encode(v, n, cur, sizeof(cur)) == GPUFL_OK)
        jw_str(w, cur);
    else
        jw_null(w);
}

int sq_cols_of(uint64_t from, uint64_t to, uint64_t bw, uint32_t width,
               uint64_t t0, uint64_t dur, uint32_t *c0, uint32_t *c1)
{
    /* the last ns the span occupies (an instant: t0 itself); ts + dur is
     * a time (ingest checks), so no overflow */
    uint64_t last = dur ? t0 + dur - 1 : t0;

    if (last < from || t0 >= to || !width || !bw)
        return 0;
    *c0 = t0 > from ? (uint32_t)((t0 - from) / bw) : 0;
    *c1 = last < to ? (uint32_t)((last - from) / bw)
                    : (uint32_t)((to - 1 - from) / bw);
    if (*c1 >= width)
        *c1 = width - 1;
    if (*c0 > *c1)
        *c0 = *c1;
    return 1;
}

uint64_t sq_cols_overlap(uint64_t from, uint64_t to, uint64_t bw, uint32_t c,
                         uint64_t t0, uint64_t dur)
{
    uint64_t lo = from + (uint64_t)c * bw, hi = lo + bw, end = t0 + dur;

    if (hi > to || hi < lo)
        hi = to;
    if (t0 > lo)
        lo = t0;
    if (end < hi)
        hi = end;
    return hi > lo ? hi - lo : 0;
}

int sq_kernels_back(qctx *c, uint64_t t, int64_t *lo)
{
    int64_t back;
    int rc;

    if ((rc = q_prepare(c, "SELECT coalesce(max(dur), 0) FROM kext WHERE"
                           " sess=? AND side=0")) != 0)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    if ((rc = sdb_step(c->st)) != SDB_ROW)
        return sq_err(rc);
    back = qcol_i64(c->st, 0);
    /* longer ones are in klong: read apart */
    if (back > (int64_t)RL_TL_LONG_NS)
        back = (int64_t)RL_TL_LONG_NS;
    *lo = (int64_t)t > back ? (int64_t)t - back : 0;
    return GPUFL_OK;
}

int sq_lanes_parse(const char *s, int64_t *out, int cap, int *n)
{
    *n = 0;
    while (*s) {
        char num[24];
        size_t len = strcspn(s, ":,");
        uint64_t dev, stream;
        int dup = 0;

        if (len == 0 || len >= sizeof(num) || s[len] != ':')
            return GPUFL_EINVAL;
        memcpy(num, s, len);
        num[len] = '\0';
        if (num_u64(num, &dev) || dev > 0x7fffffff)
            return GPUFL_EINVAL;
        s += len + 1;
        len = strcspn(s, ",");
        if (len == 0 || len >= sizeof(num))
            return GPUFL_EINVAL;
        memcpy(num, s, len);
        num[len] = '\0';
        if (num_u64(num, &stream) || stream > 0xffffffffu)
            return GPUFL_EINVAL;
        s += len;
        if (*s == ',' && !*++s)
            return GPUFL_EINVAL;
        for (int i = 0; i < *n; i++)
            dup |= out[i] == (int64_t)(dev << 32 | stream);
        if (dup)
            continue;
        if (*n >= cap)
            return GPUFL_EINVAL;
        out[(*n)++] = (int64_t)(dev << 32 | stream);
    }
    return GPUFL_OK;
}

void sq_like_pat(const char *s, char *out, size_t cap)
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

size_t sq_str_add_utf8(char *buf, size_t len, size_t cap, const char *s)
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

const char *sq_name_of(sdb *db, int64_t sess, int64_t id, char *buf, size_t cap)
{
    sdb_stmt *st = NULL;
    buf[0] = '\0';
    if (sdb_prepare(db, "SELECT name FROM dicts WHERE sess=? AND id=?", &st) ==
        0) {
        qbind_i64(st, 1, sess);
        qbind_i64(st, 2, id);
        if (sdb_step(st) == SDB_ROW)
            sq_str_add_utf8(buf, 0, cap, qcol_text(st, 0));
    }
    sdb_finalize(st);
    return buf;
}

void sq_kname_of(sdb *db, int64_t sess, int64_t id, char *disp, char *mangled,
                 size_t cap)
{
    sdb_stmt *st = NULL;
    disp[0] = mangled[0] = '\0';
    if (sdb_prepare(db,
                    "SELECT coalesce(demangled, name, ''), coalesce(name, '')"
                    " FROM dicts WHERE sess=? AND id=?",
                    &st) == 0) {
        qbind_i64(st, 1, sess);
        qbind_i64(st, 2, id);
        if (sdb_step(st) == SDB_ROW) {
            sq_str_add_utf8(disp, 0, cap, qcol_text(st, 0));
            sq_str_add_utf8(mangled, 0, cap, qcol_text(st, 1));
        }
    }
    sdb_finalize(st);
}

const char *sq_path_of(sdb *db, int64_t sess, int64_t id, char *buf, size_t cap)
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
        qbind_i64(st, 1, sess);
        qbind_i64(st, 2, id);
        if (sdb_step(st) != SDB_ROW)
            break;
        ids[n++] = qcol_i64(st, 1);
        id = qcol_i64(st, 0);
        sdb_reset(st);
    }
    sdb_finalize(st);
    for (int i = n - 1; i >= 0 && len + 1 < cap; i--) {
        char nm[SQ_NAME_MAX + 1];
        if (i < n - 1)
            len = sq_str_add_utf8(buf, len, cap, "/");
        len = sq_str_add_utf8(buf, len, cap,
                              sq_name_of(db, sess, ids[i], nm, sizeof(nm)));
    }
    return buf;
}

void sq_raw_member(jw *w, const char *hdr, const char *key)
{
    jsonl_tok tok[INGEST_HDR_TOKENS];
    jsonl_doc d;
    uint32_t t;

    jsonl_doc_init(&d, tok, INGEST_HDR_TOKENS);
    if (!hdr || jsonl_doc_parse_obj(&d, hdr, strlen(hdr)))
        return;
    t = jsonl_doc_find(&d, key);
    if (t == JSONL_NOTFOUND)
        return;
    jw_key(w, key);
    srv_jw_copy(w, &d, t);
}
