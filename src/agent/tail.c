/*
 * tail.c - reading one log file: plain files by pread from the shipped
 * offset, .zst files by streaming decompression (skipping what was
 * shipped), the head used for identity, and rotation/truncation checks.
 *
 * The descriptor is kept open across the client's rename and across the
 * unlink that follows compression, so a rotated file is always read to
 * its end whatever the delay: the name may change, the inode does not.
 *
 * The folder is not trusted: every log file is opened O_NONBLOCK (a FIFO
 * named like a log must not block the agent in open()), O_NOFOLLOW (a
 * symlink is not followed to a file the agent may read but should not
 * ship) and fstat'ed; anything but a regular file is refused.
 */
#include "agent/agent_int.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int agent_open_log(const char *path, struct stat *st)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);

    if (fd < 0)
        return -1;
    if (fstat(fd, st) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    return fd;
}

static uint64_t ts_ns(const struct timespec *t)
{
    return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

static void verified(agent_file *f, const struct stat *st)
{
    f->dev = (uint64_t)st->st_dev;
    f->ino = (uint64_t)st->st_ino;
    f->vs_size = (uint64_t)st->st_size;
    f->vs_mtime = ts_ns(&st->st_mtim);
    f->vs_ctime = ts_ns(&st->st_ctim);
}

/* Do the bytes at the start of fd agree with what f saw there? */
static int head_agrees(agent_file *f, int fd)
{
    unsigned char head[CURSOR_FP_MAX];
    ssize_t n;

    if (!f->head_len)
        return 1;
    do {
        n = pread(fd, head, f->head_len, 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return 0;
    return memcmp(head, f->head, (size_t)n) == 0;
}

int agent_file_open(agent_file *f)
{
    struct stat st;

    f->fd = agent_open_log(f->path, &st);
    if (f->fd < 0)
        return errno == EINVAL || errno == ELOOP ? GPUFL_EINVAL : GPUFL_EIO;
    /* the name may have moved to another file since the scan (rotation
     * between scan and open), or a deleted file's inode may have gone to
     * a new one under the same name: only the inode the scan saw, with
     * the head it had, will do */
    if ((f->ino &&
         ((uint64_t)st.st_ino != f->ino || (uint64_t)st.st_dev != f->dev)) ||
        (!f->zst && !head_agrees(f, f->fd))) {
        close(f->fd);
        f->fd = -1;
        return GPUFL_EAGAIN;
    }
    verified(f, &st);
    f->rd_zst = f->zst;
    f->rbase = f->consumed;
    f->rlen = f->rpos = 0;
    f->eof = 0;
    f->skipping = 0;
    if (f->rd_zst) {
        f->dz = ZSTD_createDCtx();
        f->zin = malloc(AGENT_CHUNK);
        if (!f->dz || !f->zin) {
            agent_file_close(f);
            return GPUFL_ENOMEM;
        }
        f->zin_len = f->zin_pos = 0;
        f->zpos = 0;
        f->skip_to = f->consumed;
    }
    return 0;
}

void agent_file_close(agent_file *f)
{
    struct stat st;

    if (f->fd >= 0) {
        /* what a later scan compares a closed file against */
        if (fstat(f->fd, &st) == 0)
            verified(f, &st);
        close(f->fd);
    }
    f->fd = -1;
    ZSTD_freeDCtx(f->dz);
    f->dz = NULL;
    free(f->zin);
    f->zin = NULL;
    free(f->rbuf);
    f->rbuf = NULL;
    f->rlen = f->rcap = f->rpos = 0;
}

void agent_batch_free(agent_file *f)
{
    gbuf_release(&f->batch);
    free(f->bend);
    free(f->bfoff);
    f->bend = NULL;
    f->bfoff = NULL;
    f->bn = f->bcapn = 0;
}

void agent_file_free(agent_file *f)
{
    if (!f)
        return;
    agent_file_close(f);
    free(f->path);
    free(f->cline);
    agent_batch_free(f);
    free(f);
}

void agent_file_rest(agent_ctx *c, agent_file *f)
{
    if (f->rd_zst || !f->rbuf)
        return;
    /* the next read starts where this one would have: what was read ahead
     * (a partial line included) is read again, a line being skipped is
     * not */
    if (f->skipping)
        f->rbase += f->rlen;
    else
        f->rbase += f->rpos;
    if (f->rcap == AGENT_CHUNK && c->nrcache < AGENT_RCACHE)
        c->rcache[c->nrcache++] = f->rbuf;
    else
        free(f->rbuf);
    f->rbuf = NULL;
    f->rlen = f->rcap = f->rpos = 0;
}

void agent_batch_park(agent_ctx *c, agent_file *f)
{
    agent_bset *b;

    if (f->bn || (!f->batch.p && !f->bend))
        return;
    if (c->nbcache == AGENT_BCACHE || f->batch.cap > AGENT_BCACHE_MAX) {
        agent_batch_free(f);
        return;
    }
    b = &c->bcache[c->nbcache++];
    b->batch = f->batch;
    b->bend = f->bend;
    b->bfoff = f->bfoff;
    b->bcapn = f->bcapn;
    gbuf_init(&f->batch, f->batch.max);
    f->bend = NULL;
    f->bfoff = NULL;
    f->bcapn = 0;
}

void agent_batch_unpark(agent_ctx *c, agent_file *f)
{
    agent_bset *b;

    if (f->batch.p || f->bend || !c->nbcache)
        return;
    b = &c->bcache[--c->nbcache];
    f->batch = b->batch;
    f->bend = b->bend;
    f->bfoff = b->bfoff;
    f->bcapn = b->bcapn;
    gbuf_reset(&f->batch);
    f->bn = 0;
}

void agent_file_idle(agent_ctx *c, agent_file *f)
{
    if (f->rd_zst || f->bn)
        return;
    agent_file_rest(c, f);
    agent_batch_park(c, f);
}

void agent_rcache_free(agent_ctx *c)
{
    while (c->nrcache)
        free(c->rcache[--c->nrcache]);
    while (c->nbcache) {
        agent_bset *b = &c->bcache[--c->nbcache];
        gbuf_release(&b->batch);
        free(b->bend);
        free(b->bfoff);
    }
}

void agent_mark_put(agent_file *f, const char *p, size_t n)
{
    if (n >= AGENT_MARK) {
        memcpy(f->mark, p + n - AGENT_MARK, AGENT_MARK);
        f->mark_len = AGENT_MARK;
        return;
    }
    if (f->mark_len + n > AGENT_MARK) {
        size_t keep = AGENT_MARK - n;
        memmove(f->mark, f->mark + f->mark_len - keep, keep);
        f->mark_len = (uint32_t)keep;
    }
    memcpy(f->mark + f->mark_len, p, n);
    f->mark_len += (uint32_t)n;
}

/* Decompresses up to cap bytes into dst: >0 produced, 0 end, -1 error. */
static long zst_produce(agent_file *f, char *dst, size_t cap)
{
    for (;;) {
        ZSTD_outBuffer out = { dst, cap, 0 };
        ZSTD_inBuffer in;
        size_t r;

        if (f->zin_pos == f->zin_len) {
            ssize_t n = read(f->fd, f->zin, AGENT_CHUNK);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                return -1;
            if (n == 0)
                return 0;
            f->zin_len = (size_t)n;
            f->zin_pos = 0;
            f->zraw += (uint64_t)n;
        }
        in.src = f->zin;
        in.size = f->zin_len;
        in.pos = f->zin_pos;
        r = ZSTD_decompressStream(f->dz, &out, &in);
        f->zin_pos = in.pos;
        if (ZSTD_isError(r))
            return -1;
        if (out.pos > 0)
            return (long)out.pos;
    }
}

static void head_take(agent_file *f, uint64_t off, const char *p, size_t n)
{
    if (off >= CURSOR_FP_MAX || off > f->head_len)
        return;
    if (n > CURSOR_FP_MAX - off)
        n = (size_t)(CURSOR_FP_MAX - off);
    if (off + n > f->head_len) {
        memcpy(f->head + off, p, n);
        f->head_len = (uint32_t)(off + n);
    }
}

long agent_file_fill(agent_ctx *c, agent_file *f)
{
    size_t limit = (size_t)c->cfg->max_line_bytes + AGENT_CHUNK;

    if (f->rpos > 0) {
        memmove(f->rbuf, f->rbuf + f->rpos, f->rlen - f->rpos);
        f->rbase += f->rpos;
        f->rlen -= f->rpos;
        f->rpos = 0;
    }
    if (!f->rbuf && c->nrcache) {
        f->rbuf = c->rcache[--c->nrcache];
        f->rcap = AGENT_CHUNK;
    }
    if (f->rcap - f->rlen < AGENT_CHUNK / 2 && f->rcap < limit) {
        size_t cap = f->rcap ? f->rcap * 2 : AGENT_CHUNK;
        char *g;
        if (cap > limit)
            cap = limit;
        g = realloc(f->rbuf, cap);
        if (!g)
            return -1;
        f->rbuf = g;
        f->rcap = cap;
    }
    /* the caller cuts lines over the cap before the buffer fills */
    if (f->rcap == f->rlen)
        return -1;
    if (!f->rd_zst) {
        ssize_t n;
        do {
            n = pread(f->fd, f->rbuf + f->rlen, f->rcap - f->rlen,
                      (off_t)(f->rbase + f->rlen));
        } while (n < 0 && errno == EINTR);
        if (n <= 0)
            return n < 0 ? -1 : 0;
        head_take(f, f->rbase + f->rlen, f->rbuf + f->rlen, (size_t)n);
        f->rlen += (size_t)n;
        return n;
    }
    for (;;) {
        long n = zst_produce(f, f->rbuf + f->rlen, f->rcap - f->rlen);
        uint64_t start = f->zpos;
        if (n <= 0) {
            if (n == 0) {
                f->size = f->zpos;
                f->final_size = 1;
            }
            return n;
        }
        head_take(f, start, f->rbuf + f->rlen, (size_t)n);
        f->zpos += (uint64_t)n;
        if (f->zpos <= f->skip_to)
            continue; /* shipped before: discard */
        if (start < f->skip_to) {
            size_t drop = (size_t)(f->skip_to - start);
            memmove(f->rbuf + f->rlen, f->rbuf + f->rlen + drop,
                    (size_t)n - drop);
            n -= (long)drop;
        }
        f->rlen += (size_t)n;
        return n;
    }
}

/* The first line of buf[0, n), if complete, into line (cap bytes). */
static void first_line(const unsigned char *buf, size_t n, char *line,
                       size_t cap, size_t *line_len)
{
    const unsigned char *nl = memchr(buf, '\n', n < cap ? n : cap);

    *line_len = 0;
    if (nl) {
        *line_len = (size_t)(nl - buf);
        memcpy(line, buf, *line_len);
    }
}

int agent_file_head(agent_file *f, char *line, size_t cap, size_t *line_len)
{
    struct stat st;
    unsigned char *buf;
    size_t want = cap > CURSOR_FP_MAX ? cap : CURSOR_FP_MAX, got = 0;
    int fd, rc = 0;
    ssize_t n;

    f->head_len = 0;
    *line_len = 0;
    /* identity and head from one descriptor: the name may be rotated
     * onto another file between a stat() and an open() */
    fd = agent_open_log(f->path, &st);
    if (fd < 0)
        return errno == EINVAL || errno == ELOOP ? GPUFL_EINVAL : GPUFL_EIO;
    verified(f, &st);
    f->size = (uint64_t)st.st_size;
    buf = malloc(want);
    if (!buf) {
        close(fd);
        return GPUFL_ENOMEM;
    }
    if (!f->zst) {
        while (got < want) {
            n = pread(fd, buf + got, want - got, (off_t)got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                rc = GPUFL_EIO;
            if (n <= 0)
                break;
            got += (size_t)n;
            /* the first line is usually short: stop at its end */
            if (got >= CURSOR_FP_MAX && memchr(buf, '\n', got))
                break;
        }
    } else {
        ZSTD_DCtx *dz = ZSTD_createDCtx();
        unsigned char in[16384];
        rc = dz ? 0 : GPUFL_ENOMEM;
        while (dz && got < want) {
            ZSTD_inBuffer ib;
            n = read(fd, in, sizeof in);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                rc = n < 0 ? GPUFL_EIO : 0;
                break;
            }
            ib.src = in;
            ib.size = (size_t)n;
            ib.pos = 0;
            while (ib.pos < ib.size && got < want) {
                ZSTD_outBuffer ob = { buf + got, want - got, 0 };
                if (ZSTD_isError(ZSTD_decompressStream(dz, &ob, &ib))) {
                    rc = GPUFL_EPARSE;
                    goto zdone;
                }
                got += ob.pos;
                if (ob.pos == 0 && ib.pos == ib.size)
                    break;
            }
            if (got >= CURSOR_FP_MAX && memchr(buf, '\n', got))
                break;
        }
    zdone:
        ZSTD_freeDCtx(dz);
    }
    close(fd);
    f->head_len = (uint32_t)(got < CURSOR_FP_MAX ? got : CURSOR_FP_MAX);
    memcpy(f->head, buf, f->head_len);
    first_line(buf, got, line, cap, line_len);
    free(buf);
    return rc;
}

int agent_file_rotated(agent_file *f)
{
    struct stat st;

    if (f->zst || f->n != AGENT_LIVE)
        return 1;
    if (lstat(f->path, &st) != 0)
        return errno == ENOENT;
    return (uint64_t)st.st_ino != f->ino || (uint64_t)st.st_dev != f->dev;
}

uint64_t agent_file_size(const char *path, int zst)
{
    struct stat st;
    agent_file tmp;
    uint64_t total = 0;
    char *buf;
    long n;

    if (!zst)
        return lstat(path, &st) || !S_ISREG(st.st_mode) ? UINT64_MAX
                                                        : (uint64_t)st.st_size;
    memset(&tmp, 0, sizeof tmp);
    tmp.path = (char *)(uintptr_t)path;
    tmp.zst = 1;
    tmp.fd = -1;
    buf = malloc(AGENT_CHUNK);
    if (!buf || agent_file_open(&tmp)) {
        free(buf);
        return UINT64_MAX;
    }
    while ((n = zst_produce(&tmp, buf, AGENT_CHUNK)) > 0)
        total += (uint64_t)n;
    agent_file_close(&tmp);
    free(buf);
    return n < 0 ? UINT64_MAX : total;
}
