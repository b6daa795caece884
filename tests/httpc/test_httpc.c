/*
 * test_httpc.c - the one libcurl setup against a small HTTP server on
 * 127.0.0.1 in a thread: statuses, the response cap (prefix kept, rest
 * drained, GPUFL_ETOOBIG, the connection usable again), no redirects, a
 * timeout, a refused connection, headers (Bearer), methods, a CA file that cannot be read; and which URLs send a token in
 * the clear.  TLS verification is tested end to end in tests/agent,
 * tests/memprof and tests/idle against real servers.
 */
#include "httpc/httpc.h"
#include "test.h"

#include <gpufl/gpufl.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

/* What the server answers, and what it saw. */
static struct {
    int fd;
    int port;
    char answer[64]; /* status line word: "200 OK", "301 Moved" ... */
    size_t body_len; /* bytes of 'x' in the body */
    int stall;       /* read the request and never answer */
    char request[8192];
    int served;
} S;

static void *serve(void *arg)
{
    (void)arg;
    for (;;) {
        int c = accept(S.fd, NULL, NULL);
        if (c < 0)
            return NULL;
        for (;;) {
            char head[512];
            ssize_t n = 0, r;
            /* one request: the head, then a body of Content-Length */
            while ((size_t)n < sizeof S.request - 1 &&
                   (r = read(c, S.request + n, sizeof S.request - 1 - n)) > 0) {
                n += r;
                S.request[n] = '\0';
                char *end = strstr(S.request, "\r\n\r\n");
                char *cl = strstr(S.request, "Content-Length: ");
                if (end && (!cl || (size_t)(S.request + n - end - 4) >=
                                       (size_t)strtoul(cl + 16, NULL, 10)))
                    break;
            }
            if (n <= 0)
                break;
            S.served++;
            if (S.stall) {
                sleep(2);
                break;
            }
            int k = snprintf(head, sizeof head,
                             "HTTP/1.1 %s\r\nContent-Length: %zu\r\n"
                             "Location: http://127.0.0.1:1/elsewhere\r\n\r\n",
                             S.answer, S.body_len);
            if (write(c, head, (size_t)k) != k)
                break;
            for (size_t left = S.body_len; left;) {
                char x[4096];
                size_t m = left < sizeof x ? left : sizeof x;
                memset(x, 'x', m);
                if (write(c, x, m) != (ssize_t)m)
                    break;
                left -= m;
            }
        }
        close(c);
    }
}

static void start_server(void)
{
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    pthread_t t;

    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    S.fd = socket(AF_INET, SOCK_STREAM, 0);
    bind(S.fd, (struct sockaddr *)&a, sizeof a);
    listen(S.fd, 8);
    getsockname(S.fd, (struct sockaddr *)&a, &al);
    S.port = ntohs(a.sin_port);
    pthread_create(&t, NULL, serve, NULL);
    pthread_detach(t);
}

static void test_answers(void)
{
    httpc_cfg cfg = { 5000, NULL, "gpufl-test/1", 1 };
    gbuf b = GBUF_INIT(1000);
    char url[64], why[256];
    httpc *h;
    long st;

    snprintf(url, sizeof url, "http://127.0.0.1:%d/x", S.port);
    REQUIRE(httpc_new(&h, &cfg, why, sizeof why) == 0);
    httpc_req r = { url, NULL, NULL, NULL, 0 };

    snprintf(S.answer, sizeof S.answer, "200 OK");
    S.body_len = 10;
    CHECK(httpc_do(h, &r, &b, &st, why, sizeof why) == 0);
    CHECK_EQ_U64(st, 200);
    CHECK_STR(gbuf_str(&b), "xxxxxxxxxx");
    CHECK(strncmp(S.request, "GET /x HTTP/1.1", 15) == 0);
    CHECK(strstr(S.request, "User-Agent: gpufl-test/1") != NULL);

    /* over the cap: the prefix, the error, the rest read and dropped */
    gbuf_reset(&b);
    S.body_len = 100000;
    CHECK(httpc_do(h, &r, &b, &st, why, sizeof why) == 0);
    CHECK_EQ_U64(st, 200);
    CHECK_EQ_U64(b.len, 1000);
    CHECK(b.err == GPUFL_ETOOBIG);
    /* ... and the same connection answers the next request */
    gbuf_reset(&b);
    S.body_len = 3;
    int served = S.served;
    CHECK(httpc_do(h, &r, &b, &st, why, sizeof why) == 0);
    CHECK_STR(gbuf_str(&b), "xxx");
    CHECK_EQ_U64(S.served, served + 1);

    /* a redirect is an answer, never followed */
    snprintf(S.answer, sizeof S.answer, "301 Moved Permanently");
    CHECK(httpc_do(h, &r, NULL, &st, why, sizeof why) == 0);
    CHECK_EQ_U64(st, 301);

    /* a POST with headers; a PUT; a DELETE */
    snprintf(S.answer, sizeof S.answer, "204 No Content");
    S.body_len = 0;
    struct curl_slist *hl = NULL;
    CHECK(httpc_auth(&hl, "Bearer", "s3cret-token") == 0);
    CHECK(httpc_header(&hl, "Expect", NULL) == 0);
    CHECK(httpc_header(&hl, "Content-Type", "application/x-ndjson") == 0);
    httpc_req p = { url, NULL, hl, "{\"a\":1}\n", 8 };
    CHECK(httpc_do(h, &p, NULL, &st, why, sizeof why) == 0);
    CHECK_EQ_U64(st, 204);
    CHECK(strncmp(S.request, "POST /x HTTP/1.1", 16) == 0);
    CHECK(strstr(S.request, "Authorization: Bearer s3cret-token\r\n") != NULL);
    CHECK(strstr(S.request, "\r\n\r\n{\"a\":1}\n") != NULL);
    p.method = "PUT";
    CHECK(httpc_do(h, &p, NULL, &st, why, sizeof why) == 0);
    CHECK(strncmp(S.request, "PUT /x HTTP/1.1", 15) == 0);
    httpc_req d = { url, "DELETE", hl, NULL, 0 };
    CHECK(httpc_do(h, &d, NULL, &st, why, sizeof why) == 0);
    CHECK(strncmp(S.request, "DELETE /x HTTP/1.1", 18) == 0);
    httpc_headers_free(hl);
    /* the handle forgot the list */
    CHECK(httpc_do(h, &r, NULL, &st, why, sizeof why) == 0);
    CHECK(strncmp(S.request, "GET /x HTTP/1.1", 15) == 0);
    CHECK(strstr(S.request, "Authorization") == NULL);
    httpc_free(h);
    gbuf_release(&b);
}

static void test_failures(void)
{
    httpc_cfg cfg = { 300, NULL, NULL, 0 };
    char url[64], why[256];
    httpc *h;
    long st = 7;

    REQUIRE(httpc_new(&h, &cfg, why, sizeof why) == 0);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/slow", S.port);
    httpc_req r = { url, NULL, NULL, NULL, 0 };
    S.stall = 1;
    CHECK(httpc_do(h, &r, NULL, &st, why, sizeof why) == GPUFL_ETIMEDOUT);
    CHECK_EQ_U64(st, 0);
    CHECK(why[0] != '\0');
    S.stall = 0;
    /* nothing listens on port 1 */
    r.url = "http://127.0.0.1:1/";
    CHECK(httpc_do(h, &r, NULL, &st, why, sizeof why) == GPUFL_EIO);
    CHECK(strstr(why, "onnect") != NULL);
    /* an ftp URL is not followed either */
    r.url = "ftp://127.0.0.1:1/";
    CHECK(httpc_do(h, &r, NULL, &st, why, sizeof why) == GPUFL_EIO);
    httpc_free(h);

    cfg.ca_file = "/nonexistent/ca.pem";
    CHECK(httpc_new(&h, &cfg, why, sizeof why) == GPUFL_EINVAL);
    CHECK(h == NULL);
    CHECK(strstr(why, "--ca-file /nonexistent/ca.pem") != NULL);
    cfg.ca_file = "/tmp";
    CHECK(httpc_new(&h, &cfg, why, sizeof why) == GPUFL_EINVAL);
    CHECK(strstr(why, "not a regular file") != NULL);
}

static void test_cleartext(void)
{
    CHECK(httpc_cleartext("http://gpufl.example.com:8080/api/v1/events/"));
    CHECK(httpc_cleartext("http://10.0.0.7/"));
    CHECK(httpc_cleartext("HTTP://node-7"));
    CHECK(httpc_cleartext("http://[2001:db8::1]:80/"));
    CHECK(!httpc_cleartext("https://gpufl.example.com/"));
    CHECK(!httpc_cleartext("http://localhost:8080/"));
    CHECK(!httpc_cleartext("http://LOCALHOST/"));
    CHECK(!httpc_cleartext("http://a.localhost/"));
    CHECK(!httpc_cleartext("http://127.0.0.1:8080/"));
    CHECK(!httpc_cleartext("http://127.3.4.5/"));
    CHECK(!httpc_cleartext("http://[::1]:8080/"));
    CHECK(!httpc_cleartext("not a url"));
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    start_server();
    RUN(test_answers);
    RUN(test_failures);
    RUN(test_cleartext);
    curl_global_cleanup();
    TEST_DONE();
}
