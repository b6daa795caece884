/*
 * store_sql_ext.c - the longest and the shortest kernels of each session
 * (table kext), for `sort=duration` pages without a duration index.
 *
 * An index on kernels(sess, dur, seq) cost about a quarter of SQLite's
 * ingest time (a B-tree insert at a random place for every kernel), for
 * a question asked of few sessions and mostly about their first pages.
 * Instead, per session and side (0: longest, 1: shortest), kext holds a
 * *prefix* of the kernels in that side's order: every kernel whose
 * (dur, seq) comes before the last row kept.  At ingest a heap per side
 * keeps the K best keys (K = SQ_EXT_K, GPUFL_SERVER_TOPK); a new kernel
 * enters only when it beats the heap's worst, which then leaves - for
 * durations in random order about K * (1 + ln(N / K)) of N kernels ever
 * enter, a few percent of a big session.  (Durations that only grow, or
 * only shrink, make every kernel enter one side: the cost of the old
 * index, twice.)  store_sql_q_kernels.c reads a page from kext and falls
 * back to a plain sort only past the prefix (or when filters leave too few
 * rows in it).
 *
 * The heaps live in memory for the sessions being written (SQ_EXT_SESS,
 * least recently used ones go), loaded from kext on first use.  Changes
 * are collected per ingest batch and written before its COMMIT by the
 * batch writer (SQLite: the keys leaving as one range delete per session
 * and side, store_sql_ingest_sqlite.c, and a prepared statement per new
 * key; PostgreSQL: multi-row statements); a
 * batch that rolls back drops every heap (they are reloaded), and every
 * batch that changes a session bumps sessions.kext_ver, so a server whose
 * heaps are older (another server wrote the session) reloads them.  A
 * heap loaded for a session whose kext rows are fewer than its kernels (a
 * prefix shorter than K: K grew, or rows were lost) keeps that length, so
 * the prefix property holds.
 */
#include "store_sql_writer_int.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ext_key {
    int64_t dur, seq;
    uint32_t gen; /* batch that added it; 0 = stored */
} ext_key;

typedef struct ext_heap {
    ext_key *k;
    uint32_t n, cap;
    /* sq_ext_kth's last answer (rank kth_r, 0: none), valid until the
     * heap changes: a batch's blocks (one per stream) each ask for the
     * same rank of heaps their kernels all fed before, and the selection
     * over a copy of K keys was ~3 % of the HTTP worker's CPU per kernel
     * when made per block (docs/server.md "Where ingest's CPU goes") */
    uint32_t kth_r;
    int64_t kth[2];
} ext_heap;

struct sq_ext {
    int64_t sess;  /* 0 = free slot */
    uint64_t used; /* LRU clock */
    uint32_t gen;  /* batch that last touched it */
    uint32_t seen; /* batch that last compared ver with the database */
    int64_t ver;   /* sessions.kext_ver these heaps match */
    uint64_t txn;  /* the ingest transaction that last checked ver */
    ext_heap h[2];
    sq_kac kc; /* its kagg rows (store_sql_kagg_cache.c) */
};

/* 1 when a is worse than b on side d: side 0 keeps the longest, so its
 * heap's root is the shortest kept; side 1 the reverse. */
static int worse(int d, const ext_key *a, const ext_key *b)
{
    int c = a->dur != b->dur ? (a->dur < b->dur ? -1 : 1)
                             : (a->seq < b->seq ? -1 : a->seq > b->seq);
    return d == 0 ? c < 0 : c > 0;
}

static void sift_up(int d, ext_heap *h, uint32_t i)
{
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        ext_key t;
        if (!worse(d, &h->k[i], &h->k[p]))
            break;
        t = h->k[i];
        h->k[i] = h->k[p];
        h->k[p] = t;
        i = p;
    }
}

static void sift_down(int d, ext_heap *h, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        ext_key t;
        if (l < h->n && worse(d, &h->k[l], &h->k[m]))
            m = l;
        if (r < h->n && worse(d, &h->k[r], &h->k[m]))
            m = r;
        if (m == i)
            return;
        t = h->k[i];
        h->k[i] = h->k[m];
        h->k[m] = t;
        i = m;
    }
}

static void ext_free_slot(struct sq_ext *x)
{
    free(x->h[0].k);
    free(x->h[1].k);
    sq_kac_release(&x->kc);
    memset(x, 0, sizeof(*x));
}

void sq_ext_reset(srv_store *s)
{
    for (size_t i = 0; s->ext && i < SQ_EXT_SESS; i++)
        ext_free_slot(&s->ext[i]);
    s->ndel = 0;
    s->nput = 0;
}

void sq_ext_release(srv_store *s)
{
    sq_ext_reset(s);
    free(s->ext);
    s->ext_last = NULL;
    free(s->del);
    free(s->put);
    s->ext = NULL;
    s->del = NULL;
    s->put = NULL;
}

/* Loads side d of x's session from kext: the first K rows in the side's
 * order (rows past them are deleted: K shrank). */
static int ext_load(srv_store *s, struct sq_ext *x, int d, uint64_t n_kernels)
{
    ext_heap *h = &x->h[d];
    sdb_stmt *st = s->ws[d ? WS_EXT_LOAD1 : WS_EXT_LOAD0];
    int rc, more;

    h->cap = s->ext_k;
    h->n = 0;
    h->kth_r = 0;
    if (!(h->k = malloc((size_t)h->cap * sizeof(*h->k))))
        return GPUFL_ENOMEM;
    qbind_i64(st, 1, x->sess);
    qbind_i64(st, 2, (int64_t)h->cap + 1);
    while ((rc = sdb_step(st)) == SDB_ROW && h->n < h->cap) {
        h->k[h->n].dur = qcol_i64(st, 0);
        h->k[h->n].seq = qcol_i64(st, 1);
        h->k[h->n++].gen = 0;
    }
    more = rc == SDB_ROW; /* a row past the first K: K shrank */
    sdb_reset(st);
    if (rc != SDB_ROW && rc != SDB_DONE)
        return sq_err(rc);
    if (more) {
        /* drop the rows past the first K (a prefix stays a prefix) */
        char sql[256];
        const ext_key *last = &h->k[h->n - 1];
        /* and the rows kept for them (store_sql_kxrow.c) */
        for (int t = 0; t < 2; t++) {
            snprintf(sql, sizeof(sql),
                     "DELETE FROM %s WHERE sess=%lld AND side=%d AND"
                     " (dur, seq) %s (%lld, %lld)",
                     t ? "kxrow" : "kext", (long long)x->sess, d, d ? ">" : "<",
                     (long long)last->dur, (long long)last->seq);
            if ((rc = sdb_exec(s->w, sql)) != 0)
                return rc;
        }
    }
    /* a prefix shorter than K and than the session: it may not grow past
     * what it holds, or kernels between would be missing */
    if (h->n < h->cap && h->n < n_kernels)
        h->cap = h->n;
    /* rows came in the side's order: best first; heapify for worst-root */
    for (uint32_t i = h->n / 2; i-- > 0;)
        sift_down(d, h, i);
    return GPUFL_OK;
}

/* The slot holding sess, or NULL; then *lru is the slot to load it into
 * (NULL when every slot was changed in this batch: those hold unwritten
 * keys and may not go). */
static struct sq_ext *ext_find(srv_store *s, int64_t sess, struct sq_ext **lru)
{
    *lru = NULL;
    for (size_t i = 0; i < SQ_EXT_SESS; i++) {
        struct sq_ext *c = &s->ext[i];
        if (c->sess == sess)
            return c;
        if (c->gen != s->ext_gen && (!*lru || c->used < (*lru)->used))
            *lru = c;
    }
    return NULL;
}

/* 1 when the session's kext is newer than the slot's heaps (another
 * server, on the same PostgreSQL, wrote it since), 0 when not, or a
 * negative gpufl_err.  Batches take turns (the advisory lock), so the
 * answer holds until COMMIT. */
static int ext_stale(srv_store *s, const struct sq_ext *c)
{
    sdb_stmt *st = s->ws[WS_EXT_VER];
    int64_t v = 0;
    int rc;

    qbind_i64(st, 1, c->sess);
    if ((rc = sdb_step(st)) == SDB_ROW)
        v = qcol_i64(st, 0);
    sdb_reset(st);
    if (rc != SDB_ROW && rc != SDB_DONE)
        return sq_err(rc);
    return v != c->ver;
}

static struct sq_ext *ext_get(srv_store *s, int64_t sess, int *rc)
{
    struct sq_ext *x, *lru;
    uint64_t nk = 0;

    *rc = GPUFL_OK;
    /* a batch's kernels come mostly from one session: no search */
    x = s->ext_last;
    if (x && x->sess == sess && x->seen == s->ext_gen) {
        x->used = ++s->ext_clock;
        x->txn = s->ext_txn;
        return x;
    }
    if (!s->ext && !(s->ext = calloc(SQ_EXT_SESS, sizeof(*s->ext)))) {
        *rc = GPUFL_ENOMEM;
        return NULL;
    }
    if ((x = ext_find(s, sess, &lru)) != NULL) {
        int stale;
        x->used = ++s->ext_clock;
        if (x->seen == s->ext_gen) {
            x->txn = s->ext_txn;
            return s->ext_last = x;
        }
        if ((stale = ext_stale(s, x)) < 0) {
            *rc = stale;
            return NULL;
        }
        x->seen = s->ext_gen;
        if (!stale) {
            x->txn = s->ext_txn;
            return s->ext_last = x;
        }
        /* stale: loaded again below */
    } else {
        if (!lru) {
            /* every slot changed in this batch: write them out, then any
             * may go */
            if ((*rc = sq_ext_flush(s)) != 0)
                return NULL;
            s->ext_gen++;
            lru = &s->ext[0];
        }
        x = lru;
    }
    ext_free_slot(x);
    x->sess = sess;
    x->used = ++s->ext_clock;
    /* the session's kernels: stored, plus this batch's before this one */
    {
        sdb_stmt *st = s->ws[WS_EXT_COUNT];
        uint64_t k[4] = { (uint64_t)sess, 0, 0, 0 };
        const sq_sacc *a = rl_map_find(&s->sacc, k);
        qbind_i64(st, 1, sess);
        if (sdb_step(st) == SDB_ROW) {
            nk = (uint64_t)qcol_i64(st, 0);
            x->ver = qcol_i64(st, 1);
        }
        sdb_reset(st);
        nk += a ? a->kernels : 0;
        x->seen = s->ext_gen;
    }
    if ((*rc = ext_load(s, x, 0, nk)) != 0 ||
        (*rc = ext_load(s, x, 1, nk)) != 0) {
        ext_free_slot(x);
        return NULL;
    }
    x->txn = s->ext_txn;
    return s->ext_last = x;
}

sq_kac *sq_ext_kac(srv_store *s, int64_t sess)
{
    struct sq_ext *x = s->ext_last, *lru;

    if (!s->ext)
        return NULL;
    if (!x || x->sess != sess)
        x = ext_find(s, sess, &lru);
    /* checked in this transaction: under the advisory lock no other
     * server writes until COMMIT */
    return x && x->txn == s->ext_txn ? &x->kc : NULL;
}

static int del_push(srv_store *s, int64_t sess, int d, const ext_key *k)
{
    if (s->ndel == s->del_cap) {
        size_t nc = s->del_cap ? 2 * s->del_cap : 1024;
        sq_ext_row *p = realloc(s->del, nc * sizeof(*p));
        if (!p)
            return GPUFL_ENOMEM;
        s->del = p;
        s->del_cap = nc;
    }
    s->del[s->ndel++] = (sq_ext_row){ sess, d, k->dur, k->seq };
    return GPUFL_OK;
}

int sq_ext_add(srv_store *s, int64_t sess, int64_t dur, int64_t seq)
{
    int rc;
    struct sq_ext *x = ext_get(s, sess, &rc);

    if (!x)
        return rc;
    x->gen = s->ext_gen;
    s->ext_dirty = 1;
    for (int d = 0; d < 2; d++) {
        ext_heap *h = &x->h[d];
        ext_key k = { dur, seq, s->ext_gen };
        if (h->n < h->cap) {
            h->kth_r = 0;
            h->k[h->n++] = k;
            sift_up(d, h, h->n - 1);
            continue;
        }
        if (!h->n || !worse(d, &h->k[0], &k))
            continue; /* not better than the worst kept */
        /* the worst leaves: a stored key is deleted, one added in this
         * batch was never written - but once this batch wrote blocks, its
         * kernel may have a kept row (store_sql_kxrow.c), which goes with
         * it (the key's own delete then finds nothing) */
        if ((h->k[0].gen == 0 || s->kx_wrote) &&
            (rc = del_push(s, sess, d, &h->k[0])) != 0)
            return rc;
        h->kth_r = 0;
        h->k[0] = k;
        sift_down(d, h, 0);
    }
    return GPUFL_OK;
}

/* k[0..n) rearranged so that k[r] is the key of rank r + 1 in side d's
 * order, best first (Wirth's selection: each round partitions around the
 * key at r and keeps the part that holds r). */
static void ext_select(int d, ext_key *k, int64_t n, int64_t r)
{
    int64_t l = 0, m = n - 1;

    while (l < m) {
        ext_key x = k[r], t;
        int64_t i = l, j = m;
        do {
            while (worse(d, &x, &k[i])) /* k[i] before x */
                i++;
            while (worse(d, &k[j], &x))
                j--;
            if (i <= j) {
                t = k[i];
                k[i] = k[j];
                k[j] = t;
                i++;
                j--;
            }
        } while (i <= j);
        if (j < r)
            l = i;
        if (r < i)
            m = j;
    }
}

int sq_ext_kth(srv_store *s, int64_t sess, int d, uint32_t r, int64_t out[2],
               int *have)
{
    struct sq_ext *x = s->ext_last, *lru;
    ext_heap *h;
    ext_key *k;

    *have = 0;
    if (!s->ext || !r)
        return GPUFL_OK;
    /* the session's kernels fed its heaps in this batch (found here
     * unless more than SQ_EXT_SESS sessions pushed it out) */
    if (!x || x->sess != sess)
        x = ext_find(s, sess, &lru);
    if (!x || !x->h[d].n)
        return GPUFL_OK;
    h = &x->h[d];
    *have = 1;
    if (h->n <= r) { /* the root: the worst kept */
        out[0] = h->k[0].dur;
        out[1] = h->k[0].seq;
        return GPUFL_OK;
    }
    if (h->kth_r == r) {
        out[0] = h->kth[0];
        out[1] = h->kth[1];
        return GPUFL_OK;
    }
    if (!(k = malloc((size_t)h->n * sizeof(*k)))) {
        *have = 0;
        return GPUFL_ENOMEM;
    }
    memcpy(k, h->k, (size_t)h->n * sizeof(*k));
    ext_select(d, k, h->n, (int64_t)r - 1);
    out[0] = h->kth[0] = k[r - 1].dur;
    out[1] = h->kth[1] = k[r - 1].seq;
    h->kth_r = r;
    free(k);
    return GPUFL_OK;
}

/* The keys added in this batch (marked stored now), onto s->put. */
static int gather_puts(srv_store *s)
{
    for (size_t i = 0; i < SQ_EXT_SESS; i++) {
        struct sq_ext *x = &s->ext[i];
        if (!x->sess || x->gen != s->ext_gen)
            continue;
        for (int d = 0; d < 2; d++) {
            ext_heap *h = &x->h[d];
            for (uint32_t j = 0; j < h->n; j++) {
                ext_key *k = &h->k[j];
                if (k->gen != s->ext_gen)
                    continue;
                k->gen = 0;
                if (s->nput == s->put_cap) {
                    size_t nc = s->put_cap ? 2 * s->put_cap : 1024;
                    sq_ext_row *p = realloc(s->put, nc * sizeof(*p));
                    if (!p)
                        return GPUFL_ENOMEM;
                    s->put = p;
                    s->put_cap = nc;
                }
                s->put[s->nput++] = (sq_ext_row){ x->sess, d, k->dur, k->seq };
            }
        }
    }
    return GPUFL_OK;
}

int sq_ext_flush(srv_store *s)
{
    int rc = GPUFL_OK;

    if (!s->ext || (!s->ndel && !s->ext_dirty))
        return GPUFL_OK;
    /* a new version for each session changed in this batch (another
     * server holding its heaps reloads them) */
    for (size_t i = 0; i < SQ_EXT_SESS && !rc; i++) {
        struct sq_ext *x = &s->ext[i];
        sdb_stmt *st = s->ws[WS_EXT_BUMP];
        if (!x->sess || x->gen != s->ext_gen)
            continue;
        qbind_i64(st, 1, x->sess);
        rc = sdb_step(st);
        if (rc == SDB_ROW)
            x->ver = qcol_i64(st, 0);
        sdb_reset(st);
        rc = rc == SDB_ROW    ? GPUFL_OK
             : rc == SDB_DONE ? GPUFL_EINTERNAL
                              : sq_err(rc);
    }
    if (!rc)
        rc = gather_puts(s);
    if (!rc)
        rc = s->wr->kext(s, s->del, s->ndel, s->put, s->nput);
    s->ndel = 0;
    s->nput = 0;
    s->ext_dirty = 0;
    return rc;
}

int sq_ext_cut_add(sq_ext_row *cut, int64_t *far, size_t *ncut, size_t max,
                   const sq_ext_row *r)
{
    size_t j = 0;

    while (j < *ncut && (cut[j].sess != r->sess || cut[j].side != r->side))
        j++;
    if (j < *ncut) {
        int later =
            r->dur != cut[j].dur ? r->dur > cut[j].dur : r->seq > cut[j].seq;
        /* side 0 keeps the longest: its best leaving is the latest */
        if (later == (r->side == 0))
            cut[j] = *r;
        if (far && (r->side == 0 ? r->dur < far[j] : r->dur > far[j]))
            far[j] = r->dur;
        return 1;
    }
    if (*ncut == max)
        return 0;
    if (far)
        far[*ncut] = r->dur;
    cut[(*ncut)++] = *r;
    return 1;
}
