/*
 * store_sql_kblocks_scan.c - the blocks of a read by start time with a
 * heap (a page by start, the zoomed-in timeline's raw kernels, the
 * export's window; issue 23, docs/server.md "At 100M kernels
 * (bench_scale)"), read from the kblocks_t index (sess, t_lo) in the
 * order of their bound and given up at the first from which on no block
 * can place.
 *
 * sq_kb_scan_sel's index query asks for every block of the range and
 * sorts them: a page with no `to` read every block from its start to the
 * session's end, ~12 000 index rows at 100M kernels, to decode a few.
 * Here the index is read in order, in chunks (PostgreSQL's sdb reads a
 * whole result at once) of SCAN_CHUNK_MIN rows doubling, each on from
 * where the last ended (its last t_lo again: blocks may start at the same
 * instant, those read already are skipped).
 *
 * Ascending, a block's bound is its t_lo, the index's order: the first
 * block that cannot beat the heap's worst ends the scan.  Descending the
 * bound is t_hi, which the index does not order: the blocks are read by
 * t_lo descending, each read only when its t_hi can place, and as no
 * block spans more than the session's kbspan (migration 25, never
 * lowered), no block read after one starting at t_lo ends after t_lo +
 * span: once that cannot place, the scan ends.  The blocks that reach the
 * range's start (its end, descending) are read whatever the heap holds:
 * their bytes come with their index rows.
 */
#include "store_sql_kblocks_int.h"
#include "store_sql_q.h"

#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdlib.h>

/* Index rows of the first chunk (a page's blocks at its start and the
 * next one or two of each stream), and the most of one: the chunks
 * double in between, so a scan that reads on (a rare name's page) takes
 * a few queries, not one per 32 blocks. */
#define SCAN_CHUNK_MIN 32
#define SCAN_CHUNK_MAX 4096

/* a + b and a - b for b >= 0, held within int64_t */
static int64_t add_sat(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

static int64_t sub_sat(int64_t a, int64_t b)
{
    return a < INT64_MIN + b ? INT64_MIN : a - b;
}

int sq_span_get(sdb *db, int ob, int64_t sess, int64_t *span)
{
    sdb_stmt *st = NULL;
    int rc;

    *span = INT64_MAX;
    if (sdb_prepare(db,
                    ob ? "SELECT span FROM obspan WHERE sess=?"
                       : "SELECT span FROM kbspan WHERE sess=?",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sess);
    rc = sdb_step(st);
    if (rc == SDB_ROW && qcol_i64(st, 0) >= 0)
        *span = qcol_i64(st, 0);
    sdb_finalize(st);
    return rc == SDB_ROW || rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

/* Where the chunks are: the last t_lo read (at), and the blocks starting
 * there read already (seen: n (stream, seq_lo) pairs), which the next
 * chunk, read from at on, returns again. */
typedef struct ts_edge {
    int64_t at;
    int64_t *seen;
    size_t n, cap;
} ts_edge;

static int edge_seen(const ts_edge *e, int64_t t_lo, int64_t stream, int64_t lo)
{
    if (t_lo != e->at)
        return 0;
    for (size_t i = 0; i < e->n; i++)
        if (e->seen[2 * i] == stream && e->seen[2 * i + 1] == lo)
            return 1;
    return 0;
}

static int edge_add(ts_edge *e, int64_t t_lo, int64_t stream, int64_t lo)
{
    if (t_lo != e->at) {
        e->at = t_lo;
        e->n = 0;
    }
    if (e->n == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 8;
        int64_t *y = realloc(e->seen, 2 * cap * sizeof(*y));
        if (!y)
            return GPUFL_ENOMEM;
        e->seen = y;
        e->cap = cap;
    }
    e->seen[2 * e->n] = stream;
    e->seen[2 * e->n + 1] = lo;
    e->n++;
    return GPUFL_OK;
}

/* The index query of one chunk: ?1 sess, t_lo in [?2, ?3) ascending or
 * [?2, ?3] descending, ?5 the range's start (t_hi >= it), ?6 the chunk's
 * rows; the bytes of the blocks reaching ?4, the best key of the range. */
static const char *const chunk_sql[2] = {
    "SELECT stream, seq_lo, t_lo, t_hi, CASE WHEN t_lo <= ?4 THEN block END"
    " FROM kblocks WHERE sess=?1 AND t_lo >= ?2 AND t_lo < ?3 AND"
    " t_hi >= ?5 ORDER BY t_lo LIMIT ?6",
    "SELECT stream, seq_lo, t_lo, t_hi, CASE WHEN t_hi >= ?4 THEN block END"
    " FROM kblocks WHERE sess=?1 AND t_lo >= ?2 AND t_lo <= ?3 AND"
    " t_hi >= ?5 ORDER BY t_lo DESC LIMIT ?6",
};

/* One index row of the chunk in hand (st): skipped when read already,
 * read and offered when it can place; *done when no block from it on
 * can. */
static int chunk_row(kb_scan *x, sdb *db, sdb_stmt *st, int64_t span,
                     ts_edge *e, size_t *fresh, int *done)
{
    const kb_top *t = x->t;
    int64_t stream = qcol_i64(st, 0), lo = qcol_i64(st, 1);
    int64_t t_lo = qcol_i64(st, 2), t_hi = qcol_i64(st, 3);
    int rc;

    if (edge_seen(e, t_lo, stream, lo))
        return GPUFL_OK;
    (*fresh)++;
    if ((rc = edge_add(e, t_lo, stream, lo)) != 0)
        return rc;
    if (!kb_top_open(t, t->desc ? add_sat(t_lo, span) : t_lo)) {
        *done = 1;
        return GPUFL_OK;
    }
    if (t->desc && !kb_top_open(t, t_hi))
        return GPUFL_OK;
    return qcol_null(st, 4) ? sq_kb_block_load(x, db, stream, lo)
                            : sq_kb_block_offer(x, st, 4, stream, lo);
}

int sq_kb_scan_ts(kb_scan *x, sdb *db)
{
    const kb_top *t = x->t;
    int desc = t->desc;
    int64_t span, lo_min;
    sdb_stmt *st = NULL;
    ts_edge e = { 0, NULL, 0, 0 };
    size_t chunk = SCAN_CHUNK_MIN;
    int rc, done = 0;

    if (x->t_lo >= x->t_hi)
        return GPUFL_OK; /* an empty range */
    if ((rc = sq_span_get(db, 0, x->sess, &span)) != 0)
        return rc;
    /* a block ending at or after the range's start starts at or after
     * lo_min (KB_IN_RANGE's bound) */
    lo_min = sub_sat(x->t_lo, span);
    e.at = desc ? x->t_hi - 1 : lo_min;
    if (sdb_prepare(db, chunk_sql[desc], &st))
        return GPUFL_EINTERNAL;
    while (!done) {
        size_t got = 0, fresh = 0;
        qbind_i64(st, 1, x->sess);
        qbind_i64(st, 2, desc ? lo_min : e.at);
        qbind_i64(st, 3, desc ? e.at : x->t_hi);
        qbind_i64(st, 4, desc ? x->t_hi - 1 : x->t_lo);
        qbind_i64(st, 5, x->t_lo);
        qbind_i64(st, 6, (int64_t)chunk);
        while (!done && (rc = sdb_step(st)) == SDB_ROW) {
            got++;
            __atomic_fetch_add(&x->s->kq_indexed, 1, __ATOMIC_RELAXED);
            if ((rc = chunk_row(x, db, st, span, &e, &fresh, &done)) != 0)
                goto out;
        }
        if (done)
            break;
        if (rc != SDB_DONE) {
            rc = sq_err(rc);
            goto out;
        }
        if (got < chunk)
            break; /* the range's last blocks */
        sdb_reset(st);
        /* a chunk wholly of blocks read already (many starting at one
         * instant) grows until it reaches past them */
        chunk = !fresh || 2 * chunk <= SCAN_CHUNK_MAX ? 2 * chunk : chunk;
    }
    rc = GPUFL_OK;
out:
    sdb_finalize(st);
    free(e.seen);
    return rc;
}
