/*
 * store_sql_q.c - the query API's SQL on SQLite, answering as JSON.
 *
 * Every list is keyset-paginated (the cursor holds the last row's sort
 * key and seq) so a page costs the same at any depth; the heavy questions
 * (aggregates by name, timeline, kernels per scope) read the rollups kept
 * at ingest instead of scanning kernels.  SQL text is fixed: user input
 * only ever reaches it as bound parameters; the few identifiers chosen by
 * the user (system fields) are looked up in a static table.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonl.h"
#include "ingest.h"
#include "store_sql_q.h"

/* ---- hosts, sessions ---- */

int srv_store_q_hosts(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    int64_t off = 0;
    uint32_t n = 0, l = lim(q);
    int rc;

    q_begin(s, &c);
    if (cursor(q, &off, 1) < 0)
        return q_end(&c, GPUFL_EINVAL, w);
    rc = prep(&c, sdb_dialect(c.db) == SDB_POSTGRES
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
    bi(&c, 1, l + 1);
    bi(&c, 2, off);
    jw_obj_begin(w);
    jw_key(w, "items");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW && n < l) {
        jw_obj_begin(w);
        jw_kv_str(w, "host", ct(&c, 0));
        jw_kv_i64(w, "sessions", ci(&c, 1));
        jw_kv_i64(w, "last_start_ns", ci(&c, 2));
        jw_kv_str(w, "apps", ct(&c, 3));
        jw_obj_end(w);
        n++;
    }
    jw_arr_end(w);
    off += n;
    w_next(w, rc == SDB_ROW, &off, 1);
    jw_obj_end(w);
    return q_end(&c, rc == SDB_ROW || rc == SDB_DONE ? 0 : sq_err(rc), w);
}

static void w_session_row(qctx *c, jw *w)
{
    jw_kv_str(w, "id", ct(c, 0));
    jw_kv_str(w, "app", ct(c, 1));
    jw_kv_str(w, "host", ct(c, 2));
    jw_kv_i64(w, "pid", ci(c, 3));
    jw_kv_i64(w, "start_ns", ci(c, 4));
    jw_kv_str(w, "state", ct(c, 5));
    if (!sdb_col_null(c->st, 6))
        jw_kv_str(w, "end_reason", ct(c, 6));
    jw_kv_i64(w, "first_ts", ci(c, 7));
    jw_kv_i64(w, "last_ts", ci(c, 8));
    jw_kv_i64(w, "last_seen", ci(c, 9));
    jw_key(w, "keep");
    jw_bool(w, ci(c, 10) != 0);
    jw_key(w, "simulated");
    jw_bool(w, ci(c, 11) != 0);
    jw_key(w, "counts");
    jw_obj_begin(w);
    jw_kv_i64(w, "lines", ci(c, 12));
    jw_kv_i64(w, "kernels", ci(c, 13));
    jw_kv_i64(w, "ops", ci(c, 14));
    jw_kv_i64(w, "scopes", ci(c, 15));
    jw_kv_i64(w, "samples", ci(c, 16));
    jw_kv_i64(w, "profile", ci(c, 17));
    jw_obj_end(w);
    /* a session ends when all its streams have: those that have so far */
    jw_key(w, "streams_ended");
    jw_arr_begin(w);
    for (int st = 0; st < SRV_ST_N; st++)
        if (ci(c, 20) & (1 << st))
            jw_str(w, ingest_stream_name(st));
    jw_arr_end(w);
}

#define SESS_COLS                                                              \
    "sid, coalesce(app, ''), coalesce(host, ''), coalesce(pid, 0),"            \
    " coalesce(start_ns, 0), state, end_reason, coalesce(first_ts, 0),"        \
    " coalesce(last_ts, 0), coalesce(last_seen, 0), keep,"                     \
    " coalesce(simulated, 0), n_lines, n_kernels, n_ops, n_scopes,"            \
    " n_samples, n_profile, id, header, ended"

int srv_store_q_sessions(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    int64_t cur[2] = { INT64_MAX, INT64_MAX }, last[2] = { 0, 0 };
    uint32_t n = 0, l = lim(q);
    char pat[600];
    int rc;

    q_begin(s, &c);
    if (cursor(q, cur, 2) < 0)
        return q_end(&c, GPUFL_EINVAL, w);
    rc = prep(
        &c, "SELECT " SESS_COLS ", " SQ_MISSING_COL " FROM sessions"
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
            " ORDER BY coalesce(start_ns, 0) DESC, id DESC LIMIT ?9");
    if (rc)
        return q_end(&c, rc, w);
    bi(&c, 1, cur[0]);
    bi(&c, 2, cur[1]);
    if (q->host)
        bt(&c, 3, q->host);
    if (q->app)
        bt(&c, 4, q->app);
    if (q->state)
        bt(&c, 5, q->state);
    if (q->from)
        bi(&c, 6, (int64_t)q->from);
    if (q->to)
        bi(&c, 7, (int64_t)q->to);
    if (q->search) {
        like_pat(q->search, pat, sizeof(pat));
        bt(&c, 8, pat);
    }
    bi(&c, 9, l + 1);
    jw_obj_begin(w);
    jw_key(w, "items");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW && n < l) {
        jw_obj_begin(w);
        w_session_row(&c, w);
        jw_kv_i64(w, "missing", ci(&c, 21));
        jw_obj_end(w);
        last[0] = ci(&c, 4);
        last[1] = ci(&c, 18);
        n++;
    }
    jw_arr_end(w);
    w_next(w, rc == SDB_ROW, last, 2);
    jw_obj_end(w);
    return q_end(&c, rc == SDB_ROW || rc == SDB_DONE ? 0 : sq_err(rc), w);
}

/* Copies a member of the header line as raw JSON (it was validated). */
static void w_raw_member(jw *w, const char *hdr, const char *key)
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
    if (d.tok[t].type == JSONL_STRING)
        jw_raw(w, hdr + d.tok[t].off - 1, d.tok[t].len + 2);
    else
        jw_raw(w, hdr + d.tok[t].off, d.tok[t].len);
}

int srv_store_q_session(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    int rc;
    int64_t sess;
    char *hdr = NULL;

    q_begin(s, &c);
    rc = prep(&c, "SELECT " SESS_COLS " FROM sessions WHERE sid=?");
    if (rc)
        return q_end(&c, rc, w);
    bt(&c, 1, q->sid);
    rc = sdb_step(c.st);
    if (rc != SDB_ROW)
        return q_end(&c, rc == SDB_DONE ? GPUFL_ENOTFOUND : sq_err(rc), w);
    jw_obj_begin(w);
    w_session_row(&c, w);
    if (!sdb_col_null(c.st, 19))
        hdr = strdup(ct(&c, 19));
    w_raw_member(w, hdr, "devices");
    w_raw_member(w, hdr, "engines");
    w_raw_member(w, hdr, "cmd");
    w_raw_member(w, hdr, "lib");
    w_raw_member(w, hdr, "interval_ms");
    free(hdr);
    jw_kv_i64(w, "span_ns", ci(&c, 8) > ci(&c, 7) ? ci(&c, 8) - ci(&c, 7) : 0);
    sess = ci(&c, 18);
    /* slots for the memory-profile and idle-verdict issues */
    jw_key(w, "memprof");
    jw_null(w);
    jw_key(w, "idle");
    jw_null(w);
    rc = sq_gaps_json(c.db, sess, w);
    jw_obj_end(w);
    return q_end(&c, rc, w);
}

/* ---- kernels ---- */

#define KCOLS                                                                  \
    "k.seq, k.ts, k.dur, k.dev, k.stream, k.corr, coalesce(n.name, ''),"       \
    " k.gx, k.gy, k.gz, k.bx, k.by, k.bz, k.regs, k.smem, k.occ, k.scope,"     \
    " k.path, k.stack, k.api_off, k.api_dur, k.cfg, k.flags"

static void w_xyz(jw *w, const char *k, int64_t x, int64_t y, int64_t z)
{
    jw_key(w, k);
    jw_arr_begin(w);
    jw_i64(w, x);
    jw_i64(w, y);
    jw_i64(w, z);
    jw_arr_end(w);
}

static void w_kernel_row(qctx *c, jw *w)
{
    jw_kv_i64(w, "kid", ci(c, 0));
    jw_kv_i64(w, "ts", ci(c, 1));
    jw_kv_i64(w, "dur", ci(c, 2));
    jw_kv_i64(w, "dev", ci(c, 3));
    jw_kv_i64(w, "stream", ci(c, 4));
    jw_kv_i64(w, "corr", ci(c, 5));
    jw_kv_str(w, "name", ct(c, 6));
    w_xyz(w, "grid", ci(c, 7), ci(c, 8), ci(c, 9));
    w_xyz(w, "block", ci(c, 10), ci(c, 11), ci(c, 12));
    jw_kv_i64(w, "regs", ci(c, 13));
    jw_kv_i64(w, "smem", ci(c, 14));
    jw_key(w, "occ");
    if (sdb_col_null(c->st, 15))
        jw_null(w);
    else
        jw_f64(w, sdb_col_f64(c->st, 15), 4);
    jw_kv_i64(w, "scope", ci(c, 16));
}

/* Bytes of a name filter's LIKE pattern. */
#define SQ_PAT_MAX 600

/* The parameters every kernel page statement shares: ?1 session, ?2/?3
 * the time range (used only when one was asked), ?4/?5 the cursor, ?6 the
 * name pattern (only with a filter; pat, SQ_PAT_MAX bytes, holds it until
 * the last step), ?7 the page size plus one. */
static void page_bind(qctx *c, const srv_q *q, const int64_t *cur, uint32_t l,
                      char *pat)
{
    bi(c, 1, c->sess);
    bi(c, 2, (int64_t)q->from);
    bi(c, 3, q->to ? (int64_t)q->to : INT64_MAX);
    bi(c, 4, cur[0]);
    bi(c, 5, cur[1]);
    if (q->name) {
        like_pat(q->name, pat, SQ_PAT_MAX);
        bt(c, 6, pat);
    }
    bi(c, 7, l + 1);
}

/* The name filter of a kernel page (?6), only with a filter: the subquery
 * is built per execution. */
#define PAGE_NAME_FILTER                                                       \
    " AND k.name_id IN (SELECT id FROM dicts WHERE sess=?1 AND kind=0 AND"     \
    " name LIKE ?6 ESCAPE '\\')"

/* The page's statement over kext (count_only: just how many rows). */
static int kext_sql(qctx *c, const srv_q *q, const int64_t *cur, int desc,
                    uint32_t l, char *pat, int count_only)
{
    char sql[1024];
    int rc;

    snprintf(sql, sizeof(sql),
             "%s FROM kext x JOIN kernels k ON k.sess=x.sess AND k.seq=x.seq"
             "%s WHERE x.sess=?1 AND x.side=?8 AND (x.dur, x.seq) %s (?4, ?5)"
             "%s%s ORDER BY x.dur %s, x.seq %s LIMIT ?7%s",
             count_only ? "SELECT count(*) FROM (SELECT 1" : "SELECT " KCOLS,
             count_only ? ""
                        : " LEFT JOIN dicts n ON n.sess=k.sess AND"
                          " n.id=k.name_id",
             desc ? "<" : ">",
             q->from || q->to ? " AND k.ts >= ?2 AND k.ts < ?3" : "",
             q->name ? PAGE_NAME_FILTER : "", desc ? "DESC" : "ASC",
             desc ? "DESC" : "ASC", count_only ? ") t" : "");
    if ((rc = prep(c, sql)) != 0)
        return rc;
    page_bind(c, q, cur, l, pat);
    bi(c, 8, desc ? 0 : 1);
    return GPUFL_OK;
}

/* Prepares the page of kernels sorted by duration from kext as c->st (its
 * rows: the page, plus one when there is more).  kext holds a prefix of
 * the session's kernels in each order (store_sql_ext.c), so its rows
 * after the cursor are the right ones as far as they go: when they fill
 * the page, or when kext holds every kernel of the session.  Otherwise
 * GPUFL_EFULL: the caller sorts the plain way. */
static int kernels_by_dur(qctx *c, const srv_q *q, const int64_t *cur, int desc,
                          uint32_t l, char *pat)
{
    int64_t n;
    int rc;

    if ((rc = kext_sql(c, q, cur, desc, l, pat, 1)) != 0)
        return rc;
    if ((rc = sdb_step(c->st)) != SDB_ROW)
        return sq_err(rc);
    n = ci(c, 0);
    if (n <= (int64_t)l) {
        if ((rc = prep(c, "SELECT CASE WHEN (SELECT count(*) FROM kext"
                          " WHERE sess=?1 AND side=?2) = (SELECT n_kernels"
                          " FROM sessions WHERE id=?1) THEN 1 ELSE 0 END")) !=
            0)
            return rc;
        bi(c, 1, c->sess);
        bi(c, 2, desc ? 0 : 1);
        if ((rc = sdb_step(c->st)) != SDB_ROW)
            return sq_err(rc);
        if (!ci(c, 0))
            return GPUFL_EFULL; /* past what kext holds */
    }
    return kext_sql(c, q, cur, desc, l, pat, 0);
}

/* Prepares the page of kernels (sorted by start, or by duration as one
 * plain sort) as c->st, with one row more when there is more.  pat
 * (SQ_PAT_MAX bytes) holds the name pattern, bound until the last step. */
static int kernels_sql(qctx *c, const srv_q *q, const int64_t *cur, int by_dur,
                       int desc, uint32_t l, char *pat)
{
    char sql[1024];
    int rc;

    snprintf(sql, sizeof(sql),
             "SELECT " KCOLS " FROM kernels k LEFT JOIN dicts n ON"
             " n.sess=k.sess AND n.id=k.name_id WHERE k.sess=?1"
             "%s AND (k.%s, k.seq) %s (?4, ?5)"
             "%s ORDER BY k.%s %s, k.seq %s LIMIT ?7",
             /* a time range only when asked: without statistics the
              * PostgreSQL planner takes an open range for a selective one */
             q->from || q->to ? " AND k.ts >= ?2 AND k.ts < ?3" : "",
             by_dur ? "dur" : "ts", desc ? "<" : ">",
             q->name ? PAGE_NAME_FILTER : "", by_dur ? "dur" : "ts",
             desc ? "DESC" : "ASC", desc ? "DESC" : "ASC");
    if ((rc = prep(c, sql)) != 0)
        return rc;
    page_bind(c, q, cur, l, pat);
    return GPUFL_OK;
}

int srv_store_q_kernels(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    int64_t cur[2], last[2] = { 0, 0 };
    int by_dur = q->sort && strcmp(q->sort, "duration") == 0;
    int desc = q->desc;
    uint32_t n = 0, l = lim(q);
    char pat[SQ_PAT_MAX];
    int rc, hc;

    if (q->sort && !by_dur && strcmp(q->sort, "start") != 0)
        return GPUFL_EINVAL;
    q_begin(s, &c);
    if ((rc = sess_find(&c, q->sid)) != 0)
        return q_end(&c, rc, w);
    cur[0] = desc ? INT64_MAX : INT64_MIN;
    cur[1] = desc ? INT64_MAX : -1;
    if ((hc = cursor(q, cur, 2)) < 0)
        return q_end(&c, GPUFL_EINVAL, w);
    /* one row-value bound on the index key (a separate "ts >= from" next
     * to an OR-ed cursor test made SQLite seek from the cursor instead) */
    if (!by_dur) {
        int64_t from = (int64_t)q->from,
                to = q->to ? (int64_t)q->to : INT64_MAX;
        if (!desc && cur[0] < from) {
            cur[0] = from;
            cur[1] = -1;
        }
        if (desc && cur[0] >= to) {
            cur[0] = to;
            cur[1] = -1;
        }
    }
    rc = by_dur ? kernels_by_dur(&c, q, cur, desc, l, pat) : GPUFL_EFULL;
    if (rc == GPUFL_EFULL)
        rc = kernels_sql(&c, q, cur, by_dur, desc, l, pat);
    if (rc)
        return q_end(&c, rc, w);
    (void)hc;
    jw_obj_begin(w);
    jw_key(w, "items");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW && n < l) {
        jw_obj_begin(w);
        w_kernel_row(&c, w);
        jw_obj_end(w);
        last[0] = by_dur ? ci(&c, 2) : ci(&c, 1);
        last[1] = ci(&c, 0);
        n++;
    }
    jw_arr_end(w);
    w_next(w, rc == SDB_ROW, last, 2);
    jw_obj_end(w);
    return q_end(&c, rc == SDB_ROW || rc == SDB_DONE ? 0 : sq_err(rc), w);
}

int srv_store_q_kernel(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    int64_t scope, path, stack, cfg, sess;
    char buf[SQ_PATH_STR_MAX];
    int rc;

    q_begin(s, &c);
    if ((rc = sess_find(&c, q->sid)) != 0)
        return q_end(&c, rc, w);
    sess = c.sess;
    rc = prep(&c, "SELECT " KCOLS ", d.lim, d.lmem, d.dsmem FROM kernels k"
                  " LEFT JOIN dicts n ON n.sess=k.sess AND n.id=k.name_id"
                  " LEFT JOIN dicts d ON d.sess=k.sess AND d.id=k.cfg"
                  " WHERE k.sess=? AND k.seq=?");
    if (rc)
        return q_end(&c, rc, w);
    bi(&c, 1, sess);
    bi(&c, 2, (int64_t)q->kid);
    if ((rc = sdb_step(c.st)) != SDB_ROW)
        return q_end(&c, rc == SDB_DONE ? GPUFL_ENOTFOUND : sq_err(rc), w);
    jw_obj_begin(w);
    w_kernel_row(&c, w);
    scope = ci(&c, 16);
    path = ci(&c, 17);
    stack = ci(&c, 18);
    cfg = ci(&c, 21);
    jw_kv_i64(w, "end", ci(&c, 1) + ci(&c, 2));
    if (ci(&c, 20)) {
        jw_kv_i64(w, "api_enter", ci(&c, 1) + ci(&c, 19));
        jw_kv_i64(w, "api_dur", ci(&c, 20));
    }
    jw_kv_i64(w, "launch_cfg", cfg);
    jw_key(w, "cooperative");
    jw_bool(w, (ci(&c, 22) & EVF_COOP) != 0);
    if (!sdb_col_null(c.st, 23))
        jw_kv_str(w, "limiter", ct(&c, 23));
    jw_kv_i64(w, "local_mem", ci(&c, 24));
    jw_kv_i64(w, "dyn_smem", ci(&c, 25));
    /* the scope instance's path, from its scope_begin line */
    if (scope && !path) {
        if (!prep(&c,
                  "SELECT path FROM scopes WHERE sess=? AND id=? LIMIT 1")) {
            bi(&c, 1, sess);
            bi(&c, 2, scope);
            if (sdb_step(c.st) == SDB_ROW)
                path = ci(&c, 0);
        }
    }
    jw_kv_str(w, "path", path_of(c.db, sess, path, buf, sizeof(buf)));
    jw_key(w, "stack");
    if (stack && !prep(&c, "SELECT body FROM dicts WHERE sess=? AND id=?")) {
        char *body = NULL;
        bi(&c, 1, sess);
        bi(&c, 2, stack);
        if (sdb_step(c.st) == SDB_ROW)
            body = strdup(ct(&c, 0));
        jw_obj_begin(w);
        w_raw_member(w, body, "frames");
        jw_obj_end(w);
        free(body);
    } else {
        jw_null(w);
    }
    jw_obj_end(w);
    return q_end(&c, GPUFL_OK, w);
}

/* One aggregate row, as read from kagg (+ its name). */
typedef struct agg_row {
    char *name; /* malloc'd, whole */
    uint64_t n, total, min, max, p50, p99, n_occ;
    double sum_occ;
    int64_t regs, smem;
} agg_row;

static void agg_free(agg_row *rows, size_t n)
{
    for (size_t i = 0; i < n && rows; i++)
        free(rows[i].name);
    free(rows);
}

/* All aggregate rows of a session, biggest total first (agg_free). */
static int agg_load(qctx *c, const char *namefilter, agg_row **out,
                    size_t *nout)
{
    agg_row *rows = NULL;
    size_t n = 0, cap = 0;
    char pat[600];
    int rc;

    *out = NULL;
    *nout = 0;
    rc = prep(c, "SELECT coalesce(d.name, ''), a.n, a.total, a.min, a.max,"
                 " a.sum_occ, a.n_occ, a.regs, a.smem, a.hist FROM kagg a"
                 " LEFT JOIN dicts d ON d.sess=a.sess AND d.id=a.name_id"
                 " WHERE a.sess=?1 AND (CAST(?2 AS TEXT) IS NULL OR d.name"
                 " LIKE ?2 ESCAPE '\\') ORDER BY a.total DESC, a.name_id");
    if (rc)
        return rc;
    bi(c, 1, c->sess);
    if (namefilter) {
        like_pat(namefilter, pat, sizeof(pat));
        bt(c, 2, pat);
    }
    while ((rc = sdb_step(c->st)) == SDB_ROW && n < SQ_NAMES_MAX) {
        agg_row *r;
        uint64_t h[RL_HIST_N];
        if (n == cap) {
            agg_row *nr =
                realloc(rows, (cap = cap ? cap * 2 : 64) * sizeof(*rows));
            if (!nr) {
                agg_free(rows, n);
                return GPUFL_ENOMEM;
            }
            rows = nr;
        }
        r = &rows[n];
        if (!(r->name = strdup(ct(c, 0)))) {
            agg_free(rows, n);
            return GPUFL_ENOMEM;
        }
        n++;
        r->n = (uint64_t)ci(c, 1);
        r->total = (uint64_t)ci(c, 2);
        r->min = (uint64_t)ci(c, 3);
        r->max = (uint64_t)ci(c, 4);
        r->sum_occ = sdb_col_f64(c->st, 5);
        r->n_occ = (uint64_t)ci(c, 6);
        r->regs = ci(c, 7);
        r->smem = ci(c, 8);
        memset(h, 0, sizeof(h));
        {
            size_t hn = 0;
            const void *hp = sdb_col_blob(c->st, 9, &hn);
            (void)rl_hist_decode_add(hp, hn, h);
        }
        r->p50 = rl_hist_quantile(h, r->n, 0.5);
        r->p99 = rl_hist_quantile(h, r->n, 0.99);
        /* the histogram's midpoint may fall outside the exact range */
        if (r->p50 < r->min)
            r->p50 = r->min;
        if (r->p99 > r->max)
            r->p99 = r->max;
        if (r->p50 > r->max)
            r->p50 = r->max;
        if (r->p99 < r->min)
            r->p99 = r->min;
    }
    if (rc != SDB_DONE && rc != SDB_ROW) {
        agg_free(rows, n);
        return sq_err(rc);
    }
    *out = rows;
    *nout = n;
    return GPUFL_OK;
}

static void w_agg(jw *w, const agg_row *r)
{
    jw_kv_u64(w, "count", r->n);
    jw_kv_u64(w, "total_ns", r->total);
    jw_kv_u64(w, "avg_ns", r->n ? r->total / r->n : 0);
    jw_kv_u64(w, "min_ns", r->min);
    jw_kv_u64(w, "p50_ns", r->p50);
    jw_kv_u64(w, "p99_ns", r->p99);
    jw_kv_u64(w, "max_ns", r->max);
    jw_key(w, "occ_avg");
    if (r->n_occ)
        jw_f64(w, r->sum_occ / (double)r->n_occ, 4);
    else
        jw_null(w);
    jw_kv_i64(w, "regs", r->regs);
    jw_kv_i64(w, "smem", r->smem);
}

int srv_store_q_kernel_agg(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    agg_row *rows = NULL;
    size_t n = 0;
    int64_t off = 0;
    uint32_t l = lim(q);
    int rc;

    q_begin(s, &c);
    if ((rc = sess_find(&c, q->sid)) != 0)
        return q_end(&c, rc, w);
    if (cursor(q, &off, 1) < 0 || off < 0)
        return q_end(&c, GPUFL_EINVAL, w);
    if ((rc = agg_load(&c, q->name, &rows, &n)) != 0)
        return q_end(&c, rc, w);
    jw_obj_begin(w);
    jw_kv_str(w, "percentiles", "log-histogram, within 3.2%");
    jw_key(w, "items");
    jw_arr_begin(w);
    for (size_t i = (size_t)off; i < n && i < (size_t)off + l; i++) {
        jw_obj_begin(w);
        jw_kv_str(w, "name", rows[i].name);
        w_agg(w, &rows[i]);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    off += l;
    w_next(w, (size_t)off < n, &off, 1);
    jw_obj_end(w);
    agg_free(rows, n);
    return q_end(&c, GPUFL_OK, w);
}

int srv_store_q_compare(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    agg_row *ra = NULL, *rb = NULL;
    size_t na = 0, nb = 0, l = lim(q);
    int rc;

    q_begin(s, &c);
    if ((rc = sess_find(&c, q->sid)) != 0 ||
        (rc = agg_load(&c, q->name, &ra, &na)) != 0)
        goto out;
    if ((rc = sess_find(&c, q->b_sid)) != 0 ||
        (rc = agg_load(&c, q->name, &rb, &nb)) != 0)
        goto out;
    jw_obj_begin(w);
    jw_kv_str(w, "a", q->sid);
    jw_kv_str(w, "b", q->b_sid);
    jw_key(w, "items");
    jw_arr_begin(w);
    /* a's names by total, then b's names a lacks (up to limit each);
     * quadratic in names, which SQ_NAMES_MAX caps */
    for (int pass = 0; pass < 2; pass++) {
        size_t nn = pass ? nb : na;
        const agg_row *src = pass ? rb : ra;
        for (size_t i = 0, out = 0; i < nn && out < l; i++) {
            const agg_row *x = NULL, *y = NULL;
            const agg_row *other = pass ? ra : rb;
            size_t no = pass ? na : nb;
            const agg_row *m = NULL;
            for (size_t j = 0; j < no; j++)
                if (strcmp(other[j].name, src[i].name) == 0) {
                    m = &other[j];
                    break;
                }
            if (pass && m)
                continue;
            x = pass ? NULL : &src[i];
            y = pass ? &src[i] : m;
            if (!pass)
                y = m;
            jw_obj_begin(w);
            jw_kv_str(w, "name", src[i].name);
            jw_key(w, "a");
            if (x) {
                jw_obj_begin(w);
                w_agg(w, x);
                jw_obj_end(w);
            } else {
                jw_null(w);
            }
            jw_key(w, "b");
            if (y) {
                jw_obj_begin(w);
                w_agg(w, y);
                jw_obj_end(w);
            } else {
                jw_null(w);
            }
            if (x && y && x->n && y->n) {
                double aa = (double)x->total / (double)x->n;
                double ab = (double)y->total / (double)y->n;
                jw_key(w, "avg_change_pct");
                jw_f64(w, aa > 0 ? (ab - aa) * 100.0 / aa : 0, 2);
            }
            jw_obj_end(w);
            out++;
        }
    }
    jw_arr_end(w);
    jw_obj_end(w);
out:
    agg_free(ra, na);
    agg_free(rb, nb);
    return q_end(&c, rc, w);
}
