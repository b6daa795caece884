/*
 * diff.h - `gpufl diff`'s comparison of two sides (docs/analysis.md "gpufl
 * diff"): each side is one or more runs (groups), each run the durations
 * of its kernels by name and of its scopes by path.  Every name or path
 * both sides ran is compared with compare.h (the runs as groups, so the
 * base runs' spread counts); names only one side ran are listed as new or
 * vanished.
 *
 * The loaders fill the sides: src/report's (log folders, through its
 * reader) and src/cli's (gpufl-server's per-session durations).  Pure
 * computation otherwise: no I/O, no globals.  Memory is capped: at most
 * DF_SERIES_MAX names and paths per run, DF_KEEP values of each (a seeded
 * reservoir sample beyond), DF_GROUPS_MAX runs per side.
 */
#ifndef GPUFL_ANALYSIS_DIFF_H
#define GPUFL_ANALYSIS_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/compare.h"

#define DF_SERIES_MAX 8192u         /* names + paths per run */
#define DF_KEEP 8192u               /* values kept per name and run */
#define DF_GROUPS_MAX AN_GROUPS_MAX /* runs per side */
#define DF_NAME_MAX 4096u           /* bytes of a name or path kept */
/* calls of a name needed on each side (every run) for a shift */
#define DF_MIN_CALLS 5u

enum { DF_KERNEL = 0, DF_SCOPE = 1 };

/* One name's (kind DF_KERNEL) or path's (DF_SCOPE) durations in one run. */
typedef struct df_series {
    int kind;
    char *name;     /* owned, NUL-terminated */
    uint64_t calls; /* every call seen, kept or not */
    double total;   /* ns, every call */
    double *v;      /* kept durations (ns), at most DF_KEEP */
    size_t nv, cap;
} df_series;

/* One run (a session). */
typedef struct df_group {
    char id[64]; /* the session id, for the output */
    df_series *s;
    size_t n, cap;
    uint64_t rng; /* the reservoir's generator */
    int sorted;
} df_group;

typedef struct df_side {
    df_group *g;
    size_t n, cap;
} df_side;

void df_side_init(df_side *s);
void df_side_release(df_side *s);
/* A new, empty run at the end of s (id copied, cut to 63 bytes); NULL
 * when out of memory or s has DF_GROUPS_MAX runs (*err says which:
 * GPUFL_ENOMEM or GPUFL_EFULL). */
df_group *df_side_add(df_side *s, const char *id, int *err);

/* A new series in g (name[0, len) copied, cut at DF_NAME_MAX); NULL when
 * out of memory or g has DF_SERIES_MAX series (*err as above).  The same
 * name may be added twice (two dictionary ids of one string):
 * df_group_finish merges them. */
df_series *df_group_add(df_group *g, int kind, const char *name, size_t len,
                        int *err);
/* Records one call of dur ns: kept, or a reservoir sample past DF_KEEP.
 * 0 or GPUFL_ENOMEM. */
int df_series_push(df_group *g, df_series *s, double dur);
/* Sorts g's series by (kind, name) and merges duplicates.  0 or
 * GPUFL_ENOMEM. */
int df_group_finish(df_group *g);

enum {
    DF_SAME = 0,
    DF_SLOWER,
    DF_FASTER,
    DF_NEW,      /* no base run ran it */
    DF_VANISHED, /* every base run ran it, no new run did */
    DF_VARIES    /* only some runs of a side ran it: not judged */
};
extern const char *const df_verdict_names[6];

typedef struct df_finding {
    int kind;
    const char *name; /* borrowed from a side's series */
    int verdict;
    an_result r; /* DF_SLOWER, DF_FASTER, DF_SAME with enough calls */
    int judged;  /* r is set */
    double base_calls, cur_calls; /* mean calls per run that ran it */
    double base_total, cur_total; /* mean ns per run that ran it */
} df_finding;

typedef struct df_result {
    df_finding *f; /* every name of either side; sorted: slower (worst
                    * first), faster (most first), new, vanished, then
                    * the rest */
    size_t n;
    size_t compared[2]; /* judged, per kind */
    size_t slower, faster, added, vanished;
} df_result;

/*
 * Compares cur with base, name by name (both sides finished).  o: the
 * comparison's options (min_shift is the --threshold).  0, GPUFL_EINVAL
 * (an empty side) or GPUFL_ENOMEM.  res holds pointers into the sides:
 * release it before them.
 */
int df_compare(const df_side *base, const df_side *cur, const an_opts *o,
               df_result *res);
void df_result_release(df_result *res);

#endif
