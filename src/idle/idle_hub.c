/*
 * idle_hub.c - GPU work reported to JupyterHub as activity, the way the
 * single-user servers report theirs: POST /hub/api/users/{name}/activity
 * with {"servers":{"<server>":{"last_activity":T}},"last_activity":T}.
 * The Hub's own culling (jupyterhub-idle-culler, its inactivity limit)
 * then counts a running cell on the GPU as activity, and an idle server
 * holding a GPU is culled although its tab stays open and polling.
 *
 * Who: a process on a GPU whose verdict says work (BUSY, BUSY_LOW_OCC,
 * BURSTY) belongs to the Hub user JUPYTERHUB_USER of its environment,
 * which every spawner sets for the single-user server and its kernels
 * inherit (JUPYTERHUB_SERVER_NAME names a named server).  HELD, EMPTY,
 * STUCK, PHANTOM and the rest report nothing, so they leave the Hub's
 * clock alone.  T is the GPU's last work time, never "now".
 *
 * The watch loop only notes users in a table (a mutex, no I/O); one
 * thread of this file posts, at most one report per user per
 * --jupyterhub-every, each request limited in time, with a backoff per
 * user after failures, so a slow or dead Hub never delays sampling.
 */
#include "idle.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gpufl/gpufl.h>

#include "common/buf.h"
#include "common/clock.h"
#include "common/jw.h"
#include "common/log.h"
#include "httpc/httpc.h"

#define HUB_USERS 256       /* users tracked; more: the oldest is dropped */
#define HUB_PIDS 1024       /* pid -> user cache entries */
#define HUB_TIMEOUT_MS 5000 /* one request */
#define HUB_BACKOFF_MAX_S 300
#define HUB_CAP 65536 /* an answer's body, bytes (errors are short) */

typedef struct hub_user {
    char name[64], server[64];
    uint64_t work;    /* newest GPU work noted, ns since the epoch */
    uint64_t posted;  /* work time last accepted by the Hub */
    uint64_t next;    /* monotonic: not before this (rate, backoff) */
    uint32_t backoff; /* s; 0 = no failure */
    int failing;
} hub_user;

typedef struct hub_pid {
    uint32_t pid;
    int hub; /* has JUPYTERHUB_USER */
    int seen;
    char name[64], server[64];
} hub_pid;

struct idle_hub {
    char api[512]; /* ".../hub/api" */
    char *token;
    char *ca_file;
    uint64_t every_ns;
    pthread_t th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    hub_user users[HUB_USERS];
    int nusers;
    hub_pid pids[HUB_PIDS]; /* the watch thread's only */
    int npids;
};

static void iso(uint64_t ns, char *out, size_t cap)
{
    time_t t = (time_t)(ns / IDLE_NS);
    struct tm tm;
    char s[32];
    gmtime_r(&t, &tm);
    strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, cap, "%s.%06uZ", s, (unsigned)(ns % IDLE_NS / 1000));
}

/* Percent-encoding of a path segment (Hub names may hold '@', '/'). */
static void seg(const char *in, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t k = 0;
    for (; *in && k + 4 < cap; in++) {
        unsigned char c = (unsigned char)*in;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
            (c >= '0' && c <= '9') || strchr("-._~", c)) {
            out[k++] = (char)c;
        } else {
            out[k++] = '%';
            out[k++] = hex[c >> 4];
            out[k++] = hex[c & 15];
        }
    }
    out[k] = 0;
}

static int post(idle_hub *h, httpc *c, const hub_user *u, char *why,
                size_t whylen)
{
    char url[800], name[200], ts[40], body[512];
    struct curl_slist *hd = NULL;
    gbuf resp = GBUF_INIT(HUB_CAP);
    httpc_req r;
    long code = 0;
    jw w;
    int err;
    seg(u->name, name, sizeof name);
    snprintf(url, sizeof url, "%s/users/%s/activity", h->api, name);
    iso(u->work, ts, sizeof ts);
    jw_init(&w, body, sizeof body);
    jw_obj_begin(&w);
    jw_key(&w, "servers");
    jw_obj_begin(&w);
    jw_key(&w, u->server);
    jw_obj_begin(&w);
    jw_kv_str(&w, "last_activity", ts);
    jw_obj_end(&w);
    jw_obj_end(&w);
    jw_kv_str(&w, "last_activity", ts);
    jw_obj_end(&w);
    if (w.err) {
        snprintf(why, whylen, "report too large");
        return GPUFL_ETOOBIG;
    }
    if (httpc_auth(&hd, "token", h->token) ||
        httpc_header(&hd, "Content-Type", "application/json")) {
        httpc_headers_free(hd);
        snprintf(why, whylen, "out of memory");
        return GPUFL_ENOMEM;
    }
    r = (httpc_req){ url, "POST", hd, body, w.len };
    err = httpc_do(c, &r, &resp, &code, why, whylen);
    if (!err && (code < 200 || code > 299)) {
        /* the Hub says why in {"message": ...}; it holds no secret */
        int bl = resp.len > 200 ? 200 : (int)resp.len;
        snprintf(why, whylen, "HTTP %ld: %.*s", code, bl, resp.p ? resp.p : "");
        err = GPUFL_EIO;
    }
    httpc_headers_free(hd);
    gbuf_release(&resp);
    return err;
}

static void *hub_main(void *arg)
{
    idle_hub *h = arg;
    httpc_cfg cfg = { HUB_TIMEOUT_MS, h->ca_file, "gpufl-idle", 0 };
    httpc *c = NULL;
    char why[300];
    if (httpc_new(&c, &cfg, why, sizeof why)) {
        glog_error("hub", "JupyterHub reports off: %s", why);
        return NULL;
    }
    pthread_mutex_lock(&h->mu);
    while (!h->stop) {
        uint64_t now = clock_mono_ns();
        int did = 0;
        for (int i = 0; i < h->nusers && !h->stop; i++) {
            hub_user u = h->users[i];
            int err;
            if (u.work <= u.posted || now < u.next)
                continue;
            pthread_mutex_unlock(&h->mu);
            err = post(h, c, &u, why, sizeof why);
            pthread_mutex_lock(&h->mu);
            did = 1;
            now = clock_mono_ns();
            /* the table may have moved while unlocked: find u again */
            for (int k = 0; k < h->nusers; k++) {
                hub_user *p = &h->users[k];
                if (strcmp(p->name, u.name) || strcmp(p->server, u.server))
                    continue;
                if (!err) {
                    if (p->failing)
                        glog_info("hub", "activity of %s reported again",
                                  u.name);
                    p->posted = u.work;
                    p->backoff = 0;
                    p->failing = 0;
                    p->next = now + h->every_ns;
                } else {
                    p->backoff = p->backoff ? p->backoff * 2 : 1;
                    if (p->backoff > HUB_BACKOFF_MAX_S)
                        p->backoff = HUB_BACKOFF_MAX_S;
                    p->next = now + (uint64_t)p->backoff * IDLE_NS;
                    if (!p->failing)
                        glog_warn("hub",
                                  "activity of %s not reported: %s "
                                  "(retrying, backing off up to %d s)",
                                  u.name, why, HUB_BACKOFF_MAX_S);
                    p->failing = 1;
                }
                break;
            }
        }
        if (!did) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 200000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&h->cv, &h->mu, &ts);
        }
    }
    pthread_mutex_unlock(&h->mu);
    httpc_free(c);
    return NULL;
}

int idle_hub_new(idle_hub **out, const char *url, const char *token,
                 const char *ca_file, uint32_t every_s, char *why,
                 size_t whylen)
{
    idle_hub *h;
    size_t n = strlen(url);
    *out = NULL;
    while (n && url[n - 1] == '/')
        n--;
    if (n >= sizeof h->api - 16) {
        snprintf(why, whylen, "--jupyterhub-url is too long");
        return GPUFL_EINVAL;
    }
    h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(why, whylen, "out of memory");
        return GPUFL_ENOMEM;
    }
    /* the Hub's base URL, or its API URL (JUPYTERHUB_API_URL's form) */
    if (n >= 8 && !memcmp(url + n - 8, "/hub/api", 8))
        snprintf(h->api, sizeof h->api, "%.*s", (int)n, url);
    else
        snprintf(h->api, sizeof h->api, "%.*s/hub/api", (int)n, url);
    h->token = strdup(token);
    h->ca_file = ca_file ? strdup(ca_file) : NULL;
    h->every_ns = (uint64_t)every_s * IDLE_NS;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    if (!h->token || (ca_file && !h->ca_file) ||
        pthread_create(&h->th, NULL, hub_main, h) != 0) {
        snprintf(why, whylen, "cannot start the JupyterHub reporter");
        idle_hub_free(h);
        return GPUFL_ENOMEM;
    }
    h->started = 1;
    *out = h;
    return 0;
}

void idle_hub_free(idle_hub *h)
{
    if (!h)
        return;
    if (h->started) {
        pthread_mutex_lock(&h->mu);
        h->stop = 1;
        pthread_cond_signal(&h->cv);
        pthread_mutex_unlock(&h->mu);
        pthread_join(h->th, NULL);
    }
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    if (h->token)
        explicit_bzero(h->token, strlen(h->token));
    free(h->token);
    free(h->ca_file);
    free(h);
}

void idle_hub_note(idle_hub *h, const char *user, const char *server,
                   uint64_t ts)
{
    hub_user *u = NULL;
    pthread_mutex_lock(&h->mu);
    for (int i = 0; i < h->nusers && !u; i++)
        if (!strcmp(h->users[i].name, user) &&
            !strcmp(h->users[i].server, server))
            u = &h->users[i];
    if (!u) {
        int k = h->nusers < HUB_USERS ? h->nusers++ : 0;
        if (k == 0 && h->nusers == HUB_USERS) /* full: the stalest goes */
            for (int i = 1; i < HUB_USERS; i++)
                if (h->users[i].work < h->users[k].work)
                    k = i;
        u = &h->users[k];
        memset(u, 0, sizeof *u);
        snprintf(u->name, sizeof u->name, "%s", user);
        snprintf(u->server, sizeof u->server, "%s", server);
    }
    if (ts > u->work)
        u->work = ts;
    pthread_mutex_unlock(&h->mu);
}

/* The Hub user (and server) of pid, cached while the pid stays on a GPU
 * (the environment is read once per process). */
static const hub_pid *pid_user(idle_hub *h, const idle_env *e, uint32_t pid)
{
    static const char *const user_v[] = { "JUPYTERHUB_USER", NULL };
    static const char *const server_v[] = { "JUPYTERHUB_SERVER_NAME", NULL };
    hub_pid *p;
    for (int i = 0; i < h->npids; i++)
        if (h->pids[i].pid == pid) {
            h->pids[i].seen = 1;
            return &h->pids[i];
        }
    if (h->npids >= HUB_PIDS)
        return NULL;
    p = &h->pids[h->npids++];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->seen = 1;
    p->hub = idle_proc_env(e, pid, user_v, p->name, sizeof p->name) >= 0 &&
             p->name[0];
    if (p->hub)
        idle_proc_env(e, pid, server_v, p->server, sizeof p->server);
    return p;
}

void idle_hub_round(idle_hub *h, const idle_env *e, const idle_gpu *gpus,
                    int ngpus)
{
    if (!h)
        return;
    for (int i = 0; i < h->npids; i++)
        h->pids[i].seen = 0;
    for (int g = 0; g < ngpus; g++) {
        const idle_gpu *gp = &gpus[g];
        int work = gp->state == IG_BUSY || gp->state == IG_BUSY_LOW_OCC ||
                   gp->state == IG_BURSTY;
        if (!(gp->last.present & GS_PROCS))
            continue;
        for (uint32_t k = 0; k < gp->last.nprocs; k++) {
            const hub_pid *p = pid_user(h, e, gp->last.procs[k].pid);
            if (work && p && p->hub)
                idle_hub_note(h, p->name, p->server, gp->last_work);
        }
    }
    for (int i = 0; i < h->npids;) /* gone from every GPU: forget */
        if (!h->pids[i].seen)
            h->pids[i] = h->pids[--h->npids];
        else
            i++;
}
