/*
 * store_sql_tl1_pg.c - the PostgreSQL batch writer's level-1 timeline
 * buckets, written packed (issue 23; docs/server.md "Level 1 written
 * packed").  Level 1 was ~94 % of tl's rows (53 000 per 1M kernels) and
 * the largest statement at ingest, one upserted row a bucket; the
 * maintenance thread then folded them into tlpack (store_sql_tlpack.c).
 * Here the batch's level-1 buckets go straight into their ranges' packs
 * instead: the packs of the ranges the batch touches read in one
 * statement, each merged with the batch's buckets (sq_tlb_merge) and
 * written back by one upsert - ~10 packs a 10 000-kernel batch, not ~540
 * rows.  The read-modify-write is sound because every writer of tlpack
 * (ingest, the packer) holds the advisory lock 7242 for its transaction.
 * The readers already add rows and packs of one bucket (a database from
 * before keeps its level-1 rows beside the packs; the packer folds them
 * in).  A stored pack that does not decode (a corrupted database) is left
 * as it is and the batch's buckets of its range go as rows, as the packer
 * leaves such a range's rows.  The buckets are gathered by range in
 * store_sql_tl1.c, which is also SQLite's writer (a range a statement).
 */
#include "store_sql_writer_int.h"
#include "store_sql_tlpack.h"

#include "common/buf.h"

#include <gpufl/gpufl.h>

#include <stdlib.h>
#include <string.h>

/* Ranges a read and an upsert take at most: bounds the data array (a
 * pack of at most SQ_TLP_BYTES_MAX and its length each). */
#define TL1_GROUPS 512
#define TL1_EL_MAX (SQ_TLP_BYTES_MAX + 4)

struct sq_pg_tl1 {
    sdb_stmt *get, *put;
    sq_tl1_set B;
    gbuf data;          /* the packs, a bytea[]'s elements (sq_av_bytes) */
    sq_tlb w[SQ_TLP_N]; /* a stored pack's buckets */
    sq_tl1_scratch x;
};

int sq_pg_tl1_open(sdb *w, sq_pg_tl1 **out)
{
    sq_pg_tl1 *T = calloc(1, sizeof(*T));

    *out = T;
    if (!T)
        return GPUFL_ENOMEM;
    gbuf_init(&T->data, TL1_GROUPS * TL1_EL_MAX + 16);
    /* ordered as the batch's ranges (sq_tl1_collect): read in step with them */
    if (sdb_prepare(w,
                    "SELECT t.sess, t.lane, t.b0, t.data FROM unnest("
                    "?::bigint[], ?::bigint[], ?::bigint[]) u(s, l, b)"
                    " JOIN tlpack t ON t.sess=u.s AND t.lvl=1 AND"
                    " t.lane=u.l AND t.b0=u.b ORDER BY 1, 2, 3",
                    &T->get) ||
        sdb_prepare(w,
                    "INSERT INTO tlpack SELECT u.s, 1, u.l, u.b, u.d FROM"
                    " unnest(?::bigint[], ?::bigint[], ?::bigint[],"
                    " ?::bytea[]) u(s, l, b, d) ON CONFLICT(sess, lvl,"
                    " lane, b0) DO UPDATE SET data=excluded.data",
                    &T->put))
        return GPUFL_EINTERNAL;
    return GPUFL_OK;
}

void sq_pg_tl1_close(sq_pg_tl1 *T)
{
    if (!T)
        return;
    sdb_finalize(T->get);
    sdb_finalize(T->put);
    gbuf_release(&T->data);
    sq_tl1_set_release(&T->B);
    free(T);
}

/* The array columns of ranges [g0, g1): sess, lane, b0 of each (all, or
 * only the good ones). */
typedef struct grp_cur {
    const sq_pg_tl1 *T;
    size_t g;
    int c, good;
} grp_cur;

static void grp_el(gbuf *cb, void *ctx, size_t j)
{
    grp_cur *r = ctx;
    const sq_tl1_set *B = &r->T->B;
    const sq_tl1_el *e;

    (void)j;
    while (r->good && B->g[r->g].bad)
        r->g++;
    e = &B->v[B->g[r->g++].i0];
    sq_av_i64(cb, r->c == 0 ? e->sess : r->c == 1 ? e->lane : e->b0);
}

static int grp_bind(sq_pg_tl1 *T, sdb_stmt *st, gbuf *cb, size_t g0, size_t n,
                    int good)
{
    int rc;

    for (int c = 0; c < 3; c++) {
        grp_cur r = { T, g0, c, good };
        if ((rc = sq_arr_bind(st, c + 1, cb, n, SDB_ARR_I64, SQ_CB_COL, grp_el,
                              &r)) != 0)
            return rc;
    }
    return GPUFL_OK;
}

/* Range g's pack (the stored one's buckets w[0..nw) added in) appended
 * to the data array as a bytea element. */
static void grp_pack(sq_pg_tl1 *T, size_t g, size_t nw)
{
    size_t len = sq_tl1_pack(&T->B, g, T->w, nw, &T->x);
    gbuf *d = &T->data;

    /* room reserved by the caller (TL1_EL_MAX) */
    memcpy(d->p + d->len + 4, T->x.out, len);
    sq_av_bytes(d, len);
}

/* Ranges [g0, g1): their stored packs read in step with them (both in
 * key order), each merged and appended; a bad one marked.  *ngood: the
 * packs appended. */
static int grp_read(sq_pg_tl1 *T, gbuf *cb, size_t g0, size_t g1, size_t *ngood)
{
    sq_tl1_set *B = &T->B;
    gbuf *d = &T->data;
    size_t g = g0;
    int rc;

    *ngood = 0;
    if ((rc = grp_bind(T, T->get, cb, g0, g1 - g0, 0)) != 0)
        return rc;
    gbuf_reset(d);
    if (gbuf_grow(d, (g1 - g0) * TL1_EL_MAX))
        return d->err;
    while ((rc = sdb_step(T->get)) == SDB_ROW) {
        int64_t s = qcol_i64(T->get, 0), l = qcol_i64(T->get, 1),
                b0 = qcol_i64(T->get, 2);
        const void *p;
        size_t len, nw = 0;
        const sq_tl1_el *e;
        /* ranges without a stored pack before it */
        for (; g < g1; g++) {
            e = &B->v[B->g[g].i0];
            if (sq_tl1_key_cmp(e->sess, e->lane, e->b0, s, l, b0) >= 0)
                break;
            grp_pack(T, g, 0);
            ++*ngood;
        }
        e = g < g1 ? &B->v[B->g[g].i0] : NULL;
        if (!e || sq_tl1_key_cmp(e->sess, e->lane, e->b0, s, l, b0))
            continue; /* not asked for: cannot happen */
        p = qcol_blob(T->get, 3, &len);
        if (sq_tlp_decode(p, len, b0, T->w, &nw)) {
            B->g[g++].bad = 1;
            continue;
        }
        grp_pack(T, g++, nw);
        ++*ngood;
    }
    sdb_reset(T->get);
    if (rc != SDB_DONE)
        return sq_err(rc);
    for (; g < g1; g++, ++*ngood)
        grp_pack(T, g, 0);
    return GPUFL_OK;
}

/* tl's columns (store_sql_roll_pg.c tl_col) of the batch's buckets
 * T->B.v[j] whose range's pack is bad. */
typedef struct row_cur {
    const sq_pg_tl1 *T;
    int c;
} row_cur;

static void row_el(gbuf *cb, void *ctx, size_t j)
{
    const row_cur *r = ctx;
    const sq_tl1_el *e = &r->T->B.v[j];
    int64_t x[8] = { e->sess, SQ_TL1_LVL, e->lane,       e->t.b,
                     e->t.n,  e->t.busy,  e->t.top_name, e->t.top_dur };

    sq_av_i64(cb, x[r->c]);
}

int sq_pg_tl1_put(srv_store *s, sq_pg_tl1 *T, gbuf *cb, sdb_stmt *rows)
{
    sq_tl1_set *B = &T->B;
    size_t ng, nbad = 0;
    int rc;

    if ((rc = sq_tl1_collect(&s->tl, &sq_tl1_tl, B, SQ_TLP_SHIFT)) != 0)
        return rc;
    ng = B->ng;
    for (size_t g0 = 0; g0 < ng; g0 += TL1_GROUPS) {
        size_t g1 = ng - g0 < TL1_GROUPS ? ng : g0 + TL1_GROUPS, ngood;
        if ((rc = grp_read(T, cb, g0, g1, &ngood)) != 0)
            return rc;
        if (!ngood)
            continue;
        sdb_bind_arr(T->put, 4, T->data.p, T->data.len, ngood, SDB_ARR_BYTEA);
        if ((rc = grp_bind(T, T->put, cb, g0, ngood, 1)) != 0 ||
            (rc = qsend(T->put)) != 0)
            return rc;
    }
    /* the bad ranges' buckets to the front, written as tl rows */
    for (size_t g = 0; g < ng; g++)
        for (size_t i = B->g[g].i0; B->g[g].bad && i < B->g[g + 1].i0; i++)
            B->v[nbad++] = B->v[i];
    if (!nbad)
        return GPUFL_OK;
    for (int c = 0; c < 8; c++) {
        row_cur r = { T, c };
        if ((rc = sq_arr_bind(rows, c + 1, cb, nbad, SDB_ARR_I64, SQ_CB_COL,
                              row_el, &r)) != 0)
            return rc;
    }
    return qsend(rows);
}
