/*
 * symb.c - return addresses to function names: /proc/PID/maps, then the
 * ELF's .symtab (or its build-id debug file under /usr/lib/debug, or
 * .dynsym), C++ names demangled.  A module is read once per (dev, inode)
 * through /proc/PID/root, so files in containers and files deleted since
 * are still found while the process lives.  An address without a symbol
 * is named "lib.so+0xVADDR" (the ELF virtual address addr2line takes).
 */
#include <fcntl.h>
#include <elf.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memprof_int.h"

/* libstdc++'s demangler (C ABI symbol) */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define MP_MAX_MODS 4096
#define MP_MAX_SYMS (4u << 20)

void mp_symb_release(mp_symb *s)
{
    for (size_t i = 0; i < s->nmods; i++) {
        free(s->mods[i].path);
        free(s->mods[i].syms);
        free(s->mods[i].names);
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

static int sym_cmp(const void *a, const void *b)
{
    const mp_sym *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

typedef struct elf_img {
    const unsigned char *p;
    size_t n;
} elf_img;

static int img_open(const char *path, elf_img *im)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        close(fd);
        return -1;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return -1;
    im->p = m;
    im->n = (size_t)st.st_size;
    const Elf64_Ehdr *eh = m;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > im->n ||
        eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > im->n ||
        eh->e_shstrndx >= eh->e_shnum) {
        munmap(m, im->n);
        return -1;
    }
    return 0;
}

static const Elf64_Shdr *shdr(const elf_img *im, unsigned i)
{
    const Elf64_Ehdr *eh = (const void *)im->p;
    return (const Elf64_Shdr *)(im->p + eh->e_shoff) + i;
}

/* The function symbols of one symbol table section into m (appends). */
static int read_syms(mp_module *m, const elf_img *im, uint32_t type,
                     size_t *arena_len, size_t *arena_cap)
{
    const Elf64_Ehdr *eh = (const void *)im->p;
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *sh = shdr(im, i);
        if (sh->sh_type != type || sh->sh_link >= eh->e_shnum ||
            sh->sh_offset + sh->sh_size > im->n)
            continue;
        const Elf64_Shdr *strs = shdr(im, sh->sh_link);
        if (strs->sh_offset + strs->sh_size > im->n)
            continue;
        const char *str = (const char *)im->p + strs->sh_offset;
        size_t ns = sh->sh_size / sizeof(Elf64_Sym);
        const Elf64_Sym *sy = (const void *)(im->p + sh->sh_offset);
        for (size_t j = 0; j < ns && m->nsyms < MP_MAX_SYMS; j++) {
            unsigned t = ELF64_ST_TYPE(sy[j].st_info);
            if ((t != STT_FUNC && t != STT_GNU_IFUNC) || !sy[j].st_value ||
                sy[j].st_name >= strs->sh_size || sy[j].st_shndx == SHN_UNDEF)
                continue;
            const char *nm = str + sy[j].st_name;
            size_t nl = strnlen(nm, strs->sh_size - sy[j].st_name);
            if (!nl)
                continue;
            if (*arena_len + nl + 1 > *arena_cap) {
                size_t c = (*arena_cap ? *arena_cap * 2 : 65536) + nl;
                char *na = realloc(m->names, c);
                if (!na)
                    return -1;
                m->names = na;
                *arena_cap = c;
            }
            if (m->nsyms == m->capsyms) {
                size_t c = m->capsyms ? m->capsyms * 2 : 1024;
                mp_sym *nv = realloc(m->syms, c * sizeof *nv);
                if (!nv)
                    return -1;
                m->syms = nv;
                m->capsyms = c;
            }
            memcpy(m->names + *arena_len, nm, nl);
            m->names[*arena_len + nl] = 0;
            m->syms[m->nsyms++] =
                (mp_sym){ sy[j].st_value, sy[j].st_size, (uint32_t)*arena_len };
            *arena_len += nl + 1;
        }
        return 1;
    }
    return 0;
}

static void read_build_id(mp_module *m, const elf_img *im)
{
    const Elf64_Ehdr *eh = (const void *)im->p;
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *sh = shdr(im, i);
        if (sh->sh_type != SHT_NOTE || sh->sh_offset + sh->sh_size > im->n)
            continue;
        const unsigned char *q = im->p + sh->sh_offset;
        const unsigned char *e = q + sh->sh_size;
        while (q + sizeof(Elf64_Nhdr) <= e) {
            const Elf64_Nhdr *nh = (const void *)q;
            size_t nsz = (nh->n_namesz + 3) & ~3u;
            size_t dsz = (nh->n_descsz + 3) & ~3u;
            const unsigned char *d = q + sizeof *nh + nsz;
            if (d + nh->n_descsz > e)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                !memcmp(q + sizeof *nh, "GNU", 4) && nh->n_descsz <= 20) {
                for (unsigned k = 0; k < nh->n_descsz; k++)
                    snprintf(m->build_id + 2 * k, 3, "%02x", d[k]);
                return;
            }
            q = d + dsz;
        }
    }
}

static void mod_load(mp_symb *s, mp_module *m, int pid)
{
    char path[4400];
    elf_img im;
    m->state = -1;
    snprintf(path, sizeof path, "/proc/%d/root%s", pid, m->path);
    if (img_open(path, &im) && img_open(m->path, &im))
        return;
    s->elf_reads++;
    const Elf64_Ehdr *eh = (const void *)im.p;
    const Elf64_Phdr *ph = (const void *)(im.p + eh->e_phoff);
    for (unsigned i = 0; i < eh->e_phnum && m->nseg < 8; i++)
        if (ph[i].p_type == PT_LOAD)
            m->seg[m->nseg++] =
                (mp_seg){ ph[i].p_offset, ph[i].p_vaddr, ph[i].p_filesz };
    read_build_id(m, &im);
    size_t al = 0, ac = 0;
    int got = read_syms(m, &im, SHT_SYMTAB, &al, &ac);
    if (got <= 0 && m->build_id[0]) {
        elf_img dbg;
        snprintf(path, sizeof path, "/usr/lib/debug/.build-id/%.2s/%s.debug",
                 m->build_id, m->build_id + 2);
        if (!img_open(path, &dbg)) {
            got = read_syms(m, &dbg, SHT_SYMTAB, &al, &ac);
            munmap((void *)dbg.p, dbg.n);
        }
    }
    if (got <= 0)
        read_syms(m, &im, SHT_DYNSYM, &al, &ac);
    munmap((void *)im.p, im.n);
    if (m->nsyms)
        qsort(m->syms, m->nsyms, sizeof *m->syms, sym_cmp);
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
    uint64_t off = ip - mp->start + mp->pgoff, va = off;
    for (int i = 0; i < m->nseg; i++)
        if (off >= m->seg[i].off && off < m->seg[i].off + m->seg[i].filesz) {
            va = off - m->seg[i].off + m->seg[i].vaddr;
            break;
        }
    /* a return address: the call is the byte before it */
    uint64_t q = va ? va - 1 : va;
    lo = 0;
    hi = m->nsyms;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->syms[mid].addr <= q)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo) {
        const mp_sym *sy = &m->syms[lo - 1];
        if (q < sy->addr + (sy->size ? sy->size : 1)) {
            demangle(m->names + sy->name, buf, cap);
            return;
        }
    }
    snprintf(buf, cap, "%s+0x%" PRIx64, m->base, va);
}
