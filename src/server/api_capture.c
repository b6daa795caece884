/*
 * api_capture.c - capture requests (docs/api.md "Capture requests"): an
 * admin asks a host's gpufl processes for a dump or a timed trace
 * (POST /api/v1/hosts/{host}/captures); that host's agent claims them
 * (GET, same path) and reports each one's outcome (POST
 * .../captures/{id}/result); anyone who may read lists them (GET
 * /api/v1/captures, /api/v1/captures/{id}).  The agent connects out, so
 * the GPU host needs no inbound port.
 *
 * Who may do what is decided from the path and the token alone, before a
 * body is read (the probe, http.c): the poll and the result take the
 * admin role or an ingest key bound to {host} (or to any host).  Bodies
 * are small objects parsed strictly: unknown or repeated members, wrong
 * types and values out of range are refused with a 400 naming them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpufl/gpufl.h>

#include "common/jsonl.h"
#include "common/num.h"
#include "common/opt.h"
#include "srv_int.h"
#include "store.h"

#define CAP_BODY_MAX 4096         /* POST .../captures */
#define CAP_RESULT_BODY_MAX 32768 /* POST .../result */
#define CAP_TOKENS 4096
#define CAP_HOST_MAX 255
#define CAP_PID_MAX 4194304ull           /* the kernel's pid_max bound */
#define CAP_FOR_DEFAULT_MS 30000ull      /* trace without "for" */
#define CAP_FOR_MAX_MS (24ull * 3600000) /* the process refuses more */
#define CAP_ANSWER_MAX (256u << 10)      /* one request or a claim */

/* A host name as the path carries it: what gethostname() gives. */
static int host_ok(const char *h)
{
    size_t n = strlen(h);
    if (!n || n > CAP_HOST_MAX)
        return 0;
    for (const char *p = h; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_'))
            return 0;
    return 1;
}

/* 1: go on.  The admin role, or an ingest key that may write for host. */
static int need_host(srv_req *r, srv_resp *o, const char *host)
{
    if (r->role == ROLE_ADMIN ||
        (r->role == ROLE_INGEST &&
         srv_key_host_ok(r->hosts, host, strlen(host))))
        return !r->probe;
    srv_resp_error(o, 403,
                   r->role == ROLE_INGEST
                       ? "this ingest key is not bound to this host"
                       : "this key's role does not allow this call");
    return 0;
}

static int printable(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
            return 0;
    return 1;
}

/* The members of the body's object: each key must be one of names[] and
 * appear once; t[i] gets the value token of names[i] (JSONL_NOTFOUND
 * when absent).  0, or -1 with why. */
static int members(jsonl_doc *d, const char *const *names, size_t nn,
                   uint32_t *t, char *why, size_t cap)
{
    uint32_t k = 1;
    for (size_t i = 0; i < nn; i++)
        t[i] = JSONL_NOTFOUND;
    for (uint32_t m = 0; m < d->tok[0].n; m++) {
        uint32_t v = k + 1;
        size_t i;
        for (i = 0; i < nn; i++)
            if (jsonl_tok_streq(d, k, names[i], strlen(names[i])))
                break;
        if (i == nn) {
            snprintf(why, cap, "unknown member \"%.*s\"",
                     d->tok[k].len > 64 ? 64 : (int)d->tok[k].len,
                     d->line + d->tok[k].off);
            return -1;
        }
        if (t[i] != JSONL_NOTFOUND) {
            snprintf(why, cap, "member \"%s\" given twice", names[i]);
            return -1;
        }
        t[i] = v;
        k = d->tok[v].next;
    }
    return 0;
}

static int parse_doc(srv_req *r, srv_resp *o, jsonl_doc *d, jsonl_tok *tok,
                     size_t max)
{
    char why[160];
    if (r->body_len > max) {
        snprintf(why, sizeof why, "the body is over %zu bytes", max);
        srv_resp_error(o, 413, why);
        return -1;
    }
    jsonl_doc_init(d, tok, CAP_TOKENS);
    if (!r->body_len || jsonl_doc_parse_obj(d, r->body, r->body_len)) {
        snprintf(why, sizeof why, "the body must be one JSON object%s%s",
                 d->err ? ": " : "", d->err ? d->err : "");
        srv_resp_error(o, 400, why);
        return -1;
    }
    return 0;
}

int srv_capture_parse(jsonl_doc *d, srv_capture *c, char *action, char *note,
                      char *why, size_t cap)
{
    static const char *const names[] = { "pid", "action", "for", "note" };
    uint32_t t[4];
    char fs[32];
    size_t n;
    uint64_t v;

    c->pid = 0;
    c->action = c->note = NULL;
    c->for_ms = 0;
    note[0] = 0;
    if (members(d, names, 4, t, why, cap))
        return -1;
    if (t[0] != JSONL_NOTFOUND && jsonl_tok_type(d, t[0]) != JSONL_NULL) {
        if (jsonl_tok_u64(d, t[0], &v) || !v || v > CAP_PID_MAX) {
            snprintf(why, cap,
                     "\"pid\" must be a process id (1 to %llu) or"
                     " null for every gpufl process of the host",
                     CAP_PID_MAX);
            return -1;
        }
        c->pid = (int64_t)v;
    }
    if (t[1] == JSONL_NOTFOUND || jsonl_tok_str(d, t[1], action, 16, &n) ||
        n != strlen(action) ||
        (strcmp(action, "dump") && strcmp(action, "trace"))) {
        snprintf(why, cap, "\"action\" must be \"dump\" or \"trace\"");
        return -1;
    }
    c->action = action;
    if (t[2] != JSONL_NOTFOUND) {
        if (!strcmp(action, "dump")) {
            snprintf(why, cap,
                     "\"for\" goes with \"trace\": a dump writes the window "
                     "and then GPUFL_TRIGGER_AFTER live");
            return -1;
        }
        if (jsonl_tok_str(d, t[2], fs, sizeof fs, &n) || n != strlen(fs) ||
            opt_parse_dur(fs, OPT_MS, OPT_MS, &c->for_ms) || !c->for_ms ||
            c->for_ms > CAP_FOR_MAX_MS) {
            snprintf(why, cap,
                     "\"for\" must be a duration such as \"30s\","
                     " \"500ms\" or \"2m\", at most 24 h");
            return -1;
        }
    } else if (!strcmp(action, "trace")) {
        c->for_ms = CAP_FOR_DEFAULT_MS;
    }
    if (t[3] != JSONL_NOTFOUND && jsonl_tok_type(d, t[3]) != JSONL_NULL) {
        if (jsonl_tok_str(d, t[3], note, SRV_CAPTURE_NOTE_MAX + 1, &n) ||
            !printable(note, n)) {
            snprintf(why, cap,
                     "\"note\" must be printable ASCII, at most %d"
                     " bytes",
                     SRV_CAPTURE_NOTE_MAX);
            return -1;
        }
        c->note = n ? note : NULL;
    }
    return 0;
}

/* The store's times of capture requests, from the configuration. */
#define CAP_TIMES(s)                                                           \
    (&(srv_captimes){ (s)->cfg.capture_expiry_s, (s)->cfg.capture_lease_s,     \
                      (uint32_t)(s)->cfg.capture_attempts })

/* One request (id) read back from the store as the answer (status); or,
 * claim_host given, that host's pending requests, now claimed. */
static void answer(srv *s, srv_resp *o, const char *claim_host, int64_t id,
                   int status)
{
    char *buf = malloc(CAP_ANSWER_MAX);
    jw w;
    int rc;
    if (!buf) {
        srv_resp_error(o, 500, "out of memory");
        return;
    }
    jw_init(&w, buf, CAP_ANSWER_MAX);
    rc = claim_host
             ? srv_store_capture_claim(s->store, claim_host, CAP_TIMES(s), &w)
             : srv_store_capture_get(s->store, id, CAP_TIMES(s), &w);
    if (rc) {
        free(buf);
        if (rc == GPUFL_ENOTFOUND)
            srv_resp_error(o, 404, "no such capture request");
        else
            srv_resp_store_error(o, rc);
        return;
    }
    srv_resp_json(o, status, buf, w.len);
}

static void post_request(srv *s, srv_req *r, srv_resp *o, const char *host)
{
    jsonl_tok *tok = malloc(CAP_TOKENS * sizeof *tok);
    char action[16], note[SRV_CAPTURE_NOTE_MAX + 1], why[200];
    srv_capture c = { host, 0, NULL, 0, NULL };
    int64_t id = 0;
    jsonl_doc d;
    int rc;

    if (!tok) {
        srv_resp_error(o, 500, "out of memory");
        return;
    }
    if (parse_doc(r, o, &d, tok, CAP_BODY_MAX))
        goto out;
    if (srv_capture_parse(&d, &c, action, note, why, sizeof why)) {
        srv_resp_error(o, 400, why);
        goto out;
    }
    rc = srv_store_capture_add(s->store, &c, CAP_TIMES(s), &id);
    if (rc == GPUFL_EAGAIN) {
        snprintf(why, sizeof why,
                 "host %s has %d capture requests waiting for its agent"
                 " already",
                 host, SRV_CAPTURE_PENDING_MAX);
        srv_resp_error(o, 429, why);
        goto out;
    }
    if (rc) {
        srv_resp_store_error(o, rc);
        goto out;
    }
    glog_info("capture", "capture request %lld for host %s: %s, pid %lld",
              (long long)id, host, action, (long long)c.pid);
    answer(s, o, NULL, id, 201);
out:
    free(tok);
}

int srv_capture_result_parse(jsonl_doc *d, int *ok, char *reason, size_t rcap,
                             srv_str *procs, char *why, size_t cap)
{
    static const char *const names[] = { "ok", "reason", "processes" };
    uint32_t t[3];
    size_t n = 0;

    *ok = 0;
    reason[0] = 0;
    procs->p = NULL;
    procs->n = 0;
    if (members(d, names, 3, t, why, cap))
        return -1;
    if (t[0] == JSONL_NOTFOUND || jsonl_tok_bool(d, t[0], ok)) {
        snprintf(why, cap, "\"ok\" must be true or false");
        return -1;
    }
    if (t[1] != JSONL_NOTFOUND && jsonl_tok_type(d, t[1]) != JSONL_NULL &&
        (jsonl_tok_str(d, t[1], reason, rcap, &n) || n != strlen(reason))) {
        snprintf(why, cap, "\"reason\" must be a string of at most %zu bytes",
                 rcap - 1);
        return -1;
    }
    if (t[2] != JSONL_NOTFOUND) {
        const jsonl_tok *a = &d->tok[t[2]];
        uint32_t e = t[2] + 1;
        if (a->type != JSONL_ARRAY || a->len > SRV_CAPTURE_RESULT_MAX) {
            snprintf(why, cap,
                     "\"processes\" must be an array of objects of at most %d"
                     " bytes",
                     SRV_CAPTURE_RESULT_MAX);
            return -1;
        }
        for (uint32_t i = 0; i < a->n; i++, e = d->tok[e].next)
            if (jsonl_tok_type(d, e) != JSONL_OBJECT) {
                snprintf(why, cap, "\"processes\" must hold objects");
                return -1;
            }
        procs->p = d->line + a->off;
        procs->n = a->len;
    }
    return 0;
}

static void post_result(srv *s, srv_req *r, srv_resp *o, const char *host,
                        int64_t id)
{
    jsonl_tok *tok = malloc(CAP_TOKENS * sizeof *tok);
    char reason[SRV_CAPTURE_REASON_MAX + 1], why[200], *procs = NULL;
    srv_str ps;
    jsonl_doc d;
    int ok = 0, rc;

    if (!tok) {
        srv_resp_error(o, 500, "out of memory");
        return;
    }
    if (parse_doc(r, o, &d, tok, CAP_RESULT_BODY_MAX))
        goto out;
    if (srv_capture_result_parse(&d, &ok, reason, sizeof reason, &ps, why,
                                 sizeof why)) {
        srv_resp_error(o, 400, why);
        goto out;
    }
    if (ps.p) {
        procs = malloc(ps.n + 1);
        if (!procs) {
            srv_resp_error(o, 500, "out of memory");
            goto out;
        }
        memcpy(procs, ps.p, ps.n);
        procs[ps.n] = 0;
    }
    rc = srv_store_capture_result(s->store, host, id, ok, reason, procs,
                                  CAP_TIMES(s));
    if (rc == GPUFL_ENOTFOUND) {
        srv_resp_error(o, 404, "no such capture request for this host");
        goto out;
    }
    if (rc == GPUFL_ECONFLICT) {
        srv_resp_error(o, 409,
                       "this request is not waiting for an outcome (not "
                       "picked up yet, or finished: expired, failed or done)");
        goto out;
    }
    if (rc) {
        srv_resp_store_error(o, rc);
        goto out;
    }
    answer(s, o, NULL, id, 200);
out:
    free(procs);
    free(tok);
}

void srv_api_host_captures(srv *s, srv_req *r, srv_resp *o, const char *host,
                           const char *id_seg)
{
    int post = !strcmp(r->method, "POST"), get = !strcmp(r->method, "GET");
    int64_t id = 0;

    if (!host_ok(host)) {
        srv_resp_error(o, 400,
                       "the host must be 1 to 255 letters, digits, '.', '-'"
                       " or '_'");
        return;
    }
    if (id_seg) { /* .../captures/{id}/result */
        if (!post) {
            srv_resp_error(o, 405, "method not allowed");
            snprintf(o->allow, sizeof o->allow, "POST");
            return;
        }
        if (num_i64(id_seg, &id) || id <= 0) {
            srv_resp_error(o, 404, "no such capture request for this host");
            return;
        }
        if (need_host(r, o, host))
            post_result(s, r, o, host, id);
        return;
    }
    if (post) {
        if (r->role != ROLE_ADMIN) {
            srv_resp_error(o, 403, "capture requests need the admin role");
            return;
        }
        if (!r->probe)
            post_request(s, r, o, host);
        return;
    }
    if (!get) {
        srv_resp_error(o, 405, "method not allowed");
        snprintf(o->allow, sizeof o->allow, "GET, POST");
        return;
    }
    if (need_host(r, o, host))
        answer(s, o, host, 0, 200);
}

void srv_api_captures(srv *s, srv_req *r, srv_resp *o, const char *id_seg)
{
    srv_capq q;
    const char *cur = srv_req_arg(r, "cursor");
    uint64_t limit = 0;
    char *buf;
    jw w;
    int rc;

    if (strcmp(r->method, "GET")) {
        srv_resp_error(o, 405, "method not allowed");
        snprintf(o->allow, sizeof o->allow, "GET");
        return;
    }
    if (r->role != ROLE_ADMIN && r->role != ROLE_READ) {
        srv_resp_error(o, 403, "this key's role does not allow this call");
        return;
    }
    if (r->probe)
        return;
    if (id_seg) {
        int64_t id;
        if (num_i64(id_seg, &id) || id <= 0) {
            srv_resp_error(o, 404, "no such capture request");
            return;
        }
        answer(s, o, NULL, id, 200);
        return;
    }
    memset(&q, 0, sizeof q);
    q.host = srv_req_arg(r, "host");
    q.state = srv_req_arg(r, "state");
    if (srv_arg_u64(r, "limit", &limit) || limit > 1000) {
        srv_resp_error(o, 400, "limit must be 1 to 1000");
        return;
    }
    q.limit = (uint32_t)limit;
    if (q.state && strcmp(q.state, "pending") && strcmp(q.state, "delivered") &&
        strcmp(q.state, "done") && strcmp(q.state, "failed") &&
        strcmp(q.state, "expired")) {
        srv_resp_error(o, 400,
                       "state must be pending, delivered, done, failed or"
                       " expired");
        return;
    }
    if (cur && srv_cursor_decode(cur, &q.before, 1)) {
        srv_resp_error(o, 400, "invalid cursor");
        return;
    }
    buf = srv_query_buf(o, &w);
    if (!buf)
        return;
    rc = srv_store_q_captures(s->store, &q, CAP_TIMES(s), &w);
    srv_query_done(o, rc, buf, w.len, "");
}
