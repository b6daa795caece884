/*
 * store_sql_kblocks_names.c - a session's blocks in the order a sort by
 * duration (longest first) filtered by one name reads them (issue 23;
 * docs/server.md "Kernel blocks (store)"): kbnames' rows of that name
 * longest first, straight from the index kbnames_dur (sess, name_id,
 * dur_max), in chunks, merged with the blocks that have no kbnames rows
 * (kbunnamed: written before schema 22, or by ingest and not yet named by
 * the compactor; read as holding any name, by their block's dur_max).  The reader (sq_kb_scan_sel) loads blocks in
 * this order until the heap cannot be beaten: at 100M kernels a name is
 * in each of 24,000 blocks, of which a page reads ~100, and before this
 * every one of the 24,000 rows was read and sorted first.
 *
 * Chunks, not one query: PostgreSQL's sdb layer fetches a result whole.
 * A chunk is the next rows by dur_max; the rows tied with its last one
 * are read whole by a second query (ties need no order of their own:
 * the reader loads every block whose bound equals the heap's worst), so
 * the continuation is a plain "dur_max < last", which PostgreSQL's index
 * of three columns answers as SQLite's does.
 */
#include "store_sql_kblocks_int.h"

#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdlib.h>

#include "kblock.h"

/* rows of the first chunk; each next one twice as many, up to the max:
 * a page of 100 reads ~100 blocks (one round trip), a deep page more */
#define KB_NORD_CHUNK 128
#define KB_NORD_CHUNK_MAX 4096

/* The blocks of session sess in [t_lo, t_hi) that may hold kernels of
 * name id, longest first (store_sql_kblocks_names.c, schema 27): those
 * whose kbnames row of id says so by its dur_max (read in chunks from
 * kbnames_dur), merged with those without kbnames rows (kbunnamed) by
 * their block's dur_max; tied, by seq_hi, highest first (the answer's
 * order).  sq_kb_nord_next gives the next block, the longest duration of
 * id it can hold and its highest seq (*more 0: none left). */
typedef struct kb_nord kb_nord;
static void sq_kb_nord_close(kb_nord *o);

typedef struct kb_nblk {
    int64_t stream, lo, bound, seq_hi;
} kb_nblk;

/* a growable list of blocks, read from its front */
typedef struct kb_nlist {
    kb_nblk *b;
    size_t n, cap, i;
} kb_nlist;

struct kb_nord {
    sdb *db;
    int64_t sess, id, t_lo, t_hi;
    kb_nlist u;    /* the unnamed blocks, longest first */
    kb_nlist c;    /* the chunk in hand */
    int64_t below; /* the next chunk: dur_max below this */
    size_t lim;    /* its size */
    int more;      /* whether kbnames may hold more rows */
};

static int nl_push(kb_nlist *l, sdb_stmt *st)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        kb_nblk *y = realloc(l->b, cap * sizeof(*y));
        if (!y)
            return GPUFL_ENOMEM;
        l->b = y;
        l->cap = cap;
    }
    l->b[l->n].stream = qcol_i64(st, 0);
    l->b[l->n].lo = qcol_i64(st, 1);
    l->b[l->n].bound = qcol_i64(st, 2);
    l->b[l->n].seq_hi = qcol_i64(st, 3);
    l->n++;
    return GPUFL_OK;
}

/* every row of st (stream, seq_lo, bound, seq_hi) onto l */
static int nl_read(sdb_stmt *st, kb_nlist *l)
{
    int rc;

    while ((rc = sdb_step(st)) == SDB_ROW)
        if (nl_push(l, st))
            return GPUFL_ENOMEM;
    return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

/* < 0 when block a comes first: longer bound, then (tied) higher seq_hi -
 * the answer's order among equal durations, so that once the heap is
 * full the tied blocks behind its worst are skipped (sq_kb_nord_next) */
static int blk_cmp(const kb_nblk *a, const kb_nblk *b)
{
    if (a->bound != b->bound)
        return a->bound < b->bound ? 1 : -1;
    return a->seq_hi < b->seq_hi ? 1 : a->seq_hi > b->seq_hi ? -1 : 0;
}

static int blk_order(const void *a, const void *b)
{
    return blk_cmp(a, b);
}

/* the name's kbnames rows of blocks in the time range (the kblocks row
 * by its key: t_lo/t_hi); CROSS JOIN: SQLite walks kbnames_dur first */
#define NORD_FROM                                                              \
    "SELECT n.stream, n.seq_lo, n.dur_max, k.seq_hi FROM kbnames n CROSS"      \
    " JOIN kblocks k WHERE n.sess=?1 AND n.name_id=?4 AND k.sess=n.sess AND"   \
    " k.stream=n.stream AND k.seq_lo=n.seq_lo AND k.t_lo < ?3 AND"             \
    " k.t_hi >= ?2 AND "

/* The next chunk of o's name's blocks into o->c (emptied first): the
 * o->lim longest below o->below, and every row tied with the last. */
static int chunk_read(kb_nord *o)
{
    sdb_stmt *st = NULL;
    int rc;
    int64_t d;

    o->c.n = o->c.i = 0;
    if (sdb_prepare(o->db,
                    NORD_FROM "n.dur_max < ?5 ORDER BY n.dur_max DESC"
                              " LIMIT ?6",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, o->sess);
    qbind_i64(st, 2, o->t_lo);
    qbind_i64(st, 3, o->t_hi);
    qbind_i64(st, 4, o->id);
    qbind_i64(st, 5, o->below);
    qbind_i64(st, 6, (int64_t)o->lim);
    rc = nl_read(st, &o->c);
    sdb_finalize(st);
    if (rc)
        return rc;
    if (o->c.n < o->lim) {
        o->more = 0; /* kbnames holds no more */
        if (o->c.n > 1)
            qsort(o->c.b, o->c.n, sizeof(*o->c.b), blk_order);
        return GPUFL_OK;
    }
    /* full: the rows tied with the last, all of them (a next chunk
     * below d starts after them) */
    d = o->c.b[o->c.n - 1].bound;
    while (o->c.n && o->c.b[o->c.n - 1].bound == d)
        o->c.n--;
    if (sdb_prepare(o->db, NORD_FROM "n.dur_max = ?5", &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, o->sess);
    qbind_i64(st, 2, o->t_lo);
    qbind_i64(st, 3, o->t_hi);
    qbind_i64(st, 4, o->id);
    qbind_i64(st, 5, d);
    rc = nl_read(st, &o->c);
    sdb_finalize(st);
    o->below = d;
    if (o->lim < KB_NORD_CHUNK_MAX)
        o->lim *= 2;
    if (!rc && o->c.n > 1)
        qsort(o->c.b, o->c.n, sizeof(*o->c.b), blk_order);
    return rc;
}

static int sq_kb_nord_open(sdb *db, int64_t sess, int64_t id, int64_t t_lo,
                           int64_t t_hi, kb_nord **out)
{
    sdb_stmt *st = NULL;
    kb_nord *o = calloc(1, sizeof(*o));
    int rc;

    *out = NULL;
    if (!o)
        return GPUFL_ENOMEM;
    o->db = db;
    o->sess = sess;
    o->id = id;
    o->t_lo = t_lo;
    o->t_hi = t_hi;
    o->below = INT64_MAX;
    o->lim = KB_NORD_CHUNK;
    o->more = 1;
    /* few (none after a database made since schema 22 is compacted):
     * read whole, sorted here */
    if (sdb_prepare(db,
                    "SELECT k.stream, k.seq_lo, k.dur_max, k.seq_hi FROM"
                    " kbunnamed u"
                    " CROSS JOIN kblocks k WHERE u.sess=?1 AND k.sess=u.sess"
                    " AND k.stream=u.stream AND k.seq_lo=u.seq_lo AND"
                    " k.t_lo < ?3 AND k.t_hi >= ?2",
                    &st)) {
        sq_kb_nord_close(o);
        return GPUFL_EINTERNAL;
    }
    qbind_i64(st, 1, sess);
    qbind_i64(st, 2, t_lo);
    qbind_i64(st, 3, t_hi);
    rc = nl_read(st, &o->u);
    sdb_finalize(st);
    if (rc) {
        sq_kb_nord_close(o);
        return rc;
    }
    if (o->u.n > 1)
        qsort(o->u.b, o->u.n, sizeof(*o->u.b), blk_order);
    *out = o;
    return GPUFL_OK;
}

static int sq_kb_nord_next(kb_nord *o, int64_t *stream, int64_t *lo,
                           int64_t *bound, int64_t *seq_hi, int *more)
{
    const kb_nblk *b;
    int rc;

    *more = 0;
    if (o->c.i == o->c.n && o->more && (rc = chunk_read(o)) != 0)
        return rc;
    if (o->c.i < o->c.n &&
        (o->u.i == o->u.n || blk_cmp(&o->c.b[o->c.i], &o->u.b[o->u.i]) <= 0))
        b = &o->c.b[o->c.i++];
    else if (o->u.i < o->u.n)
        b = &o->u.b[o->u.i++];
    else
        return GPUFL_OK;
    *stream = b->stream;
    *lo = b->lo;
    *bound = b->bound;
    *seq_hi = b->seq_hi;
    *more = 1;
    return GPUFL_OK;
}

static void sq_kb_nord_close(kb_nord *o)
{
    if (!o)
        return;
    free(o->u.b);
    free(o->c.b);
    free(o);
}

/* A sort by duration, longest first, filtered by one name: the blocks
 * in the order of that name's longest duration in each (kb_nord), loaded
 * until the first that cannot place - not every block's index row read
 * and sorted first (meta_by_name).  A block whose bound only ties the
 * full heap's worst places only by a higher seq: with none above the
 * worst's it is passed over (a name of few distinct durations has its
 * longest in hundreds of blocks at 100M kernels). */
int sq_kb_scan_name(kb_scan *x, sdb *db)
{
    kb_top *t = x->t;
    kb_nord *o = NULL;
    int64_t stream = 0, lo = 0, bound = 0, seq_hi = 0;
    int rc, more = 0;

    if ((rc = sq_kb_nord_open(db, x->sess, t->ids[0], x->t_lo, x->t_hi, &o)) !=
        0)
        return rc;
    while (!(rc = sq_kb_nord_next(o, &stream, &lo, &bound, &seq_hi, &more)) &&
           more) {
        const kblock_ev *w = t->n == t->cap ? &t->ev[t->h[0]] : NULL;
        if (!kb_top_open(t, bound))
            break; /* the rest are further away */
        if (w && bound == kb_key(w, t->key) && seq_hi <= (int64_t)w->seq)
            continue; /* tied, and every seq of it behind the worst's */
        if ((rc = sq_kb_block_load(x, db, stream, lo)) != 0)
            break;
    }
    sq_kb_nord_close(o);
    return rc;
}
