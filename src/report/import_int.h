/*
 * import_int.h - the pieces of `gpufl import` (import.c: sessions and
 * passes; import_files.c: the three file layouts; import_dict.c:
 * dictionary ids and output lines; import_conv.c: the conversion of each
 * kind of original line; import_prof.c: profile samples into sass and
 * pcsamp), sharing one state per session.
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

/* Input channels: gpufl's three streams plus the v1.2+ "sass" channel
 * (disassembly; copied into unconverted.jsonl). */
#define IMP_NCH 4
extern const char *const imp_in_channels[IMP_NCH];

/* The files of one channel, in reading order (oldest first). */
typedef struct flist {
    char **p;
    size_t n;
} flist;

/* import_files.c: the layouts.  v1.2+ session folder: its channel files
 * (0 = ok, -1 = out of memory). */
int imp_session_files(const char *sdir, flist fl[IMP_NCH]);
/* The flat v1.0-1.1 files of one base in DIR (newest rotation last). */
int imp_flat_files(const char *dir, const char *base, flist fl[IMP_NCH]);
/* The bases of flat files in DIR: v1 bases and v0 bases (files counted). */
typedef struct flatbase {
    char *base;
    int v0;        /* channels kernel/scope/system, idx from 0 */
    size_t nfiles; /* files that belong to it */
} flatbase;
int imp_flat_bases(const char *dir, flatbase **out, size_t *n);
void imp_flist_free(flist fl[IMP_NCH]);
/* gzopen for a regular file only (O_NOFOLLOW | O_NONBLOCK, fstat): NULL,
 * said on stderr, for a link, FIFO or device named like a log, so neither
 * blocks nor feeds the import forever.  The returned gzFile is a
 * zlib gzFile (void * here: zlib.h stays in the .c files). */
void *imp_gzopen(const char *path);

/* Profile samples folded per (device, function, pc, scope) in one batch. */
#define IMP_REASONS 8 /* docs/events.md pcsamp: at most 8 reasons a line */
#define IMP_RKEYS 256 /* distinct reason keys of a session */
typedef struct ifold {
    uint64_t dev, func, pc, scope, ts, file, line;
    uint64_t v[4]; /* inst, thread_inst, sectors, sectors_ideal */
    uint64_t rn[IMP_REASONS];
    uint16_t rid[IMP_REASONS];
    uint8_t has, nr, kind;
} ifold;

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
    char sid_raw[256]; /* job_start's session_id as given (sid_fix) */
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
    uint64_t counts[RT_NTYPES];
    /* reading: the session's id for the flat layout (lines of other
     * sessions skipped), the channel of the current line, the channel
     * whose copy of the triplicated lines is used, the raw line */
    const char *want_sid;
    int ch, primary, prof_ch;
    const char *raw;
    size_t rawlen;
    uint64_t unreadable;
    /* lines copied verbatim into <prefix>.unconverted.jsonl */
    char prefix[RPT_PATH_MAX];
    FILE *unconv;
    int unconv_err;
    uint64_t unconverted;
    struct {
        char type[48];
        uint64_t n;
    } ut[32];
    int nut;
    /* profile_sample_batch */
    ifold *fold;
    uint32_t *fidx; /* open addressing over fold, fcap a power of two */
    size_t nfold, fcap;
    char rkey[IMP_RKEYS][64];
    int nrkey;
    uint64_t prof_rows[3], prof_bad_rows, unknown_metric_rows, half_pairs,
        dropped_reasons, dropped_samples;
    char unknown_metrics[256];
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

/* A columnar batch (a "columns" list and "rows" arrays, the original's v1
 * format) read row by row; cells are found by the wanted column names. */
#define IMP_WANT 16
typedef struct imp_rows {
    jsonl_doc *d;
    uint32_t rows, r, i, cell[IMP_COLS];
    int n, pos[IMP_WANT];
} imp_rows;
int imp_rows_open(imp_rows *it, jsonl_doc *d, const char *const *want,
                  int nwant);
int imp_rows_next(imp_rows *it);
uint64_t imp_col_u64(const imp_rows *it, int k);
int64_t imp_col_i64(const imp_rows *it, int k);

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

/* import.c: a line that stays as it was, into unconverted.jsonl */
void imp_unconverted(imp *m, const char *type);

/* import_prof.c: profile_sample_batch into sass and pcsamp lines */
void imp_on_profile_batch(imp *m, jsonl_doc *d, uint64_t base);

#endif
