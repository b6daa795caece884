/*
 * store_sql_kblocks_int.h - one scan of a session's kernel blocks, shared
 * by the block reads (store_sql_kblocks_read.c: the scan's set-up, the
 * reading and offering of one block, the scans by duration and without a
 * heap) and the scan by start time (store_sql_kblocks_scan.c).
 */
#ifndef GPUFL_SERVER_STORE_SQL_KBLOCKS_INT_H
#define GPUFL_SERVER_STORE_SQL_KBLOCKS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "store_sql_kblocks_read.h"

/* One scan of blocks (sq_kb_scan_sel): what it offers and to whom.  With
 * sel, the events are first decoded in the columns sel only, offered to
 * t, and only those that placed are then decoded in the columns cols
 * (kblock_decode_rows): row[slot] is the position in the block in hand of
 * the event t->ev[slot] holds (KB_ROW_NONE: none of this block), slots[]
 * the slots this block took (nslots), pairs[] their (row, slot) sorted. */
typedef struct kb_scan {
    srv_store *s;
    struct kb_rd *r;
    int64_t sess, t_lo, t_hi;
    unsigned cols, sel;
    kb_keep_fn keep;
    void *arg;
    kb_top *t;
    uint32_t *row, *slots, *rows;
    uint64_t *pairs;
    size_t nslots;
} kb_scan;
#define KB_ROW_NONE UINT32_MAX

/* Offers the events of the block whose bytes are st's column col, the
 * block (x->sess, stream, lo); st is not stepped meanwhile. */
int sq_kb_block_offer(kb_scan *x, sdb_stmt *st, int col, int64_t stream,
                      int64_t lo);
/* The block (x->sess, stream, lo) read on db and offered. */
int sq_kb_block_load(kb_scan *x, sdb *db, int64_t stream, int64_t lo);
/* The scan with a heap by start time (x->t, key KB_KEY_TS): the blocks
 * read from the kblocks_t index in the order of their bound, in chunks,
 * until none further can place. */
int sq_kb_scan_ts(kb_scan *x, sdb *db);
/* A name filter of more ids than this reads the block index only (one
 * ordered kbnames stream per id would cost more than it saves). */
#define KB_NAME_IDS_MAX 32
/* A sort by duration (either way) filtered by at most KB_NAME_IDS_MAX
 * names (x->t->ids): those names' blocks in order, loaded until the
 * first that cannot place (store_sql_kblocks_names.c). */
int sq_kb_scan_name(kb_scan *x, sdb *db);

#endif
