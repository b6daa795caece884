/*
 * bench_idle.c - the cost of `gpufl idle watch`: 8 simulated GPUs and 50
 * sessions whose signals come from a fixture tree (a cgroup with cpu.stat
 * each, 200 TCP lines, 50 utmp users with ptys), verdict lines written to
 * a log folder.  The daemon runs for a fixed time at a given interval;
 * wait4() gives its CPU time and peak RSS.
 *
 * Usage: bench_idle [seconds=20] [interval_ms=100]
 * (a faster interval than the default 1 s gives more rounds to measure;
 * the share of a core at 1 Hz is CPU per round / 1 s).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utmp.h>

#define NGPU 8
#define NSESS 50

static char root[512];

static void put(const char *rel, const char *text)
{
    char path[1024];
    FILE *f;
    snprintf(path, sizeof path, "%s%s", root, rel);
    for (char *p = path + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(path, 0755);
            *p = '/';
        }
    f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

int main(int argc, char **argv)
{
    int secs = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 20;
    int ms = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 100;
    char gpufl[1024], cfg[1100], logs[1100], rel[256], buf[1100];
    char *tcp, *slash;
    size_t k = 0;
    FILE *f;
    pid_t pid;
    int status, fd;
    struct rusage ru;
    double cpu, rounds;

    snprintf(gpufl, sizeof gpufl, "%s", argv[0]);
    slash = strrchr(gpufl, '/');
    snprintf(slash ? slash + 1 : gpufl,
             sizeof gpufl - (size_t)(slash ? slash + 1 - gpufl : 0), "gpufl");
    snprintf(root, sizeof root, "/tmp/bench_idle_%d", (int)getpid());
    mkdir(root, 0755);

    /* fixture: 50 cgroups, a TCP table, utmp + ptys */
    tcp = malloc(256 * 200 + 256);
    if (!tcp)
        return 1;
    k += (size_t)snprintf(tcp + k, 256,
                          "  sl  local_address rem_address   st\n");
    for (int i = 0; i < 200; i++)
        k += (size_t)snprintf(tcp + k, 256,
                              "%4d: 0100007F:%04X 0100007F:%04X %s 0:0 0:0 0 "
                              "1000 0 %d\n",
                              i, 9000 + i % NSESS, 40000 + i,
                              i % 3 ? "01" : "0A", i);
    put("/proc/net/tcp", tcp);
    put("/proc/net/tcp6", "  sl  local_address\n");
    free(tcp);
    snprintf(cfg, sizeof cfg, "%s/idle.conf", root);
    f = fopen(cfg, "w");
    if (!f)
        return 1;
    fprintf(f,
            "simulate = none,held,one_thread,matmul,phantom,bursty,train\n"
            "sim-gpus = %d\ninterval = %d\nroot = %s\n",
            NGPU, ms, root);
    snprintf(buf, sizeof buf, "%s/var/run/utmp", root);
    put("/var/run/utmp", "");
    fd = open(buf, O_WRONLY | O_TRUNC);
    for (int i = 0; i < NSESS; i++) {
        struct utmp u;
        snprintf(rel, sizeof rel, "/sys/fs/cgroup/sess%d/cpu.stat", i);
        snprintf(buf, sizeof buf, "usage_usec %d\n", 1000 * i);
        put(rel, buf);
        snprintf(rel, sizeof rel, "/dev/pts/%d", i);
        put(rel, "");
        memset(&u, 0, sizeof u);
        u.ut_type = USER_PROCESS;
        snprintf(u.ut_user, sizeof u.ut_user, "user%d", i);
        snprintf(u.ut_line, sizeof u.ut_line, "pts/%d", i);
        if (fd >= 0 && write(fd, &u, sizeof u) != (ssize_t)sizeof u)
            return 1;
        fprintf(f,
                "session = name=s%d,cgroup=/sess%d,user=user%d,ports=%d,"
                "devs=%d\n",
                i, i, i, 9000 + i, i % NGPU);
    }
    if (fd >= 0)
        close(fd);
    fclose(f);
    snprintf(logs, sizeof logs, "%s/logs", root);
    mkdir(logs, 0755);

    pid = fork();
    if (pid == 0) {
        char dur[32];
        snprintf(dur, sizeof dur, "%d", secs);
        if (!freopen("/dev/null", "w", stderr))
            _exit(126);
        execl(gpufl, gpufl, "idle", "watch", "--config", cfg, "--log-dir", logs,
              "--listen", "127.0.0.1:0", "--duration", dur, (char *)NULL);
        _exit(127);
    }
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench_idle: %s failed\n", gpufl);
        return 1;
    }
    cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
          (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    rounds = secs * 1000.0 / ms;
    printf("gpufl idle watch: %d simulated GPUs, %d sessions, %d s at %d ms "
           "(%.0f rounds)\n",
           NGPU, NSESS, secs, ms, rounds);
    printf("  CPU total            %.3f s\n", cpu);
    printf("  CPU per round        %.1f us (all GPUs and sessions)\n",
           cpu / rounds * 1e6);
    printf("  CPU per GPU sample   %.1f us (round / %d GPUs)\n",
           cpu / rounds / NGPU * 1e6, NGPU);
    printf("  at 1 Hz: %.3f %% of one core (target <= 1 %%)\n",
           cpu / rounds * 100);
    printf("  peak RSS             %.1f MiB\n", ru.ru_maxrss / 1024.0);
    snprintf(buf, sizeof buf, "rm -rf '%s'", root);
    if (system(buf) != 0)
        return 1;
    return 0;
}
