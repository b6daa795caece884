/*
 * store_sql_kblocks.c - kernels at rest in column blocks (issue 23;
 * docs/server.md "Kernel blocks (store)"): the block writer (sq_kb_put:
 * the kblocks row, its kbspan bound and its kbnames rows - or for
 * ingest's blocks a kbunnamed row, named later by the compactor through
 * sq_kb_name - in the caller's transaction) that ingest and the
 * compactor share, the ingest's
 * duplicate checks against the blocks, and the store's block state and
 * statistics.  The compactor is store_sql_kblocks_compact.c, ingest into
 * blocks store_sql_kblocks_ingest.c, the reads store_sql_kblocks_read.c.
 *
 * A block replaces exactly the rows or blocks it was made from, in one
 * transaction, so a crash at any point leaves either the sources or the
 * block.  Only rows the codec keeps exactly are compacted: rows with a
 * NULL where ingest always writes a value (rows of older servers) stay
 * rows.
 */
#include "store_sql_int.h"
#include "store_sql_blocks_w.h"
#include "store_sql_writer_int.h"

#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/buf.h"
#include "common/log.h"
#include "kblock.h"

/* kbnames rows one SQLite INSERT writes (7 parameters each) */
#define KB_NAMES_ROWS 64

/* Tests only: a pause of the milliseconds environment variable env says
 * (at most 10 s), where a test's kill -9 should land. */
void sq_kb_test_pause(const char *env)
{
    const char *v = getenv(env);
    long ms = v ? strtol(v, NULL, 10) : 0;
    struct timespec ts;

    if (ms <= 0 || ms > 10000)
        return;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

/* kb_names_insert's table of a block's names: open addressing, at least
 * twice as many slots as names, so KB_MAX_NAMES names fit. */
#define KB_NSLOT_MAX (2 * KB_MAX_NAMES)

int sq_kb_state(srv_store *s)
{
    if (!s->kb_ev && !(s->kb_ev = calloc(KB_MAX_EVENTS, sizeof(kblock_ev))))
        return GPUFL_ENOMEM;
    if (!s->kb_buf && !(s->kb_buf = malloc(KB_BLOCK_MAX)))
        return GPUFL_ENOMEM;
    if (!s->kb_dec && !(s->kb_dec = kblock_dec_new()))
        return GPUFL_ENOMEM;
    if (!s->kb_idx && !(s->kb_idx = malloc(sizeof(kblock_index))))
        return GPUFL_ENOMEM;
    if (!s->kb_ndur &&
        !(s->kb_ndur = malloc(2 * KB_MAX_NAMES * sizeof(uint64_t))))
        return GPUFL_ENOMEM;
    if (!s->kb_nslot &&
        !(s->kb_nslot = malloc(KB_NSLOT_MAX * sizeof(*s->kb_nslot))))
        return GPUFL_ENOMEM;
    return GPUFL_OK;
}

void sq_kb_release(srv_store *s)
{
    kblock_enc_free(s->kb_enc);
    kblock_dec_free(s->kb_dec);
    free(s->kb_ev);
    free(s->kb_buf);
    free(s->kb_idx);
    free(s->kb_ndur);
    free(s->kb_nslot);
    s->kb_idx = NULL;
    s->kb_ndur = NULL;
    s->kb_nslot = NULL;
    s->kb_enc = NULL;
    s->kb_dec = NULL;
    s->kb_ev = NULL;
    s->kb_buf = NULL;
}

/* A transaction of the writer that other servers' ingest waits for
 * (PostgreSQL: the ingest's advisory lock, store_sql_ingest_pg.c).
 * PostgreSQL: with enable_seqscan off for the transaction (set_config's
 * SET LOCAL, in the lock's statement: no round trip more).  The
 * maintenance reaches its rows by a key's prefix, in tables that fill
 * and empty (kbnames, kbunnamed, the small blocks); statistics taken
 * while one was nearly empty, its pages still there, make the planner
 * expect a row in a thousand pages and cost the key's range above a
 * read of the whole table - under the writer's lock (docs/server.md
 * "kbnames: the primary key pinned").  Off, a table is read whole only
 * where no index serves. */
static int kb_begin(srv_store *s)
{
    int rc = sdb_begin(s->w);
    if (!rc && sdb_dialect(s->w) == SDB_POSTGRES &&
        (rc = sdb_exec(s->w, "SELECT pg_advisory_xact_lock(7242),"
                             " set_config('enable_seqscan', 'off', true)")) !=
            0)
        sdb_exec(s->w, "ROLLBACK");
    return rc;
}

static int kb_end(srv_store *s, int rc)
{
    if (rc) {
        sdb_exec(s->w, "ROLLBACK");
        return rc;
    }
    return sdb_exec(s->w, "COMMIT");
}

/* ---- the duplicate check (ingest) ---- */

int sq_kb_bytes(srv_store *s, sdb_stmt *st, int col, int64_t sess,
                int64_t stream, int64_t seq_lo, const unsigned char **b,
                size_t *len)
{
    *len = 0;
    *b = qcol_blob(st, col, len);
    if (*b && sq_kc_is_stub(*b, *len))
        return sq_kc_bytes(s, SQ_KC_KERNELS, sess, stream, seq_lo, b, len);
    if (!*b || !*len) {
        glog_error("kblocks",
                   "session %lld stream %lld seq %lld: block has no bytes",
                   (long long)sess, (long long)stream, (long long)seq_lo);
        return GPUFL_EINTERNAL;
    }
    return GPUFL_OK;
}

/* st: sql prepared on the writer with ?1 a session and [?2, ?3] a seq
 * range. */
static int range_prepare(srv_store *s, const char *sql, int64_t sess,
                         int64_t lo, int64_t hi, sdb_stmt **st)
{
    if (sdb_prepare(s->w, sql, st))
        return GPUFL_EINTERNAL;
    qbind_i64(*st, 1, sess);
    qbind_i64(*st, 2, lo);
    qbind_i64(*st, 3, hi);
    return GPUFL_OK;
}

/* The kernels of session sess in [lo, hi] that the block b[0..len) holds,
 * each passed to seen: one seq is sought (kblock_seek_seq), a range
 * decodes the block once. */
static int block_scan(srv_store *s, const unsigned char *b, size_t len,
                      int64_t sess, int64_t lo, int64_t hi, sq_kb_seen_fn seen,
                      void *arg)
{
    size_t n = 0, pos = KB_NOTFOUND;
    char why[128];
    int bad;

    if (lo == hi)
        bad = kblock_seek_seq(s->kb_dec, b, len, (uint64_t)lo, &pos, why,
                              sizeof(why));
    else
        bad = kblock_decode(s->kb_dec, b, len, s->kb_ev, KB_MAX_EVENTS, &n, why,
                            sizeof(why));
    if (bad) {
        glog_error("kblocks", "session %lld: unreadable block: %s",
                   (long long)sess, why);
        return GPUFL_EINTERNAL;
    }
    if (lo == hi && pos != KB_NOTFOUND)
        seen(arg, (uint64_t)lo);
    for (size_t i = 0; i < n; i++)
        if ((int64_t)s->kb_ev[i].seq >= lo && (int64_t)s->kb_ev[i].seq <= hi)
            seen(arg, s->kb_ev[i].seq);
    return GPUFL_OK;
}

int sq_kb_stored(srv_store *s, int64_t sess, int64_t lo, int64_t hi, int rows,
                 sq_kb_seen_fn seen, void *arg)
{
    sdb_stmt *st = NULL;
    int rc, err = GPUFL_OK;

    if ((err = sq_kb_state(s)) != 0)
        return err;
    if (rows) {
        if ((err = range_prepare(s,
                                 "SELECT seq FROM kernels WHERE sess=?1 AND"
                                 " seq >= ?2 AND seq <= ?3",
                                 sess, lo, hi, &st)) != 0)
            return err;
        while ((rc = sdb_step(st)) == SDB_ROW)
            seen(arg, (uint64_t)qcol_i64(st, 0));
        sdb_finalize(st);
        if (rc != SDB_DONE)
            return sq_err(rc);
    }
    /* the blocks whose seq range meets [lo, hi] (kblocks_seq) */
    if ((err = range_prepare(s,
                             "SELECT block, stream, seq_lo FROM kblocks WHERE"
                             " sess=?1 AND seq_hi >= ?2 AND seq_lo <= ?3",
                             sess, lo, hi, &st)) != 0)
        return err;
    while ((rc = sdb_step(st)) == SDB_ROW) {
        const unsigned char *b = NULL;
        size_t len = 0;
        if ((err = sq_kb_bytes(s, st, 0, sess, qcol_i64(st, 1), qcol_i64(st, 2),
                               &b, &len)) != 0 ||
            (err = block_scan(s, b, len, sess, lo, hi, seen, arg)) != 0)
            break;
    }
    sdb_finalize(st);
    if (err)
        return err;
    return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

static void seen_any(void *arg, uint64_t seq)
{
    (void)seq;
    *(int *)arg = 1;
}

int sq_kb_member(srv_store *s, int64_t sess, uint64_t seq, int *in)
{
    *in = 0;
    return sq_kb_stored(s, sess, (int64_t)seq, (int64_t)seq, 0, seen_any, in);
}

/* Writer statement i of sql, prepared once and kept in s->kb_put_st[i]
 * (one prepare per server instead of two or three per block written:
 * ~1 % of the HTTP worker's CPU per kernel); NULL when it fails. */
static sdb_stmt *kb_put_stmt(srv_store *s, int i, const char *sql)
{
    if (!s->kb_put_st[i] && sdb_prepare(s->w, sql, &s->kb_put_st[i]))
        return NULL;
    return s->kb_put_st[i];
}

/* The block b[0..len) as a kblocks row (idx: its index). */
static int kb_insert(srv_store *s, int64_t sess, int64_t stream,
                     const kblock_index *idx, const unsigned char *b,
                     size_t len)
{
    sdb_stmt *st =
        kb_put_stmt(s, 0, "INSERT INTO kblocks VALUES(?,?,?,?,?,?,?,?,?,?)");
    int rc;

    if (!st)
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sess);
    qbind_i64(st, 2, stream);
    qbind_u64(st, 3, idx->seq_min);
    qbind_u64(st, 4, idx->seq_max);
    qbind_u64(st, 5, idx->ts_min);
    qbind_u64(st, 6, idx->ts_max);
    qbind_u64(st, 7, idx->n);
    qbind_u64(st, 8, idx->dur_min);
    qbind_u64(st, 9, idx->dur_max);
    qbind_blob(st, 10, b, len);
    rc = qsend(st);
    if (rc)
        return rc;
    /* the session's longest block span, in the same transaction: the
     * reads' lower bound on t_lo (migration 25) must never be short */
    st = kb_put_stmt(s, 1,
                     "INSERT INTO kbspan VALUES(?1, ?2) ON CONFLICT(sess) DO"
                     " UPDATE SET span=excluded.span WHERE excluded.span >"
                     " kbspan.span");
    if (!st)
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sess);
    qbind_i64(st, 2, (int64_t)(idx->ts_max - idx->ts_min));
    return qsend(st);
}

static size_t name_slot(int64_t id, size_t mask)
{
    return (size_t)(((uint64_t)id * 0x9e3779b97f4a7c15ull) >> 32) & mask;
}

/* Per name of idx (sorted by id), its events' duration bounds from
 * ev[0..n) into lo[k], hi[k].  Each event's name is found in a hash table
 * of the index's names (slot: KB_NSLOT_MAX, built per block, cleared only
 * as far as it is used): a bsearch per event was ~8 % of the compactor's
 * CPU (docs/server.md "Where ingest's CPU goes"). */
int sq_kb_name_bounds(const kblock_index *idx, const kblock_ev *ev, size_t n,
                      uint64_t *lo, uint64_t *hi, uint32_t *slot)
{
    size_t mask = 15;

    while (mask + 1 < 2 * (size_t)idx->nnames)
        mask = 2 * mask + 1;
    memset(slot, 0xff, (mask + 1) * sizeof(*slot));
    for (uint32_t k = 0; k < idx->nnames; k++) {
        size_t h = name_slot(idx->names[k].name_id, mask);
        while (slot[h] != UINT32_MAX)
            h = (h + 1) & mask;
        slot[h] = k;
        lo[k] = UINT64_MAX;
        hi[k] = 0;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t id = ev[i].name_id;
        size_t h = name_slot(id, mask), k;
        while (slot[h] != UINT32_MAX && idx->names[slot[h]].name_id != id)
            h = (h + 1) & mask;
        if (slot[h] == UINT32_MAX) { /* the codec's index lists every
                                        event's name */
            glog_error("kblocks", "name %lld not in its block's index",
                       (long long)id);
            return GPUFL_EINTERNAL;
        }
        k = slot[h];
        if (ev[i].dur < lo[k])
            lo[k] = ev[i].dur;
        if (ev[i].dur > hi[k])
            hi[k] = ev[i].dur;
    }
    return GPUFL_OK;
}

/* kbnames' columns name_id, n, dur_min, dur_max of one block for
 * sq_arr_bind: column c of name j. */
typedef struct kbn_cur {
    const kblock_index *idx;
    const uint64_t *lo, *hi;
    int c;
} kbn_cur;

static void kbn_el(gbuf *cb, void *ctx, size_t j)
{
    const kbn_cur *x = ctx;

    sq_av_i64(cb, x->c == 0   ? x->idx->names[j].name_id
                  : x->c == 1 ? (int64_t)x->idx->names[j].n
                  : x->c == 2 ? (int64_t)x->lo[j]
                              : (int64_t)x->hi[j]);
}

/* PostgreSQL: the block's kbnames rows in one statement, a column an
 * array read through unnest.  As KB_NAMES_ROWS-row VALUES statements
 * (several a block, 448 parameters each) PostgreSQL spent ~1.35 ms a
 * 2M-kernel bench request on them (docs/server.md "kbnames in one
 * statement on PostgreSQL"). */
static int kb_names_arr(srv_store *s, int64_t sess, int64_t stream,
                        const kblock_index *idx, const uint64_t *lo,
                        const uint64_t *hi)
{
    gbuf cb;
    int rc = GPUFL_OK;

    if (!s->kb_names_st &&
        sdb_prepare(s->w,
                    "INSERT INTO kbnames SELECT ?1, ?2, ?3, u.* FROM"
                    " unnest(?4::bigint[], ?5::bigint[], ?6::bigint[],"
                    " ?7::bigint[]) AS u",
                    &s->kb_names_st))
        return GPUFL_EINTERNAL;
    qbind_i64(s->kb_names_st, 1, sess);
    qbind_i64(s->kb_names_st, 2, stream);
    qbind_u64(s->kb_names_st, 3, idx->seq_min);
    gbuf_init(&cb, (size_t)KB_MAX_NAMES * SQ_CB_COL + 16);
    for (int c = 0; c < 4 && !rc; c++)
        rc = sq_arr_bind(s->kb_names_st, c + 4, &cb, idx->nnames, SDB_ARR_I64,
                         SQ_CB_COL, kbn_el, &(kbn_cur){ idx, lo, hi, c });
    gbuf_release(&cb);
    return rc ? rc : qsend(s->kb_names_st);
}

/* The block's kbnames rows (schema 22): per name of idx, its count and
 * the duration bounds lo[k], hi[k]. */
static int kb_names_write(srv_store *s, int64_t sess, int64_t stream,
                          const kblock_index *idx, const uint64_t *lo,
                          const uint64_t *hi)
{
    sdb_stmt *st = NULL;
    int rc = GPUFL_OK;

    if (sdb_dialect(s->w) == SDB_POSTGRES)
        return kb_names_arr(s, sess, stream, idx, lo, hi);

    /* SQLite: KB_NAMES_ROWS rows a statement, a block's ~200 names a few
     * statements, not one each; the full statement is kept, a last
     * partial one prepared here */
    for (uint32_t k = 0; k < idx->nnames && !rc;) {
        size_t c =
            idx->nnames - k < KB_NAMES_ROWS ? idx->nnames - k : KB_NAMES_ROWS;
        sdb_stmt **sp = c == KB_NAMES_ROWS ? &s->kb_names_st : &st;
        if (!*sp) {
            char sql[32 + 16 * KB_NAMES_ROWS];
            size_t len = (size_t)snprintf(sql, sizeof(sql),
                                          "INSERT INTO kbnames VALUES");
            for (size_t j = 0; j < c; j++)
                len += (size_t)snprintf(sql + len, sizeof(sql) - len, "%s%s",
                                        j ? "," : "", "(?,?,?,?,?,?,?)");
            if (sdb_prepare(s->w, sql, sp))
                return GPUFL_EINTERNAL;
        }
        for (size_t j = 0; j < c; j++, k++) {
            int b = (int)(7 * j);
            qbind_i64(*sp, b + 1, sess);
            qbind_i64(*sp, b + 2, stream);
            qbind_u64(*sp, b + 3, idx->seq_min);
            qbind_i64(*sp, b + 4, idx->names[k].name_id);
            qbind_u64(*sp, b + 5, idx->names[k].n);
            qbind_u64(*sp, b + 6, lo[k]);
            qbind_u64(*sp, b + 7, hi[k]);
        }
        rc = qsend(*sp);
    }
    sdb_finalize(st);
    return rc;
}

/* The block's kbnames rows from its events s->kb_ev[0..n). */
static int kb_names_insert(srv_store *s, int64_t sess, int64_t stream,
                           const kblock_index *idx, size_t n)
{
    uint64_t *lo = s->kb_ndur, *hi = s->kb_ndur + KB_MAX_NAMES;
    int rc = sq_kb_name_bounds(idx, s->kb_ev, n, lo, hi, s->kb_nslot);

    if (rc) {
        glog_error("kblocks", "session %lld stream %lld: not named",
                   (long long)sess, (long long)stream);
        return rc;
    }
    return kb_names_write(s, sess, stream, idx, lo, hi);
}

/* The block's kbunnamed row: read as holding any name until the
 * compactor names it (sq_kb_name). */
static int kb_unnamed_insert(srv_store *s, int64_t sess, int64_t stream,
                             const kblock_index *idx)
{
    sdb_stmt *st = kb_put_stmt(s, 2, "INSERT INTO kbunnamed VALUES(?,?,?)");

    if (!st)
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, sess);
    qbind_i64(st, 2, stream);
    qbind_u64(st, 3, idx->seq_min);
    return qsend(st);
}

int sq_kb_name(srv_store *s, int64_t sess, int64_t stream,
               const unsigned char *b, size_t len, size_t n)
{
    char why[128] = "";

    if (kblock_index_read(b, len, s->kb_idx, why, sizeof(why)) ||
        s->kb_idx->n != n) {
        glog_error("kblocks", "session %lld stream %lld: cannot name: %s",
                   (long long)sess, (long long)stream,
                   why[0] ? why : "count differs");
        return GPUFL_EINTERNAL;
    }
    return kb_names_insert(s, sess, stream, s->kb_idx, n);
}

int sq_kb_put(srv_store *s, int64_t sess, int64_t stream, size_t n, int named)
{
    size_t len = 0;
    char why[128] = "";

    if (!s->kb_enc && !(s->kb_enc = kblock_enc_new()))
        return GPUFL_ENOMEM;
    if (kblock_encode(s->kb_enc, s->kb_ev, n, KB_ZLEVEL, KB_OPT_DEFAULT,
                      s->kb_buf, KB_BLOCK_MAX, &len, why, sizeof(why))) {
        glog_error("kblocks", "session %lld: cannot encode: %s",
                   (long long)sess, why);
        return GPUFL_EINTERNAL;
    }
    return sq_kb_put_bytes(s, sess, stream, s->kb_buf, len, n, named);
}

/* The block b[0..len) of n kernels as a kblocks row, its index read into
 * s->kb_idx (its names: the caller's). */
static int kb_put_row(srv_store *s, int64_t sess, int64_t stream,
                      const unsigned char *b, size_t len, size_t n)
{
    char why[128] = "";

    if (kblock_index_read(b, len, s->kb_idx, why, sizeof(why)) ||
        s->kb_idx->n != n) {
        glog_error("kblocks", "session %lld: cannot insert a block: %s",
                   (long long)sess, why[0] ? why : "count differs");
        return GPUFL_EINTERNAL;
    }
    return kb_insert(s, sess, stream, s->kb_idx, b, len);
}

int sq_kb_put_bytes(srv_store *s, int64_t sess, int64_t stream,
                    const unsigned char *b, size_t len, size_t n, int named)
{
    int rc = kb_put_row(s, sess, stream, b, len, n);

    if (rc)
        return rc;
    return named ? kb_names_insert(s, sess, stream, s->kb_idx, n)
                 : kb_unnamed_insert(s, sess, stream, s->kb_idx);
}

int sq_kb_put_named(srv_store *s, int64_t sess, int64_t stream,
                    const unsigned char *b, size_t len, size_t n,
                    const uint64_t *lo, const uint64_t *hi)
{
    int rc = kb_put_row(s, sess, stream, b, len, n);

    return rc ? rc : kb_names_write(s, sess, stream, s->kb_idx, lo, hi);
}

/* The sessions with blocks into *ids (*n of them; free it). */
static int blocked_sessions(srv_store *s, int64_t **ids, size_t *n)
{
    sdb *db = sq_reader_get(s);
    sdb_stmt *st = NULL;
    size_t cap = 0;
    int rc;

    *ids = NULL;
    *n = 0;
    if (sdb_prepare(db, "SELECT DISTINCT sess FROM kblocks", &st)) {
        sq_reader_put(s, db);
        return GPUFL_EINTERNAL;
    }
    while ((rc = sdb_step(st)) == SDB_ROW) {
        if (*n == cap) {
            int64_t *x = realloc(*ids, (cap = cap ? 2 * cap : 64) * 8);
            if (!x) {
                rc = GPUFL_ENOMEM;
                break;
            }
            *ids = x;
        }
        (*ids)[(*n)++] = qcol_i64(st, 0);
    }
    sdb_finalize(st);
    sq_reader_put(s, db);
    return rc == SDB_DONE ? GPUFL_OK : rc == GPUFL_ENOMEM ? rc : sq_err(rc);
}

int srv_store_level0_drop(srv_store *s, uint64_t *rows, uint64_t *capi_rows)
{
    static const char *const del[2] = {
        "DELETE FROM tl WHERE sess=? AND lvl=0",
        "DELETE FROM capi WHERE sess=? AND lvl=0",
    };
    uint64_t *out[2] = { rows, capi_rows };
    int64_t *ids = NULL;
    size_t n = 0;
    int rc = blocked_sessions(s, &ids, &n);

    *rows = *capi_rows = 0;
    /* a session at a time, each its own transaction: a kill leaves each
     * session's level 0 there or gone, and either answers the same */
    for (size_t i = 0; !rc && i < n; i++) {
        pthread_mutex_lock(&s->wlock);
        if ((rc = kb_begin(s)) == 0) {
            /* capi's only where it is computed (capi0_query) */
            for (int t = 0; t < 1 + s->capi0_query && !rc; t++) {
                sdb_stmt *st = NULL;
                if (sdb_prepare(s->w, del[t], &st)) {
                    rc = GPUFL_EINTERNAL;
                } else {
                    qbind_i64(st, 1, ids[i]);
                    rc = qrun(st);
                    if (!rc)
                        *out[t] += (uint64_t)sdb_changes(s->w);
                }
                sdb_finalize(st);
            }
            rc = kb_end(s, rc);
        }
        pthread_mutex_unlock(&s->wlock);
    }
    free(ids);
    return rc;
}

/* The biggest tables, each with its indexes (SQLite: an index's pages
 * count for its table by dbstat's tbl_name through sqlite_schema). */
static void kb_biggest(sdb *db, int pg, srv_kb_stats *o)
{
    sdb_stmt *st = NULL;
    size_t i = 0;

    if (sdb_prepare(db,
                    pg ? "SELECT relname, pg_total_relation_size(c.oid) FROM"
                         " pg_class c JOIN pg_namespace n ON"
                         " n.oid=c.relnamespace WHERE c.relkind='r' AND"
                         " n.nspname=current_schema() ORDER BY 2 DESC LIMIT 8"
                       : "SELECT m.tbl_name, sum(d.pgsize) FROM dbstat d JOIN"
                         " sqlite_schema m ON m.name=d.name GROUP BY"
                         " m.tbl_name ORDER BY 2 DESC LIMIT 8",
                    &st))
        return;
    while (i < SRV_KB_TOP && sdb_step(st) == SDB_ROW) {
        const char *n = qcol_text(st, 0);
        snprintf(o->top[i].name, sizeof(o->top[i].name), "%s", n ? n : "?");
        o->top[i++].bytes = (uint64_t)qcol_i64(st, 1);
    }
    sdb_finalize(st);
}

void srv_store_kblocks_stats(srv_store *s, srv_kb_stats *o)
{
    sdb *db = sq_reader_get(s);
    int pg = sdb_dialect(db) == SDB_POSTGRES;

    memset(o, 0, sizeof(*o));
    o->rows = sq_one(db, "SELECT count(*) FROM kernels");
    o->blocks = sq_one(db, "SELECT count(*) FROM kblocks");
    o->in_blocks = sq_one(db, "SELECT sum(n) FROM kblocks");
    o->block_bytes = sq_one(db, "SELECT sum(length(block)) FROM kblocks");
    /* on disk with indexes: PostgreSQL's relation sizes (TOAST and
     * indexes included, dead rows too until VACUUM); SQLite's b-tree
     * pages (dbstat; 0 where SQLite was built without it) */
    o->rows_disk = sq_one(db, pg ? "SELECT pg_total_relation_size('kernels')"
                                 : "SELECT sum(pgsize) FROM dbstat WHERE"
                                   " name='kernels' OR name LIKE 'kernels_%'");
    o->blocks_disk =
        sq_one(db, pg ? "SELECT pg_total_relation_size('kblocks')"
                      : "SELECT sum(pgsize) FROM dbstat WHERE"
                        " name='kblocks' OR name LIKE 'kblocks_%'"
                        " OR name LIKE 'sqlite_autoindex_kblocks%'");
    o->db_disk = sq_one(db, pg ? "SELECT pg_database_size(current_database())"
                               : "SELECT sum(pgsize) FROM dbstat");
    kb_biggest(db, pg, o);
    sq_reader_put(s, db);
}

int sq_kb_tx_begin(srv_store *s)
{
    return kb_begin(s);
}

int sq_kb_tx_end(srv_store *s, int rc)
{
    return kb_end(s, rc);
}
