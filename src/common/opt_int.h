/*
 * opt_int.h - what the option engine's loader (opt.c) and its printers
 * (opt_doc.c) share: the built-in rows every program has.
 */
#ifndef GPUFL_COMMON_OPT_INT_H
#define GPUFL_COMMON_OPT_INT_H

#include "common/opt.h"

/* The built-in rows, in --help order. */
enum {
    OPT_B_CONFIG,
    OPT_B_DUMP,
    OPT_B_MARKDOWN,
    OPT_B_HELP,
    OPT_B_VERSION,
    OPT_NBUILTIN
};

extern const opt_def opt_builtin[OPT_NBUILTIN];

/* The bounds of a numeric row as "1 to 64", "4KiB to 256MiB", "100ms to
 * 1h" into out[cap]; "" when it has none (opt_val.c). */
const char *opt_range(const opt_def *o, char *out, size_t cap);

/* 1 when program p has built-in row b (--version needs p->version). */
int opt_has_builtin(const opt_prog *p, int b);

#endif
