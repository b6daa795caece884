/*
 * push.c - HTTP POSTs (libcurl): profiles to gpufl-server (JSON, gzip'd
 * above 64 KiB; the server decodes Content-Encoding gzip like /events) and
 * folded text to a Pyroscope-compatible /ingest.
 */
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

static size_t sink(char *p, size_t sz, size_t n, void *u)
{
    (void)p;
    (void)u;
    return sz * n;
}

int mp_push(const char *url, const char *token, const char *body, size_t n,
            long *http_status)
{
    return mp_post(url, token, "application/json", body, n, http_status);
}

int mp_post(const char *url, const char *token, const char *ctype,
            const char *body, size_t n, long *http_status)
{
    CURL *c = curl_easy_init();
    if (!c)
        return -1;
    struct curl_slist *h = NULL;
    char auth[1024];
    char ct[128];
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
    }
    snprintf(ct, sizeof ct, "Content-Type: %s", ctype);
    h = curl_slist_append(h, ct);
    unsigned char *z = NULL;
    size_t zn = 0;
    if (token && n > 65536 && !mp_gzip(body, n, &z, &zn)) {
        h = curl_slist_append(h, "Content-Encoding: gzip");
        body = (const char *)z;
        n = zn;
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    CURLcode r = curl_easy_perform(c);
    long st = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
    if (http_status)
        *http_status = st;
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    free(z);
    return r == CURLE_OK && st >= 200 && st < 300 ? 0 : -1;
}
