/*
 * api_keys.c - API keys over HTTP (docs/api.md "Keys"): GET /api/v1/keys
 * (a page of keys, never their secrets) and POST /api/v1/keys (a new key:
 * name, role and the hosts it may write for; its secret answered once).
 * The admin role check is the route table's (api.c); storing and hashing
 * keys is auth.c's and the store's.
 */
#include "srv_int.h"

#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Keys per page of GET /api/v1/keys: limit= (default) and its cap. */
#define KEYS_PAGE 100
#define KEYS_PAGE_MAX 1000

/* The key's hosts as a JSON array, or null when it may write for any. */
static void hosts_json(jw *w, const char *hosts)
{
    if (!hosts[0]) {
        jw_null(w);
        return;
    }
    jw_arr_begin(w);
    for (const char *p = hosts;;) {
        size_t len = strcspn(p, ",");
        jw_strn(w, p, len, len);
        if (!p[len])
            break;
        p += len + 1;
    }
    jw_arr_end(w);
}

void srv_api_keys_list(srv *s, srv_req *r, srv_resp *o)
{
    uint64_t limit = KEYS_PAGE;
    int64_t after = 0;
    const char *cur = srv_req_arg(r, "cursor");
    size_t n = 0, cap = 1u << 20;
    srv_key *k;
    char *buf;
    jw w;
    int rc;

    if (srv_arg_u64(r, "limit", &limit) || limit == 0 ||
        limit > KEYS_PAGE_MAX) {
        srv_resp_error(o, 400, "limit must be 1 to 1000");
        return;
    }
    if (cur && srv_cursor_decode(cur, &after, 1)) {
        srv_resp_error(o, 400, "invalid cursor");
        return;
    }
    /* one more than asked: whether a next page exists */
    k = calloc((size_t)limit + 1, sizeof(*k));
    buf = malloc(cap);
    if (!k || !buf) {
        free(k);
        free(buf);
        srv_resp_error(o, 500, "out of memory");
        return;
    }
    rc = srv_store_key_list(s->store, after, k, (size_t)limit + 1, &n);
    if (rc) {
        free(k);
        srv_query_done(o, rc, buf, 0, "");
        return;
    }
    jw_init(&w, buf, cap);
    jw_obj_begin(&w);
    jw_key(&w, "items");
    jw_arr_begin(&w);
    for (size_t i = 0; i < n && i < limit; i++) {
        jw_obj_begin(&w);
        jw_kv_i64(&w, "id", k[i].id);
        jw_kv_str(&w, "name", k[i].name);
        jw_kv_str(&w, "role", k[i].role);
        jw_kv_str(&w, "prefix", k[i].prefix);
        jw_key(&w, "hosts");
        hosts_json(&w, k[i].hosts);
        jw_kv_i64(&w, "created", k[i].created);
        jw_key(&w, "last_used");
        if (k[i].last_used)
            jw_i64(&w, k[i].last_used);
        else
            jw_null(&w);
        jw_key(&w, "revoked");
        if (k[i].revoked)
            jw_i64(&w, k[i].revoked);
        else
            jw_null(&w);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_key(&w, "next");
    if (n > limit) {
        char c[SRV_CURSOR_MAX];
        srv_cursor_encode(&k[limit - 1].id, 1, c, sizeof(c));
        jw_str(&w, c);
    } else {
        jw_null(&w);
    }
    jw_obj_end(&w);
    free(k);
    if (w.err) {
        free(buf);
        srv_resp_error(o, 500, "answer too large; lower limit");
        return;
    }
    srv_resp_json(o, 200, buf, w.len);
}

/* The "hosts" member of a key's body, as "h1,h2" in out (absent or null:
 * ""); -1 when it is not an array of strings that fits. */
static int body_hosts(const srv_req *r, char *out, size_t cap)
{
    jsonl_tok tok[SRV_KEY_HOSTS_N + 64];
    jsonl_doc d;
    uint32_t a, t;
    size_t len = 0;

    out[0] = '\0';
    if (!r->body_len)
        return 0;
    jsonl_doc_init(&d, tok, SRV_KEY_HOSTS_N + 64);
    if (jsonl_doc_parse_obj(&d, r->body, r->body_len))
        return -1;
    a = jsonl_doc_find(&d, "hosts");
    if (a == JSONL_NOTFOUND || jsonl_tok_type(&d, a) == JSONL_NULL)
        return 0;
    if (jsonl_tok_type(&d, a) != JSONL_ARRAY || d.tok[a].n == 0)
        return -1;
    t = a + 1;
    for (uint32_t i = 0; i < d.tok[a].n; i++) {
        char h[256];
        size_t n;
        /* a comma would split one name into two */
        if (jsonl_tok_str(&d, t, h, sizeof(h), &n) || n == 0 ||
            memchr(h, ',', n) || len + n + 2 > cap)
            return -1;
        if (len)
            out[len++] = ',';
        memcpy(out + len, h, n);
        len += n;
        out[len] = '\0';
        t = d.tok[t].next;
    }
    return 0;
}

/* A string member of a small JSON object body, into out. */
static int body_str(const srv_req *r, const char *key, char *out, size_t cap)
{
    jsonl_tok tok[64];
    jsonl_doc d;
    size_t n;

    out[0] = '\0';
    if (!r->body_len)
        return 0;
    jsonl_doc_init(&d, tok, 64);
    if (jsonl_doc_parse_obj(&d, r->body, r->body_len))
        return -1;
    if (jsonl_doc_find(&d, key) == JSONL_NOTFOUND)
        return 0;
    return jsonl_tok_str(&d, jsonl_doc_find(&d, key), out, cap, &n) ? -1 : 0;
}

void srv_api_keys_create(srv *s, srv_req *r, srv_resp *o)
{
    char name[128], role[16], secret[96], hosts[SRV_KEY_HOSTS_MAX], why[200];
    char *buf;
    int64_t id = 0;
    jw w;
    int rc;

    if (body_str(r, "name", name, sizeof(name)) ||
        body_str(r, "role", role, sizeof(role)) ||
        srv_role_parse(role) == ROLE_NONE) {
        srv_resp_error(o, 400,
                       "body must be {\"name\":..., \"role\": "
                       "\"ingest\"|\"read\"|\"admin\", \"hosts\": [...]}");
        return;
    }
    if (body_hosts(r, hosts, sizeof(hosts))) {
        srv_resp_error(o, 400, "hosts must be a non-empty array of host names");
        return;
    }
    if (srv_key_hosts_check(hosts, role, why, sizeof(why))) {
        srv_resp_error(o, 400, why);
        return;
    }
    rc = srv_key_create(s, name, role, hosts, secret, sizeof(secret), &id);
    if (rc) {
        srv_query_done(o, rc, NULL, 0, "");
        return;
    }
    buf = malloc(1024);
    if (!buf) {
        srv_resp_error(o, 500, "out of memory");
        return;
    }
    jw_init(&w, buf, 1024);
    jw_obj_begin(&w);
    jw_kv_i64(&w, "id", id);
    jw_kv_str(&w, "name", name);
    jw_kv_str(&w, "role", role);
    jw_key(&w, "hosts");
    hosts_json(&w, hosts);
    jw_kv_str(&w, "key", secret);
    jw_obj_end(&w);
    srv_resp_json(o, 201, buf, w.len);
}
