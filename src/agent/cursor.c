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

#define CURSOR_MAGIC "gpufl-agent-cursor 1\n"
/* One formatted entry: fixed fields plus the name. */
#define CURSOR_LINE_MAX (16 + 6 * 21 + CURSOR_NAME_MAX + 8)

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

/* Parses one entry line s[0, n) (no '\n'). */
static int parse_entry(const char *s, size_t n, agent_centry *e)
{
    size_t i = 0, name_len;
    uint64_t fp_len, flags;

    memset(e, 0, sizeof *e);
    if (take_hex16(s, n, &i, &e->fp) || take_space(s, n, &i) ||
        take_u64(s, n, &i, &fp_len) || take_space(s, n, &i) ||
        take_u64(s, n, &i, &e->dev) || take_space(s, n, &i) ||
        take_u64(s, n, &i, &e->ino) || take_space(s, n, &i) ||
        take_u64(s, n, &i, &e->off) || take_space(s, n, &i) ||
        take_u64(s, n, &i, &flags) || take_space(s, n, &i))
        return -1;
    if (fp_len > CURSOR_FP_MAX || flags > (CURSOR_F_DONE | CURSOR_F_ARCHIVED))
        return -1;
    /* a fingerprint shorter than the shipped offset could match another
     * file of the same stream */
    if (e->off > 0 && fp_len < CURSOR_FP_MAX && fp_len < e->off)
        return -1;
    name_len = n - i;
    if (name_len == 0 || name_len > CURSOR_NAME_MAX)
        return -1;
    for (size_t k = i; k < n; k++)
        if ((unsigned char)s[k] < 0x20 || s[k] == '/' || s[k] == 0x7f)
            return -1;
    if ((name_len == 1 && s[i] == '.') ||
        (name_len == 2 && s[i] == '.' && s[i + 1] == '.'))
        return -1;
    e->fp_len = (uint32_t)fp_len;
    e->flags = (uint32_t)flags;
    memcpy(e->name, s + i, name_len);
    e->name[name_len] = '\0';
    return 0;
}

int agent_cursor_parse(const char *buf, size_t len, agent_centry **out,
                       size_t *n, char *err, size_t errcap)
{
    size_t magic = sizeof(CURSOR_MAGIC) - 1, pos, cap = 0, cnt = 0;
    agent_centry *ents = NULL;
    unsigned line = 1;

    *out = NULL;
    *n = 0;
    if (len > CURSOR_FILE_MAX) {
        snprintf(err, errcap, "over %u bytes", CURSOR_FILE_MAX);
        return GPUFL_ETOOBIG;
    }
    if (len < magic || memcmp(buf, CURSOR_MAGIC, magic) != 0) {
        snprintf(err, errcap, "line 1: not a gpufl-agent cursor (version 1)");
        return GPUFL_EPARSE;
    }
    pos = magic;
    for (;;) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t ll;

        line++;
        if (!nl) {
            snprintf(err, errcap, "line %u: truncated (no end line)", line);
            goto bad;
        }
        ll = (size_t)(nl - (buf + pos));
        if (ll >= 4 && memcmp(buf + pos, "end ", 4) == 0) {
            size_t i = 4;
            const char *s = buf + pos;
            uint64_t want_n, sum;
            if (take_u64(s, ll, &i, &want_n) || take_space(s, ll, &i) ||
                take_hex16(s, ll, &i, &sum) || i != ll) {
                snprintf(err, errcap, "line %u: malformed end line", line);
                goto bad;
            }
            if (want_n != cnt) {
                snprintf(err, errcap, "line %u: says %llu entries, found %zu",
                         line, (unsigned long long)want_n, cnt);
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
        if (cnt == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            agent_centry *g = realloc(ents, ncap * sizeof *ents);
            if (!g) {
                snprintf(err, errcap, "out of memory");
                free(ents);
                return GPUFL_ENOMEM;
            }
            ents = g;
            cap = ncap;
        }
        if (parse_entry(buf + pos, ll, &ents[cnt])) {
            snprintf(err, errcap, "line %u: malformed entry", line);
            goto bad;
        }
        cnt++;
        pos += ll + 1;
    }
    *out = ents;
    *n = cnt;
    return 0;
bad:
    free(ents);
    return GPUFL_EPARSE;
}

int agent_cursor_format(const agent_centry *e, size_t n, char **buf,
                        size_t *len)
{
    size_t magic = sizeof(CURSOR_MAGIC) - 1, cap, pos;
    char *b;

    if (n > (CURSOR_FILE_MAX - 128) / CURSOR_LINE_MAX)
        return GPUFL_ETOOBIG;
    cap = magic + n * CURSOR_LINE_MAX + 64;
    b = malloc(cap);
    if (!b)
        return GPUFL_ENOMEM;
    memcpy(b, CURSOR_MAGIC, magic);
    pos = magic;
    for (size_t i = 0; i < n; i++) {
        int w;
        size_t nl = strnlen(e[i].name, CURSOR_NAME_MAX + 1);
        if (nl == 0 || nl > CURSOR_NAME_MAX || memchr(e[i].name, '\n', nl)) {
            free(b);
            return GPUFL_EINVAL;
        }
        w = snprintf(b + pos, cap - pos, "%016llx %u %llu %llu %llu %u %s\n",
                     (unsigned long long)e[i].fp, e[i].fp_len,
                     (unsigned long long)e[i].dev, (unsigned long long)e[i].ino,
                     (unsigned long long)e[i].off, e[i].flags, e[i].name);
        if (w < 0 || (size_t)w >= cap - pos) {
            free(b);
            return GPUFL_EINVAL;
        }
        pos += (size_t)w;
    }
    {
        uint64_t sum = agent_fp(b, pos);
        int w = snprintf(b + pos, cap - pos, "end %zu %016llx\n", n,
                         (unsigned long long)sum);
        if (w < 0 || (size_t)w >= cap - pos) {
            free(b);
            return GPUFL_EINVAL;
        }
        pos += (size_t)w;
    }
    *buf = b;
    *len = pos;
    return 0;
}

int agent_cursor_load(const char *path, agent_centry **out, size_t *n,
                      int *missing, char *err, size_t errcap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC), rc;
    struct stat st;
    char *buf = NULL;
    size_t got = 0;

    *out = NULL;
    *n = 0;
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
    rc = agent_cursor_parse(buf, got, out, n, err, errcap);
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

int agent_cursor_save(const char *path, const agent_centry *e, size_t n)
{
    char tmp[4200], dir[4200];
    char *buf = NULL;
    size_t len;
    int fd = -1, rc;

    rc = agent_cursor_format(e, n, &buf, &len);
    if (rc)
        return rc;
    rc = GPUFL_EIO;
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
        goto out;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
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
