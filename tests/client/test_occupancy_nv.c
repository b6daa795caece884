/*
 * test_occupancy_nv.c - differential test of the occupancy calculator
 * against NVIDIA's own: cudaOccMaxActiveBlocksPerMultiprocessor from the
 * toolkit's header-only cuda_occupancy.h (CUDA 13.0), compiled in here.
 *
 * For every compute capability our table knows, both calculators get the
 * same device numbers (ours from occ_arch_for_cc, passed back through
 * occ_arch_override as a device would report them) and the same
 * pseudo-random launches, biased towards the limits.  Compared: blocks per
 * SM, the occupancy fraction, the limiting-factor bits, every per-resource
 * limit and the per-block allocations.  Skips (77) without the header.
 */
#include "client/occupancy.h"

#include <stdio.h>

#include <gpufl/gpufl.h>

#ifndef GPUFL_HAVE_CUDA_OCCUPANCY_H

int main(void)
{
    printf("SKIP: cuda_occupancy.h not found at configure time (CUDA toolkit "
           "not installed); the differential test needs NVIDIA's header\n");
    return 77;
}

#else

#include <cuda_occupancy.h>

#include "test.h"

/* Cases per architecture and the seed; GPUFL_OCC_NV_CASES and
 * GPUFL_OCC_NV_SEED override them for a longer hunt by hand. */
#define CASES_PER_ARCH 50000
#define MAX_CASES 100000000L
#define MAX_SHOWN 5 /* mismatching cases printed per architecture */
#define KIB 1024u

/* splitmix64: a fixed seed makes every run compare the same launches. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static long n_cases = CASES_PER_ARCH;

static uint64_t rng(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static uint32_t pick(uint32_t lo, uint32_t hi)
{
    return lo + (uint32_t)(rng() % ((uint64_t)hi - lo + 1));
}

/* One of n values. */
static uint32_t pick_of(const uint32_t *v, size_t n)
{
    return v[rng() % n];
}

/* A value at or around one of the limits: edge - 1, edge, edge + 1, or an
 * allocation unit either side. */
static uint32_t near(uint32_t edge)
{
    static const int32_t d[] = { -256, -128, -1, 0, 0, 1, 128, 256 };
    int64_t v = (int64_t)edge + d[rng() % (sizeof(d) / sizeof(d[0]))];

    return v < 0 ? 0 : (uint32_t)v;
}

/* What each side computes for one launch. */
typedef struct nv_out {
    cudaOccError err;
    cudaOccResult res;
} nv_out;

/* One case: the device and launch both calculators see. */
typedef struct dcase {
    occ_arch arch;          /* ours, after the device override */
    occ_launch l;           /* ours */
    cudaOccDeviceProp prop; /* NVIDIA's, the same numbers */
    cudaOccFuncAttributes attr;
    cudaOccDeviceState state;
} dcase;

/* The device numbers a device of this architecture could report: the
 * table's, or (one case in four) other plausible values in the fields both
 * calculators take from the device. */
static occ_device device_numbers(const occ_arch *t)
{
    static const uint32_t threads_sm[] = { 1024, 1536, 2048 };
    static const uint32_t regs[] = { 65536, 32768 };
    static const uint32_t threads_block[] = { 1024, 512 };
    occ_device d;
    uint32_t i, smem_sm = t->smem_sm;

    d.max_threads_block = t->max_threads_block;
    d.max_warps_sm = t->max_threads_sm / 32;
    d.max_blocks_sm = 0; /* NVIDIA's header has its own, fixed value */
    d.regs_sm = t->regs_sm;
    d.regs_block = t->regs_block;
    d.smem_block = t->smem_block;
    if (rng() % 4 == 0) {
        d.max_threads_block = pick_of(threads_block, 2);
        d.max_warps_sm = pick_of(threads_sm, 3) / 32;
        d.regs_block = pick_of(regs, 2);
        d.regs_sm = pick_of(regs, 2);
        /* A smaller shared memory size, but one of the configurations of
         * at least 64 KiB: occupancy.c deliberately never assumes a
         * configuration above the SM's size, NVIDIA's header rounds up to
         * its own list whatever the SM reported (see carveout_config). */
        i = (uint32_t)(rng() % t->n_carveouts);
        if (t->carveout_kib[i] >= 64)
            smem_sm = t->carveout_kib[i] * KIB;
    }
    d.smem_sm = smem_sm;
    d.smem_optin = smem_sm - t->smem_reserved;
    return d;
}

static void make_case(const occ_arch *table, dcase *c)
{
    static const uint32_t pcts[] = { 0, 50, 100 };
    occ_device d = device_numbers(table);
    occ_arch *a = &c->arch;
    occ_launch *l = &c->l;
    uint32_t r = (uint32_t)(rng() % 100);

    *a = *table;
    occ_arch_override(a, &d);
    memset(l, 0, sizeof(*l));

    /* threads: any size up to the limit, multiples of 32, or the edges
     * (over the limit too: both must say 0) */
    if (r < 50)
        l->threads = pick(1, a->max_threads_block);
    else if (r < 75)
        l->threads = 32 * pick(1, a->max_threads_block / 32);
    else
        l->threads = near(
            pick_of((const uint32_t[]){ 1, 32, 64, 96, a->max_threads_block,
                                        a->max_threads_sm },
                    6));
    if (l->threads == 0)
        l->threads = 1;

    /* registers: 0..255 as compilers emit, and 256/257 around the check */
    r = (uint32_t)(rng() % 100);
    l->regs = r < 85
                  ? pick(0, 255)
                  : pick_of((const uint32_t[]){ 0, 32, 64, 255, 256, 257 }, 6);

    /* shared memory: none, anything, or around the per-block limits */
    r = (uint32_t)(rng() % 100);
    if (r < 30)
        l->smem_static = 0;
    else if (r < 75)
        l->smem_static = pick(1, 48 * KIB);
    else
        l->smem_static = near(
            pick_of((const uint32_t[]){ 48 * KIB - a->smem_reserved, 48 * KIB,
                                        a->smem_optin, 16 * KIB, 32 * KIB },
                    5));
    r = (uint32_t)(rng() % 100);
    if (r < 30)
        l->smem_dynamic = 0;
    else if (r < 70)
        l->smem_dynamic = pick(1, a->smem_optin + 2 * KIB);
    else {
        uint32_t room =
            a->smem_optin > l->smem_static ? a->smem_optin - l->smem_static : 0;
        uint32_t room48 = 48 * KIB > l->smem_static + a->smem_reserved
                              ? 48 * KIB - l->smem_static - a->smem_reserved
                              : 0;

        l->smem_dynamic =
            near(pick_of((const uint32_t[]){ room, room48, room / 2, room / 3,
                                             a->smem_sm / 4 },
                         5));
    }
    l->optin = (int)(rng() % 2);

    /* carveout: none, the named ones, or any percentage */
    r = (uint32_t)(rng() % 100);
    if (r < 30)
        l->carveout_pct = -1;
    else if (r < 60)
        l->carveout_pct = (int)pick_of(pcts, 3);
    else
        l->carveout_pct = (int)pick(0, 100);

    /* named barriers: gpufl passes 0 (CUPTI does not record them), but the
     * calculator takes them */
    l->barriers = rng() % 5 == 0 ? pick(1, 8) : 0;

    memset(&c->prop, 0, sizeof(c->prop));
    c->prop.computeMajor = a->cc_major;
    c->prop.computeMinor = a->cc_minor;
    c->prop.maxThreadsPerBlock = (int)a->max_threads_block;
    c->prop.maxThreadsPerMultiprocessor = (int)a->max_threads_sm;
    c->prop.regsPerBlock = (int)a->regs_block;
    c->prop.regsPerMultiprocessor = (int)a->regs_sm;
    c->prop.warpSize = 32;
    c->prop.sharedMemPerBlock = a->smem_block;
    c->prop.sharedMemPerMultiprocessor = a->smem_sm;
    c->prop.numSms = 132;
    c->prop.sharedMemPerBlockOptin = a->smem_optin;
    c->prop.reservedSharedMemPerBlock = a->smem_reserved;

    memset(&c->attr, 0, sizeof(c->attr));
    c->attr.maxThreadsPerBlock = (int)a->max_threads_block;
    c->attr.numRegs = (int)l->regs;
    c->attr.sharedSizeBytes = l->smem_static;
    c->attr.partitionedGCConfig = PARTITIONED_GC_OFF;
    c->attr.numBlockBarriers = (int)l->barriers;
    c->attr.virtualResourceCount = 0; /* not in the kernel record */
    if (l->optin) {
        /* The record does not carry the function's maximum dynamic size;
         * occupancy.c assumes the largest it could be, optin - static.  Half
         * the cases give NVIDIA exactly that, half any value the launch
         * could have run with (>= its dynamic size): the result must not
         * depend on which. */
        uint64_t room =
            a->smem_optin > l->smem_static ? a->smem_optin - l->smem_static : 0;

        c->attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
        c->attr.maxDynamicSharedSizeBytes = room;
        if (rng() % 2 && l->smem_dynamic <= room)
            c->attr.maxDynamicSharedSizeBytes =
                pick(l->smem_dynamic, (uint32_t)room);
    } else {
        c->attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_DEFAULT;
        c->attr.maxDynamicSharedSizeBytes =
            48 * KIB > l->smem_static ? 48 * KIB - l->smem_static : 0;
    }

    memset(&c->state, 0, sizeof(c->state));
    c->state.cacheConfig = CACHE_PREFER_NONE;
    c->state.carveoutConfig =
        l->carveout_pct < 0 ? SHAREDMEM_CARVEOUT_DEFAULT : l->carveout_pct;
    /* The legacy cache preference gives the same as 100 / 0 / 50 % (the
     * mapping a decoder applies before calling us, docs/occupancy.md#inputs):
     * say the named percentages that way to NVIDIA half the time. */
    if (rng() % 2 && (l->carveout_pct == 0 || l->carveout_pct == 50 ||
                      l->carveout_pct == 100)) {
        c->state.carveoutConfig = SHAREDMEM_CARVEOUT_DEFAULT;
        c->state.cacheConfig = l->carveout_pct == 100 ? CACHE_PREFER_SHARED
                               : l->carveout_pct == 0 ? CACHE_PREFER_L1
                                                      : CACHE_PREFER_EQUAL;
    }
}

/* NVIDIA's limiting-factor bits in ours.  VIRTUAL_RESOURCES has no
 * counterpart (the record has no such count; we pass 0, so NVIDIA's limit
 * is INT_MAX and the bit never set): it maps to a bit ours never sets. */
static uint32_t map_limiters(unsigned nv)
{
    return ((nv & OCC_LIMIT_WARPS) ? GPUFL_LIMIT_WARPS : 0) |
           ((nv & OCC_LIMIT_REGISTERS) ? GPUFL_LIMIT_REGS : 0) |
           ((nv & OCC_LIMIT_SHARED_MEMORY) ? GPUFL_LIMIT_SMEM : 0) |
           ((nv & OCC_LIMIT_BLOCKS) ? GPUFL_LIMIT_BLOCKS : 0) |
           ((nv & OCC_LIMIT_BARRIERS) ? GPUFL_LIMIT_BARRIERS : 0) |
           ((nv & OCC_LIMIT_VIRTUAL_RESOURCES) ? 0x80000000u : 0);
}

static long n_barrier_only; /* cases of the deliberate difference */

static void show(const dcase *c, const occ_result *o, const nv_out *n)
{
    const cudaOccResult *h = &n->res;

    fprintf(stderr,
            "  sm_%d%d%s: threads %u regs %u static %u dynamic %u optin %d"
            " (maxDyn %zu) carveout %d barriers %u | device threads/SM %u"
            " regs/block %u smem/SM %u optin %u\n",
            c->arch.cc_major, c->arch.cc_minor,
            c->arch.cc_major >= 10 ? "" : " ", c->l.threads, c->l.regs,
            c->l.smem_static, c->l.smem_dynamic, c->l.optin,
            c->attr.maxDynamicSharedSizeBytes, c->l.carveout_pct, c->l.barriers,
            c->arch.max_threads_sm, c->arch.regs_block, c->arch.smem_sm,
            c->arch.smem_optin);
    fprintf(stderr,
            "    gpufl:  blocks %d occ %.4f limiters 0x%02x (%s)"
            " W/R/S/B/bar %d/%d/%d/%d/%d smem/blk %llu regs/blk %llu\n",
            o->blocks_per_sm, o->occupancy, o->limiters,
            occ_limiter_name(o->limiters), o->limit_warps, o->limit_regs,
            o->limit_smem, o->limit_blocks, o->limit_barriers,
            (unsigned long long)o->smem_per_block,
            (unsigned long long)o->regs_per_block);
    fprintf(stderr,
            "    NVIDIA: blocks %d limiters 0x%02x W/R/S/B/bar %d/%d/%d/%d/%d"
            " smem/blk %zu regs/blk %d (err %d)\n",
            h->activeBlocksPerMultiprocessor, h->limitingFactors,
            h->blockLimitWarps, h->blockLimitRegs, h->blockLimitSharedMem,
            h->blockLimitBlocks, h->blockLimitBarriers,
            h->allocatedSharedMemPerBlock, h->allocatedRegistersPerBlock,
            (int)n->err);
}

static int min4(int a, int b, int c, int d)
{
    int m = a < b ? a : b;

    m = m < c ? m : c;
    return m < d ? m : d;
}

/* The limiter bits ours must report for NVIDIA's result, or -1 when
 * NVIDIA's own bits are not what the deliberate difference predicts.
 *
 * The one deliberate difference: NVIDIA's header sets the warps, registers,
 * shared memory and blocks bits against the minimum of those four, then
 * lowers the result to the barrier limit and adds the barriers bit without
 * clearing them; when barriers alone set the result it still names the
 * others (e.g. 0x18 "blocks+barriers" for 8 blocks where blocks allow 32).
 * occupancy.h defines the limiters as the limits equal to the result, so
 * ours is "barriers" alone there.  gpufl passes 0 barriers (CUPTI does not
 * record them), so this never reaches a record. */
static int64_t want_limiters(const cudaOccResult *h)
{
    int pre = min4(h->blockLimitWarps, h->blockLimitRegs,
                   h->blockLimitSharedMem, h->blockLimitBlocks);
    uint32_t stale;

    if (h->blockLimitBarriers >= pre)
        return map_limiters(h->limitingFactors);
    stale = (h->blockLimitWarps == pre ? GPUFL_LIMIT_WARPS : 0) |
            (h->blockLimitRegs == pre ? GPUFL_LIMIT_REGS : 0) |
            (h->blockLimitSharedMem == pre ? GPUFL_LIMIT_SMEM : 0) |
            (h->blockLimitBlocks == pre ? GPUFL_LIMIT_BLOCKS : 0);
    if (map_limiters(h->limitingFactors) != (stale | GPUFL_LIMIT_BARRIERS) ||
        h->activeBlocksPerMultiprocessor != h->blockLimitBarriers)
        return -1;
    n_barrier_only++;
    return GPUFL_LIMIT_BARRIERS;
}

/* Whether ours agrees with NVIDIA's on one case. */
static int agree(const dcase *c, const occ_result *o, const nv_out *n)
{
    const cudaOccResult *h = &n->res;
    uint64_t wpb = (c->l.threads + 31u) / 32u;
    double occ = (double)((uint64_t)h->activeBlocksPerMultiprocessor * wpb) /
                 (double)(c->arch.max_threads_sm / 32u);
    int64_t want;

    if (n->err != CUDA_OCC_SUCCESS)
        return 0;
    want = want_limiters(h);
    if (o->blocks_per_sm != h->activeBlocksPerMultiprocessor ||
        o->occupancy != occ || (int64_t)o->limiters != want)
        return 0;
    if (o->limit_warps != h->blockLimitWarps ||
        o->limit_regs != h->blockLimitRegs ||
        o->limit_smem != h->blockLimitSharedMem ||
        o->limit_blocks != h->blockLimitBlocks ||
        o->limit_barriers != h->blockLimitBarriers)
        return 0;
    if (o->smem_per_block != h->allocatedSharedMemPerBlock)
        return 0;
    /* NVIDIA reports the registers a block would take even when it cannot
     * launch; occupancy.h documents 0 then. */
    if (o->limit_regs > 0 &&
        o->regs_per_block != (uint64_t)h->allocatedRegistersPerBlock)
        return 0;
    return 1;
}

static int n_archs;
static long n_compared;

static void compare_arch(const occ_arch *table)
{
    long mismatches = 0, i, launchable = 0;
    uint32_t seen = 0;

    for (i = 0; i < n_cases; i++) {
        dcase c;
        occ_result o;
        nv_out n;

        make_case(table, &c);
        memset(&n, 0, sizeof(n));
        n.err = cudaOccMaxActiveBlocksPerMultiprocessor(
            &n.res, &c.prop, &c.attr, &c.state, (int)c.l.threads,
            c.l.smem_dynamic);
        if (occ_compute(&c.arch, &c.l, &o) != GPUFL_OK) {
            mismatches++;
            fprintf(stderr, "  occ_compute failed\n");
            continue;
        }
        n_compared++;
        launchable += o.blocks_per_sm > 0;
        seen |= o.limiters;
        if (!agree(&c, &o, &n)) {
            if (mismatches < MAX_SHOWN)
                show(&c, &o, &n);
            mismatches++;
        }
    }
    fprintf(stderr,
            "sm_%d%d: %ld cases, %ld launchable, limiters seen %s, "
            "%ld mismatches\n",
            table->cc_major, table->cc_minor, n_cases, launchable,
            occ_limiter_name(seen), mismatches);
    CHECK(mismatches == 0);
    /* The generator reaches both outcomes and every limiter. */
    CHECK(launchable > n_cases / 4 && launchable < n_cases - n_cases / 20);
    CHECK(seen == (GPUFL_LIMIT_WARPS | GPUFL_LIMIT_REGS | GPUFL_LIMIT_SMEM |
                   GPUFL_LIMIT_BLOCKS |
                   (table->barrier_factor ? GPUFL_LIMIT_BARRIERS : 0)));
}

static void test_every_arch(void)
{
    int major, minor;

    for (major = 0; major <= 15; major++) {
        for (minor = 0; minor <= 9; minor++) {
            occ_arch a;

            if (occ_arch_for_cc(major, minor, &a) != GPUFL_OK)
                continue;
            n_archs++;
            compare_arch(&a);
        }
    }
    /* sm_70 .. sm_121 as the table stands; a row lost would show here. */
    CHECK(n_archs == 14);
}

/* A positive number from the environment, or def. */
static unsigned long long env_num(const char *name, unsigned long long def)
{
    const char *v = getenv(name);
    char *end;
    unsigned long long n;

    if (!v || !*v)
        return def;
    n = strtoull(v, &end, 0);
    return *end || n == 0 ? def : n;
}

int main(void)
{
    n_cases = (long)env_num("GPUFL_OCC_NV_CASES", CASES_PER_ARCH);
    if (n_cases > MAX_CASES)
        n_cases = MAX_CASES;
    rng_state = env_num("GPUFL_OCC_NV_SEED", rng_state);
    RUN(test_every_arch);
    fprintf(stderr,
            "%d architectures, %ld cases compared, %ld of them limited by "
            "barriers alone (NVIDIA's extra bits ignored)\n",
            n_archs, n_compared, n_barrier_only);
    TEST_DONE();
}

#endif
