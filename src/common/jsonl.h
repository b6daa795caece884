/*
 * jsonl.h - the JSON lines reader: line framing, a strict tokenizer and
 * typed value access, for the agent and server hot paths.
 *
 * Every gpufl stream is JSONL: one JSON object per '\n'-terminated line
 * (docs/events.md).  Readers go through three steps, none of which
 * allocates or keeps state outside the caller's structs:
 *
 *   1. jsonl_line_next() cuts the next complete line out of a buffer and
 *      says when the rest is a partial line that a tailer must wait for.
 *   2. jsonl_doc_parse_obj() (or jsonl_doc_parse() for any value) checks
 *      the line against RFC 8259 and fills the caller's flat token array.
 *   3. jsonl_doc_find() / jsonl_obj_find() locate a member, and the
 *      jsonl_tok_*() getters turn a token into a u64, i64, double, bool or
 *      string.
 *
 *     jsonl_tok tok[128];
 *     jsonl_doc doc;
 *     const char *line;
 *     size_t pos = 0, n;
 *     uint64_t seq;
 *
 *     jsonl_doc_init(&doc, tok, 128);
 *     while (jsonl_line_next(buf, len, &pos, &line, &n)) {
 *         if (jsonl_doc_parse_obj(&doc, line, n))
 *             ... doc.err_off, doc.err say where and why ...
 *         else if (jsonl_tok_u64(&doc, jsonl_doc_find(&doc, "seq"), &seq))
 *             ... missing, not an integer, or out of range ...
 *     }
 *     ... buf[pos, len) is an incomplete last line ...
 *
 * Strictness.  A line is accepted only if it is exactly one JSON value with
 * optional whitespace (space, tab, CR, LF) around it.  Strings must be valid
 * UTF-8 (no overlong forms, no encoded surrogates, nothing above U+10FFFF),
 * must not hold raw control characters (U+0000..U+001F), may only use the
 * escapes \" \\ \/ \b \f \n \r \t \uXXXX, and a \uXXXX surrogate must be a
 * high one immediately followed by a low one: so every accepted string
 * decodes to valid UTF-8.  Numbers follow the RFC grammar exactly (no
 * leading '+', no leading zeros, no "1.", ".5", NaN or Infinity); their
 * size is not limited by the tokenizer, only by the getters.  Duplicate
 * keys are accepted (RFC 8259 allows them); lookups return the first.
 *
 * Caps.  Nesting is limited to JSONL_MAX_DEPTH containers, tokens to the
 * caller's array, a line to less than 4 GiB - 1 bytes (offsets are 32-bit);
 * the caller caps line length itself (see jsonl_line_next).  Exceeding a cap
 * returns GPUFL_ETOOBIG; any other defect GPUFL_EPARSE.
 *
 * Thread contract: no global state.  A jsonl_doc is used by one thread at a
 * time; distinct docs may be used concurrently.  The getters only read the
 * doc except for the error fields they set on failure.
 */
#ifndef GPUFL_COMMON_JSONL_H
#define GPUFL_COMMON_JSONL_H

#include <stddef.h>
#include <stdint.h>

/* Containers open at once, the top-level value included. */
#define JSONL_MAX_DEPTH 64

/* The longest number text jsonl_tok_f64() hands to strtod() (sign, digits,
 * dot and exponent); see jsonl_tok_f64(). */
#define JSONL_MAX_NUMBER 127

/* Top-level keys remembered by the parse for jsonl_doc_find(); members
 * past this many are found by walking the tokens. */
#define JSONL_TOP_KEYS 32

/* "No such token": what the lookups return when a key is absent.  Every
 * getter answers it with GPUFL_ENOTFOUND, so a lookup can be passed to a
 * getter directly. */
#define JSONL_NOTFOUND UINT32_MAX

typedef enum jsonl_type {
    JSONL_NONE = 0, /* only from jsonl_tok_type() for a bad index */
    JSONL_OBJECT = 1,
    JSONL_ARRAY = 2,
    JSONL_STRING = 3,
    JSONL_NUMBER = 4,
    JSONL_TRUE = 5,
    JSONL_FALSE = 6,
    JSONL_NULL = 7
} jsonl_type;

/* jsonl_tok.flags */
#define JSONL_F_ESC 0x01  /* string: holds at least one backslash escape */
#define JSONL_F_NEG 0x02  /* number: starts with '-' */
#define JSONL_F_REAL 0x04 /* number: has a fraction or an exponent */

/*
 * One token.  Tokens are stored in document order (pre-order):
 *
 *   - a container at index i is followed by its children; the first child
 *     (if n > 0) is at i + 1 and each child's `next` is its next sibling,
 *     so a subtree is skipped in O(1);
 *   - an object's children are key/value pairs: a STRING key token, then
 *     the value's subtree; `n` counts pairs (members), not tokens;
 *   - an array's `n` counts its elements;
 *   - scalars have n = 0 and next = i + 1.
 *
 * off/len locate the raw text in the line: for containers from '{' or '['
 * to the matching bracket inclusive; for strings the bytes between the
 * quotes, still escaped if JSONL_F_ESC is set; for numbers and literals
 * their text.
 */
typedef struct jsonl_tok {
    uint32_t off;  /* bytes from the start of the line */
    uint32_t len;  /* bytes */
    uint32_t next; /* index just past this token's subtree */
    uint32_t n;    /* containers: members (object) or elements (array) */
    uint8_t type;  /* jsonl_type */
    uint8_t flags; /* JSONL_F_* */
} jsonl_tok;

/*
 * The parse result: the caller owns the struct and the token array; the
 * doc borrows the line, which must stay unchanged while tokens are read.
 */
typedef struct jsonl_doc {
    const char *line; /* borrowed: the line last parsed */
    size_t len;       /* its length in bytes */
    jsonl_tok *tok;   /* borrowed: the caller's token array */
    uint32_t cap;     /* entries in tok */
    uint32_t n;       /* tokens filled by the last successful parse */
    size_t err_off;   /* after a failure: byte offset in the line */
    const char *err;  /* after a failure: static reason; NULL after OK */
    /* private, for jsonl_doc_find(): the first top-level keys' token
     * indices and signatures (length, first and last byte) */
    uint32_t nkey;
    uint32_t key_tok[JSONL_TOP_KEYS];
    uint32_t key_sig[JSONL_TOP_KEYS];
} jsonl_doc;

/*
 * Line framing.  Finds the next complete line in buf[*pos, len): on
 * success returns 1, points *line into buf (borrowed) with *line_len bytes,
 * the '\n' and one '\r' just before it removed, and moves *pos past the
 * '\n'.  Empty lines are returned as such (length 0); callers usually skip
 * them.
 *
 * Returns 0 when buf[*pos, len) holds no '\n': those len - *pos bytes
 * (possibly none) are a partial line.  A tailer keeps them, appends what
 * it reads next and calls again; it should give up on a partial line that
 * grows past its own line cap.  *pos, *line and *line_len are then left
 * as they were.
 */
int jsonl_line_next(const char *buf, size_t len, size_t *pos, const char **line,
                    size_t *line_len);

/*
 * At the end of input that will not grow (a rotated or closed file): if
 * buf[*pos, len) is non-empty, returns it as a last line like
 * jsonl_line_next() (one trailing '\r' removed) and sets *pos = len;
 * otherwise returns 0.
 */
int jsonl_line_tail(const char *buf, size_t len, size_t *pos, const char **line,
                    size_t *line_len);

/* Sets up d to parse into tok[0, cap) (borrowed; cap >= 1). */
void jsonl_doc_init(jsonl_doc *d, jsonl_tok *tok, uint32_t cap);

/*
 * Tokenizes line[0, len) (borrowed; need not be NUL-terminated) as exactly
 * one JSON value of any type.  Returns GPUFL_OK with d->n tokens and the
 * root at index 0; GPUFL_EPARSE for malformed input; GPUFL_ETOOBIG when
 * the line has more than d->cap tokens ("too many tokens"), nests deeper
 * than JSONL_MAX_DEPTH or is 4 GiB - 1 bytes or longer.  On failure d->n is 0 and
 * d->err_off / d->err say where and why (the offset of the byte at which
 * the defect was found: the start of a bad escape or UTF-8 sequence, the
 * opening quote of an unterminated string, len for a truncated line).
 */
int jsonl_doc_parse(jsonl_doc *d, const char *line, size_t len);

/* Same, but the value must be an object, as every event line is
 * ("top-level value is not an object" otherwise). */
int jsonl_doc_parse_obj(jsonl_doc *d, const char *line, size_t len);

/*
 * The value token of member `key` (key_len bytes, compared with the
 * decoded key, so "a\u0062" matches "ab") in object token obj, or
 * JSONL_NOTFOUND when absent or when obj is not an object.  With
 * duplicate keys the first occurrence wins.  Linear in the number of
 * members; nested values are skipped without being visited.
 */
uint32_t jsonl_obj_findn(const jsonl_doc *d, uint32_t obj, const char *key,
                         size_t key_len);
/* key is a NUL-terminated string. */
uint32_t jsonl_obj_find(const jsonl_doc *d, uint32_t obj, const char *key);
/*
 * A member of the top-level object (an event line's fields): the same
 * answer as jsonl_obj_find(d, 0, key), faster.  The parse keeps a compact
 * signature of the first JSONL_TOP_KEYS top-level keys, so a lookup scans
 * a small array instead of chasing token links; JSONL_NOTFOUND when the
 * root is not an object.
 */
uint32_t jsonl_doc_find(const jsonl_doc *d, const char *key);
uint32_t jsonl_doc_findn(const jsonl_doc *d, const char *key, size_t key_len);

/*
 * A fixed set of keys looked up together in each line (an event type's
 * fields): jsonl_doc_findset() answers, for every key of the set, what
 * jsonl_doc_find() would, in one pass over the line's keys with a hashed
 * look-up of each (instead of one scan of the keys per field).  A set
 * holds at most JSONL_SET_MAX distinct keys; jsonl_keyset_init() returns
 * GPUFL_EINVAL past that.  The set borrows the key strings.
 */
#define JSONL_SET_MAX 32
#define JSONL_SET_SLOTS 64
typedef struct jsonl_keyset {
    uint32_t n;
    const char *key[JSONL_SET_MAX];
    uint32_t len[JSONL_SET_MAX];
    uint32_t sig[JSONL_SET_MAX];
    uint8_t slot[JSONL_SET_SLOTS]; /* index + 1 by the signature's hash */
} jsonl_keyset;
int jsonl_keyset_init(jsonl_keyset *ks, const char *const *keys, size_t n);
/* out[i] = jsonl_doc_find(d, ks->key[i]) for each i < ks->n. */
void jsonl_doc_findset(const jsonl_doc *d, const jsonl_keyset *ks,
                       uint32_t *out);

/* The type of token t, JSONL_NONE if t is not a token of the last parse. */
jsonl_type jsonl_tok_type(const jsonl_doc *d, uint32_t t);

/*
 * Typed getters.  Each returns GPUFL_OK and stores the value, or leaves
 * *out unchanged, sets d->err_off (the token's offset) and d->err, and
 * returns:
 *   GPUFL_ENOTFOUND  t is JSONL_NOTFOUND or not a token of the last parse;
 *   GPUFL_EPARSE     the token has the wrong type ("not a number") or form
 *                    ("not an integer" for a fraction or exponent,
 *                    "negative value for unsigned");
 *   GPUFL_ETOOBIG    the value does not fit the result type or buffer.
 */

/* An integer in [0, 2^64 - 1]; "-0" is accepted as 0. */
int jsonl_tok_u64(jsonl_doc *d, uint32_t t, uint64_t *out);
/* An integer in [-2^63, 2^63 - 1]; "-0" is 0. */
int jsonl_tok_i64(jsonl_doc *d, uint32_t t, int64_t *out);
/*
 * Any number, correctly rounded.  When its decimal significand fits 53
 * bits and its decimal exponent is within +-22 (0.75, 1500, 2.5e-3: what
 * gpufl writes) it is converted in place with one exact IEEE operation;
 * otherwise by strtod() on a bounded copy, which follows LC_NUMERIC
 * (gpufl programs never change it from "C").  GPUFL_ETOOBIG for a number
 * that needs strtod() and is longer than JSONL_MAX_NUMBER bytes, or is
 * beyond the double range; numbers below it round to 0 or a subnormal.
 */
int jsonl_tok_f64(jsonl_doc *d, uint32_t t, double *out);
/* true or false: *out = 1 or 0. */
int jsonl_tok_bool(jsonl_doc *d, uint32_t t, int *out);

/*
 * The decoded string into buf[0, cap) (caller-owned), NUL-terminated, its
 * length without the NUL in *len.  The result is valid UTF-8 but may hold
 * NUL bytes (from \u0000): use *len, not strlen, when that matters.
 * GPUFL_ETOOBIG when the decoded length + 1 exceeds cap (buf is then
 * unspecified).  Never writes beyond cap.
 */
int jsonl_tok_str(jsonl_doc *d, uint32_t t, char *buf, size_t cap, size_t *len);

/*
 * 1 if token t is a string whose decoded value equals s[0, n), else 0
 * (also for JSONL_NOTFOUND and non-strings).  Compares the raw bytes when
 * the string has no escapes, decodes on the fly otherwise; no copy.
 */
int jsonl_tok_streq(const jsonl_doc *d, uint32_t t, const char *s, size_t n);

/* "object", "array", ... for messages; "none" for JSONL_NONE. */
const char *jsonl_type_name(jsonl_type type);

#endif
