/*
 * store_sql_kcount.c - each (session, stream)'s count of kernel rows
 * (table kcount, migration 23): the compactor's work list
 * (store_sql_kblocks_compact.c), so that a pass does not GROUP BY every kernel
 * row to find the streams with a run to compact.
 *
 * A count changes in the transaction that writes or deletes its rows, so
 * a crash leaves rows and counts that agree: the batch writers report the
 * rows they write (sq_kcount_add), summed per batch in memory and added
 * before COMMIT (sq_kcount_flush, one upsert per session and stream, not
 * one per row: a trigger per row cost SQLite's row store a third more CPU
 * per kernel); the compactor takes off the rows it moves into a block in
 * the block's transaction (sq_kcount_sub).  Every row this server writes
 * is one the compactor can take (KB_EXACT); the only other delete of
 * rows, retention, takes the session's counts with it.
 */
#include "store_sql_int.h"
#include "store_sql_kblocks_read.h"

#include <gpufl/gpufl.h>

/* (session, stream) pairs summed before they are written out early: a
 * batch rarely holds more than a few */
#define SQ_KCOUNT_MAX 4096

int sq_kcount_flush(srv_store *s)
{
    const uint64_t *k;
    sdb_stmt *st = NULL;
    int rc = GPUFL_OK;

    if (!s->kcount.n)
        return GPUFL_OK;
    if (sdb_prepare(s->w,
                    "INSERT INTO kcount VALUES(?,?,?) ON CONFLICT(sess,"
                    " stream) DO UPDATE SET n=kcount.n+excluded.n",
                    &st))
        return GPUFL_EINTERNAL;
    for (size_t i = 0; i < s->kcount.cap && !rc; i++) {
        int64_t *n = rl_map_at(&s->kcount, i, &k);
        if (!n)
            continue;
        qbind_i64(st, 1, (int64_t)k[0]);
        qbind_i64(st, 2, (int64_t)k[1]);
        qbind_i64(st, 3, *n);
        rc = qrun(st);
    }
    sdb_finalize(st);
    rl_map_clear(&s->kcount);
    return rc;
}

int sq_kcount_add(srv_store *s, int64_t sess, uint64_t stream, int64_t n)
{
    uint64_t k[4] = { (uint64_t)sess, stream, 0, 0 };
    int64_t *v;
    int fresh, rc;

    if (!s->kcount.max)
        rl_map_init(&s->kcount, sizeof(int64_t), SQ_KCOUNT_MAX);
    if (!(v = rl_map_get(&s->kcount, k, &fresh))) {
        /* full (or out of memory): what is summed goes in now */
        if ((rc = sq_kcount_flush(s)) != 0)
            return rc;
        if (!(v = rl_map_get(&s->kcount, k, &fresh)))
            return GPUFL_ENOMEM;
    }
    *v += n;
    return GPUFL_OK;
}

int sq_kcount_sub(srv_store *s, int64_t sess, int64_t stream, int64_t n)
{
    sdb_stmt *st = NULL;
    int rc;

    if (sdb_prepare(
            s->w, "UPDATE kcount SET n=n-?3 WHERE sess=?1 AND stream=?2", &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sess);
    qbind_i64(st, 2, stream);
    qbind_i64(st, 3, n);
    rc = sdb_err(sdb_step(st));
    sdb_finalize(st);
    return rc;
}

void sq_kcount_reset(srv_store *s)
{
    rl_map_clear(&s->kcount);
}

void sq_kcount_release(srv_store *s)
{
    rl_map_release(&s->kcount);
}
