/*
 * api_memoom.c - OOM reports from `gpufl memprof --oom` (docs/api.md "OOM
 * reports"): POST /api/v1/memprof/oom checks one report member by member
 * and rewrites it as it checks, in the form every answer has (bytes and
 * ns as decimal strings, unknown members dropped), then stores that text
 * with the columns the list filters on; GET /api/v1/memory/ooms lists
 * them and GET /api/v1/memory/ooms/{id} answers one.  api.c routes here
 * after the role check.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpufl/gpufl.h>

#include "common/buf.h"
#include "common/jsonl.h"
#include "common/num.h"
#include "ingest.h"
#include "srv_int.h"
#include "srv_json.h"
#include "store.h"

#define OOM_STACKS_MAX 20000
#define OOM_FRAMES_MAX 256
#define OOM_FRAME_LEN_MAX 1024
#define OOM_EVENTS_MAX 50000
#define OOM_RETRIES_MAX 64
#define OOM_NAME_MAX 64  /* api, op, sources, allocator */
#define OOM_WHY_MAX 1024 /* device.why */
/* the stored report: answers stay < 16 MiB (SRV_RESP_MAX); said in
 * srv_memoom_parse's 413 */
#define OOM_BODY_MAX (12u << 20)
_Static_assert(OOM_BODY_MAX + 4096 < SRV_RESP_MAX, "GET ooms/{id} holds one");

/* The check-and-rewrite pass: the parsed body, the canonical text being
 * written, and the first error (an HTTP status and why). */
typedef struct rd {
    jsonl_doc *d;
    jw *w; /* borrowed: jw_gbuf_run's writer of this pass */
    int st;
    char why[200];
    uint32_t nstacks;
} rd;

__attribute__((format(printf, 3, 4))) static int bad(rd *r, int st,
                                                     const char *fmt, ...)
{
    va_list ap;
    if (r->st)
        return -1;
    r->st = st;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof(r->why), fmt, ap);
    va_end(ap);
    return -1;
}

/* Member key of object obj: its token, JSONL_NOTFOUND when absent or
 * null. */
static uint32_t member(rd *r, uint32_t obj, const char *key)
{
    uint32_t t = jsonl_obj_find(r->d, obj, key);
    return t != JSONL_NOTFOUND && jsonl_tok_type(r->d, t) == JSONL_NULL
               ? JSONL_NOTFOUND
               : t;
}

/* An unsigned integer below 2^63, as a JSON number or a string of
 * decimal digits (what the answers send); 0 ok, 1 absent, -1 bad. */
static int tok_u63(rd *r, uint32_t t, uint64_t *v)
{
    char buf[24];
    if (t == JSONL_NOTFOUND)
        return 1;
    if (jsonl_tok_type(r->d, t) == JSONL_STRING) {
        const jsonl_tok *k = &r->d->tok[t];
        if ((k->flags & JSONL_F_ESC) || k->len == 0 || k->len > 20)
            return -1;
        memcpy(buf, r->d->line + k->off, k->len);
        buf[k->len] = '\0';
        if (num_u64(buf, v))
            return -1;
    } else if (jsonl_tok_u64(r->d, t, v)) {
        return -1;
    }
    return *v > (uint64_t)INT64_MAX ? -1 : 0;
}

/* Reads member key (path names it in errors) and writes it: dec (bytes,
 * ns) as a decimal string, else as a number.  opt: absent or null is
 * written as null (nul) or 0 (!nul); required otherwise. */
enum { U_REQ = 0, U_ZERO = 1, U_NULL = 2 };
static int put_u63(rd *r, uint32_t obj, const char *path, const char *key,
                   int dec, int opt, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    int rc = tok_u63(r, member(r, obj, key), &v);
    if (rc < 0 || (rc == 0 && v > max) || (rc > 0 && opt == U_REQ))
        return bad(r, 400, "%s%s must be an unsigned integer%s%s", path, key,
                   max < (uint64_t)INT64_MAX ? " in range" : " below 2^63",
                   rc > 0 ? " (missing)" : "");
    if (out)
        *out = v;
    if (rc > 0 && opt == U_NULL) {
        jw_key(r->w, key);
        jw_null(r->w);
    } else if (dec) {
        srv_jw_kv_udec(r->w, key, v);
    } else {
        srv_jw_kv_unum(r->w, key, v);
    }
    return 0;
}

/* A plain string member (no escapes: names, words, UUIDs) of at most max
 * bytes, copied; *out borrows it from the body. */
static int put_word(rd *r, uint32_t obj, const char *path, const char *key,
                    size_t max, int required, srv_str *out)
{
    uint32_t t = member(r, obj, key);
    srv_str s = { NULL, 0 };
    if (t == JSONL_NOTFOUND) {
        if (required)
            return bad(r, 400, "%s%s is missing", path, key);
    } else if (jsonl_tok_type(r->d, t) != JSONL_STRING ||
               (r->d->tok[t].flags & JSONL_F_ESC) || !r->d->tok[t].len ||
               r->d->tok[t].len > max) {
        return bad(r, 400, "%s%s must be a plain string of 1 to %zu bytes",
                   path, key, max);
    } else {
        s.p = r->d->line + r->d->tok[t].off;
        s.n = r->d->tok[t].len;
    }
    jw_key(r->w, key);
    if (s.p)
        jw_strn(r->w, s.p, s.n, s.n);
    else
        jw_null(r->w);
    if (out)
        *out = s;
    return 0;
}

/* A word that must be one of the '|'-separated choices. */
static int put_choice(rd *r, uint32_t obj, const char *path, const char *key,
                      const char *choices, srv_str *out)
{
    srv_str s;
    if (put_word(r, obj, path, key, OOM_NAME_MAX, 1, &s))
        return -1;
    for (const char *c = choices; *c;) {
        size_t n = strcspn(c, "|");
        if (n == s.n && !memcmp(c, s.p, n)) {
            if (out)
                *out = s;
            return 0;
        }
        c += n + (c[n] == '|');
    }
    return bad(r, 400, "%s%s must be one of %s", path, key, choices);
}

static int put_bool(rd *r, uint32_t obj, const char *path, const char *key,
                    int *out)
{
    uint32_t t = member(r, obj, key);
    int v = 0;
    if (t != JSONL_NOTFOUND && jsonl_tok_bool(r->d, t, &v))
        return bad(r, 400, "%s%s must be true or false", path, key);
    jw_key(r->w, key);
    jw_bool(r->w, v);
    if (out)
        *out = v;
    return 0;
}

/* A stack index: below the number of stacks. */
static int put_stack(rd *r, uint32_t obj, const char *path)
{
    uint64_t v;
    if (tok_u63(r, member(r, obj, "stack"), &v) || v >= r->nstacks)
        return bad(r, 400, "%sstack must be an index into stacks (0 to %u)",
                   path, r->nstacks ? r->nstacks - 1 : 0);
    srv_jw_kv_unum(r->w, "stack", v);
    return 0;
}

/* Member key must be an object (or an array when arr); its token. */
static uint32_t container(rd *r, uint32_t obj, const char *path,
                          const char *key, int arr, uint32_t max)
{
    uint32_t t = member(r, obj, key);
    if (jsonl_tok_type(r->d, t) != (arr ? JSONL_ARRAY : JSONL_OBJECT)) {
        bad(r, 400, "%s%s must be an %s", path, key, arr ? "array" : "object");
        return JSONL_NOTFOUND;
    }
    if (arr && r->d->tok[t].n > max) {
        bad(r, 413, "%s%s has more than %u entries", path, key, max);
        return JSONL_NOTFOUND;
    }
    return t;
}

static int put_stacks(rd *r)
{
    uint32_t t = container(r, 0, "", "stacks", 1, OOM_STACKS_MAX);
    if (t == JSONL_NOTFOUND)
        return -1;
    if (!r->d->tok[t].n)
        return bad(r, 400, "stacks must not be empty");
    r->nstacks = r->d->tok[t].n;
    jw_key(r->w, "stacks");
    jw_arr_begin(r->w);
    uint32_t e = t + 1;
    for (uint32_t i = 0; i < r->d->tok[t].n; i++, e = r->d->tok[e].next) {
        if (jsonl_tok_type(r->d, e) != JSONL_ARRAY || !r->d->tok[e].n)
            return bad(r, 400, "stacks[%u] must be a non-empty array", i);
        if (r->d->tok[e].n > OOM_FRAMES_MAX)
            return bad(r, 413, "stacks[%u] has more than %d frames", i,
                       OOM_FRAMES_MAX);
        jw_arr_begin(r->w);
        uint32_t x = e + 1;
        for (uint32_t k = 0; k < r->d->tok[e].n; k++, x = r->d->tok[x].next) {
            if (jsonl_tok_type(r->d, x) != JSONL_STRING ||
                r->d->tok[x].len > OOM_FRAME_LEN_MAX)
                return bad(r, 400,
                           "stacks[%u][%u] must be a string (<= %d "
                           "bytes)",
                           i, k, OOM_FRAME_LEN_MAX);
            srv_jw_copy(r->w, r->d, x);
        }
        jw_arr_end(r->w);
    }
    jw_arr_end(r->w);
    return 0;
}

static int put_request(rd *r, srv_memoom *p)
{
    uint32_t o = container(r, 0, "", "request", 0, 0);
    int64_t rc;
    if (o == JSONL_NOTFOUND)
        return -1;
    jw_key(r->w, "request");
    jw_obj_begin(r->w);
    if (put_word(r, o, "request.", "api", OOM_NAME_MAX, 1, &p->api) ||
        put_u63(r, o, "request.", "bytes", 1, U_REQ, INT64_MAX, &p->bytes))
        return -1;
    uint32_t t = member(r, o, "rc");
    if (t == JSONL_NOTFOUND || jsonl_tok_i64(r->d, t, &rc) || rc < INT32_MIN ||
        rc > INT32_MAX)
        return bad(r, 400, "request.rc must be an integer (a CUresult)");
    jw_kv_i64(r->w, "rc", rc);
    if (put_u63(r, o, "request.", "tid", 0, U_ZERO, UINT32_MAX, NULL) ||
        put_stack(r, o, "request."))
        return -1;
    jw_obj_end(r->w);
    return 0;
}

static int put_device(rd *r, srv_memoom *p)
{
    uint32_t o = container(r, 0, "", "device", 0, 0), t;
    uint64_t idx;
    if (o == JSONL_NOTFOUND)
        return -1;
    jw_key(r->w, "device");
    jw_obj_begin(r->w);
    if (put_choice(r, o, "device.", "source", "unknown|driver|nvml",
                   &p->dev_source) ||
        put_u63(r, o, "device.", "index", 0, U_NULL, INT32_MAX, &idx))
        return -1;
    p->dev = member(r, o, "index") == JSONL_NOTFOUND ? -1 : (int64_t)idx;
    if (put_u63(r, o, "device.", "free_bytes", 1, U_NULL, INT64_MAX,
                &p->free_bytes) ||
        put_u63(r, o, "device.", "total_bytes", 1, U_NULL, INT64_MAX,
                &p->total_bytes) ||
        put_u63(r, o, "device.", "process_bytes", 1, U_NULL, INT64_MAX, NULL) ||
        put_u63(r, o, "device.", "ts", 1, U_NULL, INT64_MAX, NULL))
        return -1;
    p->have_mem = member(r, o, "free_bytes") != JSONL_NOTFOUND &&
                  member(r, o, "total_bytes") != JSONL_NOTFOUND;
    t = member(r, o, "why");
    jw_key(r->w, "why");
    if (t == JSONL_NOTFOUND)
        jw_null(r->w);
    else if (jsonl_tok_type(r->d, t) != JSONL_STRING ||
             r->d->tok[t].len > OOM_WHY_MAX)
        return bad(r, 400, "device.why must be a string (<= %d bytes)",
                   OOM_WHY_MAX);
    else
        srv_jw_copy(r->w, r->d, t);
    jw_obj_end(r->w);
    return 0;
}

static int put_live(rd *r, srv_memoom *p)
{
    uint32_t o = container(r, 0, "", "live", 0, 0), a, e;
    char path[48];
    if (o == JSONL_NOTFOUND)
        return -1;
    jw_key(r->w, "live");
    jw_obj_begin(r->w);
    if (put_u63(r, o, "live.", "bytes", 1, U_REQ, INT64_MAX, &p->live_bytes) ||
        put_u63(r, o, "live.", "count", 0, U_REQ, INT64_MAX, NULL))
        return -1;
    a = container(r, o, "live.", "stacks", 1, OOM_STACKS_MAX);
    if (a == JSONL_NOTFOUND)
        return -1;
    jw_key(r->w, "stacks");
    jw_arr_begin(r->w);
    e = a + 1;
    for (uint32_t i = 0; i < r->d->tok[a].n; i++, e = r->d->tok[e].next) {
        snprintf(path, sizeof(path), "live.stacks[%u].", i);
        if (jsonl_tok_type(r->d, e) != JSONL_OBJECT)
            return bad(r, 400, "%s must be an object", path);
        jw_obj_begin(r->w);
        if (put_stack(r, e, path) ||
            put_u63(r, e, path, "bytes", 1, U_REQ, INT64_MAX, NULL) ||
            put_u63(r, e, path, "count", 0, U_REQ, INT64_MAX, NULL))
            return -1;
        jw_obj_end(r->w);
    }
    jw_arr_end(r->w);
    if (put_bool(r, o, "live.", "truncated", NULL) ||
        put_u63(r, o, "live.", "host_bytes", 1, U_ZERO, INT64_MAX, NULL) ||
        put_u63(r, o, "live.", "host_count", 0, U_ZERO, INT64_MAX, NULL) ||
        put_u63(r, o, "live.", "untracked_bytes", 1, U_ZERO, INT64_MAX, NULL) ||
        put_u63(r, o, "live.", "untracked_count", 0, U_ZERO, INT64_MAX, NULL))
        return -1;
    jw_obj_end(r->w);
    return 0;
}

static int put_recent(rd *r)
{
    uint32_t o = container(r, 0, "", "recent", 0, 0), a, e;
    char path[48];
    if (o == JSONL_NOTFOUND)
        return -1;
    jw_key(r->w, "recent");
    jw_obj_begin(r->w);
    if (put_u63(r, o, "recent.", "window_ns", 1, U_REQ, INT64_MAX, NULL) ||
        put_bool(r, o, "recent.", "cut", NULL))
        return -1;
    a = container(r, o, "recent.", "events", 1, OOM_EVENTS_MAX);
    if (a == JSONL_NOTFOUND)
        return -1;
    jw_key(r->w, "events");
    jw_arr_begin(r->w);
    e = a + 1;
    for (uint32_t i = 0; i < r->d->tok[a].n; i++, e = r->d->tok[e].next) {
        snprintf(path, sizeof(path), "recent.events[%u].", i);
        if (jsonl_tok_type(r->d, e) != JSONL_OBJECT)
            return bad(r, 400, "%s must be an object", path);
        jw_obj_begin(r->w);
        if (put_u63(r, e, path, "ts", 1, U_REQ, INT64_MAX, NULL) ||
            put_u63(r, e, path, "tid", 0, U_ZERO, UINT32_MAX, NULL) ||
            put_choice(r, e, path, "op", "alloc|free|fail", NULL) ||
            put_word(r, e, path, "api", OOM_NAME_MAX, 1, NULL) ||
            put_u63(r, e, path, "bytes", 1, U_REQ, INT64_MAX, NULL) ||
            put_stack(r, e, path))
            return -1;
        jw_obj_end(r->w);
    }
    jw_arr_end(r->w);
    jw_obj_end(r->w);
    return 0;
}

/* optional: a report from a tool that does not look at allocators */
static int put_frag(rd *r)
{
    static const char *const dec[] = { "reserved_bytes",
                                       "other_bytes",
                                       "settle_ns",
                                       "released_bytes",
                                       "released_allocator_bytes",
                                       "held_bytes" };
    uint32_t o = member(r, 0, "fragmentation"), a, e;
    char path[48];
    jw_key(r->w, "fragmentation");
    if (o == JSONL_NOTFOUND) {
        jw_null(r->w);
        return 0;
    }
    if (jsonl_tok_type(r->d, o) != JSONL_OBJECT)
        return bad(r, 400, "fragmentation must be an object or null");
    jw_obj_begin(r->w);
    if (member(r, o, "allocator") == JSONL_NOTFOUND) {
        jw_key(r->w, "allocator");
        jw_null(r->w);
    } else if (put_word(r, o, "fragmentation.", "allocator", OOM_NAME_MAX, 0,
                        NULL)) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(dec) / sizeof(dec[0]); i++)
        if (put_u63(r, o, "fragmentation.", dec[i], 1, U_ZERO, INT64_MAX, NULL))
            return -1;
    if (put_u63(r, o, "fragmentation.", "released_count", 0, U_ZERO, INT64_MAX,
                NULL))
        return -1;
    a = member(r, o, "retries");
    jw_key(r->w, "retries");
    jw_arr_begin(r->w);
    if (a != JSONL_NOTFOUND) {
        a = container(r, o, "fragmentation.", "retries", 1, OOM_RETRIES_MAX);
        if (a == JSONL_NOTFOUND)
            return -1;
        e = a + 1;
        for (uint32_t i = 0; i < r->d->tok[a].n; i++, e = r->d->tok[e].next) {
            snprintf(path, sizeof(path), "fragmentation.retries[%u].", i);
            if (jsonl_tok_type(r->d, e) != JSONL_OBJECT)
                return bad(r, 400, "%s must be an object", path);
            jw_obj_begin(r->w);
            if (put_u63(r, e, path, "ts", 1, U_REQ, INT64_MAX, NULL) ||
                put_bool(r, e, path, "ok", NULL))
                return -1;
            jw_obj_end(r->w);
        }
    }
    jw_arr_end(r->w);
    if (put_u63(r, o, "fragmentation.", "more_ooms", 0, U_ZERO, INT64_MAX,
                NULL) ||
        put_bool(r, o, "fragmentation.", "exited", NULL))
        return -1;
    jw_obj_end(r->w);
    return 0;
}

/* The whole report: checked and rewritten into r->w; p's columns. */
static int rewrite(rd *r, srv_memoom *p)
{
    uint64_t v;
    memset(p, 0, sizeof(*p));
    /* stacks first: the indices into them are checked on the way */
    uint32_t t = container(r, 0, "", "stacks", 1, OOM_STACKS_MAX);
    if (t == JSONL_NOTFOUND)
        return -1;
    r->nstacks = r->d->tok[t].n;
    jw_obj_begin(r->w);
    if (tok_u63(r, member(r, 0, "v"), &v) || v != 1)
        return bad(r, 400, "\"v\" must be 1");
    jw_kv_u64(r->w, "v", 1);
    if (put_word(r, 0, "", "host", 255, 1, &p->host) ||
        put_u63(r, 0, "", "pid", 0, U_REQ, UINT32_MAX, &p->pid) ||
        put_word(r, 0, "", "comm", 255, 0, &p->comm) ||
        put_word(r, 0, "", "sid", 36, 0, &p->sid))
        return -1;
    if (!p->pid)
        return bad(r, 400, "pid must be a positive integer");
    if (p->sid.p && !ingest_is_uuid(p->sid.p, p->sid.n))
        return bad(r, 400, "sid must be a session id (a lower-case UUID)");
    if (put_choice(r, 0, "", "source", "ebpf|preload|simulated", &p->source) ||
        put_bool(r, 0, "", "simulated", &p->simulated) ||
        put_u63(r, 0, "", "ts", 1, U_REQ, INT64_MAX, &p->ts) ||
        put_u63(r, 0, "", "seq", 0, U_ZERO, UINT32_MAX, NULL) ||
        put_request(r, p) || put_device(r, p) || put_live(r, p) ||
        put_recent(r) || put_frag(r) || put_stacks(r))
        return -1;
    jw_obj_end(r->w);
    return 0;
}

/* One pass of jw_gbuf_run: the same bytes each time (a pass checks the
 * whole report whether or not its text fits). */
typedef struct pass {
    rd r;
    srv_memoom *p;
} pass;

static void rewrite_pass(jw *w, void *ctx)
{
    pass *x = ctx;
    x->r.w = w;
    x->r.st = 0;
    x->r.why[0] = '\0';
    rewrite(&x->r, x->p);
}

int srv_memoom_parse(jsonl_doc *d, srv_memoom *p, gbuf *out, char *why,
                     size_t cap)
{
    pass x;
    size_t want = d->len + 4096;
    int rc;

    memset(&x, 0, sizeof(x));
    x.r.d = d;
    x.p = p;
    /* room for gpufl memprof's report at once (it writes this form);
     * numbers rewritten as strings and members added take a second pass */
    gbuf_init(out, OOM_BODY_MAX);
    rc = gbuf_grow(out, want < OOM_BODY_MAX ? want : OOM_BODY_MAX);
    if (!rc)
        rc = jw_gbuf_run(out, rewrite_pass, &x);
    if (x.r.st) {
        /* the checks ran to their end even when the text did not fit */
        snprintf(why, cap, "%s", x.r.why);
        return x.r.st;
    }
    if (rc) {
        if (rc == GPUFL_ETOOBIG)
            snprintf(why, cap, "the report is larger than %u MiB",
                     OOM_BODY_MAX >> 20);
        else
            snprintf(why, cap, "out of memory");
        return rc == GPUFL_ETOOBIG ? 413 : 500;
    }
    p->body = out->p;
    p->body_len = out->len;
    return 0;
}

void srv_api_memoom_post(srv *s, srv_req *r, srv_resp *o)
{
    char *body = NULL, why[200], sid[64];
    jsonl_tok *tok = NULL;
    jsonl_doc d;
    srv_memoom p;
    gbuf canon = GBUF_INIT(OOM_BODY_MAX);
    int64_t id = 0;
    int rc, st;

    if (srv_json_body(s, r, o, &body, &tok, &d))
        goto out;
    st = srv_memoom_parse(&d, &p, &canon, why, sizeof(why));
    if (st) {
        srv_resp_error(o, st, why);
        goto out;
    }
    if (srv_resp_host_refused(o, r->hosts, "report", p.host.p, p.host.n))
        goto out;
    rc = srv_store_memoom_put(s->store, &p, &id, sid, sizeof(sid));
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
    jw_kv_i64(&w, "report", id);
    jw_key(&w, "sid");
    if (sid[0])
        jw_str(&w, sid);
    else
        jw_null(&w);
    jw_obj_end(&w);
    srv_resp_json(o, 200, buf, w.len);
out:
    gbuf_release(&canon);
    free(tok);
    free(body);
}

void srv_api_memooms(srv *s, srv_req *r, srv_resp *o, const char *id)
{
    static const char *const nums[] = { "pid", "from", "to", "limit" };
    uint64_t v[4], n;
    srv_memq q;
    char *buf;
    jw w;
    int rc;

    r->cls = MET_QUERY;
    if (id && (num_u64(id, &n) || n > (uint64_t)INT64_MAX)) {
        srv_resp_error(o, 404, "no such OOM report");
        return;
    }
    memset(&q, 0, sizeof(q));
    if (!id && srv_args_u64(r, o, nums, v, 4))
        return;
    if (!id) {
        q.pid = v[0];
        q.from = v[1];
        q.to = v[2];
        q.limit = v[3] > 1000000 ? 1000000 : (uint32_t)v[3];
        q.sid = srv_req_arg(r, "sid");
        q.host = srv_req_arg(r, "host");
        q.cursor = srv_req_arg(r, "cursor");
    }
    if (!(buf = srv_query_buf(o, &w)))
        return;
    rc = id ? srv_store_q_memoom(s->store, (int64_t)n, &w)
            : srv_store_q_memooms(s->store, &q, &w);
    srv_query_done(o, rc, buf, w.len, "no such OOM report");
}
