/*
 * gpufl.h - the public API of libgpufl, the gpufl flight recorder.
 *
 * A program calls gpufl_init() once; from then on GPU activity, named scopes
 * and periodic system samples are written as three JSONL streams
 * (<prefix>.device.log, <prefix>.scope.log, <prefix>.system.log) in the log
 * directory; docs/events.md describes every line.
 *
 * Thread contract: every function may be called from any thread.  The hot
 * path calls (scopes, markers, counters, record functions) never block and
 * never take a lock that another thread can hold for long.  They allocate
 * only on a thread's first event (its buffer) and on the first use of a new
 * name or scope path in the process (one dictionary entry, under a short
 * mutex); after that, nothing.  When the per-thread buffer is full the
 * event is dropped and counted, and a "loss" line says so in the log.
 *
 * The library never prints and never exits the process; see gpufl_options.log.
 *
 * This header compiles as C11 and as C++17.
 */
#ifndef GPUFL_GPUFL_H
#define GPUFL_GPUFL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUFL_VERSION_MAJOR 0
#define GPUFL_VERSION_MINOR 1
#define GPUFL_VERSION_PATCH 0
#define GPUFL_VERSION_STRING "0.1.0"

/* The event format version written in every line's "v" field. */
#define GPUFL_FORMAT_VERSION 1

#if defined(__GNUC__)
#define GPUFL_API __attribute__((visibility("default")))
#else
#define GPUFL_API
#endif

/*
 * The one error enum of every gpufl component.  Values are never renumbered;
 * new ones are appended.
 */
typedef enum gpufl_err {
    GPUFL_OK = 0,
    GPUFL_EINVAL = 1,     /* an argument or option value is invalid */
    GPUFL_ENOMEM = 2,     /* out of memory */
    GPUFL_EIO = 3,        /* a file or socket operation failed */
    GPUFL_EDISABLED = 4,  /* capture is disabled (GPUFL_DISABLED or options) */
    GPUFL_EALREADY = 5,   /* already initialised */
    GPUFL_ENOTINIT = 6,   /* gpufl_init() has not been called */
    GPUFL_EUNAVAIL = 7,   /* a library or device is not available */
    GPUFL_EPERM = 8,      /* permission denied (profiling rights, files) */
    GPUFL_ETOOBIG = 9,    /* a value exceeds its cap */
    GPUFL_EPARSE = 10,    /* malformed input */
    GPUFL_ENOSPC = 11,    /* not enough free disk space */
    GPUFL_EFULL = 12,     /* a bounded table or buffer is full */
    GPUFL_ENOTFOUND = 13, /* no such object */
    GPUFL_EAGAIN = 14,    /* temporary failure; retry later */
    GPUFL_ETIMEDOUT = 15, /* an operation timed out */
    GPUFL_EPROTO = 16,    /* a peer spoke an unexpected protocol */
    GPUFL_EAUTH = 17,     /* authentication failed */
    GPUFL_ECONFLICT = 18, /* incompatible options or state */
    GPUFL_EINTERNAL = 19  /* a bug: please report it */
} gpufl_err;

/* A static, never-NULL English description of err. */
GPUFL_API const char *gpufl_strerror(int err);

/* The library version, e.g. "0.1.0". */
GPUFL_API const char *gpufl_version(void);

typedef enum gpufl_log_level {
    GPUFL_LOG_ERROR = 0,
    GPUFL_LOG_WARN = 1,
    GPUFL_LOG_INFO = 2,
    GPUFL_LOG_DEBUG = 3
} gpufl_log_level;

/* Log callback: msg is borrowed for the duration of the call. */
typedef void (*gpufl_log_fn)(gpufl_log_level level, const char *msg, void *ud);

/*
 * Options.  Always fill with gpufl_options_init() first, then change fields.
 * String fields are borrowed during gpufl_init() only (copied).
 *
 * gpufl_options_init() applies defaults, then the environment variables named
 * beside each field; values set in code afterwards win over the environment.
 * GPUFL_DISABLED=1 (or true/yes/on) always wins: gpufl_init() then returns
 * GPUFL_EDISABLED and the program runs uninstrumented.
 *
 * Versioning (libbpf's OPTS rule): fields are only ever appended, and `sz`
 * is sizeof(gpufl_options) as *your program* was compiled -- the inline
 * gpufl_options_init() below passes it to the library, which then writes
 * and reads only the first sz bytes.  A program built against an older
 * header runs on a newer libgpufl (the fields it does not know get their
 * defaults and environment); one built against a newer header runs on an
 * older libgpufl as long as it leaves the fields that library does not
 * know at 0 -- otherwise gpufl_init() refuses it with GPUFL_EINVAL, rather
 * than silently ignore a setting.
 */
typedef struct gpufl_options {
    size_t sz;                   /* the caller's sizeof(gpufl_options),
                                    set by gpufl_options_init() */
    const char *app;             /* GPUFL_APP; default: program name */
    const char *log_dir;         /* GPUFL_LOG_DIR; default "." (created) */
    const char *log_prefix;      /* GPUFL_LOG_PREFIX; default
                                    "<app>.<yyyymmdd-hhmmss>.<sid8>" */
    const char *engines;         /* GPUFL_ENGINES: comma list of sim, nvml,
                                    host, cupti; default "auto" = nvml,host
                                    (+cupti when built in) */
    uint32_t system_interval_ms; /* GPUFL_SYSTEM_INTERVAL_MS; default 1000;
                                    0 = no system sampling */
    uint64_t rotate_bytes;       /* GPUFL_ROTATE_BYTES; default 64 MiB */
    uint32_t rotate_keep;        /* GPUFL_ROTATE_KEEP; rotated files kept
                                    per stream, 0 = all; default 20 */
    int compress_rotated;        /* GPUFL_ROTATE_ZSTD; zstd rotated files
                                    (.N.zst); default 0 */
    uint64_t min_free_bytes;     /* GPUFL_MIN_FREE_BYTES; capture pauses
                                    below this; default 256 MiB */
    uint32_t ring_events;        /* GPUFL_RING_EVENTS; per-thread buffer
                                    slots (rounded up to a power of two,
                                    64..16777216); default 16384 */
    uint32_t flush_ms;           /* GPUFL_FLUSH_MS; longest time an event
                                    waits in memory; default 100 */
    uint64_t sim_seed;           /* GPUFL_SIM_SEED; default 1 */
    uint32_t sim_steps;          /* GPUFL_SIM_STEPS; simulated training
                                    steps, 0 = until shutdown; default 0 */
    uint32_t sim_devices;        /* GPUFL_SIM_DEVICES; default 1 */
    double sim_speed;            /* GPUFL_SIM_SPEED; simulated time runs
                                    this many times faster; default 1 */
    const char *nvml_lib;        /* GPUFL_NVML_LIB; default
                                    "libnvidia-ml.so.1" */
    const char *proc_root;       /* GPUFL_PROC_ROOT; default "/proc" */
    /* default: stderr at GPUFL_LOG_LEVEL (default: silent); a callback gets
     * messages up to log_level (warn when log_level is -1) */
    gpufl_log_fn log;
    void *log_ud;
    /* GPUFL_LOG_LEVEL: error|warn|info|debug; default -1 = silent */
    int log_level;
    int disabled; /* GPUFL_DISABLED; default 0 */

    /* CUDA capture, the "cupti" engine (docs/capture.md) */
    const char *cupti_lib;   /* GPUFL_CUPTI_LIB; path of libcupti.so.13;
                               default NULL = the one the application
                               loaded, the library path, then
                               /usr/local/cuda (docs/capture.md) */
    int stacks;              /* GPUFL_STACKS; CPU call stack of each
                               kernel launch (cupti); default 0 */
    uint32_t stack_depth;    /* GPUFL_STACK_DEPTH; frames kept, 1..56;
                               default 32 */
    uint32_t cupti_flush_ms; /* GPUFL_CUPTI_FLUSH_MS; how often CUPTI's
                               completed buffers are collected; default
                               500 */
    uint32_t cupti_close_ms; /* GPUFL_CUPTI_CLOSE_MS; longest wait at
                               shutdown for CUPTI's final flush, after
                               which gpufl gives up what CUPTI still holds
                               rather than hang the program; default
                               10000 */

    /* The flight recorder and the control socket (docs/recorder.md) */
    const char *record;        /* GPUFL_RECORD: "file" (default: every
                                  event written) or "ring:DURATION",
                                  "ring:SIZE", "ring:DURATION,SIZE"
                                  (e.g. "ring:120s", "ring:256MiB"):
                                  events kept in memory, written when a
                                  trigger fires */
    const char *triggers;      /* GPUFL_TRIGGERS: comma list of signal,
                                  crash, exit-error, cuda-error, oom,
                                  ctl, scope=NAME>DURATION; default
                                  "signal,crash,exit-error,cuda-error,
                                  oom,ctl" (ring mode only) */
    uint32_t trigger_after_ms; /* GPUFL_TRIGGER_AFTER: how long a dump
                                  stays live after its trigger; default
                                  10000 */
    int ctl;                   /* GPUFL_CTL: the control socket of
                                  `gpufl ctl`; default 1 */
    int trace;                 /* GPUFL_TRACE: CUPTI activity tracing at
                                  start; 0 = monitoring (scopes, NVML,
                                  host) until `gpufl ctl PID trace on`;
                                  default 1 */
    /* Jobs and ranks (docs/client.md#jobs-and-ranks): which job this
     * process belongs to, written in the session line.  Unset, they come
     * from the launcher (torchrun, Slurm, Open MPI, PMI). */
    const char *job;         /* GPUFL_JOB; job id (at most 127 bytes);
                               default NULL = the launcher's */
    int32_t rank;            /* GPUFL_RANK; default -1 = the launcher's */
    int32_t world_size;      /* GPUFL_WORLD_SIZE; default -1 = the
                               launcher's */
    int32_t local_rank;      /* GPUFL_LOCAL_RANK; default -1 = the
                               launcher's */
    const char *step_scope;  /* GPUFL_STEP_SCOPE; the scope that is one
                               training step, for the server; default
                               NULL = none named */
    const char *sim_perturb; /* GPUFL_SIM_PERTURB; changes the simulated
                               GPU on purpose (docs/client.md); default
                               NULL = none */
} gpufl_options;

/*
 * Fill the first sz bytes of *opts with defaults and the environment and set
 * opts->sz = sz; bytes from the library's own sizeof up to sz are zeroed.
 * Call it through gpufl_options_init(), which passes your sizeof.  Returns
 * GPUFL_OK; GPUFL_EINVAL when opts is NULL or sz is not a gpufl_options
 * size (smaller than the fields every version has, or above 4096: nothing
 * is written), or when an environment value cannot be parsed (the field
 * keeps its default; gpufl_last_error() names the variable).
 */
GPUFL_API int gpufl_options_init_sz(gpufl_options *opts, size_t sz);

/* Fill *opts with defaults and the environment: gpufl_options_init_sz()
 * with the size this program was compiled with.  (libgpufl also exports a
 * function of this name for programs built against 0.1.0, whose header
 * declared it extern: it fills the 0.1.0 struct.) */
static inline int gpufl_options_init(gpufl_options *opts)
{
    return gpufl_options_init_sz(opts, sizeof *opts);
}

/*
 * Start the session.  opts may be NULL (defaults + environment).  Creates the
 * log directory, writes the session header to the three streams and starts
 * the collector and sampler threads.  A shutdown is registered with atexit()
 * so a program that forgets gpufl_shutdown() still leaves complete logs.
 * Returns GPUFL_OK, GPUFL_EDISABLED, GPUFL_EALREADY, GPUFL_EINVAL (a bad
 * option or engine name; opts->sz not a gpufl_options size; or a field this
 * libgpufl does not know, past its sizeof, set non-zero), GPUFL_EIO or
 * GPUFL_EPERM (log directory or
 * files), GPUFL_ETOOBIG (log path too long) or GPUFL_ENOMEM;
 * gpufl_last_error() then says more.  A GPUFL_* environment value that does
 * not parse keeps its default, is logged as a warning, and is written into
 * the session header ("warning").
 */
GPUFL_API int gpufl_init(const gpufl_options *opts);

/* Flush everything, write session_end lines, stop threads, close files.
 * Safe to call twice or without init. */
GPUFL_API void gpufl_shutdown(void);

/* Make every event recorded so far reach the files (blocks up to
 * timeout_ms; 0 = do not wait).  Returns GPUFL_ETIMEDOUT if it could not. */
GPUFL_API int gpufl_flush(uint32_t timeout_ms);

/* 1 while a session is running. */
GPUFL_API int gpufl_active(void);

/* The session id (36-char UUID) or "" when not running; static storage. */
GPUFL_API const char *gpufl_session_id(void);

/* The log file prefix with directory, e.g. "./train.20261129-230000.0f8fad5b". */
GPUFL_API const char *gpufl_log_prefix(void);

/* Last error message of gpufl_init()/gpufl_flush() on any thread. */
GPUFL_API const char *gpufl_last_error(void);

/* ---- Scopes --------------------------------------------------------------
 * Named, nestable phases on the calling thread.  Kernels and copies recorded
 * on a thread are attributed to its innermost open scope.  name is borrowed
 * for the call only.  begin returns a token for the matching end (0 when the
 * session is not running or the scope could not be recorded); ends must
 * nest (the last begun scope ends first).
 */
GPUFL_API uint64_t gpufl_scope_begin(const char *name);
GPUFL_API void gpufl_scope_end(uint64_t token);

/* Intern a name once and use the id in the _id variants (faster). 0 = failed. */
GPUFL_API uint32_t gpufl_intern(const char *name);
GPUFL_API uint64_t gpufl_scope_begin_id(uint32_t name_id);

/* ---- Markers and counters ------------------------------------------------ */

/* An instant event on the scope stream; text is copied (cut at 100 bytes,
 * on a UTF-8 character boundary; the line then has "cut":1). */
GPUFL_API void gpufl_marker(const char *text);

/* A named counter, created on first use (at most 1024 names per process).
 * The current value is written to the scope stream once per system interval
 * while it changes.  Returns NULL when not running or the table is full.
 *
 * A handle is valid until gpufl_shutdown().  It never comes to mean another
 * counter: in a later session, add/set through it are ignored (said once
 * per session in the log and a marker) until gpufl_counter_get() is called
 * for the name again in that session -- which starts it at 0 and returns
 * the same handle.  add/set with NULL do nothing. */
typedef struct gpufl_counter gpufl_counter;
GPUFL_API gpufl_counter *gpufl_counter_get(const char *name);
GPUFL_API void gpufl_counter_add(gpufl_counter *c, int64_t delta);
GPUFL_API void gpufl_counter_set(gpufl_counter *c, int64_t value);

/* ---- Scopes as blocks ----------------------------------------------------
 *
 *   GPUFL_SCOPE_AUTO("train_step");      ends where the enclosing block ends
 *   GPUFL_SCOPE("train_step") { ... }    ends when its own block is left
 *   gpufl::scope s("train_step");        C++: an RAII object, no macro
 *
 * !! GPUFL_SCOPE (= GFL_SCOPE) is a one-pass for loop: a break or continue in
 * !! its block leaves that block only, never your enclosing loop.
 *
 * Inside loops, use GPUFL_SCOPE_AUTO (or gpufl::scope in C++): it declares
 * a variable in the current block and has no loop of its own, so break and
 * continue reach your loop and the scope still ends.  Either form ends the
 * scope when its block is left by any path: falling off the end, break,
 * continue, return, goto out of it, and in C++ an exception.  In C they need
 * the cleanup attribute of GCC or Clang and are not defined without it.
 * longjmp and thread cancellation skip cleanups in C: use begin/end there.
 *
 * GPUFL_SCOPE_AUTO is a declaration: in C before C23 it cannot directly
 * follow a case or goto label (put it in a { } block).  Several in one
 * block end in reverse order, the last declared first.
 *
 * GFL_SCOPE and GFL_SCOPE_AUTO are the same macros under the prefix gpufl
 * inherited from GPU Flight.
 */
#define GPUFL__CAT2(a, b) a##b
#define GPUFL__CAT(a, b) GPUFL__CAT2(a, b)
#ifdef __cplusplus
} /* extern "C" */
namespace gpufl
{
/* A named scope for the lifetime of the object (name is borrowed for the
 * constructor only). */
class scope
{
  public:
    explicit scope(const char *name) noexcept : tok_(gpufl_scope_begin(name)) {}
    ~scope()
    {
        gpufl_scope_end(tok_);
    }
    scope(const scope &) = delete;
    scope &operator=(const scope &) = delete;
    /* The gpufl_scope_begin() token (0 when nothing was recorded). */
    uint64_t token() const noexcept
    {
        return tok_;
    }

  private:
    uint64_t tok_;
};
} // namespace gpufl
namespace gpufl_detail
{
struct scope_guard {
    uint64_t tok;
    int once;
    explicit scope_guard(const char *n) : tok(gpufl_scope_begin(n)), once(1) {}
    ~scope_guard()
    {
        gpufl_scope_end(tok);
    }
    scope_guard(const scope_guard &) = delete;
    scope_guard &operator=(const scope_guard &) = delete;
};
} // namespace gpufl_detail
#define GPUFL_SCOPE(name)                                                      \
    for (gpufl_detail::scope_guard GPUFL__CAT(gpufl__g_, __LINE__)(name);      \
         GPUFL__CAT(gpufl__g_, __LINE__).once;                                 \
         GPUFL__CAT(gpufl__g_, __LINE__).once = 0)
#define GPUFL_SCOPE_AUTO(name)                                                 \
    ::gpufl::scope GPUFL__CAT(gpufl__a_, __COUNTER__)(name)
extern "C" {
#elif defined(__GNUC__)
static inline void gpufl__scope_cleanup(uint64_t *tok)
{
    if (*tok != UINT64_MAX)
        gpufl_scope_end(*tok);
}
/* The loop runs once: the token is set to UINT64_MAX after the body so the
 * cleanup (which runs when the variable leaves scope on any path) ends the
 * scope exactly once. */
#define GPUFL_SCOPE(name)                                                      \
    for (uint64_t GPUFL__CAT(gpufl__t_, __LINE__)                              \
             __attribute__((cleanup(gpufl__scope_cleanup))) =                  \
                 gpufl_scope_begin(name),                                      \
             GPUFL__CAT(gpufl__o_, __LINE__) = 1;                              \
         GPUFL__CAT(gpufl__o_, __LINE__); GPUFL__CAT(gpufl__o_, __LINE__) = 0, \
             gpufl_scope_end(GPUFL__CAT(gpufl__t_, __LINE__)),                 \
             GPUFL__CAT(gpufl__t_, __LINE__) = UINT64_MAX)
/* __COUNTER__ (GCC, Clang) names each variable apart, so two on one line
 * or nested blocks neither collide nor shadow. */
#define GPUFL_SCOPE_AUTO(name)                                                 \
    uint64_t GPUFL__CAT(gpufl__a_, __COUNTER__)                                \
        __attribute__((cleanup(gpufl__scope_cleanup), unused)) =               \
            gpufl_scope_begin(name)
#endif

#ifdef GPUFL_SCOPE
#define GFL_SCOPE(name) GPUFL_SCOPE(name)
#define GFL_SCOPE_AUTO(name) GPUFL_SCOPE_AUTO(name)
#endif

#ifdef __cplusplus
}
#endif

#endif /* GPUFL_GPUFL_H */
