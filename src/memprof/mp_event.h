/*
 * mp_event.h - the record both event sources hand to user space: the BPF
 * program (memprof.bpf.c, through a ring buffer) and the LD_PRELOAD
 * interposer (preload.c, through a pipe).  One layout, so the aggregation
 * does not care where an event came from.  Compiled by clang -target bpf
 * too: plain fixed-width types only, no libc.
 */
#ifndef GPUFL_MEMPROF_MP_EVENT_H
#define GPUFL_MEMPROF_MP_EVENT_H

#define MP_MAX_FRAMES 64
#define MP_MAX_PYFRAMES 32

/* The driver entry points probed; the order is the API table in api.c. */
enum mp_api {
    MP_cuMemAlloc_v2 = 0,
    MP_cuMemAlloc,
    MP_cuMemAllocPitch_v2,
    MP_cuMemAllocPitch,
    MP_cuMemAllocManaged,
    MP_cuMemAllocHost_v2,
    MP_cuMemAllocHost,
    MP_cuMemHostAlloc,
    MP_cuMemAllocAsync,
    MP_cuMemAllocAsync_ptsz,
    MP_cuMemAllocFromPoolAsync,
    MP_cuMemAllocFromPoolAsync_ptsz,
    MP_cuMemCreate,
    MP_cuMemMap,
    MP_cuMemUnmap,
    MP_cuMemRelease,
    MP_cuMemFree_v2,
    MP_cuMemFree,
    MP_cuMemFreeHost,
    MP_cuMemFreeAsync,
    MP_cuMemFreeAsync_ptsz,
    MP_cuCtxDestroy_v2,
    MP_cuCtxDestroy,
    MP_API_N
};

/* Cookie bits of an attachment (BPF side): what the return probe reads. */
#define MP_COOKIE_API 0xffu
#define MP_COOKIE_OUT1 0x100u  /* *arg1 after success (pointer, handle) */
#define MP_COOKIE_PITCH 0x200u /* *arg2 after success (pitch) */
#define MP_COOKIE_STACK 0x400u /* an allocation: take the stacks */

enum mp_kind {
    MP_EV_CALL = 1, /* one completed API call */
    MP_EV_EXIT = 2, /* a process ended (pid) */
    MP_EV_MAPS = 3, /* preload only: `arg[0]` bytes of /proc/self/maps follow */
    MP_EV_USTACK = 4 /* --dwarf: struct mp_ustack, before its MP_EV_CALL */
};

#define MP_EVF_USTACK 1u /* mp_event.flags: an MP_EV_USTACK precedes it */
#define MP_USTACK_MAX 16384

/* --dwarf: the registers at the return probe and a copy of the user stack
 * from rsp up, for .eh_frame unwinding in user space (dwarf.c). */
struct mp_ustack {
    unsigned int kind; /* MP_EV_USTACK */
    unsigned int pid, tid;
    unsigned int len; /* bytes of data[] valid */
    /* rip, rsp, rbp, rbx, r12, r13, r14, r15 */
    unsigned long long regs[8];
    unsigned char data[MP_USTACK_MAX];
};

struct mp_event {
    unsigned int kind; /* mp_kind */
    unsigned int api;  /* mp_api */
    unsigned int pid, tid;
    unsigned long long ts; /* CLOCK_MONOTONIC ns */
    unsigned long long arg[5];
    unsigned long long out;  /* *arg1 after success */
    unsigned long long out2; /* *arg2 after success (pitch) */
    int rc;                  /* CUresult */
    unsigned int nframes;
    char comm[16];
    unsigned int npy;   /* CPython frames (eBPF, pids in `pyconf`) */
    unsigned int flags; /* MP_EVF_* */
    /* return addresses, innermost first (the caller of the API first) */
    unsigned long long ips[MP_MAX_FRAMES];
    /* per CPython frame, innermost first: the code object, and the last
     * instruction started in it (for the line number) */
    unsigned long long py_code[MP_MAX_PYFRAMES];
    unsigned long long py_instr[MP_MAX_PYFRAMES];
};

/* Where a CPython's thread states and frames are (per version, symb.c's
 * table), and its _PyRuntime's address in the process. */
struct mp_pyconf {
    unsigned long long runtime; /* &_PyRuntime */
    unsigned int rt_main;       /* _PyRuntime.interpreters.main */
    unsigned int is_head;       /* PyInterpreterState.threads.head */
    unsigned int ts_next;       /* PyThreadState.next */
    unsigned int ts_thread_id;  /* PyThreadState.thread_id (pthread_t) */
    unsigned int ts_cframe;     /* PyThreadState.cframe */
    unsigned int cf_current;    /* _PyCFrame.current_frame */
    unsigned int fr_code;       /* _PyInterpreterFrame.f_code */
    unsigned int fr_previous;   /* _PyInterpreterFrame.previous */
    unsigned int fr_instr;      /* _PyInterpreterFrame.prev_instr */
    unsigned int pad;
};

#endif
