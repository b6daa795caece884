/*
 * metrics.c - counters and latency histograms, exposed at /metrics in the
 * Prometheus text format.
 *
 * Updated from every HTTP thread with relaxed atomic adds: counters need
 * no ordering, and a scrape that sees a request's count before its sum is
 * harmless.
 */
#include "srv_int.h"

#include <stdarg.h>
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

static void line(jw *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void line(jw *w, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n > 0)
        jw_put(w, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

void srv_metrics_write(const srv_metrics *cm, const srv_gauges *g, jw *w)
{
    static const char *const st_names[SRV_ST_N] = { "device", "scope",
                                                    "system" };
    srv_metrics *m = (srv_metrics *)cm;

    line(w, "# HELP gpufl_ingest_lines_total Event lines by outcome.\n"
            "# TYPE gpufl_ingest_lines_total counter\n");
    line(w, "gpufl_ingest_lines_total{outcome=\"accepted\"} %llu\n",
         (unsigned long long)GET(m->lines_accepted));
    line(w, "gpufl_ingest_lines_total{outcome=\"duplicate\"} %llu\n",
         (unsigned long long)GET(m->lines_duplicate));
    line(w, "gpufl_ingest_lines_total{outcome=\"rejected\"} %llu\n",
         (unsigned long long)GET(m->lines_rejected));
    line(w,
         "# HELP gpufl_ingest_batches_total Committed ingest requests.\n"
         "# TYPE gpufl_ingest_batches_total counter\n"
         "gpufl_ingest_batches_total %llu\n",
         (unsigned long long)GET(m->batches));
    line(w,
         "# HELP gpufl_ingest_bytes_total Request body bytes received.\n"
         "# TYPE gpufl_ingest_bytes_total counter\n"
         "gpufl_ingest_bytes_total %llu\n",
         (unsigned long long)GET(m->bytes_in));
    line(w, "# HELP gpufl_http_responses_total Responses by status class.\n"
            "# TYPE gpufl_http_responses_total counter\n");
    for (int d = 1; d < 6; d++)
        line(w, "gpufl_http_responses_total{code=\"%dxx\"} %llu\n", d,
             (unsigned long long)GET(m->status[d]));
    line(w, "# HELP gpufl_http_request_seconds Request latency.\n"
            "# TYPE gpufl_http_request_seconds histogram\n");
    for (int c = 0; c < MET_NCLASS; c++) {
        uint64_t cum = 0;
        for (int b = 0; b < MET_NBUCKETS; b++) {
            cum += GET(m->lat_bucket[c][b]);
            line(w,
                 "gpufl_http_request_seconds_bucket{route=\"%s\",le=\"%g\"}"
                 " %llu\n",
                 cls_names[c], bounds_s[b], (unsigned long long)cum);
        }
        line(w,
             "gpufl_http_request_seconds_bucket{route=\"%s\",le=\"+Inf\"}"
             " %llu\n",
             cls_names[c], (unsigned long long)GET(m->lat_count[c]));
        line(w, "gpufl_http_request_seconds_sum{route=\"%s\"} %.6f\n",
             cls_names[c], (double)GET(m->lat_sum_us[c]) / 1e6);
        line(w, "gpufl_http_request_seconds_count{route=\"%s\"} %llu\n",
             cls_names[c], (unsigned long long)GET(m->lat_count[c]));
    }
    line(w,
         "# HELP gpufl_db_bytes Bytes used by the database.\n"
         "# TYPE gpufl_db_bytes gauge\n"
         "gpufl_db_bytes %llu\n",
         (unsigned long long)g->db_bytes);
    if (g->have_missing) {
        line(w, "# HELP gpufl_server_lines_missing Lines not stored below the"
                " highest stored seq of their session and stream, summed over"
                " sessions (the gaps of the session API).\n"
                "# TYPE gpufl_server_lines_missing gauge\n");
        for (int st = 0; st < SRV_ST_N; st++)
            line(w, "gpufl_server_lines_missing{stream=\"%s\"} %llu\n",
                 st_names[st], (unsigned long long)g->missing[st]);
    }
    line(w,
         "# HELP gpufl_server_kafka_offset_resets_total Kafka partitions"
         " whose committed offset had fallen out of the broker's retention"
         " (reset to the earliest message kept).\n"
         "# TYPE gpufl_server_kafka_offset_resets_total counter\n"
         "gpufl_server_kafka_offset_resets_total %llu\n",
         (unsigned long long)GET(m->kafka_resets));
    line(w,
         "# HELP gpufl_server_kafka_skipped_messages_total Kafka messages"
         " skipped by those resets (deleted by the broker before they were"
         " read).\n"
         "# TYPE gpufl_server_kafka_skipped_messages_total counter\n"
         "gpufl_server_kafka_skipped_messages_total %llu\n",
         (unsigned long long)GET(m->kafka_skipped));
    line(w,
         "# HELP gpufl_server_kafka_errors_total Errors the Kafka consumer"
         " reported (broker unreachable, unknown topic, ...); offset resets"
         " are counted apart.\n"
         "# TYPE gpufl_server_kafka_errors_total counter\n"
         "gpufl_server_kafka_errors_total %llu\n",
         (unsigned long long)GET(m->kafka_errors));
    line(w,
         "# HELP gpufl_server_connections Connections held now.\n"
         "# TYPE gpufl_server_connections gauge\n"
         "gpufl_server_connections %llu\n",
         (unsigned long long)g->conns_open);
    line(w,
         "# HELP gpufl_server_connections_refused_total Connections"
         " answered and closed on arrival: over --max-conns-per-ip"
         " (per_address, 429) or --max-conns (full, 503).\n"
         "# TYPE gpufl_server_connections_refused_total counter\n"
         "gpufl_server_connections_refused_total{why=\"per_address\"}"
         " %llu\n"
         "gpufl_server_connections_refused_total{why=\"full\"} %llu\n",
         (unsigned long long)GET(m->conn_refused_ip),
         (unsigned long long)GET(m->conn_refused_full));
    line(w,
         "# HELP gpufl_server_connections_timed_out_total Connections"
         " shut down past a deadline (--header-timeout, --timeout).\n"
         "# TYPE gpufl_server_connections_timed_out_total counter\n"
         "gpufl_server_connections_timed_out_total %llu\n",
         (unsigned long long)GET(m->conn_timeouts));
    line(w,
         "# HELP gpufl_server_body_buffered_bytes Request body bytes held"
         " in memory now (at most --max-buffered).\n"
         "# TYPE gpufl_server_body_buffered_bytes gauge\n"
         "gpufl_server_body_buffered_bytes %llu\n",
         (unsigned long long)g->body_buffered);
    line(w,
         "# HELP gpufl_server_body_refused_total Requests answered 503"
         " because --max-buffered was spent.\n"
         "# TYPE gpufl_server_body_refused_total counter\n"
         "gpufl_server_body_refused_total %llu\n",
         (unsigned long long)GET(m->body_refused_budget));
}
