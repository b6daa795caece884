/*
 * cli_idle.c - `gpufl idle`: is a GPU session in use?  One option table
 * gives parsing of flags, the config file (--config FILE, "name = value"
 * lines), GPUFL_IDLE_* environment variables and --help.  Precedence:
 * defaults < config file < environment < flags.  The detector itself is
 * src/idle (docs/idle.md).
 */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_int.h"
#include "common/clock.h"
#include "idle/idle.h"

enum { O_FLAG, O_STR, O_U32, O_DUR, O_DBL, O_BYTES, O_SESSION };

typedef struct iopt {
    const char *name;
    int type;
    size_t off; /* into idle_opts */
    double lo, hi;
    const char *help;
} iopt;

#define OF(f) offsetof(idle_opts, f)
#define CF(f) (offsetof(idle_opts, cfg) + offsetof(idle_cfg, f))

static const iopt opts[] = {
    { "once", O_FLAG, 0, 0, 0,
      "decide once, print, exit with the verdict's code "
      "(default)" },
    { "json", O_FLAG, OF(json), 0, 0, "--once: print JSON" },
    { "probe", O_FLAG, OF(probe), 0, 0,
      "--once: print a Kubeflow-style {\"has_activity\":..} probe" },
    { "samples", O_U32, OF(samples), 1, 100000,
      "--once: samples taken, interval apart (default 5)" },
    { "session-name", O_STR, OF(only), 0, 0,
      "report (and exit by) this session only" },
    { "session", O_SESSION, 0, 0, 0,
      "a session: name=N,cgroup=PATH,pod=NS/POD,container=C,user=U,tty=DEV,"
      "ports=P+P,jupyter=URL,token=T,devs=D+D,start=UNIXSEC (repeatable)" },
    { "auto-sessions", O_FLAG, OF(auto_sessions), 0, 0,
      "one session per cgroup of GPU processes (default without --session)" },
    { "nvml-lib", O_STR, OF(nvml_lib), 0, 0,
      "NVML library to load (default libnvidia-ml.so.1)" },
    { "simulate", O_STR, OF(sim), 0, 0,
      "SIMULATED GPUs: none,held,one_thread,matmul,phantom,bursty,train,all" },
    { "sim-gpus", O_U32, OF(sim_gpus), 1, 16,
      "simulated GPUs (the --simulate list is cycled)" },
    { "dcgm-url", O_STR, OF(dcgm_url), 0, 0,
      "dcgm-exporter /metrics URL for SM_ACTIVE / GR_ENGINE_ACTIVE" },
    { "root", O_STR, OF(env.root), 0, 0,
      "read proc/, sys/fs/cgroup/, var/run/utmp, dev/ under DIR (tests)" },
    { "utmp", O_STR, OF(env.utmp), 0, 0,
      "utmp file (default ROOT/var/run/utmp)" },
    { "veto-dir", O_STR, OF(env.veto_dir), 0, 0,
      "directory of SESSION.keep veto files (gpufl idle keep)" },
    { "log-dir", O_STR, OF(log_dir), 0, 0,
      "watch: write gpufl logs with verdict lines here (for gpufl-agent)" },
    { "listen", O_STR, OF(listen), 0, 0,
      "watch: serve /metrics, /probe, /verdicts on ADDR:PORT" },
    { "hook-cmd", O_STR, OF(hook_cmd), 0, 0,
      "watch: run this (sh -c) when a session's warning period ends" },
    { "hook-url", O_STR, OF(hook_url), 0, 0,
      "watch: POST the verdict JSON here when a warning period ends" },
    { "duration", O_DUR, OF(duration_s), 0, 1e9,
      "watch: exit after this long (default: run until SIGTERM)" },
    { "interval", O_U32, CF(interval_ms), 10, 3600000,
      "sampling period, ms (default 1000)" },
    { "window", O_DUR, CF(window_s), 1, 86400, "GPU window W (default 60s)" },
    { "empty-mem", O_BYTES, CF(fb_empty), 0, 1e15,
      "memory at most this counts as none, bytes or KiB/MiB/GiB (64MiB)" },
    { "busy-util", O_DBL, CF(busy_util), 0, 100, "busy: util mean >= (50)" },
    { "bursty-duty", O_DBL, CF(bursty_duty), 0, 1,
      "bursty: share of samples with util > 0 below (0.5)" },
    { "low-occ-sm", O_DBL, CF(low_occ_sm), 0, 1,
      "low occupancy: SM active below (0.05)" },
    { "held-sm", O_DBL, CF(held_sm), 0, 1, "held: SM active at most (0.01)" },
    { "busy-power", O_DBL, CF(busy_power), 0, 2,
      "no SM metric: busy at power/limit >= (0.5)" },
    { "held-floor", O_DBL, CF(held_floor), 0, 2,
      "power/limit of a resident idle context (0.30)" },
    { "low-occ-margin", O_DBL, CF(low_occ_margin), 0, 2,
      "no SM metric: low occupancy at power <= floor + this (0.10)" },
    { "phantom-util", O_DBL, CF(phantom_util), 0, 100,
      "phantom: util mean >= with no process and no memory (90)" },
    { "phantom-hold", O_DUR, CF(phantom_hold_s), 0, 1e7,
      "phantom: sustained this long (300s)" },
    { "min-valid", O_DBL, CF(min_valid), 0, 1,
      "share of readable samples in W, else UNKNOWN (0.5)" },
    { "cpu-busy", O_DBL, CF(cpu_busy), 0, 1024,
      "container CPU counted as busy, cores (0.5)" },
    { "grace", O_DUR, CF(grace_s), 0, 1e7, "T_grace: STARTING (15m)" },
    { "idle", O_DUR, CF(idle_s), 0, 1e8, "T_idle (60m)" },
    { "held", O_DUR, CF(held_s), 0, 1e8, "T_held (120m)" },
    { "max-age", O_DUR, CF(max_age_s), 0, 1e10, "T_max, 0 = off (7d)" },
    { "gpu-unused", O_DUR, CF(gpu_unused_s), 0, 1e8,
      "suggest releasing an unused GPU after (4h)" },
    { "warn", O_DUR, CF(warn_s), 0, 1e7, "warning period (300s)" },
    { "hysteresis", O_DUR, CF(hyst_s), 0, 1e7,
      "hold before leaving an in-use verdict (60s)" },
    { "refresh", O_DUR, CF(refresh_s), 1, 1e7,
      "watch: re-log unchanged verdicts every (60s)" },
    { "veto-for", O_DUR, CF(veto_s), 1, 1e8, "keep: veto length (4h)" },
};
#define NOPTS (sizeof opts / sizeof opts[0])

#define MAX_SESS 64

typedef struct pstate {
    idle_opts o;
    idle_sess_cfg sess[MAX_SESS];
    int once, watch;
    char strs[64][1024]; /* copies of config-file values */
    int nstrs;
} pstate;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gpufl idle [--once] [--json|--probe] [OPTIONS]\n"
            "       gpufl idle watch [--log-dir DIR] [--listen ADDR:PORT] "
            "[OPTIONS]\n"
            "       gpufl idle keep SESSION --veto-dir DIR [--veto-for 4h]\n\n"
            "Decides whether GPUs and the sessions using them are in use, "
            "from NVML, DCGM,\nprocesses, connections, input and CPU, and "
            "says why (docs/idle.md).\n\noptions (also \"name = value\" in "
            "--config FILE, or GPUFL_IDLE_NAME):\n");
    fprintf(
        f, "  --%-15s %s\n", "config FILE",
        "read options from FILE first (\"name = value\" lines, # comments)");
    for (size_t i = 0; i < NOPTS; i++)
        fprintf(f, "  --%-15s %s\n", opts[i].name, opts[i].help);
    fprintf(f, "\nexit codes of --once: 0 in use, 3 idle (reclaimable), 4 "
               "unknown data, 5 phantom GPU,\n1 failure, 2 usage error.\n");
}

static int parse_dur(const char *v, double *out)
{
    char *end;
    double x = strtod(v, &end), m = 1;
    if (end == v)
        return -1;
    if (*end == 's')
        end++;
    else if (*end == 'm')
        m = 60, end++;
    else if (*end == 'h')
        m = 3600, end++;
    else if (*end == 'd')
        m = 86400, end++;
    if (*end)
        return -1;
    *out = x * m;
    return 0;
}

static int parse_bytes(const char *v, double *out)
{
    char *end;
    double x = strtod(v, &end);
    if (end == v)
        return -1;
    if (!strcmp(end, "KiB"))
        x *= 1024;
    else if (!strcmp(end, "MiB"))
        x *= 1048576;
    else if (!strcmp(end, "GiB"))
        x *= 1073741824.0;
    else if (*end)
        return -1;
    *out = x;
    return 0;
}

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

static int parse_session(pstate *p, const char *spec, char *why, size_t cap)
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

static const iopt *find_opt(const char *name, size_t n)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (strlen(opts[i].name) == n && !strncmp(opts[i].name, name, n))
            return &opts[i];
    return NULL;
}

/* v is borrowed for O_STR: the caller keeps it alive. */
static int set_opt(pstate *p, const iopt *o, const char *v, char *why,
                   size_t cap)
{
    char *base = (char *)&p->o;
    double x;
    switch (o->type) {
    case O_FLAG:
        if (!strcmp(o->name, "once"))
            p->once = 1;
        else
            *(int *)(void *)(base + o->off) = 1;
        return 0;
    case O_STR: memcpy(base + o->off, &v, sizeof v); return 0;
    case O_SESSION: return parse_session(p, v, why, cap);
    case O_U32:
    case O_DBL: {
        char *end;
        x = strtod(v, &end);
        if (end == v || *end)
            goto bad;
        break;
    }
    case O_DUR:
        if (parse_dur(v, &x))
            goto bad;
        break;
    case O_BYTES:
        if (parse_bytes(v, &x))
            goto bad;
        break;
    default: goto bad;
    }
    if (x < o->lo || x > o->hi) {
        snprintf(why, cap, "--%s %s: out of range [%g, %g]", o->name, v, o->lo,
                 o->hi);
        return -1;
    }
    if (o->type == O_DBL)
        *(double *)(void *)(base + o->off) = x;
    else if (o->type == O_BYTES ||
             (o->type == O_DUR &&
              (o->off == OF(duration_s) || o->off == CF(max_age_s))))
        *(uint64_t *)(void *)(base + o->off) = (uint64_t)x;
    else
        *(uint32_t *)(void *)(base + o->off) = (uint32_t)x;
    return 0;
bad:
    snprintf(why, cap, "--%s: \"%s\" is not a valid value", o->name, v);
    return -1;
}

static const char *keep_str(pstate *p, const char *s)
{
    if (p->nstrs >= 64)
        return NULL;
    snprintf(p->strs[p->nstrs], sizeof p->strs[0], "%s", s);
    return p->strs[p->nstrs++];
}

static int load_config(pstate *p, const char *path, char *why, size_t cap)
{
    FILE *f = fopen(path, "r");
    char line[1200];
    int ln = 0;
    if (!f) {
        snprintf(why, cap, "--config %s: %s", path, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        char *k = line, *v, *e;
        const iopt *o;
        size_t kn;
        ln++;
        line[strcspn(line, "\r\n")] = 0;
        while (isspace((unsigned char)*k))
            k++;
        if (!*k || *k == '#')
            continue;
        kn = strcspn(k, " \t=");
        v = k + kn;
        while (isspace((unsigned char)*v) || *v == '=')
            v++;
        e = v + strlen(v);
        while (e > v && isspace((unsigned char)e[-1]))
            *--e = 0;
        o = find_opt(k, kn);
        if (!o) {
            snprintf(why, cap,
                     "%s:%d: unknown key \"%.*s\" (see gpufl idle "
                     "--help)",
                     path, ln, (int)kn, k);
            fclose(f);
            return -1;
        }
        if (o->type == O_FLAG && (!strcmp(v, "0") || !strcmp(v, "false")))
            continue;
        if (o->type == O_STR && !(v = (char *)keep_str(p, v))) {
            snprintf(why, cap, "%s: too many string values", path);
            fclose(f);
            return -1;
        }
        if (set_opt(p, o, v, why, cap)) {
            fclose(f);
            return -1;
        }
    }
    fclose(f);
    return 0;
}

static void load_env(pstate *p, char *why, size_t cap, int *bad)
{
    for (size_t i = 0; i < NOPTS; i++) {
        char name[64];
        const char *v;
        size_t k = snprintf(name, sizeof name, "GPUFL_IDLE_");
        for (const char *s = opts[i].name; *s && k + 1 < sizeof name; s++)
            name[k++] = *s == '-' ? '_' : (char)toupper((unsigned char)*s);
        name[k] = 0;
        v = getenv(name);
        if (!v || opts[i].type == O_FLAG)
            continue;
        if (set_opt(p, &opts[i], v, why, cap))
            *bad = 1;
    }
}

static int keep_main(pstate *p, int argc, char **argv)
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

int cli_idle_main(int argc, char **argv)
{
    static pstate p; /* large; one per process */
    char why[300];
    const char *config = NULL;
    char *pos[4];
    int npos = 0, bad = 0;

    memset(&p, 0, sizeof p);
    idle_cfg_init(&p.o.cfg);
    p.o.samples = 5;
    p.o.sessions = p.sess;
    for (int i = 0, k = 0; i < argc && k + 2 < (int)sizeof g_cmdline; i++)
        k += snprintf(g_cmdline + k, sizeof g_cmdline - (size_t)k, "%s%s",
                      i ? " " : "gpufl ", argv[i]);
    p.o.cmdline = g_cmdline;
    /* the config file first, whatever its place on the line */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--config") && i + 1 < argc)
            config = argv[i + 1];
        else if (!strncmp(argv[i], "--config=", 9))
            config = argv[i] + 9;
    }
    if (config && load_config(&p, config, why, sizeof why)) {
        fprintf(stderr, "gpufl idle: %s\n", why);
        return 2;
    }
    load_env(&p, why, sizeof why, &bad);
    if (bad) {
        fprintf(stderr, "gpufl idle: environment: %s\n", why);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL, *eq;
        const iopt *o;
        if (strncmp(a, "--", 2) != 0) {
            if (npos < 4)
                pos[npos++] = argv[i];
            continue;
        }
        if (!strcmp(a, "--config")) {
            i++;
            continue;
        }
        if (!strncmp(a, "--config=", 9))
            continue;
        eq = strchr(a, '=');
        o = find_opt(a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2));
        if (!o) {
            fprintf(stderr, "gpufl idle: unknown option %s (see --help)\n", a);
            return 2;
        }
        if (o->type != O_FLAG) {
            if (eq)
                v = eq + 1;
            else if (i + 1 < argc)
                v = argv[++i];
            else {
                fprintf(stderr, "gpufl idle: --%s needs a value\n", o->name);
                return 2;
            }
        }
        if (set_opt(&p, o, v, why, sizeof why)) {
            fprintf(stderr, "gpufl idle: %s\n", why);
            return 2;
        }
    }
    if (!p.o.nsessions)
        p.o.auto_sessions = 1;
    if (npos && !strcmp(pos[0], "keep"))
        return keep_main(&p, npos - 1, pos + 1);
    if (npos && strcmp(pos[0], "watch") != 0) {
        fprintf(stderr, "gpufl idle: unknown subcommand \"%s\" (watch, keep)\n",
                pos[0]);
        return 2;
    }
    if (npos)
        return idle_watch(&p.o) ? 1 : 0;
    return idle_once(&p.o);
}
