/*
 * store_sql_kblocks_merge.c - the compactor's merges of ingest's small
 * kernel blocks (issue 23; docs/server.md "The compactor"): a run of
 * them, consecutive by seq_lo, read, decoded, sorted and encoded through a
 * reader beside the writer, then swapped in under the writer's lock with
 * exactly its sources deleted (checked), several merges a transaction
 * (KB_TX_KERNELS).  The rest of the compactor (rows into blocks, naming,
 * the pass) is store_sql_kblocks_compact.c.
 */
#include "store_sql_int.h"
#include "store_sql_blocks_w.h"
#include "store_sql_kblocks_read.h"

#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "kblock.h"
#include "store_sql_kbcompact.h"
#include "store_sql_kbnpack.h"

/* Deletes the rows of table (kblocks, kbnames, kbunnamed) of the blocks starting
 * at src[0..n) of (sess, stream); kblocks's only where its count is still
 * srcn[i] (the merge read it before it took the lock).  A kblocks row that
 * is gone or changed was deleted or merged under the merge (retention,
 * the cold tier): the merge is given up. */
static int del_merged(srv_store *s, const char *table, int64_t sess,
                      int64_t stream, const int64_t *src, const int64_t *srcn,
                      size_t n)
{
    char sql[112];
    sdb_stmt *st = NULL;
    int rc = GPUFL_OK, once = !strcmp(table, "kblocks");

    snprintf(sql, sizeof sql, SQ_KB_DEL_FMT, table, once ? " AND n=?4" : "");
    if (sdb_prepare(s->w, sql, &st))
        return GPUFL_EINTERNAL;
    for (size_t i = 0; i < n && !rc; i++) {
        qbind_i64(st, 1, sess);
        qbind_i64(st, 2, stream);
        qbind_i64(st, 3, src[i]);
        if (once)
            qbind_i64(st, 4, srcn[i]);
        if ((rc = qrun(st)) == 0 && once && sdb_changes(s->w) != 1) {
            glog_error("kblocks",
                       "session %lld stream %lld: block %lld went while"
                       " merged: not merged",
                       (long long)sess, (long long)stream, (long long)src[i]);
            rc = GPUFL_EINTERNAL;
        }
    }
    sdb_finalize(st);
    return rc;
}

/* ---- merging small blocks ---- */

/* Ingest writes a block per (session, stream) and batch
 * (store_sql_kblocks_ingest.c), mostly smaller than SQ_KB_RUN; the
 * compactor merges a run of them - consecutive by seq_lo, at least two,
 * up to KB_MERGE_MAX kernels - into one block, in one transaction that
 * deletes the sources (checking that each went) and inserts the merged
 * block (the sum of their counts).  A kill -9 leaves the sources or the
 * merged block. */
#define KB_MERGE_MAX (2 * SQ_KB_RUN)
#define KB_MERGE_SRC 64
/* Blocks a run's look reads at a time (merge_prep): a run of ingest's
 * blocks is mostly two or three of them (SQ_KB_RUN kernels), and each row
 * read past the run's end is a small block's bytes sent for nothing. */
#define KB_LOOK_ROWS 8

static int ev_seq_cmp(const void *a, const void *b)
{
    const kblock_ev *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Merges are prepared off the writer's lock and swapped in under it.
 * Prepared under the lock, a transaction's reads and decodes of the
 * sources and the encode of the merged blocks held ingest off: at 10M
 * kernels the compactor's thread took 0.21 of a core, the HTTP worker
 * waited a third of its time and ran at 545k/s against 689k/s with the
 * compactor off (docs/server.md "100M a tenth time").  So up to
 * KB_TX_KERNELS kernels of merges are read through a reader, decoded,
 * sorted and encoded first, each kept as the merged block's bytes, its
 * names' duration bounds and the few events the kept rows may want
 * (sq_kx_candidates); then, in one transaction under the lock, each
 * merge deletes its sources only where their counts are still what was
 * read (else the transaction is rolled back, as when a source went
 * before), puts their names' packs back as rows and inserts the block.
 * A kill -9 leaves the sources or the merged block, as before. */
#define KB_PREP_MAX 128
/* kept-row candidates a transaction holds at most (13 MB of events):
 * a session of fewer than KX_KEEP keys a side wants all its events */
#define KB_PREP_KX 65536

typedef struct kb_prep {
    int64_t sess, stream;
    int64_t src[KB_MERGE_SRC], srcn[KB_MERGE_SRC];
    size_t nsrc, total;
    size_t boff, len;    /* its bytes in the prepper's arena */
    size_t noff, nnames; /* lo[nnames] then hi[nnames] at nb + noff */
    size_t kxoff, nkx;   /* its kept-row candidates at kx + kxoff */
} kb_prep;

struct kb_prepper {
    /* its own codec state: the writer's (s->kb_enc, s->kb_dec) is used
     * by ingest under the lock */
    struct kblock_enc *enc;
    struct kblock_dec *dec;
    kblock_ev *ev; /* KB_MAX_EVENTS: a run's events */
    kblock_index *idx;
    uint32_t *slot;         /* 2 * KB_MAX_NAMES */
    uint32_t *ix;           /* KB_MAX_EVENTS */
    unsigned char *enc_out; /* KB_BLOCK_MAX */
    unsigned char *bytes;
    size_t blen, bcap;
    uint64_t *nb;
    size_t nlen, ncap;
    kblock_ev *kx; /* KB_PREP_KX */
    size_t nkx;
    kb_prep p[KB_PREP_MAX];
    size_t np;
};

void sq_kb_prep_release(srv_store *s)
{
    struct kb_prepper *P = s->kb_pr;

    if (!P)
        return;
    kblock_enc_free(P->enc);
    kblock_dec_free(P->dec);
    free(P->ev);
    free(P->idx);
    free(P->slot);
    free(P->ix);
    free(P->enc_out);
    free(P->bytes);
    free(P->nb);
    free(P->kx);
    free(P);
    s->kb_pr = NULL;
}

static struct kb_prepper *prepper(srv_store *s)
{
    struct kb_prepper *P = s->kb_pr;

    if (P)
        return P;
    if (!(P = calloc(1, sizeof(*P))))
        return NULL;
    s->kb_pr = P;
    P->enc = kblock_enc_new();
    P->dec = kblock_dec_new();
    P->ev = calloc(KB_MAX_EVENTS, sizeof(*P->ev));
    P->idx = malloc(sizeof(*P->idx));
    P->slot = malloc(2 * KB_MAX_NAMES * sizeof(*P->slot));
    P->ix = malloc(KB_MAX_EVENTS * sizeof(*P->ix));
    P->enc_out = malloc(KB_BLOCK_MAX);
    P->kx = malloc(KB_PREP_KX * sizeof(*P->kx));
    if (!P->enc || !P->dec || !P->ev || !P->idx || !P->slot || !P->ix ||
        !P->enc_out || !P->kx) {
        sq_kb_prep_release(s);
        return NULL;
    }
    return P;
}

/* room for more bytes at *p (of *cap, *len used): 0, or GPUFL_ENOMEM */
static int grow(void **p, size_t *cap, size_t len, size_t more, size_t unit)
{
    size_t want = *cap ? *cap : 64;
    void *x;

    if (len + more <= *cap)
        return GPUFL_OK;
    while (want < len + more)
        want *= 2;
    if (!(x = realloc(*p, want * unit)))
        return GPUFL_ENOMEM;
    *p = x;
    *cap = want;
    return GPUFL_OK;
}

/* Decodes the block in st's column 2 (seq_lo in 0) at P->ev + at; *n its
 * kernels, which must be what the row's n (column 1) says.  A block that
 * does not decode: GPUFL_EPARSE. */
static int merge_read(srv_store *s, struct kb_prepper *P, sdb_stmt *st,
                      int64_t sess, int64_t stream, size_t at, size_t *n)
{
    const unsigned char *b = NULL;
    size_t len = 0;
    char why[128];
    int rc;

    if ((rc = sq_kb_bytes(s, st, 2, sess, stream, qcol_i64(st, 0), &b, &len)) !=
        0)
        return rc;
    if (kblock_decode(P->dec, b, len, P->ev + at, KB_MAX_EVENTS - at, n, why,
                      sizeof(why)) ||
        *n != (size_t)qcol_i64(st, 1)) {
        glog_debug(
            "kblocks", "session %lld stream %lld block %lld: not decoded: %s",
            (long long)sess, (long long)stream, (long long)qcol_i64(st, 0),
            *n != (size_t)qcol_i64(st, 1) ? "count differs" : why);
        return GPUFL_EPARSE;
    }
    return GPUFL_OK;
}

/* A group being merged: where its next run is looked for, and the last
 * block that did not decode counted (a run that ends at one is read
 * again by the next look). */
typedef struct kb_at {
    int64_t lo, bad_lo;
} kb_at;

/* The first run of small blocks of g from a->lo on, read through db
 * (a reader, no lock), merged and encoded into P's next kb_prep.  *got: 1
 * a merge prepared, 0 no run left in g, -1 P has no room for its kept-row
 * candidates (the transaction first, then this run again).  A block that
 * does not decode ends a run as a full block does (counted in *bad, once):
 * not merged, not a stop - one such block stopped every compactor pass,
 * the naming pass after it too. */
static int merge_prep(srv_store *s, sdb *db, struct kb_prepper *P,
                      const kb_group *g, kb_at *a, uint64_t *bad, int *got)
{
    sdb_stmt *st = NULL;
    kb_prep *p = &P->p[P->np];
    sq_mrun r = { 0, 0, KB_MERGE_SRC, KB_MERGE_MAX };
    size_t len = 0, m = 0;
    int64_t from = a->lo, rows = KB_LOOK_ROWS;
    char why[128];
    int rc = SDB_DONE, err = GPUFL_OK, stop = 0;

    *got = 0;
    /* From the first small block on, and the bytes of small blocks only:
     * a stream's full blocks come before its small ones, and reading
     * them all (a result column is read whether or not it is used) made
     * each merge cost the whole stream - at 40M kernels 64 MB a merge,
     * most of the server's CPU (bench_scale).  KB_LOOK_ROWS at a time:
     * PostgreSQL sends a statement's whole result at once, so without a
     * limit each run read every small block after it - a compactor
     * behind by 8 000 blocks (PostgreSQL at 100M kernels) read 134 MB a
     * merge and fell further behind (docs/server.md "PostgreSQL's
     * compactor reads a run, not the stream"). */
    if (sdb_prepare(db,
                    "SELECT seq_lo, n, CASE WHEN n < ?3 THEN block END FROM"
                    " kblocks WHERE sess=?1 AND stream=?2 AND seq_lo >= ?4"
                    " ORDER BY seq_lo LIMIT ?5",
                    &st))
        return GPUFL_EINTERNAL;
    /* a page that came back whole may have more after it */
    while (!stop && !err && rows == KB_LOOK_ROWS) {
        qbind_i64(st, 1, g->sess);
        qbind_i64(st, 2, g->stream);
        qbind_i64(st, 3, sq_kbc_run());
        qbind_i64(st, 4, from);
        qbind_i64(st, 5, KB_LOOK_ROWS);
        rows = 0;
        while ((rc = sdb_step(st)) == SDB_ROW) {
            size_t n = (size_t)qcol_i64(st, 1), k = 0;
            int64_t lo = qcol_i64(st, 0);
            int next = sq_mrun_next(&r, n, (int64_t)n >= sq_kbc_run());
            rows++;
            from = lo + 1;
            if (next == SQ_MRUN_PASS)
                continue;
            if (next == SQ_MRUN_END) {
                stop = 1;
                break;
            }
            if ((err = merge_read(s, P, st, g->sess, g->stream, r.total, &k)) ==
                GPUFL_EPARSE) {
                err = GPUFL_OK;
                if (lo > a->bad_lo) {
                    *bad += 1;
                    a->bad_lo = lo;
                }
                if (sq_mrun_bad(&r) == SQ_MRUN_END) {
                    stop = 1;
                    break;
                }
                continue;
            }
            if (err)
                break;
            p->src[r.nsrc] = lo;
            p->srcn[r.nsrc] = (int64_t)n;
            sq_mrun_took(&r, k);
            if ((int64_t)r.total >= sq_kbc_run() && r.nsrc >= 2) {
                stop = 1;
                break;
            }
        }
        sdb_reset(st);
        if (rc != SDB_DONE && rc != SDB_ROW)
            break;
    }
    sdb_finalize(st);
    if (err)
        return err;
    if (rc != SDB_DONE && rc != SDB_ROW)
        return sq_err(rc);
    if (r.nsrc < 2)
        return GPUFL_OK;
    for (size_t i = 1; i < r.total; i++)
        if (P->ev[i].seq <= P->ev[i - 1].seq) {
            qsort(P->ev, r.total, sizeof(*P->ev), ev_seq_cmp);
            break;
        }
    /* the kept rows' candidates first: they may not fit this time */
    if ((rc = sq_kx_candidates(db, g->sess, P->ev, r.total, P->ix, &m)) != 0)
        return rc;
    if (m > KB_PREP_KX - P->nkx) {
        *got = -1;
        return GPUFL_OK;
    }
    if (kblock_encode(P->enc, P->ev, r.total, KB_ZLEVEL, KB_OPT_DEFAULT,
                      P->enc_out, KB_BLOCK_MAX, &len, why, sizeof(why)) ||
        kblock_index_read(P->enc_out, len, P->idx, why, sizeof(why))) {
        glog_error("kblocks", "session %lld: cannot encode: %s",
                   (long long)g->sess, why);
        return GPUFL_EINTERNAL;
    }
    if ((rc = grow((void **)&P->bytes, &P->bcap, P->blen, len, 1)) != 0 ||
        (rc = grow((void **)&P->nb, &P->ncap, P->nlen, 2 * P->idx->nnames,
                   sizeof(*P->nb))) != 0)
        return rc;
    if ((rc = sq_kb_name_bounds(P->idx, P->ev, r.total, P->nb + P->nlen,
                                P->nb + P->nlen + P->idx->nnames, P->slot)) !=
        0)
        return rc;
    memcpy(P->bytes + P->blen, P->enc_out, len);
    for (size_t i = 0; i < m; i++)
        P->kx[P->nkx + i] = P->ev[P->ix[i]];
    p->sess = g->sess;
    p->stream = g->stream;
    p->nsrc = r.nsrc;
    p->total = r.total;
    p->boff = P->blen;
    p->len = len;
    p->noff = P->nlen;
    p->nnames = P->idx->nnames;
    p->kxoff = P->nkx;
    p->nkx = m;
    P->blen += len;
    P->nlen += 2 * p->nnames;
    P->nkx += m;
    P->np++;
    a->lo = p->src[p->nsrc - 1] + 1;
    *got = 1;
    return GPUFL_OK;
}

/* Whether the sources of p are all there with the counts read, in the
 * writer's open transaction (its lock, and on PostgreSQL the advisory
 * lock every server's compactor takes, keep them so until it ends): *ok. */
static int merge_still(srv_store *s, const kb_prep *p, int *ok)
{
    sdb_stmt *st = NULL;
    int rc = SDB_ROW;

    *ok = 1;
    if (sdb_prepare(s->w,
                    "SELECT 1 FROM kblocks WHERE sess=?1 AND stream=?2 AND"
                    " seq_lo=?3 AND n=?4",
                    &st))
        return GPUFL_EINTERNAL;
    for (size_t i = 0; i < p->nsrc && *ok; i++) {
        qbind_i64(st, 1, p->sess);
        qbind_i64(st, 2, p->stream);
        qbind_i64(st, 3, p->src[i]);
        qbind_i64(st, 4, p->srcn[i]);
        rc = sdb_step(st);
        *ok = rc == SDB_ROW;
        sdb_reset(st);
    }
    sdb_finalize(st);
    return rc == SDB_ROW || rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

/* A prepared merge swapped in, in the writer's open transaction.  *done:
 * 1 merged, 0 passed: a source gone or changed since it was read (another
 * server's compactor merged it, retention deleted its session: debug
 * log), or its names' packs do not decode (its blocks counted in *bad) -
 * nothing changed either way (a rolled back merge stopped every pass, the
 * naming after it too). */
static int merge_apply(srv_store *s, struct kb_prepper *P, const kb_prep *p,
                       uint64_t *bad, int *done)
{
    int rc, ok = 0;

    *done = 0;
    if ((rc = sq_kb_state(s)) != 0 || (rc = merge_still(s, p, &ok)) != 0)
        return rc;
    if (!ok) {
        glog_debug("kblocks",
                   "session %lld stream %lld: a block went or changed while"
                   " its merge was prepared: merged at the next pass",
                   (long long)p->sess, (long long)p->stream);
        return GPUFL_OK;
    }
    /* packed, their ranges' packs rows again first (store_sql_kbnpack.c) */
    if ((rc = sq_kbnp_unpack(s, p->sess, p->stream, p->src, p->nsrc)) ==
        GPUFL_EPARSE) {
        *bad += p->nsrc;
        return GPUFL_OK;
    }
    /* the merged blocks, each exactly once, and their names (none for
     * a block older than schema 22: its kbunnamed row instead) */
    if (rc ||
        (rc = del_merged(s, "kblocks", p->sess, p->stream, p->src, p->srcn,
                         p->nsrc)) != 0 ||
        (rc = del_merged(s, "kbnames", p->sess, p->stream, p->src, NULL,
                         p->nsrc)) != 0 ||
        (rc = del_merged(s, "kbunnamed", p->sess, p->stream, p->src, NULL,
                         p->nsrc)) != 0)
        return rc;
    /* kept rows its sources lack (written before schema 24, or by a batch
     * of more sessions than the heaps hold: store_sql_kxrow.c) */
    if ((p->nkx &&
         (rc = sq_kx_put(s, p->sess, P->kx + p->kxoff, p->nkx, 0)) != 0) ||
        (rc = sq_kb_put_named(s, p->sess, p->stream, P->bytes + p->boff, p->len,
                              p->total, P->nb + p->noff,
                              P->nb + p->noff + p->nnames)) != 0)
        return rc;
    sq_kbc_test_pause();
    *done = 1;
    return GPUFL_OK;
}

/* The (session, stream)s with two small blocks or more. */
static int merges_find(srv_store *s, kb_group *g, size_t cap, size_t *ng)
{
    sdb_stmt *st = NULL;
    int rc;

    *ng = 0;
    if (sdb_prepare(s->w, SQ_KB_MERGES_SQL, &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sq_kbc_run());
    while ((rc = sdb_step(st)) == SDB_ROW && *ng < cap)
        g[(*ng)++] = (kb_group){ qcol_i64(st, 0), qcol_i64(st, 1),
                                 qcol_i64(st, 2), 0, qcol_i64(st, 3) };
    sdb_finalize(st);
    return rc == SDB_DONE || rc == SDB_ROW ? GPUFL_OK : sq_err(rc);
}

/* Every run of small blocks merged: up to KB_TX_KERNELS kernels of merges
 * prepared beside the writer, then swapped in in one transaction under its
 * lock, until no group has a run left.  Counts blocks and kernels. */
int sq_kb_merge_pass(srv_store *s, uint64_t *blocks, uint64_t *kernels)
{
    kb_group g[KB_GROUPS_MAX];
    kb_at at[KB_GROUPS_MAX];
    struct kb_prepper *P;
    size_t ng = 0, gi = 0;
    uint64_t bad = 0;
    int rc;

    pthread_mutex_lock(&s->wlock);
    rc = merges_find(s, g, KB_GROUPS_MAX, &ng);
    pthread_mutex_unlock(&s->wlock);
    if (rc || !ng)
        return rc;
    if (!(P = prepper(s)))
        return GPUFL_ENOMEM;
    for (size_t i = 0; i < ng; i++)
        at[i] = (kb_at){ g[i].lo, INT64_MIN };
    while (!rc && gi < ng) {
        sdb *db = sq_reader_get(s);
        size_t cost = 0;
        int got = 0;
        P->np = P->blen = P->nlen = P->nkx = 0;
        while (!rc && gi < ng && cost < KB_TX_KERNELS && P->np < KB_PREP_MAX) {
            if ((rc = merge_prep(s, db, P, &g[gi], &at[gi], &bad, &got)) != 0 ||
                got < 0)
                break;
            if (!got)
                gi++; /* no run left in this group */
            else
                cost += P->p[P->np - 1].total;
        }
        sq_reader_put(s, db);
        if (rc || !P->np)
            break;
        /* GPUFL_SERVER_KB_PREP_PAUSE_MS (tests only): a pause between the
         * preparing and the lock, so that a test changes a source then */
        sq_kb_test_pause("GPUFL_SERVER_KB_PREP_PAUSE_MS");
        for (size_t j = 0; !rc && j < P->np;) {
            uint64_t t0;
            int gave = 0;
            t0 = sq_maint_lock(s);
            if ((rc = sq_kb_tx_begin(s)) == 0) {
                uint64_t tb = 0, tk = 0, tbad = 0;
                int e = GPUFL_OK, done = 0;
                /* a waiting ingest batch waited for the whole
                 * transaction, ~50 merges (on PostgreSQL ~190 ms) */
                do {
                    e = merge_apply(s, P, &P->p[j], &tbad, &done);
                    tb += done && !e;
                    tk += done && !e ? P->p[j].total : 0;
                    j++;
                    gave = sq_ingest_give(s, t0);
                } while (!e && j < P->np && !gave);
                /* what a rolled back transaction did is not counted */
                if ((rc = sq_kb_tx_end(s, e)) == 0) {
                    *blocks += tb;
                    *kernels += tk;
                    bad += tbad;
                }
            }
            sq_maint_unlock(s, gave);
        }
    }
    /* once a change, not each pass: the same bad blocks are found each
     * tick */
    if (!rc && bad != s->kb_unmergeable)
        glog_warn("kblocks",
                  "%llu kernel blocks are not merged: they or their names'"
                  " packs do not decode (a block's kernels cannot be read;"
                  " --log-level=debug names them)",
                  (unsigned long long)bad);
    if (!rc)
        s->kb_unmergeable = bad;
    return rc;
}
