/*
 * store_sql_gaps.c - which lines of each (session, stream) are stored, as
 * ranges of seq (table seqr), and what is missing: the seq ranges not
 * stored below the highest stored one (docs/api.md "gaps"), per session
 * and summed over sessions for /metrics.
 *
 * Kept at ingest from the lines a batch stored as new (a duplicate's seq
 * is in a range already): in body order they form runs, nearly always one
 * per (session, stream) and batch, and each run extends the stored range
 * that ends just below it, or becomes a range of its own; a range starting
 * just above it is folded in.  A run holds only seqs that were not stored,
 * so ranges never overlap: a stream's missing count is its highest seq + 1
 * minus the sum of its range lengths, and ranges that merely touch (left
 * by writers that interleaved) count the same as one.  Writers take turns
 * (SQLite's write lock, PostgreSQL's advisory lock), so a read-modify-write
 * here sees every other server's commits; what this process remembers (the
 * range it extended last) is only a hint that the SQL checks again.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ingest.h"
#include "srv_json.h"

int sq_gaps_begin(srv_store *s, const srv_ev *ev, size_t n)
{
    if (n > s->bcap) {
        uint8_t *a = realloc(s->bacc, n);
        int64_t *b;
        if (!a)
            return GPUFL_ENOMEM;
        s->bacc = a;
        if (!(b = realloc(s->bsess, n * sizeof(*b))))
            return GPUFL_ENOMEM;
        s->bsess = b;
        s->bcap = n;
    }
    memset(s->bacc, 0, n);
    s->bev = ev;
    s->nruns = 0;
    return GPUFL_OK;
}

static int run_push(srv_store *s, const sq_run *r)
{
    if (s->nruns == s->runs_cap) {
        size_t cap = s->runs_cap ? 2 * s->runs_cap : 64;
        sq_run *p = realloc(s->runs, cap * sizeof(*p));
        if (!p)
            return GPUFL_ENOMEM;
        s->runs = p;
        s->runs_cap = cap;
    }
    s->runs[s->nruns++] = *r;
    return GPUFL_OK;
}

static int run_cmp(const void *pa, const void *pb)
{
    const sq_run *a = pa, *b = pb;
    if (a->sess != b->sess)
        return a->sess < b->sess ? -1 : 1;
    if (a->st != b->st)
        return a->st - b->st;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* The batch's accepted lines as runs of consecutive seqs, sorted by
 * (session, stream, lo) with touching runs merged. */
static int runs_build(srv_store *s, size_t n)
{
    sq_run cur = { 0, 0, -1, 0 };
    int have = 0, sorted = 1, rc;
    size_t k = 0;

    for (size_t i = 0; i < n; i++) {
        const srv_ev *e = &s->bev[i];
        int64_t seq = (int64_t)e->seq;
        if (!s->bacc[i])
            continue;
        if (have && cur.sess == s->bsess[i] && cur.st == e->st) {
            if (seq - 1 == cur.hi) { /* (seq + 1 could overflow) */
                cur.hi = seq;
                continue;
            }
            if (seq >= cur.lo && seq <= cur.hi)
                continue; /* one seq in two tables: a malformed stream */
        }
        if (have && (rc = run_push(s, &cur)) != 0)
            return rc;
        cur.sess = s->bsess[i];
        cur.st = e->st;
        cur.lo = cur.hi = seq;
        have = 1;
    }
    if (have && (rc = run_push(s, &cur)) != 0)
        return rc;
    for (size_t i = 1; i < s->nruns && sorted; i++)
        sorted = run_cmp(&s->runs[i - 1], &s->runs[i]) < 0;
    if (!sorted)
        qsort(s->runs, s->nruns, sizeof(*s->runs), run_cmp);
    for (size_t i = 0; i < s->nruns; i++) {
        sq_run *r = &s->runs[i], *p = k ? &s->runs[k - 1] : NULL;
        if (p && p->sess == r->sess && p->st == r->st && r->lo - 1 <= p->hi) {
            if (r->hi > p->hi)
                p->hi = r->hi;
            continue;
        }
        s->runs[k++] = *r;
    }
    s->nruns = k;
    return GPUFL_OK;
}

/* One run into seqr. */
static int run_put(srv_store *s, const sq_run *r)
{
    uint64_t k[4] = { (uint64_t)r->sess, (uint64_t)r->st, 0, 0 };
    sq_run *h = rl_map_find(&s->seqhint, k);
    int64_t lo = r->lo, hi = r->hi;
    sdb_stmt *st;
    int rc, fresh;

    /* the common case: the run continues the range this writer extended
     * last, and that range is still as it left it */
    if (h && h->hi == r->lo - 1) {
        st = s->ws[WS_SEQ_EXT];
        qbind_i64(st, 1, r->hi);
        qbind_i64(st, 2, r->sess);
        qbind_i64(st, 3, r->st);
        qbind_i64(st, 4, h->lo);
        qbind_i64(st, 5, h->hi);
        if ((rc = qrun(st)) != 0)
            return rc;
        if (sdb_changes(s->w) == 1) {
            h->hi = r->hi;
            return GPUFL_OK;
        }
    }
    /* a range starting just above the run joins it (none above 2^63-1) */
    if (r->hi < INT64_MAX) {
        st = s->ws[WS_SEQ_TAKE];
        qbind_i64(st, 1, r->sess);
        qbind_i64(st, 2, r->st);
        qbind_i64(st, 3, r->hi + 1);
        rc = sdb_step(st);
        if (rc == SDB_ROW && qcol_i64(st, 0) > hi)
            hi = qcol_i64(st, 0);
        sdb_reset(st);
        if (rc != SDB_ROW && rc != SDB_DONE)
            return sq_err(rc);
    }
    /* the range ending just below it takes it in, or it is a new one */
    st = s->ws[WS_SEQ_JOIN];
    qbind_i64(st, 1, hi);
    qbind_i64(st, 2, r->sess);
    qbind_i64(st, 3, r->st);
    qbind_i64(st, 4, r->lo - 1);
    rc = sdb_step(st);
    if (rc == SDB_ROW)
        lo = qcol_i64(st, 0);
    sdb_reset(st);
    if (rc != SDB_ROW && rc != SDB_DONE)
        return sq_err(rc);
    if (rc == SDB_DONE) {
        st = s->ws[WS_SEQ_ADD];
        qbind_i64(st, 1, r->sess);
        qbind_i64(st, 2, r->st);
        qbind_i64(st, 3, r->lo);
        qbind_i64(st, 4, hi);
        if ((rc = qrun(st)) != 0)
            return rc;
    }
    if (s->seqhint.n >= SQ_CACHE_MAX)
        rl_map_clear(&s->seqhint);
    if ((h = rl_map_get(&s->seqhint, k, &fresh)) != NULL) {
        h->sess = r->sess;
        h->st = r->st;
        h->lo = lo;
        h->hi = hi;
    }
    return GPUFL_OK;
}

int sq_gaps_flush(srv_store *s, size_t n)
{
    int rc = runs_build(s, n);

    for (size_t i = 0; !rc && i < s->nruns; i++)
        rc = run_put(s, &s->runs[i]);
    return rc;
}

void sq_gaps_reset(srv_store *s)
{
    rl_map_clear(&s->seqhint);
}

void sq_gaps_release(srv_store *s)
{
    rl_map_release(&s->seqhint);
    free(s->bacc);
    free(s->bsess);
    free(s->runs);
    s->bacc = NULL;
    s->bsess = NULL;
    s->runs = NULL;
    s->bcap = s->nruns = s->runs_cap = 0;
}

/* ---- queries ---- */

/* What one stream's ranges leave missing, gathered in row order. */
typedef struct gap_acc {
    int64_t end; /* highest stored seq so far, -1 before the first */
    uint64_t count;
    int64_t lo[SQ_GAP_RANGES_MAX], hi[SQ_GAP_RANGES_MAX];
    unsigned n;
    int cut;
} gap_acc;

static void gap_add(gap_acc *g, int64_t lo, int64_t hi)
{
    if (lo - 1 > g->end) {
        g->count += (uint64_t)(lo - g->end - 1);
        if (g->n < SQ_GAP_RANGES_MAX) {
            g->lo[g->n] = g->end + 1;
            g->hi[g->n++] = lo - 1;
        } else {
            g->cut = 1;
        }
    }
    if (hi > g->end)
        g->end = hi;
}

int sq_gaps_json(sdb *db, int64_t sess, jw *w)
{
    gap_acc *g = calloc(SRV_ST_N, sizeof(*g));
    sdb_stmt *st = NULL;
    uint64_t total = 0;
    int rc;

    if (!g)
        return GPUFL_ENOMEM;
    for (int i = 0; i < SRV_ST_N; i++)
        g[i].end = -1;
    rc = sdb_prepare(db,
                     "SELECT st, lo, hi FROM seqr WHERE sess=? ORDER BY st,"
                     " lo",
                     &st);
    if (rc) {
        free(g);
        return GPUFL_EINTERNAL;
    }
    qbind_i64(st, 1, sess);
    while ((rc = sdb_step(st)) == SDB_ROW) {
        int64_t k = qcol_i64(st, 0);
        if (k >= 0 && k < SRV_ST_N)
            gap_add(&g[k], qcol_i64(st, 1), qcol_i64(st, 2));
    }
    sdb_finalize(st);
    if (rc != SDB_DONE) {
        free(g);
        return sq_err(rc);
    }
    for (int i = 0; i < SRV_ST_N; i++)
        total += g[i].count;
    srv_jw_kv_unum(w, "missing", total);
    jw_key(w, "gaps");
    jw_obj_begin(w);
    for (int i = 0; i < SRV_ST_N; i++) {
        if (g[i].end < 0)
            continue; /* nothing stored of this stream */
        jw_key(w, ingest_stream_name(i));
        jw_obj_begin(w);
        srv_jw_kv_unum(w, "count", g[i].count);
        jw_key(w, "ranges");
        jw_arr_begin(w);
        for (unsigned j = 0; j < g[i].n; j++) {
            jw_arr_begin(w);
            srv_jw_num(w, g[i].lo[j]);
            srv_jw_num(w, g[i].hi[j]);
            jw_arr_end(w);
        }
        jw_arr_end(w);
        jw_key(w, "ranges_cut");
        jw_bool(w, g[i].cut);
        srv_jw_kv_num(w, "last_seq", g[i].end);
        jw_obj_end(w);
    }
    jw_obj_end(w);
    free(g);
    return GPUFL_OK;
}

int srv_store_missing(srv_store *s, uint64_t out[SRV_ST_N])
{
    sdb *db = sq_reader_get(s);
    sdb_stmt *st = NULL;
    int rc;

    memset(out, 0, SRV_ST_N * sizeof(out[0]));
    if (sdb_prepare(db,
                    "SELECT st, sum(CASE WHEN m > 0 THEN m ELSE 0 END) FROM"
                    " (SELECT st, " SQ_MISSING_EXPR " AS m FROM seqr GROUP BY"
                    " sess, st) g GROUP BY st",
                    &st) != 0) {
        sq_reader_put(s, db);
        return GPUFL_EINTERNAL;
    }
    while ((rc = sdb_step(st)) == SDB_ROW) {
        int64_t k = qcol_i64(st, 0);
        if (k >= 0 && k < SRV_ST_N)
            out[k] = (uint64_t)qcol_i64(st, 1);
    }
    sdb_finalize(st);
    sq_reader_put(s, db);
    return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}
