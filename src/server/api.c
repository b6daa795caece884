/*
 * api.c - the route table: which method and path go to which handler and
 * need which role, then query-parameter parsing and the JSON answer.
 *
 * Authentication runs before routing for everything under /api/ and
 * /metrics, so an unauthenticated client learns nothing about which paths
 * exist (401 for all); an authenticated one gets 404/405 for wrong paths
 * and 403 when its role does not allow the call.
 */
#include "ingest.h"
#include "srv_int.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/num.h"

#define API_SEGS 8
#define API_SEG_MAX 256

typedef struct route_ctx {
    char seg[API_SEGS][API_SEG_MAX];
    int nseg;
} route_ctx;

/* Splits "/api/v1/a/b" into segments; -1 when too many or too long. */
static int split(const char *path, route_ctx *rc)
{
    rc->nseg = 0;
    while (*path) {
        size_t n;
        while (*path == '/')
            path++;
        if (!*path)
            break;
        n = strcspn(path, "/");
        if (rc->nseg >= API_SEGS || n >= API_SEG_MAX)
            return -1;
        memcpy(rc->seg[rc->nseg], path, n);
        rc->seg[rc->nseg][n] = '\0';
        rc->nseg++;
        path += n;
    }
    return 0;
}

static int seg_is(const route_ctx *rc, int i, const char *s)
{
    return i < rc->nseg && strcmp(rc->seg[i], s) == 0;
}

int srv_arg_u64(const srv_req *r, const char *k, uint64_t *out)
{
    const char *v = srv_req_arg(r, k);

    if (!v)
        return 0;
    return num_u64(v, out);
}

static int arg_bool(const srv_req *r, const char *k, int *out)
{
    const char *v = srv_req_arg(r, k);
    if (!v)
        return 0;
    if (!strcmp(v, "1") || !strcmp(v, "true"))
        *out = 1;
    else if (!strcmp(v, "0") || !strcmp(v, "false"))
        *out = 0;
    else
        return -1;
    return 0;
}

static int parse_q(const srv_req *r, srv_q *q, char *why, size_t cap)
{
    uint64_t v;
    static const char *const nums[] = { "from",  "to",     "limit",
                                        "width", "points", "exact" };

    memset(q, 0, sizeof(*q));
    for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
        v = 0;
        if (srv_arg_u64(r, nums[i], &v)) {
            snprintf(why, cap, "parameter %s must be an unsigned integer",
                     nums[i]);
            return -1;
        }
        switch (i) {
        case 0: q->from = v; break;
        case 1: q->to = v; break;
        case 2: q->limit = v > 1000000 ? 1000000 : (uint32_t)v; break;
        case 3: q->width = v > 1000000 ? 1000000 : (uint32_t)v; break;
        case 4: q->points = v > 1000000 ? 1000000 : (uint32_t)v; break;
        default: q->exact = v > 1000000 ? 1000000 : (uint32_t)v; break;
        }
    }
    if (arg_bool(r, "desc", &q->desc)) {
        snprintf(why, cap, "parameter desc must be true or false");
        return -1;
    }
    if (arg_bool(r, "truncate", &q->truncate)) {
        snprintf(why, cap, "parameter truncate must be true or false");
        return -1;
    }
    if (arg_bool(r, "overlap", &q->overlap)) {
        snprintf(why, cap, "parameter overlap must be true or false");
        return -1;
    }
    q->lanes = srv_req_arg(r, "lanes");
    q->host = srv_req_arg(r, "host");
    q->app = srv_req_arg(r, "app");
    q->state = srv_req_arg(r, "state");
    q->search = srv_req_arg(r, "search");
    q->name = srv_req_arg(r, "name");
    q->sort = srv_req_arg(r, "sort");
    q->kind = srv_req_arg(r, "kind");
    q->fields = srv_req_arg(r, "fields");
    q->path = srv_req_arg(r, "path");
    q->src = srv_req_arg(r, "src");
    q->cursor = srv_req_arg(r, "cursor");
    q->job = srv_req_arg(r, "job");
    if (q->state && strcmp(q->state, "running") && strcmp(q->state, "ended") &&
        strcmp(q->state, "stale")) {
        snprintf(why, cap, "state must be running, ended or stale");
        return -1;
    }
    return 0;
}

int srv_args_u64(const srv_req *r, srv_resp *o, const char *const *names,
                 uint64_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        v[i] = 0;
        if (srv_arg_u64(r, names[i], &v[i])) {
            char why[96];
            snprintf(why, sizeof(why),
                     "parameter %s must be an unsigned integer", names[i]);
            srv_resp_error(o, 400, why);
            return -1;
        }
    }
    return 0;
}

static void err_for(srv_resp *o, int rc, const char *what)
{
    switch (rc) {
    case GPUFL_ENOTFOUND: srv_resp_error(o, 404, what); break;
    case GPUFL_EINVAL:
        srv_resp_error(o, 400, "invalid parameter or cursor");
        break;
    case GPUFL_EUNAVAIL: srv_resp_error(o, 503, "database unavailable"); break;
    case GPUFL_EAGAIN:
        /* a kernel block in the cold tier that S3 cannot give now */
        srv_resp_error(o, 503, "cold storage (S3) unavailable; retry");
        break;
    case GPUFL_ETOOBIG:
        srv_resp_error(o, 500, "answer too large; narrow it");
        break;
    default: srv_resp_error(o, 500, gpufl_strerror(rc));
    }
}

char *srv_query_buf(srv_resp *o, jw *w)
{
    char *buf = malloc(SRV_RESP_MAX);
    if (!buf) {
        srv_resp_error(o, 500, "out of memory");
        return NULL;
    }
    jw_init(w, buf, SRV_RESP_MAX);
    return buf;
}

void srv_query_done(srv_resp *o, int rc, char *buf, size_t len,
                    const char *notfound)
{
    if (rc) {
        free(buf);
        err_for(o, rc, notfound);
        return;
    }
    srv_resp_json(o, 200, buf, len);
}

static void run_query(srv *s, srv_req *r, srv_resp *o, srv_query_fn fn,
                      const char *sid, uint64_t kid, const char *notfound)
{
    char why[128];
    srv_q q;
    char *buf;
    jw w;
    int rc;

    r->cls = MET_QUERY;
    if (parse_q(r, &q, why, sizeof(why))) {
        srv_resp_error(o, 400, why);
        return;
    }
    q.sid = sid;
    q.kid = kid;
    q.b_sid = srv_req_arg(r, "b");
    if (fn == srv_store_q_compare) {
        q.sid = srv_req_arg(r, "a");
        if (!q.sid || !q.b_sid) {
            srv_resp_error(o, 400, "compare needs a= and b= session ids");
            return;
        }
    }
    if (!(buf = srv_query_buf(o, &w)))
        return;
    rc = fn(s->store, &q, &w);
    srv_query_done(o, rc, buf, w.len, notfound);
}

/* Bytes of one export answer (docs/api.md "export"). */
#define SRV_EXPORT_MAX (64u << 20)

/* GET /api/v1/sessions/{id}/export: a Chrome trace in its own, larger
 * buffer; over the caps, 413 with why. */
static void export_route(srv *s, srv_req *r, srv_resp *o, const char *sid)
{
    char why[256];
    srv_q q;
    char *buf;
    jw w;
    int rc;

    r->cls = MET_QUERY;
    if (parse_q(r, &q, why, sizeof(why))) {
        srv_resp_error(o, 400, why);
        return;
    }
    q.sid = sid;
    if (!(buf = malloc(SRV_EXPORT_MAX))) {
        srv_resp_error(o, 500, "out of memory");
        return;
    }
    jw_init(&w, buf, SRV_EXPORT_MAX);
    rc = srv_store_q_export(s->store, &q, &w, why, sizeof(why));
    if (rc == GPUFL_ETOOBIG) {
        free(buf);
        srv_resp_error(o, 413, why[0] ? why : "the export is too large");
        return;
    }
    srv_query_done(o, rc, buf, w.len, "no such session");
}

/* A boolean member of a small JSON object body (absent: unchanged). */
static int body_bool(const srv_req *r, const char *key, int *out)
{
    jsonl_tok tok[64];
    jsonl_doc d;
    uint32_t t;

    if (!r->body_len)
        return 0;
    jsonl_doc_init(&d, tok, 64);
    if (jsonl_doc_parse_obj(&d, r->body, r->body_len))
        return -1;
    t = jsonl_doc_find(&d, key);
    if (t == JSONL_NOTFOUND)
        return 0;
    return jsonl_tok_bool(&d, t, out) ? -1 : 0;
}

/* {"k1":v1} or, with k2, {"k1":v1,"k2":v2} */
static void small_json2(srv_resp *o, int status, const char *k1, uint64_t v1,
                        const char *k2, uint64_t v2)
{
    char *buf = malloc(256);
    jw w;
    if (!buf) {
        srv_resp_error(o, 500, "out of memory");
        return;
    }
    jw_init(&w, buf, 256);
    jw_obj_begin(&w);
    jw_kv_u64(&w, k1, v1);
    if (k2)
        jw_kv_u64(&w, k2, v2);
    jw_obj_end(&w);
    srv_resp_json(o, status, buf, w.len);
}

static void small_json(srv_resp *o, int status, const char *k1, uint64_t v1)
{
    small_json2(o, status, k1, v1, NULL, 0);
}

/* 1: go on to the handler.  A probe (http.c's first callback, before the
 * body) stops here when the role allows the call, with no answer set. */
static int need(srv_req *r, srv_resp *o, int role)
{
    if (r->role == ROLE_ADMIN || r->role == role)
        return !r->probe;
    srv_resp_error(o, 403, "this key's role does not allow this call");
    return 0;
}

static void not_allowed(srv_resp *o, const char *allow)
{
    srv_resp_error(o, 405, "method not allowed");
    snprintf(o->allow, sizeof(o->allow), "%s", allow);
}

static void session_routes(srv *s, srv_req *r, route_ctx *rc, srv_resp *o)
{
    const char *sid = rc->seg[3];
    const char *sub = rc->nseg > 4 ? rc->seg[4] : NULL;
    int get = strcmp(r->method, "GET") == 0;
    static const struct {
        const char *name;
        srv_query_fn fn;
    } subs[] = {
        { "timeline", srv_store_q_timeline }, { "calls", srv_store_q_calls },
        { "copies", srv_store_q_copies },     { "scopes", srv_store_q_scopes },
        { "profile", srv_store_q_profile },   { "system", srv_store_q_system },
    };

    if (sub && !strcmp(sub, "keep") && rc->nseg == 5) {
        int keep = 1, e;
        if (strcmp(r->method, "PUT") != 0)
            return not_allowed(o, "PUT");
        if (!need(r, o, ROLE_ADMIN))
            return;
        if (arg_bool(r, "keep", &keep)) {
            srv_resp_error(o, 400, "keep must be true or false");
            return;
        }
        if (body_bool(r, "keep", &keep)) {
            srv_resp_error(o, 400, "body must be {\"keep\": true|false}");
            return;
        }
        e = srv_store_set_keep(s->store, sid, keep);
        if (e)
            return err_for(o, e, "no such session");
        return small_json(o, 200, "keep", (uint64_t)keep);
    }
    if (!get)
        return not_allowed(o, "GET");
    if (!need(r, o, ROLE_READ))
        return;
    if (!sub && rc->nseg == 4)
        return run_query(s, r, o, srv_store_q_session, sid, 0,
                         "no such session");
    if (sub && !strcmp(sub, "memory") && rc->nseg == 5)
        return srv_api_memory(s, r, o, sid, 0);
    if (sub && !strcmp(sub, "regressions") && rc->nseg == 5)
        return srv_api_regressions(s, r, o, sid);
    if (sub && !strcmp(sub, "durations") && rc->nseg == 5)
        return srv_api_durations(s, r, o, sid);
    if (sub && !strcmp(sub, "export") && rc->nseg == 5)
        return export_route(s, r, o, sid);
    if (sub && !strcmp(sub, "kernels")) {
        if (rc->nseg == 5)
            return run_query(s, r, o, srv_store_q_kernels, sid, 0,
                             "no such session");
        if (rc->nseg == 6 && !strcmp(rc->seg[5], "aggregate"))
            return run_query(s, r, o, srv_store_q_kernel_agg, sid, 0,
                             "no such session");
        if (rc->nseg == 6) {
            uint64_t kid;
            if (num_u64(rc->seg[5], &kid)) {
                srv_resp_error(o, 400, "kernel id must be an integer");
                return;
            }
            return run_query(s, r, o, srv_store_q_kernel, sid, kid,
                             "no such session or kernel");
        }
    }
    for (size_t i = 0;
         sub && rc->nseg == 5 && i < sizeof(subs) / sizeof(subs[0]); i++) {
        if (!strcmp(sub, subs[i].name))
            return run_query(s, r, o, subs[i].fn, sid, 0, "no such session");
    }
    srv_resp_error(o, 404, "no such endpoint");
}

static void api_v1(srv *s, srv_req *r, route_ctx *rc, srv_resp *o)
{
    const char *a = rc->nseg > 2 ? rc->seg[2] : "";
    int get = strcmp(r->method, "GET") == 0;

    if (!strcmp(a, "events")) {
        int st;
        if (rc->nseg != 4) {
            srv_resp_error(o, 404, "POST /api/v1/events/{device|scope|system}");
            return;
        }
        st = ingest_stream_index(rc->seg[3]);
        if (st < 0) {
            srv_resp_error(o, 404,
                           "unknown stream; valid streams: device, "
                           "scope, system");
            return;
        }
        if (strcmp(r->method, "POST") != 0)
            return not_allowed(o, "POST");
        if (need(r, o, ROLE_INGEST))
            srv_ingest_handle(s, r, st, o);
        return;
    }
    if (!strcmp(a, "hosts") && rc->nseg == 3) {
        if (!get)
            return not_allowed(o, "GET");
        if (need(r, o, ROLE_READ))
            run_query(s, r, o, srv_store_q_hosts, NULL, 0, "");
        return;
    }
    if (!strcmp(a, "hosts") && seg_is(rc, 4, "captures") &&
        (rc->nseg == 5 || (rc->nseg == 7 && seg_is(rc, 6, "result"))))
        return srv_api_host_captures(s, r, o, rc->seg[3],
                                     rc->nseg == 7 ? rc->seg[5] : NULL);
    if (!strcmp(a, "captures") && (rc->nseg == 3 || rc->nseg == 4))
        return srv_api_captures(s, r, o, rc->nseg == 4 ? rc->seg[3] : NULL);
    if (!strcmp(a, "fleet") && rc->nseg == 4 && seg_is(rc, 3, "waste")) {
        if (!get)
            return not_allowed(o, "GET");
        if (need(r, o, ROLE_READ))
            srv_api_waste(s, r, o);
        return;
    }
    if ((!strcmp(a, "fleet") || !strcmp(a, "verdicts")) && rc->nseg == 3) {
        if (!get)
            return not_allowed(o, "GET");
        if (need(r, o, ROLE_READ))
            srv_api_fleet(s, r, o, a[0] == 'f');
        return;
    }
    if (!strcmp(a, "memprof") &&
        (rc->nseg == 3 || (rc->nseg == 4 && !strcmp(rc->seg[3], "oom")))) {
        if (strcmp(r->method, "POST") != 0)
            return not_allowed(o, "POST");
        if (!need(r, o, ROLE_INGEST))
            return;
        if (rc->nseg == 4)
            srv_api_memoom_post(s, r, o);
        else
            srv_api_memprof_post(s, r, o);
        return;
    }
    if (!strcmp(a, "memory") && rc->nseg >= 4 && rc->nseg <= 5 &&
        !strcmp(rc->seg[3], "ooms")) {
        if (!get)
            return not_allowed(o, "GET");
        if (need(r, o, ROLE_READ))
            srv_api_memooms(s, r, o, rc->nseg == 5 ? rc->seg[4] : NULL);
        return;
    }
    if (!strcmp(a, "memory") &&
        (rc->nseg == 3 || (rc->nseg == 4 && !strcmp(rc->seg[3], "profiles")))) {
        if (!get)
            return not_allowed(o, "GET");
        if (need(r, o, ROLE_READ))
            srv_api_memory(s, r, o, NULL, rc->nseg == 4);
        return;
    }
    if ((!strcmp(a, "jobs") && (rc->nseg == 3 || rc->nseg == 4)) ||
        (!strcmp(a, "regressions") && rc->nseg == 3)) {
        if (!get)
            return not_allowed(o, "GET");
        if (!need(r, o, ROLE_READ))
            return;
        if (a[0] == 'j')
            srv_api_jobs(s, r, o, rc->nseg == 4 ? rc->seg[3] : NULL);
        else
            srv_api_regressions(s, r, o, NULL);
        return;
    }
    if (!strcmp(a, "compare") && rc->nseg == 3) {
        if (!get)
            return not_allowed(o, "GET");
        if (need(r, o, ROLE_READ))
            run_query(s, r, o, srv_store_q_compare, NULL, 0, "no such session");
        return;
    }
    if (!strcmp(a, "sessions")) {
        if (rc->nseg == 3) {
            if (!get)
                return not_allowed(o, "GET");
            if (need(r, o, ROLE_READ))
                run_query(s, r, o, srv_store_q_sessions, NULL, 0, "");
            return;
        }
        return session_routes(s, r, rc, o);
    }
    if (!strcmp(a, "keys")) {
        if (!need(r, o, ROLE_ADMIN))
            return;
        if (rc->nseg == 3 && get)
            return srv_api_keys_list(s, r, o);
        if (rc->nseg == 3 && !strcmp(r->method, "POST"))
            return srv_api_keys_create(s, r, o);
        if (rc->nseg == 4 && !strcmp(r->method, "DELETE")) {
            int64_t id;
            int e = num_i64(rc->seg[3], &id)
                        ? GPUFL_ENOTFOUND
                        : srv_store_key_revoke(s->store, id);
            if (e)
                return err_for(o, e, "no such live key");
            return small_json(o, 200, "revoked", (uint64_t)id);
        }
        return not_allowed(o, rc->nseg == 3 ? "GET, POST" : "DELETE");
    }
    if (!strcmp(a, "admin") && seg_is(rc, 3, "retention") && rc->nseg == 4) {
        srv_retention p = { 0, 0, 0, NULL };
        uint64_t n = 0, m = 0;
        int e;
        if (strcmp(r->method, "POST") != 0)
            return not_allowed(o, "POST");
        if (!need(r, o, ROLE_ADMIN))
            return;
        if (srv_arg_u64(r, "max_age", &p.max_age_s) ||
            srv_arg_u64(r, "max_db_bytes", &p.max_db_bytes) ||
            srv_arg_u64(r, "memprof_max_age", &p.memprof_max_age_s)) {
            srv_resp_error(o, 400,
                           "max_age, max_db_bytes and memprof_max_age are"
                           " integers");
            return;
        }
        e = srv_retention_run(s, &p, &n, &m);
        if (e)
            return err_for(o, e, "");
        return small_json2(o, 200, "pruned", n, "memprofs", m);
    }
    srv_resp_error(o, 404, "no such endpoint");
}

void srv_api_handle(srv *s, srv_req *r, srv_resp *o)
{
    route_ctx rc;
    int get = strcmp(r->method, "GET") == 0;

    if (!strcmp(r->path, "/healthz")) {
        small_json(o, 200, "ok", 1);
        return;
    }
    if (!strcmp(r->path, "/readyz")) {
        int e = srv_store_ping(s->store);
        if (e == GPUFL_ENOSPC)
            srv_resp_error(o, 503, "database writes fail: disk full");
        else if (e)
            srv_resp_error(o, 503, "database unavailable");
        else
            small_json(o, 200, "ready", 1);
        return;
    }
    if (strncmp(r->path, "/api/", 5) != 0 && strcmp(r->path, "/metrics") != 0) {
        if (get && srv_static_handle(s, r, o))
            return;
        srv_resp_error(o, 404, "not found");
        return;
    }
    if (r->role <= 0) /* not looked up by the probe */
        r->role = srv_auth_role(s, srv_req_header(r, "Authorization"), r->hosts,
                                sizeof(r->hosts));
    if (r->role == ROLE_UNKNOWN) {
        srv_resp_error(o, 503, "database unavailable; retry");
        return;
    }
    if (r->role == ROLE_NONE) {
        srv_resp_error(o, 401, "missing or invalid bearer token");
        return;
    }
    if (!strcmp(r->path, "/metrics")) {
        gbuf b = GBUF_INIT(SRV_METRICS_MAX);
        srv_regress_app *reg;
        srv_gauges g;
        size_t len;
        char *buf;
        int err;
        if (!get)
            return not_allowed(o, "GET");
        if (!need(r, o, ROLE_READ))
            return;
        memset(&g, 0, sizeof(g));
        g.db_bytes = srv_store_db_bytes(s->store);
        g.have_missing = srv_store_missing(s->store, g.missing) == GPUFL_OK;
        g.conns_open = srv_conns_open(s);
        g.body_buffered = __atomic_load_n(&s->buffered, __ATOMIC_RELAXED);
        srv_store_cold_stats(s->store, &g.cold);
        srv_store_kq_stats(s->store, &g.kq);
        srv_store_ingest_stats(s->store, &g.ing_commits, &g.ing_batches);
        srv_store_ingest_times(s->store, g.ing_ns);
        srv_store_kblock_cache_stats(s->store, &g.kbc);
        g.sqlite_wcache = srv_store_sqlite_wcache(s->store);
        reg = malloc(SRV_REGRESS_APPS_MAX * sizeof(*reg));
        if (reg && srv_store_regress_worst(s->store, reg, SRV_REGRESS_APPS_MAX,
                                           &g.n_regress) == 0)
            g.regress = reg;
        else
            g.n_regress = 0;
        srv_metrics_write(&s->met, &g, &b);
        free(reg);
        if ((err = b.err) != 0) {
            gbuf_release(&b);
            return srv_resp_error(o, 500, gpufl_strerror(err));
        }
        buf = gbuf_detach(&b, &len);
        srv_resp_json(o, 200, buf, len);
        o->ctype = "text/plain; version=0.0.4";
        return;
    }
    if (split(r->path, &rc) || !seg_is(&rc, 0, "api") ||
        !seg_is(&rc, 1, "v1")) {
        srv_resp_error(o, 404, "no such endpoint");
        return;
    }
    api_v1(s, r, &rc, o);
}
