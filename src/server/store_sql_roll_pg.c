/*
 * store_sql_roll_pg.c - the PostgreSQL batch writer's rollup merges
 * (store_sql_ingest_pg.c is the rest of it): the batch's kernel
 * aggregates, timeline buckets and per-scope totals, each merged by one
 * upsert whose rows are bound as one array literal a column and read
 * through unnest - a round trip a row would cost more than the rest of
 * the batch; any other file's rollup (sq_writer.merge, store_sql_capi.c)
 * COPYed as text into a session-local staging table and merged by one
 * upsert.  The upserts end with the row-at-a-time statement's ON CONFLICT
 * clause (store_sql.c), so both databases merge alike.
 */
#include "store_sql_writer_int.h"

#include "common/buf.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
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

/* A double column, as sq_cb_i. */
static void cb_f(gbuf *b, double v, char sep)
{
    /* the same text pg_bind_f64 sends */
    b->len += (size_t)snprintf(b->p + b->len, SQ_CB_COL, "%.17g", v);
    b->p[b->len++] = sep;
}

int sq_pg_merge_sql(srv_store *s, gbuf *cb, const char *stage, const char *dst,
                    const char *ws_sql)
{
    char sql[1024];
    int rc;

    if (!cb->len)
        return GPUFL_OK;
    snprintf(sql, sizeof(sql), "COPY %s FROM STDIN", stage);
    if ((rc = sdb_copy(s->w, sql, cb->p, cb->len)) != 0)
        return rc;
    snprintf(sql, sizeof(sql), "INSERT INTO %s SELECT * FROM %s%s", dst, stage,
             strstr(ws_sql, " ON CONFLICT"));
    return sdb_exec(s->w, sql);
}

/* Rows bound per array statement at most: bounds the literals' size
 * (each well under the 1 GB a parameter may hold). */
#define ARR_ROWS_MAX 65536

/* Appends column c of the row (k, v) and a ',' into room the caller
 * reserved. */
typedef void (*arr_col_fn)(gbuf *cb, const uint64_t *k, void *v, int c);

/* The rows of map m upserted by st - INSERT ... SELECT FROM unnest of
 * ncol array literals, one a column (store_sql_ingest_pg.c prepares it) -
 * ARR_ROWS_MAX rows a statement; room: the most bytes one value takes.
 * A COPY into a staging table and an upsert from it (before) cost a round
 * trip more and the staging rows written and read again (docs/server.md
 * "Rollup upserts from arrays"). */
static int arr_upsert(rl_map *m, gbuf *cb, sdb_stmt *st, int ncol, size_t room,
                      arr_col_fn col)
{
    const uint64_t *k;
    size_t i0 = 0;
    int rc;

    while (i0 < m->cap) {
        size_t i1 = i0;
        for (int c = 0; c < ncol; c++) {
            size_t n = 0, i;
            gbuf_reset(cb);
            if (gbuf_grow(cb, 2))
                return cb->err;
            cb->p[cb->len++] = '{';
            for (i = i0; i < m->cap && n < ARR_ROWS_MAX; i++) {
                void *v = rl_map_at(m, i, &k);
                if (!v)
                    continue;
                if (gbuf_grow(cb, room + 2))
                    return cb->err;
                col(cb, k, v, c);
                n++;
            }
            if (!n)
                return GPUFL_OK; /* only at c 0: no rows left */
            cb->p[cb->len - 1] = '}';
            qbind_str(st, c + 1, (srv_str){ cb->p, cb->len });
            i1 = i;
        }
        if ((rc = qrun(st)) != 0)
            return rc;
        i0 = i1;
    }
    return GPUFL_OK;
}

/* kagg's columns in the table's order (sq_pg_kagg_sql) */
static void kagg_col(gbuf *cb, const uint64_t *k, void *v, int c)
{
    static const char hx[] = "0123456789abcdef";
    const sq_kagg *a = v;
    unsigned char h[RL_HIST_ENC_MAX];
    size_t hn;

    switch (c) {
    case 0:
    case 1: sq_cb_i(cb, (int64_t)k[c], ','); return;
    case 2: sq_cb_i(cb, (int64_t)a->n, ','); return;
    case 3: sq_cb_i(cb, (int64_t)a->total, ','); return;
    case 4: sq_cb_i(cb, (int64_t)a->min, ','); return;
    case 5: sq_cb_i(cb, (int64_t)a->max, ','); return;
    case 6: cb_f(cb, a->sum_occ, ','); return;
    case 7: sq_cb_i(cb, (int64_t)a->n_occ, ','); return;
    case 8: sq_cb_i(cb, a->regs, ','); return;
    case 9: sq_cb_i(cb, a->smem, ','); return;
    default:
        /* bytea hex, quoted: an array literal's backslash is doubled */
        hn = rl_hist_encode(a->hist, h);
        memcpy(cb->p + cb->len, "\"\\\\x", 4);
        cb->len += 4;
        for (size_t b = 0; b < hn; b++) {
            cb->p[cb->len++] = hx[h[b] >> 4];
            cb->p[cb->len++] = hx[h[b] & 15];
        }
        cb->p[cb->len++] = '"';
        cb->p[cb->len++] = ',';
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
    sq_cb_i(cb, x, ',');
}

/* kscope's columns: the key, then n and gpu_ns */
static void kscope_col(gbuf *cb, const uint64_t *k, void *v, int c)
{
    const uint64_t *x = v;
    sq_cb_i(cb, (int64_t)(c < 2 ? k[c] : x[c - 2]), ',');
}

/* The kernel aggregates in two round trips - the stored rows for the
 * batch's keys (g), merged here, written back by put. */
static int flush_kagg(srv_store *s, gbuf *cb, sdb_stmt *g, sdb_stmt *put)
{
    const uint64_t *k;
    int rc, first = 1;

    if (!s->kagg.n)
        return GPUFL_OK;
    /* the keys as two bigint[] literals, "{s,s,..}" then "{n,n,..}" */
    gbuf_reset(cb);
    for (int col = 0; col < 2; col++) {
        size_t start = cb->len;
        first = 1;
        for (size_t i = 0; i < s->kagg.cap; i++) {
            if (!rl_map_at(&s->kagg, i, &k))
                continue;
            if (gbuf_grow(cb, SQ_CB_COL + 2))
                return cb->err;
            if (first)
                cb->p[cb->len++] = '{';
            first = 0;
            sq_cb_i(cb, (int64_t)k[col], ',');
        }
        cb->p[cb->len - 1] = '}';
        qbind_str(g, col + 1, (srv_str){ cb->p + start, cb->len - start });
    }
    while ((rc = sdb_step(g)) == SDB_ROW) {
        uint64_t gk[4] = { (uint64_t)qcol_i64(g, 0), (uint64_t)qcol_i64(g, 1),
                           0, 0 };
        sq_kagg *a = rl_map_find(&s->kagg, gk);
        if (a)
            sq_kagg_merge(a, g, 2);
    }
    sdb_reset(g);
    if (rc != SDB_DONE)
        return sq_err(rc);
    return arr_upsert(&s->kagg, cb, put, 11, 2 * RL_HIST_ENC_MAX + 8, kagg_col);
}

/* Keys are unique within a batch, as ON CONFLICT DO UPDATE requires. */
int sq_pg_roll_flush(srv_store *s, gbuf *cb, sdb_stmt *const st[4])
{
    int rc;

    if ((rc = flush_kagg(s, cb, st[0], st[1])) != 0 ||
        (rc = arr_upsert(&s->tl, cb, st[2], 8, SQ_CB_COL, tl_col)) != 0)
        return rc;
    return arr_upsert(&s->kscope, cb, st[3], 4, SQ_CB_COL, kscope_col);
}
