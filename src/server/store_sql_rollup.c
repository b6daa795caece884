/*
 * store_sql_rollup.c - the rollups an ingest batch feeds (kernel
 * aggregates per name, timeline buckets, per-scope totals), gathered in
 * memory while the batch's lines go in and merged once per touched row at
 * the end; on PostgreSQL through COPY into staging tables, so a batch
 * costs a handful of round trips.  Also the COPY text-row helpers.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- PostgreSQL COPY rows ---- */

int sq_cb_reserve(sq_cbuf *b, size_t n)
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

void sq_cb_i(sq_cbuf *b, int64_t v, char sep)
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

void sq_cb_text(sq_cbuf *b, const char *p, size_t n, char sep)
{
    /* COPY's text format: backslash, tab, newline and CR escaped; text
     * stops at a NUL (PostgreSQL text cannot hold one) */
    for (size_t i = 0; i < n && p[i]; i++) {
        char c = p[i];
        if (c == '\\' || c == '\t' || c == '\n' || c == '\r') {
            b->p[b->len++] = '\\';
            c = c == '\t' ? 't' : c == '\n' ? 'n' : c == '\r' ? 'r' : c;
        }
        b->p[b->len++] = c;
    }
    b->p[b->len++] = sep;
}

void sq_cb_f(sq_cbuf *b, double v, char sep)
{
    /* the same text pg_bind_f64 sends */
    b->len += (size_t)snprintf(b->p + b->len, CB_COL, "%.17g", v);
    b->p[b->len++] = sep;
}

void sq_cb_null(sq_cbuf *b, char sep)
{
    memcpy(b->p + b->len, "\\N", 2);
    b->len += 2;
    b->p[b->len++] = sep;
}

/* ---- accumulation ---- */

int sq_acc_kernel(srv_store *s, int64_t sess, const srv_ev *e,
                  const sq_launch *l)
{
    uint64_t k[4] = { (uint64_t)sess, (uint64_t)l->name_id, 0, 0 };
    uint64_t end = e->ts + e->dur,
             lane = e->dev << 32 | (e->stream & 0xffffffffu);
    int fresh;
    /* the session's longest and shortest kernels (store_sql_ext.c) */
    int rc = sq_ext_add(s, sess, (int64_t)e->dur, (int64_t)e->seq);
    sq_kagg *a = rc ? NULL : rl_map_get(&s->kagg, k, &fresh);

    if (rc)
        return rc;
    if (!a)
        return GPUFL_EFULL;
    if (fresh)
        a->min = UINT64_MAX;
    a->n++;
    a->total = rl_sat_add(a->total, e->dur);
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
                t->busy = rl_sat_add(t->busy, e->dur);
            else
                t->busy = rl_sat_add(t->busy, (end < hi ? end : hi) -
                                                  (e->ts > lo ? e->ts : lo));
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
        v[1] = rl_sat_add(v[1], e->dur);
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
    a->total = rl_sat_add(a->total, (uint64_t)sdb_col_i64(g, c + 1));
    a->min = mn < a->min ? mn : a->min;
    a->max = mx > a->max ? mx : a->max;
    a->sum_occ += sdb_col_f64(g, c + 4);
    a->n_occ += (uint64_t)sdb_col_i64(g, c + 5);
    if (sdb_col_i64(g, c + 6) > a->regs)
        a->regs = sdb_col_i64(g, c + 6);
    if (sdb_col_i64(g, c + 7) > a->smem)
        a->smem = sdb_col_i64(g, c + 7);
    /* a malformed stored histogram (never written by this code) adds
     * what it decoded before the fault */
    (void)rl_hist_decode_add(h, hn, a->hist);
}

int sq_flush_kagg(srv_store *s)
{
    const uint64_t *k;
    unsigned char enc[RL_HIST_ENC_MAX];

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
        sdb_bind_blob(p, 11, enc, rl_hist_encode(a->hist, enc));
        if ((rc = step_done(p)) != 0)
            return rc;
    }
    return GPUFL_OK;
}

/* PostgreSQL: COPY the staged rows in s->cb into stage, then run the
 * upsert "INSERT INTO dst SELECT * FROM stage" plus the ON CONFLICT
 * clause of the row-at-a-time statement ws. */
static int stage_merge(srv_store *s, const char *stage, const char *dst, int ws)
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
int sq_flush_kagg_pg(srv_store *s)
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
            if (sq_cb_reserve(&s->cb, CB_COL + 2))
                return GPUFL_ENOMEM;
            if (first)
                s->cb.p[s->cb.len++] = '{';
            first = 0;
            sq_cb_i(&s->cb, (int64_t)k[col], ',');
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
        unsigned char h[RL_HIST_ENC_MAX];
        size_t hn;
        if (!a)
            continue;
        hn = rl_hist_encode(a->hist, h);
        if (sq_cb_reserve(&s->cb, 10 * CB_COL + 2 * hn + 8))
            return GPUFL_ENOMEM;
        sq_cb_i(&s->cb, (int64_t)k[0], '\t');
        sq_cb_i(&s->cb, (int64_t)k[1], '\t');
        sq_cb_i(&s->cb, (int64_t)a->n, '\t');
        sq_cb_i(&s->cb, (int64_t)a->total, '\t');
        sq_cb_i(&s->cb, (int64_t)a->min, '\t');
        sq_cb_i(&s->cb, (int64_t)a->max, '\t');
        sq_cb_f(&s->cb, a->sum_occ, '\t');
        sq_cb_i(&s->cb, (int64_t)a->n_occ, '\t');
        sq_cb_i(&s->cb, a->regs, '\t');
        sq_cb_i(&s->cb, a->smem, '\t');
        /* bytea hex; COPY text needs the backslash doubled */
        memcpy(s->cb.p + s->cb.len, "\\\\x", 3);
        s->cb.len += 3;
        for (size_t b = 0; b < hn; b++) {
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
static int flush_rest_pg(srv_store *s)
{
    const uint64_t *k;
    int rc;

    s->cb.len = 0;
    for (size_t i = 0; i < s->tl.cap; i++) {
        sq_tl *t = rl_map_at(&s->tl, i, &k);
        if (!t)
            continue;
        if (sq_cb_reserve(&s->cb, 8 * CB_COL))
            return GPUFL_ENOMEM;
        for (int j = 0; j < 4; j++)
            sq_cb_i(&s->cb, (int64_t)k[j], '\t');
        sq_cb_i(&s->cb, (int64_t)t->n, '\t');
        sq_cb_i(&s->cb, (int64_t)t->busy, '\t');
        sq_cb_i(&s->cb, (int64_t)t->top_name, '\t');
        sq_cb_i(&s->cb, (int64_t)t->top_dur, '\n');
    }
    if (s->tl.n && (rc = stage_merge(s, "tlstage", "tl", WS_TL)) != 0)
        return rc;
    s->cb.len = 0;
    for (size_t i = 0; i < s->kscope.cap; i++) {
        uint64_t *v = rl_map_at(&s->kscope, i, &k);
        if (!v)
            continue;
        if (sq_cb_reserve(&s->cb, 4 * CB_COL))
            return GPUFL_ENOMEM;
        sq_cb_i(&s->cb, (int64_t)k[0], '\t');
        sq_cb_i(&s->cb, (int64_t)k[1], '\t');
        sq_cb_i(&s->cb, (int64_t)v[0], '\t');
        sq_cb_i(&s->cb, (int64_t)v[1], '\n');
    }
    if (s->kscope.n && (rc = stage_merge(s, "ksstage", "kscope", WS_KSCOPE)))
        return rc;
    return GPUFL_OK;
}

int sq_flush_rest(srv_store *s, int64_t now)
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

/* ---- system samples per 60 s bucket (srl) ---- */

int sq_acc_sample(srv_store *s, int64_t sess, const srv_ev *e)
{
    int64_t src = e->type == EV_HOST ? -1 : (int64_t)e->dev;
    uint64_t k[4] = { (uint64_t)sess, (uint64_t)src,
                      e->ts / (uint64_t)SQ_SRL_NS, 0 };
    int fresh;
    sq_srl *a = rl_map_get(&s->srl, k, &fresh);

    if (!a)
        return GPUFL_EFULL;
    if (fresh) {
        memset(a, 0, sizeof(*a));
        a->t0 = (int64_t)e->ts;
    }
    if ((int64_t)e->ts < a->t0)
        a->t0 = (int64_t)e->ts;
    a->n++;
    for (int i = 0; i < SRV_SYS_NFIELDS; i++) {
        double v = e->sys[i];
        if (!(e->sys_set & (1u << i)))
            continue;
        if (!a->ct[i] || v < a->mn[i])
            a->mn[i] = v;
        if (!a->ct[i] || v > a->mx[i])
            a->mx[i] = v;
        a->sm[i] += v;
        a->ct[i]++;
    }
    return GPUFL_OK;
}

/* Each bucket of the batch: read the stored one, merge, write back (the
 * write lock - PostgreSQL: the batch's advisory lock - makes that safe).
 * System samples come a few a second, so a batch touches few buckets. */
int sq_flush_srl(srv_store *s)
{
    const uint64_t *k;

    for (size_t i = 0; i < s->srl.cap; i++) {
        sq_srl *a = rl_map_at(&s->srl, i, &k);
        sdb_stmt *g = s->ws[WS_SRL_GET], *p = s->ws[WS_SRL_PUT];
        int rc;
        if (!a)
            continue;
        sdb_bind_i64(g, 1, (int64_t)k[0]);
        sdb_bind_i64(g, 2, (int64_t)k[1]);
        sdb_bind_i64(g, 3, (int64_t)k[2]);
        rc = sdb_step(g);
        if (rc == SDB_ROW) {
            int64_t t0 = sdb_col_i64(g, 1);
            a->n += (uint64_t)sdb_col_i64(g, 0);
            if (t0 < a->t0)
                a->t0 = t0;
            for (int f = 0; f < SRV_SYS_NFIELDS; f++) {
                int c = 2 + 4 * f;
                double ct = sdb_col_null(g, c + 3) ? 0 : sdb_col_f64(g, c + 3);
                if (ct <= 0)
                    continue;
                if (!a->ct[f] || sdb_col_f64(g, c) < a->mn[f])
                    a->mn[f] = sdb_col_f64(g, c);
                if (!a->ct[f] || sdb_col_f64(g, c + 1) > a->mx[f])
                    a->mx[f] = sdb_col_f64(g, c + 1);
                a->sm[f] += sdb_col_f64(g, c + 2);
                a->ct[f] += ct;
            }
        }
        sdb_reset(g);
        if (rc != SDB_ROW && rc != SDB_DONE)
            return sq_err(rc);
        sdb_bind_i64(p, 1, (int64_t)k[0]);
        sdb_bind_i64(p, 2, (int64_t)k[1]);
        sdb_bind_i64(p, 3, (int64_t)k[2]);
        sdb_bind_i64(p, 4, a->t0);
        sdb_bind_i64(p, 5, (int64_t)a->n);
        for (int f = 0; f < SRV_SYS_NFIELDS; f++) {
            int c = 6 + 4 * f;
            if (a->ct[f]) {
                sdb_bind_f64(p, c, a->mn[f]);
                sdb_bind_f64(p, c + 1, a->mx[f]);
                sdb_bind_f64(p, c + 2, a->sm[f]);
            } else {
                sdb_bind_null(p, c);
                sdb_bind_null(p, c + 1);
                sdb_bind_null(p, c + 2);
            }
            sdb_bind_f64(p, c + 3, a->ct[f]);
        }
        if ((rc = step_done(p)) != 0)
            return rc;
    }
    return GPUFL_OK;
}
