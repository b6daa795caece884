/*
 * fuzz_cursor.c - libFuzzer target for the agent's cursor-file parser
 * (src/agent/cursor.c).
 *
 * Oracles beyond "does not crash":
 *   - the format is canonical, so whatever parses must format back to the
 *     very same bytes;
 *   - a refusal always comes with a reason and no entries.
 * The checksum line would stop almost every mutation at the door, so each
 * input is also tried with a correct "end" line appended: that fuzzes the
 * entry grammar itself.
 */
#include "agent/cursor.h"

#include <gpufl/gpufl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "fuzz_cursor: %s:%d: %s\n", __FILE__, __LINE__,    \
                    #c);                                                       \
            abort();                                                           \
        }                                                                      \
    } while (0)

static void check(const char *buf, size_t len)
{
    agent_centry *e = NULL;
    size_t n = 0, flen;
    char err[256], *fbuf = NULL;
    int rc;

    err[0] = '\0';
    rc = agent_cursor_parse(buf, len, &e, &n, err, sizeof err);
    if (rc) {
        FUZZ_ASSERT(rc == GPUFL_EPARSE || rc == GPUFL_ETOOBIG ||
                    rc == GPUFL_ENOMEM);
        FUZZ_ASSERT(e == NULL && n == 0 && err[0]);
        return;
    }
    FUZZ_ASSERT(agent_cursor_format(e, n, &fbuf, &flen) == 0);
    FUZZ_ASSERT(flen == len && memcmp(fbuf, buf, len) == 0);
    free(fbuf);
    free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    size_t lines = 0, cap = size + 64;
    char *fixed;
    int w;

    check(in, size);
    if (size == 0 || in[size - 1] != '\n' || size > (1u << 20))
        return 0;
    /* the same body with a correct end line */
    for (size_t i = 0; i < size; i++)
        lines += in[i] == '\n';
    fixed = malloc(cap);
    if (!fixed)
        return 0;
    memcpy(fixed, in, size);
    w = snprintf(fixed + size, cap - size, "end %zu %016llx\n", lines - 1,
                 (unsigned long long)agent_fp(in, size));
    if (w > 0 && (size_t)w < cap - size)
        check(fixed, size + (size_t)w);
    free(fixed);
    return 0;
}
