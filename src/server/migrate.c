/*
 * migrate.c - `gpufl-server migrate`: converts a database in place to
 * kernel blocks (docs/server.md "Migrating to blocks").  Opening the
 * store has already brought the schema up to date; this runs the
 * compactor's passes (store_sql_kblocks_compact.c) until one makes and
 * names nothing (a pass names up to 4096 of ingest's blocks), and says
 * how far it got after each.
 *
 * Resumable by construction: every block is its own transaction that
 * inserts the block and deletes exactly the rows it holds, so a kill at
 * any point leaves each run either rows or a block, and a rerun starts
 * from the rows that are left.  It may run while servers use the
 * database: the compactor takes the writer's lock (SQLite) or the
 * ingest's advisory lock (PostgreSQL) one block at a time.  Then the
 * timeline's level 0 rows of the sessions with blocks are deleted, and
 * on PostgreSQL the API calls' (computed from the kernels and calls
 * since: store_sql_q_tl0.c, store_sql_q_capi0.c), a session per
 * transaction, and the kept rows of the sessions' longest and shortest
 * kernels in blocks written before schema 24 are written
 * (store_sql_kxrow.c), a session per transaction.
 */
#include "srv_int.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <time.h>

#include "common/log.h"

/* A pass takes up to KB_GROUPS_MAX runs; one that made nothing had
 * nothing left to do. */
int srv_migrate_run(srv *s)
{
    srv_kb_stats a, b;
    uint64_t blocks = 0, kernels = 0, named = 0, pass = 0, tl0 = 0, capi0 = 0,
             kx = 0;
    time_t t0 = time(NULL);
    int rc = GPUFL_OK;

    srv_store_kblocks_stats(s->store, &a);
    printf("migrate: %llu kernel row(s), %llu kernel(s) already in %llu "
           "block(s)\n",
           (unsigned long long)a.rows, (unsigned long long)a.in_blocks,
           (unsigned long long)a.blocks);
    fflush(stdout);
    for (;;) {
        uint64_t nb = 0, nk = 0, nn = 0;
        uint64_t ob = 0, no = 0;
        rc = srv_store_kblocks_compact(s->store, &nb, &nk, &nn);
        /* and the ops' rows (store_sql_oblocks_compact.c) */
        if (!rc)
            rc = srv_store_oblocks_compact(s->store, &ob, &no);
        if (rc)
            break;
        if (!nb && !nn && !ob)
            break;
        pass++;
        blocks += nb;
        kernels += nk;
        named += nn;
        printf("migrate: pass %llu: %llu kernel(s) into %llu block(s), "
               "%llu block(s) named; %llu of %llu row(s) done\n",
               (unsigned long long)pass, (unsigned long long)nk,
               (unsigned long long)nb, (unsigned long long)nn,
               (unsigned long long)kernels, (unsigned long long)a.rows);
        if (ob)
            printf("migrate: pass %llu: %llu op(s) into %llu block(s)\n",
                   (unsigned long long)pass, (unsigned long long)no,
                   (unsigned long long)ob);
        fflush(stdout);
    }
    if (rc) {
        glog_error("migrate",
                   "stopped (%d) after %llu kernel(s) into %llu block(s): "
                   "what is done is kept; run it again to go on",
                   rc, (unsigned long long)kernels, (unsigned long long)blocks);
        return 1;
    }
    /* the sessions with blocks get their timeline level 0 from the
     * kernels (store_sql_q_tl0.c): the stored rows of it go, a session
     * per transaction (a kill keeps what is done; a rerun does the rest) */
    if ((rc = srv_store_level0_drop(s->store, &tl0, &capi0)) != 0) {
        glog_error("migrate",
                   "timeline level 0 rows not all deleted (%d): the blocks "
                   "are done; run it again to go on",
                   rc);
        return 1;
    }
    printf("migrate: %llu timeline level 0 row(s) deleted (computed from "
           "the blocks now)\n",
           (unsigned long long)tl0);
    /* on SQLite capi level 0 stays stored and read (srv_store_capi0_computed
     * says why): nothing deleted, nothing said, as before */
    if (srv_store_capi0_computed(s->store))
        printf("migrate: %llu API call summary level 0 row(s) deleted "
               "(computed from the calls now)\n",
               (unsigned long long)capi0);
    /* the rows of the longest and shortest kernels that blocks written
     * before schema 24 hold (store_sql_kxrow.c), a session per
     * transaction */
    if ((rc = srv_store_kx_fill(s->store, &kx)) != 0) {
        glog_error("migrate",
                   "kept rows of the longest and shortest kernels not all "
                   "written (%d): the blocks are done; run it again to go on",
                   rc);
        return 1;
    }
    printf("migrate: %llu kept row(s) of the longest and shortest kernels "
           "written\n",
           (unsigned long long)kx);
    srv_store_kblocks_stats(s->store, &b);
    /* rows left: kernels of running sessions' partial runs, and rows the
     * codec cannot keep exactly (older servers' NULLs) */
    printf("migrate: done in %lld s: %llu kernel(s) into %llu block(s), "
           "%llu block(s) named; %llu kernel(s) in %llu block(s), %llu left "
           "as rows\n",
           (long long)(time(NULL) - t0), (unsigned long long)kernels,
           (unsigned long long)blocks, (unsigned long long)named,
           (unsigned long long)b.in_blocks, (unsigned long long)b.blocks,
           (unsigned long long)b.rows);
    return 0;
}
