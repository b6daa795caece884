/*
 * preload.c - libgpufl_memprof_preload.so, the interposer behind
 * `gpufl memprof --preload -- CMD`: defines the driver's allocation entry
 * points, calls the real ones (dlsym RTLD_NEXT), and writes one struct
 * mp_event per completed call to the pipe named by GPUFL_MEMPROF_FD,
 * the same record the BPF program sends.  Stacks come from glibc's
 * backtrace() (the .eh_frame unwinder), so they do not need frame
 * pointers.  /proc/self/maps goes down the pipe before the first event
 * and again when a library was loaded since, so the profiler can
 * symbolize after this process is gone.  In a CPython 3.10-3.13 process
 * the calling thread's Python frames go with each allocation: its thread
 * state from PyGILState_GetThisThreadState(), the frame chain walked with
 * python.c's offsets (mp_py_walk), and each new (code, instruction) pair
 * named in-process and sent once as an MP_EV_PYNAME record.
 *
 * The CUDA runtime (libcudart.so) reaches none of these through the global
 * scope: it dlopen()s libcuda.so.1 RTLD_LOCAL and looks up
 * cuGetProcAddress_v2 with dlsym on that handle, which LD_PRELOAD does not
 * interpose.  So on x86-64 this library also defines dlsym: a lookup on a
 * handle that finds a wrapped driver function gets the wrapper, and the
 * driver's functions are then known through that handle (RTLD_NEXT from
 * here cannot see a driver outside the global scope).  Elsewhere dlsym is
 * not hooked and such a runtime's calls are not seen.
 *
 * Never built with sanitizers: it is preloaded into programs that are not.
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memprof_int.h"

#define EXPORT __attribute__((visibility("default")))
#define MP_MAPS_MAX (4u << 20)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int out_fd = -2; /* -2 unknown, -1 off */
static int meminfo_on;  /* --oom: GPUFL_MEMPROF_MEMINFO */
static unsigned long long maps_adds;
static char comm[16];

static int fd_get(void)
{
    if (out_fd == -2) {
        const char *v = getenv("GPUFL_MEMPROF_FD");
        char *end;
        long fd = v ? strtol(v, &end, 10) : -1;
        out_fd = (v && *v && !*end && fd >= 0) ? (int)fd : -1;
        v = getenv("GPUFL_MEMPROF_MEMINFO");
        meminfo_on = v && !strcmp(v, "1");
        int c = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
        if (c >= 0) {
            ssize_t n = read(c, comm, sizeof comm - 1);
            if (n > 0 && comm[n - 1] == '\n')
                n--;
            comm[n > 0 ? n : 0] = 0;
            close(c);
        }
    }
    return out_fd;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static int adds_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(unsigned long long *)arg = info->dlpi_adds;
    return 1;
}

/* under mu: /proc/self/maps down the pipe when libraries were added */
static void send_maps(int fd)
{
    unsigned long long adds = 0;
    dl_iterate_phdr(adds_cb, &adds);
    if (adds == maps_adds)
        return;
    int m = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (m < 0)
        return;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            char *nb = cap < MP_MAPS_MAX ? realloc(buf, cap * 2) : NULL;
            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(m, buf + n, cap - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(m);
    if (!buf)
        return;
    struct mp_event h;
    memset(&h, 0, sizeof h);
    h.kind = MP_EV_MAPS;
    h.pid = (unsigned)getpid();
    h.arg[0] = n;
    if (!write_all(fd, &h, sizeof h) && !write_all(fd, buf, n))
        maps_adds = adds;
    free(buf);
}

/* CPython in this process (under mu): found through the dynamic symbol
 * table, looked for again whenever libraries were added */
static const mp_pyver *py_ver;
static void *(*py_tstate)(void);
static int (*py_initialized)(void);
static unsigned long long py_adds = ~0ULL;
#define PY_SENT 4096
static struct {
    unsigned long long code, instr;
    unsigned pid;
} py_sent[PY_SENT];

static void py_find(void)
{
    unsigned long long adds = 0;
    dl_iterate_phdr(adds_cb, &adds);
    if (py_ver || adds == py_adds)
        return;
    py_adds = adds;
    const char *(*ver)(void) =
        (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
    void *(*ts)(void) =
        (void *(*)(void))dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    /* before Py_Initialize the thread-state key is not created yet */
    int (*init)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    const mp_pyver *v = ver && ts && init ? mp_py_by_version(ver()) : NULL;
    if (v && !mp_py_offsets_ok(getpid(), v,
                               (uintptr_t)dlsym(RTLD_DEFAULT, "_PyRuntime")))
        v = NULL;
    if (v) {
        py_tstate = ts;
        py_initialized = init;
        py_ver = v;
    }
}

/* under mu: the calling thread's Python frames into e, their names down
 * the pipe first when not sent yet */
static void py_frames(int fd, struct mp_event *e)
{
    py_find();
    void *ts = py_ver && py_initialized() ? py_tstate() : NULL;
    if (!ts)
        return;
    uint64_t code[MP_MAX_PYFRAMES], instr[MP_MAX_PYFRAMES];
    int n =
        mp_py_walk(&py_ver->conf, (uintptr_t)ts, code, instr, MP_MAX_PYFRAMES);
    e->npy = n > 0 ? (unsigned)n : 0;
    for (unsigned i = 0; i < e->npy; i++) {
        e->py_code[i] = code[i];
        e->py_instr[i] = instr[i];
    }
    for (unsigned i = 0; i < e->npy; i++) {
        unsigned long long c = e->py_code[i], in = e->py_instr[i];
        size_t h = mp_py_key(c, in) % PY_SENT;
        if (py_sent[h].code == c && py_sent[h].instr == in &&
            py_sent[h].pid == e->pid)
            continue;
        char name[512];
        mp_py_frame_name((int)e->pid, py_ver, c, in, name, sizeof name);
        struct mp_event r;
        memset(&r, 0, sizeof r);
        r.kind = MP_EV_PYNAME;
        r.pid = e->pid;
        r.arg[0] = c;
        r.arg[1] = in;
        r.arg[2] = mp_py_index(py_ver);
        r.arg[3] = strlen(name);
        if (write_all(fd, &r, sizeof r) || write_all(fd, name, r.arg[3]))
            return;
        py_sent[h].code = c;
        py_sent[h].instr = in;
        py_sent[h].pid = e->pid;
    }
}

#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_FOUND 500
#define CU_MEM_LOCATION_TYPE_DEVICE 1

/* Every driver function this library calls, by index W_<name>: first the
 * wrapped ones (each has a wrapper below of the same name), then those
 * only called.  The real one is found with dlsym(RTLD_NEXT) when the
 * driver is in the global scope, or through the handle the program opened
 * it with (mp_preload_dlsym_handle) when it is not. */
#define MP_WRAPPED(X)                                                          \
    X(cuMemAlloc_v2)                                                           \
    X(cuMemAlloc)                                                              \
    X(cuMemAllocManaged)                                                       \
    X(cuMemAllocHost_v2)                                                       \
    X(cuMemAllocHost)                                                          \
    X(cuMemHostAlloc)                                                          \
    X(cuMemAllocAsync)                                                         \
    X(cuMemAllocAsync_ptsz)                                                    \
    X(cuMemAllocFromPoolAsync)                                                 \
    X(cuMemAllocFromPoolAsync_ptsz)                                            \
    X(cuMemCreate)                                                             \
    X(cuMemRelease)                                                            \
    X(cuMemUnmap)                                                              \
    X(cuMemFree_v2)                                                            \
    X(cuMemFree)                                                               \
    X(cuMemFreeHost)                                                           \
    X(cuMemFreeAsync)                                                          \
    X(cuMemFreeAsync_ptsz)                                                     \
    X(cuCtxDestroy_v2)                                                         \
    X(cuCtxDestroy)                                                            \
    X(cuMemAllocPitch_v2)                                                      \
    X(cuMemAllocPitch)                                                         \
    X(cuMemMap)                                                                \
    X(cuGetProcAddress)                                                        \
    X(cuGetProcAddress_v2)
#define MP_CALLED(X)                                                           \
    X(cuMemGetInfo_v2)                                                         \
    X(cuCtxGetDevice)

#define MP_W_ENUM(n) W_##n,
#define MP_W_COUNT(n) +1
#define MP_W_NAME(n) #n,
enum {
    MP_WRAPPED(MP_W_ENUM) MP_CALLED(MP_W_ENUM) W_N,
    W_NWRAPPED = 0 MP_WRAPPED(MP_W_COUNT)
};
static const char *const drv_names[W_N] = { MP_WRAPPED(MP_W_NAME)
                                                MP_CALLED(MP_W_NAME) };
/* set once (the first non-NULL wins), never changed */
static void *drv_real[W_N];

static void *drv_real_set(int i, void *p)
{
    void *old = NULL;
    if (__atomic_compare_exchange_n(&drv_real[i], &old, p, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
        return p;
    return old;
}

static void *drv_fn(int i)
{
    void *p = __atomic_load_n(&drv_real[i], __ATOMIC_ACQUIRE);
    if (!p && (p = dlsym(RTLD_NEXT, drv_names[i])))
        p = drv_real_set(i, p);
    return p;
}

/* --oom, an allocation just failed with out-of-memory: the device's free
 * and total memory from the driver, asked on this thread right after the
 * call returned (outside any driver call, with the context the failed
 * call used still current), into an MP_EV_MEMINFO record.  The device is
 * cuMemCreate's prop->location when that names one, else the current
 * context's (cuCtxGetDevice). */
static void meminfo(unsigned api, unsigned long long a2, struct mp_event *m)
{
    int (*get_info)(size_t *, size_t *) =
        (int (*)(size_t *, size_t *))drv_fn(W_cuMemGetInfo_v2);
    int (*get_dev)(int *) = (int (*)(int *))drv_fn(W_cuCtxGetDevice);
    size_t fr = 0, to = 0;
    int dev = -1, rc, drc = CUDA_ERROR_NOT_FOUND;

    rc = get_info ? get_info(&fr, &to) : CUDA_ERROR_NOT_FOUND;
    /* CUmemAllocationProp: type, requestedHandleTypes, then
     * location {type, id}: ints at byte offsets 8 and 12 */
    const int *prop = (const int *)(uintptr_t)a2;
    if (api == MP_cuMemCreate && prop &&
        prop[2] == CU_MEM_LOCATION_TYPE_DEVICE) {
        dev = prop[3];
        drc = 0;
    } else if (get_dev) {
        drc = get_dev(&dev);
    }
    memset(m, 0, sizeof *m);
    m->kind = MP_EV_MEMINFO;
    m->pid = (unsigned)getpid();
    m->tid = (unsigned)gettid();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    m->ts = (unsigned long long)ts.tv_sec * 1000000000ULL +
            (unsigned long long)ts.tv_nsec;
    m->arg[0] = fr;
    m->arg[1] = to;
    m->arg[2] = (unsigned)rc;
    m->arg[3] = (unsigned)dev;
    m->arg[4] = (unsigned)drc;
}

static __attribute__((noinline)) void
emit(unsigned api, int stack, int rc, unsigned long long a0,
     unsigned long long a1, unsigned long long a2, unsigned long long a3,
     unsigned long long a4, unsigned long long out, unsigned long long out2)
{
    int fd = fd_get();
    if (fd < 0)
        return;
    struct mp_event e;
    void *ips[MP_MAX_FRAMES + 2];
    /* frees are matched by pointer: only allocations need the stack */
    int n = stack ? backtrace(ips, MP_MAX_FRAMES + 2) : 0;
    memset(&e, 0, offsetof(struct mp_event, ips));
    /* ips[0] is in emit, ips[1] in the wrapper: the caller starts at 2 */
    e.nframes = n > 2 ? (unsigned)(n - 2) : 0;
    for (unsigned i = 0; i < e.nframes; i++)
        e.ips[i] = (uintptr_t)ips[i + 2];
    e.kind = MP_EV_CALL;
    e.api = api;
    e.pid = (unsigned)getpid();
    e.tid = (unsigned)gettid();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    e.ts = (unsigned long long)ts.tv_sec * 1000000000ULL +
           (unsigned long long)ts.tv_nsec;
    e.arg[0] = a0;
    e.arg[1] = a1;
    e.arg[2] = a2;
    e.arg[3] = a3;
    e.arg[4] = a4;
    e.out = out;
    e.out2 = out2;
    e.rc = rc;
    memcpy(e.comm, comm, sizeof e.comm);
    struct mp_event mi;
    int with_mi = stack && rc == CUDA_ERROR_OUT_OF_MEMORY && meminfo_on;
    if (with_mi) {
        meminfo(api, a2, &mi);
        e.flags |= MP_EVF_MEMINFO;
    }
    pthread_mutex_lock(&mu);
    send_maps(fd);
    if (stack)
        py_frames(fd, &e);
    if (with_mi)
        write_all(fd, &mi, sizeof mi);
    /* the record is fixed-size on the pipe: the reader needs no framing */
    write_all(fd, &e, sizeof e);
    pthread_mutex_unlock(&mu);
}

typedef unsigned long long u64;
typedef int (*fn1)(u64);
typedef int (*fn2)(u64, u64);
typedef int (*fn3)(u64, u64, u64);
typedef int (*fn4)(u64, u64, u64, u64);
typedef int (*fn5)(u64, u64, u64, u64, u64);

#define REAL(name, type)                                                       \
    type real = (type)drv_fn(W_##name);                                        \
    if (!real)                                                                 \
        return 999; /* CUDA_ERROR_UNKNOWN */

static u64 rd(u64 p, int rc)
{
    return rc == 0 && p ? *(const u64 *)(uintptr_t)p : 0;
}

/* allocations: out-pointer in arg 1 */
#define ALLOC2(name)                                                           \
    EXPORT int name(u64 a0, u64 a1)                                            \
    {                                                                          \
        REAL(name, fn2)                                                        \
        int rc = real(a0, a1);                                                 \
        emit(MP_##name, 1, rc, a0, a1, 0, 0, 0, rd(a0, rc), 0);                \
        return rc;                                                             \
    }
#define ALLOC3(name)                                                           \
    EXPORT int name(u64 a0, u64 a1, u64 a2)                                    \
    {                                                                          \
        REAL(name, fn3)                                                        \
        int rc = real(a0, a1, a2);                                             \
        emit(MP_##name, 1, rc, a0, a1, a2, 0, 0, rd(a0, rc), 0);               \
        return rc;                                                             \
    }
#define ALLOC4(name)                                                           \
    EXPORT int name(u64 a0, u64 a1, u64 a2, u64 a3)                            \
    {                                                                          \
        REAL(name, fn4)                                                        \
        int rc = real(a0, a1, a2, a3);                                         \
        emit(MP_##name, 1, rc, a0, a1, a2, a3, 0, rd(a0, rc), 0);              \
        return rc;                                                             \
    }
#define CALL1(name)                                                            \
    EXPORT int name(u64 a0)                                                    \
    {                                                                          \
        REAL(name, fn1)                                                        \
        int rc = real(a0);                                                     \
        emit(MP_##name, 0, rc, a0, 0, 0, 0, 0, 0, 0);                          \
        return rc;                                                             \
    }
#define CALL2(name)                                                            \
    EXPORT int name(u64 a0, u64 a1)                                            \
    {                                                                          \
        REAL(name, fn2)                                                        \
        int rc = real(a0, a1);                                                 \
        emit(MP_##name, 0, rc, a0, a1, 0, 0, 0, 0, 0);                         \
        return rc;                                                             \
    }

ALLOC2(cuMemAlloc_v2)
ALLOC2(cuMemAlloc)
ALLOC3(cuMemAllocManaged)
ALLOC2(cuMemAllocHost_v2)
ALLOC2(cuMemAllocHost)
ALLOC3(cuMemHostAlloc)
ALLOC3(cuMemAllocAsync)
ALLOC3(cuMemAllocAsync_ptsz)
ALLOC4(cuMemAllocFromPoolAsync)
ALLOC4(cuMemAllocFromPoolAsync_ptsz)
ALLOC4(cuMemCreate)
CALL1(cuMemRelease)
CALL2(cuMemUnmap)
CALL1(cuMemFree_v2)
CALL1(cuMemFree)
CALL1(cuMemFreeHost)
CALL2(cuMemFreeAsync)
CALL2(cuMemFreeAsync_ptsz)
CALL1(cuCtxDestroy_v2)
CALL1(cuCtxDestroy)

#define PITCH(name)                                                            \
    EXPORT int name(u64 a0, u64 a1, u64 a2, u64 a3, u64 a4)                    \
    {                                                                          \
        REAL(name, fn5)                                                        \
        int rc = real(a0, a1, a2, a3, a4);                                     \
        emit(MP_##name, 1, rc, a0, a1, a2, a3, a4, rd(a0, rc), rd(a1, rc));    \
        return rc;                                                             \
    }
PITCH(cuMemAllocPitch_v2)
PITCH(cuMemAllocPitch)

EXPORT int cuMemMap(u64 a0, u64 a1, u64 a2, u64 a3, u64 a4)
{
    REAL(cuMemMap, fn5)
    int rc = real(a0, a1, a2, a3, a4);
    emit(MP_cuMemMap, 0, rc, a0, a1, a2, a3, a4, 0, 0);
    return rc;
}

/* The CUDA runtime does not call the exported entry points: it asks
 * cuGetProcAddress for them by name.  When the driver hands out one of
 * the functions wrapped here, the wrapper goes back instead. */
EXPORT int cuGetProcAddress(const char *sym, void **pfn, int ver, u64 flags);
EXPORT int cuGetProcAddress_v2(const char *sym, void **pfn, int ver, u64 flags,
                               void *status);

#define MP_W_FN(n) (void *)n,
static void *const wrappers[W_NWRAPPED] = { MP_WRAPPED(MP_W_FN) };

static void swap_in_wrapper(void **pfn)
{
    if (!pfn || !*pfn)
        return;
    for (int i = 0; i < W_NWRAPPED; i++)
        if (drv_fn(i) == *pfn) {
            *pfn = wrappers[i];
            return;
        }
}

EXPORT int cuGetProcAddress(const char *sym, void **pfn, int ver, u64 flags)
{
    typedef int (*fn)(const char *, void **, int, u64);
    fn real = (fn)drv_fn(W_cuGetProcAddress);
    if (!real)
        return 999;
    int rc = real(sym, pfn, ver, flags);
    if (rc == 0)
        swap_in_wrapper(pfn);
    return rc;
}

/* CUDA 12: one more out-parameter (the symbol's status) */
EXPORT int cuGetProcAddress_v2(const char *sym, void **pfn, int ver, u64 flags,
                               void *status)
{
    typedef int (*fn)(const char *, void **, int, u64, void *);
    fn real = (fn)drv_fn(W_cuGetProcAddress_v2);
    if (!real)
        return 999;
    int rc = real(sym, pfn, ver, flags, status);
    if (rc == 0)
        swap_in_wrapper(pfn);
    return rc;
}

#if defined(__x86_64__)
/*
 * dlsym.  A lookup on a real handle (libcudart's on libcuda.so.1) that
 * finds a wrapped driver function returns the wrapper.  RTLD_DEFAULT and
 * RTLD_NEXT go to glibc's dlsym by a tail jump: glibc takes their meaning
 * (which object is "next", whose scope) from its caller's return address,
 * which must stay the original caller's - this library's own
 * dlsym(RTLD_NEXT) calls come through here too, since the exported
 * definition is the first one.  A C `return real(h, n)` is a tail call
 * only when the compiler makes it one (not at -O0, not under ASan), so the
 * entry is assembly.  glibc's dlsym comes from dlvsym, which is not
 * hooked: in a constructor, or on the first call when another library's
 * constructor ran first.  Only x86-64 has this entry; elsewhere dlsym is
 * not defined here.
 */
typedef void *(*dlsym_fn)(void *, const char *);
/* hidden, not static: the entry below names them */
__attribute__((visibility("hidden"), used)) dlsym_fn mp_preload_real_dlsym;
__attribute__((visibility("hidden"), used)) void mp_preload_dlsym_init(void);
__attribute__((visibility("hidden"), used)) void *
mp_preload_dlsym_handle(void *h, const char *name);

__attribute__((constructor(101))) void mp_preload_dlsym_init(void)
{
    if (__atomic_load_n(&mp_preload_real_dlsym, __ATOMIC_ACQUIRE))
        return;
    void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!p)
        p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5"); /* glibc < 2.34 */
    __atomic_store_n(&mp_preload_real_dlsym, (dlsym_fn)p, __ATOMIC_RELEASE);
}

static int wrapped_index(const char *name)
{
    if (!name || name[0] != 'c' || name[1] != 'u')
        return -1;
    for (int i = 0; i < W_NWRAPPED; i++)
        if (!strcmp(name, drv_names[i]))
            return i;
    return -1;
}

/* The driver is the library behind handle h (a wrapped name found there
 * that is not ours, with no driver known yet): every function not known
 * yet is taken from it. */
static void drv_adopt(void *h, dlsym_fn real)
{
    for (int i = 0; i < W_N; i++) {
        if (__atomic_load_n(&drv_real[i], __ATOMIC_ACQUIRE))
            continue;
        void *p = real(h, drv_names[i]);
        if (p && (i >= W_NWRAPPED || p != wrappers[i]))
            drv_real_set(i, p);
    }
}

void *mp_preload_dlsym_handle(void *h, const char *name)
{
    dlsym_fn real = __atomic_load_n(&mp_preload_real_dlsym, __ATOMIC_ACQUIRE);
    if (!real) {
        mp_preload_dlsym_init();
        real = __atomic_load_n(&mp_preload_real_dlsym, __ATOMIC_ACQUIRE);
        if (!real)
            return NULL;
    }
    void *p = real(h, name);
    int i = p ? wrapped_index(name) : -1;
    if (i < 0 || p == wrappers[i])
        return p;
    void *drv = drv_fn(i);
    if (!drv) {
        drv_adopt(h, real);
        drv = drv_fn(i);
        /* again, last: dlerror() answers for the caller's lookup, not for
         * a name the driver lacks */
        p = real(h, name);
    }
    return p && p == drv ? wrappers[i] : p;
}

#if defined(__CET__) && (__CET__ & 1)
#define MP_ENDBR "endbr64\n"
#else
#define MP_ENDBR ""
#endif
/* %rdi = handle: 0 is RTLD_DEFAULT, -1 RTLD_NEXT.  The slow path keeps
 * the two arguments across the init call and the stack 16-byte aligned
 * at the call (entry is 8 off: two pushes and 8 more). */
__asm__(".pushsection .text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        ".p2align 4\n"
        "dlsym:\n"
        ".cfi_startproc\n" MP_ENDBR "testq %rdi, %rdi\n"
        "je 1f\n"
        "cmpq $-1, %rdi\n"
        "jne mp_preload_dlsym_handle\n"
        "1:\n"
        "movq mp_preload_real_dlsym(%rip), %rax\n"
        "testq %rax, %rax\n"
        "je 2f\n"
        "jmp *%rax\n"
        "2:\n"
        "pushq %rdi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "pushq %rsi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "subq $8, %rsp\n"
        ".cfi_adjust_cfa_offset 8\n"
        "call mp_preload_dlsym_init\n"
        "addq $8, %rsp\n"
        ".cfi_adjust_cfa_offset -8\n"
        "popq %rsi\n"
        ".cfi_adjust_cfa_offset -8\n"
        "popq %rdi\n"
        ".cfi_adjust_cfa_offset -8\n"
        "movq mp_preload_real_dlsym(%rip), %rax\n"
        "testq %rax, %rax\n"
        "je 3f\n"
        "jmp *%rax\n"
        "3:\n"
        "xorl %eax, %eax\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size dlsym, .-dlsym\n"
        ".popsection\n");
#endif
