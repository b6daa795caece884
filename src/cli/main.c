/*
 * main.c - the `gpufl` command: dispatches to a subcommand from one table.
 * New subcommands (demo, report, memprof, idle) are a file and a row.
 */
#include <stdio.h>
#include <string.h>

#include "cli_int.h"

static const cli_cmd cmds[] = {
    { "attach",
      "start gpufl in a running process not started with it (ptrace, "
      "x86-64; --for DUR)",
      cli_attach_main },
    { "ctl",
      "a running gpufl program: status, dump its window, tracing on/off, "
      "engines (PID|--all)",
      cli_ctl_main },
    { "demo",
      "the whole stack on this machine: server, agent, UI and live "
      "workloads",
      cli_demo_main },
#ifdef GPUFL_HAVE_REPORT
    { "diff",
      "what got slower or faster between two runs, by kernel and scope "
      "(exit 3: slower)",
      cli_diff_main },
    { "export",
      "a log folder as a Chrome/Perfetto trace (--format chrome-trace|"
      "perfetto -o FILE)",
      cli_export_main },
    { "import", "convert the original GPU Flight's v1 logs into gpufl's format",
      cli_import_main },
#endif
#ifdef GPUFL_HAVE_IDLE
    { "idle",
      "is a GPU session in use? verdicts from NVML, processes, input, CPU "
      "(--once, watch)",
      cli_idle_main },
#endif
#ifdef GPUFL_HAVE_MEMPROF
    { "memprof",
      "GPU memory allocations per call stack (eBPF or --preload): folded, "
      "pprof, top",
      cli_memprof_main },
#endif
#ifdef GPUFL_HAVE_REPORT
    { "report",
      "what a log folder says: top kernels, copies, scopes, system, hints "
      "(--json)",
      cli_report_main },
#endif
    { "run",
      "run a program with GPU capture, no code change (gpufl run -- "
      "CMD ARGS...)",
      cli_run_main },
    { "version", "print the versions of gpufl and its event format",
      cli_version_main },
};

int cli_flag_match(const char *arg, const char *flag, int takes_value,
                   const char **val)
{
    size_t fl = strlen(flag);
    if (strncmp(arg, flag, fl))
        return 0;
    if (arg[fl] == 0)
        return 1;
    if (arg[fl] != '=' || !takes_value)
        return 0;
    *val = arg + fl + 1;
    return 1;
}

int cli_has_command(const char *name)
{
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(cmds[i].name, name))
            return 1;
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: gpufl COMMAND [ARGS...]\n\n"
               "gpufl is a GPU flight recorder: it writes what a CUDA program "
               "does on the GPU\n(kernels, copies, scopes, system metrics) to "
               "JSON-lines logs.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
    fprintf(f, "\n'gpufl COMMAND --help' explains a command. Exit codes: 0 ok, "
               "1 failure, 2 usage\nerror; 'run' exits with the program's "
               "status.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
        !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version"))
        return cli_version_main(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(argv[1], cmds[i].name))
            return cmds[i].main(argc - 1, argv + 1);
    fprintf(stderr, "gpufl: unknown command \"%s\"\n\n", argv[1]);
    usage(stderr);
    return 2;
}
