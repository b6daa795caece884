/*
 * test_cupti_launch.c - the CUPTI engine's launch callback on its own:
 * runtime/driver nesting and deduplication, publication under both
 * correlation ids, failed launches, cooperative flags, eviction, stacks,
 * the monitoring state (tracing off: nothing joined, errors still go to
 * ring mode's triggers, once per launch), a switch in mid-launch; and the
 * application-thread cost of a launch (printed, not asserted: the targets
 * are 300 ns without stacks, 2 us with 32 frames, 20 ns while
 * monitoring).
 * Built with frame pointers, like an application the hybrid stack walk can
 * follow; the DWARF-only figure is the fallback for one that has none.
 */
#include "client/client_int.h"
#include "client/cupti_int.h"

#include <stdlib.h>
#include <time.h>

#include "test.h"

/* The launching thread's CPU time: the cost the targets are about,
 * and steady on a loaded machine (wall time is not). */
static uint64_t mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void cb(uint32_t dom, uint32_t cbid, uint32_t site, uint32_t corr,
               int ret)
{
    gfl_cupti_callback_data d;
    uint64_t slot = 0;
    memset(&d, 0, sizeof d);
    d.callback_site = site;
    d.correlation_id = corr;
    d.correlation_data = &slot;
    d.function_return_value = site == GFL_CUPTI_API_EXIT ? &ret : NULL;
    d.function_name = dom == GFL_CUPTI_CB_DOMAIN_RUNTIME_API
                          ? "cudaLaunchKernel"
                          : "cuLaunchKernel";
    cupti_launch_callback(cupti_g, dom, cbid, &d);
}

/* __cudaLaunchKernel (505) around cuLaunchKernel (307), as nvcc 13 does */
static void rt_launch(uint32_t r, uint32_t d, uint32_t rcb, uint32_t dcb,
                      int ret)
{
    cb(GFL_CUPTI_CB_DOMAIN_RUNTIME_API, rcb, GFL_CUPTI_API_ENTER, r, 0);
    cb(GFL_CUPTI_CB_DOMAIN_DRIVER_API, dcb, GFL_CUPTI_API_ENTER, d, 0);
    cb(GFL_CUPTI_CB_DOMAIN_DRIVER_API, dcb, GFL_CUPTI_API_EXIT, d, ret);
    cb(GFL_CUPTI_CB_DOMAIN_RUNTIME_API, rcb, GFL_CUPTI_API_EXIT, r, ret);
}

static void test_join(void)
{
    cupti_launch l;
    rt_launch(10, 11, 505, 307, 0);
    REQUIRE(cupti_launch_find(cupti_g, 10, &l, NULL));
    CHECK(l.enter_ns && l.exit_ns >= l.enter_ns);
    CHECK(l.flags == 0);
    REQUIRE(cupti_launch_find(cupti_g, 11, &l, NULL)); /* the driver alias */
    CHECK(!cupti_launch_find(cupti_g, 12, &l, NULL));
    /* lookups do not consume: a graph launch serves many records */
    CHECK(cupti_launch_find(cupti_g, 10, &l, NULL));
    /* a direct driver launch */
    cb(GFL_CUPTI_CB_DOMAIN_DRIVER_API, 652, GFL_CUPTI_API_ENTER, 20, 0);
    cb(GFL_CUPTI_CB_DOMAIN_DRIVER_API, 652, GFL_CUPTI_API_EXIT, 20, 0);
    CHECK(cupti_launch_find(cupti_g, 20, &l, NULL));
    /* a failed launch has no record: nothing is published */
    rt_launch(30, 31, 211, 307, 2);
    CHECK(!cupti_launch_find(cupti_g, 30, &l, NULL));
    CHECK(!cupti_launch_find(cupti_g, 31, &l, NULL));
    /* cooperative through either domain */
    rt_launch(40, 41, 269, 477, 0);
    REQUIRE(cupti_launch_find(cupti_g, 40, &l, NULL));
    CHECK(l.flags & GPUFL_KERNEL_COOPERATIVE);
    /* EXIT without ENTER (enabled mid-call) is ignored */
    cb(GFL_CUPTI_CB_DOMAIN_DRIVER_API, 307, GFL_CUPTI_API_EXIT, 50, 0);
    CHECK(!cupti_launch_find(cupti_g, 50, &l, NULL));
    /* eviction: the launch CUPTI_CORR_SLOTS ids later takes the slot */
    rt_launch(60, 60 + CUPTI_CORR_SLOTS, 505, 307, 0);
    CHECK(!cupti_launch_find(cupti_g, 60, &l, NULL));
    CHECK(cupti_launch_find(cupti_g, 60 + CUPTI_CORR_SLOTS, &l, NULL));
    /* stopping: callbacks return at once */
    atomic_store(&cupti_g->stopping, 1);
    rt_launch(70, 71, 505, 307, 0);
    CHECK(!cupti_launch_find(cupti_g, 70, &l, NULL));
    atomic_store(&cupti_g->stopping, 0);
    /* a session that closes while a launch is inside CUDA: that launch is
     * not published, and the next session's launches on this thread are
     * (the thread's nesting depth must not stay at 1) */
    cb(GFL_CUPTI_CB_DOMAIN_RUNTIME_API, 505, GFL_CUPTI_API_ENTER, 80, 0);
    atomic_store(&cupti_g->stopping, 1);
    cb(GFL_CUPTI_CB_DOMAIN_DRIVER_API, 307, GFL_CUPTI_API_ENTER, 81, 0);
    cb(GFL_CUPTI_CB_DOMAIN_DRIVER_API, 307, GFL_CUPTI_API_EXIT, 81, 0);
    cb(GFL_CUPTI_CB_DOMAIN_RUNTIME_API, 505, GFL_CUPTI_API_EXIT, 80, 0);
    CHECK(!cupti_launch_find(cupti_g, 80, &l, NULL));
    atomic_store(&cupti_g->stopping, 0);
    rt_launch(90, 91, 505, 307, 0);
    CHECK(cupti_launch_find(cupti_g, 90, &l, NULL));
    CHECK(cupti_launch_find(cupti_g, 91, &l, NULL));
    /* and the other way round: ENTER while stopping, EXIT after */
    atomic_store(&cupti_g->stopping, 1);
    cb(GFL_CUPTI_CB_DOMAIN_RUNTIME_API, 505, GFL_CUPTI_API_ENTER, 92, 0);
    atomic_store(&cupti_g->stopping, 0);
    cb(GFL_CUPTI_CB_DOMAIN_RUNTIME_API, 505, GFL_CUPTI_API_EXIT, 92, 0);
    rt_launch(94, 95, 505, 307, 0);
    CHECK(cupti_launch_find(cupti_g, 94, &l, NULL));
}

/* Tracing off, the error triggers armed: the callbacks keep only the
 * nesting; a failed launch posts one trigger (the runtime call and the
 * driver call inside it fail together), a success joins nothing. */
static void test_monitoring(void)
{
    cupti_launch l;
    trg_event ev;
    g_client.cfg.ring = 1;
    g_client.cfg.trg.armed = (1u << TRG_CUDA_ERROR) | (1u << TRG_OOM);
    atomic_store(&cupti_g->err_trigger, 1);
    atomic_store(&cupti_g->trace_on, 0);
    atomic_fetch_add(&cupti_g->trace_gen, 1);
    rt_launch(200, 201, 505, 307, 0);
    CHECK(!cupti_launch_find(cupti_g, 200, &l, NULL));
    CHECK(!trigger_take(&ev));
    rt_launch(202, 203, 505, 307, 98);
    REQUIRE(trigger_take(&ev));
    CHECK_EQ_U64(ev.kind, TRG_CUDA_ERROR);
    CHECK_STR(ev.detail, "cudaLaunchKernel returned 98");
    CHECK_EQ_U64(ev.repeats, 0);
    trigger_done(ev.kind);
    CHECK(!trigger_take(&ev)); /* once, not once per callback */
    /* a switch between ENTER and EXIT: that launch is not joined, and the
     * thread's nesting does not stay open */
    atomic_store(&cupti_g->trace_on, 1);
    cb(GFL_CUPTI_CB_DOMAIN_RUNTIME_API, 505, GFL_CUPTI_API_ENTER, 210, 0);
    atomic_fetch_add(&cupti_g->trace_gen, 1);
    cb(GFL_CUPTI_CB_DOMAIN_RUNTIME_API, 505, GFL_CUPTI_API_EXIT, 210, 0);
    CHECK(!cupti_launch_find(cupti_g, 210, &l, NULL));
    rt_launch(212, 213, 505, 307, 0);
    CHECK(cupti_launch_find(cupti_g, 212, &l, NULL));
    atomic_store(&cupti_g->err_trigger, 0);
    g_client.cfg.trg.armed = 0;
    trigger_reset();
}

static void test_stacks(void)
{
    cupti_launch l[2];
    uintptr_t frames[2][CUPTI_STACK_MAX];
    atomic_store(&cupti_g->stacks_on, 1);
    /* the same call site, DWARF only and hybrid: the same frames, except
     * that the frame-pointer chain ends at the first function without one
     * (here the C library's start code below main) */
    for (volatile int i = 0; i < 2; i++) { /* volatile: one call site */
        cupti_g->stack_dwarf_only = !i;
        rt_launch(100 + 2 * (uint32_t)i, 101 + 2 * (uint32_t)i, 505, 307, 0);
    }
    cupti_g->stack_dwarf_only = 0;
    REQUIRE(cupti_launch_find(cupti_g, 100, &l[0], frames[0]));
    REQUIRE(cupti_launch_find(cupti_g, 102, &l[1], frames[1]));
    CHECK(l[0].n_frames > 3 && l[0].n_frames <= CUPTI_STACK_MAX);
    CHECK(l[1].n_frames >= 3 && l[1].n_frames <= l[0].n_frames);
    CHECK(frames[0][0] != 0);
    for (uint32_t i = 0; i < l[1].n_frames; i++)
        CHECK(frames[0][i] == frames[1][i]);
    atomic_store(&cupti_g->stacks_on, 0);
}

/* The hybrid walk (DWARF, then frame pointers) must give the frames the
 * DWARF unwinder gives: this file is built with frame pointers. */
__attribute__((noinline)) static int both(uintptr_t *a, int *na, uintptr_t *b,
                                          int *nb)
{
    *na = cupti_stack_capture(a, 24, 0);
    *nb = cupti_stack_capture(b, 24, 1);
    return *na + *nb;
}

__attribute__((noinline)) static int nest(int depth, uintptr_t *a, int *na,
                                          uintptr_t *b, int *nb)
{
    volatile int r;
    if (depth > 0) {
        r = nest(depth - 1, a, na, b, nb);
        return r + 0;
    }
    return both(a, na, b, nb);
}

static void test_hybrid_matches_dwarf(void)
{
    uintptr_t a[24], b[24];
    int na = 0, nb = 0;
    nest(30, a, &na, b, &nb);
    CHECK(na == 24 && nb == 24);
    /* frame 0 is the call site inside both(): two different calls */
    for (int i = 1; i < 24 && i < na && i < nb; i++)
        if (a[i] != b[i]) {
            printf("  frame %d: %#lx (hybrid) != %#lx (dwarf)\n", i,
                   (unsigned long)a[i], (unsigned long)b[i]);
            CHECK(0);
            break;
        }
    /* fewer frames than asked for when the stack is shallower */
    na = cupti_stack_capture(a, 24, 0);
    CHECK(na > 1 && na < 24);
}

/* Launch from depth frames down, so a stack capture walks a realistic
 * number of frames (the figure the 2 us target is about). */
static double bench(int stacks);
__attribute__((noinline)) static double deep(int depth, int stacks)
{
    volatile double r;
    if (depth > 0) {
        r = deep(depth - 1, stacks);
        return r + 0.0;
    }
    return bench(stacks);
}

/* 4 callbacks of a domain the callback does not handle: what the
 * harness itself costs (building the callback data, the calls). */
static int harness_only;

static double bench(int stacks)
{
    const uint32_t n = 200000;
    uint64_t t0, t1;
    atomic_store(&cupti_g->stacks_on, stacks);
    t0 = mono();
    for (uint32_t i = 0; i < n; i++)
        if (harness_only)
            for (int k = 0; k < 4; k++)
                cb(99, 505, (uint32_t)k & 1, 1000 + 2 * i, 0);
        else
            rt_launch(1000 + 2 * i, 1001 + 2 * i, 505, 307, 0);
    t1 = mono();
    atomic_store(&cupti_g->stacks_on, 0);
    return (double)(t1 - t0) / n;
}

int main(void)
{
    cupti_g->launches = calloc(CUPTI_CORR_SLOTS, sizeof *cupti_g->launches);
    cupti_g->frames = calloc((size_t)CUPTI_CORR_SLOTS * CUPTI_STACK_MAX,
                             sizeof *cupti_g->frames);
    cupti_g->cfg.stack_depth = 32;
    if (!cupti_g->launches || !cupti_g->frames)
        return 1;
    atomic_store(&cupti_g->trace_on, 1);
    RUN(test_join);
    RUN(test_monitoring);
    RUN(test_stacks);
    RUN(test_hybrid_matches_dwarf);
    {
        double none = deep(40, 0), d32, d8, w32, w8;
        d32 = deep(40, 1);
        cupti_g->cfg.stack_depth = 8;
        d8 = deep(40, 1);
        cupti_g->stack_dwarf_only = 1; /* the previous method */
        w8 = deep(40, 1);
        cupti_g->cfg.stack_depth = 32;
        w32 = deep(40, 1);
        cupti_g->stack_dwarf_only = 0;
        double mon, base;
        atomic_store(&cupti_g->trace_on, 0); /* monitoring, error triggers */
        atomic_store(&cupti_g->err_trigger, 1);
        mon = deep(40, 0);
        harness_only = 1;
        base = deep(40, 0);
        harness_only = 0;
        atomic_store(&cupti_g->trace_on, 1);
        atomic_store(&cupti_g->err_trigger, 0);
        printf("launch (runtime 505 + nested driver 307, 4 callbacks), 40 "
               "frames deep, thread CPU time: %.0f ns without stacks; "
               "32-frame stack: %.0f ns "
               "(DWARF then frame pointers), %.0f ns (DWARF only); 8-frame "
               "stack: %.0f ns / %.0f ns; monitoring (tracing off, callbacks "
               "kept for the error triggers): %.1f ns, of which the test's "
               "own calls %.1f ns\n",
               none, d32, w32, d8, w8, mon, base);
    }
    free(cupti_g->launches);
    free(cupti_g->frames);
    TEST_DONE();
}
