/*
 * store_sql_q_export.c - a time range of a session as a Chrome trace-event
 * JSON file (docs/api.md "export"), built from the stored rows: kernels,
 * copies and memsets on their GPU and stream, API calls and syncs on their
 * CPU thread with an arrow from each launch to its kernel, scope instances
 * on their thread.  The layout and the event members are `gpufl export`'s
 * (src/common/trace.h writes both).
 *
 * An export holds at most SQ_EXP_* items of each kind.  Each kind is read
 * in time order with one row more than its cap; where a kind has more,
 * the export stops at the time T of the first item left out (every kind
 * cut there), so what it holds is complete for [from, T), and says so -
 * or, unless truncation was asked, the answer is a 413.
 *
 * This file reads the range; store_sql_q_export_trace.c writes it.
 */
#include "store_sql_int.h"
#include "store_sql_kblocks_read.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonl.h"
#include "kblock.h"
#include "srv_json.h"
#include "store_sql_q.h"

#include "store_sql_q_export_int.h"

static void list_free(ex_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].name);
        free(l->v[i].mangled);
    }
    free(l->v);
}

/* Room for one more item; NULL when out of memory. */
static ex_item *list_add(ex_list *l)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 256;
        ex_item *v = realloc(l->v, nc * sizeof(*v));
        if (!v)
            return NULL;
        l->v = v;
        l->cap = nc;
    }
    memset(&l->v[l->n], 0, sizeof(ex_item));
    return &l->v[l->n++];
}

/* A row in time order: kept while the list has room; the first one past
 * it marks the list over, at its time.  1 when the reading may stop. */
static int list_over(ex_list *l, int64_t t)
{
    if (l->n < l->max)
        return 0;
    l->over = 1;
    l->cut = t;
    return 1;
}

static int lane_ok(const ex_ctx *x, int64_t dev, int64_t stream)
{
    int64_t lane = (int64_t)((uint64_t)dev << 32 | (uint64_t)stream);
    if (!x->nlanes)
        return 1;
    for (int i = 0; i < x->nlanes; i++)
        if (x->lanes[i] == lane)
            return 1;
    return 0;
}

/* A kernel of a session with blocks into the list (its names NULL until
 * ex_names); 1 in *stop when the list is over. */
static int ex_add_ev(ex_ctx *x, const kblock_ev *k, int *stop)
{
    ex_item *e;

    *stop = 0;
    if (!lane_ok(x, (int64_t)k->dev, (int64_t)k->stream))
        return GPUFL_OK;
    if (list_over(&x->k, (int64_t)k->ts)) {
        *stop = 1;
        return GPUFL_OK;
    }
    if (!(e = list_add(&x->k)))
        return GPUFL_ENOMEM;
    e->seq = (int64_t)k->seq;
    e->ts = (int64_t)k->ts;
    e->dur = (int64_t)k->dur;
    e->dev = (int64_t)k->dev;
    e->stream = (int64_t)k->stream;
    e->corr = (int64_t)k->corr;
    e->a = k->api_off;
    e->b = (int64_t)k->api_dur;
    e->tid = (uint32_t)k->tid;
    e->name_id = k->name_id;
    return GPUFL_OK;
}

/* The names of the kernels ex_add_ev listed, looked up at once
 * (sq_names_lookup; "" for an id that names nothing): a lookup per
 * kernel was a round trip each on PostgreSQL, 20 000 for a full export. */
static int ex_names(ex_ctx *x)
{
    sq_page_names pn;
    int rc = sq_names_init(&pn, x->k.n);

    for (size_t i = 0; i < x->k.n && !rc; i++)
        pn.ids[i] = x->k.v[i].name_id;
    if (!rc)
        rc = sq_names_lookup(&x->c, x->k.n, &pn);
    for (size_t i = 0; i < x->k.n && !rc; i++) {
        ex_item *e = &x->k.v[i];
        e->name = strdup(sq_names_str(&pn, e->name_id, 0));
        e->mangled = strdup(sq_names_str(&pn, e->name_id, 1));
        if (!e->name || !e->mangled)
            rc = GPUFL_ENOMEM;
    }
    sq_page_names_free(&pn);
    return rc;
}

/* The block events the scan takes: occupying from, on a lane asked. */
typedef struct ex_keep {
    const ex_ctx *x;
    int64_t from;
} ex_keep;

static int ex_keeps(const kblock_ev *e, void *arg)
{
    const ex_keep *k = arg;
    return ((int64_t)(e->ts + e->dur) > k->from || (int64_t)e->ts >= k->from) &&
           lane_ok(k->x, (int64_t)e->dev, (int64_t)e->stream);
}

/* read_kernels for a session with blocks (store_sql_kblocks_read.c): the
 * long ones by seq (row or block), then the first of the scan's rows and
 * blocks merged, as many as the list can take and one more. */
static int read_kernels_blocks(ex_ctx *x, int64_t lo)
{
    sdb_stmt *ls = NULL;
    ex_keep k = { x, (int64_t)x->from };
    kb_top t;
    int rc, stop = 0;

    memset(&t, 0, sizeof(t));
    if (sdb_prepare(
            x->c.db,
            "SELECT l.seq, k.seq, k.ts, k.dur, k.dev, k.stream, k.corr,"
            " k.name_id, k.cfg, k.gx, k.gy, k.gz, k.bx, k.by, k.bz,"
            " k.regs, k.smem, k.occ, k.scope, k.path, k.stack,"
            " k.api_off, k.api_dur, k.flags, k.tid FROM klong l LEFT JOIN"
            " kernels k ON k.sess=l.sess AND k.seq=l.seq WHERE"
            " l.sess=?1 AND l.ts < ?2 AND l.ts + l.dur > ?3 AND ?4 > 0"
            " ORDER BY l.ts, l.seq",
            &ls)) {
        rc = GPUFL_EINTERNAL;
        goto out;
    }
    qbind_i64(ls, 1, x->c.sess);
    qbind_i64(ls, 2, lo);
    qbind_i64(ls, 3, (int64_t)x->from);
    qbind_i64(ls, 4, (int64_t)x->to);
    while (!stop && (rc = sdb_step(ls)) == SDB_ROW) {
        kblock_ev e;
        unsigned nul;
        int found = 1, err = GPUFL_OK;
        if (qcol_null(ls, 1))
            err = sq_kb_find(x->c.s, x->c.db, x->c.sess,
                             (uint64_t)qcol_i64(ls, 0), &e, &found);
        else
            kb_row_ev(ls, 1, &e, &nul);
        if (!err && found)
            err = ex_add_ev(x, &e, &stop);
        if (err) {
            rc = err;
            goto out;
        }
    }
    if (rc != SDB_DONE && rc != SDB_ROW) {
        rc = sq_err(rc);
        goto out;
    }
    rc = GPUFL_OK;
    if (stop)
        goto out;
    if ((rc = kb_top_init(&t, x->k.max + 1 - x->k.n, KB_KEY_TS, 0)) != 0)
        goto out;
    rc = q_prepare(&x->c, "SELECT " KB_ROW_COLS " FROM kernels WHERE sess=?1"
                          " AND ts >= ?2 AND ts < ?3 AND (ts + dur > ?4 OR"
                          " ts >= ?4) ORDER BY ts, seq");
    if (rc)
        goto out;
    qbind_i64(x->c.st, 1, x->c.sess);
    qbind_i64(x->c.st, 2, lo);
    qbind_i64(x->c.st, 3, (int64_t)x->to);
    qbind_i64(x->c.st, 4, (int64_t)x->from);
    while (t.n < t.cap && (rc = sdb_step(x->c.st)) == SDB_ROW) {
        kblock_ev e;
        unsigned nul;
        kb_row_ev(x->c.st, 0, &e, &nul);
        if (lane_ok(x, (int64_t)e.dev, (int64_t)e.stream))
            kb_top_add(&t, &e, nul);
    }
    if (rc != SDB_DONE && rc != SDB_ROW) {
        rc = sq_err(rc);
        goto out;
    }
    if ((rc = sq_kb_scan(x->c.s, x->c.db, x->c.sess, lo, (int64_t)x->to,
                         ex_keeps, &k, &t)) != 0)
        goto out;
    kb_top_sort(&t);
    for (size_t i = 0; i < t.n && !stop && !rc; i++)
        rc = ex_add_ev(x, &t.ev[i], &stop);
out:
    sdb_finalize(ls);
    kb_top_free(&t);
    return rc ? rc : ex_names(x);
}

/* The kernels occupying [from, to), ts order: the long ones that began
 * before the scan, then the scan (as the timeline reads them). */
static int read_kernels(ex_ctx *x)
{
    int64_t lo;
    int rc, blocks = 0;

    if ((rc = sq_kernels_back(&x->c, x->from, &lo)) != 0 ||
        (rc = sq_kb_any(x->c.db, x->c.sess, &blocks)) != 0)
        return rc;
    if (blocks)
        return read_kernels_blocks(x, lo);
    for (int pass = 0; pass < 2 && !x->k.over; pass++) {
        rc = q_prepare(
            &x->c,
            pass ? "SELECT k.seq, k.ts, k.dur, coalesce(k.dev, 0),"
                   " coalesce(k.stream, 0), k.corr, k.api_off, k.api_dur,"
                   " coalesce(k.tid, 0), coalesce(n.demangled, n.name, ''),"
                   " coalesce(n.name, '') FROM kernels k LEFT JOIN dicts n ON"
                   " n.sess=k.sess AND n.id=k.name_id WHERE k.sess=?1 AND"
                   " k.ts >= ?2 AND k.ts < ?3 AND (k.ts + k.dur > ?4 OR"
                   " k.ts >= ?4) ORDER BY k.ts, k.seq"
                 : "SELECT k.seq, k.ts, k.dur, coalesce(k.dev, 0),"
                   " coalesce(k.stream, 0), k.corr, k.api_off, k.api_dur,"
                   " coalesce(k.tid, 0), coalesce(n.demangled, n.name, ''),"
                   " coalesce(n.name, '') FROM klong l JOIN kernels k ON"
                   " k.sess=l.sess AND k.seq=l.seq LEFT JOIN dicts n ON"
                   " n.sess=k.sess AND n.id=k.name_id WHERE l.sess=?1 AND"
                   " l.ts < ?2 AND l.ts + l.dur > ?4 AND ?3 > 0 ORDER BY"
                   " l.ts, l.seq");
        if (rc)
            return rc;
        qbind_i64(x->c.st, 1, x->c.sess);
        qbind_i64(x->c.st, 2, lo);
        qbind_i64(x->c.st, 3, (int64_t)x->to);
        qbind_i64(x->c.st, 4, (int64_t)x->from);
        while ((rc = sdb_step(x->c.st)) == SDB_ROW) {
            ex_item *e;
            int64_t dev = qcol_i64(x->c.st, 3), stream = qcol_i64(x->c.st, 4);
            if (!lane_ok(x, dev, stream))
                continue;
            if (list_over(&x->k, qcol_i64(x->c.st, 1)))
                break;
            if (!(e = list_add(&x->k)))
                return GPUFL_ENOMEM;
            e->seq = qcol_i64(x->c.st, 0);
            e->ts = qcol_i64(x->c.st, 1);
            e->dur = qcol_i64(x->c.st, 2);
            e->dev = dev;
            e->stream = stream;
            e->corr = qcol_i64(x->c.st, 5);
            e->a = qcol_i64(x->c.st, 6);
            e->b = qcol_i64(x->c.st, 7);
            e->tid = (uint32_t)qcol_i64(x->c.st, 8);
            e->name = strdup(qcol_text(x->c.st, 9));
            e->mangled = strdup(qcol_text(x->c.st, 10));
            if (!e->name || !e->mangled)
                return GPUFL_ENOMEM;
        }
        if (rc != SDB_DONE && rc != SDB_ROW)
            return sq_err(rc);
    }
    return GPUFL_OK;
}

/* The copies and memsets an export takes: occupying [from, to) on a
 * lane asked, the first cp.max + 1 by (ts, seq). */
typedef struct ex_ops {
    sq_ops_first f;
    const ex_ctx *x;
    int64_t from, to;
} ex_ops;

static int ex_op_keep(void *arg, const oblock_ev *o)
{
    ex_ops *a = arg;
    int64_t ts = (int64_t)o->ts;

    if ((o->type != EV_MEMCPY && o->type != EV_MEMSET) || ts >= a->to ||
        !((int64_t)(o->ts + o->dur) > a->from || ts >= a->from) ||
        !lane_ok(a->x, (int64_t)o->dev, (int64_t)o->stream))
        return GPUFL_OK;
    sq_ops_first_add(&a->f, o);
    return GPUFL_OK;
}

/* Copies and memsets occupying [from, to), ts order, from the rows and
 * the op blocks (ops are few: the longest one bounds how far back to
 * look). */
static int read_copies(ex_ctx *x)
{
    char types[32];
    ex_ops a = { { 0 }, x, (int64_t)x->from, (int64_t)x->to };
    int64_t back, lo;
    int rc;

    snprintf(types, sizeof(types), "%d, %d", EV_MEMCPY, EV_MEMSET);
    if ((rc = sq_ops_max_dur(&x->c, types, &back)) != 0)
        return rc;
    lo = (int64_t)x->from > back ? (int64_t)x->from - back : 0;
    if ((rc = sq_ops_first_init(&a.f, x->cp.max + 1)) != 0)
        return rc;
    rc = sq_ops_each(&x->c, lo, a.to - 1, 1, ex_op_keep, &a);
    sq_ops_first_sort(&a.f);
    for (size_t i = 0; i < a.f.n && !rc; i++) {
        const oblock_ev *o = &a.f.h[i];
        ex_item *e;
        if (list_over(&x->cp, (int64_t)o->ts))
            break;
        if (!(e = list_add(&x->cp))) {
            rc = GPUFL_ENOMEM;
            break;
        }
        e->seq = (int64_t)o->seq;
        e->a = (int64_t)o->type;
        e->ts = (int64_t)o->ts;
        e->dur = (int64_t)o->dur;
        e->dev = (int64_t)o->dev;
        e->stream = (int64_t)o->stream;
        e->corr = (int64_t)o->corr;
        sq_kind_copy(e->kind, sizeof(e->kind), o->kind);
    }
    sq_ops_first_free(&a.f);
    return rc;
}

/* Scope instances overlapping [from, to) (their scope_end rows: begin is
 * ts - dur), in begin order. */
static int read_scopes(ex_ctx *x)
{
    char sql[512];
    int rc;

    snprintf(sql, sizeof(sql),
             "SELECT s.id, s.ts - s.dur, s.dur, coalesce(s.tid, 0),"
             " coalesce(n.name, '') FROM scopes s LEFT JOIN dicts n ON"
             " n.sess=s.sess AND n.id=s.name WHERE s.sess=?1 AND s.type=%d"
             " AND s.ts > ?2 AND s.ts - s.dur < ?3 ORDER BY s.ts - s.dur,"
             " s.id LIMIT ?4",
             EV_SCOPE_END);
    if ((rc = q_prepare(&x->c, sql)) != 0)
        return rc;
    qbind_i64(x->c.st, 1, x->c.sess);
    qbind_i64(x->c.st, 2, (int64_t)x->from);
    qbind_i64(x->c.st, 3, (int64_t)x->to);
    /* the list's room and the first row past it (its time is the cut):
     * on PostgreSQL the rows past it would all be sent, read or not */
    qbind_i64(x->c.st, 4, (int64_t)x->sc.max + 1);
    while ((rc = sdb_step(x->c.st)) == SDB_ROW) {
        ex_item *e;
        if (list_over(&x->sc, qcol_i64(x->c.st, 1)))
            break;
        if (!(e = list_add(&x->sc)))
            return GPUFL_ENOMEM;
        e->seq = qcol_i64(x->c.st, 0);
        e->ts = qcol_i64(x->c.st, 1);
        e->dur = qcol_i64(x->c.st, 2);
        e->tid = (uint32_t)qcol_i64(x->c.st, 3);
        if (!(e->name = strdup(qcol_text(x->c.st, 4))))
            return GPUFL_ENOMEM;
    }
    return rc == SDB_DONE || rc == SDB_ROW ? GPUFL_OK : sq_err(rc);
}

static int call_keep(void *arg, const sq_call *c)
{
    ex_ctx *x = arg;

    if (x->ncalls == SQ_EXP_CALLS_READ) {
        x->calls_over = 1;
        return GPUFL_ETOOBIG;
    }
    if (x->ncalls == x->calls_cap) {
        size_t nc = x->calls_cap ? x->calls_cap * 2 : 1024;
        sq_call *v = realloc(x->calls, nc * sizeof(*v));
        if (!v)
            return GPUFL_ENOMEM;
        x->calls = v;
        x->calls_cap = nc;
    }
    x->calls[x->ncalls++] = *c;
    return GPUFL_OK;
}

static int call_by_ts(const void *a, const void *b)
{
    const sq_call *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The session's header: app, host, pid, simulated and its devices'
 * names (for the process names). */
static int read_header(ex_ctx *x)
{
    jsonl_tok *tok = NULL;
    jsonl_doc d;
    char *hdr = NULL;
    uint32_t t;
    int rc;

    if ((rc = q_prepare(&x->c, "SELECT coalesce(app, ''), coalesce(host, ''),"
                               " coalesce(pid, 0), coalesce(simulated, 0),"
                               " header FROM sessions WHERE id=?")) != 0)
        return rc;
    qbind_i64(x->c.st, 1, x->c.sess);
    if ((rc = sdb_step(x->c.st)) != SDB_ROW)
        return sq_err(rc);
    snprintf(x->app, sizeof(x->app), "%s", qcol_text(x->c.st, 0));
    snprintf(x->host, sizeof(x->host), "%s", qcol_text(x->c.st, 1));
    x->pid = qcol_i64(x->c.st, 2);
    x->simulated = qcol_i64(x->c.st, 3) != 0;
    if (qcol_null(x->c.st, 4))
        return GPUFL_OK;
    hdr = strdup(qcol_text(x->c.st, 4));
    tok = malloc(INGEST_HDR_TOKENS * sizeof(*tok));
    if (!hdr || !tok) {
        free(hdr);
        free(tok);
        return GPUFL_ENOMEM;
    }
    /* devices[]: {"id": N, "name": "...", ...} (docs/events.md) */
    jsonl_doc_init(&d, tok, INGEST_HDR_TOKENS);
    t = jsonl_doc_parse_obj(&d, hdr, strlen(hdr)) == GPUFL_OK
            ? jsonl_doc_find(&d, "devices")
            : JSONL_NOTFOUND;
    if (t != JSONL_NOTFOUND && jsonl_tok_type(&d, t) == JSONL_ARRAY) {
        for (uint32_t i = 0, e = t + 1; i < d.tok[t].n;
             i++, e = d.tok[e].next) {
            uint64_t id = UINT64_MAX;
            uint32_t nm = JSONL_NOTFOUND;
            char name[128];
            size_t n = 0;
            if (jsonl_tok_type(&d, e) != JSONL_OBJECT)
                continue;
            for (uint32_t j = 0, m = e + 1; j < d.tok[e].n;
                 j++, m = d.tok[m + 1].next) {
                if (jsonl_tok_streq(&d, m, "id", 2) &&
                    jsonl_tok_u64(&d, m + 1, &id))
                    id = UINT64_MAX;
                if (jsonl_tok_streq(&d, m, "name", 4))
                    nm = m + 1;
            }
            if (id < SQ_EXP_DEVS && nm != JSONL_NOTFOUND &&
                jsonl_tok_str(&d, nm, name, sizeof(name), &n) == GPUFL_OK)
                snprintf(x->devname[id], sizeof(x->devname[id]), "%s", name);
        }
    }
    free(tok);
    free(hdr);
    return GPUFL_OK;
}

int srv_store_q_export(srv_store *s, const srv_q *q, jw *w, char *why,
                       size_t cap)
{
    ex_ctx *x = calloc(1, sizeof(*x));
    uint64_t cut;
    int rc;

    why[0] = '\0';
    if (!x)
        return GPUFL_ENOMEM;
    x->k.max = SQ_EXP_KERNELS;
    x->cp.max = SQ_EXP_COPIES;
    x->sc.max = SQ_EXP_SCOPES;
    q_begin(s, &x->c);
    if ((rc = q_session(&x->c, q->sid)) != 0 || (rc = q_snapshot(&x->c)) != 0)
        goto out;
    x->from = q->from ? q->from : (uint64_t)x->c.first;
    x->to = q->to ? q->to : (uint64_t)x->c.last + 1;
    if (x->to <= x->from ||
        (q->lanes &&
         sq_lanes_parse(q->lanes, x->lanes, SQ_EXP_LANES, &x->nlanes))) {
        rc = GPUFL_EINVAL;
        goto out;
    }
    if ((rc = read_header(x)) != 0 || (rc = read_kernels(x)) != 0 ||
        (rc = read_copies(x)) != 0 || (rc = read_scopes(x)) != 0)
        goto out;
    /* where the export stops: the first item a full kind left out */
    cut = x->to;
    if (x->k.over && (uint64_t)x->k.cut < cut)
        cut = (uint64_t)x->k.cut;
    if (x->cp.over && (uint64_t)x->cp.cut < cut)
        cut = (uint64_t)x->cp.cut;
    if (x->sc.over && (uint64_t)x->sc.cut < cut)
        cut = (uint64_t)x->sc.cut;
    if (cut < x->to && !q->truncate) {
        snprintf(why, cap,
                 "the range holds more than one export carries (over %d %s);"
                 " narrow it, or ask truncate=true",
                 x->k.over    ? SQ_EXP_KERNELS
                 : x->cp.over ? SQ_EXP_COPIES
                              : SQ_EXP_SCOPES,
                 x->k.over    ? "kernels"
                 : x->cp.over ? "copies and memsets"
                              : "scope instances");
        rc = GPUFL_ETOOBIG;
        goto out;
    }
    rc = sq_calls_each(&x->c, x->from, cut, call_keep, x);
    if (rc == GPUFL_ETOOBIG && x->calls_over) {
        snprintf(why, cap,
                 "the range holds more than %d API calls, too many to cut;"
                 " narrow it",
                 SQ_EXP_CALLS_READ);
        goto out;
    }
    if (rc)
        goto out;
    if (x->ncalls > 1) /* calls is NULL when there are none */
        qsort(x->calls, x->ncalls, sizeof(sq_call), call_by_ts);
    if (x->ncalls > SQ_EXP_CALLS) {
        if (!q->truncate) {
            snprintf(why, cap,
                     "the range holds more than one export carries (over %d"
                     " API calls); narrow it, or ask truncate=true",
                     SQ_EXP_CALLS);
            rc = GPUFL_ETOOBIG;
            goto out;
        }
        if ((uint64_t)x->calls[SQ_EXP_CALLS].ts < cut)
            cut = (uint64_t)x->calls[SQ_EXP_CALLS].ts;
    }
    sq_ex_write(x, w, q->sid, cut);
    if (w->err) {
        snprintf(why, cap,
                 "the range's export is larger than one answer carries;"
                 " narrow it");
        rc = GPUFL_ETOOBIG;
    }
out:
    list_free(&x->k);
    list_free(&x->cp);
    list_free(&x->sc);
    free(x->calls);
    rc = q_end(&x->c, rc, NULL);
    free(x);
    return rc;
}
