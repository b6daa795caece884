/*
 * store_sql_ingest.c - one event batch into the database: sessions,
 * launch configurations, the line itself and the rollups, in one
 * transaction.
 *
 * Idempotency: every line lands in exactly one table whose primary key is
 * (session, seq) - plus the stream for types that occur in all three - and
 * goes in with INSERT ... ON CONFLICT DO NOTHING; sdb_changes() (or, for
 * PostgreSQL's kernels, the RETURNING of INSERT ... SELECT from a COPY
 * staging table) then says new or duplicate, and only new lines feed the
 * rollups.  Rollups are gathered in memory for the batch and merged once
 * per touched row; on PostgreSQL through staging tables too, so a batch
 * costs a handful of round trips, not one per row.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/jsonl.h"

/* ---- session ids ---- */

static int hexval(char c)
{
    return c >= 'a' ? c - 'a' + 10 : c - '0';
}

static void sid_key(const char *sid, uint64_t *k)
{
    k[0] = k[1] = k[2] = k[3] = 0;
    for (int i = 0, j = 0; sid[i]; i++) {
        if (sid[i] == '-')
            continue;
        k[j / 16] = k[j / 16] << 4 | (uint64_t)hexval(sid[i]);
        j++;
    }
}

static int sess_id(sq_store *s, const char *sid, int64_t *id)
{
    uint64_t k[4];
    int64_t *v;
    int fresh, rc;
    sdb_stmt *st;

    sid_key(sid, k);
    v = rl_map_find(&s->sess_cache, k);
    if (v) {
        *id = *v;
        return GPUFL_OK;
    }
    st = s->ws[WS_SESS_FIND];
    sdb_bind_text(st, 1, sid, strlen(sid));
    rc = sdb_step(st);
    if (rc == SDB_ROW) {
        *id = sdb_col_i64(st, 0);
        sdb_reset(st);
    } else {
        sdb_reset(st);
        if (rc != SDB_DONE)
            return sq_err(rc);
        st = s->ws[WS_SESS_ADD];
        sdb_bind_text(st, 1, sid, strlen(sid));
        sdb_bind_i64(st, 2, (int64_t)time(NULL));
        rc = sdb_step(st);
        if (rc == SDB_ROW)
            *id = sdb_col_i64(st, 0);
        sdb_reset(st);
        if (rc != SDB_ROW)
            return rc == SDB_DONE ? GPUFL_EINTERNAL : rc;
    }
    if (s->sess_cache.n >= SQ_CACHE_MAX)
        rl_map_clear(&s->sess_cache);
    v = rl_map_get(&s->sess_cache, k, &fresh);
    if (v)
        *v = *id;
    return GPUFL_OK;
}

/* The launch configuration a kernel refers to (cached per session). */
static int launch_get(sq_store *s, int64_t sess, uint64_t cfg, sq_launch *out)
{
    uint64_t k[4] = { (uint64_t)sess, cfg, 0, 0 };
    sq_launch *v = rl_map_find(&s->launch_cache, k);
    sdb_stmt *st = s->ws[WS_DICT_GET];
    int rc, fresh;

    if (v) {
        *out = *v;
        return GPUFL_OK;
    }
    memset(out, 0, sizeof(*out));
    out->occ = -1;
    bind_i(st, 1, (uint64_t)sess);
    bind_i(st, 2, cfg);
    rc = sdb_step(st);
    if (rc == SDB_ROW) {
        out->name_id = sdb_col_i64(st, 0);
        out->regs = sdb_col_i64(st, 1);
        out->smem = sdb_col_i64(st, 2) + sdb_col_i64(st, 3);
        out->occ = sdb_col_null(st, 4) ? -1 : sdb_col_f64(st, 4);
        out->bx = sdb_col_i64(st, 5);
        out->by = sdb_col_i64(st, 6);
        out->bz = sdb_col_i64(st, 7);
    }
    sdb_reset(st);
    if (rc != SDB_ROW && rc != SDB_DONE)
        return sq_err(rc);
    if (rc == SDB_DONE)
        return GPUFL_OK; /* unknown launch: not cached, it may come later */
    if (s->launch_cache.n >= SQ_CACHE_MAX)
        rl_map_clear(&s->launch_cache);
    v = rl_map_get(&s->launch_cache, k, &fresh);
    if (v)
        *v = *out;
    return GPUFL_OK;
}

/* ---- PostgreSQL COPY rows ---- */

static int cb_reserve(sq_cbuf *b, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        char *p;
        while (cap < b->len + n)
            cap *= 2;
        if (!(p = realloc(b->p, cap)))
            return GPUFL_ENOMEM;
        b->p = p;
        b->cap = cap;
    }
    return GPUFL_OK;
}

/* Appends v as a column, then sep ('\t' or '\n'); the caller has reserved
 * room (CB_COL bytes a column). */
#define CB_COL 32
static void cb_i(sq_cbuf *b, int64_t v, char sep)
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

static void cb_f(sq_cbuf *b, double v, char sep)
{
    /* the same text pg_bind_f64 sends */
    b->len += (size_t)snprintf(b->p + b->len, CB_COL, "%.17g", v);
    b->p[b->len++] = sep;
}

static void cb_null(sq_cbuf *b, char sep)
{
    memcpy(b->p + b->len, "\\N", 2);
    b->len += 2;
    b->p[b->len++] = sep;
}

/* ---- accumulation ---- */

static int acc_kernel(sq_store *s, int64_t sess, const srv_ev *e,
                      const sq_launch *l)
{
    uint64_t k[4] = { (uint64_t)sess, (uint64_t)l->name_id, 0, 0 };
    uint64_t end = e->ts + e->dur,
             lane = e->dev << 32 | (e->stream & 0xffffffffu);
    int fresh;
    sq_kagg *a = rl_map_get(&s->kagg, k, &fresh);

    if (!a)
        return GPUFL_EFULL;
    if (fresh)
        a->min = UINT64_MAX;
    a->n++;
    a->total += e->dur;
    if (e->dur < a->min)
        a->min = e->dur;
    if (e->dur > a->max)
        a->max = e->dur;
    if (l->occ >= 0) {
        a->sum_occ += l->occ;
        a->n_occ++;
    }
    if (l->regs > a->regs)
        a->regs = l->regs;
    if (l->smem > a->smem)
        a->smem = l->smem;
    a->hist[rl_hist_bucket(e->dur)]++;

    for (int lv = 0; lv < RL_TL_LEVELS; lv++) {
        unsigned sh = rl_tl_shift(lv);
        uint64_t b0 = e->ts >> sh, b1 = e->dur ? (end - 1) >> sh : b0;
        int spread = b1 - b0 < RL_TL_SPAN_MAX;
        if (!spread)
            b1 = b0;
        for (uint64_t b = b0; b <= b1; b++) {
            uint64_t tk[4] = { (uint64_t)sess, (uint64_t)lv, lane, b };
            uint64_t lo = b << sh, hi = (b + 1) << sh;
            sq_tl *t = rl_map_get(&s->tl, tk, &fresh);
            if (!t)
                return GPUFL_EFULL;
            if (b == b0)
                t->n++;
            if (!spread)
                t->busy += e->dur;
            else
                t->busy += (end < hi ? end : hi) - (e->ts > lo ? e->ts : lo);
            if (e->dur >= t->top_dur) {
                t->top_dur = e->dur;
                t->top_name = (uint64_t)l->name_id;
            }
        }
    }
    if (e->scope) {
        uint64_t sk[4] = { (uint64_t)sess, e->scope, 0, 0 };
        uint64_t *v = rl_map_get(&s->kscope, sk, &fresh);
        if (!v)
            return GPUFL_EFULL;
        v[0]++;
        v[1] += e->dur;
    }
    return GPUFL_OK;
}

/* Adds a stored kagg row (columns from c: n, total, min, max, sum_occ,
 * n_occ, regs, smem, hist) into the batch's accumulator. */
static void kagg_merge(sq_kagg *a, sdb_stmt *g, int c)
{
    size_t hn = 0;
    const char *h = sdb_col_blob(g, c + 8, &hn);
    uint64_t mn = (uint64_t)sdb_col_i64(g, c + 2);
    uint64_t mx = (uint64_t)sdb_col_i64(g, c + 3);

    a->n += (uint64_t)sdb_col_i64(g, c);
    a->total += (uint64_t)sdb_col_i64(g, c + 1);
    a->min = mn < a->min ? mn : a->min;
    a->max = mx > a->max ? mx : a->max;
    a->sum_occ += sdb_col_f64(g, c + 4);
    a->n_occ += (uint64_t)sdb_col_i64(g, c + 5);
    if (sdb_col_i64(g, c + 6) > a->regs)
        a->regs = sdb_col_i64(g, c + 6);
    if (sdb_col_i64(g, c + 7) > a->smem)
        a->smem = sdb_col_i64(g, c + 7);
    if (h && hn == sizeof(a->hist))
        for (int b = 0; b < RL_HIST_N; b++) {
            uint64_t v;
            memcpy(&v, h + b * 8, 8);
            a->hist[b] += v;
        }
}

static int flush_kagg(sq_store *s)
{
    const uint64_t *k;

    for (size_t i = 0; i < s->kagg.cap; i++) {
        sq_kagg *a = rl_map_at(&s->kagg, i, &k);
        sdb_stmt *g = s->ws[WS_KAGG_GET], *p = s->ws[WS_KAGG_PUT];
        int rc;
        if (!a)
            continue;
        bind_i(g, 1, k[0]);
        bind_i(g, 2, k[1]);
        rc = sdb_step(g);
        if (rc == SDB_ROW)
            kagg_merge(a, g, 0);
        sdb_reset(g);
        if (rc != SDB_ROW && rc != SDB_DONE)
            return sq_err(rc);
        bind_i(p, 1, k[0]);
        bind_i(p, 2, k[1]);
        bind_i(p, 3, a->n);
        bind_i(p, 4, a->total);
        bind_i(p, 5, a->min);
        bind_i(p, 6, a->max);
        sdb_bind_f64(p, 7, a->sum_occ);
        bind_i(p, 8, a->n_occ);
        bind_i(p, 9, (uint64_t)a->regs);
        bind_i(p, 10, (uint64_t)a->smem);
        sdb_bind_blob(p, 11, a->hist, sizeof(a->hist));
        if ((rc = step_done(p)) != 0)
            return rc;
    }
    return GPUFL_OK;
}

/* PostgreSQL: COPY the staged rows in s->cb into stage, then run the
 * upsert "INSERT INTO dst SELECT * FROM stage" plus the ON CONFLICT
 * clause of the row-at-a-time statement ws. */
static int stage_merge(sq_store *s, const char *stage, const char *dst, int ws)
{
    char sql[1024];
    int rc;

    snprintf(sql, sizeof(sql), "COPY %s FROM STDIN", stage);
    if ((rc = sdb_copy(s->w, sql, s->cb.p, s->cb.len)) != 0)
        return rc;
    snprintf(sql, sizeof(sql), "INSERT INTO %s SELECT * FROM %s%s", dst, stage,
             strstr(sq_wsql[ws], " ON CONFLICT"));
    return exec(s->w, sql);
}

/* PostgreSQL: the kernel aggregates in three round trips - the stored rows
 * for the batch's keys, merged here, COPYed back through kastage. */
static int flush_kagg_pg(sq_store *s)
{
    static const char hx[] = "0123456789abcdef";
    sdb_stmt *g = s->kaget;
    const uint64_t *k;
    int rc, first = 1;

    if (!s->kagg.n)
        return GPUFL_OK;
    /* the keys as two bigint[] literals, "{s,s,..}" then "{n,n,..}" */
    s->cb.len = 0;
    for (int col = 0; col < 2; col++) {
        size_t start = s->cb.len;
        first = 1;
        for (size_t i = 0; i < s->kagg.cap; i++) {
            if (!rl_map_at(&s->kagg, i, &k))
                continue;
            if (cb_reserve(&s->cb, CB_COL + 2))
                return GPUFL_ENOMEM;
            if (first)
                s->cb.p[s->cb.len++] = '{';
            first = 0;
            cb_i(&s->cb, (int64_t)k[col], ',');
        }
        s->cb.p[s->cb.len - 1] = '}';
        sdb_bind_text(g, col + 1, s->cb.p + start, s->cb.len - start);
    }
    while ((rc = sdb_step(g)) == SDB_ROW) {
        uint64_t gk[4] = { (uint64_t)sdb_col_i64(g, 0),
                           (uint64_t)sdb_col_i64(g, 1), 0, 0 };
        sq_kagg *a = rl_map_find(&s->kagg, gk);
        if (a)
            kagg_merge(a, g, 2);
    }
    sdb_reset(g);
    if (rc != SDB_DONE)
        return sq_err(rc);
    s->cb.len = 0;
    for (size_t i = 0; i < s->kagg.cap; i++) {
        sq_kagg *a = rl_map_at(&s->kagg, i, &k);
        const unsigned char *h;
        if (!a)
            continue;
        h = (const unsigned char *)a->hist;
        if (cb_reserve(&s->cb, 10 * CB_COL + 2 * sizeof(a->hist) + 8))
            return GPUFL_ENOMEM;
        cb_i(&s->cb, (int64_t)k[0], '\t');
        cb_i(&s->cb, (int64_t)k[1], '\t');
        cb_i(&s->cb, (int64_t)a->n, '\t');
        cb_i(&s->cb, (int64_t)a->total, '\t');
        cb_i(&s->cb, (int64_t)a->min, '\t');
        cb_i(&s->cb, (int64_t)a->max, '\t');
        cb_f(&s->cb, a->sum_occ, '\t');
        cb_i(&s->cb, (int64_t)a->n_occ, '\t');
        cb_i(&s->cb, a->regs, '\t');
        cb_i(&s->cb, a->smem, '\t');
        /* bytea hex; COPY text needs the backslash doubled */
        memcpy(s->cb.p + s->cb.len, "\\\\x", 3);
        s->cb.len += 3;
        for (size_t b = 0; b < sizeof(a->hist); b++) {
            s->cb.p[s->cb.len++] = hx[h[b] >> 4];
            s->cb.p[s->cb.len++] = hx[h[b] & 15];
        }
        s->cb.p[s->cb.len++] = '\n';
    }
    return stage_merge(s, "kastage", "kagg", WS_KAGG_PUT);
}

/* PostgreSQL: the timeline buckets and per-scope totals, each in one COPY
 * and one upsert (keys are unique within a batch, as ON CONFLICT DO
 * UPDATE requires). */
static int flush_rest_pg(sq_store *s)
{
    const uint64_t *k;
    int rc;

    s->cb.len = 0;
    for (size_t i = 0; i < s->tl.cap; i++) {
        sq_tl *t = rl_map_at(&s->tl, i, &k);
        if (!t)
            continue;
        if (cb_reserve(&s->cb, 8 * CB_COL))
            return GPUFL_ENOMEM;
        for (int j = 0; j < 4; j++)
            cb_i(&s->cb, (int64_t)k[j], '\t');
        cb_i(&s->cb, (int64_t)t->n, '\t');
        cb_i(&s->cb, (int64_t)t->busy, '\t');
        cb_i(&s->cb, (int64_t)t->top_name, '\t');
        cb_i(&s->cb, (int64_t)t->top_dur, '\n');
    }
    if (s->tl.n && (rc = stage_merge(s, "tlstage", "tl", WS_TL)) != 0)
        return rc;
    s->cb.len = 0;
    for (size_t i = 0; i < s->kscope.cap; i++) {
        uint64_t *v = rl_map_at(&s->kscope, i, &k);
        if (!v)
            continue;
        if (cb_reserve(&s->cb, 4 * CB_COL))
            return GPUFL_ENOMEM;
        cb_i(&s->cb, (int64_t)k[0], '\t');
        cb_i(&s->cb, (int64_t)k[1], '\t');
        cb_i(&s->cb, (int64_t)v[0], '\t');
        cb_i(&s->cb, (int64_t)v[1], '\n');
    }
    if (s->kscope.n && (rc = stage_merge(s, "ksstage", "kscope", WS_KSCOPE)))
        return rc;
    return GPUFL_OK;
}

static int flush_rest(sq_store *s, int64_t now)
{
    const uint64_t *k;
    int rc;

    if (s->pend && (rc = flush_rest_pg(s)) != 0)
        return rc;
    for (size_t i = 0; !s->pend && i < s->tl.cap; i++) {
        sq_tl *t = rl_map_at(&s->tl, i, &k);
        sdb_stmt *st = s->ws[WS_TL];
        if (!t)
            continue;
        for (int j = 0; j < 4; j++)
            bind_i(st, j + 1, k[j]);
        bind_i(st, 5, t->n);
        bind_i(st, 6, t->busy);
        bind_i(st, 7, t->top_name);
        bind_i(st, 8, t->top_dur);
        if ((rc = step_done(st)) != 0)
            return rc;
    }
    for (size_t i = 0; !s->pend && i < s->kscope.cap; i++) {
        uint64_t *v = rl_map_at(&s->kscope, i, &k);
        sdb_stmt *st = s->ws[WS_KSCOPE];
        if (!v)
            continue;
        bind_i(st, 1, k[0]);
        bind_i(st, 2, k[1]);
        bind_i(st, 3, v[0]);
        bind_i(st, 4, v[1]);
        if ((rc = step_done(st)) != 0)
            return rc;
    }
    for (size_t i = 0; i < s->sacc.cap; i++) {
        sq_sacc *a = rl_map_at(&s->sacc, i, &k);
        sdb_stmt *st = s->ws[WS_SESS_TOUCH];
        if (!a)
            continue;
        bind_i(st, 1, a->first);
        bind_i(st, 2, a->last);
        sdb_bind_i64(st, 3, now);
        bind_i(st, 4, a->lines);
        bind_i(st, 5, a->kernels);
        bind_i(st, 6, a->ops);
        bind_i(st, 7, a->scopes);
        bind_i(st, 8, a->samples);
        bind_i(st, 9, a->profile);
        bind_i(st, 10, k[0]);
        if ((rc = step_done(st)) != 0)
            return rc;
    }
    return GPUFL_OK;
}

/* ---- one line ---- */

static int put_stalls(sq_store *s, int64_t sess, const srv_ev *e)
{
    jsonl_tok tok[256];
    jsonl_doc d;
    uint32_t t;
    sdb_stmt *st = s->ws[WS_STALL];

    jsonl_doc_init(&d, tok, 256);
    if (jsonl_doc_parse_obj(&d, e->raw.p, e->raw.n))
        return GPUFL_OK; /* more tokens than this: stalls not itemised */
    t = jsonl_doc_find(&d, "stalls");
    if (jsonl_tok_type(&d, t) != JSONL_OBJECT)
        return GPUFL_OK;
    for (uint32_t i = 0, k = t + 1; i < d.tok[t].n; i++) {
        char key[72];
        size_t n;
        uint64_t v = 0;
        int rc;
        if (jsonl_tok_str(&d, k, key, sizeof(key), &n) == GPUFL_OK &&
            jsonl_tok_u64(&d, k + 1, &v) == GPUFL_OK) {
            bind_i(st, 1, (uint64_t)sess);
            bind_i(st, 2, e->seq);
            sdb_bind_text(st, 3, key, n);
            bind_i(st, 4, v);
            if ((rc = step_done(st)) != 0)
                return rc;
        }
        k = d.tok[k + 1].next;
    }
    return GPUFL_OK;
}

static int put_dict(sq_store *s, int64_t sess, const srv_ev *e)
{
    sdb_stmt *st = s->ws[WS_DICT];
    int rc;

    bind_i(st, 1, (uint64_t)sess);
    bind_i(st, 2, e->id);
    bind_i(st, 3, e->dkind);
    bind_s(st, 4, e->dname);
    bind_i(st, 5, e->name);
    bind_i(st, 6, e->parent);
    bind_i(st, 7, e->depth);
    bind_i(st, 8, e->regs);
    bind_i(st, 9, e->smem);
    bind_i(st, 10, e->dsmem);
    bind_i(st, 11, e->lmem);
    if (e->occ >= 0)
        sdb_bind_f64(st, 12, e->occ);
    else
        sdb_bind_null(st, 12);
    bind_s(st, 13, e->lim);
    for (int i = 0; i < 3; i++)
        bind_i(st, 14 + i, e->dkind == DK_LAUNCH ? e->block[i] : 0);
    if (e->dkind == DK_STACK)
        sdb_bind_text(st, 17, e->raw.p, e->raw.n);
    else
        sdb_bind_null(st, 17);
    rc = step_done(st);
    if (!rc && e->dkind == DK_LAUNCH) {
        /* a redefinition is identical by the format's rules: drop any
         * cached miss so kernels after it resolve */
        uint64_t k[4] = { (uint64_t)sess, e->id, 0, 0 };
        sq_launch *v = rl_map_find(&s->launch_cache, k);
        if (v)
            v->name_id = (int64_t)e->name;
    }
    return rc;
}

/* The kernel row's 24 parameters from index b + 1. */
static void bind_kernel(sdb_stmt *st, int b, int64_t sess, const srv_ev *e,
                        const sq_launch *l)
{
    bind_i(st, b + 1, (uint64_t)sess);
    bind_i(st, b + 2, e->seq);
    bind_i(st, b + 3, e->ts);
    bind_i(st, b + 4, e->dur);
    bind_i(st, b + 5, e->dev);
    bind_i(st, b + 6, e->stream);
    bind_i(st, b + 7, e->corr);
    sdb_bind_i64(st, b + 8, l->name_id);
    bind_i(st, b + 9, e->cfg);
    for (int i = 0; i < 3; i++)
        bind_i(st, b + 10 + i, e->grid[i]);
    sdb_bind_i64(st, b + 13, l->bx);
    sdb_bind_i64(st, b + 14, l->by);
    sdb_bind_i64(st, b + 15, l->bz);
    sdb_bind_i64(st, b + 16, l->regs);
    sdb_bind_i64(st, b + 17, l->smem);
    if (l->occ >= 0)
        sdb_bind_f64(st, b + 18, l->occ);
    else
        sdb_bind_null(st, b + 18);
    bind_i(st, b + 19, e->scope);
    bind_i(st, b + 20, e->path);
    bind_i(st, b + 21, e->stack);
    sdb_bind_i64(st, b + 22, e->api_off);
    bind_i(st, b + 23, e->api_dur);
    bind_i(st, b + 24, e->flags);
}

static int count_line(sq_store *s, int64_t sess, const srv_ev *e);

/* The kernel row as a COPY line, in the table's column order (as
 * bind_kernel). */
static int cb_kernel(sq_cbuf *b, int64_t sess, const srv_ev *e,
                     const sq_launch *l)
{
    int64_t v[24] = { sess,
                      (int64_t)e->seq,
                      (int64_t)e->ts,
                      (int64_t)e->dur,
                      (int64_t)e->dev,
                      (int64_t)e->stream,
                      (int64_t)e->corr,
                      l->name_id,
                      (int64_t)e->cfg,
                      (int64_t)e->grid[0],
                      (int64_t)e->grid[1],
                      (int64_t)e->grid[2],
                      l->bx,
                      l->by,
                      l->bz,
                      l->regs,
                      l->smem,
                      0,
                      (int64_t)e->scope,
                      (int64_t)e->path,
                      (int64_t)e->stack,
                      e->api_off,
                      (int64_t)e->api_dur,
                      (int64_t)e->flags };

    if (cb_reserve(b, 24 * CB_COL))
        return GPUFL_ENOMEM;
    for (int c = 0; c < 24; c++) {
        char sep = c + 1 < 24 ? '\t' : '\n';
        if (c != 17)
            cb_i(b, v[c], sep);
        else if (l->occ >= 0)
            cb_f(b, l->occ, sep);
        else
            cb_null(b, sep);
    }
    return GPUFL_OK;
}

/* PostgreSQL: the pending kernels COPYed into kstage and moved into
 * kernels by one INSERT ... SELECT ... RETURNING; the keys it returns are
 * the new rows, the rest were already stored. */
static int flush_pending(sq_store *s, srv_ingest_res *r)
{
    size_t n = s->npend;
    sdb_stmt *st = s->kmerge;
    int rc, fresh;

    if (!n)
        return GPUFL_OK;
    s->npend = 0;
    s->cb.len = 0;
    rl_map_clear(&s->pend_idx);
    for (size_t j = 0; j < n; j++) {
        uint64_t k[4] = { (uint64_t)s->pend[j].sess, s->pend[j].e->seq, 0, 0 };
        size_t *v = rl_map_get(&s->pend_idx, k, &fresh);
        if (!v)
            return GPUFL_EFULL;
        if (fresh)
            *v = j + 1; /* a key twice in one batch: the first is new */
        if ((rc = cb_kernel(&s->cb, s->pend[j].sess, s->pend[j].e,
                            &s->pend[j].l)) != 0)
            return rc;
    }
    /* a second flush in one transaction: the first one's rows are in
     * kernels already */
    if (s->staged && (rc = exec(s->w, "TRUNCATE kstage")) != 0)
        return rc;
    if ((rc = sdb_copy(s->w, "COPY kstage FROM STDIN", s->cb.p, s->cb.len)) !=
        0)
        return rc;
    s->staged = 1;
    while ((rc = sdb_step(st)) == SDB_ROW) {
        uint64_t k[4] = { (uint64_t)sdb_col_i64(st, 0),
                          (uint64_t)sdb_col_i64(st, 1), 0, 0 };
        size_t *v = rl_map_find(&s->pend_idx, k);
        if (v)
            s->pend[*v - 1].fresh = 1;
    }
    sdb_reset(st);
    if (rc != SDB_DONE)
        return sdb_err(rc);
    rc = GPUFL_OK;
    for (size_t j = 0; j < n && !rc; j++) {
        sq_pend *p = &s->pend[j];
        if (!p->fresh) {
            r->duplicate++;
            continue;
        }
        r->accepted++;
        rc = acc_kernel(s, p->sess, p->e, &p->l);
        if (!rc)
            rc = count_line(s, p->sess, p->e);
    }
    return rc;
}

static int put_line(sq_store *s, int64_t sess, const srv_ev *e, int *fresh)
{
    sdb_stmt *st;
    sq_launch l;
    int rc;

    switch (e->type) {
    case EV_KERNEL:
        if (e->cfg) {
            if ((rc = launch_get(s, sess, e->cfg, &l)) != 0)
                return rc;
        } else {
            l.name_id = (int64_t)e->name;
            l.regs = (int64_t)e->regs;
            l.smem = (int64_t)(e->smem + e->dsmem);
            l.occ = e->occ;
            l.bx = (int64_t)e->block[0];
            l.by = (int64_t)e->block[1];
            l.bz = (int64_t)e->block[2];
        }
        if (s->pend) {
            sq_pend *p = &s->pend[s->npend++];
            p->e = e;
            p->sess = sess;
            p->l = l;
            p->fresh = 0;
            *fresh = -1; /* counted when the batch's INSERT runs */
            return GPUFL_OK;
        }
        st = s->ws[WS_KERNEL];
        bind_kernel(st, 0, sess, e, &l);
        if ((rc = step_done(st)) != 0)
            return rc;
        *fresh = sdb_changes(s->w) > 0;
        return *fresh ? acc_kernel(s, sess, e, &l) : GPUFL_OK;
    case EV_MEMCPY:
    case EV_MEMSET:
    case EV_SYNC:
    case EV_ALLOC:
    case EV_FREE:
        st = s->ws[WS_OP];
        bind_i(st, 1, (uint64_t)sess);
        bind_i(st, 2, e->seq);
        bind_i(st, 3, e->type);
        bind_i(st, 4, e->ts);
        bind_i(st, 5, e->dur);
        bind_i(st, 6, e->dev);
        bind_i(st, 7, e->stream);
        bind_i(st, 8, e->corr);
        bind_s(st, 9, e->kind);
        bind_i(st, 10, e->bytes);
        bind_i(st, 11, e->scope);
        bind_i(st, 12, e->path);
        bind_i(st, 13, e->stack);
        bind_i(st, 14, e->flags);
        break;
    case EV_SCOPE_BEGIN:
    case EV_SCOPE_END:
        st = s->ws[WS_SCOPE];
        bind_i(st, 1, (uint64_t)sess);
        bind_i(st, 2, e->seq);
        bind_i(st, 3, e->type);
        bind_i(st, 4, e->id);
        bind_i(st, 5, e->ts);
        bind_i(st, 6, e->name);
        bind_i(st, 7, e->path);
        bind_i(st, 8, e->parent);
        bind_i(st, 9, e->depth);
        bind_i(st, 10, e->tid);
        bind_i(st, 11, e->dur);
        bind_i(st, 12, e->flags);
        break;
    case EV_SASS:
    case EV_PCSAMP:
        st = s->ws[WS_SASS];
        bind_i(st, 1, (uint64_t)sess);
        bind_i(st, 2, e->seq);
        bind_i(st, 3, e->type == EV_PCSAMP);
        bind_i(st, 4, e->dev);
        bind_i(st, 5, e->func);
        bind_i(st, 6, e->file);
        bind_i(st, 7, e->srcline);
        bind_i(st, 8, e->pc);
        bind_i(st, 9, e->inst);
        bind_i(st, 10, e->thread_inst);
        bind_i(st, 11, e->sectors);
        bind_i(st, 12, e->sectors_ideal);
        bind_i(st, 13, e->samples);
        bind_i(st, 14, e->scope);
        bind_i(st, 15, e->path);
        if ((rc = step_done(st)) != 0)
            return rc;
        *fresh = sdb_changes(s->w) > 0;
        return *fresh && e->type == EV_PCSAMP ? put_stalls(s, sess, e)
                                              : GPUFL_OK;
    case EV_GPU:
    case EV_HOST:
        st = s->ws[WS_SAMPLE];
        bind_i(st, 1, (uint64_t)sess);
        bind_i(st, 2, e->seq);
        bind_i(st, 3, e->ts);
        sdb_bind_i64(st, 4, e->type == EV_HOST ? -1 : (int64_t)e->dev);
        for (int i = 0; i < SRV_SYS_NFIELDS; i++) {
            if (e->sys_set & (1u << i))
                sdb_bind_f64(st, 5 + i, e->sys[i]);
            else
                sdb_bind_null(st, 5 + i);
        }
        break;
    default:
        /* session, session_end, dict, loss, marker, counter */
        st = s->ws[WS_LINE];
        bind_i(st, 1, (uint64_t)sess);
        bind_i(st, 2, e->st);
        bind_i(st, 3, e->seq);
        bind_i(st, 4, e->type);
        bind_i(st, 5, e->ts);
        if (e->type == EV_LOSS || e->type == EV_MARKER || e->type == EV_COUNTER)
            sdb_bind_text(st, 6, e->raw.p, e->raw.n);
        else
            sdb_bind_null(st, 6);
        if ((rc = step_done(st)) != 0)
            return rc;
        *fresh = sdb_changes(s->w) > 0;
        if (!*fresh)
            return GPUFL_OK;
        if (e->type == EV_DICT)
            return put_dict(s, sess, e);
        if (e->type == EV_SESSION) {
            st = s->ws[WS_SESS_HEADER];
            bind_s(st, 1, e->app);
            bind_s(st, 2, e->host);
            bind_i(st, 3, e->pid);
            bind_i(st, 4, e->start ? e->start : e->ts);
            bind_s(st, 5, e->text);
            bind_i(st, 6, e->simulated);
            sdb_bind_text(st, 7, e->raw.p, e->raw.n);
            bind_i(st, 8, (uint64_t)sess);
            return step_done(st);
        }
        if (e->type == EV_SESSION_END) {
            st = s->ws[WS_SESS_END];
            bind_s(st, 1, e->reason);
            bind_i(st, 2, (uint64_t)sess);
            return step_done(st);
        }
        return GPUFL_OK;
    }
    if ((rc = step_done(st)) != 0)
        return rc;
    *fresh = sdb_changes(s->w) > 0;
    return GPUFL_OK;
}

/* A new line's share of its session's counters and time span. */
static int count_line(sq_store *s, int64_t sess, const srv_ev *e)
{
    uint64_t k[4] = { (uint64_t)sess, 0, 0, 0 }, end = e->ts;
    int nf;
    sq_sacc *a = rl_map_get(&s->sacc, k, &nf);

    if (!a)
        return GPUFL_EFULL;
    if (nf || e->ts < a->first)
        a->first = e->ts;
    /* a kernel or copy ends at ts + dur; other lines' dur (scope,
     * session_end) ends at ts */
    if (e->type == EV_KERNEL || (e->type >= EV_MEMCPY && e->type <= EV_SYNC))
        end += e->dur;
    if (end > a->last)
        a->last = end;
    a->lines++;
    a->kernels += e->type == EV_KERNEL;
    a->ops += e->type >= EV_MEMCPY && e->type <= EV_FREE;
    a->scopes += e->type == EV_SCOPE_END;
    a->samples += e->type == EV_GPU || e->type == EV_HOST;
    a->profile += e->type == EV_SASS || e->type == EV_PCSAMP;
    return GPUFL_OK;
}

int sq_ingest(srv_store *bs, const srv_ev *ev, size_t n, srv_ingest_res *r)
{
    sq_store *s = (sq_store *)bs;
    int rc;

    r->accepted = r->duplicate = 0;
    pthread_mutex_lock(&s->wlock);
    rl_map_clear(&s->kagg);
    rl_map_clear(&s->tl);
    rl_map_clear(&s->kscope);
    rl_map_clear(&s->sacc);
    rc = sdb_begin(s->w);
    /* PostgreSQL with several servers: the kernel aggregates are merged
     * read-modify-write, so batches take turns as SQLite's write lock
     * makes them (held until COMMIT/ROLLBACK) */
    if (!rc && sdb_dialect(s->w) == SDB_POSTGRES)
        rc = exec(s->w, "SELECT pg_advisory_xact_lock(7242)");
    if (rc) {
        exec(s->w, "ROLLBACK");
        goto out;
    }
    s->npend = 0;
    s->staged = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const srv_ev *e = &ev[i];
        int64_t sess = 0;
        int fresh = 0;

        if ((rc = sess_id(s, e->sid, &sess)) != 0)
            break;
        if ((rc = put_line(s, sess, e, &fresh)) != 0)
            break;
        if (fresh < 0) {
            if (s->npend == SQ_PEND_MAX)
                rc = flush_pending(s, r);
            continue;
        }
        if (!fresh) {
            r->duplicate++;
            continue;
        }
        r->accepted++;
        rc = count_line(s, sess, e);
    }
    if (!rc)
        rc = flush_pending(s, r);
    if (!rc)
        rc = s->pend ? flush_kagg_pg(s) : flush_kagg(s);
    if (!rc)
        rc = flush_rest(s, (int64_t)time(NULL));
    if (!rc)
        rc = exec(s->w, "COMMIT");
    if (rc) {
        exec(s->w, "ROLLBACK");
        /* rowids and launches cached in the rolled-back transaction */
        rl_map_clear(&s->sess_cache);
        rl_map_clear(&s->launch_cache);
        r->accepted = r->duplicate = 0;
    }
out:
    pthread_mutex_unlock(&s->wlock);
    return rc;
}
