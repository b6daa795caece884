/*
 * store_sql_ext_pg.c - the PostgreSQL writer's duration-sort keys: the
 * keys entering and leaving the kept heaps (kext) and the kept rows
 * (kxrow), a batch's as a few statements with the keys as arrays
 * (binary, sq_arr_bind), for
 * sq_writer_pg (store_sql_ingest_pg.c) through sq_pg_kext and
 * sq_pg_kxrows (store_sql_writer_int.h).
 */
#include "store_sql_writer_int.h"

#include "common/buf.h"
#include "common/log.h"
#include "kblock.h"

#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* A batch's kext changes go as one statement for the keys leaving each
 * table and one for those entering kext, the keys bound as bigint[]
 * (sq_arr_bind) and read through unnest: the statements are prepared once per
 * connection, whatever the number of keys.  Chunks of 256 keys as
 * parameters (before) cost a round trip each, and each delete chunk read
 * the whole (sess, side) range of kext or kxrow - the planner hashed the
 * range, SQ_EXT_K keys and their dead versions, and probed it with the
 * chunk's keys (docs/server.md "kext changes in one statement").
 * EXT_ARR_MAX keys per statement at most bounds the arrays' size. */
#define EXT_ARR_MAX 65536

/* Each key found by its own probe of the primary key (the LIMIT keeps
 * the lateral subquery from being flattened into a join), the rows then
 * deleted by their ctids.  A join with the keys left the plan to the
 * planner: a hash of the whole (sess, side) range (12 ms a statement at
 * 4k rows, custom plans) or, before ANALYZE had seen kext and with
 * "(dur, seq) IN (VALUES ...)", a nested loop comparing every row with
 * every key (200 ms).  The probes cost the same with any statistics and
 * either plan mode, ~4 us a key, so keys of any sessions and sides can
 * share a statement. */
#define EXT_DEL_SQL(t)                                                         \
    "DELETE FROM " t " WHERE ctid = ANY(ARRAY(SELECT x.ctid FROM"              \
    " unnest(?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[])"              \
    " v(a, b, d, s) CROSS JOIN LATERAL (SELECT ctid FROM " t " k"              \
    " WHERE k.sess=v.a AND k.side=v.b AND k.dur=v.d AND k.seq=v.s"             \
    " LIMIT 1) x))"
static const char *const ext_del_sql[2] = { EXT_DEL_SQL("kext"),
                                            EXT_DEL_SQL("kxrow") };

#define EXT_INS_SQL                                                            \
    "INSERT INTO kext(sess, side, dur, seq) SELECT * FROM"                     \
    " unnest(?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[])"
static const char ext_ins_sql[] = EXT_INS_SQL " ON CONFLICT DO NOTHING";
static const char ext_new_sql[] = EXT_INS_SQL;

/* Column c of keys e (0 sess, 1 side, 2 dur, 3 seq) for sq_arr_bind */
typedef struct ext_cur {
    const sq_ext_row *e;
    int c;
} ext_cur;

static void ext_el(gbuf *cb, void *ctx, size_t j)
{
    const ext_cur *x = ctx;
    const sq_ext_row *e = &x->e[j];

    sq_av_i64(cb, x->c == 0   ? e->sess
                  : x->c == 1 ? e->side
                  : x->c == 2 ? e->dur
                              : e->seq);
}

/* The n (<= EXT_ARR_MAX) keys e: deleted from table t (0: kext, 1: kxrow)
 * or inserted into kext (t -1: ON CONFLICT DO NOTHING, t -2: plainly). */
static int ext_run(srv_store *s, sq_pg_ext *pw, int t, const sq_ext_row *e,
                   size_t n)
{
    sdb_stmt **st = t == -2 ? &pw->kxnew : t < 0 ? &pw->kxput : &pw->kxdel[t];
    const char *sql = t == -2 ? ext_new_sql
                      : t < 0 ? ext_ins_sql
                              : ext_del_sql[t];
    int rc = GPUFL_OK;

    if (!n)
        return GPUFL_OK;
    if (!*st && sdb_prepare(s->w, sql, st))
        return GPUFL_EINTERNAL;
    for (int c = 0; c < 4 && !rc; c++)
        rc = sq_arr_bind(*st, c + 1, pw->cb, n, SDB_ARR_I64, SQ_CB_COL, ext_el,
                         &(ext_cur){ e, c });
    return rc ? rc : qsend(*st);
}

/* The n keys e leaving table t (-1, -2: entering kext, ext_run),
 * EXT_ARR_MAX a statement. */
static int ext_all(srv_store *s, sq_pg_ext *pw, int t, const sq_ext_row *e,
                   size_t n)
{
    int rc = GPUFL_OK;

    for (size_t i = 0; i < n && !rc; i += EXT_ARR_MAX)
        rc =
            ext_run(s, pw, t, &e[i], n - i < EXT_ARR_MAX ? n - i : EXT_ARR_MAX);
    return rc;
}

/* sq_writer.kxrows (sq_pg_kxrows): kxrow's 26 columns (sq_kernel_bind's, then side) as
 * arrays.  store_sql_kxrow.c's power-of-two INSERTs of up to 32 rows cost
 * ~2.7 statements a block, 1 063 round trips per 1M kernels for 10 300
 * rows, 11 us of statement time a row (docs/server.md "kxrow in one
 * statement"). */
static const char kx_ins_sql[] =
    "INSERT INTO kxrow SELECT * FROM unnest(?::bigint[], ?::bigint[],"
    " ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[],"
    " ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[],"
    " ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[],"
    " ?::double precision[], ?::bigint[], ?::bigint[], ?::bigint[],"
    " ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[])"
    " ON CONFLICT DO NOTHING";

/* Column c of the kept rows for sq_arr_bind */
typedef struct kx_cur {
    int64_t sess;
    const kblock_ev *ev;
    const uint32_t *ix;
    const uint8_t *sd;
    int c;
} kx_cur;

static void kx_el(gbuf *cb, void *ctx, size_t j)
{
    const kx_cur *x = ctx;
    const kblock_ev *e = &x->ev[x->ix[j]];
    int c = x->c;
    int64_t v;

    /* as sq_kernel_bind binds them: unsigned as signed, occ < 0 and tid 0
     * NULL */
    if ((c == 17 && e->occ < 0) || (c == 24 && !e->tid)) {
        sq_av_null(cb);
        return;
    }
    if (c == 17) {
        sq_av_f64(cb, e->occ);
        return;
    }
    switch (c) {
    case 0: v = x->sess; break;
    case 1: v = (int64_t)e->seq; break;
    case 2: v = (int64_t)e->ts; break;
    case 3: v = (int64_t)e->dur; break;
    case 4: v = (int64_t)e->dev; break;
    case 5: v = (int64_t)e->stream; break;
    case 6: v = (int64_t)e->corr; break;
    case 7: v = e->name_id; break;
    case 8: v = (int64_t)e->cfg; break;
    case 9:
    case 10:
    case 11: v = (int64_t)e->grid[c - 9]; break;
    case 12:
    case 13:
    case 14: v = e->block[c - 12]; break;
    case 15: v = e->regs; break;
    case 16: v = e->smem; break;
    case 18: v = (int64_t)e->scope; break;
    case 19: v = (int64_t)e->path; break;
    case 20: v = (int64_t)e->stack; break;
    case 21: v = e->api_off; break;
    case 22: v = (int64_t)e->api_dur; break;
    case 23: v = (int64_t)e->flags; break;
    case 24: v = (int64_t)e->tid; break;
    default: v = x->sd[j]; break; /* 25: side */
    }
    sq_av_i64(cb, v);
}

int sq_pg_kxrows(srv_store *s, sq_pg_ext *pw, int64_t sess, const kblock_ev *ev,
                 const uint32_t *ix, const uint8_t *sd, size_t m,
                 uint64_t *rows)
{
    int rc = GPUFL_OK;

    if (!pw->kxrow && sdb_prepare(s->w, kx_ins_sql, &pw->kxrow))
        return GPUFL_EINTERNAL;
    for (int c = 0; c < 26 && !rc; c++)
        rc = sq_arr_bind(pw->kxrow, c + 1, pw->cb, m,
                         c == 17 ? SDB_ARR_F64 : SDB_ARR_I64, SQ_CB_COL, kx_el,
                         &(kx_cur){ sess, ev, ix, sd, c });
    if (rc)
        return rc;
    /* uncounted rows (the writer's) are not waited for */
    if (!rows)
        return qsend(pw->kxrow);
    if ((rc = qrun(pw->kxrow)) != 0)
        return rc;
    *rows += (uint64_t)sdb_changes(s->w);
    return GPUFL_OK;
}

/* Range deletes of the keys leaving (sq_ext_cut_add) for at most
 * PG_EXT_CUTS sessions and sides a batch; keys past them by key. */
#define PG_EXT_CUTS 64

/* One session's rows of kext (and kxrow where nt is 2) at or past its
 * cuts, c[d] for side d (NULL: none; a row compared with NULLs is not
 * deleted), in one statement: per table and side a seek of the primary
 * key and the rows it removes, each range its own DELETE (data-modifying
 * WITH), where the keys' probes (ext_all) cost ~4 us a key more.  Both
 * sides in one DELETE (an OR of the two ranges) took 2.8x the probes' time
 * (docs/server.md "PostgreSQL ingest's CPU").  "dur BETWEEN ?6 AND ?2"
 * (?6 the smallest int64, ?7 the largest: true of every row) is there for
 * the planner: once a prepared statement goes generic, a row comparison
 * with a parameter is a third of the range, and with one session that is
 * ~1 400 rows of kext's 8 192, so each range became a sequential scan of
 * the table (2.1 ms a batch); a column between two parameters is 0.5 %
 * of it, so the seek stays (docs/server.md "PostgreSQL: kext cuts kept
 * on the index").  ?6 and ?7 are the far ends f[d] of the ranges (the
 * worst key leaving, sq_ext_cut_add): the rows past them were deleted by
 * earlier batches, and their dead index entries, which pile up there
 * until VACUUM, were each range's first seek's walk - ~38 000 a side over
 * a 1M-kernel session (docs/server.md "PostgreSQL: kext cuts start at
 * the worst key leaving"). */
static int ext_cut(srv_store *s, sq_pg_ext *pw, int nt,
                   const sq_ext_row *const c[2], const int64_t f[2])
{
    sdb_stmt **st = &pw->kxcut[nt - 1];

    if (!*st) {
        char sql[640];
        size_t n = 0;
        /* "WITH a0 AS (DELETE ...), a1 AS (...) DELETE ...": the last
         * range is the statement's own DELETE */
        for (int i = 0; i < 2 * nt; i++) {
            int d = i & 1, last = i == 2 * nt - 1;
            if (!last)
                n += (size_t)snprintf(sql + n, sizeof(sql) - n, "%sa%d AS (",
                                      i ? "" : "WITH ", i);
            n += (size_t)snprintf(
                sql + n, sizeof(sql) - n,
                "DELETE FROM %s WHERE sess=?1 AND side=%d"
                " AND dur BETWEEN ?%d AND ?%d AND (dur, seq) %s (?%d, ?%d)%s",
                i >> 1 ? "kxrow" : "kext", d, d ? 4 : 6, d ? 7 : 2,
                d ? ">=" : "<=", 2 + 2 * d, 3 + 2 * d, last ? "" : ") ");
            if (i < 2 * nt - 2)
                sql[n - 1] = ',', sql[n++] = ' ', sql[n] = 0;
        }
        if (sdb_prepare(s->w, sql, st))
            return GPUFL_EINTERNAL;
    }
    qbind_i64(*st, 1, c[0] ? c[0]->sess : c[1]->sess);
    qbind_i64(*st, 6, c[0] ? f[0] : INT64_MIN);
    qbind_i64(*st, 7, c[1] ? f[1] : INT64_MAX);
    for (int d = 0; d < 2; d++)
        if (c[d]) {
            qbind_i64(*st, 2 + 2 * d, c[d]->dur);
            qbind_i64(*st, 3 + 2 * d, c[d]->seq);
        } else {
            qbind_null(*st, 2 + 2 * d);
            qbind_null(*st, 3 + 2 * d);
        }
    return qsend(*st);
}

/* The keys entering kext.  They are new kernels' (sq_kernel_done feeds
 * the heaps only with kernels stored for the first time), so none should
 * be there, and a plain INSERT skips what ON CONFLICT DO NOTHING costs a
 * row - a probe of the primary key before the insert and the speculative
 * insertion's second WAL record: ~30 % of the statement, the largest of a
 * Kafka batch of 400k-kernel sessions (docs/server.md "kext keys inserted
 * plainly").  Should a key be there after all (a row its kernel outlived:
 * nothing known writes one), the plain INSERT fails inside a savepoint
 * and the keys go again by ON CONFLICT, so a stray row never fails the
 * batch. */
static int ext_put(srv_store *s, sq_pg_ext *pw, const sq_ext_row *put,
                   size_t nput)
{
    int rc;

    if (!nput)
        return GPUFL_OK;
    if ((rc = sdb_exec(s->w, "SAVEPOINT kext_put")) != 0)
        return rc;
    rc = ext_all(s, pw, -2, put, nput);
    /* the INSERTs are sent (sdb_send): their error comes with the RELEASE,
     * which then does not run */
    if (!rc && (rc = sdb_exec(s->w, "RELEASE SAVEPOINT kext_put")) == 0)
        return GPUFL_OK;
    if (rc == GPUFL_EUNAVAIL)
        return rc;
    glog_debug("store",
               "kext: a key entering was stored already (%s);"
               " the batch's keys go by ON CONFLICT",
               sdb_errmsg(s->w));
    if ((rc = sdb_exec(s->w, "ROLLBACK TO SAVEPOINT kext_put")) != 0)
        return rc;
    return ext_all(s, pw, -1, put, nput);
}

int sq_pg_kext(srv_store *s, sq_pg_ext *pw, sq_ext_row *del, size_t ndel,
               const sq_ext_row *put, size_t nput)
{
    sq_ext_row cut[PG_EXT_CUTS];
    int64_t far[PG_EXT_CUTS];
    size_t ncut = 0, nkey = 0;
    /* the keys' kept rows (store_sql_kxrow.c), written only where blocks
     * are */
    int nt = s->kstore_blocks ? 2 : 1, rc = GPUFL_OK;

    /* the keys no cut takes, moved to the front of del */
    for (size_t i = 0; i < ndel; i++)
        if (!sq_ext_cut_add(cut, far, &ncut, PG_EXT_CUTS, &del[i]))
            del[nkey++] = del[i];
    for (size_t i = 0; i < ncut && !rc; i++) {
        const sq_ext_row *c[2] = { NULL, NULL };
        int64_t f[2] = { INT64_MIN, INT64_MAX };
        sq_ext_row other;
        size_t j = i + 1;
        c[cut[i].side ? 1 : 0] = &cut[i];
        f[cut[i].side ? 1 : 0] = far[i];
        /* the session's other side, if it has a cut (one per session and
         * side): taken from the list */
        while (j < ncut && cut[j].sess != cut[i].sess)
            j++;
        if (j < ncut) {
            other = cut[j];
            c[other.side ? 1 : 0] = &other;
            f[other.side ? 1 : 0] = far[j];
            cut[j] = cut[--ncut];
            far[j] = far[ncut];
        }
        rc = ext_cut(s, pw, nt, c, f);
    }
    for (int t = 0; t < nt && !rc; t++)
        rc = ext_all(s, pw, t, del, nkey);
    return rc ? rc : ext_put(s, pw, put, nput);
}

void sq_pg_ext_close(sq_pg_ext *pw)
{
    sdb_finalize(pw->kxnew);
    sdb_finalize(pw->kxput);
    sdb_finalize(pw->kxrow);
    for (int i = 0; i < 2; i++) {
        sdb_finalize(pw->kxdel[i]);
        sdb_finalize(pw->kxcut[i]);
    }
    memset(pw, 0, sizeof(*pw));
}
