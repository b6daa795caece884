/*
 * push.c - profiles to gpufl-server: a JSON POST (gzip'd above 64 KiB; the
 * server decodes Content-Encoding gzip like /events) through the one
 * libcurl setup (src/httpc).
 */
#include <stdlib.h>
#include <string.h>

#include <gpufl/gpufl.h>

#include "httpc/httpc.h"
#include "session.h"

/* The whole request, as it was. */
#define MP_PUSH_TIMEOUT_MS 30000

int mp_push(const char *url, const char *token, const char *ca_file,
            const char *body, size_t n, long *http_status, char *why,
            size_t whylen)
{
    httpc_cfg cfg = { MP_PUSH_TIMEOUT_MS, ca_file, NULL, 0 };
    httpc_req r = { url, "POST", NULL, body, n };
    struct curl_slist *h = NULL;
    unsigned char *z = NULL;
    size_t zn = 0;
    httpc *c = NULL;
    int rc = -1;

    *http_status = 0;
    if (httpc_new(&c, &cfg, why, whylen))
        return -1;
    if ((token && httpc_auth(&h, "Bearer", token)) ||
        httpc_header(&h, "Content-Type", "application/json")) {
        snprintf(why, whylen, "out of memory");
        goto out;
    }
    if (token && n > 65536 && !mp_gzip(body, n, &z, &zn)) {
        if (httpc_header(&h, "Content-Encoding", "gzip")) {
            snprintf(why, whylen, "out of memory");
            goto out;
        }
        r.body = z;
        r.len = zn;
    }
    r.headers = h;
    if (httpc_do(c, &r, NULL, http_status, why, whylen))
        goto out;
    if (*http_status >= 200 && *http_status < 300)
        rc = 0;
    else
        snprintf(why, whylen, "HTTP %ld", *http_status);
out:
    httpc_headers_free(h);
    httpc_free(c);
    free(z);
    return rc;
}
