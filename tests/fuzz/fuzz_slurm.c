/*
 * fuzz_slurm.c - libFuzzer target for the Slurm parsers of the idle
 * detector (src/idle/idle_slurm.c): `scontrol show job -d` text as
 * idle_slurm_parse reads it, and the host lists ("gpu[01-04,07]") its
 * Nodes= lines name.  The first byte picks the node the text is read
 * for; the rest is scontrol's answer (or, for selector 3, a host list).
 *
 * Oracles beyond "does not crash" (UBSan included):
 *   - parse: never more jobs than asked for nor than "JobId=" records;
 *     each job has a decimal id that a record line of the text starts
 *     with, a user without the "(uid)" part, and at least one GPU (GRES
 *     indices up to IDLE_MAX_GPUS - 1 fit the mask: UBSan checks the
 *     shifts);
 *   - the same text parsed twice gives the same jobs;
 *   - hostlist: a name that is a plain item of the list (no brackets
 *     anywhere) is in it; an empty name never is.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idle/idle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "fuzz_slurm: %s:%d: %s\n", __FILE__, __LINE__,     \
                    #c);                                                       \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define FUZZ_JOBS 8

/* Records in text: lines that start with "JobId=". */
static int records(const char *p, size_t n)
{
    int k = 0;
    for (size_t i = 0; i + 6 <= n; i++)
        if ((i == 0 || p[i - 1] == '\n') && !memcmp(p + i, "JobId=", 6))
            k++;
    return k;
}

/* Does a line of text start with "JobId=<id>" followed by a blank, a
 * newline, a NUL (where the parser's copy of the line ends) or the end? */
static int has_record(const char *p, size_t n, const char *id)
{
    size_t il = strlen(id);
    for (size_t i = 0; i + 6 + il <= n; i++)
        if ((i == 0 || p[i - 1] == '\n') && !memcmp(p + i, "JobId=", 6) &&
            !memcmp(p + i + 6, id, il) &&
            (i + 6 + il == n || strchr(" \n", p[i + 6 + il])))
            return 1;
    return 0;
}

static void fuzz_parse(const char *p, size_t n, const char *node)
{
    idle_slurm_job a[FUZZ_JOBS], b[FUZZ_JOBS];
    int k = idle_slurm_parse(p, n, node, a, FUZZ_JOBS);
    FUZZ_ASSERT(k >= 0 && k <= FUZZ_JOBS && k <= records(p, n));
    for (int i = 0; i < k; i++) {
        const idle_slurm_job *j = &a[i];
        FUZZ_ASSERT(j->id[0] && strspn(j->id, "0123456789") == strlen(j->id));
        FUZZ_ASSERT(has_record(p, n, j->id));
        FUZZ_ASSERT(!strchr(j->user, '(') && !strchr(j->user, ' '));
        FUZZ_ASSERT(j->gpus != 0);
    }
    FUZZ_ASSERT(idle_slurm_parse(p, n, node, b, FUZZ_JOBS) == k);
    FUZZ_ASSERT(!k || !memcmp(a, b, (size_t)k * sizeof a[0]));
}

static void fuzz_hostlist(const char *p, size_t n)
{
    char name[64];
    size_t first = 0;
    FUZZ_ASSERT(!idle_slurm_hostlist_has(p, n, ""));
    if (memchr(p, '[', n) || memchr(p, ']', n))
        return;
    /* the first item, whatever the rest holds */
    while (first < n && p[first] != ',')
        first++;
    if (!first || first >= sizeof name || memchr(p, 0, first))
        return;
    memcpy(name, p, first);
    name[first] = 0;
    FUZZ_ASSERT(idle_slurm_hostlist_has(p, n, name));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data + 1;
    if (size < 1)
        return 0;
    /* the corpus's selector bytes are 0..3 and stay what they were */
    switch (data[0] % 4) {
    case 0: fuzz_parse(p, size - 1, "vm"); break;
    case 1: fuzz_parse(p, size - 1, "gpu07"); break;
    case 2: fuzz_parse(p, size - 1, "n12x"); break;
    default: fuzz_hostlist(p, size - 1); break;
    }
    return 0;
}
