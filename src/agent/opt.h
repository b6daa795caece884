/*
 * opt.h - gpufl-agent's configuration: one option table (opt.c) for the
 * option engine (src/common/opt.h), from which the command line, the
 * GPUFL_AGENT_* environment, the config file, --help, --dump-config and
 * docs/agent.md all come.
 *
 * Precedence: defaults < config file < environment < flags.  A list option
 * (--folder) set in a layer replaces what lower layers said.  Unknown keys
 * are errors with a hint.  Secrets (--token, --archiver-secret-key) are
 * never printed: agent_opt_dump() shows them as "(set)".
 */
#ifndef GPUFL_AGENT_OPT_H
#define GPUFL_AGENT_OPT_H

#include "common/opt.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* --folder may be given this many times. */
#define AGENT_MAX_FOLDERS 16

typedef struct agent_cfg {
    /* sources */
    char *folder[AGENT_MAX_FOLDERS];
    size_t nfolder;
    char *cursor_file;
    char *dead_letter_file;
    uint64_t max_line_bytes;
    uint64_t poll_ms;
    int inotify;
    /* sink */
    char *type; /* "http" | "kafka" */
    char *url;
    char *token;   /* secret */
    char *ca_file; /* https: CAs to verify with; NULL: the system's */
    char *compress;
    uint64_t batch_lines;
    uint64_t batch_bytes;
    uint64_t linger_ms;
    uint64_t timeout_ms;
    uint64_t retry_min_ms;
    uint64_t retry_max_ms;
    char *brokers;
    char *topic_prefix;
    /* archive */
    char *archiver_endpoint;
    char *archiver_bucket;
    char *archiver_access_key;
    char *archiver_secret_key; /* secret */
    char *archiver_region;
    char *archiver_prefix;
    int archiver_delete;
    /* capture requests (capture.c) */
    int captures;
    uint64_t captures_poll_ms;
    char *captures_host; /* NULL: gethostname() */
    /* process */
    uint64_t cursor_sync_ms;
    uint64_t stats_s;
    int once;
    int status;
    int log_level, log_format; /* GLOG_* (common/log.h) */
    /* what the load said: --help, --dump-config ..., and where each
     * value came from (for --dump-config) */
    opt_action action;
    opt_origin origin;
} agent_cfg;

/* The option table (opt.c), for the engine's printers and table checks. */
extern const opt_prog agent_prog;

/*
 * Fills cfg from the defaults, the config file (--config or
 * GPUFL_AGENT_CONFIG), the environment (envp, borrowed; NULL = environ)
 * and argv.  Returns 0 (cfg->action says whether --help and the like
 * were asked for), or 2 (usage error; 1 out of memory) after writing a
 * one-line reason with a hint to err.  cfg must be released with
 * agent_cfg_release() either way.
 */
int agent_cfg_load(agent_cfg *cfg, int argc, char **argv, char **envp,
                   FILE *err);
/* Checks the combination (a sink's required options).  0 or 2. */
int agent_cfg_check(const agent_cfg *cfg, FILE *err);
void agent_cfg_release(agent_cfg *cfg);

/* --help, generated from the table. */
void agent_opt_help(FILE *out);
/* The effective configuration as key = value lines; secrets masked. */
void agent_opt_dump(const agent_cfg *cfg, FILE *out);
/* The table as a Markdown table, for docs/agent.md. */
void agent_opt_markdown(FILE *out);

#endif
