/*
 * writer.c - JSONL stream files: buffering, rotation, pruning, compression
 * (see writer.h for the guarantees).
 */
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <gpufl/gpufl.h>

static _Atomic uint32_t file_gen_next = 1;

static int open_live(wstream *w)
{
    w->fd =
        open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (w->fd < 0)
        return errno == EACCES ? GPUFL_EPERM : GPUFL_EIO;
    w->file_bytes = 0;
    w->size = w->reserved = w->tried = 0;
    w->can_reserve = 1;
    w->file_gen = atomic_fetch_add(&file_gen_next, 1);
    return 0;
}

/* Space for the file to grow to `end` bytes, allocated now: 0, or -1 with
 * errno (ENOSPC, EDQUOT) when the disk has no room.  A file system that
 * cannot reserve (EOPNOTSUPP...) turns reserving off for this file. */
static int reserve(wstream *w, uint64_t end)
{
    uint64_t to;

    if (!w->can_reserve || end <= w->reserved)
        return 0;
    to = end > w->size + WRITER_RESERVE_STEP ? end
                                             : w->size + WRITER_RESERVE_STEP;
    for (;;) {
        if (to > w->tried)
            w->tried = to;
        if (fallocate(w->fd, FALLOC_FL_KEEP_SIZE, (off_t)w->reserved,
                      (off_t)(to - w->reserved)) == 0) {
            w->reserved = to;
            return 0;
        }
        if (errno == EINTR)
            continue;
        /* a step too big for what is left: just what this write needs */
        if ((errno == ENOSPC || errno == EDQUOT) && to > end) {
            to = end;
            continue;
        }
        if (errno == ENOSPC || errno == EDQUOT)
            return -1;
        w->can_reserve = 0;
        return 0;
    }
}

/* Gives back the space reserved past the end of the file (at rotation and
 * close: a finished file keeps no hidden blocks). */
static void unreserve(wstream *w)
{
    uint64_t hi = w->tried > w->reserved ? w->tried : w->reserved;
    if (w->can_reserve && hi > w->size)
        fallocate(w->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  (off_t)w->size, (off_t)(hi - w->size));
    w->reserved = w->tried = w->size;
}

int writer_open(wstream *w, int stream, const char *prefix_path,
                const char *name, uint64_t rotate_bytes, uint32_t keep,
                int compress)
{
    memset(w, 0, sizeof *w);
    w->fd = -1;
    w->stream = stream;
    if ((size_t)snprintf(w->path, sizeof w->path, "%s.%s.log", prefix_path,
                         name) >= sizeof w->path)
        return GPUFL_ETOOBIG;
    w->buf = malloc(WRITER_BUF);
    if (!w->buf)
        return GPUFL_ENOMEM;
    w->own_buf = 1;
    w->cap = WRITER_BUF;
    w->rotate_bytes = rotate_bytes;
    w->keep = keep;
    w->compress = compress;
    return open_live(w);
}

int writer_open_buf(wstream *w, int stream, const char *path, char *buf,
                    size_t cap, uint64_t rotate_bytes, uint32_t keep,
                    int compress)
{
    size_t n = 0;
    memset(w, 0, sizeof *w);
    w->fd = -1;
    w->stream = stream;
    while (path[n] && n < sizeof w->path - 1) { /* no snprintf: crashes */
        w->path[n] = path[n];
        n++;
    }
    if (path[n])
        return GPUFL_ETOOBIG;
    w->path[n] = 0;
    w->buf = buf;
    w->cap = cap;
    w->rotate_bytes = rotate_bytes;
    w->keep = keep;
    w->compress = compress;
    return open_live(w);
}

static size_t count_lines(const char *p, size_t n)
{
    size_t k = 0;
    const char *e = p + n;
    while (p < e && (p = memchr(p, '\n', (size_t)(e - p)))) {
        k++;
        p++;
    }
    return k;
}

/* final: the file's last lines, written into the reserve. */
static int flush(wstream *w, int final)
{
    size_t off = 0;
    if (w->len && reserve(w, w->size + w->len + w->damaged +
                                 (final ? 0 : WRITER_RESERVE)) != 0) {
        /* no room for this buffer and the reserve: drop it whole (no line
         * is cut), the reserve stays for the last lines */
        w->err = errno;
        goto fail;
    }
    if (w->damaged && w->len) {
        /* a previous short write left half a line: end it, so the lines
         * that follow stay whole (readers skip the damaged one) */
        if (write(w->fd, "\n", 1) != 1) {
            w->err = errno;
            goto fail;
        }
        w->damaged = 0;
        w->file_bytes++;
        w->size++;
    }
    while (off < w->len) {
        ssize_t n = write(w->fd, w->buf + off, w->len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            w->err = n < 0 ? errno : ENOSPC;
            goto fail;
        }
        off += (size_t)n;
        w->size += (uint64_t)n;
    }
    if (w->size > w->reserved)
        w->reserved = w->size;
    w->bytes += w->len;
    w->len = 0;
    w->failing = 0;
    return 0;
fail:
    /* Disk full or I/O error: drop what is buffered rather than grow
     * without bound, count the lines, and remember if the file now ends
     * inside a line.  The collector turns the count into a loss line. */
    w->failing = 1;
    if (off < w->len) {
        w->lines_lost += count_lines(w->buf + off, w->len - off);
        if (off > 0 && w->buf[off - 1] != '\n')
            w->damaged = 1;
        /* bytes never written do not count toward rotation: a full disk
         * must not churn out empty rotated files */
        w->file_bytes -= w->len - off;
        /* the dropped lines may have been this file's session line or the
         * dict lines later events rely on: a new generation makes the
         * collector write them again before their next use */
        w->file_gen = atomic_fetch_add(&file_gen_next, 1);
        w->lost_context = 1;
    }
    w->len = 0;
    return GPUFL_EIO;
}

int writer_flush(wstream *w)
{
    return flush(w, 0);
}

int writer_should_rotate(const wstream *w, size_t need)
{
    return w->file_bytes > 0 && w->file_bytes + need > w->rotate_bytes;
}

static void rotated_name(const wstream *w, uint32_t n, int zst, char *out,
                         size_t cap)
{
    snprintf(out, cap, "%s.%u%s", w->path, n, zst ? ".zst" : "");
}

/* ---- background compression of rotated files ---- */

#define COMP_QUEUE                                                             \
    1024 /* jobs; each is a path: a full queue skips compression */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_t thread;
    int running, stop;
    char *q[COMP_QUEUE];
    int head, n;
} comp = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER };

int writer_compress_file(const char *path)
{
    char tmp[4200], dst[4200];
    static const size_t in_cap = 1 << 17;
    FILE *in = NULL, *out = NULL;
    ZSTD_CCtx *cx = NULL;
    char *ib = NULL, *ob = NULL;
    size_t out_cap = ZSTD_CStreamOutSize();
    int rc = GPUFL_EIO;

    snprintf(tmp, sizeof tmp, "%s.zst.tmp", path);
    snprintf(dst, sizeof dst, "%s.zst", path);
    in = fopen(path, "rbe");
    out = fopen(tmp, "wbe");
    cx = ZSTD_createCCtx();
    ib = malloc(in_cap);
    ob = malloc(out_cap);
    if (!in || !out || !cx || !ib || !ob)
        goto out;
    ZSTD_CCtx_setParameter(cx, ZSTD_c_compressionLevel, 3);
    ZSTD_CCtx_setParameter(cx, ZSTD_c_checksumFlag, 1);
    for (;;) {
        size_t n = fread(ib, 1, in_cap, in);
        int last = n < in_cap;
        ZSTD_inBuffer zi = { ib, n, 0 };
        size_t remaining;
        do {
            ZSTD_outBuffer zo = { ob, out_cap, 0 };
            remaining = ZSTD_compressStream2(
                cx, &zo, &zi, last ? ZSTD_e_end : ZSTD_e_continue);
            if (ZSTD_isError(remaining) || fwrite(ob, 1, zo.pos, out) != zo.pos)
                goto out;
        } while (last ? remaining != 0 : zi.pos < zi.size);
        if (last)
            break;
    }
    if (ferror(in) || fflush(out) || fsync(fileno(out)))
        goto out;
    /* keep-K pruning may have removed the source meanwhile: then the
     * compressed copy must not appear either */
    if (access(path, F_OK) != 0)
        goto out;
    if (rename(tmp, dst) < 0)
        goto out;
    unlink(path);
    rc = 0;
out:
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    if (rc)
        unlink(tmp);
    ZSTD_freeCCtx(cx);
    free(ib);
    free(ob);
    return rc;
}

static void *comp_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&comp.lock);
    for (;;) {
        while (!comp.n && !comp.stop)
            pthread_cond_wait(&comp.cond, &comp.lock);
        if (!comp.n && comp.stop)
            break;
        char *p = comp.q[comp.head];
        comp.head = (comp.head + 1) % COMP_QUEUE;
        comp.n--;
        pthread_mutex_unlock(&comp.lock);
        /* jobs run in queue order, so a file is pruned only after its
         * compression finished: no orphan .zst can appear */
        if (p[0] == 'D') {
            char z[4200];
            unlink(p + 1);
            snprintf(z, sizeof z, "%s.zst", p + 1);
            unlink(z);
        } else {
            writer_compress_file(p + 1);
        }
        free(p);
        pthread_mutex_lock(&comp.lock);
    }
    pthread_mutex_unlock(&comp.lock);
    return NULL;
}

int writer_compressor_start(void)
{
    pthread_mutex_lock(&comp.lock);
    if (!comp.running) {
        comp.stop = 0;
        if (pthread_create(&comp.thread, NULL, comp_main, NULL) == 0)
            comp.running = 1;
    }
    pthread_mutex_unlock(&comp.lock);
    return comp.running ? 0 : GPUFL_EIO;
}

/* Finishes the queue before returning: a rotated file is never left
 * half-compressed by a clean shutdown. */
void writer_compressor_stop(void)
{
    pthread_mutex_lock(&comp.lock);
    if (!comp.running) {
        pthread_mutex_unlock(&comp.lock);
        return;
    }
    comp.stop = 1;
    pthread_cond_signal(&comp.cond);
    pthread_mutex_unlock(&comp.lock);
    pthread_join(comp.thread, NULL);
    comp.running = 0;
}

/* Queue a job: 'C' compress path, 'D' delete path and path.zst.  Returns
 * 0, or -1 when the compressor is not running or its queue is full (the
 * caller then does a delete itself; a compression is simply skipped and
 * the file stays uncompressed, nothing lost). */
static int comp_enqueue(char op, const char *path)
{
    size_t n = strlen(path);
    char *p = malloc(n + 2);
    int rc = -1;
    if (!p)
        return -1;
    p[0] = op;
    memcpy(p + 1, path, n + 1);
    pthread_mutex_lock(&comp.lock);
    if (comp.running && comp.n < COMP_QUEUE) {
        comp.q[(comp.head + comp.n) % COMP_QUEUE] = p;
        comp.n++;
        p = NULL;
        rc = 0;
        pthread_cond_signal(&comp.cond);
    }
    pthread_mutex_unlock(&comp.lock);
    free(p);
    return rc;
}

int writer_rotate(wstream *w)
{
    char dst[4200];
    int rc = writer_flush(w);
    (void)rc; /* a failed flush already counted; rotate anyway */
    /* The rotated file must be durable before the name changes: a reader
     * that sees .N may delete its cursor state for the live name. */
    /* a damaged last line is ended here, so the next file starts clean */
    if (w->damaged && write(w->fd, "\n", 1) == 1) {
        w->file_bytes++;
        w->size++;
    }
    w->damaged = 0;
    unreserve(w);
    fdatasync(w->fd);
    close(w->fd);
    w->fd = -1;
    w->rotations++;
    rotated_name(w, w->rotations, 0, dst, sizeof dst);
    if (rename(w->path, dst) < 0)
        return GPUFL_EIO;
    /* the collector writes the new file's session line next */
    w->lost_context = 0;
    if (w->compress)
        comp_enqueue('C', dst);
    if (w->keep && w->rotations > w->keep) {
        char old[4200];
        uint32_t n = w->rotations - w->keep;
        rotated_name(w, n, 0, old, sizeof old);
        /* with compression on, pruning goes through the same queue as
         * the compression of that file, after it */
        if (!w->compress || comp_enqueue('D', old) != 0) {
            unlink(old);
            rotated_name(w, n, 1, old, sizeof old);
            unlink(old);
        }
    }
    return open_live(w);
}

char *writer_space(wstream *w, size_t need, size_t *avail)
{
    if (need > w->cap)
        return NULL;
    if (w->cap - w->len < need)
        writer_flush(w);
    *avail = w->cap - w->len;
    return w->buf + w->len;
}

void writer_commit(wstream *w, size_t n)
{
    w->len += n;
    w->file_bytes += n;
    w->lines++;
    w->seq++;
}

int writer_close(wstream *w)
{
    int rc = 0;
    if (w->fd >= 0) {
        rc = flush(w, 1);
        unreserve(w);
        fdatasync(w->fd);
        close(w->fd);
    }
    w->fd = -1;
    if (w->own_buf)
        free(w->buf);
    w->buf = NULL;
    return rc;
}
