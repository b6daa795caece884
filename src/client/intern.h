/*
 * intern.h - the process-wide dictionary: names, scope paths and call stacks
 * turned into small integer ids.
 *
 * Lookups are lock-free (an open-addressing table whose entries, once
 * published, never change or move); inserts take a mutex.  Ids are dense,
 * start at 1 and stay valid for the life of the process, across sessions.
 * The collector writes a "dict" line for an id into a file before the first
 * line of that file that uses it, so every file is self-contained.
 */
#ifndef GPUFL_CLIENT_INTERN_H
#define GPUFL_CLIENT_INTERN_H

#include <stddef.h>
#include <stdint.h>

#define INTERN_MAX_IDS 49152 /* 3/4 of the table: probes stay short */
/* Longer names are cut (mangled names can exceed 1 KiB; 4 KiB covers all
 * seen). */
#define INTERN_MAX_LEN 4096
#define INTERN_MAX_FRAMES 64 /* frames kept per stack */

enum intern_kind { IK_NAME = 0, IK_PATH = 1, IK_STACK = 2, IK_LAUNCH = 3 };

/* A kernel's launch configuration: what stays the same from one launch of
 * a kernel to the next (the grid is left out: it varies with data shapes).
 * Kernel lines refer to it by id, which is what keeps them compact. */
typedef struct intern_launch {
    uint32_t name; /* name id */
    uint32_t block[3];
    uint32_t regs, smem_static, smem_dynamic, local_mem;
    float occ; /* < 0 = unknown */
    uint32_t limiters;
} intern_launch;

typedef struct intern_entry {
    uint32_t id;
    uint8_t kind; /* enum intern_kind */
    uint32_t hash;
    uint32_t len;          /* bytes of str */
    uint32_t parent, name; /* IK_PATH: parent path id (0 = root), name id;
                              IK_LAUNCH: name = the kernel's name id */
    uint32_t depth;        /* IK_PATH: 1 for a top-level scope */
    uint32_t nframes;      /* IK_STACK: frames in str, '\n'-separated */
    uint32_t emitted[3];   /* collector only: file generation per stream
                              in which the dict line was last written */
    char *str;             /* NUL-terminated; NULL for IK_PATH; the
                              intern_launch bytes for IK_LAUNCH */
} intern_entry;

/* Id of a name (created if new); 0 if the table is full (counted). */
uint32_t intern_name(const char *s, size_t len);
/* Id of the scope path parent/name. */
uint32_t intern_path(uint32_t parent, uint32_t name);
/* Id of a call stack. */
uint32_t intern_stack(const char *const *frames, size_t n);
/* Id of a launch configuration (IK_LAUNCH; str holds the struct). */
uint32_t intern_launch_cfg(const intern_launch *l);
/* Entry of an id, or NULL. Lock-free. */
const intern_entry *intern_get(uint32_t id);
intern_entry *intern_get_mut(uint32_t id); /* collector only */
/* Ids refused because the table was full, since start. */
uint64_t intern_overflows(void);
/* Number of ids in use. */
uint32_t intern_count(void);

/* 32-bit FNV-1a; cheap for the short strings scope names are. */
static inline uint32_t intern_hash(const char *s, size_t len, uint32_t seed)
{
    uint32_t h = 2166136261u ^ seed;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h ? h : 1;
}

#endif
