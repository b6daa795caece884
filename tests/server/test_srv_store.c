/*
 * test_srv_store.c - the store through its interface: idempotent ingest
 * (also batches mixing new and stored lines), rollups against the raw
 * rows, kernels sorted by duration across the duration index's epochs,
 * keys (pages, hosts), a session's ingest policy, keep and retention, a
 * reopen that finds the schema current, and ingest into blocks against
 * rows under random batches.
 *
 * On SQLite; on PostgreSQL too when GPUFL_TEST_PG_URI_FILE names a
 * throwaway cluster's URI (tests/server/pg_cluster.sh): each store is then
 * a fresh database there.
 */
#include "ingest.h"
#include "store.h"
#include "test.h"

#include <gpufl/gpufl.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "jpath.h"
#include "store_test.h"

#define SIDA "aaaaaaaa-0000-4000-8000-000000000001"
#define SIDB "bbbbbbbb-0000-4000-8000-000000000002"
#define SIDC "cccccccc-0000-4000-8000-000000000004"

static jsonl_tok tok[INGEST_MAX_TOKENS];
static char lines[1300][512];
static char arena[1 << 20];

/* The session test_srv_store's checks read: store_test.h's, on streams 0
 * and 1 in turn, ended. */
static size_t build(const char *sid, int n, srv_ev *ev)
{
    return st_session(sid, n, -1, 1, lines, arena, sizeof(arena), ev);
}

static void test_ingest_dedup_rollups(void)
{
    static srv_ev ev[400];
    srv_ingest_res r;
    srv_store *s = open_tmp("store_dedup");
    size_t n = build(SIDA, 100, ev);

    REQUIRE(s);
    REQUIRE(srv_store_ingest(s, ev, n, &r) == GPUFL_OK);
    CHECK_EQ_U64(r.accepted, n);
    CHECK_EQ_U64(r.duplicate, 0);
    REQUIRE(srv_store_ingest(s, ev, n, &r) == GPUFL_OK);
    CHECK_EQ_U64(r.accepted, 0);
    CHECK_EQ_U64(r.duplicate, n);
    /* halves in other batches are duplicates too */
    REQUIRE(srv_store_ingest(s, ev + 10, 20, &r) == GPUFL_OK);
    CHECK_EQ_U64(r.duplicate, 20);
    /* count 100, total = 1000 * 5050, min 1000, max 100000 */
    q(s, srv_store_q_kernel_agg, SIDA);
    CHECK_JLEN(out, "items", 1);
    CHECK_JSTR(out, "items.0.name", "k1");
    CHECK_JI64(out, "items.0.count", 100);
    CHECK_JDEC(out, "items.0.total_ns", 5050000);
    CHECK_JDEC(out, "items.0.avg_ns", 50500);
    CHECK_JDEC(out, "items.0.min_ns", 1000);
    CHECK_JDEC(out, "items.0.max_ns", 100000);
    CHECK_JF64(out, "items.0.occ_avg", 0.5);
    CHECK_JI64(out, "items.0.regs", 32);
    q(s, srv_store_q_session, SIDA);
    CHECK_JSTR(out, "state", "ended");
    CHECK_JI64(out, "counts.kernels", 100);
    CHECK_JI64(out, "counts.lines", (int64_t)n);
    /* each kernel listed once, in start order */
    q(s, srv_store_q_kernels, SIDA);
    CHECK_JLEN(out, "items", 100);
    CHECK_JDEC(out, "items.0.ts", 1000000);
    CHECK_JDEC(out, "items.99.ts", 1000000 + 99 * 5000);
    CHECK_JNULL(out, "next");
    {
        srv_q qq;
        jw w;
        memset(&qq, 0, sizeof(qq));
        qq.sid = "cccccccc-0000-4000-8000-000000000003";
        jw_init(&w, out, sizeof(out));
        CHECK(srv_store_q_kernels(s, &qq, &w) == GPUFL_ENOTFOUND);
        qq.sid = SIDA;
        qq.cursor = "zz";
        CHECK(srv_store_q_kernels(s, &qq, &w) == GPUFL_EINVAL);
    }
    srv_store_close(s);
}

static void test_keys_keep_retention(void)
{
    static srv_ev ev[400];
    srv_ingest_res r;
    srv_store *s = open_tmp("store_keys");
    srv_key keys[8];
    srv_retention pol = { 0, 1 };
    char role[16];
    int64_t id;
    size_t n;
    uint64_t pruned = 0;

    REQUIRE(s);
    REQUIRE(srv_store_key_add(s, "k", "read", "gfk_12345678", "abcd", NULL,
                              &id) == GPUFL_OK);
    REQUIRE(srv_store_key_lookup(s, "abcd", role, sizeof(role), NULL, 0) ==
            GPUFL_OK);
    CHECK_STR(role, "read");
    REQUIRE(srv_store_key_list(s, 0, keys, 8, &n) == GPUFL_OK);
    CHECK(n == 1 && keys[0].id == id && keys[0].last_used > 0);
    CHECK(srv_store_key_revoke(s, id) == GPUFL_OK);
    CHECK(srv_store_key_revoke(s, id) == GPUFL_ENOTFOUND);
    REQUIRE(srv_store_key_lookup(s, "abcd", role, sizeof(role), NULL, 0) ==
            GPUFL_OK);
    CHECK_STR(role, "");

    n = build(SIDA, 10, ev);
    REQUIRE(srv_store_ingest(s, ev, n, &r) == GPUFL_OK);
    n = build(SIDB, 10, ev);
    REQUIRE(srv_store_ingest(s, ev, n, &r) == GPUFL_OK);
    CHECK(srv_store_set_keep(s, SIDA, 1) == GPUFL_OK);
    CHECK(srv_store_set_keep(s, "dddddddd-0000-4000-8000-000000000000", 1) ==
          GPUFL_ENOTFOUND);
    REQUIRE(srv_store_prune(s, &pol, &pruned) == GPUFL_OK);
    CHECK_EQ_U64(pruned, 1);
    q(s, srv_store_q_session, SIDA);
    CHECK_JBOOL(out, "keep", 1);
    CHECK_JSTR(out, "id", SIDA);
    q(s, srv_store_q_session, SIDB);
    CHECK(q_rc == GPUFL_ENOTFOUND);
    /* the pruned session can come back whole */
    REQUIRE(srv_store_ingest(s, ev, n, &r) == GPUFL_OK);
    CHECK_EQ_U64(r.accepted, n);
    CHECK(srv_store_mark_stale(s, 0, 0) == GPUFL_OK);
    CHECK(srv_store_db_bytes(s) > 0);
    CHECK(srv_store_ping(s) == GPUFL_OK);
    srv_store_close(s);
}

/* Kernels whose seqs spread over many epochs of the duration index
 * (2^16 seq each), durations with ties. */
#define NSPREAD 60
static int spread_seq(int i)
{
    return 3 + i * 30000;
}
static int spread_dur(int i)
{
    return ((i * 37) % 20) * 1000 + 500;
}

static size_t build_spread(const char *sid, int from, int to, srv_ev *ev)
{
    int k = 0;

    snprintf(lines[k++], sizeof(lines[0]),
             "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":0,"
             "\"ts\":100,\"type\":\"session\",\"app\":\"t\","
             "\"host\":\"h\"}",
             sid);
    snprintf(lines[k++], sizeof(lines[0]),
             "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":1,"
             "\"ts\":101,\"type\":\"dict\",\"id\":1,\"kind\":\"name\","
             "\"name\":\"spread_k\"}",
             sid);
    for (int i = from; i < to; i++)
        snprintf(lines[k++], sizeof(lines[0]),
                 "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%d,"
                 "\"ts\":%d,\"type\":\"kernel\",\"name\":1,\"dur\":%d}",
                 sid, spread_seq(i), 1000000 + i * 1000, spread_dur(i));
    return st_parse(SRV_ST_DEVICE, lines, k, arena, sizeof(arena), ev);
}

/* Pages through kernels sorted by duration (page_limit a page); fills
 * dur/seq in page order and returns how many. */
static uint32_t page_limit = 7;
static int dur_pages(srv_store *s, const char *sid, int desc, const char *name,
                     uint64_t from, uint64_t to, int64_t *dur, int64_t *seq,
                     int cap)
{
    char cur[256] = "";
    int n = 0;

    for (int page = 0; page < 100; page++) {
        srv_q qq;
        jw w;
        size_t cl;
        memset(&qq, 0, sizeof(qq));
        qq.sid = sid;
        qq.sort = "duration";
        qq.desc = desc;
        qq.limit = page_limit;
        qq.name = name;
        qq.from = from;
        qq.to = to;
        qq.cursor = cur[0] ? cur : NULL;
        jw_init(&w, out, sizeof(out));
        if (srv_store_q_kernels(s, &qq, &w))
            return -1;
        jw_put(&w, "", 1);
        for (int i = 0; n < cap; i++) {
            char path[32];
            snprintf(path, sizeof(path), "items.%d.kid", i);
            if (jp_int(out, path, &seq[n]))
                break;
            snprintf(path, sizeof(path), "items.%d.dur", i);
            if (jp_int(out, path, &dur[n++]))
                return -1;
        }
        if (jsonl_tok_type(&jp_doc, jp_find(out, "next")) != JSONL_STRING)
            break;
        jsonl_tok_str(&jp_doc, jp_find(out, "next"), cur, sizeof(cur), &cl);
    }
    return n;
}

/* Keys page by id (after), carry their hosts through add, list and
 * lookup; a session's policy is its host and where its ended streams
 * ended (what ingest_scope.c decides from). */
static void test_keys_pages_hosts_policy(void)
{
    static srv_ev ev[64];
    srv_ingest_res r;
    srv_store *s = open_tmp("store_keys_pages");
    srv_key keys[4];
    srv_sess_policy p;
    char role[16], hosts[SRV_KEY_HOSTS_MAX], hash[8];
    int64_t id[5];
    size_t n;

    REQUIRE(s);
    for (int i = 0; i < 5; i++) {
        snprintf(hash, sizeof(hash), "h%d", i);
        REQUIRE(srv_store_key_add(s, "k", "ingest", "gfk_1", hash,
                                  i == 2   ? "node-7,node-8"
                                  : i == 3 ? ""
                                           : NULL,
                                  &id[i]) == GPUFL_OK);
    }
    REQUIRE(srv_store_key_list(s, 0, keys, 2, &n) == GPUFL_OK);
    CHECK(n == 2 && keys[0].id == id[0] && keys[1].id == id[1]);
    REQUIRE(srv_store_key_list(s, keys[1].id, keys, 2, &n) == GPUFL_OK);
    CHECK(n == 2 && keys[0].id == id[2] && keys[1].id == id[3]);
    CHECK_STR(keys[0].hosts, "node-7,node-8");
    CHECK_STR(keys[1].hosts, ""); /* "" is stored as any host */
    REQUIRE(srv_store_key_list(s, keys[1].id, keys, 2, &n) == GPUFL_OK);
    CHECK(n == 1 && keys[0].id == id[4]);
    REQUIRE(srv_store_key_list(s, id[4], keys, 2, &n) == GPUFL_OK);
    CHECK(n == 0);
    REQUIRE(srv_store_key_lookup(s, "h2", role, sizeof(role), hosts,
                                 sizeof(hosts)) == GPUFL_OK);
    CHECK_STR(role, "ingest");
    CHECK_STR(hosts, "node-7,node-8");
    REQUIRE(srv_store_key_lookup(s, "h0", role, sizeof(role), hosts,
                                 sizeof(hosts)) == GPUFL_OK);
    CHECK_STR(hosts, "");

    REQUIRE(srv_store_sess_policy(s, SIDA, &p) == GPUFL_OK);
    CHECK(p.found == 0 && p.ended == 0);
    /* seq 0 session (host "h"), 1-2 dicts, 3-5 kernels, 6 session_end */
    n = build(SIDA, 3, ev);
    REQUIRE(srv_store_ingest(s, ev, n - 1, &r) == GPUFL_OK);
    REQUIRE(srv_store_sess_policy(s, SIDA, &p) == GPUFL_OK);
    CHECK(p.found == 1 && p.ended == 0);
    CHECK_STR(p.host, "h");
    REQUIRE(srv_store_ingest(s, ev + n - 1, 1, &r) == GPUFL_OK);
    REQUIRE(srv_store_sess_policy(s, SIDA, &p) == GPUFL_OK);
    CHECK(p.found == 1 && p.ended == 1u << SRV_ST_DEVICE);
    CHECK_EQ_U64(p.end_seq[SRV_ST_DEVICE], 6);
    CHECK_EQ_U64(p.end_seq[SRV_ST_SYSTEM], 0);
    srv_store_close(s);
}

static void test_mixed_batches_dur_sort(void)
{
    static srv_ev ev[400];
    srv_ingest_res r;
    srv_store *s = open_tmp("store_spread");
    int64_t dur[NSPREAD + 8], seq[NSPREAD + 8];
    int n, ok;
    size_t m;

    REQUIRE(s);
    /* new lines only (on PostgreSQL, COPY straight into kernels) */
    m = build_spread(SIDB, 0, 25, ev);
    REQUIRE(srv_store_ingest(s, ev, m, &r) == GPUFL_OK);
    CHECK_EQ_U64(r.accepted, m);
    /* a key twice in one batch: the first is new, the second a duplicate
     * (as are the session and dict lines) */
    m = build_spread(SIDB, 25, 30, ev);
    ev[m] = ev[m - 1];
    REQUIRE(srv_store_ingest(s, ev, m + 1, &r) == GPUFL_OK);
    CHECK_EQ_U64(r.accepted, 5);
    CHECK_EQ_U64(r.duplicate, 3);
    /* stored and new lines mixed: kernels 20..29 again, 30..59 new */
    m = build_spread(SIDB, 20, NSPREAD, ev);
    REQUIRE(srv_store_ingest(s, ev, m, &r) == GPUFL_OK);
    CHECK_EQ_U64(r.accepted, NSPREAD - 30);
    CHECK_EQ_U64(r.duplicate, 2 + 10);
    /* everything again */
    m = build_spread(SIDB, 0, NSPREAD, ev);
    REQUIRE(srv_store_ingest(s, ev, m, &r) == GPUFL_OK);
    CHECK_EQ_U64(r.accepted, 0);
    CHECK_EQ_U64(r.duplicate, m);
    CHECK_JI64(q(s, srv_store_q_session, SIDB), "counts.kernels", 60);
    CHECK_JI64(q(s, srv_store_q_kernel_agg, SIDB), "items.0.count", 60);

    /* sorted by duration, both ways, page by page across the epochs */
    for (int desc = 0; desc < 2; desc++) {
        n = dur_pages(s, SIDB, desc, NULL, 0, 0, dur, seq, NSPREAD + 8);
        CHECK_EQ_U64(n, NSPREAD);
        ok = n == NSPREAD;
        for (int i = 1; i < n; i++) {
            int64_t a = desc ? dur[i] : dur[i - 1],
                    b = desc ? dur[i - 1] : dur[i];
            int64_t sa = desc ? seq[i] : seq[i - 1],
                    sb = desc ? seq[i - 1] : seq[i];
            ok &= a < b || (a == b && sa < sb);
        }
        CHECK(ok);
    }
    /* ... with a name filter, and within a time range */
    n = dur_pages(s, SIDB, 1, "spread", 0, 0, dur, seq, NSPREAD + 8);
    CHECK_EQ_U64(n, NSPREAD);
    n = dur_pages(s, SIDB, 0, NULL, 1000000 + 10 * 1000, 1000000 + 40 * 1000,
                  dur, seq, NSPREAD + 8);
    CHECK_EQ_U64(n, 30);
    ok = 1;
    for (int i = 0; i < n; i++)
        ok &= seq[i] >= spread_seq(10) && seq[i] <= spread_seq(39);
    CHECK(ok);
    n = dur_pages(s, SIDB, 0, "no_such_kernel", 0, 0, dur, seq, NSPREAD + 8);
    CHECK_EQ_U64(n, 0);
    /* seqs far apart: only the epochs holding kernels are visited */
    {
        static const char *const far[] = {
            "{\"v\":1,\"sid\":\"" SIDC "\",\"st\":\"device\",\"seq\":5,"
            "\"ts\":10,\"type\":\"kernel\",\"dur\":30}",
            "{\"v\":1,\"sid\":\"" SIDC "\",\"st\":\"device\","
            "\"seq\":1073741824,\"ts\":20,\"type\":\"kernel\",\"dur\":10}",
            "{\"v\":1,\"sid\":\"" SIDC "\",\"st\":\"device\","
            "\"seq\":1099511627776,\"ts\":30,\"type\":\"kernel\","
            "\"dur\":20}",
        };
        ingest_arena a = { arena, 0, sizeof(arena) };
        jsonl_doc d;
        char why[INGEST_REASON_MAX];
        jsonl_doc_init(&d, tok, INGEST_MAX_TOKENS);
        for (int i = 0; i < 3; i++)
            REQUIRE(ingest_line_parse(&d, SRV_ST_DEVICE, far[i], strlen(far[i]),
                                      &a, &ev[i], why) == 0);
        REQUIRE(srv_store_ingest(s, ev, 3, &r) == GPUFL_OK);
        CHECK_EQ_U64(r.accepted, 3);
        n = dur_pages(s, SIDC, 0, NULL, 0, 0, dur, seq, NSPREAD + 8);
        CHECK_EQ_U64(n, 3);
        CHECK(n == 3 && seq[0] == 1073741824 && seq[1] == 1099511627776 &&
              seq[2] == 5);
    }
    srv_store_close(s);
}

/* The (dur, seq) order of spread kernels [0, n) within [from, to) ts,
 * ascending; how many. */
static int spread_expect(int n, uint64_t from, uint64_t to, int64_t *dur,
                         int64_t *seq)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        uint64_t ts = 1000000u + (uint64_t)i * 1000u;
        if ((from || to) && (ts < from || ts >= to))
            continue;
        dur[m] = spread_dur(i);
        seq[m++] = spread_seq(i);
    }
    for (int i = 1; i < m; i++) /* insertion sort: small */
        for (int j = i;
             j > 0 && (dur[j] < dur[j - 1] ||
                       (dur[j] == dur[j - 1] && seq[j] < seq[j - 1]));
             j--) {
            int64_t td = dur[j], ts = seq[j];
            dur[j] = dur[j - 1];
            seq[j] = seq[j - 1];
            dur[j - 1] = td;
            seq[j - 1] = ts;
        }
    return m;
}

/* Every page sorted by duration equals the sorted list, both ways, with
 * and without a time range and a name filter. */
static void check_dur_order(srv_store *s, const char *sid, int n)
{
    static const uint64_t rng[2][2] = {
        { 0, 0 }, { 1000000 + 10 * 1000, 1000000 + 40 * 1000 }
    };
    int64_t dur[128], seq[128], wd[128], ws[128];

    for (int r = 0; r < 2; r++)
        for (int desc = 0; desc < 2; desc++)
            for (int f = 0; f < 2; f++) {
                int m = spread_expect(n, rng[r][0], rng[r][1], wd, ws), ok;
                int got = dur_pages(s, sid, desc, f ? "spread" : NULL,
                                    rng[r][0], rng[r][1], dur, seq, 128);
                CHECK_EQ_U64(got, m);
                ok = got == m;
                for (int i = 0; ok && i < m; i++) {
                    int j = desc ? m - 1 - i : i;
                    ok = dur[i] == wd[j] && seq[i] == ws[j];
                }
                if (!ok)
                    fprintf(stderr, "order differs: range %d desc %d name %d\n",
                            r, desc, f);
                CHECK(ok);
            }
}

/* 1 when kext holds, for every session and side, exactly its k best
 * kernels (the database tmp_url(name); kernels as rows): the keys leaving
 * in a batch are deleted, and only they (lite_kext's range deletes). */
static int kext_is_top(const char *name, int k)
{
    static const char *const sql[] = {
        /* keys that are no kernel's, or with k kernels before them */
        "SELECT count(*) FROM kext x WHERE NOT EXISTS (SELECT 1 FROM"
        " kernels k WHERE k.sess=x.sess AND k.seq=x.seq AND k.dur=x.dur)"
        " OR (SELECT count(*) FROM kernels k WHERE k.sess=x.sess AND"
        " ((x.side=0 AND (k.dur>x.dur OR (k.dur=x.dur AND k.seq>x.seq)))"
        " OR (x.side=1 AND (k.dur<x.dur OR (k.dur=x.dur AND"
        " k.seq<x.seq))))) >= ?1",
        /* sides of a session of k kernels or more holding other than k */
        "SELECT count(*) FROM (SELECT sess FROM kernels GROUP BY sess"
        " HAVING count(*) >= ?1) k, (SELECT 0 AS side UNION SELECT 1) d"
        " WHERE (SELECT count(*) FROM kext WHERE sess=k.sess AND"
        " side=d.side) != ?1",
    };
    char path[512], err[256];
    sdb *db;
    int ok = 1;

    tmp_url(name, path);
    if (sdb_open(path, 1, &db, err, sizeof(err)) != 0)
        return 0;
    for (int q = 0; q < 2; q++) {
        sdb_stmt *st = NULL;
        if (sdb_prepare(db, sql[q], &st) != 0) {
            ok = 0;
            continue;
        }
        sdb_bind_i64(st, 1, k);
        if (sdb_step(st) != SDB_ROW || sdb_col_i64(st, 0) != 0) {
            fprintf(stderr, "kext check %d: %lld\n", q,
                    (long long)sdb_col_i64(st, 0));
            ok = 0;
        }
        sdb_finalize(st);
    }
    sdb_close(db);
    return ok;
}

/* kext (the longest and shortest kernels kept per session) with a K
 * smaller than the session: pages within it come from kext, later ones
 * from the plain sort; duplicates, a reopen (heaps reloaded), K shrinking
 * and growing between runs keep every order exact. */
static void test_dur_prefix(void)
{
    static srv_ev ev[400];
    srv_ingest_res r;
    srv_store *s;
    size_t m;

    setenv("GPUFL_SERVER_TOPK", "8", 1);
    s = open_tmp("store_topk");
    REQUIRE(s);
    m = build_spread(SIDC, 0, 3, ev);
    REQUIRE(srv_store_ingest(s, ev, m, &r) == GPUFL_OK);
    check_dur_order(s, SIDC, 3); /* fewer than K: kext holds all */
    for (int from = 3; from < 39; from += 9) {
        m = build_spread(SIDC, from, from + 9, ev);
        REQUIRE(srv_store_ingest(s, ev, m, &r) == GPUFL_OK);
    }
    m = build_spread(SIDC, 0, 39, ev); /* all duplicates */
    REQUIRE(srv_store_ingest(s, ev, m, &r) == GPUFL_OK);
    CHECK_EQ_U64(r.accepted, 0);
    check_dur_order(s, SIDC, 39);
    srv_store_close(s);
    CHECK(kext_is_top("store_topk", 8));
    /* reopened with K 8, 3 (shrinks the stored prefixes), 32 (longer
     * than the stored prefixes: they stay as long as they are) */
    for (int run = 0; run < 3; run++) {
        static const char *const k[] = { "8", "3", "32" };
        int lo = 39 + run * 10;
        setenv("GPUFL_SERVER_TOPK", k[run], 1);
        s = open_tmp_again("store_topk");
        REQUIRE(s);
        check_dur_order(s, SIDC, lo);
        m = build_spread(SIDC, lo, lo + 10, ev);
        REQUIRE(srv_store_ingest(s, ev, m, &r) == GPUFL_OK);
        CHECK_EQ_U64(r.accepted, 10);
        check_dur_order(s, SIDC, lo + 10);
        srv_store_close(s);
    }
    unsetenv("GPUFL_SERVER_TOPK");
}

/* A kext row already there for a kernel stored for the first time (a
 * row its kernel outlived): PostgreSQL's writer inserts a batch's new
 * keys plainly inside a savepoint and, when that fails, again by ON
 * CONFLICT DO NOTHING (store_sql_ingest_pg.c ext_put) - the batch is
 * stored, the key once, the order exact.  Without the second try the
 * batch fails. */
static void test_kext_stray(void)
{
    static srv_ev ev[400];
    srv_ingest_res r;
    srv_store *s = open_tmp("store_kstray");
    char path[512], err[256];
    sdb *db = NULL;
    sdb_stmt *st = NULL;
    size_t m;

    REQUIRE(s);
    m = build_spread(SIDC, 0, 3, ev);
    REQUIRE(srv_store_ingest(s, ev, m, &r) == GPUFL_OK);
    tmp_url("store_kstray", path);
    REQUIRE(sdb_open(path, 0, &db, err, sizeof(err)) == 0);
    /* the longest side's key of the next batch's first kernel */
    REQUIRE(sdb_prepare(db,
                        "INSERT INTO kext SELECT id, 0, ?1, ?2 FROM sessions"
                        " WHERE sid=?3",
                        &st) == 0);
    sdb_bind_i64(st, 1, spread_dur(3));
    sdb_bind_i64(st, 2, spread_seq(3));
    sdb_bind_text(st, 3, SIDC, strlen(SIDC));
    CHECK(sdb_step(st) == SDB_DONE);
    sdb_finalize(st);
    sdb_close(db);
    m = build_spread(SIDC, 3, 12, ev);
    CHECK(srv_store_ingest(s, ev, m, &r) == GPUFL_OK);
    CHECK_EQ_U64(r.accepted, 9);
    check_dur_order(s, SIDC, 12);
    srv_store_close(s);
    CHECK(kext_is_top("store_kstray", 4096));
}

/* System samples: 10 minutes at 1 s of a host and a GPU (the GPU's temp
 * missing every 13th second), ingested in batches that split minutes and
 * once more as duplicates.  Points of 120 s come from the 60 s rollup:
 * they must equal min / max / avg / count computed here from the samples
 * (each minute's first sample falls in the point holding all of it). */
#define SIDD "dddddddd-0000-4000-8000-000000000005"
#define SYS_T0 1800000000000000000ull /* a multiple of 60 s */
#define SYS_N 600
static size_t build_sys(int from, int to, srv_ev *ev)
{
    int k = 0;

    snprintf(lines[k++], sizeof(lines[0]),
             "{\"v\":1,\"sid\":\"" SIDD "\",\"st\":\"system\",\"seq\":0,"
             "\"ts\":%llu,\"type\":\"session\",\"app\":\"t\","
             "\"host\":\"h\"}",
             (unsigned long long)SYS_T0);
    for (int t = from; t < to; t++) {
        unsigned long long ts =
            SYS_T0 + (unsigned long long)t * 1000000000ull + 500000000ull;
        snprintf(lines[k++], sizeof(lines[0]),
                 "{\"v\":1,\"sid\":\"" SIDD "\",\"st\":\"system\","
                 "\"seq\":%d,\"ts\":%llu,\"type\":\"host\",\"cpu\":%d,"
                 "\"ncpu\":2,\"ram_used\":1000,\"ram_total\":2000}",
                 1 + 2 * t, ts, t % 50);
        if (t % 13)
            snprintf(lines[k++], sizeof(lines[0]),
                     "{\"v\":1,\"sid\":\"" SIDD "\",\"st\":\"system\","
                     "\"seq\":%d,\"ts\":%llu,\"type\":\"gpu\",\"dev\":0,"
                     "\"util\":%d,\"temp\":%d}",
                     2 + 2 * t, ts, (t * 7) % 101, 40 + t % 30);
        else
            snprintf(lines[k++], sizeof(lines[0]),
                     "{\"v\":1,\"sid\":\"" SIDD "\",\"st\":\"system\","
                     "\"seq\":%d,\"ts\":%llu,\"type\":\"gpu\",\"dev\":0,"
                     "\"util\":%d}",
                     2 + 2 * t, ts, (t * 7) % 101);
    }
    return st_parse(SRV_ST_SYSTEM, lines, k, arena, sizeof(arena), ev);
}

/* Kernels with the given durations, seq seq0, seq0 + 1, ... (ts = seq). */
static size_t build_durs(const char *sid, int seq0, const int *dur, int n,
                         srv_ev *ev)
{
    int k = 0;

    snprintf(lines[k++], sizeof(lines[0]),
             "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":0,"
             "\"ts\":100,\"type\":\"session\",\"app\":\"t\","
             "\"host\":\"h\"}",
             sid);
    for (int i = 0; i < n; i++)
        snprintf(lines[k++], sizeof(lines[0]),
                 "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%d,"
                 "\"ts\":%d,\"type\":\"kernel\",\"name\":0,\"dur\":%d}",
                 sid, seq0 + i, 1000 + seq0 + i, dur[i]);
    return st_parse(SRV_ST_DEVICE, lines, k, arena, sizeof(arena), ev);
}

/* n kernels of SIDC from seq0 with durations d, ingested by s (REQUIRE). */
static void put_durs(srv_store *s, int seq0, const int *d, int n,
                     srv_ingest_res *r)
{
    static srv_ev ev[64];
    size_t m = build_durs(SIDC, seq0, d, n, ev);
    REQUIRE(srv_store_ingest(s, ev, m, r) == GPUFL_OK);
}

/* Two servers writing one database (PostgreSQL behind one Kafka consumer
 * group; here also SQLite), batches of one session alternating between
 * them.  K = 8.  A stores 1000..1110 (keeps 1040..1110); B adds 3000,
 * 3010, 3020 (so 1040..1060 leave kext); then A adds 1055 and 1052.  An
 * A that did not notice B's change (sessions.kext_ver) would take 1040
 * for its worst key, store both, and leave 1060 missing between 1070 and
 * 1055: the third 3-kernel page would read 1080, 1070, 1055. */
/* --kernel-store=blocks against rows: the same random batches (stretches
 * of one session, shuffled, with repeats) into a rows store and into two
 * blocks stores on one database taking turns (another server's kernels
 * between a writer's batches) give the same accepted and duplicate counts
 * batch by batch, and the same aggregates and kernels at the end. */
static void test_blocks_random_batches(void)
{
    static srv_ev ev[1300], bt[700];
    static char a1[sizeof(out)];
    srv_ingest_res r1, r2;
    srv_store *rows = open_tmp("kbi_rows");
    srv_store *bl[2] = { open_tmp("kbi_blocks"), open_tmp_again("kbi_blocks") };
    size_t n = build(SIDB, 1200, ev);
    uint64_t x = 2323, acc = 0;
    int same = 1;

    REQUIRE(rows && bl[0] && bl[1]);
    srv_store_set_kernel_store(bl[0], 1);
    srv_store_set_kernel_store(bl[1], 1);
    for (int round = 0; round < 80; round++) {
        size_t lo, len, m = 0;
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        lo = (size_t)(x >> 33) % n;
        len = 1 + (size_t)(x >> 13) % 300;
        if (lo + len > n)
            len = n - lo;
        for (size_t i = 0; i < len; i++)
            bt[m++] = ev[lo + i];
        /* some repeated, then part of it shuffled */
        for (size_t i = 0; i < len / 8 && m < 700; i++)
            bt[m++] = ev[lo + (size_t)(x >> (i % 40)) % len];
        for (size_t i = m - 1; i > 0 && (x & 1); i--) {
            size_t j;
            srv_ev tmp;
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            j = (size_t)(x >> 33) % (i + 1);
            tmp = bt[i];
            bt[i] = bt[j];
            bt[j] = tmp;
        }
        REQUIRE(srv_store_ingest(rows, bt, m, &r1) == GPUFL_OK);
        REQUIRE(srv_store_ingest(bl[round % 2], bt, m, &r2) == GPUFL_OK);
        same &= r1.accepted == r2.accepted && r1.duplicate == r2.duplicate;
        acc += r2.accepted;
    }
    CHECK(same);
    CHECK(acc > 400);
    /* the rest, then everything again */
    REQUIRE(srv_store_ingest(rows, ev, n, &r1) == GPUFL_OK);
    REQUIRE(srv_store_ingest(bl[0], ev, n, &r2) == GPUFL_OK);
    CHECK_EQ_U64(r2.accepted, r1.accepted);
    CHECK_EQ_U64(acc + r2.accepted, n);
    REQUIRE(srv_store_ingest(bl[1], ev, n, &r2) == GPUFL_OK);
    CHECK_EQ_U64(r2.duplicate, n);
    q(rows, srv_store_q_kernel_agg, SIDB);
    snprintf(a1, sizeof(a1), "%s", out);
    q(bl[1], srv_store_q_kernel_agg, SIDB);
    /* (kernels sent before their launch dict count under no name: alike) */
    CHECK(strcmp(a1, out) == 0);
    q(rows, srv_store_q_kernels, SIDB);
    snprintf(a1, sizeof(a1), "%s", out);
    q(bl[0], srv_store_q_kernels, SIDB);
    CHECK(strcmp(a1, out) == 0);
    CHECK_JLEN(out, "items", 1000);
    q(bl[0], srv_store_q_session, SIDB);
    CHECK_JI64(out, "counts.kernels", 1200);
    srv_store_close(rows);
    srv_store_close(bl[0]);
    srv_store_close(bl[1]);
}

static void test_two_writers(void)
{
    static const int d1[12] = { 1000, 1010, 1020, 1030, 1040, 1050,
                                1060, 1070, 1080, 1090, 1100, 1110 };
    static const int d2[3] = { 3000, 3010, 3020 }, d3[2] = { 1055, 1052 };
    int64_t dur[32], seq[32];
    int want[17], n, ok;
    srv_ingest_res r;
    srv_store *a, *b;

    setenv("GPUFL_SERVER_TOPK", "8", 1);
    a = open_tmp("store_two");
    b = open_tmp_again("store_two");
    unsetenv("GPUFL_SERVER_TOPK");
    REQUIRE(a && b);
    put_durs(a, 1, d1, 12, &r);
    put_durs(b, 13, d2, 3, &r);
    put_durs(a, 16, d3, 2, &r);
    CHECK_EQ_U64(r.accepted, 2);
    for (int i = 0; i < 12; i++)
        want[i] = d1[i];
    want[12] = 3000, want[13] = 3010, want[14] = 3020, want[15] = 1055;
    want[16] = 1052;
    for (int i = 1; i < 17; i++) /* descending */
        for (int j = i; j > 0 && want[j] > want[j - 1]; j--) {
            int t = want[j];
            want[j] = want[j - 1];
            want[j - 1] = t;
        }
    page_limit = 3;
    for (int w = 0; w < 2; w++) {
        n = dur_pages(w ? b : a, SIDC, 1, NULL, 0, 0, dur, seq, 32);
        CHECK_EQ_U64(n, 17);
        ok = n == 17;
        for (int i = 0; ok && i < 17; i++)
            ok = dur[i] == want[i];
        CHECK(ok);
    }
    page_limit = 7;
    srv_store_close(a);
    srv_store_close(b);
}

/* The kernel aggregates of one session written by two servers taking
 * turns (the writer keeps the kagg rows it wrote, on both databases:
 * store_sql_kagg_cache.c, valid while sessions.kext_ver is its own).  A
 * writer that merged its batch with its own last rows, missing the other
 * server's batch between, would count 5 kernels after its second batch
 * (not 7), its longest 1055 (not 3010); B's then 6, its shortest 1000. */
static void test_two_writers_kagg(void)
{
    static const int d1[3] = { 1000, 1010, 1020 }, d2[2] = { 3000, 3010 },
                     d3[2] = { 1055, 1052 }, d4[1] = { 5 };
    srv_ingest_res r;
    srv_store *a = open_tmp("store_two_kagg"),
              *b = open_tmp_again("store_two_kagg");

    REQUIRE(a && b);
    put_durs(a, 1, d1, 3, &r);
    put_durs(b, 4, d2, 2, &r);
    put_durs(a, 6, d3, 2, &r);
    CHECK_EQ_U64(r.accepted, 2);
    q(a, srv_store_q_kernel_agg, SIDC);
    CHECK_JI64(out, "items.0.count", 7);
    CHECK_JDEC(out, "items.0.total_ns",
               1000 + 1010 + 1020 + 3000 + 3010 + 1055 + 1052);
    CHECK_JDEC(out, "items.0.max_ns", 3010);
    put_durs(b, 8, d4, 1, &r);
    q(b, srv_store_q_kernel_agg, SIDC);
    CHECK_JI64(out, "items.0.count", 8);
    CHECK_JDEC(out, "items.0.min_ns", 5);
    CHECK_JDEC(out, "items.0.max_ns", 3010);
    srv_store_close(a);
    srv_store_close(b);
}

/* The System view of SIDD as build_sys wrote it: 120 s points from the
 * rollup equal what the samples say; 10 s points from the samples. */
static void check_sys(srv_store *s)
{
    srv_q qq;
    jw w;
    int pts;

    memset(&qq, 0, sizeof(qq));
    qq.sid = SIDD;
    qq.points = 5; /* 600 s -> 120 s a point: from the rollup */
    qq.from = SYS_T0;
    qq.to = SYS_T0 + SYS_N * 1000000000ull;
    qq.src = "gpu0";
    jw_init(&w, out, sizeof(out));
    REQUIRE(srv_store_q_system(s, &qq, &w) == GPUFL_OK);
    jw_put(&w, "", 1);
    CHECK_JDEC(out, "bucket_ns", 120000000000);
    CHECK_JLEN(out, "series", 1);
    CHECK_JSTR(out, "series.0.src", "gpu0");
    CHECK_JLEN(out, "series.0.points", 5);
    for (pts = 0; pts < 5; pts++) {
        double u[3], tp[3], wu[3] = { 1e9, -1, 0 }, wt[3] = { 1e9, -1, 0 };
        int64_t pn = -1;
        int n = 0, nt = 0, ok = 1;
        char path[64];
        for (int t = pts * 120; t < pts * 120 + 120; t++) {
            double uv = (t * 7) % 101, tv = 40 + t % 30;
            n++;
            wu[0] = uv < wu[0] ? uv : wu[0];
            wu[1] = uv > wu[1] ? uv : wu[1];
            wu[2] += uv;
            if (t % 13) {
                nt++;
                wt[0] = tv < wt[0] ? tv : wt[0];
                wt[1] = tv > wt[1] ? tv : wt[1];
                wt[2] += tv;
            }
        }
        wu[2] /= n;
        wt[2] /= nt;
        snprintf(path, sizeof(path), "series.0.points.%d.n", pts);
        ok = jp_int(out, path, &pn) == 0 && pn == n;
        for (int i = 0; ok && i < 3; i++) {
            snprintf(path, sizeof(path), "series.0.points.%d.util.%d", pts, i);
            ok = jp_num(out, path, &u[i]) == 0;
            snprintf(path, sizeof(path), "series.0.points.%d.temp.%d", pts, i);
            ok = ok && jp_num(out, path, &tp[i]) == 0;
            ok = ok && fabs(u[i] - wu[i]) < 1e-3 && fabs(tp[i] - wt[i]) < 1e-3;
        }
        if (!ok)
            fprintf(stderr, "point %d differs (n %lld, want %d)\n", pts,
                    (long long)pn, n);
        CHECK(ok);
    }
    /* 10 s points: from the samples themselves */
    qq.points = 60;
    jw_init(&w, out, sizeof(out));
    REQUIRE(srv_store_q_system(s, &qq, &w) == GPUFL_OK);
    jw_put(&w, "", 1);
    CHECK_JDEC(out, "bucket_ns", 10000000000);
    CHECK_JLEN(out, "series.0.points", 60);
    for (pts = 0; pts < 60; pts++) {
        char path[64];
        snprintf(path, sizeof(path), "series.0.points.%d.n", pts);
        CHECK_JI64(out, path, 10);
    }
}

static void test_system_rollup(void)
{
    static srv_ev ev[1300];
    srv_ingest_res r;
    srv_store *s = open_tmp("store_srl");
    size_t m;

    REQUIRE(s);
    m = build_sys(0, 250, ev);
    REQUIRE(srv_store_ingest(s, ev, m, &r) == GPUFL_OK);
    m = build_sys(250, 470, ev);
    REQUIRE(srv_store_ingest(s, ev, m, &r) == GPUFL_OK);
    m = build_sys(470, SYS_N, ev);
    REQUIRE(srv_store_ingest(s, ev, m, &r) == GPUFL_OK);
    m = build_sys(200, 300, ev); /* duplicates change nothing */
    REQUIRE(srv_store_ingest(s, ev, m, &r) == GPUFL_OK);
    CHECK_EQ_U64(r.accepted, 0);
    check_sys(s);
    srv_store_close(s);
}

/* SIDC's session answer as build_spread(SIDC, 0, nk) leaves it: its
 * device stream holds seqs 0, 1, 3, 30003, 60003, ... (a kernel every
 * 30000 seqs), so the ranges missing are [2,2], [4,30002], then one per
 * kernel after the first, nr in all, and missing lines total. */
static void check_gaps(const char *json, int64_t total, int nr, int64_t last)
{
    char path[64];

    CHECK_JI64(json, "missing", total);
    CHECK_JLEN(json, "gaps", 1);
    CHECK_JI64(json, "gaps.device.count", total);
    CHECK_JLEN(json, "gaps.device.ranges", (uint32_t)nr);
    CHECK_JI64(json, "gaps.device.ranges.0.0", 2);
    CHECK_JI64(json, "gaps.device.ranges.0.1", 2);
    CHECK_JI64(json, "gaps.device.ranges.1.0", 4);
    CHECK_JI64(json, "gaps.device.ranges.1.1", 30002);
    CHECK_JI64(json, "gaps.device.ranges.2.0", 30004);
    CHECK_JI64(json, "gaps.device.ranges.2.1", 60002);
    snprintf(path, sizeof(path), "gaps.device.ranges.%d.0", nr - 1);
    CHECK_JI64(json, path, last - 29999);
    snprintf(path, sizeof(path), "gaps.device.ranges.%d.1", nr - 1);
    CHECK_JI64(json, path, last - 1);
    CHECK_JBOOL(json, "gaps.device.ranges_cut", 0);
    CHECK_JI64(json, "gaps.device.last_seq", last);
}

/* A database of schema 6 (the duration index, no kext, srl, kext_ver,
 * seqr, nor what schemas 12 to 17 added) with kernels and system samples:
 * migrations 7, 8 and 10 fill kext, srl and the stored seq ranges from
 * what is stored (9 adds kext_ver), and the queries answer as for data ingested since: SIDC's device stream
 * holds seqs 0, 1, 3, 30003, ... 1140003, so 39 ranges (1139963 seqs) are
 * missing; after ten more kernels 49 (1439953). */
static void test_migrate_to_kext_srl(void)
{
    static srv_ev ev[1300];
    srv_ingest_res r;
    srv_store *s = open_tmp("store_mig");
    char path[512], err[256];
    sdb *db;
    size_t m;

    REQUIRE(s);
    m = build_spread(SIDC, 0, 39, ev);
    REQUIRE(srv_store_ingest(s, ev, m, &r) == GPUFL_OK);
    m = build_sys(0, SYS_N, ev);
    REQUIRE(srv_store_ingest(s, ev, m, &r) == GPUFL_OK);
    srv_store_close(s);
    tmp_url("store_mig", path);
    REQUIRE(sdb_open(path, 0, &db, err, sizeof(err)) == 0);
    CHECK(sdb_exec(db, "DROP TABLE kext") == 0);
    CHECK(sdb_exec(db, "DROP TABLE srl") == 0);
    CHECK(sdb_exec(db, "ALTER TABLE sessions DROP COLUMN kext_ver") == 0);
    CHECK(sdb_exec(db, "DROP TABLE seqr") == 0);
    CHECK(sdb_exec(db, "ALTER TABLE sessions DROP COLUMN streams") == 0);
    CHECK(sdb_exec(db, "ALTER TABLE sessions DROP COLUMN ended") == 0);
    CHECK(sdb_exec(db, "ALTER TABLE keys DROP COLUMN hosts") == 0);
    /* schema 14 (13 adds nothing yet) */
    CHECK(sdb_exec(db, "DROP INDEX sessions_job; DROP INDEX sessions_regress;"
                       "DROP INDEX sessions_app; DROP TABLE regressions;"
                       "ALTER TABLE sessions DROP COLUMN job;"
                       "ALTER TABLE sessions DROP COLUMN rank;"
                       "ALTER TABLE sessions DROP COLUMN world_size;"
                       "ALTER TABLE sessions DROP COLUMN local_rank;"
                       "ALTER TABLE sessions DROP COLUMN job_source;"
                       "ALTER TABLE sessions DROP COLUMN step_scope;"
                       "ALTER TABLE sessions DROP COLUMN sim_perturb;"
                       "ALTER TABLE sessions DROP COLUMN regress") == 0);
    /* schema 12 */
    CHECK(sdb_exec(db, "ALTER TABLE dicts DROP COLUMN demangled;"
                       "ALTER TABLE kernels DROP COLUMN tid;"
                       "ALTER TABLE ops DROP COLUMN tid;"
                       "ALTER TABLE ops DROP COLUMN api_off;"
                       "ALTER TABLE ops DROP COLUMN api_dur;"
                       "ALTER TABLE sessions DROP COLUMN api_lo;"
                       "ALTER TABLE sessions DROP COLUMN api_hi;"
                       "ALTER TABLE sessions DROP COLUMN op_lo;"
                       "ALTER TABLE sessions DROP COLUMN op_hi;"
                       "DROP TABLE klong") == 0);
    /* schema 13 */
    CHECK(sdb_exec(db, "DROP TABLE memooms") == 0);
    CHECK(sdb_exec(db, "DROP TABLE captures") == 0);
    /* schema 17 (captures.attempts went with the table) */
    CHECK(sdb_exec(db, "DROP INDEX lines_trigger") == 0);
    CHECK(sdb_exec(db, "DROP TABLE waste; DROP TABLE wasteh; DROP TABLE wasted;"
                       "DROP TABLE vruns") == 0);
    CHECK(sdb_exec(db, "CREATE INDEX kernels_dur ON kernels(sess, (seq>>16),"
                       " dur, seq)") == 0);
    CHECK(sdb_exec(db, "DELETE FROM schema_version WHERE version >= 7") == 0);
    sdb_close(db);
    setenv("GPUFL_SERVER_TOPK", "8", 1); /* the migration kept 4096 */
    s = open_tmp_again("store_mig");
    unsetenv("GPUFL_SERVER_TOPK");
    REQUIRE(s);
    check_dur_order(s, SIDC, 39);
    check_sys(s);
    check_gaps(q(s, srv_store_q_session, SIDC), 1139963, 39, 1140003);
    q(s, srv_store_q_session, SIDD);
    CHECK_JI64(out, "missing", 0);
    CHECK_JLEN(out, "gaps", 1);
    CHECK_JI64(out, "gaps.system.count", 0);
    CHECK_JLEN(out, "gaps.system.ranges", 0);
    CHECK_JBOOL(out, "gaps.system.ranges_cut", 0);
    CHECK_JI64(out, "gaps.system.last_seq", 1200);
    m = build_spread(SIDC, 39, 49, ev); /* and ingest goes on from there */
    REQUIRE(srv_store_ingest(s, ev, m, &r) == GPUFL_OK);
    CHECK_EQ_U64(r.accepted, 10);
    check_dur_order(s, SIDC, 49);
    check_gaps(q(s, srv_store_q_session, SIDC), 1439953, 49, 1440003);
    srv_store_close(s);
}

static void test_reopen(void)
{
    char path[512], err[256];
    const char *t = getenv("GPUFL_TEST_TMP");
    srv_store *s = NULL;

    if (pg_uri()[0])
        return; /* SQLite files only */
    snprintf(path, sizeof(path), "%s/store_keys.db", t ? t : "/tmp");
    REQUIRE(srv_store_open(path, 1, &s, err, sizeof(err)) == GPUFL_OK);
    CHECK_JBOOL(q(s, srv_store_q_session, SIDA), "keep", 1);
    srv_store_close(s);
    CHECK(srv_store_open("postgres://x/y", 1, &s, err, sizeof(err)) ==
          GPUFL_EUNAVAIL);
    CHECK(srv_store_open("/nonexistent/dir/x.db", 1, &s, err, sizeof(err)) !=
          GPUFL_OK);
}

/* kscope, merged across batches: a scope's kernels in two batches, a new
 * scope below the session's highest (PostgreSQL's upsert path), new ones
 * above it (its plain INSERT), one twice in a batch; a batch replayed
 * changes nothing.  Read from the table itself. */
static void kscope_line(int k, int seq, int scope, int dur)
{
    snprintf(lines[k], 512,
             "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%d,"
             "\"ts\":%d,\"type\":\"kernel\",\"cfg\":2,\"grid\":[1],"
             "\"dur\":%d,\"stream\":0,\"scope\":%d}",
             SIDA, seq, 2000000 + seq * 100, dur, scope);
}

static void test_kscope_batches(void)
{
    static srv_ev ev[16];
    static const int b1[][2] = { { 10, 1000 }, { 10, 2000 }, { 12, 3000 } };
    static const int b2[][2] = {
        { 12, 4000 }, { 11, 5000 }, { 20, 6000 }, { 20, 7000 }
    };
    static const int64_t want[][3] = {
        { 10, 2, 3000 }, { 11, 1, 5000 }, { 12, 2, 7000 }, { 20, 2, 13000 }
    };
    char url[512], err[256];
    srv_ingest_res r;
    srv_store *s = open_tmp("store_kscope");
    sdb *db = NULL;
    sdb_stmt *st = NULL;
    size_t n;
    int k = 0;

    REQUIRE(s);
    n = st_session(SIDA, 0, 0, 0, lines, arena, sizeof(arena), ev);
    k = (int)n;
    for (int i = 0; i < 3; i++)
        kscope_line(k++, 3 + i, b1[i][0], b1[i][1]);
    n = st_parse(SRV_ST_DEVICE, lines, k, arena, sizeof(arena), ev);
    REQUIRE(srv_store_ingest(s, ev, n, &r) == GPUFL_OK);
    CHECK_EQ_U64(r.accepted, n);
    for (int i = 0; i < 4; i++)
        kscope_line(i, 6 + i, b2[i][0], b2[i][1]);
    n = st_parse(SRV_ST_DEVICE, lines, 4, arena, sizeof(arena), ev);
    for (int pass = 0; pass < 2; pass++) {
        REQUIRE(srv_store_ingest(s, ev, n, &r) == GPUFL_OK);
        CHECK_EQ_U64(r.accepted, pass ? 0 : 4);
    }
    srv_store_close(s);
    tmp_url("store_kscope", url);
    REQUIRE(sdb_open(url, 0, &db, err, sizeof(err)) == 0);
    REQUIRE(sdb_prepare(db,
                        "SELECT scope, n, gpu_ns FROM kscope ORDER BY scope",
                        &st) == 0);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        CHECK(sdb_step(st) == SDB_ROW);
        CHECK(sdb_col_i64(st, 0) == want[i][0]);
        CHECK(sdb_col_i64(st, 1) == want[i][1]);
        CHECK(sdb_col_i64(st, 2) == want[i][2]);
    }
    CHECK(sdb_step(st) == SDB_DONE);
    sdb_finalize(st);
    sdb_close(db);
}

int main(void)
{
    RUN(test_ingest_dedup_rollups);
    RUN(test_kscope_batches);
    RUN(test_keys_keep_retention);
    RUN(test_keys_pages_hosts_policy);
    RUN(test_mixed_batches_dur_sort);
    RUN(test_dur_prefix);
    RUN(test_two_writers);
    RUN(test_two_writers_kagg);
    RUN(test_kext_stray);
    RUN(test_blocks_random_batches);
    RUN(test_system_rollup);
    RUN(test_migrate_to_kext_srl);
    RUN(test_reopen);
    TEST_DONE();
}
