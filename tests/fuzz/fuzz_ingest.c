/*
 * fuzz_ingest.c - libFuzzer target for gpufl-server's ingest boundary
 * (src/server/ingest.c): body decoding and the event line parser.
 *
 * The first input byte picks the stream and the content encoding; the
 * rest is a request body.  Oracles beyond "does not crash":
 *   - an accepted line has a well-formed envelope (36-char sid of hex and
 *     dashes, the chosen stream, a known type, ts > 0, seq < 2^63);
 *   - every decoded string lies inside the arena, which is never written
 *     past its end (a guard region after it must stay intact);
 *   - ev->raw is exactly the line given;
 *   - parsing the same line twice gives the same answer;
 *   - decoding never returns more than the cap;
 *   - a session's job members are within their bounds (rank < world_size).
 */
#include "ingest.h"

#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ARENA (1u << 20)
#define FUZZ_GUARD 64
#define FUZZ_DECODE_CAP (4u << 20)

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: oracle failed: %s\n", __FILE__, __LINE__,  \
                    #c);                                                       \
            abort();                                                           \
        }                                                                      \
    } while (0)

static void check_str(const srv_str *s, const ingest_arena *a)
{
    if (!s->p)
        return;
    FUZZ_ASSERT(s->p >= a->buf && s->p + s->n < a->buf + a->cap);
    FUZZ_ASSERT(s->p[s->n] == '\0');
}

static void check_ev(const srv_ev *e, int st, const char *line, size_t n,
                     const ingest_arena *a)
{
    FUZZ_ASSERT(strlen(e->sid) == 36);
    for (int i = 0; i < 36; i++)
        FUZZ_ASSERT(e->sid[i] == '-' ||
                    (e->sid[i] >= '0' && e->sid[i] <= '9') ||
                    (e->sid[i] >= 'a' && e->sid[i] <= 'f'));
    FUZZ_ASSERT(e->st == st);
    FUZZ_ASSERT(e->type >= EV_SESSION && e->type < EV_NTYPES);
    FUZZ_ASSERT(e->ts > 0 && e->ts <= (uint64_t)INT64_MAX);
    FUZZ_ASSERT(e->seq <= (uint64_t)INT64_MAX);
    FUZZ_ASSERT(e->raw.p == line && e->raw.n == n);
    check_str(&e->app, a);
    check_str(&e->host, a);
    check_str(&e->kind, a);
    check_str(&e->reason, a);
    check_str(&e->lim, a);
    check_str(&e->text, a);
    check_str(&e->dname, a);
    /* a session's job members: in the arena, within their caps, ranks
     * below the cap and below the world size when both are given */
    check_str(&e->job, a);
    check_str(&e->job_source, a);
    check_str(&e->step_scope, a);
    check_str(&e->sim_perturb, a);
    FUZZ_ASSERT(!e->job.p || e->job.n <= INGEST_JOB_MAX);
    FUZZ_ASSERT(!e->step_scope.p || e->step_scope.n <= INGEST_JOB_MAX);
    FUZZ_ASSERT(e->rank < SRV_JOB_RANK_MAX &&
                e->world_size < SRV_JOB_RANK_MAX &&
                e->local_rank < SRV_JOB_RANK_MAX);
    if ((e->job_set & SRV_JOB_RANK) && (e->job_set & SRV_JOB_WORLD))
        FUZZ_ASSERT(e->rank < e->world_size);
    FUZZ_ASSERT(e->type == EV_SESSION ||
                (!e->job.p && !e->job_set && !e->sim_perturb.p));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static jsonl_tok *tok;
    static char *arena;
    static srv_ev ev, ev2;
    char why[INGEST_REASON_MAX], why2[INGEST_REASON_MAX];
    char *body = NULL;
    size_t blen = 0, pos = 0, n;
    const char *line;
    ingest_arena a;
    jsonl_doc d;
    int st, enc, rc;

    if (!tok) {
        tok = malloc(INGEST_MAX_TOKENS * sizeof(*tok));
        arena = malloc(FUZZ_ARENA + FUZZ_GUARD);
        if (!tok || !arena)
            abort();
    }
    if (size < 1)
        return 0;
    st = data[0] % SRV_ST_N;
    enc = (data[0] >> 2) % 3;
    rc = ingest_decode(enc, (const char *)data + 1, size - 1, FUZZ_DECODE_CAP,
                       &body, &blen, NULL);
    if (rc) {
        FUZZ_ASSERT(body == NULL);
        FUZZ_ASSERT(rc == GPUFL_EPARSE || rc == GPUFL_ETOOBIG ||
                    rc == GPUFL_ENOMEM);
        return 0;
    }
    FUZZ_ASSERT(blen <= FUZZ_DECODE_CAP);
    memset(arena + FUZZ_ARENA, 0xA5, FUZZ_GUARD);
    jsonl_doc_init(&d, tok, INGEST_MAX_TOKENS);
    for (;;) {
        if (!jsonl_line_next(body, blen, &pos, &line, &n) &&
            !jsonl_line_tail(body, blen, &pos, &line, &n))
            break;
        a.buf = arena;
        a.len = 0;
        a.cap = FUZZ_ARENA;
        rc = ingest_line_parse(&d, st, line, n, &a, &ev, why);
        FUZZ_ASSERT(a.len <= a.cap);
        if (rc == GPUFL_OK) {
            check_ev(&ev, st, line, n, &a);
        } else {
            FUZZ_ASSERT(why[0] != '\0');
            FUZZ_ASSERT(strlen(why) < INGEST_REASON_MAX);
            FUZZ_ASSERT(a.len == 0);
        }
        a.len = 0;
        FUZZ_ASSERT(ingest_line_parse(&d, st, line, n, &a, &ev2, why2) == rc);
        if (rc == GPUFL_OK)
            FUZZ_ASSERT(ev2.seq == ev.seq && ev2.type == ev.type &&
                        ev2.ts == ev.ts);
    }
    for (int i = 0; i < FUZZ_GUARD; i++)
        FUZZ_ASSERT((unsigned char)arena[FUZZ_ARENA + i] == 0xA5);
    free(body);
    return 0;
}
