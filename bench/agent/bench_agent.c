/*
 * bench_agent.c - how fast gpufl-agent ships: writes N event lines of about
 * 330 bytes into one session's three streams (60 % device, 30 % scope,
 * 10 % system, plain files rotated at 64 MiB), starts the test receiver in
 * count-only mode on 127.0.0.1, runs `gpufl-agent --once` over the folder
 * and reports events/s (wall clock of the agent run), CPU seconds per 1M
 * events and peak RSS of the agent (wait4 rusage), then checks that the
 * receiver counted every line.
 *
 *   bench_agent [events (default 2000000)] [zstd|gzip|none (default zstd)]
 *
 * The agent and receiver binaries are taken from this program's folder.
 * The receiver shares the machine's cores, so figures on a 2-core box
 * include its decompression and HTTP work.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BENCH_ROTATE (64u << 20)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *const streams[3] = { "device", "scope", "system" };

/* One event line of about 330 bytes. */
static int make_line(char *out, size_t cap, int st, uint64_t seq)
{
    static const char sid[] = "5b1c0d3e-8f2a-4c6b-9d7e-1a2b3c4d5e6f";
    uint64_t ts = 1764460800000000000ull + seq * 1000;
    switch (st) {
    case 0:
        return snprintf(
            out, cap,
            "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\",\"seq\":%llu,"
            "\"ts\":%llu,\"type\":\"kernel\",\"name\":%llu,"
            "\"cfg\":%llu,\"grid\":[%llu,1,1],\"block\":[256,1,1],"
            "\"regs\":32,\"smem\":4096,\"occ\":0.75,\"start\":%llu,"
            "\"end\":%llu,\"dur\":%llu,\"stream\":7,\"corr\":%llu,"
            "\"path\":12,\"stack\":3,\"dev\":0,\"ctx\":1,"
            "\"q\":\"launch-ok\"}\n",
            sid, (unsigned long long)seq, (unsigned long long)ts,
            (unsigned long long)(seq % 97), (unsigned long long)(seq % 13),
            (unsigned long long)(seq % 4096 + 1), (unsigned long long)ts - 5000,
            (unsigned long long)ts, (unsigned long long)(seq % 5000 + 100),
            (unsigned long long)seq * 3);
    case 1:
        return snprintf(out, cap,
                        "{\"v\":1,\"sid\":\"%s\",\"st\":\"scope\",\"seq\":%llu,"
                        "\"ts\":%llu,\"type\":\"scope_end\",\"id\":%llu,"
                        "\"name\":%llu,\"path\":%llu,\"depth\":2,\"tid\":%llu,"
                        "\"start\":%llu,\"end\":%llu,\"dur\":%llu,"
                        "\"kernels\":%llu,\"bytes\":%llu,\"note\":\"train/step/"
                        "forward/attention\",\"pad\":\"0123456789abcdef0123\"}"
                        "\n",
                        sid, (unsigned long long)seq, (unsigned long long)ts,
                        (unsigned long long)seq, (unsigned long long)(seq % 41),
                        (unsigned long long)(seq % 211),
                        (unsigned long long)(seq % 8 + 1000),
                        (unsigned long long)ts - 90000, (unsigned long long)ts,
                        (unsigned long long)(seq % 90000),
                        (unsigned long long)(seq % 17),
                        (unsigned long long)(seq * 4096 % 1000003));
    default:
        return snprintf(
            out, cap,
            "{\"v\":1,\"sid\":\"%s\",\"st\":\"system\",\"seq\":%llu,"
            "\"ts\":%llu,\"type\":\"gpu\",\"dev\":0,\"util\":%llu,"
            "\"mem_util\":%llu,\"used_mib\":%llu,\"total_mib\":"
            "81920,\"temp\":%llu,\"power_w\":%llu.5,\"fan\":%llu,"
            "\"clock_sm\":1980,\"clock_mem\":2619,\"pcie_tx\":%llu,"
            "\"pcie_rx\":%llu,\"pad\":\"system-snapshot\"}\n",
            sid, (unsigned long long)seq, (unsigned long long)ts,
            (unsigned long long)(seq % 101), (unsigned long long)(seq % 67),
            (unsigned long long)(seq % 80000),
            (unsigned long long)(seq % 40 + 40),
            (unsigned long long)(seq % 300 + 50),
            (unsigned long long)(seq % 100),
            (unsigned long long)(seq * 7 % 100000),
            (unsigned long long)(seq * 11 % 100000));
    }
}

typedef struct out_file {
    FILE *f;
    uint64_t bytes;
    unsigned rot;
    char live[4400];
} out_file;

static int write_logs(const char *dir, uint64_t n, uint64_t *bytes)
{
    out_file o[3];
    uint64_t seq[3] = { 0, 0, 0 };
    char line[1024];

    memset(o, 0, sizeof o);
    for (int s = 0; s < 3; s++) {
        snprintf(o[s].live, sizeof o[s].live,
                 "%.4300s/bench.20261130-000000.5b1c0d3e.%s.log", dir,
                 streams[s]);
        o[s].f = fopen(o[s].live, "w");
        if (!o[s].f)
            return -1;
    }
    *bytes = 0;
    for (uint64_t i = 0; i < n; i++) {
        unsigned r = (unsigned)(i % 10);
        int s = r < 6 ? 0 : r < 9 ? 1 : 2;
        int len = make_line(line, sizeof line, s, seq[s]++);
        if (len <= 0 || (size_t)len >= sizeof line)
            return -1;
        if (o[s].bytes + (uint64_t)len > BENCH_ROTATE) {
            char rot[4300];
            fclose(o[s].f);
            snprintf(rot, sizeof rot, "%s.%u", o[s].live, ++o[s].rot);
            if (rename(o[s].live, rot))
                return -1;
            o[s].f = fopen(o[s].live, "w");
            if (!o[s].f)
                return -1;
            o[s].bytes = 0;
        }
        fwrite(line, 1, (size_t)len, o[s].f);
        o[s].bytes += (uint64_t)len;
        *bytes += (uint64_t)len;
    }
    for (int s = 0; s < 3; s++)
        fclose(o[s].f);
    return 0;
}

static uint64_t receiver_lines(unsigned port)
{
    char cmd[256], buf[512];
    FILE *p;
    const char *k;
    snprintf(cmd, sizeof cmd, "curl -s http://127.0.0.1:%u/stats", port);
    p = popen(cmd, "r");
    if (!p)
        return 0;
    buf[fread(buf, 1, sizeof buf - 1, p)] = '\0';
    pclose(p);
    k = strstr(buf, "\"lines\":");
    return k ? strtoull(k + 8, NULL, 10) : 0;
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000;
    const char *comp = argc > 2 ? argv[2] : "zstd";
    char self[4096], bindir[4096], dir[4200], agent[4300], recv[4300];
    char portf[4300], cursor[4300], url[128], folder[4300], cflag[64];
    char cmd[9000], logs[4300];
    uint64_t bytes, got;
    unsigned port = 0;
    pid_t rp, ap;
    int status;
    struct rusage ru;
    double t0, t1, cpu;
    ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
    FILE *f;

    if (n == 0 || l <= 0) {
        fprintf(stderr, "usage: bench_agent [events] [zstd|gzip|none]\n");
        return 2;
    }
    self[l] = '\0';
    snprintf(bindir, sizeof bindir, "%s", self);
    *strrchr(bindir, '/') = '\0';
    snprintf(agent, sizeof agent, "%s/gpufl-agent", bindir);
    snprintf(recv, sizeof recv, "%s/agent_receiver", bindir);
    snprintf(dir, sizeof dir, "/tmp/bench_agent.%d", (int)getpid());
    snprintf(folder, sizeof folder, "--folder=%s/logs", dir);
    snprintf(portf, sizeof portf, "%s/port", dir);
    snprintf(cursor, sizeof cursor, "--cursor-file=%s/cursor", dir);
    snprintf(cflag, sizeof cflag, "--compress=%s", comp);
    snprintf(logs, sizeof logs, "%s/logs", dir);
    if (mkdir(dir, 0700) || mkdir(logs, 0700)) {
        perror("bench_agent: mkdir");
        return 1;
    }
    t0 = now_s();
    if (write_logs(logs, n, &bytes)) {
        fprintf(stderr, "bench_agent: cannot write the logs\n");
        return 1;
    }
    printf("bench_agent: %llu events, %.1f MB (%.0f bytes/event) written "
           "in %.1f s\n",
           (unsigned long long)n, (double)bytes / 1e6,
           (double)bytes / (double)n, now_s() - t0);

    rp = fork();
    if (rp == 0) {
        execl(recv, recv, "--count-only", "--port-file", portf, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 100 && !port; i++) {
        usleep(50000);
        f = fopen(portf, "r");
        if (f) {
            if (fscanf(f, "%u", &port) != 1)
                port = 0;
            fclose(f);
        }
    }
    if (!port) {
        fprintf(stderr, "bench_agent: receiver did not start (%s)\n", recv);
        kill(rp, SIGKILL);
        return 1;
    }
    snprintf(url, sizeof url, "--url=http://127.0.0.1:%u/api/v1/events/", port);
    t0 = now_s();
    ap = fork();
    if (ap == 0) {
        execl(agent, agent, folder, "--type=http", url, cursor, cflag, "--once",
              "--stats-s=0", (char *)NULL);
        _exit(127);
    }
    if (wait4(ap, &status, 0, &ru) != ap || !WIFEXITED(status) ||
        WEXITSTATUS(status)) {
        fprintf(stderr, "bench_agent: the agent failed\n");
        kill(rp, SIGKILL);
        return 1;
    }
    t1 = now_s();
    got = receiver_lines(port);
    kill(rp, SIGTERM);
    waitpid(rp, NULL, 0);
    cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
          (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    printf("bench_agent: compress=%s  %.0f events/s  %.1f MB/s  "
           "%.2f CPU-s per 1M events  peak RSS %.1f MB  (wall %.2f s, "
           "agent CPU %.2f s)\n",
           comp, (double)n / (t1 - t0), (double)bytes / 1e6 / (t1 - t0),
           cpu / ((double)n / 1e6), (double)ru.ru_maxrss / 1024.0, t1 - t0,
           cpu);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_agent: cannot remove %s\n", dir);
    if (got != n) {
        fprintf(stderr, "bench_agent: receiver counted %llu of %llu lines\n",
                (unsigned long long)got, (unsigned long long)n);
        return 1;
    }
    return 0;
}
