/*
 * store_sql_ckpt.c - SQLite's WAL checkpointed on a thread of its own.
 *
 * SQLite checkpoints in the commit that takes the WAL past
 * wal_autocheckpoint (65 536 pages here: store_sql_ingest_sqlite.c): that
 * commit copies 256 MiB of pages into the database and syncs it, on the
 * HTTP worker, with the writer's lock held - the request waits, and so
 * do ingest and the compactor behind it (bench_scale at 10M: the tenths
 * holding a checkpoint 0.35-0.48 s slower, ~6 % of the run; docs/server.md
 * "100M a tenth time").  Here the writer's commits only report the WAL's
 * size (sdb_wal_hook, which replaces SQLite's checkpoint at commit); past
 * the same 65 536 pages this thread checkpoints on its own connection
 * (PASSIVE: beside the writer, which goes on appending), again while
 * what is left is more than SQ_CKPT_TAIL pages, then once more under the
 * writer's lock for the pages appended meanwhile, so that the WAL is then
 * wholly in the database and the next transaction starts it over (a
 * checkpoint that always trails the writer would let the WAL grow for
 * ever).  A reader still on an old snapshot keeps frames from being
 * copied, as it did at commit; the thread then waits SQ_CKPT_RETRY_MS
 * before it tries again rather than take the lock at every commit.
 * What a checkpoint copies and when a kill -9 may land are SQLite's, as
 * before.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"

/* WAL pages that start a checkpoint (SQLite's wal_autocheckpoint before);
 * GPUFL_SERVER_CKPT_FRAMES (tests): 1..SQ_CKPT_FRAMES instead */
#define SQ_CKPT_FRAMES 65536
/* pages left to copy that are taken under the writer's lock (16 MiB) */
#define SQ_CKPT_TAIL 4096
/* concurrent rounds before the locked one, at most */
#define SQ_CKPT_ROUNDS 4
#define SQ_CKPT_RETRY_MS 100

struct sq_ckpt {
    srv_store *s;
    sdb *db; /* the thread's own connection */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int due, stop, started;
    int frames_at;                /* pages that start a checkpoint */
    uint64_t runs, locked_frames; /* under mu */
};

/* After each commit of the writer (its lock held): past the bound, the
 * thread is woken.  Never waits on the writer's lock (the thread takes
 * that lock without mu). */
static void on_wal(void *arg, int frames)
{
    struct sq_ckpt *c = arg;

    if (frames < c->frames_at)
        return;
    pthread_mutex_lock(&c->mu);
    if (!c->due) {
        c->due = 1;
        pthread_cond_signal(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
}

/* One PASSIVE checkpoint on db: the WAL's pages (*log) and those copied
 * (*done), -1 each when not in WAL mode. */
static int passive(sdb *db, int64_t *log, int64_t *done)
{
    sdb_stmt *st = NULL;
    int rc;

    *log = *done = -1;
    if ((rc = sdb_prepare(db, "PRAGMA wal_checkpoint(PASSIVE)", &st)) != 0)
        return rc;
    if ((rc = sdb_step(st)) == SDB_ROW) {
        *log = sdb_col_i64(st, 1);
        *done = sdb_col_i64(st, 2);
    }
    sdb_finalize(st);
    return rc == SDB_ROW || rc == SDB_DONE ? GPUFL_OK : rc;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* One checkpoint: concurrent rounds, then the rest under the writer's
 * lock.  1 when the WAL ended wholly copied. */
static int ckpt_run(struct sq_ckpt *c)
{
    int64_t log = 0, done = 0, done0, tail;
    double t0 = now_ms(), t1;
    int rc = GPUFL_OK;

    for (int i = 0; i < SQ_CKPT_ROUNDS && !rc; i++) {
        rc = passive(c->db, &log, &done);
        if (log - done <= SQ_CKPT_TAIL)
            break;
    }
    t1 = now_ms();
    done0 = done;
    pthread_mutex_lock(&c->s->wlock);
    if (!rc)
        rc = passive(c->db, &log, &done);
    tail = log >= 0 && done >= 0 ? log - done : -1;
    pthread_mutex_unlock(&c->s->wlock);
    if (rc) {
        glog_warn("store", "WAL checkpoint: %s", sdb_errmsg(c->db));
        return 0;
    }
    pthread_mutex_lock(&c->mu);
    c->runs++;
    if (done > done0 && done0 >= 0)
        c->locked_frames += (uint64_t)(done - done0);
    pthread_mutex_unlock(&c->mu);
    glog_debug("store",
               "WAL checkpoint: %lld pages in %.1f ms beside the writer,"
               " %lld in %.1f ms under its lock, %lld left",
               (long long)done0, t1 - t0, (long long)(done - done0),
               now_ms() - t1, (long long)tail);
    return tail == 0;
}

static void *ckpt_main(void *arg)
{
    struct sq_ckpt *c = arg;

    pthread_mutex_lock(&c->mu);
    while (!c->stop) {
        int whole;
        if (!c->due) {
            pthread_cond_wait(&c->cv, &c->mu);
            continue;
        }
        pthread_mutex_unlock(&c->mu);
        whole = ckpt_run(c);
        pthread_mutex_lock(&c->mu);
        /* a wake-up from before the locked round is stale: the WAL
         * starts over at the next commit */
        c->due = 0;
        if (!whole && !c->stop) {
            /* a reader's old snapshot holds frames back: not at every
             * commit */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += SQ_CKPT_RETRY_MS * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&c->cv, &c->mu, &ts);
        }
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

int sq_ckpt_start(srv_store *s, const char *url)
{
    struct sq_ckpt *c;
    const char *v = getenv("GPUFL_SERVER_CKPT_FRAMES");
    long n = v ? strtol(v, NULL, 10) : 0;
    char err[256];
    int rc;

    if (sdb_dialect(s->w) != SDB_SQLITE)
        return GPUFL_OK;
    if (!(c = calloc(1, sizeof(*c))))
        return GPUFL_ENOMEM;
    c->s = s;
    c->frames_at = n >= 1 && n <= SQ_CKPT_FRAMES ? (int)n : SQ_CKPT_FRAMES;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if ((rc = sdb_open(url, 0, &c->db, err, sizeof(err))) != 0) {
        glog_warn("store", "WAL checkpointer: %s; checkpoints at commit", err);
        goto fail;
    }
    if (pthread_create(&c->th, NULL, ckpt_main, c) != 0) {
        rc = GPUFL_ENOMEM;
        goto fail;
    }
    c->started = 1;
    s->ckpt = c;
    /* the writer's lock: no commit between the two */
    pthread_mutex_lock(&s->wlock);
    rc = sdb_wal_hook(s->w, on_wal, c);
    pthread_mutex_unlock(&s->wlock);
    if (rc)
        sq_ckpt_stop(s);
    return rc;
fail:
    sdb_close(c->db);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
    return rc;
}

void sq_ckpt_stop(srv_store *s)
{
    struct sq_ckpt *c = s->ckpt;

    if (!c)
        return;
    /* SQLite's checkpoint at commit again, for what the writer does
     * from here to its close */
    pthread_mutex_lock(&s->wlock);
    sdb_wal_hook(s->w, NULL, NULL);
    sdb_exec(s->w, "PRAGMA wal_autocheckpoint=65536");
    pthread_mutex_unlock(&s->wlock);
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (c->started)
        pthread_join(c->th, NULL);
    sdb_close(c->db);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
    s->ckpt = NULL;
}

void sq_ckpt_counts(srv_store *s, uint64_t *runs, uint64_t *locked_frames)
{
    struct sq_ckpt *c = s->ckpt;

    *runs = *locked_frames = 0;
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    *runs = c->runs;
    *locked_frames = c->locked_frames;
    pthread_mutex_unlock(&c->mu);
}
