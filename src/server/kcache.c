/*
 * kcache.c - the bounded local folder of cold kernel blocks (kcache.h).
 *
 * The cache keeps its total in memory (counted once at open) and evicts
 * when a put would pass the cap: one scan of the folder, oldest mtime
 * first, down to KC_LOW of the cap so that scans stay rare.  A reader
 * racing an eviction either opened the file before the unlink (and reads
 * it whole) or misses; a file is never seen half written, since it only
 * gets its name by rename once complete.  Nothing here is trusted beyond
 * its length: the caller checks the bytes it is given (the block's length is
 * in its stub, and the codec checks the block itself).
 */
#include "kcache.h"

#include <gpufl/gpufl.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Eviction goes down to this share of the cap (percent). */
#define KC_LOW 90
/* Files one eviction scan considers, at most (a folder with more is
 * evicted over several puts). */
#define KC_SCAN_MAX 65536
#define KC_TMP_PREFIX ".tmp-"

struct kcache {
    pthread_mutex_t lock;
    int dfd; /* the folder, O_DIRECTORY | O_NOFOLLOW */
    uint64_t max, bytes, files, evicted, tmpn;
};

typedef struct kc_file {
    struct timespec mtime;
    uint64_t size;
    char name[KCACHE_NAME_MAX + 1];
} kc_file;

static int name_ok(const char *name)
{
    size_t n = strlen(name);
    if (!n || n > KCACHE_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              (ch >= '0' && ch <= '9') || ch == '-' || ch == '_'))
            return 0;
    }
    return 1;
}

/* The folder's files: their total, or with list the files themselves
 * (up to cap) for eviction; temporary files are removed. */
static int kc_scan(kcache *c, kc_file *list, size_t cap, size_t *n)
{
    int fd = dup(c->dfd);
    DIR *d;
    struct dirent *e;

    c->bytes = 0;
    c->files = 0;
    if (n)
        *n = 0;
    if (fd < 0 || !(d = fdopendir(fd))) {
        if (fd >= 0)
            close(fd);
        return GPUFL_EIO;
    }
    rewinddir(d);
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        if (!strncmp(e->d_name, KC_TMP_PREFIX, strlen(KC_TMP_PREFIX))) {
            /* a put that died midway (only one server owns a cache) */
            unlinkat(c->dfd, e->d_name, 0);
            continue;
        }
        if (!name_ok(e->d_name) ||
            fstatat(c->dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
            !S_ISREG(st.st_mode))
            continue;
        c->bytes += (uint64_t)st.st_size;
        c->files++;
        if (list && *n < cap) {
            kc_file *f = &list[(*n)++];
            f->mtime = st.st_mtim;
            f->size = (uint64_t)st.st_size;
            /* name_ok: at most KCACHE_NAME_MAX bytes */
            memcpy(f->name, e->d_name, strlen(e->d_name) + 1);
        }
    }
    closedir(d);
    return GPUFL_OK;
}

static int older(const void *a, const void *b)
{
    const kc_file *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec)
        return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

int kcache_open(kcache **out, const char *dir, uint64_t max_bytes, char *why,
                size_t why_cap)
{
    kcache *c;
    int rc;

    *out = NULL;
    if (mkdir(dir, 0700) && errno != EEXIST) {
        snprintf(why, why_cap, "cannot create %s: %s", dir, strerror(errno));
        return GPUFL_EIO;
    }
    if (!(c = calloc(1, sizeof(*c)))) {
        snprintf(why, why_cap, "out of memory");
        return GPUFL_ENOMEM;
    }
    c->max = max_bytes;
    c->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (c->dfd < 0) {
        snprintf(why, why_cap, "cannot open %s: %s (a folder, not a link)", dir,
                 strerror(errno));
        free(c);
        return GPUFL_EINVAL;
    }
    pthread_mutex_init(&c->lock, NULL);
    if ((rc = kc_scan(c, NULL, 0, NULL)) != 0) {
        snprintf(why, why_cap, "cannot read %s", dir);
        kcache_close(c);
        return rc;
    }
    *out = c;
    return GPUFL_OK;
}

void kcache_close(kcache *c)
{
    if (!c)
        return;
    close(c->dfd);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

int kcache_get(kcache *c, const char *name, gbuf *out)
{
    struct stat st;
    size_t got = 0;
    int fd;

    gbuf_reset(out);
    if (!name_ok(name))
        return GPUFL_ENOTFOUND;
    fd = openat(c->dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return GPUFL_ENOTFOUND;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size > out->max || gbuf_grow(out, (size_t)st.st_size)) {
        close(fd);
        gbuf_reset(out);
        return GPUFL_ENOTFOUND;
    }
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, out->p + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    if (got != (size_t)st.st_size) {
        close(fd);
        gbuf_reset(out);
        return GPUFL_ENOTFOUND;
    }
    gbuf_setlen(out, got);
    /* used now: the last to go */
    futimens(fd, NULL);
    close(fd);
    return GPUFL_OK;
}

/* Room for len more bytes: the oldest files out until the total and len
 * fit in KC_LOW of the cap.  Under c->lock. */
static void kc_evict(kcache *c, uint64_t len)
{
    uint64_t low = c->max / 100 * KC_LOW;
    kc_file *list;
    size_t n = 0;

    if (c->bytes + len <= c->max)
        return;
    list = malloc(KC_SCAN_MAX * sizeof(*list));
    if (!list || kc_scan(c, list, KC_SCAN_MAX, &n)) {
        free(list);
        return;
    }
    qsort(list, n, sizeof(*list), older);
    for (size_t i = 0; i < n && c->bytes + len > low; i++) {
        if (unlinkat(c->dfd, list[i].name, 0) == 0 || errno == ENOENT) {
            c->bytes -= list[i].size < c->bytes ? list[i].size : c->bytes;
            c->files -= c->files ? 1 : 0;
            c->evicted++;
        }
    }
    free(list);
}

int kcache_put(kcache *c, const char *name, const void *p, size_t len)
{
    char tmp[64];
    size_t off = 0;
    int fd, rc = GPUFL_EIO;

    if (!name_ok(name))
        return GPUFL_EINVAL;
    if ((uint64_t)len > c->max / 100 * KC_LOW)
        return GPUFL_ETOOBIG;
    pthread_mutex_lock(&c->lock);
    kc_evict(c, len);
    snprintf(tmp, sizeof(tmp), KC_TMP_PREFIX "%ld-%llu", (long)getpid(),
             (unsigned long long)c->tmpn++);
    fd = openat(c->dfd, tmp,
                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        goto out;
    while (off < len) {
        ssize_t w = write(fd, (const char *)p + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    if (close(fd) || off != len || renameat(c->dfd, tmp, c->dfd, name)) {
        unlinkat(c->dfd, tmp, 0);
        goto out;
    }
    /* a name put twice (two readers missed together) is counted twice
     * until the next scan: the total errs high, never over the cap */
    c->bytes += len;
    c->files++;
    rc = GPUFL_OK;
out:
    pthread_mutex_unlock(&c->lock);
    return rc;
}

void kcache_usage(kcache *c, uint64_t *bytes, uint64_t *files,
                  uint64_t *evicted)
{
    pthread_mutex_lock(&c->lock);
    *bytes = c->bytes;
    *files = c->files;
    *evicted = c->evicted;
    pthread_mutex_unlock(&c->lock);
}
