/*
 * ingest.h - turns a POSTed body into validated events: content decoding
 * (identity, gzip, zstd) and the per-line parser.
 *
 * The line parser is the server's untrusted-input boundary: it is what
 * tests/fuzz/fuzz_ingest.c fuzzes.  It never allocates; strings it
 * returns are decoded into the caller's arena.
 */
#ifndef GPUFL_SERVER_INGEST_H
#define GPUFL_SERVER_INGEST_H

#include <stddef.h>
#include <stdint.h>

#include "common/jsonl.h"
#include "store.h"

/* Tokens one event line may have: generous for pcsamp stall maps and
 * session headers with several devices. */
#define INGEST_MAX_TOKENS 1024
/* Longest accepted line. */
#define INGEST_MAX_LINE (256u * 1024)
/* Longest name a dictionary line may define (bytes, decoded): kernel,
 * scope and file names; queries answer them in full. */
#define INGEST_NAME_MAX 4096
/* a session's job id and step scope name (bytes, decoded) */
#define INGEST_JOB_MAX 256
/* Longest reason text in a response error. */
#define INGEST_REASON_MAX 120

/* A bump arena for decoded strings (caller-owned buffer). */
typedef struct ingest_arena {
    char *buf;
    size_t len, cap;
} ingest_arena;

/*
 * Parses one line of stream st (SRV_ST_*) into *ev.  Returns GPUFL_OK, or
 * GPUFL_EPARSE / GPUFL_ETOOBIG with a static or reason-buffer message in
 * *why (reason is INGEST_REASON_MAX bytes, caller-owned).  doc is the
 * caller's token buffer (INGEST_MAX_TOKENS entries recommended).  Decoded
 * strings are placed in *a, raw JSON (ev->raw) points into line.
 */
int ingest_line_parse(jsonl_doc *doc, int st, const char *line, size_t n,
                      ingest_arena *a, srv_ev *ev, char *reason);

/* 1 if s[0, n) is a session id as the format writes it: a lower-case
 * UUID. */
int ingest_is_uuid(const char *s, size_t n);

/* The stream index of a URL name, -1 if unknown. */
int ingest_stream_index(const char *name);
const char *ingest_stream_name(int st);

/* Content encodings. */
enum { ENC_IDENTITY = 0, ENC_GZIP = 1, ENC_ZSTD = 2 };

/* -1 for an encoding we do not support. */
int ingest_encoding(const char *header);

/*
 * Decodes in[0, n) into a new malloc'd buffer (*out, *out_n; caller
 * frees) of at most cap bytes: every member of a gzip body, every frame of
 * a zstd one.  GPUFL_ETOOBIG over cap, GPUFL_EPARSE for a corrupt or cut
 * stream or bytes after its end (*why, if why is not NULL: a static
 * English reason), GPUFL_ENOMEM.
 */
int ingest_decode(int enc, const char *in, size_t n, size_t cap, char **out,
                  size_t *out_n, const char **why);

#endif
