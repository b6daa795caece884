/*
 * httpc.c - the one libcurl setup (see httpc.h).
 */
#include "httpc/httpc.h"

#include <gpufl/gpufl.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

struct httpc {
    CURL *c;
    char err[CURL_ERROR_SIZE]; /* libcurl's text for the last failure */
};

/* The answer's body into the caller's gbuf, within its cap: past it the
 * bytes are read and dropped, so the connection can be used again. */
static size_t on_body(char *p, size_t size, size_t nmemb, void *ud)
{
    gbuf *b = ud;
    size_t n = size * nmemb;

    if (!b || b->err)
        return n;
    if (n > b->max - b->len) {
        gbuf_add(b, p, b->max - b->len); /* the prefix is kept */
        b->err = GPUFL_ETOOBIG;
        return n;
    }
    if (gbuf_add(b, p, n))
        return 0; /* out of memory: the transfer stops */
    return n;
}

/* A CA file must be a readable regular file: said at start, not as a TLS
 * failure on the first request. */
static int ca_check(const char *path, char *why, size_t whylen)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

    if (fd < 0) {
        snprintf(why, whylen, "--ca-file %s: %s", path, strerror(errno));
        return GPUFL_EINVAL;
    }
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        snprintf(why, whylen, "--ca-file %s: not a regular file", path);
        return GPUFL_EINVAL;
    }
    close(fd);
    return 0;
}

int httpc_new(httpc **out, const httpc_cfg *cfg, char *why, size_t whylen)
{
    httpc *h;
    long total = (long)cfg->timeout_ms;
    int rc;

    *out = NULL;
    if (cfg->ca_file && *cfg->ca_file &&
        (rc = ca_check(cfg->ca_file, why, whylen)) != 0)
        return rc;
    h = calloc(1, sizeof(*h));
    if (!h || !(h->c = curl_easy_init())) {
        free(h);
        snprintf(why, whylen, "out of memory");
        return GPUFL_ENOMEM;
    }
    curl_easy_setopt(h->c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h->c, CURLOPT_ERRORBUFFER, h->err);
    if (total > 0)
        curl_easy_setopt(h->c, CURLOPT_TIMEOUT_MS, total);
    curl_easy_setopt(h->c, CURLOPT_CONNECTTIMEOUT_MS,
                     total > 0 && total < HTTPC_CONNECT_MS ? total
                                                           : HTTPC_CONNECT_MS);
    /* redirects would carry the token to another host */
    curl_easy_setopt(h->c, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(h->c, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
    curl_easy_setopt(h->c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h->c, CURLOPT_SSL_VERIFYHOST, 2L);
    if (cfg->ca_file && *cfg->ca_file)
        curl_easy_setopt(h->c, CURLOPT_CAINFO, cfg->ca_file);
    if (cfg->user_agent)
        curl_easy_setopt(h->c, CURLOPT_USERAGENT, cfg->user_agent);
    if (cfg->keepalive)
        curl_easy_setopt(h->c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h->c, CURLOPT_WRITEFUNCTION, on_body);
    *out = h;
    return 0;
}

void httpc_free(httpc *h)
{
    if (!h)
        return;
    curl_easy_cleanup(h->c);
    free(h);
}

CURL *httpc_curl(httpc *h)
{
    return h->c;
}

/* A failed transfer in words, and its error code. */
static int failure(httpc *h, CURLcode cc, char *why, size_t whylen)
{
    const char *msg = h->err[0] ? h->err : curl_easy_strerror(cc);

    switch (cc) {
    case CURLE_OPERATION_TIMEDOUT:
        snprintf(why, whylen, "%s", msg);
        return GPUFL_ETIMEDOUT;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
        snprintf(why, whylen,
                 "TLS: the server's certificate was not accepted (%s); it "
                 "must be signed by a CA in --ca-file or the system's store "
                 "and name the URL's host",
                 msg);
        return GPUFL_EPERM;
    case CURLE_OUT_OF_MEMORY:
    case CURLE_WRITE_ERROR:
        snprintf(why, whylen, "out of memory reading the answer");
        return GPUFL_ENOMEM;
    default: snprintf(why, whylen, "%s", msg); return GPUFL_EIO;
    }
}

int httpc_do(httpc *h, const httpc_req *r, gbuf *resp, long *status, char *why,
             size_t whylen)
{
    const char *m = r->method;
    CURLcode cc;

    *status = 0;
    h->err[0] = '\0';
    curl_easy_setopt(h->c, CURLOPT_URL, r->url);
    curl_easy_setopt(h->c, CURLOPT_HTTPHEADER, r->headers);
    if (r->body) {
        curl_easy_setopt(h->c, CURLOPT_POSTFIELDS, r->body);
        curl_easy_setopt(h->c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->len);
        if (m && !strcmp(m, "POST"))
            m = NULL;
    } else {
        curl_easy_setopt(h->c, CURLOPT_HTTPGET, 1L);
        if (m && !strcmp(m, "GET"))
            m = NULL;
    }
    curl_easy_setopt(h->c, CURLOPT_CUSTOMREQUEST, m);
    curl_easy_setopt(h->c, CURLOPT_WRITEDATA, resp);
    cc = curl_easy_perform(h->c);
    /* the list is the caller's and may be freed once this returns */
    curl_easy_setopt(h->c, CURLOPT_HTTPHEADER, NULL);
    if (cc != CURLE_OK)
        return failure(h, cc, why, whylen);
    curl_easy_getinfo(h->c, CURLINFO_RESPONSE_CODE, status);
    return 0;
}

int httpc_header(struct curl_slist **list, const char *name, const char *value)
{
    size_t n = strlen(name) + (value ? strlen(value) : 0) + 3;
    char *line = malloc(n);
    struct curl_slist *l;

    if (!line)
        return GPUFL_ENOMEM;
    /* "Name:" with nothing after it keeps libcurl from sending its own */
    snprintf(line, n, value ? "%s: %s" : "%s:", name, value ? value : "");
    l = curl_slist_append(*list, line);
    explicit_bzero(line, n);
    free(line);
    if (!l)
        return GPUFL_ENOMEM;
    *list = l;
    return 0;
}

int httpc_auth(struct curl_slist **list, const char *scheme, const char *token)
{
    size_t n = strlen(scheme) + strlen(token) + 2;
    char *v = malloc(n);
    int rc;

    if (!v)
        return GPUFL_ENOMEM;
    snprintf(v, n, "%s %s", scheme, token);
    rc = httpc_header(list, "Authorization", v);
    explicit_bzero(v, n);
    free(v);
    return rc;
}

void httpc_headers_free(struct curl_slist *list)
{
    for (struct curl_slist *l = list; l; l = l->next)
        if (l->data)
            explicit_bzero(l->data, strlen(l->data));
    curl_slist_free_all(list);
}

/* localhost, *.localhost, 127.0.0.0/8, ::1 (with or without brackets). */
static int loopback(const char *host)
{
    size_t n = strlen(host);
    struct in_addr a4;
    struct in6_addr a6;
    char h6[64];

    if (!strcasecmp(host, "localhost") ||
        (n > 10 && !strcasecmp(host + n - 10, ".localhost")))
        return 1;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']' && n - 2 < sizeof(h6)) {
        memcpy(h6, host + 1, n - 2);
        h6[n - 2] = '\0';
        host = h6;
    }
    if (inet_pton(AF_INET6, host, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return 0;
}

int httpc_cleartext(const char *url)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL;
    int r = 0;

    if (!u)
        return 0;
    if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK)
        r = !strcasecmp(scheme, "http") && !loopback(host);
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
    return r;
}
