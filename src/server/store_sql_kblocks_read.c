/*
 * store_sql_kblocks_read.c - block-native reads of kernels (issue 23;
 * docs/server.md "Kernel blocks"): the queries read a session's kernel
 * rows (the hot tail, or a rows-store session) and its blocks together,
 * so a compacted session is never thawed back into rows.
 *
 * A query asks for the first N kernels in some order (a page by start or
 * duration, the zoomed-in timeline's raw kernels, the export's window):
 * it offers its rows to a bounded heap (kb_top), then sq_kb_scan offers
 * the events of the blocks that can still place, read in the order of
 * the key's bound in the block index (t_lo/t_hi, dur_min/dur_max) and
 * given up as soon as no further block can beat the heap's worst (by
 * time, store_sql_kblocks_scan.c reads the index in that order and stops
 * there).  A page reads a block in two steps (sq_kb_scan_sel):
 * the few columns its order and filters read, then every field of only
 * the events that placed.  A block read twice lately is kept decoded
 * (kbcache.h).  A kernel by id is found by seq (kblocks_seq index, then
 * kblock_seek_seq).
 *
 * Every block's bytes come through sq_kb_bytes (the cold tier's hook).
 * Each read connection keeps its own decoder and decode buffer (kb_rd,
 * allocated on first use, freed at close): a query uses one connection at
 * a time, so they need no lock, and a read allocates nothing per kernel.
 */
#include "store_sql_kblocks_int.h"

#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "kblock.h"
#include "kbcache.h"

struct kb_rd {
    kblock_dec *dec;
    kblock_ev *ev;
    int64_t *names; /* kblock_name_dur's */
    uint64_t *durs;
    uint32_t *cand; /* dur_may's rows that may place, ascending */
};

static void rd_free(struct kb_rd *r)
{
    kblock_dec_free(r->dec);
    free(r->ev);
    free(r->names);
    free(r->durs);
    free(r->cand);
    free(r);
}

/* The decode state of read connection db (one of s->r). */
static struct kb_rd *rd_get(srv_store *s, sdb *db)
{
    for (unsigned i = 0; i < s->nr && i < SQ_READERS_MAX; i++) {
        struct kb_rd *r;
        if (s->r[i] != db)
            continue;
        if (s->kb_rd[i])
            return s->kb_rd[i];
        if (!(r = calloc(1, sizeof(*r))))
            return NULL;
        r->dec = kblock_dec_new();
        /* zeroed: a decode of a few columns leaves the others as they
         * were (sq_kb_scan_cols), never uninitialised */
        r->ev = calloc(KB_MAX_EVENTS, sizeof(kblock_ev));
        r->names = malloc(KB_MAX_EVENTS * sizeof(int64_t));
        r->durs = malloc(KB_MAX_EVENTS * sizeof(uint64_t));
        r->cand = malloc(KB_MAX_EVENTS * sizeof(uint32_t));
        if (!r->dec || !r->ev || !r->names || !r->durs || !r->cand) {
            rd_free(r);
            return NULL;
        }
        s->kb_rd[i] = r;
        return r;
    }
    return NULL;
}

int srv_store_set_kblock_cache(srv_store *s, uint64_t max_bytes)
{
    kbcache_free(s->kbc);
    s->kbc = NULL;
    if (!max_bytes)
        return GPUFL_OK;
    s->kbc = kbcache_new(max_bytes);
    return s->kbc ? GPUFL_OK : GPUFL_ENOMEM;
}

void srv_store_kblock_cache_stats(srv_store *s, srv_kbc_stats *o)
{
    kbcache_stats st;

    kbcache_stats_get(s->kbc, &st);
    o->bytes = st.bytes;
    o->entries = st.entries;
    o->max_bytes = st.max_bytes;
    o->hits = st.hits;
    o->misses = st.misses;
    o->kept = st.kept;
    o->evicted = st.evicted;
}

void sq_kb_read_release(srv_store *s)
{
    kbcache_free(s->kbc);
    s->kbc = NULL;
    for (unsigned i = 0; i < SQ_READERS_MAX; i++) {
        if (!s->kb_rd[i])
            continue;
        rd_free(s->kb_rd[i]);
        s->kb_rd[i] = NULL;
    }
}

/* ---- the bounded heap ---- */

int kb_top_init(kb_top *t, size_t cap, int key, int desc)
{
    memset(t, 0, sizeof(*t));
    t->cap = cap;
    t->key = key;
    t->desc = desc;
    t->ev = malloc((cap ? cap : 1) * sizeof(kblock_ev));
    t->nul = malloc(cap ? cap : 1);
    t->h = malloc((cap ? cap : 1) * sizeof(size_t));
    if (!t->ev || !t->nul || !t->h) {
        kb_top_free(t);
        return GPUFL_ENOMEM;
    }
    return GPUFL_OK;
}

void kb_top_free(kb_top *t)
{
    free(t->ev);
    free(t->nul);
    free(t->h);
    t->ev = NULL;
    t->nul = NULL;
    t->h = NULL;
    t->n = 0;
}

int64_t kb_key(const kblock_ev *e, int key)
{
    switch (key) {
    case KB_KEY_TS: return (int64_t)e->ts;
    case KB_KEY_DUR: return (int64_t)e->dur;
    case KB_KEY_QUEUE: return -e->api_off - (int64_t)e->api_dur;
    default: return -e->api_off;
    }
}

/* < 0 when a comes before b in the answer's order (key, seq). */
static int top_cmp(const kb_top *t, const kblock_ev *a, const kblock_ev *b)
{
    int64_t ka = kb_key(a, t->key), kb = kb_key(b, t->key);
    int c = ka < kb                             ? -1
            : ka > kb                           ? 1
            : (int64_t)a->seq < (int64_t)b->seq ? -1
            : (int64_t)a->seq > (int64_t)b->seq ? 1
                                                : 0;
    return t->desc ? -c : c;
}

/* heap of indexes into t->ev, the one coming last in the order on top */
static void sift_down(kb_top *t, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i, x;
        if (l < t->n && top_cmp(t, &t->ev[t->h[l]], &t->ev[t->h[m]]) > 0)
            m = l;
        if (r < t->n && top_cmp(t, &t->ev[t->h[r]], &t->ev[t->h[m]]) > 0)
            m = r;
        if (m == i)
            return;
        x = t->h[i];
        t->h[i] = t->h[m];
        t->h[m] = x;
        i = m;
    }
}

size_t kb_top_add(kb_top *t, const kblock_ev *e, unsigned nul)
{
    size_t i, slot;

    if (!t->cap)
        return KB_TOP_NONE;
    if (t->n < t->cap) {
        slot = t->n;
        t->ev[slot] = *e;
        t->nul[slot] = (uint8_t)nul;
        i = t->n++;
        t->h[i] = slot;
        while (i) {
            size_t p = (i - 1) / 2, x;
            if (top_cmp(t, &t->ev[t->h[i]], &t->ev[t->h[p]]) <= 0)
                break;
            x = t->h[i];
            t->h[i] = t->h[p];
            t->h[p] = x;
            i = p;
        }
        return slot;
    }
    if (top_cmp(t, e, &t->ev[t->h[0]]) >= 0)
        return KB_TOP_NONE;
    slot = t->h[0];
    t->ev[slot] = *e;
    t->nul[slot] = (uint8_t)nul;
    sift_down(t, 0);
    return slot;
}

int kb_top_open(const kb_top *t, int64_t b)
{
    int64_t w;

    if (t->has_bound && (t->desc ? b < t->bound : b > t->bound))
        return 0;
    if (t->n < t->cap)
        return 1;
    w = kb_key(&t->ev[t->h[0]], t->key);
    return t->desc ? b >= w : b <= w;
}

void kb_top_sort(kb_top *t)
{
    /* heap sort in place of the index heap, then the events permuted */
    size_t n = t->n;
    while (t->n > 1) {
        size_t x = t->h[0];
        t->h[0] = t->h[t->n - 1];
        t->h[t->n - 1] = x;
        t->n--;
        sift_down(t, 0);
    }
    t->n = n;
    /* h[0..n) is now best first: gather through a cycle walk */
    for (size_t i = 0; i < n; i++) {
        size_t j = t->h[i];
        while (j < i) /* moved already: follow where it went */
            j = t->h[j];
        if (j != i) {
            kblock_ev e = t->ev[i];
            uint8_t u = t->nul[i];
            t->ev[i] = t->ev[j];
            t->nul[i] = t->nul[j];
            t->ev[j] = e;
            t->nul[j] = u;
        }
        t->h[i] = j;
    }
}

void kb_row_ev(sdb_stmt *st, int col, kblock_ev *e, unsigned *nul)
{
    memset(e, 0, sizeof(*e));
    *nul = 0;
    e->seq = (uint64_t)qcol_i64(st, col + 0);
    e->ts = (uint64_t)qcol_i64(st, col + 1);
    e->dur = (uint64_t)qcol_i64(st, col + 2);
    e->dev = (uint64_t)qcol_i64(st, col + 3);
    e->stream = (uint64_t)qcol_i64(st, col + 4);
    e->corr = (uint64_t)qcol_i64(st, col + 5);
    e->name_id = qcol_i64(st, col + 6);
    e->cfg = (uint64_t)qcol_i64(st, col + 7);
    for (int i = 0; i < 3; i++) {
        e->grid[i] = (uint64_t)qcol_i64(st, col + 8 + i);
        e->block[i] = qcol_i64(st, col + 11 + i);
    }
    e->regs = qcol_i64(st, col + 14);
    e->smem = qcol_i64(st, col + 15);
    if (qcol_null(st, col + 16)) {
        e->occ = -1.0;
        *nul |= 1;
    } else {
        e->occ = qcol_f64(st, col + 16);
    }
    e->scope = (uint64_t)qcol_i64(st, col + 17);
    e->path = (uint64_t)qcol_i64(st, col + 18);
    e->stack = (uint64_t)qcol_i64(st, col + 19);
    e->api_off = qcol_i64(st, col + 20);
    e->api_dur = (uint64_t)qcol_i64(st, col + 21);
    e->flags = (uint64_t)qcol_i64(st, col + 22);
    if (qcol_null(st, col + 23))
        *nul |= 2;
    else
        e->tid = (uint64_t)qcol_i64(st, col + 23);
}

/* ---- blocks ---- */

int sq_kb_any(sdb *db, int64_t sess, int *any)
{
    sdb_stmt *st = NULL;
    int rc;

    *any = 0;
    if (sdb_prepare(db, "SELECT 1 FROM kblocks WHERE sess=? LIMIT 1", &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sess);
    rc = sdb_step(st);
    *any = rc == SDB_ROW;
    sdb_finalize(st);
    return rc == SDB_ROW || rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

static int cmp_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Whether a block (its bytes) may hold an event that t would keep, from
 * its names and durations alone: only for a full heap by duration or a
 * name filter, else 1 (decode it).  *opened: the decoder holds the
 * block's payload (kblock_decode_rows), and r->cand[0..*ncand) are the
 * rows that may place, the others being of a name not asked or a
 * duration the heap (or the page's bound) rules out.  0, or -1 with why. */
static int dur_may(struct kb_rd *r, const kb_top *t, const unsigned char *b,
                   size_t len, int *may, int *opened, size_t *ncand, char *why,
                   size_t whylen)
{
    size_t n = 0, nc = 0;
    int full = t->n == t->cap, cut = full || t->has_bound;
    uint64_t w = full ? t->ev[t->h[0]].dur : (uint64_t)t->bound;

    *may = 1;
    *opened = 0;
    *ncand = 0;
    if (t->key != KB_KEY_DUR || (!cut && !t->named))
        return 0;
    if (full && t->has_bound &&
        (t->desc ? (uint64_t)t->bound > w : (uint64_t)t->bound < w))
        w = (uint64_t)t->bound;
    if (kblock_name_dur(r->dec, b, len, r->names, r->durs, KB_MAX_EVENTS, &n,
                        why, whylen))
        return -1;
    *opened = 1;
    for (size_t k = 0; k < n; k++) {
        /* equal durations may still place by seq */
        if (cut && (t->desc ? r->durs[k] < w : r->durs[k] > w))
            continue;
        if (t->named &&
            !bsearch(&r->names[k], t->ids, t->nids, sizeof(int64_t), cmp_id))
            continue;
        r->cand[nc++] = (uint32_t)k;
    }
    *may = nc > 0;
    *ncand = nc;
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The events that placed from the block in hand (x->slots) decoded whole
 * (their columns x->cols) into their slots of t: the decoder still holds
 * that block's payload (kblock_decode_rows). */
static int sel_fill(kb_scan *x)
{
    struct kb_rd *r = x->r;
    kb_top *t = x->t;
    size_t k = 0;
    char why[128];

    for (size_t i = 0; i < x->nslots; i++) {
        uint32_t sl = x->slots[i];
        x->pairs[k++] = (uint64_t)x->row[sl] << 32 | sl;
        x->row[sl] = KB_ROW_NONE;
    }
    x->nslots = 0;
    if (!k)
        return GPUFL_OK;
    if (k > 1)
        qsort(x->pairs, k, sizeof(*x->pairs), cmp_u64);
    for (size_t j = 0; j < k; j++)
        x->rows[j] = (uint32_t)(x->pairs[j] >> 32);
    /* r->ev: the first step's events are not read again */
    if (kblock_decode_rows(r->dec, x->cols, x->rows, k, r->ev, why,
                           sizeof(why))) {
        glog_error("kblocks", "session %lld: unreadable block: %s",
                   (long long)x->sess, why);
        return GPUFL_EINTERNAL;
    }
    for (size_t j = 0; j < k; j++) {
        const kblock_ev *e = &r->ev[j];
        size_t sl = (size_t)(x->pairs[j] & UINT32_MAX);
        t->ev[sl] = *e;
        t->nul[sl] = (uint8_t)((e->occ < 0 ? 1u : 0u) | (e->tid ? 0u : 2u));
    }
    return GPUFL_OK;
}

/* Offers ev[0..n) (a block's events, or with rows those at rows[0..n)
 * of it): those in the scan's time range that keep accepts, to t (or to
 * keep alone without t).  sel: the events hold only the columns x->sel,
 * and those that place are noted (by their row) for sel_fill. */
static int offer(kb_scan *x, const kblock_ev *ev, size_t n, int sel,
                 const uint32_t *rows)
{
    kb_top *t = x->t;
    int rc = GPUFL_OK;

    for (size_t j = 0; j < n && !rc; j++) {
        const kblock_ev *e = &ev[j];
        size_t sl;
        if ((int64_t)e->ts < x->t_lo || (int64_t)e->ts >= x->t_hi)
            continue;
        if (!t) {
            rc = x->keep(e, x->arg);
            continue;
        }
        if (x->keep && !x->keep(e, x->arg))
            continue;
        sl = kb_top_add(t, e, (e->occ < 0 ? 1u : 0u) | (e->tid ? 0u : 2u));
        if (!sel || sl == KB_TOP_NONE)
            continue;
        if (x->row[sl] == KB_ROW_NONE)
            x->slots[x->nslots++] = (uint32_t)sl;
        x->row[sl] = rows ? rows[j] : (uint32_t)j;
    }
    return rc;
}

/* kbcache's hit: the cached block's events, every column. */
static int offer_cached(void *arg, const kblock_ev *ev, size_t n)
{
    return offer(arg, ev, n, 0, NULL);
}

/* Offers the events of the block whose bytes are st's column col (the
 * block (x->sess, stream, lo)): from the cache of decoded blocks when it
 * holds them; else, unless t rules the block out from its names and
 * durations, decoded - whole, to be kept, when the cache asks for it;
 * else in x->sel's columns, then the placed events whole; or in
 * x->cols. */
int sq_kb_block_offer(kb_scan *x, sdb_stmt *st, int col, int64_t stream,
                      int64_t lo)
{
    struct kb_rd *r = x->r;
    kb_top *t = x->t;
    const unsigned char *b = NULL;
    size_t len = 0, n = 0, nc = 0;
    unsigned cols = (x->sel ? x->sel | KB_C_SEQ : x->cols) | KB_C_TS;
    const uint32_t *rows = NULL;
    kbcache_key key = { x->sess, stream, lo };
    char why[128];
    int rc, may = 1, opened = 0, keep = 0, sel = x->sel != 0;

    if ((rc = sq_kb_bytes(x->s, st, col, x->sess, stream, lo, &b, &len)) != 0)
        return rc;
    if (kbcache_get(x->s->kbc, &key, b, len, offer_cached, x, &rc, &keep))
        return rc;
    if (t && dur_may(r, t, b, len, &may, &opened, &nc, why, sizeof(why))) {
        glog_error("kblocks", "session %lld: unreadable block: %s",
                   (long long)x->sess, why);
        return GPUFL_EINTERNAL;
    }
    if (!may)
        return GPUFL_OK;
    if (keep) {
        cols = KB_C_ALL;
        sel = 0;
    }
    /* the payload dur_may opened is not decompressed again, and only its
     * rows that may place are read (a name sort at 100M: ~25 of a
     * block's 5,000 events a name): their columns walked only as far as
     * the last of them, the others' events never built */
    if (opened && cols != KB_C_ALL) {
        rows = r->cand;
        n = nc;
    }
    if (rows
            ? kblock_decode_rows(r->dec, cols, rows, n, r->ev, why, sizeof(why))
            : kblock_decode_cols(r->dec, b, len, cols, r->ev, KB_MAX_EVENTS, &n,
                                 why, sizeof(why))) {
        glog_error("kblocks", "session %lld: unreadable block: %s",
                   (long long)x->sess, why);
        return GPUFL_EINTERNAL;
    }
    __atomic_fetch_add(&x->s->kq_decoded, 1, __ATOMIC_RELAXED);
    /* best effort: a block the cache cannot take is still answered */
    if (keep)
        (void)kbcache_put(x->s->kbc, &key, b, len, r->ev, n);
    if ((rc = offer(x, r->ev, n, sel, rows)) != 0 || !sel)
        return rc;
    /* b is still there (st not stepped): the rows read the same payload */
    return sel_fill(x);
}

/* The block (x->sess, stream, lo) read and offered (sq_kb_block_offer). */
int sq_kb_block_load(kb_scan *x, sdb *db, int64_t stream, int64_t lo)
{
    sdb_stmt *st = NULL;
    int rc;

    if (sdb_prepare(db,
                    "SELECT block FROM kblocks WHERE sess=? AND stream=?"
                    " AND seq_lo=?",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, x->sess);
    qbind_i64(st, 2, stream);
    qbind_i64(st, 3, lo);
    if ((rc = sdb_step(st)) != SDB_ROW) {
        /* compacted or thawed away between the index read and here is
         * not possible within one read transaction; say so if it is */
        sdb_finalize(st);
        glog_error("kblocks", "session %lld stream %lld seq %lld: block gone",
                   (long long)x->sess, (long long)stream, (long long)lo);
        return rc == SDB_DONE ? GPUFL_EINTERNAL : sq_err(rc);
    }
    rc = sq_kb_block_offer(x, st, 0, stream, lo);
    sdb_finalize(st);
    return rc;
}

/* A block's index row: its key and the best key its events can have */
typedef struct kb_meta {
    int64_t stream, lo, bound;
} kb_meta;

static int meta_asc(const void *a, const void *b)
{
    int64_t x = ((const kb_meta *)a)->bound, y = ((const kb_meta *)b)->bound;
    return x < y ? -1 : x > y;
}

static int meta_desc(const void *a, const void *b)
{
    return meta_asc(b, a);
}

int sq_kb_scan(srv_store *s, sdb *db, int64_t sess, int64_t t_lo, int64_t t_hi,
               kb_keep_fn keep, void *arg, kb_top *t)
{
    return sq_kb_scan_sel(s, db, sess, t_lo, t_hi, KB_C_ALL, 0, keep, arg, t);
}

int sq_kb_scan_cols(srv_store *s, sdb *db, int64_t sess, int64_t t_lo,
                    int64_t t_hi, unsigned cols, kb_keep_fn keep, void *arg,
                    kb_top *t)
{
    return sq_kb_scan_sel(s, db, sess, t_lo, t_hi, cols, 0, keep, arg, t);
}

/* The scan's index query: the blocks in the time range with their
 * bounds. */
#define SCAN_SQL                                                               \
    "SELECT stream, seq_lo, t_lo, t_hi, dur_min, dur_max FROM kblocks k"       \
    " WHERE" KB_IN_RANGE

int sq_kb_scan_sel(srv_store *s, sdb *db, int64_t sess, int64_t t_lo,
                   int64_t t_hi, unsigned cols, unsigned sel, kb_keep_fn keep,
                   void *arg, kb_top *t)
{
    sdb_stmt *st = NULL;
    kb_meta *m = NULL;
    size_t nm = 0, cap = 0;
    kb_scan x = { s, NULL, sess, t_lo, t_hi, cols, t ? sel : 0, keep, arg,
                  t, NULL, NULL, NULL, NULL, 0 };
    int rc, by_bound = t && t->key == KB_KEY_DUR;
    int by_name =
        t && t->key == KB_KEY_DUR && t->named && t->nids <= KB_NAME_IDS_MAX;

    if (t && !t->cap)
        return GPUFL_OK; /* nothing can place */
    if (!(x.r = rd_get(s, db)))
        return GPUFL_ENOMEM;
    if (x.sel) {
        x.row = malloc(t->cap * sizeof(*x.row));
        x.slots = malloc(t->cap * sizeof(*x.slots));
        x.rows = malloc(t->cap * sizeof(*x.rows));
        x.pairs = malloc(t->cap * sizeof(*x.pairs));
        if (!x.row || !x.slots || !x.rows || !x.pairs || t->cap > UINT32_MAX) {
            rc = GPUFL_ENOMEM;
            goto out;
        }
        for (size_t i = 0; i < t->cap; i++)
            x.row[i] = KB_ROW_NONE;
    }
    /* by time, the blocks in bound order from the index, given up early
     * (store_sql_kblocks_scan.c) */
    if (t && t->key == KB_KEY_TS) {
        rc = sq_kb_scan_ts(&x, db);
        goto out;
    }
    /* by duration filtered by name, either way: the names' blocks in
     * order (store_sql_kblocks_names.c) */
    if (by_name) {
        rc = sq_kb_scan_name(&x, db);
        goto out;
    }
    /* the blocks in the time range, with the best key their events can
     * have (queue and launch latency have no bound: every block) */
    if (sdb_prepare(db, SCAN_SQL, &st)) {
        rc = GPUFL_EINTERNAL;
        goto out;
    }
    qbind_i64(st, 1, sess);
    qbind_i64(st, 2, t_lo);
    qbind_i64(st, 3, t_hi);
    while ((rc = sdb_step(st)) == SDB_ROW) {
        int col = t && t->key == KB_KEY_DUR ? 4 : 2;
        __atomic_fetch_add(&s->kq_indexed, 1, __ATOMIC_RELAXED);
        if (nm == cap) {
            kb_meta *y;
            cap = cap ? 2 * cap : 256;
            if (!(y = realloc(m, cap * sizeof(*m)))) {
                rc = GPUFL_ENOMEM;
                goto out;
            }
            m = y;
        }
        m[nm].stream = qcol_i64(st, 0);
        m[nm].lo = qcol_i64(st, 1);
        m[nm].bound = qcol_i64(st, col + (t && t->desc ? 1 : 0));
        nm++;
    }
    sdb_finalize(st);
    st = NULL;
    if (rc != SDB_DONE) {
        rc = sq_err(rc);
        goto out;
    }
    if (by_bound && nm > 1)
        qsort(m, nm, sizeof(*m), t->desc ? meta_desc : meta_asc);
    rc = GPUFL_OK;
    for (size_t i = 0; i < nm && !rc; i++) {
        if (by_bound && !kb_top_open(t, m[i].bound))
            break; /* the rest are sorted further away */
        rc = sq_kb_block_load(&x, db, m[i].stream, m[i].lo);
    }
out:
    sdb_finalize(st);
    free(m);
    free(x.row);
    free(x.slots);
    free(x.rows);
    free(x.pairs);
    return rc;
}

int sq_kb_find(srv_store *s, sdb *db, int64_t sess, uint64_t seq, kblock_ev *e,
               int *found)
{
    sdb_stmt *st = NULL;
    struct kb_rd *r;
    int rc, err = GPUFL_OK;

    *found = 0;
    if (!(r = rd_get(s, db)))
        return GPUFL_ENOMEM;
    /* streams' seq ranges interleave: every block whose range holds seq */
    if (sdb_prepare(db,
                    "SELECT block, stream, seq_lo FROM kblocks WHERE"
                    " sess=?1 AND seq_hi >= ?2 AND seq_lo <= ?2",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sess);
    qbind_u64(st, 2, seq);
    while (!*found && (rc = sdb_step(st)) == SDB_ROW) {
        const unsigned char *b = NULL;
        size_t len = 0, pos = KB_NOTFOUND, n = 0;
        char why[128];
        if ((err = sq_kb_bytes(s, st, 0, sess, qcol_i64(st, 1), qcol_i64(st, 2),
                               &b, &len)) != 0)
            break;
        if (kblock_seek_seq(r->dec, b, len, seq, &pos, why, sizeof(why)) ||
            (pos != KB_NOTFOUND &&
             kblock_decode(r->dec, b, len, r->ev, KB_MAX_EVENTS, &n, why,
                           sizeof(why)))) {
            glog_error("kblocks", "session %lld: unreadable block: %s",
                       (long long)sess, why);
            err = GPUFL_EINTERNAL;
            break;
        }
        if (pos != KB_NOTFOUND)
            __atomic_fetch_add(&s->kq_decoded, 1, __ATOMIC_RELAXED);
        if (pos != KB_NOTFOUND && pos < n) {
            *e = r->ev[pos];
            *found = 1;
        }
    }
    sdb_finalize(st);
    if (err || *found)
        return err;
    return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}
