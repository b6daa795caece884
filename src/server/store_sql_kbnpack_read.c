/*
 * store_sql_kbnpack_read.c - the name filters' read of the kernel blocks'
 * names packed (kbnpack, kbndir; schema 30): a name's packs and their
 * ranges' directories, merged per block (sq_kbnp_read,
 * store_sql_kbnpack.h).  The packer that writes them is
 * store_sql_kbnpack.c.
 */
#include "store_sql_kbnpack.h"
#include "store_sql_writer_int.h"
#include "common/buf.h"
#include "common/log.h"

#include <gpufl/gpufl.h>

#include <stdlib.h>

/* a decode buffer of room for a pack of len bytes (an entry is 4
 * bytes at least; no more than a pack holds): 0, or GPUFL_ENOMEM */
static int room(sq_kbne **v, size_t *cap, size_t len)
{
    size_t need = len / 4 + 1 < SQ_KBNP_MAX ? len / 4 + 1 : SQ_KBNP_MAX;
    sq_kbne *y;

    if (need <= *cap)
        return GPUFL_OK;
    if (!(y = realloc(*v, need * sizeof(*y))))
        return GPUFL_ENOMEM;
    *v = y;
    *cap = need;
    return GPUFL_OK;
}

/* A range's packs of several names, merged into its directory d[0..nd):
 * per block, the names' counts added up and their duration bounds
 * widened (d[j].n > 0: some name is in block j). */
static int merge_pack(const sq_kbne *v, size_t n, sq_kbne *d, size_t nd)
{
    for (size_t i = 0; i < n; i++) {
        sq_kbne *b = bsearch(&v[i], d, nd, sizeof(*d), sq_kbne_by_lo);
        if (!b) /* every block of a pack is in its directory */
            return GPUFL_EINTERNAL;
        if (!b->n) {
            b->dmin = v[i].dmin;
            b->dmax = v[i].dmax;
        } else {
            if (v[i].dmin < b->dmin)
                b->dmin = v[i].dmin;
            if (v[i].dmax > b->dmax)
                b->dmax = v[i].dmax;
        }
        b->n += v[i].n > 0 ? v[i].n : 1;
    }
    return GPUFL_OK;
}

/* Element j of the name ids *ctx, for sq_arr_bind */
static void id_el(gbuf *cb, void *ctx, size_t j)
{
    sq_av_i64(cb, (*(const int64_t *const *)ctx)[j]);
}

/* One statement per name, each in (stream, r0) order, walked together:
 * a range's directory is read and decoded once for all the names that
 * have a pack in it, not once per name (11 names at 100M: 4,224 pack rows
 * read with as many directories before, with 384 now), and each block
 * goes to fn once, however many of the names it holds (the name sort's
 * heap: 220,000 entries for 11 names at 100M before, 20,000 now). */
int sq_kbnp_read(sdb *db, int64_t sess, const int64_t *ids, size_t nids,
                 int64_t t_lo, int64_t t_hi, sq_kbnp_fn fn, void *arg,
                 uint64_t *packs)
{
    sdb_stmt **st = NULL, *ds = NULL;
    uint8_t *has = NULL;
    sq_kbne *v = NULL, *d = NULL;
    size_t cap = 0, dcap = 0;
    /* PostgreSQL: ds holds every directory wanted, in order (dhas: a row
     * at its head) */
    int rc = SDB_DONE, err = GPUFL_OK, all = sdb_dialect(db) != SDB_SQLITE,
        dhas = 0;

    if (!nids)
        return GPUFL_OK;
    if (!(st = calloc(nids, sizeof(*st))) || !(has = calloc(nids, 1))) {
        free(st);
        return GPUFL_ENOMEM;
    }
    if (sdb_prepare(db, all ? SQ_KBNP_DIRS_SQL_PG : SQ_KBNP_DIR_SQL, &ds))
        err = GPUFL_EINTERNAL;
    if (!err && all) {
        /* the ids as a bigint[] (sq_arr_bind) */
        gbuf cb;
        gbuf_init(&cb, (nids + 1) * SQ_CB_COL);
        qbind_i64(ds, 1, sess);
        if ((err = sq_arr_bind(ds, 2, &cb, nids, SDB_ARR_I64, SQ_CB_COL, id_el,
                               &ids)) == 0) {
            if ((rc = sdb_step(ds)) == SDB_ROW)
                dhas = 1;
            else if (rc != SDB_DONE)
                err = sq_err(rc);
        }
        gbuf_release(&cb);
    }
    for (size_t i = 0; i < nids && !err; i++) {
        if (sdb_prepare(db,
                        sdb_dialect(db) == SDB_SQLITE ? SQ_KBNP_READ_SQL_LITE
                                                      : SQ_KBNP_READ_SQL_PG,
                        &st[i])) {
            err = GPUFL_EINTERNAL;
            break;
        }
        qbind_i64(st[i], 1, sess);
        qbind_i64(st[i], 2, ids[i]);
        if ((rc = sdb_step(st[i])) == SDB_ROW)
            has[i] = 1;
        else if (rc != SDB_DONE)
            err = sq_err(rc);
    }
    while (!err) {
        int64_t stream = 0, r0 = 0;
        size_t nd = 0, k;
        const void *dp;
        size_t dlen = 0;
        int any = 0;
        /* the lowest (stream, r0) at the names' heads */
        for (size_t i = 0; i < nids; i++) {
            int64_t a, b;
            if (!has[i])
                continue;
            a = qcol_i64(st[i], 0);
            b = qcol_i64(st[i], 1);
            if (!any || a < stream || (a == stream && b < r0)) {
                stream = a;
                r0 = b;
                any = 1;
            }
        }
        if (!any)
            break;
        if (all) {
            /* the directories before this range's have no pack of the
             * names left (a pack's range is at the names' heads first) */
            while (dhas &&
                   (qcol_i64(ds, 0) < stream ||
                    (qcol_i64(ds, 0) == stream && qcol_i64(ds, 1) < r0)))
                if ((rc = sdb_step(ds)) != SDB_ROW) {
                    dhas = 0;
                    if (rc != SDB_DONE)
                        err = sq_err(rc);
                }
            if (err)
                break;
            rc = dhas && qcol_i64(ds, 0) == stream && qcol_i64(ds, 1) == r0
                     ? SDB_ROW
                     : SDB_DONE;
        } else {
            sdb_reset(ds);
            qbind_i64(ds, 1, sess);
            qbind_i64(ds, 2, stream);
            qbind_i64(ds, 3, r0);
            rc = sdb_step(ds);
        }
        if (rc != SDB_ROW) {
            err = rc == SDB_DONE ? GPUFL_EINTERNAL : sq_err(rc);
            if (rc == SDB_DONE) /* a pack without its directory */
                glog_error("kbnpack",
                           "session %lld stream %lld r0 %lld: packs without"
                           " a directory",
                           (long long)sess, (long long)stream, (long long)r0);
            break;
        }
        dp = qcol_blob(ds, all ? 2 : 0, &dlen);
        if ((err = room(&d, &dcap, dlen)) != 0)
            break;
        if (sq_kbnp_decode(1, dp, dlen, r0, d, dcap, &nd)) {
            glog_error("kbnpack",
                       "session %lld stream %lld r0 %lld: its directory does"
                       " not decode",
                       (long long)sess, (long long)stream, (long long)r0);
            err = GPUFL_EINTERNAL;
            break;
        }
        for (size_t i = 0; i < nids && !err; i++) {
            const void *p;
            size_t len = 0, n = 0;
            if (!has[i] || qcol_i64(st[i], 0) != stream ||
                qcol_i64(st[i], 1) != r0)
                continue;
            (*packs)++;
            p = qcol_blob(st[i], 2, &len);
            if ((err = room(&v, &cap, len)) != 0)
                break;
            if (sq_kbnp_decode(0, p, len, r0, v, cap, &n) ||
                merge_pack(v, n, d, nd)) {
                glog_error("kbnpack",
                           "session %lld stream %lld r0 %lld name %lld: its"
                           " pack does not decode",
                           (long long)sess, (long long)stream, (long long)r0,
                           (long long)ids[i]);
                err = GPUFL_EINTERNAL;
                break;
            }
            if ((rc = sdb_step(st[i])) == SDB_ROW)
                continue;
            has[i] = 0;
            if (rc != SDB_DONE)
                err = sq_err(rc);
        }
        for (k = 0; k < nd && !err; k++)
            if (d[k].n && d[k].t_lo < t_hi && d[k].t_hi >= t_lo)
                err = fn(arg, stream, &d[k]);
    }
    for (size_t i = 0; i < nids; i++)
        sdb_finalize(st[i]);
    sdb_finalize(ds);
    free(st);
    free(has);
    free(v);
    free(d);
    return err;
}
