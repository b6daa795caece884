/*
 * attach_proc.c - what /proc and the ELF files say about the process
 * `gpufl attach` is asked to enter: whether it exists, whose it is, its
 * architecture, the libraries it mapped and where a symbol of one lies in
 * it; and reading or writing its memory without stopping it.
 *
 * A symbol's address is the address the library's file offset 0 is mapped
 * at, minus the lowest PT_LOAD address of the file, plus the symbol's
 * value (src/common/elfsym.c reads the file).  The file is read as
 * /proc/PID/root/PATH, so a program in another mount namespace is read
 * from its own tree.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "attach_int.h"
#include "common/elfsym.h"

#define MAPS_LINE_MAX (ATTACH_PATH_MAX + 256)

/* "Uid:\tR\tE\tS\tF", "State:" and "Tgid:" of /proc/PID/status; -1 when
 * it cannot be read. */
static int proc_uids(pid_t pid, long uid[3], char *state, long *tgid, char *err,
                     size_t ecap)
{
    char path[64], line[256];
    int got = 0;
    FILE *f;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    f = fopen(path, "re");
    if (!f) {
        if (errno == ENOENT)
            snprintf(err, ecap, "process %d does not exist (it exited?)",
                     (int)pid);
        else
            snprintf(err, ecap, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    *state = '?';
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "Uid: %ld %ld %ld", &uid[0], &uid[1], &uid[2]) == 3)
            got = 1;
        else if (sscanf(line, "Tgid: %ld", tgid) != 1)
            (void)sscanf(line, "State: %c", state);
    }
    fclose(f);
    if (!got) {
        snprintf(err, ecap, "%s has no Uid line", path);
        return -1;
    }
    return 0;
}

int attach_proc_check(pid_t pid, char *err, size_t ecap)
{
    long uid[3], me = (long)geteuid(), tgid = pid;
    unsigned char h[EI_NIDENT + 4];
    char path[64], state;
    ssize_t n;
    int fd;
    if (pid == getpid()) {
        snprintf(err, ecap, "process %d is gpufl attach itself", (int)pid);
        return -1;
    }
    if (proc_uids(pid, uid, &state, &tgid, err, ecap))
        return -1;
    if (tgid != pid) {
        snprintf(err, ecap, "%d is a thread of process %ld: attach to %ld",
                 (int)pid, tgid, tgid);
        return -1;
    }
    if (state == 'Z' || state == 'X') {
        snprintf(err, ecap, "process %d has exited (it is a zombie)", (int)pid);
        return -1;
    }
    /* our calls would run a stopped process behind its stopper's back (and
     * its new thread would not run); a traced one refuses a second tracer */
    if (state == 'T' || state == 't') {
        snprintf(err, ecap, "process %d is %s", (int)pid,
                 state == 'T' ? "stopped (SIGSTOP, Ctrl-Z): continue it first"
                              : "being traced by a debugger");
        return -1;
    }
    /* the kernel's own rule (ptrace_may_access) also wants the real,
     * effective and saved uids to be ours; said here in plain words
     * before ptrace answers a bare EPERM */
    if (me != 0 && (uid[0] != me || uid[1] != me || uid[2] != me)) {
        snprintf(err, ecap,
                 "process %d belongs to uid %ld and you are uid %ld: "
                 "only its own user or root may attach to it",
                 (int)pid, uid[1], me);
        return -1;
    }
    snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, ecap, "cannot open %s: %s%s", path, strerror(errno),
                 errno == EACCES ? " (the process is not dumpable, or "
                                   "another user's)"
                                 : "");
        return -1;
    }
    n = read(fd, h, sizeof h);
    close(fd);
    if (n < (ssize_t)sizeof h || memcmp(h, ELFMAG, SELFMAG)) {
        snprintf(err, ecap, "process %d's program is not an ELF file",
                 (int)pid);
        return -1;
    }
    if (h[EI_CLASS] != ELFCLASS64 || h[EI_DATA] != ELFDATA2LSB ||
        (h[18] | h[19] << 8) != EM_X86_64) {
        snprintf(err, ecap,
                 "process %d is not a 64-bit x86-64 program: gpufl attach "
                 "supports x86-64 only",
                 (int)pid);
        return -1;
    }
    return 0;
}

static int has_prefix(const char *base, const char *const *prefixes)
{
    for (size_t i = 0; prefixes[i]; i++)
        if (!strncmp(base, prefixes[i], strlen(prefixes[i])))
            return 1;
    return 0;
}

int attach_proc_find_lib(pid_t pid, const char *const *prefixes,
                         attach_lib *lib, char *err, size_t ecap)
{
    char path[64], line[MAPS_LINE_MAX];
    FILE *f;
    memset(lib, 0, sizeof *lib);
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    f = fopen(path, "re");
    if (!f) {
        snprintf(err, ecap, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof line, f)) {
        unsigned long long a, b, off;
        const char *p, *base;
        size_t ll = strcspn(line, "\n");
        int pos = 0;
        if (line[ll] != '\n') { /* longer than any path we use: skip it */
            int c;
            while ((c = fgetc(f)) != EOF && c != '\n')
                ;
            continue;
        }
        line[ll] = 0;
        if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &a, &b, &off, &pos) <
                3 ||
            pos <= 0 || line[pos] != '/' || off != 0)
            continue;
        p = line + pos;
        base = strrchr(p, '/') + 1;
        if (!has_prefix(base, prefixes))
            continue;
        snprintf(lib->path, sizeof lib->path, "%s", p);
        lib->base = a;
        lib->found = 1;
        break;
    }
    fclose(f);
    return 0;
}

uint64_t attach_proc_sym(pid_t pid, const attach_lib *lib, const char *name)
{
    char full[ATTACH_PATH_MAX + 64];
    uint64_t va, minva = 0;
    if (!lib->found)
        return 0;
    snprintf(full, sizeof full, "/proc/%d/root%s", (int)pid, lib->path);
    va = elfsym_lookup(full, name, &minva);
    return va ? lib->base + va - minva : 0;
}

int attach_proc_yama(void)
{
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
    int v = -1;
    if (!f)
        return -1;
    if (fscanf(f, "%d", &v) != 1)
        v = -1;
    fclose(f);
    return v;
}

int attach_proc_read(pid_t pid, uint64_t addr, void *buf, size_t n)
{
    struct iovec l = { buf, n }, r = { (void *)(uintptr_t)addr, n };
    ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (got == (ssize_t)n)
        return 0;
    if (got >= 0)
        errno = EFAULT;
    return -1;
}

int attach_proc_write(pid_t pid, uint64_t addr, const void *buf, size_t n)
{
    struct iovec l = { (void *)(uintptr_t)buf, n },
                 r = { (void *)(uintptr_t)addr, n };
    ssize_t got = process_vm_writev(pid, &l, 1, &r, 1, 0);
    if (got == (ssize_t)n)
        return 0;
    if (got >= 0)
        errno = EFAULT;
    return -1;
}
