/*
 * report.h - offline analysis of gpufl log folders, for the `gpufl report`,
 * `gpufl export` and `gpufl import` commands (src/cli).
 *
 * Every function reads files that libgpufl (or the original GPU Flight,
 * github.com/gpu-flight/gpufl-client) wrote, using only docs/events.md
 * (and, for import, the original's v1 format, docs/report.md#gpufl-import),
 * through src/common/jsonl.h.  Memory is bounded by the number of
 * distinct kernel configurations, names, scope paths and devices of a
 * session, not by the number of events: files are streamed in 4 MiB chunks.
 *
 * Each function returns GPUFL_OK or a gpufl_err with an English message in
 * err[0, errlen); `out` / `log` are borrowed FILE streams.
 */
#ifndef GPUFL_REPORT_REPORT_H
#define GPUFL_REPORT_REPORT_H

#include <stddef.h>
#include <stdio.h>

/* `gpufl report DIR [--session ID] [--json]`: a report of each session in
 * dir (or of the one whose id, id prefix or file prefix is `session`), as
 * text or as one JSON document. */
int rpt_report_run(const char *dir, const char *session, int json, FILE *out,
                   char *err, size_t errlen);

/* `gpufl export DIR --format chrome-trace|perfetto -o FILE`: a Chrome
 * trace-event JSON file of the sessions in dir (or of `session`).  Both
 * formats write the same JSON, which Perfetto's UI opens.  Progress and
 * counts go to log. */
int rpt_export_run(const char *dir, const char *session, const char *format,
                   const char *path, FILE *log, char *err, size_t errlen);

/* `gpufl import DIR -o OUTDIR`: converts the original GPU Flight's v1 logs
 * found in dir into gpufl's format in outdir (created); says what it did on
 * log. */
int rpt_import_run(const char *dir, const char *outdir, FILE *log, char *err,
                   size_t errlen);

/* `gpufl diff`: adds the sessions of path to side (src/analysis/diff.h),
 * one run each: every session of a folder, or the one session whose file
 * prefix is path's last part ("DIR/PREFIX" or one of its files
 * "DIR/PREFIX.device.log..."; an id prefix works too).  Skipped files
 * are said on log. */
struct df_side;
int rpt_diff_load(const char *path, struct df_side *side, FILE *log, char *err,
                  size_t errlen);

#endif
