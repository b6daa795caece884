/*
 * store_sql_q_kagg.c - a session's kernels by name: aggregate pages (from
 * the kagg rollup, never a scan of kernels or blocks, so they answer the
 * same whether kernels are rows or blocks) and two sessions compared by
 * name.  Aggregate pages are few rows, paged by offset.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv_json.h"
#include "store_sql_q.h"

/* One aggregate row, as read from kagg (+ its name). */
typedef struct agg_row {
    char *name;    /* display name, malloc'd, whole */
    char *mangled; /* recorded name (the key), malloc'd, whole */
    uint64_t n, total, min, max, p50, p99, n_occ;
    double sum_occ;
    int64_t regs, smem;
} agg_row;

static void agg_free(agg_row *rows, size_t n)
{
    for (size_t i = 0; i < n && rows; i++) {
        free(rows[i].name);
        free(rows[i].mangled);
    }
    free(rows);
}

/* The aggregate rows of a session, biggest total first (agg_free): the
 * first SQ_NAMES_MAX, or of those lim from off on (lim 0: all).  A page
 * reads its rows only: each row's histogram is decoded for its
 * percentiles, and on PostgreSQL the rows past a stop are sent anyway. */
static int agg_load(qctx *c, const char *namefilter, int64_t off, int64_t lim,
                    agg_row **out, size_t *nout)
{
    agg_row *rows = NULL;
    size_t n = 0, cap = 0;
    char pat[600];
    int rc;

    *out = NULL;
    *nout = 0;
    rc = q_prepare(c,
                   "SELECT coalesce(d.demangled, d.name, ''), a.n, a.total,"
                   " a.min, a.max, a.sum_occ, a.n_occ, a.regs, a.smem, a.hist,"
                   " coalesce(d.name, '') FROM kagg a LEFT JOIN dicts d ON"
                   " d.sess=a.sess AND d.id=a.name_id WHERE a.sess=?1 AND"
                   " (CAST(?2 AS TEXT) IS NULL OR d.name LIKE ?2 ESCAPE '\\'"
                   " OR d.demangled LIKE ?2 ESCAPE '\\') ORDER BY a.total"
                   " DESC, a.name_id LIMIT ?3 OFFSET ?4");
    if (rc)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 3, lim ? lim : SQ_NAMES_MAX);
    qbind_i64(c->st, 4, off);
    if (namefilter) {
        sq_like_pat(namefilter, pat, sizeof(pat));
        qbind_text(c->st, 2, pat);
    }
    while ((rc = sdb_step(c->st)) == SDB_ROW && n < SQ_NAMES_MAX) {
        agg_row *r;
        uint64_t h[RL_HIST_N];
        if (n == cap) {
            agg_row *nr =
                realloc(rows, (cap = cap ? cap * 2 : 64) * sizeof(*rows));
            if (!nr) {
                agg_free(rows, n);
                return GPUFL_ENOMEM;
            }
            rows = nr;
        }
        r = &rows[n];
        r->name = strdup(qcol_text(c->st, 0));
        r->mangled = strdup(qcol_text(c->st, 10));
        n++;
        if (!r->name || !r->mangled) {
            agg_free(rows, n);
            return GPUFL_ENOMEM;
        }
        r->n = (uint64_t)qcol_i64(c->st, 1);
        r->total = (uint64_t)qcol_i64(c->st, 2);
        r->min = (uint64_t)qcol_i64(c->st, 3);
        r->max = (uint64_t)qcol_i64(c->st, 4);
        r->sum_occ = qcol_f64(c->st, 5);
        r->n_occ = (uint64_t)qcol_i64(c->st, 6);
        r->regs = qcol_i64(c->st, 7);
        r->smem = qcol_i64(c->st, 8);
        memset(h, 0, sizeof(h));
        {
            size_t hn = 0;
            const void *hp = qcol_blob(c->st, 9, &hn);
            (void)rl_hist_decode_add(hp, hn, h);
        }
        r->p50 = rl_hist_quantile(h, r->n, 0.5);
        r->p99 = rl_hist_quantile(h, r->n, 0.99);
        /* the histogram's midpoint may fall outside the exact range */
        if (r->p50 < r->min)
            r->p50 = r->min;
        if (r->p99 > r->max)
            r->p99 = r->max;
        if (r->p50 > r->max)
            r->p50 = r->max;
        if (r->p99 < r->min)
            r->p99 = r->min;
    }
    if (rc != SDB_DONE && rc != SDB_ROW) {
        agg_free(rows, n);
        return sq_err(rc);
    }
    *out = rows;
    *nout = n;
    return GPUFL_OK;
}

static void w_agg(jw *w, const agg_row *r)
{
    srv_jw_kv_unum(w, "count", r->n);
    srv_jw_kv_udec(w, "total_ns", r->total);
    srv_jw_kv_udec(w, "avg_ns", r->n ? r->total / r->n : 0);
    srv_jw_kv_udec(w, "min_ns", r->min);
    srv_jw_kv_udec(w, "p50_ns", r->p50);
    srv_jw_kv_udec(w, "p99_ns", r->p99);
    srv_jw_kv_udec(w, "max_ns", r->max);
    jw_key(w, "occ_avg");
    if (r->n_occ)
        jw_f64(w, r->sum_occ / (double)r->n_occ, 4);
    else
        jw_null(w);
    srv_jw_kv_num(w, "regs", r->regs);
    srv_jw_kv_num(w, "smem", r->smem);
}

int srv_store_q_kernel_agg(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    agg_row *rows = NULL;
    size_t n = 0;
    int64_t off = 0;
    uint32_t l = q_limit(q);
    int rc;

    q_begin(s, &c);
    if ((rc = q_session(&c, q->sid)) != 0)
        return q_end(&c, rc, w);
    if (q_cursor(q, &off, 1) < 0 || off < 0)
        return q_end(&c, GPUFL_EINVAL, w);
    /* the page's rows and the one after it (is there more?), within the
     * first SQ_NAMES_MAX */
    if (off < SQ_NAMES_MAX &&
        (rc = agg_load(&c, q->name, off,
                       (int64_t)l + 1 < SQ_NAMES_MAX - off ? (int64_t)l + 1
                                                           : SQ_NAMES_MAX - off,
                       &rows, &n)) != 0)
        return q_end(&c, rc, w);
    jw_obj_begin(w);
    jw_kv_str(w, "percentiles", "log-histogram, within 3.2%");
    jw_key(w, "items");
    jw_arr_begin(w);
    for (size_t i = 0; i < n && i < l; i++) {
        jw_obj_begin(w);
        jw_kv_str(w, "name", rows[i].name);
        jw_kv_str(w, "mangled", rows[i].mangled);
        w_agg(w, &rows[i]);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    off += l;
    q_next(w, n > l, &off, 1);
    jw_obj_end(w);
    agg_free(rows, n);
    return q_end(&c, GPUFL_OK, w);
}

int srv_store_q_compare(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    agg_row *ra = NULL, *rb = NULL;
    size_t na = 0, nb = 0, l = q_limit(q);
    int rc;

    q_begin(s, &c);
    if ((rc = q_session(&c, q->sid)) != 0 ||
        (rc = agg_load(&c, q->name, 0, 0, &ra, &na)) != 0)
        goto out;
    if ((rc = q_session(&c, q->b_sid)) != 0 ||
        (rc = agg_load(&c, q->name, 0, 0, &rb, &nb)) != 0)
        goto out;
    jw_obj_begin(w);
    jw_kv_str(w, "a", q->sid);
    jw_kv_str(w, "b", q->b_sid);
    jw_key(w, "items");
    jw_arr_begin(w);
    /* a's names by total, then b's names a lacks (up to limit each),
     * matched by the whole recorded name: template instantiations that
     * read alike stay apart; quadratic in names, which SQ_NAMES_MAX caps */
    for (int pass = 0; pass < 2; pass++) {
        size_t nn = pass ? nb : na;
        const agg_row *src = pass ? rb : ra;
        for (size_t i = 0, out = 0; i < nn && out < l; i++) {
            const agg_row *x = NULL, *y = NULL;
            const agg_row *other = pass ? ra : rb;
            size_t no = pass ? na : nb;
            const agg_row *m = NULL;
            for (size_t j = 0; j < no; j++)
                if (strcmp(other[j].mangled, src[i].mangled) == 0) {
                    m = &other[j];
                    break;
                }
            if (pass && m)
                continue;
            x = pass ? NULL : &src[i];
            y = pass ? &src[i] : m;
            if (!pass)
                y = m;
            jw_obj_begin(w);
            jw_kv_str(w, "name", src[i].name);
            jw_kv_str(w, "mangled", src[i].mangled);
            jw_key(w, "a");
            if (x) {
                jw_obj_begin(w);
                w_agg(w, x);
                jw_obj_end(w);
            } else {
                jw_null(w);
            }
            jw_key(w, "b");
            if (y) {
                jw_obj_begin(w);
                w_agg(w, y);
                jw_obj_end(w);
            } else {
                jw_null(w);
            }
            if (x && y && x->n && y->n) {
                double aa = (double)x->total / (double)x->n;
                double ab = (double)y->total / (double)y->n;
                jw_key(w, "avg_change_pct");
                jw_f64(w, aa > 0 ? (ab - aa) * 100.0 / aa : 0, 2);
            }
            jw_obj_end(w);
            out++;
        }
    }
    jw_arr_end(w);
    jw_obj_end(w);
out:
    agg_free(ra, na);
    agg_free(rb, nb);
    return q_end(&c, rc, w);
}
