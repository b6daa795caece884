/*
 * store_sql_capi.c - the CUDA API calls' summary kept at ingest (table
 * capi, docs/api.md "calls"): per session, CPU thread and time bucket of
 * each timeline level (rollup.h), the calls started in the bucket and the
 * ns of it they cover, so that a zoomed-out /calls answer reads a few
 * thousand buckets instead of every call row (store_sql_q_calls_sum.c).
 *
 * Exact as the kernels' rollups are: only a line the database took as new
 * feeds it (count_line in store_sql_ingest.c), so a replayed batch adds
 * nothing; the batch's buckets are gathered in memory and merged once
 * per touched row before COMMIT.  A call longer than RL_TL_LONG_NS would
 * spread over more than RL_TL_SPAN_MAX buckets of level 0: its busy time
 * is kept apart (capi_long) and spread by the query; it still counts in
 * its first bucket.  With --kernel-store=blocks on PostgreSQL level 0
 * is not written (computed by the query: store_sql_q_capi0.c).
 */
#include "store_sql_writer_int.h"

#include "common/buf.h"
#include "store_sql_capipack.h"

#include <gpufl/gpufl.h>

#include <stdlib.h>
#include <string.h>

/* One bucket: calls started in it, ns of it covered. */
typedef struct capi_b {
    uint64_t n, busy;
} capi_b;

/* The call of line e (the same ones store_sql_q_calls.c reads back):
 * a launch's or copy's API call, a sync's wait; 0 when e has none. */
static int call_of(const srv_ev *e, uint64_t *ts, uint64_t *dur)
{
    if (e->type == EV_SYNC) {
        *ts = e->ts;
        *dur = e->dur;
        return 1;
    }
    if ((e->type != EV_KERNEL && e->type != EV_MEMCPY &&
         e->type != EV_MEMSET) ||
        !e->api_dur)
        return 0;
    /* ingest.c checked the entry and exit are times */
    *ts = e->ts + (uint64_t)e->api_off;
    *dur = e->api_dur;
    return 1;
}

static int prep(srv_store *s, sdb_stmt **st, const char *sql)
{
    return *st ? GPUFL_OK : sdb_prepare(s->w, sql, st);
}

/* The finest level written: with blocks on PostgreSQL, level 0 is
 * computed from the calls when asked (store_sql_q_capi0.c). */
static int capi_lv0(const srv_store *s)
{
    return s->kstore_blocks && s->capi0_query ? 1 : 0;
}

/* A run (sq_capirun: calls each within one bucket of the finest level
 * written, so within one of every level, their whole time in it) into
 * s->capi at its bucket of every level written.  The sums saturate and
 * are of non-negative values, so the order they come in does not change
 * a row. */
static int capi_push(srv_store *s, const sq_capirun *r)
{
    rl_memo *memo = s->capi_memo[sq_memo_slot(r->tid)];
    int lv0 = capi_lv0(s), fresh;
    unsigned sh0 = rl_tl_shift(lv0);

    for (int lv = lv0; lv < RL_TL_LEVELS; lv++) {
        uint64_t k[4] = { (uint64_t)r->sess, (uint64_t)lv,
                          r->b >> (rl_tl_shift(lv) - sh0), r->tid };
        capi_b *v = rl_map_get_memo(&s->capi, &memo[lv], k, &fresh);
        if (!v)
            return GPUFL_EFULL;
        v->n += r->n;
        v->busy = rl_sat_add(v->busy, r->busy);
    }
    return GPUFL_OK;
}

static int capi_runs_flush(srv_store *s)
{
    for (int i = 0; i < SQ_MEMO_N; i++) {
        sq_capirun *r = &s->capi_run[i];
        int rc;
        if (!r->used)
            continue;
        r->used = 0;
        if ((rc = capi_push(s, r)) != 0)
            return rc;
    }
    return GPUFL_OK;
}

int sq_capi_acc(srv_store *s, int64_t sess, const srv_ev *e)
{
    uint64_t ts, dur, end, tid, b0;
    int fresh, rc, lng, lv0;
    unsigned sh0;
    rl_memo *memo;

    if (!call_of(e, &ts, &dur))
        return GPUFL_OK;
    end = ts + dur;
    tid = e->tid & 0xffffffffu; /* as the query reads it back */
    lng = dur > RL_TL_LONG_NS;
    memo = s->capi_memo[sq_memo_slot(tid)];
    if (lng) {
        sdb_stmt *st;
        if ((rc = prep(s, &s->capi_long_put,
                       "INSERT INTO capi_long VALUES(?,?,?,?,?) ON CONFLICT"
                       " DO NOTHING")) != 0)
            return rc;
        st = s->capi_long_put;
        qbind_i64(st, 1, sess);
        qbind_u64(st, 2, ts);
        qbind_u64(st, 3, e->seq);
        qbind_u64(st, 4, tid);
        qbind_u64(st, 5, dur);
        if ((rc = qrun(st)) != 0)
            return rc;
    }
    /* with blocks on PostgreSQL, level 0 is computed from the calls when
     * asked (store_sql_q_capi0.c): not written (why: capi0_query) */
    lv0 = capi_lv0(s);
    sh0 = rl_tl_shift(lv0);
    b0 = ts >> sh0;
    if (!lng && (!dur || (end - 1) >> sh0 == b0)) {
        /* within one bucket: onto its thread's run (sq_capirun) */
        sq_capirun *r = &s->capi_run[sq_memo_slot(tid)];
        if (!r->used || r->b != b0 || r->tid != tid || r->sess != sess) {
            if (r->used && (rc = capi_push(s, r)) != 0)
                return rc;
            *r = (sq_capirun){ .sess = sess, .tid = tid, .b = b0, .used = 1 };
        }
        r->n++;
        r->busy = rl_sat_add(r->busy, dur);
        return GPUFL_OK;
    }
    for (int lv = lv0; lv < RL_TL_LEVELS; lv++) {
        unsigned sh = rl_tl_shift(lv);
        uint64_t b1;
        b0 = ts >> sh;
        b1 = dur ? (end - 1) >> sh : b0;
        if (lng)
            b1 = b0; /* its busy time: capi_long */
        for (uint64_t b = b0; b <= b1; b++) {
            uint64_t k[4] = { (uint64_t)sess, (uint64_t)lv, b, tid };
            uint64_t lo = b << sh, hi = (b + 1) << sh;
            capi_b *v = rl_map_get_memo(&s->capi, &memo[lv], k, &fresh);
            if (!v)
                return GPUFL_EFULL;
            if (b == b0)
                v->n++;
            if (!lng)
                v->busy = rl_sat_add(v->busy, (end < hi ? end : hi) -
                                                  (ts > lo ? ts : lo));
        }
    }
    return GPUFL_OK;
}

/* A bucket merged into its stored row; sums saturate at 2^63-1 as tl's
 * do (store_sql.c WS_TL). */
#define CAPI_MERGE                                                             \
    " ON CONFLICT(sess, lvl, b, tid) DO UPDATE SET n=capi.n+excluded.n,"       \
    " busy=CASE WHEN capi.busy > 9223372036854775807 -"                        \
    " excluded.busy THEN 9223372036854775807 ELSE"                             \
    " capi.busy+excluded.busy END"
static const char capi_put_sql[] =
    "INSERT INTO capi VALUES(?,?,?,?,?,?)" CAPI_MERGE;

/* SQLite writes level 0 packed (capipack; docs/server.md "API call
 * summary level 0 packed on SQLite"): ~536 upserted rows of a
 * 10 000-kernel batch, four in five of capi's, become ~10-20 packs read,
 * merged and written back (store_sql_tl1.c, as the timeline's level 1). */
static void capi_val(const void *v, sq_tlb *t)
{
    const capi_b *x = v;
    t->n = (int64_t)x->n;
    t->busy = (int64_t)x->busy;
}

/* capi_put_sql's parameters: sess, lvl, b, tid, n, busy */
static void capi_row(sdb_stmt *rows, const sq_tl1_el *e, int lvl)
{
    int64_t c[6] = { e->sess, lvl, e->t.b, e->lane, e->t.n, e->t.busy };
    for (int j = 0; j < 6; j++)
        qbind_i64(rows, j + 1, c[j]);
}

static const sq_tl1_kind capi_kind = { .packs = "capipack",
                                       .lane = "tid",
                                       .lvl = SQ_CAPP_LITE_LVL,
                                       .lane_k = 3,
                                       .b_k = 2,
                                       .val = capi_val,
                                       .row = capi_row };

/* PostgreSQL (sq_writer.roll_put): the batch's buckets as one array a
 * column, split by the highest stored bucket of their (sess, lvl) (m, one
 * backward probe of the primary key (sess, lvl, b, tid) each): those
 * above it are new and go by a plain INSERT, the rest - the buckets the
 * last batch left open, of any thread - by the upsert, as tl's rows do
 * (store_sql_ingest_pg.c tl_put_head; ON CONFLICT costs a new row a probe
 * more).  m is per (sess, lvl), not per thread: the key has b before
 * tid, so a thread's highest bucket is no probe.  The split is exact
 * because only ingest inserts into capi and batches take turns (the
 * advisory lock); the packer (store_sql_capipack.c) and the level-0 drop
 * only delete, which can lower m and so only send more rows the plain
 * way that have no stored row.  Were a row there after all, the plain
 * INSERT would fail the batch (retried), not count twice. */
static const char capi_arr_sql[] =
    "WITH v AS MATERIALIZED (SELECT * FROM unnest(?::bigint[], ?::bigint[],"
    " ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[])"
    " v(sess, lvl, b, tid, n, busy)),"
    " h AS MATERIALIZED (SELECT g.sess, g.lvl, (SELECT max(t.b) FROM capi t"
    " WHERE t.sess=g.sess AND t.lvl=g.lvl) m"
    " FROM (SELECT DISTINCT sess, lvl FROM v) g),"
    " w AS (INSERT INTO capi SELECT v.* FROM v JOIN h USING (sess, lvl)"
    " WHERE h.m IS NULL OR v.b > h.m)"
    " INSERT INTO capi SELECT v.* FROM v JOIN h USING (sess, lvl)"
    " WHERE v.b <= h.m" CAPI_MERGE;

/* capi's columns in the table's order: the key, n, busy - signed, as
 * qbind_u64 binds them on the row-at-a-time path */
static void capi_col(gbuf *cb, const uint64_t *k, void *v, int c)
{
    const capi_b *x = v;

    sq_av_i64(cb, (int64_t)(c < 4 ? k[c] : c == 4 ? x->n : x->busy));
}

int sq_capi_flush(srv_store *s)
{
    const uint64_t *k;
    int rc;

    if ((rc = capi_runs_flush(s)) != 0)
        return rc;
    if (!s->capi.n)
        return GPUFL_OK;
    /* PostgreSQL: one statement, not a round trip a bucket (a batch of
     * 10 000 kernels touches ~700 buckets: a fifth of the server's
     * statement time, docs/server.md "Ingest statements"); capi_put holds
     * the writer's own statement */
    if (s->wr->roll_put)
        return (rc = prep(s, &s->capi_put, capi_arr_sql)) != 0
                   ? rc
                   : s->wr->roll_put(s, s->capi_put, &s->capi, 6, SQ_CB_COL,
                                     capi_col);
    if ((rc = prep(s, &s->capi_put, capi_put_sql)) != 0)
        return rc;
    if (!s->capi_put_grp &&
        (rc = sq_upgroup_prepare(s->w, capi_put_sql, 6, &s->capi_put_grp)) != 0)
        return rc;
    /* level 0 into its packs, the other levels as rows */
    if (!s->capi_pk &&
        (rc = sq_lite_tl1_open(s->w, &capi_kind, &s->capi_pk)) != 0) {
        sq_lite_tl1_close(s->capi_pk);
        s->capi_pk = NULL;
        return rc;
    }
    if ((rc = sq_lite_tl1_put(s->capi_pk, &s->capi, s->capi_put)) != 0)
        return rc;
    /* SQ_UPGROUP rows a statement (store_sql_upgroup.c) */
    uint64_t v[SQ_UPGROUP * 6];
    size_t nv = 0;
    for (size_t i = 0; i < s->capi.cap; i++) {
        capi_b *b = rl_map_at(&s->capi, i, &k);
        if (!b || k[1] == (uint64_t)capi_kind.lvl)
            continue;
        memcpy(&v[nv * 6], k, 4 * sizeof(uint64_t));
        v[nv * 6 + 4] = b->n;
        v[nv * 6 + 5] = b->busy;
        if (++nv == SQ_UPGROUP) {
            if ((rc = sq_upgroup_run(s->capi_put_grp, s->capi_put, v, nv, 6)) !=
                0)
                return rc;
            nv = 0;
        }
    }
    return sq_upgroup_run(s->capi_put_grp, s->capi_put, v, nv, 6);
}

void sq_capi_init(srv_store *s)
{
    rl_map_init(&s->capi, sizeof(capi_b), SQ_ACC_MAX);
}

void sq_capi_release(srv_store *s)
{
    sdb_finalize(s->capi_put);
    sdb_finalize(s->capi_put_grp);
    sdb_finalize(s->capi_long_put);
    sq_lite_tl1_close(s->capi_pk);
    s->capi_pk = NULL;
    s->capi_put = s->capi_long_put = s->capi_put_grp = NULL;
    rl_map_release(&s->capi);
}
