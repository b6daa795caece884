/*
 * test_srv_gaps.c - what the store knows about a session's completeness:
 * the seq ranges it is missing per stream (holes, holes filled, many
 * holes, two servers writing one database with overlapping batches), when
 * a session ends (all its streams), when it turns stale (silence the
 * server could hear), and rollup sums of absurd durations (saturated, the
 * same on both databases).
 *
 * On SQLite; on PostgreSQL too when GPUFL_TEST_PG_URI_FILE names a
 * throwaway cluster's URI (ctest -R server_pg_gaps).
 */
#include "ingest.h"
#include "store.h"
#include "test.h"

#include <gpufl/gpufl.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db.h"
#include "jpath.h"
#include "store_test.h"

#define SIDE "eeeeeeee-0000-4000-8000-000000000001"
#define SIDF "ffffffff-0000-4000-8000-000000000002"
#define SIDG "eeeeeeee-1111-4000-8000-000000000003"

#define NEV 2048
static jsonl_tok tok[INGEST_MAX_TOKENS];
static char lines[NEV][512];
static char arena[1 << 20];
static srv_ev ev[NEV];
static size_t nev;
static ingest_arena ar;

static const char *const st_name[3] = { "device", "scope", "system" };

static void batch_reset(void)
{
    nev = 0;
    ar.buf = arena;
    ar.len = 0;
    ar.cap = sizeof(arena);
}

/* Adds one line (of the stream its "st" names) to the batch. */
static void add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void add(const char *fmt, ...)
{
    va_list ap;
    jsonl_doc d;
    char why[INGEST_REASON_MAX];
    int st = 0;

    if (nev == NEV)
        return;
    va_start(ap, fmt);
    vsnprintf(lines[nev], sizeof(lines[0]), fmt, ap);
    va_end(ap);
    for (int i = 0; i < 3; i++) {
        char k[32];
        snprintf(k, sizeof(k), "\"st\":\"%s\"", st_name[i]);
        if (strstr(lines[nev], k))
            st = i;
    }
    jsonl_doc_init(&d, tok, INGEST_MAX_TOKENS);
    if (ingest_line_parse(&d, st, lines[nev], strlen(lines[nev]), &ar, &ev[nev],
                          why)) {
        fprintf(stderr, "bad test line %s: %s\n", lines[nev], why);
        return;
    }
    nev++;
}

/* One plain line of stream st with this seq (a kernel, a marker or a host
 * sample). */
static void add_seq(const char *sid, int st, int seq)
{
    if (st == SRV_ST_DEVICE)
        add("{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%d,\"ts\":%d,"
            "\"type\":\"kernel\",\"name\":0,\"dur\":10}",
            sid, seq, 1000 + seq);
    else if (st == SRV_ST_SCOPE)
        add("{\"v\":1,\"sid\":\"%s\",\"st\":\"scope\",\"seq\":%d,\"ts\":%d,"
            "\"type\":\"marker\",\"text\":\"m\"}",
            sid, seq, 1000 + seq);
    else
        add("{\"v\":1,\"sid\":\"%s\",\"st\":\"system\",\"seq\":%d,\"ts\":%d,"
            "\"type\":\"host\",\"cpu\":1}",
            sid, seq, 1000 + seq);
}

static uint64_t ingest(srv_store *s)
{
    srv_ingest_res r;
    int rc = srv_store_ingest(s, ev, nev, &r);

    CHECK_EQ_U64(rc, GPUFL_OK);
    batch_reset();
    return rc ? (uint64_t)-1 : r.accepted;
}

/* Stores seqs [lo, hi] of stream st in one batch; how many were new. */
static uint64_t put_range(srv_store *s, const char *sid, int st, int lo, int hi)
{
    batch_reset();
    for (int i = lo; i <= hi; i++)
        add_seq(sid, st, i);
    return ingest(s);
}

static const char *session(srv_store *s, const char *sid)
{
    return q(s, srv_store_q_session, sid);
}

/* The gaps of stream st in a session answer: count missing, its first
 * nr missing ranges as listed (lo, hi pairs), whether the list was cut,
 * and the highest seq stored. */
static void check_gaps(const char *json, const char *st, int64_t count,
                       const int64_t (*r)[2], int nr, int listed, int cut,
                       int64_t last)
{
    char path[64];

#define P(...) (snprintf(path, sizeof(path), __VA_ARGS__), path)
    CHECK_JNUM(json, P("gaps.%s.count", st), count);
    CHECK_JLEN(json, P("gaps.%s.ranges", st), (uint32_t)listed);
    for (int i = 0; i < nr; i++) {
        CHECK_JNUM(json, P("gaps.%s.ranges.%d.0", st, i), r[i][0]);
        CHECK_JNUM(json, P("gaps.%s.ranges.%d.1", st, i), r[i][1]);
    }
    CHECK_JBOOL(json, P("gaps.%s.ranges_cut", st), cut);
    CHECK_JNUM(json, P("gaps.%s.last_seq", st), last);
#undef P
}

/* The lines missing in the first item of a sessions list with sid. */
static void check_list_missing(srv_store *s, const char *sid, int64_t want)
{
    const char *json = q(s, srv_store_q_sessions, NULL);
    int i = 0;
    char path[32];

    for (;; i++) {
        snprintf(path, sizeof(path), "items.%d.id", i);
        if (jp_find(json, path) == JSONL_NOTFOUND ||
            jsonl_tok_streq(&jp_doc, jp_find(json, path), sid, strlen(sid)))
            break;
    }
    snprintf(path, sizeof(path), "items.%d.missing", i);
    CHECK_JNUM(json, path, want);
}

/* A hole, part of it filled, duplicates, several holes made by one batch
 * sent out of order, a stream with a hole at its start: every range and
 * count exact, and the same sums in the session list and for /metrics. */
static void test_gaps_exact(void)
{
    srv_store *s = open_tmp("gaps_exact");
    uint64_t miss[SRV_ST_N];

    REQUIRE(s);
    CHECK_EQ_U64(put_range(s, SIDE, SRV_ST_DEVICE, 0, 99), 100);
    CHECK_JI64(session(s, SIDE), "missing", 0);
    CHECK_JLEN(out, "gaps", 1);
    check_gaps(out, "device", 0, NULL, 0, 0, 0, 99);
    CHECK_EQ_U64(put_range(s, SIDE, SRV_ST_DEVICE, 150, 199), 50);
    {
        static const int64_t r[][2] = { { 100, 149 } };
        check_gaps(session(s, SIDE), "device", 50, r, 1, 1, 0, 199);
    }
    CHECK_EQ_U64(put_range(s, SIDE, SRV_ST_DEVICE, 120, 129), 10);
    CHECK_EQ_U64(put_range(s, SIDE, SRV_ST_DEVICE, 0, 50), 0);
    /* one batch: 305, 300, 301 (after 199): two holes */
    batch_reset();
    add_seq(SIDE, SRV_ST_DEVICE, 305);
    add_seq(SIDE, SRV_ST_DEVICE, 300);
    add_seq(SIDE, SRV_ST_DEVICE, 301);
    add_seq(SIDE, SRV_ST_DEVICE, 300); /* twice in one batch */
    CHECK_EQ_U64(ingest(s), 3);
    CHECK_EQ_U64(put_range(s, SIDE, SRV_ST_SCOPE, 0, 9), 10);
    CHECK_EQ_U64(put_range(s, SIDE, SRV_ST_SYSTEM, 5, 9), 5);
    {
        static const int64_t dev[][2] = {
            { 100, 119 }, { 130, 149 }, { 200, 299 }, { 302, 304 }
        };
        static const int64_t sys[][2] = { { 0, 4 } };
        CHECK_JI64(session(s, SIDE), "missing", 148);
        CHECK_JLEN(out, "gaps", 3);
        check_gaps(out, "device", 143, dev, 4, 4, 0, 305);
        check_gaps(out, "scope", 0, NULL, 0, 0, 0, 9);
        check_gaps(out, "system", 5, sys, 1, 1, 0, 9);
    }
    check_list_missing(s, SIDE, 148);
    REQUIRE(srv_store_missing(s, miss) == GPUFL_OK);
    CHECK_EQ_U64(miss[SRV_ST_DEVICE], 143);
    CHECK_EQ_U64(miss[SRV_ST_SCOPE], 0);
    CHECK_EQ_U64(miss[SRV_ST_SYSTEM], 5);
    /* every hole filled, in pieces and out of order */
    CHECK_EQ_U64(put_range(s, SIDE, SRV_ST_DEVICE, 302, 304), 3);
    CHECK_EQ_U64(put_range(s, SIDE, SRV_ST_DEVICE, 100, 119), 20);
    CHECK_EQ_U64(put_range(s, SIDE, SRV_ST_DEVICE, 130, 300), 120);
    CHECK_EQ_U64(put_range(s, SIDE, SRV_ST_SYSTEM, 0, 4), 5);
    CHECK_JI64(session(s, SIDE), "missing", 0);
    check_gaps(out, "device", 0, NULL, 0, 0, 0, 305);
    REQUIRE(srv_store_missing(s, miss) == GPUFL_OK);
    CHECK_EQ_U64(miss[SRV_ST_DEVICE] + miss[SRV_ST_SYSTEM], 0);
    /* 150 holes: the first SQ_GAP_RANGES_MAX (100) listed, count exact */
    batch_reset();
    for (int i = 0; i <= 150; i++)
        add_seq(SIDF, SRV_ST_SCOPE, 2 * i);
    CHECK_EQ_U64(ingest(s), 151);
    {
        int64_t r[100][2];
        for (int i = 0; i < 100; i++)
            r[i][0] = r[i][1] = 2 * i + 1;
        CHECK_JI64(session(s, SIDF), "missing", 150);
        CHECK_JLEN(out, "gaps", 1);
        check_gaps(out, "scope", 150, (const int64_t(*)[2])r, 100, 100, 1, 300);
    }
    REQUIRE(srv_store_missing(s, miss) == GPUFL_OK);
    CHECK_EQ_U64(miss[SRV_ST_SCOPE], 150);
    /* the largest seq there is: nothing overflows */
    batch_reset();
    add_seq(SIDG, SRV_ST_SYSTEM, 0);
    add("{\"v\":1,\"sid\":\"" SIDG "\",\"st\":\"system\","
        "\"seq\":9223372036854775807,\"ts\":5,\"type\":\"host\"}");
    CHECK_EQ_U64(ingest(s), 2);
    {
        static const int64_t r[][2] = { { 1, INT64_MAX - 1 } };
        CHECK_JNUM(session(s, SIDG), "missing", INT64_MAX - 1);
        check_gaps(out, "system", INT64_MAX - 1, r, 1, 1, 0, INT64_MAX);
    }
    check_list_missing(s, SIDG, INT64_MAX - 1);
    REQUIRE(srv_store_missing(s, miss) == GPUFL_OK);
    CHECK_EQ_U64(miss[SRV_ST_SYSTEM], 9223372036854775806ull);
    srv_store_close(s);
}

/* Two servers on one database (two stores), batches of one stream
 * interleaved and overlapping, each server's remembered range moved under
 * it by the other: 0..99 (A), 50..149 (B), 300..399 (A), 200..249 (B),
 * 140..219 (A), 250..260 (B) leave 261..299 missing, nothing else. */
static void test_gaps_two_writers(void)
{
    srv_store *a = open_tmp("gaps_two"), *b = open_tmp_again("gaps_two");
    static const int bat[6][2] = { { 0, 99 },    { 50, 149 },  { 300, 399 },
                                   { 200, 249 }, { 140, 219 }, { 250, 260 } };
    static const uint64_t fresh[6] = { 100, 50, 100, 50, 50, 11 };
    uint64_t miss[SRV_ST_N];

    REQUIRE(a && b);
    for (int i = 0; i < 6; i++)
        CHECK_EQ_U64(
            put_range(i % 2 ? b : a, SIDG, SRV_ST_DEVICE, bat[i][0], bat[i][1]),
            fresh[i]);
    for (int w = 0; w < 2; w++) {
        srv_store *s = w ? b : a;
        static const int64_t r[][2] = { { 261, 299 } };
        CHECK_JI64(session(s, SIDG), "missing", 39);
        CHECK_JLEN(out, "gaps", 1);
        check_gaps(out, "device", 39, r, 1, 1, 0, 399);
        REQUIRE(srv_store_missing(s, miss) == GPUFL_OK);
        CHECK_EQ_U64(miss[SRV_ST_DEVICE], 39);
    }
    /* and the last hole filled by both at once (same lines twice) */
    CHECK_EQ_U64(put_range(a, SIDG, SRV_ST_DEVICE, 255, 280), 20);
    CHECK_EQ_U64(put_range(b, SIDG, SRV_ST_DEVICE, 270, 299), 19);
    CHECK_JI64(session(a, SIDG), "missing", 0);
    check_gaps(out, "device", 0, NULL, 0, 0, 0, 399);
    srv_store_close(a);
    srv_store_close(b);
}

/* A session ends when all its streams have ended: its device stream's
 * session_end leaves it running while scope and system still arrive; a
 * session whose session line names only the system stream ends with that
 * stream. */
static void test_end_all_streams(void)
{
    srv_store *s = open_tmp("gaps_end");
    static const char *const sys_only = "dddddddd-2222-4000-8000-000000000004";

    REQUIRE(s);
    batch_reset();
    for (int st = 0; st < 3; st++)
        add("{\"v\":1,\"sid\":\"" SIDE "\",\"st\":\"%s\",\"seq\":0,"
            "\"ts\":100,\"type\":\"session\",\"app\":\"t\",\"host\":\"h\"}",
            st_name[st]);
    add_seq(SIDE, SRV_ST_DEVICE, 1);
    add("{\"v\":1,\"sid\":\"" SIDE "\",\"st\":\"device\",\"seq\":2,"
        "\"ts\":2000,\"type\":\"session_end\",\"reason\":\"shutdown\","
        "\"lines\":3}");
    CHECK_EQ_U64(ingest(s), 5);
    CHECK_JSTR(session(s, SIDE), "state", "running");
    CHECK_JABSENT(out, "end_reason");
    CHECK_JLEN(out, "streams_ended", 1);
    CHECK_JSTR(out, "streams_ended.0", "device");
    batch_reset();
    add_seq(SIDE, SRV_ST_SCOPE, 1);
    add("{\"v\":1,\"sid\":\"" SIDE "\",\"st\":\"scope\",\"seq\":2,"
        "\"ts\":2000,\"type\":\"session_end\",\"reason\":\"shutdown\","
        "\"lines\":3}");
    add_seq(SIDE, SRV_ST_SYSTEM, 1);
    CHECK_EQ_U64(ingest(s), 3);
    CHECK_JSTR(session(s, SIDE), "state", "running");
    CHECK_JLEN(out, "streams_ended", 2);
    CHECK_JSTR(out, "streams_ended.0", "device");
    CHECK_JSTR(out, "streams_ended.1", "scope");
    batch_reset();
    add("{\"v\":1,\"sid\":\"" SIDE "\",\"st\":\"system\",\"seq\":2,"
        "\"ts\":2000,\"type\":\"session_end\",\"reason\":\"signal\","
        "\"lines\":3}");
    CHECK_EQ_U64(ingest(s), 1);
    CHECK_JSTR(session(s, SIDE), "state", "ended");
    CHECK_JSTR(out, "end_reason", "signal");
    CHECK_JLEN(out, "streams_ended", 3);
    CHECK_JSTR(out, "streams_ended.2", "system");
    CHECK_JSTR(q(s, srv_store_q_sessions, NULL), "items.0.state", "ended");
    /* a session of one stream says so on its session line */
    batch_reset();
    add("{\"v\":1,\"sid\":\"%s\",\"st\":\"system\",\"seq\":0,\"ts\":100,"
        "\"type\":\"session\",\"app\":\"t\",\"host\":\"h\","
        "\"streams\":[\"system\"]}",
        sys_only);
    add("{\"v\":1,\"sid\":\"%s\",\"st\":\"system\",\"seq\":1,\"ts\":200,"
        "\"type\":\"session_end\",\"reason\":\"shutdown\",\"lines\":2}",
        sys_only);
    CHECK_EQ_U64(ingest(s), 2);
    CHECK_JSTR(session(s, sys_only), "state", "ended");
    srv_store_close(s);
}

/* Staleness counts only the time the server could hear: a session silent
 * for an hour, of which the server was down all but a minute, is not
 * stale under --stale-after 5 min; it is once the server has heard for
 * 5 minutes. */
static void test_stale_heard_since(void)
{
    srv_store *s = open_tmp("gaps_stale");
    char path[512], err[256];
    uint64_t now = (uint64_t)time(NULL);
    sdb *db;

    REQUIRE(s);
    CHECK_EQ_U64(put_range(s, SIDE, SRV_ST_DEVICE, 0, 9), 10);
    tmp_url("gaps_stale", path);
    REQUIRE(sdb_open(path, 0, &db, err, sizeof(err)) == 0);
    {
        char sql[128];
        snprintf(sql, sizeof(sql), "UPDATE sessions SET last_seen=%llu",
                 (unsigned long long)(now - 3600));
        CHECK(sdb_exec(db, sql) == 0);
    }
    sdb_close(db);
    CHECK(srv_store_mark_stale(s, 300, now - 60) == GPUFL_OK);
    CHECK_JSTR(session(s, SIDE), "state", "running");
    CHECK(srv_store_mark_stale(s, 300, now - 301) == GPUFL_OK);
    CHECK_JSTR(session(s, SIDE), "state", "stale");
    /* a new line makes it running again */
    CHECK_EQ_U64(put_range(s, SIDE, SRV_ST_DEVICE, 10, 10), 1);
    CHECK_JSTR(session(s, SIDE), "state", "running");
    srv_store_close(s);
}

/* Kernels whose durations add up past 2^63-1 in one timeline bucket,
 * one name and one scope, in one batch and across two: every line is
 * stored, and the sums saturate at 2^63-1 on both databases (PostgreSQL
 * used to fail the batch with "bigint out of range", SQLite to store a
 * wrapped or REAL sum). */
static void test_rollup_saturates(void)
{
    srv_store *s = open_tmp("gaps_sat");
    const char *p;

    REQUIRE(s);
    batch_reset();
    add("{\"v\":1,\"sid\":\"" SIDE "\",\"st\":\"device\",\"seq\":0,"
        "\"ts\":100,\"type\":\"session\",\"app\":\"t\",\"host\":\"h\"}");
    add("{\"v\":1,\"sid\":\"" SIDE "\",\"st\":\"device\",\"seq\":1,"
        "\"ts\":101,\"type\":\"dict\",\"id\":1,\"kind\":\"name\","
        "\"name\":\"long\"}");
    for (int i = 0; i < 2; i++)
        add("{\"v\":1,\"sid\":\"" SIDE "\",\"st\":\"device\",\"seq\":%d,"
            "\"ts\":%d,\"type\":\"kernel\",\"name\":1,\"scope\":7,"
            "\"dur\":4700000000000000000}",
            2 + i, 1000 + i);
    CHECK_EQ_U64(ingest(s), 4);
    batch_reset();
    add("{\"v\":1,\"sid\":\"" SIDE "\",\"st\":\"device\",\"seq\":4,"
        "\"ts\":1002,\"type\":\"kernel\",\"name\":1,\"scope\":7,"
        "\"dur\":4700000000000000000}");
    CHECK_EQ_U64(ingest(s), 1);
    p = q(s, srv_store_q_kernel_agg, SIDE);
    CHECK_JSTR(p, "items.0.name", "long");
    CHECK_JI64(p, "items.0.count", 3);
    CHECK_JDEC(p, "items.0.total_ns", INT64_MAX);
    {
        srv_q qq;
        jw w;
        memset(&qq, 0, sizeof(qq));
        qq.sid = SIDE;
        qq.width = 10;
        jw_init(&w, out, sizeof(out));
        CHECK(srv_store_q_timeline(s, &qq, &w) == GPUFL_OK);
        jw_put(&w, "", 1);
        /* one lane; the three kernels, too long for the rollup's spread
         * (their time saturated its first bucket), spread exactly over
         * every column they occupy (klong): a middle column holds 3
         * whole column widths, no sum wraps */
        uint64_t bw = (1002 + 4700000000000000000ull + 1 - 100 + 9) / 10;
        char col[32];
        CHECK_JLEN(out, "lanes", 1);
        CHECK_JLEN(out, "lanes.0.buckets", 10);
        CHECK_JI64(out, "lanes.0.buckets.0.0", 0);
        CHECK_JI64(out, "lanes.0.buckets.0.1", 3);
        CHECK_JI64(out, "lanes.0.buckets.0.3", 1);
        for (int c = 1; c < 9; c++) {
            snprintf(col, sizeof(col), "lanes.0.buckets.%d.2", c);
            CHECK_JDEC(out, col, (int64_t)(3 * bw));
        }
    }
    CHECK_JI64(session(s, SIDE), "counts.kernels", 3);
    srv_store_close(s);
}

int main(void)
{
    RUN(test_gaps_exact);
    RUN(test_gaps_two_writers);
    RUN(test_end_all_streams);
    RUN(test_stale_heard_since);
    RUN(test_rollup_saturates);
    TEST_DONE();
}
