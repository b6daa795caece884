/*
 * store_sql_kbcompact.h - what the compactor's two files share
 * (store_sql_kblocks_compact.c: rows into blocks, naming, the pass;
 * store_sql_kblocks_merge.c: merging small blocks).  Internal to the
 * server's SQL store.
 */
#ifndef GPUFL_STORE_SQL_KBCOMPACT_H
#define GPUFL_STORE_SQL_KBCOMPACT_H

#include <stdint.h>

struct srv_store;

/* (session, stream) runs one compaction pass looks at, at most */
#define KB_GROUPS_MAX 64

typedef struct kb_group {
    int64_t sess, stream, n;
    int ended;
    int64_t lo; /* merges: the first small block's seq_lo */
} kb_group;

/* Merges and namings share a transaction up to this many kernels: each
 * merged or named block writes ~200 kbnames rows into kbnames_sn (until
 * migration 36: kbnames_dur and kbnames_dmin), one at each of its names'
 * places, so a transaction per
 * block rewrote nearly every leaf page of both indexes into the WAL: the
 * compactor's thread wrote 890 MB per 2M kernels (bench_scale) and took
 * ~40 % of the server's CPU (docs/server.md "Where ingest's CPU goes").
 * A transaction of several blocks writes those pages once.  The cap
 * bounds how long ingest waits on the writer's lock (~0.1-0.3 s).  The
 * indexes grow with the session while a transaction's ~200 x blocks
 * inserts do not, so their pages dirtied per kernel grow with it: at
 * 65 536 kernels a 50M-kernel session wrote 159 -> 621 bytes a kernel
 * (WAL and its checkpoints) from its first tenth to its last, most of
 * the growth of the server's CPU per kernel (docs/server.md "100M a
 * sixth time"); four times as many kernels a transaction share more
 * leaves. */
#define KB_TX_KERNELS 262144

/* GPUFL_SERVER_KB_RUN (tests only): kernels per block, 1..SQ_KB_RUN. */
int64_t sq_kbc_run(void);
/* GPUFL_SERVER_KB_PAUSE_MS (tests only): a pause inside a block's
 * transaction, so that a test's kill -9 lands inside compaction. */
void sq_kbc_test_pause(void);
/* Every run of small blocks merged (store_sql_kblocks_merge.c); counts
 * blocks and kernels. */
int sq_kb_merge_pass(struct srv_store *s, uint64_t *blocks, uint64_t *kernels);

#endif
