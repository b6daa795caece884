/*
 * files.c - finds the sessions of a log folder and reads their files as
 * byte streams, decompressing rotated .zst files on the fly.
 *
 * Names follow docs/events.md 3.1: <prefix>.<stream>.log[.<N>[.zst]].
 * A stream is read as its rotated files in increasing N (X.N.zst when it
 * exists, else X.N; never both, never .tmp), then the live file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "gpufl/gpufl.h"
#include "report_int.h"

const char *const rpt_stream_names[RPT_NST] = { "device", "scope", "system" };

typedef struct ent {
    char *prefix;
    int st;
    uint64_t n; /* 0 = live file */
    int zst;
    char *path;
} ent;

/* Splits a file name per 3.1; 0 when it is not a gpufl log name. */
static int split_name(const char *name, size_t *plen, int *st, uint64_t *n,
                      int *zst)
{
    size_t len = strlen(name);
    for (int s = 0; s < RPT_NST; s++) {
        char pat[24];
        const char *p;
        snprintf(pat, sizeof pat, ".%s.log", rpt_stream_names[s]);
        /* the last occurrence: a prefix may contain ".device.log" itself */
        for (p = name; (p = strstr(p, pat)); p++) {
            const char *rest = p + strlen(pat);
            char *end;
            if (p == name)
                continue;
            *plen = (size_t)(p - name);
            *st = s;
            *zst = 0;
            *n = 0;
            if (!*rest)
                return 1;
            if (rest[0] != '.' || rest[1] < '0' || rest[1] > '9')
                continue;
            errno = 0;
            *n = strtoull(rest + 1, &end, 10);
            if (errno || *n == 0)
                continue;
            if (!*end)
                return 1;
            if (!strcmp(end, ".zst")) {
                *zst = 1;
                return 1;
            }
        }
    }
    (void)len;
    return 0;
}

static int ent_cmp(const void *a, const void *b)
{
    const ent *x = a, *y = b;
    int c = strcmp(x->prefix, y->prefix);
    if (c)
        return c;
    if (x->st != y->st)
        return x->st - y->st;
    /* rotated files in increasing N, the live file (n = 0) last */
    if (x->n != y->n) {
        if (!x->n)
            return 1;
        if (!y->n)
            return -1;
        return x->n < y->n ? -1 : 1;
    }
    return y->zst - x->zst; /* .zst first: it wins over the plain file */
}

/* The session id and start of a session from the first line of its first
 * file (any stream). */
static void read_identity(rpt_files *f)
{
    for (int s = 0; s < RPT_NST; s++) {
        rpt_src src;
        char *buf;
        long got;
        size_t len = 0;
        if (!f->n[s] || rpt_src_open(&src, f->path[s][0]))
            continue;
        buf = malloc(65536);
        while (buf && len < 65535 &&
               (got = rpt_src_read(&src, buf + len, 65535 - len)) > 0) {
            len += (size_t)got;
            if (memchr(buf, '\n', len))
                break;
        }
        rpt_src_close(&src);
        if (buf) {
            jsonl_tok tok[RPT_TOKENS];
            jsonl_doc d;
            char *nl = memchr(buf, '\n', len);
            jsonl_doc_init(&d, tok, RPT_TOKENS);
            if (nl && !jsonl_doc_parse_obj(&d, buf, (size_t)(nl - buf))) {
                rpt_str(&d, "sid", f->sid, sizeof f->sid);
                f->start = rpt_u64(&d, "start", rpt_u64(&d, "ts", 0));
            }
            free(buf);
        }
        if (f->sid[0])
            return;
    }
}

static const char *kind_of(mode_t m)
{
    return S_ISLNK(m)    ? "a symbolic link"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
           : S_ISDIR(m)  ? "a directory"
                         : "not a regular file";
}

void rpt_folder_warn(const rpt_folder *f, FILE *log)
{
    if (!f->nskipped || !log)
        return;
    fprintf(log,
            "gpufl: skipped %zu name%s that look%s like logs but %s not "
            "regular files (%s); gpufl reads only regular files and never "
            "follows links\n",
            f->nskipped, f->nskipped == 1 ? "" : "s",
            f->nskipped == 1 ? "s" : "", f->nskipped == 1 ? "is" : "are",
            f->skipped);
}

static int files_cmp(const void *a, const void *b)
{
    const rpt_files *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return strcmp(x->prefix, y->prefix);
}

int rpt_folder_scan(const char *dir, rpt_folder *f, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    ent *e = NULL;
    size_t ne = 0, ecap = 0;
    int rc = GPUFL_OK;
    memset(f, 0, sizeof *f);
    if (!d) {
        snprintf(err, errlen, "cannot open %s: %s", dir, strerror(errno));
        return GPUFL_EIO;
    }
    while ((de = readdir(d))) {
        size_t plen;
        int st, zst;
        uint64_t n;
        char path[RPT_PATH_MAX];
        if (!split_name(de->d_name, &plen, &st, &n, &zst))
            continue;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >=
            sizeof path)
            continue;
        {
            struct stat sb;
            if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW))
                continue; /* gone since readdir */
            if (!S_ISREG(sb.st_mode)) {
                if (!f->nskipped++)
                    snprintf(f->skipped, sizeof f->skipped, "%.440s: %s", path,
                             kind_of(sb.st_mode));
                continue;
            }
        }
        if (ne == ecap) {
            size_t nc = ecap ? ecap * 2 : 64;
            ent *ne2 = realloc(e, nc * sizeof *e);
            if (!ne2) {
                rc = GPUFL_ENOMEM;
                goto out;
            }
            e = ne2;
            ecap = nc;
        }
        e[ne].prefix = malloc(strlen(dir) + plen + 2);
        e[ne].path = strdup(path);
        if (!e[ne].prefix || !e[ne].path) {
            free(e[ne].prefix);
            free(e[ne].path);
            rc = GPUFL_ENOMEM;
            goto out;
        }
        snprintf(e[ne].prefix, strlen(dir) + plen + 2, "%s/%.*s", dir,
                 (int)plen, de->d_name);
        e[ne].st = st;
        e[ne].n = n;
        e[ne].zst = zst;
        ne++;
    }
    if (ne) /* e is NULL for a folder without logs: qsort wants non-NULL */
        qsort(e, ne, sizeof *e, ent_cmp);
    for (size_t i = 0; i < ne; i++) {
        rpt_files *cur;
        char **np;
        if (!f->n || strcmp(f->s[f->n - 1].prefix, e[i].prefix)) {
            rpt_files *ns = realloc(f->s, (f->n + 1) * sizeof *f->s);
            if (!ns) {
                rc = GPUFL_ENOMEM;
                goto out;
            }
            f->s = ns;
            memset(&f->s[f->n], 0, sizeof f->s[0]);
            f->s[f->n].prefix = strdup(e[i].prefix);
            if (!f->s[f->n++].prefix) {
                rc = GPUFL_ENOMEM;
                goto out;
            }
        }
        cur = &f->s[f->n - 1];
        /* X.N after X.N.zst: the compressed copy already holds its lines */
        if (i && !strcmp(e[i - 1].prefix, e[i].prefix) &&
            e[i - 1].st == e[i].st && e[i].n && e[i - 1].n == e[i].n)
            continue;
        np = realloc(cur->path[e[i].st], (cur->n[e[i].st] + 1) * sizeof *np);
        if (!np) {
            rc = GPUFL_ENOMEM;
            goto out;
        }
        cur->path[e[i].st] = np;
        np[cur->n[e[i].st]++] = e[i].path;
        e[i].path = NULL;
    }
    for (size_t i = 0; i < f->n; i++)
        read_identity(&f->s[i]);
    if (f->n)
        qsort(f->s, f->n, sizeof *f->s, files_cmp);
out:
    for (size_t i = 0; i < ne; i++) {
        free(e[i].prefix);
        free(e[i].path);
    }
    free(e);
    closedir(d);
    if (rc) {
        snprintf(err, errlen, "out of memory scanning %s", dir);
        rpt_folder_release(f);
    }
    return rc;
}

void rpt_folder_release(rpt_folder *f)
{
    for (size_t i = 0; i < f->n; i++) {
        for (int s = 0; s < RPT_NST; s++) {
            for (size_t j = 0; j < f->s[i].n[s]; j++)
                free(f->s[i].path[s][j]);
            free(f->s[i].path[s]);
        }
        free(f->s[i].prefix);
    }
    free(f->s);
    memset(f, 0, sizeof *f);
}

size_t rpt_folder_pick(const rpt_folder *f, const char *sel, char *pick)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++) {
        const char *base = strrchr(f->s[i].prefix, '/');
        base = base ? base + 1 : f->s[i].prefix;
        pick[i] = !sel || !*sel ||
                  (f->s[i].sid[0] && !strncmp(f->s[i].sid, sel, strlen(sel))) ||
                  !strcmp(base, sel);
        n += (size_t)pick[i];
    }
    return n;
}

int rpt_src_open(rpt_src *s, const char *path)
{
    size_t len = strlen(path);
    struct stat sb;
    memset(s, 0, sizeof *s);
    /* O_NONBLOCK: a FIFO put in place after the scan must not block the
     * open; it is refused by the fstat below.  Regular files ignore it. */
    s->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (s->fd < 0)
        return GPUFL_EIO;
    if (fstat(s->fd, &sb) || !S_ISREG(sb.st_mode)) {
        close(s->fd);
        s->fd = -1;
        errno = EINVAL;
        return GPUFL_EIO;
    }
    if (len > 4 && !strcmp(path + len - 4, ".zst")) {
        s->z = ZSTD_createDCtx();
        s->zin = malloc(ZSTD_DStreamInSize());
        if (!s->z || !s->zin) {
            rpt_src_close(s);
            return GPUFL_ENOMEM;
        }
    }
    return GPUFL_OK;
}

static long read_fd(int fd, char *buf, size_t cap)
{
    for (;;) {
        ssize_t r = read(fd, buf, cap);
        if (r < 0 && errno == EINTR)
            continue;
        return (long)r;
    }
}

long rpt_src_read(rpt_src *s, char *buf, size_t cap)
{
    if (!s->z)
        return read_fd(s->fd, buf, cap);
    for (;;) {
        ZSTD_outBuffer out = { buf, cap, 0 };
        ZSTD_inBuffer in;
        size_t r;
        if (s->zin_pos == s->zin_len) {
            long got;
            if (s->zeof)
                return 0;
            got = read_fd(s->fd, s->zin, ZSTD_DStreamInSize());
            if (got < 0)
                return -1;
            if (got == 0) {
                s->zeof = 1;
                return 0; /* a cut frame ends the file like a partial line */
            }
            s->zin_len = (size_t)got;
            s->zin_pos = 0;
        }
        in.src = s->zin;
        in.size = s->zin_len;
        in.pos = s->zin_pos;
        r = ZSTD_decompressStream(s->z, &out, &in);
        s->zin_pos = in.pos;
        if (ZSTD_isError(r))
            return -1;
        if (out.pos)
            return (long)out.pos;
    }
}

void rpt_src_close(rpt_src *s)
{
    if (s->fd >= 0)
        close(s->fd);
    ZSTD_freeDCtx(s->z);
    free(s->zin);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}
