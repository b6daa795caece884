/*
 * test_options_abi.c - the size rule of libgpufl's versioned structs
 * (gpufl_options, record.h), against the shared library as programs link
 * it.
 *
 * A program built against an older header has a smaller struct: it is
 * written and read only up to its sz (checked with a canary after the
 * struct and with the struct ending on a page boundary before a PROT_NONE
 * page, so any byte touched past sz faults, with or without ASan).  A
 * program built against a newer header has a larger struct: its unknown
 * tail is zeroed by gpufl_options_init and refused when it is set.
 *
 * The init functions are looked up with dlsym, as what the header does
 * inline: this test also runs against a libgpufl that predates
 * gpufl_options_init_sz (it then calls the old gpufl_options_init, which
 * is what a program had to do then) and fails there.
 */
#include <dlfcn.h>
#include <gpufl/gpufl.h>
#include <gpufl/record.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "test.h"

/* An "old header": gpufl_options as it would have been before the CUPTI
 * fields were appended (ends with `disabled`). */
typedef struct old_options {
    size_t sz;
    const char *app, *log_dir, *log_prefix, *engines;
    uint32_t system_interval_ms;
    uint64_t rotate_bytes;
    uint32_t rotate_keep;
    int compress_rotated;
    uint64_t min_free_bytes;
    uint32_t ring_events, flush_ms;
    uint64_t sim_seed;
    uint32_t sim_steps, sim_devices;
    double sim_speed;
    const char *nvml_lib, *proc_root;
    gpufl_log_fn log;
    void *log_ud;
    int log_level;
    int disabled;
} old_options;

_Static_assert(sizeof(old_options) == offsetof(gpufl_options, cupti_lib),
               "the old header is a prefix of the current one");

/* A "newer header": two fields this library does not know. */
typedef struct new_options {
    gpufl_options o;
    uint64_t future_a;
    uint32_t future_b;
} new_options;

/* The exact types of the exported functions (UBSan checks calls). */
typedef int (*init_sz_fn)(gpufl_options *o, size_t sz);
typedef int (*init_fn)(gpufl_options *o);

static init_sz_fn init_sz;
static init_fn init_old; /* the 0.1.0 exported symbol */
static char logdir[512];

/* What gpufl_options_init() in the program's header does. */
static int opts_init(void *o, size_t sz)
{
    if (init_sz)
        return init_sz((gpufl_options *)o, sz);
    /* a libgpufl without _sz: the only call a program could make then */
    return init_old((gpufl_options *)o);
}

static sigjmp_buf fault_jmp;
static volatile sig_atomic_t faulted;

static void on_fault(int sig)
{
    (void)sig;
    faulted = 1;
    siglongjmp(fault_jmp, 1);
}

/* n bytes that end where a PROT_NONE page begins. */
static void *guarded(size_t n, void **map)
{
    long pg = sysconf(_SC_PAGESIZE);
    char *m = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    mprotect(m + pg, (size_t)pg, PROT_NONE);
    *map = m;
    memset(m, 0xA5, (size_t)pg);
    return m + pg - n;
}

static void unguard(void *map)
{
    munmap(map, (size_t)sysconf(_SC_PAGESIZE) * 2);
}

static int all_bytes(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

static void quiet_session(gpufl_options *o)
{
    o->log_dir = logdir;
    o->engines = "host";
    o->system_interval_ms = 0;
    o->min_free_bytes = 0;
}

static void test_old_header_canary(void)
{
    struct {
        old_options o;
        unsigned char canary[64];
    } x;
    memset(&x, 0xA5, sizeof x);
    CHECK(opts_init(&x.o, sizeof x.o) == GPUFL_OK);
    CHECK(all_bytes(x.canary, sizeof x.canary, 0xA5)); /* nothing past sz */
    CHECK_EQ_U64(x.o.sz, sizeof x.o);
    CHECK_EQ_U64(x.o.ring_events, 16384);
    CHECK_STR(x.o.engines, "auto");
    CHECK(x.o.log_level == -1 && x.o.disabled == 0);
}

/* Filled and run by gpufl_init with nothing readable past sz. */
static void test_old_header_guard(void)
{
    void *map = NULL;
    old_options *o = guarded(sizeof *o, &map);
    struct sigaction sa, old_segv, old_bus;
    REQUIRE(o);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fault;
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
    faulted = 0;
    if (sigsetjmp(fault_jmp, 1) == 0) {
        CHECK(opts_init(o, sizeof *o) == GPUFL_OK);
        quiet_session((gpufl_options *)o);
        CHECK(gpufl_init((const gpufl_options *)o) == GPUFL_OK);
        gpufl_shutdown();
    }
    sigaction(SIGSEGV, &old_segv, NULL);
    sigaction(SIGBUS, &old_bus, NULL);
    if (faulted) {
        /* the library faulted holding its locks: nothing else can run */
        fprintf(stderr, "libgpufl touched memory past the caller's sz\n");
        printf("%d passed, %d failed\n", t_pass, t_fail + 1);
        _exit(1);
    }
    CHECK(!gpufl_active());
    unguard(map);
}

static void test_newer_header(void)
{
    new_options n;
    memset(&n, 0xA5, sizeof n);
    CHECK(opts_init(&n, sizeof n) == GPUFL_OK);
    CHECK_EQ_U64(n.o.sz, sizeof n);
    /* the tail this library does not know is zeroed: "not set" */
    CHECK(n.future_a == 0 && n.future_b == 0);
    quiet_session(&n.o);
    CHECK(gpufl_init(&n.o) == GPUFL_OK);
    gpufl_shutdown();
    n.future_b = 7; /* a field this library does not have */
    CHECK(gpufl_init(&n.o) == GPUFL_EINVAL);
    CHECK(!gpufl_active());
    CHECK(strstr(gpufl_last_error(), "knows only the first") != NULL);
    gpufl_shutdown();
    n.future_b = 0;
    n.future_a = 1;
    CHECK(gpufl_init(&n.o) == GPUFL_EINVAL);
    CHECK(!gpufl_active());
    gpufl_shutdown();
}

static void test_bad_sizes(void)
{
    struct {
        gpufl_options o;
        unsigned char after[64];
    } x;
    static unsigned char big[8192];
    gpufl_options o;
    if (!init_sz) {
        CHECK(!"gpufl_options_init_sz is not exported");
        return;
    }
    memset(&x, 0xA5, sizeof x);
    CHECK(init_sz(&x.o, 8) == GPUFL_EINVAL); /* not a gpufl_options */
    CHECK(all_bytes((const unsigned char *)&x, sizeof x, 0xA5));
    CHECK(strstr(gpufl_last_error(), "sz=8") != NULL);
    CHECK(init_sz(NULL, sizeof o) == GPUFL_EINVAL);
    memset(big, 0xA5, sizeof big);
    CHECK(init_sz((gpufl_options *)(void *)big, 5000) ==
          GPUFL_EINVAL); /* garbage, not a size */
    CHECK(all_bytes(big, sizeof big, 0xA5));
    /* gpufl_init refuses the same sizes */
    gpufl_options_init(&o);
    quiet_session(&o);
    o.sz = 16;
    CHECK(gpufl_init(&o) == GPUFL_EINVAL);
    o.sz = 1u << 20;
    CHECK(gpufl_init(&o) == GPUFL_EINVAL);
    CHECK(!gpufl_active());
}

/* Programs built against 0.1.0 call the exported gpufl_options_init. */
static void test_compat_symbol(void)
{
    struct {
        gpufl_options o;
        unsigned char after[64];
    } x;
    REQUIRE(init_old != NULL);
    memset(&x, 0xA5, sizeof x);
    CHECK(init_old(&x.o) == GPUFL_OK);
    CHECK_EQ_U64(x.o.sz, 168); /* 0.1.0's size (LP64) */
    CHECK_EQ_U64(x.o.stack_depth, 32);
    CHECK(all_bytes(x.after, sizeof x.after, 0xA5));
}

/* ---- record.h: the same rule ---- */

typedef int (*rec_fn)(const void *);
static int rec_kernel(const void *p)
{
    return gpufl_record_kernel(p);
}
static int rec_memcpy(const void *p)
{
    return gpufl_record_memcpy(p);
}
static int rec_memset(const void *p)
{
    return gpufl_record_memset(p);
}
static int rec_sync(const void *p)
{
    return gpufl_record_sync(p);
}
static int rec_memop(const void *p)
{
    return gpufl_record_memop(p);
}
static int rec_sass(const void *p)
{
    return gpufl_record_sass(p);
}
static int rec_pcsamp(const void *p)
{
    return gpufl_record_pcsamp(p);
}

static const struct {
    const char *name;
    rec_fn fn;
    size_t size, first; /* sizeof now, sizeof in 0.1.0 */
} recs[] = {
    { "kernel", rec_kernel, sizeof(gpufl_kernel), 128 },
    { "memcpy", rec_memcpy, sizeof(gpufl_memcpy), 72 },
    { "memset", rec_memset, sizeof(gpufl_memset), 64 },
    { "sync", rec_sync, sizeof(gpufl_sync), 56 },
    { "memop", rec_memop, sizeof(gpufl_memop), 72 },
    { "sass", rec_sass, sizeof(gpufl_sass), 80 },
    { "pcsamp", rec_pcsamp, sizeof(gpufl_pcsamp), 120 },
};

static void test_records(void)
{
    gpufl_options o;
    gpufl_options_init(&o);
    quiet_session(&o);
    REQUIRE(gpufl_init(&o) == GPUFL_OK);
    for (size_t i = 0; i < sizeof recs / sizeof recs[0]; i++) {
        unsigned char buf[512];
        size_t sz, n = recs[i].size;
        void *map = NULL;
        unsigned char *g = guarded(n, &map);
        int rc;
        memset(buf, 0, sizeof buf);
        sz = n;
        memcpy(buf, &sz, sizeof sz);
        CHECK(recs[i].fn(buf) == GPUFL_OK);
        sz = n + 16; /* a newer header, tail not set: accepted */
        memcpy(buf, &sz, sizeof sz);
        CHECK(recs[i].fn(buf) == GPUFL_OK);
        buf[n + 9] = 1; /* ... tail set: refused, not silently dropped */
        rc = recs[i].fn(buf);
        if (rc != GPUFL_EINVAL)
            fprintf(stderr, "%s: unknown tail accepted (%d)\n", recs[i].name,
                    rc);
        CHECK(rc == GPUFL_EINVAL);
        sz = recs[i].first - 8; /* smaller than any published struct */
        memcpy(buf, &sz, sizeof sz);
        CHECK(recs[i].fn(buf) == GPUFL_EINVAL);
        sz = 1u << 20;
        memcpy(buf, &sz, sizeof sz);
        CHECK(recs[i].fn(buf) == GPUFL_EINVAL);
        /* exactly sz bytes before a PROT_NONE page: read no further */
        if (g) {
            memset(g, 0, n);
            sz = n;
            memcpy(g, &sz, sizeof sz);
            CHECK(recs[i].fn(g) == GPUFL_OK);
            unguard(map);
        }
    }
    gpufl_shutdown();
}

int main(void)
{
    const char *tmp = getenv("GPUFL_TEST_TMP");
    snprintf(logdir, sizeof logdir, "%s/options_abi.%d", tmp ? tmp : "/tmp",
             (int)getpid());
    init_sz = (init_sz_fn)dlsym(RTLD_DEFAULT, "gpufl_options_init_sz");
    init_old = (init_fn)dlsym(RTLD_DEFAULT, "gpufl_options_init");
    RUN(test_old_header_canary);
    RUN(test_old_header_guard);
    RUN(test_newer_header);
    RUN(test_bad_sizes);
    RUN(test_compat_symbol);
    RUN(test_records);
    TEST_DONE();
}
