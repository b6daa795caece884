/*
 * store_sql_kbnpack.c - the kernel blocks' names packed (schema 30,
 * docs/server.md "Kernel block names packed on PostgreSQL", "100M a
 * seventh time").  kbnames holds one row per (block, name) - ~200 rows
 * per 5 000-kernel block - and on PostgreSQL each costs a 24-byte tuple
 * header, its key and three index entries: 7.3 of the 24.1 B/kernel left
 * after VACUUM FULL.  On SQLite the cost was the ingest's: each merged
 * block's ~200 rows go to random places in kbnames_dur and kbnames_dmin,
 * and once those outgrow the cache each insert dirties a leaf of its own,
 * written to the WAL and again by its checkpoint (159 -> 621 B written a
 * kernel over 50M).  Packed, kbnames is a small recent tier whose pages
 * stay cached, and the packs grow by a rewrite of the newest range's only
 * (bytes written a kernel flat at 30M).  The maintenance thread, after the compactor has named blocks,
 * packs the rows of each range of SQ_KBNP_SPAN seqs of a (session,
 * stream) into one kbnpack row per name (per block holding the name
 * four varints: the block's seq_lo, the name's count and duration
 * bounds) and one kbndir row (per block of the range four varints: its
 * seq and time ranges, so the readers need not join kblocks; once per
 * range, not in each of its ~200 names' packs).  Its rows deleted
 * (DELETE ... RETURNING: what is packed is what was deleted) and the
 * range's packs and directory rewritten, one transaction under the
 * compactor's
 * lock, so a kill -9 leaves the rows or the packs.  A block named late
 * has rows beside the packs; the name filters read both (a block is in
 * one or the other) and the next pass folds the rows in.  A merge of
 * packed blocks first puts the range's packs back as rows
 * (sq_kbnp_unpack), so no pack names a block that is gone; retention
 * deletes a session's packs with its rows.  Both databases, the same
 * SQL (DELETE ... RETURNING: SQLite 3.35).  The name filters' read of
 * the packs is store_sql_kbnpack_read.c.
 */
#include "store_sql_blocks_w.h"
#include "store_sql_kbnpack.h"
#include "common/log.h"

#include <gpufl/gpufl.h>

#include <stdlib.h>
#include <string.h>

/* Ranges found per pass, and packed per transaction (each rewrites up to
 * one pack per name: ~200 rows; the writer's lock is held for one
 * transaction). */
#define KBNP_GROUPS 512
#define KBNP_TX_GROUPS 4
/* Entries one range's packs and rows hold together, at most (200 names
 * by 256 blocks is 51 200): a range of more stays rows. */
#define KBNP_GROUP_MAX (1u << 19)

_Static_assert(SQ_KBNP_SHIFT == 20, "SQ_KBNP_SHIFT_STR spells it");

/* ---- the packer ---- */

typedef struct kbnp_group {
    int64_t sess, stream, r0;
} kbnp_group;

/* One entry of a range being packed: its name, and whether it came from
 * a row (fresh) or a pack. */
typedef struct kbnp_ent {
    int64_t name;
    int fresh;
    sq_kbne e;
} kbnp_ent;

/* A pass's buffers (KBNP_GROUP_MAX entries, the range's blocks, one
 * pack decoded, one encoded). */
typedef struct kbnp_buf {
    kbnp_ent *ent;
    size_t nent;
    sq_kbne *blk, *one;
    size_t nblk;
    unsigned char *out;
} kbnp_buf;

/* GPUFL_SERVER_KBNP_OFF=1 (tests only): no packing, so that the tests
 * reading kbnames rows see them (the packs have tests of their own). */
static int kbnp_off(void)
{
    const char *v = getenv("GPUFL_SERVER_KBNP_OFF");
    return v && *v == '1';
}

/* Ranges holding kbnames rows: every one, not only those the stream has
 * moved past as the timeline's packer waits for - a range is 2^20 seqs,
 * more than a whole session of the bench, so that would leave a running
 * session's rows unpacked until it ends; a range's packs are rewritten
 * when blocks of it are named, ~200 packs of ~0.5 kB (the bench's), less
 * than the ~180 bytes a kbnames row costs each. */
static int groups_find(srv_store *s, kbnp_group *g, size_t cap, size_t *n)
{
    sdb_stmt *st = NULL;
    int rc;

    *n = 0;
    if (sdb_prepare(s->w,
                    "SELECT sess, stream, seq_lo >> " SQ_KBNP_SHIFT_STR
                    " FROM kbnames GROUP BY 1, 2, 3 ORDER BY 1, 2, 3 LIMIT ?1",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, (int64_t)cap);
    while ((rc = sdb_step(st)) == SDB_ROW && *n < cap) {
        g[*n] = (kbnp_group){ qcol_i64(st, 0), qcol_i64(st, 1),
                              qcol_i64(st, 2) << SQ_KBNP_SHIFT };
        (*n)++;
    }
    sdb_finalize(st);
    return rc == SDB_DONE || rc == SDB_ROW ? GPUFL_OK : sq_err(rc);
}

static int by_name_lo(const void *a, const void *b)
{
    const kbnp_ent *x = a, *y = b;
    if (x->name != y->name)
        return x->name < y->name ? -1 : 1;
    if (x->e.lo != y->e.lo)
        return x->e.lo < y->e.lo ? -1 : 1;
    return x->fresh - y->fresh;
}

/* pack_one's answer for a range left as it is: its packs do not decode
 * (a corrupted database), or it holds more blocks or entries than a pack
 * or a pass may */
#define KBNP_SKIP 1

/* The range's packs decoded into B->ent (fresh 0).  KBNP_SKIP: one does
 * not decode. */
static int packs_load(srv_store *s, const kbnp_group *g, kbnp_buf *B)
{
    sdb_stmt *st = NULL;
    int rc;

    B->nent = 0;
    if (sdb_prepare(s->w,
                    "SELECT name_id, data FROM kbnpack WHERE sess=?1 AND"
                    " stream=?2 AND r0=?3",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, g->sess);
    qbind_i64(st, 2, g->stream);
    qbind_i64(st, 3, g->r0);
    while ((rc = sdb_step(st)) == SDB_ROW) {
        size_t len = 0, n = 0;
        const void *p = qcol_blob(st, 1, &len);
        /* past KBNP_GROUP_MAX: a range of many small blocks, passed */
        if (sq_kbnp_decode(0, p, len, g->r0, B->one, SQ_KBNP_MAX, &n) ||
            B->nent + n > KBNP_GROUP_MAX) {
            glog_debug("kbnpack",
                       "session %lld stream %lld r0 %lld name %lld: its pack"
                       " %s; the range's rows stay",
                       (long long)g->sess, (long long)g->stream,
                       (long long)g->r0, (long long)qcol_i64(st, 0),
                       B->nent + n > KBNP_GROUP_MAX
                           ? "and the others hold more than a pass packs"
                           : "does not decode");
            rc = KBNP_SKIP;
            break;
        }
        for (size_t i = 0; i < n; i++)
            B->ent[B->nent++] = (kbnp_ent){ qcol_i64(st, 0), 0, B->one[i] };
    }
    sdb_finalize(st);
    if (rc == KBNP_SKIP)
        return rc;
    return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

/* The range's blocks (seq and time ranges) into B->blk by seq_lo.
 * KBNP_SKIP: more than a pack may hold. */
static int blocks_load(srv_store *s, const kbnp_group *g, kbnp_buf *B)
{
    sdb_stmt *st = NULL;
    int rc;

    B->nblk = 0;
    if (sdb_prepare(s->w,
                    "SELECT seq_lo, seq_hi, t_lo, t_hi FROM kblocks WHERE"
                    " sess=?1 AND stream=?2 AND seq_lo >= ?3 AND seq_lo < ?4"
                    " ORDER BY seq_lo",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, g->sess);
    qbind_i64(st, 2, g->stream);
    qbind_i64(st, 3, g->r0);
    qbind_i64(st, 4, g->r0 + SQ_KBNP_SPAN);
    while ((rc = sdb_step(st)) == SDB_ROW) {
        if (B->nblk == SQ_KBNP_MAX) {
            rc = KBNP_SKIP;
            break;
        }
        B->blk[B->nblk++] = (sq_kbne){ qcol_i64(st, 0),
                                       qcol_i64(st, 1),
                                       qcol_i64(st, 2),
                                       qcol_i64(st, 3),
                                       0,
                                       0,
                                       0 };
    }
    sdb_finalize(st);
    if (rc == KBNP_SKIP)
        return rc;
    return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

/* The packs of names n[0..k) of the range rewritten: e[0..k) one name's
 * entries by lo, a row's after a pack's of the same block (kept). */
static int pack_write(const kbnp_group *g, kbnp_buf *B, sdb_stmt *up,
                      const kbnp_ent *e, size_t k)
{
    size_t m = 0, len;

    for (size_t i = 0; i < k; i++) {
        if (m && B->one[m - 1].lo == e[i].e.lo)
            m--; /* the same block twice: the row's (sorted after) */
        B->one[m++] = e[i].e;
    }
    len = sq_kbnp_encode(0, B->one, m, g->r0, B->out);
    qbind_i64(up, 1, g->sess);
    qbind_i64(up, 2, g->stream);
    qbind_i64(up, 3, g->r0);
    qbind_i64(up, 4, e[0].name);
    qbind_blob(up, 5, B->out, len);
    return qrun(up) ? GPUFL_EINTERNAL : GPUFL_OK;
}

/* The range's directory: every block of it now (B->blk, by seq_lo), so
 * every block a pack of it names (a block goes only by a merge, which
 * puts the range's packs back as rows first, or with its session). */
static int dir_write(srv_store *s, const kbnp_group *g, kbnp_buf *B)
{
    sdb_stmt *st = NULL;
    size_t len = sq_kbnp_encode(1, B->blk, B->nblk, g->r0, B->out);
    int rc;

    if (sdb_prepare(s->w,
                    "INSERT INTO kbndir VALUES(?1, ?2, ?3, ?4)"
                    " ON CONFLICT(sess, stream, r0) DO UPDATE SET"
                    " data=excluded.data",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, g->sess);
    qbind_i64(st, 2, g->stream);
    qbind_i64(st, 3, g->r0);
    qbind_blob(st, 4, B->out, len);
    rc = qrun(st);
    sdb_finalize(st);
    return rc ? GPUFL_EINTERNAL : GPUFL_OK;
}

/* KBNP_SKIP when the range's rows would not fit beside its packs'
 * entries in B (a range of many small blocks: checked before its rows
 * are deleted, so that it stays rows and the other ranges pack). */
static int rows_fit(srv_store *s, const kbnp_group *g, const kbnp_buf *B)
{
    sdb_stmt *st = NULL;
    int rc;
    int64_t n = 0;

    if (sdb_prepare(s->w, SQ_KBNP_ROWS_SQL, &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, g->sess);
    qbind_i64(st, 2, g->stream);
    qbind_i64(st, 3, g->r0);
    qbind_i64(st, 4, g->r0 + SQ_KBNP_SPAN);
    if ((rc = sdb_step(st)) == SDB_ROW)
        n = qcol_i64(st, 0);
    sdb_finalize(st);
    if (rc != SDB_ROW)
        return sq_err(rc);
    if (n < 0 || (uint64_t)n > KBNP_GROUP_MAX - B->nent) {
        glog_debug("kbnpack",
                   "session %lld stream %lld r0 %lld: %lld rows and %zu"
                   " packed entries are more than a pass packs; its rows"
                   " stay",
                   (long long)g->sess, (long long)g->stream, (long long)g->r0,
                   (long long)n, B->nent);
        return KBNP_SKIP;
    }
    return GPUFL_OK;
}

/* One range: its packs decoded, its blocks read, its rows deleted and
 * added, the packs of the names that had rows written.  *rows: rows
 * that went.  Decoded and checked before the rows go: a range that
 * cannot be packed answers KBNP_SKIP having changed nothing. */
static int pack_one(srv_store *s, const kbnp_group *g, kbnp_buf *B,
                    uint64_t *rows, uint64_t *packs)
{
    sdb_stmt *st = NULL;
    size_t old;
    int rc;

    *rows = *packs = 0;
    if ((rc = packs_load(s, g, B)) != 0 || (rc = blocks_load(s, g, B)) != 0 ||
        (rc = rows_fit(s, g, B)) != 0)
        return rc;
    old = B->nent;
    if (sdb_prepare(s->w, SQ_KBNP_TAKE_SQL, &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, g->sess);
    qbind_i64(st, 2, g->stream);
    qbind_i64(st, 3, g->r0);
    qbind_i64(st, 4, g->r0 + SQ_KBNP_SPAN);
    while ((rc = sdb_step(st)) == SDB_ROW) {
        sq_kbne key = { .lo = qcol_i64(st, 1) };
        const sq_kbne *b =
            bsearch(&key, B->blk, B->nblk, sizeof(*B->blk), sq_kbne_by_lo);
        (*rows)++;
        if (!b)
            continue; /* its block went: nothing reads the row */
        if (B->nent == KBNP_GROUP_MAX) {
            rc = GPUFL_EINTERNAL; /* more than rows_fit counted */
            break;
        }
        key = *b;
        key.n = qcol_i64(st, 2);
        key.dmin = qcol_i64(st, 3);
        key.dmax = qcol_i64(st, 4);
        B->ent[B->nent++] = (kbnp_ent){ qcol_i64(st, 0), 1, key };
    }
    sdb_finalize(st);
    st = NULL;
    if (rc != SDB_DONE)
        return rc == SDB_ROW ? GPUFL_EINTERNAL : rc ? rc : GPUFL_EINTERNAL;
    if (B->nent == old)
        return GPUFL_OK;
    sq_kb_test_pause("GPUFL_SERVER_KBNP_PAUSE_MS"); /* a kill here: rows */
    qsort(B->ent, B->nent, sizeof(*B->ent), by_name_lo);
    if (sdb_prepare(s->w,
                    "INSERT INTO kbnpack VALUES(?1, ?2, ?3, ?4, ?5)"
                    " ON CONFLICT(sess, stream, r0, name_id) DO UPDATE SET"
                    " data=excluded.data",
                    &st))
        return GPUFL_EINTERNAL;
    rc = GPUFL_OK;
    for (size_t i = 0; i < B->nent && !rc;) {
        size_t j = i;
        int fresh = 0;
        while (j < B->nent && B->ent[j].name == B->ent[i].name)
            fresh |= B->ent[j++].fresh;
        if (fresh) { /* a name without rows keeps its pack as it is */
            rc = pack_write(g, B, st, &B->ent[i], j - i);
            (*packs)++;
        }
        i = j;
    }
    sdb_finalize(st);
    return rc ? rc : dir_write(s, g, B);
}

static void buf_free(kbnp_buf *B)
{
    free(B->ent);
    free(B->blk);
    free(B->one);
    free(B->out);
}

/* A pass's state for sq_pass_run: the ranges found and the buffers. */
typedef struct kbnp_pass {
    kbnp_group *g;
    kbnp_buf B;
} kbnp_pass;

static int kbnp_find(srv_store *s, void *ctx, size_t *n, int *more)
{
    kbnp_pass *P = ctx;
    kbnp_buf *B = &P->B;
    int rc;

    (void)more; /* one round: the next tick finds what is left */
    if ((rc = groups_find(s, P->g, KBNP_GROUPS, n)) != 0 || !*n || B->ent)
        return rc;
    if (!(B->ent = malloc(KBNP_GROUP_MAX * sizeof(*B->ent))) ||
        !(B->blk = malloc(SQ_KBNP_MAX * sizeof(*B->blk))) ||
        !(B->one = malloc(SQ_KBNP_MAX * sizeof(*B->one))) ||
        !(B->out = malloc(SQ_KBNP_MAX * SQ_KBNP_ENTRY_MAX)))
        return GPUFL_ENOMEM;
    return GPUFL_OK;
}

/* A range a step, KBNP_TX_GROUPS a transaction: counts packs and rows. */
static int kbnp_step(srv_store *s, void *ctx, size_t i, sq_pass_tx *t,
                     int *done)
{
    kbnp_pass *P = ctx;
    uint64_t nr = 0, np = 0;
    int rc = pack_one(s, &P->g[i], &P->B, &nr, &np);

    *done = 1;
    t->cost++;
    if (rc == KBNP_SKIP) {
        t->bad++;
        return GPUFL_OK;
    }
    t->cnt[0] += np;
    t->cnt[1] += nr;
    return rc;
}

int srv_store_kbn_pack(srv_store *s, uint64_t *packs, uint64_t *rows)
{
    uint64_t cnt[2] = { 0, 0 };
    kbnp_pass P = { 0 };
    sq_pass p = { .find = kbnp_find,
                  .step = kbnp_step,
                  .ctx = &P,
                  .tx_cost = KBNP_TX_GROUPS,
                  .tag = "kbnpack",
                  .bad_what = "kernel block name range(s) cannot be packed"
                              " (a pack that does not decode, or more blocks"
                              " than a pack holds); their rows stay rows"
                              " (--log-level=debug names them)",
                  .bad_last = &s->kbn_unpackable };
    int rc;

    *packs = *rows = 0;
    if (kbnp_off())
        return GPUFL_OK;
    if (!(P.g = malloc(KBNP_GROUPS * sizeof(*P.g))))
        return GPUFL_ENOMEM;
    rc = sq_pass_run(s, &p, cnt);
    buf_free(&P.B);
    free(P.g);
    *packs = cnt[0];
    *rows = cnt[1];
    return rc;
}

/* ---- a merge of packed blocks ---- */

/* Ranges a merge puts back at most: merge_one's sources are at most
 * KB_MERGE_SRC (64) blocks (store_sql_kblocks_compact.c), one range
 * each at most; more is GPUFL_EINTERNAL, not a pack left behind. */
#define KBNP_UNPACK_RANGES 64

/* The range r0's packs of (sess, stream) deleted and their entries
 * inserted as kbnames rows. */
static int unpack_range(int64_t sess, int64_t stream, int64_t r0, sdb_stmt *del,
                        sdb_stmt *ins, sq_kbne *v)
{
    int rc, err = GPUFL_OK;

    qbind_i64(del, 1, sess);
    qbind_i64(del, 2, stream);
    qbind_i64(del, 3, r0);
    /* PostgreSQL's result is fetched whole, SQLite's RETURNING rows are
     * computed at the first step: the inserts may run between its rows */
    while (!err && (rc = sdb_step(del)) == SDB_ROW) {
        size_t len = 0, m = 0;
        const void *p = qcol_blob(del, 1, &len);
        int64_t name = qcol_i64(del, 0);
        if (sq_kbnp_decode(0, p, len, r0, v, SQ_KBNP_MAX, &m)) {
            /* range_decodes read it under the same lock: not again */
            glog_error("kbnpack",
                       "session %lld stream %lld r0 %lld name %lld: its"
                       " pack does not decode",
                       (long long)sess, (long long)stream, (long long)r0,
                       (long long)name);
            err = GPUFL_EINTERNAL;
            break;
        }
        for (size_t j = 0; j < m && !err; j++) {
            qbind_i64(ins, 1, sess);
            qbind_i64(ins, 2, stream);
            qbind_i64(ins, 3, v[j].lo);
            qbind_i64(ins, 4, name);
            qbind_i64(ins, 5, v[j].n);
            qbind_i64(ins, 6, v[j].dmin);
            qbind_i64(ins, 7, v[j].dmax);
            err = qrun(ins);
        }
    }
    sdb_reset(del);
    if (err)
        return err;
    return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

/* Whether the block (sess, stream, lo) is named and its names packed:
 * neither listed in kbunnamed nor with kbnames rows (a block of kernels
 * has one name at least).  Most merges are of ingest's blocks, not yet
 * named: their range's packs stay as they are. */
static int block_packed(srv_store *s, int64_t sess, int64_t stream, int64_t lo,
                        int *packed)
{
    sdb_stmt *st = NULL;
    int rc;

    *packed = 0;
    if (sdb_prepare(s->w, SQ_KBNP_NAMED_SQL, &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sess);
    qbind_i64(st, 2, stream);
    qbind_i64(st, 3, lo);
    if ((rc = sdb_step(st)) == SDB_ROW)
        *packed = qcol_i64(st, 0) == 0;
    sdb_finalize(st);
    return rc == SDB_ROW ? GPUFL_OK : sq_err(rc);
}

/* the range's directory, with its packs gone (the next pass writes it
 * again with them) */
static int dir_drop(srv_store *s, int64_t sess, int64_t stream, int64_t r0)
{
    sdb_stmt *st = NULL;
    int rc;

    if (sdb_prepare(s->w,
                    "DELETE FROM kbndir WHERE sess=?1 AND stream=?2 AND"
                    " r0=?3",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sess);
    qbind_i64(st, 2, stream);
    qbind_i64(st, 3, r0);
    rc = qrun(st);
    sdb_finalize(st);
    return rc ? GPUFL_EINTERNAL : GPUFL_OK;
}

/* The ranges of blocks src[0..n) whose packs a merge puts back (a block
 * of the range packed), each once, into r (KBNP_UNPACK_RANGES). */
static int ranges_packed(srv_store *s, int64_t sess, int64_t stream,
                         const int64_t *src, size_t n, int64_t *r, size_t *nr)
{
    int rc = GPUFL_OK;

    *nr = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        int64_t r0 = src[i] >> SQ_KBNP_SHIFT << SQ_KBNP_SHIFT;
        size_t k;
        int packed = 0;
        for (k = 0; k < *nr && r[k] != r0; k++)
            ;
        if (k < *nr)
            continue; /* that range is put back already */
        if ((rc = block_packed(s, sess, stream, src[i], &packed)) != 0 ||
            !packed)
            continue;
        if (*nr == KBNP_UNPACK_RANGES)
            return GPUFL_EINTERNAL;
        r[(*nr)++] = r0;
    }
    return rc;
}

/* GPUFL_EPARSE when a pack of range r0 does not decode: the merge would
 * have to drop it, and the name's entries in the range's other blocks
 * with it. */
static int range_decodes(int64_t sess, int64_t stream, int64_t r0,
                         sdb_stmt *sel, sq_kbne *v)
{
    int rc, err = GPUFL_OK;

    qbind_i64(sel, 1, sess);
    qbind_i64(sel, 2, stream);
    qbind_i64(sel, 3, r0);
    while ((rc = sdb_step(sel)) == SDB_ROW) {
        size_t len = 0, m = 0;
        const void *p = qcol_blob(sel, 1, &len);
        if (sq_kbnp_decode(0, p, len, r0, v, SQ_KBNP_MAX, &m)) {
            glog_debug("kbnpack",
                       "session %lld stream %lld r0 %lld name %lld: its"
                       " pack does not decode: the merge is given up",
                       (long long)sess, (long long)stream, (long long)r0,
                       (long long)qcol_i64(sel, 0));
            err = GPUFL_EPARSE;
            break;
        }
    }
    sdb_reset(sel);
    if (err)
        return err;
    return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

int sq_kbnp_unpack(srv_store *s, int64_t sess, int64_t stream,
                   const int64_t *src, size_t n)
{
    sdb_stmt *sel = NULL, *del = NULL, *ins = NULL;
    sq_kbne *v = NULL;
    int64_t r[KBNP_UNPACK_RANGES];
    size_t nr = 0;
    int rc;

    if ((rc = ranges_packed(s, sess, stream, src, n, r, &nr)) != 0 || !nr)
        return rc;
    /* rare (a session that went stale and resumed): set up here */
    if (!(v = malloc(SQ_KBNP_MAX * sizeof(*v))))
        return GPUFL_ENOMEM;
    if (sdb_prepare(s->w,
                    "SELECT name_id, data FROM kbnpack WHERE sess=?1 AND"
                    " stream=?2 AND r0=?3",
                    &sel) ||
        sdb_prepare(s->w,
                    "DELETE FROM kbnpack WHERE sess=?1 AND stream=?2 AND"
                    " r0=?3 RETURNING name_id, data",
                    &del) ||
        sdb_prepare(s->w,
                    "INSERT INTO kbnames VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    &ins))
        rc = GPUFL_EINTERNAL;
    /* every pack decoded before any is put back: one that does not
     * answers GPUFL_EPARSE with nothing changed (the merge passed, not a
     * rolled back transaction that stopped every compactor pass) */
    for (size_t i = 0; i < nr && !rc; i++)
        rc = range_decodes(sess, stream, r[i], sel, v);
    for (size_t i = 0; i < nr && !rc; i++)
        if ((rc = unpack_range(sess, stream, r[i], del, ins, v)) == 0)
            rc = dir_drop(s, sess, stream, r[i]);
    sdb_finalize(sel);
    sdb_finalize(del);
    sdb_finalize(ins);
    free(v);
    return rc;
}
