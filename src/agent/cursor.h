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
 * Format (text, one entry per line, all integers decimal except fp and
 * mark):
 *
 *     gpufl-agent-cursor 2
 *     f <fp:16 hex> <fp_len> <dev> <ino> <offset> <flags> <mark:16 hex>
 *       <mark_len> <name>                          (one line)
 *     ...
 *     k <next_file> <next_seq> <lost_files> <lost_lines> <flags> <key>
 *     ...
 *     end <files> <keys> <fnv1a64 of every byte before "end", 16 hex>
 *
 * "f" lines (all before the "k" lines): offset is in uncompressed bytes,
 * the end of the last line the sink acknowledged (or that was
 * dead-lettered); flags: 1 = the file is finished (rotated, or its stream's
 * session_end shipped, and read to its end), 2 = archived; mark is FNV-1a
 * 64 of the mark_len (<= CURSOR_MARK_MAX, <= offset) bytes just before
 * offset, checked before resuming a plain file (an offset marker: the same
 * head with other bytes there is a rewritten file); name is the file's last
 * known base name (no '/', no control bytes, the rest of the line).
 *
 * "k" lines, one per stream of a session (<prefix>.<stream>): what the
 * sink acknowledged of the stream as a whole, so files deleted while the
 * agent was away are noticed: next_file is the index ("file" of the
 * session line) of the first file not yet shipped, next_seq the seq after
 * the last acknowledged line, lost_* what was already reported lost;
 * flags: 1 = next_file known, 2 = next_seq known.
 *
 * Version 1 (no "f"/"k" prefixes, no mark, "end <entries> <sum>") is still
 * read; version 2 is written.  A file whose checksum or any line does not
 * parse is refused whole: the caller starts over (lines already shipped
 * are sent again and de-duplicated downstream by (sid, st, seq)).
 */
#ifndef GPUFL_AGENT_CURSOR_H
#define GPUFL_AGENT_CURSOR_H

#include <stddef.h>
#include <stdint.h>

#define CURSOR_FP_MAX 1024
#define CURSOR_NAME_MAX 255
/* One formatted entry: prefix, two hex fields, up to 7 numbers, the name. */
#define CURSOR_LINE_MAX (2 + 2 * 17 + 7 * 21 + CURSOR_NAME_MAX + 8)
/* A cursor file larger than this is refused (about 200k entries). */
#define CURSOR_FILE_MAX (64u << 20)

/* Bytes before the offset covered by an entry's mark. */
#define CURSOR_MARK_MAX 64

#define CURSOR_F_DONE 0x1
#define CURSOR_F_ARCHIVED 0x2

#define CURSOR_K_FILE 0x1
#define CURSOR_K_SEQ 0x2

typedef struct agent_centry {
    uint64_t fp;
    uint32_t fp_len;
    uint64_t dev, ino;
    uint64_t off;
    uint32_t flags;
    uint64_t mark;
    uint32_t mark_len;
    char name[CURSOR_NAME_MAX + 1];
} agent_centry;

typedef struct agent_ckey {
    uint64_t next_file, next_seq;
    uint64_t lost_files, lost_lines;
    uint32_t flags;
    char name[CURSOR_NAME_MAX + 1];
} agent_ckey;

/* A parsed cursor: file entries and stream (key) entries, both malloc'd. */
typedef struct agent_cursor {
    agent_centry *e;
    size_t n;
    agent_ckey *k;
    size_t nk;
} agent_cursor;

/* FNV-1a 64 of p[0, n). */
uint64_t agent_fp(const void *p, size_t n);

/* Frees what a parse or load put into cur (accepts an empty one). */
void agent_cursor_release(agent_cursor *cur);

/*
 * Parses a cursor file's bytes (borrowed, need not be NUL-terminated),
 * version 1 or 2.  On success returns 0 and fills *cur (release with
 * agent_cursor_release()).  On failure returns GPUFL_EPARSE,
 * GPUFL_ETOOBIG or GPUFL_ENOMEM, leaves *cur empty and writes a reason with
 * the line number into err[0, errcap).
 */
int agent_cursor_parse(const char *buf, size_t len, agent_cursor *cur,
                       char *err, size_t errcap);

/* Formats cur (borrowed) as version 2 into a malloc'd buffer (*buf, *len;
 * caller frees).  Returns 0 or GPUFL_ENOMEM / GPUFL_EINVAL (a name that
 * cannot be stored) / GPUFL_ETOOBIG. */
int agent_cursor_format(const agent_cursor *cur, char **buf, size_t *len);

/* One formatted "f" or "k" line with its '\n' into out (cap bytes):
 * its length, or -1 (a name that cannot be stored, or no room).  Lines
 * from these, back to back ("f" lines first), make the body that
 * agent_cursor_save_body() completes. */
int agent_cursor_entry_line(const agent_centry *e, char *out, size_t cap);
int agent_cursor_key_line(const agent_ckey *k, char *out, size_t cap);

/*
 * Loads path into *cur.  0 (possibly empty when the file does not exist,
 * *missing = 1); GPUFL_EPARSE/ETOOBIG/EIO with a reason in err.
 */
int agent_cursor_load(const char *path, agent_cursor *cur, int *missing,
                      char *err, size_t errcap);

/* Writes path atomically (mode 0600): path.tmp, fsync, rename, fsync the
 * folder.  Returns 0 or a gpufl_err (errno set for GPUFL_EIO). */
int agent_cursor_save(const char *path, const agent_cursor *cur);
/* The same from a body of n "f" and nk "k" lines (borrowed): the magic
 * and the end line are added.  Lets a caller keep the lines of entries
 * that did not change instead of formatting every entry every time. */
int agent_cursor_save_body(const char *path, const char *body, size_t blen,
                           size_t n, size_t nk);

#endif
