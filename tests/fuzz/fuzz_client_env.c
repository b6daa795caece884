/*
 * fuzz_client_env.c - libFuzzer target for libgpufl's GPUFL_* environment
 * (src/client/options.c's env_table, read with the option engine's value
 * parsers).  The first byte picks the variable, the rest (to the first NUL)
 * is its value; gpufl_options_init() reads it as a program would.
 *
 * Oracles beyond "does not crash":
 *   - an accepted value, written back in its canonical form (sizes in
 *     bytes, durations with their unit, levels as words), is accepted again
 *     to the same field value;
 *   - a refused value makes gpufl_options_init() return GPUFL_EINVAL, leaves
 *     the field at its default and names the variable in gpufl_last_error();
 *   - no other field changes either way.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gpufl/gpufl.h>

#include "client/client_int.h"
#include "common/opt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "fuzz_client_env: %s:%d: %s\n", __FILE__,          \
                    __LINE__, #c);                                             \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* Field i of a and b hold the same value (as the engine writes it). */
static int same(const opt_def *r, const gpufl_options *a,
                const gpufl_options *b)
{
    char x[128], y[128];
    const char *s = opt_value_str(r, a, x, sizeof x);
    const char *t = opt_value_str(r, b, y, sizeof y);
    return (!s && !t) || (s && t && !strcmp(s, t));
}

/* Every field but row `except` as in def. */
static void others_default(const gpufl_options *o, const gpufl_options *def,
                           const opt_def *except)
{
    const opt_prog *p = &client_env_prog;
    for (size_t i = 0; i < p->n; i++)
        if (&p->opts[i] != except)
            FUZZ_ASSERT(same(&p->opts[i], o, def));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const opt_prog *p = &client_env_prog;
    static int cleared;
    const opt_def *r;
    gpufl_options def, o, o2;
    char v[512], canon[128];
    size_t n;
    int rc;

    if (!cleared) {
        for (size_t i = 0; i < p->n; i++)
            unsetenv(p->opts[i].env);
        cleared = 1;
    }
    if (!size)
        return 0;
    r = &p->opts[data[0] % p->n];
    n = size - 1 < sizeof v - 1 ? size - 1 : sizeof v - 1;
    memcpy(v, data + 1, n);
    v[n] = '\0';
    FUZZ_ASSERT(gpufl_options_init(&def) == GPUFL_OK);
    FUZZ_ASSERT(setenv(r->env, v, 1) == 0);
    rc = gpufl_options_init(&o);
    if (rc == GPUFL_OK) {
        const char *c = opt_value_str(r, &o, canon, sizeof canon);
        others_default(&o, &def, r);
        if (c) {
            /* c may point into the environment: copy before setenv */
            char keep[512];
            snprintf(keep, sizeof keep, "%s", c);
            FUZZ_ASSERT(setenv(r->env, keep, 1) == 0);
            FUZZ_ASSERT(gpufl_options_init(&o2) == GPUFL_OK);
            c = opt_value_str(r, &o2, canon, sizeof canon);
            FUZZ_ASSERT(c && !strcmp(c, keep));
        }
    } else {
        FUZZ_ASSERT(rc == GPUFL_EINVAL);
        FUZZ_ASSERT(strstr(gpufl_last_error(), r->env) != NULL);
        FUZZ_ASSERT(same(r, &o, &def));
        others_default(&o, &def, r);
    }
    unsetenv(r->env);
    return 0;
}
