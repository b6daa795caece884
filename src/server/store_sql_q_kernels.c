/*
 * store_sql_q_kernels.c - the kernels of a session: pages sorted by start
 * or duration, and one kernel in full (aggregates by name and the
 * comparison of two sessions: store_sql_q_kagg.c).
 *
 * Kernel pages are keyset-paginated (the cursor holds the last row's sort
 * key and seq), so a page costs the same at any depth; sorted by duration
 * they read the kext prefix (store_sql_ext.c) and fall back to a plain
 * sort past it.
 */
#include "store_sql_int.h"
#include "store_sql_kblocks_read.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kblock.h"
#include "srv_json.h"
#include "store_sql_q.h"

/* A kernel row: its name is the display name (demangled when stored) and
 * the recorded one (23), docs/api.md "Names". */
#define KROW_K                                                                 \
    "k.seq, k.ts, k.dur, k.dev, k.stream, k.corr, k.name_id, k.cfg, k.gx,"     \
    " k.gy, k.gz, k.bx, k.by, k.bz, k.regs, k.smem, k.occ, k.scope, k.path,"   \
    " k.stack, k.api_off, k.api_dur, k.flags, k.tid"
#define KCOLS KROW_K ", coalesce(n.demangled, n.name, ''), coalesce(n.name, '')"
/* KCOLS is KB_ROW_COLS (kb_row_ev reads it), then the display and the
 * recorded name (KCOLS_NAME, + 1).  Columns after KCOLS in a detail query
 * start at KCOLS_N. */
#define KCOLS_NAME 24
#define KCOLS_N 26

/* The sort keys of a kernel page: column or expression, by sort= name.
 * The latencies are those of kernels whose call counts (SQ_API_OK). */
static const struct {
    const char *name, *key;
    int api;
} sorts[] = {
    { "start", "k.ts", 0 },
    { "duration", "k.dur", 0 },
    { "queue", "(-k.api_off - k.api_dur)", 1 },
    { "launch_latency", "(-k.api_off)", 1 },
};

/* 1 when a row's call times (api_off, api_dur at ts) count, as SQ_API_OK
 * says in SQL. */
static int api_ok(int64_t ts, int64_t off, int64_t dur)
{
    return dur > 0 && off >= -ts && off <= INT64_MAX - ts - dur;
}

static void w_xyz(jw *w, const char *k, int64_t x, int64_t y, int64_t z)
{
    jw_key(w, k);
    jw_arr_begin(w);
    srv_jw_num(w, x);
    srv_jw_num(w, y);
    srv_jw_num(w, z);
    jw_arr_end(w);
}

/* One kernel's members, from a row or a block alike (nul: kb_top's). */
static void w_kernel_ev(jw *w, const kblock_ev *e, unsigned nul,
                        const char *name, const char *mangled)
{
    int64_t ts = (int64_t)e->ts, off = e->api_off, dur = (int64_t)e->api_dur;
    int ok = api_ok(ts, off, dur);

    srv_jw_kv_num(w, "kid", (int64_t)e->seq);
    srv_jw_kv_dec(w, "ts", ts);
    srv_jw_kv_dec(w, "dur", (int64_t)e->dur);
    srv_jw_kv_num(w, "dev", (int64_t)e->dev);
    srv_jw_kv_num(w, "stream", (int64_t)e->stream);
    srv_jw_kv_num(w, "corr", (int64_t)e->corr);
    jw_kv_str(w, "name", name);
    jw_kv_str(w, "mangled", mangled);
    w_xyz(w, "grid", (int64_t)e->grid[0], (int64_t)e->grid[1],
          (int64_t)e->grid[2]);
    w_xyz(w, "block", e->block[0], e->block[1], e->block[2]);
    srv_jw_kv_num(w, "regs", e->regs);
    srv_jw_kv_num(w, "smem", e->smem);
    jw_key(w, "occ");
    if (nul & 1)
        jw_null(w);
    else
        jw_f64(w, e->occ, 4);
    srv_jw_kv_num(w, "scope", (int64_t)e->scope);
    jw_key(w, "tid");
    if (ok && !(nul & 2))
        srv_jw_num(w, (int64_t)e->tid);
    else
        jw_null(w);
    /* no overflow: api_ok bounds the call within 0 .. 2^63-1 */
    jw_key(w, "launch_ns");
    if (ok)
        srv_jw_dec(w, -off);
    else
        jw_null(w);
    jw_key(w, "queue_ns");
    if (ok)
        srv_jw_dec(w, -off - dur);
    else
        jw_null(w);
}

static void w_kernel_row(qctx *c, jw *w)
{
    kblock_ev e;
    unsigned nul;

    kb_row_ev(c->st, 0, &e, &nul);
    w_kernel_ev(w, &e, nul, qcol_text(c->st, KCOLS_NAME),
                qcol_text(c->st, KCOLS_NAME + 1));
}

/* A block's kernel (no join gives its names): its members, the names
 * read by st (NAME_SQL) - "" for both when the id names nothing, as the
 * row's LEFT JOIN. */
static int w_kernel_named(jw *w, sdb_stmt *st, int64_t sess, const kblock_ev *e,
                          unsigned nul)
{
    int rc;

    sdb_reset(st);
    qbind_i64(st, 1, sess);
    qbind_i64(st, 2, e->name_id);
    rc = sdb_step(st);
    if (rc != SDB_ROW && rc != SDB_DONE)
        return sq_err(rc);
    w_kernel_ev(w, e, nul, rc == SDB_ROW ? qcol_text(st, 0) : "",
                rc == SDB_ROW ? qcol_text(st, 1) : "");
    return GPUFL_OK;
}
#define NAME_SQL                                                               \
    "SELECT coalesce(demangled, name, ''), coalesce(name, '') FROM dicts"      \
    " WHERE sess=? AND id=?"

/* Bytes of a name filter's LIKE pattern. */
#define SQ_PAT_MAX 600

/* The parameters every kernel page statement shares: ?1 session, ?2/?3
 * the time range (used only when one was asked), ?4/?5 the cursor, ?6 the
 * name pattern (only with a filter; pat, SQ_PAT_MAX bytes, holds it until
 * the last step), ?7 the page size plus one. */
static void page_bind(qctx *c, const srv_q *q, const int64_t *cur, uint32_t l,
                      char *pat)
{
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, (int64_t)q->from);
    qbind_i64(c->st, 3, q->to ? (int64_t)q->to : INT64_MAX);
    qbind_i64(c->st, 4, cur[0]);
    qbind_i64(c->st, 5, cur[1]);
    if (q->name) {
        sq_like_pat(q->name, pat, SQ_PAT_MAX);
        qbind_text(c->st, 6, pat);
    }
    qbind_i64(c->st, 7, l + 1);
}

/* The name filter of a kernel page (?6), only with a filter: the subquery
 * is built per execution. */
#define PAGE_NAME_FILTER                                                       \
    " AND k.name_id IN (SELECT id FROM dicts WHERE sess=?1 AND kind=0 AND"     \
    " (name LIKE ?6 ESCAPE '\\' OR demangled LIKE ?6 ESCAPE '\\'))"
/* overlap=true: of the kernels started from ?2 (moved back by the
 * longest kernel, occupy_lo), those still running at ?9 (the asked from) */
#define PAGE_OCCUPY " AND (k.ts + k.dur > ?9 OR k.ts >= ?9)"

/* The page's statement over kext (count_only: just how many rows). */
static int kext_sql(qctx *c, const srv_q *q, const int64_t *cur, int desc,
                    uint32_t l, char *pat, int count_only, int64_t occ)
{
    char sql[1024];
    int rc;

    snprintf(sql, sizeof(sql),
             "%s FROM kext x JOIN kernels k ON k.sess=x.sess AND k.seq=x.seq"
             "%s WHERE x.sess=?1 AND x.side=?8 AND (x.dur, x.seq) %s (?4, ?5)"
             "%s%s%s ORDER BY x.dur %s, x.seq %s LIMIT ?7%s",
             count_only ? "SELECT count(*) FROM (SELECT 1" : "SELECT " KCOLS,
             count_only ? ""
                        : " LEFT JOIN dicts n ON n.sess=k.sess AND"
                          " n.id=k.name_id",
             desc ? "<" : ">",
             q->from || q->to ? " AND k.ts >= ?2 AND k.ts < ?3" : "",
             occ ? PAGE_OCCUPY : "", q->name ? PAGE_NAME_FILTER : "",
             desc ? "DESC" : "ASC", desc ? "DESC" : "ASC",
             count_only ? ") t" : "");
    if ((rc = q_prepare(c, sql)) != 0)
        return rc;
    page_bind(c, q, cur, l, pat);
    qbind_i64(c->st, 8, desc ? 0 : 1);
    if (occ)
        qbind_i64(c->st, 9, occ);
    return GPUFL_OK;
}

/* *whole 1 when kext's side (desc: 0) holds every kernel of the session
 * (then its rows after a cursor are all there are). */
static int kext_whole(qctx *c, int desc, int *whole)
{
    int rc;

    if ((rc = q_prepare(c, "SELECT CASE WHEN (SELECT count(*) FROM kext"
                           " WHERE sess=?1 AND side=?2) = (SELECT n_kernels"
                           " FROM sessions WHERE id=?1) THEN 1 ELSE 0 END")) !=
        0)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, desc ? 0 : 1);
    if ((rc = sdb_step(c->st)) != SDB_ROW)
        return sq_err(rc);
    *whole = qcol_i64(c->st, 0) != 0;
    return GPUFL_OK;
}

/* Prepares the page of kernels sorted by duration from kext as c->st (its
 * rows: the page, plus one when there is more).  kext holds a prefix of
 * the session's kernels in each order (store_sql_ext.c), so its rows
 * after the cursor are the right ones as far as they go: when they fill
 * the page, or when kext holds every kernel of the session.  Otherwise
 * GPUFL_EFULL: the caller sorts the plain way. */
static int kernels_by_dur(qctx *c, const srv_q *q, const int64_t *cur, int desc,
                          uint32_t l, char *pat, int64_t occ)
{
    int64_t n;
    int rc;

    if ((rc = kext_sql(c, q, cur, desc, l, pat, 1, occ)) != 0)
        return rc;
    if ((rc = sdb_step(c->st)) != SDB_ROW)
        return sq_err(rc);
    n = qcol_i64(c->st, 0);
    if (n <= (int64_t)l) {
        int whole = 0;
        if ((rc = kext_whole(c, desc, &whole)) != 0)
            return rc;
        if (!whole)
            return GPUFL_EFULL; /* past what kext holds */
    }
    return kext_sql(c, q, cur, desc, l, pat, 0, occ);
}

/* Prepares the page of kernels (sorted by key, sorts[]: start, or
 * duration, queue or launch latency as one plain sort) as c->st, with one
 * row more when there is more.  pat (SQ_PAT_MAX bytes) holds the name
 * pattern, bound until the last step. */
static int kernels_sql(qctx *c, const srv_q *q, const int64_t *cur, int sort,
                       int desc, uint32_t l, char *pat, int64_t occ)
{
    char sql[1536];
    int rc;

    snprintf(sql, sizeof(sql),
             "SELECT " KCOLS " FROM kernels k LEFT JOIN dicts n ON"
             " n.sess=k.sess AND n.id=k.name_id WHERE k.sess=?1"
             "%s%s%s AND (%s, k.seq) %s (?4, ?5)"
             "%s ORDER BY %s %s, k.seq %s LIMIT ?7",
             /* a time range only when asked: without statistics the
              * PostgreSQL planner takes an open range for a selective one */
             q->from || q->to ? " AND k.ts >= ?2 AND k.ts < ?3" : "",
             occ ? PAGE_OCCUPY : "", sorts[sort].api ? " AND " SQ_API_OK_K : "",
             sorts[sort].key, desc ? "<" : ">", q->name ? PAGE_NAME_FILTER : "",
             sorts[sort].key, desc ? "DESC" : "ASC", desc ? "DESC" : "ASC");
    if ((rc = q_prepare(c, sql)) != 0)
        return rc;
    page_bind(c, q, cur, l, pat);
    if (occ)
        qbind_i64(c->st, 9, occ);
    return GPUFL_OK;
}

/* overlap=true: where the scan of kernels occupying [from, ...) starts -
 * from less the session's longest kernel (sq_kernels_back), or earlier,
 * at the first long kernel (klong) still running at from. */
static int occupy_lo(qctx *c, uint64_t from, int64_t *lo)
{
    int rc = sq_kernels_back(c, from, lo);

    if (rc)
        return rc;
    if ((rc = q_prepare(c, "SELECT min(ts) FROM klong WHERE sess=? AND"
                           " ts < ? AND ts + dur > ?")) != 0)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, *lo);
    qbind_i64(c->st, 3, (int64_t)from);
    if ((rc = sdb_step(c->st)) != SDB_ROW)
        return sq_err(rc);
    if (!qcol_null(c->st, 0) && qcol_i64(c->st, 0) < *lo)
        *lo = qcol_i64(c->st, 0);
    return GPUFL_OK;
}

/* The block events a page takes: those its rows' WHERE would. */
typedef struct page_keep {
    int key, desc, api;
    int64_t cur[2], occ;
    const int64_t *ids; /* name filter's ids, sorted; NULL: no filter */
    size_t nids;
} page_keep;

static int page_keeps(const kblock_ev *e, void *arg)
{
    const page_keep *k = arg;
    int64_t v = kb_key(e, k->key), seq = (int64_t)e->seq;

    if (k->occ &&
        !((int64_t)(e->ts + e->dur) > k->occ || (int64_t)e->ts >= k->occ))
        return 0;
    if (k->api && !api_ok((int64_t)e->ts, e->api_off, (int64_t)e->api_dur))
        return 0;
    if (k->desc ? !(v < k->cur[0] || (v == k->cur[0] && seq < k->cur[1]))
                : !(v > k->cur[0] || (v == k->cur[0] && seq > k->cur[1])))
        return 0;
    return !k->ids ||
           bsearch(&e->name_id, k->ids, k->nids, sizeof(int64_t), sq_cmp_i64);
}

/* The name filter's name ids (sorted, malloc'd into *ids). */
static int page_ids(qctx *c, const char *pat, int64_t **ids, size_t *n)
{
    size_t cap = 0;
    int rc;

    *ids = NULL;
    *n = 0;
    if ((rc = q_prepare(c, "SELECT id FROM dicts WHERE sess=?1 AND kind=0 AND"
                           " (name LIKE ?2 ESCAPE '\\' OR demangled LIKE ?2"
                           " ESCAPE '\\')")) != 0)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    qbind_text(c->st, 2, pat);
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        if (*n == cap) {
            int64_t *x =
                realloc(*ids, (cap = cap ? 2 * cap : 64) * sizeof(**ids));
            if (!x)
                return GPUFL_ENOMEM;
            *ids = x;
        }
        (*ids)[(*n)++] = qcol_i64(c->st, 0);
    }
    if (rc != SDB_DONE)
        return sq_err(rc);
    if (*n > 1)
        qsort(*ids, *n, sizeof(**ids), sq_cmp_i64);
    return GPUFL_OK;
}

/* A page by duration without filters: kext holds a prefix of the
 * session's kernels in each order (store_sql_ext.c), so its (l + 1)th
 * after the cursor bounds the page - no kernel of it is further away -
 * and blocks beyond that bound go unread (t->bound). */
static int kext_bound(qctx *c, const int64_t *cur, int desc, uint32_t l,
                      kb_top *t)
{
    int rc;

    rc = q_prepare(c, desc ? "SELECT dur FROM kext WHERE sess=?1 AND side=0"
                             " AND (dur, seq) < (?2, ?3) ORDER BY dur DESC,"
                             " seq DESC LIMIT 1 OFFSET ?4"
                           : "SELECT dur FROM kext WHERE sess=?1 AND side=1"
                             " AND (dur, seq) > (?2, ?3) ORDER BY dur, seq"
                             " LIMIT 1 OFFSET ?4");
    if (rc)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, cur[0]);
    qbind_i64(c->st, 3, cur[1]);
    qbind_i64(c->st, 4, l);
    if ((rc = sdb_step(c->st)) == SDB_ROW) {
        t->has_bound = 1;
        t->bound = qcol_i64(c->st, 0);
    }
    return rc == SDB_ROW || rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

/* sql over kext's keys after the cursor as c->st: ?1 the session, ?2/?3
 * the cursor, ?4 the page size plus one. */
static int keys_prepare(qctx *c, const char *sql, const int64_t *cur,
                        uint32_t l)
{
    int rc = q_prepare(c, sql);

    if (rc)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, cur[0]);
    qbind_i64(c->st, 3, cur[1]);
    qbind_i64(c->st, 4, (int64_t)l + 1);
    return GPUFL_OK;
}

/* A page by duration without filters from kext's keys after the cursor
 * (l + 1 at most), each with its kernel's row or, for a kernel in a
 * block, its kept row (kxrow, store_sql_kxrow.c), offered to t: the
 * rows path's answer (kernels_by_dur), read without decoding a block.
 * *kept 1 when it is the answer: every key has its row, and the keys fill
 * the page or kext holds every kernel.  Else t is left empty (the caller
 * reads the blocks). */
static int kept_page(qctx *c, const int64_t *cur, int desc, uint32_t l,
                     kb_top *t, int *kept)
{
    char keys[256], sql[2048];
    int64_t nk, got = 0, seqs[SQ_LIMIT_MAX + 1];
    kblock_ev e;
    unsigned nul;
    int rc, side = desc ? 0 : 1;

    *kept = 0;
    snprintf(keys, sizeof(keys),
             "(SELECT dur, seq FROM kext WHERE sess=?1 AND side=%d AND"
             " (dur, seq) %s (?2, ?3) ORDER BY dur %s, seq %s LIMIT ?4) x",
             side, desc ? "<" : ">", desc ? "DESC" : "ASC",
             desc ? "DESC" : "ASC");
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", keys);
    if ((rc = keys_prepare(c, sql, cur, l)) != 0)
        return rc;
    if ((rc = sdb_step(c->st)) != SDB_ROW)
        return sq_err(rc);
    nk = qcol_i64(c->st, 0);
    if (nk > (int64_t)l + 1 || nk > SQ_LIMIT_MAX + 1)
        return GPUFL_EINTERNAL;
    if (nk <= (int64_t)l) {
        int whole = 0;
        if ((rc = kext_whole(c, desc, &whole)) != 0 || !whole)
            return rc; /* past what kext holds */
    }
    snprintf(sql, sizeof(sql),
             "SELECT " KROW_K " FROM %s JOIN kernels k ON k.sess=?1 AND"
             " k.seq=x.seq UNION ALL SELECT " KROW_K " FROM %s JOIN kxrow k"
             " ON k.sess=?1 AND k.side=%d AND k.dur=x.dur AND k.seq=x.seq",
             keys, keys, side);
    if ((rc = keys_prepare(c, sql, cur, l)) != 0)
        return rc;
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        if (got == nk) { /* more rows than keys: one both ways */
            got++;
            break;
        }
        kb_row_ev(c->st, 0, &e, &nul);
        seqs[got++] = (int64_t)e.seq;
        kb_top_add(t, &e, nul);
    }
    if (rc != SDB_ROW && rc != SDB_DONE)
        return sq_err(rc);
    /* every key once: as many rows as keys, no seq twice */
    if (got == nk && got > 1)
        qsort(seqs, (size_t)got, sizeof(seqs[0]), sq_cmp_i64);
    for (int64_t i = 1; i < got && got == nk; i++)
        if (seqs[i] == seqs[i - 1])
            got = -1;
    if (got != nk) {
        t->n = 0;
        return GPUFL_OK;
    }
    *kept = 1;
    return GPUFL_OK;
}

/* The columns a page's block events are chosen by (page_keeps, and the
 * heap's key): the rest are decoded for those that place only. */
static unsigned page_sel(const page_keep *k)
{
    unsigned sel = KB_C_TS | KB_C_SEQ | KB_C_DUR;

    if (k->api || k->key == KB_KEY_QUEUE || k->key == KB_KEY_LAUNCH)
        sel |= KB_C_API_OFF | KB_C_API_DUR;
    if (k->ids)
        sel |= KB_C_NAME;
    return sel;
}

/* The page of a session with blocks (docs/server.md "Kernel blocks"): its
 * rows' page (the plain sort; kext holds block kernels too) and the
 * blocks' events that place, merged by kb_top.  The whole answer. */
static int kernels_blocks(qctx *c, const srv_q *q, const int64_t *cur, int sort,
                          int desc, uint32_t l, char *pat, int64_t occ, jw *w)
{
    page_keep k = { sort, desc, sorts[sort].api, { cur[0], cur[1] }, occ,
                    NULL, 0 };
    static const int keys[] = { KB_KEY_TS, KB_KEY_DUR, KB_KEY_QUEUE,
                                KB_KEY_LAUNCH };
    int64_t *ids = NULL, last[2] = { 0, 0 };
    int64_t t_lo = (int64_t)q->from, t_hi = q->to ? (int64_t)q->to : INT64_MAX;
    sq_page_names pn = { NULL, NULL, NULL, 0 };
    kb_top t;
    uint32_t n = 0;
    int rc, kept = 0;

    k.key = keys[sort];
    if ((rc = kb_top_init(&t, (size_t)l + 1, k.key, desc)) != 0)
        return rc;
    t.has_cur = 1;
    t.cur[0] = cur[0];
    t.cur[1] = cur[1];
    if (q->name) {
        sq_like_pat(q->name, pat, SQ_PAT_MAX);
        if ((rc = page_ids(c, pat, &ids, &k.nids)) != 0)
            goto out;
        k.ids = ids ? ids : (const int64_t *)&k; /* none: nothing matches */
        t.ids = k.ids;
        t.nids = k.nids;
        t.named = 1;
    }
    /* by duration over all names: kext and the kept rows when they
     * answer, else bounded by kext */
    if (sort == 1 && !q->name && !q->from && !q->to && !occ) {
        if ((rc = kept_page(c, cur, desc, l, &t, &kept)) != 0 ||
            (!kept && (rc = kext_bound(c, cur, desc, l, &t)) != 0))
            goto out;
    }
    if (sort == 1)
        __atomic_fetch_add(kept ? &c->s->kq_kept : &c->s->kq_scanned, 1,
                           __ATOMIC_RELAXED);
    if (!kept && (rc = kernels_sql(c, q, cur, sort, desc, l, pat, occ)) != 0)
        goto out;
    while (!kept && (rc = sdb_step(c->st)) == SDB_ROW) {
        kblock_ev e;
        unsigned nul;
        kb_row_ev(c->st, 0, &e, &nul);
        kb_top_add(&t, &e, nul);
    }
    if (!kept && rc != SDB_DONE) {
        rc = sq_err(rc);
        goto out;
    }
    /* by start, no kernel before the cursor (after it, descending) can
     * place: the blocks read are those from the cursor on, not from the
     * range's start (a page deep into a session read every block before
     * its cursor) */
    if (sort == 0 && !desc && cur[0] > t_lo)
        t_lo = cur[0];
    if (sort == 0 && desc && cur[0] < t_hi)
        t_hi = cur[0] + 1;
    rc = kept ? GPUFL_OK
              : sq_kb_scan_sel(c->s, c->db, c->sess, t_lo, t_hi, KB_C_ALL,
                               page_sel(&k), page_keeps, &k, &t);
    if (rc)
        goto out;
    kb_top_sort(&t);
    if ((rc = sq_page_names_get(c, t.ev, t.n < l ? t.n : l, &pn)) != 0)
        goto out;
    jw_obj_begin(w);
    jw_key(w, "items");
    jw_arr_begin(w);
    for (; n < l && n < t.n; n++) {
        const kblock_ev *e = &t.ev[n];
        jw_obj_begin(w);
        w_kernel_ev(w, e, t.nul[n], sq_names_str(&pn, e->name_id, 0),
                    sq_names_str(&pn, e->name_id, 1));
        jw_obj_end(w);
        last[0] = kb_key(e, k.key);
        last[1] = (int64_t)e->seq;
    }
    jw_arr_end(w);
    q_next(w, t.n > l, last, 2);
    jw_obj_end(w);
out:
    sq_page_names_free(&pn);
    free(ids);
    kb_top_free(&t);
    return rc;
}

int srv_store_q_kernels(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    int64_t cur[2], last[2] = { 0, 0 };
    int sort = 0, desc = q->desc, by_dur;
    uint32_t n = 0, l = q_limit(q);
    char pat[SQ_PAT_MAX];
    srv_q qo;
    int64_t occ = 0;
    int rc, hc, blocks = 0;

    if (q->sort) {
        for (sort = 0; sort < (int)(sizeof(sorts) / sizeof(sorts[0])); sort++)
            if (!strcmp(q->sort, sorts[sort].name))
                break;
        if (sort == (int)(sizeof(sorts) / sizeof(sorts[0])))
            return GPUFL_EINVAL;
    }
    by_dur = sort == 1;
    q_begin(s, &c);
    if ((rc = q_session(&c, q->sid)) != 0)
        return q_end(&c, rc, w);
    if (q->overlap && q->from) {
        int64_t lo;
        if ((rc = occupy_lo(&c, q->from, &lo)) != 0)
            return q_end(&c, rc, w);
        /* the same page, its range starting at lo, filtered to from */
        qo = *q;
        qo.from = (uint64_t)lo;
        occ = (int64_t)q->from;
        q = &qo;
    }
    cur[0] = desc ? INT64_MAX : INT64_MIN;
    cur[1] = desc ? INT64_MAX : -1;
    if ((hc = q_cursor(q, cur, 2)) < 0)
        return q_end(&c, GPUFL_EINVAL, w);
    /* one row-value bound on the index key (a separate "ts >= from" next
     * to an OR-ed cursor test made SQLite seek from the cursor instead) */
    if (sort == 0) {
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
    if ((rc = q_snapshot(&c)) != 0 ||
        (rc = sq_kb_any(c.db, c.sess, &blocks)) != 0)
        return q_end(&c, rc, w);
    if (blocks)
        return q_end(&c, kernels_blocks(&c, q, cur, sort, desc, l, pat, occ, w),
                     w);
    rc = by_dur ? kernels_by_dur(&c, q, cur, desc, l, pat, occ) : GPUFL_EFULL;
    if (rc == GPUFL_EFULL)
        rc = kernels_sql(&c, q, cur, sort, desc, l, pat, occ);
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
        switch (sort) {
        case 0: last[0] = qcol_i64(c.st, 1); break;
        case 1: last[0] = qcol_i64(c.st, 2); break;
        case 2: last[0] = -qcol_i64(c.st, 20) - qcol_i64(c.st, 21); break;
        default: last[0] = -qcol_i64(c.st, 20); break;
        }
        last[1] = qcol_i64(c.st, 0);
        n++;
    }
    jw_arr_end(w);
    q_next(w, rc == SDB_ROW, last, 2);
    jw_obj_end(w);
    return q_end(&c, rc == SDB_ROW || rc == SDB_DONE ? 0 : sq_err(rc), w);
}

/* A kernel detail's members after the page's. */
static void w_detail(jw *w, const kblock_ev *e)
{
    int64_t ts = (int64_t)e->ts;

    srv_jw_kv_dec(w, "end", ts + (int64_t)e->dur);
    if (api_ok(ts, e->api_off, (int64_t)e->api_dur)) {
        srv_jw_kv_dec(w, "api_enter", ts + e->api_off);
        srv_jw_kv_dec(w, "api_dur", (int64_t)e->api_dur);
    }
    srv_jw_kv_num(w, "launch_cfg", (int64_t)e->cfg);
    jw_key(w, "cooperative");
    jw_bool(w, (e->flags & EVF_COOP) != 0);
}

/* The launch limiter members of a kernel detail (its cfg's dicts row, as
 * the row query's LEFT JOIN dicts d) from st's columns col.. */
static void w_launch(jw *w, sdb_stmt *st, int col, int have)
{
    if (have && !qcol_null(st, col))
        jw_kv_str(w, "limiter", qcol_text(st, col));
    srv_jw_kv_num(w, "local_mem", have ? qcol_i64(st, col + 1) : 0);
    srv_jw_kv_num(w, "dyn_smem", have ? qcol_i64(st, col + 2) : 0);
}

/* The head of a kernel detail: from its row (c->st on it) or, past the
 * rows, from the session's blocks (*found 0: neither holds kid). */
static int kernel_head(qctx *c, int64_t kid, jw *w, kblock_ev *e, int *found)
{
    sdb_stmt *nst = NULL;
    unsigned nul = 0;
    int rc;

    *found = 0;
    rc = q_prepare(c, "SELECT " KCOLS ", d.lim, d.lmem, d.dsmem FROM kernels k"
                      " LEFT JOIN dicts n ON n.sess=k.sess AND n.id=k.name_id"
                      " LEFT JOIN dicts d ON d.sess=k.sess AND d.id=k.cfg"
                      " WHERE k.sess=? AND k.seq=?");
    if (rc)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, kid);
    if ((rc = sdb_step(c->st)) == SDB_ROW) {
        kb_row_ev(c->st, 0, e, &nul);
        *found = 1;
        jw_obj_begin(w);
        w_kernel_ev(w, e, nul, qcol_text(c->st, KCOLS_NAME),
                    qcol_text(c->st, KCOLS_NAME + 1));
        w_detail(w, e);
        w_launch(w, c->st, KCOLS_N, 1);
        return GPUFL_OK;
    }
    if (rc != SDB_DONE)
        return sq_err(rc);
    if ((rc = sq_kb_find(c->s, c->db, c->sess, (uint64_t)kid, e, found)) != 0 ||
        !*found)
        return rc;
    if (sdb_prepare(c->db, NAME_SQL, &nst))
        return GPUFL_EINTERNAL;
    jw_obj_begin(w);
    nul = (e->occ < 0 ? 1u : 0u) | (e->tid ? 0u : 2u);
    rc = w_kernel_named(w, nst, c->sess, e, nul);
    sdb_finalize(nst);
    if (rc)
        return rc;
    w_detail(w, e);
    if ((rc = q_prepare(c, "SELECT lim, lmem, dsmem FROM dicts WHERE sess=?"
                           " AND id=?")) != 0)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, (int64_t)e->cfg);
    rc = sdb_step(c->st);
    if (rc != SDB_ROW && rc != SDB_DONE)
        return sq_err(rc);
    w_launch(w, c->st, 0, rc == SDB_ROW);
    return GPUFL_OK;
}

int srv_store_q_kernel(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    int64_t scope, path, stack, sess;
    char buf[SQ_PATH_STR_MAX];
    kblock_ev e;
    int rc, found = 0;

    q_begin(s, &c);
    if ((rc = q_session(&c, q->sid)) != 0)
        return q_end(&c, rc, w);
    sess = c.sess;
    if ((rc = q_snapshot(&c)) != 0)
        return q_end(&c, rc, w);
    if ((rc = kernel_head(&c, (int64_t)q->kid, w, &e, &found)) != 0 || !found)
        return q_end(&c, rc ? rc : GPUFL_ENOTFOUND, w);
    scope = (int64_t)e.scope;
    path = (int64_t)e.path;
    stack = (int64_t)e.stack;
    /* the scope instance's path, from its scope_begin line */
    if (scope && !path) {
        if (!q_prepare(
                &c, "SELECT path FROM scopes WHERE sess=? AND id=? LIMIT 1")) {
            qbind_i64(c.st, 1, sess);
            qbind_i64(c.st, 2, scope);
            if (sdb_step(c.st) == SDB_ROW)
                path = qcol_i64(c.st, 0);
        }
    }
    jw_kv_str(w, "path", sq_path_of(c.db, sess, path, buf, sizeof(buf)));
    jw_key(w, "stack");
    if (stack &&
        !q_prepare(&c, "SELECT body FROM dicts WHERE sess=? AND id=?")) {
        char *body = NULL;
        qbind_i64(c.st, 1, sess);
        qbind_i64(c.st, 2, stack);
        if (sdb_step(c.st) == SDB_ROW)
            body = strdup(qcol_text(c.st, 0));
        jw_obj_begin(w);
        sq_raw_member(w, body, "frames");
        jw_obj_end(w);
        free(body);
    } else {
        jw_null(w);
    }
    jw_obj_end(w);
    return q_end(&c, GPUFL_OK, w);
}
