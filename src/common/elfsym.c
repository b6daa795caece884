/*
 * elfsym.c - the function symbols of one ELF file (elfsym.h).  The file is
 * mapped read-only, every offset checked against its size before use, and
 * only STT_FUNC / STT_GNU_IFUNC symbols with an address are kept.
 */
#include "common/elfsym.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct elf_img {
    const unsigned char *p;
    size_t n;
} elf_img;

static int img_open(const char *path, elf_img *im)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    void *m;
    const Elf64_Ehdr *eh;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
        st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        close(fd);
        return -1;
    }
    m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return -1;
    im->p = m;
    im->n = (size_t)st.st_size;
    eh = m;
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

/* By address, aliases by rank: elfsym_find takes the last of a run. */
static int sym_cmp(const void *a, const void *b)
{
    const elfsym_sym *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Aliases share an address (glibc: clone3, __clone3, __GI___clone3): the
 * name a user knows is global rather than local, and has the fewest
 * leading underscores. */
static uint32_t sym_rank(unsigned bind, const char *nm)
{
    uint32_t r = bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0, u = 0;
    while (nm[u] == '_' && u < 8)
        u++;
    return r * 16 + (8 - u);
}

/* The function symbols of the first section of `type` into m (appends):
 * 1 when such a section was read, 0 when there is none, -1 out of memory. */
static int read_syms(elfsym *m, const elf_img *im, uint32_t type,
                     size_t *arena_len, size_t *arena_cap)
{
    const Elf64_Ehdr *eh = (const void *)im->p;
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *sh = shdr(im, i), *strs;
        const Elf64_Sym *sy;
        const char *str;
        size_t ns;
        if (sh->sh_type != type || sh->sh_link >= eh->e_shnum ||
            sh->sh_offset + sh->sh_size > im->n)
            continue;
        strs = shdr(im, sh->sh_link);
        if (strs->sh_offset + strs->sh_size > im->n)
            continue;
        str = (const char *)im->p + strs->sh_offset;
        ns = sh->sh_size / sizeof(Elf64_Sym);
        sy = (const void *)(im->p + sh->sh_offset);
        for (size_t j = 0; j < ns && m->nsyms < ELFSYM_MAX_SYMS; j++) {
            unsigned t = ELF64_ST_TYPE(sy[j].st_info);
            const char *nm;
            size_t nl;
            if ((t != STT_FUNC && t != STT_GNU_IFUNC) || !sy[j].st_value ||
                sy[j].st_name >= strs->sh_size || sy[j].st_shndx == SHN_UNDEF)
                continue;
            nm = str + sy[j].st_name;
            nl = strnlen(nm, strs->sh_size - sy[j].st_name);
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
                elfsym_sym *nv = realloc(m->syms, c * sizeof *nv);
                if (!nv)
                    return -1;
                m->syms = nv;
                m->capsyms = c;
            }
            memcpy(m->names + *arena_len, nm, nl);
            m->names[*arena_len + nl] = 0;
            m->syms[m->nsyms++] =
                (elfsym_sym){ sy[j].st_value, sy[j].st_size,
                              (uint32_t)*arena_len,
                              sym_rank(ELF64_ST_BIND(sy[j].st_info), nm) };
            *arena_len += nl + 1;
        }
        return 1;
    }
    return 0;
}

static void read_build_id(elfsym *m, const elf_img *im)
{
    const Elf64_Ehdr *eh = (const void *)im->p;
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *sh = shdr(im, i);
        const unsigned char *q, *e;
        if (sh->sh_type != SHT_NOTE || sh->sh_offset + sh->sh_size > im->n)
            continue;
        q = im->p + sh->sh_offset;
        e = q + sh->sh_size;
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

int elfsym_load(elfsym *m, const char *path, const char *alt, int want_dynsym)
{
    elf_img im;
    const Elf64_Ehdr *eh;
    const Elf64_Phdr *ph;
    size_t al = 0, ac = 0;
    int got;
    memset(m, 0, sizeof *m);
    if ((!alt || img_open(alt, &im)) && img_open(path, &im))
        return -1;
    eh = (const void *)im.p;
    ph = (const void *)(im.p + eh->e_phoff);
    for (unsigned i = 0; i < eh->e_phnum && m->nseg < 8; i++)
        if (ph[i].p_type == PT_LOAD)
            m->seg[m->nseg++] =
                (elfsym_seg){ ph[i].p_offset, ph[i].p_vaddr, ph[i].p_filesz };
    read_build_id(m, &im);
    got = read_syms(m, &im, SHT_SYMTAB, &al, &ac);
    if (got <= 0 && m->build_id[0]) {
        char dbgpath[128];
        elf_img dbg;
        snprintf(dbgpath, sizeof dbgpath,
                 "/usr/lib/debug/.build-id/%.2s/%s.debug", m->build_id,
                 m->build_id + 2);
        if (!img_open(dbgpath, &dbg)) {
            got = read_syms(m, &dbg, SHT_SYMTAB, &al, &ac);
            munmap((void *)dbg.p, dbg.n);
        }
    }
    if (got <= 0 && want_dynsym)
        read_syms(m, &im, SHT_DYNSYM, &al, &ac);
    munmap((void *)im.p, im.n);
    if (m->nsyms)
        qsort(m->syms, m->nsyms, sizeof *m->syms, sym_cmp);
    return 0;
}

uint64_t elfsym_vaddr(const elfsym *m, uint64_t off)
{
    for (int i = 0; i < m->nseg; i++)
        if (off >= m->seg[i].off && off < m->seg[i].off + m->seg[i].filesz)
            return off - m->seg[i].off + m->seg[i].vaddr;
    return off;
}

const char *elfsym_find(const elfsym *m, uint64_t va, uint64_t *start)
{
    size_t lo = 0, hi = m->nsyms;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->syms[mid].addr <= va)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo) {
        const elfsym_sym *sy = &m->syms[lo - 1];
        if (va < sy->addr + (sy->size ? sy->size : 1)) {
            if (start)
                *start = sy->addr;
            return m->names + sy->name;
        }
    }
    return NULL;
}

uint64_t elfsym_lookup(const char *path, const char *name, uint64_t *minva)
{
    elf_img im;
    const Elf64_Ehdr *eh;
    const Elf64_Phdr *ph;
    uint64_t va = 0;
    if (img_open(path, &im))
        return 0;
    eh = (const void *)im.p;
    ph = (const void *)(im.p + eh->e_phoff);
    *minva = UINT64_MAX;
    for (unsigned i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < *minva)
            *minva = ph[i].p_vaddr & ~(uint64_t)0xfff;
    for (unsigned i = 0; i < eh->e_shnum && !va; i++) {
        const Elf64_Shdr *sh = shdr(&im, i), *ss;
        const Elf64_Sym *sy;
        const char *str;
        if ((sh->sh_type != SHT_DYNSYM && sh->sh_type != SHT_SYMTAB) ||
            sh->sh_link >= eh->e_shnum || sh->sh_offset + sh->sh_size > im.n)
            continue;
        ss = shdr(&im, sh->sh_link);
        if (ss->sh_offset + ss->sh_size > im.n)
            continue;
        sy = (const void *)(im.p + sh->sh_offset);
        str = (const char *)im.p + ss->sh_offset;
        for (size_t k = 0; k < sh->sh_size / sizeof *sy; k++)
            if (sy[k].st_name < ss->sh_size && sy[k].st_value &&
                sy[k].st_shndx != SHN_UNDEF &&
                !strncmp(str + sy[k].st_name, name,
                         ss->sh_size - sy[k].st_name)) {
                va = sy[k].st_value;
                break;
            }
    }
    munmap((void *)im.p, im.n);
    return va;
}

void elfsym_free(elfsym *m)
{
    free(m->syms);
    free(m->names);
    memset(m, 0, sizeof *m);
}
