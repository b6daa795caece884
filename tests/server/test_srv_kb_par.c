/*
 * test_srv_kb_par.c - an ingest batch's kernel blocks encoded on two
 * threads (store_sql_kblocks_par.c, ingest_par's helper) are the very
 * blocks one thread writes: the same kblocks rows (stream, seq range,
 * count, bytes) and kept rows (kxrow), for batches of more blocks than a
 * wave holds (70 streams) and of a stream longer than a block, again
 * after a replay of a batch (its doubts settled).  The helper must have
 * encoded some of them, or the split was not tested.
 */
#include "test.h"

#include "ingest_par.h"
#include "store_sql_int.h"
#include "store_test.h"

#define SIDP "eeeeeeee-0000-4000-8000-00000000000a"
#define NSTREAM 70
#define PER 40    /* kernels on each of the short streams */
#define LONG 5000 /* ... on stream 0: two blocks */
#define MAXL (1 + NSTREAM * PER + LONG)

static char lines[MAXL][512];
static char arena[8 << 20];
static srv_ev ev[MAXL];

/* Batch b: the session line, then kernels of seqs from b's on, stream 0
 * LONG of them, the others PER each, interleaved as a GPU's would be;
 * names and durations scattered. */
static size_t batch(int b)
{
    int k = 0, seq = 1 + b * (MAXL - 1);

    snprintf(lines[k++], sizeof(lines[0]),
             "{\"v\":1,\"sid\":\"" SIDP "\",\"st\":\"device\",\"seq\":0,"
             "\"ts\":100,\"type\":\"session\",\"app\":\"t\","
             "\"host\":\"h\"}");
    for (int i = 0; i < MAXL - 1; i++, seq++) {
        int stream = i < 2 * LONG && i % 2 == 0 ? 0 : 1 + i % NSTREAM;
        snprintf(lines[k++], sizeof(lines[0]),
                 "{\"v\":1,\"sid\":\"" SIDP "\",\"st\":\"device\","
                 "\"seq\":%d,\"ts\":%d,\"type\":\"kernel\",\"name\":%d,"
                 "\"dur\":%d,\"stream\":%d}",
                 seq, 1000 + 10 * seq, seq % 37, 100 + (seq * 7919) % 5000,
                 stream);
    }
    return st_parse(SRV_ST_DEVICE, lines, k, arena, sizeof(arena), ev);
}

/* Every row of sql (columns as text, blobs as hex) of database name, as
 * one string into o (cap bytes); its length. */
static size_t dump(const char *name, const char *sql, char *o, size_t cap)
{
    char url[512], err[256];
    sdb *db = NULL;
    sdb_stmt *st = NULL;
    size_t n = 0;

    tmp_url(name, url);
    if (sdb_open(url, 0, &db, err, sizeof(err)) || sdb_prepare(db, sql, &st)) {
        CHECK(!"database opens, query prepares");
        sdb_close(db);
        return 0;
    }
    while (sdb_step(st) == SDB_ROW && n + 1024 < cap) {
        const char *t = sdb_col_text(st, 0);
        n += (size_t)snprintf(o + n, cap - n, "%s\n", t ? t : "NULL");
    }
    sdb_finalize(st);
    sdb_close(db);
    return n;
}

static char d1[64 << 20], d2[64 << 20];

static void same(const char *sql)
{
    size_t n1 = dump("kb_par1", sql, d1, sizeof(d1));
    size_t n2 = dump("kb_par2", sql, d2, sizeof(d2));

    CHECK(n1 > 0);
    CHECK_EQ_U64(n1, n2);
    CHECK(n1 == n2 && memcmp(d1, d2, n1) == 0);
}

static void test_two_threads_same_blocks(void)
{
    srv_store *one, *two;
    ingest_par *p = NULL;
    srv_ingest_res r;
    int b = 0;

    if (pg_uri()[0]) {
        fprintf(stderr, "  SQLite only (the split is the same code)\n");
        return;
    }
    one = open_tmp("kb_par1");
    two = open_tmp("kb_par2");
    REQUIRE(one && two);
    REQUIRE(ingest_par_new(&p) == GPUFL_OK);
    srv_store_set_kernel_store(one, 1);
    srv_store_set_kernel_store(two, 1);
    srv_store_set_par(two, p);
    /* until the helper has encoded some blocks (it may start late on a
     * busy machine), at least 3 batches */
    for (; b < 3 || (ingest_par_helped(p) == 0 && b < 40); b++) {
        size_t n = batch(b);
        REQUIRE(srv_store_ingest(one, ev, n, &r) == GPUFL_OK);
        REQUIRE(srv_store_ingest(two, ev, n, &r) == GPUFL_OK);
    }
    /* a replay of the first batch: every kernel a doubt, none new */
    {
        size_t n = batch(0);
        REQUIRE(srv_store_ingest(one, ev, n, &r) == GPUFL_OK);
        REQUIRE(srv_store_ingest(two, ev, n, &r) == GPUFL_OK);
    }
    fprintf(stderr, "  %d batches, the helper encoded %lu blocks\n", b,
            ingest_par_helped(p));
    CHECK(ingest_par_helped(p) > 0);
    srv_store_set_par(two, NULL);
    srv_store_close(one);
    srv_store_close(two);
    ingest_par_free(p);
    same("SELECT sess || ' ' || stream || ' ' || seq_lo || ' ' || seq_hi ||"
         " ' ' || n || ' ' || hex(block) FROM kblocks ORDER BY sess, stream,"
         " seq_lo");
    same("SELECT count(*) || ' ' || sum(n) FROM kblocks");
    same("SELECT sess || ' ' || seq || ' ' || dur || ' ' || stream FROM"
         " kxrow ORDER BY sess, seq");
    same("SELECT sess || ' ' || stream || ' ' || seq_lo FROM kbunnamed ORDER"
         " BY 1");
}

int main(void)
{
    RUN(test_two_threads_same_blocks);
    TEST_DONE();
}
