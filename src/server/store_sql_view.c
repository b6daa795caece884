/*
 * store_sql_view.c - the dashboard views on SQLite: timeline summary,
 * copies and their aggregates, the scope tree, SASS/PC profile and
 * downsampled system metrics.
 *
 * The timeline reads the coarsest rollup level whose buckets are still no
 * wider than a pixel, so any zoom touches at most ~16 stored buckets per
 * pixel and lane; below the finest level it reads the kernels themselves,
 * unless the window holds too many of them (SQ_TL_RAW_DENSE).
 */
#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_sql_q.h"
#include "common/num.h"

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
    if ((rc = sess_find(&c, q->sid)) != 0)
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
        if (prep(&c, "SELECT n_kernels FROM sessions WHERE id=?") == 0) {
            bi(&c, 1, c.sess);
            if (sdb_step(c.st) == SDB_ROW)
                est = (double)ci(&c, 0) * (double)(to - from) /
                      (double)(c.last - c.first);
        }
        if (est > SQ_TL_RAW_DENSE)
            level = 0;
    }
    if (level >= 0) {
        unsigned sh = rl_tl_shift(level);
        rc = prep(&c, "SELECT lane, b, n, busy, top_name, top_dur FROM tl"
                      " WHERE sess=?1 AND lvl=?2 AND lane IN (SELECT DISTINCT"
                      " lane FROM tl WHERE sess=?1 AND lvl=?5) AND b >= ?3"
                      " AND b <= ?4");
        if (rc)
            return q_end(&c, rc, w);
        bi(&c, 1, c.sess);
        bi(&c, 2, level);
        bi(&c, 3, (int64_t)(from >> sh));
        bi(&c, 4, (int64_t)((to - 1) >> sh));
        bi(&c, 5, RL_TL_LEVELS - 1);
        while ((rc = sdb_step(c.st)) == SDB_ROW) {
            uint64_t t0 = (uint64_t)ci(&c, 1) << sh;
            uint64_t i = t0 > from ? (t0 - from) / bw : 0;
            tl_lane *L = lane_get(lanes, &nl, ci(&c, 0), width);
            if (!L)
                continue;
            px_add(&L->px[i < width ? i : width - 1], (uint64_t)ci(&c, 2),
                   (uint64_t)ci(&c, 3), ci(&c, 4), (uint64_t)ci(&c, 5));
        }
    } else {
        int64_t nrow = 0;
        rc = prep(&c, "SELECT dev, stream, ts, dur, name_id FROM kernels"
                      " WHERE sess=? AND ts >= ? AND ts < ? ORDER BY ts"
                      " LIMIT ?");
        if (rc)
            return q_end(&c, rc, w);
        bi(&c, 1, c.sess);
        bi(&c, 2, (int64_t)from);
        bi(&c, 3, (int64_t)to);
        bi(&c, 4, SQ_TL_RAW_MAX);
        while ((rc = sdb_step(c.st)) == SDB_ROW) {
            uint64_t ts = (uint64_t)ci(&c, 2), dur = (uint64_t)ci(&c, 3);
            uint64_t i = (ts - from) / bw;
            tl_lane *L =
                lane_get(lanes, &nl, ci(&c, 0) << 32 | ci(&c, 1), width);
            nrow++;
            if (!L)
                continue;
            px_add(&L->px[i < width ? i : width - 1], 1, dur, ci(&c, 4), dur);
        }
        (void)nrow;
    }
    if (rc != SDB_DONE) {
        rc = sq_err(rc);
        goto out;
    }
    rc = GPUFL_OK;
    jw_obj_begin(w);
    jw_kv_u64(w, "from", from);
    jw_kv_u64(w, "to", to);
    jw_kv_u64(w, "width", width);
    jw_kv_u64(w, "bucket_ns", bw);
    jw_key(w, "level");
    if (level >= 0)
        jw_u64(w, 1ull << rl_tl_shift(level));
    else
        jw_str(w, "raw");
    jw_key(w, "lanes");
    jw_arr_begin(w);
    for (int i = 0; i < nl; i++) {
        jw_obj_begin(w);
        jw_kv_i64(w, "dev", lanes[i].lane >> 32);
        jw_kv_i64(w, "stream", lanes[i].lane & 0xffffffff);
        /* [pixel, kernels started, busy ns, top kernel name id] */
        jw_key(w, "buckets");
        jw_arr_begin(w);
        for (uint32_t p = 0; p < width; p++) {
            tl_px *x = &lanes[i].px[p];
            if (!x->n && !x->busy)
                continue;
            jw_arr_begin(w);
            jw_u64(w, p);
            jw_u64(w, x->n);
            jw_u64(w, x->busy);
            jw_i64(w, x->top_name);
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
    jw_key(w, "names");
    jw_obj_begin(w);
    for (int k = 0; k < nn; k++) {
        char key[24], nm[SQ_NAME_MAX + 1];
        size_t kl = jw_fmt_u64(key, (uint64_t)names[k]);
        key[kl] = '\0';
        jw_key(w, key);
        jw_str(w, name_of(c.db, c.sess, names[k], nm, sizeof(nm)));
    }
    jw_obj_end(w);
    jw_obj_end(w);
out:
    for (int i = 0; i < nl; i++)
        free(lanes[i].px);
    return q_end(&c, rc, w);
}

/* ---- copies ---- */

static const char *const op_names[] = { "memcpy", "memset", "sync", "alloc",
                                        "free" };

static int op_type(const char *kind)
{
    for (int i = 0; i < 5; i++)
        if (strcmp(kind, op_names[i]) == 0)
            return EV_MEMCPY + i;
    return -1;
}

int srv_store_q_copies(srv_store *s, const srv_q *q, jw *w)
{
    qctx c;
    int64_t cur[2] = { INT64_MIN, -1 }, last[2] = { 0, 0 };
    uint32_t n = 0, l = lim(q);
    int type = q->kind ? op_type(q->kind) : 0, rc;

    if (type < 0)
        return GPUFL_EINVAL;
    q_begin(s, &c);
    if ((rc = sess_find(&c, q->sid)) != 0)
        return q_end(&c, rc, w);
    if (cursor(q, cur, 2) < 0)
        return q_end(&c, GPUFL_EINVAL, w);
    if (cur[0] < (int64_t)q->from) {
        cur[0] = (int64_t)q->from; /* one bound on the index key */
        cur[1] = -1;
    }
    rc = prep(&c, "SELECT seq, type, ts, dur, dev, stream, corr, kind, bytes,"
                  " scope, flags FROM ops WHERE sess=?1 AND ts >= ?2 AND"
                  " ts < ?3 AND (ts, seq) > (?4, ?5) AND"
                  " (?6 = 0 OR type = ?6) ORDER BY ts, seq LIMIT ?7");
    if (rc)
        return q_end(&c, rc, w);
    bi(&c, 1, c.sess);
    bi(&c, 2, (int64_t)q->from);
    bi(&c, 3, q->to ? (int64_t)q->to : INT64_MAX);
    bi(&c, 4, cur[0]);
    bi(&c, 5, cur[1]);
    bi(&c, 6, type);
    bi(&c, 7, l + 1);
    jw_obj_begin(w);
    jw_key(w, "items");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW && n < l) {
        int t = (int)ci(&c, 1) - EV_MEMCPY;
        jw_obj_begin(w);
        jw_kv_i64(w, "seq", ci(&c, 0));
        jw_kv_str(w, "type", t >= 0 && t < 5 ? op_names[t] : "?");
        jw_kv_i64(w, "ts", ci(&c, 2));
        jw_kv_i64(w, "dur", ci(&c, 3));
        jw_kv_i64(w, "dev", ci(&c, 4));
        jw_kv_i64(w, "stream", ci(&c, 5));
        jw_kv_i64(w, "corr", ci(&c, 6));
        if (!sdb_col_null(c.st, 7))
            jw_kv_str(w, "kind", ct(&c, 7));
        jw_kv_i64(w, "bytes", ci(&c, 8));
        jw_kv_i64(w, "scope", ci(&c, 9));
        jw_kv_i64(w, "flags", ci(&c, 10));
        jw_obj_end(w);
        last[0] = ci(&c, 2);
        last[1] = ci(&c, 0);
        n++;
    }
    jw_arr_end(w);
    w_next(w, rc == SDB_ROW, last, 2);
    if (rc != SDB_ROW && rc != SDB_DONE)
        return q_end(&c, sq_err(rc), w);
    /* aggregates by type and direction over the whole range */
    rc = prep(&c, "SELECT type, coalesce(kind, ''), count(*), sum(bytes),"
                  " sum(dur) FROM ops WHERE sess=?1 AND ts >= ?2 AND ts < ?3"
                  " GROUP BY type, kind ORDER BY type, kind");
    if (rc)
        return q_end(&c, rc, w);
    bi(&c, 1, c.sess);
    bi(&c, 2, (int64_t)q->from);
    bi(&c, 3, q->to ? (int64_t)q->to : INT64_MAX);
    jw_key(w, "aggregate");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW) {
        int t = (int)ci(&c, 0) - EV_MEMCPY;
        int64_t bytes = ci(&c, 3), dur = ci(&c, 4);
        jw_obj_begin(w);
        jw_kv_str(w, "type", t >= 0 && t < 5 ? op_names[t] : "?");
        jw_kv_str(w, "kind", ct(&c, 1));
        jw_kv_i64(w, "count", ci(&c, 2));
        jw_kv_i64(w, "bytes", bytes);
        jw_kv_i64(w, "dur_ns", dur);
        jw_key(w, "gbps"); /* bytes per ns = GB/s */
        if (dur > 0 && t == 0)
            jw_f64(w, (double)bytes / (double)dur, 3);
        else
            jw_null(w);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_obj_end(w);
    return q_end(&c, rc == SDB_DONE ? 0 : sq_err(rc), w);
}

/* ---- scopes ---- */

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
        len = str_add_utf8(pathbuf, len, SQ_PATH_STR_MAX, "/");
    len = str_add_utf8(pathbuf, len, SQ_PATH_STR_MAX, p[i].name);
    jw_obj_begin(w);
    jw_kv_str(w, "name", p[i].name);
    jw_kv_str(w, "path", pathbuf);
    jw_kv_i64(w, "path_id", p[i].id);
    jw_kv_i64(w, "depth", p[i].depth);
    jw_kv_u64(w, "instances", p[i].inst);
    jw_kv_u64(w, "total_ns", p[i].total);
    jw_kv_u64(w, "self_ns",
              p[i].total > p[i].child_total ? p[i].total - p[i].child_total
                                            : 0);
    jw_kv_u64(w, "kernels", p[i].kernels);
    jw_kv_u64(w, "gpu_ns", p[i].gpu_ns);
    jw_kv_u64(w, "kernels_total", p[i].sub_kernels);
    jw_kv_u64(w, "gpu_ns_total", p[i].sub_gpu_ns);
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
    if ((rc = sess_find(&c, q->sid)) != 0)
        goto out;
    rc = prep(&c, "SELECT p.id, p.parent, p.name_id, p.depth,"
                  " coalesce(n.name, '') FROM dicts p LEFT JOIN dicts n ON"
                  " n.sess=p.sess AND n.id=p.name_id WHERE p.sess=? AND"
                  " p.kind=1 ORDER BY p.depth, p.id");
    if (rc)
        goto out;
    bi(&c, 1, c.sess);
    while ((rc = sdb_step(c.st)) == SDB_ROW && n < SQ_PATHS_MAX) {
        p[n].id = ci(&c, 0);
        p[n].parent = ci(&c, 1);
        p[n].name_id = ci(&c, 2);
        p[n].depth = ci(&c, 3);
        if (!(p[n].name = strdup(ct(&c, 4)))) {
            rc = GPUFL_ENOMEM;
            goto out;
        }
        n++;
    }
    /* wall time per path from the scope_end lines */
    rc = prep(&c, "SELECT path, count(*), sum(dur) FROM scopes WHERE sess=?"
                  " AND type=? GROUP BY path");
    if (rc)
        goto out;
    bi(&c, 1, c.sess);
    bi(&c, 2, EV_SCOPE_END);
    while ((rc = sdb_step(c.st)) == SDB_ROW) {
        int i = pfind(p, n, ci(&c, 0));
        if (i >= 0) {
            p[i].inst = (uint64_t)ci(&c, 1);
            p[i].total = (uint64_t)ci(&c, 2);
        }
    }
    /* kernels join their scope instance (rolled up at ingest) */
    rc = prep(&c, "SELECT s.path, sum(k.n), sum(k.gpu_ns) FROM kscope k JOIN"
                  " scopes s ON s.sess=k.sess AND s.id=k.scope AND s.type=?"
                  " WHERE k.sess=? GROUP BY s.path");
    if (rc)
        goto out;
    bi(&c, 1, EV_SCOPE_BEGIN);
    bi(&c, 2, c.sess);
    while ((rc = sdb_step(c.st)) == SDB_ROW) {
        int i = pfind(p, n, ci(&c, 0));
        if (i >= 0) {
            p[i].kernels = (uint64_t)ci(&c, 1);
            p[i].gpu_ns = (uint64_t)ci(&c, 2);
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
    sdb_bind_i64(st, 1, c->sess);
    while (!found && sdb_step(st) == SDB_ROW) {
        int64_t id = sdb_col_i64(st, 0);
        if (strcmp(path_of(c->db, c->sess, id, buf, sizeof(buf)), path) == 0)
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
    uint32_t n = 0, l = lim(q);
    int rc;

    q_begin(s, &c);
    if ((rc = sess_find(&c, q->sid)) != 0)
        return q_end(&c, rc, w);
    if (q->path && (pid = path_id(&c, q->path)) == 0)
        return q_end(&c, GPUFL_ENOTFOUND, w);
    jw_obj_begin(w);
    if (q->path)
        jw_kv_str(w, "path", q->path);
    /* per function: warp efficiency (divergence) and coalescing */
    rc = prep(&c, "SELECT min(coalesce(n.name, '')), sum(s.inst),"
                  " sum(s.thread_inst), sum(s.sectors), sum(s.sectors_ideal),"
                  " sum(s.samples) FROM sass s LEFT JOIN dicts n ON"
                  " n.sess=s.sess AND n.id=s.func WHERE s.sess=?1 AND"
                  " (?2 = 0 OR s.path=?2) GROUP BY s.func ORDER BY"
                  " sum(s.inst) + sum(s.samples) DESC LIMIT ?3");
    if (rc)
        goto fail;
    bi(&c, 1, c.sess);
    bi(&c, 2, pid);
    bi(&c, 3, l);
    jw_key(w, "functions");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW) {
        double inst = (double)ci(&c, 1), ti = (double)ci(&c, 2);
        jw_obj_begin(w);
        jw_kv_str(w, "function", ct(&c, 0));
        jw_kv_i64(w, "inst", ci(&c, 1));
        jw_kv_i64(w, "thread_inst", ci(&c, 2));
        w_ratio(w, "warp_efficiency", ti, inst * 32);
        jw_kv_i64(w, "sectors", ci(&c, 3));
        jw_kv_i64(w, "sectors_ideal", ci(&c, 4));
        w_ratio(w, "coalescing", (double)ci(&c, 4), (double)ci(&c, 3));
        jw_kv_i64(w, "pc_samples", ci(&c, 5));
        jw_obj_end(w);
    }
    jw_arr_end(w);
    if (rc != SDB_DONE)
        goto fail;
    /* per instruction (function, pc, source line) */
    rc = prep(&c, "SELECT min(coalesce(n.name, '')), s.pc,"
                  " min(coalesce(f.name, '')), min(s.line), sum(s.inst), "
                  "sum(s.thread_inst), sum(s.sectors),"
                  " sum(s.sectors_ideal), sum(s.samples) FROM sass s LEFT JOIN"
                  " dicts n ON n.sess=s.sess AND n.id=s.func LEFT JOIN dicts f"
                  " ON f.sess=s.sess AND f.id=s.file WHERE s.sess=?1 AND"
                  " (?2 = 0 OR s.path=?2) GROUP BY s.func, s.pc ORDER BY"
                  " s.func, s.pc LIMIT ?3");
    if (rc)
        goto fail;
    bi(&c, 1, c.sess);
    bi(&c, 2, pid);
    bi(&c, 3, SQ_LIMIT_MAX);
    jw_key(w, "instructions");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW && n++ < SQ_LIMIT_MAX) {
        jw_obj_begin(w);
        jw_kv_str(w, "function", ct(&c, 0));
        jw_kv_i64(w, "pc", ci(&c, 1));
        jw_kv_str(w, "file", ct(&c, 2));
        jw_kv_i64(w, "line", ci(&c, 3));
        jw_kv_i64(w, "inst", ci(&c, 4));
        w_ratio(w, "warp_efficiency", (double)ci(&c, 5),
                (double)ci(&c, 4) * 32);
        w_ratio(w, "coalescing", (double)ci(&c, 7), (double)ci(&c, 6));
        jw_kv_i64(w, "pc_samples", ci(&c, 8));
        jw_obj_end(w);
    }
    jw_arr_end(w);
    if (rc != SDB_DONE && rc != SDB_ROW)
        goto fail;
    rc = prep(&c, "SELECT t.reason, sum(t.n) FROM stalls t JOIN sass s ON"
                  " s.sess=t.sess AND s.seq=t.seq WHERE t.sess=?1 AND"
                  " (?2 = 0 OR s.path=?2) GROUP BY t.reason ORDER BY 2 DESC");
    if (rc)
        goto fail;
    bi(&c, 1, c.sess);
    bi(&c, 2, pid);
    jw_key(w, "stalls");
    jw_arr_begin(w);
    while ((rc = sdb_step(c.st)) == SDB_ROW) {
        jw_obj_begin(w);
        jw_kv_str(w, "reason", ct(&c, 0));
        jw_kv_i64(w, "samples", ci(&c, 1));
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_obj_end(w);
    return q_end(&c, rc == SDB_DONE ? 0 : sq_err(rc), w);
fail:
    return q_end(&c, sdb_err(rc) ? sdb_err(rc) : GPUFL_EINTERNAL, w);
}

/* ---- system ---- */

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
    if ((rc = sess_find(&c, q->sid)) != 0)
        return q_end(&c, rc, w);
    from = q->from ? q->from : (uint64_t)c.first;
    to = q->to ? q->to : (uint64_t)c.last + 1;
    if (to <= from)
        return q_end(&c, GPUFL_EINVAL, w);
    bw = (to - from + points - 1) / points;
    /* the sources: one index probe each (DISTINCT read every sample) */
    if ((rc = prep(&c, "WITH RECURSIVE s(src) AS (SELECT min(src) FROM samples"
                       " WHERE sess=?1 UNION ALL SELECT (SELECT min(src) FROM"
                       " samples WHERE sess=?1 AND src > s.src) FROM s WHERE"
                       " s.src IS NOT NULL) SELECT src FROM s WHERE src IS NOT"
                       " NULL")))
        return q_end(&c, rc, w);
    bi(&c, 1, c.sess);
    while (sdb_step(c.st) == SDB_ROW && ns < 64)
        srcs[ns++] = ci(&c, 0);
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
    if ((rc = prep(&c, sql)))
        return q_end(&c, rc, w);
    jw_obj_begin(w);
    jw_kv_u64(w, "from", from);
    jw_kv_u64(w, "to", to);
    jw_kv_u64(w, "bucket_ns", bw);
    jw_key(w, "series");
    jw_arr_begin(w);
    for (int si = 0; si < ns; si++) {
        if (only != INT32_MIN && srcs[si] != only)
            continue;
        sdb_reset(c.st);
        bi(&c, 1, (int64_t)from);
        bi(&c, 2, (int64_t)bw);
        bi(&c, 3, c.sess);
        bi(&c, 4, srcs[si]);
        bi(&c, 5, (int64_t)to);
        if (rollup) {
            bi(&c, 6, (int64_t)(from / (uint64_t)SQ_SRL_NS));
            bi(&c, 7, (int64_t)((to - 1) / (uint64_t)SQ_SRL_NS));
        }
        jw_obj_begin(w);
        if (srcs[si] < 0) {
            jw_kv_str(w, "src", "host");
        } else {
            char nm[24];
            snprintf(nm, sizeof(nm), "gpu%lld", (long long)srcs[si]);
            jw_kv_str(w, "src", nm);
            jw_kv_i64(w, "dev", srcs[si]);
        }
        jw_key(w, "points");
        jw_arr_begin(w);
        while ((rc = sdb_step(c.st)) == SDB_ROW) {
            jw_obj_begin(w);
            jw_kv_i64(w, "t", ci(&c, 1));
            jw_kv_i64(w, "n", ci(&c, 2));
            for (int i = 0; i < nf; i++) {
                if (sdb_col_null(c.st, 3 + 3 * i))
                    continue;
                jw_key(w, srv_sys_fields[fi[i]]);
                jw_arr_begin(w);
                for (int k = 0; k < 3; k++)
                    jw_f64(w, sdb_col_f64(c.st, 3 + 3 * i + k), 4);
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
