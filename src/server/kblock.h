/*
 * kblock.h - the columnar block codec for kernel events (issue 23): up to
 * KB_MAX_EVENTS kernels of one session and stream in one compressed byte
 * string, with the index a store keeps beside it (time and seq ranges,
 * count, min/max duration, per-name counts).
 *
 * The codec only (the store: store_sql_kblocks.c writes blocks,
 * store_sql_kblocks_read.c reads them).  The byte layout is
 * docs/server.md "Kernel blocks (format)".  It lives in src/server, not
 * src/common: it is the store's at-rest form and nothing else reads
 * blocks (the report reads logs, the export and UI the server's API),
 * while src/common is linked into libgpufl and every program.
 *
 * An event holds every per-kernel column of the `kernels` table
 * (store_sql_schema.c) except the session, which is the block's.  Absent
 * values are as the store keeps them: occ < 0 (NULL), tid 0 (NULL).
 *
 * Thread contract: none of these functions keeps state between calls; a
 * kblock_enc or kblock_dec is used by one thread at a time.
 */
#ifndef GPUFL_SERVER_KBLOCK_H
#define GPUFL_SERVER_KBLOCK_H

#include <stddef.h>
#include <stdint.h>

/* Events per block: the store's blocks hold "a few thousand"; the codec
 * refuses more so that every buffer below has a fixed bound. */
#define KB_MAX_EVENTS 16384
/* Distinct names listed in a block's index (at most one per event). */
#define KB_MAX_NAMES KB_MAX_EVENTS
/* Columns: 11 of the launch-shape table, 14 per event (kblock.c). */
#define KB_NCOLS 25
/* The largest encoded block: header and index (names: 2 varints each),
 * then a payload no longer than its uncompressed form, every value a
 * 10-byte varint plus each column's mode byte and length. */
#define KB_HDR_MAX (8 + 10 * 10 + KB_MAX_NAMES * 20)
#define KB_RAW_MAX ((size_t)KB_MAX_EVENTS * KB_NCOLS * 10 + KB_NCOLS * 12 + 10)
#define KB_BLOCK_MAX (KB_HDR_MAX + KB_RAW_MAX)
/* The largest encoded block of n events (n <= KB_MAX_EVENTS): the bounds
 * above for n, the payload as zstd may grow it (it is compressed even when
 * that does not shrink it: at most 1/256 more and a few bytes, here 1/128
 * and 1 KB).  Enough room for kblock_encode's out. */
#define KB_RAW_N(n) ((size_t)(n)*KB_NCOLS * 10 + KB_NCOLS * 12 + 10)
#define KB_BLOCK_BOUND(n)                                                      \
    (8 + 10 * 10 + (size_t)(n)*20 + KB_RAW_N(n) + KB_RAW_N(n) / 128 + 1024)

/* One kernel as the store keeps it. */
typedef struct kblock_ev {
    uint64_t seq, ts, dur, dev, stream, corr, cfg;
    int64_t name_id;
    uint64_t grid[3];
    int64_t block[3], regs, smem;
    double occ; /* < 0: absent */
    uint64_t scope, path, stack;
    int64_t api_off;
    uint64_t api_dur, flags, tid; /* tid 0: absent */
} kblock_ev;

/* One name's count in a block. */
typedef struct kblock_name {
    int64_t name_id;
    uint32_t n;
} kblock_name;

/* A block's index: what a store keeps in columns beside the bytes to find
 * and prune blocks without opening them.  names[] is sorted by name_id. */
typedef struct kblock_index {
    uint32_t n;
    uint64_t seq_min, seq_max, ts_min, ts_max, dur_min, dur_max;
    uint32_t nnames;
    kblock_name names[KB_MAX_NAMES];
} kblock_index;

/* Encoder state: a heap object of about 13 MB (every buffer sized for
 * KB_MAX_EVENTS, so encoding allocates nothing); one per writer thread. */
typedef struct kblock_enc kblock_enc;
kblock_enc *kblock_enc_new(void);
void kblock_enc_free(kblock_enc *e);

/* Encoder choices, for measuring the alternatives (bench_kblock); the
 * store uses KB_OPT_DEFAULT. */
#define KB_OPT_DEFAULT 0u
#define KB_OPT_NOZSTD                                                          \
    1u                      /* payload stored uncompressed, without a
                            checksum: for measuring and fuzzing only */
#define KB_OPT_DUR_PLAIN 2u /* no per-shape duration prediction */
#define KB_OPT_NOSHAPES 4u  /* every event its own shape row (no dict) */
#define KB_OPT_NOGAP 8u     /* ts and api_off not predicted (KM_GAP) */

/*
 * Encodes ev[0..n) (borrowed; 1 <= n <= KB_MAX_EVENTS, any order, any
 * values) into out[0..cap) and sets *len.  zlevel is zstd's level (3 is
 * the store's).  The output is a pure function of (ev, n, zlevel, opt).
 * Returns 0; -1 with why (NUL-terminated, at most whylen bytes) when n is
 * out of range, cap is short or zstd fails.  cap >= KB_BLOCK_MAX always
 * suffices.
 */
int kblock_encode(kblock_enc *e, const kblock_ev *ev, size_t n, int zlevel,
                  unsigned opt, unsigned char *out, size_t cap, size_t *len,
                  char *why, size_t whylen);

/*
 * Reads only a block's header: its index (idx filled, names included).
 * No decompression.  0, or -1 with why when the header is malformed.
 */
int kblock_index_read(const unsigned char *b, size_t len, kblock_index *idx,
                      char *why, size_t whylen);

/* Decoder state: a heap object of about 9 MB (as the encoder's); one per
 * reader thread. */
typedef struct kblock_dec kblock_dec;
kblock_dec *kblock_dec_new(void);
void kblock_dec_free(kblock_dec *d);

/*
 * Decodes a whole block into out[0..cap): *n events in their encoded
 * order.  Every length is checked against its cap and against the bytes
 * there are; the index in the header must equal what the events give.
 * Returns 0, or -1 with why on any malformed, truncated or inconsistent
 * block (out's contents are then unspecified), never reading out of
 * bounds.  cap >= KB_MAX_EVENTS always suffices.
 */
int kblock_decode(kblock_dec *d, const unsigned char *b, size_t len,
                  kblock_ev *out, size_t cap, size_t *n, char *why,
                  size_t whylen);

/*
 * Column bits for kblock_decode_cols, one per column of kblock_ev (the
 * shape columns are per event here, as kblock_decode gives them).
 */
#define KB_C_NAME (1u << 0)
#define KB_C_CFG (1u << 1)
#define KB_C_GRID (7u << 2)  /* grid[0..2] */
#define KB_C_BLOCK (7u << 5) /* block[0..2] */
#define KB_C_REGS (1u << 8)
#define KB_C_SMEM (1u << 9)
#define KB_C_OCC (1u << 10)
#define KB_C_SEQ (1u << 12)
#define KB_C_DUR (1u << 13)
#define KB_C_TS (1u << 14)
#define KB_C_DEV (1u << 15)
#define KB_C_STREAM (1u << 16)
#define KB_C_CORR (1u << 17)
#define KB_C_SCOPE (1u << 18)
#define KB_C_PATH (1u << 19)
#define KB_C_STACK (1u << 20)
#define KB_C_API_DUR (1u << 21)
#define KB_C_API_OFF (1u << 22)
#define KB_C_FLAGS (1u << 23)
#define KB_C_TID (1u << 24)
#define KB_C_ALL 0x1fff7ffu

/*
 * As kblock_decode, but only the fields of the columns in cols (KB_C_*)
 * are written in out[k]; the others are left as they were.  The payload
 * is decompressed whole (one zstd frame), but the bodies of the columns
 * not asked for are skipped unread, and the walk stops after the last
 * one asked for: for readers that need a few columns (the timeline's
 * level 0 reads ts, dur, name, dev and stream).  With every column
 * (KB_C_ALL) it is kblock_decode, the index check included; with fewer,
 * the index is not checked (the frame's checksum still is).
 */
int kblock_decode_cols(kblock_dec *d, const unsigned char *b, size_t len,
                       unsigned cols, kblock_ev *out, size_t cap, size_t *n,
                       char *why, size_t whylen);

/*
 * Every field (of the columns cols) of a few events of the block the last
 * kblock_decode_cols (or kblock_decode) on d decoded, for a reader that
 * chooses them by a few columns (a page of 100 kernels by time reads ts
 * and seq of a block of 4 096, then materialises the 100): out[j] = the
 * event at position rows[j], j < k (rows ascending, each below that
 * decode's *n; the other fields of out[j] are left as they were).  No
 * second decompression (the payload stays in d), no other event
 * materialised, and each column read only as far as the last row asked
 * for.  The block's bytes must be unchanged and still there (a block
 * stored uncompressed is read in place); any other call on d in between
 * (another decode, a seek, kblock_name_dur: it opens its own) ends that, and this is then
 * an error.  0, or -1 with why.
 */
int kblock_decode_rows(kblock_dec *d, unsigned cols, const uint32_t *rows,
                       size_t k, kblock_ev *out, char *why, size_t whylen);

/*
 * Seeks without decoding the whole block: the header decides whether the
 * key can be in it (no decompression when not), then only the seq (or ts)
 * column is read.  *pos = the first position whose seq == key (seek_seq)
 * or whose ts >= key (seek_ts, over the ts column in encoded order, which
 * is time order when the events were given sorted); KB_NOTFOUND when none.
 * Returns 0, or -1 with why on a malformed block.
 */
#define KB_NOTFOUND ((size_t)-1)
int kblock_seek_seq(kblock_dec *d, const unsigned char *b, size_t len,
                    uint64_t seq, size_t *pos, char *why, size_t whylen);
int kblock_seek_ts(kblock_dec *d, const unsigned char *b, size_t len,
                   uint64_t ts, size_t *pos, char *why, size_t whylen);

/*
 * The name id and duration of each event (names[k], durs[k], k < *n, in
 * encoded order) without decoding the other columns: for ruling a block
 * out of a sort by duration before decoding it whole.  Not checked
 * against the index (kblock_decode does that).  0, or -1 with why.
 */
int kblock_name_dur(kblock_dec *d, const unsigned char *b, size_t len,
                    int64_t *names, uint64_t *durs, size_t cap, size_t *n,
                    char *why, size_t whylen);

/*
 * As kblock_decode_cols of the columns cols (some, not KB_C_ALL: no
 * index check) of the block the last kblock_name_dur (or
 * kblock_decode_cols) on d opened, without decompressing it again: a
 * sort by duration rules a block out from its names and durations, and
 * decodes the one that passes (the payload's zstd was a sixth of such a
 * page's CPU, twice over).  The block's bytes must be unchanged and
 * still there (a block stored uncompressed is read in place); any other
 * call on d in between ends that, and this is then an error.
 * kblock_decode_rows may follow.  0, or -1 with why.
 */
int kblock_decode_cols_again(kblock_dec *d, unsigned cols, kblock_ev *out,
                             size_t cap, size_t *n, char *why, size_t whylen);

/* Where a block's bytes go, per column (bench_kblock's breakdown):
 * col_raw[i] = column i's bytes before zstd, col_z[i] = that column
 * compressed alone at zlevel; hdr = header and index bytes.  Names of
 * the columns in kblock_col_names. */
typedef struct kblock_stats {
    size_t hdr, raw, total, nshapes;
    size_t col_raw[KB_NCOLS], col_z[KB_NCOLS];
    unsigned col_mode[KB_NCOLS];
} kblock_stats;
extern const char *const kblock_col_names[KB_NCOLS];
int kblock_stats_get(kblock_dec *d, const unsigned char *b, size_t len,
                     int zlevel, kblock_stats *st, char *why, size_t whylen);

#endif
