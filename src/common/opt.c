/*
 * opt.c - the option loader (opt.h): defaults, the config file, the
 * GPUFL_<PROGRAM>_* environment and the command line, each layer
 * overwriting the one before; the built-in flags; unknown names refused
 * with the nearest known one as a hint; the table checks tests run.
 */
#include "common/opt.h"
#include "common/opt_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

const opt_def opt_builtin[OPT_NBUILTIN] = {
    [OPT_B_CONFIG] = { .name = "config",
                       .type = OPT_STR,
                       .arg = "FILE",
                       .help = "Read options from FILE first: \"key = value\" "
                               "lines, the flag names as keys, # comments." },
    [OPT_B_DUMP] = { .name = "dump-config",
                     .type = OPT_BOOL,
                     .flags = OPT_CLI_ONLY,
                     .help = "Print the effective configuration, where each "
                             "value came from (default, file, env, flag; "
                             "secrets masked), and exit." },
    [OPT_B_MARKDOWN] = { .name = "help-markdown",
                         .type = OPT_BOOL,
                         .flags = OPT_CLI_ONLY,
                         .help = "Print this table as Markdown (the docs are "
                                 "made so) and exit." },
    [OPT_B_HELP] = { .name = "help",
                     .type = OPT_BOOL,
                     .short_name = 'h',
                     .flags = OPT_CLI_ONLY,
                     .help = "Print this text and exit." },
    [OPT_B_VERSION] = { .name = "version",
                        .type = OPT_BOOL,
                        .flags = OPT_CLI_ONLY,
                        .help = "Print the version and exit." },
};

int opt_has_builtin(const opt_prog *p, int b)
{
    return b != OPT_B_VERSION || p->version != NULL;
}

static int is_builtin(const opt_def *o)
{
    return o >= opt_builtin && o < opt_builtin + OPT_NBUILTIN;
}

/* The row named name[0..n), or NULL. */
static const opt_def *find_n(const opt_prog *p, const char *name, size_t n)
{
    for (size_t i = 0; i < p->n; i++)
        if (strlen(p->opts[i].name) == n && !memcmp(p->opts[i].name, name, n))
            return &p->opts[i];
    for (int b = 0; b < OPT_NBUILTIN; b++)
        if (opt_has_builtin(p, b) && strlen(opt_builtin[b].name) == n &&
            !memcmp(opt_builtin[b].name, name, n))
            return &opt_builtin[b];
    return NULL;
}

const opt_def *opt_find(const opt_prog *p, const char *name)
{
    return find_n(p, name, strlen(name));
}

const char *opt_env_name(const opt_prog *p, const opt_def *o, char *out,
                         size_t cap)
{
    size_t k;

    out[0] = '\0';
    if (o->flags & OPT_CLI_ONLY)
        return out;
    if (o->env) {
        snprintf(out, cap, "%s", o->env);
        return out;
    }
    if (!p->env_prefix || (p->flags & OPT_P_NOPREFIX))
        return out;
    k = (size_t)snprintf(out, cap, "%s", p->env_prefix);
    for (const char *s = o->name; *s && k + 1 < cap; s++)
        out[k++] = *s == '-' ? '_' : (*s >= 'a' && *s <= 'z') ? *s - 32 : *s;
    out[k < cap ? k : cap - 1] = '\0';
    return out;
}

/* Edit distance (insert, delete, replace, swap of neighbours) between
 * a[0..n) and b, for hints; big when either is long. */
static size_t distance(const char *a, size_t n, const char *b)
{
    enum { MAXL = 64 };
    size_t m = strlen(b), d[MAXL + 1][MAXL + 1];

    if (n > MAXL || m > MAXL)
        return (size_t)-1;
    for (size_t i = 0; i <= n; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
                a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

/* Whether cand is close enough to what was typed to suggest it. */
static size_t closeness(const char *typed, size_t n, const char *cand)
{
    size_t d = distance(typed, n, cand);

    /* "--batch" for --batch-lines: a prefix of 3 or more counts as close */
    if (n >= 3 && strlen(cand) > n && !strncmp(cand, typed, n))
        d = d < 2 ? d : 2;
    return d <= 2 || d * 3 <= n ? d : (size_t)-1;
}

/* The nearest row name to name[0..n) that fits `want` (1: a flag, 2: a
 * config key, 3: a variable, into out[cap]); "" when none is close. */
static void hint(const opt_prog *p, const char *name, size_t n, int want,
                 char *out, size_t cap)
{
    size_t best = (size_t)-1;
    char env[128];

    out[0] = '\0';
    for (size_t i = 0; i < p->n + OPT_NBUILTIN; i++) {
        const opt_def *o = i < p->n ? &p->opts[i] : &opt_builtin[i - p->n];
        const char *cand = o->name;
        size_t d;
        if (i >= p->n && !opt_has_builtin(p, (int)(i - p->n)))
            continue;
        if (want == 2 && ((o->flags & OPT_CLI_ONLY) || is_builtin(o)))
            continue;
        if (want == 3) {
            cand = opt_env_name(p, o, env, sizeof env);
            if (!*cand)
                continue;
        }
        d = closeness(name, n, cand);
        if (d < best) {
            best = d;
            snprintf(out, cap, "%s%s", want == 1 ? "--" : "", cand);
        }
    }
}

__attribute__((format(printf, 2, 3))) static int fail(opt_ctx *c,
                                                      const char *fmt, ...)
{
    va_list ap;
    size_t k = (size_t)snprintf(c->err, sizeof c->err, "%s: ", c->where);

    if (k >= sizeof c->err)
        k = sizeof c->err - 1;
    va_start(ap, fmt);
    vsnprintf(c->err + k, sizeof c->err - k, fmt, ap);
    va_end(ap);
    return 2;
}

static int unknown(opt_ctx *c, const char *what, const char *name, size_t n,
                   int want)
{
    char h[160];

    hint(c->prog, name, n, want, h, sizeof h);
    return fail(c, "unknown %s '%s%.*s'%s%s%s", what, want == 1 ? "--" : "",
                (int)(n > 200 ? 200 : n), name, *h ? " (did you mean '" : "", h,
                *h ? "'?)" : "; see --help");
}

static size_t *list_count(const opt_def *o, void *cfg)
{
    return (size_t *)(void *)((char *)cfg + o->count_off);
}

static void list_clear(const opt_def *o, void *cfg)
{
    size_t *n = list_count(o, cfg);

    if (o->store == OPT_ST_PTR)
        for (size_t i = 0; i < *n; i++) {
            char **slot = (char **)(void *)((char *)cfg + o->off + i * o->size);
            free(*slot);
            *slot = NULL;
        }
    *n = 0;
}

/* Applies one value of the current layer to row o; name is how the user
 * spelled it.  0, 1 (out of memory) or 2. */
static int set(opt_ctx *c, const opt_def *o, const char *v, const char *name)
{
    size_t idx = (size_t)(o - c->prog->opts);
    char why[OPT_ERR_MAX - 64];
    int rc;

    if (o->type == OPT_LIST) {
        opt_def item = *o;
        size_t *n = list_count(o, c->cfg);
        /* a list set in a layer replaces the lower layers' items */
        if (c->layer_of[idx] != c->layer || !(o->flags & OPT_REPEAT))
            list_clear(o, c->cfg);
        c->layer_of[idx] = (unsigned char)c->layer;
        c->org->src[idx] = (unsigned char)c->layer;
        if (!*v)
            return 0;
        if (*n == o->nmax)
            return fail(c, "%s: more than %zu values", name, o->nmax);
        item.type = o->item ? o->item : OPT_STR;
        item.off = o->off + *n * o->size;
        rc = opt_value_set(&item, c->cfg, v, name, why, sizeof why);
        if (rc == 0)
            (*n)++;
    } else {
        rc = opt_value_set(o, c->cfg, v, name, why, sizeof why);
    }
    if (rc == -2) {
        snprintf(c->err, sizeof c->err, "out of memory");
        return 1;
    }
    if (rc)
        return fail(c, "%s", why);
    c->org->src[idx] = (unsigned char)c->layer;
    c->org->line[idx] = 0;
    if ((o->flags & OPT_DEPRECATED) && c->layer != OPT_SRC_DEFAULT)
        snprintf(c->warn, sizeof c->warn, "%s: %s is deprecated (see --help)",
                 c->where, name);
    return 0;
}

int opt_begin(opt_ctx *c, const opt_prog *p, void *cfg, opt_origin *org)
{
    int rc;

    memset(c, 0, sizeof *c);
    c->prog = p;
    c->cfg = cfg;
    c->org = org ? org : &c->own;
    memset(c->org, 0, sizeof *c->org);
    memset(cfg, 0, p->size);
    if (p->n > OPT_MAX) {
        snprintf(c->err, sizeof c->err, "%s has more than %d options", p->name,
                 OPT_MAX);
        return 2;
    }
    c->layer = OPT_SRC_DEFAULT;
    c->where = "default";
    for (size_t i = 0; i < p->n; i++) {
        /* a switch without a default is off by default, not unset */
        if (p->opts[i].type == OPT_BOOL)
            c->org->src[i] = OPT_SRC_DEFAULT;
        if (p->opts[i].def &&
            (rc = set(c, &p->opts[i], p->opts[i].def, p->opts[i].name)) != 0)
            return rc;
    }
    return 0;
}

/* ---- the config file ---- */

static int is_blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r';
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    ch = (char)(ch | 0x20);
    return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* A double-quoted value at s (past the opening quote) into out[cap];
 * returns the end of the line's value part, NULL when malformed. */
static const char *unquote(const char *s, const char *end, char *out,
                           size_t cap)
{
    size_t k = 0;

    while (s < end && *s != '"') {
        char ch = *s++;
        if (ch == '\\') {
            if (s == end)
                return NULL;
            switch (ch = *s++) {
            case 'n': ch = '\n'; break;
            case 't': ch = '\t'; break;
            case 'r': ch = '\r'; break;
            case '"':
            case '\\': break;
            case 'x': {
                int hi = s < end ? hexval(s[0]) : -1;
                int lo = s + 1 < end ? hexval(s[1]) : -1;
                if (hi < 0 || lo < 0 || (hi | lo) == 0)
                    return NULL;
                ch = (char)(hi << 4 | lo);
                s += 2;
                break;
            }
            default: return NULL;
            }
        }
        if (k + 1 >= cap)
            return NULL;
        out[k++] = ch;
    }
    if (s == end)
        return NULL;
    out[k] = '\0';
    return s + 1;
}

/* One line, without its '\n'.  0, 1 or 2. */
static int file_line(opt_ctx *c, const char *s, const char *end, char *val)
{
    const char *k, *ke, *v, *ve;
    const opt_def *o;

    while (s < end && is_blank(*s))
        s++;
    if (s == end || *s == '#')
        return 0;
    if (memchr(s, '\0', (size_t)(end - s)))
        return fail(c, "a NUL byte");
    k = s;
    while (s < end && *s != '=' && !is_blank(*s))
        s++;
    ke = s;
    while (s < end && is_blank(*s))
        s++;
    if (s == end || *s != '=' || ke == k)
        return fail(c, "expected key = value");
    s++;
    while (s < end && is_blank(*s))
        s++;
    o = find_n(c->prog, k, (size_t)(ke - k));
    if (!o || is_builtin(o) || (o->flags & OPT_CLI_ONLY))
        return unknown(c, "key", k, (size_t)(ke - k), 2);
    if (s < end && *s == '"') {
        s = unquote(s + 1, end, val, OPT_VALUE_MAX);
        if (!s)
            return fail(c,
                        "%s: a quoted value must end in '\"' and use only "
                        "the escapes \\\" \\\\ \\n \\t \\r \\xHH (not \\x00), "
                        "at most %d bytes",
                        o->name, OPT_VALUE_MAX - 1);
        while (s < end && is_blank(*s))
            s++;
        if (s < end && *s != '#')
            return fail(c, "%s: text after the closing quote", o->name);
    } else {
        /* '#' first or after a blank starts a comment: "a#b" is a value */
        v = s;
        ve = s;
        for (; s < end && !(*s == '#' && (s == v || is_blank(s[-1]))); s++)
            if (!is_blank(*s))
                ve = s + 1;
        if ((size_t)(ve - v) >= OPT_VALUE_MAX)
            return fail(c, "%s: the value is longer than %d bytes", o->name,
                        OPT_VALUE_MAX - 1);
        memcpy(val, v, (size_t)(ve - v));
        val[ve - v] = '\0';
    }
    return set(c, o, val, o->name);
}

int opt_load_text(opt_ctx *c, const char *text, size_t len, const char *name)
{
    const char *s = text, *end = text + len;
    char *val = malloc(OPT_VALUE_MAX);
    uint32_t line = 0;
    int rc = 0;

    if (!val) {
        snprintf(c->err, sizeof c->err, "out of memory");
        return 1;
    }
    c->layer = OPT_SRC_FILE;
    while (s < end && !rc) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *le = nl ? nl : end;
        line++;
        snprintf(c->where_buf, sizeof c->where_buf, "%s:%u", name,
                 (unsigned)line);
        c->where = c->where_buf;
        rc = file_line(c, s, le, val);
        /* the line of the row it set, for --dump-config */
        for (size_t i = 0; !rc && i < c->prog->n; i++)
            if (c->org->src[i] == OPT_SRC_FILE && !c->org->line[i])
                c->org->line[i] = line;
        s = nl ? nl + 1 : end;
    }
    free(val);
    return rc;
}

int opt_load_file(opt_ctx *c, const char *path)
{
    FILE *f = fopen(path, "re");
    char *buf;
    size_t n;
    int rc;

    c->where = "--config";
    if (!f)
        return fail(c, "cannot open config file %s: %s", path, strerror(errno));
    buf = malloc(OPT_FILE_MAX + 1);
    if (!buf) {
        fclose(f);
        snprintf(c->err, sizeof c->err, "out of memory");
        return 1;
    }
    n = fread(buf, 1, OPT_FILE_MAX + 1, f);
    rc = ferror(f);
    fclose(f);
    if (rc || n > OPT_FILE_MAX) {
        free(buf);
        return fail(c, "config file %s: %s", path,
                    rc ? "cannot be read" : "larger than 1 MiB");
    }
    snprintf(c->org->file, sizeof c->org->file, "%s", path);
    rc = opt_load_text(c, buf, n, path);
    free(buf);
    return rc;
}

/* ---- the environment ---- */

static const char *env_get(char **envp, const char *name)
{
    size_t n = strlen(name);

    for (char **e = envp; e && *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

static void config_env(const opt_prog *p, char *out, size_t cap)
{
    opt_env_name(p, &opt_builtin[OPT_B_CONFIG], out, cap);
}

/* A GPUFL_<PROGRAM>_* variable that names nothing is a typo worth
 * stopping for. */
static int env_unknown(opt_ctx *c, char **envp)
{
    const opt_prog *p = c->prog;
    size_t plen = strlen(p->env_prefix);
    char name[128];

    for (char **e = envp; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        size_t n = eq ? (size_t)(eq - *e) : 0;
        int known = 0;
        if (!eq || strncmp(*e, p->env_prefix, plen))
            continue;
        config_env(p, name, sizeof name);
        known = strlen(name) == n && !memcmp(name, *e, n);
        for (size_t i = 0; i < p->n && !known; i++) {
            opt_env_name(p, &p->opts[i], name, sizeof name);
            known = strlen(name) == n && !memcmp(name, *e, n);
        }
        for (const char *const *k = p->env_known; k && *k && !known; k++)
            known = strlen(*k) == n && !memcmp(*k, *e, n);
        if (!known)
            return unknown(c, "variable", *e, n, 3);
    }
    return 0;
}

int opt_load_env(opt_ctx *c, char **envp)
{
    const opt_prog *p = c->prog;
    char name[128];
    int rc;

    c->layer = OPT_SRC_ENV;
    c->where = "environment";
    if (!envp)
        envp = environ;
    if (p->env_prefix && !(p->flags & OPT_P_NOPREFIX) &&
        (rc = env_unknown(c, envp)) != 0)
        return rc;
    for (size_t i = 0; i < p->n; i++) {
        const opt_def *o = &p->opts[i];
        const char *v = env_get(envp, opt_env_name(p, o, name, sizeof name));
        if (!*name || !v)
            continue;
        if (o->type == OPT_LIST && o->env_sep) {
            /* an empty variable still replaces the lower layers' list */
            char item[OPT_VALUE_MAX];
            if ((rc = set(c, o, "", name)) != 0)
                return rc;
            while (*v) {
                const char *sep = strchr(v, o->env_sep);
                size_t len = sep ? (size_t)(sep - v) : strlen(v);
                const char *a = v, *b = v + len;
                while (a < b && is_blank(*a))
                    a++;
                while (b > a && is_blank(b[-1]))
                    b--;
                if ((size_t)(b - a) >= sizeof item)
                    return fail(c, "%s: an item is longer than %zu bytes", name,
                                sizeof item - 1);
                memcpy(item, a, (size_t)(b - a));
                item[b - a] = '\0';
                if (*item && (rc = set(c, o, item, name)) != 0)
                    return rc;
                v = sep ? sep + 1 : v + len;
            }
        } else if ((rc = set(c, o, v, name)) != 0) {
            return rc;
        }
    }
    return 0;
}

/* ---- the command line ---- */

/* Walks argv: apply 0 only finds --config (*conf), apply 1 sets every
 * other option and the positional words. */
static int walk_argv(opt_ctx *c, int argc, char **argv, int apply,
                     const char **conf)
{
    const opt_prog *p = c->prog;

    c->layer = OPT_SRC_FLAG;
    c->where = "command line";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *name, *eq = NULL, *v;
        const opt_def *o = NULL;
        char spelled[80];
        size_t n;
        int neg = 0, rc, on;

        if (!strcmp(a, "--") && (p->flags & OPT_P_DASHDASH)) {
            c->rest = argv + i + 1;
            c->nrest = argc - i - 1;
            return 0;
        }
        if (a[0] == '-' && a[1] && a[1] != '-' && !a[2]) {
            for (size_t k = 0; k < p->n + OPT_NBUILTIN && !o; k++) {
                const opt_def *r =
                    k < p->n ? &p->opts[k] : &opt_builtin[k - p->n];
                if (r->short_name == a[1])
                    o = r;
            }
            if (!o)
                return fail(c, "unknown option '%s'; see --help", a);
            name = o->name;
            n = strlen(name);
        } else if (a[0] == '-' && a[1] == '-' && a[2]) {
            name = a + 2;
            eq = strchr(name, '=');
            n = eq ? (size_t)(eq - name) : strlen(name);
            o = find_n(p, name, n);
            if (!o && n > 3 && !strncmp(name, "no-", 3)) {
                o = find_n(p, name + 3, n - 3);
                neg = o && o->type == OPT_BOOL;
                if (!neg)
                    o = NULL;
            }
            if (!o)
                return unknown(c, "option", name, n, 1);
        } else {
            if (!(p->flags & OPT_P_ARGS) || c->nargs == OPT_MAX_ARGS)
                return fail(c,
                            "unexpected argument '%.200s' (options start "
                            "with --; see --help)",
                            a);
            if (apply)
                c->args[c->nargs++] = argv[i];
            continue;
        }
        snprintf(spelled, sizeof spelled, "--%s%s", neg ? "no-" : "", o->name);
        if (neg && eq)
            return fail(c, "%s takes no value", spelled);
        if (neg)
            v = "false";
        else if (eq)
            v = eq + 1;
        else if (o->type == OPT_BOOL)
            v = "true";
        else if (i + 1 < argc)
            v = argv[++i];
        else
            return fail(c, "%s needs a value", spelled);
        if (o == &opt_builtin[OPT_B_CONFIG]) {
            if (!apply)
                *conf = v;
            continue;
        }
        if (!apply)
            continue;
        if (!is_builtin(o)) {
            if ((rc = set(c, o, v, spelled)) != 0)
                return rc;
            continue;
        }
        if (opt_parse_bool(v, &on))
            return fail(c, "%s takes true or false, not '%.100s'", spelled, v);
        /* --help wins over the others, whatever the order */
        if (on && c->action != OPT_HELP)
            c->action = o == &opt_builtin[OPT_B_HELP]       ? OPT_HELP
                        : o == &opt_builtin[OPT_B_DUMP]     ? OPT_DUMP
                        : o == &opt_builtin[OPT_B_MARKDOWN] ? OPT_HELP_MARKDOWN
                                                            : OPT_VERSION;
    }
    return 0;
}

int opt_load_argv(opt_ctx *c, int argc, char **argv)
{
    return walk_argv(c, argc, argv, 1, NULL);
}

int opt_load(opt_ctx *c, const opt_prog *p, void *cfg, opt_origin *org,
             int argc, char **argv, char **envp)
{
    const char *conf = NULL;
    char name[128];
    int rc;

    rc = opt_begin(c, p, cfg, org);
    if (rc)
        return rc;
    if (!envp)
        envp = environ;
    /* the file is named by a flag or the environment, but is the lowest
     * layer after the defaults */
    config_env(p, name, sizeof name);
    if (*name)
        conf = env_get(envp, name);
    rc = walk_argv(c, argc, argv, 0, &conf);
    if (rc)
        return rc;
    if (conf && *conf && (rc = opt_load_file(c, conf)) != 0)
        return rc;
    rc = opt_load_env(c, envp);
    if (rc)
        return rc;
    return opt_load_argv(c, argc, argv);
}

void opt_release(const opt_prog *p, void *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < p->n; i++) {
        const opt_def *o = &p->opts[i];
        char **slot = (char **)(void *)((char *)cfg + o->off);
        if (o->type == OPT_LIST) {
            list_clear(o, cfg);
        } else if (o->store == OPT_ST_PTR) {
            free(*slot);
            *slot = NULL;
        }
    }
}

opt_src opt_source(const opt_prog *p, const opt_origin *org, const char *name)
{
    const opt_def *o = opt_find(p, name);

    if (!o || is_builtin(o) || !org)
        return OPT_SRC_UNSET;
    return (opt_src)org->src[o - p->opts];
}

/* ---- table checks ---- */

static int store_fits(const opt_def *o, opt_type t)
{
    int num = (o->store == OPT_ST_UINT || o->store == OPT_ST_SINT) &&
              (o->size == 1 || o->size == 2 || o->size == 4 || o->size == 8);

    switch (t) {
    case OPT_STR:
        return o->store == OPT_ST_PTR || o->store == OPT_ST_REF ||
               o->store == OPT_ST_ARR;
    case OPT_ENUM:
        return o->choices &&
               (num || o->store == OPT_ST_PTR || o->store == OPT_ST_ARR);
    case OPT_BOOL: return num;
    case OPT_INT: return num;
    case OPT_SIZE: return num && o->store == OPT_ST_UINT;
    case OPT_DUR:
        return num && o->store == OPT_ST_UINT &&
               (o->unit == OPT_MS || o->unit == OPT_SEC);
    case OPT_FLOAT: return o->store == OPT_ST_DBL;
    case OPT_LIST: return 0;
    }
    return 0;
}

int opt_table_check(const opt_prog *p, char *why, size_t cap)
{
    char e1[128], e2[128];
    void *scratch;
    opt_ctx *c;
    int rc;

    for (size_t i = 0; i < p->n; i++) {
        const opt_def *o = &p->opts[i];
        opt_type t =
            o->type == OPT_LIST ? (o->item ? o->item : OPT_STR) : o->type;
        if (!o->name || !*o->name || !o->help || !*o->help) {
            snprintf(why, cap, "row %zu: no name or no help", i);
            return -1;
        }
        if (!store_fits(o, t) ||
            (o->type == OPT_LIST && (!o->nmax || t == OPT_LIST)) ||
            o->off + (o->type == OPT_LIST ? o->nmax : 1) * o->size > p->size) {
            snprintf(why, cap, "%s: its field does not fit its type", o->name);
            return -1;
        }
        if ((o->max && o->min > o->max) || o->fmin > o->fmax) {
            snprintf(why, cap, "%s: min is over max", o->name);
            return -1;
        }
        for (size_t j = 0; j < p->n + OPT_NBUILTIN; j++) {
            const opt_def *r = j < p->n ? &p->opts[j] : &opt_builtin[j - p->n];
            if (r == o)
                continue;
            opt_env_name(p, o, e1, sizeof e1);
            opt_env_name(p, r, e2, sizeof e2);
            if (!strcmp(o->name, r->name) || (*e1 && !strcmp(e1, e2)) ||
                (o->short_name && o->short_name == r->short_name)) {
                snprintf(why, cap,
                         "%s: name, variable or short name used "
                         "twice",
                         o->name);
                return -1;
            }
        }
    }
    /* every default parses */
    scratch = calloc(1, p->size ? p->size : 1);
    c = malloc(sizeof *c);
    if (!scratch || !c) {
        free(scratch);
        free(c);
        snprintf(why, cap, "out of memory");
        return -1;
    }
    rc = opt_begin(c, p, scratch, NULL);
    if (rc)
        snprintf(why, cap, "%s", c->err);
    opt_release(p, scratch);
    free(scratch);
    free(c);
    return rc ? -1 : 0;
}
