/*
 * store_sql_health.c - what the store knows about its database's health,
 * from what its connections report (db.h, sdb_set_watch): whether the
 * database can be reached, and whether writes fail for want of disk space.
 * Each change is logged once (not once per request or per connection), and
 * readiness (/readyz, srv_store_ping) follows it.
 *
 * Reachability is checked for real at every ping (a query on a read
 * connection, made again if it was lost).  Disk space is checked only
 * while a write has failed for it: a ping then makes a one-row write, so
 * readiness comes back by itself once space is freed, even when no ingest
 * arrives to prove it (a probe that takes the server out of rotation gets
 * no traffic).  A one-row write alone proves little on SQLite: it fits in
 * WAL space the failed batch already allocated; so SQLite's file system
 * must also have HEALTH_FREE_MIN free.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"

/* A reconnection nobody had to wait for (the server closed an idle
 * connection and it was made again before any command failed) is logged
 * at most this often: every connection of a restarted database finds out
 * on its own, one after the other. */
#define HEALTH_QUIET_LOG_NS (60ull * 1000000000ull)

/* Free space SQLite's file system needs before a full disk counts as
 * over: room for a few big batches' WAL (about 4 MiB per 10 000 kernels). */
#define HEALTH_FREE_MIN (16ull << 20)

void sq_health_init(srv_store *s, const char *url)
{
    pthread_mutex_init(&s->health.lock, NULL);
    if (strncmp(url, "sqlite:", 7) == 0)
        url += 7;
    snprintf(s->path, sizeof(s->path), "%s", url);
}

/* SQLite: whether its file system has room again (1 when unknown). */
static int room(srv_store *s)
{
    struct statvfs v;

    if (sdb_dialect(s->w) != SDB_SQLITE || statvfs(s->path, &v) != 0)
        return 1;
    return (uint64_t)v.f_bavail * v.f_frsize >= HEALTH_FREE_MIN;
}

void sq_health_release(srv_store *s)
{
    pthread_mutex_destroy(&s->health.lock);
}

/* why on one line (libpq's messages end in, and may hold, newlines). */
static void one_line(const char *why, const char *dflt, char *out, size_t cap)
{
    size_t n = 0;

    for (const char *p = why && *why ? why : dflt; *p && n + 1 < cap; p++) {
        char c = *p == '\n' || *p == '\t' || *p == '\r' ? ' ' : *p;
        if (c != ' ' || (n > 0 && out[n - 1] != ' '))
            out[n++] = c;
    }
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
}

void sq_health_watch(void *arg, int ev, const char *why)
{
    srv_store *s = arg;
    sq_health *h = &s->health;
    char msg[512];
    uint64_t now;

    /* every commit comes here: no lock unless there is news */
    if (ev == SDB_EV_COMMIT &&
        !__atomic_load_n(&h->nospc_logged, __ATOMIC_RELAXED) &&
        !__atomic_load_n(&h->nospc, __ATOMIC_RELAXED))
        return;
    now = clock_mono_ns();
    one_line(why,
             ev == SDB_EV_NOSPC ? "disk full"
             : ev == SDB_EV_UP  ? "closed by the server"
                                : "connection lost",
             msg, sizeof(msg));
    pthread_mutex_lock(&h->lock);
    switch (ev) {
    case SDB_EV_DOWN:
        if (!h->down) {
            h->down = 1;
            h->down_since = now;
            h->last_log = now;
            glog_error("db",
                       "the database is unavailable (%s);"
                       " answering 503 (agents retry) and reconnecting",
                       msg);
        }
        break;
    case SDB_EV_UP:
        if (h->down) {
            h->down = 0;
            h->last_log = now;
            /* sessions were silent because we could not hear: staleness
             * counts from here (srv_store_mark_stale) */
            h->up_wall = (uint64_t)time(NULL);
            glog_info("db",
                      "the database is reachable again"
                      " (reconnected after %.1f s)",
                      (double)(now - h->down_since) / 1e9);
        } else if (!h->last_log || now - h->last_log >= HEALTH_QUIET_LOG_NS) {
            h->last_log = now;
            glog_info("db",
                      "reconnected to the database (the old"
                      " connection had ended: %s)",
                      msg);
        }
        break;
    case SDB_EV_NOSPC:
        __atomic_store_n(&h->nospc, 1, __ATOMIC_RELAXED);
        if (!h->nospc_logged) {
            __atomic_store_n(&h->nospc_logged, 1, __ATOMIC_RELAXED);
            glog_error("db",
                       "a database write failed for want of disk"
                       " space (%s); ingest answers 503 (agents retry) and"
                       " /readyz is not ready until a write succeeds",
                       msg);
        }
        break;
    case SDB_EV_COMMIT:
        __atomic_store_n(&h->nospc, 0, __ATOMIC_RELAXED);
        if (h->nospc_logged) {
            __atomic_store_n(&h->nospc_logged, 0, __ATOMIC_RELAXED);
            glog_info("db", "database writes succeed again");
        }
        break;
    default: break;
    }
    pthread_mutex_unlock(&h->lock);
}

int srv_store_ping(srv_store *s)
{
    sdb *db = sq_reader_get(s);
    int rc = sdb_exec(db, "SELECT 1 FROM schema_version LIMIT 1");

    sq_reader_put(s, db);
    if (rc || !__atomic_load_n(&s->health.nospc, __ATOMIC_RELAXED))
        return rc;
    if (!room(s))
        return GPUFL_ENOSPC;
    /* a write failed for disk space: try one (autocommit, so it is not
     * taken for an ingest's COMMIT) */
    pthread_mutex_lock(&s->wlock);
    rc = sdb_exec(s->w, "UPDATE schema_version SET version=version");
    pthread_mutex_unlock(&s->wlock);
    if (rc)
        return __atomic_load_n(&s->health.nospc, __ATOMIC_RELAXED)
                   ? GPUFL_ENOSPC
                   : rc;
    __atomic_store_n(&s->health.nospc, 0, __ATOMIC_RELAXED);
    return GPUFL_OK;
}
