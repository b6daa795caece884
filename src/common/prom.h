/*
 * prom.h - the Prometheus text exposition format (version 0.0.4), written
 * into a gbuf: the /metrics of gpufl-server and of `gpufl idle watch`.
 *
 * A family is announced once (# HELP and # TYPE), then one line a sample:
 * name{label="value",...} value.  Label values are escaped as the format
 * says (backslash, double quote and newline); names, label names and HELP
 * texts are the caller's literals and are written as they are.  Errors
 * stick in the gbuf (buf.h): write everything, check b->err once.
 */
#ifndef GPUFL_COMMON_PROM_H
#define GPUFL_COMMON_PROM_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* One label: name="value"; a NULL value is written as "". */
typedef struct prom_label {
    const char *name;
    const char *value;
} prom_label;

/* "# HELP name help\n# TYPE name type\n"; type is counter, gauge or
 * histogram. */
void prom_family(gbuf *b, const char *name, const char *type, const char *help);

/* name, then {labels} when n > 0 (label values escaped); the value is
 * the caller's: prom_sample_* below end the line. */
void prom_name(gbuf *b, const char *name, const prom_label *l, size_t n);

/* A sample with an integer value: name{labels} v\n. */
void prom_u64(gbuf *b, const char *name, const prom_label *l, size_t n,
              uint64_t v);
/* A sample with a real value in printf's %.<decimals>f. */
void prom_f64(gbuf *b, const char *name, const prom_label *l, size_t n,
              double v, int decimals);

/* A label value, escaped, without its quotes (for callers that build a
 * value from parts). */
void prom_escape(gbuf *b, const char *s, size_t n);

#endif
