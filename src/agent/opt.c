/*
 * opt.c - gpufl-agent's option table and the checks that span options.
 *
 * Every option is one row of agent_opts[]; the option engine
 * (src/common/opt.c) makes the parser, --help, --dump-config and the
 * Markdown of docs/agent.md from it.  The config file holds "key = value"
 * lines with the flag names as keys ('#' starts a comment; folder may
 * repeat); the environment variable of "archiver-secret-key" is
 * GPUFL_AGENT_ARCHIVER_SECRET_KEY; GPUFL_AGENT_FOLDER separates folders by
 * ','.  The *-ms options keep milliseconds for a bare number, stats-s
 * seconds, so no existing command line changes meaning.
 */
#include "agent/opt.h"
#include "common/log.h"

#include <stdlib.h>
#include <string.h>

#define T agent_cfg
static const opt_def agent_opts[] = {
    { .name = "folder",
      .type = OPT_LIST,
      OPT_F_LIST(T, folder, nfolder, OPT_ST_PTR),
      .flags = OPT_REPEAT,
      .env_sep = ',',
      .arg = "DIR",
      .help = "Folder holding gpufl logs." },
    { .name = "type",
      .type = OPT_ENUM,
      OPT_F_PTR(T, type),
      .def = "http",
      .choices = "http|kafka",
      .help = "Where events go." },
    { .name = "url",
      .type = OPT_STR,
      OPT_F_PTR(T, url),
      .arg = "URL",
      .help = "HTTP: ingest base URL; the stream name is appended "
              "(e.g. http://host:8080/api/v1/events/)." },
    { .name = "token",
      .type = OPT_STR,
      OPT_F_PTR(T, token),
      .flags = OPT_SECRET,
      .arg = "TOKEN",
      .help = "HTTP: Bearer token (prefer the environment or the config "
              "file to the command line)." },
    { .name = "ca-file",
      .type = OPT_STR,
      OPT_F_PTR(T, ca_file),
      .arg = "FILE",
      .help = "PEM file of the CAs an https --url and --archiver-endpoint "
              "are verified with (peer and host name, always); default the "
              "system's CA store." },
    { .name = "compress",
      .type = OPT_ENUM,
      OPT_F_PTR(T, compress),
      .def = "zstd",
      .choices = "zstd|gzip|none",
      .help = "HTTP: Content-Encoding of request bodies (a 415 falls back "
              "to none)." },
    { .name = "batch-lines",
      .type = OPT_INT,
      OPT_F_UINT(T, batch_lines),
      .def = "10000",
      .min = 1,
      .max = 1000000,
      .help = "Most lines in one request or Kafka batch." },
    { .name = "batch-bytes",
      .type = OPT_SIZE,
      OPT_F_UINT(T, batch_bytes),
      .def = "2MiB",
      .min = 4096,
      .max = 256u << 20,
      .help = "Most uncompressed bytes in one request." },
    { .name = "linger-ms",
      .type = OPT_DUR,
      OPT_F_UINT(T, linger_ms),
      .unit = OPT_MS,
      .def = "200",
      .max = 60000,
      .help = "Longest wait for a batch to fill before it is sent." },
    { .name = "timeout-ms",
      .type = OPT_DUR,
      OPT_F_UINT(T, timeout_ms),
      .unit = OPT_MS,
      .def = "30s",
      .min = 100,
      .max = 3600000,
      .help = "Total time one request may take (connect + send + "
              "response)." },
    { .name = "retry-min-ms",
      .type = OPT_DUR,
      OPT_F_UINT(T, retry_min_ms),
      .unit = OPT_MS,
      .def = "200",
      .min = 1,
      .max = 3600000,
      .help = "First retry delay; doubles per failure, with jitter." },
    { .name = "retry-max-ms",
      .type = OPT_DUR,
      OPT_F_UINT(T, retry_max_ms),
      .unit = OPT_MS,
      .def = "30s",
      .min = 1,
      .max = 3600000,
      .help = "Retry delay cap; also the wait after an auth/config error." },
    { .name = "brokers",
      .type = OPT_STR,
      OPT_F_PTR(T, brokers),
      .arg = "HOST:PORT,...",
      .help = "Kafka: bootstrap servers, host:port[,host:port...]." },
    { .name = "topic-prefix",
      .type = OPT_STR,
      OPT_F_PTR(T, topic_prefix),
      .def = "gpufl",
      .help = "Kafka: topics are <prefix>.device, .scope and .system." },
    { .name = "archiver-endpoint",
      .type = OPT_STR,
      OPT_F_PTR(T, archiver_endpoint),
      .arg = "URL",
      .help = "S3: endpoint URL; unset = no archive." },
    { .name = "archiver-bucket",
      .type = OPT_STR,
      OPT_F_PTR(T, archiver_bucket),
      .help = "S3: bucket." },
    { .name = "archiver-access-key",
      .type = OPT_STR,
      OPT_F_PTR(T, archiver_access_key),
      .help = "S3: access key id." },
    { .name = "archiver-secret-key",
      .type = OPT_STR,
      OPT_F_PTR(T, archiver_secret_key),
      .flags = OPT_SECRET,
      .help = "S3: secret key." },
    { .name = "archiver-region",
      .type = OPT_STR,
      OPT_F_PTR(T, archiver_region),
      .def = "us-east-1",
      .help = "S3: SigV4 region." },
    { .name = "archiver-prefix",
      .type = OPT_STR,
      OPT_F_PTR(T, archiver_prefix),
      .def = "gpufl",
      .help = "S3: key prefix "
              "(<prefix>/<host>/<session>/<stream>.<n>.log.zst)." },
    { .name = "archiver-delete",
      .type = OPT_BOOL,
      OPT_F_SINT(T, archiver_delete),
      .def = "false",
      .help = "S3: delete the local file after a verified upload." },
    { .name = "captures",
      .type = OPT_BOOL,
      OPT_F_SINT(T, captures),
      .def = "false",
      .help = "HTTP: poll gpufl-server for this host's capture requests "
              "and forward them to the local gpufl processes' control "
              "sockets (docs/agent.md \"Capture requests\"); the token must "
              "be an admin key or an ingest key bound to this host." },
    { .name = "captures-poll",
      .type = OPT_DUR,
      OPT_F_UINT(T, captures_poll_ms),
      .unit = OPT_MS,
      .def = "5s",
      .min = 100,
      .max = 3600000,
      .help = "Time between two polls for capture requests." },
    { .name = "captures-host",
      .type = OPT_STR,
      OPT_F_PTR(T, captures_host),
      .arg = "NAME",
      .help = "The host name capture requests are polled for; default "
              "this machine's (gethostname), the one its gpufl sessions "
              "carry." },
    { .name = "cursor-file",
      .type = OPT_STR,
      OPT_F_PTR(T, cursor_file),
      .def = "gpufl-agent.cursor",
      .arg = "FILE",
      .help = "Where shipped positions are kept." },
    { .name = "dead-letter-file",
      .type = OPT_STR,
      OPT_F_PTR(T, dead_letter_file),
      .arg = "FILE",
      .help = "Lines set aside (malformed, oversize, rejected); default "
              "<cursor-file>.dead.jsonl." },
    { .name = "max-line-bytes",
      .type = OPT_SIZE,
      OPT_F_UINT(T, max_line_bytes),
      .def = "1MiB",
      .min = 256,
      .max = 64u << 20,
      .help = "Longer lines are dead-lettered." },
    { .name = "poll-ms",
      .type = OPT_DUR,
      OPT_F_UINT(T, poll_ms),
      .unit = OPT_MS,
      .def = "500",
      .min = 10,
      .max = 60000,
      .help = "Polling interval: folders on network file systems (NFS, SMB, "
              "FUSE, ...) or without inotify are rescanned every 2 and their "
              "idle files checked every 1; local folders watched by inotify "
              "every 10 (a safety net)." },
    { .name = "inotify",
      .type = OPT_BOOL,
      OPT_F_SINT(T, inotify),
      .def = "true",
      .help = "Watch the folders with inotify; false = polling only (as on "
              "NFS)." },
    { .name = "cursor-sync-ms",
      .type = OPT_DUR,
      OPT_F_UINT(T, cursor_sync_ms),
      .unit = OPT_MS,
      .def = "100",
      .max = 60000,
      .help = "Least time between two cursor writes (each is fsynced)." },
    { .name = "stats-s",
      .type = OPT_DUR,
      OPT_F_UINT(T, stats_s),
      .unit = OPT_SEC,
      .def = "10",
      .max = 86400,
      .help = "Time between stats lines on stderr; 0 = none." },
    GLOG_OPT_ROWS(T, log_level, log_format),
    { .name = "once",
      .type = OPT_BOOL,
      OPT_F_SINT(T, once),
      .def = "false",
      .help = "Ship what exists, then exit 0." },
    { .name = "status",
      .type = OPT_BOOL,
      OPT_F_SINT(T, status),
      .flags = OPT_CLI_ONLY,
      .help = "Print the cursor's view (bytes behind per stream) and exit." },
};
#undef T

const opt_prog agent_prog = {
    .name = "gpufl-agent",
    .env_prefix = "GPUFL_AGENT_",
    .opts = agent_opts,
    .n = sizeof agent_opts / sizeof agent_opts[0],
    .size = offsetof(agent_cfg, action),
    .usage = "usage: gpufl-agent --folder=DIR --type=http --url=URL "
             "[options]\n"
             "       gpufl-agent --folder=DIR --type=kafka --brokers=H:P "
             "[options]\n\n"
             "Tails gpufl logs (*.device|scope|system.log and their rotated "
             "files),\nships every line once acknowledged, and remembers "
             "where it is.\n",
    .tail = "Exit: 0 ok, 1 runtime failure, 2 usage error.\n",
};

int agent_cfg_load(agent_cfg *cfg, int argc, char **argv, char **envp,
                   FILE *err)
{
    opt_ctx *c = malloc(sizeof *c);
    int rc;

    memset(cfg, 0, sizeof *cfg);
    if (!c) {
        fprintf(err, "gpufl-agent: out of memory\n");
        return 1;
    }
    rc = opt_load(c, &agent_prog, cfg, &cfg->origin, argc, argv, envp);
    if (rc)
        fprintf(err, "gpufl-agent: %s\n", c->err);
    else if (c->warn[0])
        fprintf(err, "gpufl-agent: warning: %s\n", c->warn);
    cfg->action = c->action;
    free(c);
    return rc;
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
    if (cfg->captures && !cfg->status &&
        (strcmp(cfg->type, "http") || !strstr(cfg->url, "/api/v1/"))) {
        fprintf(err, "gpufl-agent: --captures needs --type=http and a --url "
                     "of gpufl-server (.../api/v1/events/)\n");
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
    opt_release(&agent_prog, cfg);
}

void agent_opt_help(FILE *out)
{
    opt_help(&agent_prog, out);
}

void agent_opt_dump(const agent_cfg *cfg, FILE *out)
{
    opt_dump(&agent_prog, cfg, &cfg->origin, out);
}

void agent_opt_markdown(FILE *out)
{
    opt_markdown(&agent_prog, out);
}
