/*
 * cli_demo_gpu.c - what `gpufl demo` needs to run real CUDA work: whether
 * the driver sees a GPU, and the demo's CUDA program built with nvcc.
 *
 * The driver is asked in a child process: a broken driver may crash or
 * hang in cuInit, and the demo must then only say so and go on with the
 * simulated GPU.  The program is built at demo time, not by CMake, so the
 * build needs no CUDA toolkit on machines without a GPU.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_demo_gpu.h"

#define GPU_PATH 4096
#define GPU_MAX_FLAGS 16
#define GPU_PROBE_MS 15000 /* cuInit on a big machine takes seconds */
#define GPU_BUILD_MS 300000

/* Waits up to ms for pid; kills it after.  The wait status, or -1. */
static int wait_ms(pid_t pid, int ms)
{
    int st;
    for (int waited = 0;; waited += 50) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        if (r < 0 && errno != EINTR)
            return -1;
        if (waited >= ms) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        usleep(50000);
    }
}

/* The child: exit status = device count (capped), or 100 + why. */
static void probe_child(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    int (*init)(unsigned), (*count)(int *), n = 0, rc;
    if (!h)
        _exit(101);
    *(void **)&init = dlsym(h, "cuInit");
    *(void **)&count = dlsym(h, "cuDeviceGetCount");
    if (!init || !count)
        _exit(102);
    rc = init(0);
    if (rc == 100) /* CUDA_ERROR_NO_DEVICE */
        _exit(0);
    if (rc)
        _exit(103);
    if (count(&n) || n < 0)
        _exit(104);
    _exit(n > 99 ? 99 : n);
}

int demo_gpu_count(char *why, size_t cap)
{
    pid_t pid = fork();
    int st, code;
    if (pid < 0) {
        snprintf(why, cap, "cannot fork: %s", strerror(errno));
        return 0;
    }
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) { /* a driver's own complaints are not ours */
            dup2(fd, 1);
            dup2(fd, 2);
        }
        probe_child();
    }
    st = wait_ms(pid, GPU_PROBE_MS);
    if (st < 0 || !WIFEXITED(st)) {
        snprintf(why, cap, "the driver's cuInit %s",
                 st < 0 ? "hung" : "crashed");
        return 0;
    }
    code = WEXITSTATUS(st);
    switch (code) {
    case 0: snprintf(why, cap, "the driver reports no CUDA device"); return 0;
    case 101:
        snprintf(why, cap, "no NVIDIA driver (libcuda.so.1 not found)");
        return 0;
    case 102:
        snprintf(why, cap, "libcuda.so.1 lacks cuInit/cuDeviceGetCount");
        return 0;
    case 103:
        snprintf(why, cap, "cuInit failed (driver/device mismatch?)");
        return 0;
    case 104: snprintf(why, cap, "cuDeviceGetCount failed"); return 0;
    default: return code < 100 ? code : 0;
    }
}

/* The demo program's source: the source tree (bin = build/bin or
 * build/asan/bin) or an install's share/gpufl. */
static int find_source(const char *bin, char *out, size_t cap)
{
    static const char *const rel[] = {
        "../../examples/cuda/demo_cuda.cu",
        "../../../examples/cuda/demo_cuda.cu",
        "../share/gpufl/examples/cuda/demo_cuda.cu",
    };
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        if ((size_t)snprintf(out, cap, "%s/%s", bin, rel[i]) < cap &&
            access(out, R_OK) == 0)
            return 0;
    }
    return -1;
}

/* nvcc: $NVCC, then PATH, then the toolkit's default place. */
static int find_nvcc(char *out, size_t cap)
{
    const char *env = getenv("NVCC"), *path = getenv("PATH");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return access(out, X_OK);
    }
    while (path && *path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        if (len &&
            (size_t)snprintf(out, cap, "%.*s/nvcc", (int)len, path) < cap &&
            access(out, X_OK) == 0)
            return 0;
        path = colon ? colon + 1 : NULL;
    }
    snprintf(out, cap, "/usr/local/cuda/bin/nvcc");
    return access(out, X_OK);
}

/* 1 when exe is newer than src and was built with flags (stamp file). */
static int up_to_date(const char *exe, const char *src, const char *stamp,
                      const char *flags)
{
    struct stat se, ss;
    char buf[512] = "";
    FILE *f;
    size_t n;
    if (stat(exe, &se) || stat(src, &ss) || se.st_mtime < ss.st_mtime)
        return 0;
    if (!(f = fopen(stamp, "r")))
        return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return !strcmp(buf, flags);
}

int demo_gpu_build(const char *bin, const char *outdir, const char *log,
                   char *exe, size_t cap, char *why, size_t wcap)
{
    char src[GPU_PATH + 64], nvcc[GPU_PATH], stamp[GPU_PATH + 32];
    char flags[512], *argv[8 + GPU_MAX_FLAGS], *tok, *save = NULL;
    const char *extra = getenv("GPUFL_DEMO_NVCC_FLAGS");
    int n = 0, st;
    pid_t pid;
    FILE *f;

    if (find_source(bin, src, sizeof src)) {
        snprintf(why, wcap, "examples/cuda/demo_cuda.cu not found beside %s",
                 bin);
        return -1;
    }
    if (find_nvcc(nvcc, sizeof nvcc)) {
        snprintf(why, wcap,
                 "nvcc not found (install the CUDA toolkit or set NVCC)");
        return -1;
    }
    if ((size_t)snprintf(exe, cap, "%s/demo_cuda", outdir) >= cap ||
        (size_t)snprintf(stamp, sizeof stamp, "%s/demo_cuda.flags", outdir) >=
            sizeof stamp) {
        snprintf(why, wcap, "folder name too long: %s", outdir);
        return -1;
    }
    snprintf(flags, sizeof flags, "%s", extra ? extra : "");
    if (up_to_date(exe, src, stamp, flags))
        return 0;
    argv[n++] = nvcc;
    argv[n++] = "-O2";
    argv[n++] = "-lineinfo"; /* source lines for the profiling engines */
    argv[n++] = "-o";
    argv[n++] = exe;
    argv[n++] = src;
    for (tok = strtok_r(flags, " ", &save); tok && n < 6 + GPU_MAX_FLAGS;
         tok = strtok_r(NULL, " ", &save))
        argv[n++] = tok;
    argv[n] = NULL;
    pid = fork();
    if (pid < 0) {
        snprintf(why, wcap, "cannot fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(nvcc, argv);
        _exit(127);
    }
    st = wait_ms(pid, GPU_BUILD_MS);
    if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
        snprintf(why, wcap, "nvcc failed (see %s)", log);
        return -1;
    }
    /* the stamp holds the flags as given (strtok_r cut the copy) */
    if ((f = fopen(stamp, "w"))) {
        fputs(extra ? extra : "", f);
        fclose(f);
    }
    return 0;
}
