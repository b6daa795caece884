/*
 * bench_common.c - what bench_server and bench_scale share (bench_common.h):
 * the synthetic kernel lines, HTTP on loopback, the query set.
 */
#include "bench_common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void body_put(body *b, const char *s, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            exit(1);
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

/* A stream's session header line. */
void put_session(body *b, const char *sid, const char *st, size_t seq,
                 uint64_t ts)
{
    char line[256];
    int n =
        snprintf(line, sizeof(line),
                 "{\"v\":1,\"sid\":\"%s\",\"st\":\"%s\",\"seq\":%zu,"
                 "\"ts\":%llu,\"type\":\"session\",\"app\":\"bench\","
                 "\"host\":\"bench\",\"start\":%llu}\n",
                 sid, st, seq, (unsigned long long)ts, (unsigned long long)ts);
    body_put(b, line, (size_t)n);
}

void kgen_init(kgen *g, const char *sid, unsigned names)
{
    memset(g, 0, sizeof(*g));
    snprintf(g->sid, sizeof(g->sid), "%s", sid);
    g->names = names;
    g->ts = BENCH_T0;
    g->x = 88172645463325252ull;
}

void kgen_dicts(kgen *g, body *b)
{
    char line[512];
    int n;

    put_session(b, g->sid, "device", g->seq++, g->ts);
    for (unsigned i = 1; i <= g->names; i++) {
        n = snprintf(line, sizeof(line),
                     "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\","
                     "\"seq\":%zu,\"ts\":%llu,\"type\":\"dict\",\"id\":%u,"
                     "\"kind\":\"name\",\"name\":\"kernel_%u_"
                     "void_gemm<float,128,64>\"}\n",
                     g->sid, g->seq++, (unsigned long long)g->ts, i, i);
        body_put(b, line, (size_t)n);
        n = snprintf(line, sizeof(line),
                     "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\","
                     "\"seq\":%zu,\"ts\":%llu,\"type\":\"dict\",\"id\":%u,"
                     "\"kind\":\"launch\",\"name\":%u,\"block\":[256],"
                     "\"regs\":%u,\"occ\":0.5}\n",
                     g->sid, g->seq++, (unsigned long long)g->ts, 100000 + i, i,
                     32 + i % 64);
        body_put(b, line, (size_t)n);
    }
    b->lines = g->seq;
}

void kgen_kernels(kgen *g, body *b, size_t n)
{
    char line[512];

    for (size_t end = g->k + n; g->k < end; g->k++) {
        uint64_t dur, x;
        int len;
        g->x ^= g->x << 13;
        g->x ^= g->x >> 7;
        g->x ^= g->x << 17;
        x = g->x;
        dur = 2000 + (x % 1000) * (1 + (x >> 20) % 200);
        g->ts += 1000 + dur / 4;
        len = snprintf(line, sizeof(line),
                       "{\"v\":1,\"sid\":\"%s\",\"st\":\"device\","
                       "\"seq\":%zu,\"ts\":%llu,\"type\":\"kernel\","
                       "\"dev\":%u,\"stream\":%u,\"corr\":%zu,\"cfg\":%u,"
                       "\"grid\":[1024,4],\"dur\":%llu,\"api\":[-5000,3000],"
                       "\"scope\":%zu}\n",
                       g->sid, g->seq++, (unsigned long long)g->ts,
                       (unsigned)(g->k % 2), (unsigned)(7 + g->k % 4), g->k,
                       100001 + (unsigned)(x % g->names),
                       (unsigned long long)dur, 1 + g->k / 50);
        body_put(b, line, (size_t)len);
        b->lines++;
    }
}

/* One HTTP/1.1 request on a keep-alive socket; returns the status. */
int http(int fd, const char *method, const char *path, const char *tok,
         const char *bodyp, size_t blen, char *resp, size_t cap)
{
    char hdr[1024];
    size_t got = 0, need = 0;
    int n = snprintf(hdr, sizeof(hdr),
                     "%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                     "Content-Type: application/x-ndjson\r\n"
                     "Content-Length: %zu\r\n\r\n",
                     method, path, tok, blen);
    if (write(fd, hdr, (size_t)n) != n)
        return -1;
    for (size_t off = 0; off < blen;) {
        ssize_t w = write(fd, bodyp + off, blen - off);
        if (w <= 0)
            return -1;
        off += (size_t)w;
    }
    for (;;) {
        ssize_t r = read(fd, resp + got, cap - 1 - got);
        char *e;
        if (r <= 0)
            return -1;
        got += (size_t)r;
        resp[got] = '\0';
        e = strstr(resp, "\r\n\r\n");
        if (e && !need) {
            char *cl = strcasestr(resp, "Content-Length:");
            need =
                (size_t)(e + 4 - resp) + (cl ? strtoull(cl + 15, NULL, 10) : 0);
        }
        if (need && got >= need)
            break;
        if (got >= cap - 1)
            return -1;
    }
    return (int)strtol(resp + 9, NULL, 10);
}

int connect_to(uint16_t port)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        exit(1);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void lat(const char *what, int fd, const char *tok, char **paths, int n,
         char *resp, size_t cap)
{
    double *t = malloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++) {
        double t0 = now_s();
        int st = http(fd, "GET", paths[i], tok, "", 0, resp, cap);
        t[i] = (now_s() - t0) * 1e3;
        if (st != 200) {
            fprintf(stderr, "%s -> %d\n", paths[i], st);
            exit(1);
        }
    }
    qsort(t, (size_t)n, sizeof(double), cmp_d);
    printf("  %-34s p50 %7.2f ms   p99 %7.2f ms   (%d requests)\n", what,
           t[n / 2], t[n * 99 / 100], n);
    free(t);
}

/* As lat, but each request after the first follows the previous answer's
 * cursor ("next"): a UI paging forward from first (a path with a query). */
void lat_follow(const char *what, int fd, const char *tok, const char *first,
                int n, char *resp, size_t cap)
{
    double *t = malloc((size_t)n * sizeof(double));
    char path[512];
    int done = 0;

    snprintf(path, sizeof(path), "%s", first);
    for (; t && done < n; done++) {
        double t0 = now_s();
        int st = http(fd, "GET", path, tok, "", 0, resp, cap);
        char *nx = strstr(resp, "\"next\":\""), *end;
        t[done] = (now_s() - t0) * 1e3;
        if (st != 200) {
            fprintf(stderr, "%s -> %d\n", path, st);
            exit(1);
        }
        if (!nx || !(end = strchr(nx + 8, '"'))) {
            done++;
            break; /* the session's end */
        }
        snprintf(path, sizeof(path), "%s&cursor=%.*s", first,
                 (int)(end - (nx + 8)), nx + 8);
    }
    qsort(t, (size_t)done, sizeof(double), cmp_d);
    printf("  %-34s p50 %7.2f ms   p99 %7.2f ms   (%d requests)\n", what,
           t[done / 2], t[done * 99 / 100], done);
    free(t);
}

/* The cursor of the nth page (from 1) of 100 sorted by duration (desc or
 * not), into cur (cap bytes); 0 when there is none. */
static int dur_cursor(int fd, const char *tok, const char *sid, char *resp,
                      size_t rcap, int desc, int nth, char *cur, size_t cap)
{
    char p[256];

    cur[0] = '\0';
    for (int i = 1; i < nth; i++) {
        const char *c, *e;
        snprintf(p, sizeof(p),
                 "/api/v1/sessions/%s/kernels?limit=100&sort=duration"
                 "&desc=%s%s%s",
                 sid, desc ? "true" : "false", cur[0] ? "&cursor=" : "", cur);
        if (http(fd, "GET", p, tok, "", 0, resp, rcap) != 200 ||
            !(c = strstr(resp, "\"next\":\"")) || !(e = strchr(c + 8, '"')) ||
            (size_t)(e - (c + 8)) >= cap)
            return 0;
        memcpy(cur, c + 8, (size_t)(e - (c + 8)));
        cur[e - (c + 8)] = '\0';
    }
    return 1;
}

void bench_queries(int fd, const char *tok, const char *sid, uint64_t t_end,
                   char *resp, size_t cap)
{
    enum { NQ = 200 };
    char *p[NQ];
    uint64_t t_start = BENCH_T0, span = t_end - t_start;
    uint64_t x = 12345;
    for (int i = 0; i < NQ; i++) {
        p[i] = malloc(256);
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        snprintf(p[i], 256, "/api/v1/sessions/%s/kernels?limit=100&from=%llu",
                 sid, (unsigned long long)(t_start + (x >> 11) % span));
    }
    lat("kernels page (100, random from)", fd, tok, p, NQ, resp, cap);
    lat_follow("kernels page (100, on by cursor)", fd, tok, p[0], NQ, resp,
               cap);
    for (int i = 0; i < NQ; i++)
        snprintf(p[i], 256,
                 "/api/v1/sessions/%s/kernels?limit=100&sort=duration"
                 "&desc=true",
                 sid);
    lat("kernels page sorted by duration", fd, tok, p, 50, resp, cap);
    for (int i = 0; i < NQ; i++)
        snprintf(p[i], 256,
                 "/api/v1/sessions/%s/kernels?limit=100&sort=duration", sid);
    lat("  ... ascending", fd, tok, p, 50, resp, cap);
    /* a page further on, through the cursor: the 5th of 100 in both
     * orders, alternately */
    {
        char cur[2][64];
        if (dur_cursor(fd, tok, sid, resp, cap, 1, 5, cur[0], sizeof(cur[0])) &&
            dur_cursor(fd, tok, sid, resp, cap, 0, 5, cur[1], sizeof(cur[1]))) {
            for (int i = 0; i < NQ; i++)
                snprintf(p[i], 256,
                         "/api/v1/sessions/%s/kernels?limit=100"
                         "&sort=duration&desc=%s&cursor=%s",
                         sid, i % 2 ? "false" : "true", cur[i % 2]);
            lat("  ... 5th page (cursor), both orders", fd, tok, p, 50, resp,
                cap);
        }
    }
    /* one name of 200: too few of it among the session's longest
     * kept kernels (kext) for a page, so the plain sort answers */
    for (int i = 0; i < NQ; i++)
        snprintf(p[i], 256,
                 "/api/v1/sessions/%s/kernels?limit=100&sort=duration"
                 "&desc=true&name=kernel_%d_",
                 sid, 17 + i % 50);
    lat("  ... of one name (plain sort)", fd, tok, p, 20, resp, cap);
    for (int i = 0; i < NQ; i++)
        snprintf(p[i], 256,
                 "/api/v1/sessions/%s/kernels?limit=100&sort=duration"
                 "&name=kernel_%d_",
                 sid, 17 + i % 50);
    lat("  ... of one name, ascending", fd, tok, p, 20, resp, cap);
    /* kernel_1N: the 11 names kernel_1N_ and kernel_1N0_ .. kernel_1N9_
     * (at most KB_NAME_IDS_MAX: the names' streams merged) */
    for (int i = 0; i < NQ; i++)
        snprintf(p[i], 256,
                 "/api/v1/sessions/%s/kernels?limit=100&sort=duration"
                 "&desc=%s&name=kernel_1%d",
                 sid, i % 2 ? "false" : "true", i % 10);
    lat("  ... of 11 names, both orders", fd, tok, p, 20, resp, cap);
    for (int i = 0; i < NQ; i++)
        snprintf(p[i], 256, "/api/v1/sessions/%s/kernels/aggregate?limit=1000",
                 sid);
    lat("aggregates by name (p50/p99)", fd, tok, p, 50, resp, cap);
    for (int i = 0; i < NQ; i++) {
        uint64_t w;
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        w = span >> (x >> 60); /* full range down to 1/32768 of it */
        snprintf(
            p[i], 256,
            "/api/v1/sessions/%s/timeline?width=2000&from=%llu"
            "&to=%llu",
            sid, (unsigned long long)(t_start + (x >> 20) % (span - w + 1)),
            (unsigned long long)(t_start + (x >> 20) % (span - w + 1) + w));
    }
    lat("timeline 2000 px, random zoom", fd, tok, p, NQ, resp, cap);
    /* level 0 of the summary (2^18 <= ns a pixel < 2^20: 500 us),
     * computed from the kernels with blocks; and zoomed in past it
     * (150 us a pixel) on a window too dense to read raw, answered
     * from level 0 too */
    for (int z = 0; z < 2; z++) {
        uint64_t w = 2000ull * (z ? 150000u : 500000u);
        for (int i = 0; i < NQ; i++) {
            uint64_t from;
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            from = t_start + (x >> 20) % (span - w + 1);
            snprintf(p[i], 256,
                     "/api/v1/sessions/%s/timeline?width=2000&from=%llu"
                     "&to=%llu",
                     sid, (unsigned long long)from,
                     (unsigned long long)(from + w));
        }
        lat(z ? "timeline 2000 px, 150 us/px (dense: level 0)"
              : "timeline 2000 px, 500 us/px (level 0)",
            fd, tok, p, NQ / 4, resp, cap);
    }
    /* the API calls' summary at level 0 (columns of 2^21 to 2^23 ns:
     * computed from the calls with blocks), 3 ms a column: ~200k calls */
    for (int i = 0; i < NQ; i++) {
        uint64_t w = 1000ull * 3000000u, from;
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        from = t_start + (x >> 20) % (span - w + 1);
        snprintf(p[i], 256,
                 "/api/v1/sessions/%s/calls?width=1000&limit=100&from=%llu"
                 "&to=%llu",
                 sid, (unsigned long long)from, (unsigned long long)(from + w));
    }
    lat("calls 1000 px, 3 ms/px (level 0)", fd, tok, p, 10, resp, cap);
    /* and over the whole session: level 1 (columns of ~14 ms), on
     * PostgreSQL its packs (store_sql_capipack.c) */
    snprintf(p[0], 256, "/api/v1/sessions/%s/calls?width=1000&limit=100", sid);
    for (int i = 1; i < 20; i++)
        snprintf(p[i], 256, "%s", p[0]);
    lat("calls 1000 px, full range", fd, tok, p, 20, resp, cap);
    snprintf(p[0], 256, "/api/v1/sessions/%s/timeline?width=2000", sid);
    for (int i = 1; i < 20; i++)
        snprintf(p[i], 256, "%s", p[0]);
    lat("timeline 2000 px, full range", fd, tok, p, 20, resp, cap);
    for (int i = 0; i < NQ; i++)
        free(p[i]);
}