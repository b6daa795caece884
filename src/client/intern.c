/*
 * intern.c - the process-wide dictionary (see intern.h).
 *
 * Why lock-free reads: every gpufl_scope_begin() with a string name looks
 * its name up, from many threads at once.  A slot is published by storing
 * its entry pointer with release order after the entry is fully written;
 * readers load with acquire, so they see either NULL or a complete entry.
 * Nothing is ever removed, so a pointer once seen stays valid.
 */
#include "intern.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define TABLE_SIZE 65536u /* power of two, > INTERN_MAX_IDS */

static _Atomic(intern_entry *) table[TABLE_SIZE];
static _Atomic(intern_entry *) by_id[INTERN_MAX_IDS + 1];
static _Atomic uint32_t next_id = 1;
static _Atomic uint64_t overflows;
static pthread_mutex_t insert_lock = PTHREAD_MUTEX_INITIALIZER;

static int entry_matches(const intern_entry *e, uint8_t kind, uint32_t hash,
                         const char *s, size_t len, uint32_t parent,
                         uint32_t name)
{
    if (e->hash != hash || e->kind != kind)
        return 0;
    if (kind == IK_PATH)
        return e->parent == parent && e->name == name;
    return e->len == len && memcmp(e->str, s, len) == 0;
}

/* Lock-free probe; returns the entry or NULL (and the first empty slot). */
static intern_entry *probe(uint8_t kind, uint32_t hash, const char *s,
                           size_t len, uint32_t parent, uint32_t name,
                           uint32_t *empty)
{
    for (uint32_t i = 0; i < TABLE_SIZE; i++) {
        uint32_t slot = (hash + i) & (TABLE_SIZE - 1);
        intern_entry *e =
            atomic_load_explicit(&table[slot], memory_order_acquire);
        if (!e) {
            *empty = slot;
            return NULL;
        }
        if (entry_matches(e, kind, hash, s, len, parent, name))
            return e;
    }
    *empty = UINT32_MAX;
    return NULL;
}

static uint32_t lookup_or_insert(uint8_t kind, uint32_t hash, const char *s,
                                 size_t len, uint32_t parent, uint32_t name,
                                 uint32_t nframes)
{
    uint32_t empty;
    intern_entry *e = probe(kind, hash, s, len, parent, name, &empty);
    uint32_t id;
    if (e)
        return e->id;

    pthread_mutex_lock(&insert_lock);
    /* another thread may have inserted it meanwhile */
    e = probe(kind, hash, s, len, parent, name, &empty);
    if (e) {
        id = e->id;
        goto out;
    }
    id = atomic_load_explicit(&next_id, memory_order_relaxed);
    if (id > INTERN_MAX_IDS || empty == UINT32_MAX)
        goto full;
    e = calloc(1, sizeof *e);
    if (!e)
        goto full;
    if (kind != IK_PATH) {
        e->str = malloc(len + 1);
        if (!e->str) {
            free(e);
            goto full;
        }
        memcpy(e->str, s, len);
        e->str[len] = 0;
    }
    e->id = id;
    e->kind = kind;
    e->hash = hash;
    e->len = (uint32_t)len;
    e->parent = parent;
    e->name = name;
    e->nframes = nframes;
    if (kind == IK_PATH) {
        const intern_entry *pe = parent ? intern_get(parent) : NULL;
        e->depth = pe ? pe->depth + 1 : 1;
    }
    atomic_store_explicit(&by_id[id], e, memory_order_release);
    atomic_store_explicit(&table[empty], e, memory_order_release);
    atomic_store_explicit(&next_id, id + 1, memory_order_relaxed);
out:
    pthread_mutex_unlock(&insert_lock);
    return id;
full:
    pthread_mutex_unlock(&insert_lock);
    atomic_fetch_add_explicit(&overflows, 1, memory_order_relaxed);
    return 0;
}

/* Largest n' <= n that does not end inside a UTF-8 sequence of s. */
static size_t utf8_cut(const char *s, size_t n)
{
    size_t k = n;
    /* at most 3 continuation bytes belong to one character */
    while (k > 0 && n - k < 3 && ((unsigned char)s[k] & 0xC0) == 0x80)
        k--;
    return ((unsigned char)s[k] & 0xC0) == 0x80 ? n : k;
}

uint32_t intern_name(const char *s, size_t len)
{
    if (!s)
        return 0;
    if (len > INTERN_MAX_LEN)
        len = utf8_cut(s, INTERN_MAX_LEN);
    return lookup_or_insert(IK_NAME, intern_hash(s, len, 0), s, len, 0, 0, 0);
}

uint32_t intern_path(uint32_t parent, uint32_t name)
{
    uint32_t key[2] = { parent, name };
    if (!name)
        return 0;
    return lookup_or_insert(IK_PATH,
                            intern_hash((const char *)key, sizeof key, 1), NULL,
                            0, parent, name, 0);
}

uint32_t intern_stack(const char *const *frames, size_t n)
{
    char buf[INTERN_MAX_LEN * 2];
    size_t len = 0, kept = 0;
    if (!frames || n == 0)
        return 0;
    if (n > INTERN_MAX_FRAMES)
        n = INTERN_MAX_FRAMES;
    for (size_t i = 0; i < n; i++) {
        const char *f = frames[i] ? frames[i] : "?";
        size_t fl = strnlen(f, 513);
        if (fl > 512)
            fl = utf8_cut(f, 512);
        if (len + fl + 1 > sizeof buf)
            break;
        memcpy(buf + len, f, fl);
        len += fl;
        buf[len++] = '\n';
        kept++;
    }
    if (len)
        len--; /* no trailing separator */
    return lookup_or_insert(IK_STACK, intern_hash(buf, len, 2), buf, len, 0, 0,
                            (uint32_t)kept);
}

uint32_t intern_launch_cfg(const intern_launch *l)
{
    intern_launch k = *l; /* a copy with no padding garbage in the key */
    return lookup_or_insert(IK_LAUNCH,
                            intern_hash((const char *)&k, sizeof k, 3),
                            (const char *)&k, sizeof k, 0, l->name, 0);
}

const intern_entry *intern_get(uint32_t id)
{
    if (id == 0 || id > INTERN_MAX_IDS)
        return NULL;
    return atomic_load_explicit(&by_id[id], memory_order_acquire);
}

intern_entry *intern_get_mut(uint32_t id)
{
    if (id == 0 || id > INTERN_MAX_IDS)
        return NULL;
    return atomic_load_explicit(&by_id[id], memory_order_acquire);
}

uint64_t intern_overflows(void)
{
    return atomic_load_explicit(&overflows, memory_order_relaxed);
}

uint32_t intern_count(void)
{
    return atomic_load_explicit(&next_id, memory_order_relaxed) - 1;
}
