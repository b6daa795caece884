/*
 * cli_proc.h - the child processes a supervising subcommand (gpufl demo)
 * starts, watches and stops.
 *
 * Children run in their own process group, so a Ctrl-C at the terminal
 * reaches only the supervisor, which then stops them in the reverse order
 * of their start (the agent drains before the server goes).  Each child
 * also gets PR_SET_PDEATHSIG(SIGTERM): if the supervisor itself is killed
 * with SIGKILL, nothing it started stays behind.
 */
#ifndef GPUFL_CLI_PROC_H
#define GPUFL_CLI_PROC_H

#include <sys/types.h>

#define CLI_PROC_MAX 16

typedef struct cli_proc {
    char name[32];
    int used;    /* 0: a free slot (never started, or released) */
    pid_t pid;   /* 0 once reaped */
    int status;  /* wait status once reaped */
    int restart; /* unused by the table itself; callers' flag */
} cli_proc;

typedef struct cli_procs {
    cli_proc p[CLI_PROC_MAX];
    int n;
} cli_procs;

/* Starts argv (argv[0] a path) with stdout and stderr appended to log (NULL:
 * inherited) and extra "NAME=VALUE" strings added to the environment (NULL
 * ends; may be NULL).  Returns the slot index, or -1 with a message on
 * stderr. */
int cli_proc_start(cli_procs *ps, const char *name, char *const argv[],
                   const char *log, char *const extra_env[]);

/* Gives slot i back once its child is reaped and its index forgotten: a
 * loop that starts a child per round (the demo's workload) would run out
 * of slots otherwise.  A slot whose child still runs is not released. */
void cli_proc_release(cli_procs *ps, int i);

/* Reaps children that have exited, without blocking.  Returns the index of
 * one that exited since the last call (its status filled), or -1. */
int cli_proc_poll(cli_procs *ps);

/* Waits up to timeout_ms for child i to exit; 0 when it has, -1 if not. */
int cli_proc_wait(cli_procs *ps, int i, int timeout_ms);

/* Stops child i: SIGTERM, up to grace_ms, then SIGKILL.  Idempotent. */
void cli_proc_stop(cli_procs *ps, int i, int grace_ms);

/* Stops every child still running, newest first. */
void cli_proc_stop_all(cli_procs *ps, int grace_ms);

/* 1 when an HTTP GET of path on host:port answers 200 within timeout_ms. */
int cli_http_ok(const char *hostport, const char *path, int timeout_ms);

/* The folder of the running executable (/proc/self/exe), into out. */
int cli_self_dir(char *out, size_t cap);

#endif
