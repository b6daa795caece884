/*
 * pyroscope.c - push to a Pyroscope-compatible server (Grafana Pyroscope,
 * Grafana Cloud Profiles, Alloy's pyroscope.receive_http): the legacy
 * `POST /ingest` with folded text, one request per process and sample
 * type.  The name's suffix picks the profile type (*_space in bytes,
 * *_objects as a count; docs/memprof.md): alloc_space and
 * alloc_objects as deltas over the interval (Pyroscope wants deltas),
 * inuse_space and inuse_objects as the snapshot.  Labels: host, pid, comm.
 *
 * Authentication as Pyroscope and Grafana Cloud take it: HTTP basic (user
 * + password), or a bearer token, and the tenant in X-Scope-OrgID.  The
 * CLI reads the secrets from files or the environment (cli_memprof.c);
 * they go into request headers only, never into a message: errors name
 * the URL without any userinfo and the flag to fix, and quote the
 * server's answer only when it does not contain a secret.
 */
#include <stdlib.h>
#include <string.h>

#include <gpufl/gpufl.h>

#include "httpc/httpc.h"
#include "session.h"
#include "common/log.h"

/* the start of the server's answer, for error messages */
#define PYRO_ANSWER_MAX 200
/* The whole request. */
#define PYRO_TIMEOUT_MS 30000

enum { PUSH_OK = 0, PUSH_FAILED, PUSH_AUTH };

/* url without "user:password@" (the CLI refuses those, but the library
 * may be given one), into out */
static void url_redacted(const char *url, char *out, size_t cap)
{
    const char *host = strstr(url, "://");
    const char *at, *end;
    host = host ? host + 3 : url;
    end = host + strcspn(host, "/?#");
    at = memchr(host, '@', (size_t)(end - host));
    if (!at) {
        snprintf(out, cap, "%s", url);
        return;
    }
    while (at && at + 1 < end && memchr(at + 1, '@', (size_t)(end - at - 1)))
        at = memchr(at + 1, '@', (size_t)(end - at - 1));
    snprintf(out, cap, "%.*s%s", (int)(host - url), url, at + 1);
}

/* POST body to url with the configured auth; 0 when an answer came (its
 * HTTP status in *st, its start in ans), else an error with why[whylen]. */
static int pyro_post(const memprof_opts *o, const char *url, const char *body,
                     size_t n, long *st, gbuf *ans, char *why, size_t whylen)
{
    httpc_cfg cfg = { PYRO_TIMEOUT_MS, o->ca_file, NULL, 0 };
    httpc_req r = { url, "POST", NULL, body, n };
    struct curl_slist *h = NULL;
    httpc *c;
    int rc;

    *st = 0;
    if ((rc = httpc_new(&c, &cfg, why, whylen)) != 0)
        return rc;
    if (httpc_header(&h, "Content-Type", "text/plain") ||
        (o->pyroscope_token && httpc_auth(&h, "Bearer", o->pyroscope_token)) ||
        (o->pyroscope_tenant &&
         httpc_header(&h, "X-Scope-OrgID", o->pyroscope_tenant))) {
        snprintf(why, whylen, "out of memory");
        rc = GPUFL_ENOMEM;
        goto out;
    }
    if (o->pyroscope_user) {
        /* basic only: sent with the first request, no 401 round trip */
        CURL *e = httpc_curl(c);
        curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(e, CURLOPT_USERNAME, o->pyroscope_user);
        curl_easy_setopt(e, CURLOPT_PASSWORD,
                         o->pyroscope_password ? o->pyroscope_password : "");
    }
    r.headers = h;
    rc = httpc_do(c, &r, ans, st, why, whylen);
out:
    httpc_headers_free(h);
    httpc_free(c);
    return rc;
}

/* The answer's first line when it is safe to show: printable, and holding
 * no secret (a server may echo a header back). */
static const char *answer_line(const memprof_opts *o, gbuf *a)
{
    size_t k = 0;
    if (!a->p)
        return NULL;
    while (k < a->len && a->p[k] != '\n' && a->p[k] != '\r')
        k++;
    gbuf_setlen(a, k);
    for (size_t i = 0; i < k; i++)
        if ((unsigned char)a->p[i] < 0x20 || (unsigned char)a->p[i] >= 0x7f)
            a->p[i] = '?';
    if (!k ||
        (o->pyroscope_password && *o->pyroscope_password &&
         strstr(a->p, o->pyroscope_password)) ||
        (o->pyroscope_token && strstr(a->p, o->pyroscope_token)))
        return NULL;
    return a->p;
}

static void auth_error(const memprof_opts *o, const char *url, long st)
{
    const char *fix;
    if (o->pyroscope_user)
        fix = "check --pyroscope-user and its password "
              "(--pyroscope-password-file or GPUFL_PYROSCOPE_PASSWORD)";
    else if (o->pyroscope_token)
        fix = "check the token (--pyroscope-token-file or "
              "GPUFL_PYROSCOPE_TOKEN)";
    else
        fix = "it wants credentials: --pyroscope-token-file (or "
              "GPUFL_PYROSCOPE_TOKEN), or --pyroscope-user with "
              "--pyroscope-password-file (or GPUFL_PYROSCOPE_PASSWORD)";
    glog_error("pyroscope",
               "Pyroscope at %s refused the push (HTTP %ld %s): "
               "%s%s",
               url, st, st == 401 ? "Unauthorized" : "Forbidden", fix,
               st == 403 || o->pyroscope_tenant
                   ? "; and the tenant (--pyroscope-tenant)"
                   : "");
}

static int push_one(mp_session *s, CURL *esc, const mp_proc *p, int view,
                    int counts, const char *type, uint64_t from, uint64_t until)
{
    const memprof_opts *o = s->o;
    char *body = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&body, &n);
    if (!f)
        return PUSH_FAILED;
    int r = mp_out_folded_ex(&s->agg, view, counts, view != MEMPROF_VIEW_INUSE,
                             p->pid, 0, f);
    if (fclose(f) || r || !n) {
        free(body);
        return PUSH_OK;
    }
    char name[1024];
    snprintf(name, sizeof name, "%s.%s{host=%s,pid=%u,comm=%s}",
             o->app ? o->app : "gpufl-memprof", type, s->host, p->pid,
             p->comm[0] ? p->comm : "unknown");
    char *ename = curl_easy_escape(esc, name, 0);
    char url[4096], shown[4096];
    size_t ul = strlen(o->pyroscope);
    while (ul && o->pyroscope[ul - 1] == '/')
        ul--;
    snprintf(url, sizeof url,
             "%.*s/ingest?name=%s&from=%llu&until=%llu&format=folded"
             "&spyName=gpufl-memprof",
             (int)ul, o->pyroscope, ename ? ename : "",
             (unsigned long long)(from / 1000000000ULL),
             (unsigned long long)(until / 1000000000ULL + 1));
    curl_free(ename);
    long st = 0;
    gbuf ans = GBUF_INIT(PYRO_ANSWER_MAX);
    char why[512];
    int cr = pyro_post(o, url, body, n, &st, &ans, why, sizeof why);
    int rc = PUSH_FAILED;
    free(body);
    if (cr == 0 && st >= 200 && st < 300) {
        s->pushes++;
        rc = PUSH_OK;
        goto out;
    }
    s->push_errors++;
    url_redacted(o->pyroscope, shown, sizeof shown);
    if (cr == 0 && (st == 401 || st == 403)) {
        auth_error(o, shown, st);
        rc = PUSH_AUTH;
    } else if (cr != 0) {
        glog_warn("pyroscope", "Pyroscope push to %s failed: %s", shown, why);
    } else {
        const char *line = answer_line(o, &ans);
        glog_warn("pyroscope", "Pyroscope push to %s failed (HTTP %ld)%s%s",
                  shown, st, line ? ": " : "", line ? line : "");
    }
out:
    gbuf_release(&ans);
    return rc;
}

void mp_pyroscope_push(mp_session *s, uint64_t from_ns, uint64_t until_ns)
{
    static const struct {
        int view, counts;
        const char *type;
    } kinds[] = { { MEMPROF_VIEW_ALLOC, 0, "alloc_space" },
                  { MEMPROF_VIEW_ALLOC, 1, "alloc_objects" },
                  { MEMPROF_VIEW_INUSE, 0, "inuse_space" },
                  { MEMPROF_VIEW_INUSE, 1, "inuse_objects" } };
    CURL *esc = curl_easy_init();
    if (!esc)
        return;
    for (size_t i = 0; i < s->agg.nprocs; i++) {
        const mp_proc *p = &s->agg.procs[i];
        int dup = 0;
        for (size_t k = i + 1; k < s->agg.nprocs; k++)
            dup |= s->agg.procs[k].pid == p->pid;
        if (dup)
            continue;
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
            /* refused credentials fail every request alike: said once */
            if (push_one(s, esc, p, kinds[k].view, kinds[k].counts,
                         kinds[k].type, from_ns, until_ns) == PUSH_AUTH)
                goto out;
    }
out:
    curl_easy_cleanup(esc);
}
