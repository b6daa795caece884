/*
 * http.c - the libmicrohttpd glue: listening socket, thread pool, request
 * bodies with a size cap, responses, CORS, and request timing.
 *
 * The listening socket is bound here (not by MHD) so that port 0 works
 * and the chosen port can be printed for scripts and tests.  Bodies are
 * accumulated per connection up to --max-body; a Content-Length over the
 * cap is answered 413 before the body is read, a chunked body that grows
 * past it is drained and then answered 413.  Handlers run on the MHD
 * worker thread that owns the connection and may block on the database:
 * the pool size bounds how many requests wait at once.
 */
#include "srv_int.h"

#include <gpufl/gpufl.h>

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct conn_ctx {
    char *buf;
    size_t len, cap;
    int over; /* body exceeded max_body: drained, then 413 */
    uint64_t t0_us;
} conn_ctx;

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

const char *srv_req_arg(const srv_req *r, const char *key)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *srv_req_header(const srv_req *r, const char *key)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, key);
}

void srv_resp_json(srv_resp *o, int status, char *buf, size_t len)
{
    o->status = status;
    o->ctype = "application/json";
    o->body = buf;
    o->len = len;
}

void srv_resp_error(srv_resp *o, int status, const char *msg)
{
    char *buf = malloc(1024);
    jw w;

    if (!buf) {
        srv_resp_json(o, status, NULL, 0);
        return;
    }
    jw_init(&w, buf, 1024);
    jw_obj_begin(&w);
    jw_kv_u64(&w, "status", (uint64_t)status);
    jw_key(&w, "error");
    jw_strn(&w, msg, strlen(msg), 900);
    jw_obj_end(&w);
    srv_resp_json(o, status, buf, w.len);
}

static enum MHD_Result send_resp(srv *s, struct MHD_Connection *c, srv_resp *o)
{
    struct MHD_Response *r;
    enum MHD_Result ret;

    r = MHD_create_response_from_buffer(o->len, o->body ? o->body : (void *)"",
                                        o->body ? MHD_RESPMEM_MUST_FREE
                                                : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(o->body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type",
                            o->ctype ? o->ctype : "application/json");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (o->allow[0])
        MHD_add_response_header(r, "Allow", o->allow);
    if (o->status == 401)
        MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    if (s->cfg.cors_origin[0]) {
        MHD_add_response_header(r, "Access-Control-Allow-Origin",
                                s->cfg.cors_origin);
        MHD_add_response_header(r, "Access-Control-Allow-Headers",
                                "Authorization, Content-Type, "
                                "Content-Encoding");
        MHD_add_response_header(r, "Access-Control-Allow-Methods",
                                "GET, POST, PUT, DELETE, OPTIONS");
    }
    ret = MHD_queue_response(c, (unsigned)o->status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    srv *s = cls;
    conn_ctx *x = *con_cls;
    srv_resp o;
    srv_req r;
    enum MHD_Result ret;

    (void)version;
    memset(&o, 0, sizeof(o));
    if (!x) {
        const char *cl;
        x = calloc(1, sizeof(*x));
        if (!x)
            return MHD_NO;
        x->t0_us = now_us();
        *con_cls = x;
        cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                         MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl) {
            char *end;
            unsigned long long n = strtoull(cl, &end, 10);
            if (n > s->cfg.max_body) {
                char msg[128];
                snprintf(msg, sizeof(msg), "body over the %llu-byte cap",
                         (unsigned long long)s->cfg.max_body);
                srv_resp_error(&o, 413, msg);
                srv_metrics_request(&s->met, MET_OTHER, 413, 0);
                return send_resp(s, c, &o);
            }
        }
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        if (!x->over && x->len + n > s->cfg.max_body)
            x->over = 1;
        if (!x->over) {
            if (x->len + n > x->cap) {
                size_t nc = x->cap ? x->cap : 65536;
                char *nb;
                while (nc < x->len + n)
                    nc *= 2;
                if (nc > s->cfg.max_body)
                    nc = s->cfg.max_body;
                nb = realloc(x->buf, nc);
                if (!nb)
                    return MHD_NO;
                x->buf = nb;
                x->cap = nc;
            }
            memcpy(x->buf + x->len, upload, n);
            x->len += n;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    __atomic_fetch_add(&s->met.bytes_in, x->len, __ATOMIC_RELAXED);
    memset(&r, 0, sizeof(r));
    r.method = method;
    r.path = url;
    r.conn = c;
    r.body = x->buf;
    r.body_len = x->len;
    r.cls = MET_OTHER;
    if (x->over) {
        char msg[128];
        snprintf(msg, sizeof(msg), "body over the %llu-byte cap",
                 (unsigned long long)s->cfg.max_body);
        srv_resp_error(&o, 413, msg);
    } else if (strcmp(method, "OPTIONS") == 0 && s->cfg.cors_origin[0]) {
        o.status = 204;
    } else {
        srv_api_handle(s, &r, &o);
    }
    srv_metrics_request(&s->met, r.cls, o.status, now_us() - x->t0_us);
    ret = send_resp(s, c, &o);
    return ret;
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode toe)
{
    conn_ctx *x = *con_cls;
    (void)cls;
    (void)c;
    (void)toe;
    if (x) {
        free(x->buf);
        free(x);
        *con_cls = NULL;
    }
}

/* "HOST:PORT", "[v6]:PORT" or ":PORT" into a bound, listening socket. */
static int listen_on(const char *spec, uint16_t *port, char *err, size_t cap)
{
    char host[256];
    const char *colon = strrchr(spec, ':');
    struct sockaddr_storage ss;
    socklen_t sl;
    char *end;
    unsigned long p;
    int fd, one = 1, v6 = 0;

    if (!colon || (size_t)(colon - spec) >= sizeof(host)) {
        snprintf(err, cap, "--listen wants ADDR:PORT, got '%s'", spec);
        return -1;
    }
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = '\0';
    p = strtoul(colon + 1, &end, 10);
    if (*end || p > 65535 || colon[1] == '\0') {
        snprintf(err, cap, "--listen: bad port in '%s'", spec);
        return -1;
    }
    memset(&ss, 0, sizeof(ss));
    if (host[0] == '[') {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        size_t n = strlen(host);
        if (n < 2 || host[n - 1] != ']') {
            snprintf(err, cap, "--listen: bad IPv6 address '%s'", host);
            return -1;
        }
        host[n - 1] = '\0';
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)p);
        if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1) {
            snprintf(err, cap, "--listen: bad IPv6 address '%s'", host + 1);
            return -1;
        }
        sl = sizeof(*a);
        v6 = 1;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)p);
        if (host[0] == '\0' || strcmp(host, "*") == 0)
            a->sin_addr.s_addr = htonl(INADDR_ANY);
        else if (inet_pton(AF_INET, host, &a->sin_addr) != 1) {
            snprintf(err, cap, "--listen: '%s' is not an IPv4 address", host);
            return -1;
        }
        sl = sizeof(*a);
    }
    fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, cap, "socket: %s", strerror(errno));
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, 512) != 0) {
        snprintf(err, cap, "cannot listen on %s: %s", spec, strerror(errno));
        close(fd);
        return -1;
    }
    sl = sizeof(ss);
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *port = ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                     : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

int srv_http_start(srv *s, char *err, size_t cap)
{
    struct MHD_Daemon *d;

    s->listen_fd = listen_on(s->cfg.listen, &s->port, err, cap);
    if (s->listen_fd < 0)
        return GPUFL_EIO;
    d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0,
        NULL, NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, s->listen_fd,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)s->cfg.threads,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->cfg.timeout_s,
        MHD_OPTION_CONNECTION_LIMIT, 1000u, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)(128 * 1024), MHD_OPTION_NOTIFY_COMPLETED, on_done, s,
        MHD_OPTION_END);
    if (!d) {
        snprintf(err, cap, "cannot start the HTTP server on %s", s->cfg.listen);
        close(s->listen_fd);
        s->listen_fd = -1;
        return GPUFL_EIO;
    }
    s->http = d;
    return GPUFL_OK;
}

void srv_http_stop(srv *s)
{
    if (s->http) {
        /* stops accepting, waits for the requests in flight to finish */
        MHD_stop_daemon(s->http);
        s->http = NULL;
        s->listen_fd = -1; /* MHD closed it */
    }
    if (s->listen_fd >= 0) {
        close(s->listen_fd);
        s->listen_fd = -1;
    }
}
