/*
 * attach_ptrace.c - stop one thread of another process and call functions
 * in it, as debuggers do (`gpufl attach`, docs/recorder.md#gpufl-attach).
 * x86-64 only: the registers, the calling convention and the system-call
 * restart rules below are that architecture's.
 *
 * The thread is stopped with PTRACE_SEIZE + PTRACE_INTERRUPT (no SIGSTOP
 * that the program or its parent could see); the other threads run on.
 * A thread stopped in user code may hold a lock the called function needs
 * (malloc's, the loader's): we let it run a little and stop it again, a
 * few times, to catch it inside a system call, where such locks are rarely
 * held.  A call: the saved registers with rip = the function, rdi/rsi =
 * its arguments, rsp 16-byte aligned below the red zone and the area we
 * wrote, a return address of 0 and orig_rax = -1 (so that the kernel does
 * not restart the system call the thread was in when we resume it into the
 * function).  The function's `ret` jumps to 0: the SIGSEGV stops the thread
 * again with the result in rax, and is never delivered.  Other signals that
 * arrive meanwhile are delivered (their handlers run on top of the call).
 * At the end, the stack area, the general registers and the FPU/vector
 * state (xsave) are put back and we detach: a system call that was
 * interrupted restarts, as after any signal.
 */
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>

#include "attach_int.h"

#if defined(__x86_64__)

#define RED_ZONE 128      /* the System V x86-64 ABI's */
#define SCRATCH 8192      /* stack bytes below it that calls may use */
#define XSTATE_MAX 65536  /* the largest xsave area we keep */
#define STOP_WAIT_MS 5000 /* for PTRACE_INTERRUPT to stop the thread */
#define SYSCALL_TRIES 10  /* stops to catch the thread in a syscall */
#define SYSCALL_RUN_NS 5000000L
#define EFLAGS_DF 0x400ul /* clear at every function entry (ABI) */

struct attach_thread {
    pid_t pid;
    int seized;
    struct user_regs_struct regs; /* as stopped */
    struct user_fpregs_struct fp; /* when xsave is not available */
    size_t xs_len;                /* 0: fp holds the FPU state */
    uint64_t low, top;            /* the scratch area; top moves down */
    uint8_t stack[SCRATCH];       /* its contents as stopped */
    uint8_t xs[XSTATE_MAX];
};

static void sleep_ns(long ns)
{
    struct timespec t = { 0, ns };
    nanosleep(&t, NULL);
}

/* Waits for the thread's next stop: 0 with *status, or -1 (err). */
static int wait_stop(attach_thread *t, int *status, int timeout_ms, char *err,
                     size_t ecap)
{
    for (int waited = 0;; waited++) {
        pid_t r = waitpid(t->pid, status, __WALL | WNOHANG);
        if (r < 0) {
            snprintf(err, ecap, "waitpid(%d): %s", (int)t->pid,
                     strerror(errno));
            return -1;
        }
        if (r == t->pid) {
            if (WIFEXITED(*status) || WIFSIGNALED(*status)) {
                snprintf(err, ecap, "process %d ended (%s %d)", (int)t->pid,
                         WIFEXITED(*status) ? "exit status" : "signal",
                         WIFEXITED(*status) ? WEXITSTATUS(*status)
                                            : WTERMSIG(*status));
                t->seized = 0; /* nothing left to detach from */
                return -1;
            }
            return 0;
        }
        if (waited >= timeout_ms) {
            snprintf(err, ecap, "timeout");
            return 1;
        }
        sleep_ns(1000000L);
    }
}

/* Interrupts the running thread and waits until it is in our stop,
 * delivering the signals that come first. */
static int interrupt(attach_thread *t, char *err, size_t ecap)
{
    int st, rc;
    if (ptrace(PTRACE_INTERRUPT, t->pid, 0, 0)) {
        snprintf(err, ecap, "PTRACE_INTERRUPT: %s", strerror(errno));
        return -1;
    }
    for (;;) {
        rc = wait_stop(t, &st, STOP_WAIT_MS, err, ecap);
        if (rc > 0)
            snprintf(err, ecap,
                     "thread %d did not stop within %d ms (PTRACE_INTERRUPT)",
                     (int)t->pid, STOP_WAIT_MS);
        if (rc)
            return -1;
        if (WIFSTOPPED(st) && (st >> 16) == PTRACE_EVENT_STOP)
            return 0;
        /* a signal-delivery stop came first: deliver it; our interrupt
         * stays pending */
        if (ptrace(PTRACE_CONT, t->pid, 0, (void *)(uintptr_t)WSTOPSIG(st))) {
            snprintf(err, ecap, "PTRACE_CONT: %s", strerror(errno));
            return -1;
        }
    }
}

static int get_state(attach_thread *t, char *err, size_t ecap)
{
    struct iovec v = { t->xs, sizeof t->xs };
    if (ptrace(PTRACE_GETREGS, t->pid, 0, &t->regs)) {
        snprintf(err, ecap, "PTRACE_GETREGS: %s", strerror(errno));
        return -1;
    }
    if (!ptrace(PTRACE_GETREGSET, t->pid, (void *)(uintptr_t)NT_X86_XSTATE,
                &v)) {
        t->xs_len = v.iov_len;
        return 0;
    }
    t->xs_len = 0;
    if (ptrace(PTRACE_GETFPREGS, t->pid, 0, &t->fp)) {
        snprintf(err, ecap, "PTRACE_GETFPREGS: %s", strerror(errno));
        return -1;
    }
    return 0;
}

attach_thread *attach_ptrace_stop(pid_t pid, char *err, size_t ecap)
{
    attach_thread *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, ecap, "out of memory");
        return NULL;
    }
    t->pid = pid;
    if (ptrace(PTRACE_SEIZE, pid, 0, 0)) {
        int e = errno, y = attach_proc_yama();
        if (e == ESRCH)
            snprintf(err, ecap, "process %d does not exist (it exited?)",
                     (int)pid);
        else if (e == EPERM && y > 0)
            snprintf(err, ecap,
                     "ptrace is not permitted: kernel.yama.ptrace_scope is "
                     "%d (%s); run gpufl attach as root, give it "
                     "CAP_SYS_PTRACE, or set the sysctl to 0",
                     y,
                     y == 1   ? "only a parent may trace its children"
                     : y == 2 ? "only CAP_SYS_PTRACE may trace"
                              : "ptrace is disabled until reboot");
        else if (e == EPERM)
            snprintf(err, ecap,
                     "ptrace is not permitted on process %d (EPERM: another "
                     "user's, not dumpable, already traced by a debugger, "
                     "or a security module refuses)",
                     (int)pid);
        else
            snprintf(err, ecap, "PTRACE_SEIZE(%d): %s", (int)pid, strerror(e));
        free(t);
        return NULL;
    }
    t->seized = 1;
    for (int i = 0;; i++) {
        if (interrupt(t, err, ecap) || get_state(t, err, ecap))
            goto fail;
        if ((long long)t->regs.orig_rax >= 0 || i == SYSCALL_TRIES)
            break;
        if (ptrace(PTRACE_CONT, pid, 0, 0)) {
            snprintf(err, ecap, "PTRACE_CONT: %s", strerror(errno));
            goto fail;
        }
        sleep_ns(SYSCALL_RUN_NS);
    }
    t->top = t->regs.rsp - RED_ZONE;
    t->low = t->top - SCRATCH;
    if (attach_proc_read(pid, t->low, t->stack, SCRATCH)) {
        snprintf(err, ecap,
                 "cannot read the %d bytes below thread %d's stack pointer: "
                 "%s",
                 SCRATCH, (int)pid, strerror(errno));
        goto fail;
    }
    return t;
fail:
    if (t->seized)
        (void)ptrace(PTRACE_DETACH, pid, 0, 0);
    free(t);
    return NULL;
}

int attach_ptrace_push(attach_thread *t, const void *data, size_t n,
                       uint64_t *addr, char *err, size_t ecap)
{
    uint64_t a = (t->top - n) & ~(uint64_t)15;
    if (n > SCRATCH || a < t->low + 64) { /* 64: the call's own words */
        snprintf(err, ecap, "no room on the stopped thread's stack");
        return -1;
    }
    if (attach_proc_write(t->pid, a, data, n)) {
        snprintf(err, ecap, "cannot write to the stopped thread's stack: %s",
                 strerror(errno));
        return -1;
    }
    t->top = a;
    *addr = a;
    return 0;
}

int attach_ptrace_call(attach_thread *t, uint64_t fn, uint64_t a0, uint64_t a1,
                       uint64_t *ret, int timeout_ms, char *err, size_t ecap)
{
    struct user_regs_struct r = t->regs;
    uint64_t zero = 0, sp = (t->top & ~(uint64_t)15) - 8;
    int st, rc;
    if (attach_proc_write(t->pid, sp, &zero, sizeof zero)) {
        snprintf(err, ecap, "cannot write to the stopped thread's stack: %s",
                 strerror(errno));
        return -1;
    }
    r.rip = fn;
    r.rdi = a0;
    r.rsi = a1;
    r.rax = 0;
    r.rsp = sp; /* sp + 8 is 16-byte aligned, as after a call */
    r.orig_rax = (unsigned long long)-1;
    r.eflags &= ~EFLAGS_DF;
    if (ptrace(PTRACE_SETREGS, t->pid, 0, &r) ||
        ptrace(PTRACE_CONT, t->pid, 0, 0)) {
        snprintf(err, ecap, "ptrace (set registers, continue): %s",
                 strerror(errno));
        return -1;
    }
    for (;;) {
        int sig;
        rc = wait_stop(t, &st, timeout_ms, err, ecap);
        if (rc > 0) {
            char e2[128];
            snprintf(err, ecap,
                     "the call in process %d did not return within %d ms (a "
                     "lock held by the stopped thread?)",
                     (int)t->pid, timeout_ms);
            /* stop it so that its registers can be put back; whatever
             * stop comes first will do (interrupt() would deliver the
             * SIGSEGV of a call that returned just now, killing it) */
            if (ptrace(PTRACE_INTERRUPT, t->pid, 0, 0) ||
                wait_stop(t, &st, STOP_WAIT_MS, e2, sizeof e2))
                t->seized = 0;
            return -1;
        }
        if (rc)
            return -1;
        sig = WSTOPSIG(st);
        if ((st >> 16) == PTRACE_EVENT_STOP) { /* a group stop: go on */
            if (ptrace(PTRACE_CONT, t->pid, 0, 0))
                break;
            continue;
        }
        if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
            sig == SIGABRT || sig == SIGTRAP) {
            if (ptrace(PTRACE_GETREGS, t->pid, 0, &r))
                break;
            if (sig == SIGSEGV && r.rip == 0) {
                *ret = r.rax;
                return 0;
            }
            snprintf(err, ecap,
                     "the call in process %d crashed (signal %d at 0x%llx); "
                     "the signal was not delivered",
                     (int)t->pid, sig, (unsigned long long)r.rip);
            return -1;
        }
        if (ptrace(PTRACE_CONT, t->pid, 0, (void *)(uintptr_t)sig))
            break;
    }
    snprintf(err, ecap, "ptrace: %s", strerror(errno));
    return -1;
}

int attach_ptrace_release(attach_thread *t, char *err, size_t ecap)
{
    struct iovec v;
    int bad = 0;
    if (!t)
        return 0;
    if (!t->seized) {
        free(t);
        return 0;
    }
    v.iov_base = t->xs;
    v.iov_len = t->xs_len;
    if (attach_proc_write(t->pid, t->low, t->stack, SCRATCH))
        bad = snprintf(err, ecap, "cannot restore the thread's stack: %s",
                       strerror(errno));
    if (ptrace(PTRACE_SETREGS, t->pid, 0, &t->regs))
        bad = snprintf(err, ecap, "cannot restore the thread's registers: %s",
                       strerror(errno));
    if (t->xs_len ? ptrace(PTRACE_SETREGSET, t->pid,
                           (void *)(uintptr_t)NT_X86_XSTATE, &v)
                  : ptrace(PTRACE_SETFPREGS, t->pid, 0, &t->fp))
        bad = snprintf(err, ecap,
                       "cannot restore the thread's FPU/vector registers: %s",
                       strerror(errno));
    /* from a signal-delivery stop, the signal (our SIGSEGV) is dropped */
    if (ptrace(PTRACE_DETACH, t->pid, 0, 0) && !bad)
        bad = snprintf(err, ecap, "PTRACE_DETACH: %s", strerror(errno));
    free(t);
    return bad ? -1 : 0;
}

#else /* not x86-64 */

attach_thread *attach_ptrace_stop(pid_t pid, char *err, size_t ecap)
{
    (void)pid;
    snprintf(err, ecap, "gpufl attach supports x86-64 only");
    return NULL;
}

int attach_ptrace_push(attach_thread *t, const void *data, size_t n,
                       uint64_t *addr, char *err, size_t ecap)
{
    (void)t, (void)data, (void)n, (void)addr;
    snprintf(err, ecap, "gpufl attach supports x86-64 only");
    return -1;
}

int attach_ptrace_call(attach_thread *t, uint64_t fn, uint64_t a0, uint64_t a1,
                       uint64_t *ret, int timeout_ms, char *err, size_t ecap)
{
    (void)t, (void)fn, (void)a0, (void)a1, (void)ret, (void)timeout_ms;
    snprintf(err, ecap, "gpufl attach supports x86-64 only");
    return -1;
}

int attach_ptrace_release(attach_thread *t, char *err, size_t ecap)
{
    (void)t, (void)err, (void)ecap;
    return 0;
}

#endif
