/*
 * idle_verdict_sess.c - the verdict engine's session half: each
 * session's verdict from its GPUs' states and its own signals (input,
 * connections, CPU), with timers, hysteresis, a warning period and a
 * veto (docs/idle.md §4).
 *
 * Invariants: PHANTOM never counts as work; UNKNOWN never leads to a stop;
 * a verdict only leaves "in use" after holding for hyst_s, while any
 * evidence of use applies at once.
 */
#include "idle_verdict_int.h"

#include <stdio.h>
#include <string.h>

#define SR(...) idle_reason_add(s->reasons, &s->nreasons, __VA_ARGS__)

void idle_sess_init(idle_sess *s, const idle_sess_cfg *c, uint64_t now)
{
    memset(s, 0, sizeof *s);
    s->c = *c;
    s->first_seen = now;
    s->last_active = c->start_ns && c->start_ns < now ? c->start_ns : now;
    /* the daemon knows nothing of the time before it started: the idle
     * clock never starts before its first look */
    if (s->last_active < now)
        s->last_active = now;
    s->state = IS_UNKNOWN;
    s->gpu_state = IG_EMPTY;
    s->sig.conn = -1;
    s->sig.input_age_s = -1;
    s->sig.kernel_busy = -1;
    s->sig.cpu_cores = -1;
}

/* Rank of "in use" for the most active GPU of a session. */
static int gpu_rank(int st)
{
    switch (st) {
    case IG_BUSY: return 6;
    case IG_BUSY_LOW_OCC: return 5;
    case IG_BURSTY: return 4;
    case IG_UNKNOWN: return 3;
    case IG_HELD: return 2;
    case IG_STUCK: return 2;
    case IG_PHANTOM: return 1;
    default: return 0;
    }
}

static int sess_in_use(int st)
{
    return st == IS_ACTIVE || st == IS_STARTING || st == IS_GPU_UNUSED ||
           st == IS_UNKNOWN;
}

void idle_sess_eval(idle_sess *s, const idle_cfg *c, const idle_gpu *gpus,
                    int ngpus, uint64_t now)
{
    const idle_ssig *q = &s->sig;
    uint64_t start = s->c.start_ns ? s->c.start_ns : s->first_seen;
    double age = now > start ? (double)(now - start) / 1e9 : 0;
    int recent = q->input_age_s >= 0 && q->input_age_s < c->idle_s;
    int cpu_busy = q->cpu_cores >= c->cpu_busy;
    int conn = q->conn > 0;
    int gst = IG_EMPTY, best = -1, phantom = 0, st, evidence = 0;
    const char *kind = "";
    double idle_for, timer = 0;
    char d1[32], d2[32], d3[32];

    s->nreasons = 0;
    for (int i = 0; i < s->ndevs; i++) {
        int k = s->devs[i];
        if (k < 0 || k >= ngpus)
            continue;
        if (gpus[k].state == IG_PHANTOM)
            phantom = 1;
        if (gpu_rank(gpus[k].state) > best) {
            best = gpu_rank(gpus[k].state);
            gst = gpus[k].state;
        }
    }
    s->gpu_state = gst;
    s->phantom_alert = phantom;

    /* the decision table, docs/idle.md §4 */
    if (c->max_age_s && age >= (double)c->max_age_s && gst != IG_UNKNOWN) {
        st = IS_MAX_AGE;
        SR("running for %s (>= the %s limit)",
           idle_dur_text(d1, sizeof d1, age),
           idle_dur_text(d2, sizeof d2, (double)c->max_age_s));
    } else if (gst == IG_UNKNOWN || q->unknown) {
        st = IS_UNKNOWN;
        if (gst == IG_UNKNOWN)
            SR("a GPU of the session has no usable data (UNKNOWN never "
               "stops anything)");
        if (q->unknown)
            SR("%s", q->why[0] ? q->why : "a session signal failed");
    } else if (age < c->grace_s) {
        st = IS_STARTING;
        SR("started %s ago (< %s grace: installs and model loads look idle)",
           idle_dur_text(d1, sizeof d1, age),
           idle_dur_text(d2, sizeof d2, c->grace_s));
        evidence = 1;
    } else if (gst == IG_BUSY) {
        st = IS_ACTIVE;
        kind = "gpu";
        evidence = 1;
        SR("GPU busy: kernels are executing");
    } else if (gst == IG_BUSY_LOW_OCC) {
        st = IS_ACTIVE;
        evidence = 1;
        if (conn || recent || cpu_busy) {
            kind = "low_occupancy";
            SR("GPU busy at low occupancy while the user is attached");
        } else {
            kind = "low_occupancy_unattended";
            SR("GPU busy at low occupancy with nobody attached: a spin loop "
               "or a hung collective looks the same; never stopped on the "
               "default timer");
        }
    } else if (gst == IG_BURSTY) {
        st = IS_ACTIVE;
        kind = "bursty";
        evidence = 1;
        SR("GPU used in bursts: interactive cells");
    } else if (gst == IG_STUCK) {
        st = IS_ACTIVE;
        kind = "stuck";
        evidence = 1;
        SR("GPU STUCK: utilisation pinned with nothing running; never "
           "stopped by the idle timers (a hang needs a person), alerted");
    } else if (gst == IG_HELD && (recent || q->kernel_busy > 0)) {
        st = IS_ACTIVE;
        kind = "gpu_held";
        evidence = 1;
        SR("GPU memory held and the user is active (between cells)");
    } else if (gst == IG_HELD && cpu_busy) {
        st = IS_ACTIVE;
        kind = "cpu";
        evidence = 1;
        SR("CPU phase with the model resident (%.2f cores)", q->cpu_cores);
    } else if (gst == IG_HELD) {
        st = IS_HELD_IDLE;
        SR("GPU memory held with no kernels, no recent input and an idle "
           "CPU");
    } else if (recent && !phantom) {
        st = IS_GPU_UNUSED;
        evidence = 1;
        SR("the user is active but the session does not use its GPU");
    } else if (cpu_busy) {
        st = IS_ACTIVE;
        kind = "cpu";
        evidence = 1;
        SR("container CPU busy (%.2f cores)", q->cpu_cores);
    } else if (recent && phantom) {
        st = IS_ACTIVE;
        kind = "user";
        evidence = 1;
        SR("the user is active; the session's GPU is PHANTOM");
    } else {
        st = IS_IDLE;
        SR("no GPU work, no recent input, CPU idle");
    }
    if (phantom)
        SR("GPU_PHANTOM: utilisation without an owner on a session GPU; "
           "not counted as work, drain or reset the GPU");
    /* signals in words */
    if (q->input_age_s >= 0)
        SR("last input %s ago", idle_dur_text(d1, sizeof d1, q->input_age_s));
    if (q->conn >= 0)
        SR("%d interactive connection%s", q->conn, q->conn == 1 ? "" : "s");
    if (q->cpu_cores >= 0 && !cpu_busy)
        SR("container CPU %.2f cores (< %.2f)", q->cpu_cores, c->cpu_busy);

    if (evidence || st == IS_UNKNOWN) {
        s->last_active = now;
        s->stop_done = 0;
    } else if (q->input_age_s >= 0) {
        /* input seen before the idle state began moves the clock back no
         * further than the daemon's first look (see idle_sess_init) */
        uint64_t ago = (uint64_t)(q->input_age_s * 1e9);
        uint64_t in = ago < now ? now - ago : 0;
        if (in > s->last_active)
            s->last_active = in;
    }

    /* hysteresis: become "in use" at once, leave it only after hyst_s */
    if (st != s->state && sess_in_use(s->state) && !sess_in_use(st) &&
        st != IS_MAX_AGE && s->since) {
        if (s->pending != st + 1) {
            s->pending = st + 1;
            s->pending_since = now;
        }
        if (now - s->pending_since < (uint64_t)c->hyst_s * IDLE_NS) {
            SR("would be %s; waiting %u s of hysteresis",
               idle_sess_state_name(st), c->hyst_s);
            st = s->state;
            kind = s->kind;
        }
    } else {
        s->pending = 0;
    }
    s->changed = st != s->state || strcmp(kind, s->kind) != 0 || !s->since;
    if (s->changed)
        s->since = now;
    s->state = st;
    if (kind != s->kind)
        snprintf(s->kind, sizeof s->kind, "%s", kind);
    s->ts = now;

    /* actions */
    idle_for = now > s->last_active ? (double)(now - s->last_active) / 1e9 : 0;
    s->action = IA_NONE;
    s->deadline = 0;
    if (st == IS_IDLE)
        timer = c->idle_s;
    else if (st == IS_HELD_IDLE)
        timer = c->held_s;
    if (st == IS_IDLE || st == IS_HELD_IDLE || st == IS_MAX_AGE) {
        uint64_t base = st == IS_MAX_AGE
                            ? start + c->max_age_s * IDLE_NS
                            : s->last_active + (uint64_t)timer * IDLE_NS;
        if (now >= base) {
            s->deadline = base + (uint64_t)c->warn_s * IDLE_NS;
            if (now < s->deadline) {
                s->action = IA_WARN;
                SR("idle for %s (>= %s): stopping in %s unless vetoed",
                   idle_dur_text(d1, sizeof d1, idle_for),
                   idle_dur_text(d2, sizeof d2, timer),
                   idle_dur_text(d3, sizeof d3,
                                 (double)(s->deadline - now) / 1e9));
            } else {
                s->action = IA_STOP;
                SR("idle for %s: the %u s warning period is over",
                   idle_dur_text(d1, sizeof d1, idle_for), c->warn_s);
            }
            if (s->veto_until > now) {
                s->action = IA_VETOED;
                SR("vetoed: kept for %s more",
                   idle_dur_text(d1, sizeof d1,
                                 (double)(s->veto_until - now) / 1e9));
            }
        } else {
            SR("idle for %s of %s", idle_dur_text(d1, sizeof d1, idle_for),
               idle_dur_text(d2, sizeof d2, timer));
        }
    } else if (st == IS_UNKNOWN) {
        s->action = IA_ALERT;
    } else if (st == IS_ACTIVE &&
               strcmp(s->kind, "low_occupancy_unattended") == 0) {
        double since = (double)(now - s->since) / 1e9;
        if (since >= (double)c->unattended_mult * c->idle_s)
            s->action = IA_NOTIFY;
    } else if (st == IS_GPU_UNUSED &&
               (double)(now - s->since) / 1e9 >= c->gpu_unused_s) {
        s->action = IA_RELEASE;
    }
    if ((phantom || gst == IG_STUCK) && s->action == IA_NONE)
        s->action = IA_ALERT;
}
