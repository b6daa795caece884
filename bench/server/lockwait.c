/*
 * lockwait.c - where a process's threads wait for mutexes and how long
 * each lock is held, per call site: an LD_PRELOAD library for measuring
 * gpufl-server (not a test, not linked into anything).
 *
 * Why: the ingest's events/s on the 2-core machine vary +-20 % between
 * runs of one binary, so what the compactor costs the ingest could not
 * be seen in them; the time the ingest's writer waits for the writer's
 * lock while the compactor's transactions hold it can (docs/server.md
 * "Where the ingest waits").
 *
 *   LD_PRELOAD=build/lib/libgpufl_lockwait.so \
 *       GPUFL_LOCKWAIT_OUT=/tmp/lw gpufl-server ...
 *
 * At exit it writes /tmp/lw.PID: one line per call site of
 * pthread_mutex_lock that waited or held more than 1 ms in all -
 *   <object> <offset> locks=N contended=N wait_ms=W hold_ms=H
 * most first; `addr2line -f -i -e <object> <offset>` names the site
 * (RelWithDebInfo).  wait: time in a pthread_mutex_lock that did not get
 * the mutex at once; hold: from the lock's return to its unlock, a
 * pthread_cond_wait on it counted as an unlock and a lock again (its wait
 * for the condition is not held).  A thread holding more than LW_HELD
 * mutexes at once has the extra ones uncounted.  The process must end
 * through exit() (a server stopped by SIGTERM does) for the file to be
 * written.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, RTLD_NEXT */
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define LW_SITES 1024 /* call sites kept; later ones count in slot 0 */
#define LW_HELD 16    /* mutexes one thread holds at once, counted */

typedef struct lw_site {
    void *ra; /* the return address of its pthread_mutex_lock call */
    uint64_t locks, contended, wait_ns, hold_ns;
} lw_site;

static lw_site sites[LW_SITES];
static int (*real_lock)(pthread_mutex_t *);
static int (*real_trylock)(pthread_mutex_t *);
static int (*real_unlock)(pthread_mutex_t *);
static int (*real_cwait)(pthread_cond_t *, pthread_mutex_t *);
static int (*real_ctwait)(pthread_cond_t *, pthread_mutex_t *,
                          const struct timespec *);

/* the mutexes this thread holds: since when, locked where */
static __thread struct {
    pthread_mutex_t *m;
    lw_site *site;
    uint64_t since;
} held[LW_HELD];
static __thread int nheld;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void resolve(void)
{
    if (__atomic_load_n(&real_lock, __ATOMIC_ACQUIRE))
        return;
    real_trylock =
        (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_trylock");
    real_unlock =
        (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_unlock");
    real_cwait = (int (*)(pthread_cond_t *, pthread_mutex_t *))dlsym(
        RTLD_NEXT, "pthread_cond_wait");
    real_ctwait =
        (int (*)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *))
            dlsym(RTLD_NEXT, "pthread_cond_timedwait");
    __atomic_store_n(
        &real_lock,
        (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock"),
        __ATOMIC_RELEASE);
}

/* The slot of call site ra: open addressing, claimed with a CAS */
static lw_site *site_of(void *ra)
{
    size_t h = ((uintptr_t)ra >> 2) % LW_SITES;

    for (size_t i = 0; i < LW_SITES; i++) {
        lw_site *s = &sites[(h + i) % LW_SITES];
        void *cur = __atomic_load_n(&s->ra, __ATOMIC_ACQUIRE);
        if (cur == ra)
            return s;
        if (!cur &&
            (__atomic_compare_exchange_n(&s->ra, &cur, ra, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE) ||
             cur == ra))
            return s;
    }
    return &sites[0];
}

static void held_push(pthread_mutex_t *m, lw_site *s)
{
    if (nheld < LW_HELD) {
        held[nheld].m = m;
        held[nheld].site = s;
        held[nheld++].since = now_ns();
    }
}

/* m unlocked: its hold counted; its site, NULL if not held here */
static lw_site *held_pop(pthread_mutex_t *m)
{
    for (int i = nheld - 1; i >= 0; i--)
        if (held[i].m == m) {
            lw_site *s = held[i].site;
            __atomic_fetch_add(&s->hold_ns, now_ns() - held[i].since,
                               __ATOMIC_RELAXED);
            held[i] = held[--nheld];
            return s;
        }
    return NULL;
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
    lw_site *s;
    int rc;

    resolve();
    s = site_of(__builtin_return_address(0));
    if (real_trylock(m) == 0) {
        rc = 0;
    } else {
        uint64_t t0 = now_ns();
        rc = real_lock(m);
        __atomic_fetch_add(&s->wait_ns, now_ns() - t0, __ATOMIC_RELAXED);
        __atomic_fetch_add(&s->contended, 1, __ATOMIC_RELAXED);
    }
    __atomic_fetch_add(&s->locks, 1, __ATOMIC_RELAXED);
    if (rc == 0)
        held_push(m, s);
    return rc;
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
    resolve();
    held_pop(m);
    return real_unlock(m);
}

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    lw_site *s;
    int rc;

    resolve();
    s = held_pop(m);
    rc = real_cwait(c, m);
    if (s)
        held_push(m, s);
    return rc;
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                           const struct timespec *t)
{
    lw_site *s;
    int rc;

    resolve();
    s = held_pop(m);
    rc = real_ctwait(c, m, t);
    if (s)
        held_push(m, s);
    return rc;
}

/* the report's copy of sites: threads may still lock while it sorts */
static lw_site sorted[LW_SITES];

static int by_total(const void *a, const void *b)
{
    const lw_site *x = a, *y = b;
    uint64_t tx = x->wait_ns + x->hold_ns, ty = y->wait_ns + y->hold_ns;
    return tx < ty ? 1 : tx > ty ? -1 : 0;
}

__attribute__((destructor)) static void lw_report(void)
{
    const char *out = getenv("GPUFL_LOCKWAIT_OUT");
    char path[4096];
    FILE *f = stderr;

    if (out && *out) {
        snprintf(path, sizeof(path), "%s.%d", out, (int)getpid());
        if (!(f = fopen(path, "w")))
            return;
    }
    for (size_t i = 0; i < LW_SITES; i++)
        sorted[i] = (lw_site){ __atomic_load_n(&sites[i].ra, __ATOMIC_ACQUIRE),
                               sites[i].locks, sites[i].contended,
                               sites[i].wait_ns, sites[i].hold_ns };
    qsort(sorted, LW_SITES, sizeof(*sorted), by_total);
    for (size_t i = 0; i < LW_SITES; i++) {
        lw_site *s = &sorted[i];
        Dl_info d;
        if (!s->ra || s->wait_ns + s->hold_ns < 1000000)
            continue;
        if (!dladdr(s->ra, &d) || !d.dli_fname)
            d.dli_fname = "?", d.dli_fbase = NULL;
        fprintf(f,
                "%s %#lx locks=%llu contended=%llu wait_ms=%.1f"
                " hold_ms=%.1f\n",
                d.dli_fname,
                (unsigned long)((char *)s->ra - (char *)d.dli_fbase),
                (unsigned long long)s->locks, (unsigned long long)s->contended,
                (double)s->wait_ns / 1e6, (double)s->hold_ns / 1e6);
    }
    if (f != stderr)
        fclose(f);
}
