/*
 * watch.c - inotify on the folders: which names changed (so a scan is
 * due) and which files were written (so they are read now, and the idle
 * ones that were not cost nothing until the poll timer).
 *
 * Events carry names, not inodes; a map (folder, name) -> file, rebuilt
 * after every scan (the only place names change), turns an IN_MODIFY into
 * "this file is dirty" in O(1).  A name created or moved in marks the
 * file known under it "touched": the next scan checks that it is still
 * the file the agent knew (inodes are recycled).  When the event queue
 * overflows, every closed file is checked and every idle file visited.
 * Folders on NFS (and other network file systems) give no events for
 * remote writers: their idle files are visited every --poll-ms; those of
 * local folders watched by inotify only every AGENT_IDLE_SLOW polls, as a
 * safety net.
 */
#include "agent/agent_int.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/vfs.h>
#include <unistd.h>

static uint64_t name_hash(int folder, const char *name)
{
    return agent_fp(name, strlen(name)) ^
           ((uint64_t)folder * 0x9e3779b97f4a7c15ull);
}

void agent_watch_index(agent_ctx *c)
{
    size_t cap = 64;

    while (cap < c->nfiles * 2)
        cap *= 2;
    if (cap != c->nmap_cap) {
        agent_file **m = calloc(cap, sizeof *m);
        if (!m)
            return; /* the old map stays valid for names it still has */
        free(c->nmap);
        c->nmap = m;
        c->nmap_cap = cap;
    } else {
        memset(c->nmap, 0, cap * sizeof *c->nmap);
    }
    for (size_t i = 0; i < c->nfiles; i++) {
        agent_file *f = c->files[i];
        size_t j = (size_t)name_hash(f->folder, f->name) & (cap - 1);
        while (c->nmap[j])
            j = (j + 1) & (cap - 1);
        c->nmap[j] = f;
    }
}

agent_file *agent_watch_find(const agent_ctx *c, int folder, const char *name)
{
    size_t j;

    if (!c->nmap_cap)
        return NULL;
    j = (size_t)name_hash(folder, name) & (c->nmap_cap - 1);
    for (; c->nmap[j]; j = (j + 1) & (c->nmap_cap - 1)) {
        agent_file *f = c->nmap[j];
        if (f->folder == folder && !strcmp(f->name, name))
            return f;
    }
    return NULL;
}

/* A file system where other machines write: inotify sees only this
 * machine's writes there, so the poll timer is the only news of growth.
 * (NFS, SMB/CIFS, FUSE, 9P, Ceph, AFS, Coda, GFS2, OCFS2, Lustre,
 * OrangeFS.) */
static int remote_fs(const char *dir)
{
    static const unsigned long magic[] = { 0x6969,     0x517B,     0xFF534D42,
                                           0xFE534D42, 0x65735546, 0x01021997,
                                           0x00c36400, 0x5346414F, 0x6B414653,
                                           0x73757245, 0x01161970, 0x7461636f,
                                           0x0BD00BD0, 0x13661366 };
    struct statfs sf;

    if (statfs(dir, &sf) != 0)
        return 1; /* unknown: poll as for NFS */
    for (size_t i = 0; i < sizeof magic / sizeof magic[0]; i++)
        if ((unsigned long)sf.f_type == magic[i])
            return 1;
    return 0;
}

void agent_watch_kinds(agent_ctx *c)
{
    c->any_remote = 0;
    for (size_t i = 0; i < c->cfg->nfolder; i++) {
        c->remote[i] = c->inotify_fd < 0 || remote_fs(c->cfg->folder[i]);
        c->any_remote |= c->remote[i];
    }
}

int agent_watch_open(agent_ctx *c)
{
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

    c->inotify_fd = -1;
    if (fd < 0)
        return -1;
    for (size_t i = 0; i < c->cfg->nfolder; i++) {
        c->wd[i] =
            inotify_add_watch(fd, c->cfg->folder[i],
                              IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM |
                                  IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE);
        if (c->wd[i] < 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
    }
    c->inotify_fd = fd;
    return 0;
}

void agent_watch_close(agent_ctx *c)
{
    if (c->inotify_fd >= 0)
        close(c->inotify_fd);
    c->inotify_fd = -1;
    free(c->nmap);
    c->nmap = NULL;
    c->nmap_cap = 0;
}

static int folder_of(const agent_ctx *c, int wd)
{
    for (size_t i = 0; i < c->cfg->nfolder; i++)
        if (c->wd[i] == wd)
            return (int)i;
    return -1;
}

static void on_event(agent_ctx *c, const struct inotify_event *ev)
{
    int fi;
    agent_file *f;

    if (ev->mask & IN_Q_OVERFLOW) {
        c->scan_needed = 1;
        c->watch_lost = 1;
        c->visit_all = 1;
        return;
    }
    if (ev->mask & (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE))
        c->scan_needed = 1;
    if (!ev->len || (fi = folder_of(c, ev->wd)) < 0)
        return;
    f = agent_watch_find(c, fi, ev->name);
    if (!f)
        return;
    if (ev->mask & (IN_MODIFY | IN_CLOSE_WRITE)) {
        f->dirty = 1;
        if (f->idle)
            agent_run_wake(c, f);
    }
    if (ev->mask & (IN_CREATE | IN_MOVED_TO))
        f->touched = 1;
}

void agent_watch_wait(agent_ctx *c, uint64_t ms)
{
    struct pollfd p;
    char buf[16384] __attribute__((aligned(8)));
    ssize_t r;

    if (c->inotify_fd < 0) {
        poll(NULL, 0, (int)ms);
        c->scan_needed = 1;
        return;
    }
    p.fd = c->inotify_fd;
    p.events = POLLIN;
    if (poll(&p, 1, (int)ms) <= 0)
        return;
    while ((r = read(c->inotify_fd, buf, sizeof buf)) > 0) {
        for (char *q = buf; q < buf + r;) {
            const struct inotify_event *ev = (const void *)q;
            on_event(c, ev);
            q += sizeof *ev + ev->len;
        }
    }
}
