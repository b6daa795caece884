/*
 * dwarf.c - `--dwarf`: native stacks for code built without frame
 * pointers.  The BPF program sends the registers at the return probe and a
 * copy of up to 16 KiB of the user stack (struct mp_ustack); this file
 * unwinds it with elfutils' libdwfl (.eh_frame / .debug_frame CFI), reading
 * memory from the copy and, past it, from the live process.  One Dwfl per
 * process, built from its /proc/PID/maps at the first stack and rebuilt
 * once when an address falls outside every module (a dlopen).
 */
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "memprof_int.h"

#define MP_DWARF_PROCS 256

typedef struct dw_proc {
    int pid;
    Dwfl *dwfl;
    const struct mp_ustack *u; /* the stack being unwound */
    uint64_t *ips;
    int n, max, rebuilt;
} dw_proc;

struct mp_dwarf {
    dw_proc p[MP_DWARF_PROCS];
    size_t n;
};

static const Dwfl_Callbacks proc_cb = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
};

static pid_t next_thread(Dwfl *d, void *arg, void **targ)
{
    (void)d;
    (void)arg;
    (void)targ;
    return 0; /* only get_thread is used */
}

static bool get_thread(Dwfl *d, pid_t tid, void *arg, void **targ)
{
    (void)d;
    (void)tid;
    *targ = arg;
    return true;
}

static bool mem_read(Dwfl *d, Dwarf_Addr addr, Dwarf_Word *out, void *arg)
{
    dw_proc *p = arg;
    const struct mp_ustack *u = p->u;
    (void)d;
    if (addr >= u->regs[1] && addr + 8 <= u->regs[1] + u->len) {
        memcpy(out, u->data + (addr - u->regs[1]), 8);
        return true;
    }
    struct iovec l = { out, 8 }, r = { (void *)(uintptr_t)addr, 8 };
    return process_vm_readv(p->pid, &l, 1, &r, 1, 0) == 8;
}

static bool set_regs(Dwfl_Thread *t, void *arg)
{
    const struct mp_ustack *u = ((dw_proc *)arg)->u;
    /* DWARF numbering, x86-64: 3 rbx, 6 rbp, 7 rsp, 12-15 r12-r15, 16 rip */
    Dwarf_Word bx = u->regs[3], bpsp[2] = { u->regs[2], u->regs[1] },
               hi[5] = { u->regs[4], u->regs[5], u->regs[6], u->regs[7],
                         u->regs[0] };
    return dwfl_thread_state_registers(t, 3, 1, &bx) &&
           dwfl_thread_state_registers(t, 6, 2, bpsp) &&
           dwfl_thread_state_registers(t, 12, 5, hi);
}

static const Dwfl_Thread_Callbacks thread_cb = {
    .next_thread = next_thread,
    .get_thread = get_thread,
    .memory_read = mem_read,
    .set_initial_registers = set_regs,
};

static int frame_cb(Dwfl_Frame *f, void *arg)
{
    dw_proc *p = arg;
    Dwarf_Addr pc;
    if (!dwfl_frame_pc(f, &pc, NULL) || !pc || p->n >= p->max)
        return DWARF_CB_ABORT;
    p->ips[p->n++] = pc;
    return DWARF_CB_OK;
}

static int build(dw_proc *p)
{
    if (p->dwfl)
        dwfl_end(p->dwfl);
    p->dwfl = dwfl_begin(&proc_cb);
    if (!p->dwfl)
        return -1;
    if (dwfl_linux_proc_report(p->dwfl, p->pid) ||
        dwfl_report_end(p->dwfl, NULL, NULL) ||
        !dwfl_attach_state(p->dwfl, NULL, p->pid, &thread_cb, p)) {
        dwfl_end(p->dwfl);
        p->dwfl = NULL;
        return -1;
    }
    return 0;
}

mp_dwarf *mp_dwarf_new(void)
{
    return calloc(1, sizeof(mp_dwarf));
}

void mp_dwarf_free(mp_dwarf *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        if (d->p[i].dwfl)
            dwfl_end(d->p[i].dwfl);
    free(d);
}

void mp_dwarf_forget(mp_dwarf *d, int pid)
{
    for (size_t i = 0; d && i < d->n; i++)
        if (d->p[i].pid == pid && d->p[i].dwfl) {
            dwfl_end(d->p[i].dwfl);
            d->p[i] = d->p[--d->n];
            return;
        }
}

int mp_dwarf_unwind(mp_dwarf *d, const struct mp_ustack *u, uint64_t *ips,
                    int max)
{
    dw_proc *p = NULL;
    for (size_t i = 0; i < d->n && !p; i++)
        if (d->p[i].pid == (int)u->pid)
            p = &d->p[i];
    if (!p) {
        if (d->n == MP_DWARF_PROCS)
            mp_dwarf_forget(d, d->p[0].pid); /* the oldest goes */
        p = &d->p[d->n++];
        memset(p, 0, sizeof *p);
        p->pid = (int)u->pid;
        if (build(p)) {
            d->n--;
            return 0;
        }
    } else if (!dwfl_addrmodule(p->dwfl, u->regs[0]) && !p->rebuilt) {
        p->rebuilt = 1; /* a library loaded since */
        if (build(p))
            return 0;
    }
    p->u = u;
    p->ips = ips;
    p->n = 0;
    p->max = max;
    dwfl_getthread_frames(p->dwfl, (pid_t)u->tid, frame_cb, p);
    return p->n;
}
