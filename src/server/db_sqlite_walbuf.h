/*
 * db_sqlite_walbuf.h - an SQLite VFS that writes a transaction's WAL
 * frames in a few pwrites instead of two a frame (db_sqlite_walbuf.c).
 */
#ifndef GPUFL_SERVER_DB_SQLITE_WALBUF_H
#define GPUFL_SERVER_DB_SQLITE_WALBUF_H

#include <stdint.h>

/* The VFS's name, for sqlite3_open_v2. */
#define SDB_WALBUF_VFS "gpufl-walbuf"

/* Most bytes of frames one WAL file holds back, allocated at its first
 * write (a commit of the ingest writes ~0.6 MiB, a compactor's
 * transaction more: past the cap the run held goes out and a new one
 * starts). */
#define SDB_WALBUF_CAP (2u << 20)

/* Registers the VFS over SQLite's default one (not as the default);
 * SQLITE_OK, or SQLite's error (then connections use the default VFS).
 * Call once, before the first open. */
int sdb_walbuf_register(void);

/* Since the start: xWrite calls on WAL files, and the writes handed to
 * the default VFS for them (tests: that frames were coalesced). */
void sdb_walbuf_stats(uint64_t *writes, uint64_t *flushes);

#endif
