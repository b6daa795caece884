/*
 * api_jobs.c - GET /api/v1/jobs, /jobs/{id}, /regressions,
 * /sessions/{id}/regressions and /sessions/{id}/durations (docs/api.md
 * "Jobs", "Regressions", "durations"): strict query parsing (an unknown
 * parameter is a 400, so a typo never widens an answer), then the store's
 * answer.  api.c routes here after the role check.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpufl/gpufl.h>

#include "srv_int.h"
#include "store.h"

/* Parses the parameters of one of these endpoints into q; 0, or -1 with
 * a 400 answered. */
static int parse(const srv_req *r, srv_resp *o, const char *const *allowed,
                 srv_q *q)
{
    static const char *const nums[] = { "limit" };
    char bad[128], why[200];
    uint64_t v[1];

    memset(q, 0, sizeof(*q));
    if (srv_req_args_only(r, allowed, bad, sizeof(bad))) {
        snprintf(why, sizeof(why), "unknown parameter %s", bad);
        srv_resp_error(o, 400, why);
        return -1;
    }
    if (srv_args_u64(r, o, nums, v, 1))
        return -1;
    if (srv_req_arg(r, "limit") && (v[0] < 1 || v[0] > 1000)) {
        srv_resp_error(o, 400, "limit must be 1 to 1000");
        return -1;
    }
    q->limit = (uint32_t)v[0];
    q->cursor = srv_req_arg(r, "cursor");
    q->app = srv_req_arg(r, "app");
    q->state = srv_req_arg(r, "state");
    q->kind = srv_req_arg(r, "kind");
    if (q->state && strcmp(q->state, "running") && strcmp(q->state, "ended")) {
        srv_resp_error(o, 400, "state must be running or ended");
        return -1;
    }
    if (q->kind && strcmp(q->kind, "slower") && strcmp(q->kind, "faster") &&
        strcmp(q->kind, "new") && strcmp(q->kind, "vanished") &&
        strcmp(q->kind, "count")) {
        srv_resp_error(o, 400,
                       "kind must be slower, faster, new, vanished or count");
        return -1;
    }
    return 0;
}

static void answer(srv *s, srv_resp *o, srv_query_fn fn, const srv_q *q,
                   const char *notfound)
{
    char *buf;
    jw w;
    int rc;

    if (!(buf = srv_query_buf(o, &w)))
        return;
    rc = fn(s->store, q, &w);
    srv_query_done(o, rc, buf, w.len, notfound);
}

void srv_api_jobs(srv *s, srv_req *r, srv_resp *o, const char *job)
{
    static const char *const list_args[] = { "app", "state", "limit", "cursor",
                                             NULL };
    static const char *const one_args[] = { NULL };
    srv_q q;

    r->cls = MET_QUERY;
    if (parse(r, o, job ? one_args : list_args, &q))
        return;
    q.job = job;
    answer(s, o, job ? srv_store_q_job : srv_store_q_jobs, &q, "no such job");
}

void srv_api_regressions(srv *s, srv_req *r, srv_resp *o, const char *sid)
{
    static const char *const list_args[] = { "app", "kind", "limit", "cursor",
                                             NULL };
    static const char *const one_args[] = { NULL };
    srv_q q;

    r->cls = MET_QUERY;
    if (parse(r, o, sid ? one_args : list_args, &q))
        return;
    q.sid = sid;
    answer(s, o, sid ? srv_store_q_sess_regressions : srv_store_q_regressions,
           &q, "no such session");
}

void srv_api_durations(srv *s, srv_req *r, srv_resp *o, const char *sid)
{
    static const char *const no_args[] = { NULL };
    srv_q q;

    r->cls = MET_QUERY;
    if (parse(r, o, no_args, &q))
        return;
    q.sid = sid;
    answer(s, o, srv_store_q_durations, &q, "no such session");
}
