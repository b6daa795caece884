/*
 * store_sql_tl1.c - a batch's level-1 timeline buckets written into their
 * ranges' packs (issue 23; docs/server.md "Level 1 written packed"): the
 * buckets gathered from the batch's map and grouped by range for both
 * databases' writers, and SQLite's writer.  Level 1 was ~536 upserted tl
 * rows a 10 000-kernel batch, ~10 bytes a kernel of WAL; its ~10 ranges
 * a batch are read, merged with the batch's buckets (sq_tlb_merge, the
 * rollup's rules) and written back instead, one pack each.  The
 * read-modify-write is the writer's under its lock, in the batch's
 * transaction.  PostgreSQL's writer (arrays: one read and one upsert a
 * batch) is store_sql_tl1_pg.c.  SQLite's writer takes a kind
 * (sq_tl1_kind): the API calls' level 0 goes into capipack the same way
 * (store_sql_capi.c).
 */
#include "store_sql_writer_int.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>

int sq_tl1_skip(const uint64_t *k)
{
    return k[1] == SQ_TL1_LVL;
}

int sq_tl1_key_cmp(int64_t s0, int64_t l0, int64_t b0, int64_t s1, int64_t l1,
                   int64_t b1)
{
    if (s0 != s1)
        return s0 < s1 ? -1 : 1;
    if (l0 != l1)
        return l0 < l1 ? -1 : 1;
    return b0 < b1 ? -1 : b0 > b1;
}

/* (sess, lane, b): the ranges in key order, their buckets ascending as
 * the codec wants them */
static int el_cmp(const void *a, const void *b)
{
    const sq_tl1_el *x = a, *y = b;
    return sq_tl1_key_cmp(x->sess, x->lane, x->t.b, y->sess, y->lane, y->t.b);
}

/* whether two buckets are of different ranges */
static int grp_differ(const sq_tl1_el *x, const sq_tl1_el *y)
{
    return sq_tl1_key_cmp(x->sess, x->lane, x->b0, y->sess, y->lane, y->b0) !=
           0;
}

/* tl's buckets (sq_tl) */
static void tl_val(const void *v, sq_tlb *t)
{
    const sq_tl *x = v;
    t->n = (int64_t)x->n;
    t->busy = (int64_t)x->busy;
    t->top_name = (int64_t)x->top_name;
    t->top_dur = (int64_t)x->top_dur;
}

static void tl_row(sdb_stmt *rows, const sq_tl1_el *e, int lvl)
{
    int64_t c[8] = { e->sess, lvl,       e->lane,       e->t.b,
                     e->t.n,  e->t.busy, e->t.top_name, e->t.top_dur };
    for (int j = 0; j < 8; j++)
        qbind_i64(rows, j + 1, c[j]);
}

const sq_tl1_kind sq_tl1_tl = { .packs = "tlpack",
                                .lane = "lane",
                                .lvl = SQ_TL1_LVL,
                                .lane_k = 2,
                                .b_k = 3,
                                .val = tl_val,
                                .row = tl_row };

int sq_tl1_collect(const rl_map *m, const sq_tl1_kind *kd, sq_tl1_set *B,
                   unsigned shift)
{
    const uint64_t *k;
    const void *t;
    size_t n = 0;

    B->ng = 0;
    for (size_t i = 0; i < m->cap; i++)
        if ((t = rl_map_at(m, i, &k)) && k[1] == (uint64_t)kd->lvl)
            n++;
    if (!n)
        return GPUFL_OK;
    if (n > B->cap) {
        /* grown to the largest batch's and kept: the map's cap bounds it */
        sq_tl1_el *v = realloc(B->v, n * sizeof(*v));
        sq_tl1_grp *g = v ? realloc(B->g, (n + 1) * sizeof(*g)) : NULL;
        if (v)
            B->v = v;
        if (!g)
            return GPUFL_ENOMEM;
        B->g = g;
        B->cap = n;
    }
    for (size_t i = 0, j = 0; i < m->cap; i++)
        if ((t = rl_map_at(m, i, &k)) && k[1] == (uint64_t)kd->lvl) {
            sq_tl1_el *e = &B->v[j++];
            int64_t b = (int64_t)k[kd->b_k];
            *e = (sq_tl1_el){ (int64_t)k[0],
                              (int64_t)k[kd->lane_k],
                              b >> shift << shift,
                              { .b = b } };
            kd->val(t, &e->t);
        }
    qsort(B->v, n, sizeof(*B->v), el_cmp);
    for (size_t i = 0; i < n; i++)
        if (!i || grp_differ(&B->v[i - 1], &B->v[i]))
            B->g[B->ng++] = (sq_tl1_grp){ i, 0 };
    B->g[B->ng] = (sq_tl1_grp){ n, 0 };
    return GPUFL_OK;
}

size_t sq_tl1_pack(const sq_tl1_set *B, size_t g, const sq_tlb *w, size_t nw,
                   sq_tl1_scratch *x)
{
    size_t i0 = B->g[g].i0, na = B->g[g + 1].i0 - i0, nm;

    for (size_t i = 0; i < na; i++)
        x->a[i] = B->v[i0 + i].t;
    nm = sq_tlb_merge(x->a, na, w, nw, x->m);
    return sq_tlp_encode(x->m, nm, B->v[i0].b0, x->out);
}

void sq_tl1_set_release(sq_tl1_set *B)
{
    free(B->v);
    free(B->g);
    *B = (sq_tl1_set){ 0 };
}

/* ---- SQLite's writer: a range a statement, in this process ---- */

struct sq_lite_tl1 {
    const sq_tl1_kind *k;
    sdb_stmt *get, *put;
    sq_tl1_set B;
    sq_tlb w[SQ_TLP_N]; /* the stored pack's buckets */
    sq_tl1_scratch x;
};

int sq_lite_tl1_open(sdb *w, const sq_tl1_kind *k, sq_lite_tl1 **out)
{
    sq_lite_tl1 *T = calloc(1, sizeof(*T));
    char get[160], put[200];

    *out = T;
    if (!T)
        return GPUFL_ENOMEM;
    T->k = k;
    snprintf(get, sizeof get,
             "SELECT data FROM %s WHERE sess=?1 AND lvl=%d AND %s=?2 AND"
             " b0=?3",
             k->packs, k->lvl, k->lane);
    /* tlpack and capipack: (sess, lvl, lane, b0, data) */
    snprintf(put, sizeof put,
             "INSERT INTO %s VALUES(?1, %d, ?2, ?3, ?4) ON CONFLICT(sess,"
             " lvl, %s, b0) DO UPDATE SET data=excluded.data",
             k->packs, k->lvl, k->lane);
    if (sdb_prepare(w, get, &T->get) || sdb_prepare(w, put, &T->put))
        return GPUFL_EINTERNAL;
    return GPUFL_OK;
}

void sq_lite_tl1_close(sq_lite_tl1 *T)
{
    if (!T)
        return;
    sdb_finalize(T->get);
    sdb_finalize(T->put);
    sq_tl1_set_release(&T->B);
    free(T);
}

/* Range g's buckets as rows (its stored pack does not decode: left as
 * it is, as the packer leaves such a range's rows). */
static int grp_rows(sq_lite_tl1 *T, size_t g, sdb_stmt *rows)
{
    int rc = GPUFL_OK;

    for (size_t i = T->B.g[g].i0; !rc && i < T->B.g[g + 1].i0; i++) {
        T->k->row(rows, &T->B.v[i], T->k->lvl);
        rc = qrun(rows);
    }
    return rc;
}

int sq_lite_tl1_put(sq_lite_tl1 *T, const rl_map *m, sdb_stmt *rows)
{
    sq_tl1_set *B = &T->B;
    int rc;

    if ((rc = sq_tl1_collect(m, T->k, B, SQ_TL1_SHIFT_LITE)) != 0)
        return rc;
    for (size_t g = 0; g < B->ng; g++) {
        const sq_tl1_el *e = &B->v[B->g[g].i0];
        int64_t b0 = e->b0;
        size_t nw = 0, len;
        int bad = 0;
        qbind_i64(T->get, 1, e->sess);
        qbind_i64(T->get, 2, e->lane);
        qbind_i64(T->get, 3, b0);
        if ((rc = sdb_step(T->get)) == SDB_ROW) {
            size_t plen;
            const void *p = qcol_blob(T->get, 0, &plen);
            bad = sq_tlp_decode(p, plen, b0, T->w, &nw) != 0;
        }
        sdb_reset(T->get);
        if (rc != SDB_ROW && rc != SDB_DONE)
            return sq_err(rc);
        if (bad) {
            if ((rc = grp_rows(T, g, rows)) != 0)
                return rc;
            continue;
        }
        len = sq_tl1_pack(B, g, T->w, nw, &T->x);
        qbind_i64(T->put, 1, e->sess);
        qbind_i64(T->put, 2, e->lane);
        qbind_i64(T->put, 3, b0);
        qbind_blob(T->put, 4, T->x.out, len);
        if ((rc = qrun(T->put)) != 0)
            return rc;
    }
    return GPUFL_OK;
}
