/*
 * python.c - CPython frames: recognise a CPython 3.11 in a process (its
 * libpython3.11.so or python3.11 executable in /proc/PID/maps), tell the
 * BPF program where its thread states and frames are (struct mp_pyconf),
 * and turn the (code object, instruction) pairs it sends back into
 * "qualname (file.py:LINE)" by reading the process's memory.
 *
 * The offsets come from CPython 3.11's own headers (read from
 * libpython3.11.so's DWARF with gdb `ptype/o`); they are stable within a
 * minor version.  Other versions get no Python frames (docs/memprof.md).
 */
#include <elf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "memprof_int.h"

static const mp_pyver versions[] = {
    { "3.11",
      { 0, 0x30, 0x10, 8, 152, 56, 8, 32, 48, 56, 0 },
      0x80,
      0x70,
      0x48,
      0x88,
      0xb8 },
};

/* An exported (or .symtab) symbol's ELF virtual address; 0 if absent. */
static uint64_t elf_sym(const char *path, const char *name, uint64_t *minva)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    uint64_t va = 0;
    if (fd < 0)
        return 0;
    if (fstat(fd, &st) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        close(fd);
        return 0;
    }
    size_t n = (size_t)st.st_size;
    const unsigned char *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return 0;
    const Elf64_Ehdr *eh = (const void *)p;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > n ||
        eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > n)
        goto out;
    const Elf64_Phdr *ph = (const void *)(p + eh->e_phoff);
    *minva = UINT64_MAX;
    for (unsigned i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < *minva)
            *minva = ph[i].p_vaddr & ~(uint64_t)0xfff;
    const Elf64_Shdr *sh = (const void *)(p + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum && !va; i++) {
        if ((sh[i].sh_type != SHT_DYNSYM && sh[i].sh_type != SHT_SYMTAB) ||
            sh[i].sh_link >= eh->e_shnum || sh[i].sh_offset + sh[i].sh_size > n)
            continue;
        const Elf64_Shdr *ss = &sh[sh[i].sh_link];
        if (ss->sh_offset + ss->sh_size > n)
            continue;
        const Elf64_Sym *sy = (const void *)(p + sh[i].sh_offset);
        const char *str = (const char *)p + ss->sh_offset;
        for (size_t k = 0; k < sh[i].sh_size / sizeof *sy; k++)
            if (sy[k].st_name < ss->sh_size && sy[k].st_value &&
                sy[k].st_shndx != SHN_UNDEF &&
                !strncmp(str + sy[k].st_name, name,
                         ss->sh_size - sy[k].st_name)) {
                va = sy[k].st_value;
                break;
            }
    }
out:
    munmap((void *)p, n);
    return va;
}

const mp_pyver *mp_py_detect(int pid, const char *maps, struct mp_pyconf *c)
{
    /* the module holding _PyRuntime: libpython3.X.so*, else python3.X */
    const char *line = maps;
    while (line && *line) {
        const char *nl = strchr(line, '\n');
        size_t ll = nl ? (size_t)(nl - line) : strlen(line);
        char buf[4352];
        if (ll >= sizeof buf)
            ll = sizeof buf - 1;
        memcpy(buf, line, ll);
        buf[ll] = 0;
        line = nl ? nl + 1 : NULL;
        unsigned long long a, b, off;
        int pos = 0;
        if (sscanf(buf, "%llx-%llx %*s %llx %*s %*s %n", &a, &b, &off, &pos) <
                3 ||
            pos <= 0 || buf[pos] != '/' || off != 0)
            continue;
        const char *path = buf + pos, *base = strrchr(path, '/') + 1;
        for (size_t v = 0; v < sizeof versions / sizeof versions[0]; v++) {
            char lib[32], exe[32];
            snprintf(lib, sizeof lib, "libpython%s.so", versions[v].name);
            snprintf(exe, sizeof exe, "python%s", versions[v].name);
            if (strncmp(base, lib, strlen(lib)) && strcmp(base, exe))
                continue;
            char full[4400];
            uint64_t minva = 0;
            snprintf(full, sizeof full, "/proc/%d/root%s", pid, path);
            uint64_t va = elf_sym(full, "_PyRuntime", &minva);
            if (!va)
                continue;
            *c = versions[v].conf;
            c->runtime = a + va - minva;
            return &versions[v];
        }
    }
    return NULL;
}

static int rd(int pid, uint64_t addr, void *out, size_t n)
{
    struct iovec l = { out, n }, r = { (void *)(uintptr_t)addr, n };
    return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -1;
}

/* A str object's text (ASCII or latin-1 compact strings) into buf. */
static void py_str(int pid, uint64_t obj, char *buf, size_t cap)
{
    unsigned char hdr[48];
    buf[0] = 0;
    if (!obj || rd(pid, obj, hdr, sizeof hdr))
        return;
    uint64_t len;
    uint32_t state;
    memcpy(&len, hdr + 16, 8);
    memcpy(&state, hdr + 32, 4);
    unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1,
             ascii = (state >> 6) & 1;
    if (!compact || kind != 1)
        return;
    uint64_t data = obj + (ascii ? 48 : 72);
    if (len >= cap)
        len = cap - 1;
    if (rd(pid, data, buf, len))
        len = 0;
    buf[len] = 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] >= 0x7f)
            buf[i] = '?';
}

/* 3.11 location table (Objects/locations.md): the line of code unit idx */
int64_t mp_py_line_of(const unsigned char *t, size_t n, int64_t line,
                      uint64_t idx)
{
    size_t i = 0;
    uint64_t at = 0;
#define VARINT(v)                                                              \
    do {                                                                       \
        unsigned sh = 0;                                                       \
        v = 0;                                                                 \
        while (i < n) {                                                        \
            unsigned char ch = t[i++];                                         \
            v |= (uint64_t)(ch & 63) << sh;                                    \
            sh += 6;                                                           \
            if (!(ch & 64) || sh > 30)                                         \
                break;                                                         \
        }                                                                      \
    } while (0)
    while (i < n) {
        unsigned char b = t[i++];
        unsigned code = (b >> 3) & 15, units = (b & 7) + 1;
        int64_t delta = 0;
        uint64_t v;
        if (code == 15) {
        } else if (code == 14) {
            VARINT(v);
            delta = (v & 1) ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
            VARINT(v);
            VARINT(v);
            VARINT(v);
        } else if (code == 13) {
            VARINT(v);
            delta = (v & 1) ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
        } else if (code >= 10) {
            delta = code - 10;
            i += 2;
        } else {
            i += 1;
        }
        /* a hostile table cannot overflow: deltas are < 2^32, the
         * line is kept within +-2^40 */
        line += delta;
        if (line > (1LL << 40) || line < -(1LL << 40))
            line = 0;
        if (idx < at + units)
            return line;
        at += units;
    }
#undef VARINT
    return line;
}

void mp_py_frame_name(int pid, const mp_pyver *v, uint64_t code, uint64_t instr,
                      char *buf, size_t cap)
{
    uint64_t qual = 0, file = 0, ltab = 0;
    int32_t first = 0;
    char q[256], f[512];
    if (rd(pid, code + v->co_qualname, &qual, 8) ||
        rd(pid, code + v->co_filename, &file, 8) ||
        rd(pid, code + v->co_firstlineno, &first, 4) ||
        rd(pid, code + v->co_linetable, &ltab, 8)) {
        snprintf(buf, cap, "[python 0x%" PRIx64 "]", code);
        return;
    }
    py_str(pid, qual, q, sizeof q);
    py_str(pid, file, f, sizeof f);
    int64_t line = first;
    uint64_t blen = 0;
    if (ltab && instr >= code + v->co_code && !rd(pid, ltab + 16, &blen, 8) &&
        blen && blen < 65536) {
        unsigned char *t = malloc(blen);
        if (t && !rd(pid, ltab + 32, t, blen))
            line =
                mp_py_line_of(t, blen, first, (instr - code - v->co_code) / 2);
        free(t);
    }
    const char *base = strrchr(f, '/');
    snprintf(buf, cap, "%s (%s:%" PRId64 ")", q[0] ? q : "?",
             base ? base + 1 : (f[0] ? f : "?"), line);
}
