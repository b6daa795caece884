/*
 * test_srv_tlrun.c - the timeline's and the API calls' rollups (tables tl
 * and capi) against the kernels they came from: every row the store wrote
 * equals the one a kernel-by-kernel spread over each level's buckets
 * gives (this file's own reckoning, rollup.h's geometry), for kernels in
 * and across buckets, too long to spread, long enough for klong, of
 * length 0, interleaved over more lanes and threads than the store's
 * memo slots, of two sessions in one batch, in batches of any size, and
 * sent twice (a duplicate adds nothing).  A rows store (level 0 written)
 * and a blocks store (level 1 the finest) both.
 *
 * On SQLite; on PostgreSQL too when GPUFL_TEST_PG_URI_FILE names a
 * throwaway cluster's URI (tests/server/pg_cluster.sh).
 */
#include "ingest.h"
#include "rollup.h"
#include "store.h"
#include "test.h"

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "store_sql_tlpack.h"
#include "store_test.h"

#define SID0 "aaaaaaaa-0000-4000-8000-0000000000a1"
#define SID1 "aaaaaaaa-0000-4000-8000-0000000000a2"
#define NK 3000
#define NLINE (NK + 2)

static char lines[NLINE][512];
static char arena[4 << 20];
static srv_ev ev[NLINE];

/* A kernel as the reckoning reads it. */
typedef struct kern {
    int sess; /* 0 or 1 */
    uint64_t ts, dur, lane, tid, api_dur;
    int64_t api_off, name;
} kern;

static kern ks[NK];

/* One kernel's (or call's) share of one bucket. */
typedef struct contrib {
    uint64_t k[4]; /* sess index, lvl, lane or b, b or tid */
    uint64_t n, busy, top_dur;
    int64_t top_name;
} contrib;

static contrib *cs;
static size_t ncs, capcs;

static void add(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t n,
                uint64_t busy, uint64_t top_dur, int64_t top_name)
{
    if (ncs == capcs) {
        capcs = capcs ? 2 * capcs : 4096;
        cs = realloc(cs, capcs * sizeof(*cs));
        if (!cs)
            abort();
    }
    cs[ncs++] = (contrib){ { a, b, c, d }, n, busy, top_dur, top_name };
}

static int cmp_key(const void *pa, const void *pb)
{
    const contrib *a = pa, *b = pb;
    for (int i = 0; i < 4; i++)
        if (a->k[i] != b->k[i])
            return a->k[i] < b->k[i] ? -1 : 1;
    return 0;
}

/* Sorts the contributions and sums those of one key into its first: the
 * rows as the store should hold them, in key order; returns their count. */
static size_t fold(void)
{
    size_t m = 0;

    qsort(cs, ncs, sizeof(*cs), cmp_key);
    for (size_t i = 0; i < ncs; i++) {
        contrib *c = &cs[i], *o;
        if (m && cmp_key(&cs[m - 1], c) == 0) {
            o = &cs[m - 1];
            o->n += c->n;
            o->busy = rl_sat_add(o->busy, c->busy);
            if (c->top_dur > o->top_dur ||
                (c->top_dur == o->top_dur && c->top_name > o->top_name)) {
                o->top_dur = c->top_dur;
                o->top_name = c->top_name;
            }
        } else {
            cs[m++] = *c;
        }
    }
    return m;
}

/* tl as a kernel-by-kernel spread from level lv0 up gives it: a kernel
 * counts in its first bucket of each level and adds the part of it each
 * covers, or all of it to its first past RL_TL_SPAN_MAX buckets; a
 * bucket's top is its longest kernel (of equally long ones the highest
 * name: every name here is above 0, the top of an empty bucket). */
static size_t tl_expect(int lv0)
{
    ncs = 0;
    for (int i = 0; i < NK; i++) {
        const kern *k = &ks[i];
        uint64_t end = k->ts + k->dur;
        for (int lv = lv0; lv < RL_TL_LEVELS; lv++) {
            unsigned sh = rl_tl_shift(lv);
            uint64_t b0 = k->ts >> sh, b1 = k->dur ? (end - 1) >> sh : b0;
            int spread = b1 - b0 < RL_TL_SPAN_MAX;
            if (!spread)
                b1 = b0;
            for (uint64_t b = b0; b <= b1; b++) {
                uint64_t lo = b << sh, hi = (b + 1) << sh;
                uint64_t part =
                    !spread ? k->dur
                            : (end < hi ? end : hi) - (k->ts > lo ? k->ts : lo);
                add((uint64_t)k->sess, (uint64_t)lv, k->lane, b, b == b0, part,
                    k->dur, k->name);
            }
        }
    }
    return fold();
}

/* capi likewise, of each kernel's API call ([ts + api_off, + api_dur]):
 * one longer than RL_TL_LONG_NS counts in its first bucket and adds no
 * busy time (capi_long holds it). */
static size_t capi_expect(int lv0)
{
    ncs = 0;
    for (int i = 0; i < NK; i++) {
        const kern *k = &ks[i];
        uint64_t ts = k->ts + (uint64_t)k->api_off, dur = k->api_dur,
                 end = ts + dur;
        int lng = dur > RL_TL_LONG_NS;
        if (!dur)
            continue;
        for (int lv = lv0; lv < RL_TL_LEVELS; lv++) {
            unsigned sh = rl_tl_shift(lv);
            uint64_t b0 = ts >> sh, b1 = (end - 1) >> sh;
            if (lng)
                b1 = b0;
            for (uint64_t b = b0; b <= b1; b++) {
                uint64_t lo = b << sh, hi = (b + 1) << sh;
                add((uint64_t)k->sess, (uint64_t)lv, b, k->tid, b == b0,
                    lng ? 0 : (end < hi ? end : hi) - (ts > lo ? ts : lo), 0,
                    0);
            }
        }
    }
    return fold();
}

static uint64_t rnd_x = 88172645463325252ull;
static uint64_t rnd(uint64_t n)
{
    rnd_x ^= rnd_x << 13;
    rnd_x ^= rnd_x >> 7;
    rnd_x ^= rnd_x << 17;
    return rnd_x % n;
}

/* The kernels (ks) and their lines: 24 lanes (2 devices x 12 streams,
 * more than the store's memo slots) and 20 threads drawn at random per
 * kernel, each lane's clock going forward by gaps of 0 to 2 ms (now and
 * then back), durations from 0 to past RL_TL_LONG_NS and past a level-1
 * spread, two sessions mixed. */
static size_t make(void)
{
    static const uint64_t gaps[] = { 0, 700, 40000, 300000, 2000000 };
    static const uint64_t durs[] = {
        0, 300, 5000, 30000, 200000, 900000, 1048576, 3000000, 9000000, 25000000
    };
    static const uint64_t adurs[] = { 0, 0, 400, 20000, 700000, 5000000 };
    uint64_t clock[24];
    int seq[2] = { 1, 1 }, k = 0;

    for (int i = 0; i < 24; i++)
        clock[i] = 1000000000ull + rnd(1u << 22);
    for (int s = 0; s < 2; s++)
        snprintf(lines[k++], sizeof(lines[0]),
                 "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":0,"
                 "\"ts\":100,\"type\":\"session\",\"app\":\"t\","
                 "\"host\":\"h\"}",
                 s ? SID1 : SID0);
    for (int i = 0; i < NK; i++) {
        kern *kk = &ks[i];
        int l = (int)rnd(24), r = (int)rnd(1000);
        clock[l] += gaps[rnd(5)];
        kk->sess = (int)rnd(2);
        kk->lane = (uint64_t)(l / 12) << 32 | (uint64_t)(l % 12);
        kk->ts = clock[l] - (rnd(20) == 0 ? rnd(3000000) : 0);
        kk->dur = r < 3    ? 1200000000ull /* past 1024 level-1 buckets */
                  : r < 6  ? RL_TL_LONG_NS + 1 + rnd(50000000)
                  : r < 40 ? (uint64_t)rnd(2000000)
                           : durs[rnd(10)];
        kk->name = 1 + (int64_t)rnd(5);
        kk->tid = 1 + rnd(20);
        kk->api_off = -(int64_t)rnd(100000);
        kk->api_dur = r < 4 ? RL_TL_LONG_NS + 5 : adurs[rnd(6)];
        if (kk->ts < (uint64_t)-kk->api_off)
            kk->api_off = 0;
        clock[l] += kk->dur / 2;
        snprintf(lines[k++], sizeof(lines[0]),
                 "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%d,"
                 "\"ts\":%llu,\"type\":\"kernel\",\"name\":%lld,"
                 "\"dur\":%llu,\"dev\":%llu,\"stream\":%llu,\"tid\":%llu,"
                 "\"api\":[%lld,%llu]}",
                 kk->sess ? SID1 : SID0, seq[kk->sess]++,
                 (unsigned long long)kk->ts, (long long)kk->name,
                 (unsigned long long)kk->dur,
                 (unsigned long long)(kk->lane >> 32),
                 (unsigned long long)(kk->lane & 0xffffffffu),
                 (unsigned long long)kk->tid, (long long)kk->api_off,
                 (unsigned long long)kk->api_dur);
    }
    return st_parse(SRV_ST_DEVICE, lines, k, arena, sizeof(arena), ev);
}

/* The rows of sql (8 or 6 integer columns, the session's id first) equal
 * the first m contributions, each session index mapped to its id; 1 if
 * so, else 0 with the first difference printed. */
/* The first column of sql's first row (-1: none or an error). */
static int64_t count_of(const char *name, const char *sql)
{
    char path[512], err[256];
    sdb *db;
    sdb_stmt *st = NULL;
    int64_t v = -1;

    tmp_url(name, path);
    if (sdb_open(path, 1, &db, err, sizeof(err)) != 0)
        return -1;
    if (sdb_prepare(db, sql, &st) == 0 && sdb_step(st) == SDB_ROW)
        v = sdb_col_i64(st, 0);
    sdb_finalize(st);
    sdb_close(db);
    return v;
}

static int rows_equal(const char *name, const char *sql, int ncol, size_t m)
{
    char path[512], err[256];
    int64_t sid[2] = { -1, -1 };
    sdb *db;
    sdb_stmt *st = NULL;
    size_t i = 0;
    int ok = 1;

    tmp_url(name, path);
    if (sdb_open(path, 1, &db, err, sizeof(err)) != 0)
        return 0;
    if (sdb_prepare(db, "SELECT id FROM sessions WHERE sid=?1", &st) == 0) {
        for (int s = 0; s < 2; s++) {
            sdb_bind_text(st, 1, s ? SID1 : SID0, 36);
            if (sdb_step(st) == SDB_ROW)
                sid[s] = sdb_col_i64(st, 0);
            sdb_reset(st);
        }
        sdb_finalize(st);
    }
    st = NULL;
    /* the reckoning's rows in the store's key order (ids, not indexes) */
    for (size_t a = 0; a < m; a++)
        cs[a].k[0] = (uint64_t)sid[cs[a].k[0]];
    qsort(cs, m, sizeof(*cs), cmp_key);
    if (sdb_prepare(db, sql, &st) != 0)
        ok = 0;
    while (ok && sdb_step(st) == SDB_ROW) {
        int64_t got[8], want[8];
        if (i == m) {
            fprintf(stderr, "%s: more rows than %zu\n", name, m);
            ok = 0;
            break;
        }
        for (int c = 0; c < ncol; c++)
            got[c] = sdb_col_i64(st, c);
        for (int c = 0; c < 4; c++)
            want[c] = (int64_t)cs[i].k[c];
        want[4] = (int64_t)cs[i].n;
        want[5] = (int64_t)cs[i].busy;
        want[6] = cs[i].top_name;
        want[7] = (int64_t)cs[i].top_dur;
        for (int c = 0; c < ncol && ok; c++)
            if (got[c] != want[c]) {
                fprintf(stderr,
                        "%s row %zu col %d: %lld, want %lld (key %lld %lld "
                        "%lld %lld)\n",
                        name, i, c, (long long)got[c], (long long)want[c],
                        (long long)want[0], (long long)want[1],
                        (long long)want[2], (long long)want[3]);
                ok = 0;
            }
        i++;
    }
    if (ok && i != m) {
        fprintf(stderr, "%s: %zu rows, want %zu\n", name, i, m);
        ok = 0;
    }
    sdb_finalize(st);
    sdb_close(db);
    return ok;
}

/* Packs written at ingest decoded back into rows (none is there beside
 * them: a plain INSERT), so the table reads as were nothing packed; 1 if
 * done.  Both databases write the timeline's level 1 packed
 * (store_sql_tl1.c), SQLite the API calls' level 0 (store_sql_capi.c). */
typedef struct packed_kind {
    const char *sel; /* sess, lane, b0, data of the level's packs */
    const char *del; /* those packs */
    const char *ins; /* a row: ?1 sess, ?2 lane, ?3 b, ?4.. the sums */
    int nsum;        /* sums in ins: n, busy[, top_name, top_dur] */
} packed_kind;

static const packed_kind tl1_packs = {
    "SELECT sess, lane, b0, data FROM tlpack WHERE lvl=1",
    "DELETE FROM tlpack WHERE lvl=1",
    "INSERT INTO tl VALUES(?1, 1, ?2, ?3, ?4, ?5, ?6, ?7)", 4
};
static const packed_kind capi0_packs = {
    "SELECT sess, tid, b0, data FROM capipack WHERE lvl=0",
    "DELETE FROM capipack WHERE lvl=0",
    "INSERT INTO capi VALUES(?1, 0, ?3, ?2, ?4, ?5)", 2
};

static int unpack(const char *name, const packed_kind *k)
{
    char path[512], err[256];
    sdb *db;
    sdb_stmt *st = NULL;
    sq_tlb *v = NULL, *vv;
    int64_t(*key)[2] = NULL, (*kk)[2];
    size_t n = 0, cap = 0, nb;
    int ok = 1, rc = SDB_DONE;

    tmp_url(name, path);
    if (sdb_open(path, 0, &db, err, sizeof(err)) != 0)
        return 0;
    if (sdb_prepare(db, k->sel, &st) != 0)
        ok = 0;
    while (ok && (rc = sdb_step(st)) == SDB_ROW) {
        size_t len;
        const void *p = sdb_col_blob(st, 3, &len);
        if (n + SQ_TLP_N > cap) {
            cap = 2 * cap + SQ_TLP_N;
            vv = realloc(v, cap * sizeof(*v));
            kk = realloc(key, cap * sizeof(*key));
            v = vv ? vv : v;
            key = kk ? kk : key;
            if (!vv || !kk) {
                ok = 0;
                break;
            }
        }
        if (sq_tlp_decode(p, len, sdb_col_i64(st, 2), v + n, &nb) != 0) {
            fprintf(stderr, "%s: a pack does not decode (%s)\n", name, k->sel);
            ok = 0;
            break;
        }
        for (size_t j = 0; j < nb; j++) {
            key[n + j][0] = sdb_col_i64(st, 0);
            key[n + j][1] = sdb_col_i64(st, 1);
        }
        n += nb;
    }
    sdb_finalize(st);
    st = NULL;
    if (rc != SDB_DONE)
        ok = 0;
    if (ok && (sdb_exec(db, k->del) != 0 || sdb_prepare(db, k->ins, &st) != 0))
        ok = 0;
    for (size_t j = 0; ok && j < n; j++) {
        int64_t c[7] = { key[j][0], key[j][1],     v[j].b,      v[j].n,
                         v[j].busy, v[j].top_name, v[j].top_dur };
        for (int i = 0; i < 3 + k->nsum; i++)
            sdb_bind_i64(st, i + 1, c[i]);
        ok = sdb_step(st) == SDB_DONE;
        sdb_reset(st);
    }
    sdb_finalize(st);
    sdb_close(db);
    free(v);
    free(key);
    return ok;
}

static void check_store(const char *name, int blocks)
{
    srv_store *s = open_tmp(name);
    srv_ingest_res r;
    size_t n = make(), at = 0, acc = 0, m;
    int capi0_skipped = blocks && pg_uri()[0];
    char sql[256];

    REQUIRE(s);
    srv_store_set_kernel_store(s, blocks);
    while (at < n) {
        size_t len = 1 + rnd(400);
        if (len > n - at)
            len = n - at;
        REQUIRE(srv_store_ingest(s, ev + at, len, &r) == GPUFL_OK);
        acc += r.accepted;
        /* now and then a stretch already sent: duplicates, no rollup */
        if (at > 0 && rnd(3) == 0) {
            size_t back = rnd(at), blen = 1 + rnd(at - back);
            REQUIRE(srv_store_ingest(s, ev + back, blen, &r) == GPUFL_OK);
            CHECK_EQ_U64(r.accepted, 0);
        }
        at += len;
    }
    CHECK_EQ_U64(acc, n);
    srv_store_close(s);

    REQUIRE(unpack(name, &tl1_packs));
    /* SQLite writes no capi row of level 0, only packs */
    if (!pg_uri()[0]) {
        CHECK(count_of(name, "SELECT count(*) FROM capi WHERE lvl=0") == 0);
        CHECK(count_of(name, "SELECT count(*) FROM capipack WHERE lvl=0") > 0);
        REQUIRE(unpack(name, &capi0_packs));
    }
    m = tl_expect(blocks);
    snprintf(sql, sizeof(sql),
             "SELECT sess, lvl, lane, b, n, busy, top_name, top_dur FROM tl"
             " WHERE lvl >= %d ORDER BY 1, 2, 3, 4",
             blocks);
    CHECK(m > 3 * NK);
    CHECK(rows_equal(name, sql, 8, m));
    m = capi_expect(capi0_skipped);
    snprintf(sql, sizeof(sql),
             "SELECT sess, lvl, b, tid, n, busy FROM capi WHERE lvl >= %d"
             " ORDER BY 1, 2, 3, 4",
             capi0_skipped);
    CHECK(m > NK);
    CHECK(rows_equal(name, sql, 6, m));
}

static void test_rows_store(void)
{
    check_store("tlrun_rows", 0);
}

static void test_blocks_store(void)
{
    check_store("tlrun_blocks", 1);
}

int main(void)
{
    RUN(test_rows_store);
    RUN(test_blocks_store);
    free(cs);
    TEST_DONE();
}
