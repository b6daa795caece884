/*
 * cli_diff_int.h - the parts of `gpufl diff` (cli_diff.c): its options and
 * the server side's loader (cli_diff_srv.c).
 */
#ifndef GPUFL_CLI_DIFF_INT_H
#define GPUFL_CLI_DIFF_INT_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/diff.h"

typedef struct diff_opts {
    double threshold; /* percent */
    int json;
    char *server, *token, *ca_file;
    uint64_t timeout_ms;
    int log_level, log_format;
} diff_opts;

/* Adds the sessions named in ids ("ID" or "ID,ID,...", one run each) on
 * o->server to side, from GET /api/v1/sessions/{id}/durations.  0, or a
 * gpufl_err with err[errlen] saying why. */
int cli_diff_srv_load(const diff_opts *o, const char *ids, df_side *side,
                      char *err, size_t errlen);

#endif
