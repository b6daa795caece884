/*
 * prog_ring.c - a program for the flight recorder's tests
 * (tests/client/test_recorder.py), linked with the shared libgpufl.
 * Options come from the GPUFL_* environment; the arguments are steps,
 * run in order:
 *
 *   work:MS        every millisecond for MS ms: a scope "step" around one
 *                  kernel (gpufl_record_kernel, corr = a counter that
 *                  grows over the whole run, name "kern_<corr % 3>") and a
 *                  marker "m<corr>"
 *   once:NAME      one kernel named NAME (a name used nowhere else)
 *   burst:N        N kernels as fast as they go (no scope, no marker)
 *   scope:NAME:MS  a scope NAME that lasts MS ms
 *   sleep:MS       sleep
 *   usr2           send ourselves SIGUSR2
 *   flush          gpufl_flush(5000)
 *   mark:TEXT      a marker
 *   segv | abort   crash
 *   exit:N         exit(N) (the session still running)
 *   shutdown       gpufl_shutdown()
 *   pid            print our pid (and flush stdout)
 *   wait:PATH      wait (at most 30 s) until PATH exists (the test's cue)
 *
 * At the end it prints "corr N" (the last correlation id used) and
 * returns 0.
 */
#include <gpufl/gpufl.h>
#include <gpufl/record.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint32_t corr;
static uint32_t names[3];
/* the address a segv step writes to: 8, hidden from the compiler */
static volatile uintptr_t bad_addr = 8;

static void sleep_ms(unsigned long ms)
{
    struct timespec t = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
}

static uint64_t mono_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static void kernel(uint32_t name)
{
    gpufl_kernel k;
    uint64_t now = gpufl_now_ns();
    memset(&k, 0, sizeof k);
    k.sz = sizeof k;
    k.name_id = name;
    k.corr = ++corr;
    k.stream = 7;
    k.grid[0] = k.grid[1] = k.grid[2] = 1;
    k.block[0] = 64;
    k.block[1] = k.block[2] = 1;
    k.regs = 32;
    k.start_ns = now;
    k.end_ns = now + 1000;
    gpufl_record_kernel(&k);
}

static void work(unsigned long ms)
{
    uint64_t end = mono_ms() + ms;
    while (mono_ms() < end) {
        char m[32];
        GFL_SCOPE("step")
        {
            kernel(names[(corr + 1) % 3]);
            snprintf(m, sizeof m, "m%u", corr);
            gpufl_marker(m);
        }
        sleep_ms(1);
    }
}

int main(int argc, char **argv)
{
    int rc = gpufl_init(NULL);
    if (rc) {
        fprintf(stderr, "prog_ring: gpufl_init: %s: %s\n", gpufl_strerror(rc),
                gpufl_last_error());
        return 1;
    }
    for (int i = 0; i < 3; i++) {
        char n[16];
        snprintf(n, sizeof n, "kern_%d", i);
        names[i] = gpufl_intern(n);
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strncmp(a, "work:", 5)) {
            work(strtoul(a + 5, NULL, 10));
        } else if (!strncmp(a, "burst:", 6)) {
            for (unsigned long n = strtoul(a + 6, NULL, 10); n; n--)
                kernel(names[corr % 3]);
        } else if (!strncmp(a, "once:", 5)) {
            kernel(gpufl_intern(a + 5));
        } else if (!strncmp(a, "scope:", 6)) {
            char name[64];
            const char *c = strchr(a + 6, ':');
            size_t n = c ? (size_t)(c - (a + 6)) : 0;
            uint64_t tok;
            if (!c || n >= sizeof name)
                return 2;
            memcpy(name, a + 6, n);
            name[n] = 0;
            tok = gpufl_scope_begin(name);
            sleep_ms(strtoul(c + 1, NULL, 10));
            gpufl_scope_end(tok);
        } else if (!strncmp(a, "sleep:", 6)) {
            sleep_ms(strtoul(a + 6, NULL, 10));
        } else if (!strcmp(a, "usr2")) {
            kill(getpid(), SIGUSR2);
        } else if (!strcmp(a, "flush")) {
            gpufl_flush(5000);
        } else if (!strncmp(a, "mark:", 5)) {
            gpufl_marker(a + 5);
        } else if (!strcmp(a, "segv")) {
            fflush(stdout);
            *(volatile int *)bad_addr = 1;
        } else if (!strcmp(a, "abort")) {
            fflush(stdout);
            abort();
        } else if (!strncmp(a, "exit:", 5)) {
            printf("corr %u\n", corr);
            fflush(stdout);
            exit((int)strtol(a + 5, NULL, 10));
        } else if (!strcmp(a, "shutdown")) {
            gpufl_shutdown();
        } else if (!strcmp(a, "pid")) {
            printf("pid %d\n", (int)getpid());
            fflush(stdout);
        } else if (!strncmp(a, "wait:", 5)) {
            for (int t = 0; t < 3000 && access(a + 5, F_OK) != 0; t++)
                sleep_ms(10);
        } else {
            fprintf(stderr, "prog_ring: unknown step %s\n", a);
            return 2;
        }
    }
    printf("corr %u\n", corr);
    return 0;
}
