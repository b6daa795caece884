/*
 * store_sql_capipack.h - the API calls' summary packed on PostgreSQL
 * (store_sql_capipack.c, schema 31): a range of SQ_TLP_N buckets of one
 * (session, level, thread) of capi in one capipack row.  The bucket
 * format is the timeline pack's (store_sql_tlpack.h, tlpack_codec.c:
 * b, n and busy, the thread as the lane) with its top kernel 0 - two
 * bytes a bucket, and the codec and its fuzz target are one.
 */
#ifndef GPUFL_STORE_SQL_CAPIPACK_H
#define GPUFL_STORE_SQL_CAPIPACK_H

#include "store_sql_tlpack.h"

/* The levels packed: level 0 is computed (blocks on PostgreSQL) or read
 * by SQLite; every level above, 4 and 5 too (a few rows a session, but a
 * pack is one row where they were one per thread and bucket). */
#define SQ_CAPP_LVL_MIN 1
#define SQ_CAPP_LVL_MAX 5

#endif
