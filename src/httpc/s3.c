/*
 * s3.c - SigV4 signing (OpenSSL HMAC-SHA256) and the S3 requests gpufl
 * uses: PUT object; multipart create / upload part / complete (with
 * abort on failure) for the agent's archiver; PUT, GET and DELETE of an
 * object in memory for the server's cold tier.  Path-style addressing; every request
 * carries x-amz-content-sha256 with the real payload hash, so the server
 * checks the bytes as well as the signature.
 */
#include "httpc/s3.h"

#include "common/buf.h"
#include "httpc/httpc.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The longest S3 answer kept (errors, InitiateMultipartUploadResult). */
#define S3_RESP_MAX (64u * 1024)
#define S3_URL_MAX 4096

struct s3_client {
    httpc *hc;
    char *endpoint; /* without a trailing '/' */
    char *host;     /* host[:port] as in the endpoint */
    char *bucket, *region, *access, *secret;
    gbuf resp; /* the answer's first S3_RESP_MAX bytes (errors, upload ids) */
    char etag[256];
};

static void hex(const unsigned char *p, size_t n, char *out)
{
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[p[i] >> 4];
        out[2 * i + 1] = d[p[i] & 15];
    }
    out[2 * n] = '\0';
}

static void sha256_hex(const void *p, size_t n, char out[65])
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(p, n, md);
    hex(md, sizeof md, out);
}

static void hmac(const void *key, size_t klen, const char *msg,
                 unsigned char out[32])
{
    unsigned int len = 32;
    HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg),
         out, &len);
}

size_t s3_uri_encode(const char *in, int keep_slash, char *out, size_t cap)
{
    static const char d[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
        int plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                    (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' ||
                    *p == '.' || *p == '~' || (keep_slash && *p == '/');
        if (o + 4 > cap)
            return 0;
        if (plain) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = d[*p >> 4];
            out[o++] = d[*p & 15];
        }
    }
    out[o] = '\0';
    return o;
}

int s3_sign(const char *method, const char *uri, const char *query,
            const s3_header *headers, size_t nheaders,
            const char *payload_sha256_hex, const char *amz_date,
            const char *region, const char *service, const char *access_key,
            const char *secret_key, char *out, size_t out_cap)
{
    char *creq = NULL, signed_h[512] = "", chash[65], sts[512], key[256];
    char date[9], sig[65];
    unsigned char k1[32], k2[32], k3[32], k4[32], s[32];
    size_t cap = 8192, pos = 0, sp = 0;
    int w;

    creq = malloc(cap);
    if (!creq)
        return -1;
    w = snprintf(creq, cap, "%s\n%s\n%s\n", method, uri, query);
    if (w < 0 || (size_t)w >= cap)
        goto fail;
    pos = (size_t)w;
    for (size_t i = 0; i < nheaders; i++) {
        w = snprintf(creq + pos, cap - pos, "%s:%s\n", headers[i].name,
                     headers[i].value);
        if (w < 0 || (size_t)w >= cap - pos)
            goto fail;
        pos += (size_t)w;
        w = snprintf(signed_h + sp, sizeof signed_h - sp, "%s%s", i ? ";" : "",
                     headers[i].name);
        if (w < 0 || (size_t)w >= sizeof signed_h - sp)
            goto fail;
        sp += (size_t)w;
    }
    w = snprintf(creq + pos, cap - pos, "\n%s\n%s", signed_h,
                 payload_sha256_hex);
    if (w < 0 || (size_t)w >= cap - pos)
        goto fail;
    pos += (size_t)w;
    sha256_hex(creq, pos, chash);
    memcpy(date, amz_date, 8);
    date[8] = '\0';
    snprintf(sts, sizeof sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s",
             amz_date, date, region, service, chash);
    w = snprintf(key, sizeof key, "AWS4%s", secret_key);
    if (w < 0 || (size_t)w >= sizeof key)
        goto fail;
    hmac(key, (size_t)w, date, k1);
    hmac(k1, 32, region, k2);
    hmac(k2, 32, service, k3);
    hmac(k3, 32, "aws4_request", k4);
    hmac(k4, 32, sts, s);
    hex(s, 32, sig);
    w = snprintf(out, out_cap,
                 "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, "
                 "SignedHeaders=%s, Signature=%s",
                 access_key, date, region, service, signed_h, sig);
    memset(key, 0, sizeof key);
    free(creq);
    return w < 0 || (size_t)w >= out_cap ? -1 : 0;
fail:
    memset(key, 0, sizeof key);
    free(creq);
    return -1;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
    s3_client *s = ud;
    size_t n = size * nmemb;
    if (n > 5 && strncasecmp(p, "etag:", 5) == 0) {
        size_t i = 5, e = n;
        while (i < n && (p[i] == ' ' || p[i] == '\t'))
            i++;
        while (e > i && (p[e - 1] == '\r' || p[e - 1] == '\n'))
            e--;
        if (e - i < sizeof s->etag) {
            memcpy(s->etag, p + i, e - i);
            s->etag[e - i] = '\0';
        }
    }
    return n;
}

/* Text between <tag> and </tag> in the response, or "". */
static void xml_get(const s3_client *s, const char *tag, char *out, size_t cap)
{
    char open[64], close[64];
    const char *a, *b;
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    out[0] = '\0';
    a = strstr(gbuf_str(&s->resp), open);
    if (!a)
        return;
    a += strlen(open);
    b = strstr(a, close);
    if (b && (size_t)(b - a) < cap) {
        memcpy(out, a, (size_t)(b - a));
        out[b - a] = '\0';
    }
}

/* One signed request; returns the HTTP status (0: transport failure).
 * The answer's body goes to into (a GET's object), else to s->resp. */
static long s3_request_into(s3_client *s, const char *method, const char *key,
                            const char *query, const char *body, size_t len,
                            gbuf *into, char *why, size_t why_cap)
{
    char path[2 * S3_URL_MAX], ekey[S3_URL_MAX], url[4 * S3_URL_MAX];
    char payload[65], amz_date[17], auth[1024];
    s3_header hs[3];
    struct curl_slist *hl = NULL;
    httpc_req r = { NULL, NULL, NULL, NULL, 0 };
    time_t now = time(NULL);
    struct tm tm;
    long status = 0;

    if (!s3_uri_encode(key, 1, ekey, sizeof ekey))
        return 0;
    if ((size_t)snprintf(path, sizeof path, "/%.1024s/%s", s->bucket, ekey) >=
        sizeof path)
        return 0;
    snprintf(url, sizeof url, "%s%s%s%s", s->endpoint, path,
             query[0] ? "?" : "", query);
    sha256_hex(body ? body : "", len, payload);
    gmtime_r(&now, &tm);
    strftime(amz_date, sizeof amz_date, "%Y%m%dT%H%M%SZ", &tm);
    hs[0].name = "host";
    hs[0].value = s->host;
    hs[1].name = "x-amz-content-sha256";
    hs[1].value = payload;
    hs[2].name = "x-amz-date";
    hs[2].value = amz_date;
    if (s3_sign(method, path, query, hs, 3, payload, amz_date, s->region, "s3",
                s->access, s->secret, auth, sizeof auth)) {
        snprintf(why, why_cap, "cannot sign the request");
        return 0;
    }
    if (httpc_header(&hl, "Authorization", auth) ||
        httpc_header(&hl, "x-amz-content-sha256", payload) ||
        httpc_header(&hl, "x-amz-date", amz_date) ||
        httpc_header(&hl, "Expect", NULL) ||
        httpc_header(&hl, "Content-Type", "application/octet-stream")) {
        explicit_bzero(auth, sizeof auth);
        httpc_headers_free(hl);
        snprintf(why, why_cap, "out of memory");
        return 0;
    }
    explicit_bzero(auth, sizeof auth);
    gbuf_reset(&s->resp);
    s->etag[0] = '\0';
    if (!into)
        into = &s->resp;
    r.url = url;
    r.method = method;
    r.headers = hl;
    /* a body for every method but GET and DELETE, empty for a POST */
    if (strcmp(method, "GET") && strcmp(method, "DELETE")) {
        r.body = body ? body : "";
        r.len = len;
    }
    if (httpc_do(s->hc, &r, into, &status, why, why_cap) == 0 &&
        status >= 300) {
        char code[128];
        /* a GET's error XML went to into: S3's code from there */
        if (into != &s->resp && into->p)
            gbuf_add(&s->resp, into->p,
                     into->len < S3_RESP_MAX ? into->len : S3_RESP_MAX - 1);
        xml_get(s, "Code", code, sizeof code);
        snprintf(why, why_cap, "HTTP %ld %s", status, code);
    }
    httpc_headers_free(hl);
    return status;
}

static long s3_request(s3_client *s, const char *method, const char *key,
                       const char *query, const char *body, size_t len,
                       char *why, size_t why_cap)
{
    return s3_request_into(s, method, key, query, body, len, NULL, why,
                           why_cap);
}

int s3_put(s3_client *s, const char *key, const void *buf, size_t len,
           char *why, size_t why_cap)
{
    if (len > S3_PART_BYTES) {
        snprintf(why, why_cap, "object over %u bytes", S3_PART_BYTES);
        return -1;
    }
    return s3_request(s, "PUT", key, "", buf, len, why, why_cap) == 200 ? 0
                                                                        : -1;
}

int s3_get(s3_client *s, const char *key, gbuf *out, char *why, size_t why_cap)
{
    long status;

    gbuf_reset(out);
    status = s3_request_into(s, "GET", key, "", NULL, 0, out, why, why_cap);
    if (status == 200 && out->err) {
        snprintf(why, why_cap, "object over %zu bytes", out->max);
        status = 0;
    }
    if (status != 200)
        gbuf_reset(out);
    if (status == 404)
        return S3_NOTFOUND;
    return status == 200 ? 0 : -1;
}

int s3_delete(s3_client *s, const char *key, char *why, size_t why_cap)
{
    long status = s3_request(s, "DELETE", key, "", NULL, 0, why, why_cap);
    return status == 204 || status == 200 || status == 404 ? 0 : -1;
}

s3_client *s3_client_new(const char *endpoint, const char *bucket,
                         const char *region, const char *access_key,
                         const char *secret_key, uint64_t timeout_ms,
                         const char *ca_file, char *why, size_t why_cap)
{
    s3_client *s = calloc(1, sizeof *s);
    httpc_cfg hc = { timeout_ms, ca_file, NULL, 0 };
    const char *h;
    size_t n;

    if (!s) {
        snprintf(why, why_cap, "out of memory");
        return NULL;
    }
    gbuf_init(&s->resp, S3_RESP_MAX);
    s->endpoint = strdup(endpoint);
    s->bucket = strdup(bucket);
    s->region = strdup(region);
    s->access = strdup(access_key);
    s->secret = strdup(secret_key);
    if (!s->endpoint || !s->bucket || !s->region || !s->access || !s->secret) {
        snprintf(why, why_cap, "out of memory");
        goto fail;
    }
    if (httpc_new(&s->hc, &hc, why, why_cap))
        goto fail;
    curl_easy_setopt(httpc_curl(s->hc), CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(httpc_curl(s->hc), CURLOPT_HEADERDATA, s);
    n = strlen(s->endpoint);
    while (n && s->endpoint[n - 1] == '/')
        s->endpoint[--n] = '\0';
    h = strstr(s->endpoint, "://");
    h = h ? h + 3 : s->endpoint;
    s->host = strndup(h, strcspn(h, "/"));
    if (!s->host) {
        snprintf(why, why_cap, "out of memory");
        goto fail;
    }
    return s;
fail:
    s3_client_free(s);
    return NULL;
}

void s3_client_free(s3_client *s)
{
    if (!s)
        return;
    httpc_free(s->hc);
    gbuf_release(&s->resp);
    free(s->endpoint);
    free(s->host);
    free(s->bucket);
    free(s->region);
    free(s->access);
    if (s->secret) {
        memset(s->secret, 0, strlen(s->secret));
        free(s->secret);
    }
    free(s);
}

static int read_at(int fd, char *buf, size_t n, off_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, buf + got, n - got, off + (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

int s3_put_file(s3_client *s, const char *key, const char *path, char *why,
                size_t why_cap)
{
    /* a log folder's file: never block on a FIFO, never follow a link */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW),
        rc = -1;
    struct stat st;
    char *buf = NULL, *done = NULL, upload[512] = "", enc[1024], q[1200];
    size_t dlen = 0, dcap = 0;
    uint64_t size, nparts;
    long status;

    if (fd < 0 || fstat(fd, &st)) {
        snprintf(why, why_cap, "cannot open %s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, why_cap, "%s is not a regular file", path);
        goto out;
    }
    size = (uint64_t)st.st_size;
    buf = malloc(size < S3_PART_BYTES ? (size ? size : 1) : S3_PART_BYTES);
    if (!buf)
        goto out;
    if (size <= S3_PART_BYTES) {
        if (read_at(fd, buf, size, 0))
            goto io;
        status = s3_request(s, "PUT", key, "", buf, size, why, why_cap);
        rc = status == 200 ? 0 : -1;
        goto out;
    }
    nparts = (size + S3_PART_BYTES - 1) / S3_PART_BYTES;
    if (nparts > S3_MAX_PARTS) {
        snprintf(why, why_cap, "file over %u parts", S3_MAX_PARTS);
        goto out;
    }
    status = s3_request(s, "POST", key, "uploads=", NULL, 0, why, why_cap);
    if (status != 200)
        goto out;
    xml_get(s, "UploadId", upload, sizeof upload);
    if (!upload[0] || !s3_uri_encode(upload, 0, enc, sizeof enc)) {
        snprintf(why, why_cap, "no UploadId in the answer");
        goto out;
    }
    dcap = 128 + nparts * 400;
    done = malloc(dcap);
    if (!done)
        goto out;
    dlen = (size_t)snprintf(done, dcap, "<CompleteMultipartUpload>");
    for (uint64_t p = 0; p < nparts; p++) {
        uint64_t off = p * S3_PART_BYTES;
        size_t n =
            (size_t)(size - off < S3_PART_BYTES ? size - off : S3_PART_BYTES);
        if (read_at(fd, buf, n, (off_t)off))
            goto abort_io;
        /* the canonical query must be sorted: partNumber < uploadId */
        snprintf(q, sizeof q, "partNumber=%llu&uploadId=%s",
                 (unsigned long long)p + 1, enc);
        status = s3_request(s, "PUT", key, q, buf, n, why, why_cap);
        if (status != 200 || !s->etag[0])
            goto abort;
        dlen += (size_t)snprintf(done + dlen, dcap - dlen,
                                 "<Part><PartNumber>%llu</PartNumber>"
                                 "<ETag>%s</ETag></Part>",
                                 (unsigned long long)p + 1, s->etag);
    }
    dlen += (size_t)snprintf(done + dlen, dcap - dlen,
                             "</CompleteMultipartUpload>");
    snprintf(q, sizeof q, "uploadId=%s", enc);
    status = s3_request(s, "POST", key, q, done, dlen, why, why_cap);
    /* S3 may answer 200 with an <Error> body to a Complete */
    if (status == 200 && !strstr(gbuf_str(&s->resp), "<Error>")) {
        rc = 0;
        goto out;
    }
    goto abort;
abort_io:
    snprintf(why, why_cap, "cannot read %s", path);
abort : {
    char ignore[256];
    snprintf(q, sizeof q, "uploadId=%s", enc);
    s3_request(s, "DELETE", key, q, NULL, 0, ignore, sizeof ignore);
}
    goto out;
io:
    snprintf(why, why_cap, "cannot read %s", path);
out:
    if (fd >= 0)
        close(fd);
    free(buf);
    free(done);
    return rc;
}
