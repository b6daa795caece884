/*
 * store_test.h - what the store's unit tests share: a fresh store on
 * SQLite, or on PostgreSQL when GPUFL_TEST_PG_URI_FILE names a throwaway
 * cluster's URI (tests/server/pg_cluster.sh), then a fresh database there;
 * the same store opened again (a second server on one database); and a
 * query's JSON answer (check it with tests/jpath.h).
 */
#ifndef GPUFL_TESTS_SERVER_STORE_TEST_H
#define GPUFL_TESTS_SERVER_STORE_TEST_H

#include <gpufl/gpufl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
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

#endif
