/*
 * oom.c - OOM forensics (`gpufl memprof --oom`, docs/memprof.md "OOM
 * forensics"): keeps each process's last --oom-events calls in a ring,
 * and when an allocation fails with CUDA_ERROR_OUT_OF_MEMORY takes a
 * report at once - the request and its stack, the device's free and total
 * memory (the driver's figures from the preload interposer, else NVML's),
 * the device memory the process holds by stack, its calls of the last
 * --oom-window - then watches the process for --oom-settle: what it gives
 * back (a caching allocator releasing its cached segments) and whether
 * its retries of the same request succeed.  The report is then written
 * into --oom-dir (JSON and the live set as folded stacks) and pushed to
 * gpufl-server (POST /api/v1/memprof/oom).
 *
 * Bounded: one ring of --oom-events calls per live process (freed when
 * the process ends), one open report per process (OOMs while one is open
 * are counted in it), at most --oom-max reports per process (the rest are
 * counted and said at the end).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "gpu/gpu.h"
#include "oom_int.h"
#include "session.h"

/* CUresult CUDA_ERROR_OUT_OF_MEMORY; the runtime's cudaErrorMemoryAllocation
 * has the same value, so the runtime layer's probes are covered too */
#define CUDA_OOM 2

typedef struct oom_proc {
    uint32_t pid;
    mp_oom_rec *ring; /* cap entries; NULL until its first call */
    size_t head, n;   /* next slot, entries held */
    uint64_t dropped; /* calls overwritten */
    unsigned reports;
    uint64_t suppressed; /* OOMs past --oom-max */
    mp_oom_report *open;
} oom_proc;

struct mp_oom {
    mp_session *s;
    oom_proc *procs; /* by index into s->agg.procs */
    size_t nprocs;
    size_t cap;
    uint64_t window_ns, settle_ns;
    unsigned max_reports;
    char dir[4096];
    unsigned written; /* reports written: the files' numbers */
    int failed;
    gpu_nvml *nvml;
    char nvml_why[200];
    struct mp_event meminfo; /* the last MP_EV_MEMINFO */
    int have_meminfo;
};

static oom_proc *proc_of(mp_oom *m, const mp_agg *g, const mp_proc *p)
{
    size_t i = (size_t)(p - g->procs);
    if (i >= m->nprocs) {
        size_t c = m->nprocs ? m->nprocs : 16;
        while (c <= i)
            c *= 2;
        oom_proc *nv = realloc(m->procs, c * sizeof *nv);
        if (!nv)
            return NULL;
        memset(nv + m->nprocs, 0, (c - m->nprocs) * sizeof *nv);
        m->procs = nv;
        m->nprocs = c;
    }
    m->procs[i].pid = p->pid;
    return &m->procs[i];
}

static void ring_push(mp_oom *m, oom_proc *op, const struct mp_event *e,
                      int rec, uint32_t stack, uint64_t bytes)
{
    if (!op->ring && !(op->ring = calloc(m->cap, sizeof *op->ring)))
        return;
    op->ring[op->head] =
        (mp_oom_rec){ e->ts,       bytes, stack, e->tid, (uint16_t)e->api,
                      (uint8_t)rec };
    op->head = (op->head + 1) % m->cap;
    if (op->n < m->cap)
        op->n++;
    else
        op->dropped++;
}

static void report_free(mp_oom_report *r)
{
    if (!r)
        return;
    free(r->live);
    free(r->recent);
    free(r);
}

static int is_host(uint32_t api)
{
    return api == MP_cuMemAllocHost_v2 || api == MP_cuMemAllocHost ||
           api == MP_cuMemHostAlloc || api == MP_cudaMallocHost ||
           api == MP_cudaHostAlloc;
}

static int live_cmp(const void *a, const void *b)
{
    const mp_oom_live *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* The figures the driver gave the interposer for this very call. */
static int device_from_driver(mp_oom *m, const struct mp_event *e,
                              mp_oom_report *r)
{
    const struct mp_event *mi = &m->meminfo;
    if (!(e->flags & MP_EVF_MEMINFO) || !m->have_meminfo || mi->pid != e->pid ||
        mi->tid != e->tid)
        return 0;
    m->have_meminfo = 0;
    r->dev_ts = mi->ts;
    r->index = mi->arg[4] == 0 ? (int64_t)(int)mi->arg[3] : -1;
    if (mi->arg[2] != 0) {
        snprintf(r->why, sizeof r->why,
                 "cuMemGetInfo_v2 answered CUresult %d on the failing thread",
                 (int)mi->arg[2]);
        return 0;
    }
    r->dev_src = 1;
    r->have_mem = 1;
    r->free_b = mi->arg[0];
    r->total_b = mi->arg[1];
    return 1;
}

/* NVML: the GPU whose process list holds the pid, or the only GPU. */
static void device_from_nvml(mp_oom *m, mp_oom_report *r)
{
    gpu_sample *smp;
    int n = 0, hit = -1, hits = 0;
    if (!m->nvml) {
        if (!r->why[0])
            snprintf(r->why, sizeof r->why, "%s", m->nvml_why);
        return;
    }
    smp = calloc(GPU_MAX_DEVICES, sizeof *smp);
    if (!smp || gpu_nvml_sample(m->nvml, smp, GPU_MAX_DEVICES, &n)) {
        snprintf(r->why, sizeof r->why, "NVML: no sample");
        free(smp);
        return;
    }
    r->dev_ts = mp_now_mono();
    for (int i = 0; i < n; i++)
        for (uint32_t k = 0; k < smp[i].nprocs; k++)
            if (smp[i].procs[k].pid == r->pid) {
                if (hit != i)
                    hits++;
                hit = i;
            }
    if (hits > 1) {
        snprintf(r->why, sizeof r->why,
                 "NVML lists pid %u on %d GPUs: which one failed is unknown",
                 r->pid, hits);
    } else if (hits == 0 && n != 1) {
        snprintf(r->why, sizeof r->why,
                 "NVML lists pid %u on none of its %d GPUs", r->pid, n);
    } else {
        const gpu_sample *g = &smp[hits ? hit : 0];
        r->dev_src = 2;
        r->index = g->dev;
        r->why[0] = 0;
        if (g->present & GS_MEM) {
            uint64_t used =
                g->mem_used +
                (g->present & GS_MEM_RESERVED ? g->mem_reserved : 0);
            r->have_mem = 1;
            r->total_b = g->mem_total;
            r->free_b = used < g->mem_total ? g->mem_total - used : 0;
        } else {
            snprintf(r->why, sizeof r->why, "NVML has no memory figures");
        }
        for (uint32_t k = 0; k < g->nprocs; k++)
            if (g->procs[k].pid == r->pid && g->procs[k].mem != UINT64_MAX) {
                r->have_proc = 1;
                r->proc_b = g->procs[k].mem;
            }
    }
    free(smp);
}

/* The report's picture at the failed call. */
static void open_report(mp_oom *m, oom_proc *op, mp_agg *g, const mp_proc *p,
                        const struct mp_event *e, uint32_t stack,
                        uint64_t bytes)
{
    if (op->reports >= m->max_reports) {
        op->suppressed++;
        return;
    }
    mp_oom_report *r = calloc(1, sizeof *r);
    size_t nl = 0;
    if (!r)
        return;
    r->pid = p->pid;
    r->tid = e->tid;
    memcpy(r->comm, p->comm, sizeof r->comm);
    r->ts = e->ts;
    r->api = e->api;
    r->stack = stack;
    r->bytes = bytes;
    r->rc = e->rc;
    r->index = -1;
    if (!device_from_driver(m, e, r))
        device_from_nvml(m, r);

    for (size_t i = 0; i < g->nstacks; i++)
        nl += g->stacks[i].pid == p->pid && g->stacks[i].inuse_n;
    r->live = malloc((nl ? nl : 1) * sizeof *r->live);
    r->recent = malloc((op->n ? op->n : 1) * sizeof *r->recent);
    if (!r->live || !r->recent) {
        report_free(r);
        return;
    }
    for (size_t i = 0; i < g->nstacks; i++) {
        const mp_stack *st = &g->stacks[i];
        if (st->pid != p->pid || !st->inuse_n)
            continue;
        if (is_host(st->api)) {
            r->host_b += st->inuse_b;
            r->host_n += st->inuse_n;
        } else {
            r->live[r->nlive++] =
                (mp_oom_live){ (uint32_t)i, st->inuse_b, st->inuse_n };
        }
    }
    qsort(r->live, r->nlive, sizeof *r->live, live_cmp);
    r->untracked_b = p->untracked_b;
    r->untracked_n = p->untracked_n;

    uint64_t from = e->ts > m->window_ns ? e->ts - m->window_ns : 0;
    for (size_t k = 0; k < op->n; k++) {
        const mp_oom_rec *c =
            &op->ring[(op->head + m->cap - op->n + k) % m->cap];
        if (c->ts < from)
            continue;
        if (k == 0 && op->dropped)
            r->recent_cut = 1; /* older calls of the window are gone */
        r->recent[r->nrecent++] = *c;
    }
    r->seq = ++op->reports;
    op->open = r;
}

/* body (n bytes) into path, then a newline; 0 or -1 with errno */
static int write_file(const char *path, const char *body, size_t n)
{
    FILE *f = fopen(path, "w");
    int rc = 0;
    if (!f)
        return -1;
    if (fwrite(body, 1, n, f) != n || fputc('\n', f) == EOF)
        rc = -1;
    if (fclose(f))
        rc = -1;
    return rc;
}

static int write_folded(mp_session *s, const mp_oom_report *r, const char *path)
{
    FILE *f = fopen(path, "w");
    int rc = 0;
    if (!f)
        return -1;
    if (mp_oom_folded(s, r, f))
        rc = -1;
    if (fclose(f))
        rc = -1;
    return rc;
}

/* The report is complete: written, pushed, freed. */
static void settle(mp_oom *m, oom_proc *op)
{
    mp_session *s = m->s;
    mp_oom_report *r = op->open;
    char base[4150], json[4200], folded[4200];
    size_t n = 0;

    op->open = NULL;
    char *body = mp_oom_json(s, r, &n);
    snprintf(base, sizeof base, "%s/oom-%u-%u", m->dir, r->pid, ++m->written);
    snprintf(json, sizeof json, "%s.json", base);
    snprintf(folded, sizeof folded, "%s.folded", base);
    if (!body) {
        glog_error("oom", "out of memory writing the OOM report of pid %u",
                   r->pid);
        m->failed = 1;
    } else if (write_file(json, body, n) || write_folded(s, r, folded)) {
        glog_error("oom", "cannot write the OOM report %s: %s", base,
                   strerror(errno));
        m->failed = 1;
    } else {
        /* a warning: it is what --oom is for, and says where to look */
        const glog_field f[] = { GLOG_NUM("pid", r->pid),
                                 GLOG_STR("api", mp_apis[r->api].name),
                                 GLOG_NUM("bytes", r->bytes),
                                 { "report", json, 0 } };
        glog_fields(GLOG_WARN, "oom", f, sizeof f / sizeof f[0],
                    "OOM in pid %u (%s): %s of %llu bytes failed; report %s, "
                    "live set %s",
                    r->pid, r->comm, mp_apis[r->api].name,
                    (unsigned long long)r->bytes, json, folded);
    }
    if (body && s->o->server) {
        char url[2048], why[512];
        long st = 0;
        size_t ul = strlen(s->o->server);
        while (ul && s->o->server[ul - 1] == '/')
            ul--;
        snprintf(url, sizeof url, "%.*s/api/v1/memprof/oom", (int)ul,
                 s->o->server);
        if (mp_push(url, s->o->token, s->o->ca_file, body, n, &st, why,
                    sizeof why)) {
            glog_error("push",
                       "push of the OOM report of pid %u to %s "
                       "failed (%s)",
                       r->pid, url, why);
            m->failed = 1;
        }
    }
    free(body);
    report_free(r);
}

static void hook(void *ctx, mp_agg *g, mp_proc *p, const struct mp_event *e,
                 int rec, uint32_t stack, uint64_t bytes)
{
    mp_oom *m = ctx;
    oom_proc *op = proc_of(m, g, p);
    mp_oom_report *r;
    if (!op)
        return;
    if (op->open && e->ts >= op->open->ts + m->settle_ns)
        settle(m, op);
    r = op->open;
    if (rec == MP_REC_EXIT) {
        if (r) {
            r->exited = 1;
            settle(m, op);
        }
        free(op->ring); /* a later process with this pid starts afresh */
        op->ring = NULL;
        op->n = op->head = 0;
        return;
    }
    ring_push(m, op, e, rec, stack, bytes);
    if (!r) {
        if (rec == MP_REC_FAIL && e->rc == CUDA_OOM)
            open_report(m, op, g, p, e, stack, bytes);
        return;
    }
    if (rec == MP_REC_FREE) {
        r->released_b += bytes;
        r->released_n++;
        if (mp_oom_is_caching(g, stack))
            r->released_ca_b += bytes;
    } else if (e->tid == r->tid && bytes == r->bytes) {
        /* the same request again from the same thread: a retry */
        if (r->nretries < MP_OOM_RETRIES_MAX) {
            r->retries[r->nretries].ts = e->ts;
            r->retries[r->nretries++].ok = rec == MP_REC_ALLOC;
        }
    } else if (rec == MP_REC_FAIL && e->rc == CUDA_OOM) {
        r->more_ooms++;
    }
}

int mp_oom_new(mp_session *s, mp_oom **out)
{
    const memprof_opts *o = s->o;
    mp_oom *m = calloc(1, sizeof *m);
    *out = NULL;
    if (!m) {
        glog_error("oom", "out of memory");
        return -1;
    }
    m->s = s;
    m->cap = o->oom_events ? o->oom_events : 4096;
    m->window_ns = (uint64_t)(o->oom_window * 1e9);
    m->settle_ns = (uint64_t)(o->oom_settle * 1e9);
    m->max_reports = o->oom_max ? (unsigned)o->oom_max : 10;
    snprintf(m->dir, sizeof m->dir, "%s",
             o->oom_dir  ? o->oom_dir
             : o->outdir ? o->outdir
                         : ".");
    char why[160] = "";
    if (gpu_nvml_open(&m->nvml, o->nvml_lib, why, sizeof why))
        snprintf(m->nvml_why, sizeof m->nvml_why, "NVML unavailable (%s)", why);
    s->agg.hook = hook;
    s->agg.hook_ctx = m;
    *out = m;
    return 0;
}

void mp_oom_meminfo(mp_oom *m, const struct mp_event *e)
{
    m->meminfo = *e;
    m->have_meminfo = 1;
}

void mp_oom_tick(mp_oom *m)
{
    uint64_t now = mp_now_mono();
    for (size_t i = 0; i < m->nprocs; i++)
        if (m->procs[i].open && now >= m->procs[i].open->ts + m->settle_ns)
            settle(m, &m->procs[i]);
}

int mp_oom_finish(mp_oom *m)
{
    for (size_t i = 0; i < m->nprocs; i++) {
        oom_proc *op = &m->procs[i];
        if (op->open) {
            /* --preload ends when every process of the command has */
            if (m->s->o->mode == MEMPROF_PRELOAD)
                op->open->exited = 1;
            settle(m, op);
        }
        if (op->suppressed)
            glog_warn("oom",
                      "%llu more OOMs of pid %u not reported "
                      "(--oom-max %u)",
                      (unsigned long long)op->suppressed, op->pid,
                      m->max_reports);
    }
    return m->failed;
}

void mp_oom_free(mp_oom *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nprocs; i++) {
        free(m->procs[i].ring);
        report_free(m->procs[i].open);
    }
    free(m->procs);
    gpu_nvml_close(m->nvml);
    if (m->s->agg.hook_ctx == m) {
        m->s->agg.hook = NULL;
        m->s->agg.hook_ctx = NULL;
    }
    free(m);
}
