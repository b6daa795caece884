/*
 * test_occupancy.c - the theoretical occupancy calculator against 29
 * hand-worked examples E1-E29 (each also evaluated with CUDA 13.0's
 * cuda_occupancy.h when written; docs/occupancy.md#worked-examples shows
 * some), plus carveouts, opt-in, device overrides, launched occupancy, edge
 * inputs and the limiter wire names.
 */
#include "client/occupancy.h"

#include <math.h>

#include <gpufl/gpufl.h>

#include "test.h"

#define INF OCC_INF
#define W GPUFL_LIMIT_WARPS
#define R GPUFL_LIMIT_REGS
#define S GPUFL_LIMIT_SMEM
#define B GPUFL_LIMIT_BLOCKS
#define BAR GPUFL_LIMIT_BARRIERS

#define CHECK_NEAR(a, b, tol)                                                  \
    do {                                                                       \
        double a_ = (a), b_ = (b);                                             \
        if (fabs(a_ - b_) <= (tol)) {                                          \
            t_pass++;                                                          \
        } else {                                                               \
            t_fail++;                                                          \
            fprintf(stderr, "%s:%d: %s ~= %s failed: %.6f != %.6f\n",          \
                    __FILE__, __LINE__, #a, #b, a_, b_);                       \
        }                                                                      \
    } while (0)

/* One worked example, column by column. */
typedef struct ecase {
    const char *id;
    int major, minor;
    int carveout; /* -1 = default */
    uint32_t barriers;
    uint32_t threads, regs, smem_static, smem_dynamic;
    int optin;
    int l_warps, l_regs, l_smem, l_blocks;
    int blocks, active, max;
    double pct; /* as printed in the table */
    uint32_t limiters;
} ecase;

static const ecase ecases[] = {
    { "E1", 8, 0, -1, 0, 256, 32, 0, 0, 0, 8, 8, 164, 32, 8, 64, 64, 100,
      W | R },
    { "E2", 8, 6, -1, 0, 256, 64, 0, 0, 0, 6, 4, 100, 16, 4, 32, 48, 66.67, R },
    { "E3", 7, 5, -1, 0, 1024, 32, 0, 0, 0, 1, 2, INF, 16, 1, 32, 32, 100, W },
    { "E4", 7, 0, -1, 0, 128, 40, 49152, 0, 0, 16, 12, 2, 32, 2, 8, 64, 12.5,
      S },
    { "E5", 9, 0, -1, 0, 128, 255, 0, 0, 0, 16, 2, 228, 32, 2, 8, 64, 12.5, R },
    { "E6", 8, 9, -1, 0, 32, 16, 0, 0, 0, 48, 128, 100, 24, 24, 24, 48, 50, B },
    { "E7", 12, 0, -1, 0, 128, 16, 0, 0, 0, 12, 32, 100, 24, 12, 48, 48, 100,
      W },
    { "E8", 10, 0, -1, 0, 256, 32, 0, 102400, 1, 8, 8, 2, 32, 2, 16, 64, 25,
      S },
    { "E9", 10, 0, -1, 0, 256, 32, 0, 102400, 0, 8, 8, 0, 32, 0, 0, 64, 0, S },
    { "E10", 8, 6, -1, 0, 128, 32, 0, 25600, 0, 12, 16, 3, 16, 3, 12, 48, 25,
      S },
    { "E11", 9, 0, -1, 0, 1024, 64, 0, 0, 0, 2, 1, 228, 32, 1, 32, 64, 50, R },
    { "E12", 8, 0, -1, 0, 1024, 65, 0, 0, 0, 2, 0, 164, 32, 0, 0, 64, 0, R },
    { "E13", 8, 6, -1, 0, 100, 32, 0, 0, 0, 12, 16, 100, 16, 12, 48, 48, 100,
      W },
    { "E14", 7, 0, -1, 0, 256, 128, 0, 0, 0, 8, 2, INF, 32, 2, 16, 64, 25, R },
    { "E15", 8, 9, -1, 0, 256, 40, 16384, 0, 0, 6, 6, 5, 24, 5, 40, 48, 83.33,
      S },
    { "E16", 12, 0, -1, 0, 384, 72, 0, 0, 0, 4, 2, 100, 24, 2, 24, 48, 50, R },
    { "E17", 7, 5, -1, 0, 96, 48, 0, 0, 0, 10, 13, INF, 16, 10, 30, 32, 93.75,
      W },
    { "E18", 7, 5, -1, 0, 256, 64, 32768, 0, 0, 4, 4, 2, 16, 2, 16, 32, 50, S },
    { "E19", 10, 0, -1, 0, 128, 168, 0, 49152, 0, 16, 3, 4, 32, 3, 12, 64,
      18.75, R },
    { "E20", 9, 0, -1, 0, 64, 16, 0, 0, 0, 32, 64, 228, 32, 32, 64, 64, 100,
      W | B },
    { "E21", 8, 6, -1, 0, 128, 32, 8192, 0, 0, 12, 16, 11, 16, 11, 44, 48,
      91.67, S },
    { "E22", 8, 6, 32, 0, 128, 32, 8192, 0, 0, 12, 16, 3, 16, 3, 12, 48, 25,
      S },
    { "E23", 8, 6, 0, 0, 128, 32, 8192, 0, 0, 12, 16, 1, 16, 1, 4, 48, 8.33,
      S },
    { "E24", 8, 0, -1, 0, 128, 32, 0, 40960, 0, 16, 16, 4, 32, 4, 16, 64, 25,
      S },
    { "E25", 8, 9, -1, 0, 1024, 32, 0, 0, 0, 1, 2, 100, 24, 1, 32, 48, 66.67,
      W },
    { "E26", 12, 0, -1, 0, 32, 32, 0, 0, 0, 48, 64, 100, 24, 24, 24, 48, 50,
      B },
    { "E27", 12, 0, -1, 1, 32, 32, 0, 0, 0, 48, 64, 100, 24, 24, 24, 48, 50,
      B | BAR },
    { "E28", 8, 0, -1, 0, 256, 0, 0, 0, 0, 8, INF, 164, 32, 8, 64, 64, 100, W },
    { "E29", 8, 0, -1, 0, 2048, 32, 0, 0, 0, 0, 1, 164, 32, 0, 0, 64, 0, W },
};

#define N_ECASES (sizeof(ecases) / sizeof(ecases[0]))

static occ_arch arch(int major, int minor)
{
    occ_arch a;

    memset(&a, 0, sizeof(a));
    if (occ_arch_for_cc(major, minor, &a) != GPUFL_OK)
        fprintf(stderr, "no table row for %d.%d\n", major, minor);
    return a;
}

static occ_launch launch(uint32_t threads, uint32_t regs, uint32_t s,
                         uint32_t d)
{
    occ_launch l;

    memset(&l, 0, sizeof(l));
    l.threads = threads;
    l.regs = regs;
    l.smem_static = s;
    l.smem_dynamic = d;
    l.carveout_pct = -1;
    return l;
}

static occ_result compute(const occ_arch *a, const occ_launch *l)
{
    occ_result r;

    CHECK(occ_compute(a, l, &r) == GPUFL_OK);
    return r;
}

static int n_checked;

static void test_worked_examples(void)
{
    size_t i;

    for (i = 0; i < N_ECASES; i++) {
        const ecase *e = &ecases[i];
        occ_arch a = arch(e->major, e->minor);
        occ_launch l =
            launch(e->threads, e->regs, e->smem_static, e->smem_dynamic);
        occ_result r;
        int f0 = t_fail;

        l.optin = e->optin;
        l.carveout_pct = e->carveout;
        l.barriers = e->barriers;
        r = compute(&a, &l);
        CHECK(r.limit_warps == e->l_warps);
        CHECK(r.limit_regs == e->l_regs);
        CHECK(r.limit_smem == e->l_smem);
        CHECK(r.limit_blocks == e->l_blocks);
        CHECK(r.blocks_per_sm == e->blocks);
        CHECK(r.active_warps == e->active);
        CHECK(r.max_warps == e->max);
        CHECK_NEAR(r.occupancy, e->pct / 100.0, 1e-4);
        CHECK_EQ_U64(r.limiters, e->limiters);
        CHECK(r.limit_barriers == (e->barriers ? e->blocks : INF));
        CHECK(r.launched_occupancy < 0 && r.launched_blocks_per_sm == -1);
        if (t_fail != f0)
            fprintf(stderr, "  ... in worked example %s\n", e->id);
        else
            n_checked++;
    }
    CHECK(n_checked == 29);
}

/* Intermediate values of the examples' hand working. */
static void test_worked_intermediates(void)
{
    occ_arch a = arch(8, 6);
    occ_launch l = launch(128, 32, 0, 25600);
    occ_result r = compute(&a, &l);

    /* E10: 25 600 + 1 024 reserved = 26 624 B per block. */
    CHECK_EQ_U64(r.smem_per_block, 26624);
    CHECK_EQ_U64(r.smem_config, 102400);

    /* E12: 65 regs -> 2 304 per warp; 32 warps need 73 728 > 65 536. */
    a = arch(8, 0);
    l = launch(1024, 65, 0, 0);
    r = compute(&a, &l);
    CHECK(r.limit_regs == 0);
    CHECK_EQ_U64(r.regs_per_block, 0);

    /* E11: 2 048 per warp x 32 warps = 65 536 exactly: allowed. */
    a = arch(9, 0);
    l = launch(1024, 64, 0, 0);
    r = compute(&a, &l);
    CHECK_EQ_U64(r.regs_per_block, 65536);

    /* E19: 49 152 + 1 024 = 50 176 is exactly the default limit plus the
     * reservation. */
    a = arch(10, 0);
    l = launch(128, 168, 0, 49152);
    r = compute(&a, &l);
    CHECK_EQ_U64(r.smem_per_block, 50176);

    /* E24: 4 x 41 984 = 167 936, exactly 164 KiB. */
    a = arch(8, 0);
    l = launch(128, 32, 0, 40960);
    r = compute(&a, &l);
    CHECK_EQ_U64(r.smem_per_block * 4, 167936);
    CHECK(r.limit_smem == 4);

    /* E23: a 0 % preference yields to the 16 KiB that one block needs. */
    a = arch(8, 6);
    l = launch(128, 32, 8192, 0);
    l.carveout_pct = 0;
    r = compute(&a, &l);
    CHECK_EQ_U64(r.smem_config, 16384);
}

static void test_arch_table(void)
{
    /* major, minor, barrier factor */
    static const int known[][3] = {
        { 7, 0, 0 },  { 7, 2, 0 },  { 7, 5, 0 },  { 8, 0, 0 },  { 8, 6, 0 },
        { 8, 7, 0 },  { 8, 9, 0 },  { 9, 0, 2 },  { 10, 0, 2 }, { 10, 1, 1 },
        { 10, 3, 2 }, { 11, 0, 1 }, { 12, 0, 1 }, { 12, 1, 1 },
    };
    static const int unknown[][2] = {
        { 0, 0 }, { -1, 0 }, { 5, 0 },  { 6, 1 },  { 7, 1 },
        { 8, 8 }, { 9, 1 },  { 10, 2 }, { 12, 2 }, { 13, 0 },
    };
    occ_arch a, b;
    size_t i;

    for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        memset(&a, 0, sizeof(a));
        CHECK(occ_arch_for_cc(known[i][0], known[i][1], &a) == GPUFL_OK);
        CHECK(a.cc_major == known[i][0] && a.cc_minor == known[i][1]);
        CHECK(a.max_threads_block == 1024 && a.regs_sm == 65536 &&
              a.regs_block == 65536 && a.smem_block == 49152);
        CHECK(a.n_carveouts > 0 && a.n_carveouts <= OCC_MAX_CARVEOUTS);
        CHECK_EQ_U64(a.carveout_kib[a.n_carveouts - 1] * 1024u, a.smem_sm);
        CHECK_EQ_U64(a.smem_optin + a.smem_reserved, a.smem_sm);
        CHECK(a.barrier_factor == (uint32_t)known[i][2]);
    }
    for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
        CHECK(occ_arch_for_cc(unknown[i][0], unknown[i][1], &a) ==
              GPUFL_EUNAVAIL);
    CHECK(occ_arch_for_cc(8, 0, NULL) == GPUFL_EINVAL);

    /* Compute capabilities that share a row of
     * docs/occupancy.md#per-architecture-parameters (10.3 with 10.0, 12.1
     * with 12.0, 11.0 with 10.1). */
    a = arch(10, 3);
    b = arch(10, 0);
    b.cc_minor = 3;
    CHECK(memcmp(&a, &b, sizeof(a)) == 0);
    a = arch(12, 1);
    b = arch(12, 0);
    b.cc_minor = 1;
    CHECK(memcmp(&a, &b, sizeof(a)) == 0);
    a = arch(11, 0);
    b = arch(10, 1);
    b.cc_major = 11;
    b.cc_minor = 0;
    CHECK(memcmp(&a, &b, sizeof(a)) == 0);
    CHECK(a.max_blocks_sm == 24 && a.smem_sm == 233472);

    a = arch(8, 7);
    b = arch(8, 0);
    CHECK(a.max_blocks_sm == 16 && a.smem_sm == b.smem_sm &&
          a.n_carveouts == b.n_carveouts &&
          memcmp(a.carveout_kib, b.carveout_kib, sizeof(a.carveout_kib)) == 0);

    /* Volta/Turing: no reservation, 256 B units; later: 1 KiB, 128 B. */
    a = arch(7, 0);
    CHECK(a.smem_reserved == 0 && a.smem_gran == 256);
    a = arch(7, 5);
    CHECK(a.n_carveouts == 2 && a.carveout_kib[0] == 32 &&
          a.carveout_kib[1] == 64 && a.max_threads_sm == 1024);
    a = arch(9, 0);
    CHECK(a.smem_reserved == 1024 && a.smem_gran == 128 &&
          a.smem_optin == 232448 && a.n_carveouts == 10);
}

static void test_carveout(void)
{
    occ_arch a = arch(7, 5);
    occ_launch l = launch(128, 32, 8192, 0);
    occ_result r;

    /* Turing has no configuration below 32 KiB: 0 % becomes 32 KiB. */
    l.carveout_pct = 0;
    r = compute(&a, &l);
    CHECK_EQ_U64(r.smem_config, 32768);
    CHECK(r.limit_smem == 4 && r.blocks_per_sm == 4);
    CHECK_EQ_U64(r.limiters, S);
    l.carveout_pct = 50;
    r = compute(&a, &l);
    CHECK_EQ_U64(r.smem_config, 32768);
    l.carveout_pct = 51;
    r = compute(&a, &l);
    CHECK_EQ_U64(r.smem_config, 65536);
    CHECK(r.blocks_per_sm == 8);

    /* A100: 50 % of 164 KiB = 83 968 B rounds up to the 100 KiB config. */
    a = arch(8, 0);
    l = launch(128, 32, 8192, 0);
    l.carveout_pct = 50;
    r = compute(&a, &l);
    CHECK_EQ_U64(r.smem_config, 102400);
    CHECK(r.limit_smem == 11);

    /* GA10x: 10 % = 10 240 B -> 16 KiB; 33 % = 33 792 B -> 64 KiB;
     * 100 % = the default. */
    a = arch(8, 6);
    l.carveout_pct = 10;
    r = compute(&a, &l);
    CHECK_EQ_U64(r.smem_config, 16384);
    CHECK(r.blocks_per_sm == 1);
    l.carveout_pct = 33;
    r = compute(&a, &l);
    CHECK_EQ_U64(r.smem_config, 65536);
    CHECK(r.blocks_per_sm == 7);
    l.carveout_pct = 100;
    r = compute(&a, &l);
    CHECK(r.blocks_per_sm == 11);
    l.carveout_pct = -7; /* any negative value means no preference */
    r = compute(&a, &l);
    CHECK(r.blocks_per_sm == 11);

    /* A block larger than the preferred size takes the smallest config
     * that holds one: 40 KiB + 1 KiB with a 0 % preference -> 64 KiB. */
    l = launch(128, 32, 40960, 0);
    l.carveout_pct = 0;
    r = compute(&a, &l);
    CHECK_EQ_U64(r.smem_config, 65536);
    CHECK(r.blocks_per_sm == 1);

    /* Volta keeps a 0 KiB configuration; a kernel without shared memory
     * (no reservation on 7.x) needs none and is unlimited by it. */
    a = arch(7, 0);
    l = launch(128, 32, 0, 0);
    l.carveout_pct = 0;
    r = compute(&a, &l);
    CHECK_EQ_U64(r.smem_config, 0);
    CHECK(r.limit_smem == INF);
    CHECK(r.blocks_per_sm == 16);

    /* On 8.x the 1 KiB reservation alone needs the 8 KiB config. */
    a = arch(8, 6);
    r = compute(&a, &l);
    CHECK_EQ_U64(r.smem_config, 8192);
    CHECK(r.limit_smem == 8);
}

static void test_optin(void)
{
    occ_arch a = arch(8, 6);
    occ_launch l = launch(128, 32, 0, 101376);
    occ_result r;

    /* The largest opt-in allocation: 99 KiB + 1 KiB = the whole SM. */
    l.optin = 1;
    r = compute(&a, &l);
    CHECK_EQ_U64(r.smem_per_block, 102400);
    CHECK(r.limit_smem == 1 && r.blocks_per_sm == 1);
    CHECK_EQ_U64(r.limiters, S);

    /* One byte more than opt-in allows. */
    l.smem_dynamic = 101377;
    r = compute(&a, &l);
    CHECK(r.limit_smem == 0 && r.blocks_per_sm == 0);
    CHECK_NEAR(r.occupancy, 0, 0);

    /* Static shared memory above the opt-in limit: nothing fits. */
    l = launch(128, 32, 110000, 0);
    l.optin = 1;
    r = compute(&a, &l);
    CHECK(r.limit_smem == 0);

    /* Without opt-in, 48 KiB exactly is allowed and one byte more is not. */
    a = arch(8, 0);
    l = launch(128, 32, 16384, 32768);
    r = compute(&a, &l);
    CHECK(r.limit_smem == 3);
    l.smem_dynamic = 32769;
    r = compute(&a, &l);
    CHECK(r.limit_smem == 0 && r.blocks_per_sm == 0);
    CHECK_EQ_U64(r.limiters, S);

    /* Kineto's mistake (docs/occupancy.md#inputs): an opted-in 64 KiB
     * kernel is 0 % if the opt-in is ignored, 2 blocks with it. */
    l = launch(256, 32, 0, 65536);
    r = compute(&a, &l);
    CHECK(r.blocks_per_sm == 0);
    l.optin = 1;
    r = compute(&a, &l);
    CHECK(r.blocks_per_sm == 2);
    CHECK_NEAR(r.occupancy, 16.0 / 64, 1e-9);

    /* Static + dynamic on Hopper: 16 + 80 + 1 KiB = 99 328 B -> 2. */
    a = arch(9, 0);
    l = launch(128, 32, 16384, 81920);
    l.optin = 1;
    r = compute(&a, &l);
    CHECK_EQ_U64(r.smem_per_block, 99328);
    CHECK(r.limit_smem == 2);
}

static void test_sm120_blocks(void)
{
    occ_arch a = arch(12, 0);
    occ_device d;
    occ_launch l = launch(32, 32, 0, 0);
    occ_result r;

    /* The header's 24 by default (E26). */
    CHECK(a.max_blocks_sm == 24);
    r = compute(&a, &l);
    CHECK(r.blocks_per_sm == 24);
    CHECK_NEAR(r.occupancy, 0.5, 1e-9);

    /* The device says 32 (attribute 106): that wins. */
    memset(&d, 0, sizeof(d));
    d.max_blocks_sm = 32;
    occ_arch_override(&a, &d);
    CHECK(a.max_blocks_sm == 32);
    r = compute(&a, &l);
    CHECK(r.blocks_per_sm == 32);
    CHECK(r.active_warps == 32);
    CHECK_NEAR(r.occupancy, 0.6667, 1e-4);
    CHECK_EQ_U64(r.limiters, B);

    /* With 48 warp slots it changes nothing for 2-warp blocks. */
    l.threads = 64;
    r = compute(&a, &l);
    CHECK(r.blocks_per_sm == 24);
    CHECK_EQ_U64(r.limiters, W);
    a = arch(12, 0);
    r = compute(&a, &l);
    CHECK(r.blocks_per_sm == 24);
    CHECK_EQ_U64(r.limiters, W | B);
}

static void test_override(void)
{
    occ_arch a = arch(8, 6), b = a;
    occ_device d;
    occ_launch l;
    occ_result r;

    /* Zeros keep the table. */
    memset(&d, 0, sizeof(d));
    occ_arch_override(&a, &d);
    CHECK(memcmp(&a, &b, sizeof(a)) == 0);
    occ_arch_override(&a, NULL);
    occ_arch_override(NULL, &d);
    CHECK(memcmp(&a, &b, sizeof(a)) == 0);

    /* Every field. */
    d.max_threads_block = 512;
    d.max_warps_sm = 64;
    d.max_blocks_sm = 20;
    d.regs_sm = 32768;
    d.regs_block = 32768;
    d.smem_sm = 65536;
    d.smem_block = 32768;
    d.smem_optin = 64512;
    occ_arch_override(&a, &d);
    CHECK(a.max_threads_block == 512 && a.max_threads_sm == 2048 &&
          a.max_blocks_sm == 20 && a.regs_sm == 32768 &&
          a.regs_block == 32768 && a.smem_sm == 65536 &&
          a.smem_block == 32768 && a.smem_optin == 64512);
    CHECK(a.smem_reserved == 1024 && a.n_carveouts == b.n_carveouts);

    /* A warp count that would overflow 32 bits is not believed. */
    d.max_warps_sm = UINT32_MAX;
    occ_arch_override(&a, &d);
    CHECK(a.max_threads_sm == 2048);

    /* The SM's own size caps the configurations: 100 KiB is skipped. */
    l = launch(128, 16, 8192, 0);
    r = compute(&a, &l);
    CHECK_EQ_U64(r.smem_config, 65536);
    CHECK(r.limit_smem == 7);
    /* ... and the device's block size limit applies. */
    l.threads = 513;
    r = compute(&a, &l);
    CHECK(r.limit_warps == 0 && r.blocks_per_sm == 0);

    /* A per-SM size beyond every configuration is used as it is. */
    a = arch(12, 0);
    memset(&d, 0, sizeof(d));
    d.smem_sm = 131072;
    occ_arch_override(&a, &d);
    l = launch(128, 16, 8192, 0);
    r = compute(&a, &l);
    CHECK_EQ_U64(r.smem_config, 131072);
    CHECK(r.limit_smem == 14);
}

static void test_launched(void)
{
    occ_arch a = arch(8, 6);
    occ_launch l = launch(128, 32, 8192, 0);
    occ_result r;

    /* Unknown (0): not computed. */
    r = compute(&a, &l);
    CHECK(r.launched_blocks_per_sm == -1 && r.launched_occupancy < 0);

    /* E21 as launched with a 32 KiB configuration: 3 blocks. */
    l.smem_executed = 32768;
    r = compute(&a, &l);
    CHECK(r.blocks_per_sm == 11);
    CHECK(r.launched_blocks_per_sm == 3);
    CHECK_NEAR(r.launched_occupancy, 0.25, 1e-9);
    CHECK_NEAR(r.occupancy, 0.9167, 1e-4);

    /* The full 100 KiB: same as theoretical. */
    l.smem_executed = 102400;
    r = compute(&a, &l);
    CHECK(r.launched_blocks_per_sm == 11);
    CHECK_NEAR(r.launched_occupancy, r.occupancy, 1e-12);

    /* E22: a 32 % request, but the driver configured 100 KiB. Limiters
     * stay those of the theoretical value. */
    l.carveout_pct = 32;
    r = compute(&a, &l);
    CHECK(r.blocks_per_sm == 3);
    CHECK(r.launched_blocks_per_sm == 11);
    CHECK_EQ_U64(r.limiters, S);

    /* Less than one block's need cannot have run: the need decides. */
    l.carveout_pct = -1;
    l.smem_executed = 8192;
    r = compute(&a, &l);
    CHECK(r.launched_blocks_per_sm == 1);

    /* Other limits still apply (E2, regs: 4 blocks, though 8 KiB would
     * hold 8 of its 1 KiB blocks). */
    l = launch(256, 64, 0, 0);
    l.smem_executed = 8192;
    r = compute(&a, &l);
    CHECK(r.launched_blocks_per_sm == 4);
    CHECK_NEAR(r.launched_occupancy, 0.6667, 1e-4);

    /* A launch that cannot fit (E9) is 0 as launched too. */
    a = arch(10, 0);
    l = launch(256, 32, 0, 102400);
    l.smem_executed = 233472;
    r = compute(&a, &l);
    CHECK(r.blocks_per_sm == 0 && r.launched_blocks_per_sm == 0);
    CHECK_NEAR(r.launched_occupancy, 0, 0);

    /* Volta without shared memory: unlimited whatever was configured. */
    a = arch(7, 0);
    l = launch(128, 32, 0, 0);
    l.smem_executed = 8192;
    r = compute(&a, &l);
    CHECK(r.launched_blocks_per_sm == 16);
}

static void test_partial_warps(void)
{
    occ_arch a = arch(8, 6);
    occ_launch l = launch(33, 32, 0, 0);
    occ_result r = compute(&a, &l);

    /* 33 threads hold 2 warp slots. */
    CHECK(r.limit_warps == 24 && r.limit_regs == 32);
    CHECK(r.blocks_per_sm == 16 && r.active_warps == 32);
    CHECK_NEAR(r.occupancy, 0.6667, 1e-4);
    CHECK_EQ_U64(r.limiters, B);

    a = arch(8, 0);
    r = compute(&a, &l);
    CHECK(r.blocks_per_sm == 32 && r.active_warps == 64);
    CHECK_EQ_U64(r.limiters, W | R | B);

    l.threads = 1;
    r = compute(&a, &l);
    CHECK(r.limit_warps == 64 && r.blocks_per_sm == 32);
    CHECK_NEAR(r.occupancy, 0.5, 1e-9);

    /* 1 000 threads = 32 warps, as 1 024 would be. */
    l.threads = 1000;
    r = compute(&a, &l);
    CHECK(r.blocks_per_sm == 2 && r.active_warps == 64);
}

static void test_too_many_threads(void)
{
    occ_arch a = arch(8, 6);
    occ_launch l = launch(1025, 32, 0, 0);
    occ_result r = compute(&a, &l);

    CHECK(r.limit_warps == 0 && r.limit_regs == 1);
    CHECK(r.blocks_per_sm == 0 && r.active_warps == 0);
    CHECK_EQ_U64(r.limiters, W);

    /* No arithmetic wraps on absurd inputs. */
    l = launch(UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX);
    l.smem_executed = UINT32_MAX;
    l.barriers = UINT32_MAX;
    r = compute(&a, &l);
    CHECK(r.blocks_per_sm == 0);
    CHECK(r.limit_warps == 0 && r.limit_regs == 0 && r.limit_smem == 0);
    CHECK(r.launched_blocks_per_sm == 0);
    l.regs = 32;
    r = compute(&a, &l);
    CHECK(r.limit_regs == 0);
    l.optin = 1;
    r = compute(&a, &l);
    CHECK(r.limit_smem == 0);
}

static void test_regs(void)
{
    occ_arch a = arch(8, 0);
    occ_launch l = launch(32, 256, 0, 0);
    occ_result r;

    /* 256 passes the header's per-thread check (compilers stop at 255):
     * 8 192 per warp -> 2 per sub-partition -> 8 warps. */
    r = compute(&a, &l);
    CHECK(r.limit_regs == 8);
    CHECK_EQ_U64(r.regs_per_block, 8192);
    l.regs = 257;
    r = compute(&a, &l);
    CHECK(r.limit_regs == 0 && r.blocks_per_sm == 0);
    CHECK_EQ_U64(r.limiters, R);
    l.regs = UINT32_MAX;
    r = compute(&a, &l);
    CHECK(r.limit_regs == 0);

    /* 255 x 256 threads: 8 warps x 8 192 = the whole file, one block. */
    l = launch(256, 255, 0, 0);
    r = compute(&a, &l);
    CHECK(r.limit_regs == 1);

    /* The hardware check rounds warps up to 4 sub-partitions; it only
     * bites when a block may hold less than the SM: 14 warps x 2 304 =
     * 32 256 fits a 32 768 block limit, 16 x 2 304 = 36 864 does not. */
    a.regs_block = 32768;
    l = launch(448, 72, 0, 0);
    r = compute(&a, &l);
    CHECK(r.limit_regs == 0);
    a.regs_block = 65536;
    r = compute(&a, &l);
    CHECK(r.limit_regs == 2);

    /* E17: per-sub-partition flooring gives 13, not 65 536 / 4 608 = 14. */
    a = arch(7, 5);
    l = launch(96, 48, 0, 0);
    r = compute(&a, &l);
    CHECK(r.limit_regs == 13);
}

static void test_barriers(void)
{
    occ_arch a = arch(9, 0);
    occ_launch l = launch(32, 32, 0, 0);
    occ_result r;

    /* Hopper: 2 x 32 barriers; 1 per block never limits. */
    l.barriers = 1;
    r = compute(&a, &l);
    CHECK(r.limit_barriers == 64 && r.blocks_per_sm == 32);
    CHECK_EQ_U64(r.limiters, B);
    /* 4 per block: 16 blocks, barriers alone (NVIDIA's header says 0x18,
     * blocks+barriers: see limiter_bits in occupancy.c). */
    l.barriers = 4;
    r = compute(&a, &l);
    CHECK(r.limit_barriers == 16 && r.blocks_per_sm == 16);
    CHECK_EQ_U64(r.limiters, BAR);
    /* Before 9.0 there is no barrier limit. */
    a = arch(8, 0);
    r = compute(&a, &l);
    CHECK(r.limit_barriers == INF && r.blocks_per_sm == 32);
    /* 0 barriers (what gpufl passes): no limit anywhere. */
    a = arch(12, 0);
    l.barriers = 0;
    r = compute(&a, &l);
    CHECK(r.limit_barriers == INF);
    CHECK_EQ_U64(r.limiters, B);
}

static void test_einval(void)
{
    occ_arch a = arch(8, 0), bad;
    occ_launch l = launch(128, 32, 0, 0);
    occ_result r;

    CHECK(occ_compute(NULL, &l, &r) == GPUFL_EINVAL);
    CHECK(r.blocks_per_sm == 0 && r.launched_occupancy < 0 &&
          r.launched_blocks_per_sm == -1);
    CHECK(occ_compute(&a, NULL, &r) == GPUFL_EINVAL);
    CHECK(occ_compute(&a, &l, NULL) == GPUFL_EINVAL);
    l.threads = 0;
    CHECK(occ_compute(&a, &l, &r) == GPUFL_EINVAL);
    CHECK(r.occupancy == 0 && r.limiters == 0);
    l.threads = 128;
    l.carveout_pct = 101;
    CHECK(occ_compute(&a, &l, &r) == GPUFL_EINVAL);
    l.carveout_pct = -1;

    bad = a;
    bad.max_threads_sm = 31;
    CHECK(occ_compute(&bad, &l, &r) == GPUFL_EINVAL);
    bad = a;
    bad.smem_gran = 0;
    CHECK(occ_compute(&bad, &l, &r) == GPUFL_EINVAL);
    bad = a;
    bad.n_carveouts = OCC_MAX_CARVEOUTS + 1;
    CHECK(occ_compute(&bad, &l, &r) == GPUFL_EINVAL);

    /* A zeroed arch that is otherwise usable does not divide by zero. */
    memset(&bad, 0, sizeof(bad));
    bad.max_threads_sm = 2048;
    bad.smem_gran = 128;
    CHECK(occ_compute(&bad, &l, &r) == GPUFL_OK);
    CHECK(r.blocks_per_sm == 0);
}

static void test_limiter_names(void)
{
    static const char *const part[] = { "warps", "regs", "smem", "blocks",
                                        "barriers" };
    char want[64];
    uint32_t bits;

    CHECK_STR(occ_limiter_name(GPUFL_LIMIT_WARPS), "warps");
    CHECK_STR(occ_limiter_name(GPUFL_LIMIT_REGS), "regs");
    CHECK_STR(occ_limiter_name(GPUFL_LIMIT_SMEM), "smem");
    CHECK_STR(occ_limiter_name(GPUFL_LIMIT_BLOCKS), "blocks");
    CHECK_STR(occ_limiter_name(GPUFL_LIMIT_BARRIERS), "barriers");
    CHECK_STR(occ_limiter_name(W | R), "warps+regs");
    CHECK_STR(occ_limiter_name(W | B), "warps+blocks");
    CHECK_STR(occ_limiter_name(B | BAR), "blocks+barriers");
    CHECK_STR(occ_limiter_name(W | R | S | B), "warps+regs+smem+blocks");
    CHECK_STR(occ_limiter_name(0), "");
    CHECK_STR(occ_limiter_name(0x100u | W), "warps");
    CHECK(occ_limiter_name(W | R) == occ_limiter_name(W | R));

    /* Every combination, built independently. */
    for (bits = 0; bits < 32; bits++) {
        size_t len = 0, i;

        want[0] = '\0';
        for (i = 0; i < 5; i++) {
            size_t n = strlen(part[i]);

            if (!(bits & (1u << i)))
                continue;
            if (len)
                want[len++] = '+';
            memcpy(want + len, part[i], n + 1);
            len += n;
        }
        CHECK_STR(occ_limiter_name(bits), want);
    }
}

/* Invariants over a sweep of every architecture; under ASan/UBSan this
 * also shows no arithmetic overflows or divides by zero. */
static void test_sweep(void)
{
    static const int ccs[][2] = {
        { 7, 0 },  { 7, 2 },  { 7, 5 },  { 8, 0 },  { 8, 6 },
        { 8, 7 },  { 8, 9 },  { 9, 0 },  { 10, 0 }, { 10, 1 },
        { 10, 3 }, { 11, 0 }, { 12, 0 }, { 12, 1 },
    };
    static const uint32_t smems[] = {
        0, 1, 4096, 49152, 49153, 102400, 240000
    };
    static const int carves[] = { -1, 0, 25, 50, 100 };
    long bad = 0, n = 0;
    size_t c;

    for (c = 0; c < sizeof(ccs) / sizeof(ccs[0]); c++) {
        occ_arch a = arch(ccs[c][0], ccs[c][1]);
        uint32_t t, regs;
        size_t s, k;

        for (t = 1; t <= 1100; t += 37) {
            for (regs = 0; regs <= 257; regs += 19) {
                for (s = 0; s < sizeof(smems) / sizeof(smems[0]); s++) {
                    for (k = 0; k < sizeof(carves) / sizeof(carves[0]); k++) {
                        occ_launch l = launch(t, regs, 0, smems[s]);
                        occ_result r;
                        int m;

                        l.optin = (int)(k & 1);
                        l.carveout_pct = carves[k];
                        l.smem_executed = (uint32_t)(k * 24576);
                        n++;
                        if (occ_compute(&a, &l, &r) != GPUFL_OK) {
                            bad++;
                            continue;
                        }
                        m = r.limit_warps;
                        if (r.limit_regs < m)
                            m = r.limit_regs;
                        if (r.limit_smem < m)
                            m = r.limit_smem;
                        if (r.limit_blocks < m)
                            m = r.limit_blocks;
                        if (m != r.blocks_per_sm || r.limiters == 0 ||
                            r.occupancy < 0 || r.occupancy > 1 ||
                            r.active_warps > r.max_warps ||
                            (l.smem_executed && (r.launched_occupancy < 0 ||
                                                 r.launched_occupancy > 1)) ||
                            (!l.smem_executed && r.launched_occupancy >= 0))
                            bad++;
                    }
                }
            }
        }
    }
    CHECK(n > 100000);
    CHECK(bad == 0);
}

int main(void)
{
    RUN(test_worked_examples);
    RUN(test_worked_intermediates);
    RUN(test_arch_table);
    RUN(test_carveout);
    RUN(test_optin);
    RUN(test_sm120_blocks);
    RUN(test_override);
    RUN(test_launched);
    RUN(test_partial_warps);
    RUN(test_too_many_threads);
    RUN(test_regs);
    RUN(test_barriers);
    RUN(test_einval);
    RUN(test_limiter_names);
    RUN(test_sweep);
    fprintf(stderr, "%d of %zu worked examples matched\n", n_checked, N_ECASES);
    TEST_DONE();
}
