/*
 * api_waste.c - GET /api/v1/fleet/waste (docs/api.md "GPU waste"): who
 * used and who wasted how many GPU-hours, and what that cost, over a
 * range, from the `waste` lines of gpufl idle (store_sql_waste.c).  Every
 * parameter is checked here, so the store gets a range it can answer.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <gpufl/gpufl.h>

#include "common/clock.h"
#include "srv_int.h"
#include "store.h"

#define WASTE_DEF_RANGE_NS (86400ull * 1000000000ull)
#define WASTE_MAX_RANGE_NS (400ull * 86400ull * 1000000000ull)
#define WASTE_BUCKETS_MAX 2000
#define WASTE_DEF_BUCKETS 200
#define WASTE_LIMIT_DEF 20
#define WASTE_LIMIT_MAX 500

const char *const srv_waste_by[SRV_WBY_N] = { "user", "namespace", "pod", "job",
                                              "app",  "host",      "gpu" };

void srv_api_waste(srv *s, srv_req *r, srv_resp *o)
{
    static const char *const nums[] = { "from", "to", "step", "limit" };
    const char *by = srv_req_arg(r, "by");
    uint64_t v[4] = { 0, 0, 0, 0 }, span;
    srv_wasteq q;
    char *buf, msg[160];
    jw w;
    int rc;

    r->cls = MET_QUERY;
    memset(&q, 0, sizeof(q));
    if (srv_args_u64(r, o, nums, v, 4))
        return;
    q.by = -1;
    for (int i = 0; i < SRV_WBY_N; i++)
        if (by && !strcmp(by, srv_waste_by[i]))
            q.by = i;
    if (!by)
        q.by = SRV_WBY_USER;
    if (q.by < 0) {
        srv_resp_error(o, 400,
                       "by must be user, namespace, pod, job, app, "
                       "host or gpu");
        return;
    }
    q.now = clock_real_ns();
    q.to = srv_req_arg(r, "to") ? v[1] : q.now;
    q.from = srv_req_arg(r, "from")
                 ? v[0]
                 : (q.to > WASTE_DEF_RANGE_NS ? q.to - WASTE_DEF_RANGE_NS : 1);
    if (q.to > (uint64_t)INT64_MAX || q.to <= q.from) {
        srv_resp_error(o, 400, "from must be before to (ns since the epoch)");
        return;
    }
    span = q.to - q.from;
    if (span > WASTE_MAX_RANGE_NS) {
        srv_resp_error(o, 400, "from..to spans more than 400 days");
        return;
    }
    if (srv_req_arg(r, "step")) {
        q.step_s = v[2];
        if (q.step_s < 60 || q.step_s > 400ull * 86400ull) {
            srv_resp_error(o, 400, "step must be 60 to 34560000 seconds");
            return;
        }
    } else {
        /* whole hours (the rollup), about WASTE_DEF_BUCKETS buckets */
        uint64_t h = span / (3600ull * 1000000000ull * WASTE_DEF_BUCKETS);
        q.step_s = 3600ull * (h + 1);
    }
    if (span / (q.step_s * 1000000000ull) >= WASTE_BUCKETS_MAX) {
        snprintf(msg, sizeof(msg),
                 "from..to / step makes more than %d buckets: a larger step",
                 WASTE_BUCKETS_MAX);
        srv_resp_error(o, 400, msg);
        return;
    }
    q.limit = WASTE_LIMIT_DEF;
    if (srv_req_arg(r, "limit")) {
        if (v[3] < 1 || v[3] > WASTE_LIMIT_MAX) {
            srv_resp_error(o, 400, "limit must be 1 to 500");
            return;
        }
        q.limit = (uint32_t)v[3];
    }
    q.prices = s->cfg.prices;
    q.nprices = s->cfg.nprices;
    q.currency = s->cfg.currency;
    if (!(buf = srv_query_buf(o, &w)))
        return;
    rc = srv_store_q_waste(s->store, &q, &w);
    srv_query_done(o, rc, buf, w.len, "not found");
}
