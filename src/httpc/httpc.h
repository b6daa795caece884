/*
 * httpc.h - the one libcurl setup of every gpufl HTTP client: the agent's
 * HTTP sink and S3 archive, memprof's pushes (gpufl-server, Pyroscope)
 * and the idle detector's Jupyter, dcgm-exporter and webhook requests.
 *
 * What every handle gets, so no client can forget one:
 *   - a total time limit and a connect limit (min(total, 10 s));
 *   - TLS that verifies the peer and the host name, always, against the
 *     system's CA store or a CA file (--ca-file); there is no switch to
 *     turn verification off;
 *   - no redirects (they would carry the token to another host), http and
 *     https only, no signals (threads);
 *   - a response body kept in a gbuf up to its cap: bytes past it are read
 *     and dropped (the connection stays usable), the prefix is kept and
 *     the gbuf's error says GPUFL_ETOOBIG;
 *   - libcurl's own error text, made plain for TLS refusals.
 * A library of its own (gpufl_httpc), not src/common: libgpufl, the
 * client library, never links libcurl.
 *
 * Not thread-safe per handle; handles are independent.  The process calls
 * curl_global_init (or lets the first handle do it) before threads start.
 */
#ifndef GPUFL_HTTPC_H
#define GPUFL_HTTPC_H

#include <curl/curl.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* The connect limit when the total allows more (ms). */
#define HTTPC_CONNECT_MS 10000

typedef struct httpc_cfg {
    uint64_t timeout_ms;    /* the whole request; 0: no limit */
    const char *ca_file;    /* PEM CA bundle (copied); NULL or "": system */
    const char *user_agent; /* copied by libcurl; NULL: libcurl's */
    int keepalive;          /* TCP keep-alive probes on idle connections */
} httpc_cfg;

typedef struct httpc httpc;

/* A handle set up from cfg (borrowed for the call).  0, or GPUFL_ENOMEM
 * / GPUFL_EINVAL (a CA file that cannot be read) with why[whylen]. */
int httpc_new(httpc **out, const httpc_cfg *cfg, char *why, size_t whylen);
/* Closes the connection and frees h (NULL is fine). */
void httpc_free(httpc *h);

/* The easy handle, for options only one client needs (a progress
 * callback, a header callback, basic auth).  Owned by h. */
CURL *httpc_curl(httpc *h);

/* One request. */
typedef struct httpc_req {
    const char *url;
    const char *method;               /* NULL: POST with a body, else GET */
    const struct curl_slist *headers; /* borrowed; NULL: none */
    const void *body;                 /* borrowed; NULL: no body */
    size_t len;
} httpc_req;

/*
 * Sends r and waits for the answer.  0 when an answer came (any status,
 * in *status), its body appended to resp (NULL: dropped; see above for
 * its cap).  Else GPUFL_ETIMEDOUT, GPUFL_EPERM (the peer's certificate
 * or host name did not verify), GPUFL_EIO (any other failure) or
 * GPUFL_ENOMEM, with why[whylen] saying what happened (never a header or
 * a token) and *status 0.
 */
int httpc_do(httpc *h, const httpc_req *r, gbuf *resp, long *status, char *why,
             size_t whylen);

/* Appends "name: value" to *list ("name:" for a NULL value: libcurl then
 * sends no such header of its own, e.g. Expect).  0 or GPUFL_ENOMEM
 * (*list unchanged).
 * The text handed to libcurl is wiped from the stack afterwards: values
 * may be tokens. */
int httpc_header(struct curl_slist **list, const char *name, const char *value);
/* "Authorization: <scheme> <token>" ("Bearer" for gpufl-server). */
int httpc_auth(struct curl_slist **list, const char *scheme, const char *token);
/* Frees a header list, wiping each line first (they may hold tokens). */
void httpc_headers_free(struct curl_slist *list);

/* 1 when url is plain http:// to a host that is not a loopback name or
 * address (localhost, 127.0.0.0/8, ::1): a token sent there crosses the
 * network in the clear.  0 otherwise (https, loopback, unparsable). */
int httpc_cleartext(const char *url);

#endif
