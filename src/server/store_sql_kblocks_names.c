/*
 * store_sql_kblocks_names.c - a session's blocks in the order a sort by
 * duration filtered by name reads them (issue 23; docs/server.md "Kernel
 * blocks (store)"): per name of the filter, its kbnames rows in the
 * answer's order - longest first by dur_max, shortest first by dur_min;
 * found by kbnames_sn (sess + 0, name_id; migration 37) and sorted in
 * the query since migration 36 (kbnames is the recent tier the packer has
 * not reached, a few rows a name) - in chunks, the names' streams merged
 * with each other and with the blocks that have no kbnames rows
 * (kbunnamed: written before schema 22, or by ingest and not yet named by
 * the compactor; read as holding any name, by their block's dur_max or
 * dur_min).  The reader loads blocks in this order until the heap cannot
 * be beaten: at 100M kernels a name is in each of 24,000 blocks, of which
 * a page reads ~100, and before this every one of the 24,000 rows was
 * read and sorted first (meta_by_name, still the path of a filter of
 * more than KB_NAME_IDS_MAX names).  Most of a name's rows are packed
 * (kbnpack, store_sql_kbnpack.c; SQLite too since "100M a seventh
 * time"): its packs are read
 * whole - one or a few rows a stream - and their entries of the time
 * range sorted into one more list, merged as the unnamed one is.
 *
 * Chunks, not one query: PostgreSQL's sdb layer fetches a result whole.
 * A chunk is the next rows by the bound; the rows tied with its last one
 * are read whole by a second query (ties need no order of their own:
 * the reader loads every block whose bound equals the heap's worst), so
 * the continuation is a plain "bound < last" (> ascending), which
 * PostgreSQL's index of three columns answers as SQLite's does.  That
 * second query waits until the merge needs the tied rows: until then
 * the name's head is their bound alone (kb_nstream.tied), and a name
 * whose bound cannot place is never read further.  At 100M kernels of
 * bench_scale's 11-name filter every name's longest duration is in
 * ~600 blocks: read at once, 11 x 600 rows a page where one name's
 * decide it (docs/server.md "Several names by duration at 100M").
 */
#include "store_sql_kblocks_int.h"

#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdlib.h>

#include "common/buf.h"
#include "common/log.h"
#include "kblock.h"
#include "store_sql_kbnpack.h"
#include "store_sql_writer_int.h"

/* rows of the first chunk; each next one twice as many, up to the max:
 * a page of 100 reads ~100 blocks (one round trip), a deep page more */
#define KB_NORD_CHUNK 128
#define KB_NORD_CHUNK_MAX 4096
/* the first chunk of each of several names: KB_NORD_CHUNK shared among
 * them, no fewer than this (a page of 100 reads ~100 blocks in all; a
 * name that has them doubles its chunks) */
#define KB_NORD_CHUNK_MIN 16

typedef struct kb_nblk {
    int64_t stream, lo, bound, seq_hi;
} kb_nblk;

/* a growable list of blocks, read from its front */
typedef struct kb_nlist {
    kb_nblk *b;
    size_t n, cap, i;
} kb_nlist;

/* One name's kbnames rows of blocks in the time range, in the answer's
 * order, a chunk at a time. */
typedef struct kb_nstream {
    int64_t id;
    kb_nlist c;   /* the chunk in hand */
    int64_t past; /* the next chunk: bounds past this */
    size_t lim;   /* its size */
    int more;     /* whether kbnames may hold more rows */
    int tied;     /* rows of bound past not read yet: after the chunk */
} kb_nstream;

/* The blocks of session sess in [t_lo, t_hi) that may hold kernels of
 * the filter's names, in the answer's order (desc: longest first) of the
 * best duration of those names each can hold; tied, by seq (seq_hi
 * highest first, seq_lo lowest first ascending - the answer's order).  A
 * block holding several of the names comes once per name, first with its
 * best bound (the reader skips it after: kb_seen). */
typedef struct kb_nord {
    sdb *db;
    int64_t sess, t_lo, t_hi;
    int desc;
    kb_nlist u;     /* the unnamed blocks, in order */
    kb_nlist p;     /* the packed ones: a heap, its best at b[0] */
    int packed;     /* whether any entry came from a pack */
    kb_nstream *ns; /* one per name id */
    size_t nn;
    uint64_t rows; /* index rows read (gpufl_server_kblocks_index_rows) */
} kb_nord;

static int nl_add(kb_nlist *l, const kb_nblk *b)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        kb_nblk *y = realloc(l->b, cap * sizeof(*y));
        if (!y)
            return GPUFL_ENOMEM;
        l->b = y;
        l->cap = cap;
    }
    l->b[l->n++] = *b;
    return GPUFL_OK;
}

static int nl_push(kb_nlist *l, sdb_stmt *st)
{
    kb_nblk b = { qcol_i64(st, 0), qcol_i64(st, 1), qcol_i64(st, 2),
                  qcol_i64(st, 3) };
    return nl_add(l, &b);
}

/* a packed entry onto the packed list, by the order's bound */
static int pack_push(void *arg, int64_t stream, const sq_kbne *e)
{
    kb_nord *o = arg;
    kb_nblk b = { stream, e->lo, o->desc ? e->dmax : e->dmin, e->hi };
    return nl_add(&o->p, &b);
}

/* every row of st (stream, seq_lo, bound, seq_hi) onto l */
static int nl_read(kb_nord *o, sdb_stmt *st, kb_nlist *l)
{
    int rc;

    while ((rc = sdb_step(st)) == SDB_ROW) {
        o->rows++;
        if (nl_push(l, st))
            return GPUFL_ENOMEM;
    }
    return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

/* < 0 when block a comes first: the better bound, then (tied) the block
 * whose seqs come first in the answer's order among equal durations
 * (highest seq_hi descending, lowest seq_lo ascending), so that once the
 * heap is full the tied blocks behind its worst are skipped
 * (sq_kb_scan_name) */
static int blk_cmp(int desc, const kb_nblk *a, const kb_nblk *b)
{
    if (a->bound != b->bound)
        return (a->bound < b->bound) == !!desc ? 1 : -1;
    if (desc)
        return a->seq_hi < b->seq_hi ? 1 : a->seq_hi > b->seq_hi ? -1 : 0;
    return a->lo < b->lo ? -1 : a->lo > b->lo ? 1 : 0;
}

static int blk_desc(const void *a, const void *b)
{
    return blk_cmp(1, a, b);
}

static int blk_asc(const void *a, const void *b)
{
    return blk_cmp(0, a, b);
}

static void nl_sort(kb_nlist *l, int desc)
{
    if (l->n > 1)
        qsort(l->b, l->n, sizeof(*l->b), desc ? blk_desc : blk_asc);
}

/* The packed entries as a binary heap, best first, popped one by one: a
 * page reads ~100 of them, and of 11 names' packs at 30M there are 66 000
 * (every block of the session holds each name), whose qsort cost a
 * quarter of the query's CPU. */
static void heap_down(kb_nlist *l, size_t i, int desc)
{
    for (;;) {
        size_t c = 2 * i + 1;
        kb_nblk y;
        if (c >= l->n)
            return;
        if (c + 1 < l->n && blk_cmp(desc, &l->b[c + 1], &l->b[c]) < 0)
            c++;
        if (blk_cmp(desc, &l->b[c], &l->b[i]) >= 0)
            return;
        y = l->b[i];
        l->b[i] = l->b[c];
        l->b[c] = y;
        i = c;
    }
}

static void heap_make(kb_nlist *l, int desc)
{
    for (size_t i = l->n / 2; i-- > 0;)
        heap_down(l, i, desc);
}

static void heap_pop(kb_nlist *l, int desc)
{
    l->b[0] = l->b[--l->n];
    heap_down(l, 0, desc);
}

/* b into the heap l (sift up) */
static int heap_push(kb_nlist *l, const kb_nblk *b, int desc)
{
    size_t i = l->n;

    if (nl_add(l, b))
        return GPUFL_ENOMEM;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        kb_nblk y;
        if (blk_cmp(desc, &l->b[i], &l->b[up]) >= 0)
            break;
        y = l->b[i];
        l->b[i] = l->b[up];
        l->b[up] = y;
        i = up;
    }
    return GPUFL_OK;
}

/* the name's kbnames rows of blocks in the time range (the kblocks row
 * by its key: t_lo/t_hi); CROSS JOIN: SQLite reads the name's kbnames
 * rows (kbnames_sn) first; col: the bound's column.  "n.sess + 0" is
 * kbnames_sn's expression, spelled so that the index serves this read
 * alone (migration 37). */
#define NORD_FROM(col)                                                         \
    "SELECT n.stream, n.seq_lo, n." col ", k.seq_hi FROM kbnames n CROSS"      \
    " JOIN kblocks k WHERE n.sess + 0=?1 AND n.name_id=?4 AND k.sess=?1 AND"   \
    " k.stream=n.stream AND k.seq_lo=n.seq_lo AND k.t_lo < ?3 AND"             \
    " k.t_hi >= ?2 AND n." col " "

/* [asc, desc]: the next chunk past ?5 (?6 rows), the rows tied at ?5 */
static const char *const chunk_sql[2][2] = {
    { NORD_FROM("dur_min") "> ?5 ORDER BY n.dur_min LIMIT ?6",
      NORD_FROM("dur_min") "= ?5" },
    { NORD_FROM("dur_max") "< ?5 ORDER BY n.dur_max DESC LIMIT ?6",
      NORD_FROM("dur_max") "= ?5" },
};

const char *sq_kb_nord_sql(int desc, int tied)
{
    return chunk_sql[!!desc][!!tied];
}

static int chunk_query(kb_nord *o, kb_nstream *c, int tied, int64_t at)
{
    sdb_stmt *st = NULL;
    int rc;

    if (sdb_prepare(o->db, sq_kb_nord_sql(o->desc, tied), &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, o->sess);
    qbind_i64(st, 2, o->t_lo);
    qbind_i64(st, 3, o->t_hi);
    qbind_i64(st, 4, c->id);
    qbind_i64(st, 5, at);
    if (!tied)
        qbind_i64(st, 6, (int64_t)c->lim);
    rc = nl_read(o, st, &c->c);
    sdb_finalize(st);
    return rc;
}

/* The next chunk of name c's blocks into c->c (emptied first): the
 * c->lim best past c->past, less the rows tied with the last, whose
 * bound becomes c->past with c->tied set (chunk_ties reads them when
 * the merge gets there; a next chunk past it starts after them). */
static int chunk_read(kb_nord *o, kb_nstream *c)
{
    int rc;
    int64_t d;

    c->c.n = c->c.i = 0;
    if ((rc = chunk_query(o, c, 0, c->past)) != 0)
        return rc;
    if (c->c.n < c->lim) {
        c->more = 0; /* kbnames holds no more */
        nl_sort(&c->c, o->desc);
        return GPUFL_OK;
    }
    d = c->c.b[c->c.n - 1].bound;
    while (c->c.n && c->c.b[c->c.n - 1].bound == d)
        c->c.n--;
    c->past = d;
    c->tied = 1;
    if (c->lim < KB_NORD_CHUNK_MAX)
        c->lim *= 2;
    nl_sort(&c->c, o->desc);
    return GPUFL_OK;
}

/* Every row of name c tied at c->past into c->c (emptied first). */
static int chunk_ties(kb_nord *o, kb_nstream *c)
{
    int rc;

    c->c.n = c->c.i = 0;
    c->tied = 0;
    if ((rc = chunk_query(o, c, 1, c->past)) == 0)
        nl_sort(&c->c, o->desc);
    return rc;
}

static void nord_close(kb_nord *o)
{
    if (!o)
        return;
    for (size_t i = 0; i < o->nn; i++)
        free(o->ns[i].c.b);
    free(o->ns);
    free(o->u.b);
    free(o->p.b);
    free(o);
}

static int nord_open(sdb *db, int64_t sess, const int64_t *ids, size_t nids,
                     int desc, int64_t t_lo, int64_t t_hi, kb_nord **out)
{
    sdb_stmt *st = NULL;
    kb_nord *o = calloc(1, sizeof(*o));
    int rc;

    *out = NULL;
    if (!o || !(o->ns = calloc(nids ? nids : 1, sizeof(*o->ns)))) {
        free(o);
        return GPUFL_ENOMEM;
    }
    o->db = db;
    o->sess = sess;
    o->t_lo = t_lo;
    o->t_hi = t_hi;
    o->desc = desc;
    o->nn = nids;
    for (size_t i = 0; i < nids; i++) {
        o->ns[i].id = ids[i];
        o->ns[i].past = desc ? INT64_MAX : INT64_MIN;
        o->ns[i].lim = KB_NORD_CHUNK / (nids ? nids : 1);
        if (o->ns[i].lim < KB_NORD_CHUNK_MIN)
            o->ns[i].lim = KB_NORD_CHUNK_MIN;
        o->ns[i].more = 1;
    }
    /* few (none after a database made since schema 22 is compacted):
     * read whole, sorted here */
    if (sdb_prepare(db,
                    desc ? "SELECT k.stream, k.seq_lo, k.dur_max, k.seq_hi FROM"
                           " kbunnamed u CROSS JOIN kblocks k WHERE u.sess=?1"
                           " AND k.sess=u.sess AND k.stream=u.stream AND"
                           " k.seq_lo=u.seq_lo AND k.t_lo < ?3 AND"
                           " k.t_hi >= ?2"
                         : "SELECT k.stream, k.seq_lo, k.dur_min, k.seq_hi FROM"
                           " kbunnamed u CROSS JOIN kblocks k WHERE u.sess=?1"
                           " AND k.sess=u.sess AND k.stream=u.stream AND"
                           " k.seq_lo=u.seq_lo AND k.t_lo < ?3 AND"
                           " k.t_hi >= ?2",
                    &st)) {
        nord_close(o);
        return GPUFL_EINTERNAL;
    }
    qbind_i64(st, 1, sess);
    qbind_i64(st, 2, t_lo);
    qbind_i64(st, 3, t_hi);
    rc = nl_read(o, st, &o->u);
    sdb_finalize(st);
    if (rc) {
        nord_close(o);
        return rc;
    }
    nl_sort(&o->u, desc);
    rc = sq_kbnp_read(db, sess, ids, nids, t_lo, t_hi, pack_push, o, &o->rows);
    if (rc) {
        nord_close(o);
        return rc;
    }
    o->packed = o->p.n > 0;
    heap_make(&o->p, desc);
    *out = o;
    return GPUFL_OK;
}

/* The next block of o into *b (*more 0: none left, or none that can
 * place in t): the best head of the names' chunks and the unnamed list
 * (a linear pick: at most KB_NAME_IDS_MAX names).  A name whose chunk is
 * spent with rows tied at c->past unread heads with that bound, first
 * among its ties (its rows may hold any seq); picked, its rows are read
 * if a block of that bound can still place in t - else none further can,
 * it being the best head. */
static int nord_next(kb_nord *o, const kb_top *t, kb_nblk *b, int *more)
{
    int rc;

    *more = 0;
    for (;;) {
        kb_nblk best = { 0, 0, 0, 0 };
        kb_nlist *from = NULL;
        kb_nstream *tie = NULL;
        int any = 0;
        for (size_t i = 0; i < o->nn; i++) {
            kb_nstream *c = &o->ns[i];
            kb_nblk h;
            if (c->c.i == c->c.n && !c->tied && c->more &&
                (rc = chunk_read(o, c)) != 0)
                return rc;
            if (c->c.i < c->c.n)
                h = c->c.b[c->c.i];
            else if (c->tied) /* first among its ties, either way */
                h = (kb_nblk){ 0, INT64_MIN, c->past, INT64_MAX };
            else
                continue;
            if (!any || blk_cmp(o->desc, &h, &best) < 0) {
                best = h;
                any = 1;
                from = c->c.i < c->c.n ? &c->c : NULL;
                tie = from ? NULL : c;
            }
        }
        for (int k = 0; k < 2; k++) {
            kb_nlist *l = k ? &o->p : &o->u;
            if (l->i < l->n &&
                (!any || blk_cmp(o->desc, &l->b[l->i], &best) < 0)) {
                best = l->b[l->i];
                any = 1;
                from = l;
                tie = NULL;
            }
        }
        if (!any)
            return GPUFL_OK;
        if (!tie) {
            *b = best;
            if (from == &o->p)
                heap_pop(from, o->desc); /* its i stays 0 */
            else
                from->i++;
            *more = 1;
            return GPUFL_OK;
        }
        if (!kb_top_open(t, best.bound))
            return GPUFL_OK; /* the best head: nothing further places */
        if ((rc = chunk_ties(o, tie)) != 0)
            return rc;
    }
}

/* The blocks loaded, for a filter of several names (a block holding two
 * of them comes twice: its events must be offered once): an open
 * addressing set of (stream, seq_lo), grown at half full. */
typedef struct kb_seen {
    int64_t *k; /* cap pairs; stream INT64_MIN: empty */
    size_t n, cap;
} kb_seen;

static size_t seen_slot(const kb_seen *s, int64_t stream, int64_t lo)
{
    uint64_t h = ((uint64_t)stream * 0x9E3779B97F4A7C15ull) ^ (uint64_t)lo;
    size_t i = (size_t)((h * 0xBF58476D1CE4E5B9ull) >> 17) & (s->cap - 1);

    while (s->k[2 * i] != INT64_MIN &&
           (s->k[2 * i] != stream || s->k[2 * i + 1] != lo))
        i = (i + 1) & (s->cap - 1);
    return i;
}

/* *dup 1 when (stream, lo) was added before; else added */
static int seen_add(kb_seen *s, int64_t stream, int64_t lo, int *dup)
{
    size_t i;

    *dup = 0;
    if (2 * (s->n + 1) > s->cap) {
        kb_seen g = { NULL, 0, s->cap ? 2 * s->cap : 64 };
        if (!(g.k = malloc(2 * g.cap * sizeof(*g.k))))
            return GPUFL_ENOMEM;
        for (size_t j = 0; j < g.cap; j++)
            g.k[2 * j] = INT64_MIN;
        for (size_t j = 0; j < s->cap; j++)
            if (s->k[2 * j] != INT64_MIN) {
                size_t x = seen_slot(&g, s->k[2 * j], s->k[2 * j + 1]);
                g.k[2 * x] = s->k[2 * j];
                g.k[2 * x + 1] = s->k[2 * j + 1];
            }
        g.n = s->n;
        free(s->k);
        *s = g;
    }
    i = seen_slot(s, stream, lo);
    if (s->k[2 * i] != INT64_MIN) {
        *dup = 1;
        return GPUFL_OK;
    }
    s->k[2 * i] = stream;
    s->k[2 * i + 1] = lo;
    s->n++;
    return GPUFL_OK;
}

/* PostgreSQL: the blocks a name sort loads, several a statement - the
 * first statement one block, each next twice as many as the last, up to
 * KB_NLOAD_MAX.  A statement a block was a round trip each: 98 of them
 * for one name at 100M kernels (docs/server.md "PostgreSQL: a name
 * sort's blocks a few a statement").  The blocks sent past the sort's
 * stop (not decoded) are fewer than the last statement's.  SQLite reads
 * a block in the process: one at a time, as the order gives them. */
#define KB_NLOAD_MAX 16
#define KB_NLOAD_SQL_PG                                                        \
    "SELECT k.stream, k.seq_lo, k.block FROM unnest(?2::bigint[],"             \
    " ?3::bigint[]) WITH ORDINALITY u(stream, lo, i) JOIN kblocks k ON"        \
    " k.sess=?1 AND k.stream=u.stream AND k.seq_lo=u.lo ORDER BY u.i"

/* Whether block b can still add to t: 0 yes; 1 no, its bound only ties
 * the full heap's worst and every seq of it is behind the worst's
 * (higher descending, lower ascending); 2 no, and no block after it in
 * the order either (its bound cannot place).  t only gets better, so a
 * block wanted when queued is asked again when its bytes are there. */
static int nblk_wanted(const kb_top *t, const kb_nblk *b)
{
    const kblock_ev *w = t->n == t->cap ? &t->ev[t->h[0]] : NULL;

    if (!kb_top_open(t, b->bound))
        return 2; /* the rest are further away */
    if (w && b->bound == kb_key(w, t->key) &&
        (t->desc ? b->seq_hi <= (int64_t)w->seq : b->lo >= (int64_t)w->seq))
        return 1;
    return 0;
}

/* Element j of the blocks' streams, then of their seq_lo, for
 * sq_arr_bind */
static void nblk_stream_el(gbuf *cb, void *ctx, size_t j)
{
    sq_av_i64(cb, ((const kb_nblk *)ctx)[j].stream);
}

static void nblk_lo_el(gbuf *cb, void *ctx, size_t j)
{
    sq_av_i64(cb, ((const kb_nblk *)ctx)[j].lo);
}

/* The blocks b[0..n) of the order loaded and offered in it, each if
 * still wanted (nblk_wanted); *stop set at the first that cannot place.
 * More than one: by one statement (PostgreSQL; sq_kb_scan_name batches
 * nothing on SQLite); one: by its key (sq_kb_block_load). */
static int nblk_load(kb_scan *x, sdb *db, kb_nblk *b, size_t n, int *stop)
{
    sdb_stmt *st = NULL;
    gbuf cb;
    int rc = GPUFL_OK, w, r = SDB_DONE;

    gbuf_init(&cb, (n + 1) * SQ_CB_COL);
    if (n > 1) {
        if (sdb_prepare(db, KB_NLOAD_SQL_PG, &st))
            rc = GPUFL_EINTERNAL;
        else {
            qbind_i64(st, 1, x->sess);
            if ((rc = sq_arr_bind(st, 2, &cb, n, SDB_ARR_I64, SQ_CB_COL,
                                  nblk_stream_el, b)) == 0)
                rc = sq_arr_bind(st, 3, &cb, n, SDB_ARR_I64, SQ_CB_COL,
                                 nblk_lo_el, b);
        }
    }
    for (size_t i = 0; i < n && !rc; i++) {
        if (st &&
            ((r = sdb_step(st)) != SDB_ROW || qcol_i64(st, 0) != b[i].stream ||
             qcol_i64(st, 1) != b[i].lo)) {
            /* not in one read transaction's blocks: as sq_kb_block_load */
            glog_error(
                "kblocks", "session %lld stream %lld seq %lld: block gone",
                (long long)x->sess, (long long)b[i].stream, (long long)b[i].lo);
            rc = r == SDB_ROW || r == SDB_DONE ? GPUFL_EINTERNAL : sq_err(r);
            break;
        }
        if ((w = nblk_wanted(x->t, &b[i])) == 2) {
            *stop = 1;
            break;
        }
        if (!w)
            rc = st ? sq_kb_block_offer(x, st, 2, b[i].stream, b[i].lo)
                    : sq_kb_block_load(x, db, b[i].stream, b[i].lo);
    }
    gbuf_release(&cb);
    sdb_finalize(st);
    return rc;
}

/* A sort by duration filtered by at most KB_NAME_IDS_MAX names, either
 * way: the blocks in the order of those names' best duration in each
 * (kb_nord), loaded until the first that cannot place - not every
 * block's index row read and sorted first (meta_by_name).  A block whose
 * bound only ties the full heap's worst places only by a seq before the
 * worst's (higher descending, lower ascending): with none, it is passed
 * over (a name of few distinct durations has its longest in hundreds of
 * blocks at 100M kernels). */
int sq_kb_scan_name(kb_scan *x, sdb *db)
{
    kb_top *t = x->t;
    kb_nord *o = NULL;
    kb_seen seen = { NULL, 0, 0 };
    kb_nblk b, q[KB_NLOAD_MAX];
    /* blocks a statement: this time, and at most (SQLite: one) */
    size_t nq = 0, want = 1,
           most = sdb_dialect(db) == SDB_SQLITE ? 1 : KB_NLOAD_MAX;
    int rc, more = 0, dup = 0, stop = 0, w;

    if ((rc = nord_open(db, x->sess, t->ids, t->nids, t->desc, x->t_lo, x->t_hi,
                        &o)) != 0)
        return rc;
    while (!stop && !(rc = nord_next(o, t, &b, &more)) && more) {
        /* asked again when loaded (the blocks queued before it go first) */
        if ((w = nblk_wanted(t, &b)) == 2)
            break;
        if (w)
            continue;
        if (t->has_cur &&
            (t->desc ? b.bound >= t->cur[0] : b.bound <= t->cur[0])) {
            /* at or before the cursor's duration: none of its kernels
             * before the cursor can be kept, so what can is at the
             * cursor's duration - shorter (longer ascending) when every
             * seq of it comes before the cursor's too.  Back into the
             * order at that bound, not decoded here (a page k deep by
             * cursor decoded the blocks of the k pages before it again:
             * docs/server.md "100M an eighth time") */
            int64_t nb = t->cur[0];
            if (b.bound == t->cur[0] &&
                (t->desc ? b.lo > t->cur[1] : b.seq_hi < t->cur[1]))
                nb += t->desc ? -1 : 1;
            if (nb != b.bound) {
                b.bound = nb;
                o->packed = 1; /* may come again from its name's list */
                if ((rc = heap_push(&o->p, &b, t->desc)) != 0)
                    break;
                continue;
            }
        }
        /* with packs, the same guard as for several names: a block is
         * in rows or in a pack of a name, never both as written
         * (sq_kbnp_unpack before a merge), but were it, once */
        if ((o->nn > 1 || o->packed) &&
            ((rc = seen_add(&seen, b.stream, b.lo, &dup)) != 0))
            break;
        if (dup)
            continue; /* loaded by another of its names */
        q[nq++] = b;
        if (nq < want)
            continue;
        rc = nblk_load(x, db, q, nq, &stop);
        nq = 0;
        if (want < most)
            want *= 2;
        if (rc)
            break;
    }
    if (!rc && nq)
        rc = nblk_load(x, db, q, nq, &stop);
    __atomic_fetch_add(&x->s->kq_indexed, o->rows, __ATOMIC_RELAXED);
    nord_close(o);
    free(seen.k);
    return rc;
}
