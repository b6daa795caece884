/*
 * attach_int.h - between the files of `gpufl attach` (docs/recorder.md#
 * gpufl-attach): cli_attach.c (the command), attach_proc.c (what
 * /proc and the ELF files say about the target: owner, libraries, symbol
 * addresses) and attach_ptrace.c (stopping one thread and calling
 * functions in it, x86-64 only).
 */
#ifndef GPUFL_CLI_ATTACH_INT_H
#define GPUFL_CLI_ATTACH_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ATTACH_PATH_MAX 4096
#define ATTACH_ERR_MAX 512

/* ---- attach_proc.c ---- */

/* A library mapped in the target: its path (as the target sees it) and
 * the address its file offset 0 is mapped at. */
typedef struct attach_lib {
    char path[ATTACH_PATH_MAX];
    uint64_t base;
    int found;
} attach_lib;

/* 0 when pid exists, is a 64-bit x86-64 process, and we may trace it as
 * far as ownership goes (same real, effective and saved uid, or we are
 * root); -1 with err said (exited, another user, 32-bit ...). */
int attach_proc_check(pid_t pid, char *err, size_t ecap);

/* The first mapping, with file offset 0, of a file whose base name starts
 * with one of prefixes (NULL-terminated list).  0 (lib->found says
 * whether), or -1 when /proc/PID/maps cannot be read (err). */
int attach_proc_find_lib(pid_t pid, const char *const *prefixes,
                         attach_lib *lib, char *err, size_t ecap);

/* The address of symbol name in the target, through lib's file (read as
 * /proc/PID/root/PATH).  0 when absent or the file is unreadable. */
uint64_t attach_proc_sym(pid_t pid, const attach_lib *lib, const char *name);

/* /proc/sys/kernel/yama/ptrace_scope, -1 when there is none. */
int attach_proc_yama(void);

/* Reads or writes n bytes at addr in the target (process_vm_readv /
 * writev: the permission is ptrace's; the process need not be stopped).
 * 0, or -1 with errno. */
int attach_proc_read(pid_t pid, uint64_t addr, void *buf, size_t n);
int attach_proc_write(pid_t pid, uint64_t addr, const void *buf, size_t n);

/* ---- attach_ptrace.c ---- */

typedef struct attach_thread attach_thread; /* one stopped thread */

/* Stops thread pid (the main thread) with PTRACE_SEIZE + INTERRUPT and
 * saves its registers (general, and the FPU/vector state) and the stack
 * area below its red zone that calls use.  *t is allocated; NULL with err
 * said on failure (the thread is left running). */
attach_thread *attach_ptrace_stop(pid_t pid, char *err, size_t ecap);

/* Copies n bytes into the saved stack area; their address in the target
 * in *addr.  0, or -1 (no room, or the write failed; err). */
int attach_ptrace_push(attach_thread *t, const void *data, size_t n,
                       uint64_t *addr, char *err, size_t ecap);

/* Calls fn(a0, a1) in the stopped thread (System V x86-64: arguments in
 * rdi and rsi, a 16-byte aligned stack, a return address of 0 whose
 * SIGSEGV we catch) and waits up to timeout_ms for it to return.  0 with
 * the return value in *ret, or -1 (err: it crashed, the process ended,
 * it did not return). */
int attach_ptrace_call(attach_thread *t, uint64_t fn, uint64_t a0, uint64_t a1,
                       uint64_t *ret, int timeout_ms, char *err, size_t ecap);

/* Puts the stack area and the registers back, detaches (the thread goes
 * on where it was stopped, a system call it was in restarted) and frees
 * t.  Accepts NULL.  0, or -1 when the thread could not be restored. */
int attach_ptrace_release(attach_thread *t, char *err, size_t ecap);

#endif
