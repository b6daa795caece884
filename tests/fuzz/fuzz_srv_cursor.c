/*
 * fuzz_srv_cursor.c - libFuzzer target for the server's pagination
 * cursors (src/server/cursor.c): the one piece of a query string that the
 * server decodes into SQL parameters.
 *
 * The first byte picks how many integers the cursor must hold (1..4, as
 * the query endpoints use); the rest is the cursor text.  Oracles:
 *   - a cursor that decodes is canonical: encoding its integers gives the
 *     very same text (one spelling per cursor);
 *   - a refusal is a refusal every time (no state between calls);
 *   - any integers encode to a cursor that decodes back to them.
 */
#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "fuzz_srv_cursor: %s:%d: %s\n", __FILE__,          \
                    __LINE__, #c);                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[256], again[256];
    int64_t v[4], w[4];
    int n;

    if (size < 1 || size - 1 >= sizeof text)
        return 0;
    n = 1 + data[0] % 4;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    for (int i = 0; i < 4; i++)
        v[i] = w[i] = (int64_t)0x5a5a5a5a5a5a5a5aull;
    if (srv_cursor_decode(text, v, n) == GPUFL_OK) {
        FUZZ_ASSERT(srv_cursor_encode(v, n, again, sizeof again) == GPUFL_OK);
        FUZZ_ASSERT(strcmp(again, text) == 0);
    } else {
        FUZZ_ASSERT(srv_cursor_decode(text, w, n) != GPUFL_OK);
    }
    /* the input bytes as integers: encode, decode, compare */
    memset(w, 0, sizeof w);
    memcpy(w, data + 1, size - 1 < sizeof w ? size - 1 : sizeof w);
    FUZZ_ASSERT(srv_cursor_encode(w, n, again, sizeof again) == GPUFL_OK);
    FUZZ_ASSERT(srv_cursor_decode(again, v, n) == GPUFL_OK);
    FUZZ_ASSERT(memcmp(v, w, (size_t)n * sizeof v[0]) == 0);
    return 0;
}
