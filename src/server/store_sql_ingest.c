/*
 * store_sql_ingest.c - one event batch into the database: sessions,
 * launch configurations, the line itself and the rollups, in one
 * transaction.
 *
 * Idempotency: every line lands in exactly one table whose primary key is
 * (session, seq) - plus the stream for types that occur in all three - and
 * goes in with INSERT ... ON CONFLICT DO NOTHING; the database then says
 * new or duplicate, and only new lines feed the rollups
 * (store_sql_rollup.c), which are gathered in memory for the batch and
 * merged once per touched row.  Kernels, most of a batch, and the merges go
 * in through the batch writer, the one part that differs by database
 * (sq_writer: store_sql_ingest_sqlite.c, store_sql_ingest_pg.c).
 */
#include "store_sql_writer_int.h"
#include "store_sql_blocks_w.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
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

/* The last session asked, valid while sess_cache holds it (a clear - a
 * rollback - changes its gen). */
static void sid_remember(srv_store *s, const char *sid, int64_t id)
{
    memcpy(s->sid_last, sid, 36);
    s->sid_last_id = id;
    s->sid_gen = s->sess_cache.gen;
}

static int sess_id(srv_store *s, const char *sid, int64_t *id)
{
    uint64_t k[4];
    int64_t *v;
    int fresh, rc;
    sdb_stmt *st;

    /* a batch's lines come mostly from one session: its uuid's text */
    if (s->sid_gen == s->sess_cache.gen && !memcmp(s->sid_last, sid, 36)) {
        *id = s->sid_last_id;
        return GPUFL_OK;
    }
    sid_key(sid, k);
    v = rl_map_find(&s->sess_cache, k);
    if (v) {
        *id = *v;
        sid_remember(s, sid, *id);
        return GPUFL_OK;
    }
    st = s->ws[WS_SESS_FIND];
    qbind_text(st, 1, sid);
    rc = sdb_step(st);
    if (rc == SDB_ROW) {
        *id = qcol_i64(st, 0);
        sdb_reset(st);
    } else {
        sdb_reset(st);
        if (rc != SDB_DONE)
            return sq_err(rc);
        st = s->ws[WS_SESS_ADD];
        qbind_text(st, 1, sid);
        qbind_i64(st, 2, (int64_t)time(NULL));
        rc = sdb_step(st);
        if (rc == SDB_ROW)
            *id = qcol_i64(st, 0);
        sdb_reset(st);
        if (rc != SDB_ROW)
            return rc == SDB_DONE ? GPUFL_EINTERNAL : rc;
    }
    if (s->sess_cache.n >= SQ_CACHE_MAX)
        rl_map_clear(&s->sess_cache);
    v = rl_map_get(&s->sess_cache, k, &fresh);
    if (v) {
        *v = *id;
        sid_remember(s, sid, *id);
    }
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
    qbind_u64(st, 1, (uint64_t)sess);
    qbind_u64(st, 2, cfg);
    rc = sdb_step(st);
    if (rc == SDB_ROW) {
        out->name_id = qcol_i64(st, 0);
        out->regs = qcol_i64(st, 1);
        out->smem = qcol_i64(st, 2) + qcol_i64(st, 3);
        out->occ = qcol_null(st, 4) ? -1 : qcol_f64(st, 4);
        out->bx = qcol_i64(st, 5);
        out->by = qcol_i64(st, 6);
        out->bz = qcol_i64(st, 7);
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
            qbind_u64(st, 1, (uint64_t)sess);
            qbind_u64(st, 2, e->seq);
            qbind_str(st, 3, (srv_str){ key, n });
            qbind_u64(st, 4, v);
            if ((rc = qrun(st)) != 0)
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

    qbind_u64(st, 1, (uint64_t)sess);
    qbind_u64(st, 2, e->id);
    qbind_u64(st, 3, e->dkind);
    qbind_str(st, 4, e->dname);
    qbind_u64(st, 5, e->name);
    qbind_u64(st, 6, e->parent);
    qbind_u64(st, 7, e->depth);
    qbind_u64(st, 8, e->regs);
    qbind_u64(st, 9, e->smem);
    qbind_u64(st, 10, e->dsmem);
    qbind_u64(st, 11, e->lmem);
    if (e->occ >= 0)
        qbind_f64(st, 12, e->occ);
    else
        qbind_null(st, 12);
    qbind_str(st, 13, e->lim);
    for (int i = 0; i < 3; i++)
        qbind_u64(st, 14 + i, e->dkind == DK_LAUNCH ? e->block[i] : 0);
    if (e->dkind == DK_STACK)
        qbind_str(st, 17, e->raw);
    else
        qbind_null(st, 17);
    qbind_str(st, 18, e->demangled);
    rc = qrun(st);
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

static int count_line(srv_store *s, int64_t sess, const srv_ev *e);

int sq_line_done(srv_store *s, int64_t sess, const srv_ev *e, int fresh)
{
    if (!fresh) {
        s->bres->duplicate++;
        return GPUFL_OK;
    }
    s->bres->accepted++;
    return count_line(s, sess, e);
}

int sq_kernel_done(srv_store *s, int64_t sess, const srv_ev *e,
                   const sq_launch *l, int fresh)
{
    int rc;

    if (!fresh) {
        s->bres->duplicate++;
        return GPUFL_OK;
    }
    s->bres->accepted++;
    if ((rc = sq_acc_kernel(s, sess, e, l)) != 0)
        return rc;
    if (e->dur > RL_TL_LONG_NS) {
        /* too long for the rollup's spread: the timeline reads it here */
        sdb_stmt *st = s->ws[WS_KLONG];
        qbind_u64(st, 1, (uint64_t)sess);
        qbind_u64(st, 2, e->seq);
        qbind_u64(st, 3, e->ts);
        qbind_u64(st, 4, e->dur);
        qbind_u64(st, 5, e->dev << 32 | (e->stream & 0xffffffffu));
        qbind_i64(st, 6, l->name_id);
        qbind_u64(st, 7, e->corr);
        if ((rc = qrun(st)) != 0)
            return rc;
    }
    return count_line(s, sess, e);
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
        /* the writer reports it (sq_kernel_done), now or at its flush */
        *fresh = -1;
        return s->kstore_blocks ? sq_kbi_kernel(s, sess, e, &l)
                                : s->wr->kernel(s, sess, e, &l);
    case EV_MEMCPY:
    case EV_MEMSET:
    case EV_SYNC:
    case EV_ALLOC:
    case EV_FREE:
        if (s->kstore_blocks) {
            /* into an op block at the batch's end, counted then */
            *fresh = -1;
            return sq_obi_op(s, sess, e);
        }
        st = s->ws[WS_OP];
        qbind_u64(st, 1, (uint64_t)sess);
        qbind_u64(st, 2, e->seq);
        qbind_u64(st, 3, e->type);
        qbind_u64(st, 4, e->ts);
        qbind_u64(st, 5, e->dur);
        qbind_u64(st, 6, e->dev);
        qbind_u64(st, 7, e->stream);
        qbind_u64(st, 8, e->corr);
        qbind_str(st, 9, e->kind);
        qbind_u64(st, 10, e->bytes);
        qbind_u64(st, 11, e->scope);
        qbind_u64(st, 12, e->path);
        qbind_u64(st, 13, e->stack);
        qbind_u64(st, 14, e->flags);
        if (e->tid)
            qbind_u64(st, 15, e->tid);
        else
            qbind_null(st, 15);
        qbind_i64(st, 16, e->api_off);
        qbind_u64(st, 17, e->api_dur);
        break;
    case EV_SCOPE_BEGIN:
    case EV_SCOPE_END:
        st = s->ws[WS_SCOPE];
        qbind_u64(st, 1, (uint64_t)sess);
        qbind_u64(st, 2, e->seq);
        qbind_u64(st, 3, e->type);
        qbind_u64(st, 4, e->id);
        qbind_u64(st, 5, e->ts);
        qbind_u64(st, 6, e->name);
        qbind_u64(st, 7, e->path);
        qbind_u64(st, 8, e->parent);
        qbind_u64(st, 9, e->depth);
        qbind_u64(st, 10, e->tid);
        qbind_u64(st, 11, e->dur);
        qbind_u64(st, 12, e->flags);
        break;
    case EV_SASS:
    case EV_PCSAMP:
        st = s->ws[WS_SASS];
        qbind_u64(st, 1, (uint64_t)sess);
        qbind_u64(st, 2, e->seq);
        qbind_u64(st, 3, e->type == EV_PCSAMP);
        qbind_u64(st, 4, e->dev);
        qbind_u64(st, 5, e->func);
        qbind_u64(st, 6, e->file);
        qbind_u64(st, 7, e->srcline);
        qbind_u64(st, 8, e->pc);
        qbind_u64(st, 9, e->inst);
        qbind_u64(st, 10, e->thread_inst);
        qbind_u64(st, 11, e->sectors);
        qbind_u64(st, 12, e->sectors_ideal);
        qbind_u64(st, 13, e->samples);
        qbind_u64(st, 14, e->scope);
        qbind_u64(st, 15, e->path);
        if ((rc = qrun(st)) != 0)
            return rc;
        *fresh = sdb_changes(s->w) > 0;
        return *fresh && e->type == EV_PCSAMP ? put_stalls(s, sess, e)
                                              : GPUFL_OK;
    case EV_GPU:
    case EV_HOST:
        st = s->ws[WS_SAMPLE];
        qbind_u64(st, 1, (uint64_t)sess);
        qbind_u64(st, 2, e->seq);
        qbind_u64(st, 3, e->ts);
        qbind_i64(st, 4, e->type == EV_HOST ? -1 : (int64_t)e->dev);
        for (int i = 0; i < SRV_SYS_NFIELDS; i++) {
            if (e->sys_set & (1u << i))
                qbind_f64(st, 5 + i, e->sys[i]);
            else
                qbind_null(st, 5 + i);
        }
        break;
    default:
        /* session, session_end, dict, loss, marker, counter, trigger */
        st = s->ws[WS_LINE];
        qbind_u64(st, 1, (uint64_t)sess);
        qbind_u64(st, 2, e->st);
        qbind_u64(st, 3, e->seq);
        qbind_u64(st, 4, e->type);
        qbind_u64(st, 5, e->ts);
        if (e->type == EV_LOSS || e->type == EV_MARKER ||
            e->type == EV_COUNTER || e->type == EV_TRIGGER)
            qbind_str(st, 6, e->raw);
        else
            qbind_null(st, 6);
        if ((rc = qrun(st)) != 0)
            return rc;
        *fresh = sdb_changes(s->w) > 0;
        if (!*fresh)
            return GPUFL_OK;
        if (e->type == EV_DICT)
            return put_dict(s, sess, e);
        if (e->type == EV_VERDICT)
            return sq_fleet_put(s, sess, e);
        if (e->type == EV_WASTE)
            return sq_waste_put(s, sess, e);
        if (e->type == EV_SESSION) {
            if (e->streams) {
                st = s->ws[WS_SESS_STREAMS];
                qbind_u64(st, 1, e->streams);
                qbind_u64(st, 2, (uint64_t)sess);
                if ((rc = qrun(st)) != 0)
                    return rc;
            }
            st = s->ws[WS_SESS_HEADER];
            qbind_str(st, 1, e->app);
            qbind_str(st, 2, e->host);
            qbind_u64(st, 3, e->pid);
            qbind_u64(st, 4, e->start ? e->start : e->ts);
            qbind_str(st, 5, e->text);
            qbind_u64(st, 6, e->simulated);
            qbind_str(st, 7, e->raw);
            qbind_u64(st, 8, (uint64_t)sess);
            qbind_str(st, 9, e->job);
            if (e->job_set & SRV_JOB_RANK)
                qbind_u64(st, 10, e->rank);
            else
                qbind_null(st, 10);
            if (e->job_set & SRV_JOB_WORLD)
                qbind_u64(st, 11, e->world_size);
            else
                qbind_null(st, 11);
            if (e->job_set & SRV_JOB_LOCAL)
                qbind_u64(st, 12, e->local_rank);
            else
                qbind_null(st, 12);
            qbind_str(st, 13, e->job_source);
            qbind_str(st, 14, e->step_scope);
            qbind_str(st, 15, e->sim_perturb);
            return qrun(st);
        }
        if (e->type == EV_SESSION_END) {
            st = s->ws[WS_SESS_END];
            qbind_u64(st, 1, 1u << e->st);
            qbind_str(st, 2, e->reason);
            qbind_u64(st, 3, (uint64_t)sess);
            return qrun(st);
        }
        return GPUFL_OK;
    }
    if ((rc = qrun(st)) != 0)
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
    int nf, rc;
    sq_sacc *a = rl_map_get_memo(&s->sacc, &s->sacc_memo, k, &nf);

    if (!a)
        return GPUFL_EFULL;
    sq_gaps_note(s, e, sess);
    /* its API call's share of the summary (store_sql_capi.c) */
    if ((rc = sq_capi_acc(s, sess, e)) != 0)
        return rc;
    if (nf) {
        a->api_lo = a->op_lo = INT64_MAX;
        a->api_hi = a->op_hi = INT64_MIN;
    }
    if (nf || e->ts < a->first)
        a->first = e->ts;
    /* the API call's start - exit and start - entry (ingest.c checked
     * that its times are times: no overflow) */
    if (e->api_dur && e->type != EV_SYNC) {
        int64_t lo = -e->api_off - (int64_t)e->api_dur, hi = -e->api_off;
        int64_t *plo = e->type == EV_KERNEL ? &a->api_lo : &a->op_lo;
        int64_t *phi = e->type == EV_KERNEL ? &a->api_hi : &a->op_hi;
        if (lo < *plo)
            *plo = lo;
        if (hi > *phi)
            *phi = hi;
    } else if (e->type == EV_SYNC) {
        /* a sync is its own call: [ts, ts + dur] */
        if (-(int64_t)e->dur < a->op_lo)
            a->op_lo = -(int64_t)e->dur;
        if (0 > a->op_hi)
            a->op_hi = 0;
    }
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

/* GPUFL_SERVER_FAIL_SID (tests only): a batch holding a line of this
 * session fails as a database error would, in whatever group it is
 * written, so that a test can drive the group's rollback and the rerun of
 * its batches one by one (store_sql_igroup.c; test_srv_igroup.c).  Read
 * once: the writer (under wlock) is its only reader. */
static int test_fail(const srv_ev *ev, size_t n)
{
    static const char *sid;
    static int read;

    if (!read) {
        sid = getenv("GPUFL_SERVER_FAIL_SID");
        read = 1;
    }
    if (!sid || !sid[0])
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(ev[i].sid, sid))
            return 1;
    return 0;
}

/* One batch of a group: its lines in, then what settles each kernel's
 * newness (the doubts, the writer's held rows), so that every line is
 * counted in its own batch's outcome (s->bres) and its seq ranges
 * (store_sql_gaps.c, which number the batch's lines) before the next
 * batch starts.  The rollups stay in the maps for the group's flush. */
static int batch_put(srv_store *s, const srv_ev *ev, size_t n,
                     srv_ingest_res *r)
{
    int rc;

    r->accepted = r->duplicate = 0;
    s->bres = r;
    if ((rc = sq_gaps_begin(s, ev, n)) != 0)
        return rc;
    if (test_fail(ev, n))
        return GPUFL_EINTERNAL;
    for (size_t i = 0; i < n && !rc; i++) {
        const srv_ev *e = &ev[i];
        int64_t sess = 0;
        int fresh = 0;

        if ((rc = sess_id(s, e->sid, &sess)) != 0)
            break;
        if ((rc = put_line(s, sess, e, &fresh)) != 0)
            break;
        if (fresh < 0)
            continue; /* a kernel: the writer counts it */
        if (!fresh) {
            r->duplicate++;
            continue;
        }
        r->accepted++;
        rc = count_line(s, sess, e);
    }
    /* the kernels held for blocks before the rollups they fed */
    if (!rc && s->kstore_blocks)
        rc = sq_kbi_flush(s);
    if (!rc)
        rc = sq_obi_flush(s);
    if (!rc)
        rc = s->wr->settle(s);
    if (!rc)
        rc = sq_gaps_flush(s, n);
    return rc;
}

/* A batch given in parts: each part in as a batch of its own (its lines
 * counted, its doubts settled, its seq ranges kept), the outcomes summed,
 * but the kernels held for blocks until the last part, so that a part
 * does not cut the batch's blocks short. */
static int batch_put_parts(srv_store *s, const sq_ibatch *b)
{
    int rc = GPUFL_OK, more = 1;

    b->r->accepted = b->r->duplicate = 0;
    s->kbi_hold = 1;
    for (size_t k = 0; !rc; k++) {
        const srv_ev *ev = NULL;
        size_t n = 0;
        srv_ingest_res pr;
        uint64_t t0 = clock_mono_ns();
        more = b->part(b->part_ctx, k, &ev, &n);
        s->part_ns += clock_mono_ns() - t0;
        if (more <= 0)
            break;
        if (!n)
            continue;
        rc = batch_put(s, ev, n, &pr);
        b->r->accepted += pr.accepted;
        b->r->duplicate += pr.duplicate;
    }
    s->kbi_hold = 0;
    s->bres = b->r;
    if (!rc && more < 0)
        rc = -more;
    if (!rc && s->kstore_blocks)
        rc = sq_kbi_flush(s);
    return rc;
}

int sq_ingest_group(srv_store *s, sq_ibatch *b, size_t nb)
{
    uint64_t t0 = clock_mono_ns(), t1;
    int rc;

    s->part_ns = 0;
    rl_map_clear(&s->kagg);
    rl_map_clear(&s->tl);
    rl_map_clear(&s->kscope);
    rl_map_clear(&s->sacc);
    rl_map_clear(&s->srl);
    rl_map_clear(&s->capi);
    /* runs a failed group left open */
    memset(s->tl_run, 0, sizeof(s->tl_run));
    memset(s->capi_run, 0, sizeof(s->capi_run));
    for (size_t j = 0; j < nb; j++)
        b[j].r->accepted = b[j].r->duplicate = 0;
    rc = sdb_begin(s->w);
    if (!rc)
        rc = s->wr->begin(s);
    sq_kbi_reset(s);
    sq_obi_reset(s);
    if (rc) {
        sdb_exec(s->w, "ROLLBACK");
        goto out;
    }
    if (++s->ext_gen == 0) /* 0 marks stored kext keys */
        s->ext_gen = 1;
    s->ext_txn++;
    for (size_t j = 0; j < nb && !rc; j++)
        rc = b[j].part ? batch_put_parts(s, &b[j])
                       : batch_put(s, b[j].ev, b[j].n, b[j].r);
    /* the group's rollups, merged once for all its batches */
    if (!rc)
        rc = s->wr->flush(s);
    if (!rc)
        rc = sq_kcount_flush(s);
    if (!rc)
        rc = sq_flush_sessions(s, (int64_t)time(NULL));
    if (!rc)
        rc = sq_ext_flush(s);
    if (!rc)
        rc = sq_flush_srl(s);
    if (!rc)
        rc = sq_capi_flush(s);
    t1 = clock_mono_ns();
    __atomic_fetch_add(&s->ing_ns[SRV_ING_WRITE], t1 - t0 - s->part_ns,
                       __ATOMIC_RELAXED);
    if (!rc) {
        rc = sdb_exec(s->w, "COMMIT");
        __atomic_fetch_add(&s->ing_ns[SRV_ING_COMMIT], clock_mono_ns() - t1,
                           __ATOMIC_RELAXED);
    }
    if (rc) {
        sdb_exec(s->w, "ROLLBACK");
        /* rowids, launches and kext heaps cached in the rolled-back
         * transaction */
        rl_map_clear(&s->sess_cache);
        rl_map_clear(&s->launch_cache);
        s->wr->abort(s);
        sq_kbi_reset(s);
        sq_obi_reset(s);
        sq_kcount_reset(s);
        sq_ext_reset(s);
        sq_gaps_reset(s);
        for (size_t j = 0; j < nb; j++)
            b[j].r->accepted = b[j].r->duplicate = 0;
    } else {
        __atomic_fetch_add(&s->ing_commits, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&s->ing_batches, nb, __ATOMIC_RELAXED);
    }
out:
    s->bres = NULL;
    return rc;
}
