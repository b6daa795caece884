/*
 * cli_memprof.c - `gpufl memprof`: GPU memory allocation profiles of
 * running processes (eBPF) or of a command (--preload), and
 * `gpufl memprof top`, the live table.  Options come from one table read
 * by the option engine (src/common/opt.h);
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
#include "common/log.h"
#include "httpc/httpc.h"

int mp_ebpf_check(void); /* src/memprof/ebpf.c */

/* What the table fills: the profiler's options, and what the command
 * line says about them (checked and converted after the load). */
typedef struct mp_cli {
    memprof_opts o;
    uint64_t duration_ms, interval_ms; /* 0: not given */
    char *pw_file, *tok_file;
    int all, preload, check;
    int log_level, log_format; /* GLOG_* (common/log.h) */
} mp_cli;

#define T mp_cli
#define DUR_MS .type = OPT_DUR, .unit = OPT_MS, .bare = OPT_SEC
static const opt_def mp_rows[] = {
    { .name = "pid",
      .type = OPT_LIST,
      .item = OPT_INT,
      OPT_F_LIST(T, o.pids, o.npids, OPT_ST_SINT),
      .min = 1,
      .max = 4194304,
      .flags = OPT_REPEAT | OPT_CLI_ONLY,
      .arg = "PID",
      .help = "profile this process (repeat for more); ends when they have "
              "all exited" },
    { .name = "cgroup",
      .type = OPT_STR,
      OPT_F_PTR(T, o.cgroup),
      .arg = "PATH",
      .help = "profile the processes of a cgroup v2 directory and its "
              "children (BPF filter bpf_current_task_under_cgroup); PATH is "
              "absolute, or relative to the cgroup2 mount found in "
              "/proc/self/mounts" },
    { .name = "all",
      .type = OPT_BOOL,
      OPT_F_SINT(T, all),
      .flags = OPT_CLI_ONLY,
      .help = "profile every process that maps the driver" },
    { .name = "preload",
      .type = OPT_BOOL,
      OPT_F_SINT(T, preload),
      .flags = OPT_CLI_ONLY,
      .help = "no eBPF: run the command after -- with the LD_PRELOAD "
              "interposer" },
    { .name = "duration",
      DUR_MS,
      OPT_F_UINT(T, duration_ms),
      .min = 10,
      .max = 10000000000ull,
      .help = "stop after this long (a bare number is seconds; default: "
              "until the targets exit or SIGINT/SIGTERM)" },
    { .name = "interval",
      DUR_MS,
      OPT_F_UINT(T, interval_ms),
      .min = 10,
      .max = 10000000000ull,
      .def_doc = "10s; top: 2s",
      .help = "time between server pushes / top refreshes (a bare number is "
              "seconds)" },
    { .name = "format",
      .type = OPT_ENUM,
      OPT_F_SINT(T, o.format),
      .def = "folded",
      .choices = "folded|pprof|top",
      .help = "folded, pprof (gzip protobuf, needs --output) or top" },
    { .name = "view",
      .type = OPT_ENUM,
      OPT_F_SINT(T, o.view),
      .def = "alloc",
      .choices = "alloc|inuse|fail",
      .help = "folded/top: alloc (bytes allocated), inuse (still held) or "
              "fail (failed calls)" },
    { .name = "counts",
      .type = OPT_BOOL,
      OPT_F_SINT(T, o.counts),
      .help = "folded: number of calls, not bytes" },
    { .name = "api-frame",
      .type = OPT_BOOL,
      OPT_F_SINT(T, o.api_frame),
      .def = "true",
      .help = "end stacks with the API's name (--no-api-frame: self goes to "
              "its caller)" },
    { .name = "dwarf",
      .type = OPT_BOOL,
      OPT_F_SINT(T, o.dwarf),
      .help = "eBPF: also copy up to 16 KiB of the user stack and the "
              "registers at each allocation, and unwind them in user space "
              "with .eh_frame (libdwfl): complete stacks for code built "
              "without frame pointers" },
    { .name = "top",
      .type = OPT_INT,
      OPT_F_UINT(T, o.top_n),
      .def = "20",
      .min = 1,
      .max = 100000,
      .help = "rows in the top table" },
    { .name = "output",
      .type = OPT_STR,
      OPT_F_PTR(T, o.output),
      .arg = "FILE",
      .help = "write the profile there (default stdout)" },
    { .name = "outdir",
      .type = OPT_STR,
      OPT_F_PTR(T, o.outdir),
      .arg = "DIR",
      .help = "write memprof.{alloc,inuse,fail}.folded, memprof.pb.gz and "
              "memprof.top.txt there; the folder is created, and one that "
              "cannot be written stops gpufl memprof at once (exit 2), "
              "before any profiling" },
    { .name = "server",
      .type = OPT_STR,
      OPT_F_PTR(T, o.server),
      .arg = "URL",
      .help = "push to gpufl-server every interval (POST "
              "URL/api/v1/memprof)" },
    { .name = "token",
      .type = OPT_STR,
      OPT_F_PTR(T, o.token),
      .arg = "T",
      .flags = OPT_SECRET,
      .help = "bearer token for --server (role ingest); also GPUFL_TOKEN" },
    { .name = "ca-file",
      .type = OPT_STR,
      OPT_F_PTR(T, o.ca_file),
      .arg = "FILE",
      .help = "PEM file of the CAs an https --server or --pyroscope is "
              "verified with (peer and host name, always); default the "
              "system's CA store" },
    { .name = "host",
      .type = OPT_STR,
      OPT_F_PTR(T, o.host),
      .arg = "NAME",
      .help = "host name sent to the server (default: this host's)" },
    { .name = "pyroscope",
      .type = OPT_STR,
      OPT_F_PTR(T, o.pyroscope),
      .arg = "URL",
      .help = "push folded alloc_/inuse_ space/objects to a "
              "Pyroscope-compatible URL/ingest every interval and at the "
              "end" },
    { .name = "pyroscope-user",
      .type = OPT_STR,
      OPT_F_PTR(T, o.pyroscope_user),
      .arg = "USER",
      .help = "Pyroscope HTTP basic auth user (Grafana Cloud: the stack's "
              "numeric user id); the password comes from "
              "--pyroscope-password-file or GPUFL_PYROSCOPE_PASSWORD, never "
              "from the command line" },
    { .name = "pyroscope-password-file",
      .type = OPT_STR,
      OPT_F_PTR(T, pw_file),
      .arg = "FILE",
      .help = "file holding the --pyroscope-user password (one line; a "
              "trailing newline is dropped)" },
    { .name = "pyroscope-token-file",
      .type = OPT_STR,
      OPT_F_PTR(T, tok_file),
      .arg = "FILE",
      .help = "file holding a bearer token for Pyroscope (default: "
              "GPUFL_PYROSCOPE_TOKEN); not with --pyroscope-user" },
    { .name = "pyroscope-tenant",
      .type = OPT_STR,
      OPT_F_PTR(T, o.pyroscope_tenant),
      .arg = "ID",
      .help = "Pyroscope tenant, sent as X-Scope-OrgID (multi-tenant "
              "Pyroscope, Grafana Enterprise)" },
    { .name = "app",
      .type = OPT_STR,
      OPT_F_PTR(T, o.app),
      .arg = "NAME",
      .def_doc = "gpufl-memprof",
      .help = "Pyroscope application name" },
    { .name = "lib",
      .type = OPT_STR,
      OPT_F_PTR(T, o.lib),
      .arg = "NAME",
      .def = "libcuda.so",
      .help = "basename prefix of the driver library to probe" },
    { .name = "preload-lib",
      .type = OPT_STR,
      OPT_F_PTR(T, o.preload_so),
      .arg = "PATH",
      .env = "GPUFL_MEMPROF_PRELOAD",
      .def_doc = "libgpufl_memprof_preload.so beside gpufl",
      .help = "the interposer library" },
    { .name = "check",
      .type = OPT_BOOL,
      OPT_F_SINT(T, check),
      .flags = OPT_CLI_ONLY,
      .help = "only check that eBPF can be used here (exit 0, or 3 with the "
              "reason)" },
    { .name = "verbose",
      .type = OPT_BOOL,
      OPT_F_SINT(T, o.verbose),
      .help = "attachments, the kernel ids of the run's BPF programs and "
              "links, counters, libbpf warnings on stderr" },
    { .name = "simulated",
      .type = OPT_BOOL,
      OPT_F_SINT(T, o.simulated),
      .help = "label pushed profiles simulated (the driver is a stand-in, as "
              "in gpufl demo)" },
    GLOG_OPT_ROWS(T, log_level, log_format),
};
#undef DUR_MS
#undef T

/* The preload library's pipe, set in the profiled command's environment. */
static const char *const mp_env_known[] = { "GPUFL_MEMPROF_FD", NULL };

const opt_prog cli_memprof_prog = {
    .name = "gpufl memprof",
    .env_prefix = "GPUFL_MEMPROF_",
    .opts = mp_rows,
    .n = sizeof mp_rows / sizeof mp_rows[0],
    .size = sizeof(mp_cli),
    .usage = "usage: gpufl memprof [top] --pid PID | --cgroup PATH | --all "
             "[OPTIONS]\n"
             "       gpufl memprof [OPTIONS] --preload -- CMD [ARGS...]\n\n"
             "Profiles CUDA memory allocations (cuMemAlloc*, cuMemCreate/Map, "
             "frees, context\ndestroy) per call stack with eBPF uprobes: no "
             "code change, no restart.  Needs\nroot or CAP_BPF+CAP_PERFMON; "
             "--preload needs neither.  'top' shows a live table.\n",
    .tail = "Exit codes: 0 ok, 1 failure, 2 usage error, 3 eBPF not permitted "
            "(--check);\n--preload exits with the command's status.\n",
    .env_known = mp_env_known,
    .flags = OPT_P_ARGS | OPT_P_DASHDASH,
};

/* The interposer beside this gpufl (--preload-lib and GPUFL_MEMPROF_PRELOAD
 * name another). */
static void find_preload(char *out, size_t cap)
{
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
        glog_error("cli", "%s %s: %s", flag, path, strerror(errno));
        return -1;
    }
    n = fread(out, 1, cap - 1, f);
    bad = ferror(f);
    fclose(f);
    out[n] = 0;
    while (n && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        out[--n] = 0;
    if (bad || n > cap - 2 || strlen(out) != n || header_safe(out)) {
        glog_error("cli", "%s %s: %s", flag, path,
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
        glog_error("cli",
                   "%s must be one line of printable ASCII, at "
                   "most 4096 bytes",
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
            glog_error("cli", "the --pyroscope-* options need "
                              "--pyroscope URL");
            return -1;
        }
        return 0;
    }
    if (strncmp(u, "http://", 7) && strncmp(u, "https://", 8)) {
        glog_error("cli", "--pyroscope wants an http:// or "
                          "https:// URL");
        return -1;
    }
    /* user:password@ in the URL is refused, not used: the command line is
     * readable by every user (ps, /proc/PID/cmdline) and ends up in logs */
    auth = strstr(u, "://") + 3;
    end = auth + strcspn(auth, "/?#");
    if (memchr(auth, '@', (size_t)(end - auth))) {
        glog_error("cli",
                   "--pyroscope URL must not contain "
                   "user:password@ (a command line is visible to every user); "
                   "use --pyroscope-user with --pyroscope-password-file or "
                   "GPUFL_PYROSCOPE_PASSWORD");
        return -1;
    }
    if (o->pyroscope_tenant && (header_safe(o->pyroscope_tenant) ||
                                strlen(o->pyroscope_tenant) > 256)) {
        glog_error("cli", "--pyroscope-tenant must be printable "
                          "ASCII, 1 to 256 bytes");
        return -1;
    }
    if (o->pyroscope_user && tok_file) {
        glog_error("cli", "give --pyroscope-user (basic auth) or "
                          "--pyroscope-token-file (bearer), not both");
        return -1;
    }
    if (pw_file && !o->pyroscope_user) {
        glog_error("cli", "--pyroscope-password-file needs "
                          "--pyroscope-user");
        return -1;
    }
    if (o->pyroscope_user) {
        if (header_safe(o->pyroscope_user) || strchr(o->pyroscope_user, ':') ||
            strlen(o->pyroscope_user) > 256) {
            glog_error("cli", "--pyroscope-user must be "
                              "printable ASCII without ':', 1 to 256 bytes");
            return -1;
        }
        rc = pw_file ? read_secret("--pyroscope-password-file", pw_file, secret,
                                   cap)
                     : env_secret("GPUFL_PYROSCOPE_PASSWORD", secret, cap);
        if (rc > 0)
            glog_error("cli", "--pyroscope-user needs a "
                              "password: --pyroscope-password-file FILE or "
                              "GPUFL_PYROSCOPE_PASSWORD");
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
    static mp_cli m; /* the table's fields and the engine's state */
    static opt_ctx c;
    memprof_opts *o = &m.o;
    char preload[4096];
    char pyro_secret[PYRO_SECRET_MAX + 2];
    int nmodes, rc;

    rc = opt_cli(&c, &cli_memprof_prog, &m, NULL, argc, argv);
    if (rc)
        goto out;
    glog_setup("gpufl memprof", m.log_level, m.log_format);
    rc = 2;
    for (size_t i = 0; i < c.nargs; i++)
        if (i || strcmp(c.args[i], "top")) {
            glog_error("cli",
                       "unexpected argument \"%s\" (see gpufl "
                       "memprof --help)",
                       c.args[i]);
            goto out;
        }
    if (c.nargs) {
        o->live = 1;
        if (opt_source(&cli_memprof_prog, c.org, "format") == OPT_SRC_DEFAULT)
            o->format = MEMPROF_FMT_TOP;
    }
    if (m.check) {
        rc = mp_ebpf_check();
        goto out;
    }
    nmodes = (o->npids > 0) + (o->cgroup != NULL) + m.all + m.preload;
    o->mode = o->npids    ? MEMPROF_PIDS
              : o->cgroup ? MEMPROF_CGROUP
              : m.all     ? MEMPROF_ALL
                          : MEMPROF_PRELOAD;
    if (nmodes != 1) {
        glog_error("cli", "give exactly one of --pid, --cgroup, "
                          "--all, --preload (see gpufl memprof --help)");
        goto out;
    }
    if (o->mode == MEMPROF_PRELOAD) {
        if (!c.nrest) {
            glog_error("cli", "--preload needs -- CMD");
            goto out;
        }
        o->cmd = c.rest;
        if (!o->preload_so) {
            find_preload(preload, sizeof preload);
            o->preload_so = preload[0] ? preload : NULL;
        }
    } else if (c.rest) {
        glog_error("cli", "a command is only run with "
                          "--preload");
        goto out;
    }
    /* the profile is written at the end: a folder that cannot take it
     * must stop us now, not lose the whole run then */
    if (o->outdir && (fs_mkdir_p(o->outdir) || access(o->outdir, W_OK))) {
        glog_error("cli", "--outdir %s: %s", o->outdir, strerror(errno));
        goto out;
    }
    if (o->format == MEMPROF_FMT_PPROF && !o->output && !o->outdir) {
        glog_error("cli", "--format pprof needs --output FILE");
        goto out;
    }
    if (o->server && !o->token)
        o->token = getenv("GPUFL_TOKEN");
    if (o->server && o->token && httpc_cleartext(o->server))
        glog_warn("cli",
                  "warning: --server %s is plain http to another machine: "
                  "the token and the profiles cross the network in the "
                  "clear; use https:// (gpufl-server --tls-cert/--tls-key, "
                  "docs/deploy.md)",
                  o->server);
    if (pyroscope_auth(o, m.pw_file, m.tok_file, pyro_secret,
                       sizeof pyro_secret))
        goto out;
    if (o->pyroscope && (o->pyroscope_token || o->pyroscope_password) &&
        httpc_cleartext(o->pyroscope))
        glog_warn("cli",
                  "warning: --pyroscope is plain http to another machine: "
                  "its credentials cross the network in the clear; use "
                  "https://");
    o->duration = (double)m.duration_ms / 1000;
    o->interval = m.interval_ms ? (double)m.interval_ms / 1000
                  : o->live     ? 2
                                : 10;
    rc = memprof_run(o);
    explicit_bzero(pyro_secret, sizeof pyro_secret);
out:
    /* the environment's token is borrowed, not ours to free */
    if (o->token && o->token == getenv("GPUFL_TOKEN"))
        o->token = NULL;
    if (o->preload_so == preload)
        o->preload_so = NULL;
    opt_release(&cli_memprof_prog, &m);
    return rc < 0 ? 0 : rc;
}
