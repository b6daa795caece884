/*
 * store_sql_tlpack.c - the timeline's buckets packed on PostgreSQL (schema
 * 29, docs/server.md "Timeline buckets packed").  tl holds one row per
 * (session, level, lane, bucket); on PostgreSQL each row costs a 24-byte
 * tuple header and an index entry, and the per-batch upserts leave them
 * on heap pages of their own, so the full-range timeline (~54 000 level-1
 * buckets for 1M kernels) read a heap page per bucket.  The maintenance
 * thread packs each range of SQ_TLP_N buckets the session has moved past
 * into one tlpack row: its rows deleted (DELETE ... RETURNING: what is
 * packed is what was deleted, even with a writer upserting into it at
 * the same time) and added to the range's pack, one transaction (a kill
 * leaves the rows or the pack).  A late kernel's upsert makes a row again
 * beside the pack; the timeline adds the two (sq_tlb_add), and the next
 * pass folds it in.  Level 1 is written packed at ingest since
 * (store_sql_tl1_pg.c): its rows here are a database's from before.  SQLite keeps its rows (a WITHOUT ROWID table: the
 * rows are in key order already, 1.9 B a kernel).
 */
#include "store_sql_int.h"
#include "store_sql_tlpack.h"
#include "common/log.h"

#include <gpufl/gpufl.h>

#include <stdlib.h>
#include <string.h>

/* Ranges found per pass, and packed per transaction (the writer's lock
 * is held for one transaction: ingest waits that long at most). */
#define TLP_GROUPS 512
#define TLP_TX_GROUPS 32

_Static_assert(SQ_TLP_SHIFT == 7, "SQ_TLP_SHIFT_STR spells it");
/* groups_find's SQL spells the level's shift (rollup.h) */
_Static_assert(RL_TL_SHIFT0 == 18 && RL_TL_LEVELS == 6,
               "16 + 4 * lvl is rl_tl_shift above level 0");

typedef struct tlp_group {
    int64_t sess, lvl, lane, b0;
} tlp_group;

/* A pass's state for sq_pass_run: what it packs and the ranges found. */
typedef struct tlp_pass {
    const sq_tlp_kind *k;
    tlp_group g[TLP_GROUPS];
} tlp_pass;

/* Ranges holding rows of levels SQ_TLP_LVL_MIN..MAX that end at or
 * before their session's last event, or of a session no longer running
 * (its last partial range too: rows a late kernel may still join, as
 * any pack). */
static int groups_find(srv_store *s, const sq_tlp_kind *k, tlp_group *g,
                       size_t cap, size_t *n)
{
    sdb_stmt *st = NULL;
    char sql[512];
    int rc;

    *n = 0;
    snprintf(sql, sizeof(sql),
             "SELECT t.sess, t.lvl, t.%s, t.b >> " SQ_TLP_SHIFT_STR
             " FROM %s t JOIN sessions s ON s.id = t.sess"
             " WHERE t.lvl BETWEEN ?1 AND ?2 AND (s.state <> 'running' OR"
             " (((t.b >> " SQ_TLP_SHIFT_STR
             ") + 1) << CAST(16 + 4 * t.lvl + " SQ_TLP_SHIFT_STR
             " AS INTEGER)) <= s.last_ts)"
             " GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4 LIMIT ?3",
             k->lane, k->rows);
    if (sdb_prepare(s->w, sql, &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, k->lvl_min);
    qbind_i64(st, 2, k->lvl_max);
    qbind_i64(st, 3, (int64_t)cap);
    while ((rc = sdb_step(st)) == SDB_ROW && *n < cap) {
        g[*n] = (tlp_group){ qcol_i64(st, 0), qcol_i64(st, 1), qcol_i64(st, 2),
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
static void bind_group(sdb_stmt *st, const tlp_group *g)
{
    qbind_i64(st, 1, g->sess);
    qbind_i64(st, 2, g->lvl);
    qbind_i64(st, 3, g->lane);
    qbind_i64(st, 4, g->b0);
}

/* pack_one's answer for a range whose stored pack does not decode (a
 * corrupted database): nothing of it touched, its rows stay rows (the
 * timeline reads rows and packs; its window answers an error) and the
 * other ranges of the transaction still pack. */
#define TLP_BAD 1

/* One range: the pack's buckets read into w, its rows deleted into v,
 * the two added, the pack written.  *rows: how many rows went.  The pack
 * is decoded before the rows go: one that does not decode answers
 * TLP_BAD having changed nothing, so the transaction is not rolled back
 * for it (only this pass and ingest write tlpack, both under the writer's
 * lock: advisory lock 7242). */
static int pack_one(srv_store *s, const sq_tlp_kind *k, const tlp_group *g,
                    uint64_t *rows)
{
    sq_tlb v[SQ_TLP_N], w[SQ_TLP_N], m[SQ_TLP_N];
    unsigned char out[SQ_TLP_BYTES_MAX];
    const void *p;
    size_t nv = 0, nw = 0, nm = 0, len;
    sdb_stmt *st = NULL;
    char sql[256];
    int rc;

    *rows = 0;
    snprintf(sql, sizeof(sql),
             "SELECT data FROM %s WHERE sess=?1 AND lvl=?2 AND %s=?3 AND"
             " b0=?4",
             k->packs, k->lane);
    if (sdb_prepare(s->w, sql, &st))
        return GPUFL_EINTERNAL;
    bind_group(st, g);
    rc = sdb_step(st);
    if (rc == SDB_ROW) {
        p = qcol_blob(st, 0, &len);
        rc = sq_tlp_decode(p, len, g->b0, w, &nw) ? TLP_BAD : GPUFL_OK;
    } else {
        rc = rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
    }
    sdb_finalize(st);
    if (rc == TLP_BAD)
        glog_debug(k->packs,
                   "session %lld level %lld %s %lld b0 %lld: its pack does"
                   " not decode; its rows stay",
                   (long long)g->sess, (long long)g->lvl, k->lane_word,
                   (long long)g->lane, (long long)g->b0);
    if (rc)
        return rc;

    /* a table without a top kernel packs 0 for it (two bytes a bucket):
     * a pack that decodes holds top 0, none in the sum either */
    snprintf(sql, sizeof(sql),
             "DELETE FROM %s WHERE sess=?1 AND lvl=?2 AND %s=?3 AND b >= ?4"
             " AND b < ?5 RETURNING b, n, busy, %s",
             k->rows, k->lane, k->top ? "top_name, top_dur" : "0, 0");
    if (sdb_prepare(s->w, sql, &st))
        return GPUFL_EINTERNAL;
    bind_group(st, g);
    qbind_i64(st, 5, g->b0 + SQ_TLP_N);
    /* the key holds at most SQ_TLP_N rows of a range */
    while ((rc = sdb_step(st)) == SDB_ROW && nv < SQ_TLP_N) {
        v[nv] = (sq_tlb){ qcol_i64(st, 0), qcol_i64(st, 1), qcol_i64(st, 2),
                          qcol_i64(st, 3), qcol_i64(st, 4) };
        nv++;
    }
    sdb_finalize(st);
    if (rc != SDB_DONE)
        return rc == SDB_ROW ? GPUFL_EINTERNAL : sq_err(rc);
    *rows = nv;
    if (!nv)
        return GPUFL_OK;
    qsort(v, nv, sizeof(v[0]), by_b);

    /* both in b order: merged, a bucket in both added */
    nm = sq_tlb_merge(v, nv, w, nw, m);
    len = sq_tlp_encode(m, nm, g->b0, out);
    snprintf(sql, sizeof(sql),
             "INSERT INTO %s VALUES(?1, ?2, ?3, ?4, ?5)"
             " ON CONFLICT(sess, lvl, %s, b0) DO UPDATE SET data=excluded.data",
             k->packs, k->lane);
    if (sdb_prepare(s->w, sql, &st))
        return GPUFL_EINTERNAL;
    bind_group(st, g);
    qbind_blob(st, 5, out, len);
    rc = qrun(st);
    sdb_finalize(st);
    return rc ? sq_err(rc) : GPUFL_OK;
}

static int tlp_find(srv_store *s, void *ctx, size_t *n, int *more)
{
    tlp_pass *P = ctx;

    (void)more; /* one round: the next tick finds what is left */
    return groups_find(s, P->k, P->g, TLP_GROUPS, n);
}

/* A range a step, TLP_TX_GROUPS a transaction: counts packs and rows. */
static int tlp_step(srv_store *s, void *ctx, size_t i, sq_pass_tx *t, int *done)
{
    tlp_pass *P = ctx;
    uint64_t nr = 0;
    int rc = pack_one(s, P->k, &P->g[i], &nr);

    *done = 1;
    t->cost++;
    if (rc == TLP_BAD) {
        t->bad++;
        return GPUFL_OK;
    }
    t->cnt[0] += nr > 0;
    t->cnt[1] += nr;
    return rc;
}

int sq_tlp_pass(srv_store *s, const sq_tlp_kind *k, uint64_t *bad_last,
                uint64_t *packs, uint64_t *rows)
{
    uint64_t cnt[2] = { 0, 0 };
    sq_pass p = { .find = tlp_find,
                  .step = tlp_step,
                  .tx_cost = TLP_TX_GROUPS,
                  .tag = k->packs,
                  .bad_what = k->bad_what,
                  .bad_last = bad_last };
    tlp_pass *P;
    int rc;

    *packs = *rows = 0;
    if (sdb_dialect(s->w) != SDB_POSTGRES)
        return GPUFL_OK;
    if (!(P = malloc(sizeof(*P))))
        return GPUFL_ENOMEM;
    P->k = k;
    p.ctx = P;
    rc = sq_pass_run(s, &p, cnt);
    free(P);
    *packs = cnt[0];
    *rows = cnt[1];
    return rc;
}

int srv_store_tl_pack(srv_store *s, uint64_t *packs, uint64_t *rows)
{
    static const sq_tlp_kind tl = {
        .rows = "tl",
        .packs = "tlpack",
        .lane = "lane",
        .lane_word = "lane",
        .top = 1,
        .lvl_min = SQ_TLP_LVL_MIN,
        .lvl_max = SQ_TLP_LVL_MAX,
        .bad_what = "timeline range(s) have a pack that does not decode;"
                    " their rows stay rows and their windows answer an"
                    " error (--log-level=debug names them)"
    };
    return sq_tlp_pass(s, &tl, &s->tl_unpackable, packs, rows);
}
