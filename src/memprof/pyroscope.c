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
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

/* the start of the server's answer, for error messages */
#define PYRO_ANSWER_MAX 200

typedef struct pyro_answer {
    char b[PYRO_ANSWER_MAX + 1];
    size_t n;
} pyro_answer;

enum { PUSH_OK = 0, PUSH_FAILED, PUSH_AUTH };

static size_t keep_answer(char *p, size_t sz, size_t n, void *u)
{
    pyro_answer *a = u;
    size_t len = sz * n, room = PYRO_ANSWER_MAX - a->n;
    memcpy(a->b + a->n, p, len < room ? len : room);
    a->n += len < room ? len : room;
    a->b[a->n] = 0;
    return len;
}

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

/* POST body to url with the configured auth; the HTTP status in *st
 * (0: no answer), the answer's start in *ans. */
static CURLcode pyro_post(const memprof_opts *o, const char *url,
                          const char *body, size_t n, long *st,
                          pyro_answer *ans)
{
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    char auth[4200], tenant[512];
    CURLcode r;

    *st = 0;
    if (!c)
        return CURLE_FAILED_INIT;
    h = curl_slist_append(h, "Content-Type: text/plain");
    if (o->pyroscope_token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s",
                 o->pyroscope_token);
        h = curl_slist_append(h, auth);
    }
    if (o->pyroscope_tenant) {
        snprintf(tenant, sizeof tenant, "X-Scope-OrgID: %s",
                 o->pyroscope_tenant);
        h = curl_slist_append(h, tenant);
    }
    if (o->pyroscope_user) {
        /* basic only: sent with the first request, no 401 round trip */
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(c, CURLOPT_USERNAME, o->pyroscope_user);
        curl_easy_setopt(c, CURLOPT_PASSWORD,
                         o->pyroscope_password ? o->pyroscope_password : "");
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_answer);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, ans);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    r = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, st);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (o->pyroscope_token)
        explicit_bzero(auth, sizeof auth);
    return r;
}

/* The answer's first line when it is safe to show: printable, and holding
 * no secret (a server may echo a header back). */
static const char *answer_line(const memprof_opts *o, pyro_answer *a)
{
    size_t k = 0;
    while (k < a->n && a->b[k] != '\n' && a->b[k] != '\r')
        k++;
    a->b[k] = 0;
    for (size_t i = 0; i < k; i++)
        if ((unsigned char)a->b[i] < 0x20 || (unsigned char)a->b[i] >= 0x7f)
            a->b[i] = '?';
    if (!k ||
        (o->pyroscope_password && *o->pyroscope_password &&
         strstr(a->b, o->pyroscope_password)) ||
        (o->pyroscope_token && strstr(a->b, o->pyroscope_token)))
        return NULL;
    return a->b;
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
    fprintf(stderr,
            "gpufl memprof: Pyroscope at %s refused the push (HTTP %ld %s): "
            "%s%s\n",
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
    pyro_answer ans = { { 0 }, 0 };
    CURLcode cr = pyro_post(o, url, body, n, &st, &ans);
    free(body);
    if (cr == CURLE_OK && st >= 200 && st < 300) {
        s->pushes++;
        return PUSH_OK;
    }
    s->push_errors++;
    url_redacted(o->pyroscope, shown, sizeof shown);
    if (cr == CURLE_OK && (st == 401 || st == 403)) {
        auth_error(o, shown, st);
        return PUSH_AUTH;
    }
    if (cr != CURLE_OK) {
        fprintf(stderr, "gpufl memprof: Pyroscope push to %s failed: %s\n",
                shown, curl_easy_strerror(cr));
    } else {
        const char *line = answer_line(o, &ans);
        fprintf(stderr,
                "gpufl memprof: Pyroscope push to %s failed (HTTP %ld)%s%s\n",
                shown, st, line ? ": " : "", line ? line : "");
    }
    return PUSH_FAILED;
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
