/*
 * fsutil.h - small file-system helpers shared by the components.
 */
#ifndef GPUFL_COMMON_FSUTIL_H
#define GPUFL_COMMON_FSUTIL_H

/* mkdir -p: dir and every missing parent (mode 0755).  0, or -1 with errno
 * set (ENAMETOOLONG past 4095 bytes). */
int fs_mkdir_p(const char *dir);

#include <stddef.h>

/* The whole of the regular file open on fd (borrowed, not closed), at most
 * max bytes: a malloc'd copy with a NUL after it in *out (the caller frees
 * it), its length in *n.  0, or -1 with errno: EINVAL for anything but a
 * regular file, EFBIG over max, ENOMEM, or read's error. */
int fs_read_regular(int fd, size_t max, char **out, size_t *n);

#endif
