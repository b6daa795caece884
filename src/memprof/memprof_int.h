/*
 * memprof_int.h - what the files of src/memprof share: the API table, the
 * symbolizer, the aggregation of events into stacks, and the writers of
 * the outputs (folded, pprof, top, gpufl-server JSON).
 *
 * Data flow: an event source (ebpf.c: ring buffer; feed.c: the preload
 * pipe) hands struct mp_event records to mp_agg_event(), which resolves
 * the return addresses to interned frame names at once (while the process
 * is alive), keys the stack by those names, and keeps per-stack counters
 * and the live-allocation tables.  The writers read the aggregation.
 */
#ifndef GPUFL_MEMPROF_INT_H
#define GPUFL_MEMPROF_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/elfsym.h"
#include "memprof/memprof.h"
#include "memprof/mp_event.h"

/* ---- the probed API ---- */
enum mp_op {
    MP_OP_ALLOC,
    MP_OP_FREE,
    MP_OP_CREATE,  /* VMM: physical memory, returns a handle */
    MP_OP_MAP,     /* VMM: handle mapped at a VA */
    MP_OP_UNMAP,   /* VMM */
    MP_OP_RELEASE, /* VMM: handle released */
    MP_OP_CTX      /* context destroyed: implicit free */
};
typedef struct mp_api_info {
    const char *name;
    unsigned cookie; /* MP_COOKIE_OUT1 / MP_COOKIE_PITCH */
    uint8_t op;      /* mp_op */
} mp_api_info;
extern const mp_api_info mp_apis[MP_API_N];

/* ---- a u64 -> (u64, u64) open-addressing table ---- */
typedef struct mp_u64map {
    uint64_t *key, *a, *b;
    uint8_t *st; /* 0 empty, 1 used, 2 deleted */
    size_t cap, n, used;
} mp_u64map;
void mp_u64map_release(mp_u64map *m);
/* Returns 1 and the values when found. */
int mp_u64map_get(const mp_u64map *m, uint64_t k, uint64_t *a, uint64_t *b);
int mp_u64map_put(mp_u64map *m, uint64_t k, uint64_t a, uint64_t b);
int mp_u64map_del(mp_u64map *m, uint64_t k);

/* ---- symbolizer (symb.c) ---- */
typedef struct mp_map {
    uint64_t start, end, pgoff;
    uint32_t mod; /* index into mp_symb.mods */
} mp_map;

typedef struct mp_module {
    char *path;       /* as the process maps it */
    const char *base; /* into path */
    uint64_t dev, ino;
    int state; /* 0 not read, 1 read, -1 unreadable */
    elfsym es; /* its function symbols (src/common/elfsym.h) */
} mp_module;

typedef struct mp_symb {
    mp_module *mods;
    size_t nmods, capmods;
    size_t cache_hits, elf_reads;
} mp_symb;

void mp_symb_release(mp_symb *s);
/* Parses /proc/PID/maps text; the executable file mappings become `*out`
 * (malloc'd, sorted by start).  Returns the count or -1. */
long mp_symb_parse_maps(mp_symb *s, const char *text, size_t len, mp_map **out);
/* The name of the function holding return address `ip` of process `pid`
 * (the module is read through /proc/PID/root on first use), or
 * "lib.so+0xVADDR" when it has no symbol there, into buf.  */
void mp_symb_name(mp_symb *s, int pid, const mp_map *maps, size_t nmaps,
                  uint64_t ip, char *buf, size_t cap);

/* ---- CPython frames (python.c) ---- */
typedef struct mp_pyver {
    const char *name;      /* "3.11" */
    struct mp_pyconf conf; /* offsets for the BPF walk (runtime 0) */
    /* PyCodeObject; co_qualname 0: none (3.10), co_code: the offset of
     * co_code_adaptive (3.11+), co_varnames: co_localsplusnames (3.11+) */
    uint32_t co_qualname, co_name, co_filename, co_firstlineno, co_linetable,
        co_code, co_argcount, co_varnames;
    uint32_t str_ascii, str_compact; /* where a str's characters start */
    int lines310;                    /* 3.10: PEP 626 table, f_lasti */
    uint32_t debug_offsets;          /* 3.13+: 0x030d, check _Py_DebugOffsets */
} mp_pyver;

/* The supported CPython a process runs (from its maps text), with *c
 * filled for the BPF program; NULL when none. */
const mp_pyver *mp_py_detect(int pid, const char *maps, struct mp_pyconf *c);
/* 1 when the interpreter at runtime (&_PyRuntime in process pid) agrees
 * with v's offsets: checked against its _Py_DebugOffsets (3.13+); always
 * 1 for older versions, which have none. */
int mp_py_offsets_ok(int pid, const mp_pyver *v, uint64_t runtime);
/* The table's entries by index (MP_EV_PYNAME), and by Py_GetVersion()
 * text ("3.12.1 (main, ...)"); NULL when unknown. */
const mp_pyver *mp_py_version(unsigned idx);
unsigned mp_py_index(const mp_pyver *v);
const mp_pyver *mp_py_by_version(const char *version);
/* A frame that is no Python function (3.12+ entry shim, no code). */
int mp_py_skip(const mp_pyver *v, uint64_t code, uint64_t instr);
/* The name cache key of a (code object, py_instr) pair. */
uint64_t mp_py_key(uint64_t code, uint64_t instr);
/* The line of code unit idx from a 3.11+ location table (co_linetable,
 * n bytes) starting at line (co_firstlineno). */
int64_t mp_py_line_of(const unsigned char *t, size_t n, int64_t line,
                      uint64_t idx);
/* The same from a 3.10 table for byte offset addr; -1: no line. */
int64_t mp_py_line_of310(const unsigned char *t, size_t n, int64_t line,
                         uint64_t addr);
/* "qualname (file.py:LINE)" of a code object at instruction instr. */
void mp_py_frame_name(int pid, const mp_pyver *v, uint64_t code, uint64_t instr,
                      char *buf, size_t cap);
/* In-process: the frames of thread state tstate, innermost first (code
 * objects and py_instr words as the BPF program sends them); the count. */
int mp_py_walk(const struct mp_pyconf *c, uint64_t tstate, uint64_t *code,
               uint64_t *instr, int max);

/* ---- --dwarf unwinding (dwarf.c) ---- */
typedef struct mp_dwarf mp_dwarf;
mp_dwarf *mp_dwarf_new(void);
void mp_dwarf_free(mp_dwarf *d);
/* Drops a process's cached modules (it exited). */
void mp_dwarf_forget(mp_dwarf *d, int pid);
/* Return addresses of the stack u (innermost first) into ips; the count. */
int mp_dwarf_unwind(mp_dwarf *d, const struct mp_ustack *u, uint64_t *ips,
                    int max);

/* ---- aggregation (agg.c) ---- */
typedef struct mp_counts {
    uint64_t alloc_b, alloc_n, free_b, free_n, fail_b, fail_n;
} mp_counts;

typedef struct mp_stack {
    uint32_t pid, api, n;
    uint32_t *f; /* frame name ids, innermost first */
    uint64_t hash;
    mp_counts cum;    /* since start */
    mp_counts pushed; /* what the last interval already reported */
    uint64_t inuse_b, inuse_n;
} mp_stack;

/* Live blocks tracked per process (ptr -> size, stack): past this, an
 * allocation is counted as allocated but not held (untracked_*, said
 * once on stderr), so the table stays bounded. */
#define MP_LIVE_MAX (1u << 22)

typedef struct mp_proc {
    uint32_t pid;
    char comm[16];
    int exited;
    mp_map *maps;
    size_t nmaps;
    int maps_tries;
    mp_u64map live; /* ptr -> (size, stack) */
    mp_u64map vmm;  /* handle -> (size, stack | maps << 32 | released << 63) */
    mp_u64map va;   /* mapped va -> (handle, size) */
    uint64_t implicit_b, implicit_n;
    uint64_t untracked_b, untracked_n; /* past MP_LIVE_MAX */
    const mp_pyver *py; /* set when the BPF side walks its Python frames */
    int py_checked;
    mp_u64map pycache; /* mp_py_key -> (frame name id, code object) */
} mp_proc;

/* What the aggregation tells its hook (--oom, oom.c) about each call it
 * accounted: an allocation, its failure, a free credited to the stack
 * that allocated it, and a process's end. */
enum { MP_REC_ALLOC = 1, MP_REC_FREE, MP_REC_FAIL, MP_REC_EXIT };
struct mp_agg;
typedef void (*mp_agg_hook)(void *ctx, struct mp_agg *g, mp_proc *p,
                            const struct mp_event *e, int rec, uint32_t stack,
                            uint64_t bytes);

typedef struct mp_agg {
    int api_frame;    /* append the API name as the leaf frame */
    mp_agg_hook hook; /* NULL: none */
    void *hook_ctx;
    mp_symb symb;
    /* interned frame names */
    char **names;
    size_t nnames, capnames;
    uint32_t *name_idx; /* open addressing over names, 0 = empty, id+1 */
    size_t name_cap;
    /* stacks */
    mp_stack *stacks;
    size_t nstacks, capstacks;
    uint32_t *stack_idx; /* id+1 */
    size_t stack_cap;
    /* processes */
    mp_proc *procs;
    size_t nprocs, capprocs;
    /* counters */
    uint64_t events, calls, unmatched_frees, failed_frees, lost;
} mp_agg;

void mp_agg_init(mp_agg *g, int api_frame);
void mp_agg_release(mp_agg *g);
/* One event; `maps` (preload: MP_EV_MAPS text) may be NULL. */
void mp_agg_event(mp_agg *g, const struct mp_event *e);
void mp_agg_maps(mp_agg *g, uint32_t pid, const char *text, size_t len);
/* preload: a Python frame's name resolved in the process (MP_EV_PYNAME) */
void mp_agg_pyname(mp_agg *g, uint32_t pid, unsigned version, uint64_t code,
                   uint64_t instr, const char *name);
mp_proc *mp_agg_proc(mp_agg *g, uint32_t pid);
/* The value of one stack in a view, over everything since start (delta 0)
 * or since the last mp_agg_mark() (delta 1). */
void mp_stack_value(const mp_stack *st, int view, int delta, uint64_t *bytes,
                    uint64_t *count);
void mp_agg_mark(mp_agg *g); /* pushed = cum */

/* ---- outputs (out.c, pprof.c) ---- */
/* Frames of a stack as written: native, Python, and the API's name. */
#define MP_STACK_MAX (MP_MAX_FRAMES + MP_MAX_PYFRAMES + 1)
/* Root-first frame names of stack s (borrowed from g), the API's name
 * last when g->api_frame; out holds MP_STACK_MAX.  Returns the count. */
size_t mp_stack_frames(const mp_agg *g, const mp_stack *s, const char **out);
/* The process name of pid ("?" when never seen). */
const char *mp_agg_comm(const mp_agg *g, uint32_t pid);
int mp_out_folded(mp_agg *g, int view, int counts, FILE *f);
/* Only pid's stacks (0: all), deltas since mp_agg_mark() (delta), with or
 * without the process name as the root frame. */
int mp_out_folded_ex(mp_agg *g, int view, int counts, int delta, uint32_t pid,
                     int comm_root, FILE *f);
int mp_out_top(mp_agg *g, int view, size_t n, FILE *f);
/* gzip'd pprof; returns 0 or -1 */
int mp_out_pprof(mp_agg *g, const char *path, uint64_t start_ns,
                 uint64_t end_ns);
/* gzip of a buffer (pprof on disk, HTTP bodies); malloc'd */
int mp_gzip(const void *in, size_t n, unsigned char **out, size_t *outn);
/* gpufl-server body for one pid (docs/api.md, POST /api/v1/memprof),
 * malloc'd; NULL when the pid has nothing to report in this interval. */
char *mp_out_server_json(mp_agg *g, uint32_t pid, const char *host,
                         uint64_t start, uint64_t end, const char *source,
                         int simulated, size_t *len);

#endif
