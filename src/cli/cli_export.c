/*
 * cli_export.c - `gpufl export LOGDIR --format chrome-trace|perfetto -o
 * FILE`: a trace Perfetto's UI and chrome://tracing open (docs/report.md).
 */
#include <stdio.h>
#include <string.h>

#include "cli_int.h"
#include "report/report.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: gpufl export LOGDIR --format chrome-trace|perfetto -o "
               "FILE [--session ID]\n\n"
               "Writes the sessions in LOGDIR as a Chrome trace-event JSON "
               "file: kernels and\ncopies on one track per GPU stream, scopes "
               "as nested slices on their threads,\nGPU/host samples and "
               "counters as counter tracks, an arrow from each launch\ncall to "
               "its kernel.  'perfetto' writes the same JSON, which "
               "ui.perfetto.dev\nopens; there is no protobuf output.\n\n"
               "options:\n"
               "  --format F     chrome-trace or perfetto (required)\n"
               "  -o FILE        the output file (required)\n"
               "  --session ID   only the session whose id starts with ID\n"
               "  -h, --help     this text\n");
}

int cli_export_main(int argc, char **argv)
{
    const char *dir = NULL, *session = NULL, *format = NULL, *out = NULL;
    char err[512];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--format") && v) {
            format = v;
            i++;
        } else if (!strncmp(a, "--format=", 9)) {
            format = a + 9;
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && v) {
            out = v;
            i++;
        } else if (!strcmp(a, "--session") && v) {
            session = v;
            i++;
        } else if (a[0] == '-' || dir) {
            fprintf(stderr, "gpufl export: unexpected \"%s\"\n\n", a);
            usage(stderr);
            return 2;
        } else {
            dir = a;
        }
    }
    if (!dir || !format || !out) {
        usage(stderr);
        return 2;
    }
    if (strcmp(format, "chrome-trace") && strcmp(format, "perfetto")) {
        fprintf(stderr, "gpufl export: unknown format \"%s\"\n", format);
        return 2;
    }
    if (rpt_export_run(dir, session, format, out, stderr, err, sizeof err)) {
        fprintf(stderr, "gpufl export: %s\n", err);
        return 1;
    }
    return 0;
}
