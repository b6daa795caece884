/*
 * store_sql_q_scopes.c - where a session's time goes in its code: the
 * scope tree (wall time from scope_end lines, GPU time and kernels from
 * the kscope rollup, summed over subtrees) and the SASS / PC-sampling
 * profile per function and instruction, for the session or one scope
 * path, with the stall reasons.
 */
#include "store_sql_int.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv_json.h"
#include "store_sql_q.h"

typedef struct pnode {
    int64_t id, parent, name_id;
    int64_t depth;
    uint64_t inst, total, kernels, gpu_ns, sub_kernels, sub_gpu_ns, child_total;
    char *name; /* malloc'd, whole */
} pnode;

static int pfind(const pnode *p, int n, int64_t id)
{
    for (int i = 0; i < n; i++)
        if (p[i].id == id)
            return i;
    return -1;
}

static void w_pnode(jw *w, const pnode *p, int n, int i, char *pathbuf,
                    size_t plen)
{
    size_t len = plen;

    if (plen)
        len = sq_str_add_utf8(pathbuf, len, SQ_PATH_STR_MAX, "/");
    len = sq_str_add_utf8(pathbuf, len, SQ_PATH_STR_MAX, p[i].name);
    jw_obj_begin(w);
    jw_kv_str(w, "name", p[i].name);
    jw_kv_str(w, "path", pathbuf);
    srv_jw_kv_num(w, "path_id", p[i].id);
    srv_jw_kv_num(w, "depth", p[i].depth);
    srv_jw_kv_unum(w, "instances", p[i].inst);
    srv_jw_kv_udec(w, "total_ns", p[i].total);
    srv_jw_kv_udec(w, "self_ns",
                   p[i].total > p[i].child_total ? p[i].total - p[i].child_total
                                                 : 0);
    srv_jw_kv_unum(w, "kernels", p[i].kernels);
    srv_jw_kv_udec(w, "gpu_ns", p[i].gpu_ns);
    srv_jw_kv_unum(w, "kernels_total", p[i].sub_kernels);
    srv_jw_kv_udec(w, "gpu_ns_total", p[i].sub_gpu_ns);
    jw_key(w, "children");
    jw_arr_begin(w);
    for (int j = 0; j < n; j++)
        if (p[j].parent == p[i].id && j != i && p[j].depth > p[i].depth)
            w_pnode(w, p, n, j, pathbuf, len);
    jw_arr_end(w);
    jw_obj_end(w);
    pathbuf[plen] = '\0';
}

int srv_store_q_scopes(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    pnode *p = calloc(SQ_PATHS_MAX, sizeof(*p));
    char pathbuf[SQ_PATH_STR_MAX];
    int n = 0, rc;

    if (!p)
        return GPUFL_ENOMEM;
    q_begin(s, &c);
    if ((rc = q_session(&c, q->sid)) != 0)
        goto out;
    rc = q_prepare(&c, "SELECT p.id, p.parent, p.name_id, p.depth,"
                       " coalesce(n.name, '') FROM dicts p LEFT JOIN dicts n ON"
                       " n.sess=p.sess AND n.id=p.name_id WHERE p.sess=? AND"
                       " p.kind=1 ORDER BY p.depth, p.id");
    if (rc)
        goto out;
    qbind_i64(c.st, 1, c.sess);
    while ((rc = sdb_step(c.st)) == SDB_ROW && n < SQ_PATHS_MAX) {
        p[n].id = qcol_i64(c.st, 0);
        p[n].parent = qcol_i64(c.st, 1);
        p[n].name_id = qcol_i64(c.st, 2);
        p[n].depth = qcol_i64(c.st, 3);
        if (!(p[n].name = strdup(qcol_text(c.st, 4)))) {
            rc = GPUFL_ENOMEM;
            goto out;
        }
        n++;
    }
    /* wall time per path from the scope_end lines */
    rc =
        q_prepare(&c, "SELECT path, count(*), sum(dur) FROM scopes WHERE sess=?"
                      " AND type=? GROUP BY path");
    if (rc)
        goto out;
    qbind_i64(c.st, 1, c.sess);
    qbind_i64(c.st, 2, EV_SCOPE_END);
    while ((rc = sdb_step(c.st)) == SDB_ROW) {
        int i = pfind(p, n, qcol_i64(c.st, 0));
        if (i >= 0) {
            p[i].inst = (uint64_t)qcol_i64(c.st, 1);
            p[i].total = (uint64_t)qcol_i64(c.st, 2);
        }
    }
    /* kernels join their scope instance (rolled up at ingest) */
    rc = q_prepare(&c,
                   "SELECT s.path, sum(k.n), sum(k.gpu_ns) FROM kscope k JOIN"
                   " scopes s ON s.sess=k.sess AND s.id=k.scope AND s.type=?"
                   " WHERE k.sess=? GROUP BY s.path");
    if (rc)
        goto out;
    qbind_i64(c.st, 1, EV_SCOPE_BEGIN);
    qbind_i64(c.st, 2, c.sess);
    while ((rc = sdb_step(c.st)) == SDB_ROW) {
        int i = pfind(p, n, qcol_i64(c.st, 0));
        if (i >= 0) {
            p[i].kernels = (uint64_t)qcol_i64(c.st, 1);
            p[i].gpu_ns = (uint64_t)qcol_i64(c.st, 2);
        }
    }
    if (rc != SDB_DONE) {
        rc = sq_err(rc);
        goto out;
    }
    rc = GPUFL_OK;
    /* subtree sums, deepest first (sorted by depth) */
    for (int i = 0; i < n; i++) {
        p[i].sub_kernels = p[i].kernels;
        p[i].sub_gpu_ns = p[i].gpu_ns;
    }
    for (int i = n - 1; i >= 0; i--) {
        int j = pfind(p, n, p[i].parent);
        if (j >= 0 && j != i) {
            p[j].sub_kernels += p[i].sub_kernels;
            p[j].sub_gpu_ns += p[i].sub_gpu_ns;
            p[j].child_total += p[i].total;
        }
    }
    jw_obj_begin(w);
    jw_key(w, "items");
    jw_arr_begin(w);
    pathbuf[0] = '\0';
    for (int i = 0; i < n; i++)
        if (p[i].parent == 0 || pfind(p, n, p[i].parent) < 0)
            w_pnode(w, p, n, i, pathbuf, 0);
    jw_arr_end(w);
    jw_kv_i64(w, "paths", n);
    jw_obj_end(w);
out:
    for (int i = 0; i < n; i++)
        free(p[i].name);
    free(p);
    return q_end(&c, rc, w);
}

/* ---- profile ---- */

/* The path id whose full string is path, 0 if none. */
static int64_t path_id(qctx *c, const char *path)
{
    char buf[SQ_PATH_STR_MAX];
    sdb_stmt *st = NULL;
    int64_t found = 0;

    if (sdb_prepare(c->db,
                    "SELECT id FROM dicts WHERE sess=? AND"
                    " kind=1",
                    &st) != 0)
        return 0;
    qbind_i64(st, 1, c->sess);
    while (!found && sdb_step(st) == SDB_ROW) {
        int64_t id = qcol_i64(st, 0);
        if (strcmp(sq_path_of(c->db, c->sess, id, buf, sizeof(buf)), path) == 0)
            found = id;
    }
    sdb_finalize(st);
    return found;
}

static void w_ratio(jw *w, const char *k, double num, double den)
{
    jw_key(w, k);
    if (den > 0)
        jw_f64(w, num / den, 4);
    else
        jw_null(w);
}

int srv_store_q_profile(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    int64_t pid = 0;
    uint32_t n = 0, l = q_limit(q);
    int rc;

    q_begin(s, &c);
    if ((rc = q_session(&c, q->sid)) != 0)
        return q_end(&c, rc, w);
    if (q->path && (pid = path_id(&c, q->path)) == 0)
        return q_end(&c, GPUFL_ENOTFOUND, w);
    jw_obj_begin(w);
    if (q->path)
        jw_kv_str(w, "path", q->path);
    /* per function: warp efficiency (divergence) and coalescing */
    rc = q_prepare(&c,
                   "SELECT min(coalesce(n.demangled, n.name, '')), sum(s.inst),"
                   " sum(s.thread_inst), sum(s.sectors), sum(s.sectors_ideal),"
                   " sum(s.samples), min(coalesce(n.name, '')) FROM sass s"
                   " LEFT JOIN dicts n ON"
                   " n.sess=s.sess AND n.id=s.func WHERE s.sess=?1 AND"
                   " (?2 = 0 OR s.path=?2) GROUP BY s.func ORDER BY"
                   " sum(s.inst) + sum(s.samples) DESC LIMIT ?3");
    if (rc)
        goto fail;
    qbind_i64(c.st, 1, c.sess);
    qbind_i64(c.st, 2, pid);
    qbind_i64(c.st, 3, l);
    jw_key(w, "functions");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW) {
        double inst = (double)qcol_i64(c.st, 1), ti = (double)qcol_i64(c.st, 2);
        jw_obj_begin(w);
        jw_kv_str(w, "function", qcol_text(c.st, 0));
        jw_kv_str(w, "function_mangled", qcol_text(c.st, 6));
        srv_jw_kv_dec(w, "inst", qcol_i64(c.st, 1));
        srv_jw_kv_dec(w, "thread_inst", qcol_i64(c.st, 2));
        w_ratio(w, "warp_efficiency", ti, inst * 32);
        srv_jw_kv_dec(w, "sectors", qcol_i64(c.st, 3));
        srv_jw_kv_dec(w, "sectors_ideal", qcol_i64(c.st, 4));
        w_ratio(w, "coalescing", (double)qcol_i64(c.st, 4),
                (double)qcol_i64(c.st, 3));
        srv_jw_kv_num(w, "pc_samples", qcol_i64(c.st, 5));
        jw_obj_end(w);
    }
    jw_arr_end(w);
    if (rc != SDB_DONE)
        goto fail;
    /* per instruction (function, pc, source line) */
    rc = q_prepare(&c,
                   "SELECT min(coalesce(n.demangled, n.name, '')), s.pc,"
                   " min(coalesce(f.name, '')), min(s.line), sum(s.inst), "
                   "sum(s.thread_inst), sum(s.sectors),"
                   " sum(s.sectors_ideal), sum(s.samples),"
                   " min(coalesce(n.name, '')) FROM sass s LEFT JOIN"
                   " dicts n ON n.sess=s.sess AND n.id=s.func LEFT JOIN dicts f"
                   " ON f.sess=s.sess AND f.id=s.file WHERE s.sess=?1 AND"
                   " (?2 = 0 OR s.path=?2) GROUP BY s.func, s.pc ORDER BY"
                   " s.func, s.pc LIMIT ?3");
    if (rc)
        goto fail;
    qbind_i64(c.st, 1, c.sess);
    qbind_i64(c.st, 2, pid);
    qbind_i64(c.st, 3, SQ_LIMIT_MAX);
    jw_key(w, "instructions");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW && n++ < SQ_LIMIT_MAX) {
        jw_obj_begin(w);
        jw_kv_str(w, "function", qcol_text(c.st, 0));
        jw_kv_str(w, "function_mangled", qcol_text(c.st, 9));
        srv_jw_kv_num(w, "pc", qcol_i64(c.st, 1));
        jw_kv_str(w, "file", qcol_text(c.st, 2));
        srv_jw_kv_num(w, "line", qcol_i64(c.st, 3));
        srv_jw_kv_dec(w, "inst", qcol_i64(c.st, 4));
        w_ratio(w, "warp_efficiency", (double)qcol_i64(c.st, 5),
                (double)qcol_i64(c.st, 4) * 32);
        w_ratio(w, "coalescing", (double)qcol_i64(c.st, 7),
                (double)qcol_i64(c.st, 6));
        srv_jw_kv_num(w, "pc_samples", qcol_i64(c.st, 8));
        jw_obj_end(w);
    }
    jw_arr_end(w);
    if (rc != SDB_DONE && rc != SDB_ROW)
        goto fail;
    rc = q_prepare(&c,
                   "SELECT t.reason, sum(t.n) FROM stalls t JOIN sass s ON"
                   " s.sess=t.sess AND s.seq=t.seq WHERE t.sess=?1 AND"
                   " (?2 = 0 OR s.path=?2) GROUP BY t.reason ORDER BY 2 DESC");
    if (rc)
        goto fail;
    qbind_i64(c.st, 1, c.sess);
    qbind_i64(c.st, 2, pid);
    jw_key(w, "stalls");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW) {
        jw_obj_begin(w);
        jw_kv_str(w, "reason", qcol_text(c.st, 0));
        srv_jw_kv_num(w, "samples", qcol_i64(c.st, 1));
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_obj_end(w);
    return q_end(&c, rc == SDB_DONE ? 0 : sq_err(rc), w);
fail:
    return q_end(&c, sdb_err(rc) ? sdb_err(rc) : GPUFL_EINTERNAL, w);
}
