/*
 * cursor.h - the agent's memory of what the sink has acknowledged: one
 * entry per log file, keyed by an identity that survives rename and
 * compression, saved atomically (tmp + fsync + rename + fsync of the
 * folder).
 *
 * Identity.  A file is recognised by a fingerprint of its first fp_len
 * uncompressed bytes (FNV-1a 64; fp_len <= CURSOR_FP_MAX) plus its inode.
 * The fingerprint survives the client's rename (.log -> .log.N) and its
 * compression (.log.N -> .log.N.zst, a new inode); the inode tells a
 * truncated or recycled file from the one we read.  Every gpufl file
 * starts with a "session" line carrying the session id and the stream's
 * next seq, so two files of one stream never share their first line.
 *
 * Format (text, one entry per line, all integers decimal except fp):
 *
 *     gpufl-agent-cursor 1
 *     <fp:16 hex> <fp_len> <dev> <ino> <offset> <flags> <name>
 *     ...
 *     end <entries> <fnv1a64 of every byte before "end", 16 hex>
 *
 * offset is in uncompressed bytes: the end of the last line the sink
 * acknowledged (or that was dead-lettered).  flags: 1 = the file is
 * finished (rotated and read to its end), 2 = archived.  name is the
 * file's last known base name (no '/', no control bytes, the rest of the
 * line).  A file whose checksum or any line does not parse is refused
 * whole: the caller starts over (lines already shipped are sent again and
 * de-duplicated downstream by (sid, st, seq)).
 */
#ifndef GPUFL_AGENT_CURSOR_H
#define GPUFL_AGENT_CURSOR_H

#include <stddef.h>
#include <stdint.h>

#define CURSOR_FP_MAX 1024
#define CURSOR_NAME_MAX 255
/* A cursor file larger than this is refused (about 200k entries). */
#define CURSOR_FILE_MAX (64u << 20)

#define CURSOR_F_DONE 0x1
#define CURSOR_F_ARCHIVED 0x2

typedef struct agent_centry {
    uint64_t fp;
    uint32_t fp_len;
    uint64_t dev, ino;
    uint64_t off;
    uint32_t flags;
    char name[CURSOR_NAME_MAX + 1];
} agent_centry;

/* FNV-1a 64 of p[0, n). */
uint64_t agent_fp(const void *p, size_t n);

/*
 * Parses a cursor file's bytes (borrowed, need not be NUL-terminated).
 * On success returns 0 and *out (caller frees with free()) holding *n
 * entries.  On failure returns GPUFL_EPARSE or GPUFL_ETOOBIG and writes a
 * reason with the line number into err[0, errcap).
 */
int agent_cursor_parse(const char *buf, size_t len, agent_centry **out,
                       size_t *n, char *err, size_t errcap);

/* Formats entries into a malloc'd buffer (*buf, *len; caller frees).
 * Returns 0 or GPUFL_ENOMEM / GPUFL_EINVAL (a name that cannot be
 * stored). */
int agent_cursor_format(const agent_centry *e, size_t n, char **buf,
                        size_t *len);

/*
 * Loads path.  0 with the entries (possibly none when the file does not
 * exist, *missing = 1); GPUFL_EPARSE/ETOOBIG/EIO with a reason in err.
 */
int agent_cursor_load(const char *path, agent_centry **out, size_t *n,
                      int *missing, char *err, size_t errcap);

/* Writes path atomically: path.tmp, fsync, rename, fsync the folder.
 * Returns 0 or GPUFL_EIO (errno set). */
int agent_cursor_save(const char *path, const agent_centry *e, size_t n);

#endif
