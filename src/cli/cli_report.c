/*
 * cli_report.c - `gpufl report LOGDIR [--session ID] [--json]`: what a log
 * folder says about each session, for a terminal or a script
 * (docs/report.md).  The work is in src/report.
 */
#include <stdio.h>
#include <string.h>

#include "cli_int.h"
#include "report/report.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: gpufl report LOGDIR [--session ID] [--json]\n\n"
               "Reads the gpufl logs in LOGDIR (rotated and .zst files "
               "included) and prints,\nper session: a summary, the top "
               "kernels by GPU time, copies, the scope tree,\nGPU and host "
               "samples, and hints with the evidence behind each.\n\n"
               "options:\n"
               "  --session ID   only the session whose id starts with ID "
               "(or whose file\n                 prefix is ID)\n"
               "  --json         the same data as one JSON document\n"
               "  -h, --help     this text\n\n"
               "Exit codes: 0 ok, 1 failure (no logs, unreadable folder), 2 "
               "usage error.\n");
}

int cli_report_main(int argc, char **argv)
{
    const char *dir = NULL, *session = NULL;
    int json = 0, rc;
    char err[512];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--session") && i + 1 < argc) {
            session = argv[++i];
        } else if (!strncmp(argv[i], "--session=", 10)) {
            session = argv[i] + 10;
        } else if (argv[i][0] == '-' || dir) {
            fprintf(stderr, "gpufl report: unexpected \"%s\"\n\n", argv[i]);
            usage(stderr);
            return 2;
        } else {
            dir = argv[i];
        }
    }
    if (!dir) {
        usage(stderr);
        return 2;
    }
    rc = rpt_report_run(dir, session, json, stdout, err, sizeof err);
    if (rc) {
        fprintf(stderr, "gpufl report: %s\n", err);
        return 1;
    }
    return fflush(stdout) ? 1 : 0;
}
