/*
 * import.c - `gpufl import`: the original GPU Flight client's v1 logs
 * (reference/gpuflight-original.md 1.8-1.9) rewritten in gpufl's format
 * (docs/events.md), so its users keep their history.
 *
 * Input: the v1.2+ layout, one folder per session under DIR:
 *   <sid>/<channel>.<N>.log.gz (N = 1 oldest), <sid>/.tmp/<channel>.<N>.log
 *   (retired, not yet gzipped) and <sid>/.tmp/<channel>.log (active).
 * zlib's gzread reads gzip and plain files alike.  Two passes per session:
 * the first collects job_start, the merged dictionaries and shutdown (the
 * original triplicates them into every channel), the second converts
 * events, each into the gpufl stream it belongs to.  Dictionary entries
 * (names by content, scope paths, launch configurations) get new ids and
 * are written into an output file before the first line that uses them.
 * Every id is kept in a table for the session: memory grows with distinct
 * names, not with events.
 *
 * This file finds the files and runs the passes; import_dict.c keeps the
 * dictionary and writes lines, import_conv.c converts each kind of line.
 *
 * What the original lacks is written as the format says for unknown:
 * device ids of kernels and copies (never logged) become 0, thread ids 0,
 * a kernel without its kernel_detail line gets block and grid [0].
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "common/jw.h"
#include "gpufl/gpufl.h"
#include "report.h"
#include "import_int.h"

/* ---- files --------------------------------------------------------------- */

typedef struct flist {
    char **p;
    size_t n;
} flist;

static int num_cmp(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    const char *dx = strrchr(x, '/'), *dy = strrchr(y, '/');
    unsigned long long nx, ny;
    /* "<ch>.<N>.log[.gz]": by N; the active "<ch>.log" (no N) last */
    nx = strchr(dx + 1, '.') && sscanf(strchr(dx + 1, '.') + 1, "%llu", &nx)
             ? nx
             : ~0ull;
    ny = strchr(dy + 1, '.') && sscanf(strchr(dy + 1, '.') + 1, "%llu", &ny)
             ? ny
             : ~0ull;
    if (nx != ny)
        return nx < ny ? -1 : 1;
    return strcmp(x, y);
}

/* The files of one channel of a session folder, in order. */
static int channel_files(const char *sdir, const char *ch, flist *out)
{
    const char *sub[2] = { "", "/.tmp" };
    memset(out, 0, sizeof *out);
    for (int s = 0; s < 2; s++) {
        char dpath[RPT_PATH_MAX];
        DIR *d;
        struct dirent *de;
        if ((size_t)snprintf(dpath, sizeof dpath, "%s%s", sdir, sub[s]) >=
                sizeof dpath ||
            !(d = opendir(dpath)))
            continue;
        while ((de = readdir(d))) {
            size_t cl = strlen(ch);
            const char *r = de->d_name + cl;
            char **np, full[RPT_PATH_MAX];
            unsigned long long n;
            int ok;
            if (strncmp(de->d_name, ch, cl) || *r != '.')
                continue;
            ok = (s == 0 && sscanf(r, ".%llu.log", &n) == 1 &&
                  strstr(r, ".log.gz") && !strstr(r, ".part")) ||
                 (s == 1 &&
                  (!strcmp(r, ".log") || (sscanf(r, ".%llu.log", &n) == 1 &&
                                          !strcmp(strstr(r, ".log"), ".log"))));
            if (!ok)
                continue;
            if (s == 1 && strcmp(r, ".log")) {
                /* a retired window also published as .gz: read it once */
                char gz[RPT_PATH_MAX];
                struct stat st;
                if ((size_t)snprintf(gz, sizeof gz, "%s/%s.gz", sdir,
                                     de->d_name) >= sizeof gz ||
                    !stat(gz, &st))
                    continue;
            }
            if ((size_t)snprintf(full, sizeof full, "%s/%s", dpath,
                                 de->d_name) >= sizeof full)
                continue;
            np = realloc(out->p, (out->n + 1) * sizeof *np);
            if (!np || !(np[out->n] = strdup(full))) {
                closedir(d);
                out->p = np ? np : out->p;
                return -1;
            }
            out->p = np;
            out->n++;
        }
        closedir(d);
    }
    if (out->n)
        qsort(out->p, out->n, sizeof *out->p, num_cmp);
    return 0;
}

typedef int (*line_fn)(imp *m, jsonl_doc *d, int pass);

/* Every line of every channel file of the session, in channel order. */
static int each_line(imp *m, flist *fl, line_fn fn, int pass, char *buf,
                     jsonl_doc *d)
{
    for (int c = 0; c < RPT_NST; c++)
        for (size_t i = 0; i < fl[c].n; i++) {
            gzFile g = gzopen(fl[c].p[i], "rb");
            if (!g)
                continue;
            while (gzgets(g, buf, IMP_LINE_MAX)) {
                size_t n = strlen(buf);
                if (!n || buf[n - 1] != '\n')
                    continue; /* a cut last line, or one over the cap */
                if (jsonl_doc_parse_obj(d, buf, n - 1))
                    continue;
                fn(m, d, pass);
            }
            gzclose(g);
            if (pass == 2)
                imp_flush_pending(m);
        }
    return 0;
}

static int line_pass(imp *m, jsonl_doc *d, int pass)
{
    uint32_t t = jsonl_doc_find(d, "type");
    uint64_t base = rpt_u64(d, "base_time_ns", 0);
    char type[64];
    size_t n;
    if (jsonl_tok_str(d, t, type, sizeof type, &n))
        return 0;
    if (pass == 1) {
        if (!strcmp(type, "job_start"))
            imp_read_job_start(m, d);
        else if (!strcmp(type, "dictionary_update"))
            imp_read_dicts(m, d);
        else if (!strcmp(type, "shutdown"))
            m->end = rpt_u64(d, "ts_ns", 0);
        return 0;
    }
    if (strcmp(type, "kernel_detail"))
        imp_flush_pending(m);
    if (!strcmp(type, "kernel_event_batch"))
        imp_on_kernel_batch(m, d, base);
    else if (!strcmp(type, "kernel_detail"))
        imp_on_kernel_detail(m, d);
    else if (!strcmp(type, "memcpy_event_batch"))
        imp_on_memcpy_batch(m, d, base);
    else if (!strcmp(type, "synchronization_event_batch"))
        imp_on_sync_batch(m, d, base);
    else if (!strcmp(type, "memory_alloc_event_batch"))
        imp_on_alloc_batch(m, d, base);
    else if (!strcmp(type, "scope_event_batch"))
        imp_on_scope_batch(m, d, base);
    else if (!strcmp(type, "device_metric_batch"))
        imp_on_device_metrics(m, d, base);
    else if (!strcmp(type, "host_metric_batch"))
        imp_on_host_metrics(m, d, base);
    else if (!strcmp(type, "memset_event"))
        imp_on_memset(m, d);
    else if (!strcmp(type, "nvtx_marker_event"))
        imp_on_marker(m, d);
    else if (strcmp(type, "job_start") && strcmp(type, "dictionary_update") &&
             strcmp(type, "shutdown")) {
        m->skipped++;
        if (!strstr(m->skipped_types, type) &&
            strlen(m->skipped_types) + strlen(type) + 3 <
                sizeof m->skipped_types)
            snprintf(m->skipped_types + strlen(m->skipped_types),
                     sizeof m->skipped_types - strlen(m->skipped_types), "%s%s",
                     m->skipped_types[0] ? ", " : "", type);
    }
    return 0;
}

static void imp_release(imp *m)
{
    for (size_t i = 0; i < m->cap; i++) {
        free(m->e[i].key);
        free(m->e[i].body);
    }
    free(m->e);
    free(m->byid);
    for (int s = 0; s < RPT_NST; s++) {
        free(m->def[s]);
        if (m->out[s])
            fclose(m->out[s]);
    }
    free(m->odict);
}

static int open_outputs(imp *m, const char *outdir, char *err, size_t errlen)
{
    char app[128], stamp[32];
    time_t t = (time_t)(m->start / 1000000000ull);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    snprintf(app, sizeof app, "%s", m->app[0] ? m->app : "gpuflight");
    for (char *p = app; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-'))
            *p = '_';
    for (int s = 0; s < RPT_NST; s++) {
        char path[RPT_PATH_MAX], hb[300], ab[300];
        int fd;
        if ((size_t)snprintf(path, sizeof path, "%s/%s.%s.%.8s.%s.log", outdir,
                             app, stamp, m->sid,
                             imp_channels[s]) >= sizeof path)
            return GPUFL_ETOOBIG;
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 || !(m->out[s] = fdopen(fd, "w"))) {
            snprintf(err, errlen, "cannot create %s: %s", path,
                     strerror(errno));
            if (fd >= 0)
                close(fd);
            return GPUFL_EIO;
        }
        imp_esc(hb, sizeof hb, m->host[0] ? m->host : "unknown",
                strlen(m->host[0] ? m->host : "unknown"));
        imp_esc(ab, sizeof ab, app, strlen(app));
        fprintf(
            m->out[s],
            "{\"v\":1,\"sid\":\"%s\",\"st\":\"%s\",\"seq\":%llu,\"ts\":%llu,"
            "\"type\":\"session\",\"app\":%s,\"host\":%s,\"pid\":%llu,"
            "\"start\":%llu,\"file\":0,\"lib\":\"import\",\"simulated\":"
            "false,\"cmd\":\"gpufl import (original GPU Flight v1 logs)\","
            "\"interval_ms\":0,\"engines\":{\"import\":\"on: converted from "
            "the original GPU Flight's v1 logs\"},\"devices\":%s}\n",
            m->sid, imp_channels[s], (unsigned long long)m->seq[s]++,
            (unsigned long long)m->start, ab, hb, (unsigned long long)m->pid,
            (unsigned long long)m->start, m->devices);
    }
    return GPUFL_OK;
}

static int import_session(const char *sdir, const char *outdir, FILE *log,
                          char *buf, jsonl_doc *d, char *err, size_t errlen)
{
    imp *m = calloc(1, sizeof *m);
    flist fl[RPT_NST];
    int rc = GPUFL_OK;
    memset(fl, 0, sizeof fl);
    if (!m)
        return GPUFL_ENOMEM;
    for (int c = 0; c < RPT_NST; c++)
        if (channel_files(sdir, imp_channels[c], &fl[c])) {
            rc = GPUFL_ENOMEM;
            goto out;
        }
    if (!fl[0].n && !fl[1].n && !fl[2].n)
        goto out; /* not a session folder */
    each_line(m, fl, line_pass, 1, buf, d);
    if (!m->have_start || strlen(m->sid) != 36) {
        if (log)
            fprintf(log, "%s: no job_start line with a session id; skipped\n",
                    sdir);
        goto out;
    }
    rc = open_outputs(m, outdir, err, errlen);
    if (rc)
        goto out;
    each_line(m, fl, line_pass, 2, buf, d);
    imp_flush_pending(m);
    while (m->depth) /* scopes open at the end: no end line, as gpufl */
        m->depth--;
    for (int s = 0; s < RPT_NST && m->end; s++) {
        char body[256];
        snprintf(
            body, sizeof body,
            "\"type\":\"session_end\",\"reason\":\"shutdown\",\"dur\":"
            "%llu,\"lines\":%llu,\"lost\":0,\"rotations\":0",
            (unsigned long long)(m->end > m->start ? m->end - m->start : 0),
            (unsigned long long)m->seq[s] + 1);
        imp_put_line(m, s, m->end, body);
    }
    for (int s = 0; s < RPT_NST; s++)
        if (fflush(m->out[s]) || ferror(m->out[s])) {
            snprintf(err, errlen, "writing into %s failed", outdir);
            rc = GPUFL_EIO;
        }
    if (log)
        fprintf(log,
                "session %s (%s): %llu kernels, %llu copies, %llu scopes, "
                "%llu GPU samples, %llu host samples%s%s; %llu lines of other "
                "types not converted%s%s%s\n",
                m->sid, m->app, (unsigned long long)m->counts[RT_KERNEL],
                (unsigned long long)m->counts[RT_MEMCPY],
                (unsigned long long)m->counts[RT_SCOPE_END],
                (unsigned long long)m->counts[RT_GPU],
                (unsigned long long)m->counts[RT_HOST],
                m->end ? "" : ", no shutdown line (no session_end written)", "",
                (unsigned long long)m->skipped, m->skipped ? " (" : "",
                m->skipped_types, m->skipped ? ")" : "");
out:
    for (int c = 0; c < RPT_NST; c++) {
        for (size_t i = 0; i < fl[c].n; i++)
            free(fl[c].p[i]);
        free(fl[c].p);
    }
    imp_release(m);
    free(m);
    return rc;
}

int rpt_import_run(const char *dir, const char *outdir, FILE *log, char *err,
                   size_t errlen)
{
    DIR *dd = opendir(dir);
    struct dirent *de;
    char *buf = malloc(IMP_LINE_MAX);
    jsonl_tok *tok = malloc(65536 * sizeof *tok);
    jsonl_doc d;
    int rc = GPUFL_OK, found = 0;
    if (!dd || !buf || !tok) {
        snprintf(err, errlen, "cannot read %s: %s", dir,
                 dd ? "out of memory" : strerror(errno));
        rc = dd ? GPUFL_ENOMEM : GPUFL_EIO;
        goto out;
    }
    if (mkdir(outdir, 0755) && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", outdir, strerror(errno));
        rc = GPUFL_EIO;
        goto out;
    }
    jsonl_doc_init(&d, tok, 65536);
    /* DIR itself may be one session folder, or hold several */
    rc = import_session(dir, outdir, log, buf, &d, err, errlen);
    while (!rc && (de = readdir(dd))) {
        char sub[RPT_PATH_MAX];
        struct stat st;
        if (de->d_name[0] == '.')
            continue;
        if ((size_t)snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name) >=
                sizeof sub ||
            stat(sub, &st) || !S_ISDIR(st.st_mode))
            continue;
        rc = import_session(sub, outdir, log, buf, &d, err, errlen);
        found++;
    }
    (void)found;
out:
    if (dd)
        closedir(dd);
    free(buf);
    free(tok);
    return rc;
}
