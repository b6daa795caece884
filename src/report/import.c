/*
 * import.c - `gpufl import`: the original GPU Flight client's v1 logs
 * (github.com/gpu-flight/gpufl-client; the layouts and line types read are
 * in docs/report.md#gpufl-import) rewritten in gpufl's format
 * (docs/events.md), so its users keep their history.
 *
 * Input (import_files.c finds the files): v1.2+ session folders under
 * DIR, and the flat v1.0-1.1 files <base>.<channel>[.<i>].log[.gz] in DIR,
 * whose base may hold several sessions (runs appended to one log_path):
 * a pre-scan collects the session ids of a base, then each session is
 * read with the lines of the others skipped.  v0 files are counted.
 * Two passes per session:
 * the first collects job_start, the merged dictionaries and shutdown (the
 * original triplicates them into every channel), the second converts
 * events, each into the gpufl stream it belongs to.  Dictionary entries
 * (names by content, scope paths, launch configurations) get new ids and
 * are written into an output file before the first line that uses them.
 * Every id is kept in a table for the session: memory grows with distinct
 * names, not with events.
 *
 * This file runs the passes; import_dict.c keeps the dictionary and writes
 * lines, import_conv.c and import_prof.c convert each kind of line.  Lines
 * of types with no gpufl equivalent are copied as they were read into
 * <prefix>.unconverted.jsonl.
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
#include "common/uuid.h"
#include "gpufl/gpufl.h"
#include "report.h"
#include "import_int.h"

#define IMP_TOKENS (1u << 20) /* a 16 MiB line of numbers has ~2^23 */

typedef int (*line_fn)(imp *m, jsonl_doc *d, int pass);

/* A line buffer grown on demand up to IMP_LINE_MAX: most v1 lines are
 * short, and a 16 MiB buffer per import made each small one cost that. */
typedef struct lbuf {
    char *p;
    size_t cap;
} lbuf;

/* The next line of g into lb: its length, 0 at the end.  A line longer
 * than IMP_LINE_MAX comes in pieces, all but the last without '\n' (so
 * counted as unreadable, as a cut line is). */
static size_t get_line(gzFile g, lbuf *lb)
{
    size_t n = 0;
    for (;;) {
        if (!gzgets(g, lb->p + n, (int)(lb->cap - n)))
            return n;
        n += strlen(lb->p + n);
        if ((n && lb->p[n - 1] == '\n') || n + 1 < lb->cap ||
            lb->cap >= IMP_LINE_MAX)
            return n;
        {
            size_t cap =
                lb->cap * 2 < IMP_LINE_MAX ? lb->cap * 2 : IMP_LINE_MAX;
            char *q = realloc(lb->p, cap);
            if (!q)
                return n;
            lb->p = q;
            lb->cap = cap;
        }
    }
}

/* Parses a line with d's tokens, growing them (x8, to IMP_TOKENS) while
 * the line needs more: d owns its array (rpt_import_run frees it).  A
 * fixed 2^20-token array cost 24 MiB per import, most lines use < 100. */
static int parse_line(jsonl_doc *d, const char *s, size_t n)
{
    int rc;
    while ((rc = jsonl_doc_parse_obj(d, s, n)) == GPUFL_ETOOBIG &&
           d->cap < IMP_TOKENS) {
        uint32_t cap = d->cap * 8 < IMP_TOKENS ? d->cap * 8 : IMP_TOKENS;
        jsonl_tok *t = realloc(d->tok, cap * sizeof *t);
        if (!t)
            break;
        jsonl_doc_init(d, t, cap);
    }
    return rc;
}

/* The line's session_id is want (or no filter). */
static int ours(jsonl_doc *d, const char *want)
{
    return !want || jsonl_tok_streq(d, jsonl_doc_find(d, "session_id"), want,
                                    strlen(want));
}

/* Every line of every channel file of the session, in channel order; the
 * sass channel (disassembly only) in pass 2 only. */
static void each_line(imp *m, flist *fl, line_fn fn, int pass, lbuf *lb,
                      jsonl_doc *d)
{
    for (int c = 0; c < (pass == 2 ? IMP_NCH : RPT_NST); c++)
        for (size_t i = 0; i < fl[c].n; i++) {
            gzFile g = imp_gzopen(fl[c].p[i]);
            if (!g)
                continue;
            m->ch = c;
            size_t n;
            while ((n = get_line(g, lb)) > 0) {
                char *buf = lb->p;
                if (buf[n - 1] != '\n' || parse_line(d, buf, n - 1)) {
                    /* a cut last line, one over the caps, not JSON */
                    if (pass == 2 && !m->want_sid)
                        m->unreadable++;
                    continue;
                }
                if (!ours(d, m->want_sid))
                    continue;
                m->raw = buf;
                m->rawlen = n - 1;
                fn(m, d, pass);
            }
            gzclose(g);
            if (pass == 2)
                imp_flush_pending(m);
        }
}

void imp_unconverted(imp *m, const char *type)
{
    int k;
    if (!m->unconv && !m->unconv_err) {
        char path[RPT_PATH_MAX + 32];
        int fd;
        snprintf(path, sizeof path, "%s.unconverted.jsonl", m->prefix);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 || !(m->unconv = fdopen(fd, "w"))) {
            m->unconv_err = errno ? errno : EIO;
            if (fd >= 0)
                close(fd);
        }
    }
    if (m->unconv) {
        fwrite(m->raw, 1, m->rawlen, m->unconv);
        fputc('\n', m->unconv);
    }
    m->unconverted++;
    for (k = 0; k < m->nut && strcmp(m->ut[k].type, type); k++)
        ;
    if (k == m->nut && m->nut < (int)(sizeof m->ut / sizeof m->ut[0])) {
        snprintf(m->ut[k].type, sizeof m->ut[k].type, "%s", type);
        m->nut++;
    }
    if (k < m->nut)
        m->ut[k].n++;
}

/* Written by the original into device, scope and system alike
 * (docs/report.md#gpufl-import: taken once, from the first channel). */
static int triplicated(const char *t)
{
    static const char *const all[] = { "segment_start", "segment_end",
                                       "run_end", "capture_capabilities" };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(t, all[i]))
            return 1;
    return 0;
}

static int line_pass(imp *m, jsonl_doc *d, int pass)
{
    uint32_t t = jsonl_doc_find(d, "type");
    uint64_t base = rpt_u64(d, "base_time_ns", 0);
    char type[48];
    size_t n;
    if (jsonl_tok_str(d, t, type, sizeof type, &n))
        snprintf(type, sizeof type, "(no type)");
    if (pass == 1) {
        m->primary |= 1 << m->ch; /* channels with lines of the session */
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
    else if (!strcmp(type, "profile_sample_batch")) {
        /* the isa_source_map batch goes to all three channels: the
         * scope channel's copy (where the samples are) is read */
        if (m->ch == m->prof_ch)
            imp_on_profile_batch(m, d, base);
    } else if (!strcmp(type, "job_start") ||
               !strcmp(type, "dictionary_update") || !strcmp(type, "shutdown"))
        ; /* read in pass 1 */
    else if (!triplicated(type) || m->ch == m->primary)
        imp_unconverted(m, type);
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
    if (m->unconv)
        fclose(m->unconv);
    free(m->odict);
    free(m->fold);
    free(m->fidx);
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
    if ((size_t)snprintf(m->prefix, sizeof m->prefix, "%s/%s.%s.%.8s", outdir,
                         app, stamp, m->sid) >= sizeof m->prefix - 32)
        return GPUFL_ETOOBIG;
    for (int s = 0; s < RPT_NST; s++) {
        char path[RPT_PATH_MAX + 16], hb[300], ab[300];
        int fd;
        snprintf(path, sizeof path, "%s.%s.log", m->prefix, imp_channels[s]);
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

static void summary(imp *m, FILE *log)
{
    fprintf(log,
            "session %s (%s): %llu kernels, %llu copies, %llu scopes, %llu "
            "GPU samples, %llu host samples, %llu sass lines, %llu pcsamp "
            "lines%s\n",
            m->sid, m->app, (unsigned long long)m->counts[RT_KERNEL],
            (unsigned long long)m->counts[RT_MEMCPY],
            (unsigned long long)m->counts[RT_SCOPE_END],
            (unsigned long long)m->counts[RT_GPU],
            (unsigned long long)m->counts[RT_HOST],
            (unsigned long long)m->counts[RT_SASS],
            (unsigned long long)m->counts[RT_PCSAMP],
            m->end ? "" : ", no shutdown line (no session_end written)");
    if (m->prof_rows[0] || m->prof_rows[1] || m->prof_rows[2] ||
        m->prof_bad_rows) {
        fprintf(log,
                "  profile_sample_batch rows: %llu PC sampling, %llu SASS "
                "metric, %llu isa_source_map (not events, counted)",
                (unsigned long long)m->prof_rows[0],
                (unsigned long long)m->prof_rows[1],
                (unsigned long long)m->prof_rows[2]);
        if (m->prof_bad_rows)
            fprintf(log, ", %llu of unknown sample_kind",
                    (unsigned long long)m->prof_bad_rows);
        if (m->unknown_metric_rows)
            fprintf(log, "; %llu SASS rows with unknown metric names (%s)",
                    (unsigned long long)m->unknown_metric_rows,
                    m->unknown_metrics);
        if (m->half_pairs)
            fprintf(log,
                    "; %llu SASS metric pairs with one half absent (written "
                    "as 0, 0)",
                    (unsigned long long)m->half_pairs);
        if (m->dropped_reasons)
            fprintf(log,
                    "; %llu stall reasons past the 8th of a line left out "
                    "(%llu samples)",
                    (unsigned long long)m->dropped_reasons,
                    (unsigned long long)m->dropped_samples);
        fputc('\n', log);
    }
    if (m->unconverted) {
        fprintf(log,
                "  %llu lines not converted, copied as read into "
                "%s.unconverted.jsonl:",
                (unsigned long long)m->unconverted, m->prefix);
        for (int k = 0; k < m->nut; k++)
            fprintf(log, " %s %llu%s", m->ut[k].type,
                    (unsigned long long)m->ut[k].n, k + 1 < m->nut ? "," : "");
        fputc('\n', log);
    }
    if (m->unreadable)
        fprintf(log, "  %llu lines unreadable (cut by a crash, or not JSON)\n",
                (unsigned long long)m->unreadable);
}

/* FNV-1a 64 over s, from a given basis. */
static uint64_t fnv(const char *s, uint64_t h)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* The original wrote whatever session_id it was given; gpufl's sid is a
 * version-4-shaped UUID everywhere (the envelope, file names, the server's
 * keys).  A v1 id that is not a UUID becomes one with the version and
 * variant bits of v4 and its other 122 bits hashed from the id, so every
 * import of the same logs gives the same sid. */
static void sid_fix(imp *m, FILE *log)
{
    const char *orig = m->sid_raw;
    uint64_t a, b;
    if (uuid_valid(m->sid_raw, strlen(m->sid_raw)))
        return;
    a = fnv(orig, 0xcbf29ce484222325ull);
    b = fnv(orig, a ^ 0x9e3779b97f4a7c15ull);
    snprintf(m->sid, sizeof m->sid, "%08x-%04x-4%03x-%04x-%012llx",
             (unsigned)(a >> 32), (unsigned)(a >> 16) & 0xffffu,
             (unsigned)a & 0xfffu, 0x8000u | ((unsigned)(b >> 48) & 0x3fffu),
             (unsigned long long)(b & 0xffffffffffffull));
    if (log) {
        char esc[2 * sizeof m->sid_raw + 8];
        imp_esc(esc, sizeof esc, orig, strlen(orig));
        fprintf(log, "session_id %s is not a UUID: imported as %s\n", esc,
                m->sid);
    }
}

/* One session: its files (fl), and for the flat layout its id. */
static int run_session(flist *fl, const char *label, const char *want,
                       const char *outdir, FILE *log, lbuf *lb, jsonl_doc *d,
                       char *err, size_t errlen)
{
    imp *m = calloc(1, sizeof *m);
    int rc = GPUFL_OK, seen;
    if (!m)
        return GPUFL_ENOMEM;
    m->want_sid = want;
    each_line(m, fl, line_pass, 1, lb, d);
    if (!m->have_start || !m->sid_raw[0]) {
        if (log)
            fprintf(log, "%s: no job_start line with a session id; skipped\n",
                    label);
        goto out;
    }
    sid_fix(m, log);
    /* the triplicated lines are taken from the first channel holding the
     * session; profile batches from the scope channel when it has lines */
    seen = m->primary;
    m->primary = seen & 1 ? 0 : seen & 2 ? 1 : 2;
    m->prof_ch = seen & 2 ? 1 : m->primary;
    rc = open_outputs(m, outdir, err, errlen);
    if (rc)
        goto out;
    each_line(m, fl, line_pass, 2, lb, d);
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
    if (m->unconv_err) {
        snprintf(err, errlen, "cannot create %s.unconverted.jsonl: %s",
                 m->prefix, strerror(m->unconv_err));
        rc = GPUFL_EIO;
    } else if (m->unconv && (fflush(m->unconv) || ferror(m->unconv))) {
        snprintf(err, errlen, "writing into %s failed", outdir);
        rc = GPUFL_EIO;
    }
    if (log)
        summary(m, log);
out:
    imp_release(m);
    free(m);
    return rc;
}

/* A v1.2+ session folder (nothing when sdir holds no channel files). */
static int import_folder(const char *sdir, const char *outdir, FILE *log,
                         lbuf *lb, jsonl_doc *d, char *err, size_t errlen,
                         int *found)
{
    flist fl[IMP_NCH];
    int rc = GPUFL_OK;
    if (imp_session_files(sdir, fl))
        rc = GPUFL_ENOMEM;
    else if (fl[0].n || fl[1].n || fl[2].n) {
        (*found)++;
        rc = run_session(fl, sdir, NULL, outdir, log, lb, d, err, errlen);
    }
    imp_flist_free(fl);
    return rc;
}

/* The flat v1.0-1.1 files of one base: the session ids in order of first
 * appearance (memory: one id per session), then one session at a time. */
static int import_flat(const char *dir, const char *base, const char *outdir,
                       FILE *log, lbuf *lb, jsonl_doc *d, char *err,
                       size_t errlen)
{
    flist fl[IMP_NCH];
    char(*sid)[40] = NULL;
    size_t ns = 0, nfiles = 0;
    uint64_t bad = 0, nosid = 0;
    int rc = GPUFL_OK;
    if (imp_flat_files(dir, base, fl)) {
        rc = GPUFL_ENOMEM;
        goto out;
    }
    for (int c = 0; c < RPT_NST; c++)
        for (size_t i = 0; i < fl[c].n; i++) {
            gzFile g = imp_gzopen(fl[c].p[i]);
            nfiles++;
            if (!g)
                continue;
            size_t n;
            while ((n = get_line(g, lb)) > 0) {
                char *buf = lb->p, s[40];
                size_t k;
                if (buf[n - 1] != '\n' || parse_line(d, buf, n - 1)) {
                    bad++;
                    continue;
                }
                if (jsonl_tok_str(d, jsonl_doc_find(d, "session_id"), s,
                                  sizeof s, &k) ||
                    !k) {
                    nosid++;
                    continue;
                }
                for (k = 0; k < ns && strcmp(sid[k], s); k++)
                    ;
                if (k == ns) {
                    char(*np)[40] = realloc(sid, (ns + 1) * sizeof *sid);
                    if (!np) {
                        gzclose(g);
                        rc = GPUFL_ENOMEM;
                        goto out;
                    }
                    sid = np;
                    memcpy(sid[ns++], s, sizeof s);
                }
            }
            gzclose(g);
        }
    if (log)
        fprintf(log, "%s/%s.*: flat v1.0-1.1 layout, %zu files, %zu sessions%s",
                dir, base, nfiles, ns, bad || nosid ? ";" : "\n");
    if (log && (bad || nosid))
        fprintf(log,
                " %llu lines unreadable (cut by a crash, or not JSON), %llu "
                "lines without a session_id (not imported)\n",
                (unsigned long long)bad, (unsigned long long)nosid);
    for (size_t k = 0; k < ns && !rc; k++) {
        char label[RPT_PATH_MAX + 64];
        snprintf(label, sizeof label, "%s/%s.* session %s", dir, base, sid[k]);
        rc = run_session(fl, label, sid[k], outdir, log, lb, d, err, errlen);
    }
out:
    imp_flist_free(fl);
    free(sid);
    return rc;
}

int rpt_import_run(const char *dir, const char *outdir, FILE *log, char *err,
                   size_t errlen)
{
    DIR *dd = opendir(dir);
    struct dirent *de;
    lbuf lb = { malloc(65536), 65536 };
    jsonl_tok *tok = malloc(4096 * sizeof *tok); /* grows: parse_line */
    flatbase *fb = NULL;
    size_t nfb = 0;
    jsonl_doc d;
    int rc = GPUFL_OK, found = 0;
    jsonl_doc_init(&d, tok, tok ? 4096 : 0);
    if (!dd || !lb.p || !tok) {
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
    /* DIR itself may be one session folder, or hold several */
    rc = import_folder(dir, outdir, log, &lb, &d, err, errlen, &found);
    while (!rc && (de = readdir(dd))) {
        char sub[RPT_PATH_MAX];
        struct stat st;
        if (de->d_name[0] == '.')
            continue;
        if ((size_t)snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name) >=
                sizeof sub ||
            stat(sub, &st) || !S_ISDIR(st.st_mode))
            continue;
        rc = import_folder(sub, outdir, log, &lb, &d, err, errlen, &found);
    }
    /* and the flat files of the older layouts in DIR */
    if (!rc && imp_flat_bases(dir, &fb, &nfb))
        rc = GPUFL_ENOMEM;
    for (size_t i = 0; i < nfb && !rc; i++) {
        found++;
        if (!fb[i].v0)
            rc =
                import_flat(dir, fb[i].base, outdir, log, &lb, &d, err, errlen);
        else if (log)
            fprintf(log,
                    "%s/%s.*: %zu files of the v0 layout "
                    "(<base>.{kernel,scope,system}.<idx>.log) recognised and "
                    "skipped: not converted (the reference describes too "
                    "little of v0's lines)\n",
                    dir, fb[i].base, fb[i].nfiles);
    }
    if (!rc && !found && log)
        fprintf(log, "%s: no logs of the original GPU Flight client found\n",
                dir);
out:
    for (size_t i = 0; i < nfb; i++)
        free(fb[i].base);
    free(fb);
    if (dd)
        closedir(dd);
    free(lb.p);
    free(d.tok); /* tok, or what parse_line grew it into */
    return rc;
}
