/*
 * pyroscope.c - push to a Pyroscope-compatible server (Grafana Pyroscope,
 * Alloy's pyroscope.receive_http): the legacy `POST /ingest` with folded
 * text, one request per process and sample type.  The name's suffix picks
 * the profile type (../shared/reference/ebpf-memprof.md §4.1): alloc_space
 * and alloc_objects as deltas over the interval (Pyroscope wants deltas),
 * inuse_space and inuse_objects as the snapshot.  Labels: host, pid, comm.
 */
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

static void push_one(mp_session *s, CURL *esc, const mp_proc *p, int view,
                     int counts, const char *type, uint64_t from,
                     uint64_t until)
{
    const memprof_opts *o = s->o;
    char *body = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&body, &n);
    if (!f)
        return;
    int r = mp_out_folded_ex(&s->agg, view, counts, view != MEMPROF_VIEW_INUSE,
                             p->pid, 0, f);
    if (fclose(f) || r || !n) {
        free(body);
        return;
    }
    char name[1024];
    snprintf(name, sizeof name, "%s.%s{host=%s,pid=%u,comm=%s}",
             o->app ? o->app : "gpufl-memprof", type, s->host, p->pid,
             p->comm[0] ? p->comm : "unknown");
    char *ename = curl_easy_escape(esc, name, 0);
    char url[4096];
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
    if (mp_post(url, NULL, "text/plain", body, n, &st)) {
        fprintf(stderr,
                "gpufl memprof: Pyroscope push to %s failed (HTTP "
                "%ld)\n",
                o->pyroscope, st);
        s->push_errors++;
    } else {
        s->pushes++;
    }
    free(body);
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
            push_one(s, esc, p, kinds[k].view, kinds[k].counts, kinds[k].type,
                     from_ns, until_ns);
    }
    curl_easy_cleanup(esc);
}
