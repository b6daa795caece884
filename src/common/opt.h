/*
 * opt.h - the one option engine of every gpufl program (Redis configs[],
 * Fluent Bit config_map).
 *
 * A program describes its options once, as a table of opt_def rows (name,
 * type, where the value lives in the program's config struct, default,
 * bounds, flags, environment name, help).  From that table come:
 *   - the loader, in layers: defaults < config file < GPUFL_<PROGRAM>_*
 *     environment < flags, each layer overwriting the one before (a list
 *     set in a layer replaces what the lower layers said);
 *   - --help, the Markdown table in docs/ (--help-markdown) and
 *     --dump-config (the effective values and where each came from,
 *     secrets masked), in opt_doc.c;
 *   - one syntax for every value (opt_val.c): sizes "4096", "64k", "16M",
 *     "16MiB", "2G" (k, M, G, T with an optional i and B, any case, powers
 *     of 1024); durations "250ms", "30s", "5m", "4h", "7d" (a bare number
 *     is the option's own unit, so no existing command line changes
 *     meaning); booleans true/false, yes/no, on/off, 1/0 in any case.
 *
 * Config files hold "key = value" lines with the flag names as keys; '#'
 * at the start of a line or after a blank starts a comment; a value in
 * double quotes is literal, with \" \\ \n \t \r and \xHH escapes (so
 * --dump-config's output loads back as a config file).
 *
 * Unknown keys, flags and GPUFL_<PROGRAM>_* variables are errors with a
 * hint ("did you mean --folder?").  Exit codes: 0 ok, 1 runtime failure,
 * 2 usage error.
 *
 * Nothing here prints except opt_doc.c; the client library links only the
 * value parsers and opt_value_set() (opt_val.c), which report through a
 * caller's buffer.
 */
#ifndef GPUFL_COMMON_OPT_H
#define GPUFL_COMMON_OPT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Rows in one program's table, built-in rows not counted. */
#define OPT_MAX 96
/* One value, in bytes (paths, URLs, tokens). */
#define OPT_VALUE_MAX 4096
/* A config file, in bytes. */
#define OPT_FILE_MAX (1u << 20)
/* The path of a config file, in bytes. */
#define OPT_PATH_MAX 4096
/* An error or warning message, in bytes. */
#define OPT_ERR_MAX 640
/* Positional words a program may take (gpufl-server keys create ...). */
#define OPT_MAX_ARGS 8

typedef enum opt_type {
    OPT_STR = 1, /* any text (ST_PTR, ST_REF or ST_ARR) */
    OPT_BOOL,    /* 0/1 in an integer field; --no-NAME sets false */
    OPT_INT,     /* integer in [min, max]; k/M/G/T multiply by 1024^n */
    OPT_SIZE,    /* bytes in [min, max] */
    OPT_DUR,     /* time in [min, max], stored in `unit` */
    OPT_ENUM,    /* one word of `choices` (any case) */
    OPT_FLOAT,   /* double in [fmin, fmax] */
    OPT_LIST     /* several `item` values; each occurrence adds one */
} opt_type;

/* How the field holds the value (set by the OPT_F_* macros below). */
typedef enum opt_store {
    OPT_ST_NONE = 0,
    OPT_ST_PTR,  /* char *: a heap copy owned by the config (opt_release) */
    OPT_ST_REF,  /* const char *: borrowed from the environment or argv */
    OPT_ST_ARR,  /* char[size], inline */
    OPT_ST_UINT, /* unsigned integer of size 1, 2, 4 or 8 bytes */
    OPT_ST_SINT, /* signed integer of size 1, 2, 4 or 8 (an ENUM's value) */
    OPT_ST_DBL   /* double */
} opt_store;

/* Units of OPT_DUR, in milliseconds. */
typedef enum opt_unit { OPT_MS = 1, OPT_SEC = 1000 } opt_unit;

/* opt_def.flags */
#define OPT_SECRET 0x01     /* never printed: "(set)" / "(secret)" */
#define OPT_REPEAT 0x02     /* OPT_LIST: each occurrence adds an item */
#define OPT_DEPRECATED 0x04 /* accepted with a warning; help says so */
#define OPT_CLI_ONLY 0x08   /* a flag only: no config key, no variable */

typedef struct opt_def {
    const char *name; /* flag without "--", also the config-file key */
    opt_type type;
    opt_store store;
    size_t off;          /* of the field in the program's config struct */
    size_t size;         /* of the field; of one item for OPT_LIST */
    size_t count_off;    /* OPT_LIST: offset of the size_t item count */
    size_t nmax;         /* OPT_LIST: capacity of the item array */
    opt_type item;       /* OPT_LIST: type of one item (0: OPT_STR) */
    const char *def;     /* default in the option's own syntax; NULL: none */
    const char *def_doc; /* shown instead of def in docs (computed) */
    uint64_t min, max;   /* INT, SIZE, DUR (in unit); max 0: the field's */
    double fmin, fmax;   /* FLOAT: 0, 0 = any */
    const char *choices; /* ENUM: "a|b|c", or "a=1|b=2" for values */
    opt_unit unit;       /* DUR: the stored unit */
    opt_unit bare;       /* DUR: unit of a bare number (0: unit) */
    char env_sep;        /* LIST: separates items in a variable */
    char short_name;     /* -q for --quiet; 0: none */
    unsigned flags;      /* OPT_SECRET ... */
    const char *env;     /* NULL: GPUFL_<PROGRAM>_<NAME> */
    const char *arg;     /* metavariable in --help (DIR, URL) */
    const char *help;
} opt_def;

/* Field descriptors for opt_def rows: OPT_F_PTR(agent_cfg, url). */
#define OPT_FIELD_(T, m) .off = offsetof(T, m), .size = sizeof(((T *)0)->m)
#define OPT_F_PTR(T, m) .store = OPT_ST_PTR, OPT_FIELD_(T, m)
#define OPT_F_REF(T, m) .store = OPT_ST_REF, OPT_FIELD_(T, m)
#define OPT_F_ARR(T, m) .store = OPT_ST_ARR, OPT_FIELD_(T, m)
#define OPT_F_UINT(T, m) .store = OPT_ST_UINT, OPT_FIELD_(T, m)
#define OPT_F_SINT(T, m) .store = OPT_ST_SINT, OPT_FIELD_(T, m)
#define OPT_F_DBL(T, m) .store = OPT_ST_DBL, OPT_FIELD_(T, m)
/* A list: item array m, size_t count n; st is the items' opt_store. */
#define OPT_F_LIST(T, m, n, st)                                                \
    .store = st, .off = offsetof(T, m), .size = sizeof(((T *)0)->m[0]),        \
    .nmax = sizeof(((T *)0)->m) / sizeof(((T *)0)->m[0]),                      \
    .count_off = offsetof(T, n)

/* opt_prog.flags */
#define OPT_P_ARGS 0x01     /* positional words allowed (opt_ctx.args) */
#define OPT_P_DASHDASH 0x02 /* "--" ends the options (opt_ctx.rest) */
#define OPT_P_NOPREFIX 0x04 /* names are fields, variables explicit (client) */

typedef struct opt_prog {
    const char *name;       /* "gpufl-agent": starts every message */
    const char *env_prefix; /* "GPUFL_AGENT_"; unknown ones are errors */
    const opt_def *opts;
    size_t n;
    size_t size;       /* of the config struct: opt_begin zeroes it */
    const char *usage; /* --help: before the options */
    const char *tail;  /* --help: after them (exit codes ...) */
    /* Names under env_prefix that are not options (read or set by other
     * code, e.g. GPUFL_IDLE_SESSION for hooks); NULL-terminated or NULL. */
    const char *const *env_known;
    const char *version; /* --version prints "<name> <version>"; NULL: none */
    unsigned flags;      /* OPT_P_* */
} opt_prog;

/* Where a value came from. */
typedef enum opt_src {
    OPT_SRC_UNSET = 0,
    OPT_SRC_DEFAULT,
    OPT_SRC_FILE,
    OPT_SRC_ENV,
    OPT_SRC_FLAG
} opt_src;

/* The origin of every value of one load (kept for --dump-config). */
typedef struct opt_origin {
    unsigned char src[OPT_MAX]; /* opt_src per row */
    uint32_t line[OPT_MAX];     /* config-file line, for OPT_SRC_FILE */
    char file[OPT_PATH_MAX];    /* the config file read; "" none */
} opt_origin;

/* What the built-in flags asked for (opt_ctx.action). */
typedef enum opt_action {
    OPT_RUN = 0,
    OPT_HELP, /* --help, -h */
    OPT_HELP_MARKDOWN /* --help-markdown */,
    OPT_DUMP,   /* --dump-config */
    OPT_VERSION /* --version */
} opt_action;

/* One load.  Large (the origin): keep it static or on the heap. */
typedef struct opt_ctx {
    const opt_prog *prog;
    void *cfg;       /* borrowed */
    opt_origin *org; /* borrowed: the caller's, or &own */
    opt_origin own;
    opt_action action;
    char *args[OPT_MAX_ARGS]; /* positional words, borrowed from argv */
    size_t nargs;
    char **rest; /* after "--" (OPT_P_DASHDASH), NULL-terminated; or NULL */
    int nrest;
    char err[OPT_ERR_MAX];  /* why the load failed */
    char warn[OPT_ERR_MAX]; /* the last warning (deprecated option) */
    /* loader state */
    opt_src layer;
    const char *where; /* "command line", "environment", "file:line" */
    char where_buf[OPT_PATH_MAX + 32];
    unsigned char layer_of[OPT_MAX]; /* lists: the layer of the items */
} opt_ctx;

/* ---- loading (opt.c) ---- */

/*
 * Fills cfg (zeroed first) from the defaults, the config file (--config
 * FILE, or GPUFL_<PROGRAM>_CONFIG), the environment (envp, borrowed; NULL
 * = environ) and argv (argv[0] skipped; borrowed: OPT_ST_REF values, args
 * and rest point into it).  org (may be NULL) receives where each value
 * came from.  Returns 0; 2 for a usage error or 1 out of memory, with
 * c->err saying why.  cfg must be released with opt_release() either way.
 */
int opt_load(opt_ctx *c, const opt_prog *p, void *cfg, opt_origin *org,
             int argc, char **argv, char **envp);

/* The layers one by one (opt_load is these in order), for tests and the
 * fuzzer.  opt_begin zeroes cfg and applies the defaults; each returns 0,
 * 1 or 2 as opt_load.  opt_load_text reads a config file's text (len
 * bytes, need not end in NUL); name labels messages. */
int opt_begin(opt_ctx *c, const opt_prog *p, void *cfg, opt_origin *org);
int opt_load_file(opt_ctx *c, const char *path);
int opt_load_text(opt_ctx *c, const char *text, size_t len, const char *name);
int opt_load_env(opt_ctx *c, char **envp);
int opt_load_argv(opt_ctx *c, int argc, char **argv);

/* Frees what opt_load copied into cfg (OPT_ST_PTR strings, lists). */
void opt_release(const opt_prog *p, void *cfg);

/* The row named name (no "--"), or NULL. */
const opt_def *opt_find(const opt_prog *p, const char *name);

/* Where the value of row name came from in the load recorded in org. */
opt_src opt_source(const opt_prog *p, const opt_origin *org, const char *name);

/* The variable of o: GPUFL_<PROGRAM>_<NAME> or o->env; "" when it has
 * none.  out[cap]; returns out. */
const char *opt_env_name(const opt_prog *p, const opt_def *o, char *out,
                         size_t cap);

/*
 * Checks a table (tests call it on every program's): unique names and
 * variables, storage that fits the type, bounds in order, defaults that
 * parse.  0, or -1 with the reason in why[cap].
 */
int opt_table_check(const opt_prog *p, char *why, size_t cap);

/* ---- values (opt_val.c; no printing, no allocation but OPT_ST_PTR) ---- */

/* 0 and *out = 1/0 for true/yes/on/1 and false/no/off/0/"" in any case;
 * -1 otherwise (*out untouched). */
int opt_parse_bool(const char *s, int *out);

/* 0 and *out in bytes, or -1: "4096", "64k", "1.5M", "16MiB", "2GB". */
int opt_parse_size(const char *s, uint64_t *out);

/* 0 and *out in `unit`, or -1: "250ms", "30s", "1.5m", "4h", "7d"; a
 * bare number is in `bare`.  A value that is not a whole number of
 * `unit` is refused ("1ms" in seconds). */
int opt_parse_dur(const char *s, opt_unit bare, opt_unit unit, uint64_t *out);

/*
 * Parses v for the scalar row o (any type but OPT_LIST) and stores it in
 * the field at base + o->off.  0; -1 with why[cap] naming `name` (the
 * flag, key or variable as the user wrote it), the value (unless secret)
 * and what is allowed, the field untouched; -2 out of memory.
 */
int opt_value_set(const opt_def *o, void *base, const char *v, const char *name,
                  char *why, size_t cap);

/* What o takes, as said in errors and docs ("an integer from 1 to 64");
 * out[cap], returns out. */
const char *opt_allowed(const opt_def *o, char *out, size_t cap);

/* The current value of the scalar field at base + o->off in the option's
 * syntax (sizes in bytes, durations with their unit, enums as the word);
 * out[cap], returns out; NULL for an unset string. */
const char *opt_value_str(const opt_def *o, const void *base, char *out,
                          size_t cap);

/* ---- documentation and the command line (opt_doc.c) ---- */

/* --help: p->usage, every option with its default, bounds and variable,
 * the built-in flags, p->tail. */
void opt_help(const opt_prog *p, FILE *out);

/* The Markdown table of the options (docs/<program>.md). */
void opt_markdown(const opt_prog *p, FILE *out);

/* The effective configuration as config-file lines, each with a comment
 * saying where it came from (org may be NULL); secrets as "(set)". */
void opt_dump(const opt_prog *p, const void *cfg, const opt_origin *org,
              FILE *out);

/*
 * What a program's main() calls: opt_load with environ, a usage error
 * printed to stderr as "<program>: <why>" (returns 2, or 1), a warning
 * printed likewise; --help, --help-markdown, --dump-config and --version
 * printed to stdout (returns -1: exit 0).  0: run.
 */
int opt_cli(opt_ctx *c, const opt_prog *p, void *cfg, opt_origin *org, int argc,
            char **argv);

#endif
