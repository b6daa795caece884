/*
 * test_srv_ingest_par.c - a body parsed on two threads (ingest_par.c)
 * gives what one thread gives: the same events in order with the same
 * line numbers and decoded strings, the same errors in line order (the
 * first INGEST_ERRORS_MAX with their reasons, the count exact), for
 * bodies with refused, blank and CRLF lines across its pieces, with and
 * without a last '\n', and while two requests want the helper; and the
 * same streamed (ingest_par_stream: parts in line order while the helper
 * parses on), taken at once or slowly, or given up after a part.
 */
#include "ingest_par.h"
#include "test.h"

#include <gpufl/gpufl.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SID "\"sid\":\"0f1e2d3c-4b5a-4968-8776-655443322110\""
#define MAXL 4000

/* What a parse reported, as api_ingest.c's err_add keeps it. */
typedef struct errs {
    size_t n, kept;
    uint32_t line[INGEST_ERRORS_MAX];
    char why[INGEST_ERRORS_MAX][INGEST_REASON_MAX];
    int bad_null; /* a why NULL before INGEST_ERRORS_MAX others */
} errs;

static void err_keep(void *ctx, uint32_t line, const char *why)
{
    errs *e = ctx;

    if (!why && e->n < INGEST_ERRORS_MAX)
        e->bad_null = 1;
    if (e->n++ < INGEST_ERRORS_MAX && why) {
        e->line[e->kept] = line;
        snprintf(e->why[e->kept], INGEST_REASON_MAX, "%s", why);
        e->kept++;
    }
}

typedef struct result {
    srv_ev *ev;
    size_t nev;
    char *ar;
    errs er;
} result;

static uint64_t rng = 88172645463325252ull;

static uint32_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* A body of nl lines; bad_from..bad_to (line indexes) refused at the
 * rate 1 in bad_every (0: none), some blank, some CRLF, names with
 * escapes (the arena).  *len set; last_nl: end with '\n'. */
static char *make_body(size_t nl, size_t bad_from, size_t bad_to,
                       unsigned bad_every, int last_nl, size_t *len)
{
    char *b = malloc(nl * 400 + 16), *p = b, *e = b + nl * 400 + 16;

    for (size_t i = 0; i < nl; i++) {
        uint32_t r = next();
        int bad =
            bad_every && i >= bad_from && i < bad_to && r % bad_every == 0;
        if (r % 97 == 1)
            p += snprintf(p, (size_t)(e - p), "%s", r % 2 ? "" : " ");
        else if (bad && r % 3 == 0)
            p += snprintf(p, (size_t)(e - p),
                          "{\"v\":1," SID ",\"st\":\"device\",\"seq\":%zu",
                          i); /* cut short */
        else if (bad)
            p += snprintf(p, (size_t)(e - p),
                          "{\"v\":1," SID ",\"st\":\"scope\",\"seq\":%zu,"
                          "\"ts\":5,\"type\":\"kernel\",\"dur\":%u}",
                          i, r % 5000); /* the wrong stream */
        else if (r % 5 == 0)
            p += snprintf(p, (size_t)(e - p),
                          "{\"v\":1," SID ",\"st\":\"device\",\"seq\":%zu,"
                          "\"ts\":5,\"type\":\"dict\",\"id\":%u,\"kind\":"
                          "\"name\",\"name\":\"k\\u00e9_%u\\\"%.*s\"}",
                          i, r % 1000 + 1, r, (int)(r % 40),
                          "abcdefghijklmnopqrstuvwxyz0123456789ABCD");
        else
            p += snprintf(p, (size_t)(e - p),
                          "{\"v\":1," SID ",\"st\":\"device\",\"seq\":%zu,"
                          "\"ts\":%u,\"type\":\"kernel\",\"stream\":%u,"
                          "\"corr\":5,\"cfg\":52,\"grid\":[%u,2],\"dur\":%u,"
                          "\"api\":[-11082,6236],\"name\":%u}",
                          i, r, r % 7, r % 9000 + 1, r % 100000, r % 200);
        if (i + 1 < nl || last_nl)
            p +=
                snprintf(p, (size_t)(e - p), "%s", r % 11 == 3 ? "\r\n" : "\n");
    }
    *len = (size_t)(p - b);
    return b;
}

static size_t count_nl(const char *t, size_t len)
{
    size_t nl = 0;

    for (const char *q = t; (q = memchr(q, '\n', (size_t)(t + len - q))); q++)
        nl++;
    return nl + 1;
}

static void run(ingest_par *p, const char *text, size_t len, result *r)
{
    size_t nl = count_nl(text, len);
    static __thread jsonl_tok tok[INGEST_MAX_TOKENS];
    ingest_arena ar;

    memset(r, 0, sizeof(*r));
    r->ev = calloc(nl, sizeof(*r->ev));
    ar.cap = INGEST_PAR_ARENA(len, nl);
    ar.len = 0;
    ar.buf = r->ar = malloc(ar.cap);
    r->nev = ingest_par_body(p, SRV_ST_DEVICE, text, len, nl, tok, &ar, r->ev,
                             err_keep, &r->er);
}

/* run() through ingest_par_stream: the parts' events copied one after
 * another (a store would take them in turn), each part after pause_us
 * (a slow store: the helper runs ahead and the parts grow); returns the
 * parts given, 0 when the stream did not start (then one call parsed
 * it, as api_ingest.c does). */
static size_t run_stream(ingest_par *p, const char *text, size_t len, result *r,
                         unsigned pause_us)
{
    size_t nl = count_nl(text, len), parts = 0, n;
    static __thread jsonl_tok tok[INGEST_MAX_TOKENS];
    ingest_arena ar;
    srv_ev *ev, *part;

    memset(r, 0, sizeof(*r));
    r->ev = calloc(nl, sizeof(*r->ev));
    ev = calloc(nl, sizeof(*ev));
    ar.cap = INGEST_PAR_ARENA(len, nl);
    ar.len = 0;
    ar.buf = r->ar = malloc(ar.cap);
    if (!ingest_par_stream(p, SRV_ST_DEVICE, text, len, nl, tok, &ar, ev)) {
        r->nev = ingest_par_body(p, SRV_ST_DEVICE, text, len, nl, tok, &ar,
                                 r->ev, err_keep, &r->er);
        free(ev);
        return 0;
    }
    for (int last = 0; !last;) {
        CHECK(ingest_par_stream_next(p, &part, &n, &last, err_keep, &r->er) ==
              1);
        /* a part lies in the body's array, at or after the last one */
        CHECK(part >= ev && part + n <= ev + nl);
        memcpy(r->ev + r->nev, part, n * sizeof(*part));
        r->nev += n;
        parts++;
        if (pause_us)
            usleep(pause_us);
    }
    CHECK(ar.len == ar.cap);
    free(ev);
    return parts;
}

static void result_release(result *r)
{
    free(r->ev);
    free(r->ar);
}

static int str_eq(srv_str a, srv_str b)
{
    return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

/* 1 if b is what a says, event by event and error by error. */
static int same(const result *a, const result *b)
{
    if (a->nev != b->nev || a->er.n != b->er.n || a->er.kept != b->er.kept ||
        a->er.bad_null || b->er.bad_null)
        return 0;
    for (size_t i = 0; i < a->nev; i++) {
        const srv_ev *x = &a->ev[i], *y = &b->ev[i];
        if (x->line != y->line || x->type != y->type || x->seq != y->seq ||
            x->ts != y->ts || x->dur != y->dur || x->id != y->id ||
            x->grid[0] != y->grid[0] || !str_eq(x->dname, y->dname) ||
            strcmp(x->sid, y->sid) != 0)
            return 0;
    }
    for (size_t i = 0; i < a->er.kept; i++)
        if (a->er.line[i] != b->er.line[i] ||
            strcmp(a->er.why[i], b->er.why[i]) != 0)
            return 0;
    return 1;
}

static void check_body(ingest_par *p, size_t nl, size_t bad_from, size_t bad_to,
                       unsigned bad_every, int last_nl)
{
    size_t len;
    char *text = make_body(nl, bad_from, bad_to, bad_every, last_nl, &len);
    result one, two;

    run(NULL, text, len, &one);
    /* streamed, taken at once and by a slow store: the same again */
    for (unsigned pause = 0; pause <= 300; pause += 300) {
        size_t parts = run_stream(p, text, len, &two, pause);
        if (!same(&one, &two))
            fprintf(stderr, "  streamed (%zu parts) differs: %zu lines\n",
                    parts, nl);
        CHECK(same(&one, &two));
        /* a body of INGEST_PAR_STREAM_PIECES pieces or more streams
         * (in one part when the helper was ahead: all parsed by the time
         * the first four were); one under them does not (p NULL: never) */
        CHECK((parts > 0) ==
              (p && len >= INGEST_PAR_STREAM_PIECES * INGEST_PAR_PIECE));
        result_release(&two);
    }
    run(p, text, len, &two);
    if (!same(&one, &two))
        fprintf(stderr,
                "  differs: %zu lines, bad %zu-%zu 1/%u, last_nl %d: events "
                "%zu / %zu, errors %zu / %zu\n",
                nl, bad_from, bad_to, bad_every, last_nl, one.nev, two.nev,
                one.er.n, two.er.n);
    CHECK(same(&one, &two));
    /* the body had the lines it was made with */
    CHECK(one.nev > 0 || (bad_every == 1 && bad_from == 0 && bad_to >= nl));
    CHECK((one.er.n > 0) == (bad_every > 0));
    if (getenv("TEST_VERBOSE"))
        fprintf(stderr, "  %zu lines: %zu events, %zu errors\n", nl, one.nev,
                one.er.n);
    if (getenv("TEST_VERBOSE") && one.er.kept)
        fprintf(stderr, "  line %u: %s\n", one.er.line[0], one.er.why[0]);
    result_release(&one);
    result_release(&two);
    free(text);
}

static void test_same_as_one_thread(void)
{
    ingest_par *p;

    REQUIRE(ingest_par_new(&p) == GPUFL_OK);
    for (int last_nl = 0; last_nl < 2; last_nl++) {
        /* below the threshold, at it, and big */
        check_body(p, 10, 0, 0, 0, last_nl);
        check_body(p, INGEST_PAR_MIN_LINES, 0, 0, 0, last_nl);
        check_body(p, 3000, 0, 0, 0, last_nl);
        /* refused lines in the first half's pieces, the second's, all */
        check_body(p, 3000, 0, 1500, 7, last_nl);
        check_body(p, 3000, 1500, 3000, 7, last_nl);
        check_body(p, 3000, 0, 3000, 3, last_nl);
        /* more than INGEST_ERRORS_MAX in the second half, and some in
         * the first: the itemised ones run across pieces; all refused:
         * more than INGEST_ERRORS_MAX in one piece */
        check_body(p, 3000, 1450, 3000, 2, last_nl);
        check_body(p, 1000, 480, 530, 1, last_nl);
        check_body(p, MAXL, 0, MAXL, 1, last_nl);
    }
    ingest_par_free(p);
    ingest_par_free(NULL);
}

/* Two requests at once: one has the helper, the other parses alone;
 * both get what one thread gives. */
typedef struct job {
    ingest_par *p;
    const char *text;
    size_t len;
    result r;
} job;

static void *run_job(void *arg)
{
    job *j = arg;

    for (int i = 0; i < 20; i++) {
        result r;
        run(j->p, j->text, j->len, &r);
        if (i == 0)
            j->r = r;
        else {
            if (!same(&j->r, &r))
                j->r.er.bad_null = 1; /* marks a difference */
            result_release(&r);
        }
    }
    return NULL;
}

/* A stream given up after its first part (api_ingest.c, when a part's
 * scope check needs the whole body): the helper is free again and the
 * body parses whole the same. */
static void test_stream_abandoned(void)
{
    ingest_par *p;
    size_t len, nl, n;
    char *text = make_body(MAXL, 100, MAXL, 9, 1, &len);
    static jsonl_tok tok[INGEST_MAX_TOKENS];
    ingest_arena ar;
    srv_ev *ev, *part;
    result one, two;
    errs er;
    int last = 0;

    REQUIRE(ingest_par_new(&p) == GPUFL_OK);
    nl = count_nl(text, len);
    ev = calloc(nl, sizeof(*ev));
    ar.cap = INGEST_PAR_ARENA(len, nl);
    ar.len = 0;
    ar.buf = malloc(ar.cap);
    memset(&er, 0, sizeof(er));
    run(NULL, text, len, &one);
    REQUIRE(ingest_par_stream(p, SRV_ST_DEVICE, text, len, nl, tok, &ar, ev));
    /* the first part (a few of the 64 pieces: the rest is given up
     * unless the helper parsed them all meanwhile) */
    CHECK(ingest_par_stream_next(p, &part, &n, &last, err_keep, &er) == 1);
    CHECK(n > 0 && n <= one.nev);
    /* the helper is claimed: another request parses alone, the same */
    run(p, text, len, &two);
    CHECK(same(&one, &two));
    result_release(&two);
    if (!last)
        ingest_par_stream_end(p);
    /* the helper is back: a stream starts, and gives what one thread
     * gives */
    CHECK(run_stream(p, text, len, &two, 0) > 0);
    CHECK(same(&one, &two));
    result_release(&two);
    result_release(&one);
    free(ar.buf);
    free(ev);
    ingest_par_free(p);
    free(text);
}

static void test_two_requests(void)
{
    ingest_par *p;
    size_t len;
    char *text = make_body(3000, 0, 3000, 5, 1, &len);
    job j[2];
    pthread_t th[2];
    result one;

    REQUIRE(ingest_par_new(&p) == GPUFL_OK);
    run(NULL, text, len, &one);
    for (int t = 0; t < 2; t++) {
        j[t] = (job){ p, text, len, { 0 } };
        REQUIRE(pthread_create(&th[t], NULL, run_job, &j[t]) == 0);
    }
    for (int t = 0; t < 2; t++) {
        pthread_join(th[t], NULL);
        CHECK(same(&one, &j[t].r));
        result_release(&j[t].r);
    }
    result_release(&one);
    ingest_par_free(p);
    free(text);
}

/* The helper's thread failing to start (GPUFL_SERVER_PAR_FAIL stands in
 * for pthread_create's EAGAIN): no handle, nothing leaked (ASan), and the
 * callers' NULL parses and runs items on their own thread. */
static void test_no_helper(void)
{
    ingest_par *p = (ingest_par *)1;

    setenv("GPUFL_SERVER_PAR_FAIL", "1", 1);
    CHECK(ingest_par_new(&p) == GPUFL_EINTERNAL);
    CHECK(p == NULL);
    unsetenv("GPUFL_SERVER_PAR_FAIL");
    CHECK(ingest_par_post(p, 8, NULL, NULL) == 0);
    check_body(p, 3000, 0, 1500, 7, 1);
}

int main(void)
{
    RUN(test_same_as_one_thread);
    RUN(test_two_requests);
    RUN(test_stream_abandoned);
    RUN(test_no_helper);
    TEST_DONE();
}
