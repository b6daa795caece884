/*
 * capture.c - capture requests from gpufl-server (--captures, docs/
 * agent.md "Capture requests"): a thread of its own polls GET
 * /api/v1/hosts/{host}/captures every --captures-poll, forwards each
 * request to the local gpufl processes' control sockets (src/common/
 * ctlc.h, the client `gpufl ctl` uses) and reports the outcome (POST
 * .../captures/{id}/result).  A dump it causes is an ordinary session in
 * the folders the agent ships from.
 *
 * Its own thread because a dump may take the process up to 10 s to
 * answer: the shipping loop (run.c) never waits for it.  It shares
 * nothing with that loop but the read-only configuration and the stop
 * flag.
 */
#include "agent/capture.h"

#include "common/buf.h"
#include "common/ctlc.h"
#include "common/jsonl.h"
#include "common/jw.h"
#include "common/log.h"
#include "httpc/httpc.h"

#include <gpufl/gpufl.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The largest claim answer kept (64 requests of a few hundred bytes). */
#define CAP_RESP_MAX (1u << 20)
#define CAP_TOKENS 8192
/* Processes one request reaches at most, and listed in its outcome. */
#define CAP_PIDS_MAX 4096
#define CAP_LISTED_MAX 64
#define CAP_BODY_MAX 17000 /* an outcome, within the server's caps */
/* An outcome is POSTed this many times before it is given up (the
 * server then fails the request when --capture-expiry passes). */
#define CAP_POST_TRIES 3

struct agent_capture {
    const agent_cfg *cfg;
    volatile int *stop;
    pthread_t th;
    int started;
    httpc *hc;
    char host[256];
    char *url; /* .../hosts/{host}/captures */
    gbuf resp;
    jsonl_tok *tok;
    long *pids;
    char *reply;  /* CTL_RESP_MAX + 1 */
    char *body;   /* an outcome: CAP_BODY_MAX */
    long last_st; /* the last poll's HTTP status: failures said once */
    uint64_t polls, forwarded;
};

/* One claimed request. */
typedef struct cap_req {
    int64_t id, pid; /* pid 0: every gpufl process */
    char action[16];
    uint64_t for_ms;
    char note[256];
} cap_req;

static void nap_ms(const agent_capture *c, uint64_t ms)
{
    while (ms && !*c->stop) {
        uint64_t step = ms < 100 ? ms : 100;
        struct timespec t = { 0, (long)step * 1000000L };
        nanosleep(&t, NULL);
        ms -= step;
    }
}

static int do_req(agent_capture *c, const char *url, const char *method,
                  const char *body, size_t len, long *status, char *why,
                  size_t wcap)
{
    struct curl_slist *hdr = NULL;
    httpc_req r = { url, method, NULL, body, len };
    int rc;

    gbuf_reset(&c->resp);
    if ((c->cfg->token && *c->cfg->token &&
         httpc_auth(&hdr, "Bearer", c->cfg->token)) ||
        (body && httpc_header(&hdr, "Content-Type", "application/json"))) {
        httpc_headers_free(hdr);
        snprintf(why, wcap, "out of memory");
        return GPUFL_ENOMEM;
    }
    r.headers = hdr;
    rc = httpc_do(c->hc, &r, &c->resp, status, why, wcap);
    httpc_headers_free(hdr);
    return rc;
}

/* Members of one item of the claim's answer; -1 when it is not a request
 * this agent understands. */
static int item_read(jsonl_doc *d, uint32_t o, cap_req *q)
{
    uint32_t t;
    size_t n;
    memset(q, 0, sizeof *q);
    if (jsonl_tok_i64(d, jsonl_obj_find(d, o, "id"), &q->id) || q->id <= 0)
        return -1;
    t = jsonl_obj_find(d, o, "pid");
    if (t != JSONL_NOTFOUND && jsonl_tok_type(d, t) != JSONL_NULL &&
        (jsonl_tok_i64(d, t, &q->pid) || q->pid <= 0 || q->pid > 4194304))
        return -1;
    if (jsonl_tok_str(d, jsonl_obj_find(d, o, "action"), q->action,
                      sizeof q->action, &n))
        return -1;
    t = jsonl_obj_find(d, o, "for_ms");
    if (t != JSONL_NOTFOUND && jsonl_tok_type(d, t) != JSONL_NULL &&
        jsonl_tok_u64(d, t, &q->for_ms))
        return -1;
    t = jsonl_obj_find(d, o, "note");
    if (t != JSONL_NOTFOUND && jsonl_tok_type(d, t) != JSONL_NULL &&
        jsonl_tok_str(d, t, q->note, sizeof q->note, &n))
        return -1;
    for (const char *p = q->note; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
            return -1; /* the server checks: printable ASCII */
    return 0;
}

/* The control request line for q; -1 for an action it does not know. */
static int ctl_line(const cap_req *q, char *out, size_t cap)
{
    if (!strcmp(q->action, "dump")) {
        /* the trigger line's detail says who asked */
        snprintf(out, cap, "dump server capture %lld%s%.200s", (long long)q->id,
                 q->note[0] ? ": " : "", q->note);
        return 0;
    }
    if (!strcmp(q->action, "trace") && q->for_ms) {
        snprintf(out, cap, "trace on for=%llu", (unsigned long long)q->for_ms);
        return 0;
    }
    return -1;
}

/* One process's answer into the outcome's array: pid, ok, and error or
 * what the process said it did. */
static int one_process(agent_capture *c, long pid, const char *line, jw *w,
                       int listed, char *first_err, size_t fcap)
{
    char err[400], s[4096];
    jsonl_tok tok[256];
    jsonl_doc d;
    int ok = 0;
    size_t n;

    jsonl_doc_init(&d, tok, 256);
    if (ctlc_ask(pid, line, CTLC_WAIT_S, c->reply, CTL_RESP_MAX + 1, err,
                 sizeof err) == 0) {
        if (jsonl_doc_parse_obj(&d, c->reply, strlen(c->reply) - 1) ||
            jsonl_tok_bool(&d, jsonl_doc_find(&d, "ok"), &ok))
            snprintf(err, sizeof err,
                     "the process's reply is not one it "
                     "should give");
        else if (!ok && jsonl_tok_str(&d, jsonl_doc_find(&d, "error"), err,
                                      sizeof err, &n))
            snprintf(err, sizeof err, "refused, with no reason given");
    }
    if (!ok && !first_err[0])
        snprintf(first_err, fcap, "pid %ld: %.300s", pid, err);
    if (!listed)
        return ok;
    jw_obj_begin(w);
    jw_kv_u64(w, "pid", (uint64_t)pid);
    jw_key(w, "ok");
    jw_bool(w, ok);
    if (!ok) {
        jw_key(w, "error");
        jw_strn(w, err, strlen(err), 300);
    } else {
        uint64_t v;
        if (!jsonl_tok_str(&d, jsonl_doc_find(&d, "prefix"), s, sizeof s, &n)) {
            jw_key(w, "prefix");
            jw_strn(w, s, n, 1024);
        }
        if (!jsonl_tok_u64(&d, jsonl_doc_find(&d, "dump"), &v))
            jw_kv_u64(w, "dump", v);
        if (!jsonl_tok_u64(&d, jsonl_doc_find(&d, "for_ms"), &v))
            jw_kv_u64(w, "for_ms", v);
    }
    jw_obj_end(w);
    return ok;
}

/* Forwards q and POSTs its outcome. */
static void handle(agent_capture *c, const cap_req *q)
{
    char line[CTL_REQ_MAX], reason[512], first_err[400], url[4400];
    size_t np = 0, nok = 0;
    jw w;

    first_err[0] = 0;
    jw_init(&w, c->body, CAP_BODY_MAX);
    jw_obj_begin(&w);
    if (ctl_line(q, line, sizeof line)) {
        snprintf(reason, sizeof reason,
                 "this agent does not know action \"%s\"", q->action);
    } else {
        if (q->pid)
            c->pids[np++] = q->pid;
        else
            np = ctlc_find_all(c->pids, CAP_PIDS_MAX);
        jw_key(&w, "processes");
        jw_arr_begin(&w);
        for (size_t i = 0; i < np && !*c->stop; i++)
            nok +=
                (size_t)one_process(c, c->pids[i], line, &w, i < CAP_LISTED_MAX,
                                    first_err, sizeof first_err);
        jw_arr_end(&w);
        if (!np)
            snprintf(reason, sizeof reason,
                     "no gpufl process of this agent's user with a control "
                     "socket on %s",
                     c->host);
        else if (nok == np)
            snprintf(reason, sizeof reason, "%zu of %zu processes: ok", nok,
                     np);
        else
            snprintf(reason, sizeof reason, "%zu of %zu processes: ok; %.400s",
                     nok, np, first_err);
    }
    jw_key(&w, "ok");
    jw_bool(&w, nok > 0);
    jw_key(&w, "reason");
    jw_strn(&w, reason, strlen(reason), 500);
    jw_obj_end(&w);
    if (w.err) /* cannot happen: CAP_LISTED_MAX entries of < 1.5 KiB fit */
        return;
    c->forwarded++;
    glog_info("capture", "capture request %lld (%s): %s", (long long)q->id,
              q->action, reason);
    snprintf(url, sizeof url, "%s/%lld/result", c->url, (long long)q->id);
    for (int i = 0; i < CAP_POST_TRIES && !*c->stop; i++) {
        char why[256];
        long st = 0;
        int rc = do_req(c, url, "POST", c->body, w.len, &st, why, sizeof why);
        if (!rc && st == 200)
            return;
        if (!rc && st >= 400 && st < 500) {
            glog_warn("capture",
                      "the server refused the outcome of capture request "
                      "%lld: HTTP %ld",
                      (long long)q->id, st);
            return;
        }
        if (rc)
            glog_warn("capture", "outcome of capture request %lld: %s",
                      (long long)q->id, why);
        nap_ms(c, 1000);
    }
}

/* One poll: claim, forward, report. */
static void poll_once(agent_capture *c)
{
    char why[256];
    long st = 0;
    jsonl_doc d;
    uint32_t items, e;
    cap_req q;
    int rc = do_req(c, c->url, "GET", NULL, 0, &st, why, sizeof why);

    c->polls++;
    if (rc || st != 200) {
        /* said once per change: a server down is logged by the sink too */
        if (st != c->last_st)
            glog_warn("capture", "polling %s: %s", c->url,
                      rc ? why
                      : st == 401 || st == 403
                          ? "refused (the token must be an admin key or an "
                            "ingest key bound to this host)"
                          : "unexpected HTTP status");
        c->last_st = st;
        return;
    }
    c->last_st = st;
    jsonl_doc_init(&d, c->tok, CAP_TOKENS);
    if (c->resp.err || jsonl_doc_parse_obj(&d, c->resp.p, c->resp.len) ||
        jsonl_tok_type(&d, (items = jsonl_doc_find(&d, "items"))) !=
            JSONL_ARRAY) {
        glog_warn("capture",
                  "polling %s: the answer is not a list of "
                  "capture requests",
                  c->url);
        return;
    }
    e = items + 1;
    for (uint32_t i = 0; i < d.tok[items].n && !*c->stop;
         i++, e = d.tok[e].next) {
        if (jsonl_tok_type(&d, e) != JSONL_OBJECT || item_read(&d, e, &q)) {
            glog_warn("capture", "a capture request this agent cannot read "
                                 "was skipped");
            continue;
        }
        handle(c, &q);
    }
}

static void *run(void *arg)
{
    agent_capture *c = arg;
    while (!*c->stop) {
        poll_once(c);
        nap_ms(c, c->cfg->captures_poll_ms);
    }
    return NULL;
}

int agent_capture_url(const agent_cfg *cfg, const char *host, char *out,
                      size_t cap)
{
    const char *api = cfg->url ? strstr(cfg->url, "/api/v1/") : NULL;
    if (!api)
        return -1;
    if ((size_t)snprintf(out, cap, "%.*s/api/v1/hosts/%s/captures",
                         (int)(api - cfg->url), cfg->url, host) >= cap)
        return -1;
    return 0;
}

int agent_capture_host(const agent_cfg *cfg, char *out, size_t cap)
{
    if (cfg->captures_host && *cfg->captures_host)
        snprintf(out, cap, "%s", cfg->captures_host);
    else if (gethostname(out, cap - 1) < 0)
        return -1;
    out[cap - 1] = 0;
    if (!*out || strlen(out) > 255)
        return -1;
    for (const char *p = out; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_'))
            return -1;
    return 0;
}

int agent_capture_start(const agent_cfg *cfg, volatile int *stop,
                        agent_capture **out)
{
    agent_capture *c = calloc(1, sizeof *c);
    httpc_cfg hc = { cfg->timeout_ms, cfg->ca_file, "gpufl-agent", 1 };
    char why[256], url[4400];

    *out = NULL;
    if (!c)
        return GPUFL_ENOMEM;
    c->cfg = cfg;
    c->stop = stop;
    gbuf_init(&c->resp, CAP_RESP_MAX);
    if (agent_capture_host(cfg, c->host, sizeof c->host) ||
        agent_capture_url(cfg, c->host, url, sizeof url)) {
        glog_error("capture", "--captures: no usable host name or --url");
        agent_capture_stop(c);
        return GPUFL_EINVAL;
    }
    c->url = strdup(url);
    c->tok = malloc(CAP_TOKENS * sizeof *c->tok);
    c->pids = malloc(CAP_PIDS_MAX * sizeof *c->pids);
    c->reply = malloc(CTL_RESP_MAX + 1);
    c->body = malloc(CAP_BODY_MAX);
    c->last_st = -1;
    if (!c->url || !c->tok || !c->pids || !c->reply || !c->body) {
        agent_capture_stop(c);
        return GPUFL_ENOMEM;
    }
    if (httpc_new(&c->hc, &hc, why, sizeof why)) {
        glog_error("capture", "--captures: %s", why);
        agent_capture_stop(c);
        return GPUFL_EINVAL;
    }
    if (pthread_create(&c->th, NULL, run, c)) {
        agent_capture_stop(c);
        return GPUFL_ENOMEM;
    }
    c->started = 1;
    glog_info("capture", "polling %s every %llu ms for capture requests",
              c->url, (unsigned long long)cfg->captures_poll_ms);
    *out = c;
    return GPUFL_OK;
}

void agent_capture_stop(agent_capture *c)
{
    if (!c)
        return;
    if (c->started)
        pthread_join(c->th, NULL);
    httpc_free(c->hc);
    gbuf_release(&c->resp);
    free(c->url);
    free(c->tok);
    free(c->pids);
    free(c->reply);
    free(c->body);
    free(c);
}
