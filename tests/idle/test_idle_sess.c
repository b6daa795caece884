/*
 * test_idle_sess.c - session verdicts (the decision table, timers,
 * hysteresis, warning period, veto) on a fake clock, and session signals
 * read from a fixture tree: /proc/PID/cgroup, /proc/net/tcp{,6}, cgroup
 * v2 cpu.stat, utmp + pty atime, veto files.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>
#include <utmp.h>

#include "common/clock.h"
#include "idle/idle.h"
#include "test.h"

#define T0 1795994980000000000ull
#define S(x) ((uint64_t)(x)*IDLE_NS)
#define GIB (1024ull * 1024 * 1024)

static idle_cfg cfg;

/* one GPU fed a constant sample every second from t0 to t1 */
static void feed(idle_gpu *g, uint64_t t0, uint64_t t1, uint32_t util,
                 uint32_t procs, uint64_t mem, double sm)
{
    for (uint64_t t = t0; t < t1; t += IDLE_NS) {
        gpu_sample s;
        memset(&s, 0, sizeof s);
        s.present = GS_UTIL_GPU | GS_PROCS | GS_MEM;
        s.util_gpu = util;
        s.nprocs = s.nprocs_total = procs;
        if (procs)
            s.procs[0].pid = 4101, s.procs[0].mem = mem;
        s.mem_used = mem;
        s.mem_total = 24 * GIB;
        if (sm >= 0) {
            s.present |= GS_SM_ACTIVE;
            s.sm_active = sm;
        }
        idle_gpu_push(g, &s, t);
    }
    idle_gpu_eval(g, &cfg, t1 - IDLE_NS);
}

typedef struct world {
    idle_gpu g;
    idle_sess s;
} world;

static void world_open(world *w, uint64_t start)
{
    idle_sess_cfg c;
    gpu_device d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "NVIDIA A10G");
    idle_gpu_init(&w->g, &cfg, &d);
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "jupyter-alice");
    c.ndevs = 1;
    c.start_ns = start;
    idle_sess_init(&w->s, &c, start);
    w->s.ndevs = 1;
    w->s.devs[0] = 0;
}

/* Runs [t0, t1) in steps of `step` seconds with the given GPU trace and
 * session signals; returns with the session evaluated at t1 - 1 s. */
static void step(world *w, uint64_t t0, uint64_t t1, uint64_t stepns,
                 uint32_t util, uint32_t procs, uint64_t mem, double sm,
                 int conn, double input_age, double cpu)
{
    for (uint64_t t = t0; t < t1; t += stepns) {
        uint64_t e = t + stepns < t1 ? t + stepns : t1;
        /* only the last window matters for the GPU verdict */
        uint64_t from = e - t > S(cfg.window_s) ? e - S(cfg.window_s) : t;
        feed(&w->g, from, e, util, procs, mem, sm);
        w->s.sig.conn = conn;
        w->s.sig.input_age_s = input_age < 0 ? -1 : input_age;
        w->s.sig.cpu_cores = cpu;
        idle_sess_eval(&w->s, &cfg, &w->g, 1, e - IDLE_NS);
    }
}

static int reason(const idle_sess *s, const char *word)
{
    for (int i = 0; i < s->nreasons; i++)
        if (strstr(s->reasons[i], word))
            return 1;
    return 0;
}

static void dump(const idle_sess *s)
{
    fprintf(stderr, "  %s %s:%s action %s\n", s->c.name,
            idle_sess_state_name(s->state), s->kind,
            idle_action_name(s->action));
    for (int i = 0; i < s->nreasons; i++)
        fprintf(stderr, "    - %s\n", s->reasons[i]);
}

#define EXPECT(w, st, act)                                                     \
    do {                                                                       \
        CHECK((w).s.state == (st) && (w).s.action == (act));                   \
        if ((w).s.state != (st) || (w).s.action != (act))                      \
            dump(&(w).s);                                                      \
    } while (0)

/* a silent training job: GPU busy for hours, no connection, no input */
static void test_silent_training(void)
{
    world w;
    world_open(&w, T0);
    step(&w, T0, T0 + S(6 * 3600), S(600), 97, 1, 20 * GIB, 0.7, 0, -1, 0.1);
    EXPECT(w, IS_ACTIVE, IA_NONE);
    CHECK_STR(w.s.kind, "gpu");
    idle_gpu_release(&w.g);
}

/* an open tab holding 20 GB: connection open, no input for hours */
static void test_idle_tab_held(void)
{
    world w;
    world_open(&w, T0);
    /* user works for 20 min, then leaves the tab open */
    step(&w, T0, T0 + S(600), S(60), 0, 1, 20 * GIB, 0, 1, 10, 0.01);
    EXPECT(w, IS_STARTING, IA_NONE);
    step(&w, T0 + S(600), T0 + S(1800), S(60), 0, 1, 20 * GIB, 0, 1, 10, 0.01);
    EXPECT(w, IS_ACTIVE, IA_NONE);
    CHECK_STR(w.s.kind, "gpu_held");
    /* input stops at 1800; T_idle 60 min later it is HELD_IDLE */
    step(&w, T0 + S(1800), T0 + S(1800 + 3700), S(60), 0, 1, 20 * GIB, 0, 1, -2,
         0.01);
    w.s.sig.input_age_s = 3700;
    idle_sess_eval(&w.s, &cfg, &w.g, 1, T0 + S(5500));
    EXPECT(w, IS_HELD_IDLE, IA_NONE);
    CHECK(reason(&w.s, "idle for"));
    /* T_held (120 min) after the last input: warn, then stop */
    w.s.sig.input_age_s = 7300;
    feed(&w.g, T0 + S(1800 + 7300 - 60), T0 + S(1800 + 7300), 0, 1, 20 * GIB,
         -1);
    idle_sess_eval(&w.s, &cfg, &w.g, 1, T0 + S(1800 + 7300));
    EXPECT(w, IS_HELD_IDLE, IA_WARN);
    CHECK(w.s.deadline == T0 + S(1800 + 7200 + 300));
    w.s.sig.input_age_s = 7600;
    feed(&w.g, T0 + S(1800 + 7600 - 60), T0 + S(1800 + 7600), 0, 1, 20 * GIB,
         -1);
    idle_sess_eval(&w.s, &cfg, &w.g, 1, T0 + S(1800 + 7600));
    EXPECT(w, IS_HELD_IDLE, IA_STOP);
    /* a veto ("keep for 4 h") holds the stop back */
    w.s.veto_until = T0 + S(1800 + 7600 + 4 * 3600);
    idle_sess_eval(&w.s, &cfg, &w.g, 1, T0 + S(1800 + 7600));
    EXPECT(w, IS_HELD_IDLE, IA_VETOED);
    CHECK(reason(&w.s, "vetoed"));
    idle_gpu_release(&w.g);
}

/* a CPU phase with the model resident: nobody attached, CPU busy */
static void test_cpu_phase(void)
{
    world w;
    world_open(&w, T0);
    step(&w, T0, T0 + S(5 * 3600), S(600), 0, 1, 20 * GIB, 0, 0, -1, 1.5);
    EXPECT(w, IS_ACTIVE, IA_NONE);
    CHECK_STR(w.s.kind, "cpu");
    idle_gpu_release(&w.g);
}

/* nothing anywhere: IDLE, warn after T_idle, stop after the warning */
static void test_empty_idle(void)
{
    world w;
    world_open(&w, T0);
    /* the idle clock starts when the 15 min grace ends */
    step(&w, T0, T0 + S(900 + 3600 + 60), S(60), 0, 0, 0, -1, 0, -1, 0.0);
    EXPECT(w, IS_IDLE, IA_WARN);
    CHECK(w.s.deadline == T0 + S(900 + 3600 + 300) ||
          w.s.deadline == T0 + S(900 + 3600 + 300 - 1));
    step(&w, T0 + S(4560), T0 + S(900 + 3600 + 400), S(60), 0, 0, 0, -1, 0, -1,
         0.0);
    EXPECT(w, IS_IDLE, IA_STOP);
    idle_gpu_release(&w.g);
}

/* coding without the GPU: recent input on an EMPTY GPU */
static void test_gpu_unused(void)
{
    world w;
    world_open(&w, T0);
    step(&w, T0, T0 + S(3600), S(60), 0, 0, 0, -1, 1, 30, 0.05);
    EXPECT(w, IS_GPU_UNUSED, IA_NONE);
    step(&w, T0 + S(3600), T0 + S(5 * 3600), S(600), 0, 0, 0, -1, 1, 30, 0.05);
    EXPECT(w, IS_GPU_UNUSED, IA_RELEASE);
    idle_gpu_release(&w.g);
}

/* hysteresis: from ACTIVE, an idle verdict must hold hyst_s first */
static void test_hysteresis(void)
{
    world w;
    world_open(&w, T0);
    step(&w, T0, T0 + S(1800), S(60), 97, 1, GIB, 0.8, 0, -1, 0);
    EXPECT(w, IS_ACTIVE, IA_NONE);
    /* the job ends: GPU empty from 1800 on */
    step(&w, T0 + S(1800), T0 + S(1800 + 70), S(1), 0, 0, 0, -1, 0, -1, 0);
    /* 70 s later the window (60 s) is empty but hysteresis still holds */
    CHECK(w.s.state == IS_ACTIVE);
    CHECK(reason(&w.s, "hysteresis"));
    step(&w, T0 + S(1870), T0 + S(1800 + 200), S(10), 0, 0, 0, -1, 0, -1, 0);
    EXPECT(w, IS_IDLE, IA_NONE);
    idle_gpu_release(&w.g);
}

/* UNKNOWN never stops; PHANTOM is not work */
static void test_unknown_phantom(void)
{
    world w;
    world_open(&w, T0);
    step(&w, T0, T0 + S(5 * 3600), S(600), 0, 0, 0, -1, 0, -1, 0);
    EXPECT(w, IS_IDLE, IA_STOP);
    /* the GPU's reads fail: UNKNOWN, alert, no stop */
    for (int i = 0; i < 60; i++)
        idle_gpu_push(&w.g, NULL, T0 + S(5 * 3600 + i));
    idle_gpu_eval(&w.g, &cfg, T0 + S(5 * 3600 + 59));
    idle_sess_eval(&w.s, &cfg, &w.g, 1, T0 + S(5 * 3600 + 59));
    EXPECT(w, IS_UNKNOWN, IA_ALERT);
    idle_gpu_release(&w.g);

    /* phantom (100 % util, no process, no memory) with an idle session */
    world_open(&w, T0);
    step(&w, T0, T0 + S(5 * 3600), S(600), 100, 0, 0, -1, 0, -1, 0);
    CHECK(w.g.state == IG_PHANTOM);
    EXPECT(w, IS_IDLE, IA_STOP);
    CHECK(w.s.phantom_alert);
    CHECK(reason(&w.s, "GPU_PHANTOM"));
    idle_gpu_release(&w.g);
    /* ... and with an active user: kept, with the alert */
    world_open(&w, T0);
    step(&w, T0, T0 + S(5 * 3600), S(600), 100, 0, 0, -1, 1, 20, 0);
    EXPECT(w, IS_ACTIVE, IA_ALERT);
    idle_gpu_release(&w.g);
}

/* low occupancy with nobody attached: kept, owner notified after 4 T_idle */
static void test_low_occ_unattended(void)
{
    world w;
    world_open(&w, T0);
    step(&w, T0, T0 + S(6 * 3600), S(600), 100, 1, 302 << 20, 0.012, 0, -1, 0);
    CHECK(w.g.state == IG_BUSY_LOW_OCC);
    EXPECT(w, IS_ACTIVE, IA_NOTIFY);
    CHECK_STR(w.s.kind, "low_occupancy_unattended");
    idle_gpu_release(&w.g);
}

/* a hung collective: utilisation pinned, SM activity ~0, nobody attached.
 * Not idle (never warned or stopped by the timers), not plain low
 * occupancy: ACTIVE "stuck" with an alert once the GPU is STUCK. */
static void test_stuck(void)
{
    world w;
    world_open(&w, T0);
    step(&w, T0, T0 + S(1200), S(600), 100, 1, 2 * GIB, 0.001, 0, -1, 0.01);
    CHECK(w.g.state == IG_STUCK);
    step(&w, T0 + S(1200), T0 + S(6 * 3600), S(600), 100, 1, 2 * GIB, 0.001, 0,
         -1, 0.01);
    CHECK(w.g.state == IG_STUCK);
    EXPECT(w, IS_ACTIVE, IA_ALERT);
    CHECK_STR(w.s.kind, "stuck");
    CHECK(reason(&w.s, "STUCK"));
    idle_gpu_release(&w.g);
}

static void test_max_age(void)
{
    world w;
    cfg.max_age_s = 24 * 3600;
    world_open(&w, T0);
    step(&w, T0, T0 + S(25 * 3600), S(3600), 97, 1, GIB, 0.8, 0, -1, 0);
    EXPECT(w, IS_MAX_AGE, IA_STOP);
    cfg.max_age_s = 7ull * 24 * 3600;
    idle_gpu_release(&w.g);
}

/* ---- fixture tree ---- */

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

static void test_fixture_signals(void)
{
    const char *pod = "/kubepods.slice/kubepods-burstable.slice/"
                      "kubepods-burstable-pod1234abcd_5678_90ef.slice/"
                      "cri-containerd-0123456789abcdef0123.scope";
    char cg[300], line[600], path[1024];
    idle_env e = { root, NULL, NULL };
    idle_sess_cfg c;
    uint64_t usec = 0, now = clock_real_ns();
    struct utmp u;
    struct timeval tv[2];
    int fd;

    snprintf(root, sizeof root, "%s/idle_root_%d",
             getenv("GPUFL_TEST_TMP") ? getenv("GPUFL_TEST_TMP") : "/tmp",
             (int)getpid());
    mkdir(root, 0755);
    snprintf(line, sizeof line, "0::%s\n", pod);
    put("/proc/4101/cgroup", line);
    put("/proc/77/cgroup", "12:cpu:/legacy\n");
    put("/proc/net/tcp",
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when "
        "retrnsmt   uid  timeout inode\n"
        "   0: 0100007F:22B8 0100007F:D2F4 01 00000000:00000000 00:00000000 "
        "00000000  1000        0 1 1 0000000000000000 20 4 30 10 -1\n"
        "   1: 00000000:22B8 00000000:0000 0A 00000000:00000000 00:00000000 "
        "00000000  1000        0 2 1 0000000000000000 100 0 0 10 0\n"
        "   2: 0100007F:0016 0100007F:D2F5 01 00000000:00000000 00:00000000 "
        "00000000     0        0 3 1 0000000000000000 20 4 30 10 -1\n");
    put("/proc/net/tcp6",
        "  sl  local_address                         remote_address        "
        "                st\n"
        "   0: 00000000000000000000000001000000:22B8 "
        "00000000000000000000000001000000:C001 01 0:0 0:0 0 0 0 9\n");
    snprintf(path, sizeof path, "/sys/fs/cgroup%s/cpu.stat", pod);
    put(path, "usage_usec 1000000\nuser_usec 900000\nsystem_usec 100000\n");
    /* the pod's slice: the session's cgroup in the collect test below */
    snprintf(path, sizeof path, "/sys/fs/cgroup%.*s/cpu.stat",
             (int)(strrchr(pod, '/') - pod), pod);
    put(path, "usage_usec 1000000\n");
    put("/dev/pts/7", "");
    put("/var/run/utmp", "");

    CHECK(idle_proc_cgroup(&e, 4101, cg, sizeof cg) == 0);
    CHECK_STR(cg, pod);
    CHECK(idle_proc_cgroup(&e, 77, cg, sizeof cg) != 0); /* v1 only */
    CHECK(idle_proc_cgroup(&e, 9, cg, sizeof cg) != 0);
    CHECK(idle_sess_from_cgroup(pod, &c) == 0);
    CHECK_STR(c.name, "pod-1234abcd-5678-90ef");
    CHECK_STR(c.container, "0123456789ab");
    CHECK(strstr(pod, c.cgroup) == pod && !strstr(c.cgroup, "cri-"));
    CHECK(idle_sess_from_cgroup("/user.slice/user-1000.slice/session-3.scope",
                                &c) == 0);
    CHECK_STR(c.name, "user-1000");
    CHECK_STR(c.cgroup, "/user.slice/user-1000.slice");
    {
        uint16_t ports[2] = { 8888, 22 };
        CHECK(idle_tcp_count(&e, 0, ports, 1) == 2); /* v4 + v6, not LISTEN */
        CHECK(idle_tcp_count(&e, 0, ports + 1, 1) == 1);
        CHECK(idle_tcp_count(&e, 4101, ports, 1) == -1); /* no netns file */
    }
    CHECK(idle_cgroup_cpu(&e, pod, &usec) == 0 && usec == 1000000);

    /* utmp: alice on pts/7, input 120 s ago (pty atime) */
    memset(&u, 0, sizeof u);
    u.ut_type = USER_PROCESS;
    snprintf(u.ut_user, sizeof u.ut_user, "alice");
    memcpy(u.ut_line, "pts/7", 5);
    snprintf(path, sizeof path, "%s/var/run/utmp", root);
    fd = open(path, O_WRONLY | O_TRUNC);
    REQUIRE(fd >= 0);
    CHECK(write(fd, &u, sizeof u) == (ssize_t)sizeof u);
    close(fd);
    snprintf(path, sizeof path, "%s/dev/pts/7", root);
    tv[0].tv_sec = (time_t)(now / IDLE_NS) - 120;
    tv[0].tv_usec = 0;
    tv[1] = tv[0];
    CHECK(utimes(path, tv) == 0);
    {
        double a = idle_tty_age(&e, "alice", NULL, now);
        CHECK(a > 119 && a < 122);
        CHECK(idle_tty_age(&e, "bob", NULL, now) < 0);
    }

    /* a whole session collected: attribution, connections, CPU rate */
    {
        idle_gpu g;
        idle_sess s;
        idle_sess_cfg sc;
        gpu_device d;
        memset(&d, 0, sizeof d);
        idle_gpu_init(&g, &cfg, &d);
        g.last.nprocs = g.last.nprocs_total = 2;
        g.last.procs[0].pid = 4101;
        g.last.procs[1].pid = 5000; /* another container: not ours */
        memset(&sc, 0, sizeof sc);
        snprintf(sc.name, sizeof sc.name, "alice");
        snprintf(sc.cgroup, sizeof sc.cgroup, "%s",
                 "/kubepods.slice/kubepods-burstable.slice/"
                 "kubepods-burstable-pod1234abcd_5678_90ef.slice");
        snprintf(sc.user, sizeof sc.user, "alice");
        sc.ports[0] = 8888;
        sc.nports = 1;
        idle_sess_init(&s, &sc, now);
        idle_sess_collect(&e, &s, &g, 1, now);
        CHECK(s.ndevs == 1 && s.devs[0] == 0);
        CHECK(s.sig.gpu_procs == 1);
        CHECK(s.sig.conn == 2);
        CHECK(s.sig.input_age_s > 119);
        CHECK(s.sig.cpu_cores < 0); /* one reading: no rate yet */
        snprintf(path, sizeof path, "/sys/fs/cgroup%s/cpu.stat", sc.cgroup);
        put(path, "usage_usec 4000000\n"); /* +3 s of CPU in 2 s */
        idle_sess_collect(&e, &s, &g, 1, now + S(2));
        CHECK(s.sig.cpu_cores > 1.49 && s.sig.cpu_cores < 1.51);
        /* veto file */
        snprintf(path, sizeof path, "%s/veto", root);
        mkdir(path, 0755);
        e.veto_dir = path;
        CHECK(idle_veto_write(path, "alice", now + S(4 * 3600)) == 0);
        idle_sess_collect(&e, &s, &g, 1, now + S(3));
        CHECK(s.veto_until / IDLE_NS == (now + S(4 * 3600)) / IDLE_NS);
        idle_gpu_release(&g);
    }
    {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        CHECK(system(cmd) == 0);
    }
}

static void test_iso(void)
{
    CHECK(idle_iso_ns("2026-11-30T01:02:03.500000Z") ==
          1796000523ull * IDLE_NS + 500000000ull);
    CHECK(idle_iso_ns("2026-11-30T01:02:03+00:00") == 1796000523ull * IDLE_NS);
    CHECK(idle_iso_ns("yesterday") == 0);
    CHECK(idle_iso_ns("2026-11-30T01:02:03+02:00") == 0);
}

int main(void)
{
    idle_cfg_init(&cfg);
    RUN(test_silent_training);
    RUN(test_idle_tab_held);
    RUN(test_cpu_phase);
    RUN(test_empty_idle);
    RUN(test_gpu_unused);
    RUN(test_hysteresis);
    RUN(test_unknown_phantom);
    RUN(test_low_occ_unattended);
    RUN(test_stuck);
    RUN(test_max_age);
    RUN(test_fixture_signals);
    RUN(test_iso);
    TEST_DONE();
}
