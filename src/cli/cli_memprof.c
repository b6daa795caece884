/*
 * cli_memprof.c - `gpufl memprof`: GPU memory allocation profiles of
 * running processes (eBPF) or of a command (--preload), and
 * `gpufl memprof top`, the live table.  Options come from one table;
 * the work is in src/memprof (docs/memprof.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_int.h"
#include "common/fsutil.h"
#include "memprof/memprof.h"

int mp_ebpf_check(void); /* src/memprof/ebpf.c */

enum {
    O_PID,
    O_CGROUP,
    O_ALL,
    O_PRELOAD,
    O_DURATION,
    O_INTERVAL,
    O_FORMAT,
    O_VIEW,
    O_COUNTS,
    O_NO_API,
    O_DWARF,
    O_TOP_N,
    O_OUTPUT,
    O_OUTDIR,
    O_SERVER,
    O_TOKEN,
    O_HOST,
    O_PYROSCOPE,
    O_PYRO_USER,
    O_PYRO_PASSWORD_FILE,
    O_PYRO_TOKEN_FILE,
    O_PYRO_TENANT,
    O_APP,
    O_LIB,
    O_PRELOAD_LIB,
    O_CHECK,
    O_VERBOSE,
    O_SIMULATED
};

typedef struct mp_opt {
    int id;
    const char *flag, *arg, *help;
} mp_opt;

static const mp_opt opts[] = {
    { O_PID, "--pid", "PID",
      "profile this process (repeat for more, up to 64); ends when they "
      "have all exited" },
    { O_CGROUP, "--cgroup", "PATH",
      "profile the processes of a cgroup v2 directory and its children" },
    { O_ALL, "--all", NULL, "profile every process that maps the driver" },
    { O_PRELOAD, "--preload", NULL,
      "no eBPF: run the command after -- with the LD_PRELOAD interposer" },
    { O_DURATION, "--duration", "S",
      "stop after S seconds (default: until the targets exit or SIGINT/"
      "SIGTERM)" },
    { O_INTERVAL, "--interval", "S",
      "seconds between server pushes / top refreshes (default 10; top 2)" },
    { O_FORMAT, "--format", "FMT",
      "folded (default), pprof (gzip protobuf, needs --output) or top" },
    { O_VIEW, "--view", "VIEW",
      "folded/top: alloc (bytes allocated, default), inuse (still held) or "
      "fail (failed calls)" },
    { O_COUNTS, "--counts", NULL, "folded: number of calls, not bytes" },
    { O_NO_API, "--no-api-frame", NULL,
      "do not end stacks with the API's name (self then goes to its "
      "caller)" },
    { O_DWARF, "--dwarf", NULL,
      "eBPF: unwind a 16 KiB stack copy with .eh_frame (code without frame "
      "pointers)" },
    { O_TOP_N, "--top", "N", "rows in the top table (default 20)" },
    { O_OUTPUT, "--output", "FILE",
      "write the profile there (default stdout)" },
    { O_OUTDIR, "--outdir", "DIR",
      "write every view and format there (created): "
      "memprof.{alloc,inuse,fail}.folded, memprof.pb.gz, memprof.top.txt" },
    { O_SERVER, "--server", "URL",
      "push to gpufl-server every interval (POST /api/v1/memprof)" },
    { O_TOKEN, "--token", "T", "bearer token for --server (role ingest)" },
    { O_HOST, "--host", "NAME",
      "host name sent to the server (default: "
      "this host's)" },
    { O_PYROSCOPE, "--pyroscope", "URL",
      "push folded alloc_/inuse_ space/objects to a Pyroscope /ingest every "
      "interval" },
    { O_PYRO_USER, "--pyroscope-user", "USER",
      "Pyroscope basic auth user (Grafana Cloud: the stack's user id); "
      "password from --pyroscope-password-file or GPUFL_PYROSCOPE_PASSWORD" },
    { O_PYRO_PASSWORD_FILE, "--pyroscope-password-file", "FILE",
      "file holding the --pyroscope-user password (one line)" },
    { O_PYRO_TOKEN_FILE, "--pyroscope-token-file", "FILE",
      "file holding a bearer token for Pyroscope (or GPUFL_PYROSCOPE_TOKEN)" },
    { O_PYRO_TENANT, "--pyroscope-tenant", "ID",
      "Pyroscope tenant, sent as X-Scope-OrgID" },
    { O_APP, "--app", "NAME",
      "Pyroscope application name (default gpufl-memprof)" },
    { O_LIB, "--lib", "NAME",
      "basename prefix of the driver library to probe (default libcuda.so)" },
    { O_PRELOAD_LIB, "--preload-lib", "PATH",
      "the interposer; default: libgpufl_memprof_preload.so beside gpufl "
      "(or GPUFL_MEMPROF_PRELOAD)" },
    { O_CHECK, "--check", NULL,
      "only check that eBPF can be used here (exit 0, or 3 with the reason)" },
    { O_VERBOSE, "--verbose", NULL, "attachments, counters, libbpf warnings" },
    { O_SIMULATED, "--simulated", NULL,
      "label pushed profiles simulated (the driver is a stand-in, as in "
      "gpufl demo)" },
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: gpufl memprof [top] --pid PID | --cgroup PATH | --all "
            "[OPTIONS]\n"
            "       gpufl memprof [OPTIONS] --preload -- CMD [ARGS...]\n\n"
            "Profiles CUDA memory allocations (cuMemAlloc*, cuMemCreate/Map, "
            "frees, context\ndestroy) per call stack with eBPF uprobes: no "
            "code change, no restart.  Needs\nroot or CAP_BPF+CAP_PERFMON; "
            "--preload needs neither.  'top' shows a live table.\n\n"
            "options:\n");
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        char left[40];
        snprintf(left, sizeof left, "%s%s%s", opts[i].flag,
                 opts[i].arg ? " " : "", opts[i].arg ? opts[i].arg : "");
        /* a flag wider than the column gets its text on the next line */
        if (strlen(left) > 20)
            fprintf(f, "  %s\n  %-20s %s\n", left, "", opts[i].help);
        else
            fprintf(f, "  %-20s %s\n", left, opts[i].help);
    }
    fprintf(f,
            "  %-20s %s\n\nExit codes: 0 ok, 1 failure, 2 usage error, 3 "
            "eBPF not permitted (--check);\n--preload exits with the "
            "command's status.\n",
            "-h, --help", "this text");
}

static int num(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static void find_preload(char *out, size_t cap)
{
    const char *env = getenv("GPUFL_MEMPROF_PRELOAD");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return;
    }
    char self[2048];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    out[0] = 0;
    if (n <= 0)
        return;
    self[n] = 0;
    char *sl = strrchr(self, '/');
    if (sl)
        *sl = 0;
    static const char libdir[] = "../" GPUFL_INSTALL_LIBDIR;
    static const char *sub[] = { libdir, "../lib", "." };
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
        int w = snprintf(out, cap, "%s/%s/libgpufl_memprof_preload.so", self,
                         sub[i]);
        if (w > 0 && (size_t)w < cap && !access(out, R_OK))
            return;
    }
    out[0] = 0;
}

/* ---- Pyroscope credentials: never from the command line itself ---- */

#define PYRO_SECRET_MAX 4096

/* 0 when s is one line of printable ASCII (it goes into an HTTP header) */
static int header_safe(const char *s)
{
    if (!*s)
        return -1;
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
            return -1;
    return 0;
}

/* The secret in file path (trailing newline dropped) into out[cap]; on
 * failure says why, naming the flag and the file, never the content. */
static int read_secret(const char *flag, const char *path, char *out,
                       size_t cap)
{
    FILE *f = fopen(path, "r");
    size_t n;
    int bad;
    if (!f) {
        fprintf(stderr, "gpufl memprof: %s %s: %s\n", flag, path,
                strerror(errno));
        return -1;
    }
    n = fread(out, 1, cap - 1, f);
    bad = ferror(f);
    fclose(f);
    out[n] = 0;
    while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        out[--n] = 0;
    if (bad || n > cap - 2 || strlen(out) != n || header_safe(out)) {
        fprintf(stderr, "gpufl memprof: %s %s: %s\n", flag, path,
                bad           ? "cannot be read"
                : n > cap - 2 ? "longer than 4096 bytes"
                              : "must hold one non-empty line of printable "
                                "ASCII");
        explicit_bzero(out, cap);
        return -1;
    }
    return 0;
}

/* The environment's secret into out, checked like a file's. */
static int env_secret(const char *var, char *out, size_t cap)
{
    const char *v = getenv(var);
    if (!v || !*v)
        return 1;
    if (strlen(v) > PYRO_SECRET_MAX || header_safe(v)) {
        fprintf(stderr,
                "gpufl memprof: %s must be one line of printable ASCII, at "
                "most 4096 bytes\n",
                var);
        return -1;
    }
    snprintf(out, cap, "%s", v);
    return 0;
}

/* Checks the --pyroscope-* flags and loads the password or token into
 * secret (owned by the caller, cleared after the run); 0 or -1 (said
 * why: a usage error). */
static int pyroscope_auth(memprof_opts *o, const char *pw_file,
                          const char *tok_file, char *secret, size_t cap)
{
    const char *u = o->pyroscope, *auth, *end;
    int rc;

    secret[0] = 0;
    if (!u) {
        if (o->pyroscope_user || pw_file || tok_file || o->pyroscope_tenant) {
            fprintf(stderr, "gpufl memprof: the --pyroscope-* options need "
                            "--pyroscope URL\n");
            return -1;
        }
        return 0;
    }
    if (strncmp(u, "http://", 7) && strncmp(u, "https://", 8)) {
        fprintf(stderr, "gpufl memprof: --pyroscope wants an http:// or "
                        "https:// URL\n");
        return -1;
    }
    /* user:password@ in the URL is refused, not used: the command line is
     * readable by every user (ps, /proc/PID/cmdline) and ends up in logs */
    auth = strstr(u, "://") + 3;
    end = auth + strcspn(auth, "/?#");
    if (memchr(auth, '@', (size_t)(end - auth))) {
        fprintf(stderr,
                "gpufl memprof: --pyroscope URL must not contain "
                "user:password@ (a command line is visible to every user); "
                "use --pyroscope-user with --pyroscope-password-file or "
                "GPUFL_PYROSCOPE_PASSWORD\n");
        return -1;
    }
    if (o->pyroscope_tenant && (header_safe(o->pyroscope_tenant) ||
                                strlen(o->pyroscope_tenant) > 256)) {
        fprintf(stderr, "gpufl memprof: --pyroscope-tenant must be printable "
                        "ASCII, 1 to 256 bytes\n");
        return -1;
    }
    if (o->pyroscope_user && tok_file) {
        fprintf(stderr, "gpufl memprof: give --pyroscope-user (basic auth) or "
                        "--pyroscope-token-file (bearer), not both\n");
        return -1;
    }
    if (pw_file && !o->pyroscope_user) {
        fprintf(stderr, "gpufl memprof: --pyroscope-password-file needs "
                        "--pyroscope-user\n");
        return -1;
    }
    if (o->pyroscope_user) {
        if (header_safe(o->pyroscope_user) || strchr(o->pyroscope_user, ':') ||
            strlen(o->pyroscope_user) > 256) {
            fprintf(stderr, "gpufl memprof: --pyroscope-user must be "
                            "printable ASCII without ':', 1 to 256 bytes\n");
            return -1;
        }
        rc = pw_file ? read_secret("--pyroscope-password-file", pw_file, secret,
                                   cap)
                     : env_secret("GPUFL_PYROSCOPE_PASSWORD", secret, cap);
        if (rc > 0)
            fprintf(stderr, "gpufl memprof: --pyroscope-user needs a "
                            "password: --pyroscope-password-file FILE or "
                            "GPUFL_PYROSCOPE_PASSWORD\n");
        if (rc)
            return -1;
        o->pyroscope_password = secret;
        return 0;
    }
    rc = tok_file ? read_secret("--pyroscope-token-file", tok_file, secret, cap)
                  : env_secret("GPUFL_PYROSCOPE_TOKEN", secret, cap);
    if (rc < 0)
        return -1;
    if (rc == 0)
        o->pyroscope_token = secret;
    return 0;
}

int cli_memprof_main(int argc, char **argv)
{
    memprof_opts o;
    char preload[4096];
    memset(&o, 0, sizeof o);
    o.interval = -1;
    o.api_frame = 1;
    o.top_n = 20;
    o.lib = "libcuda.so";
    int i = 1, nmodes = 0, check = 0;
    const char *pyro_pw_file = NULL, *pyro_tok_file = NULL;
    char pyro_secret[PYRO_SECRET_MAX + 2];
    if (argc > 1 && !strcmp(argv[1], "top")) {
        o.live = 1;
        o.format = MEMPROF_FMT_TOP;
        i = 2;
    }
    for (; i < argc; i++) {
        const mp_opt *op = NULL;
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
                op = &opts[k];
        if (!op) {
            fprintf(stderr,
                    "gpufl memprof: unknown option \"%s\" (see gpufl memprof "
                    "--help)\n",
                    argv[i]);
            return 2;
        }
        if (op->arg && !val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "gpufl memprof: %s needs %s\n", op->flag,
                        op->arg);
                return 2;
            }
            val = argv[++i];
        }
        double d;
        switch (op->id) {
        case O_PID:
            if (num(val, 1, 4194304, &d) || o.npids == MEMPROF_MAX_PIDS) {
                fprintf(stderr, "gpufl memprof: bad --pid %s\n", val);
                return 2;
            }
            if (!o.npids)
                nmodes++;
            o.pids[o.npids++] = (int)d;
            o.mode = MEMPROF_PIDS;
            break;
        case O_CGROUP:
            o.cgroup = val;
            o.mode = MEMPROF_CGROUP;
            nmodes++;
            break;
        case O_ALL:
            o.mode = MEMPROF_ALL;
            nmodes++;
            break;
        case O_PRELOAD:
            o.mode = MEMPROF_PRELOAD;
            nmodes++;
            break;
        case O_DURATION:
        case O_INTERVAL:
            if (num(val, 0.01, 1e7, &d)) {
                fprintf(stderr, "gpufl memprof: bad %s %s\n", op->flag, val);
                return 2;
            }
            *(op->id == O_DURATION ? &o.duration : &o.interval) = d;
            break;
        case O_FORMAT:
            if (!strcmp(val, "folded"))
                o.format = MEMPROF_FMT_FOLDED;
            else if (!strcmp(val, "pprof"))
                o.format = MEMPROF_FMT_PPROF;
            else if (!strcmp(val, "top"))
                o.format = MEMPROF_FMT_TOP;
            else {
                fprintf(stderr, "gpufl memprof: --format folded|pprof|top\n");
                return 2;
            }
            break;
        case O_VIEW:
            if (!strcmp(val, "alloc"))
                o.view = MEMPROF_VIEW_ALLOC;
            else if (!strcmp(val, "inuse"))
                o.view = MEMPROF_VIEW_INUSE;
            else if (!strcmp(val, "fail"))
                o.view = MEMPROF_VIEW_FAIL;
            else {
                fprintf(stderr, "gpufl memprof: --view alloc|inuse|fail\n");
                return 2;
            }
            break;
        case O_COUNTS: o.counts = 1; break;
        case O_NO_API: o.api_frame = 0; break;
        case O_DWARF: o.dwarf = 1; break;
        case O_TOP_N:
            if (num(val, 1, 100000, &d)) {
                fprintf(stderr, "gpufl memprof: bad --top %s\n", val);
                return 2;
            }
            o.top_n = (size_t)d;
            break;
        case O_OUTPUT: o.output = val; break;
        case O_OUTDIR: o.outdir = val; break;
        case O_SERVER: o.server = val; break;
        case O_TOKEN: o.token = val; break;
        case O_HOST: o.host = val; break;
        case O_PYROSCOPE: o.pyroscope = val; break;
        case O_PYRO_USER: o.pyroscope_user = val; break;
        case O_PYRO_PASSWORD_FILE: pyro_pw_file = val; break;
        case O_PYRO_TOKEN_FILE: pyro_tok_file = val; break;
        case O_PYRO_TENANT: o.pyroscope_tenant = val; break;
        case O_APP: o.app = val; break;
        case O_LIB: o.lib = val; break;
        case O_PRELOAD_LIB: o.preload_so = val; break;
        case O_CHECK: check = 1; break;
        case O_VERBOSE: o.verbose = 1; break;
        case O_SIMULATED: o.simulated = 1; break;
        }
    }
    if (check)
        return mp_ebpf_check();
    if (nmodes != 1) {
        fprintf(stderr, "gpufl memprof: give exactly one of --pid, --cgroup, "
                        "--all, --preload\n\n");
        usage(stderr);
        return 2;
    }
    if (o.mode == MEMPROF_PRELOAD) {
        if (i >= argc) {
            fprintf(stderr, "gpufl memprof: --preload needs -- CMD\n");
            return 2;
        }
        o.cmd = argv + i;
        if (!o.preload_so) {
            find_preload(preload, sizeof preload);
            o.preload_so = preload[0] ? preload : NULL;
        }
    } else if (i < argc) {
        fprintf(stderr, "gpufl memprof: a command is only run with "
                        "--preload\n");
        return 2;
    }
    /* the profile is written at the end: a folder that cannot take it
     * must stop us now, not lose the whole run then */
    if (o.outdir && (fs_mkdir_p(o.outdir) || access(o.outdir, W_OK))) {
        fprintf(stderr, "gpufl memprof: --outdir %s: %s\n", o.outdir,
                strerror(errno));
        return 2;
    }
    if (o.format == MEMPROF_FMT_PPROF && !o.output && !o.outdir) {
        fprintf(stderr, "gpufl memprof: --format pprof needs --output FILE\n");
        return 2;
    }
    if (o.server && !o.token)
        o.token = getenv("GPUFL_TOKEN");
    if (pyroscope_auth(&o, pyro_pw_file, pyro_tok_file, pyro_secret,
                       sizeof pyro_secret))
        return 2;
    if (o.interval < 0)
        o.interval = o.live ? 2 : 10;
    int rc = memprof_run(&o);
    explicit_bzero(pyro_secret, sizeof pyro_secret);
    return rc;
}
