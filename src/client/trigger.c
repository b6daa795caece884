/*
 * trigger.c - the flight recorder's triggers (trigger.h,
 * docs/recorder.md#triggers): parsing GPUFL_TRIGGERS, the lock-free
 * pending slots, the rate limit, and the signal handlers of the signal
 * and crash triggers.
 *
 * Signal handlers do no work of their own: SIGUSR2 sets a bit and wakes
 * the collector; a fatal signal hands over to collector_crash(), which
 * writes the window with async-signal-safe calls only, and then the
 * previous disposition runs as if we had not been there.
 */
#include "trigger.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "client_int.h"
#include "common/opt.h"

static const char *const names[TRG_N] = { "signal",     "crash", "exit-error",
                                          "cuda-error", "oom",   "scope",
                                          "ctl" };

const char *trigger_name(int kind)
{
    return kind >= 0 && kind < TRG_N ? names[kind] : "?";
}

/* One entry of the list: a name, or scope=NAME>DURATION. */
static int parse_one(const char *s, size_t n, trg_cfg *out, char *err,
                     size_t errlen)
{
    if (n > 6 && !memcmp(s, "scope=", 6)) {
        const char *gt = memchr(s, '>', n);
        char dur[32];
        size_t nl, dl;
        uint64_t ms = 0;
        trg_scope *sc;
        if (!gt || gt == s + 6 || gt == s + n - 1)
            goto bad_scope;
        nl = (size_t)(gt - (s + 6));
        dl = (size_t)(s + n - gt - 1);
        if (nl >= TRG_SCOPE_NAME_MAX || dl >= sizeof dur)
            goto bad_scope;
        memcpy(dur, gt + 1, dl);
        dur[dl] = 0;
        /* a bare number is milliseconds, as in every *_MS variable */
        if (opt_parse_dur(dur, OPT_MS, OPT_MS, &ms) != 0)
            goto bad_scope;
        if (out->n_scopes == TRG_SCOPES_MAX) {
            snprintf(err, errlen, "more than %d scope= triggers",
                     TRG_SCOPES_MAX);
            return GPUFL_EINVAL;
        }
        sc = &out->scopes[out->n_scopes++];
        memcpy(sc->name, s + 6, nl);
        sc->name[nl] = 0;
        sc->ns = ms * 1000000ull;
        out->armed |= 1u << TRG_SCOPE;
        return 0;
    bad_scope:
        snprintf(err, errlen,
                 "trigger \"%.*s\" is not scope=NAME>DURATION (a name of "
                 "at most %d bytes, a duration such as 2s or 250ms)",
                 (int)(n > 80 ? 80 : n), s, TRG_SCOPE_NAME_MAX - 1);
        return GPUFL_EINVAL;
    }
    for (int k = 0; k < TRG_N; k++)
        if (k != TRG_SCOPE && strlen(names[k]) == n &&
            !memcmp(s, names[k], n)) {
            out->armed |= 1u << k;
            return 0;
        }
    snprintf(err, errlen,
             "unknown trigger \"%.*s\"; known: signal, crash, exit-error, "
             "cuda-error, oom, ctl, scope=NAME>DURATION",
             (int)(n > 60 ? 60 : n), s);
    return GPUFL_EINVAL;
}

int trigger_parse(const char *list, trg_cfg *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!list)
        list = TRG_DEFAULT;
    while (*list) {
        const char *e = strchr(list, ',');
        size_t n = e ? (size_t)(e - list) : strlen(list);
        const char *s = list;
        int rc;
        list = e ? e + 1 : list + n;
        while (n && *s == ' ') {
            s++;
            n--;
        }
        while (n && s[n - 1] == ' ')
            n--;
        if (!n)
            continue;
        rc = parse_one(s, n, out, err, errlen);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- pending triggers ---- */

enum { SLOT_FREE = 0, SLOT_WRITING, SLOT_READY };

typedef struct trg_slot {
    _Atomic int state;
    uint64_t ts;
    char detail[TRG_DETAIL_MAX];
} trg_slot;

_Atomic uint32_t trigger_waiting;
static trg_slot slots[TRG_N];
static _Atomic uint64_t repeats[TRG_N]; /* posts that found the slot taken */
static _Atomic uint64_t fired[TRG_N], limited[TRG_N], handled[TRG_N];
static uint64_t last_fire[TRG_N]; /* collector only */
static uint64_t held_repeats[TRG_N];

/* A signal handler's post: no slot (a handler cannot wait for one), only
 * this bit of trigger_waiting; the collector makes the detail. */
#define SIG_BIT (1u << 31)
static _Atomic uint64_t sig_ts; /* when it came (clock_gettime is safe) */
static _Atomic uint64_t sig_n;  /* how many came: two can share the bit */
static uint64_t sig_seen;       /* collector only */

static void slot_post(int kind, uint64_t ts, const char *a, const char *b,
                      const char *c)
{
    trg_slot *s = &slots[kind];
    int exp = SLOT_FREE;
    size_t n = 0;
    if (!atomic_compare_exchange_strong_explicit(&s->state, &exp, SLOT_WRITING,
                                                 memory_order_acquire,
                                                 memory_order_relaxed)) {
        atomic_fetch_add_explicit(&repeats[kind], 1, memory_order_relaxed);
        return;
    }
    s->ts = ts ? ts : client_now();
    for (const char *part[3] = { a, b, c }, **p = part; p < part + 3; p++)
        for (const char *q = *p; q && *q && n < TRG_DETAIL_MAX - 1; q++)
            s->detail[n++] = *q;
    s->detail[n] = 0;
    atomic_store_explicit(&s->state, SLOT_READY, memory_order_release);
    atomic_fetch_or_explicit(&trigger_waiting, 1u << kind,
                             memory_order_release);
    client_kick();
}

void trigger_post(int kind, const char *detail)
{
    if (kind < 0 || kind >= TRG_N)
        return;
    slot_post(kind, 0, detail, NULL, NULL);
}

void trigger_post_cuda(int code, int driver, const char *func, const char *sym)
{
    /* CUDA_ERROR_OUT_OF_MEMORY and cudaErrorMemoryAllocation are both 2 */
    int oom = code == 2;
    uint32_t armed = g_client.cfg.trg.armed;
    int kind = oom && (armed & (1u << TRG_OOM)) ? TRG_OOM : TRG_CUDA_ERROR;
    char num[48];
    if (!(armed & (1u << kind)))
        return;
    snprintf(num, sizeof num, " returned %d%s", code,
             oom ? driver ? " (CUDA_ERROR_OUT_OF_MEMORY)"
                          : " (cudaErrorMemoryAllocation)"
                 : "");
    if (sym && *sym) {
        char tail[TRG_DETAIL_MAX];
        snprintf(tail, sizeof tail, "%s; kernel %s", num, sym);
        slot_post(kind, 0, func ? func : "CUDA call", tail, NULL);
    } else {
        slot_post(kind, 0, func ? func : "CUDA call", num, NULL);
    }
}

int trigger_take(trg_event *ev)
{
    uint32_t w;
    if (atomic_load_explicit(&trigger_waiting, memory_order_acquire) &
            SIG_BIT &&
        atomic_fetch_and(&trigger_waiting, ~SIG_BIT) & SIG_BIT) {
        uint64_t n = atomic_load(&sig_n) - sig_seen;
        sig_seen += n;
        if (n > 1)
            atomic_fetch_add(&repeats[TRG_SIGNAL], n - 1);
        /* n 0: a handler counted itself before our load of sig_n but set
         * the bit after our fetch_and; the last take posted it already */
        if (n)
            slot_post(TRG_SIGNAL, atomic_load(&sig_ts), "SIGUSR2", NULL, NULL);
    }
    w = atomic_load_explicit(&trigger_waiting, memory_order_acquire) & ~SIG_BIT;
    while (w) {
        int k = __builtin_ctz(w);
        trg_slot *s = &slots[k];
        uint64_t now = client_now();
        w &= w - 1;
        atomic_fetch_and(&trigger_waiting, ~(1u << k));
        if (atomic_load_explicit(&s->state, memory_order_acquire) != SLOT_READY)
            continue;
        memset(ev, 0, sizeof *ev);
        ev->kind = k;
        ev->ts = s->ts;
        memcpy(ev->detail, s->detail, sizeof ev->detail);
        atomic_store_explicit(&s->state, SLOT_FREE, memory_order_release);
        held_repeats[k] += atomic_exchange(&repeats[k], 0);
        if (last_fire[k] && now - last_fire[k] < TRG_RATE_NS) {
            held_repeats[k]++;
            atomic_fetch_add(&limited[k], 1);
            atomic_fetch_add(&handled[k], 1);
            continue;
        }
        last_fire[k] = now;
        ev->repeats = held_repeats[k];
        held_repeats[k] = 0;
        atomic_fetch_add(&fired[k], 1);
        return 1;
    }
    return 0;
}

void trigger_counts(uint64_t f[TRG_N], uint64_t l[TRG_N])
{
    for (int k = 0; k < TRG_N; k++) {
        f[k] = atomic_load(&fired[k]);
        l[k] = atomic_load(&limited[k]) + atomic_load(&repeats[k]);
    }
}

void trigger_done(int kind)
{
    if (kind >= 0 && kind < TRG_N)
        atomic_fetch_add(&handled[kind], 1);
}

uint64_t trigger_handled(int kind)
{
    return kind >= 0 && kind < TRG_N ? atomic_load(&handled[kind]) : 0;
}

void trigger_reset(void)
{
    atomic_store(&trigger_waiting, 0);
    sig_seen = atomic_load(&sig_n);
    for (int k = 0; k < TRG_N; k++) {
        atomic_store(&slots[k].state, SLOT_FREE);
        atomic_store(&repeats[k], 0);
        atomic_store(&fired[k], 0);
        atomic_store(&limited[k], 0);
        last_fire[k] = 0;
        held_repeats[k] = 0;
    }
}

/* ---- signal handlers ---- */

static const int crash_sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
#define N_CRASH (sizeof crash_sigs / sizeof crash_sigs[0])

static struct sigaction old_usr2, old_crash[N_CRASH];
static int usr2_on, crash_on;
static _Atomic int crashing;

static void call_old(const struct sigaction *o, int sig, siginfo_t *si,
                     void *uc)
{
    if (o->sa_flags & SA_SIGINFO) {
        if (o->sa_sigaction)
            o->sa_sigaction(sig, si, uc);
    } else if (o->sa_handler != SIG_DFL && o->sa_handler != SIG_IGN &&
               o->sa_handler) {
        o->sa_handler(sig);
    }
}

static void on_usr2(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    atomic_store(&sig_ts, client_now());
    atomic_fetch_add(&sig_n, 1);
    atomic_fetch_or(&trigger_waiting, SIG_BIT);
    client_kick();
    errno = saved;
    call_old(&old_usr2, sig, si, uc);
}

static void on_crash(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    size_t i;
    for (i = 0; i < N_CRASH; i++)
        if (crash_sigs[i] == sig)
            break;
    /* one dump per process, by the first thread that crashes; a crash
     * inside the dump itself goes straight to the old disposition */
    if (i < N_CRASH && !atomic_exchange(&crashing, 1))
        collector_crash(sig, si);
    errno = saved;
    if (i == N_CRASH)
        return;
    /* as if we had never been there: the program's handler, or the
     * default action (a core dump), with the signal it got */
    sigaction(sig, &old_crash[i], NULL);
    if ((old_crash[i].sa_flags & SA_SIGINFO) ||
        (old_crash[i].sa_handler != SIG_DFL &&
         old_crash[i].sa_handler != SIG_IGN)) {
        call_old(&old_crash[i], sig, si, uc);
        return;
    }
    /* a fault re-executes the instruction and faults again; a sent
     * signal (kill, abort's raise) must be raised again */
    if (si && si->si_code <= 0)
        raise(sig);
}

void trigger_arm(const trg_cfg *cfg)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    atomic_store(&crashing, 0);
    if ((cfg->armed & (1u << TRG_SIGNAL)) && !usr2_on) {
        sa.sa_sigaction = on_usr2;
        usr2_on = sigaction(SIGUSR2, &sa, &old_usr2) == 0;
    }
    if ((cfg->armed & (1u << TRG_CRASH)) && !crash_on) {
        sa.sa_sigaction = on_crash;
        for (size_t i = 0; i < N_CRASH; i++)
            sigaction(crash_sigs[i], &sa, &old_crash[i]);
        crash_on = 1;
    }
}

/* Ours back out, unless the program replaced it since. */
static void restore(int sig, const struct sigaction *old, void *ours)
{
    struct sigaction cur;
    if (sigaction(sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
        (void *)cur.sa_sigaction == ours)
        sigaction(sig, old, NULL);
}

void trigger_disarm(void)
{
    if (usr2_on)
        restore(SIGUSR2, &old_usr2, (void *)on_usr2);
    usr2_on = 0;
    if (crash_on)
        for (size_t i = 0; i < N_CRASH; i++)
            restore(crash_sigs[i], &old_crash[i], (void *)on_crash);
    crash_on = 0;
}
