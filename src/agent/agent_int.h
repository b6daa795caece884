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

#include "common/buf.h"
#include "common/jsonl.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <zstd.h>

/* The live file's rotation index. */
#define AGENT_LIVE UINT32_MAX
/* Files followed at once; more wait for the next scan. */
#define AGENT_MAX_FILES 65536
/* Bytes read per read() / decompression step. */
#define AGENT_CHUNK (256u * 1024)
/* Read buffers of AGENT_CHUNK bytes kept for reuse when a file goes idle,
 * so a live file written every 100 ms does not allocate each time. */
#define AGENT_RCACHE 4
/* Likewise batch arrays (at most AGENT_BCACHE_MAX bytes of lines each):
 * a file's empty batch goes to the spares at the end of its turn, so
 * files between turns hold none. */
#define AGENT_BCACHE 4
#define AGENT_BCACHE_MAX (4u << 20)
/* Batches held (lingering or waiting for the sink) at once: past it a
 * lingering batch is sent at once and no new batch is started. */
#define AGENT_HELD_MAX 16
/* .zst files being decompressed at once (each holds a decoder and its
 * window, up to a few MiB). */
#define AGENT_ZST_MAX 8
/* How much of an oversize or malformed line the dead-letter file keeps. */
#define AGENT_DEAD_KEEP (64u * 1024)
/* Tokens for validating a line; a line with more is checked by a larger
 * array once, then accepted unparsed if even that is too small. */
#define AGENT_TOKENS 4096
#define AGENT_TOKENS_BIG 262144
/* How much of a file's first line is read to learn its session line
 * ("file" index and seq) when the file is found. */
#define AGENT_FIRST_LINE_MAX (32u * 1024)
/* Bytes before the consumed offset kept for the cursor's offset marker. */
#define AGENT_MARK 32
/* A hole in a stream's file indexes: at most this many missing files are
 * looked for by name before it is reported, and the file after it waits
 * at most this many scans for one found there. */
#define AGENT_HOLE_LOOK 256
#define AGENT_HOLE_SCANS 10
/* Idle files of a local folder watched by inotify are visited every this
 * many --poll-ms (inotify says when they are written), and such folders
 * rescanned as seldom; network folders every --poll-ms (and rescanned
 * every 2). */
#define AGENT_IDLE_SLOW 10
/* Names of non-regular files (FIFOs, symlinks, ...) remembered so that
 * each is warned about once. */
#define AGENT_SKIP_MAX 256

struct agent_key;

typedef struct agent_file {
    /* what every round looks at, in one cache line: with a thousand
     * files, a round that touches more of each costs more than it ships */
    struct agent_key *k; /* its stream of its session (borrowed) */
    int done;            /* final and acked to the end */
    int idle;            /* live, read to its end, nothing in flight */
    int dirty;           /* inotify says it was written since */
    int fd;
    int rd_zst; /* how fd is read: the name may change under it */
    int zst;
    int final; /* renamed, compressed or ended: won't grow */
    int eof;   /* the last read returned nothing */
    uint32_t bn;
    uint64_t bfirst_ms; /* when the batch got its first line */
    int in_act;         /* in c->act (run.c) */
    size_t pos;         /* index in c->files as of the last list rebuild */

    char *path;       /* current name (owned) */
    const char *name; /* base name: points into path */
    int folder;
    int stream;
    uint32_t n; /* rotation index; AGENT_LIVE for the live file */
    uint64_t dev, ino;
    /* what a stat said when the file was last verified: a closed file
     * whose name, inode and these agree is the same file */
    uint64_t vs_size, vs_mtime, vs_ctime;
    unsigned char head[CURSOR_FP_MAX];
    uint32_t head_len;
    int seen;      /* found by the last scan */
    int missed;    /* scans in a row that did not find it */
    int touched;   /* inotify saw its name created since the last scan */
    int gone;      /* its inode holds another file now: it was deleted */
    uint64_t disc; /* order of discovery */

    /* continuity (gaps.c): from the file's session line */
    uint32_t fidx; /* "file": the index of this file in its stream */
    uint64_t hseq; /* the session line's seq */
    int fidx_known, hseq_known;
    uint64_t cons_seq; /* seq of the last consumed line */
    int cons_seq_known;
    int ended;          /* the last consumed line is the stream's session_end */
    uint64_t hold_scan; /* 1 + c->nscans when a hole before it was seen */

    /* reading */
    ZSTD_DCtx *dz;
    unsigned char *zin; /* compressed input */
    size_t zin_len, zin_pos;
    uint64_t zraw; /* compressed bytes consumed from the file */
    char *rbuf;
    size_t rlen, rcap, rpos; /* rbuf[rpos, rlen) not yet consumed */
    uint64_t rbase;          /* file offset of rbuf[0] */
    uint64_t skip_to;        /* zst: uncompressed bytes to discard */
    int skipping;            /* inside an oversize line: drop to '\n' */
    uint64_t zpos;           /* zst: uncompressed bytes produced */
    uint64_t size;           /* uncompressed size as far as known */
    int final_size;          /* size is exact (zst read to its end) */
    int archived;
    int warned; /* an open failure was reported */

    /* shipping */
    uint64_t acked;    /* committed offset */
    uint64_t consumed; /* end of the last line put in the batch or dropped */
    /* the AGENT_MARK bytes before consumed (mark_len of them known), and
     * the offset marker of acked for the cursor */
    unsigned char mark[AGENT_MARK];
    uint32_t mark_len;
    uint64_t amark;
    uint32_t amark_len;
    /* its cursor line as last formatted, and what it was made from: a
     * commit formats only the entries that changed */
    char *cline;
    uint32_t cline_len;
    struct {
        uint64_t fp, dev, ino, off, mark;
        uint32_t fp_len, flags, mark_len, pad;
    } cl;
    uint64_t hfp; /* FNV of head[0, hfp_len) */
    uint32_t hfp_len;
    char sid[40];
    gbuf batch; /* the batch's lines (agent_batch_max bytes at most) */
    uint32_t *bend;
    uint64_t *bfoff; /* file offset after each batch line */
    uint32_t bcapn;
} agent_file;

/* One stream of one session (<prefix>.<stream> in one folder): what was
 * acknowledged of it as a whole, so a file deleted before it was read is
 * noticed by the hole it leaves in the file indexes and seqs. */
typedef struct agent_key {
    char name[CURSOR_NAME_MAX + 1];
    int folder;
    int stream;
    uint32_t next_file; /* index of the first file with nothing acked */
    uint64_t next_seq;  /* seq after the last acknowledged line */
    uint32_t flags;     /* CURSOR_K_FILE, CURSOR_K_SEQ: which are known */
    uint64_t lost_files, lost_lines; /* reported so far (kept in cursor) */
    int history;   /* resumed from a cursor without stream entries */
    int vanished;  /* a file vanished unfinished: the next tells how much */
    size_t nfiles; /* files of it being followed */
    char *cline;   /* its cursor line as last formatted, from cl */
    uint32_t cline_len;
    uint64_t cl[5];
} agent_key;

typedef struct agent_stats {
    uint64_t read_lines, read_bytes;
    uint64_t sent_lines, acked_lines, retried, dead_lines;
    uint64_t requests, truncations, lost_files, lost_lines, archived;
    uint64_t skipped; /* non-regular names refused */
} agent_stats;

typedef struct agent_bset {
    gbuf batch;
    uint32_t *bend;
    uint64_t *bfoff;
    uint32_t bcapn;
} agent_bset;

typedef struct agent_skip {
    int folder;
    uint64_t ino, name_fp;
    int seen;
} agent_skip;

typedef struct agent_ctx {
    const agent_cfg *cfg;
    agent_sink *sink;
    agent_file **files;
    size_t nfiles, capfiles;
    uint64_t disc_seq;
    uint64_t files_gen; /* bumped by a scan that changed the files */
    int scan_changed;   /* this scan added, removed or renamed files */
    /* run.c: the heads that get a turn each round */
    agent_file **act;
    size_t nact, capact;
    uint64_t act_gen; /* files_gen it was built for */
    char *cbody;      /* the cursor's lines, kept between commits */
    size_t cbody_cap;
    agent_key **keys; /* sorted by (name, folder) */
    size_t nkeys, capkeys;
    agent_cursor pend;    /* cursor entries not matched to a file yet */
    uint64_t *pend_keyfp; /* FNV of each pending file entry's key */
    int quiet;            /* --status: scan without log lines */
    int cursor_dirty;
    uint64_t cursor_saved_ms;
    FILE *dead;
    char dead_path[4200];
    /* watch.c */
    int inotify_fd;
    int wd[AGENT_MAX_FOLDERS];
    int watch_lost;    /* the event queue overflowed: verify everything */
    agent_file **nmap; /* (folder, name) -> file, rebuilt by each scan */
    size_t nmap_cap;
    int scan_needed;
    uint64_t scanned_ms;
    uint64_t nscans;         /* scans completed */
    uint64_t polled_ms;      /* last visit of remote folders' idle files */
    uint64_t polled_slow_ms; /* ... of every idle file */
    int visit_all;           /* the next round visits every idle file */
    int remote[AGENT_MAX_FOLDERS]; /* polled: inotify misses its writes */
    int any_remote;
    uint64_t lost_gone[AGENT_NSTREAMS]; /* lost files of vanished keys */
    agent_skip skip[AGENT_SKIP_MAX];
    size_t nskip;
    size_t nheld; /* files whose batch holds lines */
    agent_bset bcache[AGENT_BCACHE];
    size_t nbcache;
    char *rcache[AGENT_RCACHE];
    size_t nrcache;
    uint64_t backoff_until_ms;
    uint64_t backoff_ms;
    uint64_t fail_since_ms, fail_count; /* the current burst of failures */
    char fail_why[256];                 /* its last reason, logged once */
    uint64_t fail_logged_ms;
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
 * ones followed, recycled inodes told apart by their heads; returns 0 or a
 * gpufl_err. */
int agent_scan(agent_ctx *c);
/* Forgets the cursor entries no scan matched (reporting unfinished ones). */
void agent_scan_pending_done(agent_ctx *c);
/* After loading c->pend: indexes its entries by key.  0 or GPUFL_ENOMEM. */
int agent_scan_pending_init(agent_ctx *c);

/* watch.c: inotify on every folder; -1 when unavailable (polling only). */
int agent_watch_open(agent_ctx *c);
void agent_watch_close(agent_ctx *c);
/* Which folders need polling (network file systems, or no inotify). */
void agent_watch_kinds(agent_ctx *c);
/* Waits up to ms for folder activity: sets c->scan_needed on names
 * changing, marks written files dirty. */
void agent_watch_wait(agent_ctx *c, uint64_t ms);
/* Rebuilds the (folder, name) -> file map after a scan. */
void agent_watch_index(agent_ctx *c);
agent_file *agent_watch_find(const agent_ctx *c, int folder, const char *name);

/* gaps.c: the continuity of each stream */
agent_key *agent_key_get(agent_ctx *c, int folder, const char *name,
                         int stream);
agent_key *agent_key_find(const agent_ctx *c, int folder, const char *name);
/* Frees the keys no file refers to any more. */
void agent_keys_prune(agent_ctx *c);
/* The file's first line (parsed in d): a session line names the file's
 * index and the stream's seq. */
void agent_gap_first_line(agent_file *f, jsonl_doc *d);
/* Parses a raw first line with c's tokens, then as above. */
void agent_gap_head_line(agent_ctx *c, agent_file *f, const char *line,
                         size_t n);
/* Before f's first line is consumed: 1 while a file of a hole before f is
 * still in the folder (a scan missed it; f is not read meanwhile). */
int agent_gap_hold(agent_ctx *c, agent_file *f);
/* The first line of f was consumed: reports files and lines missing
 * between the last acknowledged one and f. */
void agent_gap_start(agent_ctx *c, agent_file *f);
/* f->acked moved: the stream's acknowledged position follows. */
void agent_gap_acked(agent_ctx *c, agent_file *f);
/* f left the folders before it was read to its end. */
void agent_gap_vanished(agent_ctx *c, agent_file *f, uint64_t unsent);
/* Files missing now between what was acknowledged and the first file
 * present (for --status); *lines is UINT64_MAX when unknown. */
uint64_t agent_gap_pending(const agent_ctx *c, const agent_key *k,
                           uint32_t *first, uint64_t *lines);

/* tail.c */
int agent_file_open(agent_file *f);
/* Appends more bytes to f->rbuf; returns bytes added, 0 at end of data,
 * -1 on error. */
long agent_file_fill(agent_ctx *c, agent_file *f);
void agent_file_close(agent_file *f);
void agent_file_free(agent_file *f);
/* Drops the read buffer of a plain file between turns (what was read
 * ahead is read again). */
void agent_file_rest(agent_ctx *c, agent_file *f);
/* Drops every buffer of an idle file (nothing in flight). */
void agent_file_idle(agent_ctx *c, agent_file *f);
/* Moves f's empty batch arrays to the spares (or frees them), and takes
 * spares for a file that has none. */
void agent_batch_park(agent_ctx *c, agent_file *f);
void agent_batch_unpark(agent_ctx *c, agent_file *f);
void agent_rcache_free(agent_ctx *c);
/* Frees f's batch arrays (nothing may be in flight). */
void agent_batch_free(agent_file *f);
/* The cap of a batch's bytes: a batch is sent once it holds batch_bytes,
 * so it never holds more than that plus one line (up to max_line_bytes,
 * with its newline and a CR). */
#define agent_batch_max(cfg) ((cfg)->batch_bytes + (cfg)->max_line_bytes + 8)
/* Opens a log file the safe way: never blocks (FIFO), never follows a
 * symlink, regular files only.  fd >= 0, or -1 with errno (EINVAL: not a
 * regular file). */
int agent_open_log(const char *path, struct stat *st);
/* Reads the first CURSOR_FP_MAX uncompressed bytes into f->head, f's
 * identity (dev, ino, stat) and, when the first line is complete within
 * cap bytes, that line into line[0, *line_len) (else *line_len = 0).
 * GPUFL_EINVAL for a file that is not regular. */
int agent_file_head(agent_file *f, char *line, size_t cap, size_t *line_len);
/* 1 if the file at f->path is no longer the one f reads (rotated). */
int agent_file_rotated(agent_file *f);
/* Uncompressed size of a file (decompresses .zst); UINT64_MAX on error. */
uint64_t agent_file_size(const char *path, int zst);
/* The offset marker: keeps the bytes of p[0, n) that end at consumed. */
void agent_mark_put(agent_file *f, const char *p, size_t n);

/* dead.c */
int agent_dead_open(agent_ctx *c);
void agent_dead_put(agent_ctx *c, const agent_file *f, uint64_t off,
                    const char *line, size_t len, size_t full_len,
                    const char *reason, size_t reason_len);
void agent_dead_sync(agent_ctx *c);
void agent_dead_close(agent_ctx *c);

/* ship.c: one turn of f (read, send, settle, drop its buffers between
 * turns); 1 if anything moved. */
int agent_turn(agent_ctx *c, agent_file *f);

/* run.c */
int agent_run(agent_ctx *c);
/* f was written (inotify): back in the list if it is its stream's head. */
void agent_run_wake(agent_ctx *c, agent_file *f);

/* commit.c */
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
