/*
 * config.c - gpufl-server's one option table, and everything derived from
 * it: parsing of flags, GPUFL_SERVER_* variables and the config file,
 * --help, and the Markdown table in docs/server.md (--help-markdown).
 *
 * Precedence is applied by loading in order - defaults, file, environment,
 * flags - each layer overwriting the previous one.  The config file holds
 * "name = value" lines with the flag names; '#' starts a comment.
 */
#include "srv_int.h"

#include <gpufl/gpufl.h>

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { O_STR, O_UINT, O_SIZE, O_DUR, O_BOOL };

typedef struct opt {
    const char *name;
    int type;
    size_t off, size;
    const char *def;
    uint64_t min, max;
    const char *help;
} opt;

#define STR(n, m, d, h)                                                        \
    {                                                                          \
        n, O_STR, offsetof(srv_config, m), sizeof(((srv_config *)0)->m), d, 0, \
            0, h                                                               \
    }
#define NUM(n, t, m, d, lo, hi, h)                                             \
    {                                                                          \
        n, t, offsetof(srv_config, m), 8, d, lo, hi, h                         \
    }

static const opt opts[] = {
    STR("listen", listen, "127.0.0.1:8080",
        "address:port to listen on (port 0 picks a free one)"),
    STR("data-dir", data_dir, "./gpufl-data",
        "folder for the SQLite database and the admin token hash"),
    STR("db", db, "", "database URL: sqlite:PATH (default: DATA-DIR/gpufl.db)"),
    STR("admin-token", admin_token, "",
        "admin bearer token (default: generated once, printed, stored "
        "hashed)"),
    STR("config", config, "", "config file of \"name = value\" lines"),
    STR("ui-dir", ui_dir, "",
        "folder of the web UI's built files, "
        "served at / without auth"),
    STR("cors-origin", cors_origin, "",
        "Access-Control-Allow-Origin value (empty: CORS off)"),
    NUM("threads", O_UINT, threads, "4", 1, 64, "HTTP worker threads"),
    NUM("readers", O_UINT, readers, "4", 1, 16,
        "database connections for queries"),
    NUM("max-body", O_SIZE, max_body, "16M", 1024, 1ull << 32,
        "largest request body as sent (413 above)"),
    NUM("max-decoded", O_SIZE, max_decoded, "64M", 1024, 1ull << 34,
        "largest ingest body after decompression (413 above)"),
    NUM("max-lines", O_UINT, max_lines, "200000", 1, 10000000,
        "most lines in one ingest request (413 above)"),
    NUM("timeout", O_DUR, timeout_s, "60", 1, 86400,
        "idle keep-alive timeout, and the deadline of an authenticated "
        "request's body"),
    NUM("header-timeout", O_DUR, header_timeout_s, "10", 1, 3600,
        "a request's line and headers must have arrived this long after "
        "the connection opened or its request line began (else closed)"),
    NUM("max-conns", O_UINT, max_conns, "1000", 16, 100000,
        "most open connections; one more is answered 503 and closed"),
    NUM("max-conns-per-ip", O_UINT, max_conns_per_ip, "128", 1, 100000,
        "most open connections from one address (IPv6: one /64); one more "
        "is answered 429 and closed"),
    NUM("max-buffered", O_SIZE, max_buffered, "256M", 1024, 1ull << 40,
        "request body bytes held in memory across all connections (503 "
        "with Retry-After above); at least --max-body"),
    STR("tls-cert", tls_cert, "",
        "PEM certificate (chain) to serve HTTPS with; needs --tls-key"),
    STR("tls-key", tls_key, "", "PEM private key of --tls-cert"),
    NUM("stale-after", O_DUR, stale_after_s, "5m", 1, 1ull << 32,
        "a running session with no line for this long becomes stale "
        "(the server's own downtime not counted)"),
    NUM("retention-max-age", O_DUR, retention_max_age_s, "0", 0, 1ull << 40,
        "prune sessions whose last line is older (0: never)"),
    NUM("retention-max-db", O_SIZE, retention_max_db, "0", 0, 1ull << 50,
        "prune oldest sessions and memory profiles while the database is "
        "larger (0: no cap)"),
    NUM("memprof-max-age", O_DUR, memprof_max_age_s, "0", 0, 1ull << 40,
        "prune memory profiles that ended longer ago (0: as "
        "retention-max-age)"),
    NUM("retention-interval", O_DUR, retention_interval_s, "1h", 1, 1ull << 32,
        "how often retention runs"),
    NUM("quiet", O_BOOL, quiet, "false", 0, 1, "log nothing but errors"),
    STR("kafka-brokers", kafka_brokers, "",
        "Kafka bootstrap servers host:port,...; set: also consume the "
        "agent's topics"),
    STR("kafka-group", kafka_group, "gpufl-server",
        "Kafka consumer group (servers in one group share the partitions)"),
    STR("kafka-topic-prefix", kafka_topic_prefix, "gpufl",
        "topics are PREFIX.device, PREFIX.scope and PREFIX.system"),
    NUM("kafka-batch", O_UINT, kafka_batch, "5000", 1, 1000000,
        "most Kafka messages gathered per batch, and lines per "
        "transaction (more are stored in several)"),
    STR("name", key_name, "", "keys create: a label for the new key"),
    STR("role", key_role, "read", "keys create: ingest, read or admin"),
    STR("hosts", key_hosts, "",
        "keys create: the hosts an ingest key may write for, comma-separated "
        "(empty: any host)"),
};
#define NOPTS (sizeof(opts) / sizeof(opts[0]))

static const opt *find(const char *name, size_t n)
{
    for (size_t i = 0; i < NOPTS; i++)
        if (strlen(opts[i].name) == n && memcmp(opts[i].name, name, n) == 0)
            return &opts[i];
    return NULL;
}

/* The option whose name shares the longest prefix, for hints. */
static const char *nearest(const char *name, size_t n)
{
    size_t best = 0;
    const char *b = NULL;
    for (size_t i = 0; i < NOPTS; i++) {
        size_t k = 0;
        while (k < n && opts[i].name[k] && opts[i].name[k] == name[k])
            k++;
        if (k > best) {
            best = k;
            b = opts[i].name;
        }
    }
    return best >= 2 ? b : NULL;
}

static int parse_num(const opt *o, const char *v, uint64_t *out)
{
    char *end;
    unsigned long long x;
    uint64_t mul = 1;

    if (o->type == O_BOOL) {
        if (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes") ||
            !strcmp(v, "on"))
            *out = 1;
        else if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no") ||
                 !strcmp(v, "off"))
            *out = 0;
        else
            return -1;
        return 0;
    }
    if (!isdigit((unsigned char)*v))
        return -1;
    errno = 0;
    x = strtoull(v, &end, 10);
    if (errno)
        return -1;
    if (o->type == O_SIZE && *end) {
        switch (toupper((unsigned char)*end++)) {
        case 'K': mul = 1ull << 10; break;
        case 'M': mul = 1ull << 20; break;
        case 'G': mul = 1ull << 30; break;
        case 'T': mul = 1ull << 40; break;
        default: return -1;
        }
        if (*end == 'B' || *end == 'b' || *end == 'i')
            end += (*end == 'i') ? 2 : 1;
    } else if (o->type == O_DUR && *end) {
        switch (*end++) {
        case 's': mul = 1; break;
        case 'm': mul = 60; break;
        case 'h': mul = 3600; break;
        case 'd': mul = 86400; break;
        default: return -1;
        }
    }
    if (*end || (mul > 1 && x > UINT64_MAX / mul))
        return -1;
    x *= mul;
    if (x < o->min || x > o->max)
        return -2;
    *out = x;
    return 0;
}

static int set(srv_config *c, const opt *o, const char *v, const char *where,
               char *err, size_t cap)
{
    char *dst = (char *)c + o->off;
    int rc;

    if (o->type == O_STR) {
        size_t n = strlen(v);
        if (n >= o->size) {
            snprintf(err, cap, "%s: value of %s longer than %zu bytes", where,
                     o->name, o->size - 1);
            return 2;
        }
        memcpy(dst, v, n + 1);
        return 0;
    }
    rc = parse_num(o, v, (uint64_t *)(void *)dst);
    if (rc == -2)
        snprintf(err, cap, "%s: %s=%s is out of range [%llu, %llu]", where,
                 o->name, v, (unsigned long long)o->min,
                 (unsigned long long)o->max);
    else if (rc)
        snprintf(err, cap, "%s: %s=%s is not a valid %s", where, o->name, v,
                 o->type == O_SIZE   ? "size (e.g. 64M)"
                 : o->type == O_DUR  ? "duration (e.g. 30s, 5m, 7d)"
                 : o->type == O_BOOL ? "boolean"
                                     : "number");
    return rc ? 2 : 0;
}

static int unknown(const char *where, const char *name, size_t n, char *err,
                   size_t cap)
{
    const char *h = nearest(name, n);
    snprintf(err, cap, "%s: unknown option '%.*s'%s%s%s", where, (int)n, name,
             h ? " (did you mean '" : "", h ? h : "", h ? "'?)" : "");
    return 2;
}

static char *trim(char *s)
{
    char *e;
    while (isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

static int load_file(srv_config *c, const char *path, char *err, size_t cap)
{
    FILE *f = fopen(path, "r");
    char line[SRV_STR_MAX + 128], where[SRV_STR_MAX + 32];
    int ln = 0, rc = 0;

    if (!f) {
        snprintf(err, cap, "cannot open config file %s", path);
        return 2;
    }
    while (!rc && fgets(line, sizeof(line), f)) {
        char *eq, *k, *v, *hash;
        ln++;
        snprintf(where, sizeof(where), "%s:%d", path, ln);
        if (!strchr(line, '\n') && !feof(f)) {
            snprintf(err, cap, "%s: line too long", where);
            rc = 2;
            break;
        }
        if ((hash = strchr(line, '#')) != NULL)
            *hash = '\0';
        k = trim(line);
        if (!*k)
            continue;
        eq = strchr(k, '=');
        if (!eq) {
            snprintf(err, cap, "%s: expected name = value", where);
            rc = 2;
            break;
        }
        *eq = '\0';
        k = trim(k);
        v = trim(eq + 1);
        if (!find(k, strlen(k)) || !strcmp(k, "config"))
            rc = unknown(where, k, strlen(k), err, cap);
        else
            rc = set(c, find(k, strlen(k)), v, where, err, cap);
    }
    fclose(f);
    return rc;
}

/* GPUFL_SERVER_DATA_DIR for data-dir. */
static void env_name(const char *opt_name, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "GPUFL_SERVER_");
    for (const char *p = opt_name; *p && n + 1 < cap; p++)
        out[n++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
    out[n] = '\0';
}

void srv_config_help(FILE *f, int md)
{
    if (md) {
        fprintf(f, "| flag | environment | default | meaning |\n"
                   "|---|---|---|---|\n");
    } else {
        fprintf(f, "usage: gpufl-server [options]\n"
                   "       gpufl-server keys create --role ROLE [--name N]"
                   " [--hosts H1,H2]"
                   " [options]\n"
                   "       gpufl-server keys list [options]\n"
                   "       gpufl-server keys revoke ID [options]\n\n"
                   "Stores gpufl events POSTed to /api/v1/events/{device|"
                   "scope|system} and answers the query API under /api/v1/"
                   ".\n\nOptions (precedence: defaults < --config file < "
                   "GPUFL_SERVER_* environment < flags):\n");
    }
    for (size_t i = 0; i < NOPTS; i++) {
        char env[80];
        env_name(opts[i].name, env, sizeof(env));
        if (md)
            fprintf(f, "| `--%s` | `%s` | `%s` | %s |\n", opts[i].name, env,
                    opts[i].def[0] ? opts[i].def : "\"\"", opts[i].help);
        else
            fprintf(f, "  --%-20s %s\n  %22s [%s; default %s]\n", opts[i].name,
                    opts[i].help, "", env,
                    opts[i].def[0] ? opts[i].def : "none");
    }
    if (!md)
        fprintf(f, "\n  --help, --help-markdown, --version\n\n"
                   "Exit status: 0 ok, 1 runtime failure, 2 usage error.\n");
}

int srv_config_load(srv_config *c, int argc, char **argv, char **pos,
                    int pos_cap, int *npos, char *err, size_t cap)
{
    const char *cfg_file = NULL;
    char env[80];
    int rc;

    memset(c, 0, sizeof(*c));
    *npos = 0;
    for (size_t i = 0; i < NOPTS; i++)
        if ((rc = set(c, &opts[i], opts[i].def, "default", err, cap)) != 0)
            return rc;
    /* the file first: it is the lowest layer after the defaults */
    cfg_file = getenv("GPUFL_SERVER_CONFIG");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--config") && i + 1 < argc)
            cfg_file = argv[i + 1];
        else if (!strncmp(argv[i], "--config=", 9))
            cfg_file = argv[i] + 9;
    }
    if (cfg_file && *cfg_file) {
        if ((rc = load_file(c, cfg_file, err, cap)) != 0)
            return rc;
        snprintf(c->config, sizeof(c->config), "%s", cfg_file);
    }
    for (size_t i = 0; i < NOPTS; i++) {
        const char *v;
        env_name(opts[i].name, env, sizeof(env));
        if ((v = getenv(env)) != NULL &&
            opts[i].off != offsetof(srv_config, config))
            if ((rc = set(c, &opts[i], v, env, err, cap)) != 0)
                return rc;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v, *eq;
        const opt *o;
        size_t n;

        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            srv_config_help(stdout, 0);
            return 3;
        }
        if (!strcmp(a, "--help-markdown")) {
            srv_config_help(stdout, 1);
            return 3;
        }
        if (!strcmp(a, "--version")) {
            printf("gpufl-server %s\n", GPUFL_VERSION_STRING);
            return 3;
        }
        if (strncmp(a, "--", 2) != 0) {
            if (*npos >= pos_cap) {
                snprintf(err, cap, "unexpected argument '%s'", a);
                return 2;
            }
            pos[(*npos)++] = argv[i];
            continue;
        }
        a += 2;
        eq = strchr(a, '=');
        n = eq ? (size_t)(eq - a) : strlen(a);
        o = find(a, n);
        if (!o)
            return unknown("command line", a, n, err, cap);
        if (eq) {
            v = eq + 1;
        } else if (o->type == O_BOOL) {
            v = "true";
        } else if (i + 1 < argc) {
            v = argv[++i];
        } else {
            snprintf(err, cap, "--%s needs a value", o->name);
            return 2;
        }
        if ((rc = set(c, o, v, "command line", err, cap)) != 0)
            return rc;
    }
    return 0;
}
