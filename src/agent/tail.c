/*
 * tail.c - reading one log file: plain files by pread from the shipped
 * offset, .zst files by streaming decompression (skipping what was
 * shipped), the head used for identity, and rotation/truncation checks.
 *
 * The descriptor is kept open across the client's rename and across the
 * unlink that follows compression, so a rotated file is always read to
 * its end whatever the delay: the name may change, the inode does not.
 */
#include "agent/agent_int.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int agent_file_open(agent_file *f)
{
    struct stat st;

    f->fd = open(f->path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0)
        return GPUFL_EIO;
    /* the name may have moved to another file since the scan (rotation
     * between scan and open): only the inode the scan saw will do */
    if (fstat(f->fd, &st) != 0 || (f->ino && ((uint64_t)st.st_ino != f->ino ||
                                              (uint64_t)st.st_dev != f->dev))) {
        close(f->fd);
        f->fd = -1;
        return GPUFL_EAGAIN;
    }
    f->dev = (uint64_t)st.st_dev;
    f->ino = (uint64_t)st.st_ino;
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
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    ZSTD_freeDCtx(f->dz);
    f->dz = NULL;
    free(f->zin);
    f->zin = NULL;
    free(f->rbuf);
    f->rbuf = NULL;
    f->rlen = f->rcap = f->rpos = 0;
}

void agent_file_free(agent_file *f)
{
    if (!f)
        return;
    agent_file_close(f);
    free(f->path);
    free(f->bbuf);
    free(f->bend);
    free(f->bfoff);
    free(f);
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

int agent_file_head(agent_file *f)
{
    int fd = open(f->path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    ssize_t n;

    f->head_len = 0;
    if (fd < 0)
        return GPUFL_EIO;
    /* identity and head from one descriptor: the name may be rotated
     * onto another file between a stat() and an open() */
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return GPUFL_EIO;
    }
    f->dev = (uint64_t)st.st_dev;
    f->ino = (uint64_t)st.st_ino;
    f->size = (uint64_t)st.st_size;
    if (!f->zst) {
        do {
            n = pread(fd, f->head, CURSOR_FP_MAX, 0);
        } while (n < 0 && errno == EINTR);
        close(fd);
        if (n < 0)
            return GPUFL_EIO;
        f->head_len = (uint32_t)n;
        return 0;
    }
    {
        ZSTD_DCtx *dz = ZSTD_createDCtx();
        unsigned char in[16384];
        size_t got = 0;
        int rc = 0;
        while (dz && got < CURSOR_FP_MAX) {
            ZSTD_inBuffer ib;
            n = read(fd, in, sizeof in);
            if (n <= 0) {
                rc = n < 0 ? GPUFL_EIO : 0;
                break;
            }
            ib.src = in;
            ib.size = (size_t)n;
            ib.pos = 0;
            while (ib.pos < ib.size && got < CURSOR_FP_MAX) {
                ZSTD_outBuffer ob = { f->head + got, CURSOR_FP_MAX - got, 0 };
                if (ZSTD_isError(ZSTD_decompressStream(dz, &ob, &ib))) {
                    rc = GPUFL_EPARSE;
                    goto zdone;
                }
                got += ob.pos;
                if (ob.pos == 0 && ib.pos == ib.size)
                    break;
            }
        }
    zdone:
        if (!dz)
            rc = GPUFL_ENOMEM;
        ZSTD_freeDCtx(dz);
        close(fd);
        f->head_len = (uint32_t)got;
        return rc;
    }
}

int agent_file_rotated(agent_file *f)
{
    struct stat st;

    if (f->zst || f->n != AGENT_LIVE)
        return 1;
    if (stat(f->path, &st) != 0)
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
        return stat(path, &st) ? UINT64_MAX : (uint64_t)st.st_size;
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
