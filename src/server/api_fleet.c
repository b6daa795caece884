/*
 * api_fleet.c - GET /api/v1/fleet (the latest verdict per host GPU and
 * session) and GET /api/v1/verdicts (their history, newest first): the
 * idle detector's verdicts as stored by store_sql_fleet.c (docs/api.md,
 * "Idle verdicts").  api.c routes here after the role check.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpufl/gpufl.h>

#include "srv_int.h"
#include "store.h"

void srv_api_fleet(srv *s, srv_req *r, srv_resp *o, int fleet)
{
    static const char *const nums[] = { "from", "to", "limit", "dev" };
    uint64_t v[4];
    srv_q q;
    char *buf;
    jw w;
    int rc;

    r->cls = MET_QUERY;
    memset(&q, 0, sizeof(q));
    if (srv_args_u64(r, o, nums, v, 4))
        return;
    q.from = v[0];
    q.to = v[1];
    q.limit = v[2] > 1000000 ? 1000000 : (uint32_t)v[2];
    q.dev = srv_req_arg(r, "dev") && v[3] <= (uint64_t)INT32_MAX ? (int64_t)v[3]
                                                                 : -1;
    q.host = srv_req_arg(r, "host");
    q.kind = srv_req_arg(r, "kind");
    q.session = srv_req_arg(r, "session");
    q.cursor = srv_req_arg(r, "cursor");
    if (q.kind && strcmp(q.kind, "gpu") && strcmp(q.kind, "session")) {
        srv_resp_error(o, 400, "kind must be gpu or session");
        return;
    }
    if (!(buf = srv_query_buf(o, &w)))
        return;
    rc = fleet ? srv_store_q_fleet(s->store, &q, &w)
               : srv_store_q_verdicts(s->store, &q, &w);
    srv_query_done(o, rc, buf, w.len, "not found");
}
