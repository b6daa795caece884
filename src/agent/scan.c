/*
 * scan.c - discovery: which gpufl log files the folders hold, which of them
 * the agent already knows, and which the cursor remembers.
 *
 * A file's identity is (device, inode) plus its head (its first bytes: a
 * session line naming the session, the file's index and the stream's
 * seq, so no two files of a stream share it).  Neither alone will do: the
 * client renames the live file once (.log -> .log.N) and may compress it
 * (.log.N -> .log.N.zst, a new inode, the same head), and when keep-K
 * pruning deletes a file the filesystem may hand its inode to the next
 * live file.  An inode is proof only while the agent holds the file open
 * (it cannot be recycled then); a closed file (finished, or not reached
 * yet) found under a new name, or under its own name after inotify saw
 * that name created, is checked: a stat that still agrees, or else its
 * head.  Unchanged names of closed files cost no system call, so a scan of
 * a folder of finished files stays cheap.
 *
 * Names that are not regular files (a FIFO would block open(), a symlink
 * would ship whatever it points to) are refused with a warning, once per
 * name.
 */
#include "agent/agent_int.h"
#include "common/log.h"

#include <gpufl/gpufl.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/*
 * Are the two heads one file's?  They must agree up to the shorter one,
 * and that common part must reach past what tells files apart: the end of
 * the first line, or CURSOR_FP_MAX bytes (the session line's seq and time
 * come in its first 200 bytes).  A head cut inside its first line (a file
 * just created) proves nothing.
 */
static int same_head(const unsigned char *a, uint32_t al,
                     const unsigned char *b, uint32_t bl)
{
    uint32_t m = al < bl ? al : bl;
    return m > 0 && (m == CURSOR_FP_MAX || memchr(a, '\n', m) != NULL) &&
           memcmp(a, b, m) == 0;
}

/* Files of one stream together, oldest first.  Streams are ordered by
 * their key's address: any order of streams will do (they are served
 * round-robin), and this one needs no string compare. */
static int file_cmp(const void *pa, const void *pb)
{
    const agent_file *a = *(agent_file *const *)pa;
    const agent_file *b = *(agent_file *const *)pb;

    if (a->k != b->k)
        return (uintptr_t)a->k < (uintptr_t)b->k ? -1 : 1;
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    /* two live files of one stream: the one renamed away that no scan
     * has seen under its new name yet, and its successor; the older
     * comes first */
    return a->disc < b->disc ? -1 : a->disc > b->disc;
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
    gbuf_init(&f->batch, agent_batch_max(c->cfg));
    f->disc = ++c->disc_seq;
    c->files[c->nfiles++] = f;
    return f;
}

static void set_name(agent_ctx *c, agent_file *f, const char *dir,
                     const char *name, uint32_t n, int zst, uint64_t size)
{
    char buf[4600];

    f->seen = 1;
    f->missed = 0;
    f->touched = 0;
    f->gone = 0;
    /* most scans find the same name: no allocation then */
    if (!f->path || strcmp(f->name, name) != 0) {
        char *p;
        snprintf(buf, sizeof buf, "%s/%s", dir, name);
        p = strdup(buf);
        if (!p)
            return; /* keeps the old name; the next scan tries again */
        free(f->path);
        f->path = p;
        f->name = p + strlen(dir) + 1;
        c->scan_changed = 1;
    }
    f->zst = zst;
    if (n != AGENT_LIVE && !f->final) {
        /* renamed: one more read picks up the writer's last flush */
        f->final = 1;
        f->idle = 0;
        c->scan_changed = 1;
    }
    f->n = n;
    if (!zst && size != UINT64_MAX)
        f->size = size;
    else if (zst && !f->final_size && f->size < size && size != UINT64_MAX)
        f->size = size;
}

static agent_skip *skip_find(agent_ctx *c, int fi, const char *name,
                             uint64_t ino)
{
    uint64_t fp = agent_fp(name, strlen(name));

    for (size_t i = 0; i < c->nskip; i++) {
        agent_skip *s = &c->skip[i];
        if (s->folder == fi && s->ino == ino && s->name_fp == fp) {
            s->seen = 1;
            return s;
        }
    }
    return NULL;
}

/* Warns once about a name that is not a regular file and remembers it,
 * so later scans pass it by without a system call. */
static void skip_name(agent_ctx *c, int fi, const char *dir, const char *name,
                      uint64_t ino, const char *what)
{
    if (skip_find(c, fi, name, ino))
        return;
    c->st.skipped++;
    if (c->nskip < AGENT_SKIP_MAX) {
        agent_skip *s = &c->skip[c->nskip++];
        s->folder = fi;
        s->ino = ino;
        s->name_fp = agent_fp(name, strlen(name));
        s->seen = 1;
    }
    if (!c->quiet)
        glog_warn("scan",
                  "%s/%s is %s, not a regular file; not read "
                  "(logs are regular files)",
                  dir, name, what);
}

static const char *dtype_name(unsigned char t)
{
    switch (t) {
    case DT_LNK: return "a symbolic link (not followed)";
    case DT_FIFO: return "a FIFO";
    case DT_DIR: return "a directory";
    case DT_SOCK: return "a socket";
    case DT_CHR:
    case DT_BLK: return "a device";
    default: return "not a regular file";
    }
}

/* Does f's head reach past its first line (or fill CURSOR_FP_MAX)? */
static int head_whole(const agent_file *f)
{
    return f->head_len == CURSOR_FP_MAX || memchr(f->head, '\n', f->head_len);
}

/* A closed file found by its inode: is this name still that file?
 * 1 yes, 0 no (a recycled inode), -1 the name is gone. */
static int verify_closed(agent_ctx *c, agent_file *f, int dfd, const char *dir,
                         const char *name)
{
    struct stat st;
    agent_file tmp;
    char path[4600];
    char *line;
    size_t ll = 0;
    int rc = -1;

    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -1;
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_ino != f->ino)
        return 0;
    if (!strcmp(name, f->name) && (uint64_t)st.st_size == f->vs_size &&
        (uint64_t)st.st_mtim.tv_sec * 1000000000u +
                (uint64_t)st.st_mtim.tv_nsec ==
            f->vs_mtime &&
        (uint64_t)st.st_ctim.tv_sec * 1000000000u +
                (uint64_t)st.st_ctim.tv_nsec ==
            f->vs_ctime)
        return 1;
    line = malloc(AGENT_FIRST_LINE_MAX);
    if (!line)
        return -1;
    memset(&tmp, 0, sizeof tmp);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    tmp.path = path;
    tmp.zst = f->zst;
    if (agent_file_head(&tmp, line, AGENT_FIRST_LINE_MAX, &ll))
        goto out;
    if (same_head(f->head, f->head_len, tmp.head, tmp.head_len)) {
        if (tmp.head_len > f->head_len) {
            memcpy(f->head, tmp.head, tmp.head_len);
            f->head_len = tmp.head_len;
        }
    } else if (f->consumed == 0 && !f->done && !head_whole(f)) {
        /* nothing of f was read and its head was cut (it was found just
         * created): this is f renamed, or a new file on the inode of f
         * deleted unread - then its loss shows as a hole in the stream's
         * file indexes.  Either way f becomes this file. */
        memcpy(f->head, tmp.head, tmp.head_len);
        f->head_len = tmp.head_len;
        f->fidx_known = f->hseq_known = 0;
        f->hold_scan = 0;
        agent_gap_head_line(c, f, line, ll);
    } else {
        /* another file on f's inode: f was deleted */
        f->gone = 1;
        rc = 0;
        goto out;
    }
    f->vs_size = tmp.vs_size;
    f->vs_mtime = tmp.vs_mtime;
    f->vs_ctime = tmp.vs_ctime;
    rc = 1;
out:
    free(line);
    return rc;
}

/* Do the bytes before a cursor entry's offset still read as they did?
 * The last AGENT_MARK of them become f's marker for the checks while it
 * is followed (ship.c, truncated()).  A plain file only. */
static int mark_agrees(agent_file *f, const agent_centry *e)
{
    unsigned char
        b[CURSOR_MARK_MAX > AGENT_MARK ? CURSOR_MARK_MAX : AGENT_MARK];
    uint32_t want = e->mark_len > AGENT_MARK ? e->mark_len : AGENT_MARK;
    struct stat st;
    ssize_t n;
    int fd = agent_open_log(f->path, &st);

    if (want > e->off)
        want = (uint32_t)e->off;
    if (fd < 0)
        return 1; /* gone or unreadable: the open will tell */
    do {
        n = pread(fd, b, want, (off_t)(e->off - want));
    } while (n < 0 && errno == EINTR);
    close(fd);
    if (n != (ssize_t)want)
        return !e->mark_len;
    if (e->mark_len && agent_fp(b + want - e->mark_len, e->mark_len) != e->mark)
        return 0;
    f->mark_len = want < AGENT_MARK ? want : AGENT_MARK;
    memcpy(f->mark, b + want - f->mark_len, f->mark_len);
    return 1;
}

/* The cursor entry of a file found for the first time, if any. */
static void resume(agent_ctx *c, agent_file *f, uint64_t keyfp)
{
    for (size_t i = 0; i < c->pend.n; i++) {
        agent_centry *e = &c->pend.e[i];
        if (c->pend_keyfp[i] != keyfp || e->fp_len > f->head_len ||
            (e->fp_len < CURSOR_FP_MAX && !memchr(f->head, '\n', e->fp_len)) ||
            e->fp != agent_fp(f->head, e->fp_len))
            continue;
        /* same head; a plain file shorter than the shipped offset was
         * truncated and rewritten while we were away, and one whose bytes
         * before the offset differ (the offset marker) was rewritten */
        if (!f->zst && f->size < e->off) {
            if (!c->quiet)
                glog_warn("scan",
                          "%s is shorter than its shipped offset "
                          "(truncated); reading it again from the start",
                          f->path);
            c->st.truncations++;
        } else if (!f->zst && e->off && !mark_agrees(f, e)) {
            if (!c->quiet)
                glog_warn("scan",
                          "%s: the bytes before its shipped offset "
                          "changed (rewritten); reading it again from the "
                          "start",
                          f->path);
            c->st.truncations++;
        } else {
            f->acked = f->consumed = e->off;
            f->amark = e->mark;
            f->amark_len = e->mark_len;
            f->done = (e->flags & CURSOR_F_DONE) != 0;
            f->archived = (e->flags & CURSOR_F_ARCHIVED) != 0;
            if (f->done)
                f->final = 1;
            if (f->k && !(f->k->flags & CURSOR_K_FILE))
                f->k->history = 1;
        }
        c->pend.e[i] = c->pend.e[c->pend.n - 1];
        c->pend_keyfp[i] = c->pend_keyfp[c->pend.n - 1];
        c->pend.n--;
        break;
    }
}

/* A name no known file answers to: a new file, or the compressed copy of
 * a known one (same head, new inode). */
static void scan_new(agent_ctx *c, int fi, const char *dir, const char *name,
                     const char *key, int stream, uint32_t n, int zst,
                     uint64_t ino)
{
    agent_file tmp, *f;
    agent_key *k;
    char tpath[4600];
    char *line = NULL;
    size_t ll = 0;
    int rc;

    memset(&tmp, 0, sizeof tmp);
    snprintf(tpath, sizeof tpath, "%s/%s", dir, name);
    tmp.path = tpath;
    tmp.zst = zst;
    line = malloc(AGENT_FIRST_LINE_MAX);
    if (!line)
        return;
    rc = agent_file_head(&tmp, line, AGENT_FIRST_LINE_MAX, &ll);
    if (rc == GPUFL_EINVAL) {
        skip_name(c, fi, dir, name, ino, "not a regular file");
        goto out;
    }
    if (rc)
        goto out; /* vanished or unreadable: the next scan will tell */
    k = agent_key_get(c, fi, key, stream);
    if (!k)
        goto out;
    for (size_t i = 0; i < c->nfiles; i++) {
        f = c->files[i];
        if (f->k != k)
            continue;
        if ((f->fd >= 0 && f->ino == tmp.ino && f->dev == tmp.dev) ||
            same_head(f->head, f->head_len, tmp.head, tmp.head_len)) {
            set_name(c, f, dir, name, n, zst, tmp.size);
            if (f->fd < 0 && f->zst == zst) {
                f->dev = tmp.dev;
                f->ino = tmp.ino;
                f->vs_size = tmp.vs_size;
                f->vs_mtime = tmp.vs_mtime;
                f->vs_ctime = tmp.vs_ctime;
            }
            if (tmp.head_len > f->head_len) {
                memcpy(f->head, tmp.head, tmp.head_len);
                f->head_len = tmp.head_len;
            }
            goto out;
        }
    }
    f = file_new(c);
    if (!f)
        goto out;
    f->k = k;
    f->folder = fi;
    f->stream = stream;
    f->dev = tmp.dev;
    f->ino = tmp.ino;
    f->vs_size = tmp.vs_size;
    f->vs_mtime = tmp.vs_mtime;
    f->vs_ctime = tmp.vs_ctime;
    f->size = tmp.size;
    memcpy(f->head, tmp.head, tmp.head_len);
    f->head_len = tmp.head_len;
    c->scan_changed = 1;
    set_name(c, f, dir, name, n, zst, tmp.size);
    if (!f->path) { /* out of memory: forget it until the next scan */
        c->nfiles--;
        agent_file_free(f);
        goto out;
    }
    k->nfiles++;
    agent_gap_head_line(c, f, line, ll);
    if (c->pend.n)
        resume(c, f, agent_fp(key, strlen(key)));
out:
    free(line);
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

/* Known files by inode, so a scan of N names costs N log N, not N^2.  Of
 * several files on one inode (a recycled one, until the old file is
 * forgotten), the one already known under this name, else an open one. */
static agent_file *ix_find(const ino_ix *ix, size_t n, uint64_t ino, int fi,
                           const char *key, int zst, const char *name)
{
    size_t lo = 0, hi = n;
    agent_file *best = NULL;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ix[mid].ino < ino)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < n && ix[lo].ino == ino; lo++) {
        agent_file *f = ix[lo].f;
        if (f->folder != fi || f->zst != zst || strcmp(f->k->name, key))
            continue;
        if (!strcmp(f->name, name))
            return f;
        if (!best || (best->fd < 0 && f->fd >= 0))
            best = f;
    }
    return best;
}

/* The inode index, made the first time a scan needs it: a scan of a
 * folder whose names did not change needs none. */
typedef struct scan_ix {
    ino_ix *ix;
    size_t n;
    int made, failed;
} scan_ix;

static int ix_make(agent_ctx *c, scan_ix *x)
{
    if (x->made)
        return x->failed ? -1 : 0;
    x->made = 1;
    x->n = c->nfiles;
    x->ix = malloc((x->n ? x->n : 1) * sizeof *x->ix);
    if (!x->ix) {
        x->failed = 1;
        return -1;
    }
    for (size_t i = 0; i < x->n; i++) {
        x->ix[i].ino = c->files[i]->ino;
        x->ix[i].f = c->files[i];
    }
    qsort(x->ix, x->n, sizeof *x->ix, ix_cmp);
    return 0;
}

static int scan_folder(agent_ctx *c, int fi, scan_ix *x)
{
    const char *dir = c->cfg->folder[fi];
    DIR *d = opendir(dir);
    struct dirent *de;
    int dfd, rc = 0;
    /* without inotify nothing says a name was re-created: check the
     * closed files' stats on every scan */
    int suspect_all = c->inotify_fd < 0 || c->watch_lost;

    if (!d) {
        if (!c->quiet)
            glog_error("scan", "cannot read folder %s: %s", dir,
                       strerror(errno));
        return GPUFL_EIO;
    }
    dfd = dirfd(d);
    while ((de = readdir(d)) != NULL) {
        char key[CURSOR_NAME_MAX + 1];
        int stream, zst, r;
        uint32_t n;
        agent_file *f;

        /* the usual entry: a name the agent knows, on the same inode, and
         * nothing says it was re-created (or the file is held open) */
        f = agent_watch_find(c, fi, de->d_name);
        if (f && f->ino == (uint64_t)de->d_ino &&
            (f->fd >= 0 || (!f->touched && !suspect_all))) {
            f->seen = 1;
            f->missed = 0;
            f->gone = 0;
            continue;
        }
        if (agent_name_parse(de->d_name, key, sizeof key, &stream, &n, &zst))
            continue;
        if (de->d_type != DT_REG && de->d_type != DT_UNKNOWN) {
            skip_name(c, fi, dir, de->d_name, (uint64_t)de->d_ino,
                      dtype_name(de->d_type));
            continue;
        }
        if (c->nskip && skip_find(c, fi, de->d_name, (uint64_t)de->d_ino))
            continue;
        if (ix_make(c, x)) {
            rc = GPUFL_ENOMEM;
            break;
        }
        /* d_ino names the inode without a stat per entry; files of one
         * folder share its device */
        f = ix_find(x->ix, x->n, (uint64_t)de->d_ino, fi, key, zst, de->d_name);
        if (f) {
            if (f->fd >= 0 ||
                (!strcmp(f->name, de->d_name) && !f->touched && !suspect_all))
                r = 1;
            else
                r = verify_closed(c, f, dfd, dir, de->d_name);
            if (r > 0) {
                set_name(c, f, dir, de->d_name, n, zst,
                         f->fd < 0 && !zst ? f->vs_size : UINT64_MAX);
                continue;
            }
            if (r < 0)
                continue;
        }
        scan_new(c, fi, dir, de->d_name, key, stream, n, zst,
                 (uint64_t)de->d_ino);
    }
    closedir(d);
    return rc;
}

int agent_scan_pending_init(agent_ctx *c)
{
    free(c->pend_keyfp);
    c->pend_keyfp = malloc((c->pend.n ? c->pend.n : 1) * sizeof *c->pend_keyfp);
    if (!c->pend_keyfp)
        return GPUFL_ENOMEM;
    for (size_t i = 0; i < c->pend.n; i++) {
        char key[CURSOR_NAME_MAX + 1];
        int stream, zst;
        uint32_t n;
        c->pend_keyfp[i] = agent_name_parse(c->pend.e[i].name, key, sizeof key,
                                            &stream, &n, &zst)
                               ? 0
                               : agent_fp(key, strlen(key));
    }
    return 0;
}

void agent_scan_pending_done(agent_ctx *c)
{
    for (size_t i = 0; i < c->pend.n; i++) {
        agent_centry *e = &c->pend.e[i];
        char key[CURSOR_NAME_MAX + 1];
        int stream, zst;
        uint32_t n;
        agent_key *k = NULL;

        if (e->flags & CURSOR_F_DONE)
            continue;
        if (agent_name_parse(e->name, key, sizeof key, &stream, &n, &zst))
            continue;
        for (size_t fi = 0; fi < c->cfg->nfolder && !k; fi++)
            k = agent_key_find(c, (int)fi, key);
        if (!c->quiet) {
            glog_field fl[2] = { GLOG_STR("file", e->name),
                                 GLOG_NUM("shipped_bytes", e->off) };
            glog_fields(GLOG_ERROR, "scan", fl, 2,
                        "LOST: %s (shipped up to byte %llu) was deleted "
                        "while the agent was not running; the rest of it "
                        "was never shipped",
                        e->name, (unsigned long long)e->off);
        }
        c->st.lost_files++;
        c->lost_gone[stream]++;
        if (k) {
            k->lost_files++;
            k->vanished = 1;
        }
        c->cursor_dirty = 1;
    }
    c->pend.n = 0;
    c->pend.nk = 0;
}

int agent_scan(agent_ctx *c)
{
    size_t keep = 0;
    scan_ix x = { NULL, 0, 0, 0 };
    int rc = 0, again = 0;

    for (size_t i = 0; i < c->nfiles; i++)
        c->files[i]->seen = 0;
    for (size_t i = 0; i < c->nskip; i++)
        c->skip[i].seen = 0;
    c->scan_changed = 0;
    for (size_t fi = 0; fi < c->cfg->nfolder; fi++) {
        int r = scan_folder(c, (int)fi, &x);
        if (r)
            rc = r;
    }
    free(x.ix);
    for (size_t i = 0; i < c->nfiles; i++) {
        agent_file *f = c->files[i];
        if (f->seen || rc) {
            c->files[keep++] = f;
        } else if (f->fd >= 0 && !f->done) {
            /* deleted while open: the descriptor still reads it all */
            if (!f->final) {
                f->idle = 0;
                c->scan_changed = 1;
            }
            f->final = 1;
            c->files[keep++] = f;
        } else if (!f->gone && ++f->missed < 3) {
            /* readdir may miss a name renamed in during the scan (the
             * client's .zst): believe a disappearance only when repeated,
             * soon */
            c->files[keep++] = f;
            again = 1;
        } else {
            /* a file never read whose index is unknown (its head was
             * empty), or that is known to be gone (its inode or name
             * holds another file), is counted by the hole it leaves in
             * its stream's file indexes instead: that check looks for it
             * by name first, this one could not */
            if (!f->done && f->consumed < f->size &&
                (f->consumed ||
                 (!f->gone && (f->fidx_known || f->n != AGENT_LIVE))))
                agent_gap_vanished(c, f, f->size - f->consumed);
            c->cursor_dirty = 1;
            c->scan_changed = 1;
            if (f->k)
                f->k->nfiles--;
            agent_file_free(f);
        }
    }
    c->nfiles = keep;
    if (!rc) {
        size_t sk = 0;
        /* what the cursor names and the folders no longer hold */
        agent_scan_pending_done(c);
        for (size_t i = 0; i < c->nskip; i++)
            if (c->skip[i].seen)
                c->skip[sk++] = c->skip[i];
        c->nskip = sk;
        agent_keys_prune(c);
    }
    if (c->scan_changed) {
        /* files is NULL while nothing was ever found: qsort needs one */
        if (c->nfiles > 1)
            qsort(c->files, c->nfiles, sizeof *c->files, file_cmp);
        agent_watch_index(c);
        c->files_gen++;
    }
    c->watch_lost = 0;
    c->scanned_ms = agent_now_ms();
    c->scan_needed = again;
    if (!rc)
        c->nscans++;
    return rc;
}
