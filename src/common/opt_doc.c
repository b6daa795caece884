/*
 * opt_doc.c - what the option engine prints (opt.h): --help, the Markdown
 * table of docs/<program>.md, --dump-config, and opt_cli(), the few lines
 * every main() would otherwise repeat.  Everything here is generated from
 * the program's table, so the parser, the help and the docs cannot drift.
 */
#include "common/opt.h"
#include "common/opt_int.h"

#include <stdarg.h>
#include <string.h>

/* Width of the flag column of --help. */
#define HELP_COL 28
/* Help text is wrapped before this column. */
#define HELP_WIDTH 80

/* The metavariable after "--name=": o->arg, or one from the type. */
static void metavar(const opt_def *o, char *out, size_t cap)
{
    opt_type t = o->type == OPT_LIST ? (o->item ? o->item : OPT_STR) : o->type;
    size_t k = 0;

    if (o->arg) {
        snprintf(out, cap, "%s", o->arg);
        return;
    }
    switch (t) {
    case OPT_INT: snprintf(out, cap, "N"); break;
    case OPT_SIZE: snprintf(out, cap, "SIZE"); break;
    case OPT_DUR: snprintf(out, cap, "DURATION"); break;
    case OPT_FLOAT: snprintf(out, cap, "X"); break;
    case OPT_ENUM:
        /* the words, without their "=N" values */
        for (const char *s = o->choices; *s && k + 1 < cap; s++) {
            if (*s == '=')
                while (s[1] && s[1] != '|')
                    s++;
            else
                out[k++] = *s;
        }
        out[k] = '\0';
        break;
    default: snprintf(out, cap, "VALUE"); break;
    }
}

/* "-q, --quiet", "--[no-]inotify", "--folder=DIR" */
static void flag_text(const opt_prog *p, const opt_def *o, char *out,
                      size_t cap)
{
    char mv[96], sh[8] = "";
    int on = 0;

    if (p->flags & OPT_P_NOPREFIX) {
        snprintf(out, cap, "%s", o->name);
        return;
    }
    if (o->short_name)
        snprintf(sh, sizeof sh, "-%c, ", o->short_name);
    if (o->type == OPT_BOOL) {
        /* a switch that is on by default is turned off with --no-NAME */
        on = o->def && !opt_parse_bool(o->def, &on) && on;
        if (on)
            snprintf(out, cap, "%s--%s, --no-%s", sh, o->name, o->name);
        else
            snprintf(out, cap, "%s--%s", sh, o->name);
        return;
    }
    metavar(o, mv, sizeof mv);
    snprintf(out, cap, "%s--%s=%s", sh, o->name, mv);
}

/* Row i of p's rows and then the built-in ones; NULL for a built-in row
 * p does not have (an environment-only table has none). */
static const opt_def *row_at(const opt_prog *p, size_t i)
{
    if (i < p->n)
        return &p->opts[i];
    if ((p->flags & OPT_P_NOPREFIX) || !opt_has_builtin(p, (int)(i - p->n)))
        return NULL;
    return &opt_builtin[i - p->n];
}

static int has_type(const opt_prog *p, opt_type t)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->opts[i].type == t ||
            (p->opts[i].type == OPT_LIST && p->opts[i].item == t))
            return 1;
    return 0;
}

/* Appends "; "-separated parts to out[cap] at *k. */
__attribute__((format(printf, 4, 5))) static void
add(char *out, size_t cap, size_t *k, const char *fmt, ...)
{
    va_list ap;
    int w;

    if (*k && *k + 2 < cap) {
        memcpy(out + *k, "; ", 3);
        *k += 2;
    }
    if (*k >= cap)
        return;
    va_start(ap, fmt);
    w = vsnprintf(out + *k, cap - *k, fmt, ap);
    va_end(ap);
    if (w > 0)
        *k = *k + (size_t)w < cap ? *k + (size_t)w : cap - 1;
}

/* text from column HELP_COL + 3, wrapped at HELP_WIDTH, then '\n'. */
static void put_wrapped(FILE *out, const char *text)
{
    size_t col = HELP_COL + 3;

    while (*text) {
        size_t w = strcspn(text, " ");
        if (col > HELP_COL + 3 && col + 1 + w > HELP_WIDTH) {
            fprintf(out, "\n%*s", HELP_COL + 3, "");
            col = HELP_COL + 3;
        } else if (col > HELP_COL + 3) {
            fputc(' ', out);
            col++;
        }
        fwrite(text, 1, w, out);
        col += w;
        text += w;
        while (*text == ' ')
            text++;
    }
    fputc('\n', out);
}

void opt_help(const opt_prog *p, FILE *out)
{
    char env[128], flag[160], r[112];

    if (p->usage)
        fputs(p->usage, out);
    if (p->flags & OPT_P_NOPREFIX)
        fputs("\nVariables:\n", out);
    else if (p->env_prefix)
        fprintf(out,
                "\nOptions (precedence: defaults < --config file < %s* "
                "environment < flags):\n",
                p->env_prefix);
    else
        fputs("\nOptions (precedence: defaults < --config file < flags):\n",
              out);
    for (size_t i = 0; i < p->n + OPT_NBUILTIN; i++) {
        const opt_def *o = row_at(p, i);
        char more[512];
        size_t k = 0;
        if (!o)
            continue;
        flag_text(p, o, flag, sizeof flag);
        fprintf(out, "  %s", flag);
        if (strlen(flag) > HELP_COL - 1)
            fprintf(out, "\n  %-*s ", HELP_COL, "");
        else
            fprintf(out, "%-*s", (int)(HELP_COL + 1 - strlen(flag)), "");
        put_wrapped(out, o->help);
        /* the details a user needs to write a value, on one more line */
        more[0] = '\0';
        if (o->flags & OPT_DEPRECATED)
            add(more, sizeof more, &k, "deprecated");
        if (o->type == OPT_LIST)
            add(more, sizeof more, &k, "%s, at most %zu",
                (o->flags & OPT_REPEAT) ? "repeatable" : "a list", o->nmax);
        if (*opt_range(o, r, sizeof r))
            add(more, sizeof more, &k, "%s", r);
        if (o->def_doc || (o->def && o->type != OPT_BOOL))
            add(more, sizeof more, &k, "default %s",
                o->def_doc ? o->def_doc : o->def);
        opt_env_name(p, o, env, sizeof env);
        if (*env && o->type == OPT_LIST && o->env_sep)
            add(more, sizeof more, &k, "env %s (items split at '%c')", env,
                o->env_sep);
        else if (*env && !(p->flags & OPT_P_NOPREFIX))
            add(more, sizeof more, &k, "env %s", env);
        if (k) {
            fprintf(out, "  %-*s ", HELP_COL, "");
            put_wrapped(out, more);
        }
    }
    if (has_type(p, OPT_SIZE) || has_type(p, OPT_DUR))
        fputs("\nSizes take k, M, G or T, with an optional i and B, in any "
              "case: powers of 1024\n(16M = 16MiB = 16777216 bytes). "
              "Durations take ms, s, m, h or d (250ms, 30s, 5m);\na bare "
              "number is in the option's own unit.\n",
              out);
    if (p->tail)
        fprintf(out, "\n%s", p->tail);
}

/* A Markdown table cell: '|' would end it, '<x>' would be HTML outside a
 * code span (inside one, an entity would show as written). */
static void md_put(FILE *out, const char *s)
{
    int code = 0;

    for (; *s; s++) {
        if (*s == '`')
            code = !code;
        if (*s == '|')
            fputs("\\|", out);
        else if (*s == '<' && !code)
            fputs("&lt;", out);
        else if (*s == '>' && !code)
            fputs("&gt;", out);
        else if (*s == '\n')
            fputc(' ', out);
        else
            fputc(*s, out);
    }
}

/* s as a code span of a table cell: only '|' needs escaping there. */
static void md_code(FILE *out, const char *s)
{
    fputc('`', out);
    for (; *s; s++)
        if (*s == '|')
            fputs("\\|", out);
        else
            fputc(*s == '\n' ? ' ' : *s, out);
    fputc('`', out);
}

void opt_markdown(const opt_prog *p, FILE *out)
{
    int noprefix = (p->flags & OPT_P_NOPREFIX) != 0;
    char env[128], flag[160], r[112], words[256];

    fprintf(out,
            "| %s | environment | default | meaning |\n|---|---|---|---|\n",
            noprefix ? "field" : "flag");
    for (size_t i = 0; i < p->n + OPT_NBUILTIN; i++) {
        const opt_def *o = row_at(p, i);
        if (!o)
            continue;
        flag_text(p, o, flag, sizeof flag);
        fputs("| ", out);
        md_code(out, flag);
        fputs(" | ", out);
        opt_env_name(p, o, env, sizeof env);
        if (*env)
            md_code(out, env);
        else
            fputs("-", out);
        fputs(" | ", out);
        if (o->def_doc)
            md_put(out, o->def_doc);
        else if (o->def)
            md_code(out, *o->def ? o->def : "\"\"");
        else if (o->type == OPT_BOOL)
            md_code(out, "false");
        else
            fputs("-", out);
        fputs(" | ", out);
        md_put(out, o->help);
        if (o->help[strlen(o->help) - 1] != '.')
            fputc('.', out);
        if (o->flags & OPT_DEPRECATED)
            fputs(" Deprecated.", out);
        if (o->type == OPT_LIST)
            fprintf(out, " %s, at most %zu.",
                    (o->flags & OPT_REPEAT) ? "Repeatable" : "A list", o->nmax);
        if (o->type == OPT_LIST && o->env_sep && *env)
            fprintf(out, " In the variable, items are separated by `%c`.",
                    o->env_sep);
        if (o->type == OPT_ENUM ||
            (o->type == OPT_LIST && o->item == OPT_ENUM)) {
            fputs(" One of: ", out);
            md_put(out, opt_allowed(o, words, sizeof words));
            fputc('.', out);
        } else if (*opt_range(o, r, sizeof r)) {
            fputs(" Range ", out);
            md_put(out, r);
            fputc('.', out);
        }
        if (o->flags & OPT_SECRET)
            fputs(" Secret: never printed.", out);
        fputs(" |\n", out);
    }
}

/* Whether v must be quoted to load back unchanged. */
static int needs_quotes(const char *v)
{
    size_t n = strlen(v);

    if (!n || v[0] == ' ' || v[0] == '\t' || v[0] == '"' || v[0] == '#' ||
        v[n - 1] == ' ' || v[n - 1] == '\t')
        return 1;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f ||
            (v[i] == '#' && (v[i - 1] == ' ' || v[i - 1] == '\t')))
            return 1;
    return 0;
}

static void put_value(FILE *out, const char *v)
{
    if (!needs_quotes(v)) {
        fputs(v, out);
        return;
    }
    fputc('"', out);
    for (; *v; v++) {
        unsigned char ch = (unsigned char)*v;
        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", out);
        else if (ch == '\t')
            fputs("\\t", out);
        else if (ch == '\r')
            fputs("\\r", out);
        else if (ch < 0x20 || ch == 0x7f)
            fprintf(out, "\\x%02x", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

static void put_source(FILE *out, const opt_prog *p, const opt_def *o,
                       const opt_origin *org)
{
    size_t i = (size_t)(o - p->opts);
    char env[128];

    if (!org)
        return;
    switch (org->src[i]) {
    case OPT_SRC_DEFAULT: fputs("  # default", out); break;
    case OPT_SRC_FILE:
        fprintf(out, "  # file %s:%u", org->file, (unsigned)org->line[i]);
        break;
    case OPT_SRC_ENV:
        fprintf(out, "  # env %s", opt_env_name(p, o, env, sizeof env));
        break;
    case OPT_SRC_FLAG: fputs("  # flag", out); break;
    default: break;
    }
}

void opt_dump(const opt_prog *p, const void *cfg, const opt_origin *org,
              FILE *out)
{
    char buf[128];

    fprintf(out, "# %s: the effective configuration, as a config file\n",
            p->name);
    for (size_t i = 0; i < p->n; i++) {
        const opt_def *o = &p->opts[i];
        const char *pre = (o->flags & OPT_CLI_ONLY) ? "# --" : "";
        if (o->type == OPT_LIST) {
            opt_def item = *o;
            size_t n = *(const size_t *)(const void *)((const char *)cfg +
                                                       o->count_off);
            item.type = o->item ? o->item : OPT_STR;
            if (!n)
                fprintf(out, "# %s: no values\n", o->name);
            for (size_t k = 0; k < n; k++) {
                const char *v;
                item.off = o->off + k * o->size;
                v = opt_value_str(&item, cfg, buf, sizeof buf);
                fprintf(out, "%s%s = ", pre, o->name);
                put_value(out, (o->flags & OPT_SECRET) ? "(set)" : v ? v : "");
                put_source(out, p, o, org);
                fputc('\n', out);
            }
            continue;
        }
        {
            const char *v = opt_value_str(o, cfg, buf, sizeof buf);
            /* never set: a zero would not load back within the bounds */
            if (!v || (org && org->src[i] == OPT_SRC_UNSET)) {
                fprintf(out, "# %s is unset\n", o->name);
                continue;
            } else {
                fprintf(out, "%s%s = ", pre, o->name);
                put_value(out, (o->flags & OPT_SECRET) ? "(set)" : v);
            }
        }
        put_source(out, p, o, org);
        fputc('\n', out);
    }
}

int opt_cli(opt_ctx *c, const opt_prog *p, void *cfg, opt_origin *org, int argc,
            char **argv)
{
    int rc = opt_load(c, p, cfg, org, argc, argv, NULL);

    if (rc) {
        fprintf(stderr, "%s: %s\n", p->name, c->err);
        return rc;
    }
    if (c->warn[0])
        fprintf(stderr, "%s: warning: %s\n", p->name, c->warn);
    switch (c->action) {
    case OPT_HELP: opt_help(p, stdout); return -1;
    case OPT_HELP_MARKDOWN:
        /* the docs test runs this: a malformed table must fail it */
        if (opt_table_check(p, c->err, sizeof c->err)) {
            fprintf(stderr, "%s: option table: %s\n", p->name, c->err);
            return 1;
        }
        opt_markdown(p, stdout);
        return -1;
    case OPT_DUMP: opt_dump(p, cfg, c->org, stdout); return -1;
    case OPT_VERSION: printf("%s %s\n", p->name, p->version); return -1;
    case OPT_RUN: break;
    }
    return 0;
}
