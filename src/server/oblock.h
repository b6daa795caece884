/*
 * oblock.h - the block codec for a session's memory operations (copies,
 * memsets, syncs, allocs, frees: the `ops` table's rows; issue 23): up to
 * OB_MAX_EVENTS of them in one compressed byte string, with the index a
 * store keeps beside it (seq and time ranges, count, longest duration).
 *
 * The codec only; its byte layout is docs/server.md "Op blocks (format)".
 * It takes its column transforms, varints and zstd framing from the
 * kernel block codec (kblock_int.h): ops have no launch shapes, so every
 * column is one of the plain transforms, and the kind (a short string)
 * is a number into the block's own table of kinds.
 *
 * Thread contract: none of these functions keeps state between calls; an
 * oblock_enc or oblock_dec is used by one thread at a time.
 */
#ifndef GPUFL_SERVER_OBLOCK_H
#define GPUFL_SERVER_OBLOCK_H

#include <stddef.h>
#include <stdint.h>

/* Ops per block: a batch's ops of a session are a few hundred; the codec
 * refuses more so that every buffer has a fixed bound. */
#define OB_MAX_EVENTS 4096
/* An op's kind in bytes (ingest.c caps a copy's "kind" at 32). */
#define OB_KIND_MAX 32
/* Distinct kinds in one block (copies have a handful: HtoD, DtoH...). */
#define OB_MAX_KINDS 255
/* Columns (oblock.c): seq, type, kind, ts, dur, dev, stream, corr,
 * bytes, scope, path, stack, api_off, api_dur, flags, tid. */
#define OB_NCOLS 16
#define OB_HDR_MAX (8 + 8 * 10)
#define OB_RAW_MAX                                                             \
    (20 + OB_MAX_KINDS * (1 + OB_KIND_MAX) +                                   \
     OB_NCOLS * (11 + (size_t)OB_MAX_EVENTS * 10))
#define OB_BLOCK_MAX (OB_HDR_MAX + OB_RAW_MAX + OB_RAW_MAX / 64 + 1024)

/* One op as the store keeps it (the `ops` row less its session). */
typedef struct oblock_ev {
    uint64_t seq, type, ts, dur, dev, stream, corr, bytes, scope, path, stack;
    int64_t api_off;
    uint64_t api_dur, flags, tid; /* tid 0: absent (NULL) */
    int kind_len;                 /* < 0: no kind (NULL); else its bytes */
    char kind[OB_KIND_MAX + 1];   /* NUL-terminated too */
} oblock_ev;

/* A block's index: what the store keeps in columns beside the bytes. */
typedef struct oblock_index {
    uint32_t n;
    uint64_t seq_min, seq_max, ts_min, ts_max, dur_max;
} oblock_index;

/* Encoder and decoder: heap objects of about 0.7 MB (every buffer sized
 * for OB_MAX_EVENTS, so coding allocates nothing); one per thread. */
typedef struct oblock_enc oblock_enc;
oblock_enc *oblock_enc_new(void);
void oblock_enc_free(oblock_enc *e);
typedef struct oblock_dec oblock_dec;
oblock_dec *oblock_dec_new(void);
void oblock_dec_free(oblock_dec *d);

/*
 * Encodes ev[0..n) (1 <= n <= OB_MAX_EVENTS, any order; kind_len at most
 * OB_KIND_MAX, at most OB_MAX_KINDS distinct kinds) into out[0..cap) and
 * sets *len; zlevel is zstd's (3: the store's).  The output is a pure
 * function of (ev, n, zlevel).  0, or -1 with why (at most whylen bytes)
 * when an input is out of range or cap is short; cap >= OB_BLOCK_MAX
 * always suffices.
 */
int oblock_encode(oblock_enc *e, const oblock_ev *ev, size_t n, int zlevel,
                  unsigned char *out, size_t cap, size_t *len, char *why,
                  size_t whylen);

/* Reads only a block's header (no decompression): 0, or -1 with why. */
int oblock_index_read(const unsigned char *b, size_t len, oblock_index *idx,
                      char *why, size_t whylen);

/*
 * Decodes a whole block into out[0..cap): *n ops in their encoded order.
 * Every length is checked against its cap and the bytes there are, and
 * the header's index must equal what the ops give.  0, or -1 with why on
 * any malformed, truncated or inconsistent block, never reading out of
 * bounds.  cap >= OB_MAX_EVENTS always suffices.
 */
int oblock_decode(oblock_dec *d, const unsigned char *b, size_t len,
                  oblock_ev *out, size_t cap, size_t *n, char *why,
                  size_t whylen);

#endif
