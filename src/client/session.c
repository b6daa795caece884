/*
 * session.c - the life of a session: gpufl_init() resolves the options,
 * opens the engines (sources) and starts the collector and the sampler;
 * gpufl_shutdown() stops them in the order that keeps every event;
 * gpufl_flush(); the atexit and fork handlers.  The hot paths are in api.c.
 */
#include "client_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fsutil.h"
#include "ctl.h"
#include "common/opt.h"
#include "common/uuid.h"

static pthread_mutex_t life_lock = PTHREAD_MUTEX_INITIALIZER;
static int atexit_done;

static int is_active(void)
{
    return atomic_load_explicit(&g_client.active, memory_order_relaxed);
}

static void read_cmdline(char *out, size_t cap)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = 0;
    if (fd >= 0) {
        n = read(fd, out, cap - 1);
        close(fd);
    }
    if (n < 0)
        n = 0;
    for (ssize_t i = 0; i < n; i++)
        if (out[i] == 0)
            out[i] = ' ';
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = 0;
}

/* Next name of a comma list, spaces around it trimmed: *name and *len, or
 * 0 at the end.  *p moves past it. */
static int next_engine(const char **p, const char **name, size_t *len)
{
    const char *s = *p, *e;
    size_t n;
    if (!*s)
        return 0;
    e = strchr(s, ',');
    n = e ? (size_t)(e - s) : strlen(s);
    *p = e ? e + 1 : s + n;
    while (n && *s == ' ') {
        s++;
        n--;
    }
    while (n && s[n - 1] == ' ')
        n--;
    *name = s;
    *len = n;
    return 1;
}

/* Position of want in the list, or -1. */
static int engine_pos(const char *list, const char *want)
{
    const char *name;
    size_t len;
    for (int i = 0; next_engine(&list, &name, &len); i++)
        if (len == strlen(want) && !memcmp(name, want, len))
            return i;
    return -1;
}

static int engine_listed(const char *list, const char *want)
{
    return engine_pos(list, want) >= 0;
}

/* Unknown engine names are a usage error worth refusing: a typo would
 * otherwise silently capture nothing. */
static int check_engines(const char *list, char *bad, size_t badlen)
{
    static const char *const known[] = { "auto",  "sim",  "nvml",  "host",
                                         "cupti", "sass", "pcsamp" };
    const char *name;
    size_t len, named = 0;
    while (next_engine(&list, &name, &len)) {
        int ok = !len;
        named += len > 0;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
            if (len == strlen(known[i]) && !memcmp(name, known[i], len))
                ok = 1;
        if (!ok) {
            snprintf(bad, badlen, "%.*s", (int)(len > 60 ? 60 : len), name);
            return -1;
        }
    }
    /* ",,," names nothing: the session would record nothing at all */
    return named ? 0 : -2;
}

static void add_engine(const char *name, const src_ops *ops)
{
    client_engine *e = &g_client.engines[g_client.n_engines];
    src_config sc = {
        .nvml_lib = g_client.cfg.nvml_lib,
        .proc_root = g_client.cfg.proc_root,
        .sim_seed = g_client.cfg.sim_seed,
        .sim_steps = g_client.cfg.sim_steps,
        .sim_devices = g_client.cfg.sim_devices,
        .sim_speed = g_client.cfg.sim_speed,
        .sim_perturb = &g_client.cfg.sim_perturb,
    };
    char why[SRC_REASON_LEN] = "";
    int rc;
    if (g_client.n_engines >= CLIENT_MAX_SOURCES)
        return;
    snprintf(g_client.engine_names[g_client.n_engines],
             sizeof g_client.engine_names[0], "%s", name);
    g_client.n_engines++;
    memset(e, 0, sizeof *e);
    e->ops = ops;
    if (!ops) {
        snprintf(e->status, sizeof e->status,
                 "off: CUPTI capture is not built into this version of "
                 "libgpufl");
        return;
    }
    rc = ops->open(&e->state, &sc, why, sizeof why);
    if (rc) {
        snprintf(e->status, sizeof e->status, "off: %.240s",
                 why[0] ? why : gpufl_strerror(rc));
        client_log(GPUFL_LOG_WARN, "engine %s %s", name, e->status);
        e->state = NULL;
        return;
    }
    e->on = 1;
    snprintf(e->status, sizeof e->status, "on");
    if (ops->devices && g_client.n_devices == 0) {
        g_client.n_devices =
            ops->devices(e->state, g_client.devices, GPU_MAX_DEVICES);
        if (g_client.n_devices < 0)
            g_client.n_devices = 0;
    }
}

/* An engine that was asked for but cannot run next to another one. */
static void add_refused(const char *name, const char *why)
{
    client_engine *e = &g_client.engines[g_client.n_engines];
    if (g_client.n_engines >= CLIENT_MAX_SOURCES)
        return;
    memset(e, 0, sizeof *e);
    snprintf(g_client.engine_names[g_client.n_engines],
             sizeof g_client.engine_names[0], "%s", name);
    snprintf(e->status, sizeof e->status, "off: refused: %s", why);
    client_log(GPUFL_LOG_WARN, "engine %s %s", name, e->status);
    g_client.n_engines++;
}

static void open_engines(void)
{
    const char *list = g_client.cfg.engines;
    int autom = engine_listed(list, "auto");
    int sass = engine_listed(list, "sass"), pcs = engine_listed(list, "pcsamp");
    g_client.n_engines = 0;
    g_client.n_devices = 0;
    g_client.simulated = 0;
    /* The activity source comes first: its devices are the session's. */
    if (engine_listed(list, "sim")) {
        add_engine("sim", &src_sim_ops);
        g_client.simulated = g_client.engines[g_client.n_engines - 1].on;
    }
    /* CUPTI's profiling APIs (SASS metrics, PC sampling) share the GPU's
     * performance monitors and cannot run in one process; the first
     * listed wins.  SASS patching next to activity tracing hung in
     * practice (docs/capture.md): sass runs without tracing. */
    if (sass && pcs) {
        int sass_first = engine_pos(list, "sass") < engine_pos(list, "pcsamp");
        add_refused(sass_first ? "pcsamp" : "sass",
                    "sass and pcsamp cannot run in one process (CUPTI's "
                    "profiling APIs share the GPU's performance monitors); "
                    "profile with each in a separate run");
        sass = sass_first;
        pcs = !sass_first;
    }
    if (autom || engine_listed(list, "cupti")) {
        if (sass)
            add_refused("cupti",
                        "the sass engine runs without activity tracing "
                        "(SASS patching next to tracing hung in practice); "
                        "trace in a separate run");
        else
            add_engine("cupti", &src_cupti_ops);
    }
    if (sass)
        add_engine("sass", &src_sass_ops);
    if (pcs)
        add_engine("pcsamp", &src_pcsamp_ops);
    if (g_client.simulated && (autom || engine_listed(list, "nvml"))) {
        /* gpu lines of real and simulated devices would share device
         * numbers: a session is one or the other */
        client_engine *e = &g_client.engines[g_client.n_engines];
        memset(e, 0, sizeof *e);
        snprintf(g_client.engine_names[g_client.n_engines],
                 sizeof g_client.engine_names[0], "nvml");
        snprintf(e->status, sizeof e->status,
                 "off: the simulated GPU is selected (sim and nvml are not "
                 "combined in one session)");
        g_client.n_engines++;
    } else if (autom || engine_listed(list, "nvml")) {
        add_engine("nvml", &src_nvml_ops);
    }
    snprintf(g_client.host_status, sizeof g_client.host_status, "%s",
             autom || engine_listed(list, "host") ? "on" : "off: not selected");
    if (!strcmp(g_client.host_status, "on")) {
        char stat_path[sizeof g_client.cfg.proc_root + 8];
        snprintf(stat_path, sizeof stat_path, "%s/stat",
                 g_client.cfg.proc_root);
        /* a wrong GPUFL_PROC_ROOT would give a session without one host
         * sample and no word why: said here, in the session line */
        if (access(stat_path, R_OK) != 0) {
            snprintf(g_client.host_status, sizeof g_client.host_status,
                     "off: cannot read %.200s (%s); check GPUFL_PROC_ROOT",
                     stat_path, strerror(errno));
            client_log(GPUFL_LOG_WARN, "engine host %s", g_client.host_status);
        }
    }
}

static void close_engines(void)
{
    for (int i = 0; i < g_client.n_engines; i++) {
        client_engine *e = &g_client.engines[i];
        if (e->on && e->ops->close)
            e->ops->close(e->state);
        e->on = 0;
        e->state = NULL;
    }
}

/* on_exit, not atexit: the exit status decides the exit-error trigger
 * of ring mode (collector_exit). */
static void at_exit(int status, void *arg)
{
    (void)arg;
    collector_exit(status);
    gpufl_shutdown();
}

/* A forked child has the parent's state but none of its threads and must
 * not write into the parent's files: capture stops in the child (a child
 * that wants its own session calls gpufl_init again). */
static void at_fork_child(void)
{
    atomic_store_explicit(&g_client.active, 0, memory_order_relaxed);
    g_client.collector_started = 0;
    g_client.sampler_started = 0;
    g_client.n_engines = 0;
    pthread_mutex_init(&life_lock, NULL);
    client_counters_atfork();
    ctl_atfork_child();
}

int gpufl_init(const gpufl_options *opts)
{
    char err[512] = "";
    char bad[64];
    const char *dis = getenv("GPUFL_DISABLED");
    int rc, off = 0;

    pthread_mutex_lock(&life_lock);
    if (is_active()) {
        rc = GPUFL_EALREADY;
        client_set_error("gpufl_init: a session is already running "
                         "(call gpufl_shutdown() first)");
        goto out;
    }
    g_client.last_error[0] = 0;
    if (dis && opt_parse_bool(dis, &off) == 0 && off) {
        rc = GPUFL_EDISABLED;
        client_set_error("gpufl is disabled by GPUFL_DISABLED=%s", dis);
        goto out;
    }
    rc = client_cfg_resolve(opts, &g_client.cfg, err, sizeof err);
    if (rc == GPUFL_EDISABLED) {
        client_set_error("gpufl is disabled by options.disabled");
        goto out;
    }
    if (rc) {
        client_set_error("gpufl_init: %s", err);
        goto out;
    }
    if (g_client.env_warning[0])
        client_log(GPUFL_LOG_WARN, "%s", g_client.env_warning);
    switch (check_engines(g_client.cfg.engines, bad, sizeof bad)) {
    case -1:
        rc = GPUFL_EINVAL;
        client_set_error("gpufl_init: unknown engine \"%s\" in \"%s\"; known "
                         "engines: auto, sim, nvml, host, cupti, sass, "
                         "pcsamp",
                         bad, g_client.cfg.engines);
        goto out;
    case -2:
        rc = GPUFL_EINVAL;
        client_set_error("gpufl_init: engines \"%s\" names no engine; leave "
                         "it unset for auto, or name some of: auto, sim, "
                         "nvml, host, cupti, sass, pcsamp",
                         g_client.cfg.engines);
        goto out;
    default: break;
    }
    if (fs_mkdir_p(g_client.cfg.log_dir) < 0) {
        rc = errno == EACCES ? GPUFL_EPERM : GPUFL_EIO;
        client_set_error("gpufl_init: cannot create log directory \"%s\": %s",
                         g_client.cfg.log_dir, strerror(errno));
        goto out;
    }
    uuid_v4(g_client.sid);
    g_client.pid = (uint32_t)getpid();
    if (gethostname(g_client.host, sizeof g_client.host - 1) < 0)
        snprintf(g_client.host, sizeof g_client.host, "unknown");
    read_cmdline(g_client.cmdline, sizeof g_client.cmdline);
    g_client.start_ns = clock_real_ns();
    g_client.mono_base = clock_mono_ns();
    atomic_fetch_add(&g_client.gen, 1);

    open_engines();
    if (g_client.cfg.sim_perturb_str[0] && !g_client.simulated) {
        char msg[400];
        snprintf(msg, sizeof msg,
                 "GPUFL_SIM_PERTURB=\"%.200s\" is set but the simulated GPU "
                 "is not on: nothing is perturbed",
                 g_client.cfg.sim_perturb_str);
        client_log(GPUFL_LOG_WARN, "%s", msg);
        client_env_warning(msg);
    }
    rc = collector_start();
    if (rc) {
        close_engines();
        goto out;
    }
    atomic_store_explicit(&g_client.active, 1, memory_order_release);
    rc = sampler_start();
    if (rc)
        client_log(GPUFL_LOG_WARN, "system sampling is off: %s",
                   g_client.last_error);
    rc = GPUFL_OK;
    for (int i = 0; i < g_client.n_engines; i++) {
        client_engine *e = &g_client.engines[i];
        if (e->on && e->ops->start && e->ops->start(e->state) != 0) {
            snprintf(e->status, sizeof e->status, "off: could not start");
            client_log(GPUFL_LOG_WARN, "engine %s could not start",
                       g_client.engine_names[i]);
        }
    }
    /* after the engines: `gpufl ctl` may switch them */
    ctl_start();
    if (!atexit_done) {
        on_exit(at_exit, NULL);
        pthread_atfork(NULL, NULL, at_fork_child);
        atexit_done = 1;
    }
    if (g_client.cfg.ring)
        client_log(GPUFL_LOG_INFO,
                   "session %s recording in memory (ring mode); dumps go "
                   "to %s when a trigger fires",
                   g_client.sid, g_client.cfg.log_dir);
    else
        client_log(GPUFL_LOG_INFO,
                   "session %s writing %s.{device,scope,system}.log",
                   g_client.sid, g_client.prefix_path);
out:
    pthread_mutex_unlock(&life_lock);
    return rc;
}

void gpufl_shutdown(void)
{
    pthread_mutex_lock(&life_lock);
    if (!is_active()) {
        pthread_mutex_unlock(&life_lock);
        return;
    }
    /* No more control requests: what they started ends with markers
     * that still reach the files. */
    ctl_stop();
    /* Stop producers that we own first, so their last events are kept. */
    for (int i = 0; i < g_client.n_engines; i++) {
        client_engine *e = &g_client.engines[i];
        if (e->on && e->ops->flush)
            e->ops->flush(e->state, UINT32_MAX); /* let a bounded simulated
                                                    run finish its steps */
    }
    sampler_stop();
    close_engines();
    atomic_store_explicit(&g_client.active, 0, memory_order_release);
    collector_stop("shutdown");
    pthread_mutex_unlock(&life_lock);
}

int gpufl_flush(uint32_t timeout_ms)
{
    uint64_t want, deadline;
    if (!is_active())
        return GPUFL_ENOTINIT;
    deadline = clock_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
    for (int i = 0; i < g_client.n_engines; i++) {
        client_engine *e = &g_client.engines[i];
        if (e->on && e->ops->flush)
            e->ops->flush(e->state, timeout_ms);
    }
    want = atomic_fetch_add(&g_client.flush_req, 1) + 1;
    client_kick();
    if (!timeout_ms)
        return GPUFL_OK;
    while (atomic_load(&g_client.flush_done) < want) {
        struct timespec ts = { 0, 500000 };
        if (clock_mono_ns() > deadline) {
            client_set_error("gpufl_flush: timed out after %u ms", timeout_ms);
            return GPUFL_ETIMEDOUT;
        }
        nanosleep(&ts, NULL);
    }
    return GPUFL_OK;
}

int gpufl_active(void)
{
    return is_active();
}

const char *gpufl_session_id(void)
{
    return is_active() ? g_client.sid : "";
}

const char *gpufl_log_prefix(void)
{
    return is_active() ? g_client.prefix_path : "";
}
