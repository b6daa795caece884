/*
 * regress.c - the regression scan as the server runs it: on the
 * maintenance thread's tick, the ended sessions not scanned yet
 * (store_sql_regress.c), a log line for each with findings, and one POST
 * of a JSON summary to --alert-webhook for each session with kernels,
 * scopes or peak memory significantly worse than its baseline (a session
 * only faster, or with only new, vanished or recounted names, posts
 * nothing) (docs/analysis.md, docs/server.md).
 *
 * The webhook is posted once: a session is claimed for its scan before it
 * is scanned, and a POST that fails is logged, not retried (a receiver
 * that was down reads GET /api/v1/regressions).
 */
#include "srv_int.h"

#include <gpufl/gpufl.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "httpc/httpc.h"

/* Sessions scanned per call at most, per tick at most. */
#define REGRESS_BATCH 16
#define REGRESS_TICK_MAX 256
/* The webhook's whole request (ms) and body (bytes). */
#define REGRESS_HOOK_MS 10000
#define REGRESS_HOOK_MAX (64u << 10)

static void w_sum(jw *w, void *ctx)
{
    const srv_regress_sum *sum = ctx;

    jw_obj_begin(w);
    jw_kv_str(w, "event", "regression");
    jw_kv_str(w, "session", sum->sid);
    jw_kv_str(w, "app", sum->app);
    jw_kv_u64(w, "base_sessions", sum->base_sessions);
    jw_kv_u64(w, "slower", sum->n_slower);
    jw_kv_u64(w, "faster", sum->n_faster);
    jw_kv_u64(w, "new", sum->n_new);
    jw_kv_u64(w, "vanished", sum->n_vanished);
    jw_kv_u64(w, "count", sum->n_count);
    jw_key(w, "items");
    jw_arr_begin(w);
    for (size_t i = 0; i < sum->nitems; i++) {
        jw_obj_begin(w);
        jw_kv_str(w, "kind", sum->items[i].kind);
        jw_kv_str(w, "subject", sum->items[i].subject);
        jw_kv_str(w, "name", sum->items[i].name);
        if (sum->items[i].ratio > 0 && isfinite(sum->items[i].hi)) {
            jw_key(w, "ratio");
            jw_f64(w, sum->items[i].ratio, 4);
            jw_key(w, "lo");
            jw_f64(w, sum->items[i].lo, 4);
            jw_key(w, "hi");
            jw_f64(w, sum->items[i].hi, 4);
        }
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_obj_end(w);
}

int srv_regress_json(const srv_regress_sum *sum, gbuf *b)
{
    return jw_gbuf_run(b, w_sum, (void *)(uintptr_t)sum);
}

static void post(srv *s, const srv_regress_sum *sum)
{
    gbuf body = GBUF_INIT(REGRESS_HOOK_MAX);
    struct curl_slist *h = NULL;
    char why[256] = "";
    long status = 0;
    int rc;

    if (!s->webhook) {
        httpc_cfg cfg = { REGRESS_HOOK_MS, NULL, "gpufl-server", 0 };
        httpc *c = NULL;
        if (httpc_new(&c, &cfg, why, sizeof(why))) {
            glog_warn("regress", "alert webhook: %s", why);
            return;
        }
        s->webhook = c;
    }
    rc = srv_regress_json(sum, &body);
    if (!rc)
        rc = httpc_header(&h, "Content-Type", "application/json");
    if (!rc) {
        httpc_req req = { s->cfg.alert_webhook, NULL, h, body.p, body.len };
        rc = httpc_do(s->webhook, &req, NULL, &status, why, sizeof(why));
    }
    if (rc)
        glog_warn("regress", "alert webhook for session %s: %s", sum->sid,
                  why[0] ? why : gpufl_strerror(rc));
    else if (status < 200 || status > 299)
        glog_warn("regress", "alert webhook for session %s: HTTP %ld", sum->sid,
                  status);
    httpc_headers_free(h);
    gbuf_release(&body);
}

static void on_scanned(void *arg, const srv_regress_sum *sum)
{
    srv *s = arg;

    if (!sum->n_slower && !sum->n_new && !sum->n_vanished && !sum->n_count &&
        !sum->n_faster)
        return;
    if (!s->cfg.quiet)
        glog_info("regress",
                  "session %s (%s) against %u before it: %u finding(s)"
                  " slower, %u faster, %u new, %u vanished, %u with"
                  " another count%s%s",
                  sum->sid, sum->app, sum->base_sessions, sum->n_slower,
                  sum->n_faster, sum->n_new, sum->n_vanished, sum->n_count,
                  sum->n_slower ? "; worst: " : "",
                  sum->n_slower ? sum->items[0].name : "");
    if (sum->n_slower && s->cfg.alert_webhook[0])
        post(s, sum);
}

void srv_regress_run(srv *s)
{
    srv_regress_cfg cfg = { (uint32_t)s->cfg.regress_baseline, 0.05 };
    uint32_t total = 0, done;

    if (!cfg.baseline)
        return;
    do {
        int rc = srv_store_regress_scan(s->store, &cfg, REGRESS_BATCH,
                                        on_scanned, s, &done);
        if (rc) {
            glog_warn("regress", "regression scan: %s", gpufl_strerror(rc));
            return;
        }
        total += done;
    } while (done == REGRESS_BATCH && total < REGRESS_TICK_MAX);
}

void srv_regress_stop(srv *s)
{
    httpc_free(s->webhook);
    s->webhook = NULL;
}
