/*
 * fsutil.c - small file-system helpers shared by the components.
 */
#include "common/fsutil.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

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
