/*
 * options.c - gpufl_options defaults, the GPUFL_* environment, and their
 * resolution into the copied configuration a session runs with.
 *
 * One table (env_table) names every environment variable, its field, its
 * bounds and its meaning: the option engine's value parsers
 * (src/common/opt.h, the syntax every gpufl program shares) read it, and
 * docs/client.md's table is made from it (tests/docs/opt_docs_client.c).
 * Nothing here prints: a bad value is reported through gpufl_last_error()
 * and the session's warning.
 */
#include "client_int.h"
#include "cupti_int.h"
#include "window.h"
#include "common/opt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T gpufl_options
#define ENV_STR(f, e) .name = #f, .type = OPT_STR, OPT_F_REF(T, f), .env = e
#define ENV_MS(f, e)                                                           \
    .name = #f, .type = OPT_DUR, .unit = OPT_MS, OPT_F_UINT(T, f), .env = e
/* Ranks are -1 (the launcher's) until set: the default is documented, not
 * parsed, since the engine's integers are not negative. */
#define ENV_RANK(f, e)                                                         \
    .name = #f, .type = OPT_INT, OPT_F_SINT(T, f), .env = e,                   \
    .def_doc = "the launcher's"
/* Strings are borrowed from the environment, as they always were: the
 * struct holds what getenv() returned. */
static const opt_def env_table[] = {
    { ENV_STR(app, "GPUFL_APP"),
      .def_doc = "program name (`/proc/self/comm`, at most 15 characters)",
      .help = "Application name in the files' names and the `session` line "
              "(at most 127 bytes). Characters outside `[A-Za-z0-9._-]` "
              "become `_`." },
    { ENV_STR(log_dir, "GPUFL_LOG_DIR"), .def = ".",
      .help = "Directory for the logs; created with its parents (mode "
              "0755)." },
    { ENV_STR(log_prefix, "GPUFL_LOG_PREFIX"),
      .def_doc = "`<app>.<yyyymmdd-hhmmss>.<sid8>` (UTC)",
      .help = "File prefix inside `log_dir`, at most 226 bytes. Longer is "
              "refused (`GPUFL_EINVAL`): every file name must fit the file "
              "system's 255 bytes with the longest suffix, "
              "`.system.log.999999999.zst.tmp`. Characters outside "
              "`[A-Za-z0-9._-]` become `_` (no subdirectories). The files must "
              "not exist yet: a fixed prefix makes a second run in the same "
              "directory fail (`GPUFL_EIO`, \"File exists\")." },
    { ENV_STR(engines, "GPUFL_ENGINES"), .def = "auto",
      .help = "Comma-separated engines: `auto`, `sim`, `nvml`, `host`, "
              "`cupti` ([Engines](#engines)). Spaces around names are "
              "ignored; names are case-sensitive. An unknown name makes "
              "`gpufl_init` fail with `GPUFL_EINVAL` naming it; so does a list "
              "that names no engine (`\",,,\"`)." },
    { ENV_MS(system_interval_ms, "GPUFL_SYSTEM_INTERVAL_MS"), .def = "1000",
      .max = 3600000,
      .help = "Period of `gpu` and `host` samples; 0 = none (counters are "
              "then checked once a second)." },
    { .name = "rotate_bytes",
      .type = OPT_SIZE,
      OPT_F_UINT(T, rotate_bytes),
      .env = "GPUFL_ROTATE_BYTES",
      .def = "64MiB",
      .min = 4096,
      .max = 1000000000000000ull,
      .help = "Size at which a stream's file is rotated. Values below 4,096 "
              "set in code are raised to 4,096." },
    { .name = "rotate_keep",
      .type = OPT_INT,
      OPT_F_UINT(T, rotate_keep),
      .env = "GPUFL_ROTATE_KEEP",
      .def = "20",
      .max = 1000000,
      .help = "Rotated files kept per stream; older ones are deleted. 0 = "
              "keep all." },
    { .name = "compress_rotated",
      .type = OPT_BOOL,
      OPT_F_SINT(T, compress_rotated),
      .env = "GPUFL_ROTATE_ZSTD",
      .def = "false",
      .help = "Compress rotated files to `.N.zst` in the background." },
    { .name = "min_free_bytes",
      .type = OPT_SIZE,
      OPT_F_UINT(T, min_free_bytes),
      .env = "GPUFL_MIN_FREE_BYTES",
      .def = "256MiB",
      .max = 1000000000000000000ull,
      .help = "Capture pauses while the log directory's file system has "
              "less free space than this; 0 = no disk guard." },
    { .name = "ring_events",
      .type = OPT_INT,
      OPT_F_UINT(T, ring_events),
      .env = "GPUFL_RING_EVENTS",
      .def = "16384",
      .min = 64,
      .max = 1u << 24,
      .help = "Buffer slots per recording thread (128 bytes each: 2 MiB by "
              "default). Rounded up to a power of two (`100` gives 128 "
              "slots). A value outside the bounds set in code makes "
              "`gpufl_init` fail with `GPUFL_EINVAL` (\"ring_events=10 must be "
              "between 64 and 16777216\")." },
    { ENV_MS(flush_ms, "GPUFL_FLUSH_MS"), .def = "100", .min = 1, .max = 60000,
      .help = "Longest time an event waits in memory before it is written. "
              "0 set in code means 1." },
    { .name = "sim_seed",
      .type = OPT_INT,
      OPT_F_UINT(T, sim_seed),
      .env = "GPUFL_SIM_SEED",
      .def = "1",
      .help = "Seed of the simulated GPU." },
    { .name = "sim_steps",
      .type = OPT_INT,
      OPT_F_UINT(T, sim_steps),
      .env = "GPUFL_SIM_STEPS",
      .def = "0",
      .max = 1000000000,
      .help = "Simulated training steps; 0 = until shutdown. Shutdown also "
              "ends a run of N steps early unless `gpufl_flush()` waited for "
              "them (see **Ending** under [The simulated "
              "GPU](#the-simulated-gpu))." },
    { .name = "sim_devices",
      .type = OPT_INT,
      OPT_F_UINT(T, sim_devices),
      .env = "GPUFL_SIM_DEVICES",
      .def = "1",
      .min = 1,
      .max = GPU_MAX_DEVICES,
      .help = "Simulated GPUs. In code, 0 means 1 and values above 16 mean "
              "16." },
    { .name = "sim_speed",
      .type = OPT_FLOAT,
      OPT_F_DBL(T, sim_speed),
      .env = "GPUFL_SIM_SPEED",
      .def = "1",
      .fmin = 0.001,
      .fmax = 1e9,
      .help = "Simulated time runs this many times faster than real time. "
              "In code, values <= 0 mean 1." },
    { ENV_STR(nvml_lib, "GPUFL_NVML_LIB"), .def = "libnvidia-ml.so.1",
      .help = "NVML library: a soname searched the usual way, or a path "
              "(contains `/`)." },
    { ENV_STR(proc_root, "GPUFL_PROC_ROOT"), .def = "/proc",
      .help = "Where host metrics are read (for tests). When "
              "`<proc_root>/stat` cannot be read, the host engine is off, "
              "with the reason in the session line's `engines.host` and a "
              "warning." },
    { .name = "log_level",
      .type = OPT_ENUM,
      OPT_F_SINT(T, log_level),
      .env = "GPUFL_LOG_LEVEL",
      .def = "off",
      .choices = "error=0|warn=1|info=2|debug=3|off=-1|none=-1",
      .help = "Messages at this level and more severe go to the callback, "
              "or without one to stderr as `gpufl <level>: <message>`; "
              "`off`/`none` (-1, the default) = none to stderr, errors and "
              "warnings to a callback." },
    { .name = "disabled",
      .type = OPT_BOOL,
      OPT_F_SINT(T, disabled),
      .env = "GPUFL_DISABLED",
      .def = "false",
      .help = "Non-zero: `gpufl_init` returns `GPUFL_EDISABLED`. Set in the "
              "environment to true, it wins over the code." },
    { ENV_STR(cupti_lib, "GPUFL_CUPTI_LIB"), .def_doc = "(search)",
      .help = "`libcupti.so.13` to load; when set it is the only path tried. "
              "Default: the one the application already loaded, the library "
              "path, then `/usr/local/cuda`." },
    { .name = "stacks",
      .type = OPT_BOOL,
      OPT_F_SINT(T, stacks),
      .env = "GPUFL_STACKS",
      .def = "false",
      .help = "Record the CPU call stack of each kernel launch (cupti engine; "
              "costs ~130 ns per frame on the launching thread)." },
    { .name = "stack_depth",
      .type = OPT_INT,
      OPT_F_UINT(T, stack_depth),
      .env = "GPUFL_STACK_DEPTH",
      .def = "32",
      .min = 1,
      .max = 56,
      .help = "Frames kept per stack." },
    { ENV_MS(cupti_flush_ms, "GPUFL_CUPTI_FLUSH_MS"), .def = "500", .min = 10,
      .max = 60000,
      .help = "How often CUPTI's completed activity buffers are collected." },
    { ENV_MS(cupti_close_ms, "GPUFL_CUPTI_CLOSE_MS"), .def = "10000",
      .min = 100, .max = 600000,
      .help = "Longest wait at shutdown for CUPTI's final flush; then the "
              "session ends without what CUPTI still holds (a marker says "
              "so) instead of hanging the program." },
    { ENV_STR(record, "GPUFL_RECORD"), .def = "file",
      .help = "`file`: every event is written as it comes. `ring:DURATION`, "
              "`ring:SIZE` or `ring:DURATION,SIZE` (`ring:120s`, "
              "`ring:256MiB`, `ring:2m,1GiB`): the flight recorder keeps the "
              "last DURATION of events, or the last SIZE of formatted lines, "
              "in memory and writes them only when a trigger fires "
              "([recorder.md](recorder.md)). A duration needs its unit (`ms`, "
              "`s`, `m` = minutes, `h`, `d`); a size needs a size unit (`K`, "
              "`M`, `G`, `T`, with an optional `i` and `B`); a window given "
              "as a duration holds at most 256 MiB. Sizes from 1 MiB to 1 "
              "TiB. A value that is neither makes `gpufl_init` fail with "
              "`GPUFL_EINVAL`." },
    { ENV_STR(triggers, "GPUFL_TRIGGERS"), .def = TRG_DEFAULT,
      .help = "What makes ring mode write its window (comma list): `signal` "
              "(SIGUSR2), `crash` (SIGSEGV, SIGBUS, SIGILL, SIGFPE, "
              "SIGABRT), `exit-error` (a non-zero exit status), `cuda-error` "
              "(a kernel launch or device allocation that returns an "
              "error), `oom` (one that returns out of memory), "
              "`scope=NAME>DURATION` (a scope of that name lasting longer, "
              "up to 8 of them), `ctl` (`gpufl ctl PID dump`). An unknown "
              "name makes `gpufl_init` fail with `GPUFL_EINVAL`. Unused in "
              "file mode." },
    { ENV_MS(trigger_after_ms, "GPUFL_TRIGGER_AFTER"), .def = "10s",
      .max = 3600000,
      .help = "After a trigger, how long ring mode keeps writing every "
              "event as it comes (the dump's live part) before it goes back "
              "to its window; 0 = the window only." },
    { .name = "ctl",
      .type = OPT_BOOL,
      OPT_F_SINT(T, ctl),
      .env = "GPUFL_CTL",
      .def = "true",
      .help = "Listen on the control socket of `gpufl ctl` (an abstract "
              "Unix socket `@gpufl-ctl.<pid>`, for this user and root only; "
              "[recorder.md](recorder.md#control-socket))." },
    { .name = "trace",
      .type = OPT_BOOL,
      OPT_F_SINT(T, trace),
      .env = "GPUFL_TRACE",
      .def = "true",
      .help = "CUPTI activity tracing (kernels, copies, ...) from the start. "
              "`false`: monitoring only (scopes, markers, counters, NVML, "
              "host) until `gpufl ctl PID trace on`; the cupti engine is "
              "still opened, so tracing can be switched on later." },
    { ENV_STR(job, "GPUFL_JOB"), .def_doc = "the launcher's",
      .help = "Job id, written in the `session` line with the rank "
              "([Jobs and ranks](#jobs-and-ranks)); like `app`, characters "
              "outside `[A-Za-z0-9._-]` become `_`. Longer than 127 bytes "
              "is not recorded (a warning says so)." },
    { ENV_RANK(rank, "GPUFL_RANK"),
      .help = "This process's rank in the job (0 = the first)." },
    { ENV_RANK(world_size, "GPUFL_WORLD_SIZE"), .min = 1,
      .help = "Ranks in the job." },
    { ENV_RANK(local_rank, "GPUFL_LOCAL_RANK"),
      .help = "This process's rank on its host." },
    { ENV_STR(step_scope, "GPUFL_STEP_SCOPE"), .def_doc = "(none)",
      .help = "Name of the scope that is one training step (`train_step`), "
              "written in the `session` line for the server's per-step "
              "figures. Longer than 127 bytes is not recorded (a warning "
              "says so)." },
    { ENV_STR(sim_perturb, "GPUFL_SIM_PERTURB"), .def_doc = "(none)",
      .help = "Changes the simulated GPU makes on purpose: a comma list of "
              "`kernel=SUBSTRING:xFACTOR[@STEP]`, `mem=+BYTES` and "
              "`stall=SECONDS@STEP` ([Perturbations](#perturbations)). A "
              "value that does not parse makes `gpufl_init` fail with "
              "`GPUFL_EINVAL` naming the item." },
};
#undef ENV_RANK
#undef ENV_MS
#undef ENV_STR
#undef T

/* The fields every gpufl_options has had (up to proc_root): a smaller sz is
 * not a gpufl_options filled by gpufl_options_init. */
#define OPTIONS_MIN_SZ offsetof(gpufl_options, log)
/* The struct of gpufl 0.1.0 ends with cupti_close_ms; fields are only
 * appended, so this stays its size (168 on LP64). */
#define OPTIONS_SZ_V0_1                                                        \
    (offsetof(gpufl_options, cupti_close_ms) + sizeof(uint32_t))
_Static_assert(sizeof(gpufl_options) >= OPTIONS_SZ_V0_1,
               "gpufl_options only grows");

const opt_prog client_env_prog = {
    .name = "libgpufl",
    .opts = env_table,
    .n = sizeof env_table / sizeof env_table[0],
    .size = sizeof(gpufl_options),
    .flags = OPT_P_NOPREFIX,
};

/* The CUPTI engine's settings of the running session.  client_cfg is not
 * extended for them (it is shared by every engine); written by
 * client_cfg_resolve under gpufl_init's lock, read by the engine's open(). */
static cupti_cfg cupti_resolved;

const cupti_cfg *client_cupti_cfg(void)
{
    return &cupti_resolved;
}

/* One variable's value into its field of o: 0, or -1 (the field keeps
 * its value). */
static int apply_env(gpufl_options *o, const opt_def *e, const char *v)
{
    char why[256];

    return opt_value_set(e, o, v, e->env, why, sizeof why) ? -1 : 0;
}

/* Fill a whole library-sized struct: defaults, then the environment. */
static int options_fill(gpufl_options *o)
{
    int rc = GPUFL_OK;
    memset(o, 0, sizeof *o);
    client_env_warning(NULL);
    o->sz = sizeof *o;
    o->app = NULL;
    o->log_dir = ".";
    o->log_prefix = NULL;
    o->engines = "auto";
    o->system_interval_ms = 1000;
    o->rotate_bytes = 64ull << 20;
    o->rotate_keep = 20;
    o->compress_rotated = 0;
    o->min_free_bytes = 256ull << 20;
    o->ring_events = 16384; /* 2 MiB per recording thread: ~16 ms of
                              * headroom at 1M events/s when the collector
                              * is descheduled */
    o->flush_ms = 100;
    o->sim_seed = 1;
    o->sim_steps = 0;
    o->sim_devices = 1;
    o->sim_speed = 1.0;
    o->nvml_lib = "libnvidia-ml.so.1";
    o->proc_root = "/proc";
    o->log = NULL;
    o->log_ud = NULL;
    o->log_level = -1;
    o->disabled = 0;
    o->cupti_lib = NULL;
    o->stacks = 0;
    o->stack_depth = 32;
    o->cupti_flush_ms = CUPTI_FLUSH_MS_DEFAULT;
    o->cupti_close_ms = CUPTI_CLOSE_MS_DEFAULT;
    o->record = "file";
    o->triggers = TRG_DEFAULT;
    o->trigger_after_ms = 10000;
    o->ctl = 1;
    o->trace = 1;
    o->job = NULL;
    o->rank = -1;
    o->world_size = -1;
    o->local_rank = -1;
    o->step_scope = NULL;
    o->sim_perturb = NULL;
    for (size_t i = 0; i < sizeof env_table / sizeof env_table[0]; i++) {
        const char *v = getenv(env_table[i].env);
        if (v && apply_env(o, &env_table[i], v) < 0) {
            client_set_error("%s=\"%.100s\" is not a valid value; using the "
                             "default (see docs/client.md)",
                             env_table[i].env, v);
            /* kept for gpufl_init, which logs it and writes it into the
             * session header: a typo must not pass unnoticed */
            client_env_warning(g_client.last_error);
            rc = GPUFL_EINVAL;
        }
    }
    return rc;
}

/* Whether sz can be the size of a caller's gpufl_options, with a message
 * for err when not. */
static int options_sz_ok(size_t sz, char *err, size_t errlen)
{
    if (sz >= OPTIONS_MIN_SZ && sz <= CLIENT_OPTS_SZ_MAX)
        return 1;
    snprintf(err, errlen,
             "gpufl_options.sz=%zu is not a gpufl_options size (%zu..%d); "
             "fill the struct with gpufl_options_init()",
             sz, (size_t)OPTIONS_MIN_SZ, CLIENT_OPTS_SZ_MAX);
    return 0;
}

/* The caller's struct is sz bytes: the library writes only those.  A
 * larger one (a newer header) gets its tail zeroed, so that a field this
 * library does not know reads as "not set" when gpufl_init checks it. */
int gpufl_options_init_sz(gpufl_options *o, size_t sz)
{
    gpufl_options d;
    char err[160];
    int rc;
    if (!o) {
        client_set_error("gpufl_options_init: NULL options");
        return GPUFL_EINVAL;
    }
    if (!options_sz_ok(sz, err, sizeof err)) {
        client_set_error("gpufl_options_init: %s", err);
        return GPUFL_EINVAL;
    }
    rc = options_fill(&d);
    if (sz <= sizeof d) {
        memcpy(o, &d, sz);
    } else {
        memcpy(o, &d, sizeof d);
        memset((char *)o + sizeof d, 0, sz - sizeof d);
    }
    o->sz = sz;
    return rc;
}

/* gpufl 0.1.0's header declared gpufl_options_init() as a library
 * function, so programs built against it call this symbol with a struct
 * of 0.1.0's size; the header's inline gpufl_options_init() replaces it
 * for programs built since.  The asm label gives this compat entry the old
 * exported name: the inline function of that name is never emitted in
 * this file (nothing here calls it), so the names do not collide. */
GPUFL_API int
client_options_init_v0_1(gpufl_options *o) __asm__("gpufl_options_init");
int client_options_init_v0_1(gpufl_options *o)
{
    return gpufl_options_init_sz(o, OPTIONS_SZ_V0_1);
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strnlen(src, cap - 1) : 0;
    if (n)
        memcpy(dst, src, n);
    dst[n] = 0;
}

/* The program name from /proc/self/comm, for the default app name. */
static void program_name(char *out, size_t cap)
{
    FILE *f = fopen("/proc/self/comm", "re");
    size_t n = 0;
    if (f) {
        n = fread(out, 1, cap - 1, f);
        fclose(f);
    }
    while (n && (out[n - 1] == '\n' || out[n - 1] == ' '))
        n--;
    out[n] = 0;
    if (!n)
        copy_str(out, cap, "gpufl");
}

/* App names end up in file names: keep [A-Za-z0-9._-], map others to '_'. */
void client_name_sanitize(char *s)
{
    for (; *s; s++) {
        char c = *s;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
            *s = '_';
    }
}

/* One part of ring:...: a duration (needs its unit) or a size (a size
 * unit); "1m" is a minute, since durations are tried first. */
static int ring_part(const char *p, size_t n, uint64_t *ns, uint64_t *bytes)
{
    char v[64];
    uint64_t x;
    if (!n || n >= sizeof v || !(p[n - 1] < '0' || p[n - 1] > '9'))
        return -1;
    memcpy(v, p, n);
    v[n] = 0;
    if (!*ns && opt_parse_dur(v, OPT_MS, OPT_MS, &x) == 0 && x) {
        *ns = x * 1000000ull;
        return 0;
    }
    if (!*bytes && opt_parse_size(v, &x) == 0 && x) {
        *bytes = x;
        return 0;
    }
    return -1;
}

/* GPUFL_RECORD: "file", or "ring:" and one or two parts. */
static int parse_record(const char *v, client_cfg *cfg, char *err,
                        size_t errlen)
{
    const char *p, *comma;
    cfg->ring = 0;
    if (!v || !*v || !strcmp(v, "file"))
        return 0;
    if (strncmp(v, "ring:", 5))
        goto bad;
    p = v + 5;
    comma = strchr(p, ',');
    cfg->ring_ns = cfg->ring_bytes = 0;
    if (ring_part(p, comma ? (size_t)(comma - p) : strlen(p), &cfg->ring_ns,
                  &cfg->ring_bytes) < 0 ||
        (comma && ring_part(comma + 1, strlen(comma + 1), &cfg->ring_ns,
                            &cfg->ring_bytes) < 0))
        goto bad;
    if (!cfg->ring_bytes)
        cfg->ring_bytes = WINDOW_DEFAULT_BYTES;
    if (cfg->ring_bytes < WINDOW_MIN_BYTES ||
        cfg->ring_bytes > WINDOW_MAX_BYTES) {
        snprintf(err, errlen,
                 "record=\"%.60s\": a window of 1MiB to 1TiB, please", v);
        return GPUFL_EINVAL;
    }
    cfg->ring = 1;
    return 0;
bad:
    snprintf(err, errlen,
             "record=\"%.60s\" is not file, ring:DURATION, ring:SIZE or "
             "ring:DURATION,SIZE (e.g. ring:120s, ring:256MiB; a duration "
             "needs its unit: ms, s, m, h, d; a size its unit: K, M, G, T "
             "with an optional iB)",
             v);
    return GPUFL_EINVAL;
}

int client_cfg_resolve(const gpufl_options *o, client_cfg *cfg, char *err,
                       size_t errlen)
{
    int rc;
    gpufl_options d;
    size_t bad;
    if (o && !options_sz_ok(o->sz, err, errlen))
        return GPUFL_EINVAL;
    if (o && o->sz > sizeof d &&
        (bad = client_tail_set(o, sizeof d, o->sz)) != 0) {
        /* a newer caller set a field this library does not have: running
         * without it would silently not do what was asked */
        snprintf(err, errlen,
                 "gpufl_options byte %zu (of sz=%zu) is set, but this "
                 "libgpufl (%s) knows only the first %zu bytes: a newer "
                 "option is set that this version does not have; leave it "
                 "0 or use a newer libgpufl",
                 bad - 1, o->sz, GPUFL_VERSION_STRING, sizeof d);
        return GPUFL_EINVAL;
    }
    if (!o) {
        options_fill(&d);
        o = &d;
    } else if (o->sz < sizeof d) {
        /* an older caller: read only its sz bytes, defaults (and the
         * environment) for the fields it does not know */
        options_fill(&d);
        memcpy(&d, o, o->sz);
        d.sz = sizeof d;
        o = &d;
    }
    memset(cfg, 0, sizeof *cfg);
    if (o->app && *o->app)
        copy_str(cfg->app, sizeof cfg->app, o->app);
    else
        program_name(cfg->app, sizeof cfg->app);
    client_name_sanitize(cfg->app);
    copy_str(cfg->log_dir, sizeof cfg->log_dir,
             o->log_dir && *o->log_dir ? o->log_dir : ".");
    /* every file name must fit NAME_MAX (255) with the longest suffix
     * the writer and its compressor add: ".system.log.999999999.zst.tmp" */
    if (o->log_prefix && strlen(o->log_prefix) > CLIENT_PREFIX_MAX) {
        snprintf(err, errlen,
                 "log_prefix is %zu bytes; at most %d (file names are "
                 "limited to 255 bytes and rotated, compressed files add "
                 "up to 29)",
                 strlen(o->log_prefix), CLIENT_PREFIX_MAX);
        return GPUFL_EINVAL;
    }
    copy_str(cfg->log_prefix, sizeof cfg->log_prefix, o->log_prefix);
    if (cfg->log_prefix[0])
        client_name_sanitize(cfg->log_prefix);
    copy_str(cfg->engines, sizeof cfg->engines,
             o->engines && *o->engines ? o->engines : "auto");
    copy_str(cfg->nvml_lib, sizeof cfg->nvml_lib,
             o->nvml_lib && *o->nvml_lib ? o->nvml_lib : "libnvidia-ml.so.1");
    copy_str(cfg->proc_root, sizeof cfg->proc_root,
             o->proc_root && *o->proc_root ? o->proc_root : "/proc");
    cfg->system_interval_ms = o->system_interval_ms;
    cfg->rotate_bytes = o->rotate_bytes < 4096 ? 4096 : o->rotate_bytes;
    cfg->rotate_keep = o->rotate_keep;
    cfg->compress_rotated = o->compress_rotated;
    cfg->min_free_bytes = o->min_free_bytes;
    cfg->ring_events = o->ring_events;
    if (cfg->ring_events < 64 || cfg->ring_events > (1u << 24)) {
        snprintf(err, errlen, "ring_events=%u must be between 64 and 16777216",
                 cfg->ring_events);
        return GPUFL_EINVAL;
    }
    /* rings index with a mask: round up to the next power of two */
    while (cfg->ring_events & (cfg->ring_events - 1))
        cfg->ring_events = (cfg->ring_events | (cfg->ring_events - 1)) + 1;
    cfg->flush_ms = o->flush_ms ? o->flush_ms : 1;
    cfg->sim_seed = o->sim_seed;
    cfg->sim_steps = o->sim_steps;
    cfg->sim_devices = o->sim_devices ? o->sim_devices : 1;
    if (cfg->sim_devices > GPU_MAX_DEVICES)
        cfg->sim_devices = GPU_MAX_DEVICES;
    cfg->sim_speed = o->sim_speed > 0 ? o->sim_speed : 1.0;
    cfg->log = o->log;
    cfg->log_ud = o->log_ud;
    cfg->log_level = o->log_level;
    if (o->sim_perturb && strlen(o->sim_perturb) > SIM_PERTURB_LEN_MAX) {
        snprintf(err, errlen, "sim_perturb is %zu bytes; at most %d",
                 strlen(o->sim_perturb), SIM_PERTURB_LEN_MAX);
        return GPUFL_EINVAL;
    }
    /* a perturbation asked for and not applied would make a demo or a
     * test show nothing and pass: refused like an unknown engine */
    if (sim_perturb_parse(o->sim_perturb, &cfg->sim_perturb, err, errlen))
        return GPUFL_EINVAL;
    copy_str(cfg->sim_perturb_str, sizeof cfg->sim_perturb_str, o->sim_perturb);
    if (o->step_scope && strlen(o->step_scope) >= sizeof cfg->step_scope) {
        /* a label: not worth a session, but not cut short either (a cut
         * name would name no scope) */
        char msg[160];
        snprintf(msg, sizeof msg,
                 "step_scope is %zu bytes, at most %zu; not recorded",
                 strlen(o->step_scope), sizeof cfg->step_scope - 1);
        client_env_warning(msg);
    } else {
        copy_str(cfg->step_scope, sizeof cfg->step_scope, o->step_scope);
    }
    client_job_resolve(o, cfg);
    memset(&cupti_resolved, 0, sizeof cupti_resolved);
    copy_str(cupti_resolved.lib, sizeof cupti_resolved.lib, o->cupti_lib);
    cupti_resolved.stacks = o->stacks;
    cupti_resolved.stack_depth = o->stack_depth;
    cupti_resolved.flush_ms = o->cupti_flush_ms;
    cupti_resolved.close_ms = o->cupti_close_ms;
    rc = parse_record(o->record, cfg, err, errlen);
    if (rc)
        return rc;
    /* a ring mode dump of a fixed prefix is <prefix>.dump<N> */
    if (cfg->ring && strlen(cfg->log_prefix) > CLIENT_PREFIX_MAX - 15) {
        snprintf(err, errlen,
                 "log_prefix is %zu bytes; at most %d in ring mode (dumps "
                 "add .dump<N> to it)",
                 strlen(cfg->log_prefix), CLIENT_PREFIX_MAX - 15);
        return GPUFL_EINVAL;
    }
    rc = trigger_parse(o->triggers, &cfg->trg, err, errlen);
    if (rc)
        return rc;
    cfg->trigger_after_ms = o->trigger_after_ms;
    cfg->ctl = o->ctl;
    cfg->trace = o->trace;
    if (o->disabled)
        return GPUFL_EDISABLED;
    return GPUFL_OK;
}
