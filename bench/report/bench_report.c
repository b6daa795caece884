/*
 * bench_report.c - how fast `gpufl report` reads a log folder, and how
 * much memory it needs.
 *
 * Writes a synthetic session (one device stream rotated every 64 MiB,
 * 256 kernel names with one launch configuration each, log-normal-ish
 * durations, a scope stream with one scope per 100 kernels), then runs the
 * real `gpufl report --json` (next to this program) on it as a child and
 * reads its wall time and peak RSS from wait4().  Done for N/10 and N
 * events, so the two RSS figures show whether memory grows with N.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NAMES 256
#define ROTATE (64ull << 20)
#define SID "0b1e5c7a-1d2e-4f60-8a9b-0c1d2e3f4a5b"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t xr(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static FILE *open_file(const char *dir, const char *st, unsigned n,
                       uint64_t *seq, uint64_t ts)
{
    char path[4200];
    FILE *f;
    if (n)
        snprintf(path, sizeof path, "%s/bench.%s.log.%u", dir, st, n);
    else
        snprintf(path, sizeof path, "%s/bench.%s.log", dir, st);
    f = fopen(path, "w");
    if (!f)
        return NULL;
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    fprintf(f,
            "{\"v\":1,\"sid\":\"" SID "\",\"st\":\"%s\",\"seq\":%" PRIu64
            ",\"ts\":%" PRIu64 ",\"type\":\"session\",\"app\":\"bench\","
            "\"host\":\"bench\",\"pid\":1,\"start\":1796000000000000000,"
            "\"file\":%u,\"lib\":\"0.1.0\",\"simulated\":false,\"cmd\":"
            "\"bench_report\",\"interval_ms\":0,\"engines\":{},\"devices\":"
            "[{\"id\":0,\"name\":\"synthetic\"}]}\n",
            st, (*seq)++, ts, n);
    return f;
}

static int dicts(FILE *f, uint64_t *seq, uint64_t ts)
{
    for (int i = 0; i < NAMES; i++) {
        fprintf(f,
                "{\"v\":1,\"sid\":\"" SID
                "\",\"st\":\"device\",\"seq\":%" PRIu64 ",\"ts\":%" PRIu64
                ",\"type\":\"dict\",\"id\":%d,\"kind\":"
                "\"name\",\"name\":\"_ZN6kernel%03dEPfS0_i\"}\n",
                (*seq)++, ts, i + 1, i);
        fprintf(f,
                "{\"v\":1,\"sid\":\"" SID
                "\",\"st\":\"device\",\"seq\":%" PRIu64 ",\"ts\":%" PRIu64
                ",\"type\":\"dict\",\"id\":%d,\"kind\":"
                "\"launch\",\"name\":%d,\"block\":[256],\"regs\":%d,\"occ\":"
                "0.5,\"lim\":\"regs\"}\n",
                (*seq)++, ts, NAMES + i + 1, i + 1, 32 + i % 64);
    }
    return 0;
}

/* Writes n kernel events; returns bytes written, 0 on failure. */
static uint64_t generate(const char *dir, uint64_t n)
{
    uint64_t seq = 0, ts = 1796000000000000000ull, bytes = 0, cur = 0;
    unsigned file = 0;
    char path[4200];
    FILE *f;
    mkdir(dir, 0755);
    f = open_file(dir, "device", 0, &seq, ts);
    if (!f)
        return 0;
    dicts(f, &seq, ts);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t r = xr(), k = r % NAMES;
        uint64_t dur = 2000 + (k * 977) % 200000 + (xr() % 4096) * (k + 1);
        int len;
        if (cur > ROTATE) { /* rotate: the live file becomes .N */
            char from[4200];
            fclose(f);
            snprintf(from, sizeof from, "%s/bench.device.log", dir);
            snprintf(path, sizeof path, "%s/bench.device.log.%u", dir, ++file);
            rename(from, path);
            f = open_file(dir, "device", 0, &seq, ts);
            if (!f)
                return 0;
            dicts(f, &seq, ts);
            cur = 0;
        }
        len = fprintf(f,
                      "{\"v\":1,\"sid\":\"" SID "\",\"st\":\"device\","
                      "\"seq\":%" PRIu64 ",\"ts\":%" PRIu64
                      ",\"type\":\"kernel\",\"stream\":7,\"corr\":%" PRIu64
                      ",\"cfg\":%" PRIu64 ",\"grid\":[%u,16],\"dur\":%" PRIu64
                      ",\"api\":[-16051,5817],\"scope\":%" PRIu64 "}\n",
                      seq++, ts, i + 1, NAMES + k + 1, (unsigned)(1 + k % 128),
                      dur, 1 + i / 100);
        if (len < 0)
            return 0;
        cur += (uint64_t)len;
        bytes += (uint64_t)len;
        ts += dur + 500;
    }
    fprintf(f,
            "{\"v\":1,\"sid\":\"" SID "\",\"st\":\"device\",\"seq\":%" PRIu64
            ",\"ts\":%" PRIu64 ",\"type\":\"session_end\",\"reason\":"
            "\"shutdown\",\"dur\":1,\"lines\":%" PRIu64 ",\"lost\":0,"
            "\"rotations\":%u}\n",
            seq, ts, seq + 1, file);
    return fclose(f) ? 0 : bytes;
}

static void clean(const char *dir)
{
    char cmd[4200];
    if (getenv("BENCH_REPORT_KEEP")) /* to profile gpufl report by hand */
        return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

static int run_report(const char *gpufl, const char *dir, double *wall,
                      double *cpu, long *rss_kb)
{
    double t0 = now();
    struct rusage ru;
    int st;
    pid_t p;
    fflush(stdout);
    p = fork();
    if (p == 0) {
        if (!freopen("/dev/null", "w", stdout))
            _exit(126);
        execl(gpufl, gpufl, "report", dir, "--json", (char *)NULL);
        _exit(127);
    }
    if (p < 0 || wait4(p, &st, 0, &ru) < 0)
        return -1;
    *wall = now() - t0;
    *cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    *rss_kb = ru.ru_maxrss;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000ull;
    const char *base = argc > 2 ? argv[2] : "/tmp";
    char self[4096], gpufl[4200], dir[2048];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        return 1;
    self[len] = 0;
    *strrchr(self, '/') = 0;
    snprintf(gpufl, sizeof gpufl, "%s/gpufl", self);
    printf("bench_report: gpufl report --json on a generated folder "
           "(%d kernel names, 64 MiB rotation)\n",
           NAMES);
    for (int pass = 0; pass < 2; pass++) {
        uint64_t events = pass ? n : n / 10;
        double t0 = now(), gen, wall, cpu;
        long rss;
        uint64_t bytes;
        snprintf(dir, sizeof dir, "%s/gpufl-bench-report-%d", base,
                 (int)getpid());
        bytes = generate(dir, events);
        gen = now() - t0;
        if (!bytes || run_report(gpufl, dir, &wall, &cpu, &rss)) {
            fprintf(stderr, "bench_report: failed (%s)\n", strerror(errno));
            clean(dir);
            return 1;
        }
        printf("%10" PRIu64 " events, %6.0f MB (generated in %.1f s): "
               "report %.2f s wall = %.2fM events/s (%.2f CPU-s = %.2fM "
               "events per CPU-s), peak RSS %.1f MB\n",
               events, bytes / 1e6, gen, wall, events / wall / 1e6, cpu,
               events / cpu / 1e6, rss / 1024.0);
        fflush(stdout);
        clean(dir);
    }
    return 0;
}
