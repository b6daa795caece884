/*
 * store_test.h - what the store's unit tests share: a fresh store on
 * SQLite, or on PostgreSQL when GPUFL_TEST_PG_URI_FILE names a throwaway
 * cluster's URI (tests/server/pg_cluster.sh), then a fresh database there;
 * the same store opened again (a second server on one database); a
 * query's JSON answer (check it with tests/jpath.h); and test lines
 * parsed into the events srv_store_ingest takes (st_parse, st_session).
 */
#ifndef GPUFL_TESTS_SERVER_STORE_TEST_H
#define GPUFL_TESTS_SERVER_STORE_TEST_H

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "ingest.h"
#include "store.h"

/* The last answer of q(), and what the query returned. */
static char out[1 << 20];
static int q_rc;

/* The PostgreSQL cluster's URI (no database), or "" for SQLite. */
static const char *pg_uri(void)
{
    static char uri[512];
    static int done;
    const char *uf = getenv("GPUFL_TEST_PG_URI_FILE");
    FILE *f;

    if (!done && uf && uf[0] && (f = fopen(uf, "r"))) {
        if (!fgets(uri, sizeof(uri), f))
            uri[0] = '\0';
        uri[strcspn(uri, "\r\n")] = '\0';
        fclose(f);
    }
    done = 1;
    return uri;
}

static srv_store *open_tmp(const char *name)
{
    char path[512];
    const char *t = getenv("GPUFL_TEST_TMP");
    srv_store *s = NULL;
    char err[256];

    if (pg_uri()[0]) {
        char sql[256];
        sdb *db;
        snprintf(path, sizeof(path), "%s/postgres", pg_uri());
        if (sdb_open(path, 0, &db, err, sizeof(err)))
            return NULL;
        snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS gpufl_%s", name);
        sdb_exec(db, sql);
        snprintf(sql, sizeof(sql), "CREATE DATABASE gpufl_%s", name);
        sdb_exec(db, sql);
        sdb_close(db);
        snprintf(path, sizeof(path), "%s/gpufl_%s", pg_uri(), name);
        srv_store_open(path, 2, &s, err, sizeof(err));
        return s;
    }
    snprintf(path, sizeof(path), "%s/%s.db", t ? t : "/tmp", name);
    unlink(path);
    srv_store_open(path, 2, &s, err, sizeof(err));
    return s;
}

/* The URL of the database open_tmp(name) made, into path (512 bytes). */
static void tmp_url(const char *name, char *path)
{
    const char *t = getenv("GPUFL_TEST_TMP");

    if (pg_uri()[0])
        snprintf(path, 512, "%s/gpufl_%s", pg_uri(), name);
    else
        snprintf(path, 512, "%s/%s.db", t ? t : "/tmp", name);
}

/* The store open_tmp(name) made, opened again as it is (unused: a test
 * may not need it). */
__attribute__((unused)) static srv_store *open_tmp_again(const char *name)
{
    char path[512], err[256];
    srv_store *s = NULL;

    tmp_url(name, path);
    srv_store_open(path, 2, &s, err, sizeof(err));
    return s;
}

__attribute__((unused)) static const char *
q(srv_store *s, int (*fn)(srv_store *, const srv_q *, jw *), const char *sid)
{
    srv_q qq;
    jw w;
    memset(&qq, 0, sizeof(qq));
    qq.sid = sid;
    qq.limit = 1000;
    jw_init(&w, out, sizeof(out));
    if ((q_rc = fn(s, &qq, &w)) != 0)
        return "";
    jw_put(&w, "", 1);
    return out;
}

/* Lines a test made (512 bytes each), parsed as stream st into ev, their
 * strings in arena (cap bytes); returns k.  A line that does not parse is
 * printed: the test's counts then show it. */
__attribute__((unused)) static jsonl_tok st_tok[INGEST_MAX_TOKENS];

__attribute__((unused)) static size_t
st_parse(int st, char (*lines)[512], int k, char *arena, size_t cap, srv_ev *ev)
{
    ingest_arena a = { arena, 0, cap };
    jsonl_doc d;
    char why[INGEST_REASON_MAX];

    jsonl_doc_init(&d, st_tok, INGEST_MAX_TOKENS);
    for (int i = 0; i < k; i++)
        if (ingest_line_parse(&d, st, lines[i], strlen(lines[i]), &a, &ev[i],
                              why))
            fprintf(stderr, "line %d: %s\n", i, why);
    return (size_t)k;
}

/* A small session of one stream (its session line says so): a name, a
 * launch, n kernels (ts 1000000 + 5000 i, durations 1000..n*1000) on
 * stream `stream`, or on streams 0 and 1 in turn when stream < 0, and a
 * session_end when end is set.  lines holds n + 4. */
__attribute__((unused)) static size_t
st_session(const char *sid, int n, int stream, int end, char (*lines)[512],
           char *arena, size_t cap, srv_ev *ev)
{
    int k = 0, seq = 0;

#define L(...) snprintf(lines[k++], 512, __VA_ARGS__)
    L("{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%d,\"ts\":100,"
      "\"type\":\"session\",\"app\":\"t\",\"host\":\"h\",\"start\":100,"
      "\"streams\":[\"device\"]}",
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
          sid, seq++, 1000000 + i * 5000, (i + 1) * 1000,
          stream < 0 ? i % 2 : stream);
    if (end)
        L("{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%d,"
          "\"ts\":9000000,\"type\":\"session_end\",\"reason\":\"shutdown\"}",
          sid, seq++);
#undef L
    return st_parse(SRV_ST_DEVICE, lines, k, arena, cap, ev);
}

#endif
