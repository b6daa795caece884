/*
 * http.c - the libmicrohttpd glue: the daemon, what is checked before a
 * request's body is read, request bodies within their caps, responses,
 * CORS, and request timing.
 *
 * The listening socket is bound here (not by MHD) so that port 0 works
 * and the chosen port can be printed for scripts and tests; conn.c
 * accepts on it and hands connections to MHD.  Everything that can refuse
 * a request is decided on MHD's first callback, when the head has arrived
 * and no body byte has been read: framing (one Content-Length, no
 * Content-Length beside Transfer-Encoding, no Transfer-Encoding but
 * chunked, header names without whitespace), the counts of headers and
 * query arguments, the body cap, then the route, method and token (api.c
 * in probe mode) when there is a body, then the server-wide budget of
 * buffered body bytes.  An answer queued then makes MHD skip the body and
 * close the connection.
 * Handlers run on the MHD worker thread that owns the connection and may
 * block on the database: the pool size bounds how many requests wait at
 * once.
 */
#include "ingest_par.h"
#include "srv_int.h"

#include "common/buf.h"
#include "common/log.h"

#include <gpufl/gpufl.h>

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Most header fields in a request (431 above): browsers send ~20. */
#define HTTP_HEADERS_MAX 100
/* Most query arguments (400 above): the API reads at most ~15.  Well
 * below what makes libmicrohttpd 0.9.75 run out of its connection pool
 * parsing them, which it answers with silence until the idle timeout. */
#define HTTP_ARGS_MAX 64
/* Seconds a client is asked to wait when the body budget is spent. */
#define HTTP_RETRY_AFTER "2"

typedef struct conn_ctx {
    gbuf body;       /* capped at --max-body */
    size_t reserved; /* bytes of s->buffered held for body */
    int started;     /* the first callback has run */
    int over;        /* body exceeded max_body: drained, then 413 */
    int budget_over; /* --max-buffered spent: drained, then 503 */
    int args_over;   /* more than HTTP_ARGS_MAX query arguments */
    int role;        /* from the first callback's auth */
    char hosts[SRV_KEY_HOSTS_MAX]; /* and the key's hosts */
    uint64_t t0_us;
} conn_ctx;

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void *sock_ctx(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

/* Takes n bytes of the server-wide body budget; -1 when it is spent. */
static int budget_take(srv *s, size_t n)
{
    uint64_t cur = __atomic_load_n(&s->buffered, __ATOMIC_RELAXED);
    do {
        if (cur + n > s->cfg.max_buffered)
            return -1;
    } while (!__atomic_compare_exchange_n(&s->buffered, &cur, cur + n, 1,
                                          __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return 0;
}

static void budget_give(srv *s, conn_ctx *x)
{
    if (x->reserved)
        __atomic_fetch_sub(&s->buffered, x->reserved, __ATOMIC_RELAXED);
    x->reserved = 0;
}

const char *srv_req_arg(const srv_req *r, const char *key)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

typedef struct args_chk {
    const char *const *allowed;
    char *bad;
    size_t cap;
    int found;
} args_chk;

static enum MHD_Result args_iter(void *cls, enum MHD_ValueKind kind,
                                 const char *key, const char *value)
{
    args_chk *a = cls;
    (void)kind;
    (void)value;
    for (const char *const *k = a->allowed; *k; k++)
        if (!strcmp(*k, key))
            return MHD_YES;
    snprintf(a->bad, a->cap, "%.100s", key);
    a->found = 1;
    return MHD_NO;
}

int srv_req_args_only(const srv_req *r, const char *const *allowed, char *bad,
                      size_t cap)
{
    args_chk a = { allowed, bad, cap, 0 };

    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, args_iter, &a);
    return a.found ? -1 : 0;
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

void srv_resp_store_error(srv_resp *o, int rc)
{
    if (rc == GPUFL_EAGAIN)
        srv_resp_error(o, 503, "cold storage (S3) unavailable; retry");
    else
        srv_resp_error(o, rc == GPUFL_EUNAVAIL ? 503 : 500,
                       rc == GPUFL_EUNAVAIL ? "database unavailable"
                                            : gpufl_strerror(rc));
}

int srv_resp_host_refused(srv_resp *o, const char *hosts, const char *what,
                          const char *host, size_t n)
{
    char why[200];

    if (srv_key_host_ok(hosts, host, n))
        return 0;
    snprintf(why, sizeof(why),
             "the %s is host '%.*s''s; this key writes for %.60s", what,
             (int)(n > 48 ? 48 : n), host, hosts);
    srv_resp_error(o, 403, why);
    return 1;
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
    if (o->retry_after)
        MHD_add_response_header(r, "Retry-After", HTTP_RETRY_AFTER);
    if (o->close)
        MHD_add_response_header(r, "Connection", "close");
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
    srv_conn_phase(s, sock_ctx(c), SRV_CONN_SEND);
    return ret;
}

/* What the header iterator found. */
typedef struct head_chk {
    unsigned n, n_cl, n_te;
    int bad_name, bad_te;
} head_chk;

/* RFC 9110 token characters: a header name with anything else (a space
 * before the colon, a tab) is a framing trick, not a name. */
static int is_token(const char *k)
{
    static const char extra[] = "!#$%&'*+-.^_`|~";
    if (!*k)
        return 0;
    for (; *k; k++)
        if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') ||
              (*k >= '0' && *k <= '9') || strchr(extra, *k)))
            return 0;
    return 1;
}

static enum MHD_Result head_iter(void *cls, enum MHD_ValueKind kind,
                                 const char *key, const char *value)
{
    head_chk *h = cls;

    (void)kind;
    h->n++;
    if (!is_token(key))
        h->bad_name = 1;
    if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH))
        h->n_cl++;
    if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
        h->n_te++;
        /* MHD reads any other coding until the connection closes */
        if (!value || strcasecmp(value, "chunked") != 0)
            h->bad_te = 1;
    }
    return MHD_YES;
}

/* 0, or an answer (400/431) for a head that must not be acted on. */
static int head_refuse(struct MHD_Connection *c, const conn_ctx *x, srv_resp *o)
{
    head_chk h;

    memset(&h, 0, sizeof(h));
    MHD_get_connection_values(c, MHD_HEADER_KIND, head_iter, &h);
    if (h.n > HTTP_HEADERS_MAX)
        srv_resp_error(o, 431, "more than 100 header fields");
    else if (h.bad_name)
        srv_resp_error(o, 400,
                       "malformed header name (whitespace before the colon?)");
    else if (h.n_cl > 1)
        srv_resp_error(o, 400, "more than one Content-Length");
    else if (h.n_cl && h.n_te)
        srv_resp_error(o, 400, "Content-Length with Transfer-Encoding");
    else if (h.n_te > 1 || h.bad_te)
        srv_resp_error(o, 400, "Transfer-Encoding other than chunked");
    else if (x->args_over)
        srv_resp_error(o, 400, "more than 64 query arguments");
    else
        return 0;
    o->close = 1;
    return 1;
}

static void body_cap_error(srv *s, srv_resp *o)
{
    char msg[128];
    snprintf(msg, sizeof(msg), "body over the %llu-byte cap",
             (unsigned long long)s->cfg.max_body);
    srv_resp_error(o, 413, msg);
}

static void budget_error(srv *s, srv_resp *o)
{
    __atomic_fetch_add(&s->met.body_refused_budget, 1, __ATOMIC_RELAXED);
    srv_resp_error(o, 503,
                   "the server holds too many request bodies (--max-buffered);"
                   " retry");
    o->retry_after = 1;
}

/*
 * The first callback: the head is in, no body byte has been read.  Returns
 * the answer sent now (MHD then skips the body and closes), or MHD_YES to
 * go on to the body with its bytes reserved.
 */
static enum MHD_Result first_call(srv *s, struct MHD_Connection *c, conn_ctx *x,
                                  const char *url, const char *method)
{
    const char *cl = MHD_lookup_connection_value(
        c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    unsigned long long n = 0;
    srv_resp o;
    srv_req r;

    memset(&o, 0, sizeof(o));
    x->started = 1;
    if (cl) {
        char *end;
        n = strtoull(cl, &end, 10);
    }
    if (head_refuse(c, x, &o)) {
        /* nothing: the answer says why */
    } else if (!n &&
               !MHD_lookup_connection_value(
                   c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
        /* no body to protect: answered by the final callback, which
         * follows at once (MHD 0.9.75 closes the connection after an
         * answer queued here, so keep-alive would be lost) */
    } else if (n > s->cfg.max_body) {
        body_cap_error(s, &o);
    } else {
        memset(&r, 0, sizeof(r));
        r.method = method;
        r.path = url;
        r.conn = c;
        r.cls = MET_OTHER;
        r.probe = 1;
        if (strcmp(method, "OPTIONS") == 0 && s->cfg.cors_origin[0])
            o.status = 204;
        else
            srv_api_handle(s, &r, &o);
        x->role = r.role;
        memcpy(x->hosts, r.hosts, sizeof(x->hosts));
        if (!o.status && n && budget_take(s, (size_t)n) != 0)
            budget_error(s, &o);
        else if (!o.status)
            x->reserved = (size_t)n;
    }
    if (o.status) {
        srv_metrics_request(&s->met, MET_OTHER, o.status, now_us() - x->t0_us);
        return send_resp(s, c, &o);
    }
    srv_conn_phase(s, sock_ctx(c), SRV_CONN_BODY);
    return MHD_YES;
}

/* A request's context, its clock started. */
static conn_ctx *ctx_new(srv *s)
{
    conn_ctx *x = calloc(1, sizeof(*x));

    if (!x)
        return NULL;
    gbuf_init(&x->body, s->cfg.max_body);
    x->t0_us = now_us();
    return x;
}

/* Appends a piece of the body to x->body within max_body and the budget:
 * the budget is taken for the body's capacity before it grows. */
static int body_add(srv *s, conn_ctx *x, const char *p, size_t n)
{
    if (!x->over && !x->budget_over && n > x->body.max - x->body.len)
        x->over = 1;
    if (x->over || x->budget_over)
        return 0; /* drained: the answer goes out when the body ends */
    if (n > gbuf_avail(&x->body)) {
        /* a declared length is taken at once, a chunked body as it grows */
        size_t want =
            x->reserved > x->body.len + n ? x->reserved - x->body.len : n;
        size_t nc = gbuf_grow_size(&x->body, want);
        if (nc > x->reserved) {
            if (budget_take(s, nc - x->reserved) != 0) {
                x->budget_over = 1;
                gbuf_release(&x->body);
                budget_give(s, x);
                return 0;
            }
            x->reserved = nc;
        }
        if (gbuf_grow(&x->body, want))
            return -1;
    }
    return gbuf_add(&x->body, p, n) ? -1 : 0;
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

    (void)version;
    if (!x) {
        /* the URI callback could not allocate it */
        x = ctx_new(s);
        if (!x)
            return MHD_NO;
        *con_cls = x;
    }
    if (!x->started)
        return first_call(s, c, x, url, method);
    if (*upload_size) {
        if (body_add(s, x, upload, *upload_size) != 0)
            return MHD_NO;
        *upload_size = 0;
        return MHD_YES;
    }
    srv_conn_phase(s, sock_ctx(c), SRV_CONN_BUSY);
    memset(&o, 0, sizeof(o));
    __atomic_fetch_add(&s->met.bytes_in, x->body.len, __ATOMIC_RELAXED);
    memset(&r, 0, sizeof(r));
    r.method = method;
    r.path = url;
    r.conn = c;
    r.body = x->body.p;
    r.body_len = x->body.len;
    r.cls = MET_OTHER;
    r.role = x->role;
    memcpy(r.hosts, x->hosts, sizeof(r.hosts));
    if (x->over)
        body_cap_error(s, &o);
    else if (x->budget_over)
        budget_error(s, &o);
    else if (strcmp(method, "OPTIONS") == 0 && s->cfg.cors_origin[0])
        o.status = 204;
    else
        srv_api_handle(s, &r, &o);
    srv_metrics_request(&s->met, r.cls, o.status, now_us() - x->t0_us);
    return send_resp(s, c, &o);
}

/*
 * MHD's URI callback: the request line is in, its headers are not.  Its
 * result is the request's context.  A query of more than HTTP_ARGS_MAX
 * arguments is cut here, before MHD parses it: the first callback
 * answers 400 instead of MHD's silence.
 */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    srv *s = cls;
    conn_ctx *x = ctx_new(s);
    const char *q = strchr(uri, '?');
    size_t args = 0;

    srv_conn_phase(s, sock_ctx(c), SRV_CONN_HEAD);
    if (!x)
        return NULL;
    for (const char *p = q; p && *p; p++)
        args += *p == '&' || p == q;
    if (args > HTTP_ARGS_MAX) {
        x->args_over = 1;
        /* uri points into MHD's own writable read buffer; emptying the
         * query leaves the path (already split off) intact */
        ((char *)q)[1] = '\0';
    }
    return x;
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode toe)
{
    srv *s = cls;
    conn_ctx *x = *con_cls;

    (void)toe;
    srv_conn_phase(s, sock_ctx(c), SRV_CONN_IDLE);
    if (x) {
        budget_give(s, x);
        gbuf_release(&x->body);
        free(x);
        *con_cls = NULL;
    }
}

static void on_conn(void *cls, struct MHD_Connection *c, void **socket_context,
                    enum MHD_ConnectionNotificationCode code)
{
    srv *s = cls;

    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fd =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *a =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        if (fd)
            *socket_context =
                srv_conn_started(s, fd->connect_fd, a ? a->client_addr : NULL);
    } else {
        srv_conn_closed(s, *socket_context);
        *socket_context = NULL;
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

/* 1 when the bound address is 127.0.0.0/8 or ::1. */
static int is_loopback(int fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);

    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
        return 0;
    if (ss.ss_family == AF_INET)
        return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) ==
               127;
    return ss.ss_family == AF_INET6 &&
           IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->sin6_addr);
}

int srv_http_start(srv *s, char *err, size_t cap)
{
    struct MHD_OptionItem tls[3];
    struct MHD_Daemon *d;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                     MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
    int rc;

    if (s->cfg.max_buffered < s->cfg.max_body) {
        snprintf(err, cap,
                 "--max-buffered (%llu) is below --max-body (%llu): a "
                 "largest body could never be taken",
                 (unsigned long long)s->cfg.max_buffered,
                 (unsigned long long)s->cfg.max_body);
        return GPUFL_EINVAL;
    }
    if ((rc = srv_tls_load(s, err, cap)) != 0)
        return rc;
    memset(tls, 0, sizeof(tls));
    tls[0].option = MHD_OPTION_END;
    if (s->tls_cert) {
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
            snprintf(err, cap, "this libmicrohttpd has no TLS support");
            srv_tls_free(s);
            return GPUFL_EINVAL;
        }
        flags |= MHD_USE_TLS;
        tls[0].option = MHD_OPTION_HTTPS_MEM_KEY;
        tls[0].ptr_value = s->tls_key;
        tls[1].option = MHD_OPTION_HTTPS_MEM_CERT;
        tls[1].ptr_value = s->tls_cert;
        tls[2].option = MHD_OPTION_END;
    }
    if ((rc = srv_static_open(s, err, cap)) != 0) {
        srv_tls_free(s);
        return rc;
    }
    s->listen_fd = listen_on(s->cfg.listen, &s->port, err, cap);
    if (s->listen_fd < 0) {
        srv_static_close(s);
        srv_tls_free(s);
        return GPUFL_EIO;
    }
    s->loopback = is_loopback(s->listen_fd);
    /* without it bodies are parsed by their connection's thread alone:
     * slower, not wrong */
    if (ingest_par_new(&s->par) != 0)
        glog(GLOG_WARN, "ingest",
             "no second parse thread; one parses each body");
    else if (s->store)
        srv_store_set_par(s->store, s->par); /* kernel blocks encoded too */
    /* conn.c accepts and enforces --max-conns; MHD's own limit only
     * backs it up (records beyond it are what conn.c keeps as slack) */
    d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, s, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)s->cfg.threads, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)s->cfg.timeout_s, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)s->cfg.max_conns + 64u, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)(128 * 1024), MHD_OPTION_NOTIFY_COMPLETED, on_done, s,
        MHD_OPTION_NOTIFY_CONNECTION, on_conn, s, MHD_OPTION_URI_LOG_CALLBACK,
        on_uri, s, MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
    if (!d) {
        snprintf(err, cap, "cannot start the HTTP%s server on %s",
                 s->tls_cert ? "S" : "", s->cfg.listen);
        close(s->listen_fd);
        s->listen_fd = -1;
        if (s->store)
            srv_store_set_par(s->store, NULL);
        ingest_par_free(s->par);
        s->par = NULL;
        srv_static_close(s);
        srv_tls_free(s);
        return GPUFL_EIO;
    }
    s->http = d;
    if ((rc = srv_conns_start(s, s->tls_cert != NULL, err, cap)) != 0) {
        srv_http_stop(s);
        return rc;
    }
    return GPUFL_OK;
}

void srv_http_stop(srv *s)
{
    /* no new connections, then MHD finishes the requests in flight and
     * closes the rest (its CLOSED notifications still use conn.c) */
    srv_conns_stop(s);
    if (s->http) {
        MHD_stop_daemon(s->http);
        s->http = NULL;
    }
    /* after MHD: no request parses any more; the store lets go of it
     * first (other writers - the Kafka bridge, maintenance - ingest too) */
    if (s->store && s->par)
        srv_store_set_par(s->store, NULL);
    ingest_par_free(s->par);
    s->par = NULL;
    srv_conns_free(s);
    if (s->listen_fd >= 0) {
        close(s->listen_fd);
        s->listen_fd = -1;
    }
    srv_static_close(s);
    srv_tls_free(s);
}
