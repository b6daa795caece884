/*
 * conn.c - who may hold a connection: the accept loop, the per-address and
 * total caps, and the deadlines of each phase of a request.
 *
 * The server accepts connections itself and hands them to libmicrohttpd
 * (MHD_add_connection) instead of letting it accept: libmicrohttpd's own
 * per-IP limit closes a connection without a word and its one timeout is
 * an idle timeout, reset by every byte, so a client that sends a header
 * byte every few seconds holds a slot forever.  Here:
 *
 * - one address (an IPv4 address, or an IPv6 /64: one host gets a whole
 *   /64) holds at most --max-conns-per-ip connections; one more is
 *   answered 429 and closed, one over --max-conns in all 503 (plain HTTP
 *   only: a TLS client would read the answer as a broken handshake, so it
 *   is closed without one);
 * - a request's line and headers must have arrived --header-timeout after
 *   the connection opened (TLS handshake included) or, on a kept-alive
 *   connection, after its request line began; an authenticated request's
 *   body and the sending of an answer get --timeout; a connection idle
 *   between requests gets --timeout too.  The handler's own work (the
 *   database) has no deadline.  A connection past its deadline is shut
 *   down (shutdown(2)); libmicrohttpd sees the end and cleans it up.
 *
 * The table is a fixed array of --max-conns records (plus slack for
 * connections libmicrohttpd starts that the loop did not see), scanned
 * linearly: at most a few thousand entries, touched a few times per
 * request, so a hash would buy nothing measurable.  One mutex guards it.
 * A record is removed in libmicrohttpd's CLOSED notification, which comes
 * before it closes the socket, so a shutdown() under the mutex can never
 * reach a descriptor number already reused by someone else.
 */
#include "srv_int.h"

#include <gpufl/gpufl.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "common/log.h"

/* Records beyond --max-conns, for connections found started without one. */
#define CONN_SLACK 64
/* Connections accepted per wake-up before deadlines are looked at. */
#define CONN_ACCEPT_BURST 64
/* How often deadlines are checked (ms): their resolution. */
#define CONN_TICK_MS 250
/* An accepted connection libmicrohttpd never started is forgotten after
 * this long (ms): it failed before its STARTED notification. */
#define CONN_UNBOUND_MS 10000
/* A refusal's warning on stderr at most this often (s). */
#define CONN_WARN_EVERY_S 60
/* Descriptors beyond --max-conns the process needs besides connections:
 * database files and sockets, Kafka, the UI folder, stdio. */
#define CONN_FD_SPARE 256

enum { PH_NEW = 0, PH_HEAD, PH_BODY, PH_BUSY, PH_SEND, PH_IDLE };

typedef struct conn_rec {
    int used, bound, fd;
    int phase;
    uint64_t since_ms, deadline_ms; /* deadline 0: none */
    unsigned char key[17];          /* family byte + address (or /64) */
} conn_rec;

typedef struct srv_conns srv_conns;

struct srv_conns {
    pthread_mutex_t lock;
    conn_rec *rec;
    size_t cap, n;
    int lfd, wake[2], tls;
    pthread_t thread;
    int started, stopping;
    glog_limit warned_ip, warned_full, warned_accept;
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The address a cap counts by: IPv4 (also IPv4-mapped IPv6) whole, IPv6
 * by its /64, which one host or one customer usually holds whole. */
static void addr_key(const struct sockaddr *sa, unsigned char key[17])
{
    memset(key, 0, 17);
    if (sa->sa_family == AF_INET) {
        key[0] = 4;
        memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        const unsigned char *a =
            ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
        static const unsigned char mapped[12] = { 0, 0, 0, 0, 0,    0,
                                                  0, 0, 0, 0, 0xff, 0xff };
        if (memcmp(a, mapped, 12) == 0) {
            key[0] = 4;
            memcpy(key + 1, a + 12, 4);
        } else {
            key[0] = 6;
            memcpy(key + 1, a, 8);
        }
    }
}

static void warn_rate(srv *s, glog_limit *l, const char *msg)
{
    uint64_t held = 0;
    glog_field f = GLOG_NUM("held_back", 0);

    if (s->cfg.quiet ||
        !glog_limit_pass(l, CONN_WARN_EVERY_S * 1000u, now_ms(), &held))
        return;
    f.n = (int64_t)held;
    glog_fields(GLOG_WARN, "conn", &f, 1, "%s", msg);
}

/* A new record; its head is due header_ms from now. */
static conn_rec *rec_add(srv_conns *cs, int fd, const unsigned char key[17],
                         uint64_t header_ms)
{
    for (size_t i = 0; i < cs->cap; i++) {
        conn_rec *r = &cs->rec[i];
        if (r->used)
            continue;
        memset(r, 0, sizeof(*r));
        r->used = 1;
        r->fd = fd;
        r->phase = PH_NEW;
        r->since_ms = now_ms();
        r->deadline_ms = r->since_ms + header_ms;
        memcpy(r->key, key, 17);
        cs->n++;
        return r;
    }
    return NULL;
}

static void rec_del(srv_conns *cs, conn_rec *r)
{
    if (r && r->used) {
        r->used = 0;
        cs->n--;
    }
}

/* A fixed answer for a connection turned away before libmicrohttpd sees
 * it: whatever the client already sent is read first, so that closing
 * does not reset the connection before it reads the answer. */
static void refuse(srv_conns *cs, int fd, int status)
{
    static const char body429[] =
        "{\"status\":429,\"error\":\"too many connections from this address; "
        "retry later\"}";
    static const char body503[] =
        "{\"status\":503,\"error\":\"the server is at its connection limit; "
        "retry later\"}";
    const char *body = status == 429 ? body429 : body503;
    char buf[512], drain[4096];
    int n;

    if (!cs->tls) {
        while (recv(fd, drain, sizeof(drain), MSG_DONTWAIT) > 0)
            ;
        n = snprintf(
            buf, sizeof(buf),
            "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
            "Content-Length: %zu\r\nRetry-After: 5\r\n"
            "Connection: close\r\n\r\n%s",
            status, status == 429 ? "Too Many Requests" : "Service Unavailable",
            strlen(body), body);
        if (n > 0)
            (void)!send(fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
        shutdown(fd, SHUT_WR);
    }
    close(fd);
}

static void accept_some(srv *s)
{
    srv_conns *cs = s->conns;

    for (int k = 0; k < CONN_ACCEPT_BURST; k++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        unsigned char key[17];
        size_t same = 0;
        int fd, why = 0;
        conn_rec *r = NULL;

        fd = accept4(cs->lfd, (struct sockaddr *)&ss, &sl,
                     SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                errno == ENOMEM) {
                char msg[128];
                snprintf(msg, sizeof(msg),
                         "cannot accept connections: %s (raise the open-file "
                         "limit or lower --max-conns)",
                         strerror(errno));
                warn_rate(s, &cs->warned_accept, msg);
            }
            return;
        }
        addr_key((const struct sockaddr *)&ss, key);
        pthread_mutex_lock(&cs->lock);
        for (size_t i = 0; i < cs->cap; i++) {
            conn_rec *o = &cs->rec[i];
            if (!o->used)
                continue;
            /* the number was free to be given out: whatever held it was
             * closed without a CLOSED notification */
            if (o->fd == fd) {
                rec_del(cs, o);
                continue;
            }
            same += memcmp(o->key, key, 17) == 0;
        }
        if (same >= s->cfg.max_conns_per_ip)
            why = 429;
        else if (cs->n >= s->cfg.max_conns ||
                 !(r = rec_add(cs, fd, key, s->cfg.header_timeout_s * 1000u)))
            why = 503;
        pthread_mutex_unlock(&cs->lock);
        if (why) {
            __atomic_fetch_add(why == 429 ? &s->met.conn_refused_ip
                                          : &s->met.conn_refused_full,
                               1, __ATOMIC_RELAXED);
            warn_rate(s, why == 429 ? &cs->warned_ip : &cs->warned_full,
                      why == 429 ? "an address reached --max-conns-per-ip; its "
                                   "new connections are answered 429"
                                 : "--max-conns reached; new connections are "
                                   "answered 503");
            refuse(cs, fd, why);
            continue;
        }
        if (MHD_add_connection(s->http, fd, (const struct sockaddr *)&ss, sl) !=
            MHD_YES) {
            /* libmicrohttpd closed it; only a record it never started is
             * ours to drop (a started one goes with its CLOSED) */
            pthread_mutex_lock(&cs->lock);
            if (r->used && r->fd == fd && !r->bound)
                rec_del(cs, r);
            pthread_mutex_unlock(&cs->lock);
        }
    }
}

/* Shuts down connections past their deadline; forgets records of
 * connections that never started. */
static void reap(srv *s)
{
    srv_conns *cs = s->conns;
    uint64_t now = now_ms();

    pthread_mutex_lock(&cs->lock);
    for (size_t i = 0; i < cs->cap; i++) {
        conn_rec *r = &cs->rec[i];
        if (!r->used)
            continue;
        if (!r->bound) {
            if (now - r->since_ms > CONN_UNBOUND_MS)
                rec_del(cs, r);
            continue;
        }
        if (r->deadline_ms && now >= r->deadline_ms) {
            r->deadline_ms = 0;
            shutdown(r->fd, SHUT_RDWR);
            __atomic_fetch_add(&s->met.conn_timeouts, 1, __ATOMIC_RELAXED);
        }
    }
    pthread_mutex_unlock(&cs->lock);
}

static void *accept_main(void *arg)
{
    srv *s = arg;
    srv_conns *cs = s->conns;
    struct pollfd p[2];

    p[0].fd = cs->lfd;
    p[0].events = POLLIN;
    p[1].fd = cs->wake[0];
    p[1].events = POLLIN;
    while (!__atomic_load_n(&cs->stopping, __ATOMIC_ACQUIRE)) {
        p[0].revents = p[1].revents = 0;
        if (poll(p, 2, CONN_TICK_MS) > 0 && (p[0].revents & POLLIN))
            accept_some(s);
        reap(s);
    }
    return NULL;
}

/* Every connection is a descriptor: the soft open-file limit (often 1024)
 * is raised toward the hard one so --max-conns can be reached; a limit
 * that stays too low is said once at start. */
static void fd_limit(srv *s)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)s->cfg.max_conns + CONN_FD_SPARE;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
        return;
    rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
    setrlimit(RLIMIT_NOFILE, &rl);
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want)
        glog_warn("conn",
                  "warning: the open-file limit (%llu) is below"
                  " --max-conns + %d; raise it (LimitNOFILE=, ulimit -n) or"
                  " lower --max-conns",
                  (unsigned long long)rl.rlim_cur, CONN_FD_SPARE);
}

int srv_conns_start(srv *s, int tls, char *err, size_t cap)
{
    srv_conns *cs = calloc(1, sizeof(*cs));

    if (!cs) {
        snprintf(err, cap, "out of memory");
        return GPUFL_ENOMEM;
    }
    fd_limit(s);
    cs->cap = (size_t)s->cfg.max_conns + CONN_SLACK;
    cs->rec = calloc(cs->cap, sizeof(*cs->rec));
    cs->lfd = s->listen_fd;
    cs->tls = tls;
    cs->wake[0] = cs->wake[1] = -1;
    pthread_mutex_init(&cs->lock, NULL);
    s->conns = cs;
    if (!cs->rec || pipe2(cs->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(err, cap, "cannot set up the accept loop: %s",
                 strerror(errno));
        return GPUFL_EIO;
    }
    if (fcntl(cs->lfd, F_SETFL, fcntl(cs->lfd, F_GETFL) | O_NONBLOCK) != 0 ||
        pthread_create(&cs->thread, NULL, accept_main, s) != 0) {
        snprintf(err, cap, "cannot start the accept loop: %s", strerror(errno));
        return GPUFL_EIO;
    }
    cs->started = 1;
    return GPUFL_OK;
}

void srv_conns_stop(srv *s)
{
    srv_conns *cs = s->conns;

    if (!cs || !cs->started)
        return;
    __atomic_store_n(&cs->stopping, 1, __ATOMIC_RELEASE);
    (void)!write(cs->wake[1], "x", 1);
    pthread_join(cs->thread, NULL);
    cs->started = 0;
}

void srv_conns_free(srv *s)
{
    srv_conns *cs = s->conns;

    if (!cs)
        return;
    srv_conns_stop(s);
    if (cs->wake[0] >= 0)
        close(cs->wake[0]);
    if (cs->wake[1] >= 0)
        close(cs->wake[1]);
    pthread_mutex_destroy(&cs->lock);
    free(cs->rec);
    free(cs);
    s->conns = NULL;
}

void *srv_conn_started(srv *s, int fd, const void *addr)
{
    srv_conns *cs = s->conns;
    conn_rec *r = NULL;

    if (!cs)
        return NULL;
    pthread_mutex_lock(&cs->lock);
    for (size_t i = 0; i < cs->cap && !r; i++)
        if (cs->rec[i].used && cs->rec[i].fd == fd)
            r = &cs->rec[i];
    if (!r && addr) {
        /* forgotten as never started (a very slow start): counted again */
        unsigned char key[17];
        addr_key(addr, key);
        r = rec_add(cs, fd, key, s->cfg.header_timeout_s * 1000u);
    }
    if (r)
        r->bound = 1;
    pthread_mutex_unlock(&cs->lock);
    return r;
}

void srv_conn_closed(srv *s, void *sc)
{
    srv_conns *cs = s->conns;

    if (!cs || !sc)
        return;
    pthread_mutex_lock(&cs->lock);
    rec_del(cs, sc);
    pthread_mutex_unlock(&cs->lock);
}

void srv_conn_phase(srv *s, void *sc, int phase)
{
    srv_conns *cs = s->conns;
    conn_rec *r = sc;
    uint64_t now;

    if (!cs || !r)
        return;
    now = now_ms();
    pthread_mutex_lock(&cs->lock);
    if (r->used) {
        switch (phase) {
        case SRV_CONN_HEAD:
            /* a new connection's head is due from its accept */
            if (r->phase != PH_NEW)
                r->deadline_ms = now + s->cfg.header_timeout_s * 1000u;
            r->phase = PH_HEAD;
            break;
        case SRV_CONN_BUSY:
            r->deadline_ms = 0;
            r->phase = PH_BUSY;
            break;
        default:
            r->deadline_ms = now + s->cfg.timeout_s * 1000u;
            r->phase = phase == SRV_CONN_BODY   ? PH_BODY
                       : phase == SRV_CONN_SEND ? PH_SEND
                                                : PH_IDLE;
        }
    }
    pthread_mutex_unlock(&cs->lock);
}

size_t srv_conns_open(srv *s)
{
    size_t n;

    if (!s->conns)
        return 0;
    pthread_mutex_lock(&s->conns->lock);
    n = s->conns->n;
    pthread_mutex_unlock(&s->conns->lock);
    return n;
}
