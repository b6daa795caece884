/*
 * store_sql_q_time.c - the system samples (host and GPUs) of a time range,
 * bucketed to what the screen can show (the kernel timeline is
 * store_sql_q_timeline.c).  Points of a minute or more read the 60 s
 * buckets kept at ingest (srl), finer ones the samples.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/num.h"
#include "srv_json.h"
#include "store_sql_q.h"

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
