/*
 * idle_kern.c - exact GPU busy time and kernel progress of the processes
 * that run under gpufl, from their sessions' device streams
 * (<prefix>.device.log in --gpufl-logs, docs/events.md): the union of a
 * session's kernel intervals on a device is the time it kept that GPU
 * busy, measured by CUPTI rather than sampled by NVML, and a kernel that
 * completed is progress that STUCK must not ignore.
 *
 * Each round reads what the live files gained (at most KERN_READ_MAX
 * bytes a file; the rest next round), maps each session's devices to the
 * idle GPUs (device uuid; under MIG the GPU instance NVML lists the
 * session's pid in), and keeps per session and device: the busy time read
 * this round (the union of the new intervals, each clipped to what was
 * already counted, so overlapping streams count once) and the newest
 * kernel completion.  Kernels that ended before the daemon first saw the
 * file are history, not this daemon's to count.  Rotated files
 * (.device.log.N) are not read: the live file is where new kernels land.
 */
#include "idle.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gpufl/gpufl.h>

#include "common/jsonl.h"

#define KERN_FILES_MAX 256 /* device logs followed */
#define KERN_DEVS IDLE_KERN_DEVS
#define KERN_READ_MAX (1u << 20) /* bytes read per file and round */
#define KERN_IVL_MAX 65536       /* intervals sorted at once */
#define KERN_SCAN_NS (5 * IDLE_NS)
#define KERN_TOK 256

typedef struct kern_dev {
    char uuid[96];
    int gpu;           /* idle GPU index, -1 = not mapped */
    uint64_t covered;  /* end of the union counted so far, ns */
    uint64_t last_end; /* newest completion, ns */
    uint64_t busy_ns;  /* this round */
} kern_dev;

typedef struct kern_file {
    char name[256];
    ino_t ino;
    uint64_t off;   /* bytes consumed (complete lines) */
    uint64_t since; /* first seen: earlier kernels are not counted */
    uint32_t pid;
    int ended, seen;
    int done; /* ended before this round: its last kernels were counted */
    kern_dev dev[KERN_DEVS];
} kern_file;

typedef struct kern_ivl {
    uint64_t start, end;
    int dev;
} kern_ivl;

struct idle_kern {
    char dir[512];
    uint64_t scan_ts;
    kern_file *f;
    int nf;
    char *buf;     /* KERN_READ_MAX */
    kern_ivl *ivl; /* KERN_IVL_MAX */
    int nivl;
    jsonl_tok tok[KERN_TOK];
    jsonl_doc doc;
};

int idle_kern_new(idle_kern **out, const char *dir)
{
    idle_kern *k = calloc(1, sizeof *k);
    *out = NULL;
    if (!k)
        return GPUFL_ENOMEM;
    k->f = calloc(KERN_FILES_MAX, sizeof *k->f);
    k->buf = malloc(KERN_READ_MAX);
    k->ivl = malloc(KERN_IVL_MAX * sizeof *k->ivl);
    if (!k->f || !k->buf || !k->ivl) {
        idle_kern_free(k);
        return GPUFL_ENOMEM;
    }
    snprintf(k->dir, sizeof k->dir, "%s", dir);
    jsonl_doc_init(&k->doc, k->tok, KERN_TOK);
    *out = k;
    return 0;
}

void idle_kern_free(idle_kern *k)
{
    if (!k)
        return;
    free(k->f);
    free(k->buf);
    free(k->ivl);
    free(k);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !memcmp(s + n - m, suffix, m);
}

/* New live device logs join, vanished ones leave (a restarted session
 * writes a new file: another inode under the same name starts over). */
static void kern_scan(idle_kern *k, uint64_t now)
{
    DIR *d = opendir(k->dir);
    struct dirent *e;
    if (!d)
        return;
    for (int i = 0; i < k->nf; i++)
        k->f[i].seen = 0;
    while ((e = readdir(d)) != NULL) {
        char path[1024];
        struct stat st;
        kern_file *f = NULL;
        if (!ends_with(e->d_name, ".device.log") ||
            strlen(e->d_name) >= sizeof f->name)
            continue;
        snprintf(path, sizeof path, "%s/%s", k->dir, e->d_name);
        if (stat(path, &st) || !S_ISREG(st.st_mode))
            continue;
        for (int i = 0; i < k->nf && !f; i++)
            if (!strcmp(k->f[i].name, e->d_name) && k->f[i].ino == st.st_ino)
                f = &k->f[i];
        if (!f && k->nf < KERN_FILES_MAX) {
            f = &k->f[k->nf++];
            memset(f, 0, sizeof *f);
            snprintf(f->name, sizeof f->name, "%s", e->d_name);
            f->ino = st.st_ino;
            f->since = now;
            for (int j = 0; j < KERN_DEVS; j++)
                f->dev[j].gpu = -1;
        }
        if (f)
            f->seen = 1;
    }
    closedir(d);
    for (int i = 0; i < k->nf;)
        if (!k->f[i].seen)
            k->f[i] = k->f[--k->nf];
        else
            i++;
}

static void kern_session(idle_kern *k, kern_file *f)
{
    jsonl_doc *d = &k->doc;
    uint32_t devs = jsonl_doc_find(d, "devices");
    uint64_t pid = 0;
    if (!jsonl_tok_u64(d, jsonl_doc_find(d, "pid"), &pid))
        f->pid = (uint32_t)pid;
    if (jsonl_tok_type(d, devs) != JSONL_ARRAY)
        return;
    for (uint32_t t = devs + 1, i = 0; i < d->tok[devs].n;
         i++, t = d->tok[t].next) {
        uint64_t id = 0;
        if (jsonl_tok_u64(d, jsonl_obj_find(d, t, "id"), &id) ||
            id >= KERN_DEVS)
            continue;
        size_t ulen = 0;
        if (jsonl_tok_str(d, jsonl_obj_find(d, t, "uuid"), f->dev[id].uuid,
                          sizeof f->dev[id].uuid, &ulen))
            f->dev[id].uuid[0] = 0;
    }
}

static int ivl_cmp(const void *a, const void *b)
{
    const kern_ivl *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev - y->dev;
    return (x->start > y->start) - (x->start < y->start);
}

/* The batch's intervals, sorted, into each device's union: only the part
 * past what was counted already is busy time. */
static void kern_merge(idle_kern *k, kern_file *f)
{
    qsort(k->ivl, (size_t)k->nivl, sizeof *k->ivl, ivl_cmp);
    for (int i = 0; i < k->nivl; i++) {
        const kern_ivl *v = &k->ivl[i];
        kern_dev *dv = &f->dev[v->dev];
        uint64_t from = v->start > dv->covered ? v->start : dv->covered;
        if (v->end > dv->last_end)
            dv->last_end = v->end;
        if (v->end <= f->since)
            continue; /* history, before this daemon looked */
        if (from < f->since)
            from = f->since;
        if (v->end > from)
            dv->busy_ns += v->end - from;
        if (v->end > dv->covered)
            dv->covered = v->end;
    }
    k->nivl = 0;
}

static void kern_line(idle_kern *k, kern_file *f, const char *line, size_t len)
{
    jsonl_doc *d = &k->doc;
    uint32_t type;
    uint64_t ts = 0, dur = 0, dev = 0;
    if (jsonl_doc_parse_obj(d, line, len))
        return; /* a torn or foreign line: the next ones still count */
    type = jsonl_doc_find(d, "type");
    if (jsonl_tok_streq(d, type, "session", 7)) {
        kern_session(k, f);
        return;
    }
    if (jsonl_tok_streq(d, type, "session_end", 11)) {
        f->ended = 1;
        return;
    }
    if (!jsonl_tok_streq(d, type, "kernel", 6) ||
        jsonl_tok_u64(d, jsonl_doc_find(d, "ts"), &ts) ||
        jsonl_tok_u64(d, jsonl_doc_find(d, "dur"), &dur))
        return;
    if (jsonl_doc_find(d, "dev") != JSONL_NOTFOUND &&
        jsonl_tok_u64(d, jsonl_doc_find(d, "dev"), &dev))
        return;
    if (dev >= KERN_DEVS)
        return;
    if (k->nivl == KERN_IVL_MAX)
        kern_merge(k, f);
    k->ivl[k->nivl++] = (kern_ivl){ ts, ts + dur, (int)dev };
}

/* The complete lines of text[0, len) into f: the bytes consumed. */
static size_t kern_text(idle_kern *k, kern_file *f, const char *text,
                        size_t len)
{
    const char *line;
    size_t pos = 0, n;
    while (jsonl_line_next(text, len, &pos, &line, &n))
        if (n)
            kern_line(k, f, line, n);
    kern_merge(k, f);
    return pos;
}

static void kern_read(idle_kern *k, kern_file *f)
{
    char path[1024];
    ssize_t got;
    size_t pos;
    int fd;
    snprintf(path, sizeof path, "%s/%s", k->dir, f->name);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    got = pread(fd, k->buf, KERN_READ_MAX, (off_t)f->off);
    close(fd);
    if (got <= 0)
        return;
    pos = kern_text(k, f, k->buf, (size_t)got);
    if (!pos && (size_t)got == KERN_READ_MAX)
        pos = (size_t)got; /* one line longer than the buffer: skipped */
    f->off += pos;
}

uint64_t idle_kern_parse(idle_kern *k, const char *text, size_t len,
                         uint64_t since, int dev, uint64_t *last_end)
{
    static kern_file f; /* large; one parse at a time (tests, fuzzer) */
    uint64_t busy = 0;
    memset(&f, 0, sizeof f);
    f.since = since;
    kern_text(k, &f, text, len);
    *last_end = 0;
    for (int j = 0; j < KERN_DEVS; j++) {
        if (dev < 0 || dev == j)
            busy += f.dev[j].busy_ns;
        if (f.dev[j].last_end > *last_end)
            *last_end = f.dev[j].last_end;
    }
    return busy;
}

/* The idle GPU a session device runs on: the GPU with its uuid (under
 * MIG, of its GPU instances) whose NVML process list has the session's
 * pid (a host PID: the daemon needs the host's PID namespace, §2). */
static int kern_gpu(const kern_file *f, const kern_dev *dv,
                    const idle_gpu *gpus, int ngpus)
{
    if (!dv->uuid[0])
        return -1;
    for (int g = 0; g < ngpus; g++) {
        const gpu_sample *s = &gpus[g].last;
        if (strcmp(gpus[g].info.uuid, dv->uuid))
            continue;
        /* the process must be on it now: a session that died without its
         * session_end line holds no GPU */
        for (uint32_t p = 0; p < s->nprocs; p++)
            if (s->procs[p].pid == f->pid)
                return g;
    }
    return -1;
}

void idle_kern_round(idle_kern *k, idle_gpu *gpus, int ngpus, uint64_t now)
{
    if (!k->scan_ts || now - k->scan_ts >= KERN_SCAN_NS) {
        kern_scan(k, now);
        k->scan_ts = now;
    }
    for (int g = 0; g < ngpus; g++) {
        gpus[g].kern_sessions = 0;
        gpus[g].kern_last_end = 0;
    }
    for (int i = 0; i < k->nf; i++) {
        kern_file *f = &k->f[i];
        for (int j = 0; j < KERN_DEVS; j++)
            f->dev[j].busy_ns = 0;
        /* the round that reads session_end still counts the kernels
         * before it */
        f->done = f->ended;
        if (!f->done)
            kern_read(k, f);
        for (int j = 0; j < KERN_DEVS; j++) {
            kern_dev *dv = &f->dev[j];
            dv->gpu = f->done ? -1 : kern_gpu(f, dv, gpus, ngpus);
            if (dv->gpu < 0)
                continue;
            gpus[dv->gpu].kern_sessions++;
            if (dv->last_end > gpus[dv->gpu].kern_last_end)
                gpus[dv->gpu].kern_last_end = dv->last_end;
        }
    }
}

int idle_kern_busy(const idle_kern *k, int gpu, uint32_t pid, double *busy_s)
{
    int found = 0;
    uint64_t ns = 0;
    for (int i = 0; i < k->nf; i++) {
        const kern_file *f = &k->f[i];
        if (f->pid != pid || f->done)
            continue;
        for (int j = 0; j < KERN_DEVS; j++)
            if (f->dev[j].gpu == gpu) {
                found = 1;
                ns += f->dev[j].busy_ns;
            }
    }
    *busy_s = (double)ns / 1e9;
    return found ? 0 : GPUFL_ENOTFOUND;
}
