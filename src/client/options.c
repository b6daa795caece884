/*
 * options.c - gpufl_options defaults, the GPUFL_* environment, and their
 * resolution into the copied configuration a session runs with.
 *
 * One table (env_table) names every environment variable, its field and its
 * bounds: parsing and docs/client.md come from the same list.
 */
#include "client_int.h"
#include "cupti_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum opt_type { OT_STR, OT_U32, OT_U64, OT_SIZE, OT_BOOL, OT_F64, OT_LEVEL };

typedef struct env_opt {
    const char *env;
    enum opt_type type;
    size_t off;
    double lo, hi;
} env_opt;

#define OFF(f) offsetof(gpufl_options, f)

/* The fields every gpufl_options has had (up to proc_root): a smaller sz is
 * not a gpufl_options filled by gpufl_options_init. */
#define OPTIONS_MIN_SZ offsetof(gpufl_options, log)
/* The struct of gpufl 0.1.0 ends with cupti_close_ms; fields are only
 * appended, so this stays its size (168 on LP64). */
#define OPTIONS_SZ_V0_1                                                        \
    (offsetof(gpufl_options, cupti_close_ms) + sizeof(uint32_t))
_Static_assert(sizeof(gpufl_options) >= OPTIONS_SZ_V0_1,
               "gpufl_options only grows");

static const env_opt env_table[] = {
    { "GPUFL_APP", OT_STR, OFF(app), 0, 0 },
    { "GPUFL_LOG_DIR", OT_STR, OFF(log_dir), 0, 0 },
    { "GPUFL_LOG_PREFIX", OT_STR, OFF(log_prefix), 0, 0 },
    { "GPUFL_ENGINES", OT_STR, OFF(engines), 0, 0 },
    { "GPUFL_SYSTEM_INTERVAL_MS", OT_U32, OFF(system_interval_ms), 0, 3600000 },
    { "GPUFL_ROTATE_BYTES", OT_SIZE, OFF(rotate_bytes), 4096, 1e15 },
    { "GPUFL_ROTATE_KEEP", OT_U32, OFF(rotate_keep), 0, 1000000 },
    { "GPUFL_ROTATE_ZSTD", OT_BOOL, OFF(compress_rotated), 0, 1 },
    { "GPUFL_MIN_FREE_BYTES", OT_SIZE, OFF(min_free_bytes), 0, 1e18 },
    { "GPUFL_RING_EVENTS", OT_U32, OFF(ring_events), 64, 1 << 24 },
    { "GPUFL_FLUSH_MS", OT_U32, OFF(flush_ms), 1, 60000 },
    { "GPUFL_SIM_SEED", OT_U64, OFF(sim_seed), 0, 1.8e19 },
    { "GPUFL_SIM_STEPS", OT_U32, OFF(sim_steps), 0, 1e9 },
    { "GPUFL_SIM_DEVICES", OT_U32, OFF(sim_devices), 1, GPU_MAX_DEVICES },
    { "GPUFL_SIM_SPEED", OT_F64, OFF(sim_speed), 0.001, 1e9 },
    { "GPUFL_NVML_LIB", OT_STR, OFF(nvml_lib), 0, 0 },
    { "GPUFL_PROC_ROOT", OT_STR, OFF(proc_root), 0, 0 },
    { "GPUFL_LOG_LEVEL", OT_LEVEL, OFF(log_level), 0, 0 },
    { "GPUFL_DISABLED", OT_BOOL, OFF(disabled), 0, 1 },
    { "GPUFL_CUPTI_LIB", OT_STR, OFF(cupti_lib), 0, 0 },
    { "GPUFL_STACKS", OT_BOOL, OFF(stacks), 0, 1 },
    { "GPUFL_STACK_DEPTH", OT_U32, OFF(stack_depth), 1, 56 },
    { "GPUFL_CUPTI_FLUSH_MS", OT_U32, OFF(cupti_flush_ms), 10, 60000 },
    { "GPUFL_CUPTI_CLOSE_MS", OT_U32, OFF(cupti_close_ms), 100, 600000 },
};

/* The CUPTI engine's settings of the running session.  client_cfg is not
 * extended for them (it is shared by every engine); written by
 * client_cfg_resolve under gpufl_init's lock, read by the engine's open(). */
static cupti_cfg cupti_resolved;

const cupti_cfg *client_cupti_cfg(void)
{
    return &cupti_resolved;
}

/* 1/0 for true/false words, -1 otherwise. */
static int parse_bool(const char *s)
{
    static const char *const yes[] = { "1", "true", "yes", "on" };
    static const char *const no[] = { "0", "false", "no", "off", "" };
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (!strcasecmp(s, yes[i]))
            return 1;
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (!strcasecmp(s, no[i]))
            return 0;
    return -1;
}

/* Unsigned integer with an optional K/M/G/T suffix (powers of 1024, an
 * optional trailing "iB" or "B"). */
static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;
    uint64_t mul = 1;
    errno = 0;
    if (*s == '-' || !*s)
        return -1;
    v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    switch (*end) {
    case 'k':
    case 'K':
        mul = 1ull << 10;
        end++;
        break;
    case 'm':
    case 'M':
        mul = 1ull << 20;
        end++;
        break;
    case 'g':
    case 'G':
        mul = 1ull << 30;
        end++;
        break;
    case 't':
    case 'T':
        mul = 1ull << 40;
        end++;
        break;
    default: break;
    }
    if (mul > 1 && (*end == 'i' || *end == 'I'))
        end++;
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end)
        return -1;
    if (v > UINT64_MAX / mul)
        return -1;
    *out = v * mul;
    return 0;
}

static int parse_level(const char *s)
{
    static const char *const names[] = { "error", "warn", "info", "debug" };
    for (int i = 0; i < 4; i++)
        if (!strcasecmp(s, names[i]))
            return i;
    if (!strcasecmp(s, "off") || !strcasecmp(s, "none"))
        return -1;
    return -2;
}

static int apply_env(gpufl_options *o, const env_opt *e, const char *v)
{
    char *p = (char *)o + e->off;
    uint64_t u;
    char *end;
    switch (e->type) {
    case OT_STR: *(const char **)(void *)p = v; return 0;
    case OT_BOOL: {
        int b = parse_bool(v);
        if (b < 0)
            return -1;
        *(int *)(void *)p = b;
        return 0;
    }
    case OT_LEVEL: {
        int l = parse_level(v);
        if (l == -2)
            return -1;
        *(int *)(void *)p = l;
        return 0;
    }
    case OT_F64: {
        double d;
        errno = 0;
        d = strtod(v, &end);
        if (errno || end == v || *end || !(d >= e->lo && d <= e->hi))
            return -1;
        *(double *)(void *)p = d;
        return 0;
    }
    case OT_U32:
    case OT_U64:
    case OT_SIZE:
        if (parse_size(v, &u) < 0)
            return -1;
        if ((double)u < e->lo || (double)u > e->hi)
            return -1;
        if (e->type == OT_U32)
            *(uint32_t *)(void *)p = (uint32_t)u;
        else
            *(uint64_t *)(void *)p = u;
        return 0;
    }
    return -1;
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
static void sanitize_name(char *s)
{
    for (; *s; s++) {
        char c = *s;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
            *s = '_';
    }
}

int client_cfg_resolve(const gpufl_options *o, client_cfg *cfg, char *err,
                       size_t errlen)
{
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
    sanitize_name(cfg->app);
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
        sanitize_name(cfg->log_prefix);
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
    memset(&cupti_resolved, 0, sizeof cupti_resolved);
    copy_str(cupti_resolved.lib, sizeof cupti_resolved.lib, o->cupti_lib);
    cupti_resolved.stacks = o->stacks;
    cupti_resolved.stack_depth = o->stack_depth;
    cupti_resolved.flush_ms = o->cupti_flush_ms;
    cupti_resolved.close_ms = o->cupti_close_ms;
    if (o->disabled)
        return GPUFL_EDISABLED;
    return GPUFL_OK;
}
