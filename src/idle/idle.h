/*
 * idle.h - the idle detector's interface (`gpufl idle`, docs/idle.md).
 *
 * Parts, one file each: GPU sources (idle_src.c: NVML through src/gpu,
 * the layer libgpufl uses too, or a clearly labelled simulation), session
 * signals read from /proc, cgroup v2, utmp, ptys and Jupyter
 * (idle_sess.c, idle_http.c), the verdict engine (idle_verdict.c: GPUs,
 * idle_verdict_sess.c: sessions) and the outputs (idle_out.c: verdict
 * JSON, event lines, Prometheus text).  Who
 * holds a GPU (idle_owner.c: process -> container/pod/job/user, kubelet
 * device-plugin and Slurm allocations, /dev/nvidia* holders) and the waste
 * accounting built on it (idle_acct.c) come next; idle_kern.c follows
 * gpufl sessions' kernel records (exact busy time, STUCK's progress).  The
 * daemon loop and the action hook are idle_watch.c, its HTTP listener
 * idle_watch_http.c.
 *
 * The engine is pure: it takes samples and a time and sets verdicts, so
 * the tests drive it with scripted traces and a fake clock.  Times are
 * integer ns since the Unix epoch.
 */
#ifndef GPUFL_IDLE_H
#define GPUFL_IDLE_H

#include <stddef.h>
#include <stdint.h>

#include "common/price.h"
#include "gpu/gpu.h"

struct gbuf;

/* GPUs, or GPU instances of GPUs in MIG mode (idle_src.c) */
#define IDLE_MAX_GPUS 64
#define IDLE_MAX_SESSIONS 256
#define IDLE_MAX_REASONS 6
#define IDLE_REASON_LEN 160
#define IDLE_MAX_PORTS 8
#define IDLE_WIN_MAX 7200 /* samples per GPU window */
#define IDLE_NS 1000000000ull
#define IDLE_MAX_HOLDERS 8 /* /dev/nvidiaN holders named per GPU */

enum idle_gpu_state {
    IG_EMPTY,
    IG_HELD,
    IG_BURSTY,
    IG_BUSY_LOW_OCC,
    IG_BUSY,
    IG_PHANTOM,
    IG_STUCK,
    IG_ALLOCATED_UNUSED,
    IG_UNKNOWN,
    IG_N
};

/* Why GPU time is wasted (gpufl_gpu_wasted_seconds_total{reason}). */
enum idle_waste {
    IW_IDLE,    /* owned, no kernel running (the rest of BUSY/BURSTY) */
    IW_HELD,    /* HELD: memory held, no kernels */
    IW_PHANTOM, /* PHANTOM, or memory with no process (leaked) */
    IW_STUCK,   /* STUCK */
    IW_ALLOC,   /* ALLOCATED_UNUSED */
    IW_N
};
const char *idle_waste_name(int w);

enum idle_sess_state {
    IS_STARTING,
    IS_ACTIVE,
    IS_GPU_UNUSED,
    IS_HELD_IDLE,
    IS_IDLE,
    IS_MAX_AGE,
    IS_UNKNOWN,
    IS_N
};

/* What the verdict asks for now. */
enum idle_action {
    IA_NONE,    /* keep */
    IA_WARN,    /* the stop timer ran out: warning period running */
    IA_STOP,    /* warning period over: the hook runs (once) */
    IA_VETOED,  /* would warn or stop, but a "keep" veto holds */
    IA_NOTIFY,  /* keep, tell the owner (unattended low occupancy) */
    IA_RELEASE, /* keep, suggest releasing the GPU (unused for long) */
    IA_ALERT,   /* keep, alert operators (UNKNOWN data, phantom GPU) */
    IA_N
};

const char *idle_gpu_state_name(int s);
const char *idle_sess_state_name(int s);
const char *idle_action_name(int a);
/* -1 when unknown. */
int idle_gpu_state_parse(const char *s);

/* Thresholds and timers; idle_cfg_init() sets the measured defaults. */
typedef struct idle_cfg {
    uint32_t interval_ms;     /* sampling period */
    uint32_t window_s;        /* GPU window W */
    uint64_t fb_empty;        /* bytes: at most this is "no memory" */
    double busy_util;         /* util mean >= this: busy */
    double bursty_duty;       /* share of samples with util > 0 below it */
    double low_occ_sm;        /* SM active below it: low occupancy */
    double held_sm;           /* SM active at most this: no kernels */
    double busy_power;        /* power/cap >= this: busy (no SM data) */
    double held_floor;        /* power/cap of a held, idle context */
    double low_occ_margin;    /* low occ. proxy: power <= floor + this */
    double phantom_util;      /* util mean >= this with no owner */
    double empty_util;        /* util mean below this, no owner: residue */
    uint32_t phantom_hold_s;  /* sustained this long: PHANTOM */
    double min_valid;         /* share of good samples in W, else UNKNOWN */
    double cpu_busy;          /* cores: container CPU counted as busy */
    uint32_t grace_s;         /* T_grace */
    uint32_t idle_s;          /* T_idle */
    uint32_t held_s;          /* T_held */
    uint64_t max_age_s;       /* T_max, 0 = off */
    uint32_t gpu_unused_s;    /* T_gpu_unused */
    uint32_t warn_s;          /* warning period */
    uint32_t hyst_s;          /* hold before leaving an active verdict */
    uint32_t refresh_s;       /* verdict lines re-sent this often */
    uint32_t veto_s;          /* default length of a veto */
    uint32_t unattended_mult; /* low occ. unattended: notify after N*T_idle */
    double stuck_util;        /* STUCK: util at least this in every sample */
    double stuck_sm;          /* STUCK: SM active at most this (GPM/DCGM) */
    double stuck_margin;      /* no SM metric: power <= held_floor + this */
    uint32_t stuck_hold_s;    /* STUCK: sustained this long, no progress */
    uint32_t metrics_procs;   /* process series; beyond: folded to owner */
} idle_cfg;

void idle_cfg_init(idle_cfg *c);

/* ---- GPUs ---- */

typedef struct idle_gsample {
    uint64_t ts;
    uint8_t valid; /* util and process list read */
    uint8_t has_sm, has_power, has_gr;
    uint32_t util; /* % */
    uint32_t power_mw, limit_mw;
    uint32_t nprocs;
    uint64_t mem; /* bytes used */
    float sm, gr; /* ratios */
} idle_gsample;

/* The window summary a verdict is made from (also its "signals"). */
typedef struct idle_gsig {
    uint32_t total, valid;
    double util_mean, util_max, duty;
    int has_sm, has_gr, has_power;
    double sm_mean, gr_mean;
    double power_w, power_ratio;
    uint64_t mem_used, mem_total;
    uint32_t procs; /* max over the window */
    int pstate;     /* -1 unknown */
    uint64_t throttle;
    int has_throttle;
    double util_min;           /* over the valid samples */
    uint64_t mem_min, mem_max; /* bytes, over the valid samples */
} idle_gsig;

/* Who a process, an allocation or a holder belongs to; "" = unknown. */
typedef struct idle_owner {
    char container[64]; /* container id (12 hex) */
    char pod[128];      /* pod name, or "pod-<uid>" when not found */
    char ns[64];        /* Kubernetes namespace */
    char job[32];       /* Slurm job id */
    char user[32];      /* user name, or the uid */
} idle_owner;

typedef struct idle_gpu {
    gpu_device info;
    idle_gsample *ring; /* owned, cap entries */
    uint32_t cap, head, n;
    gpu_sample last; /* latest raw sample */
    uint64_t last_ts;
    double dcgm_sm, dcgm_gr; /* from a dcgm-exporter scrape, < 0 = none */
    int state;
    uint64_t since, ts;
    uint64_t phantom_since; /* 0 = not in phantom condition */
    uint64_t last_work;     /* last time the GPU did real work */
    int changed;
    int nreasons;
    char reasons[IDLE_MAX_REASONS][IDLE_REASON_LEN];
    idle_gsig sig;
    uint64_t stuck_since; /* 0 = not in the stuck condition */
    /* set by the caller before idle_gpu_eval (idle_owner.c) */
    int allocated;       /* a pod or a Slurm job holds the GPU */
    idle_owner alloc;    /* that holder */
    char alloc_what[96]; /* "pod ns/name", "Slurm job 42" */
    int nholders;        /* processes holding /dev/nvidiaN open */
    uint32_t holders[IDLE_MAX_HOLDERS];
    idle_owner holder_owner[IDLE_MAX_HOLDERS];
    int dirty; /* not safe for the next job: leaked, phantom, stuck */
    /* set by the caller before idle_gpu_eval (idle_kern.c): live gpufl
     * sessions whose processes run on this GPU, and the newest kernel
     * completion (end, ns) any of them recorded, 0 = none yet */
    int kern_sessions;
    uint64_t kern_last_end;
    /* set by the caller before idle_gpu_eval (idle_dead_scan): listed
     * processes that no longer exist on this host (a dead container
     * whose context the driver still lists), the first PIDs of them */
    int ndead;
    uint32_t dead[IDLE_MAX_HOLDERS];
} idle_gpu;

int idle_gpu_init(idle_gpu *g, const idle_cfg *c, const gpu_device *info);
void idle_gpu_release(idle_gpu *g);
/* Adds one sample taken at ts (s may be NULL: the read failed). */
void idle_gpu_push(idle_gpu *g, const gpu_sample *s, uint64_t ts);
/* Recomputes g->state, reasons and dirty at time now (set allocated and
 * alloc first: idle_alloc_scan). */
void idle_gpu_eval(idle_gpu *g, const idle_cfg *c, uint64_t now);
/* 1 when every process NVML lists on g is gone (idle_dead_scan). */
int idle_gpu_dead_only(const idle_gpu *g);
/* After idle_holders_scan: names the holders of a dirty GPU (leaked
 * memory, PHANTOM) in its reasons, and says it is not safe to reuse. */
void idle_gpu_note_holders(idle_gpu *g);

/* ---- sessions ---- */

typedef struct idle_sess_cfg {
    char name[64];
    char cgroup[256]; /* cgroup v2 path ("/kubepods/..."), "" = none */
    char pod[128];    /* "namespace/pod" label */
    char container[64];
    char user[32];     /* utmp user whose ptys count as input */
    char tty[64];      /* a tty device path, used as is */
    char jupyter[256]; /* base URL */
    char token[128];
    uint16_t ports[IDLE_MAX_PORTS];
    int nports;
    int devs[IDLE_MAX_GPUS];
    int ndevs;         /* 0 = GPUs found through its processes */
    uint64_t start_ns; /* 0 = when first seen */
    int auto_found;    /* made from a GPU process's cgroup */
    char job[32];      /* Slurm job id of a job's session (idle_slurm.c) */
    char job_user[32]; /* that job's user */
} idle_sess_cfg;

/* Session signals; -1 (or < 0) = unknown. */
typedef struct idle_ssig {
    int conn;                  /* open interactive connections */
    double input_age_s;        /* since the last user input */
    int kernel_busy;           /* a Jupyter kernel is executing */
    double cpu_cores;          /* container CPU over the last period */
    int gpu_procs;             /* GPU processes attributed to it */
    int unknown;               /* a configured source failed */
    char why[128];             /* which one, when unknown */
    uint64_t cpu_usec, cpu_ts; /* previous cpu.stat reading */
} idle_ssig;

typedef struct idle_sess {
    idle_sess_cfg c;
    idle_ssig sig;
    int devs[IDLE_MAX_GPUS];
    int ndevs;
    int gpu_state; /* the "most active" of its GPUs */
    int state;
    char kind[32]; /* ACTIVE: gpu, low_occupancy, bursty, gpu_held, cpu */
    uint64_t since, ts, first_seen;
    int pending;
    uint64_t pending_since;
    uint64_t last_active; /* the idle clock runs from here */
    int action;
    uint64_t deadline;   /* stop time once warned, else 0 */
    uint64_t veto_until; /* 0 = none */
    int stop_done;       /* the hook ran for this idle period */
    int phantom_alert;
    int changed;
    int seen; /* auto sessions: still has processes */
    int nreasons;
    char reasons[IDLE_MAX_REASONS][IDLE_REASON_LEN];
} idle_sess;

void idle_sess_init(idle_sess *s, const idle_sess_cfg *c, uint64_t now);
/* Sets the verdict from the session's signals and its GPUs. */
void idle_sess_eval(idle_sess *s, const idle_cfg *c, const idle_gpu *gpus,
                    int ngpus, uint64_t now);

/* ---- session signals (idle_sess.c) ---- */

typedef struct idle_env {
    const char *root;     /* "" or a fixture tree with proc/, sys/, var/ */
    const char *utmp;     /* utmp file, default <root>/var/run/utmp */
    const char *veto_dir; /* "<dir>/<session>.keep" holds an end time */
    const char *ca_file; /* CAs for https (Jupyter, dcgm, hook); NULL: system */
    const char *kubelet_ckpt;     /* device-plugin checkpoint; NULL: default */
    const char *slurm_cgroup;     /* Slurm's job cgroups; NULL: default */
    const char *gpufl_logs;       /* gpufl sessions' device logs; NULL: none */
    struct idle_cgcache *cgcache; /* process -> cgroup answers; NULL: none */
} idle_env;

/* A cache of idle_proc_cgroup answers (5 s each), for daemons. */
typedef struct idle_cgcache idle_cgcache;
int idle_cgcache_new(idle_cgcache **out);
void idle_cgcache_free(idle_cgcache *c);
/* The time (ns, any clock) answers are aged by until the next tick. */
void idle_cgcache_tick(idle_cgcache *c, uint64_t now);

/* cgroup v2 path of pid ("/user.slice/..."); 0, GPUFL_ENOTFOUND (no such
 * process) or GPUFL_EUNAVAIL (no cgroup v2 line). */
int idle_proc_cgroup(const idle_env *e, uint32_t pid, char *out, size_t cap);
/* Established TCP connections whose local port is one of ports. */
int idle_tcp_count(const idle_env *e, uint32_t netns_pid, const uint16_t *ports,
                   int nports);
/* Seconds since input on user's ptys (utmp) or on tty; < 0 unknown. */
double idle_tty_age(const idle_env *e, const char *user, const char *tty,
                    uint64_t now);
/* Established connections on ports in /proc/net/tcp text (the parser
 * behind idle_tcp_count; buf need not be NUL-terminated). */
int idle_tcp_parse(const char *buf, size_t len, const uint16_t *ports,
                   int nports);
/* usage_usec of a cgroup's cpu.stat; 0 or an error. */
int idle_cgroup_cpu(const idle_env *e, const char *cgroup, uint64_t *usec);
/* Sets ndead/dead of every GPU: the processes NVML lists whose
 * /proc/PID is gone.  *host_pids (the caller's, 0 at first) becomes 1
 * once a listed PID was found here; until then nothing is called dead
 * (this /proc may be another PID namespace). */
void idle_dead_scan(const idle_env *e, idle_gpu *gpus, int ngpus,
                    int *host_pids);
/* Reads every signal of s (and Jupyter when configured). gpus gives the
 * process lists for attribution. */
void idle_sess_collect(const idle_env *e, idle_sess *s, const idle_gpu *gpus,
                       int ngpus, uint64_t now);
/* Veto end time for a session from the veto directory, 0 = none. */
uint64_t idle_veto_read(const idle_env *e, const char *session);
int idle_veto_write(const char *dir, const char *session, uint64_t until_ns);
/* Derives an automatic session from a cgroup path; 0 when it names one. */
int idle_sess_from_cgroup(const char *cgroup, idle_sess_cfg *out);

/* ---- owners, allocations and holders (idle_owner.c) ---- */

/* Owner of pid from its cgroup (Kubernetes pod and container, Docker,
 * Slurm job) and its uid; 0, or GPUFL_ENOTFOUND (no such process). */
int idle_owner_of_pid(const idle_env *e, uint32_t pid, idle_owner *o);
/* Sets allocated/alloc/alloc_what of every GPU from the kubelet
 * device-plugin checkpoint and Slurm's job cgroups; the count of GPUs
 * allocated. */
int idle_alloc_scan(const idle_env *e, idle_gpu *gpus, int ngpus);
/* Sets nholders/holders of the GPUs whose need[] is set: processes with
 * /dev/nvidia<id> open (the minor number taken to be the index). */
void idle_holders_scan(const idle_env *e, idle_gpu *gpus, int ngpus,
                       const int *need);
/* The allocation parsers behind idle_alloc_scan (text need not be
 * NUL-terminated); they mark GPUs and return how many. */
int idle_kubelet_parse(const idle_env *e, const char *text, size_t len,
                       idle_gpu *gpus, int ngpus);
/* Marks g allocated to o ("what" names it) unless already; 1 if marked. */
int idle_alloc_mark(idle_gpu *g, const idle_owner *o, const char *what);
/* The value of the first of names[] (NULL-terminated, in order of
 * preference) set in pid's environment into out: the index of that name,
 * or -1 (none, or not readable). */
int idle_proc_env(const idle_env *e, uint32_t pid, const char *const *names,
                  char *out, size_t cap);

/* ---- Slurm through scontrol (idle_slurm.c) ---- */

#define IDLE_SLURM_JOBS 256 /* jobs on this node kept per answer */

typedef struct idle_slurm_job {
    char id[32];   /* JobId (an array task's own id) */
    char user[32]; /* UserId's name, else the uid */
    uint64_t gpus; /* mask of this node's GPU indices (GRES IDX), one bit
                      for each of IDLE_MAX_GPUS */
} idle_slurm_job;

typedef struct idle_slurm idle_slurm;
/* scontrol: a path, "off", or NULL for `scontrol` from PATH when
 * SLURM_CONF or /etc/slurm/slurm.conf exists.  node: this node's Slurm
 * name, NULL for the short host name.  *out stays NULL when off (0) or
 * on an error (why says it). */
int idle_slurm_new(idle_slurm **out, const char *scontrol, const char *node,
                   char *why, size_t whylen);
void idle_slurm_free(idle_slurm *s);
/* Starts `scontrol show job -d` every IDLE_SLURM_EVERY_NS, reads its
 * output without blocking (wait: until it ends) and, when it ends well,
 * replaces the cached jobs (then 1, else 0).  now: monotonic ns. */
int idle_slurm_poll(idle_slurm *s, uint64_t now, int wait);
/* The cached running jobs of this node (valid until the next poll). */
int idle_slurm_jobs(const idle_slurm *s, const idle_slurm_job **jobs);
/* Marks the GPUs the cached jobs hold; the count marked. */
int idle_slurm_mark(const idle_slurm *s, idle_gpu *gpus, int ngpus);
/* The parser: `scontrol show job -d` text (need not be NUL-terminated),
 * the RUNNING and SUSPENDED jobs with GPUs on node into jobs[max]. */
int idle_slurm_parse(const char *text, size_t len, const char *node,
                     idle_slurm_job *jobs, int max);
/* 1 when job j holds this node's GPU of index id. */
int idle_slurm_holds(const idle_slurm_job *j, uint32_t id);
/* 1 when name is in a Slurm host list ("gpu[01-04,07],login1"). */
int idle_slurm_hostlist_has(const char *list, size_t len, const char *name);

/* ---- kernel records of gpufl sessions (idle_kern.c) ---- */

typedef struct idle_kern idle_kern;
/* Follows the device logs (<prefix>.device.log) in dir (copied). */
int idle_kern_new(idle_kern **out, const char *dir);
void idle_kern_free(idle_kern *k);
/* Reads what the logs gained, maps the sessions to gpus (uuid, and the
 * pid in the GPU's process list) and sets their kern_sessions and
 * kern_last_end; call before idle_gpu_eval and idle_acct_round. */
void idle_kern_round(idle_kern *k, idle_gpu *gpus, int ngpus, uint64_t now);
/* Busy seconds of pid on gpu read in the last round: the union of its
 * kernel intervals; 0, or GPUFL_ENOTFOUND when no live session of pid is
 * on gpu (then NVML's estimate stands). */
int idle_kern_busy(const idle_kern *k, int gpu, uint32_t pid, double *busy_s);
/* Devices of a session followed (docs/events.md: 16). */
#define IDLE_KERN_DEVS 16
/* The parser behind the rounds, for tests and the fuzzer: the complete
 * lines of text as one session's device log first seen at since; the
 * busy ns device dev (0 .. IDLE_KERN_DEVS - 1) holds - the union of its
 * kernels, those ended before since left out, so never more than
 * *last_end - since - or, dev < 0, the devices' sum (two devices busy at
 * once count twice); *last_end is the newest completion on any device.
 * Not thread-safe (static state). */
uint64_t idle_kern_parse(idle_kern *k, const char *text, size_t len,
                         uint64_t since, int dev, uint64_t *last_end);

/* ---- waste accounting (idle_acct.c) ---- */

typedef struct idle_acct idle_acct;
/* simulated: the GPUs' pids are not this host's (no owner looked up). */
int idle_acct_new(idle_acct **out, const idle_cfg *c, int simulated);
void idle_acct_free(idle_acct *a);
/* Busy time of processes under gpufl from k (borrowed; NULL: none). */
void idle_acct_set_kern(idle_acct *a, const idle_kern *k);
/* Adds one round at now: busy time per process from the GPUs' latest
 * samples, memory, and wasted time by reason since the last round. */
void idle_acct_round(idle_acct *a, const idle_env *e, const idle_gpu *gpus,
                     int ngpus, uint64_t now);
/* The waste metrics, appended to b (0 or b's error). */
int idle_acct_metrics(const idle_acct *a, struct gbuf *b, const idle_gpu *gpus,
                      int ngpus, const char *host);
/* Totals for tests and the JSON: busy seconds of pid on gpu (-1: not
 * tracked), and wasted seconds of gpu for a reason (all owners). */
double idle_acct_busy(const idle_acct *a, int gpu, uint32_t pid);
double idle_acct_wasted(const idle_acct *a, int gpu, int reason);
/* One owner's running totals on one GPU (idle_acct_owners). */
typedef struct idle_acct_row {
    int gpu;
    idle_owner o;
    double busy_s; /* every process of it, exited or not */
    int has_util;  /* busy_s is known (per-process samples came) */
    double wasted[IW_N];
} idle_acct_row;
#define IDLE_ACCT_OWNERS_MAX 512
/* The owners' totals into out (at most max); how many. */
int idle_acct_owners(const idle_acct *a, idle_acct_row *out, int max);

/* ---- HTTP clients (idle_http.c, libcurl) ---- */

typedef struct idle_jupyter {
    int connections;           /* -1 unknown */
    int kernels, busy;         /* kernel count, busy ones */
    uint64_t last_activity_ns; /* newest kernel activity, 0 unknown */
} idle_jupyter;

/* The HTTP clients verify https with ca_file (NULL: the system's CAs). */
int idle_jupyter_get(const char *base, const char *token, const char *ca_file,
                     idle_jupyter *out, char *why, size_t whylen);
/* Scrapes dcgm-exporter: sets dcgm_sm / dcgm_gr of matching GPUs. */
int idle_dcgm_scrape(const char *url, const char *ca_file, idle_gpu *gpus,
                     int ngpus, char *why, size_t whylen);
/* The parser behind the scrape: Prometheus text (need not be
 * NUL-terminated); sets dcgm_sm / dcgm_gr of matching GPUs. */
void idle_dcgm_parse(const char *text, size_t len, idle_gpu *gpus, int ngpus);
/* POSTs body (JSON) to url; 0 on a 2xx answer. */
int idle_http_post(const char *url, const char *ca_file, const char *body,
                   char *why, size_t whylen);
/* ISO 8601 UTC ("2026-11-30T01:02:03.123456Z") to ns; 0 on failure. */
uint64_t idle_iso_ns(const char *s);

/* ---- JupyterHub activity (idle_hub.c) ---- */

typedef struct idle_hub idle_hub;
/* A reporter posting to the Hub at url (its base, or ".../hub/api") from
 * a thread of its own; at most one report a user every every_s. */
int idle_hub_new(idle_hub **out, const char *url, const char *token,
                 const char *ca_file, uint32_t every_s, char *why,
                 size_t whylen);
void idle_hub_free(idle_hub *h);
/* user's server ("" the default one) did GPU work at ts (ns since the
 * epoch); queued, never waits for the network. */
void idle_hub_note(idle_hub *h, const char *user, const char *server,
                   uint64_t ts);
/* After a round's verdicts: notes the Hub users (JUPYTERHUB_USER) of the
 * processes on GPUs that work (BUSY, BUSY_LOW_OCC, BURSTY). */
void idle_hub_round(idle_hub *h, const idle_env *e, const idle_gpu *gpus,
                    int ngpus);

/* ---- GPU sources (idle_src.c) ---- */

typedef struct idle_src idle_src;

/* NVML: a GPU in MIG mode at open is listed as its GPU instances (one
 * entry per MIG device: gpu_device.mig, gi), sampled through their own
 * handles (gpu_mig); instances made or destroyed later are not followed
 * until a restart.
 * sim: NULL for NVML; else a comma list of simulated GPU scenarios
 * (none, held, one_thread, matmul, phantom, bursty, train, stuck,
 * allocated, leaked, dead)
 * cycled to sim_gpus GPUs (0 = one per scenario). */
int idle_src_open(idle_src **out, const char *nvml_lib, const char *sim,
                  int sim_gpus, char *why, size_t whylen);
int idle_src_devices(idle_src *s, gpu_device *out, int max);
/* Fills samples of every GPU; t = seconds since open (simulation). */
int idle_src_sample(idle_src *s, gpu_sample *out, int max, int *n);
int idle_src_simulated(const idle_src *s);
/* 1 when simulated GPU i plays a GPU a pod holds without a process. */
int idle_src_sim_alloc(const idle_src *s, int i);
/* A simulated GPU's dead process (after = 0, before its verdict) or the
 * holder of its leaked memory (after = 1): what idle_dead_scan and
 * idle_holders_scan find on a real node; nothing for a real GPU. */
void idle_src_sim_dirt(const idle_src *s, idle_gpu *g, int i, int after);
void idle_src_close(idle_src *s);

/* ---- outputs (idle_out.c) ---- */

typedef struct jw jw;

/* The labels of a GPU that join dcgm-exporter's (gpu, UUID, pci_bus_id,
 * modelName, Hostname, hostname, and GPU_I_ID for a MIG GPU instance, as
 * dcgm-exporter labels its MIG rows) into l; id is the caller's buffer
 * for the index, at least 24 bytes.  Returns the count (6 or 7). */
#define IDLE_GPU_LABELS 7 /* at most: 6, and GPU_I_ID on a MIG instance */
struct prom_label;
size_t idle_out_gpu_labels(struct prom_label *l, char *id, size_t idcap,
                           const idle_gpu *g, const char *host);

/* One verdict object (the fields of a `verdict` event after "type"). */
void idle_out_gpu(jw *w, const idle_gpu *g);
void idle_out_sess(jw *w, const idle_sess *s);
/* The Prometheus text exposition, appended to b: 0, or b's error
 * (GPUFL_ETOOBIG past its cap, GPUFL_ENOMEM). */
int idle_out_metrics(struct gbuf *b, const idle_gpu *gpus, int ngpus,
                     const idle_sess *ss, int nss, const char *hostname,
                     int simulated);

/* A gpufl log (system stream) for verdict lines. */
typedef struct idle_log idle_log;
int idle_log_open(idle_log **out, const char *dir, int simulated,
                  const gpu_device *devs, int ndev, uint32_t interval_ms,
                  const char *cmd, char *why, size_t whylen);
void idle_log_gpu(idle_log *l, const idle_gpu *g, uint64_t ts);
void idle_log_sess(idle_log *l, const idle_sess *s, uint64_t ts);
void idle_log_close(idle_log *l);
/* Any other line of the log: the envelope, then fn's members. */
typedef void (*idle_log_fill)(jw *w, const void *ctx);
void idle_log_event(idle_log *l, uint64_t ts, const char *type,
                    idle_log_fill fn, const void *ctx);

/* ---- waste lines (idle_waste.c) ---- */

/* Ships the accounting to the server: every --waste-interval a `waste`
 * line per (GPU, owner) whose busy or wasted seconds grew since its last
 * line (docs/events.md "waste"). */
typedef struct idle_wline idle_wline;
int idle_wline_new(idle_wline **out, uint64_t start_ns);
void idle_wline_free(idle_wline *w);
/* Writes the lines for [last ship, now) into l; the count written. */
int idle_wline_ship(idle_wline *w, idle_log *l, const idle_acct *a,
                    const idle_gpu *gpus, int ngpus, const char *host,
                    uint64_t now);

/* ---- running it (idle_watch.c) ---- */

typedef struct idle_opts {
    idle_cfg cfg;
    idle_env env;
    const char *nvml_lib;
    const char *sim; /* NULL = NVML */
    int sim_gpus;
    const char *dcgm_url;
    idle_sess_cfg *sessions; /* borrowed */
    int nsessions;
    int auto_sessions;    /* one session per GPU process cgroup */
    const char *log_dir;  /* watch: write verdict lines here */
    const char *listen;   /* "ADDR:PORT": /metrics, /probe, /verdicts */
    const char *hook_cmd; /* sh -c, after the warning period */
    const char *hook_url; /* POSTed the verdict JSON */
    uint32_t samples;     /* --once: samples taken (interval apart) */
    int json, probe;
    const char *only;    /* --session-name: report this one only */
    uint64_t duration_s; /* watch: stop after this long, 0 = never */
    const char *cmdline;
    int clean_check; /* --once: is every GPU safe for the next job? */
    const char *slurm_scontrol; /* path, "off", NULL: auto (idle_slurm.c) */
    const char *slurm_node;     /* NULL: the short host name */
    const char *hub_url;        /* JupyterHub base or API URL (idle_hub.c) */
    const char *hub_token;
    int hub_insecure;           /* allow http:// to another host */
    uint32_t hub_every_s;       /* at most one report a user this often */
    uint32_t waste_interval_ms; /* watch: waste lines this often */
    const gpu_price *prices;    /* --once text: the waste seen, priced */
    size_t nprices;
    const char *currency;
} idle_opts;

/* Exit codes of --once (docs/idle.md). */
enum {
    IDLE_EXIT_IN_USE = 0,
    IDLE_EXIT_IDLE = 3,
    IDLE_EXIT_UNKNOWN = 4,
    IDLE_EXIT_PHANTOM = 5,
    IDLE_EXIT_DIRTY = 6, /* --clean-check: leaked, phantom or stuck */
    IDLE_EXIT_BUSY = 7   /* --clean-check: a process still runs on it */
};

int idle_once(const idle_opts *o);
int idle_watch(const idle_opts *o);

#endif
