/*
 * test_srv_igroup.c - the group commit's rerun (store_sql_igroup.c): five
 * batches queued while another is written go into one transaction; one
 * of them fails (GPUFL_SERVER_FAIL_SID, tests only, fails any batch of
 * that session as a database error would), so the group is rolled back
 * and its batches written again one per transaction.  Every other batch
 * is acknowledged with its own counts and stored exactly once (kernel
 * rows and the session's counters: the failed first try left nothing),
 * the failing one gets its error and leaves nothing; then four good
 * batches queued the same way share one commit (the harness does group).
 * One of the group's batches comes in parts (srv_store_ingest_parts, as a
 * streamed HTTP body): the same outcome, its parts asked for again when
 * it is written alone; with kernel blocks its kernels make one block,
 * and a part that fails leaves nothing of the batch.
 *
 * The queue is made deterministic by holding the writer's lock: the
 * first caller takes its batch alone and waits for the lock, the others
 * queue behind it, and the next leader takes them all as one group.
 */
#include "ingest.h"
#include "store.h"
#include "test.h"

#include <gpufl/gpufl.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "db.h"
#include "store_sql_int.h"
#include "store_test.h"

#define NB 6  /* a first batch, then a group of five */
#define NK 20 /* kernels per batch */
#define BAD 3 /* the group's batch that fails */
#define SID_FMT "%08x-0000-4000-8000-00000000000%d"

static char lines[NK + 4][512];
static char arena[NB][1 << 16];
static srv_ev evs[NB][NK + 4];
static size_t nev[NB];

/* A session of one stream (store_test.h's): NK kernels on stream 1, not
 * ended. */
static size_t build(const char *sid, int b, srv_ev *ev)
{
    return st_session(sid, NK, 1, 0, lines, arena[b], sizeof(arena[b]), ev);
}

typedef struct job {
    srv_store *s;
    int b, rc;
    srv_ingest_res r;
    int parts; /* given in parts (srv_store_ingest_parts) */
    int fail;  /* ... the third part fails as a scope check may */
    int calls; /* parts asked for, the one after the last included */
} job;

/* Batch j->b in three parts - its first 7 lines, none, the rest - as a
 * streamed body gives them (api_ingest.c). */
static int part(void *ctx, size_t k, const srv_ev **ev, size_t *n)
{
    job *j = ctx;
    size_t cut = 7;

    j->calls++;
    if (k == 0) {
        *ev = evs[j->b];
        *n = cut;
    } else if (k == 1) {
        *ev = evs[j->b] + cut;
        *n = 0;
    } else if (k == 2 && j->fail) {
        return -GPUFL_ECONFLICT;
    } else if (k == 2) {
        *ev = evs[j->b] + cut;
        *n = nev[j->b] - cut;
    } else {
        return 0;
    }
    return 1;
}

static void *ingest(void *arg)
{
    job *j = arg;
    j->rc = j->parts ? srv_store_ingest_parts(j->s, part, j, nev[j->b], &j->r)
                     : srv_store_ingest(j->s, evs[j->b], nev[j->b], &j->r);
    return NULL;
}

/* Batches queued (not yet taken by a writer). */
static int queued(srv_store *s)
{
    int n = 0;
    pthread_mutex_lock(&s->gq_lock);
    for (sq_ibatch *b = s->gq_head; b; b = b->next)
        n++;
    pthread_mutex_unlock(&s->gq_lock);
    return n;
}

/* Waits until cond(s) holds (10 s at most). */
static int wait_for(srv_store *s, int want_queued, int want_leader)
{
    struct timespec ms = { 0, 1000000 };
    for (int i = 0; i < 10000; i++) {
        int lead;
        pthread_mutex_lock(&s->gq_lock);
        lead = s->gq_leader;
        pthread_mutex_unlock(&s->gq_lock);
        if (queued(s) == want_queued && lead == want_leader)
            return 0;
        nanosleep(&ms, NULL);
    }
    return -1;
}

/* Batches b[0..n) sent by n threads: b[0] taken alone while the test
 * holds the writer's lock, the others queued behind it, then the lock
 * let go; each job's result in j[]. */
static void send_grouped(srv_store *s, const int *b, int n, job *j)
{
    pthread_t t[NB];

    pthread_mutex_lock(&s->wlock);
    for (int i = 0; i < n; i++) {
        /* batch 2 in parts (before the failing one in the group) */
        j[i] = (job){ s, b[i], -1, { 0, 0 }, b[i] == 2, 0, 0 };
        REQUIRE(pthread_create(&t[i], NULL, ingest, &j[i]) == 0);
        /* the first becomes the writer of its batch alone; each next
         * one waits in the queue */
        CHECK(wait_for(s, i, 1) == 0);
    }
    pthread_mutex_unlock(&s->wlock);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

/* A count from db (sid as ?1). */
static int64_t count(sdb *db, const char *sql, const char *sid)
{
    sdb_stmt *st = NULL;
    int64_t v = -1;
    if (sdb_prepare(db, sql, &st) == 0) {
        sdb_bind_text(st, 1, sid, strlen(sid));
        if (sdb_step(st) == SDB_ROW)
            v = sdb_col_i64(st, 0);
    }
    sdb_finalize(st);
    return v;
}

static void test_rerun(void)
{
    static char sids[NB][40];
    srv_store *s;
    sdb *db = NULL;
    char url[512], err[256];
    uint64_t c0, b0, c1, b1;
    job j[NB];
    int order[NB];

    for (int b = 0; b < NB; b++) {
        snprintf(sids[b], sizeof(sids[b]), SID_FMT, 0xa0u + (unsigned)b, b);
        nev[b] = build(sids[b], b, evs[b]);
    }
    setenv("GPUFL_SERVER_FAIL_SID", sids[BAD], 1);
    s = open_tmp("igroup");
    REQUIRE(s != NULL);
    tmp_url("igroup", url);
    REQUIRE(sdb_open(url, 1, &db, err, sizeof(err)) == 0);

    srv_store_ingest_stats(s, &c0, &b0);
    for (int b = 0; b < NB; b++)
        order[b] = b;
    send_grouped(s, order, NB, j);
    srv_store_ingest_stats(s, &c1, &b1);
    for (int i = 0; i < NB; i++) {
        const char *sid = sids[j[i].b];
        int bad = j[i].b == BAD;
        if (bad) {
            CHECK(j[i].rc == GPUFL_EINTERNAL);
            CHECK(j[i].r.accepted == 0);
        } else {
            CHECK(j[i].rc == GPUFL_OK);
            CHECK(j[i].r.accepted == nev[j[i].b]);
            CHECK(j[i].r.duplicate == 0);
        }
        CHECK(count(db,
                    "SELECT count(*) FROM kernels k JOIN sessions s ON"
                    " s.id=k.sess WHERE s.sid=?1",
                    sid) == (bad ? 0 : NK));
        CHECK(count(db, "SELECT count(*) FROM sessions WHERE sid=?1", sid) ==
              !bad);
        if (!bad)
            CHECK(count(db, "SELECT n_kernels FROM sessions WHERE sid=?1",
                        sid) == NK);
    }
    /* the first alone, the group's four good ones each alone: the failed
     * group's transaction counts nothing */
    CHECK(c1 - c0 == NB - 1 && b1 - b0 == NB - 1);
    /* the batch in parts was written twice (the group, then alone), its
     * parts asked for from the first each time: 4 calls a writing */
    CHECK(j[2].parts && j[2].calls == 8);

    /* the same again, duplicates now, without the failing one: the
     * group's four share one commit */
    {
        int again[5] = { 0, 1, 2, 4, 5 };
        send_grouped(s, again, 5, j);
        srv_store_ingest_stats(s, &c0, &b0);
        CHECK(c0 - c1 == 2 && b0 - b1 == 5);
        for (int i = 0; i < 5; i++) {
            CHECK(j[i].rc == GPUFL_OK);
            CHECK(j[i].r.accepted == 0 && j[i].r.duplicate == nev[j[i].b]);
            CHECK(count(db,
                        "SELECT count(*) FROM kernels k JOIN sessions s ON"
                        " s.id=k.sess WHERE s.sid=?1",
                        sids[j[i].b]) == NK);
        }
    }
    sdb_close(db);
    srv_store_close(s);
    unsetenv("GPUFL_SERVER_FAIL_SID");
}

/* A batch in parts with kernel blocks: one block for the batch's
 * stream, not one a part (the held kernels wait for the last part); and
 * a batch whose part fails stores nothing of the parts before it. */
static void test_parts_blocks(void)
{
    static char sid[40];
    srv_store *s;
    sdb *db = NULL;
    char url[512], err[256];
    job j;

    snprintf(sid, sizeof(sid), SID_FMT, 0xb0u, 0);
    nev[0] = build(sid, 0, evs[0]);
    s = open_tmp("igroup_parts");
    REQUIRE(s != NULL);
    srv_store_set_kernel_store(s, 1);
    tmp_url("igroup_parts", url);
    REQUIRE(sdb_open(url, 1, &db, err, sizeof(err)) == 0);
    j = (job){ s, 0, -1, { 0, 0 }, 1, 1, 0 };
    ingest(&j);
    CHECK(j.rc == GPUFL_ECONFLICT);
    CHECK(j.r.accepted == 0 && j.r.duplicate == 0);
    CHECK(count(db, "SELECT count(*) FROM sessions WHERE sid=?1", sid) == 0);
    j = (job){ s, 0, -1, { 0, 0 }, 1, 0, 0 };
    ingest(&j);
    CHECK(j.rc == GPUFL_OK);
    CHECK(j.r.accepted == nev[0] && j.r.duplicate == 0);
    CHECK(count(db,
                "SELECT count(*) FROM kblocks b JOIN sessions s ON"
                " s.id=b.sess WHERE s.sid=?1",
                sid) == 1);
    CHECK(count(db,
                "SELECT sum(n) FROM kblocks b JOIN sessions s ON"
                " s.id=b.sess WHERE s.sid=?1",
                sid) == NK);
    CHECK(count(db, "SELECT n_kernels FROM sessions WHERE sid=?1", sid) == NK);
    /* again: every line a duplicate, nothing new */
    j = (job){ s, 0, -1, { 0, 0 }, 1, 0, 0 };
    ingest(&j);
    CHECK(j.rc == GPUFL_OK);
    CHECK(j.r.accepted == 0 && j.r.duplicate == nev[0]);
    CHECK(count(db, "SELECT sum(n) FROM kblocks WHERE ?1 IS NOT NULL", sid) ==
          NK);
    sdb_close(db);
    srv_store_close(s);
}

int main(void)
{
    RUN(test_rerun);
    RUN(test_parts_blocks);
    TEST_DONE();
}
