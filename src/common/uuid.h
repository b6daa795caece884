/*
 * uuid.h - random (version 4) UUIDs for session ids.
 */
#ifndef GPUFL_COMMON_UUID_H
#define GPUFL_COMMON_UUID_H

#define UUID_STR_LEN 36

/* Writes 36 chars + NUL into out (37 bytes).  Returns 0, or -1 if the
 * kernel's random source failed (out then holds a time/pid-derived id). */
int uuid_v4(char out[UUID_STR_LEN + 1]);

/* 1 if s (36 chars, NUL or not) is a canonical lower- or upper-case UUID. */
int uuid_valid(const char *s, unsigned long len);

#endif
