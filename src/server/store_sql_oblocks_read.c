/*
 * store_sql_oblocks_read.c - a session's ops (copies, memsets, syncs,
 * allocs, frees) of a time range, from its `ops` rows (a database written
 * before schema 32, or with --kernel-store=rows) and its op blocks
 * (table oblocks, store_sql_oblocks_ingest.c), for the readers that
 * filter them in C (store_sql_q_copies.c, _export.c, _calls.c).
 *
 * Ops are few next to kernels (a copy or sync per tens of kernels): a
 * range's blocks are decoded whole and filtered here.  Blocks are found
 * by their start (oblocks_t, on (sess, ts_lo)) and end: a block holds a
 * batch's ops, so its time span is a batch's.
 *
 * A block's bytes come through sq_ob_bytes (here), the cold tier's hook
 * for op blocks as sq_kb_bytes is for kernel blocks: the ingest's
 * duplicate check and the compactor read them through it too.
 */
#include "store_sql_int.h"
#include "store_sql_blocks_w.h"

#include <gpufl/gpufl.h>

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "store_sql_q.h"

/* Where each column of SQ_OPS_COLS goes in an oblock_ev (every field 8
 * bytes); the kind (column 7) is text. */
#define SQ_OPS_KIND 7
static const size_t row_off[16] = {
    offsetof(oblock_ev, seq),     offsetof(oblock_ev, type),
    offsetof(oblock_ev, ts),      offsetof(oblock_ev, dur),
    offsetof(oblock_ev, dev),     offsetof(oblock_ev, stream),
    offsetof(oblock_ev, corr),    0,
    offsetof(oblock_ev, bytes),   offsetof(oblock_ev, scope),
    offsetof(oblock_ev, path),    offsetof(oblock_ev, stack),
    offsetof(oblock_ev, flags),   offsetof(oblock_ev, tid),
    offsetof(oblock_ev, api_off), offsetof(oblock_ev, api_dur)
};

void sq_op_row(sdb_stmt *st, int i0, oblock_ev *o)
{
    const char *k;

    /* NULL reads 0: the block's "absent" for tid, and what the rows'
     * readers took it as before */
    for (int c = 0; c < 16; c++)
        if (c != SQ_OPS_KIND) {
            int64_t v = qcol_i64(st, i0 + c);
            memcpy((char *)o + row_off[c], &v, sizeof(v));
        }
    if (qcol_null(st, i0 + SQ_OPS_KIND)) {
        o->kind_len = -1;
        o->kind[0] = '\0';
        return;
    }
    /* a row's kind was capped at ingest as a block's is (ingest.c) */
    k = qcol_text(st, i0 + SQ_OPS_KIND);
    o->kind_len = (int)strnlen(k, OB_KIND_MAX);
    memcpy(o->kind, k, (size_t)o->kind_len);
    o->kind[o->kind_len] = '\0';
}

int sq_ob_bytes(srv_store *s, sdb_stmt *st, int col, int64_t sess,
                int64_t seq_lo, const unsigned char **b, size_t *len)
{
    *len = 0;
    *b = qcol_blob(st, col, len);
    if (*b && sq_kc_is_stub(*b, *len))
        return sq_kc_bytes(s, SQ_KC_OPS, sess, 0, seq_lo, b, len);
    if (!*b || !*len) {
        glog_error("oblocks", "session %lld seq %lld: op block has no bytes",
                   (long long)sess, (long long)seq_lo);
        return GPUFL_EINTERNAL;
    }
    return GPUFL_OK;
}

/* st prepared on c's connection with the session and [lo, hi] bound as
 * ?1, ?2, ?3; 0 or GPUFL_EINTERNAL. */
static int range_stmt(qctx *c, const char *sql, int64_t lo, int64_t hi,
                      sdb_stmt **st)
{
    if (sdb_prepare(c->db, sql, st))
        return GPUFL_EINTERNAL;
    qbind_i64(*st, 1, c->sess);
    qbind_i64(*st, 2, lo);
    qbind_i64(*st, 3, hi);
    return GPUFL_OK;
}

int sq_ops_each(qctx *c, int64_t lo, int64_t hi, int rows, sq_op_fn fn,
                void *arg)
{
    sdb_stmt *st = NULL;
    oblock_dec *d = NULL;
    oblock_ev *ev = NULL, o;
    char why[128] = "";
    int rc = GPUFL_OK, sr = SDB_DONE;
    int64_t span;

    if (lo > hi)
        return GPUFL_OK;
    if (rows) {
        if (range_stmt(c,
                       "SELECT " SQ_OPS_COLS " FROM ops WHERE sess=?1 AND"
                       " ts >= ?2 AND ts <= ?3",
                       lo, hi, &st))
            return GPUFL_EINTERNAL;
        while (!rc && (sr = sdb_step(st)) == SDB_ROW) {
            sq_op_row(st, 0, &o);
            rc = fn(arg, &o);
        }
        if (!rc && sr != SDB_DONE)
            rc = sq_err(sr);
        sdb_finalize(st);
        st = NULL;
        if (rc)
            return rc;
    }
    /* a block meeting [lo, hi] starts at lo - span or later (span: the
     * session's longest, obspan), so the range of oblocks_t starts there,
     * not at the session's first block; every row it visits comes back
     * (the payload only of those that meet the range), so that it is
     * counted */
    if ((rc = sq_span_get(c->db, 1, c->sess, &span)) != 0)
        return rc;
    if (range_stmt(c,
                   "SELECT CASE WHEN ts_hi >= ?2 THEN payload END, seq_lo"
                   " FROM oblocks WHERE sess=?1 AND ts_lo <= ?3 AND"
                   " ts_lo >= ?4",
                   lo, hi, &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 4, lo < INT64_MIN + span ? INT64_MIN : lo - span);
    while (!rc && (sr = sdb_step(st)) == SDB_ROW) {
        size_t len = 0, n = 0;
        const unsigned char *b = NULL;
        __atomic_fetch_add(&c->s->kq_ob_rows, 1, __ATOMIC_RELAXED);
        if (qcol_null(st, 0))
            continue;
        if ((rc = sq_ob_bytes(c->s, st, 0, c->sess, qcol_i64(st, 1), &b,
                              &len)) != 0)
            break;
        /* the codec's state only once a block is there to read */
        if (!d && (!(d = oblock_dec_new()) ||
                   !(ev = malloc(OB_MAX_EVENTS * sizeof(*ev))))) {
            rc = GPUFL_ENOMEM;
            break;
        }
        if (oblock_decode(d, b, len, ev, OB_MAX_EVENTS, &n, why, sizeof(why))) {
            glog_error("oblocks", "session %lld: unreadable op block: %s",
                       (long long)c->sess, why);
            rc = GPUFL_EINTERNAL;
            break;
        }
        for (size_t i = 0; i < n && !rc; i++)
            if ((int64_t)ev[i].ts >= lo && (int64_t)ev[i].ts <= hi)
                rc = fn(arg, &ev[i]);
    }
    if (!rc && sr != SDB_DONE && sr != SDB_ROW)
        rc = sq_err(sr);
    sdb_finalize(st);
    oblock_dec_free(d);
    free(ev);
    return rc;
}

int sq_ops_max_dur(qctx *c, const char *types, int64_t *back)
{
    char sql[256];
    sdb_stmt *st = NULL;
    int64_t m[2] = { 0, 0 };
    int rc;

    /* a block's longest covers all its types: a bound, never short */
    snprintf(sql, sizeof(sql),
             "SELECT coalesce(max(dur), 0) FROM ops WHERE sess=?1 AND type"
             " IN (%s) UNION ALL SELECT coalesce(max(max_dur), 0) FROM"
             " oblocks WHERE sess=?1",
             types);
    if (sdb_prepare(c->db, sql, &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, c->sess);
    for (int i = 0; i < 2; i++) {
        if ((rc = sdb_step(st)) != SDB_ROW) {
            sdb_finalize(st);
            return sq_err(rc);
        }
        m[i] = qcol_i64(st, 0);
    }
    sdb_finalize(st);
    *back = m[0] > m[1] ? m[0] : m[1];
    return GPUFL_OK;
}

/* ---- the first ops by (ts, seq) ---- */

/* (ts, seq) order, as the SQL compares them (signed). */
static int op_cmp(const oblock_ev *a, const oblock_ev *b)
{
    if ((int64_t)a->ts != (int64_t)b->ts)
        return (int64_t)a->ts < (int64_t)b->ts ? -1 : 1;
    return (int64_t)a->seq < (int64_t)b->seq   ? -1
           : (int64_t)a->seq > (int64_t)b->seq ? 1
                                               : 0;
}

static int op_qcmp(const void *a, const void *b)
{
    return op_cmp(a, b);
}

static void op_swap(oblock_ev *a, oblock_ev *b)
{
    oblock_ev t = *a;
    *a = *b;
    *b = t;
}

int sq_ops_first_init(sq_ops_first *f, size_t cap)
{
    f->n = 0;
    f->cap = cap;
    f->h = malloc((cap ? cap : 1) * sizeof(*f->h));
    return f->h ? GPUFL_OK : GPUFL_ENOMEM;
}

void sq_ops_first_add(sq_ops_first *f, const oblock_ev *o)
{
    size_t i = 0;

    if (f->n < f->cap) {
        /* up from the new leaf: h[0] stays the last kept */
        i = f->n++;
        f->h[i] = *o;
        for (; i && op_cmp(&f->h[(i - 1) / 2], &f->h[i]) < 0; i = (i - 1) / 2)
            op_swap(&f->h[(i - 1) / 2], &f->h[i]);
        return;
    }
    if (!f->cap || op_cmp(o, &f->h[0]) >= 0)
        return;
    f->h[0] = *o;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < f->n && op_cmp(&f->h[l], &f->h[m]) > 0)
            m = l;
        if (r < f->n && op_cmp(&f->h[r], &f->h[m]) > 0)
            m = r;
        if (m == i)
            return;
        op_swap(&f->h[i], &f->h[m]);
        i = m;
    }
}

void sq_ops_first_sort(sq_ops_first *f)
{
    qsort(f->h, f->n, sizeof(*f->h), op_qcmp);
}

void sq_ops_first_free(sq_ops_first *f)
{
    free(f->h);
    f->h = NULL;
    f->n = f->cap = 0;
}
