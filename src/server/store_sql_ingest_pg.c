/*
 * store_sql_ingest_pg.c - the batch writer on PostgreSQL (sq_writer,
 * store_sql_writer_int.h): a batch's rows go in bulk, because every statement is
 * a round trip (one per row would cap ingest at ~10k rows/s).
 *
 * Kernels are held until the batch ends (or SQ_PEND_MAX of them), then
 * sent by one binary COPY: straight into kernels when none can be a
 * duplicate (the common case: an agent sends in order), else into the
 * staging table kstage and moved by one INSERT ... SELECT whose RETURNING
 * names the new rows.  The rollups are merged by one upsert each
 * from arrays (store_sql_roll_pg.c), kext changes in a statement per
 * table with the keys as arrays (store_sql_ext_pg.c), and a memory profile's
 * stacks in one COPY.  The staging table is session-local and
 * emptied at each commit.
 *
 * Several servers may write one database: each batch takes an advisory
 * lock first, so batches take turns as SQLite's write lock makes them
 * (the kernel aggregates are merged read-modify-write).
 */
#include "store_sql_writer_int.h"

#include "common/buf.h"
#include "kblock.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Kernels held per COPY. */
#define SQ_PEND_MAX 16384

/* A kernel line waiting for the batch's COPY. */
typedef struct sq_pend {
    const srv_ev *e;
    int64_t sess;
    sq_launch l;
    int fresh;
} sq_pend;

/* The most bytes of rows one COPY carries.  A batch at the largest
 * --max-lines (10M) with a distinct row per line (~300 bytes binary, ~400
 * text) fits; past it the batch fails with GPUFL_ETOOBIG (the agent
 * retries smaller) rather than growing without bound. */
#define SQ_COPY_MAX ((size_t)8 << 30)

typedef struct pg_writer {
    sq_pend *pend; /* SQ_PEND_MAX */
    size_t npend;
    rl_map pend_idx;  /* (sess, seq) -> 1 + first index in pend */
    sdb_stmt *kmerge; /* kstage -> kernels, RETURNING */
    /* the stored kagg rows of a batch; the kagg, tl and kscope upserts
     * from arrays (sq_pg_roll_flush) */
    sdb_stmt *roll[4];
    sq_pg_ext ext;  /* kext and kxrow statements (store_sql_ext_pg.c) */
    sq_pg_tl1 *tl1; /* level-1 timeline packs (store_sql_tl1_pg.c) */
    gbuf cb;        /* COPY rows being built, capped at SQ_COPY_MAX */
    int staged;     /* kstage filled in this transaction */
} pg_writer;

/* The writer connection's settings and its staging table (session-local:
 * a connection made again after a loss needs them again, db.h
 * sdb_set_setup). */
static const char pg_setup_writer[] =
    SQ_PG_SETUP ";"
                "CREATE TEMP TABLE kstage (LIKE kernels) ON COMMIT DELETE ROWS";

/* ---- COPY rows ---- */

/* Text format (sq_cb_i for integers): cb_text appends text of n bytes,
 * escaped, then sep ('\t' or '\n'), into room the caller reserved
 * (2 * n + 1 bytes) */
static void cb_text(gbuf *b, const char *p, size_t n, char sep)
{
    /* COPY's text format: backslash, tab, newline and CR escaped; text
     * stops at a NUL (PostgreSQL text cannot hold one) */
    for (size_t i = 0; i < n && p[i]; i++) {
        char c = p[i];
        if (c == '\\' || c == '\t' || c == '\n' || c == '\r') {
            b->p[b->len++] = '\\';
            c = c == '\t' ? 't' : c == '\n' ? 'n' : c == '\r' ? 'r' : c;
        }
        b->p[b->len++] = c;
    }
    b->p[b->len++] = sep;
}

/* Binary format (the server parses no text: about a tenth of its CPU per
 * kernel): the header, then per row the field count and each field as a
 * length and big-endian bytes (-1: NULL, sq_cb_be), then the trailer. */
static int cb_bin_begin(gbuf *b)
{
    static const char sig[11] = { 'P',  'G',    'C',  'O',  'P', 'Y',
                                  '\n', '\377', '\r', '\n', '\0' };
    gbuf_reset(b);
    if (gbuf_grow(b, 32))
        return b->err;
    memcpy(b->p, sig, sizeof(sig));
    b->len = sizeof(sig);
    sq_cb_be(b, 0, 4); /* flags */
    sq_cb_be(b, 0, 4); /* header extension length */
    return GPUFL_OK;
}

static int cb_bin_end(gbuf *b)
{
    if (gbuf_grow(b, 2))
        return b->err;
    sq_cb_be(b, 0xffff, 2);
    return GPUFL_OK;
}

/* The kernel row, in the table's column order: 24 bigints and occ, a
 * double precision; occ and tid may be NULL (sq_kernel_ev: the same row
 * as the other writers bind). */
static int cb_kernel(gbuf *b, int64_t sess, const srv_ev *e, const sq_launch *l)
{
    kblock_ev k;
    int64_t v[25];

    sq_kernel_ev(e, l, &k);
    v[0] = sess;
    v[1] = (int64_t)k.seq;
    v[2] = (int64_t)k.ts;
    v[3] = (int64_t)k.dur;
    v[4] = (int64_t)k.dev;
    v[5] = (int64_t)k.stream;
    v[6] = (int64_t)k.corr;
    v[7] = k.name_id;
    v[8] = (int64_t)k.cfg;
    for (int i = 0; i < 3; i++) {
        v[9 + i] = (int64_t)k.grid[i];
        v[12 + i] = k.block[i];
    }
    v[15] = k.regs;
    v[16] = k.smem;
    v[17] = 0; /* occ: below */
    v[18] = (int64_t)k.scope;
    v[19] = (int64_t)k.path;
    v[20] = (int64_t)k.stack;
    v[21] = k.api_off;
    v[22] = (int64_t)k.api_dur;
    v[23] = (int64_t)k.flags;
    v[24] = (int64_t)k.tid;

    if (gbuf_grow(b, 2 + 25 * 12))
        return b->err;
    sq_cb_be(b, 25, 2);
    for (int c = 0; c < 25; c++) {
        if ((c == 17 && k.occ < 0) || (c == 24 && !k.tid)) {
            sq_cb_be(b, 0xffffffffu, 4);
            continue;
        }
        sq_cb_be(b, 8, 4);
        if (c == 17) {
            uint64_t bits;
            memcpy(&bits, &k.occ, 8);
            sq_cb_be(b, bits, 8);
        } else {
            sq_cb_be(b, (uint64_t)v[c], 8);
        }
    }
    return GPUFL_OK;
}

/* ---- kernels ---- */

/* Sessions a batch's kernels may span and still take the append path. */
#define SQ_APPEND_SESS 8

/* Can the pending kernels go straight into kernels by COPY?  Yes when no
 * key repeats within them (dup) and, for each session, their lowest seq
 * is above the highest seq it has stored: then none can conflict.  That
 * holds across servers too, because ingest transactions hold the
 * advisory lock, so no other writer adds kernels in between.  This is the
 * common case (an agent sends its lines in order); a resent batch takes
 * the staging path. */
static int can_append(srv_store *s, size_t n, int dup, int *ok)
{
    pg_writer *pw = s->wst;
    int64_t sess[SQ_APPEND_SESS], lo[SQ_APPEND_SESS];
    int ns = 0, rc;

    *ok = 0;
    if (dup)
        return GPUFL_OK;
    for (size_t j = 0; j < n; j++) {
        int64_t seq = (int64_t)pw->pend[j].e->seq;
        int i = 0;
        while (i < ns && sess[i] != pw->pend[j].sess)
            i++;
        if (i == ns) {
            if (ns == SQ_APPEND_SESS)
                return GPUFL_OK;
            sess[ns] = pw->pend[j].sess;
            lo[ns++] = seq;
        } else if (seq < lo[i]) {
            lo[i] = seq;
        }
    }
    for (int i = 0; i < ns; i++) {
        int below;
        qbind_i64(s->ws[WS_KMAX], 1, sess[i]);
        rc = sdb_step(s->ws[WS_KMAX]);
        below = rc == SDB_ROW && (qcol_null(s->ws[WS_KMAX], 0) ||
                                  qcol_i64(s->ws[WS_KMAX], 0) < lo[i]);
        sdb_reset(s->ws[WS_KMAX]);
        if (rc != SDB_ROW)
            return sq_err(rc);
        if (!below)
            return GPUFL_OK;
    }
    *ok = 1;
    return GPUFL_OK;
}

/* The rows in cb COPYed into kstage and moved into kernels by one
 * INSERT ... SELECT ... RETURNING, whose keys are the new rows (the rest
 * were already stored): marks those pending kernels fresh. */
static int stage_kernels(srv_store *s)
{
    pg_writer *pw = s->wst;
    sdb_stmt *st = pw->kmerge;
    int rc;

    /* a second flush in one transaction: the first one's rows are in
     * kernels already */
    if (pw->staged && (rc = sdb_exec(s->w, "TRUNCATE kstage")) != 0)
        return rc;
    if ((rc = sdb_copy(s->w, "COPY kstage FROM STDIN (FORMAT binary)", pw->cb.p,
                       pw->cb.len)) != 0)
        return rc;
    pw->staged = 1;
    while ((rc = sdb_step(st)) == SDB_ROW) {
        uint64_t k[4] = { (uint64_t)qcol_i64(st, 0), (uint64_t)qcol_i64(st, 1),
                          0, 0 };
        size_t *v = rl_map_find(&pw->pend_idx, k);
        if (v)
            pw->pend[*v - 1].fresh = 1;
    }
    sdb_reset(st);
    return rc == SDB_DONE ? GPUFL_OK : sdb_err(rc);
}

/* Kernels staged as new that a block already holds (compacted rows,
 * store_sql_kblocks.c: the kernels table no longer has them) are
 * duplicates: their rows go again.  Only the staging path can meet them;
 * the append path's seqs are above every block's (WS_KMAX). */
static int unstage_blocked(srv_store *s, size_t n)
{
    pg_writer *pw = s->wst;
    sdb_stmt *del = NULL;
    int rc = GPUFL_OK, in = 0;

    /* without blocks (--kernel-store=rows) one probe for the batch */
    if ((rc = sdb_prepare(s->w, "SELECT 1 FROM kblocks LIMIT 1", &del)) != 0)
        return GPUFL_EINTERNAL;
    rc = sdb_step(del);
    sdb_finalize(del);
    del = NULL;
    if (rc == SDB_DONE)
        return GPUFL_OK;
    if (rc != SDB_ROW)
        return sq_err(rc);
    rc = GPUFL_OK;
    for (size_t j = 0; j < n && !rc; j++) {
        sq_pend *p = &pw->pend[j];
        if (!p->fresh)
            continue;
        if ((rc = sq_kb_member(s, p->sess, p->e->seq, &in)) != 0 || !in)
            continue;
        if (!del &&
            sdb_prepare(s->w, "DELETE FROM kernels WHERE sess=? AND seq=?",
                        &del)) {
            rc = GPUFL_EINTERNAL;
            break;
        }
        qbind_i64(del, 1, p->sess);
        qbind_u64(del, 2, p->e->seq);
        rc = sdb_err(sdb_step(del));
        sdb_reset(del);
        p->fresh = 0;
    }
    sdb_finalize(del);
    return rc;
}

/* The pending kernels, COPYed straight into kernels when none can be a
 * duplicate (can_append), else through kstage; then each is known new or
 * duplicate (sq_kernel_done). */
static int flush_pending(srv_store *s)
{
    pg_writer *pw = s->wst;
    size_t n = pw->npend;
    int rc, fresh, dup = 0, append;

    if (!n)
        return GPUFL_OK;
    pw->npend = 0;
    rl_map_clear(&pw->pend_idx);
    if ((rc = cb_bin_begin(&pw->cb)) != 0)
        return rc;
    for (size_t j = 0; j < n; j++) {
        uint64_t k[4] = { (uint64_t)pw->pend[j].sess, pw->pend[j].e->seq, 0,
                          0 };
        size_t *v = rl_map_get(&pw->pend_idx, k, &fresh);
        if (!v)
            return GPUFL_EFULL;
        if (fresh)
            *v = j + 1; /* a key twice in one batch: the first is new */
        else
            dup = 1;
        if ((rc = cb_kernel(&pw->cb, pw->pend[j].sess, pw->pend[j].e,
                            &pw->pend[j].l)) != 0)
            return rc;
    }
    if ((rc = cb_bin_end(&pw->cb)) != 0 ||
        (rc = can_append(s, n, dup, &append)) != 0)
        return rc;
    if (!append) {
        rc = stage_kernels(s);
        if (!rc)
            rc = unstage_blocked(s, n);
    } else if ((rc = sdb_copy(s->w, "COPY kernels FROM STDIN (FORMAT binary)",
                              pw->cb.p, pw->cb.len)) == 0) {
        for (size_t j = 0; j < n; j++)
            pw->pend[j].fresh = 1;
    }
    for (size_t j = 0; j < n && !rc; j++) {
        sq_pend *p = &pw->pend[j];
        /* a row written: the compactor's count (store_sql_kcount.c) */
        if (p->fresh && (rc = sq_kcount_add(s, p->sess, p->e->stream, 1)) != 0)
            break;
        rc = sq_kernel_done(s, p->sess, p->e, &p->l, p->fresh);
    }
    return rc;
}

static int pg_kernel(srv_store *s, int64_t sess, const srv_ev *e,
                     const sq_launch *l)
{
    pg_writer *pw = s->wst;
    sq_pend *p = &pw->pend[pw->npend++];

    p->e = e;
    p->sess = sess;
    p->l = *l;
    p->fresh = 0;
    return pw->npend == SQ_PEND_MAX ? flush_pending(s) : GPUFL_OK;
}

/* ---- rollups (store_sql_roll_pg.c) ---- */

/* sq_writer.roll_put: another file's rollup (store_sql_capi.c) the same
 * way */
static int pg_roll_put(srv_store *s, sdb_stmt *st, rl_map *m, int ncol,
                       size_t room, sq_roll_col_fn col)
{
    pg_writer *pw = s->wst;

    return sq_pg_arr_upsert(m, &pw->cb, st, ncol, NULL, room, col);
}

/* The pending kernels, then the rollups. */
static int pg_flush(srv_store *s)
{
    pg_writer *pw = s->wst;
    int rc = flush_pending(s);

    /* the held kernels' rollups first, then the timeline's open runs */
    if (!rc)
        rc = sq_tl_runs_flush(s);
    if (!rc)
        rc = sq_pg_tl1_put(s, pw->tl1, &pw->cb, pw->roll[2]);
    return rc ? rc : sq_pg_roll_flush(s, &pw->cb, pw->roll);
}

/* ---- kext and kxrow (store_sql_ext_pg.c) ---- */

static int pg_kext(srv_store *s, sq_ext_row *del, size_t ndel,
                   const sq_ext_row *put, size_t nput)
{
    pg_writer *pw = s->wst;

    return sq_pg_kext(s, &pw->ext, del, ndel, put, nput);
}

static int pg_kxrows(srv_store *s, int64_t sess, const kblock_ev *ev,
                     const uint32_t *ix, const uint8_t *sd, size_t m,
                     uint64_t *rows)
{
    pg_writer *pw = s->wst;

    return sq_pg_kxrows(s, &pw->ext, sess, ev, ix, sd, m, rows);
}

/* ---- memory profiles ---- */

/* One COPY, not a round trip per stack (17 ms a 200-stack profile). */
static int pg_memstacks(srv_store *s, int64_t prof, const srv_memprof *p)
{
    pg_writer *pw = s->wst;
    gbuf *cb = &pw->cb;
    int rc;

    gbuf_reset(cb);
    for (size_t i = 0; i < p->n; i++) {
        if ((rc = gbuf_grow(cb, 10 * SQ_CB_COL + 2 * p->stacks[i].frames.n +
                                    1)) != 0)
            return rc;
        sq_cb_i(cb, prof, '\t');
        sq_cb_i(cb, (int64_t)i, '\t');
        cb_text(cb, p->stacks[i].frames.p, p->stacks[i].frames.n, '\t');
        for (int k = 0; k < 8; k++)
            sq_cb_i(cb, (int64_t)p->stacks[i].v[k], k < 7 ? '\t' : '\n');
    }
    return sdb_copy(s->w,
                    "COPY memsamples(prof, idx, frames, alloc_bytes,"
                    " alloc_count, free_bytes, free_count, inuse_bytes,"
                    " inuse_count, fail_bytes, fail_count) FROM STDIN",
                    cb->p, cb->len);
}

/* ---- the writer ---- */

static int pg_setup(srv_store *s)
{
    sdb_set_setup(s->w, pg_setup_writer);
    return sdb_exec(s->w, SQ_PG_SETUP);
}

/* The kagg, tl and kscope upserts (sq_pg_roll_flush): their rows as one
 * array a column (binary, sq_arr_bind), in the tables' column order, and
 * the row-at-a-time statements' ON CONFLICT clauses, so both databases
 * merge alike. */
static const char kagg_put_head[] =
    "INSERT INTO kagg SELECT * FROM unnest(?::bigint[], ?::bigint[],"
    " ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[],"
    " ?::double precision[], ?::bigint[], ?::bigint[], ?::bigint[],"
    " ?::bytea[])";
/* tl's rows split by the lane's highest stored bucket (m, a probe per
 * (sess, lvl, lane)): those above it are new and go by a plain INSERT,
 * the rest - a few per batch, the buckets the last batch left open - by
 * the upsert.  ON CONFLICT costs each row a probe of the primary key
 * before its insert, ~20 % of the statement when nearly every row is new
 * (docs/server.md "Rollup upserts from arrays").  The split is exact
 * because only ingest inserts into tl and batches take turns (the
 * advisory lock); were a row there after all, the plain INSERT would fail
 * the batch (retried), not count twice. */
static const char tl_put_head[] =
    "WITH v AS MATERIALIZED (SELECT * FROM unnest(?::bigint[], ?::bigint[],"
    " ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[], ?::bigint[],"
    " ?::bigint[]) v(sess, lvl, lane, b, n, busy, top_name, top_dur)),"
    " h AS MATERIALIZED (SELECT g.sess, g.lvl, g.lane, (SELECT max(t.b)"
    " FROM tl t WHERE t.sess=g.sess AND t.lvl=g.lvl AND t.lane=g.lane) m"
    " FROM (SELECT DISTINCT sess, lvl, lane FROM v) g),"
    " w AS (INSERT INTO tl SELECT v.* FROM v JOIN h USING (sess, lvl, lane)"
    " WHERE h.m IS NULL OR v.b > h.m)"
    " INSERT INTO tl SELECT v.* FROM v JOIN h USING (sess, lvl, lane)"
    " WHERE v.b <= h.m";
/* kscope's rows split the same way by the session's highest stored
 * scope: a batch's scopes are mostly new (ids grow within a session), and
 * as an upsert each new row cost a probe before its insert and a WAL
 * record confirming it (HEAP_CONFIRM): 3.2 us a row, 200 rows a
 * 10 000-kernel request (docs/server.md "Array parameters in binary").
 * Exact for the same reasons: only ingest inserts into kscope, batches
 * take turns, and only a session's deletion removes its rows. */
static const char kscope_put_head[] =
    "WITH v AS MATERIALIZED (SELECT * FROM unnest(?::bigint[], ?::bigint[],"
    " ?::bigint[], ?::bigint[]) v(sess, scope, n, gpu_ns)),"
    " h AS MATERIALIZED (SELECT g.sess, (SELECT max(k.scope) FROM kscope k"
    " WHERE k.sess=g.sess) m FROM (SELECT DISTINCT sess FROM v) g),"
    " w AS (INSERT INTO kscope SELECT v.* FROM v JOIN h USING (sess)"
    " WHERE h.m IS NULL OR v.scope > h.m)"
    " INSERT INTO kscope SELECT v.* FROM v JOIN h USING (sess)"
    " WHERE v.scope <= h.m";

static int pg_open(srv_store *s, char *eb, size_t ec)
{
    pg_writer *pw = calloc(1, sizeof(*pw));
    char kasql[1024], tlsql[1024], kssql[1024];
    int rc;

    if (!pw)
        return GPUFL_ENOMEM;
    s->wst = pw;
    gbuf_init(&pw->cb, SQ_COPY_MAX);
    pw->ext.cb = &pw->cb;
    rl_map_init(&pw->pend_idx, sizeof(size_t), 4 * SQ_PEND_MAX);
    if (!(pw->pend = calloc(SQ_PEND_MAX, sizeof(*pw->pend))))
        return GPUFL_ENOMEM;
    snprintf(kasql, sizeof(kasql), "%s%s", kagg_put_head,
             strstr(sq_wsql[WS_KAGG_PUT], " ON CONFLICT"));
    snprintf(tlsql, sizeof(tlsql), "%s%s", tl_put_head,
             strstr(sq_wsql[WS_TL], " ON CONFLICT"));
    snprintf(kssql, sizeof(kssql), "%s%s", kscope_put_head,
             strstr(sq_wsql[WS_KSCOPE], " ON CONFLICT"));
    if ((rc = sdb_exec(s->w, pg_setup_writer)) != 0 ||
        (rc = sq_pg_tl1_open(s->w, &pw->tl1)) != 0 ||
        (rc = sdb_prepare(s->w, kasql, &pw->roll[1])) != 0 ||
        (rc = sdb_prepare(s->w, tlsql, &pw->roll[2])) != 0 ||
        (rc = sdb_prepare(s->w, kssql, &pw->roll[3])) != 0 ||
        (rc = sdb_prepare(s->w,
                          "SELECT k.sess, k.name_id, n, total, min, max,"
                          " sum_occ, n_occ, regs, smem, hist FROM kagg k"
                          " JOIN unnest(?::bigint[], ?::bigint[])"
                          " AS u(us, un) ON k.sess=u.us AND k.name_id=u.un",
                          &pw->roll[0])) != 0 ||
        (rc = sdb_prepare(s->w,
                          "INSERT INTO kernels SELECT * FROM kstage"
                          " ON CONFLICT DO NOTHING RETURNING sess, seq",
                          &pw->kmerge)) != 0) {
        snprintf(eb, ec, "cannot set up staging: %s", sdb_errmsg(s->w));
        return rc;
    }
    return GPUFL_OK;
}

static void pg_close(srv_store *s)
{
    pg_writer *pw = s->wst;

    if (!pw)
        return;
    sdb_finalize(pw->kmerge);
    for (int i = 0; i < 4; i++)
        sdb_finalize(pw->roll[i]);
    sq_pg_ext_close(&pw->ext);
    sq_pg_tl1_close(pw->tl1);
    rl_map_release(&pw->pend_idx);
    free(pw->pend);
    gbuf_release(&pw->cb);
    free(pw);
    s->wst = NULL;
}

static int pg_begin(srv_store *s)
{
    pg_writer *pw = s->wst;

    pw->npend = 0;
    pw->staged = 0;
    return sdb_exec(s->w, "SELECT pg_advisory_xact_lock(7242)");
}

static void pg_abort(srv_store *s)
{
    pg_writer *pw = s->wst;

    pw->npend = 0;
}

const sq_writer sq_writer_pg = {
    .name = "postgres",
    .give_ns = 10u * 1000u * 1000u,
    .setup = pg_setup,
    .open = pg_open,
    .close = pg_close,
    .begin = pg_begin,
    .kernel = pg_kernel,
    .settle = flush_pending,
    .flush = pg_flush,
    .kext = pg_kext,
    .abort = pg_abort,
    .memstacks = pg_memstacks,
    .roll_put = pg_roll_put,
    .kxrows = pg_kxrows,
};
