/*
 * writer.h - one JSONL stream on disk: buffered appends of whole lines,
 * size-based rotation, keep-K pruning, optional zstd of rotated files.
 *
 * Crash safety: lines are built in memory and handed to write(2) only as
 * whole lines, so a killed process leaves whole lines.
 *
 * A full disk: the space of each write is reserved first (fallocate,
 * beyond the end of the file, not changing its size), together with
 * WRITER_RESERVE more for the file's last lines.  When that fails the
 * buffer is dropped (counted), never cut in the middle of a line, and the
 * reserve still takes the loss and session_end lines at close.  Where the
 * file system cannot reserve (no fallocate), a short write can leave a
 * partial line, ended with a newline at the next write that succeeds
 * (readers skip it).
 * Rotation renames each file once: <prefix>.<stream>.log becomes
 * <prefix>.<stream>.log.<n> with n = 1, 2, ... in order of creation, so a
 * reader that follows rotation sees every name change at most once.
 * Used by the collector thread only.
 */
#ifndef GPUFL_CLIENT_WRITER_H
#define GPUFL_CLIENT_WRITER_H

#include <stddef.h>
#include <stdint.h>

#define WRITER_BUF (256 * 1024)
/* Room kept for a file's last lines (loss and session_end lines, a few
 * KiB at most). */
#define WRITER_RESERVE (64 * 1024)
/* Space is reserved ahead in steps of at least this much: one fallocate
 * per step, not per write. */
#define WRITER_RESERVE_STEP (1024 * 1024)

typedef struct wstream {
    int fd;
    int stream;          /* ST_* */
    char path[4096];     /* live file */
    uint64_t file_bytes; /* written + buffered in the current file */
    uint32_t rotations;  /* rotated files made so far */
    uint32_t file_gen;   /* process-unique id of the current file */
    uint64_t seq;        /* next line's sequence number */
    uint64_t lines;      /* lines written in this session */
    uint64_t bytes;      /* bytes written in this session */
    uint64_t lines_lost; /* lines dropped by failed writes */
    int damaged;         /* the file ends inside a line: end it with a
                            newline before anything else is written */
    int lost_context;    /* lines were dropped: the session line and dict
                            lines must be written again before the next
                            event (the collector does it) */
    uint64_t size;       /* bytes in the file */
    uint64_t reserved;   /* space allocated up to here (>= size) */
    uint64_t tried;      /* ... or tried to be (a failed fallocate may
                            leave some allocated) */
    int can_reserve;     /* fallocate works on this file system */
    int failing;         /* the last write failed (cleared by a good one) */
    int err;             /* its errno */
    char *buf;
    size_t len, cap;
    int own_buf; /* buf is ours to free (writer_open) */
    uint64_t rotate_bytes;
    uint32_t keep;
    int compress;
} wstream;

/* Create <prefix>.<name>.log (must not exist).  Returns 0 or a gpufl_err. */
int writer_open(wstream *w, int stream, const char *prefix_path,
                const char *name, uint64_t rotate_bytes, uint32_t keep,
                int compress);
/* As writer_open, for a path already made and a buffer of cap bytes the
 * caller owns (writer_close keeps it): nothing is allocated and nothing
 * but open(2) is called, so a crash handler may open a file
 * (collector_crash).  path is copied. */
int writer_open_buf(wstream *w, int stream, const char *path, char *buf,
                    size_t cap, uint64_t rotate_bytes, uint32_t keep,
                    int compress);
/* Write the buffer out.  Returns 0, or GPUFL_EIO when the write (or
 * reserving its space) failed: the buffered lines are dropped and counted
 * in lines_lost, failing and err say why. */
int writer_flush(wstream *w);
/* 1 if a line of up to `need` more bytes would cross the rotation size. */
int writer_should_rotate(const wstream *w, size_t need);
/* Flush, close, rename to .<n>, prune, open a fresh live file. */
int writer_rotate(wstream *w);
/* Space for one line: at least `need` bytes, flushing first if needed.
 * Returns NULL if need exceeds the buffer. */
char *writer_space(wstream *w, size_t need, size_t *avail);
void writer_commit(wstream *w, size_t n);
/* Flushes into the reserve (the file's last lines), releases what is left
 * of it and closes.  Returns 0 or GPUFL_EIO as writer_flush. */
int writer_close(wstream *w);

/* Background zstd of rotated files. */
int writer_compressor_start(void);
void writer_compressor_stop(void);
/* Compress path into path.zst (atomically via .tmp), remove path. */
int writer_compress_file(const char *path);

#endif
