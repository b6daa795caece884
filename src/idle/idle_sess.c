/*
 * idle_sess.c - session signals from the host: which container a GPU
 * process belongs to (/proc/PID/cgroup), interactive connections
 * (/proc/net/tcp, tcp6), input age on ttys (utmp + the pty's atime, as
 * w(1) computes idle time), container CPU (cgroup v2 cpu.stat), and the
 * veto files.  Every path is under idle_env.root, so tests use fixture
 * trees.
 *
 * Note on ptys: Linux updates a tty's atime on input at most every 8 s,
 * so input ages below 8 s read as up to 8 s.
 */
#include "idle.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utmp.h>

#include "common/clock.h"

#include <gpufl/gpufl.h>

#include "common/clock.h"

#define LINE_CAP 512

static void path_of(const idle_env *e, char *out, size_t cap, const char *rel)
{
    snprintf(out, cap, "%s%s", e->root ? e->root : "", rel);
}

static int proc_cgroup_read(const idle_env *e, uint32_t pid, char *out,
                            size_t cap)
{
    char rel[64], path[1024], line[LINE_CAP];
    FILE *f;
    int rc = GPUFL_ENOTFOUND;
    snprintf(rel, sizeof rel, "/proc/%u/cgroup", pid);
    path_of(e, path, sizeof path, rel);
    f = fopen(path, "r");
    if (!f)
        return GPUFL_ENOTFOUND; /* no such process */
    rc = GPUFL_EUNAVAIL;        /* a process, but no cgroup v2 line */
    while (fgets(line, sizeof line, f)) {
        /* cgroup v2: "0::/path"; v1 lines have a controller list */
        if (strncmp(line, "0::", 3) == 0) {
            line[strcspn(line, "\n")] = 0;
            snprintf(out, cap, "%s", line + 3);
            rc = 0;
            break;
        }
    }
    fclose(f);
    return rc;
}

/* ---- the process -> cgroup cache ----
 * Every session asks for the cgroup of every GPU process each round:
 * 50 sessions x 500 processes is 25,000 file reads a second.  An answer
 * is kept IDLE_CG_TTL_NS (a process seldom changes cgroup; a PID reused
 * within that time is the error this accepts), in an open-addressed table
 * of IDLE_CG_SLOTS entries; a full probe run evicts the oldest it met. */
#define IDLE_CG_SLOTS 4096
#define IDLE_CG_PROBE 8
#define IDLE_CG_TTL_NS (5 * IDLE_NS)

typedef struct cg_entry {
    uint32_t pid;
    int rc;
    uint64_t ts; /* 0 = free */
    char cg[256];
} cg_entry;

struct idle_cgcache {
    uint64_t now; /* idle_cgcache_tick: the round's time, one clock read */
    cg_entry e[IDLE_CG_SLOTS];
};

void idle_cgcache_tick(idle_cgcache *c, uint64_t now)
{
    if (c)
        c->now = now;
}

int idle_cgcache_new(idle_cgcache **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? 0 : GPUFL_ENOMEM;
}

void idle_cgcache_free(idle_cgcache *c)
{
    free(c);
}

/* The cached answer for pid (read now when absent or older than the
 * TTL): *cg points into the cache, valid until the next lookup. */
static int proc_cgroup_ref(const idle_env *e, uint32_t pid, const char **cg)
{
    cg_entry *victim = NULL;
    uint64_t now = e->cgcache->now ? e->cgcache->now : clock_mono_ns();
    for (uint32_t i = 0; i < IDLE_CG_PROBE; i++) {
        cg_entry *x = &e->cgcache->e[(pid * 2654435761u + i) % IDLE_CG_SLOTS];
        if (x->ts && x->pid == pid && now - x->ts < IDLE_CG_TTL_NS) {
            *cg = x->cg;
            return x->rc;
        }
        /* a free slot first, else the oldest */
        if (!victim || (victim->ts && (!x->ts || x->ts < victim->ts)))
            victim = x;
    }
    victim->pid = pid;
    victim->ts = now;
    victim->rc = proc_cgroup_read(e, pid, victim->cg, sizeof victim->cg);
    *cg = victim->cg;
    return victim->rc;
}

int idle_proc_cgroup(const idle_env *e, uint32_t pid, char *out, size_t cap)
{
    const char *cg;
    int rc;
    if (!e->cgcache)
        return proc_cgroup_read(e, pid, out, cap);
    rc = proc_cgroup_ref(e, pid, &cg);
    if (!rc)
        snprintf(out, cap, "%s", cg);
    return rc;
}

int idle_tcp_parse(const char *buf, size_t len, const uint16_t *ports,
                   int nports)
{
    char line[LINE_CAP];
    size_t pos = 0;
    int n = 0, first = 1;
    while (pos < len) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t ll = nl ? (size_t)(nl - (buf + pos)) : len - pos;
        /* "  0: 0100007F:22B8 0100007F:D2F4 01 ..." */
        char *colon, *loc, *port_s, *rem, *st;
        unsigned long port, state;
        size_t cp = ll < sizeof line - 1 ? ll : sizeof line - 1;
        memcpy(line, buf + pos, cp);
        line[cp] = 0;
        pos += ll + (nl != NULL);
        if (first) { /* header */
            first = 0;
            continue;
        }
        colon = strchr(line, ':');
        if (!colon)
            continue;
        loc = colon + 1;
        while (*loc == ' ')
            loc++;
        port_s = strchr(loc, ':');
        if (!port_s)
            continue;
        port = strtoul(port_s + 1, &rem, 16);
        while (*rem == ' ')
            rem++;
        st = strchr(rem, ' ');
        if (!st)
            continue;
        state = strtoul(st + 1, NULL, 16);
        if (state != 1) /* TCP_ESTABLISHED */
            continue;
        for (int i = 0; i < nports; i++)
            if (ports[i] == port)
                n++;
    }
    return n;
}

/* /proc/net/tcp is generated on read; 1 MiB holds ~6,000 sockets, more
 * are not counted. */
#define TCP_FILE_CAP (1u << 20)

static int tcp_file(const char *path, const uint16_t *ports, int nports)
{
    char stack[16384], *buf = stack, *big = NULL;
    size_t len = 0, cap = sizeof stack;
    ssize_t r;
    int fd = open(path, O_RDONLY | O_CLOEXEC), n;
    if (fd < 0)
        return -1;
    /* most tables fit the stack buffer; larger ones grow to the cap */
    for (;;) {
        if (len == cap) {
            char *nb;
            if (cap >= TCP_FILE_CAP)
                break;
            cap *= 4;
            nb = realloc(big, cap);
            if (!nb)
                break;
            if (!big)
                memcpy(nb, stack, len);
            big = buf = nb;
        }
        r = read(fd, buf + len, cap - len);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    n = idle_tcp_parse(buf, len, ports, nports);
    free(big);
    return n;
}

int idle_tcp_count(const idle_env *e, uint32_t netns_pid, const uint16_t *ports,
                   int nports)
{
    char rel[64], path[1024];
    int a, b;
    if (netns_pid)
        snprintf(rel, sizeof rel, "/proc/%u/net/tcp", netns_pid);
    else
        snprintf(rel, sizeof rel, "/proc/net/tcp");
    path_of(e, path, sizeof path, rel);
    a = tcp_file(path, ports, nports);
    snprintf(path + strlen(path), sizeof path - strlen(path), "6");
    b = tcp_file(path, ports, nports);
    if (a < 0 && b < 0)
        return -1;
    return (a > 0 ? a : 0) + (b > 0 ? b : 0);
}

static double atime_age(const char *path, uint64_t now)
{
    struct stat st;
    uint64_t t;
    if (stat(path, &st) != 0)
        return -1;
    t = (uint64_t)st.st_atim.tv_sec * IDLE_NS + (uint64_t)st.st_atim.tv_nsec;
    return t >= now ? 0 : (double)(now - t) / 1e9;
}

double idle_tty_age(const idle_env *e, const char *user, const char *tty,
                    uint64_t now)
{
    double best = -1;
    if (tty && *tty)
        best = atime_age(tty, now);
    if (user && *user) {
        char path[1024], dev[1024];
        int fd;
        if (e->utmp && *e->utmp)
            snprintf(path, sizeof path, "%s", e->utmp);
        else
            path_of(e, path, sizeof path, "/var/run/utmp");
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return best;
        /* utmp is read in blocks: one read per entry costs a syscall
         * per login per session every round */
        for (;;) {
            struct utmp blk[32];
            ssize_t r = read(fd, blk, sizeof blk);
            if (r < (ssize_t)sizeof blk[0])
                break;
            for (size_t k = 0; k < (size_t)r / sizeof blk[0]; k++) {
                const struct utmp *u = &blk[k];
                char who[sizeof u->ut_user + 1], line[sizeof u->ut_line + 1];
                double a;
                if (u->ut_type != USER_PROCESS)
                    continue;
                memcpy(who, u->ut_user, sizeof u->ut_user);
                who[sizeof u->ut_user] = 0;
                memcpy(line, u->ut_line, sizeof u->ut_line);
                line[sizeof u->ut_line] = 0;
                if (strcmp(who, user) != 0 || strchr(line, '.') || line[0] == 0)
                    continue;
                snprintf(dev, sizeof dev, "%s/dev/%s", e->root ? e->root : "",
                         line);
                a = atime_age(dev, now);
                if (a >= 0 && (best < 0 || a < best))
                    best = a;
            }
        }
        close(fd);
    }
    return best;
}

int idle_cgroup_cpu(const idle_env *e, const char *cgroup, uint64_t *usec)
{
    char rel[400], path[1024], line[LINE_CAP];
    FILE *f;
    snprintf(rel, sizeof rel, "/sys/fs/cgroup%s/cpu.stat", cgroup);
    path_of(e, path, sizeof path, rel);
    f = fopen(path, "r");
    if (!f)
        return GPUFL_ENOTFOUND;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "usage_usec ", 11) == 0) {
            *usec = strtoull(line + 11, NULL, 10);
            fclose(f);
            return 0;
        }
    }
    fclose(f);
    return GPUFL_EPARSE;
}

static int cgroup_under(const char *cg, const char *base)
{
    size_t n = strlen(base);
    if (n == 0)
        return 0;
    if (strncmp(cg, base, n) != 0)
        return 0;
    return cg[n] == 0 || cg[n] == '/' || base[n - 1] == '/';
}

void idle_sess_collect(const idle_env *e, idle_sess *s, const idle_gpu *gpus,
                       int ngpus, uint64_t now)
{
    idle_ssig *q = &s->sig;
    uint32_t some_pid = 0;
    char cg[300];

    q->unknown = 0;
    q->why[0] = 0;
    q->gpu_procs = 0;
    q->conn = -1;
    q->input_age_s = -1;
    q->kernel_busy = -1;
    /* GPUs and processes: attribute by cgroup */
    if (s->c.ndevs) {
        memcpy(s->devs, s->c.devs, sizeof s->devs);
        s->ndevs = s->c.ndevs;
    } else {
        s->ndevs = 0;
    }
    if (s->c.cgroup[0]) {
        for (int g = 0; g < ngpus; g++) {
            const gpu_sample *x = &gpus[g].last;
            int mine = 0;
            for (uint32_t i = 0; i < x->nprocs; i++) {
                const char *pc = cg;
                int rc = e->cgcache ? proc_cgroup_ref(e, x->procs[i].pid, &pc)
                                    : idle_proc_cgroup(e, x->procs[i].pid, cg,
                                                       sizeof cg);
                if (rc || !cgroup_under(pc, s->c.cgroup))
                    continue;
                mine++;
                if (!some_pid)
                    some_pid = x->procs[i].pid;
            }
            q->gpu_procs += mine;
            if (mine && !s->c.ndevs && s->ndevs < IDLE_MAX_GPUS)
                s->devs[s->ndevs++] = g;
        }
    }
    /* connections: in the network namespace of one of its processes */
    if (s->c.nports) {
        int c = idle_tcp_count(e, some_pid, s->c.ports, s->c.nports);
        if (c < 0 && some_pid)
            c = idle_tcp_count(e, 0, s->c.ports, s->c.nports);
        q->conn = c;
    }
    if (s->c.user[0] || s->c.tty[0]) {
        q->input_age_s = idle_tty_age(e, s->c.user, s->c.tty, now);
    }
    if (s->c.cgroup[0]) {
        uint64_t usec;
        if (idle_cgroup_cpu(e, s->c.cgroup, &usec) == 0) {
            if (q->cpu_ts && now > q->cpu_ts && usec >= q->cpu_usec)
                q->cpu_cores = (double)(usec - q->cpu_usec) * 1000.0 /
                               (double)(now - q->cpu_ts);
            q->cpu_usec = usec;
            q->cpu_ts = now;
        } else {
            q->cpu_cores = -1;
        }
    }
    if (s->c.jupyter[0]) {
        idle_jupyter j;
        char why[96];
        if (idle_jupyter_get(s->c.jupyter, s->c.token, e->ca_file, &j, why,
                             sizeof why)) {
            q->unknown = 1;
            snprintf(q->why, sizeof q->why, "Jupyter API: %s", why);
        } else {
            double age = j.last_activity_ns
                             ? (j.last_activity_ns >= now
                                    ? 0
                                    : (double)(now - j.last_activity_ns) / 1e9)
                             : -1;
            if (j.connections >= 0)
                q->conn = (q->conn > 0 ? q->conn : 0) + j.connections;
            q->kernel_busy = j.busy > 0;
            if (age >= 0 && (q->input_age_s < 0 || age < q->input_age_s))
                q->input_age_s = age;
        }
    }
    s->veto_until = idle_veto_read(e, s->c.name);
}

uint64_t idle_veto_read(const idle_env *e, const char *session)
{
    char path[1024], buf[64];
    FILE *f;
    uint64_t v = 0;
    if (!e->veto_dir || !*e->veto_dir)
        return 0;
    snprintf(path, sizeof path, "%s/%s.keep", e->veto_dir, session);
    f = fopen(path, "r");
    if (!f)
        return 0;
    if (fgets(buf, sizeof buf, f))
        v = strtoull(buf, NULL, 10) * IDLE_NS; /* Unix seconds */
    fclose(f);
    return v;
}

int idle_veto_write(const char *dir, const char *session, uint64_t until_ns)
{
    char path[1024], tmp[1100];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s.keep", dir, session);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    f = fopen(tmp, "w");
    if (!f)
        return GPUFL_EIO;
    fprintf(f, "%llu\n", (unsigned long long)(until_ns / IDLE_NS));
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        return GPUFL_EIO;
    return 0;
}

/* Kubernetes: ".../kubepods-burstable-pod<uid>.slice/cri-containerd-<id>
 * .scope" or "/kubepods/burstable/pod<uid>/<id>"; Docker:
 * ".../docker-<id>.scope" or "/docker/<id>"; systemd users:
 * "/user.slice/user-1000.slice/...". */
static int from_cgroup(const char *cgroup, idle_sess_cfg *out)
{
    const char *pod = cgroup;
    const char *last = strrchr(cgroup, '/');
    const char *user = strstr(cgroup, "/user-");
    /* "pod<uid>" after '-' or '/' ("kubepods" itself does not count) */
    while ((pod = strstr(pod, "pod")) != NULL &&
           !(pod > cgroup && (pod[-1] == '-' || pod[-1] == '/') && pod[3] &&
             pod[3] != 's'))
        pod += 3;
    memset(out, 0, sizeof *out);
    out->auto_found = 1;
    snprintf(out->cgroup, sizeof out->cgroup, "%s", cgroup);
    if (strstr(cgroup, "kubepods") && pod) {
        size_t n = strcspn(pod + 3, "/.");
        const char *cid = last ? last + 1 : cgroup;
        const char *dash = strrchr(cid, '-');
        char uid[80];
        snprintf(uid, sizeof uid, "%.*s", (int)(n < 64 ? n : 64), pod + 3);
        for (char *p = uid; *p; p++)
            if (*p == '_')
                *p = '-';
        snprintf(out->pod, sizeof out->pod, "pod-%s", uid);
        if (dash && strstr(cid, ".scope"))
            cid = dash + 1;
        snprintf(out->container, sizeof out->container, "%.12s", cid);
        snprintf(out->name, sizeof out->name, "pod-%.36s", uid);
        /* the session is the pod: every container of it */
        if (last && last > cgroup) {
            size_t keep = (size_t)(last - cgroup);
            if (keep < sizeof out->cgroup)
                out->cgroup[keep] = 0;
        }
        return 0;
    }
    if (last && (strstr(last, "docker-") || strstr(cgroup, "/docker/"))) {
        const char *cid = strstr(last, "docker-");
        cid = cid ? cid + 7 : last + 1;
        snprintf(out->container, sizeof out->container, "%.12s", cid);
        snprintf(out->name, sizeof out->name, "docker-%.12s", cid);
        return 0;
    }
    if (user) {
        unsigned long uid = strtoul(user + 6, NULL, 10);
        snprintf(out->name, sizeof out->name, "user-%lu", uid);
        snprintf(out->cgroup, sizeof out->cgroup, "%.*s",
                 (int)(strcspn(user + 1, "/") + (size_t)(user + 1 - cgroup)),
                 cgroup);
        return 0;
    }
    /* anything else: the leaf's name, or its parent's when the leaf is a
     * systemd scope inside a container's cgroup ("/train/main.scope") */
    if (last && last > cgroup && strlen(last) > 6 &&
        !strcmp(last + strlen(last) - 6, ".scope")) {
        size_t keep = (size_t)(last - cgroup);
        if (keep < sizeof out->cgroup)
            out->cgroup[keep] = 0;
        last = strrchr(out->cgroup, '/');
    }
    if (last && last[1]) {
        snprintf(out->name, sizeof out->name, "%.63s", last + 1);
        for (char *p = out->name; *p; p++)
            if (!isalnum((unsigned char)*p) && !strchr("._-", *p))
                *p = '_';
        return 0;
    }
    return GPUFL_ENOTFOUND;
}

int idle_sess_from_cgroup(const char *cgroup, idle_sess_cfg *out)
{
    int rc = from_cgroup(cgroup, out);
    /* session names are labels and file names: [A-Za-z0-9._-] */
    for (char *p = out->name; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("._-", *p))
            *p = '_';
    if (!rc &&
        (!out->name[0] || !strcmp(out->name, ".") || !strcmp(out->name, "..")))
        rc = GPUFL_ENOTFOUND;
    return rc;
}

/* ---- listed processes that are gone ---- */

void idle_dead_scan(const idle_env *e, idle_gpu *gpus, int ngpus,
                    int *host_pids)
{
    char cg[300];
    for (int g = 0; g < ngpus; g++) {
        const gpu_sample *s = &gpus[g].last;
        gpus[g].ndead = 0;
        for (uint32_t k = 0; k < s->nprocs; k++) {
            int rc = idle_proc_cgroup(e, s->procs[k].pid, cg, sizeof cg);
            if (rc != GPUFL_ENOTFOUND) {
                *host_pids = 1;
                continue;
            }
            if (gpus[g].ndead < IDLE_MAX_HOLDERS)
                gpus[g].dead[gpus[g].ndead] = s->procs[k].pid;
            gpus[g].ndead++;
        }
    }
    /* until one listed PID was found here, this /proc may be another PID
     * namespace (a container without hostPID), where every host PID looks
     * gone */
    for (int g = 0; !*host_pids && g < ngpus; g++)
        gpus[g].ndead = 0;
}
