/*
 * ingest_par.c - a request body's lines parsed on two cores.
 *
 * One connection sends a batch, waits for its 200, sends the next: while
 * the server parses and stores, the client and the second core are idle.
 * Parsing is half of a request's instructions (docs/server.md,
 * "h-litehttp") and each line parses alone, so the body is cut into
 * pieces of whole lines, each with its own part of the event array (at
 * its first line's index) and of the arena.  The connection thread and
 * the helper take the pieces in turn from one counter until none is
 * left; then the connection thread reports each piece's errors in piece
 * order and closes the gaps between the pieces' events.  A helper that
 * has not started by then (its core busy) is not waited for: the
 * connection thread has parsed every piece itself.  The store sees one
 * batch as before, so commit before the answer, idempotency and the group
 * commit are untouched.
 *
 * One helper for the server: on this project's 2-core machines a second
 * would have no core to run on.  A request that finds it busy (another
 * connection's body) parses alone rather than wait.
 */
#include "ingest_par.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A piece of the body: whole lines; written by whichever thread took it,
 * read by the connection thread once both are done. */
typedef struct par_piece {
    size_t off, len; /* text[off, off + len) */
    uint32_t line0;  /* the lines before it: its events go at ev + line0 */
    size_t ar_off;   /* its part of the arena: [ar_off, ar_off + ar_cap) */
    size_t ar_cap;
    size_t nev;       /* events made */
    ingest_errs errs; /* its refused lines */
} par_piece;

/* The helper's state for the job posted (under mu). */
enum { PAR_IDLE, PAR_POSTED, PAR_RUNNING, PAR_DONE };

struct ingest_par {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a job posted, a job done, stop */
    int claimed;       /* a request holds the helper (atomic) */
    int state, stop;
    unsigned long helped; /* items the helper ran (under mu) */
    jsonl_tok *tok;       /* the helper's own token buffer */
    /* the job: fn(ctx, i, who) for each i < njob, who 0 the poster, 1
     * the helper */
    ingest_par_fn fn;
    void *ctx;
    size_t njob;
    size_t next; /* the next i to take (atomic) */
    /* a body's parse (one such job): the pieces of text of stream st,
     * into ev and arena ar, the poster's tokens in ptok */
    int st;
    const char *text;
    char *ar;
    srv_ev *ev;
    jsonl_tok *ptok;
    size_t npiece;
    par_piece piece[INGEST_PAR_PIECES];
    ingest_err_kept *errs; /* INGEST_ERRORS_MAX a piece */
    /* a streamed body (ingest_par_stream): each piece's done flag (under
     * mu, cv broadcast as one is set) and the next piece to hand out */
    int streaming;
    unsigned char done[INGEST_PAR_PIECES];
    size_t out;
    /* pieces a part when fixed (GPUFL_SERVER_PAR_STEP; 0: the first
     * INGEST_PAR_STREAM_FIRST, then INGEST_PAR_STREAM_STEP, plus those
     * parsed already after them) */
    size_t step_fixed;
};

/* The lines of text[0, len) parsed in order into ev (one thread); returns
 * the events made.  The loop api_ingest.c had: a blank line (or one
 * space) is skipped and still counted. */
static size_t parse_lines(jsonl_doc *d, int st, const char *text, size_t len,
                          uint32_t line0, ingest_arena *ar, srv_ev *ev,
                          ingest_err_fn err, void *ctx)
{
    size_t pos = 0, n, nev = 0;
    uint32_t lineno = line0;
    char reason[INGEST_REASON_MAX];
    const char *line;

    for (;;) {
        if (!jsonl_line_next(text, len, &pos, &line, &n) &&
            !jsonl_line_tail(text, len, &pos, &line, &n))
            break;
        lineno++;
        if (n == 0 || (n == 1 && line[0] == ' '))
            continue;
        if (ingest_line_parse(d, st, line, n, ar, &ev[nev], reason) ==
            GPUFL_OK) {
            ev[nev++].line = lineno;
            continue;
        }
        err(ctx, lineno, reason);
    }
    return nev;
}

void ingest_errs_keep(void *ctx, uint32_t line, const char *why)
{
    ingest_errs *k = ctx;

    if (k->n < INGEST_ERRORS_MAX) {
        ingest_err_kept *e = &k->e[k->n];
        size_t n = strlen(why);
        if (n >= sizeof(e->why))
            n = sizeof(e->why) - 1;
        memcpy(e->why, why, n);
        e->why[n] = '\0';
        e->line = line;
    }
    k->n++;
}

void ingest_errs_say(const ingest_errs *k, ingest_err_fn err, void *ctx)
{
    for (size_t i = 0; i < k->n; i++)
        err(ctx, i < INGEST_ERRORS_MAX ? k->e[i].line : 0,
            i < INGEST_ERRORS_MAX ? k->e[i].why : NULL);
}

/* Piece j of the body posted, by who's tokens. */
static void parse_piece(void *ctx, size_t j, int who)
{
    ingest_par *p = ctx;
    par_piece *c = &p->piece[j];
    ingest_arena a = { p->ar + c->ar_off, 0, c->ar_cap };
    jsonl_doc d;

    jsonl_doc_init(&d, who ? p->tok : p->ptok, INGEST_MAX_TOKENS);
    c->errs.n = 0;
    c->nev = parse_lines(&d, p->st, p->text + c->off, c->len, c->line0, &a,
                         p->ev + c->line0, ingest_errs_keep, &c->errs);
}

/* A streamed body's piece j parsed: the caller may be waiting for it
 * (a lock and a broadcast a piece, 64 at most a body). */
static void piece_done(ingest_par *p, size_t j)
{
    pthread_mutex_lock(&p->mu);
    p->done[j] = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* The job's items taken until none is left (either thread); returns
 * how many this thread ran. */
static size_t take_jobs(ingest_par *p, int who)
{
    size_t j, n = 0;

    while ((j = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED)) < p->njob) {
        p->fn(p->ctx, j, who);
        if (p->streaming)
            piece_done(p, j);
        n++;
    }
    return n;
}

static void *helper(void *arg)
{
    ingest_par *p = arg;
    size_t ran;

    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->state != PAR_POSTED && !p->stop)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop)
            break;
        p->state = PAR_RUNNING;
        pthread_mutex_unlock(&p->mu);
        /* the job's fields are the poster's until the state is DONE */
        ran = take_jobs(p, 1);
        pthread_mutex_lock(&p->mu);
        p->helped += ran;
        p->state = PAR_DONE;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* GPUFL_SERVER_PAR_FAIL=1 (tests only): the helper's pthread_create
 * fails, as it does when the process is out of threads or memory, so a
 * test can check that the server still stores every line on the
 * connection threads alone (test_server.py Durability). */
static int create_helper(ingest_par *p)
{
    const char *f = getenv("GPUFL_SERVER_PAR_FAIL");

    if (f && !strcmp(f, "1"))
        return EAGAIN;
    return pthread_create(&p->th, NULL, helper, p);
}

/* GPUFL_SERVER_PAR_STEP=N (tests only, 1 to 64): a streamed body's parts
 * are N pieces each, never more, so that a test knows a body of more
 * than N pieces comes in several parts however fast the helper is. */
static void par_step(ingest_par *p)
{
    const char *v = getenv("GPUFL_SERVER_PAR_STEP");
    long n = v ? strtol(v, NULL, 10) : 0;

    p->step_fixed = n >= 1 && n <= INGEST_PAR_PIECES ? (size_t)n : 0;
}

int ingest_par_new(ingest_par **out)
{
    ingest_par *p = calloc(1, sizeof(*p));

    *out = NULL;
    if (!p || !(p->tok = malloc(INGEST_MAX_TOKENS * sizeof(*p->tok))) ||
        !(p->errs = malloc(INGEST_PAR_PIECES * INGEST_ERRORS_MAX *
                           sizeof(*p->errs)))) {
        if (p)
            free(p->tok);
        free(p);
        return GPUFL_ENOMEM;
    }
    for (size_t j = 0; j < INGEST_PAR_PIECES; j++)
        p->piece[j].errs.e = p->errs + j * INGEST_ERRORS_MAX;
    par_step(p);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (create_helper(p) != 0) {
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        free(p->errs);
        free(p->tok);
        free(p);
        return GPUFL_EINTERNAL;
    }
    *out = p;
    return GPUFL_OK;
}

void ingest_par_free(ingest_par *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->th, NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->errs);
    free(p->tok);
    free(p);
}

/* text[0, len) cut into pieces of whole lines of at least
 * max(INGEST_PAR_PIECE, len / INGEST_PAR_PIECES) bytes (so at most
 * INGEST_PAR_PIECES), the last one whatever is left; returns how many.
 * A piece of k line ends holds at most k + 1 lines (the last one's tail),
 * the others exactly k; its arena part is what the one-thread bound
 * gives k + 1 lines, plus 16. */
static size_t cut_pieces(ingest_par *p, const char *text, size_t len)
{
    size_t t = len / INGEST_PAR_PIECES + 1, off = 0, aoff = 0, n = 0;
    uint32_t line0 = 0;

    if (t < INGEST_PAR_PIECE)
        t = INGEST_PAR_PIECE;
    while (off < len && n < INGEST_PAR_PIECES) {
        const char *cut = NULL;
        size_t end = len, k = 0;
        if (len - off > t && n + 1 < INGEST_PAR_PIECES)
            cut = memchr(text + off + t - 1, '\n', len - (off + t - 1));
        if (cut)
            end = (size_t)(cut - text) + 1;
        for (const char *q = text + off;
             (q = memchr(q, '\n', (size_t)(text + end - q))) != NULL; q++)
            k++;
        p->piece[n] = (par_piece){ off,
                                   end - off,
                                   line0,
                                   aoff,
                                   end - off + 16 * k + 32,
                                   0,
                                   { p->piece[n].errs.e, 0 } };
        aoff += p->piece[n].ar_cap;
        line0 += (uint32_t)k;
        off = end;
        n++;
    }
    return n;
}

/* The job (fn, ctx, njob set, the helper claimed) posted to the helper. */
static void post(ingest_par *p)
{
    pthread_mutex_lock(&p->mu);
    p->next = 0;
    p->state = PAR_POSTED;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* The posted job's items left taken by the caller, the helper waited for
 * (the helper stays claimed). */
static void join(ingest_par *p)
{
    take_jobs(p, 0);
    pthread_mutex_lock(&p->mu);
    if (p->state == PAR_POSTED)
        p->state = PAR_IDLE; /* it never started: nothing to wait for */
    while (p->state == PAR_RUNNING)
        pthread_cond_wait(&p->cv, &p->mu);
    p->state = PAR_IDLE;
    pthread_mutex_unlock(&p->mu);
}

int ingest_par_post(ingest_par *p, size_t n, ingest_par_fn fn, void *ctx)
{
    if (!p || n < 2 || __atomic_exchange_n(&p->claimed, 1, __ATOMIC_ACQUIRE))
        return 0;
    p->fn = fn;
    p->ctx = ctx;
    p->njob = n;
    post(p);
    return 1;
}

void ingest_par_join(ingest_par *p)
{
    join(p);
    __atomic_store_n(&p->claimed, 0, __ATOMIC_RELEASE);
}

unsigned long ingest_par_helped(ingest_par *p)
{
    unsigned long n;

    pthread_mutex_lock(&p->mu);
    n = p->helped;
    pthread_mutex_unlock(&p->mu);
    return n;
}

/* Pieces [a, b) parsed: their errors said in line order, their events
 * moved down to close the gaps the pieces left (each piece's events start
 * at its first line's index; only where lines were refused or skipped),
 * so they lie from ev + piece a's first line on; returns how many.
 * Pieces after b, maybe still being parsed, are not touched. */
static size_t gather(ingest_par *p, size_t a, size_t b, ingest_err_fn err,
                     void *ctx)
{
    srv_ev *base = p->ev + p->piece[a].line0;
    size_t nev = 0;

    for (size_t j = a; j < b; j++) {
        const par_piece *c = &p->piece[j];
        ingest_errs_say(&c->errs, err, ctx);
        if (base + nev != p->ev + c->line0 && c->nev)
            memmove(base + nev, p->ev + c->line0, c->nev * sizeof(*base));
        nev += c->nev;
    }
    return nev;
}

/* The job of parsing a body's pieces (the helper claimed), not posted. */
static void body_job(ingest_par *p, int st, const char *text, size_t len,
                     jsonl_tok *tok, ingest_arena *ar, srv_ev *ev)
{
    p->npiece = cut_pieces(p, text, len);
    p->st = st;
    p->text = text;
    p->ar = ar->buf + ar->len;
    p->ev = ev;
    p->ptok = tok;
    p->fn = parse_piece;
    p->ctx = p;
    p->njob = p->npiece;
}

size_t ingest_par_body(ingest_par *p, int st, const char *text, size_t len,
                       size_t nl, jsonl_tok *tok, ingest_arena *ar, srv_ev *ev,
                       ingest_err_fn err, void *ctx)
{
    size_t nev = 0;
    jsonl_doc d;

    if (!p || nl < INGEST_PAR_MIN_LINES || len < 2 * INGEST_PAR_PIECE ||
        __atomic_exchange_n(&p->claimed, 1, __ATOMIC_ACQUIRE)) {
        jsonl_doc_init(&d, tok, INGEST_MAX_TOKENS);
        return parse_lines(&d, st, text, len, 0, ar, ev, err, ctx);
    }
    body_job(p, st, text, len, tok, ar, ev);
    post(p);
    join(p);
    nev = gather(p, 0, p->npiece, err, ctx);
    ar->len = ar->cap;
    __atomic_store_n(&p->claimed, 0, __ATOMIC_RELEASE);
    return nev;
}

/* ---- a body streamed: parsed while the caller stores its parts ---- */

int ingest_par_stream(ingest_par *p, int st, const char *text, size_t len,
                      size_t nl, jsonl_tok *tok, ingest_arena *ar, srv_ev *ev)
{
    if (!p || nl < INGEST_PAR_MIN_LINES ||
        len < INGEST_PAR_STREAM_PIECES * INGEST_PAR_PIECE ||
        __atomic_exchange_n(&p->claimed, 1, __ATOMIC_ACQUIRE))
        return 0;
    body_job(p, st, text, len, tok, ar, ev);
    memset(p->done, 0, sizeof(p->done));
    p->out = 0;
    p->streaming = 1;
    ar->len = ar->cap;
    post(p);
    return 1;
}

/* Piece j parsed: while it is not, the caller parses the pieces nobody
 * has taken yet (the helper may be late or busy), then waits for the
 * helper's. */
static void wait_piece(ingest_par *p, size_t j)
{
    pthread_mutex_lock(&p->mu);
    while (!p->done[j]) {
        size_t k;
        pthread_mutex_unlock(&p->mu);
        k = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
        if (k < p->njob) {
            parse_piece(p, k, 0);
            piece_done(p, k);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        pthread_mutex_lock(&p->mu);
        while (!p->done[j])
            pthread_cond_wait(&p->cv, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
}

/* The helper's last piece waited for and the helper given back. */
static void stream_finish(ingest_par *p)
{
    join(p);
    p->streaming = 0;
    __atomic_store_n(&p->claimed, 0, __ATOMIC_RELEASE);
}

int ingest_par_stream_next(ingest_par *p, srv_ev **ev, size_t *n, int *last,
                           ingest_err_fn err, void *ctx)
{
    size_t a = p->out, b, want, step;

    *ev = NULL;
    *n = 0;
    *last = 1;
    if (!p->streaming || a >= p->npiece)
        return 0; /* a caller's bug: its stream is over */
    step = p->step_fixed ? p->step_fixed
           : a           ? INGEST_PAR_STREAM_STEP
                         : INGEST_PAR_STREAM_FIRST;
    want = a + step;
    if (want > p->npiece)
        want = p->npiece;
    for (size_t j = a; j < want; j++)
        wait_piece(p, j);
    /* and those after them already parsed: fewer, larger parts */
    b = want;
    pthread_mutex_lock(&p->mu);
    while (!p->step_fixed && b < p->npiece && p->done[b])
        b++;
    pthread_mutex_unlock(&p->mu);
    *n = gather(p, a, b, err, ctx);
    *ev = p->ev + p->piece[a].line0;
    p->out = b;
    /* the last part: the helper is free again for the store's block
     * encoding (store_sql_kblocks_par.c) or another request's body, so
     * from here on p is not this stream's */
    *last = b == p->npiece;
    if (*last)
        stream_finish(p);
    return 1;
}

void ingest_par_stream_end(ingest_par *p)
{
    if (!p || !p->streaming)
        return; /* never streamed (a caller's bug otherwise) */
    /* pieces nobody took are not parsed: the caller gives up the body */
    __atomic_store_n(&p->next, p->njob, __ATOMIC_RELAXED);
    stream_finish(p);
}
