/*
 * cli_demo.c - `gpufl demo`: the whole stack on this machine, one command.
 *
 * Starts gpufl-server (embedded SQLite, the web UI when it is built),
 * gpufl-agent shipping over HTTP, and then keeps producing live data: the
 * example training program runs again and again (on the simulated GPU
 * unless --engines says otherwise; the sessions say "simulated") or, when
 * the driver sees a GPU, a CUDA program built with nvcc runs under
 * `gpufl run` (cli_demo_gpu.c), and,
 * where those commands exist, the idle detector and the memory profiler
 * run beside it.  Prints the URL and the token, runs until Ctrl-C (or
 * --duration), then stops everything it started, newest first, so the
 * agent ships what is left before the server goes.
 *
 * --fleet hands over to scripts/fleet.sh, which sets up the scale path
 * (Kafka, two servers, PostgreSQL, S3) on this machine.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_demo_gpu.h"
#include "common/fsutil.h"
#include "cli_int.h"
#include "cli_proc.h"
#include "common/log.h"

#define DEMO_PATH 4096
/* The small job every fourth run is (docs/demo.md). */
#define DEMO_RANKS 4
#define DEMO_JOB_SLOW_RANK 2
#define DEMO_JOB_PERTURB "kernel=:x1.3"
/* Every fourth run's GEMMs are slower: something for Regressions. */
#define DEMO_PERTURB "kernel=gemm:x1.25"

/* The options (the table below); strings are owned, opt_release frees. */
typedef struct demo_opts {
    const char *listen, *token, *dir, *engines, *ui_dir, *gpu;
    unsigned steps, pause_s, duration_s;
    int idle, memprof, quiet, fleet;
    int log_level, log_format; /* GLOG_* (common/log.h) */
} demo_opts;

typedef struct demo {
    demo_opts o;
    cli_procs ps;
    char bin[DEMO_PATH];  /* folder of the gpufl binaries */
    char root[DEMO_PATH]; /* --dir, absolute */
    char logs[DEMO_PATH + 16], data[DEMO_PATH + 16];
    char token[80], url[320];
    char cuda[DEMO_PATH + 32]; /* the CUDA workload; "" = simulated GPU */
    int server, agent;         /* slots; -1 = not running */
    int work[DEMO_RANKS];      /* the run's processes; -1 = none */
    unsigned runs, jobs;
    long long t_start; /* seconds since 1970 at the start: in job ids */
} demo;

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

#define T demo_opts
static const opt_def demo_rows[] = {
    { .name = "listen",
      .type = OPT_STR,
      OPT_F_PTR(T, listen),
      .def = "127.0.0.1:8080",
      .arg = "ADDR:PORT",
      .help = "where the server listens" },
    { .name = "token",
      .type = OPT_STR,
      OPT_F_PTR(T, token),
      .flags = OPT_SECRET,
      .arg = "TOKEN",
      .def_doc = "a new random one",
      .help = "admin token to sign in with (32 to 64 characters)" },
    { .name = "dir",
      .type = OPT_STR,
      OPT_F_PTR(T, dir),
      .def = "./gpufl-demo",
      .arg = "DIR",
      .help = "logs, database and process logs go here" },
    { .name = "steps",
      .type = OPT_INT,
      OPT_F_UINT(T, steps),
      .def = "200",
      .max = 1000000000,
      .help = "training steps per workload run (0 means 1)" },
    { .name = "pause",
      .type = OPT_DUR,
      .unit = OPT_SEC,
      OPT_F_UINT(T, pause_s),
      .def = "10",
      .max = 1000000000,
      .help = "time between workload runs (a bare number is seconds)" },
    { .name = "gpu",
      .type = OPT_ENUM,
      OPT_F_PTR(T, gpu),
      .def = "auto",
      .choices = "auto|on|off",
      .help = "auto: when the driver reports a GPU and nvcc is found, build "
              "examples/cuda/demo_cuda.cu and run it under `gpufl run "
              "--engines cupti,nvml,host`; otherwise the simulated GPU. on: "
              "fail when that is not possible. off: simulated GPU" },
    { .name = "engines",
      .type = OPT_STR,
      OPT_F_PTR(T, engines),
      .def = "sim,host",
      .arg = "LIST",
      .help = "engines of the simulated workload" },
    { .name = "duration",
      .type = OPT_DUR,
      .unit = OPT_SEC,
      OPT_F_UINT(T, duration_s),
      .max = 1000000000,
      .help = "stop by itself after this long (a bare number is seconds; "
              "default: run until Ctrl-C)" },
    { .name = "ui-dir",
      .type = OPT_STR,
      OPT_F_PTR(T, ui_dir),
      .arg = "DIR",
      .def_doc = "web/dist of this build",
      .help = "the web UI's built files" },
    { .name = "idle",
      .type = OPT_BOOL,
      OPT_F_SINT(T, idle),
      .def = "true",
      .help = "run the idle detector (--no-idle: do not)" },
    { .name = "memprof",
      .type = OPT_BOOL,
      OPT_F_SINT(T, memprof),
      .def = "true",
      .help = "run the memory profiler (--no-memprof: do not)" },
    { .name = "fleet",
      .type = OPT_BOOL,
      OPT_F_SINT(T, fleet),
      .flags = OPT_CLI_ONLY,
      .help = "the scale path instead: agents -> Kafka (mock) -> two servers "
              "-> PostgreSQL, S3 archive; runs scripts/fleet.sh, whose "
              "options (--agents N, --runs N, --port P, --no-s3, ...) follow "
              "(docs/fleet.md)" },
    { .name = "quiet",
      .type = OPT_BOOL,
      OPT_F_SINT(T, quiet),
      .short_name = 'q',
      .help = "only the URL, the token and errors" },
    GLOG_OPT_ROWS(T, log_level, log_format),
};
#undef T

/* Read by cli_demo_gpu.c: the flags nvcc gets. */
static const char *const demo_env_known[] = { "GPUFL_DEMO_NVCC_FLAGS", NULL };

const opt_prog cli_demo_prog = {
    .name = "gpufl demo",
    .env_prefix = "GPUFL_DEMO_",
    .opts = demo_rows,
    .n = sizeof demo_rows / sizeof demo_rows[0],
    .size = sizeof(demo_opts),
    .usage = "usage: gpufl demo [OPTIONS]\n\n"
             "Runs the whole gpufl stack on this machine: gpufl-server "
             "(embedded SQLite and the\nweb UI), gpufl-agent shipping over "
             "HTTP, and example workloads that keep\nproducing live data "
             "(on the simulated GPU, labelled simulated; with a\n"
             "GPU, a CUDA program built with nvcc under `gpufl run`), plus the "
             "idle\ndetector and the memory profiler where they are "
             "available.  Prints the\nURL and the token; Ctrl-C stops "
             "everything it started.\n",
    .tail = "Environment: NVCC (the compiler for --gpu), GPUFL_DEMO_NVCC_FLAGS "
            "(flags it adds).\nDisk: each run of the example writes about "
            "40 KB of logs per step; the agent ships\nthem and the server "
            "stores them under DIR.  Exit: 0 after a clean stop, 1 when a\n"
            "part failed (its log in DIR is named), 2 for a usage error.\n",
    .env_known = demo_env_known,
};

/* What the table cannot say: the checks across a value's shape. */
static int check_opts(demo_opts *o)
{
    if (!strchr(o->listen, ':')) {
        glog_error("demo", "--listen wants ADDR:PORT, e.g. "
                           "127.0.0.1:8080");
        return -1;
    }
    if (o->token && (strlen(o->token) < 32 || strlen(o->token) > 64)) {
        glog_error("demo", "--token must be 32 to 64 characters"
                           " (gpufl-server refuses shorter admin tokens; e.g."
                           " `openssl rand -hex 16`)");
        return -1;
    }
    if (o->steps == 0)
        o->steps = 1;
    return 0;
}

static void say(const demo *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(const demo *d, const char *fmt, ...)
{
    va_list ap;
    if (d->o.quiet)
        return;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

static void sleep_ms(int ms)
{
    struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&t, NULL); /* a signal ends it early: that is wanted */
}

/* Prints the last lines of a child's log, to say why it failed. */
static void show_tail(const char *path)
{
    char buf[4096];
    FILE *f = fopen(path, "r");
    long at;
    size_t n;
    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    at = ftell(f);
    fseek(f, at > (long)sizeof buf - 1 ? at - (long)sizeof buf + 1 : 0,
          SEEK_SET);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    glog_error("demo", "---- last lines of %s\n%s----", path, buf);
}

static int exists_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The UI's built files: --ui-dir, the source tree's web/dist beside this
 * build (build/bin or build/asan/bin, some levels up), or the installed
 * share/gpufl/web. */
static const char *find_ui(demo *d, char *out, size_t cap)
{
    const char *rel[] = { "../../web/dist", "../../../web/dist",
                          "../share/gpufl/web" };
    if (d->o.ui_dir)
        return exists_dir(d->o.ui_dir) ? d->o.ui_dir : NULL;
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char cand[DEMO_PATH + 32];
        snprintf(cand, sizeof cand, "%s/%s/index.html", d->bin, rel[i]);
        if (access(cand, R_OK) == 0) {
            snprintf(out, cap, "%s/%s", d->bin, rel[i]);
            return out;
        }
    }
    return NULL;
}

static int start_server(demo *d)
{
    char exe[DEMO_PATH + 32], log[DEMO_PATH + 32], ui[DEMO_PATH + 32];
    const char *uidir = find_ui(d, ui, sizeof ui);
    char *argv[12];
    int n = 0;

    snprintf(exe, sizeof exe, "%s/gpufl-server", d->bin);
    snprintf(log, sizeof log, "%s/server.log", d->root);
    argv[n++] = exe;
    argv[n++] = "--listen";
    argv[n++] = (char *)d->o.listen;
    argv[n++] = "--data-dir";
    argv[n++] = d->data;
    argv[n++] = "--admin-token";
    argv[n++] = d->token;
    if (uidir) {
        argv[n++] = "--ui-dir";
        argv[n++] = (char *)uidir;
    }
    argv[n] = NULL;
    say(d, "[1/4] starting gpufl-server on %s (SQLite in %s)\n", d->url,
        d->data);
    if (!uidir)
        say(d, "      the web UI is not built (needs Node.js: 'make' builds "
               "web/dist); the API still works\n");
    d->server = cli_proc_start(&d->ps, "gpufl-server", argv, log, NULL);
    if (d->server < 0)
        return -1;
    for (int t = 0; t < 300 && !stop_flag; t++) {
        if (cli_http_ok(d->o.listen, "/healthz", 200))
            return 0;
        if (cli_proc_wait(&d->ps, d->server, 0) == 0) {
            glog_error("demo",
                       "gpufl-server exited at start (is %s already "
                       "in use? try --listen 127.0.0.1:8081)",
                       d->o.listen);
            show_tail(log);
            return -1;
        }
        sleep_ms(50);
    }
    if (!stop_flag) {
        glog_error("demo", "gpufl-server did not answer /healthz in "
                           "15 s");
        show_tail(log);
    }
    return -1;
}

static int start_agent(demo *d)
{
    char exe[DEMO_PATH + 32], log[DEMO_PATH + 32];
    char folder[DEMO_PATH + 32], url[400], cursor[DEMO_PATH + 32];
    char tok[120];
    /* --captures: the web UI's "Capture 30 s" works in the demo (the
     * token is the admin token) */
    char *argv[] = { exe,    folder,        "--type=http", url,
                     cursor, "--stats-s=0", "--captures",  NULL };
    char *env[] = { tok, NULL };

    snprintf(exe, sizeof exe, "%s/gpufl-agent", d->bin);
    snprintf(log, sizeof log, "%s/agent.log", d->root);
    snprintf(folder, sizeof folder, "--folder=%s", d->logs);
    snprintf(url, sizeof url, "--url=%s/api/v1/events/", d->url);
    snprintf(cursor, sizeof cursor, "--cursor-file=%s/agent.cursor", d->root);
    /* the token through the environment: not visible in ps */
    snprintf(tok, sizeof tok, "GPUFL_AGENT_TOKEN=%s", d->token);
    say(d, "[2/4] starting gpufl-agent: %s -> %s over HTTP\n", d->logs, d->url);
    d->agent = cli_proc_start(&d->ps, "gpufl-agent", argv, log, env);
    return d->agent < 0 ? -1 : 0;
}

/* The memory profiler on example_alloc: eBPF uprobes on the driver the
 * example loads - the real one when this machine has a GPU, otherwise the
 * tests' stand-in libcuda (build/fake/cudamem), and then the profiles are
 * labelled simulated.  Skipped, with the reason, when eBPF is not allowed. */
static void start_memprof(demo *d, char *self)
{
    char exe[DEMO_PATH + 48], log[DEMO_PATH + 32], fake[DEMO_PATH + 32];
    char ldpath[DEMO_PATH + 64], pid[16];
    char *check[] = { self, "memprof", "--check", NULL };
    char *env[] = { ldpath, NULL };
    int real = access("/dev/nvidiactl", F_OK) == 0, i, w, ok;

    snprintf(fake, sizeof fake, "%s/../fake/cudamem", d->bin);
    snprintf(ldpath, sizeof ldpath, "LD_LIBRARY_PATH=%s", fake);
    if (!real) {
        char lib[DEMO_PATH + 48];
        snprintf(lib, sizeof lib, "%s/libcuda.so.1", fake);
        if (access(lib, R_OK) != 0) {
            say(d, "      memprof skipped: no GPU and no stand-in driver "
                   "(build the tests: build/fake/cudamem)\n");
            return;
        }
    }
    snprintf(log, sizeof log, "%s/memprof.log", d->root);
    i = cli_proc_start(&d->ps, "memprof-check", check, log, NULL);
    ok = i >= 0 && cli_proc_wait(&d->ps, i, 10000) == 0 &&
         WIFEXITED(d->ps.p[i].status) && !WEXITSTATUS(d->ps.p[i].status);
    cli_proc_release(&d->ps, i); /* kept if it still runs: stopped at exit */
    if (!ok) {
        say(d,
            "      memprof skipped: eBPF is not permitted here (root or "
            "CAP_BPF+CAP_PERFMON; see %s)\n",
            log);
        return;
    }
    snprintf(exe, sizeof exe, "%s/example_alloc", d->bin);
    if (access(exe, X_OK) != 0)
        snprintf(exe, sizeof exe, "%s/../libexec/gpufl/example_alloc", d->bin);
    {
        char alog[DEMO_PATH + 32];
        char *argv[] = { exe, "--steps", "0", "--log-dir", d->logs, NULL };
        snprintf(alog, sizeof alog, "%s/example_alloc.log", d->root);
        w = cli_proc_start(&d->ps, "example_alloc", argv, alog,
                           real ? NULL : env);
    }
    if (w < 0)
        return;
    snprintf(pid, sizeof pid, "%d", (int)d->ps.p[w].pid);
    {
        char *argv[] = { self,
                         "memprof",
                         "--pid",
                         pid,
                         "--server",
                         d->url,
                         "--token",
                         d->token,
                         "--interval",
                         "5",
                         real ? NULL : "--simulated",
                         NULL };
        cli_proc_start(&d->ps, "gpufl-memprof", argv, log, NULL);
    }
    say(d, "      gpufl memprof (eBPF) on example_alloc%s -> the Memory view\n",
        real ? "" : " (stand-in driver: simulated)");
}

/* Optional parts: the `gpufl` subcommands that exist in this build. */
static void start_extras(demo *d)
{
    char self[DEMO_PATH + 32], log[DEMO_PATH + 32];
    snprintf(self, sizeof self, "%s/gpufl", d->bin);
    if (d->o.idle && cli_has_command("idle")) {
        /* six simulated GPUs in states the Fleet view tells apart: a
         * training job, memory held, a pod's GPU with no process
         * (ALLOCATED_UNUSED at once), leaked memory whose holder is
         * named (a dirty GPU), and two that need 5 minutes: utilisation
         * without a process (PHANTOM) and a hung job (STUCK) */
        char *argv[] = { self, "idle", "watch", "--simulate",
                         "train,held,phantom,stuck,allocated,leaked",
                         "--sim-gpus", "6", "--log-dir", d->logs,
                         /* waste lines soon, for the Fleet waste view */
                         "--waste-interval", "5s", NULL };
        snprintf(log, sizeof log, "%s/idle.log", d->root);
        say(d, "      gpufl idle watch on 6 simulated GPUs -> verdicts and "
               "waste in the Fleet view\n");
        cli_proc_start(&d->ps, "gpufl-idle", argv, log, NULL);
    }
    if (d->o.memprof && cli_has_command("memprof"))
        start_memprof(d, self);
}

/* --gpu: auto finds a GPU and builds the CUDA workload; any failure on the
 * way falls back to the simulated GPU (on: stops the demo instead). */
static int setup_gpu(demo *d)
{
    char why[DEMO_PATH + 128], log[DEMO_PATH + 32], out[DEMO_PATH + 16];
    int n, must = !strcmp(d->o.gpu, "on");
    if (!strcmp(d->o.gpu, "off"))
        return 0;
    n = demo_gpu_count(why, sizeof why);
    if (n > 0) {
        say(d,
            "      %d CUDA device%s found: building the CUDA workload with "
            "nvcc\n",
            n, n == 1 ? "" : "s");
        snprintf(out, sizeof out, "%s/cuda", d->root);
        snprintf(log, sizeof log, "%s/nvcc.log", d->root);
        if (fs_mkdir_p(out))
            snprintf(why, sizeof why, "cannot create %s: %s", out,
                     strerror(errno));
        else if (!demo_gpu_build(d->bin, out, log, d->cuda, sizeof d->cuda, why,
                                 sizeof why)) {
            say(d, "      built %s\n", d->cuda);
            return 0;
        }
        d->cuda[0] = 0;
    }
    if (must) {
        glog_error("demo", "--gpu on: %s", why);
        return -1;
    }
    say(d, "      no real GPU workload (%s): the simulated GPU it is\n", why);
    return 0;
}

/* What one run of the simulated workload is: runs 1, 3 plain, 2 a 4-rank
 * job, 4 perturbed, and so on, so that the first minutes already give the
 * Job and Regressions views something to show. */
enum { RUN_PLAIN, RUN_JOB, RUN_PERTURBED };

static int run_kind(const demo *d, unsigned run)
{
    if (d->cuda[0] || !strstr(d->o.engines, "sim"))
        return RUN_PLAIN; /* perturbations are the simulated GPU's */
    return run % 4 == 2 ? RUN_JOB : run % 4 == 0 ? RUN_PERTURBED : RUN_PLAIN;
}

/* The variables of one process of a run (its own seed: the runs differ
 * the way real runs do).  env[] gets pointers into buf. */
static void run_env(char buf[][96], char **env, unsigned run, int kind,
                    const char *job, int rank)
{
    int n = 0;
    snprintf(buf[n++], 96, "GPUFL_SIM_SEED=%u",
             run * DEMO_RANKS + (unsigned)rank);
    snprintf(buf[n++], 96, "GPUFL_STEP_SCOPE=train_step");
    if (kind == RUN_PERTURBED)
        snprintf(buf[n++], 96, "GPUFL_SIM_PERTURB=%s", DEMO_PERTURB);
    if (kind == RUN_JOB) {
        snprintf(buf[n++], 96, "GPUFL_JOB=%s", job);
        snprintf(buf[n++], 96, "GPUFL_RANK=%d", rank);
        snprintf(buf[n++], 96, "GPUFL_WORLD_SIZE=%d", DEMO_RANKS);
        snprintf(buf[n++], 96, "GPUFL_LOCAL_RANK=%d", rank);
        if (rank == DEMO_JOB_SLOW_RANK)
            snprintf(buf[n++], 96, "GPUFL_SIM_PERTURB=%s", DEMO_JOB_PERTURB);
    }
    for (int i = 0; i < n; i++)
        env[i] = buf[i];
    env[n] = NULL;
}

/* One run of the workload: the CUDA program under `gpufl run` (real
 * capture) when setup_gpu built it, else the example on the engines of
 * --engines (one process, or the ranks of a job). */
static int start_workload(demo *d)
{
    char exe[DEMO_PATH + 32], log[DEMO_PATH + 32], steps[16];
    char *train[] = { exe,
                      "--steps",
                      steps,
                      "--log-dir",
                      d->logs,
                      "--engines",
                      (char *)d->o.engines,
                      NULL };
    char *cuda[] = { exe,     "run",       "--engines", "cupti,nvml,host",
                     "--app", "cuda-demo", "--log-dir", d->logs,
                     "--",    d->cuda,     steps,       NULL };
    const char *name = d->cuda[0] ? "demo_cuda" : "example_train";
    /* a job id of its own, also across starts of the demo, which may
     * reuse the data of an earlier one: its start time and a count */
    char job[48], ebuf[DEMO_RANKS][8][96], *env[DEMO_RANKS][9];
    unsigned run = d->runs + 1;
    int kind = run_kind(d, run), n = kind == RUN_JOB ? DEMO_RANKS : 1;

    if (d->cuda[0]) {
        snprintf(exe, sizeof exe, "%s/gpufl", d->bin);
    } else {
        /* the build keeps it beside gpufl; an install in libexec/gpufl */
        snprintf(exe, sizeof exe, "%s/example_train", d->bin);
        if (access(exe, X_OK) != 0)
            snprintf(exe, sizeof exe, "%s/../libexec/gpufl/example_train",
                     d->bin);
    }
    snprintf(log, sizeof log, "%s/workload.log", d->root);
    snprintf(steps, sizeof steps, "%u", d->o.steps);
    snprintf(job, sizeof job, "demo-job-%lld-%u", d->t_start, d->jobs + 1);
    for (int r = 0; r < n; r++) {
        run_env(ebuf[r], env[r], run, kind, job, r);
        d->work[r] = cli_proc_start(&d->ps, name, d->cuda[0] ? cuda : train,
                                    log, d->cuda[0] ? NULL : env[r]);
        if (d->work[r] < 0)
            return -1;
    }
    d->runs = run;
    d->jobs += kind == RUN_JOB;
    if (d->cuda[0])
        say(d,
            "      run %u: demo_cuda, %u steps, under gpufl run (engines "
            "cupti,nvml,host)\n",
            d->runs, d->o.steps);
    else if (kind == RUN_JOB)
        say(d,
            "      run %u: job %s, %d ranks of example_train, %u steps; "
            "rank %d slowed (%s)\n",
            d->runs, job, DEMO_RANKS, d->o.steps, DEMO_JOB_SLOW_RANK,
            DEMO_JOB_PERTURB);
    else
        say(d, "      run %u: example_train, %u steps, engines %s%s%s%s\n",
            d->runs, d->o.steps, d->o.engines,
            strstr(d->o.engines, "sim") ? " (simulated GPU)" : "",
            kind == RUN_PERTURBED ? "; perturbed: " : "",
            kind == RUN_PERTURBED ? DEMO_PERTURB : "");
    return 0;
}

/* The run's slot that is i, or -1. */
static int work_of(const demo *d, int i)
{
    for (int r = 0; r < DEMO_RANKS; r++)
        if (i >= 0 && d->work[r] == i)
            return r;
    return -1;
}

static int work_running(const demo *d)
{
    for (int r = 0; r < DEMO_RANKS; r++)
        if (d->work[r] >= 0)
            return 1;
    return 0;
}

/* The main loop: keep the workload going, watch the long-lived parts. */
static int run_loop(demo *d)
{
    time_t t0 = time(NULL), next = 0;
    while (!stop_flag) {
        int i = cli_proc_poll(&d->ps);
        time_t now = time(NULL);
        if (d->o.duration_s && now - t0 >= (time_t)d->o.duration_s)
            break;
        if (work_of(d, i) >= 0) {
            cli_proc *p = &d->ps.p[i];
            if (p->status != 0) {
                char log[DEMO_PATH + 32];
                snprintf(log, sizeof log, "%s/workload.log", d->root);
                glog_error("demo",
                           "the workload failed (status "
                           "%d)",
                           p->status);
                show_tail(log);
                return 1;
            }
            cli_proc_release(&d->ps, i);
            d->work[work_of(d, i)] = -1;
            if (!work_running(d))
                next = now + (time_t)d->o.pause_s;
        } else if (i >= 0) {
            char log[DEMO_PATH + 64];
            const char *n = d->ps.p[i].name;
            snprintf(log, sizeof log, "%s/%s.log", d->root,
                     !strncmp(n, "gpufl-", 6) ? n + 6 : n);
            glog_error("demo", "%s stopped unexpectedly", n);
            show_tail(log);
            return 1;
        }
        if (!work_running(d) && now >= next && start_workload(d))
            return 1;
        sleep_ms(100);
    }
    return 0;
}

/* Hands --fleet over to scripts/fleet.sh (source tree or share/gpufl). */
static int run_fleet(demo *d, int argc, char **argv)
{
    /* build/bin, build/asan/bin: the source tree is some levels up */
    const char *rel[] = { "../../scripts/fleet.sh", "../../../scripts/fleet.sh",
                          "../share/gpufl/fleet.sh" };
    char path[DEMO_PATH + 64];
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", d->bin, rel[i]);
        if (access(path, X_OK) == 0) {
            char **av = calloc((size_t)argc + 2, sizeof *av);
            int n = 0;
            if (!av)
                return 1;
            av[n++] = path;
            for (int k = 1; k < argc; k++)
                if (strcmp(argv[k], "--fleet"))
                    av[n++] = argv[k];
            av[n] = NULL;
            setenv("GPUFL_BIN_DIR", d->bin, 1);
            execv(path, av);
            glog_error("demo", "cannot run %s: %s", path, strerror(errno));
            free(av);
            return 1;
        }
    }
    glog_error("demo", "--fleet needs scripts/fleet.sh (from the "
                       "source tree or share/gpufl)");
    return 1;
}

/* The demo itself, its options loaded. */
static int demo_run(demo *d)
{
    struct sigaction sa;
    int rc;

    if (fs_mkdir_p(d->o.dir) || !realpath(d->o.dir, d->root)) {
        glog_error("demo", "cannot create %s: %s", d->o.dir, strerror(errno));
        return 1;
    }
    snprintf(d->logs, sizeof d->logs, "%s/logs", d->root);
    snprintf(d->data, sizeof d->data, "%s/data", d->root);
    if (fs_mkdir_p(d->logs) || fs_mkdir_p(d->data)) {
        glog_error("demo", "cannot create folders in %s: %s", d->root,
                   strerror(errno));
        return 1;
    }
    if (d->o.token)
        snprintf(d->token, sizeof d->token, "%s", d->o.token);
    else {
        unsigned char r[16];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
            glog_error("demo", "no randomness for a token");
            return 1;
        }
        for (size_t i = 0; i < sizeof r; i++)
            snprintf(d->token + 2 * i, 3, "%02x", r[i]);
    }
    snprintf(d->url, sizeof d->url, "http://%s", d->o.listen);
    d->t_start = (long long)time(NULL);

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: waits end at once */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    rc = 1;
    if (start_server(d) || start_agent(d))
        goto stop;
    say(d, "[3/4] starting the workloads (logs in %s)\n", d->logs);
    if (setup_gpu(d))
        goto stop;
    start_extras(d);
    if (start_workload(d))
        goto stop;
    printf("\n  gpufl is running:  %s/\n  sign in with token: %s\n\n", d->url,
           d->token);
    say(d,
        "  API: curl -H 'Authorization: Bearer %s' %s/api/v1/sessions\n"
        "%s"
        "  Ctrl-C stops everything.\n\n",
        d->token, d->url,
        d->cuda[0] ? "  The workload runs on this machine's GPU (real "
                     "capture).\n"
                   : "  Data from the simulated GPU is labelled "
                     "\"simulated\".\n");
    fflush(stdout);
    rc = run_loop(d);
stop:
    say(d, "[4/4] stopping: workload, detectors, then the agent (it ships "
           "what is left), then the server\n");
    for (int r = 0; r < DEMO_RANKS; r++)
        if (d->work[r] >= 0)
            cli_proc_stop(&d->ps, d->work[r], 5000);
    /* let the agent catch up with the last lines before it stops */
    if (d->agent >= 0 && d->ps.p[d->agent].pid > 0)
        sleep_ms(1500);
    for (int i = d->ps.n - 1; i >= 0; i--)
        if (i != d->server && i != d->agent)
            cli_proc_stop(&d->ps, i, 5000);
    if (d->agent >= 0)
        cli_proc_stop(&d->ps, d->agent, 10000);
    if (d->server >= 0)
        cli_proc_stop(&d->ps, d->server, 10000);
    say(d, "stopped; data kept in %s (run again to reuse it)\n", d->root);
    return rc;
}

int cli_demo_main(int argc, char **argv)
{
    static demo d; /* large; one per process */
    static opt_ctx c;
    int rc;

    memset(&d, 0, sizeof d);
    d.server = d.agent = -1;
    for (int r = 0; r < DEMO_RANKS; r++)
        d.work[r] = -1;
    glog_setup("gpufl demo", GLOG_INFO, GLOG_TEXT);
    if (cli_self_dir(d.bin, sizeof d.bin)) {
        glog_error("demo", "cannot find my own folder");
        return 1;
    }
    /* fleet.sh has options of its own (--agents, --runs, ...): it parses */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--fleet"))
            return run_fleet(&d, argc, argv);
    rc = opt_cli(&c, &cli_demo_prog, &d.o, NULL, argc, argv);
    if (!rc)
        glog_setup("gpufl demo", d.o.log_level, d.o.log_format);
    if (!rc && check_opts(&d.o))
        rc = 2;
    if (!rc)
        rc = demo_run(&d);
    opt_release(&cli_demo_prog, &d.o);
    return rc < 0 ? 0 : rc;
}
