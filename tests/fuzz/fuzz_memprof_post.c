/*
 * fuzz_memprof_post.c - libFuzzer target for the body of POST
 * /api/v1/memprof (srv_memprof_parse in src/server/api_memprof.c): a
 * memory profile from `gpufl memprof`, read by the server from anyone
 * holding an ingest key.
 *
 * Oracles beyond "does not crash": an accepted profile keeps every
 * promise the store relies on - pid in 1..2^32-1, start <= end < 2^63,
 * every counter and the profile's alloc/in-use totals below 2^63, at most
 * 20,000 stacks of 1..256 frames, each frames text a JSON array of
 * strings, a source the API names, a lower-case UUID or no sid; a refused
 * one says why with a 4xx/5xx status.
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
            fprintf(stderr, "fuzz_memprof_post: %s:%d: %s\n", __FILE__,        \
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static jsonl_tok tok[1 << 16];
    jsonl_tok ftok[260];
    jsonl_doc d, f;
    srv_memprof p;
    srv_memstack *stacks = NULL;
    char why[160] = "";
    int st;
    uint64_t alloc = 0, inuse = 0;

    jsonl_doc_init(&d, tok, sizeof tok / sizeof tok[0]);
    if (jsonl_doc_parse_obj(&d, (const char *)data, size))
        return 0;
    st = srv_memprof_parse(&d, &p, &stacks, why, sizeof why);
    if (st) {
        FUZZ_ASSERT(st == 400 || st == 413 || st == 500);
        FUZZ_ASSERT(why[0]);
        free(stacks);
        return 0;
    }
    FUZZ_ASSERT(p.host.p && p.host.n >= 1 && p.host.n <= 255);
    FUZZ_ASSERT(p.pid >= 1 && p.pid <= UINT32_MAX);
    FUZZ_ASSERT(p.start <= p.end && p.end <= (uint64_t)INT64_MAX);
    FUZZ_ASSERT((p.source.n == 4 && !memcmp(p.source.p, "ebpf", 4)) ||
                (p.source.n == 7 && !memcmp(p.source.p, "preload", 7)) ||
                (p.source.n == 9 && !memcmp(p.source.p, "simulated", 9)));
    FUZZ_ASSERT(!p.sid.p || is_uuid(p.sid.p, p.sid.n));
    FUZZ_ASSERT(p.n <= 20000 && (p.n == 0 || p.stacks == stacks));
    for (size_t i = 0; i < p.n; i++) {
        const srv_memstack *s = &p.stacks[i];
        for (int k = 0; k < 8; k++)
            FUZZ_ASSERT(s->v[k] <= (uint64_t)INT64_MAX);
        alloc += s->v[0];
        inuse += s->v[4];
        FUZZ_ASSERT(alloc <= (uint64_t)INT64_MAX &&
                    inuse <= (uint64_t)INT64_MAX);
        jsonl_doc_init(&f, ftok, sizeof ftok / sizeof ftok[0]);
        FUZZ_ASSERT(jsonl_doc_parse(&f, s->frames.p, s->frames.n) == GPUFL_OK);
        FUZZ_ASSERT(jsonl_tok_type(&f, 0) == JSONL_ARRAY);
        FUZZ_ASSERT(f.tok[0].n >= 1 && f.tok[0].n <= 256);
        for (uint32_t k = 0, x = 1; k < f.tok[0].n; k++, x = f.tok[x].next)
            FUZZ_ASSERT(jsonl_tok_type(&f, x) == JSONL_STRING);
    }
    free(stacks);
    return 0;
}
