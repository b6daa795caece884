/*
 * api_memprof.c - memory profiles from `gpufl memprof` (docs/api.md,
 * "Memory profiles"): POST /api/v1/memprof validates one profile and
 * stores it in one transaction (answered after the commit); GET
 * /api/v1/memory, /api/v1/sessions/{sid}/memory and
 * /api/v1/memory/profiles answer the flame-graph views and the list.
 * api.c routes here after the role check.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gpufl/gpufl.h>

#include "common/jsonl.h"
#include "ingest.h"
#include "srv_int.h"
#include "store.h"

#define MEMPROF_STACKS_MAX 20000
#define MEMPROF_FRAMES_MAX 256
#define MEMPROF_FRAME_LEN_MAX 1024
#define MEMPROF_TOKENS_MAX (16u << 20)

static const char *const counters[8] = { "alloc_bytes", "alloc_count",
                                         "free_bytes",  "free_count",
                                         "inuse_bytes", "inuse_count",
                                         "fail_bytes",  "fail_count" };

/* A string member into *out (borrowed, still JSON-escaped: the values
 * checked here are plain words, host names and UUIDs). */
static int str_member(jsonl_doc *d, uint32_t obj, const char *key, srv_str *out,
                      size_t max, int required)
{
    uint32_t t = jsonl_obj_find(d, obj, key);
    if (t == JSONL_NOTFOUND || jsonl_tok_type(d, t) == JSONL_NULL)
        return required ? -1 : 0;
    if (jsonl_tok_type(d, t) != JSONL_STRING ||
        (d->tok[t].flags & JSONL_F_ESC) || d->tok[t].len > max ||
        (required && !d->tok[t].len))
        return -1;
    out->p = d->line + d->tok[t].off;
    out->n = d->tok[t].len;
    return 0;
}

/* An unsigned integer member below 2^63: the database's integers are
 * signed 64-bit, and a larger value would be stored negative. */
static int u64_member(jsonl_doc *d, uint32_t obj, const char *key, uint64_t *v,
                      int required)
{
    uint32_t t = jsonl_obj_find(d, obj, key);
    *v = 0;
    if (t == JSONL_NOTFOUND)
        return required ? -1 : 0;
    return jsonl_tok_u64(d, t, v) || *v > (uint64_t)INT64_MAX ? -1 : 0;
}

int srv_memprof_parse(jsonl_doc *d, srv_memprof *p, srv_memstack **stacks,
                      char *why, size_t cap)
{
    uint64_t v, alloc = 0, inuse = 0;
    uint32_t t;
    memset(p, 0, sizeof(*p));
#define BAD(...)                                                               \
    do {                                                                       \
        snprintf(why, cap, __VA_ARGS__);                                       \
        return 400;                                                            \
    } while (0)
    if (u64_member(d, 0, "v", &v, 1) || v != 1)
        BAD("\"v\" must be 1");
    if (str_member(d, 0, "host", &p->host, 255, 1))
        BAD("\"host\" must be a non-empty plain string (<= 255 bytes)");
    if (u64_member(d, 0, "pid", &p->pid, 1) || !p->pid || p->pid > UINT32_MAX)
        BAD("\"pid\" must be a positive integer");
    if (str_member(d, 0, "comm", &p->comm, 255, 0))
        BAD("\"comm\" must be a plain string");
    if (str_member(d, 0, "sid", &p->sid, 36, 0) ||
        (p->sid.p && !ingest_is_uuid(p->sid.p, p->sid.n)))
        BAD("\"sid\" must be a session id (a lower-case UUID)");
    if (u64_member(d, 0, "start", &p->start, 1) ||
        u64_member(d, 0, "end", &p->end, 1) || p->end < p->start)
        BAD("\"start\" and \"end\" must be ns below 2^63 with start <="
            " end");
    if (str_member(d, 0, "source", &p->source, 16, 1) ||
        (!(p->source.n == 4 && !memcmp(p->source.p, "ebpf", 4)) &&
         !(p->source.n == 7 && !memcmp(p->source.p, "preload", 7)) &&
         !(p->source.n == 9 && !memcmp(p->source.p, "simulated", 9))))
        BAD("\"source\" must be ebpf, preload or simulated");
    t = jsonl_doc_find(d, "simulated");
    if (t != JSONL_NOTFOUND && jsonl_tok_bool(d, t, &p->simulated))
        BAD("\"simulated\" must be true or false");
    t = jsonl_doc_find(d, "stacks");
    if (jsonl_tok_type(d, t) != JSONL_ARRAY)
        BAD("\"stacks\" must be an array");
    if (d->tok[t].n > MEMPROF_STACKS_MAX) {
        snprintf(why, cap, "more than %d stacks", MEMPROF_STACKS_MAX);
        return 413;
    }
    *stacks = calloc(d->tok[t].n ? d->tok[t].n : 1, sizeof(**stacks));
    if (!*stacks) {
        snprintf(why, cap, "out of memory");
        return 500;
    }
    uint32_t e = t + 1;
    for (uint32_t i = 0; i < d->tok[t].n; i++, e = d->tok[e].next) {
        srv_memstack *s = &(*stacks)[i];
        if (jsonl_tok_type(d, e) != JSONL_OBJECT)
            BAD("stacks[%u] is not an object", i);
        uint32_t f = jsonl_obj_find(d, e, "frames");
        if (jsonl_tok_type(d, f) != JSONL_ARRAY || !d->tok[f].n)
            BAD("stacks[%u].frames must be a non-empty array", i);
        if (d->tok[f].n > MEMPROF_FRAMES_MAX) {
            snprintf(why, cap, "stacks[%u] has more than %d frames", i,
                     MEMPROF_FRAMES_MAX);
            return 413;
        }
        for (uint32_t k = 0, x = f + 1; k < d->tok[f].n;
             k++, x = d->tok[x].next)
            if (jsonl_tok_type(d, x) != JSONL_STRING ||
                d->tok[x].len > MEMPROF_FRAME_LEN_MAX)
                BAD("stacks[%u].frames[%u] must be a string (<= %d bytes)", i,
                    k, MEMPROF_FRAME_LEN_MAX);
        s->frames.p = d->line + d->tok[f].off;
        s->frames.n = d->tok[f].len;
        for (int k = 0; k < 8; k++)
            if (u64_member(d, e, counters[k], &s->v[k], 0))
                BAD("stacks[%u].%s must be an unsigned integer below 2^63", i,
                    counters[k]);
        /* the profile's totals are stored too: they must fit as well */
        alloc += s->v[0];
        inuse += s->v[4];
        if (alloc > (uint64_t)INT64_MAX || inuse > (uint64_t)INT64_MAX)
            BAD("the stacks' %s add up to 2^63 or more",
                alloc > (uint64_t)INT64_MAX ? "alloc_bytes" : "inuse_bytes");
    }
    p->stacks = *stacks;
    p->n = d->tok[t].n;
#undef BAD
    return 0;
}

int srv_json_body(srv *s, srv_req *r, srv_resp *o, char **body, jsonl_tok **tok,
                  jsonl_doc *d)
{
    const char *ct = srv_req_header(r, "Content-Type");
    int enc = ingest_encoding(srv_req_header(r, "Content-Encoding"));
    const char *dwhy = NULL;
    char why[160];
    size_t blen = 0;
    int rc;

    *body = NULL;
    *tok = NULL;
    r->cls = MET_INGEST;
    if (!ct || strncasecmp(ct, "application/json", 16) ||
        (ct[16] && ct[16] != ';' && ct[16] != ' ')) {
        srv_resp_error(o, 415, "Content-Type must be application/json");
        return -1;
    }
    if (enc < 0) {
        srv_resp_error(o, 415,
                       "Content-Encoding must be identity, gzip or zstd");
        return -1;
    }
    rc = ingest_decode(enc, r->body ? r->body : "", r->body_len,
                       s->cfg.max_decoded, body, &blen, &dwhy);
    if (rc) {
        srv_resp_error(o,
                       rc == GPUFL_ETOOBIG  ? 413
                       : rc == GPUFL_ENOMEM ? 500
                                            : 400,
                       rc == GPUFL_ETOOBIG  ? "decoded body over the "
                                              "--max-decoded cap"
                       : rc == GPUFL_ENOMEM ? "out of memory"
                                            : dwhy);
        return -1;
    }
    /* every token takes at least one byte of text */
    size_t ntok = blen + 2 < MEMPROF_TOKENS_MAX ? blen + 2 : MEMPROF_TOKENS_MAX;
    *tok = malloc(ntok * sizeof(**tok));
    if (!*tok) {
        srv_resp_error(o, 500, "out of memory");
        return -1;
    }
    jsonl_doc_init(d, *tok, (uint32_t)ntok);
    rc = jsonl_doc_parse_obj(d, *body, blen);
    if (rc) {
        snprintf(why, sizeof(why), "body is not a JSON object: %s at byte %zu",
                 d->err ? d->err : "error", d->err_off);
        srv_resp_error(o, rc == GPUFL_ETOOBIG ? 413 : 400, why);
        return -1;
    }
    return 0;
}

void srv_api_memprof_post(srv *s, srv_req *r, srv_resp *o)
{
    char *body = NULL, why[160], sid[64];
    jsonl_tok *tok = NULL;
    srv_memstack *stacks = NULL;
    srv_memprof p;
    jsonl_doc d;
    int64_t id = 0;
    int rc, st;

    if (srv_json_body(s, r, o, &body, &tok, &d))
        goto out;
    st = srv_memprof_parse(&d, &p, &stacks, why, sizeof(why));
    if (st) {
        srv_resp_error(o, st, why);
        goto out;
    }
    if (srv_resp_host_refused(o, r->hosts, "profile", p.host.p, p.host.n))
        goto out;
    rc = srv_store_memprof_put(s->store, &p, &id, sid, sizeof(sid));
    if (rc) {
        srv_resp_store_error(o, rc);
        goto out;
    }
    char *buf = malloc(256);
    if (!buf) {
        srv_resp_error(o, 500, "out of memory");
        goto out;
    }
    jw w;
    jw_init(&w, buf, 256);
    jw_obj_begin(&w);
    jw_kv_i64(&w, "profile", id);
    jw_kv_u64(&w, "stacks", p.n);
    jw_key(&w, "sid");
    if (sid[0])
        jw_str(&w, sid);
    else
        jw_null(&w);
    jw_obj_end(&w);
    srv_resp_json(o, 200, buf, w.len);
out:
    free(stacks);
    free(tok);
    free(body);
}

void srv_api_memory(srv *s, srv_req *r, srv_resp *o, const char *sid, int list)
{
    static const char *const nums[] = { "pid", "from", "to", "limit" };
    uint64_t v[4];
    srv_memq q;
    const char *view;
    char *buf;
    jw w;
    int rc;

    r->cls = MET_QUERY;
    memset(&q, 0, sizeof(q));
    if (srv_args_u64(r, o, nums, v, 4))
        return;
    q.pid = v[0];
    q.from = v[1];
    q.to = v[2];
    q.limit = v[3] > 1000000 ? 1000000 : (uint32_t)v[3];
    q.sid = sid ? sid : srv_req_arg(r, "sid");
    q.host = srv_req_arg(r, "host");
    q.cursor = srv_req_arg(r, "cursor");
    view = srv_req_arg(r, "view");
    if (!view || !strcmp(view, "alloc"))
        q.view = SRV_MEM_ALLOC;
    else if (!strcmp(view, "inuse"))
        q.view = SRV_MEM_INUSE;
    else if (!strcmp(view, "fail"))
        q.view = SRV_MEM_FAIL;
    else {
        srv_resp_error(o, 400, "view must be alloc, inuse or fail");
        return;
    }
    if (!(buf = srv_query_buf(o, &w)))
        return;
    rc = list ? srv_store_q_memprofs(s->store, &q, &w)
              : srv_store_q_memory(s->store, &q, &w);
    srv_query_done(o, rc, buf, w.len, "no such session");
}
