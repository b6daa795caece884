/*
 * fsutil.h - small file-system helpers shared by the components.
 */
#ifndef GPUFL_COMMON_FSUTIL_H
#define GPUFL_COMMON_FSUTIL_H

/* mkdir -p: dir and every missing parent (mode 0755).  0, or -1 with errno
 * set (ENAMETOOLONG past 4095 bytes). */
int fs_mkdir_p(const char *dir);

#endif
