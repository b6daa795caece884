/*
 * cli_int.h - the subcommands of the `gpufl` command.  Each lives in its
 * own file (cli_<name>.c) and is listed once in main.c's table; a
 * subcommand gets argv after its name and returns the process exit code
 * (0 ok, 1 runtime failure, 2 usage error; `run` returns the program's).
 */
#ifndef GPUFL_CLI_INT_H
#define GPUFL_CLI_INT_H

#include "common/opt.h"

typedef struct cli_cmd {
    const char *name;
    const char *summary; /* one line for `gpufl --help` */
    int (*main)(int argc, char **argv);
} cli_cmd;

int cli_memprof_main(int argc, char **argv);
int cli_idle_main(int argc, char **argv);
int cli_run_main(int argc, char **argv);
int cli_report_main(int argc, char **argv);
int cli_export_main(int argc, char **argv);
int cli_import_main(int argc, char **argv);
int cli_version_main(int argc, char **argv);
int cli_demo_main(int argc, char **argv);
int cli_ctl_main(int argc, char **argv);
int cli_diff_main(int argc, char **argv);
int cli_attach_main(int argc, char **argv);

/* The option tables of the subcommands that have one (src/common/opt.h). */
extern const opt_prog cli_idle_prog, cli_memprof_prog, cli_demo_prog,
    cli_ctl_prog, cli_diff_prog, cli_attach_prog;

/* gpufl idle's defaults from its table, for the test that they are the
 * detector's own (idle_cfg_init); 0 or the engine's error. */
struct idle_opts;
int cli_idle_defaults(struct idle_opts *o);

/* 1 when arg is flag, or flag=VALUE for a flag that takes a value (*val
 * then points at VALUE; left alone otherwise).  The option tables of the
 * subcommands share this matching. */
int cli_flag_match(const char *arg, const char *flag, int takes_value,
                   const char **val);

/* The injection library's real path into out[0, cap): given (NULL: none),
 * else GPUFL_INJECT_LIB, else libgpufl_inject.so beside gpufl's own
 * library (gpufl run and gpufl attach).  0, or -1 when none is found. */
int cli_find_inject(const char *given, char *out, size_t cap);

/* 1 when this build of `gpufl` has the subcommand (demo starts the optional
 * parts that exist). */
int cli_has_command(const char *name);

#endif
