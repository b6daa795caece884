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

static int arg_num(const srv_req *r, const char *k, uint64_t *out)
{
    const char *v = srv_req_arg(r, k);
    char *end;
    if (!v)
        return 0;
    if (!*v || *v == '-')
        return -1;
    *out = strtoull(v, &end, 10);
    return *end ? -1 : 1;
}

void srv_api_fleet(srv *s, srv_req *r, srv_resp *o, int fleet)
{
    static const char *const nums[] = { "from", "to", "limit", "dev" };
    uint64_t v[4] = { 0, 0, 0, 0 };
    int given[4];
    char why[96];
    srv_q q;
    char *buf;
    jw w;
    int rc;

    r->cls = MET_QUERY;
    memset(&q, 0, sizeof(q));
    for (int i = 0; i < 4; i++) {
        given[i] = arg_num(r, nums[i], &v[i]);
        if (given[i] < 0) {
            snprintf(why, sizeof(why),
                     "parameter %s must be an unsigned integer", nums[i]);
            srv_resp_error(o, 400, why);
            return;
        }
    }
    q.from = v[0];
    q.to = v[1];
    q.limit = v[2] > 1000000 ? 1000000 : (uint32_t)v[2];
    q.dev = given[3] > 0 && v[3] <= (uint64_t)INT32_MAX ? (int64_t)v[3] : -1;
    q.host = srv_req_arg(r, "host");
    q.kind = srv_req_arg(r, "kind");
    q.session = srv_req_arg(r, "session");
    q.cursor = srv_req_arg(r, "cursor");
    if (q.kind && strcmp(q.kind, "gpu") && strcmp(q.kind, "session")) {
        srv_resp_error(o, 400, "kind must be gpu or session");
        return;
    }
    buf = malloc(SRV_RESP_MAX);
    if (!buf) {
        srv_resp_error(o, 500, "out of memory");
        return;
    }
    jw_init(&w, buf, SRV_RESP_MAX);
    rc = fleet ? s->store->ops->q_fleet(s->store, &q, &w)
               : s->store->ops->q_verdicts(s->store, &q, &w);
    if (rc) {
        free(buf);
        switch (rc) {
        case GPUFL_EINVAL: srv_resp_error(o, 400, "invalid cursor"); return;
        case GPUFL_EUNAVAIL:
            srv_resp_error(o, 503, "database unavailable");
            return;
        case GPUFL_ETOOBIG:
            srv_resp_error(o, 500, "answer too large; narrow it");
            return;
        default: srv_resp_error(o, 500, gpufl_strerror(rc)); return;
        }
    }
    srv_resp_json(o, 200, buf, w.len);
}
