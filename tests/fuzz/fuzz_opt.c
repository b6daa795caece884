/*
 * fuzz_opt.c - libFuzzer target for the option engine (src/common/opt*.c):
 * the config-file parser, the command line and the value parsers.  The
 * first byte picks what the rest is:
 *   'f' (or anything else) a config file;
 *   'a' a command line, words separated by NUL bytes;
 *   'v' one value, given to every value parser.
 *
 * Oracles beyond "does not crash":
 *   - a file or command line that loads dumps (--dump-config) to text that
 *     loads back to the same values, and dumps again to the same text;
 *   - a size, duration or integer that parses reads back the same from its
 *     canonical spelling; a boolean is one of the documented words;
 *   - a failed load says why (a non-empty message).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/opt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(c)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "fuzz_opt: %s:%d: %s\n", __FILE__, __LINE__, #c);  \
            abort();                                                           \
        }                                                                      \
    } while (0)

typedef struct fcfg {
    char *s;
    char arr[16];
    int b;
    uint64_t n;
    uint16_t n16;
    uint64_t sz;
    uint64_t ms;
    uint32_t sec;
    uint64_t bare_s;
    char *e;
    int lvl;
    double f;
    char *list[4];
    size_t nlist;
    uint32_t ints[3];
    size_t nints;
} fcfg;

#define T fcfg
static const opt_def rows[] = {
    { .name = "s", .type = OPT_STR, OPT_F_PTR(T, s), .help = "s" },
    { .name = "arr", .type = OPT_STR, OPT_F_ARR(T, arr), .help = "a" },
    { .name = "b",
      .type = OPT_BOOL,
      OPT_F_SINT(T, b),
      .def = "yes",
      .help = "b" },
    { .name = "n",
      .type = OPT_INT,
      OPT_F_UINT(T, n),
      .min = 1,
      .max = 1000000,
      .def = "7",
      .help = "n" },
    { .name = "n16", .type = OPT_INT, OPT_F_UINT(T, n16), .help = "n16" },
    { .name = "sz", .type = OPT_SIZE, OPT_F_UINT(T, sz), .help = "sz" },
    { .name = "ms",
      .type = OPT_DUR,
      OPT_F_UINT(T, ms),
      .unit = OPT_MS,
      .def = "200",
      .help = "ms" },
    { .name = "sec",
      .type = OPT_DUR,
      OPT_F_UINT(T, sec),
      .unit = OPT_SEC,
      .max = 86400 * 365,
      .help = "sec" },
    { .name = "bare-s",
      .type = OPT_DUR,
      OPT_F_UINT(T, bare_s),
      .unit = OPT_MS,
      .bare = OPT_SEC,
      .min = 10,
      .help = "bare" },
    { .name = "e",
      .type = OPT_ENUM,
      OPT_F_PTR(T, e),
      .choices = "x|yy|zzz",
      .help = "e" },
    { .name = "lvl",
      .type = OPT_ENUM,
      OPT_F_SINT(T, lvl),
      .choices = "error=0|warn=1|off=-1",
      .def = "off",
      .help = "l" },
    { .name = "f",
      .type = OPT_FLOAT,
      OPT_F_DBL(T, f),
      .fmin = -1,
      .fmax = 1e9,
      .help = "f" },
    { .name = "list",
      .type = OPT_LIST,
      OPT_F_LIST(T, list, nlist, OPT_ST_PTR),
      .flags = OPT_REPEAT,
      .env_sep = ',',
      .help = "list" },
    { .name = "ints",
      .type = OPT_LIST,
      .item = OPT_INT,
      OPT_F_LIST(T, ints, nints, OPT_ST_UINT),
      .max = 65535,
      .flags = OPT_REPEAT,
      .help = "ints" },
};
#undef T

static const opt_prog prog = { .name = "fuzz",
                               .env_prefix = "GPUFL_FUZZ_",
                               .opts = rows,
                               .n = sizeof rows / sizeof rows[0],
                               .size = sizeof(fcfg),
                               .flags = OPT_P_ARGS | OPT_P_DASHDASH };

static opt_ctx ctx;
static opt_origin org, org2;

/* The dump of cfg as a malloc'd string (*len bytes). */
static char *dump(const fcfg *cfg, const opt_origin *o, size_t *len)
{
    char *buf = NULL;
    FILE *m = open_memstream(&buf, len);
    FUZZ_ASSERT(m);
    opt_dump(&prog, cfg, o, m);
    FUZZ_ASSERT(fclose(m) == 0);
    return buf;
}

/* The text of cfg reloaded from its dump equals cfg. */
static void round_trip(const fcfg *cfg)
{
    size_t n1, n2;
    char *t1 = dump(cfg, &org, &n1), *t2;
    fcfg back;
    int rc;

    FUZZ_ASSERT(opt_begin(&ctx, &prog, &back, &org2) == 0);
    rc = opt_load_text(&ctx, t1, n1, "dump");
    if (rc)
        fprintf(stderr, "fuzz_opt: the dump does not load: %s\n%s", ctx.err,
                t1);
    FUZZ_ASSERT(rc == 0);
    /* the sources differ (flag, file, ...): compare the values alone */
    free(t1);
    t1 = dump(cfg, NULL, &n1);
    t2 = dump(&back, NULL, &n2);
    if (n1 != n2 || memcmp(t1, t2, n1))
        fprintf(stderr, "fuzz_opt: dumps differ:\n%s---\n%s", t1, t2);
    FUZZ_ASSERT(n1 == n2 && !memcmp(t1, t2, n1));
    /* the dump shows every byte of the strings, so equal dumps mean equal
     * values; check the lists and the numbers directly too */
    FUZZ_ASSERT(back.nlist == cfg->nlist && back.nints == cfg->nints);
    for (size_t i = 0; i < cfg->nlist; i++)
        FUZZ_ASSERT(!strcmp(back.list[i], cfg->list[i]));
    FUZZ_ASSERT(back.n == cfg->n && back.sz == cfg->sz && back.ms == cfg->ms &&
                back.sec == cfg->sec && back.bare_s == cfg->bare_s &&
                back.lvl == cfg->lvl && back.b == cfg->b && back.f == cfg->f);
    FUZZ_ASSERT((!back.s && !cfg->s) ||
                (back.s && cfg->s && !strcmp(back.s, cfg->s)));
    opt_release(&prog, &back);
    free(t1);
    free(t2);
}

static void fuzz_file(const char *p, size_t n)
{
    fcfg c;
    int rc;

    FUZZ_ASSERT(opt_begin(&ctx, &prog, &c, &org) == 0);
    rc = opt_load_text(&ctx, p, n, "fuzz.conf");
    FUZZ_ASSERT(rc == 0 || (rc == 2 && ctx.err[0]));
    if (rc == 0)
        round_trip(&c);
    opt_release(&prog, &c);
}

static void fuzz_argv(const char *p, size_t n)
{
    char *copy = malloc(n + 1), *argv[65];
    int argc = 1, rc;
    fcfg c;

    FUZZ_ASSERT(copy);
    memcpy(copy, p, n);
    copy[n] = '\0';
    argv[0] = "fuzz";
    for (size_t i = 0; i <= n && argc < 64;) {
        argv[argc++] = copy + i;
        i += strlen(copy + i) + 1;
    }
    argv[argc] = NULL;
    /* the layer alone: --config would name a file of this machine */
    FUZZ_ASSERT(opt_begin(&ctx, &prog, &c, &org) == 0);
    rc = opt_load_argv(&ctx, argc, argv);
    FUZZ_ASSERT(rc == 0 || (rc == 2 && ctx.err[0]));
    if (rc == 0)
        round_trip(&c);
    opt_release(&prog, &c);
    free(copy);
}

static void fuzz_value(const char *p, size_t n)
{
    char v[128], back[64];
    uint64_t u, u2;
    int b;

    if (n >= sizeof v)
        n = sizeof v - 1;
    memcpy(v, p, n);
    v[n] = '\0';
    if (opt_parse_size(v, &u) == 0) {
        snprintf(back, sizeof back, "%llu", (unsigned long long)u);
        FUZZ_ASSERT(opt_parse_size(back, &u2) == 0 && u2 == u);
    }
    if (opt_parse_dur(v, OPT_SEC, OPT_MS, &u) == 0) {
        snprintf(back, sizeof back, "%llums", (unsigned long long)u);
        FUZZ_ASSERT(opt_parse_dur(back, OPT_SEC, OPT_MS, &u2) == 0 && u2 == u);
        /* a bare number is seconds: 1000 times the milliseconds */
        if (strspn(v, "0123456789") == n && u <= UINT64_MAX / 1000)
            FUZZ_ASSERT(opt_parse_dur(v, OPT_MS, OPT_MS, &u2) == 0 &&
                        u2 * 1000 == u);
    }
    if (opt_parse_bool(v, &b) == 0) {
        static const char *const words[] = { "1",     "true", "yes", "on", "0",
                                             "false", "no",   "off", "" };
        int known = 0;
        for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
            known |= !strcasecmp(v, words[i]);
        FUZZ_ASSERT(known && (b == 0 || b == 1));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data + 1;

    if (!size)
        return 0;
    if (data[0] == 'a')
        fuzz_argv(p, size - 1);
    else if (data[0] == 'v')
        fuzz_value(p, size - 1);
    else
        fuzz_file(p, size - 1);
    return 0;
}
