/*
 * idle_waste.c - the waste accounting (idle_acct.c) shipped to the
 * server: every --waste-interval `gpufl idle watch` writes into its log
 * (the system stream the agent sends) one `waste` line per (GPU, owner)
 * whose busy or wasted seconds grew since the previous line, with the
 * growth (docs/events.md "waste").  The server sums the lines; the
 * counters on /metrics are their running totals.
 *
 * The previous totals are kept per (GPU, owner), as many as the
 * accounting keeps owners (IDLE_ACCT_OWNERS_MAX), so the lines are
 * bounded like the metrics.  An owner the accounting dropped and made
 * again starts from 0: a total below the one shipped is a new owner.
 */
#include "idle.h"

#include <stdlib.h>
#include <string.h>

#include <gpufl/gpufl.h>

#include "common/jw.h"

/* Growth below this (seconds) waits for the next interval. */
#define WASTE_EPS 0.0005

typedef struct sent {
    int gpu;
    idle_owner o;
    double busy_s, wasted[IW_N];
} sent;

struct idle_wline {
    uint64_t from; /* end of the last interval shipped */
    sent *s;
    int ns;
    idle_acct_row *rows; /* scratch: the accounting's totals */
};

int idle_wline_new(idle_wline **out, uint64_t start_ns)
{
    idle_wline *w = calloc(1, sizeof *w);
    *out = NULL;
    if (!w)
        return GPUFL_ENOMEM;
    w->s = calloc(IDLE_ACCT_OWNERS_MAX, sizeof *w->s);
    w->rows = calloc(IDLE_ACCT_OWNERS_MAX, sizeof *w->rows);
    if (!w->s || !w->rows) {
        idle_wline_free(w);
        return GPUFL_ENOMEM;
    }
    w->from = start_ns;
    *out = w;
    return 0;
}

void idle_wline_free(idle_wline *w)
{
    if (!w)
        return;
    free(w->s);
    free(w->rows);
    free(w);
}

typedef struct line_ctx {
    const idle_gpu *g;
    const char *host;
    const idle_owner *o;
    uint64_t from, to;
    int has_busy;
    double busy, wasted[IW_N];
} line_ctx;

static void kv_nonempty(jw *w, const char *k, const char *v)
{
    if (v[0])
        jw_kv_str(w, k, v);
}

static void fill(jw *w, const void *ctx)
{
    const line_ctx *c = ctx;
    jw_kv_str(w, "host", c->host);
    jw_kv_u64(w, "dev", c->g->info.id);
    kv_nonempty(w, "uuid", c->g->info.uuid);
    jw_kv_str(w, "model", c->g->info.name);
    if (c->g->info.simulated) {
        jw_key(w, "simulated");
        jw_bool(w, 1);
    }
    kv_nonempty(w, "user", c->o->user);
    kv_nonempty(w, "namespace", c->o->ns);
    kv_nonempty(w, "pod", c->o->pod);
    kv_nonempty(w, "container", c->o->container);
    kv_nonempty(w, "job", c->o->job);
    jw_kv_u64(w, "from", c->from);
    jw_kv_u64(w, "to", c->to);
    /* unknown (no per-process samples) is left out, not sent as 0 */
    if (c->has_busy) {
        jw_key(w, "busy_s");
        jw_f64(w, c->busy, 6);
    }
    jw_key(w, "wasted_s");
    jw_obj_begin(w);
    for (int r = 0; r < IW_N; r++)
        if (c->wasted[r] > 0) {
            jw_key(w, idle_waste_name(r));
            jw_f64(w, c->wasted[r], 6);
        }
    jw_obj_end(w);
}

static sent *sent_of(idle_wline *w, const idle_acct_row *r)
{
    for (int i = 0; i < w->ns; i++)
        if (w->s[i].gpu == r->gpu && !memcmp(&w->s[i].o, &r->o, sizeof r->o))
            return &w->s[i];
    return NULL;
}

int idle_wline_ship(idle_wline *w, idle_log *l, const idle_acct *a,
                    const idle_gpu *gpus, int ngpus, const char *host,
                    uint64_t now)
{
    int n = idle_acct_owners(a, w->rows, IDLE_ACCT_OWNERS_MAX), lines = 0;
    sent *next = calloc(IDLE_ACCT_OWNERS_MAX, sizeof *next);
    if (!next)
        return 0; /* the growth goes in the next interval's lines */
    if (now <= w->from) {
        free(next);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        const idle_acct_row *r = &w->rows[i];
        const sent *p = sent_of(w, r);
        line_ctx c;
        int any = 0;
        /* a total below the one shipped: the owner was dropped and is
         * counted again from 0 */
        int reset = p && r->busy_s < p->busy_s - WASTE_EPS;
        for (int k = 0; p && !reset && k < IW_N; k++)
            reset = r->wasted[k] < p->wasted[k] - WASTE_EPS;
        if (reset)
            p = NULL;
        memset(&c, 0, sizeof c);
        c.busy = r->busy_s - (p ? p->busy_s : 0);
        c.has_busy = r->has_util;
        any = c.has_busy && c.busy >= WASTE_EPS;
        for (int k = 0; k < IW_N; k++) {
            c.wasted[k] = r->wasted[k] - (p ? p->wasted[k] : 0);
            if (c.wasted[k] < WASTE_EPS)
                c.wasted[k] = 0;
            else
                any = 1;
        }
        next[i].gpu = r->gpu;
        next[i].o = r->o;
        if (!any || r->gpu < 0 || r->gpu >= ngpus) {
            /* nothing worth a line: what was shipped stays the base */
            if (p) {
                next[i] = *p;
            } else {
                next[i].busy_s = 0;
                memset(next[i].wasted, 0, sizeof next[i].wasted);
            }
            continue;
        }
        if (c.busy < WASTE_EPS)
            c.busy = 0;
        c.g = &gpus[r->gpu];
        c.host = host;
        c.o = &r->o;
        c.from = w->from;
        c.to = now;
        idle_log_event(l, now, "waste", fill, &c);
        lines++;
        next[i].busy_s = (p ? p->busy_s : 0) + c.busy;
        for (int k = 0; k < IW_N; k++)
            next[i].wasted[k] = (p ? p->wasted[k] : 0) + c.wasted[k];
    }
    memcpy(w->s, next, (size_t)n * sizeof *next);
    w->ns = n;
    w->from = now;
    free(next);
    return lines;
}
