/*
 * fuzz_capture_post.c - libFuzzer target for the bodies of the capture
 * routes (src/server/api_capture.c): POST /api/v1/hosts/{host}/captures
 * (srv_capture_parse, read from admins) and POST .../captures/{id}/result
 * (srv_capture_result_parse, read from an agent's ingest key).  Each
 * input goes to both.
 *
 * Oracles beyond "does not crash": an accepted request is a dump (no
 * duration) or a trace of 1 ms to 24 h, for no pid or one in
 * 1..4194304, with no note or a printable ASCII one of at most 200
 * bytes; an accepted result has ok 0 or 1, a reason with no NUL inside,
 * and no processes or a JSON array of objects of at most 16 KiB that
 * parses again on its own; a refusal says why.
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
            fprintf(stderr, "fuzz_capture_post: %s:%d: %s\n", __FILE__,        \
                    __LINE__, #c);                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

static void request(jsonl_doc *d)
{
    srv_capture c;
    char action[16], note[SRV_CAPTURE_NOTE_MAX + 1], why[200] = "";

    memset(&c, 0, sizeof c);
    if (srv_capture_parse(d, &c, action, note, why, sizeof why)) {
        FUZZ_ASSERT(why[0]);
        return;
    }
    FUZZ_ASSERT(c.action == action);
    FUZZ_ASSERT(!strcmp(action, "dump") || !strcmp(action, "trace"));
    if (!strcmp(action, "dump"))
        FUZZ_ASSERT(c.for_ms == 0);
    else
        FUZZ_ASSERT(c.for_ms >= 1 && c.for_ms <= 24ull * 3600000);
    FUZZ_ASSERT(c.pid >= 0 && c.pid <= 4194304);
    if (c.note) {
        size_t n = strlen(c.note);
        FUZZ_ASSERT(c.note == note && n >= 1 && n <= SRV_CAPTURE_NOTE_MAX);
        for (size_t i = 0; i < n; i++)
            FUZZ_ASSERT(note[i] >= 0x20 && note[i] <= 0x7e);
    }
}

static void result(jsonl_doc *d)
{
    static jsonl_tok tok[1 << 14];
    char reason[SRV_CAPTURE_REASON_MAX + 1], why[200] = "";
    srv_str ps;
    jsonl_doc a;
    int ok = -1;

    if (srv_capture_result_parse(d, &ok, reason, sizeof reason, &ps, why,
                                 sizeof why)) {
        FUZZ_ASSERT(why[0]);
        return;
    }
    FUZZ_ASSERT(ok == 0 || ok == 1);
    FUZZ_ASSERT(strlen(reason) <= SRV_CAPTURE_REASON_MAX);
    if (!ps.p)
        return;
    FUZZ_ASSERT(ps.n <= SRV_CAPTURE_RESULT_MAX);
    jsonl_doc_init(&a, tok, sizeof tok / sizeof tok[0]);
    FUZZ_ASSERT(jsonl_doc_parse(&a, ps.p, ps.n) == GPUFL_OK);
    FUZZ_ASSERT(jsonl_tok_type(&a, 0) == JSONL_ARRAY);
    for (uint32_t k = 0, x = 1; k < a.tok[0].n; k++, x = a.tok[x].next)
        FUZZ_ASSERT(jsonl_tok_type(&a, x) == JSONL_OBJECT);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static jsonl_tok tok[1 << 14];
    jsonl_doc d;

    jsonl_doc_init(&d, tok, sizeof tok / sizeof tok[0]);
    if (jsonl_doc_parse_obj(&d, (const char *)data, size))
        return 0;
    request(&d);
    result(&d);
    return 0;
}
