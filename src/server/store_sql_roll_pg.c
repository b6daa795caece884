/*
 * store_sql_roll_pg.c - the PostgreSQL batch writer's rollup merges
 * (store_sql_ingest_pg.c is the rest of it): the batch's kernel
 * aggregates, timeline buckets and per-scope totals, and any other file's
 * rollup (sq_writer.merge, store_sql_capi.c), each COPYed as text into a
 * session-local staging table and merged by one upsert - a round trip a
 * row would cost more than the rest of the batch.  The upsert is the
 * row-at-a-time statement's ON CONFLICT clause (store_sql.c), so both
 * databases merge alike.
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

/* The kernel aggregates in three round trips - the stored rows for the
 * batch's keys (g), merged here, COPYed back through kastage. */
static int flush_kagg(srv_store *s, gbuf *cb, sdb_stmt *g)
{
    static const char hx[] = "0123456789abcdef";
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
    gbuf_reset(cb);
    for (size_t i = 0; i < s->kagg.cap; i++) {
        sq_kagg *a = rl_map_at(&s->kagg, i, &k);
        unsigned char h[RL_HIST_ENC_MAX];
        size_t hn;
        if (!a)
            continue;
        hn = rl_hist_encode(a->hist, h);
        if (gbuf_grow(cb, 10 * SQ_CB_COL + 2 * hn + 8))
            return cb->err;
        sq_cb_i(cb, (int64_t)k[0], '\t');
        sq_cb_i(cb, (int64_t)k[1], '\t');
        sq_cb_i(cb, (int64_t)a->n, '\t');
        sq_cb_i(cb, (int64_t)a->total, '\t');
        sq_cb_i(cb, (int64_t)a->min, '\t');
        sq_cb_i(cb, (int64_t)a->max, '\t');
        cb_f(cb, a->sum_occ, '\t');
        sq_cb_i(cb, (int64_t)a->n_occ, '\t');
        sq_cb_i(cb, a->regs, '\t');
        sq_cb_i(cb, a->smem, '\t');
        /* bytea hex; COPY text needs the backslash doubled */
        memcpy(cb->p + cb->len, "\\\\x", 3);
        cb->len += 3;
        for (size_t b = 0; b < hn; b++) {
            cb->p[cb->len++] = hx[h[b] >> 4];
            cb->p[cb->len++] = hx[h[b] & 15];
        }
        cb->p[cb->len++] = '\n';
    }
    return sq_pg_merge_sql(s, cb, "kastage", "kagg", sq_wsql[WS_KAGG_PUT]);
}

/* Keys are unique within a batch, as ON CONFLICT DO UPDATE requires. */
int sq_pg_roll_flush(srv_store *s, gbuf *cb, sdb_stmt *kaget)
{
    const uint64_t *k;
    int rc;

    if ((rc = flush_kagg(s, cb, kaget)) != 0)
        return rc;
    gbuf_reset(cb);
    for (size_t i = 0; i < s->tl.cap; i++) {
        sq_tl *t = rl_map_at(&s->tl, i, &k);
        if (!t)
            continue;
        if (gbuf_grow(cb, 8 * SQ_CB_COL))
            return cb->err;
        for (int j = 0; j < 4; j++)
            sq_cb_i(cb, (int64_t)k[j], '\t');
        sq_cb_i(cb, (int64_t)t->n, '\t');
        sq_cb_i(cb, (int64_t)t->busy, '\t');
        sq_cb_i(cb, (int64_t)t->top_name, '\t');
        sq_cb_i(cb, (int64_t)t->top_dur, '\n');
    }
    if ((rc = sq_pg_merge_sql(s, cb, "tlstage", "tl", sq_wsql[WS_TL])) != 0)
        return rc;
    gbuf_reset(cb);
    for (size_t i = 0; i < s->kscope.cap; i++) {
        uint64_t *v = rl_map_at(&s->kscope, i, &k);
        if (!v)
            continue;
        if (gbuf_grow(cb, 4 * SQ_CB_COL))
            return cb->err;
        sq_cb_i(cb, (int64_t)k[0], '\t');
        sq_cb_i(cb, (int64_t)k[1], '\t');
        sq_cb_i(cb, (int64_t)v[0], '\t');
        sq_cb_i(cb, (int64_t)v[1], '\n');
    }
    return sq_pg_merge_sql(s, cb, "ksstage", "kscope", sq_wsql[WS_KSCOPE]);
}
