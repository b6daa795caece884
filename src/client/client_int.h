/*
 * client_int.h - the one process-wide state of libgpufl and the internal
 * interfaces between its files.
 *
 * api.c owns the state and the hot-path entry points; collector.c drains the
 * rings and turns records into lines (format.c) in files (writer.c);
 * sampler.c polls the metric sources once per interval.
 */
#ifndef GPUFL_CLIENT_INT_H
#define GPUFL_CLIENT_INT_H

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include <gpufl/gpufl.h>
#include <gpufl/record.h>

#include "common/jw.h"
#include "ring.h"
#include "sim_perturb.h"
#include "source.h"
#include "trigger.h"

#define CLIENT_MAX_THREADS 4096 /* rings registered at once */
#define CLIENT_MAX_COUNTERS 1024
#define CLIENT_MAX_SCOPE_DEPTH 256
/* One line; a system sample with 64 processes is < 8 KiB. */
#define CLIENT_LINE_MAX (256 * 1024)
#define CLIENT_MAX_SOURCES 8
#define CLIENT_PATH_MAX 4096
/* Longest GPUFL_LOG_PREFIX: 255 - strlen(".system.log.999999999.zst.tmp"). */
#define CLIENT_PREFIX_MAX 226

/* The largest sz accepted in a versioned public struct (gpufl_options,
 * record.h): anything bigger is not a size but garbage, and would have the
 * library scan or write far past the caller's object. */
#define CLIENT_OPTS_SZ_MAX 4096

/* libbpf's OPTS_VALID rule for a struct from a newer header: 0 when bytes
 * [from, to) of p are all 0 (fields this library does not know are not
 * set), else 1 + the offset of the first byte that is not. */
static inline size_t client_tail_set(const void *p, size_t from, size_t to)
{
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = from; i < to; i++)
        if (b[i])
            return i + 1;
    return 0;
}

/* Resolved configuration (copied strings). */
typedef struct client_cfg {
    char app[128];
    char log_dir[CLIENT_PATH_MAX];
    char log_prefix[256]; /* at most CLIENT_PREFIX_MAX bytes */
    char engines[256];
    char nvml_lib[CLIENT_PATH_MAX];
    char proc_root[CLIENT_PATH_MAX];
    uint32_t system_interval_ms;
    uint64_t rotate_bytes;
    uint32_t rotate_keep;
    int compress_rotated;
    uint64_t min_free_bytes;
    uint32_t ring_events;
    uint32_t flush_ms;
    uint64_t sim_seed;
    uint32_t sim_steps, sim_devices;
    double sim_speed;
    gpufl_log_fn log;
    void *log_ud;
    int log_level;
    /* the flight recorder (docs/recorder.md) */
    int ring;            /* GPUFL_RECORD=ring:...; 0 = file */
    uint64_t ring_ns;    /* window length; 0 = bounded in bytes only */
    uint64_t ring_bytes; /* window memory */
    trg_cfg trg;         /* GPUFL_TRIGGERS (ring mode) */
    uint32_t trigger_after_ms;
    int ctl;   /* the control socket */
    int trace; /* CUPTI activity tracing at start */
    /* the job (job.c): job "" = none known, and then the rest unset */
    char job[128];
    char job_source[16];
    int32_t rank, world_size, local_rank;          /* -1 = unknown */
    char step_scope[128];                          /* "" = none named */
    char sim_perturb_str[SIM_PERTURB_LEN_MAX + 1]; /* as given; "" none */
    sim_perturb sim_perturb;
} client_cfg;

/* One engine of the session: its state and what the header says of it. */
typedef struct client_engine {
    const src_ops *ops;
    void *state;
    int on;
    char status[SRC_REASON_LEN]; /* "on", or "off: <why>" */
} client_engine;

/* A slot of the counter table keeps its name for the life of the process,
 * so a handle (a pointer to it) can never come to mean another counter.
 * It counts in the session that last called gpufl_counter_get() for it:
 * gen is that session's generation, and add/set through a handle whose
 * slot was not got again in the running session are ignored. */
typedef struct gpufl_counter {
    uint32_t name;
    _Atomic uint32_t gen; /* 0 = not got in any session yet */
    _Atomic int64_t value;
    int64_t last_written; /* sampler only */
    uint32_t written_gen; /* sampler only: last_written is of this session */
} gpufl_counter_s;

typedef struct client_state {
    _Atomic int active;   /* hot paths check this */
    _Atomic uint32_t gen; /* session generation (rec.gen) */
    client_cfg cfg;
    char sid[40];
    char host[256];
    char cmdline[1024];
    char prefix_path[CLIENT_PATH_MAX]; /* log_dir/prefix */
    uint64_t start_ns;                 /* wall clock at init */
    uint64_t mono_base;                /* monotonic at init */
    uint32_t pid;
    int simulated;

    /* engines */
    client_engine engines[CLIENT_MAX_SOURCES];
    int n_engines;
    char engine_names[CLIENT_MAX_SOURCES][16];
    gpu_device devices[GPU_MAX_DEVICES];
    int n_devices;
    char host_status[SRC_REASON_LEN];

    /* threads */
    pthread_t collector, sampler;
    int collector_started, sampler_started;
    _Atomic int stop_collector, stop_sampler;
    _Atomic uint32_t wake; /* futex word: producers kick the collector */
    _Atomic int collector_sleeping;
    _Atomic uint64_t flush_req, flush_done; /* gpufl_flush handshake */

    /* counters: slots [0, n_counters) are in use, for the life of the
     * process (api.c) */
    gpufl_counter_s counters[CLIENT_MAX_COUNTERS];
    _Atomic uint32_t n_counters;
    _Atomic uint32_t counter_stale_gen; /* session that said a stale handle
                                           was used */

    char last_error[512];
    char env_warning[512]; /* the last GPUFL_* value that did not parse */

    /* the flight recorder (collector.c) */
    uint32_t dump_n;      /* the dump being written (session lines) */
    _Atomic int in_crash; /* a crash dump runs in a signal handler: no
                              logging, no demangling, no allocation */
} client_state;

extern client_state g_client;

/* ---- api.c ---- */
/* The calling thread's ring (registered on first use), or NULL. */
ring *client_thread_ring(void);
/* Ring registry, for the collector: slot i's ring or NULL. */
ring *client_ring_at(uint32_t i);
uint32_t client_ring_slots(void);
/* Collector frees a dead ring it has drained. */
void client_ring_release(uint32_t i);
/* Push a REC_RAW record on the calling thread's ring; takes ownership of
 * body (freed on failure). */
int client_push_raw(int stream, char *body, uint32_t len, uint64_t ts);
/* Push a counter value on the calling thread's ring (sampler). */
int client_push_counter(uint32_t name, int64_t value);
/* The counter table's lock in a forked child (a thread of the parent may
 * have held it). */
void client_counters_atfork(void);
/* Wake the collector (rare path: a ring is half full, or a flush). */
void client_kick(void);
void client_log(gpufl_log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void client_set_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
uint64_t client_now(void);
/* Called on the application thread at every scope begin and end (before
 * the thread's scope stack changes) while a profiling engine (sass,
 * pcsamp; source_cupti_prof.c) runs, so it can attribute what the GPU did
 * since the previous boundary to the scope open during it; NULL when none
 * runs.  One relaxed load per scope boundary otherwise. */
typedef void (*client_scope_hook_fn)(void);
extern _Atomic(client_scope_hook_fn) client_scope_hook;
/* Scopes with explicit times (the simulated GPU runs on its own clock). */
uint64_t client_scope_begin_at(uint32_t name_id, uint64_t ts);
void client_scope_end_at(uint64_t token, uint64_t ts);

/* ---- demangle.c ---- */
/* The demangled form of an Itanium C++ ABI name ("_Z...") into out (cut
 * to cap - 1 bytes): 1, or 0 when name is not mangled or no demangler is
 * available.  gpufl's own threads only (may dlopen libstdc++). */
int client_demangle(const char *name, char *out, size_t cap);

/* ---- options.c ---- */
/* The GPUFL_* variables (src/common/opt.h rows, names are the fields):
 * docs/client.md's table and the tests read it. */
extern const struct opt_prog client_env_prog;
/* Remember (msg) or forget (NULL) a bad environment value. */
void client_env_warning(const char *msg);
int client_cfg_resolve(const gpufl_options *o, client_cfg *cfg, char *err,
                       size_t errlen);
/* Names in file names and the session line (app, prefix, job): characters
 * outside [A-Za-z0-9._-] become '_', in place. */
void client_name_sanitize(char *s);

/* ---- job.c ---- */
/* The job and rank of this process into cfg->job..local_rank: o's fields
 * (GPUFL_JOB ... or code), else the launcher's variables.  A value that
 * cannot be used is logged and kept as the session's warning; the job is
 * then not recorded. */
void client_job_resolve(const gpufl_options *o, client_cfg *cfg);

/* ---- collector.c ---- */
int collector_start(void);
/* Final drain, session_end lines, close files; joins the thread. */
void collector_stop(const char *reason);
/* The program exits with status: in ring mode with exit-error armed and
 * status != 0, the window is written (also after gpufl_shutdown, which
 * keeps it for this). */
void collector_exit(int status);
/* A fatal signal on any thread (trigger.c's handler): park the collector
 * and write the window with async-signal-safe calls only. */
void collector_crash(int sig, const siginfo_t *si);
/* What the recorder is doing, for `gpufl ctl status` (ctl.c). */
typedef struct collector_info {
    int ring;                     /* ring mode */
    int live;                     /* a dump is being written live */
    uint64_t dumps;               /* dumps begun in this session */
    uint64_t live_until;          /* gpufl clock; 0 when not live */
    char prefix[CLIENT_PATH_MAX]; /* files being written, or last dump */
} collector_info;
void collector_get_info(collector_info *out);
/* The window's figures as the collector last published them (window.h). */
struct win_stats;
void collector_get_window(struct win_stats *out);

/* ---- sampler.c ---- */
int sampler_start(void);
void sampler_stop(void);

#endif
