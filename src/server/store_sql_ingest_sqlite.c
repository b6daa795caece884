/*
 * store_sql_ingest_sqlite.c - the batch writer on SQLite (sq_writer,
 * store_sql_int.h): rows go in through prepared statements, one step per
 * row, which in-process costs a few microseconds.
 *
 * Kernels are most of a batch, and an agent sends them in order, so a
 * kernel above every stored kernel of its session is known new without
 * asking the database: those are queued and go in SQ_KGROUP rows per
 * INSERT (one statement end per row was ~10 % of the store's time).  Any
 * other kernel is inserted on its own, and sdb_changes() says whether it
 * was new.  The highest seq per session is cached (khigh); PRAGMA
 * data_version tells when another process wrote the file in between,
 * which makes the cache stale.
 */
#include "store_sql_writer_int.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kblock.h"

/* Known-new kernels per grouped INSERT. */
#define SQ_KGROUP 16

typedef struct kq_row {
    const srv_ev *e;
    int64_t sess;
    sq_launch l;
} kq_row;

typedef struct lite_writer {
    kq_row kq[SQ_KGROUP]; /* new kernels, not yet written */
    size_t nkq;
    rl_map khigh;     /* sess -> highest kernel seq stored or in kq */
    sdb_stmt *kgrp;   /* SQ_KGROUP kernels in one INSERT */
    sdb_stmt *tlgrp;  /* SQ_UPGROUP tl rows in one upsert */
    sdb_stmt *ksgrp;  /* ... and kscope rows */
    sdb_stmt *extgrp; /* ... and kext keys coming in */
    sq_lite_tl1 *tl1; /* level-1 timeline packs (store_sql_tl1.c) */
    /* PRAGMA data_version, and its value at this writer's last batch:
     * another process committed in between when it differs, and khigh
     * may be behind what is stored */
    sdb_stmt *dver;
    int64_t dver_last;
    /* lite_kext's range deletes: [kxrow][side] */
    sdb_stmt *ext_cut[2][2];
} lite_writer;

/* Sessions and sides whose keys leaving in a batch lite_kext deletes as
 * one range each; past that many, key by key. */
#define LITE_EXT_CUTS 64

/* The kernel row's 25 parameters from index b + 1 (the one binder:
 * sq_kernel_bind). */
static void bind_kernel(sdb_stmt *st, int b, int64_t sess, const srv_ev *e,
                        const sq_launch *l)
{
    kblock_ev k;

    sq_kernel_ev(e, l, &k);
    sq_kernel_bind(st, b, sess, &k);
}

/* Writes the queued new kernels (SQ_KGROUP in one statement, a partial
 * group row by row).  Each must be new: anything else means the queue's
 * premise broke, and the batch fails (its rollups counted them). */
static int kq_flush(srv_store *s)
{
    lite_writer *lw = s->wst;
    size_t n = lw->nkq;
    int rc;

    lw->nkq = 0;
    /* the compactor's row counts (store_sql_kcount.c) */
    for (size_t i = 0; i < n; i++)
        if ((rc = sq_kcount_add(s, lw->kq[i].sess, lw->kq[i].e->stream, 1)) !=
            0)
            return rc;
    if (n == SQ_KGROUP) {
        for (size_t i = 0; i < n; i++)
            bind_kernel(lw->kgrp, (int)(25 * i), lw->kq[i].sess, lw->kq[i].e,
                        &lw->kq[i].l);
        if ((rc = qrun(lw->kgrp)) != 0)
            return rc;
        return sdb_changes(s->w) == (int64_t)n ? GPUFL_OK : GPUFL_EINTERNAL;
    }
    for (size_t i = 0; i < n; i++) {
        bind_kernel(s->ws[WS_KERNEL], 0, lw->kq[i].sess, lw->kq[i].e,
                    &lw->kq[i].l);
        if ((rc = qrun(s->ws[WS_KERNEL])) != 0)
            return rc;
        if (sdb_changes(s->w) != 1)
            return GPUFL_EINTERNAL;
    }
    return GPUFL_OK;
}

/* The highest kernel seq of a session, stored or queued (-1: none), as a
 * pointer the caller may raise. */
static int kmax_get(srv_store *s, int64_t sess, int64_t **out)
{
    lite_writer *lw = s->wst;
    uint64_t k[4] = { (uint64_t)sess, 0, 0, 0 };
    int64_t *v = rl_map_find(&lw->khigh, k);
    int rc, fresh;

    if (v) {
        *out = v;
        return GPUFL_OK;
    }
    if (lw->khigh.n >= SQ_CACHE_MAX) {
        /* queued rows are in the map, not yet in the table: write them */
        if ((rc = kq_flush(s)) != 0)
            return rc;
        rl_map_clear(&lw->khigh);
    }
    qbind_i64(s->ws[WS_KMAX], 1, sess);
    rc = sdb_step(s->ws[WS_KMAX]);
    if (rc != SDB_ROW) {
        sdb_reset(s->ws[WS_KMAX]);
        return sq_err(rc);
    }
    if (!(v = rl_map_get(&lw->khigh, k, &fresh))) {
        sdb_reset(s->ws[WS_KMAX]);
        return GPUFL_EFULL;
    }
    *v = qcol_null(s->ws[WS_KMAX], 0) ? -1 : qcol_i64(s->ws[WS_KMAX], 0);
    sdb_reset(s->ws[WS_KMAX]);
    *out = v;
    return GPUFL_OK;
}

static int lite_kernel(srv_store *s, int64_t sess, const srv_ev *e,
                       const sq_launch *l)
{
    lite_writer *lw = s->wst;
    sdb_stmt *st = s->ws[WS_KERNEL];
    int64_t *mx = NULL;
    int rc, inblk = 0;

    /* after every kernel of its session stored or queued: new (agents
     * send in order, so nearly always), queued */
    if ((rc = kmax_get(s, sess, &mx)) != 0)
        return rc;
    if ((int64_t)e->seq > *mx) {
        *mx = (int64_t)e->seq;
        lw->kq[lw->nkq].e = e;
        lw->kq[lw->nkq].sess = sess;
        lw->kq[lw->nkq++].l = *l;
        if (lw->nkq == SQ_KGROUP && (rc = kq_flush(s)) != 0)
            return rc;
        return sq_kernel_done(s, sess, e, l, 1);
    }
    /* maybe a duplicate of a queued row: those go in first */
    if ((rc = kq_flush(s)) != 0)
        return rc;
    /* ... or of one compacted into a block (store_sql_kblocks.c) */
    if ((rc = sq_kb_member(s, sess, e->seq, &inblk)) != 0)
        return rc;
    if (inblk)
        return sq_kernel_done(s, sess, e, l, 0);
    bind_kernel(st, 0, sess, e, l);
    if ((rc = qrun(st)) != 0)
        return rc;
    if (sdb_changes(s->w) > 0 &&
        (rc = sq_kcount_add(s, sess, e->stream, 1)) != 0)
        return rc;
    return sq_kernel_done(s, sess, e, l, sdb_changes(s->w) > 0);
}

/* Each kernel aggregate of the batch: the stored row read, merged, and
 * written back (the write lock makes that safe). */
static int flush_kagg(srv_store *s)
{
    const uint64_t *k;
    unsigned char enc[RL_HIST_ENC_MAX];

    /* the stored rows this writer wrote last, kept (store_sql_kagg_cache.c):
     * only the others are read */
    if (s->kagg.n)
        (void)sq_kac_merge(s);
    for (size_t i = 0; i < s->kagg.cap; i++) {
        sq_kagg *a = rl_map_at(&s->kagg, i, &k);
        sdb_stmt *g = s->ws[WS_KAGG_GET], *p = s->ws[WS_KAGG_PUT];
        size_t hn;
        int rc;
        if (!a)
            continue;
        if (!a->cached) {
            qbind_u64(g, 1, k[0]);
            qbind_u64(g, 2, k[1]);
            rc = sdb_step(g);
            if (rc == SDB_ROW)
                sq_kagg_merge(a, g, 0);
            sdb_reset(g);
            if (rc != SDB_ROW && rc != SDB_DONE)
                return sq_err(rc);
        }
        qbind_u64(p, 1, k[0]);
        qbind_u64(p, 2, k[1]);
        qbind_u64(p, 3, a->n);
        qbind_u64(p, 4, a->total);
        qbind_u64(p, 5, a->min);
        qbind_u64(p, 6, a->max);
        qbind_f64(p, 7, a->sum_occ);
        qbind_u64(p, 8, a->n_occ);
        qbind_u64(p, 9, (uint64_t)a->regs);
        qbind_u64(p, 10, (uint64_t)a->smem);
        hn = rl_hist_encode(a->hist, enc);
        qbind_blob(p, 11, enc, hn);
        if ((rc = qrun(p)) != 0)
            return rc;
        sq_kac_keep(s, k, a, enc, hn);
    }
    return GPUFL_OK;
}

static int lite_flush(srv_store *s)
{
    lite_writer *lw = s->wst;
    const uint64_t *k;
    uint64_t row[SQ_UPGROUP * 8];
    size_t nv;
    int rc;

    /* the held kernels' rollups first, then the timeline's open runs;
     * level 1 into its packs, the other levels as rows */
    if ((rc = kq_flush(s)) != 0 || (rc = sq_tl_runs_flush(s)) != 0 ||
        (rc = flush_kagg(s)) != 0 ||
        (rc = sq_lite_tl1_put(lw->tl1, &s->tl, s->ws[WS_TL])) != 0)
        return rc;
    /* SQ_UPGROUP rows a statement (store_sql_upgroup.c) */
    nv = 0;
    for (size_t i = 0; i < s->tl.cap; i++) {
        sq_tl *t = rl_map_at(&s->tl, i, &k);
        if (!t || sq_tl1_skip(k))
            continue;
        memcpy(&row[nv * 8], k, 4 * sizeof(uint64_t));
        row[nv * 8 + 4] = t->n;
        row[nv * 8 + 5] = t->busy;
        row[nv * 8 + 6] = t->top_name;
        row[nv * 8 + 7] = t->top_dur;
        if (++nv == SQ_UPGROUP) {
            if ((rc = sq_upgroup_run(lw->tlgrp, s->ws[WS_TL], row, nv, 8)) != 0)
                return rc;
            nv = 0;
        }
    }
    if ((rc = sq_upgroup_run(lw->tlgrp, s->ws[WS_TL], row, nv, 8)) != 0)
        return rc;
    nv = 0;
    for (size_t i = 0; i < s->kscope.cap; i++) {
        uint64_t *v = rl_map_at(&s->kscope, i, &k);
        if (!v)
            continue;
        row[nv * 4] = k[0];
        row[nv * 4 + 1] = k[1];
        row[nv * 4 + 2] = v[0];
        row[nv * 4 + 3] = v[1];
        if (++nv == SQ_UPGROUP) {
            if ((rc = sq_upgroup_run(lw->ksgrp, s->ws[WS_KSCOPE], row, nv,
                                     4)) != 0)
                return rc;
            nv = 0;
        }
    }
    return sq_upgroup_run(lw->ksgrp, s->ws[WS_KSCOPE], row, nv, 4);
}

/* One prepared statement per key (an IN (VALUES ...) list made SQLite
 * compare every row of the range with every key). */
static int key_step(srv_store *s, int w, const sq_ext_row *r)
{
    sdb_stmt *st = s->ws[w];
    qbind_i64(st, 1, r->sess);
    qbind_i64(st, 2, r->side);
    qbind_i64(st, 3, r->dur);
    qbind_i64(st, 4, r->seq);
    return qrun(st);
}

static int lite_kext(srv_store *s, sq_ext_row *del, size_t ndel,
                     const sq_ext_row *put, size_t nput)
{
    lite_writer *lw = s->wst;
    sq_ext_row cut[LITE_EXT_CUTS];
    size_t i, ncut = 0;
    int rc = GPUFL_OK;

    /* One range delete per session and side (sq_ext_cut_add), each a
     * seek and the rows it removes, instead of two statements per key
     * (~12 000 instructions a key, most of them SQLite's per-statement
     * work). */
    for (i = 0; i < ndel && !rc; i++) {
        const sq_ext_row *r = &del[i];
        if (sq_ext_cut_add(cut, NULL, &ncut, LITE_EXT_CUTS, r))
            continue;
        rc = key_step(s, WS_EXT_DEL, r);
        /* the key's kept row (store_sql_kxrow.c), written only where
         * blocks are */
        if (!rc && s->kstore_blocks)
            rc = key_step(s, WS_KX_DEL, r);
    }
    for (i = 0; i < ncut && !rc; i++)
        for (int t = 0; t < (s->kstore_blocks ? 2 : 1) && !rc; t++) {
            sdb_stmt *st = lw->ext_cut[t][cut[i].side ? 1 : 0];
            qbind_i64(st, 1, cut[i].sess);
            qbind_i64(st, 2, cut[i].dur);
            qbind_i64(st, 3, cut[i].seq);
            rc = qrun(st);
        }
    /* the keys coming in, SQ_UPGROUP a statement (store_sql_upgroup.c) */
    for (i = 0; i < nput && !rc; i += SQ_UPGROUP) {
        uint64_t row[SQ_UPGROUP * 4];
        size_t n = nput - i < SQ_UPGROUP ? nput - i : SQ_UPGROUP;
        for (size_t j = 0; j < n; j++) {
            row[j * 4] = (uint64_t)put[i + j].sess;
            row[j * 4 + 1] = (uint64_t)put[i + j].side;
            row[j * 4 + 2] = (uint64_t)put[i + j].dur;
            row[j * 4 + 3] = (uint64_t)put[i + j].seq;
        }
        rc = sq_upgroup_run(lw->extgrp, s->ws[WS_EXT_PUT], row, n, 4);
    }
    return rc;
}

static int lite_memstacks(srv_store *s, int64_t prof, const srv_memprof *p)
{
    sdb_stmt *st = NULL;
    int rc = GPUFL_OK;

    if (sdb_prepare(s->w,
                    "INSERT INTO memsamples(prof, idx, frames, alloc_bytes,"
                    " alloc_count, free_bytes, free_count, inuse_bytes,"
                    " inuse_count, fail_bytes, fail_count)"
                    " VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    &st))
        return GPUFL_EINTERNAL;
    for (size_t i = 0; i < p->n && !rc; i++) {
        qbind_i64(st, 1, prof);
        qbind_i64(st, 2, (int64_t)i);
        qbind_str(st, 3, p->stacks[i].frames);
        for (int k = 0; k < 8; k++)
            qbind_i64(st, 4 + k, (int64_t)p->stacks[i].v[k]);
        rc = qrun(st);
    }
    sdb_finalize(st);
    return rc;
}

static int lite_setup(srv_store *s)
{
    /* auto_vacuum must be chosen before the first table exists; FULL
     * sync: a 200 means the batch survives power loss, not only a crash */
    if (sdb_exec(s->w, "PRAGMA auto_vacuum=INCREMENTAL") ||
        sdb_exec(s->w, "PRAGMA journal_mode=WAL") ||
        sdb_exec(s->w, "PRAGMA synchronous=FULL"))
        return GPUFL_EUNAVAIL;
    /* 256 MiB of pages for the writer (SQLite fills it only as pages are
     * read): ingest's upserts seek rollup and index pages all over a long
     * session's database; at 64 MiB a 100M-kernel session spent 30 % of
     * the server's CPU reading them back through the OS (docs/server.md
     * "100M a fifth time": 3.61 -> 2.91 CPU-s per 1M, 240k -> 303k/s).
     * --sqlite-writer-cache changes it after open (main.c). */
    {
        char sql[64];
        snprintf(sql, sizeof(sql), "PRAGMA cache_size=-%llu",
                 (unsigned long long)(SRV_SQLITE_WCACHE_DEFAULT >> 10));
        sdb_exec(s->w, sql);
    }
    /* checkpoint every 256 MiB of WAL, not SQLite's 4 MiB: a 10k-kernel
     * batch writes about that much, so the default checkpoints (copies
     * into the database and fsyncs it) at nearly every commit; and a
     * checkpoint copies a page once however many commits rewrote it -
     * the compactor's transactions rewrite leaves of the name indexes
     * all over a long session's database, and at 64 MiB a checkpoint
     * copied most of them again (docs/server.md "100M a sixth time") */
    sdb_exec(s->w, "PRAGMA wal_autocheckpoint=65536");
    return GPUFL_OK;
}

static int lite_open(srv_store *s, char *eb, size_t ec)
{
    lite_writer *lw = calloc(1, sizeof(*lw));
    char sql[SQ_KGROUP * 54 + 64];
    size_t len;
    int rc;

    if (!lw)
        return GPUFL_ENOMEM;
    s->wst = lw;
    /* statement journals in memory: a multi-row insert that may fail
     * halfway (kbnames' rows, the rollups' upserts) copies each page it
     * changes first, and past 64 KiB SQLite wrote those copies to a temp
     * file - 470 MB of the server's writes per 2M kernels (bench_scale,
     * docs/server.md "Where ingest's CPU goes").  A statement's copies are
     * at most the pages it changes: a batch's or a merge's, a few MB.  Set
     * after the migrations (lite_setup runs before them), whose statements
     * over a big database's whole tables keep spilling to a file. */
    sdb_exec(s->w, "PRAGMA temp_store=MEMORY");
    rl_map_init(&lw->khigh, sizeof(int64_t), SQ_CACHE_MAX);
    lw->dver_last = -1;
    len = (size_t)snprintf(sql, sizeof(sql), "INSERT INTO kernels VALUES");
    for (int i = 0; i < SQ_KGROUP; i++)
        len += (size_t)snprintf(sql + len, sizeof(sql) - len,
                                "%s(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,"
                                "?,?,?,?,?,?)",
                                i ? "," : "");
    snprintf(sql + len, sizeof(sql) - len, " ON CONFLICT DO NOTHING");
    if ((rc = sdb_prepare(s->w, sql, &lw->kgrp)) != 0 ||
        (rc = sdb_prepare(s->w, "PRAGMA data_version", &lw->dver)) != 0 ||
        (rc = sq_upgroup_prepare(s->w, sq_wsql[WS_TL], 8, &lw->tlgrp)) != 0 ||
        (rc = sq_upgroup_prepare(s->w, sq_wsql[WS_KSCOPE], 4, &lw->ksgrp)) !=
            0 ||
        (rc = sq_upgroup_prepare(s->w, sq_wsql[WS_EXT_PUT], 4, &lw->extgrp)) !=
            0 ||
        (rc = sq_lite_tl1_open(s->w, &sq_tl1_tl, &lw->tl1)) != 0) {
        snprintf(eb, ec, "prepare kernel group: %s", sdb_errmsg(s->w));
        return rc;
    }
    for (int t = 0; t < 2; t++)
        for (int d = 0; d < 2; d++) {
            snprintf(sql, sizeof(sql),
                     "DELETE FROM %s WHERE sess=?1 AND side=%d AND"
                     " (dur, seq) %s (?2, ?3)",
                     t ? "kxrow" : "kext", d, d ? ">=" : "<=");
            if ((rc = sdb_prepare(s->w, sql, &lw->ext_cut[t][d])) != 0) {
                snprintf(eb, ec, "prepare kext cut: %s", sdb_errmsg(s->w));
                return rc;
            }
        }
    return GPUFL_OK;
}

static void lite_close(srv_store *s)
{
    lite_writer *lw = s->wst;

    if (s->w)
        sdb_exec(s->w, "PRAGMA optimize");
    if (!lw)
        return;
    sdb_finalize(lw->kgrp);
    sdb_finalize(lw->tlgrp);
    sdb_finalize(lw->ksgrp);
    sdb_finalize(lw->extgrp);
    sdb_finalize(lw->dver);
    sq_lite_tl1_close(lw->tl1);
    for (int t = 0; t < 2; t++)
        for (int d = 0; d < 2; d++)
            sdb_finalize(lw->ext_cut[t][d]);
    rl_map_release(&lw->khigh);
    free(lw);
    s->wst = NULL;
}

/* With several servers on one file, another one's kernels make the
 * highest-seq cache stale (the queue would take a stored kernel for a new
 * one and fail the batch). */
static int lite_begin(srv_store *s)
{
    lite_writer *lw = s->wst;
    int64_t v;
    int rc = sdb_step(lw->dver);

    v = rc == SDB_ROW ? qcol_i64(lw->dver, 0) : -1;
    sdb_reset(lw->dver);
    rc = sdb_err(rc);
    if (!rc && v != lw->dver_last) {
        rl_map_clear(&lw->khigh);
        lw->dver_last = v;
    }
    return rc;
}

static void lite_abort(srv_store *s)
{
    lite_writer *lw = s->wst;

    /* seqs cached in the rolled-back transaction */
    rl_map_clear(&lw->khigh);
    lw->nkq = 0;
}

const sq_writer sq_writer_sqlite = {
    .name = "sqlite",
    /* each COMMIT is an fsync and the index pages written to the WAL
     * again, under the lock: at 10 ms the compactor's extra commits cost
     * the ingest more than its shorter waits saved (docs/server.md
     * "Maintenance gives way") */
    .give_ns = 50u * 1000u * 1000u,
    .setup = lite_setup,
    .open = lite_open,
    .close = lite_close,
    .begin = lite_begin,
    .kernel = lite_kernel,
    .settle = kq_flush,
    .flush = lite_flush,
    .kext = lite_kext,
    .abort = lite_abort,
    .memstacks = lite_memstacks,
};
