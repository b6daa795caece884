/*
 * sink_http.c - the HTTP backend: POST {url}{stream} with the batch's
 * lines as NDJSON (never re-encoded), optionally zstd or gzip encoded, a
 * Bearer token, one keep-alive libcurl handle and a total time limit per
 * request.
 *
 * Answers (the server contract, docs/api.md, src/server/api_ingest.c):
 * an acknowledgement is HTTP 200 with the JSON object
 * {"errors":[{"line","reason"}...],"accepted":A,"duplicate":D,
 * "rejected":R,...} where A + D + R is the number of lines sent; the lines
 * named in errors (1-based, in order) go to reject(), the rest are
 * acknowledged.  The server itemises at most 50 errors: when fewer than R
 * are named, the lines after the last one named are sent again (the
 * accepted ones come back as duplicates, the next rejected ones are
 * named).  Anything else answered with a 2xx - an HTML page from a proxy
 * or a wrong --url, an empty body, cut JSON, counts that do not add up -
 * acknowledges nothing: a retry, like a 5xx.  413 and 400 split the batch
 * in halves until the offending line is alone, which is then rejected;
 * 401/403/404 are configuration errors; 415 turns compression off and
 * retries; anything else (5xx, timeouts, refused connections) is a plain
 * retry.  The token never appears in messages.
 */
#include "agent/sink.h"

#include "common/buf.h"
#include "common/jsonl.h"
#include "httpc/httpc.h"
#include "common/log.h"

#include <gpufl/gpufl.h>

#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

/* The largest response body kept (a fully rejected batch of 1M lines
 * lists each line). */
#define HTTP_RESP_MAX (64u << 20)

typedef enum { ENC_NONE, ENC_ZSTD, ENC_GZIP } http_enc;

typedef struct http_sink {
    agent_sink base;
    httpc *hc; /* one keep-alive connection */
    char *url[AGENT_NSTREAMS];
    char *token; /* Bearer; wiped when freed */
    http_enc enc;
    ZSTD_CCtx *zc;
    gbuf z;    /* compressed body: the bound of the largest batch at most */
    gbuf resp; /* the answer, HTTP_RESP_MAX at most */
    jsonl_tok *tok;
    uint32_t tok_cap;
    volatile int *stop;
} http_sink;

/* Aborts a transfer once the agent is asked to stop. */
static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut,
                       curl_off_t un)
{
    http_sink *h = ud;
    (void)dt;
    (void)dn;
    (void)ut;
    (void)un;
    return h->stop && *h->stop;
}

/* Compresses src into h->z; returns the length or 0 on failure. */
static size_t compress_body(http_sink *h, const char *src, size_t n)
{
    if (h->enc == ENC_ZSTD) {
        size_t r, bound = ZSTD_compressBound(n);
        gbuf_reset(&h->z);
        if (gbuf_grow(&h->z, bound))
            return 0;
        r = ZSTD_compressCCtx(h->zc, h->z.p, bound, src, n, 1);
        return ZSTD_isError(r) ? 0 : r;
    } else {
        z_stream z;
        size_t bound, out;
        memset(&z, 0, sizeof z);
        /* 15 + 16: a gzip wrapper, as Content-Encoding: gzip says */
        if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY))
            return 0;
        bound = deflateBound(&z, (uLong)n) + 32;
        gbuf_reset(&h->z);
        if (gbuf_grow(&h->z, bound)) {
            deflateEnd(&z);
            return 0;
        }
        z.next_in = (Bytef *)(uintptr_t)src;
        z.avail_in = (uInt)n;
        z.next_out = (Bytef *)h->z.p;
        z.avail_out = (uInt)bound;
        if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
            deflateEnd(&z);
            return 0;
        }
        out = z.total_out;
        deflateEnd(&z);
        return out;
    }
}

/* One POST; returns the HTTP status, or 0 for a transport failure with
 * the reason in why. */
static long http_post(http_sink *h, int stream, const char *body, size_t n,
                      char *why, size_t why_cap)
{
    struct curl_slist *hdr = NULL;
    httpc_req r = { h->url[stream], "POST", NULL, body, n };
    long status = 0;

    if (h->enc != ENC_NONE && n > 0) {
        r.len = compress_body(h, body, n);
        if (!r.len) {
            snprintf(why, why_cap, "compression failed");
            return 0;
        }
        r.body = h->z.p;
    }
    /* no 100-continue round trip on every request */
    if (httpc_header(&hdr, "Content-Type", "application/x-ndjson") ||
        (h->enc != ENC_NONE &&
         httpc_header(&hdr, "Content-Encoding",
                      h->enc == ENC_ZSTD ? "zstd" : "gzip")) ||
        httpc_header(&hdr, "Expect", NULL) ||
        (h->token && httpc_auth(&hdr, "Bearer", h->token))) {
        httpc_headers_free(hdr);
        snprintf(why, why_cap, "out of memory");
        return 0;
    }
    r.headers = hdr;
    gbuf_reset(&h->resp);
    httpc_do(h->hc, &r, &h->resp, &status, why, why_cap);
    httpc_headers_free(hdr);
    return status;
}

/* A short, printable excerpt of the answer for a message. */
static void excerpt(const http_sink *h, char *out, size_t cap)
{
    size_t n = h->resp.len < 48 ? h->resp.len : 48, k = 0;

    for (size_t i = 0; i < n && k + 1 < cap; i++) {
        unsigned char ch = (unsigned char)h->resp.p[i];
        out[k++] = ch >= 0x20 && ch < 0x7f && ch != '"' ? (char)ch : '.';
    }
    out[k] = '\0';
}

/*
 * Checks a 2xx answer for lines [0, count) of a request.  Returns 0 for an
 * acknowledgement, after passing each line it names to reject() (request
 * line K is batch line first + K - 1), with *named the number of errors
 * named, *last the highest line named and *rejected the count R; or -1
 * with the reason in why (nothing rejected then).
 */
static int parse_answer(http_sink *h, long status, uint32_t first,
                        uint32_t count, agent_reject_fn reject, void *ctx,
                        uint32_t *named, uint32_t *last, uint64_t *rejected,
                        char *why, size_t why_cap)
{
    jsonl_doc d;
    uint32_t errs, t, need;
    uint64_t a, dup, r, prev = 0;
    char ex[64];

    *named = *last = 0;
    if (status != 200) {
        snprintf(why, why_cap,
                 "HTTP %ld is not the server's acknowledgement (200 with "
                 "its JSON counts); nothing is taken as shipped",
                 status);
        return -1;
    }
    if (h->resp.err == GPUFL_ETOOBIG) {
        snprintf(why, why_cap, "HTTP 200 with an answer over %u bytes",
                 HTTP_RESP_MAX);
        return -1;
    }
    if (h->resp.err) {
        snprintf(why, why_cap, "out of memory reading the answer");
        return -1;
    }
    if (h->resp.len == 0) {
        snprintf(why, why_cap,
                 "HTTP 200 with an empty body, not an acknowledgement "
                 "(check --url)");
        return -1;
    }
    need = (uint32_t)(h->resp.len / 2 + 8);
    if (need > h->tok_cap) {
        jsonl_tok *g = realloc(h->tok, need * sizeof *g);
        if (!g) {
            snprintf(why, why_cap, "out of memory reading the answer");
            return -1;
        }
        h->tok = g;
        h->tok_cap = need;
    }
    excerpt(h, ex, sizeof ex);
    jsonl_doc_init(&d, h->tok, h->tok_cap);
    if (jsonl_doc_parse_obj(&d, h->resp.p, h->resp.len)) {
        snprintf(why, why_cap,
                 "HTTP 200 with a body that is not a JSON object (\"%s\"...), "
                 "not an acknowledgement: check --url (a proxy or another "
                 "service may be answering)",
                 ex);
        return -1;
    }
    errs = jsonl_doc_find(&d, "errors");
    if (jsonl_tok_u64(&d, jsonl_doc_find(&d, "accepted"), &a) ||
        jsonl_tok_u64(&d, jsonl_doc_find(&d, "duplicate"), &dup) ||
        jsonl_tok_u64(&d, jsonl_doc_find(&d, "rejected"), &r) ||
        jsonl_tok_type(&d, errs) != JSONL_ARRAY) {
        snprintf(
            why, why_cap,
            "HTTP 200 with JSON that is not an acknowledgement (\"%s\"...: "
            "no accepted, duplicate, rejected and errors)",
            ex);
        return -1;
    }
    if (a > count || dup > count || r > count || a + dup + r != count ||
        d.tok[errs].n > r) {
        snprintf(why, why_cap,
                 "HTTP 200 accounting for %llu + %llu + %llu lines "
                 "(accepted, duplicate, rejected) of %u sent, %u errors "
                 "named: not an acknowledgement",
                 (unsigned long long)a, (unsigned long long)dup,
                 (unsigned long long)r, count, d.tok[errs].n);
        return -1;
    }
    /* every error names a line of the request, in order, before any line
     * is rejected */
    t = errs + 1;
    for (uint32_t i = 0; i < d.tok[errs].n; i++) {
        uint64_t line;
        if (jsonl_tok_type(&d, t) != JSONL_OBJECT ||
            jsonl_tok_u64(&d, jsonl_obj_find(&d, t, "line"), &line) ||
            line <= prev || line > count) {
            snprintf(why, why_cap,
                     "HTTP 200 whose error %u names no line of the %u "
                     "sent: not an acknowledgement",
                     i + 1, count);
            return -1;
        }
        prev = line;
        t = d.tok[t].next;
    }
    t = errs + 1;
    for (uint32_t i = 0; i < d.tok[errs].n; i++) {
        uint64_t line;
        uint32_t rs = jsonl_obj_find(&d, t, "reason");
        const char *rw = "rejected";
        size_t wl = 8;
        jsonl_tok_u64(&d, jsonl_obj_find(&d, t, "line"), &line);
        if (jsonl_tok_type(&d, rs) == JSONL_STRING) {
            rw = d.line + d.tok[rs].off;
            wl = d.tok[rs].len;
        }
        reject(ctx, first + (uint32_t)line - 1, rw, wl);
        t = d.tok[t].next;
    }
    *named = d.tok[errs].n;
    *last = (uint32_t)prev;
    *rejected = r;
    return 0;
}

/* Sends lines [first, first + count) of b, splitting on 413 and 400. */
static agent_send_rc send_range(http_sink *h, const agent_batch *b,
                                uint32_t first, uint32_t count,
                                agent_reject_fn reject, void *ctx, char *why,
                                size_t why_cap)
{
    long st;

    for (;;) {
        size_t start = first ? b->end[first - 1] : 0;
        size_t stop = b->end[first + count - 1];
        uint32_t named, last;
        uint64_t rejected;

        st =
            http_post(h, b->stream, b->buf + start, stop - start, why, why_cap);
        if (st == 415 && h->enc != ENC_NONE) {
            glog_warn("http",
                      "server refuses %s bodies (HTTP "
                      "415); sending uncompressed",
                      h->enc == ENC_ZSTD ? "zstd" : "gzip");
            h->enc = ENC_NONE;
            continue;
        }
        if (st < 200 || st >= 300)
            break;
        if (parse_answer(h, st, first, count, reject, ctx, &named, &last,
                         &rejected, why, why_cap))
            return AGENT_SEND_RETRY;
        if (named >= rejected)
            return AGENT_SEND_OK;
        if (named == 0 || last >= count) {
            /* the server names errors in order, 50 at least: the lines it
             * rejected cannot be told */
            snprintf(why, why_cap,
                     "HTTP 200 rejecting %llu lines but naming %u, none "
                     "after line %u of %u: not an acknowledgement",
                     (unsigned long long)rejected, named, last, count);
            return AGENT_SEND_RETRY;
        }
        /* more rejected than named: the rest is after the last named */
        first += last;
        count -= last;
    }
    if (st == 413 || st == 400) {
        uint32_t half = count / 2;
        agent_send_rc rc;
        if (count == 1) {
            char r[128];
            int n = snprintf(r, sizeof r, "HTTP %ld from the server%s", st,
                             st == 413 ? " (line too large)" : "");
            reject(ctx, first, r, (size_t)n);
            return AGENT_SEND_OK;
        }
        rc = send_range(h, b, first, half, reject, ctx, why, why_cap);
        if (rc != AGENT_SEND_OK)
            return rc;
        return send_range(h, b, first + half, count - half, reject, ctx, why,
                          why_cap);
    }
    if (st == 401 || st == 403) {
        snprintf(why, why_cap,
                 "HTTP %ld: the server refused the token (check --token)", st);
        return AGENT_SEND_CONFIG;
    }
    if (st == 404 || st == 415 || st == 405) {
        snprintf(why, why_cap,
                 "HTTP %ld from %s (check --url: it must end with the events "
                 "path, e.g. /api/v1/events/)",
                 st, h->url[b->stream]);
        return AGENT_SEND_CONFIG;
    }
    if (st)
        snprintf(why, why_cap, "HTTP %ld", st);
    return AGENT_SEND_RETRY;
}

static agent_send_rc http_send(agent_sink *s, const agent_batch *b,
                               agent_reject_fn reject, void *ctx, char *why,
                               size_t why_cap)
{
    http_sink *h = (http_sink *)s;
    if (b->n == 0)
        return AGENT_SEND_OK;
    return send_range(h, b, 0, b->n, reject, ctx, why, why_cap);
}

static void http_free(agent_sink *s)
{
    http_sink *h = (http_sink *)s;
    if (!h)
        return;
    httpc_free(h->hc);
    for (int i = 0; i < AGENT_NSTREAMS; i++)
        free(h->url[i]);
    if (h->token) {
        /* the token does not outlive the sink in freed memory */
        explicit_bzero(h->token, strlen(h->token));
        free(h->token);
    }
    ZSTD_freeCCtx(h->zc);
    gbuf_release(&h->z);
    gbuf_release(&h->resp);
    free(h->tok);
    free(h);
}

static const agent_sink_ops http_ops = { "http", http_send, http_free };

agent_sink *agent_sink_http_new(const agent_cfg *cfg, volatile int *stop,
                                char *err, size_t errcap)
{
    http_sink *h = calloc(1, sizeof *h);
    httpc_cfg hc = { cfg->timeout_ms, cfg->ca_file, "gpufl-agent/0.1", 1 };
    CURL *c;

    if (!h) {
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    h->base.ops = &http_ops;
    h->stop = stop;
    gbuf_init(&h->resp, HTTP_RESP_MAX);
    /* the bounds of both encoders for the largest batch: n + n/8 + 64 KiB
     * is above zstd's (n + n/256 + ...) and zlib's (n + n/1000 + ...) */
    gbuf_init(&h->z, (size_t)cfg->batch_bytes + cfg->max_line_bytes +
                         (cfg->batch_bytes + cfg->max_line_bytes) / 8 + 65536);
    h->enc = !strcmp(cfg->compress, "zstd")   ? ENC_ZSTD
             : !strcmp(cfg->compress, "gzip") ? ENC_GZIP
                                              : ENC_NONE;
    if (strncmp(cfg->url, "http://", 7) && strncmp(cfg->url, "https://", 8)) {
        snprintf(err, errcap, "--url must start with http:// or https://");
        goto fail;
    }
    for (int i = 0; i < AGENT_NSTREAMS; i++) {
        size_t n = strlen(cfg->url) + strlen(agent_stream_names[i]) + 2;
        const char *slash = cfg->url[strlen(cfg->url) - 1] == '/' ? "" : "/";
        h->url[i] = malloc(n);
        if (!h->url[i])
            goto nomem;
        snprintf(h->url[i], n, "%s%s%s", cfg->url, slash,
                 agent_stream_names[i]);
    }
    if (cfg->token && *cfg->token && !(h->token = strdup(cfg->token)))
        goto nomem;
    h->zc = ZSTD_createCCtx();
    if (!h->zc)
        goto nomem;
    if (httpc_new(&h->hc, &hc, err, errcap))
        goto fail;
    c = httpc_curl(h->hc);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, h);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    return &h->base;
nomem:
    snprintf(err, errcap, "out of memory");
fail:
    http_free(&h->base);
    return NULL;
}
