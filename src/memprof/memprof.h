/*
 * memprof.h - gpufl memprof as a library for the `gpufl memprof` command:
 * profile the CUDA memory allocations of running processes (eBPF uprobes)
 * or of a command started under an LD_PRELOAD interposer, and write
 * folded / pprof / top outputs or push to gpufl-server.  docs/memprof.md.
 */
#ifndef GPUFL_MEMPROF_H
#define GPUFL_MEMPROF_H

#include <stddef.h>

enum { MEMPROF_VIEW_ALLOC = 0, MEMPROF_VIEW_INUSE, MEMPROF_VIEW_FAIL };
enum { MEMPROF_FMT_FOLDED = 0, MEMPROF_FMT_PPROF, MEMPROF_FMT_TOP };
enum {
    MEMPROF_PIDS = 0,   /* --pid */
    MEMPROF_CGROUP = 1, /* --cgroup */
    MEMPROF_ALL = 2,    /* --all */
    MEMPROF_PRELOAD = 3 /* --preload -- CMD */
};

#define MEMPROF_MAX_PIDS 64

typedef struct memprof_opts {
    int mode;
    int pids[MEMPROF_MAX_PIDS];
    size_t npids;
    const char *cgroup;     /* cgroup v2 directory */
    double duration;        /* s, 0 = until the targets exit or a signal */
    double interval;        /* s between pushes / top refreshes */
    int format, view;       /* MEMPROF_FMT_*, MEMPROF_VIEW_* */
    int counts;             /* folded: counts instead of bytes */
    int api_frame;          /* leaf frame named after the API */
    int dwarf;              /* eBPF: unwind copied stacks with .eh_frame */
    int live;               /* `memprof top`: a table every interval */
    size_t top_n;           /* rows of the top table */
    const char *output;     /* file, NULL = stdout (pprof needs a file) */
    const char *outdir;     /* every view and format into this directory */
    const char *server;     /* gpufl-server base URL, or NULL */
    const char *token;      /* bearer token for the server */
    const char *host;       /* host name sent to the server */
    const char *pyroscope;  /* Pyroscope base URL (POST /ingest), or NULL */
    const char *app;        /* Pyroscope application name */
    const char *lib;        /* basename prefix of the driver, "libcuda.so" */
    const char *preload_so; /* the interposer library */
    char **cmd;             /* --preload: the command (NULL-terminated) */
    int verbose;
    int simulated; /* the driver is a stand-in (demo): profiles say so */
    /* Pyroscope auth (pyroscope.c): basic (user + password) or bearer
     * token, and the X-Scope-OrgID tenant; each NULL when not given.  The
     * secrets come from files or the environment and are never printed. */
    const char *pyroscope_user, *pyroscope_password;
    const char *pyroscope_token, *pyroscope_tenant;
    /* CAs that https servers (--server, --pyroscope) are verified with;
     * NULL: the system's. */
    const char *ca_file;
} memprof_opts;

/* Runs one profiling session; returns the exit code (0 ok, 1 failure, and
 * in preload mode the command's status when the profile was written). */
int memprof_run(const memprof_opts *o);

#endif
