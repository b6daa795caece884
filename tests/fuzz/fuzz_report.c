/*
 * fuzz_report.c - libFuzzer target for src/report: the log reader and
 * aggregates behind `gpufl report`, the JSON report printer, and the
 * importer of the original GPU Flight's v1 lines.
 *
 * The first input byte picks the mode; the rest is a file's contents:
 *   even, bit 1 clear: a gpufl device log (and the same bytes as the scope
 *         and system logs) read by the session reader into the
 *         aggregates; oracle: the JSON report is one valid JSON document
 *         (src/common/jsonl), and every stream reads the same lines;
 *   even, bit 1 set: the same, with the bytes split into the three
 *         streams by the next two bytes (each byte read once: three times
 *         the runs per second); oracle: valid JSON, and no stream accounts
 *         for more lines than its part holds;
 *   odd:  an original v1 channel file converted by `gpufl import`; oracle:
 *         every file it writes parses line by line as gpufl JSON objects.
 * Files go to a private temporary folder, emptied before each input.
 */
#include <dirent.h>
#include <fcntl.h>
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
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FUZZ_ASSERT(fd >= 0);
    if (n)
        FUZZ_ASSERT(write(fd, d, n) == (ssize_t)n);
    close(fd);
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

/* Lines of a stream's part that the reader can account for: every line
 * ending in '\n' (blank ones excepted) is read once, as a line, a damaged
 * one, a duplicate, a wrong version or an over-long one. */
static uint64_t whole_lines(const uint8_t *d, size_t n)
{
    uint64_t k = 0;
    size_t start = 0;
    for (size_t i = 0; i < n; i++)
        if (d[i] == '\n') {
            k += i > start;
            start = i + 1;
        }
    return k;
}

static void reader(const uint8_t *data, size_t size, int split)
{
    static const char *const st[] = { "device", "scope", "system" };
    char path[512], err[256];
    size_t off[4] = { 0, size, size, size };
    rpt_folder fo;
    /* split: two bytes cut the rest into the device, scope and system
     * parts (k/255 of what is left each: 255 = all of it), so each byte
     * is read once; otherwise every stream holds all the bytes */
    if (split) {
        size_t len;
        if (size < 2)
            return;
        len = size - 2;
        off[0] = 2;
        off[1] = 2 + len * data[0] / 255;
        off[2] = off[1] + (size - off[1]) * data[1] / 255;
        off[3] = size;
    }
    /* the three files are rewritten in place (O_TRUNC): the folder holds
     * nothing else the scan would see */
    for (int s = 0; s < 3; s++) {
        snprintf(path, sizeof path, "%s/f.%s.log", root, st[s]);
        if (split)
            put(path, data + off[s], off[s + 1] - off[s]);
        else
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
        if (!split) {
            /* the same bytes in each stream: the same lines are read */
            FUZZ_ASSERT(c.st[0].lines == c.st[1].lines &&
                        c.st[1].lines == c.st[2].lines);
        } else {
            for (int s = 0; s < 3; s++) {
                const rpt_stats *t = &c.st[s];
                FUZZ_ASSERT(t->lines + t->damaged + t->dups + t->badv +
                                t->long_lines <=
                            whole_lines(data + off[s], off[s + 1] - off[s]));
            }
        }
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
    /* One folder for the whole run, emptied before each input and removed
     * at exit (a crash leaves it, with the crashing input's files): a
     * folder made and removed per input cost a third of the run time. */
    if (!root[0]) {
        const char *t = getenv("TMPDIR");
        char p[512];
        /* memory, not disk, where the machine has it: file creation on
         * ext4 was a sixth of a run */
        if (!(t && *t && strlen(t) < 200))
            t = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(root, sizeof root, "%s/gpufl-fuzz-report-XXXXXX", t);
        FUZZ_ASSERT(mkdtemp(root));
        snprintf(p, sizeof p, "%s/in", root);
        FUZZ_ASSERT(!mkdir(p, 0700));
        snprintf(p, sizeof p, "%s/out", root);
        FUZZ_ASSERT(!mkdir(p, 0700));
        atexit(cleanup);
    }
    if (!size)
        return 0;
    if (data[0] & 1)
        importer(data + 1, size - 1);
    else
        reader(data + 1, size - 1, (data[0] & 2) != 0);
    return 0;
}
