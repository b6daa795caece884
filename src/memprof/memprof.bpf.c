/*
 * memprof.bpf.c - the kernel half of gpufl memprof: uprobes and uretprobes
 * on the CUDA driver's allocation API, one event per completed call.
 *
 * Both programs are generic: the attachment's BPF cookie says which API it
 * is (MP_COOKIE_*), so 2 programs serve every symbol.  The entry probe
 * keeps the arguments per (thread, API); the return probe reads the result,
 * the out-parameters (valid only after the call returned) and the user
 * stack, and sends it all to user space, which does the accounting.  The
 * stack is taken at return: at entry the direct caller is missing whenever
 * the probed function does not start with `push %rbp` (docs/memprof.md,
 * "Why the stack is taken at return").
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "mp_event.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* 0 all processes, 1 the pids in `targets`, 2 tasks under `cgrp` */
const volatile __u32 filter_mode = 0;
/* --dwarf: send registers and a stack copy before each call's event */
const volatile __u32 dwarf = 0;

struct ctx_key {
    __u32 tid;
    __u32 api;
};
struct ctx_val {
    __u64 arg[5];
};

struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 16384);
    __type(key, struct ctx_key);
    __type(value, struct ctx_val);
} calls SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, __u32);
    __type(value, __u8);
} targets SEC(".maps");

/* tid -> runtime calls (MP_COOKIE_RT) in progress on that thread: the
 * driver calls a statically linked cudaMalloc makes are not counted, the
 * cudaMalloc is (docs/memprof.md "Runtime layer").  LRU: a thread that
 * died inside a runtime call does not keep its entry. */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 16384);
    __type(key, __u32);
    __type(value, __u32);
} rt_depth SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} cgrp SEC(".maps");

/* pid -> where its CPython keeps thread states and frames (user space
 * fills it for the processes it recognises) */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, __u32);
    __type(value, struct mp_pyconf);
} pyconf SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 8 << 20);
} events SEC(".maps");

/* events dropped because the ring was full (index 0) */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u64);
} lost SEC(".maps");

static __always_inline int wanted(__u32 pid)
{
    if (filter_mode == 1)
        return bpf_map_lookup_elem(&targets, &pid) != 0;
    if (filter_mode == 2)
        return bpf_current_task_under_cgroup(&cgrp, 0) == 1;
    return 1;
}

static __always_inline void count_lost(void)
{
    __u32 k = 0;
    __u64 *v = bpf_map_lookup_elem(&lost, &k);
    if (v)
        __sync_fetch_and_add(v, 1);
}

static __always_inline __u64 rd(__u64 addr)
{
    __u64 v = 0;
    bpf_probe_read_user(&v, sizeof v, (void *)addr);
    return v;
}

/* The CPython frames of the current thread, innermost first: the thread
 * state whose thread_id is this thread's pthread_t (= fsbase on x86-64
 * glibc) among the main interpreter's, then the frame chain.  Works with
 * the GIL released (ctypes, C extensions), unlike _PyRuntime's
 * tstate_current.  One walk for 3.10 (PyFrameObject.f_back) and 3.11+
 * (_PyInterpreterFrame.previous): only the offsets differ (mp_pyconf). */
static __always_inline void python_frames(struct mp_event *e, __u32 pid)
{
    struct mp_pyconf *c = bpf_map_lookup_elem(&pyconf, &pid);
    e->npy = 0;
    if (!c)
        return;
    struct task_struct *task = (void *)bpf_get_current_task();
    __u64 fs = BPF_CORE_READ(task, thread.fsbase);
    __u64 interp = rd(c->runtime + c->rt_main);
    __u64 ts = interp ? rd(interp + c->is_head) : 0;
    for (int i = 0; i < 64 && ts; i++) {
        if (rd(ts + c->ts_thread_id) == fs)
            break;
        ts = rd(ts + c->ts_next);
    }
    if (!ts)
        return;
    __u64 fr = rd(ts + c->ts_frame);
    if (c->cf_current != MP_PY_NOCF)
        fr = fr ? rd(fr + c->cf_current) : 0;
    __u32 n = 0;
    /* every frame goes out (n = i + 1: a conditional count multiplies
     * the verifier's states past its limit); user space drops the 3.12+
     * entry shims by the owner byte in the top of py_instr */
    for (int i = 0; i < MP_MAX_PYFRAMES && fr; i++) {
        __u64 instr = rd(fr + c->fr_instr);
        e->py_code[i] = rd(fr + c->fr_code);
        if (c->fr_self) {
            __u64 self = rd(fr + c->fr_self);
            instr = mp_py310_pack(instr, self ? rd(self + 8) : 0);
        } else {
            __u8 owner = 0;
            bpf_probe_read_user(&owner, 1, (void *)(fr + c->fr_owner));
            instr = (instr & MP_PY_INSTR_MASK) | (__u64)owner << 56;
        }
        e->py_instr[i] = instr;
        n = i + 1;
        fr = rd(fr + c->fr_previous);
    }
    e->npy = n;
}

/* --dwarf: the stack from rsp up, as much of MP_USTACK_MAX as is mapped
 * (the top of the stack may be closer than that) */
static __always_inline int send_ustack(struct pt_regs *regs, __u64 id)
{
    struct mp_ustack *u = bpf_ringbuf_reserve(&events, sizeof *u, 0);
    if (!u)
        return 0;
    u->kind = MP_EV_USTACK;
    u->pid = id >> 32;
    u->tid = (__u32)id;
    u->regs[0] = PT_REGS_IP(regs);
    u->regs[1] = PT_REGS_SP(regs);
    u->regs[2] = PT_REGS_FP(regs);
    u->regs[3] = regs->bx;
    u->regs[4] = regs->r12;
    u->regs[5] = regs->r13;
    u->regs[6] = regs->r14;
    u->regs[7] = regs->r15;
    /* the main thread's stack may end (env strings, then the end of the
     * mapping) less than 16 KiB above rsp, at a random distance */
    struct task_struct *task = (void *)bpf_get_current_task();
    __u64 top = BPF_CORE_READ(task, mm, env_end);
    __u64 want = MP_USTACK_MAX;
    if (top > u->regs[1] && top - u->regs[1] < want)
        want = top - u->regs[1];
    __u32 len = want & (2 * MP_USTACK_MAX - 1);
    if (len > MP_USTACK_MAX)
        len = MP_USTACK_MAX;
    for (int i = 0; i < 4; i++) {
        if (len && !bpf_probe_read_user(u->data, len, (void *)u->regs[1]))
            break;
        len >>= 1; /* did not read: try half as much */
        if (i == 3)
            len = 0;
    }
    u->len = len;
    bpf_ringbuf_submit(u, 0);
    return len != 0;
}

SEC("uprobe")
int BPF_KPROBE(mp_entry)
{
    __u64 id = bpf_get_current_pid_tgid();
    if (!wanted(id >> 32))
        return 0;
    __u64 cookie = bpf_get_attach_cookie(ctx);
    __u32 tid = (__u32)id;
    __u32 *depth = bpf_map_lookup_elem(&rt_depth, &tid);
    if (cookie & MP_COOKIE_RT) {
        __u32 one = 1;
        if (depth)
            __sync_fetch_and_add(depth, 1);
        else
            bpf_map_update_elem(&rt_depth, &tid, &one, BPF_ANY);
    } else if (depth && *depth) {
        return 0; /* inside a runtime call: counted there */
    }
    struct ctx_key k = { .tid = tid, .api = cookie & MP_COOKIE_API };
    struct ctx_val v = { .arg = { PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx),
                                  PT_REGS_PARM3(ctx), PT_REGS_PARM4(ctx),
                                  PT_REGS_PARM5(ctx) } };
    bpf_map_update_elem(&calls, &k, &v, BPF_ANY);
    return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(mp_return)
{
    __u64 id = bpf_get_current_pid_tgid();
    __u64 cookie = bpf_get_attach_cookie(ctx);
    struct ctx_key k = { .tid = (__u32)id, .api = cookie & MP_COOKIE_API };
    if (cookie & MP_COOKIE_RT) {
        __u32 *depth = bpf_map_lookup_elem(&rt_depth, &k.tid);
        if (depth && *depth > 1)
            __sync_fetch_and_add(depth, -1);
        else if (depth)
            bpf_map_delete_elem(&rt_depth, &k.tid);
    }
    struct ctx_val *v = bpf_map_lookup_elem(&calls, &k);
    if (!v)
        return 0;
    /* the stack copy goes first: the ring hands records over in the order
     * they were reserved */
    int want_stack = (cookie & MP_COOKIE_STACK) != 0;
    int ustack = dwarf && want_stack ? send_ustack(ctx, id) : 0;
    struct mp_event *e = bpf_ringbuf_reserve(&events, sizeof *e, 0);
    if (!e) {
        bpf_map_delete_elem(&calls, &k);
        count_lost();
        return 0;
    }
    e->kind = MP_EV_CALL;
    e->flags = ustack ? MP_EVF_USTACK : 0;
    e->api = k.api;
    e->pid = id >> 32;
    e->tid = (__u32)id;
    e->ts = bpf_ktime_get_ns();
    for (int i = 0; i < 5; i++)
        e->arg[i] = v->arg[i];
    bpf_map_delete_elem(&calls, &k);
    e->rc = (int)PT_REGS_RC(ctx);
    e->out = 0;
    e->out2 = 0;
    if (e->rc == 0 && (cookie & MP_COOKIE_OUT1))
        bpf_probe_read_user(&e->out, sizeof e->out, (void *)e->arg[0]);
    if (e->rc == 0 && (cookie & MP_COOKIE_PITCH))
        bpf_probe_read_user(&e->out2, sizeof e->out2, (void *)e->arg[1]);
    bpf_get_current_comm(e->comm, sizeof e->comm);
    e->nframes = 0;
    e->npy = 0;
    if (want_stack) { /* a free is matched by pointer: no stack needed */
        long n = bpf_get_stack(ctx, e->ips, sizeof e->ips, BPF_F_USER_STACK);
        e->nframes = n > 0 ? (__u32)n / 8 : 0;
        python_frames(e, e->pid);
    }
    bpf_ringbuf_submit(e, 0);
    return 0;
}

/* A process ended: user space releases what it still held (implicit free).
 * tp_btf, not a classic tracepoint: no tracefs needed. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(mp_exit, struct task_struct *p)
{
    __u64 id = bpf_get_current_pid_tgid();
    if ((__u32)id != (id >> 32) || !wanted(id >> 32))
        return 0;
    struct mp_event *e = bpf_ringbuf_reserve(&events, sizeof *e, 0);
    if (!e) {
        count_lost();
        return 0;
    }
    /* only these fields are read for an exit */
    e->kind = MP_EV_EXIT;
    e->api = 0;
    e->nframes = 0;
    e->npy = 0;
    e->rc = 0;
    e->pid = id >> 32;
    e->tid = (__u32)id;
    e->ts = bpf_ktime_get_ns();
    bpf_ringbuf_submit(e, 0);
    return 0;
}
