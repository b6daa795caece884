/*
 * store_sql_pass.c - a maintenance pass over found items in the writer's
 * transactions (store_sql_int.h sq_pass): the timeline packer's ranges,
 * the compactor's merges and the blocks it names.  Each finds its items
 * under the writer's lock, then works through them a few steps a
 * transaction (the lock held for one transaction, which ends early for a
 * waiting ingest batch: sq_ingest_give), counts a step's bad input (a
 * pack or block that does not decode) and goes on past it, and says so
 * when that count changes.
 */
#include "store_sql_int.h"
#include "common/log.h"

#include <gpufl/gpufl.h>

int sq_pass_run(srv_store *s, const sq_pass *p, uint64_t cnt[2])
{
    uint64_t bad = 0;
    int rc = GPUFL_OK, more = 1;

    while (!rc && more) {
        size_t n = 0, i = 0;
        more = 0;
        pthread_mutex_lock(&s->wlock);
        rc = p->find(s, p->ctx, &n, &more);
        pthread_mutex_unlock(&s->wlock);
        while (!rc && i < n) {
            sq_pass_tx t = { { 0, 0 }, 0, 0 };
            int e = GPUFL_OK, gave = 0;
            uint64_t t0;
            t0 = sq_maint_lock(s);
            if ((rc = sq_kb_tx_begin(s)) == 0) {
                while (!e && i < n && t.cost < p->tx_cost && !gave) {
                    int done = 0;
                    e = p->step(s, p->ctx, i, &t, &done);
                    i += done != 0;
                    gave = sq_ingest_give(s, t0);
                }
                rc = sq_kb_tx_end(s, e);
            }
            sq_maint_unlock(s, gave);
            /* what a rolled back transaction did is not counted */
            if (!rc) {
                cnt[0] += t.cnt[0];
                cnt[1] += t.cnt[1];
                bad += t.bad;
            }
        }
    }
    /* once a change, not each pass: the same bad items are found each
     * tick */
    if (!rc && bad != *p->bad_last)
        glog_warn(p->tag, "%llu %s", (unsigned long long)bad, p->bad_what);
    if (!rc)
        *p->bad_last = bad;
    return rc;
}
