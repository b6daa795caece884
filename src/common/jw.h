/*
 * jw.h - a JSON writer into a caller-owned, bounded buffer.
 *
 * Used to format event lines on the collector thread and response bodies in
 * the other components.  It never allocates: when the buffer is full, `err`
 * is set, later calls write nothing (they count what they would have
 * written in `need`), and the caller drops the output or, for output of
 * unknown size, lets jw_gbuf_run() write it again into a gbuf grown to
 * the exact size (so the writers keep one fast path, free of calls).  Strings
 * are escaped per RFC 8259; invalid UTF-8 bytes are replaced by U+FFFD so
 * every line written is valid UTF-8.
 */
#ifndef GPUFL_COMMON_JW_H
#define GPUFL_COMMON_JW_H

#include <stddef.h>
#include <stdint.h>

#define JW_MAX_DEPTH 32

struct gbuf;

typedef struct jw {
    char *buf; /* borrowed */
    size_t len, cap;
    int err; /* 1 once anything did not fit */
    int depth;
    uint32_t comma; /* bit d set: level d needs a comma before the next item */
    size_t need;    /* bytes that did not fit, from the first that did not */
    int deep;       /* nesting passed JW_MAX_DEPTH: no size would do */
} jw;

void jw_init(jw *w, char *buf, size_t cap);
void jw_reset(jw *w); /* len = 0, err = 0 */

/*
 * Writes fn's JSON after what g holds, growing g (up to its cap) for
 * output of unknown size: fn(w, ctx) runs into g's room, and once more
 * into room of the exact size it turned out to need when that did not
 * fit, so fn must write the same bytes each time.  0; GPUFL_ETOOBIG past
 * g's cap or for nesting deeper than JW_MAX_DEPTH; GPUFL_ENOMEM.  g's
 * content is unchanged on an error.
 */
int jw_gbuf_run(struct gbuf *g, void (*fn)(jw *w, void *ctx), void *ctx);

void jw_obj_begin(jw *w);
void jw_obj_end(jw *w);
void jw_arr_begin(jw *w);
void jw_arr_end(jw *w);

/* A key inside an object: must be a plain ASCII literal (not escaped). */
void jw_key(jw *w, const char *key);
/* A key from data (any bytes): escaped as jw_str escapes a value. */
void jw_key_str(jw *w, const char *key);
/* A key as JSON string text without its quotes, already escaped (copied
 * from a line jsonl accepted): n bytes, written as they are. */
void jw_key_json(jw *w, const char *s, size_t n);

void jw_u64(jw *w, uint64_t v);
void jw_i64(jw *w, int64_t v);
/* A finite double with up to `decimals` decimals, trailing zeros removed;
 * NaN and infinities are written as null (JSON has no such numbers). */
void jw_f64(jw *w, double v, int decimals);
void jw_bool(jw *w, int v);
void jw_null(jw *w);
/* A string, escaped; at most maxlen input bytes (cut on a UTF-8 boundary). */
void jw_strn(jw *w, const char *s, size_t n, size_t maxlen);
void jw_str(jw *w, const char *s);
/* Raw JSON text (caller guarantees validity), as one value. */
void jw_raw(jw *w, const char *s, size_t n);
/* Raw bytes with no comma handling (e.g. the trailing newline). */
void jw_put(jw *w, const char *s, size_t n);

/* Convenience: key + value. */
void jw_kv_u64(jw *w, const char *key, uint64_t v);
void jw_kv_i64(jw *w, const char *key, int64_t v);
void jw_kv_str(jw *w, const char *key, const char *s);

/* Decimal digits of v into out (at least 20 bytes); returns the length. */
size_t jw_fmt_u64(char *out, uint64_t v);

#endif
