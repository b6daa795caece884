/*
 * import_int.h - the pieces of `gpufl import` (import.c: files and
 * sessions; import_dict.c: dictionary ids and output lines; import_conv.c:
 * the conversion of each kind of original line), sharing one state per
 * session.
 */
#ifndef GPUFL_REPORT_IMPORT_INT_H
#define GPUFL_REPORT_IMPORT_INT_H

#include <stdint.h>
#include <stdio.h>

#include "common/jw.h"
#include "report_int.h"

#define IMP_LINE_MAX (16u << 20) /* the original's sass lines are long */
#define IMP_COLS 32
#define IMP_STACK 256
#define IMP_PENDING 4096

extern const char *const imp_channels[RPT_NST]; /* device, scope, system */

/* A dictionary entry of the output: a name, path or launch configuration. */
typedef struct ient {
    char *key;  /* "n:<name>", "p:<parent>:<name>", "l:<launch body>" */
    char *body; /* the dict line after the envelope, without braces */
    uint32_t id, dep[2]; /* ids that must be defined first */
} ient;

/* One entry of the original's dictionaries: orig id -> our name id. */
typedef struct odent {
    uint64_t orig;
    uint32_t id;
    char kind; /* 'k' kernel, 's' scope name, 'f' function, 'm' metric,
                  'F' source file; 0 = free slot */
} odent;

typedef struct imp {
    ient *e; /* open addressing, cap a power of two */
    size_t ne, cap;
    ient **byid; /* id -> entry */
    uint32_t nid;
    uint8_t *def[RPT_NST]; /* defined in this output file */
    odent *odict;          /* the original's dictionaries (odict_put) */
    size_t nod, odcap;
    /* output */
    FILE *out[RPT_NST];
    uint64_t seq[RPT_NST];
    char sid[40];
    uint64_t start, end;
    char app[128], host[256];
    uint64_t pid;
    char devices[8192]; /* JSON array */
    int have_start;
    /* scope nesting, one stack (the original has no thread ids) */
    struct {
        uint64_t inst, ts;
        uint32_t path, name;
    } stack[IMP_STACK];
    int depth;
    /* kernels waiting for their kernel_detail */
    struct {
        uint64_t ts, dur, corr, stream;
        uint32_t name, regs, dsmem;
    } pend[IMP_PENDING];
    size_t npend;
    uint64_t counts[RT_NTYPES], skipped;
    char skipped_types[512];
    char line[65536];
    jw w;
} imp;

/* import_dict.c: dictionary ids and output lines */
uint32_t imp_intern(imp *m, const char *key, const char *body, uint32_t d0,
                    uint32_t d1);
void imp_esc(char *out, size_t cap, const char *s, size_t n);
uint32_t imp_name_id(imp *m, const char *s, size_t n);
uint32_t imp_path_id(imp *m, uint32_t parent, uint32_t name, int depth);
uint32_t imp_path_of(imp *m, const char *s);
void imp_odict_put(imp *m, char kind, uint64_t orig, uint32_t id);
uint32_t imp_odict_get(imp *m, char kind, uint64_t orig);
void imp_put_line(imp *m, int st, uint64_t ts, const char *body);
void imp_define(imp *m, int st, uint32_t id, uint64_t ts);
void imp_body_begin(imp *m, const char *type);
void imp_body_end(imp *m, int st, uint64_t ts, rpt_type t);

/* import_conv.c: one function per kind of original line; base is the
 * line's base_time_ns */
void imp_read_dicts(imp *m, jsonl_doc *d);
void imp_read_job_start(imp *m, jsonl_doc *d);
void imp_flush_pending(imp *m);
void imp_on_kernel_batch(imp *m, jsonl_doc *d, uint64_t base);
void imp_on_kernel_detail(imp *m, jsonl_doc *d);
void imp_on_memcpy_batch(imp *m, jsonl_doc *d, uint64_t base);
void imp_on_sync_batch(imp *m, jsonl_doc *d, uint64_t base);
void imp_on_alloc_batch(imp *m, jsonl_doc *d, uint64_t base);
void imp_on_scope_batch(imp *m, jsonl_doc *d, uint64_t base);
void imp_on_device_metrics(imp *m, jsonl_doc *d, uint64_t base);
void imp_on_host_metrics(imp *m, jsonl_doc *d, uint64_t base);
void imp_on_memset(imp *m, jsonl_doc *d);
void imp_on_marker(imp *m, jsonl_doc *d);

#endif
