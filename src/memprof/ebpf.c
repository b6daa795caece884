/*
 * ebpf.c - the eBPF event source: load memprof.bpf.c (CO-RE skeleton),
 * find the driver library in the targets' /proc/PID/maps, attach the
 * entry and return probes once per (dev, inode) — which covers every
 * process mapping that file, running or started later — and rescan every
 * second for new processes and libraries.  Links are destroyed on the way
 * out (normal end, SIGINT, SIGTERM), so no probe outlives the profiler.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memprof.skel.h"
#include "session.h"
#include "common/buf.h"
#include "common/log.h"

#define MP_MAX_LIBS 256
#define MP_USTACK_SLOTS 64 /* stack copies waiting for their call event */
#define MP_MAPS_MAX (8u << 20)

typedef struct lib {
    uint64_t dev, ino;
    int runtime; /* the layer attached (MP_COOKIE_RT) */
} lib;

typedef struct ebpf {
    mp_session *s;
    struct memprof_bpf *skel;
    struct ring_buffer *rb;
    struct bpf_link **links;
    size_t nlinks, caplinks;
    lib libs[MP_MAX_LIBS];
    size_t nlibs;
    lib *rtseen; /* files looked at for a static cudart (runtime: found) */
    size_t nrtseen, caprtseen;
    char cgroup_rel[4096]; /* cgroup mode: "/path" below the cgroup2 mount */
    int scans;
    mp_dwarf *dwarf;          /* --dwarf */
    struct mp_ustack *ustack; /* MP_USTACK_SLOTS copies, by tid */
    unsigned next_slot;
    struct mp_event ev; /* an event whose ips are replaced */
} ebpf;

static int verbose_print;

__attribute__((format(printf, 2, 0))) static int
print_fn(enum libbpf_print_level lvl, const char *fmt, va_list ap)
{
    char msg[1024];
    int n;

    /* a driver without one of the symbols is normal: attach_lib skips it */
    if (!verbose_print || lvl == LIBBPF_DEBUG ||
        strstr(fmt, "failed to find symbol"))
        return 0;
    n = vsnprintf(msg, sizeof msg, fmt, ap);
    if (n < 0)
        return 0;
    /* libbpf ends its lines itself: one log line each */
    for (size_t k = strlen(msg); k && msg[k - 1] == '\n';)
        msg[--k] = '\0';
    glog(lvl == LIBBPF_WARN ? GLOG_WARN : GLOG_INFO, "libbpf", "%s", msg);
    return n;
}

static void explain_denied(int err)
{
    glog_error(
        "ebpf",
        "cannot load the eBPF program (%s).\n"
        "  eBPF profiling needs root, or CAP_BPF + CAP_PERFMON (and "
        "CAP_SYS_PTRACE\n  to read other users' /proc/PID/maps), and a "
        "kernel with BTF (/sys/kernel/btf/vmlinux)\n  and uprobes. Without "
        "them use: gpufl memprof --preload -- CMD ARGS...",
        strerror(err));
}

int mp_ebpf_check(void)
{
    libbpf_set_print(print_fn);
    struct memprof_bpf *skel = memprof_bpf__open_and_load();
    if (!skel) {
        explain_denied(errno);
        return 3;
    }
    memprof_bpf__destroy(skel);
    return 0;
}

static int on_event(void *ctx, void *data, size_t n)
{
    ebpf *b = ctx;
    const struct mp_event *e = data;
    if (n >= sizeof(struct mp_ustack) && e->kind == MP_EV_USTACK) {
        if (b->ustack) {
            memcpy(&b->ustack[b->next_slot], data, sizeof(struct mp_ustack));
            b->next_slot = (b->next_slot + 1) % MP_USTACK_SLOTS;
        }
        return 0;
    }
    if (n < sizeof(struct mp_event))
        return 0;
    if (e->kind == MP_EV_EXIT) {
        /* a later process with this pid is looked at afresh */
        uint32_t pid = e->pid;
        bpf_map__delete_elem(b->skel->maps.pyconf, &pid, sizeof pid, 0);
        if (b->dwarf)
            mp_dwarf_forget(b->dwarf, (int)e->pid);
    }
    if (e->kind == MP_EV_CALL && (e->flags & MP_EVF_USTACK) && b->ustack) {
        /* the newest copy of this thread's stack */
        for (unsigned k = 1; k <= MP_USTACK_SLOTS; k++) {
            struct mp_ustack *u =
                &b->ustack[(b->next_slot + MP_USTACK_SLOTS - k) %
                           MP_USTACK_SLOTS];
            if (u->kind != MP_EV_USTACK || u->tid != e->tid)
                continue;
            uint64_t ips[MP_MAX_FRAMES];
            int nf = mp_dwarf_unwind(b->dwarf, u, ips, MP_MAX_FRAMES);
            u->kind = 0; /* used */
            if (nf > 0) {
                memcpy(&b->ev, e, sizeof b->ev);
                memcpy(b->ev.ips, ips, (size_t)nf * sizeof ips[0]);
                b->ev.nframes = (unsigned)nf;
                e = &b->ev;
            }
            break;
        }
    }
    mp_agg_event(&b->s->agg, e);
    return 0;
}

static int add_link(ebpf *b, struct bpf_link *l)
{
    if (b->nlinks == b->caplinks) {
        size_t c = b->caplinks ? b->caplinks * 2 : 64;
        struct bpf_link **nv = realloc(b->links, c * sizeof *nv);
        if (!nv)
            return -1;
        b->links = nv;
        b->caplinks = c;
    }
    b->links[b->nlinks++] = l;
    return 0;
}

static void print_link_ids(ebpf *b, size_t from);

/* Attaches every API of one layer (driver, or the runtime's) present in
 * the file at `path` (seen by `pid`). */
static void attach_lib(ebpf *b, int pid, const char *mpath, int runtime)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d/root%s", pid, mpath);
    if (stat(path, &st))
        return;
    for (size_t i = 0; i < b->nlibs; i++)
        if (b->libs[i].dev == st.st_dev && b->libs[i].ino == st.st_ino &&
            b->libs[i].runtime == runtime)
            return;
    if (b->nlibs == MP_MAX_LIBS)
        return;
    b->libs[b->nlibs++] = (lib){ st.st_dev, st.st_ino, runtime };
    int n = 0;
    size_t first = b->nlinks;
    int from = runtime ? MP_API_RUNTIME : 0,
        to = runtime ? MP_API_N : MP_API_RUNTIME;
    for (int a = from; a < to; a++) {
        for (int ret = 0; ret < 2; ret++) {
            LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = mp_apis[a].name,
                        .retprobe = ret != 0,
                        .bpf_cookie = (uint64_t)a | mp_apis[a].cookie);
            struct bpf_program *prog =
                ret ? b->skel->progs.mp_return : b->skel->progs.mp_entry;
            struct bpf_link *l =
                bpf_program__attach_uprobe_opts(prog, -1, path, 0, &uo);
            if (!l)
                break; /* symbol not exported by this driver */
            if (add_link(b, l)) {
                bpf_link__destroy(l);
                break;
            }
            n += ret;
        }
    }
    if (b->s->o->verbose) {
        glog_info("ebpf", "attached %d %s entry points in %s (pid %d)", n,
                  runtime ? "runtime (static cudart)" : "driver", mpath, pid);
        print_link_ids(b, first);
    }
}

static int wanted_pid(ebpf *b, int pid)
{
    const memprof_opts *o = b->s->o;
    if (o->mode == MEMPROF_PIDS) {
        for (size_t i = 0; i < o->npids; i++)
            if (o->pids[i] == pid)
                return 1;
        return 0;
    }
    if (o->mode == MEMPROF_CGROUP) {
        char path[64], line[4200];
        snprintf(path, sizeof path, "/proc/%d/cgroup", pid);
        FILE *f = fopen(path, "r");
        int ok = 0;
        size_t rl = strlen(b->cgroup_rel);
        while (f && fgets(line, sizeof line, f))
            if (!strncmp(line, "0::", 3)) {
                char *p = line + 3;
                p[strcspn(p, "\n")] = 0;
                ok = !strncmp(p, b->cgroup_rel, rl) &&
                     (p[rl] == 0 || p[rl] == '/' || rl == 1);
            }
        if (f)
            fclose(f);
        return ok;
    }
    return 1;
}

/* /proc/PID/maps into a malloc'd buffer (capped), NULL when unreadable */
static char *read_maps(int pid, size_t *len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        if (n == cap) {
            char *nb = cap < MP_MAPS_MAX ? realloc(buf, cap * 2 + 1) : NULL;
            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (buf)
        buf[n] = 0;
    *len = n;
    return buf;
}

/* A CPython process: tell the BPF program where its frames are. */
static void python_setup(ebpf *b, mp_proc *pr, const char *maps)
{
    struct mp_pyconf c;
    pr->py_checked = 1;
    const mp_pyver *v = mp_py_detect((int)pr->pid, maps, &c);
    if (!v)
        return;
    if (bpf_map__update_elem(b->skel->maps.pyconf, &pr->pid, sizeof pr->pid, &c,
                             sizeof c, BPF_ANY))
        return;
    pr->py = v;
    if (b->s->o->verbose)
        glog_info("python",
                  "pid %u runs CPython %s: Python frames "
                  "on",
                  pr->pid, v->name);
}

/* A file the process executes from (its executable, a library) that
 * defines cudaMalloc itself: cudart linked statically.  Looked at once
 * per file. */
static int static_cudart(ebpf *b, int pid, const char *mpath)
{
    char path[4200];
    struct stat st;
    uint64_t minva;
    snprintf(path, sizeof path, "/proc/%d/root%s", pid, mpath);
    if (stat(path, &st))
        return 0;
    for (size_t i = 0; i < b->nrtseen; i++)
        if (b->rtseen[i].dev == st.st_dev && b->rtseen[i].ino == st.st_ino)
            return b->rtseen[i].runtime;
    if (b->nrtseen == b->caprtseen) {
        size_t c = b->caprtseen ? b->caprtseen * 2 : 64;
        lib *nv = realloc(b->rtseen, c * sizeof *nv);
        if (!nv)
            return 0;
        b->rtseen = nv;
        b->caprtseen = c;
    }
    int found = elfsym_lookup(path, "cudaMalloc", &minva) != 0;
    b->rtseen[b->nrtseen++] = (lib){ st.st_dev, st.st_ino, found };
    return found;
}

static void scan_pid(ebpf *b, int pid)
{
    size_t len;
    char *text = read_maps(pid, &len);
    if (!text)
        return;
    const char *want = b->s->o->lib;
    size_t wl = strlen(want);
    int maps_driver = 0, maps_cudart = 0;
    char *exec[512]; /* other executable file mappings */
    size_t nexec = 0;
    for (char *line = text, *nl; line && *line; line = nl) {
        nl = strchr(line, '\n');
        if (nl)
            *nl++ = 0;
        char *p = strchr(line, '/');
        if (!p || (!strstr(line, " r-xp ") && !strstr(line, " r--p ")))
            continue;
        const char *base = strrchr(p, '/') + 1;
        if (!strncmp(base, "libcudart.so", 12))
            maps_cudart = 1;
        if (strncmp(base, want, wl)) {
            if (strstr(line, " r-xp ") && nexec < 512)
                exec[nexec++] = p;
            continue;
        }
        maps_driver = 1;
        attach_lib(b, pid, p, 0);
    }
    /* no libcudart.so: the runtime may be linked in statically, where
     * driver probes can miss calls (it reaches the driver through
     * cuGetProcAddress); probe its cudaMalloc* too */
    for (size_t i = 0; maps_driver && !maps_cudart && i < nexec; i++)
        if (static_cudart(b, pid, exec[i]))
            attach_lib(b, pid, exec[i], 1);
    free(text);
    /* A process that maps the driver: keep its mappings now, it may be
     * gone by the time its first event is read. */
    if (maps_driver) {
        mp_proc *pr = mp_agg_proc(&b->s->agg, (uint32_t)pid);
        if (pr && (!pr->nmaps || !pr->py_checked) &&
            (text = read_maps(pid, &len))) {
            if (!pr->nmaps)
                mp_agg_maps(&b->s->agg, (uint32_t)pid, text, len);
            if (!pr->py_checked)
                python_setup(b, pr, text);
            free(text);
        }
    }
}

static void scan(ebpf *b)
{
    const memprof_opts *o = b->s->o;
    b->scans++;
    if (o->mode == MEMPROF_PIDS) {
        for (size_t i = 0; i < o->npids; i++)
            scan_pid(b, o->pids[i]);
        return;
    }
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct dirent *de;
    int self = getpid();
    while ((de = readdir(d))) {
        if (!isdigit((unsigned char)de->d_name[0]))
            continue;
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid == self || !wanted_pid(b, (int)pid))
            continue;
        scan_pid(b, (int)pid);
    }
    closedir(d);
}

/* Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or
 * /sys/fs/cgroup/unified on hybrid systems). */
static void cgroup2_root(char *out, size_t cap)
{
    char line[4352], dev[256], mnt[1024], type[64];
    FILE *f = fopen("/proc/self/mounts", "r");
    snprintf(out, cap, "/sys/fs/cgroup");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "%255s %1023s %63s", dev, mnt, type) == 3 &&
            !strcmp(type, "cgroup2")) {
            snprintf(out, cap, "%s", mnt);
            break;
        }
    if (f)
        fclose(f);
}

/* --verbose: the kernel ids of this run's programs and links, so a test
 * can check that exactly these are gone afterwards */
static void print_link_ids(ebpf *b, size_t from)
{
    gbuf ids = GBUF_INIT(64 * 1024);
    for (size_t i = from; i < b->nlinks; i++) {
        struct bpf_link_info info;
        uint32_t len = sizeof info;
        memset(&info, 0, sizeof info);
        if (!bpf_obj_get_info_by_fd(bpf_link__fd(b->links[i]), &info, &len))
            gbuf_addf(&ids, " %u", info.id);
    }
    glog_info("ebpf", "BPF link ids%s", gbuf_str(&ids));
    gbuf_release(&ids);
}

static void print_ids(ebpf *b)
{
    struct bpf_program *progs[] = { b->skel->progs.mp_entry,
                                    b->skel->progs.mp_return,
                                    b->skel->progs.mp_exit };
    gbuf ids = GBUF_INIT(1024);
    for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++) {
        struct bpf_prog_info info;
        uint32_t len = sizeof info;
        memset(&info, 0, sizeof info);
        if (!bpf_obj_get_info_by_fd(bpf_program__fd(progs[i]), &info, &len))
            gbuf_addf(&ids, " %u", info.id);
    }
    glog_info("ebpf", "BPF program ids%s", gbuf_str(&ids));
    gbuf_release(&ids);
}

static int targets_alive(ebpf *b)
{
    const memprof_opts *o = b->s->o;
    for (size_t i = 0; i < o->npids; i++)
        if (!kill(o->pids[i], 0) || errno == EPERM)
            return 1;
    return 0;
}

static void teardown(ebpf *b)
{
    for (size_t i = 0; i < b->nlinks; i++)
        bpf_link__destroy(b->links[i]);
    free(b->links);
    ring_buffer__free(b->rb);
    memprof_bpf__destroy(b->skel);
    mp_dwarf_free(b->dwarf);
    free(b->ustack);
    free(b->rtseen);
}

int mp_ebpf_run(mp_session *s)
{
    const memprof_opts *o = s->o;
    ebpf b;
    int rc = 1, cgfd = -1;
    memset(&b, 0, sizeof b);
    b.s = s;
    verbose_print = o->verbose;
    libbpf_set_print(print_fn);
    b.skel = memprof_bpf__open();
    if (!b.skel) {
        explain_denied(errno);
        return 1;
    }
    b.skel->rodata->filter_mode = o->mode == MEMPROF_PIDS     ? 1
                                  : o->mode == MEMPROF_CGROUP ? 2
                                                              : 0;
    if (o->dwarf) {
        b.skel->rodata->dwarf = 1;
        /* stack copies are 16 KiB: room for about 4000 of them */
        bpf_map__set_max_entries(b.skel->maps.events, 64u << 20);
        b.dwarf = mp_dwarf_new();
        b.ustack = calloc(MP_USTACK_SLOTS, sizeof *b.ustack);
        if (!b.dwarf || !b.ustack) {
            glog_error("ebpf", "out of memory");
            goto out;
        }
    }
    if (memprof_bpf__load(b.skel)) {
        explain_denied(errno);
        goto out;
    }
    if (o->mode == MEMPROF_PIDS) {
        for (size_t i = 0; i < o->npids; i++) {
            uint32_t pid = (uint32_t)o->pids[i];
            uint8_t one = 1;
            bpf_map__update_elem(b.skel->maps.targets, &pid, sizeof pid, &one,
                                 1, BPF_ANY);
        }
    } else if (o->mode == MEMPROF_CGROUP) {
        char root[1024], full[4200];
        cgroup2_root(root, sizeof root);
        const char *cg = o->cgroup;
        size_t rl = strlen(root);
        if (!strncmp(cg, root, rl) && (cg[rl] == '/' || !cg[rl]))
            cg += rl;
        snprintf(b.cgroup_rel, sizeof b.cgroup_rel, "%s%s",
                 *cg == '/' ? "" : "/", cg);
        snprintf(full, sizeof full, "%s%s", root,
                 strcmp(b.cgroup_rel, "/") ? b.cgroup_rel : "");
        cgfd = open(full, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        uint32_t k = 0;
        if (cgfd < 0 || bpf_map__update_elem(b.skel->maps.cgrp, &k, sizeof k,
                                             &cgfd, sizeof cgfd, BPF_ANY)) {
            glog_error("ebpf",
                       "cgroup %s: %s (a cgroup v2 directory "
                       "is needed)",
                       full, strerror(errno));
            goto out;
        }
    }
    if (memprof_bpf__attach(b.skel)) { /* the exit tracepoint */
        glog_error("ebpf", "attach: %s", strerror(errno));
        goto out;
    }
    b.rb =
        ring_buffer__new(bpf_map__fd(b.skel->maps.events), on_event, &b, NULL);
    if (!b.rb) {
        glog_error("ebpf", "ring buffer: %s", strerror(errno));
        goto out;
    }
    scan(&b);
    if (o->verbose) {
        glog_info("ebpf", "%zu libraries, %zu probes", b.nlibs, b.nlinks);
        print_ids(&b);
    }
    uint64_t last_scan = mp_now_mono();
    while (!mp_stop) {
        int r = ring_buffer__poll(b.rb, 100);
        if (r < 0 && r != -EINTR) {
            glog_error("ebpf", "ring buffer: %s", strerror(-r));
            goto out;
        }
        uint64_t now = mp_now_mono();
        if (now - last_scan >= 1000000000ULL) {
            scan(&b);
            last_scan = now;
        }
        if (mp_session_tick(s))
            break;
        if (o->mode == MEMPROF_PIDS && !targets_alive(&b))
            break;
    }
    ring_buffer__consume(b.rb);
    uint32_t k = 0;
    uint64_t lost = 0;
    if (!bpf_map__lookup_elem(b.skel->maps.lost, &k, sizeof k, &lost,
                              sizeof lost, 0))
        s->agg.lost = lost;
    rc = 0;
out:
    teardown(&b);
    if (cgfd >= 0)
        close(cgfd);
    return rc;
}
