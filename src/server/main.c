/*
 * main.c - gpufl-server's entry point: configuration, the keys and
 * migrate subcommands, start-up in dependency order and graceful shutdown.
 *
 * SIGINT and SIGTERM are blocked in every thread and taken by sigwait()
 * in main, so no handler runs at all; shutdown then stops the HTTP server
 * (which finishes the requests in flight, so every acknowledged batch is
 * committed), the Kafka consumer, the maintenance thread and the store, in
 * that order.
 */
#include "srv_int.h"

#include <curl/curl.h>

#include <gpufl/gpufl.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/num.h"
#include "common/log.h"

static int open_store(srv *s, char *err, size_t cap)
{
    char url[SRV_STR_MAX + 32];
    int rc;

    if (mkdir(s->cfg.data_dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, cap, "cannot create the data folder: %s",
                 strerror(errno));
        return GPUFL_EIO;
    }
    if (s->cfg.db[0])
        snprintf(url, sizeof(url), "%s", s->cfg.db);
    else
        snprintf(url, sizeof(url), "sqlite:%s/gpufl.db", s->cfg.data_dir);
    if ((rc = srv_store_open(url, (unsigned)s->cfg.readers, &s->store, err,
                             cap)) != 0)
        return rc;
    srv_store_set_kernel_store(s->store,
                               s->cfg.kernel_store == SRV_KSTORE_BLOCKS);
    if ((rc = srv_store_set_kblock_cache(s->store, s->cfg.kblock_cache)) != 0) {
        snprintf(err, cap, "no memory for --kernel-block-cache");
        srv_store_close(s->store);
        s->store = NULL;
        return rc;
    }
    if ((rc = srv_store_set_sqlite_wcache(s->store,
                                          s->cfg.sqlite_writer_cache)) != 0) {
        snprintf(err, cap, "cannot set --sqlite-writer-cache");
        srv_store_close(s->store);
        s->store = NULL;
        return rc;
    }
    if (!s->cfg.cold_endpoint[0])
        return rc;
    {
        char cache[SRV_STR_MAX + 16];
        srv_cold_cfg c = { s->cfg.cold_endpoint, s->cfg.cold_bucket,
                           s->cfg.cold_region,   s->cfg.cold_access,
                           s->cfg.cold_secret,   s->cfg.cold_prefix,
                           s->cfg.cold_ca_file,  cache,
                           s->cfg.cold_cache_max };
        if (s->cfg.cold_cache[0])
            snprintf(cache, sizeof(cache), "%s", s->cfg.cold_cache);
        else
            snprintf(cache, sizeof(cache), "%s/cold-cache", s->cfg.data_dir);
        if ((rc = srv_store_cold_open(s->store, &c, err, cap)) != 0) {
            srv_store_close(s->store);
            s->store = NULL;
        }
    }
    return rc;
}

/* Keys read per store call by `keys list`. */
#define KEYS_CLI_PAGE 500

static int keys_cmd(srv *s, char **pos, int npos)
{
    char err[512] = "", secret[96];
    int rc = 1;

    if (npos < 2) {
        glog_error("main", "keys create|list|revoke ID");
        return 2;
    }
    if (strcmp(pos[1], "create") && strcmp(pos[1], "list") &&
        strcmp(pos[1], "revoke")) {
        glog_error("main", "unknown keys command '%s'", pos[1]);
        return 2;
    }
    if (!strcmp(pos[1], "revoke") && npos != 3) {
        glog_error("main", "keys revoke ID");
        return 2;
    }
    if (!strcmp(pos[1], "create") && srv_role_parse(s->cfg.key_role) == 0) {
        glog_error("main", "--role must be ingest, read or admin");
        return 2;
    }
    if (!strcmp(pos[1], "create") &&
        srv_key_hosts_check(s->cfg.key_hosts, s->cfg.key_role, err,
                            sizeof(err))) {
        glog_error("main", "--%s", err);
        return 2;
    }
    if (open_store(s, err, sizeof(err))) {
        glog_error("main", "%s", err);
        return 1;
    }
    if (!strcmp(pos[1], "create")) {
        int64_t id;
        if (srv_key_create(s, s->cfg.key_name, s->cfg.key_role,
                           s->cfg.key_hosts, secret, sizeof(secret),
                           &id) == 0) {
            printf("id %lld role %s%s%s (the key is shown once):\n%s\n",
                   (long long)id, s->cfg.key_role,
                   s->cfg.key_hosts[0] ? " hosts " : "", s->cfg.key_hosts,
                   secret);
            rc = 0;
        }
    } else if (!strcmp(pos[1], "list")) {
        /* every key, a page at a time */
        srv_key *k = calloc(KEYS_CLI_PAGE, sizeof(*k));
        int64_t after = 0;
        size_t n = KEYS_CLI_PAGE;
        if (k)
            printf("%-6s %-8s %-14s %-12s %-12s %s\n", "ID", "ROLE", "PREFIX",
                   "CREATED", "LAST_USED", "NAME [HOSTS]");
        rc = k ? 0 : 1;
        while (!rc && n == KEYS_CLI_PAGE) {
            if (srv_store_key_list(s->store, after, k, KEYS_CLI_PAGE, &n) !=
                0) {
                glog_error("main", "cannot list the keys");
                rc = 1;
                break;
            }
            for (size_t i = 0; i < n; i++)
                printf("%-6lld %-8s %-14s %-12lld %-12lld %s%s%s%s%s\n",
                       (long long)k[i].id, k[i].role, k[i].prefix,
                       (long long)k[i].created, (long long)k[i].last_used,
                       k[i].name, k[i].hosts[0] ? " [" : "", k[i].hosts,
                       k[i].hosts[0] ? "]" : "",
                       k[i].revoked ? " (revoked)" : "");
            if (n)
                after = k[n - 1].id;
        }
        free(k);
    } else {
        int64_t id;
        if (num_i64(pos[2], &id)) {
            glog_error("main", "key id must be a number");
            rc = 2;
        } else if (srv_store_key_revoke(s->store, id) == 0) {
            printf("revoked %lld\n", (long long)id);
            rc = 0;
        } else {
            glog_error("main", "no live key %lld", (long long)id);
        }
    }
    srv_store_close(s->store);
    return rc;
}

int main(int argc, char **argv)
{
    static srv s; /* large; lives for the whole process */
    char err[1024] = "";
    char *pos[4];
    int npos = 0, rc, sig = 0;
    sigset_t set;

    rc = srv_config_load(&s.cfg, argc, argv, pos, 4, &npos, err, sizeof(err));
    if (rc == 3)
        return 0;
    glog_setup("gpufl-server", s.cfg.log_level, s.cfg.log_format);
    if (rc) {
        glog_error("main", "%s\n(see gpufl-server --help)", err);
        return 2;
    }
    s.listen_fd = -1;
    if (npos > 0 && !strcmp(pos[0], "keys"))
        return keys_cmd(&s, pos, npos);
    if (npos == 1 && !strcmp(pos[0], "migrate")) {
        if (open_store(&s, err, sizeof(err))) {
            glog_error("main", "%s", err);
            return 1;
        }
        rc = srv_migrate_run(&s);
        srv_store_close(s.store);
        return rc;
    }
    if (npos > 0) {
        glog_error("main", "unexpected argument '%s'", pos[0]);
        return 2;
    }
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (open_store(&s, err, sizeof(err))) {
        glog_error("main", "%s", err);
        return 1;
    }
    if ((rc = srv_admin_init(&s)) != 0) {
        srv_store_close(s.store);
        return rc == GPUFL_EINVAL ? 2 : 1;
    }
    /* before any thread: the webhook's client (regress.c) */
    if (s.cfg.alert_webhook[0])
        curl_global_init(CURL_GLOBAL_DEFAULT);
    if (srv_maint_start(&s)) {
        glog_error("main", "cannot start the maintenance thread");
        srv_store_close(s.store);
        return 1;
    }
    if ((rc = srv_http_start(&s, err, sizeof(err))) != 0) {
        glog_error("main", "%s", err);
        srv_maint_stop(&s);
        srv_store_close(s.store);
        /* a configuration that cannot be served safely is a usage error */
        return rc == GPUFL_EINVAL ? 2 : 1;
    }
    if (srv_kafka_start(&s, err, sizeof(err))) {
        glog_error("main", "%s", err);
        srv_http_stop(&s);
        srv_maint_stop(&s);
        srv_store_close(s.store);
        return 1;
    }
    {
        const char *colon = strrchr(s.cfg.listen, ':');
        int hl = colon ? (int)(colon - s.cfg.listen) : 0;
        printf("gpufl-server: listening on http%s://%.*s:%u (store %s)\n",
               s.tls_cert ? "s" : "", hl ? hl : 9,
               hl ? s.cfg.listen : "127.0.0.1", s.port,
               srv_store_backend(s.store));
        printf("gpufl-server: %s\n", s.ui_msg);
        if (!s.tls_cert && !s.loopback && !s.cfg.quiet)
            glog_warn("http",
                      "warning: listening on %s without TLS:"
                      " tokens and data cross the network in the clear; give"
                      " --tls-cert and --tls-key (or put a TLS proxy in front"
                      " and listen on 127.0.0.1)",
                      s.cfg.listen);
    }
    fflush(stdout);
    while (sigwait(&set, &sig) != 0)
        ;
    if (!s.cfg.quiet)
        glog_info("main", "signal %d, shutting down", sig);
    srv_http_stop(&s);
    srv_kafka_stop(&s);
    srv_maint_stop(&s);
    srv_store_close(s.store);
    return 0;
}
