/*
 * store_sql_q_time.c - a session over a time range, bucketed to what the
 * screen can show: the kernel timeline per lane and pixel, and the system
 * samples (host and GPUs) per point.
 *
 * The timeline reads the coarsest rollup level whose buckets are still no
 * wider than a pixel, so any zoom touches at most ~16 stored buckets per
 * pixel and lane; below the finest level it reads the kernels themselves,
 * unless the window holds too many of them (SQ_TL_RAW_DENSE).  System
 * points of a minute or more read the 60 s buckets kept at ingest (srl),
 * finer ones the samples.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/num.h"
#include "srv_json.h"
#include "store_sql_q.h"

/* Rows the raw (finest zoom) timeline reads at most. */
#define SQ_TL_RAW_MAX 200000
/* Kernels a window may hold (estimated from the session's average rate)
 * and still be read raw; a denser one is answered from the finest rollup
 * level, whose buckets are then wider than a pixel (reading ~36 000 raw
 * rows took PostgreSQL ~100 ms). */
#define SQ_TL_RAW_DENSE 16384

typedef struct tl_px {
    uint64_t n, busy, top_dur;
    int64_t top_name;
} tl_px;

typedef struct tl_lane {
    int64_t lane;
    tl_px *px;
} tl_lane;

static tl_lane *lane_get(tl_lane *lanes, int *nl, int64_t lane, uint32_t width)
{
    for (int i = 0; i < *nl; i++)
        if (lanes[i].lane == lane)
            return &lanes[i];
    if (*nl >= SQ_TL_LANES_MAX)
        return NULL;
    lanes[*nl].lane = lane;
    lanes[*nl].px = calloc(width, sizeof(tl_px));
    if (!lanes[*nl].px)
        return NULL;
    return &lanes[(*nl)++];
}

static void px_add(tl_px *p, uint64_t n, uint64_t busy, int64_t name,
                   uint64_t dur)
{
    p->n += n;
    p->busy += busy;
    if (dur >= p->top_dur) {
        p->top_dur = dur;
        p->top_name = name;
    }
}

int srv_store_q_timeline(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    uint64_t from, to, bw;
    uint32_t width = q->width ? q->width : 1000;
    tl_lane lanes[SQ_TL_LANES_MAX];
    int nl = 0, level = -1, rc;
    int64_t names[64];
    int nn = 0;

    if (width > SQ_TL_WIDTH_MAX)
        width = SQ_TL_WIDTH_MAX;
    q_begin(s, &c);
    if ((rc = q_session(&c, q->sid)) != 0)
        return q_end(&c, rc, w);
    from = q->from ? q->from : (uint64_t)c.first;
    to = q->to ? q->to : (uint64_t)c.last + 1;
    if (to <= from)
        return q_end(&c, GPUFL_EINVAL, w);
    bw = (to - from + width - 1) / width;
    for (int lv = RL_TL_LEVELS - 1; lv >= 0; lv--) {
        if ((1ull << rl_tl_shift(lv)) <= bw) {
            level = lv;
            break;
        }
    }
    if (level < 0 && c.last > c.first) {
        /* too many kernels in the window to read them raw? */
        double est = 0;
        if (q_prepare(&c, "SELECT n_kernels FROM sessions WHERE id=?") == 0) {
            qbind_i64(c.st, 1, c.sess);
            if (sdb_step(c.st) == SDB_ROW)
                est = (double)qcol_i64(c.st, 0) * (double)(to - from) /
                      (double)(c.last - c.first);
        }
        if (est > SQ_TL_RAW_DENSE)
            level = 0;
    }
    if (level >= 0) {
        unsigned sh = rl_tl_shift(level);
        rc = q_prepare(&c,
                       "SELECT lane, b, n, busy, top_name, top_dur FROM tl"
                       " WHERE sess=?1 AND lvl=?2 AND lane IN (SELECT DISTINCT"
                       " lane FROM tl WHERE sess=?1 AND lvl=?5) AND b >= ?3"
                       " AND b <= ?4");
        if (rc)
            return q_end(&c, rc, w);
        qbind_i64(c.st, 1, c.sess);
        qbind_i64(c.st, 2, level);
        qbind_i64(c.st, 3, (int64_t)(from >> sh));
        qbind_i64(c.st, 4, (int64_t)((to - 1) >> sh));
        qbind_i64(c.st, 5, RL_TL_LEVELS - 1);
        while ((rc = sdb_step(c.st)) == SDB_ROW) {
            uint64_t t0 = (uint64_t)qcol_i64(c.st, 1) << sh;
            uint64_t i = t0 > from ? (t0 - from) / bw : 0;
            tl_lane *L = lane_get(lanes, &nl, qcol_i64(c.st, 0), width);
            if (!L)
                continue;
            px_add(&L->px[i < width ? i : width - 1],
                   (uint64_t)qcol_i64(c.st, 2), (uint64_t)qcol_i64(c.st, 3),
                   qcol_i64(c.st, 4), (uint64_t)qcol_i64(c.st, 5));
        }
    } else {
        int64_t nrow = 0;
        rc = q_prepare(&c, "SELECT dev, stream, ts, dur, name_id FROM kernels"
                           " WHERE sess=? AND ts >= ? AND ts < ? ORDER BY ts"
                           " LIMIT ?");
        if (rc)
            return q_end(&c, rc, w);
        qbind_i64(c.st, 1, c.sess);
        qbind_i64(c.st, 2, (int64_t)from);
        qbind_i64(c.st, 3, (int64_t)to);
        qbind_i64(c.st, 4, SQ_TL_RAW_MAX);
        while ((rc = sdb_step(c.st)) == SDB_ROW) {
            uint64_t ts = (uint64_t)qcol_i64(c.st, 2),
                     dur = (uint64_t)qcol_i64(c.st, 3);
            uint64_t i = (ts - from) / bw;
            tl_lane *L = lane_get(
                lanes, &nl, qcol_i64(c.st, 0) << 32 | qcol_i64(c.st, 1), width);
            nrow++;
            if (!L)
                continue;
            px_add(&L->px[i < width ? i : width - 1], 1, dur, qcol_i64(c.st, 4),
                   dur);
        }
        (void)nrow;
    }
    if (rc != SDB_DONE) {
        rc = sq_err(rc);
        goto out;
    }
    rc = GPUFL_OK;
    jw_obj_begin(w);
    srv_jw_kv_udec(w, "from", from);
    srv_jw_kv_udec(w, "to", to);
    jw_kv_u64(w, "width", width);
    srv_jw_kv_udec(w, "bucket_ns", bw);
    jw_key(w, "level");
    if (level >= 0)
        srv_jw_udec(w, 1ull << rl_tl_shift(level));
    else
        jw_str(w, "raw");
    jw_key(w, "lanes");
    jw_arr_begin(w);
    for (int i = 0; i < nl; i++) {
        jw_obj_begin(w);
        srv_jw_kv_num(w, "dev", lanes[i].lane >> 32);
        srv_jw_kv_num(w, "stream", lanes[i].lane & 0xffffffff);
        /* [pixel, kernels started, busy ns, top kernel name id] */
        jw_key(w, "buckets");
        jw_arr_begin(w);
        for (uint32_t p = 0; p < width; p++) {
            tl_px *x = &lanes[i].px[p];
            if (!x->n && !x->busy)
                continue;
            jw_arr_begin(w);
            jw_u64(w, p);
            srv_jw_unum(w, x->n);
            srv_jw_udec(w, x->busy);
            srv_jw_num(w, x->top_name);
            jw_arr_end(w);
            if (nn < 64) {
                int seen = 0;
                for (int k = 0; k < nn; k++)
                    seen |= names[k] == x->top_name;
                if (!seen)
                    names[nn++] = x->top_name;
            }
        }
        jw_arr_end(w);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    for (int pass = 0; pass < 2; pass++) {
        jw_key(w, pass ? "mangled" : "names");
        jw_obj_begin(w);
        for (int k = 0; k < nn; k++) {
            char key[24], nm[SQ_NAME_MAX + 1], mg[SQ_NAME_MAX + 1];
            size_t kl = jw_fmt_u64(key, (uint64_t)names[k]);
            key[kl] = '\0';
            sq_kname_of(c.db, c.sess, names[k], nm, mg, sizeof(nm));
            jw_key(w, key);
            jw_str(w, pass ? mg : nm);
        }
        jw_obj_end(w);
    }
    jw_obj_end(w);
out:
    for (int i = 0; i < nl; i++)
        free(lanes[i].px);
    return q_end(&c, rc, w);
}

static int field_idx(const char *name, size_t n)
{
    for (int i = 0; i < SRV_SYS_NFIELDS; i++)
        if (strlen(srv_sys_fields[i]) == n &&
            memcmp(srv_sys_fields[i], name, n) == 0)
            return i;
    return -1;
}

int srv_store_q_system(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    int fi[SRV_SYS_NFIELDS], nf = 0, rc;
    uint32_t points = q->points ? q->points : 500;
    uint64_t from, to, bw;
    int64_t srcs[64];
    int ns = 0, only = INT32_MIN, rollup;
    char sql[4096];
    size_t len;

    if (points > SQ_POINTS_MAX)
        points = SQ_POINTS_MAX;
    if (q->fields) {
        const char *p = q->fields;
        while (*p) {
            size_t k = strcspn(p, ",");
            int i = field_idx(p, k);
            if (i < 0)
                return GPUFL_EINVAL;
            if (nf < SRV_SYS_NFIELDS)
                fi[nf++] = i;
            p += k;
            if (*p == ',')
                p++;
        }
    } else {
        for (int i = 0; i < SRV_SYS_NFIELDS; i++)
            fi[nf++] = i;
    }
    if (q->src) {
        uint64_t g;
        if (strcmp(q->src, "host") == 0)
            only = -1;
        else if (strncmp(q->src, "gpu", 3) == 0 && !num_u64(q->src + 3, &g))
            only = g < 1000000 ? (int)g : -2;
        else
            return GPUFL_EINVAL;
        if (only == -2)
            return GPUFL_EINVAL;
    }
    q_begin(s, &c);
    if ((rc = q_session(&c, q->sid)) != 0)
        return q_end(&c, rc, w);
    from = q->from ? q->from : (uint64_t)c.first;
    to = q->to ? q->to : (uint64_t)c.last + 1;
    if (to <= from)
        return q_end(&c, GPUFL_EINVAL, w);
    bw = (to - from + points - 1) / points;
    /* the sources: one index probe each (DISTINCT read every sample) */
    if ((rc = q_prepare(&c,
                        "WITH RECURSIVE s(src) AS (SELECT min(src) FROM samples"
                        " WHERE sess=?1 UNION ALL SELECT (SELECT min(src) FROM"
                        " samples WHERE sess=?1 AND src > s.src) FROM s WHERE"
                        " s.src IS NOT NULL) SELECT src FROM s WHERE src IS NOT"
                        " NULL")))
        return q_end(&c, rc, w);
    qbind_i64(c.st, 1, c.sess);
    while (sdb_step(c.st) == SDB_ROW && ns < 64)
        srcs[ns++] = qcol_i64(c.st, 0);
    /* points of 60 s or more: the 60 s buckets (srl), each counted in the
     * point its first sample falls in; finer: the samples */
    rollup = bw >= (uint64_t)SQ_SRL_NS;
    len =
        (size_t)snprintf(sql, sizeof(sql), "SELECT (%s - ?1) / ?2, min(%s), %s",
                         rollup ? "t0" : "ts", rollup ? "t0" : "ts",
                         rollup ? "sum(n)" : "count(*)");
    for (int i = 0; i < nf; i++)
        len += (size_t)snprintf(
            sql + len, sizeof(sql) - len,
            rollup ? ", min(mn%d), max(mx%d), sum(sm%d) / NULLIF(sum(ct%d), 0)"
                   : ", min(f%d), max(f%d), avg(f%d)",
            fi[i], fi[i], fi[i], fi[i]);
    if (rollup)
        snprintf(sql + len, sizeof(sql) - len,
                 " FROM srl WHERE sess=?3 AND src=?4 AND b >= ?6 AND b <= ?7"
                 " AND t0 >= ?1 AND t0 < ?5 GROUP BY 1 ORDER BY 1");
    else
        snprintf(sql + len, sizeof(sql) - len,
                 " FROM samples WHERE sess=?3 AND src=?4 AND ts >= ?1 AND"
                 " ts < ?5 GROUP BY 1 ORDER BY 1");
    if ((rc = q_prepare(&c, sql)))
        return q_end(&c, rc, w);
    jw_obj_begin(w);
    srv_jw_kv_udec(w, "from", from);
    srv_jw_kv_udec(w, "to", to);
    srv_jw_kv_udec(w, "bucket_ns", bw);
    jw_key(w, "series");
    jw_arr_begin(w);
    for (int si = 0; si < ns; si++) {
        if (only != INT32_MIN && srcs[si] != only)
            continue;
        sdb_reset(c.st);
        qbind_i64(c.st, 1, (int64_t)from);
        qbind_i64(c.st, 2, (int64_t)bw);
        qbind_i64(c.st, 3, c.sess);
        qbind_i64(c.st, 4, srcs[si]);
        qbind_i64(c.st, 5, (int64_t)to);
        if (rollup) {
            qbind_i64(c.st, 6, (int64_t)(from / (uint64_t)SQ_SRL_NS));
            qbind_i64(c.st, 7, (int64_t)((to - 1) / (uint64_t)SQ_SRL_NS));
        }
        jw_obj_begin(w);
        if (srcs[si] < 0) {
            jw_kv_str(w, "src", "host");
        } else {
            char nm[24];
            snprintf(nm, sizeof(nm), "gpu%lld", (long long)srcs[si]);
            jw_kv_str(w, "src", nm);
            srv_jw_kv_num(w, "dev", srcs[si]);
        }
        jw_key(w, "points");
        jw_arr_begin(w);
        while ((rc = sdb_step(c.st)) == SDB_ROW) {
            jw_obj_begin(w);
            srv_jw_kv_dec(w, "t", qcol_i64(c.st, 1));
            srv_jw_kv_num(w, "n", qcol_i64(c.st, 2));
            for (int i = 0; i < nf; i++) {
                if (qcol_null(c.st, 3 + 3 * i))
                    continue;
                jw_key(w, srv_sys_fields[fi[i]]);
                jw_arr_begin(w);
                for (int k = 0; k < 3; k++)
                    jw_f64(w, qcol_f64(c.st, 3 + 3 * i + k), 4);
                jw_arr_end(w);
            }
            jw_obj_end(w);
        }
        jw_arr_end(w);
        jw_obj_end(w);
        if (rc != SDB_DONE)
            break;
    }
    jw_arr_end(w);
    jw_obj_end(w);
    return q_end(&c, rc == SDB_DONE || ns == 0 ? 0 : sq_err(rc), w);
}
