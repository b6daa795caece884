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
 * rollups (store_sql_rollup.c), which are gathered in memory for the batch
 * and merged once per touched row.
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

static int sess_id(srv_store *s, const char *sid, int64_t *id)
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
static int launch_get(srv_store *s, int64_t sess, uint64_t cfg, sq_launch *out)
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

/* ---- one line ---- */

static int put_stalls(srv_store *s, int64_t sess, const srv_ev *e)
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

static int put_dict(srv_store *s, int64_t sess, const srv_ev *e)
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

static int count_line(srv_store *s, int64_t sess, const srv_ev *e);

/* Binary COPY (the server parses no text: about a tenth of its CPU per
 * kernel): the header, then per row the field count and each field as a
 * length and big-endian bytes (-1: NULL), then the trailer. */
static void cb_be(sq_cbuf *b, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--)
        b->p[b->len++] = (char)(v >> (8 * i));
}

static int cb_bin_begin(sq_cbuf *b)
{
    static const char sig[11] = { 'P',  'G',    'C',  'O',  'P', 'Y',
                                  '\n', '\377', '\r', '\n', '\0' };
    b->len = 0;
    if (sq_cb_reserve(b, 32))
        return GPUFL_ENOMEM;
    memcpy(b->p, sig, sizeof(sig));
    b->len = sizeof(sig);
    cb_be(b, 0, 4); /* flags */
    cb_be(b, 0, 4); /* header extension length */
    return GPUFL_OK;
}

static int cb_bin_end(sq_cbuf *b)
{
    if (sq_cb_reserve(b, 2))
        return GPUFL_ENOMEM;
    cb_be(b, 0xffff, 2);
    return GPUFL_OK;
}

/* The kernel row, in the table's column order (as bind_kernel): 23
 * bigints and occ, a double precision. */
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

    if (sq_cb_reserve(b, 2 + 24 * 12))
        return GPUFL_ENOMEM;
    cb_be(b, 24, 2);
    for (int c = 0; c < 24; c++) {
        if (c == 17 && l->occ < 0) {
            cb_be(b, 0xffffffffu, 4);
            continue;
        }
        cb_be(b, 8, 4);
        if (c == 17) {
            uint64_t bits;
            memcpy(&bits, &l->occ, 8);
            cb_be(b, bits, 8);
        } else {
            cb_be(b, (uint64_t)v[c], 8);
        }
    }
    return GPUFL_OK;
}

/* Sessions a batch's kernels may span and still take the append path. */
#define SQ_APPEND_SESS 8

/* PostgreSQL: can the pending kernels go straight into kernels by COPY?
 * Yes when no key repeats within them (dup) and, for each session, their
 * lowest seq is above the highest seq it has stored: then none can
 * conflict.  That holds across servers too, because ingest transactions
 * hold the advisory lock, so no other writer adds kernels in between.
 * This is the common case (an agent sends its lines in order); a resent
 * batch takes the staging path. */
static int can_append(srv_store *s, size_t n, int dup, int *ok)
{
    int64_t sess[SQ_APPEND_SESS], lo[SQ_APPEND_SESS];
    int ns = 0, rc;

    *ok = 0;
    if (dup)
        return GPUFL_OK;
    for (size_t j = 0; j < n; j++) {
        int64_t seq = (int64_t)s->pend[j].e->seq;
        int i = 0;
        while (i < ns && sess[i] != s->pend[j].sess)
            i++;
        if (i == ns) {
            if (ns == SQ_APPEND_SESS)
                return GPUFL_OK;
            sess[ns] = s->pend[j].sess;
            lo[ns++] = seq;
        } else if (seq < lo[i]) {
            lo[i] = seq;
        }
    }
    for (int i = 0; i < ns; i++) {
        int below;
        sdb_bind_i64(s->ws[WS_KMAX], 1, sess[i]);
        rc = sdb_step(s->ws[WS_KMAX]);
        below = rc == SDB_ROW && (sdb_col_null(s->ws[WS_KMAX], 0) ||
                                  sdb_col_i64(s->ws[WS_KMAX], 0) < lo[i]);
        sdb_reset(s->ws[WS_KMAX]);
        if (rc != SDB_ROW)
            return sq_err(rc);
        if (!below)
            return GPUFL_OK;
    }
    *ok = 1;
    return GPUFL_OK;
}

/* PostgreSQL: the rows in s->cb COPYed into kstage and moved into
 * kernels by one INSERT ... SELECT ... RETURNING, whose keys are the new
 * rows (the rest were already stored): marks those pending kernels fresh. */
static int stage_kernels(srv_store *s)
{
    sdb_stmt *st = s->kmerge;
    int rc;

    /* a second flush in one transaction: the first one's rows are in
     * kernels already */
    if (s->staged && (rc = exec(s->w, "TRUNCATE kstage")) != 0)
        return rc;
    if ((rc = sdb_copy(s->w, "COPY kstage FROM STDIN (FORMAT binary)", s->cb.p,
                       s->cb.len)) != 0)
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
    return rc == SDB_DONE ? GPUFL_OK : sdb_err(rc);
}

/* PostgreSQL: the pending kernels, COPYed straight into kernels when none
 * can be a duplicate (can_append), else through kstage; then the new
 * ones are counted and feed the rollups. */
static int flush_pending(srv_store *s, srv_ingest_res *r)
{
    size_t n = s->npend;
    int rc, fresh, dup = 0, append;

    if (!n)
        return GPUFL_OK;
    s->npend = 0;
    rl_map_clear(&s->pend_idx);
    if ((rc = cb_bin_begin(&s->cb)) != 0)
        return rc;
    for (size_t j = 0; j < n; j++) {
        uint64_t k[4] = { (uint64_t)s->pend[j].sess, s->pend[j].e->seq, 0, 0 };
        size_t *v = rl_map_get(&s->pend_idx, k, &fresh);
        if (!v)
            return GPUFL_EFULL;
        if (fresh)
            *v = j + 1; /* a key twice in one batch: the first is new */
        else
            dup = 1;
        if ((rc = cb_kernel(&s->cb, s->pend[j].sess, s->pend[j].e,
                            &s->pend[j].l)) != 0)
            return rc;
    }
    if ((rc = cb_bin_end(&s->cb)) != 0 ||
        (rc = can_append(s, n, dup, &append)) != 0)
        return rc;
    if (!append) {
        rc = stage_kernels(s);
    } else if ((rc = sdb_copy(s->w, "COPY kernels FROM STDIN (FORMAT binary)",
                              s->cb.p, s->cb.len)) == 0) {
        for (size_t j = 0; j < n; j++)
            s->pend[j].fresh = 1;
    }
    for (size_t j = 0; j < n && !rc; j++) {
        sq_pend *p = &s->pend[j];
        if (!p->fresh) {
            r->duplicate++;
            continue;
        }
        r->accepted++;
        rc = sq_acc_kernel(s, p->sess, p->e, &p->l);
        if (!rc)
            rc = count_line(s, p->sess, p->e);
    }
    return rc;
}

/* SQLite: writes the queued new kernels (SQ_KGROUP in one statement, a
 * partial group row by row).  Each must be new: anything else means the
 * queue's premise broke, and the batch fails (its rollups counted them). */
static int kq_flush(srv_store *s)
{
    size_t n = s->nkq;
    int rc;

    s->nkq = 0;
    if (n == SQ_KGROUP) {
        for (size_t i = 0; i < n; i++)
            bind_kernel(s->kgrp, (int)(24 * i), s->kq[i].sess, s->kq[i].e,
                        &s->kq[i].l);
        if ((rc = step_done(s->kgrp)) != 0)
            return rc;
        return sdb_changes(s->w) == (int64_t)n ? GPUFL_OK : GPUFL_EINTERNAL;
    }
    for (size_t i = 0; i < n; i++) {
        bind_kernel(s->ws[WS_KERNEL], 0, s->kq[i].sess, s->kq[i].e,
                    &s->kq[i].l);
        if ((rc = step_done(s->ws[WS_KERNEL])) != 0)
            return rc;
        if (sdb_changes(s->w) != 1)
            return GPUFL_EINTERNAL;
    }
    return GPUFL_OK;
}

/* SQLite: the highest kernel seq of a session, stored or queued (-1: none),
 * as a pointer the caller may raise. */
static int kmax_get(srv_store *s, int64_t sess, int64_t **out)
{
    uint64_t k[4] = { (uint64_t)sess, 0, 0, 0 };
    int64_t *v = rl_map_find(&s->khigh, k);
    int rc, fresh;

    if (v) {
        *out = v;
        return GPUFL_OK;
    }
    if (s->khigh.n >= SQ_CACHE_MAX) {
        /* queued rows are in the map, not yet in the table: write them */
        if ((rc = kq_flush(s)) != 0)
            return rc;
        rl_map_clear(&s->khigh);
    }
    sdb_bind_i64(s->ws[WS_KMAX], 1, sess);
    rc = sdb_step(s->ws[WS_KMAX]);
    if (rc != SDB_ROW) {
        sdb_reset(s->ws[WS_KMAX]);
        return sq_err(rc);
    }
    if (!(v = rl_map_get(&s->khigh, k, &fresh))) {
        sdb_reset(s->ws[WS_KMAX]);
        return GPUFL_EFULL;
    }
    *v = sdb_col_null(s->ws[WS_KMAX], 0) ? -1 : sdb_col_i64(s->ws[WS_KMAX], 0);
    sdb_reset(s->ws[WS_KMAX]);
    *out = v;
    return GPUFL_OK;
}

static int put_line(srv_store *s, int64_t sess, const srv_ev *e, int *fresh)
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
        {
            /* after every kernel of its session stored or queued: new
             * (agents send in order, so nearly always), queued */
            int64_t *mx = NULL;
            if ((rc = kmax_get(s, sess, &mx)) != 0)
                return rc;
            if ((int64_t)e->seq > *mx) {
                *mx = (int64_t)e->seq;
                s->kq[s->nkq].e = e;
                s->kq[s->nkq].sess = sess;
                s->kq[s->nkq++].l = l;
                if (s->nkq == SQ_KGROUP && (rc = kq_flush(s)) != 0)
                    return rc;
                *fresh = 1;
                return sq_acc_kernel(s, sess, e, &l);
            }
            /* maybe a duplicate of a queued row: those go in first */
            if ((rc = kq_flush(s)) != 0)
                return rc;
        }
        st = s->ws[WS_KERNEL];
        bind_kernel(st, 0, sess, e, &l);
        if ((rc = step_done(st)) != 0)
            return rc;
        *fresh = sdb_changes(s->w) > 0;
        return *fresh ? sq_acc_kernel(s, sess, e, &l) : GPUFL_OK;
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
        if (e->type == EV_VERDICT)
            return sq_fleet_put(s, sess, e);
        if (e->type == EV_SESSION) {
            if (e->streams) {
                st = s->ws[WS_SESS_STREAMS];
                bind_i(st, 1, e->streams);
                bind_i(st, 2, (uint64_t)sess);
                if ((rc = step_done(st)) != 0)
                    return rc;
            }
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
            bind_i(st, 1, 1u << e->st);
            bind_s(st, 2, e->reason);
            bind_i(st, 3, (uint64_t)sess);
            return step_done(st);
        }
        return GPUFL_OK;
    }
    if ((rc = step_done(st)) != 0)
        return rc;
    *fresh = sdb_changes(s->w) > 0;
    if (*fresh && (e->type == EV_GPU || e->type == EV_HOST))
        return sq_acc_sample(s, sess, e);
    return GPUFL_OK;
}

/* A new line's share of its session's counters and time span. */
static int count_line(srv_store *s, int64_t sess, const srv_ev *e)
{
    uint64_t k[4] = { (uint64_t)sess, 0, 0, 0 }, end = e->ts;
    int nf;
    sq_sacc *a = rl_map_get(&s->sacc, k, &nf);

    if (!a)
        return GPUFL_EFULL;
    sq_gaps_note(s, e, sess);
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

int srv_store_ingest(srv_store *s, const srv_ev *ev, size_t n,
                     srv_ingest_res *r)
{
    int rc;

    r->accepted = r->duplicate = 0;
    pthread_mutex_lock(&s->wlock);
    rl_map_clear(&s->kagg);
    rl_map_clear(&s->tl);
    rl_map_clear(&s->kscope);
    rl_map_clear(&s->sacc);
    rl_map_clear(&s->srl);
    rc = sdb_begin(s->w);
    /* PostgreSQL with several servers: the kernel aggregates are merged
     * read-modify-write, so batches take turns as SQLite's write lock
     * makes them (held until COMMIT/ROLLBACK) */
    if (!rc && sdb_dialect(s->w) == SDB_POSTGRES)
        rc = exec(s->w, "SELECT pg_advisory_xact_lock(7242)");
    /* SQLite with several servers on one file: another one's kernels
     * make this writer's highest-seq cache stale (its queue would take a
     * stored kernel for a new one and fail the batch) */
    if (!rc && s->dver) {
        int64_t v;
        rc = sdb_step(s->dver);
        v = rc == SDB_ROW ? sdb_col_i64(s->dver, 0) : -1;
        sdb_reset(s->dver);
        rc = sdb_err(rc);
        if (!rc && v != s->dver_last) {
            rl_map_clear(&s->khigh);
            s->dver_last = v;
        }
    }
    if (rc) {
        exec(s->w, "ROLLBACK");
        goto out;
    }
    if ((rc = sq_gaps_begin(s, ev, n)) != 0) {
        exec(s->w, "ROLLBACK");
        goto out;
    }
    s->npend = 0;
    s->staged = 0;
    if (++s->ext_gen == 0) /* 0 marks stored kext keys */
        s->ext_gen = 1;
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
        rc = s->pend ? flush_pending(s, r) : kq_flush(s);
    if (!rc)
        rc = s->pend ? sq_flush_kagg_pg(s) : sq_flush_kagg(s);
    if (!rc)
        rc = sq_flush_rest(s, (int64_t)time(NULL));
    if (!rc)
        rc = sq_ext_flush(s);
    if (!rc)
        rc = sq_flush_srl(s);
    if (!rc)
        rc = sq_gaps_flush(s, n);
    if (!rc)
        rc = exec(s->w, "COMMIT");
    if (rc) {
        exec(s->w, "ROLLBACK");
        /* rowids, launches and kext heaps cached in the rolled-back
         * transaction */
        rl_map_clear(&s->sess_cache);
        rl_map_clear(&s->launch_cache);
        rl_map_clear(&s->khigh);
        s->nkq = 0;
        sq_ext_reset(s);
        sq_gaps_reset(s);
        r->accepted = r->duplicate = 0;
    }
out:
    pthread_mutex_unlock(&s->wlock);
    return rc;
}
