/*
 * uuid.c - version 4 UUIDs from getrandom(2).
 */
#include "uuid.h"

#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

int uuid_v4(char out[UUID_STR_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b[16];
    int rc = 0;
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
        /* never seen in practice; still produce a unique-enough id */
        struct timespec ts;
        uint64_t x;
        clock_gettime(CLOCK_REALTIME, &ts);
        x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
            (uint64_t)getpid();
        for (int i = 0; i < 16; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b[i] = (unsigned char)x;
        }
        rc = -1;
    }
    b[6] = (unsigned char)((b[6] & 0x0F) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3F) | 0x80);
    for (int i = 0, o = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 15];
    }
    out[UUID_STR_LEN] = 0;
    return rc;
}

int uuid_valid(const char *s, unsigned long len)
{
    if (len != UUID_STR_LEN)
        return 0;
    for (unsigned long i = 0; i < len; i++) {
        char c = s[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-')
                return 0;
        } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
                     (c >= 'A' && c <= 'F'))) {
            return 0;
        }
    }
    return 1;
}
