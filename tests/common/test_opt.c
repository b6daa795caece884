/*
 * test_opt.c - the option engine (src/common/opt*.c): every type and
 * suffix, bounds, the four layers and where each value came from, the
 * config-file syntax, unknown names with hints, lists, secrets, the
 * built-in flags, --dump-config loading back, and the table checks.
 */
#include "common/opt.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct tcfg {
    char *name;
    char arr[8];
    const char *ref;
    int on;
    uint64_t n;
    uint32_t small;
    uint64_t bytes;
    uint64_t wait_ms;
    uint32_t age_s;
    uint64_t slow_ms;
    char *mode;
    int level;
    double ratio;
    char *dir[3];
    size_t ndir;
    int pid[4];
    size_t npid;
    char *token;
    int status;
    int old;
    int quiet;
} tcfg;

#define T tcfg
static const opt_def rows[] = {
    { .name = "name",
      .type = OPT_STR,
      OPT_F_PTR(T, name),
      .def = "anon",
      .help = "A name." },
    { .name = "arr", .type = OPT_STR, OPT_F_ARR(T, arr), .help = "Short." },
    { .name = "ref", .type = OPT_STR, OPT_F_REF(T, ref), .help = "Borrowed." },
    { .name = "on",
      .type = OPT_BOOL,
      OPT_F_SINT(T, on),
      .def = "true",
      .help = "A switch." },
    { .name = "n",
      .type = OPT_INT,
      OPT_F_UINT(T, n),
      .def = "10",
      .min = 1,
      .max = 100000,
      .help = "A count." },
    { .name = "small",
      .type = OPT_INT,
      OPT_F_UINT(T, small),
      .help = "Any uint32." },
    { .name = "bytes",
      .type = OPT_SIZE,
      OPT_F_UINT(T, bytes),
      .def = "64k",
      .min = 4096,
      .max = 1ull << 30,
      .help = "A size." },
    { .name = "wait-ms",
      .type = OPT_DUR,
      OPT_F_UINT(T, wait_ms),
      .def = "200",
      .max = 3600000,
      .unit = OPT_MS,
      .help = "Milliseconds." },
    { .name = "age",
      .type = OPT_DUR,
      OPT_F_UINT(T, age_s),
      .def = "5m",
      .max = 7 * 86400,
      .unit = OPT_SEC,
      .help = "Seconds." },
    { .name = "slow",
      .type = OPT_DUR,
      OPT_F_UINT(T, slow_ms),
      .min = 10,
      .max = 10000000000ull,
      .unit = OPT_MS,
      .bare = OPT_SEC,
      .help = "Bare seconds, kept in ms." },
    { .name = "mode",
      .type = OPT_ENUM,
      OPT_F_PTR(T, mode),
      .def = "fast",
      .choices = "fast|slow|auto",
      .help = "A word." },
    { .name = "level",
      .type = OPT_ENUM,
      OPT_F_SINT(T, level),
      .def = "off",
      .choices = "error=0|warn=1|off=-1|none=-1",
      .help = "A level." },
    { .name = "ratio",
      .type = OPT_FLOAT,
      OPT_F_DBL(T, ratio),
      .def = "0.5",
      .fmin = 0,
      .fmax = 1,
      .help = "A share." },
    { .name = "dir",
      .type = OPT_LIST,
      OPT_F_LIST(T, dir, ndir, OPT_ST_PTR),
      .flags = OPT_REPEAT,
      .env_sep = ',',
      .arg = "DIR",
      .help = "Folders." },
    { .name = "pid",
      .type = OPT_LIST,
      .item = OPT_INT,
      OPT_F_LIST(T, pid, npid, OPT_ST_SINT),
      .min = 1,
      .max = 4194304,
      .flags = OPT_REPEAT | OPT_CLI_ONLY,
      .help = "Processes." },
    { .name = "token",
      .type = OPT_STR,
      OPT_F_PTR(T, token),
      .flags = OPT_SECRET,
      .help = "A secret." },
    { .name = "status",
      .type = OPT_BOOL,
      OPT_F_SINT(T, status),
      .flags = OPT_CLI_ONLY,
      .help = "An action." },
    { .name = "old",
      .type = OPT_BOOL,
      OPT_F_SINT(T, old),
      .flags = OPT_DEPRECATED,
      .help = "Old." },
    { .name = "quiet",
      .type = OPT_BOOL,
      OPT_F_SINT(T, quiet),
      .short_name = 'q',
      .help = "Quiet." },
};
#undef T

static const char *const known[] = { "GPUFL_T_HOOK", NULL };

static const opt_prog prog = { .name = "gpufl-t",
                               .env_prefix = "GPUFL_T_",
                               .opts = rows,
                               .n = sizeof rows / sizeof rows[0],
                               .size = sizeof(tcfg),
                               .usage = "usage: gpufl-t [options]\n",
                               .env_known = known,
                               .flags = OPT_P_ARGS | OPT_P_DASHDASH };

static opt_ctx ctx;
static opt_origin org;
static char conf[4200];

static int argc_of(char **argv)
{
    int n = 0;
    while (argv[n])
        n++;
    return n;
}

static int load(tcfg *c, char **argv, char **envp)
{
    return opt_load(&ctx, &prog, c, &org, argc_of(argv), argv, envp);
}

static char *noenv[] = { NULL };

/* One flag on its own; 0 or 2 (ctx.err says why). */
static int flag(tcfg *c, const char *f)
{
    char *argv[] = { "t", (char *)f, NULL };
    int rc;
    opt_release(&prog, c);
    rc = load(c, argv, noenv);
    return rc;
}

static void write_conf(const char *text)
{
    FILE *f = fopen(conf, "w");
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
}

static void test_defaults(void)
{
    tcfg c;
    char *argv[] = { "t", NULL };
    memset(&c, 0, sizeof c);
    REQUIRE(load(&c, argv, noenv) == 0);
    CHECK_STR(c.name, "anon");
    CHECK(c.on == 1);
    CHECK_EQ_U64(c.n, 10);
    CHECK_EQ_U64(c.bytes, 65536);
    CHECK_EQ_U64(c.wait_ms, 200);
    CHECK_EQ_U64(c.age_s, 300);
    CHECK_STR(c.mode, "fast");
    CHECK(c.level == -1);
    CHECK(c.ratio == 0.5);
    CHECK(c.ndir == 0 && c.token == NULL && c.ref == NULL);
    CHECK(opt_source(&prog, &org, "n") == OPT_SRC_DEFAULT);
    CHECK(opt_source(&prog, &org, "token") == OPT_SRC_UNSET);
    CHECK(ctx.action == OPT_RUN);
    opt_release(&prog, &c);
    CHECK(c.name == NULL && c.mode == NULL);
}

static void test_sizes(void)
{
    static const struct {
        const char *s;
        uint64_t v;
    } ok[] = { { "4096", 4096 },
               { "64k", 65536 },
               { "64K", 65536 },
               { "16M", 16ull << 20 },
               { "16MiB", 16ull << 20 },
               { "16mib", 16ull << 20 },
               { "16MB", 16ull << 20 },
               { "2G", 2ull << 30 },
               { "2gb", 2ull << 30 },
               { "1T", 1ull << 40 },
               { "1.5M", 3ull << 19 },
               { "100B", 100 },
               { "0", 0 },
               { "18446744073709551615", UINT64_MAX } };
    static const char *const bad[] = {
        "",    "-1",  " 1",     "1 ",        "+1",
        "1.",  ".5",  "5Q",     "1.3k",      "0x10",
        "1e3", "16P", "16MiBs", "20000000T", "18446744073709551616",
        "1kk"
    };
    uint64_t v;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        v = 7;
        CHECK(opt_parse_size(ok[i].s, &v) == 0);
        CHECK_EQ_U64(v, ok[i].v);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 7;
        CHECK(opt_parse_size(bad[i], &v) == -1);
        CHECK_EQ_U64(v, 7);
    }
}

static void test_durations(void)
{
    uint64_t v = 0;
    CHECK(opt_parse_dur("250ms", OPT_MS, OPT_MS, &v) == 0 && v == 250);
    CHECK(opt_parse_dur("30s", OPT_MS, OPT_MS, &v) == 0 && v == 30000);
    CHECK(opt_parse_dur("5m", OPT_SEC, OPT_SEC, &v) == 0 && v == 300);
    CHECK(opt_parse_dur("4h", OPT_SEC, OPT_SEC, &v) == 0 && v == 14400);
    CHECK(opt_parse_dur("7d", OPT_SEC, OPT_SEC, &v) == 0 && v == 604800);
    CHECK(opt_parse_dur("1.5s", OPT_MS, OPT_MS, &v) == 0 && v == 1500);
    /* a bare number keeps the option's historical unit */
    CHECK(opt_parse_dur("200", OPT_MS, OPT_MS, &v) == 0 && v == 200);
    CHECK(opt_parse_dur("60", OPT_SEC, OPT_SEC, &v) == 0 && v == 60);
    CHECK(opt_parse_dur("0.5", OPT_SEC, OPT_MS, &v) == 0 && v == 500);
    v = 9;
    CHECK(opt_parse_dur("1ms", OPT_SEC, OPT_SEC, &v) == -1 && v == 9);
    CHECK(opt_parse_dur("1.5", OPT_SEC, OPT_SEC, &v) == -1);
    CHECK(opt_parse_dur("5M", OPT_SEC, OPT_SEC, &v) == -1);
    CHECK(opt_parse_dur("5 s", OPT_SEC, OPT_SEC, &v) == -1);
    CHECK(opt_parse_dur("-5s", OPT_SEC, OPT_SEC, &v) == -1);
    CHECK(opt_parse_dur("s", OPT_SEC, OPT_SEC, &v) == -1);
    CHECK(opt_parse_dur("99999999999999999999d", OPT_SEC, OPT_SEC, &v) == -1);
    CHECK(opt_parse_dur("213503982334602d", OPT_SEC, OPT_MS, &v) == -1);
}

static void test_bools(void)
{
    static const char *const yes[] = { "1", "true", "TRUE", "Yes", "on", "ON" };
    static const char *const no[] = { "0", "false", "False", "NO", "off", "" };
    int b;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        CHECK(opt_parse_bool(yes[i], &b) == 0 && b == 1);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        CHECK(opt_parse_bool(no[i], &b) == 0 && b == 0);
    b = 5;
    CHECK(opt_parse_bool("maybe", &b) == -1 && b == 5);
    CHECK(opt_parse_bool("2", &b) == -1 && opt_parse_bool(" on", &b) == -1);
}

static void test_types_on_flags(void)
{
    tcfg c;
    memset(&c, 0, sizeof c);
    CHECK(flag(&c, "--n=2k") == 0 && c.n == 2048);
    CHECK(flag(&c, "--small=4294967295") == 0 && c.small == UINT32_MAX);
    CHECK(flag(&c, "--small=4294967296") == 2); /* the field's width */
    CHECK(flag(&c, "--bytes=16MiB") == 0 && c.bytes == 16ull << 20);
    CHECK(flag(&c, "--wait-ms=2s") == 0 && c.wait_ms == 2000);
    CHECK(flag(&c, "--age=1h") == 0 && c.age_s == 3600);
    CHECK(flag(&c, "--slow=0.25") == 0 && c.slow_ms == 250);
    CHECK(flag(&c, "--mode=SLOW") == 0);
    CHECK_STR(c.mode, "slow"); /* the canonical word */
    CHECK(flag(&c, "--level=Warn") == 0 && c.level == 1);
    CHECK(flag(&c, "--level=none") == 0 && c.level == -1);
    CHECK(flag(&c, "--ratio=1e-1") == 0 && c.ratio == 0.1);
    CHECK(flag(&c, "--arr=1234567") == 0);
    CHECK_STR(c.arr, "1234567");
    CHECK(flag(&c, "--arr=12345678") == 2 && strstr(ctx.err, "7 bytes"));
    CHECK(flag(&c, "--on=off") == 0 && c.on == 0);
    CHECK(flag(&c, "--no-on") == 0 && c.on == 0);
    CHECK(flag(&c, "--no-on=1") == 2);
    CHECK(flag(&c, "--no-n") == 2);
    CHECK(flag(&c, "-q") == 0 && c.quiet == 1);
    CHECK(flag(&c, "-x") == 2);
    CHECK(flag(&c, "--ratio=nan") == 2);
    CHECK(flag(&c, "--ratio=0x1") == 2);
    CHECK(flag(&c, "--ratio= 1") == 2);
    opt_release(&prog, &c);
}

static void test_errors(void)
{
    tcfg c;
    memset(&c, 0, sizeof c);
    /* the flag, the value and what is allowed */
    CHECK(flag(&c, "--n=0") == 2);
    CHECK(strstr(ctx.err, "--n=0 is out of range") &&
          strstr(ctx.err, "an integer from 1 to 100000"));
    CHECK(flag(&c, "--n=12x") == 2);
    CHECK(strstr(ctx.err, "--n wants an integer from 1 to 100000, not '12x'"));
    CHECK(flag(&c, "--bytes=5Q") == 2);
    CHECK(strstr(ctx.err, "--bytes wants a size from 4KiB to 1GiB") &&
          strstr(ctx.err, "'5Q'"));
    CHECK(flag(&c, "--bytes=1k") == 2 && strstr(ctx.err, "out of range"));
    CHECK(flag(&c, "--age=8d") == 2);
    CHECK(strstr(ctx.err, "from 0s to 7d") &&
          strstr(ctx.err, "a bare number is seconds"));
    CHECK(flag(&c, "--wait-ms=x") == 2 &&
          strstr(ctx.err, "a bare number is milliseconds"));
    CHECK(flag(&c, "--mode=medium") == 2);
    CHECK(strstr(ctx.err, "--mode wants fast, slow or auto, not 'medium'"));
    CHECK(flag(&c, "--on=maybe") == 2 && strstr(ctx.err, "true or false"));
    CHECK(flag(&c, "--ratio=2") == 2 &&
          strstr(ctx.err, "a number from 0 to 1"));
    CHECK(flag(&c, "--n") == 2 && strstr(ctx.err, "--n needs a value"));
    /* did you mean */
    CHECK(flag(&c, "--nmae=x") == 2);
    CHECK(strstr(ctx.err, "unknown option '--nmae'") &&
          strstr(ctx.err, "did you mean '--name'?"));
    CHECK(flag(&c, "--wait=1") == 2 && strstr(ctx.err, "'--wait-ms'?"));
    CHECK(flag(&c, "--zzzzzzzz") == 2 && strstr(ctx.err, "see --help") &&
          !strstr(ctx.err, "did you mean"));
    /* secrets never in a message */
    {
        char *argv[] = { "t", "--token=hunter2", "--n=0", NULL };
        opt_release(&prog, &c);
        CHECK(load(&c, argv, noenv) == 2 && !strstr(ctx.err, "hunter2"));
    }
    opt_release(&prog, &c);
}

static void test_layers(void)
{
    tcfg c;
    char cflag[4300], envc[4300];
    memset(&c, 0, sizeof c);
    write_conf("# a comment\n"
               "name = from-file\n"
               "n = 20 # trailing comment\n"
               "bytes=1M\n"
               "dir = /f1\n"
               "dir = /f2\n"
               "age = 1h\r\n"
               "   \n"
               "mode = auto\n");
    snprintf(cflag, sizeof cflag, "--config=%s", conf);
    snprintf(envc, sizeof envc, "GPUFL_T_CONFIG=%s", conf);
    {
        char *argv[] = { "t", cflag, NULL };
        REQUIRE(load(&c, argv, noenv) == 0);
        CHECK_STR(c.name, "from-file");
        CHECK_EQ_U64(c.n, 20);
        CHECK_EQ_U64(c.bytes, 1 << 20);
        CHECK_EQ_U64(c.age_s, 3600);
        CHECK(c.ndir == 2);
        CHECK_STR(c.dir[1], "/f2");
        CHECK(opt_source(&prog, &org, "n") == OPT_SRC_FILE);
        CHECK(org.line[4] == 3); /* n is row 4, line 3 */
        CHECK_STR(org.file, conf);
        opt_release(&prog, &c);
    }
    {
        /* the file named by the environment; env over file; flags over
         * env; a list set in a layer replaces the lower one's */
        char *argv[] = { "t", "--n", "40", "--dir=/a", "--dir", "/b", NULL };
        char *env[] = { envc,
                        "GPUFL_T_N=30",
                        "GPUFL_T_NAME=from-env",
                        "GPUFL_T_DIR= /e1 , /e2,,/e3",
                        "GPUFL_T_REF=borrowed",
                        "GPUFL_T_HOOK=not-an-option",
                        "OTHER_N=1",
                        NULL };
        REQUIRE(load(&c, argv, env) == 0);
        CHECK_STR(c.name, "from-env");
        CHECK_EQ_U64(c.n, 40);
        CHECK_EQ_U64(c.bytes, 1 << 20);
        CHECK(c.ndir == 2);
        CHECK_STR(c.dir[0], "/a");
        CHECK_STR(c.dir[1], "/b");
        CHECK(c.ref == env[4] + strlen("GPUFL_T_REF="));
        CHECK(opt_source(&prog, &org, "name") == OPT_SRC_ENV);
        CHECK(opt_source(&prog, &org, "n") == OPT_SRC_FLAG);
        CHECK(opt_source(&prog, &org, "bytes") == OPT_SRC_FILE);
        CHECK(opt_source(&prog, &org, "mode") == OPT_SRC_FILE);
        CHECK(opt_source(&prog, &org, "ratio") == OPT_SRC_DEFAULT);
        opt_release(&prog, &c);
    }
    {
        char *argv[] = { "t", NULL };
        char *env[] = { "GPUFL_T_DIR= /e1 , /e2,,/e3", NULL };
        REQUIRE(load(&c, argv, env) == 0);
        CHECK(c.ndir == 3);
        CHECK_STR(c.dir[0], "/e1");
        CHECK_STR(c.dir[2], "/e3");
        opt_release(&prog, &c);
    }
    {
        /* an empty variable empties the list of the file */
        char *argv[] = { "t", cflag, NULL };
        char *env[] = { "GPUFL_T_DIR=", NULL };
        REQUIRE(load(&c, argv, env) == 0);
        CHECK(c.ndir == 0);
        opt_release(&prog, &c);
    }
    {
        char *argv[] = {
            "t", "--dir=1", "--dir=2", "--dir=3", "--dir=4", NULL
        };
        CHECK(load(&c, argv, noenv) == 2 && strstr(ctx.err, "more than 3"));
        opt_release(&prog, &c);
    }
    {
        char *argv[] = { "t", "--pid", "5", "--pid=7", NULL };
        REQUIRE(load(&c, argv, noenv) == 0);
        CHECK(c.npid == 2 && c.pid[0] == 5 && c.pid[1] == 7);
        opt_release(&prog, &c);
        argv[2] = "0";
        CHECK(load(&c, argv, noenv) == 2 && strstr(ctx.err, "--pid=0"));
        opt_release(&prog, &c);
    }
}

static void test_env_errors(void)
{
    tcfg c;
    char *argv[] = { "t", NULL };
    char *typo[] = { "GPUFL_T_NAEM=x", NULL };
    char *bad[] = { "GPUFL_T_N=0", NULL };
    char *cli[] = { "GPUFL_T_STATUS=1", NULL };
    memset(&c, 0, sizeof c);
    CHECK(load(&c, argv, typo) == 2);
    CHECK(strstr(ctx.err, "unknown variable 'GPUFL_T_NAEM'") &&
          strstr(ctx.err, "did you mean 'GPUFL_T_NAME'?"));
    opt_release(&prog, &c);
    CHECK(load(&c, argv, bad) == 2 &&
          strstr(ctx.err, "GPUFL_T_N=0 is out of range"));
    opt_release(&prog, &c);
    /* a command-line-only option has no variable */
    CHECK(load(&c, argv, cli) == 2 && strstr(ctx.err, "unknown variable"));
    opt_release(&prog, &c);
}

static void test_file_syntax(void)
{
    tcfg c;
    char cflag[4300];
    static const struct {
        const char *text, *err;
    } bad[] = {
        { "nmae = x\n", "unknown key 'nmae' (did you mean 'name'?)" },
        { "name x\n", "expected key = value" },
        { "= x\n", "expected key = value" },
        { "status = true\n", "unknown key 'status'" },
        { "config = /x\n", "unknown key 'config'" },
        { "name = \"open\n", "quoted value" },
        { "name = \"a\" b\n", "after the closing quote" },
        { "name = \"\\q\"\n", "quoted value" },
        { "n = 0\n", "n=0 is out of range" },
    };
    memset(&c, 0, sizeof c);
    snprintf(cflag, sizeof cflag, "--config=%s", conf);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *argv[] = { "t", cflag, NULL };
        write_conf(bad[i].text);
        CHECK(load(&c, argv, noenv) == 2);
        if (!strstr(ctx.err, bad[i].err) || !strstr(ctx.err, ":1: "))
            fprintf(stderr, "case %zu: %s\n", i, ctx.err);
        CHECK(strstr(ctx.err, bad[i].err) && strstr(ctx.err, ":1: "));
        opt_release(&prog, &c);
    }
    {
        char *argv[] = { "t", cflag, NULL };
        write_conf("name = \" a \\\"b\\\" #c\\x01\\n\"  # comment\n"
                   "arr = x#y\n"
                   "mode = # only a comment, empty value\n");
        CHECK(load(&c, argv, noenv) == 2 && strstr(ctx.err, ":3: ") &&
              strstr(ctx.err, "not ''"));
        opt_release(&prog, &c);
        write_conf("name = \" a \\\"b\\\" #c\\x01\\n\"  # comment\n"
                   "arr = x#y\n");
        REQUIRE(load(&c, argv, noenv) == 0);
        CHECK_STR(c.name, " a \"b\" #c\x01\n");
        CHECK_STR(c.arr, "x#y");
        opt_release(&prog, &c);
    }
    {
        char *argv[] = { "t", "--config=/nonexistent/gpufl.conf", NULL };
        CHECK(load(&c, argv, noenv) == 2 &&
              strstr(ctx.err, "cannot open config file"));
        opt_release(&prog, &c);
    }
}

static void test_args_and_builtins(void)
{
    tcfg c;
    memset(&c, 0, sizeof c);
    {
        char *argv[] = {
            "t", "keys", "--n=5", "create", "--", "--x", "y", NULL
        };
        REQUIRE(load(&c, argv, noenv) == 0);
        CHECK(ctx.nargs == 2);
        CHECK_STR(ctx.args[0], "keys");
        CHECK_STR(ctx.args[1], "create");
        CHECK(ctx.nrest == 2);
        CHECK_STR(ctx.rest[0], "--x");
        opt_release(&prog, &c);
    }
    {
        char *argv[] = { "t", "--dump-config", "--help", NULL };
        REQUIRE(load(&c, argv, noenv) == 0);
        CHECK(ctx.action == OPT_HELP);
        opt_release(&prog, &c);
    }
    {
        char *argv[] = { "t", "--version", NULL };
        CHECK(load(&c, argv, noenv) == 2); /* this program has none */
        opt_release(&prog, &c);
    }
    {
        char *argv[] = { "t", "--old", NULL };
        REQUIRE(load(&c, argv, noenv) == 0);
        CHECK(strstr(ctx.warn, "--old is deprecated") != NULL);
        opt_release(&prog, &c);
    }
    {
        opt_prog strict = prog;
        char *argv[] = { "t", "word", NULL };
        strict.flags = 0;
        CHECK(opt_load(&ctx, &strict, &c, NULL, 2, argv, noenv) == 2 &&
              strstr(ctx.err, "unexpected argument 'word'"));
        opt_release(&prog, &c);
    }
}

/* Prints into buf[cap] (NUL-terminated); returns the length. */
static size_t capture(char *buf, size_t cap, void (*fn)(FILE *, void *),
                      void *arg)
{
    FILE *m = fmemopen(buf, cap, "w");
    size_t n;
    if (!m)
        return 0;
    fn(m, arg);
    n = (size_t)ftell(m);
    fclose(m);
    buf[n < cap ? n : cap - 1] = '\0';
    return n;
}

static void print_dump(FILE *f, void *cfg)
{
    opt_dump(&prog, cfg, &org, f);
}

static void print_docs(FILE *f, void *cfg)
{
    (void)cfg;
    opt_help(&prog, f);
    opt_markdown(&prog, f);
}

static void test_dump(void)
{
    static char buf[65536];
    char *argv[] = { "t",
                     "--token=hunter2",
                     "--name= padded #x ",
                     "--bytes=2MiB",
                     "--wait-ms=1500",
                     "--dir=/d1",
                     "--dir=#/d2",
                     "--level=warn",
                     "--ratio=0.1",
                     NULL };
    char *env[] = { "GPUFL_T_N=77", NULL };
    tcfg c, d;
    opt_ctx *c2 = malloc(sizeof *c2);
    REQUIRE(c2);
    memset(&c, 0, sizeof c);
    memset(&d, 0, sizeof d);
    REQUIRE(load(&c, argv, env) == 0);
    capture(buf, sizeof buf, print_dump, &c);
    CHECK(!strstr(buf, "hunter2"));
    CHECK(strstr(buf, "token = (set)  # flag") != NULL);
    CHECK(strstr(buf, "bytes = 2097152  # flag") != NULL);
    CHECK(strstr(buf, "wait-ms = 1500ms  # flag") != NULL);
    CHECK(strstr(buf, "n = 77  # env GPUFL_T_N") != NULL);
    CHECK(strstr(buf, "age = 5m  # default") != NULL);
    CHECK(strstr(buf, "level = warn") != NULL);
    CHECK(strstr(buf, "# arr is unset\n") != NULL);
    CHECK(strstr(buf, "# token") == NULL);
    CHECK(strstr(buf, "# --status = false  # default\n") != NULL);
    CHECK(strstr(buf, "# slow is unset\n") != NULL);
    /* the dump loads back as a config file to the same values */
    REQUIRE(opt_begin(c2, &prog, &d, NULL) == 0);
    {
        /* the secret cannot come back; everything else must */
        char *tok = strstr(buf, "token = (set)");
        if (tok)
            tok[0] = '#';
    }
    CHECK(opt_load_text(c2, buf, strlen(buf), "dump") == 0);
    CHECK_STR(d.name, " padded #x ");
    CHECK_EQ_U64(d.bytes, c.bytes);
    CHECK_EQ_U64(d.wait_ms, c.wait_ms);
    CHECK_EQ_U64(d.n, 77);
    CHECK(d.ndir == 2);
    CHECK_STR(d.dir[1], "#/d2");
    CHECK(d.level == 1 && d.ratio == c.ratio && d.on == c.on);
    CHECK_STR(d.mode, c.mode);
    opt_release(&prog, &d);
    /* help and docs: every variable named, the secret nowhere */
    capture(buf, sizeof buf, print_docs, NULL);
    CHECK(strstr(buf, "GPUFL_T_WAIT_MS") && strstr(buf, "--on, --no-on") &&
          strstr(buf, "-q, --quiet") && strstr(buf, "--config=FILE") &&
          strstr(buf, "| `--bytes=SIZE` | `GPUFL_T_BYTES` | `64k` |") &&
          !strstr(buf, "hunter2"));
    opt_release(&prog, &c);
    free(c2);
}

static void test_table_check(void)
{
    char why[256];
    opt_def bad[2];
    opt_prog p = prog;
    CHECK(opt_table_check(&prog, why, sizeof why) == 0);
    memcpy(bad, rows, sizeof bad);
    bad[1].name = "name";
    p.opts = bad;
    p.n = 2;
    CHECK(opt_table_check(&p, why, sizeof why) == -1 && strstr(why, "twice"));
    memcpy(bad, rows, sizeof bad);
    bad[0].def = NULL;
    bad[1].type = OPT_INT; /* an inline string field */
    CHECK(opt_table_check(&p, why, sizeof why) == -1 &&
          strstr(why, "does not fit"));
    memcpy(bad, &rows[3], sizeof bad);
    bad[1].def = "many";
    CHECK(opt_table_check(&p, why, sizeof why) == -1 && strstr(why, "'many'"));
}

int main(void)
{
    const char *t = getenv("GPUFL_TEST_TMP");
    snprintf(conf, sizeof conf, "%s/test_opt.%d.conf", t ? t : "/tmp",
             (int)getpid());
    RUN(test_defaults);
    RUN(test_sizes);
    RUN(test_durations);
    RUN(test_bools);
    RUN(test_types_on_flags);
    RUN(test_errors);
    RUN(test_layers);
    RUN(test_env_errors);
    RUN(test_file_syntax);
    RUN(test_args_and_builtins);
    RUN(test_dump);
    RUN(test_table_check);
    unlink(conf);
    TEST_DONE();
}
