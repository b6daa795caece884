/*
 * kafka_mock.c - the Kafka side of the agent tests, on librdkafka's mock
 * cluster (no Kafka broker is packaged in Debian, the only source of
 * packages on the build machines).
 *
 *   agent_kafka_mock serve FILE PREFIX   3 brokers, topics PREFIX.device,
 *       .scope, .system (4 partitions); writes the bootstrap string to FILE,
 *       then serves until SIGTERM.  SIGUSR1 takes every broker down,
 *       SIGUSR2 brings them back up.  SIGHUP: the next Produce request
 *       is refused with MSG_SIZE_TOO_LARGE (a broker whose topic allows
 *       less than the producer sends).
 *   agent_kafka_mock dump BOOTSTRAP PREFIX OUT
 *       reads every partition of the three topics from the start to the
 *       high watermark (rd_kafka_assign, no consumer group) and writes one
 *       row per line of each message (the agent packs several lines a
 *       message, '\n'-separated): topic TAB key TAB message number (in
 *       the order read) TAB line.
 *
 * The mock keeps at most 5 MiB per partition: tests stay well below.
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MOCK_BROKERS 3
#define MOCK_PARTITIONS 4

static volatile sig_atomic_t stop_flag, down_flag, up_flag, big_flag;

static void on_sig(int sig)
{
    if (sig == SIGUSR1)
        down_flag = 1;
    else if (sig == SIGUSR2)
        up_flag = 1;
    else if (sig == SIGHUP)
        big_flag = 1;
    else
        stop_flag = 1;
}

static int serve(const char *file, const char *prefix)
{
    char err[512], tmp[4200];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    rd_kafka_t *rk;
    rd_kafka_mock_cluster_t *mc;
    static const char *const st[] = { "device", "scope", "system" };
    FILE *f;

    rd_kafka_conf_set(c, "log_level", "0", err, sizeof err);
    rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof err);
    if (!rk)
        return 1;
    mc = rd_kafka_mock_cluster_new(rk, MOCK_BROKERS);
    if (!mc)
        return 1;
    for (int i = 0; i < 3; i++) {
        char name[256];
        snprintf(name, sizeof name, "%s.%s", prefix, st[i]);
        rd_kafka_mock_topic_create(mc, name, MOCK_PARTITIONS, 1);
    }
    signal(SIGTERM, on_sig);
    signal(SIGINT, on_sig);
    signal(SIGUSR1, on_sig);
    signal(SIGUSR2, on_sig);
    signal(SIGHUP, on_sig);
    snprintf(tmp, sizeof tmp, "%s.tmp", file);
    f = fopen(tmp, "w");
    if (!f)
        return 1;
    fprintf(f, "%s\n", rd_kafka_mock_cluster_bootstraps(mc));
    fclose(f);
    rename(tmp, file);
    while (!stop_flag) {
        usleep(50000);
        if (big_flag) {
            rd_kafka_mock_push_request_errors(
                mc, 0 /* ApiKey Produce */, 1,
                RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
            big_flag = 0;
        }
        if (down_flag || up_flag) {
            for (int b = 1; b <= MOCK_BROKERS; b++) {
                if (down_flag)
                    rd_kafka_mock_broker_set_down(mc, b);
                else
                    rd_kafka_mock_broker_set_up(mc, b);
            }
            down_flag = up_flag = 0;
        }
    }
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(rk);
    return 0;
}

static int dump(const char *bs, const char *prefix, const char *out)
{
    char err[512];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    rd_kafka_t *rk;
    rd_kafka_topic_partition_list_t *parts;
    static const char *const st[] = { "device", "scope", "system" };
    int64_t hi[3][MOCK_PARTITIONS];
    long left = 0, nmsg = 0;
    FILE *f = fopen(out, "wb");

    if (!f)
        return 1;
    rd_kafka_conf_set(c, "bootstrap.servers", bs, err, sizeof err);
    rd_kafka_conf_set(c, "group.id", "dump", err, sizeof err);
    rd_kafka_conf_set(c, "enable.auto.commit", "false", err, sizeof err);
    rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof err);
    if (!rk)
        return 1;
    rd_kafka_poll_set_consumer(rk);
    parts = rd_kafka_topic_partition_list_new(3 * MOCK_PARTITIONS);
    for (int t = 0; t < 3; t++) {
        char name[256];
        snprintf(name, sizeof name, "%s.%s", prefix, st[t]);
        for (int p = 0; p < MOCK_PARTITIONS; p++) {
            int64_t lo;
            if (rd_kafka_query_watermark_offsets(rk, name, p, &lo, &hi[t][p],
                                                 10000)) {
                fprintf(stderr, "kafka_mock: no watermarks for %s/%d\n", name,
                        p);
                return 1;
            }
            if (lo != 0) {
                fprintf(stderr,
                        "kafka_mock: %s/%d lost its start (%lld): "
                        "over the mock's retention\n",
                        name, p, (long long)lo);
                return 1;
            }
            left += (long)hi[t][p];
            rd_kafka_topic_partition_list_add(parts, name, p)->offset =
                RD_KAFKA_OFFSET_BEGINNING;
        }
    }
    rd_kafka_assign(rk, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    while (left > 0) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 5000);
        if (!m) {
            fprintf(stderr, "kafka_mock: %ld messages never came\n", left);
            return 1;
        }
        if (!m->err) {
            const char *v = m->payload, *e = v + m->len, *nl;
            for (;;) {
                /* no pointer arithmetic past the last line (UBSan: an
                 * offset applied to the NULL of memchr) */
                nl = v != e ? memchr(v, '\n', (size_t)(e - v)) : NULL;
                fprintf(f, "%s\t%.*s\t%ld\t%.*s\n", rd_kafka_topic_name(m->rkt),
                        (int)m->key_len, (const char *)m->key, nmsg,
                        (int)((nl ? nl : e) - v), v ? v : "");
                if (!nl)
                    break;
                v = nl + 1;
            }
            nmsg++;
            left--;
        }
        rd_kafka_message_destroy(m);
    }
    fclose(f);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "serve"))
        return serve(argv[2], argv[3]);
    if (argc == 5 && !strcmp(argv[1], "dump"))
        return dump(argv[2], argv[3], argv[4]);
    fprintf(stderr, "usage: agent_kafka_mock serve FILE PREFIX | dump "
                    "BOOTSTRAP PREFIX OUT\n");
    return 2;
}
