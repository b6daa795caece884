/*
 * store_sql_q_export_trace.c - an export's range (read by
 * store_sql_q_export.c) written as Chrome trace events: a track named the
 * first time it is used, kernels with their launch call and its arrow,
 * copies and memsets, the other API calls, scope instances, and what the
 * export holds (otherData).
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/trace.h"
#include "srv_json.h"
#include "store_sql_q.h"
#include "store_sql_q_export_int.h"

static void ev_begin(jw *w)
{
    jw_obj_begin(w);
}

/* Names a track the first time it is used: a host thread (dev < 0) or a
 * GPU stream. */
static void track(ex_ctx *x, jw *w, int64_t dev, int64_t id)
{
    int64_t key =
        dev < 0 ? id : (int64_t)((uint64_t)(dev + 1) << 32 | (uint64_t)id);
    char name[160];
    int pid = dev < 0 ? SQ_EXP_PID_HOST : SQ_EXP_PID_HOST + 1 + (int)dev;

    for (int i = 0; i < x->ntracks; i++)
        if (x->tracks[i] == key)
            return;
    if (x->ntracks == (int)(sizeof(x->tracks) / sizeof(x->tracks[0])))
        return;
    x->tracks[x->ntracks++] = key;
    if (dev >= 0 && dev < SQ_EXP_DEVS && !x->devs_named[dev]) {
        x->devs_named[dev] = 1;
        snprintf(name, sizeof(name), "GPU %lld: %s%s", (long long)dev,
                 x->devname[dev][0] ? x->devname[dev] : "?",
                 x->simulated ? " [SIMULATED]" : "");
        ev_begin(w);
        trace_meta(w, "process_name", pid, 0, name);
        jw_obj_end(w);
        ev_begin(w);
        trace_sort(w, "process_sort_index", pid, 0, pid);
        jw_obj_end(w);
    }
    if (dev >= 0)
        snprintf(name, sizeof(name), "stream %lld", (long long)id);
    else if (id)
        snprintf(name, sizeof(name), "thread %lld", (long long)id);
    else
        snprintf(name, sizeof(name), "calls (thread unknown)");
    ev_begin(w);
    trace_meta(w, "thread_name", pid, (uint64_t)id, name);
    jw_obj_end(w);
}

static int gpu_pid(int64_t dev)
{
    return SQ_EXP_PID_HOST + 1 + (int)(dev < SQ_EXP_DEVS ? dev : SQ_EXP_DEVS);
}

/* A kernel's launch call and its arrow, when its times count. */
static void w_launch(ex_ctx *x, jw *w, const ex_item *k)
{
    int64_t off = k->a, dur = k->b;
    uint64_t enter, id;

    if (!(dur > 0 && off >= -k->ts && off <= INT64_MAX - k->ts - dur))
        return;
    enter = (uint64_t)(k->ts + off);
    id = ++x->flows;
    track(x, w, -1, k->tid);
    ev_begin(w);
    jw_kv_str(w, "name", "cudaLaunchKernel");
    trace_slice(w, "launch", SQ_EXP_PID_HOST, k->tid, x->from, enter,
                (uint64_t)dur);
    jw_key(w, "args");
    jw_obj_begin(w);
    srv_jw_kv_num(w, "corr", k->corr);
    srv_jw_kv_num(w, "kid", k->seq);
    jw_obj_end(w);
    jw_obj_end(w);
    ev_begin(w);
    trace_flow(w, 0, id, SQ_EXP_PID_HOST, k->tid, x->from, enter);
    jw_obj_end(w);
    ev_begin(w);
    trace_flow(w, 1, id, gpu_pid(k->dev), (uint64_t)k->stream, x->from,
               (uint64_t)k->ts);
    jw_obj_end(w);
}

static void w_kernel(ex_ctx *x, jw *w, const ex_item *k)
{
    track(x, w, k->dev, k->stream);
    ev_begin(w);
    jw_kv_str(w, "name", k->name[0] ? k->name : "(unknown kernel)");
    trace_slice(w, "kernel", gpu_pid(k->dev), (uint64_t)k->stream, x->from,
                (uint64_t)k->ts, (uint64_t)k->dur);
    jw_key(w, "args");
    jw_obj_begin(w);
    srv_jw_kv_num(w, "kid", k->seq);
    srv_jw_kv_num(w, "corr", k->corr);
    jw_kv_str(w, "mangled", k->mangled);
    jw_obj_end(w);
    jw_obj_end(w);
    w_launch(x, w, k);
}

static void w_copy(ex_ctx *x, jw *w, const ex_item *e)
{
    char name[48];
    int memset_ = e->a == EV_MEMSET;

    track(x, w, e->dev, e->stream);
    snprintf(name, sizeof(name), memset_ ? "memset" : "memcpy %s", e->kind);
    ev_begin(w);
    jw_kv_str(w, "name", name);
    trace_slice(w, memset_ ? "memset" : "memcpy", gpu_pid(e->dev),
                (uint64_t)e->stream, x->from, (uint64_t)e->ts,
                (uint64_t)e->dur);
    jw_key(w, "args");
    jw_obj_begin(w);
    srv_jw_kv_dec(w, "bytes", e->b);
    srv_jw_kv_num(w, "corr", e->corr);
    jw_obj_end(w);
    jw_obj_end(w);
}

/* An API call other than the launch of an exported kernel. */
static void w_call(ex_ctx *x, jw *w, const sq_call *c)
{
    char name[48];

    track(x, w, -1, c->tid);
    if (c->type == SQ_CALL_SYNC)
        snprintf(name, sizeof(name), "sync %s", c->kind);
    else if (c->type == SQ_CALL_LAUNCH)
        snprintf(name, sizeof(name), "cudaLaunchKernel");
    else
        snprintf(name, sizeof(name), "%s call",
                 c->type == SQ_CALL_MEMCPY ? "memcpy" : "memset");
    ev_begin(w);
    jw_kv_str(w, "name", name);
    trace_slice(w, c->type == SQ_CALL_SYNC ? "sync" : "launch", SQ_EXP_PID_HOST,
                c->tid, x->from, (uint64_t)c->ts, (uint64_t)c->dur);
    jw_key(w, "args");
    jw_obj_begin(w);
    srv_jw_kv_num(w, "corr", c->corr);
    srv_jw_kv_num(w, "seq", c->seq);
    jw_obj_end(w);
    jw_obj_end(w);
}

static void w_scope(ex_ctx *x, jw *w, const ex_item *s)
{
    track(x, w, -1, s->tid);
    ev_begin(w);
    jw_kv_str(w, "name", s->name[0] ? s->name : "(scope)");
    trace_slice(w, "scope", SQ_EXP_PID_HOST, s->tid, x->from, (uint64_t)s->ts,
                (uint64_t)s->dur);
    jw_key(w, "args");
    jw_obj_begin(w);
    srv_jw_kv_num(w, "id", s->seq);
    jw_obj_end(w);
    jw_obj_end(w);
}

static int seq_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

void sq_ex_write(ex_ctx *x, jw *w, const char *sid, uint64_t cut)
{
    size_t nk = 0, nc = 0, nx = 0, ns = 0;
    int64_t *kseq = malloc((x->k.n + 1) * sizeof(int64_t));
    char name[600];

    jw_obj_begin(w);
    jw_key(w, "traceEvents");
    jw_arr_begin(w);
    snprintf(name, sizeof(name), "%s (%s, pid %lld) host%s", x->app, x->host,
             (long long)x->pid, x->simulated ? " [SIMULATED GPU]" : "");
    ev_begin(w);
    trace_meta(w, "process_name", SQ_EXP_PID_HOST, 0, name);
    jw_obj_end(w);
    ev_begin(w);
    trace_sort(w, "process_sort_index", SQ_EXP_PID_HOST, 0, SQ_EXP_PID_HOST);
    jw_obj_end(w);
    for (size_t i = 0; i < x->k.n; i++) {
        if ((uint64_t)x->k.v[i].ts >= cut)
            continue;
        w_kernel(x, w, &x->k.v[i]);
        if (kseq)
            kseq[nk] = x->k.v[i].seq;
        nk++;
    }
    if (kseq)
        qsort(kseq, nk, sizeof(int64_t), seq_cmp);
    for (size_t i = 0; i < x->cp.n; i++) {
        if ((uint64_t)x->cp.v[i].ts >= cut)
            continue;
        w_copy(x, w, &x->cp.v[i]);
        nc++;
    }
    for (size_t i = 0; i < x->ncalls; i++) {
        const sq_call *c = &x->calls[i];
        if ((uint64_t)c->ts >= cut)
            continue;
        nx++;
        /* an exported kernel's call went out with its arrow */
        if (c->type == SQ_CALL_LAUNCH && kseq &&
            bsearch(&c->seq, kseq, nk, sizeof(int64_t), seq_cmp))
            continue;
        w_call(x, w, c);
    }
    for (size_t i = 0; i < x->sc.n; i++) {
        if ((uint64_t)x->sc.v[i].ts >= cut)
            continue;
        w_scope(x, w, &x->sc.v[i]);
        ns++;
    }
    jw_arr_end(w);
    jw_kv_str(w, "displayTimeUnit", "ns");
    jw_key(w, "otherData");
    jw_obj_begin(w);
    jw_kv_str(w, "generator", "gpufl-server");
    jw_kv_str(w, "session", sid);
    srv_jw_kv_udec(w, "from", x->from);
    srv_jw_kv_udec(w, "to", cut < x->to ? cut : x->to);
    jw_key(w, "truncated");
    jw_bool(w, cut < x->to);
    jw_kv_u64(w, "kernels", nk);
    jw_kv_u64(w, "copies", nc);
    jw_kv_u64(w, "calls", nx);
    jw_kv_u64(w, "scopes", ns);
    jw_obj_end(w);
    jw_obj_end(w);
    free(kseq);
}
