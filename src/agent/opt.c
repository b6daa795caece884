/*
 * opt.c - the option table of gpufl-agent and the four layers that fill
 * it (defaults, config file, GPUFL_AGENT_* environment, flags).
 *
 * Every option is one row of agent_opts[]: parsing, --help, --dump-config
 * and the Markdown for docs/agent.md are all generated from it, so they
 * cannot drift apart.  The config file holds "key = value" lines with the
 * flag names as keys ('#' starts a comment; folder may repeat); the
 * environment variable of "archiver-secret-key" is
 * GPUFL_AGENT_ARCHIVER_SECRET_KEY; a list variable separates items by ','.
 */
#include "agent/opt.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

typedef enum opt_type {
    OT_STR,  /* char *, copied */
    OT_LIST, /* char *folder[] */
    OT_BOOL, /* int */
    OT_U64,  /* uint64_t within [min, max] */
    OT_ENUM  /* char *, one of `choices` ('|'-separated) */
} opt_type;

#define OF_SECRET 0x01 /* never printed */
#define OF_CLI 0x02    /* command line only: no env, no config file */

typedef struct opt_def {
    const char *name; /* flag without "--", config key */
    opt_type type;
    size_t off;
    const char *def; /* NULL: unset */
    uint64_t min, max;
    const char *choices;
    unsigned flags;
    const char *help;
} opt_def;

#define OFF(f) offsetof(agent_cfg, f)

static const opt_def agent_opts[] = {
    { "folder", OT_LIST, OFF(folder), NULL, 0, 0, NULL, 0,
      "Folder holding gpufl logs (repeatable; env: comma-separated)." },
    { "type", OT_ENUM, OFF(type), "http", 0, 0, "http|kafka", 0,
      "Where events go." },
    { "url", OT_STR, OFF(url), NULL, 0, 0, NULL, 0,
      "HTTP: ingest base URL; the stream name is appended "
      "(e.g. http://host:8080/api/v1/events/)." },
    { "token", OT_STR, OFF(token), NULL, 0, 0, NULL, OF_SECRET,
      "HTTP: Bearer token (prefer the environment or the config file "
      "to the command line)." },
    { "compress", OT_ENUM, OFF(compress), "zstd", 0, 0, "zstd|gzip|none", 0,
      "HTTP: Content-Encoding of request bodies (a 415 falls back to "
      "none)." },
    { "batch-lines", OT_U64, OFF(batch_lines), "10000", 1, 1000000, NULL, 0,
      "Most lines in one request or Kafka batch." },
    { "batch-bytes", OT_U64, OFF(batch_bytes), "2097152", 4096, 268435456, NULL,
      0, "Most uncompressed bytes in one request." },
    { "linger-ms", OT_U64, OFF(linger_ms), "200", 0, 60000, NULL, 0,
      "Longest wait for a batch to fill before it is sent." },
    { "timeout-ms", OT_U64, OFF(timeout_ms), "30000", 100, 3600000, NULL, 0,
      "Total time one request may take (connect + send + response)." },
    { "retry-min-ms", OT_U64, OFF(retry_min_ms), "200", 1, 3600000, NULL, 0,
      "First retry delay; doubles per failure, with jitter." },
    { "retry-max-ms", OT_U64, OFF(retry_max_ms), "30000", 1, 3600000, NULL, 0,
      "Retry delay cap; also the wait after an auth/config error." },
    { "brokers", OT_STR, OFF(brokers), NULL, 0, 0, NULL, 0,
      "Kafka: bootstrap servers, host:port[,host:port...]." },
    { "topic-prefix", OT_STR, OFF(topic_prefix), "gpufl", 0, 0, NULL, 0,
      "Kafka: topics are <prefix>.device, .scope and .system." },
    { "archiver-endpoint", OT_STR, OFF(archiver_endpoint), NULL, 0, 0, NULL, 0,
      "S3: endpoint URL; unset = no archive." },
    { "archiver-bucket", OT_STR, OFF(archiver_bucket), NULL, 0, 0, NULL, 0,
      "S3: bucket." },
    { "archiver-access-key", OT_STR, OFF(archiver_access_key), NULL, 0, 0, NULL,
      0, "S3: access key id." },
    { "archiver-secret-key", OT_STR, OFF(archiver_secret_key), NULL, 0, 0, NULL,
      OF_SECRET, "S3: secret key." },
    { "archiver-region", OT_STR, OFF(archiver_region), "us-east-1", 0, 0, NULL,
      0, "S3: SigV4 region." },
    { "archiver-prefix", OT_STR, OFF(archiver_prefix), "gpufl", 0, 0, NULL, 0,
      "S3: key prefix (<prefix>/<host>/<session>/<stream>.<n>.log.zst)." },
    { "archiver-delete", OT_BOOL, OFF(archiver_delete), "false", 0, 0, NULL, 0,
      "S3: delete the local file after a verified upload." },
    { "cursor-file", OT_STR, OFF(cursor_file), "gpufl-agent.cursor", 0, 0, NULL,
      0, "Where shipped positions are kept." },
    { "dead-letter-file", OT_STR, OFF(dead_letter_file), NULL, 0, 0, NULL, 0,
      "Lines set aside (malformed, oversize, rejected); default "
      "<cursor-file>.dead.jsonl." },
    { "max-line-bytes", OT_U64, OFF(max_line_bytes), "1048576", 256, 67108864,
      NULL, 0, "Longer lines are dead-lettered." },
    { "poll-ms", OT_U64, OFF(poll_ms), "500", 10, 60000, NULL, 0,
      "Polling interval: folders on network file systems (NFS, SMB, FUSE, "
      "...) or without inotify are rescanned every 2 and their idle files "
      "checked every 1; local folders watched by inotify every 10 (a "
      "safety net)." },
    { "inotify", OT_BOOL, OFF(inotify), "true", 0, 0, NULL, 0,
      "Watch the folders with inotify; false = polling only (as on NFS)." },
    { "cursor-sync-ms", OT_U64, OFF(cursor_sync_ms), "100", 0, 60000, NULL, 0,
      "Least time between two cursor writes (each is fsynced)." },
    { "stats-s", OT_U64, OFF(stats_s), "10", 0, 86400, NULL, 0,
      "Seconds between stats lines on stderr; 0 = none." },
    { "once", OT_BOOL, OFF(once), "false", 0, 0, NULL, 0,
      "Ship what exists, then exit 0." },
    { "status", OT_BOOL, OFF(status), "false", 0, 0, NULL, OF_CLI,
      "Print the cursor's view (bytes behind per stream) and exit." },
    { "config", OT_STR, OFF(config), NULL, 0, 0, NULL, OF_CLI,
      "Config file of key = value lines (keys as the flags)." },
    { "dump-config", OT_BOOL, OFF(dump_config), "false", 0, 0, NULL, OF_CLI,
      "Print the effective configuration (secrets masked) and exit." },
    { "help-markdown", OT_BOOL, OFF(help_markdown), "false", 0, 0, NULL, OF_CLI,
      "The option table as Markdown (docs/agent.md is made so)." },
    { "help", OT_BOOL, OFF(help), "false", 0, 0, NULL, OF_CLI, "This text." },
};

#define NOPTS (sizeof(agent_opts) / sizeof(agent_opts[0]))

/* Which layer last set an option, so a list restarts once per layer. */
enum { L_DEF, L_FILE, L_ENV, L_FLAG };

typedef struct opt_state {
    agent_cfg *cfg;
    int layer[NOPTS];
    FILE *err;
    const char *where; /* "flag", "GPUFL_AGENT_X", "file:line" */
} opt_state;

static void *field(agent_cfg *cfg, const opt_def *o)
{
    return (char *)cfg + o->off;
}

static const opt_def *opt_find(const char *name, size_t n)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (strlen(agent_opts[i].name) == n &&
            memcmp(agent_opts[i].name, name, n) == 0)
            return &agent_opts[i];
    return NULL;
}

/* The closest name, for "did you mean" (shared prefix length). */
static const char *opt_hint(const char *name, size_t n)
{
    const char *best = NULL;
    size_t best_len = 0;

    for (size_t i = 0; i < NOPTS; i++) {
        size_t k = 0;
        const char *o = agent_opts[i].name;
        while (k < n && o[k] && o[k] == name[k])
            k++;
        if (k > best_len) {
            best_len = k;
            best = o;
        }
    }
    return best_len >= 2 ? best : NULL;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;

    if (!*s || *s == '-' || *s == '+')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

static int parse_bool(const char *s, int *out)
{
    if (!strcmp(s, "1") || !strcmp(s, "true") || !strcmp(s, "yes") ||
        !strcmp(s, "on"))
        *out = 1;
    else if (!strcmp(s, "0") || !strcmp(s, "false") || !strcmp(s, "no") ||
             !strcmp(s, "off"))
        *out = 0;
    else
        return -1;
    return 0;
}

static int choice_ok(const char *choices, const char *v)
{
    size_t n = strlen(v);
    const char *p = choices;

    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && memcmp(p, v, n) == 0)
            return 1;
        p += len + (bar ? 1 : 0);
    }
    return 0;
}

static int set_str(char **slot, const char *v)
{
    char *c = strdup(v);
    if (!c)
        return -1;
    free(*slot);
    *slot = c;
    return 0;
}

/* Applies one value; 0 or 2 with a message. */
static int opt_set(opt_state *st, const opt_def *o, const char *v, int layer)
{
    void *p = field(st->cfg, o);
    size_t idx = (size_t)(o - agent_opts);
    const char *shown = (o->flags & OF_SECRET) ? "(secret)" : v;

    if (strlen(v) >= AGENT_MAX_VALUE) {
        fprintf(st->err, "gpufl-agent: %s: value of %s is over %d bytes\n",
                st->where, o->name, AGENT_MAX_VALUE);
        return 2;
    }
    switch (o->type) {
    case OT_STR:
        if (set_str((char **)p, v))
            goto nomem;
        break;
    case OT_ENUM:
        if (!choice_ok(o->choices, v)) {
            fprintf(st->err,
                    "gpufl-agent: %s: %s must be one of %s, not '%s'\n",
                    st->where, o->name, o->choices, shown);
            return 2;
        }
        if (set_str((char **)p, v))
            goto nomem;
        break;
    case OT_BOOL:
        if (parse_bool(v, (int *)p)) {
            fprintf(st->err,
                    "gpufl-agent: %s: %s takes true or false, not '%s'\n",
                    st->where, o->name, shown);
            return 2;
        }
        break;
    case OT_U64: {
        uint64_t x;
        if (parse_u64(v, &x) || x < o->min || x > o->max) {
            fprintf(st->err,
                    "gpufl-agent: %s: %s takes an integer in [%llu, %llu], "
                    "not '%s'\n",
                    st->where, o->name, (unsigned long long)o->min,
                    (unsigned long long)o->max, shown);
            return 2;
        }
        *(uint64_t *)p = x;
        break;
    }
    case OT_LIST: {
        agent_cfg *c = st->cfg;
        if (st->layer[idx] != layer) {
            for (size_t i = 0; i < c->nfolder; i++) {
                free(c->folder[i]);
                c->folder[i] = NULL;
            }
            c->nfolder = 0;
        }
        if (!*v)
            break;
        if (c->nfolder == AGENT_MAX_FOLDERS) {
            fprintf(st->err, "gpufl-agent: %s: more than %d %s values\n",
                    st->where, AGENT_MAX_FOLDERS, o->name);
            return 2;
        }
        c->folder[c->nfolder] = strdup(v);
        if (!c->folder[c->nfolder])
            goto nomem;
        c->nfolder++;
        break;
    }
    }
    st->layer[idx] = layer;
    return 0;
nomem:
    fprintf(st->err, "gpufl-agent: out of memory\n");
    return 2;
}

static int unknown(opt_state *st, const char *name, size_t n)
{
    const char *h = opt_hint(name, n);
    fprintf(st->err, "gpufl-agent: %s: unknown option '%.*s'%s%s%s\n",
            st->where, (int)n, name, h ? " (did you mean --" : "", h ? h : "",
            h ? "?)" : "; see --help");
    return 2;
}

static char *trim(char *s)
{
    char *e;
    while (*s == ' ' || *s == '\t')
        s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        *--e = '\0';
    return s;
}

static int load_file(opt_state *st, const char *path)
{
    FILE *f = fopen(path, "re");
    char *buf = NULL, *line, *save = NULL;
    size_t n;
    int rc = 0, lineno = 0;
    char where[AGENT_MAX_VALUE + 32];

    if (!f) {
        fprintf(st->err, "gpufl-agent: cannot open config file %s: %s\n", path,
                strerror(errno));
        return 2;
    }
    buf = malloc(AGENT_MAX_CONFIG + 1);
    if (!buf) {
        fclose(f);
        return 2;
    }
    n = fread(buf, 1, AGENT_MAX_CONFIG + 1, f);
    fclose(f);
    if (n > AGENT_MAX_CONFIG) {
        fprintf(st->err, "gpufl-agent: config file %s is over %u bytes\n", path,
                AGENT_MAX_CONFIG);
        free(buf);
        return 2;
    }
    buf[n] = '\0';
    for (line = strtok_r(buf, "\n", &save); line && !rc;
         line = strtok_r(NULL, "\n", &save)) {
        char *hash = strchr(line, '#'), *eq, *key, *val;
        const opt_def *o;

        lineno++;
        if (hash)
            *hash = '\0';
        line = trim(line);
        if (!*line)
            continue;
        snprintf(where, sizeof where, "%s:%d", path, lineno);
        st->where = where;
        eq = strchr(line, '=');
        if (!eq) {
            fprintf(st->err, "gpufl-agent: %s: expected key = value\n", where);
            rc = 2;
            break;
        }
        *eq = '\0';
        key = trim(line);
        val = trim(eq + 1);
        o = opt_find(key, strlen(key));
        if (!o || (o->flags & OF_CLI)) {
            rc = unknown(st, key, strlen(key));
            break;
        }
        rc = opt_set(st, o, val, L_FILE);
    }
    free(buf);
    return rc;
}

/* GPUFL_AGENT_ARCHIVER_SECRET_KEY -> archiver-secret-key */
static int env_name(const opt_def *o, char *out, size_t cap)
{
    size_t n = strlen(o->name), k = sizeof("GPUFL_AGENT_") - 1;
    if (k + n + 1 > cap)
        return -1;
    memcpy(out, "GPUFL_AGENT_", k);
    for (size_t i = 0; i < n; i++) {
        char c = o->name[i];
        out[k + i] = c == '-' ? '_' : (char)(c >= 'a' && c <= 'z' ? c - 32 : c);
    }
    out[k + n] = '\0';
    return 0;
}

static const char *env_get(char **envp, const char *name)
{
    size_t n = strlen(name);
    for (char **e = envp; e && *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

static int load_env(opt_state *st, char **envp)
{
    char name[64];

    /* an unknown GPUFL_AGENT_* is a typo worth failing on */
    for (char **e = envp; e && *e; e++) {
        const char *eq;
        int found = 0;
        if (strncmp(*e, "GPUFL_AGENT_", 12) != 0)
            continue;
        eq = strchr(*e, '=');
        if (!eq)
            continue;
        for (size_t i = 0; i < NOPTS && !found; i++) {
            if (env_name(&agent_opts[i], name, sizeof name) == 0 &&
                strlen(name) == (size_t)(eq - *e) &&
                memcmp(name, *e, (size_t)(eq - *e)) == 0 &&
                (!(agent_opts[i].flags & OF_CLI) ||
                 agent_opts[i].off == OFF(config)))
                found = 1;
        }
        if (!found) {
            st->where = "environment";
            fprintf(st->err,
                    "gpufl-agent: environment: unknown variable %.*s; see "
                    "--help\n",
                    (int)(eq - *e), *e);
            return 2;
        }
    }
    for (size_t i = 0; i < NOPTS; i++) {
        const opt_def *o = &agent_opts[i];
        const char *v;
        if (o->flags & OF_CLI)
            continue;
        if (env_name(o, name, sizeof name))
            continue;
        v = env_get(envp, name);
        if (!v)
            continue;
        st->where = name;
        if (o->type == OT_LIST) {
            char *copy = strdup(v), *save = NULL;
            int rc = 0;
            if (!copy)
                return 2;
            /* an empty list still replaces the lower layers */
            rc = opt_set(st, o, "", L_ENV);
            for (char *it = strtok_r(copy, ",", &save); it && !rc;
                 it = strtok_r(NULL, ",", &save))
                rc = opt_set(st, o, trim(it), L_ENV);
            free(copy);
            if (rc)
                return rc;
        } else if (opt_set(st, o, v, L_ENV)) {
            return 2;
        }
    }
    return 0;
}

static int load_flags(opt_state *st, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *name, *eq, *v;
        const opt_def *o;
        size_t n;

        st->where = "command line";
        if (strncmp(a, "--", 2) != 0) {
            fprintf(st->err,
                    "gpufl-agent: unexpected argument '%s' (options start "
                    "with --; see --help)\n",
                    a);
            return 2;
        }
        name = a + 2;
        eq = strchr(name, '=');
        n = eq ? (size_t)(eq - name) : strlen(name);
        o = opt_find(name, n);
        if (!o)
            return unknown(st, name, n);
        if (eq) {
            v = eq + 1;
        } else if (o->type == OT_BOOL) {
            v = "true";
        } else if (i + 1 < argc) {
            v = argv[++i];
        } else {
            fprintf(st->err, "gpufl-agent: --%s needs a value\n", o->name);
            return 2;
        }
        if (opt_set(st, o, v, L_FLAG))
            return 2;
    }
    return 0;
}

int agent_cfg_load(agent_cfg *cfg, int argc, char **argv, char **envp,
                   FILE *err)
{
    opt_state st;
    const char *conf = NULL;
    int rc;

    memset(cfg, 0, sizeof *cfg);
    memset(&st, 0, sizeof st);
    st.cfg = cfg;
    st.err = err;
    st.where = "default";
    if (!envp)
        envp = environ;
    for (size_t i = 0; i < NOPTS; i++)
        if (agent_opts[i].def &&
            opt_set(&st, &agent_opts[i], agent_opts[i].def, L_DEF))
            return 2;
    /* the config file is named by a flag or the environment, but is the
     * lowest layer after the defaults */
    conf = env_get(envp, "GPUFL_AGENT_CONFIG");
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--config=", 9) == 0)
            conf = argv[i] + 9;
        else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            conf = argv[++i];
    }
    if (conf) {
        rc = load_file(&st, conf);
        if (rc)
            return rc;
    }
    rc = load_env(&st, envp);
    if (rc)
        return rc;
    return load_flags(&st, argc, argv);
}

int agent_cfg_check(const agent_cfg *cfg, FILE *err)
{
    if (!cfg->nfolder) {
        fprintf(err, "gpufl-agent: no --folder given; see --help\n");
        return 2;
    }
    if (!strcmp(cfg->type, "http") && !cfg->url && !cfg->status) {
        fprintf(err, "gpufl-agent: --type=http needs --url "
                     "(e.g. http://host:8080/api/v1/events/)\n");
        return 2;
    }
    if (!strcmp(cfg->type, "kafka") && !cfg->brokers && !cfg->status) {
        fprintf(err, "gpufl-agent: --type=kafka needs --brokers\n");
        return 2;
    }
    if (cfg->archiver_endpoint &&
        (!cfg->archiver_bucket || !cfg->archiver_access_key ||
         !cfg->archiver_secret_key)) {
        fprintf(err, "gpufl-agent: --archiver-endpoint needs "
                     "--archiver-bucket, --archiver-access-key and "
                     "--archiver-secret-key\n");
        return 2;
    }
    if (cfg->retry_min_ms > cfg->retry_max_ms) {
        fprintf(err, "gpufl-agent: --retry-min-ms is over --retry-max-ms\n");
        return 2;
    }
    return 0;
}

void agent_cfg_release(agent_cfg *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < NOPTS; i++) {
        const opt_def *o = &agent_opts[i];
        void *p = field(cfg, o);
        if (o->type == OT_STR || o->type == OT_ENUM) {
            free(*(char **)p);
            *(char **)p = NULL;
        }
    }
    for (size_t i = 0; i < cfg->nfolder; i++)
        free(cfg->folder[i]);
    cfg->nfolder = 0;
}

static const char *type_word(const opt_def *o)
{
    switch (o->type) {
    case OT_BOOL: return "";
    case OT_U64: return "=N";
    case OT_ENUM: return "=WORD";
    case OT_LIST: return "=DIR";
    default: return "=VALUE";
    }
}

void agent_opt_help(FILE *out)
{
    char env[64];

    fputs("usage: gpufl-agent --folder=DIR --type=http --url=URL [options]\n"
          "       gpufl-agent --folder=DIR --type=kafka --brokers=H:P "
          "[options]\n\n"
          "Tails gpufl logs (*.device|scope|system.log and their rotated "
          "files),\nships every line once acknowledged, and remembers where "
          "it is.\nPrecedence: defaults < --config file < GPUFL_AGENT_* "
          "environment < flags.\nExit: 0 ok, 1 runtime failure, 2 usage "
          "error.\n\n",
          out);
    for (size_t i = 0; i < NOPTS; i++) {
        const opt_def *o = &agent_opts[i];
        char flag[96];
        snprintf(flag, sizeof flag, "--%s%s", o->name, type_word(o));
        fprintf(out, "  %-28s %s\n", flag, o->help);
        if (o->choices)
            fprintf(out, "  %-28s one of: %s\n", "", o->choices);
        if (o->type == OT_U64)
            fprintf(out, "  %-28s range %llu..%llu\n", "",
                    (unsigned long long)o->min, (unsigned long long)o->max);
        if (o->def && o->type != OT_BOOL)
            fprintf(out, "  %-28s default: %s\n", "", o->def);
        if (!(o->flags & OF_CLI) && env_name(o, env, sizeof env) == 0)
            fprintf(out, "  %-28s env: %s\n", "", env);
        else if (o->off == OFF(config))
            fprintf(out, "  %-28s env: GPUFL_AGENT_CONFIG\n", "");
    }
}

void agent_opt_dump(const agent_cfg *cfg, FILE *out)
{
    for (size_t i = 0; i < NOPTS; i++) {
        const opt_def *o = &agent_opts[i];
        const void *p = (const char *)cfg + o->off;
        if (o->flags & OF_CLI)
            continue;
        switch (o->type) {
        case OT_LIST:
            for (size_t k = 0; k < cfg->nfolder; k++)
                fprintf(out, "%s = %s\n", o->name, cfg->folder[k]);
            break;
        case OT_BOOL:
            fprintf(out, "%s = %s\n", o->name,
                    *(const int *)p ? "true" : "false");
            break;
        case OT_U64:
            fprintf(out, "%s = %llu\n", o->name,
                    (unsigned long long)*(const uint64_t *)p);
            break;
        default: {
            const char *s = *(char *const *)p;
            if (!s)
                fprintf(out, "# %s is unset\n", o->name);
            else
                fprintf(out, "%s = %s\n", o->name,
                        (o->flags & OF_SECRET) ? "(set)" : s);
        }
        }
    }
}

/* Markdown table cells: '|' would end the cell, '<x>' would be HTML. */
static void md_put(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", out);
        else if (*s == '<')
            fputs("&lt;", out);
        else if (*s == '>')
            fputs("&gt;", out);
        else
            fputc(*s, out);
    }
}

void agent_opt_markdown(FILE *out)
{
    char env[64];

    fputs("| flag | env | default | meaning |\n|---|---|---|---|\n", out);
    for (size_t i = 0; i < NOPTS; i++) {
        const opt_def *o = &agent_opts[i];
        if (o->off == OFF(config))
            snprintf(env, sizeof env, "GPUFL_AGENT_CONFIG");
        else if ((o->flags & OF_CLI) || env_name(o, env, sizeof env))
            snprintf(env, sizeof env, "-");
        fprintf(out, "| `--%s%s` | `%s` | %s | ", o->name, type_word(o), env,
                o->def ? o->def : "-");
        md_put(out, o->help);
        if (o->choices) {
            fputs(" One of `", out);
            md_put(out, o->choices);
            fputs("`.", out);
        }
        if (o->type == OT_U64)
            fprintf(out, " Range %llu..%llu.", (unsigned long long)o->min,
                    (unsigned long long)o->max);
        fputs(" |\n", out);
    }
}
