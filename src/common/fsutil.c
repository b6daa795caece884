/*
 * fsutil.c - small file-system helpers shared by the components.
 */
#include "common/fsutil.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fs_read_regular(int fd, size_t max, char **out, size_t *n)
{
    struct stat st;
    size_t got = 0;
    char *buf;

    if (fstat(fd, &st) != 0)
        return -1;
    if (!S_ISREG(st.st_mode)) {
        errno = EINVAL;
        return -1;
    }
    if ((uint64_t)st.st_size > max) {
        errno = EFBIG;
        return -1;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (!buf)
        return -1;
    /* the size at fstat: a file that grows meanwhile is cut there */
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(buf);
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    buf[got] = '\0';
    *out = buf;
    *n = got;
    return 0;
}

int fs_mkdir_p(const char *dir)
{
    char tmp[4096];
    size_t n = strnlen(dir, sizeof tmp);
    if (n == 0 || n >= sizeof tmp) {
        errno = n ? ENAMETOOLONG : ENOENT;
        return -1;
    }
    memcpy(tmp, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (tmp[i] == '/' || tmp[i] == 0) {
            char c = tmp[i];
            tmp[i] = 0;
            if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
                return -1;
            tmp[i] = c;
        }
    }
    return 0;
}
