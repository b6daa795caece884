/*
 * bench_kblock.c - bytes per kernel at rest and codec speed of the kernel
 * block format (src/server/kblock.c), on this machine.
 *
 *   bench_kblock [-q] [-n KERNELS] [-b BLOCK] [FILE.device.log ...]
 *
 * With log files (the simulated GPU's: example_train with GPUFL_SIM_SEED,
 * docs/server.md "Kernel blocks (format)" says how they were made), their
 * kernel lines go through the server's own line parser and launch-dict
 * resolution as the store keeps them; without, KERNELS (default 1M) come
 * from bench_server's generator (the same formulas as its make(): 200
 * names, 2 devices x 4 streams interleaved, noisy durations).
 *
 * Kernels are cut into blocks of BLOCK (default 4096) per session and
 * (device, stream), in arrival order, as a store would.  Prints: bytes per
 * kernel for block sizes, zstd levels and encoder options; the per-column
 * breakdown (before zstd, and each column compressed alone); the kernel
 * lines' own JSONL size raw and under zstd -3/-19 for comparison; encode,
 * decode (whole, and of the timeline's columns only) and seek speed in CPU
 * time of this thread (the 2-core machines are shared; wall time would
 * measure the neighbours).  Figures, not a test.
 */
#include "ingest.h"
#include "kblock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

/* Launch dicts a log may define (ids are small in practice). */
#define BK_LAUNCH_MAX 65536
/* Groups ((file, dev, stream)) and kernels. */
#define BK_GROUPS_MAX 4096
#define BK_KERNELS_MAX (64u << 20)

typedef struct launch {
    int set;
    int64_t name, regs, smem, bx, by, bz;
    double occ;
} launch;

typedef struct group {
    int file;
    uint64_t dev, stream;
    kblock_ev *ev;
    size_t n, cap;
} group;

static group groups[BK_GROUPS_MAX];
static size_t ngroups, nkernels;
static unsigned char *jsonl; /* the kernel lines, for the zstd baseline */
static size_t jsonl_len, jsonl_cap;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p) {
        fprintf(stderr, "bench_kblock: out of memory\n");
        exit(1);
    }
    return p;
}

static void add(int file, const kblock_ev *e)
{
    group *g = NULL;
    for (size_t i = 0; i < ngroups; i++)
        if (groups[i].file == file && groups[i].dev == e->dev &&
            groups[i].stream == e->stream) {
            g = &groups[i];
            break;
        }
    if (!g) {
        if (ngroups == BK_GROUPS_MAX || nkernels >= BK_KERNELS_MAX) {
            fprintf(stderr, "bench_kblock: too many streams or kernels\n");
            exit(1);
        }
        g = &groups[ngroups++];
        g->file = file;
        g->dev = e->dev;
        g->stream = e->stream;
    }
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 4096;
        g->ev = xrealloc(g->ev, g->cap * sizeof(*g->ev));
    }
    g->ev[g->n++] = *e;
    nkernels++;
}

static void keep_line(const char *line, size_t n)
{
    if (jsonl_len + n + 1 > jsonl_cap) {
        jsonl_cap = (jsonl_len + n + 1) * 2;
        jsonl = xrealloc(jsonl, jsonl_cap);
    }
    memcpy(jsonl + jsonl_len, line, n);
    jsonl[jsonl_len + n] = '\n';
    jsonl_len += n + 1;
}

/* A kernel line as the store keeps it (store_sql_ingest.c put_line). */
static void from_srv(const srv_ev *s, const launch *l, kblock_ev *e)
{
    memset(e, 0, sizeof(*e));
    e->seq = s->seq;
    e->ts = s->ts;
    e->dur = s->dur;
    e->dev = s->dev;
    e->stream = s->stream;
    e->corr = s->corr;
    e->cfg = s->cfg;
    for (int i = 0; i < 3; i++)
        e->grid[i] = s->grid[i];
    if (s->cfg) {
        e->name_id = l ? l->name : 0;
        e->regs = l ? l->regs : 0;
        e->smem = l ? l->smem : 0;
        e->occ = l ? l->occ : -1;
        e->block[0] = l ? l->bx : 0;
        e->block[1] = l ? l->by : 0;
        e->block[2] = l ? l->bz : 0;
    } else {
        e->name_id = (int64_t)s->name;
        e->regs = (int64_t)s->regs;
        e->smem = (int64_t)(s->smem + s->dsmem);
        e->occ = s->occ;
        for (int i = 0; i < 3; i++)
            e->block[i] = (int64_t)s->block[i];
    }
    e->scope = s->scope;
    e->path = s->path;
    e->stack = s->stack;
    e->api_off = s->api_off;
    e->api_dur = s->api_dur;
    e->flags = s->flags;
    e->tid = s->tid && s->api_dur ? s->tid : 0;
}

static void load_file(int fi, const char *path)
{
    static launch ld[BK_LAUNCH_MAX];
    static jsonl_tok tok[INGEST_MAX_TOKENS];
    static char arena[1 << 20];
    FILE *f = fopen(path, "rb");
    char *buf;
    long sz;
    size_t pos = 0, n;
    const char *line;
    jsonl_doc d;
    ingest_arena a = { arena, 0, sizeof(arena) };
    srv_ev e;
    char why[INGEST_REASON_MAX];

    if (!f || fseek(f, 0, SEEK_END) || (sz = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET)) {
        fprintf(stderr, "bench_kblock: %s: cannot read\n", path);
        exit(1);
    }
    buf = xrealloc(NULL, (size_t)sz + 1);
    if (fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
        fprintf(stderr, "bench_kblock: %s: short read\n", path);
        exit(1);
    }
    fclose(f);
    memset(ld, 0, sizeof(ld));
    jsonl_doc_init(&d, tok, INGEST_MAX_TOKENS);
    while (jsonl_line_next(buf, (size_t)sz, &pos, &line, &n)) {
        a.len = 0;
        if (ingest_line_parse(&d, SRV_ST_DEVICE, line, n, &a, &e, why))
            continue;
        if (e.type == EV_DICT && e.dkind == DK_LAUNCH && e.id < BK_LAUNCH_MAX) {
            launch *l = &ld[e.id];
            l->set = 1;
            l->name = (int64_t)e.name;
            l->regs = (int64_t)e.regs;
            l->smem = (int64_t)(e.smem + e.dsmem);
            l->occ = e.occ;
            l->bx = (int64_t)e.block[0];
            l->by = (int64_t)e.block[1];
            l->bz = (int64_t)e.block[2];
        } else if (e.type == EV_KERNEL) {
            kblock_ev k;
            const launch *l =
                e.cfg < BK_LAUNCH_MAX && ld[e.cfg].set ? &ld[e.cfg] : NULL;
            from_srv(&e, l, &k);
            add(fi, &k);
            keep_line(line, n);
        }
    }
    free(buf);
}

/* bench_server.c's make(): the same kernels, without the JSON. */
static void generate(size_t nk, unsigned names)
{
    uint64_t ts = 1700000000000000000ull, x = 88172645463325252ull;
    size_t seq = 1 + 2 * (size_t)names;
    char line[512];

    for (size_t k = 0; k < nk; k++) {
        kblock_ev e;
        uint64_t dur;
        unsigned cfg;
        int n;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        dur = 2000 + (x % 1000) * (1 + (x >> 20) % 200);
        ts += 1000 + dur / 4;
        cfg = 100001 + (unsigned)(x % names);
        memset(&e, 0, sizeof(e));
        e.seq = seq++;
        e.ts = ts;
        e.dur = dur;
        e.dev = k % 2;
        e.stream = 7 + k % 4;
        e.corr = k;
        e.cfg = cfg;
        e.grid[0] = 1024;
        e.grid[1] = 4;
        e.api_off = -5000;
        e.api_dur = 3000;
        e.scope = 1 + k / 50;
        /* the launch dict: name i, block [256], regs 32 + i % 64, occ .5 */
        e.name_id = cfg - 100000;
        e.block[0] = 256;
        e.regs = 32 + (cfg - 100000) % 64;
        e.occ = 0.5;
        add(0, &e);
        n = snprintf(line, sizeof(line),
                     "{\"v\":1,\"sid\":\"5e55e55e-0000-4000-8000-00000000be01"
                     "\",\"st\":\"device\",\"seq\":%llu,\"ts\":%llu,\"type\":"
                     "\"kernel\",\"dev\":%u,\"stream\":%u,\"corr\":%zu,"
                     "\"cfg\":%u,\"grid\":[1024,4],\"dur\":%llu,\"api\":"
                     "[-5000,3000],\"scope\":%zu}",
                     (unsigned long long)e.seq, (unsigned long long)ts,
                     (unsigned)(k % 2), (unsigned)(7 + k % 4), k, cfg,
                     (unsigned long long)dur, 1 + k / 50);
        keep_line(line, (size_t)n);
    }
}

static kblock_enc *enc;
static kblock_dec *dec;
static unsigned char *blk;

/* Encodes every group in blocks of bs; returns total bytes; *secs the
 * encode time; st (if not NULL) summed over the blocks. */
static size_t encode_all(size_t bs, int zl, unsigned opt, double *secs,
                         kblock_stats *st, unsigned char **store,
                         size_t *nstore, size_t *offs)
{
    size_t total = 0, len, nb = 0;
    char why[256];
    double tenc = 0;

    if (st)
        memset(st, 0, sizeof(*st));
    for (size_t g = 0; g < ngroups; g++)
        for (size_t i = 0; i < groups[g].n; i += bs) {
            size_t n = groups[g].n - i < bs ? groups[g].n - i : bs;
            double t1 = now_s();
            if (kblock_encode(enc, groups[g].ev + i, n, zl, opt, blk,
                              KB_BLOCK_MAX, &len, why, sizeof(why))) {
                fprintf(stderr, "bench_kblock: encode: %s\n", why);
                exit(1);
            }
            tenc += now_s() - t1;
            total += len;
            if (store) {
                *store = xrealloc(*store, *nstore + len);
                memcpy(*store + *nstore, blk, len);
                offs[nb++] = *nstore;
                *nstore += len;
            }
            if (st) {
                kblock_stats s;
                if (kblock_stats_get(dec, blk, len, zl, &s, why, sizeof(why))) {
                    fprintf(stderr, "bench_kblock: stats: %s\n", why);
                    exit(1);
                }
                st->hdr += s.hdr;
                st->raw += s.raw;
                st->total += s.total;
                st->nshapes += s.nshapes;
                for (int c = 0; c < KB_NCOLS; c++) {
                    st->col_raw[c] += s.col_raw[c];
                    st->col_z[c] += s.col_z[c];
                    st->col_mode[c] |= 1u << s.col_mode[c];
                }
            }
        }
    if (store)
        offs[nb] = *nstore;
    if (secs)
        *secs = tenc;
    return total;
}

/* The column modes (docs/server.md "Kernel blocks (format)"). */
static const char *const mode_names[8] = { "const", "raw",      "zigzag",
                                           "delta", "dod",      "shape-delta",
                                           "gap",   "(unknown)" };

static double per_k(size_t bytes)
{
    return (double)bytes / (double)nkernels;
}

int main(int argc, char **argv)
{
    size_t nk = 1000000, bs = 4096, nfiles = 0;
    int quick = 0; /* -q: without the block size x zstd level table */
    static const size_t sizes[] = { 1024, 4096, 16384 };
    static const int levels[] = { 1, 3, 9, 19 };
    static const struct {
        unsigned opt;
        const char *what;
    } opts[] = {
        { KB_OPT_DEFAULT, "default (shapes, per-shape dur, ts gap)" },
        { KB_OPT_NOGAP, "ts, api_off without the gap mode" },
        { KB_OPT_DUR_PLAIN, "dur without the per-shape delta" },
        { KB_OPT_NOSHAPES, "no shape dictionary" },
        { KB_OPT_NOZSTD, "no zstd (varints only)" },
    };
    kblock_stats st;
    double secs;
    size_t total, nblk = 0, zc;
    unsigned char *store = NULL, *zb;
    size_t nstore = 0, *offs;
    kblock_ev *out;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-q"))
            quick = 1;
        else if (!strcmp(argv[i], "-n") && i + 1 < argc)
            nk = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "-b") && i + 1 < argc)
            bs = strtoull(argv[++i], NULL, 10);
        else
            load_file((int)nfiles++, argv[i]);
    }
    if (bs < 1 || bs > KB_MAX_EVENTS) {
        fprintf(stderr, "bench_kblock: -b 1 to %d\n", KB_MAX_EVENTS);
        return 2;
    }
    if (!nfiles)
        generate(nk, 200);
    enc = kblock_enc_new();
    dec = kblock_dec_new();
    blk = malloc(KB_BLOCK_MAX);
    out = malloc(KB_MAX_EVENTS * sizeof(*out));
    if (!enc || !dec || !blk || !out || !nkernels)
        return 1;
    printf("bench_kblock: %zu kernels in %zu streams, %s\n", nkernels, ngroups,
           nfiles ? "from logs" : "bench_server's generator");

    /* the baseline: the kernel lines themselves */
    zb = malloc(ZSTD_compressBound(jsonl_len));
    printf("  JSONL kernel lines: %.1f B/kernel", per_k(jsonl_len));
    for (int l = 3; l <= 19; l += 16) {
        zc = ZSTD_compress(zb, ZSTD_compressBound(jsonl_len), jsonl, jsonl_len,
                           l);
        printf(", zstd -%d %.1f", l, per_k(zc));
    }
    printf("\n");
    free(zb);

    printf("  block size / zstd level -> B/kernel (default encoder):\n");
    for (size_t s = 0; !quick && s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        printf("    %5zu:", sizes[s]);
        for (size_t l = 0; l < sizeof(levels) / sizeof(levels[0]); l++) {
            total = encode_all(sizes[s], levels[l], 0, &secs, NULL, NULL, NULL,
                               NULL);
            printf("  -%d %.2f (%.0f ns/ev)", levels[l], per_k(total),
                   secs * 1e9 / (double)nkernels);
        }
        printf("\n");
    }
    printf("  encoder options at block %zu, zstd -3 -> B/kernel:\n", bs);
    for (size_t o = 0; o < sizeof(opts) / sizeof(opts[0]); o++) {
        total = encode_all(bs, 3, opts[o].opt, NULL, NULL, NULL, NULL, NULL);
        printf("    %-42s %.2f\n", opts[o].what, per_k(total));
    }

    total = encode_all(bs, 3, 0, NULL, &st, NULL, NULL, NULL);
    {
        size_t zsum = st.hdr;
        printf("  columns at block %zu (B/kernel: varints before zstd, that "
               "column zstd -3 alone; modes used):\n",
               bs);
        printf("    %-8s %7.3f\n", "header", per_k(st.hdr));
        for (int c = 0; c < KB_NCOLS; c++) {
            printf("    %-8s %7.3f %7.3f ", kblock_col_names[c],
                   per_k(st.col_raw[c]), per_k(st.col_z[c]));
            for (unsigned m = 0; m < 8; m++)
                if (st.col_mode[c] & (1u << m))
                    printf(" %s", mode_names[m]);
            printf("\n");
            zsum += st.col_z[c];
        }
        printf("    varints %.2f, whole-payload zstd %.2f, per-column zstd "
               "%.2f B/kernel; %.1f shapes per block\n",
               per_k(st.raw + st.hdr), per_k(total), per_k(zsum),
               (double)st.nshapes / (double)((nkernels + bs - 1) / bs));
    }

    /* speed: encode once more into one store, then decode and seek it */
    offs = malloc((nkernels + 2) * sizeof(*offs));
    if (!offs)
        return 1;
    total = encode_all(bs, 3, 0, &secs, NULL, &store, &nstore, offs);
    for (size_t g = 0; g < ngroups; g++)
        nblk += (groups[g].n + bs - 1) / bs;
    printf("  encode (zstd -3, block %zu): %.0f ns/kernel, %.2fM "
           "kernels/s",
           bs, secs * 1e9 / (double)nkernels, (double)nkernels / secs / 1e6);
    encode_all(bs, 3, KB_OPT_NOZSTD, &secs, NULL, NULL, NULL, NULL);
    printf(" (%.0f ns of it before zstd)\n", secs * 1e9 / (double)nkernels);
    {
        double t0 = now_s(), t;
        size_t got = 0, n;
        char why[256];
        for (size_t b = 0; b < nblk; b++) {
            if (kblock_decode(dec, store + offs[b], offs[b + 1] - offs[b], out,
                              KB_MAX_EVENTS, &n, why, sizeof(why))) {
                fprintf(stderr, "bench_kblock: decode: %s\n", why);
                return 1;
            }
            got += n;
        }
        t = now_s() - t0;
        printf("  decode: %.0f ns/kernel, %.2fM kernels/s (%zu blocks, "
               "%.0f us/block)\n",
               t * 1e9 / (double)got, (double)got / t / 1e6, nblk,
               t * 1e6 / (double)nblk);
        /* the columns the timeline's level 0 reads (kblock_decode_cols) */
        t0 = now_s();
        for (size_t b = 0; b < nblk; b++)
            if (kblock_decode_cols(dec, store + offs[b], offs[b + 1] - offs[b],
                                   KB_C_TS | KB_C_DUR | KB_C_NAME | KB_C_DEV |
                                       KB_C_STREAM,
                                   out, KB_MAX_EVENTS, &n, why, sizeof(why))) {
                fprintf(stderr, "bench_kblock: decode: %s\n", why);
                return 1;
            }
        t = now_s() - t0;
        printf("  decode of ts, dur, name, dev, stream only: %.0f us/block\n",
               t * 1e6 / (double)nblk);
        /* a page by time's share of a block: ts and seq of every event,
         * then every field of 100 from the block's middle (its ts and seq
         * choose them, kblock_decode_rows) */
        {
            uint32_t rows[100];
            t0 = now_s();
            for (size_t b = 0; b < nblk; b++) {
                size_t k = 0;
                if (kblock_decode_cols(dec, store + offs[b],
                                       offs[b + 1] - offs[b],
                                       KB_C_TS | KB_C_SEQ, out, KB_MAX_EVENTS,
                                       &n, why, sizeof(why))) {
                    fprintf(stderr, "bench_kblock: decode: %s\n", why);
                    return 1;
                }
                for (size_t j = n / 2; j < n && k < 100; j++)
                    rows[k++] = (uint32_t)j;
                if (kblock_decode_rows(dec, KB_C_ALL, rows, k, out, why,
                                       sizeof(why))) {
                    fprintf(stderr, "bench_kblock: rows: %s\n", why);
                    return 1;
                }
            }
            t = now_s() - t0;
            printf("  a page's share: ts and seq, then 100 events whole from"
                   " the middle: %.0f us/block\n",
                   t * 1e6 / (double)nblk);
        }
        kblock_index *ix = malloc(sizeof(*ix));
        t0 = now_s();
        for (size_t b = 0; b < nblk; b++) {
            size_t pos;
            if (!ix ||
                kblock_index_read(store + offs[b], offs[b + 1] - offs[b], ix,
                                  why, sizeof(why)) ||
                kblock_seek_seq(dec, store + offs[b], offs[b + 1] - offs[b],
                                ix->seq_min + (ix->seq_max - ix->seq_min) / 2,
                                &pos, why, sizeof(why))) {
                fprintf(stderr, "bench_kblock: seek: %s\n", why);
                return 1;
            }
        }
        free(ix);
        t = now_s() - t0;
        printf("  seek by seq (one column decoded): %.0f us/block\n",
               t * 1e6 / (double)nblk);
    }
    free(store);
    free(offs);
    free(out);
    free(blk);
    kblock_enc_free(enc);
    kblock_dec_free(dec);
    return 0;
}
