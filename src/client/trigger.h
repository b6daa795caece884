/*
 * trigger.h - what makes the flight recorder write its window
 * (docs/recorder.md#triggers): the GPUFL_TRIGGERS list, the pending
 * triggers that application threads, signal handlers and the control
 * socket post, and the signal handlers themselves.
 *
 * Posting never blocks and never allocates: one slot per kind, claimed
 * with a compare-and-swap; a post that finds its kind's slot taken is
 * counted (repeats) instead.  The collector thread takes pending triggers
 * (trigger_take), applies the rate limit and acts on them.
 */
#ifndef GPUFL_CLIENT_TRIGGER_H
#define GPUFL_CLIENT_TRIGGER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum trg_kind {
    TRG_SIGNAL = 0, /* SIGUSR2 */
    TRG_CRASH,      /* SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT */
    TRG_EXIT_ERROR, /* exit with a non-zero status */
    TRG_CUDA_ERROR, /* a launch or allocation returned an error */
    TRG_OOM,        /* ... CUDA_ERROR_OUT_OF_MEMORY */
    TRG_SCOPE,      /* scope=NAME>DURATION */
    TRG_CTL,        /* `gpufl ctl PID dump` */
    TRG_N
};

#define TRG_SCOPES_MAX 8       /* scope= entries in GPUFL_TRIGGERS */
#define TRG_SCOPE_NAME_MAX 128 /* bytes of a scope name there */
#define TRG_DETAIL_MAX 256     /* bytes of a trigger line's detail */
/* The same kind fires at most once per this interval; the others are
 * counted and said in the next trigger line of the kind ("repeats"). */
#define TRG_RATE_NS 1000000000ull

#define TRG_DEFAULT "signal,crash,exit-error,cuda-error,oom,ctl"

typedef struct trg_scope {
    char name[TRG_SCOPE_NAME_MAX];
    uint64_t ns; /* fires when a scope of this name lasts longer */
} trg_scope;

typedef struct trg_cfg {
    uint32_t armed; /* bit per enum trg_kind */
    int n_scopes;
    trg_scope scopes[TRG_SCOPES_MAX];
} trg_cfg;

/* A taken trigger, for its trigger line. */
typedef struct trg_event {
    int kind;
    uint64_t ts;      /* when it was posted (gpufl clock) */
    uint64_t repeats; /* posts of this kind since the last one that fired */
    char detail[TRG_DETAIL_MAX];
} trg_event;

/* Parse a GPUFL_TRIGGERS list into out: 0, or GPUFL_EINVAL with the
 * reason in err (an unknown name, a bad scope= entry). */
int trigger_parse(const char *list, trg_cfg *out, char *err, size_t errlen);
/* "signal", "crash", ... */
const char *trigger_name(int kind);

/* Install the handlers of the armed signal triggers (gpufl_init, ring
 * mode) and put the previous ones back (gpufl_shutdown; a handler the
 * program installed after ours stays). */
void trigger_arm(const trg_cfg *cfg);
void trigger_disarm(void);

/* Post a trigger from a thread (not a signal handler): detail is copied
 * (cut at TRG_DETAIL_MAX - 1).  Lock-free; wakes the collector. */
void trigger_post(int kind, const char *detail);
/* The launch and allocation callbacks: a CUDA call on the calling
 * application thread returned code.  func and sym are borrowed for the
 * call (sym may be NULL). */
void trigger_post_cuda(int code, int driver, const char *func, const char *sym);

/* Bit per kind with a post waiting: the collector checks it every loop. */
extern _Atomic uint32_t trigger_waiting;
/* Collector: the next pending trigger that passes the rate limit (1), or
 * 0 when none.  Rate-limited posts are counted, not returned. */
int trigger_take(trg_event *ev);
/* Counts for `gpufl ctl status`: fired and rate-limited, per kind. */
void trigger_counts(uint64_t fired[TRG_N], uint64_t limited[TRG_N]);
/* The collector acted on a trigger trigger_take() returned (its dump or
 * trigger lines are written). */
void trigger_done(int kind);
/* Posts of kind the collector is done with (acted on, or rate-limited):
 * the control socket waits for its own dump request. */
uint64_t trigger_handled(int kind);
/* Forget pending posts and counts (a new session). */
void trigger_reset(void);

#endif
