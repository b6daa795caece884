/*
 * cli_run.c - `gpufl run [OPTIONS] -- CMD ARGS...`: run any CUDA program
 * with gpufl capture and no code change.
 *
 * The program is started with CUDA_INJECTION64_PATH naming
 * libgpufl_inject.so (the driver loads it at cuInit, src/inject) and the
 * session's settings as GPUFL_* variables.  The library is checked before
 * the program starts - it must exist and export InitializeInjection - since
 * the driver ignores a bad one without a word
 * (docs/cupti-internals.md#injection).  We stay the program's parent to
 * forward SIGINT/SIGTERM/SIGHUP/SIGQUIT and to exit with its status
 * (128 + signal when it was killed), then say where the logs are.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_int.h"

extern char **environ;

#define RUN_PATH_MAX 4096

/* One row per option: the flag, whether it takes a value, the variable
 * the program gets, and the help text (--help is printed from here). */
typedef struct run_opt {
    const char *flag;
    const char *arg; /* NULL = a switch */
    const char *env; /* NULL = handled by the launcher itself */
    const char *help;
} run_opt;

static const run_opt opts[] = {
    { "--engines", "LIST", "GPUFL_ENGINES",
      "engines, comma separated: cupti (kernels, copies, memsets, syncs, "
      "allocations, launch callbacks), nvml (GPU metrics), host (CPU/RAM), "
      "sim (simulated GPU), sass (SASS metrics per scope), pcsamp (PC "
      "sampling per scope; sass/pcsamp replace cupti tracing); default auto "
      "= cupti,nvml,host" },
    { "--app", "NAME", "GPUFL_APP",
      "application name in the logs and file names; default: the program "
      "name" },
    { "--log-dir", "DIR", "GPUFL_LOG_DIR",
      "where the logs go (created); default: the current directory" },
    { "--stacks", NULL, "GPUFL_STACKS",
      "record the CPU call stack of every kernel launch (costs ~1-2 us per "
      "launch)" },
    { "--cupti-lib", "PATH", "GPUFL_CUPTI_LIB",
      "libcupti.so.13 to use; default: the one the program loads, the "
      "library path, then /usr/local/cuda" },
    { "--job", "ID", "GPUFL_JOB",
      "job id in the session line (docs/client.md#jobs-and-ranks); default: "
      "the launcher's (torchrun, Slurm, Open MPI), whose variables the "
      "program inherits" },
    { "--rank", "N", "GPUFL_RANK", "this process's rank in the job" },
    { "--world-size", "N", "GPUFL_WORLD_SIZE", "ranks in the job" },
    { "--local-rank", "N", "GPUFL_LOCAL_RANK",
      "this process's rank on its host" },
    { "--step-scope", "NAME", "GPUFL_STEP_SCOPE",
      "the scope that is one training step" },
    { "--inject", "PATH", NULL,
      "the injection library; default: libgpufl_inject.so next to gpufl's "
      "own library (or GPUFL_INJECT_LIB)" },
};

static void usage(FILE *f)
{
    fprintf(f, "usage: gpufl run [OPTIONS] -- CMD [ARGS...]\n\n"
               "Runs CMD with GPU capture and no change to the program: the "
               "CUDA driver loads\nlibgpufl_inject.so (CUDA_INJECTION64_PATH) "
               "at the program's first CUDA call, which\nstarts a gpufl "
               "session from the GPUFL_* environment and flushes the logs at "
               "exit.\nWorks for C/C++/Python programs that never call "
               "gpufl. Any GPUFL_* variable\n(docs/client.md) can also be "
               "set in the environment; the options below win.\n\n"
               "options:\n");
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        char left[40];
        snprintf(left, sizeof left, "%s%s%s", opts[i].flag,
                 opts[i].arg ? " " : "", opts[i].arg ? opts[i].arg : "");
        fprintf(f, "  %-20s %s%s%s%s\n", left, opts[i].help,
                opts[i].env ? " [" : "", opts[i].env ? opts[i].env : "",
                opts[i].env ? "]" : "");
    }
    fprintf(f, "  %-20s %s\n\n", "-h, --help", "this text");
    fprintf(f, "Signals (INT, TERM, HUP, QUIT) are passed to the program; "
               "gpufl run exits with\nthe program's status (128+N if "
               "killed by signal N), 2 for a usage error and\n127 if the "
               "program cannot be started.  A program killed with SIGKILL "
               "loses at\nmost the last flush period of events.\n");
}

/* The injection library: an explicit path, GPUFL_INJECT_LIB, or the one
 * installed beside the library gpufl itself runs with (gpufl attach loads
 * the same one). */
int cli_find_inject(const char *given, char *out, size_t cap)
{
    const char *env = getenv("GPUFL_INJECT_LIB");
    char self[RUN_PATH_MAX], cand[RUN_PATH_MAX + 64];
    static const char libdir[] = "../" GPUFL_INSTALL_LIBDIR;
    const char *sub[] = { "../lib", libdir, "." };
    ssize_t n;
    if (!given && env && *env)
        given = env;
    if (given)
        return realpath(given, out) && strlen(out) < cap ? 0 : -1;
    n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return -1;
    self[n] = 0;
    if (strrchr(self, '/'))
        *strrchr(self, '/') = 0;
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
        snprintf(cand, sizeof cand, "%s/%s/libgpufl_inject.so", self, sub[i]);
        if (access(cand, R_OK) == 0 && realpath(cand, out))
            return 0;
    }
    return -1;
}

/* The driver would ignore a library without the entry point silently. */
static int check_inject(const char *path)
{
    void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    int ok = h && dlsym(h, "InitializeInjection");
    if (!h)
        fprintf(stderr, "gpufl run: cannot load %s: %s\n", path, dlerror());
    else if (!ok)
        fprintf(stderr, "gpufl run: %s does not export InitializeInjection\n",
                path);
    return ok ? 0 : -1;
}

/* The forwarded signals and SIGCHLD are blocked in the launcher and taken
 * with sigtimedwait: no handler, and no window in which a signal that
 * arrives just before the wait is missed. */
static int wait_child(pid_t pid, const sigset_t *set)
{
    int status;
    for (;;) {
        struct timespec tick = { 0, 200000000 };
        siginfo_t si;
        int sig;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return 1;
        sig = sigtimedwait(set, &si, &tick);
        if (sig > 0 && sig != SIGCHLD)
            kill(pid, sig);
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}

int cli_run_main(int argc, char **argv)
{
    char inject[RUN_PATH_MAX], logdir[RUN_PATH_MAX] = "";
    const char *inject_arg = NULL, *prev;
    int i, rc;
    pid_t pid;
    sigset_t set, old;
    posix_spawnattr_t attr;
    for (i = 1; i < argc; i++) {
        const run_opt *o = NULL;
        const char *val = NULL;
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        }
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++)
            if (cli_flag_match(argv[i], opts[k].flag, opts[k].arg != NULL,
                               &val))
                o = &opts[k];
        if (!o) {
            if (argv[i][0] != '-')
                break; /* the command, without "--" */
            fprintf(stderr,
                    "gpufl run: unknown option \"%s\" (see gpufl run "
                    "--help)\n",
                    argv[i]);
            return 2;
        }
        if (o->arg && !val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "gpufl run: %s needs %s\n", o->flag, o->arg);
                return 2;
            }
            val = argv[++i];
        }
        if (!o->env)
            inject_arg = val;
        else if (setenv(o->env, o->arg ? val : "1", 1) != 0)
            return 1;
    }
    if (i >= argc) {
        fprintf(stderr, "gpufl run: no command given\n\n");
        usage(stderr);
        return 2;
    }
    if (cli_find_inject(inject_arg, inject, sizeof inject) < 0) {
        fprintf(stderr,
                "gpufl run: libgpufl_inject.so not found%s%s (use "
                "--inject PATH)\n",
                inject_arg ? ": " : "", inject_arg ? inject_arg : "");
        return 2;
    }
    if (check_inject(inject) < 0)
        return 2;
    /* absolute: the program may chdir before its first CUDA call */
    prev = getenv("GPUFL_LOG_DIR");
    if (!prev || !*prev)
        prev = ".";
    if (prev[0] != '/') {
        char cwd[RUN_PATH_MAX];
        if (!getcwd(cwd, sizeof cwd))
            return 1;
        if ((size_t)snprintf(logdir, sizeof logdir, "%.*s/%s",
                             (int)(sizeof cwd - 1), cwd,
                             prev) >= sizeof logdir) {
            fprintf(stderr, "gpufl run: log directory path too long\n");
            return 2;
        }
    } else {
        snprintf(logdir, sizeof logdir, "%s", prev);
    }
    if (setenv("GPUFL_LOG_DIR", logdir, 1) != 0)
        return 1;
    prev = getenv("CUDA_INJECTION64_PATH");
    if (prev && *prev && strcmp(prev, inject))
        fprintf(stderr,
                "gpufl run: replacing CUDA_INJECTION64_PATH=%s (another "
                "tool's injection)\n",
                prev);
    if (setenv("CUDA_INJECTION64_PATH", inject, 1) != 0)
        return 1;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, &old);
    /* the program starts with the mask and dispositions we were given */
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, &old);
    posix_spawnattr_setsigdefault(&attr, &set);
    posix_spawnattr_setflags(&attr,
                             POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    rc = posix_spawnp(&pid, argv[i], NULL, &attr, argv + i, environ);
    posix_spawnattr_destroy(&attr);
    if (rc) {
        fprintf(stderr, "gpufl run: cannot run %s: %s\n", argv[i],
                strerror(rc));
        return 127;
    }
    rc = wait_child(pid, &set);
    fprintf(stderr, "gpufl run: %s exited with %d; logs in %s\n", argv[i], rc,
            logdir);
    return rc;
}
