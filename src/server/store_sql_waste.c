/*
 * store_sql_waste.c - GPU waste (`waste` lines of the system stream,
 * written by `gpufl idle watch`, docs/idle.md "Waste accounting"): every
 * line in table waste, and an hourly rollup (wasteh) per dimension
 * (user, namespace, pod, job, app, host, gpu), owner key and GPU model,
 * which GET /api/v1/fleet/waste reads so a month of a thousand GPUs is a
 * few hundred thousand rows, not millions of lines; and the same per UTC
 * day (wasted), which gives the owners of the days wholly in a range
 * (the hourly rows only its edges and its series).
 *
 * A line spanning an hour boundary is split between the hours in
 * proportion to time.  The rollup holds no session: a session removed by
 * retention first takes its lines back out of it (sq_waste_unroll), so
 * the rollup is always the sum of the stored lines.  The query is
 * store_sql_q_waste.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpufl/gpufl.h>

#include "common/jsonl.h"
#include "ingest.h"
#include "store_sql_int.h"

#define HOUR_NS (3600ull * 1000000000ull)
#define DAY_NS (24ull * HOUR_NS)
#define WASTE_TOKENS 256

void sq_waste_key(const srv_waste *w, int dim, char *out, size_t cap)
{
    switch (dim) {
    case SRV_WBY_USER: snprintf(out, cap, "%s", w->user); break;
    case SRV_WBY_NAMESPACE: snprintf(out, cap, "%s", w->ns); break;
    case SRV_WBY_POD:
        if (w->ns[0] && w->pod[0])
            snprintf(out, cap, "%s/%s", w->ns, w->pod);
        else
            snprintf(out, cap, "%s", w->pod);
        break;
    case SRV_WBY_JOB: snprintf(out, cap, "%s", w->job); break;
    case SRV_WBY_APP: snprintf(out, cap, "%s", w->app); break;
    case SRV_WBY_HOST: snprintf(out, cap, "%s", w->host); break;
    default:
        if (w->uuid[0])
            snprintf(out, cap, "%s", w->uuid);
        else
            snprintf(out, cap, "%s:%llu", w->host, (unsigned long long)w->dev);
    }
}

/* Adds sign x the line to the rollup of unit (ns) through st: each
 * hour (day) it overlaps gets its share, in every dimension. */
static int roll_unit(sdb_stmt *st, const srv_waste *w, double sign,
                     uint64_t unit)
{
    double span = (double)(w->to - w->from);
    char key[400];
    int rc;

    for (uint64_t h = w->from / unit; h <= (w->to - 1) / unit; h++) {
        uint64_t a = h * unit > w->from ? h * unit : w->from;
        uint64_t b = (h + 1) * unit < w->to ? (h + 1) * unit : w->to;
        double f = sign * (double)(b - a) / span;
        for (int dim = 0; dim < SRV_WBY_N; dim++) {
            sq_waste_key(w, dim, key, sizeof(key));
            qbind_i64(st, 1, dim);
            qbind_i64(st, 2, (int64_t)h);
            qbind_text(st, 3, key);
            qbind_text(st, 4, w->model);
            qbind_f64(st, 5, w->busy * f);
            for (int r = 0; r < SRV_WASTE_N; r++)
                qbind_f64(st, 6 + r, w->wasted[r] * f);
            qbind_i64(st, 11, w->simulated);
            if ((rc = qrun(st)) != 0)
                return rc;
        }
    }
    return GPUFL_OK;
}

static int roll(srv_store *s, const srv_waste *w, double sign)
{
    int rc = roll_unit(s->ws[WS_WASTE_ROLL], w, sign, HOUR_NS);
    return rc ? rc : roll_unit(s->ws[WS_WASTE_ROLLD], w, sign, DAY_NS);
}

int sq_waste_put(srv_store *s, int64_t sess, const srv_ev *e)
{
    jsonl_tok tok[WASTE_TOKENS];
    jsonl_doc d;
    srv_waste w;
    sdb_stmt *st = NULL;
    char why[INGEST_REASON_MAX];
    int rc, p = 0;

    jsonl_doc_init(&d, tok, WASTE_TOKENS);
    /* ingest checked the line: failing now is a bug, not bad input */
    if (jsonl_doc_parse_obj(&d, e->raw.p, e->raw.n) ||
        srv_waste_parse(&d, &w, why))
        return GPUFL_EINTERNAL;
    /* the host of its session, as for verdicts: a key bound to hosts
     * writes for its own (the line's host only when the session has
     * none), and the session's simulation flag */
    if (sdb_prepare(s->w, "SELECT host, simulated FROM sessions WHERE id=?",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sess);
    if ((rc = sdb_step(st)) == SDB_ROW) {
        if (*qcol_text(st, 0))
            snprintf(w.host, sizeof(w.host), "%s", qcol_text(st, 0));
        w.simulated |= qcol_i64(st, 1) != 0;
    }
    sdb_finalize(st);
    if (rc != SDB_ROW && rc != SDB_DONE)
        return sdb_err(rc);
    if (!w.host[0])
        snprintf(w.host, sizeof(w.host), "unknown");
    st = s->ws[WS_WASTE_PUT];
    qbind_i64(st, ++p, sess);
    qbind_i64(st, ++p, (int64_t)e->seq);
    qbind_i64(st, ++p, (int64_t)e->ts);
    qbind_text(st, ++p, w.host);
    qbind_i64(st, ++p, (int64_t)w.dev);
    qbind_text(st, ++p, w.uuid);
    qbind_text(st, ++p, w.model);
    qbind_text(st, ++p, w.user);
    qbind_text(st, ++p, w.ns);
    qbind_text(st, ++p, w.pod);
    qbind_text(st, ++p, w.container);
    qbind_text(st, ++p, w.job);
    qbind_text(st, ++p, w.app);
    qbind_i64(st, ++p, (int64_t)w.from);
    qbind_i64(st, ++p, (int64_t)w.to);
    qbind_f64(st, ++p, w.busy);
    for (int r = 0; r < SRV_WASTE_N; r++)
        qbind_f64(st, ++p, w.wasted[r]);
    qbind_i64(st, ++p, w.simulated);
    if ((rc = qrun(st)) != 0)
        return rc;
    if (sdb_changes(s->w) == 0)
        return GPUFL_OK; /* already counted */
    return roll(s, &w, 1);
}

int sq_waste_run(srv_store *s, int64_t sess, const char *host, int64_t dev,
                 int64_t ts, srv_str state)
{
    sdb_stmt *st = s->ws[WS_VRUN_LAST];
    int64_t t0 = 0, t1 = 0;
    int rc, same = 0, found = 0;

    qbind_text(st, 1, host);
    qbind_i64(st, 2, dev);
    if ((rc = sdb_step(st)) == SDB_ROW) {
        const char *ps = qcol_text(st, 2);
        found = 1;
        t0 = qcol_i64(st, 0);
        t1 = qcol_i64(st, 1);
        same = strlen(ps) == state.n && !memcmp(ps, state.p, state.n) &&
               qcol_i64(st, 3) == sess;
    }
    sdb_reset(st);
    if (rc != SDB_ROW && rc != SDB_DONE)
        return sdb_err(rc);
    /* a verdict older than the GPU's newest run (a late replay) changes
     * no run: strips follow verdicts as they arrive in time order */
    if (found && ts < t1)
        return GPUFL_OK;
    if (found && same && ts - t1 <= SQ_RUN_HOLD_NS) {
        st = s->ws[WS_VRUN_EXT];
        qbind_i64(st, 1, ts);
        qbind_text(st, 2, host);
        qbind_i64(st, 3, dev);
        qbind_i64(st, 4, t0);
        qbind_i64(st, 5, sess);
    } else {
        st = s->ws[WS_VRUN_ADD];
        qbind_text(st, 1, host);
        qbind_i64(st, 2, dev);
        qbind_i64(st, 3, ts);
        qbind_i64(st, 4, ts);
        qbind_str(st, 5, state);
        qbind_i64(st, 6, sess);
    }
    return qrun(st);
}

void sq_waste_row(sdb_stmt *st, srv_waste *w)
{
    char *const strs[] = { w->host, NULL,   w->uuid,      w->model, w->user,
                           w->ns,   w->pod, w->container, w->job,   w->app };
    const size_t caps[] = { sizeof(w->host), 0,
                            sizeof(w->uuid), sizeof(w->model),
                            sizeof(w->user), sizeof(w->ns),
                            sizeof(w->pod),  sizeof(w->container),
                            sizeof(w->job),  sizeof(w->app) };

    for (int i = 0; i < 10; i++)
        if (strs[i])
            snprintf(strs[i], caps[i], "%s", qcol_text(st, i));
    w->dev = (uint64_t)qcol_i64(st, 1);
    w->from = (uint64_t)qcol_i64(st, 10);
    w->to = (uint64_t)qcol_i64(st, 11);
    w->busy = qcol_f64(st, 12);
    for (int r = 0; r < SRV_WASTE_N; r++)
        w->wasted[r] = qcol_f64(st, 13 + r);
    w->simulated = (int)qcol_i64(st, 18);
}

int sq_waste_unroll(srv_store *s, int64_t sess)
{
    sdb_stmt *st = NULL;
    srv_waste w;
    int rc;

    if (sdb_prepare(s->w, "SELECT " SQ_WASTE_COLS " FROM waste WHERE sess=?",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sess);
    while ((rc = sdb_step(st)) == SDB_ROW) {
        memset(&w, 0, sizeof(w));
        sq_waste_row(st, &w);
        if (w.to > w.from && (rc = roll(s, &w, -1)) != 0) {
            sdb_finalize(st);
            return rc;
        }
    }
    sdb_finalize(st);
    if (rc != SDB_DONE)
        return sdb_err(rc);
    /* hours nobody is left in (a sum back at 0, give or take rounding) */
    for (int i = 0; i < 2; i++) {
        char sql[256];
        snprintf(sql, sizeof(sql),
                 "DELETE FROM %s WHERE busy < 1e-6 AND w_idle < 1e-6 AND"
                 " w_held < 1e-6 AND w_phantom < 1e-6 AND w_stuck < 1e-6 AND"
                 " w_alloc < 1e-6",
                 i ? "wasted" : "wasteh");
        if ((rc = sdb_exec(s->w, sql)) != 0)
            return rc;
    }
    return GPUFL_OK;
}
