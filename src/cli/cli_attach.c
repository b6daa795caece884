/*
 * cli_attach.c - `gpufl attach PID [--for DUR] [--engines LIST]`: start a
 * gpufl session inside a running process that was not started with gpufl
 * (docs/recorder.md#gpufl-attach), and `gpufl attach PID --stop`.
 *
 * Refusals come first, each with its reason, before the process is
 * touched: it does not exist or exited, it is another user's, it is not
 * x86-64, it already runs gpufl (its control socket answers: gpufl ctl is
 * the tool then), it maps no C library (a static program) or its C library
 * has no dlopen.  Then one thread is stopped (attach_ptrace.c) and made to
 * call dlopen("libgpufl_inject.so", RTLD_NOW), dlsym for the library's
 * gpufl_attach_start and gpufl_attach_blk, and gpufl_attach_start(settings)
 * (src/inject/attach.c), which starts a thread and returns; the thread is
 * then put back as it was.  We follow the start through the block
 * (process_vm_readv) and the control socket, refuse a session whose CUPTI
 * could not start (another CUPTI client in the process) by ending it, and
 * with --for wait for its end.  Signals that would end us are blocked
 * while the thread is borrowed: a tracer that dies mid-call would leave
 * the thread running into address 0.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "attach_int.h"
#include "cli_int.h"
#include "common/ctlc.h"
#include "common/jsonl.h"
#include "common/jw.h"
#include "common/log.h"
#include "common/opt.h"
#include "inject/inject_attach.h"

#define ATTACH_FOR_MAX_MS 604800000ull /* a week */
#define ATTACH_CALL_MS 20000           /* one call in the target */
#define ATTACH_START_MS 30000          /* gpufl_init in the target */
#define ATTACH_END_MS 30000            /* gpufl_shutdown in the target */
#define ATTACH_POLL_NS 50000000L
#define RTLD_NOW_ 2 /* <dlfcn.h>'s RTLD_NOW, in the target's glibc or musl */

typedef struct attach_opts {
    uint64_t for_ms;
    char *engines, *log_dir, *app, *inject;
    int stop;
    int log_level, log_format;
} attach_opts;

#define T attach_opts
static const opt_def attach_rows[] = {
    { .name = "for",
      .type = OPT_DUR,
      .unit = OPT_MS,
      OPT_F_UINT(T, for_ms),
      .min = 1,
      .max = ATTACH_FOR_MAX_MS,
      .flags = OPT_CLI_ONLY,
      .arg = "DUR",
      .help = "End the session after DUR (`30s`, `2m`; a bare number is "
              "milliseconds) and wait for it: CUDA tracing off, everything "
              "flushed, `session_end` written; the process runs on. Without "
              "it the session lasts until the process exits or `gpufl "
              "attach PID --stop`." },
    { .name = "engines",
      .type = OPT_STR,
      OPT_F_PTR(T, engines),
      .flags = OPT_CLI_ONLY,
      .arg = "LIST",
      .help = "GPUFL_ENGINES for the session (`cupti`, `nvml`, `host`, "
              "`pcsamp`, ...); default: the process's own GPUFL_ENGINES, "
              "else `auto`." },
    { .name = "log-dir",
      .type = OPT_STR,
      OPT_F_PTR(T, log_dir),
      .flags = OPT_CLI_ONLY,
      .arg = "DIR",
      .help = "Where the process writes the logs (a relative DIR is taken "
              "from gpufl attach's current directory); default: the "
              "process's own GPUFL_LOG_DIR, else its current directory." },
    { .name = "app",
      .type = OPT_STR,
      OPT_F_PTR(T, app),
      .flags = OPT_CLI_ONLY,
      .arg = "NAME",
      .help = "The application name in the logs and file names; default: "
              "the process's program name." },
    { .name = "stop",
      .type = OPT_BOOL,
      OPT_F_SINT(T, stop),
      .flags = OPT_CLI_ONLY,
      .help = "End the session an earlier `gpufl attach PID` started, and "
              "wait for its end." },
    { .name = "inject",
      .type = OPT_STR,
      OPT_F_PTR(T, inject),
      .flags = OPT_CLI_ONLY,
      .arg = "PATH",
      .help = "The injection library; default: GPUFL_INJECT_LIB, else "
              "libgpufl_inject.so beside gpufl's own library." },
    GLOG_OPT_ROWS(T, log_level, log_format),
};
#undef T

const opt_prog cli_attach_prog = {
    .name = "gpufl attach",
    .env_prefix = "GPUFL_ATTACH_",
    .opts = attach_rows,
    .n = sizeof attach_rows / sizeof attach_rows[0],
    .size = sizeof(attach_opts),
    .usage = "usage: gpufl attach PID [--for DUR] [--engines LIST] [--log-dir "
             "DIR]\n"
             "       gpufl attach PID --stop\n\n"
             "Starts a gpufl session inside a running process that was not "
             "started with\ngpufl: one of its threads is stopped with ptrace "
             "and made to load\nlibgpufl_inject.so (dlopen), which starts the "
             "session on a thread of its own;\nCUDA work is recorded from then "
             "on (docs/recorder.md#gpufl-attach).\nx86-64 only; needs the "
             "process's own user or root, and ptrace permission.\nA process "
             "that already runs gpufl is refused: use gpufl ctl PID.\n",
    .tail = "Prints one JSON line: pid, ok, sid, prefix (the log files "
            "PREFIX.*.log), ended.\nExit codes: 0 ok, 1 refused or failed "
            "(the reason on stderr), 2 usage error.\n",
    .flags = OPT_P_ARGS,
};

static int say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int say(const char *fmt, ...)
{
    char m[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    glog_error("attach", "%s", m);
    return 1;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void nap(void)
{
    struct timespec t = { 0, ATTACH_POLL_NS };
    nanosleep(&t, NULL);
}

static int read_blk(pid_t pid, uint64_t at, gpufl_attach_block *b)
{
    if (attach_proc_read(pid, at, b, sizeof *b))
        return -1;
    b->sid[sizeof b->sid - 1] = b->prefix[sizeof b->prefix - 1] =
        b->msg[sizeof b->msg - 1] = 0;
    return memcmp(b->magic, GPUFL_ATTACH_MAGIC, 8) ? -1 : 0;
}

/* Waits until the block leaves state `from`: the new state, or -1 when
 * the process ended or timeout_ms passed.  *sig: a signal (INT, TERM, HUP)
 * came; with stop_on_sig the session is then asked to end. */
static int wait_blk(pid_t pid, uint64_t at, int from, uint64_t timeout_ms,
                    const sigset_t *sigs, int stop_on_sig,
                    gpufl_attach_block *b)
{
    for (uint64_t waited = 0;; waited += ATTACH_POLL_NS / 1000000) {
        struct timespec zero = { 0, 0 };
        if (read_blk(pid, at, b))
            return -1;
        if (b->state != from)
            return b->state;
        if (waited >= timeout_ms)
            return -1;
        if (sigs && sigtimedwait(sigs, NULL, &zero) > 0 && stop_on_sig) {
            int32_t one = 1;
            glog_info("attach", "ending the session in process %d now",
                      (int)pid);
            (void)attach_proc_write(
                pid, at + offsetof(gpufl_attach_block, stop), &one, sizeof one);
            stop_on_sig = 0;
        }
        nap();
    }
}

/* The CUDA engine's status in the session, from the control socket:
 * "on", "off: why", or "" when not said. */
static void cupti_status(pid_t pid, char *out, size_t cap)
{
    static char reply[CTL_RESP_MAX + 1];
    jsonl_tok tok[512];
    jsonl_doc d;
    char err[160];
    uint32_t eng, c;
    size_t len;
    out[0] = 0;
    if (ctlc_ask(pid, "status", 5, reply, sizeof reply, err, sizeof err))
        return;
    jsonl_doc_init(&d, tok, 512);
    if (jsonl_doc_parse_obj(&d, reply, strcspn(reply, "\n")))
        return;
    eng = jsonl_doc_find(&d, "engines");
    c = jsonl_obj_find(&d, eng, "cupti");
    if (jsonl_tok_str(&d, c, out, cap, &len))
        out[0] = 0;
}

static void print_result(pid_t pid, int ok, const gpufl_attach_block *b,
                         int ended, const char *error)
{
    char line[2048];
    jw j;
    jw_init(&j, line, sizeof line - 1);
    jw_obj_begin(&j);
    jw_kv_u64(&j, "pid", (uint64_t)pid);
    jw_key(&j, "ok");
    jw_bool(&j, ok);
    if (b && b->sid[0])
        jw_kv_str(&j, "sid", b->sid);
    if (b && b->prefix[0])
        jw_kv_str(&j, "prefix", b->prefix);
    jw_key(&j, "ended");
    jw_bool(&j, ended);
    if (error) {
        jw_key(&j, "error");
        jw_strn(&j, error, strlen(error), 600);
    }
    jw_obj_end(&j);
    if (j.err)
        return;
    line[j.len] = 0;
    printf("%s\n", line);
    fflush(stdout);
}

/* The settings text for gpufl_attach_start (inject_attach.h). */
static int settings(const attach_opts *o, char *out, size_t cap)
{
    char cwd[ATTACH_PATH_MAX];
    size_t n = 0;
    int w;
    if (o->log_dir && o->log_dir[0]) {
        if (o->log_dir[0] != '/' && !getcwd(cwd, sizeof cwd))
            return say("getcwd: %s", strerror(errno));
        w = snprintf(out, cap, "log_dir=%s%s%s\n",
                     o->log_dir[0] == '/' ? "" : cwd,
                     o->log_dir[0] == '/' ? "" : "/", o->log_dir);
        if (w < 0 || (size_t)w >= cap)
            return say("--log-dir is too long");
        n = (size_t)w;
    }
    w = snprintf(out + n, cap - n, "engines=%s\napp=%s\nfor_ms=%llu\n",
                 o->engines ? o->engines : "", o->app ? o->app : "",
                 (unsigned long long)o->for_ms);
    if (w < 0 || (size_t)w >= cap - n)
        return say("--engines or --app is too long");
    if (strchr(o->engines ? o->engines : "", '\n') ||
        strchr(o->app ? o->app : "", '\n') ||
        strchr(o->log_dir ? o->log_dir : "", '\n'))
        return say("a value holds a newline");
    return 0;
}

/* The library file the target would open is the one we name. */
static int same_file(pid_t pid, const char *path)
{
    char there[ATTACH_PATH_MAX + 64];
    struct stat a, b;
    snprintf(there, sizeof there, "/proc/%d/root%s", (int)pid, path);
    if (stat(path, &a) || stat(there, &b))
        return 0;
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* A NUL-terminated string of the target (dlerror's), at most cap - 1. */
static void read_str(pid_t pid, uint64_t at, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = 0;
    while (at && n + 1 < cap) {
        char c;
        if (attach_proc_read(pid, at + n, &c, 1) || !c)
            break;
        out[n++] = c;
        out[n] = 0;
    }
}

/* The calls in the stopped thread: 0 with the block's address, or 1. */
static int inject(pid_t pid, const char *lib, const char *set,
                  uint64_t fn_dlopen, uint64_t fn_dlsym, uint64_t fn_dlerror,
                  uint64_t *blk)
{
    char err[ATTACH_ERR_MAX] = "", e2[ATTACH_ERR_MAX], dlerr[400];
    uint64_t a_lib, a_set, a_start, a_blk, h = 0, start = 0, r = 0;
    double t0 = now_ms();
    attach_thread *t = attach_ptrace_stop(pid, err, sizeof err);
    int rc = 1;
    if (!t)
        return say("%s", err);
    if (attach_ptrace_push(t, lib, strlen(lib) + 1, &a_lib, err, sizeof err) ||
        attach_ptrace_push(t, set, strlen(set) + 1, &a_set, err, sizeof err) ||
        attach_ptrace_push(t, GPUFL_ATTACH_START_SYM,
                           sizeof GPUFL_ATTACH_START_SYM, &a_start, err,
                           sizeof err) ||
        attach_ptrace_push(t, GPUFL_ATTACH_BLK_SYM, sizeof GPUFL_ATTACH_BLK_SYM,
                           &a_blk, err, sizeof err) ||
        attach_ptrace_call(t, fn_dlopen, a_lib, RTLD_NOW_, &h, ATTACH_CALL_MS,
                           err, sizeof err))
        goto out;
    if (!h) {
        uint64_t m = 0;
        if (fn_dlerror && !attach_ptrace_call(t, fn_dlerror, 0, 0, &m,
                                              ATTACH_CALL_MS, e2, sizeof e2))
            read_str(pid, m, dlerr, sizeof dlerr);
        else
            snprintf(dlerr, sizeof dlerr, "dlerror unknown");
        snprintf(err, sizeof err, "dlopen(%s) failed in process %d: %s", lib,
                 (int)pid, dlerr[0] ? dlerr : "no reason given");
        goto out;
    }
    if (attach_ptrace_call(t, fn_dlsym, h, a_start, &start, ATTACH_CALL_MS, err,
                           sizeof err) ||
        attach_ptrace_call(t, fn_dlsym, h, a_blk, blk, ATTACH_CALL_MS, err,
                           sizeof err))
        goto out;
    if (!start || !*blk) {
        snprintf(err, sizeof err,
                 "%s has no %s or %s (a library older than this gpufl?)", lib,
                 GPUFL_ATTACH_START_SYM, GPUFL_ATTACH_BLK_SYM);
        goto out;
    }
    if (attach_ptrace_call(t, start, a_set, 0, &r, ATTACH_CALL_MS, err,
                           sizeof err))
        goto out;
    if ((int)r == GPUFL_ATTACH_E_BUSY)
        snprintf(err, sizeof err,
                 "a session started by gpufl attach already runs in process "
                 "%d: gpufl ctl %d status, or gpufl attach %d --stop",
                 (int)pid, (int)pid, (int)pid);
    else if (r)
        snprintf(err, sizeof err, "%s in process %d returned %d",
                 GPUFL_ATTACH_START_SYM, (int)pid, (int)r);
    else
        rc = 0;
out:
    if (attach_ptrace_release(t, e2, sizeof e2)) {
        say("process %d: %s", (int)pid, e2);
        rc = 1;
    }
    glog_info("attach",
              "thread %d of process %d was borrowed for %.1f ms (stopped, "
              "or let run between stops to catch it in a system call)",
              (int)pid, (int)pid, now_ms() - t0);
    if (rc && err[0])
        say("%s", err);
    return rc;
}

/* Refusals that need no ptrace; 0 when the process may be entered, with
 * the addresses of its dlopen, dlsym and dlerror. */
static int refusals(pid_t pid, uint64_t fn[3])
{
    static const char *const libc_names[] = { "libc.so", "libc-2.", "ld-musl-",
                                              NULL };
    static const char *const dl_names[] = { "libdl.so", "libdl-2.", NULL };
    static const char *const gpufl_names[] = { "libgpufl.so", NULL };
    static const char *const inj_names[] = { "libgpufl_inject.so", NULL };
    static const char *const syms[3] = { "dlopen", "dlsym", "dlerror" };
    static char reply[CTL_RESP_MAX + 1];
    static attach_lib libc, dl, gfl, inj;
    char err[ATTACH_ERR_MAX];
    if (attach_proc_check(pid, err, sizeof err))
        return say("%s", err);
    if (!ctlc_ask(pid, "status", 5, reply, sizeof reply, err, sizeof err))
        return say("process %d already runs a gpufl session (its control "
                   "socket answers): use gpufl ctl %d status|dump|trace "
                   "on|off|engines",
                   (int)pid, (int)pid);
    if (attach_proc_find_lib(pid, libc_names, &libc, err, sizeof err) ||
        attach_proc_find_lib(pid, dl_names, &dl, err, sizeof err) ||
        attach_proc_find_lib(pid, gpufl_names, &gfl, err, sizeof err) ||
        attach_proc_find_lib(pid, inj_names, &inj, err, sizeof err))
        return say("%s", err);
    if (!libc.found)
        return say("process %d maps no C library (a statically linked "
                   "program?): gpufl attach needs the C library's dlopen to "
                   "load gpufl",
                   (int)pid);
    for (int i = 0; i < 3; i++) {
        fn[i] = attach_proc_sym(pid, &libc, syms[i]);
        if (!fn[i])
            fn[i] = attach_proc_sym(pid, &dl, syms[i]);
    }
    if (!fn[0] || !fn[1])
        return say("no %s symbol in process %d's C library (%s%s%s)",
                   fn[0] ? "dlsym" : "dlopen", (int)pid, libc.path,
                   dl.found ? " or " : "", dl.found ? dl.path : "");
    if (gfl.found && !inj.found)
        return say("libgpufl is loaded in process %d (%s) but its control "
                   "socket does not answer (GPUFL_CTL=false, or its session "
                   "ended): gpufl attach does not start a second gpufl there",
                   (int)pid, gfl.path);
    return 0;
}

static int do_stop(pid_t pid)
{
    static const char *const inj_names[] = { "libgpufl_inject.so", NULL };
    static attach_lib inj;
    gpufl_attach_block b;
    char err[ATTACH_ERR_MAX];
    uint64_t at;
    int32_t one = 1;
    int st;
    if (attach_proc_check(pid, err, sizeof err))
        return say("%s", err);
    if (attach_proc_find_lib(pid, inj_names, &inj, err, sizeof err))
        return say("%s", err);
    at = attach_proc_sym(pid, &inj, GPUFL_ATTACH_BLK_SYM);
    if (!inj.found || !at || read_blk(pid, at, &b))
        return say("gpufl attach has not loaded its library into process %d",
                   (int)pid);
    if (b.state != GPUFL_ATTACH_RUNNING)
        return say("no session started by gpufl attach runs in process %d",
                   (int)pid);
    if (attach_proc_write(pid, at + offsetof(gpufl_attach_block, stop), &one,
                          sizeof one))
        return say("cannot write to process %d: %s", (int)pid, strerror(errno));
    st = wait_blk(pid, at, GPUFL_ATTACH_RUNNING, ATTACH_END_MS, NULL, 0, &b);
    if (st != GPUFL_ATTACH_ENDED)
        return say("the session in process %d did not end within %d ms",
                   (int)pid, ATTACH_END_MS);
    print_result(pid, 1, &b, 1, NULL);
    return 0;
}

static int wants_cupti(const char *engines)
{
    char list[512];
    snprintf(list, sizeof list, ",%s,", engines && *engines ? engines : "");
    return !engines || !*engines || strstr(list, ",cupti,") ||
           strstr(list, ",auto,");
}

static int run(const attach_opts *o, pid_t pid)
{
    char lib[ATTACH_PATH_MAX], set[GPUFL_ATTACH_SETTINGS_MAX], cup[300];
    uint64_t fn[3], at = 0;
    gpufl_attach_block b;
    sigset_t sigs, old;
    int rc, st;
    memset(&b, 0, sizeof b);
    if (refusals(pid, fn) || settings(o, set, sizeof set))
        return 1;
    if (cli_find_inject(o->inject, lib, sizeof lib))
        return say("libgpufl_inject.so not found (--inject PATH or "
                   "GPUFL_INJECT_LIB)");
    if (!same_file(pid, lib))
        return say("process %d does not see %s as this gpufl does (another "
                   "mount namespace, a container?): install gpufl inside "
                   "it and attach from there",
                   (int)pid, lib);
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    sigaddset(&sigs, SIGQUIT);
    sigprocmask(SIG_BLOCK, &sigs, &old);
    rc = inject(pid, lib, set, fn[0], fn[1], fn[2], &at);
    if (rc)
        goto out;
    st = wait_blk(pid, at, GPUFL_ATTACH_STARTING, ATTACH_START_MS, NULL, 0, &b);
    if (st == GPUFL_ATTACH_FAILED) {
        rc = say("gpufl could not start in process %d: %s (%d)", (int)pid,
                 b.msg, (int)b.rc);
        goto out;
    }
    if (st != GPUFL_ATTACH_RUNNING) {
        rc = say("process %d ended or did not start its session within %d ms",
                 (int)pid, ATTACH_START_MS);
        goto out;
    }
    cupti_status(pid, cup, sizeof cup);
    if (wants_cupti(o->engines) && strcmp(cup, "on")) {
        int32_t one = 1;
        /* a session without CUDA capture is not what was asked for */
        rc = say("CUDA capture could not start in process %d: %s; the "
                 "session is ended",
                 (int)pid, cup[0] ? cup : "no cupti engine in the session");
        (void)attach_proc_write(pid, at + offsetof(gpufl_attach_block, stop),
                                &one, sizeof one);
        (void)wait_blk(pid, at, GPUFL_ATTACH_RUNNING, ATTACH_END_MS, NULL, 0,
                       &b);
        print_result(pid, 0, &b, b.state == GPUFL_ATTACH_ENDED,
                     cup[0] ? cup : "no cupti engine in the session");
        goto out;
    }
    glog_info("attach", "recording process %d: session %s, files %s.*.log%s",
              (int)pid, b.sid, b.prefix,
              o->for_ms ? "" : " (until it exits or gpufl attach --stop)");
    if (!o->for_ms) {
        print_result(pid, 1, &b, 0, NULL);
        goto out;
    }
    /* the process ends the session itself at for_ms; a signal to us ends
     * it early */
    st = wait_blk(pid, at, GPUFL_ATTACH_RUNNING, o->for_ms + ATTACH_END_MS,
                  &sigs, 1, &b);
    if (st != GPUFL_ATTACH_ENDED) {
        rc = say("process %d ended before its session did (its logs are "
                 "flushed at exit)",
                 (int)pid);
        print_result(pid, 0, &b, 0, "the process ended");
        goto out;
    }
    glog_info("attach", "session %s ended; process %d runs on", b.sid,
              (int)pid);
    print_result(pid, 1, &b, 1, NULL);
out:
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc;
}

int cli_attach_main(int argc, char **argv)
{
    static opt_ctx c; /* large: its origin table */
    attach_opts o;
    long pid;
    char *end;
    int rc;
    glog_setup("gpufl attach", GLOG_INFO, GLOG_TEXT);
    rc = opt_cli(&c, &cli_attach_prog, &o, NULL, argc, argv);
    if (rc)
        goto out;
    glog_setup("gpufl attach", o.log_level, o.log_format);
    if (c.nargs != 1) {
        glog_error("attach", "one PID, please (see gpufl attach --help)");
        rc = 2;
        goto out;
    }
    errno = 0;
    pid = strtol(c.args[0], &end, 10);
    if (errno || *end || pid <= 0 || pid > 4194304) {
        glog_error("attach", "\"%.100s\" is not a process id", c.args[0]);
        rc = 2;
        goto out;
    }
    if (o.stop && (o.for_ms || o.engines || o.log_dir || o.app)) {
        glog_error("attach", "--stop takes no other option");
        rc = 2;
        goto out;
    }
#if !defined(__x86_64__)
    rc = say("gpufl attach supports x86-64 only (this gpufl is built for "
             "another architecture)");
#else
    rc = o.stop ? do_stop((pid_t)pid) : run(&o, (pid_t)pid);
#endif
out:
    opt_release(&cli_attach_prog, &o);
    return rc < 0 ? 0 : rc;
}
