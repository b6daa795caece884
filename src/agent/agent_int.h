/*
 * agent_int.h - the agent's shared state: the files it follows, the
 * pipeline context, and the functions that cross files.
 *
 * One thread does everything (scan, read, send, commit): a batch is sent
 * and answered before the next one, so the cursor can only ever hold
 * offsets the sink acknowledged.  Files of one stream of one session (one
 * "key", <prefix>.<stream>) are read strictly in order, oldest rotation
 * first; different keys are served round-robin, so every session's three
 * streams are tailed concurrently.
 */
#ifndef GPUFL_AGENT_INT_H
#define GPUFL_AGENT_INT_H

#include "agent/cursor.h"
#include "agent/opt.h"
#include "agent/sink.h"

#include "common/jsonl.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <zstd.h>

/* The live file's rotation index. */
#define AGENT_LIVE UINT32_MAX
/* Files followed at once; more wait for the next scan. */
#define AGENT_MAX_FILES 65536
/* Bytes read per read() / decompression step. */
#define AGENT_CHUNK (256u * 1024)
/* How much of an oversize or malformed line the dead-letter file keeps. */
#define AGENT_DEAD_KEEP (64u * 1024)
/* Tokens for validating a line; a line with more is checked by a larger
 * array once, then accepted unparsed if even that is too small. */
#define AGENT_TOKENS 4096
#define AGENT_TOKENS_BIG 262144

typedef struct agent_file {
    char *path;                     /* current name (owned) */
    char key[CURSOR_NAME_MAX + 1];  /* <prefix>.<stream> */
    char name[CURSOR_NAME_MAX + 1]; /* base name of path */
    int folder;
    int stream;
    uint32_t n; /* rotation index; AGENT_LIVE for the live file */
    int zst;
    uint64_t dev, ino;
    unsigned char head[CURSOR_FP_MAX];
    uint32_t head_len;
    int seen;   /* found by the last scan */
    int missed; /* scans in a row that did not find it */

    /* reading */
    int fd;
    int rd_zst; /* how fd is read: the name may change under it */
    ZSTD_DCtx *dz;
    unsigned char *zin; /* compressed input */
    size_t zin_len, zin_pos;
    uint64_t zraw; /* compressed bytes consumed from the file */
    char *rbuf;
    size_t rlen, rcap, rpos; /* rbuf[rpos, rlen) not yet consumed */
    uint64_t rbase;          /* file offset of rbuf[0] */
    uint64_t skip_to;        /* zst: uncompressed bytes to discard */
    int skipping;            /* inside an oversize line: drop to '\n' */
    int final;               /* renamed or compressed: will not grow */
    int eof;                 /* the last read returned nothing */
    uint64_t zpos;           /* zst: uncompressed bytes produced */
    uint64_t size;           /* uncompressed size as far as known */
    int final_size;          /* size is exact (zst read to its end) */
    int archived;

    /* shipping */
    uint64_t acked;    /* committed offset */
    uint64_t consumed; /* end of the last line put in the batch or dropped */
    int done;          /* final and acked to the end */
    char sid[40];
    char *bbuf;
    size_t blen, bcap;
    uint32_t *bend;
    uint64_t *bfoff; /* file offset after each batch line */
    uint32_t bn, bcapn;
    uint64_t bfirst_ms; /* when the batch got its first line */
} agent_file;

typedef struct agent_stats {
    uint64_t read_lines, read_bytes;
    uint64_t sent_lines, acked_lines, retried, dead_lines;
    uint64_t requests, truncations, lost_files, archived;
} agent_stats;

typedef struct agent_ctx {
    const agent_cfg *cfg;
    agent_sink *sink;
    agent_file **files;
    size_t nfiles, capfiles;
    agent_centry *pending; /* cursor entries not matched to a file yet */
    size_t npending;
    int cursor_dirty;
    uint64_t cursor_saved_ms;
    FILE *dead;
    char dead_path[4200];
    int inotify_fd;
    int scan_needed;
    uint64_t scanned_ms;
    uint64_t backoff_until_ms;
    uint64_t backoff_ms;
    uint64_t stats_ms;
    agent_stats st;
    jsonl_tok *tok, *tok_big;
    volatile int *stop;
    /* archive (archive.c) */
    struct s3_client *s3;
    char tmp_zst[4200];
    uint64_t archive_until_ms, archive_backoff_ms;
} agent_ctx;

extern const char *const agent_stream_names[AGENT_NSTREAMS];

uint64_t agent_now_ms(void);

/* scan.c: splits a base name into key, stream and rotation index.
 * Returns 0 for a gpufl log file, -1 for anything else (.zst.tmp too). */
int agent_name_parse(const char *name, char *key, size_t keycap, int *stream,
                     uint32_t *n, int *zst);
/* Rescans every folder: new files are matched against the cursor, renamed
 * ones followed; returns 0 or a gpufl_err. */
int agent_scan(agent_ctx *c);
/* inotify on every folder; -1 when unavailable (polling only). */
int agent_watch_open(agent_ctx *c);
/* Waits up to ms for folder activity; sets c->scan_needed on names
 * changing. */
void agent_watch_wait(agent_ctx *c, uint64_t ms);

/* tail.c */
int agent_file_open(agent_file *f);
/* Appends more bytes to f->rbuf; returns bytes added, 0 at end of data,
 * -1 on error. */
long agent_file_fill(agent_ctx *c, agent_file *f);
void agent_file_close(agent_file *f);
void agent_file_free(agent_file *f);
/* Reads the first CURSOR_FP_MAX uncompressed bytes into f->head. */
int agent_file_head(agent_file *f);
/* 1 if the file at f->path is no longer the one f reads (rotated). */
int agent_file_rotated(agent_file *f);
/* Uncompressed size of a file (decompresses .zst); UINT64_MAX on error. */
uint64_t agent_file_size(const char *path, int zst);

/* dead.c */
int agent_dead_open(agent_ctx *c);
void agent_dead_put(agent_ctx *c, const agent_file *f, uint64_t off,
                    const char *line, size_t len, size_t full_len,
                    const char *reason, size_t reason_len);
void agent_dead_sync(agent_ctx *c);
void agent_dead_close(agent_ctx *c);

/* ship.c */
int agent_run(agent_ctx *c);
void agent_cursor_commit(agent_ctx *c, int force);

/* archive.c: 0, or -1 when the S3 client cannot be made */
int agent_archive_open(agent_ctx *c);
void agent_archive_close(agent_ctx *c);
/* Uploads at most one shipped rotated file; 1 if one was archived. */
int agent_archive_step(agent_ctx *c);
/* 1 if f waits for the archive. */
int agent_archive_pending(const agent_ctx *c, const agent_file *f);

/* status.c */
int agent_status_print(const agent_cfg *cfg, FILE *out);
void agent_stats_line(agent_ctx *c);
uint64_t agent_behind(agent_ctx *c, int stream);

#endif
