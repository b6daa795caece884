/*
 * oom_out.c - an OOM report as text: the JSON document written into
 * --oom-dir and POSTed to gpufl-server (docs/api.md "OOM reports": bytes
 * and ns as decimal strings, stacks once in a table that the request, the
 * live set and the recent calls point into), and the live set as folded
 * stacks for flamegraph.pl.  The fragmentation figures come from the
 * frames of PyTorch's caching allocator (docs/memprof.md, "Fragmentation").
 */
#include <stdlib.h>
#include <string.h>

#include "common/jw.h"
#include "oom_int.h"
#include "session.h"

/* live stacks written into a report; the folded file has them all */
#define OOM_LIVE_STACKS_MAX 1000
#define OOM_REPORT_MAX (256u << 20)

int mp_oom_is_caching(const mp_agg *g, uint32_t stack)
{
    if (stack >= g->nstacks)
        return 0;
    const mp_stack *s = &g->stacks[stack];
    for (uint32_t i = 0; i < s->n; i++)
        if (strstr(g->names[s->f[i]], "CUDACachingAllocator"))
            return 1;
    return 0;
}

static void kv_dec(jw *w, const char *key, uint64_t v)
{
    char b[24];
    size_t n = jw_fmt_u64(b, v);
    jw_key(w, key);
    jw_strn(w, b, n, n);
}

static void kv_dec_or_null(jw *w, const char *key, int have, uint64_t v)
{
    if (have) {
        kv_dec(w, key, v);
        return;
    }
    jw_key(w, key);
    jw_null(w);
}

/* The report's stack table: aggregation stack ids in first-use order. */
typedef struct stab {
    uint32_t *id;
    size_t n, cap;
    mp_u64map idx; /* stack id -> position */
} stab;

static uint32_t stab_add(stab *t, uint32_t stack)
{
    uint64_t pos;
    if (mp_u64map_get(&t->idx, stack, &pos, NULL))
        return (uint32_t)pos;
    if (t->n == t->cap || mp_u64map_put(&t->idx, stack, t->n, 0))
        return UINT32_MAX;
    t->id[t->n] = stack;
    return (uint32_t)t->n++;
}

static const char *rec_name(int rec)
{
    return rec == MP_REC_ALLOC ? "alloc" : rec == MP_REC_FREE ? "free" : "fail";
}

static size_t stack_text_len(const mp_agg *g, uint32_t stack)
{
    const char *fr[MP_STACK_MAX];
    size_t n = mp_stack_frames(g, &g->stacks[stack], fr), len = 4;
    for (size_t i = 0; i < n; i++)
        len += strlen(fr[i]) * 6 + 4; /* every byte escaped at worst */
    return len;
}

static void write_device(jw *w, const mp_oom_report *r, uint64_t rt)
{
    static const char *src[] = { "unknown", "driver", "nvml" };
    jw_key(w, "device");
    jw_obj_begin(w);
    jw_kv_str(w, "source", src[r->dev_src]);
    jw_key(w, "index");
    if (r->index >= 0)
        jw_i64(w, r->index);
    else
        jw_null(w);
    kv_dec_or_null(w, "free_bytes", r->have_mem, r->free_b);
    kv_dec_or_null(w, "total_bytes", r->have_mem, r->total_b);
    kv_dec_or_null(w, "process_bytes", r->have_proc, r->proc_b);
    kv_dec_or_null(w, "ts", r->dev_ts != 0, r->dev_ts + rt);
    jw_key(w, "why");
    if (r->why[0])
        jw_str(w, r->why);
    else
        jw_null(w);
    jw_obj_end(w);
}

/* PyTorch's caching allocator: what it holds (reserved), and what it gave
 * back after the OOM (release_cached_blocks frees its empty segments
 * before it retries) */
static void write_frag(jw *w, const mp_agg *g, const mp_oom_report *r,
                       uint64_t settle_ns, uint64_t rt)
{
    uint64_t ca = 0, other = 0;
    for (size_t i = 0; i < r->nlive; i++) {
        if (mp_oom_is_caching(g, r->live[i].stack))
            ca += r->live[i].bytes;
        else
            other += r->live[i].bytes;
    }
    jw_key(w, "fragmentation");
    jw_obj_begin(w);
    jw_key(w, "allocator");
    if (ca)
        jw_str(w, "pytorch");
    else
        jw_null(w);
    kv_dec(w, "reserved_bytes", ca);
    kv_dec(w, "other_bytes", other);
    kv_dec(w, "settle_ns", settle_ns);
    kv_dec(w, "released_bytes", r->released_b);
    jw_kv_u64(w, "released_count", r->released_n);
    kv_dec(w, "released_allocator_bytes", r->released_ca_b);
    kv_dec(w, "held_bytes", ca > r->released_ca_b ? ca - r->released_ca_b : 0);
    jw_key(w, "retries");
    jw_arr_begin(w);
    for (size_t i = 0; i < r->nretries; i++) {
        jw_obj_begin(w);
        kv_dec(w, "ts", r->retries[i].ts + rt);
        jw_key(w, "ok");
        jw_bool(w, r->retries[i].ok);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_kv_u64(w, "more_ooms", r->more_ooms);
    jw_key(w, "exited");
    jw_bool(w, r->exited);
    jw_obj_end(w);
}

char *mp_oom_json(mp_session *s, const mp_oom_report *r, size_t *len)
{
    const mp_agg *g = &s->agg;
    const memprof_opts *o = s->o;
    /* event times are CLOCK_MONOTONIC; the report says wall-clock ns */
    uint64_t rt = s->start_rt - s->start_mono;
    size_t nlive =
        r->nlive < OOM_LIVE_STACKS_MAX ? r->nlive : OOM_LIVE_STACKS_MAX;
    stab t = { 0 };
    char *buf = NULL;
    uint64_t live_b = 0, live_n = 0;
    size_t cap = 8192 + nlive * 96 + r->nrecent * 160;

    t.cap = 1 + nlive + r->nrecent;
    t.id = malloc(t.cap * sizeof *t.id);
    if (!t.id)
        goto out;
    uint32_t req = stab_add(&t, r->stack);
    int nomem = req == UINT32_MAX;
    for (size_t i = 0; i < nlive; i++)
        nomem |= stab_add(&t, r->live[i].stack) == UINT32_MAX;
    for (size_t i = 0; i < r->nrecent; i++)
        nomem |= stab_add(&t, r->recent[i].stack) == UINT32_MAX;
    if (nomem)
        goto out;
    for (size_t i = 0; i < t.n; i++)
        cap += stack_text_len(g, t.id[i]);
    for (size_t i = 0; i < r->nlive; i++) {
        live_b += r->live[i].bytes;
        live_n += r->live[i].count;
    }
    if (cap > OOM_REPORT_MAX || !(buf = malloc(cap)))
        goto out;

    jw w;
    jw_init(&w, buf, cap);
    jw_obj_begin(&w);
    jw_kv_u64(&w, "v", 1);
    jw_kv_str(&w, "host", s->host);
    jw_kv_u64(&w, "pid", r->pid);
    jw_kv_str(&w, "comm", r->comm[0] ? r->comm : "?");
    jw_kv_str(&w, "source", s->source);
    jw_key(&w, "simulated");
    jw_bool(&w, o->simulated);
    kv_dec(&w, "ts", r->ts + rt);
    jw_kv_u64(&w, "seq", r->seq);

    jw_key(&w, "request");
    jw_obj_begin(&w);
    jw_kv_str(&w, "api", mp_apis[r->api].name);
    kv_dec(&w, "bytes", r->bytes);
    jw_kv_i64(&w, "rc", r->rc);
    jw_kv_u64(&w, "tid", r->tid);
    jw_kv_u64(&w, "stack", req);
    jw_obj_end(&w);

    write_device(&w, r, rt);

    jw_key(&w, "live");
    jw_obj_begin(&w);
    kv_dec(&w, "bytes", live_b);
    jw_kv_u64(&w, "count", live_n);
    jw_key(&w, "stacks");
    jw_arr_begin(&w);
    for (size_t i = 0; i < nlive; i++) {
        uint64_t pos = 0;
        mp_u64map_get(&t.idx, r->live[i].stack, &pos, NULL);
        jw_obj_begin(&w);
        jw_kv_u64(&w, "stack", pos);
        kv_dec(&w, "bytes", r->live[i].bytes);
        jw_kv_u64(&w, "count", r->live[i].count);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_key(&w, "truncated");
    jw_bool(&w, nlive < r->nlive);
    kv_dec(&w, "host_bytes", r->host_b);
    jw_kv_u64(&w, "host_count", r->host_n);
    kv_dec(&w, "untracked_bytes", r->untracked_b);
    jw_kv_u64(&w, "untracked_count", r->untracked_n);
    jw_obj_end(&w);

    jw_key(&w, "recent");
    jw_obj_begin(&w);
    kv_dec(&w, "window_ns", (uint64_t)(o->oom_window * 1e9));
    jw_key(&w, "cut");
    jw_bool(&w, r->recent_cut);
    jw_key(&w, "events");
    jw_arr_begin(&w);
    for (size_t i = 0; i < r->nrecent; i++) {
        const mp_oom_rec *c = &r->recent[i];
        uint64_t pos = 0;
        mp_u64map_get(&t.idx, c->stack, &pos, NULL);
        jw_obj_begin(&w);
        kv_dec(&w, "ts", c->ts + rt);
        jw_kv_u64(&w, "tid", c->tid);
        jw_kv_str(&w, "op", rec_name(c->rec));
        jw_kv_str(&w, "api", mp_apis[c->api].name);
        kv_dec(&w, "bytes", c->bytes);
        jw_kv_u64(&w, "stack", pos);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_obj_end(&w);

    write_frag(&w, g, r, (uint64_t)(o->oom_settle * 1e9), rt);

    jw_key(&w, "stacks");
    jw_arr_begin(&w);
    for (size_t i = 0; i < t.n; i++) {
        const char *fr[MP_STACK_MAX];
        size_t nf = mp_stack_frames(g, &g->stacks[t.id[i]], fr);
        jw_arr_begin(&w);
        for (size_t k = 0; k < nf; k++)
            jw_str(&w, fr[k]);
        jw_arr_end(&w);
    }
    jw_arr_end(&w);
    jw_obj_end(&w);
    if (w.err) {
        free(buf);
        buf = NULL;
        goto out;
    }
    *len = w.len;
out:
    free(t.id);
    mp_u64map_release(&t.idx);
    return buf;
}

int mp_oom_folded(mp_session *s, const mp_oom_report *r, FILE *f)
{
    const mp_agg *g = &s->agg;
    const char *comm = r->comm[0] ? r->comm : "?";
    for (size_t i = 0; i < r->nlive; i++) {
        const char *fr[MP_STACK_MAX];
        size_t nf = mp_stack_frames(g, &g->stacks[r->live[i].stack], fr);
        fputs(comm, f);
        for (size_t k = 0; k < nf; k++) {
            fputc(';', f);
            fputs(fr[k], f);
        }
        fprintf(f, " %llu\n", (unsigned long long)r->live[i].bytes);
    }
    return ferror(f) ? -1 : 0;
}
