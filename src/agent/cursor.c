/*
 * cursor.c - the cursor file: parse (fuzzed: tests/fuzz/fuzz_cursor.c),
 * format, and the atomic load/save.  See cursor.h for the format.
 */
#include "agent/cursor.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CURSOR_MAGIC1 "gpufl-agent-cursor 1\n"
#define CURSOR_MAGIC2 "gpufl-agent-cursor 2\n"

uint64_t agent_fp(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* Reads a decimal u64 (no sign, no leading zeros beyond "0") from
 * s[*i, n) up to the next space or end; 0 or -1. */
static int take_u64(const char *s, size_t n, size_t *i, uint64_t *out)
{
    uint64_t v = 0;
    size_t start = *i;

    while (*i < n && s[*i] >= '0' && s[*i] <= '9') {
        unsigned d = (unsigned)(s[*i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
        (*i)++;
    }
    if (*i == start || (s[start] == '0' && *i - start > 1))
        return -1;
    *out = v;
    return 0;
}

static int take_hex16(const char *s, size_t n, size_t *i, uint64_t *out)
{
    uint64_t v = 0;

    if (n - *i < 16)
        return -1;
    for (int k = 0; k < 16; k++) {
        char c = s[(*i)++];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else
            return -1;
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

static int take_space(const char *s, size_t n, size_t *i)
{
    if (*i >= n || s[*i] != ' ')
        return -1;
    (*i)++;
    return 0;
}

/* The name at s[i, n): the rest of the line, a base name.  0 or -1. */
static int take_name(const char *s, size_t n, size_t i, char *out)
{
    size_t name_len = n - i;

    if (name_len == 0 || name_len > CURSOR_NAME_MAX)
        return -1;
    for (size_t k = i; k < n; k++)
        if ((unsigned char)s[k] < 0x20 || s[k] == '/' || s[k] == 0x7f)
            return -1;
    if ((name_len == 1 && s[i] == '.') ||
        (name_len == 2 && s[i] == '.' && s[i + 1] == '.'))
        return -1;
    memcpy(out, s + i, name_len);
    out[name_len] = '\0';
    return 0;
}

/* Parses one file entry s[0, n) (no '\n'; version 2 without its "f "). */
static int parse_entry(const char *s, size_t n, int v2, agent_centry *e)
{
    size_t i = 0;
    uint64_t fp_len, flags, mark_len = 0;

    memset(e, 0, sizeof *e);
    if (take_hex16(s, n, &i, &e->fp) || take_space(s, n, &i) ||
        take_u64(s, n, &i, &fp_len) || take_space(s, n, &i) ||
        take_u64(s, n, &i, &e->dev) || take_space(s, n, &i) ||
        take_u64(s, n, &i, &e->ino) || take_space(s, n, &i) ||
        take_u64(s, n, &i, &e->off) || take_space(s, n, &i) ||
        take_u64(s, n, &i, &flags) || take_space(s, n, &i))
        return -1;
    if (v2 && (take_hex16(s, n, &i, &e->mark) || take_space(s, n, &i) ||
               take_u64(s, n, &i, &mark_len) || take_space(s, n, &i)))
        return -1;
    if (fp_len > CURSOR_FP_MAX || flags > (CURSOR_F_DONE | CURSOR_F_ARCHIVED))
        return -1;
    /* a fingerprint shorter than the shipped offset could match another
     * file of the same stream */
    if (e->off > 0 && fp_len < CURSOR_FP_MAX && fp_len < e->off)
        return -1;
    if (mark_len > CURSOR_MARK_MAX || mark_len > e->off)
        return -1;
    e->fp_len = (uint32_t)fp_len;
    e->flags = (uint32_t)flags;
    e->mark_len = (uint32_t)mark_len;
    return take_name(s, n, i, e->name);
}

/* Parses one stream entry s[0, n) (without its "k "). */
static int parse_key(const char *s, size_t n, agent_ckey *k)
{
    size_t i = 0;
    uint64_t flags;

    memset(k, 0, sizeof *k);
    if (take_u64(s, n, &i, &k->next_file) || take_space(s, n, &i) ||
        take_u64(s, n, &i, &k->next_seq) || take_space(s, n, &i) ||
        take_u64(s, n, &i, &k->lost_files) || take_space(s, n, &i) ||
        take_u64(s, n, &i, &k->lost_lines) || take_space(s, n, &i) ||
        take_u64(s, n, &i, &flags) || take_space(s, n, &i))
        return -1;
    if (flags > (CURSOR_K_FILE | CURSOR_K_SEQ) || k->next_file > UINT32_MAX)
        return -1;
    k->flags = (uint32_t)flags;
    return take_name(s, n, i, k->name);
}

/* Grows an array of `size`-byte items to hold one more; 0 or -1. */
static int grow(void **arr, size_t *cap, size_t cnt, size_t size)
{
    size_t ncap;
    void *g;

    if (cnt < *cap)
        return 0;
    ncap = *cap ? *cap * 2 : 64;
    g = realloc(*arr, ncap * size);
    if (!g)
        return -1;
    *arr = g;
    *cap = ncap;
    return 0;
}

void agent_cursor_release(agent_cursor *cur)
{
    free(cur->e);
    free(cur->k);
    memset(cur, 0, sizeof *cur);
}

/* The end line s[0, ll): "end <n> <sum>" (v1) or "end <n> <nk> <sum>". */
static int parse_end(const char *s, size_t ll, int v2, uint64_t *want_n,
                     uint64_t *want_nk, uint64_t *sum)
{
    size_t i = 4;

    *want_nk = 0;
    if (take_u64(s, ll, &i, want_n) || take_space(s, ll, &i))
        return -1;
    if (v2 && (take_u64(s, ll, &i, want_nk) || take_space(s, ll, &i)))
        return -1;
    if (take_hex16(s, ll, &i, sum) || i != ll)
        return -1;
    return 0;
}

int agent_cursor_parse(const char *buf, size_t len, agent_cursor *cur,
                       char *err, size_t errcap)
{
    size_t magic = sizeof(CURSOR_MAGIC1) - 1, pos, cap = 0, kcap = 0;
    unsigned line = 1;
    int v2, rc = GPUFL_EPARSE;

    memset(cur, 0, sizeof *cur);
    if (len > CURSOR_FILE_MAX) {
        snprintf(err, errcap, "over %u bytes", CURSOR_FILE_MAX);
        return GPUFL_ETOOBIG;
    }
    if (len >= magic && memcmp(buf, CURSOR_MAGIC2, magic) == 0) {
        v2 = 1;
    } else if (len >= magic && memcmp(buf, CURSOR_MAGIC1, magic) == 0) {
        v2 = 0;
    } else {
        snprintf(err, errcap,
                 "line 1: not a gpufl-agent cursor (version 1 or 2)");
        return GPUFL_EPARSE;
    }
    pos = magic;
    for (;;) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        const char *s = buf + pos;
        size_t ll;

        line++;
        if (!nl) {
            snprintf(err, errcap, "line %u: truncated (no end line)", line);
            goto bad;
        }
        ll = (size_t)(nl - s);
        if (ll >= 4 && memcmp(s, "end ", 4) == 0) {
            uint64_t want_n, want_nk, sum;
            if (parse_end(s, ll, v2, &want_n, &want_nk, &sum)) {
                snprintf(err, errcap, "line %u: malformed end line", line);
                goto bad;
            }
            if (want_n != cur->n || want_nk != cur->nk) {
                snprintf(err, errcap,
                         "line %u: says %llu files and %llu streams, found "
                         "%zu and %zu",
                         line, (unsigned long long)want_n,
                         (unsigned long long)want_nk, cur->n, cur->nk);
                goto bad;
            }
            if (sum != agent_fp(buf, pos)) {
                snprintf(err, errcap, "line %u: checksum mismatch", line);
                goto bad;
            }
            if ((size_t)(nl - buf) + 1 != len) {
                snprintf(err, errcap, "line %u: bytes after the end line",
                         line);
                goto bad;
            }
            break;
        }
        if (!v2 || (ll >= 2 && s[0] == 'f' && s[1] == ' ')) {
            /* files first: one canonical order, so a parse formats back
             * to the same bytes */
            if (cur->nk) {
                snprintf(err, errcap,
                         "line %u: a file entry after a stream "
                         "entry",
                         line);
                goto bad;
            }
            if (grow((void **)&cur->e, &cap, cur->n, sizeof *cur->e))
                goto nomem;
            if (parse_entry(s + 2 * v2, ll - 2 * (size_t)v2, v2,
                            &cur->e[cur->n])) {
                snprintf(err, errcap, "line %u: malformed entry", line);
                goto bad;
            }
            cur->n++;
        } else if (ll >= 2 && s[0] == 'k' && s[1] == ' ') {
            if (grow((void **)&cur->k, &kcap, cur->nk, sizeof *cur->k))
                goto nomem;
            if (parse_key(s + 2, ll - 2, &cur->k[cur->nk])) {
                snprintf(err, errcap, "line %u: malformed stream entry", line);
                goto bad;
            }
            cur->nk++;
        } else {
            snprintf(err, errcap, "line %u: unknown entry", line);
            goto bad;
        }
        pos += ll + 1;
    }
    return 0;
nomem:
    snprintf(err, errcap, "out of memory");
    rc = GPUFL_ENOMEM;
bad:
    agent_cursor_release(cur);
    return rc;
}

/* Checks a name for the format: 0 or GPUFL_EINVAL. */
static int name_ok(const char *name)
{
    size_t nl = strnlen(name, CURSOR_NAME_MAX + 1);
    return nl == 0 || nl > CURSOR_NAME_MAX || memchr(name, '\n', nl)
               ? GPUFL_EINVAL
               : 0;
}

int agent_cursor_entry_line(const agent_centry *e, char *out, size_t cap)
{
    int w;

    if (name_ok(e->name))
        return -1;
    w = snprintf(out, cap, "f %016llx %u %llu %llu %llu %u %016llx %u %s\n",
                 (unsigned long long)e->fp, e->fp_len,
                 (unsigned long long)e->dev, (unsigned long long)e->ino,
                 (unsigned long long)e->off, e->flags,
                 (unsigned long long)e->mark, e->mark_len, e->name);
    return w < 0 || (size_t)w >= cap ? -1 : w;
}

int agent_cursor_key_line(const agent_ckey *k, char *out, size_t cap)
{
    int w;

    if (name_ok(k->name))
        return -1;
    w = snprintf(out, cap, "k %llu %llu %llu %llu %u %s\n",
                 (unsigned long long)k->next_file,
                 (unsigned long long)k->next_seq,
                 (unsigned long long)k->lost_files,
                 (unsigned long long)k->lost_lines, k->flags, k->name);
    return w < 0 || (size_t)w >= cap ? -1 : w;
}

/* magic + body + end line into a malloc'd buffer. */
static int wrap_body(const char *body, size_t blen, size_t n, size_t nk,
                     char **buf, size_t *len)
{
    size_t magic = sizeof(CURSOR_MAGIC2) - 1, cap = magic + blen + 96;
    char *b;
    int w;

    if (cap > CURSOR_FILE_MAX)
        return GPUFL_ETOOBIG;
    b = malloc(cap);
    if (!b)
        return GPUFL_ENOMEM;
    memcpy(b, CURSOR_MAGIC2, magic);
    memcpy(b + magic, body, blen);
    w = snprintf(b + magic + blen, cap - magic - blen, "end %zu %zu %016llx\n",
                 n, nk, (unsigned long long)agent_fp(b, magic + blen));
    if (w < 0 || (size_t)w >= cap - magic - blen) {
        free(b);
        return GPUFL_EINVAL;
    }
    *buf = b;
    *len = magic + blen + (size_t)w;
    return 0;
}

int agent_cursor_format(const agent_cursor *cur, char **buf, size_t *len)
{
    size_t lines = cur->n + cur->nk, cap, pos = 0;
    char *body;
    int rc;

    if (lines > (CURSOR_FILE_MAX - 128) / CURSOR_LINE_MAX)
        return GPUFL_ETOOBIG;
    cap = lines * CURSOR_LINE_MAX + 1;
    body = malloc(cap);
    if (!body)
        return GPUFL_ENOMEM;
    for (size_t i = 0; i < lines; i++) {
        int w = i < cur->n
                    ? agent_cursor_entry_line(&cur->e[i], body + pos, cap - pos)
                    : agent_cursor_key_line(&cur->k[i - cur->n], body + pos,
                                            cap - pos);
        if (w < 0) {
            free(body);
            return GPUFL_EINVAL;
        }
        pos += (size_t)w;
    }
    rc = wrap_body(body, pos, cur->n, cur->nk, buf, len);
    free(body);
    return rc;
}

int agent_cursor_load(const char *path, agent_cursor *cur, int *missing,
                      char *err, size_t errcap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), rc;
    struct stat st;
    char *buf = NULL;
    size_t got = 0;

    memset(cur, 0, sizeof *cur);
    *missing = 0;
    if (fd < 0) {
        if (errno == ENOENT) {
            *missing = 1;
            return 0;
        }
        snprintf(err, errcap, "cannot open: %s", strerror(errno));
        return GPUFL_EIO;
    }
    if (fstat(fd, &st) || st.st_size < 0) {
        snprintf(err, errcap, "cannot stat: %s", strerror(errno));
        close(fd);
        return GPUFL_EIO;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errcap, "not a regular file");
        close(fd);
        return GPUFL_EIO;
    }
    if ((uint64_t)st.st_size > CURSOR_FILE_MAX) {
        snprintf(err, errcap, "over %u bytes", CURSOR_FILE_MAX);
        close(fd);
        return GPUFL_ETOOBIG;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        close(fd);
        return GPUFL_ENOMEM;
    }
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    rc = agent_cursor_parse(buf, got, cur, err, errcap);
    free(buf);
    return rc;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Writes buf[0, len) to path atomically. */
static int save_bytes(const char *path, char *buf, size_t len)
{
    char tmp[4200], dir[4200];
    int fd = -1, rc = GPUFL_EIO;

    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
        goto out;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        goto out;
    /* a .tmp left by an older version may be more open than 0600 */
    if (fchmod(fd, 0600))
        goto out;
    if (write_all(fd, buf, len) || fsync(fd))
        goto out;
    close(fd);
    fd = -1;
    if (rename(tmp, path))
        goto out;
    /* the rename itself must survive a power cut */
    snprintf(dir, sizeof dir, "%s", path);
    fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0)
        fsync(fd);
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    if (rc)
        unlink(tmp);
    free(buf);
    return rc;
}

int agent_cursor_save(const char *path, const agent_cursor *cur)
{
    char *buf = NULL;
    size_t len;
    int rc = agent_cursor_format(cur, &buf, &len);

    if (rc)
        return rc;
    return save_bytes(path, buf, len);
}

int agent_cursor_save_body(const char *path, const char *body, size_t blen,
                           size_t n, size_t nk)
{
    char *buf = NULL;
    size_t len;
    int rc = wrap_body(body, blen, n, nk, &buf, &len);

    if (rc)
        return rc;
    return save_bytes(path, buf, len);
}
