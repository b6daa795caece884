/*
 * idle_slurm.c - Slurm's own word on which job holds which GPU of this
 * node: `scontrol show job -d` (per-node "GRES=gpu:2(IDX:0-1)" lines),
 * run as a child with a time limit and a cap on its output, read without
 * blocking the watch loop, its answer cached and asked again every
 * IDLE_SLURM_EVERY_NS.  A job that holds GPUs with no process on them is
 * ALLOCATED_UNUSED, charged to the job and its user (idle_acct.c); the
 * watch loop also makes a session of each such job (idle_watch.c), so
 * the warning -> stop ladder and its hook apply to Slurm jobs.
 *
 * The multi-line format is parsed, not -o: there every field starts its
 * own line, so a job name or a command holding "UserId=" or "Nodes=" text
 * cannot pass for a field.
 */
#include "idle.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gpufl/gpufl.h>

#include "common/clock.h"
#include "common/log.h"

#define IDLE_SLURM_EVERY_NS (5 * IDLE_NS)
#define SLURM_LIMIT_NS (8 * IDLE_NS) /* a child running longer is killed */
#define SLURM_OUT_CAP (16u << 20)    /* scontrol's answer, bytes */
#define SLURM_LINE 4096

/* a job's GPUs are a mask of one 64-bit word */
_Static_assert(IDLE_MAX_GPUS <= 64, "idle_slurm_job.gpus holds the indices");

struct idle_slurm {
    char path[1024]; /* scontrol */
    char node[128];
    pid_t pid; /* the running child, 0 none */
    int fd;    /* its stdout (and stderr), non-blocking */
    uint64_t started, next;
    char *out;
    size_t len;
    int too_big;
    int failing; /* the last run failed: say so once */
    idle_slurm_job jobs[IDLE_SLURM_JOBS];
    int njobs;
};

/* ---- host lists ---- */

/* Is name one of the names of one host-list item ("gpu[01-04,07]x")? */
static int item_has(const char *it, size_t n, const char *name)
{
    const char *lb = memchr(it, '[', n), *rb;
    size_t pl, nl = strlen(name), sl;
    const char *p, *end;
    if (!lb)
        return n == nl && !memcmp(it, name, n);
    rb = memchr(lb, ']', n - (size_t)(lb - it));
    if (!rb)
        return 0;
    pl = (size_t)(lb - it);
    sl = n - (size_t)(rb + 1 - it);
    if (nl < pl + sl || memcmp(name, it, pl) ||
        memcmp(name + nl - sl, rb + 1, sl))
        return 0;
    /* the middle of name against each range: same width when padded */
    for (p = lb + 1; p < rb; p = end + 1) {
        const char *dash;
        size_t w, mid = nl - pl - sl;
        char num[24];
        unsigned long lo, hi, v;
        end = memchr(p, ',', (size_t)(rb - p));
        if (!end)
            end = rb;
        dash = memchr(p, '-', (size_t)(end - p));
        w = (size_t)((dash ? dash : end) - p);
        if (!mid || mid >= sizeof num || strspn(name + pl, "0123456789") < mid)
            continue;
        memcpy(num, name + pl, mid);
        num[mid] = 0;
        v = strtoul(num, NULL, 10);
        lo = strtoul(p, NULL, 10);
        hi = dash ? strtoul(dash + 1, NULL, 10) : lo;
        /* "01-04" names zero-padded hosts: width must match then */
        if (p[0] == '0' && w > 1 && mid != w)
            continue;
        if (v >= lo && v <= hi)
            return 1;
    }
    return 0;
}

int idle_slurm_hostlist_has(const char *list, size_t len, const char *name)
{
    size_t i = 0;
    /* no name (gethostname failed) is no node: not the empty item of
     * ",vm" nor of a list cut short */
    if (!name[0])
        return 0;
    while (i < len) {
        size_t j = i;
        int depth = 0;
        while (j < len && (list[j] != ',' || depth)) {
            depth += list[j] == '[' ? 1 : list[j] == ']' ? -1 : 0;
            j++;
        }
        if (item_has(list + i, j - i, name))
            return 1;
        i = j + 1;
    }
    return 0;
}

/* ---- the parser ---- */

/* GPU indices of a GRES value: "gpu:1(IDX:1)", "gpu:a100:2(IDX:0,2-3)",
 * "gpu(IDX:0),mps:100(0/100)"; other GRES are skipped. */
static uint64_t gres_gpus(const char *v, size_t n)
{
    uint64_t mask = 0;
    size_t i = 0;
    while (i < n) {
        const char *it = v + i, *idx, *close;
        size_t j = i;
        int depth = 0;
        while (j < n && (v[j] != ',' || depth)) {
            depth += v[j] == '(' ? 1 : v[j] == ')' ? -1 : 0;
            j++;
        }
        idx = (j - i > 3 && !memcmp(it, "gpu", 3) &&
               (it[3] == ':' || it[3] == '('))
                  ? strstr(it, "(IDX:")
                  : NULL;
        close =
            idx && idx < v + j ? memchr(idx, ')', (size_t)(v + j - idx)) : NULL;
        for (const char *p = idx ? idx + 5 : NULL; close && p < close;) {
            char *end;
            unsigned long lo = strtoul(p, &end, 10), hi = lo;
            if (end == p)
                break;
            if (*end == '-') {
                p = end + 1;
                hi = strtoul(p, &end, 10);
                if (end == p)
                    break;
            }
            for (unsigned long k = lo; k <= hi && k < IDLE_MAX_GPUS; k++)
                mask |= (uint64_t)1 << k;
            p = *end == ',' ? end + 1 : end;
            if (*end != ',')
                break;
        }
        i = j + 1;
    }
    return mask;
}

/* The value of key= among the blank-separated fields of a line. */
static int field(const char *line, const char *key, const char **v, size_t *n)
{
    size_t kl = strlen(key);
    const char *p = line;
    while (*p) {
        p += strspn(p, " ");
        if (!strncmp(p, key, kl) && p[kl] == '=') {
            *v = p + kl + 1;
            *n = strcspn(*v, " \n");
            return 1;
        }
        p += strcspn(p, " ");
    }
    return 0;
}

typedef struct prec {
    idle_slurm_job j;
    int running;
} prec;

static int rec_end(prec *r, idle_slurm_job *jobs, int n, int max)
{
    if (r->j.id[0] && r->running && r->j.gpus && n < max)
        jobs[n++] = r->j;
    memset(r, 0, sizeof *r);
    return n;
}

int idle_slurm_parse(const char *text, size_t len, const char *node,
                     idle_slurm_job *jobs, int max)
{
    char line[SLURM_LINE];
    size_t pos = 0;
    int n = 0;
    prec r;
    memset(&r, 0, sizeof r);
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos), *v;
        size_t ll = nl ? (size_t)(nl - (text + pos)) : len - pos, vn;
        size_t cp = ll < sizeof line - 1 ? ll : sizeof line - 1;
        const char *first;
        memcpy(line, text + pos, cp);
        line[cp] = 0;
        pos += ll + (nl != NULL);
        first = line + strspn(line, " ");
        if (line[0] != ' ' && !strncmp(line, "JobId=", 6)) {
            /* a new record: "JobId=12 JobName=..." (or ArrayJobId=) */
            n = rec_end(&r, jobs, n, max);
            vn = strcspn(line + 6, " ");
            if (vn && vn < sizeof r.j.id &&
                strspn(line + 6, "0123456789") == vn)
                snprintf(r.j.id, sizeof r.j.id, "%.*s", (int)vn, line + 6);
        } else if (!strncmp(first, "UserId=", 7) &&
                   field(first, "UserId", &v, &vn)) {
            /* "nobody(65534)": the name, else the number */
            const char *par = memchr(v, '(', vn);
            size_t un = par ? (size_t)(par - v) : vn;
            if (un && un < sizeof r.j.user)
                snprintf(r.j.user, sizeof r.j.user, "%.*s", (int)un, v);
        } else if (!strncmp(first, "JobState=", 9) &&
                   field(first, "JobState", &v, &vn)) {
            r.running = (vn == 7 && !memcmp(v, "RUNNING", 7)) ||
                        (vn == 9 && !memcmp(v, "SUSPENDED", 9));
        } else if (!strncmp(first, "Nodes=", 6) &&
                   field(first, "Nodes", &v, &vn) &&
                   idle_slurm_hostlist_has(v, vn, node) &&
                   field(first, "GRES", &v, &vn)) {
            r.j.gpus |= gres_gpus(v, vn);
        }
    }
    return rec_end(&r, jobs, n, max);
}

int idle_slurm_holds(const idle_slurm_job *j, uint32_t id)
{
    return id < IDLE_MAX_GPUS && (j->gpus & ((uint64_t)1 << id)) != 0;
}

/* ---- the child ---- */

/* path of prog in PATH, resolved before any fork (execv only, then) */
static int find_in_path(const char *prog, char *out, size_t cap)
{
    const char *path = getenv("PATH"), *p;
    if (strchr(prog, '/')) {
        snprintf(out, cap, "%s", prog);
        return access(out, X_OK) == 0 ? 0 : GPUFL_ENOTFOUND;
    }
    for (p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t n = strcspn(p, ":");
        if (n && (size_t)snprintf(out, cap, "%.*s/%s", (int)n, p, prog) < cap &&
            access(out, X_OK) == 0)
            return 0;
        p += n + (p[n] == ':');
    }
    return GPUFL_ENOTFOUND;
}

int idle_slurm_new(idle_slurm **out, const char *scontrol, const char *node,
                   char *why, size_t whylen)
{
    idle_slurm *s;
    struct stat st;
    char path[1024];
    const char *conf = getenv("SLURM_CONF");
    *out = NULL;
    if (scontrol && !strcmp(scontrol, "off"))
        return 0;
    if (!scontrol && !(conf && *conf && stat(conf, &st) == 0) &&
        stat("/etc/slurm/slurm.conf", &st) != 0)
        return 0; /* no Slurm here */
    if (find_in_path(scontrol ? scontrol : "scontrol", path, sizeof path)) {
        if (!scontrol)
            return 0; /* a config without the client: nothing to ask */
        snprintf(why, whylen, "--slurm-scontrol %s: not an executable",
                 scontrol);
        return GPUFL_ENOTFOUND;
    }
    s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, whylen, "out of memory");
        return GPUFL_ENOMEM;
    }
    snprintf(s->path, sizeof s->path, "%s", path);
    if (node && *node) {
        snprintf(s->node, sizeof s->node, "%s", node);
    } else {
        if (gethostname(s->node, sizeof s->node) != 0)
            s->node[0] = 0;
        s->node[sizeof s->node - 1] = 0;
        s->node[strcspn(s->node, ".")] = 0; /* slurmd's default NodeName */
    }
    if (!s->node[0]) {
        /* asking scontrol for node "" would attribute no job to any GPU:
         * every GPU would read as nobody's, silently */
        free(s);
        snprintf(why, whylen,
                 "Slurm is configured here but this machine's node name is"
                 " unknown (no host name): pass --slurm-node NAME, or"
                 " --slurm-scontrol off");
        return GPUFL_EINVAL;
    }
    s->fd = -1;
    *out = s;
    return 0;
}

/* 1 when a new answer replaced the cached jobs. */
static int child_end(idle_slurm *s, int kill_it)
{
    int status = 0, ok;
    if (kill_it)
        kill(s->pid, SIGKILL);
    ok = waitpid(s->pid, &status, 0) == s->pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0 && !kill_it && !s->too_big;
    close(s->fd);
    s->fd = -1;
    s->pid = 0;
    if (ok) {
        s->njobs =
            idle_slurm_parse(s->out, s->len, s->node, s->jobs, IDLE_SLURM_JOBS);
        if (s->failing)
            glog_info("slurm", "scontrol answers again (%d GPU job%s here)",
                      s->njobs, s->njobs == 1 ? "" : "s");
        s->failing = 0;
    } else if (!s->failing) {
        /* the last good answer stays: a job does not end because the
         * controller is slow */
        size_t n = s->len ? strcspn(s->out, "\n") : 0;
        glog_warn("slurm", "%s show job -d %s%.*s (keeping the last answer)",
                  s->path,
                  kill_it      ? "took too long: killed"
                  : s->too_big ? "answered more than 16 MiB"
                               : "failed: ",
                  kill_it || s->too_big ? 0 : (int)(n > 200 ? 200 : n),
                  s->out ? s->out : "");
        s->failing = 1;
    }
    free(s->out);
    s->out = NULL;
    s->len = 0;
    s->too_big = 0;
    return ok;
}

static void child_start(idle_slurm *s, uint64_t now)
{
    int p[2];
    pid_t pid;
    s->next = now + IDLE_SLURM_EVERY_NS;
    if (pipe2(p, O_CLOEXEC) != 0)
        return;
    pid = fork();
    if (pid == 0) {
        /* async-signal-safe calls only: other threads may hold locks */
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        dup2(p[1], 1);
        dup2(p[1], 2);
        execl(s->path, s->path, "show", "job", "-d", (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        return;
    }
    fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
    s->pid = pid;
    s->fd = p[0];
    s->started = now;
}

/* Reads what is there; 1 at EOF. */
static int child_read(idle_slurm *s)
{
    char buf[65536];
    for (;;) {
        ssize_t r = read(s->fd, buf, sizeof buf);
        if (r == 0)
            return 1;
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return 0; /* EAGAIN: nothing more for now */
        if (s->len + (size_t)r > SLURM_OUT_CAP) {
            s->too_big = 1;
            continue; /* drained, dropped: the child must not block */
        }
        {
            char *n = realloc(s->out, s->len + (size_t)r + 1);
            if (!n) {
                s->too_big = 1;
                continue;
            }
            s->out = n;
        }
        memcpy(s->out + s->len, buf, (size_t)r);
        s->len += (size_t)r;
        s->out[s->len] = 0;
    }
}

int idle_slurm_poll(idle_slurm *s, uint64_t now, int wait)
{
    if (!s)
        return 0;
    if (!s->pid && now >= s->next)
        child_start(s, now);
    while (s->pid) {
        if (child_read(s))
            return child_end(s, 0);
        if (clock_mono_ns() - s->started >= SLURM_LIMIT_NS) {
            child_end(s, 1);
            break;
        }
        if (!wait)
            break;
        usleep(10000);
    }
    return 0;
}

int idle_slurm_jobs(const idle_slurm *s, const idle_slurm_job **jobs)
{
    *jobs = s ? s->jobs : NULL;
    return s ? s->njobs : 0;
}

int idle_slurm_mark(const idle_slurm *s, idle_gpu *gpus, int ngpus)
{
    int n = 0;
    for (int i = 0; s && i < s->njobs; i++) {
        const idle_slurm_job *j = &s->jobs[i];
        idle_owner o;
        char what[96];
        memset(&o, 0, sizeof o);
        snprintf(o.job, sizeof o.job, "%s", j->id);
        snprintf(o.user, sizeof o.user, "%s", j->user);
        snprintf(what, sizeof what, "Slurm job %s%s%s%s", j->id,
                 j->user[0] ? " (user " : "", j->user, j->user[0] ? ")" : "");
        for (int g = 0; g < ngpus; g++)
            if (idle_slurm_holds(j, gpus[g].info.id))
                n += idle_alloc_mark(&gpus[g], &o, what);
    }
    return n;
}

void idle_slurm_free(idle_slurm *s)
{
    if (!s)
        return;
    if (s->pid) {
        s->failing = 1; /* no warning for a child stopped at exit */
        (void)child_end(s, 1);
    }
    free(s->out);
    free(s);
}
