/*
 * store_sql_rollup.c - the rollups an ingest batch feeds (kernel
 * aggregates per name, timeline buckets, per-scope totals), gathered in
 * memory while the batch's lines go in and merged once per touched row at
 * the end, by the batch writer (kernel aggregates, timeline, scopes:
 * store_sql_ingest_sqlite.c, store_sql_ingest_pg.c) or here (session
 * counters, system sample buckets).
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- accumulation ---- */

/* The top of a timeline bucket: the longest, of equally long ones the
 * highest name id - the same whatever the order and batches kernels came
 * in (store_sql_q_tl0.c computes level 0 from the kernels). */
static void tl_top(sq_tl *t, uint64_t dur, int64_t name_id)
{
    if (dur > t->top_dur ||
        (dur == t->top_dur && name_id > (int64_t)t->top_name)) {
        t->top_dur = dur;
        t->top_name = (uint64_t)name_id;
    }
}

/* A run (sq_tlrun) into s->tl at its bucket of every level written. */
static int tl_push(srv_store *s, const sq_tlrun *r)
{
    rl_memo *memo = s->tl_memo[sq_memo_slot(r->lane)];
    int lv0 = s->kstore_blocks ? 1 : 0, fresh;
    unsigned sh0 = rl_tl_shift(lv0);

    for (int lv = lv0; lv < RL_TL_LEVELS; lv++) {
        uint64_t tk[4] = { (uint64_t)r->sess, (uint64_t)lv, r->lane,
                           r->b >> (rl_tl_shift(lv) - sh0) };
        sq_tl *t = rl_map_get_memo(&s->tl, &memo[lv], tk, &fresh);
        if (!t)
            return GPUFL_EFULL;
        t->n += r->n;
        t->busy = rl_sat_add(t->busy, r->busy);
        tl_top(t, r->top_dur, r->top_name);
    }
    return GPUFL_OK;
}

int sq_tl_runs_flush(srv_store *s)
{
    for (int i = 0; i < SQ_MEMO_N; i++) {
        sq_tlrun *r = &s->tl_run[i];
        int rc;
        if (!r->used)
            continue;
        r->used = 0;
        if ((rc = tl_push(s, r)) != 0)
            return rc;
    }
    return GPUFL_OK;
}

/* A kernel over more than one bucket of level lv0: its busy time spread
 * over each level's buckets it covers, or, past RL_TL_SPAN_MAX of them,
 * all in its first. */
static int tl_spread(srv_store *s, int64_t sess, const srv_ev *e,
                     const sq_launch *l, int lv0)
{
    uint64_t end = e->ts + e->dur,
             lane = e->dev << 32 | (e->stream & 0xffffffffu);
    rl_memo *memo = s->tl_memo[sq_memo_slot(lane)];
    int fresh;

    for (int lv = lv0; lv < RL_TL_LEVELS; lv++) {
        unsigned sh = rl_tl_shift(lv);
        uint64_t b0 = e->ts >> sh, b1 = e->dur ? (end - 1) >> sh : b0;
        int spread = b1 - b0 < RL_TL_SPAN_MAX;
        if (!spread)
            b1 = b0;
        for (uint64_t b = b0; b <= b1; b++) {
            uint64_t tk[4] = { (uint64_t)sess, (uint64_t)lv, lane, b };
            uint64_t lo = b << sh, hi = (b + 1) << sh;
            sq_tl *t = rl_map_get_memo(&s->tl, &memo[lv], tk, &fresh);
            if (!t)
                return GPUFL_EFULL;
            if (b == b0)
                t->n++;
            if (!spread)
                t->busy = rl_sat_add(t->busy, e->dur);
            else
                t->busy = rl_sat_add(t->busy, (end < hi ? end : hi) -
                                                  (e->ts > lo ? e->ts : lo));
            tl_top(t, e->dur, l->name_id);
        }
    }
    return GPUFL_OK;
}

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

    /* with blocks, level 0 is computed from the kernels when asked
     * (store_sql_q_tl0.c): not written */
    int lv0 = s->kstore_blocks ? 1 : 0;
    unsigned sh0 = rl_tl_shift(lv0);
    uint64_t b0 = e->ts >> sh0;

    if (!e->dur || (end - 1) >> sh0 == b0) {
        /* within one bucket: onto its lane's run (sq_tlrun) */
        sq_tlrun *r = &s->tl_run[sq_memo_slot(lane)];
        if (!r->used || r->b != b0 || r->lane != lane || r->sess != sess) {
            if (r->used && (rc = tl_push(s, r)) != 0)
                return rc;
            *r = (sq_tlrun){ .sess = sess, .lane = lane, .b = b0, .used = 1 };
        }
        r->n++;
        r->busy = rl_sat_add(r->busy, e->dur);
        if (e->dur > r->top_dur ||
            (e->dur == r->top_dur && l->name_id > r->top_name)) {
            r->top_dur = e->dur;
            r->top_name = l->name_id;
        }
    } else if ((rc = tl_spread(s, sess, e, l, lv0)) != 0) {
        return rc;
    }
    if (e->scope) {
        uint64_t sk[4] = { (uint64_t)sess, e->scope, 0, 0 };
        uint64_t *v = rl_map_get_memo(&s->kscope, &s->kscope_memo, sk, &fresh);
        if (!v)
            return GPUFL_EFULL;
        v[0]++;
        v[1] = rl_sat_add(v[1], e->dur);
    }
    return GPUFL_OK;
}

void sq_kagg_merge(sq_kagg *a, sdb_stmt *g, int c)
{
    size_t hn = 0;
    const char *h = qcol_blob(g, c + 8, &hn);
    uint64_t mn = (uint64_t)qcol_i64(g, c + 2);
    uint64_t mx = (uint64_t)qcol_i64(g, c + 3);

    a->n += (uint64_t)qcol_i64(g, c);
    a->total = rl_sat_add(a->total, (uint64_t)qcol_i64(g, c + 1));
    a->min = mn < a->min ? mn : a->min;
    a->max = mx > a->max ? mx : a->max;
    a->sum_occ += qcol_f64(g, c + 4);
    a->n_occ += (uint64_t)qcol_i64(g, c + 5);
    if (qcol_i64(g, c + 6) > a->regs)
        a->regs = qcol_i64(g, c + 6);
    if (qcol_i64(g, c + 7) > a->smem)
        a->smem = qcol_i64(g, c + 7);
    /* a malformed stored histogram (never written by this code) adds
     * what it decoded before the fault */
    (void)rl_hist_decode_add(h, hn, a->hist);
}

int sq_flush_sessions(srv_store *s, int64_t now)
{
    const uint64_t *k;
    int rc;

    for (size_t i = 0; i < s->sacc.cap; i++) {
        sq_sacc *a = rl_map_at(&s->sacc, i, &k);
        sdb_stmt *st = s->ws[WS_SESS_TOUCH];
        if (!a)
            continue;
        qbind_u64(st, 1, a->first);
        qbind_u64(st, 2, a->last);
        qbind_i64(st, 3, now);
        qbind_u64(st, 4, a->lines);
        qbind_u64(st, 5, a->kernels);
        qbind_u64(st, 6, a->ops);
        qbind_u64(st, 7, a->scopes);
        qbind_u64(st, 8, a->samples);
        qbind_u64(st, 9, a->profile);
        qbind_u64(st, 10, k[0]);
        qbind_i64(st, 11, a->api_lo);
        qbind_i64(st, 12, a->api_hi);
        qbind_i64(st, 13, a->op_lo);
        qbind_i64(st, 14, a->op_hi);
        if ((rc = qrun(st)) != 0)
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
        qbind_i64(g, 1, (int64_t)k[0]);
        qbind_i64(g, 2, (int64_t)k[1]);
        qbind_i64(g, 3, (int64_t)k[2]);
        rc = sdb_step(g);
        if (rc == SDB_ROW) {
            int64_t t0 = qcol_i64(g, 1);
            a->n += (uint64_t)qcol_i64(g, 0);
            if (t0 < a->t0)
                a->t0 = t0;
            for (int f = 0; f < SRV_SYS_NFIELDS; f++) {
                int c = 2 + 4 * f;
                double ct = qcol_null(g, c + 3) ? 0 : qcol_f64(g, c + 3);
                if (ct <= 0)
                    continue;
                if (!a->ct[f] || qcol_f64(g, c) < a->mn[f])
                    a->mn[f] = qcol_f64(g, c);
                if (!a->ct[f] || qcol_f64(g, c + 1) > a->mx[f])
                    a->mx[f] = qcol_f64(g, c + 1);
                a->sm[f] += qcol_f64(g, c + 2);
                a->ct[f] += ct;
            }
        }
        sdb_reset(g);
        if (rc != SDB_ROW && rc != SDB_DONE)
            return sq_err(rc);
        qbind_i64(p, 1, (int64_t)k[0]);
        qbind_i64(p, 2, (int64_t)k[1]);
        qbind_i64(p, 3, (int64_t)k[2]);
        qbind_i64(p, 4, a->t0);
        qbind_i64(p, 5, (int64_t)a->n);
        for (int f = 0; f < SRV_SYS_NFIELDS; f++) {
            int c = 6 + 4 * f;
            if (a->ct[f]) {
                qbind_f64(p, c, a->mn[f]);
                qbind_f64(p, c + 1, a->mx[f]);
                qbind_f64(p, c + 2, a->sm[f]);
            } else {
                qbind_null(p, c);
                qbind_null(p, c + 1);
                qbind_null(p, c + 2);
            }
            qbind_f64(p, c + 3, a->ct[f]);
        }
        if ((rc = qrun(p)) != 0)
            return rc;
    }
    return GPUFL_OK;
}
