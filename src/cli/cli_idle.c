/*
 * cli_idle.c - `gpufl idle`: is a GPU session in use?  One option table,
 * read by the option engine (src/common/opt.h), gives parsing of flags,
 * the config file (--config FILE, "name = value" lines), GPUFL_IDLE_*
 * environment variables, --help, --dump-config and the table of
 * docs/idle.md.  Precedence: defaults < config file < environment <
 * flags.  The detector itself is src/idle (docs/idle.md).
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_int.h"
#include "common/clock.h"
#include "common/log.h"
#include "httpc/httpc.h"
#include "common/opt.h"
#include "common/price.h"
#include "idle/idle.h"

#define MAX_SESS 64
#define MAX_PRICES 64

typedef struct idle_cli {
    idle_opts o;
    char *session[MAX_SESS]; /* --session specs, parsed after the load */
    size_t nsession;
    int once;
    int log_level, log_format;    /* GLOG_* (common/log.h) */
    idle_sess_cfg sess[MAX_SESS]; /* what they say (o.sessions) */
    char price[MAX_PRICES][192];  /* --price MODEL=PRICE as given */
    size_t nprice;
    gpu_price prices[MAX_PRICES]; /* ... parsed (o.prices) */
    char currency[16];
} idle_cli;

#define T idle_cli
#define DUR_S .type = OPT_DUR, .unit = OPT_SEC
#define FRAC(n, m) .name = n, .type = OPT_FLOAT, OPT_F_DBL(T, o.cfg.m)
static const opt_def idle_rows[] = {
    { .name = "once",
      .type = OPT_BOOL,
      OPT_F_SINT(T, once),
      .help = "decide once, print, exit with the verdict's code (default)" },
    { .name = "json",
      .type = OPT_BOOL,
      OPT_F_SINT(T, o.json),
      .help = "--once: print JSON" },
    { .name = "probe",
      .type = OPT_BOOL,
      OPT_F_SINT(T, o.probe),
      .help = "--once: print a Kubeflow-style {\"has_activity\":..} probe" },
    { .name = "clean-check",
      .type = OPT_BOOL,
      OPT_F_SINT(T, o.clean_check),
      .help = "--once: exit 0 when every GPU is safe for the next job, 6 "
              "dirty (leaked memory, PHANTOM, STUCK), 7 a process still "
              "runs, 4 unknown" },
    { .name = "samples",
      .type = OPT_INT,
      OPT_F_UINT(T, o.samples),
      .def = "5",
      .min = 1,
      .max = 100000,
      .help = "--once: samples taken, interval apart" },
    { .name = "session-name",
      .type = OPT_STR,
      OPT_F_PTR(T, o.only),
      .arg = "NAME",
      .help = "report (and exit by) this session only" },
    { .name = "session",
      .type = OPT_LIST,
      OPT_F_LIST(T, session, nsession, OPT_ST_PTR),
      .flags = OPT_REPEAT,
      .env_sep = ';',
      .arg = "SPEC",
      .help = "a session: name=N,cgroup=PATH,pod=NS/POD,container=C,user=U,"
              "tty=DEV,ports=P+P,jupyter=URL,token=T,devs=D+D,start=UNIXSEC" },
    { .name = "auto-sessions",
      .type = OPT_BOOL,
      OPT_F_SINT(T, o.auto_sessions),
      .help = "one session per cgroup of GPU processes (default without "
              "--session)" },
    { .name = "nvml-lib",
      .type = OPT_STR,
      OPT_F_PTR(T, o.nvml_lib),
      .def_doc = "libnvidia-ml.so.1",
      .arg = "LIB",
      .help = "NVML library to load" },
    { .name = "simulate",
      .type = OPT_STR,
      OPT_F_PTR(T, o.sim),
      .arg = "LIST",
      .help = "SIMULATED GPUs: none,held,one_thread,matmul,phantom,bursty,"
              "train,stuck,allocated,leaked,dead,all" },
    { .name = "sim-gpus",
      .type = OPT_INT,
      OPT_F_SINT(T, o.sim_gpus),
      .min = 1,
      .max = 16,
      .help = "simulated GPUs (the --simulate list is cycled)" },
    { .name = "dcgm-url",
      .type = OPT_STR,
      OPT_F_PTR(T, o.dcgm_url),
      .arg = "URL",
      .help = "dcgm-exporter /metrics URL for SM_ACTIVE / GR_ENGINE_ACTIVE" },
    { .name = "root",
      .type = OPT_STR,
      OPT_F_PTR(T, o.env.root),
      .arg = "DIR",
      .help = "read proc/, sys/fs/cgroup/, var/run/utmp, dev/ under DIR "
              "(tests)" },
    { .name = "utmp",
      .type = OPT_STR,
      OPT_F_PTR(T, o.env.utmp),
      .arg = "FILE",
      .def_doc = "ROOT/var/run/utmp",
      .help = "utmp file" },
    { .name = "veto-dir",
      .type = OPT_STR,
      OPT_F_PTR(T, o.env.veto_dir),
      .arg = "DIR",
      .help = "directory of SESSION.keep veto files (gpufl idle keep)" },
    { .name = "log-dir",
      .type = OPT_STR,
      OPT_F_PTR(T, o.log_dir),
      .arg = "DIR",
      .help = "watch: write gpufl logs with verdict lines here (for "
              "gpufl-agent)" },
    { .name = "listen",
      .type = OPT_STR,
      OPT_F_PTR(T, o.listen),
      .arg = "ADDR:PORT",
      .help = "watch: serve /metrics, /probe, /verdicts on ADDR:PORT" },
    { .name = "hook-cmd",
      .type = OPT_STR,
      OPT_F_PTR(T, o.hook_cmd),
      .arg = "CMD",
      .help = "watch: run this (sh -c) when a session's warning period "
              "ends" },
    { .name = "hook-url",
      .type = OPT_STR,
      OPT_F_PTR(T, o.hook_url),
      .arg = "URL",
      .help = "watch: POST the verdict JSON here when a warning period "
              "ends" },
    { .name = "ca-file",
      .type = OPT_STR,
      OPT_F_PTR(T, o.env.ca_file),
      .arg = "FILE",
      .help = "PEM file of the CAs https Jupyter, dcgm-exporter and "
              "--hook-url servers are verified with (peer and host name, "
              "always); default the system's CA store" },
    { .name = "duration",
      DUR_S,
      OPT_F_UINT(T, o.duration_s),
      .max = 1000000000,
      .help = "watch: exit after this long (default: run until SIGTERM)" },
    { .name = "interval",
      .type = OPT_DUR,
      .unit = OPT_MS,
      OPT_F_UINT(T, o.cfg.interval_ms),
      .def = "1000",
      .min = 10,
      .max = 3600000,
      .help = "sampling period (a bare number is ms)" },
    { .name = "window",
      DUR_S,
      OPT_F_UINT(T, o.cfg.window_s),
      .def = "60s",
      .min = 1,
      .max = 86400,
      .help = "GPU window W" },
    { .name = "empty-mem",
      .type = OPT_SIZE,
      OPT_F_UINT(T, o.cfg.fb_empty),
      .def = "64MiB",
      .max = 1000000000000000ull,
      .help = "memory at most this counts as none" },
    { FRAC("busy-util", busy_util), .def = "50", .fmax = 100,
      .help = "busy: util mean >= this (%)" },
    { FRAC("bursty-duty", bursty_duty), .def = "0.5", .fmax = 1,
      .help = "bursty: share of samples with util > 0 below this" },
    { FRAC("low-occ-sm", low_occ_sm), .def = "0.05", .fmax = 1,
      .help = "low occupancy: SM active below this" },
    { FRAC("held-sm", held_sm), .def = "0.01", .fmax = 1,
      .help = "held: SM active at most this" },
    { FRAC("busy-power", busy_power), .def = "0.5", .fmax = 2,
      .help = "no SM metric: busy at power/limit >= this" },
    { FRAC("held-floor", held_floor), .def = "0.3", .fmax = 2,
      .help = "power/limit of a resident idle context" },
    { FRAC("low-occ-margin", low_occ_margin), .def = "0.1", .fmax = 2,
      .help = "no SM metric: low occupancy at power <= floor + this" },
    { FRAC("phantom-util", phantom_util), .def = "90", .fmax = 100,
      .help = "phantom: util mean >= this with no process and no memory" },
    { FRAC("empty-util", empty_util), .def = "5", .fmax = 100,
      .help = "empty: util mean below this with no process and no memory "
              "(what an ended context leaves)" },
    { .name = "phantom-hold",
      DUR_S,
      OPT_F_UINT(T, o.cfg.phantom_hold_s),
      .def = "5m",
      .max = 10000000,
      .help = "phantom: sustained this long" },
    { FRAC("stuck-util", stuck_util), .def = "95", .fmax = 100,
      .help = "stuck: util at least this in every sample (%)" },
    { FRAC("stuck-sm", stuck_sm), .def = "0.005", .fmax = 1,
      .help = "stuck: SM active at most this (GPM or DCGM)" },
    { FRAC("stuck-margin", stuck_margin), .def = "0.05", .fmax = 2,
      .help = "stuck, no SM metric: power/limit <= held-floor + this" },
    { .name = "stuck-hold",
      DUR_S,
      OPT_F_UINT(T, o.cfg.stuck_hold_s),
      .def = "5m",
      .max = 10000000,
      .help = "stuck: sustained this long with memory unchanged" },
    { .name = "price",
      .type = OPT_LIST,
      OPT_F_LIST(T, price, nprice, OPT_ST_ARR),
      .flags = OPT_REPEAT,
      .env_sep = ',',
      .arg = "MODEL=PRICE",
      .help = "--once text: what one GPU of a model costs per hour, for the "
              "cost of the waste seen (the model as NVML names it; *=PRICE "
              "for every model without its own; repeatable)" },
    { .name = "currency",
      .type = OPT_STR,
      OPT_F_ARR(T, currency),
      .def = "USD",
      .arg = "CODE",
      .help = "the currency of --price (a label)" },
    { .name = "metrics-max-procs",
      .type = OPT_INT,
      OPT_F_UINT(T, o.cfg.metrics_procs),
      .def = "100",
      .max = 4096,
      .help = "per-process series of gpufl_gpu_busy_seconds_total and "
              "gpufl_gpu_memory_used_bytes; later processes are counted in "
              "their owner's series (pid=\"\")" },
    { .name = "kubelet-checkpoint",
      .type = OPT_STR,
      OPT_F_PTR(T, o.env.kubelet_ckpt),
      .arg = "FILE",
      .help = "kubelet device-plugin checkpoint (pod -> GPUs), under --root; "
              "default /var/lib/kubelet/device-plugins/"
              "kubelet_internal_checkpoint" },
    { .name = "slurm-cgroup",
      .type = OPT_STR,
      OPT_F_PTR(T, o.env.slurm_cgroup),
      .arg = "DIR",
      .help = "the cgroup holding Slurm's job_<id> cgroups, under --root; "
              "default /sys/fs/cgroup/system.slice/slurmstepd.scope" },
    { .name = "slurm-scontrol",
      .type = OPT_STR,
      OPT_F_PTR(T, o.slurm_scontrol),
      .arg = "PATH|off",
      .def_doc = "scontrol when Slurm is configured",
      .help = "ask `PATH show job -d` every 5 s which Slurm job holds which "
              "GPU of this node (off: never; default: scontrol from PATH when "
              "SLURM_CONF or /etc/slurm/slurm.conf exists)" },
    { .name = "slurm-node",
      .type = OPT_STR,
      OPT_F_PTR(T, o.slurm_node),
      .arg = "NAME",
      .def_doc = "the short host name",
      .help = "this node's Slurm NodeName" },
    { .name = "jupyterhub-url",
      .type = OPT_STR,
      OPT_F_PTR(T, o.hub_url),
      .arg = "URL",
      .help = "watch: report GPU work of Hub users (JUPYTERHUB_USER of the "
              "GPU's processes) as activity to this JupyterHub (its base URL "
              "or .../hub/api); https, or http to a loopback address" },
    { .name = "jupyterhub-token",
      .type = OPT_STR,
      OPT_F_PTR(T, o.hub_token),
      .flags = OPT_SECRET,
      .arg = "TOKEN",
      .help = "the Hub API token (a service with the users:activity scope)" },
    { .name = "jupyterhub-insecure",
      .type = OPT_BOOL,
      OPT_F_SINT(T, o.hub_insecure),
      .help = "allow a plain http:// --jupyterhub-url to another machine "
              "(the token then crosses the network in the clear)" },
    { .name = "jupyterhub-every",
      DUR_S,
      OPT_F_UINT(T, o.hub_every_s),
      .def = "60s",
      .min = 1,
      .max = 86400,
      .help = "at most one activity report a Hub user this often" },
    { .name = "gpufl-logs",
      .type = OPT_STR,
      OPT_F_PTR(T, o.env.gpufl_logs),
      .arg = "DIR",
      .help = "the folder of gpufl sessions' logs (<prefix>.device.log): "
              "exact busy time and kernel progress of processes under gpufl" },
    { FRAC("min-valid", min_valid), .def = "0.5", .fmax = 1,
      .help = "share of readable samples in W, else UNKNOWN" },
    { FRAC("cpu-busy", cpu_busy), .def = "0.5", .fmax = 1024,
      .help = "container CPU counted as busy, cores" },
    { .name = "grace",
      DUR_S,
      OPT_F_UINT(T, o.cfg.grace_s),
      .def = "15m",
      .max = 10000000,
      .help = "T_grace: STARTING" },
    { .name = "idle",
      DUR_S,
      OPT_F_UINT(T, o.cfg.idle_s),
      .def = "1h",
      .max = 100000000,
      .help = "T_idle" },
    { .name = "held",
      DUR_S,
      OPT_F_UINT(T, o.cfg.held_s),
      .def = "2h",
      .max = 100000000,
      .help = "T_held" },
    { .name = "max-age",
      DUR_S,
      OPT_F_UINT(T, o.cfg.max_age_s),
      .def = "7d",
      .max = 10000000000ull,
      .help = "T_max, 0 = off" },
    { .name = "gpu-unused",
      DUR_S,
      OPT_F_UINT(T, o.cfg.gpu_unused_s),
      .def = "4h",
      .max = 100000000,
      .help = "suggest releasing an unused GPU after this" },
    { .name = "warn",
      DUR_S,
      OPT_F_UINT(T, o.cfg.warn_s),
      .def = "5m",
      .max = 10000000,
      .help = "warning period" },
    { .name = "hysteresis",
      DUR_S,
      OPT_F_UINT(T, o.cfg.hyst_s),
      .def = "1m",
      .max = 10000000,
      .help = "hold before leaving an in-use verdict" },
    { .name = "waste-interval",
      .type = OPT_DUR,
      .unit = OPT_MS,
      .bare = OPT_SEC,
      OPT_F_UINT(T, o.waste_interval_ms),
      .def = "60",
      .min = 100,
      .max = 86400000,
      .help = "watch --log-dir: write `waste` lines (busy and wasted GPU "
              "seconds per GPU and owner since the last ones, for the "
              "server's /fleet/waste) this often, and at exit (a bare "
              "number is seconds)" },
    { .name = "refresh",
      DUR_S,
      OPT_F_UINT(T, o.cfg.refresh_s),
      .def = "1m",
      .min = 1,
      .max = 10000000,
      .help = "watch: re-log unchanged verdicts this often" },
    { .name = "veto-for",
      DUR_S,
      OPT_F_UINT(T, o.cfg.veto_s),
      .def = "4h",
      .min = 1,
      .max = 100000000,
      .help = "keep: veto length" },
    GLOG_OPT_ROWS(T, log_level, log_format),
};
#undef FRAC
#undef DUR_S
#undef T

/* Set by idle watch for --hook-cmd; a hook may run gpufl idle itself. */
static const char *const idle_env_known[] = { "GPUFL_IDLE_STATE",
                                              "GPUFL_IDLE_POD",
                                              "GPUFL_IDLE_CGROUP",
                                              "GPUFL_IDLE_VERDICT",
                                              "GPUFL_IDLE_USER",
                                              "GPUFL_IDLE_SLURM_JOB",
                                              NULL };

const opt_prog cli_idle_prog = {
    .name = "gpufl idle",
    .env_prefix = "GPUFL_IDLE_",
    .opts = idle_rows,
    .n = sizeof idle_rows / sizeof idle_rows[0],
    .size = sizeof(idle_cli),
    .usage = "usage: gpufl idle [--once] [--json|--probe] [OPTIONS]\n"
             "       gpufl idle watch [--log-dir DIR] [--listen ADDR:PORT] "
             "[OPTIONS]\n"
             "       gpufl idle keep SESSION --veto-dir DIR [--veto-for 4h]\n\n"
             "Decides whether GPUs and the sessions using them are in use, "
             "from NVML, DCGM,\nprocesses, connections, input and CPU, and "
             "says why (docs/idle.md).\n",
    .tail = "Exit codes of --once: 0 in use, 3 idle (reclaimable), 4 unknown "
            "data, 5 phantom GPU,\n1 failure, 2 usage error; with "
            "--clean-check: 0 clean, 6 dirty, 7 in use, 4 unknown.\n",
    .env_known = idle_env_known,
    .flags = OPT_P_ARGS,
};

static int parse_list(const char *v, int *out, int max, long hi)
{
    int n = 0;
    while (*v && n < max) {
        char *end;
        long x = strtol(v, &end, 10);
        if (end == v || x < 0 || x > hi)
            return -1;
        out[n++] = (int)x;
        v = *end == '+' ? end + 1 : end;
        if (*end && *end != '+')
            return -1;
    }
    return n;
}

static int parse_session(idle_cli *p, const char *spec, char *why, size_t cap)
{
    idle_sess_cfg *c;
    char buf[1024];
    char *rest = buf, *kv;
    if (p->o.nsessions >= MAX_SESS) {
        snprintf(why, cap, "at most %d sessions", MAX_SESS);
        return -1;
    }
    c = &p->sess[p->o.nsessions];
    memset(c, 0, sizeof *c);
    snprintf(buf, sizeof buf, "%s", spec);
    for (kv = strsep(&rest, ","); kv; kv = strsep(&rest, ",")) {
        char *eq = strchr(kv, '=');
        const char *k = kv, *v;
        if (!eq) {
            snprintf(why, cap, "session: \"%s\" is not KEY=VALUE", kv);
            return -1;
        }
        *eq = 0;
        v = eq + 1;
        if (!strcmp(k, "name"))
            snprintf(c->name, sizeof c->name, "%s", v);
        else if (!strcmp(k, "cgroup"))
            snprintf(c->cgroup, sizeof c->cgroup, "%s", v);
        else if (!strcmp(k, "pod"))
            snprintf(c->pod, sizeof c->pod, "%s", v);
        else if (!strcmp(k, "container"))
            snprintf(c->container, sizeof c->container, "%s", v);
        else if (!strcmp(k, "user"))
            snprintf(c->user, sizeof c->user, "%s", v);
        else if (!strcmp(k, "tty"))
            snprintf(c->tty, sizeof c->tty, "%s", v);
        else if (!strcmp(k, "jupyter"))
            snprintf(c->jupyter, sizeof c->jupyter, "%s", v);
        else if (!strcmp(k, "token"))
            snprintf(c->token, sizeof c->token, "%s", v);
        else if (!strcmp(k, "start"))
            c->start_ns = strtoull(v, NULL, 10) * 1000000000ull;
        else if (!strcmp(k, "ports") || !strcmp(k, "devs")) {
            int tmp[IDLE_MAX_GPUS], n;
            int is_ports = k[0] == 'p';
            n = parse_list(v, tmp, is_ports ? IDLE_MAX_PORTS : IDLE_MAX_GPUS,
                           is_ports ? 65535 : IDLE_MAX_GPUS - 1);
            if (n < 0) {
                snprintf(why, cap, "session: bad %s list \"%s\" (use A+B)", k,
                         v);
                return -1;
            }
            for (int i = 0; i < n; i++) {
                if (is_ports)
                    c->ports[i] = (uint16_t)tmp[i];
                else
                    c->devs[i] = tmp[i];
            }
            if (is_ports)
                c->nports = n;
            else
                c->ndevs = n;
        } else {
            snprintf(why, cap,
                     "session: unknown key \"%s\" (name, cgroup, pod, "
                     "container, user, tty, jupyter, token, ports, devs, "
                     "start)",
                     k);
            return -1;
        }
    }
    if (!c->name[0]) {
        snprintf(why, cap, "session: name= is required");
        return -1;
    }
    for (const char *q = c->name; *q; q++)
        if (!isalnum((unsigned char)*q) && !strchr("._-", *q)) {
            snprintf(why, cap, "session name \"%s\": use [A-Za-z0-9._-]",
                     c->name);
            return -1;
        }
    p->o.nsessions++;
    return 0;
}

static int keep_main(idle_cli *p, int argc, char **argv)
{
    uint64_t until;
    if (argc < 1 || !p->o.env.veto_dir) {
        fprintf(stderr, "usage: gpufl idle keep SESSION --veto-dir DIR "
                        "[--veto-for 4h]\n");
        return 2;
    }
    until = clock_real_ns() + (uint64_t)p->o.cfg.veto_s * 1000000000ull;
    if (idle_veto_write(p->o.env.veto_dir, argv[0], until)) {
        fprintf(stderr, "gpufl idle keep: cannot write in %s\n",
                p->o.env.veto_dir);
        return 1;
    }
    printf("session %s kept until %llu (Unix seconds)\n", argv[0],
           (unsigned long long)(until / 1000000000ull));
    return 0;
}

static char g_cmdline[1024];

int cli_idle_defaults(idle_opts *o)
{
    static idle_cli p;
    static opt_ctx c;
    int rc = opt_begin(&c, &cli_idle_prog, &p, NULL);
    *o = p.o;
    return rc;
}

int cli_idle_main(int argc, char **argv)
{
    static idle_cli p; /* large; one per process */
    static opt_ctx c;
    idle_cfg d;
    char why[300];
    int rc;

    rc = opt_cli(&c, &cli_idle_prog, &p, NULL, argc, argv);
    if (rc)
        goto out;
    glog_setup("gpufl idle", p.log_level, p.log_format);
    /* what the table does not set keeps the detector's own default */
    idle_cfg_init(&d);
    p.o.cfg.unattended_mult = d.unattended_mult;
    p.o.sessions = p.sess;
    for (size_t i = 0; i < p.nsession; i++)
        if (parse_session(&p, p.session[i], why, sizeof why)) {
            fprintf(stderr, "gpufl idle: --session %s: %s\n", p.session[i],
                    why);
            rc = 2;
            goto out;
        }
    for (size_t i = 0; i < p.nprice; i++)
        if (price_parse(p.price[i], "--price", &p.prices[i], why, sizeof why)) {
            fprintf(stderr, "gpufl idle: %s\n", why);
            rc = 2;
            goto out;
        }
    p.o.prices = p.prices;
    p.o.nprices = p.nprice;
    p.o.currency = p.currency;
    for (int i = 0; i < p.o.nsessions; i++)
        if (p.sess[i].token[0] && httpc_cleartext(p.sess[i].jupyter))
            glog_warn("cli",
                      "warning: session %s: jupyter=%s is plain http to "
                      "another machine: its token crosses the network in "
                      "the clear; use https://",
                      p.sess[i].name, p.sess[i].jupyter);
    if (p.o.hub_url && (!p.o.hub_token || !*p.o.hub_token)) {
        fprintf(stderr,
                "gpufl idle: --jupyterhub-url needs "
                "--jupyterhub-token (or GPUFL_IDLE_JUPYTERHUB_TOKEN)\n");
        rc = 2;
        goto out;
    }
    if (p.o.hub_url && strncmp(p.o.hub_url, "http://", 7) != 0 &&
        strncmp(p.o.hub_url, "https://", 8) != 0) {
        fprintf(stderr,
                "gpufl idle: --jupyterhub-url %s: want http:// or "
                "https://\n",
                p.o.hub_url);
        rc = 2;
        goto out;
    }
    /* the token is a Hub credential: refused in the clear, not warned */
    if (p.o.hub_url && httpc_cleartext(p.o.hub_url) && !p.o.hub_insecure) {
        fprintf(stderr,
                "gpufl idle: --jupyterhub-url %s is plain http to another "
                "machine: the Hub token would cross the network in the "
                "clear; use https:// (or --jupyterhub-insecure)\n",
                p.o.hub_url);
        rc = 2;
        goto out;
    }
    for (int i = 0, k = 0; i < argc && k + 2 < (int)sizeof g_cmdline; i++)
        k += snprintf(g_cmdline + k, sizeof g_cmdline - (size_t)k, "%s%s",
                      i ? " " : "gpufl ", argv[i]);
    p.o.cmdline = g_cmdline;
    if (!p.o.nsessions)
        p.o.auto_sessions = 1;
    if (c.nargs && !strcmp(c.args[0], "keep")) {
        rc = keep_main(&p, (int)c.nargs - 1, c.args + 1);
    } else if (c.nargs && strcmp(c.args[0], "watch") != 0) {
        fprintf(stderr, "gpufl idle: unknown subcommand \"%s\" (watch, keep)\n",
                c.args[0]);
        rc = 2;
    } else if (c.nargs) {
        rc = idle_watch(&p.o) ? 1 : 0;
    } else {
        rc = idle_once(&p.o);
    }
out:
    opt_release(&cli_idle_prog, &p);
    return rc < 0 ? 0 : rc;
}
