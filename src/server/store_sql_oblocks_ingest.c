/*
 * store_sql_oblocks_ingest.c - with --kernel-store=blocks, a batch's ops
 * (copies, memsets, syncs, allocs, frees) go into op blocks as its
 * kernels go into kernel blocks: one oblocks row per session and batch
 * (oblock.c's codec; schema 32), written in the batch's transaction before
 * it commits, so an acknowledged op is committed as with rows.  Readers:
 * store_sql_oblocks_read.c.
 *
 * Idempotency by (session, seq), as the `ops` primary key gave it: the
 * ops are held as they come and settled at the batch's end (or when
 * OBI_HELD_MAX are held), per session at once - one range query over the
 * session's `ops` rows and one over the blocks whose seq range meets the
 * held ops' (each decoded whole: ops are few), and an op is new when
 * neither holds its seq and no earlier line of the batch had it.  A batch
 * above every stored seq (an agent sends in order) meets no block: the
 * oblocks_hi index answers that without reading one.  Each op is then
 * counted (sq_line_done) as a row's insert would have been.
 */
#include "store_sql_int.h"
#include "store_sql_blocks_w.h"

#include <gpufl/gpufl.h>

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "oblock.h"

/* Ops held before they are settled (a batch holding more settles them
 * in rounds: each round's blocks are then seen by the next's check). */
#define OBI_HELD_MAX 32768
/* zstd's level for op blocks: kblocks' (store_sql_kblocks.c). */
#define OBI_ZLEVEL 3

enum { OBI_ST_ROWS, OBI_ST_BLOCKS, OBI_ST_INSERT, OBI_ST_SPAN, OBI_ST_N };

static const char *const obi_sql[OBI_ST_N] = {
    [OBI_ST_ROWS] = "SELECT seq FROM ops WHERE sess=?1 AND seq >= ?2 AND"
                    " seq <= ?3",
    [OBI_ST_BLOCKS] = "SELECT payload, seq_lo FROM oblocks WHERE sess=?1 AND"
                      " seq_hi >= ?2 AND seq_lo <= ?3",
    [OBI_ST_INSERT] = SQ_OB_INSERT_SQL,
    [OBI_ST_SPAN] = SQ_OB_SPAN_SQL,
};

typedef struct obi_held {
    const srv_ev *e; /* the batch's line: lives until the batch ends */
    int64_t sess;
    uint32_t i;    /* its place among the held (ties: the first is new) */
    uint8_t state; /* 0 new, 1 stored, 2 a duplicate within the batch */
} obi_held;

typedef struct sq_obi {
    obi_held *h; /* OBI_HELD_MAX */
    size_t n;
    uint64_t *seqs; /* a session's held seqs, sorted (OBI_HELD_MAX) */
    oblock_ev *ev;  /* a block's ops, written or read (OB_MAX_EVENTS) */
    unsigned char *blk;
    oblock_enc *enc;
    oblock_dec *dec;
    sdb_stmt *st[OBI_ST_N];
} sq_obi;

static int obi_state(srv_store *s, sq_obi **out)
{
    sq_obi *o = s->obi;

    if (!o) {
        if (!(o = calloc(1, sizeof(*o))))
            return GPUFL_ENOMEM;
        s->obi = o;
        o->h = malloc(OBI_HELD_MAX * sizeof(*o->h));
        o->seqs = malloc(OBI_HELD_MAX * sizeof(*o->seqs));
        o->ev = malloc(OB_MAX_EVENTS * sizeof(*o->ev));
        o->blk = malloc(OB_BLOCK_MAX);
        o->enc = oblock_enc_new();
        o->dec = oblock_dec_new();
    }
    if (!o->h || !o->seqs || !o->ev || !o->blk || !o->enc || !o->dec)
        return GPUFL_ENOMEM;
    for (int i = 0; i < OBI_ST_N; i++)
        if (!o->st[i] && sdb_prepare(s->w, obi_sql[i], &o->st[i]))
            return GPUFL_EINTERNAL;
    *out = o;
    return GPUFL_OK;
}

void sq_obi_release(srv_store *s)
{
    sq_obi *o = s->obi;

    if (!o)
        return;
    for (int i = 0; i < OBI_ST_N; i++)
        sdb_finalize(o->st[i]);
    free(o->h);
    free(o->seqs);
    free(o->ev);
    free(o->blk);
    oblock_enc_free(o->enc);
    oblock_dec_free(o->dec);
    free(o);
    s->obi = NULL;
}

void sq_obi_reset(srv_store *s)
{
    if (s->obi)
        s->obi->n = 0;
}

/* ---- settling ---- */

static int held_cmp(const void *a, const void *b)
{
    const obi_held *x = a, *y = b;
    if (x->sess != y->sess)
        return x->sess < y->sess ? -1 : 1;
    if (x->e->seq != y->e->seq)
        return x->e->seq < y->e->seq ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static int seq_cmp(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return *x < *y ? -1 : *x > *y;
}

/* Marks stored the held op of h[0..n) (one session, seq order) whose
 * seq is seq (o->seqs: their seqs). */
static void mark(sq_obi *o, obi_held *h, size_t n, uint64_t seq)
{
    uint64_t *at = bsearch(&seq, o->seqs, n, sizeof(*o->seqs), seq_cmp);
    /* the first of equal seqs (the duplicates after it are 2 already) */
    for (; at && at > o->seqs && at[-1] == seq; at--)
        ;
    if (at && h[at - o->seqs].state == 0)
        h[at - o->seqs].state = 1;
}

/* The stored among one session's held ops h[0..n) (seq order): its rows
 * and the blocks whose seq range meets theirs (a cold one read through
 * the cold tier: GPUFL_EAGAIN when S3 cannot give it, the batch's 503). */
static int stored_find(srv_store *s, sq_obi *o, obi_held *h, size_t n)
{
    sdb_stmt *st;
    char why[128] = "";
    int rc;

    for (size_t i = 0; i < n; i++) {
        o->seqs[i] = h[i].e->seq;
        h[i].state = i && o->seqs[i] == o->seqs[i - 1] ? 2 : 0;
    }
    for (int q = OBI_ST_ROWS; q <= OBI_ST_BLOCKS; q++) {
        st = o->st[q];
        qbind_i64(st, 1, h[0].sess);
        qbind_u64(st, 2, o->seqs[0]);
        qbind_u64(st, 3, o->seqs[n - 1]);
        while ((rc = sdb_step(st)) == SDB_ROW) {
            size_t len = 0, m = 0;
            const unsigned char *b;
            if (q == OBI_ST_ROWS) {
                mark(o, h, n, (uint64_t)qcol_i64(st, 0));
                continue;
            }
            if ((rc = sq_ob_bytes(s, st, 0, h[0].sess, qcol_i64(st, 1), &b,
                                  &len)) != 0) {
                sdb_reset(st);
                return rc;
            }
            if (oblock_decode(o->dec, b, len, o->ev, OB_MAX_EVENTS, &m, why,
                              sizeof(why))) {
                glog_error("oblocks", "session %lld: unreadable op block: %s",
                           (long long)h[0].sess, why);
                sdb_reset(st);
                return GPUFL_EINTERNAL;
            }
            for (size_t j = 0; j < m; j++)
                mark(o, h, n, o->ev[j].seq);
        }
        sdb_reset(st);
        if (rc != SDB_DONE)
            return sq_err(rc);
    }
    return GPUFL_OK;
}

int sq_ob_put(sdb_stmt *ins, sdb_stmt *span, oblock_enc *enc,
              unsigned char *blk, int64_t sess, const oblock_ev *ev, size_t m)
{
    oblock_index idx;
    size_t len = 0;
    char why[128] = "";
    int rc;

    if (oblock_encode(enc, ev, m, OBI_ZLEVEL, blk, OB_BLOCK_MAX, &len, why,
                      sizeof(why)) ||
        oblock_index_read(blk, len, &idx, why, sizeof(why))) {
        glog_error("oblocks", "session %lld: cannot encode: %s",
                   (long long)sess, why);
        return GPUFL_EINTERNAL;
    }
    qbind_i64(ins, 1, sess);
    qbind_u64(ins, 2, idx.seq_min);
    qbind_u64(ins, 3, idx.seq_max);
    qbind_u64(ins, 4, idx.ts_min);
    qbind_u64(ins, 5, idx.ts_max);
    qbind_u64(ins, 6, idx.dur_max);
    qbind_u64(ins, 7, idx.n);
    qbind_blob(ins, 8, blk, len);
    if ((rc = qrun(ins)) != 0)
        return rc;
    /* the session's longest block span, in the same transaction: the
     * reads' lower bound on ts_lo (migration 33) must never be short */
    qbind_i64(span, 1, sess);
    qbind_i64(span, 2, (int64_t)(idx.ts_max - idx.ts_min));
    return qrun(span);
}

/* The ops of o->ev[0..m) (one session) as one oblocks row. */
static int block_put(sq_obi *o, int64_t sess, size_t m)
{
    return sq_ob_put(o->st[OBI_ST_INSERT], o->st[OBI_ST_SPAN], o->enc, o->blk,
                     sess, o->ev, m);
}

/* An ops row's columns of an op line (store_sql_ingest.c's WS_OP binds
 * the same): the kind capped as ingest caps it. */
static void op_ev(const srv_ev *e, oblock_ev *o)
{
    o->seq = e->seq;
    o->type = e->type;
    o->ts = e->ts;
    o->dur = e->dur;
    o->dev = e->dev;
    o->stream = e->stream;
    o->corr = e->corr;
    o->bytes = e->bytes;
    o->scope = e->scope;
    o->path = e->path;
    o->stack = e->stack;
    o->flags = e->flags;
    o->tid = e->tid;
    o->api_off = e->api_off;
    o->api_dur = e->api_dur;
    if (!e->kind.p) {
        o->kind_len = -1;
        o->kind[0] = '\0';
        return;
    }
    o->kind_len = (int)(e->kind.n < OB_KIND_MAX ? e->kind.n : OB_KIND_MAX);
    memcpy(o->kind, e->kind.p, (size_t)o->kind_len);
    o->kind[o->kind_len] = '\0';
}

/* One session's held ops h[0..n) (seq order): the new ones as blocks,
 * then every one counted. */
static int session_settle(srv_store *s, sq_obi *o, obi_held *h, size_t n)
{
    size_t m = 0;
    int rc;

    if ((rc = stored_find(s, o, h, n)) != 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        if (h[i].state)
            continue;
        op_ev(h[i].e, &o->ev[m++]);
        if (m == OB_MAX_EVENTS) {
            if ((rc = block_put(o, h[0].sess, m)) != 0)
                return rc;
            m = 0;
        }
    }
    if (m && (rc = block_put(o, h[0].sess, m)) != 0)
        return rc;
    for (size_t i = 0; i < n; i++)
        if ((rc = sq_line_done(s, h[i].sess, h[i].e, h[i].state == 0)) != 0)
            return rc;
    return GPUFL_OK;
}

int sq_obi_flush(srv_store *s)
{
    sq_obi *o = s->obi;
    size_t n, a = 0;
    int rc = GPUFL_OK;

    if (!o || !o->n)
        return GPUFL_OK;
    n = o->n;
    o->n = 0;
    qsort(o->h, n, sizeof(*o->h), held_cmp);
    for (size_t b = 1; b <= n && !rc; b++)
        if (b == n || o->h[b].sess != o->h[a].sess) {
            rc = session_settle(s, o, o->h + a, b - a);
            a = b;
        }
    return rc;
}

int sq_obi_op(srv_store *s, int64_t sess, const srv_ev *e)
{
    sq_obi *o = NULL;
    int rc;

    if ((rc = obi_state(s, &o)) != 0)
        return rc;
    if (o->n == OBI_HELD_MAX && (rc = sq_obi_flush(s)) != 0)
        return rc;
    o->h[o->n] = (obi_held){ e, sess, (uint32_t)o->n, 0 };
    o->n++;
    return GPUFL_OK;
}
