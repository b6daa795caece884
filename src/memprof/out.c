/*
 * out.c - text outputs of a profile: folded stacks (flamegraph.pl,
 * Pyroscope), the `top` table, and the JSON body POSTed to gpufl-server
 * (docs/api.md, "Memory profiles").
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/jw.h"
#include "memprof_int.h"

const char *mp_agg_comm(const mp_agg *g, uint32_t pid)
{
    const char *c = "?";
    for (size_t i = 0; i < g->nprocs; i++)
        if (g->procs[i].pid == pid && g->procs[i].comm[0])
            c = g->procs[i].comm;
    return c;
}

/* native and Python frames (innermost first in s->f), then the API; a
 * stack with Python frames holds up to MP_MAX_FRAMES + MP_MAX_PYFRAMES */
size_t mp_stack_frames(const mp_agg *g, const mp_stack *s, const char **out)
{
    size_t n = 0;
    for (uint32_t i = s->n; i-- > 0;)
        out[n++] = g->names[s->f[i]];
    if (g->api_frame)
        out[n++] = mp_apis[s->api].name;
    return n;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int mp_out_folded(mp_agg *g, int view, int counts, FILE *f)
{
    return mp_out_folded_ex(g, view, counts, 0, 0, 1, f);
}

int mp_out_folded_ex(mp_agg *g, int view, int counts, int delta, uint32_t pid,
                     int comm_root, FILE *f)
{
    char **lines = calloc(g->nstacks ? g->nstacks : 1, sizeof *lines);
    uint64_t *vals = calloc(g->nstacks ? g->nstacks : 1, sizeof *vals);
    size_t nl = 0;
    int rc = -1;
    if (!lines || !vals)
        goto out;
    for (size_t i = 0; i < g->nstacks; i++) {
        uint64_t b, c;
        if (pid && g->stacks[i].pid != pid)
            continue;
        mp_stack_value(&g->stacks[i], view, delta, &b, &c);
        if (!c && !b)
            continue;
        const char *fr[MP_STACK_MAX];
        size_t n = mp_stack_frames(g, &g->stacks[i], fr);
        size_t len = strlen(mp_agg_comm(g, g->stacks[i].pid)) + 1;
        for (size_t k = 0; k < n; k++)
            len += strlen(fr[k]) + 1;
        char *l = malloc(len + 1);
        if (!l)
            goto out;
        size_t o = 0;
        if (comm_root)
            o = (size_t)snprintf(l, len + 1, "%s",
                                 mp_agg_comm(g, g->stacks[i].pid));
        for (size_t k = 0; k < n; k++)
            o += (size_t)snprintf(l + o, len + 1 - o, "%s%s", o ? ";" : "",
                                  fr[k]);
        lines[nl] = l;
        vals[nl] = counts ? c : b;
        nl++;
    }
    /* sort (line, value) pairs together */
    typedef struct pair {
        char *l;
        uint64_t v;
    } pair;
    pair *pv = malloc((nl ? nl : 1) * sizeof *pv);
    if (!pv)
        goto out;
    for (size_t i = 0; i < nl; i++)
        pv[i] = (pair){ lines[i], vals[i] };
    qsort(pv, nl, sizeof *pv, str_cmp);
    for (size_t i = 0; i < nl;) {
        uint64_t v = 0;
        size_t j = i;
        while (j < nl && !strcmp(pv[j].l, pv[i].l))
            v += pv[j++].v;
        fprintf(f, "%s %" PRIu64 "\n", pv[i].l, v);
        i = j;
    }
    free(pv);
    rc = ferror(f) ? -1 : 0;
out:
    for (size_t i = 0; i < nl; i++)
        free(lines[i]);
    free(lines);
    free(vals);
    return rc;
}

static void human(uint64_t b, char *buf, size_t cap)
{
    static const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    double v = (double)b;
    int i = 0;
    while (v >= 1024 && i < 4) {
        v /= 1024;
        i++;
    }
    if (i)
        snprintf(buf, cap, "%.1f %s", v, u[i]);
    else
        snprintf(buf, cap, "%" PRIu64 " B", b);
}

typedef struct row {
    size_t i;
    uint64_t b, c;
} row;

static int row_cmp(const void *a, const void *b)
{
    const row *x = a, *y = b;
    if (x->b != y->b)
        return x->b > y->b ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

int mp_out_top(mp_agg *g, int view, size_t n, FILE *f)
{
    static const char *vn[] = { "alloc", "inuse", "fail" };
    row *r = malloc((g->nstacks ? g->nstacks : 1) * sizeof *r);
    if (!r)
        return -1;
    size_t nr = 0;
    uint64_t tb = 0, tc = 0;
    for (size_t i = 0; i < g->nstacks; i++) {
        uint64_t b, c;
        mp_stack_value(&g->stacks[i], view, 0, &b, &c);
        if (!b && !c)
            continue;
        r[nr++] = (row){ i, b, c };
        tb += b;
        tc += c;
    }
    qsort(r, nr, sizeof *r, row_cmp);
    char hb[32];
    human(tb, hb, sizeof hb);
    fprintf(
        f, "view %s: %zu stacks, %s in %" PRIu64 " calls, %" PRIu64 " events\n",
        vn[view % 3], nr, hb, tc, g->events);
    fprintf(f, "%12s %8s %7s %-15s %s\n", "BYTES", "COUNT", "PID", "COMM",
            "STACK (leaf <- root)");
    for (size_t k = 0; k < nr && k < n; k++) {
        const mp_stack *s = &g->stacks[r[k].i];
        human(r[k].b, hb, sizeof hb);
        fprintf(f, "%12s %8" PRIu64 " %7u %-15s ", hb, r[k].c, s->pid,
                mp_agg_comm(g, s->pid));
        const char *fr[MP_STACK_MAX];
        size_t nf = mp_stack_frames(g, s, fr);
        for (size_t j = nf; j-- > 0;)
            fprintf(f, "%s%s", fr[j], j ? " <- " : "");
        fputc('\n', f);
    }
    fprintf(f, "\n%7s %-15s %12s %12s %12s %12s\n", "PID", "COMM", "ALLOC",
            "INUSE", "FAILED", "IMPLICIT");
    for (size_t i = 0; i < g->nprocs; i++) {
        const mp_proc *p = &g->procs[i];
        uint64_t a = 0, u = 0, fl = 0;
        for (size_t k = 0; k < g->nstacks; k++)
            if (g->stacks[k].pid == p->pid) {
                a += g->stacks[k].cum.alloc_b;
                u += g->stacks[k].inuse_b;
                fl += g->stacks[k].cum.fail_b;
            }
        if (!a && !u && !fl && !p->implicit_b)
            continue; /* seen mapping the driver, never allocated */
        char h1[32], h2[32], h3[32], h4[32];
        human(a, h1, sizeof h1);
        human(u, h2, sizeof h2);
        human(fl, h3, sizeof h3);
        human(p->implicit_b, h4, sizeof h4);
        fprintf(f, "%7u %-15s %12s %12s %12s %12s%s\n", p->pid,
                p->comm[0] ? p->comm : "?", h1, h2, h3, h4,
                p->exited ? " (exited)" : "");
    }
    free(r);
    return ferror(f) ? -1 : 0;
}

char *mp_out_server_json(mp_agg *g, uint32_t pid, const char *host,
                         uint64_t start, uint64_t end, const char *source,
                         int simulated, size_t *len)
{
    size_t cap = 1 << 16, nst = 0;
    for (size_t i = 0; i < g->nstacks; i++) {
        const mp_stack *s = &g->stacks[i];
        if (s->pid != pid)
            continue;
        if (s->cum.alloc_n == s->pushed.alloc_n &&
            s->cum.free_n == s->pushed.free_n &&
            s->cum.fail_n == s->pushed.fail_n && !s->inuse_n)
            continue;
        nst++;
        cap += 512;
        for (uint32_t k = 0; k < s->n; k++)
            cap += strlen(g->names[s->f[k]]) * 6 + 4;
    }
    if (!nst)
        return NULL;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    jw w;
    jw_init(&w, buf, cap);
    jw_obj_begin(&w);
    jw_kv_u64(&w, "v", 1);
    jw_kv_str(&w, "host", host);
    jw_kv_u64(&w, "pid", pid);
    jw_kv_str(&w, "comm", mp_agg_comm(g, pid));
    jw_kv_u64(&w, "start", start);
    jw_kv_u64(&w, "end", end);
    jw_kv_str(&w, "source", source);
    jw_key(&w, "simulated");
    jw_bool(&w, simulated);
    jw_key(&w, "stacks");
    jw_arr_begin(&w);
    for (size_t i = 0; i < g->nstacks; i++) {
        const mp_stack *s = &g->stacks[i];
        if (s->pid != pid)
            continue;
        const mp_counts *c = &s->cum, *o = &s->pushed;
        if (c->alloc_n == o->alloc_n && c->free_n == o->free_n &&
            c->fail_n == o->fail_n && !s->inuse_n)
            continue;
        jw_obj_begin(&w);
        jw_key(&w, "frames");
        jw_arr_begin(&w);
        const char *fr[MP_STACK_MAX];
        size_t nf = mp_stack_frames(g, s, fr);
        for (size_t k = 0; k < nf; k++)
            jw_str(&w, fr[k]);
        jw_arr_end(&w);
        jw_kv_u64(&w, "alloc_bytes", c->alloc_b - o->alloc_b);
        jw_kv_u64(&w, "alloc_count", c->alloc_n - o->alloc_n);
        jw_kv_u64(&w, "free_bytes", c->free_b - o->free_b);
        jw_kv_u64(&w, "free_count", c->free_n - o->free_n);
        jw_kv_u64(&w, "inuse_bytes", s->inuse_b);
        jw_kv_u64(&w, "inuse_count", s->inuse_n);
        jw_kv_u64(&w, "fail_bytes", c->fail_b - o->fail_b);
        jw_kv_u64(&w, "fail_count", c->fail_n - o->fail_n);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_obj_end(&w);
    if (w.err) {
        free(buf);
        return NULL;
    }
    *len = w.len;
    return buf;
}
