/*
 * store_sql_capipack.h - the API calls' summary packed: on PostgreSQL
 * by the maintenance pass (store_sql_capipack.c, schema 31), on SQLite
 * level 0 by ingest (store_sql_capi.c): a range of SQ_TLP_N buckets (64
 * on SQLite) of one (session, level, thread) of capi in one capipack
 * row.  The bucket
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
/* The level SQLite's ingest writes packed (store_sql_capi.c; ranges of
 * 2^SQ_TL1_SHIFT_LITE buckets): its other levels stay rows, PostgreSQL's
 * level 0 is not written with blocks (store_sql_q_capi0.c) */
#define SQ_CAPP_LITE_LVL 0

#endif
