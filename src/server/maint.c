/*
 * maint.c - the maintenance thread: marks silent sessions stale (silent
 * for --stale-after of the time since the server could hear them) and runs
 * the retention policy (sessions, memory profiles) on its schedule.  Both
 * are plain store calls, so the admin endpoint runs the same code on
 * demand.  It also runs the regression scan of ended sessions (regress.c)
 * and, with --kernel-store=blocks, the kernel compactor
 * (store_sql_kblocks_compact.c) with the timeline's packer
 * (store_sql_tlpack.c) and the API call summary's
 * (store_sql_capipack.c), and the cold tier's mover (store_sql_kcold.c).
 */
#include "srv_int.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <stdio.h>
#include <time.h>
#include "common/log.h"

/* How often staleness and the schedule are checked at most (seconds);
 * shorter when the configured periods are shorter. */
#define MAINT_TICK_S 5

int srv_retention_run(srv *s, const srv_retention *p, uint64_t *pruned,
                      uint64_t *memprofs)
{
    srv_retention pol = { s->cfg.retention_max_age_s, s->cfg.retention_max_db,
                          s->cfg.memprof_max_age_s, NULL };
    /* an override is a whole policy: what it leaves 0 is not applied */
    if (p && (p->max_age_s || p->max_db_bytes || p->memprof_max_age_s))
        pol = *p;
    pol.n_memprofs = memprofs;
    *pruned = 0;
    *memprofs = 0;
    if (!pol.max_age_s && !pol.max_db_bytes && !pol.memprof_max_age_s)
        return 0;
    return srv_store_prune(s->store, &pol, pruned);
}

/* --kernel-store=blocks: one compactor pass (store_sql_kblocks_compact.c). */
static void maint_compact(srv *s)
{
    uint64_t nb = 0, nk = 0;
    int rc = srv_store_kblocks_compact(s->store, &nb, &nk, NULL);

    if (rc)
        glog_warn("maint", "kernel compaction failed (%d); the rows stay", rc);
    else if (nb && !s->cfg.quiet)
        glog_info("maint", "compacted %llu kernel(s) into %llu block(s)",
                  (unsigned long long)nk, (unsigned long long)nb);
    /* and the ops (store_sql_oblocks_compact.c) */
    if ((rc = srv_store_oblocks_compact(s->store, &nb, &nk)) != 0)
        glog_warn("maint", "op compaction failed (%d); the rows stay", rc);
    else if (nb)
        glog_debug("maint", "compacted %llu op(s) into %llu block(s)",
                   (unsigned long long)nk, (unsigned long long)nb);
    /* the timeline's buckets too (PostgreSQL; store_sql_tlpack.c) */
    if ((rc = srv_store_tl_pack(s->store, &nb, &nk)) != 0)
        glog_warn("maint", "timeline packing failed (%d); the rows stay", rc);
    else if (nb)
        glog_debug("maint", "packed %llu timeline row(s) into %llu range(s)",
                   (unsigned long long)nk, (unsigned long long)nb);
    /* and the blocks' names (both databases; store_sql_kbnpack.c) */
    if ((rc = srv_store_kbn_pack(s->store, &nb, &nk)) != 0)
        glog_warn("maint", "kernel name packing failed (%d); the rows stay",
                  rc);
    else if (nb)
        glog_debug("maint", "packed %llu kernel name row(s) into %llu pack(s)",
                   (unsigned long long)nk, (unsigned long long)nb);
    /* and the API call summary (PostgreSQL; store_sql_capipack.c) */
    if ((rc = srv_store_capi_pack(s->store, &nb, &nk)) != 0)
        glog_warn("maint",
                  "API call summary packing failed (%d); the rows"
                  " stay",
                  rc);
    else if (nb)
        glog_debug("maint",
                   "packed %llu API call summary row(s) into %llu"
                   " range(s)",
                   (unsigned long long)nk, (unsigned long long)nb);
}

/* The cold tier: the sweep of unnamed objects, then the moves
 * (store_sql_kcold.c; it waits by itself after S3 failed). */
static void maint_cold(srv *s)
{
    uint64_t moved = 0, deleted = 0;
    int rc = srv_store_cold_pass(s->store, s->cfg.hot_age_s, &moved, &deleted);

    if (rc && rc != GPUFL_EAGAIN)
        glog_warn("maint", "cold tier pass failed (%d); blocks stay", rc);
    if ((moved || deleted) && !s->cfg.quiet)
        glog_info("maint",
                  "cold tier: %llu block(s) moved to S3, %llu object(s) "
                  "deleted",
                  (unsigned long long)moved, (unsigned long long)deleted);
}

static void *maint_main(void *arg)
{
    srv *s = arg;
    time_t last_ret = time(NULL), last_kb = time(NULL);
    uint64_t tick = MAINT_TICK_S;

    if (s->cfg.stale_after_s < tick)
        tick = s->cfg.stale_after_s;
    if (s->cfg.retention_interval_s < tick)
        tick = s->cfg.retention_interval_s;
    if ((s->cfg.kernel_store == SRV_KSTORE_BLOCKS || s->cfg.cold_endpoint[0]) &&
        s->cfg.kernel_compact_s < tick)
        tick = s->cfg.kernel_compact_s;
    if (tick < 1)
        tick = 1;

    pthread_mutex_lock(&s->mlock);
    while (!s->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += (time_t)tick;
        pthread_cond_timedwait(&s->mcond, &s->mlock, &ts);
        if (s->stopping)
            break;
        pthread_mutex_unlock(&s->mlock);
        srv_store_mark_stale(
            s->store, s->cfg.stale_after_s,
            __atomic_load_n(&s->heard_since, __ATOMIC_RELAXED));
        srv_regress_run(s);
        if ((uint64_t)(time(NULL) - last_ret) >= s->cfg.retention_interval_s) {
            uint64_t n = 0, m = 0;
            last_ret = time(NULL);
            if (srv_retention_run(s, NULL, &n, &m) == 0 && (n || m) &&
                !s->cfg.quiet)
                glog_info("maint",
                          "retention pruned %llu"
                          " session(s), %llu memory profile(s)",
                          (unsigned long long)n, (unsigned long long)m);
        }
        if ((s->cfg.kernel_store == SRV_KSTORE_BLOCKS ||
             s->cfg.cold_endpoint[0]) &&
            (uint64_t)(time(NULL) - last_kb) >= s->cfg.kernel_compact_s) {
            last_kb = time(NULL);
            if (s->cfg.kernel_store == SRV_KSTORE_BLOCKS)
                maint_compact(s);
            if (s->cfg.cold_endpoint[0])
                maint_cold(s);
        }
        pthread_mutex_lock(&s->mlock);
    }
    pthread_mutex_unlock(&s->mlock);
    return NULL;
}

int srv_maint_start(srv *s)
{
    /* a server that was down heard nothing: its downtime is no session's
     * silence */
    if (!__atomic_load_n(&s->heard_since, __ATOMIC_RELAXED))
        __atomic_store_n(&s->heard_since, (uint64_t)time(NULL),
                         __ATOMIC_RELAXED);
    pthread_mutex_init(&s->mlock, NULL);
    pthread_cond_init(&s->mcond, NULL);
    if (pthread_create(&s->maint, NULL, maint_main, s) != 0)
        return -1;
    s->maint_started = 1;
    return 0;
}

void srv_maint_stop(srv *s)
{
    if (!s->maint_started)
        return;
    pthread_mutex_lock(&s->mlock);
    s->stopping = 1;
    pthread_cond_signal(&s->mcond);
    pthread_mutex_unlock(&s->mlock);
    pthread_join(s->maint, NULL);
    srv_regress_stop(s);
    pthread_mutex_destroy(&s->mlock);
    pthread_cond_destroy(&s->mcond);
    s->maint_started = 0;
}
