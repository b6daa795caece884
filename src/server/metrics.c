/*
 * metrics.c - counters and latency histograms, exposed at /metrics in the
 * Prometheus text format.
 *
 * Updated from every HTTP thread with relaxed atomic adds: counters need
 * no ordering, and a scrape that sees a request's count before its sum is
 * harmless.
 */
#include "srv_int.h"

#include "common/prom.h"

#include <stdio.h>

static const double bounds_s[MET_NBUCKETS] = { 0.0005, 0.001, 0.0025, 0.005,
                                               0.01,   0.025, 0.05,   0.1,
                                               0.25,   0.5,   1,      2.5,
                                               5,      10 };
static const char *const cls_names[MET_NCLASS] = { "ingest", "query", "other" };

#define ADD(p, v) __atomic_fetch_add(&(p), (v), __ATOMIC_RELAXED)
#define GET(p) __atomic_load_n(&(p), __ATOMIC_RELAXED)

void srv_metrics_request(srv_metrics *m, int cls, int status, uint64_t us)
{
    int d = status / 100;
    ADD(m->status[d >= 0 && d < 6 ? d : 0], 1);
    ADD(m->lat_count[cls], 1);
    ADD(m->lat_sum_us[cls], us);
    for (int b = 0; b < MET_NBUCKETS; b++)
        if ((double)us <= bounds_s[b] * 1e6) {
            ADD(m->lat_bucket[cls][b], 1);
            break;
        }
}

/* A family with one unlabelled sample. */
static void one(gbuf *b, const char *name, const char *type, const char *help,
                uint64_t v)
{
    prom_family(b, name, type, help);
    prom_u64(b, name, NULL, 0, v);
}

void srv_metrics_write(const srv_metrics *cm, const srv_gauges *g, gbuf *b)
{
    static const char *const st_names[SRV_ST_N] = { "device", "scope",
                                                    "system" };
    static const char *const phases[SRV_ING_NT] = { "wait", "write", "commit" };
    static const char *const codes[6] = {
        "", "1xx", "2xx", "3xx", "4xx", "5xx"
    };
    srv_metrics *m = (srv_metrics *)cm;
    prom_label l[2];

    prom_family(b, "gpufl_ingest_lines_total", "counter",
                "Event lines by outcome.");
    l[0] = (prom_label){ "outcome", "accepted" };
    prom_u64(b, "gpufl_ingest_lines_total", l, 1, GET(m->lines_accepted));
    l[0].value = "duplicate";
    prom_u64(b, "gpufl_ingest_lines_total", l, 1, GET(m->lines_duplicate));
    l[0].value = "rejected";
    prom_u64(b, "gpufl_ingest_lines_total", l, 1, GET(m->lines_rejected));
    one(b, "gpufl_ingest_batches_total", "counter",
        "Committed ingest requests.", GET(m->batches));
    one(b, "gpufl_ingest_bytes_total", "counter",
        "Request body bytes received.", GET(m->bytes_in));
    one(b, "gpufl_ingest_streamed_total", "counter",
        "HTTP ingest bodies parsed while they were stored (large ones).",
        GET(m->ingest_streamed));
    one(b, "gpufl_ingest_rewhole_total", "counter",
        "Streamed bodies parsed and stored again whole: a part's scope"
        " check needed the parts after it (nothing of the first try"
        " stored).",
        GET(m->ingest_rewhole));
    one(b, "gpufl_ingest_commits_total", "counter",
        "Transactions that stored ingest batches (HTTP and Kafka).",
        g->ing_commits);
    one(b, "gpufl_ingest_commit_batches_total", "counter",
        "Ingest batches those transactions held: more than the commits"
        " when concurrent batches shared one (group commit).",
        g->ing_batches);
    prom_family(b, "gpufl_ingest_seconds_total", "counter",
                "Where ingest's time went: HTTP requests' decode, parse and"
                " scope check (parse); the store's writers waiting for the"
                " writer's lock (wait: the compactor or other writers),"
                " writing rows, blocks and rollups (write) and committing"
                " (commit: on SQLite the WAL's writes and fsync), HTTP and"
                " Kafka.");
    l[0] = (prom_label){ "phase", "parse" };
    prom_f64(b, "gpufl_ingest_seconds_total", l, 1,
             (double)GET(m->ingest_parse_ns) / 1e9, 6);
    for (int i = 0; i < SRV_ING_NT; i++) {
        l[0].value = phases[i];
        prom_f64(b, "gpufl_ingest_seconds_total", l, 1,
                 (double)g->ing_ns[i] / 1e9, 6);
    }
    prom_family(b, "gpufl_http_responses_total", "counter",
                "Responses by status class.");
    for (int d = 1; d < 6; d++) {
        l[0] = (prom_label){ "code", codes[d] };
        prom_u64(b, "gpufl_http_responses_total", l, 1, GET(m->status[d]));
    }
    prom_family(b, "gpufl_http_request_seconds", "histogram",
                "Request latency.");
    for (int c = 0; c < MET_NCLASS; c++) {
        uint64_t cum = 0;
        char le[32];
        l[0] = (prom_label){ "route", cls_names[c] };
        l[1] = (prom_label){ "le", le };
        for (int k = 0; k < MET_NBUCKETS; k++) {
            cum += GET(m->lat_bucket[c][k]);
            snprintf(le, sizeof(le), "%g", bounds_s[k]);
            prom_u64(b, "gpufl_http_request_seconds_bucket", l, 2, cum);
        }
        snprintf(le, sizeof(le), "+Inf");
        prom_u64(b, "gpufl_http_request_seconds_bucket", l, 2,
                 GET(m->lat_count[c]));
        prom_f64(b, "gpufl_http_request_seconds_sum", l, 1,
                 (double)GET(m->lat_sum_us[c]) / 1e6, 6);
        prom_u64(b, "gpufl_http_request_seconds_count", l, 1,
                 GET(m->lat_count[c]));
    }
    one(b, "gpufl_db_bytes", "gauge", "Bytes used by the database.",
        g->db_bytes);
    if (g->have_missing) {
        prom_family(b, "gpufl_server_lines_missing", "gauge",
                    "Lines not stored below the highest stored seq of their"
                    " session and stream, summed over sessions (the gaps of"
                    " the session API).");
        for (int st = 0; st < SRV_ST_N; st++) {
            l[0] = (prom_label){ "stream", st_names[st] };
            prom_u64(b, "gpufl_server_lines_missing", l, 1, g->missing[st]);
        }
    }
    one(b, "gpufl_server_kafka_offset_resets_total", "counter",
        "Kafka partitions whose committed offset had fallen out of the"
        " broker's retention (reset to the earliest message kept).",
        GET(m->kafka_resets));
    one(b, "gpufl_server_kafka_skipped_messages_total", "counter",
        "Kafka messages skipped by those resets (deleted by the broker"
        " before they were read).",
        GET(m->kafka_skipped));
    one(b, "gpufl_server_kafka_errors_total", "counter",
        "Errors the Kafka consumer reported (broker unreachable, unknown"
        " topic, ...); offset resets are counted apart.",
        GET(m->kafka_errors));
    one(b, "gpufl_server_connections", "gauge", "Connections held now.",
        g->conns_open);
    prom_family(b, "gpufl_server_connections_refused_total", "counter",
                "Connections answered and closed on arrival: over"
                " --max-conns-per-ip (per_address, 429) or --max-conns"
                " (full, 503).");
    l[0] = (prom_label){ "why", "per_address" };
    prom_u64(b, "gpufl_server_connections_refused_total", l, 1,
             GET(m->conn_refused_ip));
    l[0].value = "full";
    prom_u64(b, "gpufl_server_connections_refused_total", l, 1,
             GET(m->conn_refused_full));
    one(b, "gpufl_server_connections_timed_out_total", "counter",
        "Connections shut down past a deadline (--header-timeout,"
        " --timeout).",
        GET(m->conn_timeouts));
    one(b, "gpufl_server_body_buffered_bytes", "gauge",
        "Request body bytes held in memory now (at most --max-buffered).",
        g->body_buffered);
    one(b, "gpufl_server_body_refused_total", "counter",
        "Requests answered 503 because --max-buffered was spent.",
        GET(m->body_refused_budget));
    one(b, "gpufl_server_kblocks_decoded_total", "counter",
        "Kernel blocks decoded (whole or some columns) by queries.",
        g->kq.decoded);
    one(b, "gpufl_server_kblocks_index_rows_total", "counter",
        "Rows of the kernel block index read by queries' block scans.",
        g->kq.indexed);
    one(b, "gpufl_server_calls_rollup_rows_total", "counter",
        "Rows of the API calls' summary (capi; packed buckets too) read by"
        " /calls summaries.",
        g->kq.capi_rows);
    one(b, "gpufl_server_oblocks_rows_total", "counter",
        "Rows of the op blocks (oblocks) read by time ranges' lookups"
        " (copies, calls, export).",
        g->kq.ob_rows);
    prom_family(b, "gpufl_server_kernel_duration_pages_total", "counter",
                "Kernel pages sorted by duration of sessions with blocks, by"
                " what answered them: kext and its kept rows (kept) or the"
                " blocks (blocks).");
    l[0] = (prom_label){ "from", "kept" };
    prom_u64(b, "gpufl_server_kernel_duration_pages_total", l, 1, g->kq.kept);
    l[0].value = "blocks";
    prom_u64(b, "gpufl_server_kernel_duration_pages_total", l, 1,
             g->kq.scanned);
    if (g->kbc.max_bytes) {
        one(b, "gpufl_server_kblock_cache_bytes", "gauge",
            "Bytes of decoded kernel blocks the reads keep now (at most"
            " --kernel-block-cache).",
            g->kbc.bytes);
        prom_family(b, "gpufl_server_kblock_cache_reads_total", "counter",
                    "Kernel blocks a query read: from the cache of decoded"
                    " blocks (hit), or decoded (miss).");
        l[0] = (prom_label){ "result", "hit" };
        prom_u64(b, "gpufl_server_kblock_cache_reads_total", l, 1, g->kbc.hits);
        l[0].value = "miss";
        prom_u64(b, "gpufl_server_kblock_cache_reads_total", l, 1,
                 g->kbc.misses);
        one(b, "gpufl_server_kblock_cache_evicted_total", "counter",
            "Decoded kernel blocks dropped from the cache to stay within"
            " --kernel-block-cache, least recently used first.",
            g->kbc.evicted);
    }
    if (g->sqlite_wcache)
        one(b, "gpufl_server_sqlite_writer_cache_bytes", "gauge",
            "The most bytes of pages the SQLite writer's connection caches,"
            " as SQLite reads it back (--sqlite-writer-cache).",
            g->sqlite_wcache);
    if (g->cold.on) {
        one(b, "gpufl_server_cold_blocks_moved_total", "counter",
            "Kernel blocks moved to S3 (--hot-age; docs/server.md \"Cold"
            " tier\").",
            g->cold.moved);
        one(b, "gpufl_server_cold_op_blocks_moved_total", "counter",
            "Op blocks (copies, memsets, syncs, allocs, frees) moved to S3"
            " (--hot-age; docs/server.md \"Cold tier\").",
            g->cold.moved_ops);
        one(b, "gpufl_server_cold_objects_deleted_total", "counter",
            "S3 objects of the cold tier deleted (their session pruned or"
            " their block merged into another).",
            g->cold.deleted);
        one(b, "gpufl_server_cold_s3_errors_total", "counter",
            "Passes of the cold tier's mover that S3 failed (blocks stay in"
            " the database; retried with backoff).",
            g->cold.s3_errors);
        prom_family(b, "gpufl_server_cold_reads_total", "counter",
                    "Cold blocks read: from the local cache, from S3, or"
                    " failed (answered 503, or an object lost).");
        l[0] = (prom_label){ "from", "cache" };
        prom_u64(b, "gpufl_server_cold_reads_total", l, 1, g->cold.reads_cache);
        l[0].value = "s3";
        prom_u64(b, "gpufl_server_cold_reads_total", l, 1, g->cold.reads_s3);
        l[0].value = "error";
        prom_u64(b, "gpufl_server_cold_reads_total", l, 1, g->cold.read_errors);
        one(b, "gpufl_server_cold_cache_bytes", "gauge",
            "Bytes in --cold-cache now (at most --cold-cache-max).",
            g->cold.cache_bytes);
        one(b, "gpufl_server_cold_cache_evicted_total", "counter",
            "Files evicted from --cold-cache, least recently used first.",
            g->cold.cache_evicted);
    }
    if (g->n_regress) {
        prom_family(b, "gpufl_regression_worst_ratio", "gauge",
                    "Per app (at most 100, by name), the largest ratio"
                    " among the slower findings (kernels, scope paths, step,"
                    " peak memory) of its latest scanned session; 1: none"
                    " (docs/analysis.md).");
        for (size_t i = 0; i < g->n_regress; i++) {
            l[0] = (prom_label){ "app", g->regress[i].app };
            prom_f64(b, "gpufl_regression_worst_ratio", l, 1,
                     g->regress[i].worst, 4);
        }
    }
}
