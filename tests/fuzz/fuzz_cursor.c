/*
 * fuzz_cursor.c - libFuzzer target for the agent's cursor-file parser
 * (src/agent/cursor.c).
 *
 * Oracles beyond "does not crash":
 *   - version 2 is canonical, so whatever parses must format back to the
 *     very same bytes; a version 1 file formats as version 2 with the same
 *     entries, which must parse back to them;
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
    agent_cursor cur, again;
    size_t flen;
    char err[256], *fbuf = NULL;
    int rc;

    err[0] = '\0';
    rc = agent_cursor_parse(buf, len, &cur, err, sizeof err);
    if (rc) {
        FUZZ_ASSERT(rc == GPUFL_EPARSE || rc == GPUFL_ETOOBIG ||
                    rc == GPUFL_ENOMEM);
        FUZZ_ASSERT(cur.e == NULL && cur.n == 0 && cur.k == NULL &&
                    cur.nk == 0 && err[0]);
        return;
    }
    FUZZ_ASSERT(agent_cursor_format(&cur, &fbuf, &flen) == 0);
    if (len > 20 && buf[19] == '2') {
        FUZZ_ASSERT(flen == len && memcmp(fbuf, buf, len) == 0);
    } else {
        FUZZ_ASSERT(cur.nk == 0);
        FUZZ_ASSERT(agent_cursor_parse(fbuf, flen, &again, err, sizeof err) ==
                    0);
        FUZZ_ASSERT(again.n == cur.n && again.nk == 0);
        FUZZ_ASSERT(cur.n == 0 ||
                    memcmp(again.e, cur.e, cur.n * sizeof *cur.e) == 0);
        agent_cursor_release(&again);
    }
    free(fbuf);
    agent_cursor_release(&cur);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    size_t lines = 0, klines = 0, cap = size + 96;
    char *fixed;
    int w;

    check(in, size);
    if (size == 0 || in[size - 1] != '\n' || size > (1u << 20))
        return 0;
    /* the same body with a correct end line (version 2 counts files and
     * streams: "k " lines are streams) */
    for (size_t i = 0; i < size; i++)
        if (in[i] == '\n') {
            lines++;
            if (i + 2 < size && in[i + 1] == 'k' && in[i + 2] == ' ')
                klines++;
        }
    fixed = malloc(cap);
    if (!fixed)
        return 0;
    memcpy(fixed, in, size);
    if (size > 20 && in[19] == '2')
        w = snprintf(fixed + size, cap - size, "end %zu %zu %016llx\n",
                     lines - 1 - klines, klines,
                     (unsigned long long)agent_fp(in, size));
    else
        w = snprintf(fixed + size, cap - size, "end %zu %016llx\n", lines - 1,
                     (unsigned long long)agent_fp(in, size));
    if (w > 0 && (size_t)w < cap - size)
        check(fixed, size + (size_t)w);
    free(fixed);
    return 0;
}
