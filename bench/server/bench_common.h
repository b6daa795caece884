/*
 * bench_common.h - what bench_server and bench_scale share: the synthetic
 * kernel lines (shaped like the client's), HTTP/1.1 on a loopback
 * keep-alive socket, and the query set whose p50/p99 they print.
 */
#ifndef GPUFL_BENCH_COMMON_H
#define GPUFL_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* kernel lines per POST */
#define BENCH_BATCH_LINES 10000
/* the first kernel's start (ns) */
#define BENCH_T0 1700000000000000000ull

typedef struct body {
    char *p;
    size_t len, cap;
    size_t lines;
} body;

void body_put(body *b, const char *s, size_t n);
void put_session(body *b, const char *sid, const char *st, size_t seq,
                 uint64_t ts);

/* The kernel generator: dicts (names and launch configurations), then
 * kernels on 4 streams of 2 devices with log-normal-ish durations.  The
 * same seed makes the same lines. */
typedef struct kgen {
    char sid[40];
    unsigned names;
    size_t seq, k;
    uint64_t ts, x;
} kgen;

void kgen_init(kgen *g, const char *sid, unsigned names);
/* The session line and the dicts into b (the first batch). */
void kgen_dicts(kgen *g, body *b);
/* n more kernels appended to b. */
void kgen_kernels(kgen *g, body *b, size_t n);

double now_s(void);
int connect_to(uint16_t port);
/* One request; returns the HTTP status, -1 when the exchange failed. */
int http(int fd, const char *method, const char *path, const char *tok,
         const char *bodyp, size_t blen, char *resp, size_t cap);
/* n GETs of paths[], one after another; prints p50 and p99. */
void lat(const char *what, int fd, const char *tok, char **paths, int n,
         char *resp, size_t cap);
/* As lat, but each request after the first follows the previous answer's
 * cursor ("next"): a UI paging forward from first (a path with a query). */
void lat_follow(const char *what, int fd, const char *tok, const char *first,
                int n, char *resp, size_t cap);
/* The kernel page, sorted pages, aggregates and timeline queries on
 * session sid spanning [BENCH_T0, t_end). */
void bench_queries(int fd, const char *tok, const char *sid, uint64_t t_end,
                   char *resp, size_t cap);

#endif
