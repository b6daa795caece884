/*
 * api_ingest.c - POST /api/v1/events/{stream}: checks the request, decodes
 * the body, validates each line, stores the good ones in one transaction
 * and answers only after the commit.
 *
 * A line that fails validation is reported (line number, reason) and the
 * rest of the batch still goes in; a database failure fails the whole
 * batch with 503 so the agent resends it, which is safe because stored
 * lines come back as duplicates.
 */
#include "ingest.h"
#include "ingest_par.h"
#include "srv_int.h"

#include <gpufl/gpufl.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "common/clock.h"
#include "common/log.h"

/* The most bytes of event array and string arena a worker thread keeps
 * between requests (see scratch_get): a 10 000-line batch takes ~9 MB,
 * so with the default --threads 4 at most 64 MB stay held. */
#define INGEST_KEEP_MAX (16u << 20)

/* application/x-ndjson (the agent's), and the common aliases; any
 * parameters (charset) are ignored - bodies are UTF-8 by the format. */
static int ctype_ok(const char *ct)
{
    static const char *const ok[] = { "application/x-ndjson",
                                      "application/ndjson", "application/jsonl",
                                      "application/x-jsonlines",
                                      "application/json" };
    size_t n;

    if (!ct)
        return 0;
    n = strcspn(ct, ";");
    while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
        n--;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (strlen(ok[i]) == n && strncasecmp(ct, ok[i], n) == 0)
            return 1;
    return 0;
}

/* The answer's errors array as lines are refused: INGEST_ERRORS_MAX
 * (ingest_par.h) itemised, the count always exact. */
typedef struct err_list {
    jw *w;
    size_t n;
    uint32_t first_line;
    char first[INGEST_REASON_MAX];
} err_list;

static void err_add(void *ctx, uint32_t line, const char *why)
{
    err_list *l = ctx;

    if (!l->n) {
        l->first_line = line;
        snprintf(l->first, sizeof(l->first), "%s", why);
    }
    /* why NULL: one of ingest_par's errors past those it kept, which
     * come after INGEST_ERRORS_MAX others: counted only */
    if (l->n++ < INGEST_ERRORS_MAX && why) {
        jw_obj_begin(l->w);
        jw_kv_u64(l->w, "line", line);
        jw_kv_str(l->w, "reason", why);
        jw_obj_end(l->w);
    }
}

/*
 * A streamed body (ingest_par_stream): the store takes its parts as the
 * helper parses them, so that parsing overlaps storing instead of coming
 * before it.  Each part is checked (srv_scope_part) as it is handed over
 * and kept, so that a second writing of the batch (its group failed)
 * gets the same parts.
 */
typedef struct ing_stream {
    srv *s;
    const char *hosts;
    srv_scope *scope;
    err_list *el; /* parse errors, as they come, in line order */
    /* the scope check's refusals, said after all parse errors (the order
     * a body checked whole gives) */
    ingest_errs se;
    ingest_err_kept se_kept[INGEST_ERRORS_MAX];
    struct {
        const srv_ev *ev;
        size_t n;
    } part[INGEST_PAR_PIECES];
    size_t nparts;
    int ended, rc; /* the last part taken (the helper given back); a
                    * part's failure, kept */
    uint64_t ns;   /* the time the writer spent getting parts */
} ing_stream;

static int stream_part(void *ctx, size_t k, const srv_ev **ev, size_t *n)
{
    ing_stream *x = ctx;
    uint64_t t0 = clock_mono_ns();
    int rc = 1;

    while (rc == 1 && k >= x->nparts) {
        srv_ev *e;
        size_t m;
        int last = 1;
        if (x->rc) {
            rc = -x->rc;
        } else if (x->ended) {
            rc = 0;
        } else if (!ingest_par_stream_next(x->s->par, &e, &m, &last, err_add,
                                           x->el)) {
            /* never: ended says when the stream is over (after its last
             * part the helper may be another request's) */
            x->ended = 1;
            x->rc = GPUFL_EINTERNAL;
            rc = -x->rc;
        } else {
            x->ended = last;
            if (m && (x->rc = srv_scope_part(x->s, x->scope, x->hosts, e, &m, 1,
                                             ingest_errs_keep, &x->se)) != 0) {
                rc = -x->rc;
                break;
            }
            x->part[x->nparts].ev = e;
            x->part[x->nparts++].n = m;
        }
    }
    if (rc == 1) {
        *ev = x->part[k].ev;
        *n = x->part[k].n;
    }
    x->ns += clock_mono_ns() - t0;
    return rc;
}

/* Stores a body ingest_par_stream started (nl lines at most); *whole set
 * when it must be checked and stored whole instead (nothing stored then,
 * the errors said so far to be forgotten). */
static int stream_body(srv *s, const char *hosts, size_t nl, err_list *el,
                       srv_ingest_res *res, int *whole)
{
    ing_stream *x = calloc(1, sizeof(*x));
    int rc;

    *whole = 0;
    if (!x || srv_scope_new(nl, &x->scope) != 0) {
        ingest_par_stream_end(s->par);
        free(x);
        return GPUFL_ENOMEM;
    }
    x->s = s;
    x->hosts = hosts;
    x->el = el;
    x->se.e = x->se_kept;
    rc = srv_store_ingest_parts(s->store, stream_part, x, nl, res);
    /* not after the last part: the helper may be another stream's now */
    if (!x->ended)
        ingest_par_stream_end(s->par);
    __atomic_fetch_add(&s->met.ingest_parse_ns, x->ns, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->met.ingest_streamed, 1, __ATOMIC_RELAXED);
    if (x->rc == GPUFL_ECONFLICT) {
        __atomic_fetch_add(&s->met.ingest_rewhole, 1, __ATOMIC_RELAXED);
        *whole = 1;
        rc = GPUFL_OK;
    } else if (!rc) {
        ingest_errs_say(&x->se, err_add, el);
    }
    srv_scope_free(x->scope);
    free(x);
    return rc;
}

/* The answer begun again: '{"errors":[' and no error said yet. */
static void errs_begin(jw *w, char *out, err_list *el)
{
    jw_init(w, out, 64 * 1024);
    memset(el, 0, sizeof(*el));
    el->w = w;
    jw_obj_begin(w);
    jw_key(w, "errors");
    jw_arr_begin(w);
}

/*
 * A worker thread's event array and string arena, kept from one request
 * to the next.  Allocated and freed per request, they were megabytes that
 * malloc handed back to the kernel and every request faulted in again:
 * a quarter of the server's CPU per ingested kernel (docs/server.md,
 * "Where ingest's CPU goes").  Each MHD worker thread serves one request
 * at a time, so a thread's buffers need no lock; a thread's exit frees
 * them (scratch_free).
 */
typedef struct ingest_scratch {
    srv_ev *ev;
    size_t nev; /* entries in ev */
    char *ar;
    size_t nar; /* bytes in ar */
} ingest_scratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_ok;

static void scratch_free(void *p)
{
    ingest_scratch *x = p;

    if (x) {
        free(x->ev);
        free(x->ar);
        free(x);
    }
}

static void scratch_init(void)
{
    scratch_ok = pthread_key_create(&scratch_key, scratch_free) == 0;
}

/* This thread's buffers, grown to nev events and nar arena bytes; NULL
 * when out of memory.  Their old contents are not kept. */
static ingest_scratch *scratch_get(size_t nev, size_t nar)
{
    ingest_scratch *x;

    pthread_once(&scratch_once, scratch_init);
    if (!scratch_ok)
        return NULL;
    x = pthread_getspecific(scratch_key);
    if (!x) {
        if (!(x = calloc(1, sizeof(*x))))
            return NULL;
        if (pthread_setspecific(scratch_key, x) != 0) {
            free(x);
            return NULL;
        }
    }
    if (x->nev < nev) {
        free(x->ev);
        x->nev = 0;
        if (!(x->ev = malloc(nev * sizeof(*x->ev))))
            return NULL;
        x->nev = nev;
    }
    if (x->nar < nar) {
        free(x->ar);
        x->nar = 0;
        if (!(x->ar = malloc(nar)))
            return NULL;
        x->nar = nar;
    }
    return x;
}

/* After a request: buffers over the cap go back (a rare huge batch does
 * not pin its memory). */
static void scratch_put(ingest_scratch *x)
{
    if (x && x->nev * sizeof(*x->ev) + x->nar > INGEST_KEEP_MAX) {
        free(x->ev);
        free(x->ar);
        x->ev = NULL;
        x->ar = NULL;
        x->nev = x->nar = 0;
    }
}

void srv_ingest_handle(srv *s, srv_req *r, int st, srv_resp *o)
{
    const char *ct = srv_req_header(r, "Content-Type");
    int enc = ingest_encoding(srv_req_header(r, "Content-Encoding"));
    char *body = NULL, *out = NULL;
    const char *text; /* the decoded body: r->body itself, or body */
    const char *why = NULL;
    size_t blen = 0, nl = 0, nev = 0;
    srv_ev *ev = NULL;
    jsonl_tok *tok = NULL;
    ingest_arena ar = { NULL, 0, 0 };
    ingest_scratch *sc = NULL;
    srv_ingest_res res = { 0, 0 };
    jw w;
    err_list el;
    uint64_t t0 = clock_mono_ns(), t1, parse_ns;
    int rc, streamed = 0;

    r->cls = MET_INGEST;
    if (!ctype_ok(ct)) {
        srv_resp_error(o, 415,
                       "Content-Type must be application/x-ndjson "
                       "(or application/json)");
        return;
    }
    if (enc < 0) {
        srv_resp_error(o, 415,
                       "Content-Encoding must be identity, gzip or "
                       "zstd");
        return;
    }
    if (enc == ENC_IDENTITY) {
        /* read where it lies: a copy cost a memcpy and fresh pages per
         * request, and ingest_decode's cap is checked here the same */
        text = r->body ? r->body : "";
        blen = r->body_len;
        rc = blen > s->cfg.max_decoded ? GPUFL_ETOOBIG : GPUFL_OK;
    } else {
        rc = ingest_decode(enc, r->body ? r->body : "", r->body_len,
                           s->cfg.max_decoded, &body, &blen, &why);
        text = body;
    }
    if (rc == GPUFL_ETOOBIG) {
        srv_resp_error(o, 413, "decoded body over the --max-decoded cap");
        return;
    }
    if (rc) {
        srv_resp_error(o, rc == GPUFL_ENOMEM ? 500 : 400,
                       rc == GPUFL_ENOMEM ? "out of memory" : why);
        return;
    }
    for (const char *p = text, *e = text + blen;
         (p = memchr(p, '\n', (size_t)(e - p))) != NULL; p++)
        nl++;
    nl++; /* a last line without '\n' */
    if (nl > s->cfg.max_lines + 1) {
        srv_resp_error(o, 413, "more lines than --max-lines");
        goto out;
    }
    tok = malloc(INGEST_MAX_TOKENS * sizeof(*tok));
    /* decoded strings are never longer than their JSON text, plus NULs */
    ar.cap = INGEST_PAR_ARENA(blen, nl);
    sc = scratch_get(nl, ar.cap);
    if (sc) {
        ev = sc->ev;
        ar.buf = sc->ar;
    }
    out = malloc(64 * 1024);
    if (!sc || !tok || !out) {
        srv_resp_error(o, 500, "out of memory");
        goto out;
    }
    /* a large body: parsed while it is stored (stream_body); one whose
     * scope needs all of it at once is parsed again, whole */
    errs_begin(&w, out, &el);
    t1 = clock_mono_ns();
    parse_ns = t1 - t0; /* the decode */
    if (ingest_par_stream(s->par, st, text, blen, nl, tok, &ar, ev)) {
        int whole;
        rc = stream_body(s, r->hosts, nl, &el, &res, &whole);
        if (rc)
            goto store_failed;
        streamed = !whole;
        if (whole) {
            errs_begin(&w, out, &el);
            ar.len = 0;
            res.accepted = res.duplicate = 0;
        }
    }
    if (!streamed) {
        t1 = clock_mono_ns();
        nev = ingest_par_body(s->par, st, text, blen, nl, tok, &ar, ev, err_add,
                              &el);
        /* what this key may write: its hosts, and no stream past its end */
        rc = nev ? srv_ingest_scope(s, r->hosts, ev, &nev, err_add, &el) : 0;
        if (rc) {
            srv_resp_error(o, rc == GPUFL_EUNAVAIL ? 503 : 500,
                           rc == GPUFL_EUNAVAIL ? "database unavailable; retry"
                                                : gpufl_strerror(rc));
            goto out;
        }
        parse_ns += clock_mono_ns() - t1;
    }
    jw_arr_end(&w);
    /* the agent gets the errors; the operator a line per request (the
     * lines are missing from their session's gaps from now on) */
    if (el.n && !s->cfg.quiet) {
        /* the body's lines: a last one without '\n' is one */
        size_t lines = blen && text[blen - 1] != '\n' ? nl : nl - 1;
        glog_field fl[3] = { GLOG_STR("stream", ingest_stream_name(st)),
                             GLOG_NUM("rejected", el.n),
                             GLOG_NUM("lines", lines) };
        glog_fields(GLOG_INFO, "ingest", fl, 3,
                    "%s batch: %zu of %zu line(s) rejected; line %u: %s",
                    ingest_stream_name(st), el.n, lines, el.first_line,
                    el.first);
    }
    /* decode, parse and scope: the request's own work besides the
     * store's (gpufl_ingest_seconds_total{phase="parse"}; a streamed
     * body's: its decode, then the time its writer spent getting parts,
     * stream_body) */
    __atomic_fetch_add(&s->met.ingest_parse_ns, parse_ns, __ATOMIC_RELAXED);
    if (!streamed && nev)
        rc = srv_store_ingest(s->store, ev, nev, &res);
store_failed:
    if (rc == GPUFL_EAGAIN) {
        /* a duplicate check that needed a cold block S3 cannot give:
         * nothing stored, the agent sends the batch again */
        srv_resp_error(o, 503, "cold storage (S3) unavailable; retry");
        goto out;
    }
    if (rc) {
        srv_resp_error(o, rc == GPUFL_EUNAVAIL ? 503 : 500,
                       rc == GPUFL_EUNAVAIL ? "database unavailable; retry"
                                            : gpufl_strerror(rc));
        goto out;
    }
    __atomic_fetch_add(&s->met.lines_accepted, res.accepted, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->met.lines_duplicate, res.duplicate,
                       __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->met.lines_rejected, el.n, __ATOMIC_RELAXED);
    __atomic_fetch_add(&s->met.batches, 1, __ATOMIC_RELAXED);
    jw_kv_u64(&w, "accepted", res.accepted);
    jw_kv_u64(&w, "duplicate", res.duplicate);
    jw_kv_u64(&w, "rejected", el.n);
    jw_kv_str(&w, "stream", ingest_stream_name(st));
    if (el.n > INGEST_ERRORS_MAX)
        jw_kv_u64(&w, "errors_truncated", el.n - INGEST_ERRORS_MAX);
    jw_obj_end(&w);
    if (w.err) {
        srv_resp_error(o, 500, "response too large");
        goto out;
    }
    srv_resp_json(o, 200, out, w.len);
    out = NULL;
out:
    free(out);
    scratch_put(sc);
    free(tok);
    free(body);
}
