/*
 * scan.c - discovery: which gpufl log files the folders hold, which of them
 * the agent already knows (same inode, or same head after compression),
 * which the cursor remembers, and the inotify watch that says when to
 * look again.
 *
 * A scan never trusts names alone: the client renames the live file once
 * (.log -> .log.N) and may compress it (.log.N -> .log.N.zst, a new
 * inode), so a file is followed by inode while it is plain and by the
 * fingerprint of its first line(s) across compression.  Folders on NFS
 * give no inotify events for remote writers; the poll timer covers them.
 */
#include "agent/agent_int.h"

#include <gpufl/gpufl.h>

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

const char *const agent_stream_names[AGENT_NSTREAMS] = { "device", "scope",
                                                         "system" };

uint64_t agent_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int agent_name_parse(const char *name, char *key, size_t keycap, int *stream,
                     uint32_t *n, int *zst)
{
    size_t len = strlen(name), end = len;
    const char *log;
    uint64_t idx = 0;

    *zst = 0;
    *n = AGENT_LIVE;
    if (len > CURSOR_NAME_MAX)
        return -1;
    if (len > 4 && !strcmp(name + len - 4, ".zst")) {
        *zst = 1;
        end = len - 4;
    }
    /* optional .<digits> rotation index */
    {
        size_t d = end;
        while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
            d--;
        if (d < end && d > 0 && name[d - 1] == '.' && end - d <= 9 &&
            name[d] != '0') {
            for (size_t i = d; i < end; i++)
                idx = idx * 10 + (uint64_t)(name[i] - '0');
            *n = (uint32_t)idx;
            end = d - 1;
        } else if (*zst) {
            return -1; /* only rotated files are compressed */
        }
    }
    if (end < 4 || memcmp(name + end - 4, ".log", 4) != 0)
        return -1;
    log = name + end - 4;
    for (int s = 0; s < AGENT_NSTREAMS; s++) {
        size_t sl = strlen(agent_stream_names[s]);
        if ((size_t)(log - name) > sl + 1 &&
            memcmp(log - sl, agent_stream_names[s], sl) == 0 &&
            log[-(long)sl - 1] == '.') {
            size_t kl = (size_t)(log - name);
            if (kl + 1 > keycap)
                return -1;
            memcpy(key, name, kl);
            key[kl] = '\0';
            *stream = s;
            return 0;
        }
    }
    return -1;
}

/* Does the first line fit in both heads, and do they agree up to the
 * shorter one?  Then they are one file. */
static int same_head(const unsigned char *a, uint32_t al,
                     const unsigned char *b, uint32_t bl)
{
    uint32_t m = al < bl ? al : bl;
    return m > 0 && memchr(a, '\n', m) != NULL && memcmp(a, b, m) == 0;
}

static int file_cmp(const void *pa, const void *pb)
{
    const agent_file *a = *(agent_file *const *)pa;
    const agent_file *b = *(agent_file *const *)pb;
    int k = strcmp(a->key, b->key);
    if (k)
        return k;
    if (a->folder != b->folder)
        return a->folder < b->folder ? -1 : 1;
    return a->n < b->n ? -1 : a->n > b->n;
}

static agent_file *file_new(agent_ctx *c)
{
    agent_file *f;
    if (c->nfiles == AGENT_MAX_FILES)
        return NULL;
    if (c->nfiles == c->capfiles) {
        size_t cap = c->capfiles ? c->capfiles * 2 : 64;
        agent_file **g = realloc(c->files, cap * sizeof *g);
        if (!g)
            return NULL;
        c->files = g;
        c->capfiles = cap;
    }
    f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->fd = -1;
    c->files[c->nfiles++] = f;
    return f;
}

static void set_name(agent_file *f, const char *dir, const char *name,
                     uint32_t n, int zst, uint64_t dev, uint64_t ino,
                     uint64_t size)
{
    char buf[4600];

    /* most scans find the same name: no allocation then */
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    if (!f->path || strcmp(f->path, buf)) {
        char *p = strdup(buf);
        if (!p)
            return; /* keeps the old name; the next scan tries again */
        free(f->path);
        f->path = p;
    }
    snprintf(f->name, sizeof f->name, "%s", name);
    f->n = n;
    f->zst = zst;
    f->dev = dev;
    f->ino = ino;
    f->seen = 1;
    f->missed = 0;
    if (n != AGENT_LIVE)
        f->final = 1;
    if (!zst && size != UINT64_MAX)
        f->size = size;
    else if (zst && !f->final_size && f->size < size && size != UINT64_MAX)
        f->size = size;
}

/* A name in folder `fi` not known by inode: a new file, the compressed
 * copy of a known one, or one the cursor remembers. */
static void scan_new(agent_ctx *c, int fi, const char *dir, const char *name,
                     const char *key, int stream, uint32_t n, int zst)
{
    agent_file tmp, *f;

    char tpath[4600];

    memset(&tmp, 0, sizeof tmp);
    tmp.fd = -1;
    snprintf(tpath, sizeof tpath, "%s/%s", dir, name);
    tmp.path = tpath;
    tmp.zst = zst;
    if (agent_file_head(&tmp))
        return; /* vanished or unreadable: the next scan will tell */
    for (size_t i = 0; i < c->nfiles; i++) {
        f = c->files[i];
        if (f->folder != fi || strcmp(f->key, key) != 0)
            continue;
        if ((f->ino == tmp.ino && f->dev == tmp.dev && f->zst == zst) ||
            same_head(f->head, f->head_len, tmp.head, tmp.head_len)) {
            set_name(f, dir, name, n, zst, tmp.dev, tmp.ino, tmp.size);
            if (tmp.head_len > f->head_len) {
                memcpy(f->head, tmp.head, tmp.head_len);
                f->head_len = tmp.head_len;
            }
            return;
        }
    }
    f = file_new(c);
    if (!f)
        return;
    snprintf(f->key, sizeof f->key, "%s", key);
    f->folder = fi;
    f->stream = stream;
    memcpy(f->head, tmp.head, tmp.head_len);
    f->head_len = tmp.head_len;
    set_name(f, dir, name, n, zst, tmp.dev, tmp.ino, tmp.size);
    if (!f->path) { /* out of memory: forget it until the next scan */
        c->nfiles--;
        agent_file_free(f);
        return;
    }
    for (size_t i = 0; i < c->npending; i++) {
        agent_centry *e = &c->pending[i];
        char ekey[CURSOR_NAME_MAX + 1];
        int es, ez;
        uint32_t en;
        if (agent_name_parse(e->name, ekey, sizeof ekey, &es, &en, &ez) ||
            strcmp(ekey, key) != 0 || e->fp_len > f->head_len ||
            e->fp != agent_fp(f->head, e->fp_len))
            continue;
        /* same head; a plain file shorter than the shipped offset was
         * truncated and rewritten while we were away */
        if (!zst && tmp.size < e->off) {
            fprintf(stderr,
                    "gpufl-agent: %s is shorter than its shipped offset "
                    "(truncated); reading it again from the start\n",
                    f->path);
            c->st.truncations++;
        } else {
            f->acked = f->consumed = e->off;
            f->done = (e->flags & CURSOR_F_DONE) != 0;
            f->archived = (e->flags & CURSOR_F_ARCHIVED) != 0;
        }
        c->pending[i] = c->pending[--c->npending];
        break;
    }
}

typedef struct ino_ix {
    uint64_t ino;
    agent_file *f;
} ino_ix;

static int ix_cmp(const void *a, const void *b)
{
    uint64_t x = ((const ino_ix *)a)->ino, y = ((const ino_ix *)b)->ino;
    return x < y ? -1 : x > y;
}

/* Known files by inode, so a scan of N names costs N log N, not N^2. */
static agent_file *ix_find(const ino_ix *ix, size_t n, uint64_t ino, int fi,
                           const char *key, int zst)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ix[mid].ino < ino)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < n && ix[lo].ino == ino; lo++) {
        agent_file *f = ix[lo].f;
        if (f->folder == fi && f->zst == zst && !strcmp(f->key, key))
            return f;
    }
    return NULL;
}

static int scan_folder(agent_ctx *c, int fi, const ino_ix *ix, size_t nix)
{
    const char *dir = c->cfg->folder[fi];
    DIR *d = opendir(dir);
    struct dirent *de;

    if (!d) {
        fprintf(stderr, "gpufl-agent: cannot read folder %s: %s\n", dir,
                strerror(errno));
        return GPUFL_EIO;
    }
    while ((de = readdir(d)) != NULL) {
        char key[CURSOR_NAME_MAX + 1];
        int stream, zst;
        uint32_t n;
        agent_file *f;

        if (agent_name_parse(de->d_name, key, sizeof key, &stream, &n, &zst))
            continue;
        /* d_ino names the inode without a stat per entry; files of one
         * folder share its device */
        f = ix_find(ix, nix, (uint64_t)de->d_ino, fi, key, zst);
        if (f)
            set_name(f, dir, de->d_name, n, zst, f->dev, f->ino, UINT64_MAX);
        else
            scan_new(c, fi, dir, de->d_name, key, stream, n, zst);
    }
    closedir(d);
    return 0;
}

int agent_scan(agent_ctx *c)
{
    size_t keep = 0, nix = c->nfiles;
    ino_ix *ix = malloc((nix ? nix : 1) * sizeof *ix);
    int rc = 0;

    if (!ix)
        return GPUFL_ENOMEM;
    for (size_t i = 0; i < c->nfiles; i++) {
        c->files[i]->seen = 0;
        ix[i].ino = c->files[i]->ino;
        ix[i].f = c->files[i];
    }
    qsort(ix, nix, sizeof *ix, ix_cmp);
    for (size_t fi = 0; fi < c->cfg->nfolder; fi++)
        if (scan_folder(c, (int)fi, ix, nix))
            rc = GPUFL_EIO;
    free(ix);
    for (size_t i = 0; i < c->nfiles; i++) {
        agent_file *f = c->files[i];
        if (f->seen || rc) {
            c->files[keep++] = f;
        } else if (f->fd >= 0 && !f->done) {
            /* deleted while open: the descriptor still reads it all */
            f->final = 1;
            c->files[keep++] = f;
        } else if (++f->missed < 3) {
            /* readdir may miss a name renamed in during the scan (the
             * client's .zst): believe a disappearance only when repeated */
            c->files[keep++] = f;
        } else {
            if (!f->done && f->consumed < f->size) {
                fprintf(stderr,
                        "gpufl-agent: %s vanished before it was shipped "
                        "(%llu bytes unsent)\n",
                        f->path, (unsigned long long)(f->size - f->consumed));
                c->st.lost_files++;
            }
            c->cursor_dirty = 1;
            agent_file_free(f);
        }
    }
    c->nfiles = keep;
    /* what the cursor names and the folders no longer hold is forgotten */
    if (!rc)
        c->npending = 0;
    /* files is NULL while nothing was ever found: qsort needs an array */
    if (c->nfiles > 1)
        qsort(c->files, c->nfiles, sizeof *c->files, file_cmp);
    c->scanned_ms = agent_now_ms();
    c->scan_needed = 0;
    return rc;
}

int agent_watch_open(agent_ctx *c)
{
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

    c->inotify_fd = -1;
    if (fd < 0)
        return -1;
    for (size_t i = 0; i < c->cfg->nfolder; i++) {
        if (inotify_add_watch(fd, c->cfg->folder[i],
                              IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM |
                                  IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE) < 0) {
            close(fd);
            return -1;
        }
    }
    c->inotify_fd = fd;
    return 0;
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
            if (ev->mask & (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM |
                            IN_DELETE | IN_Q_OVERFLOW))
                c->scan_needed = 1;
            q += sizeof *ev + ev->len;
        }
    }
}
