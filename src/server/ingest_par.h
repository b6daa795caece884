/*
 * ingest_par.h - a request body's lines parsed on two cores: the
 * connection thread and a helper thread take its pieces of whole lines
 * one after another until none is left (ingest_par.c).
 *
 * The same helper runs other independent items of a request
 * (ingest_par_post).
 *
 * The result is what one thread parsing the body front to back gives:
 * the same events in the same order with the same line numbers, and the
 * same errors reported in line order.  Only parsing is split; the store
 * still gets the whole batch in one call and one transaction, after
 * both halves are done.
 */
#ifndef GPUFL_SERVER_INGEST_PAR_H
#define GPUFL_SERVER_INGEST_PAR_H

#include <stddef.h>
#include <stdint.h>

#include "ingest.h"

/* Errors of one piece kept in full (line and reason) to be reported in
 * line order once all pieces are parsed: an ingest answer itemises at
 * most this many in all (api_ingest.c), so a piece's errors past it are
 * reported for their count only (line 0, why NULL). */
#define INGEST_ERRORS_MAX 50

/* Fewer lines than this are parsed by the connection thread alone: the
 * helper's wake-up (a futex round trip, tens of microseconds) would cost
 * more than half of their parse. */
#define INGEST_PAR_MIN_LINES 256

/* Most pieces a body is cut into (each at least INGEST_PAR_PIECE bytes):
 * enough that a helper that starts late, or not at all, leaves little
 * for the connection thread to wait on. */
#define INGEST_PAR_PIECES 64
#define INGEST_PAR_PIECE (16u * 1024)

/* Bytes of arena ingest_par_body needs for a body of len bytes and nl
 * lines: each piece's decoded strings are at most its JSON text plus 16
 * bytes a line (NULs; a piece of k line ends may hold k + 1 lines), plus
 * 16 for the piece, as the one-thread bound gives each. */
#define INGEST_PAR_ARENA(len, nl)                                              \
    ((len) + 16 * (size_t)(nl) + 32 * (size_t)(INGEST_PAR_PIECES + 1))

typedef struct ingest_par ingest_par;

/* A refused line: err(ctx, line, why) (why borrowed for the call). */
typedef void (*ingest_err_fn)(void *ctx, uint32_t line, const char *why);

/* Refused lines kept to be said later, in order: the first
 * INGEST_ERRORS_MAX in full (e has room for them), the rest counted (n
 * is the count).  ingest_errs_keep is an ingest_err_fn (ctx an
 * ingest_errs); ingest_errs_say says them to err, those past
 * INGEST_ERRORS_MAX as line 0 and why NULL. */
typedef struct ingest_err_kept {
    uint32_t line;
    char why[INGEST_REASON_MAX];
} ingest_err_kept;
typedef struct ingest_errs {
    ingest_err_kept *e;
    size_t n;
} ingest_errs;
void ingest_errs_keep(void *ctx, uint32_t line, const char *why);
void ingest_errs_say(const ingest_errs *k, ingest_err_fn err, void *ctx);

/* Starts the helper thread (*out); GPUFL_ENOMEM or GPUFL_EINTERNAL when
 * it cannot be had (then *out is NULL and bodies are parsed by one
 * thread). */
int ingest_par_new(ingest_par **out);

/* Stops and joins the helper; NULL is allowed.  No ingest_par_body may
 * be running. */
void ingest_par_free(ingest_par *p);

/*
 * Parses the lines of text[0, len) (nl of them, as counted by '\n', plus
 * one) of stream st into ev (room for nl events; ev[i].line set, 1-based)
 * and returns how many; refused lines go to err in line order.  tok is
 * the caller's token buffer (INGEST_MAX_TOKENS), ar its arena of at
 * least INGEST_PAR_ARENA(len, nl) bytes; the events point into ar and
 * text, both borrowed.  With p NULL, a body under INGEST_PAR_MIN_LINES
 * lines or the helper busy with another request's body, the caller's
 * thread parses it all; so it does when the helper has not started by
 * the time the caller has parsed every piece (it is not waited for).
 */
size_t ingest_par_body(ingest_par *p, int st, const char *text, size_t len,
                       size_t nl, jsonl_tok *tok, ingest_arena *ar, srv_ev *ev,
                       ingest_err_fn err, void *ctx);

/*
 * A body streamed (api_ingest.c): the helper parses its pieces in order
 * while the caller stores the parts already parsed, so that parse and
 * store overlap instead of taking turns.  ingest_par_stream claims the
 * helper and starts it on the body (arguments as ingest_par_body's) and
 * returns 1, or returns 0 having started nothing (p NULL, a body under
 * INGEST_PAR_STREAM_PIECES pieces or INGEST_PAR_MIN_LINES lines, the
 * helper busy): then the caller uses ingest_par_body.
 *
 * ingest_par_stream_next gives the next part in line order: its events
 * (*ev, *n; compacted in place, maybe none) and its refused lines said to
 * err first, and returns 1; *last set on the last part.  A part is the
 * next INGEST_PAR_STREAM_FIRST pieces (the first part) or
 * INGEST_PAR_STREAM_STEP (the others), or those left, plus the pieces
 * after them already parsed; while they are not parsed, the caller
 * parses the pieces nobody has taken and then waits for the helper's.
 * A part's events stay where they are (and valid) until the body's
 * buffers are released.
 *
 * Giving the last part gives the helper back: another request may start
 * its own stream at once, so after a *last the caller calls neither
 * function again for this body (p is no longer its stream).
 *
 * ingest_par_stream_end gives the helper back before the last part (a
 * caller that abandons the stream); pieces not yet taken are not parsed.
 */
#define INGEST_PAR_STREAM_PIECES 16
#define INGEST_PAR_STREAM_FIRST 4
#define INGEST_PAR_STREAM_STEP 8
int ingest_par_stream(ingest_par *p, int st, const char *text, size_t len,
                      size_t nl, jsonl_tok *tok, ingest_arena *ar, srv_ev *ev);
int ingest_par_stream_next(ingest_par *p, srv_ev **ev, size_t *n, int *last,
                           ingest_err_fn err, void *ctx);
void ingest_par_stream_end(ingest_par *p);

/* One item of a job: who is 0 on the caller's thread, 1 on the helper's
 * (for per-thread state). */
typedef void (*ingest_par_fn)(void *ctx, size_t i, int who);

/*
 * Other independent items of a request on the helper (the store's kernel
 * blocks encoded: store_sql_kblocks_par.c), the caller free for other
 * work meanwhile.  ingest_par_post starts the helper on fn(ctx, i, 1) for
 * i < n and returns 1, or returns 0 having started nothing (p NULL, n < 2
 * or the helper busy with another request: the caller runs the items
 * itself).  After a 1, ingest_par_join runs the items the helper has not
 * taken on the caller's thread (who 0) and waits for it.  Which thread
 * runs which item, and in what order, is not fixed; between the two calls
 * the caller must not touch what the items write.
 */
int ingest_par_post(ingest_par *p, size_t n, ingest_par_fn fn, void *ctx);
void ingest_par_join(ingest_par *p);

/* The items the helper has run so far (for tests: that a split ran). */
unsigned long ingest_par_helped(ingest_par *p);

#endif
