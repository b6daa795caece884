/*
 * store_sql_kblocks_ingest.c - with --kernel-store=blocks, a batch's
 * kernels go straight into column blocks (issue 23; docs/server.md
 * "Kernel blocks (store)"), and the one form a kernel row takes on its
 * way into the database (sq_kernel_ev, sq_kernel_bind: the row writers of
 * both databases and this file share them).
 *
 * A kernel is parsed into a kblock_ev (the codec's event) and held; before
 * the batch commits (so before its 200) the held kernels are written as
 * one kblocks row per (session, stream) and SQ_KB_RUN kernels, in the
 * batch's transaction: an acknowledged kernel is committed as with rows.
 * The compactor (store_sql_kblocks_compact.c) merges these small blocks into full
 * ones later.
 *
 * Idempotency by (session, seq): a kernel above the highest seq its
 * session has stored or held (rows and blocks: WS_KMAX, asked once per
 * session and batch) is new without asking more - an agent sends in
 * order, so this is nearly every kernel.  Any other is held as a doubt;
 * the doubts are settled together at the batch's end (or when
 * KBI_DOUBT_MAX are held): the held kernels are written first, then per
 * session one range query over the kernel rows and one over the blocks
 * whose seq range meets the doubts' (each such block decoded once), and a
 * doubt is new when neither holds its seq and no earlier line of the
 * batch had it.  A replay thus costs a read of the blocks it overlaps,
 * not a seek per kernel.
 */
#include "store_sql_int.h"
#include "store_sql_blocks_w.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "kblock.h"

/* Kernels held before their blocks are written (a bigger batch writes
 * them in several rounds), doubts held before they are settled. */
#define KBI_PEND_MAX 32768
#define KBI_DOUBT_MAX 32768

/* A kernel whose newness is asked at the batch's end. */
typedef struct kbi_doubt {
    const srv_ev *e;
    int64_t sess;
    sq_launch l;
} kbi_doubt;

typedef struct sq_kbi {
    kblock_ev *ev;  /* held new kernels, KBI_PEND_MAX */
    int64_t *sess;  /* ... their sessions */
    uint32_t *grp;  /* ... the (session, stream) group of each, at write */
    uint32_t *ord;  /* ... their indexes in group order, at write */
    uint32_t *gcnt; /* kernels per group, then where each group starts */
    struct kb_key {
        uint64_t seq;
        uint32_t i;
    } * sk; /* a group sorted by seq (only when it came out of order) */
    size_t n;
    kblock_ev *gev; /* at write: the held kernels in group order */
    sq_kb_blk *blk; /* ... and their blocks */
    kbi_doubt *dbt; /* KBI_DOUBT_MAX */
    size_t ndbt;
    rl_map khigh;       /* sess -> highest kernel seq stored or held */
    rl_memo khigh_memo; /* ... the last one asked: a batch's kernels
                         * come mostly from one session */
    rl_map groups;      /* (sess, stream) -> group; (sess) -> doubts' range */
    rl_map keys;        /* (sess, seq) of the doubts -> {first + 1, stored} */
} sq_kbi;

/* ---- the kernel row ---- */

void sq_kernel_ev(const srv_ev *e, const sq_launch *l, kblock_ev *o)
{
    o->seq = e->seq;
    o->ts = e->ts;
    o->dur = e->dur;
    o->dev = e->dev;
    o->stream = e->stream;
    o->corr = e->corr;
    o->cfg = e->cfg;
    o->name_id = l->name_id;
    for (int i = 0; i < 3; i++)
        o->grid[i] = e->grid[i];
    o->block[0] = l->bx;
    o->block[1] = l->by;
    o->block[2] = l->bz;
    o->regs = l->regs;
    o->smem = l->smem;
    o->occ = l->occ >= 0 ? l->occ : -1.0;
    o->scope = e->scope;
    o->path = e->path;
    o->stack = e->stack;
    o->api_off = e->api_off;
    o->api_dur = e->api_dur;
    o->flags = e->flags;
    /* the launching thread, said only with the call's times */
    o->tid = e->tid && e->api_dur ? e->tid : 0;
}

void sq_kernel_bind(sdb_stmt *st, int b, int64_t sess, const kblock_ev *e)
{
    qbind_i64(st, b + 1, sess);
    qbind_u64(st, b + 2, e->seq);
    qbind_u64(st, b + 3, e->ts);
    qbind_u64(st, b + 4, e->dur);
    qbind_u64(st, b + 5, e->dev);
    qbind_u64(st, b + 6, e->stream);
    qbind_u64(st, b + 7, e->corr);
    qbind_i64(st, b + 8, e->name_id);
    qbind_u64(st, b + 9, e->cfg);
    for (int i = 0; i < 3; i++) {
        qbind_u64(st, b + 10 + i, e->grid[i]);
        qbind_i64(st, b + 13 + i, e->block[i]);
    }
    qbind_i64(st, b + 16, e->regs);
    qbind_i64(st, b + 17, e->smem);
    if (e->occ >= 0)
        qbind_f64(st, b + 18, e->occ);
    else
        qbind_null(st, b + 18);
    qbind_u64(st, b + 19, e->scope);
    qbind_u64(st, b + 20, e->path);
    qbind_u64(st, b + 21, e->stack);
    qbind_i64(st, b + 22, e->api_off);
    qbind_u64(st, b + 23, e->api_dur);
    qbind_u64(st, b + 24, e->flags);
    if (e->tid)
        qbind_u64(st, b + 25, e->tid);
    else
        qbind_null(st, b + 25);
}

/* ---- state ---- */

static int kbi_state(srv_store *s, sq_kbi **out)
{
    sq_kbi *k = s->kbi;
    int rc;

    if ((rc = sq_kb_state(s)) != 0)
        return rc;
    if (!k) {
        if (!(k = calloc(1, sizeof(*k))))
            return GPUFL_ENOMEM;
        s->kbi = k;
        rl_map_init(&k->khigh, sizeof(int64_t), SQ_CACHE_MAX);
        rl_map_init(&k->groups, 2 * sizeof(int64_t), 2 * KBI_PEND_MAX);
        rl_map_init(&k->keys, 2 * sizeof(int64_t), KBI_DOUBT_MAX);
        k->ev = malloc(KBI_PEND_MAX * sizeof(*k->ev));
        k->sess = malloc(KBI_PEND_MAX * sizeof(*k->sess));
        k->grp = malloc(KBI_PEND_MAX * sizeof(*k->grp));
        k->ord = malloc(KBI_PEND_MAX * sizeof(*k->ord));
        k->gcnt = malloc((KBI_PEND_MAX + 1) * sizeof(*k->gcnt));
        k->sk = malloc(KBI_PEND_MAX * sizeof(*k->sk));
        k->gev = malloc(KBI_PEND_MAX * sizeof(*k->gev));
        k->blk = malloc(KBI_PEND_MAX * sizeof(*k->blk));
        k->dbt = malloc(KBI_DOUBT_MAX * sizeof(*k->dbt));
    }
    if (!k->ev || !k->sess || !k->grp || !k->ord || !k->gcnt || !k->sk ||
        !k->gev || !k->blk || !k->dbt)
        return GPUFL_ENOMEM;
    *out = k;
    return GPUFL_OK;
}

void sq_kbi_release(srv_store *s)
{
    sq_kbi *k = s->kbi;

    if (!k)
        return;
    rl_map_release(&k->khigh);
    rl_map_release(&k->groups);
    rl_map_release(&k->keys);
    free(k->ev);
    free(k->sess);
    free(k->grp);
    free(k->ord);
    free(k->gcnt);
    free(k->sk);
    free(k->gev);
    free(k->blk);
    free(k->dbt);
    free(k);
    s->kbi = NULL;
}

/* A batch begins or was rolled back: nothing held, and the highest seqs
 * are asked again (another server may have written in between). */
void sq_kbi_reset(srv_store *s)
{
    sq_kbi *k = s->kbi;

    s->kx_wrote = 0;
    if (!k)
        return;
    k->n = 0;
    k->ndbt = 0;
    rl_map_clear(&k->khigh);
}

/* ---- writing blocks ---- */

static int kb_key_cmp(const void *a, const void *b)
{
    const struct kb_key *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* GPUFL_SERVER_KBI_PAUSE_MS (tests only): a pause after each block the
 * ingest writes, inside the batch's transaction, so that a test's kill -9
 * lands between a block's insert and the commit. */
static void kbi_test_pause(void)
{
    sq_kb_test_pause("GPUFL_SERVER_KBI_PAUSE_MS");
}

/* One group's kernels (ord[0..n), indexes into k->ev) in seq order into
 * k->gev from at on, as blocks of up to SQ_KB_RUN added to k->blk[*nb]. */
static void group_cut(sq_kbi *k, uint32_t *ord, size_t n, size_t at, size_t *nb)
{
    int sorted = 1;

    for (size_t i = 1; i < n && sorted; i++)
        sorted = k->ev[ord[i]].seq > k->ev[ord[i - 1]].seq;
    if (!sorted) {
        /* a settled doubt below the held kernels: rare */
        for (size_t i = 0; i < n; i++)
            k->sk[i] = (struct kb_key){ k->ev[ord[i]].seq, ord[i] };
        qsort(k->sk, n, sizeof(*k->sk), kb_key_cmp);
        for (size_t i = 0; i < n; i++)
            ord[i] = k->sk[i].i;
    }
    for (size_t i = 0; i < n; i++)
        k->gev[at + i] = k->ev[ord[i]];
    for (size_t i = 0; i < n;) {
        size_t m = n - i < SQ_KB_RUN ? n - i : SQ_KB_RUN;
        k->blk[(*nb)++] =
            (sq_kb_blk){ k->sess[ord[i]], (int64_t)k->ev[ord[i]].stream, at + i,
                         m };
        i += m;
    }
}

/* Blocks k->blk[0..nb) of k->gev written in order, each with the kept
 * rows of those among the session's longest and shortest
 * (store_sql_kxrow.c; kext as the batch's heaps hold it: every kernel of
 * the batch fed them before its block is written, but for a batch written
 * in rounds, whose later kernels may push an earlier one out - kx_wrote:
 * its row then goes with its key, store_sql_ext.c).  A wave's blocks are
 * encoded on two threads while its kept rows are written
 * (store_sql_kblocks_par.c). */
static int blocks_put(srv_store *s, sq_kbi *k, size_t nb)
{
    size_t w = 0, len;
    int rc = GPUFL_OK, rc2;

    for (size_t b = 0; b < nb && !rc; b += w) {
        const sq_kb_blk *bl = k->blk + b;
        if ((rc = sq_kbp_begin(s, k->gev, bl, nb - b, &w)) != 0)
            return rc;
        if (!w)
            return GPUFL_EINTERNAL; /* a block past the arena: never */
        for (size_t i = 0; i < w && !rc; i++)
            rc = sq_kx_put(s, bl[i].sess, k->gev + bl[i].off, bl[i].n, 1);
        rc2 = sq_kbp_end(s);
        if (!rc)
            rc = rc2;
        for (size_t i = 0; i < w && !rc; i++) {
            const unsigned char *by = sq_kbp_block(s, i, &len);
            rc = sq_kb_put_bytes(s, bl[i].sess, bl[i].stream, by, len, bl[i].n,
                                 0);
            s->kx_wrote = 1;
            if (!rc)
                kbi_test_pause();
        }
    }
    return rc;
}

/* The held kernels as blocks: grouped by (session, stream) in one pass
 * (a counting sort that keeps their order, which is seq order when they
 * came in order), then each group written. */
static int pend_write(srv_store *s, sq_kbi *k)
{
    size_t n = k->n, ng = 0, nb = 0;
    int fresh;

    if (!n)
        return GPUFL_OK;
    k->n = 0;
    rl_map_clear(&k->groups);
    for (size_t i = 0; i < n; i++) {
        uint64_t key[4] = { (uint64_t)k->sess[i], k->ev[i].stream, 0, 0 };
        int64_t *g = rl_map_get(&k->groups, key, &fresh);
        if (!g)
            return GPUFL_EFULL;
        if (fresh) {
            g[0] = (int64_t)ng;
            k->gcnt[ng++] = 0;
        }
        k->grp[i] = (uint32_t)g[0];
        k->gcnt[g[0]]++;
    }
    /* counts into starts */
    for (size_t g = 0, at = 0; g < ng; g++) {
        size_t c = k->gcnt[g];
        k->gcnt[g] = (uint32_t)at;
        at += c;
    }
    k->gcnt[ng] = (uint32_t)n;
    /* each start moves on to its group's end */
    for (size_t i = 0; i < n; i++)
        k->ord[k->gcnt[k->grp[i]]++] = (uint32_t)i;
    for (size_t g = 0, at = 0; g < ng; g++) {
        size_t end = k->gcnt[g];
        group_cut(k, k->ord + at, end - at, at, &nb);
        at = end;
    }
    return blocks_put(s, k, nb);
}

/* ---- the duplicate check ---- */

/* The highest kernel seq of a session, stored or held (-1: none), as a
 * pointer the caller may raise. */
static int khigh_get(srv_store *s, sq_kbi *k, int64_t sess, int64_t **out)
{
    uint64_t key[4] = { (uint64_t)sess, 0, 0, 0 };
    sdb_stmt *st = s->ws[WS_KMAX];
    int64_t *v = rl_map_find_memo(&k->khigh, &k->khigh_memo, key);
    int rc, fresh;

    if (v) {
        *out = v;
        return GPUFL_OK;
    }
    if (k->khigh.n >= SQ_CACHE_MAX) {
        /* held kernels are in the map, not yet in the table: write them */
        if ((rc = pend_write(s, k)) != 0)
            return rc;
        rl_map_clear(&k->khigh);
    }
    qbind_i64(st, 1, sess);
    rc = sdb_step(st);
    if (rc != SDB_ROW) {
        sdb_reset(st);
        return sq_err(rc);
    }
    if (!(v = rl_map_get(&k->khigh, key, &fresh))) {
        sdb_reset(st);
        return GPUFL_EFULL;
    }
    *v = qcol_null(st, 0) ? -1 : qcol_i64(st, 0);
    sdb_reset(st);
    *out = v;
    return GPUFL_OK;
}

/* The doubts of one session whose seq a kernel row or a block holds
 * (sq_kb_stored's seen). */
typedef struct {
    sq_kbi *k;
    int64_t sess;
} stored_arg;

static void mark_stored(void *arg, uint64_t seq)
{
    stored_arg *a = arg;
    uint64_t key[4] = { (uint64_t)a->sess, seq, 0, 0 };
    int64_t *v = rl_map_find(&a->k->keys, key);
    if (v)
        v[1] = 1;
}

/* Settles the held doubts: each new one is held for a block, and every
 * one is reported (sq_kernel_done). */
static int doubts_settle(srv_store *s, sq_kbi *k)
{
    size_t n = k->ndbt;
    const uint64_t *key;
    int rc, fresh;

    if (!n)
        return GPUFL_OK;
    /* the held kernels into blocks first: the check below sees them */
    if ((rc = pend_write(s, k)) != 0)
        return rc;
    rl_map_clear(&k->keys);
    rl_map_clear(&k->groups);
    for (size_t i = 0; i < n; i++) {
        uint64_t kk[4] = { (uint64_t)k->dbt[i].sess, k->dbt[i].e->seq, 0, 0 };
        uint64_t sk[4] = { (uint64_t)k->dbt[i].sess, 0, 0, 0 };
        int64_t seq = (int64_t)k->dbt[i].e->seq;
        int64_t *v = rl_map_get(&k->keys, kk, &fresh);
        int64_t *r = rl_map_get(&k->groups, sk, &fresh);
        if (!v || !r)
            return GPUFL_EFULL;
        if (!v[0])
            v[0] = (int64_t)i + 1; /* a key twice: the first may be new */
        if (fresh || seq < r[0])
            r[0] = seq;
        if (fresh || seq > r[1])
            r[1] = seq;
    }
    for (size_t i = 0; i < k->groups.cap; i++) {
        int64_t *r = rl_map_at(&k->groups, i, &key);
        stored_arg a = { k, 0 };
        if (!r)
            continue;
        a.sess = (int64_t)key[0];
        if ((rc = sq_kb_stored(s, a.sess, r[0], r[1], 1, mark_stored, &a)) != 0)
            return rc;
    }
    k->ndbt = 0;
    for (size_t i = 0; i < n; i++) {
        kbi_doubt *d = &k->dbt[i];
        uint64_t kk[4] = { (uint64_t)d->sess, d->e->seq, 0, 0 };
        int64_t *v = rl_map_find(&k->keys, kk);
        int isnew = v && v[0] == (int64_t)i + 1 && !v[1];
        if (isnew) {
            if (k->n == KBI_PEND_MAX && (rc = pend_write(s, k)) != 0)
                return rc;
            sq_kernel_ev(d->e, &d->l, &k->ev[k->n]);
            k->sess[k->n++] = d->sess;
        }
        if ((rc = sq_kernel_done(s, d->sess, d->e, &d->l, isnew)) != 0)
            return rc;
    }
    return GPUFL_OK;
}

/* ---- the batch ---- */

void srv_store_set_kernel_store(srv_store *s, int blocks)
{
    pthread_mutex_lock(&s->wlock);
    s->kstore_blocks = blocks != 0;
    pthread_mutex_unlock(&s->wlock);
}

int sq_kbi_kernel(srv_store *s, int64_t sess, const srv_ev *e,
                  const sq_launch *l)
{
    sq_kbi *k = NULL;
    int64_t *mx = NULL;
    int rc;

    if ((rc = kbi_state(s, &k)) != 0 || (rc = khigh_get(s, k, sess, &mx)) != 0)
        return rc;
    if ((int64_t)e->seq > *mx) {
        *mx = (int64_t)e->seq;
        if (k->n == KBI_PEND_MAX && (rc = pend_write(s, k)) != 0)
            return rc;
        sq_kernel_ev(e, l, &k->ev[k->n]);
        k->sess[k->n++] = sess;
        return sq_kernel_done(s, sess, e, l, 1);
    }
    if (k->ndbt == KBI_DOUBT_MAX && (rc = doubts_settle(s, k)) != 0)
        return rc;
    k->dbt[k->ndbt].e = e;
    k->dbt[k->ndbt].sess = sess;
    k->dbt[k->ndbt++].l = *l;
    return GPUFL_OK;
}

int sq_kbi_flush(srv_store *s)
{
    sq_kbi *k = s->kbi;
    int rc;

    if (!k)
        return GPUFL_OK;
    if ((rc = doubts_settle(s, k)) != 0)
        return rc;
    return s->kbi_hold ? GPUFL_OK : pend_write(s, k);
}
