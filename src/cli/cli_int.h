/*
 * cli_int.h - the subcommands of the `gpufl` command.  Each lives in its
 * own file (cli_<name>.c) and is listed once in main.c's table; a
 * subcommand gets argv after its name and returns the process exit code
 * (0 ok, 1 runtime failure, 2 usage error; `run` returns the program's).
 */
#ifndef GPUFL_CLI_INT_H
#define GPUFL_CLI_INT_H

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

/* 1 when arg is flag, or flag=VALUE for a flag that takes a value (*val
 * then points at VALUE; left alone otherwise).  The option tables of the
 * subcommands share this matching. */
int cli_flag_match(const char *arg, const char *flag, int takes_value,
                   const char **val);

/* 1 when this build of `gpufl` has the subcommand (demo starts the optional
 * parts that exist). */
int cli_has_command(const char *name);

#endif
