/*
 * cli_import.c - `gpufl import DIR -o OUTDIR`: converts logs written by the
 * original GPU Flight client (its v1 format) into gpufl's (docs/report.md).
 */
#include <stdio.h>
#include <string.h>

#include "cli_int.h"
#include "report/report.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: gpufl import DIR -o OUTDIR\n\n"
               "Converts the original GPU Flight client's v1 logs in DIR "
               "(per-session folders\n<session_id>/<channel>.<N>.log.gz and "
               ".tmp/<channel>.log, or the older flat\n<base>.<channel>.log "
               "files) into gpufl's event format in OUTDIR, one set of\n"
               "<app>.<yyyymmdd-hhmmss>.<sid8>.{device,scope,system}.log files "
               "per session\n(one flat base may hold several sessions). Lines "
               "with no gpufl equivalent\nare copied as read into "
               "<same prefix>.unconverted.jsonl. v0 files\n"
               "(<base>.{kernel,scope,system}.<idx>.log) are counted, not "
               "converted.\nThen 'gpufl report OUTDIR' works on them.\n\n"
               "options:\n"
               "  -o OUTDIR      where the converted files go (created)\n"
               "  -h, --help     this text\n");
}

int cli_import_main(int argc, char **argv)
{
    const char *dir = NULL, *out = NULL;
    char err[512];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && v) {
            out = v;
            i++;
        } else if (a[0] == '-' || dir) {
            fprintf(stderr, "gpufl import: unexpected \"%s\"\n\n", a);
            usage(stderr);
            return 2;
        } else {
            dir = a;
        }
    }
    if (!dir || !out) {
        usage(stderr);
        return 2;
    }
    if (rpt_import_run(dir, out, stdout, err, sizeof err)) {
        fprintf(stderr, "gpufl import: %s\n", err);
        return 1;
    }
    return 0;
}
