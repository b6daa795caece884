/*
 * ingest_par.c - a request body's lines parsed on two cores.
 *
 * One connection sends a batch, waits for its 200, sends the next: while
 * the server parses and stores, the client and the second core are idle.
 * Parsing is a fifth of a batch's time (docs/server.md, "h-litehttp") and
 * each line parses alone, so the body is cut at the first line end past
 * its middle: the helper thread parses the second half into the upper
 * part of the event array and arena while the connection thread parses
 * the first, then the connection thread reports the helper's errors
 * after its own and closes the gap between the halves' events.  The store
 * sees one batch as before, so commit before the answer, idempotency and
 * the group commit are untouched.
 *
 * One helper for the server: on this project's 2-core machines a second
 * would have no core to run on.  A request that finds it busy (another
 * connection's half) parses alone rather than wait.
 */
#include "ingest_par.h"

#include <gpufl/gpufl.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* One kept error of the helper's half. */
typedef struct par_err {
    uint32_t line;
    char why[INGEST_REASON_MAX];
} par_err;

struct ingest_par {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a job posted, a job done, stop */
    int claimed;       /* a request holds the helper (atomic) */
    int posted, done, stop;
    jsonl_tok *tok; /* the helper's own token buffer */
    /* the job: parse text[0, len) of stream st, its first line numbered
     * line0 + 1, into ev with arena ar */
    int st;
    const char *text;
    size_t len;
    uint32_t line0;
    ingest_arena ar;
    srv_ev *ev;
    /* its outcome */
    size_t nev, nerr;
    par_err err[INGEST_ERRORS_MAX];
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

/* The helper's errors: kept in full up to INGEST_ERRORS_MAX, counted
 * past it (nerr is the count). */
static void keep_err(void *ctx, uint32_t line, const char *why)
{
    ingest_par *p = ctx;

    if (p->nerr < INGEST_ERRORS_MAX) {
        par_err *e = &p->err[p->nerr];
        size_t n = strlen(why);
        if (n >= sizeof(e->why))
            n = sizeof(e->why) - 1;
        memcpy(e->why, why, n);
        e->why[n] = '\0';
        e->line = line;
    }
    p->nerr++;
}

static void *helper(void *arg)
{
    ingest_par *p = arg;
    jsonl_doc d;

    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->posted && !p->stop)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop)
            break;
        p->posted = 0;
        pthread_mutex_unlock(&p->mu);
        /* the job's fields are the poster's until done is set */
        jsonl_doc_init(&d, p->tok, INGEST_MAX_TOKENS);
        p->nerr = 0;
        p->nev = parse_lines(&d, p->st, p->text, p->len, p->line0, &p->ar,
                             p->ev, keep_err, p);
        pthread_mutex_lock(&p->mu);
        p->done = 1;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int ingest_par_new(ingest_par **out)
{
    ingest_par *p = calloc(1, sizeof(*p));

    *out = NULL;
    if (!p || !(p->tok = malloc(INGEST_MAX_TOKENS * sizeof(*p->tok)))) {
        free(p);
        return GPUFL_ENOMEM;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (pthread_create(&p->th, NULL, helper, p) != 0) {
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
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
    free(p->tok);
    free(p);
}

size_t ingest_par_body(ingest_par *p, int st, const char *text, size_t len,
                       size_t nl, jsonl_tok *tok, ingest_arena *ar, srv_ev *ev,
                       ingest_err_fn err, void *ctx)
{
    const char *cut;
    size_t half, k = 0, n1, cap1;
    jsonl_doc d;

    jsonl_doc_init(&d, tok, INGEST_MAX_TOKENS);
    /* the first line end at or past the middle: the first half is whole
     * lines, the second starts a line (an empty one when the body ends
     * there) */
    cut = nl >= INGEST_PAR_MIN_LINES
              ? memchr(text + len / 2, '\n', len - len / 2)
              : NULL;
    if (!p || !cut || __atomic_exchange_n(&p->claimed, 1, __ATOMIC_ACQUIRE))
        return parse_lines(&d, st, text, len, 0, ar, ev, err, ctx);
    half = (size_t)(cut - text) + 1;
    for (const char *q = text; (q = memchr(q, '\n', (size_t)(cut - q))) != NULL;
         q++)
        k++;
    k++; /* the line ending at cut */
    /* each half's strings within its own part of the arena (the bound
     * INGEST_PAR_ARENA sums) */
    cap1 = half + 16 * k + 16;
    pthread_mutex_lock(&p->mu);
    p->st = st;
    p->text = text + half;
    p->len = len - half;
    p->line0 = (uint32_t)k;
    p->ar =
        (ingest_arena){ ar->buf + ar->len + cap1, 0, ar->cap - ar->len - cap1 };
    p->ev = ev + k;
    p->done = 0;
    p->posted = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    {
        ingest_arena a1 = { ar->buf + ar->len, 0, cap1 };
        n1 = parse_lines(&d, st, text, half, 0, &a1, ev, err, ctx);
    }
    pthread_mutex_lock(&p->mu);
    while (!p->done)
        pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
    /* the helper's errors after the first half's, in line order */
    for (size_t i = 0; i < p->nerr; i++)
        err(ctx, i < INGEST_ERRORS_MAX ? p->err[i].line : 0,
            i < INGEST_ERRORS_MAX ? p->err[i].why : NULL);
    /* the halves' events made one run (a gap only where the first half
     * refused or skipped lines) */
    if (n1 < k && p->nev)
        memmove(ev + n1, ev + k, p->nev * sizeof(*ev));
    n1 += p->nev;
    ar->len = ar->cap;
    __atomic_store_n(&p->claimed, 0, __ATOMIC_RELEASE);
    return n1;
}
