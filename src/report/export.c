/*
 * export.c - `gpufl export`: a Chrome trace-event JSON file (the "JSON
 * Array/Object Format" that chrome://tracing and Perfetto's UI open).
 *
 * Layout, per session (pids are small numbers, named by metadata events):
 *   - one process per session for the host side: scopes as nested "X"
 *     slices on their OS threads, syncs and kernel launch calls on the
 *     launching thread, markers as instants, gpufl counters and host
 *     samples as counter tracks;
 *   - one process per GPU: kernels, copies and memsets as "X" slices on a
 *     track per stream, GPU samples (utilisation, memory, temperature,
 *     power, SM clock) and live allocated bytes as counter tracks;
 *   - a flow arrow from each kernel's launch call to the kernel.
 * Times are microseconds (3 decimals, so ns are kept) from the start of
 * the earliest exported session.  Events are written as they are read, so
 * memory does not grow with the session; the file is O(events).
 */
#include <stdlib.h>
#include <string.h>

#include "common/jw.h"
#include "common/trace.h"
#include "gpufl/gpufl.h"
#include "report.h"
#include "report_int.h"

#define PIDS_PER_SESSION 32
#define TRACKS_MAX 4096

typedef struct exp {
    FILE *f;
    jw w;
    char buf[65536];
    uint64_t base;
    int host_pid;
    uint64_t events, flows, nfirst;
    /* tracks already named: (pid, tid) */
    uint64_t track[TRACKS_MAX];
    size_t ntrack;
    uint64_t live[RPT_MAX_DEV];
    int dev_named[RPT_MAX_DEV];
    const rpt_files *files;
} exp;

static void ev_begin(exp *x)
{
    jw_reset(&x->w);
    x->w.depth = 0;
    x->w.comma = 0;
    jw_obj_begin(&x->w);
}

static void ev_end(exp *x)
{
    jw_obj_end(&x->w);
    if (x->w.err)
        return; /* a line longer than 64 KiB: cannot happen with the caps */
    if (x->nfirst++)
        fputs(",\n", x->f);
    fwrite(x->w.buf, 1, x->w.len, x->f);
    x->events++;
}

/* The event members: common/trace.h, shared with gpufl-server's export. */
static void kv_common(exp *x, const char *ph, int pid, uint64_t tid)
{
    trace_ph(&x->w, ph, pid, tid);
}

static void meta(exp *x, const char *what, int pid, uint64_t tid,
                 const char *name, int sort)
{
    ev_begin(x);
    trace_meta(&x->w, what, pid, tid, name);
    ev_end(x);
    if (sort >= 0) {
        ev_begin(x);
        trace_sort(&x->w,
                   !strcmp(what, "process_name") ? "process_sort_index"
                                                 : "thread_sort_index",
                   pid, tid, sort);
        ev_end(x);
    }
}

static int dev_pid(exp *x, rpt_ctx *c, uint64_t dev)
{
    int pid;
    if (dev >= RPT_MAX_DEV)
        dev = RPT_MAX_DEV - 1;
    pid = x->host_pid + 1 + (int)dev;
    if (!x->dev_named[dev]) {
        char name[256];
        const rpt_devinfo *d = &c->hdr.dev[dev];
        x->dev_named[dev] = 1;
        snprintf(name, sizeof name, "GPU %llu: %s%s (%s)",
                 (unsigned long long)dev, d->name[0] ? d->name : "?",
                 d->simulated || c->hdr.simulated ? " [SIMULATED]" : "",
                 c->hdr.app);
        meta(x, "process_name", pid, 0, name, pid);
    }
    return pid;
}

/* Names a (pid, tid) track the first time it is used. */
static void track(exp *x, int pid, uint64_t tid, const char *kind)
{
    uint64_t key = ((uint64_t)pid << 40) ^ tid;
    char name[64];
    for (size_t i = 0; i < x->ntrack; i++)
        if (x->track[i] == key)
            return;
    if (x->ntrack == TRACKS_MAX)
        return;
    x->track[x->ntrack++] = key;
    if (!strcmp(kind, "stream"))
        snprintf(name, sizeof name, "stream %llu", (unsigned long long)tid);
    else if (tid)
        snprintf(name, sizeof name, "thread %llu", (unsigned long long)tid);
    else
        snprintf(name, sizeof name, "launches (thread unknown)");
    meta(x, "thread_name", pid, tid, name, -1);
}

static void kv_name(exp *x, rpt_ctx *c, const char *k, uint32_t id,
                    const char *dflt)
{
    size_t n;
    const char *s = rpt_name(c, id, &n);
    jw_key(&x->w, k);
    if (n)
        jw_strn(&x->w, s, n, n);
    else
        jw_str(&x->w, dflt);
}

static void on_kernel(exp *x, rpt_ctx *c, const rpt_line *ln)
{
    jsonl_doc *d = ln->d;
    uint64_t dev = rpt_u64(d, "dev", 0), stream = rpt_u64(d, "stream", 0);
    uint64_t dur = rpt_u64(d, "dur", 0), cfg = rpt_u64(d, "cfg", 0);
    uint64_t sc = rpt_u64(d, "scope", 0), corr = rpt_u64(d, "corr", 0);
    const rpt_dict *l = rpt_dict_get(c, (uint32_t)cfg, DK_LAUNCH);
    const rpt_inst *in = rpt_inst_get(c, sc);
    uint32_t name = l ? l->name : (uint32_t)rpt_u64(d, "name", 0);
    uint32_t grid[3], api = jsonl_doc_find(d, "api");
    int pid = dev_pid(x, c, dev);
    int64_t a0, a1;
    char path[512];
    rpt_dims(d, jsonl_doc_find(d, "grid"), grid);
    track(x, pid, stream, "stream");
    ev_begin(x);
    kv_name(x, c, "name", name, "(unknown kernel)");
    trace_slice(&x->w, "kernel", pid, stream, x->base, ln->ts, dur);
    jw_key(&x->w, "args");
    jw_obj_begin(&x->w);
    rpt_json_dims(&x->w, "grid", grid);
    if (l) {
        rpt_json_dims(&x->w, "block", l->block);
        jw_kv_u64(&x->w, "regs", l->regs);
        jw_kv_u64(&x->w, "smem", (uint64_t)l->smem + l->dsmem);
        if (l->lmem)
            jw_kv_u64(&x->w, "lmem", l->lmem);
        if (l->has_occ) {
            jw_key(&x->w, "occ");
            jw_f64(&x->w, l->occ, 4);
            jw_kv_str(&x->w, "lim", l->lim);
        }
    }
    if (corr)
        jw_kv_u64(&x->w, "corr", corr);
    if (in || rpt_has(d, "path"))
        jw_kv_str(&x->w, "scope",
                  rpt_path_str(c,
                               in ? in->path : (uint32_t)rpt_u64(d, "path", 0),
                               path, sizeof path));
    jw_obj_end(&x->w);
    ev_end(x);
    /* the launch call on the host and an arrow to the kernel */
    if (jsonl_tok_type(d, api) != JSONL_ARRAY || d->tok[api].n != 2 ||
        jsonl_tok_i64(d, api + 1, &a0) ||
        jsonl_tok_i64(d, d->tok[api + 1].next, &a1) || a1 < 0 ||
        (a0 < 0 && (uint64_t)-a0 > ln->ts))
        return;
    {
        uint64_t enter = (uint64_t)((int64_t)ln->ts + a0);
        /* the launching thread: the line's own (docs/events.md), else the
         * thread of the scope it ran in */
        uint64_t tid = rpt_u64(d, "tid", in ? in->tid : 0), id = ++x->flows;
        track(x, x->host_pid, tid, "thread");
        ev_begin(x);
        jw_kv_str(&x->w, "name", "cudaLaunchKernel");
        trace_slice(&x->w, "launch", x->host_pid, tid, x->base, enter,
                    (uint64_t)a1);
        ev_end(x);
        ev_begin(x);
        trace_flow(&x->w, 0, id, x->host_pid, tid, x->base, enter);
        ev_end(x);
        ev_begin(x);
        trace_flow(&x->w, 1, id, pid, stream, x->base, ln->ts);
        ev_end(x);
    }
}

static void on_copy(exp *x, rpt_ctx *c, const rpt_line *ln)
{
    jsonl_doc *d = ln->d;
    uint64_t dev = rpt_u64(d, "dev", 0), stream = rpt_u64(d, "stream", 0);
    int pid = dev_pid(x, c, dev);
    char kind[16], name[48];
    rpt_str(d, "kind", kind, sizeof kind);
    snprintf(name, sizeof name, ln->type == RT_MEMSET ? "memset" : "memcpy %s",
             kind);
    track(x, pid, stream, "stream");
    ev_begin(x);
    jw_kv_str(&x->w, "name", name);
    jw_kv_str(&x->w, "cat", ln->type == RT_MEMSET ? "memset" : "memcpy");
    kv_common(x, "X", pid, stream);
    trace_us(&x->w, "ts", x->base, ln->ts);
    trace_us(&x->w, "dur", 0, rpt_u64(d, "dur", 0));
    jw_key(&x->w, "args");
    jw_obj_begin(&x->w);
    jw_kv_u64(&x->w, "bytes", rpt_u64(d, "bytes", 0));
    if (rpt_has(d, "gbps")) {
        jw_key(&x->w, "gbps");
        jw_f64(&x->w, rpt_f64(d, "gbps", 0), 2);
    }
    if (rpt_u64(d, "pinned", 0))
        jw_kv_u64(&x->w, "pinned", 1);
    jw_obj_end(&x->w);
    ev_end(x);
}

static void counter(exp *x, int pid, const char *name, uint64_t ts,
                    const char *k, double v, int dec)
{
    ev_begin(x);
    jw_kv_str(&x->w, "name", name);
    kv_common(x, "C", pid, 0);
    trace_us(&x->w, "ts", x->base, ts);
    jw_key(&x->w, "args");
    jw_obj_begin(&x->w);
    jw_key(&x->w, k);
    jw_f64(&x->w, v, dec);
    jw_obj_end(&x->w);
    ev_end(x);
}

static void on_gpu(exp *x, rpt_ctx *c, const rpt_line *ln)
{
    jsonl_doc *d = ln->d;
    int pid = dev_pid(x, c, rpt_u64(d, "dev", 0));
    if (rpt_has(d, "util"))
        counter(x, pid, "GPU utilisation %", ln->ts, "util",
                (double)rpt_u64(d, "util", 0), 0);
    if (rpt_has(d, "mem_used"))
        counter(x, pid, "VRAM used (GiB)", ln->ts, "GiB",
                rpt_u64(d, "mem_used", 0) / 1073741824.0, 3);
    if (rpt_has(d, "temp"))
        counter(x, pid, "temperature (C)", ln->ts, "C",
                (double)rpt_i64(d, "temp", 0), 0);
    if (rpt_has(d, "power"))
        counter(x, pid, "power (W)", ln->ts, "W",
                rpt_u64(d, "power", 0) / 1000.0, 1);
    if (rpt_has(d, "clk_sm"))
        counter(x, pid, "SM clock (MHz)", ln->ts, "MHz",
                (double)rpt_u64(d, "clk_sm", 0), 0);
    if (rpt_has(d, "throttle"))
        counter(x, pid, "throttle reasons (bits)", ln->ts, "bits",
                (double)rpt_u64(d, "throttle", 0), 0);
}

static void on_scope_end(exp *x, rpt_ctx *c, const rpt_line *ln)
{
    jsonl_doc *d = ln->d;
    uint64_t dur = rpt_u64(d, "dur", 0), tid = rpt_u64(d, "tid", 0);
    char path[1024];
    if (dur > ln->ts)
        return;
    track(x, x->host_pid, tid, "thread");
    ev_begin(x);
    kv_name(x, c, "name", (uint32_t)rpt_u64(d, "name", 0), "(scope)");
    jw_kv_str(&x->w, "cat", "scope");
    kv_common(x, "X", x->host_pid, tid);
    trace_us(&x->w, "ts", x->base, ln->ts - dur);
    trace_us(&x->w, "dur", 0, dur);
    jw_key(&x->w, "args");
    jw_obj_begin(&x->w);
    jw_kv_str(
        &x->w, "path",
        rpt_path_str(c, (uint32_t)rpt_u64(d, "path", 0), path, sizeof path));
    jw_kv_u64(&x->w, "id", rpt_u64(d, "id", 0));
    jw_obj_end(&x->w);
    ev_end(x);
}

static int visit(void *ud, rpt_ctx *c, const rpt_line *ln)
{
    exp *x = ud;
    jsonl_doc *d = ln->d;
    switch (ln->type) {
    case RT_KERNEL: on_kernel(x, c, ln); break;
    case RT_MEMCPY:
    case RT_MEMSET: on_copy(x, c, ln); break;
    case RT_SCOPE_END: on_scope_end(x, c, ln); break;
    case RT_GPU: on_gpu(x, c, ln); break;
    case RT_SYNC: {
        uint64_t tid = rpt_u64(d, "tid", 0);
        char kind[24], name[40];
        rpt_str(d, "kind", kind, sizeof kind);
        snprintf(name, sizeof name, "sync %s", kind);
        track(x, x->host_pid, tid, "thread");
        ev_begin(x);
        jw_kv_str(&x->w, "name", name);
        jw_kv_str(&x->w, "cat", "sync");
        kv_common(x, "X", x->host_pid, tid);
        trace_us(&x->w, "ts", x->base, ln->ts);
        trace_us(&x->w, "dur", 0, rpt_u64(d, "dur", 0));
        ev_end(x);
        break;
    }
    case RT_ALLOC:
    case RT_FREE: {
        uint64_t dev = rpt_u64(d, "dev", 0) % RPT_MAX_DEV;
        uint64_t b = rpt_u64(d, "bytes", 0);
        if (ln->type == RT_ALLOC)
            x->live[dev] += b;
        else
            x->live[dev] = x->live[dev] > b ? x->live[dev] - b : 0;
        counter(x, dev_pid(x, c, dev), "allocated (GiB)", ln->ts, "GiB",
                x->live[dev] / 1073741824.0, 3);
        break;
    }
    case RT_MARKER: {
        char text[128];
        uint64_t tid = rpt_u64(d, "tid", 0);
        rpt_str(d, "text", text, sizeof text);
        track(x, x->host_pid, tid, "thread");
        ev_begin(x);
        jw_kv_str(&x->w, "name", text);
        jw_kv_str(&x->w, "cat", "marker");
        kv_common(x, "i", x->host_pid, tid);
        jw_kv_str(&x->w, "s", "t");
        trace_us(&x->w, "ts", x->base, ln->ts);
        ev_end(x);
        break;
    }
    case RT_COUNTER: {
        size_t n;
        char name[160];
        const char *s = rpt_name(c, (uint32_t)rpt_u64(d, "name", 0), &n);
        snprintf(name, sizeof name, "%.*s", (int)n, n ? s : "(counter)");
        counter(x, x->host_pid, name, ln->ts, "value",
                (double)rpt_i64(d, "value", 0), 0);
        break;
    }
    case RT_HOST:
        if (rpt_has(d, "cpu"))
            counter(x, x->host_pid, "host CPU %", ln->ts, "cpu",
                    rpt_f64(d, "cpu", 0), 1);
        counter(x, x->host_pid, "host RAM used (GiB)", ln->ts, "GiB",
                rpt_u64(d, "ram_used", 0) / 1073741824.0, 3);
        if (rpt_has(d, "proc_cpu"))
            counter(x, x->host_pid, "process CPU %", ln->ts, "cpu",
                    rpt_f64(d, "proc_cpu", 0), 1);
        break;
    case RT_SESSION:
        if (!x->ntrack) { /* first line: name the host process */
            char name[512];
            snprintf(name, sizeof name, "%s pid %llu on %s%s (session %.8s)",
                     c->hdr.app, (unsigned long long)c->hdr.pid, c->hdr.host,
                     c->hdr.simulated ? " [SIMULATED GPU]" : "", c->hdr.sid);
            meta(x, "process_name", x->host_pid, 0, name, x->host_pid);
            x->track[x->ntrack++] = UINT64_MAX; /* named */
        }
        break;
    default: break;
    }
    return ferror(x->f) ? 1 : 0;
}

int rpt_export_run(const char *dir, const char *session, const char *format,
                   const char *path, FILE *log, char *err, size_t errlen)
{
    rpt_folder fo;
    char *pick = NULL;
    exp *x = NULL;
    int rc;
    if (strcmp(format, "chrome-trace") && strcmp(format, "perfetto")) {
        snprintf(err, errlen,
                 "unknown format \"%s\" (chrome-trace or perfetto)", format);
        return GPUFL_EINVAL;
    }
    rc = rpt_folder_scan(dir, &fo, err, errlen);
    if (rc)
        return rc;
    rpt_folder_warn(&fo, log ? log : stderr);
    pick = calloc(fo.n ? fo.n : 1, 1);
    x = calloc(1, sizeof *x);
    if (!pick || !x) {
        snprintf(err, errlen, "out of memory");
        rc = GPUFL_ENOMEM;
        goto out;
    }
    if (!rpt_folder_pick(&fo, session, pick)) {
        snprintf(err, errlen, "no %s%s in %s",
                 session ? "session " : "gpufl logs", session ? session : "",
                 dir);
        rc = GPUFL_ENOTFOUND;
        goto out;
    }
    x->f = fopen(path, "we");
    if (!x->f) {
        snprintf(err, errlen, "cannot create %s", path);
        rc = GPUFL_EIO;
        goto out;
    }
    setvbuf(x->f, NULL, _IOFBF, 1 << 20);
    jw_init(&x->w, x->buf, sizeof x->buf);
    x->base = UINT64_MAX;
    for (size_t i = 0; i < fo.n; i++)
        if (pick[i] && fo.s[i].start && fo.s[i].start < x->base)
            x->base = fo.s[i].start;
    if (x->base == UINT64_MAX)
        x->base = 0;
    fprintf(x->f,
            "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":"
            "\"gpufl export\",\"format\":\"%s\",\"base_ns\":%llu},"
            "\"traceEvents\":[\n",
            format, (unsigned long long)x->base);
    for (size_t i = 0, k = 0; i < fo.n; i++) {
        rpt_ctx c;
        uint64_t before = x->events;
        if (!pick[i])
            continue;
        x->host_pid = 1 + (int)(k++ * PIDS_PER_SESSION);
        x->ntrack = 0;
        memset(x->live, 0, sizeof x->live);
        memset(x->dev_named, 0, sizeof x->dev_named);
        x->files = &fo.s[i];
        if (rpt_ctx_init(&c)) {
            snprintf(err, errlen, "out of memory");
            rc = GPUFL_ENOMEM;
            goto out;
        }
        rc = rpt_session_read(&c, &fo.s[i], visit, x, err, errlen);
        if (log)
            fprintf(log, "session %s%s: %llu trace events\n", c.hdr.sid,
                    c.hdr.simulated ? " (simulated)" : "",
                    (unsigned long long)(x->events - before));
        rpt_ctx_release(&c);
        if (rc)
            goto out;
    }
    fputs("\n]}\n", x->f);
    if (fflush(x->f) || ferror(x->f)) {
        snprintf(err, errlen, "writing %s failed", path);
        rc = GPUFL_EIO;
    }
out:
    if (x && x->f && fclose(x->f) && !rc) {
        snprintf(err, errlen, "writing %s failed", path);
        rc = GPUFL_EIO;
    }
    if (!rc && log)
        fprintf(log, "wrote %s: %llu events, %llu launch arrows\n", path,
                (unsigned long long)x->events, (unsigned long long)x->flows);
    free(x);
    free(pick);
    rpt_folder_release(&fo);
    return rc;
}
