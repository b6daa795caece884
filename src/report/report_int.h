/*
 * report_int.h - the pieces of src/report shared between its files: the
 * folder scan and file sources (files.c), the session reader that merges
 * the three streams and keeps the dictionary (reader.c), the aggregates
 * (agg.c), hints (hints.c) and the printers (print.c).
 */
#ifndef GPUFL_REPORT_INT_H
#define GPUFL_REPORT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/jsonl.h"

enum { RPT_DEVICE = 0, RPT_SCOPE = 1, RPT_SYSTEM = 2, RPT_NST = 3 };
extern const char *const rpt_stream_names[RPT_NST];

#define RPT_PATH_MAX 4096
#define RPT_CHUNK (4u << 20)       /* bytes read from a file at a time */
#define RPT_LINE_MAX (1u << 20)    /* longer lines are skipped as damaged */
#define RPT_TOKENS 512             /* tokens per line (a gpu line has ~300) */
#define RPT_MAX_DEV 16             /* devices per session, as libgpufl */
#define RPT_MAX_IDS (1u << 20)     /* dictionary ids kept (libgpufl: 49,152) */
#define RPT_ARENA_MAX (256u << 20) /* bytes of dictionary strings */

/* ---- files.c: the folder and its sessions -------------------------------- */

typedef struct rpt_files {
    char *prefix;         /* "<dir>/<prefix>", owned */
    char **path[RPT_NST]; /* per stream, in reading order, owned */
    size_t n[RPT_NST];
    char sid[40];   /* from the first line, "" if unreadable */
    uint64_t start; /* the session line's start */
} rpt_files;

typedef struct rpt_folder {
    rpt_files *s; /* sorted by start */
    size_t n;
    /* names that look like logs but are not regular files (FIFO, device,
     * socket, symbolic link - also one that loops): skipped, never opened,
     * so a FIFO cannot block the reader nor a link to /dev/zero feed it */
    size_t nskipped;
    char skipped[512]; /* the first: "<path>: <what it is>" */
} rpt_folder;

int rpt_folder_scan(const char *dir, rpt_folder *f, char *err, size_t errlen);
void rpt_folder_release(rpt_folder *f);
/* Says on log what the scan skipped (nothing when it skipped nothing). */
void rpt_folder_warn(const rpt_folder *f, FILE *log);
/* The sessions matching sel (NULL = all): sets pick[i] = 1.  Returns how
 * many match. */
size_t rpt_folder_pick(const rpt_folder *f, const char *sel, char *pick);

/* A file read as a byte stream, decompressing .zst. */
typedef struct rpt_src {
    int fd;
    void *z; /* ZSTD_DCtx, for .zst */
    char *zin;
    size_t zin_len, zin_pos;
    int zeof;
} rpt_src;

/* Opens a regular file only: O_NOFOLLOW | O_NONBLOCK, then fstat.
 * GPUFL_EIO with errno set (ELOOP for a link, EINVAL for a FIFO, device or
 * socket swapped in after the scan). */
int rpt_src_open(rpt_src *s, const char *path);
/* Up to cap bytes into buf: >0 bytes, 0 at the end, -1 on error. */
long rpt_src_read(rpt_src *s, char *buf, size_t cap);
void rpt_src_close(rpt_src *s);

/* ---- reader.c: one session, three streams merged by time ---------------- */

typedef enum rpt_type {
    RT_UNKNOWN = 0,
    RT_SESSION,
    RT_SESSION_END,
    RT_DICT,
    RT_LOSS,
    RT_KERNEL,
    RT_MEMCPY,
    RT_MEMSET,
    RT_SYNC,
    RT_ALLOC,
    RT_FREE,
    RT_SCOPE_BEGIN,
    RT_SCOPE_END,
    RT_MARKER,
    RT_COUNTER,
    RT_SASS,
    RT_PCSAMP,
    RT_GPU,
    RT_HOST,
    RT_NTYPES
} rpt_type;

enum { DK_NONE = 0, DK_NAME, DK_PATH, DK_STACK, DK_LAUNCH };

typedef struct rpt_dict {
    uint8_t kind;
    uint8_t has_occ;
    uint16_t depth;    /* path */
    uint32_t name;     /* name: arena offset + 1; path, launch: id */
    uint32_t len;      /* name: bytes */
    uint32_t parent;   /* path */
    uint32_t block[3]; /* launch */
    uint32_t regs, smem, dsmem, lmem;
    float occ;
    char lim[24];
} rpt_dict;

typedef struct rpt_devinfo {
    int present;
    int simulated;
    char name[128];
    char cc[16];
    uint64_t sms, mem, power_limit, regs_sm, smem_sm, max_threads_sm,
        max_blocks_sm, max_sm_clock;
} rpt_devinfo;

typedef struct rpt_header {
    int have;
    char sid[40];
    char app[128];
    char host[256];
    char lib[32];
    char cmd[1024];
    char engines[1024]; /* the engines object as JSON text */
    char warning[512];
    uint64_t pid, start, interval_ms;
    int simulated;
    rpt_devinfo dev[RPT_MAX_DEV];
    uint32_t ndev; /* highest id + 1 */
} rpt_header;

/* Scope instances, remembered by id for the device events that name them:
 * a direct-mapped table, so memory stays fixed; an instance is forgotten
 * only when one RPT_INST_SLOTS ids later takes its slot, long after its
 * kernels were read (the streams are merged by time). */
#define RPT_INST_SLOTS (1u << 16)
typedef struct rpt_inst {
    uint64_t id;
    uint32_t path, tid;
} rpt_inst;

typedef struct rpt_stats {
    uint64_t lines, files, damaged, partial, gaps, dups, badv, long_lines;
    uint64_t end_lines, end_lost, end_rotations, end_dur; /* session_end */
    int ended;
    uint64_t last_seq;
    int seen;
} rpt_stats;

/* Top-level members found in one pass when a line is read (rpt_line.f):
 * the value token of each, JSONL_NOTFOUND when absent. */
enum {
    RF_V,
    RF_SEQ,
    RF_TS,
    RF_TYPE,
    RF_DEV,
    RF_STREAM,
    RF_CFG,
    RF_DUR,
    RF_GRID,
    RF_API,
    RF_SCOPE,
    RF_PATH,
    RF_N
};

typedef struct rpt_line {
    int st;
    rpt_type type;
    uint64_t ts, seq;
    jsonl_doc *d;
    uint32_t f[RF_N];
} rpt_line;

typedef struct rpt_ctx rpt_ctx;
typedef int (*rpt_visit_fn)(void *ud, rpt_ctx *c, const rpt_line *ln);

struct rpt_ctx {
    rpt_header hdr;
    rpt_dict *dict; /* indexed by id */
    uint32_t ndict;
    char *arena;
    size_t arena_len, arena_cap;
    rpt_inst *inst; /* RPT_INST_SLOTS, allocated at the first scope */
    int inst_failed;
    rpt_stats st[RPT_NST];
    uint64_t first_ts, last_ts;
};

int rpt_ctx_init(rpt_ctx *c);
void rpt_ctx_release(rpt_ctx *c);
/* Reads every line of f's session in time order across streams (file order
 * within one), keeping c's dictionary, header and instances current, and
 * calls fn (may be NULL) for each; stops when fn returns non-zero. */
int rpt_session_read(rpt_ctx *c, const rpt_files *f, rpt_visit_fn fn, void *ud,
                     char *err, size_t errlen);

/* Dictionary lookups: a name's bytes (never NULL: "" when unknown). */
const char *rpt_name(const rpt_ctx *c, uint32_t id, size_t *len);
const rpt_dict *rpt_dict_get(const rpt_ctx *c, uint32_t id, int kind);
/* A path id as "a/b/c" into buf (cut to cap); returns buf. */
char *rpt_path_str(const rpt_ctx *c, uint32_t id, char *buf, size_t cap);
const rpt_inst *rpt_inst_get(const rpt_ctx *c, uint64_t id);

/* Field getters on the current line: the default when absent or bad. */
uint64_t rpt_u64(jsonl_doc *d, const char *key, uint64_t dflt);
int64_t rpt_i64(jsonl_doc *d, const char *key, int64_t dflt);
double rpt_f64(jsonl_doc *d, const char *key, double dflt);
int rpt_has(jsonl_doc *d, const char *key);
uint64_t rpt_tu64(jsonl_doc *d, uint32_t t, uint64_t dflt);

/* A dims array into out[3] (missing entries 1); 0 on success. */
int rpt_dims(jsonl_doc *d, uint32_t tok, uint32_t out[3]);
/* A string member into buf ("" when absent). */
void rpt_str(jsonl_doc *d, const char *key, char *buf, size_t cap);

/* ---- agg.c: what a report says about one session ------------------------- */

/* Durations: a log-linear histogram, 32 buckets per power of two, so a
 * quantile read from it is within 1/64 (1.6 %) of the exact value. */
#define RPT_HSUB 32
#define RPT_HEXP 44 /* up to 2^44 ns (4.9 h); longer values fall in the last */
#define RPT_HBUCKETS (RPT_HSUB + (RPT_HEXP - 5) * RPT_HSUB)
typedef struct rpt_hist {
    uint32_t b[RPT_HBUCKETS];
} rpt_hist;
void rpt_hist_add(rpt_hist *h, uint64_t v);
uint64_t rpt_hist_quantile(const rpt_hist *h, uint64_t n, double q,
                           uint64_t min, uint64_t max);

typedef struct rpt_kernel {
    uint32_t cfg, name;
    uint32_t block[3], grid[3];
    int grid_varies;
    uint32_t regs, smem, dsmem, lmem;
    double occ; /* < 0: unknown */
    char lim[24];
    uint64_t n, total, min, max;
    uint64_t api_n, api_call, api_queue; /* sums, ns */
    uint32_t devmask;
    rpt_hist *h;
} rpt_kernel;

enum { CK_HTOD, CK_DTOH, CK_DTOD, CK_HTOH, CK_PTOP, CK_UNKNOWN, CK_N };
extern const char *const rpt_copy_kinds[CK_N];
typedef struct rpt_copy {
    uint64_t n, bytes, dur, pageable_n, pageable_bytes, pageable_dur;
} rpt_copy;

enum { SK_EVENT, SK_STREAM_WAIT, SK_STREAM, SK_CONTEXT, SK_UNKNOWN, SK_N };
extern const char *const rpt_sync_kinds[SK_N];

typedef struct rpt_scope {
    uint64_t n, total, max, gpu, kernels, unclosed, child_total;
} rpt_scope;

/* Busy intervals of one device, merged as they come; see agg.c. */
#define RPT_BUSY_CAP 4096
typedef struct rpt_busy {
    uint64_t (*iv)[2];
    size_t n;
    uint64_t horizon, busy, idle, gaps, gap_max, gap_max_at, last_end;
    int started;
} rpt_busy;

typedef struct rpt_dev {
    uint64_t kernels, kernel_ns, first, last;
    rpt_busy busy;
    uint64_t samples, util_sum, util_max, memu_sum, mem_used_max, mem_total;
    int64_t temp_max, temp_sum;
    uint64_t temp_n, power_sum, power_max, power_n, power_limit;
    uint64_t throttle_n, throttle_bits[8], clk_min, clk_max, clk_n;
    double sm_active_sum;
    uint64_t sm_active_n, energy_first, energy_last, ecc_uncorr, lost;
} rpt_dev;

#define RPT_REASONS 16
typedef struct rpt_func {
    uint32_t name;
    uint64_t inst, thread_inst, sectors, ideal, samples;
    struct {
        char name[64];
        uint64_t n;
    } r[RPT_REASONS];
    int nr;
} rpt_func;

typedef struct rpt_counter {
    uint32_t name;
    uint64_t n, first_ts, last_ts;
    int64_t first, last, min, max;
} rpt_counter;

#define RPT_LOSS_REASONS 7
extern const char *const rpt_loss_reasons[RPT_LOSS_REASONS];

#define RPT_MARKERS_KEPT 20
typedef struct rpt_agg {
    rpt_kernel *k;
    size_t nk, kcap;
    uint32_t *cfg2k, ncfg2k;   /* cfg id -> index + 1 */
    uint32_t *name2k, nname2k; /* inline form: name id -> index + 1 */
    uint64_t kernels, kernel_ns, kfirst, klast;
    rpt_copy copy[CK_N];
    uint64_t memset_n, memset_bytes, memset_dur;
    uint64_t sync_n[SK_N], sync_dur[SK_N];
    uint64_t alloc_n, alloc_bytes, free_n, free_bytes, live, live_peak;
    rpt_scope *scope; /* by path id */
    uint32_t nscope;
    uint64_t scope_unknown_gpu, unattributed_gpu, scopes_n;
    rpt_dev dev[RPT_MAX_DEV];
    uint64_t host_n, cpu_sum10, cpu_n, cpu_max10, ram_max, ram_total, rss_max;
    rpt_func *fn;
    size_t nfn, fncap;
    rpt_counter *ctr;
    size_t nctr, ctrcap;
    uint64_t markers;
    struct {
        uint64_t ts;
        char text[104];
    } marker[RPT_MARKERS_KEPT];
    uint64_t loss[RPT_NST][RPT_LOSS_REASONS + 1];
    uint64_t end_ts;
} rpt_agg;

int rpt_agg_init(rpt_agg *a);
void rpt_agg_release(rpt_agg *a);
int rpt_agg_visit(void *ud, rpt_ctx *c, const rpt_line *ln);
/* Call once after reading: closes the busy trackers. */
void rpt_agg_finish(rpt_agg *a);

/* ---- hints.c --------------------------------------------------------------- */

typedef struct rpt_hint {
    char kind[24];  /* "occupancy", "spills", ... */
    int severity;   /* 2 high, 1 medium, 0 info */
    char what[256]; /* one line */
    char evidence[768];
} rpt_hint;

/* Up to cap hints, most severe first; returns how many. */
size_t rpt_hints(const rpt_ctx *c, const rpt_agg *a, rpt_hint *out, size_t cap);

/* ---- print.c --------------------------------------------------------------- */

/* Shared by the text and JSON printers (print.c): NVML's throttle reason
 * bits by name, the session's length, the kernels' busy time over all
 * devices (and their summed spans in *span), and the scope rows in tree
 * order (ids into out, at most cap). */
extern const char *const rpt_throttle_names[8];
/* "k":[x] / [x,y] / [x,y,z]: a grid or block without its trailing 1s
 * (print_json.c; the trace export writes them the same way). */
struct jw;
void rpt_json_dims(struct jw *w, const char *k, const uint32_t d[3]);
uint64_t rpt_session_dur(const rpt_ctx *c);
uint64_t rpt_busy_all(const rpt_agg *a, uint64_t *span);
size_t rpt_scope_walk(const rpt_ctx *c, const rpt_agg *a, uint32_t *out,
                      size_t cap);
void rpt_print_text(FILE *f, const rpt_ctx *c, const rpt_agg *a,
                    const rpt_files *files);
/* The session as one JSON object into a growing buffer; NULL on ENOMEM. */
char *rpt_print_json(const rpt_ctx *c, const rpt_agg *a, const rpt_files *files,
                     size_t *len);

/* The share of the kernels' total an aggregate row holds. */
uint64_t rpt_kernel_order(const rpt_agg *a, uint32_t *idx, size_t cap);

#endif
