/*
 * test_host.c - src_host_* against procfs fixture trees written at test
 * time (exact percentages from two snapshots), missing files, and a
 * sanity run against the real /proc.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client/source.h"
#include "test.h"

static char root[512];

static void put(const char *name, const char *text)
{
    char path[1024];
    FILE *fp;
    snprintf(path, sizeof path, "%s/%s", root, name);
    fp = fopen(path, "w");
    if (!fp) {
        perror(path);
        exit(2);
    }
    fputs(text, fp);
    fclose(fp);
}

static void drop(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, name);
    unlink(path);
}

/* Remove the current fixture tree. */
static void unfixture(void)
{
    char sub[1100];
    drop("stat");
    drop("meminfo");
    drop("loadavg");
    drop("self/stat");
    drop("self/statm");
    snprintf(sub, sizeof sub, "%s/self", root);
    rmdir(sub);
    rmdir(root);
}

/* A fresh fixture directory named after the test. */
static void fixture(const char *test)
{
    const char *dir = getenv("GPUFL_TEST_TMP");
    char sub[1100];
    snprintf(root, sizeof root, "%s/host_%ld_%s", dir && *dir ? dir : "/tmp",
             (long)getpid(), test);
    snprintf(sub, sizeof sub, "%s/self", root);
    unfixture();
    if (mkdir(root, 0700) || mkdir(sub, 0700)) {
        perror(root);
        exit(2);
    }
}

static int near(double a, double b)
{
    return fabs(a - b) < 1e-9;
}

static const char meminfo[] = "MemTotal:       16000000 kB\n"
                              "MemFree:         1000000 kB\n"
                              "MemAvailable:   12000000 kB\n"
                              "Buffers:          200000 kB\n"
                              "Cached:          3000000 kB\n"
                              "SwapCached:            0 kB\n"
                              "SwapTotal:       2000000 kB\n"
                              "SwapFree:         500000 kB\n";

/* stat: busy = total - idle - iowait; guest/guest_nice are already inside
 * user/nice and must not be added again. */
static const char stat1[] = "cpu  100 0 50 800 50 0 0 0 0 0\n"
                            "cpu0 50 0 25 400 25 0 0 0 0 0\n"
                            "cpu1 50 0 25 400 25 0 0 0 0 0\n"
                            "intr 12345 1 2 3\n"
                            "ctxt 999\n"
                            "cpu_not_a_cpu 1\n";
static const char stat2[] = "cpu  200 10 90 1500 100 0 0 100 50 5\n"
                            "cpu0 100 5 45 750 50 0 0 50 25 2\n"
                            "cpu1 100 5 45 750 50 0 0 50 25 3\n"
                            "intr 23456 1 2 3\n";
/* the command name holds spaces and parentheses */
static const char self1[] =
    "4242 (my (odd) prog) S 1 4242 4242 0 -1 4194304 100 0 0 0 10 5 0 0 20 0"
    " 1 0 12345 1000000 250 18446744073709551615\n";
static const char self2[] =
    "4242 (my (odd) prog) R 1 4242 4242 0 -1 4194304 100 0 0 0 40 25 0 0 20 0"
    " 1 0 12345 1000000 250 18446744073709551615\n";

static void test_two_snapshots(void)
{
    src_host *h;
    src_host_sample s;
    long page = sysconf(_SC_PAGESIZE);

    fixture("two");
    put("stat", stat1);
    put("meminfo", meminfo);
    put("loadavg", "0.52 0.58 0.59 1/1234 5678\n");
    put("self/stat", self1);
    put("self/statm", "1000 250 100 10 0 500 0\n");
    h = src_host_open(root);
    REQUIRE(h != NULL);

    CHECK_EQ_U64(src_host_sample_now(h, &s), 0);
    CHECK(s.cpu_pct < 0); /* no interval yet */
    CHECK(s.proc_cpu_pct < 0);
    CHECK_EQ_U64(s.ncpu, 2);
    CHECK_EQ_U64(s.ram_total, 16000000ull * 1024);
    CHECK_EQ_U64(s.ram_used, (16000000ull - 12000000ull) * 1024);
    CHECK_EQ_U64(s.swap_used, 1500000ull * 1024);
    CHECK(near(s.load1, 0.52));
    CHECK_EQ_U64(s.proc_rss, 250ull * (uint64_t)page);

    put("stat", stat2);
    put("self/stat", self2);
    CHECK_EQ_U64(src_host_sample_now(h, &s), 0);
    /* busy 150 -> 400, total 1000 -> 2000: 250 / 1000 */
    CHECK(near(s.cpu_pct, 25.0));
    /* 15 -> 65 ticks over (2000 - 1000) / 2 CPUs = 500 ticks */
    CHECK(near(s.proc_cpu_pct, 10.0));

    /* no jiffy since: the last interval is reported again */
    CHECK_EQ_U64(src_host_sample_now(h, &s), 0);
    CHECK(near(s.cpu_pct, 25.0));
    CHECK(near(s.proc_cpu_pct, 10.0));

    /* counters went back: a new interval starts */
    put("stat", stat1);
    CHECK_EQ_U64(src_host_sample_now(h, &s), 0);
    CHECK(s.cpu_pct < 0);
    CHECK(s.proc_cpu_pct < 0);
    put("stat", stat2);
    CHECK_EQ_U64(src_host_sample_now(h, &s), 0);
    CHECK(near(s.cpu_pct, 25.0));
    CHECK(near(s.proc_cpu_pct, 0.0)); /* self/stat did not move */
    src_host_close(h);
}

/* A fully busy interval and a process using 3 of 4 CPUs. */
static void test_busy(void)
{
    src_host *h;
    src_host_sample s;

    fixture("busy");
    put("meminfo", meminfo);
    put("loadavg", "12.50 1.00 1.00 1/1 1\n");
    put("self/statm", "1 1\n");
    put("stat", "cpu  0 0 0 0 0 0 0 0\ncpu0\ncpu1\ncpu2\ncpu3\n");
    put("self/stat", "1 (x) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0\n");
    h = src_host_open(root);
    REQUIRE(h != NULL);
    CHECK_EQ_U64(src_host_sample_now(h, &s), 0);
    CHECK(near(s.load1, 12.5));
    put("stat", "cpu  300 0 100 0 0 0 0 0\ncpu0\ncpu1\ncpu2\ncpu3\n");
    put("self/stat", "1 (x) R 1 1 1 0 -1 0 0 0 0 0 50 25 0 0\n");
    CHECK_EQ_U64(src_host_sample_now(h, &s), 0);
    CHECK(near(s.cpu_pct, 100.0));
    CHECK_EQ_U64(s.ncpu, 4);
    CHECK(near(s.proc_cpu_pct, 75.0)); /* 75 ticks over 400 / 4 */
    src_host_close(h);
}

/* Kernels before 3.14 have no MemAvailable. */
static void test_old_meminfo(void)
{
    src_host *h;
    src_host_sample s;

    fixture("oldmem");
    put("meminfo", "MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 50 kB\n"
                   "Cached: 250 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n");
    h = src_host_open(root);
    REQUIRE(h != NULL);
    CHECK_EQ_U64(src_host_sample_now(h, &s), GPUFL_EIO); /* other files */
    CHECK_EQ_U64(s.ram_total, 1000 * 1024);
    CHECK_EQ_U64(s.ram_used, 600 * 1024);
    CHECK_EQ_U64(s.swap_used, 0);
    src_host_close(h);
}

static void test_missing(void)
{
    src_host *h;
    src_host_sample s;

    fixture("missing");
    put("meminfo", meminfo);
    h = src_host_open(root);
    REQUIRE(h != NULL);
    CHECK_EQ_U64(src_host_sample_now(h, &s), GPUFL_EIO);
    /* what could be read is filled, the rest is unknown */
    CHECK_EQ_U64(s.ram_total, 16000000ull * 1024);
    CHECK(s.cpu_pct < 0);
    CHECK(s.proc_cpu_pct < 0);
    CHECK(s.load1 < 0);
    CHECK_EQ_U64(s.ncpu, 0);
    CHECK_EQ_U64(s.proc_rss, 0);
    put("stat", "garbage\n");
    CHECK_EQ_U64(src_host_sample_now(h, &s), GPUFL_EIO);
    CHECK(s.cpu_pct < 0);
    src_host_close(h);

    h = src_host_open("/nonexistent/gpufl-proc");
    REQUIRE(h != NULL);
    CHECK_EQ_U64(src_host_sample_now(h, &s), GPUFL_EIO);
    CHECK_EQ_U64(s.ram_total, 0);
    CHECK(s.cpu_pct < 0);
    src_host_close(h);
    src_host_close(NULL);
}

static volatile unsigned long spin_sink;

static void spin_ms(long ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        for (int i = 0; i < 100000; i++)
            spin_sink += (unsigned long)i;
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 <
             ms);
}

static double ts_s(struct timespec a, struct timespec b)
{
    return (double)(b.tv_sec - a.tv_sec) +
           (double)(b.tv_nsec - a.tv_nsec) / 1e9;
}

static void test_real_proc(void)
{
    src_host *h = src_host_open(NULL);
    src_host_sample s;
    struct timespec c0, c1, w0, w1;
    double own;

    REQUIRE(h != NULL);
    CHECK_EQ_U64(src_host_sample_now(h, &s), 0);
    CHECK(s.ncpu >= 1);
    CHECK(s.ram_total > 0);
    CHECK(s.ram_used > 0 && s.ram_used <= s.ram_total);
    CHECK(s.proc_rss > 0);
    CHECK(s.load1 >= 0);
    CHECK(s.cpu_pct < 0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    clock_gettime(CLOCK_MONOTONIC, &w0);
    spin_ms(300);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    clock_gettime(CLOCK_MONOTONIC, &w1);
    CHECK_EQ_U64(src_host_sample_now(h, &s), 0);
    CHECK(s.cpu_pct >= 0 && s.cpu_pct <= 100);
    /* this thread spun the whole interval: the share of a core the kernel
     * gave it (close to one core on an idle machine, less on a loaded
     * one), as the process's own CPU clock measured it; /proc counts in
     * 10 ms ticks (3.3 % of 300 ms each) and the two intervals differ by
     * a few calls, hence the margin */
    own = 100.0 * ts_s(c0, c1) / ts_s(w0, w1);
    CHECK(own > 1.0);
    CHECK(fabs(s.proc_cpu_pct - own) < 4.0 + 0.2 * own);
    CHECK(s.proc_cpu_pct < 100.0 * s.ncpu + 1);
    fprintf(stderr,
            "  host: %u CPUs, cpu %.1f%%, self %.1f%% (own clock %.1f%%), ram "
            "%" PRIu64 "/%" PRIu64 " MiB, load %.2f, rss %" PRIu64 " KiB\n",
            s.ncpu, s.cpu_pct, s.proc_cpu_pct, own, s.ram_used >> 20,
            s.ram_total >> 20, s.load1, s.proc_rss >> 10);
    src_host_close(h);
}

int main(void)
{
    RUN(test_two_snapshots);
    unfixture();
    RUN(test_busy);
    unfixture();
    RUN(test_old_meminfo);
    unfixture();
    RUN(test_missing);
    RUN(test_real_proc);
    unfixture();
    TEST_DONE();
}
