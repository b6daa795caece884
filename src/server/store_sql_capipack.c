/*
 * store_sql_capipack.c - the API calls' summary packed on PostgreSQL
 * (schema 31, docs/server.md "API call summary packed on PostgreSQL").
 * capi holds one row per (session, level, bucket, thread); on PostgreSQL
 * each costs a 24-byte tuple header and an index entry, ~128 bytes for
 * two counts: 1.8 B/kernel at rest.  As the timeline's packer does for tl
 * (store_sql_tlpack.c), the maintenance thread packs each range of
 * SQ_TLP_N buckets of a (session, level >= 1, thread) the session has
 * moved past into one capipack row: its rows deleted (DELETE ...
 * RETURNING: what is packed is what was deleted, even with ingest
 * upserting into the range at the same time) and added to the range's
 * pack, one transaction (a kill leaves the rows or the pack).  A late
 * call's upsert makes a row again beside the pack; /calls adds the two
 * (store_sql_q_calls.c) and the next pass folds it in.  SQLite keeps its
 * rows (WITHOUT ROWID: in key order already).
 */
#include "store_sql_int.h"
#include "store_sql_capipack.h"
#include "common/log.h"

#include <gpufl/gpufl.h>

#include <stdlib.h>
#include <string.h>

/* Ranges found per pass, and packed per transaction (the writer's lock
 * is held for one transaction: ingest waits that long at most). */
#define CAPP_GROUPS 512
#define CAPP_TX_GROUPS 32

_Static_assert(SQ_TLP_SHIFT == 7, "SQ_TLP_SHIFT_STR spells it");
/* groups_find's SQL spells the level's shift (rollup.h) */
_Static_assert(RL_TL_SHIFT0 == 18 && RL_TL_LEVELS == 6,
               "16 + 4 * lvl is rl_tl_shift above level 0");
_Static_assert(SQ_CAPP_LVL_MAX < RL_TL_LEVELS, "capi's levels");

typedef struct capp_group {
    int64_t sess, lvl, tid, b0;
} capp_group;

/* Ranges holding rows of levels SQ_CAPP_LVL_MIN..MAX that end at or
 * before their session's last event, or of a session no longer running
 * (its last partial range too: rows a late call may still join, as any
 * pack). */
static int groups_find(srv_store *s, capp_group *g, size_t cap, size_t *n)
{
    sdb_stmt *st = NULL;
    int rc;

    *n = 0;
    if (sdb_prepare(
            s->w,
            "SELECT c.sess, c.lvl, c.tid, c.b >> " SQ_TLP_SHIFT_STR
            " FROM capi c JOIN sessions s ON s.id = c.sess"
            " WHERE c.lvl BETWEEN ?1 AND ?2 AND (s.state <> 'running' OR"
            " (((c.b >> " SQ_TLP_SHIFT_STR
            ") + 1) << CAST(16 + 4 * c.lvl + " SQ_TLP_SHIFT_STR
            " AS INTEGER)) <= s.last_ts)"
            " GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4 LIMIT ?3",
            &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, SQ_CAPP_LVL_MIN);
    qbind_i64(st, 2, SQ_CAPP_LVL_MAX);
    qbind_i64(st, 3, (int64_t)cap);
    while ((rc = sdb_step(st)) == SDB_ROW && *n < cap) {
        g[*n] = (capp_group){ qcol_i64(st, 0), qcol_i64(st, 1), qcol_i64(st, 2),
                              qcol_i64(st, 3) << SQ_TLP_SHIFT };
        (*n)++;
    }
    sdb_finalize(st);
    return rc == SDB_DONE || rc == SDB_ROW ? GPUFL_OK : sq_err(rc);
}

static int by_b(const void *a, const void *b)
{
    const sq_tlb *x = a, *y = b;
    return x->b < y->b ? -1 : x->b > y->b;
}

/* g's key as ?1..?4: each of pack_one's statements names the range by
 * it (its pack, its rows). */
static void bind_group(sdb_stmt *st, const capp_group *g)
{
    qbind_i64(st, 1, g->sess);
    qbind_i64(st, 2, g->lvl);
    qbind_i64(st, 3, g->tid);
    qbind_i64(st, 4, g->b0);
}

/* pack_one's answer for a range whose stored pack does not decode (a
 * corrupted database): nothing of it touched, its rows stay rows (/calls
 * over it answers an error) and the other ranges of the transaction
 * still pack. */
#define CAPP_BAD 1

/* One range: the pack's buckets read into w, its rows deleted into v,
 * the two added (as capi's upsert adds), the pack written.  *rows: how
 * many rows went.  The pack is decoded before the rows go: one that does
 * not decode answers CAPP_BAD having changed nothing (only this pass
 * writes capipack, under the writer's lock). */
static int pack_one(srv_store *s, const capp_group *g, uint64_t *rows)
{
    sq_tlb v[SQ_TLP_N], w[SQ_TLP_N], m[SQ_TLP_N];
    unsigned char out[SQ_TLP_BYTES_MAX];
    const void *p;
    size_t nv = 0, nw = 0, nm = 0, len;
    sdb_stmt *st = NULL;
    int rc;

    *rows = 0;
    if (sdb_prepare(s->w,
                    "SELECT data FROM capipack WHERE sess=?1 AND lvl=?2 AND"
                    " tid=?3 AND b0=?4",
                    &st))
        return GPUFL_EINTERNAL;
    bind_group(st, g);
    rc = sdb_step(st);
    if (rc == SDB_ROW) {
        p = qcol_blob(st, 0, &len);
        rc = sq_tlp_decode(p, len, g->b0, w, &nw) ? CAPP_BAD : GPUFL_OK;
    } else {
        rc = rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
    }
    sdb_finalize(st);
    if (rc == CAPP_BAD)
        glog_debug("capipack",
                   "session %lld level %lld thread %lld b0 %lld: its pack"
                   " does not decode; its rows stay",
                   (long long)g->sess, (long long)g->lvl, (long long)g->tid,
                   (long long)g->b0);
    if (rc)
        return rc;

    if (sdb_prepare(s->w,
                    "DELETE FROM capi WHERE sess=?1 AND lvl=?2 AND tid=?3"
                    " AND b >= ?4 AND b < ?5 RETURNING b, n, busy",
                    &st))
        return GPUFL_EINTERNAL;
    bind_group(st, g);
    qbind_i64(st, 5, g->b0 + SQ_TLP_N);
    /* the key holds at most SQ_TLP_N rows of a range */
    while ((rc = sdb_step(st)) == SDB_ROW && nv < SQ_TLP_N) {
        v[nv] =
            (sq_tlb){ qcol_i64(st, 0), qcol_i64(st, 1), qcol_i64(st, 2), 0, 0 };
        nv++;
    }
    sdb_finalize(st);
    if (rc != SDB_DONE)
        return rc == SDB_ROW ? GPUFL_EINTERNAL : sq_err(rc);
    *rows = nv;
    if (!nv)
        return GPUFL_OK;
    qsort(v, nv, sizeof(v[0]), by_b);

    /* both in b order: merged, a bucket in both added (a pack that
     * decodes holds top 0: none in the sum either) */
    for (size_t i = 0, j = 0; i < nv || j < nw;) {
        if (j == nw || (i < nv && v[i].b < w[j].b)) {
            m[nm++] = v[i++];
        } else if (i == nv || w[j].b < v[i].b) {
            m[nm++] = w[j++];
        } else {
            m[nm] = w[j++];
            sq_tlb_add(&m[nm++], &v[i++]);
        }
    }
    len = sq_tlp_encode(m, nm, g->b0, out);
    if (sdb_prepare(s->w,
                    "INSERT INTO capipack VALUES(?1, ?2, ?3, ?4, ?5)"
                    " ON CONFLICT(sess, lvl, tid, b0) DO UPDATE SET"
                    " data=excluded.data",
                    &st))
        return GPUFL_EINTERNAL;
    bind_group(st, g);
    qbind_blob(st, 5, out, len);
    rc = qrun(st);
    sdb_finalize(st);
    return rc ? sq_err(rc) : GPUFL_OK;
}

static int capp_find(srv_store *s, void *ctx, size_t *n, int *more)
{
    (void)more; /* one round: the next tick finds what is left */
    return groups_find(s, ctx, CAPP_GROUPS, n);
}

/* A range a step, CAPP_TX_GROUPS a transaction: counts packs and rows. */
static int capp_step(srv_store *s, void *ctx, size_t i, sq_pass_tx *t,
                     int *done)
{
    uint64_t nr = 0;
    int rc = pack_one(s, (capp_group *)ctx + i, &nr);

    *done = 1;
    t->cost++;
    if (rc == CAPP_BAD) {
        t->bad++;
        return GPUFL_OK;
    }
    t->cnt[0] += nr > 0;
    t->cnt[1] += nr;
    return rc;
}

int srv_store_capi_pack(srv_store *s, uint64_t *packs, uint64_t *rows)
{
    uint64_t cnt[2] = { 0, 0 };
    sq_pass p = { .find = capp_find,
                  .step = capp_step,
                  .tx_cost = CAPP_TX_GROUPS,
                  .tag = "capipack",
                  .bad_what = "API call summary range(s) have a pack that"
                              " does not decode; their rows stay rows and"
                              " /calls over them answers an error"
                              " (--log-level=debug names them)",
                  .bad_last = &s->capi_unpackable };
    int rc;

    *packs = *rows = 0;
    if (sdb_dialect(s->w) != SDB_POSTGRES)
        return GPUFL_OK;
    if (!(p.ctx = malloc(CAPP_GROUPS * sizeof(capp_group))))
        return GPUFL_ENOMEM;
    rc = sq_pass_run(s, &p, cnt);
    free(p.ctx);
    *packs = cnt[0];
    *rows = cnt[1];
    return rc;
}
