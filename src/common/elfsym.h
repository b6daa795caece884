/*
 * elfsym.h - the function symbols of one ELF file, for naming addresses:
 * its .symtab, else the .symtab of its build-id debug file under
 * /usr/lib/debug, else (when asked) its .dynsym.  Used by memprof for
 * other processes' stacks and by the CUPTI engine for launch stacks, where
 * dladdr alone names neither static functions nor a program not linked
 * with -rdynamic.
 */
#ifndef GPUFL_COMMON_ELFSYM_H
#define GPUFL_COMMON_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

#define ELFSYM_MAX_SYMS (4u << 20) /* per file: a cap on a hostile ELF */

typedef struct elfsym_sym {
    uint64_t addr, size;
    uint32_t name; /* offset into names */
    uint32_t rank; /* among aliases at one address, the highest is named */
} elfsym_sym;

typedef struct elfsym_seg {
    uint64_t off, vaddr, filesz;
} elfsym_seg;

typedef struct elfsym {
    elfsym_sym *syms; /* sorted by addr */
    size_t nsyms, capsyms;
    char *names;
    elfsym_seg seg[8]; /* PT_LOAD: file offset -> virtual address */
    int nseg;
    char build_id[41]; /* hex, "" when none */
} elfsym;

/* Reads path (alt first when not NULL: a container's /proc/PID/root copy).
 * want_dynsym: fall back to .dynsym when no .symtab is found.  0 (m may
 * hold no symbols), or -1 when neither file is a readable 64-bit ELF. */
int elfsym_load(elfsym *m, const char *path, const char *alt, int want_dynsym);

/* The virtual address of a file offset (as /proc/PID/maps gives it). */
uint64_t elfsym_vaddr(const elfsym *m, uint64_t file_off);

/* The raw (mangled) name of the function holding virtual address va, and
 * its start in *start; NULL when no symbol covers it. */
const char *elfsym_find(const elfsym *m, uint64_t va, uint64_t *start);

void elfsym_free(elfsym *m);

/* One symbol by name, any type (.dynsym, then .symtab, in section order):
 * its virtual address, 0 when absent or the file is unreadable; *minva is
 * then the lowest PT_LOAD address, page-aligned (memprof: where in a
 * process a library's _PyRuntime or cudaMalloc lies). */
uint64_t elfsym_lookup(const char *path, const char *name, uint64_t *minva);

#endif
