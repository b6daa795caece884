/*
 * store_sql_q_copies.c - a session's memory operations (memcpy, memset,
 * sync, alloc, free): a keyset-paginated page in time order, and their
 * totals by type and direction over the range, with the bandwidth of
 * copies.  From the `ops` rows and the op blocks (sq_ops_each): the
 * page's first l + 1 of both by (ts, seq) (sq_ops_first), the totals in
 * a table of (type, kind) groups.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <stdlib.h>
#include <string.h>

#include "srv_json.h"
#include "store_sql_q.h"

static const char *const op_names[] = { "memcpy", "memset", "sync", "alloc",
                                        "free" };

static int op_type(const char *kind)
{
    for (int i = 0; i < 5; i++)
        if (strcmp(kind, op_names[i]) == 0)
            return EV_MEMCPY + i;
    return -1;
}

/* Groups (type, kind) of the totals one answer holds: five types times
 * a handful of kinds in practice. */
#define SQ_COPIES_GROUPS 4096

/* The page's filter: type (0: any) in [from, to), after the cursor. */
typedef struct page_acc {
    sq_ops_first f;
    int64_t from, to, cts, cseq, type;
} page_acc;

static int page_add(void *arg, const oblock_ev *o)
{
    page_acc *p = arg;
    int64_t ts = (int64_t)o->ts, seq = (int64_t)o->seq;

    if (ts < p->from || ts >= p->to ||
        (ts < p->cts || (ts == p->cts && seq <= p->cseq)) ||
        (p->type && (int64_t)o->type != p->type))
        return GPUFL_OK;
    sq_ops_first_add(&p->f, o);
    return GPUFL_OK;
}

/* The totals of one (type, kind); kind_len < 0: no kind (NULL). */
typedef struct op_group {
    int64_t type, n, bytes, dur;
    int kind_len;
    char kind[OB_KIND_MAX + 1];
} op_group;

typedef struct group_acc {
    op_group *g;
    size_t n;
    int64_t from, to;
} group_acc;

static int group_cmp(const void *a, const void *b)
{
    const op_group *x = a, *y = b;
    size_t k;
    int c;

    if (x->type != y->type)
        return x->type < y->type ? -1 : 1;
    /* no kind first, then bytewise (SQLite's order of the rows before) */
    if (x->kind_len < 0 || y->kind_len < 0)
        return (y->kind_len < 0) - (x->kind_len < 0);
    k = (size_t)(x->kind_len < y->kind_len ? x->kind_len : y->kind_len);
    if ((c = memcmp(x->kind, y->kind, k)) != 0)
        return c;
    return (x->kind_len > y->kind_len) - (x->kind_len < y->kind_len);
}

static int group_put(group_acc *a, int64_t type, int kind_len, const char *kind,
                     int64_t n, int64_t bytes, int64_t dur)
{
    op_group key, *g = NULL;

    key.type = type;
    key.kind_len = kind_len;
    if (kind_len > 0)
        memcpy(key.kind, kind, (size_t)kind_len);
    for (size_t i = 0; i < a->n && !g; i++)
        if (!group_cmp(&a->g[i], &key))
            g = &a->g[i];
    if (!g) {
        if (a->n == SQ_COPIES_GROUPS)
            return GPUFL_EFULL;
        g = &a->g[a->n++];
        *g = key;
        g->kind[kind_len > 0 ? kind_len : 0] = '\0';
        g->n = g->bytes = g->dur = 0;
    }
    g->n += n;
    g->bytes += bytes;
    g->dur += dur;
    return GPUFL_OK;
}

static int group_add(void *arg, const oblock_ev *o)
{
    group_acc *a = arg;

    if ((int64_t)o->ts < a->from || (int64_t)o->ts >= a->to)
        return GPUFL_OK;
    return group_put(a, (int64_t)o->type, o->kind_len, o->kind, 1,
                     (int64_t)o->bytes, (int64_t)o->dur);
}

/* The page: the rows' first l + 1 by the index (LIMIT), and the blocks'. */
static int page_read(qctx *c, page_acc *p, uint32_t l)
{
    oblock_ev o;
    int rc;

    rc = q_prepare(c, "SELECT " SQ_OPS_COLS " FROM ops WHERE sess=?1 AND"
                      " ts >= ?2 AND ts < ?3 AND (ts, seq) > (?4, ?5) AND"
                      " (?6 = 0 OR type = ?6) ORDER BY ts, seq LIMIT ?7");
    if (rc)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, p->from);
    qbind_i64(c->st, 3, p->to);
    qbind_i64(c->st, 4, p->cts);
    qbind_i64(c->st, 5, p->cseq);
    qbind_i64(c->st, 6, p->type);
    qbind_i64(c->st, 7, l + 1);
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        sq_op_row(c->st, 0, &o);
        page_add(p, &o);
    }
    if (rc != SDB_DONE)
        return sq_err(rc);
    return sq_ops_each(c, p->cts > p->from ? p->cts : p->from, p->to - 1, 0,
                       page_add, p);
}

/* The totals: the rows' by SQL, the blocks' here. */
static int groups_read(qctx *c, group_acc *a)
{
    int rc = q_prepare(c, "SELECT type, kind, count(*), sum(bytes), sum(dur)"
                          " FROM ops WHERE sess=?1 AND ts >= ?2 AND ts < ?3"
                          " GROUP BY type, kind");

    if (rc)
        return rc;
    qbind_i64(c->st, 1, c->sess);
    qbind_i64(c->st, 2, a->from);
    qbind_i64(c->st, 3, a->to);
    while ((rc = sdb_step(c->st)) == SDB_ROW) {
        const char *k = qcol_null(c->st, 1) ? NULL : qcol_text(c->st, 1);
        int kl = k ? (int)strnlen(k, OB_KIND_MAX) : -1;
        if ((rc = group_put(a, qcol_i64(c->st, 0), kl, k, qcol_i64(c->st, 2),
                            qcol_i64(c->st, 3), qcol_i64(c->st, 4))) != 0)
            return rc;
    }
    if (rc != SDB_DONE)
        return sq_err(rc);
    return sq_ops_each(c, a->from, a->to - 1, 0, group_add, a);
}

static void item_put(jw *w, const oblock_ev *o)
{
    int t = (int)o->type - EV_MEMCPY;

    jw_obj_begin(w);
    srv_jw_kv_num(w, "seq", (int64_t)o->seq);
    jw_kv_str(w, "type", t >= 0 && t < 5 ? op_names[t] : "?");
    srv_jw_kv_dec(w, "ts", (int64_t)o->ts);
    srv_jw_kv_dec(w, "dur", (int64_t)o->dur);
    srv_jw_kv_num(w, "dev", (int64_t)o->dev);
    srv_jw_kv_num(w, "stream", (int64_t)o->stream);
    srv_jw_kv_num(w, "corr", (int64_t)o->corr);
    if (o->kind_len >= 0)
        jw_kv_str(w, "kind", o->kind);
    srv_jw_kv_dec(w, "bytes", (int64_t)o->bytes);
    srv_jw_kv_num(w, "scope", (int64_t)o->scope);
    srv_jw_kv_num(w, "flags", (int64_t)o->flags);
    jw_obj_end(w);
}

static void group_out(jw *w, const op_group *g)
{
    int t = (int)g->type - EV_MEMCPY;

    jw_obj_begin(w);
    jw_kv_str(w, "type", t >= 0 && t < 5 ? op_names[t] : "?");
    jw_kv_str(w, "kind", g->kind_len > 0 ? g->kind : "");
    srv_jw_kv_num(w, "count", g->n);
    srv_jw_kv_dec(w, "bytes", g->bytes);
    srv_jw_kv_dec(w, "dur_ns", g->dur);
    jw_key(w, "gbps"); /* bytes per ns = GB/s */
    if (g->dur > 0 && t == 0)
        jw_f64(w, (double)g->bytes / (double)g->dur, 3);
    else
        jw_null(w);
    jw_obj_end(w);
}

int srv_store_q_copies(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    int64_t cur[2] = { INT64_MIN, -1 }, last[2] = { 0, 0 };
    uint32_t l = q_limit(q);
    int type = q->kind ? op_type(q->kind) : 0, rc;
    page_acc p = { { 0 } };
    group_acc a = { 0 };
    size_t shown;

    if (type < 0)
        return GPUFL_EINVAL;
    q_begin(s, &c);
    if ((rc = q_session(&c, q->sid)) != 0)
        return q_end(&c, rc, w);
    if (q_cursor(q, cur, 2) < 0)
        return q_end(&c, GPUFL_EINVAL, w);
    if (cur[0] < (int64_t)q->from) {
        cur[0] = (int64_t)q->from; /* one bound on the index key */
        cur[1] = -1;
    }
    p.from = a.from = (int64_t)q->from;
    p.to = a.to = q->to ? (int64_t)q->to : INT64_MAX;
    p.cts = cur[0];
    p.cseq = cur[1];
    p.type = type;
    a.g = malloc(SQ_COPIES_GROUPS * sizeof(*a.g));
    if (sq_ops_first_init(&p.f, (size_t)l + 1) || !a.g) {
        rc = GPUFL_ENOMEM;
        goto out;
    }
    if ((rc = page_read(&c, &p, l)) != 0)
        goto out;
    sq_ops_first_sort(&p.f);
    shown = p.f.n < l ? p.f.n : l;
    jw_obj_begin(w);
    jw_key(w, "items");
    jw_arr_begin(w);
    for (size_t i = 0; i < shown; i++) {
        item_put(w, &p.f.h[i]);
        last[0] = (int64_t)p.f.h[i].ts;
        last[1] = (int64_t)p.f.h[i].seq;
    }
    jw_arr_end(w);
    q_next(w, p.f.n > l, last, 2);
    /* aggregates by type and direction over the whole range */
    if ((rc = groups_read(&c, &a)) != 0)
        goto out;
    qsort(a.g, a.n, sizeof(*a.g), group_cmp);
    jw_key(w, "aggregate");
    jw_arr_begin(w);
    for (size_t i = 0; i < a.n; i++)
        group_out(w, &a.g[i]);
    jw_arr_end(w);
    jw_obj_end(w);
out:
    sq_ops_first_free(&p.f);
    free(a.g);
    return q_end(&c, rc, w);
}
