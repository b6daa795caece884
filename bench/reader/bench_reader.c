/*
 * bench_reader.c - throughput of the JSONL reader (src/common/jsonl.c) on
 * realistic device event lines: framing alone, framing + tokenizing, and
 * framing + tokenizing + extracting the six fields the server indexes.
 *
 * Prints figures only; it is not a test.  Usage: bench_reader [lines]
 * (default 1000000).  The lines are generated in memory with the jw writer
 * so that the reader sees exactly what the client writes.
 */
#include "common/clock.h"
#include "common/jsonl.h"
#include "common/jw.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_MAX_LINE 512
#define BENCH_TOKENS 128
#define BENCH_ROUNDS 5

static uint64_t rng_state = 0x6770666c;

static uint32_t bench_rand(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* One device event line, like the collector writes, into w. */
static void bench_line(jw *w, uint64_t seq, uint64_t ts)
{
    static const char *const sids[] = {
        "0f8fad5b-d9cb-469f-a165-70867728950e",
        "7c9e6679-7425-40de-944b-e07fc1f90ae7"
    };
    static const char *const types[] = { "kernel", "kernel", "kernel",
                                         "memcpy", "memset", "sync" };
    static const char *const lims[] = { "regs", "smem", "warps", "blocks" };
    uint32_t r = bench_rand();

    jw_obj_begin(w);
    jw_kv_u64(w, "v", 1);
    jw_kv_str(w, "sid", sids[r & 1]);
    jw_kv_str(w, "st", "device");
    jw_kv_u64(w, "seq", seq);
    jw_kv_u64(w, "ts", ts);
    jw_kv_str(w, "type", types[(r >> 1) % 6]);
    jw_kv_u64(w, "dev", (r >> 4) & 7);
    jw_kv_u64(w, "stream", (r >> 7) & 31);
    jw_kv_u64(w, "corr", 100000 + seq);
    jw_kv_u64(w, "name", (r >> 12) & 255);
    jw_key(w, "grid");
    jw_arr_begin(w);
    jw_u64(w, 1u << ((r >> 20) & 15));
    jw_u64(w, 1 + ((r >> 24) & 3));
    jw_u64(w, 1);
    jw_arr_end(w);
    jw_key(w, "block");
    jw_arr_begin(w);
    jw_u64(w, 32u << ((r >> 26) & 3));
    jw_u64(w, 1);
    jw_u64(w, 1);
    jw_arr_end(w);
    jw_kv_u64(w, "regs", 16 + (bench_rand() & 127));
    jw_kv_u64(w, "dur", 1000 + bench_rand() % 1000000);
    jw_key(w, "occ");
    jw_f64(w, (double)(bench_rand() % 101) / 100.0, 2);
    jw_kv_str(w, "lim", lims[(r >> 28) & 3]);
    jw_kv_u64(w, "scope", bench_rand() % 1000);
    jw_kv_u64(w, "path", bench_rand() % 64);
    jw_obj_end(w);
    jw_put(w, "\n", 1);
}

static void bench_report(const char *what, uint64_t ns, size_t lines,
                         size_t bytes)
{
    double s = (double)ns / 1e9;

    printf("%-28s %8.2f M lines/s %9.1f MB/s %8.1f ns/line\n", what,
           (double)lines / s / 1e6, (double)bytes / s / 1e6,
           (double)ns / (double)lines);
}

/* The six fields the server's index needs from every line. */
typedef struct bench_fields {
    char sid[40];
    char type[16];
    uint64_t seq, ts, dur, name;
} bench_fields;

static int bench_extract(jsonl_doc *d, bench_fields *f)
{
    size_t n;
    int err;

    err =
        jsonl_tok_str(d, jsonl_doc_find(d, "sid"), f->sid, sizeof(f->sid), &n);
    if (!err)
        err = jsonl_tok_u64(d, jsonl_doc_find(d, "seq"), &f->seq);
    if (!err)
        err = jsonl_tok_u64(d, jsonl_doc_find(d, "ts"), &f->ts);
    if (!err)
        err = jsonl_tok_str(d, jsonl_doc_find(d, "type"), f->type,
                            sizeof(f->type), &n);
    if (!err)
        err = jsonl_tok_u64(d, jsonl_doc_find(d, "dur"), &f->dur);
    if (!err)
        err = jsonl_tok_u64(d, jsonl_doc_find(d, "name"), &f->name);
    return err;
}

int main(int argc, char **argv)
{
    size_t want = 1000000, cap, len = 0, lines = 0;
    char *buf, *end;
    jsonl_tok tok[BENCH_TOKENS];
    jsonl_doc doc;
    uint64_t best[3] = { UINT64_MAX, UINT64_MAX, UINT64_MAX }, ts = 0;
    uint64_t check = 0;

    if (argc > 1) {
        errno = 0;
        want = strtoull(argv[1], &end, 10);
        if (errno || *end || want == 0 || want > 100000000) {
            fprintf(stderr, "usage: bench_reader [lines (1..1e8)]\n");
            return 2;
        }
    }
    cap = want * BENCH_MAX_LINE;
    buf = malloc(cap);
    if (!buf) {
        fprintf(stderr, "bench_reader: out of memory\n");
        return 1;
    }
    ts = 1764457393123456789ull;
    for (size_t i = 0; i < want; i++) {
        jw w;
        jw_init(&w, buf + len, BENCH_MAX_LINE);
        ts += 1000 + bench_rand() % 100000;
        bench_line(&w, 123456 + i, ts);
        if (w.err) {
            fprintf(stderr, "bench_reader: line over %d bytes\n",
                    BENCH_MAX_LINE);
            return 1;
        }
        len += w.len;
    }
    jsonl_doc_init(&doc, tok, BENCH_TOKENS);
    printf("%zu lines, %.1f MB, %.1f bytes/line\n", want, (double)len / 1e6,
           (double)len / (double)want);

    for (int round = 0; round < BENCH_ROUNDS; round++) {
        for (int mode = 0; mode < 3; mode++) {
            size_t pos = 0, n;
            const char *line;
            uint64_t t0 = clock_mono_ns(), dt;
            bench_fields f;

            lines = 0;
            while (jsonl_line_next(buf, len, &pos, &line, &n)) {
                lines++;
                if (mode == 0) {
                    check += n;
                    continue;
                }
                if (jsonl_doc_parse_obj(&doc, line, n)) {
                    fprintf(stderr, "bench_reader: line %zu: %s at %zu\n",
                            lines, doc.err, doc.err_off);
                    return 1;
                }
                check += doc.n;
                if (mode == 1)
                    continue;
                if (bench_extract(&doc, &f)) {
                    fprintf(stderr, "bench_reader: line %zu: %s\n", lines,
                            doc.err);
                    return 1;
                }
                check += f.seq + f.ts + f.dur + f.name + (uint64_t)f.sid[0] +
                         (uint64_t)f.type[0];
            }
            dt = clock_mono_ns() - t0;
            if (dt < best[mode])
                best[mode] = dt;
        }
    }
    printf("best of %d rounds, one core:\n", BENCH_ROUNDS);
    bench_report("split only", best[0], lines, len);
    bench_report("split + tokenize", best[1], lines, len);
    bench_report("split + tokenize + 6 fields", best[2], lines, len);
    printf("tokenize alone: %.1f ns/line; 6 fields alone: %.1f ns/line\n",
           (double)(best[1] - best[0]) / (double)lines,
           (double)(best[2] - best[1]) / (double)lines);
    printf("(checksum %" PRIu64 ")\n", check);
    free(buf);
    return 0;
}
