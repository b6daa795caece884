/*
 * store_sql_q_timeline.c - the kernel timeline of a time range, tiled for
 * a screen (docs/api.md "timeline"): per lane (device, stream) and pixel
 * column, the kernels themselves where few, a summary elsewhere, and
 * never an empty column where a kernel ran.
 *
 * Two sources.  The rollup (table tl, store_sql_rollup.c) at the coarsest
 * level no wider than a pixel - level 0 computed from the kernels for a
 * session with blocks or on a blocks server (store_sql_q_tl0.c; ingest
 * into blocks does not write it): each stored bucket is spread over the
 * columns it overlaps, so a kernel in a bucket straddling two columns
 * marks both, and a bucket wider than a pixel (a dense window at fine
 * zoom) marks every column it covers.  A kernel too long for the
 * rollup's spread (more than RL_TL_SPAN_MAX buckets: all its busy time
 * went to its first bucket) is kept in klong and spread here exactly.
 * Or the kernels themselves, when the window is narrow or exact rows are
 * asked and it holds at most SQ_TL_RAW_DENSE of them: columns exact, and
 * the rows listed per lane.  Kernels that began before the window and run
 * into it count in both: the raw read starts the session's longest
 * (non-klong) kernel earlier.
 */
#include "store_sql_int.h"
#include "store_sql_kblocks_read.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kblock.h"
#include "srv_json.h"
#include "store_sql_q.h"
#include "store_sql_tlpack.h"

/* Kernels a window may hold and still be read raw (all lanes, those that
 * began earlier and run into it included): the rows one tile reads at
 * most.  Reading ~36 000 raw rows took PostgreSQL ~100 ms. */
#define SQ_TL_RAW_DENSE 16384
/* Long kernels (klong) one answer spreads at most; a session with more in
 * one window (each longer than 268 ms) gets their rollup buckets only
 * past it, and the answer says "long_cut". */
#define SQ_TL_LONG_MAX 65536

typedef struct tl_px {
    uint64_t n, busy, top_dur;
    int64_t top_name;
    uint8_t on; /* listed: a kernel occupies it, or a summary bucket does */
} tl_px;

/* [kid, ts, dur, name id, corr] of a raw kernel. */
typedef struct tl_row {
    int64_t seq, ts, dur, name, corr, lane;
} tl_row;

typedef struct tl_lane {
    int64_t lane;
    tl_px *px;
    uint32_t nk; /* raw kernels of the lane occupying the window */
    int asked;   /* named by lanes= */
} tl_lane;

typedef struct tl_ctx {
    qctx c;
    uint64_t from, to, bw;
    uint32_t width;
    tl_lane lanes[SQ_TL_LANES_MAX];
    int nl;
    int filtered; /* lanes= given: only those */
    tl_row *raw;  /* the raw kernels, ts order */
    size_t nraw;
    tl_row *lng; /* the long kernels occupying the window */
    size_t nlng;
    int long_cut;
    /* level 0 computed from blocks when the window may be read raw: the
     * block events read_raw wants, gathered by the same decode (pre_ok:
     * every one was offered) */
    int want_raw, pre_ok;
    int64_t pre_lo;
    kb_top pre;
} tl_ctx;

static tl_lane *lane_find(tl_ctx *x, int64_t lane)
{
    for (int i = 0; i < x->nl; i++)
        if (x->lanes[i].lane == lane)
            return &x->lanes[i];
    return NULL;
}

/* The lane's entry, added unless lanes= named others; NULL when it is not
 * wanted or there is no room. */
static tl_lane *lane_get(tl_ctx *x, int64_t lane)
{
    tl_lane *L = lane_find(x, lane);

    if (L || x->filtered || x->nl >= SQ_TL_LANES_MAX)
        return L;
    L = &x->lanes[x->nl];
    memset(L, 0, sizeof(*L));
    L->lane = lane;
    L->px = calloc(x->width, sizeof(tl_px));
    if (!L->px)
        return NULL;
    x->nl++;
    return L;
}

/* lanes= "dev:stream,...": those lanes only, in that order. */
static int lanes_parse(tl_ctx *x, const char *s)
{
    int64_t keys[SQ_TL_LANES_MAX];
    int n = 0, rc = sq_lanes_parse(s, keys, SQ_TL_LANES_MAX, &n);

    for (int i = 0; !rc && i < n; i++) {
        tl_lane *L = &x->lanes[x->nl];
        memset(L, 0, sizeof(*L));
        L->lane = keys[i];
        L->asked = 1;
        if (!(L->px = calloc(x->width, sizeof(tl_px))))
            return GPUFL_ENOMEM;
        x->nl++;
    }
    x->filtered = x->nl > 0;
    return rc;
}

static void px_top(tl_px *p, int64_t name, uint64_t dur)
{
    if (dur >= p->top_dur) {
        p->top_dur = dur;
        p->top_name = name;
    }
}

/* A span's own busy time, exactly: n at its first column when it began in
 * the window, the ns it covers of each column, listed. */
static void px_span(tl_ctx *x, tl_px *px, uint64_t t0, uint64_t dur,
                    int64_t name, int count)
{
    uint32_t c0, c1;

    if (!sq_cols_of(x->from, x->to, x->bw, x->width, t0, dur, &c0, &c1))
        return;
    if (count && t0 >= x->from)
        px[c0].n++;
    for (uint32_t c = c0; c <= c1; c++) {
        px[c].busy = rl_sat_add(
            px[c].busy, sq_cols_overlap(x->from, x->to, x->bw, c, t0, dur));
        px[c].on = 1;
        px_top(&px[c], name, dur);
    }
}

/* A stored bucket [t0, t0 + w): spread over the columns it overlaps in the
 * window - its count to the first, its busy time in proportion to the
 * overlap (the remainder to the first, so sums stay exact), each listed
 * with its top kernel. */
static void px_bucket(tl_ctx *x, tl_px *px, uint64_t t0, uint64_t w, uint64_t n,
                      uint64_t busy, int64_t name, uint64_t top)
{
    uint32_t c0, c1;
    uint64_t lo = t0 > x->from ? t0 : x->from;
    uint64_t hi = t0 + w < x->to ? t0 + w : x->to, rest = busy;

    if (!sq_cols_of(x->from, x->to, x->bw, x->width, t0, w, &c0, &c1) ||
        hi <= lo)
        return;
    for (uint32_t c = c1; c > c0; c--) {
        uint64_t ov = sq_cols_overlap(x->from, x->to, x->bw, c, t0, w);
        uint64_t share =
            (uint64_t)((double)busy * ((double)ov / (double)(hi - lo)));
        if (share > rest)
            share = rest;
        rest -= share;
        px[c].busy = rl_sat_add(px[c].busy, share);
        px[c].on = 1;
        px_top(&px[c], name, top);
    }
    px[c0].n += n;
    px[c0].busy = rl_sat_add(px[c0].busy, rest);
    px[c0].on = 1;
    px_top(&px[c0], name, top);
}

/* The long kernels (klong) occupying the window, ts order, into x->lng. */
static int read_long(tl_ctx *x)
{
    size_t cap = 0;
    int rc = q_prepare(&x->c,
                       "SELECT seq, ts, dur, lane, coalesce(name_id, 0),"
                       " coalesce(corr, 0) FROM klong WHERE sess=?1 AND"
                       " ts < ?2 AND ts + dur > ?3 ORDER BY ts, seq LIMIT ?4");
    if (rc)
        return rc;
    qbind_i64(x->c.st, 1, x->c.sess);
    qbind_i64(x->c.st, 2, (int64_t)x->to);
    qbind_i64(x->c.st, 3, (int64_t)x->from);
    qbind_i64(x->c.st, 4, SQ_TL_LONG_MAX + 1);
    while ((rc = sdb_step(x->c.st)) == SDB_ROW) {
        tl_row *r;
        if (x->nlng == SQ_TL_LONG_MAX) {
            x->long_cut = 1;
            continue;
        }
        if (x->nlng == cap) {
            tl_row *n =
                realloc(x->lng, (cap = cap ? cap * 4 : 64) * sizeof(*n));
            if (!n)
                return GPUFL_ENOMEM;
            x->lng = n;
        }
        r = &x->lng[x->nlng++];
        r->seq = qcol_i64(x->c.st, 0);
        r->ts = qcol_i64(x->c.st, 1);
        r->dur = qcol_i64(x->c.st, 2);
        r->lane = qcol_i64(x->c.st, 3);
        r->name = qcol_i64(x->c.st, 4);
        r->corr = qcol_i64(x->c.st, 5);
    }
    return rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
}

/* 1 when the rollup put all of kernel r's busy time in its first bucket
 * of the level shifted by sh (rollup.h, RL_TL_SPAN_MAX). */
static int long_capped(const tl_row *r, unsigned sh)
{
    uint64_t b0 = (uint64_t)r->ts >> sh;
    uint64_t b1 = ((uint64_t)r->ts + (uint64_t)r->dur - 1) >> sh;
    return b1 - b0 >= RL_TL_SPAN_MAX;
}

/* A stored bucket b of level sh's width: counted into *started, spread
 * over the lane's columns (a long kernel's busy time the rollup kept
 * whole in this, its first bucket, left out: spread exactly after). */
static void summary_bucket(tl_ctx *x, unsigned sh, int64_t lane, uint64_t b,
                           uint64_t n, uint64_t busy, int64_t top_name,
                           uint64_t top_dur, uint64_t *started)
{
    tl_lane *L;

    *started += n;
    if (!(L = lane_get(x, lane)))
        return;
    for (size_t i = 0; i < x->nlng; i++) {
        const tl_row *r = &x->lng[i];
        if (r->lane == lane && ((uint64_t)r->ts >> sh) == b &&
            long_capped(r, sh))
            busy = busy > (uint64_t)r->dur ? busy - (uint64_t)r->dur : 0;
    }
    px_bucket(x, L->px, b << sh, 1ull << sh, n, busy, top_name, top_dur);
}

static int raw_keeps(const kblock_ev *e, void *arg);

/* A block event the raw read would offer its heap (read_raw's scan: ts in
 * [pre_lo, to), occupying the window). */
static int pre_offer(const kblock_ev *e, void *arg)
{
    tl_ctx *x = arg;
    int64_t from = (int64_t)x->from;

    /* e holds only what raw_set reads (SQ_TL0_ALSO_COLS and the
     * summary's columns): no NULL bits (nor are they read) */
    if ((int64_t)e->ts >= x->pre_lo && e->ts < x->to && raw_keeps(e, &from))
        kb_top_add(&x->pre, e, 0);
    return 0;
}

/* Level 0 computed from the kernels (store_sql_q_tl0.c); GPUFL_EFULL when
 * the window holds too many to decode.  With want_raw, the raw read's
 * block events are gathered on the way. */
static int summary_tl0(tl_ctx *x, uint64_t *started)
{
    sq_tl0 *v = NULL;
    size_t n = 0;
    int rc = GPUFL_OK, used = 0;

    if (x->want_raw &&
        ((rc = sq_kernels_back(&x->c, x->from, &x->pre_lo)) != 0 ||
         (rc = kb_top_init(&x->pre, SQ_TL_RAW_DENSE + 1, KB_KEY_TS, 0)) != 0))
        return rc;
    /* blocks that meet the range count whole: more than twice the raw
     * cap is a window read from the summary nearly always */
    rc = sq_tl0_compute(
        &x->c, x->from >> RL_TL_SHIFT0, (x->to - 1) >> RL_TL_SHIFT0,
        x->want_raw ? pre_offer : NULL, x, 2 * SQ_TL_RAW_DENSE, &used, &v, &n);
    x->pre_ok = used && !rc;
    for (size_t i = 0; !rc && i < n; i++)
        summary_bucket(x, RL_TL_SHIFT0, v[i].lane, v[i].b, v[i].n, v[i].busy,
                       v[i].top_name, v[i].top_dur, started);
    free(v);
    return rc;
}

static void packs_put(tl_ctx *x, unsigned sh, const sq_tlp_iter *P,
                      uint64_t *started)
{
    const sq_tlb *v = &P->v[P->i];
    summary_bucket(x, sh, P->lane, (uint64_t)v->b, (uint64_t)v->n,
                   (uint64_t)v->busy, v->top_name, (uint64_t)v->top_dur,
                   started);
}

/* A packed level: the window's packs opened into P, its first
 * bucket read (*have); else nothing. */
static int packs_open(tl_ctx *x, int lv, sq_tlp_iter *P, int *have)
{
    unsigned sh = rl_tl_shift(lv);
    sdb_stmt *st;

    P->st = NULL;
    *have = 0;
    /* SQLite packs level 1 only (at ingest), PostgreSQL levels 1-3 */
    if (lv < SQ_TLP_LVL_MIN || lv > SQ_TLP_LVL_MAX ||
        (lv != SQ_TL1_LVL && sdb_dialect(x->c.db) != SDB_POSTGRES))
        return GPUFL_OK;
    if (sdb_prepare(x->c.db,
                    "SELECT lane, b0, data FROM tlpack WHERE sess=?1 AND"
                    " lvl=?2 AND lane IN (SELECT DISTINCT lane FROM tl WHERE"
                    " sess=?1 AND lvl=?5) AND b0 >= ?3 AND b0 <= ?4"
                    " ORDER BY lane, b0",
                    &st))
        return GPUFL_EINTERNAL;
    qbind_i64(st, 1, x->c.sess);
    qbind_i64(st, 2, lv);
    qbind_i64(st, 5, RL_TL_LEVELS - 1);
    /* the rows' window (b >= ?3 AND b <= ?4): closed, as the iterator's */
    return sq_tlp_iter_start(P, st, (int64_t)(x->from >> sh),
                             (int64_t)((x->to - 1) >> sh), have);
}

/* The window from the rollup level *lv, long kernels spread exactly; the
 * kernels started in the buckets read, all lanes, into *started.  With
 * tl0, level 0 is computed from the kernels, or when the window holds
 * more than that may decode, level 1 is read instead (*lv 1). */
static int read_summary(tl_ctx *x, int *lv, int tl0, uint64_t *started)
{
    unsigned sh;
    int rc, have = 0;
    sq_tlp_iter P; /* ~5 kB, on the query thread's stack */

    P.st = NULL; /* closed at packs: whether opened or not */
    *started = 0;
    if (*lv == 0 && tl0) {
        rc = summary_tl0(x, started);
        if (rc != GPUFL_EFULL)
            goto longs;
        for (int i = 0; i < x->nl; i++)
            memset(x->lanes[i].px, 0, x->width * sizeof(tl_px));
        *started = 0;
        *lv = 1;
    }
    rc = q_prepare(&x->c,
                   "SELECT lane, b, n, busy, top_name, top_dur FROM tl"
                   " WHERE sess=?1 AND lvl=?2 AND lane IN (SELECT DISTINCT"
                   " lane FROM tl WHERE sess=?1 AND lvl=?5) AND b >= ?3"
                   " AND b <= ?4 ORDER BY lane, b"); /* ties: px_top */
    if (rc || (rc = packs_open(x, *lv, &P, &have)) != 0)
        goto packs;
    sh = rl_tl_shift(*lv);
    qbind_i64(x->c.st, 1, x->c.sess);
    qbind_i64(x->c.st, 2, *lv);
    qbind_i64(x->c.st, 3, (int64_t)(x->from >> sh));
    qbind_i64(x->c.st, 4, (int64_t)((x->to - 1) >> sh));
    qbind_i64(x->c.st, 5, RL_TL_LEVELS - 1);
    /* rows and packed buckets in (lane, b) order; a bucket in both (a late
     * kernel's row beside its pack) added as tl's upsert adds */
    while ((rc = sdb_step(x->c.st)) == SDB_ROW) {
        int64_t lane = qcol_i64(x->c.st, 0);
        sq_tlb r = { qcol_i64(x->c.st, 1), qcol_i64(x->c.st, 2),
                     qcol_i64(x->c.st, 3), qcol_i64(x->c.st, 4),
                     qcol_i64(x->c.st, 5) };
        int k = 1;
        while (have && (k = sq_tlp_iter_cmp(&P, lane, r.b)) < 0) {
            packs_put(x, sh, &P, started);
            if ((rc = sq_tlp_iter_next(&P, &have)) != 0)
                goto packs;
        }
        if (have && k == 0) {
            sq_tlb_add(&r, &P.v[P.i]);
            if ((rc = sq_tlp_iter_next(&P, &have)) != 0)
                goto packs;
        }
        summary_bucket(x, sh, lane, (uint64_t)r.b, (uint64_t)r.n,
                       (uint64_t)r.busy, r.top_name, (uint64_t)r.top_dur,
                       started);
    }
    rc = rc == SDB_DONE ? GPUFL_OK : sq_err(rc);
    while (!rc && have) {
        packs_put(x, sh, &P, started);
        rc = sq_tlp_iter_next(&P, &have);
    }
packs:
    sq_tlp_iter_close(&P);
longs:
    if (rc)
        return rc;
    sh = rl_tl_shift(*lv);
    for (size_t i = 0; i < x->nlng; i++) {
        const tl_row *r = &x->lng[i];
        tl_lane *L;
        if (!long_capped(r, sh) || !(L = lane_get(x, r->lane)))
            continue;
        px_span(x, L->px, (uint64_t)r->ts, (uint64_t)r->dur, r->name, 0);
    }
    return GPUFL_OK;
}

/* Block events occupying the window from ts: (ts + dur > from or ts >=
 * from), as the rows' WHERE. */
static int raw_keeps(const kblock_ev *e, void *arg)
{
    int64_t from = *(const int64_t *)arg;
    return (int64_t)(e->ts + e->dur) > from || (int64_t)e->ts >= from;
}

static void raw_set(tl_row *r, const kblock_ev *e)
{
    r->seq = (int64_t)e->seq;
    r->ts = (int64_t)e->ts;
    r->dur = (int64_t)e->dur;
    r->lane = (int64_t)(e->dev << 32 | (e->stream & 4294967295u));
    r->name = e->name_id;
    r->corr = (int64_t)e->corr;
}

/* The kernels occupying the window, ts order, into x->raw: the long ones
 * that began before the scan, then a scan from the session's longest
 * other kernel before the window - rows, and with blocks (blocks set)
 * the first of rows and blocks merged.  GPUFL_EFULL past
 * SQ_TL_RAW_DENSE. */
static int read_raw(tl_ctx *x, int blocks)
{
    int64_t lo, from = (int64_t)x->from;
    int pre = x->pre_ok;
    size_t want;
    kb_top t;
    int rc;

    memset(&t, 0, sizeof(t));
    if ((rc = sq_kernels_back(&x->c, x->from, &lo)) != 0)
        return rc;
    x->raw = malloc((SQ_TL_RAW_DENSE + 1) * sizeof(tl_row));
    if (!x->raw)
        return GPUFL_ENOMEM;
    for (size_t i = 0; i < x->nlng; i++)
        if (x->lng[i].ts < lo && x->nraw <= SQ_TL_RAW_DENSE)
            x->raw[x->nraw++] = x->lng[i];
    want = SQ_TL_RAW_DENSE + 1 - x->nraw;
    if (blocks && pre) {
        /* the blocks' part gathered already (summary_tl0): the rows go to
         * the same heap, and its first want are the answer's */
        t = x->pre;
        memset(&x->pre, 0, sizeof(x->pre));
    } else if (blocks && (rc = kb_top_init(&t, want, KB_KEY_TS, 0)) != 0) {
        return rc;
    }
    rc = q_prepare(&x->c,
                   blocks ? "SELECT " KB_ROW_COLS " FROM kernels WHERE"
                            " sess=?1 AND ts >= ?2 AND ts < ?3 AND (ts + dur"
                            " > ?4 OR ts >= ?4) ORDER BY ts, seq LIMIT ?5"
                          : "SELECT seq, ts, dur, (coalesce(dev, 0)<<32) |"
                            " (coalesce(stream, 0) & 4294967295),"
                            " coalesce(name_id, 0), coalesce(corr, 0) FROM"
                            " kernels WHERE sess=?1 AND ts >= ?2 AND ts < ?3"
                            " AND (ts + dur > ?4 OR ts >= ?4) ORDER BY ts,"
                            " seq LIMIT ?5");
    if (rc)
        goto out;
    qbind_i64(x->c.st, 1, x->c.sess);
    qbind_i64(x->c.st, 2, lo);
    qbind_i64(x->c.st, 3, (int64_t)x->to);
    qbind_i64(x->c.st, 4, from);
    qbind_i64(x->c.st, 5, SQ_TL_RAW_DENSE + 1);
    while ((rc = sdb_step(x->c.st)) == SDB_ROW) {
        tl_row *r;
        if (blocks) {
            kblock_ev e;
            unsigned nul;
            kb_row_ev(x->c.st, 0, &e, &nul);
            kb_top_add(&t, &e, nul);
            continue;
        }
        if (x->nraw > SQ_TL_RAW_DENSE)
            break;
        r = &x->raw[x->nraw++];
        r->seq = qcol_i64(x->c.st, 0);
        r->ts = qcol_i64(x->c.st, 1);
        r->dur = qcol_i64(x->c.st, 2);
        r->lane = qcol_i64(x->c.st, 3);
        r->name = qcol_i64(x->c.st, 4);
        r->corr = qcol_i64(x->c.st, 5);
    }
    if (rc != SDB_DONE && rc != SDB_ROW) {
        rc = sq_err(rc);
        goto out;
    }
    rc = GPUFL_OK;
    if (blocks) {
        if (!pre && (rc = sq_kb_scan_cols(x->c.s, x->c.db, x->c.sess, lo,
                                          (int64_t)x->to,
                                          KB_C_DUR | KB_C_NAME | KB_C_DEV |
                                              KB_C_STREAM | SQ_TL0_ALSO_COLS,
                                          raw_keeps, &from, &t)) != 0)
            goto out;
        /* only raw_set's columns were decoded (the heap's key is ts,
         * then seq): the events' other fields are not read */
        kb_top_sort(&t);
        for (size_t i = 0; i < t.n && i < want; i++)
            raw_set(&x->raw[x->nraw++], &t.ev[i]);
    }
    if (x->nraw > SQ_TL_RAW_DENSE)
        rc = GPUFL_EFULL;
out:
    kb_top_free(&t);
    return rc;
}

/* The raw kernels' columns, replacing the summary's. */
static int cols_from_raw(tl_ctx *x)
{
    for (int i = 0; i < x->nl; i++)
        memset(x->lanes[i].px, 0, x->width * sizeof(tl_px));
    for (size_t i = 0; i < x->nraw; i++) {
        const tl_row *r = &x->raw[i];
        tl_lane *L = lane_get(x, r->lane);
        if (!L)
            continue;
        L->nk++;
        px_span(x, L->px, (uint64_t)r->ts, (uint64_t)r->dur, r->name, 1);
    }
    return GPUFL_OK;
}

/* A name id into the answer's set (names, rl_map keyed by id). */
static int name_note(rl_map *names, int64_t id)
{
    uint64_t k[4] = { (uint64_t)id, 0, 0, 0 };
    int fresh;
    return rl_map_get(names, k, &fresh) ? GPUFL_OK : GPUFL_ENOMEM;
}

/* The answer's "names" and "mangled": the ids noted, looked up at once
 * (sq_names_lookup), each written in the map's order ("" for an id that
 * names nothing). */
static int w_names(tl_ctx *x, jw *w, rl_map *names)
{
    sq_page_names pn;
    const uint64_t *k;
    size_t n = 0;
    int rc = sq_names_init(&pn, names->n);

    for (size_t i = 0; i < names->cap && !rc; i++)
        if (rl_map_at(names, i, &k) && n < names->n)
            pn.ids[n++] = (int64_t)k[0];
    if (!rc)
        rc = sq_names_lookup(&x->c, n, &pn);
    for (int pass = 0; pass < 2 && !rc; pass++) {
        jw_key(w, pass ? "mangled" : "names");
        jw_obj_begin(w);
        for (size_t i = 0; i < names->cap; i++) {
            char key[24];
            size_t kl;
            if (!rl_map_at(names, i, &k))
                continue;
            kl = jw_fmt_u64(key, k[0]);
            key[kl] = '\0';
            jw_key(w, key);
            jw_str(w, sq_names_str(&pn, (int64_t)k[0], pass));
        }
        jw_obj_end(w);
    }
    sq_page_names_free(&pn);
    return rc;
}

static int w_timeline(tl_ctx *x, jw *w, int level, int raw, uint32_t exact)
{
    rl_map names;
    int rc = GPUFL_OK;

    rl_map_init(&names, 8, SQ_TL_RAW_DENSE + (size_t)SQ_TL_LANES_MAX * 10000);
    jw_obj_begin(w);
    srv_jw_kv_udec(w, "from", x->from);
    srv_jw_kv_udec(w, "to", x->to);
    jw_kv_u64(w, "width", x->width);
    srv_jw_kv_udec(w, "bucket_ns", x->bw);
    jw_key(w, "level");
    if (raw)
        jw_str(w, "raw");
    else
        srv_jw_udec(w, 1ull << rl_tl_shift(level));
    if (raw)
        jw_kv_u64(w, "kernels_in_window", x->nraw);
    if (x->long_cut) {
        jw_key(w, "long_cut");
        jw_bool(w, 1);
    }
    jw_key(w, "lanes");
    jw_arr_begin(w);
    for (int i = 0; i < x->nl && !rc; i++) {
        tl_lane *L = &x->lanes[i];
        int ex = raw && exact && L->nk <= exact;
        uint32_t listed = 0;
        for (uint32_t p = 0; p < x->width; p++)
            listed += L->px[p].on;
        if (!listed && !L->asked)
            continue;
        jw_obj_begin(w);
        srv_jw_kv_num(w, "dev", L->lane >> 32);
        srv_jw_kv_num(w, "stream", L->lane & 0xffffffff);
        jw_key(w, "exact");
        jw_bool(w, ex);
        /* [pixel, kernels started, busy ns, top kernel name id] */
        jw_key(w, "buckets");
        jw_arr_begin(w);
        for (uint32_t p = 0; p < x->width && !rc; p++) {
            tl_px *c = &L->px[p];
            if (!c->on)
                continue;
            jw_arr_begin(w);
            jw_u64(w, p);
            srv_jw_unum(w, c->n);
            srv_jw_udec(w, c->busy);
            srv_jw_num(w, c->top_name);
            jw_arr_end(w);
            rc = name_note(&names, c->top_name);
        }
        jw_arr_end(w);
        if (ex) {
            /* [kid, ts, dur, name id, corr] */
            jw_key(w, "kernels");
            jw_arr_begin(w);
            for (size_t k = 0; k < x->nraw && !rc; k++) {
                const tl_row *r = &x->raw[k];
                if (r->lane != L->lane)
                    continue;
                jw_arr_begin(w);
                srv_jw_num(w, r->seq);
                srv_jw_dec(w, r->ts);
                srv_jw_dec(w, r->dur);
                srv_jw_num(w, r->name);
                srv_jw_num(w, r->corr);
                jw_arr_end(w);
                rc = name_note(&names, r->name);
            }
            jw_arr_end(w);
        }
        jw_obj_end(w);
    }
    jw_arr_end(w);
    if (!rc)
        rc = w_names(x, w, &names);
    jw_obj_end(w);
    rl_map_release(&names);
    return rc;
}

int srv_store_q_timeline(srv_store *s, const srv_q *q, jw *w)
{
    tl_ctx *x = calloc(1, sizeof(*x));
    uint32_t exact = q->exact > SQ_TL_RAW_DENSE ? SQ_TL_RAW_DENSE : q->exact;
    uint64_t started = 0;
    int level = -1, lv, raw = 0, blocks = 0, rc;

    if (!x)
        return GPUFL_ENOMEM;
    x->width = q->width ? q->width : 1000;
    if (x->width > SQ_TL_WIDTH_MAX)
        x->width = SQ_TL_WIDTH_MAX;
    q_begin(s, &x->c);
    if ((rc = q_session(&x->c, q->sid)) != 0 || (rc = q_snapshot(&x->c)) != 0 ||
        (rc = sq_kb_any(x->c.db, x->c.sess, &blocks)) != 0)
        goto out;
    x->from = q->from ? q->from : (uint64_t)x->c.first;
    x->to = q->to ? q->to : (uint64_t)x->c.last + 1;
    if (x->to <= x->from) {
        rc = GPUFL_EINVAL;
        goto out;
    }
    if (q->lanes && (rc = lanes_parse(x, q->lanes)) != 0)
        goto out;
    x->bw = sq_cols_width(x->from, x->to, x->width);
    for (int l = RL_TL_LEVELS - 1; l >= 0; l--) {
        if ((1ull << rl_tl_shift(l)) <= x->bw) {
            level = l;
            break;
        }
    }
    if ((rc = read_long(x)) != 0)
        goto out;
    /* the summary first (cheap from tl; from blocks, level 0 decodes the
     * range once and gathers the raw read's kernels on the way): it also
     * says how many kernels the window holds, so a dense one is never
     * read raw */
    lv = level < 0 ? 0 : level;
    x->want_raw = blocks && (level < 0 || exact);
    if ((rc = read_summary(x, &lv, blocks || s->kstore_blocks, &started)) != 0)
        goto out;
    if ((level < 0 || exact) && started + x->nlng <= SQ_TL_RAW_DENSE) {
        rc = read_raw(x, blocks);
        if (rc == GPUFL_OK) {
            raw = 1;
            cols_from_raw(x);
        } else if (rc != GPUFL_EFULL) {
            goto out;
        }
    }
    rc = w_timeline(x, w, lv, raw, exact);
out:
    for (int i = 0; i < x->nl; i++)
        free(x->lanes[i].px);
    free(x->raw);
    free(x->lng);
    kb_top_free(&x->pre);
    rc = q_end(&x->c, rc, w);
    free(x);
    return rc;
}
