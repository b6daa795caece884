/*
 * main.c - gpufl-agent: configuration, signals, the cursor at start-up,
 * and the pipeline (ship.c).  Exit codes: 0 ok, 1 runtime failure, 2
 * usage error.
 */
#include "agent/agent_int.h"
#include "agent/capture.h"
#include "common/log.h"
#include "httpc/httpc.h"

#include <gpufl/gpufl.h>

#include <curl/curl.h>
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* The one process-wide state: set by SIGINT/SIGTERM, read by the loop
 * and by a sink waiting on its peer (sig_atomic_t is int here). */
static volatile sig_atomic_t agent_stop;

static void on_signal(int sig)
{
    (void)sig;
    agent_stop = 1;
}

/* Loads the cursor; a corrupt one is moved aside with a clear message and
 * shipping starts over (downstream de-duplicates by (sid, st, seq)). */
static int load_cursor(agent_ctx *c)
{
    char err[256];
    int missing;
    int rc = agent_cursor_load(c->cfg->cursor_file, &c->pend, &missing, err,
                               sizeof err);

    if (rc == GPUFL_EPARSE || rc == GPUFL_ETOOBIG) {
        char aside[4200];
        snprintf(aside, sizeof aside, "%s.corrupt", c->cfg->cursor_file);
        glog_warn("cursor",
                  "cursor file %s is corrupt (%s); moved to %s. "
                  "Starting from the beginning of every file: lines already "
                  "shipped will be sent again and de-duplicated downstream "
                  "by (sid, st, seq).",
                  c->cfg->cursor_file, err, aside);
        if (rename(c->cfg->cursor_file, aside))
            glog_error("cursor", "cannot move it aside: %s", strerror(errno));
        c->cursor_dirty = 1;
        return 0;
    }
    if (rc) {
        glog_error("cursor", "cannot read cursor file %s: %s",
                   c->cfg->cursor_file, err);
        return 1;
    }
    return agent_scan_pending_init(c) ? 1 : 0;
}

/*
 * Process-wide resource settings.  Every followed file that is not
 * finished keeps a descriptor (so its inode cannot be recycled under it):
 * the soft open-files limit is raised to the hard one.  Buffers of
 * AGENT_MMAP and more (the largest batches) are mmap'ed and go back to the
 * system when freed; glibc would otherwise raise that threshold after the
 * first free and keep such memory in the heap.  AGENT_MMAP was 128 KiB:
 * librdkafka's broker thread then mmap'ed, faulted in and unmapped its
 * ~1 MB request and compression buffers for every batch it sent, and
 * setting the threshold also fixed the heaps' trim threshold at 128 KiB,
 * so each heap gave its free top back and faulted it in again (the Kafka
 * sink's 64 KiB message copies): more than half of the agent's CPU over
 * Kafka was page faults.  A heap now keeps up to AGENT_TRIM free; the
 * read buffers (AGENT_CHUNK) come from the heap and are cached for reuse
 * (AGENT_RCACHE).  docs/fleet.md "Re-measured 2026-12-05 (twenty-fourth
 * session)" has the figures (RSS included).
 */
/* Allocations from this size on are mmap'ed; free bytes a heap keeps at
 * its top before it gives them back (above). */
#define AGENT_MMAP (2 << 20)
#define AGENT_TRIM (16 << 20)

static void process_limits(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, AGENT_MMAP);
    mallopt(M_TRIM_THRESHOLD, AGENT_TRIM);
#endif
}

int main(int argc, char **argv)
{
    agent_cfg cfg;
    agent_ctx c;
    agent_capture *cap = NULL;
    char err[512];
    int rc;
    struct sigaction sa;

    rc = agent_cfg_load(&cfg, argc, argv, NULL, stderr);
    if (rc)
        goto out;
    switch (cfg.action) {
    case OPT_HELP: agent_opt_help(stdout); goto out;
    case OPT_HELP_MARKDOWN: agent_opt_markdown(stdout); goto out;
    case OPT_DUMP: agent_opt_dump(&cfg, stdout); goto out;
    default: break;
    }
    rc = agent_cfg_check(&cfg, stderr);
    if (rc)
        goto out;
    glog_setup("gpufl-agent", cfg.log_level, cfg.log_format);
    if (cfg.status) {
        rc = agent_status_print(&cfg, stdout);
        goto out;
    }

    process_limits();
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    srandom((unsigned)time(NULL) ^ (unsigned)getpid());
    curl_global_init(CURL_GLOBAL_DEFAULT);

    memset(&c, 0, sizeof c);
    c.cfg = &cfg;
    c.stop = &agent_stop;
    c.inotify_fd = -1;
    c.tok = malloc(AGENT_TOKENS * sizeof *c.tok);
    if (!c.tok) {
        rc = 1;
        goto done;
    }
    rc = load_cursor(&c);
    if (rc)
        goto done;
    if (!strcmp(cfg.type, "kafka"))
        c.sink = agent_sink_kafka_new(&cfg, &agent_stop, err, sizeof err);
    else
        c.sink = agent_sink_http_new(&cfg, &agent_stop, err, sizeof err);
    if (!c.sink) {
        glog_error("main", "%s sink: %s", cfg.type, err);
        rc = 1;
        goto done;
    }
    if (!strcmp(cfg.type, "http") && cfg.token && *cfg.token &&
        httpc_cleartext(cfg.url))
        glog_warn("main",
                  "warning: --url %s is plain http to another machine: the "
                  "token and the events cross the network in the clear; "
                  "use https:// (gpufl-server --tls-cert/--tls-key, "
                  "docs/deploy.md)",
                  cfg.url);
    agent_dead_open(&c);
    if (agent_archive_open(&c)) {
        rc = 1; /* it said why */
        goto done;
    }
    if (!cfg.inotify)
        c.inotify_fd = -1;
    else if (agent_watch_open(&c))
        glog_warn("watch",
                  "inotify unavailable (%s); polling "
                  "every %llu ms",
                  strerror(errno), (unsigned long long)cfg.poll_ms);
    agent_watch_kinds(&c);
    if (cfg.captures &&
        agent_capture_start(&cfg, (volatile int *)&agent_stop, &cap)) {
        rc = 1; /* it said why */
        goto done;
    }
    rc = agent_run(&c) ? 1 : 0;
    if (cfg.stats_s)
        agent_stats_line(&c);
done:
    if (cap) {
        agent_stop = 1; /* the capture thread ends with the loop */
        agent_capture_stop(cap);
    }
    agent_sink_free(c.sink);
    agent_archive_close(&c);
    agent_dead_close(&c);
    agent_watch_close(&c);
    for (size_t i = 0; i < c.nfiles; i++)
        agent_file_free(c.files[i]);
    free(c.files);
    free(c.act);
    for (size_t i = 0; i < c.nkeys; i++) {
        free(c.keys[i]->cline);
        free(c.keys[i]);
    }
    free(c.keys);
    free(c.cbody);
    agent_cursor_release(&c.pend);
    free(c.pend_keyfp);
    agent_rcache_free(&c);
    free(c.tok);
    free(c.tok_big);
    curl_global_cleanup();
out:
    agent_cfg_release(&cfg);
    return rc;
}
