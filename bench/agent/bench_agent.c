/*
 * bench_agent.c - how fast gpufl-agent ships, and what it costs.
 *
 *   bench_agent [events (default 2000000)] [zstd|gzip|none (default zstd)]
 *
 * writes N event lines of about 330 bytes into one session's three streams
 * (60 % device, 30 % scope, 10 % system, plain files rotated at 64 MiB),
 * starts the test receiver in count-only mode on 127.0.0.1, runs
 * `gpufl-agent --once` over the folder and reports events/s (wall clock of
 * the agent run), CPU seconds per 1M events and peak RSS of the agent
 * (wait4 rusage), then checks that the receiver counted every line.
 *
 *   bench_agent live [lines (1000000)] [lines/s (200000)] [extra files (0)]
 *                    [rotate bytes (8 MiB)] [keep (3)]
 *
 * follows a session being written the way the client writes (a session
 * line starting each file with its index, writes every 100 ms, rotation by
 * rename, keep-K pruning that frees inodes the next live file reuses, a
 * session_end at the end) with the agent running live, and prints lines
 * written, shipped and reported lost, lines/s, the agent's CPU seconds per
 * 1M lines during the run and its peak RSS.  With extra files, the folder
 * first gets that many files of 333 older sessions (half ended, half not,
 * as after crashes), which the agent ships before the run starts.
 *
 *   bench_agent files [lines (1000000)] [lines/s (200000)]
 *
 * the live run with no other file in the folder, then with 999 more: CPU
 * per line and RSS should not depend on the number of files.
 *
 * The agent and receiver binaries are taken from this program's folder.
 * The receiver (and, live, the writer) share the machine's cores, so
 * figures on a 2-core box include their work.  BENCH_AGENT_PAUSE_S=N
 * prints the agent's pid and waits N s before the live run, to attach a
 * profiler to the run alone.
 */
#include <errno.h>
#include <fcntl.h>
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

static const char bench_sid[] = "5b1c0d3e-8f2a-4c6b-9d7e-1a2b3c4d5e6f";

/* One event line of about 330 bytes. */
static int make_line_sid(char *out, size_t cap, const char *sid, int st,
                         uint64_t seq)
{
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

static int make_line(char *out, size_t cap, int st, uint64_t seq)
{
    return make_line_sid(out, cap, bench_sid, st, seq);
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

/* Starts the count-only receiver; returns its pid (port in *port) or -1. */
static pid_t receiver_start(const char *bindir, const char *dir, unsigned *port)
{
    char recv[4300], portf[4300];
    pid_t rp;
    FILE *f;

    snprintf(recv, sizeof recv, "%s/agent_receiver", bindir);
    snprintf(portf, sizeof portf, "%s/port", dir);
    rp = fork();
    if (rp == 0) {
        execl(recv, recv, "--count-only", "--port-file", portf, (char *)NULL);
        _exit(127);
    }
    *port = 0;
    for (int i = 0; i < 100 && !*port; i++) {
        usleep(50000);
        f = fopen(portf, "r");
        if (f) {
            if (fscanf(f, "%u", port) != 1)
                *port = 0;
            fclose(f);
        }
    }
    if (!*port) {
        fprintf(stderr, "bench_agent: receiver did not start (%s)\n", recv);
        kill(rp, SIGKILL);
        waitpid(rp, NULL, 0);
        return -1;
    }
    return rp;
}

static void remove_dir(const char *dir)
{
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_agent: cannot remove %s\n", dir);
}

static int bench_once(const char *bindir, uint64_t n, const char *comp)
{
    char dir[4200], agent[4300], cursor[4300], url[128], folder[4300];
    char cflag[64], logs[4300];
    uint64_t bytes, got;
    unsigned port = 0;
    pid_t rp, ap;
    int status;
    struct rusage ru;
    double t0, t1, cpu;

    snprintf(agent, sizeof agent, "%s/gpufl-agent", bindir);
    snprintf(dir, sizeof dir, "/tmp/bench_agent.%d", (int)getpid());
    snprintf(folder, sizeof folder, "--folder=%s/logs", dir);
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
    rp = receiver_start(bindir, dir, &port);
    if (rp < 0)
        return 1;
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
    remove_dir(dir);
    if (got != n) {
        fprintf(stderr, "bench_agent: receiver counted %llu of %llu lines\n",
                (unsigned long long)got, (unsigned long long)n);
        return 1;
    }
    return 0;
}

/* ---- live: a writer that rotates and prunes like the client ---- */

#define LIVE_BUF (256u * 1024)

typedef struct live_stream {
    int fd;
    uint64_t bytes; /* in the live file */
    uint32_t rot;   /* rotations so far: the live file's index */
    uint64_t seq;
    char live[4400];
    char buf[LIVE_BUF];
    size_t len;
} live_stream;

typedef struct live_cfg {
    const char *sid, *prefix;
    uint64_t rotate;
    uint32_t keep;
    uint64_t written; /* lines, session lines included */
} live_cfg;

static int ls_flush(live_stream *s)
{
    size_t off = 0;
    while (off < s->len) {
        ssize_t w = write(s->fd, s->buf + off, s->len - off);
        if (w <= 0)
            return -1;
        off += (size_t)w;
    }
    s->len = 0;
    return 0;
}

static int ls_put(live_stream *s, const char *line, size_t n)
{
    if (s->len + n > LIVE_BUF && ls_flush(s))
        return -1;
    memcpy(s->buf + s->len, line, n);
    s->len += n;
    s->bytes += n;
    return 0;
}

/* The session line that starts each file: its index and the stream's seq,
 * as the client writes it (docs/events.md, session). */
static int ls_session(live_cfg *lc, live_stream *s, int st)
{
    char line[512];
    uint64_t seq = s->seq++;
    int n = snprintf(line, sizeof line,
                     "{\"v\":1,\"sid\":\"%s\",\"st\":\"%s\",\"seq\":%llu,"
                     "\"ts\":%llu,\"type\":\"session\",\"app\":\"bench\","
                     "\"host\":\"bench\",\"pid\":%d,\"start\":1,\"file\":%u}\n",
                     lc->sid, streams[st], (unsigned long long)seq,
                     (unsigned long long)(1764460800000000000ull + seq),
                     (int)getpid(), s->rot);
    lc->written++;
    return ls_put(s, line, (size_t)n);
}

static int ls_open(live_cfg *lc, live_stream *s, const char *dir, int st)
{
    snprintf(s->live, sizeof s->live, "%.4300s/%s.%s.log", dir, lc->prefix,
             streams[st]);
    s->fd = open(s->live, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (s->fd < 0)
        return -1;
    s->bytes = 0;
    return ls_session(lc, s, st);
}

/* As the client: flush and fdatasync, rename to .<n>, prune .<n-keep>,
 * then a new live file (which may get the pruned file's inode). */
static int ls_rotate(live_cfg *lc, live_stream *s, const char *dir, int st)
{
    char dst[4500];

    if (ls_flush(s))
        return -1;
    fdatasync(s->fd);
    close(s->fd);
    s->rot++;
    snprintf(dst, sizeof dst, "%s.%u", s->live, s->rot);
    if (rename(s->live, dst))
        return -1;
    if (lc->keep && s->rot > lc->keep) {
        snprintf(dst, sizeof dst, "%s.%u", s->live, s->rot - lc->keep);
        unlink(dst);
    }
    return ls_open(lc, s, dir, st);
}

/* 333 older sessions' files (up to `extra`): 1,000 event lines each, half
 * of the sessions ended (session_end), half not (their process died). */
static int write_extra(const char *dir, unsigned extra, uint64_t *lines)
{
    char line[1024], path[4400], sid[64];

    *lines = 0;
    for (unsigned i = 0; i < extra; i++) {
        unsigned sess = i / 3;
        int st = (int)(i % 3);
        FILE *f;
        snprintf(sid, sizeof sid, "%08x-0000-4000-8000-000000000000",
                 0x10000000u + sess);
        snprintf(path, sizeof path, "%.4300s/old.20261129-000000.%08x.%s.log",
                 dir, 0x10000000u + sess, streams[st]);
        f = fopen(path, "w");
        if (!f)
            return -1;
        fprintf(f,
                "{\"v\":1,\"sid\":\"%s\",\"st\":\"%s\",\"seq\":0,\"ts\":1,"
                "\"type\":\"session\",\"app\":\"old\",\"host\":\"bench\","
                "\"pid\":1,\"start\":1,\"file\":0}\n",
                sid, streams[st]);
        for (uint64_t q = 1; q <= 1000; q++) {
            int n = make_line_sid(line, sizeof line, sid, st, q);
            fwrite(line, 1, (size_t)n, f);
        }
        *lines += 1001;
        if (sess % 2 == 0) {
            fprintf(f,
                    "{\"v\":1,\"sid\":\"%s\",\"st\":\"%s\",\"seq\":1001,"
                    "\"ts\":2,\"type\":\"session_end\",\"reason\":"
                    "\"shutdown\",\"dur\":1,\"lines\":1002,\"lost\":0,"
                    "\"rotations\":0}\n",
                    sid, streams[st]);
            (*lines)++;
        }
        if (fclose(f))
            return -1;
    }
    return 0;
}

/* utime + stime of a process, in seconds. */
static double proc_cpu(pid_t pid)
{
    char path[64], buf[2048], *p;
    unsigned long ut = 0, stt = 0;
    FILE *f;
    size_t n;

    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')'); /* the command may hold spaces */
    if (!p ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
               &ut, &stt) != 2)
        return 0;
    return (double)(ut + stt) / (double)sysconf(_SC_CLK_TCK);
}

/* A counter from the agent's last stats line ("name=N"). */
static uint64_t stats_value(const char *errfile, const char *name)
{
    FILE *f = fopen(errfile, "r");
    char line[2048], last[2048] = "";
    const char *k;

    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, " stats "))
            snprintf(last, sizeof last, "%s", line);
    fclose(f);
    k = strstr(last, name);
    return k ? strtoull(k + strlen(name), NULL, 10) : 0;
}

typedef struct live_result {
    double cpu_per_m, rss_mb, rate, lag_s;
    uint64_t written, shipped, lost, lost_files;
    unsigned rotations;
} live_result;

/* Waits until the receiver has `want` lines or stops counting for 3 s. */
static uint64_t wait_lines(unsigned port, uint64_t want, double limit_s)
{
    uint64_t got = 0, prev = UINT64_MAX;
    double still = now_s(), end = now_s() + limit_s;

    while (now_s() < end) {
        got = receiver_lines(port);
        if (got >= want)
            break;
        if (got != prev) {
            prev = got;
            still = now_s();
        } else if (now_s() - still > 3) {
            break;
        }
        usleep(100000);
    }
    return got;
}

static int bench_live(const char *bindir, uint64_t nlines, uint64_t rate,
                      unsigned extra, uint64_t rotate, uint32_t keep,
                      live_result *res)
{
    char dir[4200], logs[4300], agent[4300], folder[4320], cursor[4300];
    char url[128], errfile[4300];
    live_cfg lc = { "6c2d1e4f-0a1b-4c2d-8e3f-405162738495",
                    "live.20261130-000000.6c2d1e4f", rotate, keep, 0 };
    static live_stream ls[3];
    uint64_t extra_lines = 0, got, seq_lines = 0;
    unsigned port;
    pid_t rp, ap;
    struct rusage ru;
    double t0, t1, cpu0, cpu1, tend;
    int status, rc = 1, errfd;
    char line[1024];

    memset(res, 0, sizeof *res);
    snprintf(agent, sizeof agent, "%s/gpufl-agent", bindir);
    snprintf(dir, sizeof dir, "/tmp/bench_agent_live.%d.%u", (int)getpid(),
             extra);
    snprintf(logs, sizeof logs, "%s/logs", dir);
    snprintf(folder, sizeof folder, "--folder=%.4200s", logs);
    snprintf(cursor, sizeof cursor, "--cursor-file=%s/cursor", dir);
    snprintf(errfile, sizeof errfile, "%s/agent.err", dir);
    if (mkdir(dir, 0700) || mkdir(logs, 0700)) {
        perror("bench_agent: mkdir");
        return 1;
    }
    if (write_extra(logs, extra, &extra_lines)) {
        fprintf(stderr, "bench_agent: cannot write the extra files\n");
        goto out;
    }
    rp = receiver_start(bindir, dir, &port);
    if (rp < 0)
        goto out;
    snprintf(url, sizeof url, "--url=http://127.0.0.1:%u/api/v1/events/", port);
    ap = fork();
    if (ap == 0) {
        errfd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (errfd >= 0)
            dup2(errfd, 2);
        execl(agent, agent, folder, "--type=http", url, cursor, "--stats-s=1",
              (char *)NULL);
        _exit(127);
    }
    if (extra && wait_lines(port, extra_lines, 300) != extra_lines) {
        fprintf(stderr, "bench_agent: the extra files were not shipped\n");
        goto stop;
    }
    usleep(500000);
    if (getenv("BENCH_AGENT_PAUSE_S")) {
        /* time to attach a profiler to the agent for the run alone */
        unsigned pause =
            (unsigned)strtoul(getenv("BENCH_AGENT_PAUSE_S"), NULL, 10);
        fprintf(stderr, "bench_agent: agent pid %d; the run starts in %u s\n",
                (int)ap, pause);
        sleep(pause);
    }
    for (int st = 0; st < 3; st++) {
        memset(&ls[st], 0, sizeof ls[st]);
        if (ls_open(&lc, &ls[st], logs, st))
            goto stop;
    }
    cpu0 = proc_cpu(ap);
    t0 = now_s();
    /* rate-limited in 10 ms ticks; written out every 100 ms, as the
     * client's flush timer does */
    for (uint64_t i = 0, tick = 0; i < nlines; tick++) {
        uint64_t due = rate * (tick + 1) / 100;
        double at = t0 + (double)(tick + 1) / 100.0;
        for (; i < nlines && i < due; i++) {
            unsigned r = (unsigned)(i % 10);
            int st = r < 6 ? 0 : r < 9 ? 1 : 2;
            live_stream *s = &ls[st];
            int n = make_line_sid(line, sizeof line, lc.sid, st, s->seq);
            if (s->bytes + (uint64_t)n > rotate) {
                if (ls_rotate(&lc, s, logs, st))
                    goto stop;
                res->rotations++;
            }
            s->seq++;
            lc.written++;
            if (ls_put(s, line, (size_t)n))
                goto stop;
        }
        if (tick % 10 == 9)
            for (int st = 0; st < 3; st++)
                if (ls_flush(&ls[st]))
                    goto stop;
        while (now_s() < at)
            usleep(1000);
    }
    for (int st = 0; st < 3; st++) {
        live_stream *s = &ls[st];
        int n = snprintf(line, sizeof line,
                         "{\"v\":1,\"sid\":\"%s\",\"st\":\"%s\",\"seq\":%llu,"
                         "\"ts\":2,\"type\":\"session_end\",\"reason\":"
                         "\"shutdown\",\"dur\":1,\"lines\":%llu,\"lost\":0,"
                         "\"rotations\":%u}\n",
                         lc.sid, streams[st], (unsigned long long)s->seq,
                         (unsigned long long)(s->seq + 1), s->rot);
        s->seq++;
        lc.written++;
        if (ls_put(s, line, (size_t)n) || ls_flush(s))
            goto stop;
        close(s->fd);
        seq_lines += s->seq;
    }
    tend = now_s();
    got = wait_lines(port, extra_lines + lc.written, 120) - extra_lines;
    t1 = now_s();
    cpu1 = proc_cpu(ap);
    usleep(1200000); /* one more stats line */
    res->written = lc.written;
    res->shipped = got;
    res->rate = (double)lc.written / (tend - t0);
    res->lag_s = t1 - tend;
    res->cpu_per_m = (cpu1 - cpu0) / ((double)lc.written / 1e6);
    rc = 0;
stop:
    kill(ap, SIGTERM);
    if (wait4(ap, &status, 0, &ru) == ap)
        res->rss_mb = (double)ru.ru_maxrss / 1024.0;
    res->lost = stats_value(errfile, "lost-lines=");
    res->lost_files = stats_value(errfile, "lost-files=");
    kill(rp, SIGTERM);
    waitpid(rp, NULL, 0);
    (void)seq_lines;
out:
    remove_dir(dir);
    return rc;
}

static void live_print(const live_result *r, unsigned extra, uint64_t rotate,
                       uint32_t keep)
{
    printf("bench_agent live: %u other files in the folder; %llu lines "
           "written at %.0f lines/s with %u rotations (%llu-byte files, "
           "keep %u); %llu shipped, %llu reported lost (%llu files), %lld "
           "unaccounted; agent %.2f CPU-s per 1M lines, peak RSS %.1f MB, "
           "drained %.2f s after the writer stopped\n",
           extra, (unsigned long long)r->written, r->rate, r->rotations,
           (unsigned long long)rotate, keep, (unsigned long long)r->shipped,
           (unsigned long long)r->lost, (unsigned long long)r->lost_files,
           (long long)(r->written - r->shipped - r->lost), r->cpu_per_m,
           r->rss_mb, r->lag_s);
}

int main(int argc, char **argv)
{
    char self[4096], bindir[4096];
    ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);

    if (l <= 0)
        return 1;
    self[l] = '\0';
    snprintf(bindir, sizeof bindir, "%s", self);
    *strrchr(bindir, '/') = '\0';
    if (argc > 1 && (!strcmp(argv[1], "live") || !strcmp(argv[1], "files"))) {
        uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;
        uint64_t rate = argc > 3 ? strtoull(argv[3], NULL, 10) : 200000;
        unsigned extra = argc > 4 ? (unsigned)strtoul(argv[4], NULL, 10) : 0;
        uint64_t rotate = argc > 5 ? strtoull(argv[5], NULL, 10) : 8ull << 20;
        uint32_t keep = argc > 6 ? (uint32_t)strtoul(argv[6], NULL, 10) : 3;
        live_result r;
        int bad = 0;

        if (!n || !rate || rotate < 4096) {
            fprintf(stderr, "usage: bench_agent live [lines] [lines/s] "
                            "[extra files] [rotate bytes] [keep]\n");
            return 2;
        }
        if (!strcmp(argv[1], "files")) {
            for (unsigned e = 0; e <= 999; e += 999) {
                if (bench_live(bindir, n, rate, e, rotate, keep, &r))
                    return 1;
                live_print(&r, e, rotate, keep);
                bad |= r.shipped + r.lost < r.written;
            }
            return bad;
        }
        if (bench_live(bindir, n, rate, extra, rotate, keep, &r))
            return 1;
        live_print(&r, extra, rotate, keep);
        return r.shipped + r.lost < r.written;
    }
    {
        uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000;
        const char *comp = argc > 2 ? argv[2] : "zstd";
        if (n == 0) {
            fprintf(stderr, "usage: bench_agent [events] [zstd|gzip|none]\n"
                            "       bench_agent live|files ...\n");
            return 2;
        }
        return bench_once(bindir, n, comp);
    }
}
