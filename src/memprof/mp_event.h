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
    /* the runtime layer, probed only where cudart is linked statically
     * (no libcudart.so mapped): docs/memprof.md "Runtime layer" */
    MP_cudaMalloc,
    MP_cudaMallocManaged,
    MP_cudaMallocHost,
    MP_cudaHostAlloc,
    MP_cudaMallocAsync,
    MP_cudaMallocAsync_ptsz,
    MP_cudaMallocFromPoolAsync,
    MP_cudaMallocFromPoolAsync_ptsz,
    MP_cudaMallocPitch,
    MP_cudaFree,
    MP_cudaFreeHost,
    MP_cudaFreeAsync,
    MP_cudaFreeAsync_ptsz,
    MP_API_N
};
#define MP_API_RUNTIME MP_cudaMalloc /* the first runtime entry point */

/* Cookie bits of an attachment (BPF side): what the return probe reads. */
#define MP_COOKIE_API 0xffu
#define MP_COOKIE_OUT1 0x100u  /* *arg1 after success (pointer, handle) */
#define MP_COOKIE_PITCH 0x200u /* *arg2 after success (pitch) */
#define MP_COOKIE_STACK 0x400u /* an allocation: take the stacks */
/* the runtime layer: driver calls made inside it on the same thread are
 * not counted (the runtime call is) */
#define MP_COOKIE_RT 0x800u

enum mp_kind {
    MP_EV_CALL = 1, /* one completed API call */
    MP_EV_EXIT = 2, /* a process ended (pid) */
    MP_EV_MAPS = 3, /* preload only: `arg[0]` bytes of /proc/self/maps follow */
    MP_EV_USTACK = 4, /* --dwarf: struct mp_ustack, before its MP_EV_CALL */
    /* preload only: the name of a Python frame, resolved in the process:
     * arg[0] code object, arg[1] py_instr, arg[2] version (python.c's
     * table), arg[3] bytes of "qualname (file.py:LINE)" that follow */
    MP_EV_PYNAME = 5,
    /* preload only, --oom: the device's memory as the driver saw it when
     * an allocation failed with CUDA_ERROR_OUT_OF_MEMORY, just before
     * that call's MP_EV_CALL (flag MP_EVF_MEMINFO): arg[0] free bytes,
     * arg[1] total bytes, arg[2] cuMemGetInfo's CUresult, arg[3] the
     * device ordinal, arg[4] the CUresult that ordinal came with */
    MP_EV_MEMINFO = 6
};

#define MP_EVF_USTACK 1u  /* mp_event.flags: an MP_EV_USTACK precedes it */
#define MP_EVF_MEMINFO 2u /* an MP_EV_MEMINFO precedes it */
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

/* Where a CPython's thread states and frames are (per version, python.c's
 * table), and its _PyRuntime's address in the process. */
#define MP_PY_NOCF 0xffffffffu  /* cf_current: ts_frame is the frame itself */
#define MP_PY_OWNED_BY_CSTACK 3 /* 3.12+: an entry shim, not Python code */
/* 3.11+: py_instr is the instruction's address (low 56 bits) and the
 * frame's owner byte (top 8) */
#define MP_PY_INSTR_MASK 0x00ffffffffffffffULL
struct mp_pyconf {
    unsigned long long runtime; /* &_PyRuntime */
    unsigned int rt_main;       /* _PyRuntime.interpreters.main */
    unsigned int is_head;       /* PyInterpreterState.threads.head */
    unsigned int ts_next;       /* PyThreadState.next */
    unsigned int ts_thread_id;  /* PyThreadState.thread_id (pthread_t) */
    /* PyThreadState.cframe (3.11, 3.12), .current_frame (3.13),
     * .frame (3.10) */
    unsigned int ts_frame;
    unsigned int cf_current;  /* _PyCFrame.current_frame, or MP_PY_NOCF */
    unsigned int fr_code;     /* f_code (3.10-3.12), f_executable (3.13) */
    unsigned int fr_previous; /* previous, f_back (3.10) */
    /* prev_instr (3.11, 3.12), instr_ptr (3.13), f_lasti (3.10, int) */
    unsigned int fr_instr;
    unsigned int fr_owner; /* _PyInterpreterFrame.owner (3.11+) */
    /* 3.10 (no co_qualname): f_localsplus, whose first local's type goes
     * with f_lasti (mp_py310_pack) so a method reads Class.method */
    unsigned int fr_self;
    unsigned int pad;
};

/* 3.10: f_lasti (code units; -1 before the first instruction) and the
 * type of the frame's first local in one py_instr word: the type address
 * (8-aligned, below 2^47) in the high 44 bits, f_lasti in the low 20
 * (0xfffff: unknown or out of range). */
static inline unsigned long long mp_py310_pack(unsigned long long lasti,
                                               unsigned long long type)
{
    lasti &= 0xffffffffULL;
    if (lasti > 0xfffffULL)
        lasti = 0xfffffULL;
    return lasti | ((type >> 3) << 20);
}

#endif
