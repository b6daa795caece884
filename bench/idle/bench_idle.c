/*
 * bench_idle.c - the cost of `gpufl idle watch`: 8 simulated GPUs and 50
 * sessions whose signals come from a fixture tree (a cgroup with cpu.stat
 * each, 200 TCP lines, 50 utmp users with ptys), verdict lines written to
 * a log folder.  The daemon runs for a fixed time at a given interval;
 * wait4() gives its CPU time and peak RSS.
 *
 * Usage: bench_idle [seconds=20] [interval_ms=100] [mig]
 * (a faster interval than the default 1 s gives more rounds to measure;
 * the share of a core at 1 Hz is CPU per round / 1 s).
 *
 * mig: the shape of issue 21 instead of simulated GPUs: the fake NVML
 * (tests/gpu/fake_nvml.c, through the real NVML reader) with 8 H100s in
 * MIG mode, 7 GPU instances each (56 judged apart, GPM per instance),
 * 500 processes spread over them, each with a pod cgroup (50 pods) and a
 * uid for the owner lookup, and 50 gpufl sessions whose device logs
 * (--gpufl-logs) this program appends 10 kernel lines each to every
 * 100 ms while the daemon runs.
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
#define NMIG 7    /* MIG instances per GPU (mig mode) */
#define NPROC 500 /* GPU processes (mig mode) */
#define NKSESS 50 /* gpufl sessions (mig mode) */
#define KERN_PER_TICK 10

#ifndef FAKE_NVML_FULL
#define FAKE_NVML_FULL ""
#endif

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

/* mig mode: the fake NVML script, the processes' /proc entries, the pods'
 * log folders and the gpufl sessions' device logs. */
static int mig_fixture(const char *script, const char *klogs)
{
    FILE *f = fopen(script, "w");
    char rel[256], buf[512];
    if (!f)
        return -1;
    fprintf(f, "global count=%d\n", NGPU);
    for (int d = 0; d < NGPU; d++) {
        const char *sep = "";
        fprintf(f,
                "dev %d name=\"NVIDIA H100 80GB HBM3\" uuid=GPU-bench-%d "
                "mem_total=85520809984 power_limit=700000 gpm=1 mig=1 procs=",
                d, d);
        for (int j = d; j < NPROC; j += NGPU) {
            fprintf(f, "%s%d:1073741824:%d", sep, 10000 + j,
                    (j / NGPU) % NMIG + 1);
            sep = ",";
        }
        fprintf(f, " migs=");
        for (int g = 1; g <= NMIG; g++)
            fprintf(f, "%s%d:9663676416:10200547328:%d", g > 1 ? "," : "", g,
                    (g * 13) % 100);
        fprintf(f, "\n");
    }
    fclose(f);
    for (int j = 0; j < NPROC; j++) {
        int pod = j % 50;
        snprintf(rel, sizeof rel, "/proc/%d/cgroup", 10000 + j);
        snprintf(buf, sizeof buf,
                 "0::/kubepods.slice/kubepods-pod%08d_0000_0000_0000_"
                 "000000000000.slice/cri-containerd-%012d.scope\n",
                 pod, j);
        put(rel, buf);
        snprintf(rel, sizeof rel, "/proc/%d/status", 10000 + j);
        snprintf(buf, sizeof buf, "Name:\ttrain\nUid:\t%d\t%d\t%d\t%d\n",
                 1000 + pod, 1000 + pod, 1000 + pod, 1000 + pod);
        put(rel, buf);
    }
    for (int p = 0; p < 50; p++) {
        snprintf(rel, sizeof rel,
                 "/var/log/pods/team_pod-%d_%08d-0000-0000-0000-000000000000/"
                 "x",
                 p, p);
        put(rel, "");
    }
    mkdir(klogs, 0755);
    for (int i = 0; i < NKSESS; i++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/app_%d.device.log", klogs, 10000 + i);
        f = fopen(path, "w");
        if (!f)
            return -1;
        fprintf(
            f,
            "{\"v\":1,\"sid\":\"s%d\",\"st\":\"device\",\"seq\":0,"
            "\"ts\":1795994980000000000,\"type\":\"session\",\"app\":"
            "\"app\",\"host\":\"h\",\"pid\":%d,\"devices\":[{\"id\":0,"
            "\"name\":\"NVIDIA H100 80GB HBM3\",\"uuid\":\"GPU-bench-%d\"}]}"
            "\n",
            i, 10000 + i, i % NGPU);
        fclose(f);
    }
    return 0;
}

/* KERN_PER_TICK kernel lines onto each gpufl session's device log */
static void mig_kernels(const char *klogs, int tick)
{
    struct timeval tv;
    unsigned long long now;
    gettimeofday(&tv, NULL);
    now = (unsigned long long)tv.tv_sec * 1000000000ull +
          (unsigned long long)tv.tv_usec * 1000ull;
    for (int i = 0; i < NKSESS; i++) {
        char path[1200];
        FILE *f;
        snprintf(path, sizeof path, "%s/app_%d.device.log", klogs, 10000 + i);
        f = fopen(path, "a");
        if (!f)
            continue;
        for (int k = 0; k < KERN_PER_TICK; k++)
            fprintf(f,
                    "{\"v\":1,\"sid\":\"s%d\",\"st\":\"device\",\"seq\":%d,"
                    "\"ts\":%llu,\"type\":\"kernel\",\"stream\":%d,"
                    "\"corr\":%d,\"cfg\":1,\"grid\":[108],\"dur\":4000000}\n",
                    i, 1 + tick * KERN_PER_TICK + k,
                    now - 100000000ull + (unsigned long long)k * 5000000ull,
                    k % 2, tick * KERN_PER_TICK + k);
        fclose(f);
    }
}

int main(int argc, char **argv)
{
    int secs = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 20;
    int ms = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 100;
    int mig = argc > 3 && !strcmp(argv[3], "mig");
    int ngpu = mig ? NGPU * NMIG : NGPU;
    char script[1100] = "", klogs[1100] = "";
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
    if (mig) {
        if (!FAKE_NVML_FULL[0]) {
            fprintf(stderr, "bench_idle: built without the fake NVML\n");
            return 1;
        }
        snprintf(script, sizeof script, "%s/nvml.script", root);
        snprintf(klogs, sizeof klogs, "%s/gpufl", root);
        if (mig_fixture(script, klogs))
            return 1;
        setenv("FAKE_NVML_SCRIPT", script, 1);
        fprintf(f, "nvml-lib = %s\ngpufl-logs = %s\n", FAKE_NVML_FULL, klogs);
    } else {
        fprintf(f,
                "simulate = none,held,one_thread,matmul,phantom,bursty,train\n"
                "sim-gpus = %d\n",
                NGPU);
    }
    fprintf(f, "interval = %d\nroot = %s\n", ms, root);
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
                i, i, i, 9000 + i, i % ngpu);
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
    /* mig: kernels land in the sessions' logs while the daemon runs */
    for (int t = 0; pid > 0; t++) {
        pid_t r = wait4(pid, &status, mig ? WNOHANG : 0, &ru);
        if (r == pid)
            break;
        if (r != 0) {
            pid = -1;
            break;
        }
        mig_kernels(klogs, t);
        usleep(100000);
    }
    if (pid < 0) {
        fprintf(stderr, "bench_idle: %s failed\n", gpufl);
        return 1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench_idle: %s failed\n", gpufl);
        return 1;
    }
    cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
          (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    rounds = secs * 1000.0 / ms;
    if (mig)
        printf("gpufl idle watch: %d GPUs x %d MIG instances (fake NVML), %d "
               "processes, %d gpufl sessions (%d kernels/s each), %d idle "
               "sessions, %d s at %d ms (%.0f rounds)\n",
               NGPU, NMIG, NPROC, NKSESS, KERN_PER_TICK * 10, NSESS, secs, ms,
               rounds);
    else
        printf("gpufl idle watch: %d simulated GPUs, %d sessions, %d s at %d "
               "ms (%.0f rounds)\n",
               NGPU, NSESS, secs, ms, rounds);
    printf("  CPU total            %.3f s\n", cpu);
    printf("  CPU per round        %.1f us (all GPUs and sessions)\n",
           cpu / rounds * 1e6);
    printf("  CPU per GPU sample   %.1f us (round / %d GPUs%s)\n",
           cpu / rounds / ngpu * 1e6, ngpu, mig ? " or instances" : "");
    printf("  at 1 Hz: %.3f %% of one core (target <= 1 %%)\n",
           cpu / rounds * 100);
    printf("  peak RSS             %.1f MiB\n", ru.ru_maxrss / 1024.0);
    snprintf(buf, sizeof buf, "rm -rf '%s'", root);
    if (system(buf) != 0)
        return 1;
    return 0;
}
