/*
 * cli_diff_srv.c - `gpufl diff --server URL`: one side's runs from
 * gpufl-server, one GET /api/v1/sessions/{id}/durations per session id
 * (docs/api.md), through the one libcurl setup (src/httpc), parsed with
 * src/common's JSON tokenizer into a df_side.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diff.h"
#include "cli_diff_int.h"
#include "common/buf.h"
#include "common/jsonl.h"
#include "gpufl/gpufl.h"
#include "httpc/httpc.h"

/* An answer's bytes: the server's own cap on one (16 MiB). */
#define SRV_BODY_MAX (16u << 20)
/* Tokens of one answer: 2000 names and paths of 256 values and a few
 * members each, with room. */
#define SRV_TOKENS (1u << 20)
/* Bytes of one session id. */
#define SRV_ID_MAX 64

/* The series of one array ("kernels" or "scopes") of the answer into g. */
static int add_series(jsonl_doc *d, uint32_t arr, int kind, const char *key,
                      df_group *g, char *name, char *err, size_t errlen)
{
    uint32_t t;
    int e = 0;
    if (jsonl_tok_type(d, arr) != JSONL_ARRAY) {
        snprintf(err, errlen, "the answer has no \"%s\" array",
                 kind == DF_SCOPE ? "by_scope" : "by_kernel");
        return GPUFL_EPROTO;
    }
    t = arr + 1;
    for (uint32_t i = 0; i < d->tok[arr].n; i++, t = d->tok[t].next) {
        uint32_t nt = jsonl_obj_find(d, t, key),
                 vt = jsonl_obj_find(d, t, "values"),
                 ct = jsonl_obj_find(d, t, "count"), tt;
        uint64_t count = 0;
        size_t len = 0;
        df_series *s;
        if (jsonl_tok_str(d, nt, name, DF_NAME_MAX + 1, &len) ||
            jsonl_tok_u64(d, ct, &count) ||
            jsonl_tok_type(d, vt) != JSONL_ARRAY) {
            snprintf(err, errlen, "a malformed item in the answer's %s",
                     kind == DF_SCOPE ? "by_scope" : "by_kernel");
            return GPUFL_EPROTO;
        }
        if (!(s = df_group_add(g, kind, name, len, &e))) {
            snprintf(err, errlen, "%s",
                     e == GPUFL_EFULL ? "more names than a run may hold"
                                      : "out of memory");
            return e;
        }
        tt = vt + 1;
        for (uint32_t k = 0; k < d->tok[vt].n; k++, tt = d->tok[tt].next) {
            double v;
            if (jsonl_tok_f64(d, tt, &v) || !(v >= 0)) {
                snprintf(err, errlen, "a bad value in the answer's \"%s\"",
                         name);
                return GPUFL_EPROTO;
            }
            if (df_series_push(g, s, v)) {
                snprintf(err, errlen, "out of memory");
                return GPUFL_ENOMEM;
            }
        }
        /* the calls the sample stands for, not its size */
        s->calls = count;
    }
    return GPUFL_OK;
}

static int one(httpc *h, const struct curl_slist *hdr, const char *base,
               const char *id, df_side *side, jsonl_tok *tok, char *err,
               size_t errlen)
{
    char url[4096 + 128], why[512], *name = NULL;
    httpc_req r;
    gbuf body;
    jsonl_doc d;
    long status = 0;
    df_group *g;
    int rc, e = 0;

    for (const char *p = id; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
              (*p >= 'A' && *p <= 'Z') || *p == '-' || *p == '_')) {
            snprintf(err, errlen, "\"%.80s\" is not a session id", id);
            return GPUFL_EINVAL;
        }
    snprintf(url, sizeof url, "%s/api/v1/sessions/%s/durations", base, id);
    memset(&r, 0, sizeof r);
    r.url = url;
    r.method = "GET";
    r.headers = hdr;
    gbuf_init(&body, SRV_BODY_MAX);
    rc = httpc_do(h, &r, &body, &status, why, sizeof why);
    if (rc) {
        snprintf(err, errlen, "%s: %s", url, why);
        goto out;
    }
    if (body.err) {
        snprintf(err, errlen, "%s: the answer is larger than %u bytes", url,
                 SRV_BODY_MAX);
        rc = GPUFL_ETOOBIG;
        goto out;
    }
    if (status != 200) {
        snprintf(err, errlen, "%s: HTTP %ld: %.200s", url, status,
                 body.p ? body.p : "");
        rc = status == 404 ? GPUFL_ENOTFOUND : GPUFL_EIO;
        goto out;
    }
    jsonl_doc_init(&d, tok, SRV_TOKENS);
    if (!body.p || jsonl_doc_parse_obj(&d, body.p, body.len)) {
        snprintf(err, errlen, "%s: the answer is not JSON (%s)", url,
                 d.err ? d.err : "empty");
        rc = GPUFL_EPROTO;
        goto out;
    }
    if (!(g = df_side_add(side, id, &e))) {
        snprintf(err, errlen, "%s",
                 e == GPUFL_EFULL ? "more sessions than a side may hold"
                                  : "out of memory");
        rc = e;
        goto out;
    }
    if (!(name = malloc(DF_NAME_MAX + 1))) {
        snprintf(err, errlen, "out of memory");
        rc = GPUFL_ENOMEM;
        goto out;
    }
    rc = add_series(&d, jsonl_doc_find(&d, "by_kernel"), DF_KERNEL, "name", g,
                    name, err, errlen);
    if (!rc)
        rc = add_series(&d, jsonl_doc_find(&d, "by_scope"), DF_SCOPE, "path", g,
                        name, err, errlen);
    if (!rc && df_group_finish(g)) {
        snprintf(err, errlen, "out of memory");
        rc = GPUFL_ENOMEM;
    }
out:
    free(name);
    gbuf_release(&body);
    return rc;
}

int cli_diff_srv_load(const diff_opts *o, const char *ids, df_side *side,
                      char *err, size_t errlen)
{
    httpc_cfg cfg = { o->timeout_ms, o->ca_file, "gpufl-diff", 0 };
    struct curl_slist *hdr = NULL;
    const char *token = o->token ? o->token : getenv("GPUFL_TOKEN");
    jsonl_tok *tok = NULL;
    httpc *h = NULL;
    char base[4096], id[SRV_ID_MAX];
    size_t bl;
    int rc;

    bl = (size_t)snprintf(base, sizeof base, "%s", o->server);
    if (bl >= sizeof base) {
        snprintf(err, errlen, "--server URL is too long");
        return GPUFL_EINVAL;
    }
    while (bl && base[bl - 1] == '/')
        base[--bl] = 0;
    rc = httpc_new(&h, &cfg, err, errlen);
    if (rc)
        return rc;
    if (token && httpc_auth(&hdr, "Bearer", token)) {
        snprintf(err, errlen, "out of memory");
        rc = GPUFL_ENOMEM;
        goto out;
    }
    if (!(tok = malloc(SRV_TOKENS * sizeof *tok))) {
        snprintf(err, errlen, "out of memory");
        rc = GPUFL_ENOMEM;
        goto out;
    }
    for (const char *p = ids; !rc;) {
        const char *c = strchr(p, ',');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if (!n || n >= sizeof id) {
            snprintf(err, errlen,
                     "\"%.80s\": session ids, separated by "
                     "commas, please",
                     ids);
            rc = GPUFL_EINVAL;
            break;
        }
        memcpy(id, p, n);
        id[n] = 0;
        rc = one(h, hdr, base, id, side, tok, err, errlen);
        if (!c)
            break;
        p = c + 1;
    }
out:
    free(tok);
    httpc_headers_free(hdr);
    httpc_free(h);
    return rc;
}
