/*
 * store_sql.c - the store's connections and the writer's statements: open
 * (the schema migrated forward first: store_sql_schema.c) and close; one
 * implementation for SQLite and PostgreSQL over db.h.
 *
 * One writer connection does all writes
 * under a mutex, through the batch writer of its database (SQLite: WAL,
 * synchronous=FULL, so a 200 means the batch is on disk); queries borrow
 * one of --readers read connections, which WAL lets run beside the
 * writer.
 */
#include "store_sql_writer_int.h"
#include "store_sql_blocks_w.h"
#include "store_sql_kblocks_read.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"

/* ---- the writer's statements ---- */

/* += one line's share into a waste rollup table T of time column C */
#define WASTE_ROLL_SQL(T, C)                                                   \
    "INSERT INTO " T " VALUES(?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(dim, " C      \
    ", key, model) DO UPDATE SET busy=" T ".busy+excluded.busy,"               \
    " w_idle=" T ".w_idle+excluded.w_idle,"                                    \
    " w_held=" T ".w_held+excluded.w_held,"                                    \
    " w_phantom=" T ".w_phantom+excluded.w_phantom,"                           \
    " w_stuck=" T ".w_stuck+excluded.w_stuck,"                                 \
    " w_alloc=" T ".w_alloc+excluded.w_alloc, simulated=CASE WHEN"             \
    " excluded.simulated > " T ".simulated THEN excluded.simulated ELSE " T    \
    ".simulated END"

const char *const sq_wsql[WS_N] = {
    [WS_SESS_FIND] = "SELECT id FROM sessions WHERE sid=?",
    [WS_SESS_ADD] = "INSERT INTO sessions(sid, last_seen) VALUES(?, ?)"
                    " RETURNING id",
    [WS_SESS_HEADER] =
        "UPDATE sessions SET app=?1, host=?2, pid=?3, start_ns=?4, lib=?5,"
        " simulated=?6, header=?7, job=?9, rank=?10, world_size=?11,"
        " local_rank=?12, job_source=?13, step_scope=?14, sim_perturb=?15"
        " WHERE id=?8 AND header IS NULL",
    /* ?1: the stream's bit; the session ends with the last of its
     * streams (the SET expressions all read the row as it was) */
    [WS_SESS_END] =
        "UPDATE sessions SET ended=ended | ?1, end_reason=CASE WHEN"
        " ((ended | ?1) & streams) = streams THEN ?2 ELSE end_reason END,"
        " state=CASE WHEN ((ended | ?1) & streams) = streams THEN 'ended'"
        " ELSE state END WHERE id=?3",
    /* a session line's "streams": fewer may all have ended already */
    [WS_SESS_STREAMS] =
        "UPDATE sessions SET streams=?1, state=CASE WHEN ended <> 0 AND"
        " (ended & ?1) = ?1 THEN 'ended' ELSE state END WHERE id=?2",
    /* ?11..?14: the batch's API call bounds, INT64_MAX (lo) or INT64_MIN
     * (hi) when it had none: never below/above a stored one then */
    [WS_SESS_TOUCH] =
        "UPDATE sessions SET first_ts=CASE WHEN first_ts IS NULL OR"
        " first_ts > ?1 THEN ?1 ELSE first_ts END,"
        " last_ts=CASE WHEN last_ts IS NULL OR last_ts < ?2 THEN ?2 ELSE"
        " last_ts END, last_seen=?3,"
        " n_lines=n_lines+?4, n_kernels=n_kernels+?5, n_ops=n_ops+?6,"
        " n_scopes=n_scopes+?7, n_samples=n_samples+?8,"
        " n_profile=n_profile+?9,"
        " state=CASE WHEN state='stale' THEN 'running' ELSE state END,"
        " api_lo=CASE WHEN ?11 < coalesce(api_lo, 9223372036854775807) THEN"
        " ?11 ELSE api_lo END,"
        " api_hi=CASE WHEN ?12 > coalesce(api_hi, -9223372036854775807 - 1)"
        " THEN ?12 ELSE api_hi END,"
        " op_lo=CASE WHEN ?13 < coalesce(op_lo, 9223372036854775807) THEN"
        " ?13 ELSE op_lo END,"
        " op_hi=CASE WHEN ?14 > coalesce(op_hi, -9223372036854775807 - 1)"
        " THEN ?14 ELSE op_hi END"
        " WHERE id=?10",
    [WS_LINE] = "INSERT INTO lines VALUES(?,?,?,?,?,?) ON CONFLICT DO NOTHING",
    [WS_DICT] = "INSERT INTO dicts VALUES(?,?,?,?,?,?,?,?,?,?,?,?,"
                "?,?,?,?,?,?) ON CONFLICT DO NOTHING",
    [WS_DICT_GET] = "SELECT name_id, regs, smem, dsmem, occ, bx, by, bz"
                    " FROM dicts WHERE sess=? AND id=? AND kind=3",
    [WS_KERNEL] = "INSERT INTO kernels VALUES(?,?,?,?,?,?,?,?,?,?,"
                  "?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
    [WS_OP] = "INSERT INTO ops VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON"
              " CONFLICT DO NOTHING",
    [WS_KLONG] =
        "INSERT INTO klong VALUES(?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
    [WS_SCOPE] = "INSERT INTO scopes VALUES(?,?,?,?,?,?,?,?,?,?,?,?) ON "
                 "CONFLICT DO NOTHING",
    [WS_SASS] = "INSERT INTO sass VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,"
                "?,?) ON CONFLICT DO NOTHING",
    [WS_STALL] = "INSERT INTO stalls VALUES(?,?,?,?) ON CONFLICT DO NOTHING",
    [WS_SAMPLE] = "INSERT INTO samples VALUES(?,?,?,?,?,?,?,?,?,?,"
                  "?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
    [WS_KAGG_GET] = "SELECT n, total, min, max, sum_occ, n_occ, regs, smem,"
                    " hist FROM kagg WHERE sess=? AND name_id=?",
    [WS_KAGG_PUT] = "INSERT INTO kagg VALUES(?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT"
                    "(sess, name_id) DO UPDATE SET n=excluded.n,"
                    " total=excluded.total, min=excluded.min,"
                    " max=excluded.max, sum_occ=excluded.sum_occ,"
                    " n_occ=excluded.n_occ, regs=excluded.regs,"
                    " smem=excluded.smem, hist=excluded.hist",
    /* sums of durations saturate at 2^63-1 (SQLite would turn an
     * overflowing sum into a REAL, PostgreSQL fail the batch) */
    [WS_TL] = "INSERT INTO tl VALUES(?,?,?,?,?,?,?,?) ON CONFLICT(sess, lvl,"
              " lane, b) DO UPDATE SET n=tl.n+excluded.n,"
              " busy=CASE WHEN tl.busy > 9223372036854775807 - excluded.busy"
              " THEN 9223372036854775807 ELSE tl.busy+excluded.busy END,"
              " top_name=CASE WHEN excluded.top_dur>tl.top_dur OR"
              " (excluded.top_dur=tl.top_dur AND"
              " excluded.top_name>tl.top_name) THEN"
              " excluded.top_name ELSE tl.top_name END,"
              " top_dur=CASE WHEN excluded.top_dur>tl.top_dur THEN"
              " excluded.top_dur ELSE tl.top_dur END",
    [WS_KSCOPE] = "INSERT INTO kscope VALUES(?,?,?,?) ON CONFLICT(sess, scope)"
                  " DO UPDATE SET n=kscope.n+excluded.n,"
                  " gpu_ns=CASE WHEN kscope.gpu_ns > 9223372036854775807"
                  " - excluded.gpu_ns THEN 9223372036854775807 ELSE"
                  " kscope.gpu_ns+excluded.gpu_ns END",
    [WS_EXT_LOAD0] = "SELECT dur, seq FROM kext WHERE sess=? AND side=0"
                     " ORDER BY dur DESC, seq DESC LIMIT ?",
    [WS_EXT_LOAD1] = "SELECT dur, seq FROM kext WHERE sess=? AND side=1"
                     " ORDER BY dur, seq LIMIT ?",
    /* the kernels in blocks count (store_sql_kblocks.c) */
    [WS_KMAX] = "SELECT max(m) FROM (SELECT max(seq) AS m FROM kernels"
                " WHERE sess=?1 UNION ALL SELECT max(seq_hi) FROM kblocks"
                " WHERE sess=?1) t",
    [WS_EXT_COUNT] = "SELECT n_kernels, kext_ver FROM sessions WHERE id=?",
    [WS_EXT_VER] = "SELECT kext_ver FROM sessions WHERE id=?",
    [WS_EXT_BUMP] = "UPDATE sessions SET kext_ver=kext_ver+1 WHERE id=?"
                    " RETURNING kext_ver",
    [WS_SRL_GET] = "SELECT n, t0" SRL_LIST(SRL_GETC) " FROM srl WHERE sess=?"
                                                     " AND src=? AND b=?",
    [WS_SRL_PUT] = "INSERT INTO srl VALUES(?,?,?,?,?" SRL_LIST(
        SRL_Q4) ") ON CONFLICT(sess, src, b) DO UPDATE SET t0=excluded.t0,"
                " n=excluded.n" SRL_LIST(SRL_SET),
    [WS_EXT_PUT] = "INSERT INTO kext VALUES(?,?,?,?) ON CONFLICT DO NOTHING",
    [WS_EXT_DEL] = "DELETE FROM kext WHERE sess=? AND side=? AND dur=? AND"
                   " seq=?",
    /* ... and the row kept for that key (store_sql_kxrow.c) */
    [WS_KX_DEL] = "DELETE FROM kxrow WHERE sess=? AND side=? AND dur=? AND"
                  " seq=?",
    /* seq ranges (store_sql_gaps.c): extend a known range, take the range
     * starting just above a run, extend the range ending just below it,
     * or add the run as a range */
    [WS_SEQ_EXT] = "UPDATE seqr SET hi=?1 WHERE sess=?2 AND st=?3 AND lo=?4"
                   " AND hi=?5",
    [WS_SEQ_TAKE] = "DELETE FROM seqr WHERE sess=?1 AND st=?2 AND lo=?3"
                    " RETURNING hi",
    [WS_SEQ_JOIN] = "UPDATE seqr SET hi=?1 WHERE sess=?2 AND st=?3 AND hi=?4"
                    " AND lo=(SELECT max(lo) FROM seqr WHERE sess=?2 AND"
                    " st=?3 AND lo <= ?4) RETURNING lo",
    [WS_SEQ_ADD] = "INSERT INTO seqr VALUES(?1, ?2, ?3, ?4) ON CONFLICT(sess,"
                   " st, lo) DO UPDATE SET hi=CASE WHEN excluded.hi > seqr.hi"
                   " THEN excluded.hi ELSE seqr.hi END",
    /* GPU waste (store_sql_waste.c) */
    [WS_WASTE_PUT] = "INSERT INTO waste VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
                     "?,?,?,?,?,?) ON CONFLICT DO NOTHING",
    [WS_WASTE_ROLL] = WASTE_ROLL_SQL("wasteh", "hour"),
    [WS_WASTE_ROLLD] = WASTE_ROLL_SQL("wasted", "day"),
    [WS_VRUN_LAST] = "SELECT t0, t1, state, sess FROM vruns WHERE host=? AND"
                     " dev=? ORDER BY t0 DESC, sess DESC LIMIT 1",
    [WS_VRUN_EXT] = "UPDATE vruns SET t1=? WHERE host=? AND dev=? AND t0=?"
                    " AND sess=?",
    [WS_VRUN_ADD] = "INSERT INTO vruns VALUES(?, ?, ?, ?, ?, ?) ON CONFLICT"
                    " DO NOTHING",
};

int sq_err(int rc)
{
    return sdb_err(rc);
}

uint64_t sq_one(sdb *db, const char *sql)
{
    sdb_stmt *st = NULL;
    uint64_t v = 0;

    if (sdb_prepare(db, sql, &st) == 0 && sdb_step(st) == SDB_ROW &&
        !qcol_null(st, 0))
        v = (uint64_t)qcol_i64(st, 0);
    sdb_finalize(st);
    return v;
}

/* ---- pool, open, close ---- */

sdb *sq_reader_get(srv_store *s)
{
    sdb *db = NULL;

    pthread_mutex_lock(&s->rlock);
    for (;;) {
        for (unsigned i = 0; i < s->nr; i++) {
            if (s->rfree[i]) {
                s->rfree[i] = 0;
                db = s->r[i];
                break;
            }
        }
        if (db)
            break;
        pthread_cond_wait(&s->rcond, &s->rlock);
    }
    pthread_mutex_unlock(&s->rlock);
    return db;
}

void sq_reader_put(srv_store *s, sdb *db)
{
    pthread_mutex_lock(&s->rlock);
    for (unsigned i = 0; i < s->nr; i++)
        if (s->r[i] == db)
            s->rfree[i] = 1;
    pthread_cond_signal(&s->rcond);
    pthread_mutex_unlock(&s->rlock);
}

const char *srv_store_backend(const srv_store *s)
{
    return s->wr->name;
}

int srv_store_capi0_computed(const srv_store *s)
{
    return s->capi0_query;
}

void srv_store_close(srv_store *s)
{
    if (!s)
        return;
    sq_ckpt_stop(s); /* before the writer's last statements */
    if (s->wr)
        s->wr->close(s);
    for (int i = 0; i < WS_N; i++)
        sdb_finalize(s->ws[i]);
    sq_capi_release(s); /* its statements: before the connection */
    sq_obi_release(s);  /* the same */
    sdb_finalize(s->kb_names_st);
    for (int i = 0; i < SQ_KX_PUT_N; i++)
        sdb_finalize(s->kx_put_st[i]);
    for (int i = 0; i < 3; i++)
        sdb_finalize(s->kb_put_st[i]);
    for (int i = 0; i < 4; i++)
        sdb_finalize(s->kx_bound_st[i / 2][i % 2]);
    for (unsigned i = 0; i < s->nr; i++)
        sdb_close(s->r[i]);
    sdb_close(s->w);
    rl_map_release(&s->sess_cache);
    rl_map_release(&s->launch_cache);
    rl_map_release(&s->kagg);
    rl_map_release(&s->tl);
    rl_map_release(&s->kscope);
    rl_map_release(&s->sacc);
    rl_map_release(&s->srl);
    sq_kcount_release(s);
    sq_ext_release(s);
    sq_gaps_release(s);
    sq_kbi_release(s);
    sq_kbp_release(s);
    sq_kb_prep_release(s);
    sq_kb_release(s);
    sq_kc_release(s);
    sq_kb_read_release(s);
    pthread_mutex_destroy(&s->wlock);
    pthread_mutex_destroy(&s->gq_lock);
    pthread_cond_destroy(&s->gq_cond);
    pthread_mutex_destroy(&s->rlock);
    sq_health_release(s);
    pthread_cond_destroy(&s->rcond);
    free(s);
}

int srv_store_open(const char *url, unsigned readers, srv_store **out, char *eb,
                   size_t ec)
{
    srv_store *s = calloc(1, sizeof(*s));
    int rc;

    *out = NULL;
    if (!s)
        return GPUFL_ENOMEM;
    if ((rc = srv_store_set_kblock_cache(s, SRV_KBC_DEFAULT)) != 0) {
        free(s);
        return rc;
    }
    pthread_mutex_init(&s->wlock, NULL);
    pthread_mutex_init(&s->gq_lock, NULL);
    pthread_cond_init(&s->gq_cond, NULL);
    pthread_mutex_init(&s->rlock, NULL);
    sq_health_init(s, url);
    pthread_cond_init(&s->rcond, NULL);
    rl_map_init(&s->sess_cache, sizeof(int64_t), SQ_CACHE_MAX);
    rl_map_init(&s->launch_cache, sizeof(sq_launch), SQ_CACHE_MAX);
    rl_map_init(&s->kagg, sizeof(sq_kagg), SQ_ACC_MAX);
    rl_map_init(&s->tl, sizeof(sq_tl), SQ_ACC_MAX);
    rl_map_init(&s->kscope, 2 * sizeof(uint64_t), SQ_ACC_MAX);
    rl_map_init(&s->sacc, sizeof(sq_sacc), SQ_ACC_MAX);
    rl_map_init(&s->srl, sizeof(sq_srl), SQ_ACC_MAX / 64);
    sq_capi_init(s);
    rl_map_init(&s->seqhint, sizeof(sq_run), SQ_CACHE_MAX);
    s->ext_k = SQ_EXT_K;
    {
        /* a smaller K lets tests cross it with a few kernels */
        const char *k = getenv("GPUFL_SERVER_TOPK");
        if (k && *k && strtoul(k, NULL, 10) >= 1 &&
            strtoul(k, NULL, 10) <= SQ_EXT_K_MAX)
            s->ext_k = (uint32_t)strtoul(k, NULL, 10);
    }
    if ((rc = sdb_open(url, 0, &s->w, eb, ec)) != 0)
        goto fail;
    sdb_set_watch(s->w, sq_health_watch, s);
    s->wr =
        sdb_dialect(s->w) == SDB_POSTGRES ? &sq_writer_pg : &sq_writer_sqlite;
    /* computed capi level 0: store_sql_int.h says why PostgreSQL only */
    s->capi0_query = sdb_dialect(s->w) == SDB_POSTGRES;
    if ((rc = s->wr->setup(s)) != 0) {
        snprintf(eb, ec, "cannot set up the database: %s", sdb_errmsg(s->w));
        goto fail;
    }
    if ((rc = sq_schema_migrate(s->w, eb, ec)) != 0)
        goto fail;
    for (int i = 0; i < WS_N; i++) {
        if ((rc = sdb_prepare(s->w, sq_wsql[i], &s->ws[i])) != 0) {
            snprintf(eb, ec, "prepare %d: %s", i, sdb_errmsg(s->w));
            goto fail;
        }
    }
    if ((rc = s->wr->open(s, eb, ec)) != 0)
        goto fail;
    if (readers < 1)
        readers = 1;
    if (readers > SQ_READERS_MAX)
        readers = SQ_READERS_MAX;
    for (unsigned i = 0; i < readers; i++) {
        if ((rc = sdb_open(url, 1, &s->r[i], eb, ec)) != 0)
            goto fail;
        sdb_set_watch(s->r[i], sq_health_watch, s);
        s->nr = i + 1;
        s->rfree[i] = 1;
        if (sdb_dialect(s->r[i]) == SDB_POSTGRES) {
            sdb_set_setup(s->r[i], SQ_PG_SETUP);
            if ((rc = sdb_exec(s->r[i], SQ_PG_SETUP)) != 0)
                goto fail;
        }
    }
    /* past its start a failure is a warning: SQLite checkpoints at
     * commit instead */
    if (sq_ckpt_start(s, url) != 0)
        glog_warn("store", "no WAL checkpointer thread: checkpoints at"
                           " commit");
    *out = s;
    return GPUFL_OK;
fail:
    srv_store_close(s);
    return rc ? rc : GPUFL_EINTERNAL;
}
