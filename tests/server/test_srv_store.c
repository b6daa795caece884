/*
 * test_srv_store.c - the SQLite store through its interface: idempotent
 * ingest, rollups against the raw rows, keys, keep and retention, and a
 * reopen that finds the schema current.
 */
#include "ingest.h"
#include "store.h"
#include "test.h"

#include <gpufl/gpufl.h>

#include <unistd.h>

#define SIDA "aaaaaaaa-0000-4000-8000-000000000001"
#define SIDB "bbbbbbbb-0000-4000-8000-000000000002"

static jsonl_tok tok[INGEST_MAX_TOKENS];
static char lines[400][512];
static char arena[1 << 20];
static char out[1 << 20];

/* A small session: names, a launch, n kernels of durations 1000..n*1000,
 * scopes and a session_end. */
static size_t build(const char *sid, int n, srv_ev *ev)
{
    int k = 0, seq = 0;
    ingest_arena a = { arena, 0, sizeof(arena) };
    jsonl_doc d;
    char why[INGEST_REASON_MAX];

#define L(...) snprintf(lines[k++], sizeof(lines[0]), __VA_ARGS__)
    L("{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%d,\"ts\":100,"
      "\"type\":\"session\",\"app\":\"t\",\"host\":\"h\",\"start\":100}",
      sid, seq++);
    L("{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%d,\"ts\":101,"
      "\"type\":\"dict\",\"id\":1,\"kind\":\"name\",\"name\":\"k1\"}",
      sid, seq++);
    L("{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%d,\"ts\":102,"
      "\"type\":\"dict\",\"id\":2,\"kind\":\"launch\",\"name\":1,"
      "\"block\":[128],\"regs\":32,\"occ\":0.5}",
      sid, seq++);
    for (int i = 0; i < n; i++)
        L("{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%d,\"ts\":%d,"
          "\"type\":\"kernel\",\"cfg\":2,\"grid\":[1],\"dur\":%d,"
          "\"stream\":%d}",
          sid, seq++, 1000000 + i * 5000, (i + 1) * 1000, i % 2);
    L("{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%d,\"ts\":9000000,"
      "\"type\":\"session_end\",\"reason\":\"shutdown\"}",
      sid, seq++);
#undef L
    jsonl_doc_init(&d, tok, INGEST_MAX_TOKENS);
    for (int i = 0; i < k; i++) {
        int rc = ingest_line_parse(&d, SRV_ST_DEVICE, lines[i],
                                   strlen(lines[i]), &a, &ev[i], why);
        if (rc)
            fprintf(stderr, "line %d: %s\n", i, why);
    }
    return (size_t)k;
}

static srv_store *open_tmp(const char *name)
{
    char path[512];
    const char *t = getenv("GPUFL_TEST_TMP");
    srv_store *s = NULL;
    char err[256];

    snprintf(path, sizeof(path), "%s/%s.db", t ? t : "/tmp", name);
    unlink(path);
    srv_store_open(path, 2, &s, err, sizeof(err));
    return s;
}

static const char *q(srv_store *s, int (*fn)(srv_store *, const srv_q *, jw *),
                     const char *sid)
{
    srv_q qq;
    jw w;
    memset(&qq, 0, sizeof(qq));
    qq.sid = sid;
    qq.limit = 1000;
    jw_init(&w, out, sizeof(out));
    if (fn(s, &qq, &w))
        return "";
    jw_put(&w, "", 1);
    return out;
}

static void test_ingest_dedup_rollups(void)
{
    static srv_ev ev[400];
    srv_ingest_res r;
    srv_store *s = open_tmp("store_dedup");
    size_t n = build(SIDA, 100, ev);

    REQUIRE(s);
    REQUIRE(s->ops->ingest(s, ev, n, &r) == GPUFL_OK);
    CHECK_EQ_U64(r.accepted, n);
    CHECK_EQ_U64(r.duplicate, 0);
    REQUIRE(s->ops->ingest(s, ev, n, &r) == GPUFL_OK);
    CHECK_EQ_U64(r.accepted, 0);
    CHECK_EQ_U64(r.duplicate, n);
    /* halves in other batches are duplicates too */
    REQUIRE(s->ops->ingest(s, ev + 10, 20, &r) == GPUFL_OK);
    CHECK_EQ_U64(r.duplicate, 20);
    /* count 100, total = 1000 * 5050, min 1000, max 100000 */
    CHECK(strstr(q(s, s->ops->q_kernel_agg, SIDA),
                 "\"count\":100,\"total_ns\":5050000,\"avg_ns\":50500,"
                 "\"min_ns\":1000") != NULL);
    CHECK(strstr(out, "\"max_ns\":100000") != NULL);
    CHECK(strstr(out, "\"occ_avg\":0.5,\"regs\":32") != NULL);
    CHECK(strstr(q(s, s->ops->q_session, SIDA), "\"state\":\"ended\"") != NULL);
    CHECK(strstr(out, "\"kernels\":100") != NULL);
    CHECK(
        strstr(q(s, s->ops->q_kernels, "cccccccc-0000-4000-8000-000000000003"),
               "") != NULL);
    {
        srv_q qq;
        jw w;
        memset(&qq, 0, sizeof(qq));
        qq.sid = "cccccccc-0000-4000-8000-000000000003";
        jw_init(&w, out, sizeof(out));
        CHECK(s->ops->q_kernels(s, &qq, &w) == GPUFL_ENOTFOUND);
        qq.sid = SIDA;
        qq.cursor = "zz";
        CHECK(s->ops->q_kernels(s, &qq, &w) == GPUFL_EINVAL);
    }
    s->ops->close(s);
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
    REQUIRE(s->ops->key_add(s, "k", "read", "gfk_12345678", "abcd", &id) ==
            GPUFL_OK);
    REQUIRE(s->ops->key_lookup(s, "abcd", role, sizeof(role)) == GPUFL_OK);
    CHECK_STR(role, "read");
    REQUIRE(s->ops->key_list(s, keys, 8, &n) == GPUFL_OK);
    CHECK(n == 1 && keys[0].id == id && keys[0].last_used > 0);
    CHECK(s->ops->key_revoke(s, id) == GPUFL_OK);
    CHECK(s->ops->key_revoke(s, id) == GPUFL_ENOTFOUND);
    REQUIRE(s->ops->key_lookup(s, "abcd", role, sizeof(role)) == GPUFL_OK);
    CHECK_STR(role, "");

    n = build(SIDA, 10, ev);
    REQUIRE(s->ops->ingest(s, ev, n, &r) == GPUFL_OK);
    n = build(SIDB, 10, ev);
    REQUIRE(s->ops->ingest(s, ev, n, &r) == GPUFL_OK);
    CHECK(s->ops->set_keep(s, SIDA, 1) == GPUFL_OK);
    CHECK(s->ops->set_keep(s, "dddddddd-0000-4000-8000-000000000000", 1) ==
          GPUFL_ENOTFOUND);
    REQUIRE(s->ops->prune(s, &pol, &pruned) == GPUFL_OK);
    CHECK_EQ_U64(pruned, 1);
    CHECK(strstr(q(s, s->ops->q_session, SIDA), "\"keep\":true") != NULL);
    CHECK_STR(q(s, s->ops->q_session, SIDB), "");
    /* the pruned session can come back whole */
    REQUIRE(s->ops->ingest(s, ev, n, &r) == GPUFL_OK);
    CHECK_EQ_U64(r.accepted, n);
    CHECK(s->ops->mark_stale(s, 0) == GPUFL_OK);
    CHECK(s->ops->db_bytes(s) > 0);
    CHECK(s->ops->ping(s) == GPUFL_OK);
    s->ops->close(s);
}

static void test_reopen(void)
{
    char path[512], err[256];
    const char *t = getenv("GPUFL_TEST_TMP");
    srv_store *s = NULL;

    snprintf(path, sizeof(path), "%s/store_keys.db", t ? t : "/tmp");
    REQUIRE(srv_store_open(path, 1, &s, err, sizeof(err)) == GPUFL_OK);
    CHECK(strstr(q(s, s->ops->q_session, SIDA), "\"keep\":true") != NULL);
    s->ops->close(s);
    CHECK(srv_store_open("postgres://x/y", 1, &s, err, sizeof(err)) ==
          GPUFL_EUNAVAIL);
    CHECK(srv_store_open("/nonexistent/dir/x.db", 1, &s, err, sizeof(err)) !=
          GPUFL_OK);
}

int main(void)
{
    RUN(test_ingest_dedup_rollups);
    RUN(test_keys_keep_retention);
    RUN(test_reopen);
    TEST_DONE();
}
