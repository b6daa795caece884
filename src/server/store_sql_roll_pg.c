/*
 * store_sql_roll_pg.c - the PostgreSQL batch writer's rollup merges
 * (store_sql_ingest_pg.c is the rest of it): the batch's kernel
 * aggregates, timeline buckets and per-scope totals, each merged by one
 * upsert whose rows are bound as one array a column (in binary,
 * sdb_bind_arr) and read through unnest - a round trip a row would cost
 * more than the rest of the batch; store_sql_capi.c's summary the same
 * way (sq_writer.roll_put).  The upserts end with the row-at-a-time
 * statement's ON CONFLICT clause (store_sql.c), so both databases merge
 * alike.
 */
#include "store_sql_writer_int.h"

#include "common/buf.h"

#include <gpufl/gpufl.h>

#include <string.h>

void sq_cb_i(gbuf *b, int64_t v, char sep)
{
    char tmp[24];
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    size_t n = 0;

    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        b->p[b->len++] = '-';
    while (n)
        b->p[b->len++] = tmp[--n];
    b->p[b->len++] = sep;
}

void sq_cb_be(gbuf *b, uint64_t v, int bytes)
{
    for (int k = bytes - 1; k >= 0; k--)
        b->p[b->len++] = (char)(v >> (8 * k));
}

void sq_av_i64(gbuf *b, int64_t v)
{
    sq_cb_be(b, 8, 4);
    sq_cb_be(b, (uint64_t)v, 8);
}

void sq_av_f64(gbuf *b, double v)
{
    uint64_t u;

    memcpy(&u, &v, 8);
    sq_cb_be(b, 8, 4);
    sq_cb_be(b, u, 8);
}

void sq_av_null(gbuf *b)
{
    sq_cb_be(b, 0xffffffffu, 4); /* length -1 */
}

void sq_av_bytes(gbuf *b, size_t n)
{
    sq_cb_be(b, n, 4);
    b->len += n;
}

int sq_arr_bind(sdb_stmt *st, int i, gbuf *cb, size_t n, int elem, size_t room,
                sq_arr_fn fn, void *ctx)
{
    gbuf_reset(cb);
    for (size_t j = 0; j < n; j++) {
        if (gbuf_grow(cb, room))
            return cb->err;
        fn(cb, ctx, j);
    }
    sdb_bind_arr(st, i, cb->p, cb->len, n, elem);
    return GPUFL_OK;
}

/* Rows bound per array statement at most: bounds the arrays' size
 * (each well under the 1 GB a parameter may hold). */
#define ARR_ROWS_MAX 65536

/* A map's rows for sq_arr_bind: from slot i on, column c of each row
 * (the caller counted the rows, so a next one is there). */
typedef struct roll_cur {
    rl_map *m;
    size_t i;
    sq_roll_col_fn col;
    int c;
    int (*skip)(const uint64_t *k); /* NULL, or rows left out */
} roll_cur;

static void roll_el(gbuf *cb, void *ctx, size_t j)
{
    roll_cur *r = ctx;
    const uint64_t *k;
    void *v;

    (void)j;
    while (!(v = rl_map_at(r->m, r->i++, &k)) || (r->skip && r->skip(k)))
        ;
    r->col(cb, k, v, r->c);
}

/* A COPY into a staging table and an upsert from it (before) cost a round
 * trip more and the staging rows written and read again (docs/server.md
 * "Rollup upserts from arrays"). */
static int arr_upsert(rl_map *m, gbuf *cb, sdb_stmt *st, int ncol,
                      const int *ty, size_t room, sq_roll_col_fn col,
                      int (*skip)(const uint64_t *k))
{
    const uint64_t *k;
    size_t i0 = 0;
    int rc;

    while (i0 < m->cap) {
        size_t i1 = i0, n = 0;
        for (; i1 < m->cap && n < ARR_ROWS_MAX; i1++)
            n += rl_map_at(m, i1, &k) != NULL && !(skip && skip(k));
        if (!n)
            return GPUFL_OK;
        for (int c = 0; c < ncol; c++) {
            roll_cur r = { m, i0, col, c, skip };
            if ((rc = sq_arr_bind(st, c + 1, cb, n, ty ? ty[c] : SDB_ARR_I64,
                                  room, roll_el, &r)) != 0)
                return rc;
        }
        if ((rc = qsend(st)) != 0)
            return rc;
        i0 = i1;
    }
    return GPUFL_OK;
}

int sq_pg_arr_upsert(rl_map *m, gbuf *cb, sdb_stmt *st, int ncol, const int *ty,
                     size_t room, sq_roll_col_fn col)
{
    return arr_upsert(m, cb, st, ncol, ty, room, col, NULL);
}

/* kagg's columns in the table's order (sq_pg_kagg_sql), of types
 * kagg_ty */
static const int kagg_ty[11] = { SDB_ARR_I64, SDB_ARR_I64,  SDB_ARR_I64,
                                 SDB_ARR_I64, SDB_ARR_I64,  SDB_ARR_I64,
                                 SDB_ARR_F64, SDB_ARR_I64,  SDB_ARR_I64,
                                 SDB_ARR_I64, SDB_ARR_BYTEA };
static void kagg_col(gbuf *cb, const uint64_t *k, void *v, int c)
{
    const sq_kagg *a = v;

    switch (c) {
    case 0:
    case 1: sq_av_i64(cb, (int64_t)k[c]); return;
    case 2: sq_av_i64(cb, (int64_t)a->n); return;
    case 3: sq_av_i64(cb, (int64_t)a->total); return;
    case 4: sq_av_i64(cb, (int64_t)a->min); return;
    case 5: sq_av_i64(cb, (int64_t)a->max); return;
    case 6: sq_av_f64(cb, a->sum_occ); return;
    case 7: sq_av_i64(cb, (int64_t)a->n_occ); return;
    case 8: sq_av_i64(cb, a->regs); return;
    case 9: sq_av_i64(cb, a->smem); return;
    default:
        /* the histogram encoded in place, after its length's 4 bytes */
        sq_av_bytes(
            cb, rl_hist_encode(a->hist, (unsigned char *)cb->p + cb->len + 4));
        return;
    }
}

/* tl's columns in the table's order: the key, n, busy, top_name, top_dur */
static void tl_col(gbuf *cb, const uint64_t *k, void *v, int c)
{
    const sq_tl *t = v;
    int64_t x = c < 4    ? (int64_t)k[c]
                : c == 4 ? (int64_t)t->n
                : c == 5 ? (int64_t)t->busy
                : c == 6 ? (int64_t)t->top_name
                         : (int64_t)t->top_dur;
    sq_av_i64(cb, x);
}

/* kscope's columns: the key, then n and gpu_ns */
static void kscope_col(gbuf *cb, const uint64_t *k, void *v, int c)
{
    const uint64_t *x = v;
    sq_av_i64(cb, (int64_t)(c < 2 ? k[c] : x[c - 2]));
}

/* A key of the batch's aggregates not merged from the writer's cache
 * (sq_kac_merge) for sq_arr_bind: column c of the next one. */
static void miss_el(gbuf *cb, void *ctx, size_t j)
{
    roll_cur *r = ctx;
    const uint64_t *k;
    const sq_kagg *a;

    (void)j;
    while (!(a = rl_map_at(r->m, r->i++, &k)) || a->cached)
        ;
    sq_av_i64(cb, (int64_t)k[r->c]);
}

/* The kernel aggregates: the stored rows merged in (from the writer's
 * cache, store_sql_kagg_cache.c, or for the keys it does not hold read
 * by g), written back by put. */
static int flush_kagg(srv_store *s, gbuf *cb, sdb_stmt *g, sdb_stmt *put)
{
    size_t miss;
    int rc;

    if (!s->kagg.n)
        return GPUFL_OK;
    if (!(miss = sq_kac_merge(s)))
        goto put;
    /* the keys as two bigint[]: the sessions, then the names */
    for (int col = 0; col < 2; col++) {
        roll_cur r = { &s->kagg, 0, NULL, col };
        if ((rc = sq_arr_bind(g, col + 1, cb, miss, SDB_ARR_I64, SQ_CB_COL,
                              miss_el, &r)) != 0)
            return rc;
    }
    while ((rc = sdb_step(g)) == SDB_ROW) {
        uint64_t gk[4] = { (uint64_t)qcol_i64(g, 0), (uint64_t)qcol_i64(g, 1),
                           0, 0 };
        sq_kagg *a = rl_map_find(&s->kagg, gk);
        if (a && !a->cached)
            sq_kagg_merge(a, g, 2);
    }
    sdb_reset(g);
    if (rc != SDB_DONE)
        return sq_err(rc);
put:
    if ((rc = sq_pg_arr_upsert(&s->kagg, cb, put, 11, kagg_ty,
                               RL_HIST_ENC_MAX + SQ_CB_COL, kagg_col)) != 0)
        return rc;
    sq_kac_store(s);
    return GPUFL_OK;
}

/* Keys are unique within a batch, as ON CONFLICT DO UPDATE requires. */
int sq_pg_roll_flush(srv_store *s, gbuf *cb, sdb_stmt *const st[4])
{
    int rc;

    if ((rc = flush_kagg(s, cb, st[0], st[1])) != 0 ||
        (rc = arr_upsert(&s->tl, cb, st[2], 8, NULL, SQ_CB_COL, tl_col,
                         sq_tl1_skip)) != 0)
        return rc;
    return sq_pg_arr_upsert(&s->kscope, cb, st[3], 4, NULL, SQ_CB_COL,
                            kscope_col);
}
