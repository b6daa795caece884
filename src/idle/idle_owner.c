/*
 * idle_owner.c - who holds a GPU: the owner of a process (its cgroup: a
 * Kubernetes pod and container, a Docker container, a Slurm job; its uid:
 * a user), the allocations made without any process (the kubelet
 * device-plugin checkpoint: pod -> device IDs; Slurm job cgroups whose
 * processes carry SLURM_JOB_GPUS), and the processes holding /dev/nvidiaN
 * open when NVML lists none (leaked memory, a phantom).
 *
 * Every path is under idle_env.root, so the tests use fixture trees.  Pod
 * names come from /var/log/pods/<namespace>_<name>_<uid> (the kubelet
 * keeps one directory per pod there; no API server is asked).
 */
#include "idle.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpufl/gpufl.h>

#include "common/fsutil.h"
#include "common/jsonl.h"

#define OWN_LINE 512
#define OWN_ENV_CAP (256u << 10)   /* /proc/PID/environ read at most */
#define OWN_CKPT_CAP (16u << 20)   /* kubelet checkpoint file */
#define OWN_CKPT_TOKENS (1u << 18) /* JSON tokens of the checkpoint */
#define OWN_JOB_PIDS 64            /* processes looked at per Slurm job */
#define OWN_JOB_DEPTH 4            /* job_N/step_M/user/task_K */
#define OWN_DEFAULT_CKPT                                                       \
    "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
#define OWN_DEFAULT_SLURM "/sys/fs/cgroup/system.slice/slurmstepd.scope"

static void own_path(const idle_env *e, char *out, size_t cap, const char *rel)
{
    snprintf(out, cap, "%s%s", e->root ? e->root : "", rel);
}

/* The user name of uid from <root>/etc/passwd, else the number. */
static void user_name(const idle_env *e, long uid, char *out, size_t cap)
{
    char path[1024], line[OWN_LINE];
    FILE *f;
    snprintf(out, cap, "%ld", uid);
    own_path(e, path, sizeof path, "/etc/passwd");
    f = fopen(path, "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c2 && strtol(c2 + 1, NULL, 10) == uid &&
            isdigit((unsigned char)c2[1])) {
            snprintf(out, cap, "%.*s", (int)(c1 - line), line);
            break;
        }
    }
    fclose(f);
}

/* Real uid of pid from /proc/PID/status, -1 unknown. */
static long proc_uid(const idle_env *e, uint32_t pid)
{
    char rel[64], path[1024], line[OWN_LINE];
    long uid = -1;
    FILE *f;
    snprintf(rel, sizeof rel, "/proc/%u/status", pid);
    own_path(e, path, sizeof path, rel);
    f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "Uid:", 4) == 0) {
            uid = strtol(line + 4, NULL, 10);
            break;
        }
    fclose(f);
    return uid;
}

/* Namespace and name of the pod with this UID (dashes), from
 * /var/log/pods/<ns>_<name>_<uid>; "pod-<uid>" when not found. */
static void pod_name(const idle_env *e, const char *uid, idle_owner *o)
{
    char path[1024];
    size_t ul = strlen(uid);
    struct dirent *de;
    DIR *d;
    snprintf(o->pod, sizeof o->pod, "pod-%.100s", uid);
    own_path(e, path, sizeof path, "/var/log/pods");
    d = opendir(path);
    if (!d)
        return;
    while ((de = readdir(d)) != NULL) {
        const char *n = de->d_name, *u1 = strchr(n, '_');
        size_t nl = strlen(n);
        const char *u2 = u1 ? strchr(u1 + 1, '_') : NULL;
        if (!u2 || nl <= ul || strcmp(n + nl - ul, uid) != 0 ||
            u2 + 1 != n + nl - ul)
            continue;
        snprintf(o->ns, sizeof o->ns, "%.*s", (int)(u1 - n), n);
        snprintf(o->pod, sizeof o->pod, "%.*s", (int)(u2 - u1 - 1), u1 + 1);
        break;
    }
    closedir(d);
}

/* Digits after a marker ("/job_", "/uid_") in a cgroup path. */
static int after(const char *cg, const char *mark, char *out, size_t cap)
{
    const char *p = strstr(cg, mark);
    size_t n;
    if (!p)
        return 0;
    p += strlen(mark);
    n = strspn(p, "0123456789");
    if (!n || n >= cap)
        return 0;
    snprintf(out, cap, "%.*s", (int)n, p);
    return 1;
}

static void owner_from_cgroup(const idle_env *e, const char *cg, idle_owner *o)
{
    idle_sess_cfg c;
    char uid[24];
    after(cg, "/job_", o->job, sizeof o->job);
    if (after(cg, "/uid_", uid, sizeof uid))
        user_name(e, strtol(uid, NULL, 10), o->user, sizeof o->user);
    if (idle_sess_from_cgroup(cg, &c))
        return;
    if (c.pod[0] && !strncmp(c.pod, "pod-", 4))
        pod_name(e, c.pod + 4, o);
    if (c.container[0] && (c.pod[0] || !strncmp(c.name, "docker-", 7)))
        snprintf(o->container, sizeof o->container, "%s", c.container);
}

/* A Slurm job of pid the cgroup v2 path did not name: a cgroup v1 line
 * ("4:freezer:/slurm_<node>/uid_0/job_2/step_batch", proctrack/cgroup on
 * a v1 or hybrid host), else SLURM_JOB_ID in its environment
 * (proctrack/linuxproc, where jobs have no cgroup; root may read it). */
static void owner_slurm_v1(const idle_env *e, uint32_t pid, idle_owner *o)
{
    static const char *const names[] = { "SLURM_JOB_ID", "SLURM_JOBID", NULL };
    char rel[64], path[1024], line[OWN_LINE], val[32], uid[24];
    FILE *f;
    snprintf(rel, sizeof rel, "/proc/%u/cgroup", pid);
    own_path(e, path, sizeof path, rel);
    f = fopen(path, "r");
    while (f && !o->job[0] && fgets(line, sizeof line, f))
        if (strncmp(line, "0::", 3) != 0 &&
            after(line, "/job_", o->job, sizeof o->job) &&
            after(line, "/uid_", uid, sizeof uid) && !o->user[0])
            user_name(e, strtol(uid, NULL, 10), o->user, sizeof o->user);
    if (f)
        fclose(f);
    if (!o->job[0] && idle_proc_env(e, pid, names, val, sizeof val) >= 0 &&
        val[0] && strspn(val, "0123456789") == strlen(val))
        snprintf(o->job, sizeof o->job, "%s", val);
}

int idle_owner_of_pid(const idle_env *e, uint32_t pid, idle_owner *o)
{
    char cg[300];
    long uid;
    memset(o, 0, sizeof *o);
    if (idle_proc_cgroup(e, pid, cg, sizeof cg))
        return GPUFL_ENOTFOUND;
    owner_from_cgroup(e, cg, o);
    if (!o->job[0] && !o->pod[0] && !o->container[0])
        owner_slurm_v1(e, pid, o);
    uid = proc_uid(e, pid);
    if (uid >= 0 && !o->user[0])
        user_name(e, uid, o->user, sizeof o->user);
    return 0;
}

/* ---- allocations: kubelet device-plugin checkpoint ---- */

static int gpu_of_id(const idle_gpu *gpus, int ngpus, const char *id)
{
    char *end;
    long k;
    for (int i = 0; i < ngpus; i++)
        if (gpus[i].info.uuid[0] && !strcmp(gpus[i].info.uuid, id))
            return i;
    /* the device plugin's "index" ID strategy names GPUs by index */
    k = strtol(id, &end, 10);
    if (end != id && !*end && k >= 0 && k < ngpus)
        return (int)k;
    return -1;
}

int idle_alloc_mark(idle_gpu *g, const idle_owner *o, const char *what)
{
    if (g->allocated)
        return 0;
    g->allocated = 1;
    g->alloc = *o;
    snprintf(g->alloc_what, sizeof g->alloc_what, "%s", what);
    return 1;
}

/* One DeviceIDs value: ["id",..] (before Kubernetes 1.20) or
 * {"<numa node>":["id",..],..}. */
static int ckpt_ids(jsonl_doc *d, uint32_t t, idle_gpu *gpus, int ngpus,
                    const idle_owner *o, const char *what)
{
    int n = 0;
    if (jsonl_tok_type(d, t) == JSONL_OBJECT) {
        for (uint32_t i = 0, k = t + 1; i < d->tok[t].n;
             i++, k = d->tok[k + 1].next)
            n += ckpt_ids(d, k + 1, gpus, ngpus, o, what);
        return n;
    }
    if (jsonl_tok_type(d, t) != JSONL_ARRAY)
        return 0;
    for (uint32_t i = 0, k = t + 1; i < d->tok[t].n; i++, k = d->tok[k].next) {
        char id[128];
        size_t sl;
        int g;
        if (jsonl_tok_str(d, k, id, sizeof id, &sl))
            continue;
        g = gpu_of_id(gpus, ngpus, id);
        if (g >= 0)
            n += idle_alloc_mark(&gpus[g], o, what);
    }
    return n;
}

int idle_kubelet_parse(const idle_env *e, const char *text, size_t len,
                       idle_gpu *gpus, int ngpus)
{
    jsonl_tok *tok = malloc(OWN_CKPT_TOKENS * sizeof *tok);
    jsonl_doc d;
    uint32_t data, ents;
    int n = 0;
    if (!tok)
        return 0;
    jsonl_doc_init(&d, tok, OWN_CKPT_TOKENS);
    if (jsonl_doc_parse_obj(&d, text, len))
        goto out;
    data = jsonl_doc_find(&d, "Data");
    ents = jsonl_obj_find(&d, data, "PodDeviceEntries");
    if (jsonl_tok_type(&d, ents) != JSONL_ARRAY)
        goto out;
    for (uint32_t i = 0, k = ents + 1; i < d.tok[ents].n;
         i++, k = d.tok[k].next) {
        char uid[80], res[80], what[96];
        size_t sl;
        idle_owner o;
        memset(&o, 0, sizeof o);
        if (jsonl_tok_str(&d, jsonl_obj_find(&d, k, "PodUID"), uid, sizeof uid,
                          &sl) ||
            jsonl_tok_str(&d, jsonl_obj_find(&d, k, "ResourceName"), res,
                          sizeof res, &sl) ||
            strncmp(res, "nvidia.com/", 11) != 0)
            continue;
        jsonl_tok_str(&d, jsonl_obj_find(&d, k, "ContainerName"), o.container,
                      sizeof o.container, &sl);
        pod_name(e, uid, &o);
        snprintf(what, sizeof what, "pod %.40s%s%.48s", o.ns,
                 o.ns[0] ? "/" : "", o.pod);
        n += ckpt_ids(&d, jsonl_obj_find(&d, k, "DeviceIDs"), gpus, ngpus, &o,
                      what);
    }
out:
    free(tok);
    return n;
}

static int kubelet_scan(const idle_env *e, idle_gpu *gpus, int ngpus)
{
    char path[1024], *text = NULL;
    size_t len = 0;
    int fd, n = 0;
    own_path(e, path, sizeof path,
             e->kubelet_ckpt ? e->kubelet_ckpt : OWN_DEFAULT_CKPT);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    if (fs_read_regular(fd, OWN_CKPT_CAP, &text, &len) == 0)
        n = idle_kubelet_parse(e, text, len, gpus, ngpus);
    close(fd);
    free(text);
    return n;
}

/* ---- allocations: Slurm job cgroups ---- */

int idle_proc_env(const idle_env *e, uint32_t pid, const char *const *names,
                  char *out, size_t cap)
{
    char rel[64], path[1024], *env;
    size_t len = 0;
    ssize_t r;
    int fd, found = -1;
    snprintf(rel, sizeof rel, "/proc/%u/environ", pid);
    own_path(e, path, sizeof path, rel);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    env = malloc(OWN_ENV_CAP + 1);
    if (!env) {
        close(fd);
        return -1;
    }
    /* /proc files report size 0: read to the end, up to the cap (an
     * environment cut there loses only the variables past it) */
    while (len < OWN_ENV_CAP &&
           (r = read(fd, env + len, OWN_ENV_CAP - len)) > 0)
        len += (size_t)r;
    close(fd);
    env[len] = 0;
    /* names[] in order of preference: a later name only fills in */
    for (size_t p = 0; p < len && found != 0; p += strlen(env + p) + 1)
        for (int k = 0; names[k] && (found < 0 || k < found); k++) {
            size_t nl = strlen(names[k]);
            if (!strncmp(env + p, names[k], nl) && env[p + nl] == '=') {
                snprintf(out, cap, "%s", env + p + nl + 1);
                found = k;
            }
        }
    free(env);
    return found;
}

/* The GPU indices of SLURM_JOB_GPUS (or SLURM_STEP_GPUS) in pid's
 * environment into mask; 1 when found. */
static int job_gpus(const idle_env *e, uint32_t pid, uint32_t *mask)
{
    static const char *const names[] = { "SLURM_JOB_GPUS", "SLURM_STEP_GPUS",
                                         NULL };
    char val[512];
    const char *v = val;
    if (idle_proc_env(e, pid, names, val, sizeof val) < 0)
        return 0;
    while (*v) {
        char *end;
        long k = strtol(v, &end, 10);
        if (end == v)
            break;
        if (k >= 0 && k < IDLE_MAX_GPUS)
            *mask |= 1u << k;
        v = *end == ',' ? end + 1 : end;
    }
    return 1;
}

/* Processes of a job cgroup and its children, depth-bounded. */
static void job_pids(const char *dir, int depth, uint32_t *pids, int *n)
{
    char path[1200], line[64];
    struct dirent *de;
    FILE *f;
    DIR *d;
    if (snprintf(path, sizeof path, "%s/cgroup.procs", dir) >= (int)sizeof path)
        return; /* too deep to name: not a Slurm job's folder */
    f = fopen(path, "r");
    if (f) {
        while (*n < OWN_JOB_PIDS && fgets(line, sizeof line, f)) {
            unsigned long p = strtoul(line, NULL, 10);
            if (p)
                pids[(*n)++] = (uint32_t)p;
        }
        fclose(f);
    }
    if (depth >= OWN_JOB_DEPTH || !(d = opendir(dir)))
        return;
    while (*n < OWN_JOB_PIDS && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' || de->d_type != DT_DIR)
            continue;
        /* a truncated path would name another folder: skip it */
        if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >=
            (int)sizeof path)
            continue;
        job_pids(path, depth + 1, pids, n);
    }
    closedir(d);
}

static int slurm_scan(const idle_env *e, idle_gpu *gpus, int ngpus)
{
    char base[1024], dir[1400], what[96];
    struct dirent *de;
    DIR *d;
    int n = 0;
    own_path(e, base, sizeof base,
             e->slurm_cgroup ? e->slurm_cgroup : OWN_DEFAULT_SLURM);
    d = opendir(base);
    if (!d)
        return 0;
    while ((de = readdir(d)) != NULL) {
        uint32_t pids[OWN_JOB_PIDS], mask = 0;
        int np = 0;
        long uid = -1;
        idle_owner o;
        if (strncmp(de->d_name, "job_", 4) != 0)
            continue;
        memset(&o, 0, sizeof o);
        snprintf(o.job, sizeof o.job, "%.31s", de->d_name + 4);
        if (snprintf(dir, sizeof dir, "%s/%s", base, de->d_name) >=
            (int)sizeof dir)
            continue;
        job_pids(dir, 0, pids, &np);
        for (int i = 0; i < np; i++)
            if (job_gpus(e, pids[i], &mask) && uid < 0)
                uid = proc_uid(e, pids[i]);
        if (uid >= 0)
            user_name(e, uid, o.user, sizeof o.user);
        snprintf(what, sizeof what, "Slurm job %s%s%s%s", o.job,
                 o.user[0] ? " (user " : "", o.user, o.user[0] ? ")" : "");
        for (int g = 0; g < ngpus; g++)
            if (mask & (1u << gpus[g].info.id))
                n += idle_alloc_mark(&gpus[g], &o, what);
    }
    closedir(d);
    return n;
}

int idle_alloc_scan(const idle_env *e, idle_gpu *gpus, int ngpus)
{
    for (int i = 0; i < ngpus; i++) {
        gpus[i].allocated = 0;
        memset(&gpus[i].alloc, 0, sizeof gpus[i].alloc);
        gpus[i].alloc_what[0] = 0;
    }
    return kubelet_scan(e, gpus, ngpus) + slurm_scan(e, gpus, ngpus);
}

/* ---- holders of /dev/nvidiaN ---- */

void idle_holders_scan(const idle_env *e, idle_gpu *gpus, int ngpus,
                       const int *need)
{
    char path[1024];
    struct dirent *pe;
    DIR *proc;
    int any = 0;
    for (int i = 0; i < ngpus; i++) {
        gpus[i].nholders = 0;
        any |= need[i];
    }
    own_path(e, path, sizeof path, "/proc");
    if (!any || !(proc = opendir(path)))
        return;
    while ((pe = readdir(proc)) != NULL) {
        char fdp[1400], link[1700], tgt[64];
        struct dirent *fe;
        uint32_t pid;
        DIR *fds;
        if (!isdigit((unsigned char)pe->d_name[0]))
            continue;
        pid = (uint32_t)strtoul(pe->d_name, NULL, 10);
        snprintf(fdp, sizeof fdp, "%s/%s/fd", path, pe->d_name);
        fds = opendir(fdp);
        if (!fds)
            continue; /* not ours to read, or gone */
        while ((fe = readdir(fds)) != NULL) {
            ssize_t n;
            char *end;
            long k;
            idle_gpu *g;
            int dup = 0;
            if (fe->d_name[0] == '.')
                continue;
            snprintf(link, sizeof link, "%s/%s", fdp, fe->d_name);
            n = readlink(link, tgt, sizeof tgt - 1);
            if (n <= 11 || strncmp(tgt, "/dev/nvidia", 11) != 0)
                continue;
            tgt[n] = 0;
            k = strtol(tgt + 11, &end, 10);
            if (end == tgt + 11 || *end || k < 0 || k >= ngpus || !need[k])
                continue;
            g = &gpus[k];
            for (int i = 0; i < g->nholders; i++)
                dup |= g->holders[i] == pid;
            if (dup || g->nholders >= IDLE_MAX_HOLDERS)
                continue;
            idle_owner_of_pid(e, pid, &g->holder_owner[g->nholders]);
            g->holders[g->nholders++] = pid;
        }
        closedir(fds);
    }
    closedir(proc);
}
