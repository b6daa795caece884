/*
 * occupancy.c - the theoretical occupancy calculator: the per-architecture
 * table, device overrides, the block-count computation and limiter names.
 *
 * Restates the CUDA 13.0 cuda_occupancy.h algorithm (our own code; the
 * steps are in docs/occupancy.md#the-calculation).  All arithmetic on
 * sizes is 64-bit: a record can carry any 32-bit value and products of two
 * of them must not wrap.
 */
#include "client/occupancy.h"

#include <string.h>

#include <gpufl/gpufl.h>

#define WARP 32u
#define SMSP 4u /* sub-partitions per SM, each owning 1/4 of the registers */
#define KIB 1024u

/* One table row; the columns every architecture shares are filled here.
 * ROW expands its arguments before ROW_ counts them, so a CV_* list can
 * stand for the last two columns (count, then the sizes in KiB). */
#define ROW(...) ROW_(__VA_ARGS__)
#define ROW_(maj, min, thr, blk, sm, optin, rsv, gran, bar, ncv, ...)          \
    {                                                                          \
        .cc_major = (maj), .cc_minor = (min), .max_threads_block = 1024,       \
        .max_threads_sm = (thr), .max_blocks_sm = (blk), .regs_sm = 65536,     \
        .regs_block = 65536, .max_regs_thread = 256, .smem_sm = (sm),          \
        .smem_block = 48 * KIB, .smem_optin = (optin), .smem_reserved = (rsv), \
        .smem_gran = (gran), .barrier_factor = (bar), .n_carveouts = (ncv),    \
        .carveout_kib = { __VA_ARGS__ },                                       \
    }

#define CV_VOLTA 6, 0, 8, 16, 32, 64, 96
#define CV_TURING 2, 32, 64
#define CV_A100 8, 0, 8, 16, 32, 64, 100, 132, 164
#define CV_GA10X 6, 0, 8, 16, 32, 64, 100
#define CV_HOPPER 10, 0, 8, 16, 32, 64, 100, 132, 164, 196, 228

/*
 * docs/occupancy.md#per-architecture-parameters.  Block limits, allocation
 * units, reservations and carveout lists are the header's; thread and
 * shared memory sizes the Programming Guide's.  Values not checked against
 * a source or a device: 7.2 (Xavier) as 7.0, which the header's 7.x rules
 * also imply; 48 warps per SM on 8.7 (Orin) and on 10.1/11.0 (Thor).
 * Devices report their own values for everything but the carveout list,
 * the reservation, the allocation unit and the barrier factor, and the
 * caller lets those win.
 */
static const occ_arch arch_table[] = {
    /* cc, threads/SM, blocks/SM, smem/SM, opt-in/block, reserved/block,
     * allocation unit, barrier factor, carveouts (count, KiB...) */
    ROW(7, 0, 2048, 32, 96 * KIB, 96 * KIB, 0, 256, 0, CV_VOLTA),
    ROW(7, 2, 2048, 32, 96 * KIB, 96 * KIB, 0, 256, 0, CV_VOLTA),
    ROW(7, 5, 1024, 16, 64 * KIB, 64 * KIB, 0, 256, 0, CV_TURING),
    ROW(8, 0, 2048, 32, 164 * KIB, 163 * KIB, KIB, 128, 0, CV_A100),
    ROW(8, 6, 1536, 16, 100 * KIB, 99 * KIB, KIB, 128, 0, CV_GA10X),
    ROW(8, 7, 1536, 16, 164 * KIB, 163 * KIB, KIB, 128, 0, CV_A100),
    ROW(8, 9, 1536, 24, 100 * KIB, 99 * KIB, KIB, 128, 0, CV_GA10X),
    ROW(9, 0, 2048, 32, 228 * KIB, 227 * KIB, KIB, 128, 2, CV_HOPPER),
    ROW(10, 0, 2048, 32, 228 * KIB, 227 * KIB, KIB, 128, 2, CV_HOPPER),
    ROW(10, 1, 1536, 24, 228 * KIB, 227 * KIB, KIB, 128, 1, CV_HOPPER),
    ROW(10, 3, 2048, 32, 228 * KIB, 227 * KIB, KIB, 128, 2, CV_HOPPER),
    ROW(11, 0, 1536, 24, 228 * KIB, 227 * KIB, KIB, 128, 1, CV_HOPPER),
    /* 24 blocks is the 13.0 header's value; the guides say 32
     * (docs/occupancy.md#per-architecture-parameters). */
    ROW(12, 0, 1536, 24, 100 * KIB, 99 * KIB, KIB, 128, 1, CV_GA10X),
    ROW(12, 1, 1536, 24, 100 * KIB, 99 * KIB, KIB, 128, 1, CV_GA10X),
};

int occ_arch_for_cc(int major, int minor, occ_arch *out)
{
    size_t i;

    if (!out)
        return GPUFL_EINVAL;
    for (i = 0; i < sizeof(arch_table) / sizeof(arch_table[0]); i++) {
        if (arch_table[i].cc_major == major &&
            arch_table[i].cc_minor == minor) {
            *out = arch_table[i];
            return GPUFL_OK;
        }
    }
    return GPUFL_EUNAVAIL;
}

void occ_arch_override(occ_arch *a, const occ_device *d)
{
    if (!a || !d)
        return;
    if (d->max_threads_block)
        a->max_threads_block = d->max_threads_block;
    if (d->max_warps_sm && d->max_warps_sm <= UINT32_MAX / WARP)
        a->max_threads_sm = d->max_warps_sm * WARP;
    if (d->max_blocks_sm)
        a->max_blocks_sm = d->max_blocks_sm;
    if (d->regs_sm)
        a->regs_sm = d->regs_sm;
    if (d->regs_block)
        a->regs_block = d->regs_block;
    if (d->smem_sm)
        a->smem_sm = d->smem_sm;
    if (d->smem_block)
        a->smem_block = d->smem_block;
    if (d->smem_optin)
        a->smem_optin = d->smem_optin;
}

static uint64_t round_up(uint64_t v, uint64_t unit)
{
    return (v + unit - 1) / unit * unit;
}

static int clamp_int(uint64_t v)
{
    return v >= (uint64_t)OCC_INF ? OCC_INF : (int)v;
}

/*
 * The per-SM shared memory configuration the driver would pick for a wish
 * of `want` bytes: the smallest supported configuration >= want.  A 0 KiB
 * configuration thus answers only a wish of 0, and on Turing (no 0 KiB
 * configuration) small wishes become 32 KiB.  Configurations above the SM's
 * size are skipped, so a device reporting less than the table cannot get
 * more; when none is large enough the SM's whole size is the answer.
 */
static uint64_t carveout_config(const occ_arch *a, uint64_t want)
{
    uint64_t best = 0;
    int found = 0;
    uint32_t i;

    for (i = 0; i < a->n_carveouts; i++) {
        uint64_t c = (uint64_t)a->carveout_kib[i] * KIB;

        if (c < want || c > a->smem_sm)
            continue;
        if (!found || c < best) {
            best = c;
            found = 1;
        }
    }
    return found ? best : a->smem_sm;
}

/* Blocks that registers allow (docs/occupancy.md#the-calculation, step 4). */
static int regs_limit(const occ_arch *a, uint32_t regs, uint64_t wpb,
                      uint64_t *per_block)
{
    uint64_t rpw, wpb_hw, per_smsp;

    *per_block = 0;
    if (regs > a->max_regs_thread)
        return 0;
    rpw = round_up((uint64_t)regs * WARP, 256);
    /* The hardware's per-block check assumes every block's warps are spread
     * over all four sub-partitions, so it counts warps rounded up to 4.  The
     * comparisons divide instead of multiplying: wpb can be 2^27. */
    wpb_hw = round_up(wpb, SMSP);
    if (rpw && (rpw > a->regs_block / wpb || rpw > a->regs_block / wpb_hw))
        return 0;
    *per_block = rpw * wpb;
    if (rpw == 0)
        return OCC_INF;
    /* Each sub-partition holds whole warps from its quarter of the file:
     * the flooring per quarter is what a plain regs_sm / per_block misses. */
    per_smsp = (a->regs_sm / SMSP) / rpw;
    return clamp_int(per_smsp * SMSP / wpb);
}

/* Blocks that per-SM capacity `cap` holds with `per` bytes each. */
static int smem_fit(uint64_t cap, uint64_t per)
{
    return per ? clamp_int(cap / per) : OCC_INF;
}

/* Whether one block fits the per-block shared memory limit
 * (docs/occupancy.md#the-calculation, step 6); `per` is its allocation,
 * the driver's reservation included. */
static int smem_block_fits(const occ_arch *a, const occ_launch *l, uint64_t per)
{
    uint64_t blk_limit = a->smem_block;

    if (l->optin) {
        /* The record does not carry the function's maximum dynamic size;
         * the most it could have been set to is the opt-in limit minus the
         * static part (docs/occupancy.md#inputs), and a launch that ran
         * passed the check. */
        int64_t max_dyn = (int64_t)a->smem_optin - (int64_t)l->smem_static;

        if ((int64_t)l->smem_dynamic > max_dyn)
            return 0;
        if ((int64_t)l->smem_static + a->smem_reserved + max_dyn >
            (int64_t)a->smem_block)
            blk_limit = a->smem_optin;
    }
    /* The reservation is the driver's, not the kernel's: the limits a
     * kernel sees exclude it, so add it back before comparing. */
    blk_limit += a->smem_reserved;
    return per <= blk_limit;
}

/* The per-SM shared memory assumed for blocks of `per` bytes.  A carveout
 * preference is a hint that yields to the need of one block; without one
 * the header assumes the largest configuration. */
static uint64_t smem_capacity(const occ_arch *a, int carveout_pct, uint64_t per)
{
    uint64_t pref = carveout_pct < 0
                        ? a->smem_sm
                        : (uint64_t)carveout_pct * a->smem_sm / 100;

    pref = carveout_config(a, pref);
    return pref >= per ? pref : carveout_config(a, per);
}

static int min_int(int x, int y)
{
    return x < y ? x : y;
}

/* Every limit equal to the result.  Deliberately not the header's bits
 * when barriers lower the result: it sets the other four bits against their
 * own minimum before applying the barrier limit and never clears them, so
 * it names "blocks+barriers" for 16 blocks where blocks allow 32.  gpufl
 * passes 0 barriers, so records never see the difference
 * (tests/client/test_occupancy_nv.c). */
static uint32_t limiter_bits(int blocks, const occ_result *r)
{
    return (r->limit_warps == blocks ? GPUFL_LIMIT_WARPS : 0) |
           (r->limit_regs == blocks ? GPUFL_LIMIT_REGS : 0) |
           (r->limit_smem == blocks ? GPUFL_LIMIT_SMEM : 0) |
           (r->limit_blocks == blocks ? GPUFL_LIMIT_BLOCKS : 0) |
           (r->limit_barriers == blocks ? GPUFL_LIMIT_BARRIERS : 0);
}

int occ_compute(const occ_arch *a, const occ_launch *l, occ_result *r)
{
    uint64_t wpb, per;
    int fits, others, blocks;

    if (!r)
        return GPUFL_EINVAL;
    memset(r, 0, sizeof(*r));
    r->launched_blocks_per_sm = -1;
    r->launched_occupancy = -1.0;
    if (!a || !l || l->threads == 0 || l->carveout_pct > 100 ||
        a->max_threads_sm < WARP || a->smem_gran == 0 ||
        a->n_carveouts > OCC_MAX_CARVEOUTS)
        return GPUFL_EINVAL;

    /* A partial warp occupies a whole warp slot. */
    wpb = ((uint64_t)l->threads + WARP - 1) / WARP;
    r->max_warps = (int)(a->max_threads_sm / WARP);

    r->limit_warps = l->threads > a->max_threads_block
                         ? 0
                         : clamp_int((uint64_t)r->max_warps / wpb);
    r->limit_blocks = clamp_int(a->max_blocks_sm);
    r->limit_regs = regs_limit(a, l->regs, wpb, &r->regs_per_block);

    per =
        round_up((uint64_t)l->smem_static + l->smem_dynamic + a->smem_reserved,
                 a->smem_gran);
    r->smem_per_block = per;
    fits = smem_block_fits(a, l, per);
    if (fits) {
        r->smem_config = smem_capacity(a, l->carveout_pct, per);
        r->limit_smem = smem_fit(r->smem_config, per);
    }

    /* Named barriers are counted per block slot, so they scale with the
     * architecture's block limit, not with the launch. */
    r->limit_barriers = OCC_INF;
    if (l->barriers && a->barrier_factor)
        r->limit_barriers = clamp_int((uint64_t)a->max_blocks_sm *
                                      a->barrier_factor / l->barriers);

    others = min_int(min_int(r->limit_warps, r->limit_regs),
                     min_int(r->limit_blocks, r->limit_barriers));
    blocks = min_int(others, r->limit_smem);
    r->blocks_per_sm = blocks;
    r->limiters = limiter_bits(blocks, r);
    r->active_warps = (int)((uint64_t)blocks * wpb);
    r->occupancy = (double)r->active_warps / r->max_warps;

    /* As launched (docs/occupancy.md#the-calculation): the driver's
     * executed configuration replaces the assumed one.  One below a block's
     * need cannot have run; the record is then not trusted and the need
     * decides, as for a preference. */
    if (l->smem_executed) {
        int launched = 0;

        if (fits) {
            uint64_t cap = l->smem_executed >= per ? l->smem_executed
                                                   : carveout_config(a, per);

            launched = min_int(others, smem_fit(cap, per));
        }
        r->launched_blocks_per_sm = launched;
        r->launched_occupancy =
            (double)((uint64_t)launched * wpb) / r->max_warps;
    }
    return GPUFL_OK;
}

const char *occ_limiter_name(uint32_t limiters)
{
    /* Indexed by the five bits, names in bit order: the wire format and the
     * server both rely on one spelling per combination. */
    static const char *const names[32] = {
        "",
        "warps",
        "regs",
        "warps+regs",
        "smem",
        "warps+smem",
        "regs+smem",
        "warps+regs+smem",
        "blocks",
        "warps+blocks",
        "regs+blocks",
        "warps+regs+blocks",
        "smem+blocks",
        "warps+smem+blocks",
        "regs+smem+blocks",
        "warps+regs+smem+blocks",
        "barriers",
        "warps+barriers",
        "regs+barriers",
        "warps+regs+barriers",
        "smem+barriers",
        "warps+smem+barriers",
        "regs+smem+barriers",
        "warps+regs+smem+barriers",
        "blocks+barriers",
        "warps+blocks+barriers",
        "regs+blocks+barriers",
        "warps+regs+blocks+barriers",
        "smem+blocks+barriers",
        "warps+smem+blocks+barriers",
        "regs+smem+blocks+barriers",
        "warps+regs+smem+blocks+barriers",
    };

    return names[limiters & 0x1fu];
}
