/*
 * symb.c - return addresses to function names: /proc/PID/maps, then the
 * ELF's .symtab (or its build-id debug file under /usr/lib/debug, or
 * .dynsym: src/common/elfsym.c), C++ names demangled.  A module is read once per (dev, inode)
 * through /proc/PID/root, so files in containers and files deleted since
 * are still found while the process lives.  An address without a symbol
 * is named "lib.so+0xVADDR" (the ELF virtual address addr2line takes).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memprof_int.h"

/* libstdc++'s demangler (C ABI symbol) */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define MP_MAX_MODS 4096

void mp_symb_release(mp_symb *s)
{
    for (size_t i = 0; i < s->nmods; i++) {
        free(s->mods[i].path);
        elfsym_free(&s->mods[i].es);
    }
    free(s->mods);
    memset(s, 0, sizeof *s);
}

static uint32_t mod_get(mp_symb *s, const char *path, uint64_t dev,
                        uint64_t ino)
{
    for (size_t i = 0; i < s->nmods; i++)
        if (s->mods[i].ino == ino && s->mods[i].dev == dev &&
            !strcmp(s->mods[i].path, path))
            return (uint32_t)i;
    if (s->nmods == s->capmods) {
        if (s->capmods >= MP_MAX_MODS)
            return UINT32_MAX;
        size_t c = s->capmods ? s->capmods * 2 : 64;
        mp_module *m = realloc(s->mods, c * sizeof *m);
        if (!m)
            return UINT32_MAX;
        s->mods = m;
        s->capmods = c;
    }
    mp_module *m = &s->mods[s->nmods];
    memset(m, 0, sizeof *m);
    m->path = strdup(path);
    if (!m->path)
        return UINT32_MAX;
    const char *b = strrchr(m->path, '/');
    m->base = b ? b + 1 : m->path;
    m->dev = dev;
    m->ino = ino;
    return (uint32_t)s->nmods++;
}

static int map_cmp(const void *a, const void *b)
{
    const mp_map *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

long mp_symb_parse_maps(mp_symb *s, const char *text, size_t len, mp_map **out)
{
    size_t cap = 64, n = 0;
    mp_map *v = malloc(cap * sizeof *v);
    if (!v)
        return -1;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
        char line[4352];
        if (ll >= sizeof line)
            ll = sizeof line - 1;
        memcpy(line, p, ll);
        line[ll] = 0;
        p = nl ? nl + 1 : end;
        unsigned long long a, b, off, ino;
        unsigned maj, min;
        char perm[8];
        int pos = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &a, &b, perm, &off,
                   &maj, &min, &ino, &pos) < 7)
            continue;
        if (perm[2] != 'x' || !ino || pos <= 0 || line[pos] != '/')
            continue;
        char *path = line + pos;
        char *del = strstr(path, " (deleted)");
        if (del)
            *del = 0;
        uint32_t mod = mod_get(s, path, ((uint64_t)maj << 32) | min, ino);
        if (mod == UINT32_MAX)
            continue;
        if (n == cap) {
            mp_map *nv = realloc(v, cap * 2 * sizeof *v);
            if (!nv)
                break;
            v = nv;
            cap *= 2;
        }
        v[n++] = (mp_map){ a, b, off, mod };
    }
    qsort(v, n, sizeof *v, map_cmp);
    *out = v;
    return (long)n;
}

static void mod_load(mp_symb *s, mp_module *m, int pid)
{
    char path[4400];
    snprintf(path, sizeof path, "/proc/%d/root%s", pid, m->path);
    m->state = -1;
    if (elfsym_load(&m->es, m->path, path, 1))
        return;
    s->elf_reads++;
    m->state = 1;
}

static void demangle(const char *nm, char *buf, size_t cap)
{
    if (nm[0] == '_' && nm[1] == 'Z') {
        int status = 0;
        char *d = __cxa_demangle(nm, NULL, NULL, &status);
        if (d && !status) {
            /* drop the parameter list: flame graphs want the function */
            char *par = strchr(d, '(');
            if (par && par != d)
                *par = 0;
            snprintf(buf, cap, "%s", d);
            free(d);
            return;
        }
        free(d);
    }
    /* "__libc_start_main@GLIBC_2.2.5": the version is noise in a stack */
    const char *at = strchr(nm, '@');
    int n = at && at != nm ? (int)(at - nm) : (int)strlen(nm);
    snprintf(buf, cap, "%.*s", n, nm);
}

void mp_symb_name(mp_symb *s, int pid, const mp_map *maps, size_t nmaps,
                  uint64_t ip, char *buf, size_t cap)
{
    size_t lo = 0, hi = nmaps;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (maps[mid].start <= ip)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo || ip >= maps[lo - 1].end) {
        snprintf(buf, cap, "0x%" PRIx64, ip);
        return;
    }
    const mp_map *mp = &maps[lo - 1];
    mp_module *m = &s->mods[mp->mod];
    if (!m->state)
        mod_load(s, m, pid);
    else
        s->cache_hits++;
    uint64_t va = elfsym_vaddr(&m->es, ip - mp->start + mp->pgoff);
    /* a return address: the call is the byte before it */
    const char *nm = elfsym_find(&m->es, va ? va - 1 : va, NULL);
    if (nm)
        demangle(nm, buf, cap);
    else
        snprintf(buf, cap, "%s+0x%" PRIx64, m->base, va);
}
