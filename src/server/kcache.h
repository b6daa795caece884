/*
 * kcache.h - a bounded cache of objects in one local folder: the server's
 * copies of cold kernel and op blocks read back from S3 (store_sql_kcold.c,
 * docs/server.md "Cold tier").  Files are written atomically (a temporary
 * name, then rename), opened with O_NOFOLLOW, and evicted least recently
 * used first (a hit refreshes the file's mtime) so that the folder's
 * files never hold more than the cap.  Thread-safe.
 */
#ifndef GPUFL_SERVER_KCACHE_H
#define GPUFL_SERVER_KCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"

/* Longest object name (letters, digits, '-' and '_' only). */
#define KCACHE_NAME_MAX 96

typedef struct kcache kcache;

/* The cache in dir (made 0700 if missing; a symbolic link is refused),
 * holding at most max_bytes.  Leftover temporary files are removed.
 * 0, or GPUFL_EIO / GPUFL_EINVAL / GPUFL_ENOMEM with why[why_cap]. */
int kcache_open(kcache **out, const char *dir, uint64_t max_bytes, char *why,
                size_t why_cap);
void kcache_close(kcache *c);

/* Object name into out (emptied first; out's cap bounds it).  0 (a hit,
 * the file's mtime refreshed), or GPUFL_ENOTFOUND (a miss, or a file that
 * is not a regular file or is over the cap: treated as absent). */
int kcache_get(kcache *c, const char *name, gbuf *out);

/* Keeps len bytes at p as object name, evicting the least recently used
 * files first so the total stays within the cap.  Best effort: a cache
 * that cannot write is no error (the caller has the bytes); 0 or
 * GPUFL_EIO / GPUFL_ETOOBIG (over the whole cap). */
int kcache_put(kcache *c, const char *name, const void *p, size_t len);

/* What the cache holds now: bytes and files; evictions since open. */
void kcache_usage(kcache *c, uint64_t *bytes, uint64_t *files,
                  uint64_t *evicted);

#endif
