/*
 * fuzz_memoom_post.c - libFuzzer target for the body of POST
 * /api/v1/memprof/oom (srv_memoom_parse in src/server/api_memoom.c): an
 * OOM report from `gpufl memprof --oom`, read by the server from anyone
 * holding an ingest key, checked and rewritten into the text that GET
 * /api/v1/memory/ooms/{id} answers as it is.
 *
 * Oracles beyond "does not crash": a refused report says why with a
 * 400/413/500; an accepted one keeps every promise the store and the
 * answers rely on - host of 1..255 bytes, pid in 1..2^32-1, ts, bytes
 * and live bytes below 2^63, a source and a device source the API names,
 * a device index -1 or an int, a lower-case UUID or no sid - and its
 * rewritten text is a JSON object that, checked again, is accepted and
 * rewritten into the very same bytes and columns (the stored form is a
 * fixed point: what GET answers would be accepted by POST unchanged).
 */
#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "srv_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "fuzz_memoom_post: %s:%d: %s\n", __FILE__,         \
                    __LINE__, #c);                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

static int is_uuid(const char *s, size_t n)
{
    if (n != 36)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-')
                return 0;
        } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return 0;
        }
    }
    return 1;
}

static int is_word(srv_str s, const char *a, const char *b, const char *c)
{
    const char *w[3] = { a, b, c };
    for (int i = 0; i < 3; i++)
        if (s.n == strlen(w[i]) && !memcmp(s.p, w[i], s.n))
            return 1;
    return 0;
}

static int same_str(srv_str a, srv_str b)
{
    if (!a.p || !b.p)
        return !a.p && !b.p;
    return a.n == b.n && !memcmp(a.p, b.p, a.n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static jsonl_tok tok[1 << 16];
    jsonl_tok *tok2 = NULL;
    jsonl_doc d, d2;
    srv_memoom p, p2;
    gbuf out, out2;
    char why[200] = "", why2[200] = "";
    int st;

    jsonl_doc_init(&d, tok, sizeof tok / sizeof tok[0]);
    if (jsonl_doc_parse_obj(&d, (const char *)data, size))
        return 0;
    st = srv_memoom_parse(&d, &p, &out, why, sizeof why);
    if (st) {
        FUZZ_ASSERT(st == 400 || st == 413 || st == 500);
        FUZZ_ASSERT(why[0]);
        gbuf_release(&out);
        return 0;
    }
    FUZZ_ASSERT(p.host.p && p.host.n >= 1 && p.host.n <= 255);
    FUZZ_ASSERT(p.pid >= 1 && p.pid <= UINT32_MAX);
    FUZZ_ASSERT(p.ts <= (uint64_t)INT64_MAX);
    FUZZ_ASSERT(p.bytes <= (uint64_t)INT64_MAX);
    FUZZ_ASSERT(p.live_bytes <= (uint64_t)INT64_MAX);
    FUZZ_ASSERT(is_word(p.source, "ebpf", "preload", "simulated"));
    FUZZ_ASSERT(is_word(p.dev_source, "driver", "nvml", "unknown"));
    FUZZ_ASSERT(p.dev >= -1 && p.dev <= INT32_MAX);
    FUZZ_ASSERT(!p.have_mem || (p.free_bytes <= (uint64_t)INT64_MAX &&
                                p.total_bytes <= (uint64_t)INT64_MAX));
    FUZZ_ASSERT(!p.sid.p || is_uuid(p.sid.p, p.sid.n));
    FUZZ_ASSERT(!p.comm.p || (p.comm.n >= 1 && p.comm.n <= 255));
    FUZZ_ASSERT(p.api.p && p.api.n >= 1 && p.api.n <= 64);
    FUZZ_ASSERT(p.body == out.p && p.body_len == out.len && p.body_len > 0);

    /* the rewritten text: an object, accepted again unchanged (every
     * token takes at least one byte of it) */
    tok2 = malloc((p.body_len + 2) * sizeof *tok2);
    FUZZ_ASSERT(tok2);
    jsonl_doc_init(&d2, tok2, (uint32_t)(p.body_len + 2));
    FUZZ_ASSERT(jsonl_doc_parse_obj(&d2, p.body, p.body_len) == GPUFL_OK);
    st = srv_memoom_parse(&d2, &p2, &out2, why2, sizeof why2);
    if (st)
        fprintf(stderr, "fuzz_memoom_post: rewritten text refused: %d %s\n", st,
                why2);
    FUZZ_ASSERT(st == 0);
    FUZZ_ASSERT(p2.body_len == p.body_len &&
                !memcmp(p2.body, p.body, p.body_len));
    FUZZ_ASSERT(same_str(p.host, p2.host) && same_str(p.comm, p2.comm) &&
                same_str(p.sid, p2.sid) && same_str(p.source, p2.source) &&
                same_str(p.api, p2.api) &&
                same_str(p.dev_source, p2.dev_source));
    FUZZ_ASSERT(p.pid == p2.pid && p.ts == p2.ts && p.bytes == p2.bytes &&
                p.live_bytes == p2.live_bytes && p.dev == p2.dev &&
                p.have_mem == p2.have_mem && p.simulated == p2.simulated);
    FUZZ_ASSERT(!p.have_mem || (p.free_bytes == p2.free_bytes &&
                                p.total_bytes == p2.total_bytes));
    gbuf_release(&out2);
    free(tok2);
    gbuf_release(&out);
    return 0;
}
