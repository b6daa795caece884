/*
 * idle_watch_http.c - the HTTP listener of `gpufl idle watch`
 * (libmicrohttpd, its own thread): /metrics, /verdicts and /probe, served
 * from buffers the sampling thread renders after each round (publish)
 * and hands over under a mutex, so a slow scraper never delays sampling.
 */
#include "idle_watch_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gpufl/gpufl.h>

#include "common/buf.h"
#include "common/log.h"

static enum MHD_Result on_http(void *cls, struct MHD_Connection *c,
                               const char *url, const char *method,
                               const char *version, const char *upload,
                               size_t *upload_len, void **con_cls)
{
    ictx *x = cls;
    struct MHD_Response *r;
    enum MHD_Result ret;
    const char *type = "application/json";
    char *body = NULL;
    size_t len = 0;
    unsigned status = 200;
    (void)version, (void)upload, (void)upload_len, (void)con_cls;
    if (strcmp(method, "GET") != 0) {
        status = 405;
    } else if (strcmp(url, "/metrics") == 0) {
        type = "text/plain; version=0.0.4; charset=utf-8";
        pthread_mutex_lock(&x->mu);
        if (x->metrics_len && (body = malloc(x->metrics_len)))
            memcpy(body, x->metrics, len = x->metrics_len);
        pthread_mutex_unlock(&x->mu);
    } else if (strcmp(url, "/verdicts") == 0) {
        pthread_mutex_lock(&x->mu);
        if (x->verdicts_len && (body = malloc(x->verdicts_len)))
            memcpy(body, x->verdicts, len = x->verdicts_len);
        pthread_mutex_unlock(&x->mu);
    } else if (strcmp(url, "/probe") == 0) {
        const char *only =
            MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "session");
        body = malloc(4096);
        pthread_mutex_lock(&x->mu);
        if (body)
            len = idle_watch_render_probe(x, body, 4096, only);
        pthread_mutex_unlock(&x->mu);
    } else {
        status = 404;
    }
    if (status == 200 && !body)
        status = 503; /* first round not done yet */
    if (status != 200) {
        free(body);
        body = NULL;
        len = 0;
    }
    r = MHD_create_response_from_buffer(len, body ? body : (void *)"",
                                        body ? MHD_RESPMEM_MUST_FREE
                                             : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

int idle_watch_http_open(ictx *x, const char *spec, char *why, size_t whylen)
{
    struct sockaddr_in a;
    socklen_t sl = sizeof a;
    char host[64];
    const char *colon = strrchr(spec, ':');
    int one = 1, port;
    if (!colon || (size_t)(colon - spec) >= sizeof host) {
        snprintf(why, whylen, "--listen wants ADDR:PORT, got \"%s\"", spec);
        return GPUFL_EINVAL;
    }
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = 0;
    port = (int)strtol(colon + 1, NULL, 10);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    if (!host[0] || !strcmp(host, "*"))
        a.sin_addr.s_addr = htonl(INADDR_ANY);
    else if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
        snprintf(why, whylen, "--listen: \"%s\" is not an IPv4 address", host);
        return GPUFL_EINVAL;
    }
    x->http_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (x->http_fd < 0)
        return GPUFL_EIO;
    setsockopt(x->http_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(x->http_fd, (struct sockaddr *)&a, sizeof a) ||
        listen(x->http_fd, 64)) {
        snprintf(why, whylen, "cannot listen on %s: %s", spec, strerror(errno));
        close(x->http_fd);
        return GPUFL_EIO;
    }
    getsockname(x->http_fd, (struct sockaddr *)&a, &sl);
    x->http = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
        on_http, x, MHD_OPTION_LISTEN_SOCKET, x->http_fd,
        MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
    if (!x->http) {
        snprintf(why, whylen, "cannot start the HTTP listener");
        close(x->http_fd);
        return GPUFL_EIO;
    }
    glog_info("http", "listening on %s:%d", host[0] ? host : "*",
              ntohs(a.sin_port));
    return 0;
}

void idle_watch_publish(ictx *x)
{
    gbuf mb = GBUF_INIT(IDLE_OUT_CAP);
    size_t ml = 0, vl;
    char *m = NULL, *v;
    if (idle_out_metrics(&mb, x->gpus, x->ngpus, x->ss, x->nss, x->host,
                         x->simulated) == 0 &&
        idle_acct_metrics(x->acct, &mb, x->gpus, x->ngpus, x->host) == 0)
        m = gbuf_detach(&mb, &ml);
    gbuf_release(&mb);
    vl = idle_watch_render_json(x, x->scratch, IDLE_OUT_CAP, 1);
    v = vl ? malloc(vl) : NULL;
    if (v)
        memcpy(v, x->scratch, vl);
    pthread_mutex_lock(&x->mu);
    free(x->metrics);
    free(x->verdicts);
    x->metrics = m;
    x->metrics_len = m ? ml : 0;
    x->verdicts = v;
    x->verdicts_len = v ? vl : 0;
    pthread_mutex_unlock(&x->mu);
}

void idle_watch_http_close(ictx *x)
{
    if (x->http)
        MHD_stop_daemon(x->http);
    x->http = NULL;
}
