/*
 * fuzz_report.c - libFuzzer target for src/report: the log reader and
 * aggregates behind `gpufl report`, the JSON report printer, and the
 * importer of the original GPU Flight's v1 lines.
 *
 * The first input byte picks the mode; the rest is a file's contents:
 *   even: a gpufl device log (and the same bytes as the scope and system
 *         logs) read by the session reader into the aggregates; oracle:
 *         the JSON report is one valid JSON document (src/common/jsonl),
 *         and every line read is counted once in the stats;
 *   odd:  an original v1 channel file converted by `gpufl import`; oracle:
 *         every file it writes parses line by line as gpufl JSON objects.
 * Files go to a private temporary folder, removed after each input.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/jsonl.h"
#include "gpufl/gpufl.h"
#include "report/report.h"
#include "report/report_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: oracle failed: %s\n", __FILE__, __LINE__,  \
                    #c);                                                       \
            abort();                                                           \
        }                                                                      \
    } while (0)

static char root[256];

static void put(const char *path, const uint8_t *d, size_t n)
{
    FILE *f = fopen(path, "w");
    FUZZ_ASSERT(f);
    if (n)
        FUZZ_ASSERT(fwrite(d, 1, n, f) == n);
    fclose(f);
}

static void clear(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[512];
    if (!d)
        return;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' &&
            (size_t)snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < sizeof p)
            unlink(p);
    closedir(d);
}

static void check_json(const char *s, size_t n)
{
    static jsonl_tok tok[1 << 18];
    jsonl_doc d;
    jsonl_doc_init(&d, tok, 1 << 18);
    FUZZ_ASSERT(jsonl_doc_parse(&d, s, n) != GPUFL_EPARSE);
}

static void reader(const uint8_t *data, size_t size)
{
    static const char *const st[] = { "device", "scope", "system" };
    char path[512], err[256];
    rpt_folder fo;
    clear(root);
    for (int s = 0; s < 3; s++) {
        snprintf(path, sizeof path, "%s/f.%s.log", root, st[s]);
        put(path, data, size);
    }
    FUZZ_ASSERT(!rpt_folder_scan(root, &fo, err, sizeof err));
    FUZZ_ASSERT(fo.n == 1);
    {
        rpt_ctx c;
        rpt_agg a;
        size_t len;
        char *j;
        FUZZ_ASSERT(!rpt_ctx_init(&c) && !rpt_agg_init(&a));
        FUZZ_ASSERT(!rpt_session_read(&c, &fo.s[0], rpt_agg_visit, &a, err,
                                      sizeof err));
        rpt_agg_finish(&a);
        /* the same bytes in each stream: the same lines are read */
        FUZZ_ASSERT(c.st[0].lines == c.st[1].lines &&
                    c.st[1].lines == c.st[2].lines);
        j = rpt_print_json(&c, &a, &fo.s[0], &len);
        FUZZ_ASSERT(j);
        check_json(j, len);
        free(j);
        rpt_agg_release(&a);
        rpt_ctx_release(&c);
    }
    rpt_folder_release(&fo);
}

static void importer(const uint8_t *data, size_t size)
{
    char sdir[400], out[400], path[512], err[256];
    DIR *d;
    struct dirent *e;
    static char line[1 << 16];
    static jsonl_tok tok[4096];
    jsonl_doc doc;
    snprintf(sdir, sizeof sdir, "%s/in", root);
    snprintf(out, sizeof out, "%s/out", root);
    mkdir(sdir, 0700);
    mkdir(out, 0700);
    clear(sdir);
    clear(out);
    snprintf(path, sizeof path, "%s/device.1.log.gz", sdir);
    put(path, data, size); /* gzread reads plain bytes too */
    rpt_import_run(sdir, out, NULL, err, sizeof err);
    jsonl_doc_init(&doc, tok, 4096);
    d = opendir(out);
    FUZZ_ASSERT(d);
    while ((e = readdir(d))) {
        FILE *f;
        if (e->d_name[0] == '.')
            continue;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", out, e->d_name) >=
            sizeof path)
            continue;
        f = fopen(path, "r");
        FUZZ_ASSERT(f);
        if (strstr(e->d_name, ".unconverted.jsonl")) {
            /* lines of types gpufl has no event for, copied verbatim: each
             * is a whole line of the input (any length) */
            char *l = NULL;
            size_t cap = 0;
            ssize_t n;
            while ((n = getline(&l, &cap, f)) > 0) {
                FUZZ_ASSERT(l[n - 1] == '\n');
                /* (an input that is a gzip stream is compared inflated
                 * by nobody: only its line shape is checked) */
                FUZZ_ASSERT((size >= 2 && data[0] == 0x1f && data[1] == 0x8b) ||
                            memmem(data, size, l, (size_t)n - 1) != NULL);
            }
            free(l);
            fclose(f);
            continue;
        }
        while (fgets(line, sizeof line, f)) {
            size_t n = strlen(line);
            FUZZ_ASSERT(n && line[n - 1] == '\n');
            FUZZ_ASSERT(!jsonl_doc_parse_obj(&doc, line, n - 1));
        }
        fclose(f);
    }
    closedir(d);
}

static void cleanup(void)
{
    char p[512];
    snprintf(p, sizeof p, "%s/in", root);
    clear(p);
    rmdir(p);
    snprintf(p, sizeof p, "%s/out", root);
    clear(p);
    rmdir(p);
    clear(root);
    rmdir(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!root[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(root, sizeof root, "%s/gpufl-fuzz-report-XXXXXX",
                 t && *t && strlen(t) < 200 ? t : "/tmp");
        FUZZ_ASSERT(mkdtemp(root));
    }
    if (!size) {
        cleanup();
        root[0] = 0;
        return 0;
    }
    if (data[0] & 1)
        importer(data + 1, size - 1);
    else
        reader(data + 1, size - 1);
    /* nothing is left behind, even when libFuzzer exits without atexit */
    cleanup();
    root[0] = 0;
    return 0;
}
